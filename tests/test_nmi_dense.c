/* Dense NMI, CPU backend: against the float64 reference, on random and planted
 * images, with masks; argument checking; backend selection without a GPU; batches
 * against single runs (CUDA's too where there is a device).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nmi_dense.h"
#include "nmi_reference.h"

#include "test_check.h"

typedef struct {
  uint8_t *pix, *mask;
  GrImage8 im;
} OwnedImage;

/* levels < 256 gives repeated pairs (a realistic, non-uniform joint histogram);
 * valid_pct = 100 gives no mask. */
static void
make_image (OwnedImage *o, int w, int h, int levels, int valid_pct, uint64_t *rng)
{
  const int stride = w + 3;            /* a stride wider than the row */
  o->pix = malloc ((size_t) stride * h);
  o->mask = valid_pct < 100 ? malloc ((size_t) stride * h) : NULL;
  for (int i = 0; i < stride * h; i++) {
    o->pix[i] = (uint8_t) (ref_rand (rng) % levels);
    if (o->mask)
      o->mask[i] = (int) (ref_rand (rng) % 100) < valid_pct ? 255 : 0;
  }
  o->im = (GrImage8) { o->pix, (size_t) stride, o->mask, (size_t) stride, w, h };
}

static void
free_image (OwnedImage *o)
{
  free (o->pix);
  free (o->mask);
}

/* Scores every translation of a region with the CPU backend and compares with the
 * float64 reference (plain, or weighted by the overlap fraction as nmi_dense.h
 * documents it, computed here from the reference's own count); returns the max
 * relative error. */
static double
compare_with_reference (const GrImage8 *ctl, const GrImage8 *tpl, GrRegion r,
    int min_valid, int threads, GrNmiScore mode)
{
  GrStatus st;
  char err[256];
  GrNmiDense *nmi = gr_nmi_dense_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
  CHECK (nmi && st == GR_OK, "new: %s", err);
  gr_nmi_dense_set_threads (nmi, threads);
  gr_nmi_dense_set_score (nmi, mode);
  long tvalid = 0;
  for (int y = 0; y < tpl->height; y++)
    for (int x = 0; x < tpl->width; x++)
      tvalid += !tpl->mask || tpl->mask[y * tpl->mask_stride + x] != 0;
  CHECK (gr_nmi_dense_set_control (nmi, ctl, err, sizeof err) == GR_OK, "%s", err);
  const int rw = r.x1 - r.x0, rh = r.y1 - r.y0;
  double *scores = malloc (sizeof (double) * rw * rh);
  int32_t *valid = malloc (sizeof (int32_t) * rw * rh);
  for (int i = 0; i < rw * rh; i++) {   /* poison: untouched outputs must fail */
    scores[i] = -12345.0;
    valid[i] = -7;
  }
  st = gr_nmi_dense_run (nmi, tpl, r, min_valid, scores, valid, err, sizeof err);
  CHECK (st == GR_OK, "run: %s", err);
  double worst = 0.0;
  for (int y = 0; y < rh; y++)
    for (int x = 0; x < rw; x++) {
      long n;
      double ref = ref_nmi_at (ctl, tpl, r.x0 + x, r.y0 + y, &n);
      if (n < min_valid)
        ref = NAN;
      if (mode == GR_NMI_SCORE_OVERLAP_WEIGHTED && !isnan (ref))
        ref = 1.0 + (ref - 1.0) * ((double) n / (double) tvalid);
      const double got = scores[y * rw + x];
      const double e = ref_rel_diff (got, ref);
      CHECK (e <= 1e-9, "(%d,%d): got %.17g want %.17g", r.x0 + x, r.y0 + y, got, ref);
      CHECK (valid[y * rw + x] == n, "(%d,%d): valid %d want %ld", r.x0 + x, r.y0 + y,
          valid[y * rw + x], n);
      if (e > worst)
        worst = e;
    }
  free (scores);
  free (valid);
  gr_nmi_dense_free (nmi);
  return worst;
}

