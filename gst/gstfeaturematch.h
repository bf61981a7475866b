/* featurematch: keypoints, descriptors and ratio-test matching of every frame against
 * the earlier frames, pairwise homographies.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_FEATURE_MATCH_H__
#define __GST_FEATURE_MATCH_H__

#include <gst/gst.h>
#include "gstgeoregbase.h"

G_BEGIN_DECLS

#define GST_TYPE_FEATURE_MATCH (gst_feature_match_get_type ())
G_DECLARE_FINAL_TYPE (GstFeatureMatch, gst_feature_match, GST, FEATURE_MATCH,
    GstGeoregBase)

GST_ELEMENT_REGISTER_DECLARE (featurematch);

G_END_DECLS

#endif
