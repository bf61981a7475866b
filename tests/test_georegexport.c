/* georegexport element: GeoJSON (valid after every frame, WGS84, ring order, footprints
 * against the truth within 0.5 frame pixel in metres, ogrinfo as the reader), CSV, the
 * per-frame GeoTIFF (gdalinfo shows the control's CRS; the image lines up with the
 * control: correlation at zero shift >= at any 1-pixel shift), RFC 8142 sequences, and
 * bad input (no control, control without georeference, unwritable output, a transform
 * that puts corners behind the camera, NaN).  Exit 77 without GDAL.
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
#include <ogr_srs_api.h>
#include <cpl_conv.h>

#include "georeg-meta.h"
#include "raster.h"
#include "georeg-results.h"

#include "gis_test_util.h"

/* The GeoJSON's features through Python's strict JSON parser: one line per feature,
 * "geometry-type n x0 y0 x1 y1 ... | quality | file". */
static gchar **
features_of (const char *path, gboolean sequence)
{
  gchar *cmd = g_strdup_printf ("python3 -c \"import json,sys\n"
      "t=open(sys.argv[1]).read()\n"
      "fs=[json.loads(r) for r in t.split(chr(30)) if r.strip()] if %d else "
      "json.loads(t)['features']\n"
      "for f in fs:\n"
      " g=f['geometry']; p=f['properties']\n"
      " c=[] if g is None else (g['coordinates'][0] if g['type']=='Polygon' else [g['coordinates']])\n"
      " print(('none' if g is None else g['type']), len(c), ' '.join('%%.10f %%.10f'%%tuple(q) for q in c),"
      " '|', p['quality'], '|', p['file'], '|', p['heading'], p['gsd'], p['flags'], p['inliers'], p['rms'])\" %s",
      sequence, path);
  gchar *out = run_capture (cmd);
  g_free (cmd);
  fail_unless (out != NULL, "python3 could not parse %s as JSON", path);
  gchar **lines = g_strsplit (g_strchomp (out), "\n", -1);
  g_free (out);
  return lines;
}

static GstHarness *
export_harness (const char *props)
{
  gchar *desc = g_strdup_printf ("georegexport control-location=%s %s", control_tif, props);
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=GRAY8,width=160,height=120,"
      "framerate=5/1");
  return h;
}

