/* Results with a lens (issue 13) in every output: a frame whose registration takes
 * UNDISTORTED pixels (GstNmiRegisterMeta.undistorted, a known Brown-Conrady lens and a
 * known transform) must come out through the full mapping (undistort, then the
 * transform), not the plain transform, in the meta's own mapping, the Python-facing
 * copy, georegexport's GeoJSON and CSV, georegklvenc's KLV, and the GeoTIFF warp of a
 * frame synthesised through the lens, which must line up with the control (the
 * undistorted truth) better than the plain warp does.  And the combined quality: a
 * doubtful coarse result nmiregister started from makes the export doubtful.
 * Exit 77 without GDAL.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#if !GR_HAVE_GDAL
int
main (void)
{
  printf ("SKIP: built without GDAL\n");
  return 77;
}
#else
#include <gdal.h>
#include <cpl_conv.h>

#include "camera.h"
#include "geotiff.h"
#include "klv.h"
#include "georeg-results.h"
#include "gis_test_util.h"

/* a wide lens with strong barrel distortion, principal point off the centre (so the
 * frame centre moves too), a little tangential distortion; OpenCV pixel centres */
static const GrCamera LENS = { FW, FH, 150, 152, 70.0, 52.0, -0.22, 0.04, 0.0, 0.002,
  -0.001
};

static void
lens_array (double l[9])
{
  const double a[9] = { LENS.fx, LENS.fy, LENS.cx, LENS.cy, LENS.k1, LENS.k2, LENS.k3,
    LENS.p1, LENS.p2
  };
  memcpy (l, a, sizeof a);
}

/* The truth: a delivered frame pixel corner -> control pixel corner (undistort with the
 * camera model, then H) */
static void
truth_map (const double H[9], double x, double y, double *X, double *Y)
{
  double u, v;
  fail_unless (gr_camera_undistort (&LENS, x - 0.5, y - 0.5, &u, &v));
  apply (H, u + 0.5, v + 0.5, X, Y);
}

/* A GRAY8 frame as the lens delivers it: every pixel's centre through the truth into
 * the control, bilinear there. */
static GstBuffer *
frame_through_lens (const double H[9])
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, FW * FH, NULL);
  GstMapInfo map;
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (int j = 0; j < FH; j++)
    for (int i = 0; i < FW; i++) {
      double X, Y;
      truth_map (H, i + 0.5, j + 0.5, &X, &Y);
      const double u = fmin (fmax (X - 0.5, 0), CW - 1.001);
      const double v = fmin (fmax (Y - 0.5, 0), CH - 1.001);
      const int iu = (int) u, iv = (int) v;
      const double au = u - iu, av = v - iv;
      const float *p = control.band[0] + (size_t) iv * CW + iu;
      const double top = p[0] + au * (p[1] - p[0]);
      const double bot = p[CW] + au * (p[CW + 1] - p[CW]);
      map.data[j * FW + i] = (guint8) lrint (top + av * (bot - top));
    }
  gst_buffer_unmap (buf, &map);
  return buf;
}

/* The meta nmiregister writes for such a frame: transform H on undistorted pixels,
 * footprint and centre through the lens. */
static GstNmiRegisterMeta *
add_lens_meta (GstBuffer *b, const double H[9], guint flags)
{
  GstNmiRegisterMeta *m = gst_buffer_add_nmi_register_meta (b);
  m->model = 3;
  m->has_transform = TRUE;
  m->flags = flags;
  m->inliers = 42;
  m->matches = 50;
  m->keypoints = 60;
  m->rms = 0.25;
  memcpy (m->frame_to_control, H, 9 * sizeof (double));
  m->undistorted = TRUE;
  lens_array (m->lens);
  const double c[8] = { 0, 0, FW, 0, FW, FH, 0, FH };
  for (int i = 0; i < 4; i++)
    truth_map (H, c[2 * i], c[2 * i + 1], &m->footprint_control[2 * i],
        &m->footprint_control[2 * i + 1]);
  truth_map (H, FW / 2.0, FH / 2.0, &m->center_control[0], &m->center_control[1]);
  return m;
}

/* the test points: corners, centre, top middle */
static const double PTS[6][2] = { {0, 0}, {FW, 0}, {FW, FH}, {0, FH}, {FW / 2.0, FH / 2.0},
{FW / 2.0, 0}
};

