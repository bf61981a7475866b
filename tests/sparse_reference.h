/* Test helpers for sparse NMI: a float64 reference written the plainest way (sorted
 * pairs, -sum p ln p) sharing nothing with the kernel, and synthetic controls.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_TEST_SPARSE_REFERENCE_H
#define GR_TEST_SPARSE_REFERENCE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "nmi_reference.h"

typedef struct {
  uint8_t *pix, *mask;
  int w, h;
} Ctl;

static int
cmp_int (const void *a, const void *b)
{
  return *(const int *) a - *(const int *) b;
}

static double
ent_sorted (const int *v, int n)
{
  double e = 0.0;
  int i = 0;
  while (i < n) {
    int j = i;
    while (j < n && v[j] == v[i])
      j++;
    const double p = (double) (j - i) / n;
    e -= p * log (p);
    i = j;
  }
  return e;
}

/* NMI of template (T x T, mask may be NULL) with its centre on control pixel
 * (cx, cy); NAN when no pixel is jointly valid */
static double
ref_sparse (const Ctl *c, const uint8_t *tpl, const uint8_t *tm, int T, int cx, int cy,
    int *n_out)
{
  int ja[225], aa[225], bb[225];
  int n = 0;
  for (int j = 0; j < T; j++)
    for (int i = 0; i < T; i++) {
      if (tm && !tm[j * T + i])
        continue;
      const int x = cx - T / 2 + i, y = cy - T / 2 + j;
      if (x < 0 || y < 0 || x >= c->w || y >= c->h)
        continue;
      if (c->mask && !c->mask[y * c->w + x])
        continue;
      const int a = tpl[j * T + i], b = c->pix[y * c->w + x];
      ja[n] = a * 256 + b;
      aa[n] = a;
      bb[n] = b;
      n++;
    }
  *n_out = n;
  if (n == 0)
    return NAN;
  qsort (ja, n, sizeof (int), cmp_int);
  qsort (aa, n, sizeof (int), cmp_int);
  qsort (bb, n, sizeof (int), cmp_int);
  const double hab = ent_sorted (ja, n);
  return hab > 0.0 ? (ent_sorted (aa, n) + ent_sorted (bb, n)) / hab : 1.0;
}

static void
ctl_make (Ctl *c, int w, int h, int kind, bool with_mask, uint64_t *rng)
{
  c->w = w;
  c->h = h;
  c->pix = malloc ((size_t) w * h);
  c->mask = with_mask ? malloc ((size_t) w * h) : NULL;
  /* coarse random grid, bilinear, plus noise */
  const int cell = 9, gw = w / cell + 2, gh = h / cell + 2;
  float *g = malloc (sizeof (float) * gw * gh);
  for (int i = 0; i < gw * gh; i++)
    g[i] = (ref_rand (rng) & 0xFFFF) / 65535.0f;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      const float fx = (float) x / cell, fy = (float) y / cell;
      const int ix = (int) fx, iy = (int) fy;
      const float ax = fx - ix, ay = fy - iy;
      const float v0 = g[iy * gw + ix] * (1 - ax) + g[iy * gw + ix + 1] * ax;
      const float v1 = g[(iy + 1) * gw + ix] * (1 - ax) + g[(iy + 1) * gw + ix + 1] * ax;
      float v = v0 * (1 - ay) + v1 * ay;
      int q;
      switch (kind) {
        case 0:                /* uniform random */
          q = ref_rand (rng) & 255;
          break;
        case 1:                /* terrain: smooth + noise */
          q = (int) (v * 230 + (ref_rand (rng) % 25));
          break;
        default:               /* posterized to 6 levels: large groups */
          q = (int) (v * 5.999f) * 40;
          break;
      }
      c->pix[y * w + x] = (uint8_t) (q > 255 ? 255 : q);
      if (c->mask)
        c->mask[y * w + x] = (uint8_t) (((x / 7 + y / 5) % 9 != 0) && (ref_rand (rng) % 23 != 0));
    }
  free (g);
}

static void
ctl_free (Ctl *c)
{
  free (c->pix);
  free (c->mask);
}

#endif
