/* Benchmark of landmark geodesic shooting: the seed's problem (N = 1847 landmarks in
 * 3-D, T = 40 time points, sigma 1.5, lambda 5e5, 400 L-BFGS iterations) and N from
 * 500 to 20,000, on the CPU and CUDA backends (float32 with float64 accumulation,
 * Euler).
 *
 *   bench_shoot [out.json]
 *
 * The problem: a closed "bunny-like" surface (tests/shoot_testdata.h) of N points,
 * radius scaled with sqrt(N) so the spacing stays ~0.8 (about sigma / 2); the target
 * is the template shot with a smooth momentum plus uniform noise of +-0.05, so the
 * mismatch cannot reach zero and every one of the 400 iterations does work (the
 * tolerances are 0).  Times are wall-clock: a fit from p0 = 0 (gr_shoot_fit), and
 * loss+gradient evaluations (median after warm-up), host transfers included.
 *
 * Environment (all optional):
 *   GEOREG_BENCH_SIZES          N values, comma separated (500,1000,1847,5000,10000,20000)
 *   GEOREG_BENCH_BACKENDS       cpu,cuda (default: both where available)
 *   GEOREG_BENCH_ITERATIONS     L-BFGS iterations (400)
 *   GEOREG_BENCH_BIG_ITERATIONS iterations above N = 5000 (100)
 *   GEOREG_BENCH_CPU_MAX_N      largest N timed on the CPU (5000; per evaluation)
 *   GEOREG_BENCH_CPU_FIT_MAX_N  largest N fitted in full on the CPU (500); above it
 *                               the CPU fit time is projected: median evaluation time x
 *                               the evaluations the CUDA fit used
 *   GEOREG_BENCH_REPS           timed evaluations (CUDA 20, CPU 3)
 *   GEOREG_BENCH_THREADS        CPU threads (OpenMP's default)
 *   GEOREG_BENCH_DUMP           folder: write tmpl_N.csv and tgt_N.csv (for
 *                               tools/bench_shoot_torch.py, so both solve the same data)
 *   GEOREG_BENCH_POPULATION     S: instead of the above, a population: S subjects of
 *                               N points (the first of GEOREG_BENCH_SIZES, default
 *                               1847) registered to one template together
 *                               (gr_shoot_batch_fit, seed settings, tolerances 0), on
 *                               each backend of GEOREG_BENCH_BACKENDS; then
 *                               GEOREG_BENCH_POP_CHECK subjects (default 3) registered
 *                               alone, their losses compared (1e-6 relative, FAIL
 *                               beyond): alone = the population API with capacity 1
 *                               (on CUDA the batch's row kernels: exact); the
 *                               single-subject API's loss (CUDA: grouped kernels)
 *                               is printed beside it.  Prints the time per 100 subjects, the
 *                               device's share (one timed evaluation of all subjects
 *                               x the evaluations) and the floors (exponentials over
 *                               the SFUs, FP32 issue) for the device's SMs and
 *                               clock.  With
 *                               GEOREG_BENCH_DUMP: pop_tmpl_N.csv and
 *                               pop_targets_N_S.csv (columns subject,x,y,z) for
 *                               tools/bench_population_torch.py
 *   GEOREG_BENCH_TUNE           N values: instead of the above, time every CUDA kernel
 *                               variant (GEOREG_SHOOT_TILED / _RPT / _TPR, see
 *                               kernels/shoot_cuda.cu) and the automatic choice; a full
 *                               fit too at N = 1847
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pointset_io.h"
#include "shoot.h"
#include "shoot_testdata.h"
#include "bench_util.h"

#define SIGMA 1.5
#define T_POINTS 40
#define LAMBDA 5e5

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int
env_int (const char *name, int def)
{
  const char *v = getenv (name);
  return v && *v ? atoi (v) : def;
}

/* The seed's settings for n 3-D landmarks. */
static GrShootParams
seed_params (size_t n)
{
  GrShootParams sp;
  gr_shoot_params_init (&sp);
  sp.n = n;
  sp.dim = 3;
  sp.sigma = SIGMA;
  sp.time_points = T_POINTS;
  sp.lambda = LAMBDA;
  return sp;
}

