/* GPU suite: CUDA memory (video/x-raw(memory:CUDAMemory)) through the georeg elements.
 *
 *  1. caps: cudaupload ! nmilocalize ! cudadownload negotiates CUDA memory on both pads
 *     of nmilocalize, and its frames are read on the device ("input-memory" =
 *     "cuda-device": the elements share one context, the primary one);
 *  2. results: per frame, the CUDA-memory pipeline gives bit-identical results (offset,
 *     score, second score, flags, valid pixels) to the system-memory pipeline, for NV12,
 *     I420, RGBA (alpha mask) and BGRA, with nodata and frame-scale < 1 and = 1 (a
 *     CUDA nmilocalize now converts system-memory frames on the device too, from their
 *     uploaded 8-bit plane; the host conversion's identity with the device's is held
 *     by 3., where nmiregister's CPU backend converts on the host);
 *  3. the chain nmilocalize ! nmiregister ! featurematch (both on the device path:
 *     CUDA frames read in place, system-memory frames uploaded as 8-bit planes):
 *     nmiregister's and featurematch's results (flags, counts, rms, transforms, pairs
 *     and homographies, bit for bit) are identical between CUDA memory and system
 *     memory; nmiregister's are identical to its CPU backend's on the same priors (the
 *     host definition: keypoints, levels and templates; nmilocalize on CUDA in both),
 *     featurematch's keypoint counts too (its descriptors agree to ~1e-5 across
 *     backends, tests/test_features_gpu.c);
 *  4. leaks: 1,000 frames through cudaupload ! nmilocalize ! cudadownload, and through
 *     the whole chain in CUDA memory and in system memory: device memory
 *     (cudaMemGetInfo) and host RSS after the run match those after warm-up runs of
 *     100 frames;
 *  5. shared control imagery: two nmiregister elements with the same control and
 *     settings and a third with other levels hold one device plane (uploaded once)
 *     and two device levels forms; all are freed when the pipeline stops;
 *  6. nmiregister overlay=draw on CUDA memory (mapped for writing through the host)
 *     gives frames byte-identical to system memory, and differing from overlay=none.
 * GEOREG_TEST_SUBSET=quick (for compute-sanitizer): the leak runs push 10 frames and
 * check only that they run.
 * Frames come from PNG crops of a synthetic control (multifilesrc ! pngdec), so
 * both pipelines decode the same bytes.
 * Exit 0 pass, 1 fail, 77 skip (no usable CUDA device, or no nvcodec plugin).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <dlfcn.h>
#include <gst/gst.h>

#include "gr_common.h"
#include "gst_gpu_test.h"
#include "gst_pipeline_run.h"
#include "raster.h"
#include "synth.h"
#if GR_HAVE_CUDA && GR_HAVE_GST_CUDA
#include "frame_cuda.h"

#define CW 480
#define CH 360
#define FW 160
#define FH 120
#define NFRAMES 8

static gchar *tmpdir, *control_path;
static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf (stderr, "FAIL %s:%d: ", \
        __FILE__, __LINE__); fprintf (stderr, __VA_ARGS__); fputc ('\n', stderr); } } while (0)

typedef struct {
  double ox, oy, score, second;
  guint flags;
  guint64 valid;
  gchar input[16];
} Result;

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
  p.seed = 11;
  tmpdir = g_dir_make_tmp ("georeg-cudamem-XXXXXX", NULL);
  control_path = g_build_filename (tmpdir, "control.png", NULL);
  if (gr_synth_control_generate (&p, &control, err, sizeof err) != GR_OK ||
      gr_synth_image_write_png (control_path, &control, err, sizeof err) != GR_OK)
    g_error ("control: %s", err);
  /* frames: gray crops along a diagonal, some pixels 0 (nodata) */
  GrPlaneF l = gr_synth_image_plane (&control, 0);
  guint8 *pix = g_malloc (FW * FH);
  for (int i = 0; i < NFRAMES; i++) {
    const int x0 = 20 + i * 37, y0 = 15 + i * 25;
    for (int v = 0; v < FH; v++)
      for (int u = 0; u < FW; u++) {
        float val = floorf (l.data[(size_t) (y0 + v) * CW + x0 + u] + 0.5f);
        pix[v * FW + u] = (u + v) % 53 == 0 ? 0 : (guint8) CLAMP (val, 1, 255);
      }
    gchar *f = g_strdup_printf ("%s/f%03d.png", tmpdir, i);
    if (gr_png_write_gray8 (f, pix, FW, FH, FW, err, sizeof err) != GR_OK)
      g_error ("frame: %s", err);
    g_free (f);
  }
  g_free (pix);
  gr_synth_image_free (&control);
}

