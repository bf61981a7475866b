/* nmilocalize element: caps, properties, meta, messages, and bad input (GstHarness).
 * Control images are synthesized (pipelines/synth.h) into a temporary folder.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "georeg-meta.h"
#if GR_HAVE_GDAL
#include "geo.h"
#endif
#include "raster.h"
#include "synth.h"

#define CW 320
#define CH 240
#define FW 64
#define FH 48

static gchar *tmpdir;
static gchar *control_path;     /* 3-band RGB PNG + world file */
static GrSynthImage control;    /* its pixels, to cut frames from */

static void
make_control (void)
{
  GrSynthControlParams p;
  char err[256];
  gr_synth_control_params_init (&p);
  p.width = CW;
  p.height = CH;
  p.depth = 8;
  p.seed = 7;
  p.with_geo = TRUE;
  /* outside any test case: plain assertions */
  tmpdir = g_dir_make_tmp ("georeg-nmilocalize-XXXXXX", NULL);
  control_path = g_build_filename (tmpdir, "control.png", NULL);
  char *wf = gr_synth_world_file_path (control_path);
  if (!tmpdir || gr_synth_control_generate (&p, &control, err, sizeof err) != GR_OK ||
      gr_synth_image_write_png (control_path, &control, err, sizeof err) != GR_OK ||
      gr_synth_world_file_write (wf, control.geo, err, sizeof err) != GR_OK)
    g_error ("cannot make the test control image: %s", err);
  free (wf);
}

/* The luminance the element computes for the control (band 0), read back from the
 * file the element reads. */
static GrPlaneF
control_luma (void)
{
  GrRaster r = { 0 };
  char err[256];
  fail_unless (gr_raster_load (control_path, 0, &r, err, sizeof err) == GR_OK, "%s", err);
  GrPlaneF l = r.plane;
  r.plane.data = NULL;
  r.plane.mask = NULL;
  gr_raster_clear (&r);
  return l;
}

/* A GRAY8 frame cut at integer (x, y), through tone curve 255 - v (another
 * "modality"). */
static GstBuffer *
gray8_frame (int x, int y, gboolean invert)
{
  GrPlaneF l = control_luma ();
  GstBuffer *buf = gst_buffer_new_allocate (NULL, FW * FH, NULL);
  GstMapInfo map;
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (int v = 0; v < FH; v++)
    for (int u = 0; u < FW; u++) {
      float val = floorf (l.data[(y + v) * CW + x + u] + 0.5f);
      map.data[v * FW + u] = (guint8) (invert ? 255 - val : val);
    }
  gst_buffer_unmap (buf, &map);
  gr_synth_plane_free (&l);
  return buf;
}

static GstHarness *
new_harness (const gchar * extra, const gchar * caps)
{
  gchar *desc = g_strdup_printf ("nmilocalize control-location=\"%s\" backend=cpu %s",
      control_path, extra ? extra : "");
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  if (caps)
    gst_harness_set_src_caps_str (h, caps);
  return h;
}

static GstMessage *
pop_element_message (GstBus * bus)
{
  GstMessage *msg;
  while ((msg = gst_bus_pop (bus))) {
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT &&
        gst_message_has_name (msg, "nmilocalize"))
      return msg;
    gst_message_unref (msg);
  }
  return NULL;
}

#define GRAY8_CAPS "video/x-raw,format=GRAY8,width=64,height=48,framerate=10/1"

GST_START_TEST (test_properties)
{
  GstElement *e = gst_element_factory_make ("nmilocalize", NULL);
  gint backend, bins, dev;
  gdouble scale, overlap, radius;
  guint band;
  gchar *loc;
  fail_unless (e != NULL);
  g_object_get (e, "backend", &backend, "bins", &bins, "cuda-device-id", &dev,
      "frame-scale", &scale, "min-overlap", &overlap, "search-radius", &radius,
      "band", &band, "control-location", &loc, NULL);
  fail_unless_equals_int (backend, 0);
  fail_unless_equals_int (bins, -1);
  fail_unless_equals_int (dev, -1);
  fail_unless_equals_float (scale, 1.0);
  fail_unless_equals_float (overlap, 0.5);
  fail_unless_equals_float (radius, 0.0);
  fail_unless_equals_int (band, 0);
  fail_unless (loc == NULL);
  gst_util_set_object_arg (G_OBJECT (e), "backend", "cpu");
  gst_util_set_object_arg (G_OBJECT (e), "bins", "percentile");
  g_object_set (e, "frame-scale", 0.05, "score-map-location", "/tmp/m-%05d.png", NULL);
  g_object_get (e, "backend", &backend, "bins", &bins, "frame-scale", &scale,
      "score-map-location", &loc, NULL);
  fail_unless_equals_int (backend, 1);
  fail_unless_equals_int (bins, 3);
  fail_unless_equals_float (scale, 0.05);
  fail_unless_equals_string (loc, "/tmp/m-%05d.png");
  g_free (loc);
  /* a pattern with a conversion other than one %d is refused */
  ASSERT_WARNING (g_object_set (e, "score-map-location", "/tmp/%s-%d.png", NULL));
  g_object_get (e, "score-map-location", &loc, NULL);
  fail_unless_equals_string (loc, "/tmp/m-%05d.png");
  g_free (loc);
  gst_object_unref (e);
}
GST_END_TEST;

