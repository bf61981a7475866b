/* From a telemetry pose to a search prior on a georeferenced control (pose_prior.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pose_prior.h"

#include <math.h>
#include <string.h>

#include "fit.h"

#define DEG (M_PI / 180.0)
/* frame points per side of the grid the homography is fitted to */
#define GRID 5
#define NGRID (GRID * GRID)

static double
value_or (const GrPriorValue *v, double dflt)
{
  return v->have && isfinite (v->value) ? v->value : dflt;
}

static double
sigma_or (const GrPriorValue *v, double dflt)
{
  return v->have && isfinite (v->sigma) && v->sigma > 0 ? v->sigma : dflt;
}

/* Control pixels of n WGS84 points (in place: lon -> px, lat -> py). */
static bool
lonlat_to_pixels (const GrGeoRef *geo, double *lon, double *lat, int n)
{
  if (!gr_georef_lonlat_to_map (geo, lon, lat, n))
    return false;
  for (int k = 0; k < n; k++)
    if (!gr_georef_map_to_pixel (geo, lon[k], lat[k], &lon[k], &lat[k]))
      return false;
  return true;
}

/* Control pixels per ground metre at (lon, lat): the square root of the determinant of
 * the chain's Jacobian there (1 m east and 1 m north through PROJ), so projection scale
 * factors and geographic CRSs with non-square ground pixels come out right.  NAN when
 * PROJ fails. */
static double
local_px_per_m (const GrGeoRef *geo, double lon, double lat)
{
  double e_per_deg, n_per_deg;
  gr_wgs84_local_offset (lat, lon, lat + 1.0, lon + 1.0, &e_per_deg, &n_per_deg);
  double x[3] = { lon, lon + 1.0 / e_per_deg, lon };
  double y[3] = { lat, lat, lat + 1.0 / n_per_deg };
  if (!lonlat_to_pixels (geo, x, y, 3))
    return NAN;
  return sqrt (fabs ((x[1] - x[0]) * (y[2] - y[0]) - (x[2] - x[0]) * (y[1] - y[0])));
}

/* The intrinsics of cam for a width x height image of the same lens (OpenCV's
 * pixel-centre convention: a pixel's centre scales about the image's corner). */
static void
camera_for_size (const GrCamera *cam, int width, int height, GrCamera *c)
{
  *c = *cam;
  if (cam->width == width && cam->height == height)
    return;
  const double sx = (double) width / cam->width, sy = (double) height / cam->height;
  c->fx = cam->fx * sx;
  c->fy = cam->fy * sy;
  c->cx = (cam->cx + 0.5) * sx - 0.5;
  c->cy = (cam->cy + 0.5) * sy - 0.5;
  c->width = width;
  c->height = height;
}

