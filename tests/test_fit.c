/* Robust fit (kernels/fit.h): exact recovery of every model on noiseless data, 50%
 * outliers, noise, degenerate (coincident, collinear), too-few and no-consensus
 * inputs, non-finite input, weights, determinism.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"

#include "test_check.h"

static uint64_t rng_state = 12345;

static double
urand (void)
{
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static double
grand (void)
{
  double u = urand (), v = urand ();
  return sqrt (-2.0 * log (u + 1e-300)) * cos (2 * M_PI * v);
}

static void
truth (GrModel m, double h[9])
{
  const double a = 0.3, s = 1.07;
  const double base[9] = { s * cos (a), -s * sin (a), 130.5, s * sin (a), s * cos (a), -42.25,
    0, 0, 1
  };
  memcpy (h, base, sizeof base);
  switch (m) {
    case GR_MODEL_TRANSLATION:
      h[0] = h[4] = 1;
      h[1] = h[3] = 0;
      break;
    case GR_MODEL_SIMILARITY:
      break;
    case GR_MODEL_AFFINE:
      h[1] += 0.11;
      h[3] -= 0.07;
      h[4] *= 0.9;
      break;
    case GR_MODEL_HOMOGRAPHY:
      h[1] += 0.11;
      h[3] -= 0.07;
      h[6] = 1.5e-4;
      h[7] = -2.2e-4;
      break;
  }
}

static void
apply (const double h[9], double x, double y, double *X, double *Y)
{
  CHECK (gr_fit_apply (h, x, y, X, Y), "apply failed at (%g, %g)", x, y);
}

/* RMS distance between two transforms over a grid of [0,1000]^2 */
static double
model_distance (const double a[9], const double b[9])
{
  double se = 0;
  int n = 0;
  for (int j = 0; j <= 10; j++)
    for (int i = 0; i <= 10; i++) {
      double x0, y0, x1, y1;
      apply (a, 100.0 * i, 100.0 * j, &x0, &y0);
      apply (b, 100.0 * i, 100.0 * j, &x1, &y1);
      se += (x1 - x0) * (x1 - x0) + (y1 - y0) * (y1 - y0);
      n++;
    }
  return sqrt (se / n);
}

static const char *names[4] = { "translation", "similarity", "affine", "homography" };

static void
make_data (GrModel m, int n, double outliers, double sigma, double *src, double *dst,
    uint8_t *is_in, double h[9])
{
  truth (m, h);
  for (int i = 0; i < n; i++) {
    src[2 * i] = 1000 * urand ();
    src[2 * i + 1] = 1000 * urand ();
    apply (h, src[2 * i], src[2 * i + 1], &dst[2 * i], &dst[2 * i + 1]);
    dst[2 * i] += sigma * grand ();
    dst[2 * i + 1] += sigma * grand ();
    is_in[i] = 1;
    if (urand () < outliers) {
      dst[2 * i] = -200 + 1400 * urand ();
      dst[2 * i + 1] = -200 + 1400 * urand ();
      is_in[i] = 0;
    }
  }
}

/* frame -> control: heading (clockwise), scale s, centre (cx, cy), perspective */
static void
camera_like (double heading, double s, int w, int h, double cx, double cy, double g, double out[9])
{
  const double a = heading * M_PI / 180.0, c = cos (a) * s, n = sin (a) * s;
  const double base[9] = { c, -n, cx - (c * w / 2.0 - n * h / 2.0),
    n, c, cy - (n * w / 2.0 + c * h / 2.0), 0, g, 1
  };
  memcpy (out, base, sizeof base);
}

