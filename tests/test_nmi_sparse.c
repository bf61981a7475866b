/* Sparse NMI, CPU backend, against a float64 reference written the plainest way
 * (sorted pairs, -sum p ln p), sharing nothing with the kernel: every score of every
 * map on random, terrain-like, posterized, masked and tone-mapped inputs, windows
 * that leave the control, several template/window sizes; the peak against
 * gr_find_peak; exact recovery of known displacements; determinism across thread
 * counts; argument checks.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nmi_sparse.h"
#include "nmi_reference.h"
#include "peak.h"

#include "test_check.h"

#define TOL 1e-6
#define POISON -12345.0

#include "sparse_reference.h"

/* Runs n keypoints and checks every score and the peak. */
static void
check_batch (GrNmiSparse *eng, const Ctl *c, const GrNmiSparseParams *p,
    const uint8_t *tpl, const uint8_t *tm, const GrNmiSparseQuery *q, int n,
    const char *what)
{
  const int T = p->template_size, P = p->window_size - T + 1, R = P / 2;
  const int min_valid = p->min_valid > 0 ? p->min_valid : (T * T + 1) / 2;
  double *maps = malloc (sizeof (double) * P * P * n);
  GrNmiSparseMatch *out = malloc (sizeof *out * n);
  for (size_t i = 0; i < (size_t) P * P * n; i++)
    maps[i] = POISON;
  memset (out, 0xA5, sizeof *out * n);
  char err[256] = "";
  GrStatus st = gr_nmi_sparse_run (eng, p, tpl, tm, q, n, out, maps, err, sizeof err);
  CHECK (st == GR_OK, "%s: run failed: %s", what, err);
  if (st != GR_OK)
    goto done;
  double worst = 0.0;
  int bad = 0;
  for (int k = 0; k < n; k++) {
    const double *map = maps + (size_t) k * P * P;
    for (int dy = -R; dy <= R; dy++)
      for (int dx = -R; dx <= R; dx++) {
        int nv;
        double ref = ref_sparse (c, tpl + (size_t) k * T * T, tm ? tm + (size_t) k * T * T : NULL,
            T, q[k].x + dx, q[k].y + dy, &nv);
        if (nv < min_valid)
          ref = NAN;
        const double got = map[(dy + R) * P + dx + R];
        const double d = ref_rel_diff (got, ref);
        if (d > worst)
          worst = d;
        if (!(d <= TOL) && bad++ < 5)
          fprintf (stderr, "  %s: kp %d (%d,%d): got %.17g ref %.17g (n %d)\n", what, k,
              dx, dy, got, ref, nv);
      }
    /* the peak is gr_find_peak's on the same map */
    GrPeak pk;
    gr_find_peak (map, P, P, p->peak_exclusion, 1.0, &pk);
    const GrNmiSparseMatch *m = &out[k];
    if (pk.flags & GR_PEAK_NO_SCORE) {
      CHECK (m->flags & GR_NMI_SPARSE_NO_SCORE, "%s kp %d: NO_SCORE expected", what, k);
      CHECK (isnan (m->dx) && isnan (m->score), "%s kp %d: NAN expected", what, k);
      continue;
    }
    CHECK (!(m->flags & GR_NMI_SPARSE_NO_SCORE), "%s kp %d: unexpected NO_SCORE", what, k);
    CHECK (m->ix == pk.ix - R && m->iy == pk.iy - R, "%s kp %d: best (%d,%d) vs (%d,%d)",
        what, k, m->ix, m->iy, pk.ix - R, pk.iy - R);
    CHECK (m->dx == pk.x - R && m->dy == pk.y - R, "%s kp %d: sub-pixel (%.17g,%.17g) vs "
        "(%.17g,%.17g)", what, k, m->dx, m->dy, pk.x - R, pk.y - R);
    CHECK (m->score == pk.score, "%s kp %d: score", what, k);
    CHECK ((isnan (m->second) && isnan (pk.second)) || m->second == pk.second,
        "%s kp %d: second %.17g vs %.17g", what, k, m->second, pk.second);
    CHECK ((isnan (m->ratio) && isnan (pk.ratio)) || m->ratio == pk.ratio,
        "%s kp %d: ratio", what, k);
    CHECK (((m->flags & GR_NMI_SPARSE_AT_BORDER) != 0) == ((pk.flags & GR_PEAK_AT_BORDER) != 0)
        && ((m->flags & GR_NMI_SPARSE_NO_SECOND) != 0) == ((pk.flags & GR_PEAK_NO_SECOND) != 0),
        "%s kp %d: flags 0x%x vs peak 0x%x", what, k, m->flags, pk.flags);
    int nv;
    ref_sparse (c, tpl + (size_t) k * T * T, tm ? tm + (size_t) k * T * T : NULL, T,
        q[k].x + m->ix, q[k].y + m->iy, &nv);
    CHECK (m->valid == nv, "%s kp %d: valid %d vs %d", what, k, m->valid, nv);
    /* the reference's own best is as good (to rounding) */
    double rbest = -INFINITY;
    for (int i = 0; i < P * P; i++)
      if (isfinite (map[i]) && map[i] > rbest)
        rbest = map[i];
    CHECK (m->score == rbest, "%s kp %d: score is not the map maximum", what, k);
    /* clipped flag: some window pixel outside or masked */
    bool clipped = false;
    const int W = p->window_size;
    for (int y = q[k].y - W / 2; y <= q[k].y + W / 2; y++)
      for (int x = q[k].x - W / 2; x <= q[k].x + W / 2; x++)
        clipped |= x < 0 || y < 0 || x >= c->w || y >= c->h ||
            (c->mask && !c->mask[y * c->w + x]);
    CHECK (((m->flags & GR_NMI_SPARSE_CLIPPED) != 0) == clipped, "%s kp %d: clipped flag",
        what, k);
  }
  CHECK (bad == 0, "%s: %d scores off the reference (worst rel. diff %.3g)", what, bad, worst);
  printf ("%-34s %4d keypoints x %5d offsets: worst rel. diff %.2e\n", what, n, P * P, worst);
done:
  free (maps);
  free (out);
}

