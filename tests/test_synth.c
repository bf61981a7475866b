/* The synthetic-data generator (pipelines/synth.c) and the georeg-synth tool: exact
 * crops under integer translations, the truth homography against bilinear sampling of
 * the control, masks where the footprint leaves the control or meets no-data, tone
 * curves, noise, band mixes, no-data borders, PNG / world file / CSV round trips, and
 * that NMI localization finds a modality-changed frame on a procedural control.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "synth.h"
#include "raster.h"
#include "nmi_dense.h"
#include "image.h"
#include "peak.h"
#include "test_check.h"

static char *tmpdir;

static char *
tpath (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

static void
make_control (GrSynthImage *img, int w, int h, uint64_t seed, int depth, double border)
{
  GrSynthControlParams p;
  gr_synth_control_params_init (&p);
  p.width = w;
  p.height = h;
  p.seed = seed;
  p.depth = depth;
  p.nodata_border = border;
  char e[256] = "";
  GrStatus st = gr_synth_control_generate (&p, img, e, sizeof e);
  if (st != GR_OK) {
    fprintf (stderr, "control generation failed: %s\n", e);
    exit (1);
  }
}

static double
plane_std (const float *v, size_t n)
{
  double s = 0, s2 = 0;
  for (size_t i = 0; i < n; i++) {
    s += v[i];
    s2 += (double) v[i] * v[i];
  }
  double m = s / n;
  return sqrt (fmax (0.0, s2 / n - m * m));
}

/* ---------------------------------------------------------------- control */

static void
test_control (void)
{
  GrSynthImage a, b, c;
  make_control (&a, 320, 240, 5, 8, 0.0);
  make_control (&b, 320, 240, 5, 8, 0.0);
  make_control (&c, 320, 240, 6, 8, 0.0);
  const size_t n = 320 * 240;
  CHECK (a.bands == 3 && a.depth == 8 && a.mask == NULL && a.has_geo, "control header");
  bool same = true, differ = false, range = true;
  for (int k = 0; k < 3; k++)
    for (size_t i = 0; i < n; i++) {
      same &= a.band[k][i] == b.band[k][i];
      differ |= a.band[k][i] != c.band[k][i];
      range &= a.band[k][i] >= 0 && a.band[k][i] <= 255 && a.band[k][i] == floorf (a.band[k][i]);
    }
  CHECK (same, "same seed must give the same control");
  CHECK (differ, "another seed must give another control");
  CHECK (range, "8-bit values must be integers in 0..255");
  CHECK (a.geo[0] == 431000.0 && a.geo[1] == 0.1 && a.geo[5] == -0.1, "default geo");

  /* structure at several scales: 8x8 block means vary (fields), and so does the
   * residual inside blocks (texture) */
  for (int k = 0; k < 3; k++) {
    float *coarse = malloc (sizeof (float) * (320 / 8) * (240 / 8));
    float *fine = malloc (sizeof (float) * n);
    for (int by = 0; by < 240 / 8; by++)
      for (int bx = 0; bx < 320 / 8; bx++) {
        double s = 0;
        for (int y = 0; y < 8; y++)
          for (int x = 0; x < 8; x++)
            s += a.band[k][(size_t) (by * 8 + y) * 320 + bx * 8 + x];
        coarse[by * 40 + bx] = (float) (s / 64);
        for (int y = 0; y < 8; y++)
          for (int x = 0; x < 8; x++) {
            size_t i = (size_t) (by * 8 + y) * 320 + bx * 8 + x;
            fine[i] = (float) (a.band[k][i] - s / 64);
          }
      }
    double sc = plane_std (coarse, 40 * 30), sf = plane_std (fine, n);
    CHECK (sc > 5.0, "band %d: coarse structure std %.2f too flat", k, sc);
    CHECK (sf > 3.0, "band %d: fine texture std %.2f too flat", k, sf);
    free (coarse);
    free (fine);
  }

  /* 16-bit with a no-data rim */
  GrSynthImage d;
  make_control (&d, 300, 200, 9, 16, 0.1);
  CHECK (d.depth == 16 && d.mask != NULL, "16-bit control with a mask");
  size_t invalid = 0;
  bool zero = true;
  float vmax = 0;
  for (size_t i = 0; i < 300 * 200; i++) {
    if (!d.mask[i]) {
      invalid++;
      zero &= d.band[0][i] == 0 && d.band[1][i] == 0 && d.band[2][i] == 0;
    } else if (d.band[1][i] > vmax)
      vmax = d.band[1][i];
  }
  CHECK (!d.mask[0] && !d.mask[299] && !d.mask[199 * 300] && !d.mask[199 * 300 + 299],
      "corners must be no-data");
  CHECK (d.mask[100 * 300 + 150], "centre must be valid");
  CHECK (invalid > 300 && invalid < 300 * 200 / 3, "no-data pixels: %zu", invalid);
  CHECK (zero, "no-data pixels must hold 0");
  CHECK (vmax > 4000 && vmax <= 65535, "16-bit range used: max %g", vmax);

  /* bad parameters */
  GrSynthControlParams p;
  gr_synth_control_params_init (&p);
  p.depth = 12;
  char e[256] = "";
  GrSynthImage bad;
  CHECK (gr_synth_control_generate (&p, &bad, e, sizeof e) == GR_ERR_INVALID && e[0],
      "depth 12 refused");
  gr_synth_control_params_init (&p);
  p.width = 0;
  CHECK (gr_synth_control_generate (&p, &bad, e, sizeof e) == GR_ERR_INVALID, "width 0");
  gr_synth_image_free (&a);
  gr_synth_image_free (&b);
  gr_synth_image_free (&c);
  gr_synth_image_free (&d);
}

/* ---------------------------------------------------------------- cutting */

