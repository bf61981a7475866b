/* georegklvenc element: the KLV packet of a registered frame decodes (kernels/klv) to
 * the truth's centre and corners; timestamps (reference timestamp meta, start-time +
 * PTS); frames without a result; the per-frame cost on 4K frames; and the whole path
 * 4K H.264 video + KLV -> mpegtsmux -> file -> tsdemux gives back identical packets,
 * ffprobe lists the KLV data stream beside the 4K video (x264enc and ffprobe are
 * required: tools/bootstrap.sh installs them), and PyPI's klvdata decodes the values.  Exit 77 without
 * GDAL.
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

#include "klv.h"
#include "gis_test_util.h"

static GstHarness *
klv_harness (const char *props, const char *caps)
{
  gchar *desc = g_strdup_printf ("georegklvenc control-location=%s %s", control_tif, props);
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  gst_harness_set_src_caps_str (h, caps);
  return h;
}

static void
decode_buffer (GstBuffer *b, GrKlvUas *v)
{
  GstMapInfo map;
  char err[256];
  fail_unless (gst_buffer_map (b, &map, GST_MAP_READ));
  fail_unless (gr_klv_uas_decode (map.data, map.size, v, err, sizeof err) == GR_OK, "%s", err);
  gst_buffer_unmap (b, &map);
}

GST_START_TEST (test_values)
{
  GstHarness *h = klv_harness ("start-time=1700000000000000",
      "video/x-raw,format=GRAY8,width=160,height=120,framerate=5/1");
  double H[9];
  similarity (1.25, 25.0, 200, 150, H);
  GstBuffer *b = frame_cut (H);
  add_register_meta (b, H, 0);
  GST_BUFFER_PTS (b) = 10 * GST_SECOND;
  GST_BUFFER_DURATION (b) = 200 * GST_MSECOND;
  GstBuffer *out = gst_harness_push_and_pull (h, b);
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  GstCaps *want = gst_caps_from_string ("meta/x-klv, parsed=(boolean)true");
  fail_unless (caps && gst_caps_is_equal (caps, want));
  gst_caps_unref (want);
  gst_caps_unref (caps);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 10 * GST_SECOND);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), 200 * GST_MSECOND);
  GrKlvUas v;
  decode_buffer (out, &v);
  gst_buffer_unref (out);
  fail_unless_equals_uint64 (v.timestamp_us, 1700000000000000ull);
  fail_unless (v.has_centre && v.has_corners);
  /* ST 0601 points 1-4: upper left, upper right, lower right, lower left */
  const double c[4][2] = { {0, 0}, {FW, 0}, {FW, FH}, {0, FH} };
  const double step = 180.0 / 4294967294.0;
  for (int i = 0; i < 4; i++) {
    double px, py, lon, lat;
    apply (H, c[i][0], c[i][1], &px, &py);
    truth_lonlat (px, py, &lon, &lat);
    fail_unless (fabs (v.corner_lat[i] - lat) <= step && fabs (v.corner_lon[i] - lon) <= 2 * step,
        "corner %d: %.9f %.9f vs %.9f %.9f", i, v.corner_lat[i], v.corner_lon[i], lat, lon);
    fail_unless (fabs (v.centre_lat + v.offset_lat[i] - lat) < 3e-6, "offset %d", i);
  }
  double px, py, lon, lat;
  apply (H, FW / 2.0, FH / 2.0, &px, &py);
  truth_lonlat (px, py, &lon, &lat);
  fail_unless (fabs (v.centre_lat - lat) <= step && fabs (v.centre_lon - lon) <= 2 * step);

  /* the next frame: start-time + PTS since the first frame */
  b = frame_cut (H);
  GST_BUFFER_PTS (b) = 10 * GST_SECOND + 1500 * GST_MSECOND;
  GstNmiLocalizeMeta *lm = gst_buffer_add_nmi_localize_meta (b);
  lm->center_x = 100;
  lm->center_y = 50;
  out = gst_harness_push_and_pull (h, b);
  decode_buffer (out, &v);
  gst_buffer_unref (out);
  fail_unless_equals_uint64 (v.timestamp_us, 1700000001500000ull);
  fail_unless (v.has_centre && !v.has_corners, "coarse: centre only");
  truth_lonlat (100, 50, &lon, &lat);
  fail_unless (fabs (v.centre_lat - lat) <= step && fabs (v.centre_lon - lon) <= 2 * step);

  /* a reference timestamp (timestamp/x-unix) wins; no result: time only */
  b = frame_cut (H);
  GST_BUFFER_PTS (b) = 11 * GST_SECOND;
  GstCaps *unix_caps = gst_caps_new_empty_simple ("timestamp/x-unix");
  gst_buffer_add_reference_timestamp_meta (b, unix_caps, 1600000000123456000ull,
      GST_CLOCK_TIME_NONE);
  gst_caps_unref (unix_caps);
  out = gst_harness_push_and_pull (h, b);
  decode_buffer (out, &v);
  gst_buffer_unref (out);
  fail_unless_equals_uint64 (v.timestamp_us, 1600000000123456ull);
  fail_unless (!v.has_centre && !v.has_corners);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_cost_4k)
{
  GstHarness *h = klv_harness ("", "video/x-raw,format=I420,width=3840,height=2160,"
      "framerate=30/1");
  GstBuffer *frame = gst_buffer_new_allocate (NULL, 3840 * 2160 * 3 / 2, NULL);
  /* a 4K frame whose 160 x 120 transform is scaled: footprint of the same place */
  double H[9];
  similarity (1.25 * 160 / 3840.0, 10.0, 200, 150, H);
  H[2] = 200 - (H[0] * 3840 / 2 + H[1] * 2160 / 2);
  H[5] = 150 - (H[3] * 3840 / 2 + H[4] * 2160 / 2);
  add_register_meta_sized (frame, H, 3840, 2160);
  const int n = 300;
  gint64 t0 = g_get_monotonic_time ();
  for (int i = 0; i < n; i++) {
    GstBuffer *b = gst_buffer_ref (frame);
    b = gst_buffer_make_writable (b);   /* shares the memory; copies the metas */
    GST_BUFFER_PTS (b) = i * GST_SECOND / 30;
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
    gst_buffer_unref (gst_harness_pull (h));
  }
  const double ms = (g_get_monotonic_time () - t0) / 1e3 / n;
  printf ("georegklvenc: %.4f ms per 4K frame (push + pull through the harness)\n", ms);
#if defined(__SANITIZE_ADDRESS__)
  printf ("(instrumented build: the 1 ms budget is checked in normal builds only)\n");
#else
  fail_unless (ms < 1.0, "%.3f ms per frame", ms);
#endif
  gst_buffer_unref (frame);
  gst_harness_teardown (h);
}
GST_END_TEST;

