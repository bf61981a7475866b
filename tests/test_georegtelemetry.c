/* georegtelemetry: GstHarness tests (JPEG EXIF/XMP -> GstGeoregPoseMeta, CSV rows by
 * frame and by timestamp, an application's meta kept, calibration files, bad files) and
 * a real pipeline multifilesrc ! georegtelemetry ! jpegdec ! fakesink whose decoded
 * frames must carry the meta (CSV rows matched by the upstream file name).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "georeg-pose-meta.h"
#include "synth_jpeg.h"

#define NFILES 3
#define W 64
#define H 48

static gchar *tmpdir;

/* data set-up runs outside the check tests: a failure there aborts */
#define REQUIRE(cond) do { if (!(cond)) g_error ("set-up failed: %s", #cond); } while (0)

static gchar *
tmp_path (const gchar * name)
{
  return g_build_filename (tmpdir, name, NULL);
}

static void
write_text (const gchar * name, const gchar * text)
{
  gchar *p = tmp_path (name);
  REQUIRE (g_file_set_contents (p, text, -1, NULL));
  g_free (p);
}

static void
frame_tags (GrSynthDroneTags * t, int i)
{
  gr_synth_drone_tags_init (t);
  t->make = "DJI";
  t->model = "FC300S";
  t->focal_mm = 3.61;
  t->focal_35mm = 20;
  t->have_gps = TRUE;
  t->lat = 46.5 + 0.001 * i;
  t->lon = 6.6 - 0.001 * i;
  t->alt_amsl = 500 + i;
  t->have_xmp = TRUE;
  t->rel_alt = 80;
  t->gimbal_yaw = 30 + 10 * i;
  t->gimbal_pitch = -90;
  t->flight_yaw = 31 + 10 * i;
}

static GstBuffer *
jpeg_buffer (int i)
{
  guint8 pix[W * H * 3];
  for (int k = 0; k < W * H * 3; k++)
    pix[k] = (guint8) (k * 13 + i * 40);
  GrSynthDroneTags t;
  frame_tags (&t, i);
  uint8_t *jpg;
  size_t len;
  REQUIRE (gr_synth_jpeg_encode (pix, W, H, 3, W * 3, 85, &t, &jpg, &len));
  GstBuffer *b = gst_buffer_new_memdup (jpg, len);
  free (jpg);
  return b;
}

static void
make_data (void)
{
  tmpdir = g_dir_make_tmp ("georegtelemetry-XXXXXX", NULL);
  REQUIRE (tmpdir != NULL);
  for (int i = 0; i < NFILES; i++) {
    GstBuffer *b = jpeg_buffer (i);
    GstMapInfo map;
    gst_buffer_map (b, &map, GST_MAP_READ);
    gchar name[32];
    g_snprintf (name, sizeof name, "img_%03d.jpg", i);
    gchar *p = tmp_path (name);
    REQUIRE (g_file_set_contents (p, (const gchar *) map.data, map.size, NULL));
    g_free (p);
    gst_buffer_unmap (b, &map);
    gst_buffer_unref (b);
  }
  /* rows in another order than the files, to prove the match is by name */
  write_text ("by_file.csv", "filename,height_agl_m,utc\n"
      "img_002.jpg,72.5,T2\nimg_000.jpg,70.5,T0\nimg_001.jpg,71.5,T1\n");
  write_text ("by_frame.csv", "frame,lat,lon,heading_deg,pitch_deg,roll_deg\n"
      "0,10.0,20.0,90,1,2\n1,10.5,20.5,180,0,0\n");
  write_text ("by_time.csv", "timestamp,lat,lon\n0.0,1,1\n1.0,2,2\n2.0,3,3\n");
  write_text ("bad.csv", "frame,lat\n0,north\n");
  write_text ("calib.yml", "%YAML:1.0\n---\nimage_width: 128\nimage_height: 96\n"
      "camera_matrix: !!opencv-matrix\n  rows: 3\n  cols: 3\n  dt: d\n"
      "  data: [ 100., 0., 63.5, 0., 100., 47.5, 0., 0., 1. ]\n"
      "distortion_coefficients: !!opencv-matrix\n  rows: 1\n  cols: 5\n  dt: d\n"
      "  data: [ -0.1, 0.01, 0., 0., 0. ]\n");
}

