/* ERROR-without-exit (issue 12 item 6): runs the failing pipelines of the issue the way
 * an application does (gst_parse_launch, a bus watch on a GMainLoop, the pipeline set
 * to NULL 100 ms after the first ERROR), many times each, and fails when
 *  - a run does not end (no ERROR, or the pipeline does not reach NULL) within its
 *    deadline: a hang;
 *  - the faulting element posts more than one ERROR for its one fault, or the run
 *    posts any ERROR beyond that one and the source's standard report of the failed
 *    flow ("Internal data stream error", STREAM/FAILED from a GstBaseSrc, which
 *    GStreamer's sources post for every fatal flow return).
 * Cases: a frame larger than the control (nmilocalize search=translation, refused in
 * set_caps; search=auto without scales sweeps such frames instead),
 * landmarkshoot's "loss is not finite", pointsetparse ! identity error-after=1 !
 * pointsetenc, and a point-set caps negotiation that fails (a 3-D set into a 2-D
 * template).
 *
 *   test_error_exit [RUNS]      (default 200; the meson test runs fewer, see meson.build)
 *
 * What went wrong before: gst-launch-1.0 (1.22) calls g_main_loop_quit() from its bus
 * SYNC handler, on the streaming thread; when the ERROR comes before the main thread
 * has entered g_main_loop_run() (an error at the first buffer), the quit is lost and
 * gst-launch waits for ever, with the sink's streaming thread in
 * gst_base_sink_wait_preroll (the sink prerolled on the source's EOS, the pipeline
 * never goes to PLAYING).  An application that handles the ERROR from its watch, as
 * here, does not hang; docs/hardening.md has the details.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/base/gstbasesrc.h>

#include "config.h"
#include "gr_common.h"
#include "raster.h"

#define RUN_DEADLINE_S 20
#define GRACE_MS 100            /* from the first ERROR to NULL */

typedef struct {
  const char *name;
  const char *faulty;           /* name of the element that must post the one ERROR */
  const char *launch;           /* printf format: %1$s = temporary folder */
} Case;

static const Case cases[] = {
  {"frame larger than the control", "loc",
      "videotestsrc num-buffers=5 ! video/x-raw,format=GRAY8,width=800,height=600 ! "
        "nmilocalize name=loc control-location=%1$s/small.png search=translation ! fakesink"},
  {"landmarkshoot loss not finite", "shoot",
      "filesrc location=%1$s/huge.csv ! pointsetparse ! landmarkshoot name=shoot "
        "template-location=%1$s/template.csv lambda=1e30 ! pointsetenc ! fakesink"},
  {"identity error-after=1 between the point-set elements", "fail",
      "filesrc location=%1$s/points.csv ! pointsetparse ! identity name=fail "
        "error-after=1 ! pointsetenc ! fakesink"},
  {"point-set caps negotiation fails (3-D set, 2-D template)", "shoot",
      "filesrc location=%1$s/points3.csv ! pointsetparse ! landmarkshoot name=shoot "
        "template-location=%1$s/template.csv ! pointsetenc ! fakesink"},
};

typedef struct {
  GMainLoop *loop;
  GstElement *pipeline;
  const Case *c;
  int errors_faulty;            /* ERRORs from the faulting element */
  int errors_flow;              /* the source's "Internal data stream error" */
  int errors_other;
  char first[512];              /* the first ERROR, for the log */
  char other[512];              /* an unexpected one */
  guint stop_id;                 /* the timer that sets NULL, while pending */
  gboolean timed_out;
} Run;

static void
count_error (Run *r, GstMessage *msg)
{
  GError *err = NULL;
  gst_message_parse_error (msg, &err, NULL);
  GstObject *src = GST_MESSAGE_SRC (msg);
  const char *name = src ? GST_OBJECT_NAME (src) : "?";
  if (!r->first[0])
    g_snprintf (r->first, sizeof r->first, "%s: %s", name, err->message);
  if (!g_strcmp0 (name, r->c->faulty))
    r->errors_faulty++;
  else if (GST_IS_BASE_SRC (src) && g_error_matches (err, GST_STREAM_ERROR,
          GST_STREAM_ERROR_FAILED))
    r->errors_flow++;
  else {
    r->errors_other++;
    g_snprintf (r->other, sizeof r->other, "%s: %s", name, err->message);
  }
  g_error_free (err);
}

static gboolean
stop_pipeline (gpointer data)
{
  Run *r = data;
  r->stop_id = 0;
  gst_element_set_state (r->pipeline, GST_STATE_NULL);
  g_main_loop_quit (r->loop);
  return G_SOURCE_REMOVE;
}

static gboolean
on_bus (GstBus *bus, GstMessage *msg, gpointer data)
{
  Run *r = data;
  (void) bus;
  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_ERROR:
      count_error (r, msg);
      /* what an application does: stop the pipeline from the main thread; not at
       * once, so that an element that posts its fault again (at every retried caps
       * negotiation, for example) is seen doing it */
      if (!r->stop_id)
        r->stop_id = g_timeout_add (GRACE_MS, stop_pipeline, r);
      break;
    case GST_MESSAGE_EOS:
      g_main_loop_quit (r->loop);
      break;
    default:
      break;
  }
  return G_SOURCE_CONTINUE;
}

static gboolean
on_deadline (gpointer data)
{
  Run *r = data;
  r->timed_out = TRUE;
  g_main_loop_quit (r->loop);
  return G_SOURCE_REMOVE;
}

