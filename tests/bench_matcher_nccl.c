/* The survey-sized batch match of issue 16 on one GPU and on every GPU of the host
 * (kernels/matcher_nccl.h): m images of ni descriptors (default 4000 x 500, k = 64),
 * the sparse output.  Prints the single-GPU matcher's time, the NCCL matcher's with
 * 1 rank and with R ranks (threads, one per device; GEOREG_NCCL_RANKS limits R), the
 * speed-up, and whether every list is identical to the single-GPU one.
 * GEOREG_BENCH_PAIRS=1: pair pruning by footprint overlap (the frames along flight
 * lines of 25, tests/matcher_pairs_gen.h; margin 0) in every run, the single-GPU
 * pruned list being the reference: a day's survey (m = 10000) matched as a survey is.
 * Usage: bench_matcher_nccl [m [ni [k [reps]]]].  Exit 1 when a list differs.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "matcher_batch_gen.h"
#include "matcher_pairs_gen.h"
#include "nccl_ranks.h"

int
main (int argc, char **argv)
{
  const int m = argc > 1 ? atoi (argv[1]) : 4000;
  const int ni = argc > 2 ? atoi (argv[2]) : 500;
  const int k = argc > 3 ? atoi (argv[3]) : 64;
  const int reps = argc > 4 ? atoi (argv[4]) : 2;
  const int ndev = gr_cuda_device_count ();
  if (ndev <= 0) {
    printf ("SKIP: no usable CUDA device\n");
    return 77;
  }
  int R = ndev;
  const char *renv = getenv ("GEOREG_NCCL_RANKS");
  if (renv && atoi (renv) > 0 && atoi (renv) < R)
    R = atoi (renv);
  int64_t *off;
  float *d = mbg_batch (m, ni, 0, k, 2026, &off);
  printf ("batch: m %d images x %d descriptors (n %lld), k %d, ratio 0.8, sparse "
      "output; %d device(s), best of %d\n", m, ni, (long long) off[m], k, ndev, reps);
  char err[256] = "";
  const char *penv = getenv ("GEOREG_BENCH_PAIRS");
  GrMatcherPairs pairs = { 0 };
  const GrMatcherPairs *P = NULL;
  if (penv && atoi (penv) == 1) {
    double *fp = survey_footprints (m, 25);
    if (gr_matcher_pairs_from_footprints (fp, m, 0.0, &pairs, err, sizeof err) != GR_OK) {
      fprintf (stderr, "footprints: %s\n", err);
      return 1;
    }
    free (fp);
    P = &pairs;
    printf ("pair pruning by footprint overlap: %lld of %lld ordered pairs listed\n",
        (long long) pairs.start[m], (long long) m * (m - 1));
  }
  GrStatus st;
  GrMatcher *mt = gr_matcher_new (GR_BACKEND_CUDA, 0, &st, err, sizeof err);
  if (!mt) {
    fprintf (stderr, "CUDA matcher: %s\n", err);
    return 1;
  }
  const GrMatch *l;
  int64_t n1 = 0;
  double best1 = 1e300;
  for (int r = 0; r < reps; r++) {
    GrMatchStats s;
    st = gr_matcher_match_rows_sparse_pairs (mt, d, k, off, m, 0, m, P, 0.8f, &l, &n1,
        &s, err, sizeof err);
    if (st != GR_OK) {
      fprintf (stderr, "single GPU: %s\n", err);
      return 1;
    }
    if (s.elapsed_ms < best1)
      best1 = s.elapsed_ms;
  }
  GrMatch *ref = malloc (sizeof (GrMatch) * (size_t) (n1 + 1));
  memcpy (ref, l, sizeof (GrMatch) * (size_t) n1);
  gr_matcher_free (mt);
  int fail = 0;
  printf ("%-28s %10s %10s %12s %9s %s\n", "run", "wall ms", "match ms", "entries",
      "speed-up", "list");
  printf ("%-28s %10.1f %10s %12lld %9s %s\n", "single GPU (gr_matcher)", best1, "-",
      (long long) n1, "1.00", "reference");
  const int runs[2] = { 1, R };
  double t1rank = 0;
  for (int ri = 0; ri < (R > 1 ? 2 : 1); ri++) {
    const int nr = runs[ri];
    NcclRank *ranks = calloc ((size_t) nr, sizeof *ranks);
    nccl_ranks_run_pairs (nr, 0, reps, d, k, off, m, P, 0.8f, ranks);
    int ok = 1;
    double worst_match = 0;
    for (int r = 0; r < nr; r++) {
      if (ranks[r].st != GR_OK) {
        fprintf (stderr, "%d ranks, rank %d: %s\n", nr, r, ranks[r].err);
        ok = 0;
      }
      if (ranks[r].stats.match_ms > worst_match)
        worst_match = ranks[r].stats.match_ms;
    }
    const int same = ok && ranks[0].count == n1 &&
        memcmp (ranks[0].list, ref, sizeof (GrMatch) * (size_t) n1) == 0;
    fail |= !same;
    if (nr == 1)
      t1rank = ranks[0].best_ms;
    char name[64];
    snprintf (name, sizeof name, "NCCL, %d rank(s) / GPU(s)", nr);
    printf ("%-28s %10.1f %10.1f %12lld %9.2f %s\n", name, ranks[0].best_ms, worst_match,
        (long long) ranks[0].count, best1 / ranks[0].best_ms, same ? "identical" :
        "DIFFERENT");
    if (nr > 1) {
      for (int r = 0; r < nr; r++)
        printf ("  rank %d: images [%d, %d), %lld entries, broadcast %.1f ms, match "
            "%.1f ms, gather %.1f ms\n", r, ranks[r].stats.row0, ranks[r].stats.row1,
            (long long) ranks[r].stats.local_count, ranks[r].stats.bcast_ms,
            ranks[r].stats.match_ms, ranks[r].stats.gather_ms);
      printf ("speed-up of %d GPUs over the NCCL matcher on 1: %.2fx\n", nr,
          t1rank / ranks[0].best_ms);
    }
    for (int r = 0; r < nr; r++)
      free (ranks[r].list);
    free (ranks);
  }
  free (ref);
  gr_matcher_pairs_clear (&pairs);
  free (d);
  free (off);
  return fail;
}
