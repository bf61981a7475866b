/* One pass per frame (issue 12): nmilocalize ! nmiregister ! featurematch converts each
 * frame once, and sharing changes no result.
 *
 * Frames are PNG crops of a synthetic control (multifilesrc ! pngdec), as in
 * tests/test_cudamem_gpu.c.  Each chain runs with share-frames on and off; checked:
 *  - the element messages of all three elements (every field but the timings) are
 *    identical, byte for byte in their serialization (doubles round-trip), on and off;
 *  - each element's frames-converted: with sharing, the frames are converted once in
 *    the chain (by its first element that reads them through the base), the others
 *    reuse them; without, each element converts its own;
 *  - an element whose settings differ (another nodata) converts its own, with
 *    sharing too;
 *  - a frame shared across a tee (two branches reading the same plane) gives both
 *    branches the results of a chain without sharing;
 *  - on the host, featurematch detects from the keypoint responses nmiregister made on
 *    the shared frame (keypoints-shared; both branches of the tee), and the results
 *    are those of its own detection (the messages above, with sharing off).
 * Backends: the CPU (cpu suite); GEOREG_TEST_BACKEND=cuda runs the same on CUDA,
 * in system memory and in CUDA memory (cudaupload), where the conversions include the
 * uploads (gpu suite; skips without a device or nvcodec).
 * nmilocalize's search=translation on the host converts its frames itself, outside
 * the base (gst/gstnmilocalize.c), unless it calls gst_georeg_base_read_plane:
 * there the one conversion counted in the chain is nmiregister's or nmilocalize's;
 * with search=full, and on CUDA, it is nmilocalize's.
 * Exit 0 pass, 1 fail, 77 skip.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/gst.h>

#include "gr_common.h"
#include "gst_gpu_test.h"
#include "gst_pipeline_run.h"
#include "raster.h"
#include "synth.h"

#define CW 480
#define CH 360
#define FW 160
#define FH 120
#define NFRAMES 4

static gchar *tmpdir, *control_path;
static const gchar *backend = "cpu";
static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf (stderr, "FAIL %s:%d: ", \
        __FILE__, __LINE__); fprintf (stderr, __VA_ARGS__); fputc ('\n', stderr); } } while (0)

static void
make_data (void)
{
  GrSynthControlParams p;
  GrSynthImage control;
  char err[256];
  gr_synth_control_params_init (&p);
  p.width = CW;
  p.height = CH;
  p.depth = 8;
  p.seed = 23;
  tmpdir = g_dir_make_tmp ("georeg-frameshare-XXXXXX", NULL);
  control_path = g_build_filename (tmpdir, "control.png", NULL);
  if (gr_synth_control_generate (&p, &control, err, sizeof err) != GR_OK ||
      gr_synth_image_write_png (control_path, &control, err, sizeof err) != GR_OK)
    g_error ("control: %s", err);
  /* gray crops along a diagonal, a corner 0 (nodata) */
  GrPlaneF l = gr_synth_image_plane (&control, 0);
  guint8 *pix = g_malloc (FW * FH);
  for (int i = 0; i < NFRAMES; i++) {
    const int x0 = 30 + i * 45, y0 = 20 + i * 32;
    for (int v = 0; v < FH; v++)
      for (int u = 0; u < FW; u++) {
        float val = floorf (l.data[(size_t) (y0 + v) * CW + x0 + u] + 0.5f);
        pix[v * FW + u] = u < 24 && v < 16 ? 0 : (guint8) CLAMP (val, 1, 255);
      }
    gchar *f = g_strdup_printf ("%s/f%03d.png", tmpdir, i);
    if (gr_png_write_gray8 (f, pix, FW, FH, FW, err, sizeof err) != GR_OK)
      g_error ("frame: %s", err);
    g_free (f);
  }
  g_free (pix);
  gr_synth_image_free (&control);
}