GST_START_TEST (test_gray8_localizes_with_meta_and_message)
{
  GstHarness *h = new_harness (NULL, GRAY8_CAPS);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  const int tx = 201, ty = 87;

  GstBuffer *in = gray8_frame (tx, ty, TRUE);
  GST_BUFFER_PTS (in) = 5 * GST_SECOND;
  GstBuffer *out = gst_harness_push_and_pull (h, in);
  fail_unless (out != NULL);
  GstNmiLocalizeMeta *m = gst_buffer_get_nmi_localize_meta (out);
  fail_unless (m != NULL);
  fail_unless_equals_int (m->flags & (GST_NMI_LOCALIZE_FLAG_NO_OVERLAP |
          GST_NMI_LOCALIZE_FLAG_NO_VALID_PIXELS | GST_NMI_LOCALIZE_FLAG_AMBIGUOUS), 0);
  fail_unless (fabs (m->offset_x - tx) < 0.5 && fabs (m->offset_y - ty) < 0.5,
      "offset (%g, %g), want (%d, %d)", m->offset_x, m->offset_y, tx, ty);
  /* search=auto without frame-scale / control-scale: the translation result stood
   * because it registered from its place (32 templates, all inliers) */
  fail_unless (m->flags & GST_NMI_LOCALIZE_FLAG_VERIFIED, "flags 0x%x", m->flags);
  fail_if (m->flags & GST_NMI_LOCALIZE_FLAG_HEADING_SEARCHED, "flags 0x%x", m->flags);
  fail_unless_equals_float (m->control_x, m->offset_x);
  fail_unless (fabs (m->center_x - (m->control_x + FW / 2.0)) < 1e-9);
  fail_unless (m->score > 1.5 && m->score <= 2.0, "score %g", m->score);
  fail_unless (m->peak_ratio > 1.5, "peak ratio %g", m->peak_ratio);
  fail_unless_equals_uint64 (m->valid_pixels, FW * FH);
  fail_unless (m->has_map);
  double mx, my;
  gr_geo_apply (control.geo, m->center_x, m->center_y, &mx, &my);
  fail_unless (fabs (m->map_x - mx) < 1e-6 && fabs (m->map_y - my) < 1e-6);
  /* the truth in map units: frame centre corner position (tx + 32, ty + 24) */
  gr_geo_apply (control.geo, tx + FW / 2.0, ty + FH / 2.0, &mx, &my);
  fail_unless (fabs (m->map_x - mx) < 0.5 * fabs (control.geo[1]) &&
      fabs (m->map_y - my) < 0.5 * fabs (control.geo[5]), "map (%f, %f) vs (%f, %f)",
      m->map_x, m->map_y, mx, my);

  /* the pixels pass through untouched */
  GstBuffer *ref = gray8_frame (tx, ty, TRUE);
  GstMapInfo a;
  gst_buffer_map (ref, &a, GST_MAP_READ);
  fail_unless (gst_buffer_memcmp (out, 0, a.data, a.size) == 0);
  gst_buffer_unmap (ref, &a);
  gst_buffer_unref (ref);

  GstMessage *msg = pop_element_message (bus);
  fail_unless (msg != NULL, "no nmilocalize message");
  const GstStructure *s = gst_message_get_structure (msg);
  gdouble ox, score, mapx;
  guint64 frame, ts, positions;
  fail_unless (gst_structure_get (s, "offset-x", G_TYPE_DOUBLE, &ox, "score",
          G_TYPE_DOUBLE, &score, "frame", G_TYPE_UINT64, &frame, "timestamp",
          G_TYPE_UINT64, &ts, "positions", G_TYPE_UINT64, &positions, "map-x",
          G_TYPE_DOUBLE, &mapx, NULL));
  fail_unless_equals_float (ox, m->offset_x);
  fail_unless_equals_float (score, m->score);
  fail_unless_equals_float (mapx, m->map_x);
  fail_unless_equals_uint64 (frame, 0);
  fail_unless_equals_uint64 (ts, 5 * GST_SECOND);
  fail_unless_equals_uint64 (positions, (CW - FW + 1) * (CH - FH + 1));
  fail_unless_equals_string (gst_structure_get_string (s, "backend"), "cpu");
  gst_message_unref (msg);
  gst_buffer_unref (out);

  /* the meta survives a buffer copy */
  out = gst_harness_push_and_pull (h, gray8_frame (10, 150, FALSE));
  GstBuffer *copy = gst_buffer_copy (out);
  m = gst_buffer_get_nmi_localize_meta (copy);
  fail_unless (m && fabs (m->offset_x - 10) < 0.5 && fabs (m->offset_y - 150) < 0.5,
      "second frame (%g, %g)", m ? m->offset_x : NAN, m ? m->offset_y : NAN);
  gst_buffer_unref (copy);
  gst_buffer_unref (out);

  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_scales_and_search_region)
{
  /* frame and control both at half resolution: a 32x24 search over 160x120, within a
   * radius of 12 control pixels around the truth */
  const int tx = 120, ty = 60;
  GstHarness *h = new_harness ("frame-scale=0.5 control-scale=0.5 search-x=156 "
      "search-y=84 search-radius=12", GRAY8_CAPS);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  GstBuffer *out = gst_harness_push_and_pull (h, gray8_frame (tx, ty, FALSE));
  GstNmiLocalizeMeta *m = gst_buffer_get_nmi_localize_meta (out);
  fail_unless (m != NULL);
  fail_unless (fabs (m->control_x - tx) <= 1.0 && fabs (m->control_y - ty) <= 1.0,
      "control (%g, %g), want (%d, %d)", m->control_x, m->control_y, tx, ty);
  fail_unless (fabs (m->offset_x - tx / 2.0) <= 0.5, "offset %g", m->offset_x);
  GstMessage *msg = pop_element_message (bus);
  guint64 positions;
  gst_structure_get_uint64 (gst_message_get_structure (msg), "positions", &positions);
  fail_unless_equals_uint64 (positions, 13 * 13);
  gst_message_unref (msg);
  gst_buffer_unref (out);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* RGBA with alpha as the mask: a transparent left third, and a fully transparent
 * frame, which gets the documented flag and no position. */
GST_START_TEST (test_rgba_alpha_mask)
{
  GstHarness *h = new_harness (NULL,
      "video/x-raw,format=RGBA,width=64,height=48,framerate=10/1");
  const int tx = 33, ty = 170;
  GstBuffer *buf = gst_buffer_new_allocate (NULL, FW * FH * 4, NULL);
  GstMapInfo map;
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (int v = 0; v < FH; v++)
    for (int u = 0; u < FW; u++) {
      guint8 *p = map.data + 4 * (v * FW + u);
      for (int c = 0; c < 3; c++)
        p[c] = (guint8) control.band[c][(ty + v) * CW + tx + u];
      p[3] = u < FW / 3 ? 0 : 255;
      if (u < FW / 3)
        p[0] = p[1] = p[2] = 17;     /* garbage under the mask must not matter */
    }
  gst_buffer_unmap (buf, &map);
  GstBuffer *out = gst_harness_push_and_pull (h, gst_buffer_copy (buf));
  GstNmiLocalizeMeta *m = gst_buffer_get_nmi_localize_meta (out);
  fail_unless (fabs (m->offset_x - tx) < 0.5 && fabs (m->offset_y - ty) < 0.5,
      "offset (%g, %g)", m->offset_x, m->offset_y);
  /* two thirds of a 64 x 48 frame give too few templates to judge the place by
   * registration: the translation result stands, unverified, not swept */
  fail_if (m->flags & (GST_NMI_LOCALIZE_FLAG_VERIFIED |
          GST_NMI_LOCALIZE_FLAG_HEADING_SEARCHED), "flags 0x%x", m->flags);
  fail_unless_equals_uint64 (m->valid_pixels, (FW - FW / 3) * FH);
  gst_buffer_unref (out);

  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (int i = 0; i < FW * FH; i++)
    map.data[4 * i + 3] = 0;
  gst_buffer_unmap (buf, &map);
  out = gst_harness_push_and_pull (h, buf);
  m = gst_buffer_get_nmi_localize_meta (out);
  fail_unless (m->flags & GST_NMI_LOCALIZE_FLAG_NO_VALID_PIXELS);
  fail_unless (isnan (m->offset_x) && isnan (m->score));
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_gray16_and_i420)
{
  const int tx = 150, ty = 20;
  GrPlaneF l = control_luma ();
  /* GRAY16: a gamma curve over 16 bits, bins by min-max (the auto choice) */
  GstHarness *h = new_harness (NULL,
      "video/x-raw,format=GRAY16_LE,width=64,height=48,framerate=10/1");
  GstBuffer *buf = gst_buffer_new_allocate (NULL, FW * FH * 2, NULL);
  GstMapInfo map;
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (int v = 0; v < FH; v++)
    for (int u = 0; u < FW; u++) {
      double val = pow (l.data[(ty + v) * CW + tx + u] / 255.0, 0.6) * 40000.0 + 3000.0;
      GST_WRITE_UINT16_LE (map.data + 2 * (v * FW + u), (guint16) val);
    }
  gst_buffer_unmap (buf, &map);
  GstBuffer *out = gst_harness_push_and_pull (h, buf);
  GstNmiLocalizeMeta *m = gst_buffer_get_nmi_localize_meta (out);
  fail_unless (fabs (m->offset_x - tx) < 0.5 && fabs (m->offset_y - ty) < 0.5,
      "gray16 offset (%g, %g)", m->offset_x, m->offset_y);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  /* I420: only the luma plane is used */
  h = new_harness (NULL, "video/x-raw,format=I420,width=64,height=48,framerate=10/1");
  GstVideoInfo info;
  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_I420, FW, FH);
  buf = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  memset (map.data, 128, map.size);
  for (int v = 0; v < FH; v++)
    for (int u = 0; u < FW; u++)
      map.data[GST_VIDEO_INFO_PLANE_OFFSET (&info, 0) +
          v * GST_VIDEO_INFO_PLANE_STRIDE (&info, 0) + u] =
          (guint8) floorf (l.data[(ty + v) * CW + tx + u] + 0.5f);
  gst_buffer_unmap (buf, &map);
  out = gst_harness_push_and_pull (h, buf);
  m = gst_buffer_get_nmi_localize_meta (out);
  fail_unless (fabs (m->offset_x - tx) < 0.5 && fabs (m->offset_y - ty) < 0.5,
      "i420 offset (%g, %g)", m->offset_x, m->offset_y);
  fail_unless (m->score > 1.9, "identical luma gives a near-perfect score: %g", m->score);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  gr_synth_plane_free (&l);
}
GST_END_TEST;

