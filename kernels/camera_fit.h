/* The frame -> control homography of a calibrated camera over flat ground.
 *
 * A general homography has 8 degrees of freedom.  The one a pinhole camera with known
 * intrinsics K induces between its image and a flat orthomosaic has 6: with B =
 * K^-1 H^-1 (control pixel -> the camera's normalized ray), B = [r1 r2 t] G where r1, r2
 * are two columns of the camera's rotation and G is the control's pixel -> ground
 * similarity (a geotransform: scale, rotation, possibly a reflection, offset), so B's
 * first two columns are orthogonal and of equal length whatever G is.  Fitting only such
 * homographies pins the transform down where the matches do not reach: a tilted frame
 * over a field with no texture in a third of it, fitted by the general homography from
 * the other two thirds, was 2-3 frame px off at the far edge (1.1 px RMS over the frame);
 * the 6-parameter model has two fewer ways to bend there.
 *
 * Coordinates: src are undistorted frame positions (pixel index, OpenCV centres as the
 * intrinsics), dst control pixel indices, h maps src to dst (h[8] = 1).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_CAMERA_FIT_H
#define GR_CAMERA_FIT_H

#include "gr_common.h"
#include "camera.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Least-squares fit (Levenberg-Marquardt over the rotation and the third column of B)
 * of the calibrated camera's homography to the correspondences idx[0 .. k) (NULL: all
 * n), started from the general homography h0 (the nearest calibrated one to it).  out:
 * the fit, *rms its RMS residual in dst pixels over those points.  false when the start
 * cannot be made (h0 singular, the intrinsics unusable), fewer than 4 points, or the
 * result is not finite. */
bool gr_camera_fit_homography (const GrCamera *cam, const double h0[9],
    const double *src, const double *dst, const int *idx, int k, int n, double out[9],
    double *rms);

/* gr_fit_predicted_error's jackknife (a ninth of the frame's inliers left out at a
 * time, the spread of the refits over the frame in frame pixels) with the calibrated
 * model's refits started from h.  NAN when undetermined. */
double gr_camera_fit_predicted_error (const GrCamera *cam, const double h[9],
    const double *src, const double *dst, const uint8_t *inlier_mask, int n, int width,
    int height);

#ifdef __cplusplus
}
#endif
#endif
