/* Peak analysis of score maps.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "peak.h"

#include <math.h>
#include <stdlib.h>

/* Vertex of the parabola through (-1, l), (0, c), (1, r), in [-0.5, 0.5]. */
static double
parabola_offset (double l, double c, double r)
{
  const double den = l - 2.0 * c + r;
  if (!isfinite (l) || !isfinite (r) || !(den < 0.0))
    return 0.0;
  double d = 0.5 * (l - r) / den;
  return d < -0.5 ? -0.5 : d > 0.5 ? 0.5 : d;
}

static bool
is_local_max (const double *m, int w, int h, int x, int y)
{
  const double v = m[(size_t) y * w + x];
  for (int j = -1; j <= 1; j++)
    for (int i = -1; i <= 1; i++) {
      const int xx = x + i, yy = y + j;
      if ((i || j) && xx >= 0 && yy >= 0 && xx < w && yy < h) {
        const double u = m[(size_t) yy * w + xx];
        if (u > v)
          return false;
      }
    }
  return true;
}

void
gr_find_peak (const double *map, int w, int h, int exclusion_radius,
    double floor_value, GrPeak *out)
{
  GrPeak p = { .ix = -1, .iy = -1, .x = NAN, .y = NAN, .score = NAN, .second = NAN,
    .ratio = NAN, .flags = 0 };
  const size_t n = (size_t) w * h;
  size_t best = n;
  for (size_t i = 0; i < n; i++)
    if (isfinite (map[i]) && (best == n || map[i] > map[best]))
      best = i;
  if (best == n) {
    p.flags |= GR_PEAK_NO_SCORE | GR_PEAK_NO_SECOND;
    *out = p;
    return;
  }
  p.ix = (int) (best % w);
  p.iy = (int) (best / w);
  p.score = map[best];
  p.x = p.ix;
  p.y = p.iy;
  if (p.ix > 0 && p.ix < w - 1)
    p.x += parabola_offset (map[best - 1], p.score, map[best + 1]);
  else if (w > 1)
    p.flags |= GR_PEAK_AT_BORDER;
  if (p.iy > 0 && p.iy < h - 1)
    p.y += parabola_offset (map[best - w], p.score, map[best + w]);
  else if (h > 1)
    p.flags |= GR_PEAK_AT_BORDER;

  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      if (abs (x - p.ix) <= exclusion_radius && abs (y - p.iy) <= exclusion_radius)
        continue;
      const double v = map[(size_t) y * w + x];
      if (!isfinite (v) || (!isnan (p.second) && v <= p.second))
        continue;
      if (is_local_max (map, w, h, x, y))
        p.second = v;
    }
  if (isnan (p.second)) {
    p.flags |= GR_PEAK_NO_SECOND;
  } else {
    const double above = p.second - floor_value;
    p.ratio = above > 0.0 ? (p.score - floor_value) / above : INFINITY;
  }
  *out = p;
}
