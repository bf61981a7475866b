/* Coarse localization on synthesized frames: the overlap-aware dense NMI score at the
 * control's edges and beside its no-data; GrLocalize at any heading, ground
 * resolution, tilt and lens, with a full prior, a position prior and none.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "image.h"
#include "localize.h"
#include "localize_features.h"
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

/* The truth of a synthesized camera frame in pixel-corner coordinates. */
static bool
truth_apply (const GrSynthCamera *cam, const double hc[9], int w, int h, double u, double v,
    double *x, double *y)
{
  if (!gr_synth_camera_apply (cam, hc, w, h, u - 0.5, v - 0.5, x, y))
    return false;
  *x += 0.5;
  *y += 0.5;
  return true;
}

static double
angle_diff (double a, double b)
{
  double d = fmod (fabs (a - b), 360.0);
  return d > 180.0 ? 360.0 - d : d;
}

/* Descriptor matching (localize_features.h) on frames cut at several headings and
 * ground resolutions finer and coarser than the control's, another band through a
 * tone curve.  The procedural texture has few corners (about 760 keypoints on 640 x
 * 480), so not every frame finds a similarity; most must (the localizer's acceptance,
 * 5 inliers), and every one found must map the frame's corners within a few control
 * px of the truth (a wrong proposal would cost the sweep a registration).  Bad
 * arguments are refused; a frame too small for a keypoint gives none. */