GST_START_TEST (test_geojson_footprints)
{
  gchar *json = tmp_path ("fp.geojson"), *csv = tmp_path ("fp.csv");
  gchar *png = tmp_path ("fp.png");
  gchar *props = g_strdup_printf ("geojson-location=%s csv-location=%s "
      "source-location=shots/IMG_%%04d.JPG picture-location=%s", json, csv, png);
  GstHarness *h = export_harness (props);
  g_free (props);

  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  double H[9];
  const double scale = 1.25, angle = 12.0;
  similarity (scale, angle, 200, 150, H);
  GstBuffer *b = frame_cut (H);
  add_register_meta (b, H, 0);
  GST_BUFFER_PTS (b) = 200 * GST_MSECOND;
  gst_buffer_unref (gst_harness_push_and_pull (h, b));
  /* the message: the CRS and the corners in degrees, as plain fields */
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT);
  fail_unless (msg != NULL);
  const GstStructure *ms = gst_message_get_structure (msg);
  gint epsg = 0;
  double tl_lon = NAN, tl_lat = NAN, tlon, tlat, tpx, tpy;
  fail_unless (gst_structure_has_name (ms, "georegexport"));
  fail_unless (gst_structure_get_int (ms, "epsg", &epsg) && epsg == 32617);
  fail_unless_equals_string (gst_structure_get_string (ms, "crs"), "EPSG:32617");
  fail_unless_equals_string (gst_structure_get_string (ms, "quality"), "registered");
  double perr = NAN;
  fail_unless (gst_structure_get_double (ms, "predicted-error", &perr) && perr == 0.125);
  fail_unless (gst_structure_get_double (ms, "tl-lon", &tl_lon)
      && gst_structure_get_double (ms, "tl-lat", &tl_lat));
  apply (H, 0, 0, &tpx, &tpy);
  truth_lonlat (tpx, tpy, &tlon, &tlat);
  fail_unless (metres (tlon, tlat, tl_lon, tl_lat) < 1e-3, "message corner");
  gst_message_unref (msg);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);

  /* valid after one frame: the file parses, ogrinfo reads it as WGS84 */
  gchar **f = features_of (json, FALSE);
  fail_unless_equals_int (g_strv_length (f), 1);
  g_strfreev (f);
  gchar *cmd = g_strdup_printf ("ogrinfo -ro -al -so %s", json);
  gchar *info = run_capture (cmd);
  g_free (cmd);
  fail_unless (info && strstr (info, "Feature Count: 1") && strstr (info, "WGS 84"),
      "ogrinfo: %s", info ? info : "(failed)");
  g_free (info);

  /* a doubtful frame, a coarse-only frame, a frame with nothing */
  double H2[9];
  similarity (scale, -30.0, 150, 170, H2);
  b = frame_cut (H2);
  add_register_meta (b, H2, GST_NMI_REGISTER_FLAG_LOW_INLIERS);
  gst_buffer_unref (gst_harness_push_and_pull (h, b));
  b = frame_cut (H);
  GstNmiLocalizeMeta *lm = gst_buffer_add_nmi_localize_meta (b);
  lm->center_x = 200;
  lm->center_y = 150;
  GstNmiRegisterMeta *rm = gst_buffer_add_nmi_register_meta (b);
  rm->flags = GST_NMI_REGISTER_FLAG_NO_CONSENSUS;
  gst_buffer_unref (gst_harness_push_and_pull (h, b));
  /* a name tagged on the frame wins over the pattern */
  b = frame_cut (H);
  georeg_buffer_set_source_location (b, "photos/DJI_0042.JPG");
  gst_buffer_unref (gst_harness_push_and_pull (h, b));
  gst_harness_teardown (h);

  f = features_of (json, FALSE);
  fail_unless_equals_int (g_strv_length (f), 4);
  /* frame 0: the ring TL BL BR TR TL against the truth, within 0.5 frame pixel */
  const double frame_px_m = scale * 0.5;
  const double corner_of[5][2] = { {0, 0}, {0, FH}, {FW, FH}, {FW, 0}, {0, 0} };
  for (int k = 0; k < 2; k++) {
    const double *Hk = k == 0 ? H : H2;
    gchar **tok = g_strsplit (f[k], " ", -1);
    fail_unless (g_str_equal (tok[0], "Polygon") && atoi (tok[1]) == 5, "%s", f[k]);
    double area = 0, prev_lon = 0, prev_lat = 0;
    for (int i = 0; i < 5; i++) {
      double px, py, lon, lat;
      apply (Hk, corner_of[i][0], corner_of[i][1], &px, &py);
      truth_lonlat (px, py, &lon, &lat);
      const double glon = g_ascii_strtod (tok[2 + 2 * i], NULL);
      const double glat = g_ascii_strtod (tok[3 + 2 * i], NULL);
      const double err = metres (lon, lat, glon, glat);
      fail_unless (err < 0.5 * frame_px_m, "frame %d corner %d: %.4f m off", k, i, err);
      fail_unless (err < 1e-3, "frame %d corner %d: %.6f m off (exact transform)", k, i, err);
      if (i)
        area += prev_lon * glat - glon * prev_lat;
      prev_lon = glon;
      prev_lat = glat;
    }
    fail_unless (area > 0, "frame %d: ring not counter-clockwise", k);
    g_strfreev (tok);
  }
  fail_unless (strstr (f[0], "| registered | shots/IMG_0000.JPG |") != NULL, "%s", f[0]);
  fail_unless (strstr (f[1], "| doubtful | shots/IMG_0001.JPG |") != NULL, "%s", f[1]);
  fail_unless (g_str_has_prefix (f[2], "Point 1") && strstr (f[2], "| coarse |"), "%s", f[2]);
  fail_unless (g_str_has_prefix (f[3], "none 0") && strstr (f[3], "| failed | "
          "photos/DJI_0042.JPG |"), "%s", f[3]);
  /* heading: the frame's up direction against true north, from the truth's lon/lat */
  {
    double cx, cy, tx, ty, clon, clat, tlon, tlat;
    apply (H, FW / 2.0, FH / 2.0, &cx, &cy);
    apply (H, FW / 2.0, 0, &tx, &ty);
    truth_lonlat (cx, cy, &clon, &clat);
    truth_lonlat (tx, ty, &tlon, &tlat);
    double truth = atan2 ((tlon - clon) * cos (clat * M_PI / 180), tlat - clat) * 180 / M_PI;
    if (truth < 0)
      truth += 360;
    const char *rest = strrchr (f[0], '|');
    double heading = NAN, gsd = NAN;
    fail_unless (sscanf (rest, "| %lf %lf", &heading, &gsd) == 2, "%s", rest);
    fail_unless (fabs (heading - truth) < 0.05, "heading %f, truth %f", heading, truth);
    /* one frame pixel covers 0.625 m of UTM grid: 0.625 / k on the ground, k ~ 0.9996
     * to 1.0004 near the zone's centre */
    fail_unless (fabs (gsd - frame_px_m) < frame_px_m * 2e-3, "gsd %f", gsd);
    fail_unless (strstr (rest, " 0 42 0.25") != NULL, "%s", rest);
  }
  g_strfreev (f);

  /* CSV: a header and one row per frame, file names and qualities in place */
  gchar *text = NULL;
  fail_unless (g_file_get_contents (csv, &text, NULL, NULL));
  gchar **rows = g_strsplit (g_strchomp (text), "\n", -1);
  fail_unless_equals_int (g_strv_length (rows), 5);
  fail_unless (g_str_has_prefix (rows[0], "file,frame,timestamp_s,flags,"));
  /* the predicted error, appended as the last column */
  fail_unless (g_str_has_suffix (rows[0], ",bl_y,predicted_error_px"), "%s", rows[0]);
  fail_unless (g_str_has_suffix (rows[1], ",0.1250"), "%s", rows[1]);
  fail_unless (g_str_has_prefix (rows[1], "shots/IMG_0000.JPG,0,0.200000000,0,,registered,42,"),
      "%s", rows[1]);
  fail_unless (strstr (rows[2], ",low-inliers,doubtful,") != NULL, "%s", rows[2]);
  fail_unless (strstr (rows[3], ",no-consensus,coarse,") != NULL, "%s", rows[3]);
  g_strfreev (rows);
  g_free (text);
  /* the picture: the control's size, registered outline green, doubtful red */
  GDALDatasetH ds = GDALOpen (png, GA_ReadOnly);
  fail_unless (ds != NULL && GDALGetRasterXSize (ds) == CW && GDALGetRasterYSize (ds) == CH
      && GDALGetRasterCount (ds) == 3);
  for (int k = 0; k < 2; k++) {
    double mx, my;
    apply (k == 0 ? H : H2, FW / 2.0, 0, &mx, &my);   /* middle of the top edge */
    guint8 rgb[3];
    for (int b = 0; b < 3; b++)
      fail_unless (GDALRasterIO (GDALGetRasterBand (ds, b + 1), GF_Read, (int) mx, (int) my,
              1, 1, &rgb[b], 1, 1, GDT_Byte, 0, 0) == CE_None);
    if (k == 0)
      fail_unless (rgb[1] > 150 && rgb[0] < 100, "registered edge %u %u %u", rgb[0], rgb[1],
          rgb[2]);
    else
      fail_unless (rgb[0] > 150 && rgb[1] < 100, "flagged edge %u %u %u", rgb[0], rgb[1],
          rgb[2]);
  }
  GDALClose (ds);
  g_unlink (png);
  g_free (png);
  g_unlink (json);
  g_unlink (csv);
  g_free (json);
  g_free (csv);
}
GST_END_TEST;

