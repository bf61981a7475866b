/* nmiregister's drawn overlay (gstnmiregisteroverlay.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "gstnmiregisteroverlay.h"
#include "fit.h"

GType
gst_nmi_register_overlay_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_NMI_REGISTER_OVERLAY_NONE, "No overlay", "none"},
    {GST_NMI_REGISTER_OVERLAY_META, "Attach a GstVideoOverlayCompositionMeta (frame "
          "untouched; rendered by sinks that support it)", "meta"},
    {GST_NMI_REGISTER_OVERLAY_DRAW, "Blend the overlay into the frame's pixels", "draw"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNmiRegisterOverlayMode", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* An ARGB canvas (one guint32 0xAARRGGBB per pixel, native endianness: the byte order
 * of GST_VIDEO_OVERLAY_COMPOSITION_FORMAT_RGB) and the brush lines are drawn with. */
typedef struct {
  guint32 *px;
  gint w, h;
  gint brush;          /* half-width of lines and markers' strokes, pixels */
  gint marker;         /* radius of keypoint markers, pixels */
} Canvas;

static void
stamp (Canvas * c, gint x, gint y, guint32 colour)
{
  const gint r = c->brush;
  for (gint j = MAX (y - r, 0); j <= MIN (y + r, c->h - 1); j++)
    for (gint i = MAX (x - r, 0); i <= MIN (x + r, c->w - 1); i++)
      c->px[(gsize) j * c->w + i] = colour;
}

/* Liang-Barsky: clips the segment to [x0, x1] x [y0, y1]; FALSE when nothing is left.
 * Keeps a segment from far outside the frame (a wild transform) from being walked
 * pixel by pixel. */
static gboolean
clip_segment (gdouble * ax, gdouble * ay, gdouble * bx, gdouble * by, gdouble x0,
    gdouble y0, gdouble x1, gdouble y1)
{
  const gdouble dx = *bx - *ax, dy = *by - *ay;
  const gdouble p[4] = { -dx, dx, -dy, dy };
  const gdouble q[4] = { *ax - x0, x1 - *ax, *ay - y0, y1 - *ay };
  gdouble t0 = 0.0, t1 = 1.0;
  for (int i = 0; i < 4; i++) {
    if (p[i] == 0.0) {
      if (q[i] < 0.0)
        return FALSE;
      continue;
    }
    const gdouble t = q[i] / p[i];
    if (p[i] < 0.0)
      t0 = MAX (t0, t);
    else
      t1 = MIN (t1, t);
    if (t0 > t1)
      return FALSE;
  }
  *bx = *ax + t1 * dx;
  *by = *ay + t1 * dy;
  *ax = *ax + t0 * dx;
  *ay = *ay + t0 * dy;
  return TRUE;
}

/* A segment between two pixel-index positions. */
static void
line (Canvas * c, gdouble ax, gdouble ay, gdouble bx, gdouble by, guint32 colour)
{
  if (!isfinite (ax) || !isfinite (ay) || !isfinite (bx) || !isfinite (by))
    return;
  const gdouble m = c->brush + 1.0;
  if (!clip_segment (&ax, &ay, &bx, &by, -m, -m, c->w - 1 + m, c->h - 1 + m))
    return;
  const gint steps = (gint) ceil (MAX (fabs (bx - ax), fabs (by - ay)));
  for (gint s = 0; s <= steps; s++) {
    const gdouble t = steps ? (gdouble) s / steps : 0.0;
    stamp (c, (gint) lround (ax + t * (bx - ax)), (gint) lround (ay + t * (by - ay)),
        colour);
  }
}

static void
ring (Canvas * c, gdouble x, gdouble y, gdouble r, guint32 colour)
{
  if (!isfinite (x) || !isfinite (y))
    return;
  const gint n = MAX (8, (gint) ceil (2.0 * G_PI * r * 1.5));
  for (gint k = 0; k < n; k++) {
    const gdouble a = 2.0 * G_PI * k / n;
    stamp (c, (gint) lround (x + r * cos (a)), (gint) lround (y + r * sin (a)), colour);
  }
}

static void
cross (Canvas * c, gdouble x, gdouble y, gdouble r, gboolean diagonal, guint32 colour)
{
  if (diagonal) {
    line (c, x - r, y - r, x + r, y + r, colour);
    line (c, x - r, y + r, x + r, y - r, colour);
  } else {
    line (c, x - r, y, x + r, y, colour);
    line (c, x, y - r, x, y + r, colour);
  }
}