static void
test_feature_places (void)
{
  enum { CW = 640, CH = 480 };
  GrSynthImage img;
  make_control (&img, CW, CH, 31, 0.0);
  GrPlaneF red = gr_synth_image_plane (&img, 0), green = gr_synth_image_plane (&img, 1);
  GrPlaceFeatures *pf = gr_place_features_new ();
  CHECK (pf != NULL, "gr_place_features_new");
  const struct { double scale, heading; int w, h; } cases[] = {
    { 0.5, 37.0, 480, 360 }, { 1.0, 200.0, 240, 180 }, { 2.0, 291.0, 200, 150 },
    { 0.5, 0.0, 480, 360 }, { 1.0, 37.0, 240, 180 }, { 1.0, 0.0, 240, 180 },
    { 2.0, 0.0, 200, 150 },
  };
  const int ncases = (int) (sizeof cases / sizeof cases[0]);
  int found = 0;
  for (int k = 0; k < ncases; k++) {
    const double s = cases[k].scale, a = cases[k].heading * M_PI / 180.0;
    const int W = cases[k].w, H = cases[k].h;
    /* frame pixel index -> control pixel index: turned by the heading about the
     * frame's centre, scaled, centred on the control's middle */
    const double c = s * cos (a), d = s * sin (a);
    const double fcx = 0.5 * (W - 1), fcy = 0.5 * (H - 1);
    const double hi[9] = { c, -d, 0.5 * (CW - 1) - (c * fcx - d * fcy), d, c,
      0.5 * (CH - 1) - (d * fcx + c * fcy), 0, 0, 1 };
    GrPlaneF f;
    CHECK (gr_synth_cut (&green, hi, W, H, s > 1 ? (int) ceil (s) : 1, &f) == GR_OK, "cut");
    GrSynthTone t;
    gr_synth_tone_init (&t, GR_SYNTH_TONE_SCURVE, k);
    gr_synth_tone_apply (&t, &f, 255.0);
    gr_synth_add_noise (&f, 3.0, 255.0, k);
    GrPlaneF small;
    memset (&small, 0, sizeof small);
    CHECK (gr_plane_downscale (&f, gr_place_features_frame_factor (s, W > H ? W : H,
                red.width, red.height), &small) == GR_OK, "downscale");
    GrFeaturePlace fp;
    CHECK (gr_place_features_match (pf, &red, s, &small, W, H, 0, &fp) == GR_OK, "match");
    double worst = INFINITY;
    if (fp.inliers > 0) {
      worst = 0.0;
      const double corner[4][2] = { { 0, 0 }, { W, 0 }, { 0, H }, { W, H } };
      for (int q = 0; q < 4; q++) {
        double x, y, tx, ty;
        gr_fit_apply (fp.h, corner[q][0], corner[q][1], &x, &y);
        gr_fit_apply (hi, corner[q][0] - 0.5, corner[q][1] - 0.5, &tx, &ty);
        worst = fmax (worst, hypot (x - tx - 0.5, y - ty - 0.5));
      }
    }
    printf ("feature places: scale %.1f heading %.0f: %d matches, %d inliers, corners "
        "within %.2f control px\n", s, cases[k].heading, fp.matches, fp.inliers, worst);
    if (fp.inliers >= 5) {
      found++;
      CHECK (worst <= 3.0 * fmax (1.0, s), "scale %.1f heading %.0f: %d inliers, a corner "
          "%.2f control px off", s, cases[k].heading, fp.inliers, worst);
    }
    gr_plane_clear (&small);
    gr_synth_plane_free (&f);
  }
  CHECK (found >= ncases - 2, "similarities found for %d of %d frames", found, ncases);
  /* a control too large to copy at the frame's resolution is matched on a coarser
   * level (at most 4096 x 4096 px) and the frame downscaled alike */
  const double f_small = gr_place_features_frame_factor (0.5, 640, 640, 480);
  const double f_large = gr_place_features_frame_factor (0.5, 640, 40000, 30000);
  CHECK (f_small == 0.5, "frame factor %.4f on a small control", f_small);
  CHECK (f_large < 0.5 && 40000.0 * 30000.0 * (f_large / 0.5) * (f_large / 0.5) <=
      4096.0 * 4096.0, "frame factor %.4f on a 40000 x 30000 control", f_large);
  /* refused, and nothing from a frame smaller than a descriptor's support */
  GrFeaturePlace fp;
  CHECK (gr_place_features_match (pf, &red, 0.0, &red, CW, CH, 0, &fp) == GR_ERR_INVALID,
      "scale 0 refused");
  CHECK (gr_place_features_match (NULL, &red, 1.0, &red, CW, CH, 0, &fp) == GR_ERR_INVALID,
      "no engine refused");
  GrPlaneF tiny;
  CHECK (gr_plane_alloc (&tiny, 12, 9, false), "alloc");
  for (int i = 0; i < 12 * 9; i++)
    tiny.data[i] = (float) (i * 37 % 255);
  CHECK (gr_place_features_match (pf, &red, 1.0, &tiny, 12, 9, 0, &fp) == GR_OK &&
      fp.inliers == 0, "a 12 x 9 frame: %d inliers", fp.inliers);
  gr_plane_clear (&tiny);
  gr_place_features_free (pf);
  gr_synth_image_free (&img);
}

typedef enum { PRIOR_NONE, PRIOR_POSITION, PRIOR_FULL } PriorKind;

/* Frames at random heading, ground resolution, tilt and lens, another band and tone:
 * GrLocalize must put the frame centre within a few control pixels, heading within a
 * few degrees and scale within a few percent, or flag it. */
