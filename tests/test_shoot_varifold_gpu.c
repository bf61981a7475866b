/* Shooting with a varifold data term on CUDA (gr_shoot_set_varifold on a CUDA engine:
 * the template's cell features, the pair sums, d^2 and its gradient on q(1) inside the
 * shooting's graph; suite gpu, exits 77 = skipped without a usable CUDA device):
 *  - loss and gradient on p0 against the CPU engine with the CPU varifold term, both
 *    float64, at a non-zero momentum: 1e-6 relative (surfaces unoriented and oriented,
 *    2-D curves, 3-D point clouds, Euler and Ralston, the target's cells summed in 3
 *    parts), and a mid-size surface pair (several blocks per launch, partial last
 *    blocks, 18 parts by default on an H100);
 *  - the CUDA gradient (float64) against central finite differences of the CUDA loss
 *    (1e-5 relative): the device adjoint on its own;
 *  - float32 (float32 pairs, float64 sums) within 1e-4 of the float64 CPU;
 *  - a matching run: L-BFGS on CUDA and on the CPU (float64, 40 iterations) reach the
 *    same loss (1e-6 relative), far below the start; the same run in float32 on CUDA
 *    within 1e-2 (float32 rounding steers the line searches elsewhere);
 *  - setting the term off again gives the landmark engine back (its loss unchanged);
 *  - test_varifold's surface matching on CUDA (float32, 100 iterations: 288 vertices
 *    onto the deformed shape meshed with 377 others): the symmetric vertex-to-mesh
 *    Hausdorff distance within 5% of the initial one (2.9% on the CPU).
 * GEOREG_TEST_SMALL (compute-sanitizer runs): every kernel still runs, with finite
 * differences on every 17th coordinate, 5-iteration fits, and neither the mid-size
 * pair nor the 100-iteration matching.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shoot.h"
#include "varifold.h"
#include "test_check.h"
#include "shoot_testdata.h"

/* compute-sanitizer runs: fewer evaluations (see the top) */
static int small;

typedef struct {
  GrShoot *s;
  GrVarifold *v;
} Engine;

/* A shooting engine on `be` with the varifold term of src (the template) onto tgt. */
static Engine
engine (const GrShootParams *sp, const GrVarifoldParams *vp, GrBackend be,
    const TdMesh *src, const TdMesh *tgt)
{
  char err[256] = "";
  GrStatus st;
  Engine e = { NULL, NULL };
  e.s = gr_shoot_new (sp, be, -1, &st, err, sizeof err);
  CHECK (e.s && gr_shoot_backend (e.s) == be, "%s shooting engine: %s",
      gr_backend_name (be), err);
  e.v = gr_varifold_new_backend (vp, be, -1, tgt->v, tgt->nv,
      vp->cell_size > 1 ? tgt->c : NULL, tgt->nc, &st, err, sizeof err);
  CHECK (e.v != NULL, "%s varifold: %s", gr_backend_name (be), err);
  if (!e.s || !e.v)
    exit (1);
  CHECK (gr_shoot_set_template (e.s, src->v, err, sizeof err) == GR_OK, "template: %s", err);
  CHECK (gr_shoot_set_varifold (e.s, e.v, vp->cell_size > 1 ? src->c : NULL,
          vp->cell_size > 1 ? src->nc : 0, err, sizeof err) == GR_OK, "%s term: %s",
      gr_backend_name (be), err);
  return e;
}

static void
engine_free (Engine *e)
{
  gr_shoot_set_varifold (e->s, NULL, NULL, 0, NULL, 0);
  gr_shoot_free (e->s);
  gr_varifold_free (e->v);
}

static double
loss_grad (Engine *e, const double *p0, double *g)
{
  char err[256] = "";
  GrShootLoss l = { NAN, NAN, NAN };
  CHECK (gr_shoot_loss_grad (e->s, p0, g, &l, err, sizeof err) == GR_OK, "loss: %s", err);
  return l.loss;
}

