/* Matcher benchmark: (a) m = 1024 images x 100 descriptors, k = 32 (the seed's
 * largest run); (b) m = 1000 x 500, k = 64; (c) streaming: one new image of 500
 * against 1000 held images of 500, both directions (k = 64, a sliding window).
 * CUDA (device time by CUDA events, and wall time of the call including transfers)
 * and CPU.  (c) is timed as the element calls it (gr_matcher_add_view: the results
 * stay in the matcher's pinned buffers; the two directions run concurrently) and in
 * variants (one stream; gr_matcher_add into the caller's pageable buffers).  The CPU runs (b) on its first 100 images and (c) for 3 frames, and its
 * outputs are compared with the CUDA outputs of the same inputs before any figure is
 * kept; (b) on the CPU is also given scaled to the full size ((1000/100)^2).
 * The sparse batch form (gr_matcher_match_all_sparse: the kept entries only, compacted
 * where they were computed) runs (a), (b) and (b'), checked against the dense output,
 * the float64 distances and, (a) and (b'), the other backend's list bit for bit.
 * Descriptors: unit rows, each image re-observing 30% of the previous one's features.
 *   bench_matcher [--quick] [--json FILE] [--threads N] [--no-cpu] [--no-cuda]
 *                 [--sparse-goals]
 * --sparse-goals: (a) and (b) only, dense and sparse, with the checks and a line per
 * goal of issue 14 (sparse wall <= 15 ms and <= 150 ms), as tools/gpu.sh matcher runs
 * it (about a minute on an H100, most of it the float64 check of (b)'s list).
 * CUDA: the sparse form of (a) and (b) again with each match-kernel variant of the
 * list mode (GEOREG_MATCHER_VARIANT, kernels/matcher_cuda.cu), and two of them with
 * the staged upload (GEOREG_MATCHER_UPLOAD=pinned, kernels/matcher.c), each list
 * compared with the default's byte for byte; a "variant" line each at the end (wall
 * and kernel medians of (a) and (b), and the goals).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "matcher.h"
#include "../tests/matcher_reference.h"
#include "bench_util.h"

typedef struct {
  const char *name;
  const char *backend;
  double median_ms, min_ms, kernel_ms, wall_ms;
  int reps;
  long long pairs, rechecked;
  const char *note;
} Row;

static Row rows[48];
static int nrows;
static int mismatch_total;

static void
add_row (const char *name, const char *backend, double *kms, double *wms, int reps,
    const GrMatchStats *st, const char *note)
{
  Row *r = &rows[nrows++];
  r->name = name;
  r->backend = backend;
  r->reps = reps;
  r->kernel_ms = median (kms, reps);
  r->min_ms = kms[0];
  r->wall_ms = median (wms, reps);
  r->median_ms = r->kernel_ms;
  r->pairs = st->pairs;
  r->rechecked = st->rechecked;
  r->note = note;
  printf ("  %-34s %-5s kernel median %10.3f ms (min %.3f)  wall %10.3f ms  "
      "re-checked %lld of %lld pairs%s%s\n", name, backend, r->kernel_ms, r->min_ms,
      r->wall_ms, r->rechecked, r->pairs, note ? "  " : "", note ? note : "");
  fflush (stdout);
}

static GrMatcher *
make (GrBackend b, int threads)
{
  char err[256] = "";
  GrStatus st;
  GrMatcher *mt = gr_matcher_new (b, -1, &st, err, sizeof err);
  if (!mt)
    printf ("  (%s backend unavailable: %s)\n", gr_backend_name (b), err);
  else
    gr_matcher_set_threads (mt, threads);
  return mt;
}

static float *
make_desc (int m, int ni, int k, int64_t **off_out, uint64_t seed)
{
  int64_t *off = malloc (sizeof (int64_t) * (m + 1));
  off[0] = 0;
  for (int i = 0; i < m; i++)
    off[i + 1] = off[i] + ni;
  float *d = malloc (sizeof (float) * off[m] * k);
  uint64_t rng = seed;
  mref_survey (d, off, m, k, 0.08, 0.3, 1, &rng);
  *off_out = off;
  return d;
}

static int64_t
diff (const int32_t *a, const int32_t *b, int64_t n)
{
  int64_t d = 0;
  for (int64_t i = 0; i < n; i++)
    d += a[i] != b[i];
  return d;
}

/* batch case; returns the output of the last repetition (caller frees) */
static int32_t *
run_batch (const char *name, GrMatcher *mt, const float *d, int k, const int64_t *off,
    int m, int reps, const char *note)
{
  const int64_t n = off[m];
  int32_t *out = malloc (sizeof (int32_t) * (size_t) m * n);
  double kms[64], wms[64];
  GrMatchStats st;
  char err[256];
  for (int r = -1; r < reps; r++) {      /* r = -1: warm-up */
    if (gr_matcher_match_all (mt, d, k, off, m, 0.8f, out, &st, err, sizeof err) != GR_OK) {
      printf ("  %s: %s\n", name, err);
      free (out);
      return NULL;
    }
    if (r >= 0) {
      kms[r] = st.kernel_ms;
      wms[r] = st.elapsed_ms;
    }
  }
  add_row (name, gr_backend_name (gr_matcher_backend (mt)), kms, wms, reps, &st, note);
  return out;
}