static void
test_translation_exact (void)
{
  GrSynthImage img;
  make_control (&img, 256, 192, 11, 8, 0.0);
  GrPlaneF ctl = gr_synth_image_plane (&img, 1);
  const int W = 64, H = 48, X = 37, Y = 51;
  double h[9];
  gr_synth_translation_homography (X, Y, h);
  GrPlaneF f;
  CHECK (gr_synth_cut (&ctl, h, W, H, 1, &f) == GR_OK, "cut");
  bool exact = true, valid = true;
  for (int v = 0; v < H; v++)
    for (int u = 0; u < W; u++) {
      exact &= f.data[v * W + u] == ctl.data[(size_t) (Y + v) * 256 + X + u];
      valid &= f.mask[v * W + u] != 0;
    }
  CHECK (exact, "integer translation must copy the control crop exactly");
  CHECK (valid, "a crop inside the control is all valid");

  /* the same through a pose: centre at the crop's centre, no rotation, scale 1 */
  GrSynthPose pose = { X + (W - 1) / 2.0, Y + (H - 1) / 2.0, 0.0, 1.0, 0.0, 0.0 };
  double hp[9];
  gr_synth_pose_homography (&pose, W, H, hp);
  GrPlaneF g;
  CHECK (gr_synth_cut (&ctl, hp, W, H, 1, &g) == GR_OK, "cut by pose");
  CHECK (memcmp (f.data, g.data, sizeof (float) * W * H) == 0, "pose cut == crop");
  GrSynthTruth t;
  gr_synth_truth_from_pose (&t, 0, "f.png", &pose, W, H, img.geo);
  CHECK (t.x == X && t.y == Y, "truth top-left (%g, %g)", t.x, t.y);
  CHECK (t.centre_x == X + 31.5 && t.centre_y == Y + 23.5, "truth centre");
  /* map position of the centre: pixel-corner geo at centre + 0.5 */
  CHECK (fabs (t.map_x - (431000.0 + (X + 32.0) * 0.1)) < 1e-6
      && fabs (t.map_y - (4577000.0 - (Y + 24.0) * 0.1)) < 1e-6, "map (%f, %f)",
      t.map_x, t.map_y);
  gr_synth_plane_free (&f);
  gr_synth_plane_free (&g);
  gr_synth_image_free (&img);
}

static void
test_homography_truth (void)
{
  GrSynthImage img;
  make_control (&img, 400, 300, 12, 8, 0.0);
  GrPlaneF ctl = gr_synth_image_plane (&img, 0);
  const int W = 120, H = 90;
  const GrSynthPose poses[3] = {
    { 200.3, 140.7, 17.3, 1.37, 0.0, 0.0 },
    { 180.0, 150.0, -41.0, 0.62, 0.0, 0.0 },
    { 210.5, 160.25, 8.0, 1.1, 0.0012, -0.0009 },
  };
  for (int k = 0; k < 3; k++) {
    GrSynthTruth t;
    gr_synth_truth_from_pose (&t, k, "x.png", &poses[k], W, H, NULL);
    GrPlaneF f;
    CHECK (gr_synth_cut (&ctl, t.h, W, H, 1, &f) == GR_OK, "cut %d", k);
    int nvalid = 0, nbad = 0;
    for (int v = 0; v < H; v++)
      for (int u = 0; u < W; u++) {
        if (!f.mask[v * W + u])
          continue;
        nvalid++;
        double w = t.h[6] * u + t.h[7] * v + t.h[8];
        double x = (t.h[0] * u + t.h[1] * v + t.h[2]) / w;
        double y = (t.h[3] * u + t.h[4] * v + t.h[5]) / w;
        /* independent bilinear interpolation of the control */
        int x0 = (int) floor (x), y0 = (int) floor (y);
        double fx = x - x0, fy = y - y0;
        int x1 = x0 + 1 < 400 ? x0 + 1 : x0, y1 = y0 + 1 < 300 ? y0 + 1 : y0;
        double ref = (1 - fx) * (1 - fy) * ctl.data[y0 * 400 + x0]
            + fx * (1 - fy) * ctl.data[y0 * 400 + x1]
            + (1 - fx) * fy * ctl.data[y1 * 400 + x0] + fx * fy * ctl.data[y1 * 400 + x1];
        if (fabs (ref - f.data[v * W + u]) > 1e-3)
          nbad++;
      }
    CHECK (nvalid == W * H, "pose %d: footprint inside the control, %d of %d valid", k,
        nvalid, W * H);
    CHECK (nbad == 0, "pose %d: %d pixels differ from the control at H(u, v)", k, nbad);
    double x0, y0;
    gr_synth_homography_apply (t.h, 0, 0, &x0, &y0);
    CHECK (x0 == t.x && y0 == t.y, "pose %d: truth x, y = H(0, 0)", k);
    CHECK (fabs (t.centre_x - poses[k].centre_x) < 1e-9
        && fabs (t.centre_y - poses[k].centre_y) < 1e-9, "pose %d: centre", k);
    CHECK (t.h[8] == 1.0, "h22 normalised");
    if (poses[k].persp_x == 0) {
      double rot = atan2 (t.h[3], t.h[0]) * 180.0 / M_PI;
      double sc = hypot (t.h[0], t.h[3]);
      CHECK (fabs (rot - poses[k].rotation_deg) < 1e-9 && fabs (sc - poses[k].scale) < 1e-12,
          "pose %d: rotation %g scale %g from h", k, rot, sc);
      /* a frame step along +u moves by scale along the rotated axis */
      double x1, y1;
      gr_synth_homography_apply (t.h, 1, 0, &x1, &y1);
      CHECK (fabs (hypot (x1 - x0, y1 - y0) - poses[k].scale) < 1e-9, "pose %d: step", k);
    }
    gr_synth_plane_free (&f);
  }

  /* supersampling: the mean of n x n bilinear samples */
  GrSynthPose pz = { 200, 150, 30.0, 2.5, 0, 0 };
  double h[9];
  gr_synth_pose_homography (&pz, 40, 30, h);
  GrPlaneF f3;
  CHECK (gr_synth_cut (&ctl, h, 40, 30, 3, &f3) == GR_OK, "supersampled cut");
  double acc = 0;
  for (int sy = 0; sy < 3; sy++)
    for (int sx = 0; sx < 3; sx++) {
      double x, y;
      float val;
      gr_synth_homography_apply (h, 7 + (sx + 0.5) / 3 - 0.5, 5 + (sy + 0.5) / 3 - 0.5, &x, &y);
      gr_synth_sample_bilinear (&ctl, x, y, &val);
      acc += val;
    }
  CHECK (fabs (acc / 9 - f3.data[5 * 40 + 7]) < 1e-3 && f3.mask[5 * 40 + 7],
      "supersample mean %g vs %g", acc / 9, f3.data[5 * 40 + 7]);
  gr_synth_plane_free (&f3);
  gr_synth_image_free (&img);
}

