/* Geodesic shooting (CPU) and L-BFGS:
 *  - the adjoint gradient against central finite differences in float64, 2-D and 3-D,
 *    Euler and Ralston;
 *  - float32 mode (float64 accumulation) against float64 at the seed's settings;
 *  - flowing extra points reproduces the landmarks' own flow;
 *  - L-BFGS on Rosenbrock (2 and 100 unknowns), an ill-conditioned quadratic and a
 *    function with a restricted domain;
 *  - ground-truth recovery: shoot a template with a known smooth momentum, register
 *    back from p0 = 0; the mean landmark distance must drop to <= 5%;
 *  - argument checks and the backend choice.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shoot.h"
#include "lbfgs.h"
#include "test_check.h"
#include "shoot_testdata.h"

static GrShoot *
make (size_t n, int dim, double sigma, int T, double lambda, GrShootIntegrator integ,
    GrShootPrecision prec, const double *q0, const double *tgt)
{
  GrShootParams p;
  gr_shoot_params_init (&p);
  p.n = n;
  p.dim = dim;
  p.sigma = sigma;
  p.time_points = T;
  p.lambda = lambda;
  p.integrator = integ;
  p.precision = prec;
  char err[256] = "";
  GrStatus st;
  GrShoot *s = gr_shoot_new (&p, GR_BACKEND_CPU, -1, &st, err, sizeof err);
  if (!s) {
    fprintf (stderr, "gr_shoot_new: %s\n", err);
    exit (1);
  }
  if (gr_shoot_set_template (s, q0, err, sizeof err) != GR_OK ||
      gr_shoot_set_target (s, tgt, err, sizeof err) != GR_OK) {
    fprintf (stderr, "set points: %s\n", err);
    exit (1);
  }
  return s;
}

static double
loss_at (GrShoot *s, const double *p)
{
  GrShootLoss l;
  char err[256];
  if (gr_shoot_loss_grad (s, p, NULL, &l, err, sizeof err) != GR_OK) {
    fprintf (stderr, "loss: %s\n", err);
    exit (1);
  }
  return l.loss;
}

/* random points in a box of side `box`, random targets nearby, random momenta */
static void
random_problem (uint64_t seed, size_t n, int dim, double box, double *q0, double *tgt,
    double *p)
{
  uint64_t st = seed;
  for (size_t i = 0; i < n * dim; i++) {
    q0[i] = 0.5 * box * td_uniform (&st);
    tgt[i] = q0[i] + 0.6 * td_uniform (&st);
    p[i] = 0.5 * td_uniform (&st);
  }
}

static void
test_gradient_fd (int dim, GrShootIntegrator integ)
{
  const size_t n = 9;
  const int T = 8;
  double q0[27], tgt[27], p[27], g[27], fd[27];
  random_problem (42 + dim + 10 * integ, n, dim, 3.0, q0, tgt, p);
  GrShoot *s = make (n, dim, 1.0, T, 20.0, integ, GR_SHOOT_FLOAT64, q0, tgt);
  GrShootLoss l;
  CHECK (gr_shoot_loss_grad (s, p, g, &l, NULL, 0) == GR_OK, "loss_grad");
  CHECK (fabs (l.loss - (l.kinetic + 10.0 * l.mismatch)) <= 1e-12 * fabs (l.loss),
      "loss = kinetic + lambda/2 mismatch");
  const double h = 1e-5;
  size_t m = n * dim;
  for (size_t i = 0; i < m; i++) {
    double keep = p[i];
    p[i] = keep + h;
    double fp = loss_at (s, p);
    p[i] = keep - h;
    double fm = loss_at (s, p);
    p[i] = keep;
    fd[i] = (fp - fm) / (2 * h);
  }
  double e = td_rel_l2 (g, fd, m);
  printf ("fd gradient %dD %s: rel err %.3e (|g| %.3e)\n", dim,
      integ == GR_SHOOT_EULER ? "euler" : "ralston", e, sqrt (l.loss));
  CHECK (e < 1e-7, "float64 gradient vs central differences %dD integ %d: %.3e", dim,
      integ, e);
  gr_shoot_free (s);
}

