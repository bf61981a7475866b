/* georegexport's raster outputs (gst/gstgeoregexport-private.h): each registered
 * frame resampled onto the control's grid as a GeoTIFF, the growing mosaic, and the
 * picture of the footprints over the control.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <string.h>

#include "gstgeoregexport-private.h"
#include "georeg-meta.h"
#include "nmiregister-meta.h"

GST_DEBUG_CATEGORY_EXTERN (gst_georeg_export_debug);
#define GST_CAT_DEFAULT gst_georeg_export_debug

/* 8-bit interleaved copy of a mapped video frame: gray (1 channel) for gray and YUV
 * (luma), RGB or RGBA (alpha = validity) for RGB formats.  NULL for other formats. */
static guint8 *
frame_to_8bit (const GstVideoFrame * vf, int *channels)
{
  const GstVideoFormatInfo *fi = vf->info.finfo;
  const int w = GST_VIDEO_FRAME_WIDTH (vf), h = GST_VIDEO_FRAME_HEIGHT (vf);
  const gboolean rgb = GST_VIDEO_FORMAT_INFO_IS_RGB (fi);
  const gboolean alpha = rgb && GST_VIDEO_FORMAT_INFO_HAS_ALPHA (fi);
  const int depth = GST_VIDEO_FORMAT_INFO_DEPTH (fi, 0);
  if ((depth != 8 && depth != 16) || GST_VIDEO_FORMAT_INFO_HAS_PALETTE (fi)
      || (depth == 16 && !GST_VIDEO_FORMAT_INFO_IS_GRAY (fi)))
    return NULL;
  const int nc = rgb ? (alpha ? 4 : 3) : 1;
  guint8 *out = g_try_malloc ((gsize) w * h * nc);
  if (!out)
    return NULL;
  for (int c = 0; c < nc; c++) {
    const guint8 *base = GST_VIDEO_FRAME_COMP_DATA (vf, c);
    const gint ps = GST_VIDEO_FRAME_COMP_PSTRIDE (vf, c);
    const gint rs = GST_VIDEO_FRAME_COMP_STRIDE (vf, c);
    for (int y = 0; y < h; y++) {
      const guint8 *row = base + (gsize) y * rs;
      guint8 *o = out + (gsize) y * w * nc + c;
      if (depth == 16) {
        /* GRAY16: the high byte (GRAY16_LE: the second one) */
        const int hi = GST_VIDEO_FORMAT_INFO_IS_LE (fi) ? 1 : 0;
        for (int x = 0; x < w; x++)
          o[(gsize) x * nc] = row[(gsize) x * ps + hi];
      } else {
        for (int x = 0; x < w; x++)
          o[(gsize) x * nc] = row[(gsize) x * ps];
      }
    }
  }
  *channels = nc;
  return out;
}

static gchar *
geotiff_path (GstGeoregExport * self, const gchar * source)
{
  gchar *name;
  if (source) {
    gchar *base = g_path_get_basename (source);
    gchar *dot = strrchr (base, '.');
    if (dot && dot != base)
      *dot = '\0';
    name = g_strdup_printf ("%s.tif", base);
    g_free (base);
  } else {
    name = g_strdup_printf ("frame_%06" G_GUINT64_FORMAT ".tif", self->frame);
  }
  gchar *path = g_build_filename (self->tiff_dir, name, NULL);
  g_free (name);
  return path;
}

gboolean
gst_georeg_export_write_mosaic (GstGeoregExport * self)
{
  char err[512];
  self->mosaic_stale = FALSE;
  if (gr_mosaic_write (self->mosaic, self->mosaic_path, self->georef, self->cog, err,
          sizeof err) != GR_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("Could not write '%s'.", self->mosaic_path),
        ("%s", err));
    return FALSE;
  }
  return TRUE;
}