GrStatus
gr_pose_prior_to_control (const GrPosePrior *pose, const GrCamera *cam,
    const GrGeoRef *geo, int width, int height, GrPoseControlPrior *out, char *err,
    size_t errlen)
{
  if (!pose || !cam || !geo || !out || width < 1 || height < 1 || cam->width < 1 ||
      cam->height < 1 || !(cam->fx > 0) || !(cam->fy > 0)) {
    gr_set_err (err, errlen, "pose prior: bad arguments");
    return GR_ERR_INVALID;
  }
  memset (out, 0, sizeof *out);
  GrCamera c;
  camera_for_size (cam, width, height, &c);

  const bool has_pos = pose->lat.have && pose->lon.have && isfinite (pose->lat.value) &&
      isfinite (pose->lon.value);
  const bool has_yaw = pose->cam_yaw.have && isfinite (pose->cam_yaw.value);
  const bool has_height = pose->height_agl.have && pose->height_agl.value > 0;
  const double height_m = has_height ? pose->height_agl.value : 100.0;
  const GrCameraPose cp = {
    value_or (&pose->cam_yaw, 0.0), value_or (&pose->cam_pitch, 0.0),
    value_or (&pose->cam_roll, 0.0), height_m
  };
  double hg[9];
  if (!gr_camera_ground_homography (&c, &cp, hg)) {
    gr_set_err (err, errlen, "pose prior: the camera sees the horizon (pitch %.1f, "
        "roll %.1f degrees)", cp.pitch_deg, cp.roll_deg);
    return GR_ERR_INVALID;
  }

  /* the point under the camera, WGS84 */
  double lat0, lon0;
  if (has_pos) {
    lat0 = pose->lat.value;
    lon0 = pose->lon.value;
  } else {
    double g[6];
    gr_georef_geotransform (geo, g);
    lon0 = g[0];
    lat0 = g[3];
    if (!gr_georef_map_to_lonlat (geo, &lon0, &lat0, 1)) {
      gr_set_err (err, errlen, "pose prior: the control's origin has no WGS84 position");
      return GR_ERR_INVALID;
    }
  }
  /* metres per degree there: the local offset is linear in latitude and longitude */
  double e_per_deg, n_per_deg;
  gr_wgs84_local_offset (lat0, lon0, lat0 + 1.0, lon0 + 1.0, &e_per_deg, &n_per_deg);

  /* the grid, then the frame centre's ground point */
  double src[2 * NGRID], dst[2 * NGRID];
  double gx[NGRID + 1], gy[NGRID + 1];
  double east[NGRID + 1], north[NGRID + 1];
  for (int k = 0; k <= NGRID; k++) {
    const double u = k < NGRID ? width * (double) (k % GRID) / (GRID - 1) : 0.5 * width;
    const double v = k < NGRID ? height * (double) (k / GRID) / (GRID - 1) : 0.5 * height;
    double uu, vv;
    /* pixel corner -> OpenCV pixel centre, lens removed */
    if (!gr_camera_undistort (&c, u - 0.5, v - 0.5, &uu, &vv) ||
        !gr_fit_apply (hg, uu, vv, &east[k], &north[k])) {
      gr_set_err (err, errlen, "pose prior: frame point (%.0f, %.0f) does not reach the "
          "ground", u, v);
      return GR_ERR_INVALID;
    }
    if (k < NGRID) {            /* the centre (k = NGRID) is not fitted */
      src[2 * k] = u;
      src[2 * k + 1] = v;
    }
    gx[k] = lon0 + east[k] / e_per_deg;
    gy[k] = lat0 + north[k] / n_per_deg;
  }
  const double centre_lon = gx[NGRID], centre_lat = gy[NGRID];
  if (!lonlat_to_pixels (geo, gx, gy, NGRID + 1)) {
    gr_set_err (err, errlen, "pose prior: PROJ cannot bring (%.7f, %.7f) into the "
        "control's CRS, or its geotransform is singular", lon0, lat0);
    return GR_ERR_INVALID;
  }
  for (int k = 0; k < NGRID; k++) {
    dst[2 * k] = gx[k];
    dst[2 * k + 1] = gy[k];
  }

  /* every point is an inlier (the chain is exact up to the lens): the fit's least
   * squares over the grid */
  GrFitParams fp;
  gr_fit_params_init (&fp, GR_MODEL_HOMOGRAPHY);
  fp.threshold = 1e9;
  GrFit fit;
  if (gr_fit_robust (src, dst, NULL, NGRID, &fp, &fit, NULL) != GR_FIT_OK) {
    gr_set_err (err, errlen, "pose prior: no homography through the footprint");
    return GR_ERR_INVALID;
  }
  memcpy (out->h, fit.h, sizeof out->h);
  out->control_px_per_m = local_px_per_m (geo, centre_lon, centre_lat);
  out->gsd_m = has_height ? gr_camera_gsd (&c, &cp) : NAN;

  /* the frame centre's uncertainty on the ground */
  const double off = hypot (east[NGRID], north[NGRID]);  /* nadir -> centre, m */
  const double tilt = atan2 (off, height_m);
  const double tilt_sigma = hypot (sigma_or (&pose->cam_pitch,
          GR_POSE_PRIOR_DEFAULT_TILT_SIGMA_DEG), sigma_or (&pose->cam_roll,
          GR_POSE_PRIOR_DEFAULT_TILT_SIGMA_DEG)) * DEG;
  const double tilt_shift = height_m * (tan (fmin (tilt + tilt_sigma, 80 * DEG)) -
      tan (tilt));
  const double yaw_sigma = has_yaw ? sigma_or (&pose->cam_yaw, 1.0) : 180.0;
  const double yaw_shift = off * fmin (yaw_sigma * DEG, M_PI);
  const double height_rel = has_height ? sigma_or (&pose->height_agl, 0.0) / height_m :
      0.0;
  const double gps = has_pos ? fmax (sigma_or (&pose->lat, 0.0), sigma_or (&pose->lon,
          0.0)) : 0.0;
  out->position_sigma_m = sqrt (gps * gps + tilt_shift * tilt_shift +
      yaw_shift * yaw_shift + (off * height_rel) * (off * height_rel));

  if (!gr_localize_prior_from_homography (&out->prior, out->h, width, height,
          fmax (out->position_sigma_m * out->control_px_per_m, 1.0), yaw_sigma,
          fmax (height_rel, 0.01))) {
    gr_set_err (err, errlen, "pose prior: the homography maps the centre to infinity");
    return GR_ERR_INVALID;
  }
  out->prior.has_position = has_pos;
  out->prior.has_heading = has_yaw;
  out->prior.has_scale = has_height;
  out->has_homography = has_pos && has_yaw && has_height;
  return GR_OK;
}

bool
gr_search_region_to_pixels (const GrGeoRef *geo, GrRegionUnits units, double x, double y,
    double radius, double *px, double *py, double *radius_px)
{
  if (units == GR_REGION_PIXELS) {
    *px = x;
    *py = y;
    *radius_px = radius;
    return true;
  }
  if (!geo)
    return false;
  double lon = x, lat = y;
  if (units == GR_REGION_MAP ? !gr_georef_map_to_lonlat (geo, &lon, &lat, 1) :
      units != GR_REGION_LONLAT)
    return false;
  const double k = local_px_per_m (geo, lon, lat);
  double cx = lon, cy = lat;
  if (!isfinite (k) || !lonlat_to_pixels (geo, &cx, &cy, 1))
    return false;
  *px = cx;
  *py = cy;
  *radius_px = radius * k;
  return true;
}
