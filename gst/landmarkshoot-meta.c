/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include "landmarkshoot-meta.h"

/* No tags: the momentum describes how the template maps onto this buffer's target,
 * not the bytes of the buffer, so it survives every transform that keeps the buffer. */
GType
gst_landmark_shoot_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { NULL };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        gst_meta_api_type_register ("GstLandmarkShootMetaAPI", tags));
  return type;
}

static gboolean
landmark_shoot_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  GstLandmarkShootMeta *m = (GstLandmarkShootMeta *) meta;
  m->n_points = 0;
  m->dimensions = 0;
  m->momentum = NULL;
  m->kinetic_energy = m->mismatch = m->loss = NAN;
  m->mean_distance = m->mean_distance_before = NAN;
  m->iterations = m->evaluations = 0;
  m->gradient_norm = NAN;
  m->converged = FALSE;
  m->run_time = 0.0;
  m->backend = 0;
  return TRUE;
}

static void
landmark_shoot_meta_free (GstMeta * meta, GstBuffer * buffer)
{
  GstLandmarkShootMeta *m = (GstLandmarkShootMeta *) meta;
  g_free (m->momentum);
  m->momentum = NULL;
}

static gboolean
landmark_shoot_meta_transform (GstBuffer * dest, GstMeta * meta, GstBuffer * buffer,
    GQuark type, gpointer data)
{
  GstLandmarkShootMeta *src = (GstLandmarkShootMeta *) meta;
  GstLandmarkShootMeta *dst = gst_buffer_add_landmark_shoot_meta (dest, src->momentum,
      src->n_points, src->dimensions);
  if (!dst)
    return FALSE;
  gdouble *mom = dst->momentum;
  memcpy ((guint8 *) dst + sizeof (GstMeta), (guint8 *) src + sizeof (GstMeta),
      sizeof (GstLandmarkShootMeta) - sizeof (GstMeta));
  dst->momentum = mom;
  return TRUE;
}

const GstMetaInfo *
gst_landmark_shoot_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;
  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_LANDMARK_SHOOT_META_API_TYPE,
        "GstLandmarkShootMeta", sizeof (GstLandmarkShootMeta),
        landmark_shoot_meta_init, landmark_shoot_meta_free,
        landmark_shoot_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) mi);
  }
  return info;
}

GstLandmarkShootMeta *
gst_buffer_add_landmark_shoot_meta (GstBuffer * buffer, const gdouble * momentum,
    guint n_points, guint dimensions)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  g_return_val_if_fail (dimensions == 2 || dimensions == 3, NULL);
  GstLandmarkShootMeta *m = (GstLandmarkShootMeta *) gst_buffer_add_meta (buffer,
      GST_LANDMARK_SHOOT_META_INFO, NULL);
  if (!m)
    return NULL;
  gsize count = (gsize) n_points * dimensions;
  m->momentum = g_new0 (gdouble, count ? count : 1);
  if (momentum && count)
    memcpy (m->momentum, momentum, sizeof (gdouble) * count);
  m->n_points = n_points;
  m->dimensions = dimensions;
  return m;
}
