/* Sparse NMI, CUDA backend: CUDA vs the CPU backend (bit-identical maps and results:
 * same best offsets) vs the float64 reference (1e-6 relative), on random, terrain,
 * posterized, masked and tone-mapped inputs, windows leaving the control, several
 * template/window sizes (P > 64 columns, a single offset), a large batch (the
 * persistent grid loops), engine reuse (a second control), and, when GEOREG_DATA
 * names a folder holding aukerman.png, the real orthomosaic with keypoints from the
 * detector.  Exit 0 pass, 1 fail, 77 skip (no usable CUDA device).
 * GEOREG_TEST_FAKE_CUDA=1 runs the same comparisons against a second CPU engine (a
 * self-check of this test on machines without a GPU); GEOREG_TEST_SMALL=1 leaves the
 * large batch and the real data out (for compute-sanitizer).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "keypoints.h"
#include "nmi_sparse.h"
#include "raster.h"

#include "test_check.h"
#include "sparse_reference.h"

#define TOL 1e-6

static bool
same_double (double a, double b)
{
  return (isnan (a) && isnan (b)) || a == b;
}

static int
compare_results (const GrNmiSparseMatch *a, const GrNmiSparseMatch *b, int n,
    const char *what)
{
  int bad = 0;
  for (int k = 0; k < n; k++) {
    const GrNmiSparseMatch *x = &a[k], *y = &b[k];
    if (x->ix != y->ix || x->iy != y->iy || !same_double (x->dx, y->dx) ||
        !same_double (x->dy, y->dy) || !same_double (x->score, y->score) ||
        !same_double (x->second, y->second) || !same_double (x->ratio, y->ratio) ||
        x->valid != y->valid || x->flags != y->flags) {
      if (bad++ < 5)
        fprintf (stderr, "  %s kp %d: cuda (%d,%d) %.17g %.17g flags 0x%x valid %d | cpu "
            "(%d,%d) %.17g %.17g flags 0x%x valid %d\n", what, k, x->ix, x->iy, x->score,
            x->dx, x->flags, x->valid, y->ix, y->iy, y->score, y->dx, y->flags, y->valid);
    }
  }
  return bad;
}

/* gpu and cpu on one batch: maps and results identical, a sample of keypoints
 * against the reference */
static void
check_batch (GrNmiSparse *gpu, GrNmiSparse *cpu, const Ctl *c, const GrNmiSparseParams *p,
    const uint8_t *tpl, const uint8_t *tm, const GrNmiSparseQuery *q, int n, int nref,
    const char *what)
{
  const int T = p->template_size, P = p->window_size - T + 1, R = P / 2;
  const int min_valid = p->min_valid > 0 ? p->min_valid : (T * T + 1) / 2;
  const size_t P2 = (size_t) P * P;
  double *mg = malloc (sizeof (double) * P2 * n), *mc = malloc (sizeof (double) * P2 * n);
  GrNmiSparseMatch *og = malloc (sizeof *og * n), *oc = malloc (sizeof *oc * n);
  for (size_t i = 0; i < P2 * n; i++)
    mg[i] = mc[i] = -12345.0;
  memset (og, 0x5A, sizeof *og * n);
  char err[256] = "";
  GrStatus st = gr_nmi_sparse_run (gpu, p, tpl, tm, q, n, og, mg, err, sizeof err);
  CHECK (st == GR_OK, "%s: cuda run: %s", what, err);
  st = gr_nmi_sparse_run (cpu, p, tpl, tm, q, n, oc, mc, err, sizeof err);
  CHECK (st == GR_OK, "%s: cpu run: %s", what, err);
  int map_bad = 0;
  for (size_t i = 0; i < P2 * n; i++)
    if (!same_double (mg[i], mc[i]) && map_bad++ < 5)
      fprintf (stderr, "  %s map[%zu]: cuda %.17g cpu %.17g\n", what, i, mg[i], mc[i]);
  CHECK (map_bad == 0, "%s: %d map entries differ between CUDA and CPU", what, map_bad);
  const int res_bad = compare_results (og, oc, n, what);
  CHECK (res_bad == 0, "%s: %d results differ between CUDA and CPU", what, res_bad);
  /* the results without maps (the persistent per-CTA scratch) are the same */
  GrNmiSparseMatch *o2 = malloc (sizeof *o2 * n);
  st = gr_nmi_sparse_run (gpu, p, tpl, tm, q, n, o2, NULL, err, sizeof err);
  CHECK (st == GR_OK, "%s: cuda run without maps: %s", what, err);
  CHECK (compare_results (o2, oc, n, what) == 0, "%s: results without maps differ", what);
  free (o2);
  /* reference on a sample */
  double worst = 0.0;
  int ref_bad = 0;
  const int step = nref > 0 && n > nref ? n / nref : 1;
  for (int k = 0; k < n && nref > 0; k += step)
    for (int dy = -R; dy <= R; dy++)
      for (int dx = -R; dx <= R; dx++) {
        int nv;
        double ref = ref_sparse (c, tpl + (size_t) k * T * T, tm ? tm + (size_t) k * T * T
            : NULL, T, q[k].x + dx, q[k].y + dy, &nv);
        if (nv < min_valid)
          ref = NAN;
        const double d = ref_rel_diff (mg[(size_t) k * P2 + (dy + R) * P + dx + R], ref);
        worst = d > worst ? d : worst;
        ref_bad += !(d <= TOL);
      }
  CHECK (ref_bad == 0, "%s: %d scores off the float64 reference", what, ref_bad);
  const double ms = gr_nmi_sparse_last_kernel_ms (gpu);
  printf ("%-36s %5d keypoints: CUDA == CPU (maps, offsets, flags); worst rel. diff to "
      "float64 %.2e; kernel %.3f ms\n", what, n, worst, ms);
  free (mg);
  free (mc);
  free (og);
  free (oc);
}

