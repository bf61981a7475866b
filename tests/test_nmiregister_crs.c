/* nmiregister's results in the control's CRS and in WGS84 (issue 17): a synthesized
 * control written as a GeoTIFF in UTM 17N (tests/gis_test_util.h), a frame cut from
 * it through a known similarity, registered by the element; the meta, the element
 * message and the introspectable copy (georeg-results.h) carry the CRS (EPSG:32617)
 * and the footprint corners and centre in longitude/latitude, which must lie within
 * 0.5 frame pixel (in metres) of the truth computed through OSR directly.  The same
 * control as a PNG with a world file and no .prj has map coordinates but no CRS;
 * the `crs` property supplies one (a CRS without an EPSG code comes out as WKT); an
 * unusable `crs` is a clear error.  Exit 77
 * without GDAL.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

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

#include "georeg-results.h"
/* the shared GIS helpers include some this test does not use */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "gis_test_util.h"

static gchar *control_png;      /* the same control as a PNG + world file, no .prj */

/* the truth: a frame 1.1 control pixels per frame pixel, turned 7 degrees */
#define TRUE_SCALE 1.1
#define TRUE_ANGLE 7.0
#define PIXEL_M 0.5             /* the control's pixel size (gis_test_util.h) */

static void
make_png_control (void)
{
  char err[256];
  control_png = tmp_path ("control.png");
  char *wf = gr_synth_world_file_path (control_png);
  if (gr_synth_image_write_png (control_png, &control, err, sizeof err) != GR_OK ||
      gr_synth_world_file_write (wf, control.geo, err, sizeof err) != GR_OK)
    g_error ("cannot write the PNG control: %s", err);
  free (wf);
}

/* Registers one frame cut through the truth; returns the output buffer, the truth
 * in *H and the element message in *msg (NULL when none). */
static GstBuffer *
register_frame (const gchar * control_path, const gchar * extra, double H[9],
    GstStructure ** msg)
{
  gchar *desc = g_strdup_printf ("nmiregister control-location=\"%s\" band=1 "
      "backend=cpu %s", control_path, extra ? extra : "");
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=GRAY8,width=160,height=120,"
      "framerate=10/1");
  similarity (TRUE_SCALE, TRUE_ANGLE, 203.4, 147.8, H);
  GstBuffer *in = frame_cut (H);
  /* nmilocalize's answer: the truth off by a few control pixels */
  double prior[9];
  memcpy (prior, H, sizeof prior);
  prior[2] += 2.6;
  prior[5] -= 1.7;
  GstNmiLocalizeMeta *lm = gst_buffer_add_nmi_localize_meta (in);
  lm->flags = 0;
  fail_unless (gst_nmi_localize_meta_set_transform (lm, prior, FW, FH));
  GstBuffer *out = gst_harness_push_and_pull (h, in);
  fail_unless (out != NULL);
  *msg = NULL;
  GstMessage *m;
  while (!*msg && (m = gst_bus_pop (bus))) {
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ELEMENT && gst_message_has_name (m,
            "nmiregister"))
      *msg = gst_structure_copy (gst_message_get_structure (m));
    gst_message_unref (m);
  }
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  return out;
}

/* The meta's WGS84 corners and centre against the truth, within 0.5 frame pixel. */
static void
check_lonlat (const GstNmiRegisterMeta * m, const double H[9])
{
  const double tol = 0.5 * TRUE_SCALE * PIXEL_M;
  const double fx[5] = { 0, FW, FW, 0, FW / 2.0 }, fy[5] = { 0, 0, FH, FH, FH / 2.0 };
  double worst = 0;
  fail_unless (m->has_lonlat);
  for (int i = 0; i < 5; i++) {
    double px, py, lon, lat;
    apply (H, fx[i], fy[i], &px, &py);
    truth_lonlat (px, py, &lon, &lat);
    const double *got = i < 4 ? &m->footprint_lonlat[2 * i] : m->center_lonlat;
    const double d = metres (lon, lat, got[0], got[1]);
    fail_unless (d < tol, "point %d: %.4f m from the truth (tolerance %.3f m)", i, d, tol);
    worst = MAX (worst, d);
    /* and the conversion alone: the meta's own control point, through OSR, lands
     * on its longitude/latitude within a millimetre */
    const double *own = i < 4 ? &m->footprint_control[2 * i] : m->center_control;
    truth_lonlat (own[0], own[1], &lon, &lat);
    fail_unless (metres (lon, lat, got[0], got[1]) < 1e-3, "point %d: conversion", i);
    /* a frame in Ohio: the coordinates are longitude first */
    fail_unless (got[0] < -60 && got[0] > -90 && got[1] > 30 && got[1] < 50,
        "(%f, %f) is no (lon, lat) in UTM 17N", got[0], got[1]);
  }
  g_print ("WGS84 corners and centre: at most %.4f m from the truth (tolerance %.3f m)\n",
      worst, tol);
}

