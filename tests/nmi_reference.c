/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "nmi_reference.h"

#include <math.h>
#include <stdlib.h>

static double
entropy (const double *h, size_t bins, double n)
{
  double e = 0.0;
  for (size_t i = 0; i < bins; i++)
    if (h[i] > 0.0) {
      const double p = h[i] / n;
      e -= p * log (p);
    }
  return e;
}

double
ref_nmi_at (const GrImage8 *control, const GrImage8 *templ, int dx, int dy, long *n_out)
{
  double *joint = calloc (65536, sizeof (double));
  double ha[256] = { 0 }, hb[256] = { 0 };
  long n = 0;
  for (int y = 0; y < templ->height; y++)
    for (int x = 0; x < templ->width; x++) {
      if (templ->mask && !templ->mask[y * templ->mask_stride + x])
        continue;
      const int cx = dx + x, cy = dy + y;
      if (control->mask && !control->mask[cy * control->mask_stride + cx])
        continue;
      const int a = templ->pix[y * templ->pix_stride + x];
      const int b = control->pix[cy * control->pix_stride + cx];
      joint[a * 256 + b] += 1.0;
      ha[a] += 1.0;
      hb[b] += 1.0;
      n++;
    }
  if (n_out)
    *n_out = n;
  double r;
  if (n == 0) {
    r = NAN;
  } else {
    const double hab = entropy (joint, 65536, (double) n);
    r = hab > 0.0 ? (entropy (ha, 256, (double) n) + entropy (hb, 256, (double) n)) / hab : 1.0;
  }
  free (joint);
  return r;
}

uint32_t
ref_rand (uint64_t *s)
{
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *s = x;
  return (uint32_t) (x >> 16);
}

double
ref_rel_diff (double a, double b)
{
  if (isnan (a) && isnan (b))
    return 0.0;
  if (isnan (a) || isnan (b))
    return INFINITY;
  const double d = fabs (b) > 1e-300 ? fabs (b) : 1e-300;
  return fabs (a - b) / d;
}