static void
remove_tmpdir (void)
{
  GDir *d = g_dir_open (tmpdir, 0, NULL);
  const gchar *n;
  while (d && (n = g_dir_read_name (d))) {
    gchar *p = tmp_path (n);
    g_unlink (p);
    g_free (p);
  }
  if (d)
    g_dir_close (d);
  g_rmdir (tmpdir);
}

static GstHarness *
harness (const gchar * props, const gchar * caps)
{
  gchar *desc = g_strdup_printf ("georegtelemetry %s", props ? props : "");
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  gst_harness_set_src_caps_str (h, caps);
  return h;
}

/* ------------------------------------------------------------------------- */

GST_START_TEST (test_jpeg_exif_xmp)
{
  GstHarness *h = harness (NULL, "image/jpeg");
  GstBuffer *out = gst_harness_push_and_pull (h, jpeg_buffer (1));
  fail_unless (out != NULL);
  GstGeoregPoseMeta *m = gst_buffer_get_georeg_pose_meta (out);
  fail_unless (m != NULL, "no pose meta");
  fail_unless_equals_int (m->sources, GST_GEOREG_POSE_SOURCE_EXIF |
      GST_GEOREG_POSE_SOURCE_XMP_DJI);
  fail_unless (m->latitude.have && fabs (m->latitude.value - 46.501) < 1e-7);
  fail_unless (m->longitude.have && fabs (m->longitude.value - 6.599) < 1e-7);
  fail_unless (m->camera_yaw.have && fabs (m->camera_yaw.value - 40) < 1e-9);
  fail_unless (m->camera_pitch.have && fabs (m->camera_pitch.value) < 1e-9,
      "gimbal -90 is a nadir camera: %f", m->camera_pitch.value);
  fail_unless (m->height_agl.have && fabs (m->height_agl.value - 80) < 1e-9);
  fail_unless (m->height_agl.sigma > 5, "relative altitude must be uncertain");
  fail_unless_equals_int (m->image_width, W);
  fail_unless_equals_int (m->image_height, H);
  fail_unless (strcmp (m->camera_model, "FC300S") == 0);
  /* FC300S from the sensor table: 3.61 mm on a 6.17 mm wide sensor */
  fail_unless (m->have_intrinsics && fabs (m->fx - 3.61 / 6.17 * W) < 1e-9, "fx %f", m->fx);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* ground-elevation: frame 1 flies at 501 m above sea level, 80 m above take-off */
GST_START_TEST (test_ground_elevation)
{
  GstHarness *h = harness ("ground-elevation=430.5 elevation-sigma=3", "image/jpeg");
  GstBuffer *out = gst_harness_push_and_pull (h, jpeg_buffer (1));
  GstGeoregPoseMeta *m = out ? gst_buffer_get_georeg_pose_meta (out) : NULL;
  fail_unless (m != NULL);
  fail_unless (m->height_agl.have && fabs (m->height_agl.value - 70.5) < 1e-9 &&
      m->height_agl.sigma > 3, "AMSL - ground: %f +- %f", m->height_agl.value,
      m->height_agl.sigma);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  /* with the take-off's elevation: 80 + 420 - 430.5 */
  h = harness ("ground-elevation=430.5 takeoff-elevation=420", "image/jpeg");
  out = gst_harness_push_and_pull (h, jpeg_buffer (1));
  m = out ? gst_buffer_get_georeg_pose_meta (out) : NULL;
  fail_unless (m != NULL && m->height_agl.have && fabs (m->height_agl.value - 69.5) < 1e-9,
      "take-off based: %f", m ? m->height_agl.value : NAN);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  /* a ground above the camera is refused: the relative altitude stays */
  h = harness ("ground-elevation=600", "image/jpeg");
  out = gst_harness_push_and_pull (h, jpeg_buffer (1));
  m = out ? gst_buffer_get_georeg_pose_meta (out) : NULL;
  fail_unless (m != NULL && fabs (m->height_agl.value - 80) < 1e-9);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_csv_by_frame)
{
  gchar *csv = tmp_path ("by_frame.csv");
  gchar *props = g_strdup_printf ("telemetry-location=\"%s\"", csv);
  GstHarness *h = harness (props, "video/x-raw,format=GRAY8,width=32,height=16,"
      "framerate=0/1");
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  for (int i = 0; i < 3; i++) {
    GstBuffer *out = gst_harness_push_and_pull (h, gst_buffer_new_and_alloc (32 * 16));
    GstGeoregPoseMeta *m = gst_buffer_get_georeg_pose_meta (out);
    if (i < 2) {
      fail_unless (m != NULL, "frame %d: no meta", i);
      fail_unless_equals_int (m->sources, GST_GEOREG_POSE_SOURCE_CSV);
      fail_unless (fabs (m->latitude.value - (10.0 + 0.5 * i)) < 1e-12);
      fail_unless (fabs (m->camera_yaw.value - (i ? 180 : 90)) < 1e-12);
      fail_unless (fabs (m->camera_pitch.value - (i ? 0 : 1)) < 1e-12);
      fail_unless (!m->have_intrinsics, "no focal length anywhere: no intrinsics");
    } else {
      fail_unless (m == NULL, "frame 2 has no row and got a meta");
    }
    gst_buffer_unref (out);
  }
  /* one element message per frame with a prior */
  int n = 0, warned = 0;
  GstMessage *msg;
  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT | GST_MESSAGE_WARNING))) {
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING) {
      warned++;
      gst_message_unref (msg);
      continue;
    }
    const GstStructure *s = gst_message_get_structure (msg);
    fail_unless (gst_structure_has_name (s, "georeg_telemetry"));
    gdouble lat;
    fail_unless (gst_structure_get_double (s, "latitude", &lat) && lat >= 10.0);
    n++;
    gst_message_unref (msg);
  }
  fail_unless_equals_int (n, 2);
  fail_unless_equals_int (warned, 1);      /* the frame without a row, once */
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  g_free (props);
  g_free (csv);
}

