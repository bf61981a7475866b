/* Rotation-invariant float descriptors (length 32 or 64) at keypoints (keypoints.h),
 * for featurematch.
 *
 * Method: the image is smoothed (Gaussian, sigma; masked pixels excluded) and its
 * central-difference gradients taken.  Each keypoint gets an orientation: the peak of
 * a 36-bin histogram of gradient directions over a disc of `radius` pixels (weights:
 * magnitude x Gaussian), parabolically interpolated.  The disc is then sampled on a
 * one-pixel grid turned by that orientation (bilinear gradients, rotated into the
 * keypoint's frame) into a grid of spatial cells x orientation bins, with trilinear
 * weights: 4 x 4 cells x 4 bins for 64, 2 x 2 cells x 8 bins for 32.  The vector is
 * L2-normalized, clipped at 0.2 and normalized again (as SIFT).  So a frame turned by
 * 90 or 180 degrees (drone survey lines) gives the same descriptors up to resampling.
 * Single scale: frames of one survey share a ground resolution.
 *
 * Masks: a gradient needs its four neighbours valid; samples without a valid
 * gradient add nothing.  Keypoints detected with margin >= gr_descriptor_margin()
 * have their whole support valid.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_DESCRIPTORS_H
#define GR_DESCRIPTORS_H

#include "gr_common.h"
#include "keypoints.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int size;          /* 32 or 64 */
  int radius;        /* support disc radius in pixels (4 .. 64; default 12) */
  float sigma;       /* pre-smoothing (0 = none; default 1.2) */
  bool subpixel;     /* refine the keypoints in place first (default true): the peak
                        of a quadratic through the Shi-Tomasi measure of the smoothed
                        gradients at the keypoint and its 4-neighbours */
} GrDescriptorParams;

void gr_descriptor_params_init (GrDescriptorParams *p);   /* 64, 12, 1.2, true */

/* Keypoint margin under which the support of every descriptor is valid image. */
int gr_descriptor_margin (const GrDescriptorParams *p);

/* Reusable scratch (smoothed image and gradients): zero it before the first use,
 * clear it with gr_descriptor_scratch_clear. */
typedef struct {
  float *smooth, *gx, *gy, *tmp;
  uint8_t *gvalid;
  size_t cap;
} GrDescriptorScratch;

void gr_descriptor_scratch_clear (GrDescriptorScratch *s);

/* Descriptors of n keypoints of img: out (n x size floats, row-major), angle (may be
 * NULL): the orientation of each keypoint in radians (image x axis towards y, i.e.
 * clockwise on screen).  A keypoint with no valid gradient in its support gets a zero
 * vector.  scratch may be NULL (allocated per call).  Multi-threaded (OpenMP);
 * deterministic.  GR_ERR_INVALID on bad arguments, GR_ERR_NOMEM. */
GrStatus gr_descriptors_compute (const GrPlaneF *img, GrKeypoint *kp, int n,
    const GrDescriptorParams *p, float *out, float *angle, GrDescriptorScratch *scratch);

/* ---- Features of a frame on either backend: keypoints (gr_keypoints_detect) and their
 * descriptors (gr_descriptors_compute) through one engine.
 *
 * The CPU engine calls those two functions.  The CUDA engine (kernels/features_cuda.cu)
 * runs the same maths on the device: eligibility (mask + margin), Shi-Tomasi
 * responses, non-maximum suppression, the per-cell quota and the final order, then the
 * masked Gaussian, gradients, sub-pixel refinement, orientation and descriptor per
 * keypoint (a warp each).  Its keypoints are the CPU's: the same set in the same
 * order, at the same (refined) positions and responses, because every step up to the
 * descriptors is evaluated with the CPU's operations in the CPU's order (no fused
 * multiply-adds, IEEE division and square roots, the same weight tables), and the
 * selection is exact (keys of response, then raster order: no ties).  Descriptors
 * agree to about 1e-5 (the device's atan2f / sinf / cosf differ from the C library's
 * by an ulp or two); the one discontinuity is the orientation: where the two highest
 * bins of a keypoint's smoothed orientation histogram are within about 1e-6 relative
 * of each other, the two backends may pick different peaks (documented near-tie;
 * tests/test_features_gpu.c counts them).  Device buffers are reused across frames:
 * no allocation per frame once the largest frame size has been seen.
 * Limits of the device detector (else the CPU detector runs and the device computes
 * the descriptors, flagged in the stats): block_radius <= 16, width x height < 2^31. */
typedef struct GrFeatures GrFeatures;

typedef struct {
  double elapsed_ms;     /* wall time of the call */
  double upload_ms;      /* CUDA: frame (and mask) upload (events); CPU: 0 */
  double kernel_ms;      /* CUDA: detection + descriptor kernels (events); CPU: the
                            whole computation */
  double download_ms;    /* CUDA: results download (events); CPU: 0 */
  int candidates;        /* CUDA: NMS maxima above the threshold (before the grid);
                            CPU: -1 */
  bool host_detect;      /* CUDA: the keypoints came from the CPU detector */
} GrFeatureStats;

/* backend AUTO picks CUDA when a device is usable, else the CPU (and falls back to the
 * CPU when the CUDA engine cannot start); CUDA asked for and not available: NULL and
 * *status = GR_ERR_NO_CUDA (or GR_ERR_CUDA).  cuda_device -1 = device 0. */
GrFeatures *gr_features_new (GrBackend backend, int cuda_device, GrStatus *status,
    char *errbuf, size_t errlen);
void gr_features_free (GrFeatures *f);
GrBackend gr_features_backend (const GrFeatures *f);