GST_START_TEST (test_mapping)
{
  double H[9];
  similarity (1.25, 12.0, 200, 150, H);
  GstBuffer *b = gst_buffer_new ();
  GstNmiRegisterMeta *m = add_lens_meta (b, H, 0);
  GeoregRegistration *r = georeg_buffer_get_registration (b);
  fail_unless (r && georeg_registration_get_undistorted (r) && !r->doubtful);
  for (int i = 0; i < 6; i++) {
    double tx, ty, px, py, mx, my, rx, ry;
    truth_map (H, PTS[i][0], PTS[i][1], &tx, &ty);
    apply (H, PTS[i][0], PTS[i][1], &px, &py);
    /* the lens matters here: the plain transform puts the corners more than 2 px off */
    fail_unless (i >= 4 || hypot (tx - px, ty - py) > 2.0, "point %d: lens moves it %.2f px only", i,
        hypot (tx - px, ty - py));
    fail_unless (gst_nmi_register_meta_frame_to_control (m, PTS[i][0], PTS[i][1], &mx, &my));
    fail_unless (hypot (mx - tx, my - ty) < 1e-9, "meta point %d off by %g", i,
        hypot (mx - tx, my - ty));
    fail_unless (georeg_registration_frame_to_control (r, PTS[i][0], PTS[i][1], &rx, &ry));
    fail_unless (rx == mx && ry == my, "binding point %d differs from the meta's", i);
  }
  /* the copy's footprint and centre are the meta's, which went through the lens */
  for (int i = 0; i < 8; i++)
    fail_unless (georeg_registration_get_footprint_control (r)[i] == m->footprint_control[i]);
  fail_unless (r->center_x == m->center_control[0] && r->center_y == m->center_control[1]);
  georeg_registration_free (r);

  /* without a lens: the plain transform, exactly */
  GstBuffer *b2 = gst_buffer_new ();
  GstNmiRegisterMeta *m2 = add_register_meta_sized (b2, H, FW, FH);
  double x, y, px, py;
  fail_unless (gst_nmi_register_meta_frame_to_control (m2, 13.0, 7.0, &x, &y));
  apply (H, 13.0, 7.0, &px, &py);
  /* (not ==: the compiler may fuse multiply-adds differently in the two files) */
  fail_unless (fabs (x - px) < 1e-9 && fabs (y - py) < 1e-9);
  /* no transform; a point behind the camera */
  m2->frame_to_control[6] = -0.01;
  fail_if (gst_nmi_register_meta_frame_to_control (m2, FW, FH, &x, &y));
  m2->has_transform = FALSE;
  fail_if (gst_nmi_register_meta_frame_to_control (m2, 0, 0, &x, &y));
  gst_buffer_unref (b2);
  gst_buffer_unref (b);
}
GST_END_TEST;

/* lon/lat of a control point, and the metres one control pixel is off there */
static void
check_lonlat (const char *what, int i, double glon, double glat, double X, double Y)
{
  double lon, lat;
  truth_lonlat (X, Y, &lon, &lat);
  const double err = metres (lon, lat, glon, glat);
  fail_unless (err < 1e-3, "%s %d: %.4f m off the full mapping", what, i, err);
}

static void
apply_plain (const double H[9], double x, double y, double *X, double *Y)
{
  apply (H, x, y, X, Y);
}

/* The frame's heading: the bearing from its centre to the middle of its top edge
 * mapped through `map`, in the local east/north plane of the WGS84 ellipsoid (meridian
 * radius M against the normal radius N: a sphere would be 0.04 degree off here) */
static double
heading_of (const double H[9], void (*map) (const double *, double, double, double *,
        double *))
{
  double cx, cy, tx, ty, clon, clat, tlon, tlat;
  map (H, FW / 2.0, FH / 2.0, &cx, &cy);
  map (H, FW / 2.0, 0, &tx, &ty);
  truth_lonlat (cx, cy, &clon, &clat);
  truth_lonlat (tx, ty, &tlon, &tlat);
  const double e2 = 0.00669437999014, s = sin (clat * M_PI / 180);
  const double m_over_n = (1 - e2) / (1 - e2 * s * s);
  double a = atan2 ((tlon - clon) * cos (clat * M_PI / 180), (tlat - clat) * m_over_n)
      * 180 / M_PI;
  return a < 0 ? a + 360 : a;
}

