/* georeg-live-bench: frames per second and per-frame latency of a live pipeline.
 *
 *   georeg-live-bench [--json PATH] 'PIPELINE DESCRIPTION'
 *
 * The description names the first analysis element "first" and the last one "last"
 * (e.g. nvh264dec ! nmilocalize name=first ! nmiregister ! featurematch name=last).
 * A frame's latency is the wall time from its arrival at first's sink pad to its
 * departure from last's src pad (the analysis chain; the decoder runs ahead of it in
 * the same streaming thread unless a queue decouples them).  Throughput is frames
 * leaving "last" over the wall time from the first frame in to the last frame out.
 * Prints frames, fps, p50/p90/p99/max latency in ms, and the input memory of the
 * frames ("input-memory" of the last element message seen), then the median of every
 * "*-ms" field of the elements' messages (e.g. nmiregister.register-ms), a line.
 * Several concurrent streams (branches of one pipeline, e.g. pipelines/live-4k.sh
 * streams): name them first0 / last0, first1 / last1, ...; each stream is measured
 * on its own (a line each: fps, p50, p99), then the slowest stream's fps and the worst
 * p99 over all streams; --json then writes {"streams": [...], ...}.
 *
 * Accuracy and a pose prior (one stream; the flights of pipelines/georeg-flight, whose
 * ground truth is one "frame x y" line per frame: the frame's top-left corner on the
 * control, a pure translation):
 *   --truth PATH       every nmiregister message's frame-to-control is compared with
 *                      the truth over the whole frame (a 16-pixel grid of pixel
 *                      centres): RMS error in control pixels per frame, then the
 *                      median, the worst, frames within 0.5 / 2 px, frames without a
 *                      transform and frames flagged doubtful (low-inliers,
 *                      poor-spread, refine-failed, imprecise).
 *   --prior SIGMA      with --truth: before each frame reaches the first element, sets
 *                      nmilocalize's search-x / search-y to the true frame centre plus
 *                      Gaussian noise of SIGMA control pixels per axis (fixed seed: a
 *                      navigation prior as telemetry would give it) and search-radius
 *                      to 3 SIGMA, the region the prior's uncertainty allows.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <sys/resource.h>

#include "element-timings.h"

#define MAX_STREAMS 64

typedef struct {
  GMutex lock;
  GQueue in;                   /* entry times (gint64 us), FIFO: in-place elements */
  GArray *lat;                 /* double ms */
  gint64 t_first, t_last;
  double cpu_first, cpu_last;  /* process CPU seconds (all threads) at those times */
} Stats;

/* CPU time of the whole process, user + system, all threads: on a shared machine
 * the wall time says how busy the others were; this says what the chain costs */
