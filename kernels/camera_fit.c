/* The calibrated camera's frame -> control homography (camera_fit.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "camera_fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"

#define NPARAM 6
#define MAX_ITERATIONS 60

/* R = exp ([w]x) (Rodrigues), row-major */
static void
rotation_exp (const double w[3], double R[9])
{
  const double th = sqrt (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
  const double a = th > 1e-12 ? sin (th) / th : 1.0 - th * th / 6.0;
  const double b = th > 1e-6 ? (1.0 - cos (th)) / (th * th) : 0.5 - th * th / 24.0;
  const double K[9] = { 0, -w[2], w[1], w[2], 0, -w[0], -w[1], w[0], 0 };
  double K2[9];
  gr_mat3_mul (K, K, K2);
  for (int i = 0; i < 9; i++)
    R[i] = (i % 4 == 0 ? 1.0 : 0.0) + a * K[i] + b * K2[i];
}

typedef struct {
  double Kmat[9];               /* intrinsics */
  double R0[9];                 /* the start's rotation (columns u1 u2 u3) */
  const double *src, *dst;
  const int *idx;
  int k;
} Problem;

/* params: rotation increment (3) after R0, B's third column (3) -> h (h[8] = 1) */
static bool
params_to_h (const Problem *p, const double x[NPARAM], double h[9])
{
  double dR[9], R[9];
  rotation_exp (x, dR);
  gr_mat3_mul (p->R0, dR, R);
  /* B = [R e1, R e2, t]; H^-1 = K B */
  const double B[9] = { R[0], R[1], x[3], R[3], R[4], x[4], R[6], R[7], x[5] };
  double KB[9];
  gr_mat3_mul (p->Kmat, B, KB);
  if (!gr_mat3_inverse (KB, h) || !(fabs (h[8]) > 1e-300))
    return false;
  const double s = 1.0 / h[8];
  for (int i = 0; i < 9; i++)
    h[i] *= s;
  return true;
}

/* residuals (2 per point, dst pixels); false when a point maps to infinity */
static bool
residuals (const Problem *p, const double x[NPARAM], double *r)
{
  double h[9];
  if (!params_to_h (p, x, h))
    return false;
  for (int j = 0; j < p->k; j++) {
    const int i = p->idx ? p->idx[j] : j;
    double u, v;
    if (!gr_fit_apply (h, p->src[2 * i], p->src[2 * i + 1], &u, &v))
      return false;
    r[2 * j] = u - p->dst[2 * i];
    r[2 * j + 1] = v - p->dst[2 * i + 1];
  }
  return true;
}

static double
sum_squares (const double *r, int m)
{
  double s = 0.0;
  for (int i = 0; i < m; i++)
    s += r[i] * r[i];
  return s;
}

/* The start: B0 = K^-1 h0^-1, its first two columns brought to the nearest orthonormal
 * pair (polar decomposition of the 3 x 2 matrix) at their common length s, the third
 * column divided by s. */
static bool
start_from (Problem *p, const double h0[9], double x[NPARAM])
{
  double Hi[9], Ki[9], B[9];
  if (!gr_mat3_inverse (h0, Hi) || !gr_mat3_inverse (p->Kmat, Ki))
    return false;
  gr_mat3_mul (Ki, Hi, B);
  const double b1[3] = { B[0], B[3], B[6] }, b2[3] = { B[1], B[4], B[7] };
  /* S = M^T M; sqrt(S) = (S + sqrt(det S) I) / sqrt(tr S + 2 sqrt(det S)) (2 x 2) */
  const double a = b1[0] * b1[0] + b1[1] * b1[1] + b1[2] * b1[2];
  const double c = b2[0] * b2[0] + b2[1] * b2[1] + b2[2] * b2[2];
  const double bb = b1[0] * b2[0] + b1[1] * b2[1] + b1[2] * b2[2];
  const double det = a * c - bb * bb;
  if (!(det > 0.0) || !isfinite (det))
    return false;
  const double sd = sqrt (det), den = sqrt (a + c + 2.0 * sd);
  const double P[4] = { (a + sd) / den, bb / den, bb / den, (c + sd) / den };
  const double pdet = P[0] * P[3] - P[1] * P[2];
  if (!(pdet > 0.0))
    return false;
  const double Pi[4] = { P[3] / pdet, -P[1] / pdet, -P[2] / pdet, P[0] / pdet };
  double u1[3], u2[3];
  for (int i = 0; i < 3; i++) {
    u1[i] = b1[i] * Pi[0] + b2[i] * Pi[2];
    u2[i] = b1[i] * Pi[1] + b2[i] * Pi[3];
  }
  const double u3[3] = { u1[1] * u2[2] - u1[2] * u2[1], u1[2] * u2[0] - u1[0] * u2[2],
    u1[0] * u2[1] - u1[1] * u2[0]
  };
  const double R0[9] = { u1[0], u2[0], u3[0], u1[1], u2[1], u3[1], u1[2], u2[2], u3[2] };
  memcpy (p->R0, R0, sizeof R0);
  const double s = 0.5 * (P[0] + P[3]);
  if (!(s > 0.0))
    return false;
  x[0] = x[1] = x[2] = 0.0;
  x[3] = B[2] / s;
  x[4] = B[5] / s;
  x[5] = B[8] / s;
  return true;
}

bool
gr_camera_fit_homography (const GrCamera *cam, const double h0[9],
    const double *src, const double *dst, const int *idx, int k, int n, double out[9],
    double *rms)
{
  if (!cam || !h0 || !src || !dst || !out || !(cam->fx > 0.0) || !(cam->fy > 0.0) ||
      !isfinite (cam->cx) || !isfinite (cam->cy))
    return false;
  if (!idx)
    k = n;
  if (k < 4)
    return false;
  Problem p = {
    .Kmat = { cam->fx, 0, cam->cx, 0, cam->fy, cam->cy, 0, 0, 1 },
    .src = src, .dst = dst, .idx = idx, .k = k
  };
  double x[NPARAM];
  if (!start_from (&p, h0, x))
    return false;
  const int m = 2 * k;
  double *r = malloc (sizeof (double) * m);
  double *rt = malloc (sizeof (double) * m);
  double *J = malloc (sizeof (double) * m * NPARAM);
  bool ok = false;
  if (!r || !rt || !J || !residuals (&p, x, r))
    goto out;
  double cost = sum_squares (r, m), lambda = 1e-3;
  for (int it = 0; it < MAX_ITERATIONS; it++) {
    /* the Jacobian by central differences: 6 parameters, cheap beside the matching */
    for (int q = 0; q < NPARAM; q++) {
      const double step = 1e-6 * fmax (1.0, fabs (x[q]));
      double xp[NPARAM], xm[NPARAM];
      memcpy (xp, x, sizeof xp);
      memcpy (xm, x, sizeof xm);
      xp[q] += step;
      xm[q] -= step;
      if (!residuals (&p, xp, rt))
        goto out;
      for (int i = 0; i < m; i++)
        J[i * NPARAM + q] = rt[i];
      if (!residuals (&p, xm, rt))
        goto out;
      for (int i = 0; i < m; i++)
        J[i * NPARAM + q] = (J[i * NPARAM + q] - rt[i]) / (2.0 * step);
    }
    double A[NPARAM * NPARAM] = { 0 }, g[NPARAM] = { 0 };
    for (int i = 0; i < m; i++)
      for (int a = 0; a < NPARAM; a++) {
        g[a] -= J[i * NPARAM + a] * r[i];
        for (int b = 0; b <= a; b++)
          A[a * NPARAM + b] += J[i * NPARAM + a] * J[i * NPARAM + b];
      }
    for (int a = 0; a < NPARAM; a++)
      for (int b = a + 1; b < NPARAM; b++)
        A[a * NPARAM + b] = A[b * NPARAM + a];
    bool stepped = false;
    for (int tries = 0; tries < 10 && !stepped; tries++) {
      double Ad[NPARAM * NPARAM], dx[NPARAM], xn[NPARAM];
      memcpy (Ad, A, sizeof Ad);
      for (int a = 0; a < NPARAM; a++)
        Ad[a * NPARAM + a] *= 1.0 + lambda;
      if (gr_camera_solve_spd (Ad, g, NPARAM, dx)) {
        for (int a = 0; a < NPARAM; a++)
          xn[a] = x[a] + dx[a];
        if (residuals (&p, xn, rt)) {
          const double cn = sum_squares (rt, m);
          if (cn < cost) {
            const double gain = cost - cn;
            memcpy (x, xn, sizeof xn);
            memcpy (r, rt, sizeof (double) * m);
            cost = cn;
            lambda = fmax (lambda * 0.1, 1e-12);
            stepped = true;
            if (gain <= 1e-12 * (cost + 1e-300))
              it = MAX_ITERATIONS;      /* converged */
            continue;
          }
        }
      }
      lambda *= 10.0;
    }
    if (!stepped)
      break;                    /* no step lowers the cost: at the minimum */
  }
  ok = params_to_h (&p, x, out) && isfinite (cost);
  for (int i = 0; ok && i < 9; i++)
    ok = isfinite (out[i]);
  if (ok && rms)
    *rms = sqrt (cost / k);
out:
  free (r);
  free (rt);
  free (J);
  return ok;
}

typedef struct {
  const GrCamera *cam;
  const double *h, *src, *dst;
  int n;
} Refit;

static bool
refit_camera (void *user, const int *idx, int k, double h[9])
{
  const Refit *f = user;
  return gr_camera_fit_homography (f->cam, f->h, f->src, f->dst, idx, k, f->n, h, NULL);
}

double
gr_camera_fit_predicted_error (const GrCamera *cam, const double h[9],
    const double *src, const double *dst, const uint8_t *inlier_mask, int n, int width,
    int height)
{
  if (!cam || !h || !src || !dst)
    return NAN;
  Refit f = { cam, h, src, dst, n };
  return gr_fit_jackknife_error (h, src, inlier_mask, n, width, height, 8,
      refit_camera, &f);
}
