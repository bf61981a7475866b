/* Robust fitting of 2D transforms (see fit.h): LO-RANSAC with an MSAC score, and a
 * least-squares refinement on the inliers.
 *
 * Method
 *  - Hypotheses from minimal samples (translation 1, similarity 2, affine 3,
 *    homography 4 correspondences), drawn by a splitmix64 generator seeded from
 *    params->seed (with weights: drawn in proportion to the weights), so a run is a
 *    pure function of its inputs.  A sample is rejected before solving when it is
 *    degenerate: coincident points (similarity), collinear triples (affine,
 *    homography), or, for a homography, a triple whose orientation flips between
 *    source and destination (no homography that keeps the points in front maps it).
 *  - Score: MSAC, sum over points of min(e^2, t^2) with e the reprojection error in
 *    the destination; inliers: e <= t.
 *  - Local optimisation: whenever a hypothesis beats the best so far, it is refitted
 *    by least squares on its inliers, up to 4 times while the score improves.
 *  - Stopping: the usual adaptive bound log(1 - confidence) / log(1 - w^m) with w the
 *    best inlier ratio, capped by max_iterations.
 *  - Final refinement: least squares on the inliers (translation: mean; similarity:
 *    closed form; affine: normal equations; homography: Hartley-normalized DLT, then
 *    Levenberg-Marquardt on the reprojection error), repeated while the inlier set
 *    changes (at most 3 times) and kept only when the score does not get worse.
 * All solvers work on centred (similarity, affine) or Hartley-normalized
 * (homography) coordinates.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEGEN_EPS 1e-6         /* collinearity / coincidence, normalized units */

void
gr_fit_params_init (GrFitParams *p, GrModel model)
{
  p->model = model;
  p->threshold = 1.0;
  p->confidence = 0.999;
  p->max_iterations = 10000;
  p->seed = 0x5eed2026u;
}

static int
model_min (GrModel m)
{
  switch (m) {
    case GR_MODEL_TRANSLATION: return 1;
    case GR_MODEL_SIMILARITY: return 2;
    case GR_MODEL_AFFINE: return 3;
    case GR_MODEL_HOMOGRAPHY: return 4;
  }
  return -1;
}

bool
gr_fit_apply (const double h[9], double x, double y, double *xo, double *yo)
{
  const double w = h[6] * x + h[7] * y + h[8];
  if (!isfinite (w) || fabs (w) < 1e-300)
    return false;
  const double u = (h[0] * x + h[1] * y + h[2]) / w;
  const double v = (h[3] * x + h[4] * y + h[5]) / w;
  if (!isfinite (u) || !isfinite (v))
    return false;
  *xo = u;
  *yo = v;
  return true;
}

/* ------------------------------------------------------------------ small algebra */