/* float32 mode vs float64 mode at the seed's settings on a 3-D surface */
static void
test_f32_vs_f64 (GrShootIntegrator integ)
{
  const size_t n = 300;
  double *q0 = malloc (sizeof (double) * n * 3), *tgt = malloc (sizeof (double) * n * 3);
  double *p = malloc (sizeof (double) * n * 3);
  double *g32 = malloc (sizeof (double) * n * 3), *g64 = malloc (sizeof (double) * n * 3);
  td_bunny3d (n, 5.0, q0);
  td_smooth_momentum (q0, n, 3, 0.3, 0.4, p);
  for (size_t i = 0; i < n * 3; i++)
    tgt[i] = q0[i] * 1.05 + 0.2;
  GrShoot *s32 = make (n, 3, 1.5, 40, 5e5, integ, GR_SHOOT_FLOAT32, q0, tgt);
  GrShoot *s64 = make (n, 3, 1.5, 40, 5e5, integ, GR_SHOOT_FLOAT64, q0, tgt);
  GrShootLoss l32, l64;
  CHECK (gr_shoot_loss_grad (s32, p, g32, &l32, NULL, 0) == GR_OK, "f32 eval");
  CHECK (gr_shoot_loss_grad (s64, p, g64, &l64, NULL, 0) == GR_OK, "f64 eval");
  double el = fabs (l32.loss - l64.loss) / fabs (l64.loss);
  double ek = fabs (l32.kinetic - l64.kinetic) / fabs (l64.kinetic);
  double eg = td_rel_l2 (g32, g64, n * 3);
  printf ("f32 vs f64 (%s): loss %.3e kinetic %.3e gradient %.3e\n",
      integ == GR_SHOOT_EULER ? "euler" : "ralston", el, ek, eg);
  CHECK (el < 1e-6, "float32 loss vs float64: %.3e", el);
  CHECK (ek < 1e-6, "float32 kinetic vs float64: %.3e", ek);
  CHECK (eg < 1e-5, "float32 gradient vs float64: %.3e", eg);
  gr_shoot_free (s32);
  gr_shoot_free (s64);
  free (q0);
  free (tgt);
  free (p);
  free (g32);
  free (g64);
}

static void
test_extra_points (GrShootIntegrator integ)
{
  const size_t n = 40;
  double q0[80], p[80], q1[80], e1[80], tgt[80];
  td_curve2d (n, 4.0, q0);
  td_smooth_momentum (q0, n, 2, 0.3, 0.5, p);
  memcpy (tgt, q0, sizeof tgt);
  GrShoot *s = make (n, 2, 1.0, 30, 100.0, integ, GR_SHOOT_FLOAT64, q0, tgt);
  CHECK (gr_shoot_flow (s, p, q1, NULL, q0, n, e1, NULL, 0) == GR_OK, "flow");
  double e = 0, moved = 0;
  for (size_t i = 0; i < 2 * n; i++) {
    e = fmax (e, fabs (q1[i] - e1[i]));
    moved = fmax (moved, fabs (q1[i] - q0[i]));
  }
  CHECK (moved > 0.1, "the flow moves the points (%g)", moved);
  CHECK (e < 1e-10, "extra points on the landmarks follow them: %.3e", e);
  gr_shoot_free (s);
}

/* ---- L-BFGS ---------------------------------------------------------------------- */

static double
rosenbrock (void *user, const double *x, double *g, int n, int *abort_run)
{
  double f = 0;
  for (int i = 0; i < n; i++)
    g[i] = 0;
  for (int i = 0; i + 1 < n; i += 2) {
    double t1 = 1 - x[i], t2 = 10 * (x[i + 1] - x[i] * x[i]);
    g[i + 1] = 20 * t2;
    g[i] = -2 * (x[i] * g[i + 1] + t1);
    f += t1 * t1 + t2 * t2;
  }
  return f;
}

