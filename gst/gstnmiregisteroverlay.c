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
 * of GST_VIDEO_OVERLAY_COMPOSITION_FORMAT_RGB) and the brush lines are drawn with.
 * A canvas holds the frame's rows y0 .. y1 - 1 (a band, or the whole frame): every
 * primitive is drawn through all bands, each band keeping what falls in its rows, so
 * the bands together hold exactly what one canvas of the frame would. */
typedef struct {
  guint32 *px;         /* row y0 first */
  gint w, h;           /* the frame */
  gint y0, y1;         /* the rows this canvas holds */
  gint brush;          /* half-width of lines and markers' strokes, pixels */
  gint marker;         /* radius of keypoint markers, pixels */
} Canvas;

static void
stamp (Canvas * c, gint x, gint y, guint32 colour)
{
  const gint r = c->brush;
  for (gint j = MAX (y - r, c->y0); j <= MIN (y + r, c->y1 - 1); j++)
    for (gint i = MAX (x - r, 0); i <= MIN (x + r, c->w - 1); i++)
      c->px[(gsize) (j - c->y0) * c->w + i] = colour;
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
  /* the steps whose stamp can reach this canvas's rows (with a pixel to spare for
   * rounding); the positions are those of the whole segment, band or not */
  gint s0 = 0, s1 = steps;
  const gdouble lo = c->y0 - c->brush - 1.0, hi = c->y1 + c->brush;
  if (steps > 0 && by != ay) {
    gdouble ta = (lo - ay) / (by - ay) * steps, tb = (hi - ay) / (by - ay) * steps;
    if (ta > tb) {
      const gdouble t = ta;
      ta = tb;
      tb = t;
    }
    /* clamped before the cast: a nearly flat segment gives huge ta, tb */
    s0 = (gint) CLAMP (floor (ta), 0.0, steps + 1.0);
    s1 = (gint) CLAMP (ceil (tb), -1.0, (gdouble) steps);
  } else if (ay < lo || ay > hi) {
    return;
  }
  for (gint s = s0; s <= s1; s++) {
    const gdouble t = steps ? (gdouble) s / steps : 0.0;
    stamp (c, (gint) lround (ax + t * (bx - ax)), (gint) lround (ay + t * (by - ay)),
        colour);
  }
}

static void
ring (Canvas * c, gdouble x, gdouble y, gdouble r, guint32 colour)
{
  if (!isfinite (x) || !isfinite (y) || y + r + c->brush + 1.0 < c->y0 ||
      y - r - c->brush - 1.0 > c->y1)
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

/* Draws the overlay's rows y0 .. y1 - 1 into px (zeroed, w x (y1 - y0)). */
static void
render_rows (const GstNmiRegisterOverlayData * d, guint32 * px, gint y0, gint y1)
{
  Canvas c = { px, d->width, d->height, y0, y1, 0, 0 };
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

}

/* Blends canvas rows y0 .. y1 - 1 (w x (y1 - y0), row y0 first) into the frame's
 * same rows, through a view of the frame that starts at row y0 (y0 even). */
static gboolean
blend_rows (GstVideoFrame * frame, guint32 * rows, gint w, gint y0, gint y1)
{
  const GstVideoFormatInfo *finfo = frame->info.finfo;
  GstVideoFrame dst = *frame;
  dst.info.height = y1 - y0;
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES (frame); p++) {
    /* the plane's row for frame row y0 (chroma planes may be subsampled) */
    gint comps[GST_VIDEO_MAX_COMPONENTS];
    gst_video_format_info_component (finfo, p, comps);
    const gint py = GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT (finfo, comps[0], y0);
    dst.data[p] = (guint8 *) frame->data[p] + (gsize) py * frame->info.stride[p];
  }
  GstVideoFrame src = { 0 };
  gst_video_info_set_format (&src.info, GST_VIDEO_OVERLAY_COMPOSITION_FORMAT_RGB, w,
      y1 - y0);
  src.data[0] = rows;
  return gst_video_blend (&dst, &src, 0, 0, 1.0f);
}

/* Rows per band: even, so that 4:2:0 chroma rows (shared by a pair of luma rows)
 * never straddle two bands. */
#define BAND_ROWS 64

