/* landmarkshoot, pointsetparse and pointsetenc (GstHarness): caps, properties, the
 * result meta, progress and element messages, the registration itself (a target made
 * by shooting the template with a known smooth momentum must be recovered), extra
 * points, bad input (count mismatch, NaN/Inf, empty set, one point, dimension
 * mismatch, malformed buffers and files, missing template), and the pipelines
 *   filesrc ! pointsetparse ! landmarkshoot ! pointsetenc ! filesink
 *   multifilesrc ! pointsetparse ! landmarkshoot ! pointsetenc ! multifilesink
 * run through gst_parse_launch (core elements are loaded from the system plugin
 * folder, since the test registry holds only this build's plugin).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "gr_common.h"
#include "landmarkshoot-meta.h"
#include "pointset_io.h"
#include "shoot.h"
#include "varifold.h"
#include "shoot_testdata.h"

#define N2 40
#define N3 60

static gchar *tmpdir;
static gchar *atlas2, *atlas3;          /* template files */
static double q2[N2 * 2], t2[N2 * 2];   /* 2-D template and target */
static double q3[N3 * 3], t3[N3 * 3];
static gboolean have_core;              /* filesrc, filesink, multifile* loaded */

static gchar *
tmp_path (const gchar * name)
{
  return g_build_filename (tmpdir, name, NULL);
}

static void
write_file (const gchar * path, const gchar * text)
{
  if (!g_file_set_contents (path, text, -1, NULL))
    g_error ("cannot write %s", path);
}

/* the target: the template shot with a known smooth momentum (float64 CPU) */
static void
shoot_known (const double *q, size_t n, int dim, double amp, double *target)
{
  GrShootParams p;
  gr_shoot_params_init (&p);
  p.n = n;
  p.dim = dim;
  p.sigma = 1.5;
  p.time_points = 20;
  p.precision = GR_SHOOT_FLOAT64;
  char err[256];
  GrShoot *s = gr_shoot_new (&p, GR_BACKEND_CPU, -1, NULL, err, sizeof err);
  double *mom = g_new (double, n * dim);
  td_smooth_momentum (q, n, dim, amp, 0.35, mom);
  if (!s || gr_shoot_set_template (s, q, err, sizeof err) != GR_OK ||
      gr_shoot_flow (s, mom, target, NULL, NULL, 0, NULL, err, sizeof err) != GR_OK)
    g_error ("cannot make the target: %s", err);
  gr_shoot_free (s);
  g_free (mom);
}

static void
make_data (void)
{
  char err[256];
  tmpdir = g_dir_make_tmp ("georeg-landmarkshoot-XXXXXX", NULL);
  td_curve2d (N2, 6.0, q2);
  td_bunny3d (N3, 4.0, q3);
  shoot_known (q2, N2, 2, 0.15, t2);
  shoot_known (q3, N3, 3, 0.12, t3);
  atlas2 = tmp_path ("atlas2.csv");
  atlas3 = tmp_path ("atlas3.csv");
  if (gr_pointset_save_csv (atlas2, q2, N2, 2, err, sizeof err) != GR_OK ||
      gr_pointset_save_csv (atlas3, q3, N3, 3, err, sizeof err) != GR_OK)
    g_error ("%s", err);
}

static void
load_core_plugins (void)
{
  const gchar *env = g_getenv ("GST_PLUGIN_SYSTEM_PATH");
  gchar **dirs = g_strsplit (env ? env : "", G_SEARCHPATH_SEPARATOR_S, -1);
  const gchar *fallback[] = { "/usr/lib/x86_64-linux-gnu/gstreamer-1.0",
    "/usr/lib/aarch64-linux-gnu/gstreamer-1.0", "/usr/lib64/gstreamer-1.0",
    "/usr/lib/gstreamer-1.0", NULL
  };
  int found = 0;
  for (int pass = 0; pass < 2 && found < 2; pass++) {
    const gchar *const *list = pass == 0 ? (const gchar * const *) dirs : fallback;
    for (int i = 0; list[i] && found < 2; i++) {
      if (!*list[i])
        continue;
      found = 0;
      const gchar *names[] = { "libgstcoreelements.so", "libgstmultifile.so" };
      for (int k = 0; k < 2; k++) {
        gchar *f = g_build_filename (list[i], names[k], NULL);
        GError *e = NULL;
        GstPlugin *pl = g_file_test (f, G_FILE_TEST_EXISTS) ?
            gst_plugin_load_file (f, &e) : NULL;
        if (pl) {
          found++;
          gst_object_unref (pl);
        }
        g_clear_error (&e);
        g_free (f);
      }
    }
  }
  g_strfreev (dirs);
  have_core = found == 2 && gst_element_factory_find ("filesrc") &&
      gst_element_factory_find ("multifilesrc");
  if (!have_core)
    g_printerr ("core elements (filesrc, multifilesrc) not found: pipeline tests "
        "skipped\n");
}

static GstBuffer *
pointset_buffer (const double *xyz, size_t n, int dim)
{
  GstBuffer *b = gst_buffer_new_allocate (NULL, n * dim * 4, NULL);
  GstMapInfo map;
  gst_buffer_map (b, &map, GST_MAP_WRITE);
  for (size_t i = 0; i < n * dim; i++) {
    gfloat f = (gfloat) xyz[i];
    guint32 u;
    memcpy (&u, &f, 4);
    u = GUINT32_TO_LE (u);
    memcpy (map.data + 4 * i, &u, 4);
  }
  gst_buffer_unmap (b, &map);
  return b;
}

static double *
buffer_points (GstBuffer * b, int dim, size_t * n)
{
  GstMapInfo map;
  gst_buffer_map (b, &map, GST_MAP_READ);
  *n = map.size / (4 * dim);
  double *v = g_new (double, *n * dim);
  for (size_t i = 0; i < *n * dim; i++) {
    guint32 u;
    gfloat f;
    memcpy (&u, map.data + 4 * i, 4);
    u = GUINT32_FROM_LE (u);
    memcpy (&f, &u, 4);
    v[i] = f;
  }
  gst_buffer_unmap (b, &map);
  return v;
}

