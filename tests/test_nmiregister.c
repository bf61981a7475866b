/* nmiregister element: properties, registration with meta and message, every model,
 * the coarse fallbacks, and bad input (no coarse meta, unusable coarse meta, flat
 * frame, windows outside the control, degenerate keypoints, bad control files),
 * plus the shared control cache (gst/gstgeoregcontrol.c) and the drawn overlay.  Control images are
 * synthesized (pipelines/synth.h) into a temporary folder.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "georeg-meta.h"
#include "nmiregister-meta.h"
#include "gstnmiregisteroverlay.h"
#include "fit.h"
#include "raster.h"
#include "register.h"
#include "synth.h"

/* the cache is plain GLib code: compiled in to test it directly */
#include "../gst/gstgeoregcontrol.c"

#define CW 400
#define CH 300
#define FW 160
#define FH 120

static gchar *tmpdir;
static gchar *control_path;     /* 3-band RGB PNG + world file */
static GrSynthImage control;
static GrPlaneF luma;           /* the control's luminance as the element reads it */

static void
make_control (void)
{
  GrSynthControlParams p;
  char err[256];
  gr_synth_control_params_init (&p);
  p.width = CW;
  p.height = CH;
  p.depth = 8;
  p.seed = 11;
  p.with_geo = TRUE;
  tmpdir = g_dir_make_tmp ("georeg-nmiregister-XXXXXX", NULL);
  control_path = g_build_filename (tmpdir, "control.png", NULL);
  char *wf = gr_synth_world_file_path (control_path);
  if (!tmpdir || gr_synth_control_generate (&p, &control, err, sizeof err) != GR_OK ||
      gr_synth_image_write_png (control_path, &control, err, sizeof err) != GR_OK ||
      gr_synth_world_file_write (wf, control.geo, err, sizeof err) != GR_OK)
    g_error ("cannot make the test control image: %s", err);
  free (wf);
  GrRaster r = { 0 };
  if (gr_raster_load (control_path, 0, &r, err, sizeof err) != GR_OK)
    g_error ("cannot read back the control: %s", err);
  luma = r.plane;
  r.plane.data = NULL;
  r.plane.mask = NULL;
  gr_raster_clear (&r);
}

/* A GRAY8 frame: the control's luma under homography h (frame index -> control
 * index), inverted (another "modality"). */
static GstBuffer *
frame_h (const double h[9], gboolean invert)
{
  GrPlaneF cut;
  fail_unless (gr_synth_cut (&luma, h, FW, FH, 1, &cut) == GR_OK);
  GstBuffer *buf = gst_buffer_new_allocate (NULL, FW * FH, NULL);
  GstMapInfo map;
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (int i = 0; i < FW * FH; i++) {
    const float v = floorf (cut.data[i] + 0.5f);
    map.data[i] = (guint8) (invert ? 255 - v : v);
  }
  gst_buffer_unmap (buf, &map);
  gr_synth_plane_free (&cut);
  return buf;
}

static void
pose_h (double cx, double cy, double rot, double scale, double h[9])
{
  GrSynthPose pose = { 0 };
  pose.centre_x = cx;
  pose.centre_y = cy;
  pose.rotation_deg = rot;
  pose.scale = scale;
  gr_synth_pose_homography (&pose, FW, FH, h);
}

/* the coarse meta nmilocalize would attach: frame top-left near (x, y) */
static void
add_coarse (GstBuffer * buf, double x, double y, guint flags)
{
  GstNmiLocalizeMeta *m = gst_buffer_add_nmi_localize_meta (buf);
  m->flags = flags;
  if (!(flags & (GST_NMI_LOCALIZE_FLAG_NO_OVERLAP | GST_NMI_LOCALIZE_FLAG_NO_VALID_PIXELS))) {
    m->control_x = m->offset_x = x;
    m->control_y = m->offset_y = y;
    m->center_x = x + FW / 2.0;
    m->center_y = y + FH / 2.0;
  }
  m->frame_scale = m->control_scale = 1.0;
}

/* RMS distance (control pixels) between the meta's transform and the truth h
 * (pixel-index), over a grid of the frame */
static double
transform_error (const GstNmiRegisterMeta * m, const double h[9])
{
  double se = 0;
  int n = 0;
  for (int j = 0; j <= 4; j++)
    for (int i = 0; i <= 4; i++) {
      const double u = FW * i / 4.0, v = FH * j / 4.0;     /* pixel corners */
      double X0, Y0;
      gr_synth_homography_apply (h, u - 0.5, v - 0.5, &X0, &Y0);
      X0 += 0.5;
      Y0 += 0.5;
      const double *t = m->frame_to_control;
      const double w = t[6] * u + t[7] * v + t[8];
      const double X1 = (t[0] * u + t[1] * v + t[2]) / w, Y1 = (t[3] * u + t[4] * v + t[5]) / w;
      se += (X1 - X0) * (X1 - X0) + (Y1 - Y0) * (Y1 - Y0);
      n++;
    }
  return sqrt (se / n);
}

static GstHarness *
new_harness (const gchar * extra)
{
  gchar *desc = g_strdup_printf ("nmiregister control-location=\"%s\" backend=cpu %s",
      control_path, extra ? extra : "");
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=GRAY8,width=160,height=120,"
      "framerate=10/1");
  return h;
}

static GstMessage *
pop_element_message (GstBus * bus)
{
  GstMessage *msg;
  while ((msg = gst_bus_pop (bus))) {
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT &&
        gst_message_has_name (msg, "nmiregister"))
      return msg;
    gst_message_unref (msg);
  }
  return NULL;
}

static const guint FAILURE_FLAGS = GST_NMI_REGISTER_FLAG_NO_COARSE |
    GST_NMI_REGISTER_FLAG_COARSE_UNUSABLE | GST_NMI_REGISTER_FLAG_TOO_FEW_KEYPOINTS |
    GST_NMI_REGISTER_FLAG_TOO_FEW_MATCHES | GST_NMI_REGISTER_FLAG_DEGENERATE |
    GST_NMI_REGISTER_FLAG_NO_CONSENSUS;