static void
make_problem (size_t n, double *q0, double *tgt)
{
  double radius = 10.0 * sqrt ((double) n / 1847.0);
  td_bunny3d (n, radius, q0);
  double *p = malloc (sizeof (double) * n * 3);
  td_smooth_momentum (q0, n, 3, 0.04, 0.25, p);
  GrShootParams sp = seed_params (n);
  GrShoot *s = gr_shoot_new (&sp, GR_BACKEND_AUTO, -1, NULL, NULL, 0);
  gr_shoot_set_template (s, q0, NULL, 0);
  gr_shoot_set_target (s, q0, NULL, 0);
  gr_shoot_flow (s, p, tgt, NULL, NULL, 0, NULL, NULL, 0);
  gr_shoot_free (s);
  uint64_t st = 2026 + n;
  for (size_t i = 0; i < n * 3; i++)
    tgt[i] += 0.05 * td_uniform (&st);
  free (p);
}

typedef struct {
  const char *backend;
  size_t n;
  double eval_ms;               /* median loss+gradient evaluation */
  int iterations, evaluations;  /* of the fit (0 = no fit run) */
  double fit_s;                 /* measured fit time, or NAN */
  double projected_s;           /* eval_ms x evaluations of the reference fit, or NAN */
  double dist0, dist1;          /* mean landmark distance before / after the fit */
  double loss0, loss1;
  const char *stop;
  char device[160];
} Result;

static int
run_one (GrBackend be, size_t n, const double *q0, const double *tgt, int iterations,
    int reps, int fit, int threads, Result *r)
{
  GrShootParams sp = seed_params (n);
  char err[256] = "";
  GrStatus st;
  GrShoot *s = gr_shoot_new (&sp, be, -1, &st, err, sizeof err);
  if (!s) {
    fprintf (stderr, "%s N=%zu: %s\n", gr_backend_name (be), n, err);
    return 0;
  }
  if (threads > 0)
    gr_shoot_set_threads (s, threads);
  gr_shoot_set_template (s, q0, NULL, 0);
  gr_shoot_set_target (s, tgt, NULL, 0);
  memset (r, 0, sizeof *r);
  r->backend = gr_backend_name (be);
  r->n = n;
  r->fit_s = r->projected_s = NAN;
  snprintf (r->device, sizeof r->device, "%s", gr_shoot_device_description (s));
  size_t m = n * 3;
  double *p = calloc (m, sizeof (double)), *g = malloc (sizeof (double) * m);
  double *q1 = malloc (sizeof (double) * m);
  GrShootLoss l;
  /* evaluations at a non-trivial momentum: a small smooth field */
  td_smooth_momentum (q0, n, 3, 0.01, 0.25, p);
  int warm = be == GR_BACKEND_CUDA ? 3 : 1;
  for (int i = 0; i < warm; i++)
    gr_shoot_loss_grad (s, p, g, &l, NULL, 0);
  double *t = malloc (sizeof (double) * reps);
  for (int i = 0; i < reps; i++) {
    double t0 = now ();
    if (gr_shoot_loss_grad (s, p, g, &l, err, sizeof err) != GR_OK) {
      fprintf (stderr, "evaluation failed: %s\n", err);
      return 0;
    }
    t[i] = now () - t0;
  }
  qsort (t, reps, sizeof (double), bench_cmp_double);
  r->eval_ms = 1e3 * t[reps / 2];
  free (t);
  r->dist0 = td_mean_distance (q0, tgt, n, 3);
  if (fit) {
    memset (p, 0, sizeof (double) * m);
    GrLbfgsParams lp;
    gr_lbfgs_params_init (&lp);
    lp.max_iterations = iterations;
    lp.gtol_rel = 0;
    lp.ftol = 0;
    GrShootFitResult fr;
    if (gr_shoot_fit (s, p, &lp, NULL, NULL, &fr, err, sizeof err) != GR_OK) {
      fprintf (stderr, "fit failed: %s\n", err);
      return 0;
    }
    gr_shoot_flow (s, p, q1, NULL, NULL, 0, NULL, NULL, 0);
    r->iterations = fr.iterations;
    r->evaluations = fr.evaluations;
    r->fit_s = fr.seconds;
    r->loss0 = fr.loss0;
    r->loss1 = fr.loss;
    r->stop = gr_lbfgs_result_string (fr.result);
    r->dist1 = td_mean_distance (q1, tgt, n, 3);
  }
  free (p);
  free (g);
  free (q1);
  gr_shoot_free (s);
  return 1;
}

