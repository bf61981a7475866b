/* Geodesic shooting on CUDA against the CPU and float64 references (suite gpu; exits
 * 77 = skipped without a usable CUDA device):
 *  - CUDA float32 (float64 accumulation) losses within 1e-6 relative of the CPU's, at
 *    the seed's settings (n = 1847, 3-D, T = 40, sigma 1.5, lambda 5e5) and others;
 *  - the CUDA gradient against central finite differences of the float64 CPU loss
 *    (full gradient for n = 60; directional derivatives at n = 1847) within 1e-5;
 *  - float64 mode on CUDA against the CPU float64 mode;
 *  - extra points, determinism, and ground-truth recovery in 2-D and 3-D on CUDA.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shoot.h"
#include "test_check.h"
#include "shoot_testdata.h"

typedef struct {
  size_t n;
  int dim;
  double *q0, *tgt, *p;   /* template, target, evaluation point */
} Problem;

/* template: curve or bunny; target: shot with a known momentum; p: half of it plus a
 * rough component (a point in the middle of a fit, not a special one) */
static Problem
problem (size_t n, int dim, double scale)
{
  Problem pr = { n, dim, malloc (sizeof (double) * n * dim),
    malloc (sizeof (double) * n * dim), malloc (sizeof (double) * n * dim) };
  double *pt = malloc (sizeof (double) * n * dim);
  if (dim == 2)
    td_curve2d (n, scale, pr.q0);
  else
    td_bunny3d (n, scale, pr.q0);
  td_smooth_momentum (pr.q0, n, dim, dim == 2 ? 0.12 : 0.05, 0.35, pt);
  GrShootParams p;
  gr_shoot_params_init (&p);
  p.n = n;
  p.dim = dim;
  p.precision = GR_SHOOT_FLOAT64;
  GrShoot *s = gr_shoot_new (&p, GR_BACKEND_CPU, -1, NULL, NULL, 0);
  gr_shoot_set_template (s, pr.q0, NULL, 0);
  gr_shoot_flow (s, pt, pr.tgt, NULL, NULL, 0, NULL, NULL, 0);
  gr_shoot_free (s);
  uint64_t st = 99 + n;
  for (size_t i = 0; i < n * dim; i++)
    pr.p[i] = 0.5 * pt[i] + 0.01 * td_uniform (&st);
  free (pt);
  return pr;
}

static void
problem_free (Problem *pr)
{
  free (pr->q0);
  free (pr->tgt);
  free (pr->p);
}

static GrShoot *
engine (const Problem *pr, GrBackend be, GrShootPrecision prec, GrShootIntegrator integ,
    double sigma, int T, double lambda)
{
  GrShootParams p;
  gr_shoot_params_init (&p);
  p.n = pr->n;
  p.dim = pr->dim;
  p.sigma = sigma;
  p.time_points = T;
  p.lambda = lambda;
  p.precision = prec;
  p.integrator = integ;
  char err[256] = "";
  GrStatus st;
  GrShoot *s = gr_shoot_new (&p, be, -1, &st, err, sizeof err);
  if (!s || gr_shoot_set_template (s, pr->q0, err, sizeof err) != GR_OK ||
      gr_shoot_set_target (s, pr->tgt, err, sizeof err) != GR_OK) {
    fprintf (stderr, "engine: %s\n", err);
    exit (1);
  }
  return s;
}

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* CUDA f32 vs CPU f32 and CPU f64 (and CUDA f64 vs CPU f64) */
static void
compare (size_t n, int dim, GrShootIntegrator integ, int T, double lambda, double scale)
{
  Problem pr = problem (n, dim, scale);
  size_t m = n * dim;
  double *g[4];
  GrShootLoss l[4];
  const GrBackend be[4] = { GR_BACKEND_CUDA, GR_BACKEND_CPU, GR_BACKEND_CPU,
    GR_BACKEND_CUDA };
  const GrShootPrecision pr_[4] = { GR_SHOOT_FLOAT32, GR_SHOOT_FLOAT32, GR_SHOOT_FLOAT64,
    GR_SHOOT_FLOAT64 };
  for (int k = 0; k < 4; k++) {
    g[k] = malloc (sizeof (double) * m);
    for (size_t i = 0; i < m; i++)
      g[k][i] = NAN;          /* poison */
    GrShoot *s = engine (&pr, be[k], pr_[k], integ, 1.5, T, lambda);
    char err[256] = "";
    CHECK (gr_shoot_loss_grad (s, pr.p, g[k], &l[k], err, sizeof err) == GR_OK, "%s", err);
    gr_shoot_free (s);
  }
  double l_cc = fabs (l[0].loss - l[1].loss) / fabs (l[1].loss);
  double l_c64 = fabs (l[0].loss - l[2].loss) / fabs (l[2].loss);
  double k_c64 = fabs (l[0].kinetic - l[2].kinetic) / fabs (l[2].kinetic);
  double g_cc = td_rel_l2 (g[0], g[1], m), g_c64 = td_rel_l2 (g[0], g[2], m);
  double l_64 = fabs (l[3].loss - l[2].loss) / fabs (l[2].loss);
  double g_64 = td_rel_l2 (g[3], g[2], m);
  printf ("n=%zu %dD %s T=%d lambda=%g: loss CUDA/CPU f32 %.2e, CUDA f32/CPU f64 %.2e "
      "(kinetic %.2e); gradient %.2e / %.2e; CUDA f64 vs CPU f64: loss %.2e grad %.2e\n",
      n, dim, integ == GR_SHOOT_EULER ? "euler" : "ralston", T, lambda, l_cc, l_c64, k_c64,
      g_cc, g_c64, l_64, g_64);
  CHECK (l_cc <= 1e-6, "CUDA vs CPU float32 loss: %.3e", l_cc);
  CHECK (l_c64 <= 1e-6, "CUDA vs CPU float64 loss: %.3e", l_c64);
  CHECK (k_c64 <= 1e-6, "CUDA vs CPU float64 kinetic: %.3e", k_c64);
  CHECK (g_c64 <= 1e-5, "CUDA gradient vs CPU float64: %.3e", g_c64);
  CHECK (l_64 <= 1e-12 && g_64 <= 1e-10, "CUDA float64 mode vs CPU float64: %.2e %.2e",
      l_64, g_64);
  for (int k = 0; k < 4; k++)
    free (g[k]);
  problem_free (&pr);
}

