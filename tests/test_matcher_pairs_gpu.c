/* Pair pruning (matcher.h, issue 16) on the CUDA backend: the pruned sparse form on
 * CUDA equals the CPU's entry for entry, and equals CUDA's full list restricted to the
 * pairs, for random (asymmetric) lists and footprint lists, over ranges of a split by
 * the pruned work, with the debug paths (runs of 16 queries: many launches per image;
 * slabs of 3 images; every pair settled exactly), k = 32, 64, 128.  Then a survey-like
 * batch (GEOREG_PAIRS_M images, default 1000, of 500 descriptors, k = 64) with a
 * footprint list: CUDA pruned == CUDA full restricted to the list, and the two
 * timings printed (the CPU would take minutes there).  GEOREG_TEST_QUICK=1 (the
 * compute-sanitizer runs of tools/gpu.sh): k = 64 only, two debug modes, no survey.
 * Exit 0 pass, 1 fail, 77 skip (no usable CUDA device).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matcher.h"
#include "matcher_batch_gen.h"
#include "matcher_pairs_gen.h"
#include "test_check.h"

static GrMatcher *
new_matcher (GrBackend b, unsigned debug)
{
  GrStatus st;
  char err[256] = "";
  GrMatcher *mt = gr_matcher_new (b, -1, &st, err, sizeof err);
  CHECK (mt && st == GR_OK, "gr_matcher_new (%s): %s", gr_backend_name (b), err);
  if (mt)
    gr_matcher_set_debug (mt, debug);
  return mt;
}

/* a copy of the (pruned) sparse list of rows [row0, row1) */
static GrMatch *
sparse (GrMatcher *mt, const float *d, int k, const int64_t *off, int m, int row0,
    int row1, const GrMatcherPairs *P, int64_t *n, GrMatchStats *st)
{
  char err[256] = "";
  const GrMatch *x = NULL;
  *n = 0;
  GrStatus s = gr_matcher_match_rows_sparse_pairs (mt, d, k, off, m, row0, row1, P, 0.8f,
      &x, n, st, err, sizeof err);
  CHECK (s == GR_OK, "sparse (%s): %s", gr_backend_name (gr_matcher_backend (mt)), err);
  GrMatch *c = malloc (sizeof (GrMatch) * (size_t) (*n + 1));
  if (*n > 0)
    memcpy (c, x, sizeof (GrMatch) * (size_t) *n);
  return c;
}

static void
compare (const char *what, const GrMatch *a, int64_t na, const GrMatch *b, int64_t nb)
{
  CHECK (na == nb && memcmp (a, b, sizeof (GrMatch) * (size_t) na) == 0,
      "%s: %lld vs %lld entries, %s", what, (long long) na, (long long) nb,
      na == nb ? "DIFFERENT" : "counts differ");
}

static bool quick;