GST_START_TEST (test_exports)
{
  gchar *json = tmp_path ("lens.geojson"), *csv = tmp_path ("lens.csv");
  gchar *desc = g_strdup_printf ("georegexport control-location=%s geojson-location=%s "
      "csv-location=%s", control_tif, json, csv);
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=GRAY8,width=160,height=120,"
      "framerate=5/1");
  double H[9];
  similarity (1.25, 12.0, 200, 150, H);
  GstBuffer *b = frame_through_lens (H);
  add_lens_meta (b, H, 0);
  gst_buffer_unref (gst_harness_push_and_pull (h, b));
  gst_harness_teardown (h);

  /* CSV: centre, then TL TR BR BL, in lon/lat (columns 10-19) */
  gchar *text = NULL;
  fail_unless (g_file_get_contents (csv, &text, NULL, NULL));
  gchar **rows = g_strsplit (g_strchomp (text), "\n", -1);
  fail_unless_equals_int (g_strv_length (rows), 2);
  gchar **col = g_strsplit (rows[1], ",", -1);
  fail_unless (g_strv_length (col) >= 20, "%s", rows[1]);
  fail_unless_equals_string (col[5], "registered");
  const int order[5] = { 4, 0, 1, 2, 3 };
  for (int k = 0; k < 5; k++) {
    double X, Y;
    truth_map (H, PTS[order[k]][0], PTS[order[k]][1], &X, &Y);
    check_lonlat ("csv point", k, g_ascii_strtod (col[10 + 2 * k], NULL),
        g_ascii_strtod (col[11 + 2 * k], NULL), X, Y);
  }
  /* heading: centre -> top middle, through the lens; the plain transform's differs */
  {
    const double heading = g_ascii_strtod (col[8], NULL);
    const double truth = heading_of (H, truth_map), plain = heading_of (H, apply_plain);
    fail_unless (fabs (heading - truth) < 2e-3, "heading %f, truth %f", heading, truth);
    fail_unless (fabs (plain - truth) > 0.1, "the lens hardly turns the frame: %f %f",
        plain, truth);
  }
  g_strfreev (col);
  g_strfreev (rows);
  g_free (text);

  /* GeoJSON: the ring TL BL BR TR TL */
  gchar *cmd = g_strdup_printf ("python3 -c \"import json,sys\n"
      "f=json.load(open(sys.argv[1]))['features'][0]\n"
      "print(' '.join('%%.10f %%.10f'%%tuple(q) for q in f['geometry']['coordinates'][0]))\" %s",
      json);
  gchar *out = run_capture (cmd);
  g_free (cmd);
  fail_unless (out != NULL);
  gchar **tok = g_strsplit (g_strchomp (out), " ", -1);
  fail_unless_equals_int (g_strv_length (tok), 10);
  const int ring[5] = { 0, 3, 2, 1, 0 };
  for (int k = 0; k < 5; k++) {
    double X, Y;
    truth_map (H, PTS[ring[k]][0], PTS[ring[k]][1], &X, &Y);
    check_lonlat ("geojson corner", k, g_ascii_strtod (tok[2 * k], NULL),
        g_ascii_strtod (tok[2 * k + 1], NULL), X, Y);
  }
  g_strfreev (tok);
  g_free (out);
  g_unlink (json);
  g_unlink (csv);
  g_free (json);
  g_free (csv);
}
GST_END_TEST;

GST_START_TEST (test_klv)
{
  gchar *desc = g_strdup_printf ("georegklvenc control-location=%s", control_tif);
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=GRAY8,width=160,height=120,"
      "framerate=5/1");
  double H[9];
  similarity (1.25, -20.0, 190, 160, H);
  GstBuffer *b = frame_through_lens (H);
  add_lens_meta (b, H, 0);
  GstBuffer *out = gst_harness_push_and_pull (h, b);
  GrKlvUas v;
  GstMapInfo map;
  char err[256];
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  fail_unless (gr_klv_uas_decode (map.data, map.size, &v, err, sizeof err) == GR_OK, "%s",
      err);
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  fail_unless (v.has_centre && v.has_corners);
  /* ST 0601's quantisation: 180 / (2^32 - 2) degrees of latitude, twice in longitude */
  const double step = 180.0 / 4294967294.0;
  for (int i = 0; i < 5; i++) {
    double X, Y, lon, lat;
    truth_map (H, PTS[i][0], PTS[i][1], &X, &Y);
    truth_lonlat (X, Y, &lon, &lat);
    const double glat = i < 4 ? v.corner_lat[i] : v.centre_lat;
    const double glon = i < 4 ? v.corner_lon[i] : v.centre_lon;
    fail_unless (fabs (glat - lat) <= step && fabs (glon - lon) <= 2 * step,
        "klv point %d: %.9f %.9f vs %.9f %.9f", i, glat, glon, lat, lon);
  }
}
GST_END_TEST;

