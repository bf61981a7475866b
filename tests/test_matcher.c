/* Matcher, CPU backend: against the float64 brute-force reference (identical except
 * documented near-ties) on random, survey-like and adversarial (near-threshold,
 * near-tie) descriptors; the exact re-check path against the fast path; threads;
 * the incremental form against the batch form, with a sliding window; the sparse
 * batch form against the dense one and the float64 distances (one slab and slabs of
 * 3 images); bad input (the values check on its own too, and the device form, which
 * the CPU backend refuses).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matcher.h"
#include "matcher_reference.h"
#include "realdesc.h"

#include "test_check.h"

_Static_assert (sizeof (GrMatch) == sizeof (RefSparse) &&
    offsetof (GrMatch, d2) == offsetof (RefSparse, d2), "GrMatch layout");

#define POISON 0x7B7B7B7B

static GrMatcher *
new_cpu (void)
{
  GrStatus st;
  char err[256] = "";
  GrMatcher *mt = gr_matcher_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
  CHECK (mt && st == GR_OK, "gr_matcher_new: %s", err);
  return mt;
}

static int32_t *
poisoned (int64_t count)
{
  int32_t *o = malloc (sizeof (int32_t) * (count > 0 ? count : 1));
  for (int64_t i = 0; i < count; i++)
    o[i] = POISON;
  return o;
}

/* sizes[m] -> offsets[m+1] */
static int64_t *
make_offsets (const int *sizes, int m)
{
  int64_t *off = malloc (sizeof (int64_t) * (m + 1));
  off[0] = 0;
  for (int i = 0; i < m; i++)
    off[i + 1] = off[i] + sizes[i];
  return off;
}

/* batch on the CPU backend; returns the output (caller frees) */
static int32_t *
run_batch (GrMatcher *mt, const float *desc, int k, const int64_t *off, int m,
    float ratio, GrMatchStats *st)
{
  char err[256] = "";
  int32_t *out = poisoned ((int64_t) m * off[m]);
  GrStatus s = gr_matcher_match_all (mt, desc, k, off, m, ratio, out, st, err, sizeof err);
  CHECK (s == GR_OK, "match_all: %s", err);
  return out;
}

/* the sparse form, in one slab and in slabs of 3 images: the dense output's entries,
 * with the float64 reference's distances */
static void
check_sparse (GrMatcher *mt, const char *what, const float *desc, int k,
    const int64_t *off, int m, float ratio, const int32_t *dense)
{
  for (int small = 0; small < 2; small++) {
    char err[256] = "";
    const GrMatch *sp = NULL;
    int64_t count = -1;
    gr_matcher_set_debug (mt, small ? GR_MATCHER_DEBUG_SMALL_SLAB : 0);
    GrStatus s = gr_matcher_match_all_sparse (mt, desc, k, off, m, ratio, &sp, &count,
        NULL, err, sizeof err);
    CHECK (s == GR_OK, "%s: match_all_sparse: %s", what, err);
    if (s != GR_OK)
      continue;
    const int64_t bad = ref_compare_sparse (desc, k, off, m, dense,
        (const RefSparse *) sp, count, 1);
    CHECK (bad == 0, "%s: sparse form (%s slabs): %lld differences", what,
        small ? "3-image" : "full", (long long) bad);
  }
  gr_matcher_set_debug (mt, 0);
}

static void
check_against_reference (const char *what, const float *desc, int k, const int64_t *off,
    int m, float ratio, int expect_accepts)
{
  GrMatcher *mt = new_cpu ();
  GrMatchStats st;
  int32_t *out = run_batch (mt, desc, k, off, m, ratio, &st);
  int64_t ties, acc;
  int64_t bad = ref_compare (desc, k, off, m, ratio, out, &ties, &acc, 1);
  printf ("%-34s k=%3d m=%3d n=%6lld ratio %.2f: %lld matches, %lld near-ties, "
      "%lld rechecked, %lld mismatches, %.1f ms\n", what, k, m, (long long) off[m],
      ratio, (long long) acc, (long long) ties, (long long) st.rechecked,
      (long long) bad, st.elapsed_ms);
  CHECK (bad == 0, "%s: %lld mismatches against the float64 reference", what,
      (long long) bad);
  if (expect_accepts)
    CHECK (acc > 0, "%s: no match at all (test data too weak)", what);
  for (int64_t i = 0; i < (int64_t) m * off[m]; i++)
    if (out[i] == POISON) {
      CHECK (0, "%s: output entry %lld never written", what, (long long) i);
      break;
    }
  check_sparse (mt, what, desc, k, off, m, ratio, out);
  free (out);
  gr_matcher_free (mt);
}

