/* Internal: the CUDA half of gr_features_extract (kernels/features_cuda.cu).  Only
 * built when the build has CUDA; descriptors.c validates the arguments, prepares the
 * weight tables (so that both backends use the very same floats) and dispatches here.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_FEATURES_CUDA_H
#define GR_FEATURES_CUDA_H

#include "descriptors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct GrFeaturesCuda GrFeaturesCuda;

/* What descriptors.c computes once per call (its own expressions, shared with the
 * CPU path). */
typedef struct {
  int rr;                /* smoothing half-width: taps -rr .. rr */
  float wt[63];          /* smoothing taps */
  const float *gw_ori;   /* (2R+1)^2 orientation weights (0 outside the disc) */
  const float *gw_desc;  /* (2R+1)^2 descriptor weights */
  float k_ori;           /* ORI_BINS / (2 pi) */
  float k_theta;         /* 2 pi / ORI_BINS */
  float k_desc;          /* orientation bins / (2 pi) */
} GrFeaturesTables;

GrFeaturesCuda *gr_features_cuda_new (int device, char *errbuf, size_t errlen);
void gr_features_cuda_free (GrFeaturesCuda *c);

/* Arguments validated.  img: a host plane, or (img_on_device) a plane in device
 * memory of c's device (data any stride, mask packed: GrPlaneF), used in place when its
 * rows are packed.  host_kp: NULL = detect on the device (gr_keypoints_detect's maths,
 * at most `capacity`); else the host_n keypoints the CPU detector found.  Writes n
 * keypoints (refined when dp->subpixel) to kp, n x dp->size descriptors, angles (may
 * be NULL), and into smooth (w x h floats, dense) the smoothed frame within
 * GR_PATCH_RADIUS of each keypoint's nearest pixel; when valid is not NULL and the
 * frame has a mask, the mask over the same windows into valid (w x h bytes, dense).
 * Returns n, or a negative GrStatus. */
int gr_features_cuda_extract (GrFeaturesCuda *c, const GrPlaneF *img, bool img_on_device,
    const GrKeypointParams *kpp, const GrDescriptorParams *dp,
    const GrFeaturesTables *tab, const GrKeypoint *host_kp, int host_n, int capacity,
    GrKeypoint *kp, float *desc, float *angle, float *smooth, uint8_t *valid,
    GrFeatureStats *stats, char *errbuf, size_t errlen);

/* Detection only (steps 1 to 5 of the extraction): gr_keypoints_detect's keypoints of
 * img (host, or device as above), at most `capacity`; only the keypoints come back.
 * Arguments validated; block_radius <= 16.  Returns n, or a negative GrStatus. */
int gr_features_cuda_detect (GrFeaturesCuda *c, const GrPlaneF *img, bool img_on_device,
    const GrKeypointParams *kpp, int capacity, GrKeypoint *kp, GrFeatureStats *stats,
    char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
