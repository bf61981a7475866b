/* Keypoint detection: a corner measure (Shi-Tomasi minimum eigenvalue of the structure
 * tensor) with non-maximum suppression, spread over the image by a grid, honouring a
 * validity mask.  Used by nmiregister (template centres) and featurematch (descriptor
 * centres).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_KEYPOINTS_H
#define GR_KEYPOINTS_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  float x, y;          /* pixel-index coordinates (centre of pixel (0,0) = (0,0)) */
  float response;      /* corner measure; larger is stronger */
} GrKeypoint;

typedef struct {
  int max_keypoints;   /* total cap (> 0) */
  int grid_cols;       /* the image is cut into grid_cols x grid_rows cells; each cell */
  int grid_rows;       /*   keeps at most ceil(max_keypoints / cells) of its best points */
  int nms_radius;      /* a keypoint is the maximum within this radius (pixels, >= 1) */
  int margin;          /* every pixel within `margin` (Chebyshev) of a keypoint is valid
                          and inside the image: templates/patches of half-size margin
                          never touch invalid data */
  float min_response;  /* keep responses >= min_response * (largest response); 0..1 */
  int block_radius;    /* structure-tensor window half-size (pixels, >= 1; default 2) */
} GrKeypointParams;

void gr_keypoint_params_init (GrKeypointParams *p);   /* 2000, 8x6 grid, nms 4, margin 5,
                                                         min_response 0.01, block 2 */

/* Detects keypoints in `img` (mask honoured).  Writes at most `capacity` keypoints,
 * strongest first within the grid budget, and returns how many (0 is valid: a flat
 * or wholly masked image); negative GrStatus on bad arguments or out of memory.
 * Multi-threaded (OpenMP); deterministic. */
int gr_keypoints_detect (const GrPlaneF *img, const GrKeypointParams *params,
    GrKeypoint *out, int capacity);

/* Detection in two steps, so that several detections on one frame (nmiregister's and
 * featurematch's, with their own margins and counts) compute the responses once:
 * gr_keypoints_responses fills resp (width x height, packed) with the corner measure
 * of every pixel at least block_radius + 1 from the edges (0 elsewhere), the mask not
 * read; gr_keypoints_detect_with then detects as gr_keypoints_detect with the same
 * block_radius would, from those responses (NULL: computed here), and gives the same
 * keypoints bit for bit.  0 / the count, or a negative GrStatus. */
int gr_keypoints_responses (const GrPlaneF *img, int block_radius, float *resp);
int gr_keypoints_detect_with (const GrPlaneF *img, const GrKeypointParams *params,
    const float *responses, GrKeypoint *out, int capacity);

#ifdef __cplusplus
}
#endif
#endif