/* sparse batch case; returns a copy of the last repetition's entries (caller frees) */
static GrMatch *
run_sparse (const char *name, GrMatcher *mt, const float *d, int k, const int64_t *off,
    int m, int reps, int64_t *count)
{
  double kms[64], wms[64];
  GrMatchStats st;
  char err[256];
  const GrMatch *v = NULL;
  for (int r = -1; r < reps; r++) {
    if (gr_matcher_match_all_sparse (mt, d, k, off, m, 0.8f, &v, count, &st, err,
            sizeof err) != GR_OK) {
      printf ("  %s: %s\n", name, err);
      return NULL;
    }
    if (r >= 0) {
      kms[r] = st.kernel_ms;
      wms[r] = st.elapsed_ms;
    }
  }
  char *note = malloc (64);
  snprintf (note, 64, "%lld kept entries", (long long) *count);
  add_row (name, gr_backend_name (gr_matcher_backend (mt)), kms, wms, reps, &st, note);
  GrMatch *copy = malloc (sizeof (GrMatch) * (size_t) (*count > 0 ? *count : 1));
  memcpy (copy, v, sizeof (GrMatch) * (size_t) *count);
  return copy;
}

/* a sparse output against the dense one of the same inputs and the float64 distances
 * (matcher_reference.h), and against the other backend's sparse output, bit for bit */
static void
check_sparse (const char *what, const float *d, int k, const int64_t *off, int m,
    const int32_t *dense, const GrMatch *sp, int64_t count, const GrMatch *other,
    int64_t ocount)
{
  if (!sp)
    return;
  if (dense) {
    const int64_t bad = ref_compare_sparse (d, k, off, m, dense, (const RefSparse *) sp,
        count, 1);
    printf ("  check %-28s sparse vs dense + float64 distances: %lld differences%s\n",
        what, (long long) bad, bad ? "  <-- MISMATCH" : "");
    mismatch_total += bad != 0;
  }
  if (other) {
    const int same = count == ocount && !memcmp (sp, other, sizeof (GrMatch) * count);
    printf ("  check %-28s sparse CUDA vs CPU: %s\n", what, same ? "identical" :
        "DIFFER  <-- MISMATCH");
    mismatch_total += !same;
  }
}

/* The list mode's match-kernel variants (GEOREG_MATCHER_VARIANT), alone and with the
 * staged upload (GEOREG_MATCHER_UPLOAD=pinned: "+pinned"), each on the same inputs as
 * the default's sparse run (ref, rcount: its list): medians, and whether the list is
 * the default's byte for byte.  vres[c][v]: case c ((a) 0, (b) 1), variant v. */
static const char *const kvariants[] = { "key", "top2", "min", "key+pinned",
  "min+pinned" };