GST_START_TEST (test_geotiff_crs_and_lonlat)
{
  double H[9];
  GstStructure *msg;
  GstBuffer *out = register_frame (control_tif, NULL, H, &msg);
  GstNmiRegisterMeta *m = gst_buffer_get_nmi_register_meta (out);
  fail_unless (m && m->has_transform && m->has_map, "flags 0x%x", m ? m->flags : 0);
  fail_unless_equals_string (m->crs, "EPSG:32617");
  fail_unless_equals_int (m->epsg, 32617);
  check_lonlat (m, H);
  /* the centre: the transform at (w/2, h/2), on the map through the geotransform */
  double cx, cy;
  apply (m->frame_to_control, FW / 2.0, FH / 2.0, &cx, &cy);
  fail_unless (fabs (cx - m->center_control[0]) < 1e-9
      && fabs (cy - m->center_control[1]) < 1e-9);
  const double *g = control.geo;
  fail_unless (fabs (g[0] + cx * g[1] + cy * g[2] - m->center_map[0]) < 1e-6);
  fail_unless (fabs (g[3] + cx * g[4] + cy * g[5] - m->center_map[1]) < 1e-6);

  /* the message: the same values, as plain fields */
  fail_unless (msg != NULL, "no nmiregister message");
  fail_unless_equals_string (gst_structure_get_string (msg, "crs"), "EPSG:32617");
  gint epsg = 0;
  fail_unless (gst_structure_get_int (msg, "epsg", &epsg) && epsg == 32617);
  static const char *const fields[10] = { "tl-lon", "tl-lat", "tr-lon", "tr-lat",
    "br-lon", "br-lat", "bl-lon", "bl-lat", "center-lon", "center-lat"
  };
  for (int i = 0; i < 10; i++) {
    gdouble v;
    fail_unless (gst_structure_get_double (msg, fields[i], &v), "no %s", fields[i]);
    fail_unless_equals_float (v, i < 8 ? m->footprint_lonlat[i] : m->center_lonlat[i - 8]);
  }
  gdouble v;
  fail_unless (gst_structure_get_double (msg, "center-map-x", &v)
      && v == m->center_map[0]);
  fail_unless (gst_structure_get_double (msg, "center-y", &v) && v == m->center_control[1]);
  gst_structure_free (msg);

  /* the introspectable copy */
  GeoregRegistration *r = georeg_buffer_get_registration (out);
  fail_unless_equals_string (georeg_registration_get_crs (r), "EPSG:32617");
  fail_unless (r->epsg == 32617 && r->has_lonlat);
  fail_unless (memcmp (georeg_registration_get_footprint_lonlat (r), m->footprint_lonlat,
          sizeof m->footprint_lonlat) == 0);
  fail_unless (r->center_lon == m->center_lonlat[0] && r->center_lat == m->center_lonlat[1]);
  fail_unless (r->center_x == m->center_control[0] && r->center_map_y == m->center_map[1]);
  georeg_registration_free (r);
  gst_buffer_unref (out);
}
GST_END_TEST;

