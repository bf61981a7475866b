/* A survey-like batch for the multi-GPU matcher tests and benchmark (issue 16): images
 * of varied sizes (some empty, some of 1 descriptor), descriptors drawn around
 * "landmarks" with noise.  As along a survey's flight lines, image i sees the landmarks
 * of a window that slides by half an image's worth a frame, so it shares matches with
 * about four neighbours and none with images far away (a pool shared by every image
 * made every query match in every image: a benchmark of the output's size, not of the
 * matching); the ratio test keeps some and rejects others.
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
  /* landmark l's vector is a function of (seed, l) alone: no pool in memory */
  const int64_t window = ni * 2 > 64 ? ni * 2 : 64, stride = ni / 2 > 1 ? ni / 2 : 1;
  float *d = malloc (sizeof (float) * (size_t) (n > 0 ? n : 1) * k);
  for (int i = 0; i < m; i++) {
    for (int64_t j = off[i]; j < off[i + 1]; j++) {
      const int64_t l = (int64_t) i * stride + (int64_t) (mbg_next (&s) % (uint64_t) window);
      uint64_t ls = (seed ^ ((uint64_t) l * 0xD1B54A32D192ED03ull)) | 1;
      const float noise = (mbg_next (&s) & 1) ? 0.05f : 0.4f;
      for (int t = 0; t < k; t++)
        d[j * k + t] = mbg_unit (&ls) + noise * mbg_unit (&s);
    }
  }
  *off_out = off;
  return d;
}
#endif
