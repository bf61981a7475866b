/* Ground truth for the flight tests (test_localize_flight, test_nmilocalize_flight,
 * test_nmilocalize_pose): a synthesized camera's homography in the project's
 * pixel-corner convention and the error of an estimate over every pixel of the frame
 * (never the fit's own residual).  Include after fit.h (and gst/gst.h for the buffer
 * helper).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef FLIGHT_TRUTH_H
#define FLIGHT_TRUTH_H

#include <math.h>
#include <stdbool.h>

/* pixel-index homography -> pixel-corner homography: T(+0.5) H T(-0.5) */
static inline void
to_corner (const double hi[9], double hc[9])
{
  const double a[9] = { 1, 0, 0.5, 0, 1, 0.5, 0, 0, 1 };
  const double b[9] = { 1, 0, -0.5, 0, 1, -0.5, 0, 0, 1 };
  double t[9];
  gr_mat3_mul (hi, b, t);
  gr_mat3_mul (a, t, hc);
}

/* RMS and max over every pixel centre of a w x h frame of |true^-1(est(p)) - p|, in
 * frame pixels; INFINITY when a point maps to infinity. */
static inline void
frame_error (const double est[9], const double truth[9], int w, int h, double *rms,
    double *max)
{
  double tinv[9];
  *rms = *max = INFINITY;
  if (!gr_mat3_inverse (truth, tinv))
    return;
  double s2 = 0.0, mx = 0.0;
  for (int j = 0; j < h; j++)
    for (int i = 0; i < w; i++) {
      double x, y, u, v;
      if (!gr_fit_apply (est, i + 0.5, j + 0.5, &x, &y) ||
          !gr_fit_apply (tinv, x, y, &u, &v))
        return;
      const double e2 = (u - i - 0.5) * (u - i - 0.5) + (v - j - 0.5) * (v - j - 0.5);
      s2 += e2;
      mx = e2 > mx ? e2 : mx;
    }
  *rms = sqrt (s2 / ((double) w * h));
  *max = sqrt (mx);
}

static inline double
frame_rms_wh (const double est[9], const double truth[9], int w, int h)
{
  double rms, mx;
  frame_error (est, truth, w, h, &rms, &mx);
  return rms;
}

#ifdef __GST_BUFFER_H__
/* A GRAY8 buffer of a w x h float plane (rounded, clamped). */
static inline GstBuffer *
gray8_buffer_wh (const GrPlaneF * p, int w, int h)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, (gsize) w * h, NULL);
  GstMapInfo map;
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (int i = 0; i < w * h; i++) {
    const float v = floorf (p->data[i] + 0.5f);
    map.data[i] = (guint8) (v < 0 ? 0 : v > 255 ? 255 : v);
  }
  gst_buffer_unmap (buf, &map);
  return buf;
}
#endif

#ifdef GR_SYNTH_H
/* The frame that camera cam sees of src (synth.h), only where it lies wholly on valid
 * control (the edge cases are test_localize's): false, with nothing to free, when it
 * does not. */
static inline bool
flight_cut_on_control (const GrPlaneF *src, const GrSynthCamera *cam, int w, int h,
    GrPlaneF *cut)
{
  if (gr_synth_cut_camera (src, cam, w, h, (int) ceil (cam->scale), cut) != GR_OK)
    return false;
  for (int i = 0; i < w * h; i++)
    if (!cut->mask[i]) {
      gr_synth_plane_free (cut);
      return false;
    }
  return true;
}

/* A frame beside the control's edge or its no-data: wholly on valid control, but the
 * same camera with a field grown by `grow` (1.3: 15% more on each side) sees invalid
 * control, so the search window of a prior reaches over it.  false (nothing to free)
 * when the frame is not so placed. */
static inline bool
flight_cut_beside_edge (const GrPlaneF *src, const GrSynthCamera *cam, int w, int h,
    double grow, GrPlaneF *cut)
{
  GrPlaneF big;
  const int bw = (int) (w * grow), bh = (int) (h * grow);
  if (gr_synth_cut_camera (src, cam, bw, bh, 1, &big) != GR_OK)
    return false;
  bool beside = false;
  for (int i = 0; i < bw * bh && !beside; i++)
    beside = !big.mask[i];
  gr_synth_plane_free (&big);
  return beside && flight_cut_on_control (src, cam, w, h, cut);
}

