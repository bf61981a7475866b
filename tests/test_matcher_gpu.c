/* Matcher, CUDA backend: identical to the CPU backend and to the float64 reference
 * (except documented near-ties) on random, survey-like, scaled and adversarial
 * descriptors, for k from 1 to 128, images from 0 to 700 descriptors; the all-exact
 * path, the re-check queue overflow (sweep) path, the incremental form with a sliding
 * window (database compaction and growth), and, when GEOREG_DATA holds aukerman.png,
 * real descriptors of frames cut from the orthomosaic; every case also through the
 * sparse batch form (CUDA list = CPU list, = CUDA dense, float64 distances), the list
 * mode with each match-kernel variant too (GEOREG_MATCHER_VARIANT: list = CPU list),
 * and through the staged upload (GEOREG_MATCHER_UPLOAD=pinned).
 * Exit 0 pass, 1 fail, 77 skip (no usable CUDA device).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matcher.h"
#include "matcher_reference.h"
#include "realdesc.h"

#include "test_check.h"

_Static_assert (sizeof (GrMatch) == sizeof (RefSparse), "GrMatch layout");

#define POISON 0x5A5A5A5A

/* GR_MATCHER_GPU_QUICK=1: a small subset (for compute-sanitizer) */
static int quick;

static GrMatcher *
new_matcher (GrBackend b)
{
  GrStatus st;
  char err[256] = "";
  GrMatcher *mt = gr_matcher_new (b, -1, &st, err, sizeof err);
  CHECK (mt && st == GR_OK, "gr_matcher_new (%s): %s", gr_backend_name (b), err);
  return mt;
}

static int32_t *
batch (GrMatcher *mt, const float *desc, int k, const int64_t *off, int m, float ratio,
    GrMatchStats *st)
{
  char err[256] = "";
  const int64_t total = (int64_t) m * off[m];
  int32_t *out = malloc (sizeof (int32_t) * (total > 0 ? total : 1));
  for (int64_t i = 0; i < total; i++)
    out[i] = POISON;
  GrMatchStats dummy;
  GrStatus s = gr_matcher_match_all (mt, desc, k, off, m, ratio, out, st ? st : &dummy,
      err, sizeof err);
  CHECK (s == GR_OK, "match_all (%s): %s", gr_backend_name (gr_matcher_backend (mt)), err);
  return out;
}

static int64_t *
offsets_of (const int *sizes, int m)
{
  int64_t *off = malloc (sizeof (int64_t) * (m + 1));
  off[0] = 0;
  for (int i = 0; i < m; i++)
    off[i + 1] = off[i] + sizes[i];
  return off;
}

static int64_t
count_diff (const int32_t *a, const int32_t *b, int64_t n)
{
  int64_t d = 0;
  for (int64_t i = 0; i < n; i++)
    d += a[i] != b[i];
  return d;
}

/* CUDA vs CPU (identical) and vs the reference (when ref) */
/* the sparse form: CUDA (list mode, its debug paths, and slabs of 3 images) against
 * the CPU's list bit for bit (distances included), and against CUDA's dense output and
 * the float64 distances; then each match-kernel variant of the list mode
 * (GEOREG_MATCHER_VARIANT, kernels/matcher_cuda.cu) on the paths that run it, against
 * the CPU's list bit for bit (equal to the default's, which the float64 check above
 * covers) */
