/* georeg-multistream: several live streams, each its own pipeline in this one process,
 * over the CUDA devices of the host (issue 16; docs/multi-gpu.md).
 *
 *   georeg-multistream [--decoder FACTORY] [--json PATH] [--no-preroll]
 *                      [--period-ms P | --in-phase] 'PIPELINE 0' 'PIPELINE 1' ...
 *
 * Each description names its first analysis element "first" and its last one "last";
 * their georeg elements are meant to run with cuda-device-id=-1, so that the
 * placement (gst/gstgeoregplacement.h) spreads the pipelines over the devices: it
 * works per process, which is why the streams are pipelines of one process here, not
 * processes.  The pipelines are brought to READY one after the other (the georeg
 * elements are placed then), the device of each is read from "first"'s CUDA context,
 * then all are started and prerolled (PAUSED; each stream's first frame goes through
 * then), then all play at once on one clock, stream i's frames due i / N of a frame
 * period (--period-ms, default 1000/30) after stream 0's: streams from independent
 * cameras arrive at unrelated phases, and spreading them evenly is that case without
 * its luck.  --in-phase: every stream's frames due at the same instants (recordings
 * replayed from one trigger; the worst case: every stream's frame contends at once).
 * --no-preroll: each pipeline is set to PLAYING in turn (the earlier ones then run
 * beside the later ones' start; phases as the starts fall).
 *
 * --decoder nvh264dec: each description holds two unlinked chains, one ending in an
 * element named "parse" (e.g. filesrc ! h264parse name=parse) and one starting with an
 * element named "decout" (e.g. capsfilter name=decout caps=...); once the pipeline's
 * device d is known, the decoder of that device (FACTORY or one of nvcodec's
 * nvh264device<i>dec, the one whose cuda-device-id is d) is put between them and adopts
 * the georeg elements' context: the frames are decoded on the device that analyses
 * them (zero copy).  A device without its own decoder element gets FACTORY (frames
 * then cross through the host).
 *
 * Per stream: frames, fps (frames leaving "last" over the wall time from the first in
 * to the last out), latency p50 / p99 (a frame's arrival at first's sink pad to its
 * departure from last's src pad), the device; then the slowest fps, the worst p99 and
 * the streams per device; the fps and p99 after each stream's first 30 frames (the
 * start left out: contexts, controls and caches are made then); the medians and p99 of
 * the "*-ms" fields of the elements' messages over every stream (where the time goes),
 * and the process's CPU time over the wall time (cores busy).  Exit 1 on a pipeline
 * error or a timeout (300 s).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <gst/gst.h>

#include "element-timings.h"

#define WARM_FRAMES 30          /* frames left out of the steady fps */

typedef struct {
  GstElement *pipe, *first, *last;
  GMutex lock;
  GQueue in;                    /* arrival times, us: the elements work in place */
  GArray *lat;                  /* ms */
  gint64 t_first, t_last, t_warm; /* t_warm: the WARM_FRAMES-th frame out */
  gint device;
  gboolean eos, error;
} Stream;