static GPtrArray *sent;         /* GBytes of each packet georegklvenc pushed */
static GPtrArray *received;     /* ... and of each packet tsdemux gave back */

static void
on_handoff (GstElement *sink, GstBuffer *b, GstPad *pad, gpointer data)
{
  GstMapInfo map;
  gst_buffer_map (b, &map, GST_MAP_READ);
  g_ptr_array_add (received, g_bytes_new (map.data, map.size));
  gst_buffer_unmap (b, &map);
}

/* the video of the MPEG-TS round trip: 4K, as full-motion video from a drone is */
#define TS_W 3840
#define TS_H 2160
#define TS_FRAMES 12

static GstPadProbeReturn
add_meta_probe (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  GstBuffer *b = gst_pad_probe_info_get_buffer (info);
  b = gst_buffer_make_writable (b);
  static int frame;
  /* a 4K frame over the same 200 x 150 control pixels as a 160 x 120 one at 1.25 */
  double H[9];
  similarity (1.25 * 160 / TS_W, frame * 3.0, 180 + frame, 140, H);
  H[2] = 180 + frame - (H[0] * TS_W / 2 + H[1] * TS_H / 2);
  H[5] = 140 - (H[3] * TS_W / 2 + H[4] * TS_H / 2);
  add_register_meta_sized (b, H, TS_W, TS_H);
  frame++;
  GST_PAD_PROBE_INFO_DATA (info) = b;
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
collect_probe (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  GstBuffer *b = gst_pad_probe_info_get_buffer (info);
  GstMapInfo map;
  gst_buffer_map (b, &map, GST_MAP_READ);
  g_ptr_array_add (sent, g_bytes_new (map.data, map.size));
  gst_buffer_unmap (b, &map);
  return GST_PAD_PROBE_OK;
}

static void
run_to_eos (GstElement *pipe)
{
  fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  GstBus *bus = gst_element_get_bus (pipe);
  GstMessage *msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "timeout");
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *e = NULL;
    gst_message_parse_error (msg, &e, NULL);
    fail ("pipeline error: %s", e->message);
  }
  gst_message_unref (msg);
  gst_object_unref (bus);
  gst_element_set_state (pipe, GST_STATE_NULL);
}