static void
remove_tmp (void)
{
  GDir *d = g_dir_open (tmpdir, 0, NULL);
  const gchar *name;
  while (d && (name = g_dir_read_name (d))) {
    gchar *p = g_build_filename (tmpdir, name, NULL);
    g_remove (p);
    g_free (p);
  }
  if (d)
    g_dir_close (d);
  g_rmdir (tmpdir);
  g_free (tmpdir);
  g_free (control_path);
}

/* the message without its timings (fields named *-ms) */
static gboolean
drop_timing (GQuark field, GValue * value, gpointer user_data)
{
  return !g_str_has_suffix (g_quark_to_string (field), "-ms");
}

typedef struct {
  GPtrArray *messages;          /* serialized element messages, in bus order */
  guint64 converted[4];         /* frames-converted of loc, reg, fm, fm2 */
  guint64 kp_shared[4];         /* keypoints-shared of the same */
} Run;

static const gchar *const names[4] = { "loc", "reg", "fm", "fm2" };

static void
run_clear (Run * r)
{
  if (r->messages)
    g_ptr_array_free (r->messages, TRUE);
  memset (r, 0, sizeof *r);
}

static void
collect (GstElement * pipe, GstMessage * m, gpointer data)
{
  Run *r = data;
  const GstStructure *s = gst_message_get_structure (m);
  if (s && (gst_structure_has_name (s, "nmilocalize") ||
          gst_structure_has_name (s, "nmiregister") ||
          gst_structure_has_name (s, "featurematch"))) {
    GstStructure *c = gst_structure_copy (s);
    gst_structure_filter_and_map_in_place (c, drop_timing, NULL);
    gchar *str = gst_structure_to_string (c);
    g_ptr_array_add (r->messages, g_strdup_printf ("%s: %s",
            GST_OBJECT_NAME (GST_MESSAGE_SRC (m)), str));
    g_free (str);
    gst_structure_free (c);
  }
}

static void
read_counts (GstElement * pipe, gpointer data)
{
  Run *r = data;
  for (int i = 0; i < 4; i++) {
    GstElement *el = gst_bin_get_by_name (GST_BIN (pipe), names[i]);
    if (el) {
      g_object_get (el, "frames-converted", &r->converted[i], "keypoints-shared",
          &r->kp_shared[i], NULL);
      gst_object_unref (el);
    }
  }
}

/* Runs a pipeline to EOS, collecting the georeg element messages (with the name of
 * the element that posted each) and each element's frames-converted.  FALSE on an
 * error or a timeout. */
static gboolean
run (const gchar * desc, Run * r)
{
  memset (r, 0, sizeof *r);
  r->messages = g_ptr_array_new_with_free_func (g_free);
  return gst_pipeline_run (desc, 120, collect, read_counts, r);
}

static gint
cmp_str (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const gchar * const *) a, *(const gchar * const *) b);
}

/* Messages of a run, sorted (a tee's branches post in any order). */
static gchar *
joined (const Run * r)
{
  GPtrArray *a = g_ptr_array_new ();
  for (guint i = 0; i < r->messages->len; i++)
    g_ptr_array_add (a, g_ptr_array_index (r->messages, i));
  g_ptr_array_sort (a, cmp_str);
  g_ptr_array_add (a, NULL);
  gchar *s = g_strjoinv ("\n", (gchar **) a->pdata);
  g_ptr_array_free (a, TRUE);
  return s;
}

/* Runs `chain` (with %s for share-frames, three times) after the source, with sharing
 * on and off: identical messages (3 per frame, or `per_frame`), and the conversions
 * of each element: want_on / want_off (frames per element, -1 = not checked), and
 * total_on, those of the whole pipeline with sharing (-1 = not checked); want_kp_on
 * (NULL: not checked) the frames whose keypoint responses each element took from the
 * shared frame (none without sharing). */