static void
test_localize_frames (PriorKind kind, int frames, double smin, double smax, uint64_t seed)
{
  enum { CW = 360, CH = 270, W = 128, H = 96 };
  GrSynthImage img;
  make_control (&img, CW, CH, 91, 0.0);
  GrPlaneF red = gr_synth_image_plane (&img, 0), green = gr_synth_image_plane (&img, 1);
  GrStatus st;
  char e[256] = "";
  GrLocalize *loc = gr_localize_new (GR_BACKEND_CPU, -1, &st, e, sizeof e);
  CHECK (loc && gr_localize_set_control (loc, &red, e, sizeof e) == GR_OK, "%s", e);
  GrLocalizeParams lp;
  gr_localize_params_init (&lp);
  lp.scale_min = smin;
  lp.scale_max = smax;
  GrSynthRng rng;
  gr_synth_rng_init (&rng, seed);
  int good = 0, flagged = 0, wrong_unflagged = 0;
  for (int i = 0; i < frames; i++) {
    GrSynthCamera cam = { 0 };
    cam.heading_deg = gr_synth_rng_range (&rng, 0, 360);
    cam.scale = exp (gr_synth_rng_range (&rng, log (smin), log (smax)));
    cam.pitch_deg = gr_synth_rng_range (&rng, -10, 10);
    cam.roll_deg = gr_synth_rng_range (&rng, -10, 10);
    cam.focal = 1.1 * W;
    cam.lens.k1 = gr_synth_rng_range (&rng, -0.1, 0.05);
    const double foot = cam.scale * hypot (W, H) * 0.6;
    cam.aim_x = gr_synth_rng_range (&rng, foot, CW - foot);
    cam.aim_y = gr_synth_rng_range (&rng, foot, CH - foot);
    if (!(cam.aim_x < CW - foot && cam.aim_y < CH - foot)) {
      i--;
      continue;
    }
    double hc[9];
    gr_synth_camera_homography (&cam, W, H, hc);
    GrPlaneF f;
    CHECK (gr_synth_cut_camera (&green, &cam, W, H, (int) ceil (cam.scale), &f) == GR_OK,
        "cut");
    GrSynthTone t;
    gr_synth_tone_init (&t, GR_SYNTH_TONE_GAMMA, seed + i);
    gr_synth_tone_apply (&t, &f, 255.0);
    gr_synth_add_noise (&f, 3.0, 255.0, seed + i);

    double tx, ty;
    truth_apply (&cam, hc, W, H, 0.5 * W, 0.5 * H, &tx, &ty);
    GrLocalizePrior pr = { 0 };
    if (kind != PRIOR_NONE) {
      pr.has_position = true;
      pr.x = tx + gr_synth_rng_gauss (&rng) * 10.0;
      pr.y = ty + gr_synth_rng_gauss (&rng) * 10.0;
      pr.position_sigma = 10.0;
    }
    if (kind == PRIOR_FULL) {
      pr.has_heading = true;
      pr.heading_deg = cam.heading_deg + gr_synth_rng_gauss (&rng) * 10.0;
      pr.heading_sigma_deg = 10.0;
      pr.has_scale = true;
      pr.scale = cam.scale * (1.0 + 0.1 * gr_synth_rng_gauss (&rng));
      pr.scale_sigma = 0.1;
    }
    GrLocalizeResult r;
    CHECK (gr_localize_run (loc, &f, kind == PRIOR_NONE ? NULL : &pr, &lp, &r, e, sizeof e)
        == GR_OK, "run: %s", e);
    /* the truth's heading and scale at the frame centre */
    double ux0, uy0, ux1, uy1, vx0, vy0, vx1, vy1;
    truth_apply (&cam, hc, W, H, 0.5 * W - 1.0, 0.5 * H, &ux0, &uy0);
    truth_apply (&cam, hc, W, H, 0.5 * W + 1.0, 0.5 * H, &ux1, &uy1);
    truth_apply (&cam, hc, W, H, 0.5 * W, 0.5 * H - 1.0, &vx0, &vy0);
    truth_apply (&cam, hc, W, H, 0.5 * W, 0.5 * H + 1.0, &vx1, &vy1);
    double true_heading = atan2 (vx0 - vx1, vy1 - vy0) * 180.0 / M_PI;
    true_heading = true_heading < 0 ? true_heading + 360.0 : true_heading;
    const double true_scale = sqrt (fabs ((ux1 - ux0) * (vy1 - vy0) -
            (vx1 - vx0) * (uy1 - uy0))) / 2.0;
    const double dpos = hypot (r.x - tx, r.y - ty) / true_scale;   /* frame pixels */
    const double dhead = angle_diff (r.heading_deg, true_heading);
    const double dscale = fabs (log (r.scale / true_scale));
    /* what the fine registration takes in: a few pixels, degrees, percent */
    const bool ok = dpos < 6.0 && dhead < 3.0 && dscale < 0.08;
    const unsigned bad_flags = GR_LOCALIZE_AMBIGUOUS | GR_LOCALIZE_LOW_OVERLAP |
        GR_LOCALIZE_IMPLAUSIBLE | GR_LOCALIZE_NO_OVERLAP | GR_LOCALIZE_AT_BORDER;
    good += ok;
    flagged += (r.flags & bad_flags) != 0;
    wrong_unflagged += !ok && !(r.flags & bad_flags);
    if (getenv ("GEOREG_TEST_VERBOSE") || !ok)
      printf ("  prior %d frame %d: heading %.1f scale %.3f -> %.1f %.3f, centre off %.2f "
          "frame px, score %.4f ratio %.3f overlap %.2f flags 0x%x, %d searches%s\n",
          kind, i, true_heading, true_scale, r.heading_deg, r.scale, dpos, r.score,
          r.peak_ratio, r.overlap, r.flags, r.searches, ok ? "" : "  WRONG");
    gr_synth_plane_free (&f);
  }
  printf ("localize, prior %d: %d/%d within 6 frame px, 3 deg, 8%%; %d flagged; %d wrong "
      "without a flag\n", kind, good, frames, flagged, wrong_unflagged);
  CHECK (good >= frames - 1, "prior %d: %d/%d localized", kind, good, frames);
  CHECK (wrong_unflagged == 0, "prior %d: %d wrong results without a flag", kind,
      wrong_unflagged);
  gr_localize_free (loc);
  gr_synth_image_free (&img);
}

