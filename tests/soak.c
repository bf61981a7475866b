/* georeg-soak: long runs of the CPU elements with resident memory sampled, for the soak
 * test (tests/soak.sh) and the valgrind runs (tests/run-valgrind.sh).
 *
 * Frames are synthesized once (a procedural control, frames cut from it along a
 * looping flight path: pipelines/synth.h) and pushed through an appsrc as new buffers;
 * point sets are CSV text, one set per buffer (pointsetparse mode=per-buffer).  Every
 * output buffer is counted at the end of the chain and must carry the element's meta;
 * every bus message is popped and freed as an application would.  VmRSS
 * (/proc/self/status) is sampled every --sample items; with --max-growth the run
 * fails when the resident size at the end exceeds the one at the end of the warm-up
 * by more than that percentage.
 *
 *   georeg-soak --pipeline chain --count 100000 --max-growth 1 --csv rss.csv
 *   georeg-soak --pipeline shoot --count 10000 --max-growth 1
 *
 * Pipelines (all backend=cpu):
 *   localize      appsrc ! nmilocalize ! fakesink
 *   register      appsrc ! nmiregister coarse-fallback=initial-offset overlay=draw ! fakesink
 *   featurematch  appsrc ! featurematch max-images=4 ! fakesink
 *   chain         appsrc ! nmilocalize ! nmiregister overlay=meta ! featurematch ! fakesink
 *   shoot         appsrc ! pointsetparse ! landmarkshoot ! pointsetenc ! fakesink
 *
 * Exit status: 0 = all items through, memory within bounds; 1 = a failure (message on
 * stderr); 2 = bad usage.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/video/video.h>

#include "georeg-meta.h"
#include "nmiregister-meta.h"
#include "featurematch-meta.h"
#include "landmarkshoot-meta.h"
#include "synth.h"

/* control and frame sizes: tiny, so 100,000 frames take minutes */
#define CTL_W 224
#define CTL_H 168
#define FRM_W 96
#define FRM_H 72
#define N_FRAMES 24             /* distinct frames, cycled */
#define N_POINTS 12             /* landmarks per point set */
#define N_SETS 16               /* distinct point sets, cycled */

typedef struct {
  GType meta_api;               /* the meta every output buffer must carry */
  gint with_meta;               /* buffers with it */
  gint results;                 /* buffers whose metas all hold a result (below) */
  gint overlays;                /* buffers with nmiregister's overlay=meta composition */
  gint buffers;
} Counter;

/* A result, not just a flag: a localization score, a transform, an overlapping earlier
 * frame, a fit that brought the landmarks closer.  (The first frames of featurematch
 * have no earlier frame, and some frames may fail honestly: soak only requires most.) */
static gboolean
has_results (GstBuffer * buf)
{
  GstNmiLocalizeMeta *l = gst_buffer_get_nmi_localize_meta (buf);
  GstNmiRegisterMeta *r = gst_buffer_get_nmi_register_meta (buf);
  GstFeatureMatchMeta *f = gst_buffer_get_feature_match_meta (buf);
  GstLandmarkShootMeta *s = gst_buffer_get_landmark_shoot_meta (buf);
  return (!l || (isfinite (l->score) && l->score > 1.0)) &&
      (!r || r->has_transform) && (!f || f->n_pairs > 0) &&
      (!s || s->mean_distance < s->mean_distance_before);
}

static GstPadProbeReturn
count_probe (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Counter *c = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  if (gst_buffer_get_meta (buf, c->meta_api))
    g_atomic_int_inc (&c->with_meta);
  if (has_results (buf))
    g_atomic_int_inc (&c->results);
  if (gst_buffer_get_video_overlay_composition_meta (buf))
    g_atomic_int_inc (&c->overlays);
  g_atomic_int_inc (&c->buffers);
  return GST_PAD_PROBE_OK;
}