static void
test_exact_distance (void)
{
  const float a[3] = { 1.0f, -2.0f, 0.5f }, b[3] = { 0.0f, 1.0f, 0.25f };
  const double d = gr_matcher_exact_distance (a, b, 3);
  CHECK (fabs (d - (1.0 + 9.0 + 0.0625)) < 1e-15, "exact distance %g", d);
}

static void
test_random (void)
{
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  /* sizes include empty and single-descriptor images, and sizes around the tile */
  const int sizes[] = { 37, 0, 1, 2, 3, 16, 17, 100, 45, 64, 5, 80 };
  const int m = (int) (sizeof sizes / sizeof sizes[0]);
  int64_t *off = make_offsets (sizes, m);
  const int ks[] = { 1, 3, 32, 64, 129 };
  for (unsigned a = 0; a < sizeof ks / sizeof ks[0]; a++) {
    const int k = ks[a];
    float *desc = malloc (sizeof (float) * off[m] * k);
    /* uniform values in [-1, 1), unnormalized */
    for (int64_t i = 0; i < off[m] * k; i++)
      desc[i] = (float) (2.0 * mref_uniform (&rng) - 1.0);
    check_against_reference ("uniform", desc, k, off, m, 0.8f, 0);
    check_against_reference ("uniform, ratio 1.2", desc, k, off, m, 1.2f, 1);
    /* survey-like, unit rows */
    mref_survey (desc, off, m, k, 0.05, 0.6, 1, &rng);
    check_against_reference ("survey, unit rows", desc, k, off, m, 0.8f, k > 3);
    /* survey-like, large unnormalized values */
    mref_survey (desc, off, m, k, 3.0, 0.6, 0, &rng);
    for (int64_t i = 0; i < off[m] * k; i++)
      desc[i] *= 100.0f;
    check_against_reference ("survey, scaled x100", desc, k, off, m, 0.7f, 0);
    free (desc);
  }
  free (off);
}

/* Image 0: queries.  Image 1: for each query a pair (c1, c2) at distances with
 * d1 / d2 within 1e-6 of `ratio` (the ratio test is below float32's resolution).
 * Image 2: for each query two candidates at nearly equal distances (the winner is
 * below float32's resolution; decided with a ratio above 1).  Image 3: fillers. */
static float *
make_tricky (int k, int nq, double ratio, int64_t **off_out, int *m_out, uint64_t *rng)
{
  const int sizes[4] = { nq, 2 * nq, 2 * nq, 50 };
  int64_t *off = make_offsets (sizes, 4);
  float *desc = malloc (sizeof (float) * off[4] * k);
  double *u = malloc (sizeof (double) * k);
  for (int64_t i = 0; i < off[4] * k; i++)
    desc[i] = (float) (4.0 * mref_gauss (rng));
  for (int j = 0; j < nq; j++) {
    const float *q = desc + j * k;
    for (int im = 1; im <= 2; im++)
      for (int c = 0; c < 2; c++) {
        double s = 0;
        for (int t = 0; t < k; t++) {
          u[t] = mref_gauss (rng);
          s += u[t] * u[t];
        }
        const double eps = (mref_uniform (rng) - 0.5) * 2e-6;
        double len;
        if (im == 1)
          len = c == 0 ? ratio * (1.0 + eps) : 1.0;
        else
          len = c == 0 ? 1.0 : 1.0 + eps;
        float *d = desc + (off[im] + 2 * j + c) * k;
        for (int t = 0; t < k; t++)
          d[t] = (float) (q[t] + len * u[t] / sqrt (s));
      }
  }
  free (u);
  *off_out = off;
  *m_out = 4;
  return desc;
}