GST_START_TEST (test_score_map_file)
{
  gchar *pattern = g_build_filename (tmpdir, "map-%03d.png", NULL);
  gchar *extra = g_strdup_printf ("score-map-location=\"%s\"", pattern);
  GstHarness *h = new_harness (extra, GRAY8_CAPS);
  gst_buffer_unref (gst_harness_push_and_pull (h, gray8_frame (5, 5, FALSE)));
  gst_buffer_unref (gst_harness_push_and_pull (h, gray8_frame (9, 9, FALSE)));
  gst_harness_teardown (h);
  gchar *second = g_build_filename (tmpdir, "map-001.png", NULL);
  GrRaster r = { 0 };
  char err[256];
  fail_unless (gr_raster_load (second, 1, &r, err, sizeof err) == GR_OK, "%s", err);
  fail_unless_equals_int (r.plane.width, CW - FW + 1);
  fail_unless_equals_int (r.plane.height, CH - FH + 1);
  /* the brightest pixel is the best translation */
  int best = 0;
  for (int i = 1; i < r.plane.width * r.plane.height; i++)
    if (r.plane.data[i] > r.plane.data[best])
      best = i;
  fail_unless_equals_int (best, 9 * r.plane.width + 9);
  fail_unless_equals_float (r.plane.data[best], 255.0);
  gr_raster_clear (&r);
  g_free (second);
  g_free (extra);
  g_free (pattern);
}
GST_END_TEST;