static long
vm_rss_kb (void)
{
  FILE *f = fopen ("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  if (!f)
    return -1;
  while (fgets (line, sizeof line, f))
    if (strncmp (line, "VmRSS:", 6) == 0) {
      kb = strtol (line + 6, NULL, 10);
      break;
    }
  fclose (f);
  return kb;
}

/* Pops and frees every queued bus message; returns FALSE on an error message (printed)
 * and sets *eos on EOS.  Blocks up to timeout for the first one. */
static gboolean
drain_bus (GstBus * bus, GstClockTime timeout, gboolean * eos)
{
  GstMessage *msg;
  gboolean ok = TRUE;
  while ((msg = gst_bus_timed_pop (bus, timeout)) != NULL) {
    timeout = 0;
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      GError *err = NULL;
      gchar *dbg = NULL;
      gst_message_parse_error (msg, &err, &dbg);
      fprintf (stderr, "georeg-soak: error from %s: %s\n  %s\n",
          GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)), err->message, dbg ? dbg : "");
      g_clear_error (&err);
      g_free (dbg);
      ok = FALSE;
    } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS && eos) {
      *eos = TRUE;
    }
    gst_message_unref (msg);
  }
  return ok;
}

/* The control (luma of the synthesized image, written as an 8-bit gray PNG) and
 * N_FRAMES GRAY8 frames cut from it along a closed path with a slow rotation. */
static gboolean
make_frames (const gchar * dir, gchar ** control_path, guint8 ** frames)
{
  GrSynthControlParams p;
  GrSynthImage img = { 0 };
  char err[256];
  gr_synth_control_params_init (&p);
  p.width = CTL_W;
  p.height = CTL_H;
  p.depth = 8;
  p.seed = 7;
  if (gr_synth_control_generate (&p, &img, err, sizeof err) != GR_OK) {
    fprintf (stderr, "georeg-soak: control: %s\n", err);
    return FALSE;
  }
  GrPlaneF luma;
  const double w[3] = { 0.299, 0.587, 0.114 };
  GrPlaneF bands[3] = { gr_synth_image_plane (&img, 0), gr_synth_image_plane (&img, 1),
    gr_synth_image_plane (&img, 2)
  };
  if (gr_synth_mix (bands, w, 3, 0.0, 255.0, &luma) != GR_OK) {
    gr_synth_image_free (&img);
    return FALSE;
  }
  gr_synth_image_free (&img);
  *control_path = g_build_filename (dir, "control.png", NULL);
  const float *planes[1] = { luma.data };
  if (gr_synth_png_write (*control_path, planes, 1, NULL, CTL_W, CTL_H, 255.0, 8, err,
          sizeof err) != GR_OK) {
    fprintf (stderr, "georeg-soak: %s\n", err);
    gr_synth_plane_free (&luma);
    return FALSE;
  }
  *frames = g_malloc ((gsize) N_FRAMES * FRM_W * FRM_H);
  for (int i = 0; i < N_FRAMES; i++) {
    const double a = 2.0 * G_PI * i / N_FRAMES;
    GrSynthPose pose = { 0 };
    pose.centre_x = CTL_W / 2.0 + 40.0 * cos (a);
    pose.centre_y = CTL_H / 2.0 + 28.0 * sin (a);
    pose.rotation_deg = 3.0 * sin (2.0 * a);
    pose.scale = 1.0;
    double h[9];
    GrPlaneF cut;
    gr_synth_pose_homography (&pose, FRM_W, FRM_H, h);
    if (gr_synth_cut (&luma, h, FRM_W, FRM_H, 1, &cut) != GR_OK) {
      gr_synth_plane_free (&luma);
      return FALSE;
    }
    guint8 *f = *frames + (gsize) i * FRM_W * FRM_H;
    for (int k = 0; k < FRM_W * FRM_H; k++)
      f[k] = (guint8) CLAMP (floorf (cut.data[k] + 0.5f), 0.0f, 255.0f);
    gr_synth_plane_free (&cut);
  }
  gr_synth_plane_free (&luma);
  return TRUE;
}

/* The template (N_POINTS on an ellipse, CSV) and N_SETS targets: the template under a
 * smooth deformation plus noise. */