/* CUDA against the CPU on one configuration at the momentum p0 (src->nv * dim). */
static void
compare (GrShootParams sp, GrVarifoldParams vp, const TdMesh *src, const TdMesh *tgt,
    const double *p0, const char *what, int fd)
{
  const size_t m = src->nv * sp.dim;
  double *g64 = malloc (sizeof (double) * m), *gc64 = malloc (sizeof (double) * m);
  double *gc32 = malloc (sizeof (double) * m);
  sp.n = src->nv;
  sp.precision = GR_SHOOT_FLOAT64;
  vp.float64 = 1;
  Engine cpu = engine (&sp, &vp, GR_BACKEND_CPU, src, tgt);
  Engine gpu = engine (&sp, &vp, GR_BACKEND_CUDA, src, tgt);
  sp.precision = GR_SHOOT_FLOAT32;
  vp.float64 = 0;
  Engine gpu32 = engine (&sp, &vp, GR_BACKEND_CUDA, src, tgt);
  const double l64 = loss_grad (&cpu, p0, g64), lc64 = loss_grad (&gpu, p0, gc64);
  const double lc32 = loss_grad (&gpu32, p0, gc32);
  const double r64 = fabs (lc64 - l64) / fabs (l64), rg64 = td_rel_l2 (gc64, g64, m);
  const double r32 = fabs (lc32 - l64) / fabs (l64), rg32 = td_rel_l2 (gc32, g64, m);
  printf ("%s (%zu vertices onto %zu): loss %.10g; CUDA vs CPU float64: loss %.1e, "
      "gradient %.1e; CUDA float32 vs CPU float64: loss %.1e, gradient %.1e\n", what,
      src->nv, tgt->nv, l64, r64, rg64, r32, rg32);
  CHECK (isfinite (l64) && l64 > 0, "%s: loss %g", what, l64);
  CHECK (r64 <= 1e-6 && rg64 <= 1e-6, "%s: CUDA float64 vs CPU %.2e %.2e", what, r64, rg64);
  CHECK (r32 <= 1e-4 && rg32 <= 1e-4, "%s: CUDA float32 vs CPU float64 %.2e %.2e", what,
      r32, rg32);
  /* the same engine again: deterministic (fixed-order sums, no atomics) */
  double *again = malloc (sizeof (double) * m);
  const double lc64b = loss_grad (&gpu, p0, again);
  CHECK (lc64b == lc64 && memcmp (again, gc64, sizeof (double) * m) == 0,
      "%s: a second CUDA evaluation differs", what);
  free (again);
  if (fd) {
    double *x = malloc (sizeof (double) * m);
    memcpy (x, p0, sizeof (double) * m);
    double num = 0, den = 0;
    for (size_t e = 0; e < m; e += small ? 17 : 1) {
      const double h = 1e-5, x0 = x[e];
      x[e] = x0 + h;
      const double fp = loss_grad (&gpu, x, NULL);
      x[e] = x0 - h;
      const double fm = loss_grad (&gpu, x, NULL);
      x[e] = x0;
      const double fdv = (fp - fm) / (2 * h);
      num += (fdv - gc64[e]) * (fdv - gc64[e]);
      den += fdv * fdv;
    }
    const double rel = sqrt (num / den);
    printf ("%s: CUDA gradient vs finite differences: %.2e\n", what, rel);
    CHECK (rel <= 1e-5, "%s: CUDA gradient vs finite differences %.2e", what, rel);
    free (x);
  }
  engine_free (&cpu);
  engine_free (&gpu);
  engine_free (&gpu32);
  free (g64);
  free (gc64);
  free (gc32);
}

/* L-BFGS from p0 = 0 on an engine; returns the final loss, *l0 the first. */
static double
fit (Engine *e, size_t m, int iters, double *l0, double *secs)
{
  char err[256] = "";
  double *p0 = calloc (m, sizeof (double));
  GrLbfgsParams lp;
  gr_lbfgs_params_init (&lp);
  lp.max_iterations = iters;
  lp.gtol_rel = 0;
  lp.ftol = 0;
  GrShootFitResult r;
  CHECK (gr_shoot_fit (e->s, p0, &lp, NULL, NULL, &r, err, sizeof err) == GR_OK, "fit: %s",
      err);
  free (p0);
  *l0 = r.loss0;
  *secs = r.seconds;
  printf ("  %s: loss %.10g -> %.10g (d2 %.6g -> %.6g), %d iterations, %d evaluations, "
      "%s, %.3f s\n", gr_backend_name (gr_shoot_backend (e->s)), r.loss0, r.loss,
      r.mismatch0, r.mismatch, r.iterations, r.evaluations,
      gr_lbfgs_result_string (r.result), r.seconds);
  return r.loss;
}