static void
test_random_against_reference (void)
{
  uint64_t rng = 0x9e3779b97f4a7c15ULL;
  const struct { int cw, ch, tw, th, levels, cvalid, tvalid, threads; } cases[] = {
    { 40, 31, 13, 9, 256, 100, 100, 1 },
    { 40, 31, 13, 9, 7, 100, 100, 2 },
    { 53, 29, 17, 11, 32, 60, 100, 2 },
    { 37, 41, 10, 12, 64, 100, 50, 0 },
    { 45, 38, 21, 14, 200, 55, 45, 2 },
    { 20, 20, 20, 20, 256, 80, 80, 1 },   /* template as large as the control: 1 position */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    OwnedImage ctl, tpl;
    make_image (&ctl, cases[c].cw, cases[c].ch, cases[c].levels, cases[c].cvalid, &rng);
    make_image (&tpl, cases[c].tw, cases[c].th, cases[c].levels, cases[c].tvalid, &rng);
    GrRegion r = { 0, 0, cases[c].cw - cases[c].tw + 1, cases[c].ch - cases[c].th + 1 };
    double e = compare_with_reference (&ctl.im, &tpl.im, r, 1, cases[c].threads,
        GR_NMI_SCORE_PLAIN);
    const double ew = compare_with_reference (&ctl.im, &tpl.im, r, 1, cases[c].threads,
        GR_NMI_SCORE_OVERLAP_WEIGHTED);
    e = e > ew ? e : ew;
    printf ("case %zu: %dx%d in %dx%d, %d levels, valid %d%%/%d%%: max rel err %.3g\n",
        c, cases[c].tw, cases[c].th, cases[c].cw, cases[c].ch, cases[c].levels,
        cases[c].tvalid, cases[c].cvalid, e);
    /* a sub-region and a min_valid that leaves some translations unscored */
    if (cases[c].cw - cases[c].tw > 4 && cases[c].ch - cases[c].th > 4) {
      GrRegion sub = { 2, 1, r.x1 - 1, r.y1 - 2 };
      const int mv = (int) (0.35 * cases[c].tw * cases[c].th);
      compare_with_reference (&ctl.im, &tpl.im, sub, mv, 2, GR_NMI_SCORE_PLAIN);
      compare_with_reference (&ctl.im, &tpl.im, sub, mv, 2, GR_NMI_SCORE_OVERLAP_WEIGHTED);
    }
    free_image (&ctl);
    free_image (&tpl);
  }
}

static void
test_planted_template_is_found (void)
{
  uint64_t rng = 42;
  OwnedImage ctl, tpl;
  make_image (&ctl, 90, 70, 256, 100, &rng);
  make_image (&tpl, 24, 18, 256, 100, &rng);
  /* cut the template out of the control at (51, 33) and invert it: a different
   * "modality", same information */
  for (int y = 0; y < 18; y++)
    for (int x = 0; x < 24; x++)
      tpl.pix[y * tpl.im.pix_stride + x] = 255 - ctl.pix[(33 + y) * ctl.im.pix_stride + 51 + x];
  GrStatus st;
  GrNmiDense *nmi = gr_nmi_dense_new (GR_BACKEND_CPU, -1, &st, NULL, 0);
  gr_nmi_dense_set_control (nmi, &ctl.im, NULL, 0);
  GrRegion r = { 0, 0, 90 - 24 + 1, 70 - 18 + 1 };
  double *s = malloc (sizeof (double) * (r.x1 * r.y1));
  CHECK (gr_nmi_dense_run (nmi, &tpl.im, r, 1, s, NULL, NULL, 0) == GR_OK, "run");
  int best = 0;
  for (int i = 1; i < r.x1 * r.y1; i++)
    if (s[i] > s[best])
      best = i;
  CHECK (best % r.x1 == 51 && best / r.x1 == 33, "argmax at (%d,%d), want (51,33)",
      best % r.x1, best / r.x1);
  CHECK (fabs (s[best] - 2.0) < 1e-12, "a bijective relation gives NMI 2, got %.17g", s[best]);
  free (s);
  gr_nmi_dense_free (nmi);
  free_image (&ctl);
  free_image (&tpl);
}

