/* Camera model: pinhole intrinsics, Brown-Conrady lens distortion as OpenCV defines it,
 * and the ground homography of a pose over flat ground (GUIDE section 8).
 *
 * Pixel coordinates follow OpenCV: pixel (i, j)'s centre is at (i, j), so the default
 * principal point of a W x H image is ((W - 1) / 2, (H - 1) / 2).  Subtract 0.5 for the
 * project's pixel-corner convention (which puts that centre at (i + 0.5, j + 0.5)).
 *
 * Pose convention (GrCameraPose; the cam_* fields of a GrPosePrior, kernels/telemetry.h):
 * the camera is a nadir camera fixed to a body whose attitude is yaw (heading, clockwise
 * from north), pitch (positive nose up) and roll (positive right side down), applied in
 * the aerospace order R = Rz(yaw) Ry(pitch) Rx(roll) in north-east-down axes.  In the
 * body, the image's top edge faces forward, its x axis points right and the optical axis
 * down.  Hence yaw = pitch = roll = 0 looks straight down with north at the top of the
 * image; pitch > 0 moves the view forward, roll > 0 moves it to the image's left.
 * A gimbal's pitch (-90 = nadir) is pitch + 90 here.
 *
 * The ground frame is local east/north metres, origin on the ground directly under the
 * camera, ground plane flat at height_m below the camera.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_CAMERA_H
#define GR_CAMERA_H

#include "gr_common.h"
#include "telemetry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int width, height;           /* the image size these intrinsics describe */
  double fx, fy;               /* focal length in pixels */
  double cx, cy;               /* principal point (OpenCV pixel-centre convention) */
  double k1, k2, k3;           /* radial distortion */
  double p1, p2;               /* tangential distortion */
} GrCamera;

typedef struct {
  double yaw_deg, pitch_deg, roll_deg;
  double height_m;             /* camera above the ground plane, > 0 */
} GrCameraPose;

/* Sensor size of a known camera, keyed by EXIF Make and Model (case-insensitive; a
 * small table of common drone cameras, docs/telemetry.md).  false when unknown. */
bool gr_camera_sensor_lookup (const char *make, const char *model, double *sensor_w_mm,
    double *sensor_h_mm);

/* Pinhole intrinsics without distortion: f = focal_mm / sensor_width_mm x width. */
void gr_camera_init_focal (GrCamera *cam, int width, int height, double focal_mm,
    double sensor_width_mm);
/* From the 35 mm equivalent focal length, defined on the 43.27 mm diagonal of the
 * sensor's full frame.  An image wider than 3:2 (16:9 video, for instance) is taken as
 * cropped from a 4:3 sensor of the same width, as drone cameras do, so its diagonal is
 * 1.25 x width; 4:3 and 3:2 images use their own diagonal. */
void gr_camera_init_35mm (GrCamera *cam, int width, int height, double focal_35mm);

/* The focal length in pixels of a width x height image from the camera's own EXIF:
 * FocalLength x FocalPlaneXResolution, scaled from the PixelX/YDimension the pitch refers
 * to down (or up) to the file's size, read as a resize.  false when a tag is missing, the
 * implied sensor is not 1-60 mm wide, or the aspect differs by more than 1% (a crop). */
bool gr_camera_focal_from_exif_pitch (const GrPosePrior *prior, int width, int height,
    double *f_px);

/* Intrinsics for an image from its prior, in this order: the camera's own pixel pitch
 * (gr_camera_focal_from_exif_pitch), the sensor table where the camera is in it and
 * EXIF gives the focal length, the 35 mm equivalent.  width/height override the prior's
 * image size when > 0.  GR_ERR_INVALID when none is known. */
GrStatus gr_camera_from_prior (const GrPosePrior *prior, int width, int height,
    GrCamera *cam, char *err, size_t errlen);

/* Reads an OpenCV calibration (cv::FileStorage's YAML layout, "%YAML:1.0" header
 * allowed, or its JSON layout): image_width, image_height, camera_matrix (3 x 3) and
 * distortion_coefficients (k1, k2, p1, p2[, k3]; further coefficients must be 0).
 * GR_ERR_IO / GR_ERR_FORMAT with a reason.  Files over 1 MiB are refused. */
GrStatus gr_camera_load_calibration (const char *path, GrCamera *cam, char *err,
    size_t errlen);
GrStatus gr_camera_parse_calibration (const char *text, size_t len, GrCamera *cam,
    char *err, size_t errlen);

