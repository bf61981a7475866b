/* Pair pruning from poses (issue 16): the pair list of the batch matcher (matcher.h's
 * GrMatcherPairs) for frames whose camera poses are known rather than their
 * footprints.  Kept apart from matcher.h so that the matcher's header does not need
 * the camera model.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_MATCHER_PAIRS_H
#define GR_MATCHER_PAIRS_H

#include "camera.h"
#include "matcher.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Frame i was taken by camera cam (one camera for all, or cams[i] when cams is not
 * NULL) at pose poses[i] (attitude and height above flat ground), its camera above the
 * ground point (east[i], north[i]) metres of one projected CRS.  Its footprint is
 * gr_camera_footprint's, moved there; a frame whose footprint does not exist (a corner
 * ray near or above the horizon) or whose position is not finite counts as unknown and
 * pairs with every frame.  Then gr_matcher_pairs_from_footprints (margin in metres:
 * cover the poses' errors, e.g. 2 x the position error plus height x tan (attitude
 * error)). */
GrStatus gr_matcher_pairs_from_poses (const GrCamera *cam, const GrCamera *cams,
    const GrCameraPose *poses, const double *east, const double *north, int m,
    double margin, GrMatcherPairs *pairs, char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