static void
test_degenerate_images (void)
{
  /* constant template and constant control: H(A,B) = 0, defined as 1 */
  uint8_t c[16 * 16], t[4 * 4];
  memset (c, 9, sizeof c);
  memset (t, 200, sizeof t);
  GrImage8 ci = { c, 16, NULL, 0, 16, 16 }, ti = { t, 4, NULL, 0, 4, 4 };
  GrStatus st;
  GrNmiDense *nmi = gr_nmi_dense_new (GR_BACKEND_CPU, -1, &st, NULL, 0);
  gr_nmi_dense_set_control (nmi, &ci, NULL, 0);
  double s[13 * 13];
  CHECK (gr_nmi_dense_run (nmi, &ti, (GrRegion) { 0, 0, 13, 13 }, 1, s, NULL, NULL, 0)
      == GR_OK, "run");
  for (int i = 0; i < 13 * 13; i++)
    CHECK (s[i] == 1.0, "constant images: %g", s[i]);

  /* an all-invalid template: every translation unscored, counts 0 */
  uint8_t tm[16] = { 0 };
  GrImage8 tmi = { t, 4, tm, 4, 4, 4 };
  int32_t v[13 * 13];
  CHECK (gr_nmi_dense_run (nmi, &tmi, (GrRegion) { 0, 0, 13, 13 }, 1, s, v, NULL, 0)
      == GR_OK, "run");
  for (int i = 0; i < 13 * 13; i++)
    CHECK (isnan (s[i]) && v[i] == 0, "all-masked template: %g %d", s[i], v[i]);

  /* regions that do not fit, bad images */
  char err[256] = "";
  CHECK (gr_nmi_dense_run (nmi, &ti, (GrRegion) { 0, 0, 14, 13 }, 1, s, NULL, err,
          sizeof err) == GR_ERR_INVALID && strstr (err, "does not fit"), "region: %s", err);
  CHECK (gr_nmi_dense_run (nmi, &ti, (GrRegion) { 5, 0, 5, 13 }, 1, s, NULL, NULL, 0)
      == GR_ERR_INVALID, "empty region");
  CHECK (gr_nmi_dense_run (nmi, &ti, (GrRegion) { -1, 0, 3, 3 }, 1, s, NULL, NULL, 0)
      == GR_ERR_INVALID, "negative region");
  GrImage8 bad = { t, 2, NULL, 0, 4, 4 };   /* stride smaller than width */
  CHECK (gr_nmi_dense_run (nmi, &bad, (GrRegion) { 0, 0, 1, 1 }, 1, s, NULL, NULL, 0)
      == GR_ERR_INVALID, "bad stride");
  gr_nmi_dense_free (nmi);

  nmi = gr_nmi_dense_new (GR_BACKEND_CPU, -1, &st, NULL, 0);
  CHECK (gr_nmi_dense_run (nmi, &ti, (GrRegion) { 0, 0, 1, 1 }, 1, s, NULL, err,
          sizeof err) == GR_ERR_INVALID, "no control set: %s", err);
  gr_nmi_dense_free (nmi);
}

static void
test_backend_selection (void)
{
  GrStatus st;
  char err[256] = "";
  GrNmiDense *nmi = gr_nmi_dense_new (GR_BACKEND_AUTO, -1, &st, err, sizeof err);
  CHECK (nmi != NULL, "auto must always give an engine: %s", err);
  if (gr_cuda_device_count () == 0) {
    CHECK (gr_nmi_dense_backend (nmi) == GR_BACKEND_CPU, "auto without a GPU is cpu");
    GrNmiDense *c = gr_nmi_dense_new (GR_BACKEND_CUDA, -1, &st, err, sizeof err);
    CHECK (c == NULL && st == GR_ERR_NO_CUDA && err[0], "cuda without a GPU: %s", err);
    printf ("backend=cuda without a device: \"%s\"\n", err);
  } else {
    CHECK (gr_nmi_dense_backend (nmi) == GR_BACKEND_CUDA, "auto with a GPU is cuda");
  }
  gr_nmi_dense_free (nmi);
}

/* gr_nmi_dense_run_batch gives every job exactly what gr_nmi_dense_run gives it: jobs
 * of different template sizes (one past 65,535 pixels, whose counters can wrap: another
 * shared-memory layout on CUDA), masked and not, with and without counts, windows and
 * whole regions, in one batch; then a single run on the same engine after it, a batch
 * with a bad job (refused whole, nothing written) and an empty batch.  On the CPU, and
 * on CUDA where there is a device. */