static gboolean
make_point_sets (const gchar * dir, gchar ** template_path, gchar ** sets)
{
  GString *t = g_string_new ("x,y\n");
  GrSynthRng rng;
  gr_synth_rng_init (&rng, 2026);
  double px[N_POINTS], py[N_POINTS];
  for (int i = 0; i < N_POINTS; i++) {
    const double a = 2.0 * G_PI * i / N_POINTS;
    px[i] = 4.0 * cos (a);
    py[i] = 2.5 * sin (a);
    g_string_append_printf (t, "%.9g,%.9g\n", px[i], py[i]);
  }
  *template_path = g_build_filename (dir, "template.csv", NULL);
  gboolean ok = g_file_set_contents (*template_path, t->str, -1, NULL);
  g_string_free (t, TRUE);
  for (int s = 0; s < N_SETS; s++) {
    GString *g = g_string_new ("x,y\n");
    const double bend = 0.3 * sin (2.0 * G_PI * s / N_SETS);
    for (int i = 0; i < N_POINTS; i++)
      g_string_append_printf (g, "%.9g,%.9g\n",
          px[i] * 1.05 + bend * py[i] + 0.02 * gr_synth_rng_gauss (&rng),
          py[i] + bend * 0.2 * px[i] * px[i] + 0.02 * gr_synth_rng_gauss (&rng));
    sets[s] = g_string_free (g, FALSE);
  }
  return ok;
}

