/* Dense NMI, CUDA backend: CUDA vs the CPU backend vs the float64 reference
 * (ref_nmi_at) on random images with random and blotchy masks, odd sizes, constant
 * and uniform images (shared-memory contention), counters past 65,535 in one bin,
 * min_valid thresholds, the internal kernel variants, engine reuse, and, when
 * GEOREG_DATA names a folder holding aukerman.png, a real orthomosaic.
 * Exit 0 pass, 1 fail, 77 skip (no usable CUDA device).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nmi_dense.h"
#include "nmi_reference.h"
#include "raster.h"

#include "test_check.h"

#define TOL 1e-6
#define POISON_SCORE -12345.0
#define POISON_VALID -7

static bool quick;

typedef struct {
  uint8_t *pix, *mask;
  int stride;
  GrImage8 im;
} Img;

static void
img_alloc (Img *o, int w, int h, bool with_mask)
{
  o->stride = w + 5;                   /* wider than the row, not a multiple of 16 */
  o->pix = calloc ((size_t) o->stride * h, 1);
  o->mask = with_mask ? calloc ((size_t) o->stride * h, 1) : NULL;
  o->im = (GrImage8) { o->pix, (size_t) o->stride, o->mask, (size_t) o->stride, w, h };
}

static void
img_free (Img *o)
{
  free (o->pix);
  free (o->mask);
  memset (o, 0, sizeof *o);
}

static void
fill_random (Img *o, int levels, uint64_t *rng)
{
  for (int y = 0; y < o->im.height; y++)
    for (int x = 0; x < o->im.width; x++)
      o->pix[y * o->stride + x] = (uint8_t) (ref_rand (rng) % levels);
}

/* a smooth random field (bilinear over a coarse random grid), 0..1 */
static void
smooth_field (float *f, int w, int h, int cell, uint64_t *rng)
{
  const int gw = w / cell + 2, gh = h / cell + 2;
  float *g = malloc (sizeof (float) * gw * gh);
  for (int i = 0; i < gw * gh; i++)
    g[i] = (ref_rand (rng) & 0xFFFF) / 65535.0f;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      const float fx = (float) x / cell, fy = (float) y / cell;
      const int ix = (int) fx, iy = (int) fy;
      const float ax = fx - ix, ay = fy - iy;
      const float v0 = g[iy * gw + ix] * (1 - ax) + g[iy * gw + ix + 1] * ax;
      const float v1 = g[(iy + 1) * gw + ix] * (1 - ax) + g[(iy + 1) * gw + ix + 1] * ax;
      f[y * w + x] = v0 * (1 - ay) + v1 * ay;
    }
  free (g);
}

/* terrain-like pixels: a smooth field plus noise, quantized to 256 levels */
static void
fill_terrain (Img *o, uint64_t *rng)
{
  const int w = o->im.width, h = o->im.height;
  float *f = malloc (sizeof (float) * w * h);
  smooth_field (f, w, h, 23, rng);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int v = (int) (f[y * w + x] * 230.0f) + (int) (ref_rand (rng) % 25);
      o->pix[y * o->stride + x] = (uint8_t) (v > 255 ? 255 : v);
    }
  free (f);
}

/* mask kinds: 'r' independent random pixels at pct %, 'b' blotchy (a smooth field
 * thresholded so that about pct % is valid) */
static void
fill_mask (Img *o, char kind, int pct, uint64_t *rng)
{
  const int w = o->im.width, h = o->im.height;
  if (kind == 'r') {
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        o->mask[y * o->stride + x] = (int) (ref_rand (rng) % 100) < pct ? 255 : 0;
    return;
  }
  float *f = malloc (sizeof (float) * w * h);
  smooth_field (f, w, h, 9, rng);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      o->mask[y * o->stride + x] = f[y * w + x] < pct / 100.0f ? 1 : 0;
  free (f);
}

static void
poison (double *s, int32_t *v, long n)
{
  for (long i = 0; i < n; i++) {
    s[i] = POISON_SCORE;
    if (v)
      v[i] = POISON_VALID;
  }
}