static void
test_batch_matches_runs (GrBackend be)
{
  GrStatus st;
  char err[256] = "";
  GrNmiDense *nmi = gr_nmi_dense_new (be, -1, &st, err, sizeof err);
  CHECK (nmi != NULL, "%s engine: %s", gr_backend_name (be), err);
  if (!nmi)
    return;
  uint64_t rng = 77;
  OwnedImage ctl;
  make_image (&ctl, 330, 290, 40, 85, &rng);
  CHECK (gr_nmi_dense_set_control (nmi, &ctl.im, err, sizeof err) == GR_OK, "%s", err);
  enum { NJ = 9 };
  const int size[NJ][2] = { { 12, 9 }, { 48, 27 }, { 48, 27 }, { 300, 260 }, { 5, 31 },
    { 64, 48 }, { 17, 17 }, { 130, 90 }, { 48, 27 } };
  OwnedImage tpl[NJ];
  GrNmiDenseJob job[NJ];
  double *one[NJ];
  int32_t *one_valid[NJ];
  for (int k = 0; k < NJ; k++) {
    const int w = size[k][0], h = size[k][1];
    make_image (&tpl[k], w, h, k == 3 ? 3 : 24, k % 3 == 0 ? 100 : 70, &rng);
    GrRegion r = { 0, 0, ctl.im.width - w + 1, ctl.im.height - h + 1 };
    if (k % 2 == 1) {           /* a window of a few translations */
      r.x0 = (int) (ref_rand (&rng) % (r.x1 - 8));
      r.y0 = (int) (ref_rand (&rng) % (r.y1 - 6));
      r.x1 = r.x0 + 1 + (int) (ref_rand (&rng) % 8);
      r.y1 = r.y0 + 1 + (int) (ref_rand (&rng) % 6);
    }
    const long n = (long) (r.x1 - r.x0) * (r.y1 - r.y0);
    job[k] = (GrNmiDenseJob) { &tpl[k].im, r, 1 + k * 7, malloc (sizeof (double) * n),
      k == 4 ? NULL : malloc (sizeof (int32_t) * n) };
    one[k] = malloc (sizeof (double) * n);
    one_valid[k] = malloc (sizeof (int32_t) * n);
    CHECK (gr_nmi_dense_run (nmi, job[k].templ, r, job[k].min_valid, one[k], one_valid[k],
            err, sizeof err) == GR_OK, "single %d: %s", k, err);
  }
  CHECK (gr_nmi_dense_run_batch (nmi, job, NJ, err, sizeof err) == GR_OK, "batch: %s", err);
  for (int k = 0; k < NJ; k++) {
    const long n = (long) (job[k].region.x1 - job[k].region.x0) *
        (job[k].region.y1 - job[k].region.y0);
    long bad = 0;
    for (long i = 0; i < n; i++)
      bad += memcmp (&job[k].scores[i], &one[k][i], sizeof (double)) != 0 ||
          (job[k].valid && job[k].valid[i] != one_valid[k][i]);
    CHECK (bad == 0, "%s batch job %d (%dx%d, %ld translations): %ld differ from its own run",
        gr_backend_name (be), k, size[k][0], size[k][1], n, bad);
  }
  /* the engine after a batch: a single run as before */
  double again[4];
  CHECK (gr_nmi_dense_run (nmi, job[0].templ, (GrRegion) { 0, 0, 2, 2 }, 1, again, NULL,
          err, sizeof err) == GR_OK, "after the batch: %s", err);
  for (int i = 0; i < 4; i++) {
    const int w0 = job[0].region.x1 - job[0].region.x0;
    CHECK (memcmp (&again[i], &one[0][(i / 2) * w0 + i % 2], sizeof (double)) == 0,
        "run after the batch, translation %d: %.17g vs %.17g", i, again[i],
        one[0][(i / 2) * w0 + i % 2]);
  }
  /* one bad job refuses the batch before anything is written */
  GrNmiDenseJob bad[2] = { job[1], job[2] };
  bad[1].region.x1 = ctl.im.width;       /* the template no longer fits */
  const double mark = -4242.0;
  bad[0].scores[0] = mark;
  CHECK (gr_nmi_dense_run_batch (nmi, bad, 2, err, sizeof err) == GR_ERR_INVALID &&
      strstr (err, "does not fit") && bad[0].scores[0] == mark, "bad batch: %s", err);
  CHECK (gr_nmi_dense_run_batch (nmi, job, 0, err, sizeof err) == GR_OK, "empty batch");
  CHECK (gr_nmi_dense_run_batch (nmi, NULL, 1, err, sizeof err) == GR_ERR_INVALID,
      "no jobs");
  for (int k = 0; k < NJ; k++) {
    free (job[k].scores);
    free (job[k].valid);
    free (one[k]);
    free (one_valid[k]);
    free_image (&tpl[k]);
  }
  free_image (&ctl);
  gr_nmi_dense_free (nmi);
}

int
main (void)
{
  test_random_against_reference ();
  test_planted_template_is_found ();
  test_degenerate_images ();
  test_backend_selection ();
  test_batch_matches_runs (GR_BACKEND_CPU);
  if (gr_cuda_device_count () > 0)
    test_batch_matches_runs (GR_BACKEND_CUDA);
  return CHECK_DONE ();
}