#ifdef GR_CAMERA_H
/* Error over every pixel centre of a w x h frame cut through camera `cam` (its lens
 * included) of an estimate est (pixel corners) that takes undistorted frame pixels
 * through `lens` (fx fy cx cy k1 k2 k3 p1 p2, OpenCV's convention) when it is not
 * NULL, delivered pixels otherwise: |truth^-1 (est (p')) - u (p)| with u the true
 * undistortion, p' the estimate's; frame pixels.  truth: the pinhole homography
 * (pixel corners).  INFINITY when a point fails. */
static inline void
frame_error_lens (const double est[9], const double *lens, const GrSynthCamera *cam,
    const double truth[9], int w, int h, double *rms, double *max)
{
  double tinv[9];
  *rms = *max = INFINITY;
  if (!gr_mat3_inverse (truth, tinv))
    return;
  GrCamera ec;
  memset (&ec, 0, sizeof ec);
  if (lens) {
    ec.fx = lens[0];
    ec.fy = lens[1];
    ec.cx = lens[2];
    ec.cy = lens[3];
    ec.k1 = lens[4];
    ec.k2 = lens[5];
    ec.k3 = lens[6];
    ec.p1 = lens[7];
    ec.p2 = lens[8];
  }
  double s2 = 0.0, mx = 0.0;
  for (int j = 0; j < h; j++)
    for (int i = 0; i < w; i++) {
      double tu, tv, eu = i, ev = j, x, y, u, v;
      if (!gr_synth_lens_undistort (cam, w, h, i, j, &tu, &tv) ||
          (lens && !gr_camera_undistort (&ec, i, j, &eu, &ev)) ||
          !gr_fit_apply (est, eu + 0.5, ev + 0.5, &x, &y) ||
          !gr_fit_apply (tinv, x, y, &u, &v))
        return;
      const double e2 = (u - tu - 0.5) * (u - tu - 0.5) + (v - tv - 0.5) * (v - tv - 0.5);
      s2 += e2;
      mx = e2 > mx ? e2 : mx;
    }
  *rms = sqrt (s2 / ((double) w * h));
  *max = sqrt (mx);
}
#endif

/* Frame k of a flight as another band would show it: one of three tone curves, noise */
static inline void
flight_tone_and_noise (GrPlaneF *cut, int k)
{
  GrSynthTone tone;
  gr_synth_tone_init (&tone, (GrSynthToneKind) (1 + k % 3), 77 + k);
  gr_synth_tone_apply (&tone, cut, 255.0);
  gr_synth_add_noise (cut, 3.0, 255.0, 99 + k);
}
#endif

/* The flags of nmilocalize and nmiregister that doubt a result (nmiregister's
 * WINDOWS_CLIPPED only says some windows met the control's edge): a result with none
 * of them must be right */
#define FLIGHT_DOUBTFUL_LOCALIZE_FLAGS (GST_NMI_LOCALIZE_FLAG_NO_VALID_PIXELS | \
    GST_NMI_LOCALIZE_FLAG_NO_OVERLAP | GST_NMI_LOCALIZE_FLAG_AT_BORDER | \
    GST_NMI_LOCALIZE_FLAG_AMBIGUOUS | GST_NMI_LOCALIZE_FLAG_LOW_OVERLAP | \
    GST_NMI_LOCALIZE_FLAG_IMPLAUSIBLE)
#define FLIGHT_DOUBTFUL_REGISTER_FLAGS (GST_NMI_REGISTER_FLAG_COARSE_UNUSABLE | \
    GST_NMI_REGISTER_FLAG_TOO_FEW_KEYPOINTS | GST_NMI_REGISTER_FLAG_TOO_FEW_MATCHES | \
    GST_NMI_REGISTER_FLAG_DEGENERATE | GST_NMI_REGISTER_FLAG_NO_CONSENSUS | \
    GST_NMI_REGISTER_FLAG_LOW_INLIERS | GST_NMI_REGISTER_FLAG_POOR_SPREAD | \
    GST_NMI_REGISTER_FLAG_REFINE_FAILED | GST_NMI_REGISTER_FLAG_IMPRECISE)

#endif
