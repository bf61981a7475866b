/* Issue 13's measurement through the elements: `nmilocalize ! nmiregister` at their
 * defaults (search=auto, use-pose=true) on frames synthesized from a georeferenced
 * control (UTM 17N through a world file and the crs property) at uniformly random
 * headings, ground-resolution ratios (log-uniform), pitch and roll up to 15 degrees,
 * another band through a tone curve and noise, each carrying a GstGeoregPoseMeta as
 * georegtelemetry or an autopilot would attach it, perturbed by realistic errors:
 *  - full: position 10 m (RMS, sigma 10 m), camera yaw 10 degrees, height 10%, pitch
 *    and roll 2 degrees, and the camera's intrinsics;
 *  - position: latitude/longitude and height only (no attitude);
 *  - none: no pose meta (the element's translation search, then its sweep);
 *  - wrongyaw: as full, but the yaw 180 degrees off (DJI's return-leg gimbal yaw): the
 *    element must find the prior wrong, sweep, and flag the disagreement (IMPLAUSIBLE);
 *    run on request (GEOREG_POSE_PRIORS) and in the gpu suite.
 * The error is measured over every pixel of the frame against the true mapping, never
 * by the fit's own residual.  Always required: no result more than 2 px wrong without
 * a flag.  Frames carry lens distortion (test_localize_flight's lenses: k1 -0.15 ..
 * 0.05, k2, p1, p2) and every pose meta the camera's intrinsics with the lens, as
 * georegtelemetry's calibration-location gives them (frames without a prior: a meta with
 * the intrinsics only); nmiregister undistorts its keypoints, and the error is taken
 * through the true lens and the one the result reports (GEOREG_POSE_LENS=0: pinhole).
 * GEOREG_POSE_PLACE=edge: frames beside the control's edge or its no-data (a no-data
 * rim on the procedural control): wholly on valid control, but the same camera with a
 * 30% wider field sees invalid control.  Each kind ends with a FLIGHTACC line (n,
 * within 0.5 px, flagged, wrong without a flag, median and worst RMS of the unflagged
 * results, ms per frame) for tools/gpu.sh flightacc.
 *
 * Control: the procedural control (cpu suite), or $GEOREG_DATA/aukerman.png when
 * GEOREG_POSE_CONTROL=aukerman (data suite; skipped without it).  Environment:
 * GEOREG_TEST_BACKEND (cpu|cuda), GEOREG_POSE_FRAMES (per prior kind; 100 for the
 * issue's figures), GEOREG_POSE_PRIORS (comma list of full,position,none),
 * GEOREG_POSE_SCALE_MIN/MAX (0.5-2; a larger maximum grows the procedural control with
 * it), GEOREG_POSE_SEED (4000: the frames' draw), GEOREG_POSE_FIRST (1: frames of the
 * draw numbered below it, as the log numbers them from 1, are drawn but not pushed, to
 * replay one frame of a long run), GEOREG_POSE_REQUIRE (per mille within 0.5 px for
 * full,position,none, e.g. 980,950,950; default: report only), GEOREG_POSE_SEARCH_MIN/MAX
 * (nmilocalize's scale-min / scale-max instead of its defaults, 0.25-4: a 4K frame
 * covers aukerman.png at about 0.2 at most), GEOREG_POSE_REGISTER_PROPS (more
 * nmiregister properties, e.g. "refine-window=31"), GEOREG_TEST_VERBOSE (each frame, with
 * nmilocalize's own time from its bus message).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gst/gst.h>
#include <glib/gstdio.h>
#include <gst/check/gstharness.h>

#include "test_check.h"

#if !GR_HAVE_GDAL
int
main (void)
{
  printf ("SKIP: built without GDAL\n");
  return 77;
}
#else
#include "camera.h"
#include "fit.h"
#include "geo.h"
#include "georeg-meta.h"
#include "georeg-pose-meta.h"
#include "nmiregister-meta.h"
#include "raster.h"
#include "synth.h"
#include "flight_truth.h"

static int W = 240, H = 180;

enum { PRIOR_FULL, PRIOR_POSITION, PRIOR_NONE, PRIOR_WRONG_YAW };
static const char *const prior_names[] = { "full", "position", "none", "wrongyaw" };

static double
env_double (const char *name, double dflt)
{
  const char *v = g_getenv (name);
  return v && *v ? atof (v) : dflt;
}

static void
set_value (GstGeoregPoseValue * v, double value, double sigma)
{
  v->value = value;
  v->sigma = sigma;
  v->have = TRUE;
}

/* The pose of the synthesized camera as telemetry, with errors drawn from rng: the
 * camera's position is the ground point under it (the optical axis meets the ground at
 * the aim point), in the convention of kernels/camera.h (roll of opposite sign to the
 * synthesizer's).  geo: control pixel corners -> UTM, whose grid north is true north
 * on the central meridian the control sits on. */
