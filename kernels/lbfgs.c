/* L-BFGS with a strong-Wolfe line search: see lbfgs.h.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "lbfgs.h"

#include <math.h>
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

/* ---- line search ----------------------------------------------------------------- */

typedef enum { LS_OK, LS_FAIL, LS_ABORT, LS_MAXEVAL } LsResult;

typedef struct {
  int n;
  const double *x0, *d;
  double *xt, *gt;              /* the last trial point and its gradient */
  double *xb, *gb;              /* the best trial with sufficient decrease */
  double fb, ab;
  int have_best;
  GrLbfgsEvaluate eval;
  void *user;
  int *nevals;
  int max_evals;                /* 0 = no limit */
  int ls_evals, max_ls;
  double phi0, dphi0, c1, c2;
} Ls;

/* Evaluates phi(a); returns 0 when the evaluation budget is gone, -1 on abort. */
static int
ls_phi (Ls *ls, double a, double *f, double *dphi)
{
  if (ls->ls_evals >= ls->max_ls)
    return 0;
  if (ls->max_evals > 0 && *ls->nevals >= ls->max_evals)
    return 0;
  for (int i = 0; i < ls->n; i++)
    ls->xt[i] = ls->x0[i] + a * ls->d[i];
  int abort_run = 0;
  *f = ls->eval (ls->user, ls->xt, ls->gt, ls->n, &abort_run);
  (*ls->nevals)++;
  ls->ls_evals++;
  if (abort_run)
    return -1;
  *dphi = isfinite (*f) ? dot (ls->gt, ls->d, ls->n) : NAN;
  return 1;
}