static double
process_cpu_s (void)
{
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
      (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Ground truth of a flight (frame -> top-left corner on the control), the prior to
 * feed nmilocalize and the accuracy found. */
typedef struct {
  GArray *tx, *ty;             /* double, indexed by frame */
  double sigma;                /* prior noise, control pixels; 0 = no prior */
  GstElement *loc;             /* nmilocalize that gets the prior, or NULL */
  GRand *rng;
  guint64 frames_in;
  int fw, fh;                  /* frame size, from the caps at the first element */
  GArray *rms;                 /* double, frames with a transform */
  int no_transform, doubtful, messages;
} Truth;

static Truth truth;

static gboolean
truth_load (const char *path)
{
  FILE *f = fopen (path, "r");
  if (!f)
    return FALSE;
  truth.tx = g_array_new (FALSE, TRUE, sizeof (double));
  truth.ty = g_array_new (FALSE, TRUE, sizeof (double));
  truth.rms = g_array_new (FALSE, FALSE, sizeof (double));
  char line[256];
  while (fgets (line, sizeof line, f)) {
    int k;
    double x, y;
    if (sscanf (line, "%d %lf %lf", &k, &x, &y) != 3 || k < 0 || k > 1000000)
      continue;
    if ((guint) k >= truth.tx->len) {
      g_array_set_size (truth.tx, k + 1);
      g_array_set_size (truth.ty, k + 1);
    }
    g_array_index (truth.tx, double, k) = x;
    g_array_index (truth.ty, double, k) = y;
  }
  fclose (f);
  return truth.tx->len > 0;
}

/* one standard normal deviate (Box-Muller) */
static double
gauss (GRand * r)
{
  const double u = g_rand_double_range (r, 1e-300, 1.0), v = g_rand_double (r);
  return sqrt (-2.0 * log (u)) * cos (2.0 * G_PI * v);
}

/* before the frame reaches the first element: its size, and the prior */
static void
truth_frame_in (GstPad * pad)
{
  if (!truth.tx)
    return;
  if (truth.fw == 0) {
    GstCaps *caps = gst_pad_get_current_caps (pad);
    GstVideoInfo vi;
    if (caps && gst_video_info_from_caps (&vi, caps)) {
      truth.fw = GST_VIDEO_INFO_WIDTH (&vi);
      truth.fh = GST_VIDEO_INFO_HEIGHT (&vi);
    }
    if (caps)
      gst_caps_unref (caps);
  }
  const guint64 k = truth.frames_in++;
  if (!truth.loc || truth.sigma <= 0 || k >= truth.tx->len)
    return;
  const double cx = g_array_index (truth.tx, double, k) + truth.fw / 2.0;
  const double cy = g_array_index (truth.ty, double, k) + truth.fh / 2.0;
  const double nx = gauss (truth.rng) * truth.sigma, ny = gauss (truth.rng) * truth.sigma;
  g_object_set (truth.loc, "search-x", MAX (0.0, cx + nx), "search-y",
      MAX (0.0, cy + ny), "search-radius", 3.0 * truth.sigma, NULL);
}

static gboolean
get_double_array (const GstStructure * st, const gchar * name, double *v, guint n)
{
  const GValue *a = gst_structure_get_value (st, name);
  if (!a || !GST_VALUE_HOLDS_ARRAY (a) || gst_value_array_get_size (a) != n)
    return FALSE;
  for (guint i = 0; i < n; i++)
    v[i] = g_value_get_double (gst_value_array_get_value (a, i));
  return TRUE;
}

/* an nmiregister result against the truth, over the whole frame */
static void
truth_check (const GstStructure * st)
{
  guint64 k;
  guint flags = 0;
  double h[9];
  if (!truth.tx || !gst_structure_get_uint64 (st, "frame", &k) || k >= truth.tx->len ||
      truth.fw <= 0)
    return;
  truth.messages++;
  gst_structure_get_uint (st, "flags", &flags);
  /* low-inliers, poor-spread, refine-failed, imprecise: a transform the element
   * itself doubts */
  if (flags & (0x200 | 0x400 | 0x800 | 0x1000))
    truth.doubtful++;
  if (!get_double_array (st, "frame-to-control", h, 9)) {
    truth.no_transform++;
    return;
  }
  const double tx = g_array_index (truth.tx, double, k);
  const double ty = g_array_index (truth.ty, double, k);
  double sum = 0;
  long n = 0;
  for (int y = 8; y < truth.fh; y += 16)
    for (int x = 8; x < truth.fw; x += 16) {
      const double px = x + 0.5, py = y + 0.5;
      const double w = h[6] * px + h[7] * py + h[8];
      const double X = (h[0] * px + h[1] * py + h[2]) / w;
      const double Y = (h[3] * px + h[4] * py + h[5]) / w;
      const double ex = X - (px + tx), ey = Y - (py + ty);
      sum += ex * ex + ey * ey;
      n++;
    }
  const double rms = n ? sqrt (sum / n) : NAN;
  g_array_append_val (truth.rms, rms);
}

static GstPadProbeReturn
on_in (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Stats *s = data;
  truth_frame_in (pad);
  gint64 now = g_get_monotonic_time ();
  g_mutex_lock (&s->lock);
  if (!s->t_first) {
    s->t_first = now;
    s->cpu_first = process_cpu_s ();
  }
  g_queue_push_tail (&s->in, (gpointer) (gintptr) now);
  g_mutex_unlock (&s->lock);
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
on_out (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Stats *s = data;
  gint64 now = g_get_monotonic_time ();
  g_mutex_lock (&s->lock);
  if (!g_queue_is_empty (&s->in)) {
    gint64 t = (gint64) (gintptr) g_queue_pop_head (&s->in);
    double ms = (now - t) / 1000.0;
    g_array_append_val (s->lat, ms);
  }
  s->t_last = now;
  s->cpu_last = process_cpu_s ();
  g_mutex_unlock (&s->lock);
  return GST_PAD_PROBE_OK;
}

/* "message.field" -> GArray of doubles: the elements' own timings */
static GHashTable *timings;

static int
cmp_d (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static double
pct (GArray * a, double p)
{
  if (a->len == 0)
    return 0;
  size_t i = (size_t) (p / 100.0 * (a->len - 1) + 0.5);
  return g_array_index (a, double, i);
}

int
main (int argc, char **argv)
{
  const char *json = NULL, *desc = NULL, *truth_path = NULL;
  double prior_sigma = 0;
  gst_init (&argc, &argv);
  for (int i = 1; i < argc; i++) {
    if (!strcmp (argv[i], "--json") && i + 1 < argc)
      json = argv[++i];
    else if (!strcmp (argv[i], "--truth") && i + 1 < argc)
      truth_path = argv[++i];
    else if (!strcmp (argv[i], "--prior") && i + 1 < argc)
      prior_sigma = g_ascii_strtod (argv[++i], NULL);
    else
      desc = argv[i];
  }
  if (!desc || !(prior_sigma >= 0) || (prior_sigma > 0 && !truth_path)) {
    fprintf (stderr, "usage: georeg-live-bench [--json PATH] [--truth PATH "
        "[--prior SIGMA]] 'PIPELINE'\n");
    return 2;
  }
  if (truth_path && !truth_load (truth_path)) {
    fprintf (stderr, "georeg-live-bench: no \"frame x y\" lines in %s\n", truth_path);
    return 1;
  }
  timings = element_timings_new ();
  GError *err = NULL;
  GstElement *pipe = gst_parse_launch (desc, &err);
  /* gst_parse_launch returns a half-built pipeline AND an error for a missing element
   * (a plugin not found): running it would wait forever for data that never comes */
  if (!pipe || err) {
    fprintf (stderr, "georeg-live-bench: %s\n", err ? err->message : "parse error");
    g_clear_error (&err);
    if (pipe)
      gst_object_unref (pipe);
    return 1;
  }
  /* one stream (first, last) or several (first0, last0, first1, ...) */
  GstElement *first[MAX_STREAMS], *last[MAX_STREAMS];
  int ns = 0;
  first[0] = gst_bin_get_by_name (GST_BIN (pipe), "first");
  last[0] = gst_bin_get_by_name (GST_BIN (pipe), "last");
  if (first[0] && last[0]) {
    ns = 1;
  } else {
    g_clear_object (&first[0]);
    g_clear_object (&last[0]);
    for (; ns < MAX_STREAMS; ns++) {
      gchar fn[32], ln[32];
      g_snprintf (fn, sizeof fn, "first%d", ns);
      g_snprintf (ln, sizeof ln, "last%d", ns);
      first[ns] = gst_bin_get_by_name (GST_BIN (pipe), fn);
      last[ns] = gst_bin_get_by_name (GST_BIN (pipe), ln);
      if (!first[ns] || !last[ns]) {
        g_clear_object (&first[ns]);
        g_clear_object (&last[ns]);
        break;
      }
    }
  }
  if (ns == 0) {
    fprintf (stderr, "georeg-live-bench: name the elements first and last (or first0, "
        "last0, first1, ... for several streams)\n");
    return 2;
  }
  if (truth_path && ns > 1) {
    fprintf (stderr, "georeg-live-bench: --truth takes one stream\n");
    return 2;
  }
  if (prior_sigma > 0) {
    GstIterator *it = gst_bin_iterate_all_by_element_factory_name (GST_BIN (pipe),
        "nmilocalize");
    GValue v = G_VALUE_INIT;
    if (gst_iterator_next (it, &v) == GST_ITERATOR_OK) {
      truth.loc = g_value_dup_object (&v);
      g_value_unset (&v);
    }
    gst_iterator_free (it);
    if (!truth.loc) {
      fprintf (stderr, "georeg-live-bench: --prior needs an nmilocalize\n");
      return 2;
    }
    truth.sigma = prior_sigma;
    truth.rng = g_rand_new_with_seed (20261125);
  }
  Stats st_all[MAX_STREAMS];
  GstPad *pin[MAX_STREAMS], *pout[MAX_STREAMS];
  for (int i = 0; i < ns; i++) {
    Stats *s = &st_all[i];
    memset (s, 0, sizeof *s);
    g_mutex_init (&s->lock);
    g_queue_init (&s->in);
    s->lat = g_array_new (FALSE, FALSE, sizeof (double));
    pin[i] = gst_element_get_static_pad (first[i], "sink");
    pout[i] = gst_element_get_static_pad (last[i], "src");
    gst_pad_add_probe (pin[i], GST_PAD_PROBE_TYPE_BUFFER, on_in, s, NULL);
    gst_pad_add_probe (pout[i], GST_PAD_PROBE_TYPE_BUFFER, on_out, s, NULL);
  }

  GstBus *bus = gst_element_get_bus (pipe);
  gchar input[32] = "?";
  int rc = 0;
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  for (;;) {
    GstMessage *m = gst_bus_timed_pop_filtered (bus, 300 * GST_SECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT);
    if (!m) {
      fprintf (stderr, "georeg-live-bench: timeout\n");
      rc = 1;
      break;
    }
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
      GError *e = NULL;
      gchar *dbg = NULL;
      gst_message_parse_error (m, &e, &dbg);
      fprintf (stderr, "georeg-live-bench: error from %s: %s\n%s\n",
          GST_OBJECT_NAME (GST_MESSAGE_SRC (m)), e->message, dbg ? dbg : "");
      g_clear_error (&e);
      g_free (dbg);
      gst_message_unref (m);
      rc = 1;
      break;
    }
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS) {
      gst_message_unref (m);
      break;
    }
    const GstStructure *st = gst_message_get_structure (m);
    const gchar *in = st ? gst_structure_get_string (st, "input-memory") : NULL;
    if (in && GST_MESSAGE_SRC (m) == GST_OBJECT (first[0]))
      g_strlcpy (input, in, sizeof input);
    if (st)
      element_timings_add (timings, st);
    if (st && gst_structure_has_name (st, "nmiregister"))
      truth_check (st);
    gst_message_unref (m);
  }
  gst_element_set_state (pipe, GST_STATE_NULL);

  /* per stream: fps and latency percentiles */
  double fps[MAX_STREAMS], p50[MAX_STREAMS], p90[MAX_STREAMS], p99[MAX_STREAMS],
      pmax[MAX_STREAMS], wall[MAX_STREAMS];
  GArray *sorted[MAX_STREAMS];
  double min_fps = 1e300, worst_p99 = 0, cpu_ms = NAN;
  for (int i = 0; i < ns; i++) {
    Stats *s = &st_all[i];
    sorted[i] = g_array_copy (s->lat);
    g_array_sort (sorted[i], cmp_d);
    wall[i] = (s->t_last - s->t_first) / 1e6;
    fps[i] = wall[i] > 0 && s->lat->len > 1 ? (s->lat->len - 1) / wall[i] : 0;
    if (ns == 1 && s->lat->len > 1)
      cpu_ms = 1000.0 * (s->cpu_last - s->cpu_first) / (s->lat->len - 1);
    p50[i] = pct (sorted[i], 50);
    p90[i] = pct (sorted[i], 90);
    p99[i] = pct (sorted[i], 99);
    pmax[i] = pct (sorted[i], 100);
    min_fps = MIN (min_fps, fps[i]);
    worst_p99 = MAX (worst_p99, p99[i]);
    if (ns > 1)
      printf ("%sstream %d: ", i ? "        " : "", i);
    printf ("frames %u  wall %.2f s  fps %.1f  latency ms p50 %.2f p90 %.2f p99 %.2f "
        "max %.2f  input-memory %s\n", s->lat->len, wall[i], fps[i], p50[i], p90[i],
        p99[i], pmax[i], input);
    if (ns == 1 && s->lat->len > 1)
      printf ("        process CPU %.1f ms a frame (all threads; %.1f frames per CPU "
          "second)\n", cpu_ms, 1000.0 / cpu_ms);
  }
  if (ns > 1)
    printf ("        %d streams: slowest %.1f fps, worst p99 %.2f ms\n", ns, min_fps,
        worst_p99);
  /* accuracy against the truth */
  double acc_med = NAN, acc_max = NAN;
  int within05 = 0, within2 = 0;
  if (truth.tx) {
    g_array_sort (truth.rms, cmp_d);
    for (guint j = 0; j < truth.rms->len; j++) {
      const double e = g_array_index (truth.rms, double, j);
      within05 += e <= 0.5;
      within2 += e <= 2.0;
    }
    if (truth.rms->len) {
      acc_med = pct (truth.rms, 50);
      acc_max = pct (truth.rms, 100);
    }
    printf ("        accuracy vs truth over the frame (control px RMS): %d frames, "
        "median %.3f, worst %.3f, within 0.5 px %d, within 2 px %d, no transform %d, "
        "flagged doubtful %d%s\n", truth.messages, acc_med, acc_max, within05, within2,
        truth.no_transform, truth.doubtful, truth.sigma > 0 ? "" : " (no prior)");
    if (prior_sigma > 0)
      printf ("        prior: search centre = truth + N(0, %.1f px) per axis, "
          "search-radius %.1f px\n", truth.sigma, 3 * truth.sigma);
  }
  GList *keys = g_list_sort (g_hash_table_get_keys (timings), (GCompareFunc) strcmp);
  if (keys) {
    printf ("        element timings, median ms:");
    for (GList * l = keys; l; l = l->next) {
      GArray *a = g_hash_table_lookup (timings, l->data);
      g_array_sort (a, cmp_d);
      printf (" %s %.2f", (const gchar *) l->data, pct (a, 50));
    }
    printf ("\n");
  }
  if (json) {
    FILE *f = fopen (json, "w");
    if (f) {
      fprintf (f, "{");
      if (ns > 1)
        fprintf (f, "\"n_streams\": %d, \"min_fps\": %.2f, \"worst_p99_ms\": %.3f, "
            "\"streams\": [", ns, min_fps, worst_p99);
      for (int i = 0; i < ns; i++) {
        const Stats *s = &st_all[i];
        fprintf (f, "%s%s\"frames\": %u, \"wall_s\": %.4f, \"fps\": %.2f, "
            "\"p50_ms\": %.3f, \"p90_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f, "
            "\"input_memory\": \"%s\", \"latency_ms\": [", i ? ", " : "", ns > 1 ? "{" : "",
            s->lat->len, wall[i], fps[i], p50[i], p90[i], p99[i], pmax[i], input);
        for (guint j = 0; j < s->lat->len; j++)
          fprintf (f, "%s%.3f", j ? ", " : "", g_array_index (s->lat, double, j));
        fprintf (f, "]%s", ns > 1 ? "}" : "");
      }
      if (ns > 1)
        fprintf (f, "]");
      fprintf (f, ", \"element_ms_median\": {");
      for (GList * l = keys; l; l = l->next)
        fprintf (f, "%s\"%s\": %.3f", l == keys ? "" : ", ", (const gchar *) l->data,
            pct (g_hash_table_lookup (timings, l->data), 50));
      fprintf (f, "}");
      if (isfinite (cpu_ms))
        fprintf (f, ", \"process_cpu_ms_per_frame\": %.2f", cpu_ms);
      if (truth.tx)
        fprintf (f, ", \"accuracy\": {\"frames\": %d, \"prior_sigma_px\": %.3f, "
            "\"rms_px_median\": %.4f, \"rms_px_worst\": %.4f, \"within_0_5_px\": %d, "
            "\"within_2_px\": %d, \"no_transform\": %d, \"doubtful\": %d}",
            truth.messages, truth.sigma, acc_med, acc_max, within05, within2,
            truth.no_transform, truth.doubtful);
      fprintf (f, "}\n");
      fclose (f);
    }
  }
  g_list_free (keys);
  g_hash_table_destroy (timings);
  for (int i = 0; i < ns; i++) {
    g_array_free (sorted[i], TRUE);
    g_array_free (st_all[i].lat, TRUE);
    g_queue_clear (&st_all[i].in);
    g_mutex_clear (&st_all[i].lock);
    gst_object_unref (pin[i]);
    gst_object_unref (pout[i]);
    gst_object_unref (first[i]);
    gst_object_unref (last[i]);
  }
  if (truth.tx) {
    g_array_free (truth.tx, TRUE);
    g_array_free (truth.ty, TRUE);
    g_array_free (truth.rms, TRUE);
  }
  if (truth.rng)
    g_rand_free (truth.rng);
  g_clear_object (&truth.loc);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  return rc;
}
