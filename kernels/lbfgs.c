/* L-BFGS with a strong-Wolfe line search: see lbfgs.h.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "lbfgs.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void
gr_lbfgs_params_init (GrLbfgsParams *p)
{
  memset (p, 0, sizeof *p);
  p->m = 10;
  p->max_iterations = 400;
  p->max_evaluations = 0;
  p->gtol_rel = 1e-6;
  p->gtol_abs = 0.0;
  p->ftol = 1e-10;
  p->past = 5;
  p->c1 = 1e-4;
  p->c2 = 0.9;
  p->max_linesearch = 30;
}

const char *
gr_lbfgs_result_string (GrLbfgsResult r)
{
  switch (r) {
    case GR_LBFGS_CONVERGED_GRADIENT: return "converged (gradient tolerance)";
    case GR_LBFGS_CONVERGED_FUNCTION: return "converged (function tolerance)";
    case GR_LBFGS_MAX_ITERATIONS: return "maximum iterations reached";
    case GR_LBFGS_MAX_EVALUATIONS: return "maximum evaluations reached";
    case GR_LBFGS_LINESEARCH_FAILED: return "line search found no acceptable step";
    case GR_LBFGS_STOPPED: return "stopped by the caller";
    case GR_LBFGS_EVALUATION_ERROR: return "evaluation error";
    case GR_LBFGS_NOMEM: return "out of memory";
    case GR_LBFGS_INVALID: return "invalid parameters";
  }
  return "?";
}

int
gr_lbfgs_result_converged (GrLbfgsResult r)
{
  return r == GR_LBFGS_CONVERGED_GRADIENT || r == GR_LBFGS_CONVERGED_FUNCTION;
}

/* Vectorized (the simd reduction lets the compiler keep several partial sums), so the
 * ~50 vector passes of an iteration stay far below the cost of one evaluation even for
 * 60,000 unknowns. */
static double
dot (const double *a, const double *b, int n)
{
  double s = 0.0;
#pragma omp simd reduction(+:s)
  for (int i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}

/* ---- the state machine ------------------------------------------------------------
 *
 * One minimization is a GrLbfgs that asks its caller for evaluations (reverse
 * communication), so that many minimizations can share one batched evaluation (see
 * gr_shoot_batch_fit); gr_lbfgs_minimize drives one with a callback.  The steps are
 * those of a plain loop: the line search (bracketing, then zooming with safeguarded
 * cubic interpolation) is split at each evaluation, its loop variables kept here. */

typedef enum { LS_PENDING = -1, LS_OK, LS_FAIL, LS_ABORT, LS_MAXEVAL } LsResult;

typedef enum {
  PH_NEW,                       /* created, not started */
  PH_INIT,                      /* waiting for f(x0) */
  PH_BRACKET,                   /* line search: waiting for phi(a) while bracketing */
  PH_ZOOM,                      /* line search: waiting for phi(a) while zooming */
  PH_ITERATED,                  /* an iteration was accepted: waiting for resume */
  PH_DONE,
} Phase;

struct GrLbfgs {
  GrLbfgsParams par;
  int n, m;
  double *mem;
  double *x, *g, *d, *xp, *gp, *xt, *gt, *xb, *gb, *S, *Y;
  double *rho, *alph, *fpast;
  int nevals, iter, hist, head;
  double f, gnorm, gamma, a1, alpha;
  /* line search */
  double phi0, dphi0, fb, ab;
  int have_best, ls_evals, ls_i;
  double a, aprev, fprev, dprev;            /* bracketing */
  double lo, flo, dlo, hi, fhi, dhi;        /* zooming */
  Phase phase;
  GrLbfgsResult result;
  GrLbfgsInfo info;
};

GrLbfgs *
gr_lbfgs_new (int n, const GrLbfgsParams *params, GrLbfgsResult *why)
{
  GrLbfgsParams def;
  GrLbfgsResult dummy;
  if (!why)
    why = &dummy;
  if (!params) {
    gr_lbfgs_params_init (&def);
    params = &def;
  }
  if (n <= 0 || params->m < 1 || params->c1 <= 0.0 || params->c2 <= params->c1 ||
      params->c2 >= 1.0 || params->max_linesearch < 1 || params->max_iterations < 0 ||
      params->past < 1) {
    *why = GR_LBFGS_INVALID;
    return NULL;
  }
  GrLbfgs *L = calloc (1, sizeof *L);
  const size_t nn = (size_t) n, m = (size_t) params->m;
  if (L) {
    /* x, g, d, xp, gp, xt, gt, xb, gb, s[m], y[m]; rho[m], alph[m], fpast[past] */
    L->mem = malloc (sizeof (double) * (nn * (9 + 2 * m) + 2 * m + params->past));
  }
  if (!L || !L->mem) {
    free (L);
    *why = GR_LBFGS_NOMEM;
    return NULL;
  }
  L->par = *params;
  L->n = n;
  L->m = params->m;
  double *p = L->mem;
  double **arr[] = { &L->x, &L->g, &L->d, &L->xp, &L->gp, &L->xt, &L->gt, &L->xb, &L->gb };
  for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++, p += nn)
    *arr[i] = p;
  L->S = p;
  L->Y = L->S + nn * m;
  L->rho = L->Y + nn * m;
  L->alph = L->rho + m;
  L->fpast = L->alph + m;
  L->phase = PH_NEW;
  return L;
}