/* Brings a lone element to PAUSED and returns the error it posted (or NULL). */
static GError *
start_error (GstElement * e)
{
  GstBus *bus = gst_bus_new ();
  GError *err = NULL;
  gst_element_set_bus (e, bus);
  GstStateChangeReturn ret = gst_element_set_state (e, GST_STATE_PAUSED);
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  if (msg) {
    gst_message_parse_error (msg, &err, NULL);
    gst_message_unref (msg);
    fail_unless_equals_int (ret, GST_STATE_CHANGE_FAILURE);
  }
  gst_element_set_state (e, GST_STATE_NULL);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  return err;
}

GST_START_TEST (test_bad_control)
{
  GstElement *e = gst_element_factory_make ("nmilocalize", NULL);
  GError *err = start_error (e);
  fail_unless (err && g_error_matches (err, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND));
  fail_unless (strstr (err->message, "control-location") != NULL, "%s", err->message);
  g_clear_error (&err);

  g_object_set (e, "control-location", "/nonexistent/ctl.tif", NULL);
  err = start_error (e);
  fail_unless (err && g_error_matches (err, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ),
      "%s", err ? err->message : "no error");
  fail_unless (strstr (err->message, "/nonexistent/ctl.tif") != NULL, "%s", err->message);
  g_clear_error (&err);

  /* garbage with a .png name */
  gchar *corrupt = g_build_filename (tmpdir, "corrupt.png", NULL);
  g_file_set_contents (corrupt, "\x89PNG\r\n\x1a\nthis is not a png", -1, NULL);
  g_object_set (e, "control-location", corrupt, NULL);
  err = start_error (e);
  fail_unless (err && err->domain == GST_RESOURCE_ERROR, "corrupt control");
  fail_unless (strstr (err->message, corrupt) != NULL, "%s", err->message);
  g_clear_error (&err);
  g_free (corrupt);

  /* a control whose every pixel is transparent */
  gchar *masked = g_build_filename (tmpdir, "masked.png", NULL);
  guint8 *zeros = g_malloc0 (CW * CH);
  char e2[256];
  const float *planes[1] = { control.band[0] };
  fail_unless (gr_synth_png_write (masked, planes, 1, zeros, CW, CH, 255, 8, e2,
          sizeof e2) == GR_OK, "%s", e2);
  g_object_set (e, "control-location", masked, NULL);
  err = start_error (e);
  fail_unless (err && g_error_matches (err, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_READ));
  fail_unless (strstr (err->message, "no valid pixel") != NULL, "%s", err->message);
  g_clear_error (&err);
  g_free (zeros);
  g_free (masked);

  /* control-nodata covering every pixel of a constant control */
  gchar *flat = g_build_filename (tmpdir, "flat.png", NULL);
  guint8 *twohundred = g_malloc (CW * CH);
  memset (twohundred, 200, CW * CH);
  fail_unless (gr_png_write_gray8 (flat, twohundred, CW, CH, CW, e2, sizeof e2) == GR_OK);
  g_object_set (e, "control-location", flat, "control-nodata", 200, NULL);
  err = start_error (e);
  fail_unless (err && g_error_matches (err, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_READ));
  g_clear_error (&err);
  g_object_set (e, "control-nodata", -1, NULL);
  g_free (twohundred);
  g_free (flat);

  /* a band the control does not have */
  g_object_set (e, "control-location", control_path, "band", 9, NULL);
  err = start_error (e);
  fail_unless (err && err->domain == GST_RESOURCE_ERROR, "band 9 of 3");
  g_clear_error (&err);

  /* backend=cuda where no GPU is usable */
  if (gr_cuda_device_count () == 0) {
    g_object_set (e, "band", 0, NULL);
    gst_util_set_object_arg (G_OBJECT (e), "backend", "cuda");
    err = start_error (e);
    fail_unless (err && g_error_matches (err, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS));
    GST_INFO ("backend=cuda without a GPU: %s", err->message);
    g_clear_error (&err);
  }
  gst_object_unref (e);
}
GST_END_TEST;