typedef struct {
  Result *res;
  int max, n;
  gboolean *caps_cuda;
} LocRun;

static void
collect_loc (GstElement * pipe, GstMessage * m, gpointer data)
{
  LocRun *lr = data;
  if (!gst_message_has_name (m, "nmilocalize"))
    return;
  const GstStructure *s = gst_message_get_structure (m);
  if (lr->res && lr->n < lr->max) {
    Result *r = &lr->res[lr->n];
    memset (r, 0, sizeof *r);
    gst_structure_get_double (s, "offset-x", &r->ox);
    gst_structure_get_double (s, "offset-y", &r->oy);
    gst_structure_get_double (s, "score", &r->score);
    gst_structure_get_double (s, "second-score", &r->second);
    gst_structure_get_uint (s, "flags", &r->flags);
    gst_structure_get_uint64 (s, "valid-pixels", &r->valid);
    const gchar *in = gst_structure_get_string (s, "input-memory");
    g_strlcpy (r->input, in ? in : "?", sizeof r->input);
  }
  if (lr->n == 0 && lr->caps_cuda) {
    GstElement *el = gst_bin_get_by_name (GST_BIN (pipe), "loc");
    GstPad *pad = el ? gst_element_get_static_pad (el, "sink") : NULL;
    GstCaps *caps = pad ? gst_pad_get_current_caps (pad) : NULL;
    *lr->caps_cuda = caps && gst_caps_features_contains (gst_caps_get_features (caps,
            0), "memory:CUDAMemory");
    if (caps)
      gst_caps_unref (caps);
    if (pad)
      gst_object_unref (pad);
    if (el)
      gst_object_unref (el);
  }
  lr->n++;
}

/* Runs a pipeline to EOS, collecting the nmilocalize messages; returns their number
 * (-1 on error).  caps_cuda (may be NULL): whether nmilocalize's sink caps had CUDA
 * memory. */
static int
run (const gchar * desc, Result * res, int max, gboolean * caps_cuda)
{
  LocRun lr = { res, max, 0, caps_cuda };
  return gst_pipeline_run (desc, 60, collect_loc, NULL, &lr) ? lr.n : -1;
}

static gchar *
source (int nframes, const gchar * fmt)
{
  return g_strdup_printf ("multifilesrc location=%s/f%%03d.png index=0 stop-index=%d "
      "caps=image/png,framerate=10/1 ! pngdec ! videoconvert ! video/x-raw,format=%s",
      tmpdir, nframes - 1, fmt);
}

