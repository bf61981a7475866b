/* Populations on CUDA (gr_shoot_batch_*; suite gpu, exits 77 = skipped without a
 * usable CUDA device):
 *  - one batched evaluation of several subjects (in any order, a subset of the slots)
 *    equals, subject by subject, a single-subject CUDA engine on the same kernels
 *    bit for bit: the row-per-thread kernels by default (GEOREG_SHOOT_WIDE=1 alone),
 *    the grouped ones with GEOREG_SHOOT_WIDE=0; both agree with the CPU's float32
 *    loss within 1e-6 relative and its gradient within 1e-5, and the row kernels
 *    with the grouped ones (what a subject alone runs by default) as closely;
 *  - a batched fit brings every subject to the loss it reaches when registered alone
 *    on CUDA (within 1e-6 relative: on the row kernels exactly; on the default
 *    grouped ones wherever both converged), and within 1e-6 of the CPU's lone fit
 *    where both converged;
 *  - ground truth: each fitted shape lands within 5% of its initial distance;
 *  - every shape of the row kernels, forward and adjoint (GEOREG_SHOOT_ROWS), gives
 *    the same values bit for bit (n = 150 and 100 check only this and the
 *    evaluations, and so does every size with GEOREG_TEST_NO_FITS=1);
 *  - the pipelined fit (two engines, the default) equals one engine's bit for bit,
 *    and a subject registered alone through the population API (capacity 1) gets
 *    the batch's fit bit for bit (what "alone" means for populations: the same
 *    kernels).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shoot.h"
#include "lbfgs.h"
#include "test_check.h"
#include "shoot_testdata.h"

#define SUBJECTS 6

/* wide: the GEOREG_SHOOT_WIDE setting the engine is made with (NULL: unset) */
static GrShoot *
single (const GrShootParams *p, GrBackend be, const double *q0, const char *wide)
{
  char err[256] = "";
  if (wide)
    setenv ("GEOREG_SHOOT_WIDE", wide, 1);
  GrShoot *s = gr_shoot_new (p, be, -1, NULL, err, sizeof err);
  unsetenv ("GEOREG_SHOOT_WIDE");
  CHECK (s != NULL, "engine: %s", err);
  if (!s)
    exit (1);
  gr_shoot_set_template (s, q0, NULL, 0);
  return s;
}

/* The fits of test_population's subjects: batched against each alone (on the row
 * kernels, the grouped ones and the CPU), the pipelined batch against one engine, and
 * a subject alone through the population API against the batch. */