static void
test_masks (void)
{
  GrSynthImage img;
  make_control (&img, 200, 150, 13, 8, 0.0);
  GrPlaneF ctl = gr_synth_image_plane (&img, 2);
  const int W = 64, H = 48;
  double h[9];
  GrPlaneF f;

  /* off the top-left: pixels with u < 20 or v < 10 fall outside */
  gr_synth_translation_homography (-20, -10, h);
  gr_synth_cut (&ctl, h, W, H, 1, &f);
  bool ok = true;
  for (int v = 0; v < H; v++)
    for (int u = 0; u < W; u++) {
      bool in = u >= 20 && v >= 10;
      ok &= (f.mask[v * W + u] != 0) == in;
      if (!in)
        ok &= f.data[v * W + u] == 0.0f;
    }
  CHECK (ok, "top-left overhang: mask wrong");
  gr_synth_plane_free (&f);

  /* off the bottom-right: x = 170 + u <= 199 -> u <= 29; y = 120 + v <= 149 -> v <= 29 */
  gr_synth_translation_homography (170, 120, h);
  gr_synth_cut (&ctl, h, W, H, 1, &f);
  ok = true;
  for (int v = 0; v < H; v++)
    for (int u = 0; u < W; u++)
      ok &= (f.mask[v * W + u] != 0) == (u <= 29 && v <= 29);
  CHECK (ok, "bottom-right overhang: mask wrong");
  gr_synth_plane_free (&f);

  /* half a pixel off the left edge: u = 0 at x = -0.5 is outside, u = 1 inside */
  gr_synth_translation_homography (-0.5, 3, h);
  gr_synth_cut (&ctl, h, W, H, 1, &f);
  CHECK (!f.mask[0] && f.mask[1] && !f.mask[W] && f.mask[W + 1], "half-pixel overhang");
  gr_synth_plane_free (&f);

  /* a rotated footprint partly outside: valid exactly where H(u, v) is in range */
  GrSynthPose pose = { 20, 20, 33.0, 1.0, 0, 0 };
  gr_synth_pose_homography (&pose, W, H, h);
  gr_synth_cut (&ctl, h, W, H, 1, &f);
  int nin = 0, nout = 0;
  ok = true;
  for (int v = 0; v < H; v++)
    for (int u = 0; u < W; u++) {
      double x, y;
      gr_synth_homography_apply (h, u, v, &x, &y);
      bool in = x >= 0 && y >= 0 && x <= 199 && y <= 149;
      /* within 1e-9 of the edge either answer is fine */
      bool edge = fabs (x) < 1e-6 || fabs (y) < 1e-6;
      if (!edge)
        ok &= (f.mask[v * W + u] != 0) == in;
      nin += in;
      nout += !in;
    }
  CHECK (ok && nin > 100 && nout > 100, "rotated overhang: mask wrong (%d in, %d out)",
      nin, nout);
  gr_synth_plane_free (&f);

  /* control no-data: a 10x10 hole at (60..69, 40..49) */
  uint8_t *m = malloc (200 * 150);
  memset (m, 1, 200 * 150);
  for (int y = 40; y < 50; y++)
    for (int x = 60; x < 70; x++)
      m[y * 200 + x] = 0;
  ctl.mask = m;
  gr_synth_translation_homography (50, 30, h);
  gr_synth_cut (&ctl, h, W, H, 1, &f);
  ok = true;
  for (int v = 0; v < H; v++)
    for (int u = 0; u < W; u++) {
      bool hole = u + 50 >= 60 && u + 50 < 70 && v + 30 >= 40 && v + 30 < 50;
      ok &= (f.mask[v * W + u] != 0) == !hole;
    }
  CHECK (ok, "integer cut over a no-data hole: exactly the hole is invalid");
  gr_synth_plane_free (&f);
  /* half a pixel to the right: also the pixel whose right neighbour is in the hole */
  gr_synth_translation_homography (49.5, 30, h);
  gr_synth_cut (&ctl, h, W, H, 1, &f);
  ok = true;
  for (int v = 0; v < H; v++)
    for (int u = 0; u < W; u++) {
      double x = u + 49.5;
      bool hole = x > 59 && x < 70 && v + 30 >= 40 && v + 30 < 50;
      ok &= (f.mask[v * W + u] != 0) == !hole;
    }
  CHECK (ok, "half-pixel cut over a no-data hole: the hole grows by the bilinear support");
  gr_synth_plane_free (&f);
  free (m);

  CHECK (gr_synth_cut (&ctl, h, 0, 10, 1, &f) == GR_ERR_INVALID, "zero width refused");
  CHECK (gr_synth_cut (NULL, h, 10, 10, 1, &f) == GR_ERR_INVALID, "NULL control refused");
  gr_synth_image_free (&img);
}

/* ---------------------------------------------------------------- modality */

static void
test_tone (void)
{
  const GrSynthToneKind kinds[4] = { GR_SYNTH_TONE_GAMMA, GR_SYNTH_TONE_SCURVE,
    GR_SYNTH_TONE_LUT, GR_SYNTH_TONE_INVERT };
  for (int k = 0; k < 4; k++)
    for (uint64_t seed = 1; seed <= 25; seed++) {
      GrSynthTone t;
      gr_synth_tone_init (&t, kinds[k], seed);
      bool inv = kinds[k] == GR_SYNTH_TONE_INVERT;
      double prev = gr_synth_tone_eval (&t, 0.0), maxdev = 0;
      bool mono = true, in01 = true;
      for (int i = 1; i <= 1000; i++) {
        double v = i / 1000.0, f = gr_synth_tone_eval (&t, v);
        mono &= inv ? f <= prev : f >= prev;
        in01 &= f >= 0 && f <= 1;
        maxdev = fmax (maxdev, fabs (f - (inv ? 1 - v : v)));
        prev = f;
      }
      double f0 = gr_synth_tone_eval (&t, 0), f1 = gr_synth_tone_eval (&t, 1);
      CHECK (mono, "%s seed %d: not monotone", gr_synth_tone_kind_name (kinds[k]), (int) seed);
      CHECK (in01, "%s seed %d: out of [0, 1]", gr_synth_tone_kind_name (kinds[k]), (int) seed);
      CHECK (fabs (f0 - (inv ? 1 : 0)) < 1e-12 && fabs (f1 - (inv ? 0 : 1)) < 1e-12,
          "%s seed %d: ends %g %g", gr_synth_tone_kind_name (kinds[k]), (int) seed, f0, f1);
      if (!inv)
        CHECK (maxdev > 0.02, "%s seed %d: indistinguishable from identity (%g)",
            gr_synth_tone_kind_name (kinds[k]), (int) seed, maxdev);
      if (kinds[k] == GR_SYNTH_TONE_LUT)
        for (int j = 0; j + 1 < GR_SYNTH_LUT_KNOTS; j++)
          CHECK (t.knots[j + 1] - t.knots[j] >= 0.025 - 1e-12, "LUT step %d: %g", j,
              t.knots[j + 1] - t.knots[j]);
    }
  /* applied to a plane on 0..65535: matches eval, invalid pixels untouched */
  GrSynthTone t;
  gr_synth_tone_init (&t, GR_SYNTH_TONE_SCURVE, 3);
  GrPlaneF p;
  gr_synth_plane_alloc (&p, 16, 4, true);
  for (int i = 0; i < 64; i++)
    p.data[i] = (float) (i * 1000);
  p.mask[5] = 0;
  gr_synth_tone_apply (&t, &p, 65535.0);
  CHECK (p.data[5] == 5000.0f, "masked pixel changed");
  CHECK (fabs (p.data[40] - gr_synth_tone_eval (&t, 40000.0 / 65535.0) * 65535.0) < 0.01,
      "tone on plane");
  gr_synth_plane_free (&p);
  CHECK (gr_synth_tone_kind_from_string ("lut") == GR_SYNTH_TONE_LUT
      && gr_synth_tone_kind_from_string ("bogus") == -1, "tone names");
}