static void
compare_sparse (const char *what, GrMatcher *gpu, GrMatcher *cpu, const float *desc,
    int k, const int64_t *off, int m, float ratio, const int32_t *dense)
{
  char err[256] = "";
  const GrMatch *cv = NULL;
  int64_t cn = 0;
  CHECK (gr_matcher_match_all_sparse (cpu, desc, k, off, m, ratio, &cv, &cn, NULL, err,
          sizeof err) == GR_OK, "%s: CPU sparse: %s", what, err);
  GrMatch *c = malloc (sizeof (GrMatch) * (size_t) (cn > 0 ? cn : 1));
  memcpy (c, cv, sizeof (GrMatch) * (size_t) cn);
  /* the list mode; the slab path; the list mode from a 4-entry list (regrowth and a
   * second launch); the list mode with every pair settled by the exact re-check (its
   * entries come with their distances); a re-check queue that overflows (the list
   * mode falls back to the slab path and its sweep) */
  static const unsigned variants[5] = { 0, GR_MATCHER_DEBUG_SMALL_SLAB,
    GR_MATCHER_DEBUG_SMALL_SPARSE, GR_MATCHER_DEBUG_FORCE_EXACT,
    GR_MATCHER_DEBUG_FORCE_EXACT | GR_MATCHER_DEBUG_SMALL_LIST };
  static const char *const vnames[5] = { "list", "3-image slabs", "list from 4",
    "list, all exact", "queue overflow" };
  /* the kernel variants run in the list mode only (the slab path and the queue
   * overflow's fallback to it are the default kernel's whatever the variant); the
   * staged upload (GEOREG_MATCHER_UPLOAD=pinned, the default) feeds both modes and
   * the plain one (=pageable) the others.  paths: the indices of variants[] each runs */
  static const struct {
    const char *kernel, *upload;
    unsigned paths;
  } kruns[5] = {
    { "key", "pageable", 0x1f }, { "top2", "pageable", 0xd }, { "min", "pageable", 0xd },
    { "key", "pinned", 0x3 }, { "min", "pinned", 0x1 },
  };
  for (int kv = 0; kv < 5; kv++) {
    setenv ("GEOREG_MATCHER_VARIANT", kruns[kv].kernel, 1);
    if (kruns[kv].upload)
      setenv ("GEOREG_MATCHER_UPLOAD", kruns[kv].upload, 1);
    else
      unsetenv ("GEOREG_MATCHER_UPLOAD");
    for (int small = 0; small < 5; small++) {
      if (quick && small != 0 && small != 2)
        continue;               /* the sanitizers' subset: the list mode's own paths */
      if (!(kruns[kv].paths & (1u << small)))
        continue;
      const GrMatch *gv = NULL;
      int64_t gn = -1;
      GrMatchStats st;
      gr_matcher_set_debug (gpu, variants[small]);
      const GrStatus s = gr_matcher_match_all_sparse (gpu, desc, k, off, m, ratio, &gv,
          &gn, &st, err, sizeof err);
      const char *kname = kruns[kv].kernel;
      CHECK (s == GR_OK, "%s: CUDA sparse (%s): %s", what, kname, err);
      if (s != GR_OK)
        continue;
      const int same = gn == cn && !memcmp (gv, c, sizeof (GrMatch) * (size_t) cn);
      if (kv == 0) {
        const int64_t bad = ref_compare_sparse (desc, k, off, m, dense,
            (const RefSparse *) gv, gn, 1);
        printf ("%-26s sparse (%s): %lld entries, cuda %s cpu, %lld differences from "
            "dense + float64\n", what, vnames[small], (long long) gn,
            same ? "==" : "!=", (long long) bad);
        CHECK (bad == 0, "%s: CUDA sparse list: %lld differences", what, (long long) bad);
      } else {
        printf ("%-26s sparse (%s, variant %s%s%s): %lld entries, %lld searched "
            "exactly, cuda %s cpu\n", what, vnames[small], kname,
            kruns[kv].upload ? ", upload " : "",
            kruns[kv].upload ? kruns[kv].upload : "", (long long) gn,
            (long long) st.rechecked, same ? "==" : "!=");
        /* a variant settles every entry of its list exactly (matcher_cuda.cu): fewer
         * would mean the default kernel ran instead */
        if (strcmp (kname, "key"))
          CHECK (st.rechecked >= gn, "%s: variant %s: %lld entries but %lld searched",
              what, kname, (long long) gn, (long long) st.rechecked);
      }
      CHECK (same, "%s: CUDA (%s, %s, upload %s) and CPU sparse lists differ (%lld vs "
          "%lld entries)", what, kname, vnames[small], kruns[kv].upload ?
          kruns[kv].upload : "plain", (long long) gn, (long long) cn);
    }
  }
  unsetenv ("GEOREG_MATCHER_VARIANT");
  unsetenv ("GEOREG_MATCHER_UPLOAD");
  gr_matcher_set_debug (gpu, 0);
  free (c);
}