void
gr_mat3_mul (const double a[9], const double b[9], double c[9])
{
  double t[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      t[i * 3 + j] = a[i * 3] * b[j] + a[i * 3 + 1] * b[3 + j] + a[i * 3 + 2] * b[6 + j];
  memcpy (c, t, sizeof t);
}

bool
gr_mat3_inverse (const double m[9], double o[9])
{
  const double c0 = m[4] * m[8] - m[5] * m[7];
  const double c1 = m[5] * m[6] - m[3] * m[8];
  const double c2 = m[3] * m[7] - m[4] * m[6];
  const double det = m[0] * c0 + m[1] * c1 + m[2] * c2;
  if (!(fabs (det) > 1e-300) || !isfinite (det))
    return false;
  o[0] = c0 / det;
  o[1] = (m[2] * m[7] - m[1] * m[8]) / det;
  o[2] = (m[1] * m[5] - m[2] * m[4]) / det;
  o[3] = c1 / det;
  o[4] = (m[0] * m[8] - m[2] * m[6]) / det;
  o[5] = (m[2] * m[3] - m[0] * m[5]) / det;
  o[6] = c2 / det;
  o[7] = (m[1] * m[6] - m[0] * m[7]) / det;
  o[8] = (m[0] * m[4] - m[1] * m[3]) / det;
  return true;
}

/* Solves a x = b (k x k, row-major; a and b are overwritten).  Partial pivoting. */
static bool
solve_linear (double *a, double *b, int k, double *x)
{
  double scale = 0.0;
  for (int i = 0; i < k * k; i++)
    scale = fmax (scale, fabs (a[i]));
  if (!(scale > 0.0) || !isfinite (scale))
    return false;
  for (int c = 0; c < k; c++) {
    int piv = c;
    for (int r = c + 1; r < k; r++)
      if (fabs (a[r * k + c]) > fabs (a[piv * k + c]))
        piv = r;
    if (!(fabs (a[piv * k + c]) > 1e-14 * scale))
      return false;
    if (piv != c) {
      for (int j = 0; j < k; j++) {
        double t = a[c * k + j];
        a[c * k + j] = a[piv * k + j];
        a[piv * k + j] = t;
      }
      double t = b[c];
      b[c] = b[piv];
      b[piv] = t;
    }
    for (int r = c + 1; r < k; r++) {
      const double f = a[r * k + c] / a[c * k + c];
      if (f == 0.0)
        continue;
      for (int j = c; j < k; j++)
        a[r * k + j] -= f * a[c * k + j];
      b[r] -= f * b[c];
    }
  }
  for (int r = k - 1; r >= 0; r--) {
    double s = b[r];
    for (int j = r + 1; j < k; j++)
      s -= a[r * k + j] * x[j];
    x[r] = s / a[r * k + r];
    if (!isfinite (x[r]))
      return false;
  }
  return true;
}

/* Eigenvector of the smallest eigenvalue of a symmetric 9 x 9 matrix (cyclic
 * Jacobi). */
static void
sym9_smallest (const double *m, double *vec)
{
  double a[81], v[81];
  memcpy (a, m, sizeof a);
  for (int i = 0; i < 81; i++)
    v[i] = (i % 10 == 0) ? 1.0 : 0.0;
  for (int sweep = 0; sweep < 60; sweep++) {
    double off = 0.0, diag = 0.0;
    for (int i = 0; i < 9; i++)
      for (int j = 0; j < 9; j++)
        if (i != j)
          off += a[i * 9 + j] * a[i * 9 + j];
        else
          diag += a[i * 9 + j] * a[i * 9 + j];
    if (off <= 1e-30 * diag || off == 0.0)
      break;
    for (int p = 0; p < 8; p++)
      for (int q = p + 1; q < 9; q++) {
        const double apq = a[p * 9 + q];
        if (fabs (apq) < 1e-300)
          continue;
        const double app = a[p * 9 + p], aqq = a[q * 9 + q];
        const double theta = 0.5 * (aqq - app) / apq;
        const double t = (theta >= 0 ? 1.0 : -1.0) / (fabs (theta) + sqrt (theta * theta + 1.0));
        const double c = 1.0 / sqrt (t * t + 1.0), s = t * c;
        for (int k = 0; k < 9; k++) {
          const double akp = a[k * 9 + p], akq = a[k * 9 + q];
          a[k * 9 + p] = c * akp - s * akq;
          a[k * 9 + q] = s * akp + c * akq;
        }
        for (int k = 0; k < 9; k++) {
          const double apk = a[p * 9 + k], aqk = a[q * 9 + k];
          a[p * 9 + k] = c * apk - s * aqk;
          a[q * 9 + k] = s * apk + c * aqk;
        }
        for (int k = 0; k < 9; k++) {
          const double vkp = v[k * 9 + p], vkq = v[k * 9 + q];
          v[k * 9 + p] = c * vkp - s * vkq;
          v[k * 9 + q] = s * vkp + c * vkq;
        }
      }
  }
  int best = 0;
  for (int i = 1; i < 9; i++)
    if (a[i * 9 + i] < a[best * 9 + best])
      best = i;
  for (int k = 0; k < 9; k++)
    vec[k] = v[k * 9 + best];
}

/* ------------------------------------------------------------------ context */

typedef struct {
  const double *src, *dst;     /* original coordinates */
  double *sn, *dn;             /* Hartley-normalized copies */
  double ts[9], td_inv[9];     /* normalizing transforms: sn = ts src; dst = td_inv dn */
  int n;
  GrModel model;
  double t2;                   /* threshold^2 */
} Ctx;

static void
normalize (const double *p, int n, double *out, double T[9], double Tinv[9])
{
  double cx = 0, cy = 0;
  for (int i = 0; i < n; i++) {
    cx += p[2 * i];
    cy += p[2 * i + 1];
  }
  cx /= n;
  cy /= n;
  double d = 0;
  for (int i = 0; i < n; i++)
    d += hypot (p[2 * i] - cx, p[2 * i + 1] - cy);
  d /= n;
  const double s = d > 1e-300 ? sqrt (2.0) / d : 1.0;
  for (int i = 0; i < n; i++) {
    out[2 * i] = (p[2 * i] - cx) * s;
    out[2 * i + 1] = (p[2 * i + 1] - cy) * s;
  }
  const double t[9] = { s, 0, -s * cx, 0, s, -s * cy, 0, 0, 1 };
  const double ti[9] = { 1 / s, 0, cx, 0, 1 / s, cy, 0, 0, 1 };
  if (T)
    memcpy (T, t, sizeof t);
  if (Tinv)
    memcpy (Tinv, ti, sizeof ti);
}

/* c for n correspondences with their Hartley-normalized copies (threshold unset);
 * false when out of memory (nothing to free).  ctx_close frees it. */
static bool
ctx_open (Ctx *c, const double *src, const double *dst, int n, GrModel model)
{
  memset (c, 0, sizeof *c);
  c->src = src;
  c->dst = dst;
  c->n = n;
  c->model = model;
  c->sn = malloc (sizeof (double) * 2 * n);
  c->dn = malloc (sizeof (double) * 2 * n);
  if (!c->sn || !c->dn) {
    free (c->sn);
    free (c->dn);
    return false;
  }
  normalize (src, n, c->sn, c->ts, NULL);
  normalize (dst, n, c->dn, NULL, c->td_inv);
  return true;
}

static void
ctx_close (Ctx *c)
{
  free (c->sn);
  free (c->dn);
  c->sn = c->dn = NULL;
}

static double
cross3 (const double *p, int i, int j, int k)
{
  const double ax = p[2 * j] - p[2 * i], ay = p[2 * j + 1] - p[2 * i + 1];
  const double bx = p[2 * k] - p[2 * i], by = p[2 * k + 1] - p[2 * i + 1];
  return ax * by - ay * bx;
}

/* Whether the points idx[0..k) spread in 2D: the smaller eigenvalue of their
 * scatter is not negligible against the larger (normalized coordinates). */
static bool
spread_2d (const double *p, const int *idx, int k)
{
  double mx = 0, my = 0;
  for (int i = 0; i < k; i++) {
    mx += p[2 * idx[i]];
    my += p[2 * idx[i] + 1];
  }
  mx /= k;
  my /= k;
  double sxx = 0, sxy = 0, syy = 0;
  for (int i = 0; i < k; i++) {
    const double dx = p[2 * idx[i]] - mx, dy = p[2 * idx[i] + 1] - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  const double tr = sxx + syy, det = sxx * syy - sxy * sxy;
  if (!(tr > 0.0))
    return false;
  const double disc = sqrt (fmax (0.0, 0.25 * tr * tr - det));
  const double lmin = 0.5 * tr - disc, lmax = 0.5 * tr + disc;
  return lmin > 1e-10 * lmax && lmin / k > 1e-14;
}

static bool
sample_degenerate (const Ctx *c, const int *s)
{
  switch (c->model) {
    case GR_MODEL_TRANSLATION:
      return false;
    case GR_MODEL_SIMILARITY:
      return hypot (c->sn[2 * s[0]] - c->sn[2 * s[1]], c->sn[2 * s[0] + 1] - c->sn[2 * s[1] + 1]) < DEGEN_EPS
          || hypot (c->dn[2 * s[0]] - c->dn[2 * s[1]], c->dn[2 * s[0] + 1] - c->dn[2 * s[1] + 1]) < DEGEN_EPS;
    case GR_MODEL_AFFINE:
      return fabs (cross3 (c->sn, s[0], s[1], s[2])) < DEGEN_EPS
          || fabs (cross3 (c->dn, s[0], s[1], s[2])) < DEGEN_EPS;
    case GR_MODEL_HOMOGRAPHY: {
      static const int tri[4][3] = { {0, 1, 2}, {0, 1, 3}, {0, 2, 3}, {1, 2, 3} };
      for (int t = 0; t < 4; t++) {
        const double a = cross3 (c->sn, s[tri[t][0]], s[tri[t][1]], s[tri[t][2]]);
        const double b = cross3 (c->dn, s[tri[t][0]], s[tri[t][1]], s[tri[t][2]]);
        if (fabs (a) < DEGEN_EPS || fabs (b) < DEGEN_EPS || (a > 0) != (b > 0))
          return true;
      }
      return false;
    }
  }
  return true;
}

/* ------------------------------------------------------------------ solvers */

static bool
fit_translation (const Ctx *c, const int *idx, int k, double h[9])
{
  double tx = 0, ty = 0;
  for (int i = 0; i < k; i++) {
    tx += c->dst[2 * idx[i]] - c->src[2 * idx[i]];
    ty += c->dst[2 * idx[i] + 1] - c->src[2 * idx[i] + 1];
  }
  const double t[9] = { 1, 0, tx / k, 0, 1, ty / k, 0, 0, 1 };
  memcpy (h, t, sizeof t);
  return isfinite (h[2]) && isfinite (h[5]);
}

/* x' = a x - b y + tx, y' = b x + a y + ty: closed-form least squares */
static bool
fit_similarity (const Ctx *c, const int *idx, int k, double h[9])
{
  double mx = 0, my = 0, Mx = 0, My = 0;
  for (int i = 0; i < k; i++) {
    mx += c->src[2 * idx[i]];
    my += c->src[2 * idx[i] + 1];
    Mx += c->dst[2 * idx[i]];
    My += c->dst[2 * idx[i] + 1];
  }
  mx /= k;
  my /= k;
  Mx /= k;
  My /= k;
  double ss = 0, sa = 0, sb = 0;
  for (int i = 0; i < k; i++) {
    const double x = c->src[2 * idx[i]] - mx, y = c->src[2 * idx[i] + 1] - my;
    const double X = c->dst[2 * idx[i]] - Mx, Y = c->dst[2 * idx[i] + 1] - My;
    ss += x * x + y * y;
    sa += x * X + y * Y;
    sb += x * Y - y * X;
  }
  if (!(ss > 0.0))
    return false;
  const double a = sa / ss, b = sb / ss;
  if (!(a * a + b * b > 1e-20))
    return false;
  const double t[9] = { a, -b, Mx - a * mx + b * my, b, a, My - b * mx - a * my, 0, 0, 1 };
  memcpy (h, t, sizeof t);
  for (int i = 0; i < 9; i++)
    if (!isfinite (h[i]))
      return false;
  return true;
}

static bool
fit_affine (const Ctx *c, const int *idx, int k, double h[9])
{
  double mx = 0, my = 0, Mx = 0, My = 0;
  for (int i = 0; i < k; i++) {
    mx += c->src[2 * idx[i]];
    my += c->src[2 * idx[i] + 1];
    Mx += c->dst[2 * idx[i]];
    My += c->dst[2 * idx[i] + 1];
  }
  mx /= k;
  my /= k;
  Mx /= k;
  My /= k;
  double sxx = 0, sxy = 0, syy = 0, Xx = 0, Xy = 0, Yx = 0, Yy = 0;
  for (int i = 0; i < k; i++) {
    const double x = c->src[2 * idx[i]] - mx, y = c->src[2 * idx[i] + 1] - my;
    const double X = c->dst[2 * idx[i]] - Mx, Y = c->dst[2 * idx[i] + 1] - My;
    sxx += x * x;
    sxy += x * y;
    syy += y * y;
    Xx += X * x;
    Xy += X * y;
    Yx += Y * x;
    Yy += Y * y;
  }
  const double det = sxx * syy - sxy * sxy;
  if (!(det > 1e-12 * (sxx + syy) * (sxx + syy)))
    return false;
  const double i00 = syy / det, i01 = -sxy / det, i11 = sxx / det;
  const double a = Xx * i00 + Xy * i01, b = Xx * i01 + Xy * i11;
  const double d = Yx * i00 + Yy * i01, e = Yx * i01 + Yy * i11;
  if (!(fabs (a * e - b * d) > 1e-12))
    return false;
  const double t[9] = { a, b, Mx - a * mx - b * my, d, e, My - d * mx - e * my, 0, 0, 1 };
  memcpy (h, t, sizeof t);
  for (int i = 0; i < 9; i++)
    if (!isfinite (h[i]))
      return false;
  return true;
}

/* denormalize a homography of normalized coordinates and scale h[8] to 1 */
static bool
homography_finish (const Ctx *c, const double hn[9], double h[9])
{
  double t[9];
  gr_mat3_mul (c->td_inv, hn, t);
  gr_mat3_mul (t, c->ts, t);
  if (!(fabs (t[8]) > 1e-12))
    return false;
  for (int i = 0; i < 9; i++) {
    h[i] = t[i] / t[8];
    if (!isfinite (h[i]))
      return false;
  }
  h[8] = 1.0;
  const double det = h[0] * (h[4] * h[8] - h[5] * h[7]) - h[1] * (h[3] * h[8] - h[5] * h[6])
      + h[2] * (h[3] * h[7] - h[4] * h[6]);
  return fabs (det) > 1e-14;
}

/* exact 4-point homography (normalized coordinates, hn[8] = 1) */
static bool
fit_homography_min (const Ctx *c, const int *s, double h[9])
{
  double a[64], b[8], x[8];
  for (int i = 0; i < 4; i++) {
    const double u = c->sn[2 * s[i]], v = c->sn[2 * s[i] + 1];
    const double X = c->dn[2 * s[i]], Y = c->dn[2 * s[i] + 1];
    double *r0 = a + (2 * i) * 8, *r1 = a + (2 * i + 1) * 8;
    const double row0[8] = { u, v, 1, 0, 0, 0, -X * u, -X * v };
    const double row1[8] = { 0, 0, 0, u, v, 1, -Y * u, -Y * v };
    memcpy (r0, row0, sizeof row0);
    memcpy (r1, row1, sizeof row1);
    b[2 * i] = X;
    b[2 * i + 1] = Y;
  }
  if (!solve_linear (a, b, 8, x))
    return false;
  double hn[9];
  memcpy (hn, x, sizeof x);
  hn[8] = 1.0;
  /* the sample must stay in front (w > 0) */
  for (int i = 0; i < 4; i++)
    if (!(hn[6] * c->sn[2 * s[i]] + hn[7] * c->sn[2 * s[i] + 1] + 1.0 > 0.0))
      return false;
  return homography_finish (c, hn, h);
}

/* sum of squared reprojection errors in normalized destination units, and the
 * Gauss-Newton system, for hn (8 parameters, hn[8] = 1) */
static double
homography_normal_eq (const Ctx *c, const int *idx, int k, const double *hn, double *jtj,
    double *jtr)
{
  double cost = 0.0;
  if (jtj) {
    memset (jtj, 0, sizeof (double) * 64);
    memset (jtr, 0, sizeof (double) * 8);
  }
  for (int i = 0; i < k; i++) {
    const double u = c->sn[2 * idx[i]], v = c->sn[2 * idx[i] + 1];
    const double X = c->dn[2 * idx[i]], Y = c->dn[2 * idx[i] + 1];
    const double w = hn[6] * u + hn[7] * v + 1.0;
    if (!(w > 1e-12))
      return INFINITY;
    const double px = (hn[0] * u + hn[1] * v + hn[2]) / w;
    const double py = (hn[3] * u + hn[4] * v + hn[5]) / w;
    const double rx = px - X, ry = py - Y;
    cost += rx * rx + ry * ry;
    if (!jtj)
      continue;
    const double jx[8] = { u / w, v / w, 1 / w, 0, 0, 0, -u * px / w, -v * px / w };
    const double jy[8] = { 0, 0, 0, u / w, v / w, 1 / w, -u * py / w, -v * py / w };
    for (int p = 0; p < 8; p++) {
      jtr[p] += jx[p] * rx + jy[p] * ry;
      for (int q = 0; q <= p; q++)
        jtj[p * 8 + q] += jx[p] * jx[q] + jy[p] * jy[q];
    }
  }
  if (jtj)
    for (int p = 0; p < 8; p++)
      for (int q = p + 1; q < 8; q++)
        jtj[p * 8 + q] = jtj[q * 8 + p];
  return cost;
}

/* Levenberg-Marquardt on the reprojection error (normalized coordinates). */
static void
homography_lm (const Ctx *c, const int *idx, int k, double hn[9])
{
  double jtj[64], jtr[8];
  double lambda = 1e-3;
  double cost = homography_normal_eq (c, idx, k, hn, jtj, jtr);
  if (!isfinite (cost))
    return;
  bool converged = false;
  for (int it = 0; it < 50; it++) {
    double a[64], b[8], d[8], trial[9];
    memcpy (a, jtj, sizeof a);
    for (int p = 0; p < 8; p++) {
      a[p * 8 + p] += lambda * (jtj[p * 8 + p] > 1e-12 ? jtj[p * 8 + p] : 1e-12);
      b[p] = -jtr[p];
    }
    if (!solve_linear (a, b, 8, d)) {
      lambda *= 10;
      if (lambda > 1e12)
        break;
      continue;
    }
    for (int p = 0; p < 8; p++)
      trial[p] = hn[p] + d[p];
    trial[8] = 1.0;
    const double tc = homography_normal_eq (c, idx, k, trial, NULL, NULL);
    if (tc < cost) {
      const double gain = cost - tc;
      memcpy (hn, trial, sizeof trial);
      cost = homography_normal_eq (c, idx, k, hn, jtj, jtr);
      lambda = fmax (lambda * 0.1, 1e-12);
      if (gain <= 1e-15 * cost || cost == 0.0)
        break;
      converged = gain <= 1e-10 * cost;
    } else {
      /* after a step that gained less than 1e-10 of the cost, a failed one means the
       * minimum is reached: raising lambda up to 1e12 from there (up to 24 more cost
       * evaluations a fit) only confirmed it */
      if (converged)
        break;
      lambda *= 10;
      if (lambda > 1e12)
        break;
    }
  }
}

/* least-squares homography: normalized DLT, then LM when refine */
static bool
fit_homography_ls (const Ctx *c, const int *idx, int k, bool refine, double h[9])
{
  if (!spread_2d (c->sn, idx, k) || !spread_2d (c->dn, idx, k))
    return false;
  /* A^T A of the DLT rows r0 = (-p, 0, X p), r1 = (0, -p, Y p) with p = (u, v, 1):
   * its 3 x 3 blocks are sums of w p p^T for w = 1, X, Y and X^2 + Y^2, so 24 sums a
   * point (6 distinct entries of p p^T, 4 weights) instead of 90 products */
  double m[4][6] = { { 0 } };
  for (int i = 0; i < k; i++) {
    const double u = c->sn[2 * idx[i]], v = c->sn[2 * idx[i] + 1];
    const double X = c->dn[2 * idx[i]], Y = c->dn[2 * idx[i] + 1];
    const double pp[6] = { u * u, u * v, u, v * v, v, 1.0 };
    const double w[4] = { 1.0, X, Y, X * X + Y * Y };
    for (int a = 0; a < 4; a++)
      for (int e = 0; e < 6; e++)
        m[a][e] += w[a] * pp[e];
  }
  /* the 6 distinct entries of a symmetric 3 x 3 block, row-major */
  static const int sym[9] = { 0, 1, 2, 1, 3, 4, 2, 4, 5 };
  static const double sign[3][3] = { { 1, 0, -1 }, { 0, 1, -1 }, { -1, -1, 1 } };
  static const int weight[3][3] = { { 0, -1, 1 }, { -1, 0, 2 }, { 1, 2, 3 } };
  double ata[81];
  for (int bi = 0; bi < 3; bi++)
    for (int bj = 0; bj < 3; bj++)
      for (int r = 0; r < 3; r++)
        for (int q = 0; q < 3; q++)
          ata[(3 * bi + r) * 9 + 3 * bj + q] = weight[bi][bj] < 0 ? 0.0 :
              sign[bi][bj] * m[weight[bi][bj]][sym[3 * r + q]];
  double hn[9];
  sym9_smallest (ata, hn);
  if (!(fabs (hn[8]) > 1e-10))
    return false;
  for (int i = 0; i < 9; i++)
    hn[i] /= hn[8];
  if (refine && k >= 4)
    homography_lm (c, idx, k, hn);
  return homography_finish (c, hn, h);
}

static bool
fit_model (const Ctx *c, const int *idx, int k, bool minimal, bool refine, double h[9])
{
  switch (c->model) {
    case GR_MODEL_TRANSLATION:
      return fit_translation (c, idx, k, h);
    case GR_MODEL_SIMILARITY:
      return fit_similarity (c, idx, k, h);
    case GR_MODEL_AFFINE:
      if (!minimal && (!spread_2d (c->sn, idx, k) || !spread_2d (c->dn, idx, k)))
        return false;
      return fit_affine (c, idx, k, h);
    case GR_MODEL_HOMOGRAPHY:
      return minimal ? fit_homography_min (c, idx, h) : fit_homography_ls (c, idx, k,
          refine, h);
  }
  return false;
}

/* ------------------------------------------------------------------ scoring */

static inline double
err2 (const double h[9], const double *s, const double *d)
{
  const double w = h[6] * s[0] + h[7] * s[1] + h[8];
  if (!(w > 1e-12))
    return INFINITY;
  const double x = (h[0] * s[0] + h[1] * s[1] + h[2]) / w;
  const double y = (h[3] * s[0] + h[4] * s[1] + h[5]) / w;
  const double ex = x - d[0], ey = y - d[1];
  const double e = ex * ex + ey * ey;
  return isfinite (e) ? e : INFINITY;
}

/* MSAC cost; inlier count; inlier indices when idx != NULL */
static double
score (const Ctx *c, const double h[9], int *ninl, int *idx)
{
  double cost = 0.0;
  int k = 0;
  for (int i = 0; i < c->n; i++) {
    const double e = err2 (h, c->src + 2 * i, c->dst + 2 * i);
    if (e <= c->t2) {
      cost += e;
      if (idx)
        idx[k] = i;
      k++;
    } else {
      cost += c->t2;
    }
  }
  *ninl = k;
  return cost;
}

/* ------------------------------------------------------------------ sampling */

static inline uint64_t
splitmix (uint64_t *s)
{
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static inline double
uniform01 (uint64_t *s)
{
  return (splitmix (s) >> 11) * (1.0 / 9007199254740992.0);
}

static int
draw (uint64_t *rng, const double *cum, int n)
{
  if (!cum)
    return (int) (uniform01 (rng) * n) % n;
  const double u = uniform01 (rng) * cum[n - 1];
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (cum[mid] > u)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

static bool
draw_sample (uint64_t *rng, const double *cum, int n, int m, int *s)
{
  for (int i = 0; i < m; i++) {
    int tries = 0;
    for (;;) {
      s[i] = draw (rng, cum, n);
      bool dup = false;
      for (int j = 0; j < i; j++)
        dup |= s[j] == s[i];
      if (!dup)
        break;
      if (++tries > 64) {
        /* weights concentrated on fewer than m points: take the next free index */
        for (int v = 0; v < n; v++) {
          bool used = false;
          for (int j = 0; j < i; j++)
            used |= s[j] == v;
          if (!used) {
            s[i] = v;
            break;
          }
        }
        break;
      }
    }
  }
  return true;
}

/* ------------------------------------------------------------------ driver */

static void
identity (double h[9])
{
  static const double id[9] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 };
  memcpy (h, id, sizeof id);
}

GrFitResult
gr_fit_robust (const double *src, const double *dst, const double *weights, int n,
    const GrFitParams *params, GrFit *out, uint8_t *inlier_mask)
{
  GrFit res;
  memset (&res, 0, sizeof res);
  identity (res.h);
  res.rms = NAN;
  const int m = params ? model_min (params->model) : -1;
  if (inlier_mask && n > 0)
    memset (inlier_mask, 0, (size_t) n);
  if (!params || m < 0 || !src || !dst || n < m || n <= 0 || !(params->threshold > 0.0)) {
    res.result = GR_FIT_TOO_FEW;
    if (out)
      *out = res;
    return res.result;
  }
  for (int i = 0; i < 2 * n; i++)
    if (!isfinite (src[i]) || !isfinite (dst[i])) {
      /* non-finite coordinates are refused as a whole: the caller filters them */
      res.result = GR_FIT_DEGENERATE;
      if (out)
        *out = res;
      return res.result;
    }

  Ctx c;
  const bool have_ctx = ctx_open (&c, src, dst, n, params->model);
  c.t2 = params->threshold * params->threshold;
  int *inl = malloc (sizeof (int) * n);
  int *inl2 = malloc (sizeof (int) * n);
  double *cum = NULL;
  if (weights) {
    cum = malloc (sizeof (double) * n);
    double acc = 0.0;
    if (cum) {
      for (int i = 0; i < n; i++) {
        const double w = weights[i];
        acc += (isfinite (w) && w > 0.0) ? w : 0.0;
        cum[i] = acc;
      }
      if (!(acc > 0.0)) {
        free (cum);
        cum = NULL;
      }
    }
  }
  if (!have_ctx || !inl || !inl2) {
    if (have_ctx)
      ctx_close (&c);
    free (inl);
    free (inl2);
    free (cum);
    res.result = GR_FIT_DEGENERATE;
    if (out)
      *out = res;
    return res.result;
  }

  /* a wholly degenerate set never gives a hypothesis: say so at once */
  bool all_degenerate = false;
  {
    for (int i = 0; i < n; i++)
      inl[i] = i;
    if (c.model == GR_MODEL_SIMILARITY) {
      double h[9];
      all_degenerate = !fit_similarity (&c, inl, n, h);
    } else if (c.model == GR_MODEL_AFFINE || c.model == GR_MODEL_HOMOGRAPHY) {
      all_degenerate = !spread_2d (c.sn, inl, n) || !spread_2d (c.dn, inl, n);
    }
  }

  double best[9];
  identity (best);
  double best_cost = INFINITY;
  int best_inl = 0;
  bool have = false;
  int iters = 0;
  long limit = params->max_iterations > 0 ? params->max_iterations : 1;
  uint64_t rng = params->seed ^ 0xD1B54A32D192ED03ull;
  const double conf = params->confidence > 0.0 && params->confidence < 1.0 ?
      params->confidence : 0.999;

  while (!all_degenerate && iters < limit) {
    iters++;
    int s[4];
    draw_sample (&rng, cum, n, m, s);
    if (sample_degenerate (&c, s))
      continue;
    double h[9];
    if (!fit_model (&c, s, m, true, false, h))
      continue;
    int k;
    double cost = score (&c, h, &k, NULL);
    if (!(cost < best_cost))
      continue;
    memcpy (best, h, sizeof best);
    best_cost = cost;
    best_inl = k;
    have = true;
    /* local optimisation: least squares on the inliers while it improves */
    for (int lo = 0; lo < 4; lo++) {
      int ki;
      score (&c, best, &ki, inl);
      if (ki <= m)
        break;
      double h2[9];
      if (!fit_model (&c, inl, ki, false, false, h2))
        break;
      int k2;
      const double c2 = score (&c, h2, &k2, NULL);
      if (!(c2 < best_cost))
        break;
      memcpy (best, h2, sizeof best);
      best_cost = c2;
      best_inl = k2;
    }
    /* adaptive stopping */
    const double w = (double) best_inl / n;
    const double pm = pow (w, m);
    long need;
    if (pm >= 1.0 - 1e-12)
      need = iters;
    else if (pm <= 0.0)
      need = limit;
    else {
      const double nd = log (1.0 - conf) / log (1.0 - pm);
      need = nd > (double) limit ? limit : (long) ceil (nd);
    }
    if (need < limit)
      limit = need > iters ? need : iters;
  }

  if (!have) {
    res.result = GR_FIT_DEGENERATE;
    res.iterations = iters;
  } else {
    /* final least squares on the inliers, repeated while the set changes */
    int k;
    score (&c, best, &k, inl);
    for (int rep = 0; rep < 3 && k >= m + 1; rep++) {
      double h2[9];
      if (!fit_model (&c, inl, k, false, true, h2))
        break;
      int k2;
      const double c2 = score (&c, h2, &k2, inl2);
      if (!(c2 <= best_cost * (1.0 + 1e-12) + 1e-300))
        break;
      bool same = k2 == k && memcmp (inl, inl2, sizeof (int) * k) == 0;
      memcpy (best, h2, sizeof best);
      best_cost = c2;
      memcpy (inl, inl2, sizeof (int) * k2);
      k = k2;
      if (same)
        break;
    }
    double se = 0.0;
    for (int i = 0; i < k; i++)
      se += err2 (best, src + 2 * inl[i], dst + 2 * inl[i]);
    memcpy (res.h, best, sizeof best);
    res.inliers = k;
    res.rms = k > 0 ? sqrt (se / k) : NAN;
    res.iterations = iters;
    res.result = k >= m + 1 ? GR_FIT_OK : GR_FIT_NO_CONSENSUS;
    if (inlier_mask)
      for (int i = 0; i < k; i++)
        inlier_mask[inl[i]] = 1;
  }
  ctx_close (&c);
  free (inl);
  free (inl2);
  free (cum);
  if (out)
    *out = res;
  return res.result;
}

/* ------------------------------------------------------------------ plausibility */

void
gr_plausible_params_init (GrPlausibleParams *p)
{
  memset (p, 0, sizeof *p);
  p->scale_tolerance = 1.5;
  p->heading_tolerance_deg = 20.0;
  p->max_anisotropy = 2.5;
}

/* The 2x2 Jacobian of h at (u, v); false when the point maps to infinity/behind. */
static bool
jacobian_at (const double h[9], double u, double v, double j[4])
{
  const double w = h[6] * u + h[7] * v + h[8];
  if (!(w > 1e-12) || !isfinite (w))
    return false;
  const double x = (h[0] * u + h[1] * v + h[2]) / w, y = (h[3] * u + h[4] * v + h[5]) / w;
  j[0] = (h[0] - h[6] * x) / w;
  j[1] = (h[1] - h[7] * x) / w;
  j[2] = (h[3] - h[6] * y) / w;
  j[3] = (h[4] - h[7] * y) / w;
  return isfinite (j[0]) && isfinite (j[1]) && isfinite (j[2]) && isfinite (j[3]);
}

/* Ratio of the singular values of a 2x2 matrix (>= 1; INFINITY when singular). */
static double
anisotropy_2x2 (const double j[4])
{
  const double a = j[0], b = j[1], c = j[2], d = j[3];
  const double s = a * a + b * b + c * c + d * d, det = fabs (a * d - b * c);
  const double disc = sqrt (fmax (0.0, s * s - 4.0 * det * det));
  const double s1 = sqrt (0.5 * (s + disc)), s2 = sqrt (fmax (0.0, 0.5 * (s - disc)));
  return s2 > 0.0 ? s1 / s2 : INFINITY;
}

unsigned
gr_fit_check_plausible (const double h[9], int width, int height,
    const GrPlausibleParams *params, GrPlausibility *out)
{
  GrPlausibleParams dp;
  if (!params) {
    gr_plausible_params_init (&dp);
    params = &dp;
  }
  GrPlausibility r = { NAN, NAN, NAN, NAN, NAN };
  unsigned f = 0;
  const double hn = h ? h[8] : NAN;
  double g[9];
  for (int i = 0; i < 9; i++) {
    g[i] = h ? h[i] : NAN;
    if (!isfinite (g[i]))
      f |= GR_PLAUSIBLE_NOT_FINITE;
  }
  /* a homography and its negative are the same map: make w positive at the centre */
  if (!f && g[6] * 0.5 * width + g[7] * 0.5 * height + hn < 0)
    for (int i = 0; i < 9; i++)
      g[i] = -g[i];
  const double pu[5] = { 0, (double) width, (double) width, 0, 0.5 * width };
  const double pv[5] = { 0, 0, (double) height, (double) height, 0.5 * height };
  double cx[4], cy[4], j[4];
  r.anisotropy = 1.0;
  r.min_det = INFINITY;
  for (int k = 0; k < 5 && !f; k++) {
    if (!jacobian_at (g, pu[k], pv[k], j)) {
      f |= GR_PLAUSIBLE_NOT_FINITE;
      break;
    }
    const double det = j[0] * j[3] - j[1] * j[2];
    r.min_det = fmin (r.min_det, det);
    r.anisotropy = fmax (r.anisotropy, anisotropy_2x2 (j));
    if (k < 4)
      gr_fit_apply (g, pu[k], pv[k], &cx[k], &cy[k]);
    else {
      r.scale = sqrt (fabs (det));
      double a = atan2 (-j[1], j[3]) * 180.0 / M_PI;
      r.heading_deg = a < 0 ? a + 360.0 : (a >= 360.0 ? 0.0 : a);
    }
  }
  if (f & GR_PLAUSIBLE_NOT_FINITE) {
    if (out)
      *out = r;
    return f;
  }
  if (!(r.min_det > 0.0) || !(r.anisotropy <= params->max_anisotropy))
    f |= GR_PLAUSIBLE_NEAR_SINGULAR;
  /* convex with the frame's orientation: every turn of the corner loop positive (the
   * frame's corners turn clockwise on screen, which is positive with y down) */
  double area2 = 0.0;
  for (int k = 0; k < 4; k++) {
    const int a = k, b = (k + 1) % 4, c = (k + 2) % 4;
    const double cross = (cx[b] - cx[a]) * (cy[c] - cy[b]) - (cy[b] - cy[a]) * (cx[c] - cx[b]);
    if (!(cross > 0.0))
      f |= GR_PLAUSIBLE_NON_CONVEX;
    area2 += cx[a] * cy[b] - cx[b] * cy[a];
  }
  const double area = 0.5 * area2;
  if (params->expected_scale > 0.0) {
    r.area_ratio = area / (params->expected_scale * params->expected_scale *
        (double) width * height);
    const double t2 = params->scale_tolerance * params->scale_tolerance;
    if (!(r.area_ratio <= t2 && r.area_ratio >= 1.0 / t2))
      f |= GR_PLAUSIBLE_AREA;
  }
  /* side ratios: top and bottom against the frame width, left and right against its
   * height; a footprint stretched one way beyond max_anisotropy is not a camera's */
  const double top = hypot (cx[1] - cx[0], cy[1] - cy[0]);
  const double bottom = hypot (cx[2] - cx[3], cy[2] - cy[3]);
  const double left = hypot (cx[3] - cx[0], cy[3] - cy[0]);
  const double right = hypot (cx[2] - cx[1], cy[2] - cy[1]);
  const double sx = 0.5 * (top + bottom) / width, sy = 0.5 * (left + right) / height;
  const double asp = sx > sy ? sx / fmax (sy, 1e-300) : sy / fmax (sx, 1e-300);
  if (!(asp <= params->max_anisotropy))
    f |= GR_PLAUSIBLE_ASPECT;
  if (params->has_heading) {
    double d = fmod (fabs (r.heading_deg - params->heading_deg), 360.0);
    d = d > 180.0 ? 360.0 - d : d;
    if (!(d <= params->heading_tolerance_deg))
      f |= GR_PLAUSIBLE_HEADING;
  }
  if (out)
    *out = r;
  return f;
}

/* ---- predicted error over the frame ------------------------------------------------ */

double
gr_fit_jackknife_error (const double h[9], const double *src,
    const uint8_t *inlier_mask, int n, int width, int height, int min_points,
    GrFitRefit refit, void *user)
{
  enum { BX = 3, BY = 3, GX = 9, GY = 7 };
  if (!h || !src || !refit || n < 1 || width < 1 || height < 1)
    return NAN;
  int *idx = malloc (sizeof (int) * n);
  /* the grid's positions under each leave-one-block-out fit, GX * GY * 2 a block */
  double *pos = malloc (sizeof (double) * BX * BY * GX * GY * 2);
  double result = NAN;
  if (!idx || !pos)
    goto out;
  /* the grid over the frame, pixel indices */
  double gx[GX], gy[GY];
  for (int i = 0; i < GX; i++)
    gx[i] = (width - 1.0) * i / (GX - 1);
  for (int j = 0; j < GY; j++)
    gy[j] = (height - 1.0) * j / (GY - 1);
  int nb = 0;
  for (int b = 0; b < BX * BY; b++) {
    int k = 0, left = 0;
    for (int i = 0; i < n; i++) {
      if (inlier_mask && !inlier_mask[i])
        continue;
      const int bx = (int) floor (src[2 * i] * BX / width);
      const int by = (int) floor (src[2 * i + 1] * BY / height);
      const int cell = (bx < 0 ? 0 : bx >= BX ? BX - 1 : bx) +
          BX * (by < 0 ? 0 : by >= BY ? BY - 1 : by);
      if (cell == b)
        left++;
      else
        idx[k++] = i;
    }
    double hb[9];
    if (!left)
      continue;                 /* an empty block changes nothing */
    if (k < min_points || !refit (user, idx, k, hb))
      goto out;                 /* the rest cannot carry the model: undetermined */
    for (int j = 0; j < GY; j++)
      for (int i = 0; i < GX; i++) {
        double *p = pos + (((size_t) nb * GY + j) * GX + i) * 2;
        if (!gr_fit_apply (hb, gx[i], gy[j], &p[0], &p[1]))
          goto out;
      }
    nb++;
  }
  if (nb < 2)
    goto out;
  double sum = 0.0;
  for (int j = 0; j < GY; j++)
    for (int i = 0; i < GX; i++) {
      double mx = 0.0, my = 0.0, v = 0.0;
      for (int b = 0; b < nb; b++) {
        const double *p = pos + (((size_t) b * GY + j) * GX + i) * 2;
        mx += p[0] / nb;
        my += p[1] / nb;
      }
      for (int b = 0; b < nb; b++) {
        const double *p = pos + (((size_t) b * GY + j) * GX + i) * 2;
        v += (p[0] - mx) * (p[0] - mx) + (p[1] - my) * (p[1] - my);
      }
      /* the jackknife's variance, in control pixels, then in frame pixels through the
       * transform's local scale there */
      double jac[4];
      if (!jacobian_at (h, gx[i], gy[j], jac))
        goto out;
      const double det = jac[0] * jac[3] - jac[1] * jac[2];
      if (!(fabs (det) > 1e-300))
        goto out;
      sum += (nb - 1.0) / nb * v / fabs (det);
    }
  result = sqrt (sum / (GX * GY));
out:
  free (idx);
  free (pos);
  return result;
}

/* gr_fit_predicted_error's refit: the model by least squares on the points */
static bool
refit_model (void *user, const int *idx, int k, double h[9])
{
  return fit_model ((Ctx *) user, idx, k, false, false, h);
}

double
gr_fit_predicted_error (const double h[9], GrModel model, const double *src,
    const double *dst, const uint8_t *inlier_mask, int n, int width, int height)
{
  if (!h || !src || !dst || n < 1 || width < 1 || height < 1)
    return NAN;
  Ctx c;
  if (!ctx_open (&c, src, dst, n, model))
    return NAN;
  const double e = gr_fit_jackknife_error (h, src, inlier_mask, n, width, height,
      2 * model_min (model), refit_model, &c);
  ctx_close (&c);
  return e;
}
