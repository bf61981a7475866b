/* GrRegister: where exactly, at full resolution, does a frame lie on the control?
 * The engine behind the nmiregister element, callable without GStreamer.
 *
 * Per frame: the frame's values are mapped onto `levels` grey levels, keypoints are
 * found in it (kernels/keypoints.h), an 11 x 11 template around each keypoint is
 * scored by NMI at every offset of a 73 x 73 control window around the place a prior
 * frame -> control homography predicts (kernels/nmi_sparse.h), and the transform is
 * fitted robustly (kernels/fit.h).  The templates are cut from the frame when the
 * prior is an offset and a scale, and resampled into the control's geometry when it
 * turns, shears or tilts the frame (an 11 x 11 template turned by more than a few
 * degrees no longer looks like the control).  With `refine` a second pass predicts every
 * keypoint with the first fit, resamples its template into the control's geometry
 * and matches it in a small window; the final fit uses those matches.  Without a
 * prior (or as a second opinion on a doubtful one) a coarse dense-NMI search of the
 * whole control at reduced resolution finds one.
 *
 * Values: frame and control are each mapped onto `levels` grey levels (default 16):
 * 121 pixels cannot fill a 256 x 256 joint histogram, and with noise or a tone change
 * two images almost never repeat an exact 8-bit pair; 12 to 16 levels discriminate
 * (docs/nmiregister.md).
 *
 * Backends: CPU, or CUDA where the frame may stay on the device (converted, ranged,
 * quantized, its keypoints found and its templates cut there); both give the same
 * bytes (kernels/register_cuda.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_REGISTER_H
#define GR_REGISTER_H

#include "gr_common.h"
#include "camera.h"
#include "fit.h"
#include "image.h"
#include "keypoints.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct GrRegister GrRegister;

typedef struct {
  int levels;                   /* grey levels (2..256), 16 */
  int max_keypoints;            /* keypoints per frame at most, 400 */
  int template_size;            /* odd, 11 */
  int window_size;              /* first-pass window side (odd, >= template), 73 */
  bool refine;                  /* second pass, true */
  int refine_window;            /* second-pass window side (odd, >= template), 23 */
  GrModel model;                /* fitted transform, homography */
  double ransac_threshold;      /* inlier distance in control pixels (pass 1: 2x), 1 */
  double min_peak_ratio;        /* matches with a lower (best-1)/(second-1) dropped, 1 */
  unsigned min_inliers;         /* fewer: flagged LOW_INLIERS, 12 */
  double min_inlier_ratio;      /* smaller share of the matches: LOW_INLIERS, 0.3 */
  double max_predicted_error;   /* frame pixels: a larger predicted_error is flagged
                                 * IMPRECISE, 1; 0: never */
  bool keep_matches;            /* the result keeps keypoints, matches, inlier mask */
  bool camera_fit;              /* with calibrated intrinsics (gr_register_set_camera)
                                 * and model homography: the final fit is the camera's
                                 * 6-parameter plane homography when it fits as well,
                                 * true */
} GrRegisterParams;

void gr_register_params_init (GrRegisterParams *p);

/* Result flags; the values are those of GstNmiRegisterFlags (gst/nmiregister-meta.h). */
enum {
  GR_REGISTER_SEARCH_FAILED = 1 << 1,   /* the full search found no position */
  GR_REGISTER_FULL_SEARCH = 1 << 3,     /* the prior came from the full search */
  GR_REGISTER_TOO_FEW_KEYPOINTS = 1 << 4,
  GR_REGISTER_TOO_FEW_MATCHES = 1 << 5,
  GR_REGISTER_WINDOWS_CLIPPED = 1 << 6, /* windows reached past the control */
  GR_REGISTER_DEGENERATE = 1 << 7,
  GR_REGISTER_NO_CONSENSUS = 1 << 8,
  GR_REGISTER_LOW_INLIERS = 1 << 9,
  GR_REGISTER_POOR_SPREAD = 1 << 10,    /* inliers span less than a third of the frame */
  GR_REGISTER_REFINE_FAILED = 1 << 11,  /* the transform is the first pass's */
  GR_REGISTER_IMPRECISE = 1 << 12,      /* predicted_error > max_predicted_error */
};

/* Where registration starts from. */
typedef struct {
  bool has_prior;               /* h holds a prior */
  double h[9];                  /* frame pixel corners -> control pixel corners (an
                                 * offset and a scale: {k, 0, x, 0, k, y, 0, 0, 1}) */
  bool search;                  /* no prior: find one by the full search */
  bool second_opinion;          /* the prior is doubtful: when its result is not
                                 * sound, try the full search too, keep the better */
  double search_scale;          /* control pixels per frame pixel for the full search */
} GrRegisterPrior;