static void
test_noise_mix_border (void)
{
  GrPlaneF p, q;
  gr_synth_plane_alloc (&p, 200, 200, true);
  gr_synth_plane_alloc (&q, 200, 200, true);
  for (int i = 0; i < 40000; i++)
    p.data[i] = q.data[i] = 128.0f;
  gr_synth_add_noise (&p, 4.0, 255.0, 77);
  gr_synth_add_noise (&q, 4.0, 255.0, 77);
  double s = 0, s2 = 0;
  for (int i = 0; i < 40000; i++) {
    s += p.data[i];
    s2 += (double) p.data[i] * p.data[i];
  }
  double mean = s / 40000, sd = sqrt (s2 / 40000 - mean * mean);
  CHECK (fabs (mean - 128) < 0.2 && fabs (sd - 4.0) < 0.15, "noise mean %g sd %g", mean, sd);
  CHECK (memcmp (p.data, q.data, sizeof (float) * 40000) == 0, "noise reproducible");
  /* clamping */
  for (int i = 0; i < 40000; i++)
    q.data[i] = 254.0f;
  gr_synth_add_noise (&q, 10.0, 255.0, 1);
  bool clamped = true;
  for (int i = 0; i < 40000; i++)
    clamped &= q.data[i] >= 0 && q.data[i] <= 255;
  CHECK (clamped, "noise clamped to 0..maxval");

  /* NIR-like mix */
  GrPlaneF r, g, nir;
  gr_synth_plane_alloc (&r, 4, 1, true);
  gr_synth_plane_alloc (&g, 4, 1, true);
  const float rv[4] = { 0, 255, 100, 50 }, gv[4] = { 0, 0, 200, 255 };
  memcpy (r.data, rv, sizeof rv);
  memcpy (g.data, gv, sizeof gv);
  g.mask[3] = 0;
  CHECK (gr_synth_mix_nir_like (&r, &g, 255.0, &nir) == GR_OK, "mix");
  CHECK (fabs (nir.data[0] - 76.5) < 1e-4 && fabs (nir.data[1] - 0.0) < 1e-4
      && fabs (nir.data[2] - (0.7 * 200 - 0.3 * 100 + 76.5)) < 1e-4, "nir values %g %g %g",
      nir.data[0], nir.data[1], nir.data[2]);
  CHECK (nir.mask[0] && !nir.mask[3], "mix mask is the AND");
  gr_synth_plane_free (&r);
  gr_synth_plane_free (&g);
  gr_synth_plane_free (&nir);

  /* no-data borders */
  const GrSynthBorderKind kinds[3] = { GR_SYNTH_BORDER_STRIPS, GR_SYNTH_BORDER_CORNERS,
    GR_SYNTH_BORDER_FOOTPRINT };
  for (int k = 0; k < 3; k++)
    for (uint64_t seed = 1; seed <= 10; seed++) {
      GrPlaneF b;
      gr_synth_plane_alloc (&b, 160, 120, true);
      for (int i = 0; i < 160 * 120; i++)
        b.data[i] = 100.0f;
      GrSynthBorderKind used = gr_synth_nodata_border (&b, kinds[k], 0.2, seed);
      int inv = 0;
      bool zero = true;
      for (int i = 0; i < 160 * 120; i++)
        if (!b.mask[i]) {
          inv++;
          zero &= b.data[i] == 0.0f;
        }
      bool edge = !b.mask[0] || !b.mask[159] || !b.mask[119 * 160] || !b.mask[119 * 160 + 159]
          || !b.mask[60 * 160] || !b.mask[80] || !b.mask[60 * 160 + 159] || !b.mask[119 * 160 + 80];
      CHECK (used == kinds[k], "border kind");
      CHECK (inv > 0 && inv < 160 * 120 * 0.6, "%s seed %d: %d invalid",
          gr_synth_border_kind_name (kinds[k]), (int) seed, inv);
      CHECK (zero, "border pixels hold 0");
      CHECK (edge, "%s seed %d: border does not touch the frame edge",
          gr_synth_border_kind_name (kinds[k]), (int) seed);
      CHECK (b.mask[60 * 160 + 80], "frame centre stays valid");
      gr_synth_plane_free (&b);
    }
  GrPlaneF b;
  gr_synth_plane_alloc (&b, 50, 50, true);
  GrSynthBorderKind used = gr_synth_nodata_border (&b, GR_SYNTH_BORDER_RANDOM, 0.2, 3);
  CHECK (used >= GR_SYNTH_BORDER_STRIPS && used <= GR_SYNTH_BORDER_FOOTPRINT, "random kind");
  gr_synth_plane_free (&b);
  gr_synth_plane_free (&p);
  gr_synth_plane_free (&q);
}

static void
test_mask_from_value (void)
{
  GrPlaneF bands[3];
  for (int k = 0; k < 3; k++) {
    gr_synth_plane_alloc (&bands[k], 40, 30, false);
    for (int i = 0; i < 1200; i++)
      bands[k].data[i] = (float) ((i * 7 + k * 13) % 200);
  }
  /* a white rim 3 px wide, a 2x2 white speck inside, and a pixel white in 2 bands only */
  for (int y = 0; y < 30; y++)
    for (int x = 0; x < 40; x++)
      if (x < 3 || y < 3 || x >= 37 || y >= 27 || ((x == 20 || x == 21) && (y == 15 || y == 16)))
        for (int k = 0; k < 3; k++)
          bands[k].data[y * 40 + x] = 255;
  bands[0].data[10 * 40 + 10] = bands[1].data[10 * 40 + 10] = 255;
  float v;
  CHECK (gr_synth_guess_nodata (bands, 3, &v) && v == 255, "guess no-data");
  uint8_t m[1200];
  long bad = gr_synth_mask_from_value (bands, 3, 255, 8, m);
  long expect = 1200 - 34 * 24;
  CHECK (bad == expect, "invalid %ld, expected %ld", bad, expect);
  CHECK (m[0] == 0 && m[15 * 40 + 20] == 255 && m[10 * 40 + 10] == 255 && m[12 * 40 + 12] == 255,
      "rim invalid, speck and partial pixel valid");
  for (int k = 0; k < 3; k++)
    gr_synth_plane_free (&bands[k]);
}