GST_END_TEST;

GST_START_TEST (test_csv_by_time)
{
  gchar *csv = tmp_path ("by_time.csv");
  gchar *props = g_strdup_printf ("telemetry-location=\"%s\" csv-key=timestamp "
      "timestamp-tolerance=0.2", csv);
  GstHarness *h = harness (props, "video/x-raw,format=GRAY8,width=8,height=8");
  const GstClockTime ts[] = { 1 * GST_SECOND + 100 * GST_MSECOND, 1500 * GST_MSECOND };
  for (int i = 0; i < 2; i++) {
    GstBuffer *in = gst_buffer_new_and_alloc (64);
    GST_BUFFER_PTS (in) = ts[i];
    GstBuffer *out = gst_harness_push_and_pull (h, in);
    GstGeoregPoseMeta *m = gst_buffer_get_georeg_pose_meta (out);
    if (i == 0)
      fail_unless (m && fabs (m->latitude.value - 2) < 1e-12, "nearest row to 1.1 s");
    else
      fail_unless (m == NULL, "1.5 s is 0.5 s from any row: beyond the tolerance");
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);
  g_free (props);
  g_free (csv);
}

GST_END_TEST;

GST_START_TEST (test_app_meta_wins)
{
  GstHarness *h = harness (NULL, "image/jpeg");
  GstBuffer *in = jpeg_buffer (0);
  GstGeoregPoseMeta *app = gst_buffer_add_georeg_pose_meta (in);
  app->sources = GST_GEOREG_POSE_SOURCE_APP;
  app->latitude = (GstGeoregPoseValue) { 12.25, 0.5, TRUE };
  app->longitude = (GstGeoregPoseValue) { 13.5, 0.5, TRUE };
  GstBuffer *out = gst_harness_push_and_pull (h, in);
  GstGeoregPoseMeta *m = gst_buffer_get_georeg_pose_meta (out);
  fail_unless (m != NULL);
  fail_unless (m->latitude.value == 12.25 && m->latitude.sigma == 0.5,
      "the autopilot's position was replaced");
  fail_unless (m->camera_yaw.have && fabs (m->camera_yaw.value - 30) < 1e-9,
      "absent fields are filled from the JPEG");
  fail_unless (m->sources & GST_GEOREG_POSE_SOURCE_APP);
  fail_unless (m->sources & GST_GEOREG_POSE_SOURCE_XMP_DJI);
  /* exactly one pose meta */
  gpointer state = NULL;
  int count = 0;
  GstMeta *meta;
  while ((meta = gst_buffer_iterate_meta_filtered (out, &state,
              GST_GEOREG_POSE_META_API_TYPE)))
    count++;
  fail_unless_equals_int (count, 1);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_calibration)
{
  gchar *cal = tmp_path ("calib.yml");
  gchar *props = g_strdup_printf ("calibration-location=\"%s\"", cal);
  /* the JPEG is 64 x 48, the calibration 128 x 96: the same lens, scaled */
  GstHarness *h = harness (props, "image/jpeg");
  GstBuffer *out = gst_harness_push_and_pull (h, jpeg_buffer (0));
  GstGeoregPoseMeta *m = gst_buffer_get_georeg_pose_meta (out);
  fail_unless (m && m->have_intrinsics);
  fail_unless (m->sources & GST_GEOREG_POSE_SOURCE_CALIBRATION);
  fail_unless (fabs (m->fx - 50) < 1e-9 && fabs (m->cx - 31.5) < 1e-9 &&
      fabs (m->cy - 23.5) < 1e-9 && m->k1 == -0.1 && m->k2 == 0.01,
      "fx %f cx %f cy %f", m->fx, m->cx, m->cy);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  g_free (props);
  g_free (cal);
}