static void
random_batch (const Ctl *c, int T, int W, int n, bool masks, bool from_control, int tone,
    uint64_t *rng, uint8_t **tpl_o, uint8_t **tm_o, GrNmiSparseQuery **q_o)
{
  const int T2 = T * T;
  uint8_t *tpl = malloc ((size_t) T2 * n), *tm = masks ? malloc ((size_t) T2 * n) : NULL;
  GrNmiSparseQuery *q = malloc (sizeof *q * n);
  for (int k = 0; k < n; k++) {
    /* windows mostly inside, some across the edges, one far outside */
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
        int v;
        if (from_control) {
          int x = sx - T / 2 + i, y = sy - T / 2 + j;
          x = x < 0 ? 0 : x >= c->w ? c->w - 1 : x;
          y = y < 0 ? 0 : y >= c->h ? c->h - 1 : y;
          v = c->pix[y * c->w + x];
          if (tone == 1)
            v = 255 - v;
          else if (tone == 2)
            v = (int) (255.0 * pow (v / 255.0, 0.5));
          else if (tone == 3)
            v = v / 32;        /* posterize: 8 levels */
        } else {
          v = ref_rand (rng) & 255;
        }
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
run_case (GrNmiSparse *eng, int kind, bool ctl_mask, int T, int W, int n, bool tmasks,
    bool from_control, int tone, int min_valid, uint64_t seed, const char *what)
{
  uint64_t rng = seed;
  Ctl c;
  ctl_make (&c, 160, 120, kind, ctl_mask, &rng);
  GrImage8 im = { c.pix, (size_t) c.w, c.mask, (size_t) c.w, c.w, c.h };
  char err[256];
  CHECK (gr_nmi_sparse_set_control (eng, &im, err, sizeof err) == GR_OK, "%s", err);
  uint8_t *tpl, *tm;
  GrNmiSparseQuery *q;
  random_batch (&c, T, W, n, tmasks, from_control, tone, &rng, &tpl, &tm, &q);
  GrNmiSparseParams p;
  gr_nmi_sparse_params_init (&p);
  p.template_size = T;
  p.window_size = W;
  p.min_valid = min_valid;
  check_batch (eng, &c, &p, tpl, tm, q, n, what);
  free (tpl);
  free (tm);
  free (q);
  ctl_free (&c);
}

/* a template cut from the control is found at its true displacement with NMI 2 */
static void
exact_recovery (GrNmiSparse *eng)
{
  uint64_t rng = 99;
  Ctl c;
  ctl_make (&c, 260, 200, 1, false, &rng);
  GrImage8 im = { c.pix, (size_t) c.w, NULL, (size_t) c.w, c.w, c.h };
  char err[256];
  CHECK (gr_nmi_sparse_set_control (eng, &im, err, sizeof err) == GR_OK, "%s", err);
  const int T = 11, n = 40;
  uint8_t *tpl = malloc ((size_t) n * T * T);
  int32_t xy[2 * 40];
  GrNmiSparseQuery q[40];
  int sx[40], sy[40];
  for (int k = 0; k < n; k++) {
    /* windows wholly inside the control */
    xy[2 * k] = 70 + (int) (ref_rand (&rng) % 120);
    xy[2 * k + 1] = 70 + (int) (ref_rand (&rng) % 60);
    sx[k] = (int) (ref_rand (&rng) % 61) - 30;
    sy[k] = (int) (ref_rand (&rng) % 61) - 30;
    q[k].x = xy[2 * k] + sx[k];
    q[k].y = xy[2 * k + 1] + sy[k];
  }
  CHECK (gr_nmi_sparse_cut_templates (&im, T, xy, n, tpl, NULL) == GR_OK, "cut");
  /* invert the tone: NMI does not care */
  for (int i = 0; i < n * T * T; i++)
    tpl[i] = (uint8_t) (255 - tpl[i]);
  GrNmiSparseMatch out[40];
  GrNmiSparseParams p;
  gr_nmi_sparse_params_init (&p);
  CHECK (gr_nmi_sparse_run (eng, &p, tpl, NULL, q, n, out, NULL, err, sizeof err) == GR_OK,
      "%s", err);
  int found = 0;
  for (int k = 0; k < n; k++) {
    found += out[k].ix == -sx[k] && out[k].iy == -sy[k];
    CHECK (out[k].ix == -sx[k] && out[k].iy == -sy[k], "kp %d: (%d,%d) want (%d,%d)", k,
        out[k].ix, out[k].iy, -sx[k], -sy[k]);
    CHECK (fabs (out[k].score - 2.0) < 1e-12, "kp %d: score %.17g", k, out[k].score);
    CHECK (fabs (out[k].dx - out[k].ix) <= 0.5 && fabs (out[k].dy - out[k].iy) <= 0.5,
        "kp %d: sub-pixel", k);
    CHECK (out[k].valid == T * T && !(out[k].flags & (GR_NMI_SPARSE_NO_SCORE |
                GR_NMI_SPARSE_CLIPPED | GR_NMI_SPARSE_FLAT)), "kp %d: flags 0x%x", k,
        out[k].flags);
  }
  printf ("exact recovery: %d of %d displacements found\n", found, n);
  free (tpl);
  ctl_free (&c);
}

/* same output for 1 and many threads; special templates */
static void
special_cases (GrNmiSparse *eng)
{
  uint64_t rng = 5;
  Ctl c;
  ctl_make (&c, 160, 120, 1, true, &rng);
  GrImage8 im = { c.pix, (size_t) c.w, c.mask, (size_t) c.w, c.w, c.h };
  char err[256];
  gr_nmi_sparse_set_control (eng, &im, err, sizeof err);
  const int T = 11, n = 24;
  uint8_t *tpl, *tm;
  GrNmiSparseQuery *q;
  random_batch (&c, T, 73, n, false, true, 2, &rng, &tpl, &tm, &q);
  /* a flat template, a template with one valid pixel */
  memset (tpl, 77, T * T);
  GrNmiSparseParams p;
  gr_nmi_sparse_params_init (&p);
  GrNmiSparseMatch *a = malloc (sizeof *a * n), *b = malloc (sizeof *b * n);
  gr_nmi_sparse_set_threads (eng, 1);
  CHECK (gr_nmi_sparse_run (eng, &p, tpl, NULL, q, n, a, NULL, err, sizeof err) == GR_OK, "%s", err);
  gr_nmi_sparse_set_threads (eng, 0);
  CHECK (gr_nmi_sparse_run (eng, &p, tpl, NULL, q, n, b, NULL, err, sizeof err) == GR_OK, "%s", err);
  CHECK (memcmp (a, b, sizeof *a * n) == 0, "results depend on the thread count");
  CHECK (a[0].flags & GR_NMI_SPARSE_FLAT, "flat template not flagged (0x%x)", a[0].flags);
  CHECK (isnan (a[0].score) || a[0].score == 1.0, "flat template scores %g", a[0].score);
  CHECK (a[n - 1].flags & GR_NMI_SPARSE_NO_SCORE, "window outside the control not flagged");
  /* min_valid = T*T: only wholly valid offsets score */
  uint8_t *one = calloc (T * T, 1);
  one[60] = 1;
  GrNmiSparseMatch m1;
  CHECK (gr_nmi_sparse_run (eng, &p, tpl + T * T, one, q + 1, 1, &m1, NULL, err, sizeof err)
      == GR_OK, "%s", err);
  CHECK (m1.flags & GR_NMI_SPARSE_NO_SCORE, "one valid pixel < min_valid: NO_SCORE expected");
  free (one);

  /* argument checks */
  GrNmiSparseParams bad = p;
  bad.template_size = 10;
  CHECK (gr_nmi_sparse_run (eng, &bad, tpl, NULL, q, n, a, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "even template accepted");
  bad = p;
  bad.window_size = 9;
  CHECK (gr_nmi_sparse_run (eng, &bad, tpl, NULL, q, n, a, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "window smaller than the template accepted");
  bad = p;
  bad.window_size = 131;
  CHECK (gr_nmi_sparse_run (eng, &bad, tpl, NULL, q, n, a, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "window 131 accepted");
  bad = p;
  bad.template_size = 17;
  CHECK (gr_nmi_sparse_run (eng, &bad, tpl, NULL, q, n, a, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "template 17 accepted");
  CHECK (gr_nmi_sparse_run (eng, &p, tpl, NULL, q, 0, a, NULL, err, sizeof err) == GR_OK,
      "n = 0 refused");
  CHECK (gr_nmi_sparse_run (eng, &p, NULL, NULL, q, 3, a, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "NULL templates accepted");
  GrStatus st;
  GrNmiSparse *fresh = gr_nmi_sparse_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
  CHECK (gr_nmi_sparse_run (fresh, &p, tpl, NULL, q, 1, a, NULL, err, sizeof err) ==
      GR_ERR_INVALID, "run without a control accepted");
  gr_nmi_sparse_free (fresh);
  free (a);
  free (b);
  free (tpl);
  free (tm);
  free (q);
  ctl_free (&c);
}

int
main (void)
{
  GrStatus st;
  char err[256];
  GrNmiSparse *eng = gr_nmi_sparse_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
  CHECK (eng != NULL, "engine: %s", err);
  if (!eng)
    return CHECK_DONE ();
  CHECK (gr_nmi_sparse_backend (eng) == GR_BACKEND_CPU, "backend");

  run_case (eng, 0, false, 11, 73, 12, false, false, 0, 0, 1, "random 11/73");
  run_case (eng, 1, false, 11, 73, 12, false, true, 2, 0, 2, "terrain gamma 11/73");
  run_case (eng, 1, true, 11, 73, 12, false, true, 1, 0, 3, "terrain masked ctl 11/73");
  run_case (eng, 1, true, 11, 73, 12, true, true, 0, 0, 4, "terrain both masked 11/73");
  run_case (eng, 2, false, 11, 73, 10, false, true, 3, 0, 5, "posterized 11/73");
  run_case (eng, 2, true, 11, 41, 10, true, true, 3, 1, 6, "posterized masked 11/41 mv1");
  run_case (eng, 1, false, 3, 9, 20, false, true, 0, 0, 7, "terrain 3/9");
  run_case (eng, 1, true, 15, 129, 4, true, true, 2, 0, 8, "terrain 15/129 (P > 64)");
  run_case (eng, 1, false, 11, 11, 10, false, true, 0, 0, 9, "terrain 11/11 (one offset)");
  run_case (eng, 1, false, 7, 25, 10, false, true, 1, 49, 10, "terrain 7/25 min_valid all");
  exact_recovery (eng);
  special_cases (eng);
  gr_nmi_sparse_free (eng);
  return CHECK_DONE ();
}