/* Keypoints of `frame` (gr_keypoints_detect with kp_params: at most `capacity`) and
 * their descriptors (dp): kp (refined in place when dp->subpixel), desc (n x
 * dp->size), angle (may be NULL).  Returns n >= 0 (0: flat, wholly masked or too
 * small a frame), or a negative GrStatus (-GR_ERR_INVALID, -GR_ERR_NOMEM,
 * -GR_ERR_CUDA with the reason in errbuf).  stats may be NULL. */
int gr_features_extract (GrFeatures *f, const GrPlaneF *frame,
    const GrKeypointParams *kp_params, const GrDescriptorParams *dp, GrKeypoint *kp,
    int capacity, float *desc, float *angle, GrFeatureStats *stats, char *errbuf,
    size_t errlen);

/* The keypoint responses of the frame the next gr_features_extract takes
 * (gr_keypoints_responses with block_radius, computed once for the frame and shared
 * with other detections on it), borrowed for that call only: the CPU detection takes
 * them when its block radius matches (the same keypoints, bit for bit).  NULL: none. */
void gr_features_set_responses (GrFeatures *f, const float *responses, int block_radius);

/* gr_features_extract for a frame that already lies in device memory (a CUDA engine
 * only): frame->data (floats, any row stride) and frame->mask (packed, width bytes a
 * row, NULL = all valid) are device pointers of the engine's device (the primary
 * context), e.g. gst/gstgeoregcuda.h's converted frames; they are read in place (rows
 * that are not packed are copied on the device first).  Nothing of the frame crosses
 * to the host: the keypoints, descriptors and the smoothed / validity windows come
 * back, and the results are those of gr_features_extract on the same plane in host
 * memory (the same kernels).  The device detector's limits apply (block_radius <= 16,
 * fewer than 2^31 pixels): outside them -GR_ERR_INVALID.  A CPU engine:
 * -GR_ERR_INVALID.  After it, gr_features_validity gives the host plane that
 * gr_descriptor_patches and gr_patch_refine take in place of the frame. */
int gr_features_extract_device (GrFeatures *f, const GrPlaneF *frame,
    const GrKeypointParams *kp_params, const GrDescriptorParams *dp, GrKeypoint *kp,
    int capacity, float *desc, float *angle, GrFeatureStats *stats, char *errbuf,
    size_t errlen);

/* Keypoints only (gr_keypoints_detect's, bit for bit: the same set, order, positions
 * and responses) of a frame in device memory, as gr_features_extract_device takes
 * it; only the keypoints come back.  CUDA engine only (else -GR_ERR_INVALID).
 * Returns n >= 0 or a negative GrStatus; stats may be NULL. */
int gr_features_detect_device (GrFeatures *f, const GrPlaneF *frame,
    const GrKeypointParams *kp_params, GrKeypoint *kp, int capacity,
    GrFeatureStats *stats, char *errbuf, size_t errlen);

/* The frame as gr_descriptor_patches and gr_patch_refine read it after the last
 * extraction (they read its size and mask only): after gr_features_extract, the
 * caller's plane; after gr_features_extract_device, a host plane of the frame's size
 * whose mask (NULL when the frame had none) is valid within GR_PATCH_RADIUS of every
 * returned keypoint's nearest pixel, as `smooth` is.  NULL before any extraction. */
const GrPlaneF *gr_features_validity (const GrFeatures *f);

/* The smoothed frame of the last gr_features_extract, for gr_descriptor_patches and
 * gr_patch_refine.  CPU: the whole scratch.  CUDA: only `smooth` is set, and only
 * within GR_PATCH_RADIUS (Chebyshev) of each returned keypoint's nearest pixel (what
 * those two functions read); the rest of the plane is undefined. */
const GrDescriptorScratch *gr_features_scratch (const GrFeatures *f);

/* ---- Sub-pixel refinement of matches (used by featurematch before its final fit).
 *
 * Patches: the smoothed image (from the scratch of the last gr_descriptors_compute)
 * around each keypoint's nearest pixel, GR_PATCH_SIDE^2 bytes, its value range mapped
 * onto 0..255 (the refinement is gain and bias invariant).  Keypoints detected with
 * margin >= gr_descriptor_margin() have their whole patch valid; pixels outside the
 * image or invalid read as the patch minimum. */
#define GR_PATCH_RADIUS 12
#define GR_PATCH_SIDE (2 * GR_PATCH_RADIUS + 1)
#define GR_PATCH_BYTES (GR_PATCH_SIDE * GR_PATCH_SIDE)

GrStatus gr_descriptor_patches (const GrPlaneF *img, const GrDescriptorScratch *s,
    const GrKeypoint *kp, int n, uint8_t *patches);

/* Where does the neighbourhood of (ax, ay) in the image of scratch `s` (the current
 * frame: gr_descriptors_compute was run on it with s) lie in another frame, given
 * that frame's stored patch around its keypoint `pk` and a first guess (x, y) with the
 * local 2 x 2 Jacobian J (row-major) of the mapping between the frames at (ax, ay)?
 * Gauss-Newton on the zero-mean, unit-variance difference of a disc of radius 5
 * (bilinear samples).  On success (x, y) is refined and *ncc receives the normalized
 * correlation; false when the patch is flat, the estimate leaves the patch or does
 * not converge. */
bool gr_patch_refine (const GrPlaneF *img, const GrDescriptorScratch *s, float ax,
    float ay, const uint8_t *patch, const GrKeypoint *pk, const double J[4], double *x,
    double *y, double *ncc);

#ifdef __cplusplus
}
#endif
#endif