static void
check_chain_kp (const gchar * what, const gchar * src, const gchar * chain,
    int per_frame, int nframes, const int want_on[4], const int want_off[4],
    int total_on, const int *want_kp_on)
{
  Run on, off;
  gchar *c_on = g_strdup_printf (chain, "true", "true", "true", "true");
  gchar *c_off = g_strdup_printf (chain, "false", "false", "false", "false");
  gchar *d_on = g_strdup_printf ("%s ! %s", src, c_on);
  gchar *d_off = g_strdup_printf ("%s ! %s", src, c_off);
  const gboolean ok_on = run (d_on, &on), ok_off = run (d_off, &off);
  CHECK (ok_on && ok_off, "%s: the runs failed (%d %d)", what, ok_on, ok_off);
  CHECK (on.messages->len == (guint) (per_frame * nframes) &&
      off.messages->len == on.messages->len, "%s: %u and %u messages, want %d", what,
      on.messages->len, off.messages->len, per_frame * nframes);
  /* what the comparison is worth: frames registered, featurematch pairs found */
  int registered = 0, matched = 0;
  for (guint i = 0; i < on.messages->len; i++) {
    const gchar *msg = g_ptr_array_index (on.messages, i);
    registered += strstr (msg, "has-transform=(boolean)true") != NULL;
    matched += g_str_has_prefix (msg, "fm") && !strstr (msg, "pairs=(int)<  >");
  }
  CHECK (registered > 0 && matched > 0, "%s: %d frames registered, %d featurematch "
      "frames with pairs: the comparison would prove little", what, registered, matched);
  gchar *j_on = joined (&on), *j_off = joined (&off);
  const gboolean same = strcmp (j_on, j_off) == 0;
  CHECK (same, "%s: results differ with and without sharing:\n--- on\n%s\n--- off\n%s",
      what, j_on, j_off);
  const guint64 sum = on.converted[0] + on.converted[1] + on.converted[2] +
      on.converted[3];
  CHECK (total_on < 0 || sum == (guint64) total_on, "%s: %" G_GUINT64_FORMAT " "
      "conversions in the pipeline with sharing, want %d", what, sum, total_on);
  for (int i = 0; i < 4; i++) {
    CHECK (want_on[i] < 0 || on.converted[i] == (guint64) want_on[i],
        "%s: %s converted %" G_GUINT64_FORMAT " frames with sharing, want %d", what,
        names[i], on.converted[i], want_on[i]);
    CHECK (want_off[i] < 0 || off.converted[i] == (guint64) want_off[i],
        "%s: %s converted %" G_GUINT64_FORMAT " frames without sharing, want %d", what,
        names[i], off.converted[i], want_off[i]);
  }
  /* keypoint responses: made once per frame on the host (nmiregister, which detects
   * first), taken by featurematch from the shared frame when its settings match;
   * without sharing every element computes its own */
  if (want_kp_on)
    for (int i = 0; i < 4; i++) {
      CHECK (want_kp_on[i] < 0 || on.kp_shared[i] == (guint64) want_kp_on[i],
          "%s: %s took shared keypoint responses for %" G_GUINT64_FORMAT " frames, "
          "want %d", what, names[i], on.kp_shared[i], want_kp_on[i]);
      CHECK (off.kp_shared[i] == 0, "%s: %s took shared keypoint responses without "
          "sharing", what, names[i]);
    }
  printf ("%-34s keypoint responses taken (reg fm fm2) %" G_GUINT64_FORMAT " %"
      G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n", what, on.kp_shared[1],
      on.kp_shared[2], on.kp_shared[3]);
  printf ("%-34s converted (loc reg fm fm2) shared %" G_GUINT64_FORMAT " %"
      G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT ", not shared %"
      G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT
      "; %u messages %s (%d registered, %d with pairs)\n",
      what, on.converted[0], on.converted[1], on.converted[2], on.converted[3],
      off.converted[0], off.converted[1], off.converted[2], off.converted[3],
      on.messages->len, same ? "identical" : "DIFFER", registered, matched);
  g_free (j_on);
  g_free (j_off);
  g_free (c_on);
  g_free (c_off);
  g_free (d_on);
  g_free (d_off);
  run_clear (&on);
  run_clear (&off);
}