/* Runs one backend over the region; the outputs are poisoned first. */
static bool
run_backend (GrBackend be, const GrImage8 *ctl, const GrImage8 *tpl, GrRegion r,
    int min_valid, double *s, int32_t *v)
{
  GrStatus st;
  char err[512] = "";
  GrNmiDense *nmi = gr_nmi_dense_new (be, 0, &st, err, sizeof err);
  CHECK (nmi != NULL, "%s engine: %s (%s)", gr_backend_name (be), gr_status_string (st), err);
  if (!nmi)
    return false;
  CHECK (gr_nmi_dense_backend (nmi) == be, "backend %d", gr_nmi_dense_backend (nmi));
  /* the raw kernels against the plain reference; the weighting is host code shared
   * by both backends (test_nmi_dense checks it; test_engine_reuse compares the default,
   * weighted, scores of both) */
  gr_nmi_dense_set_score (nmi, GR_NMI_SCORE_PLAIN);
  st = gr_nmi_dense_set_control (nmi, ctl, err, sizeof err);
  CHECK (st == GR_OK, "%s set_control: %s", gr_backend_name (be), err);
  const long n = (long) (r.x1 - r.x0) * (r.y1 - r.y0);
  poison (s, v, n);
  if (st == GR_OK) {
    st = gr_nmi_dense_run (nmi, tpl, r, min_valid, s, v, err, sizeof err);
    CHECK (st == GR_OK, "%s run: %s", gr_backend_name (be), err);
  }
  gr_nmi_dense_free (nmi);
  return st == GR_OK;
}

typedef struct {
  double cuda_cpu, cuda_ref, cpu_ref;
  long positions, nans, ref_checked;
} Stats;

static int
argmax (const double *s, long n)
{
  int best = -1;
  for (long i = 0; i < n; i++)
    if (!isnan (s[i]) && (best < 0 || s[i] > s[best]))
      best = (int) i;
  return best;
}

/* CUDA vs CPU everywhere, both vs the float64 reference at every ref_every-th
 * translation (1 = all), valid counts equal, identical argmax. */
static Stats
compare (const char *name, const GrImage8 *ctl, const GrImage8 *tpl, GrRegion r,
    int min_valid, int ref_every)
{
  Stats st = { 0 };
  const int rw = r.x1 - r.x0, rh = r.y1 - r.y0;
  const long n = (long) rw * rh;
  double *sg = malloc (sizeof (double) * n), *sc = malloc (sizeof (double) * n);
  int32_t *vg = malloc (sizeof (int32_t) * n), *vc = malloc (sizeof (int32_t) * n);
  const bool okg = run_backend (GR_BACKEND_CUDA, ctl, tpl, r, min_valid, sg, vg);
  const bool okc = run_backend (GR_BACKEND_CPU, ctl, tpl, r, min_valid, sc, vc);
  if (okg && okc) {
    int bad = 0;
    for (long i = 0; i < n; i++) {
      const int dx = r.x0 + (int) (i % rw), dy = r.y0 + (int) (i / rw);
      const double e = ref_rel_diff (sg[i], sc[i]);
      if (e > st.cuda_cpu)
        st.cuda_cpu = e;
      if (isnan (sg[i]))
        st.nans++;
      if ((e > TOL || vg[i] != vc[i] || sg[i] == POISON_SCORE) && bad++ < 5)
        CHECK (0, "%s (%d,%d): cuda %.17g cpu %.17g, valid %d vs %d", name, dx, dy,
            sg[i], sc[i], vg[i], vc[i]);
      if (ref_every > 0 && (i % ref_every == 0 || i == n - 1)) {
        long nr;
        double ref = ref_nmi_at (ctl, tpl, dx, dy, &nr);
        if (nr < min_valid)
          ref = NAN;
        const double eg = ref_rel_diff (sg[i], ref), ec = ref_rel_diff (sc[i], ref);
        if (eg > st.cuda_ref)
          st.cuda_ref = eg;
        if (ec > st.cpu_ref)
          st.cpu_ref = ec;
        st.ref_checked++;
        if ((eg > TOL || vg[i] != nr) && bad++ < 5)
          CHECK (0, "%s (%d,%d): cuda %.17g ref %.17g, valid %d vs %ld", name, dx, dy,
              sg[i], ref, vg[i], nr);
        if ((ec > TOL || vc[i] != nr) && bad++ < 5)
          CHECK (0, "%s (%d,%d): cpu %.17g ref %.17g, valid %d vs %ld", name, dx, dy,
              sc[i], ref, vc[i], nr);
      }
    }
    if (bad > 5)
      CHECK (0, "%s: %d mismatches in all", name, bad);
    const int ag = argmax (sg, n), ac = argmax (sc, n);
    /* ties within rounding may pick either: then the scores must agree */
    CHECK (ag == ac || (ag >= 0 && ac >= 0 && fabs (sg[ag] - sc[ac]) <= 1e-12 * fabs (sc[ac])),
        "%s: argmax cuda %d (%.17g) cpu %d (%.17g)", name, ag, ag >= 0 ? sg[ag] : NAN, ac,
        ac >= 0 ? sc[ac] : NAN);
  }
  st.positions = n;
  printf ("%-34s %5dx%-4d in %4dx%-4d %6ld pos %5ld NaN  cuda-cpu %.2e  cuda-ref %.2e  "
      "cpu-ref %.2e (%ld ref)\n", name, tpl->width, tpl->height, ctl->width, ctl->height,
      n, st.nans, st.cuda_cpu, st.cuda_ref, st.cpu_ref, st.ref_checked);
  fflush (stdout);
  free (sg);
  free (sc);
  free (vg);
  free (vc);
  return st;
}