/* gr_localize_run_downscaled's source in the test: the frame's downscales made on the
 * host (as a GPU source must give them: gr_plane_downscale's planes), counted; `wrong`
 * gives a plane one pixel too wide. */
typedef struct {
  const GrPlaneF *frame;
  int calls;
  bool wrong;
} HostSource;

static GrStatus
host_downscale (void *user, double scale, GrPlaneF *out, char *errbuf, size_t errlen)
{
  HostSource *hs = user;
  (void) errbuf;
  (void) errlen;
  hs->calls++;
  if (hs->wrong) {
    const int w = (int) fmax (1.0, floor (hs->frame->width * scale + 0.5)) + 1;
    const int h = (int) fmax (1.0, floor (hs->frame->height * scale + 0.5));
    return gr_plane_alloc (out, w, h, false) ? GR_OK : GR_ERR_NOMEM;
  }
  return gr_plane_downscale (hs->frame, scale, out);
}

/* The w x h rectangle of src at (x0, y0) as a plane of its own (no mask) */
static void
crop_plane (const GrPlaneF *src, int x0, int y0, int w, int h, GrPlaneF *out)
{
  gr_synth_plane_alloc (out, w, h, false);
  for (int y = 0; y < h; y++)
    memcpy (out->data + (size_t) y * w, src->data + (size_t) (y + y0) * src->stride + x0,
        sizeof (float) * w);
}

/* Frames hanging over the control's edge: cut from a larger image whose centre is the
 * control, so the part beyond the edge holds real (unseen) ground, as in a flight. */