/* Implausible transforms are flagged, plausible camera views are not. */
static void
test_plausibility (void)
{
  const int W = 1920, H = 1080;
  GrPlausibleParams pp;
  gr_plausible_params_init (&pp);
  GrPlausibility r;
  double h[9];
  /* plausible: any heading, mild perspective (the mild tilt of a drone camera) */
  for (int k = 0; k < 8; k++) {
    camera_like (k * 45.0 + 7, 0.8, W, H, 5000, 4000, k % 2 ? 0.0 : 3e-5, h);
    pp.expected_scale = 0.8;
    pp.has_heading = true;
    pp.heading_deg = k * 45.0 + 7 + 5;
    const unsigned f = gr_fit_check_plausible (h, W, H, &pp, &r);
    CHECK (f == 0, "heading %d: flags 0x%x (aniso %g, area %g, heading %g)", k * 45 + 7, f,
        r.anisotropy, r.area_ratio, r.heading_deg);
    CHECK (k % 2 == 0 || fabs (r.scale - 0.8) < 1e-9, "scale %g", r.scale);
  }
  /* the case: a collapsed 180-degree homography, determinant 0.012, a sliver */
  const double sliver[9] = { -0.9, 0.3, 5200, -0.05, 0.0034, 4100, 0, 0, 1 };
  pp.expected_scale = 0.8;
  pp.heading_deg = 180;
  unsigned f = gr_fit_check_plausible (sliver, W, H, &pp, &r);
  CHECK ((f & GR_PLAUSIBLE_NEAR_SINGULAR) && (f & GR_PLAUSIBLE_AREA) &&
      (f & GR_PLAUSIBLE_ASPECT), "sliver: flags 0x%x, det %g", f, r.min_det);
  /* without any expectation the shape alone still flags it */
  f = gr_fit_check_plausible (sliver, W, H, NULL, &r);
  CHECK (f & GR_PLAUSIBLE_NEAR_SINGULAR, "sliver without a prior: 0x%x", f);
  /* mirrored */
  camera_like (30, 0.8, W, H, 5000, 4000, 0, h);
  h[1] = -h[1];
  h[4] = -h[4];
  f = gr_fit_check_plausible (h, W, H, NULL, &r);
  CHECK ((f & GR_PLAUSIBLE_NEAR_SINGULAR) && (f & GR_PLAUSIBLE_NON_CONVEX), "mirror 0x%x", f);
  /* folded: strong perspective puts the horizon inside the frame */
  camera_like (0, 0.8, W, H, 5000, 4000, 1.5e-3, h);
  f = gr_fit_check_plausible (h, W, H, NULL, &r);
  CHECK (f & (GR_PLAUSIBLE_NOT_FINITE | GR_PLAUSIBLE_NEAR_SINGULAR), "horizon 0x%x", f);
  /* right shape, wrong scale or heading */
  camera_like (10, 2.0, W, H, 5000, 4000, 0, h);
  pp.expected_scale = 0.8;
  pp.heading_deg = 10;
  f = gr_fit_check_plausible (h, W, H, &pp, &r);
  CHECK (f == GR_PLAUSIBLE_AREA, "scale 2.5x: 0x%x (area %g)", f, r.area_ratio);
  camera_like (100, 0.8, W, H, 5000, 4000, 0, h);
  f = gr_fit_check_plausible (h, W, H, &pp, &r);
  CHECK (f == GR_PLAUSIBLE_HEADING, "heading 90 off: 0x%x", f);
  /* a negated homography is the same map */
  camera_like (10, 0.8, W, H, 5000, 4000, 0, h);
  for (int i = 0; i < 9; i++)
    h[i] = -h[i];
  f = gr_fit_check_plausible (h, W, H, &pp, &r);
  CHECK (f == 0, "negated: 0x%x", f);
  /* non-finite */
  h[0] = NAN;
  CHECK (gr_fit_check_plausible (h, W, H, &pp, NULL) == GR_PLAUSIBLE_NOT_FINITE, "nan");
}

/* The frame 240 x 180 at 0.25 control pixels a frame pixel (4x finer than the
 * control), turned and tilted a little: n correspondences with per-point Gaussian noise
 * of sigma control pixels plus, per 3 x 3 block of the frame, a common offset of
 * block_sigma.  Fits a homography; returns the true error of the fit over the frame
 * (RMS, frame pixels) and its predicted error in *pred. */