#define NKV ((int) (sizeof kvariants / sizeof kvariants[0]))
typedef struct {
  int done, same;
  double wall_ms, kernel_ms;
  long long count;
} VarRes;
static VarRes vres[2][NKV];

static void
run_variants (int c, const char *label, GrMatcher *gpu, const float *d, int k,
    const int64_t *off, int m, int reps, const GrMatch *ref, int64_t rcount)
{
  for (int v = 0; v < NKV; v++) {
    char kernel[32];
    snprintf (kernel, sizeof kernel, "%s", kvariants[v]);
    char *plus = strchr (kernel, '+');
    if (plus) {
      *plus = 0;
      setenv ("GEOREG_MATCHER_UPLOAD", plus + 1, 1);
    } else {
      /* the plain upload, now that the staged one is the default */
      setenv ("GEOREG_MATCHER_UPLOAD", "pageable", 1);
    }
    setenv ("GEOREG_MATCHER_VARIANT", kernel, 1);
    char *name = malloc (64);
    snprintf (name, 64, "%s sparse, variant %s", label, kvariants[v]);
    int64_t n = 0;
    GrMatch *sp = run_sparse (name, gpu, d, k, off, m, reps, &n);
    if (!sp)
      continue;
    VarRes *r = &vres[c][v];
    r->done = 1;
    r->wall_ms = rows[nrows - 1].wall_ms;
    r->kernel_ms = rows[nrows - 1].kernel_ms;
    r->count = n;
    r->same = ref && n == rcount && !memcmp (sp, ref, sizeof (GrMatch) * (size_t) n);
    printf ("  check %-28s variant %s vs default: %s\n", label, kvariants[v], r->same ?
        "identical" : "DIFFER  <-- MISMATCH");
    mismatch_total += !r->same;
    free (sp);
  }
  unsetenv ("GEOREG_MATCHER_VARIANT");
  unsetenv ("GEOREG_MATCHER_UPLOAD");
}

/* one line per variant: (a) and (b) wall / kernel medians, and the goals */
static void
variant_lines (int quick)
{
  static const double goal[2] = { 15.0, 150.0 };
  for (int v = 0; v < NKV; v++) {
    printf ("variant %-10s", kvariants[v]);
    for (int c = 0; c < 2; c++) {
      const VarRes *r = &vres[c][v];
      if (!r->done) {
        printf ("  (%c) not run", 'a' + c);
        continue;
      }
      printf ("  (%c) wall %8.2f ms kernel %8.2f ms, %lld entries, %s%s%s", 'a' + c,
          r->wall_ms, r->kernel_ms, r->count, r->same ? "identical" : "DIFFER",
          quick ? "" : r->wall_ms <= goal[c] ? ", goal MET" : ", goal NOT MET", c ? "" : ";");
    }
    printf ("\n");
  }
}

/* issue 14's goal for the sparse row just added (rows[nrows - 1]): wall median */
static void
goal_line (const char *what, double goal_ms)
{
  const Row *r = &rows[nrows - 1];
  printf ("goal %s sparse: wall %.2f ms (kernel %.2f ms), goal <= %.0f ms: %s\n", what,
      r->wall_ms, r->kernel_ms, goal_ms, r->wall_ms <= goal_ms ? "MET" : "NOT MET");
}

static void
check_same (const char *what, const int32_t *a, const int32_t *b, int64_t n)
{
  if (!a || !b)
    return;
  const int64_t d = diff (a, b, n);
  printf ("  check %-28s CUDA vs CPU: %lld of %lld entries differ%s\n", what,
      (long long) d, (long long) n, d ? "  <-- MISMATCH" : "");
  mismatch_total += d != 0;
}

/* streaming: fills a window of `held` images (no matching), then times adds of one
 * image against all of them, both directions, dropping the oldest each time */
/* view: gr_matcher_add_view (results in the matcher's pinned buffers; copied out only
 * for the check); else gr_matcher_add into the caller's (pageable) buffers.  debug:
 * gr_matcher_set_debug flags for the timed frames. */