void
gr_lbfgs_free (GrLbfgs *L)
{
  if (!L)
    return;
  free (L->mem);
  free (L);
}

static GrLbfgsRequest
finish (GrLbfgs *L, GrLbfgsResult r)
{
  L->result = r;
  L->info.iterations = L->iter;
  L->info.evaluations = L->nevals;
  L->info.f = L->f;
  L->info.gnorm = L->gnorm;
  L->phase = PH_DONE;
  return GR_LBFGS_FINISHED;
}

/* Asks for phi(a) = f(xp + a d) unless a budget is spent (then returns false). */
static bool
ls_request (GrLbfgs *L, double a)
{
  if (L->ls_evals >= L->par.max_linesearch)
    return false;
  if (L->par.max_evaluations > 0 && L->nevals >= L->par.max_evaluations)
    return false;
  for (int i = 0; i < L->n; i++)
    L->xt[i] = L->xp[i] + a * L->d[i];
  L->a = a;
  return true;
}

static void
ls_keep (GrLbfgs *L, double a, double f)
{
  if (!L->have_best || f < L->fb) {
    memcpy (L->xb, L->xt, sizeof (double) * L->n);
    memcpy (L->gb, L->gt, sizeof (double) * L->n);
    L->fb = f;
    L->ab = a;
    L->have_best = 1;
  }
}

/* Minimizer of the cubic through (a, fa, da), (b, fb, db); NAN when none. */
static double
cubic_min (double a, double fa, double da, double b, double fb, double db)
{
  if (!isfinite (fa) || !isfinite (fb) || !isfinite (da) || !isfinite (db) || a == b)
    return NAN;
  double d1 = da + db - 3.0 * (fa - fb) / (a - b);
  double disc = d1 * d1 - da * db;
  if (disc < 0.0)
    return NAN;
  double d2 = copysign (sqrt (disc), b - a);
  double den = db - da + 2.0 * d2;
  if (den == 0.0)
    return NAN;
  return b - (b - a) * (db + d2 - d1) / den;
}

/* The best trial with sufficient decrease, when there is one, becomes the accepted
 * point (in xt / gt, alpha and *f set). */
static LsResult
ls_fallback (GrLbfgs *L, double *f)
{
  if (L->have_best && L->fb < L->phi0) {
    memcpy (L->xt, L->xb, sizeof (double) * L->n);
    memcpy (L->gt, L->gb, sizeof (double) * L->n);
    L->alpha = L->ab;
    *f = L->fb;
    return LS_OK;
  }
  return LS_FAIL;
}

/* Zoom: the next trial inside [lo, hi], or a result. */
static LsResult
zoom_next (GrLbfgs *L, double *f)
{
  double lo = L->lo, hi = L->hi;
  double w = fabs (hi - lo);
  if (w <= 1e-14 * fmax (fabs (lo), fabs (hi)) || w == 0.0)
    return ls_fallback (L, f);
  double a = cubic_min (lo, L->flo, L->dlo, hi, L->fhi, L->dhi);
  double amin = fmin (lo, hi), amax = fmax (lo, hi);
  if (!isfinite (a) || a < amin + 0.1 * w || a > amax - 0.1 * w)
    a = 0.5 * (lo + hi);
  if (!ls_request (L, a)) {
    LsResult res = ls_fallback (L, f);
    return res == LS_OK ? LS_OK : LS_MAXEVAL;
  }
  L->phase = PH_ZOOM;
  return LS_PENDING;
}

