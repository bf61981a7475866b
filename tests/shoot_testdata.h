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

/* |a - b| / |b| (Euclidean norms over m values). */
static inline double
td_rel_l2 (const double *a, const double *b, size_t m)
{
  double num = 0, den = 0;
  for (size_t i = 0; i < m; i++) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return sqrt (num / fmax (den, 1e-300));
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

/* Meshes for the varifold tests: closed curves (segments) and ellipsoids (triangles,
 * oriented outwards), and the known smooth deformation they are matched under. */
typedef struct {
  size_t nv, nc;
  double *v;
  uint32_t *c;
} TdMesh;

static inline void
td_mesh_free (TdMesh *m)
{
  free (m->v);
  free (m->c);
}

/* Closed polyline: a wobbly circle of nv vertices, segments i -> i + 1. */
static inline TdMesh
td_closed_curve (size_t nv, double r, double phase)
{
  TdMesh m = { nv, nv, malloc (sizeof (double) * 2 * nv), malloc (sizeof (uint32_t) * 2 * nv) };
  for (size_t i = 0; i < nv; i++) {
    double t = 2 * M_PI * i / nv + phase;
    double rr = r * (1 + 0.15 * sin (3 * t));
    m.v[2 * i] = rr * cos (t);
    m.v[2 * i + 1] = 0.8 * rr * sin (t);
    m.c[2 * i] = (uint32_t) i;
    m.c[2 * i + 1] = (uint32_t) ((i + 1) % nv);
  }
  return m;
}

/* An ellipsoid (radii a, b, c) meshed by L latitude bands and M longitudes (offset by
 * lon0), triangles oriented outwards. */
static inline TdMesh
td_ellipsoid (int L, int M, double a, double b, double c, double lon0)
{
  TdMesh m;
  m.nv = (size_t) (L - 1) * M + 2;
  m.nc = (size_t) 2 * M * (L - 1);
  m.v = malloc (sizeof (double) * 3 * m.nv);
  m.c = malloc (sizeof (uint32_t) * 3 * m.nc);
  size_t k = 0;
  for (int i = 1; i < L; i++)
    for (int j = 0; j < M; j++, k++) {
      double th = M_PI * i / L, ph = 2 * M_PI * j / M + lon0;
      m.v[3 * k] = a * sin (th) * cos (ph);
      m.v[3 * k + 1] = b * sin (th) * sin (ph);
      m.v[3 * k + 2] = c * cos (th);
    }
  const uint32_t top = (uint32_t) k, bot = (uint32_t) k + 1;
  m.v[3 * top] = m.v[3 * top + 1] = 0;
  m.v[3 * top + 2] = c;
  m.v[3 * bot] = m.v[3 * bot + 1] = 0;
  m.v[3 * bot + 2] = -c;
  size_t t = 0;
#define RING(i, j) ((uint32_t) ((i) - 1) * M + (uint32_t) (((j) + M) % M))
#define TRI(x, y, z) do { m.c[3 * t] = (x); m.c[3 * t + 1] = (y); m.c[3 * t + 2] = (z); \
    t++; } while (0)
  for (int j = 0; j < M; j++) {
    TRI (top, RING (1, j), RING (1, j + 1));
    TRI (bot, RING (L - 1, j + 1), RING (L - 1, j));
    for (int i = 1; i + 1 < L; i++) {
      TRI (RING (i, j), RING (i + 1, j), RING (i + 1, j + 1));
      TRI (RING (i, j), RING (i + 1, j + 1), RING (i, j + 1));
    }
  }
#undef RING
#undef TRI
  return m;
}

/* The known smooth deformation. */
static inline void
td_deform (double *v, size_t nv)
{
  for (size_t i = 0; i < nv; i++) {
    double *x = v + 3 * i;
    double dx = 0.1 * x[0] + 0.8 * sin (x[1] / 4.0) + 2.4, dy = 0.7 * cos (x[0] / 5.0)
        - 0.5, dz = 0.6 * sin ((x[0] + x[1]) / 6.0) + 0.3;
    x[0] += dx;
    x[1] += dy;
    x[2] += dz;
  }
}

/* The distance from p to the triangle abc. */
static inline double
td_point_triangle (const double *p, const double *a, const double *b, const double *c)
{
  /* closest point on triangle abc to p (regions by barycentric tests) */
  double ab[3], ac[3], ap[3], q[3];
  for (int d = 0; d < 3; d++) {
    ab[d] = b[d] - a[d];
    ac[d] = c[d] - a[d];
    ap[d] = p[d] - a[d];
  }
#define DOT(x, y) ((x)[0] * (y)[0] + (x)[1] * (y)[1] + (x)[2] * (y)[2])
  double d1 = DOT (ab, ap), d2 = DOT (ac, ap);
  if (d1 <= 0 && d2 <= 0) {
    memcpy (q, a, sizeof q);
    goto done;
  }
  double bp[3], cp[3];
  for (int d = 0; d < 3; d++) {
    bp[d] = p[d] - b[d];
    cp[d] = p[d] - c[d];
  }
  double d3 = DOT (ab, bp), d4 = DOT (ac, bp);
  if (d3 >= 0 && d4 <= d3) {
    memcpy (q, b, sizeof q);
    goto done;
  }
  double vc = d1 * d4 - d3 * d2;
  if (vc <= 0 && d1 >= 0 && d3 <= 0) {
    double t = d1 / (d1 - d3);
    for (int d = 0; d < 3; d++)
      q[d] = a[d] + t * ab[d];
    goto done;
  }
  double d5 = DOT (ab, cp), d6 = DOT (ac, cp);
  if (d6 >= 0 && d5 <= d6) {
    memcpy (q, c, sizeof q);
    goto done;
  }
  double vb = d5 * d2 - d1 * d6;
  if (vb <= 0 && d2 >= 0 && d6 <= 0) {
    double t = d2 / (d2 - d6);
    for (int d = 0; d < 3; d++)
      q[d] = a[d] + t * ac[d];
    goto done;
  }
  double va = d3 * d6 - d5 * d4;
  if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
    double t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    for (int d = 0; d < 3; d++)
      q[d] = b[d] + t * (c[d] - b[d]);
    goto done;
  }
  {
    double den = 1.0 / (va + vb + vc), v = vb * den, w = vc * den;
    for (int d = 0; d < 3; d++)
      q[d] = a[d] + v * ab[d] + w * ac[d];
  }
done:
  {
    double r[3] = { p[0] - q[0], p[1] - q[1], p[2] - q[2] };
    return sqrt (DOT (r, r));
  }
#undef DOT
}

/* The symmetric vertex-to-mesh Hausdorff distance of two triangle meshes: the max over
 * the vertices of one mesh of the distance to the other mesh, both ways. */
static inline double
td_hausdorff (const TdMesh *x, const TdMesh *y)
{
  double h = 0;
  for (int dir = 0; dir < 2; dir++) {
    const TdMesh *a = dir ? y : x, *b = dir ? x : y;
    for (size_t i = 0; i < a->nv; i++) {
      double best = INFINITY;
      for (size_t f = 0; f < b->nc; f++)
        best = fmin (best, td_point_triangle (a->v + 3 * i, b->v + 3 * b->c[3 * f],
                b->v + 3 * b->c[3 * f + 1], b->v + 3 * b->c[3 * f + 2]));
      h = fmax (h, best);
    }
  }
  return h;
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