/* tsdemux's pad-added: the KLV stream's pad to the sink, every other pad left alone. */
static void
link_klv_pad (GstElement * demux, GstPad * pad, gpointer sink)
{
  (void) demux;
  GstCaps *caps = gst_pad_query_caps (pad, NULL);
  const gboolean klv = caps && gst_caps_get_size (caps) > 0 &&
      gst_structure_has_name (gst_caps_get_structure (caps, 0), "meta/x-klv");
  if (caps)
    gst_caps_unref (caps);
  if (!klv)
    return;
  GstPad *sp = gst_element_get_static_pad (GST_ELEMENT (sink), "sink");
  if (!gst_pad_is_linked (sp))
    fail_unless (gst_pad_link (pad, sp) == GST_PAD_LINK_OK, "KLV pad not linked");
  gst_object_unref (sp);
}

GST_START_TEST (test_mpegts_round_trip)
{
  gchar *ts = g_build_filename (tmpdir, "klv.ts", NULL);
  /* the video itself goes in too: the KLV must survive muxing beside a real 4K stream */
  GstElementFactory *x264 = gst_element_factory_find ("x264enc");
  fail_unless (x264 != NULL, "x264enc is missing (gstreamer1.0-plugins-ugly: "
      "tools/bootstrap.sh installs it)");
  gst_object_unref (x264);
  const char *video = "t. ! queue ! x264enc speed-preset=ultrafast tune=zerolatency "
      "key-int-max=10 ! h264parse ! mux. ";
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=%d pattern=ball ! "
      "video/x-raw,format=I420,width=%d,height=%d,framerate=30/1 ! identity name=tag ! "
      "tee name=t %s t. ! queue ! georegklvenc name=klv control-location=%s "
      "start-time=1700000000000000 ! mux. mpegtsmux name=mux ! filesink location=%s",
      TS_FRAMES, TS_W, TS_H, video, control_tif, ts);
  GstElement *pipe = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (pipe != NULL);
  GstElement *tag = gst_bin_get_by_name (GST_BIN (pipe), "tag");
  GstElement *klv = gst_bin_get_by_name (GST_BIN (pipe), "klv");
  GstPad *tp = gst_element_get_static_pad (tag, "src");
  GstPad *kp = gst_element_get_static_pad (klv, "src");
  gst_pad_add_probe (tp, GST_PAD_PROBE_TYPE_BUFFER, add_meta_probe, NULL, NULL);
  gst_pad_add_probe (kp, GST_PAD_PROBE_TYPE_BUFFER, collect_probe, NULL, NULL);
  gst_object_unref (tp);
  gst_object_unref (kp);
  gst_object_unref (tag);
  gst_object_unref (klv);
  sent = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  run_to_eos (pipe);
  gst_object_unref (pipe);
  fail_unless_equals_int (sent->len, TS_FRAMES);

  /* demux: the same packets, byte for byte */
  desc = g_strdup_printf ("filesrc location=%s ! tsdemux name=demux fakesink name=sink "
      "signal-handoffs=true sync=false", ts);
  pipe = gst_parse_launch (desc, NULL);
  g_free (desc);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  GstElement *demux = gst_bin_get_by_name (GST_BIN (pipe), "demux");
  /* the KLV pad linked by hand: a delayed "tsdemux ! meta/x-klv" link tries whichever
   * pad comes first, and when that is the video, the failed link removes its caps
   * filter in PAUSED, a critical that failed the test now and then */
  g_signal_connect (demux, "pad-added", G_CALLBACK (link_klv_pad), sink);
  gst_object_unref (demux);
  received = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  g_signal_connect (sink, "handoff", G_CALLBACK (on_handoff), NULL);
  run_to_eos (pipe);
  gst_object_unref (sink);
  gst_object_unref (pipe);
  fail_unless_equals_int (received->len, sent->len);
  for (guint i = 0; i < sent->len; i++)
    fail_unless (g_bytes_equal (g_ptr_array_index (sent, i), g_ptr_array_index (received, i)),
        "packet %u differs after the round trip", i);
  g_ptr_array_unref (received);

  /* ffprobe lists the KLV data stream */
  gchar *probe = g_find_program_in_path ("ffprobe");
  fail_unless (probe != NULL, "ffprobe is missing (ffmpeg: tools/bootstrap.sh installs it)");
  gchar *probe_cmd = g_strdup_printf ("ffprobe -v error -show_streams %s", ts);
  gchar *streams = run_capture (probe_cmd);
  fail_unless (streams && strstr (streams, "codec_type=data")
      && strstr (streams, "codec_name=klv"), "ffprobe: %s", streams);
  fail_unless (strstr (streams, "codec_name=h264") && strstr (streams, "width=3840")
      && strstr (streams, "height=2160"), "ffprobe: no 4K video stream: %s", streams);
  g_free (streams);
  g_free (probe_cmd);
  g_free (probe);

  /* PyPI klvdata (another decoder) reads the values of the first packet */
  gchar *pkt = g_build_filename (tmpdir, "first.klv", NULL);
  gsize n;
  const guint8 *d = g_bytes_get_data (g_ptr_array_index (sent, 0), &n);
  fail_unless (g_file_set_contents (pkt, (const gchar *) d, n, NULL));
  gchar *cmd = g_strdup_printf ("python3 -c \"import sys\n"
      "try:\n import klvdata\n"
      "except ImportError:\n print('NO-KLVDATA'); sys.exit(0)\n"
      "for p in klvdata.StreamParser(open(sys.argv[1],'rb').read()):\n"
      " for k, e in p.items.items():\n"
      "  print(int.from_bytes(k,'big'), getattr(e.value,'value',e.value))\" %s", pkt);
  gchar *out = NULL;
  gint status = 1;
  fail_unless (g_spawn_command_line_sync (cmd, &out, NULL, &status, NULL) && status == 0);
  if (g_str_has_prefix (out, "NO-KLVDATA")) {
    printf ("note: klvdata not installed (tools/bootstrap.sh installs it)\n");
  } else {
    GrKlvUas v;
    char err[256];
    fail_unless (gr_klv_uas_decode (d, n, &v, err, sizeof err) == GR_OK);
    int matched = 0;
    gchar **lines = g_strsplit (out, "\n", -1);
    for (gchar **l = lines; *l && **l; l++) {
      int tag = atoi (*l);
      const char *val = strchr (*l, ' ') + 1;
      double x = g_ascii_strtod (val, NULL), want = NAN;
      if (tag == 23)
        want = v.centre_lat;
      else if (tag == 24)
        want = v.centre_lon;
      else if (tag >= 82 && tag <= 89)
        want = tag % 2 == 0 ? v.corner_lat[(tag - 82) / 2] : v.corner_lon[(tag - 82) / 2];
      else if (tag >= 26 && tag <= 33)
        want = tag % 2 == 0 ? v.offset_lat[(tag - 26) / 2] : v.offset_lon[(tag - 26) / 2];
      else if (tag == 2)
        fail_unless (strstr (val, "2023-11-14 22:13:20") != NULL, "klvdata time %s", val);
      else if (tag == 65)
        fail_unless (atoi (val) == GR_KLV_UAS_VERSION, "version %s", val);
      if (!isnan (want)) {
        fail_unless (fabs (x - want) < 1e-9 * fmax (1, fabs (want)), "tag %d: klvdata %s, ours "
            "%.12f", tag, val, want);
        matched++;
      }
    }
    fail_unless_equals_int (matched, 2 + 8 + 8);
    g_strfreev (lines);
  }
  g_free (out);
  g_free (cmd);
  g_unlink (pkt);
  g_free (pkt);
  g_ptr_array_unref (sent);
  g_unlink (ts);
  g_free (ts);
}
GST_END_TEST;

GST_START_TEST (test_bad_setup)
{
  GstElement *e = gst_element_factory_make ("georegklvenc", NULL);
  fail_unless (gst_element_set_state (e, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE);
  gst_element_set_state (e, GST_STATE_NULL);
  g_object_set (e, "control-location", control_tif, "crs", "EPSG:0", NULL);
  fail_unless (gst_element_set_state (e, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
}
GST_END_TEST;

static Suite *
georegklvenc_suite (void)
{
  Suite *s = suite_create ("georegklvenc");
  TCase *tc = tcase_create ("general");
  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_values);
  tcase_add_test (tc, test_cost_4k);
  tcase_add_test (tc, test_mpegts_round_trip);
  tcase_add_test (tc, test_bad_setup);
  return s;
}

int
main (int argc, char **argv)
{
  gst_check_init (&argc, &argv);
  make_control ();
  int failed = gst_check_run_suite (georegklvenc_suite (), "georegklvenc", __FILE__);
  g_unlink (control_tif);
  g_rmdir (tmpdir);
  g_free (control_tif);
  g_free (tmpdir);
  gr_synth_image_free (&control);
  return failed;
}
#endif