static void
compare (const char *what, GrMatcher *gpu, GrMatcher *cpu, const float *desc, int k,
    const int64_t *off, int m, float ratio, int ref)
{
  GrMatchStats sg, sc;
  int32_t *g = batch (gpu, desc, k, off, m, ratio, &sg);
  int32_t *c = batch (cpu, desc, k, off, m, ratio, &sc);
  const int64_t total = (int64_t) m * off[m];
  const int64_t d = count_diff (g, c, total);
  int64_t bad = 0, ties = 0, acc = 0;
  if (ref)
    bad = ref_compare (desc, k, off, m, ratio, g, &ties, &acc, 1);
  printf ("%-26s k=%3d m=%4d n=%7lld r=%.2f: cuda!=cpu %lld, ref mismatches %lld "
      "(near-ties %lld, matches %lld), rechecked cuda %lld cpu %lld, kernel %.2f ms, "
      "cpu %.1f ms\n", what, k, m, (long long) off[m], ratio, (long long) d,
      (long long) bad, (long long) ties, (long long) acc, (long long) sg.rechecked,
      (long long) sc.rechecked, sg.kernel_ms, sc.elapsed_ms);
  CHECK (d == 0, "%s: %lld entries differ between CUDA and CPU", what, (long long) d);
  CHECK (bad == 0, "%s: %lld mismatches against the reference", what, (long long) bad);
  if (d) {
    int shown = 0;
    for (int64_t i = 0; i < total && shown < 8; i++)
      if (g[i] != c[i]) {
        fprintf (stderr, "  image %lld descriptor %lld: cuda %d cpu %d\n",
            (long long) (i / off[m]), (long long) (i % off[m]), g[i], c[i]);
        shown++;
      }
  }
  compare_sparse (what, gpu, cpu, desc, k, off, m, ratio, g);
  free (g);
  free (c);
}

static void
test_random (GrMatcher *gpu, GrMatcher *cpu)
{
  uint64_t rng = 0xC0FFEEull;
  const int sizes[] = { 37, 0, 1, 2, 3, 63, 64, 65, 129, 100, 700, 5, 128, 80 };
  const int m = (int) (sizeof sizes / sizeof sizes[0]);
  int64_t *off = offsets_of (sizes, m);
  const int ks[] = { 1, 3, 16, 32, 33, 64, 100, 128 };
  for (unsigned a = 0; a < sizeof ks / sizeof ks[0]; a++) {
    if (quick && ks[a] != 3 && ks[a] != 64 && ks[a] != 100)
      continue;
    const int k = ks[a];
    float *desc = malloc (sizeof (float) * off[m] * k);
    for (int64_t i = 0; i < off[m] * k; i++)
      desc[i] = (float) (2.0 * mref_uniform (&rng) - 1.0);
    compare ("uniform", gpu, cpu, desc, k, off, m, 0.8f, 1);
    compare ("uniform, ratio 1.2", gpu, cpu, desc, k, off, m, 1.2f, 1);
    mref_survey (desc, off, m, k, 0.05, 0.6, 1, &rng);
    compare ("survey, unit rows", gpu, cpu, desc, k, off, m, 0.8f, 1);
    mref_survey (desc, off, m, k, 2.0, 0.6, 0, &rng);
    for (int64_t i = 0; i < off[m] * k; i++)
      desc[i] = desc[i] * 1000.0f + 5000.0f;    /* large offset: cancellation */
    compare ("survey, x1000 + 5000", gpu, cpu, desc, k, off, m, 0.9f, 1);
    for (int64_t i = 0; i < off[m] * k; i++)
      desc[i] = desc[i] * 1e-12f;               /* tiny values */
    compare ("survey, x1e-12", gpu, cpu, desc, k, off, m, 0.9f, 1);
    free (desc);
  }
  free (off);
}