static void
compare (const gchar * fmt, const gchar * props)
{
  Result a[NFRAMES], b[NFRAMES];
  gchar *src = source (NFRAMES, fmt);
  gchar *loc = g_strdup_printf ("nmilocalize name=loc control-location=%s backend=cuda %s",
      control_path, props);
  gchar *sys = g_strdup_printf ("%s ! %s ! fakesink", src, loc);
  gchar *cuda = g_strdup_printf ("%s ! cudaupload ! video/x-raw(memory:CUDAMemory) ! %s ! "
      "cudadownload ! video/x-raw ! fakesink", src, loc);
  gboolean caps_sys = TRUE, caps_cuda = FALSE;
  const int na = run (sys, a, NFRAMES, &caps_sys);
  const int nb = run (cuda, b, NFRAMES, &caps_cuda);
  CHECK (na == NFRAMES && nb == NFRAMES, "%s %s: %d and %d results", fmt, props, na, nb);
  CHECK (!caps_sys && caps_cuda, "%s %s: caps system %d, CUDA %d", fmt, props, caps_sys,
      caps_cuda);
  int same = 0;
  for (int i = 0; i < MIN (na, nb); i++) {
    CHECK (strcmp (a[i].input, "system") == 0 && strcmp (b[i].input, "cuda-device") == 0,
        "%s %s frame %d: input %s / %s", fmt, props, i, a[i].input, b[i].input);
    const gboolean eq = a[i].ox == b[i].ox && a[i].oy == b[i].oy &&
        memcmp (&a[i].score, &b[i].score, sizeof (double)) == 0 &&
        memcmp (&a[i].second, &b[i].second, sizeof (double)) == 0 &&
        a[i].flags == b[i].flags && a[i].valid == b[i].valid;
    CHECK (eq, "%s %s frame %d: system (%g, %g) %.17g %.17g 0x%x %" G_GUINT64_FORMAT
        " vs CUDA (%g, %g) %.17g %.17g 0x%x %" G_GUINT64_FORMAT, fmt, props, i, a[i].ox,
        a[i].oy, a[i].score, a[i].second, a[i].flags, a[i].valid, b[i].ox, b[i].oy,
        b[i].score, b[i].second, b[i].flags, b[i].valid);
    same += eq;
  }
  printf ("%-5s %-40s %d/%d frames identical (first: offset %g,%g score %.6f, %s)\n",
      fmt, props, same, NFRAMES, nb > 0 ? b[0].ox : -1, nb > 0 ? b[0].oy : -1,
      nb > 0 ? b[0].score : 0, nb > 0 ? b[0].input : "-");
  g_free (src);
  g_free (loc);
  g_free (sys);
  g_free (cuda);
}

/* ---- the chain: nmilocalize ! nmiregister ! featurematch */

#define MAXPAIRS 8

typedef struct {
  gchar input[16];
  guint flags, keypoints, matches, inliers;
  gboolean has;
  double rms, px, py, h[9];
} RegRes;

typedef struct {
  gchar input[16];
  guint flags, keypoints, npairs;
  guint64 pframe[MAXPAIRS];
  guint pmatches[MAXPAIRS], pinliers[MAXPAIRS], pflags[MAXPAIRS];
  double prms[MAXPAIRS], ph[MAXPAIRS][9];
} FmRes;

static void
get_doubles (const GstStructure * s, const gchar * name, double *out, int n)
{
  const GValue *v = gst_structure_get_value (s, name);
  for (int i = 0; i < n; i++)
    out[i] = v && i < (int) gst_value_array_get_size (v) ?
        g_value_get_double (gst_value_array_get_value (v, i)) : NAN;
}

static void
get_input (const GstStructure * s, gchar * out, gsize len)
{
  const gchar *in = gst_structure_get_string (s, "input-memory");
  g_strlcpy (out, in ? in : "?", len);
}

typedef struct {
  RegRes *rr;
  FmRes *fr;
  int nr, nf, max;
} ChainRun;

static void
collect_chain (GstElement * pipe, GstMessage * m, gpointer data)
{
  ChainRun *cr = data;
  const GstStructure *s = gst_message_get_structure (m);
  if (cr->rr && gst_message_has_name (m, "nmiregister") && cr->nr < cr->max) {
    RegRes *r = &cr->rr[cr->nr++];
    memset (r, 0, sizeof *r);
    get_input (s, r->input, sizeof r->input);
    gst_structure_get_uint (s, "flags", &r->flags);
    gst_structure_get_uint (s, "keypoints", &r->keypoints);
    gst_structure_get_uint (s, "matches", &r->matches);
    gst_structure_get_uint (s, "inliers", &r->inliers);
    gst_structure_get_boolean (s, "has-transform", &r->has);
    gst_structure_get_double (s, "rms", &r->rms);
    gst_structure_get_double (s, "prior-x", &r->px);
    gst_structure_get_double (s, "prior-y", &r->py);
    get_doubles (s, "frame-to-control", r->h, 9);
  } else if (cr->fr && gst_message_has_name (m, "featurematch") && cr->nf < cr->max) {
    FmRes *f = &cr->fr[cr->nf++];
    memset (f, 0, sizeof *f);
    get_input (s, f->input, sizeof f->input);
    gst_structure_get_uint (s, "flags", &f->flags);
    gst_structure_get_uint (s, "keypoints", &f->keypoints);
    const GValue *pairs = gst_structure_get_value (s, "pairs");
    const guint np = pairs ? gst_value_array_get_size (pairs) : 0;
    f->npairs = MIN (np, MAXPAIRS);
    for (guint i = 0; i < f->npairs; i++) {
      const GstStructure *ps =
          gst_value_get_structure (gst_value_array_get_value (pairs, i));
      gst_structure_get_uint64 (ps, "frame", &f->pframe[i]);
      gst_structure_get_uint (ps, "matches", &f->pmatches[i]);
      gst_structure_get_uint (ps, "inliers", &f->pinliers[i]);
      gst_structure_get_uint (ps, "flags", &f->pflags[i]);
      gst_structure_get_double (ps, "rms", &f->prms[i]);
      get_doubles (ps, "homography", f->ph[i], 9);
    }
  }
}