GST_START_TEST (test_world_file_without_crs)
{
  double H[9];
  GstStructure *msg;
  GstBuffer *out = register_frame (control_png, NULL, H, &msg);
  GstNmiRegisterMeta *m = gst_buffer_get_nmi_register_meta (out);
  fail_unless (m && m->has_transform && m->has_map);
  /* map coordinates, but nothing says in which CRS: no CRS, no WGS84 */
  fail_unless (m->crs == NULL && m->epsg == 0 && !m->has_lonlat);
  fail_unless (isnan (m->footprint_lonlat[0]) && isnan (m->center_lonlat[1]));
  fail_unless (isfinite (m->center_map[0]));
  fail_unless (msg && !gst_structure_has_field (msg, "crs")
      && !gst_structure_has_field (msg, "tl-lon"));
  gst_structure_free (msg);
  GeoregRegistration *r = georeg_buffer_get_registration (out);
  fail_unless (georeg_registration_get_crs (r) == NULL && !r->has_lonlat);
  georeg_registration_free (r);
  gst_buffer_unref (out);

  /* the crs property supplies it */
  out = register_frame (control_png, "crs=EPSG:32617", H, &msg);
  m = gst_buffer_get_nmi_register_meta (out);
  fail_unless (m && m->has_transform);
  fail_unless_equals_string (m->crs, "EPSG:32617");
  check_lonlat (m, H);
  gst_structure_free (msg);
  gst_buffer_unref (out);
}
GST_END_TEST;

/* A CRS with no EPSG code (a transverse Mercator on a meridian no UTM zone uses) is
 * reported as its WKT, epsg 0; its longitudes/latitudes still come out, around that
 * meridian. */
GST_START_TEST (test_crs_without_code)
{
  double H[9];
  GstStructure *msg;
  GstBuffer *out = register_frame (control_png, "crs=\"+proj=tmerc +lat_0=0 "
      "+lon_0=-80.3 +k=0.9996 +x_0=500000 +y_0=0 +datum=WGS84 +units=m +no_defs\"", H,
      &msg);
  GstNmiRegisterMeta *m = gst_buffer_get_nmi_register_meta (out);
  fail_unless (m && m->has_transform && m->has_lonlat);
  fail_unless_equals_int (m->epsg, 0);
  fail_unless (m->crs && g_str_has_prefix (m->crs, "PROJCRS["), "crs %s", m->crs);
  fail_unless (strstr (m->crs, "-80.3") != NULL, "%s", m->crs);
  fail_unless (fabs (m->center_lonlat[0] - (-81.2)) < 0.3, "lon %f", m->center_lonlat[0]);
  fail_unless_equals_string (gst_structure_get_string (msg, "crs"), m->crs);
  gint epsg = -1;
  fail_unless (gst_structure_get_int (msg, "epsg", &epsg) && epsg == 0);
  gst_structure_free (msg);
  gst_buffer_unref (out);
}
GST_END_TEST;

GST_START_TEST (test_bad_crs)
{
  GstElement *e = gst_element_factory_make ("nmiregister", NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (e, bus);
  g_object_set (e, "control-location", control_png, "band", 1, "backend", 1,
      "crs", "no such CRS", NULL);
  gchar *crs = NULL;
  g_object_get (e, "crs", &crs, NULL);
  fail_unless_equals_string (crs, "no such CRS");
  g_free (crs);
  fail_unless (gst_element_set_state (e, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE);
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error posted");
  GError *err = NULL;
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (g_error_matches (err, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS),
      "%s", err->message);
  fail_unless (strstr (err->message, "crs") != NULL, "%s", err->message);
  g_error_free (err);
  gst_message_unref (msg);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
}
GST_END_TEST;

static Suite *
nmiregister_crs_suite (void)
{
  Suite *s = suite_create ("nmiregister_crs");
  TCase *tc = tcase_create ("general");
  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_geotiff_crs_and_lonlat);
  tcase_add_test (tc, test_world_file_without_crs);
  tcase_add_test (tc, test_crs_without_code);
  tcase_add_test (tc, test_bad_crs);
  return s;
}

int
main (int argc, char **argv)
{
  gst_check_init (&argc, &argv);
  make_control ();
  make_png_control ();
  int failed = gst_check_run_suite (nmiregister_crs_suite (), "nmiregister_crs",
      __FILE__);
  gchar *wf = gr_synth_world_file_path (control_png);
  g_unlink (wf);
  free (wf);
  g_unlink (control_png);
  g_unlink (control_tif);
  g_rmdir (tmpdir);
  g_free (control_png);
  g_free (control_tif);
  g_free (tmpdir);
  gr_synth_image_free (&control);
  return failed;
}
#endif