/* near-threshold and near-tie pairs (see test_matcher.c) */
static void
test_tricky (GrMatcher *gpu, GrMatcher *cpu)
{
  uint64_t rng = 99;
  const int ks[] = { 8, 32, 64, 128 };
  for (unsigned a = quick ? 2 : 0; a < (quick ? 3u : 4u); a++) {
    const int k = ks[a], nq = 300;
    const int sizes[4] = { nq, 2 * nq, 2 * nq, 50 };
    int64_t *off = offsets_of (sizes, 4);
    float *desc = malloc (sizeof (float) * off[4] * k);
    double *u = malloc (sizeof (double) * k);
    for (int64_t i = 0; i < off[4] * k; i++)
      desc[i] = (float) (4.0 * mref_gauss (&rng));
    for (int j = 0; j < nq; j++)
      for (int im = 1; im <= 2; im++)
        for (int c = 0; c < 2; c++) {
          double s = 0;
          for (int t = 0; t < k; t++) {
            u[t] = mref_gauss (&rng);
            s += u[t] * u[t];
          }
          const double eps = (mref_uniform (&rng) - 0.5) * 4e-3;  /* inside the FP16 band */
          const double len = im == 1 ? (c == 0 ? 0.8 * (1 + eps) : 1.0)
              : (c == 0 ? 1.0 : 1.0 + eps);
          float *d = desc + (off[im] + 2 * j + c) * k;
          for (int t = 0; t < k; t++)
            d[t] = (float) (desc[j * k + t] + len * u[t] / sqrt (s));
        }
    compare ("tricky", gpu, cpu, desc, k, off, 4, 0.8f, 1);
    compare ("tricky, ratio 1.5", gpu, cpu, desc, k, off, 4, 1.5f, 1);
    GrMatchStats st;
    int32_t *o = batch (gpu, desc, k, off, 4, 0.8f, &st);
    CHECK (st.rechecked >= nq / 2, "tricky k=%d: only %lld CUDA re-checks", k,
        (long long) st.rechecked);
    free (o);
    free (u);
    free (desc);
    free (off);
  }
}

/* The batch shapes at small m ((a): n_i = 100, k = 32; (b): n_i = 500, k = 64,
 * survey data as bench_matcher's), and duplicates: each query of image 0 has a close
 * neighbour in image 1 and two identical copies of a farther one (so the second
 * distance is a tie that the sparse form's finishing kernel must settle exactly), and
 * exact copies of itself in image 2 (d1 = d2 = 0: rejected). */
/* m images of ni survey descriptors of length k, as bench_matcher's */
static void
shape_case (const char *what, GrMatcher *gpu, GrMatcher *cpu, int m, int ni, int k,
    uint64_t *rng)
{
  int *sizes = malloc (sizeof (int) * m);
  for (int i = 0; i < m; i++)
    sizes[i] = ni;
  int64_t *off = offsets_of (sizes, m);
  float *desc = malloc (sizeof (float) * off[m] * k);
  mref_survey (desc, off, m, k, 0.08, 0.3, 1, rng);
  compare (what, gpu, cpu, desc, k, off, m, 0.8f, 1);
  free (desc);
  free (off);
  free (sizes);
}

