/* Atlas estimation: the template and all momenta of a population (see shoot.h, "atlas").
 *
 * One L-BFGS over x = [q0, p_1, ..., p_S] (n D (S + 1) unknowns).  An evaluation sets
 * the template x[0] in one single-threaded CPU engine per thread and runs the subjects
 * in parallel; each gives its loss, d/dp_s and d/dq0 (gr_shoot_loss_grad_template);
 * the template gradient and the loss are summed over subjects in subject order
 * (deterministic whatever the thread count).  A template with a non-finite coordinate
 * (a line-search trial too far) is an infinite loss: the line search backs off.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "shoot.h"
#include "shoot_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>

typedef struct {
  const GrShootParams *p;
  size_t S, dn;
  const double *targets;
  GrShoot **eng;
  int neng;
  double *gq;                   /* [S][dn] per-subject template gradients */
  GrShootLoss *loss;            /* [S] */
  GrStatus *sts;                /* [S] */
  GrStatus status;              /* first hard error (memory) */
  char *errbuf;
  size_t errlen;
} AtlasCtx;

static double
atlas_eval (void *user, const double *x, double *g, int nvar, int *abort_run)
{
  AtlasCtx *a = user;
  const size_t dn = a->dn;
  for (size_t e = 0; e < dn; e++)
    if (!isfinite (x[e]))
      return INFINITY;
#pragma omp parallel for schedule(dynamic, 1) num_threads(a->neng)
  for (size_t s = 0; s < a->S; s++) {
    GrShoot *e = a->eng[omp_get_thread_num ()];
    GrStatus st = gr_shoot_set_template (e, x, NULL, 0);
    if (st == GR_OK)
      st = gr_shoot_set_target (e, a->targets + s * dn, NULL, 0);
    if (st == GR_OK)
      st = gr_shoot_loss_grad_template (e, x + (s + 1) * dn, g + (s + 1) * dn,
          a->gq + s * dn, &a->loss[s], NULL, 0);
    a->sts[s] = st;
  }
  double f = 0.0;
  memset (g, 0, sizeof (double) * dn);
  for (size_t s = 0; s < a->S; s++) {
    if (a->sts[s] == GR_ERR_NOMEM) {
      a->status = GR_ERR_NOMEM;
      *abort_run = 1;
      return NAN;
    }
    if (a->sts[s] != GR_OK)
      return INFINITY;          /* a non-finite momentum: too far */
    f += a->loss[s].loss;
    const double *gs = a->gq + s * dn;
    for (size_t e = 0; e < dn; e++)
      g[e] += gs[e];
  }
  (void) nvar;
  return f;
}

GrStatus
gr_shoot_atlas (const GrShootParams *params, size_t subjects, const double *targets,
    GrShootAtlasStart start, double *template_io, double *momenta_io,
    const GrLbfgsParams *lbfgs, int threads, GrShootAtlasResult *result, char *errbuf,
    size_t errlen)
{
  GrShootAtlasResult dummy;
  if (!result)
    result = &dummy;
  memset (result, 0, sizeof *result);
  if (!params || !targets || !template_io || !momenta_io || subjects < 1 ||
      (start != GR_SHOOT_ATLAS_FROM_MEAN && start != GR_SHOOT_ATLAS_FROM_GIVEN)) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  const size_t dn = params->n * (size_t) params->dim;
  if (dn == 0 || subjects > (size_t) INT32_MAX / dn - 1) {
    gr_set_err (errbuf, errlen, "too many unknowns");
    return GR_ERR_INVALID;
  }
  for (size_t e = 0; e < dn * subjects; e++)
    if (!isfinite (targets[e]) || !isfinite (momenta_io[e])) {
      gr_set_err (errbuf, errlen, "subject %zu: point %zu has a non-finite target or "
          "momentum", e / dn, (e % dn) / params->dim);
      return GR_ERR_INVALID;
    }
  if (start == GR_SHOOT_ATLAS_FROM_MEAN) {
    memset (template_io, 0, sizeof (double) * dn);
    for (size_t s = 0; s < subjects; s++)
      for (size_t e = 0; e < dn; e++)
        template_io[e] += targets[s * dn + e] / (double) subjects;
  }
  AtlasCtx a = { params, subjects, dn, targets, NULL, 0, NULL, NULL, NULL, GR_OK, errbuf,
    errlen };
  int nth = threads > 0 ? threads : omp_get_max_threads ();
  if ((size_t) nth > subjects)
    nth = (int) subjects;
  const size_t nvar = dn * (subjects + 1);
  double *x = malloc (sizeof (double) * nvar);
  a.eng = calloc ((size_t) nth, sizeof *a.eng);
  a.gq = malloc (sizeof (double) * dn * subjects);
  a.loss = calloc (subjects, sizeof *a.loss);
  a.sts = calloc (subjects, sizeof *a.sts);
  GrStatus st = GR_OK;
  if (!x || !a.eng || !a.gq || !a.loss || !a.sts) {
    gr_set_err (errbuf, errlen, "out of memory");
    st = GR_ERR_NOMEM;
    goto out;
  }
  for (int i = 0; i < nth; i++) {
    a.eng[i] = gr_shoot_new (params, GR_BACKEND_CPU, -1, &st, errbuf, errlen);
    if (!a.eng[i])
      goto out;
    a.neng = i + 1;
    gr_shoot_set_threads (a.eng[i], 1);
  }
  if (gr_shoot_set_template (a.eng[0], template_io, errbuf, errlen) != GR_OK) {
    st = GR_ERR_INVALID;
    goto out;
  }
  memcpy (x, template_io, sizeof (double) * dn);
  memcpy (x + dn, momenta_io, sizeof (double) * dn * subjects);

  const double t0 = gr_shoot_now_s ();
  GrLbfgsInfo info;
  GrLbfgsResult r = gr_lbfgs_minimize ((int) nvar, x, NULL, atlas_eval, NULL, &a, lbfgs,
      &info);
  if (a.status != GR_OK) {
    st = a.status;
    gr_set_err (errbuf, errlen, "out of memory");
    goto out;
  }
  if (r == GR_LBFGS_NOMEM || r == GR_LBFGS_INVALID) {
    st = r == GR_LBFGS_NOMEM ? GR_ERR_NOMEM : GR_ERR_INVALID;
    gr_set_err (errbuf, errlen, "%s", gr_lbfgs_result_string (r));
    goto out;
  }
  memcpy (template_io, x, sizeof (double) * dn);
  memcpy (momenta_io, x + dn, sizeof (double) * dn * subjects);
  result->result = r;
  result->iterations = info.iterations;
  result->evaluations = info.evaluations;
  result->loss0 = info.f0;
  result->loss = info.f;
  /* the split at the estimate (the last evaluation may have been a rejected trial) */
  {
    double *g = malloc (sizeof (double) * nvar);
    int abort_run = 0;
    if (g && isfinite (atlas_eval (&a, x, g, (int) nvar, &abort_run)))
      for (size_t s = 0; s < subjects; s++) {
        result->kinetic += a.loss[s].kinetic;
        result->mismatch += a.loss[s].mismatch;
      }
    free (g);
  }
  result->seconds = gr_shoot_now_s () - t0;
  if (r == GR_LBFGS_EVALUATION_ERROR) {
    gr_set_err (errbuf, errlen, "the loss is not finite at the start");
    st = GR_ERR_INVALID;
  }

out:
  for (int i = 0; i < a.neng; i++)
    gr_shoot_free (a.eng[i]);
  free (a.eng);
  free (a.gq);
  free (a.loss);
  free (a.sts);
  free (x);
  return st;
}