gboolean
gst_georeg_export_write_frame (GstGeoregExport * self, GstBuffer * buf,
    const gchar * source)
{
  GstNmiRegisterMeta *rm = gst_buffer_get_nmi_register_meta (buf);
  if (!rm || !rm->has_transform)
    return TRUE;
  if (!self->have_vinfo) {
    GST_WARNING_OBJECT (self, "frame %" G_GUINT64_FORMAT ": not raw video, no GeoTIFF",
        self->frame);
    return TRUE;
  }
  GstVideoFrame vf;
  if (!gst_video_frame_map (&vf, &self->vinfo, buf, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map frame %" G_GUINT64_FORMAT ".",
            self->frame), (NULL));
    return FALSE;
  }
  int channels = 0;
  guint8 *pix = frame_to_8bit (&vf, &channels);
  const int w = GST_VIDEO_FRAME_WIDTH (&vf), h = GST_VIDEO_FRAME_HEIGHT (&vf);
  gst_video_frame_unmap (&vf);
  if (!pix) {
    GST_ELEMENT_WARNING (self, STREAM, FORMAT, ("No GeoTIFF for frame %" G_GUINT64_FORMAT
            ": format %s is not supported (8-bit gray, YUV or RGB, or GRAY16).",
            self->frame, gst_video_format_to_string (GST_VIDEO_INFO_FORMAT (&self->vinfo))),
        (NULL));
    return TRUE;
  }
  /* with a lens the transform takes undistorted pixels: the warp distorts back */
  GrCamera lens;
  const gboolean has_lens = gst_georeg_lens_from_meta (rm, &lens);
  GrFrame8 frame = { pix, w, h, channels, (size_t) w * channels, has_lens ? &lens : NULL };
  char err[512];
  gboolean ok = TRUE;
  if (self->tiff_dir) {
    gchar *path = geotiff_path (self, source);
    GrStatus st = gr_geotiff_write_frame (path, self->georef, &frame, rm->frame_to_control,
        self->cog, self->max_pixels, err, sizeof err);
    if (st == GR_ERR_INVALID) {
      /* a transform that places the frame nowhere sensible: documented, not fatal */
      GST_ELEMENT_WARNING (self, STREAM, FAILED, ("No GeoTIFF for frame %" G_GUINT64_FORMAT
              ": %s.", self->frame, err), (NULL));
    } else if (st != GR_OK) {
      GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("Could not write '%s'.", path), ("%s",
              err));
      ok = FALSE;
    } else {
      self->geotiffs++;
    }
    g_free (path);
  }
  if (ok && self->mosaic) {
    GrStatus st = gr_mosaic_add (self->mosaic, &frame, rm->frame_to_control, err, sizeof err);
    if (st == GR_OK) {
      self->mosaic_added++;
      if (self->mosaic_every && self->mosaic_added % self->mosaic_every == 0)
        ok = gst_georeg_export_write_mosaic (self);
      else
        self->mosaic_stale = TRUE;
    } else {
      GST_ELEMENT_WARNING (self, STREAM, FAILED, ("Frame %" G_GUINT64_FORMAT " left out of "
              "the mosaic: %s.", self->frame, err), (NULL));
    }
  }
  g_free (pix);
  return ok;
}

void
gst_georeg_export_remember_footprint (GstGeoregExport * self, GstBuffer * buf,
    const GrFootprint * f)
{
  GrPlotFootprint p;
  const GstNmiRegisterMeta *rm = gst_buffer_get_nmi_register_meta (buf);
  const GstNmiLocalizeMeta *lm = gst_buffer_get_nmi_localize_meta (buf);
  if (f->geometry == 2 && rm) {
    for (int i = 0; i < 4; i++) {
      p.x[i] = rm->footprint_control[2 * i];
      p.y[i] = rm->footprint_control[2 * i + 1];
    }
    p.kind = g_str_equal (f->quality, "registered") ? GR_PLOT_REGISTERED : GR_PLOT_FLAGGED;
  } else if (f->geometry == 1 && lm) {
    p.x[0] = lm->center_x;
    p.y[0] = lm->center_y;
    p.kind = GR_PLOT_POINT;
  } else {
    return;
  }
  g_array_append_val (self->plotted, p);
  self->picture_stale = TRUE;
}

gboolean
gst_georeg_export_write_picture (GstGeoregExport * self)
{
  if (!self->plotted || !self->picture_stale)
    return TRUE;
  char err[512];
  GrStatus st = gr_footprint_plot_png (self->picture, &self->picture_control.plane,
      (const GrPlotFootprint *) self->plotted->data, self->plotted->len, 1600, err,
      sizeof err);
  self->picture_stale = FALSE;
  if (st != GR_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("Could not write '%s'.", self->picture),
        ("%s", err));
    return FALSE;
  }
  return TRUE;
}