static void
tune (const char *list)
{
  char buf[256];
  snprintf (buf, sizeof buf, "%s", list);
  printf ("| N | tiled (0 no, 1 yes, 2 double-buffered) | rows/thread | threads/group | "
      "ms / evaluation | fit s (400 it) |\n"
      "|---|---|---|---|---|---|\n");
  for (char *tok = strtok (buf, ","); tok; tok = strtok (NULL, ",")) {
    size_t n = (size_t) atol (tok);
    if (n < 2)
      continue;
    double *q0 = malloc (sizeof (double) * n * 3), *tgt = malloc (sizeof (double) * n * 3);
    make_problem (n, q0, tgt);
    for (int v = -1; v < 12; v++) {
      char e1[8], e2[8], e3[8];
      if (v < 0) {
        unsetenv ("GEOREG_SHOOT_TILED");
        unsetenv ("GEOREG_SHOOT_RPT");
        unsetenv ("GEOREG_SHOOT_TPR");
      } else {
        snprintf (e1, sizeof e1, "%d", v % 3);
        snprintf (e2, sizeof e2, "%d", 1 + (v / 3) % 2);
        snprintf (e3, sizeof e3, "%d", 32 << (v / 6));
        setenv ("GEOREG_SHOOT_TILED", e1, 1);
        setenv ("GEOREG_SHOOT_RPT", e2, 1);
        setenv ("GEOREG_SHOOT_TPR", e3, 1);
      }
      Result r;
      int reps = n >= 10000 ? 5 : 10;
      if (run_one (GR_BACKEND_CUDA, n, q0, tgt, 400, reps, n == 1847, 0, &r)) {
        char fit[32] = "-";
        if (r.iterations)
          snprintf (fit, sizeof fit, "%.3f", r.fit_s);
        printf ("| %zu | %s | %s | %s | %.3f | %s |%s\n", n, v < 0 ? "auto" : e1,
            v < 0 ? "auto" : e2, v < 0 ? "auto" : e3, r.eval_ms, fit,
            v < 0 ? r.device : "");
        fflush (stdout);
      }
    }
    free (q0);
    free (tgt);
  }
  unsetenv ("GEOREG_SHOOT_TILED");
  unsetenv ("GEOREG_SHOOT_RPT");
  unsetenv ("GEOREG_SHOOT_TPR");
}

/* Subject k: the template shot by a smooth momentum of its own amplitude and scale,
 * plus its own noise. */
static void
make_subject (size_t n, const double *q0, GrShoot *shooter, int k, double *tgt)
{
  double *p = malloc (sizeof (double) * n * 3);
  td_smooth_momentum (q0, n, 3, 0.02 + 0.04 * ((k * 37) % 100) / 100.0,
      0.15 + 0.2 * ((k * 61) % 100) / 100.0, p);
  gr_shoot_flow (shooter, p, tgt, NULL, NULL, 0, NULL, NULL, 0);
  uint64_t st = 7919 + (uint64_t) k;
  for (size_t i = 0; i < n * 3; i++)
    tgt[i] += 0.05 * td_uniform (&st);
  free (p);
}

/* The device's share of a population fit: one evaluation (loss and gradient) of every
 * subject at the fitted momenta, timed (median of 3), times the evaluations per
 * subject.  The rest of the fit's time is the host's: the subjects' L-BFGS steps, the
 * transfers, and the rounds in which only some subjects ask for an evaluation. */
