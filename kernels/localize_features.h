/* Places for a frame proposed by descriptor matching against the control, for the
 * localizer's doubtful sweeps (localize.c).
 *
 * Why: without a prior, a small footprint (a fifth of the control's width or less)
 * seen at a pitch and roll of 10-15 degrees gives the NMI sweep too little evidence:
 * on aukerman.png its true place, at its exact heading and scale, scored below the
 * best wrong places both with 48 px and with 128 px templates, and was not among the
 * sixty best places of the sweep (docs/benchmarks.md, seventeenth session).  Local
 * gradient descriptors do not care about the heading (descriptors.h) and little about
 * the tilt, and on those frames the right scale gave 6-10 inliers where every other
 * scale gave none.  So when the NMI candidates cannot be told apart, the frame is
 * matched at each searched scale and the best supported similarities join them as
 * candidates; NMI at the fine level and the candidates' registrations still decide.
 *
 * Matching: the frame and the control brought to one ground resolution (the frame
 * downscaled when it is finer, the control when the frame is coarser, in quarter
 * octaves), Shi-Tomasi keypoints and 64-float descriptors on both, the nearest
 * control descriptor with a ratio test, and a robust similarity (fit.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_LOCALIZE_FEATURES_H
#define GR_LOCALIZE_FEATURES_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The control's keypoints and descriptors, per quarter-octave level, made on first
 * use and kept until the control changes. */
typedef struct GrPlaceFeatures GrPlaceFeatures;

GrPlaceFeatures *gr_place_features_new (void);
void gr_place_features_free (GrPlaceFeatures *pf);
/* The control changed: every level is dropped. */
void gr_place_features_reset (GrPlaceFeatures *pf);

typedef struct {
  double h[9];        /* frame pixel-corner -> control pixel-corner similarity, h[8] = 1 */
  int matches;        /* ratio-test matches */
  int inliers;        /* of the similarity (2 px at the matching resolution) */
} GrFeaturePlace;

/* Matches a frame of frame_w x frame_h px whose ground resolution is `scale` control
 * px per frame px.  small: the frame downscaled by the factor (frame px -> small px)
 * that gr_place_features_frame_factor gives for that scale and frame size.  threads:
 * 0 = OpenMP's default.  out->inliers = 0 when no similarity was found.
 * GR_ERR_NOMEM, GR_ERR_INVALID. */
GrStatus gr_place_features_match (GrPlaceFeatures *pf, const GrPlaneF *control,
    double scale, const GrPlaneF *small, int frame_w, int frame_h, int threads,
    GrFeaturePlace *out);

/* The frame's downscale (<= 1) for matching a frame of long side long_side px at
 * `scale` against a control_w x control_h control: the frame and a quarter-octave
 * level of the control (never finer than the control) at one ground resolution, the
 * frame at most 1024 px long and the level at most 4096 x 4096 px. */
double gr_place_features_frame_factor (double scale, double long_side, int control_w,
    int control_h);

#ifdef __cplusplus
}
#endif
#endif
