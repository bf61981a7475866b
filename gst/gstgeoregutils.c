/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gstgeoregutils.h"

GType
gst_georeg_backend_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GR_BACKEND_AUTO, "CUDA when a usable device exists, else CPU", "auto"},
    {GR_BACKEND_CPU, "multi-threaded CPU", "cpu"},
    {GR_BACKEND_CUDA, "CUDA (error when no usable device)", "cuda"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstGeoregBackend", values));
  return type;
}

GType
gst_georeg_bins_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GEOREG_BINS_AUTO, "identity for 8-bit data, min-max for 16-bit", "auto"},
    {GST_GEOREG_BINS_IDENTITY, "0..255 (0..65535 for 16-bit data)", "identity"},
    {GST_GEOREG_BINS_MIN_MAX, "min..max of the valid pixels", "min-max"},
    {GST_GEOREG_BINS_FIXED, "bin-low..bin-high (pixel values), clamped", "fixed"},
    {GST_GEOREG_BINS_PERCENTILE,
        "bin-low..bin-high percentiles of the valid pixels", "percentile"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstGeoregBins", values));
  return type;
}

GrBinMode
gst_georeg_bins_resolve (GstGeoregBins bins, int bit_depth)
{
  if (bins == GST_GEOREG_BINS_AUTO)
    return bit_depth <= 8 ? GR_BINS_IDENTITY : GR_BINS_MINMAX;
  return (GrBinMode) bins;
}

gint
gst_georeg_video_format_depth (GstVideoFormat format)
{
  return format == GST_VIDEO_FORMAT_GRAY16_LE ? 16 : 8;
}

gboolean
gst_georeg_frame_to_plane (const GstVideoFrame * frame, gint nodata, GrPlaneF * out)
{
  const gint w = GST_VIDEO_FRAME_WIDTH (frame), h = GST_VIDEO_FRAME_HEIGHT (frame);
  const GstVideoFormat fmt = GST_VIDEO_FRAME_FORMAT (frame);
  const gboolean has_alpha = fmt == GST_VIDEO_FORMAT_RGBA || fmt == GST_VIDEO_FORMAT_BGRA;
  const gboolean want_mask = has_alpha || nodata >= 0;

  if (!out->data || out->width != w || out->height != h ||
      (out->mask != NULL) != want_mask) {
    gr_plane_clear (out);
    if (!gr_plane_alloc (out, w, h, want_mask))
      return FALSE;
  }

  const guint8 *base = GST_VIDEO_FRAME_PLANE_DATA (frame, 0);
  const gint stride = GST_VIDEO_FRAME_PLANE_STRIDE (frame, 0);
  /* byte offsets of R, G, B, A in one pixel */
  const gint ri = fmt == GST_VIDEO_FORMAT_BGRA ? 2 : 0, bi = 2 - ri;

  for (gint y = 0; y < h; y++) {
    const guint8 *row = base + (gsize) y * stride;
    float *dst = out->data + (gsize) y * out->stride;
    guint8 *m = out->mask ? out->mask + (gsize) y * w : NULL;
    for (gint x = 0; x < w; x++) {
      float v;
      gboolean valid = TRUE;
      switch (fmt) {
        case GST_VIDEO_FORMAT_GRAY16_LE:
          v = GST_READ_UINT16_LE (row + 2 * x);
          break;
        case GST_VIDEO_FORMAT_RGBA:
        case GST_VIDEO_FORMAT_BGRA:{
          const guint8 *p = row + 4 * x;
          v = 0.299f * p[ri] + 0.587f * p[1] + 0.114f * p[bi];
          valid = p[3] >= 128;
          break;
        }
        default:                 /* GRAY8, and the Y plane of I420 / NV12 */
          v = row[x];
          break;
      }
      dst[x] = v;
      if (m) {
        if (nodata >= 0 && (gint) floorf (v + 0.5f) == nodata)
          valid = FALSE;
        m[x] = valid;
      }
    }
  }
  return TRUE;
}

gboolean
gst_georeg_plane_and_mask (GrPlaneF * plane, const GrPlaneF * mask)
{
  const gsize n = (gsize) plane->width * plane->height;
  if (!plane->mask) {
    plane->mask = malloc (n);   /* freed by gr_plane_clear with free() */
    if (!plane->mask)
      return FALSE;
    memset (plane->mask, 1, n);
  }
  for (gint y = 0; y < plane->height; y++)
    for (gint x = 0; x < plane->width; x++) {
      const gsize i = (gsize) y * plane->width + x;
      const gboolean ok = (!mask->mask || mask->mask[i]) &&
          mask->data[(gsize) y * mask->stride + x] != 0.0f;
      if (!ok)
        plane->mask[i] = 0;
    }
  return TRUE;
}

gboolean
gst_georeg_caps_refused_before (GstCaps * refused, GstCaps * caps)
{
  return refused && caps && gst_caps_is_equal (refused, caps);
}

void
gst_georeg_caps_refused (GstElement * element, GstCaps ** refused, GstCaps * caps)
{
  /* remembered only when the ERROR reached a bus: an element without one yet (a
   * harness before its bus is set) reports again at the next attempt */
  GstBus *bus = gst_element_get_bus (element);
  if (bus) {
    gst_caps_replace (refused, caps);
    gst_object_unref (bus);
  }
}