static void
test_over_the_edge (void)
{
  enum { BW = 520, BH = 400, OX = 100, OY = 80, CW = 320, CH = 240, W = 128, H = 96 };
  GrSynthImage big;
  make_control (&big, BW, BH, 23, 0.0);
  GrPlaneF red = gr_synth_image_plane (&big, 0), green = gr_synth_image_plane (&big, 1);
  GrPlaneF ctl;
  crop_plane (&red, OX, OY, CW, CH, &ctl);
  GrStatus st;
  char e[256] = "";
  GrLocalize *loc = gr_localize_new (GR_BACKEND_CPU, -1, &st, e, sizeof e);
  CHECK (loc && gr_localize_set_control (loc, &ctl, e, sizeof e) == GR_OK, "%s", e);
  GrLocalizeParams lp;
  gr_localize_params_init (&lp);
  GrSynthRng rng;
  gr_synth_rng_init (&rng, 8);
  int good = 0, wrong_unflagged = 0;
  const int frames = 4;
  for (int i = 0; i < frames; i++) {
    /* the frame centre 0.1 .. 0.25 frame widths inside one of the four edges: about
     * a quarter to two fifths of the frame lies beyond it */
    const double in = gr_synth_rng_range (&rng, 0.1, 0.25) * W;
    const double along = gr_synth_rng_range (&rng, 0.3, 0.7);
    double ax, ay;
    switch (i % 4) {
      case 0: ax = OX + in; ay = OY + along * CH; break;
      case 1: ax = OX + CW - in; ay = OY + along * CH; break;
      case 2: ax = OX + along * CW; ay = OY + in; break;
      default: ax = OX + along * CW; ay = OY + CH - in; break;
    }
    GrSynthCamera cam = { .aim_x = ax, .aim_y = ay, .scale = 1.0,
      .heading_deg = gr_synth_rng_range (&rng, 0, 360) };
    GrPlaneF f;
    gr_synth_cut_camera (&green, &cam, W, H, 1, &f);
    gr_synth_add_noise (&f, 3.0, 255.0, i);
    GrLocalizePrior pr = { .has_position = true, .x = ax - OX + 0.5 + 8.0,
      .y = ay - OY + 0.5 - 6.0, .position_sigma = 10.0, .has_scale = true, .scale = 1.0,
      .scale_sigma = 0.05 };
    GrLocalizeResult r, rd;
    CHECK (gr_localize_run (loc, &f, &pr, &lp, &r, e, sizeof e) == GR_OK, "%s", e);
    /* the same search through a source of downscales (nmilocalize's CUDA path reads
     * a frame that way from the GPU): the same result, bit for bit */
    HostSource hs = { &f, 0, false };
    CHECK (gr_localize_run_downscaled (loc, f.width, f.height, gr_plane_count_valid (&f),
            host_downscale, &hs, &pr, &lp, &rd, e, sizeof e) == GR_OK, "%s", e);
    CHECK (hs.calls > 0 && !memcmp (r.h, rd.h, sizeof r.h) && r.flags == rd.flags &&
        r.searches == rd.searches && (r.score == rd.score || (isnan (r.score) &&
                isnan (rd.score))), "frame %d: from downscales: flags 0x%x/0x%x, "
        "%d calls", i, r.flags, rd.flags, hs.calls);
    if (i == 0) {
      /* a borrowed control (gr_localize_set_control_ref: nmilocalize's windows and
       * shared control) searches as the copied one; a bad plane leaves no control */
      GrLocalize *ref = gr_localize_new (GR_BACKEND_CPU, -1, &st, e, sizeof e);
      GrLocalizeResult rr;
      CHECK (ref && gr_localize_set_control_ref (ref, &ctl, e, sizeof e) == GR_OK &&
          gr_localize_run (ref, &f, &pr, &lp, &rr, e, sizeof e) == GR_OK &&
          !memcmp (r.h, rr.h, sizeof r.h) && r.flags == rr.flags, "borrowed control: "
          "%s", e);
      GrPlaneF none = { 0 };
      CHECK (gr_localize_set_control_ref (ref, &none, e, sizeof e) == GR_ERR_INVALID &&
          gr_localize_run (ref, &f, &pr, &lp, &rr, e, sizeof e) == GR_ERR_INVALID,
          "a bad borrowed plane leaves no control");
      gr_localize_free (ref);
      HostSource bad = { &f, 0, true };
      CHECK (gr_localize_run_downscaled (loc, f.width, f.height, 1, host_downscale, &bad,
              &pr, &lp, &rd, e, sizeof e) == GR_ERR_INVALID, "a source of the wrong "
          "size refused");
      CHECK (gr_localize_run_downscaled (loc, f.width, f.height, (size_t) f.width *
              f.height + 1, host_downscale, &hs, &pr, &lp, &rd, e, sizeof e) ==
          GR_ERR_INVALID, "more valid pixels than the frame has refused");
      CHECK (gr_localize_run_downscaled (loc, f.width, f.height, 0, host_downscale, &hs,
              &pr, &lp, &rd, e, sizeof e) == GR_OK &&
          rd.flags == GR_LOCALIZE_NO_VALID_PIXELS, "no valid pixel: flagged");
    }
    double dh = fmod (fabs (r.heading_deg - cam.heading_deg), 360.0);
    dh = dh > 180 ? 360 - dh : dh;
    const double dpos = hypot (r.x - (ax - OX + 0.5), r.y - (ay - OY + 0.5));
    const bool ok = dpos < 4.0 && dh < 3.0;
    good += ok;
    const unsigned bad = GR_LOCALIZE_AMBIGUOUS | GR_LOCALIZE_LOW_OVERLAP |
        GR_LOCALIZE_AT_BORDER | GR_LOCALIZE_IMPLAUSIBLE;
    wrong_unflagged += !ok && !(r.flags & bad);
    if (getenv ("GEOREG_TEST_VERBOSE") || !ok)
      printf ("  over the edge %d: centre off %.2f px, heading off %.1f, overlap %.2f, "
          "flags 0x%x%s\n", i, dpos, dh, r.overlap, r.flags, ok ? "" : "  WRONG");
    gr_synth_plane_free (&f);
  }
  printf ("frames hanging over the control's edge: %d/%d placed\n", good, frames);
  CHECK (good >= frames - 1 && wrong_unflagged == 0, "over the edge: %d/%d, %d unflagged",
      good, frames, wrong_unflagged);
  gr_synth_plane_free (&ctl);
  gr_synth_image_free (&big);
  gr_localize_free (loc);
}