/* Runs a pipeline to EOS collecting nmiregister and featurematch messages; FALSE on
 * an error or a timeout. */
static gboolean
run_chain (const gchar * desc, RegRes * rr, int *nr, FmRes * fr, int *nf, int max)
{
  ChainRun cr = { rr, fr, 0, 0, max };
  const gboolean ok = gst_pipeline_run (desc, 120, collect_chain, NULL, &cr);
  *nr = cr.nr;
  *nf = cr.nf;
  return ok;
}

/* bit-identical doubles (NAN == NAN) */
static gboolean
same_d (const double *a, const double *b, int n)
{
  return memcmp (a, b, sizeof (double) * n) == 0;
}

static gboolean
same_reg (const RegRes * a, const RegRes * b)
{
  return a->flags == b->flags && a->keypoints == b->keypoints &&
      a->matches == b->matches && a->inliers == b->inliers && a->has == b->has &&
      same_d (&a->rms, &b->rms, 1) && same_d (&a->px, &b->px, 1) &&
      same_d (&a->py, &b->py, 1) && (!a->has || same_d (a->h, b->h, 9));
}

static gboolean
same_fm (const FmRes * a, const FmRes * b)
{
  if (a->flags != b->flags || a->keypoints != b->keypoints || a->npairs != b->npairs)
    return FALSE;
  for (guint i = 0; i < a->npairs; i++)
    if (a->pframe[i] != b->pframe[i] || a->pmatches[i] != b->pmatches[i] ||
        a->pinliers[i] != b->pinliers[i] || a->pflags[i] != b->pflags[i] ||
        !same_d (&a->prms[i], &b->prms[i], 1) || !same_d (a->ph[i], b->ph[i], 9))
      return FALSE;
  return TRUE;
}

