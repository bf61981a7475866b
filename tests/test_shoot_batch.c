/* Populations (gr_shoot_batch_*, CPU): several targets registered to one template
 * together must each end where they end when registered alone:
 *  - batched loss and gradient equal the single engine's, subject by subject;
 *  - a batched fit reaches each subject's lone loss (within 1e-6 relative; on the CPU
 *    the iterates are the same, so the iteration counts agree too), with subjects
 *    that stop early (target = template: converged at once; a progress callback that
 *    stops one) leaving the others unchanged;
 *  - ground truth: each subject's target is the template shot by a known momentum
 *    (plus noise); the fitted shape lands within 5% of the initial distance;
 *  - argument checks;
 *  - all of it again with the fit pipelined in two groups (GEOREG_SHOOT_BATCH_GROUPS=2,
 *    CUDA's default).
 * The CUDA twin is in test_shoot_gpu.c.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shoot.h"
#include "lbfgs.h"
#include "test_check.h"
#include "shoot_testdata.h"

#define SUBJECTS 5

static GrShootParams
params_for (size_t n, int dim)
{
  GrShootParams p;
  gr_shoot_params_init (&p);
  p.n = n;
  p.dim = dim;
  p.sigma = 1.5;
  p.time_points = 12;
  p.lambda = 1e4;
  return p;
}

static int stop_subject = -1;

static int
stop_one (void *user, size_t subject, int iteration, int evaluations, double loss,
    double gnorm)
{
  int *calls = user;
  (*calls)++;
  return (int) subject == stop_subject && iteration >= 3;
}

static void
test_population (size_t n, int dim, int threads)
{
  GrShootParams p = params_for (n, dim);
  const size_t m = n * dim;
  double *q0 = malloc (sizeof (double) * m);
  double *targets = malloc (sizeof (double) * m * SUBJECTS);
  double *pb = calloc (m * SUBJECTS, sizeof (double));
  double *pa = calloc (m, sizeof (double));
  double *q1 = malloc (sizeof (double) * m);
  if (dim == 2)
    td_curve2d (n, 6.0, q0);
  else
    td_bunny3d (n, 5.0, q0);
  td_population (&p, q0, SUBJECTS, targets);

  char err[256] = "";
  GrStatus st;
  GrShootBatch *b = gr_shoot_batch_new (&p, SUBJECTS, GR_BACKEND_CPU, -1, &st, err,
      sizeof err);
  CHECK (b != NULL, "batch: %s", err);
  if (!b)
    return;
  gr_shoot_batch_set_threads (b, threads);
  CHECK (gr_shoot_batch_capacity (b) == SUBJECTS, "capacity");
  CHECK (gr_shoot_batch_backend (b) == GR_BACKEND_CPU, "CPU");
  CHECK (gr_shoot_batch_set_template (b, q0, err, sizeof err) == GR_OK, "%s", err);
  for (int k = 0; k < SUBJECTS; k++)
    CHECK (gr_shoot_batch_set_target (b, k, targets + k * m, err, sizeof err) == GR_OK,
        "%s", err);

  GrShoot *one = gr_shoot_new (&p, GR_BACKEND_CPU, -1, NULL, NULL, 0);
  gr_shoot_set_template (one, q0, NULL, 0);

  /* batched evaluation = single evaluation (random momenta, subjects out of order) */
  {
    uint64_t rng = 11;
    double *pr = malloc (sizeof (double) * m * 3), *gb = malloc (sizeof (double) * m * 3);
    double *ga = malloc (sizeof (double) * m);
    for (size_t e = 0; e < m * 3; e++)
      pr[e] = 0.2 * (td_uniform (&rng) - 0.5);
    size_t which[3] = { 4, 0, 2 };
    const double *pts[3] = { pr, pr + m, pr + 2 * m };
    double *grads[3] = { gb, gb + m, gb + 2 * m };
    GrShootLoss lb[3], la;
    for (size_t e = 0; e < m * 3; e++)
      gb[e] = NAN;              /* poisoned: every entry must be written */
    CHECK (gr_shoot_batch_loss_grad (b, which, 3, pts, grads, lb, err, sizeof err) ==
        GR_OK, "batch eval: %s", err);
    for (int k = 0; k < 3; k++) {
      gr_shoot_set_target (one, targets + which[k] * m, NULL, 0);
      gr_shoot_loss_grad (one, pts[k], ga, &la, NULL, 0);
      CHECK (lb[k].loss == la.loss && lb[k].kinetic == la.kinetic &&
          lb[k].mismatch == la.mismatch, "subject %zu: batched loss %.17g, alone %.17g",
          which[k], lb[k].loss, la.loss);
      CHECK (memcmp (ga, grads[k], sizeof (double) * m) == 0,
          "subject %zu: batched gradient differs from the lone one", which[k]);
    }
    free (pr);
    free (gb);
    free (ga);
  }

  /* the batched fit, one subject stopped by the progress callback */
  GrLbfgsParams lp;
  gr_lbfgs_params_init (&lp);
  lp.max_iterations = 150;
  GrShootFitResult rb[SUBJECTS];
  int calls = 0;
  stop_subject = 1;
  st = gr_shoot_batch_fit (b, SUBJECTS, pb, &lp, stop_one, &calls, rb, err, sizeof err);
  CHECK (st == GR_OK, "batch fit: %s", err);
  CHECK (rb[1].result == GR_LBFGS_STOPPED && rb[1].iterations == 3,
      "subject 1 stopped after 3 iterations (%s, %d)", gr_lbfgs_result_string (rb[1].result),
      rb[1].iterations);
  CHECK (rb[3].result == GR_LBFGS_CONVERGED_GRADIENT && rb[3].iterations == 0 &&
      rb[3].loss == 0.0, "subject 3 (target = template) converged at once");
  int total_iters = 0;
  for (int k = 0; k < SUBJECTS; k++)
    total_iters += rb[k].iterations;
  CHECK (calls == total_iters, "one progress call per iteration (%d, %d)", calls,
      total_iters);

  for (int k = 0; k < SUBJECTS; k++) {
    memset (pa, 0, sizeof (double) * m);
    gr_shoot_set_target (one, targets + k * m, NULL, 0);
    GrShootFitResult ra;
    /* alone: subject 1 stopped at the same iteration */
    GrLbfgsParams lp1 = lp;
    if (k == 1)
      lp1.max_iterations = 3;
    CHECK (gr_shoot_fit (one, pa, &lp1, NULL, NULL, &ra, err, sizeof err) == GR_OK, "%s",
        err);
    double rel = fabs (rb[k].loss - ra.loss) / fmax (fabs (ra.loss), 1e-300);
    printf ("%dD n=%zu threads=%d subject %d: batch loss %.10g (%d it, %s), alone %.10g "
        "(%d it), rel %.1e\n", dim, n, threads, k, rb[k].loss, rb[k].iterations,
        gr_lbfgs_result_string (rb[k].result), ra.loss, ra.iterations, rel);
    CHECK (rel <= 1e-6 || (ra.loss == 0.0 && rb[k].loss == 0.0),
        "subject %d: batch %.17g vs alone %.17g", k, rb[k].loss, ra.loss);
    CHECK (rb[k].iterations == ra.iterations, "subject %d: same iterations (%d, %d)", k,
        rb[k].iterations, ra.iterations);
    CHECK (memcmp (pa, pb + k * m, sizeof (double) * m) == 0,
        "subject %d: the same momenta", k);
    CHECK (rb[k].loss0 == ra.loss0 && rb[k].mismatch0 == ra.mismatch0,
        "subject %d: starting loss", k);
    if (k != 1 && k != 3) {
      /* ground truth: the fitted shape reaches the target */
      gr_shoot_flow (one, pb + k * m, q1, NULL, NULL, 0, NULL, NULL, 0);
      double before = td_mean_distance (q0, targets + k * m, n, dim);
      double after = td_mean_distance (q1, targets + k * m, n, dim);
      CHECK (after <= 0.05 * before, "subject %d: %.4f -> %.4f", k, before, after);
    }
  }
  gr_shoot_free (one);
  gr_shoot_batch_free (b);
  free (q0);
  free (targets);
  free (pb);
  free (pa);
  free (q1);
}

