/* GPU suite: out of device memory in every element (issue 7, item 6).
 *
 * The CUDA backends' allocations go through a fault-injection hook (kernels/
 * cuda_util.h): GEOREG_CUDA_FAIL_ALLOC=N makes the N-th device or pinned allocation of
 * the process, and every later one, fail with cudaErrorMemoryAllocation ("out of
 * memory"); gr_cuda_fail_alloc () re-arms it from code.  For each element (nmilocalize;
 * nmiregister after a CPU nmilocalize, and alone with coarse-fallback=full-search;
 * featurematch; landmarkshoot), on small synthetic input pushed by appsrc:
 *
 *  1. start: a child process with GEOREG_CUDA_FAIL_ALLOC=1 in its environment (every
 *     allocation fails, from the first):
 *     - backend=cuda: the pipeline posts an ERROR whose text names the cause ("out of
 *       memory"), no result is posted, no crash, no hang;
 *     - backend=auto: every element falls back to the CPU (every frame / set gets its
 *       result, with backend "cpu");
 *     - then, in the same process, the hook is switched off and a backend=cuda
 *       pipeline must run to EOS on CUDA with every result (the failure left no
 *       sticky CUDA error and no poisoned process-wide state: shared device controls,
 *       the frame converters, the control cache).
 *  2. sweep: a child process runs a clean backend=cuda pipeline (warm-up), counts the
 *     allocations M of a second one, then for K = 1 .. M (sampled above 128) fails from
 *     the K-th allocation on: allocations at start, at the first frame and those that
 *     grow per frame.  Each run must end at EOS with every result (the element
 *     recovered, e.g. nmiregister flagging frames coarse-unusable when its full search
 *     fails) or with an ERROR naming "out of memory"; never a crash (the child dies;
 *     GLib criticals are made fatal there), a hang (deadlines: 60 s a pipeline in the
 *     child, a kill by the parent after that), or a result count other than all or an
 *     error.  Then a clean run must give every result on CUDA, with the device memory
 *     in use (cudaMemGetInfo) no more than 1 MiB above what it was after the warm-up:
 *     the failure paths leak no device memory.
 *
 * GEOREG_TEST_SUBSET=quick (tools/gpu.sh sanitize): the
 * sweeps only, with K = 1 and K = M, and no device-memory check (the sanitizer's leak
 * check replaces it).
 * One case by hand: `test_cuda_oom_gpu --make-data` prints a new data folder DIR; then
 * `GEOREG_CUDA_FAIL_ALLOC=1 test_cuda_oom_gpu --start CASE DIR cuda|auto` or
 * `test_cuda_oom_gpu --sweep CASE DIR cuda` (CASE: a name of cases[] below).
 * Exit 0 pass, 1 fail, 77 skip (no usable CUDA device, or no appsrc).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <gst/gst.h>

#include "gr_common.h"
#include "gst_gpu_test.h"
#include "pointset_io.h"
#include "raster.h"
#include "shoot_testdata.h"
#include "synth.h"
#if GR_HAVE_CUDA
#include "frame_cuda.h"

#define CW 480
#define CH 360
#define FW 160
#define FH 120
#define NFRAMES 6
#define NPOINTS 40
#define NSETS 2
#define PIPELINE_SECONDS 60
#define MAX_SWEEP 128

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf (stderr, "FAIL %s:%d: ", \
        __FILE__, __LINE__); fprintf (stderr, __VA_ARGS__); fputc ('\n', stderr); } } while (0)

typedef struct {
  const char *name;
  const char *message;          /* the element's per-result message */
  const char *desc;             /* @DIR@: the data folder, @BACKEND@: the backend */
  gboolean points;              /* point sets (else GRAY8 frames) */
  gboolean auto_falls_back;     /* backend=auto with every allocation failing: CPU */
} Case;

