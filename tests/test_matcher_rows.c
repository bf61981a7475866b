/* The matcher's sparse form by ranges of images (gr_matcher_match_rows_sparse) and the
 * equal-work split (gr_matcher_split_rows), on the CPU backend: the lists of the
 * ranges of any split, concatenated, are gr_matcher_match_all_sparse's list entry for
 * entry (what the NCCL matcher's ranks rely on, kernels/matcher_nccl.h); bad ranges
 * are refused.  The CUDA backend is checked the same way in test_matcher_nccl_gpu.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matcher.h"
#include "matcher_batch_gen.h"
#include "test_check.h"

static void
check_split (const int64_t *off, int m, int parts)
{
  int *b = malloc (sizeof (int) * (parts + 1));
  gr_matcher_split_rows (off, m, parts, b);
  CHECK (b[0] == 0 && b[parts] == m, "split ends %d %d", b[0], b[parts]);
  const int64_t n = off[m];
  int64_t biggest_img = 0;
  for (int i = 0; i < m; i++)
    if (off[i + 1] - off[i] > biggest_img)
      biggest_img = off[i + 1] - off[i];
  for (int p = 0; p < parts; p++) {
    CHECK (b[p] <= b[p + 1], "split nondecreasing at %d", p);
    /* equal work within one image's size */
    const int64_t w = off[b[p + 1]] - off[b[p]];
    CHECK (w <= n / parts + biggest_img + 1, "part %d: %lld descriptors of %lld",
        p, (long long) w, (long long) n);
  }
  free (b);
}

int
main (void)
{
  const int ks[2] = { 32, 64 };
  for (int ki = 0; ki < 2; ki++) {
    const int k = ks[ki], m = 23;
    int64_t *off;
    float *d = mbg_batch (m, 60, 40, k, 7 + ki, &off);
    for (int slab = 0; slab < 2; slab++) {
      GrStatus st;
      char err[256] = "";
      GrMatcher *mt = gr_matcher_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
      if (slab)
        gr_matcher_set_debug (mt, GR_MATCHER_DEBUG_SMALL_SLAB);
      const GrMatch *all;
      int64_t na = 0;
      st = gr_matcher_match_all_sparse (mt, d, k, off, m, 0.8f, &all, &na, NULL, err,
          sizeof err);
      CHECK (st == GR_OK && na > 0, "full sparse: %s (%lld)", err, (long long) na);
      GrMatch *ref = malloc (sizeof (GrMatch) * (na + 1));
      memcpy (ref, all, sizeof (GrMatch) * na);
      for (int parts = 1; parts <= 5; parts++) {
        int b[6];
        gr_matcher_split_rows (off, m, parts, b);
        check_split (off, m, parts);
        int64_t got = 0;
        int same = 1;
        for (int p = 0; p < parts; p++) {
          const GrMatch *part;
          int64_t np = -1;
          st = gr_matcher_match_rows_sparse (mt, d, k, off, m, b[p], b[p + 1], 0.8f,
              &part, &np, NULL, err, sizeof err);
          CHECK (st == GR_OK, "rows [%d, %d): %s", b[p], b[p + 1], err);
          for (int64_t e = 0; e < np && same; e++) {
            same = got + e < na && memcmp (&part[e], &ref[got + e], sizeof (GrMatch)) == 0
                && part[e].image >= b[p] && part[e].image < b[p + 1];
          }
          got += np;
        }
        CHECK (same && got == na, "k %d, %d parts%s: %lld entries vs %lld, %s", k, parts,
            slab ? " (small slabs)" : "", (long long) got, (long long) na,
            same ? "same" : "DIFFERENT");
      }
      /* the empty range and bad ranges */
      const GrMatch *e;
      int64_t ne = -1;
      st = gr_matcher_match_rows_sparse (mt, d, k, off, m, 5, 5, 0.8f, &e, &ne, NULL, err,
          sizeof err);
      CHECK (st == GR_OK && ne == 0, "empty range");
      CHECK (gr_matcher_match_rows_sparse (mt, d, k, off, m, 4, 3, 0.8f, &e, &ne, NULL,
              err, sizeof err) == GR_ERR_INVALID, "reversed range refused");
      CHECK (gr_matcher_match_rows_sparse (mt, d, k, off, m, 0, m + 1, 0.8f, &e, &ne,
              NULL, err, sizeof err) == GR_ERR_INVALID, "range past m refused");
      CHECK (gr_matcher_match_rows_sparse (mt, d, k, off, m, -1, 2, 0.8f, &e, &ne, NULL,
              err, sizeof err) == GR_ERR_INVALID, "negative range refused");
      printf ("k %d%s: %lld entries, splits 1..5 identical\n", k,
          slab ? " (small slabs)" : "", (long long) na);
      free (ref);
      gr_matcher_free (mt);
    }
    free (d);
    free (off);
  }
  /* a split of a batch with more parts than images */
  int64_t off3[4] = { 0, 10, 10, 30 };
  int b[9];
  gr_matcher_split_rows (off3, 3, 8, b);
  CHECK (b[0] == 0 && b[8] == 3, "more parts than images");
  for (int p = 0; p < 8; p++)
    CHECK (b[p] <= b[p + 1], "nondecreasing");
  return CHECK_DONE ();
}
