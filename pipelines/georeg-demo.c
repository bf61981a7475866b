/* georeg-demo: the main job.  Runs synthesized drone frames through
 *   multifilesrc ! pngdec ! videoconvert ! nmilocalize ! fakesink
 * and prints, per frame, the offset, the map position, the score and, when a truth
 * file is given, the error against the known position.
 *
 *   georeg-demo --frames DIR --control PATH [--band B] [--control-nodata V] [--frame-scale S]
 *       [--control-scale S] [--backend auto|cpu|cuda] [--require N]
 *
 * DIR holds frame_%04d.png and truth.csv as georeg-synth writes them.  --require N
 * makes the exit status 1 unless at least N frames lie within 1 pixel (at the search
 * scale) of the truth: the accuracy test uses it.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <gst/gst.h>

#include "synth.h"

typedef struct {
  GrSynthTruth *truth;
  int ntruth;
  double frame_scale, control_scale;
  int frames, within, georef;
  double search_ms;
  gchar *backend;               /* as the element reported it */
  GMainLoop *loop;
  int error;
} Demo;

/* The truth frame centre in control pixel-corner coordinates (the meta's
 * convention); the synthesizer's are pixel-index (centre of pixel 0 = 0). */
static void
truth_centre (const GrSynthTruth *t, double *x, double *y)
{
  *x = t->centre_x + 0.5;
  *y = t->centre_y + 0.5;
}

static void
on_result (Demo *d, const GstStructure *s)
{
  guint64 frame = 0, positions = 0;
  guint flags = 0;
  double ox = NAN, oy = NAN, cx = NAN, cy = NAN, score = NAN, ratio = NAN, ms = 0;
  double mx = NAN, my = NAN;
  gst_structure_get (s, "frame", G_TYPE_UINT64, &frame, "flags", G_TYPE_UINT, &flags,
      "offset-x", G_TYPE_DOUBLE, &ox, "offset-y", G_TYPE_DOUBLE, &oy,
      "center-x", G_TYPE_DOUBLE, &cx, "center-y", G_TYPE_DOUBLE, &cy,
      "score", G_TYPE_DOUBLE, &score, "peak-ratio", G_TYPE_DOUBLE, &ratio,
      "positions", G_TYPE_UINT64, &positions, "search-ms", G_TYPE_DOUBLE, &ms, NULL);
  const gboolean has_map = gst_structure_get_double (s, "map-x", &mx) &&
      gst_structure_get_double (s, "map-y", &my);
  if (!d->backend)
    d->backend = g_strdup (gst_structure_get_string (s, "backend"));
  if (d->frames == 0)
    printf ("%5s %9s %9s %12s %13s %7s %7s %6s %8s %8s\n", "frame", "offset-x", "offset-y",
        "map-x", "map-y", "score", "ratio", "flags", "err(px)", "ms");
  char err_txt[32] = "-";
  if ((int) frame < d->ntruth) {
    double tx, ty;
    truth_centre (&d->truth[frame], &tx, &ty);
    /* error at the search scale, where the search is exact to one pixel */
    const double e = hypot (cx - tx, cy - ty) * d->control_scale;
    snprintf (err_txt, sizeof err_txt, "%.2f", e);
    if (e <= 1.0)
      d->within++;
  }
  char mxs[24] = "-", mys[24] = "-";
  if (has_map) {
    snprintf (mxs, sizeof mxs, "%.2f", mx);
    snprintf (mys, sizeof mys, "%.2f", my);
    d->georef = 1;
  }
  printf ("%5" G_GUINT64_FORMAT " %9.2f %9.2f %12s %13s %7.4f %7.2f %#6x %8s %8.1f\n",
      frame, ox, oy, mxs, mys, score, ratio, flags, err_txt, ms);
  d->frames++;
  d->search_ms += ms;
}

static gboolean
on_message (GstBus *bus, GstMessage *msg, gpointer data)
{
  Demo *d = data;
  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_ELEMENT:
      if (gst_message_has_name (msg, "nmilocalize"))
        on_result (d, gst_message_get_structure (msg));
      break;
    case GST_MESSAGE_ERROR:{
      GError *err;
      gchar *dbg;
      gst_message_parse_error (msg, &err, &dbg);
      fprintf (stderr, "georeg-demo: error from %s: %s\n  %s\n", GST_OBJECT_NAME (msg->src),
          err->message, dbg ? dbg : "");
      g_error_free (err);
      g_free (dbg);
      d->error = 1;
      g_main_loop_quit (d->loop);
      break;
    }
    case GST_MESSAGE_EOS:
      g_main_loop_quit (d->loop);
      break;
    default:
      break;
  }
  return TRUE;
}