static void
small_cases (void)
{
  const int ks[3] = { 32, 64, 128 };
  const unsigned dbg[4] = { 0, GR_MATCHER_DEBUG_SMALL_LIST, GR_MATCHER_DEBUG_SMALL_SLAB,
    GR_MATCHER_DEBUG_FORCE_EXACT };
  for (int ki = quick ? 1 : 0; ki < (quick ? 2 : 3); ki++) {
    const int k = ks[ki], m = 24;
    int64_t *off;
    float *d = mbg_batch (m, 70, 50, k, 21 + ki, &off);
    double *fp = survey_footprints (m, 6);
    GrMatcherPairs lists[3];
    lists[0] = random_pairs (m, 0.3, 5 + ki);
    lists[1] = random_pairs (m, 0.8, 6 + ki);
    char err[256] = "";
    CHECK (gr_matcher_pairs_from_footprints (fp, m, 5.0, &lists[2], err, sizeof err) ==
        GR_OK, "footprints: %s", err);
    GrMatcher *cpu = new_matcher (GR_BACKEND_CPU, 0);
    int64_t nfull;
    GrMatch *full = sparse (cpu, d, k, off, m, 0, m, NULL, &nfull, NULL);
    for (int di = 0; di < (quick ? 2 : 4); di++) {
      GrMatcher *gpu = new_matcher (GR_BACKEND_CUDA, dbg[di]);
      if (!gpu)
        break;
      for (int li = 0; li < 3; li++) {
        const GrMatcherPairs *P = &lists[li];
        char what[128];
        snprintf (what, sizeof what, "k %d, debug %u, list %d", k, dbg[di], li);
        int64_t nc, ng;
        GrMatch *c = sparse (cpu, d, k, off, m, 0, m, P, &nc, NULL);
        GrMatch *g = sparse (gpu, d, k, off, m, 0, m, P, &ng, NULL);
        compare (what, g, ng, c, nc);
        GrMatch *want = malloc (sizeof (GrMatch) * (size_t) (nfull + 1));
        const int64_t nw = restrict_to_pairs (full, nfull, off, m, P, want);
        compare (what, g, ng, want, nw);
        /* the ranges of a 3-way split by the pruned work, concatenated */
        int b[4];
        gr_matcher_split_rows_pairs (off, m, P, 3, b);
        int64_t got = 0;
        bool same = true;
        for (int p = 0; p < 3; p++) {
          int64_t np;
          GrMatch *part = sparse (gpu, d, k, off, m, b[p], b[p + 1], P, &np, NULL);
          same = same && got + np <= nw &&
              memcmp (part, want + got, sizeof (GrMatch) * (size_t) np) == 0;
          got += np;
          free (part);
        }
        CHECK (same && got == nw, "%s: the split's ranges concatenated", what);
        if (di == 0)
          printf ("%s: %lld entries identical (CPU, CUDA, CUDA full restricted, split)\n",
              what, (long long) ng);
        free (c);
        free (g);
        free (want);
      }
      gr_matcher_free (gpu);
    }
    for (int li = 0; li < 3; li++)
      gr_matcher_pairs_clear (&lists[li]);
    free (full);
    gr_matcher_free (cpu);
    free (fp);
    free (d);
    free (off);
  }
}

/* survey-sized: the pruned form against the full one on CUDA, and their times */
static void
survey (void)
{
  const char *e = getenv ("GEOREG_PAIRS_M");
  const int m = e ? atoi (e) : 1000, ni = 500, k = 64;
  if (m < 2 || quick)
    return;
  int64_t *off;
  float *d = mbg_batch (m, ni, 0, k, 77, &off);
  double *fp = survey_footprints (m, 25);
  GrMatcherPairs P;
  char err[256] = "";
  CHECK (gr_matcher_pairs_from_footprints (fp, m, 0.0, &P, err, sizeof err) == GR_OK,
      "footprints: %s", err);
  GrMatcher *gpu = new_matcher (GR_BACKEND_CUDA, 0);
  if (!gpu)
    return;
  int64_t nf, np;
  GrMatchStats sf, sp;
  GrMatch *full = sparse (gpu, d, k, off, m, 0, m, NULL, &nf, &sf);
  GrMatch *pr = sparse (gpu, d, k, off, m, 0, m, &P, &np, &sp);
  GrMatch *want = malloc (sizeof (GrMatch) * (size_t) (nf + 1));
  const int64_t nw = restrict_to_pairs (full, nf, off, m, &P, want);
  compare ("survey", pr, np, want, nw);
  printf ("survey m = %d x %d, k = %d: %lld listed pairs of %lld; full %.1f ms (%lld "
      "entries), pruned %.1f ms (%lld entries, identical to the full list's listed "
      "ones: %s)\n", m, ni, k, (long long) P.start[m], (long long) m * (m - 1),
      sf.elapsed_ms, (long long) nf, sp.elapsed_ms, (long long) np,
      np == nw ? "yes" : "NO");
  gr_matcher_pairs_clear (&P);
  gr_matcher_free (gpu);
  free (full);
  free (pr);
  free (want);
  free (fp);
  free (d);
  free (off);
}

int
main (void)
{
  if (gr_cuda_device_count () <= 0) {
    printf ("SKIP: no usable CUDA device\n");
    return 77;
  }
  const char *q = getenv ("GEOREG_TEST_QUICK");
  quick = q && atoi (q) == 1;
  small_cases ();
  survey ();
  return CHECK_DONE ();
}