int
main (int argc, char **argv)
{
  gchar *pipeline = NULL, *csv = NULL;
  gint count = 1000, sample = 0, warmup = -1;
  gdouble max_growth = -1.0;
  GOptionEntry entries[] = {
    {"pipeline", 'p', 0, G_OPTION_ARG_STRING, &pipeline,
        "localize, register, featurematch, chain or shoot", "P"},
    {"count", 'n', 0, G_OPTION_ARG_INT, &count, "frames or point sets (default 1000)",
        "N"},
    {"sample", 0, 0, G_OPTION_ARG_INT, &sample, "items between VmRSS samples (default "
          "count / 100)", "N"},
    {"warmup", 0, 0, G_OPTION_ARG_INT, &warmup, "items before the reference sample "
          "(default count / 10)", "N"},
    {"max-growth", 0, 0, G_OPTION_ARG_DOUBLE, &max_growth, "fail when VmRSS grew by "
          "more than this percentage after the warm-up (default: no check)", "PCT"},
    {"csv", 0, 0, G_OPTION_ARG_FILENAME, &csv, "write the samples (items, seconds, "
          "VmRSS kB) to this file", "PATH"},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("- push many small frames or point sets "
      "through the georeg elements and watch resident memory");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  GError *err = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || !pipeline || count < 1) {
    fprintf (stderr, "georeg-soak: %s\n", err ? err->message : "--pipeline and a "
        "positive --count are required (see --help)");
    g_clear_error (&err);
    g_option_context_free (ctx);
    return 2;
  }
  g_option_context_free (ctx);
  if (sample <= 0)
    sample = MAX (1, count / 100);
  if (warmup < 0)
    warmup = count / 10;

  const gboolean shoot = g_str_equal (pipeline, "shoot");
  gchar *dir = g_dir_make_tmp ("georeg-soak-XXXXXX", NULL);
  gchar *control = NULL, *tpl = NULL, *sets[N_SETS] = { NULL };
  guint8 *frames = NULL;
  gchar *desc = NULL;
  GType meta_api = G_TYPE_INVALID;
  const gchar *loc = "nmilocalize name=loc control-location=\"%s\" backend=cpu "
      "frame-scale=0.25 control-scale=0.25";
  /* small keypoint and window counts: the element's whole path, at a tiny cost */
  const gchar *reg = "nmiregister name=reg control-location=\"%s\" backend=cpu "
      "max-keypoints=24 template-size=9 window-size=25 refine-window=15 levels=16";
  const gchar *fm = "featurematch name=fm backend=cpu max-images=4 max-features=64 "
      "min-matches=8";
  int rc = 1;
  if (!dir || !(shoot ? make_point_sets (dir, &tpl, sets) :
          make_frames (dir, &control, &frames)))
    goto out;

  /* not blocking: the loop below waits for room itself, watching the bus, so that an
   * error downstream ends the run instead of leaving a push blocked for ever */
  const gchar *src = "appsrc name=src format=time block=false max-bytes=0";
  gchar *l = NULL, *r = NULL;
  if (!shoot) {
    l = g_strdup_printf (loc, control);
    r = g_strdup_printf (reg, control);
  }
  if (g_str_equal (pipeline, "localize")) {
    desc = g_strdup_printf ("%s ! %s ! fakesink name=sink", src, l);
    meta_api = GST_NMI_LOCALIZE_META_API_TYPE;
  } else if (g_str_equal (pipeline, "register")) {
    /* with the drawn overlay: its canvas, bands and blend on every frame */
    desc = g_strdup_printf ("%s ! %s coarse-fallback=initial-offset "
        "initial-offset-x=%d initial-offset-y=%d overlay=draw ! fakesink name=sink", src, r,
        (CTL_W - FRM_W) / 2, (CTL_H - FRM_H) / 2);
    meta_api = GST_NMI_REGISTER_META_API_TYPE;
  } else if (g_str_equal (pipeline, "featurematch")) {
    desc = g_strdup_printf ("%s ! %s ! fakesink name=sink", src, fm);
    meta_api = GST_FEATURE_MATCH_META_API_TYPE;
  } else if (g_str_equal (pipeline, "chain")) {
    /* the overlay as a composition meta on every frame, freed with the buffer */
    desc = g_strdup_printf ("%s ! %s ! %s overlay=meta ! %s ! fakesink name=sink", src, l,
        r, fm);
    meta_api = GST_FEATURE_MATCH_META_API_TYPE;
  } else if (shoot) {
    desc = g_strdup_printf ("%s caps=text/csv ! pointsetparse mode=per-buffer ! "
        "landmarkshoot name=shoot template-location=\"%s\" backend=cpu sigma=2 "
        "time-steps=6 max-iterations=8 lambda=1e3 progress-interval=0 ! pointsetenc ! "
        "fakesink name=sink", src, tpl);
    meta_api = GST_LANDMARK_SHOOT_META_API_TYPE;
  }
  g_free (l);
  g_free (r);
  if (!desc) {
    fprintf (stderr, "georeg-soak: unknown pipeline \"%s\"\n", pipeline);
    rc = 2;
    goto out;
  }

  GstElement *pipe = gst_parse_launch (desc, &err);
  if (!pipe || err) {
    fprintf (stderr, "georeg-soak: %s\n  %s\n", err ? err->message : "?", desc);
    g_clear_error (&err);
    if (pipe)
      gst_object_unref (pipe);
    goto out;
  }
  printf ("pipeline: %s\n", desc);
  GstElement *appsrc = gst_bin_get_by_name (GST_BIN (pipe), "src");
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  if (!shoot) {
    GstCaps *caps = gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING, "GRAY8",
        "width", G_TYPE_INT, FRM_W, "height", G_TYPE_INT, FRM_H,
        "framerate", GST_TYPE_FRACTION, 10, 1, NULL);
    gst_app_src_set_caps (GST_APP_SRC (appsrc), caps);
    gst_caps_unref (caps);
  }
  /* the meta is checked before pointsetenc's text (which copies it anyway) */
  Counter counter = { meta_api, 0, 0, 0, 0 };
  GstPad *pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, count_probe, &counter, NULL);
  gst_object_unref (pad);
  gst_object_unref (sink);

  GstBus *bus = gst_element_get_bus (pipe);
  gboolean ok = gst_element_set_state (pipe, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE;
  gboolean eos = FALSE;
  FILE *out = csv ? fopen (csv, "w") : NULL;
  if (out)
    fprintf (out, "items,seconds,vmrss_kb\n");
  const gint64 t0 = g_get_monotonic_time ();
  long rss_warm = -1, rss_max = 0, rss_end = -1;
  for (gint i = 0; ok && i < count; i++) {
    GstBuffer *buf;
    if (shoot)
      buf = gst_buffer_new_memdup (sets[i % N_SETS], strlen (sets[i % N_SETS]));
    else
      buf = gst_buffer_new_memdup (frames + (gsize) (i % N_FRAMES) * FRM_W * FRM_H,
          FRM_W * FRM_H);
    GST_BUFFER_PTS (buf) = gst_util_uint64_scale_int (i, GST_SECOND, 10);
    GST_BUFFER_DURATION (buf) = GST_SECOND / 10;
    /* at most about 20 kB queued in appsrc (a few frames) */
    while (ok && gst_app_src_get_current_level_bytes (GST_APP_SRC (appsrc)) > 20000)
      ok = drain_bus (bus, GST_MSECOND, NULL);
    if (gst_app_src_push_buffer (GST_APP_SRC (appsrc), buf) != GST_FLOW_OK) {
      fprintf (stderr, "georeg-soak: push %d refused\n", i);
      ok = FALSE;
    }
    ok = drain_bus (bus, 0, NULL) && ok;
    if ((i + 1) % sample == 0 || i + 1 == count) {
      const long rss = vm_rss_kb ();
      const double secs = (g_get_monotonic_time () - t0) / 1e6;
      if (out) {
        fprintf (out, "%d,%.3f,%ld\n", i + 1, secs, rss);
        fflush (out);
      }
      if ((i + 1) % (10 * sample) == 0) {
        printf ("%9d items %9.1f s  VmRSS %ld kB\n", i + 1, secs, rss);
        fflush (stdout);
      }
      if (i + 1 >= warmup && rss_warm < 0)
        rss_warm = rss;
      if (rss_warm >= 0)
        rss_max = MAX (rss_max, rss);
      rss_end = rss;
    }
  }
  gst_app_src_end_of_stream (GST_APP_SRC (appsrc));
  /* EOS within 10 minutes, or the run fails (no endless wait) */
  const gint64 deadline = g_get_monotonic_time () + 600 * G_TIME_SPAN_SECOND;
  while (ok && !eos) {
    const gint64 left = deadline - g_get_monotonic_time ();
    if (left <= 0) {
      fprintf (stderr, "georeg-soak: no EOS within 10 minutes of the last item\n");
      ok = FALSE;
      break;
    }
    ok = drain_bus (bus, left * GST_USECOND, &eos) && ok;
  }
  const double secs = (g_get_monotonic_time () - t0) / 1e6;
  gst_element_set_state (pipe, GST_STATE_NULL);
  drain_bus (bus, 0, NULL);
  gst_object_unref (bus);
  gst_object_unref (appsrc);
  gst_object_unref (pipe);
  if (out)
    fclose (out);

  printf ("%s: %d items pushed, %d out, %d with %s, %d with a result, %d with an "
      "overlay meta; %.1f s (%.2f ms per item)\n", pipeline, count, counter.buffers,
      counter.with_meta, g_type_name (meta_api), counter.results, counter.overlays, secs,
      1e3 * secs / count);
  if (rss_warm > 0) {
    const double growth = 100.0 * (rss_end - rss_warm) / rss_warm;
    printf ("VmRSS: %ld kB after %d items (warm-up), %ld kB at the end, %ld kB at most "
        "after the warm-up: growth %+.2f%%\n", rss_warm, warmup, rss_end, rss_max, growth);
    if (max_growth >= 0 && (growth > max_growth ||
            100.0 * (rss_max - rss_warm) / rss_warm > max_growth)) {
      fprintf (stderr, "georeg-soak: resident memory grew by more than %g%%\n",
          max_growth);
      ok = FALSE;
    }
  }
  if (ok && (counter.buffers != count || counter.with_meta != count)) {
    fprintf (stderr, "georeg-soak: %d of %d items came out, %d with the meta\n",
        counter.buffers, count, counter.with_meta);
    ok = FALSE;
  }
  if (ok && g_str_equal (pipeline, "chain") && counter.overlays != count) {
    fprintf (stderr, "georeg-soak: %d of %d frames carry the overlay meta\n",
        counter.overlays, count);
    ok = FALSE;
  }
  if (ok && counter.results < count / 2) {
    fprintf (stderr, "georeg-soak: only %d of %d items have a result\n",
        counter.results, count);
    ok = FALSE;
  }
  rc = ok ? 0 : 1;

out:
  if (control)
    g_unlink (control);
  if (tpl)
    g_unlink (tpl);
  if (dir)
    g_rmdir (dir);
  g_free (control);
  g_free (tpl);
  for (int s = 0; s < N_SETS; s++)
    g_free (sets[s]);
  g_free (frames);
  g_free (desc);
  g_free (dir);
  g_free (pipeline);
  g_free (csv);
  gst_deinit ();
  return rc;
}