/* Ideal (undistorted) pixel -> the pixel the lens images it at (OpenCV's model). */
void gr_camera_distort (const GrCamera *cam, double u, double v, double *ud, double *vd);
/* The inverse, by fixed-point iteration (as cv::undistortPoints) until the residual is
 * below 1e-9 px or 50 iterations.  false when it did not converge (far outside the
 * lens's valid field). */
bool gr_camera_undistort (const GrCamera *cam, double ud, double vd, double *u, double *v);

/* Camera-to-world rotation, world = (east, north, up), camera = (x right, y down,
 * z along the optical axis), row-major: world = R cam. */
void gr_camera_rotation (const GrCameraPose *pose, double r[9]);

/* The homography from undistorted frame pixels to ground (east, north) metres, h[8] = 1.
 * false when part of the frame sees the horizon or sky (a corner ray less than 1 degree
 * below the horizon), or on bad arguments. */
bool gr_camera_ground_homography (const GrCamera *cam, const GrCameraPose *pose,
    double h[9]);

/* Ground (east, north) of the frame's four corners (pixels (0,0), (W-1,0), (W-1,H-1),
 * (0,H-1), distortion removed), 8 doubles; false as above. */
bool gr_camera_footprint (const GrCamera *cam, const GrCameraPose *pose, double corners[8]);

/* Ground sample distance (metres per pixel) at the principal point: the square root of
 * the area one pixel covers there.  NAN when the homography does not exist. */
double gr_camera_gsd (const GrCamera *cam, const GrCameraPose *pose);

/* ---- boresight self-calibration -------------------------------------------------
 * A camera fixed to an airframe is rarely mounted exactly as the pose convention assumes,
 * and a logged height above the launch point is rarely the height above the ground under
 * the camera.  A fixed mounting offset (boresight: a small rotation of the camera in the
 * body) and a height scale can be estimated from a flight's own consecutive-frame
 * homographies: every pair says how the two poses' ground projections must relate. */

typedef struct {
  double roll_deg, pitch_deg, yaw_deg;   /* camera in the body: R_body * Rz(yaw) Ry(pitch)
                                          * Rx(roll), same axes and signs as the pose */
  double height_scale;                   /* true height = logged height x this (1 = none) */
} GrBoresight;

/* One pair of frames of a flight: a's and b's cameras and logged poses, b's camera
 * position minus a's in ground east/north metres, and the homography the images give
 * from a's undistorted pixels to b's (OpenCV pixel convention, h[8] = 1). */
typedef struct {
  const GrCamera *cam_a, *cam_b;
  GrCameraPose pose_a, pose_b;
  double de_m, dn_m;
  double h_ab[9];
} GrCameraPair;

/* The pose with the boresight applied: the attitude R_body * B expressed again as
 * yaw/pitch/roll, and the height scaled.  Exact for any rotation away from gimbal lock
 * (|pitch| near 90). */
void gr_camera_pose_apply_boresight (const GrCameraPose *pose, const GrBoresight *bs,
    GrCameraPose *out);

/* The a -> b pixel mapping the two poses predict over flat ground (undistorted pixels):
 * b's ground homography inverted after a's, shifted by the cameras' offset.  bs may be
 * NULL (none).  false where a ground homography does not exist. */
bool gr_camera_pair_predict (const GrCameraPair *pair, const GrBoresight *bs, double h[9]);

/* Least-squares estimate of the boresight (and, if estimate_height_scale, the height
 * scale; else it stays 1) that makes the poses predict every pair's homography: the
 * distances between predicted and imaged positions of a 11 x 11 grid of a's pixels that
 * the image homography keeps inside b, minimised by Levenberg-Marquardt.  rms_px (may
 * be NULL) receives the final RMS distance in pixels.  false with fewer than one usable
 * pair or when it does not converge. */
bool gr_camera_boresight_estimate (const GrCameraPair *pairs, int n_pairs,
    bool estimate_height_scale, GrBoresight *bs, double *rms_px);

/* The largest distance (pixels) over the same grid between the pair's predicted and
 * imaged positions of a's pixels inside b, and the share of the grid inside b (may be
 * NULL).  INFINITY when the prediction does not exist. */
double gr_camera_pair_disagreement (const GrCameraPair *pair, const GrBoresight *bs,
    double *overlap);

/* Solves the symmetric positive definite n x n system a x = b (damped normal
 * equations of the camera fits here and in camera_fit.c) by Cholesky, a overwritten
 * by its factor; false when not positive definite. */
bool gr_camera_solve_spd (double *a, const double *b, int n, double *x);

#ifdef __cplusplus
}
#endif
#endif
