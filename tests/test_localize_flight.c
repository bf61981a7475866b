/* Accuracy of coarse localization (GrLocalize) + fine registration (gr_localize_refine:
 * nmi_sparse + fit) on synthesized drone frames, measured over every pixel of the frame
 * against the true mapping, never by the fit's own residual.
 *
 * Frames: uniformly random heading, ground-resolution ratio (scale_min..scale_max
 * control px per frame px, log-uniform), pitch and roll up to 15 degrees, Brown-Conrady
 * lens, another band through a tone curve, noise.  The lens is taken as known (the
 * camera model of the flight): frames are undistorted before the search, and the error
 * is measured on the undistorted frame's pixels, whose truth is the camera homography.
 * Priors: "full" (position sigma, heading 10 deg, scale 10%, each perturbed by its
 * sigma), "position" (position only) and "none".
 *
 * Control: the procedural control (cpu suite), or $GEOREG_DATA/aukerman.png when
 * GEOREG_LOCALIZE_CONTROL=aukerman (data suite; skipped without the file).
 * Environment: GEOREG_LOCALIZE_FRAMES (per prior kind), GEOREG_LOCALIZE_PRIORS (comma
 * list of full,position,none), GEOREG_LOCALIZE_BACKEND (cpu|cuda),
 * GEOREG_LOCALIZE_SCALE_MIN/MAX, GEOREG_LOCALIZE_WIDTH/HEIGHT (frame size, 320 x 240;
 * 3840 x 2160 with scales near 0.25 times the 4K sweep), GEOREG_LOCALIZE_REQUIRE (per mille within 0.5 px,
 * default 0: report only), GEOREG_LOCALIZE_SEED (1000: the frames' draw; tune on one,
 * report on another), GEOREG_LOCALIZE_ONLY (a comma list of frame numbers as the log
 * numbers them from 1: the other frames are drawn, not run, to replay those of a long
 * run), GEOREG_LOCALIZE_PEAKS / GEOREG_LOCALIZE_SHORTLIST /
 * GEOREG_LOCALIZE_COARSE_LEVELS (the sweep's coarse_peaks, shortlist and the coarse
 * size's grey levels instead of the defaults, to compare), GEOREG_LOCALIZE_FEATURE_PLACES,
 * GEOREG_LOCALIZE_MIN_FINE_RATIO (a large one makes every sweep doubtful, so that the
 * descriptors' step runs on every frame: its cost), GEOREG_TEST_VERBOSE.
 * Always required: no result more than 2 px wrong without a flag.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fit.h"
#include "image.h"
#include "localize.h"
#include "raster.h"
#include "synth.h"
#include "test_check.h"
#include "flight_truth.h"

static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double
env_double (const char *name, double dflt)
{
  const char *v = getenv (name);
  return v && *v ? atof (v) : dflt;
}

/* Whether n is in the comma list s ("14,21"). */
static bool
in_list (const char *s, int n)
{
  while (*s) {
    char *end;
    const long v = strtol (s, &end, 10);
    if (end == s)
      return false;
    if (v == n)
      return true;
    s = *end == ',' ? end + 1 : end;
  }
  return false;
}

/* The pinhole frame of a distorted one, through the known lens. */
static void
undistort_frame (const GrPlaneF *in, const GrSynthCamera *cam, GrPlaneF *out)
{
  gr_synth_plane_alloc (out, in->width, in->height, true);
  for (int v = 0; v < in->height; v++)
    for (int u = 0; u < in->width; u++) {
      double ud, vd;
      gr_synth_lens_distort (cam, in->width, in->height, u, v, &ud, &vd);
      const size_t o = (size_t) v * in->width + u;
      out->mask[o] = gr_synth_sample_bilinear (in, ud, vd, &out->data[o]);
    }
}

typedef enum { PRIOR_FULL, PRIOR_POSITION, PRIOR_NONE } PriorKind;
static const char *const prior_names[] = { "full", "position", "none" };