static GstHarness *
new_harness (const gchar * atlas, int dim, const gchar * extra)
{
  gchar *desc = g_strdup_printf ("landmarkshoot template-location=\"%s\" backend=cpu "
      "time-steps=20 lambda=1e4 max-iterations=300 %s", atlas, extra ? extra : "");
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  gchar *caps = g_strdup_printf ("application/x-pointset,dimensions=%d", dim);
  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  return h;
}

static GError *
pop_error (GstBus * bus)
{
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  GError *err = NULL;
  if (msg) {
    gst_message_parse_error (msg, &err, NULL);
    gst_message_unref (msg);
  }
  return err;
}

/* ------------------------------------------------------------------------- */

GST_START_TEST (test_properties)
{
  GstElement *e = gst_element_factory_make ("landmarkshoot", NULL);
  fail_unless (e != NULL);
  gdouble sigma, lambda, gtol, ftol;
  gint steps, integ, prec, backend, dev, output;
  guint maxit, interval;
  gboolean warm, post;
  gchar *loc;
  g_object_get (e, "sigma", &sigma, "time-steps", &steps, "lambda", &lambda,
      "max-iterations", &maxit, "gradient-tolerance", &gtol, "function-tolerance", &ftol,
      "integrator", &integ, "precision", &prec, "backend", &backend, "cuda-device-id",
      &dev, "output", &output, "warm-start", &warm, "post-messages", &post,
      "progress-interval", &interval, "template-location", &loc, NULL);
  fail_unless_equals_float (sigma, 1.5);
  fail_unless_equals_int (steps, 40);
  fail_unless_equals_float (lambda, 5e5);
  fail_unless_equals_int (maxit, 400);
  fail_unless_equals_float (gtol, 1e-6);
  fail_unless_equals_float (ftol, 1e-9);
  fail_unless_equals_int (integ, GR_SHOOT_EULER);
  fail_unless_equals_int (prec, GR_SHOOT_FLOAT32);
  fail_unless_equals_int (backend, GR_BACKEND_AUTO);
  fail_unless_equals_int (dev, -1);
  fail_unless_equals_int (output, 0);
  fail_unless (!warm && post);
  fail_unless_equals_int (interval, 10);
  fail_unless (loc == NULL);

  gst_util_set_object_arg (G_OBJECT (e), "integrator", "ralston");
  gst_util_set_object_arg (G_OBJECT (e), "precision", "float64");
  gst_util_set_object_arg (G_OBJECT (e), "backend", "cpu");
  gst_util_set_object_arg (G_OBJECT (e), "output", "extra-points");
  g_object_set (e, "sigma", 2.5, "time-steps", 12, "template-location", "/tmp/a.csv",
      NULL);
  g_object_get (e, "integrator", &integ, "precision", &prec, "backend", &backend,
      "output", &output, "sigma", &sigma, "time-steps", &steps, "template-location",
      &loc, NULL);
  fail_unless_equals_int (integ, GR_SHOOT_RALSTON);
  fail_unless_equals_int (prec, GR_SHOOT_FLOAT64);
  fail_unless_equals_int (backend, GR_BACKEND_CPU);
  fail_unless_equals_int (output, 1);
  fail_unless_equals_float (sigma, 2.5);
  fail_unless_equals_int (steps, 12);
  fail_unless_equals_string (loc, "/tmp/a.csv");
  g_free (loc);

  /* the enum nicks are kebab-case and documented */
  GParamSpec *ps = g_object_class_find_property (G_OBJECT_GET_CLASS (e), "precision");
  GEnumClass *ec = g_type_class_ref (ps->value_type);
  fail_unless (g_enum_get_value_by_nick (ec, "float32-f64acc") != NULL);
  g_type_class_unref (ec);
  /* ranges: time-steps >= 2, sigma > 0 */
  ps = g_object_class_find_property (G_OBJECT_GET_CLASS (e), "time-steps");
  fail_unless_equals_int (G_PARAM_SPEC_INT (ps)->minimum, 2);
  ps = g_object_class_find_property (G_OBJECT_GET_CLASS (e), "sigma");
  fail_unless (G_PARAM_SPEC_DOUBLE (ps)->minimum > 0);
  gst_object_unref (e);

  /* caps: point sets of 2 or 3 dimensions only */
  e = gst_element_factory_make ("landmarkshoot", NULL);
  GstPad *sink = gst_element_get_static_pad (e, "sink");
  GstCaps *c3 = gst_caps_from_string ("application/x-pointset,dimensions=3");
  GstCaps *c4 = gst_caps_from_string ("application/x-pointset,dimensions=4");
  GstCaps *v = gst_caps_from_string ("video/x-raw,format=GRAY8,width=4,height=4");
  fail_unless (gst_pad_query_accept_caps (sink, c3));
  fail_if (gst_pad_query_accept_caps (sink, c4));
  fail_if (gst_pad_query_accept_caps (sink, v));
  gst_caps_unref (c3);
  gst_caps_unref (c4);
  gst_caps_unref (v);
  gst_object_unref (sink);
  gst_object_unref (e);
}
GST_END_TEST;