static void
ls_keep (Ls *ls, double a, double f)
{
  if (!ls->have_best || f < ls->fb) {
    memcpy (ls->xb, ls->xt, sizeof (double) * ls->n);
    memcpy (ls->gb, ls->gt, sizeof (double) * ls->n);
    ls->fb = f;
    ls->ab = a;
    ls->have_best = 1;
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

/* On LS_OK the accepted point is in xt/gt (copied from xb/gb when the fallback is
 * used), *alpha and *f are set. */
static LsResult
ls_finish_fallback (Ls *ls, double *alpha, double *f)
{
  if (ls->have_best && ls->fb < ls->phi0) {
    memcpy (ls->xt, ls->xb, sizeof (double) * ls->n);
    memcpy (ls->gt, ls->gb, sizeof (double) * ls->n);
    *alpha = ls->ab;
    *f = ls->fb;
    return LS_OK;
  }
  return LS_FAIL;
}

static LsResult
ls_zoom (Ls *ls, double lo, double flo, double dlo, double hi, double fhi, double dhi,
    double *alpha, double *f)
{
  for (;;) {
    double w = fabs (hi - lo);
    if (w <= 1e-14 * fmax (fabs (lo), fabs (hi)) || w == 0.0)
      return ls_finish_fallback (ls, alpha, f);
    double a = cubic_min (lo, flo, dlo, hi, fhi, dhi);
    double amin = fmin (lo, hi), amax = fmax (lo, hi);
    if (!isfinite (a) || a < amin + 0.1 * w || a > amax - 0.1 * w)
      a = 0.5 * (lo + hi);
    double fa, da;
    int r = ls_phi (ls, a, &fa, &da);
    if (r < 0)
      return LS_ABORT;
    if (r == 0) {
      LsResult res = ls_finish_fallback (ls, alpha, f);
      return res == LS_OK ? LS_OK : LS_MAXEVAL;
    }
    if (!isfinite (fa) || fa > ls->phi0 + ls->c1 * a * ls->dphi0 || fa >= flo) {
      hi = a;
      fhi = fa;
      dhi = da;
    } else {
      ls_keep (ls, a, fa);
      if (fabs (da) <= -ls->c2 * ls->dphi0) {
        *alpha = a;
        *f = fa;
        return LS_OK;
      }
      if (da * (hi - lo) >= 0.0) {
        hi = lo;
        fhi = flo;
        dhi = dlo;
      }
      lo = a;
      flo = fa;
      dlo = da;
    }
  }
}

static LsResult
line_search (Ls *ls, double a1, double *alpha, double *f)
{
  const double amax = 1e20;
  double aprev = 0.0, fprev = ls->phi0, dprev = ls->dphi0;
  double a = a1;
  ls->have_best = 0;
  ls->ls_evals = 0;
  for (int i = 0;; i++) {
    double fa, da;
    int r = ls_phi (ls, a, &fa, &da);
    if (r < 0)
      return LS_ABORT;
    if (r == 0) {
      LsResult res = ls_finish_fallback (ls, alpha, f);
      return res == LS_OK ? LS_OK : LS_MAXEVAL;
    }
    if (!isfinite (fa) || fa > ls->phi0 + ls->c1 * a * ls->dphi0 || (i > 0 && fa >= fprev))
      return ls_zoom (ls, aprev, fprev, dprev, a, fa, da, alpha, f);
    ls_keep (ls, a, fa);
    if (fabs (da) <= -ls->c2 * ls->dphi0) {
      *alpha = a;
      *f = fa;
      return LS_OK;
    }
    if (da >= 0.0)
      return ls_zoom (ls, a, fa, da, aprev, fprev, dprev, alpha, f);
    /* still descending: extrapolate */
    double an = cubic_min (aprev, fprev, dprev, a, fa, da);
    if (!isfinite (an) || an < 1.1 * a)
      an = 4.0 * a;
    if (an > 4.0 * a)
      an = 4.0 * a;
    if (a >= amax)
      return ls_finish_fallback (ls, alpha, f);
    aprev = a;
    fprev = fa;
    dprev = da;
    a = fmin (an, amax);
  }
}

/* ---- the minimizer ----------------------------------------------------------------- */

GrLbfgsResult
gr_lbfgs_minimize (int n, double *x, double *g_out, GrLbfgsEvaluate eval,
    GrLbfgsProgress progress, void *user, const GrLbfgsParams *params, GrLbfgsInfo *info)
{
  GrLbfgsParams def;
  if (!params) {
    gr_lbfgs_params_init (&def);
    params = &def;
  }
  GrLbfgsInfo dummy;
  if (!info)
    info = &dummy;
  memset (info, 0, sizeof *info);
  if (n <= 0 || !x || !eval || params->m < 1 || params->c1 <= 0.0 ||
      params->c2 <= params->c1 || params->c2 >= 1.0 || params->max_linesearch < 1 ||
      params->max_iterations < 0 || params->past < 1)
    return GR_LBFGS_INVALID;

  const int m = params->m;
  size_t nn = (size_t) n;
  /* g, d, xp, gp, xt, gt, xb, gb, s[m], y[m] */
  double *mem = malloc (sizeof (double) * nn * (8 + 2 * (size_t) m));
  double *rho = malloc (sizeof (double) * m);
  double *alph = malloc (sizeof (double) * m);
  double *fpast = malloc (sizeof (double) * params->past);
  if (!mem || !rho || !alph || !fpast) {
    free (mem);
    free (rho);
    free (alph);
    free (fpast);
    return GR_LBFGS_NOMEM;
  }
  double *g = mem, *d = g + nn, *xp = d + nn, *gp = xp + nn, *xt = gp + nn, *gt = xt + nn;
  double *xb = gt + nn, *gb = xb + nn, *S = gb + nn, *Y = S + nn * m;
  int nevals = 0, iter = 0;
  GrLbfgsResult res;

  int abort_run = 0;
  double f = eval (user, x, g, n, &abort_run);
  nevals = 1;
  double gnorm = sqrt (dot (g, g, n));
  info->f0 = f;
  info->gnorm0 = gnorm;
  if (abort_run || !isfinite (f) || !isfinite (gnorm)) {
    res = GR_LBFGS_EVALUATION_ERROR;
    goto done;
  }
  if (gnorm == 0.0 || (params->gtol_abs > 0.0 && gnorm <= params->gtol_abs)) {
    res = GR_LBFGS_CONVERGED_GRADIENT;
    goto done;
  }

  Ls ls = { .n = n, .x0 = xp, .d = d, .xt = xt, .gt = gt, .xb = xb, .gb = gb,
    .eval = eval, .user = user, .nevals = &nevals, .max_evals = params->max_evaluations,
    .max_ls = params->max_linesearch, .c1 = params->c1, .c2 = params->c2 };
  int hist = 0, head = 0;       /* pairs stored; slot of the next pair */
  double gamma = 1.0;
  for (int i = 0; i < n; i++)
    d[i] = -g[i];
  double a1 = 1.0 / gnorm;
  fpast[0] = f;

  for (;;) {
    double dphi0 = dot (g, d, n);
    if (!(dphi0 < 0.0)) {
      /* not a descent direction: restart from steepest descent */
      hist = 0;
      for (int i = 0; i < n; i++)
        d[i] = -g[i];
      dphi0 = -gnorm * gnorm;
      a1 = 1.0 / gnorm;
    }
    memcpy (xp, x, sizeof (double) * nn);
    memcpy (gp, g, sizeof (double) * nn);
    ls.phi0 = f;
    ls.dphi0 = dphi0;
    double alpha = 0.0, fnew = f;
    LsResult lr = line_search (&ls, a1, &alpha, &fnew);
    if (lr == LS_ABORT) {
      res = GR_LBFGS_EVALUATION_ERROR;
      goto done;
    }
    if (lr == LS_MAXEVAL) {
      res = params->max_evaluations > 0 && nevals >= params->max_evaluations
          ? GR_LBFGS_MAX_EVALUATIONS : GR_LBFGS_LINESEARCH_FAILED;
      goto done;
    }
    if (lr == LS_FAIL) {
      if (hist > 0) {
        /* the quasi-Newton model failed: retry once from steepest descent */
        hist = 0;
        for (int i = 0; i < n; i++)
          d[i] = -g[i];
        a1 = 1.0 / gnorm;
        continue;
      }
      res = GR_LBFGS_LINESEARCH_FAILED;
      goto done;
    }
    memcpy (x, xt, sizeof (double) * nn);
    memcpy (g, gt, sizeof (double) * nn);
    f = fnew;
    iter++;
    gnorm = sqrt (dot (g, g, n));

    /* correction pair */
    double *s = S + (size_t) head * nn, *y = Y + (size_t) head * nn;
    for (int i = 0; i < n; i++) {
      s[i] = x[i] - xp[i];
      y[i] = g[i] - gp[i];
    }
    double sy = dot (s, y, n), yy = dot (y, y, n);
    if (sy > 1e-300 && yy > 0.0 && sy > 1e-12 * sqrt (dot (s, s, n) * yy)) {
      rho[head] = 1.0 / sy;
      gamma = sy / yy;
      head = (head + 1) % m;
      if (hist < m)
        hist++;
    }

    if (progress && progress (user, x, g, f, gnorm, alpha, n, iter, nevals)) {
      res = GR_LBFGS_STOPPED;
      goto done;
    }
    if ((params->gtol_rel > 0.0 && gnorm <= params->gtol_rel * info->gnorm0) ||
        (params->gtol_abs > 0.0 && gnorm <= params->gtol_abs) || gnorm == 0.0) {
      res = GR_LBFGS_CONVERGED_GRADIENT;
      goto done;
    }
    if (params->ftol > 0.0 && iter >= params->past) {
      double fold = fpast[iter % params->past];
      if (fold - f <= params->ftol * fabs (f)) {
        res = GR_LBFGS_CONVERGED_FUNCTION;
        goto done;
      }
    }
    fpast[iter % params->past] = f;
    if (params->max_iterations > 0 && iter >= params->max_iterations) {
      res = GR_LBFGS_MAX_ITERATIONS;
      goto done;
    }
    if (params->max_evaluations > 0 && nevals >= params->max_evaluations) {
      res = GR_LBFGS_MAX_EVALUATIONS;
      goto done;
    }

    /* two-loop recursion: d = -H g */
    for (int i = 0; i < n; i++)
      d[i] = -g[i];
    int k = head;
    for (int c = 0; c < hist; c++) {
      k = (k - 1 + m) % m;
      const double *sk = S + (size_t) k * nn, *yk = Y + (size_t) k * nn;
      alph[k] = rho[k] * dot (sk, d, n);
      for (int i = 0; i < n; i++)
        d[i] -= alph[k] * yk[i];
    }
    if (hist > 0)
      for (int i = 0; i < n; i++)
        d[i] *= gamma;
    for (int c = 0; c < hist; c++) {
      const double *sk = S + (size_t) k * nn, *yk = Y + (size_t) k * nn;
      double b = rho[k] * dot (yk, d, n);
      for (int i = 0; i < n; i++)
        d[i] += sk[i] * (alph[k] - b);
      k = (k + 1) % m;
    }
    a1 = hist > 0 ? 1.0 : 1.0 / gnorm;
  }

done:
  info->iterations = iter;
  info->evaluations = nevals;
  info->f = f;
  info->gnorm = gnorm;
  if (g_out)
    memcpy (g_out, g, sizeof (double) * nn);
  free (mem);
  free (rho);
  free (alph);
  free (fpast);
  return res;
}