/* gray + alpha interleaved -> two planes */
static void
split_planes (const guint8 *ga, int n, guint8 *img, guint8 *alpha)
{
  for (int i = 0; i < n; i++) {
    img[i] = ga[2 * i];
    alpha[i] = ga[2 * i + 1];
  }
}

GST_START_TEST (test_geotiff)
{
  gchar *dir = tmp_path ("lenstiffs");
  gchar *props = g_strdup_printf ("georegexport control-location=%s geotiff-dir=%s "
      "geotiff-format=gtiff", control_tif, dir);
  GstHarness *h = gst_harness_new_parse (props);
  g_free (props);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=GRAY8,width=160,height=120,"
      "framerate=5/1");
  double H[9];
  similarity (1.25, 12.0, 200, 150, H);
  GstBuffer *b = frame_through_lens (H);
  GstBuffer *keep = gst_buffer_copy_deep (b);
  add_lens_meta (b, H, 0);
  gst_buffer_unref (gst_harness_push_and_pull (h, b));
  gst_harness_teardown (h);

  gchar *tif = g_build_filename (dir, "frame_000000.tif", NULL);
  guint8 *img, *alpha;
  int w, hh;
  long ox, oy;
  read_on_grid (tif, &img, &alpha, &w, &hh, &ox, &oy);
  /* it covers the undistorted frame: every corner's truth place is inside the window */
  for (int i = 0; i < 4; i++) {
    double X, Y;
    truth_map (H, PTS[i][0], PTS[i][1], &X, &Y);
    fail_unless (X >= ox - 1 && X <= ox + w + 1 && Y >= oy - 1 && Y <= oy + hh + 1,
        "corner %d (%.1f, %.1f) outside the window", i, X, Y);
  }
  check_lines_up (img, alpha, w, hh, ox, oy);
  const double c_lens = correlation (img, alpha, w, hh, ox, oy, 0, 0);

  /* the same frame warped through the plain transform (the old behaviour) lines up
   * worse: the test can tell the difference */
  GstMapInfo map;
  fail_unless (gst_buffer_map (keep, &map, GST_MAP_READ));
  GrFrame8 f = { map.data, FW, FH, 1, FW, NULL };
  long x0, y0;
  int pw, ph;
  char err[256];
  fail_unless (gr_warp_window (H, NULL, FW, FH, 1 << 24, &x0, &y0, &pw, &ph, err,
          sizeof err) == GR_OK, "%s", err);
  guint8 *ga = g_new (guint8, (gsize) pw * ph * 2), *pimg = g_new (guint8, (gsize) pw * ph);
  guint8 *palpha = g_new (guint8, (gsize) pw * ph);
  gr_warp_frame (&f, H, x0, y0, pw, ph, ga);
  gst_buffer_unmap (keep, &map);
  split_planes (ga, pw * ph, pimg, palpha);
  const double c_plain = correlation (pimg, palpha, pw, ph, x0, y0, 0, 0);
  fail_unless (c_lens > c_plain + 0.05, "lens warp %.4f, plain warp %.4f", c_lens, c_plain);
  g_free (ga);
  g_free (pimg);
  g_free (palpha);
  gst_buffer_unref (keep);
  g_free (img);
  g_free (alpha);
  g_unlink (tif);
  g_free (tif);
  g_rmdir (dir);
  g_free (dir);
}
GST_END_TEST;

/* quality from both stages: the CSV's flag names and quality for a frame registered
 * with no flag of its own after nmilocalize flagged coarse result */