GST_START_TEST (test_frame_larger_than_control)
{
  GstHarness *h = new_harness ("control-scale=0.1", NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  /* 64x48 frame over a 32x24 control: refused at negotiation with a clear error,
   * posted once, when the caps arrive (the retries at each buffer are quiet) */
  gst_harness_set_src_caps_str (h, GRAY8_CAPS);
  GstFlowReturn ret = gst_harness_push (h, gray8_frame (0, 0, FALSE));
  fail_unless_equals_int (ret, GST_FLOW_NOT_NEGOTIATED);
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  GError *err = NULL;
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (g_error_matches (err, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT));
  fail_unless (strstr (err->message, "larger than the control") != NULL, "%s", err->message);
  g_error_free (err);
  gst_message_unref (msg);
  /* one ERROR for the one fault, however often negotiation was retried */
  fail_unless_equals_int (gst_harness_push (h, gray8_frame (0, 0, FALSE)),
      GST_FLOW_NOT_NEGOTIATED);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg == NULL, "the refusal was posted again");
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* The usual video case: a frame with more pixels than the control (finer ground
 * resolution, any heading).  Without frame-scale or control-scale, search=auto takes
 * it (no translation search: every frame is swept) instead of refusing the caps. */
GST_START_TEST (test_frame_finer_than_control_swept)
{
  enum { BW = 400, BH = 300 };
  GstHarness *h = new_harness (NULL, "video/x-raw,format=GRAY8,width=400,height=300,"
      "framerate=10/1");
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  /* frame pixel (u, v) -> control (index coordinates): 0.35 control px a frame px,
   * turned by 30 degrees, centred on control point (160, 118) */
  const double sc = 0.35, a = 30.0 * G_PI / 180.0, cx = 160.0, cy = 118.0;
  const double c = cos (a) * sc, sn = sin (a) * sc;
  const double hm[9] = { c, -sn, cx - c * 0.5 * (BW - 1) + sn * 0.5 * (BH - 1),
    sn, c, cy - sn * 0.5 * (BW - 1) - c * 0.5 * (BH - 1), 0, 0, 1
  };
  GrPlaneF l = control_luma (), cut;
  fail_unless (gr_synth_cut (&l, hm, BW, BH, 1, &cut) == GR_OK);
  gr_synth_plane_free (&l);
  GstBuffer *in = gst_buffer_new_allocate (NULL, BW * BH, NULL);
  GstMapInfo map;
  gst_buffer_map (in, &map, GST_MAP_WRITE);
  for (int i = 0; i < BW * BH; i++)
    map.data[i] = (guint8) CLAMP (floorf (cut.data[i] + 0.5f), 0, 255);
  gst_buffer_unmap (in, &map);
  gr_synth_plane_free (&cut);
  GstBuffer *out = gst_harness_push_and_pull (h, in);
  fail_unless (out != NULL);
  GstNmiLocalizeMeta *m = gst_buffer_get_nmi_localize_meta (out);
  fail_unless (m != NULL);
  fail_unless (m->flags & GST_NMI_LOCALIZE_FLAG_HEADING_SEARCHED, "flags 0x%x", m->flags);
  fail_unless (m->has_prior_transform);
  /* the frame's centre (pixel-corner coordinates) where it belongs, within 2 px */
  fail_unless (hypot (m->center_x - (cx + 0.5), m->center_y - (cy + 0.5)) < 2.0,
      "centre (%.2f, %.2f), want (%.2f, %.2f), flags 0x%x", m->center_x, m->center_y,
      cx + 0.5, cy + 0.5, m->flags);
  double dh = fmod (fabs (m->heading_deg - 30.0), 360.0);
  dh = dh > 180.0 ? 360.0 - dh : dh;
  fail_unless (dh < 2.0, "heading %.2f", m->heading_deg);
  fail_unless (fabs (m->scale / sc - 1.0) < 0.03, "scale %.4f", m->scale);
  GstMessage *msg = pop_element_message (bus);
  fail_unless (msg != NULL);
  fail_unless_equals_string (gst_structure_get_string (gst_message_get_structure (msg),
          "search"), "sweep");
  gst_message_unref (msg);
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR) == NULL, "an error was posted");
  gst_buffer_unref (out);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_unsupported_caps)
{
  GstElement *e = gst_element_factory_make ("nmilocalize", NULL);
  GstPad *sink = gst_element_get_static_pad (e, "sink");
  GstCaps *rgb = gst_caps_from_string ("video/x-raw,format=RGB,width=64,height=48");
  GstCaps *gray = gst_caps_from_string ("video/x-raw,format=GRAY8,width=64,height=48");
  fail_if (gst_pad_query_accept_caps (sink, rgb));
  fail_unless (gst_pad_query_accept_caps (sink, gray));
  gst_caps_unref (rgb);
  gst_caps_unref (gray);
  gst_object_unref (sink);
  gst_object_unref (e);
}
GST_END_TEST;