static void
check_fits (const GrShootParams *p, GrShootBatch *b, GrShoot *cuda1, GrShoot *cudaw,
    GrShoot *cpu1, const double *q0, const double *targets)
{
  const size_t n = p->n, m = n * p->dim;
  const int dim = p->dim;
  double *pb = calloc (m * SUBJECTS, sizeof (double)), *pa = malloc (sizeof (double) * m);
  double *q1 = malloc (sizeof (double) * m);
  char err[256] = "";
  GrStatus st;

  /* batched fit vs each subject alone */
  GrLbfgsParams lp;
  gr_lbfgs_params_init (&lp);
  /* GEOREG_TEST_SMALL (compute-sanitizer runs): a few iterations cover every kernel */
  lp.max_iterations = getenv ("GEOREG_TEST_SMALL") ? 5 : 200;
  GrShootFitResult rb[SUBJECTS];
  st = gr_shoot_batch_fit (b, SUBJECTS, pb, &lp, NULL, NULL, rb, err, sizeof err);
  CHECK (st == GR_OK, "batch fit: %s", err);
  for (int k = 0; k < SUBJECTS; k++) {
    GrShootFitResult ra, rw, rc;
    gr_shoot_set_target (cuda1, targets + k * m, NULL, 0);
    memset (pa, 0, sizeof (double) * m);
    CHECK (gr_shoot_fit (cuda1, pa, &lp, NULL, NULL, &ra, err, sizeof err) == GR_OK, "%s",
        err);
    gr_shoot_set_target (cudaw, targets + k * m, NULL, 0);
    memset (pa, 0, sizeof (double) * m);
    CHECK (gr_shoot_fit (cudaw, pa, &lp, NULL, NULL, &rw, err, sizeof err) == GR_OK, "%s",
        err);
    CHECK (rw.loss == rb[k].loss && rw.iterations == rb[k].iterations, "subject %d: batch "
        "%.17g (%d it) vs alone on the row kernels %.17g (%d it)", k, rb[k].loss,
        rb[k].iterations, rw.loss, rw.iterations);
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
    /* on different kernels the iterates part at rounding level: the same loss where
     * both converged */
    if (gr_lbfgs_result_converged (ra.result) && gr_lbfgs_result_converged (rb[k].result))
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
  /* the pipeline: the default batch runs two engines (subjects 0-2 and 3-5) whose
   * evaluations overlap the host's L-BFGS steps; one engine without it
   * (GEOREG_SHOOT_BATCH_GROUPS=1) must give every subject the same fit bit for bit */
  {
    setenv ("GEOREG_SHOOT_BATCH_GROUPS", "1", 1);
    GrShootBatch *b1 = gr_shoot_batch_new (p, SUBJECTS, GR_BACKEND_CUDA, -1, &st, err,
        sizeof err);
    unsetenv ("GEOREG_SHOOT_BATCH_GROUPS");
    CHECK (b1 != NULL, "CUDA batch, one engine: %s", err);
    if (!b1)
      exit (1);
    printf ("%s | %s\n", gr_shoot_batch_device_description (b),
        gr_shoot_batch_device_description (b1));
    gr_shoot_batch_set_template (b1, q0, NULL, 0);
    for (int k = 0; k < SUBJECTS; k++)
      gr_shoot_batch_set_target (b1, k, targets + k * m, NULL, 0);
    double *p1 = calloc (m * SUBJECTS, sizeof (double));
    GrShootFitResult r1[SUBJECTS];
    CHECK (gr_shoot_batch_fit (b1, SUBJECTS, p1, &lp, NULL, NULL, r1, err, sizeof err) ==
        GR_OK, "one-engine fit: %s", err);
    for (int k = 0; k < SUBJECTS; k++)
      CHECK (r1[k].loss == rb[k].loss && r1[k].iterations == rb[k].iterations &&
          r1[k].evaluations == rb[k].evaluations &&
          memcmp (p1 + k * m, pb + k * m, sizeof (double) * m) == 0,
          "subject %d: pipelined %.17g (%d it) vs one engine %.17g (%d it)", k,
          rb[k].loss, rb[k].iterations, r1[k].loss, r1[k].iterations);
    free (p1);
    gr_shoot_batch_free (b1);
  }
  /* "registered alone" is the population API with one subject (capacity 1, the same
   * row kernels): the batch's fit exactly, for a subject of each engine */
  {
    GrShootBatch *solo = gr_shoot_batch_new (p, 1, GR_BACKEND_CUDA, -1, &st, err,
        sizeof err);
    CHECK (solo != NULL, "CUDA batch of one: %s", err);
    if (!solo)
      exit (1);
    gr_shoot_batch_set_template (solo, q0, NULL, 0);
    const int ks[2] = { 0, SUBJECTS - 1 };
    for (int c = 0; c < 2; c++) {
      const int k = ks[c];
      GrShootFitResult ro;
      gr_shoot_batch_set_target (solo, 0, targets + k * m, NULL, 0);
      memset (pa, 0, sizeof (double) * m);
      CHECK (gr_shoot_batch_fit (solo, 1, pa, &lp, NULL, NULL, &ro, err, sizeof err) ==
          GR_OK, "fit alone: %s", err);
      printf ("%dD n=%zu subject %d alone (population API): loss %.10g (%d it), batch "
          "%.10g (%d it)\n", dim, n, k, ro.loss, ro.iterations, rb[k].loss,
          rb[k].iterations);
      CHECK (ro.loss == rb[k].loss && ro.iterations == rb[k].iterations &&
          memcmp (pa, pb + k * m, sizeof (double) * m) == 0,
          "subject %d: alone (population API) %.17g vs batch %.17g", k, ro.loss,
          rb[k].loss);
    }
    gr_shoot_batch_free (solo);
  }
  free (pb);
  free (pa);
  free (q1);
}

static void
test_population (size_t n, int dim, GrShootIntegrator integ, int T, bool fits)
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
  GrShoot *cuda1 = single (&p, GR_BACKEND_CUDA, q0, NULL);
  GrShoot *cudaw = single (&p, GR_BACKEND_CUDA, q0, "1");
  GrShoot *cpu1 = single (&p, GR_BACKEND_CPU, q0, NULL);
  /* the same population on the grouped kernels */
  setenv ("GEOREG_SHOOT_WIDE", "0", 1);
  GrShootBatch *bg = gr_shoot_batch_new (&p, SUBJECTS, GR_BACKEND_CUDA, -1, &st, err,
      sizeof err);
  unsetenv ("GEOREG_SHOOT_WIDE");
  CHECK (bg != NULL, "CUDA batch (grouped kernels): %s", err);
  if (!bg)
    exit (1);
  CHECK (gr_shoot_batch_set_template (bg, q0, err, sizeof err) == GR_OK, "%s", err);
  for (int k = 0; k < SUBJECTS; k++)
    CHECK (gr_shoot_batch_set_target (bg, k, targets + k * m, err, sizeof err) == GR_OK,
        "%s", err);

  /* batched evaluation: subjects 4, 0, 2 (3 of 6 slots), random momenta */
  {
    uint64_t rng = 5;
    double *pr = malloc (sizeof (double) * m * 3), *gb = malloc (sizeof (double) * m * 3);
    double *gg = malloc (sizeof (double) * m * 3);
    double *g1 = malloc (sizeof (double) * m), *gw = malloc (sizeof (double) * m);
    double *gc = malloc (sizeof (double) * m);
    for (size_t e = 0; e < m * 3; e++) {
      pr[e] = 0.2 * (td_uniform (&rng) - 0.5);
      gb[e] = gg[e] = NAN;
    }
    size_t which[3] = { 4, 0, 2 };
    const double *pts[3] = { pr, pr + m, pr + 2 * m };
    double *grads[3] = { gb, gb + m, gb + 2 * m };
    double *gradg[3] = { gg, gg + m, gg + 2 * m };
    GrShootLoss lb[3], lg[3], l1, lw, lc;
    CHECK (gr_shoot_batch_loss_grad (b, which, 3, pts, grads, lb, err, sizeof err) ==
        GR_OK, "batch eval: %s", err);
    CHECK (gr_shoot_batch_loss_grad (bg, which, 3, pts, gradg, lg, err, sizeof err) ==
        GR_OK, "batch eval (grouped kernels): %s", err);
    for (int k = 0; k < 3; k++) {
      gr_shoot_set_target (cuda1, targets + which[k] * m, NULL, 0);
      gr_shoot_set_target (cudaw, targets + which[k] * m, NULL, 0);
      gr_shoot_set_target (cpu1, targets + which[k] * m, NULL, 0);
      CHECK (gr_shoot_loss_grad (cuda1, pts[k], g1, &l1, err, sizeof err) == GR_OK, "%s",
          err);
      CHECK (gr_shoot_loss_grad (cudaw, pts[k], gw, &lw, err, sizeof err) == GR_OK, "%s",
          err);
      CHECK (gr_shoot_loss_grad (cpu1, pts[k], gc, &lc, err, sizeof err) == GR_OK, "%s",
          err);
      double rw = fabs (lb[k].loss - lw.loss) / fabs (lw.loss);
      double rg = fabs (lg[k].loss - l1.loss) / fabs (l1.loss);
      double r1 = fabs (lb[k].loss - l1.loss) / fabs (l1.loss);
      double rc = fabs (lb[k].loss - lc.loss) / fabs (lc.loss);
      double rgc = fabs (lg[k].loss - lc.loss) / fabs (lc.loss);
      double grw = td_rel_l2 (grads[k], gw, m), grg = td_rel_l2 (gradg[k], g1, m);
      double gr1 = td_rel_l2 (grads[k], g1, m), grc = td_rel_l2 (grads[k], gc, m);
      double grgc = td_rel_l2 (gradg[k], gc, m);
      printf ("%dD n=%zu subject %zu: batch (row kernels) vs alone on them: loss %.1e, "
          "gradient %.1e; vs alone on the grouped kernels: loss %.1e, gradient %.1e; "
          "vs CPU: loss %.1e, gradient %.1e | batch (grouped) vs alone: loss %.1e, "
          "gradient %.1e; vs CPU: loss %.1e, gradient %.1e\n", dim, n, which[k], rw,
          grw, r1, gr1, rc, grc, rg, grg, rgc, grgc);
      CHECK (rw == 0 && grw == 0, "subject %zu: batch differs from alone on the row "
          "kernels", which[k]);
      CHECK (rg == 0 && grg == 0, "subject %zu: batch (grouped kernels) differs from "
          "CUDA alone", which[k]);
      CHECK (rc <= 1e-6 && grc <= 1e-5, "subject %zu: batch vs CPU %.2e %.2e", which[k],
          rc, grc);
      CHECK (rgc <= 1e-6 && grgc <= 1e-5, "subject %zu: batch (grouped) vs CPU %.2e %.2e",
          which[k], rgc, grgc);
      CHECK (r1 <= 1e-6 && gr1 <= 1e-5, "subject %zu: row vs grouped kernels %.2e %.2e",
          which[k], r1, gr1);
    }
    /* every shape of the row kernels (GEOREG_SHOOT_ROWS=FWD/ADJ; large engines time
     * the forward kernel's and the adjoint's apart and keep the fastest of each) gives
     * the same values bit for bit, and so the CPU's within the tolerances above.  The
     * lists are shoot_cuda.cu's row_shapes for each kernel; the description names the
     * shapes the engine took, so a name it does not know fails here.  With n = 300,
     * 200, 150, 100 and 1,847 a subject's last block takes, in every shape, each
     * number of rows a thread it can (with_rows). */
    static const char *const fwd_shapes[] = { "128x1", "64x1", "32x2", "64x2", "32x2t128",
      "32x3t128", "32x4t128", "32x3t128s", "32x4t128s", "32x4t64s", "64x2t128",
      "64x3t128", "64x4t128s" };
    static const char *const adj_shapes[] = { "128x1", "64x1", "32x2", "64x2", "32x2t128",
      "32x2t64s", "32x2t128s", "32x3t64s", "32x3t128s", "64x2s", "64x3s", "32x4t128s" };
    const int nf = sizeof fwd_shapes / sizeof fwd_shapes[0];
    const int na = sizeof adj_shapes / sizeof adj_shapes[0];
    double *gs = malloc (sizeof (double) * m * 3);
    for (int v = 0; v < (nf > na ? nf : na); v++) {
      const char *fs = fwd_shapes[v % nf], *as = adj_shapes[v % na];
      char rows[64], want[96];
      snprintf (rows, sizeof rows, "%s/%s", fs, as);
      setenv ("GEOREG_SHOOT_ROWS", rows, 1);
      GrShootBatch *bv = gr_shoot_batch_new (&p, SUBJECTS, GR_BACKEND_CUDA, -1, &st, err,
          sizeof err);
      unsetenv ("GEOREG_SHOOT_ROWS");
      CHECK (bv != NULL, "CUDA batch (rows %s): %s", rows, err);
      if (!bv)
        exit (1);
      /* the whole of the adjoint's name: what follows is the engines' count or nothing
       * (no "(timed)" at 6 subjects) */
      snprintf (want, sizeof want, "forward %s, adjoint %s", fs, as);
      const char *desc = gr_shoot_batch_device_description (bv), *at = strstr (desc, want);
      CHECK (at != NULL && (at[strlen (want)] == '\0' || at[strlen (want)] == ';'),
          "rows %s: the engine took %s", rows, desc);
      gr_shoot_batch_set_template (bv, q0, NULL, 0);
      for (int k = 0; k < SUBJECTS; k++)
        gr_shoot_batch_set_target (bv, k, targets + k * m, NULL, 0);
      double *gradv[3] = { gs, gs + m, gs + 2 * m };
      GrShootLoss lv[3];
      for (size_t e = 0; e < m * 3; e++)
        gs[e] = NAN;
      CHECK (gr_shoot_batch_loss_grad (bv, which, 3, pts, gradv, lv, err, sizeof err) ==
          GR_OK, "batch eval (rows %s): %s", rows, err);
      for (int k = 0; k < 3; k++)
        CHECK (lv[k].loss == lb[k].loss && lv[k].kinetic == lb[k].kinetic &&
            memcmp (gradv[k], grads[k], sizeof (double) * m) == 0,
            "subject %zu: rows %s give %.17g, the default %.17g", which[k], rows,
            lv[k].loss, lb[k].loss);
      printf ("%dD n=%zu rows %s: %s\n", dim, n, rows,
          gr_shoot_batch_device_description (bv));
      gr_shoot_batch_free (bv);
    }
    free (gs);
    free (pr);
    free (gb);
    free (gg);
    free (g1);
    free (gw);
    free (gc);
  }

  /* fits == false: the evaluations only (n = 150 and 100: the row shapes' last
   * blocks) */
  if (fits)
    check_fits (&p, b, cuda1, cudaw, cpu1, q0, targets);
  gr_shoot_free (cuda1);
  gr_shoot_free (cudaw);
  gr_shoot_free (cpu1);
  gr_shoot_batch_free (b);
  gr_shoot_batch_free (bg);
  free (q0);
  free (targets);
}

int
main (void)
{
  if (gr_cuda_device_count () <= 0) {
    printf ("skipped: no usable CUDA device\n");
    return 77;
  }
  /* GEOREG_TEST_NO_FITS=1: the evaluations and the row shapes only (a device run
   * that times the population right after, in a few minutes) */
  const bool fits = !getenv ("GEOREG_TEST_NO_FITS");
  test_population (300, 3, GR_SHOOT_EULER, 16, fits);
  test_population (200, 2, GR_SHOOT_RALSTON, 12, fits);
  test_population (150, 3, GR_SHOOT_EULER, 16, false);
  test_population (100, 3, GR_SHOOT_EULER, 16, false);
  if (!getenv ("GEOREG_TEST_SMALL"))
    test_population (1847, 3, GR_SHOOT_EULER, 40, fits);
  return CHECK_DONE ();
}