/* the CUDA float32 gradient against central differences of the float64 CPU loss */
static void
fd_full (size_t n, int dim)
{
  Problem pr = problem (n, dim, 3.0);
  size_t m = n * dim;
  double *g = malloc (sizeof (double) * m), *fd = malloc (sizeof (double) * m);
  GrShoot *cu = engine (&pr, GR_BACKEND_CUDA, GR_SHOOT_FLOAT32, GR_SHOOT_EULER, 1.5, 40,
      5e5);
  GrShoot *c64 = engine (&pr, GR_BACKEND_CPU, GR_SHOOT_FLOAT64, GR_SHOOT_EULER, 1.5, 40,
      5e5);
  GrShootLoss l;
  CHECK (gr_shoot_loss_grad (cu, pr.p, g, &l, NULL, 0) == GR_OK, "cuda eval");
  const double h = 1e-6;
  for (size_t i = 0; i < m; i++) {
    double keep = pr.p[i];
    GrShootLoss lp, lm;
    pr.p[i] = keep + h;
    gr_shoot_loss_grad (c64, pr.p, NULL, &lp, NULL, 0);
    pr.p[i] = keep - h;
    gr_shoot_loss_grad (c64, pr.p, NULL, &lm, NULL, 0);
    pr.p[i] = keep;
    fd[i] = (lp.loss - lm.loss) / (2 * h);
  }
  double e = td_rel_l2 (g, fd, m);
  printf ("CUDA gradient vs float64 central differences, n=%zu %dD, seed settings: "
      "%.3e\n", n, dim, e);
  CHECK (e <= 1e-5, "CUDA gradient vs float64 finite differences: %.3e", e);
  gr_shoot_free (cu);
  gr_shoot_free (c64);
  free (g);
  free (fd);
  problem_free (&pr);
}