static LsResult
zoom_start (GrLbfgs *L, double lo, double flo, double dlo, double hi, double fhi,
    double dhi, double *f)
{
  L->lo = lo;
  L->flo = flo;
  L->dlo = dlo;
  L->hi = hi;
  L->fhi = fhi;
  L->dhi = dhi;
  return zoom_next (L, f);
}

static LsResult
zoom_told (GrLbfgs *L, double fa, double da, double *f)
{
  const double a = L->a;
  if (!isfinite (fa) || fa > L->phi0 + L->par.c1 * a * L->dphi0 || fa >= L->flo) {
    L->hi = a;
    L->fhi = fa;
    L->dhi = da;
  } else {
    ls_keep (L, a, fa);
    if (fabs (da) <= -L->par.c2 * L->dphi0) {
      L->alpha = a;
      *f = fa;
      return LS_OK;
    }
    if (da * (L->hi - L->lo) >= 0.0) {
      L->hi = L->lo;
      L->fhi = L->flo;
      L->dhi = L->dlo;
    }
    L->lo = a;
    L->flo = fa;
    L->dlo = da;
  }
  return zoom_next (L, f);
}

static LsResult
bracket_try (GrLbfgs *L, double a, double *f)
{
  if (!ls_request (L, a)) {
    LsResult res = ls_fallback (L, f);
    return res == LS_OK ? LS_OK : LS_MAXEVAL;
  }
  L->phase = PH_BRACKET;
  return LS_PENDING;
}

static LsResult
bracket_told (GrLbfgs *L, double fa, double da, double *f)
{
  const double amax = 1e20, a = L->a;
  if (!isfinite (fa) || fa > L->phi0 + L->par.c1 * a * L->dphi0 ||
      (L->ls_i > 0 && fa >= L->fprev))
    return zoom_start (L, L->aprev, L->fprev, L->dprev, a, fa, da, f);
  ls_keep (L, a, fa);
  if (fabs (da) <= -L->par.c2 * L->dphi0) {
    L->alpha = a;
    *f = fa;
    return LS_OK;
  }
  if (da >= 0.0)
    return zoom_start (L, a, fa, da, L->aprev, L->fprev, L->dprev, f);
  /* still descending: extrapolate */
  double an = cubic_min (L->aprev, L->fprev, L->dprev, a, fa, da);
  if (!isfinite (an) || an < 1.1 * a)
    an = 4.0 * a;
  if (an > 4.0 * a)
    an = 4.0 * a;
  if (a >= amax)
    return ls_fallback (L, f);
  L->aprev = a;
  L->fprev = fa;
  L->dprev = da;
  L->ls_i++;
  return bracket_try (L, fmin (an, amax), f);
}

static GrLbfgsRequest ls_finished (GrLbfgs *L, LsResult lr, double fnew);

/* A new line search along d from x (restarting from steepest descent when d is no
 * descent direction). */
static GrLbfgsRequest
begin_iteration (GrLbfgs *L)
{
  const int n = L->n;
  double dphi0 = dot (L->g, L->d, n);
  if (!(dphi0 < 0.0)) {
    L->hist = 0;
    for (int i = 0; i < n; i++)
      L->d[i] = -L->g[i];
    dphi0 = -L->gnorm * L->gnorm;
    L->a1 = 1.0 / L->gnorm;
  }
  memcpy (L->xp, L->x, sizeof (double) * n);
  memcpy (L->gp, L->g, sizeof (double) * n);
  L->phi0 = L->f;
  L->dphi0 = dphi0;
  L->have_best = 0;
  L->ls_evals = 0;
  L->ls_i = 0;
  L->aprev = 0.0;
  L->fprev = L->phi0;
  L->dprev = L->dphi0;
  double fnew = L->f;
  LsResult lr = bracket_try (L, L->a1, &fnew);
  if (lr == LS_PENDING)
    return GR_LBFGS_NEED_EVALUATION;
  return ls_finished (L, lr, fnew);
}

