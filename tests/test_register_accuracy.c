/* Accuracy of nmilocalize ! nmiregister on the real orthomosaic (issue: RMS
 * reprojection error of the recovered transform <= 0.5 px at full resolution for
 * >= 95 of 100 frames).
 *
 * Frames (512 x 384, GRAY8) are cut from $GEOREG_DATA/aukerman.png's green band under
 * a known homography: rotation up to +-5 degrees, scale 0.9 .. 1.1, perspective (the
 * homography's denominator varies by up to +-5% across the frame), through a tone
 * curve that changes per frame (random monotone LUT, gamma, S-curve, inversion) and
 * Gaussian noise (sigma 3); the control is the red band.  The error of a frame is the
 * RMS, over a 9 x 7 grid of points spanning the frame (corners included), of the
 * distance between the recovered and the true frame-to-control mapping, in control
 * pixels.
 *
 * Environment: GEOREG_DATA (required, else skip 77), GEOREG_REGISTER_BACKEND (cpu,
 * cuda, auto; default cpu; cuda skips 77 without a device), GEOREG_REGISTER_FRAMES
 * (default 100), GEOREG_REGISTER_REQUIRE (default 95% of the frames),
 * GEOREG_REGISTER_FIRST (first frame index, default 0), GEOREG_REGISTER_DEBUG (print
 * the coarse result per frame), GEOREG_REGISTER_EXTRA (more nmiregister properties).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gst/gst.h>
#include <gst/check/gstharness.h>

#include "georeg-meta.h"
#include "nmiregister-meta.h"
#include "raster.h"
#include "synth.h"

#define FW 512
#define FH 384

static void
to_corner (const double h[9], double o[9])
{
  /* T(+1/2) H T(-1/2) */
  double t[9];
  const double tp[9] = { 1, 0, 0.5, 0, 1, 0.5, 0, 0, 1 };
  const double tm[9] = { 1, 0, -0.5, 0, 1, -0.5, 0, 0, 1 };
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      t[i * 3 + j] = tp[i * 3] * h[j] + tp[i * 3 + 1] * h[3 + j] + tp[i * 3 + 2] * h[6 + j];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      o[i * 3 + j] = t[i * 3] * tm[j] + t[i * 3 + 1] * tm[3 + j] + t[i * 3 + 2] * tm[6 + j];
  for (int i = 0; i < 9; i++)
    o[i] /= o[8] != 0 ? o[8] : 1;
}

static bool
apply (const double h[9], double x, double y, double *X, double *Y)
{
  const double w = h[6] * x + h[7] * y + h[8];
  if (!(fabs (w) > 1e-12))
    return false;
  *X = (h[0] * x + h[1] * y + h[2]) / w;
  *Y = (h[3] * x + h[4] * y + h[5]) / w;
  return true;
}