/* A quadrilateral given by four pixel-corner positions (x0 y0 ... x3 y3). */
static void
quad (Canvas * c, const gdouble q[8], guint32 colour)
{
  for (int i = 0; i < 4; i++) {
    const int j = (i + 1) % 4;
    /* corners -> pixel-index */
    line (c, q[2 * i] - 0.5, q[2 * i + 1] - 0.5, q[2 * j] - 0.5, q[2 * j + 1] - 0.5,
        colour);
  }
}

GstVideoOverlayComposition *
gst_nmi_register_overlay_render (const GstNmiRegisterOverlayData * d)
{
  g_return_val_if_fail (d != NULL && d->width > 0 && d->height > 0, NULL);
  const gsize n = (gsize) d->width * d->height;
  Canvas c = { g_try_malloc0 (n * sizeof (guint32)), d->width, d->height, 0, 0 };
  if (!c.px)
    return NULL;
  /* 1-pixel strokes up to ~1000 pixels, then 3, 5, ...: visible on a 4K frame, not
   * smothering a small one */
  c.brush = MIN (d->width, d->height) / 1000;
  c.marker = 3 + 2 * c.brush;

  /* footprint: where the coarse prior placed the frame, seen through the fit (the
   * correction the refinement made), then the frame's border in the result's colour */
  const gdouble corners[8] = { 0, 0, d->width, 0, d->width, d->height, 0, d->height };
  gdouble inv[9];
  const gboolean invertible = d->has_transform &&
      gr_mat3_inverse (d->frame_to_control, inv);
  if (invertible && d->has_prior) {
    gdouble pf[9], q[8];
    gboolean ok = TRUE;
    gr_mat3_mul (inv, d->prior, pf);
    for (int i = 0; i < 4 && ok; i++)
      ok = gr_fit_apply (pf, corners[2 * i], corners[2 * i + 1], &q[2 * i], &q[2 * i + 1]);
    if (ok)
      quad (&c, q, GST_NMI_REGISTER_OVERLAY_PRIOR);
  }
  {
    /* the border just inside the frame */
    const gdouble e = c.brush + 0.5;
    const gdouble b[8] = { e, e, d->width - e, e, d->width - e, d->height - e, e,
      d->height - e
    };
    quad (&c, b, !d->has_transform ? GST_NMI_REGISTER_OVERLAY_FAILED :
        d->doubtful ? GST_NMI_REGISTER_OVERLAY_DOUBTFUL : GST_NMI_REGISTER_OVERLAY_GOOD);
  }

  /* keypoints, then the matches over them */
  for (gint k = 0; k < d->n_keypoints; k++)
    cross (&c, d->keypoints[k].x, d->keypoints[k].y, c.marker - 1, FALSE,
        GST_NMI_REGISTER_OVERLAY_KEYPOINT);
  gdouble hinv[9];
  const gboolean have_hinv = d->has_transform &&
      gr_mat3_inverse (d->frame_to_control_index, hinv);
  for (gint k = 0; k < d->n_matches; k++) {
    const gdouble x = d->match_frame[2 * k], y = d->match_frame[2 * k + 1];
    if (!d->inlier || !d->inlier[k]) {
      cross (&c, x, y, c.marker, TRUE, GST_NMI_REGISTER_OVERLAY_OUTLIER);
      continue;
    }
    gdouble u, v;
    /* the residual in frame pixels: the match pulled back through the fit */
    if (have_hinv && gr_fit_apply (hinv, d->match_control[2 * k],
            d->match_control[2 * k + 1], &u, &v))
      line (&c, x, y, x + GST_NMI_REGISTER_OVERLAY_RESIDUAL_SCALE * (u - x),
          y + GST_NMI_REGISTER_OVERLAY_RESIDUAL_SCALE * (v - y),
          GST_NMI_REGISTER_OVERLAY_RESIDUAL);
    ring (&c, x, y, c.marker, GST_NMI_REGISTER_OVERLAY_INLIER);
  }

  GstBuffer *buf = gst_buffer_new_wrapped_full (0, c.px, n * sizeof (guint32), 0,
      n * sizeof (guint32), c.px, g_free);
  gst_buffer_add_video_meta (buf, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_OVERLAY_COMPOSITION_FORMAT_RGB, d->width, d->height);
  GstVideoOverlayRectangle *rect = gst_video_overlay_rectangle_new_raw (buf, 0, 0,
      d->width, d->height, GST_VIDEO_OVERLAY_FORMAT_FLAG_NONE);
  gst_buffer_unref (buf);
  GstVideoOverlayComposition *comp = gst_video_overlay_composition_new (rect);
  gst_video_overlay_rectangle_unref (rect);
  return comp;
}