GST_END_TEST;

static void
expect_start_error (const gchar * prop, const gchar * path, GQuark domain, gint code)
{
  GstElement *e = gst_element_factory_make ("georegtelemetry", NULL);
  fail_unless (e != NULL);
  g_object_set (e, prop, path, NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (e, bus);
  fail_unless (gst_element_set_state (e, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE,
      "%s=%s started", prop, path);
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error message for %s", path);
  GError *err = NULL;
  gchar *dbg = NULL;
  gst_message_parse_error (msg, &err, &dbg);
  fail_unless (g_error_matches (err, domain, code), "%s: %s", path, err->message);
  fail_unless (strstr (err->message, path) != NULL, "the message must name the file: %s",
      err->message);
  fail_unless (dbg && *dbg, "no reason given");
  g_error_free (err);
  g_free (dbg);
  gst_message_unref (msg);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_element_set_bus (e, NULL);
  gst_object_unref (bus);
  gst_object_unref (e);
}

GST_START_TEST (test_bad_files)
{
  gchar *bad = tmp_path ("bad.csv");
  gchar *missing = tmp_path ("missing.csv");
  gchar *notcal = tmp_path ("by_time.csv");
  expect_start_error ("telemetry-location", bad, GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_READ);
  expect_start_error ("telemetry-location", missing, GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_OPEN_READ);
  expect_start_error ("calibration-location", notcal, GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_READ);
  g_free (bad);
  g_free (missing);
  g_free (notcal);
  /* bytes that are not a JPEG under image/jpeg caps: no meta, no error */
  GstHarness *h = harness (NULL, "image/jpeg");
  GstBuffer *out = gst_harness_push_and_pull (h, gst_buffer_new_memdup ("garbage", 7));
  fail_unless (gst_buffer_get_georeg_pose_meta (out) == NULL);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_meta_copy_and_scale)
{
  GstBuffer *a = gst_buffer_new_and_alloc (16);
  GstGeoregPoseMeta *m = gst_buffer_add_georeg_pose_meta (a);
  fail_unless (m && !m->latitude.have && isnan (m->latitude.value) && m->sources == 0 &&
      !m->have_intrinsics, "a new meta must hold nothing");
  m->latitude = (GstGeoregPoseValue) { 1.5, 3, TRUE };
  m->have_intrinsics = TRUE;
  m->fx = 1000;
  g_strlcpy (m->camera_model, "X", sizeof m->camera_model);
  /* a copy keeps everything */
  GstBuffer *b = gst_buffer_copy (a);
  GstGeoregPoseMeta *c = gst_buffer_get_georeg_pose_meta (b);
  fail_unless (c && c != m && c->latitude.value == 1.5 && c->latitude.sigma == 3 &&
      c->have_intrinsics && c->fx == 1000 && strcmp (c->camera_model, "X") == 0);
  /* a scaling transform keeps the pose and drops the intrinsics of the old size */
  GstBuffer *d = gst_buffer_new_and_alloc (4);
  GstVideoMetaTransform tr = { NULL, NULL };
  fail_unless (m->meta.info->transform_func (d, &m->meta, a,
          gst_video_meta_transform_scale_get_quark (), &tr));
  GstGeoregPoseMeta *e = gst_buffer_get_georeg_pose_meta (d);
  fail_unless (e && e->latitude.value == 1.5 && !e->have_intrinsics);
  gst_buffer_unref (a);
  gst_buffer_unref (b);
  gst_buffer_unref (d);
}

GST_END_TEST;

typedef struct {
  int frames;
  int with_meta;
  gboolean decoded;
  double height[NFILES];
  double lat[NFILES];
  gchar utc[NFILES][8];
} Seen;

static GstPadProbeReturn
collect (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Seen *seen = data;
  GstBuffer *b = GST_PAD_PROBE_INFO_BUFFER (info);
  GstCaps *caps = gst_pad_get_current_caps (pad);
  if (caps) {
    seen->decoded = gst_structure_has_name (gst_caps_get_structure (caps, 0),
        "video/x-raw");
    gst_caps_unref (caps);
  }
  GstGeoregPoseMeta *m = gst_buffer_get_georeg_pose_meta (b);
  if (m && seen->frames < NFILES) {
    seen->with_meta++;
    seen->height[seen->frames] = m->height_agl.value;
    seen->lat[seen->frames] = m->latitude.value;
    g_strlcpy (seen->utc[seen->frames], m->utc, sizeof seen->utc[0]);
  }
  seen->frames++;
  return GST_PAD_PROBE_OK;
}

GST_START_TEST (test_pipeline_survives_decoder)
{
  fail_unless (gst_element_factory_find ("multifilesrc") && gst_element_factory_find
      ("jpegdec"), "multifilesrc and jpegdec are needed (gstreamer1.0-plugins-good)");
  gchar *pattern = tmp_path ("img_%03d.jpg");
  gchar *csv = tmp_path ("by_file.csv");
  gchar *desc = g_strdup_printf ("multifilesrc location=\"%s\" stop-index=%d "
      "caps=image/jpeg ! georegtelemetry telemetry-location=\"%s\" ! jpegdec ! "
      "fakesink name=sink", pattern, NFILES - 1, csv);
  GError *err = NULL;
  GstElement *pipe = gst_parse_launch (desc, &err);
  fail_unless (pipe != NULL, "%s", err ? err->message : "");
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  GstPad *pad = gst_element_get_static_pad (sink, "sink");
  Seen seen = { 0 };
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, collect, &seen, NULL);
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus (pipe);
  GstMessage *msg = gst_bus_timed_pop_filtered (bus, 20 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);
  fail_unless (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS, "pipeline: %s",
      msg ? GST_MESSAGE_TYPE_NAME (msg) : "timeout");
  gst_message_unref (msg);
  gst_element_set_state (pipe, GST_STATE_NULL);
  fail_unless_equals_int (seen.frames, NFILES);
  fail_unless (seen.decoded, "the sink did not get decoded frames");
  fail_unless_equals_int (seen.with_meta, NFILES);
  for (int i = 0; i < NFILES; i++) {
    fail_unless (fabs (seen.lat[i] - (46.5 + 0.001 * i)) < 1e-7, "frame %d lat %f", i,
        seen.lat[i]);
    fail_unless (fabs (seen.height[i] - (70.5 + i)) < 1e-9,
        "frame %d: CSV row by file name: height %f", i, seen.height[i]);
    gchar want[8];
    g_snprintf (want, sizeof want, "T%d", i);
    fail_unless (strcmp (seen.utc[i], want) == 0);
  }
  gst_object_unref (bus);
  gst_object_unref (pad);
  gst_object_unref (sink);
  gst_object_unref (pipe);
  g_free (desc);
  g_free (csv);
  g_free (pattern);
}

GST_END_TEST;

static Suite *
georegtelemetry_suite (void)
{
  Suite *s = suite_create ("georegtelemetry");
  TCase *tc = tcase_create ("general");
  tcase_set_timeout (tc, 60);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_meta_copy_and_scale);
  tcase_add_test (tc, test_jpeg_exif_xmp);
  tcase_add_test (tc, test_ground_elevation);
  tcase_add_test (tc, test_csv_by_frame);
  tcase_add_test (tc, test_csv_by_time);
  tcase_add_test (tc, test_app_meta_wins);
  tcase_add_test (tc, test_calibration);
  tcase_add_test (tc, test_bad_files);
  tcase_add_test (tc, test_pipeline_survives_decoder);
  return s;
}

int
main (int argc, char **argv)
{
  gst_check_init (&argc, &argv);
  make_data ();
  int failed = gst_check_run_suite (georegtelemetry_suite (), "georegtelemetry", __FILE__);
  if (!failed)
    remove_tmpdir ();
  g_free (tmpdir);
  return failed ? 1 : 0;
}