static void
set_intrinsics (GstGeoregPoseMeta * m, const GrCamera * gc, const GrSynthLens * lens)
{
  m->have_intrinsics = TRUE;
  m->image_width = W;
  m->image_height = H;
  m->fx = m->fy = gc->fx;
  m->cx = gc->cx;
  m->cy = gc->cy;
  /* the synthesizer's lens is OpenCV's model on the same normalized coordinates */
  m->k1 = lens->k1;
  m->k2 = lens->k2;
  m->k3 = lens->k3;
  m->p1 = lens->p1;
  m->p2 = lens->p2;
}

/* no prior, but a calibrated camera (georegtelemetry's calibration-location with no
 * telemetry): a pose meta with the intrinsics only */
static void
attach_lens_only (GstBuffer * buf, const GrSynthCamera * cam)
{
  GrCamera gc;
  gr_camera_init_focal (&gc, W, H, cam->focal, W);
  GstGeoregPoseMeta *m = gst_buffer_add_georeg_pose_meta (buf);
  m->sources = GST_GEOREG_POSE_SOURCE_CALIBRATION;
  set_intrinsics (m, &gc, &cam->lens);
}

static void
attach_pose (GstBuffer * buf, int kind, const GrSynthCamera * cam, const GrGeoRef * g,
    const double geo[6], double focal, GrSynthRng * rng)
{
  const double px_m = geo[1];
  GrCamera gc;
  gr_camera_init_focal (&gc, W, H, focal, W);
  const GrCameraPose cp = { cam->heading_deg, cam->pitch_deg, -cam->roll_deg,
    cam->scale * focal * px_m
  };
  double hg[9], de, dn;
  gr_camera_ground_homography (&gc, &cp, hg);
  gr_fit_apply (hg, gc.cx, gc.cy, &de, &dn);    /* aim point from nadir, metres */
  double mx = geo[0] + (cam->aim_x + 0.5) * geo[1] - de;
  double my = geo[3] + (cam->aim_y + 0.5) * geo[5] - dn;
  mx += 10.0 / G_SQRT2 * gr_synth_rng_gauss (rng);
  my += 10.0 / G_SQRT2 * gr_synth_rng_gauss (rng);
  gr_georef_map_to_lonlat (g, &mx, &my, 1);

  GstGeoregPoseMeta *m = gst_buffer_add_georeg_pose_meta (buf);
  m->sources = GST_GEOREG_POSE_SOURCE_APP;
  set_value (&m->latitude, my, 10.0);
  set_value (&m->longitude, mx, 10.0);
  set_value (&m->height_agl, cp.height_m * (1.0 + 0.1 * gr_synth_rng_gauss (rng)),
      0.1 * cp.height_m);
  if (kind == PRIOR_FULL || kind == PRIOR_WRONG_YAW) {
    const double off = kind == PRIOR_WRONG_YAW ? 180.0 : 0.0;
    set_value (&m->camera_yaw, fmod (cp.yaw_deg + off + 10.0 * gr_synth_rng_gauss (rng) +
            720.0, 360.0), 10.0);
    set_value (&m->camera_pitch, cp.pitch_deg + 2.0 * gr_synth_rng_gauss (rng), 2.0);
    set_value (&m->camera_roll, cp.roll_deg + 2.0 * gr_synth_rng_gauss (rng), 2.0);
    set_intrinsics (m, &gc, &cam->lens);
  } else if (cam->lens.k1 != 0.0 || cam->lens.k2 != 0.0 || cam->lens.p1 != 0.0 ||
      cam->lens.p2 != 0.0) {
    /* a calibrated camera: its intrinsics and lens whatever the attitude source */
    set_intrinsics (m, &gc, &cam->lens);
  } else {
    /* a focal length the element turns into intrinsics itself */
    set_value (&m->focal_length_35mm, focal / W * 0.8 * 43.27, 0.0);
  }
}