static void
random_batch (const Ctl *c, int T, int W, int n, bool masks, int tone, uint64_t *rng,
    uint8_t **tpl_o, uint8_t **tm_o, GrNmiSparseQuery **q_o)
{
  const int T2 = T * T;
  uint8_t *tpl = malloc ((size_t) T2 * n), *tm = masks ? malloc ((size_t) T2 * n) : NULL;
  GrNmiSparseQuery *q = malloc (sizeof *q * n);
  for (int k = 0; k < n; k++) {
    const int margin = W / 2 + 3;
    q[k].x = (int) (ref_rand (rng) % (c->w + 2 * margin)) - margin;
    q[k].y = (int) (ref_rand (rng) % (c->h + 2 * margin)) - margin;
    if (k == n - 1) {
      q[k].x = -10 * W;
      q[k].y = c->h / 2;
    }
    const int sx = q[k].x + (int) (ref_rand (rng) % (W - T + 1)) - (W - T) / 2;
    const int sy = q[k].y + (int) (ref_rand (rng) % (W - T + 1)) - (W - T) / 2;
    for (int j = 0; j < T; j++)
      for (int i = 0; i < T; i++) {
        int x = sx - T / 2 + i, y = sy - T / 2 + j;
        x = x < 0 ? 0 : x >= c->w ? c->w - 1 : x;
        y = y < 0 ? 0 : y >= c->h ? c->h - 1 : y;
        int v = c->pix[y * c->w + x];
        if (tone == 1)
          v = 255 - v;
        else if (tone == 2)
          v = (int) (255.0 * pow (v / 255.0, 0.5));
        else if (tone == 3)
          v = ref_rand (rng) & 255;
        tpl[(size_t) k * T2 + j * T + i] = (uint8_t) v;
        if (tm)
          tm[(size_t) k * T2 + j * T + i] = (uint8_t) (ref_rand (rng) % 5 != 0);
      }
  }
  *tpl_o = tpl;
  *tm_o = tm;
  *q_o = q;
}