static void
test_tricky (void)
{
  uint64_t rng = 12345;
  const int ks[] = { 8, 32, 64 };
  for (unsigned a = 0; a < 3; a++) {
    const int k = ks[a];
    int64_t *off;
    int m;
    float *desc = make_tricky (k, 200, 0.8, &off, &m, &rng);
    GrMatcher *mt = new_cpu ();
    const float ratios[2] = { 0.8f, 1.5f };
    for (int r = 0; r < 2; r++) {
      GrMatchStats st;
      int32_t *out = run_batch (mt, desc, k, off, m, ratios[r], &st);
      int64_t ties, acc;
      const int64_t bad = ref_compare (desc, k, off, m, ratios[r], out, &ties, &acc, 1);
      printf ("tricky k=%d ratio %.1f: %lld matches, %lld near-ties, %lld rechecked, "
          "%lld mismatches\n", k, ratios[r], (long long) acc, (long long) ties,
          (long long) st.rechecked, (long long) bad);
      CHECK (bad == 0, "tricky k=%d ratio %.1f: %lld mismatches", k, ratios[r],
          (long long) bad);
      CHECK (st.rechecked >= 100, "tricky k=%d: only %lld pairs went through the "
          "exact re-check: the test does not reach it", k, (long long) st.rechecked);
      CHECK (acc >= 100, "tricky k=%d: only %lld matches", k, (long long) acc);
      free (out);
    }
    gr_matcher_free (mt);
    free (desc);
    free (off);
  }
}

/* the fast path (bound + float32) and the all-exact path agree everywhere; and the
 * thread count changes nothing */
static void
test_force_exact_and_threads (void)
{
  uint64_t rng = 777;
  const int sizes[] = { 60, 70, 3, 90, 64, 2, 55 };
  const int m = 7, k = 32;
  int64_t *off = make_offsets (sizes, m);
  float *desc = malloc (sizeof (float) * off[m] * k);
  mref_survey (desc, off, m, k, 0.08, 0.7, 1, &rng);
  const int64_t total = (int64_t) m * off[m];
  for (int r = 0; r < 2; r++) {
    const float ratio = r ? 1.1f : 0.85f;
    GrMatcher *mt = new_cpu ();
    GrMatchStats s1, s2, s3;
    int32_t *a = run_batch (mt, desc, k, off, m, ratio, &s1);
    gr_matcher_set_debug (mt, GR_MATCHER_DEBUG_FORCE_EXACT);
    int32_t *b = run_batch (mt, desc, k, off, m, ratio, &s2);
    gr_matcher_set_debug (mt, 0);
    gr_matcher_set_threads (mt, 1);
    int32_t *c = run_batch (mt, desc, k, off, m, ratio, &s3);
    CHECK (memcmp (a, b, sizeof (int32_t) * total) == 0,
        "ratio %.2f: fast path differs from the all-exact path", ratio);
    CHECK (memcmp (a, c, sizeof (int32_t) * total) == 0,
        "ratio %.2f: 1 thread differs from the default", ratio);
    CHECK (s2.rechecked > s1.rechecked && s2.rechecked > 0, "force-exact rechecked %lld",
        (long long) s2.rechecked);
    printf ("ratio %.2f: fast path rechecked %lld of %lld pairs; all-exact %lld\n", ratio,
        (long long) s1.rechecked, (long long) s1.pairs, (long long) s2.rechecked);
    free (a);
    free (b);
    free (c);
    gr_matcher_free (mt);
  }
  free (desc);
  free (off);
}

/* adding images one by one reproduces the batch matrix; with a sliding window the
 * held images' part does */