int
main (void)
{
  setvbuf (stdout, NULL, _IOLBF, 0);    /* progress shows in logs of long runs */
  const char *which = getenv ("GEOREG_LOCALIZE_CONTROL");
  const bool aukerman = which && !strcmp (which, "aukerman");
  const char *backend_s = getenv ("GEOREG_LOCALIZE_BACKEND");
  const GrBackend backend = backend_s && !strcmp (backend_s, "cuda") ? GR_BACKEND_CUDA :
      GR_BACKEND_CPU;
  if (backend == GR_BACKEND_CUDA && gr_cuda_device_count () <= 0) {
    printf ("SKIP: GEOREG_LOCALIZE_BACKEND=cuda and no usable CUDA device\n");
    return 77;
  }
  char e[512] = "";
  GrPlaneF ctl, src;          /* control band, and the band frames are cut from */
  GrRaster r1, r2;
  GrSynthImage img;
  memset (&img, 0, sizeof img);
  memset (&r1, 0, sizeof r1);
  memset (&r2, 0, sizeof r2);
  double ctl_gsd;             /* metres per control pixel, for the 10 m prior */
  if (aukerman) {
    const char *data = getenv ("GEOREG_DATA");
    if (!data || !*data) {
      printf ("SKIP: GEOREG_DATA is not set (a folder holding aukerman.png)\n");
      return 77;
    }
    char path[4096];
    snprintf (path, sizeof path, "%s/aukerman.png", data);
    if (gr_raster_load (path, 1, &r1, e, sizeof e) != GR_OK ||
        gr_raster_load (path, 2, &r2, e, sizeof e) != GR_OK) {
      printf ("SKIP: %s\n", e);
      return 77;
    }
    ctl = r1.plane;
    src = r2.plane;
    ctl_gsd = 0.5;            /* not georeferenced here: taken as 0.5 m per pixel */
  } else {
    GrSynthControlParams cp;
    gr_synth_control_params_init (&cp);
    cp.width = 768;
    cp.height = 576;
    cp.seed = 2026;
    cp.depth = 8;
    if (gr_synth_control_generate (&cp, &img, e, sizeof e) != GR_OK) {
      fprintf (stderr, "control: %s\n", e);
      return 1;
    }
    ctl = gr_synth_image_plane (&img, 0);
    src = gr_synth_image_plane (&img, 1);
    ctl_gsd = cp.pixel_size;
  }
  const int W = (int) env_double ("GEOREG_LOCALIZE_WIDTH", 320);
  const int H = (int) env_double ("GEOREG_LOCALIZE_HEIGHT", 240);
  const int frames = (int) env_double ("GEOREG_LOCALIZE_FRAMES", 1);
  const double smin = env_double ("GEOREG_LOCALIZE_SCALE_MIN", aukerman ? 0.25 : 0.5);
  const double smax = env_double ("GEOREG_LOCALIZE_SCALE_MAX", aukerman ? 4.0 : 2.0);
  const int require = (int) env_double ("GEOREG_LOCALIZE_REQUIRE", 0);
  const char *priors = getenv ("GEOREG_LOCALIZE_PRIORS");
  priors = priors && *priors ? priors : "full,position,none";
  const bool verbose = getenv ("GEOREG_TEST_VERBOSE") != NULL;

  GrStatus st;
  GrLocalize *loc = gr_localize_new (backend, -1, &st, e, sizeof e);
  if (!loc || gr_localize_set_control (loc, &ctl, e, sizeof e) != GR_OK) {
    fprintf (stderr, "localize: %s\n", e);
    return 1;
  }
  GrLocalizeParams lp;
  gr_localize_params_init (&lp);
  lp.scale_min = smin;
  lp.scale_max = smax;
  lp.coarse_peaks = (int) env_double ("GEOREG_LOCALIZE_PEAKS", lp.coarse_peaks);
  lp.shortlist = (int) env_double ("GEOREG_LOCALIZE_SHORTLIST", lp.shortlist);
  lp.verify = (int) env_double ("GEOREG_LOCALIZE_VERIFY", lp.verify);
  lp.coarse_levels = (int) env_double ("GEOREG_LOCALIZE_COARSE_LEVELS", lp.coarse_levels);
  lp.feature_places = (int) env_double ("GEOREG_LOCALIZE_FEATURE_PLACES", lp.feature_places);
  lp.min_fine_ratio = env_double ("GEOREG_LOCALIZE_MIN_FINE_RATIO", lp.min_fine_ratio);
  const char *only = getenv ("GEOREG_LOCALIZE_ONLY");
  const unsigned bad_loc = GR_LOCALIZE_AMBIGUOUS | GR_LOCALIZE_LOW_OVERLAP |
      GR_LOCALIZE_IMPLAUSIBLE | GR_LOCALIZE_NO_OVERLAP | GR_LOCALIZE_NO_VALID_PIXELS |
      GR_LOCALIZE_AT_BORDER;

  for (int kind = PRIOR_FULL; kind <= PRIOR_NONE; kind++) {
    if (!strstr (priors, prior_names[kind]))
      continue;
    GrSynthRng rng;
    gr_synth_rng_init (&rng, (unsigned) env_double ("GEOREG_LOCALIZE_SEED", 1000) + kind);
    int within05 = 0, within2 = 0, flagged = 0, wrong_unflagged = 0, done = 0;
    int skipped = 0;              /* GEOREG_LOCALIZE_ONLY: drawn, not run */
    double worst_unflagged = 0.0;
    for (int tries = 0; done < frames && tries < 100 * frames; tries++) {
      GrSynthCamera cam = { 0 };
      cam.heading_deg = gr_synth_rng_range (&rng, 0, 360);
      cam.scale = exp (gr_synth_rng_range (&rng, log (smin), log (smax)));
      cam.pitch_deg = gr_synth_rng_range (&rng, -15, 15);
      cam.roll_deg = gr_synth_rng_range (&rng, -15, 15);
      cam.focal = gr_synth_rng_range (&rng, 0.9, 1.4) * W;
      cam.lens.k1 = gr_synth_rng_range (&rng, -0.15, 0.05);
      cam.lens.k2 = gr_synth_rng_range (&rng, -0.02, 0.02);
      cam.lens.p1 = gr_synth_rng_range (&rng, -0.002, 0.002);
      cam.lens.p2 = gr_synth_rng_range (&rng, -0.002, 0.002);
      cam.aim_x = gr_synth_rng_range (&rng, 0, ctl.width);
      cam.aim_y = gr_synth_rng_range (&rng, 0, ctl.height);
      GrPlaneF cut;
      if (!flight_cut_on_control (&src, &cam, W, H, &cut))
        continue;
      flight_tone_and_noise (&cut, done);
      GrPlaneF frame;
      undistort_frame (&cut, &cam, &frame);
      gr_synth_plane_free (&cut);
      double hp[9], truth[9];
      gr_synth_camera_homography (&cam, W, H, hp);
      to_corner (hp, truth);

      GrLocalizePrior pr;
      memset (&pr, 0, sizeof pr);
      const double pos_sigma = 10.0 / ctl_gsd;
      if (kind != PRIOR_NONE) {
        double hd, sc;
        gr_localize_prior_from_homography (&pr, truth, W, H, pos_sigma, 10.0, 0.1);
        gr_homography_heading_scale (truth, 0.5 * W, 0.5 * H, &hd, &sc);
        pr.x += pos_sigma * gr_synth_rng_gauss (&rng);
        pr.y += pos_sigma * gr_synth_rng_gauss (&rng);
        pr.heading_deg = hd + 10.0 * gr_synth_rng_gauss (&rng);
        pr.scale = sc * (1.0 + 0.1 * gr_synth_rng_gauss (&rng));
        if (kind == PRIOR_POSITION)
          pr.has_heading = pr.has_scale = false;
      }
      if (only && *only && !in_list (only, done + 1)) {
        /* replaying chosen frames: this one's draws are taken, it is not run */
        done++;
        skipped++;
        gr_synth_plane_free (&frame);
        continue;
      }
      GrLocalizeResult lr;
      memset (&lr, 0, sizeof lr);
      GrRefineResult rr;
      memset (&rr, 0, sizeof rr);
      const double t0 = now_ms ();
      st = gr_localize_run (loc, &frame, kind == PRIOR_NONE ? NULL : &pr, &lp, &lr, e,
          sizeof e);
      const double t1 = now_ms ();
      double t2 = t1;
      CHECK (st == GR_OK, "localize: %s", e);
      /* a searched scale stays within scale_min .. scale_max (the fine stage once
       * stepped a ninth of an octave beyond them) */
      if (st == GR_OK && kind == PRIOR_NONE && isfinite (lr.scale))
        CHECK (lr.scale >= smin * (1.0 - 1e-6) && lr.scale <= smax * (1.0 + 1e-6),
            "frame %d: scale %.4f outside the searched %.2f-%.2f", done + 1, lr.scale,
            smin, smax);
      double rms = INFINITY, mx = INFINITY;
      unsigned flags = lr.flags & bad_loc;
      if (st == GR_OK && isfinite (lr.h[0])) {
        st = gr_localize_refine (loc, &frame, lr.h, NULL, &rr, e, sizeof e);
        t2 = now_ms ();
        CHECK (st == GR_OK, "refine: %s", e);
        flags |= rr.flags;
        frame_error (rr.h, truth, W, H, &rms, &mx);
      } else {
        flags |= GR_LOCALIZE_NO_OVERLAP;
      }
      done++;
      within05 += rms <= 0.5;
      within2 += rms <= 2.0;
      flagged += flags != 0;
      if (rms > 2.0 && !flags) {
        wrong_unflagged++;
        worst_unflagged = fmax (worst_unflagged, rms);
      }
      if (verbose || (rms > 2.0 && !flags))
        printf ("  %s %d: heading %.1f scale %.3f pitch %.1f roll %.1f -> coarse %.1f %.3f "
            "(%d searches, flags 0x%x), refined %d/%d inliers, rms %.3f max %.3f px, "
            "flags 0x%x; localize %.0f ms (coarse %.0f with shortlist %.0f, fine %.0f; of "
            "which searches %.0f, templates %.0f, maps read %.0f, %d downscales %.0f, levels %.0f; "
            "%d feature places of %d "
            "scales %.0f), refine %.0f ms\n", prior_names[kind], done,
            cam.heading_deg, cam.scale, cam.pitch_deg, cam.roll_deg, lr.heading_deg, lr.scale,
            lr.searches, lr.flags, rr.inliers, rr.matches, rms, mx, flags, t1 - t0,
            lr.coarse_ms, lr.shortlist_ms, lr.fine_ms, lr.search_ms, lr.prepare_ms, lr.read_ms,
            lr.downscales, lr.downscale_ms, lr.levels_ms, lr.feature_places, lr.feature_scales,
            lr.feature_ms, t2 - t1);
      gr_synth_plane_free (&frame);
    }
    printf ("%s prior, %s control, scale %.2f-%.2f, %s: %d frames: %d within 0.5 px RMS, "
        "%d within 2 px, %d flagged, %d more than 2 px wrong without a flag\n",
        prior_names[kind], aukerman ? "aukerman" : "procedural", smin, smax,
        gr_backend_name (gr_localize_backend (loc)), done - skipped, within05, within2,
        flagged, wrong_unflagged);
    CHECK (done == frames, "%s: placed %d of %d frames", prior_names[kind], done, frames);
    CHECK (wrong_unflagged == 0, "%s: %d results more than 2 px wrong without a flag "
        "(worst %.2f px)", prior_names[kind], wrong_unflagged, worst_unflagged);
    if (require > 0)
      CHECK (within05 * 1000 >= require * (done - skipped), "%s: %d/%d within 0.5 px, need "
          "%d per mille", prior_names[kind], within05, done - skipped, require);
  }
  gr_localize_free (loc);
  gr_synth_image_free (&img);
  gr_raster_clear (&r1);
  gr_raster_clear (&r2);
  return CHECK_DONE ();
}