/* seed size: directional derivatives along random directions */
static void
fd_directional (void)
{
  Problem pr = problem (1847, 3, 10.0);
  size_t m = pr.n * 3;
  double *g = malloc (sizeof (double) * m), *v = malloc (sizeof (double) * m);
  double *pp = malloc (sizeof (double) * m);
  GrShoot *cu = engine (&pr, GR_BACKEND_CUDA, GR_SHOOT_FLOAT32, GR_SHOOT_EULER, 1.5, 40,
      5e5);
  GrShoot *c64 = engine (&pr, GR_BACKEND_CPU, GR_SHOOT_FLOAT64, GR_SHOOT_EULER, 1.5, 40,
      5e5);
  GrShootLoss l;
  CHECK (gr_shoot_loss_grad (cu, pr.p, g, &l, NULL, 0) == GR_OK, "cuda eval");
  double gn = 0;
  for (size_t i = 0; i < m; i++)
    gn += g[i] * g[i];
  gn = sqrt (gn);
  uint64_t st = 7;
  double worst = 0;
  for (int k = 0; k < 3; k++) {
    double vn = 0, gv = 0;
    for (size_t i = 0; i < m; i++) {
      /* half random, half along the gradient: a direction the loss changes along */
      v[i] = td_uniform (&st) + (k == 0 ? 0.0 : g[i] / gn * sqrt ((double) m));
      vn += v[i] * v[i];
    }
    vn = sqrt (vn);
    for (size_t i = 0; i < m; i++) {
      v[i] /= vn;
      gv += g[i] * v[i];
    }
    const double h = 1e-6;
    GrShootLoss lp, lm;
    for (size_t i = 0; i < m; i++)
      pp[i] = pr.p[i] + h * v[i];
    gr_shoot_loss_grad (c64, pp, NULL, &lp, NULL, 0);
    for (size_t i = 0; i < m; i++)
      pp[i] = pr.p[i] - h * v[i];
    gr_shoot_loss_grad (c64, pp, NULL, &lm, NULL, 0);
    double fd = (lp.loss - lm.loss) / (2 * h);
    double e = fabs (gv - fd) / fmax (fabs (fd), 1e-300);
    double e2 = fabs (gv - fd) / gn;
    printf ("seed size, direction %d: g.v %.9e, float64 FD %.9e, rel %.2e (%.2e of |g|)\n",
        k, gv, fd, e, e2);
    worst = fmax (worst, k == 0 ? e2 : e);
  }
  CHECK (worst <= 1e-5, "seed-size directional derivatives: %.3e", worst);
  gr_shoot_free (cu);
  gr_shoot_free (c64);
  free (g);
  free (v);
  free (pp);
  problem_free (&pr);
}

static void
test_flow_and_determinism (void)
{
  Problem pr = problem (700, 3, 6.0);
  size_t m = pr.n * 3;
  double *a = malloc (sizeof (double) * m), *b = malloc (sizeof (double) * m);
  double *e1 = malloc (sizeof (double) * m), *e2 = malloc (sizeof (double) * m);
  GrShoot *cu = engine (&pr, GR_BACKEND_CUDA, GR_SHOOT_FLOAT32, GR_SHOOT_RALSTON, 1.5, 30,
      1e3);
  GrShoot *cpu = engine (&pr, GR_BACKEND_CPU, GR_SHOOT_FLOAT32, GR_SHOOT_RALSTON, 1.5, 30,
      1e3);
  CHECK (gr_shoot_flow (cu, pr.p, a, NULL, pr.q0, pr.n, e1, NULL, 0) == GR_OK, "cuda flow");
  CHECK (gr_shoot_flow (cpu, pr.p, b, NULL, pr.q0, pr.n, e2, NULL, 0) == GR_OK, "cpu flow");
  double d = 0, de = 0;
  for (size_t i = 0; i < m; i++) {
    d = fmax (d, fabs (a[i] - b[i]));
    de = fmax (de, fmax (fabs (e1[i] - a[i]), fabs (e2[i] - a[i])));
  }
  printf ("flow CUDA vs CPU (ralston): max |dq1| %.2e; extra points vs landmarks %.2e\n",
      d, de);
  CHECK (d < 1e-4, "q(1) CUDA vs CPU: %g", d);
  CHECK (de < 1e-4, "extra points follow the landmarks: %g", de);
  GrShootLoss l1, l2;
  gr_shoot_loss_grad (cu, pr.p, a, &l1, NULL, 0);
  gr_shoot_loss_grad (cu, pr.p, b, &l2, NULL, 0);
  CHECK (l1.loss == l2.loss && memcmp (a, b, sizeof (double) * m) == 0,
      "two CUDA evaluations agree bit for bit");
  gr_shoot_free (cu);
  gr_shoot_free (cpu);
  free (a);
  free (b);
  free (e1);
  free (e2);
  problem_free (&pr);
}