static GstPadProbeReturn
probe_in (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Stream *s = data;
  const gint64 now = g_get_monotonic_time ();
  g_mutex_lock (&s->lock);
  g_queue_push_tail (&s->in, (gpointer) (gintptr) now);
  if (!s->t_first)
    s->t_first = now;
  g_mutex_unlock (&s->lock);
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
probe_out (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Stream *s = data;
  const gint64 now = g_get_monotonic_time ();
  g_mutex_lock (&s->lock);
  if (!g_queue_is_empty (&s->in)) {
    const double ms = (now - (gint64) (gintptr) g_queue_pop_head (&s->in)) / 1000.0;
    g_array_append_val (s->lat, ms);
    if (s->lat->len == WARM_FRAMES)
      s->t_warm = now;
  }
  s->t_last = now;
  g_mutex_unlock (&s->lock);
  return GST_PAD_PROBE_OK;
}

/* the device of the CUDA context the element answers with, -1 = none */
static gint
device_of (GstElement * e)
{
  GstPad *pad = gst_element_get_static_pad (e, "sink");
  GstQuery *q = gst_query_new_context ("gst.cuda.context");
  guint d = 0;
  gint dev = -1;
  if (pad && gst_pad_query (pad, q)) {
    GstContext *c = NULL;
    gst_query_parse_context (q, &c);
    if (c && gst_structure_get_uint (gst_context_get_structure (c), "cuda-device-id", &d))
      dev = (gint) d;
  }
  gst_query_unref (q);
  if (pad)
    gst_object_unref (pad);
  return dev;
}

static gboolean
insert_decoder (Stream * s, const gchar * factory)
{
  GstElement *parse = gst_bin_get_by_name (GST_BIN (s->pipe), "parse");
  GstElement *decout = gst_bin_get_by_name (GST_BIN (s->pipe), "decout");
  gboolean ok = FALSE;
  if (parse && decout) {
    /* nvcodec registers FACTORY for its first device and nvh264device<i>dec for the
     * i-th next one; each says its device in the read-only "cuda-device-id" */
    GstElement *dec = NULL;
    for (gint i = 0; i < 64 && !dec && s->device >= 0; i++) {
      gchar *name = i ? g_strdup_printf ("nvh264device%ddec", i) : g_strdup (factory);
      GstElement *e = gst_element_factory_make (name, NULL);
      g_free (name);
      if (!e)
        continue;
      guint dev = 0;
      if (g_object_class_find_property (G_OBJECT_GET_CLASS (e), "cuda-device-id"))
        g_object_get (e, "cuda-device-id", &dev, NULL);
      if ((gint) dev == s->device)
        dec = e;
      else
        gst_object_unref (gst_object_ref_sink (e));
    }
    if (!dec)
      dec = gst_element_factory_make (factory, NULL);
    if (dec) {
      gst_bin_add (GST_BIN (s->pipe), dec);
      ok = gst_element_link_many (parse, dec, decout, NULL) &&
          gst_element_sync_state_with_parent (dec);
      printf ("        decoder %s\n", GST_OBJECT_NAME (gst_element_get_factory (dec)));
    }
  }
  g_clear_object (&parse);
  g_clear_object (&decout);
  return ok;
}

/* "structure.field" -> GArray of doubles: the elements' own timings, all streams */
static GHashTable *timings;

static double
process_cpu_s (void)
{
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec +
      ru.ru_stime.tv_usec) / 1e6;
}

/* what went wrong with stream i, with the element's own error when it posted one */
static void
report_failure (guint i, GstElement * pipe, const gchar * what)
{
  GstBus *bus = gst_element_get_bus (pipe);
  GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  GError *e = NULL;
  if (m)
    gst_message_parse_error (m, &e, NULL);
  fprintf (stderr, "stream %u: %s%s%s\n", i, what, e ? ": " : "", e ? e->message : "");
  g_clear_error (&e);
  if (m)
    gst_message_unref (m);
  gst_object_unref (bus);
}