static double
quadratic (void *user, const double *x, double *g, int n, int *abort_run)
{
  /* f = 1/2 sum d_i (x_i - i)^2, d_i from 1 to 1e4 */
  double f = 0;
  for (int i = 0; i < n; i++) {
    double d = pow (1e4, (double) i / (n - 1));
    double r = x[i] - i;
    g[i] = d * r;
    f += 0.5 * d * r * r;
  }
  return f;
}

static double
log_barrier (void *user, const double *x, double *g, int n, int *abort_run)
{
  /* f = sum (x_i - log x_i), domain x > 0, minimum at 1; NAN outside */
  double f = 0;
  for (int i = 0; i < n; i++) {
    if (!(x[i] > 0))
      return NAN;
    f += x[i] - log (x[i]);
    g[i] = 1 - 1 / x[i];
  }
  return f;
}

static int stop_after;
static int
stopper (void *user, const double *x, const double *g, double f, double gnorm,
    double step, int n, int iteration, int evaluations)
{
  return iteration >= stop_after;
}

static void
test_lbfgs (void)
{
  GrLbfgsParams lp;
  GrLbfgsInfo info;
  gr_lbfgs_params_init (&lp);
  lp.gtol_rel = 1e-10;
  lp.ftol = 0;
  lp.max_iterations = 1000;

  double x[100] = { -1.2, 1.0 };
  GrLbfgsResult r = gr_lbfgs_minimize (2, x, NULL, rosenbrock, NULL, NULL, &lp, &info);
  printf ("rosenbrock 2: %s, %d iterations, %d evaluations, x = (%.10f, %.10f)\n",
      gr_lbfgs_result_string (r), info.iterations, info.evaluations, x[0], x[1]);
  CHECK (r == GR_LBFGS_CONVERGED_GRADIENT, "rosenbrock 2: %s", gr_lbfgs_result_string (r));
  CHECK (fabs (x[0] - 1) < 1e-6 && fabs (x[1] - 1) < 1e-6, "rosenbrock 2 minimum");
  CHECK (info.iterations < 60, "rosenbrock 2 in %d iterations", info.iterations);

  for (int i = 0; i < 100; i++)
    x[i] = i % 2 ? 1.0 : -1.2;
  r = gr_lbfgs_minimize (100, x, NULL, rosenbrock, NULL, NULL, &lp, &info);
  double e = 0;
  for (int i = 0; i < 100; i++)
    e = fmax (e, fabs (x[i] - 1));
  printf ("rosenbrock 100: %s, %d iterations, %d evaluations, max err %.2e\n",
      gr_lbfgs_result_string (r), info.iterations, info.evaluations, e);
  CHECK (gr_lbfgs_result_converged (r) && e < 1e-6, "rosenbrock 100: %s, err %g",
      gr_lbfgs_result_string (r), e);
  CHECK (info.evaluations < 2 * info.iterations + 10, "evaluations per iteration");

  for (int i = 0; i < 50; i++)
    x[i] = 0;
  r = gr_lbfgs_minimize (50, x, NULL, quadratic, NULL, NULL, &lp, &info);
  e = 0;
  for (int i = 0; i < 50; i++)
    e = fmax (e, fabs (x[i] - i));
  printf ("quadratic (cond 1e4): %s, %d iterations, max err %.2e\n",
      gr_lbfgs_result_string (r), info.iterations, e);
  /* |g| <= 1e-10 |g0| bounds the error by about 5e-5 on the flattest axis; L-BFGS with
   * m = 10 and unit steps needs several hundred iterations here (the same as a plain
   * reference implementation) */
  CHECK (gr_lbfgs_result_converged (r) && e < 1e-4 && info.iterations < 1000,
      "quadratic: err %g in %d iterations", e, info.iterations);

  for (int i = 0; i < 10; i++)
    x[i] = 30.0 + i;
  r = gr_lbfgs_minimize (10, x, NULL, log_barrier, NULL, NULL, &lp, &info);
  e = 0;
  for (int i = 0; i < 10; i++)
    e = fmax (e, fabs (x[i] - 1));
  printf ("log barrier: %s, %d iterations, max err %.2e\n", gr_lbfgs_result_string (r),
      info.iterations, e);
  CHECK (gr_lbfgs_result_converged (r) && e < 1e-5, "log barrier: %s err %g",
      gr_lbfgs_result_string (r), e);

  /* the callback can stop; max-iterations is honoured */
  x[0] = -1.2;
  x[1] = 1.0;
  stop_after = 3;
  r = gr_lbfgs_minimize (2, x, NULL, rosenbrock, stopper, NULL, &lp, &info);
  CHECK (r == GR_LBFGS_STOPPED && info.iterations == 3, "stopped after 3: %s %d",
      gr_lbfgs_result_string (r), info.iterations);
  x[0] = -1.2;
  x[1] = 1.0;
  lp.max_iterations = 5;
  r = gr_lbfgs_minimize (2, x, NULL, rosenbrock, NULL, NULL, &lp, &info);
  CHECK (r == GR_LBFGS_MAX_ITERATIONS && info.iterations == 5, "max iterations: %s %d",
      gr_lbfgs_result_string (r), info.iterations);
  CHECK (info.f < 24.2, "f decreased: %g", info.f);
  lp.max_iterations = 0;
  lp.m = 0;
  CHECK (gr_lbfgs_minimize (2, x, NULL, rosenbrock, NULL, NULL, &lp, &info) ==
      GR_LBFGS_INVALID, "m = 0 refused");
}