static GrRegion
full_region (const GrImage8 *c, const GrImage8 *t)
{
  return (GrRegion) { 0, 0, c->width - t->width + 1, c->height - t->height + 1 };
}

/* random images, masks of every kind, odd sizes */
static void
test_random (void)
{
  uint64_t rng = 0x1234567887654321ULL;
  const struct { const char *name; int cw, ch, tw, th, levels; char cm, tm; int cp, tp; } cases[] = {
    { "random 256 levels, no masks", 97, 83, 37, 29, 256, 0, 0, 100, 100 },
    { "random 16 levels, no masks", 130, 77, 61, 40, 16, 0, 0, 100, 100 },
    { "random, 50% random masks", 101, 67, 45, 31, 256, 'r', 'r', 50, 50 },
    { "16 levels, blotchy masks 50%", 120, 90, 53, 47, 16, 'b', 'b', 50, 50 },
    { "template mask only (blotchy)", 88, 70, 33, 35, 64, 0, 'b', 100, 60 },
    { "control mask only (random 90%)", 88, 70, 33, 35, 64, 'r', 0, 90, 100 },
    { "template as large as control", 41, 23, 41, 23, 256, 'r', 'r', 70, 70 },
    { "1-pixel-wide template", 60, 50, 1, 17, 256, 0, 0, 100, 100 },
    { "1-row template", 70, 20, 45, 1, 256, 'r', 0, 80, 100 },
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    Img ctl, tpl;
    img_alloc (&ctl, cases[c].cw, cases[c].ch, cases[c].cm != 0);
    img_alloc (&tpl, cases[c].tw, cases[c].th, cases[c].tm != 0);
    fill_random (&ctl, cases[c].levels, &rng);
    fill_random (&tpl, cases[c].levels, &rng);
    if (cases[c].cm)
      fill_mask (&ctl, cases[c].cm, cases[c].cp, &rng);
    if (cases[c].tm)
      fill_mask (&tpl, cases[c].tm, cases[c].tp, &rng);
    compare (cases[c].name, &ctl.im, &tpl.im, full_region (&ctl.im, &tpl.im), 1, 1);
    img_free (&ctl);
    img_free (&tpl);
  }
}