static void
check_registration (const gchar * atlas, const double *q, const double *t, size_t n,
    int dim, const gchar * extra)
{
  GstHarness *h = new_harness (atlas, dim, extra);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  GstBuffer *in = pointset_buffer (t, n, dim);
  GST_BUFFER_PTS (in) = 5 * GST_SECOND;
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull (h);
  fail_unless (out != NULL);

  /* the output caps are the input's */
  GstCaps *oc = gst_pad_get_current_caps (h->sinkpad);
  gint odim = 0;
  fail_unless (gst_structure_get_int (gst_caps_get_structure (oc, 0), "dimensions",
          &odim));
  fail_unless_equals_int (odim, dim);
  gst_caps_unref (oc);

  size_t nout;
  double *q1 = buffer_points (out, dim, &nout);
  fail_unless_equals_int (nout, n);
  double before = td_mean_distance (q, t, n, dim);
  double after = td_mean_distance (q1, t, n, dim);
  GST_INFO ("%dD: mean distance %.4f -> %.5f", dim, before, after);
  fail_unless (before > 0.3, "the known momentum moves the template (%g)", before);
  fail_unless (after <= 0.05 * before, "recovered to %.2f%% of %g", 100 * after / before,
      before);

  GstLandmarkShootMeta *m = gst_buffer_get_landmark_shoot_meta (out);
  fail_unless (m != NULL);
  fail_unless_equals_int (m->n_points, n);
  fail_unless_equals_int (m->dimensions, dim);
  fail_unless (m->momentum != NULL);
  double pn = 0;
  for (size_t i = 0; i < n * dim; i++)
    pn += m->momentum[i] * m->momentum[i];
  fail_unless (pn > 0 && isfinite (pn), "non-zero momentum");
  fail_unless (m->iterations > 0 && m->evaluations >= m->iterations);
  fail_unless (m->kinetic_energy > 0 && isfinite (m->kinetic_energy));
  fail_unless (fabs (m->loss - (m->kinetic_energy + 0.5e4 * m->mismatch)) <=
      1e-9 * m->loss, "loss = kinetic + lambda/2 mismatch");
  fail_unless (fabs (m->mean_distance - after) < 1e-4 && fabs (m->mean_distance_before -
          before) < 1e-4, "meta distances");
  fail_unless (m->gradient_norm >= 0 && m->run_time > 0);
  fail_unless_equals_int (m->backend, GR_BACKEND_CPU);
  /* the meta survives a copy (no tags) */
  GstBuffer *copy = gst_buffer_copy (out);
  GstLandmarkShootMeta *mc = gst_buffer_get_landmark_shoot_meta (copy);
  fail_unless (mc && mc->momentum != m->momentum && mc->momentum[0] == m->momentum[0] &&
      mc->iterations == m->iterations);
  gst_buffer_unref (copy);

  /* messages: progress start .. complete, then the element message */
  int starts = 0, continues = 0, completes = 0, results = 0;
  GstMessage *msg;
  while ((msg = gst_bus_pop (bus))) {
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_PROGRESS) {
      GstProgressType type;
      gchar *code, *text;
      gst_message_parse_progress (msg, &type, &code, &text);
      fail_unless_equals_string (code, "landmarkshoot");
      if (type == GST_PROGRESS_TYPE_START) {
        starts++;
        fail_unless (strstr (text, "cpu backend") != NULL, "backend named: %s", text);
      }
      continues += type == GST_PROGRESS_TYPE_CONTINUE;
      completes += type == GST_PROGRESS_TYPE_COMPLETE;
      fail_if (completes && type == GST_PROGRESS_TYPE_CONTINUE, "continue after complete");
      g_free (code);
      g_free (text);
    } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT &&
        gst_message_has_name (msg, "landmarkshoot")) {
      const GstStructure *s = gst_message_get_structure (msg);
      guint it, pts;
      guint64 ts;
      gdouble md, rt;
      gboolean conv;
      const gchar *be = gst_structure_get_string (s, "backend");
      fail_unless (gst_structure_get (s, "iterations", G_TYPE_UINT, &it, "points",
              G_TYPE_UINT, &pts, "timestamp", G_TYPE_UINT64, &ts, "mean-distance",
              G_TYPE_DOUBLE, &md, "run-time", G_TYPE_DOUBLE, &rt, "converged",
              G_TYPE_BOOLEAN, &conv, NULL));
      fail_unless_equals_int (it, m->iterations);
      fail_unless_equals_int (pts, n);
      fail_unless_equals_uint64 (ts, 5 * GST_SECOND);
      fail_unless_equals_float (md, m->mean_distance);
      fail_unless_equals_string (be, "cpu");
      fail_unless (gst_structure_has_field (s, "stop-reason"));
      fail_unless_equals_int (conv, m->converged);
      fail_unless_equals_int (completes, 1);
      results++;
    }
    gst_message_unref (msg);
  }
  fail_unless_equals_int (starts, 1);
  fail_unless_equals_int (completes, 1);
  fail_unless (continues >= 1, "progress while running");
  fail_unless_equals_int (results, 1);

  g_free (q1);
  gst_buffer_unref (out);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_START_TEST (test_register_2d)
{
  check_registration (atlas2, q2, t2, N2, 2, "progress-interval=5");
}
GST_END_TEST;

GST_START_TEST (test_register_3d)
{
  check_registration (atlas3, q3, t3, N3, 3, "integrator=ralston");
}
GST_END_TEST;

/* batch=3 with 5 targets: 3 results after the third push, the last 2 at EOS; each
 * result (points, meta, timestamp) the same as with batch=1, in order */
GST_START_TEST (test_batch)
{
  enum { TARGETS = 5 };
  GstBuffer *ref[TARGETS];
  double tk[TARGETS][N2 * 2];
  for (int k = 0; k < TARGETS; k++)
    for (int i = 0; i < N2 * 2; i++)
      tk[k][i] = q2[i] + (0.3 + 0.15 * k) * (t2[i] - q2[i]);
  for (int pass = 0; pass < 2; pass++) {
    gchar *desc = g_strdup_printf ("landmarkshoot template-location=\"%s\" backend=cpu "
        "time-steps=12 lambda=1e4 max-iterations=60 batch=%d", atlas2, pass ? 3 : 1);
    GstHarness *h = gst_harness_new_parse (desc);
    g_free (desc);
    gst_harness_set_src_caps_str (h, "application/x-pointset,dimensions=2");
    for (int k = 0; k < TARGETS; k++) {
      GstBuffer *in = pointset_buffer (tk[k], N2, 2);
      GST_BUFFER_PTS (in) = k * GST_SECOND;
      fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
      if (pass == 1)
        fail_unless_equals_int (gst_harness_buffers_received (h), k < 2 ? 0 : 3);
    }
    gst_harness_push_event (h, gst_event_new_eos ());
    fail_unless_equals_int (gst_harness_buffers_received (h), TARGETS);
    for (int k = 0; k < TARGETS; k++) {
      GstBuffer *out = gst_harness_pull (h);
      fail_unless_equals_uint64 (GST_BUFFER_PTS (out), k * GST_SECOND);
      GstLandmarkShootMeta *m = gst_buffer_get_landmark_shoot_meta (out);
      fail_unless (m != NULL && m->iterations > 0, "result %d has its meta", k);
      size_t n;
      double *v = buffer_points (out, 2, &n);
      double before = td_mean_distance (q2, tk[k], N2, 2);
      double after = td_mean_distance (v, tk[k], N2, 2);
      fail_unless (after <= 0.1 * before, "target %d: %g -> %g", k, before, after);
      g_free (v);
      if (pass == 0) {
        ref[k] = out;
        continue;
      }
      GstLandmarkShootMeta *mr = gst_buffer_get_landmark_shoot_meta (ref[k]);
      fail_unless (m->loss == mr->loss && m->iterations == mr->iterations,
          "target %d: batched loss %.17g (%u it), alone %.17g (%u it)", k, m->loss,
          m->iterations, mr->loss, mr->iterations);
      GstMapInfo a;
      gst_buffer_map (ref[k], &a, GST_MAP_READ);
      fail_unless (gst_buffer_memcmp (out, 0, a.data, a.size) == 0, "target %d points", k);
      gst_buffer_unmap (ref[k], &a);
      gst_buffer_unref (ref[k]);
      gst_buffer_unref (out);
    }
    gst_harness_teardown (h);
  }
}
GST_END_TEST;