static void
test_shapes (GrMatcher *gpu, GrMatcher *cpu)
{
  uint64_t rng = 1414;
  shape_case ("shape (a), n_i 100 k 32", gpu, cpu, quick ? 6 : 24, 100, 32, &rng);
  if (!quick)
    shape_case ("shape (b), n_i 500 k 64", gpu, cpu, 8, 500, 64, &rng);
  const int ks[] = { 1, 32, 64, 128 };
  for (unsigned a = quick ? 1 : 0; a < (quick ? 3u : sizeof ks / sizeof ks[0]); a++) {
    const int k = ks[a], nq = 120;
    const int sizes[4] = { nq, 3 * nq + 40, 2 * nq, 0 };
    int64_t *off = offsets_of (sizes, 4);
    float *desc = malloc (sizeof (float) * off[4] * k);
    for (int64_t i = 0; i < off[4] * k; i++)
      desc[i] = (float) mref_gauss (&rng);
    for (int j = 0; j < nq; j++) {
      const float *q = desc + (int64_t) j * k;
      float *near = desc + (off[1] + 3 * j) * k;
      float *far1 = near + k, *far2 = near + 2 * k;
      float *self1 = desc + (off[2] + 2 * j) * k, *self2 = self1 + k;
      for (int t = 0; t < k; t++) {
        near[t] = q[t] + 0.05f * (float) mref_gauss (&rng);
        far1[t] = far2[t] = q[t] + 0.5f * (float) mref_gauss (&rng);
        self1[t] = self2[t] = q[t];
      }
    }
    compare ("duplicates", gpu, cpu, desc, k, off, 4, 0.8f, 1);
    free (desc);
    free (off);
  }
}

/* all-exact and queue-overflow paths equal the fast path */
static void
test_paths (GrMatcher *gpu)
{
  uint64_t rng = 5;
  const int sizes[] = { 90, 130, 2, 64, 200, 1, 75 };
  const int m = 7, k = 64;
  int64_t *off = offsets_of (sizes, m);
  float *desc = malloc (sizeof (float) * off[m] * k);
  mref_survey (desc, off, m, k, 0.1, 0.7, 1, &rng);
  const int64_t total = (int64_t) m * off[m];
  for (int r = 0; r < 2; r++) {
    const float ratio = r ? 1.05f : 0.8f;
    GrMatchStats s0, s1, s2, s3;
    int32_t *a = batch (gpu, desc, k, off, m, ratio, &s0);
    gr_matcher_set_debug (gpu, GR_MATCHER_DEBUG_FORCE_EXACT);
    int32_t *b = batch (gpu, desc, k, off, m, ratio, &s1);
    gr_matcher_set_debug (gpu, GR_MATCHER_DEBUG_SMALL_LIST);
    int32_t *c = batch (gpu, desc, k, off, m, ratio, &s2);
    gr_matcher_set_debug (gpu, GR_MATCHER_DEBUG_FORCE_EXACT | GR_MATCHER_DEBUG_SMALL_LIST);
    int32_t *d = batch (gpu, desc, k, off, m, ratio, &s3);
    gr_matcher_set_debug (gpu, 0);
    printf ("paths r=%.2f: rechecked fast %lld, all-exact %lld, small queue %lld, both "
        "%lld\n", ratio, (long long) s0.rechecked, (long long) s1.rechecked,
        (long long) s2.rechecked, (long long) s3.rechecked);
    CHECK (count_diff (a, b, total) == 0, "all-exact path differs (r %.2f)", ratio);
    CHECK (count_diff (a, c, total) == 0, "small-queue path differs (r %.2f)", ratio);
    CHECK (count_diff (a, d, total) == 0, "all-exact + sweep differs (r %.2f)", ratio);
    CHECK (s3.rechecked > 16, "the sweep path was not reached");
    free (a);
    free (b);
    free (c);
    free (d);
  }
  free (desc);
  free (off);
}