static void
compare_chain (const gchar * fmt, const gchar * loc_props, const gchar * reg_props,
    const gchar * fm_props)
{
  RegRes ra[NFRAMES], rb[NFRAMES], rc[NFRAMES];
  FmRes fa[NFRAMES], fb[NFRAMES], fc[NFRAMES];
  int nra, nrb, nrc, nfa, nfb, nfc;
  gchar *src = source (NFRAMES, fmt);
  gchar *chain_cuda = g_strdup_printf ("nmilocalize control-location=%s backend=cuda %s ! "
      "nmiregister control-location=%s backend=cuda %s ! featurematch backend=cuda %s",
      control_path, loc_props, control_path, reg_props, fm_props);
  /* nmilocalize on CUDA in both: its priors then match to the bit (its backends agree
   * to ~1e-12 only), so nmiregister's backends are compared on the same inputs */
  gchar *chain_cpu = g_strdup_printf ("nmilocalize control-location=%s backend=cuda %s ! "
      "nmiregister control-location=%s backend=cpu %s ! featurematch backend=cpu %s",
      control_path, loc_props, control_path, reg_props, fm_props);
  gchar *sys = g_strdup_printf ("%s ! %s ! fakesink", src, chain_cuda);
  gchar *cuda = g_strdup_printf ("%s ! cudaupload ! video/x-raw(memory:CUDAMemory) ! %s ! "
      "cudadownload ! video/x-raw ! fakesink", src, chain_cuda);
  gchar *cpu = g_strdup_printf ("%s ! %s ! fakesink", src, chain_cpu);
  const gboolean oka = run_chain (sys, ra, &nra, fa, &nfa, NFRAMES);
  const gboolean okb = run_chain (cuda, rb, &nrb, fb, &nfb, NFRAMES);
  const gboolean okc = run_chain (cpu, rc, &nrc, fc, &nfc, NFRAMES);
  CHECK (oka && okb && okc && nra == NFRAMES && nrb == NFRAMES && nrc == NFRAMES &&
      nfa == NFRAMES && nfb == NFRAMES && nfc == NFRAMES,
      "chain %s: runs %d %d %d, nmiregister results %d %d %d, featurematch %d %d %d", fmt,
      oka, okb, okc, nra, nrb, nrc, nfa, nfb, nfc);
  int reg_mem = 0, reg_cpu = 0, fm_mem = 0, fm_cpu = 0, registered = 0, pairs = 0;
  const int n = MIN (MIN (nra, nrb), MIN (nrc, MIN (nfa, MIN (nfb, nfc))));
  for (int i = 0; i < n; i++) {
    CHECK (strcmp (ra[i].input, "system") == 0 && strcmp (rb[i].input, "cuda-device") == 0
        && strcmp (fa[i].input, "system") == 0 && strcmp (fb[i].input, "cuda-device") == 0,
        "chain %s frame %d: nmiregister input %s / %s, featurematch %s / %s", fmt, i,
        ra[i].input, rb[i].input, fa[i].input, fb[i].input);
    const gboolean r1 = same_reg (&ra[i], &rb[i]), r2 = same_reg (&rc[i], &rb[i]);
    const gboolean f1 = same_fm (&fa[i], &fb[i]);
    const gboolean f2 = fc[i].keypoints == fb[i].keypoints;
    CHECK (r1, "chain %s frame %d: nmiregister system 0x%x %u kp %u m %u in %.17g vs CUDA "
        "0x%x %u kp %u m %u in %.17g", fmt, i, ra[i].flags, ra[i].keypoints,
        ra[i].matches, ra[i].inliers, ra[i].rms, rb[i].flags, rb[i].keypoints,
        rb[i].matches, rb[i].inliers, rb[i].rms);
    CHECK (r2, "chain %s frame %d: nmiregister CPU backend 0x%x %u kp %u m %u in %.17g "
        "prior %.17g %.17g h0 %.17g vs CUDA 0x%x %u kp %u m %u in %.17g prior %.17g %.17g "
        "h0 %.17g", fmt, i, rc[i].flags, rc[i].keypoints, rc[i].matches, rc[i].inliers,
        rc[i].rms, rc[i].px, rc[i].py, rc[i].h[0], rb[i].flags, rb[i].keypoints,
        rb[i].matches, rb[i].inliers, rb[i].rms, rb[i].px, rb[i].py, rb[i].h[0]);
    CHECK (f1, "chain %s frame %d: featurematch system %u kp %u pairs vs CUDA %u kp %u "
        "pairs", fmt, i, fa[i].keypoints, fa[i].npairs, fb[i].keypoints, fb[i].npairs);
    CHECK (f2, "chain %s frame %d: featurematch keypoints CPU %u vs CUDA %u", fmt, i,
        fc[i].keypoints, fb[i].keypoints);
    reg_mem += r1;
    reg_cpu += r2;
    fm_mem += f1;
    fm_cpu += f2;
    registered += rb[i].has;
    pairs += fb[i].npairs;
  }
  printf ("chain %-5s nmiregister %d/%d identical CUDA vs system, %d/%d vs CPU backend "
      "(%d registered, frame 0: %u keypoints %u inliers rms %.4f); featurematch %d/%d "
      "identical CUDA vs system, keypoints %d/%d vs CPU (%d pairs)\n", fmt, reg_mem,
      NFRAMES, reg_cpu, NFRAMES, registered, n > 0 ? rb[0].keypoints : 0,
      n > 0 ? rb[0].inliers : 0, n > 0 ? rb[0].rms : NAN, fm_mem, NFRAMES, fm_cpu,
      NFRAMES, pairs);
  CHECK (registered > 0, "chain %s: no frame registered (the test would prove little)",
      fmt);
  g_free (src);
  g_free (chain_cuda);
  g_free (chain_cpu);
  g_free (sys);
  g_free (cuda);
  g_free (cpu);
}

/* ---- shared device control imagery */

typedef struct {
  guint planes, levels;
  guint64 uploads, derivations;
} DevCtlStats;