static GrLbfgsRequest
ls_finished (GrLbfgs *L, LsResult lr, double fnew)
{
  const int n = L->n;
  if (lr == LS_ABORT)
    return finish (L, GR_LBFGS_EVALUATION_ERROR);
  if (lr == LS_MAXEVAL)
    return finish (L, L->par.max_evaluations > 0 && L->nevals >= L->par.max_evaluations
        ? GR_LBFGS_MAX_EVALUATIONS : GR_LBFGS_LINESEARCH_FAILED);
  if (lr == LS_FAIL) {
    if (L->hist > 0) {
      /* the quasi-Newton model failed: retry once from steepest descent */
      L->hist = 0;
      for (int i = 0; i < n; i++)
        L->d[i] = -L->g[i];
      L->a1 = 1.0 / L->gnorm;
      return begin_iteration (L);
    }
    return finish (L, GR_LBFGS_LINESEARCH_FAILED);
  }
  memcpy (L->x, L->xt, sizeof (double) * n);
  memcpy (L->g, L->gt, sizeof (double) * n);
  L->f = fnew;
  L->iter++;
  L->gnorm = sqrt (dot (L->g, L->g, n));

  /* correction pair */
  const size_t nn = (size_t) n;
  double *s = L->S + (size_t) L->head * nn, *y = L->Y + (size_t) L->head * nn;
  for (int i = 0; i < n; i++) {
    s[i] = L->x[i] - L->xp[i];
    y[i] = L->g[i] - L->gp[i];
  }
  double sy = dot (s, y, n), yy = dot (y, y, n);
  if (sy > 1e-300 && yy > 0.0 && sy > 1e-12 * sqrt (dot (s, s, n) * yy)) {
    L->rho[L->head] = 1.0 / sy;
    L->gamma = sy / yy;
    L->head = (L->head + 1) % L->m;
    if (L->hist < L->m)
      L->hist++;
  }
  L->phase = PH_ITERATED;
  return GR_LBFGS_NEW_ITERATE;
}

GrLbfgsRequest
gr_lbfgs_start (GrLbfgs *L, const double *x0)
{
  memcpy (L->x, x0, sizeof (double) * L->n);
  memset (&L->info, 0, sizeof L->info);
  L->nevals = L->iter = L->hist = L->head = 0;
  L->gamma = 1.0;
  L->f = NAN;
  L->gnorm = NAN;
  L->alpha = 0.0;
  L->phase = PH_INIT;
  return GR_LBFGS_NEED_EVALUATION;
}

const double *
gr_lbfgs_point (const GrLbfgs *L)
{
  return L->phase == PH_BRACKET || L->phase == PH_ZOOM ? L->xt : L->x;
}

double *
gr_lbfgs_gradient_buffer (GrLbfgs *L)
{
  return L->phase == PH_BRACKET || L->phase == PH_ZOOM ? L->gt : L->g;
}

GrLbfgsRequest
gr_lbfgs_tell (GrLbfgs *L, double f, int abort_run)
{
  const int n = L->n;
  L->nevals++;
  if (L->phase == PH_INIT) {
    L->f = f;
    L->gnorm = sqrt (dot (L->g, L->g, n));
    L->info.f0 = f;
    L->info.gnorm0 = L->gnorm;
    if (abort_run || !isfinite (f) || !isfinite (L->gnorm))
      return finish (L, GR_LBFGS_EVALUATION_ERROR);
    if (L->gnorm == 0.0 || (L->par.gtol_abs > 0.0 && L->gnorm <= L->par.gtol_abs))
      return finish (L, GR_LBFGS_CONVERGED_GRADIENT);
    for (int i = 0; i < n; i++)
      L->d[i] = -L->g[i];
    L->a1 = 1.0 / L->gnorm;
    L->fpast[0] = f;
    return begin_iteration (L);
  }
  if (L->phase != PH_BRACKET && L->phase != PH_ZOOM)
    return L->phase == PH_DONE ? GR_LBFGS_FINISHED : GR_LBFGS_NEW_ITERATE;
  L->ls_evals++;
  if (abort_run)
    return ls_finished (L, LS_ABORT, f);
  double da = isfinite (f) ? dot (L->gt, L->d, n) : NAN;
  double fnew = f;
  LsResult lr = L->phase == PH_BRACKET ? bracket_told (L, f, da, &fnew)
      : zoom_told (L, f, da, &fnew);
  if (lr == LS_PENDING)
    return GR_LBFGS_NEED_EVALUATION;
  return ls_finished (L, lr, fnew);
}