/* nodata and mask-location mask frame pixels; with too few jointly valid pixels
 * for min-overlap nowhere, the result is flagged, not invented. */
GST_START_TEST (test_nodata_and_mask_file)
{
  const int tx = 77, ty = 111;
  /* nodata=0: pixels set to 0 in the frame are ignored */
  GstHarness *h = new_harness ("nodata=0", GRAY8_CAPS);
  GstBuffer *buf = gray8_frame (tx, ty, FALSE);
  GstMapInfo map;
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (int v = 0; v < FH; v++)
    for (int u = 0; u < FW; u++)
      if (v < FH / 2 || map.data[v * FW + u] == 0)
        map.data[v * FW + u] = 0;
  gst_buffer_unmap (buf, &map);
  GstBuffer *out = gst_harness_push_and_pull (h, buf);
  GstNmiLocalizeMeta *m = gst_buffer_get_nmi_localize_meta (out);
  fail_unless (fabs (m->offset_x - tx) < 0.5 && fabs (m->offset_y - ty) < 0.5,
      "nodata offset (%g, %g)", m->offset_x, m->offset_y);
  fail_unless (m->valid_pixels <= FW * FH / 2 && m->valid_pixels > FW * FH / 3,
      "valid %" G_GUINT64_FORMAT, m->valid_pixels);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  /* a mask file of the frame's size: only the right half is valid */
  gchar *mask_path = g_build_filename (tmpdir, "mask.png", NULL);
  guint8 mask[FW * FH];
  for (int i = 0; i < FW * FH; i++)
    mask[i] = (i % FW) >= FW / 2 ? 255 : 0;
  char err[256];
  fail_unless (gr_png_write_gray8 (mask_path, mask, FW, FH, FW, err, sizeof err) == GR_OK);
  gchar *extra = g_strdup_printf ("mask-location=\"%s\"", mask_path);
  h = new_harness (extra, GRAY8_CAPS);
  buf = gray8_frame (tx, ty, FALSE);
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (int v = 0; v < FH; v++)
    memset (map.data + v * FW, 99, FW / 2);    /* garbage under the mask */
  gst_buffer_unmap (buf, &map);
  out = gst_harness_push_and_pull (h, buf);
  m = gst_buffer_get_nmi_localize_meta (out);
  fail_unless (fabs (m->offset_x - tx) < 0.5 && fabs (m->offset_y - ty) < 0.5,
      "mask file offset (%g, %g)", m->offset_x, m->offset_y);
  fail_unless_equals_uint64 (m->valid_pixels, FW * FH / 2);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  /* a mask file of another size is a clear error at negotiation */
  fail_unless (gr_png_write_gray8 (mask_path, mask, FW / 2, FH, FW, err, sizeof err) == GR_OK);
  h = new_harness (extra, GRAY8_CAPS);
  fail_unless_equals_int (gst_harness_push (h, gray8_frame (0, 0, FALSE)),
      GST_FLOW_NOT_NEGOTIATED);
  gst_harness_teardown (h);
  g_free (extra);
  g_free (mask_path);
}
GST_END_TEST;

