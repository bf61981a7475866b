/* Test helpers of the matcher tests: a float64 brute-force reference of the m x n
 * correspondence matrix (written independently of kernels/matcher.c: plain double
 * sums), its near-tie classification, and descriptor generators.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_MATCHER_REFERENCE_H
#define GR_MATCHER_REFERENCE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* relative gap under which two float64 distances count as a near-tie */
#define REF_TIE_TOL 1e-10

typedef struct {
  int32_t idx;        /* expected entry */
  int near_tie;       /* 1: the expected entry is not decidable at REF_TIE_TOL */
  double d1, d2;      /* the two smallest squared distances */
} RefEntry;

static inline double
ref_dist2 (const float *a, const float *b, int k)
{
  double s = 0.0;
  for (int t = 0; t < k; t++) {
    const double d = (double) a[t] - (double) b[t];
    s += d * d;
  }
  return s;
}

/* The expected entry for query q against the n_i rows of `img`. */
static inline RefEntry
ref_entry (const float *q, const float *img, int64_t ni, int k, double ratio)
{
  RefEntry e = { -1, 0, INFINITY, INFINITY };
  if (ni < 2)
    return e;
  int64_t w = -1;
  for (int64_t c = 0; c < ni; c++) {
    const double d = ref_dist2 (q, img + c * k, k);
    if (d < e.d1) {
      e.d2 = e.d1;
      e.d1 = d;
      w = c;
    } else if (d < e.d2) {
      e.d2 = d;
    }
  }
  const double rr = ratio * ratio;
  const int accept = e.d1 < rr * e.d2;
  e.idx = accept ? (int32_t) w : -1;
  const double scale = e.d2 > 0 ? e.d2 : 1e-300;
  /* the ratio test cannot be decided */
  if (fabs (e.d1 - rr * e.d2) <= REF_TIE_TOL * scale)
    e.near_tie = 1;
  /* the winner cannot be decided and matters (accepted); exact duplicates of the
   * winner's distance are not ties: both sides see bit-identical values then only
   * when the candidates are identical, which the caller avoids or accepts */
  if (accept && e.d2 - e.d1 <= REF_TIE_TOL * scale && e.d2 != e.d1)
    e.near_tie = 1;
  return e;
}

/* Compares a matcher output (m x n) with the reference.  Returns the number of
 * mismatches outside near-ties; *ties gets the number of near-ties (whatever the
 * output there), *accepted the number of expected matches. */
static inline int64_t
ref_compare (const float *desc, int k, const int64_t *off, int m, double ratio,
    const int32_t *out, int64_t *ties, int64_t *accepted, int verbose)
{
  const int64_t n = off[m];
  int64_t bad = 0, nt = 0, acc = 0;
  for (int i = 0; i < m; i++) {
    const int64_t ni = off[i + 1] - off[i];
    for (int64_t j = 0; j < n; j++) {
      const int32_t got = out[(int64_t) i * n + j];
      RefEntry e = { -1, 0, 0, 0 };
      if (!(j >= off[i] && j < off[i + 1]))
        e = ref_entry (desc + j * k, desc + off[i] * k, ni, k, ratio);
      if (e.near_tie) {
        nt++;
        continue;
      }
      acc += e.idx >= 0;
      if (got != e.idx) {
        if (verbose && bad < 10)
          fprintf (stderr, "  mismatch image %d descriptor %lld: got %d, want %d "
              "(d1 %.17g d2 %.17g)\n", i, (long long) j, got, e.idx, e.d1, e.d2);
        bad++;
      }
    }
  }
  if (ties)
    *ties = nt;
  if (accepted)
    *accepted = acc;
  return bad;
}

/* Compares a sparse output (kept entries: query, image, match, d1, d2 with the layout
 * of matcher.h's GrMatch, passed field by field through `at`) with the dense output
 * of the same inputs: the same entries in row-major order; and its distances with the
 * float64 reference (relative 1e-6: float rounding of the square roots).  Returns the
 * number of differences. */
typedef struct {
  int64_t query;
  int32_t image, match;
  float d1, d2;
} RefSparse;

static inline int64_t
ref_compare_sparse (const float *desc, int k, const int64_t *off, int m,
    const int32_t *dense, const RefSparse *sp, int64_t count, int verbose)
{
  const int64_t n = off[m];
  int64_t bad = 0, e = 0;
  for (int i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      const int32_t want = dense[(int64_t) i * n + j];
      if (want < 0)
        continue;
      if (e >= count || sp[e].image != i || sp[e].query != j || sp[e].match != want) {
        if (verbose && bad < 10)
          fprintf (stderr, "  sparse entry %lld: want (image %d, query %lld, match %d)\n",
              (long long) e, i, (long long) j, want);
        bad++;
        if (e < count && (sp[e].image < i || (sp[e].image == i && sp[e].query < j)))
          j--, e++;                     /* an extra entry: skip it, retry j */
        continue;
      }
      const int64_t ni = off[i + 1] - off[i];
      const RefEntry r = ref_entry (desc + j * k, desc + off[i] * k, ni, k, 0.5);
      const double w1 = sqrt (r.d1), w2 = sqrt (r.d2);
      if (fabs (sp[e].d1 - w1) > 1e-6 * w1 + 1e-30 ||
          fabs (sp[e].d2 - w2) > 1e-6 * w2 + 1e-30) {
        if (verbose && bad < 10)
          fprintf (stderr, "  sparse entry %lld: d1 %.9g d2 %.9g, float64 %.9g %.9g\n",
              (long long) e, sp[e].d1, sp[e].d2, w1, w2);
        bad++;
      }
      e++;
    }
  return bad + (count - e);
}

/* ---- generators (xorshift; deterministic) */

static inline uint64_t
mref_rand (uint64_t *s)
{
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *s = x;
  return x;
}

static inline double
mref_uniform (uint64_t *s)
{
  return (mref_rand (s) >> 11) * (1.0 / 9007199254740992.0);
}

static inline double
mref_gauss (uint64_t *s)
{
  double u = mref_uniform (s), v = mref_uniform (s);
  if (u < 1e-300)
    u = 1e-300;
  return sqrt (-2.0 * log (u)) * cos (6.283185307179586 * v);
}

static inline void
mref_normalize (float *d, int k)
{
  double s = 0;
  for (int t = 0; t < k; t++)
    s += (double) d[t] * d[t];
  if (s > 0)
    for (int t = 0; t < k; t++)
      d[t] = (float) (d[t] / sqrt (s));
}

/* Descriptors of m images where image i > 0 re-observes a share of image i-1's
 * features (perturbed by noise) in a shuffled order, so that many pairs pass the
 * ratio test; the rest are fresh.  unit: normalize every row. */
static inline void
mref_survey (float *desc, const int64_t *off, int m, int k, double noise, double share,
    int unit, uint64_t *rng)
{
  for (int i = 0; i < m; i++) {
    const int64_t ni = off[i + 1] - off[i];
    const int64_t pn = i > 0 ? off[i] - off[i - 1] : 0;
    for (int64_t c = 0; c < ni; c++) {
      float *d = desc + (off[i] + c) * k;
      if (pn > 0 && mref_uniform (rng) < share) {
        const float *src = desc + (off[i - 1] + (int64_t) (mref_rand (rng) % pn)) * k;
        for (int t = 0; t < k; t++)
          d[t] = (float) (src[t] + noise * mref_gauss (rng));
      } else {
        for (int t = 0; t < k; t++)
          d[t] = (float) mref_gauss (rng);
      }
      if (unit)
        mref_normalize (d, k);
    }
  }
}

#endif