static int
cmp_double (const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

int
main (int argc, char **argv)
{
  setvbuf (stdout, NULL, _IOLBF, 0);
  gst_init (&argc, &argv);
  if (!g_strcmp0 (g_getenv ("GEOREG_TEST_BACKEND"), "cuda") &&
      gr_cuda_device_count () <= 0) {
    printf ("SKIP: GEOREG_TEST_BACKEND=cuda and no usable CUDA device\n");
    return 77;
  }
  /* GEOREG_POSE_PLACE=edge: frames beside the control's edge or its no-data (a
   * procedural control with a no-data rim); GEOREG_POSE_LENS=0: pinhole frames */
  const gboolean beside_edge = !g_strcmp0 (g_getenv ("GEOREG_POSE_PLACE"), "edge");
  const gboolean with_lens = g_strcmp0 (g_getenv ("GEOREG_POSE_LENS"), "0") != 0;
  const gchar *which = g_getenv ("GEOREG_POSE_CONTROL");
  const gboolean aukerman = which && !strcmp (which, "aukerman");
  char e[512] = "";
  GrPlaneF ctl, src;            /* control band, and the band frames are cut from */
  GrRaster r1 = { 0 }, r2 = { 0 };
  GrSynthImage img;
  memset (&img, 0, sizeof img);
  double px_m;
  if (aukerman) {
    const char *data = g_getenv ("GEOREG_DATA");
    if (!data || !*data) {
      printf ("SKIP: GEOREG_DATA is not set (a folder holding aukerman.png)\n");
      return 77;
    }
    gchar *path = g_build_filename (data, "aukerman.png", NULL);
    const gboolean ok = gr_raster_load (path, 1, &r1, e, sizeof e) == GR_OK &&
        gr_raster_load (path, 2, &r2, e, sizeof e) == GR_OK;
    g_free (path);
    if (!ok) {
      printf ("SKIP: %s\n", e);
      return 77;
    }
    ctl = r1.plane;
    src = r2.plane;
    px_m = 0.2;                 /* not georeferenced: given one here */
  } else {
    GrSynthControlParams cp;
    gr_synth_control_params_init (&cp);
    /* frames up to scale 2 fit the 768 x 576 control at any heading; wider draws
     * (the 0.25-4: GEOREG_POSE_SCALE_MAX=4) get a control grown with them, so
     * the coarsest frames can still be cut wholly from it at a diagonal heading (a
     * 240 x 180 frame at scale 4 spans about 1200 control px there) */
    const double smax_env = env_double ("GEOREG_POSE_SCALE_MAX", 2.0);
    const double grow = smax_env > 2.0 ? smax_env / 1.5 : 1.0;
    cp.width = (int) lround (768 * grow);
    cp.height = (int) lround (576 * grow);
    cp.seed = 2026;
    cp.depth = 8;
    /* frames beside no-data need some: an irregular rim */
    if (beside_edge)
      cp.nodata_border = 0.12;
    CHECK (gr_synth_control_generate (&cp, &img, e, sizeof e) == GR_OK, "control: %s", e);
    ctl = gr_synth_image_plane (&img, 0);
    src = gr_synth_image_plane (&img, 1);
    px_m = 0.2;
  }
  /* UTM 17N, the control's centre on the central meridian */
  const double geo[6] = { 500000.0 - 0.5 * ctl.width * px_m, px_m, 0.0,
    4570000.0 + 0.5 * ctl.height * px_m, 0.0, -px_m
  };
  GrGeoRef *g = NULL;
  CHECK (gr_georef_new (geo, "EPSG:32617", &g, e, sizeof e) == GR_OK, "georef: %s", e);
  gchar *dir = g_dir_make_tmp ("georeg-nmilocalize-pose-XXXXXX", NULL);
  gchar *path = g_build_filename (dir, "control.png", NULL);
  char *wld = gr_synth_world_file_path (path);
  const float *planes[1] = { ctl.data };
  CHECK (gr_synth_png_write (path, planes, 1, ctl.mask, ctl.width, ctl.height, 255.0, 8,
          e, sizeof e) == GR_OK, "png: %s", e);
  /* the world file names pixel centres */
  const double wgeo[6] = { geo[0] + 0.5 * geo[1], geo[1], 0.0, geo[3] + 0.5 * geo[5],
    0.0, geo[5]
  };
  CHECK (gr_synth_world_file_write (wld, wgeo, e, sizeof e) == GR_OK, "world file: %s", e);

  W = (int) env_double ("GEOREG_POSE_WIDTH", 240);
  H = (int) env_double ("GEOREG_POSE_HEIGHT", 180);
  const int frames = (int) env_double ("GEOREG_POSE_FRAMES", 4);
  const double smin = env_double ("GEOREG_POSE_SCALE_MIN", 0.5);
  const double smax = env_double ("GEOREG_POSE_SCALE_MAX", 2.0);
  const gchar *priors = g_getenv ("GEOREG_POSE_PRIORS");
  priors = priors && *priors ? priors : "full,position,none";
  int require[4] = { 0, 0, 0, 0 };
  if (g_getenv ("GEOREG_POSE_REQUIRE"))
    sscanf (g_getenv ("GEOREG_POSE_REQUIRE"), "%d,%d,%d,%d", &require[0], &require[1],
        &require[2], &require[3]);
  const gboolean verbose = g_getenv ("GEOREG_TEST_VERBOSE") != NULL;
  const int first = (int) env_double ("GEOREG_POSE_FIRST", 1);
  const gchar *be = g_getenv ("GEOREG_TEST_BACKEND") ? g_getenv ("GEOREG_TEST_BACKEND")
      : "cpu";
  /* the searched scales: the element's defaults unless asked */
  const double search_min = env_double ("GEOREG_POSE_SEARCH_MIN", 0.25);
  const double search_max = env_double ("GEOREG_POSE_SEARCH_MAX", 4.0);
  gchar *search_scales = g_getenv ("GEOREG_POSE_SEARCH_MIN") ||
      g_getenv ("GEOREG_POSE_SEARCH_MAX") ? g_strdup_printf ("scale-min=%g scale-max=%g",
      search_min, search_max) : g_strdup ("");
  /* GEOREG_POSE_REGISTER_PROPS: more nmiregister properties, to try a setting on the
   * same frames (the figures are taken at the defaults) */
  const gchar *reg_props = g_getenv ("GEOREG_POSE_REGISTER_PROPS");
  gchar *desc = g_strdup_printf ("nmilocalize control-location=\"%s\" crs=EPSG:32617 "
      "backend=%s %s ! nmiregister control-location=\"%s\" backend=%s %s", path, be,
      search_scales, path, be, reg_props ? reg_props : "");
  g_free (search_scales);
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  gchar *caps = g_strdup_printf ("video/x-raw,format=GRAY8,width=%d,height=%d,"
      "framerate=10/1", W, H);
  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  /* nmilocalize's result messages: its own time a frame, apart from nmiregister's */
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);

  const unsigned bad_loc = FLIGHT_DOUBTFUL_LOCALIZE_FLAGS;
  const unsigned bad_reg = FLIGHT_DOUBTFUL_REGISTER_FLAGS;

  for (int kind = PRIOR_FULL; kind <= PRIOR_WRONG_YAW && g; kind++) {
    if (!strstr (priors, prior_names[kind]))
      continue;
    GrSynthRng rng;
    /* GEOREG_POSE_SEED: another draw of frames (tune on one seed, report on another) */
    gr_synth_rng_init (&rng, (guint64) env_double ("GEOREG_POSE_SEED", 4000) + kind);
    int done = 0, within05 = 0, flagged = 0, wrong_unflagged = 0, prior_used = 0;
    int recovered = 0;          /* wrongyaw: right (<= 0.5 px) and IMPLAUSIBLE */
    int replay_skipped = 0;     /* frames below GEOREG_POSE_FIRST: drawn, not pushed */
    double worst = 0.0, ms = 0.0;
    /* the error of every unflagged result, for the median and the worst */
    double *good_rms = g_new0 (double, frames > 0 ? frames : 1);
    int ngood = 0;
    /* GEOREG_POSE_BUDGET_S: no new frame after that many seconds of this kind (the
     * GPU step's bound); the figures then cover the frames done, and say so */
    const double budget_s = env_double ("GEOREG_POSE_BUDGET_S", 0.0);
    const gint64 kind_t0 = g_get_monotonic_time ();
    gboolean out_of_time = FALSE;
    for (int tries = 0; done < frames && tries < 200 * frames; tries++) {
      if (budget_s > 0 && (g_get_monotonic_time () - kind_t0) / 1e6 > budget_s) {
        out_of_time = TRUE;
        break;
      }
      GrSynthCamera cam = { 0 };
      cam.heading_deg = gr_synth_rng_range (&rng, 0, 360);
      cam.scale = exp (gr_synth_rng_range (&rng, log (smin), log (smax)));
      cam.pitch_deg = gr_synth_rng_range (&rng, -15, 15);
      cam.roll_deg = gr_synth_rng_range (&rng, -15, 15);
      cam.focal = gr_synth_rng_range (&rng, 0.9, 1.4) * W;
      if (with_lens) {
        /* the lenses of test_localize_flight: barrel to mild pincushion */
        cam.lens.k1 = gr_synth_rng_range (&rng, -0.15, 0.05);
        cam.lens.k2 = gr_synth_rng_range (&rng, -0.02, 0.02);
        cam.lens.p1 = gr_synth_rng_range (&rng, -0.002, 0.002);
        cam.lens.p2 = gr_synth_rng_range (&rng, -0.002, 0.002);
      }
      cam.aim_x = gr_synth_rng_range (&rng, 0, ctl.width);
      cam.aim_y = gr_synth_rng_range (&rng, 0, ctl.height);
      GrPlaneF cut;
      if (beside_edge ? !flight_cut_beside_edge (&src, &cam, W, H, 1.3, &cut) :
          !flight_cut_on_control (&src, &cam, W, H, &cut))
        continue;
      flight_tone_and_noise (&cut, done);
      double hp[9], truth[9];
      gr_synth_camera_homography (&cam, W, H, hp);
      to_corner (hp, truth);
      GstBuffer *in = gray8_buffer_wh (&cut, W, H);
      gr_synth_plane_free (&cut);
      if (kind != PRIOR_NONE)
        attach_pose (in, kind, &cam, g, geo, cam.focal, &rng);
      else if (with_lens)
        attach_lens_only (in, &cam);
      if (done + 1 < first) {
        /* replaying from frame `first`: this frame's draws are taken, it is not run */
        gst_buffer_unref (in);
        done++;
        replay_skipped++;
        continue;
      }

      const gint64 t0 = g_get_monotonic_time ();
      GstBuffer *out = gst_harness_push_and_pull (h, in);
      const double frame_ms = (g_get_monotonic_time () - t0) / 1000.0;
      ms += frame_ms;
      double loc_ms = NAN, loc_down_ms = NAN;
      GstMessage *msg;
      while ((msg = gst_bus_pop (bus))) {
        if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT &&
            gst_message_has_name (msg, "nmilocalize")) {
          const GstStructure *ms_st = gst_message_get_structure (msg);
          gst_structure_get_double (ms_st, "search-ms", &loc_ms);
          gst_structure_get_double (ms_st, "downscale-ms", &loc_down_ms);
        }
        gst_message_unref (msg);
      }
      done++;
      CHECK (out != NULL, "no output buffer");
      if (!out)
        continue;
      GstNmiLocalizeMeta *lm = gst_buffer_get_nmi_localize_meta (out);
      GstNmiRegisterMeta *rm = gst_buffer_get_nmi_register_meta (out);
      CHECK (lm && rm, "metas");
      if (lm && rm) {
        /* over every pixel through the true lens; the estimate through the lens it
         * reports (undistorted) */
        double rms = INFINITY, coarse = INFINITY, mx;
        if (rm->has_transform)
          frame_error_lens (rm->frame_to_control, rm->undistorted ? rm->lens : NULL, &cam,
              truth, W, H, &rms, &mx);
        if (lm->has_prior_transform)
          frame_error_lens (lm->frame_to_control, NULL, &cam, truth, W, H, &coarse, &mx);
        CHECK (rm->undistorted == (with_lens && rm->has_transform), "%s %d: "
            "undistorted %d with the lens %s", prior_names[kind], done, rm->undistorted,
            with_lens ? "on" : "off");
        /* a searched scale stays within nmilocalize's scale-min .. scale-max (0.25-4
         * by default: the sweep's fine stage once reported 0.2313) */
        if (lm->has_prior_transform && (lm->flags & GST_NMI_LOCALIZE_FLAG_SCALE_SEARCHED))
          CHECK (lm->scale >= search_min * (1.0 - 1e-6) &&
              lm->scale <= search_max * (1.0 + 1e-6), "%s %d: scale %.4f outside the "
              "searched %g-%g", prior_names[kind], done, lm->scale, search_min, search_max);
        const gboolean bad = (lm->flags & bad_loc) || (rm->flags & bad_reg) ||
            !rm->has_transform;
        within05 += rms <= 0.5 && !bad;
        flagged += bad;
        prior_used += (lm->flags & GST_NMI_LOCALIZE_FLAG_PRIOR_USED) != 0;
        recovered += rms <= 0.5 && (lm->flags & GST_NMI_LOCALIZE_FLAG_IMPLAUSIBLE) &&
            (lm->flags & GST_NMI_LOCALIZE_FLAG_HEADING_SEARCHED);
        if (!bad)
          good_rms[ngood++] = rms;
        if (rms > 2.0 && !bad) {
          wrong_unflagged++;
          worst = fmax (worst, rms);
        }
        if (verbose || (rms > 2.0 && !bad))
          printf ("  %s %d: heading %5.1f scale %.3f pitch %5.1f roll %5.1f -> coarse "
              "heading %6.2f scale %.4f (%.1f px, flags 0x%x), registered %u/%u inliers "
              "%.3f px RMS over the frame, flags 0x%x; nmilocalize %.0f ms (downscales "
              "%.0f), frame %.0f ms\n", prior_names[kind], done,
              cam.heading_deg, cam.scale, cam.pitch_deg, cam.roll_deg, lm->heading_deg,
              lm->scale, coarse, lm->flags, rm->inliers, rm->matches, rms, rm->flags, loc_ms,
              loc_down_ms, frame_ms);
        /* the prior is used exactly when there is one */
        if (kind == PRIOR_NONE)
          CHECK (!(lm->flags & GST_NMI_LOCALIZE_FLAG_PRIOR_USED), "no prior, flags 0x%x",
              lm->flags);
      }
      gst_buffer_unref (out);
    }
    qsort (good_rms, ngood, sizeof *good_rms, cmp_double);
    const double median = !ngood ? NAN : ngood % 2 ? good_rms[ngood / 2] :
        0.5 * (good_rms[ngood / 2 - 1] + good_rms[ngood / 2]);
    const double worst_good = ngood ? good_rms[ngood - 1] : NAN;
    g_free (good_rms);
    /* what the figures below count: the frames pushed (done includes the replay's
     * skipped draws, so that done == frames still says the draw ran to its end) */
    const int pushed = done - replay_skipped;
    printf ("%s prior, %s control, %s, %s, scale %.2f-%.2f, %s: %d frames: %d registered "
        "within 0.5 px RMS, %d flagged, %d more than 2 px wrong without a flag (prior "
        "used on %d); unflagged RMS median %.3f worst %.3f px; %.0f ms per frame\n",
        prior_names[kind], aukerman ? "aukerman" : "procedural", beside_edge ?
        "beside the edge and no-data" : "inside", with_lens ? "lens" : "pinhole", smin,
        smax, be, pushed, within05, flagged, wrong_unflagged, prior_used, median,
        worst_good, pushed ? ms / pushed : 0.0);
    /* one line for tools/gpu.sh flightacc's table */
    printf ("FLIGHTACC backend=%s prior=%s place=%s n=%d within=%d flagged=%d "
        "wrong_unflagged=%d median=%.3f worst=%.3f ms=%.0f scales=%.2f-%.2f\n", be,
        prior_names[kind], beside_edge ? "edge" : "inside", pushed, within05, flagged,
        wrong_unflagged, median, worst_good, pushed ? ms / pushed : 0.0, smin, smax);
    if (out_of_time)
      printf ("%s: stopped after %d of %d frames at GEOREG_POSE_BUDGET_S=%g\n",
          prior_names[kind], done, frames, budget_s);
    else
      CHECK (done == frames, "%s: placed %d of %d frames", prior_names[kind], done,
          frames);
    CHECK (wrong_unflagged == 0, "%s: %d results more than 2 px wrong without a flag "
        "(worst %.2f px)", prior_names[kind], wrong_unflagged, worst);
    if (kind != PRIOR_NONE)
      CHECK (prior_used == pushed, "%s: the prior was used on %d of %d frames",
          prior_names[kind], prior_used, pushed);
    if (kind == PRIOR_WRONG_YAW)
      printf ("wrongyaw: %d of %d placed right after the sweep and flagged IMPLAUSIBLE\n",
          recovered, pushed);
    const int good = kind == PRIOR_WRONG_YAW ? recovered : within05;
    if (require[kind] > 0)
      CHECK (good * 1000 >= require[kind] * pushed, "%s: %d/%d within 0.5 px, need %d "
          "per mille", prior_names[kind], good, pushed, require[kind]);
  }

  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  g_unlink (path);
  g_unlink (wld);
  g_rmdir (dir);
  free (wld);
  g_free (path);
  g_free (dir);
  gr_georef_free (g);
  gr_synth_image_free (&img);
  gr_raster_clear (&r1);
  gr_raster_clear (&r2);
  return CHECK_DONE ();
}
#endif