/* Bad input: clear errors or documented flags, never a crash. */
static void
test_bad_input (void)
{
  GrStatus st;
  char e[256] = "";
  GrLocalize *loc = gr_localize_new (GR_BACKEND_CPU, -1, &st, e, sizeof e);
  CHECK (loc && gr_localize_backend (loc) == GR_BACKEND_CPU, "new: %s", e);
  GrPlaneF f;
  gr_synth_plane_alloc (&f, 64, 48, true);
  for (int i = 0; i < 64 * 48; i++)
    f.data[i] = (float) (i % 7);
  GrLocalizeResult r;
  GrRefineResult rr;
  double h[9] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 };
  CHECK (gr_localize_run (loc, &f, NULL, NULL, &r, e, sizeof e) == GR_ERR_INVALID &&
      strstr (e, "no control"), "no control: %s", e);
  CHECK (gr_localize_refine (loc, &f, h, NULL, &rr, e, sizeof e) == GR_ERR_INVALID,
      "refine without control");
  GrSynthImage img;
  make_control (&img, 200, 150, 5, 0.0);
  GrPlaneF red = gr_synth_image_plane (&img, 0);
  CHECK (gr_localize_set_control (loc, &red, e, sizeof e) == GR_OK, "%s", e);
  CHECK (gr_localize_run (loc, NULL, NULL, NULL, &r, e, sizeof e) == GR_ERR_INVALID,
      "NULL frame");
  GrLocalizeParams lp;
  gr_localize_params_init (&lp);
  lp.levels = 1;
  CHECK (gr_localize_run (loc, &f, NULL, &lp, &r, e, sizeof e) == GR_ERR_INVALID,
      "bad params");
  lp.levels = 32;
  lp.coarse_levels = 257;
  CHECK (gr_localize_run (loc, &f, NULL, &lp, &r, e, sizeof e) == GR_ERR_INVALID,
      "bad coarse levels");
  lp.coarse_levels = 24;
  /* a wholly masked frame: a flag, no position */
  memset (f.mask, 0, 64 * 48);
  CHECK (gr_localize_run (loc, &f, NULL, NULL, &r, e, sizeof e) == GR_OK &&
      r.flags == GR_LOCALIZE_NO_VALID_PIXELS && isnan (r.x) && isnan (r.h[0]),
      "masked frame: flags 0x%x", r.flags);
  /* a frame far larger than the control at the only scale allowed: no overlap */
  memset (f.mask, 1, 64 * 48);
  lp.levels = 32;
  lp.scale_min = lp.scale_max = 40.0;
  CHECK (gr_localize_run (loc, &f, NULL, &lp, &r, e, sizeof e) == GR_OK &&
      (r.flags & GR_LOCALIZE_NO_OVERLAP) && isnan (r.x), "too large: flags 0x%x", r.flags);
  /* refine from a non-finite or collapsed start: flagged, not an error */
  h[0] = NAN;
  CHECK (gr_localize_refine (loc, &f, h, NULL, &rr, e, sizeof e) == GR_OK &&
      (rr.flags & GR_REFINE_LOW_INLIERS), "NAN start: 0x%x", rr.flags);
  const double sliver[9] = { 0.001, 0, 10, 0, 0.001, 10, 0, 0, 1 };
  CHECK (gr_localize_refine (loc, &f, sliver, NULL, &rr, e, sizeof e) == GR_OK &&
      (rr.flags & GR_REFINE_LOW_INLIERS), "sliver start: 0x%x", rr.flags);
  gr_synth_plane_free (&f);
  gr_synth_image_free (&img);
  gr_localize_free (loc);
}