static void
shared_control (void)
{
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=2 ! video/x-raw,format=GRAY8,"
      "width=%d,height=%d ! tee name=t ! queue ! nmiregister control-location=%s ! "
      "fakesink t. ! queue ! nmiregister control-location=%s ! fakesink t. ! queue ! "
      "nmiregister control-location=%s levels=12 ! fakesink", FW, FH, control_path,
      control_path, control_path);
  GstElement *pipe = gst_parse_launch (desc, NULL);
  g_free (desc);
  /* the plugin is loaded now: its cache's statistics (the same library instance) */
  const gchar *root = g_getenv ("GEOREG_BUILD_ROOT");
  gchar *path = g_build_filename (root ? root : ".", "gst", "libgstgeoreg.so", NULL);
  void *mod = dlopen (path, RTLD_LAZY | RTLD_NOLOAD);
  void (*stats) (DevCtlStats *) = NULL;
  if (mod)
    *(void **) (&stats) = dlsym (mod, "gst_georeg_device_control_stats");
  if (!pipe || !stats) {
    CHECK (FALSE, "shared control: no pipeline, or cannot reach the cache's statistics "
        "in %s (%s)", path, dlerror ());
    if (pipe)
      gst_object_unref (pipe);
    if (mod)
      dlclose (mod);
    g_free (path);
    return;
  }
  DevCtlStats s0, s1, s2;
  stats (&s0);
  gst_element_set_state (pipe, GST_STATE_PAUSED);
  GstStateChangeReturn r = gst_element_get_state (pipe, NULL, NULL, 60 * GST_SECOND);
  stats (&s1);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (pipe);
  stats (&s2);
  printf ("shared control: 3 nmiregister (2 alike): %u plane(s), %u levels form(s) "
      "resident, %" G_GUINT64_FORMAT " upload(s), %" G_GUINT64_FORMAT
      " derivation(s); after stop %u / %u\n", s1.planes - s0.planes,
      s1.levels - s0.levels, s1.uploads - s0.uploads, s1.derivations - s0.derivations,
      s2.planes, s2.levels);
  CHECK (r != GST_STATE_CHANGE_FAILURE, "shared control: PAUSED failed");
  CHECK (s1.planes - s0.planes == 1 && s1.uploads - s0.uploads == 1,
      "shared control: %u planes, %" G_GUINT64_FORMAT " uploads (want 1, 1)",
      s1.planes - s0.planes, s1.uploads - s0.uploads);
  CHECK (s1.levels - s0.levels == 2 && s1.derivations - s0.derivations == 2,
      "shared control: %u levels forms, %" G_GUINT64_FORMAT " derivations (want 2, 2)",
      s1.levels - s0.levels, s1.derivations - s0.derivations);
  CHECK (s2.planes == s0.planes && s2.levels == s0.levels,
      "shared control: %u planes, %u levels left after stop", s2.planes, s2.levels);
  dlclose (mod);
  g_free (path);
}

static long
rss_kib (void)
{
  long kib = -1;
  FILE *f = fopen ("/proc/self/status", "r");
  char line[256];
  while (f && fgets (line, sizeof line, f))
    if (sscanf (line, "VmRSS: %ld", &kib) == 1)
      break;
  if (f)
    fclose (f);
  return kib;
}

/* 1,000 frames of `d` (a format string taking the frame count): device memory and
 * RSS after them against after two warm-up runs of 100 */
static gboolean quick;          /* GEOREG_TEST_SUBSET=quick */