/* ---- recovery -------------------------------------------------------------------- */

static void
test_recovery (int dim, size_t n, GrShootIntegrator integ, GrShootPrecision prec)
{
  size_t m = n * dim;
  double *q0 = malloc (sizeof (double) * m), *ptrue = malloc (sizeof (double) * m);
  double *tgt = malloc (sizeof (double) * m), *p = calloc (m, sizeof (double));
  double *q1 = malloc (sizeof (double) * m);
  if (dim == 2) {
    td_curve2d (n, 6.0, q0);
    td_smooth_momentum (q0, n, 2, 0.12, 0.35, ptrue);
  } else {
    td_bunny3d (n, 5.0, q0);
    td_smooth_momentum (q0, n, 3, 0.06, 0.35, ptrue);
  }
  /* the target: the template shot with the known momentum */
  GrShoot *s = make (n, dim, 1.5, 16, 1e4, integ, prec, q0, q0);
  CHECK (gr_shoot_flow (s, ptrue, tgt, NULL, NULL, 0, NULL, NULL, 0) == GR_OK, "shoot");
  CHECK (gr_shoot_set_target (s, tgt, NULL, 0) == GR_OK, "target");
  double before = td_mean_distance (q0, tgt, n, dim);

  GrLbfgsParams lp;
  gr_lbfgs_params_init (&lp);
  lp.max_iterations = 300;
  lp.gtol_rel = 1e-8;
  lp.ftol = 1e-12;
  GrShootFitResult res;
  char err[256] = "";
  GrStatus st = gr_shoot_fit (s, p, &lp, NULL, NULL, &res, err, sizeof err);
  CHECK (st == GR_OK, "fit: %s", err);
  CHECK (gr_shoot_flow (s, p, q1, NULL, NULL, 0, NULL, NULL, 0) == GR_OK, "shoot back");
  double after = td_mean_distance (q1, tgt, n, dim);
  double perr = td_rel_l2 (p, ptrue, m);
  printf ("recovery %dD n=%zu %s %s: mean distance %.4f -> %.5f (%.2f%%), %d iterations, "
      "%d evaluations, %s, |p - p_true|/|p_true| = %.3f, %.2f s\n", dim, n,
      integ == GR_SHOOT_EULER ? "euler" : "ralston",
      prec == GR_SHOOT_FLOAT32 ? "f32" : "f64", before, after, 100 * after / before,
      res.iterations, res.evaluations, gr_lbfgs_result_string (res.result), perr,
      res.seconds);
  CHECK (before > 0.3, "the known momentum moves the shape (%g)", before);
  CHECK (after <= 0.05 * before, "recovery %dD: %.4f -> %.4f", dim, before, after);
  CHECK (res.loss < res.loss0, "the loss decreased");
  gr_shoot_free (s);
  free (q0);
  free (ptrue);
  free (tgt);
  free (p);
  free (q1);
}