static void
run_case (GrNmiSparse *gpu, GrNmiSparse *cpu, int kind, bool ctl_mask, int T, int W, int n,
    bool tmasks, int tone, int min_valid, int nref, uint64_t seed, const char *what)
{
  uint64_t rng = seed;
  Ctl c;
  ctl_make (&c, 200, 150, kind, ctl_mask, &rng);
  GrImage8 im = { c.pix, (size_t) c.w, c.mask, (size_t) c.w, c.w, c.h };
  char err[256];
  CHECK (gr_nmi_sparse_set_control (gpu, &im, err, sizeof err) == GR_OK, "%s", err);
  CHECK (gr_nmi_sparse_set_control (cpu, &im, err, sizeof err) == GR_OK, "%s", err);
  uint8_t *tpl, *tm;
  GrNmiSparseQuery *q;
  random_batch (&c, T, W, n, tmasks, tone, &rng, &tpl, &tm, &q);
  GrNmiSparseParams p;
  gr_nmi_sparse_params_init (&p);
  p.template_size = T;
  p.window_size = W;
  p.min_valid = min_valid;
  check_batch (gpu, cpu, &c, &p, tpl, tm, q, n, nref, what);
  free (tpl);
  free (tm);
  free (q);
  ctl_free (&c);
}

/* the real orthomosaic, 16 levels, keypoints from the detector, displaced queries */
static void
real_data (GrNmiSparse *gpu, GrNmiSparse *cpu)
{
  const char *dir = getenv ("GEOREG_DATA");
  if (!dir || !*dir) {
    printf ("real data: skipped (GEOREG_DATA unset)\n");
    return;
  }
  char path[4096], err[512];
  snprintf (path, sizeof path, "%s/aukerman.png", dir);
  GrRaster r;
  if (gr_raster_load (path, 0, &r, err, sizeof err) != GR_OK) {
    printf ("real data: skipped (%s)\n", err);
    return;
  }
  const int w = r.plane.width, h = r.plane.height;
  Ctl c = { malloc ((size_t) w * h), NULL, w, h };
  if (r.plane.mask) {
    c.mask = malloc ((size_t) w * h);
    memcpy (c.mask, r.plane.mask, (size_t) w * h);
  }
  for (int i = 0; i < w * h; i++)
    c.pix[i] = (uint8_t) (r.plane.data[i] / 16.0f);     /* 16 levels */
  GrImage8 im = { c.pix, (size_t) w, c.mask, (size_t) w, w, h };
  CHECK (gr_nmi_sparse_set_control (gpu, &im, err, sizeof err) == GR_OK, "%s", err);
  CHECK (gr_nmi_sparse_set_control (cpu, &im, err, sizeof err) == GR_OK, "%s", err);
  GrKeypointParams kpp;
  gr_keypoint_params_init (&kpp);
  kpp.max_keypoints = 2000;
  GrKeypoint *kp = malloc (sizeof *kp * 2000);
  const int nk = gr_keypoints_detect (&r.plane, &kpp, kp, 2000);
  CHECK (nk > 500, "real data: %d keypoints", nk);
  int32_t *xy = malloc (sizeof (int32_t) * 2 * nk);
  GrNmiSparseQuery *q = malloc (sizeof *q * nk);
  uint64_t rng = 2026;
  for (int k = 0; k < nk; k++) {
    xy[2 * k] = (int) kp[k].x;
    xy[2 * k + 1] = (int) kp[k].y;
    q[k].x = xy[2 * k] + (int) (ref_rand (&rng) % 41) - 20;
    q[k].y = xy[2 * k + 1] + (int) (ref_rand (&rng) % 41) - 20;
  }
  uint8_t *tpl = malloc ((size_t) nk * 121);
  gr_nmi_sparse_cut_templates (&im, 11, xy, nk, tpl, NULL);
  GrNmiSparseParams p;
  gr_nmi_sparse_params_init (&p);
  check_batch (gpu, cpu, &c, &p, tpl, NULL, q, nk, 8, "aukerman 16 levels, detector");
  /* the true displacement is found */
  GrNmiSparseMatch *o = malloc (sizeof *o * nk);
  gr_nmi_sparse_run (gpu, &p, tpl, NULL, q, nk, o, NULL, err, sizeof err);
  int found = 0;
  for (int k = 0; k < nk; k++)
    found += o[k].ix == xy[2 * k] - q[k].x && o[k].iy == xy[2 * k + 1] - q[k].y;
  CHECK (found >= nk * 9 / 10, "real data: %d of %d displacements found", found, nk);
  printf ("real data: %d of %d true displacements found\n", found, nk);
  free (o);
  free (tpl);
  free (q);
  free (xy);
  free (kp);
  ctl_free (&c);
  gr_raster_clear (&r);
}