/* Renders the overlay into a new canvas of the frame (g_free; NULL when out of
 * memory) in bands of rows on several threads, and, given a frame, blends each band
 * into it (*blend_failed when gst_video_blend refused the format).
 *
 * gst_video_blend converts whole rows of the frame to AYUV/ARGB and back, so one
 * blend costs the frame's area whatever is drawn (tens of ms at 4K on one core).  It
 * works row by row, so each band is blended through a view of the frame that starts
 * at the band's first row, which gives the same bytes as one
 * gst_video_overlay_composition_blend of the whole canvas (tests/test_nmiregister.c
 * and tests/bench_overlay.c check it byte for byte). */
static guint32 *
render_bands (const GstNmiRegisterOverlayData * d, GstVideoFrame * frame,
    gboolean * blend_failed)
{
  const gint w = d->width, h = d->height;
  /* not zeroed here: each band clears its own rows, so the pages are first touched
   * by the threads that draw them */
  guint32 *px = g_try_malloc ((gsize) w * h * sizeof (guint32));
  if (!px)
    return NULL;
  const GstVideoFormatInfo *finfo = frame ? frame->info.finfo : NULL;
  /* a frame whose rows are not independent (tiled formats, interlaced) is blended in
   * one piece after the bands are drawn */
  const gboolean band_blend = frame && !GST_VIDEO_FORMAT_INFO_IS_TILED (finfo) &&
      GST_VIDEO_INFO_INTERLACE_MODE (&frame->info) == GST_VIDEO_INTERLACE_MODE_PROGRESSIVE;
  const gint bands = (h + BAND_ROWS - 1) / BAND_ROWS;
  gint failed = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(|:failed)
  for (gint b = 0; b < bands; b++) {
    const gint y0 = b * BAND_ROWS, y1 = MIN (h, y0 + BAND_ROWS);
    guint32 *band = px + (gsize) y0 * w;
    memset (band, 0, (gsize) w * (y1 - y0) * sizeof (guint32));
    render_rows (d, band, y0, y1);
    if (band_blend)
      failed |= !blend_rows (frame, band, w, y0, y1);
  }
  if (frame && !band_blend)
    failed |= !blend_rows (frame, px, w, 0, h);
  *blend_failed = failed != 0;
  return px;
}

GstVideoOverlayComposition *
gst_nmi_register_overlay_render (const GstNmiRegisterOverlayData * d)
{
  g_return_val_if_fail (d != NULL && d->width > 0 && d->height > 0, NULL);
  gboolean unused;
  guint32 *px = render_bands (d, NULL, &unused);
  if (!px)
    return NULL;
  const gsize bytes = (gsize) d->width * d->height * sizeof (guint32);
  GstBuffer *buf = gst_buffer_new_wrapped_full (0, px, bytes, 0, bytes, px, g_free);
  gst_buffer_add_video_meta (buf, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_OVERLAY_COMPOSITION_FORMAT_RGB, d->width, d->height);
  GstVideoOverlayRectangle *rect = gst_video_overlay_rectangle_new_raw (buf, 0, 0,
      d->width, d->height, GST_VIDEO_OVERLAY_FORMAT_FLAG_NONE);
  gst_buffer_unref (buf);
  GstVideoOverlayComposition *comp = gst_video_overlay_composition_new (rect);
  gst_video_overlay_rectangle_unref (rect);
  return comp;
}

GstNmiRegisterOverlayDrawResult
gst_nmi_register_overlay_draw (const GstNmiRegisterOverlayData * d,
    GstVideoFrame * frame)
{
  g_return_val_if_fail (d != NULL && frame != NULL && d->width > 0 && d->height > 0,
      GST_NMI_REGISTER_OVERLAY_DRAW_FORMAT);
  g_return_val_if_fail (d->width == GST_VIDEO_FRAME_WIDTH (frame) &&
      d->height == GST_VIDEO_FRAME_HEIGHT (frame), GST_NMI_REGISTER_OVERLAY_DRAW_FORMAT);
  gboolean failed;
  guint32 *px = render_bands (d, frame, &failed);
  if (!px)
    return GST_NMI_REGISTER_OVERLAY_DRAW_NO_MEMORY;
  g_free (px);
  return failed ? GST_NMI_REGISTER_OVERLAY_DRAW_FORMAT : GST_NMI_REGISTER_OVERLAY_DRAW_OK;
}