static const Case cases[] = {
  {"nmilocalize", "nmilocalize",
      "appsrc name=src ! nmilocalize name=el control-location=@DIR@/control.png "
        "frame-scale=0.5 control-scale=0.5 backend=@BACKEND@ ! fakesink", FALSE, TRUE},
  {"nmiregister", "nmiregister",
      "appsrc name=src ! nmilocalize control-location=@DIR@/control.png frame-scale=0.5 "
        "control-scale=0.5 backend=cpu post-messages=false ! nmiregister name=el "
        "control-location=@DIR@/control.png max-keypoints=200 backend=@BACKEND@ ! "
        "fakesink",
      FALSE, TRUE},
  {"nmiregister-full-search", "nmiregister",
      "appsrc name=src ! nmiregister name=el control-location=@DIR@/control.png "
        "coarse-fallback=full-search max-keypoints=200 backend=@BACKEND@ ! fakesink",
      FALSE, TRUE},
  {"featurematch", "featurematch",
      "appsrc name=src ! featurematch name=el max-features=200 max-images=4 "
        "backend=@BACKEND@ ! fakesink", FALSE, TRUE},
  {"landmarkshoot", "landmarkshoot",
      "appsrc name=src ! landmarkshoot name=el template-location=@DIR@/template.csv "
        "max-iterations=20 backend=@BACKEND@ ! fakesink", TRUE, TRUE},
};

/* ------------------------------------------------------------------ the data */

/* control.png, frames.raw (NFRAMES GRAY8 crops of it), template.csv and
 * targets.raw (NSETS x NPOINTS x 2 doubles) in a new folder */
static gchar *
make_data (void)
{
  char err[256];
  gchar *dir = g_dir_make_tmp ("georeg-oom-XXXXXX", NULL);
  if (!dir)
    g_error ("no temporary folder");
  GrSynthControlParams p;
  GrSynthImage control;
  gr_synth_control_params_init (&p);
  p.width = CW;
  p.height = CH;
  p.depth = 8;
  p.seed = 23;
  gchar *path = g_build_filename (dir, "control.png", NULL);
  if (gr_synth_control_generate (&p, &control, err, sizeof err) != GR_OK ||
      gr_synth_image_write_png (path, &control, err, sizeof err) != GR_OK)
    g_error ("control: %s", err);
  g_free (path);
  GrPlaneF l = gr_synth_image_plane (&control, 0);
  guint8 *pix = g_malloc ((gsize) NFRAMES * FW * FH);
  for (int i = 0; i < NFRAMES; i++) {
    const int x0 = 30 + i * 45, y0 = 20 + i * 35;    /* overlapping crops */
    for (int v = 0; v < FH; v++)
      for (int u = 0; u < FW; u++) {
        const float val = floorf (l.data[(size_t) (y0 + v) * CW + x0 + u] + 0.5f);
        pix[((gsize) i * FH + v) * FW + u] = (guint8) CLAMP (val, 1, 255);
      }
  }
  path = g_build_filename (dir, "frames.raw", NULL);
  if (!g_file_set_contents (path, (const gchar *) pix, (gssize) NFRAMES * FW * FH, NULL))
    g_error ("cannot write %s", path);
  g_free (path);
  g_free (pix);
  gr_synth_image_free (&control);

  double q[NPOINTS * 2], t[NSETS * NPOINTS * 2];
  td_curve2d (NPOINTS, 6.0, q);
  for (int s = 0; s < NSETS; s++)
    for (int i = 0; i < NPOINTS; i++) {       /* small smooth deformations */
      const double x = q[2 * i], y = q[2 * i + 1], a = 0.08 * (s + 1);
      t[(s * NPOINTS + i) * 2] = x + a * sin (0.4 * y);
      t[(s * NPOINTS + i) * 2 + 1] = y + a * cos (0.3 * x);
    }
  path = g_build_filename (dir, "template.csv", NULL);
  if (gr_pointset_save_csv (path, q, NPOINTS, 2, err, sizeof err) != GR_OK)
    g_error ("template: %s", err);
  g_free (path);
  path = g_build_filename (dir, "targets.raw", NULL);
  if (!g_file_set_contents (path, (const gchar *) t, sizeof t, NULL))
    g_error ("cannot write %s", path);
  g_free (path);
  return dir;
}