GST_START_TEST (test_geojson_sequence)
{
  gchar *json = tmp_path ("fp.geojsons");
  gchar *props = g_strdup_printf ("geojson-location=%s geojson-form=sequence", json);
  GstHarness *h = export_harness (props);
  g_free (props);
  double H[9];
  similarity (1.0, 0, 200, 150, H);
  for (int i = 0; i < 3; i++) {
    GstBuffer *b = frame_cut (H);
    add_register_meta (b, H, 0);
    gst_buffer_unref (gst_harness_push_and_pull (h, b));
    gchar **f = features_of (json, TRUE);
    fail_unless_equals_int (g_strv_length (f), i + 1);
    g_strfreev (f);
  }
  gst_harness_teardown (h);
  gchar *text = NULL;
  gsize len = 0;
  fail_unless (g_file_get_contents (json, &text, &len, NULL));
  fail_unless (text[0] == 0x1e && text[len - 1] == '\n', "RFC 8142 records");
  g_free (text);
  g_unlink (json);
  g_free (json);
}
GST_END_TEST;

GST_START_TEST (test_geotiff)
{
  gchar *dir = tmp_path ("tiffs");
  for (int format = 0; format < 2; format++) {
    gchar *props = g_strdup_printf ("geotiff-dir=%s geotiff-format=%s", dir,
        format ? "gtiff" : "cog");
    GstHarness *h = export_harness (props);
    g_free (props);
    double H[9];
    similarity (1.25, 17.0, 190, 140, H);
    GstBuffer *b = frame_cut (H);
    add_register_meta (b, H, 0);
    gst_buffer_unref (gst_harness_push_and_pull (h, b));
    /* a frame without a transform writes nothing */
    gst_buffer_unref (gst_harness_push_and_pull (h, frame_cut (H)));
    gst_harness_teardown (h);

    gchar *tif = g_build_filename (dir, "frame_000000.tif", NULL);
    gchar *none = g_build_filename (dir, "frame_000001.tif", NULL);
    fail_if (g_file_test (none, G_FILE_TEST_EXISTS));
    gchar *cmd = g_strdup_printf ("gdalinfo %s", tif);
    gchar *info = run_capture (cmd);
    g_free (cmd);
    fail_unless (info && strstr (info, "ID[\"EPSG\",32617]") && strstr (info, "Alpha"),
        "gdalinfo: %s", info ? info : "(failed)");
    if (format == 0)
      fail_unless (strstr (info, "LAYOUT=COG") != NULL, "not a COG: %s", info);
    g_free (info);

    guint8 *img, *alpha;
    int w, hh;
    long ox, oy;
    read_on_grid (tif, &img, &alpha, &w, &hh, &ox, &oy);
    /* the footprint's area: valid pixels ~ frame area * scale^2 control pixels */
    long valid = 0;
    for (long i = 0; i < (long) w * hh; i++)
      valid += alpha[i] != 0;
    const double expect = FW * FH * 1.25 * 1.25;
    fail_unless (fabs (valid - expect) < 0.02 * expect, "valid %ld, expected %f", valid,
        expect);
    check_lines_up (img, alpha, w, hh, ox, oy);
    g_free (img);
    g_free (alpha);
    g_unlink (tif);
    g_free (tif);
    g_free (none);
  }
  g_rmdir (dir);
  g_free (dir);
}
GST_END_TEST;

