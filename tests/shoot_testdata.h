/* Synthetic landmark sets for the shooting tests and benchmark (header-only):
 * a smooth closed 2-D curve, a smooth closed "bunny-like" 3-D surface (a star-shaped
 * body with two ear lobes), smooth momentum fields and a small deterministic RNG.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_SHOOT_TESTDATA_H
#define GR_SHOOT_TESTDATA_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static inline uint64_t
td_next (uint64_t *st)
{
  /* splitmix64 */
  uint64_t z = (*st += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* uniform in [-1, 1) */
static inline double
td_uniform (uint64_t *st)
{
  return (double) (td_next (st) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* n points on r(th) = radius (1 + 0.15 cos 3 th + 0.08 sin 5 th), point-major. */
static inline void
td_curve2d (size_t n, double radius, double *out)
{
  for (size_t i = 0; i < n; i++) {
    double th = 2.0 * M_PI * (double) i / (double) n;
    double r = radius * (1.0 + 0.15 * cos (3.0 * th) + 0.08 * sin (5.0 * th));
    out[2 * i] = r * cos (th);
    out[2 * i + 1] = r * sin (th);
  }
}

/* n points on a closed star-shaped surface: a slightly flattened body with two ear
 * lobes (directions spread by a Fibonacci lattice), point-major, about 2.2 * radius
 * wide. */
static inline void
td_bunny3d (size_t n, double radius, double *out)
{
  const double golden = M_PI * (3.0 - sqrt (5.0));
  const double e1[3] = { -0.35, 0.25, 0.90 }, e2[3] = { 0.35, 0.25, 0.90 };
  double l1 = sqrt (e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
  for (size_t i = 0; i < n; i++) {
    double z = 1.0 - (2.0 * i + 1.0) / (double) n;
    double rr = sqrt (fmax (0.0, 1.0 - z * z));
    double ph = golden * (double) i;
    double u[3] = { rr * cos (ph), rr * sin (ph), z };
    double d1 = 0, d2 = 0;
    for (int k = 0; k < 3; k++) {
      d1 += (u[k] - e1[k] / l1) * (u[k] - e1[k] / l1);
      d2 += (u[k] - e2[k] / l1) * (u[k] - e2[k] / l1);
    }
    double r = 1.0 + 0.12 * u[0] * u[1] + 0.55 * exp (-d1 / 0.04) + 0.55 * exp (-d2 / 0.04);
    double sc[3] = { 1.15, 0.95, 0.85 };
    for (int k = 0; k < 3; k++)
      out[3 * i + k] = radius * r * u[k] * sc[k];
  }
}

/* A smooth momentum field evaluated at the points q (point-major), amplitude amp. */
static inline void
td_smooth_momentum (const double *q, size_t n, int dim, double amp, double scale,
    double *p)
{
  for (size_t i = 0; i < n; i++) {
    const double *x = q + i * dim;
    double z = dim == 3 ? x[2] : 0.0;
    p[i * dim] = amp * sin (scale * x[1] + 0.5) * cos (0.7 * scale * z);
    p[i * dim + 1] = amp * cos (0.8 * scale * x[0] - 0.3);
    if (dim == 3)
      p[i * dim + 2] = amp * sin (0.6 * scale * (x[0] + x[1]) + 1.0);
  }
}

static inline double
td_mean_distance (const double *a, const double *b, size_t n, int dim)
{
  double s = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d2 = 0.0;
    for (int k = 0; k < dim; k++) {
      double d = a[i * dim + k] - b[i * dim + k];
      d2 += d * d;
    }
    s += sqrt (d2);
  }
  return s / (double) n;
}

#ifdef GR_SHOOT_H
/* A population of `subjects` targets: the template shot by the smooth momentum with
 * amplitude 0.04 + 0.03 k (scale 0.3 + 0.05 k) under p, plus uniform noise of +-0.005;
 * subject 3 is the template itself (nothing to do). */
static inline void
td_population (const GrShootParams *p, const double *q0, int subjects, double *targets)
{
  const size_t m = p->n * p->dim;
  double *mom = (double *) malloc (sizeof (double) * m);
  GrShoot *s = gr_shoot_new (p, GR_BACKEND_CPU, -1, NULL, NULL, 0);
  if (!s || !mom || gr_shoot_set_template (s, q0, NULL, 0) != GR_OK) {
    fprintf (stderr, "td_population: no engine\n");
    exit (1);
  }
  uint64_t rng = 7;
  for (int k = 0; k < subjects; k++) {
    double *t = targets + k * m;
    if (k == 3) {
      memcpy (t, q0, sizeof (double) * m);
      continue;
    }
    td_smooth_momentum (q0, p->n, p->dim, 0.04 + 0.03 * k, 0.3 + 0.05 * k, mom);
    if (gr_shoot_flow (s, mom, t, NULL, NULL, 0, NULL, NULL, 0) != GR_OK) {
      fprintf (stderr, "td_population: shooting failed\n");
      exit (1);
    }
    for (size_t e = 0; e < m; e++)
      t[e] += 0.01 * (td_uniform (&rng) - 0.5);
  }
  gr_shoot_free (s);
  free (mom);
}
#endif

#endif
