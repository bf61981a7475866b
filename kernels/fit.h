/* Robust fitting of 2D transforms to point correspondences: RANSAC with local
 * optimisation (LO-RANSAC) and a final least-squares refinement on the inliers.
 * Used by nmiregister (frame -> control) and featurematch (pairwise homographies).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_FIT_H
#define GR_FIT_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  GR_MODEL_TRANSLATION = 0,   /* 1 correspondence minimum */
  GR_MODEL_SIMILARITY = 1,    /* rotation + uniform scale + translation, 2 minimum */
  GR_MODEL_AFFINE = 2,        /* 3 minimum */
  GR_MODEL_HOMOGRAPHY = 3,    /* 4 minimum */
} GrModel;

typedef struct {
  GrModel model;
  double threshold;      /* inlier if reprojection error (pixels, in dst) <= threshold */
  double confidence;     /* RANSAC stopping confidence, e.g. 0.999 */
  int max_iterations;    /* hard cap on hypotheses */
  uint64_t seed;         /* deterministic sampling */
} GrFitParams;

void gr_fit_params_init (GrFitParams *p, GrModel model);   /* threshold 1.0, 0.999, 10000 */

typedef enum {
  GR_FIT_OK = 0,
  GR_FIT_TOO_FEW = 1,        /* fewer correspondences than the model's minimum */
  GR_FIT_DEGENERATE = 2,     /* no non-degenerate hypothesis (collinear points, ...) */
  GR_FIT_NO_CONSENSUS = 3,   /* best hypothesis has fewer inliers than the minimum + 1 */
} GrFitResult;

typedef struct {
  double h[9];               /* dst ~ H src, row-major, h[8] = 1 (all models) */
  int inliers;
  double rms;                /* RMS reprojection error over the inliers (pixels) */
  int iterations;
  GrFitResult result;
} GrFit;

/* src, dst: n points (x, y) each, as interleaved doubles.  weights may be NULL (used to
 * order/prefer hypotheses, e.g. match confidence).  inlier_mask (may be NULL): n bytes,
 * 1 for inliers of the returned model. */
GrFitResult gr_fit_robust (const double *src, const double *dst, const double *weights,
    int n, const GrFitParams *params, GrFit *out, uint8_t *inlier_mask);

/* The error the fit h (of `model`, from the correspondences src -> dst with their
 * inlier mask, NULL: all) is expected to make, RMS over a grid of the width x height
 * frame, in frame pixels: the parameters' covariance from the inliers' residual
 * variance (least squares, independent errors) carried to each grid point and back
 * through the transform's local inverse.  It grows where the inliers are few, noisy,
 * clustered, or far finer in the frame than in dst.  NAN when undetermined. */
double gr_fit_predicted_error (const double h[9], GrModel model, const double *src,
    const double *dst, const uint8_t *inlier_mask, int n, int width, int height);

/* The jackknife behind gr_fit_predicted_error, for any model: the inliers are cut
 * into 3 x 3 blocks of the width x height frame, refit (user, idx, k, h) fits the
 * model to the inliers idx[0 .. k) without one block (false: cannot), and the spread
 * of those fits over a grid of the frame, in frame pixels through h's local scale, is
 * the result.  Fewer than min_points left without a block: undetermined (NAN). */
typedef bool (*GrFitRefit) (void *user, const int *idx, int k, double h[9]);
double gr_fit_jackknife_error (const double h[9], const double *src,
    const uint8_t *inlier_mask, int n, int width, int height, int min_points,
    GrFitRefit refit, void *user);

/* (x', y') = H (x, y); false when the point maps to infinity. */
bool gr_fit_apply (const double h[9], double x, double y, double *xo, double *yo);

/* ---- Is a frame -> control transform plausible for a camera over flat ground?  The
 * fit's residual cannot say: a collapsed homography (a sliver footprint) can fit a
 * few clustered inliers to 0.06 px.  These checks look at the transform itself. */
typedef enum {
  GR_PLAUSIBLE_OK = 0,
  GR_PLAUSIBLE_NOT_FINITE = 1 << 0,    /* non-finite, or a frame corner maps to infinity
                                          or behind the camera (w <= 0) */
  GR_PLAUSIBLE_NEAR_SINGULAR = 1 << 1, /* the 2x2 Jacobian at some corner or the centre
                                          is (near) singular or mirrored (det <= 0, or
                                          its singular values differ by more than
                                          max_anisotropy) */
  GR_PLAUSIBLE_NON_CONVEX = 1 << 2,    /* the footprint (the 4 corners) is not a convex
                                          quadrilateral with the frame's orientation */
  GR_PLAUSIBLE_AREA = 1 << 3,          /* footprint area off the expected scale^2 *
                                          frame area by more than scale_tolerance^2 */
  GR_PLAUSIBLE_ASPECT = 1 << 4,        /* the footprint's side ratios differ from the
                                          frame's by more than max_anisotropy */
  GR_PLAUSIBLE_HEADING = 1 << 5,       /* heading at the centre more than
                                          heading_tolerance_deg from the expected */
} GrPlausibleFlags;

typedef struct {
  double expected_scale;       /* control px per frame px; <= 0: unknown (no AREA check) */
  double scale_tolerance;      /* factor >= 1 on the linear scale (default 1.5) */
  bool has_heading;
  double heading_deg;          /* expected heading, clockwise from the control's up */
  double heading_tolerance_deg;   /* default 20 */
  double max_anisotropy;       /* default 2.5 (a 15-degree tilt gives about 1.3) */
} GrPlausibleParams;

void gr_plausible_params_init (GrPlausibleParams *p);

typedef struct {
  double area_ratio;           /* footprint area / (expected_scale^2 * w * h); NAN if
                                  no expected scale */
  double anisotropy;           /* worst singular value ratio over corners and centre */
  double heading_deg;          /* at the frame centre, [0, 360) */
  double scale;                /* sqrt |det J| at the centre */
  double min_det;              /* smallest Jacobian determinant over corners, centre */
} GrPlausibility;

/* Checks frame -> control h (any model) for a width x height frame, pixel-corner
 * coordinates.  Returns the GrPlausibleFlags found (0 = plausible); out may be NULL. */
unsigned gr_fit_check_plausible (const double h[9], int width, int height,
    const GrPlausibleParams *params, GrPlausibility *out);

/* 3 x 3 row-major algebra on transforms.  c = a b (c may alias a or b). */
void gr_mat3_mul (const double a[9], const double b[9], double c[9]);
/* o = m^-1; false when m is singular or not finite. */
bool gr_mat3_inverse (const double m[9], double o[9]);

#ifdef __cplusplus
}
#endif
#endif
