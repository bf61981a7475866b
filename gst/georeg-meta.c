/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include "georeg-meta.h"

/* No tags: the result describes where the frame is, not its pixels, so it survives
 * every transform that keeps the buffer (GstBaseTransform copies untagged metas). */
GType
gst_nmi_localize_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { NULL };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, gst_meta_api_type_register ("GstNmiLocalizeMetaAPI", tags));
  return type;
}

static gboolean
nmi_localize_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  GstNmiLocalizeMeta *m = (GstNmiLocalizeMeta *) meta;
  m->flags = 0;
  m->offset_x = m->offset_y = NAN;
  m->control_x = m->control_y = NAN;
  m->center_x = m->center_y = NAN;
  m->frame_scale = m->control_scale = 1.0;
  m->score = m->second_score = m->peak_ratio = NAN;
  m->valid_pixels = 0;
  m->has_map = FALSE;
  m->map_x = m->map_y = NAN;
  m->has_prior_transform = FALSE;
  for (int i = 0; i < 9; i++)
    m->frame_to_control[i] = NAN;
  m->heading_deg = m->scale = m->gsd = m->overlap = NAN;
  return TRUE;
}

static gboolean
nmi_localize_meta_transform (GstBuffer * dest, GstMeta * meta, GstBuffer * buffer,
    GQuark type, gpointer data)
{
  /* copy for every transform: a copy, a region copy or a format conversion keeps
   * the frame where it is */
  GstNmiLocalizeMeta *src = (GstNmiLocalizeMeta *) meta;
  GstNmiLocalizeMeta *dst = gst_buffer_add_nmi_localize_meta (dest);
  if (!dst)
    return FALSE;
  memcpy ((guint8 *) dst + sizeof (GstMeta), (guint8 *) src + sizeof (GstMeta),
      sizeof (GstNmiLocalizeMeta) - sizeof (GstMeta));
  return TRUE;
}

const GstMetaInfo *
gst_nmi_localize_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;
  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_NMI_LOCALIZE_META_API_TYPE,
        "GstNmiLocalizeMeta", sizeof (GstNmiLocalizeMeta),
        nmi_localize_meta_init, NULL, nmi_localize_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) mi);
  }
  return info;
}

GstNmiLocalizeMeta *
gst_buffer_add_nmi_localize_meta (GstBuffer * buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  return (GstNmiLocalizeMeta *) gst_buffer_add_meta (buffer,
      GST_NMI_LOCALIZE_META_INFO, NULL);
}

gboolean
gst_nmi_localize_meta_set_transform (GstNmiLocalizeMeta * meta,
    const gdouble frame_to_control[9], gint frame_width, gint frame_height)
{
  g_return_val_if_fail (meta != NULL && frame_to_control != NULL, FALSE);
  const gdouble *h = frame_to_control;
  for (int i = 0; i < 9; i++)
    if (!isfinite (h[i]))
      return FALSE;
  const gdouble x = frame_width / 2.0, y = frame_height / 2.0;
  const gdouble w = h[6] * x + h[7] * y + h[8];
  if (!(fabs (w) > 1e-12))
    return FALSE;
  const gdouble u = (h[0] * x + h[1] * y + h[2]) / w;
  const gdouble v = (h[3] * x + h[4] * y + h[5]) / w;
  /* Jacobian of the projective map at the centre: d(u,v)/d(x,y) */
  const gdouble j00 = (h[0] - h[6] * u) / w, j01 = (h[1] - h[7] * u) / w;
  const gdouble j10 = (h[3] - h[6] * v) / w, j11 = (h[4] - h[7] * v) / w;
  memcpy (meta->frame_to_control, h, sizeof meta->frame_to_control);
  meta->has_prior_transform = TRUE;
  meta->center_x = u;
  meta->center_y = v;
  /* the frame's up (0, -1) lands on (-j01, -j11); heading is its angle clockwise
   * from the control's up (0, -1) */
  gdouble hd = atan2 (-j01, j11) * 180.0 / G_PI;
  if (hd < 0.0)
    hd += 360.0;
  meta->heading_deg = hd >= 360.0 ? 0.0 : hd;
  meta->scale = sqrt (fabs (j00 * j11 - j01 * j10));
  return TRUE;
}