/* ---------------------------------------------------------------- files */

static bool
same_double (double a, double b)
{
  return (isnan (a) && isnan (b)) || memcmp (&a, &b, sizeof a) == 0;
}

static void
test_csv (void)
{
  GrSynthTruth rows[4];
  const double geo[6] = { 431000, 0.1, 0, 4577000, 0, -0.1 };
  const GrSynthPose poses[4] = {
    { 100.25, 80.5, 0, 1, 0, 0 },
    { 1.0 / 3.0, 2e-300, 12.345678901234567, 0.7071067811865476, 0, 0 },
    { 512, 384, -179.9, 3.5, 1e-3, -2e-4 },
    { -5.5, 1e6, 45, 1e-3, 0, 0 },
  };
  for (int i = 0; i < 4; i++) {
    char name[32];
    snprintf (name, sizeof name, "frame_%04d.png", i);
    gr_synth_truth_from_pose (&rows[i], i, name, &poses[i], 256, 192, i % 2 ? NULL : geo);
  }
  char *p = tpath ("truth.csv");
  char e[256];
  CHECK (gr_synth_truth_write_csv (p, rows, 4, e, sizeof e) == GR_OK, "write csv: %s", e);
  GrSynthTruth *back = NULL;
  int n = 0;
  CHECK (gr_synth_truth_read_csv (p, &back, &n, e, sizeof e) == GR_OK, "read csv: %s", e);
  CHECK (n == 4, "rows %d", n);
  for (int i = 0; i < n && i < 4; i++) {
    const GrSynthTruth *a = &rows[i], *b = &back[i];
    bool eq = a->index == b->index && !strcmp (a->file, b->file)
        && same_double (a->x, b->x) && same_double (a->y, b->y)
        && same_double (a->centre_x, b->centre_x) && same_double (a->centre_y, b->centre_y)
        && same_double (a->rotation_deg, b->rotation_deg) && same_double (a->scale, b->scale)
        && same_double (a->map_x, b->map_x) && same_double (a->map_y, b->map_y);
    for (int k = 0; k < 9; k++)
      eq &= same_double (a->h[k], b->h[k]);
    CHECK (eq, "row %d differs after the round trip", i);
  }
  CHECK (isnan (back[1].map_x) && !isnan (back[0].map_x), "nan map without geo");
  free (back);
  /* header line as documented */
  FILE *f = fopen (p, "r");
  char line[512] = "";
  if (f) {
    if (!fgets (line, sizeof line, f))
      line[0] = '\0';
    fclose (f);
  }
  CHECK (!strcmp (line, "index,file,x,y,centre_x,centre_y,rotation_deg,scale,h00,h01,h02,"
          "h10,h11,h12,h20,h21,h22,map_x,map_y\n"), "header: %s", line);
  /* bad files */
  f = fopen (p, "a");
  fputs ("4,frame_0004.png,1,2,3\n", f);
  fclose (f);
  CHECK (gr_synth_truth_read_csv (p, &back, &n, e, sizeof e) == GR_ERR_FORMAT && back == NULL,
      "short row refused");
  char *q = tpath ("nope.csv");
  CHECK (gr_synth_truth_read_csv (q, &back, &n, e, sizeof e) == GR_ERR_IO, "missing file");
  g_free (p);
  g_free (q);
}

static void
test_png_world_roundtrip (void)
{
  char e[512];
  for (int variant = 0; variant < 2; variant++) {
    GrSynthImage img;
    make_control (&img, 180, 140, 21 + variant, variant ? 16 : 8, variant ? 0.1 : 0.0);
    char *p = tpath (variant ? "c16.png" : "c8.png");
    CHECK (gr_synth_image_write_png (p, &img, e, sizeof e) == GR_OK, "png: %s", e);
    char *w = gr_synth_world_file_path (p);
    CHECK (g_str_has_suffix (w, ".pgw"), "world file name %s", w);
    CHECK (gr_synth_world_file_write (w, img.geo, e, sizeof e) == GR_OK, "pgw: %s", e);
    for (int b = 1; b <= 3; b++) {
      GrRaster r;
      GrStatus st = gr_raster_load (p, b, &r, e, sizeof e);
      CHECK (st == GR_OK, "load band %d: %s", b, e);
      if (st != GR_OK)
        continue;
      CHECK (r.bands == 3 && r.bit_depth == img.depth, "bands %d depth %d", r.bands, r.bit_depth);
      bool eq = r.plane.width == 180 && r.plane.height == 140;
      for (int i = 0; eq && i < 180 * 140; i++) {
        bool valid = !img.mask || img.mask[i];
        eq &= !valid || r.plane.data[i] == img.band[b - 1][i];
        eq &= (!r.plane.mask || r.plane.mask[i]) == valid;
      }
      CHECK (eq, "variant %d band %d: values or mask differ after PNG round trip", variant, b);
      CHECK ((r.plane.mask != NULL) == (img.mask != NULL), "mask presence");
      CHECK (r.has_geo, "geo from the world file");
      for (int k = 0; k < 6; k++)
        CHECK (fabs (r.geo[k] - img.geo[k]) < 1e-6, "geo[%d] %f vs %f", k, r.geo[k], img.geo[k]);
      gr_raster_clear (&r);
    }
    double g2[6];
    CHECK (gr_world_file_read (w, g2, e, sizeof e) == GR_OK, "world file read: %s", e);
    double mx, my, mx2, my2;
    gr_geo_apply (g2, 10.5, 20.5, &mx, &my);
    mx2 = img.geo[0] + 10.5 * img.geo[1];
    my2 = img.geo[3] + 20.5 * img.geo[5];
    CHECK (fabs (mx - mx2) < 1e-6 && fabs (my - my2) < 1e-6, "world file geo");
    free (w);
    g_free (p);
    gr_synth_image_free (&img);
  }
  char *bad = g_build_filename (tmpdir, "no", "such", "dir.png", NULL);
  const float *pl[1] = { NULL };
  float one = 1;
  pl[0] = &one;
  CHECK (gr_synth_png_write (bad, pl, 1, NULL, 1, 1, 255, 8, e, sizeof e) == GR_ERR_IO
      && strstr (e, "dir.png"), "unwritable path: %s", e);
  g_free (bad);
}