static double
predicted_trial (int n, double sigma, double block_sigma, double *pred)
{
  enum { W = 240, H = 180 };
  const double a = 0.4, s = 0.25;
  const double h[9] = { s * cos (a), -s * sin (a), 300.0, s * sin (a), s * cos (a), 200.0,
    2e-5, -1e-5, 1.0
  };
  double off[9][2];
  for (int b = 0; b < 9; b++) {
    off[b][0] = block_sigma * grand ();
    off[b][1] = block_sigma * grand ();
  }
  double *src = malloc (sizeof (double) * 2 * n), *dst = malloc (sizeof (double) * 2 * n);
  uint8_t *inl = malloc (n);
  for (int i = 0; i < n; i++) {
    const double x = urand () * W, y = urand () * H;
    const int b = (int) (x * 3 / W) + 3 * (int) (y * 3 / H);
    src[2 * i] = x;
    src[2 * i + 1] = y;
    gr_fit_apply (h, x, y, &dst[2 * i], &dst[2 * i + 1]);
    dst[2 * i] += sigma * grand () + off[b][0];
    dst[2 * i + 1] += sigma * grand () + off[b][1];
  }
  GrFitParams p;
  gr_fit_params_init (&p, GR_MODEL_HOMOGRAPHY);
  p.threshold = 100.0;          /* every point an inlier: the test is of the spread */
  GrFit f;
  double err = NAN;
  *pred = NAN;
  if (gr_fit_robust (src, dst, NULL, n, &p, &f, inl) == GR_FIT_OK) {
    *pred = gr_fit_predicted_error (f.h, GR_MODEL_HOMOGRAPHY, src, dst, inl, n, W, H);
    double s2 = 0.0;
    for (int y = 0; y < H; y += 4)
      for (int x = 0; x < W; x += 4) {
        double X0, Y0, X1, Y1;
        gr_fit_apply (h, x + 0.5, y + 0.5, &X0, &Y0);
        gr_fit_apply (f.h, x + 0.5, y + 0.5, &X1, &Y1);
        s2 += ((X1 - X0) * (X1 - X0) + (Y1 - Y0) * (Y1 - Y0)) / (s * s);
      }
    err = sqrt (s2 / ((W / 4) * (H / 4)));
  }
  free (src);
  free (dst);
  free (inl);
  return err;
}

/* gr_fit_predicted_error: the jackknife over 3 x 3 blocks of the frame follows the true
 * error of the fit, in frame pixels, for independent noise and for errors shared by
 * the matches of one block (which a least-squares covariance would not see), and says
 * NAN where it cannot tell */
static void
test_predicted_error (void)
{
  const double sigmas[2][2] = { { 0.2, 0.0 }, { 0.05, 0.2 } };
  const char *const what[2] = { "independent noise", "block offsets" };
  for (int k = 0; k < 2; k++) {
    double sp = 0.0, se = 0.0;
    const int trials = 40;
    for (int t = 0; t < trials; t++) {
      double pred;
      const double e = predicted_trial (150, sigmas[k][0], sigmas[k][1], &pred);
      CHECK (isfinite (e) && isfinite (pred), "%s: trial %d failed", what[k], t);
      sp += pred * pred / trials;
      se += e * e / trials;
    }
    sp = sqrt (sp);
    se = sqrt (se);
    printf ("predicted error, %s: predicted %.3f px, true %.3f px (RMS of %d trials)\n",
        what[k], sp, se, trials);
    CHECK (sp > 0.5 * se && sp < 2.0 * se, "%s: predicted %.3f px against %.3f px",
        what[k], sp, se);
  }
  /* exact correspondences: no spread */
  double pred;
  predicted_trial (100, 0.0, 0.0, &pred);
  CHECK (pred < 1e-6, "exact: predicted %g", pred);
  /* every inlier in one block: nothing to leave out, unknown; too few: unknown */
  double src[40], dst[40];
  const double h[9] = { 0.5, 0, 10, 0, 0.5, 20, 0, 0, 1 };
  for (int i = 0; i < 20; i++) {
    src[2 * i] = 5.0 + urand () * 50.0;
    src[2 * i + 1] = 5.0 + urand () * 40.0;
    gr_fit_apply (h, src[2 * i], src[2 * i + 1], &dst[2 * i], &dst[2 * i + 1]);
  }
  CHECK (isnan (gr_fit_predicted_error (h, GR_MODEL_HOMOGRAPHY, src, dst, NULL, 20, 240,
              180)), "one block: not NAN");
  CHECK (isnan (gr_fit_predicted_error (h, GR_MODEL_HOMOGRAPHY, src, dst, NULL, 3, 24,
              18)), "three points: not NAN");
  CHECK (isnan (gr_fit_predicted_error (NULL, GR_MODEL_AFFINE, src, dst, NULL, 20, 24,
              18)), "no transform: not NAN");
}