static double
population_device_time (GrShootBatch *b, size_t subjects, size_t m, const double *p,
    long evals)
{
  size_t *which = malloc (sizeof (size_t) * subjects);
  const double **pts = malloc (sizeof (double *) * subjects);
  double **grads = malloc (sizeof (double *) * subjects);
  double *g = malloc (sizeof (double) * m * subjects);
  GrShootLoss *l = malloc (sizeof (GrShootLoss) * subjects);
  double t[3] = { NAN, NAN, NAN };
  if (which && pts && grads && g && l) {
    for (size_t k = 0; k < subjects; k++) {
      which[k] = k;
      pts[k] = p + k * m;
      grads[k] = g + k * m;
    }
    for (int r = 0; r < 3; r++) {
      double t0 = now ();
      if (gr_shoot_batch_loss_grad (b, which, subjects, pts, grads, l, NULL, 0) != GR_OK)
        break;
      t[r] = now () - t0;
    }
    qsort (t, 3, sizeof (double), bench_cmp_double);
  }
  free (which);
  free (pts);
  free (grads);
  free (g);
  free (l);
  const double round_s = t[1];
  const double device_s = round_s * (double) evals / (double) subjects;
  printf ("  one evaluation of all %zu subjects: %.1f ms; x %.1f evaluations per "
      "subject = %.2f s on the device (%.2f s per 100 subjects); the host's share "
      "(L-BFGS steps, transfers, partial rounds) is the rest\n", subjects, 1e3 * round_s,
      (double) evals / subjects, device_s, 100.0 * device_s / subjects);
  return device_s;
}

/* Floors, from the description's "(S SMs, F GHz)" (the first parenthesis that reads
 * so).  The work: per evaluation, T - 1 forward steps and T - 1 adjoint steps, each
 * N^2 pairs with one exponential (exps counts both passes).  Floors: the
 * exponentials over the special-function units (16 per clock per SM: MUFU.EX2), with
 * and without reusing each pair's exponential from the forward step in the adjoint
 * step at the same time point; and the issue floor: each pair also issues the FP32
 * arithmetic of forward_pair_scaled / backward_pair_scaled in shoot_cuda.cu and its
 * shared loads (3-D: ISSUE_FWD and ISSUE_BWD instructions in the PTX of the row
 * kernels' unrolled loops, MUFU and loads included, the negations that SASS folds
 * into operands left out), at one warp instruction per clock per SM quarter (128
 * lanes per clock per SM); and the same for the pair arithmetic alone (ARITH_FWD and
 * ARITH_BWD: the SASS of one pair-row, sm_90, MUFU included), which no row shape's
 * sharing of loads or tiles can go below. */
#define ISSUE_FWD 20.0       /* one row a thread; two rows a thread: 18.5 */
#define ISSUE_BWD 42.0       /* 39.4 */
#define ARITH_FWD 17.0       /* SASS, 3-D; the loops: 18.4 (32x2), 17.7 (32x4) */
#define ARITH_BWD 37.0       /* 38.75 (32x2), 37.9 (32x4) */
static void
population_floors (const char *desc, double exps, double secs, double device_s)
{
  int sms = 0;
  double ghz = 0;
  const char *par = desc;
  while (par && (par = strchr (par, '(')) &&
      (sscanf (par, "(%d SMs, %lf GHz", &sms, &ghz) != 2 || sms <= 0 || ghz <= 0))
    par++;
  if (!par) {
    printf ("  floors: the device description gives no SM count and clock\n");
    return;
  }
  const double sfu = sms * 16.0 * ghz * 1e9, lanes = sms * 128.0 * ghz * 1e9;
  const double sfu_s = exps / sfu, sfu_reuse_s = 0.5 * exps / sfu;
  /* exps counts forward and adjoint pairs alike: half of each */
  const double issue_s = 0.5 * exps * (ISSUE_FWD + ISSUE_BWD) / lanes;
  const double arith_s = 0.5 * exps * (ARITH_FWD + ARITH_BWD) / lanes;
  printf ("  floors on %d SMs at %.2f GHz: exponentials over the SFUs %.2f s (%.2f s if "
      "each were reused from forward to adjoint); FP32 issue (%.0f + %.0f instructions "
      "a pair) %.2f s; the pair arithmetic alone (%.0f + %.0f) %.2f s.  Fit %.2f s = "
      "%.2fx the SFU floor, %.2fx the issue floor, %.2fx the arithmetic's (device part "
      "%.2f s = %.2fx the issue floor)\n", sms, ghz, sfu_s, sfu_reuse_s, ISSUE_FWD,
      ISSUE_BWD, issue_s, ARITH_FWD, ARITH_BWD, arith_s, secs, secs / sfu_s,
      secs / issue_s, secs / arith_s, device_s, device_s / issue_s);
}

