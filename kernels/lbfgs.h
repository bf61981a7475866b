/* Limited-memory BFGS minimization with a strong-Wolfe line search (plain C, double).
 *
 * Two-loop recursion with m correction pairs and the initial Hessian scaled by
 * gamma = s.y / y.y; the line search brackets a step satisfying the strong Wolfe
 * conditions (sufficient decrease c1, curvature c2) and zooms with safeguarded cubic
 * interpolation (Nocedal & Wright, Numerical Optimization, algorithms 3.5 / 3.6).
 * Non-finite function values are treated as "too far" and the step shrinks.
 *
 * Written here rather than linking liblbfgs (Debian's liblbfgs-dev): it keeps the GPU
 * machines and user builds free of one more runtime library, and lets the caller stop
 * the run from the progress callback and keep the best point on a line-search failure.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_LBFGS_H
#define GR_LBFGS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Returns f(x) and writes its gradient into g (n doubles).  Return NAN or an infinity
 * when x is outside the domain (the line search backs off); set *abort_run to a
 * non-zero value to stop the minimization (an evaluation error). */
typedef double (*GrLbfgsEvaluate) (void *user, const double *x, double *g, int n,
    int *abort_run);

/* Called after each accepted iteration; return non-zero to stop. */
typedef int (*GrLbfgsProgress) (void *user, const double *x, const double *g, double f,
    double gnorm, double step, int n, int iteration, int evaluations);

typedef struct {
  int m;                  /* correction pairs kept (default 10) */
  int max_iterations;     /* 0 = no limit (default 400) */
  int max_evaluations;    /* 0 = no limit (default 0) */
  double gtol_rel;        /* stop when |g| <= gtol_rel * |g0| (default 1e-6; 0 = off) */
  double gtol_abs;        /* stop when |g| <= gtol_abs (default 0 = off) */
  double ftol;            /* stop when (f[k-past] - f[k]) <= ftol * |f[k]| (default
                           * 1e-10; 0 = off) */
  int past;               /* iterations the ftol test looks back (default 5) */
  double c1, c2;          /* Wolfe constants (default 1e-4, 0.9) */
  int max_linesearch;     /* evaluations per line search (default 30) */
} GrLbfgsParams;

typedef enum {
  GR_LBFGS_CONVERGED_GRADIENT = 0,  /* gtol_rel / gtol_abs reached */
  GR_LBFGS_CONVERGED_FUNCTION = 1,  /* ftol reached */
  GR_LBFGS_MAX_ITERATIONS = 2,
  GR_LBFGS_MAX_EVALUATIONS = 3,
  GR_LBFGS_LINESEARCH_FAILED = 4,   /* no acceptable step (often: rounding level reached) */
  GR_LBFGS_STOPPED = 5,             /* the progress callback asked to stop */
  GR_LBFGS_EVALUATION_ERROR = 6,    /* the evaluation set *abort_run, or f(x0) not finite */
  GR_LBFGS_NOMEM = 7,
  GR_LBFGS_INVALID = 8,             /* bad parameters */
} GrLbfgsResult;

typedef struct {
  int iterations;         /* accepted iterations */
  int evaluations;        /* calls of the evaluation function */
  double f;               /* f at the returned x */
  double gnorm;           /* |g| at the returned x */
  double gnorm0;          /* |g| at the start */
  double f0;              /* f at the start */
} GrLbfgsInfo;

void gr_lbfgs_params_init (GrLbfgsParams *p);
const char *gr_lbfgs_result_string (GrLbfgsResult r);
/* True for the results that mean "a tolerance was met". */
int gr_lbfgs_result_converged (GrLbfgsResult r);

/* Minimizes from x (n doubles, overwritten with the best point found; also on
 * failure, x is the last accepted iterate).  g_out (may be NULL) receives the gradient
 * at the returned x.  info may be NULL. */
GrLbfgsResult gr_lbfgs_minimize (int n, double *x, double *g_out, GrLbfgsEvaluate eval,
    GrLbfgsProgress progress, void *user, const GrLbfgsParams *params,
    GrLbfgsInfo *info);

/* ---- reverse communication ---------------------------------------------------------
 * The same minimization, asking its caller for evaluations instead of calling back, so
 * that many independent minimizations (each with its own state) can share batched
 * evaluations: start, then while the answer is not FINISHED:
 *   NEED_EVALUATION: evaluate f at gr_lbfgs_point, write the gradient into
 *     gr_lbfgs_gradient_buffer, then gr_lbfgs_tell (f, abort_run);
 *   NEW_ITERATE: an iteration was accepted (gr_lbfgs_x / _g / _f); report progress,
 *     then gr_lbfgs_resume (stop).
 * gr_lbfgs_minimize is this loop with a callback: both give the same iterates. */
typedef struct GrLbfgs GrLbfgs;

typedef enum {
  GR_LBFGS_NEED_EVALUATION = 0,
  GR_LBFGS_NEW_ITERATE = 1,
  GR_LBFGS_FINISHED = 2,
} GrLbfgsRequest;

/* n unknowns; params may be NULL (defaults).  NULL with *why = INVALID or NOMEM. */
GrLbfgs *gr_lbfgs_new (int n, const GrLbfgsParams *params, GrLbfgsResult *why);
void gr_lbfgs_free (GrLbfgs *L);
/* Starts (or restarts) from x0 (copied); asks for the first evaluation. */
GrLbfgsRequest gr_lbfgs_start (GrLbfgs *L, const double *x0);
const double *gr_lbfgs_point (const GrLbfgs *L);
double *gr_lbfgs_gradient_buffer (GrLbfgs *L);
GrLbfgsRequest gr_lbfgs_tell (GrLbfgs *L, double f, int abort_run);
GrLbfgsRequest gr_lbfgs_resume (GrLbfgs *L, int stop);
/* The current iterate (the best point accepted so far), its gradient and value. */
const double *gr_lbfgs_x (const GrLbfgs *L);
const double *gr_lbfgs_g (const GrLbfgs *L);
double gr_lbfgs_f (const GrLbfgs *L);
/* The result once FINISHED (info may be NULL). */
GrLbfgsResult gr_lbfgs_result (const GrLbfgs *L, GrLbfgsInfo *info);

#ifdef __cplusplus
}
#endif
#endif