/* pushes a frame with an optional coarse meta; returns the output's meta (buffer in
 * *out, unref it) */
static GstNmiRegisterMeta *
run_one (GstHarness * h, GstBuffer * in, GstBuffer ** out)
{
  *out = gst_harness_push_and_pull (h, in);
  fail_unless (*out != NULL);
  GstNmiRegisterMeta *m = gst_buffer_get_nmi_register_meta (*out);
  fail_unless (m != NULL, "no GstNmiRegisterMeta");
  return m;
}

GST_START_TEST (test_properties)
{
  GstElement *e = gst_element_factory_make ("nmiregister", NULL);
  fail_unless (e != NULL);
  gint backend, dev, maxk, ts, ws, rw, model, fb, bins;
  guint levels, mininl;
  gdouble thr, ratio, scale;
  gboolean refine;
  gchar *loc;
  g_object_get (e, "backend", &backend, "cuda-device-id", &dev, "max-keypoints", &maxk,
      "template-size", &ts, "window-size", &ws, "refine-window", &rw, "model", &model,
      "coarse-fallback", &fb, "bins", &bins, "levels", &levels, "min-inliers", &mininl,
      "ransac-threshold", &thr, "min-peak-ratio", &ratio, "initial-scale", &scale,
      "refine", &refine, "control-location", &loc, NULL);
  fail_unless_equals_int (backend, 0);
  fail_unless_equals_int (dev, -1);
  fail_unless_equals_int (maxk, 400);
  fail_unless_equals_int (ts, 11);
  fail_unless_equals_int (ws, 73);
  fail_unless_equals_int (rw, 23);
  fail_unless_equals_int (model, 3);
  fail_unless_equals_int (fb, 0);
  fail_unless_equals_int (bins, 1);
  fail_unless_equals_int (levels, 16);
  fail_unless_equals_int (mininl, 12);
  fail_unless_equals_float (thr, 1.0);
  fail_unless_equals_float (ratio, 1.0);
  fail_unless_equals_float (scale, 1.0);
  fail_unless (refine);
  fail_unless (loc == NULL);
  gst_util_set_object_arg (G_OBJECT (e), "model", "affine");
  gst_util_set_object_arg (G_OBJECT (e), "coarse-fallback", "full-search");
  gst_util_set_object_arg (G_OBJECT (e), "backend", "cpu");
  g_object_set (e, "template-size", 9, "window-size", 41, NULL);
  g_object_get (e, "model", &model, "coarse-fallback", &fb, "backend", &backend,
      "template-size", &ts, "window-size", &ws, NULL);
  fail_unless_equals_int (model, 2);
  fail_unless_equals_int (fb, 2);
  fail_unless_equals_int (backend, 1);
  fail_unless_equals_int (ts, 9);
  fail_unless_equals_int (ws, 41);
  /* even sizes are refused with a warning */
  ASSERT_WARNING (g_object_set (e, "template-size", 10, NULL));
  ASSERT_WARNING (g_object_set (e, "window-size", 40, NULL));
  g_object_get (e, "template-size", &ts, "window-size", &ws, NULL);
  fail_unless_equals_int (ts, 9);
  fail_unless_equals_int (ws, 41);
  gst_object_unref (e);
}
GST_END_TEST;