int
main (void)
{
  const bool fake = getenv ("GEOREG_TEST_FAKE_CUDA") && atoi (getenv ("GEOREG_TEST_FAKE_CUDA"));
  if (!fake && gr_cuda_device_count () == 0) {
    printf ("SKIP: no usable CUDA device (%s)\n", gr_cuda_compiled () ?
        "no GPU or no driver" : "built without CUDA");
    return 77;
  }
  GrStatus st;
  char err[256];
  GrNmiSparse *gpu = gr_nmi_sparse_new (fake ? GR_BACKEND_CPU : GR_BACKEND_CUDA, -1, &st,
      err, sizeof err);
  GrNmiSparse *cpu = gr_nmi_sparse_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
  CHECK (gpu && cpu, "engines: %s", err);
  if (!gpu || !cpu)
    return CHECK_DONE ();
  CHECK (fake || gr_nmi_sparse_backend (gpu) == GR_BACKEND_CUDA, "backend");
  if (fake)
    printf ("GEOREG_TEST_FAKE_CUDA: comparing two CPU engines\n");

  run_case (gpu, cpu, 0, false, 11, 73, 40, false, 3, 0, 4, 1, "random 11/73");
  run_case (gpu, cpu, 1, false, 11, 73, 60, false, 2, 0, 4, 2, "terrain gamma 11/73");
  run_case (gpu, cpu, 1, true, 11, 73, 60, false, 1, 0, 4, 3, "terrain masked ctl 11/73");
  run_case (gpu, cpu, 1, true, 11, 73, 60, true, 0, 0, 4, 4, "terrain both masked 11/73");
  run_case (gpu, cpu, 2, false, 11, 73, 40, false, 0, 0, 4, 5, "posterized 11/73");
  run_case (gpu, cpu, 2, true, 11, 41, 40, true, 1, 1, 4, 6, "posterized masked 11/41 mv1");
  run_case (gpu, cpu, 1, false, 3, 9, 100, false, 0, 0, 10, 7, "terrain 3/9");
  run_case (gpu, cpu, 1, true, 15, 129, 12, true, 2, 0, 2, 8, "terrain 15/129 (P > 64)");
  run_case (gpu, cpu, 1, false, 11, 11, 50, false, 0, 0, 10, 9, "terrain 11/11 (one offset)");
  run_case (gpu, cpu, 1, false, 7, 25, 80, false, 1, 49, 4, 10, "terrain 7/25 min_valid all");
  /* GEOREG_TEST_SMALL=1 (e.g. under compute-sanitizer) leaves out the big runs */
  const bool small = getenv ("GEOREG_TEST_SMALL") && atoi (getenv ("GEOREG_TEST_SMALL"));
  if (!small) {
    run_case (gpu, cpu, 1, true, 11, 73, 3000, false, 2, 0, 3, 11, "large batch (grid loops)");
    real_data (gpu, cpu);
  } else {
    run_case (gpu, cpu, 1, true, 11, 73, 700, false, 2, 0, 1, 11, "batch of 700 (grid loops)");
  }
  /* n = 0, a run after a control change (reuse), bad params */
  GrNmiSparseParams p;
  gr_nmi_sparse_params_init (&p);
  GrNmiSparseMatch one;
  CHECK (gr_nmi_sparse_run (gpu, &p, NULL, NULL, NULL, 0, &one, NULL, err, sizeof err) ==
      GR_OK, "n = 0: %s", err);
  p.window_size = 8;
  uint8_t t[121] = { 0 };
  GrNmiSparseQuery q = { 10, 10 };
  CHECK (gr_nmi_sparse_run (gpu, &p, t, NULL, &q, 1, &one, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "even window accepted");
  gr_nmi_sparse_free (gpu);
  gr_nmi_sparse_free (cpu);
  return CHECK_DONE ();
}