/* A frame with another band, an S-curve and noise, localized by dense NMI over the
 * whole procedural control: the peak is at the truth. */
static void
test_nmi_localizes (void)
{
  GrSynthImage img;
  make_control (&img, 320, 240, 31, 8, 0.0);
  GrPlaneF red = gr_synth_image_plane (&img, 0), green = gr_synth_image_plane (&img, 1);
  const int W = 96, H = 72, X = 141, Y = 77;
  double h[9];
  gr_synth_translation_homography (X, Y, h);
  GrPlaneF f;
  gr_synth_cut (&green, h, W, H, 1, &f);
  GrSynthTone t;
  gr_synth_tone_init (&t, GR_SYNTH_TONE_SCURVE, 4);
  gr_synth_tone_apply (&t, &f, 255.0);
  gr_synth_add_noise (&f, 4.0, 255.0, 9);
  gr_synth_nodata_border (&f, GR_SYNTH_BORDER_CORNERS, 0.15, 2);

  uint8_t *cb = malloc (320 * 240), *fb = malloc (W * H);
  gr_plane_to_bins (&red, GR_BINS_IDENTITY, 0, 0, cb);
  gr_plane_to_bins (&f, GR_BINS_IDENTITY, 0, 0, fb);
  GrImage8 ci = { cb, 320, NULL, 0, 320, 240 }, ti = { fb, W, f.mask, W, W, H };
  GrStatus st;
  char e[256];
  GrNmiDense *nmi = gr_nmi_dense_new (GR_BACKEND_CPU, -1, &st, e, sizeof e);
  CHECK (nmi != NULL, "nmi engine: %s", e);
  if (nmi) {
    GrRegion reg = { 0, 0, 320 - W + 1, 240 - H + 1 };
    int mw = reg.x1 - reg.x0, mh = reg.y1 - reg.y0;
    double *scores = malloc (sizeof (double) * mw * mh);
    CHECK (gr_nmi_dense_set_control (nmi, &ci, e, sizeof e) == GR_OK, "set control: %s", e);
    CHECK (gr_nmi_dense_run (nmi, &ti, reg, 100, scores, NULL, e, sizeof e) == GR_OK,
        "run: %s", e);
    GrPeak pk;
    gr_find_peak (scores, mw, mh, 5, 1.0, &pk);
    CHECK (pk.ix == X && pk.iy == Y, "NMI peak at (%d, %d), truth (%d, %d)", pk.ix, pk.iy, X, Y);
    printf ("NMI on the procedural control: peak %.4f, second %.4f, ratio %.3f\n", pk.score,
        pk.second, pk.ratio);
    CHECK (pk.ratio > 1.05, "peak ratio %g: the procedural control is ambiguous", pk.ratio);
    free (scores);
    gr_nmi_dense_free (nmi);
  }
  free (cb);
  free (fb);
  gr_synth_plane_free (&f);
  gr_synth_image_free (&img);
}

/* The drone camera: nadir equals the similarity pose; tilt makes the far edge wider;
 * the lens round-trips; cutting through the camera at nadir without a lens equals the
 * plain cut. */
static void
test_camera (void)
{
  const int W = 120, H = 80;
  const double headings[] = { 0.0, 37.0, 90.0, 180.0, 301.0 };
  for (unsigned i = 0; i < G_N_ELEMENTS (headings); i++) {
    GrSynthCamera cam = { .aim_x = 150.3, .aim_y = 99.7, .heading_deg = headings[i],
      .scale = 0.6, .focal = 100.0 };
    GrSynthPose pose = { .centre_x = 150.3, .centre_y = 99.7,
      .rotation_deg = headings[i], .scale = 0.6 };
    double hc[9], hp[9];
    CHECK (gr_synth_camera_homography (&cam, W, H, hc), "camera homography");
    gr_synth_pose_homography (&pose, W, H, hp);
    double worst = 0;
    for (int v = 0; v < H; v += 7)
      for (int u = 0; u < W; u += 7) {
        double xc, yc, xp, yp;
        gr_synth_homography_apply (hc, u, v, &xc, &yc);
        gr_synth_homography_apply (hp, u, v, &xp, &yp);
        worst = fmax (worst, hypot (xc - xp, yc - yp));
      }
    CHECK (worst < 1e-9, "nadir camera at heading %g differs from the pose by %g px",
        headings[i], worst);
  }

  /* pitched forward: the frame's top row sees farther, so it spans more ground */
  GrSynthCamera cam = { .aim_x = 200, .aim_y = 200, .heading_deg = 0, .pitch_deg = 15,
    .scale = 1.0, .focal = 100.0 };
  double h[9], x0, y0, x1, y1, x2, y2, x3, y3, xc, yc;
  CHECK (gr_synth_camera_homography (&cam, W, H, h), "pitched");
  gr_synth_homography_apply (h, 0, 0, &x0, &y0);
  gr_synth_homography_apply (h, W - 1, 0, &x1, &y1);
  gr_synth_homography_apply (h, 0, H - 1, &x2, &y2);
  gr_synth_homography_apply (h, W - 1, H - 1, &x3, &y3);
  gr_synth_homography_apply (h, 0.5 * (W - 1), 0.5 * (H - 1), &xc, &yc);
  CHECK (fabs (xc - 200) < 1e-9 && fabs (yc - 200) < 1e-9, "aim (%g, %g)", xc, yc);
  CHECK (x1 - x0 > 1.05 * (x3 - x2), "far edge %g vs near edge %g", x1 - x0, x3 - x2);
  CHECK (y0 < yc && y2 > yc, "heading 0: the frame's top is north");
  /* rolled right: the right edge is farther */
  cam.pitch_deg = 0;
  cam.roll_deg = 12;
  CHECK (gr_synth_camera_homography (&cam, W, H, h), "rolled");
  gr_synth_homography_apply (h, 0, 0, &x0, &y0);
  gr_synth_homography_apply (h, 0, H - 1, &x2, &y2);
  gr_synth_homography_apply (h, W - 1, 0, &x1, &y1);
  gr_synth_homography_apply (h, W - 1, H - 1, &x3, &y3);
  CHECK (y3 - y1 > 1.05 * (y2 - y0), "right edge %g vs left edge %g", y3 - y1, y2 - y0);
  cam.roll_deg = 85;
  CHECK (!gr_synth_camera_homography (&cam, W, H, h), "85 degrees of roll refused");

  /* the lens round-trips, and bends the corners */
  GrSynthCamera lc = { .aim_x = 100, .aim_y = 100, .scale = 1, .focal = 110,
    .lens = { -0.12, 0.03, 0.0, 0.001, -0.0015 } };
  double worst = 0;
  for (int v = 0; v < H; v += 5)
    for (int u = 0; u < W; u += 5) {
      double ud, vd, ub, vb;
      gr_synth_lens_distort (&lc, W, H, u, v, &ud, &vd);
      CHECK (gr_synth_lens_undistort (&lc, W, H, ud, vd, &ub, &vb), "undistort");
      worst = fmax (worst, hypot (ub - u, vb - v));
    }
  CHECK (worst < 1e-6, "lens round trip %g px", worst);
  double ud, vd;
  gr_synth_lens_distort (&lc, W, H, 0, 0, &ud, &vd);
  CHECK (hypot (ud - 0, vd - 0) > 1.0, "barrel distortion moves the corner (%g, %g)", ud, vd);

  /* cutting through a plain nadir camera equals the plain cut */
  GrSynthImage img;
  make_control (&img, 200, 160, 3, 8, 0.0);
  GrPlaneF g = gr_synth_image_plane (&img, 1), a, b;
  GrSynthCamera nc = { .aim_x = 99.5, .aim_y = 80, .heading_deg = 33, .scale = 0.8 };
  CHECK (gr_synth_camera_homography (&nc, 60, 40, h), "nadir");
  CHECK (gr_synth_cut_camera (&g, &nc, 60, 40, 1, &a) == GR_OK, "camera cut");
  CHECK (gr_synth_cut (&g, h, 60, 40, 1, &b) == GR_OK, "cut");
  CHECK (memcmp (a.data, b.data, sizeof (float) * 60 * 40) == 0 &&
      memcmp (a.mask, b.mask, 60 * 40) == 0, "camera cut equals the plain cut");
  gr_synth_plane_free (&a);
  gr_synth_plane_free (&b);
  /* with the lens, the centre stays, the corners move */
  nc.lens = lc.lens;
  nc.focal = 60;
  CHECK (gr_synth_cut_camera (&g, &nc, 60, 40, 1, &a) == GR_OK, "lens cut");
  CHECK (gr_synth_cut (&g, h, 60, 40, 1, &b) == GR_OK, "cut");
  double x, y;
  CHECK (gr_synth_camera_apply (&nc, h, 60, 40, 29.5, 19.5, &x, &y) &&
      fabs (x - 99.5) < 1e-9 && fabs (y - 80) < 1e-9, "lens centre (%g, %g)", x, y);
  int differ = 0;
  for (int i = 0; i < 60 * 40; i++)
    differ += a.mask[i] && b.mask[i] && fabsf (a.data[i] - b.data[i]) > 1.0f;
  CHECK (differ > 100, "the lens changes the frame (%d pixels)", differ);
  gr_synth_plane_free (&a);
  gr_synth_plane_free (&b);
  gr_synth_image_free (&img);
}