/* min_valid thresholds: some translations scored, some NAN, counts always given */
static void
test_min_valid (void)
{
  uint64_t rng = 77;
  Img ctl, tpl;
  img_alloc (&ctl, 150, 110, true);
  img_alloc (&tpl, 40, 30, true);
  fill_terrain (&ctl, &rng);
  fill_terrain (&tpl, &rng);
  fill_mask (&ctl, 'b', 50, &rng);
  fill_mask (&tpl, 'b', 70, &rng);
  GrRegion r = { 3, 5, 150 - 40 + 1 - 2, 110 - 30 + 1 - 4 };   /* a sub-region */
  const int thresholds[] = { 1, 200, 420, 700, 1200 };
  for (size_t i = 0; i < sizeof thresholds / sizeof thresholds[0]; i++) {
    char name[64];
    snprintf (name, sizeof name, "min_valid %d, blotchy masks", thresholds[i]);
    Stats s = compare (name, &ctl.im, &tpl.im, r, thresholds[i], 3);
    if (thresholds[i] == 420)
      CHECK (s.nans > 0 && s.nans < s.positions, "min_valid 420 should leave some NAN "
          "and some scored (%ld of %ld NAN)", s.nans, s.positions);
  }
  /* an all-invalid template: all NAN, counts 0 */
  memset (tpl.mask, 0, (size_t) tpl.stride * 30);
  const long n = (long) (r.x1 - r.x0) * (r.y1 - r.y0);
  double *s = malloc (sizeof (double) * n);
  int32_t *v = malloc (sizeof (int32_t) * n);
  if (run_backend (GR_BACKEND_CUDA, &ctl.im, &tpl.im, r, 1, s, v))
    for (long i = 0; i < n; i++)
      if (!isnan (s[i]) || v[i] != 0) {
        CHECK (0, "all-masked template: %g %d at %ld", s[i], v[i], i);
        break;
      }
  free (s);
  free (v);
  img_free (&ctl);
  img_free (&tpl);
}

/* constant and uniform images: contention on one bank / one address */
static void
test_uniform (void)
{
  uint64_t rng = 99;
  Img ctl, tpl, ctpl, cctl;
  img_alloc (&ctl, 140, 100, false);
  img_alloc (&tpl, 57, 43, false);
  img_alloc (&ctpl, 57, 43, false);
  img_alloc (&cctl, 140, 100, true);
  fill_terrain (&ctl, &rng);
  fill_random (&tpl, 256, &rng);
  memset (ctpl.pix, 77, (size_t) ctpl.stride * 43);
  /* a control with a large uniform patch (water) and terrain around it */
  fill_terrain (&cctl, &rng);
  for (int y = 10; y < 90; y++)
    for (int x = 20; x < 130; x++)
      cctl.pix[y * cctl.stride + x] = 131;
  fill_mask (&cctl, 'b', 85, &rng);
  compare ("constant template", &ctl.im, &ctpl.im, full_region (&ctl.im, &ctpl.im), 1, 2);
  compare ("random template, uniform patch", &cctl.im, &tpl.im,
      full_region (&cctl.im, &tpl.im), 1, 2);
  compare ("constant template, uniform patch", &cctl.im, &ctpl.im,
      full_region (&cctl.im, &ctpl.im), 1, 2);
  /* constant over constant: H(A,B) = 0 -> exactly 1 */
  memset (cctl.pix, 131, (size_t) cctl.stride * 100);
  memset (cctl.mask, 1, (size_t) cctl.stride * 100);
  const GrRegion r = full_region (&cctl.im, &ctpl.im);
  const long n = (long) (r.x1 - r.x0) * (r.y1 - r.y0);
  double *s = malloc (sizeof (double) * n);
  int32_t *v = malloc (sizeof (int32_t) * n);
  if (run_backend (GR_BACKEND_CUDA, &cctl.im, &ctpl.im, r, 1, s, v))
    for (long i = 0; i < n; i++)
      if (s[i] != 1.0 || v[i] != 57 * 43) {
        CHECK (0, "constant over constant: %.17g (valid %d) at %ld, want 1", s[i], v[i], i);
        break;
      }
  free (s);
  free (v);
  img_free (&ctl);
  img_free (&tpl);
  img_free (&ctpl);
  img_free (&cctl);
}

/* joint bins past 65,535: low fields (a < 128), high fields (a >= 128), both halves
 * of one word wrapping, and the carry from a low field into a high one */