static void
run_stream (const char *name, GrMatcher *mt, const float *d, int k, const int64_t *off,
    int held, int frames, int view, unsigned debug, int32_t **fwd_keep, int32_t **bwd_keep)
{
  char err[256];
  const int ni = (int) (off[1] - off[0]);
  gr_matcher_reset (mt);
  for (int i = 0; i < held; i++)
    if (gr_matcher_add (mt, d + off[i] * k, ni, k, 0.8f, NULL, NULL, NULL, err,
            sizeof err) != GR_OK) {
      printf ("  %s: %s\n", name, err);
      return;
    }
  int32_t *fwd = malloc (sizeof (int32_t) * (size_t) held * ni);
  int32_t *bwd = malloc (sizeof (int32_t) * (size_t) held * ni);
  double kms[64], wms[64];
  GrMatchStats st;
  int reps = 0;
  gr_matcher_set_debug (mt, debug);
  for (int f = -1; f < frames; f++) {
    const int img = held + 1 + f;          /* the next image of the sequence */
    GrStatus s;
    if (view) {
      const int32_t *vf = NULL, *vb = NULL;
      s = gr_matcher_add_view (mt, d + off[img] * k, ni, k, 0.8f, &vf, &vb, &st, err,
          sizeof err);
      if (s == GR_OK && fwd_keep) {       /* outside the timed call */
        memcpy (fwd, vf, sizeof (int32_t) * (size_t) held * ni);
        memcpy (bwd, vb, sizeof (int32_t) * (size_t) held * ni);
      }
    } else {
      s = gr_matcher_add (mt, d + off[img] * k, ni, k, 0.8f, fwd, bwd, &st, err,
          sizeof err);
    }
    if (s != GR_OK) {
      printf ("  %s: %s\n", name, err);
      break;
    }
    gr_matcher_drop_oldest (mt, 1);
    if (f >= 0) {
      kms[reps] = st.kernel_ms;
      wms[reps] = st.elapsed_ms;
      reps++;
    }
  }
  gr_matcher_set_debug (mt, 0);
  if (reps)
    add_row (name, gr_backend_name (gr_matcher_backend (mt)), kms, wms, reps, &st, NULL);
  if (fwd_keep) {
    *fwd_keep = fwd;
    *bwd_keep = bwd;
  } else {
    free (fwd);
    free (bwd);
  }
}