static void
remove_data (const gchar * dir)
{
  const gchar *names[] = { "control.png", "frames.raw", "template.csv", "targets.raw" };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++) {
    gchar *f = g_build_filename (dir, names[i], NULL);
    g_unlink (f);
    g_free (f);
  }
  g_rmdir (dir);
}

/* ------------------------------------------------------------------ the child */

typedef struct {
  gboolean eos, error, timeout, parsed;
  int results;                  /* the element's messages */
  gchar backend[16];            /* of the last of them */
  gchar *text;                  /* the ERROR: message and debug string */
} Outcome;

static gchar *frames, *targets;         /* the inputs, read once */

static GstBuffer *
input_buffer (const Case * c, int i)
{
  GstBuffer *b;
  if (c->points) {
    b = gst_buffer_new_allocate (NULL, NPOINTS * 2 * 4, NULL);
    GstMapInfo map;
    gst_buffer_map (b, &map, GST_MAP_WRITE);
    const double *t = (const double *) targets + (gsize) i * NPOINTS * 2;
    for (int k = 0; k < NPOINTS * 2; k++) {
      const gfloat f = (gfloat) t[k];
      guint32 u;
      memcpy (&u, &f, 4);
      u = GUINT32_TO_LE (u);
      memcpy (map.data + 4 * k, &u, 4);
    }
    gst_buffer_unmap (b, &map);
  } else {
    b = gst_buffer_new_memdup (frames + (gsize) i * FW * FH, FW * FH);
  }
  GST_BUFFER_PTS (b) = i * GST_SECOND / 10;
  GST_BUFFER_DURATION (b) = GST_SECOND / 10;
  return b;
}

static int
n_inputs (const Case * c)
{
  return c->points ? NSETS : NFRAMES;
}

static gchar *
replace (const gchar * text, const gchar * key, const gchar * value)
{
  gchar **parts = g_strsplit (text, key, -1);
  gchar *out = g_strjoinv (value, parts);
  g_strfreev (parts);
  return out;
}

/* One pipeline from NULL to EOS or ERROR and back to NULL. */
static Outcome
run (const Case * c, const gchar * dir, const gchar * backend)
{
  Outcome o = { 0 };
  gchar *d1 = replace (c->desc, "@DIR@", dir);
  gchar *desc = replace (d1, "@BACKEND@", backend);
  g_free (d1);
  GError *e = NULL;
  GstElement *pipe = gst_parse_launch (desc, &e);
  g_free (desc);
  if (!pipe || e) {
    fprintf (stderr, "%s: parse: %s\n", c->name, e ? e->message : "?");
    g_clear_error (&e);
    if (pipe)
      gst_object_unref (pipe);
    return o;
  }
  o.parsed = TRUE;
  GstElement *src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  GstCaps *caps = c->points ?
      gst_caps_from_string ("application/x-pointset, dimensions=(int)2") :
      gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING, "GRAY8", "width",
      G_TYPE_INT, FW, "height", G_TYPE_INT, FH, "framerate", GST_TYPE_FRACTION, 10, 1,
      NULL);
  g_object_set (src, "caps", caps, "format", GST_FORMAT_TIME, "max-bytes",
      (guint64) 64 << 20, NULL);
  gst_caps_unref (caps);
  GstBus *bus = gst_element_get_bus (pipe);
  /* the elements start in READY -> PAUSED, inside this call: a start failure has
   * posted its ERROR when it returns */
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  for (int i = 0; i < n_inputs (c); i++) {
    GstFlowReturn fr = GST_FLOW_OK;
    GstBuffer *b = input_buffer (c, i);
    /* (the action signal takes its own reference; a failed start makes it return
     * FLUSHING, and the ERROR is on the bus) */
    g_signal_emit_by_name (src, "push-buffer", b, &fr);
    gst_buffer_unref (b);
  }
  GstFlowReturn fr = GST_FLOW_OK;
  g_signal_emit_by_name (src, "end-of-stream", &fr);
  const gint64 deadline = g_get_monotonic_time () + PIPELINE_SECONDS * G_USEC_PER_SEC;
  for (;;) {
    const gint64 left = deadline - g_get_monotonic_time ();
    GstMessage *m = left > 0 ? gst_bus_timed_pop_filtered (bus, left * GST_USECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT) : NULL;
    if (!m) {
      o.timeout = TRUE;
      break;
    }
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
      GError *err = NULL;
      gchar *dbg = NULL;
      gst_message_parse_error (m, &err, &dbg);
      o.error = TRUE;
      o.text = g_strdup_printf ("%s (%s)", err ? err->message : "?", dbg ? dbg : "");
      g_clear_error (&err);
      g_free (dbg);
      gst_message_unref (m);
      break;
    }
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS) {
      o.eos = TRUE;
      gst_message_unref (m);
      break;
    }
    if (gst_message_has_name (m, c->message) && GST_MESSAGE_SRC (m) &&
        g_strcmp0 (GST_OBJECT_NAME (GST_MESSAGE_SRC (m)), "el") == 0) {
      const gchar *b = gst_structure_get_string (gst_message_get_structure (m),
          "backend");
      g_strlcpy (o.backend, b ? b : "?", sizeof o.backend);
      o.results++;
    }
    gst_message_unref (m);
  }
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  return o;
}