static int
population (size_t subjects, size_t n, int iterations, int threads, const char *dump,
    FILE *json)
{
  GrShootParams sp = seed_params (n);
  const size_t m = n * 3;
  double *q0 = malloc (sizeof (double) * m), *tgt = malloc (sizeof (double) * m * subjects);
  double *p = calloc (m * subjects, sizeof (double));
  GrShootFitResult *res = calloc (subjects, sizeof *res);
  double radius = 10.0 * sqrt ((double) n / 1847.0);
  td_bunny3d (n, radius, q0);
  GrShoot *shooter = gr_shoot_new (&sp, GR_BACKEND_AUTO, -1, NULL, NULL, 0);
  gr_shoot_set_template (shooter, q0, NULL, 0);
  gr_shoot_set_target (shooter, q0, NULL, 0);
  for (size_t k = 0; k < subjects; k++)
    make_subject (n, q0, shooter, (int) k, tgt + k * m);
  gr_shoot_free (shooter);
  if (dump) {
    char path[512], err[256];
    snprintf (path, sizeof path, "%s/pop_tmpl_%zu.csv", dump, n);
    gr_pointset_save_csv (path, q0, n, 3, err, sizeof err);
    snprintf (path, sizeof path, "%s/pop_targets_%zu_%zu.csv", dump, n, subjects);
    FILE *f = fopen (path, "w");
    if (f) {
      fprintf (f, "subject,x,y,z\n");
      for (size_t k = 0; k < subjects; k++)
        for (size_t i = 0; i < n; i++)
          fprintf (f, "%zu,%.17g,%.17g,%.17g\n", k, tgt[k * m + 3 * i],
              tgt[k * m + 3 * i + 1], tgt[k * m + 3 * i + 2]);
      fclose (f);
    }
  }
  const char *be_env = getenv ("GEOREG_BENCH_BACKENDS");
  GrBackend bes[2] = { GR_BACKEND_CUDA, GR_BACKEND_CPU };
  int checks = env_int ("GEOREG_BENCH_POP_CHECK", 3), ok = 1;
  printf ("population: %zu subjects of N = %zu, 3-D, T = %d, sigma %g, lambda %g, "
      "%d L-BFGS iterations each (tolerances 0)\n", subjects, n, T_POINTS, SIGMA, LAMBDA,
      iterations);
  for (int bi = 0; bi < 2; bi++) {
    GrBackend be = bes[bi];
    if (be_env && !strstr (be_env, gr_backend_name (be)))
      continue;
    if (be == GR_BACKEND_CUDA && gr_cuda_device_count () <= 0)
      continue;
    char err[256] = "";
    GrStatus st;
    GrShootBatch *b = gr_shoot_batch_new (&sp, subjects, be, -1, &st, err, sizeof err);
    if (!b) {
      fprintf (stderr, "%s batch: %s\n", gr_backend_name (be), err);
      continue;
    }
    if (threads > 0)
      gr_shoot_batch_set_threads (b, threads);
    gr_shoot_batch_set_template (b, q0, NULL, 0);
    for (size_t k = 0; k < subjects; k++)
      gr_shoot_batch_set_target (b, k, tgt + k * m, NULL, 0);
    memset (p, 0, sizeof (double) * m * subjects);
    GrLbfgsParams lp;
    gr_lbfgs_params_init (&lp);
    lp.max_iterations = iterations;
    lp.gtol_rel = 0;
    lp.ftol = 0;
    double t0 = now ();
    if (gr_shoot_batch_fit (b, subjects, p, &lp, NULL, NULL, res, err, sizeof err) != GR_OK) {
      fprintf (stderr, "batch fit: %s\n", err);
      gr_shoot_batch_free (b);
      ok = 0;
      continue;
    }
    double secs = now () - t0;
    long evals = 0, iters = 0;
    double l0 = 0, l1 = 0;
    for (size_t k = 0; k < subjects; k++) {
      evals += res[k].evaluations;
      iters += res[k].iterations;
      l0 += res[k].loss0;
      l1 += res[k].loss;
    }
    /* the exponentials: one per pair per step, forward and adjoint */
    double exps = (double) evals * 2.0 * (T_POINTS - 1) * (double) n * (double) n;
    const char *desc = gr_shoot_batch_device_description (b);
    printf ("%s: %zu subjects in %.2f s (%.2f s per 100 subjects; %.3f s each); "
        "%ld iterations, %ld evaluations; mean loss %.6g -> %.6g; %.3g pair "
        "exponentials, %.3g per second; %s\n", gr_backend_name (be), subjects, secs,
        100.0 * secs / subjects, secs / subjects, iters, evals, l0 / subjects,
        l1 / subjects, exps, exps / secs, desc);
    double device_s = NAN;
    if (be == GR_BACKEND_CUDA) {
      device_s = population_device_time (b, subjects, m, p, evals);
      population_floors (desc, exps, secs, device_s);
    }
    fflush (stdout);
    /* some subjects alone: the same loss.  "Alone" is the population API with one
     * subject (a GrShootBatch of capacity 1: on CUDA the batch's row kernels, so the
     * loss must be the batch's, relative 0; the goal is 1e-6).  For information, the
     * single-subject API (gr_shoot_fit: on CUDA the grouped kernels, whose sums are
     * formed in another order, so float32 rounding sends L-BFGS elsewhere). */
    GrShoot *one = gr_shoot_new (&sp, be, -1, NULL, NULL, 0);
    GrShootBatch *solo = gr_shoot_batch_new (&sp, 1, be, -1, NULL, err, sizeof err);
    gr_shoot_set_template (one, q0, NULL, 0);
    if (solo)
      gr_shoot_batch_set_template (solo, q0, NULL, 0);
    else
      fprintf (stderr, "capacity-1 batch: %s\n", err);
    double worst = 0, worst_single = 0;
    for (int c = 0; c < checks && c < (int) subjects; c++) {
      size_t k = (size_t) c * (subjects - 1) / (checks > 1 ? checks - 1 : 1);
      double *pa = calloc (m, sizeof (double));
      GrShootFitResult ra, rr;
      if (solo) {
        gr_shoot_batch_set_target (solo, 0, tgt + k * m, NULL, 0);
        double ts = now ();
        gr_shoot_batch_fit (solo, 1, pa, &lp, NULL, NULL, &rr, NULL, 0);
        double rel = fabs (rr.loss - res[k].loss) / fabs (rr.loss);
        printf ("  subject %zu alone (population API, capacity 1): loss %.10g (batch "
            "%.10g), relative %.1e, %d iterations (batch %d), %.3f s\n", k, rr.loss,
            res[k].loss, rel, rr.iterations, res[k].iterations, now () - ts);
        worst = fmax (worst, isnan (rel) ? INFINITY : rel);
      } else {
        worst = INFINITY;
      }
      memset (pa, 0, sizeof (double) * m);
      gr_shoot_set_target (one, tgt + k * m, NULL, 0);
      gr_shoot_fit (one, pa, &lp, NULL, NULL, &ra, NULL, 0);
      double rels = fabs (ra.loss - res[k].loss) / fabs (ra.loss);
      printf ("  subject %zu alone (single-subject API): loss %.10g, relative %.1e, %.3f s "
          "(%s)\n", k, ra.loss, rels, ra.seconds, gr_shoot_device_description (one));
      worst_single = fmax (worst_single, rels);
      free (pa);
    }
    gr_shoot_free (one);
    gr_shoot_batch_free (solo);
    if (worst > 1e-6) {
      printf ("  FAIL: a subject's batched loss differs from its lone loss (population "
          "API) by %.1e\n", worst);
      ok = 0;
    } else {
      printf ("  agreement with alone (population API): worst relative %.1e, goal 1e-6; "
          "single-subject API (other kernels): %.1e\n", worst, worst_single);
    }
    if (json)
      fprintf (json, "  {\"backend\": \"%s\", \"device\": \"%s\", \"subjects\": %zu, "
          "\"n\": %zu, \"iterations\": %d, \"seconds\": %.6f, \"evaluations\": %ld, "
          "\"device_seconds\": %.6f, \"mean_loss_before\": %.9g, "
          "\"mean_loss_after\": %.9g, \"worst_lone_relative\": %.3g, "
          "\"worst_single_api_relative\": %.3g},\n", gr_backend_name (be), desc, subjects,
          n, iterations, secs, evals, isnan (device_s) ? -1.0 : device_s, l0 / subjects,
          l1 / subjects, worst, worst_single);
    gr_shoot_batch_free (b);
  }
  free (q0);
  free (tgt);
  free (p);
  free (res);
  return ok;
}