static void
test_incremental (void)
{
  uint64_t rng = 4242;
  const int sizes[] = { 40, 0, 33, 1, 50, 64, 2, 47, 39 };
  const int m = (int) (sizeof sizes / sizeof sizes[0]), k = 24;
  int64_t *off = make_offsets (sizes, m);
  const int64_t n = off[m];
  float *desc = malloc (sizeof (float) * n * k);
  mref_survey (desc, off, m, k, 0.06, 0.7, 1, &rng);
  const float ratio = 0.8f;
  GrMatcher *mt = new_cpu ();
  GrMatcher *mv = new_cpu ();           /* the same adds through gr_matcher_add_view */
  int32_t *batch = run_batch (mt, desc, k, off, m, ratio, NULL);

  for (int window = 0; window <= 3; window += 3) {
    char err[256] = "";
    int32_t *full = poisoned ((int64_t) m * n);
    int64_t mismatches = 0;
    for (int b = 0; b < m; b++) {
      const int held = gr_matcher_held_images (mt);
      const int64_t hd = gr_matcher_held_descriptors (mt);
      const int first = b - held;          /* index of the oldest held image */
      int32_t *fwd = poisoned ((int64_t) held * sizes[b]);
      int32_t *bwd = poisoned (hd);
      GrMatchStats st;
      GrStatus s = gr_matcher_add (mt, desc + off[b] * k, sizes[b], k, ratio, fwd, bwd,
          &st, err, sizeof err);
      CHECK (s == GR_OK, "add %d: %s", b, err);
      /* the same image through gr_matcher_add_view on a second matcher: same results */
      const int32_t *vf = NULL, *vb = NULL;
      CHECK (gr_matcher_add_view (mv, desc + off[b] * k, sizes[b], k, ratio, &vf, &vb,
              NULL, err, sizeof err) == GR_OK && vf && vb, "add_view %d: %s", b, err);
      if (vf && vb) {
        CHECK (memcmp (vf, fwd, sizeof (int32_t) * (size_t) held * sizes[b]) == 0 &&
            memcmp (vb, bwd, sizeof (int32_t) * (size_t) hd) == 0,
            "add_view %d differs from add", b);
      }
      CHECK (st.pairs == (int64_t) held * sizes[b] + hd, "pairs %lld", (long long) st.pairs);
      for (int p = 0; p < held; p++)
        for (int a = 0; a < sizes[b]; a++) {
          const int32_t want = batch[(int64_t) (first + p) * n + off[b] + a];
          mismatches += fwd[(int64_t) p * sizes[b] + a] != want;
        }
      for (int64_t j = 0; j < hd; j++) {
        const int64_t jg = off[first] + j;
        mismatches += bwd[j] != batch[(int64_t) b * n + jg];
      }
      if (window == 0) {
        for (int p = 0; p < held; p++)
          for (int a = 0; a < sizes[b]; a++)
            full[(int64_t) p * n + off[b] + a] = fwd[(int64_t) p * sizes[b] + a];
        for (int64_t j = 0; j < hd; j++)
          full[(int64_t) b * n + j] = bwd[j];
        for (int64_t j = off[b]; j < off[b + 1]; j++)
          full[(int64_t) b * n + j] = -1;
      }
      free (fwd);
      free (bwd);
      if (window > 0 && gr_matcher_held_images (mt) > window) {
        gr_matcher_drop_oldest (mt, gr_matcher_held_images (mt) - window);
        gr_matcher_drop_oldest (mv, gr_matcher_held_images (mv) - window);
      }
      CHECK (gr_matcher_held_image_size (mt, gr_matcher_held_images (mt) - 1) == sizes[b],
          "held size");
    }
    CHECK (mismatches == 0, "window %d: %lld incremental entries differ from the batch",
        window, (long long) mismatches);
    if (window == 0)
      CHECK (memcmp (full, batch, sizeof (int32_t) * m * n) == 0,
          "the assembled incremental matrix differs from the batch matrix");
    CHECK (gr_matcher_held_images (mt) == (window ? window : m), "held %d",
        gr_matcher_held_images (mt));
    free (full);
    gr_matcher_reset (mt);
    gr_matcher_reset (mv);
    CHECK (gr_matcher_held_images (mt) == 0 && gr_matcher_held_descriptors (mt) == 0,
        "reset");
  }
  /* a long sliding window exercises the storage compaction */
  {
    char err[256];
    int64_t bad = 0;
    for (int b = 0; b < 60; b++) {
      const int i = b % m;
      const int held = gr_matcher_held_images (mt);
      int32_t *fwd = poisoned ((int64_t) held * sizes[i]);
      CHECK (gr_matcher_add (mt, desc + off[i] * k, sizes[i], k, ratio, fwd, NULL, NULL,
              err, sizeof err) == GR_OK, "%s", err);
      /* every held image is an earlier copy of image (b - held + p) % m */
      for (int p = 0; p < held; p++) {
        const int src = ((b - held + p) % m + m) % m;
        for (int a = 0; a < sizes[i]; a++) {
          const int32_t got = fwd[(int64_t) p * sizes[i] + a];
          int32_t want;
          if (src == i) {   /* the same image again: exact duplicates, distance 0 */
            want = got;     /* checked below through the reference */
            RefEntry e = ref_entry (desc + (off[i] + a) * k, desc + off[src] * k,
                sizes[src], k, ratio);
            want = e.idx;
          } else {
            want = batch[(int64_t) src * n + off[i] + a];
          }
          bad += got != want;
        }
      }
      free (fwd);
      if (gr_matcher_held_images (mt) > 5)
        gr_matcher_drop_oldest (mt, 1);
    }
    CHECK (bad == 0, "long window: %lld entries differ", (long long) bad);
  }
  gr_matcher_free (mt);
  gr_matcher_free (mv);
  free (batch);
  free (desc);
  free (off);
}

