/* A survey-like batch for the multi-GPU matcher tests and benchmark (issue 16): images
 * of varied sizes (some empty, some of 1 descriptor), descriptors drawn around a pool
 * of shared "landmarks" with noise, so that images share matches as overlapping
 * frames do and the ratio test keeps some and rejects others.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_MATCHER_BATCH_GEN_H
#define GR_MATCHER_BATCH_GEN_H

#include <stdint.h>
#include <stdlib.h>

static inline uint64_t
mbg_next (uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static inline float
mbg_unit (uint64_t *s)          /* [-1, 1) */
{
  return (float) ((mbg_next (s) >> 40) * (2.0 / 16777216.0) - 1.0);
}

/* m images of about ni descriptors (ni_jitter: sizes ni - jitter .. ni + jitter, with
 * images 1 and 2 of 0 and 1 descriptors when m > 2), length k; *off (m + 1) and the
 * returned descriptors are malloc'ed. */
static inline float *
mbg_batch (int m, int ni, int jitter, int k, uint64_t seed, int64_t **off_out)
{
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  int64_t *off = malloc (sizeof (int64_t) * (size_t) (m + 1));
  off[0] = 0;
  for (int i = 0; i < m; i++) {
    int n = ni + (jitter ? (int) (mbg_next (&s) % (2 * jitter + 1)) - jitter : 0);
    if (m > 2 && i == 1)
      n = 0;
    if (m > 2 && i == 2)
      n = 1;
    off[i + 1] = off[i] + (n > 0 ? n : 0);
  }
  const int64_t n = off[m];
  const int pool = ni * 4 > 64 ? ni * 4 : 64;
  float *land = malloc (sizeof (float) * (size_t) pool * k);
  for (int64_t t = 0; t < (int64_t) pool * k; t++)
    land[t] = mbg_unit (&s);
  float *d = malloc (sizeof (float) * (size_t) (n > 0 ? n : 1) * k);
  for (int64_t j = 0; j < n; j++) {
    const int l = (int) (mbg_next (&s) % (uint64_t) pool);
    const float noise = (mbg_next (&s) & 1) ? 0.05f : 0.4f;
    for (int t = 0; t < k; t++)
      d[j * k + t] = land[(int64_t) l * k + t] + noise * mbg_unit (&s);
  }
  free (land);
  *off_out = off;
  return d;
}
#endif