int
main (void)
{
  if (gr_cuda_device_count () <= 0) {
    printf ("skipped: no usable CUDA device\n");
    return 77;
  }
  small = getenv ("GEOREG_TEST_SMALL") != NULL;
  GrShootParams sp;
  gr_shoot_params_init (&sp);
  sp.dim = 3;
  sp.sigma = 2.5;
  sp.time_points = 8;
  sp.lambda = 300;
  GrVarifoldParams vp = { 3, 3, 2.0, GR_VARIFOLD_UNORIENTED, 1, 0 };

  /* the ellipsoid pair of test_landmarkshoot's pipeline: 52 onto 68 vertices */
  TdMesh tm = td_ellipsoid (6, 10, 5.0, 4.0, 3.5, 0.0);
  TdMesh sm = td_ellipsoid (7, 11, 5.0, 4.0, 3.5, 0.2);
  td_deform (sm.v, sm.nv);
  double *p0 = malloc (sizeof (double) * 3 * tm.nv);
  td_smooth_momentum (tm.v, tm.nv, 3, 0.05, 0.3, p0);
  compare (sp, vp, &tm, &sm, p0, "surface, unoriented, Euler", 1);
  /* the other shape's cells split over 3 block rows (what larger meshes get by
   * default: kernels/varifold_cuda.cu), here with parts shorter than a tile */
  setenv ("GEOREG_VARIFOLD_PARTS", "3", 1);
  compare (sp, vp, &tm, &sm, p0, "surface, unoriented, 3 parts", 0);
  vp.cell_size = 1;
  compare (sp, vp, &tm, &sm, p0, "3-D point cloud, 3 parts", 0);
  vp.cell_size = 3;
  unsetenv ("GEOREG_VARIFOLD_PARTS");
  vp.orientation = GR_VARIFOLD_ORIENTED;
  compare (sp, vp, &tm, &sm, p0, "surface, oriented, Euler", 1);
  sp.integrator = GR_SHOOT_RALSTON;
  vp.orientation = GR_VARIFOLD_UNORIENTED;
  compare (sp, vp, &tm, &sm, p0, "surface, unoriented, Ralston", 1);
  sp.integrator = GR_SHOOT_EULER;
  vp.cell_size = 1;
  compare (sp, vp, &tm, &sm, p0, "3-D point cloud", 1);

  /* 2-D curves (segments), other counts */
  {
    TdMesh c1 = td_closed_curve (40, 3.0, 0.1), c2 = td_closed_curve (29, 3.4, 0.5);
    GrShootParams s2 = sp;
    s2.dim = 2;
    s2.sigma = 1.5;
    GrVarifoldParams v2 = { 2, 2, 1.0, GR_VARIFOLD_UNORIENTED, 1, 0 };
    double *q = malloc (sizeof (double) * 2 * c1.nv);
    td_smooth_momentum (c1.v, c1.nv, 2, 0.1, 0.3, q);
    compare (s2, v2, &c1, &c2, q, "curve, unoriented", 1);
    v2.orientation = GR_VARIFOLD_ORIENTED;
    compare (s2, v2, &c1, &c2, q, "curve, oriented", 1);
    free (q);
    td_mesh_free (&c1);
    td_mesh_free (&c2);
  }

  /* mid-size: 2,342 onto 3,222 vertices (several blocks, partial last ones) */
  if (!small) {
    TdMesh b1 = td_ellipsoid (40, 60, 5.0, 4.0, 3.5, 0.0);
    TdMesh b2 = td_ellipsoid (47, 70, 5.0, 4.0, 3.5, 0.2);
    td_deform (b2.v, b2.nv);
    double *q = malloc (sizeof (double) * 3 * b1.nv);
    td_smooth_momentum (b1.v, b1.nv, 3, 0.003, 0.3, q);
    vp.cell_size = 3;
    vp.sigma = 1.0;
    compare (sp, vp, &b1, &b2, q, "mid-size surfaces, unoriented", 0);
    vp.sigma = 2.0;
    free (q);
    td_mesh_free (&b1);
    td_mesh_free (&b2);
  }

  /* matching: the same loss reached on CUDA and on the CPU */
  {
    const size_t m = 3 * tm.nv;
    sp.n = tm.nv;
    vp.cell_size = 3;
    vp.orientation = GR_VARIFOLD_UNORIENTED;
    sp.precision = GR_SHOOT_FLOAT64;
    vp.float64 = 1;
    const int iters = small ? 5 : 40;
    printf ("matching, float64, %d iterations:\n", iters);
    Engine cpu = engine (&sp, &vp, GR_BACKEND_CPU, &tm, &sm);
    Engine gpu = engine (&sp, &vp, GR_BACKEND_CUDA, &tm, &sm);
    double l0c, l0g, l0f, tc, tg, tf;
    const double lc = fit (&cpu, m, iters, &l0c, &tc), lg = fit (&gpu, m, iters, &l0g, &tg);
    const double rel = fabs (lg - lc) / lc;
    printf ("  final losses: relative difference %.1e\n", rel);
    CHECK (lc < (small ? 0.9 : 0.1) * l0c, "the CPU fit did not match: %g -> %g", l0c, lc);
    CHECK (rel <= 1e-6, "CUDA and CPU fits: %.10g vs %.10g (%.1e)", lg, lc, rel);
    sp.precision = GR_SHOOT_FLOAT32;
    vp.float64 = 0;
    Engine g32 = engine (&sp, &vp, GR_BACKEND_CUDA, &tm, &sm);
    const double lf = fit (&g32, m, iters, &l0f, &tf);
    const double rel32 = fabs (lf - lc) / lc;
    printf ("  float32 on CUDA vs float64 on the CPU: %.1e\n", rel32);
    CHECK (rel32 <= 1e-2, "CUDA float32 fit: %.10g vs %.10g (%.1e)", lf, lc, rel32);

    /* the term off: the landmark mismatch again, on the same CUDA engine */
    char err[256] = "";
    CHECK (gr_shoot_set_varifold (gpu.s, NULL, NULL, 0, err, sizeof err) == GR_OK, "off: %s",
        err);
    double *tgt = malloc (sizeof (double) * m), *z = calloc (m, sizeof (double));
    memcpy (tgt, tm.v, sizeof (double) * m);
    tgt[0] += 1.0;
    CHECK (gr_shoot_set_target (gpu.s, tgt, err, sizeof err) == GR_OK, "target: %s", err);
    GrShootLoss l;
    CHECK (gr_shoot_loss_grad (gpu.s, z, NULL, &l, err, sizeof err) == GR_OK, "%s", err);
    CHECK (fabs (l.mismatch - 1.0) < 1e-12, "landmark mismatch after the term: %g",
        l.mismatch);
    free (tgt);
    free (z);
    engine_free (&cpu);
    engine_free (&gpu);
    engine_free (&g32);
  }
  /* test_varifold's matching problem on the device */
  if (!small) {
    TdMesh src = td_ellipsoid (14, 22, 5.0, 4.0, 3.5, 0.0);
    TdMesh tgt = td_ellipsoid (16, 25, 5.0, 4.0, 3.5, 0.2);
    td_deform (tgt.v, tgt.nv);
    GrShootParams mp;
    gr_shoot_params_init (&mp);
    mp.n = src.nv;
    mp.dim = 3;
    mp.sigma = 2.5;
    mp.time_points = 10;
    mp.lambda = 300;
    GrVarifoldParams mv = { 3, 3, 1.0, GR_VARIFOLD_UNORIENTED, 0, 0 };
    printf ("surface matching on CUDA, float32, 100 iterations:\n");
    Engine e = engine (&mp, &mv, GR_BACKEND_CUDA, &src, &tgt);
    const size_t m = 3 * src.nv;
    double *p = calloc (m, sizeof (double));
    GrLbfgsParams lp;
    gr_lbfgs_params_init (&lp);
    lp.max_iterations = 100;
    GrShootFitResult r;
    char err[256] = "";
    CHECK (gr_shoot_fit (e.s, p, &lp, NULL, NULL, &r, err, sizeof err) == GR_OK, "fit: %s",
        err);
    TdMesh warped = { src.nv, src.nc, malloc (sizeof (double) * m), src.c };
    CHECK (gr_shoot_flow (e.s, p, warped.v, NULL, NULL, 0, NULL, err, sizeof err) == GR_OK,
        "flow: %s", err);
    const double h0 = td_hausdorff (&src, &tgt), h1 = td_hausdorff (&warped, &tgt);
    printf ("  Hausdorff %.4f -> %.4f (%.2f%%), varifold d2 %.4g -> %.4g, %d iterations "
        "(%s), %.3f s\n", h0, h1, 100 * h1 / h0, r.mismatch0, r.mismatch, r.iterations,
        gr_lbfgs_result_string (r.result), r.seconds);
    CHECK (h1 <= 0.05 * h0, "CUDA surface matching: Hausdorff %.4f -> %.4f", h0, h1);
    free (warped.v);
    free (p);
    engine_free (&e);
    td_mesh_free (&src);
    td_mesh_free (&tgt);
  }
  free (p0);
  td_mesh_free (&tm);
  td_mesh_free (&sm);
  return CHECK_DONE ();
}
