/* Varifold, currents and point-cloud data terms on CUDA (gr_varifold_new_backend;
 * suite gpu, exits 77 = skipped without a usable CUDA device):
 *  - CUDA against the CPU, for curves (2-D polylines), surfaces (3-D triangle meshes),
 *    oriented and unoriented, and point clouds: float64 distance and gradient within
 *    1e-6 relative; float32 (float32 pairs, float64 sums) within 1e-4 of the float64
 *    CPU, as the CPU's own float32 is;
 *  - the CUDA gradient (float64) against central finite differences (1e-5 relative);
 *  - two surfaces of a few thousand triangles each (more cells than one tile, rows
 *    past the last block), float64 and float32, with the time of an evaluation.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "varifold.h"
#include "test_check.h"
#include "shoot_testdata.h"

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static GrVarifold *
engine (const GrVarifoldParams *p, GrBackend be, const TdMesh *tgt)
{
  char err[256] = "";
  GrStatus st;
  GrVarifold *v = gr_varifold_new_backend (p, be, -1, tgt->v, tgt->nv,
      p->cell_size > 1 ? tgt->c : NULL, tgt->nc, &st, err, sizeof err);
  CHECK (v != NULL && st == GR_OK, "%s engine: %s", gr_backend_name (be), err);
  if (v)
    CHECK (gr_varifold_backend (v) == be, "runs on %s", gr_backend_name (be));
  return v;
}

/* d2 and gradient of src against tgt on the engine */
static double
eval (GrVarifold *v, const GrVarifoldParams *p, const TdMesh *src, double *g)
{
  char err[256] = "";
  double d2 = NAN;
  CHECK (gr_varifold_distance (v, src->v, src->nv, p->cell_size > 1 ? src->c : NULL,
          src->nc, &d2, g, err, sizeof err) == GR_OK, "distance: %s", err);
  return d2;
}

/* CUDA against the CPU on one configuration; fd: also finite differences */
static void
compare (GrVarifoldParams p, const TdMesh *src, const TdMesh *tgt, const char *what,
    int fd)
{
  const size_t m = src->nv * p.dim;
  double *g64 = malloc (sizeof (double) * m), *gc64 = malloc (sizeof (double) * m);
  double *gc32 = malloc (sizeof (double) * m), *g32 = malloc (sizeof (double) * m);
  p.float64 = 1;
  GrVarifold *cpu = engine (&p, GR_BACKEND_CPU, tgt), *gpu = engine (&p, GR_BACKEND_CUDA, tgt);
  p.float64 = 0;
  GrVarifold *cpu32 = engine (&p, GR_BACKEND_CPU, tgt);
  GrVarifold *gpu32 = engine (&p, GR_BACKEND_CUDA, tgt);
  p.float64 = 1;
  if (!cpu || !gpu || !cpu32 || !gpu32)
    exit (1);
  double t0 = now_s ();
  const double dc64 = eval (gpu, &p, src, gc64);
  const double t64 = now_s () - t0;
  t0 = now_s ();
  const double dc32 = eval (gpu32, &p, src, gc32);
  const double t32 = now_s () - t0;
  const double d64 = eval (cpu, &p, src, g64), d32 = eval (cpu32, &p, src, g32);
  const double r64 = fabs (dc64 - d64) / d64, rg64 = td_rel_l2 (gc64, g64, m);
  const double r32 = fabs (dc32 - d64) / d64, rg32 = td_rel_l2 (gc32, g64, m);
  const double rcpu32 = fabs (d32 - d64) / d64, rgcpu32 = td_rel_l2 (g32, g64, m);
  printf ("%s (%zu cells onto %zu): d2 %.8g; CUDA vs CPU float64: d2 %.1e, gradient "
      "%.1e; CUDA float32 vs CPU float64: d2 %.1e, gradient %.1e (CPU float32: %.1e, "
      "%.1e); CUDA %.1f ms (float64), %.1f ms (float32)\n", what,
      p.cell_size > 1 ? src->nc : src->nv, p.cell_size > 1 ? tgt->nc : tgt->nv, d64, r64,
      rg64, r32, rg32, rcpu32, rgcpu32, 1e3 * t64, 1e3 * t32);
  CHECK (r64 <= 1e-6 && rg64 <= 1e-6, "%s: CUDA float64 vs CPU %.2e %.2e", what, r64, rg64);
  CHECK (r32 <= 1e-4 && rg32 <= 1e-4, "%s: CUDA float32 vs CPU float64 %.2e %.2e", what,
      r32, rg32);
  if (fd) {
    double *x = malloc (sizeof (double) * m);
    memcpy (x, src->v, sizeof (double) * m);
    TdMesh moved = *src;
    moved.v = x;
    double num = 0, den = 0;
    for (size_t e = 0; e < m; e++) {
      const double h = 1e-5 * fmax (1.0, fabs (x[e])), x0 = x[e];
      x[e] = x0 + h;
      const double fp = eval (gpu, &p, &moved, NULL);
      x[e] = x0 - h;
      const double fm = eval (gpu, &p, &moved, NULL);
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
  gr_varifold_free (cpu);
  gr_varifold_free (gpu);
  gr_varifold_free (cpu32);
  gr_varifold_free (gpu32);
  free (g64);
  free (gc64);
  free (gc32);
  free (g32);
}

int
main (void)
{
  if (gr_cuda_device_count () <= 0) {
    printf ("skipped: no usable CUDA device\n");
    return 77;
  }
  TdMesh c1 = td_closed_curve (15, 3.0, 0.1), c2 = td_closed_curve (11, 3.4, 0.5);
  TdMesh s1 = td_ellipsoid (4, 6, 2.0, 1.6, 1.3, 0.0);
  TdMesh s2 = td_ellipsoid (5, 7, 2.2, 1.5, 1.4, 0.3);
  GrVarifoldParams p = { 2, 2, 1.0, GR_VARIFOLD_ORIENTED, 1, 0 };
  compare (p, &c1, &c2, "curve, oriented", 1);
  p.orientation = GR_VARIFOLD_UNORIENTED;
  compare (p, &c1, &c2, "curve, unoriented", 1);
  p.cell_size = 1;
  compare (p, &c1, &c2, "2-D point cloud", 1);
  p.dim = 3;
  p.cell_size = 3;
  compare (p, &s1, &s2, "surface, unoriented", 1);
  p.orientation = GR_VARIFOLD_ORIENTED;
  compare (p, &s1, &s2, "surface, oriented", 1);
  p.cell_size = 1;
  compare (p, &s1, &s2, "3-D point cloud", 1);

  /* larger: several tiles per row, a partial last block */
  TdMesh b1 = td_ellipsoid (40, 61, 5.0, 4.0, 3.5, 0.0);
  TdMesh b2 = td_ellipsoid (47, 70, 5.0, 4.0, 3.5, 0.2);
  td_deform (b2.v, b2.nv);
  p.cell_size = 3;
  p.orientation = GR_VARIFOLD_UNORIENTED;
  compare (p, &b1, &b2, "large surfaces, unoriented", 0);
  p.orientation = GR_VARIFOLD_ORIENTED;
  compare (p, &b1, &b2, "large surfaces, oriented", 0);
  td_mesh_free (&c1);
  td_mesh_free (&c2);
  td_mesh_free (&s1);
  td_mesh_free (&s2);
  td_mesh_free (&b1);
  td_mesh_free (&b2);
  return CHECK_DONE ();
}