/* A search region entirely outside the control: the documented NO_OVERLAP flag. */
GST_START_TEST (test_no_overlap_flag)
{
  GstHarness *h = new_harness ("search-x=5000 search-y=5000 search-radius=10 "
      "min-overlap=1.0", GRAY8_CAPS);
  GstBuffer *out = gst_harness_push_and_pull (h, gray8_frame (0, 0, FALSE));
  GstNmiLocalizeMeta *m = gst_buffer_get_nmi_localize_meta (out);
  fail_unless (m->flags & GST_NMI_LOCALIZE_FLAG_NO_OVERLAP);
  fail_unless (isnan (m->offset_x));
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}
GST_END_TEST;

#if GR_HAVE_GDAL
/* search-units=map and lonlat: the same region as test_scales_and_search_region given
 * in UTM 17N metres (the control's world file, the CRS by the crs property) and in
 * WGS84 longitude/latitude, radius 1.2 m = 12 control pixels at 0.1 m; and map units on
 * a control without a CRS are refused at start. */
GST_START_TEST (test_search_units)
{
  const int tx = 120, ty = 60;
  double mx = control.geo[0] + 156 * control.geo[1];
  double my = control.geo[3] + 84 * control.geo[5];
  GrGeoRef *g = NULL;
  char e[256];
  fail_unless (gr_georef_new (control.geo, "EPSG:32617", &g, e, sizeof e) == GR_OK, "%s",
      e);
  double lon = mx, lat = my;
  fail_unless (gr_georef_map_to_lonlat (g, &lon, &lat, 1));
  gr_georef_free (g);
  for (int lonlat = 0; lonlat < 2; lonlat++) {
    gchar *extra = g_strdup_printf ("frame-scale=0.5 control-scale=0.5 crs=EPSG:32617 "
        "search-units=%s search-x=%.9f search-y=%.9f search-radius=1.2",
        lonlat ? "lonlat" : "map", lonlat ? lon : mx, lonlat ? lat : my);
    GstHarness *h = new_harness (extra, GRAY8_CAPS);
    g_free (extra);
    GstBus *bus = gst_bus_new ();
    gst_element_set_bus (h->element, bus);
    GstBuffer *out = gst_harness_push_and_pull (h, gray8_frame (tx, ty, FALSE));
    GstNmiLocalizeMeta *m = gst_buffer_get_nmi_localize_meta (out);
    fail_unless (m != NULL);
    fail_unless (fabs (m->control_x - tx) <= 1.0 && fabs (m->control_y - ty) <= 1.0,
        "%s: control (%g, %g), want (%d, %d)", lonlat ? "lonlat" : "map", m->control_x,
        m->control_y, tx, ty);
    GstMessage *msg = pop_element_message (bus);
    const GstStructure *st = gst_message_get_structure (msg);
    guint64 positions;
    gst_structure_get_uint64 (st, "positions", &positions);
    /* the same 13 x 13 translations as in control pixels */
    fail_unless_equals_uint64 (positions, 13 * 13);
    fail_unless_equals_string (gst_structure_get_string (st, "prior"), "search-region");
    fail_unless_equals_string (gst_structure_get_string (st, "search"), "translation");
    /* no sweep, so no places from descriptors (the field is always there) */
    gint feature_places = -1;
    fail_unless (gst_structure_get_int (st, "feature-places", &feature_places) &&
        feature_places == 0, "feature-places %d", feature_places);
    gst_message_unref (msg);
    gst_buffer_unref (out);
    gst_element_set_bus (h->element, NULL);
    gst_object_unref (bus);
    gst_harness_teardown (h);
  }
  /* the world file has no CRS and none is given */
  GstElement *el = gst_element_factory_make ("nmilocalize", NULL);
  g_object_set (el, "control-location", control_path, "search-radius", 5.0, NULL);
  gst_util_set_object_arg (G_OBJECT (el), "search-units", "map");
  GError *err = start_error (el);
  fail_unless (err && g_error_matches (err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_SETTINGS), "%s", err ? err->message : "no error");
  fail_unless (strstr (err->message, "search-units") != NULL, "%s", err->message);
  g_clear_error (&err);
  gst_object_unref (el);
}
GST_END_TEST;
#endif