static void
test_big_bins (void)
{
  uint64_t rng = 4242;
  const struct { const char *name; int tw, th, lo, hi; bool split; } cases[] = {
    { "300x300 region a=200 (high field)", 310, 300, 200, 200, false },
    { "300x300 region a=3 (low field)", 310, 300, 3, 3, false },
    { "a=3 | a=131 halves (one word)", 520, 300, 3, 131, true },
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const int tw = cases[c].tw, th = cases[c].th;
    Img ctl, tpl;
    img_alloc (&ctl, tw + 9, th + 6, true);
    img_alloc (&tpl, tw, th, false);
    fill_random (&tpl, 256, &rng);
    for (int y = 0; y < 300; y++)
      for (int x = 0; x < 300 && x < tw; x++)
        tpl.pix[y * tpl.stride + x] = (uint8_t) cases[c].lo;
    if (cases[c].split)
      for (int y = 0; y < th; y++)
        for (int x = 0; x < tw; x++)
          tpl.pix[y * tpl.stride + x] = (uint8_t) (x < tw / 2 ? cases[c].lo : cases[c].hi);
    /* sprinkle a few other values so the joint histogram is not trivial, including
     * the high-field partner bin of the low constant */
    for (int i = 0; i < 500; i++) {
      const int x = ref_rand (&rng) % tw, y = ref_rand (&rng) % th;
      tpl.pix[y * tpl.stride + x] = (uint8_t) (i & 1 ? (cases[c].lo + 128) & 255 : ref_rand (&rng));
    }
    /* control: uniform (value 90 and 91 = neighbours in one packed word pair?) with
     * a noisy border, all valid except a few pixels */
    for (int y = 0; y < ctl.im.height; y++)
      for (int x = 0; x < ctl.im.width; x++) {
        ctl.pix[y * ctl.stride + x] = (uint8_t) ((x < 4 || y < 3) ? ref_rand (&rng) : 90);
        ctl.mask[y * ctl.stride + x] = (ref_rand (&rng) % 1000) != 0;
      }
    compare (cases[c].name, &ctl.im, &tpl.im, full_region (&ctl.im, &tpl.im), 1, 1);
    img_free (&ctl);
    img_free (&tpl);
  }
}

/* a 1024x1024 template (1M pixels, 4 levels: every joint bin wraps several times) */
static void
test_large_template (void)
{
  uint64_t rng = 5;
  Img ctl, tpl;
  img_alloc (&ctl, 1030, 1027, false);
  img_alloc (&tpl, 1024, 1024, true);
  fill_random (&ctl, 4, &rng);
  fill_random (&tpl, 3, &rng);
  for (int y = 0; y < 1024; y++)
    for (int x = 0; x < 1024; x++) {
      tpl.pix[y * tpl.stride + x] = (uint8_t) (tpl.pix[y * tpl.stride + x] * 100);
      tpl.mask[y * tpl.stride + x] = (ref_rand (&rng) % 16) != 0;
    }
  compare ("1024x1024 template, 3x4 levels", &ctl.im, &tpl.im,
      full_region (&ctl.im, &tpl.im), 1, 1);
  img_free (&ctl);
  img_free (&tpl);
}

/* the kernel's internal variants (uniform-chunk merging, per-lane c ln c table)
 * must agree */