/* ---------------------------------------------------------------- the tool */

static int
run_tool (const char *tool, const char *args)
{
  char *cmd = g_strdup_printf ("'%s' %s", tool, args);
  int rc = system (cmd);
  g_free (cmd);
  return WIFEXITED (rc) ? WEXITSTATUS (rc) : -1;
}

static void
test_tool (void)
{
  const char *root = g_getenv ("GEOREG_BUILD_ROOT");
  char *tool = root ? g_build_filename (root, "pipelines", "georeg-synth", NULL) : NULL;
  if (!tool || !g_file_test (tool, G_FILE_TEST_IS_EXECUTABLE)) {
    printf ("SKIP tool checks: georeg-synth not found (GEOREG_BUILD_ROOT unset?)\n");
    g_free (tool);
    return;
  }
  char *ctl = tpath ("tool/control.png"), *out = tpath ("tool/frames");
  char *args = g_strdup_printf ("control --out '%s' --width 400 --height 300 --seed 4 "
      "--nodata-border 0.05 > /dev/null", ctl);
  CHECK (run_tool (tool, args) == 0, "georeg-synth control failed");
  g_free (args);
  args = g_strdup_printf ("frames --control '%s' --out '%s' --count 5 --width 96 "
      "--height 64 --seed 3 --control-band 2 --rotation-max 25 --scale-min 0.8 "
      "--scale-max 1.3 --margin 2 > /dev/null", ctl, out);
  CHECK (run_tool (tool, args) == 0, "georeg-synth frames failed");
  g_free (args);

  char e[512];
  char *csv = g_build_filename (out, "truth.csv", NULL);
  GrSynthTruth *rows = NULL;
  int n = 0;
  CHECK (gr_synth_truth_read_csv (csv, &rows, &n, e, sizeof e) == GR_OK && n == 5,
      "truth.csv: %s (%d rows)", e, n);
  char *cbp = g_build_filename (out, "control_band.png", NULL);
  GrRaster cb;
  GrStatus st = gr_raster_load (cbp, 0, &cb, e, sizeof e);
  CHECK (st == GR_OK && cb.plane.mask && cb.has_geo, "control_band.png: %s", e);
  for (int i = 0; st == GR_OK && i < n; i++) {
    char *fp = g_build_filename (out, rows[i].file, NULL);
    GrRaster fr;
    if (gr_raster_load (fp, 0, &fr, e, sizeof e) != GR_OK) {
      CHECK (0, "frame %d: %s", i, e);
      g_free (fp);
      continue;
    }
    CHECK (fr.plane.width == 96 && fr.plane.height == 64 && fr.bit_depth == 8, "frame size");
    /* re-cut from the control band with the truth: equal within the 8-bit rounding */
    GrPlaneF ref;
    int ss = (int) ceil (rows[i].scale - 1e-9);
    gr_synth_cut (&cb.plane, rows[i].h, 96, 64, ss < 1 ? 1 : ss, &ref);
    int nbad = 0, ninv = 0;
    for (int k = 0; k < 96 * 64; k++) {
      ninv += !ref.mask[k];
      if (ref.mask[k] && fabsf (ref.data[k] - fr.plane.data[k]) > 0.51f)
        nbad++;
    }
    CHECK (ninv == 0, "frame %d: footprint leaves the valid area (%d px)", i, ninv);
    CHECK (nbad == 0, "frame %d: %d pixels differ from the truth re-cut", i, nbad);
    CHECK (fabs (rows[i].rotation_deg) <= 25 && rows[i].scale >= 0.8 && rows[i].scale <= 1.3,
        "frame %d: pose out of the asked ranges", i);
    double mx, my;
    gr_geo_apply (cb.geo, rows[i].centre_x + 0.5, rows[i].centre_y + 0.5, &mx, &my);
    CHECK (fabs (mx - rows[i].map_x) < 1e-6 && fabs (my - rows[i].map_y) < 1e-6,
        "frame %d: map coordinates", i);
    gr_synth_plane_free (&ref);
    gr_raster_clear (&fr);
    g_free (fp);
  }
  free (rows);

  /* through a tilted camera with a lens, any heading: camera.csv rows re-cut the frames */
  char *cout = tpath ("tool/camera");
  args = g_strdup_printf ("frames --control '%s' --out '%s' --count 3 --width 96 "
      "--height 64 --seed 5 --control-band 2 --rotation-max 180 --scale-min 0.6 "
      "--scale-max 1.6 --tilt-max 15 --focal 110 --k1 -0.12 --k2 0.02 --p1 0.001 "
      "--margin 2 > /dev/null", ctl, cout);
  CHECK (run_tool (tool, args) == 0, "georeg-synth frames through a camera failed");
  g_free (args);
  char *ccsv = g_build_filename (cout, "camera.csv", NULL);
  FILE *cf = fopen (ccsv, "r");
  CHECK (cf != NULL, "camera.csv missing");
  char line[1024];
  int crows = 0;
  if (cf && fgets (line, sizeof line, cf))
    CHECK (strncmp (line, "index,file,heading_deg,pitch_deg", 32) == 0, "header %s", line);
  while (cf && st == GR_OK && fgets (line, sizeof line, cf)) {
    int idx;
    char name[256];
    GrSynthCamera cam = { 0 };
    double k3;
    if (sscanf (line, "%d,%255[^,],%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &idx, name,
            &cam.heading_deg, &cam.pitch_deg, &cam.roll_deg, &cam.scale, &cam.focal,
            &cam.lens.k1, &cam.lens.k2, &k3, &cam.lens.p1, &cam.lens.p2) != 12) {
      CHECK (0, "camera.csv row: %s", line);
      continue;
    }
    crows++;
    CHECK (fabs (cam.pitch_deg) <= 15 && fabs (cam.roll_deg) <= 15 && cam.focal == 110 &&
        cam.lens.k1 == -0.12, "row %d: camera out of the asked ranges", idx);
    /* the aim point: truth.csv's centre (the principal point is the frame centre) */
    GrSynthTruth *tr = NULL;
    int tn = 0;
    char *tcsv = g_build_filename (cout, "truth.csv", NULL);
    CHECK (gr_synth_truth_read_csv (tcsv, &tr, &tn, e, sizeof e) == GR_OK && tn == 3,
        "camera truth.csv: %s", e);
    g_free (tcsv);
    if (!tr || idx >= tn) {
      free (tr);
      continue;
    }
    cam.aim_x = tr[idx].centre_x;
    cam.aim_y = tr[idx].centre_y;
    free (tr);
    char *fp = g_build_filename (cout, name, NULL);
    GrRaster fr;
    GrPlaneF ref;
    if (gr_raster_load (fp, 0, &fr, e, sizeof e) == GR_OK) {
      const int ss = (int) ceil (cam.scale - 1e-9);
      CHECK (gr_synth_cut_camera (&cb.plane, &cam, 96, 64, ss, &ref) == GR_OK, "re-cut");
      int nbad = 0;
      for (int k = 0; k < 96 * 64; k++)
        nbad += !ref.mask[k] || fabsf (ref.data[k] - fr.plane.data[k]) > 0.51f;
      CHECK (nbad == 0, "camera frame %d: %d pixels differ from the camera re-cut", idx,
          nbad);
      gr_synth_plane_free (&ref);
      gr_raster_clear (&fr);
    } else {
      CHECK (0, "camera frame %d: %s", idx, e);
    }
    g_free (fp);
  }
  if (cf)
    fclose (cf);
  CHECK (crows == 3, "camera.csv: %d rows", crows);
  args = g_strdup_printf ("frames --control '%s' --out '%s' --tilt-max 5 --perspective 0.1 "
      "2> /dev/null", ctl, cout);
  CHECK (run_tool (tool, args) != 0, "perspective with a camera must fail");
  g_free (args);
  g_free (ccsv);
  g_free (cout);
  if (st == GR_OK)
    gr_raster_clear (&cb);

  /* errors: nonzero exit with a message */
  args = g_strdup_printf ("frames --control '%s/missing.png' --out '%s' 2> /dev/null",
      tmpdir, out);
  CHECK (run_tool (tool, args) != 0, "missing control must fail");
  g_free (args);
  args = g_strdup_printf ("frames --control '%s' --out '%s' --width 5000 --height 4000 "
      "2> /dev/null", ctl, out);
  CHECK (run_tool (tool, args) != 0, "a frame larger than the control must fail");
  g_free (args);
  args = g_strdup_printf ("frames --control '%s' --out '%s' --tone sepia 2> /dev/null", ctl, out);
  CHECK (run_tool (tool, args) != 0, "unknown tone must fail");
  g_free (args);
  CHECK (run_tool (tool, "bogus 2> /dev/null") != 0, "unknown command must fail");
  g_free (csv);
  g_free (cbp);
  g_free (ctl);
  g_free (out);
  g_free (tool);
}

static void
rm_rf (const char *path)
{
  if (g_file_test (path, G_FILE_TEST_IS_DIR)) {
    GDir *d = g_dir_open (path, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name (d))) {
      char *p = g_build_filename (path, name, NULL);
      rm_rf (p);
      g_free (p);
    }
    if (d)
      g_dir_close (d);
    g_rmdir (path);
  } else {
    g_unlink (path);
  }
}

int
main (void)
{
  tmpdir = g_dir_make_tmp ("georeg-synth-XXXXXX", NULL);
  if (!tmpdir) {
    fprintf (stderr, "cannot create a temporary folder\n");
    return 1;
  }
  test_control ();
  test_translation_exact ();
  test_homography_truth ();
  test_masks ();
  test_tone ();
  test_noise_mix_border ();
  test_mask_from_value ();
  test_csv ();
  test_png_world_roundtrip ();
  test_nmi_localizes ();
  test_camera ();
  test_tool ();
  if (failures == 0 || !g_getenv ("GEOREG_KEEP_TMP"))
    rm_rf (tmpdir);
  else
    fprintf (stderr, "kept %s\n", tmpdir);
  g_free (tmpdir);
  return CHECK_DONE ();
}
