/* Populations on CUDA (gr_shoot_batch_*; suite gpu, exits 77 = skipped without a
 * usable CUDA device):
 *  - one batched evaluation of several subjects (in any order, a subset of the slots)
 *    equals the single-subject CUDA engine's, subject by subject, and agrees with the
 *    CPU's float32 loss within 1e-6 relative and its gradient within 1e-5;
 *  - a batched fit brings every subject to the loss it reaches when registered alone
 *    on CUDA (within 1e-6 relative), and within 1e-6 of the CPU's lone fit where both
 *    converged;
 *  - ground truth: each fitted shape lands within 5% of its initial distance.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shoot.h"
#include "lbfgs.h"
#include "test_check.h"
#include "shoot_testdata.h"

#define SUBJECTS 6

static double
rel_diff (const double *a, const double *b, size_t m)
{
  double d = 0, s = 0;
  for (size_t i = 0; i < m; i++) {
    d += (a[i] - b[i]) * (a[i] - b[i]);
    s += b[i] * b[i];
  }
  return sqrt (d / fmax (s, 1e-300));
}

static GrShoot *
single (const GrShootParams *p, GrBackend be, const double *q0)
{
  char err[256] = "";
  GrShoot *s = gr_shoot_new (p, be, -1, NULL, err, sizeof err);
  CHECK (s != NULL, "engine: %s", err);
  if (!s)
    exit (1);
  gr_shoot_set_template (s, q0, NULL, 0);
  return s;
}

static void
test_population (size_t n, int dim, GrShootIntegrator integ, int T)
{
  GrShootParams p;
  gr_shoot_params_init (&p);
  p.n = n;
  p.dim = dim;
  p.time_points = T;
  p.lambda = 1e4;
  p.integrator = integ;
  const size_t m = n * dim;
  double *q0 = malloc (sizeof (double) * m), *targets = malloc (sizeof (double) * m *
      SUBJECTS);
  double *pb = calloc (m * SUBJECTS, sizeof (double)), *pa = malloc (sizeof (double) * m);
  double *q1 = malloc (sizeof (double) * m);
  if (dim == 2)
    td_curve2d (n, 6.0, q0);
  else
    td_bunny3d (n, 5.0, q0);
  td_population (&p, q0, SUBJECTS, targets);

  char err[256] = "";
  GrStatus st;
  GrShootBatch *b = gr_shoot_batch_new (&p, SUBJECTS, GR_BACKEND_CUDA, -1, &st, err,
      sizeof err);
  CHECK (b != NULL, "CUDA batch: %s", err);
  if (!b)
    exit (1);
  printf ("%s\n", gr_shoot_batch_device_description (b));
  CHECK (gr_shoot_batch_set_template (b, q0, err, sizeof err) == GR_OK, "%s", err);
  for (int k = 0; k < SUBJECTS; k++)
    CHECK (gr_shoot_batch_set_target (b, k, targets + k * m, err, sizeof err) == GR_OK,
        "%s", err);
  GrShoot *cuda1 = single (&p, GR_BACKEND_CUDA, q0), *cpu1 = single (&p, GR_BACKEND_CPU, q0);

  /* batched evaluation: subjects 4, 0, 2 (3 of 6 slots), random momenta */
  {
    uint64_t rng = 5;
    double *pr = malloc (sizeof (double) * m * 3), *gb = malloc (sizeof (double) * m * 3);
    double *g1 = malloc (sizeof (double) * m), *gc = malloc (sizeof (double) * m);
    for (size_t e = 0; e < m * 3; e++) {
      pr[e] = 0.2 * (td_uniform (&rng) - 0.5);
      gb[e] = NAN;
    }
    size_t which[3] = { 4, 0, 2 };
    const double *pts[3] = { pr, pr + m, pr + 2 * m };
    double *grads[3] = { gb, gb + m, gb + 2 * m };
    GrShootLoss lb[3], l1, lc;
    CHECK (gr_shoot_batch_loss_grad (b, which, 3, pts, grads, lb, err, sizeof err) ==
        GR_OK, "batch eval: %s", err);
    for (int k = 0; k < 3; k++) {
      gr_shoot_set_target (cuda1, targets + which[k] * m, NULL, 0);
      gr_shoot_set_target (cpu1, targets + which[k] * m, NULL, 0);
      CHECK (gr_shoot_loss_grad (cuda1, pts[k], g1, &l1, err, sizeof err) == GR_OK, "%s",
          err);
      CHECK (gr_shoot_loss_grad (cpu1, pts[k], gc, &lc, err, sizeof err) == GR_OK, "%s",
          err);
      double r1 = fabs (lb[k].loss - l1.loss) / fabs (l1.loss);
      double rc = fabs (lb[k].loss - lc.loss) / fabs (lc.loss);
      double gr1 = rel_diff (grads[k], g1, m), grc = rel_diff (grads[k], gc, m);
      printf ("%dD n=%zu subject %zu: batch vs CUDA alone: loss %.1e, gradient %.1e; "
          "vs CPU: loss %.1e, gradient %.1e\n", dim, n, which[k], r1, gr1, rc, grc);
      CHECK (r1 <= 1e-12 && gr1 <= 1e-12, "subject %zu: batch differs from CUDA alone",
          which[k]);
      CHECK (rc <= 1e-6 && grc <= 1e-5, "subject %zu: batch vs CPU %.2e %.2e", which[k],
          rc, grc);
    }
    free (pr);
    free (gb);
    free (g1);
    free (gc);
  }

  /* batched fit vs each subject alone */
  GrLbfgsParams lp;
  gr_lbfgs_params_init (&lp);
  /* GEOREG_TEST_SMALL (compute-sanitizer runs): a few iterations cover every kernel */
  lp.max_iterations = getenv ("GEOREG_TEST_SMALL") ? 5 : 200;
  GrShootFitResult rb[SUBJECTS];
  st = gr_shoot_batch_fit (b, SUBJECTS, pb, &lp, NULL, NULL, rb, err, sizeof err);
  CHECK (st == GR_OK, "batch fit: %s", err);
  for (int k = 0; k < SUBJECTS; k++) {
    GrShootFitResult ra, rc;
    gr_shoot_set_target (cuda1, targets + k * m, NULL, 0);
    memset (pa, 0, sizeof (double) * m);
    CHECK (gr_shoot_fit (cuda1, pa, &lp, NULL, NULL, &ra, err, sizeof err) == GR_OK, "%s",
        err);
    /* the CPU's lone fit only where it takes seconds */
    memset (&rc, 0, sizeof rc);
    rc.result = GR_LBFGS_STOPPED;
    if (n <= 400) {
      gr_shoot_set_target (cpu1, targets + k * m, NULL, 0);
      memset (pa, 0, sizeof (double) * m);
      CHECK (gr_shoot_fit (cpu1, pa, &lp, NULL, NULL, &rc, err, sizeof err) == GR_OK, "%s",
          err);
    }
    double den = fmax (fabs (ra.loss), 1e-300);
    double r1 = fabs (rb[k].loss - ra.loss) / den;
    double rcpu = fabs (rb[k].loss - rc.loss) / fmax (fabs (rc.loss), 1e-300);
    printf ("%dD n=%zu subject %d: batch loss %.10g (%d it, %s) | CUDA alone %.10g (%d it)"
        " rel %.1e | CPU alone %.10g (%d it, %s) rel %.1e\n", dim, n, k, rb[k].loss,
        rb[k].iterations, gr_lbfgs_result_string (rb[k].result), ra.loss, ra.iterations,
        r1, rc.loss, rc.iterations, gr_lbfgs_result_string (rc.result), rcpu);
    CHECK (r1 <= 1e-6 || (ra.loss == 0 && rb[k].loss == 0),
        "subject %d: batch %.17g vs CUDA alone %.17g", k, rb[k].loss, ra.loss);
    if (gr_lbfgs_result_converged (rc.result) && gr_lbfgs_result_converged (rb[k].result))
      CHECK (rcpu <= 1e-6 || (rc.loss == 0 && rb[k].loss == 0),
          "subject %d: batch %.17g vs CPU alone %.17g", k, rb[k].loss, rc.loss);
    if (k != 3) {
      gr_shoot_flow (cpu1, pb + k * m, q1, NULL, NULL, 0, NULL, NULL, 0);
      double before = td_mean_distance (q0, targets + k * m, n, dim);
      double after = td_mean_distance (q1, targets + k * m, n, dim);
      CHECK (after <= 0.05 * before, "subject %d: %.4f -> %.4f", k, before, after);
    }
  }
  gr_shoot_free (cuda1);
  gr_shoot_free (cpu1);
  gr_shoot_batch_free (b);
  free (q0);
  free (targets);
  free (pb);
  free (pa);
  free (q1);
}

int
main (void)
{
  if (gr_cuda_device_count () <= 0) {
    printf ("skipped: no usable CUDA device\n");
    return 77;
  }
  test_population (300, 3, GR_SHOOT_EULER, 16);
  test_population (200, 2, GR_SHOOT_RALSTON, 12);
  if (!getenv ("GEOREG_TEST_SMALL"))
    test_population (1847, 3, GR_SHOOT_EULER, 40);
  return CHECK_DONE ();
}
