/* Pair lists for the pair-pruning tests (test_matcher_pairs, test_matcher_pairs_gpu,
 * test_matcher_nccl_gpu): random lists and the restriction of a full sparse list.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_MATCHER_PAIRS_GEN_H
#define GR_MATCHER_PAIRS_GEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "matcher.h"
#include "matcher_batch_gen.h"

/* a random pair list: each image lists about `dens` of the others, itself sometimes */
static inline GrMatcherPairs
random_pairs (int m, double dens, uint64_t seed)
{
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  GrMatcherPairs P = { m, calloc ((size_t) m + 1, sizeof (int64_t)),
    malloc (sizeof (int32_t) * (size_t) m * m + 4) };
  for (int i = 0; i < m; i++) {
    P.start[i + 1] = P.start[i];
    for (int b = 0; b < m; b++)
      if ((mbg_next (&s) >> 11) * (1.0 / 9007199254740992.0) < dens)
        P.images[P.start[i + 1]++] = b;
  }
  return P;
}

static inline bool
listed (const GrMatcherPairs *P, int i, int b)
{
  for (int64_t x = P->start[i]; x < P->start[i + 1]; x++)
    if (P->images[x] == b)
      return true;
  return false;
}

static inline int
image_of (const int64_t *off, int m, int64_t q)
{
  int lo = 0, hi = m;           /* the image whose range holds q */
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (off[mid] <= q)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* the entries of the full list `ref` (nref) whose pair P lists, into out (nref room);
 * returns their count */
static inline int64_t
restrict_to_pairs (const GrMatch *ref, int64_t nref, const int64_t *off, int m,
    const GrMatcherPairs *P, GrMatch *out)
{
  int64_t c = 0;
  for (int64_t e = 0; e < nref; e++)
    if (listed (P, ref[e].image, image_of (off, m, ref[e].query)))
      out[c++] = ref[e];
  return c;
}

/* footprints of a survey: m frames along flight lines of `per_line` frames, 80 %
 * forward overlap (a frame overlaps the 4 before and after it on its line, as
 * mbg_batch's images share landmarks with their 4 neighbours), 30 % side overlap,
 * headings alternating */
static inline double *
survey_footprints (int m, int per_line)
{
  double *fp = malloc (sizeof (double) * 8 * (size_t) m);
  const double w = 100, h = 75;
  for (int i = 0; i < m; i++) {
    const int line = i / per_line, pos = i % per_line;
    const double cx = line * w * 0.7;
    const double cy = (line & 1 ? per_line - 1 - pos : pos) * h * 0.2;
    const double u[4] = { -0.5, 0.5, 0.5, -0.5 }, v[4] = { -0.5, -0.5, 0.5, 0.5 };
    for (int c = 0; c < 4; c++) {
      fp[8 * i + 2 * c] = cx + u[c] * w;
      fp[8 * i + 2 * c + 1] = cy + v[c] * h;
    }
  }
  return fp;
}

#endif