int
main (int argc, char **argv)
{
  int quick = 0, threads = 0, use_cpu = 1, use_cuda = 1, goals = 0;
  const char *json = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp (argv[i], "--quick"))
      quick = 1;
    else if (!strcmp (argv[i], "--json") && i + 1 < argc)
      json = argv[++i];
    else if (!strcmp (argv[i], "--threads") && i + 1 < argc)
      threads = atoi (argv[++i]);
    else if (!strcmp (argv[i], "--no-cpu"))
      use_cpu = 0;
    else if (!strcmp (argv[i], "--no-cuda"))
      use_cuda = 0;
    else if (!strcmp (argv[i], "--sparse-goals"))
      goals = 1;
  }
  GrMatcher *gpu = use_cuda && gr_cuda_device_count () > 0 ? make (GR_BACKEND_CUDA, 0) : NULL;
  GrMatcher *cpu = use_cpu ? make (GR_BACKEND_CPU, threads) : NULL;
  if (!gpu)
    printf ("no CUDA device: CPU only%s\n", quick ? "" : " (use --quick on a CPU machine)");
  const int ma = quick ? 64 : 1024, mb = quick ? 40 : 1000, mbc = quick ? 20 : 100;
  const int held = quick ? 50 : 1000;
  const int reps_a = quick ? 2 : 10, reps_b = quick ? 1 : 3;

  /* (a) */
  {
    int64_t *off;
    float *d = make_desc (ma, 100, 32, &off, 1);
    printf ("(a) m = %d, n_i = 100, k = 32, n = %lld\n", ma, (long long) off[ma]);
    int32_t *g = gpu ? run_batch ("(a) batch 1024x100 k32", gpu, d, 32, off, ma, reps_a,
        NULL) : NULL;
    int32_t *c = cpu ? run_batch ("(a) batch 1024x100 k32", cpu, d, 32, off, ma, 1,
        NULL) : NULL;
    check_same ("(a)", g, c, (int64_t) ma * off[ma]);
    int64_t gn = 0, cn = 0;
    GrMatch *gsp = gpu ? run_sparse ("(a) sparse 1024x100 k32", gpu, d, 32, off, ma,
        reps_a, &gn) : NULL;
    GrMatch *csp = cpu ? run_sparse ("(a) sparse 1024x100 k32", cpu, d, 32, off, ma, 1,
        &cn) : NULL;
    check_sparse ("(a) sparse", d, 32, off, ma, g ? g : c, gsp ? gsp : csp,
        gsp ? gn : cn, gsp ? csp : NULL, cn);
    if (gsp && !quick)
      goal_line ("(a) m 1024 n_i 100 k 32", 15.0);
    if (gsp)
      run_variants (0, "(a)", gpu, d, 32, off, ma, reps_a, gsp, gn);
    free (gsp);
    free (csp);
    free (g);
    free (c);
    free (d);
    free (off);
  }
  /* (b) */
  {
    int64_t *off;
    float *d = make_desc (mb, 500, 64, &off, 2);
    printf ("(b) m = %d, n_i = 500, k = 64, n = %lld\n", mb, (long long) off[mb]);
    if (gpu) {
      int32_t *g = run_batch ("(b) batch 1000x500 k64", gpu, d, 64, off, mb, reps_b, NULL);
      int64_t gn = 0;
      GrMatch *gsp = run_sparse ("(b) sparse 1000x500 k64", gpu, d, 64, off, mb, reps_b,
          &gn);
      check_sparse ("(b) sparse", d, 64, off, mb, g, gsp, gn, NULL, 0);
      if (gsp && !quick)
        goal_line ("(b) m 1000 n_i 500 k 64", 150.0);
      if (gsp)
        run_variants (1, "(b)", gpu, d, 64, off, mb, quick ? reps_b : 5, gsp, gn);
      free (gsp);
      free (g);
    }
    if (goals) {
      free (d);
      free (off);
      goto report;
    }
    /* the first mbc images on both backends: the check and the CPU figure */
    int32_t *gs = gpu ? run_batch ("(b') first 100 images", gpu, d, 64, off, mbc, reps_b,
        NULL) : NULL;
    int32_t *cs = cpu ? run_batch ("(b') first 100 images", cpu, d, 64, off, mbc, 1,
        NULL) : NULL;
    check_same ("(b') 100x500 k64", gs, cs, (int64_t) mbc * off[mbc]);
    if (cs) {
      /* the CPU's full-size estimate: the work grows with m^2 */
      Row *r = &rows[nrows - 1];
      const double sc = ((double) mb / mbc) * ((double) mb / mbc);
      double k1[1] = { r->kernel_ms * sc }, w1[1] = { r->wall_ms * sc };
      GrMatchStats st = { 0 };
      st.pairs = (long long) mb * off[mb];
      add_row ("(b) batch 1000x500 k64", "cpu", k1, w1, 1, &st,
          "(estimate: (b') x (1000/100)^2)");
    }
    /* the sparse form (after the estimate, which reads the row above) */
    {
      int64_t gn = 0, cn = 0;
      GrMatch *gsp = gpu ? run_sparse ("(b') sparse, first 100", gpu, d, 64, off, mbc,
          reps_b, &gn) : NULL;
      GrMatch *csp = cpu ? run_sparse ("(b') sparse, first 100", cpu, d, 64, off, mbc, 1,
          &cn) : NULL;
      check_sparse ("(b') sparse", d, 64, off, mbc, gs ? gs : cs, gsp ? gsp : csp,
          gsp ? gn : cn, gsp ? csp : NULL, cn);
      free (gsp);
      free (csp);
    }
    free (gs);
    free (cs);
    free (d);
    free (off);
  }
  /* (c) */
  {
    int64_t *off;
    const int frames = quick ? 3 : 20;
    float *d = make_desc (held + frames + 2, 500, 64, &off, 3);
    printf ("(c) streaming: one image of 500 against %d held images of 500, k = 64\n",
        held);
    int32_t *gf = NULL, *gb = NULL, *cf = NULL, *cb = NULL;
    if (gpu) {
      /* the call as the element makes it (results in the matcher's pinned buffers,
       * both directions concurrently), then the variants: one stream; gr_matcher_add
       * into pageable memory (the earlier figure's path) */
      run_stream ("(c) stream, view (pinned)", gpu, d, 64, off, held, frames, 1, 0,
          NULL, NULL);
      run_stream ("(c) stream, view, one stream", gpu, d, 64, off, held, frames, 1,
          GR_MATCHER_DEBUG_ONE_STREAM, NULL, NULL);
      run_stream ("(c) stream, add (pageable)", gpu, d, 64, off, held, frames, 0, 0,
          NULL, NULL);
      run_stream ("(c) stream, add, one stream", gpu, d, 64, off, held, frames, 0,
          GR_MATCHER_DEBUG_ONE_STREAM, NULL, NULL);
    }
    /* the check: both backends on the same window and the same 3 frames */
    if (gpu && cpu) {
      int32_t *vf = NULL, *vb = NULL;
      run_stream ("(c') check, 3 frames", gpu, d, 64, off, held, 3, 0, 0, &gf, &gb);
      run_stream ("(c') check, 3 frames, view", gpu, d, 64, off, held, 3, 1, 0, &vf,
          &vb);
      run_stream ("(c') check, 3 frames", cpu, d, 64, off, held, 3, 0, 0, &cf, &cb);
      check_same ("(c') forward", gf, cf, (int64_t) held * 500);
      check_same ("(c') backward", gb, cb, (int64_t) held * 500);
      check_same ("(c') forward, view", vf, cf, (int64_t) held * 500);
      check_same ("(c') backward, view", vb, cb, (int64_t) held * 500);
      free (vf);
      free (vb);
    } else if (cpu) {
      run_stream ("(c) stream 500 vs 1000x500 k64", cpu, d, 64, off, held, 3, 0, 0, NULL,
          NULL);
    }
    free (gf);
    free (gb);
    free (cf);
    free (cb);
    free (d);
    free (off);
  }