static void
test_variants (void)
{
  uint64_t rng = 31337;
  Img ctl, tpl, big;
  img_alloc (&ctl, 180, 140, true);
  img_alloc (&tpl, 75, 66, true);
  fill_terrain (&ctl, &rng);
  fill_terrain (&tpl, &rng);
  for (int y = 20; y < 60; y++)         /* uniform patches so merging triggers */
    for (int x = 0; x < 70; x++)
      tpl.pix[y * tpl.stride + x] = 12;
  for (int y = 40; y < 120; y++)
    for (int x = 50; x < 160; x++)
      ctl.pix[y * ctl.stride + x] = 140;
  fill_mask (&ctl, 'b', 75, &rng);
  fill_mask (&tpl, 'b', 80, &rng);
  img_alloc (&big, 300, 260, false);    /* a wrapping bin under merging */
  memset (big.pix, 200, (size_t) big.stride * 260);
  for (int i = 0; i < 3000; i++)
    big.pix[(ref_rand (&rng) % 260) * big.stride + ref_rand (&rng) % 300] = ref_rand (&rng);
  Img bctl;
  img_alloc (&bctl, 305, 262, false);
  memset (bctl.pix, 7, (size_t) bctl.stride * 262);
  for (int i = 0; i < 3000; i++)
    bctl.pix[(ref_rand (&rng) % 262) * bctl.stride + ref_rand (&rng) % 305] = ref_rand (&rng);

  const char *old = getenv ("GEOREG_NMI_CUDA_VARIANT");
  char *saved = old ? strdup (old) : NULL;
  for (int v = 0; v < 4; v++) {
    char val[8], name[64];
    snprintf (val, sizeof val, "%d", v);
    setenv ("GEOREG_NMI_CUDA_VARIANT", val, 1);
    snprintf (name, sizeof name, "variant %d (merge %d, lane table %d)", v, v & 1, v >> 1);
    compare (name, &ctl.im, &tpl.im, full_region (&ctl.im, &tpl.im), 1, 7);
    snprintf (name, sizeof name, "variant %d, wrapping bin", v);
    compare (name, &bctl.im, &big.im, full_region (&bctl.im, &big.im), 1, 1);
  }
  if (saved) {
    setenv ("GEOREG_NMI_CUDA_VARIANT", saved, 1);
    free (saved);
  } else {
    unsetenv ("GEOREG_NMI_CUDA_VARIANT");
  }
  img_free (&ctl);
  img_free (&tpl);
  img_free (&big);
  img_free (&bctl);
}

/* one engine, many runs: buffers grow and shrink, the control is replaced */
static void
test_engine_reuse (void)
{
  uint64_t rng = 2024;
  GrStatus st;
  char err[512] = "";
  GrNmiDense *g = gr_nmi_dense_new (GR_BACKEND_CUDA, -1, &st, err, sizeof err);
  GrNmiDense *c = gr_nmi_dense_new (GR_BACKEND_CPU, -1, &st, NULL, 0);
  CHECK (g && c, "engines: %s", err);
  if (!g || !c)
    return;
  const int sizes[][4] = { { 90, 70, 20, 15 }, { 200, 120, 64, 48 }, { 60, 40, 9, 7 },
      { 150, 150, 100, 90 }, { 90, 70, 20, 15 } };
  for (int k = 0; k < 5; k++) {
    Img ctl, tpl;
    img_alloc (&ctl, sizes[k][0], sizes[k][1], k & 1);
    img_alloc (&tpl, sizes[k][2], sizes[k][3], k >= 2);
    fill_terrain (&ctl, &rng);
    fill_random (&tpl, 64, &rng);
    if (ctl.mask)
      fill_mask (&ctl, 'r', 70, &rng);
    if (tpl.mask)
      fill_mask (&tpl, 'b', 60, &rng);
    CHECK (gr_nmi_dense_set_control (g, &ctl.im, err, sizeof err) == GR_OK, "%s", err);
    CHECK (gr_nmi_dense_set_control (c, &ctl.im, err, sizeof err) == GR_OK, "%s", err);
    for (int rep = 0; rep < 2; rep++) {
      GrRegion r = full_region (&ctl.im, &tpl.im);
      if (rep == 1) {                    /* a smaller sub-region, second run */
        r.x0 = r.x1 / 3;
        r.y1 = r.y1 / 2 + 1;
      }
      const long n = (long) (r.x1 - r.x0) * (r.y1 - r.y0);
      double *sg = malloc (sizeof (double) * n), *sc = malloc (sizeof (double) * n);
      int32_t *vg = malloc (sizeof (int32_t) * n), *vc = malloc (sizeof (int32_t) * n);
      poison (sg, vg, n);
      poison (sc, vc, n);
      CHECK (gr_nmi_dense_run (g, &tpl.im, r, 5, sg, vg, err, sizeof err) == GR_OK, "%s", err);
      CHECK (gr_nmi_dense_run (c, &tpl.im, r, 5, sc, vc, err, sizeof err) == GR_OK, "%s", err);
      double worst = 0;
      for (long i = 0; i < n; i++) {
        const double e = ref_rel_diff (sg[i], sc[i]);
        worst = e > worst ? e : worst;
        if (e > TOL || vg[i] != vc[i]) {
          CHECK (0, "reuse %d/%d at %ld: %.17g vs %.17g, %d vs %d", k, rep, i, sg[i], sc[i],
              vg[i], vc[i]);
          break;
        }
      }
      printf ("engine reuse %d.%d %dx%d in %dx%d: cuda-cpu %.2e\n", k, rep, tpl.im.width,
          tpl.im.height, ctl.im.width, ctl.im.height, worst);
      free (sg);
      free (sc);
      free (vg);
      free (vc);
    }
    img_free (&ctl);
    img_free (&tpl);
  }
  gr_nmi_dense_free (g);
  gr_nmi_dense_free (c);
}