typedef struct {
  unsigned flags;               /* GR_REGISTER_* */
  bool has_prior;               /* the prior used (given or searched) */
  double prior[9];              /* frame pixel corners -> control pixel corners */
  bool searched;                /* a full search ran for the prior (search) */
  bool has_transform;
  double h[9];                  /* frame -> control, pixel corners */
  double h_index[9];            /* the same in pixel-index coordinates */
  int keypoints, matches, inliers;
  double rms;                   /* RMS inlier residual, control pixels (NAN: none) */
  /* the transform's expected error over the frame, frame pixels: the spread of the
   * fits that each leave one ninth of the frame's inliers out (gr_fit_predicted_error);
   * NAN when it cannot be told (no transform, too few blocks with inliers, a failed
   * refinement) */
  double predicted_error;
  double keypoints_ms;          /* keypoint detection time */
  /* keep_matches: the frame's keypoints, the matches of the transform's fit (frame /
   * control pixel-index x y pairs) and its inlier mask (NULL when no fit holds
   * them); owned, freed by gr_register_result_clear */
  GrKeypoint *kp;
  double *match_frame, *match_control;
  uint8_t *inlier;
  int n_matches;
  /* the frame's lens was set (gr_register_set_lens): h and h_index take undistorted
   * frame pixels, the frame's as delivered go through lens first
   * (gr_register_result_apply); match_frame stays in the delivered frame's pixels */
  bool undistorted;
  GrCamera lens;
  /* the transform is the calibrated camera's plane homography (camera_fit.h), not a
   * general one; predicted_error is then that model's */
  bool camera_fit;
} GrRegisterResult;

void gr_register_result_clear (GrRegisterResult *r);

/* An engine on `backend` (AUTO: CUDA when usable), device -1 = the default.  NULL on
 * failure with *status and a reason; with AUTO a CUDA engine that cannot be made
 * falls back to the CPU with the reason in errbuf. */
GrRegister *gr_register_new (GrBackend backend, int device, GrStatus *status,
    char *errbuf, size_t errlen);
void gr_register_free (GrRegister *r);
GrBackend gr_register_backend (const GrRegister *r);
/* The CUDA device frames should be handed on (gr_register_set_frame on_device), or -1:
 * frames are host planes. */
int gr_register_frame_device (const GrRegister *r);

/* The control: a full-resolution plane (borrowed: it must outlive the engine or the
 * next call), already ranged: values a..b are cut into params->levels levels
 * (gr_plane_value_range).  dev_levels: the control's levels already on the engine's
 * device (borrowed, stride = width, vmax its largest level), used when the CUDA
 * matcher takes them (*used_dev true); else the levels are made here.  With AUTO a
 * CUDA matcher that cannot take the control falls back to the CPU (reason in
 * errbuf, GR_OK). */
GrStatus gr_register_set_control (GrRegister *r, const GrPlaneF *control, double a,
    double b, int levels, const GrImage8 *dev_levels, int vmax, bool *used_dev,
    char *errbuf, size_t errlen);

/* The frame to register: a host plane, or (on_device) a plane on the engine's device
 * (gr_register_frame_device), borrowed until the next call.  Its values are ranged
 * by (mode, depth, lo, hi) as gr_plane_value_range (min-max computed on the device
 * there; percentile needs a host plane) and cut into params->levels levels.
 * GR_ERR_INVALID on bad range settings. */
GrStatus gr_register_set_frame (GrRegister *r, const GrRegisterParams *params,
    const GrPlaneF *frame, bool on_device, GrBinMode mode, int depth, double lo,
    double hi, char *errbuf, size_t errlen);

/* The keypoint responses of the host frame just set (gr_keypoints_responses with
 * block_radius, computed once for the frame and shared with other detections on it),
 * borrowed until the next gr_register_set_frame; the run's detection takes them when
 * its block radius matches (the same keypoints, bit for bit), else computes its own.
 * NULL: none.  Ignored for a device frame. */
void gr_register_set_frame_responses (GrRegister *r, const float *responses,
    int block_radius);

/* Registers the frame from `prior`.  An error status only when an engine failed (the
 * result is then cleared); every other outcome is a result with flags. */
GrStatus gr_register_run (GrRegister *r, const GrRegisterParams *params,
    const GrRegisterPrior *prior, GrRegisterResult *result, char *errbuf,
    size_t errlen);

/* The frame's lens (kernels/camera.h: OpenCV's pixel-centre convention, intrinsics
 * for the frame's own size), or NULL (or no distortion coefficient set): none.  Kept
 * for the following runs until changed.  With a lens the keypoints are undistorted
 * before the prediction and the fit, the refinement's templates are resampled
 * through the lens (host and device alike), and the transform maps undistorted frame
 * pixels: frame -> control is h (undistort (x)).  Applying the lens to keypoint
 * coordinates costs nothing next to warping whole frames.  false (lens cleared) for
 * intrinsics that are not finite or a focal length <= 0. */
bool gr_register_set_lens (GrRegister *r, const GrCamera *lens);

/* The frame camera's calibrated intrinsics (fx fy cx cy of `intrinsics`, the frame's
 * own size, OpenCV's convention; the distortion is gr_register_set_lens's), or NULL:
 * unknown.  Kept until changed.  With params->camera_fit and model homography the
 * final fit becomes the plane homography such a camera can make (camera_fit.h) when
 * its RMS residual over the inliers is within 10% + 0.02 px of the general fit's: it
 * holds where the inliers do not reach (a textureless third of a tilted frame).  Only
 * intrinsics that were calibrated belong here: a focal length from EXIF alone is a
 * few percent off.  false (cleared) for a focal length <= 0 or values not finite. */
bool gr_register_set_camera (GrRegister *r, const GrCamera *intrinsics);

/* A frame position as delivered (pixel corners) -> control pixel corners through the
 * result's full mapping (undistortion, then h); false when it has no transform or the
 * point cannot be undistorted or maps to infinity. */
bool gr_register_result_apply (const GrRegisterResult *r, double x, double y,
    double *cx, double *cy);

/* A result worth keeping without a second opinion. */
bool gr_register_result_sound (const GrRegisterResult *r);

#ifdef __cplusplus
}
#endif
#endif