/* gr_localize_set_control_range: a window of the control, searched with the range the
 * whole control gives, places frames as the whole control does (nmilocalize's windows,
 * issue 18), and bad ranges are refused */
static void
test_control_range (void)
{
  enum { CW = 640, CH = 480, OX = 96, OY = 64, WW = 448, WH = 352, W = 160, H = 120 };
  GrSynthImage img;
  make_control (&img, CW, CH, 31, 0.0);
  GrPlaneF red = gr_synth_image_plane (&img, 0), green = gr_synth_image_plane (&img, 1);
  GrPlaneF win;
  crop_plane (&red, OX, OY, WW, WH, &win);
  double lo, hi;
  CHECK (gr_plane_value_range (&red, GR_BINS_PERCENTILE, 8, 1.0, 99.0, &lo, &hi) == GR_OK
      && lo < hi, "percentiles");
  GrStatus st;
  char e[256] = "";
  GrLocalize *whole = gr_localize_new (GR_BACKEND_CPU, -1, &st, e, sizeof e);
  GrLocalize *part = gr_localize_new (GR_BACKEND_CPU, -1, &st, e, sizeof e);
  CHECK (whole && part && gr_localize_set_control_range (whole, lo, hi) == GR_OK &&
      gr_localize_set_control (whole, &red, e, sizeof e) == GR_OK &&
      gr_localize_set_control_ref (part, &win, e, sizeof e) == GR_OK &&
      gr_localize_set_control_range (part, lo, hi) == GR_OK, "setup: %s", e);
  CHECK (gr_localize_set_control_range (part, NAN, 1.0) == GR_ERR_INVALID &&
      gr_localize_set_control_range (part, 0.0, INFINITY) == GR_ERR_INVALID &&
      gr_localize_set_control_range (NULL, 0.0, 1.0) == GR_ERR_INVALID,
      "non-finite ranges refused");
  GrLocalizeParams lp;
  gr_localize_params_init (&lp);
  GrSynthRng rng;
  gr_synth_rng_init (&rng, 21);
  int same = 0;
  const int frames = 3;
  GrPlaneF last = { 0 };
  GrLocalizePrior last_prior = { 0 };
  for (int i = 0; i < frames; i++) {
    GrSynthCamera cam = { .aim_x = gr_synth_rng_range (&rng, 250, 390),
      .aim_y = gr_synth_rng_range (&rng, 190, 290), .scale = gr_synth_rng_range (&rng,
          0.8, 1.2), .heading_deg = gr_synth_rng_range (&rng, 0, 360) };
    GrPlaneF f;
    gr_synth_cut_camera (&green, &cam, W, H, 2, &f);
    gr_synth_add_noise (&f, 3.0, 255.0, 40 + i);
    GrLocalizePrior pr = { .has_position = true, .x = cam.aim_x + 6.0,
      .y = cam.aim_y - 4.0, .position_sigma = 8.0, .has_heading = true,
      .heading_deg = cam.heading_deg + 5.0, .heading_sigma_deg = 8.0, .has_scale = true,
      .scale = cam.scale * 1.05, .scale_sigma = 0.08 };
    GrLocalizePrior pw = pr;
    pw.x -= OX;
    pw.y -= OY;
    GrLocalizeResult rw, rp;
    CHECK (gr_localize_run (whole, &f, &pr, &lp, &rw, e, sizeof e) == GR_OK &&
        gr_localize_run (part, &f, &pw, &lp, &rp, e, sizeof e) == GR_OK, "%s", e);
    double dh = fmod (fabs (rw.heading_deg - rp.heading_deg), 360.0);
    dh = dh > 180 ? 360 - dh : dh;
    const double dpos = hypot (rw.x - (rp.x + OX), rw.y - (rp.y + OY));
    /* the same flags, except whether any second peak was found: the window's levels
     * are sampled on another grid, and a faint second place (not AMBIGUOUS) may show
     * in one map and not the other (frame 0 with the coarse size at 24 grey levels) */
    const unsigned info = GR_LOCALIZE_NO_SECOND_PEAK;
    const bool ok = dpos < 0.5 && dh < 0.5 && fabs (rw.scale / rp.scale - 1.0) < 0.01 &&
        (rw.flags & ~info) == (rp.flags & ~info);
    same += ok;
    if (getenv ("GEOREG_TEST_VERBOSE") || !ok)
      printf ("  control range, frame %d: whole (%.2f, %.2f) %.2f deg %.4f flags 0x%x; "
          "window (%.2f, %.2f) %.2f deg %.4f flags 0x%x\n", i, rw.x, rw.y,
          rw.heading_deg, rw.scale, rw.flags, rp.x + OX, rp.y + OY, rp.heading_deg,
          rp.scale, rp.flags);
    gr_synth_plane_free (&last);
    last = f;
    last_prior = pw;
  }
  printf ("a window with the whole control's range: %d of %d frames placed as on the "
      "whole control\n", same, frames);
  CHECK (same == frames, "window against whole: %d of %d the same", same, frames);
  /* the range is what the levels come from: one below every value makes the control
   * one flat level, and the frame it placed is no longer placed (or flagged) */
  GrLocalizeResult rf, rb;
  const unsigned doubt = GR_LOCALIZE_AMBIGUOUS | GR_LOCALIZE_NO_OVERLAP |
      GR_LOCALIZE_AT_BORDER | GR_LOCALIZE_LOW_OVERLAP;
  CHECK (gr_localize_set_control_range (part, -2.0, -1.0) == GR_OK &&
      gr_localize_run (part, &last, &last_prior, &lp, &rf, e, sizeof e) == GR_OK &&
      gr_localize_set_control_range (part, 1.0, 1.0) == GR_OK &&
      gr_localize_run (part, &last, &last_prior, &lp, &rb, e, sizeof e) == GR_OK, "%s",
      e);
  CHECK ((rf.flags & doubt) || !(hypot (rf.x - rb.x, rf.y - rb.y) < 2.0),
      "a flat range still placed the frame unflagged: flags 0x%x, (%.2f, %.2f) against "
      "(%.2f, %.2f)", rf.flags, rf.x, rf.y, rb.x, rb.y);
  CHECK (!(rb.flags & doubt), "back to the percentiles: flags 0x%x", rb.flags);
  gr_synth_plane_free (&last);
  gr_localize_free (whole);
  gr_localize_free (part);
  gr_synth_plane_free (&win);
  gr_synth_image_free (&img);
}

int
main (void)
{
  test_bad_input ();
  test_control_range ();
  test_over_the_edge ();
  test_overlap_bias ();
  test_feature_places ();
  test_localize_frames (PRIOR_FULL, 4, 0.5, 2.0, 11);
  test_localize_frames (PRIOR_POSITION, 2, 0.7, 1.4, 12);
  test_localize_frames (PRIOR_NONE, 2, 0.7, 1.4, 13);
  return CHECK_DONE ();
}