/* real descriptors of frames cut from the orthomosaic (GEOREG_DATA) */
static void
test_real (void)
{
  for (int k = 32; k <= 64; k += 32) {
    RealDesc r;
    char why[256];
    if (!realdesc_load (&r, k, 10, why, sizeof why)) {
      printf ("real descriptors: skipped: %s\n", why);
      return;
    }
    check_against_reference ("real (aukerman frames)", r.desc, k, r.off, r.m, 0.8f, 1);
    check_against_reference ("real, ratio 0.95", r.desc, k, r.off, r.m, 0.95f, 1);
    realdesc_clear (&r);
  }
}

/* one matcher reused across descriptor lengths (batch and, after a reset, incremental):
 * its storage restarts cleanly */
static void
test_reuse_across_k (void)
{
  uint64_t rng = 8080;
  const int sizes[] = { 50, 3, 120, 77, 64 };
  const int m = 5;
  int64_t *off = make_offsets (sizes, m);
  GrMatcher *mt = new_cpu ();
  const int ks[] = { 3, 40, 1, 40, 128, 3 };
  for (int a = 0; a < 6; a++) {
    const int k = ks[a];
    float *desc = malloc (sizeof (float) * off[m] * k);
    mref_survey (desc, off, m, k, 0.05, 0.6, 1, &rng);
    int32_t *out = run_batch (mt, desc, k, off, m, 0.8f, NULL);
    int64_t ties;
    const int64_t bad = ref_compare (desc, k, off, m, 0.8, out, &ties, NULL, 1);
    CHECK (bad == 0, "reused matcher, k = %d: %lld mismatches", k, (long long) bad);
    /* incremental after a reset with this k: equals the batch */
    gr_matcher_reset (mt);
    int64_t diff = 0;
    char err[256];
    for (int b = 0; b < m; b++) {
      const int held = gr_matcher_held_images (mt);
      int32_t *fwd = poisoned ((int64_t) held * sizes[b]);
      CHECK (gr_matcher_add (mt, desc + off[b] * k, sizes[b], k, 0.8f, fwd, NULL, NULL,
              err, sizeof err) == GR_OK, "%s", err);
      for (int p = 0; p < held; p++)
        for (int i = 0; i < sizes[b]; i++)
          diff += fwd[(int64_t) p * sizes[b] + i] != out[(int64_t) p * off[m] + off[b] + i];
      free (fwd);
    }
    CHECK (diff == 0, "reused matcher, k = %d: incremental differs in %lld entries", k,
        (long long) diff);
    gr_matcher_reset (mt);
    free (out);
    free (desc);
  }
  gr_matcher_free (mt);
  free (off);
}

