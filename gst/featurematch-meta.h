/* georeg: the featurematch result meta.  Applications include this header and link
 * gstreamer-georeg-1.0 (pkg-config) to read the overlap graph that featurematch
 * attaches to every frame.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_FEATURE_MATCH_META_H__
#define __GST_FEATURE_MATCH_META_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/**
 * GstFeatureMatchFlags:
 * Conditions of a frame.
 */
typedef enum {
  GST_FEATURE_MATCH_FLAG_NONE = 0,
  /* no keypoint was found (flat, tiny or wholly masked frame): nothing to match */
  GST_FEATURE_MATCH_FLAG_NO_FEATURES = 1 << 0,
} GstFeatureMatchFlags;

/**
 * GstFeatureMatchPairFlags:
 * Conditions of a pair (this frame, an earlier frame).
 */
typedef enum {
  GST_FEATURE_MATCH_PAIR_NONE = 0,
  /* h holds a homography (the robust fit succeeded) */
  GST_FEATURE_MATCH_PAIR_HOMOGRAPHY = 1 << 0,
  /* the final fit used sub-pixel refined correspondences */
  GST_FEATURE_MATCH_PAIR_REFINED = 1 << 1,
} GstFeatureMatchPairFlags;

/**
 * GstFeatureMatchPair:
 * This frame against one earlier frame that had at least min-matches matches.
 * Coordinates are pixel-index coordinates (the centre of pixel (0, 0) is (0, 0)).
 */
typedef struct {
  guint64 frame;            /* the earlier frame's number (0 = the first frame) */
  guint matches;            /* matched keypoint pairs (after the cross-check) */
  guint inliers;            /* correspondences consistent with h (0 without h) */
  guint flags;              /* GstFeatureMatchPairFlags */
  gdouble h[9];             /* x_earlier ~ h x_this, row-major, h[8] = 1; NAN without */
  gdouble rms;              /* RMS reprojection error of the inliers (pixels), or NAN */
  gint32 *pairs;            /* matches x 2: (keypoint in this frame, in the earlier) */
  guint8 *inlier;           /* matches: 1 when that pair is an inlier of h */
} GstFeatureMatchPair;

typedef struct _GstFeatureMatchMeta GstFeatureMatchMeta;

/**
 * GstFeatureMatchMeta:
 * Keypoints of a frame and its matches with earlier frames (the overlap graph a
 * stitcher needs).  Every array is owned by the meta.
 */
struct _GstFeatureMatchMeta {
  GstMeta meta;

  guint64 frame;                /* this frame's number */
  guint flags;                  /* GstFeatureMatchFlags */
  guint n_keypoints;
  gfloat *keypoints;            /* n_keypoints x 2: (x, y) */
  guint descriptor_size;        /* 32 or 64 */
  guint n_pairs;
  GstFeatureMatchPair *pairs;   /* one per earlier frame with enough matches */
};

GType gst_feature_match_meta_api_get_type (void);
#define GST_FEATURE_MATCH_META_API_TYPE (gst_feature_match_meta_api_get_type ())
const GstMetaInfo *gst_feature_match_meta_get_info (void);
#define GST_FEATURE_MATCH_META_INFO (gst_feature_match_meta_get_info ())

#define gst_buffer_get_feature_match_meta(b) \
  ((GstFeatureMatchMeta *) gst_buffer_get_meta ((b), GST_FEATURE_MATCH_META_API_TYPE))

/**
 * gst_buffer_add_feature_match_meta: (skip)
 *
 * Adds an empty meta (no keypoints, no pairs); the caller fills it.
 */
GstFeatureMatchMeta *gst_buffer_add_feature_match_meta (GstBuffer * buffer);

/**
 * gst_feature_match_meta_set_keypoints: (skip)
 *
 * Copies n (x, y) keypoints into the meta (replacing any).
 */
void gst_feature_match_meta_set_keypoints (GstFeatureMatchMeta * meta, guint n,
    const gfloat * xy);

/**
 * gst_feature_match_meta_add_pair: (skip)
 *
 * Appends a pair: copies `matches` index pairs (and inlier flags, may be NULL = none
 * marked) and returns the new entry for the caller to fill its other fields.
 */
GstFeatureMatchPair *gst_feature_match_meta_add_pair (GstFeatureMatchMeta * meta,
    guint64 frame, guint matches, const gint32 * pairs, const guint8 * inlier);

G_END_DECLS

#endif