static void
test_recovery (int dim, size_t n, GrShootIntegrator integ, double amp, int max_it)
{
  size_t m = n * dim;
  double *q0 = malloc (sizeof (double) * m), *pt = malloc (sizeof (double) * m);
  double *tgt = malloc (sizeof (double) * m), *p = calloc (m, sizeof (double));
  double *q1 = malloc (sizeof (double) * m);
  if (dim == 2) {
    td_curve2d (n, 12.0, q0);
    td_smooth_momentum (q0, n, 2, amp, 0.2, pt);
  } else {
    td_bunny3d (n, 8.0, q0);
    td_smooth_momentum (q0, n, 3, amp, 0.2, pt);
  }
  Problem pr = { n, dim, q0, q0, NULL };
  GrShoot *s = engine (&pr, GR_BACKEND_CUDA, GR_SHOOT_FLOAT32, integ, 1.5, 20, 1e4);
  CHECK (gr_shoot_flow (s, pt, tgt, NULL, NULL, 0, NULL, NULL, 0) == GR_OK, "shoot");
  gr_shoot_set_target (s, tgt, NULL, 0);
  double before = td_mean_distance (q0, tgt, n, dim);
  GrLbfgsParams lp;
  gr_lbfgs_params_init (&lp);
  lp.max_iterations = max_it;
  lp.gtol_rel = 1e-8;
  lp.ftol = 1e-12;
  GrShootFitResult r;
  char err[256] = "";
  CHECK (gr_shoot_fit (s, p, &lp, NULL, NULL, &r, err, sizeof err) == GR_OK, "%s", err);
  gr_shoot_flow (s, p, q1, NULL, NULL, 0, NULL, NULL, 0);
  double after = td_mean_distance (q1, tgt, n, dim);
  printf ("CUDA recovery %dD n=%zu: mean distance %.4f -> %.6f (%.3f%%), %d iterations, "
      "%d evaluations, %s, %.3f s\n", dim, n, before, after, 100 * after / before,
      r.iterations, r.evaluations, gr_lbfgs_result_string (r.result), r.seconds);
  CHECK (before > 0.3, "the known momentum moves the shape: %g", before);
  CHECK (after <= 0.05 * before, "CUDA recovery %dD: %g -> %g", dim, before, after);
  gr_shoot_free (s);
  free (q0);
  free (pt);
  free (tgt);
  free (p);
  free (q1);
}

static void
timing (void)
{
  Problem pr = problem (1847, 3, 10.0);
  GrShoot *s = engine (&pr, GR_BACKEND_CUDA, GR_SHOOT_FLOAT32, GR_SHOOT_EULER, 1.5, 40,
      5e5);
  double *g = malloc (sizeof (double) * pr.n * 3);
  GrShootLoss l;
  for (int i = 0; i < 5; i++)
    gr_shoot_loss_grad (s, pr.p, g, &l, NULL, 0);
  double t0 = now ();
  for (int i = 0; i < 50; i++)
    gr_shoot_loss_grad (s, pr.p, g, &l, NULL, 0);
  printf ("seed size (n=1847, 3D, T=40): %.3f ms per loss+gradient evaluation on %s\n",
      (now () - t0) / 50 * 1e3, gr_shoot_device_description (s));
  free (g);
  gr_shoot_free (s);
  problem_free (&pr);
}

int
main (void)
{
  int dev = gr_cuda_device_count ();
  if (dev <= 0) {
    printf ("SKIP: %s\n", gr_cuda_compiled () ? "no usable CUDA device" :
        "built without CUDA");
    return 77;
  }
  if (getenv ("GEOREG_TEST_QUICK")) {
    /* a small run for compute-sanitizer */
    compare (300, 2, GR_SHOOT_EULER, 10, 5e5, 6.0);
    compare (100, 3, GR_SHOOT_RALSTON, 6, 1e4, 3.0);
    compare (37, 3, GR_SHOOT_EULER, 5, 10.0, 2.0);
    fd_full (12, 3);
    test_recovery (2, 100, GR_SHOOT_EULER, 0.1, 200);
    return CHECK_DONE ();
  }
  compare (1847, 3, GR_SHOOT_EULER, 40, 5e5, 10.0);
  compare (300, 2, GR_SHOOT_EULER, 40, 5e5, 6.0);
  compare (500, 3, GR_SHOOT_RALSTON, 20, 1e4, 6.0);
  compare (1000, 2, GR_SHOOT_RALSTON, 15, 1e3, 12.0);
  compare (37, 3, GR_SHOOT_EULER, 5, 10.0, 2.0);
  fd_full (60, 3);
  fd_full (50, 2);
  fd_directional ();
  test_flow_and_determinism ();
  test_recovery (2, 300, GR_SHOOT_EULER, 0.06, 400);
  test_recovery (3, 1000, GR_SHOOT_EULER, 0.03, 400);
  test_recovery (3, 400, GR_SHOOT_RALSTON, 0.08, 400);
  timing ();
  return CHECK_DONE ();
}
