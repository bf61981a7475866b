/* Benchmark of surface matching with the varifold data term (issue 15): geodesic
 * shooting of a source mesh's vertices (gr_shoot_set_varifold) onto a target mesh of
 * another sampling, both from tools/bench_varifold_torch.py's problem, so the two solve
 * the same objective:
 *   source: an ellipsoid (radii 5, 4, 3.5) meshed by L x M latitude/longitude bands
 *   (M ~ 1.6 L, about V vertices); target: the same ellipsoid meshed for ~1.3 V vertices
 *   at longitudes offset by 0.2, under tests/shoot_testdata.h's known deformation;
 *   shooting sigma 2.5, T = 10, lambda 300, Euler; unoriented varifold, width 1.0.
 * Stopping rule (as the PyTorch script's): a fixed number of L-BFGS iterations from
 * p0 = 0, every tolerance 0.  Prints, per size, the loss and d^2 before and after,
 * the iterations and evaluations, the fit's wall time and the best time of one
 * evaluation (loss + gradient), as a table row ("| ..."); --json writes them.
 *
 *   bench_varifold_shoot [--vertices 10000,100000] [--iters 100,3]
 *       [--backend cuda|cpu] [--float64] [--json out.json]
 *
 * --iters: one count per size (the last repeats).  Exit status 0 when every fit ran
 * and lowered the loss.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shoot.h"
#include "varifold.h"
#include "shoot_testdata.h"

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* bench_varifold_torch.py's resolution(): L x M bands with M ~ 1.6 L; Python's
 * round() is round-half-even, as rint under the default rounding mode */
