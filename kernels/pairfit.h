/* All of a frame's pair fits at once: for each earlier frame that shares enough
 * matches with the current frame, a robust homography (kernels/fit.h, LO-RANSAC), its
 * inliers refined to sub-pixel accuracy against the earlier frame's stored patches
 * (gr_patch_refine, kernels/descriptors.h), and a final robust fit on the refined
 * correspondences.  featurematch calls it once per frame.
 *
 * Parallelism (OpenMP, all cores): three phases, each an independent loop whose items
 * write only their own outputs: (1) the first robust fit of every pair, (2) the
 * refinement of every inlier of every pair, flattened into one list so that a pair
 * with many inliers does not leave the other cores idle, (3) the final fit of every
 * pair.  Every fit uses the pair's own deterministic seed, so the results are
 * bit-identical for any thread count (tests/test_pairfit.c compares 1 thread against
 * all of them).  The current frame's view and scratch (what gr_features_extract left)
 * are only read, by every thread: gr_patch_refine keeps its working set on its own
 * stack, so no per-thread copy of the scratch is needed.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_PAIRFIT_H
#define GR_PAIRFIT_H

#include "descriptors.h"
#include "gr_common.h"
#include "keypoints.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One pair: the current frame against one earlier frame. */
typedef struct {
  const GrKeypoint *kp;       /* the earlier frame's keypoints */
  const uint8_t *patches;     /* its patches, GR_PATCH_BYTES each (gr_descriptor_patches) */
  const int32_t *pairs;       /* m x 2: (keypoint of the current frame, of the earlier) */
  int m;                      /* matches */
  uint64_t seed;              /* RANSAC seed of both fits of this pair */
} GrPairFitJob;

typedef enum {
  GR_PAIRFIT_NONE = 0,
  GR_PAIRFIT_HOMOGRAPHY = 1 << 0,   /* h, rms, inliers are set */
  GR_PAIRFIT_REFINED = 1 << 1,      /* ... from the refined correspondences */
} GrPairFitFlags;

typedef struct {
  unsigned flags;             /* GrPairFitFlags */
  double h[9];                /* x_earlier ~ h x_current, h[8] = 1 (with HOMOGRAPHY) */
  double rms;                 /* RMS reprojection error of the inliers (px) */
  int inliers;
  uint8_t *inlier;            /* the caller's m bytes: 1 = inlier of h (written only
                                 with HOMOGRAPHY; untouched otherwise) */
} GrPairFitResult;

typedef struct {
  double fit_threshold;       /* px, first robust fit (default 2) */
  double refit_threshold;     /* px, fit on the refined correspondences (default 1) */
  double min_ncc;             /* refined correspondences kept above this (default 0.8) */
  int min_points;             /* fewer matches / inliers: no homography (default 8) */
  int threads;                /* 0 = the cores, shared among the calls running now;
                                 1 = sequential */
} GrPairFitParams;

void gr_pairfit_params_init (GrPairFitParams *p);

/* Where a call's time went (wall clock, all threads of the call together). */
typedef struct {
  double fit_ms;              /* phase 1: the first robust fit of every pair */
  double refine_ms;           /* phase 2: the patch refinements */
  double refit_ms;            /* phase 3: the fits on the refined correspondences */
  int64_t refinements;        /* refinements tried */
  int64_t refined;            /* ... and kept (converged, NCC >= min_ncc) */
} GrPairFitStats;

/* Fits the n jobs.  view, scratch: the current frame as gr_patch_refine reads it
 * (gr_features_validity / gr_features_scratch after the extraction); kp: the current
 * frame's keypoints.  out: n results (flags, h, rms, inliers are overwritten; inlier
 * must point at m bytes each); stats may be NULL.  GR_ERR_INVALID on bad arguments,
 * GR_ERR_NOMEM. */
GrStatus gr_pairfit_run (const GrPlaneF *view, const GrDescriptorScratch *scratch,
    const GrKeypoint *kp, const GrPairFitJob *jobs, int n, const GrPairFitParams *p,
    GrPairFitResult *out, GrPairFitStats *stats);

#ifdef __cplusplus
}
#endif
#endif