static int
cmp_d (const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static double
pct (GArray * a, double p)
{
  return a->len ? g_array_index (a, double, (guint) (p / 100.0 * (a->len - 1) + 0.5)) : 0;
}

int
main (int argc, char **argv)
{
  const char *decoder = NULL, *json = NULL;
  gboolean preroll = TRUE;
  double period_ms = 1000.0 / 30.0;
  GPtrArray *descs = g_ptr_array_new ();
  gst_init (&argc, &argv);
  for (int i = 1; i < argc; i++) {
    if (!strcmp (argv[i], "--decoder") && i + 1 < argc)
      decoder = argv[++i];
    else if (!strcmp (argv[i], "--no-preroll"))
      preroll = FALSE;
    else if (!strcmp (argv[i], "--period-ms") && i + 1 < argc) {
      char *end = NULL;
      period_ms = g_ascii_strtod (argv[++i], &end);
      if (!end || end == argv[i] || *end)
        period_ms = NAN;        /* refused below */
    }
    else if (!strcmp (argv[i], "--in-phase"))
      period_ms = 0.0;
    else if (!strcmp (argv[i], "--json") && i + 1 < argc)
      json = argv[++i];
    else
      g_ptr_array_add (descs, argv[i]);
  }
  const guint ns = descs->len;
  if (ns == 0) {
    fprintf (stderr, "usage: georeg-multistream [--decoder FACTORY] [--json PATH] "
        "[--no-preroll] [--period-ms P | --in-phase] 'PIPELINE' ...\n");
    return 2;
  }
  if (!(period_ms >= 0.0 && period_ms <= 10000.0)) {
    fprintf (stderr, "--period-ms: 0 to 10000 ms\n");
    return 2;
  }
  Stream *st = g_new0 (Stream, ns);
  for (guint i = 0; i < ns; i++) {
    Stream *s = &st[i];
    GError *err = NULL;
    s->pipe = gst_parse_launch (g_ptr_array_index (descs, i), &err);
    if (!s->pipe || err) {
      fprintf (stderr, "stream %u: %s\n", i, err ? err->message : "parse error");
      return 1;
    }
    s->first = gst_bin_get_by_name (GST_BIN (s->pipe), "first");
    s->last = gst_bin_get_by_name (GST_BIN (s->pipe), "last");
    if (!s->first || !s->last) {
      fprintf (stderr, "stream %u: name the elements first and last\n", i);
      return 2;
    }
    g_mutex_init (&s->lock);
    g_queue_init (&s->in);
    s->lat = g_array_new (FALSE, FALSE, sizeof (double));
    GstPad *p = gst_element_get_static_pad (s->first, "sink");
    gst_pad_add_probe (p, GST_PAD_PROBE_TYPE_BUFFER, probe_in, s, NULL);
    gst_object_unref (p);
    p = gst_element_get_static_pad (s->last, "src");
    gst_pad_add_probe (p, GST_PAD_PROBE_TYPE_BUFFER, probe_out, s, NULL);
    gst_object_unref (p);
    /* placement happens now, one pipeline after the other */
    if (gst_element_set_state (s->pipe, GST_STATE_READY) == GST_STATE_CHANGE_FAILURE) {
      fprintf (stderr, "stream %u: could not reach READY\n", i);
      return 1;
    }
    s->device = device_of (s->first);
    printf ("stream %u: device %d\n", i, s->device);
    if (decoder && !insert_decoder (s, decoder)) {
      fprintf (stderr, "stream %u: could not put a decoder between parse and decout\n",
          i);
      return 1;
    }
  }
  timings = element_timings_new ();
  const double cpu0 = process_cpu_s ();
  const gint64 wall0 = g_get_monotonic_time ();
  /* every pipeline started (its elements' start: engines, device buffers, controls on
   * the device) and prerolled before any plays, as an application that starts a set of
   * streams together does: otherwise the streams played first run beside the later
   * ones' start-up, which lands in their first second (16 streams on 4 GPUs: the first
   * 8 played had p99 28-53 ms over the run, the last 8 18-23 ms) */
  if (preroll) {
    for (guint i = 0; i < ns; i++)
      if (gst_element_set_state (st[i].pipe, GST_STATE_PAUSED) ==
          GST_STATE_CHANGE_FAILURE) {
        report_failure (i, st[i].pipe, "could not start (READY -> PAUSED)");
        return 1;
      }
    for (guint i = 0; i < ns; i++) {
      const GstStateChangeReturn r = gst_element_get_state (st[i].pipe, NULL, NULL,
          60 * GST_SECOND);
      if (r == GST_STATE_CHANGE_FAILURE || r == GST_STATE_CHANGE_ASYNC) {
        report_failure (i, st[i].pipe, r == GST_STATE_CHANGE_ASYNC ?
            "did not preroll within 60 s" : "failed to preroll");
        return 1;
      }
    }
    /* one clock, and each pipeline's base time set here (start time NONE: the pipeline
     * keeps it), stream i's i / ns of a period later; 50 ms ahead, so that every
     * pipeline is playing before its first frame is due */
    GstClock *clock = gst_system_clock_obtain ();
    const GstClockTime base = gst_clock_get_time (clock) + 50 * GST_MSECOND;
    const gint64 play = g_get_monotonic_time () + 50 * 1000;
    for (guint i = 0; i < ns; i++) {
      const GstClockTime phase = (GstClockTime) (period_ms * 1e6 * i / ns);
      gst_pipeline_use_clock (GST_PIPELINE (st[i].pipe), clock);
      gst_element_set_start_time (st[i].pipe, GST_CLOCK_TIME_NONE);
      gst_element_set_base_time (st[i].pipe, base + phase);
      /* the rate counts from the moment its first frame is due (the prerolled frame
       * left before) */
      g_mutex_lock (&st[i].lock);
      st[i].t_first = play + (gint64) (phase / 1000);
      g_mutex_unlock (&st[i].lock);
    }
    gst_object_unref (clock);
    if (period_ms > 0.0)
      printf ("prerolled; playing on one clock, stream i's frames due i / %u of %.1f ms "
          "after stream 0's\n", ns, period_ms);
    else
      printf ("prerolled; playing on one clock, every stream's frames due together "
          "(--in-phase)\n");
  }
  for (guint i = 0; i < ns; i++)
    gst_element_set_state (st[i].pipe, GST_STATE_PLAYING);
  /* every bus until each pipeline ends */
  int rc = 0;
  const gint64 deadline = g_get_monotonic_time () + 300 * G_USEC_PER_SEC;
  guint done = 0;
  while (done < ns) {
    if (g_get_monotonic_time () > deadline) {
      fprintf (stderr, "timeout\n");
      rc = 1;
      break;
    }
    for (guint i = 0; i < ns; i++) {
      Stream *s = &st[i];
      if (s->eos || s->error)
        continue;
      GstBus *bus = gst_element_get_bus (s->pipe);
      /* one mask for all three: a pop discards the messages its mask leaves out */
      GstMessage *m;
      while ((m = gst_bus_timed_pop_filtered (bus, 5 * GST_MSECOND, GST_MESSAGE_ELEMENT |
                  GST_MESSAGE_EOS | GST_MESSAGE_ERROR)) &&
          GST_MESSAGE_TYPE (m) == GST_MESSAGE_ELEMENT) {
        const GstStructure *str = gst_message_get_structure (m);
        if (str)
          element_timings_add (timings, str);
        gst_message_unref (m);
      }
      gst_object_unref (bus);
      if (!m)
        continue;
      if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
        GError *e = NULL;
        gst_message_parse_error (m, &e, NULL);
        fprintf (stderr, "stream %u: error from %s: %s\n", i,
            GST_OBJECT_NAME (GST_MESSAGE_SRC (m)), e->message);
        g_clear_error (&e);
        s->error = TRUE;
        rc = 1;
      } else {
        s->eos = TRUE;
      }
      done++;
      gst_message_unref (m);
    }
  }
  const double busy = (process_cpu_s () - cpu0) / ((g_get_monotonic_time () - wall0) /
      1e6);
  for (guint i = 0; i < ns; i++)
    gst_element_set_state (st[i].pipe, GST_STATE_NULL);

  double min_fps = 1e300, worst_p99 = 0, min_warm_fps = 1e300, worst_warm_p99 = 0;
  GHashTable *per_dev = g_hash_table_new (g_direct_hash, g_direct_equal);
  GString *js = g_string_new ("{\"streams\": [");
  for (guint i = 0; i < ns; i++) {
    Stream *s = &st[i];
    /* the steady p99: the frames after the first WARM_FRAMES (in arrival order here) */
    GArray *steady = g_array_new (FALSE, FALSE, sizeof (double));
    if (s->lat->len > WARM_FRAMES)
      g_array_append_vals (steady, &g_array_index (s->lat, double, WARM_FRAMES),
          s->lat->len - WARM_FRAMES);
    g_array_sort (steady, cmp_d);
    const double warm_p99 = pct (steady, 99);
    g_array_unref (steady);
    worst_warm_p99 = MAX (worst_warm_p99, warm_p99);
    g_array_sort (s->lat, cmp_d);
    const double wall = (s->t_last - s->t_first) / 1e6;
    const double fps = wall > 0 && s->lat->len > 1 ? (s->lat->len - 1) / wall : 0;
    const double p50 = pct (s->lat, 50), p99 = pct (s->lat, 99);
    /* frames WARM_FRAMES .. last over their own wall time */
    const double wwall = s->t_warm ? (s->t_last - s->t_warm) / 1e6 : 0;
    const double warm_fps = wwall > 0 ? (s->lat->len - WARM_FRAMES) / wwall : 0;
    min_fps = MIN (min_fps, fps);
    min_warm_fps = MIN (min_warm_fps, warm_fps);
    worst_p99 = MAX (worst_p99, p99);
    const gint key = s->device + 2;
    g_hash_table_insert (per_dev, GINT_TO_POINTER (key), GINT_TO_POINTER
        (GPOINTER_TO_INT (g_hash_table_lookup (per_dev, GINT_TO_POINTER (key))) + 1));
    printf ("stream %2u  device %2d  frames %4u  fps %6.1f  latency ms p50 %7.2f  p99 "
        "%7.2f  (after %d frames: fps %6.1f, p99 %7.2f)\n", i, s->device, s->lat->len, fps,
        p50, p99, WARM_FRAMES, warm_fps, warm_p99);
    g_string_append_printf (js, "%s{\"device\": %d, \"frames\": %u, \"fps\": %.2f, "
        "\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"fps_after_warm\": %.2f, "
        "\"p99_ms_after_warm\": %.3f}", i ? ", " : "", s->device, s->lat->len, fps, p50,
        p99, warm_fps, warm_p99);
  }
  printf ("%u streams: slowest %.1f fps, worst p99 %.2f ms; streams per device:", ns,
      min_fps, worst_p99);
  for (gint d = -1; d < 64; d++) {
    const gint c = GPOINTER_TO_INT (g_hash_table_lookup (per_dev, GINT_TO_POINTER (d + 2)));
    if (c)
      printf (" %d: %d", d, c);
  }
  printf ("\n");
  printf ("after the first %d frames: slowest %.1f fps, worst p99 %.2f ms; CPU %.1f cores "
      "busy\n", WARM_FRAMES, min_warm_fps, worst_warm_p99, busy);
  GList *keys = g_list_sort (g_hash_table_get_keys (timings), (GCompareFunc) strcmp);
  if (keys) {
    printf ("element timings, median / p99 ms over every stream:");
    for (GList * l = keys; l; l = l->next) {
      GArray *a = g_hash_table_lookup (timings, l->data);
      g_array_sort (a, cmp_d);
      printf (" %s %.2f / %.2f", (const gchar *) l->data, pct (a, 50), pct (a, 99));
    }
    printf ("\n");
  }
  g_list_free (keys);
  g_hash_table_unref (timings);
  g_string_append_printf (js, "], \"slowest_fps\": %.2f, \"worst_p99_ms\": %.3f, "
      "\"slowest_fps_after_warm\": %.2f, \"worst_p99_ms_after_warm\": %.3f, "
      "\"cores_busy\": %.2f}\n", min_fps, worst_p99, min_warm_fps, worst_warm_p99, busy);
  if (json)
    g_file_set_contents (json, js->str, -1, NULL);
  g_string_free (js, TRUE);
  g_hash_table_unref (per_dev);
  for (guint i = 0; i < ns; i++) {
    gst_object_unref (st[i].first);
    gst_object_unref (st[i].last);
    gst_object_unref (st[i].pipe);
    g_array_unref (st[i].lat);
  }
  g_free (st);
  g_ptr_array_unref (descs);
  return rc;
}
