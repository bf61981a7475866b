/* `nmilocalize search=full ! nmiregister` on synthesized drone frames at headings of
 * 30, 90, 180 and 270 degrees and ground-resolution ratios of 0.5 and 2 control pixels
 * per frame pixel (pipelines/synth.h, another band through a tone curve, noise), with
 * a GPS-like position prior (search-x/search-y 20 px off the truth, search-radius 90)
 * but no heading or scale: the element sweeps headings and scales 0.25 .. 4 (the
 * defaults), fills the meta's frame_to_control, and nmiregister refines from it.  (The
 * search without any prior is test_localize_flight's; here the position keeps the
 * test to seconds on a shared CPU.)  Accuracy is measured over every
 * pixel of the frame against the true mapping, never by the fit's own residual:
 * registered (unflagged) frames within 0.5 px RMS, no frame more than 2 px wrong
 * without a flag, and all registered.  Four frames, the scales alternating over the
 * headings, keep the test short under ASan (GEOREG_TEST_ALL_SCALES=1: all 8 pairs).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gst/gst.h>
#include <glib/gstdio.h>
#include <gst/check/gstharness.h>

#include "fit.h"
#include "georeg-meta.h"
#include "nmiregister-meta.h"
#include "synth.h"
#include "test_check.h"
#include "flight_truth.h"

#define FW 240
#define FH 180

int
main (int argc, char **argv)
{
  gst_init (&argc, &argv);
  char e[512] = "";
  GrSynthControlParams cp;
  gr_synth_control_params_init (&cp);
  cp.width = 1024;
  cp.height = 768;
  cp.seed = 2026;
  cp.depth = 8;
  GrSynthImage img;
  memset (&img, 0, sizeof img);
  CHECK (gr_synth_control_generate (&cp, &img, e, sizeof e) == GR_OK, "control: %s", e);
  GrPlaneF ctl = gr_synth_image_plane (&img, 0), src = gr_synth_image_plane (&img, 1);
  gchar *dir = g_dir_make_tmp ("georeg-nmilocalize-flight-XXXXXX", NULL);
  gchar *path = g_build_filename (dir, "control.png", NULL);
  const float *planes[1] = { ctl.data };
  CHECK (gr_synth_png_write (path, planes, 1, NULL, ctl.width, ctl.height, 255.0, 8, e,
          sizeof e) == GR_OK, "png: %s", e);

  /* GEOREG_TEST_BACKEND=cuda: the same frames on the GPU machine (docs/gpu-tests.md) */
  const gchar *be = g_getenv ("GEOREG_TEST_BACKEND") ? g_getenv ("GEOREG_TEST_BACKEND")
      : "cpu";
  gchar *desc = g_strdup_printf ("nmilocalize control-location=\"%s\" backend=%s "
      "search=full ! nmiregister control-location=\"%s\" backend=%s", path, be, path, be);
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=GRAY8,width=240,height=180,"
      "framerate=10/1");

  const double headings[] = { 30.0, 90.0, 180.0, 270.0 };
  const double scales[] = { 0.5, 2.0 };
  const unsigned bad_loc = FLIGHT_DOUBTFUL_LOCALIZE_FLAGS;
  const unsigned bad_reg = FLIGHT_DOUBTFUL_REGISTER_FLAGS;
  GstElement *loc = gst_harness_find_element (h, "nmilocalize");
  GrSynthRng rng;
  gr_synth_rng_init (&rng, 13);
  int registered = 0, frames = 0;
  const gboolean all_scales = g_getenv ("GEOREG_TEST_ALL_SCALES") != NULL;
  for (unsigned hi = 0; hi < G_N_ELEMENTS (headings); hi++)
    for (unsigned si = 0; si < G_N_ELEMENTS (scales); si++) {
      if (!all_scales && si != hi % 2)
        continue;
      GrSynthCamera cam = { 0 };
      cam.heading_deg = headings[hi];
      cam.scale = scales[si];
      cam.focal = FW;
      GrPlaneF cut = { 0 };
      gboolean inside = FALSE;
      /* a place where the frame lies wholly on the control */
      for (int tries = 0; tries < 200 && !inside; tries++) {
        cam.aim_x = gr_synth_rng_range (&rng, 0, ctl.width);
        cam.aim_y = gr_synth_rng_range (&rng, 0, ctl.height);
        inside = flight_cut_on_control (&src, &cam, FW, FH, &cut);
      }
      CHECK (inside, "no place for heading %g scale %g", cam.heading_deg, cam.scale);
      if (!inside)
        continue;
      flight_tone_and_noise (&cut, frames);
      double hp[9], truth[9];
      gr_synth_camera_homography (&cam, FW, FH, hp);
      to_corner (hp, truth);
      const double dir = gr_synth_rng_range (&rng, 0, 2 * G_PI);
      g_object_set (loc, "search-x", cam.aim_x + 20.0 * cos (dir), "search-y",
          cam.aim_y + 20.0 * sin (dir), "search-radius", 90.0, NULL);

      GstBuffer *out = gst_harness_push_and_pull (h, gray8_buffer_wh (&cut, FW, FH));
      gr_synth_plane_free (&cut);
      frames++;
      CHECK (out != NULL, "no output buffer");
      if (!out)
        continue;
      GstNmiLocalizeMeta *lm = gst_buffer_get_nmi_localize_meta (out);
      GstNmiRegisterMeta *rm = gst_buffer_get_nmi_register_meta (out);
      CHECK (lm && rm, "metas");
      if (lm && rm) {
        CHECK (lm->has_prior_transform && (lm->flags &
                GST_NMI_LOCALIZE_FLAG_HEADING_SEARCHED) && (lm->flags &
                GST_NMI_LOCALIZE_FLAG_SCALE_SEARCHED), "full search result, flags 0x%x",
            lm->flags);
        const double rms = rm->has_transform ? frame_rms_wh (rm->frame_to_control, truth, FW, FH) :
            INFINITY;
        const double coarse = lm->has_prior_transform ?
            frame_rms_wh (lm->frame_to_control, truth, FW, FH) : INFINITY;
        const gboolean flagged = (lm->flags & bad_loc) || (rm->flags & bad_reg) ||
            !rm->has_transform;
        printf ("heading %5.1f scale %.2f: coarse heading %6.2f scale %.4f (%.2f px, "
            "overlap %.2f, flags 0x%x), registered %u/%u inliers, %.3f px RMS over the "
            "frame, flags 0x%x\n", cam.heading_deg, cam.scale, lm->heading_deg,
            lm->scale, coarse, lm->overlap, lm->flags, rm->inliers, rm->matches, rms,
            rm->flags);
        /* the old fields agree with the transform */
        CHECK (fabs (lm->control_x - lm->frame_to_control[2]) < 1e-9 &&
            fabs (lm->offset_x - lm->control_x * lm->control_scale) < 1e-9,
            "translation-era fields");
        if (!flagged) {
          registered++;
          CHECK (rms < 0.5, "heading %g scale %g: registered but %.3f px RMS",
              cam.heading_deg, cam.scale, rms);
        }
        CHECK (rms <= 2.0 || flagged, "heading %g scale %g: %.2f px wrong without a flag",
            cam.heading_deg, cam.scale, rms);
      }
      gst_buffer_unref (out);
    }
  printf ("%d of %d frames registered\n", registered, frames);
  CHECK (registered == frames && frames == (all_scales ? 8 : 4), "only %d of %d frames registered", registered, frames);

  gst_object_unref (loc);
  gst_harness_teardown (h);
  g_unlink (path);
  g_rmdir (dir);
  g_free (path);
  g_free (dir);
  gr_synth_image_free (&img);
  return CHECK_DONE ();
}