static void
test_errors (void)
{
  GrStatus st = GR_OK;
  char err[512] = "";
  GrNmiDense *nmi = gr_nmi_dense_new (GR_BACKEND_CUDA, 4096, &st, err, sizeof err);
  CHECK (nmi == NULL && st == GR_ERR_CUDA && err[0], "device 4096: status %d \"%s\"", st, err);
  printf ("device 4096: \"%s\"\n", err);
  gr_nmi_dense_free (nmi);
  nmi = gr_nmi_dense_new (GR_BACKEND_CUDA, -1, &st, err, sizeof err);
  CHECK (nmi != NULL, "%s", err);
  if (nmi) {
    uint8_t t[16] = { 0 };
    GrImage8 ti = { t, 4, NULL, 0, 4, 4 };
    double s[1];
    CHECK (gr_nmi_dense_run (nmi, &ti, (GrRegion) { 0, 0, 1, 1 }, 1, s, NULL, err,
            sizeof err) == GR_ERR_INVALID, "run before set_control");
    gr_nmi_dense_free (nmi);
  }
}

/* the real orthomosaic: a crop with another tone curve and noise, found again */
static void
test_aukerman (void)
{
  const char *dir = getenv ("GEOREG_DATA");
  if (!dir || !*dir) {
    printf ("SKIP real-image check: GEOREG_DATA is not set\n");
    return;
  }
  char path[4096];
  snprintf (path, sizeof path, "%s/aukerman.png", dir);
  GrRaster ras;
  char err[512] = "";
  GrStatus st = gr_raster_load (path, 0, &ras, err, sizeof err);
  if (st != GR_OK) {
    CHECK (0, "GEOREG_DATA is set but %s does not load: %s", path, err);
    return;
  }
  const int cw = ras.plane.width, ch = ras.plane.height;
  Img ctl;
  img_alloc (&ctl, cw, ch, ras.plane.mask != NULL);
  for (int y = 0; y < ch; y++)
    for (int x = 0; x < cw; x++) {
      float v = ras.plane.data[y * ras.plane.stride + x];
      v = v < 0 ? 0 : v > 255 ? 255 : v;
      ctl.pix[y * ctl.stride + x] = (uint8_t) lrintf (v);
      if (ctl.mask)
        ctl.mask[y * ctl.stride + x] = ras.plane.mask[(size_t) y * cw + x] ? 1 : 0;
    }
  gr_raster_clear (&ras);
  /* template: 256x192 cut at (431, 287), gamma 0.7 and noise; a blotchy mask */
  const int tx = 431, ty = 287, tw = 256, th = 192;
  uint64_t rng = 8;
  Img tpl;
  img_alloc (&tpl, tw, th, true);
  for (int y = 0; y < th; y++)
    for (int x = 0; x < tw; x++) {
      const double v = ctl.pix[(ty + y) * ctl.stride + tx + x] / 255.0;
      int o = (int) lrint (255.0 * pow (v, 0.7)) + (int) (ref_rand (&rng) % 9) - 4;
      tpl.pix[y * tpl.stride + x] = (uint8_t) (o < 0 ? 0 : o > 255 ? 255 : o);
    }
  fill_mask (&tpl, 'b', 85, &rng);
  GrRegion r = { tx - 40, ty - 30, tx + 41, ty + 31 };
  compare ("aukerman crop 256x192", &ctl.im, &tpl.im, r, 1, 5);
  const long n = (long) (r.x1 - r.x0) * (r.y1 - r.y0);
  double *s = malloc (sizeof (double) * n);
  if (run_backend (GR_BACKEND_CUDA, &ctl.im, &tpl.im, r, 1, s, NULL)) {
    const int a = argmax (s, n);
    CHECK (a >= 0 && r.x0 + a % (r.x1 - r.x0) == tx && r.y0 + a / (r.x1 - r.x0) == ty,
        "aukerman: argmax at (%d,%d), the crop came from (%d,%d)",
        a >= 0 ? r.x0 + a % (r.x1 - r.x0) : -1, a >= 0 ? r.y0 + a / (r.x1 - r.x0) : -1, tx, ty);
  }
  free (s);
  if (quick) {
    img_free (&tpl);
    img_free (&ctl);
    return;
  }
  /* a bigger one over a wide region, the reference on a sample */
  Img tpl2;
  img_alloc (&tpl2, 512, 256, false);
  for (int y = 0; y < 256; y++)
    for (int x = 0; x < 512; x++)
      tpl2.pix[y * tpl2.stride + x] = 255 - ctl.pix[(300 + y) * ctl.stride + 250 + x];
  GrRegion r2 = { 200, 260, 200 + 120, 260 + 90 };
  compare ("aukerman 512x256 inverted", &ctl.im, &tpl2.im, r2, 1, 97);
  img_free (&tpl);
  img_free (&tpl2);
  img_free (&ctl);
}