static gchar *
quality_row (guint coarse_flags, guint register_flags, gboolean *doubtful)
{
  gchar *csv = tmp_path ("doubt.csv");
  gchar *desc = g_strdup_printf ("georegexport control-location=%s csv-location=%s",
      control_tif, csv);
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=GRAY8,width=160,height=120,"
      "framerate=5/1");
  double H[9];
  similarity (1.25, 12.0, 200, 150, H);
  GstBuffer *b = frame_cut (H);
  GstNmiLocalizeMeta *lm = gst_buffer_add_nmi_localize_meta (b);
  lm->flags = coarse_flags;
  lm->center_x = 200;
  lm->center_y = 150;
  add_register_meta (b, H, register_flags);
  GeoregRegistration *r = georeg_buffer_get_registration (b);
  *doubtful = r->doubtful;
  georeg_registration_free (r);
  gst_buffer_unref (gst_harness_push_and_pull (h, b));
  gst_harness_teardown (h);
  gchar *text = NULL;
  fail_unless (g_file_get_contents (csv, &text, NULL, NULL));
  gchar **rows = g_strsplit (g_strchomp (text), "\n", -1);
  fail_unless_equals_int (g_strv_length (rows), 2);
  gchar *row = g_strdup (rows[1]);
  g_strfreev (rows);
  g_free (text);
  g_unlink (csv);
  g_free (csv);
  return row;
}

GST_START_TEST (test_coarse_doubt)
{
  const struct {
    guint coarse, reg;
    const char *want;           /* ",flag_names,quality," in the row */
    gboolean doubtful;
  } cases[] = {
    /* a doubtful coarse result nmiregister started from: doubtful, and why */
    {GST_NMI_LOCALIZE_FLAG_AMBIGUOUS, 0, ",coarse-ambiguous,doubtful,", TRUE},
    {GST_NMI_LOCALIZE_FLAG_IMPLAUSIBLE | GST_NMI_LOCALIZE_FLAG_PRIOR_USED, 0,
        ",coarse-implausible,doubtful,", TRUE},
    {GST_NMI_LOCALIZE_FLAG_AT_BORDER | GST_NMI_LOCALIZE_FLAG_LOW_OVERLAP,
          GST_NMI_REGISTER_FLAG_WINDOWS_CLIPPED,
        ",\"windows-clipped,coarse-at-border,coarse-low-overlap\",doubtful,", TRUE},
    /* information only, not doubt */
    {GST_NMI_LOCALIZE_FLAG_PRIOR_USED | GST_NMI_LOCALIZE_FLAG_SCALE_SEARCHED, 0,
        ",,registered,", FALSE},
    /* nmiregister's own search placed the frame: independent of the coarse stage */
    {GST_NMI_LOCALIZE_FLAG_AMBIGUOUS, GST_NMI_REGISTER_FLAG_FULL_SEARCH,
        ",full-search,registered,", FALSE},
    /* both doubtful */
    {GST_NMI_LOCALIZE_FLAG_AMBIGUOUS, GST_NMI_REGISTER_FLAG_LOW_INLIERS,
        ",\"low-inliers,coarse-ambiguous\",doubtful,", TRUE},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    gboolean doubtful;
    gchar *row = quality_row (cases[i].coarse, cases[i].reg, &doubtful);
    fail_unless (strstr (row, cases[i].want) != NULL, "case %u: %s", i, row);
    fail_unless (doubtful == cases[i].doubtful, "case %u: binding doubtful %d", i, doubtful);
    g_free (row);
  }
}
GST_END_TEST;

static Suite *
georeg_lens_suite (void)
{
  Suite *s = suite_create ("georeg_lens");
  TCase *tc = tcase_create ("general");
  tcase_set_timeout (tc, 60);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_mapping);
  tcase_add_test (tc, test_exports);
  tcase_add_test (tc, test_klv);
  tcase_add_test (tc, test_geotiff);
  tcase_add_test (tc, test_coarse_doubt);
  return s;
}

int
main (int argc, char **argv)
{
  gst_check_init (&argc, &argv);
  make_control ();
  int failed = gst_check_run_suite (georeg_lens_suite (), "georeg_lens", __FILE__);
  g_unlink (control_tif);
  g_rmdir (tmpdir);
  g_free (control_tif);
  g_free (tmpdir);
  gr_synth_image_free (&control);
  return failed;
}
#endif
