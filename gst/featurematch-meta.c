/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include "featurematch-meta.h"

/* No tags: the result describes the frame's content and place, it survives every
 * transform that keeps the buffer. */
GType
gst_feature_match_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { NULL };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, gst_meta_api_type_register ("GstFeatureMatchMetaAPI",
            tags));
  return type;
}

static gboolean
feature_match_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  GstFeatureMatchMeta *m = (GstFeatureMatchMeta *) meta;
  m->frame = 0;
  m->flags = 0;
  m->n_keypoints = 0;
  m->keypoints = NULL;
  m->descriptor_size = 0;
  m->n_pairs = 0;
  m->pairs = NULL;
  return TRUE;
}

static void
feature_match_meta_free (GstMeta * meta, GstBuffer * buffer)
{
  GstFeatureMatchMeta *m = (GstFeatureMatchMeta *) meta;
  for (guint i = 0; i < m->n_pairs; i++) {
    g_free (m->pairs[i].pairs);
    g_free (m->pairs[i].inlier);
  }
  g_free (m->pairs);
  g_free (m->keypoints);
  m->pairs = NULL;
  m->keypoints = NULL;
  m->n_pairs = m->n_keypoints = 0;
}

static gboolean
feature_match_meta_transform (GstBuffer * dest, GstMeta * meta, GstBuffer * buffer,
    GQuark type, gpointer data)
{
  /* a deep copy for every transform: keypoints are in the frame's pixel grid, which a
   * copy keeps; elements that resample drop or rewrite metas themselves */
  const GstFeatureMatchMeta *src = (const GstFeatureMatchMeta *) meta;
  GstFeatureMatchMeta *dst = gst_buffer_add_feature_match_meta (dest);
  if (!dst)
    return FALSE;
  dst->frame = src->frame;
  dst->flags = src->flags;
  dst->descriptor_size = src->descriptor_size;
  gst_feature_match_meta_set_keypoints (dst, src->n_keypoints, src->keypoints);
  for (guint i = 0; i < src->n_pairs; i++) {
    const GstFeatureMatchPair *p = &src->pairs[i];
    GstFeatureMatchPair *q = gst_feature_match_meta_add_pair (dst, p->frame, p->matches,
        p->pairs, p->inlier);
    q->inliers = p->inliers;
    q->flags = p->flags;
    memcpy (q->h, p->h, sizeof q->h);
    q->rms = p->rms;
  }
  return TRUE;
}

const GstMetaInfo *
gst_feature_match_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;
  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_FEATURE_MATCH_META_API_TYPE,
        "GstFeatureMatchMeta", sizeof (GstFeatureMatchMeta),
        feature_match_meta_init, feature_match_meta_free, feature_match_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) mi);
  }
  return info;
}

GstFeatureMatchMeta *
gst_buffer_add_feature_match_meta (GstBuffer * buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  return (GstFeatureMatchMeta *) gst_buffer_add_meta (buffer,
      GST_FEATURE_MATCH_META_INFO, NULL);
}

void
gst_feature_match_meta_set_keypoints (GstFeatureMatchMeta * meta, guint n,
    const gfloat * xy)
{
  g_return_if_fail (meta != NULL);
  g_free (meta->keypoints);
  meta->keypoints = n ? g_memdup2 (xy, sizeof (gfloat) * 2 * n) : NULL;
  meta->n_keypoints = n;
}

GstFeatureMatchPair *
gst_feature_match_meta_add_pair (GstFeatureMatchMeta * meta, guint64 frame,
    guint matches, const gint32 * pairs, const guint8 * inlier)
{
  g_return_val_if_fail (meta != NULL, NULL);
  meta->pairs = g_renew (GstFeatureMatchPair, meta->pairs, meta->n_pairs + 1);
  GstFeatureMatchPair *p = &meta->pairs[meta->n_pairs++];
  memset (p, 0, sizeof *p);
  p->frame = frame;
  p->matches = matches;
  p->pairs = matches ? g_memdup2 (pairs, sizeof (gint32) * 2 * matches) : NULL;
  p->inlier = g_malloc0 (matches ? matches : 1);
  if (inlier && matches)
    memcpy (p->inlier, inlier, matches);
  for (int i = 0; i < 9; i++)
    p->h[i] = NAN;
  p->rms = NAN;
  return p;
}