static gboolean
names_oom (const Outcome * o)
{
  return o->error && o->text && strstr (o->text, "out of memory") != NULL;
}

static const char *
describe (const Outcome * o)
{
  static char buf[1024];
  if (!o->parsed)
    return "pipeline not made";
  if (o->timeout)
    g_snprintf (buf, sizeof buf, "no EOS and no ERROR within %d s (%d results)",
        PIPELINE_SECONDS, o->results);
  else if (o->error)
    g_snprintf (buf, sizeof buf, "ERROR after %d results: %s", o->results, o->text);
  else
    g_snprintf (buf, sizeof buf, "EOS, %d results on %s", o->results, o->backend);
  return buf;
}

/* a clean backend=cuda run: EOS with every result on CUDA */
static void
check_clean (const Case * c, const gchar * dir, const char *when)
{
  Outcome o = run (c, dir, "cuda");
  printf ("  %s, %s: %s\n", c->name, when, describe (&o));
  CHECK (o.eos && o.results == n_inputs (c) && strcmp (o.backend, "cuda") == 0,
      "%s, %s: want EOS with %d results on cuda, got %s", c->name, when, n_inputs (c),
      describe (&o));
  g_free (o.text);
}

/* GEOREG_CUDA_FAIL_ALLOC=1 is in the environment (read at the first allocation) */
static void
child_start (const Case * c, const gchar * dir, const gchar * backend)
{
  Outcome o = run (c, dir, backend);
  const long count = gr_cuda_alloc_count ();
  printf ("  %s backend=%s, every allocation failing (%ld tried): %s\n", c->name,
      backend, count, describe (&o));
  CHECK (count >= 1, "%s: the hook saw no allocation (GEOREG_CUDA_FAIL_ALLOC not read?)",
      c->name);
  if (strcmp (backend, "auto") == 0 && c->auto_falls_back) {
    CHECK (o.eos && o.results == n_inputs (c) && strcmp (o.backend, "cpu") == 0,
        "%s backend=auto: want the CPU fallback (EOS, %d results on cpu), got %s",
        c->name, n_inputs (c), describe (&o));
  } else {
    CHECK (names_oom (&o) && o.results == 0, "%s backend=%s: want an ERROR naming "
        "\"out of memory\" and no result, got %s", c->name, backend, describe (&o));
  }
  g_free (o.text);
  /* the same process, the hook off: CUDA must work again */
  gr_cuda_fail_alloc (-1);
  check_clean (c, dir, "then without the hook");
}

