/* Shared by test_register.c and test_register_gpu.c: a synthesized control and
 * frames cut from it under a known homography, and the ground-truth error of a
 * registration over the whole frame.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_TEST_REGISTER_COMMON_H
#define GR_TEST_REGISTER_COMMON_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "register.h"
#include "synth.h"
#include "test_check.h"

#define RCW 400
#define RCH 300
#define RFW 160
#define RFH 120

static GrSynthImage rt_control;
static GrPlaneF rt_ctl;         /* green band, no mask */

static void
rt_make_control (void)
{
  GrSynthControlParams p;
  char err[256];
  gr_synth_control_params_init (&p);
  p.width = RCW;
  p.height = RCH;
  p.depth = 8;
  p.seed = 11;
  if (gr_synth_control_generate (&p, &rt_control, err, sizeof err) != GR_OK) {
    fprintf (stderr, "cannot make the control: %s\n", err);
    exit (1);
  }
  rt_ctl = gr_synth_image_plane (&rt_control, 1);
}

/* A frame (8-bit values in floats, no mask) cut under the pose (rotation in degrees,
 * scale, centre) with a gamma tone change and noise; ht: frame -> control,
 * pixel-index coordinates. */
static void
rt_make_frame (double rot, double scale, double cx, double cy, uint64_t seed,
    GrPlaneF *frame, double ht[9])
{
  GrSynthPose pose;
  memset (&pose, 0, sizeof pose);
  pose.rotation_deg = rot;
  pose.scale = scale;
  pose.centre_x = cx;
  pose.centre_y = cy;
  gr_synth_pose_homography (&pose, RFW, RFH, ht);
  GrPlaneF cut = { 0 };
  if (gr_synth_cut (&rt_ctl, ht, RFW, RFH, 2, &cut) != GR_OK) {
    fprintf (stderr, "cannot cut the frame\n");
    exit (1);
  }
  GrSynthTone tone;
  gr_synth_tone_init (&tone, GR_SYNTH_TONE_GAMMA, seed);
  gr_synth_tone_apply (&tone, &cut, 255.0);
  gr_synth_add_noise (&cut, 3.0, 255.0, seed + 1);
  if (!gr_plane_alloc (frame, RFW, RFH, false)) {
    fprintf (stderr, "out of memory\n");
    exit (1);
  }
  for (int i = 0; i < RFW * RFH; i++) {
    const float v = floorf (cut.data[i] + 0.5f);
    frame->data[i] = v < 0 ? 0 : v > 255 ? 255 : v;
  }
  gr_synth_plane_free (&cut);
}

/* RMS and largest distance (control pixels) between the registered and the true
 * position of every 4th frame pixel (pixel-index coordinates). */
static void
rt_truth_error (const double h_index[9], const double ht[9], double *rms, double *worst)
{
  double s = 0.0, w = 0.0;
  int n = 0;
  for (int v = 0; v < RFH; v += 4)
    for (int u = 0; u < RFW; u += 4) {
      double x, y, tx, ty;
      if (!gr_fit_apply (h_index, u, v, &x, &y) ||
          !gr_synth_homography_apply (ht, u, v, &tx, &ty)) {
        *rms = *worst = INFINITY;
        return;
      }
      const double d = hypot (x - tx, y - ty);
      s += d * d;
      w = d > w ? d : w;
      n++;
    }
  *rms = sqrt (s / n);
  *worst = w;
}

/* The offset + scale prior of the frame's true top-left corner moved by (dx, dy). */
static void
rt_offset_prior (const double ht[9], double scale, double dx, double dy,
    GrRegisterPrior *prior)
{
  double x, y;
  /* the top-left pixel corner (-0.5, -0.5) in pixel-corner coordinates */
  gr_synth_homography_apply (ht, -0.5, -0.5, &x, &y);
  memset (prior, 0, sizeof *prior);
  prior->has_prior = true;
  const double h[9] = { scale, 0, x + 0.5 + dx, 0, scale, y + 0.5 + dy, 0, 0, 1 };
  memcpy (prior->h, h, sizeof h);
  prior->search_scale = scale;
}