static void
watchdog_fired (int sig)
{
  static const char msg[] = "HANG: setting a pipeline to NULL did not return\n";
  (void) sig;
  (void) !write (2, msg, sizeof msg - 1);
  abort ();
}

/* One run of case c; returns FALSE (and says why) when it hung or posted extra ERRORs. */
static gboolean
run_once (const Case *c, const char *dir, int k)
{
  char *desc = g_strdup_printf (c->launch, dir);
  GError *perr = NULL;
  GstElement *pipeline = gst_parse_launch (desc, &perr);
  g_free (desc);
  if (!pipeline || perr) {
    fprintf (stderr, "%s: cannot build the pipeline: %s\n", c->name,
        perr ? perr->message : "?");
    g_clear_error (&perr);
    if (pipeline)
      gst_object_unref (pipeline);
    return FALSE;
  }
  Run r = { 0 };
  r.c = c;
  r.pipeline = pipeline;
  r.loop = g_main_loop_new (NULL, FALSE);
  GstBus *bus = gst_element_get_bus (pipeline);
  guint watch = gst_bus_add_watch (bus, on_bus, &r);
  guint deadline = g_timeout_add_seconds (RUN_DEADLINE_S, on_deadline, &r);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  g_main_loop_run (r.loop);
  if (!r.timed_out)
    g_source_remove (deadline);
  if (r.stop_id)                /* ended by EOS before the timer */
    g_source_remove (r.stop_id);
  alarm (RUN_DEADLINE_S);       /* the state change itself must not block */
  gst_element_set_state (pipeline, GST_STATE_NULL);
  alarm (0);
  /* every ERROR posted before NULL was reached counts, also those after the first */
  GstMessage *msg;
  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR))) {
    count_error (&r, msg);
    gst_message_unref (msg);
  }
  g_source_remove (watch);
  gst_object_unref (bus);
  g_main_loop_unref (r.loop);
  gst_object_unref (pipeline);

  gboolean ok = TRUE;
  if (r.timed_out) {
    fprintf (stderr, "FAIL %s, run %d: no ERROR or EOS within %d s (hang)\n", c->name,
        k, RUN_DEADLINE_S);
    ok = FALSE;
  } else if (r.errors_faulty != 1) {
    fprintf (stderr, "FAIL %s, run %d: %d ERRORs from '%s' (1 expected); first: %s\n",
        c->name, k, r.errors_faulty, c->faulty, r.first);
    ok = FALSE;
  }
  if (r.errors_flow > 1 || r.errors_other > 0) {
    fprintf (stderr, "FAIL %s, run %d: %d flow-error reports, %d other ERRORs (%s)\n",
        c->name, k, r.errors_flow, r.errors_other, r.other);
    ok = FALSE;
  }
  if (k == 1)
    printf ("  %s: first ERROR: %s\n", c->name, r.first);
  return ok;
}

static void
write_file (const char *dir, const char *name, const char *text)
{
  char *p = g_build_filename (dir, name, NULL);
  if (!g_file_set_contents (p, text, -1, NULL))
    g_error ("cannot write %s", p);
  g_free (p);
}

static void
remove_file (const char *dir, const char *name)
{
  char *p = g_build_filename (dir, name, NULL);
  g_unlink (p);
  g_free (p);
}

int
main (int argc, char **argv)
{
  gst_init (&argc, &argv);
  int runs = argc > 1 ? atoi (argv[1]) : 200;
  if (runs < 1)
    runs = 1;
  signal (SIGALRM, watchdog_fired);

  char *dir = g_dir_make_tmp ("georeg-error-exit-XXXXXX", NULL);
  if (!dir)
    g_error ("no temporary folder");
  /* a 100 x 80 control: any 800 x 600 frame is larger */
  uint8_t pix[100 * 80];
  for (int i = 0; i < 100 * 80; i++)
    pix[i] = (uint8_t) ((i * 37) ^ (i / 100 * 11));
  char err[256];
  char *small = g_build_filename (dir, "small.png", NULL);
  if (gr_png_write_gray8 (small, pix, 100, 80, 100, err, sizeof err) != GR_OK)
    g_error ("%s", err);
  g_free (small);
  write_file (dir, "template.csv", "0,0\n1,0\n0,1\n1,1\n");
  /* finite in float32, but the mismatch term overflows with lambda 1e30 */
  write_file (dir, "huge.csv", "0,0\n1e19,0\n0,1e19\n1e19,1e19\n");
  write_file (dir, "points.csv", "1,2\n3,4\n5,6\n7,8\n");
  write_file (dir, "points3.csv", "0,0,0\n1,0,0\n0,1,0\n1,1,1\n");

  int failed_cases = 0;
  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++) {
    int bad = 0;
    gint64 t0 = g_get_monotonic_time ();
    for (int k = 1; k <= runs; k++)
      if (!run_once (&cases[i], dir, k))
        bad++;
    printf ("%s: %d runs, %d failed, %.1f s\n", cases[i].name, runs, bad,
        (g_get_monotonic_time () - t0) / 1e6);
    if (bad)
      failed_cases++;
  }

  const char *files[] = { "small.png", "template.csv", "huge.csv", "points.csv",
    "points3.csv" };
  for (size_t i = 0; i < G_N_ELEMENTS (files); i++)
    remove_file (dir, files[i]);
  g_rmdir (dir);
  g_free (dir);
  gst_deinit ();
  printf ("%d of %zu cases failed\n", failed_cases, G_N_ELEMENTS (cases));
  return failed_cases ? 1 : 0;
}