static void
leak_run (const gchar * what, const gchar * d)
{
  if (quick) {
    gchar *d10 = g_strdup_printf (d, 10);
    CHECK (run (d10, NULL, 0, NULL) == 0, "%s: the 10-frame run failed", what);
    printf ("leaks %s: quick subset, 10 frames ran\n", what);
    g_free (d10);
    return;
  }
  gchar *d100 = g_strdup_printf (d, 100), *d1000 = g_strdup_printf (d, 1000);
  size_t f0 = 0, f1 = 0, tot = 0;
  run (d100, NULL, 0, NULL);
  run (d100, NULL, 0, NULL);
  gr_cuda_mem_info (0, &f0, &tot);
  const long r0 = rss_kib ();
  const gint64 t0 = g_get_monotonic_time ();
  const int n = run (d1000, NULL, 0, NULL);
  const double secs = (g_get_monotonic_time () - t0) / 1e6;
  gr_cuda_mem_info (0, &f1, &tot);
  const long r1 = rss_kib ();
  const double dgpu = ((double) f0 - (double) f1) / 1048576.0;
  printf ("leaks %s: 1000 frames (%.1f s): GPU memory used +%.2f MiB, RSS %+ld KiB\n",
      what, secs, dgpu, r1 - r0);
  CHECK (n == 0, "%s: the 1000-frame run failed", what);
  CHECK (dgpu < 1.0, "%s: GPU memory grew by %.2f MiB over 1000 frames", what, dgpu);
  CHECK (r1 - r0 < 4096, "%s: RSS grew by %ld KiB over 1000 frames", what, r1 - r0);
  g_free (d100);
  g_free (d1000);
}

/* ---- nmiregister's drawn overlay on CUDA memory */

static void
hash_frame (GstElement * sink, GstBuffer * buf, GstPad * pad, gpointer user_data)
{
  GPtrArray *hashes = user_data;
  GstMapInfo map;
  if (gst_buffer_map (buf, &map, GST_MAP_READ)) {
    g_ptr_array_add (hashes, g_compute_checksum_for_data (G_CHECKSUM_SHA256, map.data,
            map.size));
    gst_buffer_unmap (buf, &map);
  }
}

/* the SHA-256 of every frame reaching the fakesink named "out"; NULL on an error */
static GPtrArray *
frame_hashes (const gchar * desc)
{
  GError *e = NULL;
  GstElement *pipe = gst_parse_launch (desc, &e);
  if (!pipe) {
    fprintf (stderr, "parse: %s\n", e ? e->message : "?");
    g_clear_error (&e);
    return NULL;
  }
  GPtrArray *hashes = g_ptr_array_new_with_free_func (g_free);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipe), "out");
  g_object_set (sink, "signal-handoffs", TRUE, NULL);
  g_signal_connect (sink, "handoff", G_CALLBACK (hash_frame), hashes);
  gst_object_unref (sink);
  GstBus *bus = gst_element_get_bus (pipe);
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  GstMessage *m = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (!m || GST_MESSAGE_TYPE (m) != GST_MESSAGE_EOS) {
    GError *err = NULL;
    if (m)
      gst_message_parse_error (m, &err, NULL);
    fprintf (stderr, "%s: %s\n  in %s\n", m ? "error" : "timeout",
        err ? err->message : "", desc);
    g_clear_error (&err);
    g_ptr_array_unref (hashes);
    hashes = NULL;
  }
  if (m)
    gst_message_unref (m);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  return hashes;
}

static void
overlay_draw (const gchar * fmt)
{
  gchar *src = source (NFRAMES, fmt);
  const gchar *loc = "frame-scale=0.5 control-scale=0.5";
  gchar *d[3];
  d[0] = g_strdup_printf ("%s ! nmilocalize control-location=%s backend=cuda %s ! "
      "nmiregister control-location=%s backend=cuda overlay=draw ! fakesink name=out",
      src, control_path, loc, control_path);
  d[1] = g_strdup_printf ("%s ! cudaupload ! video/x-raw(memory:CUDAMemory) ! "
      "nmilocalize control-location=%s backend=cuda %s ! nmiregister "
      "control-location=%s backend=cuda overlay=draw ! cudadownload ! video/x-raw ! "
      "fakesink name=out", src, control_path, loc, control_path);
  d[2] = g_strdup_printf ("%s ! nmilocalize control-location=%s backend=cuda %s ! "
      "nmiregister control-location=%s backend=cuda overlay=none ! fakesink name=out",
      src, control_path, loc, control_path);
  GPtrArray *h[3];
  for (int i = 0; i < 3; i++)
    h[i] = frame_hashes (d[i]);
  int same = 0, drawn = 0;
  CHECK (h[0] && h[1] && h[2] && h[0]->len == NFRAMES && h[1]->len == NFRAMES &&
      h[2]->len == NFRAMES, "overlay %s: runs %u %u %u frames", fmt,
      h[0] ? h[0]->len : 0, h[1] ? h[1]->len : 0, h[2] ? h[2]->len : 0);
  for (guint i = 0; h[0] && h[1] && h[2] && i < MIN (MIN (h[0]->len, h[1]->len),
          h[2]->len); i++) {
    same += strcmp (h[0]->pdata[i], h[1]->pdata[i]) == 0;
    drawn += strcmp (h[0]->pdata[i], h[2]->pdata[i]) != 0;
  }
  printf ("overlay %-5s draw: %d/%d frames identical CUDA memory vs system memory, "
      "%d/%d differ from overlay=none\n", fmt, same, NFRAMES, drawn, NFRAMES);
  CHECK (same == NFRAMES, "overlay %s: %d/%d drawn frames identical", fmt, same, NFRAMES);
  CHECK (drawn == NFRAMES, "overlay %s: only %d/%d frames drawn", fmt, drawn, NFRAMES);
  for (int i = 0; i < 3; i++) {
    if (h[i])
      g_ptr_array_unref (h[i]);
    g_free (d[i]);
  }
  g_free (src);
}