static void
child_sweep (const Case * c, const gchar * dir, gboolean quick)
{
  check_clean (c, dir, "warm-up");
  gr_cuda_fail_alloc (0);               /* count only */
  Outcome o = run (c, dir, "cuda");
  const long m = gr_cuda_alloc_count ();
  gr_cuda_fail_alloc (-1);
  g_free (o.text);
  printf ("  %s: %ld allocations in a run of %d inputs\n", c->name, m, n_inputs (c));
  CHECK (m >= 1, "%s: no allocation counted", c->name);
  size_t free0 = 0, free1 = 0, total = 0;
  gr_cuda_mem_info (0, &free0, &total);

  long ks[MAX_SWEEP + 2];
  int nk = 0;
  if (quick || m <= 2) {
    ks[nk++] = 1;
    if (m > 1)
      ks[nk++] = m;
  } else if (m <= MAX_SWEEP) {
    for (long k = 1; k <= m; k++)
      ks[nk++] = k;
  } else {                              /* 1 .. 16, then evenly up to m */
    for (long k = 1; k <= 16; k++)
      ks[nk++] = k;
    for (int i = 1; i <= MAX_SWEEP - 16; i++)
      ks[nk++] = 16 + (m - 16) * i / (MAX_SWEEP - 16);
  }
  int errors = 0, recovered = 0;
  for (int i = 0; i < nk; i++) {
    const long k = ks[i];
    gr_cuda_fail_alloc (k);
    o = run (c, dir, "cuda");
    const long tried = gr_cuda_alloc_count ();
    gr_cuda_fail_alloc (-1);
    const gboolean hit = tried >= k;
    printf ("  %s, failing from allocation %ld of %ld%s: %s\n", c->name, k, m,
        hit ? "" : " (not reached)", describe (&o));
    if (o.eos && o.results == n_inputs (c)) {
      recovered += hit;
    } else {
      errors++;
      CHECK (names_oom (&o), "%s, failing from allocation %ld: want EOS with %d results "
          "or an ERROR naming \"out of memory\", got %s", c->name, k, n_inputs (c),
          describe (&o));
    }
    g_free (o.text);
  }
  printf ("  %s: %d runs, %d ended with an out-of-memory ERROR, %d recovered\n",
      c->name, nk, errors, recovered);
  check_clean (c, dir, "after the sweep");
  gr_cuda_mem_info (0, &free1, &total);
  const double grown = ((double) free0 - (double) free1) / 1048576.0;
  printf ("  %s: device memory in use after the sweep: %+.2f MiB\n", c->name, grown);
  /* under compute-sanitizer (the quick subset) the tool's own device allocations move
   * cudaMemGetInfo by megabytes; its leak check (--leak-check full) judges instead */
  CHECK (quick || grown <= 1.0, "%s: %.2f MiB of device memory more in use after %d "
      "failing runs", c->name, grown, nk);
}

static int
child_main (const char *mode, const char *name, const char *dir, const char *backend)
{
  const Case *c = NULL;
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    if (strcmp (cases[i].name, name) == 0)
      c = &cases[i];
  if (!c) {
    fprintf (stderr, "no case %s\n", name);
    return 2;
  }
  gchar *path = g_build_filename (dir, "frames.raw", NULL);
  gsize len = 0;
  if (!g_file_get_contents (path, &frames, &len, NULL) || len != NFRAMES * FW * FH)
    g_error ("cannot read %s", path);
  g_free (path);
  path = g_build_filename (dir, "targets.raw", NULL);
  if (!g_file_get_contents (path, &targets, &len, NULL) ||
      len != NSETS * NPOINTS * 2 * sizeof (double))
    g_error ("cannot read %s", path);
  g_free (path);
  if (strcmp (mode, "--start") == 0)
    child_start (c, dir, backend);
  else
    child_sweep (c, dir, g_strcmp0 (g_getenv ("GEOREG_TEST_SUBSET"), "quick") == 0);
  g_free (frames);
  g_free (targets);
  return failures ? 1 : 0;
}

/* ------------------------------------------------------------------ the parent */

/* Runs this program again as a child (fresh CUDA and hook state); waits for it at
 * most `seconds`, then kills it. */