int
main (int argc, char **argv)
{
  if (getenv ("GEOREG_BENCH_POPULATION")) {
    size_t subjects = (size_t) atol (getenv ("GEOREG_BENCH_POPULATION"));
    const char *sz = getenv ("GEOREG_BENCH_SIZES");
    size_t n = sz && *sz ? (size_t) atol (sz) : 1847;
    FILE *json = argc > 1 ? fopen (argv[1], "w") : NULL;
    if (json)
      fprintf (json, "{\"benchmark\": \"landmarkshoot-population\", \"results\": [\n");
    int ok = subjects >= 1 && n >= 2 && population (subjects, n,
        env_int ("GEOREG_BENCH_ITERATIONS", 400), env_int ("GEOREG_BENCH_THREADS", 0),
        getenv ("GEOREG_BENCH_DUMP"), json);
    if (json) {
      fprintf (json, "  {}]}\n");
      fclose (json);
    }
    return ok ? 0 : 1;
  }
  if (getenv ("GEOREG_BENCH_TUNE") && gr_cuda_device_count () > 0) {
    tune (getenv ("GEOREG_BENCH_TUNE"));
    return 0;
  }
  const char *sizes_env = getenv ("GEOREG_BENCH_SIZES");
  char sizes_buf[256];
  snprintf (sizes_buf, sizeof sizes_buf, "%s",
      sizes_env && *sizes_env ? sizes_env : "500,1000,1847,5000,10000,20000");
  const char *be_env = getenv ("GEOREG_BENCH_BACKENDS");
  int want_cpu = !be_env || strstr (be_env, "cpu");
  int want_cuda = (!be_env || strstr (be_env, "cuda")) && gr_cuda_device_count () > 0;
  int iterations = env_int ("GEOREG_BENCH_ITERATIONS", 400);
  int big_iterations = env_int ("GEOREG_BENCH_BIG_ITERATIONS", 100);
  int cpu_max_n = env_int ("GEOREG_BENCH_CPU_MAX_N", 5000);
  int cpu_fit_max_n = env_int ("GEOREG_BENCH_CPU_FIT_MAX_N", 500);
  int threads = env_int ("GEOREG_BENCH_THREADS", 0);
  const char *dump = getenv ("GEOREG_BENCH_DUMP");
  FILE *json = argc > 1 ? fopen (argv[1], "w") : NULL;
  if (json)
    fprintf (json, "{\"benchmark\": \"landmarkshoot\", \"sigma\": %g, \"time_points\": %d, "
        "\"lambda\": %g, \"precision\": \"float32-f64acc\", \"integrator\": \"euler\", "
        "\"results\": [\n", SIGMA, T_POINTS, LAMBDA);
  printf ("geodesic shooting: 3-D, T = %d, sigma %g, lambda %g, float32 (float64 "
      "accumulation), Euler; fits from p0 = 0 with tolerances 0\n", T_POINTS, SIGMA,
      LAMBDA);
  if (!want_cuda)
    printf ("(no CUDA device: CPU only)\n");

  Result rows[64];
  int nrows = 0;
  for (char *tok = strtok (sizes_buf, ","); tok && nrows < 60; tok = strtok (NULL, ",")) {
    size_t n = (size_t) atol (tok);
    if (n < 2)
      continue;
    double *q0 = malloc (sizeof (double) * n * 3), *tgt = malloc (sizeof (double) * n * 3);
    make_problem (n, q0, tgt);
    if (dump) {
      char path[512], err[256];
      snprintf (path, sizeof path, "%s/tmpl_%zu.csv", dump, n);
      gr_pointset_save_csv (path, q0, n, 3, err, sizeof err);
      snprintf (path, sizeof path, "%s/tgt_%zu.csv", dump, n);
      gr_pointset_save_csv (path, tgt, n, 3, err, sizeof err);
    }
    int its = n > 5000 ? big_iterations : iterations;
    int cuda_evals = 0;
    if (want_cuda) {
      Result *r = &rows[nrows];
      if (run_one (GR_BACKEND_CUDA, n, q0, tgt, its, env_int ("GEOREG_BENCH_REPS", 20), 1,
              0, r)) {
        cuda_evals = r->evaluations;
        printf ("cuda N=%zu: %.3f ms/eval; %d iterations, %d evaluations in %.3f s (%s); "
            "mean distance %.4f -> %.4f\n", n, r->eval_ms, r->iterations, r->evaluations,
            r->fit_s, r->stop, r->dist0, r->dist1);
        fflush (stdout);
        nrows++;
      }
    }
    if (want_cpu && (int) n <= cpu_max_n) {
      Result *r = &rows[nrows];
      int fit = (int) n <= cpu_fit_max_n;
      if (run_one (GR_BACKEND_CPU, n, q0, tgt, its, env_int ("GEOREG_BENCH_REPS", 3), fit,
              threads, r)) {
        int evals = fit ? r->evaluations : cuda_evals;
        if (evals > 0)
          r->projected_s = r->eval_ms * 1e-3 * evals;
        printf ("cpu  N=%zu: %.3f ms/eval; %s %.3f s for %d evaluations%s\n", n, r->eval_ms,
            fit ? "fit" : "projected", fit ? r->fit_s : r->projected_s, evals,
            fit ? "" : " (the CUDA fit's count)");
        fflush (stdout);
        nrows++;
      }
    }
    free (q0);
    free (tgt);
  }

  printf ("\n| backend | N | ms / evaluation | iterations | evaluations | fit s | "
      "mean distance before -> after |\n|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < nrows; i++) {
    Result *r = &rows[i];
    char fit[64];
    if (r->iterations)
      snprintf (fit, sizeof fit, "%.3f", r->fit_s);
    else if (!isnan (r->projected_s))
      snprintf (fit, sizeof fit, "%.1f (projected)", r->projected_s);
    else
      snprintf (fit, sizeof fit, "-");
    printf ("| %s | %zu | %.3f | %d | %d | %s | %.4f -> %.4f |\n", r->backend, r->n,
        r->eval_ms, r->iterations, r->evaluations, fit, r->dist0,
        r->iterations ? r->dist1 : NAN);
    if (json)
      fprintf (json, "  {\"backend\": \"%s\", \"device\": \"%s\", \"n\": %zu, "
          "\"eval_ms\": %.6f, \"iterations\": %d, \"evaluations\": %d, \"fit_s\": %.6f, "
          "\"projected_s\": %.6f, \"mean_distance_before\": %.6f, "
          "\"mean_distance_after\": %.6f, \"loss_before\": %.9g, \"loss_after\": %.9g, "
          "\"stop\": \"%s\"}%s\n", r->backend, r->device, r->n, r->eval_ms,
          r->iterations, r->evaluations, isnan (r->fit_s) ? -1.0 : r->fit_s,
          isnan (r->projected_s) ? -1.0 : r->projected_s, r->dist0,
          r->iterations ? r->dist1 : -1.0, r->loss0, r->loss1, r->stop ? r->stop : "",
          i + 1 < nrows ? "," : "");
  }
  for (int i = 0; i < nrows; i++)
    if (strcmp (rows[i].backend, "cuda") == 0) {
      printf ("device: %s\n", rows[i].device);
      break;
    }
  if (json) {
    fprintf (json, "]}\n");
    fclose (json);
  }
  return 0;
}