int
main (void)
{
  test_plausibility ();
  test_predicted_error ();
  GrFitParams p;
  gr_fit_params_init (&p, GR_MODEL_AFFINE);
  CHECK (p.model == GR_MODEL_AFFINE && p.threshold == 1.0 && p.confidence == 0.999 &&
      p.max_iterations == 10000, "defaults");
  const int n = 200;
  double *src = malloc (sizeof (double) * 2 * n), *dst = malloc (sizeof (double) * 2 * n);
  uint8_t *is_in = malloc (n), *mask = malloc (n);

  for (int mi = 0; mi < 4; mi++) {
    const GrModel m = (GrModel) mi;
    double h[9];
    GrFit f;
    gr_fit_params_init (&p, m);

    /* exact */
    make_data (m, n, 0.0, 0.0, src, dst, is_in, h);
    GrFitResult r = gr_fit_robust (src, dst, NULL, n, &p, &f, mask);
    CHECK (r == GR_FIT_OK && f.result == r, "%s exact: result %d", names[mi], r);
    const double d0 = model_distance (f.h, h);
    CHECK (d0 < 1e-6, "%s exact: distance %g", names[mi], d0);
    CHECK (f.inliers == n && f.rms < 1e-6, "%s exact: %d inliers, rms %g", names[mi],
        f.inliers, f.rms);
    CHECK (f.h[8] == 1.0, "%s: h[8] = %g", names[mi], f.h[8]);
    if (m != GR_MODEL_HOMOGRAPHY)
      CHECK (f.h[6] == 0.0 && f.h[7] == 0.0, "%s: projective row", names[mi]);
    if (m == GR_MODEL_SIMILARITY)
      CHECK (fabs (f.h[0] - f.h[4]) < 1e-12 && fabs (f.h[1] + f.h[3]) < 1e-12,
          "similarity structure");

    /* 50% outliers, noise 0.3 px */
    make_data (m, n, 0.5, 0.3, src, dst, is_in, h);
    p.threshold = 1.5;
    r = gr_fit_robust (src, dst, NULL, n, &p, &f, mask);
    int tp = 0, fp = 0, nin = 0;
    for (int i = 0; i < n; i++) {
      nin += is_in[i];
      tp += mask[i] && is_in[i];
      fp += mask[i] && !is_in[i];
    }
    const double d1 = model_distance (f.h, h);
    CHECK (r == GR_FIT_OK, "%s outliers: result %d", names[mi], r);
    CHECK (d1 < 0.15, "%s outliers: distance %g", names[mi], d1);
    CHECK (tp >= nin * 95 / 100 && fp <= 3, "%s outliers: %d of %d inliers found, %d "
        "false", names[mi], tp, nin, fp);
    CHECK (f.inliers == tp + fp, "%s: inlier count %d vs mask %d", names[mi], f.inliers,
        tp + fp);
    CHECK (f.rms > 0.2 && f.rms < 0.6, "%s: rms %g for sigma 0.3", names[mi], f.rms);
    printf ("%-11s exact %.1e; 50%% outliers + 0.3 px noise: %3d/%3d inliers, %d false, "
        "model error %.3f px, rms %.3f, %d iterations\n", names[mi], d0, tp, nin, fp, d1,
        f.rms, f.iterations);

    /* determinism, weights */
    GrFit f2;
    gr_fit_robust (src, dst, NULL, n, &p, &f2, NULL);
    CHECK (memcmp (f.h, f2.h, sizeof f.h) == 0 && f.inliers == f2.inliers,
        "%s: not deterministic", names[mi]);
    double *w = malloc (sizeof (double) * n);
    for (int i = 0; i < n; i++)
      w[i] = is_in[i] ? 1.0 : 0.05;
    r = gr_fit_robust (src, dst, w, n, &p, &f2, NULL);
    CHECK (r == GR_FIT_OK && model_distance (f2.h, h) < 0.15 && f2.iterations <= f.iterations,
        "%s weighted: result %d, %d vs %d iterations", names[mi], r, f2.iterations,
        f.iterations);
    free (w);

    /* too few */
    const int mn = mi + 1;
    r = gr_fit_robust (src, dst, NULL, mn - 1, &p, &f, NULL);
    CHECK (r == GR_FIT_TOO_FEW && f.result == r, "%s: %d points: result %d", names[mi],
        mn - 1, r);
    p.threshold = 1.0;
  }

  /* degenerate: collinear (affine, homography), coincident (similarity) */
  for (int i = 0; i < n; i++) {
    src[2 * i] = 5.0 * i;
    src[2 * i + 1] = 2.0 * i + 7;
    dst[2 * i] = 3.0 * i + 1;
    dst[2 * i + 1] = -1.0 * i;
  }
  GrFit f;
  gr_fit_params_init (&p, GR_MODEL_AFFINE);
  CHECK (gr_fit_robust (src, dst, NULL, n, &p, &f, NULL) == GR_FIT_DEGENERATE,
      "collinear affine: %d", f.result);
  gr_fit_params_init (&p, GR_MODEL_HOMOGRAPHY);
  CHECK (gr_fit_robust (src, dst, NULL, n, &p, &f, NULL) == GR_FIT_DEGENERATE,
      "collinear homography: %d", f.result);
  gr_fit_params_init (&p, GR_MODEL_SIMILARITY);
  CHECK (gr_fit_robust (src, dst, NULL, n, &p, &f, NULL) == GR_FIT_OK,
      "collinear similarity is fine: %d", f.result);
  for (int i = 0; i < 2 * n; i++)
    src[i] = 3.0;
  CHECK (gr_fit_robust (src, dst, NULL, n, &p, &f, NULL) == GR_FIT_DEGENERATE,
      "coincident similarity: %d", f.result);
  /* four points, three collinear */
  {
    const double s4[8] = { 0, 0, 10, 0, 20, 0, 5, 9 };
    const double d4[8] = { 1, 1, 11, 1, 21, 1, 6, 10 };
    gr_fit_params_init (&p, GR_MODEL_HOMOGRAPHY);
    CHECK (gr_fit_robust (s4, d4, NULL, 4, &p, &f, NULL) != GR_FIT_OK,
        "4 points with 3 collinear gave a homography");
  }
  /* no consensus: random pairs, tiny threshold */
  for (int i = 0; i < 2 * n; i++) {
    src[i] = 1000 * urand ();
    dst[i] = 1000 * urand ();
  }
  gr_fit_params_init (&p, GR_MODEL_HOMOGRAPHY);
  p.threshold = 0.01;
  p.max_iterations = 500;
  CHECK (gr_fit_robust (src, dst, NULL, n, &p, &f, NULL) == GR_FIT_NO_CONSENSUS,
      "random homography: %d (%d inliers)", f.result, f.inliers);
  CHECK (f.iterations <= 500, "iterations %d over the cap", f.iterations);
  gr_fit_params_init (&p, GR_MODEL_TRANSLATION);
  p.threshold = 0.01;
  CHECK (gr_fit_robust (src, dst, NULL, n, &p, &f, NULL) == GR_FIT_NO_CONSENSUS,
      "random translation: %d", f.result);
  /* non-finite input is refused */
  src[5] = NAN;
  gr_fit_params_init (&p, GR_MODEL_AFFINE);
  CHECK (gr_fit_robust (src, dst, NULL, n, &p, &f, NULL) == GR_FIT_DEGENERATE,
      "NAN input: %d", f.result);
  CHECK (gr_fit_robust (src, dst, NULL, n, NULL, &f, NULL) == GR_FIT_TOO_FEW, "NULL params");
  /* apply */
  {
    const double hh[9] = { 1, 0, 0, 0, 1, 0, 1, 0, -5 };
    double X, Y;
    CHECK (!gr_fit_apply (hh, 5.0, 3.0, &X, &Y), "point at infinity mapped");
    CHECK (gr_fit_apply (hh, 6.0, 3.0, &X, &Y) && X == 6.0 && Y == 3.0, "apply");
  }
  free (src);
  free (dst);
  free (is_in);
  free (mask);
  return CHECK_DONE ();
}