static void
spawn_child (const gchar * self_exe, const gchar * const *args, const gchar * fail_alloc,
    int seconds, const gchar * what)
{
  gchar *argv[8] = { (gchar *) self_exe };
  for (int i = 0; i < 6 && args[i]; i++)
    argv[i + 1] = (gchar *) args[i];
  gchar **envp = g_get_environ ();
  envp = fail_alloc ? g_environ_setenv (envp, "GEOREG_CUDA_FAIL_ALLOC", fail_alloc, TRUE)
      : g_environ_unsetenv (envp, "GEOREG_CUDA_FAIL_ALLOC");
  /* a g_critical on a failure path is a bug too: it aborts the child (a crash) */
  envp = g_environ_setenv (envp, "G_DEBUG", "fatal-criticals", FALSE);
  GPid pid = 0;
  GError *e = NULL;
  fflush (stdout);
  fflush (stderr);
  if (!g_spawn_async (NULL, argv, envp, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid,
          &e)) {
    CHECK (FALSE, "%s: cannot start the child: %s", what, e ? e->message : "?");
    g_clear_error (&e);
    g_strfreev (envp);
    return;
  }
  g_strfreev (envp);
  const gint64 deadline = g_get_monotonic_time () + (gint64) seconds * G_USEC_PER_SEC;
  int status = 0;
  pid_t r;
  while ((r = waitpid (pid, &status, WNOHANG)) == 0 && g_get_monotonic_time () < deadline)
    g_usleep (20000);
  if (r == 0) {
    kill (pid, SIGKILL);
    waitpid (pid, &status, 0);
    CHECK (FALSE, "%s: hung (killed after %d s)", what, seconds);
  } else if (r < 0) {
    CHECK (FALSE, "%s: waitpid failed", what);
  } else if (WIFSIGNALED (status)) {
    CHECK (FALSE, "%s: crashed (signal %d)", what, WTERMSIG (status));
  } else {
    CHECK (WEXITSTATUS (status) == 0, "%s: %d check(s) failed (exit status %d; see "
        "above)", what, WEXITSTATUS (status), WEXITSTATUS (status));
  }
  g_spawn_close_pid (pid);
}

int
main (int argc, char **argv)
{
  if (argc == 5 && (strcmp (argv[1], "--start") == 0 || strcmp (argv[1], "--sweep") ==
          0)) {
    gst_init (NULL, NULL);
    return child_main (argv[1], argv[2], argv[3], argv[4]);
  }
  if (argc == 2 && strcmp (argv[1], "--make-data") == 0) {
    gchar *dir = make_data ();
    printf ("%s\n", dir);
    g_free (dir);
    return 0;
  }
  /* (the children inherit the plugin path set here) */
  const gchar *need[] = { "appsrc", "fakesink", "nmilocalize", "nmiregister",
    "featurematch", "landmarkshoot"
  };
  const int skip = gst_gpu_test_init (&argc, &argv, need, G_N_ELEMENTS (need), "");
  if (skip)
    return skip;
  gchar *self_exe = g_file_read_link ("/proc/self/exe", NULL);
  if (!self_exe)
    self_exe = g_strdup (argv[0]);
  gchar *dir = make_data ();
  const gboolean quick = g_strcmp0 (g_getenv ("GEOREG_TEST_SUBSET"), "quick") == 0;

  for (guint i = 0; i < G_N_ELEMENTS (cases) && !quick; i++)
    for (int b = 0; b < 2; b++) {
      const gchar *backend = b ? "auto" : "cuda";
      gchar *what = g_strdup_printf ("start, %s backend=%s", cases[i].name, backend);
      printf ("%s\n", what);
      const gchar *args[] = { "--start", cases[i].name, dir, backend, NULL };
      spawn_child (self_exe, args, "1", 180, what);
      g_free (what);
    }
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    gchar *what = g_strdup_printf ("sweep, %s", cases[i].name);
    printf ("%s\n", what);
    const gchar *args[] = { "--sweep", cases[i].name, dir, "cuda", NULL };
    spawn_child (self_exe, args, NULL, 400, what);
    g_free (what);
  }
  remove_data (dir);
  g_free (dir);
  g_free (self_exe);
  printf ("%s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}

#else

int
main (void)
{
  printf ("SKIP: built without CUDA\n");
  return 77;
}
#endif