/* incremental == batch on CUDA, with a window; and == the CPU incremental form */
static void
test_incremental (GrMatcher *gpu, GrMatcher *cpu)
{
  uint64_t rng = 31337;
  const int m = 40, k = 32;
  int sizes[40];
  for (int i = 0; i < m; i++)
    sizes[i] = i % 13 == 5 ? 0 : i % 11 == 3 ? 1 : 20 + (int) (mref_rand (&rng) % 200);
  int64_t *off = offsets_of (sizes, m);
  const int64_t n = off[m];
  float *desc = malloc (sizeof (float) * n * k);
  mref_survey (desc, off, m, k, 0.07, 0.6, 1, &rng);
  int32_t *full = batch (gpu, desc, k, off, m, 0.8f, NULL);
  const int windows[3] = { 0, 4, 9 };
  /* a third matcher through gr_matcher_add_view (pinned result buffers), with the two
   * directions on two streams (windows 0 and 9) or on one (window 4) */
  GrMatcher *gv = new_matcher (GR_BACKEND_CUDA);
  for (int w = 0; w < (quick ? 2 : 3); w++) {
    const int window = windows[w];
    int64_t bad = 0, bad_cpu = 0, bad_view = 0;
    char err[256];
    gr_matcher_reset (gpu);
    gr_matcher_reset (cpu);
    gr_matcher_reset (gv);
    gr_matcher_set_debug (gv, w == 1 ? GR_MATCHER_DEBUG_ONE_STREAM : 0);
    for (int rep = 0; rep < (quick ? 2 : 3); rep++)   /* compaction and growth */
      for (int b = 0; b < m; b++) {
        const int held = gr_matcher_held_images (gpu);
        const int64_t hd = gr_matcher_held_descriptors (gpu);
        int32_t *f1 = malloc (sizeof (int32_t) * ((size_t) held * sizes[b] + 1));
        int32_t *b1 = malloc (sizeof (int32_t) * (hd + 1));
        int32_t *f2 = malloc (sizeof (int32_t) * ((size_t) held * sizes[b] + 1));
        int32_t *b2 = malloc (sizeof (int32_t) * (hd + 1));
        memset (f1, 0x5A, sizeof (int32_t) * ((size_t) held * sizes[b] + 1));
        memset (b1, 0x5A, sizeof (int32_t) * (hd + 1));
        CHECK (gr_matcher_add (gpu, desc + off[b] * k, sizes[b], k, 0.8f, f1, b1, NULL,
                err, sizeof err) == GR_OK, "cuda add: %s", err);
        CHECK (gr_matcher_add (cpu, desc + off[b] * k, sizes[b], k, 0.8f, f2, b2, NULL,
                err, sizeof err) == GR_OK, "cpu add: %s", err);
        bad_cpu += count_diff (f1, f2, (int64_t) held * sizes[b]) + count_diff (b1, b2, hd);
        const int32_t *vf = NULL, *vb = NULL;
        CHECK (gr_matcher_add_view (gv, desc + off[b] * k, sizes[b], k, 0.8f, &vf, &vb,
                NULL, err, sizeof err) == GR_OK && vf && vb, "cuda add_view: %s", err);
        if (vf && vb)
          bad_view += count_diff (f1, vf, (int64_t) held * sizes[b]) +
              count_diff (b1, vb, hd);
        if (rep == 0) {
          /* the held images are batch images b - held .. b - 1 */
          const int first = b - held;
          for (int p = 0; p < held; p++)
            for (int a = 0; a < sizes[b]; a++)
              bad += f1[(int64_t) p * sizes[b] + a] !=
                  full[(int64_t) (first + p) * n + off[b] + a];
          for (int64_t j = 0; j < hd; j++)
            bad += b1[j] != full[(int64_t) b * n + off[first] + j];
        }
        free (f1);
        free (b1);
        free (f2);
        free (b2);
        if (rep == 0 && window == 0)
          continue;
        const int lim = window ? window : 6;
        if (gr_matcher_held_images (gpu) > lim) {
          gr_matcher_drop_oldest (gpu, gr_matcher_held_images (gpu) - lim);
          gr_matcher_drop_oldest (cpu, gr_matcher_held_images (cpu) - lim);
          gr_matcher_drop_oldest (gv, gr_matcher_held_images (gv) - lim);
        }
      }
    printf ("incremental, window %d: %lld differ from the batch, %lld from the CPU, "
        "%lld in the views (%s)\n", window, (long long) bad, (long long) bad_cpu,
        (long long) bad_view, w == 1 ? "one stream" : "two streams");
    CHECK (bad == 0 && bad_cpu == 0 && bad_view == 0,
        "incremental window %d: %lld / %lld / %lld differ", window, (long long) bad,
        (long long) bad_cpu, (long long) bad_view);
  }
  gr_matcher_free (gv);
  gr_matcher_reset (gpu);
  gr_matcher_reset (cpu);
  free (full);
  free (desc);
  free (off);
}

