/* Brown-Conrady lens distortion as OpenCV defines it, on normalized image coordinates
 * ((u - cx) / fx, (v - cy) / fy), header-only: kernels/camera.c builds GrCamera's
 * distort/undistort on it, and the public meta library (gst/nmiregister-meta.c, which
 * links no kernels) maps result points through a frame's lens with the very same
 * arithmetic, so the exported corners equal nmiregister's own to the last bit.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_BROWN_CONRADY_H
#define GR_BROWN_CONRADY_H

#include <math.h>
#include <stdbool.h>

/* k: k1 k2 k3 p1 p2 */
static inline void
gr_bc_distort_normalized (const double k[5], double x, double y, double *xd, double *yd)
{
  const double r2 = x * x + y * y;
  const double radial = 1 + r2 * (k[0] + r2 * (k[1] + r2 * k[2]));
  *xd = x * radial + 2 * k[3] * x * y + k[4] * (r2 + 2 * x * x);
  *yd = y * radial + k[3] * (r2 + 2 * y * y) + 2 * k[4] * x * y;
}

/* The inverse by fixed-point iteration (as cv::undistortPoints) until the residual,
 * scaled back to pixels by fx, fy, is below 1e-9 px or 50 iterations; false when it did
 * not converge.  *x, *y receive the last iterate either way. */
static inline bool
gr_bc_undistort_normalized (const double k[5], double fx, double fy, double xd, double yd,
    double *xo, double *yo)
{
  double x = xd, y = yd;
  bool ok = false;
  for (int it = 0; it < 50; it++) {
    const double r2 = x * x + y * y;
    const double radial = 1 + r2 * (k[0] + r2 * (k[1] + r2 * k[2]));
    const double dx = 2 * k[3] * x * y + k[4] * (r2 + 2 * x * x);
    const double dy = k[3] * (r2 + 2 * y * y) + 2 * k[4] * x * y;
    if (!(radial > 1e-6) || !isfinite (dx) || !isfinite (dy))
      break;
    x = (xd - dx) / radial;
    y = (yd - dy) / radial;
    double ex, ey;
    gr_bc_distort_normalized (k, x, y, &ex, &ey);
    if (hypot ((ex - xd) * fx, (ey - yd) * fy) < 1e-9) {
      ok = true;
      break;
    }
  }
  *xo = x;
  *yo = y;
  return ok;
}

#endif
