/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include "nmiregister-meta.h"

/* No tags: the result describes where the frame is, not its pixels, so it survives
 * every transform that keeps the buffer.  The meta owns no memory (its crs string is
 * interned), so a byte copy is a full copy. */
GType
gst_nmi_register_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { NULL };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, gst_meta_api_type_register ("GstNmiRegisterMetaAPI", tags));
  return type;
}

static gboolean
nmi_register_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  GstNmiRegisterMeta *m = (GstNmiRegisterMeta *) meta;
  m->flags = 0;
  m->model = 3;
  m->has_transform = FALSE;
  m->has_map = FALSE;
  for (int i = 0; i < 9; i++)
    m->frame_to_control[i] = m->frame_to_map[i] = NAN;
  for (int i = 0; i < 8; i++)
    m->footprint_control[i] = m->footprint_map[i] = NAN;
  m->keypoints = m->matches = m->inliers = 0;
  m->rms = NAN;
  m->prior_x = m->prior_y = m->prior_scale = NAN;
  m->crs = NULL;
  m->epsg = 0;
  m->has_lonlat = FALSE;
  for (int i = 0; i < 8; i++)
    m->footprint_lonlat[i] = NAN;
  for (int i = 0; i < 2; i++)
    m->center_control[i] = m->center_map[i] = m->center_lonlat[i] = NAN;
  m->undistorted = FALSE;
  for (int i = 0; i < 9; i++)
    m->lens[i] = NAN;
  return TRUE;
}

static gboolean
nmi_register_meta_transform (GstBuffer * dest, GstMeta * meta, GstBuffer * buffer,
    GQuark type, gpointer data)
{
  GstNmiRegisterMeta *src = (GstNmiRegisterMeta *) meta;
  GstNmiRegisterMeta *dst = gst_buffer_add_nmi_register_meta (dest);
  if (!dst)
    return FALSE;
  memcpy ((guint8 *) dst + sizeof (GstMeta), (guint8 *) src + sizeof (GstMeta),
      sizeof (GstNmiRegisterMeta) - sizeof (GstMeta));
  return TRUE;
}

const GstMetaInfo *
gst_nmi_register_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;
  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_NMI_REGISTER_META_API_TYPE,
        "GstNmiRegisterMeta", sizeof (GstNmiRegisterMeta),
        nmi_register_meta_init, NULL, nmi_register_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) mi);
  }
  return info;
}

GstNmiRegisterMeta *
gst_buffer_add_nmi_register_meta (GstBuffer * buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  return (GstNmiRegisterMeta *) gst_buffer_add_meta (buffer,
      GST_NMI_REGISTER_META_INFO, NULL);
}
