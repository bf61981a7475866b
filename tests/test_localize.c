/* Coarse localization on synthesized frames: the overlap-aware dense NMI score at the
 * control's edges and beside its no-data.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "nmi_dense.h"
#include "peak.h"
#include "synth.h"
#include "test_check.h"

static void
make_control (GrSynthImage *img, int w, int h, uint64_t seed, double border)
{
  GrSynthControlParams p;
  gr_synth_control_params_init (&p);
  p.width = w;
  p.height = h;
  p.seed = seed;
  p.depth = 8;
  p.nodata_border = border;
  char e[256] = "";
  if (gr_synth_control_generate (&p, img, e, sizeof e) != GR_OK) {
    fprintf (stderr, "control generation failed: %s\n", e);
    exit (1);
  }
}

/* Frames cut beside the control's no-data rim and at its edges (another band, a tone
 * curve, noise): how many does the dense search put at the truth, by plain NMI and by
 * the default overlap-weighted score? */
static void
test_overlap_bias (void)
{
  enum { CW = 256, CH = 192, W = 64, H = 48, FRAMES = 10 };
  GrSynthImage img;
  make_control (&img, CW, CH, 77, 0.22);
  GrPlaneF red = gr_synth_image_plane (&img, 0), green = gr_synth_image_plane (&img, 1);
  uint8_t *cb = malloc (CW * CH), *fb = malloc (W * H);
  gr_plane_to_bins (&red, GR_BINS_IDENTITY, 0, 0, cb);
  GrImage8 ci = { cb, CW, img.mask, CW, CW, CH };
  GrStatus st;
  char e[256];
  GrNmiDense *nmi = gr_nmi_dense_new (GR_BACKEND_CPU, -1, &st, e, sizeof e);
  CHECK (nmi && gr_nmi_dense_set_control (nmi, &ci, e, sizeof e) == GR_OK, "%s", e);
  const GrRegion reg = { 0, 0, CW - W + 1, CH - H + 1 };
  const int mw = reg.x1, mh = reg.y1;
  double *scores = malloc (sizeof (double) * mw * mh);
  int right[2] = { 0, 0 }, tried = 0;
  GrSynthRng rng;
  gr_synth_rng_init (&rng, 5);
  for (int k = 0; k < 400 && tried < FRAMES; k++) {
    /* a place whose frame is 45-90% on valid control */
    const int X = (int) gr_synth_rng_range (&rng, 0, mw), Y = (int) gr_synth_rng_range (&rng, 0, mh);
    long v = 0;
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++)
        v += img.mask[(Y + y) * CW + X + x] != 0;
    const double frac = (double) v / (W * H);
    if (frac < 0.45 || frac > 0.9)
      continue;
    tried++;
    double h[9];
    gr_synth_translation_homography (X, Y, h);
    GrPlaneF f;
    gr_synth_cut (&green, h, W, H, 1, &f);
    GrSynthTone t;
    gr_synth_tone_init (&t, GR_SYNTH_TONE_SCURVE, k);
    gr_synth_tone_apply (&t, &f, 255.0);
    gr_synth_add_noise (&f, 4.0, 255.0, k);
    gr_plane_to_bins (&f, GR_BINS_IDENTITY, 0, 0, fb);
    GrImage8 ti = { fb, W, f.mask, W, W, H };
    for (int mode = 0; mode < 2; mode++) {
      gr_nmi_dense_set_score (nmi, mode ? GR_NMI_SCORE_PLAIN : GR_NMI_SCORE_OVERLAP_WEIGHTED);
      CHECK (gr_nmi_dense_run (nmi, &ti, reg, (int) (0.1 * v), scores, NULL, e, sizeof e)
          == GR_OK, "run: %s", e);
      GrPeak pk;
      gr_find_peak (scores, mw, mh, 5, 1.0, &pk);
      const bool ok = abs (pk.ix - X) <= 1 && abs (pk.iy - Y) <= 1;
      right[mode] += ok;
      if (getenv ("GEOREG_TEST_VERBOSE"))
        printf ("  frame at (%d,%d) %.0f%% valid: %s peak (%d,%d) %s\n", X, Y, 100 * frac,
            mode ? "plain" : "weighted", pk.ix, pk.iy, ok ? "ok" : "WRONG");
    }
    gr_synth_plane_free (&f);
  }
  printf ("frames beside no-data: overlap-weighted %d/%d at the truth, plain NMI %d/%d\n",
      right[0], tried, right[1], tried);
  CHECK (tried == FRAMES, "found %d places", tried);
  CHECK (right[0] >= FRAMES - 1, "overlap-weighted: %d/%d", right[0], tried);
  /* the bias this guards against: plain NMI prefers overhanging places */
  CHECK (right[1] <= FRAMES / 2, "plain NMI found %d/%d: the test lost its edge", right[1],
      tried);
  free (scores);
  free (cb);
  free (fb);
  gr_nmi_dense_free (nmi);
  gr_synth_image_free (&img);
}

int
main (void)
{
  test_overlap_bias ();
  return CHECK_DONE ();
}