GST_START_TEST (test_registers_with_meta_and_message)
{
  GstHarness *h = new_harness (NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  double ht[9];
  pose_h (201.3, 148.6, 3.0, 1.04, ht);
  GstBuffer *in = frame_h (ht, TRUE);
  /* the coarse answer is off by a few pixels and knows nothing of the rotation */
  double x0, y0;
  gr_synth_homography_apply (ht, 0, 0, &x0, &y0);
  add_coarse (in, x0 + 0.5 + 3.2, y0 + 0.5 - 2.6, 0);
  GST_BUFFER_PTS (in) = 3 * GST_SECOND;
  GstBuffer *ref = gst_buffer_copy_deep (in);
  GstBuffer *out;
  GstNmiRegisterMeta *m = run_one (h, in, &out);
  fail_unless (m->has_transform, "flags 0x%x", m->flags);
  fail_unless_equals_int (m->flags & FAILURE_FLAGS, 0);
  fail_unless_equals_int (m->model, 3);
  const double e = transform_error (m, ht);
  fail_unless (e < 0.1, "transform error %g px", e);
  fail_unless (m->keypoints > 50 && m->inliers > 30 && m->inliers <= m->matches &&
      m->matches <= m->keypoints, "%u keypoints %u matches %u inliers", m->keypoints,
      m->matches, m->inliers);
  fail_unless (m->rms < 0.5, "rms %g", m->rms);
  fail_unless_equals_float (m->frame_to_control[8], 1.0);
  fail_unless_equals_float (m->prior_scale, 1.0);
  /* footprint = transform of the corners; map = geotransform of the footprint */
  const double corners[8] = { 0, 0, FW, 0, FW, FH, 0, FH };
  fail_unless (m->has_map);
  for (int i = 0; i < 4; i++) {
    const double *t = m->frame_to_control;
    const double u = corners[2 * i], v = corners[2 * i + 1];
    const double w = t[6] * u + t[7] * v + t[8];
    fail_unless (fabs ((t[0] * u + t[1] * v + t[2]) / w - m->footprint_control[2 * i]) < 1e-9);
    fail_unless (fabs ((t[3] * u + t[4] * v + t[5]) / w - m->footprint_control[2 * i + 1]) < 1e-9);
    double mx, my;
    gr_geo_apply (control.geo, m->footprint_control[2 * i], m->footprint_control[2 * i + 1],
        &mx, &my);
    fail_unless (fabs (mx - m->footprint_map[2 * i]) < 1e-6 &&
        fabs (my - m->footprint_map[2 * i + 1]) < 1e-6);
    const double *g = m->frame_to_map;
    const double wg = g[6] * u + g[7] * v + g[8];
    fail_unless (fabs ((g[0] * u + g[1] * v + g[2]) / wg - mx) < 1e-6 &&
        fabs ((g[3] * u + g[4] * v + g[5]) / wg - my) < 1e-6, "frame-to-map");
  }
  /* the pixels pass through untouched, the coarse meta too */
  GstMapInfo a;
  gst_buffer_map (ref, &a, GST_MAP_READ);
  fail_unless (gst_buffer_memcmp (out, 0, a.data, a.size) == 0);
  gst_buffer_unmap (ref, &a);
  gst_buffer_unref (ref);
  fail_unless (gst_buffer_get_nmi_localize_meta (out) != NULL);

  GstMessage *msg = pop_element_message (bus);
  fail_unless (msg != NULL, "no nmiregister message");
  const GstStructure *s = gst_message_get_structure (msg);
  guint flags, inl, kp;
  guint64 frame, ts;
  gboolean has;
  gdouble rms;
  fail_unless (gst_structure_get (s, "flags", G_TYPE_UINT, &flags, "inliers", G_TYPE_UINT,
          &inl, "keypoints", G_TYPE_UINT, &kp, "frame", G_TYPE_UINT64, &frame,
          "timestamp", G_TYPE_UINT64, &ts, "has-transform", G_TYPE_BOOLEAN, &has, "rms",
          G_TYPE_DOUBLE, &rms, NULL));
  fail_unless_equals_int (flags, m->flags);
  fail_unless_equals_int (inl, m->inliers);
  fail_unless_equals_int (kp, m->keypoints);
  fail_unless_equals_uint64 (frame, 0);
  fail_unless_equals_uint64 (ts, 3 * GST_SECOND);
  fail_unless (has);
  fail_unless_equals_float (rms, m->rms);
  fail_unless_equals_string (gst_structure_get_string (s, "backend"), "cpu");
  fail_unless_equals_string (gst_structure_get_string (s, "model"), "homography");
  const GValue *arr = gst_structure_get_value (s, "frame-to-control");
  fail_unless (arr && GST_VALUE_HOLDS_ARRAY (arr) && gst_value_array_get_size (arr) == 9);
  for (guint i = 0; i < 9; i++)
    fail_unless_equals_float (g_value_get_double (gst_value_array_get_value (arr, i)),
        m->frame_to_control[i]);
  arr = gst_structure_get_value (s, "footprint-map");
  fail_unless (arr && gst_value_array_get_size (arr) == 8);
  fail_unless_equals_float (g_value_get_double (gst_value_array_get_value (arr, 5)),
      m->footprint_map[5]);
  fail_unless (gst_structure_has_field (s, "frame-to-map"));
  gst_message_unref (msg);
  gst_buffer_unref (out);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_models)
{
  const gchar *names[4] = { "translation", "similarity", "affine", "homography" };
  for (int mi = 0; mi < 4; mi++) {
    gchar *extra = g_strdup_printf ("model=%s", names[mi]);
    GstHarness *h = new_harness (extra);
    g_free (extra);
    double ht[9];
    /* a translation for the translation model, else rotated and scaled */
    if (mi == 0)
      gr_synth_translation_homography (151, 87, ht);
    else
      pose_h (180.0, 150.0, -4.0, 0.95, ht);
    GstBuffer *in = frame_h (ht, FALSE);
    double x0, y0;
    gr_synth_homography_apply (ht, 0, 0, &x0, &y0);
    add_coarse (in, x0 + 0.5 - 1.7, y0 + 0.5 + 2.1, 0);
    GstBuffer *out;
    GstNmiRegisterMeta *m = run_one (h, in, &out);
    fail_unless (m->has_transform, "%s: flags 0x%x", names[mi], m->flags);
    fail_unless_equals_int (m->model, mi);
    const double e = transform_error (m, ht);
    fail_unless (e < 0.1, "%s: transform error %g px", names[mi], e);
    if (mi < 3)
      fail_unless (m->frame_to_control[6] == 0.0 && m->frame_to_control[7] == 0.0);
    gst_buffer_unref (out);
    gst_harness_teardown (h);
  }
}
GST_END_TEST;

/* The element is a thin adapter: its result is the engine's (kernels/register.h) on
 * the same frame, control and prior, bit for bit. */
GST_START_TEST (test_element_is_the_engine)
{
  double ht[9];
  pose_h (230.0, 140.0, 2.0, 1.03, ht);
  double x0, y0;
  gr_synth_homography_apply (ht, 0, 0, &x0, &y0);
  const double px = x0 + 0.5 + 3.0, py = y0 + 0.5 - 2.0;

  GstHarness *h = new_harness ("max-keypoints=300");
  GstBuffer *in = frame_h (ht, TRUE), *out;
  GstMapInfo map;
  GrPlaneF frame = { 0 };
  fail_unless (gr_plane_alloc (&frame, FW, FH, FALSE));
  gst_buffer_map (in, &map, GST_MAP_READ);
  for (int i = 0; i < FW * FH; i++)
    frame.data[i] = map.data[i];
  gst_buffer_unmap (in, &map);
  add_coarse (in, px, py, 0);
  GstNmiRegisterMeta *m = run_one (h, in, &out);

  char err[256] = "";
  GrStatus st;
  GrRegister *r = gr_register_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
  fail_unless (r != NULL, "%s", err);
  GrRegisterParams p;
  gr_register_params_init (&p);
  p.max_keypoints = 300;
  double a, b;
  fail_unless (gr_plane_value_range (&luma, GR_BINS_MINMAX, 8, 0, 0, &a, &b) == GR_OK);
  fail_unless (gr_register_set_control (r, &luma, a, b, p.levels, NULL, 0, NULL, err,
          sizeof err) == GR_OK, "%s", err);
  fail_unless (gr_register_set_frame (r, &p, &frame, FALSE, GR_BINS_MINMAX, 8, 0, 0,
          err, sizeof err) == GR_OK, "%s", err);
  GrRegisterPrior prior = { 0 };
  prior.has_prior = TRUE;
  const double ph[9] = { 1, 0, px, 0, 1, py, 0, 0, 1 };
  memcpy (prior.h, ph, sizeof ph);
  GrRegisterResult res;
  fail_unless (gr_register_run (r, &p, &prior, &res, err, sizeof err) == GR_OK, "%s",
      err);
  fail_unless (res.has_transform && m->has_transform);
  fail_unless (memcmp (m->frame_to_control, res.h, sizeof res.h) == 0,
      "the element's transform differs from the engine's");
  fail_unless (m->flags == res.flags && m->inliers == (guint) res.inliers &&
      m->matches == (guint) res.matches && m->keypoints == (guint) res.keypoints &&
      m->rms == res.rms, "element flags 0x%x inl %u m %u kp %u vs engine 0x%x %d %d %d",
      m->flags, m->inliers, m->matches, m->keypoints, res.flags, res.inliers,
      res.matches, res.keypoints);
  fail_unless (transform_error (m, ht) < 0.1, "error %g", transform_error (m, ht));
  gr_register_result_clear (&res);
  gr_register_free (r);
  gr_plane_clear (&frame);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* A coarse meta with a full homography (nmilocalize at any heading): the
 * registration starts from it, so a frame turned by 30 degrees registers. */
GST_START_TEST (test_prior_homography)
{
  double ht[9], hc[9];
  pose_h (220.0, 150.0, 30.0, 1.1, ht);
  /* pixel-index -> pixel-corner, then 3 px off */
  const double tp[9] = { 1, 0, 0.5, 0, 1, 0.5, 0, 0, 1 };
  const double tm[9] = { 1, 0, -0.5, 0, 1, -0.5, 0, 0, 1 };
  double t[9];
  gr_mat3_mul (tp, ht, t);
  gr_mat3_mul (t, tm, hc);
  hc[2] += 3.0 * hc[8];
  hc[5] -= 2.0 * hc[8];
  GstHarness *h = new_harness (NULL);
  GstBuffer *in = frame_h (ht, FALSE), *out;
  add_coarse (in, hc[2], hc[5], 0);
  GstNmiLocalizeMeta *lm = gst_buffer_get_nmi_localize_meta (in);
  fail_unless (gst_nmi_localize_meta_set_transform (lm, hc, FW, FH));
  GstNmiRegisterMeta *m = run_one (h, in, &out);
  fail_unless (m->has_transform, "flags 0x%x", m->flags);
  fail_unless (transform_error (m, ht) < 0.15, "error %g", transform_error (m, ht));
  fail_unless (fabs (m->prior_x - hc[2]) < 1e-9 && fabs (m->prior_scale - 1.1) < 1e-6,
      "prior (%g, %g) scale %g", m->prior_x, m->prior_y, m->prior_scale);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_coarse_fallbacks)
{
  double ht[9];
  pose_h (230.0, 140.0, 2.0, 1.0, ht);
  double x0, y0;
  gr_synth_homography_apply (ht, 0, 0, &x0, &y0);
  GstBuffer *out;

  /* none: documented flag, no transform, a message saying so */
  GstHarness *h = new_harness (NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  GstNmiRegisterMeta *m = run_one (h, frame_h (ht, FALSE), &out);
  fail_unless (m->flags & GST_NMI_REGISTER_FLAG_NO_COARSE);
  fail_unless (!m->has_transform && isnan (m->frame_to_control[0]));
  GstMessage *msg = pop_element_message (bus);
  fail_unless (msg != NULL);
  gboolean has = TRUE;
  gst_structure_get_boolean (gst_message_get_structure (msg), "has-transform", &has);
  fail_unless (!has);
  fail_unless (!gst_structure_has_field (gst_message_get_structure (msg), "frame-to-control"));
  gst_message_unref (msg);
  gst_buffer_unref (out);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);

  /* initial-offset */
  gchar *extra = g_strdup_printf ("coarse-fallback=initial-offset initial-offset-x=%f "
      "initial-offset-y=%f", x0 + 0.5 + 4.0, y0 + 0.5 - 3.0);
  h = new_harness (extra);
  g_free (extra);
  m = run_one (h, frame_h (ht, FALSE), &out);
  fail_unless (m->has_transform, "initial-offset: flags 0x%x", m->flags);
  fail_unless (m->flags & GST_NMI_REGISTER_FLAG_INITIAL_OFFSET);
  fail_unless (transform_error (m, ht) < 0.1);
  fail_unless (fabs (m->prior_x - (x0 + 0.5 + 4.0)) < 1e-5, "prior %g", m->prior_x);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  /* full-search */
  h = new_harness ("coarse-fallback=full-search");
  m = run_one (h, frame_h (ht, TRUE), &out);
  fail_unless (m->has_transform, "full-search: flags 0x%x", m->flags);
  fail_unless (m->flags & GST_NMI_REGISTER_FLAG_FULL_SEARCH);
  fail_unless (fabs (m->prior_x - (x0 + 0.5)) < 12 && fabs (m->prior_y - (y0 + 0.5)) < 12,
      "full search prior (%g, %g) vs (%g, %g)", m->prior_x, m->prior_y, x0 + 0.5, y0 + 0.5);
  fail_unless (transform_error (m, ht) < 0.1, "full-search error %g", transform_error (m, ht));
  gst_buffer_unref (out);

  /* a coarse meta wins over the fallback ... */
  GstBuffer *in = frame_h (ht, FALSE);
  add_coarse (in, x0 + 0.5 + 2.0, y0 + 0.5 + 1.0, 0);
  m = run_one (h, in, &out);
  fail_unless (m->has_transform && !(m->flags & GST_NMI_REGISTER_FLAG_FULL_SEARCH));
  fail_unless (fabs (m->prior_x - (x0 + 2.5)) < 1e-9);
  gst_buffer_unref (out);
  /* ... an unusable one (no position) falls back to the full search ... */
  in = frame_h (ht, FALSE);
  add_coarse (in, 0, 0, GST_NMI_LOCALIZE_FLAG_NO_OVERLAP);
  m = run_one (h, in, &out);
  fail_unless (m->has_transform && (m->flags & GST_NMI_REGISTER_FLAG_FULL_SEARCH),
      "flags 0x%x", m->flags);
  gst_buffer_unref (out);
  /* ... and so does an ambiguous one that does not register */
  in = frame_h (ht, FALSE);
  add_coarse (in, x0 + 0.5 + 150, y0 + 0.5 - 60, GST_NMI_LOCALIZE_FLAG_AMBIGUOUS);
  m = run_one (h, in, &out);
  fail_unless (m->has_transform && (m->flags & GST_NMI_REGISTER_FLAG_FULL_SEARCH),
      "flags 0x%x, %u of %u inliers, error %g", m->flags, m->inliers, m->matches,
      transform_error (m, ht));
  fail_unless (transform_error (m, ht) < 0.1);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  /* without the full search an unusable coarse meta is a documented flag */
  h = new_harness ("coarse-fallback=initial-offset");
  in = frame_h (ht, FALSE);
  add_coarse (in, 0, 0, GST_NMI_LOCALIZE_FLAG_NO_OVERLAP);
  m = run_one (h, in, &out);
  fail_unless (m->flags & GST_NMI_REGISTER_FLAG_COARSE_UNUSABLE);
  fail_unless (!(m->flags & (GST_NMI_REGISTER_FLAG_FULL_SEARCH |
              GST_NMI_REGISTER_FLAG_INITIAL_OFFSET)));
  fail_unless (!m->has_transform);
  gst_buffer_unref (out);
  /* a wrong prior gives few chance inliers: flagged low-inliers (or no transform) */
  in = frame_h (ht, FALSE);
  add_coarse (in, x0 + 0.5 + 150, y0 + 0.5 - 60, 0);
  m = run_one (h, in, &out);
  fail_unless (!m->has_transform || (m->flags & GST_NMI_REGISTER_FLAG_LOW_INLIERS),
      "wrong prior: flags 0x%x, %u of %u inliers", m->flags, m->inliers, m->matches);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_bad_frames)
{
  GstHarness *h = new_harness (NULL);
  GstBuffer *out;
  double ht[9];
  gr_synth_translation_homography (120, 90, ht);

  /* flat frame: too few keypoints */
  GstBuffer *in = gst_buffer_new_allocate (NULL, FW * FH, NULL);
  gst_buffer_memset (in, 0, 128, FW * FH);
  add_coarse (in, 120.5, 90.5, 0);
  GstNmiRegisterMeta *m = run_one (h, in, &out);
  fail_unless (m->flags & GST_NMI_REGISTER_FLAG_TOO_FEW_KEYPOINTS, "flags 0x%x", m->flags);
  fail_unless (!m->has_transform);
  fail_unless_equals_int (m->keypoints, 0);
  gst_buffer_unref (out);

  /* windows wholly outside the control: too few matches, windows clipped */
  in = frame_h (ht, FALSE);
  add_coarse (in, -5000.0, 90.0, 0);
  m = run_one (h, in, &out);
  fail_unless (m->flags & GST_NMI_REGISTER_FLAG_TOO_FEW_MATCHES, "flags 0x%x", m->flags);
  fail_unless (m->flags & GST_NMI_REGISTER_FLAG_WINDOWS_CLIPPED);
  fail_unless (!m->has_transform && m->keypoints > 0 && m->matches == 0);
  gst_buffer_unref (out);

  /* a frame hanging over the control's edge still registers, flagged clipped */
  gr_synth_translation_homography (CW - FW + 20, 40, ht);
  GrPlaneF l2 = luma;           /* cut reads outside: invalid pixels become 0 */
  (void) l2;
  in = frame_h (ht, FALSE);
  add_coarse (in, CW - FW + 20 + 0.5, 40.5, 0);
  m = run_one (h, in, &out);
  fail_unless (m->flags & GST_NMI_REGISTER_FLAG_WINDOWS_CLIPPED, "flags 0x%x", m->flags);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  /* degenerate: only an 11-pixel strip of the frame is valid (alpha), so every
   * keypoint lies on one row */
  gchar *desc = g_strdup_printf ("nmiregister control-location=\"%s\" backend=cpu",
      control_path);
  h = gst_harness_new_parse (desc);
  g_free (desc);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGBA,width=160,height=120,"
      "framerate=10/1");
  gr_synth_translation_homography (120, 90, ht);
  GstBuffer *g = frame_h (ht, FALSE);
  GstMapInfo gm, rm;
  in = gst_buffer_new_allocate (NULL, FW * FH * 4, NULL);
  gst_buffer_map (g, &gm, GST_MAP_READ);
  gst_buffer_map (in, &rm, GST_MAP_WRITE);
  for (int i = 0; i < FW * FH; i++) {
    const int y = i / FW;
    rm.data[4 * i] = rm.data[4 * i + 1] = rm.data[4 * i + 2] = gm.data[i];
    rm.data[4 * i + 3] = (y >= 55 && y <= 65) ? 255 : 0;
  }
  gst_buffer_unmap (g, &gm);
  gst_buffer_unmap (in, &rm);
  gst_buffer_unref (g);
  add_coarse (in, 120.5, 90.5, 0);
  m = run_one (h, in, &out);
  fail_unless (m->keypoints >= 5, "strip: %u keypoints", m->keypoints);
  fail_unless (m->flags & GST_NMI_REGISTER_FLAG_DEGENERATE, "strip: flags 0x%x", m->flags);
  fail_unless (!m->has_transform);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
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
  GstElement *e = gst_element_factory_make ("nmiregister", NULL);
  GError *err = start_error (e);
  fail_unless (err && g_error_matches (err, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND));
  g_clear_error (&err);
  g_object_set (e, "control-location", "/nonexistent/ctl.png", NULL);
  err = start_error (e);
  fail_unless (err && g_error_matches (err, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ));
  fail_unless (strstr (err->message, "/nonexistent/ctl.png") != NULL, "%s", err->message);
  g_clear_error (&err);
  gchar *bad = g_build_filename (tmpdir, "corrupt.png", NULL);
  g_file_set_contents (bad, "\x89PNG\r\n\x1a\nnot really", 18, NULL);
  g_object_set (e, "control-location", bad, NULL);
  err = start_error (e);
  fail_unless (err && err->domain == GST_RESOURCE_ERROR, "corrupt control");
  g_clear_error (&err);
  g_object_set (e, "control-location", control_path, "window-size", 5, NULL);
  err = start_error (e);
  fail_unless (err && g_error_matches (err, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS));
  g_clear_error (&err);
  g_free (bad);
  gst_object_unref (e);
}
GST_END_TEST;

/* ---- the shared control cache */

static gpointer
acquire_thread (gpointer data)
{
  GrStatus st;
  char err[256];
  return gst_georeg_control_acquire (control_path, 0, &st, err, sizeof err);
}

GST_START_TEST (test_control_cache)
{
  GrStatus st;
  char err[256];
  fail_unless_equals_int (gst_georeg_control_cache_count (), 0);
  GstGeoregControl *a = gst_georeg_control_acquire (control_path, 0, &st, err, sizeof err);
  fail_unless (a != NULL && st == GR_OK, "%s", err);
  /* another name for the same file shares the entry */
  gchar *dir2 = g_build_filename (tmpdir, ".", "control.png", NULL);
  GstGeoregControl *b = gst_georeg_control_acquire (dir2, 0, &st, err, sizeof err);
  fail_unless (b == a);
  fail_unless (gst_georeg_control_raster (a) == gst_georeg_control_raster (b));
  fail_unless_equals_int (gst_georeg_control_cache_count (), 1);
  GstGeoregControl *c = gst_georeg_control_acquire (control_path, 2, &st, err, sizeof err);
  fail_unless (c != NULL && c != a);
  fail_unless_equals_int (gst_georeg_control_cache_count (), 2);
  fail_unless_equals_int (gst_georeg_control_raster (a)->plane.width, CW);
  gst_georeg_control_release (c);
  gst_georeg_control_release (b);
  fail_unless_equals_int (gst_georeg_control_cache_count (), 1);
  gst_georeg_control_release (a);
  fail_unless_equals_int (gst_georeg_control_cache_count (), 0);
  /* failures are reported and not cached */
  fail_unless (gst_georeg_control_acquire ("/nonexistent.png", 0, &st, err, sizeof err) == NULL);
  fail_unless_equals_int (st, GR_ERR_IO);
  fail_unless (gst_georeg_control_acquire (control_path, 9, &st, err, sizeof err) == NULL);
  fail_unless_equals_int (gst_georeg_control_cache_count (), 0);
  /* concurrent acquirers share one load */
  GThread *t[6];
  for (int i = 0; i < 6; i++)
    t[i] = g_thread_new ("acq", acquire_thread, NULL);
  GstGeoregControl *got[6];
  for (int i = 0; i < 6; i++)
    got[i] = g_thread_join (t[i]);
  for (int i = 0; i < 6; i++)
    fail_unless (got[i] != NULL && got[i] == got[0]);
  fail_unless_equals_int (gst_georeg_control_cache_count (), 1);
  for (int i = 0; i < 6; i++)
    gst_georeg_control_release (got[i]);
  fail_unless_equals_int (gst_georeg_control_cache_count (), 0);
  g_free (dir2);
}
GST_END_TEST;

/* ------------------------------------------------------------------ overlay */

/* the overlay canvas of a meta-mode output as 0xAARRGGBB words (g_free) */
static guint32 *
overlay_pixels (GstBuffer * out, gint * w, gint * h)
{
  GstVideoOverlayCompositionMeta *om = gst_buffer_get_video_overlay_composition_meta (out);
  fail_unless (om != NULL, "no GstVideoOverlayCompositionMeta");
  fail_unless_equals_int (gst_video_overlay_composition_n_rectangles (om->overlay), 1);
  GstVideoOverlayRectangle *r = gst_video_overlay_composition_get_rectangle (om->overlay, 0);
  gint x, y;
  guint rw, rh;
  fail_unless (gst_video_overlay_rectangle_get_render_rectangle (r, &x, &y, &rw, &rh));
  fail_unless (x == 0 && y == 0 && rw == FW && rh == FH, "%d %d %u %u", x, y, rw, rh);
  GstBuffer *px = gst_video_overlay_rectangle_get_pixels_unscaled_argb (r,
      GST_VIDEO_OVERLAY_FORMAT_FLAG_NONE);
  GstVideoMeta *vm = gst_buffer_get_video_meta (px);
  fail_unless (vm && vm->width == FW && vm->height == FH);
  guint32 *o = g_new (guint32, FW * FH);
  GstMapInfo map;
  fail_unless (gst_buffer_map (px, &map, GST_MAP_READ));
  for (int j = 0; j < FH; j++)
    memcpy (o + j * FW, map.data + vm->offset[0] + j * vm->stride[0], FW * 4);
  gst_buffer_unmap (px, &map);
  *w = FW;
  *h = FH;
  return o;
}

static int
count_colour (const guint32 * px, guint32 c)
{
  int n = 0;
  for (int i = 0; i < FW * FH; i++)
    n += px[i] == c;
  return n;
}

GST_START_TEST (test_overlay_meta)
{
  GstHarness *h = new_harness ("overlay=meta");
  double ht[9];
  pose_h (201.3, 148.6, 3.0, 1.04, ht);
  GstBuffer *in = frame_h (ht, TRUE);
  double x0, y0;
  gr_synth_homography_apply (ht, 0, 0, &x0, &y0);
  const double px = x0 + 0.5 + 4.2, py = y0 + 0.5 + 3.1;
  add_coarse (in, px, py, 0);
  GstBuffer *ref = gst_buffer_copy_deep (in), *out;
  GstNmiRegisterMeta *m = run_one (h, in, &out);
  fail_unless (m->has_transform && !(m->flags & FAILURE_FLAGS), "flags 0x%x", m->flags);
  /* meta mode leaves the pixels alone */
  GstMapInfo a;
  gst_buffer_map (ref, &a, GST_MAP_READ);
  fail_unless (gst_buffer_memcmp (out, 0, a.data, a.size) == 0);
  gst_buffer_unmap (ref, &a);
  gint w, hh;
  guint32 *o = overlay_pixels (out, &w, &hh);
  /* the border in the "good" colour, transparent inside where nothing is drawn */
  fail_unless_equals_int (o[0], GST_NMI_REGISTER_OVERLAY_GOOD);
  fail_unless_equals_int (o[FW * FH - 1], GST_NMI_REGISTER_OVERLAY_GOOD);
  fail_unless (count_colour (o, 0) > FW * FH / 2);
  /* every inlier: a ring, and its residual vector starting at its centre */
  const int rings = count_colour (o, GST_NMI_REGISTER_OVERLAY_INLIER);
  const int resid = count_colour (o, GST_NMI_REGISTER_OVERLAY_RESIDUAL);
  fail_unless (rings >= 8 * (int) m->inliers / 2, "%d ring pixels, %u inliers", rings,
      m->inliers);
  fail_unless (resid >= (int) m->inliers / 2, "%d residual pixels, %u inliers", resid,
      m->inliers);
  /* the prior's footprint: the frame's corners placed by the coarse answer, pulled
   * back through the fit; most of its edge points inside the frame are drawn */
  const double *t = m->frame_to_control;
  int inside = 0, drawn = 0;
  const double c[5][2] = { {0, 0}, {FW, 0}, {FW, FH}, {0, FH}, {0, 0} };
  for (int e = 0; e < 4; e++)
    for (int k = 0; k < 40; k++) {
      const double u = c[e][0] + (c[e + 1][0] - c[e][0]) * k / 40.0;
      const double v = c[e][1] + (c[e + 1][1] - c[e][1]) * k / 40.0;
      /* control point of the prior, then into the frame by solving t (u', v') = X */
      const double X = px + u, Y = py + v;
      double ti[9];
      fail_unless (gr_mat3_inverse (t, ti));
      const double wq = ti[6] * X + ti[7] * Y + ti[8];
      const double fu = (ti[0] * X + ti[1] * Y + ti[2]) / wq - 0.5;
      const double fv = (ti[3] * X + ti[4] * Y + ti[5]) / wq - 0.5;
      const int iu = (int) lround (fu), iv = (int) lround (fv);
      if (iu < 2 || iv < 2 || iu >= FW - 2 || iv >= FH - 2)
        continue;
      inside++;
      /* within a pixel: the line steps along its major axis and rounds */
      gboolean hit = FALSE;
      for (int dj = -1; dj <= 1; dj++)
        for (int di = -1; di <= 1; di++)
          hit |= o[(iv + dj) * FW + iu + di] == GST_NMI_REGISTER_OVERLAY_PRIOR;
      drawn += hit;
    }
  fail_unless (inside > 40, "only %d footprint points inside the frame", inside);
  fail_unless (drawn >= inside * 8 / 10, "%d of %d footprint points drawn", drawn, inside);
  g_free (o);
  gst_buffer_unref (ref);
  gst_buffer_unref (out);

  /* no transform (no coarse meta, coarse-fallback=none): the border says so */
  in = frame_h (ht, TRUE);
  m = run_one (h, in, &out);
  fail_unless (!m->has_transform);
  o = overlay_pixels (out, &w, &hh);
  fail_unless_equals_int (o[0], GST_NMI_REGISTER_OVERLAY_FAILED);
  fail_unless_equals_int (count_colour (o, GST_NMI_REGISTER_OVERLAY_INLIER), 0);
  g_free (o);
  gst_buffer_unref (out);

  /* a prior far off: matches but no consensus: drawn as outliers, no inliers */
  in = frame_h (ht, TRUE);
  add_coarse (in, px + 60, py - 45, 0);
  m = run_one (h, in, &out);
  o = overlay_pixels (out, &w, &hh);
  if (!m->has_transform) {
    fail_unless_equals_int (o[0], GST_NMI_REGISTER_OVERLAY_FAILED);
    if (m->matches > 0)
      fail_unless (count_colour (o, GST_NMI_REGISTER_OVERLAY_OUTLIER) > 0);
  } else {
    fail_unless (o[0] == GST_NMI_REGISTER_OVERLAY_DOUBTFUL ||
        o[0] == GST_NMI_REGISTER_OVERLAY_GOOD);
  }
  GST_INFO ("far prior: flags 0x%x, %u matches, %u inliers", m->flags, m->matches,
      m->inliers);
  g_free (o);
  gst_buffer_unref (out);

  /* overlay=none: no composition */
  GstElement *e = gst_harness_find_element (h, "nmiregister");
  g_object_set (e, "overlay", 0, NULL);
  gst_object_unref (e);
  in = frame_h (ht, TRUE);
  add_coarse (in, px, py, 0);
  run_one (h, in, &out);
  fail_unless (gst_buffer_get_video_overlay_composition_meta (out) == NULL);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* the GRAY8 frame g in `format` (grey: U = V = 128, alpha opaque) */
static GstBuffer *
frame_as (GstBuffer * g, GstVideoFormat format, GstVideoInfo * info)
{
  gst_video_info_set_format (info, format, FW, FH);
  GstBuffer *b = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (info), NULL);
  GstVideoFrame f;
  GstMapInfo gm;
  fail_unless (gst_video_frame_map (&f, info, b, GST_MAP_WRITE));
  gst_buffer_map (g, &gm, GST_MAP_READ);
  for (int j = 0; j < FH; j++) {
    guint8 *row = (guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&f, 0) +
        j * GST_VIDEO_FRAME_PLANE_STRIDE (&f, 0);
    for (int i = 0; i < FW; i++) {
      const guint8 v = gm.data[j * FW + i];
      switch (format) {
        case GST_VIDEO_FORMAT_GRAY16_LE:
          GST_WRITE_UINT16_LE (row + 2 * i, v * 257);
          break;
        case GST_VIDEO_FORMAT_RGBA:
        case GST_VIDEO_FORMAT_BGRA:
          row[4 * i] = row[4 * i + 1] = row[4 * i + 2] = v;
          row[4 * i + 3] = 255;
          break;
        default:
          row[i] = v;
      }
    }
  }
  for (guint p = 1; p < GST_VIDEO_FRAME_N_PLANES (&f); p++)
    for (int j = 0; j < GST_VIDEO_FRAME_COMP_HEIGHT (&f, 1); j++)
      memset ((guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&f, p) +
          j * GST_VIDEO_FRAME_PLANE_STRIDE (&f, p), 128,
          GST_VIDEO_FRAME_COMP_WIDTH (&f, 1) * GST_VIDEO_FRAME_COMP_PSTRIDE (&f, 1));
  gst_buffer_unmap (g, &gm);
  gst_video_frame_unmap (&f);
  return b;
}

/* draw mode on every format: the frame's pixels become exactly the meta-mode
 * composition blended onto the input, and change where the overlay is drawn */
GST_START_TEST (test_overlay_draw)
{
  const GstVideoFormat formats[] = { GST_VIDEO_FORMAT_GRAY8, GST_VIDEO_FORMAT_GRAY16_LE,
    GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_BGRA, GST_VIDEO_FORMAT_I420,
    GST_VIDEO_FORMAT_NV12
  };
  double ht[9];
  pose_h (180.0, 150.0, -4.0, 0.95, ht);
  double x0, y0;
  gr_synth_homography_apply (ht, 0, 0, &x0, &y0);
  for (guint fi = 0; fi < G_N_ELEMENTS (formats); fi++) {
    const gchar *fmt = gst_video_format_to_string (formats[fi]);
    GstHarness *hm = new_harness ("overlay=meta"), *hd = new_harness ("overlay=draw");
    gchar *caps = g_strdup_printf ("video/x-raw,format=%s,width=%d,height=%d,"
        "framerate=10/1", fmt, FW, FH);
    gst_harness_set_src_caps_str (hm, caps);
    gst_harness_set_src_caps_str (hd, caps);
    g_free (caps);
    GstVideoInfo info;
    GstBuffer *g = frame_h (ht, FALSE);
    GstBuffer *in = frame_as (g, formats[fi], &info);
    gst_buffer_unref (g);
    add_coarse (in, x0 + 0.5 - 1.7, y0 + 0.5 + 2.1, 0);
    GstBuffer *ref = gst_buffer_copy_deep (in), *om, *od;
    GstNmiRegisterMeta *mm = run_one (hm, gst_buffer_copy_deep (in), &om);
    GstNmiRegisterMeta *md = run_one (hd, in, &od);
    fail_unless (mm->has_transform && md->has_transform, "%s", fmt);
    fail_unless (gst_buffer_get_video_overlay_composition_meta (od) == NULL, "%s", fmt);
    /* the reference: the meta's composition blended onto the input by hand */
    GstVideoOverlayCompositionMeta *cm = gst_buffer_get_video_overlay_composition_meta (om);
    fail_unless (cm != NULL, "%s", fmt);
    GstVideoFrame rf;
    fail_unless (gst_video_frame_map (&rf, &info, ref, GST_MAP_READWRITE));
    fail_unless (gst_video_overlay_composition_blend (cm->overlay, &rf), "%s", fmt);
    gst_video_frame_unmap (&rf);
    GstMapInfo a, b, c;
    gst_buffer_map (ref, &a, GST_MAP_READ);
    gst_buffer_map (od, &b, GST_MAP_READ);
    gst_buffer_map (om, &c, GST_MAP_READ);
    fail_unless (a.size == b.size && memcmp (a.data, b.data, a.size) == 0,
        "%s: drawn frame differs from the composition blended by hand", fmt);
    gsize changed = 0;
    for (gsize i = 0; i < b.size; i++)
      changed += b.data[i] != c.data[i];
    fail_unless (changed > (gsize) (FW + FH), "%s: %" G_GSIZE_FORMAT " bytes changed",
        fmt, changed);
    if (formats[fi] == GST_VIDEO_FORMAT_RGBA)
      fail_unless (b.data[0] == 0x20 && b.data[1] == 0xe0 && b.data[2] == 0x20,
          "RGBA border %02x%02x%02x", b.data[0], b.data[1], b.data[2]);
    gst_buffer_unmap (ref, &a);
    gst_buffer_unmap (od, &b);
    gst_buffer_unmap (om, &c);
    gst_buffer_unref (ref);
    gst_buffer_unref (om);
    gst_buffer_unref (od);
    gst_harness_teardown (hm);
    gst_harness_teardown (hd);
  }
}
GST_END_TEST;

static Suite *
nmiregister_suite (void)
{
  Suite *s = suite_create ("nmiregister");
  TCase *tc = tcase_create ("general");
  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_properties);
  tcase_add_test (tc, test_registers_with_meta_and_message);
  tcase_add_test (tc, test_models);
  tcase_add_test (tc, test_coarse_fallbacks);
  tcase_add_test (tc, test_element_is_the_engine);
  tcase_add_test (tc, test_prior_homography);
  tcase_add_test (tc, test_bad_frames);
  tcase_add_test (tc, test_bad_control);
  tcase_add_test (tc, test_control_cache);
  tcase_add_test (tc, test_overlay_meta);
  tcase_add_test (tc, test_overlay_draw);
  return s;
}

int
main (int argc, char **argv)
{
  gst_check_init (&argc, &argv);
  make_control ();
  int failed = gst_check_run_suite (nmiregister_suite (), "nmiregister", __FILE__);
  gr_synth_image_free (&control);
  gr_synth_plane_free (&luma);
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
  return failed;
}