GST_START_TEST (test_mosaic)
{
  gchar *mos = tmp_path ("mosaic.tif");
  gchar *props = g_strdup_printf ("mosaic-location=%s mosaic-every=1 geotiff-format=gtiff",
      mos);
  GstHarness *h = export_harness (props);
  g_free (props);
  double H1[9], H2[9];
  similarity (1.0, 8.0, 150, 120, H1);
  similarity (1.0, -5.0, 250, 170, H2);
  int sizes[2][2];
  for (int k = 0; k < 2; k++) {
    GstBuffer *b = frame_cut (k ? H2 : H1);
    add_register_meta (b, k ? H2 : H1, 0);
    gst_buffer_unref (gst_harness_push_and_pull (h, b));
    /* rewritten after every frame (mosaic-every=1) */
    GDALDatasetH ds = GDALOpen (mos, GA_ReadOnly);
    fail_unless (ds != NULL, "no mosaic after frame %d", k);
    sizes[k][0] = GDALGetRasterXSize (ds);
    sizes[k][1] = GDALGetRasterYSize (ds);
    GDALClose (ds);
  }
  gst_harness_teardown (h);
  fail_unless (sizes[1][0] > sizes[0][0] && sizes[1][1] > sizes[0][1], "the mosaic grows");
  guint8 *img, *alpha;
  int w, hh;
  long ox, oy;
  read_on_grid (mos, &img, &alpha, &w, &hh, &ox, &oy);
  /* both frames' centres are covered; the whole mosaic lines up with the control */
  for (int k = 0; k < 2; k++) {
    double cx, cy;
    apply (k ? H2 : H1, FW / 2.0, FH / 2.0, &cx, &cy);
    const long i = (long) cx - ox, j = (long) cy - oy;
    fail_unless (i >= 0 && j >= 0 && i < w && j < hh && alpha[j * w + i] == 255,
        "frame %d's centre not in the mosaic", k);
  }
  check_lines_up (img, alpha, w, hh, ox, oy);
  gchar *cmd = g_strdup_printf ("gdalinfo %s", mos);
  gchar *info = run_capture (cmd);
  fail_unless (info && strstr (info, "ID[\"EPSG\",32617]"), "gdalinfo: %s", info);
  g_free (info);
  g_free (cmd);
  g_free (img);
  g_free (alpha);
  g_unlink (mos);
  g_free (mos);
}
GST_END_TEST;