static Suite *
nmilocalize_suite (void)
{
  Suite *s = suite_create ("nmilocalize");
  TCase *tc = tcase_create ("general");
  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_properties);
  tcase_add_test (tc, test_gray8_localizes_with_meta_and_message);
  tcase_add_test (tc, test_scales_and_search_region);
  tcase_add_test (tc, test_rgba_alpha_mask);
  tcase_add_test (tc, test_gray16_and_i420);
  tcase_add_test (tc, test_score_map_file);
  tcase_add_test (tc, test_bad_control);
  tcase_add_test (tc, test_frame_larger_than_control);
  tcase_add_test (tc, test_frame_finer_than_control_swept);
  tcase_add_test (tc, test_unsupported_caps);
  tcase_add_test (tc, test_no_overlap_flag);
  tcase_add_test (tc, test_nodata_and_mask_file);
#if GR_HAVE_GDAL
  tcase_add_test (tc, test_search_units);
#endif
  return s;
}

int
main (int argc, char **argv)
{
  gst_check_init (&argc, &argv);
  make_control ();
  int failed = gst_check_run_suite (nmilocalize_suite (), "nmilocalize", __FILE__);
  gr_synth_image_free (&control);
  /* leave tmpdir for inspection only on failure */
  if (!failed) {
    GDir *d = g_dir_open (tmpdir, 0, NULL);
    const gchar *n;
    while (d && (n = g_dir_read_name (d))) {
      gchar *p = g_build_filename (tmpdir, n, NULL);
      g_unlink (p);
      g_free (p);
    }
    if (d)
      g_dir_close (d);
    g_rmdir (tmpdir);
  }
  g_free (control_path);
  g_free (tmpdir);
  return failed ? 1 : 0;
}