static gchar *
source (const gchar * fmt, gboolean cuda_memory, int nframes)
{
  return g_strdup_printf ("multifilesrc location=%s/f%%03d.png index=0 stop-index=%d "
      "caps=image/png,framerate=10/1 ! pngdec ! videoconvert ! video/x-raw,format=%s%s",
      tmpdir, nframes - 1, fmt, cuda_memory ?
      " ! cudaupload ! video/x-raw(memory:CUDAMemory)" : "");
}

/* every case (all = FALSE: the plain chain only) */
static void
chains (const gchar * fmt, gboolean cuda_memory, gboolean all)
{
  const int N = NFRAMES;
  const gboolean cuda = strcmp (backend, "cuda") == 0;
  gchar *src = source (fmt, cuda_memory, N);
  const gchar *sink = cuda_memory ? "cudadownload ! video/x-raw ! fakesink" : "fakesink";
  gchar *what;
  /* the chain; search=translation: on the host nmilocalize converts outside the base,
   * so there nmiregister makes the shared plane */
  gchar *chain = g_strdup_printf ("nmilocalize name=loc control-location=%s backend=%s "
      "search=translation frame-scale=0.5 control-scale=0.5 nodata=0 share-frames=%%s ! "
      "nmiregister name=reg control-location=%s backend=%s nodata=0 share-frames=%%s ! "
      "featurematch name=fm backend=%s nodata=0 max-images=4 min-matches=8 "
      "share-frames=%%s ! %s", control_path, backend, control_path, backend, backend,
      sink);
  {
    /* on the host nmilocalize's translation path (its own file) converts outside
     * the base, or through gst_georeg_base_read_plane: either it or
     * nmiregister makes the one conversion */
    const int on_host[4] = { -1, -1, 0, 0 }, off_host[4] = { -1, N, N, 0 };
    const int on_dev[4] = { N, 0, 0, 0 }, off_dev[4] = { N, N, N, 0 };
    /* on the host nmiregister makes the keypoint responses, featurematch takes them */
    const int kp_host[4] = { -1, 0, N, 0 };
    what = g_strdup_printf ("%s%s translation", fmt, cuda_memory ? " CUDA memory" : "");
    check_chain_kp (what, src, chain, 3, N, cuda ? on_dev : on_host,
        cuda ? off_dev : off_host, N, cuda ? NULL : kp_host);
    g_free (what);
  }
  g_free (chain);
  if (!all) {
    g_free (src);
    return;
  }
  if (!cuda && strcmp (fmt, "GRAY8") == 0) {
    /* search=full reads the frame through the base on the host too (its heading
     * sweep is slow on the CPU: two frames) */
    const int nf = 2;
    gchar *src2 = source (fmt, cuda_memory, nf);
    chain = g_strdup_printf ("nmilocalize name=loc control-location=%s backend=%s "
        "search=full scale-min=0.95 scale-max=1.05 nodata=0 share-frames=%%s ! "
        "nmiregister name=reg control-location=%s backend=%s nodata=0 share-frames=%%s ! "
        "featurematch name=fm backend=%s nodata=0 max-images=4 min-matches=8 "
        "share-frames=%%s ! %s", control_path, backend, control_path, backend, backend,
        sink);
    const int on[4] = { nf, 0, 0, 0 }, off[4] = { nf, nf, nf, 0 };
    what = g_strdup_printf ("%s full search", fmt);
    const int kp[4] = { -1, 0, nf, 0 };
    check_chain_kp (what, src2, chain, 3, nf, on, off, nf, kp);
    g_free (what);
    g_free (chain);
    g_free (src2);
  }
  /* another nodata on featurematch: not the shared plane, it converts its own */
  chain = g_strdup_printf ("nmilocalize name=loc control-location=%s backend=%s "
      "search=translation frame-scale=0.5 control-scale=0.5 nodata=0 share-frames=%%s ! "
      "nmiregister name=reg control-location=%s backend=%s nodata=0 share-frames=%%s ! "
      "featurematch name=fm backend=%s max-images=4 min-matches=8 share-frames=%%s ! %s",
      control_path, backend, control_path, backend, backend, sink);
  {
    const int on_host[4] = { -1, -1, N, 0 }, on_dev[4] = { N, 0, N, 0 };
    const int off_host[4] = { -1, N, N, 0 }, off_dev[4] = { N, N, N, 0 };
    /* featurematch's plane is its own: it computes its own responses */
    const int kp_host[4] = { -1, 0, 0, 0 };
    what = g_strdup_printf ("%s%s other nodata", fmt, cuda_memory ? " CUDA memory" : "");
    check_chain_kp (what, src, chain, 3, N, cuda ? on_dev : on_host,
        cuda ? off_dev : off_host, 2 * N, cuda ? NULL : kp_host);
    g_free (what);
  }
  g_free (chain);
  /* a tee: both featurematch branches read the plane nmiregister (host) or
   * nmilocalize (device) made, through copies of one buffer */
  chain = g_strdup_printf ("nmilocalize name=loc control-location=%s backend=%s "
      "search=translation frame-scale=0.5 control-scale=0.5 nodata=0 share-frames=%%s ! "
      "nmiregister name=reg control-location=%s backend=%s nodata=0 share-frames=%%s ! "
      "tee name=t t. ! queue ! featurematch name=fm backend=%s nodata=0 max-images=4 "
      "min-matches=8 share-frames=%%s ! %s t. ! queue ! featurematch name=fm2 "
      "backend=%s nodata=0 max-images=4 min-matches=8 share-frames=%%s ! %s",
      control_path, backend, control_path, backend, backend, sink, backend, sink);
  {
    const int on_host[4] = { -1, -1, 0, 0 }, off_host[4] = { -1, N, N, N };
    const int on_dev[4] = { N, 0, 0, 0 }, off_dev[4] = { N, N, N, N };
    /* both branches take nmiregister's keypoint responses */
    const int kp_host[4] = { -1, 0, N, N };
    what = g_strdup_printf ("%s%s tee", fmt, cuda_memory ? " CUDA memory" : "");
    check_chain_kp (what, src, chain, 4, N, cuda ? on_dev : on_host,
        cuda ? off_dev : off_host, N, cuda ? NULL : kp_host);
    g_free (what);
  }
  g_free (chain);
  g_free (src);
}

int
main (int argc, char **argv)
{
  const gchar *be = g_getenv ("GEOREG_TEST_BACKEND");
  if (be && strcmp (be, "cuda") == 0) {
    backend = "cuda";
    const gchar *need[] = { "cudaupload", "cudadownload", "pngdec", "multifilesrc",
      "videoconvert"
    };
    const int skip = gst_gpu_test_init (&argc, &argv, need, G_N_ELEMENTS (need),
        " (nvcodec needs a CUDA driver)");
    if (skip)
      return skip;
  } else {
    gst_init (&argc, &argv);
  }
  setvbuf (stdout, NULL, _IOLBF, 0);
  make_data ();
  /* 8-bit gray; RGBA (its alpha mask) in the plain chain; on CUDA the same in CUDA
   * memory, NV12 and RGBA */
  chains ("GRAY8", FALSE, TRUE);
  chains ("RGBA", FALSE, FALSE);
  if (strcmp (backend, "cuda") == 0) {
    chains ("NV12", TRUE, TRUE);
    chains ("RGBA", TRUE, FALSE);
  }
  remove_tmp ();
  printf ("%s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