/* the template file itself as extra points: carried along, they land where the
 * landmarks land */
GST_START_TEST (test_extra_points)
{
  gchar *extra = g_strdup_printf ("extra-location=\"%s\" output=extra-points", atlas2);
  GstHarness *h = new_harness (atlas2, 2, extra);
  GstHarness *h2 = new_harness (atlas2, 2, NULL);
  g_free (extra);
  fail_unless_equals_int (gst_harness_push (h, pointset_buffer (t2, N2, 2)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_push (h2, pointset_buffer (t2, N2, 2)), GST_FLOW_OK);
  GstBuffer *o1 = gst_harness_pull (h), *o2 = gst_harness_pull (h2);
  size_t n1, n2;
  double *a = buffer_points (o1, 2, &n1), *b = buffer_points (o2, 2, &n2);
  fail_unless_equals_int (n1, N2);
  fail_unless_equals_int (n2, N2);
  double e = 0;
  for (int i = 0; i < N2 * 2; i++)
    e = fmax (e, fabs (a[i] - b[i]));
  fail_unless (e < 1e-4, "extra points follow the landmarks: %g", e);
  g_free (a);
  g_free (b);
  gst_buffer_unref (o1);
  gst_buffer_unref (o2);
  gst_harness_teardown (h);
  gst_harness_teardown (h2);
}
GST_END_TEST;

static void
expect_stream_error (GstBuffer * in, const gchar * caps, const gchar * needle,
    GstFlowReturn expect_ret)
{
  gchar *desc = g_strdup_printf ("landmarkshoot backend=cpu max-iterations=5 "
      "template-location=\"%s\"", atlas3);
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  gst_harness_set_src_caps_str (h, caps);
  GstFlowReturn ret = gst_harness_push (h, in);
  fail_unless_equals_int (ret, expect_ret);
  GError *err = pop_error (bus);
  fail_unless (err != NULL, "no error for %s", needle);
  fail_unless (g_error_matches (err, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT), "%s",
      err->message);
  fail_unless (strstr (err->message, needle) != NULL, "'%s' lacks '%s'", err->message,
      needle);
  GST_INFO ("refused: %s", err->message);
  g_error_free (err);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_START_TEST (test_bad_input)
{
  const gchar *c3 = "application/x-pointset,dimensions=3";
  /* count mismatch */
  expect_stream_error (pointset_buffer (t3, N3 - 1, 3), c3, "count mismatch",
      GST_FLOW_ERROR);
  /* NaN and Inf */
  double bad[N3 * 3];
  memcpy (bad, t3, sizeof bad);
  bad[7] = NAN;
  expect_stream_error (pointset_buffer (bad, N3, 3), c3, "point 2 has a non-finite "
      "coordinate (NaN)", GST_FLOW_ERROR);
  bad[7] = t3[7];
  bad[N3 * 3 - 1] = INFINITY;
  expect_stream_error (pointset_buffer (bad, N3, 3), c3, "(Inf)", GST_FLOW_ERROR);
  /* empty set, one point */
  expect_stream_error (gst_buffer_new (), c3, "Empty point set", GST_FLOW_ERROR);
  expect_stream_error (pointset_buffer (t3, 1, 3), c3, "only one point", GST_FLOW_ERROR);
  /* a buffer that is not a whole number of points */
  GstBuffer *odd = gst_buffer_new_allocate (NULL, 13, NULL);
  gst_buffer_memset (odd, 0, 0, 13);
  expect_stream_error (odd, c3, "not a whole number", GST_FLOW_ERROR);
  /* 2-D targets for a 3-D template */
  expect_stream_error (pointset_buffer (t2, N2, 2), "application/x-pointset,dimensions=2",
      "Dimension mismatch", GST_FLOW_NOT_NEGOTIATED);
}
GST_END_TEST;

/* Brings a lone element to PAUSED and returns the error it posted (or NULL). */
static GError *
start_error (GstElement * e)
{
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (e, bus);
  GstStateChangeReturn ret = gst_element_set_state (e, GST_STATE_PAUSED);
  GError *err = pop_error (bus);
  if (err)
    fail_unless_equals_int (ret, GST_STATE_CHANGE_FAILURE);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  return err;
}

GST_START_TEST (test_bad_template)
{
  GstElement *e = gst_element_factory_make ("landmarkshoot", NULL);
  g_object_set (e, "backend", GR_BACKEND_CPU, NULL);
  GError *err = start_error (e);
  fail_unless (err && g_error_matches (err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_NOT_FOUND));
  fail_unless (strstr (err->message, "template-location") != NULL, "%s", err->message);
  g_clear_error (&err);

  g_object_set (e, "template-location", "/nonexistent/atlas.csv", NULL);
  err = start_error (e);
  fail_unless (err && g_error_matches (err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_OPEN_READ));
  fail_unless (strstr (err->message, "/nonexistent/atlas.csv") != NULL, "%s",
      err->message);
  g_clear_error (&err);

  gchar *bad = tmp_path ("bad.csv");
  write_file (bad, "x,y,z\n1,2,3\n4,five,6\n");
  g_object_set (e, "template-location", bad, NULL);
  err = start_error (e);
  fail_unless (err && g_error_matches (err, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_READ));
  fail_unless (strstr (err->message, "line 3") != NULL, "%s", err->message);
  g_clear_error (&err);

  write_file (bad, "1,2,3\n");
  err = start_error (e);
  fail_unless (err && strstr (err->message, "only one point") != NULL);
  g_clear_error (&err);

  write_file (bad, "");
  err = start_error (e);
  fail_unless (err && strstr (err->message, "empty") != NULL, "%s", err->message);
  g_clear_error (&err);
  g_free (bad);

  /* output=extra-points without extra-location */
  g_object_set (e, "template-location", atlas2, NULL);
  gst_util_set_object_arg (G_OBJECT (e), "output", "extra-points");
  err = start_error (e);
  fail_unless (err && g_error_matches (err, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_SETTINGS));
  g_clear_error (&err);
  gst_util_set_object_arg (G_OBJECT (e), "output", "landmarks");

  /* backend=cuda where no GPU is usable */
  if (gr_cuda_device_count () == 0) {
    gst_util_set_object_arg (G_OBJECT (e), "backend", "cuda");
    err = start_error (e);
    fail_unless (err && g_error_matches (err, GST_RESOURCE_ERROR,
            GST_RESOURCE_ERROR_SETTINGS));
    GST_INFO ("backend=cuda without a GPU: %s", err->message);
    g_clear_error (&err);
  }
  gst_object_unref (e);
}
GST_END_TEST;

/* pointsetparse: stream (chunks until EOS), per-buffer, formats, errors */
GST_START_TEST (test_parse_element)
{
  GstHarness *h = gst_harness_new_parse ("pointsetparse mode=stream");
  gst_harness_set_src_caps_str (h, "text/csv");
  const gchar *part1 = "x,y,z\n1,2,3\n4,5", *part2 = ",6\n7,8,9\n";
  gst_harness_push (h, gst_buffer_new_memdup (part1, strlen (part1)));
  gst_harness_push (h, gst_buffer_new_memdup (part2, strlen (part2)));
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  gst_harness_push_event (h, gst_event_new_eos ());
  GstBuffer *out = gst_harness_pull (h);
  size_t n;
  double *v = buffer_points (out, 3, &n);
  fail_unless_equals_int (n, 3);
  fail_unless (v[0] == 1 && v[5] == 6 && v[8] == 9);
  g_free (v);
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  GstCaps *want = gst_caps_from_string ("application/x-pointset,dimensions=3");
  fail_unless (gst_caps_is_equal (caps, want));
  gst_caps_unref (caps);
  gst_caps_unref (want);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  /* per-buffer: every buffer a whole file, dimensions may change between them */
  h = gst_harness_new_parse ("pointsetparse mode=per-buffer");
  gst_harness_set_src_caps_str (h, "text/csv");
  const gchar *ply = "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\n"
      "property float y\nend_header\n1 2\n3 4\n";
  const gchar *csv3 = "0 0 1\n1 0 1\n0 1 1\n";
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_memdup (ply,
              strlen (ply))), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_memdup (csv3,
              strlen (csv3))), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless_equals_int (gst_buffer_get_size (out), 2 * 2 * 4);
  gst_buffer_unref (out);
  out = gst_harness_pull (h);
  fail_unless_equals_int (gst_buffer_get_size (out), 3 * 3 * 4);
  fail_unless_equals_int (GST_BUFFER_OFFSET (out), 1);
  caps = gst_pad_get_current_caps (h->sinkpad);
  gint d;
  gst_structure_get_int (gst_caps_get_structure (caps, 0), "dimensions", &d);
  fail_unless_equals_int (d, 3);
  gst_caps_unref (caps);
  gst_buffer_unref (out);

  /* a malformed file: STREAM DECODE error naming the line */
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  const gchar *bad = "1 2\n3 nan\n";
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_memdup (bad,
              strlen (bad))), GST_FLOW_ERROR);
  GError *err = pop_error (bus);
  fail_unless (err && g_error_matches (err, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE));
  fail_unless (strstr (err->message, "line 2") != NULL, "%s", err->message);
  g_error_free (err);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);

  /* the default mode without an upstream size (a pipe: the harness answers no BYTES
   * duration): chunks are gathered to EOS and give one set, never one set per chunk */
  h = gst_harness_new_parse ("pointsetparse");
  gst_harness_set_src_caps_str (h, "text/csv");
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_memdup (part1,
              strlen (part1))), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_memdup (part2,
              strlen (part2))), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  gst_harness_push_event (h, gst_event_new_eos ());
  fail_unless_equals_int (gst_harness_buffers_received (h), 1);
  out = gst_harness_pull (h);
  v = buffer_points (out, 3, &n);
  fail_unless_equals_int (n, 3);
  fail_unless (v[3] == 4 && v[4] == 5 && v[5] == 6);
  g_free (v);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  /* a coordinate beyond float32: a clear error, never inf */
  h = gst_harness_new_parse ("pointsetparse mode=per-buffer");
  gst_harness_set_src_caps_str (h, "text/csv");
  bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  bad = "1 2\n3 1e300\n";
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_memdup (bad,
              strlen (bad))), GST_FLOW_ERROR);
  err = pop_error (bus);
  fail_unless (err && g_error_matches (err, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE));
  fail_unless (strstr (err->message, "does not fit float32") != NULL, "%s", err->message);
  g_error_free (err);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);

  /* stream mode, EOS without any data: an error, not a silent nothing */
  h = gst_harness_new_parse ("pointsetparse");
  bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  gst_harness_set_src_caps_str (h, "text/csv");
  gst_harness_push_event (h, gst_event_new_eos ());
  err = pop_error (bus);
  fail_unless (err && strstr (err->message, "empty") != NULL);
  g_error_free (err);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_enc_element)
{
  GstHarness *h = gst_harness_new_parse ("pointsetenc");
  gst_harness_set_src_caps_str (h, "application/x-pointset,dimensions=2");
  double p[4] = { 0.5, -1.25, 3e-7, 1e6 };
  GstBuffer *in = pointset_buffer (p, 2, 2);
  GST_BUFFER_PTS (in) = 42;
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull (h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 42);
  GstMapInfo map;
  gst_buffer_map (out, &map, GST_MAP_READ);
  gchar *text = g_strndup ((const gchar *) map.data, map.size);
  gst_buffer_unmap (out, &map);
  fail_unless (g_str_has_prefix (text, "x,y\n0.5,-1.25\n"), "%s", text);
  GrPointSet ps;
  char e[256];
  fail_unless (gr_pointset_parse (text, strlen (text), GR_POINTSET_AUTO, 0, &ps, e,
          sizeof e) == GR_OK && ps.n == 2 && ps.xyz[3] == 1e6, "%s", e);
  fail_unless ((float) ps.xyz[2] == (float) 3e-7);
  gr_pointset_clear (&ps);
  g_free (text);
  gst_buffer_unref (out);
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (gst_structure_has_name (gst_caps_get_structure (caps, 0), "text/csv"));
  gst_caps_unref (caps);
  /* a non-finite coordinate (from an appsrc, a filter): refused, no "inf" written */
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  double pinf[4] = { 0.5, -1.25, INFINITY, 1e6 };
  fail_unless_equals_int (gst_harness_push (h, pointset_buffer (pinf, 2, 2)),
      GST_FLOW_ERROR);
  GError *perr = pop_error (bus);
  fail_unless (perr && g_error_matches (perr, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT));
  fail_unless (strstr (perr->message, "point 1") != NULL, "%s", perr->message);
  g_error_free (perr);
  fail_unless_equals_int (gst_harness_buffers_received (h), 1);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  /* header=false */
  GstElement *enc = gst_harness_find_element (h, "pointsetenc");
  g_object_set (enc, "header", FALSE, NULL);
  gst_object_unref (enc);
  fail_unless_equals_int (gst_harness_push (h, pointset_buffer (p, 2, 2)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  gst_buffer_map (out, &map, GST_MAP_READ);
  fail_unless (map.size > 0 && map.data[0] == '0');
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}
GST_END_TEST;

static gboolean
run_pipeline (const gchar * desc, gchar ** error)
{
  GError *perr = NULL;
  GstElement *pipe = gst_parse_launch (desc, &perr);
  if (!pipe) {
    *error = g_strdup (perr ? perr->message : "parse failed");
    g_clear_error (&perr);
    return FALSE;
  }
  g_clear_error (&perr);
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus (pipe);
  GstMessage *msg = gst_bus_timed_pop_filtered (bus, 300 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  gboolean ok = msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS;
  if (!ok) {
    GError *e = NULL;
    if (msg)
      gst_message_parse_error (msg, &e, NULL);
    *error = g_strdup (e ? e->message : "timeout");
    g_clear_error (&e);
  }
  if (msg)
    gst_message_unref (msg);
  gst_object_unref (bus);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (pipe);
  return ok;
}

/* The README pipeline, with default element settings. */
GST_START_TEST (test_pipeline_files)
{
  if (!have_core) {
    GST_WARNING ("skipped: no filesrc in the system plugin folder");
    return;
  }
  char err[256];
  gchar *subject = tmp_path ("subject.csv"), *warped = tmp_path ("warped.csv");
  fail_unless (gr_pointset_save_csv (subject, t2, N2, 2, err, sizeof err) == GR_OK);
  gchar *desc = g_strdup_printf ("filesrc location=\"%s\" ! pointsetparse ! "
      "landmarkshoot template-location=\"%s\" ! pointsetenc ! filesink location=\"%s\"",
      subject, atlas2, warped);
  gchar *perr = NULL;
  gboolean ok = run_pipeline (desc, &perr);
  fail_unless (ok, "%s: %s", desc, perr);
  g_free (desc);
  GrPointSet ps;
  fail_unless (gr_pointset_load (warped, GR_POINTSET_AUTO, 0, &ps, err, sizeof err) ==
      GR_OK, "%s", err);
  fail_unless_equals_int (ps.n, N2);
  fail_unless_equals_int (ps.dim, 2);
  double before = td_mean_distance (q2, t2, N2, 2);
  double after = td_mean_distance (ps.xyz, t2, N2, 2);
  GST_INFO ("pipeline: mean distance %.4f -> %.5f", before, after);
  fail_unless (after <= 0.05 * before, "%g -> %g", before, after);
  gr_pointset_clear (&ps);

  /* a malformed subject file fails the pipeline with the parser's message */
  write_file (subject, "x,y\n1,2\n3,oops\n");
  desc = g_strdup_printf ("filesrc location=\"%s\" ! pointsetparse ! landmarkshoot "
      "template-location=\"%s\" ! pointsetenc ! filesink location=\"%s\"", subject,
      atlas2, warped);
  g_free (perr);
  perr = NULL;
  fail_if (run_pipeline (desc, &perr));
  fail_unless (perr && strstr (perr, "oops") != NULL, "%s", perr);
  g_free (perr);
  g_free (desc);
  g_free (subject);
  g_free (warped);
}
GST_END_TEST;

/* A point set read from a pipe in small chunks (fdsrc knows no size): the default mode
 * gives exactly one set, the whole file. */
GST_START_TEST (test_pipeline_pipe)
{
  if (!have_core) {
    GST_WARNING ("skipped: no fdsrc in the system plugin folder");
    return;
  }
  char err[256];
  size_t len = 0;
  char *text = gr_pointset_format_csv (t2, NULL, N2, 2, &len);
  fail_unless (text != NULL && len < 60000, "fits a pipe buffer");
  int fds[2];
  fail_unless (pipe (fds) == 0);
  fail_unless (write (fds[1], text, len) == (ssize_t) len);
  close (fds[1]);
  free (text);
  gchar *outp = tmp_path ("from-pipe.csv");
  gchar *desc = g_strdup_printf ("fdsrc fd=%d blocksize=7 ! pointsetparse ! pointsetenc ! "
      "filesink location=\"%s\"", fds[0], outp);
  gchar *perr = NULL;
  fail_unless (run_pipeline (desc, &perr), "%s: %s", desc, perr);
  close (fds[0]);
  GrPointSet ps;
  fail_unless (gr_pointset_load (outp, GR_POINTSET_AUTO, 0, &ps, err, sizeof err) ==
      GR_OK, "%s", err);
  /* one CSV document: a second set would have put a header line mid-file */
  fail_unless_equals_int (ps.n, N2);
  for (int i = 0; i < N2 * 2; i++)
    fail_unless ((float) ps.xyz[i] == (float) t2[i], "value %d", i);
  gr_pointset_clear (&ps);
  g_free (perr);
  g_free (desc);
  g_free (outp);
}
GST_END_TEST;

/* The varifold pipelines' meshes: an ellipsoid meshed with 52 vertices (the template,
 * written to atlas) and the same shape under the known smooth deformation meshed with
 * 68 others (the target, written to mesh), as PLY with faces. */
static void
varifold_meshes (TdMesh * tm, TdMesh * sm, const gchar * atlas, const gchar * mesh)
{
  *tm = td_ellipsoid (6, 10, 5.0, 4.0, 3.5, 0.0);
  *sm = td_ellipsoid (7, 11, 5.0, 4.0, 3.5, 0.2);
  td_deform (sm->v, sm->nv);
  char *a = gr_pointset_format_ply (tm->v, tm->nv, 3, tm->c, tm->nc, 3, NULL);
  char *b = gr_pointset_format_ply (sm->v, sm->nv, 3, sm->c, sm->nc, 3, NULL);
  write_file (atlas, a);
  write_file (mesh, b);
  free (a);
  free (b);
}

/* The command of docs/landmarkshoot.md as written (no property beyond the docs', so the
 * defaults: sigma 1.5, data-sigma = sigma, T 40, lambda 5e5, 400 iterations; backend
 * auto), on an ellipsoid meshed with 52 vertices matched to the same smooth shape under
 * the known deformation meshed with 68 others: the symmetric vertex-to-mesh Hausdorff
 * distance falls from 3.25 to 0.25 on the CPU (7.6%; the floor is these coarse meshes'
 * flat triangles: test_varifold's 288 / 377-vertex pair reaches 2.9%). */
GST_START_TEST (test_pipeline_varifold_docs)
{
  if (!have_core) {
    GST_WARNING ("skipped: no filesrc in the system plugin folder");
    return;
  }
  TdMesh tm, sm;
  gchar *atlas = tmp_path ("docs-atlas.ply"), *mesh = tmp_path ("docs-mesh.ply"),
      *warped = tmp_path ("docs-warped.ply");
  varifold_meshes (&tm, &sm, atlas, mesh);
  gchar *desc = g_strdup_printf ("filesrc location=\"%s\" ! pointsetparse ! landmarkshoot "
      "template-location=\"%s\" data-term=varifold ! pointsetenc ! filesink "
      "location=\"%s\"", mesh, atlas, warped);
  gchar *perr = NULL;
  fail_unless (run_pipeline (desc, &perr), "%s: %s", desc, perr);
  char err[256];
  GrPointSet ps;
  fail_unless (gr_pointset_load (warped, GR_POINTSET_AUTO, 0, &ps, err, sizeof err) ==
      GR_OK, "%s", err);
  fail_unless (ps.n == tm.nv && ps.dim == 3 && ps.cell_size == 3 && ps.ncells == tm.nc);
  TdMesh w = { ps.n, ps.ncells, ps.xyz, ps.cells };
  const double h0 = td_hausdorff (&tm, &sm), h1 = td_hausdorff (&w, &sm);
  GST_INFO ("docs pipeline: Hausdorff %.4f -> %.4f (%.1f%%)", h0, h1, 100 * h1 / h0);
  fail_unless (h1 <= 0.10 * h0, "docs pipeline: Hausdorff %.4f -> %.4f", h0, h1);
  gr_pointset_clear (&ps);
  td_mesh_free (&tm);
  td_mesh_free (&sm);
  g_free (desc);
  g_free (perr);
  g_free (atlas);
  g_free (mesh);
  g_free (warped);
}
GST_END_TEST;

/* The varifold pipeline of docs/landmarkshoot.md: a mesh matched to a template mesh
 * meshed differently (no correspondence, other vertex count), written back as PLY with
 * the template's faces. */
GST_START_TEST (test_pipeline_varifold)
{
  if (!have_core) {
    GST_WARNING ("skipped: no filesrc in the system plugin folder");
    return;
  }
  TdMesh tm, sm;
  gchar *atlas = tmp_path ("atlas.ply"), *mesh = tmp_path ("mesh.ply"),
      *warped = tmp_path ("warped.ply");
  varifold_meshes (&tm, &sm, atlas, mesh);
  gchar *desc = g_strdup_printf ("filesrc location=\"%s\" ! pointsetparse ! landmarkshoot "
      "template-location=\"%s\" data-term=varifold data-sigma=2 sigma=2.5 lambda=300 "
      "time-steps=8 max-iterations=200 ! pointsetenc ! filesink location=\"%s\"", mesh,
      atlas, warped);
  gchar *perr = NULL;
  fail_unless (run_pipeline (desc, &perr), "%s: %s", desc, perr);
  char err[256];
  GrPointSet ps;
  fail_unless (gr_pointset_load (warped, GR_POINTSET_AUTO, 0, &ps, err, sizeof err) ==
      GR_OK, "%s", err);
  fail_unless (ps.format == GR_POINTSET_PLY && ps.n == tm.nv && ps.dim == 3);
  fail_unless (ps.cell_size == 3 && ps.ncells == tm.nc &&
      memcmp (ps.cells, tm.c, sizeof (uint32_t) * 3 * tm.nc) == 0,
      "the template's faces written back");
  /* closer to the target mesh than the template was, in the varifold distance */
  GrVarifoldParams vp = { 3, 3, 2.0, GR_VARIFOLD_UNORIENTED, 1, 0 };
  GrVarifold *v = gr_varifold_new (&vp, sm.v, sm.nv, sm.c, sm.nc, err, sizeof err);
  double d0, d1;
  gr_varifold_distance (v, tm.v, tm.nv, tm.c, tm.nc, &d0, NULL, NULL, 0);
  gr_varifold_distance (v, ps.xyz, ps.n, ps.cells, ps.ncells, &d1, NULL, NULL, 0);
  GST_INFO ("varifold pipeline: d2 %g -> %g", d0, d1);
  fail_unless (d1 <= 0.1 * d0, "varifold d2 %g -> %g", d0, d1);
  gr_pointset_clear (&ps);
  g_free (desc);
  g_free (perr);

  /* backend=cuda: the shooting and the data term on the device (one graph per
   * evaluation, float32): as close; without a usable device, a clear error */
  desc = g_strdup_printf ("filesrc location=\"%s\" ! pointsetparse ! landmarkshoot "
      "template-location=\"%s\" data-term=varifold data-sigma=2 sigma=2.5 lambda=300 "
      "time-steps=8 max-iterations=200 backend=cuda ! pointsetenc ! filesink "
      "location=\"%s\"", mesh, atlas, warped);
  perr = NULL;
  if (gr_cuda_device_count () > 0) {
    fail_unless (run_pipeline (desc, &perr), "%s: %s", desc, perr);
    fail_unless (gr_pointset_load (warped, GR_POINTSET_AUTO, 0, &ps, err, sizeof err) ==
        GR_OK, "%s", err);
    gr_varifold_distance (v, ps.xyz, ps.n, ps.cells, ps.ncells, &d1, NULL, NULL, 0);
    GST_INFO ("varifold pipeline, backend=cuda: d2 %g -> %g", d0, d1);
    fail_unless (d1 <= 0.1 * d0, "backend=cuda: varifold d2 %g -> %g", d0, d1);
    gr_pointset_clear (&ps);
  } else {
    fail_if (run_pipeline (desc, &perr));
    fail_unless (perr && strstr (perr, "CUDA cannot be used") != NULL, "%s", perr);
  }
  gr_varifold_free (v);
  g_free (desc);
  g_free (perr);

  /* a target without connectivity: a clear error */
  gchar *csv = tmp_path ("mesh-points.csv");
  fail_unless (gr_pointset_save_csv (csv, sm.v, sm.nv, 3, err, sizeof err) == GR_OK);
  desc = g_strdup_printf ("filesrc location=\"%s\" ! pointsetparse ! landmarkshoot "
      "template-location=\"%s\" data-term=varifold ! fakesink", csv, atlas);
  perr = NULL;
  fail_if (run_pipeline (desc, &perr));
  fail_unless (perr && strstr (perr, "no triangles") != NULL, "%s", perr);
  g_free (perr);
  g_free (desc);
  /* a template without connectivity: refused at start */
  desc = g_strdup_printf ("filesrc location=\"%s\" ! pointsetparse ! landmarkshoot "
      "template-location=\"%s\" data-term=varifold ! fakesink", mesh, csv);
  perr = NULL;
  fail_if (run_pipeline (desc, &perr));
  fail_unless (perr && strstr (perr, "has none") != NULL, "%s", perr);
  g_free (perr);
  g_free (desc);
  g_free (csv);
  g_free (atlas);
  g_free (mesh);
  g_free (warped);
  td_mesh_free (&tm);
  td_mesh_free (&sm);
}
GST_END_TEST;

/* Many subjects through multifilesrc (one file per buffer, no EOS between files). */
GST_START_TEST (test_pipeline_multifile)
{
  if (!have_core) {
    GST_WARNING ("skipped: no multifilesrc in the system plugin folder");
    return;
  }
  char err[256];
  double t[N2 * 2];
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < N2 * 2; i++)
      t[i] = t2[i] + 0.1 * k * (i % 2 ? 1 : -1);
    gchar *name = g_strdup_printf ("subj%d.csv", k);
    gchar *path = tmp_path (name);
    fail_unless (gr_pointset_save_csv (path, t, N2, 2, err, sizeof err) == GR_OK);
    g_free (name);
    g_free (path);
  }
  gchar *in = tmp_path ("subj%d.csv"), *outp = tmp_path ("out%d.csv");
  gchar *desc = g_strdup_printf ("multifilesrc location=\"%s\" ! pointsetparse ! "
      "landmarkshoot template-location=\"%s\" backend=cpu time-steps=15 lambda=1e4 ! "
      "pointsetenc ! multifilesink location=\"%s\"", in, atlas2, outp);
  gchar *perr = NULL;
  fail_unless (run_pipeline (desc, &perr), "%s: %s", desc, perr);
  for (int k = 0; k < 4; k++) {
    gchar *name = g_strdup_printf ("out%d.csv", k);
    gchar *path = tmp_path (name);
    GrPointSet ps;
    GrStatus st = gr_pointset_load (path, GR_POINTSET_AUTO, 0, &ps, err, sizeof err);
    if (k < 3) {
      fail_unless (st == GR_OK && ps.n == N2, "output %d: %s", k, err);
      for (int i = 0; i < N2 * 2; i++)
        t[i] = t2[i] + 0.1 * k * (i % 2 ? 1 : -1);
      double before = td_mean_distance (q2, t, N2, 2);
      double after = td_mean_distance (ps.xyz, t, N2, 2);
      fail_unless (after <= 0.05 * before, "subject %d: %g -> %g", k, before, after);
    } else {
      fail_unless (st == GR_ERR_IO, "exactly 3 outputs");
    }
    gr_pointset_clear (&ps);
    g_free (name);
    g_free (path);
  }
  g_free (perr);
  g_free (desc);
  g_free (in);
  g_free (outp);
}
GST_END_TEST;

static Suite *
landmarkshoot_suite (void)
{
  Suite *s = suite_create ("landmarkshoot");
  TCase *tc = tcase_create ("general");
  tcase_set_timeout (tc, 600);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_properties);
  tcase_add_test (tc, test_register_2d);
  tcase_add_test (tc, test_register_3d);
  tcase_add_test (tc, test_extra_points);
  tcase_add_test (tc, test_batch);
  tcase_add_test (tc, test_bad_input);
  tcase_add_test (tc, test_bad_template);
  tcase_add_test (tc, test_parse_element);
  tcase_add_test (tc, test_enc_element);
  tcase_add_test (tc, test_pipeline_files);
  tcase_add_test (tc, test_pipeline_pipe);
  tcase_add_test (tc, test_pipeline_varifold);
  tcase_add_test (tc, test_pipeline_varifold_docs);
  tcase_add_test (tc, test_pipeline_multifile);
  return s;
}

static void
remove_tmpdir (void)
{
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

int
main (int argc, char **argv)
{
  gst_check_init (&argc, &argv);
  make_data ();
  load_core_plugins ();
  int failed = gst_check_run_suite (landmarkshoot_suite (), "landmarkshoot", __FILE__);
  if (!failed)
    remove_tmpdir ();
  g_free (atlas2);
  g_free (atlas3);
  g_free (tmpdir);
  return failed ? 1 : 0;
}