report:
  printf ("\n| case | backend | kernel median ms | wall median ms | reps | re-checked |"
      " note |\n|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < nrows; i++)
    printf ("| %s | %s | %.3f | %.3f | %d | %lld / %lld | %s |\n", rows[i].name,
        rows[i].backend, rows[i].kernel_ms, rows[i].wall_ms, rows[i].reps,
        rows[i].rechecked, rows[i].pairs, rows[i].note ? rows[i].note : "");
  if (gpu)
    variant_lines (quick);
  if (json) {
    FILE *f = fopen (json, "w");
    if (f) {
      fprintf (f, "[\n");
      for (int i = 0; i < nrows; i++)
        fprintf (f, "  {\"case\": \"%s\", \"backend\": \"%s\", \"kernel_ms\": %.6f, "
            "\"wall_ms\": %.6f, \"reps\": %d, \"rechecked\": %lld, \"pairs\": %lld}%s\n",
            rows[i].name, rows[i].backend, rows[i].kernel_ms, rows[i].wall_ms,
            rows[i].reps, rows[i].rechecked, rows[i].pairs, i + 1 < nrows ? "," : "");
      fprintf (f, "]\n");
      fclose (f);
    }
  }
  gr_matcher_free (gpu);
  gr_matcher_free (cpu);
  if (mismatch_total)
    printf ("CUDA and CPU outputs differ in %d case(s)\n", mismatch_total);
  return mismatch_total ? 1 : 0;
}