GST_START_TEST (test_bad_transforms)
{
  gchar *json = tmp_path ("bad.geojson"), *dir = tmp_path ("badtiffs");
  gchar *props = g_strdup_printf ("geojson-location=%s geotiff-dir=%s", json, dir);
  GstHarness *h = export_harness (props);
  g_free (props);
  /* a horizon through the frame: corners behind the camera */
  double H[9] = { 1, 0, 100, 0, 1, 100, 0, -0.02, 1 };
  GstBuffer *b = frame_cut ((double[9]) { 1, 0, 100, 0, 1, 100, 0, 0, 1 });
  add_register_meta (b, H, 0);
  gst_buffer_unref (gst_harness_push_and_pull (h, b));
  /* NaN everywhere */
  double N[9];
  for (int i = 0; i < 9; i++)
    N[i] = NAN;
  b = frame_cut ((double[9]) { 1, 0, 100, 0, 1, 100, 0, 0, 1 });
  add_register_meta (b, N, 0);
  gst_buffer_unref (gst_harness_push_and_pull (h, b));
  /* a frame stretched over a million map pixels per side */
  double S[9];
  similarity (1e4, 0, 200, 150, S);
  b = frame_cut ((double[9]) { 1, 0, 100, 0, 1, 100, 0, 0, 1 });
  add_register_meta (b, S, 0);
  gst_buffer_unref (gst_harness_push_and_pull (h, b));
  gst_harness_teardown (h);
  gchar **f = features_of (json, FALSE);
  fail_unless_equals_int (g_strv_length (f), 3);
  fail_unless (g_str_has_prefix (f[0], "none") && strstr (f[0], "| failed |"), "%s", f[0]);
  fail_unless (g_str_has_prefix (f[1], "none") && strstr (f[1], "| failed |"), "%s", f[1]);
  g_strfreev (f);
  GDir *d = g_dir_open (dir, 0, NULL);
  fail_unless (d != NULL);
  fail_unless (g_dir_read_name (d) == NULL, "no GeoTIFF for a hostile transform");
  g_dir_close (d);
  g_rmdir (dir);
  g_unlink (json);
  g_free (json);
  g_free (dir);
}
GST_END_TEST;