int
main (int argc, char **argv)
{
  const char *data = getenv ("GEOREG_DATA");
  if (!data || !*data) {
    printf ("SKIP: GEOREG_DATA is not set (a folder holding aukerman.png)\n");
    return 77;
  }
  gchar *ctl_path = g_build_filename (data, "aukerman.png", NULL);
  if (!g_file_test (ctl_path, G_FILE_TEST_EXISTS)) {
    printf ("SKIP: %s does not exist\n", ctl_path);
    return 77;
  }
  const char *backend = getenv ("GEOREG_REGISTER_BACKEND");
  if (!backend || !*backend)
    backend = "cpu";
  if (!strcmp (backend, "cuda") && gr_cuda_device_count () == 0) {
    printf ("SKIP: backend cuda asked for, and no usable CUDA device here\n");
    return 77;
  }
  const char *fenv = getenv ("GEOREG_REGISTER_FRAMES");
  const int nframes = fenv && atoi (fenv) > 0 ? atoi (fenv) : 100;
  const char *renv = getenv ("GEOREG_REGISTER_REQUIRE");
  const int require = renv && atoi (renv) > 0 ? atoi (renv) : (nframes * 95 + 99) / 100;
  /* extra nmiregister properties, e.g. coarse-fallback=full-search */
  const char *extra = getenv ("GEOREG_REGISTER_EXTRA");
  gst_init (&argc, &argv);

  char err[512];
  GrRaster red, green;
  if (gr_raster_load (ctl_path, 1, &red, err, sizeof err) != GR_OK ||
      gr_raster_load (ctl_path, 2, &green, err, sizeof err) != GR_OK) {
    fprintf (stderr, "cannot load %s: %s\n", ctl_path, err);
    return 1;
  }
  const int CW = green.plane.width, CH = green.plane.height;

  gchar *desc = g_strdup_printf ("nmilocalize control-location=\"%s\" band=1 "
      "frame-scale=0.25 control-scale=0.25 backend=%s post-messages=false ! "
      "nmiregister control-location=\"%s\" band=1 max-keypoints=200 backend=%s %s",
      ctl_path, backend, ctl_path, backend, extra ? extra : "");
  GstHarness *h = gst_harness_new_parse (desc);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=GRAY8,width=512,height=384,"
      "framerate=10/1");

  static const GrSynthToneKind tones[4] = { GR_SYNTH_TONE_LUT, GR_SYNTH_TONE_GAMMA,
    GR_SYNTH_TONE_SCURVE, GR_SYNTH_TONE_INVERT
  };
  int good = 0, registered = 0;
  double sum_rms = 0.0, sum_good = 0.0, worst = 0.0;
  gint64 t_all = g_get_monotonic_time ();
  printf ("%5s %7s %6s %9s %9s %6s %6s %6s %8s %8s %6s\n", "frame", "rot", "scale",
      "persp-x", "persp-y", "tone", "kp", "inl", "fit-rms", "err-rms", "flags");
  const char *first_env = getenv ("GEOREG_REGISTER_FIRST");
  const int first = first_env ? atoi (first_env) : 0;
  for (int f = first; f < first + nframes; f++) {
    GrSynthRng rng;
    gr_synth_rng_init (&rng, gr_synth_seed_mix (2026, f));
    GrSynthPose pose;
    double ht[9];
    GrPlaneF cut = { 0 };
    bool placed = false;
    for (int attempt = 0; attempt < 5000 && !placed; attempt++) {
      memset (&pose, 0, sizeof pose);
      pose.rotation_deg = gr_synth_rng_range (&rng, -5.0, 5.0);
      pose.scale = gr_synth_rng_range (&rng, 0.9, 1.1);
      const double pm = 0.1 / FW;
      pose.persp_x = gr_synth_rng_range (&rng, -pm, pm);
      pose.persp_y = gr_synth_rng_range (&rng, -pm, pm);
      pose.centre_x = gr_synth_rng_range (&rng, 0, CW - 1);
      pose.centre_y = gr_synth_rng_range (&rng, 0, CH - 1);
      gr_synth_pose_homography (&pose, FW, FH, ht);
      if (gr_synth_cut (&green.plane, ht, FW, FH, 2, &cut) != GR_OK)
        return 1;
      placed = true;
      for (size_t i = 0; i < (size_t) FW * FH && placed; i++)
        placed = cut.mask[i] != 0;
      if (!placed)
        gr_synth_plane_free (&cut);
    }
    if (!placed) {
      fprintf (stderr, "cannot place frame %d\n", f);
      return 1;
    }
    GrSynthTone tone;
    gr_synth_tone_init (&tone, tones[f % 4], gr_synth_seed_mix (77, f));
    gr_synth_tone_apply (&tone, &cut, 255.0);
    gr_synth_add_noise (&cut, 3.0, 255.0, gr_synth_seed_mix (78, f));

    GstBuffer *buf = gst_buffer_new_allocate (NULL, FW * FH, NULL);
    GstMapInfo map;
    gst_buffer_map (buf, &map, GST_MAP_WRITE);
    for (int i = 0; i < FW * FH; i++) {
      const float v = floorf (cut.data[i] + 0.5f);
      map.data[i] = (guint8) (v < 0 ? 0 : v > 255 ? 255 : v);
    }
    gst_buffer_unmap (buf, &map);
    gr_synth_plane_free (&cut);
    GST_BUFFER_PTS (buf) = f * GST_SECOND / 10;
    GstBuffer *out = gst_harness_push_and_pull (h, buf);
    if (!out) {
      fprintf (stderr, "frame %d: no output buffer\n", f);
      return 1;
    }
    GstNmiRegisterMeta *m = gst_buffer_get_nmi_register_meta (out);
    double e = INFINITY;
    if (m && m->has_transform) {
      registered++;
      double hc[9];
      to_corner (ht, hc);
      double se = 0.0;
      int np = 0;
      for (int j = 0; j <= 6; j++)
        for (int i = 0; i <= 8; i++) {
          const double u = FW * i / 8.0, v = FH * j / 6.0;
          double X0, Y0, X1, Y1;
          if (!apply (hc, u, v, &X0, &Y0) || !apply (m->frame_to_control, u, v, &X1, &Y1))
            se = INFINITY;
          else
            se += (X1 - X0) * (X1 - X0) + (Y1 - Y0) * (Y1 - Y0);
          np++;
        }
      e = sqrt (se / np);
    }
    if (e <= 0.5) {
      good++;
      sum_good += e;
    }
    if (isfinite (e)) {
      sum_rms += e;
      worst = e > worst ? e : worst;
    }
    if (getenv ("GEOREG_REGISTER_DEBUG")) {
      GstNmiLocalizeMeta *lm = gst_buffer_get_nmi_localize_meta (out);
      double tx, ty;
      gr_synth_homography_apply (ht, 0, 0, &tx, &ty);
      if (lm)
        printf ("      coarse (%.1f, %.1f) truth top-left (%.1f, %.1f) score %.4f ratio %.3f "
            "flags 0x%x; matches %u\n", lm->control_x, lm->control_y, tx + 0.5, ty + 0.5,
            lm->score, lm->peak_ratio, lm->flags, m ? m->matches : 0);
    }
    printf ("%5d %7.2f %6.3f %9.2e %9.2e %6s %6u %6u %8.3f %8.3f %#6x\n", f,
        pose.rotation_deg, pose.scale, pose.persp_x, pose.persp_y,
        gr_synth_tone_kind_name (tones[f % 4]), m ? m->keypoints : 0, m ? m->inliers : 0,
        m ? m->rms : NAN, e, m ? m->flags : 0);
    gst_buffer_unref (out);
  }
  const double secs = (g_get_monotonic_time () - t_all) / 1e6;
  printf ("\n%s backend: %d of %d frames registered, %d with RMS error <= 0.5 px "
      "(%d required; mean of those %.3f px); all registered frames: mean %.3f px, worst "
      "%.3f px; %.2f s per frame (both elements)\n", backend, registered, nframes, good,
      require, good ? sum_good / good : NAN, registered ? sum_rms / registered : NAN, worst,
      secs / nframes);
  gst_harness_teardown (h);
  gr_raster_clear (&red);
  gr_raster_clear (&green);
  g_free (desc);
  g_free (ctl_path);
  return good >= require ? 0 : 1;
}