GrLbfgsRequest
gr_lbfgs_resume (GrLbfgs *L, int stop)
{
  if (L->phase != PH_ITERATED)
    return L->phase == PH_DONE ? GR_LBFGS_FINISHED : GR_LBFGS_NEED_EVALUATION;
  const GrLbfgsParams *par = &L->par;
  const int n = L->n, m = L->m, iter = L->iter;
  const size_t nn = (size_t) n;
  if (stop)
    return finish (L, GR_LBFGS_STOPPED);
  if ((par->gtol_rel > 0.0 && L->gnorm <= par->gtol_rel * L->info.gnorm0) ||
      (par->gtol_abs > 0.0 && L->gnorm <= par->gtol_abs) || L->gnorm == 0.0)
    return finish (L, GR_LBFGS_CONVERGED_GRADIENT);
  if (par->ftol > 0.0 && iter >= par->past) {
    double fold = L->fpast[iter % par->past];
    if (fold - L->f <= par->ftol * fabs (L->f))
      return finish (L, GR_LBFGS_CONVERGED_FUNCTION);
  }
  L->fpast[iter % par->past] = L->f;
  if (par->max_iterations > 0 && iter >= par->max_iterations)
    return finish (L, GR_LBFGS_MAX_ITERATIONS);
  if (par->max_evaluations > 0 && L->nevals >= par->max_evaluations)
    return finish (L, GR_LBFGS_MAX_EVALUATIONS);

  /* two-loop recursion: d = -H g */
  double *d = L->d;
  for (int i = 0; i < n; i++)
    d[i] = -L->g[i];
  int k = L->head;
  for (int c = 0; c < L->hist; c++) {
    k = (k - 1 + m) % m;
    const double *sk = L->S + (size_t) k * nn, *yk = L->Y + (size_t) k * nn;
    L->alph[k] = L->rho[k] * dot (sk, d, n);
    for (int i = 0; i < n; i++)
      d[i] -= L->alph[k] * yk[i];
  }
  if (L->hist > 0)
    for (int i = 0; i < n; i++)
      d[i] *= L->gamma;
  for (int c = 0; c < L->hist; c++) {
    const double *sk = L->S + (size_t) k * nn, *yk = L->Y + (size_t) k * nn;
    double b = L->rho[k] * dot (yk, d, n);
    for (int i = 0; i < n; i++)
      d[i] += sk[i] * (L->alph[k] - b);
    k = (k + 1) % m;
  }
  L->a1 = L->hist > 0 ? 1.0 : 1.0 / L->gnorm;
  return begin_iteration (L);
}

const double *
gr_lbfgs_x (const GrLbfgs *L)
{
  return L->x;
}

const double *
gr_lbfgs_g (const GrLbfgs *L)
{
  return L->g;
}

double
gr_lbfgs_f (const GrLbfgs *L)
{
  return L->f;
}

GrLbfgsResult
gr_lbfgs_result (const GrLbfgs *L, GrLbfgsInfo *info)
{
  if (info) {
    *info = L->info;
    if (L->phase != PH_DONE) {
      info->iterations = L->iter;
      info->evaluations = L->nevals;
      info->f = L->f;
      info->gnorm = L->gnorm;
    }
  }
  return L->result;
}

/* ---- the minimizer with a callback -------------------------------------------------- */

GrLbfgsResult
gr_lbfgs_minimize (int n, double *x, double *g_out, GrLbfgsEvaluate eval,
    GrLbfgsProgress progress, void *user, const GrLbfgsParams *params, GrLbfgsInfo *info)
{
  GrLbfgsInfo dummy;
  if (!info)
    info = &dummy;
  memset (info, 0, sizeof *info);
  if (!x || !eval)
    return GR_LBFGS_INVALID;
  GrLbfgsResult why;
  GrLbfgs *L = gr_lbfgs_new (n, params, &why);
  if (!L)
    return why;
  GrLbfgsRequest req = gr_lbfgs_start (L, x);
  while (req != GR_LBFGS_FINISHED) {
    if (req == GR_LBFGS_NEED_EVALUATION) {
      int abort_run = 0;
      double f = eval (user, gr_lbfgs_point (L), gr_lbfgs_gradient_buffer (L), n,
          &abort_run);
      req = gr_lbfgs_tell (L, f, abort_run);
    } else {
      int stop = progress && progress (user, L->x, L->g, L->f, L->gnorm, L->alpha, n,
          L->iter, L->nevals);
      req = gr_lbfgs_resume (L, stop);
    }
  }
  GrLbfgsResult r = gr_lbfgs_result (L, info);
  /* the start point stays when f(x0) could not be evaluated, as before */
  if (L->iter > 0)
    memcpy (x, L->x, sizeof (double) * n);
  if (g_out)
    memcpy (g_out, L->g, sizeof (double) * n);
  gr_lbfgs_free (L);
  return r;
}