/* GEOREG_TEST_SUBSET=quick: everything but the two largest cases (for
 * compute-sanitizer memcheck); =race: two small cases, one with wrapping bins (for
 * racecheck, which is slow on shared-memory atomics). */
static void
test_race_subset (void)
{
  uint64_t rng = 606;
  Img ctl, tpl;
  img_alloc (&ctl, 45, 33, true);
  img_alloc (&tpl, 21, 17, true);
  fill_random (&ctl, 8, &rng);
  fill_random (&tpl, 8, &rng);
  fill_mask (&ctl, 'b', 70, &rng);
  fill_mask (&tpl, 'r', 80, &rng);
  compare ("race: small masked", &ctl.im, &tpl.im, (GrRegion) { 3, 2, 9, 6 }, 1, 1);
  img_free (&ctl);
  img_free (&tpl);
  img_alloc (&ctl, 262, 260, false);
  img_alloc (&tpl, 260, 258, false);
  memset (ctl.pix, 90, (size_t) ctl.stride * 260);
  for (int y = 0; y < 258; y++)
    for (int x = 0; x < 260; x++)
      tpl.pix[y * tpl.stride + x] = x < 130 ? 3 : 131;
  for (int i = 0; i < 300; i++)
    tpl.pix[(ref_rand (&rng) % 258) * tpl.stride + ref_rand (&rng) % 260] = ref_rand (&rng);
  compare ("race: wrapping bins", &ctl.im, &tpl.im, (GrRegion) { 0, 0, 2, 1 }, 1, 1);
  img_free (&ctl);
  img_free (&tpl);
}

int
main (void)
{
  const int ndev = gr_cuda_device_count ();
  if (ndev <= 0) {
    printf ("SKIP: no usable CUDA device (%s)\n", gr_cuda_compiled ()
        ? "no GPU or no driver" : "this build has no CUDA kernels");
    return 77;
  }
  printf ("%d CUDA device(s); tolerance %.0e relative\n", ndev, TOL);
  const char *subset = getenv ("GEOREG_TEST_SUBSET");
  subset = subset ? subset : "";
  quick = strcmp (subset, "quick") == 0;
  if (strcmp (subset, "race") == 0) {
    test_race_subset ();
    return CHECK_DONE ();
  }
  test_errors ();
  test_random ();
  test_min_valid ();
  test_uniform ();
  test_big_bins ();
  if (!quick)
    test_large_template ();
  test_variants ();
  test_engine_reuse ();
  test_aukerman ();
  return CHECK_DONE ();
}