static void
resolution (long nv, int *L, int *M)
{
  *L = (int) fmax (4, rint (sqrt (nv / 1.6)));
  *M = (int) fmax (6, rint ((double) nv / *L));
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static int
run (long nv, int iters, GrBackend be, int f64, FILE *json, int first)
{
  int Ls, Ms, Lt, Mt;
  resolution (nv, &Ls, &Ms);
  resolution ((long) (nv * 1.3), &Lt, &Mt);
  TdMesh src = td_ellipsoid (Ls, Ms, 5.0, 4.0, 3.5, 0.0);
  TdMesh tgt = td_ellipsoid (Lt, Mt, 5.0, 4.0, 3.5, 0.2);
  td_deform (tgt.v, tgt.nv);
  char err[256] = "";
  GrStatus st;
  GrShootParams sp;
  gr_shoot_params_init (&sp);
  sp.n = src.nv;
  sp.dim = 3;
  sp.sigma = 2.5;
  sp.time_points = 10;
  sp.lambda = 300;
  sp.precision = f64 ? GR_SHOOT_FLOAT64 : GR_SHOOT_FLOAT32;
  GrVarifoldParams vp = { 3, 3, 1.0, GR_VARIFOLD_UNORIENTED, f64, 0 };
  const double t_setup = now_s ();
  GrShoot *s = gr_shoot_new (&sp, be, -1, &st, err, sizeof err);
  GrVarifold *v = s ? gr_varifold_new_backend (&vp, be, -1, tgt.v, tgt.nv, tgt.c, tgt.nc,
      &st, err, sizeof err) : NULL;
  int ok = s && v && gr_shoot_set_template (s, src.v, err, sizeof err) == GR_OK &&
      gr_shoot_set_varifold (s, v, src.c, src.nc, err, sizeof err) == GR_OK;
  const double setup = now_s () - t_setup;
  const size_t m = 3 * src.nv;
  double *p0 = calloc (m, sizeof (double)), *g = malloc (sizeof (double) * m);
  double ev[3];
  int nev = 0;
  GrShootFitResult r;
  memset (&r, 0, sizeof r);
  if (ok) {
    /* the best of two evaluations at p0 = 0 after one that warms up */
    for (int k = 0; ok && k < 3; k++) {
      GrShootLoss l;
      double t0 = now_s ();
      ok = gr_shoot_loss_grad (s, p0, g, &l, err, sizeof err) == GR_OK;
      if (k > 0)
        ev[nev++] = now_s () - t0;
    }
    qsort (ev, nev, sizeof ev[0], cmp_double);
  }
  if (ok) {
    GrLbfgsParams lp;
    gr_lbfgs_params_init (&lp);
    lp.max_iterations = iters;
    lp.gtol_rel = 0;
    lp.ftol = 0;
    ok = gr_shoot_fit (s, p0, &lp, NULL, NULL, &r, err, sizeof err) == GR_OK &&
        r.loss < r.loss0;
  }
  const char *dev = s ? gr_shoot_device_description (s) : "";
  if (ok) {
    printf ("| varifold %s %s | %zu onto %zu vertices (%zu onto %zu triangles) | %d it, "
        "%d ev | loss %.6g -> %.6g | d2 %.5g -> %.5g | fit %.3f s | %.1f ms/eval | setup "
        "%.2f s |\n", gr_backend_name (be), f64 ? "float64" : "float32", src.nv, tgt.nv,
        src.nc, tgt.nc, r.iterations, r.evaluations, r.loss0, r.loss, r.mismatch0,
        r.mismatch, r.seconds, 1e3 * ev[0], setup);
    printf ("  %s; L-BFGS: %s\n", dev, gr_lbfgs_result_string (r.result));
  } else {
    printf ("| varifold %s %s | %zu onto %zu vertices | FAILED: %s |\n", gr_backend_name (be),
        f64 ? "float64" : "float32", src.nv, tgt.nv, err[0] ? err : "the loss did not fall");
  }
  fflush (stdout);
  if (json) {
    fprintf (json, "%s  {\"backend\": \"%s\", \"device\": \"%s\", \"precision\": \"%s\", "
        "\"source_vertices\": %zu, \"target_vertices\": %zu, \"ok\": %s, "
        "\"iterations\": %d, \"evaluations\": %d, \"loss_before\": %.10g, "
        "\"loss_after\": %.10g, \"varifold_d2_before\": %.10g, \"varifold_d2_after\": "
        "%.10g, \"fit_s\": %.6f, \"eval_s\": %.6f, \"setup_s\": %.4f}", first ? "" : ",\n",
        gr_backend_name (be), dev, f64 ? "float64" : "float32", src.nv, tgt.nv,
        ok ? "true" : "false", r.iterations, r.evaluations, r.loss0, r.loss, r.mismatch0,
        r.mismatch, r.seconds, nev ? ev[0] : 0.0, setup);
  }
  if (s)
    gr_shoot_set_varifold (s, NULL, NULL, 0, NULL, 0);
  gr_shoot_free (s);
  gr_varifold_free (v);
  free (p0);
  free (g);
  td_mesh_free (&src);
  td_mesh_free (&tgt);
  return ok;
}

int
main (int argc, char **argv)
{
  const char *sizes = "10000,100000", *iters = "100,3", *jpath = NULL;
  GrBackend be = GR_BACKEND_CUDA;
  int f64 = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp (argv[i], "--vertices") && i + 1 < argc)
      sizes = argv[++i];
    else if (!strcmp (argv[i], "--iters") && i + 1 < argc)
      iters = argv[++i];
    else if (!strcmp (argv[i], "--backend") && i + 1 < argc) {
      i++;
      be = !strcmp (argv[i], "cpu") ? GR_BACKEND_CPU : GR_BACKEND_CUDA;
    } else if (!strcmp (argv[i], "--float64"))
      f64 = 1;
    else if (!strcmp (argv[i], "--json") && i + 1 < argc)
      jpath = argv[++i];
    else {
      fprintf (stderr, "usage: %s [--vertices 10000,100000] [--iters 100,3] "
          "[--backend cuda|cpu] [--float64] [--json out.json]\n", argv[0]);
      return 2;
    }
  }
  if (be == GR_BACKEND_CUDA && gr_cuda_device_count () <= 0) {
    printf ("skipped: no usable CUDA device\n");
    return 77;
  }
  FILE *json = jpath ? fopen (jpath, "w") : NULL;
  if (json)
    fprintf (json, "{\"benchmark\": \"varifold-shooting\", \"results\": [\n");
  int ok = 1, first = 1;
  const char *sp = sizes, *ip = iters;
  int it = 100;
  while (*sp) {
    long nv = strtol (sp, (char **) &sp, 10);
    if (*ip) {
      it = (int) strtol (ip, (char **) &ip, 10);
      if (*ip == ',')
        ip++;
    }
    if (*sp == ',')
      sp++;
    if (nv < 10 || it < 1) {
      fprintf (stderr, "bad size %ld or iterations %d\n", nv, it);
      return 2;
    }
    ok &= run (nv, it, be, f64, json, first);
    first = 0;
  }
  if (json) {
    fprintf (json, "\n]}\n");
    fclose (json);
  }
  return ok ? 0 : 1;
}
