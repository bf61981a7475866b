/* Atlas estimation (gr_shoot_atlas, CPU):
 *  - the template gradient (gr_shoot_loss_grad_template) against central finite
 *    differences of the float64 loss, 2-D and 3-D, Euler and Ralston (1e-5 relative);
 *  - a synthesized population: a known template deformed by known momenta (pairs
 *    +m_k, -m_k, so that the template is the population's centre) plus noise; the
 *    atlas, started from the mean of the targets and from a wrong template (scaled and
 *    shifted), recovers the template within 5% of the mean deformation, and the
 *    subjects' momenta approach the known ones (in the kernel norm: as velocity
 *    fields);
 *  - the result does not depend on the thread count; argument checks.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shoot.h"
#include "lbfgs.h"
#include "test_check.h"
#include "shoot_testdata.h"

static GrShootParams
params_for (size_t n, int dim, int T, GrShootIntegrator integ, GrShootPrecision prec)
{
  GrShootParams p;
  gr_shoot_params_init (&p);
  p.n = n;
  p.dim = dim;
  p.time_points = T;
  p.lambda = 1e4;
  p.integrator = integ;
  p.precision = prec;
  return p;
}

static void
test_template_gradient (int dim, GrShootIntegrator integ)
{
  const size_t n = dim == 2 ? 12 : 10, m = n * dim;
  GrShootParams p = params_for (n, dim, 8, integ, GR_SHOOT_FLOAT64);
  p.lambda = 50;
  double *q0 = malloc (sizeof (double) * m), *tgt = malloc (sizeof (double) * m);
  double *p0 = malloc (sizeof (double) * m), *gq = malloc (sizeof (double) * m);
  double *gp = malloc (sizeof (double) * m), *qq = malloc (sizeof (double) * m);
  uint64_t rng = 3;
  if (dim == 2)
    td_curve2d (n, 2.0, q0);
  else
    td_bunny3d (n, 2.0, q0);
  for (size_t e = 0; e < m; e++) {
    tgt[e] = q0[e] + 0.3 * (td_uniform (&rng) - 0.5);
    p0[e] = 0.4 * (td_uniform (&rng) - 0.5);
  }
  GrShoot *s = gr_shoot_new (&p, GR_BACKEND_CPU, -1, NULL, NULL, 0);
  gr_shoot_set_template (s, q0, NULL, 0);
  gr_shoot_set_target (s, tgt, NULL, 0);
  GrShootLoss l;
  for (size_t e = 0; e < m; e++)
    gq[e] = NAN;
  CHECK (gr_shoot_loss_grad_template (s, p0, gp, gq, &l, NULL, 0) == GR_OK, "eval");
  double num = 0, den = 0;
  for (size_t e = 0; e < m; e++) {
    const double h = 1e-6;
    memcpy (qq, q0, sizeof (double) * m);
    qq[e] = q0[e] + h;
    gr_shoot_set_template (s, qq, NULL, 0);
    gr_shoot_loss_grad (s, p0, NULL, &l, NULL, 0);
    double fp = l.loss;
    qq[e] = q0[e] - h;
    gr_shoot_set_template (s, qq, NULL, 0);
    gr_shoot_loss_grad (s, p0, NULL, &l, NULL, 0);
    double fd = (fp - l.loss) / (2 * h);
    num += (fd - gq[e]) * (fd - gq[e]);
    den += fd * fd;
  }
  double rel = sqrt (num / den);
  printf ("template gradient %dD %s: rel err %.3e (|g| %.3e)\n", dim,
      integ == GR_SHOOT_EULER ? "euler" : "ralston", rel, sqrt (den));
  CHECK (rel < 1e-5, "template gradient %dD: %g", dim, rel);
  gr_shoot_free (s);
  free (q0);
  free (tgt);
  free (p0);
  free (gq);
  free (gp);
  free (qq);
}

#define PAIRS 4
#define S (2 * PAIRS)

static void
test_population (void)
{
  const size_t n = 40, dim = 2, m = n * dim;
  GrShootParams p = params_for (n, dim, 10, GR_SHOOT_EULER, GR_SHOOT_FLOAT32);
  p.lambda = 100;               /* the noise is not worth fitting */
  double *truth = malloc (sizeof (double) * m), *targets = malloc (sizeof (double) * m * S);
  double *mom = malloc (sizeof (double) * m * S), *tmpl = malloc (sizeof (double) * m);
  double *est = malloc (sizeof (double) * m * S), *est2 = malloc (sizeof (double) * m * S);
  double *tmpl2 = malloc (sizeof (double) * m);
  td_curve2d (n, 6.0, truth);
  GrShoot *sh = gr_shoot_new (&p, GR_BACKEND_CPU, -1, NULL, NULL, 0);
  gr_shoot_set_template (sh, truth, NULL, 0);
  uint64_t rng = 99;
  double deformation = 0;
  for (int k = 0; k < PAIRS; k++) {
    double *mk = mom + 2 * k * m;
    td_smooth_momentum (truth, n, dim, 0.08 + 0.02 * k, 0.25 + 0.08 * k, mk);
    /* a rotation of the field per pair, so the pairs differ in shape */
    double c = cos (0.9 * k), sn = sin (0.9 * k);
    for (size_t i = 0; i < n; i++) {
      double x = mk[2 * i], y = mk[2 * i + 1];
      mk[2 * i] = c * x - sn * y;
      mk[2 * i + 1] = sn * x + c * y;
    }
    for (size_t e = 0; e < m; e++)
      mk[m + e] = -mk[e];
    for (int sgn = 0; sgn < 2; sgn++) {
      double *t = targets + (2 * k + sgn) * m;
      gr_shoot_flow (sh, mk + sgn * m, t, NULL, NULL, 0, NULL, NULL, 0);
      for (size_t e = 0; e < m; e++)
        t[e] += 0.01 * (td_uniform (&rng) - 0.5);
      deformation += td_mean_distance (truth, t, n, dim) / S;
    }
  }
  gr_shoot_free (sh);

  GrLbfgsParams lp;
  gr_lbfgs_params_init (&lp);
  lp.max_iterations = 150;
  lp.gtol_rel = 1e-9;
  lp.ftol = 1e-13;
  char err[256] = "";
  for (int run = 0; run < 2; run++) {
    GrShootAtlasResult r;
    memset (est, 0, sizeof (double) * m * S);
    GrShootAtlasStart start = run == 0 ? GR_SHOOT_ATLAS_FROM_MEAN : GR_SHOOT_ATLAS_FROM_GIVEN;
    if (run == 1)
      for (size_t i = 0; i < n; i++)
        for (size_t d = 0; d < dim; d++)
          tmpl[i * dim + d] = 1.12 * truth[i * dim + d] + (d == 0 ? 0.4 : -0.3);
    double *init = malloc (sizeof (double) * m);
    if (run == 0) {
      memset (init, 0, sizeof (double) * m);
      for (int s = 0; s < S; s++)
        for (size_t e = 0; e < m; e++)
          init[e] += targets[s * m + e] / S;
    } else {
      memcpy (init, tmpl, sizeof (double) * m);
    }
    GrStatus st = gr_shoot_atlas (&p, S, targets, start, tmpl, est, &lp, 0, &r, err,
        sizeof err);
    CHECK (st == GR_OK, "atlas: %s", err);
    double e0 = td_mean_distance (init, truth, n, dim);
    double e1 = td_mean_distance (tmpl, truth, n, dim);
    /* the momenta's error as velocity fields: the kernel norm p^T K p (2 H at the
     * template), which ignores what the kernel cannot see */
    double perr = 0, pn = 0;
    {
      GrShoot *kn = gr_shoot_new (&p, GR_BACKEND_CPU, -1, NULL, NULL, 0);
      double *dp = malloc (sizeof (double) * m);
      GrShootLoss l;
      gr_shoot_set_template (kn, truth, NULL, 0);
      gr_shoot_set_target (kn, truth, NULL, 0);
      for (int s = 0; s < S; s++) {
        for (size_t e = 0; e < m; e++)
          dp[e] = est[s * m + e] - mom[s * m + e];
        gr_shoot_loss_grad (kn, dp, NULL, &l, NULL, 0);
        perr += l.kinetic;
        gr_shoot_loss_grad (kn, mom + s * m, NULL, &l, NULL, 0);
        pn += l.kinetic;
      }
      free (dp);
      gr_shoot_free (kn);
    }
    printf ("atlas from %s: template error %.4f -> %.4f (mean deformation %.4f: %.2f%%), "
        "momenta rel err (kernel norm) %.3f, loss %.6g -> %.6g, %d iterations (%s), %.2f s\n",
        run == 0 ? "the mean" : "a wrong template", e0, e1, deformation,
        100 * e1 / deformation, sqrt (perr / pn), r.loss0, r.loss, r.iterations,
        gr_lbfgs_result_string (r.result), r.seconds);
    CHECK (e1 <= 0.05 * deformation, "template recovered within 5%% of the mean "
        "deformation: %.4f vs %.4f", e1, deformation);
    CHECK (r.loss < r.loss0, "the loss decreased");
    CHECK (sqrt (perr / pn) < 0.15, "momenta near the known ones: %g", sqrt (perr / pn));
    if (run == 1)
      CHECK (e0 > 0.3 * deformation, "the wrong template is wrong (%g)", e0);
    free (init);
  }
  /* one thread gives the same estimate as many */
  {
    GrShootAtlasResult r1, r2;
    GrLbfgsParams l2 = lp;
    l2.max_iterations = 40;
    memset (est, 0, sizeof (double) * m * S);
    memset (est2, 0, sizeof (double) * m * S);
    gr_shoot_atlas (&p, S, targets, GR_SHOOT_ATLAS_FROM_MEAN, tmpl, est, &l2, 1, &r1, NULL,
        0);
    gr_shoot_atlas (&p, S, targets, GR_SHOOT_ATLAS_FROM_MEAN, tmpl2, est2, &l2, 3, &r2,
        NULL, 0);
    CHECK (r1.loss == r2.loss && memcmp (tmpl, tmpl2, sizeof (double) * m) == 0 &&
        memcmp (est, est2, sizeof (double) * m * S) == 0, "thread count changes nothing");
  }
  /* arguments */
  est[5] = NAN;
  CHECK (gr_shoot_atlas (&p, S, targets, GR_SHOOT_ATLAS_FROM_MEAN, tmpl, est, &lp, 0, NULL,
          err, sizeof err) == GR_ERR_INVALID && strstr (err, "subject 0"),
      "NaN momentum refused: %s", err);
  CHECK (gr_shoot_atlas (&p, 0, targets, GR_SHOOT_ATLAS_FROM_MEAN, tmpl, est, &lp, 0, NULL,
          err, sizeof err) == GR_ERR_INVALID, "no subjects refused");
  free (truth);
  free (targets);
  free (mom);
  free (tmpl);
  free (tmpl2);
  free (est);
  free (est2);
}

int
main (void)
{
  for (int dim = 2; dim <= 3; dim++) {
    test_template_gradient (dim, GR_SHOOT_EULER);
    test_template_gradient (dim, GR_SHOOT_RALSTON);
  }
  test_population ();
  return CHECK_DONE ();
}
