/* Ground truth for the flight tests (test_localize_flight, test_nmilocalize_flight,
 * test_nmilocalize_pose): a synthesized camera's homography in the project's
 * pixel-corner convention and the error of an estimate over every pixel of the frame
 * (never the fit's own residual).  Include after fit.h (and gst/gst.h for the buffer
 * helper).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef FLIGHT_TRUTH_H
#define FLIGHT_TRUTH_H

#include <math.h>

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

#endif
