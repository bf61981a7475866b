/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include <gst/video/video.h>

#include "georeg-pose-meta.h"

/* No tags: the pose describes where the camera was, not the pixels' layout, so every
 * transform that keeps the frame keeps it (decoders included). */
GType
gst_georeg_pose_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { NULL };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, gst_meta_api_type_register ("GstGeoregPoseMetaAPI", tags));
  return type;
}

static gboolean
georeg_pose_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  GstGeoregPoseMeta *m = (GstGeoregPoseMeta *) meta;
  memset ((guint8 *) m + sizeof (GstMeta), 0, sizeof *m - sizeof (GstMeta));
  GstGeoregPoseValue *v[] = { &m->latitude, &m->longitude, &m->altitude_wgs84,
    &m->altitude_amsl, &m->height_agl, &m->relative_altitude, &m->camera_yaw,
    &m->camera_pitch, &m->camera_roll, &m->flight_yaw, &m->flight_pitch, &m->flight_roll,
    &m->gimbal_yaw, &m->gimbal_pitch, &m->gimbal_roll, &m->focal_length_mm,
    &m->focal_length_35mm };
  for (guint i = 0; i < G_N_ELEMENTS (v); i++)
    v[i]->value = NAN;
  m->fx = m->fy = m->cx = m->cy = NAN;
  return TRUE;
}

static gboolean
georeg_pose_meta_transform (GstBuffer * dest, GstMeta * meta, GstBuffer * buffer,
    GQuark type, gpointer data)
{
  /* A copy, a decode or a conversion keeps the pose.  The intrinsics describe the
   * encoded image's pixels: a scaling transform would change them, so they are
   * dropped there rather than carried wrong. */
  GstGeoregPoseMeta *src = (GstGeoregPoseMeta *) meta;
  GstGeoregPoseMeta *dst = gst_buffer_get_georeg_pose_meta (dest);
  if (!dst)
    dst = gst_buffer_add_georeg_pose_meta (dest);
  if (!dst)
    return FALSE;
  memcpy ((guint8 *) dst + sizeof (GstMeta), (guint8 *) src + sizeof (GstMeta),
      sizeof (GstGeoregPoseMeta) - sizeof (GstMeta));
  if (GST_VIDEO_META_TRANSFORM_IS_SCALE (type))
    dst->have_intrinsics = FALSE;
  return TRUE;
}

const GstMetaInfo *
gst_georeg_pose_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;
  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_GEOREG_POSE_META_API_TYPE,
        "GstGeoregPoseMeta", sizeof (GstGeoregPoseMeta),
        georeg_pose_meta_init, NULL, georeg_pose_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) mi);
  }
  return info;
}

GstGeoregPoseMeta *
gst_buffer_add_georeg_pose_meta (GstBuffer * buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  return (GstGeoregPoseMeta *) gst_buffer_add_meta (buffer, GST_GEOREG_POSE_META_INFO,
      NULL);
}