static void
leaks (void)
{
  gchar *src = g_strdup_printf ("videotestsrc num-buffers=%%d pattern=ball ! "
      "video/x-raw,format=NV12,width=%d,height=%d", FW * 2, FH * 2);
  gchar *loc = g_strdup_printf ("nmilocalize control-location=%s control-scale=0.5 "
      "frame-scale=0.5 post-messages=false", control_path);
  gchar *chain = g_strdup_printf ("%s ! nmiregister control-location=%s max-keypoints=200 "
      "post-messages=false ! featurematch max-features=200 max-images=4 "
      "post-messages=false", loc, control_path);
  gchar *d = g_strdup_printf ("%s ! cudaupload ! %s ! cudadownload ! fakesink", src, loc);
  leak_run ("nmilocalize, CUDA memory", d);
  g_free (d);
  d = g_strdup_printf ("%s ! cudaupload ! %s ! cudadownload ! fakesink", src, chain);
  leak_run ("nmilocalize ! nmiregister ! featurematch, CUDA memory", d);
  g_free (d);
  d = g_strdup_printf ("%s ! %s ! fakesink", src, chain);
  leak_run ("nmilocalize ! nmiregister ! featurematch, system memory", d);
  g_free (d);
  g_free (src);
  g_free (loc);
  g_free (chain);
}

int
main (int argc, char **argv)
{
  /* (the system plugins: nvcodec) */
  const gchar *need[] = { "cudaupload", "cudadownload", "nmilocalize", "pngdec",
    "multifilesrc", "videoconvert"
  };
  const int skip = gst_gpu_test_init (&argc, &argv, need, G_N_ELEMENTS (need),
      " (nvcodec needs a CUDA driver)");
  if (skip)
    return skip;
  quick = g_strcmp0 (g_getenv ("GEOREG_TEST_SUBSET"), "quick") == 0;
  make_data ();
  compare ("NV12", "frame-scale=0.5 control-scale=0.5 nodata=0");
  compare ("I420", "frame-scale=1.0 control-scale=1.0");
  compare ("RGBA", "frame-scale=0.35 control-scale=0.35");
  compare ("BGRA", "frame-scale=0.5 control-scale=0.5 nodata=40 bins=min-max");
  /* nodata masks (device masks, featurematch's validity windows), no mask, alpha mask;
   * min-max, identity and fixed value ranges */
  compare_chain ("NV12", "frame-scale=0.5 control-scale=0.5 nodata=0", "nodata=0",
      "nodata=0 max-images=4 min-matches=8");
  compare_chain ("I420", "frame-scale=0.5 control-scale=0.5", "bins=identity levels=12",
      "max-images=4 min-matches=8");
  compare_chain ("RGBA", "frame-scale=0.5 control-scale=0.5",
      "bins=fixed bin-low=20 bin-high=230 refine-window=19",
      "max-images=2 min-matches=8 descriptor-size=32");
  shared_control ();
  overlay_draw ("NV12");
  overlay_draw ("RGBA");
  leaks ();
  printf ("%s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}

#else

int
main (void)
{
  printf ("SKIP: built without CUDA or without gstreamer-cuda-1.0\n");
  return 77;
}
#endif