static void
test_arguments (void)
{
  GrShootParams p = params_for (10, 2);
  char err[256] = "";
  GrStatus st;
  CHECK (!gr_shoot_batch_new (&p, 0, GR_BACKEND_CPU, -1, &st, err, sizeof err) &&
      st == GR_ERR_INVALID, "0 subjects refused");
  p.n = 1;
  CHECK (!gr_shoot_batch_new (&p, 2, GR_BACKEND_CPU, -1, &st, err, sizeof err) &&
      st == GR_ERR_INVALID && strstr (err, "at least 2"), "one point refused: %s", err);
  p.n = 10;
  if (gr_cuda_device_count () == 0)
    CHECK (!gr_shoot_batch_new (&p, 2, GR_BACKEND_CUDA, -1, &st, err, sizeof err) &&
        st == GR_ERR_NO_CUDA, "cuda without a device: NO_CUDA");
  GrShootBatch *b = gr_shoot_batch_new (&p, 2, GR_BACKEND_CPU, -1, &st, err, sizeof err);
  CHECK (b != NULL, "%s", err);
  double q[20], t[20], p0[40] = { 0 };
  td_curve2d (10, 3.0, q);
  memcpy (t, q, sizeof t);
  GrShootFitResult r[2];
  CHECK (gr_shoot_batch_fit (b, 2, p0, NULL, NULL, NULL, r, err, sizeof err) ==
      GR_ERR_INVALID, "no template yet");
  CHECK (gr_shoot_batch_set_template (b, q, err, sizeof err) == GR_OK, "%s", err);
  CHECK (gr_shoot_batch_set_target (b, 2, t, err, sizeof err) == GR_ERR_INVALID,
      "subject out of range");
  t[5] = NAN;
  CHECK (gr_shoot_batch_set_target (b, 0, t, err, sizeof err) == GR_ERR_INVALID &&
      strstr (err, "point 2"), "NaN target refused: %s", err);
  t[5] = q[5];
  CHECK (gr_shoot_batch_set_target (b, 0, t, err, sizeof err) == GR_OK, "%s", err);
  CHECK (gr_shoot_batch_fit (b, 2, p0, NULL, NULL, NULL, r, err, sizeof err) ==
      GR_ERR_INVALID && strstr (err, "subject 1"), "subject 1 has no target: %s", err);
  CHECK (gr_shoot_batch_fit (b, 3, p0, NULL, NULL, NULL, r, err, sizeof err) ==
      GR_ERR_INVALID, "more subjects than the capacity");
  p0[23] = INFINITY;
  CHECK (gr_shoot_batch_set_target (b, 1, t, err, sizeof err) == GR_OK, "%s", err);
  CHECK (gr_shoot_batch_fit (b, 2, p0, NULL, NULL, NULL, r, err, sizeof err) ==
      GR_ERR_INVALID && strstr (err, "subject 1"), "infinite momentum: %s", err);
  p0[23] = 0;
  CHECK (gr_shoot_batch_fit (b, 2, p0, NULL, NULL, NULL, r, err, sizeof err) == GR_OK,
      "%s", err);
  CHECK (r[0].result == GR_LBFGS_CONVERGED_GRADIENT && r[0].loss == 0.0,
      "target = template: converged");
  gr_shoot_batch_free (b);
}

int
main (void)
{
  test_arguments ();
  test_population (40, 2, 0);
  test_population (40, 2, 1);
  test_population (60, 3, 3);
  /* the pipelined fit (two groups, as on CUDA: subjects 0-2 and 3-4, the second group
   * with the subject that converges at once): still each subject's lone iterates */
  setenv ("GEOREG_SHOOT_BATCH_GROUPS", "2", 1);
  test_population (40, 2, 1);
  test_population (60, 3, 3);
  unsetenv ("GEOREG_SHOOT_BATCH_GROUPS");
  return CHECK_DONE ();
}