/* a bigger case against the CPU backend only (the reference would be slow) */
static void
test_large (GrMatcher *gpu, GrMatcher *cpu)
{
  uint64_t rng = 2024;
  const int m = 48, k = 64;
  int sizes[48];
  for (int i = 0; i < m; i++)
    sizes[i] = 500;
  int64_t *off = offsets_of (sizes, m);
  float *desc = malloc (sizeof (float) * off[m] * k);
  mref_survey (desc, off, m, k, 0.08, 0.5, 1, &rng);
  compare ("survey 48 x 500", gpu, cpu, desc, k, off, m, 0.8f, 0);
  free (desc);
  free (off);
}

static void
test_real (GrMatcher *gpu, GrMatcher *cpu)
{
  for (int ks = 32; ks <= 64; ks += 32) {
    RealDesc r;
    char why[256];
    if (!realdesc_load (&r, ks, 10, why, sizeof why)) {
      printf ("real descriptors (k=%d): skipped: %s\n", ks, why);
      return;
    }
    compare ("real, aukerman frames", gpu, cpu, r.desc, r.k, r.off, r.m, 0.8f, 1);
    compare ("real, ratio 0.95", gpu, cpu, r.desc, r.k, r.off, r.m, 0.95f, 1);
    realdesc_clear (&r);
  }
}

int
main (void)
{
  setvbuf (stdout, NULL, _IOLBF, 0);    /* keep the log if something crashes */
  if (gr_cuda_device_count () <= 0) {
    printf ("SKIP: %s\n", gr_cuda_compiled () ? "no usable CUDA device" :
        "built without CUDA");
    return 77;
  }
  GrMatcher *gpu = new_matcher (GR_BACKEND_CUDA), *cpu = new_matcher (GR_BACKEND_CPU);
  if (!gpu || !cpu)
    return 1;
  char err[256];
  float big[200];
  memset (big, 0, sizeof big);
  int64_t off[2] = { 0, 1 };
  int32_t o[1];
  CHECK (gr_matcher_match_all (gpu, big, 200, off, 1, 0.8f, o, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "k > 128 on CUDA must be refused");
  /* the staged upload checks the values as it copies them, a part of 2^20 floats at
   * a time: a NaN in the second part is refused with the plain check's message */
  {
    const int nd = 40000, kk = 32;
    float *d = malloc (sizeof (float) * nd * kk);
    for (int i = 0; i < nd * kk; i++)
      d[i] = (float) (i % 97) * 0.01f;
    d[35000 * kk + 7] = NAN;
    int64_t o2[3] = { 0, nd / 2, nd };
    const GrMatch *v = NULL;
    int64_t cnt = 0;
    setenv ("GEOREG_MATCHER_UPLOAD", "pinned", 1);
    const GrStatus s = gr_matcher_match_all_sparse (gpu, d, kk, o2, 2, 0.8f, &v, &cnt,
        NULL, err, sizeof err);
    unsetenv ("GEOREG_MATCHER_UPLOAD");
    printf ("staged upload, a NaN at descriptor 35000: %s\n", err);
    CHECK (s == GR_ERR_INVALID && strstr (err, "descriptor 35000, component 7 "),
        "staged upload: a NaN must be refused with its place (%d: %s)", (int) s, err);
    free (d);
  }
  const char *q = getenv ("GR_MATCHER_GPU_QUICK");
  quick = q && *q && *q != '0';
  test_random (gpu, cpu);
  test_tricky (gpu, cpu);
  test_shapes (gpu, cpu);
  test_paths (gpu);
  test_incremental (gpu, cpu);
  if (!quick) {
    test_large (gpu, cpu);
    test_real (gpu, cpu);
  }
  gr_matcher_free (gpu);
  gr_matcher_free (cpu);
  return CHECK_DONE ();
}
