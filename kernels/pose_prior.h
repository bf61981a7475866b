/* From a telemetry pose to a search prior on a georeferenced control: the recipe of
 * docs/telemetry.md ("Using a prior") as one function.
 *
 * The camera model (kernels/camera.h) maps the frame's pixels onto flat ground in local
 * east/north metres about the point under the camera; those points become WGS84
 * latitude/longitude (the camera's position plus the local offsets, on the ellipsoid's
 * radii of curvature: kernels/telemetry.h), then map coordinates in the control's CRS
 * (kernels/geo.h: GDAL OSR/PROJ), then control pixels (the inverse geotransform).  A
 * homography fitted to a 5 x 5 grid of frame points through that chain is the
 * frame->control mapping of the pose; the CRS's meridian convergence and scale factor
 * come with it, since every point goes through PROJ.
 *
 * The uncertainties of the pose become those of a GrLocalizePrior (kernels/localize.h):
 *  - position: the GPS sigma, plus what the attitude's sigmas move the frame centre on
 *    the ground (height x tan(tilt sigma); the yaw sigma turns an off-nadir centre about
 *    the nadir point), metres -> control pixels by the chain's own local scale;
 *  - heading: the camera yaw's sigma (the prior has no heading without a camera yaw);
 *  - scale: the height's relative sigma (no scale without a height above ground).
 * Pitch and roll that the pose lacks are taken as nadir with DEFAULT_TILT_SIGMA_DEG.
 *
 * Coordinates: frame and control pixels in the project's pixel-corner convention (as
 * gst/georeg-meta.h); the camera's intrinsics in OpenCV's (kernels/camera.h): the
 * half-pixel shift is applied here.  Lens distortion: the grid points are undistorted
 * before the ground homography, so the fitted homography is the best one for the
 * distorted frame as delivered.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_POSE_PRIOR_H
#define GR_POSE_PRIOR_H

#include "camera.h"
#include "geo.h"
#include "localize.h"
#include "telemetry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The attitude uncertainty assumed for a pitch or roll the pose does not give (a gimbal
 * held at nadir, or a fixed-wing body in level flight), degrees. */
#define GR_POSE_PRIOR_DEFAULT_TILT_SIGMA_DEG 10.0

typedef struct {
  GrLocalizePrior prior;     /* each part's has_* bit says whether the pose gave it */
  /* frame -> control pixels (pixel corners, h[8] = 1) of the pose; with a yaw of 0 and
   * any height when the pose lacks them (then only its centre is meaningful) */
  double h[9];
  bool has_homography;       /* position, camera yaw and height all known */
  double control_px_per_m;   /* control pixels per ground metre at the frame centre */
  double gsd_m;              /* the frame's ground sample distance at the principal
                                point, metres (NAN without a height) */
  double position_sigma_m;   /* the combined sigma of the frame centre, metres */
} GrPoseControlPrior;

/* Builds out for a width x height frame (the size the camera describes, or the same
 * lens at another resolution: the intrinsics are scaled) from pose, cam and the
 * control's georeference geo.  The pose needs a position (lat/lon) for a position
 * prior; without one the frame is taken at the control's centre for the mapping and
 * out->prior.has_position is false.  GR_ERR_INVALID on bad arguments, a camera that
 * sees the horizon in this pose, or a position PROJ cannot transform (reason in err). */
GrStatus gr_pose_prior_to_control (const GrPosePrior *pose, const GrCamera *cam,
    const GrGeoRef *geo, int width, int height, GrPoseControlPrior *out, char *err,
    size_t errlen);

/* Units of a search region given by the user (nmilocalize's search-units). */
typedef enum {
  GR_REGION_PIXELS = 0,    /* full-resolution control pixels */
  GR_REGION_MAP = 1,       /* the control's CRS; the radius in metres */
  GR_REGION_LONLAT = 2,    /* x = WGS84 longitude, y = latitude (degrees); radius metres */
} GrRegionUnits;

/* A search centre (x, y) and radius in `units` -> control pixel corners and a radius in
 * control pixels.  Metres become pixels by the local scale at the centre (through PROJ:
 * projection scale factors and geographic CRSs come out right).  PIXELS passes through
 * (geo may then be NULL); false when geo is NULL for the others or PROJ fails. */
bool gr_search_region_to_pixels (const GrGeoRef *geo, GrRegionUnits units, double x,
    double y, double radius, double *px, double *py, double *radius_px);

#ifdef __cplusplus
}
#endif
#endif