static void
test_bad_input (void)
{
  GrMatcher *mt = new_cpu ();
  char err[256];
  float d[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  int64_t off[3] = { 0, 2, 4 };
  int32_t out[8];
  CHECK (gr_matcher_match_all (mt, d, 2, off, 2, 0.0f, out, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "ratio 0 accepted");
  CHECK (gr_matcher_match_all (mt, d, 2, off, 2, NAN, out, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "ratio NaN accepted");
  CHECK (gr_matcher_match_all (mt, d, 0, off, 2, 0.8f, out, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "k 0 accepted");
  int64_t off_bad[3] = { 0, 3, 2 };
  CHECK (gr_matcher_match_all (mt, d, 2, off_bad, 2, 0.8f, out, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "decreasing offsets accepted");
  const GrMatch *sp;
  int64_t spn;
  CHECK (gr_matcher_match_all_sparse (mt, d, 2, off, 2, 0.8f, NULL, &spn, NULL, err,
          sizeof err) == GR_ERR_INVALID, "sparse: no output pointer accepted");
  CHECK (gr_matcher_match_all_sparse (mt, d, 2, off_bad, 2, 0.8f, &sp, &spn, NULL, err,
          sizeof err) == GR_ERR_INVALID, "sparse: decreasing offsets accepted");
  CHECK (gr_matcher_match_all_sparse (mt, d, 2, off, 0, 0.8f, &sp, &spn, NULL, err,
          sizeof err) == GR_OK && spn == 0, "sparse: no images");
  d[5] = NAN;
  CHECK (gr_matcher_match_all (mt, d, 2, off, 2, 0.8f, out, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "NaN descriptor accepted");
  CHECK (gr_matcher_match_all_sparse (mt, d, 2, off, 2, 0.8f, &sp, &spn, NULL, err,
          sizeof err) == GR_ERR_INVALID, "sparse: NaN descriptor accepted");
  CHECK (strstr (err, "descriptor 2") != NULL, "error names the descriptor: %s", err);
  /* the same check on its own (what the NCCL root runs once on its batch) */
  char err2[256] = "";
  CHECK (gr_matcher_check_values (d, 4, 2, 0, err2, sizeof err2) == GR_ERR_INVALID &&
      strcmp (err, err2) == 0, "check_values: %s", err2);
  CHECK (gr_matcher_check_values (d, 2, 2, 0, err2, sizeof err2) == GR_OK,
      "check_values before the bad value: %s", err2);
  /* the device form is the CUDA backend's only (the pointer is never read) */
  CHECK (gr_matcher_match_rows_sparse_pairs_device (mt, d, 2, off, 2, 0, 2, NULL, 0.8f,
          &sp, &spn, NULL, err, sizeof err) == GR_ERR_INVALID, "device form on the CPU");
  d[5] = INFINITY;
  CHECK (gr_matcher_add (mt, d, 4, 2, 0.8f, NULL, NULL, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "inf descriptor accepted");
  d[5] = 5;
  /* k mismatch in the incremental form */
  CHECK (gr_matcher_add (mt, d, 4, 2, 0.8f, NULL, NULL, NULL, err, sizeof err) == GR_OK,
      "%s", err);
  int32_t bwd[4];
  CHECK (gr_matcher_add (mt, d, 2, 4, 0.8f, NULL, bwd, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "k mismatch accepted");
  CHECK (strstr (err, "mismatch") != NULL, "error says mismatch: %s", err);
  CHECK (gr_matcher_held_images (mt) == 1, "a refused image was held");
  /* an empty image is fine both ways */
  int32_t fwd[1];
  CHECK (gr_matcher_add (mt, NULL, 0, 2, 0.8f, fwd, bwd, NULL, err, sizeof err) == GR_OK,
      "%s", err);
  CHECK (bwd[0] == -1 && bwd[3] == -1, "against an empty image: %d %d", bwd[0], bwd[3]);
  CHECK (gr_matcher_held_images (mt) == 2 && gr_matcher_held_image_size (mt, 1) == 0,
      "held");
  gr_matcher_reset (mt);
  CHECK (gr_matcher_add (mt, d, 2, 4, 0.8f, NULL, NULL, NULL, err, sizeof err) == GR_OK,
      "k may change after reset: %s", err);
  /* m = 0 and n = 0 */
  int64_t off0[1] = { 0 };
  CHECK (gr_matcher_match_all (mt, NULL, 2, off0, 0, 0.8f, NULL, NULL, err, sizeof err) ==
      GR_OK, "m = 0: %s", err);
  int64_t off00[3] = { 0, 0, 0 };
  CHECK (gr_matcher_match_all (mt, NULL, 2, off00, 2, 0.8f, out, NULL, err, sizeof err) ==
      GR_OK, "n = 0: %s", err);
  /* d2 = 0: duplicated candidates never pass; distance-0 winner with distinct second */
  float e[4 * 2] = { 0, 0, 1, 1, 1, 1, 5, 5 };
  int64_t offe[3] = { 0, 1, 4 };
  int32_t oute[2 * 4];
  CHECK (gr_matcher_match_all (mt, e, 2, offe, 2, 0.8f, oute, NULL, err, sizeof err) ==
      GR_OK, "%s", err);
  CHECK (oute[1 * 4 + 0] == -1, "d1 = d2 must be rejected, got %d", oute[4]);
  CHECK (oute[0 * 4 + 1] == -1, "image 0 has one descriptor: -1, got %d", oute[1]);
  CHECK (oute[1 * 4 + 1] == -1 && oute[0] == -1, "own image must be -1");
  gr_matcher_free (mt);
  GrStatus st;
  GrMatcher *none = gr_matcher_new (GR_BACKEND_CUDA, -1, &st, err, sizeof err);
  if (gr_cuda_device_count () == 0)
    CHECK (!none && st == GR_ERR_NO_CUDA, "CUDA without a device must fail");
  gr_matcher_free (none);
  GrMatcher *a = gr_matcher_new (GR_BACKEND_AUTO, -1, &st, err, sizeof err);
  CHECK (a != NULL, "auto: %s", err);
  if (gr_cuda_device_count () == 0)
    CHECK (gr_matcher_backend (a) == GR_BACKEND_CPU, "auto without a device is the CPU");
  gr_matcher_free (a);
}

int
main (void)
{
  test_exact_distance ();
  test_random ();
  test_tricky ();
  test_force_exact_and_threads ();
  test_incremental ();
  test_real ();
  test_reuse_across_k ();
  test_bad_input ();
  return CHECK_DONE ();
}
