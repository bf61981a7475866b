/* featurematch: keypoints, descriptors and ratio-test matching of every frame against
 * the earlier frames, pairwise homographies.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_FEATURE_MATCH_H__
#define __GST_FEATURE_MATCH_H__

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include <gst/video/video.h>

#include "gstgeoregutils.h"
#include "gstgeoregcuda.h"
#include "descriptors.h"
#include "keypoints.h"
#include "matcher.h"

G_BEGIN_DECLS

#define GST_TYPE_FEATURE_MATCH (gst_feature_match_get_type ())
G_DECLARE_FINAL_TYPE (GstFeatureMatch, gst_feature_match, GST, FEATURE_MATCH,
    GstBaseTransform)

/* Properties, read under the object lock and copied per frame. */
typedef struct {
  gdouble ratio;
  guint max_images;
  guint min_matches;
  guint max_features;
  gint descriptor_size;
  gboolean cross_check;
  gint nodata;
  gchar *matrix_location;
  GrBackend backend;
  gint cuda_device_id;
  gboolean post_messages;
} GstFeatureMatchSettings;

struct _GstFeatureMatch {
  GstBaseTransform parent;

  GstFeatureMatchSettings settings;

  /* from start() */
  GrMatcher *matcher;
  GrFeatures *features;         /* keypoints + descriptors, on the element's backend */
  gint k;                       /* descriptor size of this run */
  gchar *matrix_location;       /* of this run */

  /* negotiated */
  GstVideoInfo info;
  gboolean have_info;

  /* the frames held for matching (oldest first): keypoints and refinement patches */
  GQueue held;
  /* per frame, when matrix_location is set: what the .npy files need */
  GPtrArray *records;

  /* per-frame scratch, reused */
  GrPlaneF plane;
  guint64 frame_count;
  gboolean announced;

  /* CUDA memory: context, device conversion of CUDA frames (gst/gstgeoregcuda.h) */
  GstGeoregCuda cuda;
  GstGeoregInput input;         /* where the last frame was read from */
  gint dev;                     /* CUDA features: their device (frames go there as
                                   device planes, gr_features_extract_device); -1 =
                                   host planes */
  const GrPlaneF *view;         /* this frame as patches and refinement read it */
};

GST_ELEMENT_REGISTER_DECLARE (featurematch);

G_END_DECLS

#endif