/* The element must refuse to start, with a resource error on the bus. */
static void
expect_start_error (const char *desc, const char *what)
{
  GstElement *pipe = gst_parse_launch (desc, NULL);
  fail_unless (pipe != NULL);
  GstStateChangeReturn r = gst_element_set_state (pipe, GST_STATE_PAUSED);
  if (r == GST_STATE_CHANGE_ASYNC)
    r = gst_element_get_state (pipe, NULL, NULL, 5 * GST_SECOND);
  GstBus *bus = gst_element_get_bus (pipe);
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (r == GST_STATE_CHANGE_FAILURE && msg != NULL, "%s: started", what);
  GError *err = NULL;
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (err->domain == GST_RESOURCE_ERROR, "%s: %s", what, err->message);
  g_error_free (err);
  gst_message_unref (msg);
  gst_object_unref (bus);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (pipe);
}

GST_START_TEST (test_bad_setup)
{
  expect_start_error ("fakesrc ! georegexport ! fakesink", "no control");
  gchar *png = tmp_path ("plain.png");
  guint8 pix[16] = { 0 };
  char err[128];
  fail_unless (gr_png_write_gray8 (png, pix, 4, 4, 4, err, sizeof err) == GR_OK);
  gchar *d = g_strdup_printf ("fakesrc ! georegexport control-location=%s crs=EPSG:32617 ! "
      "fakesink", png);
  expect_start_error (d, "not georeferenced");
  g_free (d);
  d = g_strdup_printf ("fakesrc ! georegexport control-location=%s crs=EPSG:0 ! fakesink",
      control_tif);
  expect_start_error (d, "bad crs");
  g_free (d);
  d = g_strdup_printf ("fakesrc ! georegexport control-location=%s "
      "geojson-location=/nonexistent/dir/x.geojson ! fakesink", control_tif);
  expect_start_error (d, "unwritable");
  g_free (d);
  d = g_strdup_printf ("fakesrc ! georegexport control-location=%s "
      "source-location=a%%s%%d ! fakesink", control_tif);
  expect_start_error (d, "bad pattern");
  g_free (d);
  d = g_strdup_printf ("fakesrc ! georegexport control-location=%s/missing.tif ! fakesink",
      tmpdir);
  expect_start_error (d, "missing control");
  g_free (d);
  g_unlink (png);
  g_free (png);
}
GST_END_TEST;

static Suite *
georegexport_suite (void)
{
  Suite *s = suite_create ("georegexport");
  TCase *tc = tcase_create ("general");
  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_geojson_footprints);
  tcase_add_test (tc, test_geojson_sequence);
  tcase_add_test (tc, test_geotiff);
  tcase_add_test (tc, test_mosaic);
  tcase_add_test (tc, test_bad_transforms);
  tcase_add_test (tc, test_bad_setup);
  return s;
}

int
main (int argc, char **argv)
{
  gst_check_init (&argc, &argv);
  make_control ();
  int failed = gst_check_run_suite (georegexport_suite (), "georegexport", __FILE__);
  g_unlink (control_tif);
  g_rmdir (tmpdir);
  g_free (control_tif);
  g_free (tmpdir);
  gr_synth_image_free (&control);
  return failed;
}
#endif