int
main (int argc, char **argv)
{
  gchar *frames = NULL, *control = NULL, *backend = NULL;
  gint band = 0, require = -1, control_nodata = -1;
  gdouble fs = 1.0, cs = 1.0;
  GOptionEntry entries[] = {
    {"frames", 'f', 0, G_OPTION_ARG_FILENAME, &frames, "folder with frame_%04d.png "
          "and truth.csv (from georeg-synth frames)", "DIR"},
    {"control", 'c', 0, G_OPTION_ARG_FILENAME, &control, "control image", "PATH"},
    {"band", 'b', 0, G_OPTION_ARG_INT, &band, "control band (0 = luminance)", "B"},
    {"control-nodata", 0, 0, G_OPTION_ARG_INT, &control_nodata, "control value that "
          "marks no data (-1 = none)", "V"},
    {"frame-scale", 0, 0, G_OPTION_ARG_DOUBLE, &fs, "frame resampling factor", "S"},
    {"control-scale", 0, 0, G_OPTION_ARG_DOUBLE, &cs, "control resampling factor", "S"},
    {"backend", 0, 0, G_OPTION_ARG_STRING, &backend, "auto, cpu or cuda", "B"},
    {"require", 0, 0, G_OPTION_ARG_INT, &require, "fail unless at least N frames lie "
          "within 1 search pixel of the truth", "N"},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("- localize synthesized frames over a "
      "control image with nmilocalize");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  GError *err = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || !frames || !control) {
    fprintf (stderr, "georeg-demo: %s\n", err ? err->message : "--frames and --control "
        "are required (see --help)");
    return 2;
  }
  g_option_context_free (ctx);
  /* the default is set after parsing: GOption does not free a string it replaces */
  if (!backend)
    backend = g_strdup ("auto");
  if (g_strcmp0 (backend, "cuda") == 0 && gr_cuda_device_count () == 0) {
    printf ("SKIP: backend=cuda asked for, and no usable CUDA device here\n");
    return 77;
  }

  Demo d = { 0 };
  d.frame_scale = fs;
  d.control_scale = cs;
  char emsg[256];
  gchar *truth_path = g_build_filename (frames, "truth.csv", NULL);
  if (gr_synth_truth_read_csv (truth_path, &d.truth, &d.ntruth, emsg, sizeof emsg) != GR_OK) {
    fprintf (stderr, "georeg-demo: %s\n", emsg);
    return 2;
  }
  gchar *pattern = g_build_filename (frames, "frame_%04d.png", NULL);
  gchar *desc = g_strdup_printf ("multifilesrc location=\"%s\" index=0 stop-index=%d "
      "caps=image/png,framerate=10/1 ! pngdec ! videoconvert ! "
      "nmilocalize name=loc "
      "control-location=\"%s\" band=%d control-nodata=%d frame-scale=%g control-scale=%g "
      "backend=%s ! fakesink sync=false", pattern, d.ntruth - 1, control, band,
      control_nodata, fs, cs, backend);
  GstElement *pipe = gst_parse_launch (desc, &err);
  if (!pipe || err) {       /* a missing element is a "recoverable" error: not here */
    fprintf (stderr, "georeg-demo: %s (is GST_PLUGIN_PATH set to the build's gst/ "
        "folder?)\n  pipeline: %s\n", err ? err->message : "?", desc);
    return 2;
  }
  printf ("pipeline: %s\n\n", desc);
  d.loop = g_main_loop_new (NULL, FALSE);
  GstBus *bus = gst_element_get_bus (pipe);
  gst_bus_add_watch (bus, on_message, &d);
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  g_main_loop_run (d.loop);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_bus_remove_watch (bus);
  gst_object_unref (bus);

  if (d.frames)
    printf ("\n%d frames on the %s backend: %d within 1 px of the truth at the search "
        "scale (%.1f%%); mean search %.1f ms%s\n", d.frames, d.backend ? d.backend : "?",
        d.within, 100.0 * d.within / d.frames, d.search_ms / d.frames,
        d.georef ? "" : "; the control has no georeference, so no map position");
  int rc = d.error ? 1 : 0;
  if (require >= 0 && d.within < require) {
    fprintf (stderr, "georeg-demo: %d frames within 1 px, %d required\n", d.within, require);
    rc = 1;
  }
  gst_object_unref (pipe);
  g_main_loop_unref (d.loop);
  free (d.truth);
  g_free (d.backend);
  g_free (truth_path);
  g_free (pattern);
  g_free (desc);
  g_free (frames);
  g_free (control);
  g_free (backend);
  return rc;
}
