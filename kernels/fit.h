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

/* (x', y') = H (x, y); false when the point maps to infinity. */
bool gr_fit_apply (const double h[9], double x, double y, double *xo, double *yo);

/* 3 x 3 row-major algebra on transforms.  c = a b (c may alias a or b). */
void gr_mat3_mul (const double a[9], const double b[9], double c[9]);
/* o = m^-1; false when m is singular or not finite. */
bool gr_mat3_inverse (const double m[9], double o[9]);

#ifdef __cplusplus
}
#endif
#endif
