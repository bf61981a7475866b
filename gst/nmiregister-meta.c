/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include "nmiregister-meta.h"
#include "georeg-lens-private.h"
#include "brown_conrady.h"

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
  m->predicted_error = NAN;
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
  m->camera_fit = FALSE;
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

/* The same steps, in the same order, as gr_register_result_apply (kernels/register.c)
 * with which nmiregister made footprint_control, so a corner mapped here equals the
 * meta's own bit for bit. */
gboolean
georeg_map_frame_point (const gdouble h[9], gboolean undistorted, const gdouble lens[9],
    gdouble x, gdouble y, gdouble * cx, gdouble * cy)
{
  if (!isfinite (h[8]))
    return FALSE;
  if (undistorted) {
    /* pixel corners -> OpenCV's pixel centres, undistort, back */
    const double k[5] = { lens[4], lens[5], lens[6], lens[7], lens[8] };
    double xn, yn;
    if (!gr_bc_undistort_normalized (k, lens[0], lens[1], (x - 0.5 - lens[2]) / lens[0],
            (y - 0.5 - lens[3]) / lens[1], &xn, &yn))
      return FALSE;
    const double u = lens[2] + lens[0] * xn, v = lens[3] + lens[1] * yn;
    if (!isfinite (u) || !isfinite (v))
      return FALSE;
    x = u + 0.5;
    y = v + 0.5;
  }
  const double w = h[6] * x + h[7] * y + h[8];
  /* w <= 0: beyond the horizon of a homography, no place on the control */
  if (!isfinite (w) || !(w > 0) || fabs (w) < 1e-300)
    return FALSE;
  const double u = (h[0] * x + h[1] * y + h[2]) / w;
  const double v = (h[3] * x + h[4] * y + h[5]) / w;
  if (!isfinite (u) || !isfinite (v))
    return FALSE;
  *cx = u;
  *cy = v;
  return TRUE;
}

gboolean
gst_nmi_register_meta_frame_to_control (const GstNmiRegisterMeta * meta, gdouble x,
    gdouble y, gdouble * cx, gdouble * cy)
{
  g_return_val_if_fail (meta != NULL && cx != NULL && cy != NULL, FALSE);
  if (!meta->has_transform)
    return FALSE;
  return georeg_map_frame_point (meta->frame_to_control, meta->undistorted, meta->lens, x, y,
      cx, cy);
}

guint
gst_nmi_register_meta_doubt (const GstNmiRegisterMeta * meta,
    const GstNmiLocalizeMeta * coarse)
{
  g_return_val_if_fail (meta != NULL, 0);
  guint doubt = 0;
  if (meta->flags & (GST_NMI_REGISTER_FLAG_LOW_INLIERS | GST_NMI_REGISTER_FLAG_POOR_SPREAD |
          GST_NMI_REGISTER_FLAG_REFINE_FAILED | GST_NMI_REGISTER_FLAG_IMPRECISE))
    doubt |= GST_NMI_REGISTER_DOUBT_OWN;
  /* the coarse result was the prior unless nmiregister found its own */
  const gboolean own_prior = (meta->flags & (GST_NMI_REGISTER_FLAG_FULL_SEARCH |
          GST_NMI_REGISTER_FLAG_INITIAL_OFFSET)) != 0;
  if (coarse && !own_prior && (coarse->flags & GST_NMI_REGISTER_COARSE_DOUBT))
    doubt |= GST_NMI_REGISTER_DOUBT_COARSE;
  return doubt;
}