/* A lens for the RFW x RFH frames: mild pincushion (every distorted pixel's ideal
 * position lies inside the frame) and tangential terms; about 3 px at the corners. */
static GrCamera
rt_lens (void)
{
  GrCamera c;
  memset (&c, 0, sizeof c);
  c.width = RFW;
  c.height = RFH;
  c.fx = c.fy = RFW;
  c.cx = 0.5 * (RFW - 1);
  c.cy = 0.5 * (RFH - 1);
  c.k1 = 0.08;
  c.k2 = -0.01;
  c.p1 = 0.001;
  c.p2 = -0.0015;
  return c;
}

/* rt_make_frame's frame as the lens images it: pixel p of the result is the pinhole
 * frame at undistort (p) (bilinear).  ht: pinhole (undistorted) pixels -> control. */
static void
rt_make_distorted_frame (double rot, double scale, double cx, double cy, uint64_t seed,
    const GrCamera *lens, GrPlaneF *frame, double ht[9])
{
  GrPlaneF pin = { 0 };
  rt_make_frame (rot, scale, cx, cy, seed, &pin, ht);
  if (!gr_plane_alloc (frame, RFW, RFH, false)) {
    fprintf (stderr, "out of memory\n");
    exit (1);
  }
  for (int j = 0; j < RFH; j++)
    for (int i = 0; i < RFW; i++) {
      double u, v;
      if (!gr_camera_undistort (lens, i, j, &u, &v))
        u = i, v = j;
      u = u < 0 ? 0 : u > RFW - 1 ? RFW - 1 : u;
      v = v < 0 ? 0 : v > RFH - 1 ? RFH - 1 : v;
      const int x0 = (int) u < RFW - 1 ? (int) u : RFW - 2;
      const int y0 = (int) v < RFH - 1 ? (int) v : RFH - 2;
      const double fx = u - x0, fy = v - y0;
      const float *a = pin.data + (size_t) y0 * RFW, *b = a + RFW;
      frame->data[(size_t) j * RFW + i] = (float) floor ((1 - fy) * ((1 - fx) * a[x0] +
              fx * a[x0 + 1]) + fy * ((1 - fx) * b[x0] + fx * b[x0 + 1]) + 0.5);
    }
  gr_plane_clear (&pin);
}

/* rt_truth_error of a result on a distorted frame: every 4th delivered pixel through
 * the lens (the estimate's own when it says undistorted, none otherwise) against the
 * truth at the pixel's true ideal position. */
static void
rt_truth_error_lens (const GrRegisterResult *res, const GrCamera *lens, const double ht[9],
    double *rms, double *worst)
{
  double s = 0.0, w = 0.0;
  int n = 0;
  *rms = *worst = INFINITY;
  for (int v = 0; v < RFH; v += 4)
    for (int u = 0; u < RFW; u += 4) {
      double x, y, tx, ty, iu, iv;
      if (!res->has_transform || !gr_camera_undistort (lens, u, v, &iu, &iv) ||
          !gr_register_result_apply (res, u + 0.5, v + 0.5, &x, &y) ||
          !gr_synth_homography_apply (ht, iu, iv, &tx, &ty))
        return;
      const double d = hypot (x - 0.5 - tx, y - 0.5 - ty);
      s += d * d;
      w = d > w ? d : w;
      n++;
    }
  *rms = sqrt (s / n);
  *worst = w;
}

/* The engine on `backend` with the control set (min-max range, 16 levels). */
static GrRegister *
rt_engine (GrBackend backend)
{
  char err[256] = "";
  GrStatus st;
  GrRegister *r = gr_register_new (backend, -1, &st, err, sizeof err);
  if (!r) {
    fprintf (stderr, "gr_register_new: %s (%s)\n", gr_status_string (st), err);
    return NULL;
  }
  double a, b;
  if (gr_plane_value_range (&rt_ctl, GR_BINS_MINMAX, 8, 0, 0, &a, &b) != GR_OK ||
      gr_register_set_control (r, &rt_ctl, a, b, 16, NULL, 0, NULL, err,
          sizeof err) != GR_OK) {
    fprintf (stderr, "set_control: %s\n", err);
    gr_register_free (r);
    return NULL;
  }
  return r;
}

#endif