static void
test_arguments (void)
{
  GrShootParams p;
  gr_shoot_params_init (&p);
  CHECK (p.time_points == 40 && p.sigma == 1.5 && p.lambda == 5e5, "defaults");
  char err[256] = "";
  GrStatus st;
  p.dim = 3;
  p.n = 1;
  CHECK (!gr_shoot_new (&p, GR_BACKEND_CPU, -1, &st, err, sizeof err) &&
      st == GR_ERR_INVALID, "one point refused");
  CHECK (strstr (err, "at least 2") != NULL, "message: %s", err);
  p.n = 10;
  p.dim = 4;
  CHECK (!gr_shoot_new (&p, GR_BACKEND_CPU, -1, &st, err, sizeof err) &&
      st == GR_ERR_INVALID, "dim 4 refused");
  p.dim = 2;
  p.sigma = 0;
  CHECK (!gr_shoot_new (&p, GR_BACKEND_CPU, -1, &st, err, sizeof err), "sigma 0 refused");
  p.sigma = 1;
  p.time_points = 1;
  CHECK (!gr_shoot_new (&p, GR_BACKEND_CPU, -1, &st, err, sizeof err), "T = 1 refused");
  p.time_points = 10;

  GrShoot *s = gr_shoot_new (&p, GR_BACKEND_AUTO, -1, &st, err, sizeof err);
  CHECK (s != NULL, "auto backend: %s", err);
  if (s) {
    CHECK (gr_shoot_backend (s) == (gr_cuda_device_count () > 0 ? GR_BACKEND_CUDA
            : GR_BACKEND_CPU), "auto picks CUDA iff a device exists");
    double q[20] = { 0 }, pp[20] = { 0 }, g[20];
    q[3] = NAN;
    CHECK (gr_shoot_set_template (s, q, err, sizeof err) == GR_ERR_INVALID,
        "NaN template refused");
    CHECK (strstr (err, "point 1") != NULL, "names the point: %s", err);
    CHECK (gr_shoot_loss_grad (s, pp, g, NULL, err, sizeof err) == GR_ERR_INVALID,
        "no template yet");
    gr_shoot_free (s);
  }
  if (gr_cuda_device_count () == 0) {
    s = gr_shoot_new (&p, GR_BACKEND_CUDA, -1, &st, err, sizeof err);
    CHECK (!s && st == GR_ERR_NO_CUDA, "cuda without device: NO_CUDA");
    gr_shoot_free (s);
  }
}

int
main (void)
{
  test_arguments ();
  test_lbfgs ();
  for (int dim = 2; dim <= 3; dim++) {
    test_gradient_fd (dim, GR_SHOOT_EULER);
    test_gradient_fd (dim, GR_SHOOT_RALSTON);
  }
  test_f32_vs_f64 (GR_SHOOT_EULER);
  test_f32_vs_f64 (GR_SHOOT_RALSTON);
  test_extra_points (GR_SHOOT_EULER);
  test_extra_points (GR_SHOOT_RALSTON);
  test_recovery (2, 80, GR_SHOOT_EULER, GR_SHOOT_FLOAT32);
  test_recovery (2, 80, GR_SHOOT_RALSTON, GR_SHOOT_FLOAT64);
  test_recovery (3, 150, GR_SHOOT_EULER, GR_SHOOT_FLOAT32);
  return CHECK_DONE ();
}
