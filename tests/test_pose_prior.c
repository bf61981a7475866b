/* Tests of kernels/pose_prior.c: a synthesized pose over georeferenced controls whose
 * truth is known independently of the code under test:
 *  - UTM 17N, 1 degree east of the central meridian: the frame centre where OSR (called
 *    here directly, not through kernels/geo) puts the camera, the heading turned by the
 *    meridian convergence atan(tan(dlon) sin(lat)), the scale times the transverse
 *    Mercator scale factor k0 (1 + (dlon cos(lat))^2 / 2);
 *  - a tilted, turned camera: the four frame corners where gr_camera_footprint's ground
 *    points land through OSR (the half-pixel shift between the camera's and the
 *    project's pixel conventions included);
 *  - a geographic (EPSG:4326) control with non-square ground pixels;
 *  - the sigmas, the parts a pose lacks, intrinsics of another resolution, and a pose
 *    that sees the horizon.
 * Exit 0 = pass, 77 = skipped (no GDAL in this build).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_check.h"

#if !GR_HAVE_GDAL
int
main (void)
{
  printf ("SKIP: built without GDAL\n");
  return 77;
}
#else
#include <ogr_srs_api.h>

#include "fit.h"
#include "pose_prior.h"

#define DEG (M_PI / 180.0)
#define W 640
#define H 480

/* lon/lat -> EPSG code's coordinates through OSR directly */
static void
osr_from_lonlat (int epsg, double *x, double *y)
{
  OGRSpatialReferenceH ll = OSRNewSpatialReference (NULL), dst =
      OSRNewSpatialReference (NULL);
  OSRImportFromEPSG (ll, 4326);
  OSRImportFromEPSG (dst, epsg);
  OSRSetAxisMappingStrategy (ll, OAMS_TRADITIONAL_GIS_ORDER);
  OSRSetAxisMappingStrategy (dst, OAMS_TRADITIONAL_GIS_ORDER);
  OGRCoordinateTransformationH ct = OCTNewCoordinateTransformation (ll, dst);
  if (!ct || !OCTTransform (ct, 1, x, y, NULL))
    *x = *y = NAN;
  if (ct)
    OCTDestroyCoordinateTransformation (ct);
  OSRRelease (ll);
  OSRRelease (dst);
}

static void
nadir_pose (GrPosePrior *p, double lat, double lon, double yaw, double height)
{
  gr_pose_prior_init (p);
  p->lat = (GrPriorValue) { lat, 5.0, true };
  p->lon = (GrPriorValue) { lon, 5.0, true };
  p->height_agl = (GrPriorValue) { height, 0.1 * height, true };
  p->cam_yaw = (GrPriorValue) { yaw, 10.0, true };
  p->cam_pitch = (GrPriorValue) { 0.0, 2.0, true };
  p->cam_roll = (GrPriorValue) { 0.0, 2.0, true };
}

/* A control georeferenced by geo in crs, a 600 px lens, and its prior for a nadir
 * pose at (lat, lon), 60 m up, facing yaw; NULL after a failed check. */
static GrGeoRef *
nadir_over (const double geo[6], const char *crs, double lat, double lon, double yaw,
    GrCamera *cam, GrPosePrior *pose, GrPoseControlPrior *out)
{
  char err[256] = "";
  GrGeoRef *g = NULL;
  CHECK (gr_georef_new (geo, crs, &g, err, sizeof err) == GR_OK, "georef: %s", err);
  if (!g)
    return NULL;
  gr_camera_init_focal (cam, W, H, 600.0, W);   /* f in px */
  nadir_pose (pose, lat, lon, yaw, 60.0);
  CHECK (gr_pose_prior_to_control (pose, cam, g, W, H, out, err, sizeof err) == GR_OK,
      "nadir over %s: %s", crs, err);
  return g;
}

static void
test_utm (void)
{
  char err[256] = "";
  const double lat = 41.0, lon = -80.0;     /* UTM 17N's central meridian is -81 */
  double e0 = lon, n0 = lat;
  osr_from_lonlat (32617, &e0, &n0);
  const double geo[6] = { e0 - 200.0, 0.5, 0.0, n0 + 150.0, 0.0, -0.5 };
  GrCamera cam;
  GrPosePrior pose;
  GrPoseControlPrior out;
  GrGeoRef *g = nadir_over (geo, "EPSG:32617", lat, lon, 30.0, &cam, &pose, &out);
  if (!g)
    return;

  const double dl = 1.0 * DEG, phi = lat * DEG;
  const double gamma = atan (tan (dl) * sin (phi)) / DEG;
  const double k = 0.9996 * (1.0 + 0.5 * pow (dl * cos (phi), 2.0));
  printf ("nadir over UTM: centre (%.4f, %.4f) heading %.5f (truth %.5f) scale %.7f "
      "(truth %.7f) px/m %.6f sigma %.3f px\n", out.prior.x, out.prior.y,
      out.prior.heading_deg, 30.0 - gamma, out.prior.scale, 0.1 * k / 0.5,
      out.control_px_per_m, out.prior.position_sigma);
  CHECK (out.prior.has_position && out.prior.has_heading && out.prior.has_scale &&
      out.has_homography, "every part");
  CHECK (fabs (out.prior.x - 400.0) < 1e-3 && fabs (out.prior.y - 300.0) < 1e-3,
      "centre (%.5f, %.5f), truth (400, 300)", out.prior.x, out.prior.y);
  CHECK (fabs (out.prior.heading_deg - (30.0 - gamma)) < 1e-3, "heading %.5f, truth %.5f",
      out.prior.heading_deg, 30.0 - gamma);
  CHECK (fabs (out.prior.scale / (0.1 * k / 0.5) - 1.0) < 1e-5, "scale %.8f, truth %.8f",
      out.prior.scale, 0.1 * k / 0.5);
  CHECK (fabs (out.control_px_per_m / (k / 0.5) - 1.0) < 1e-5, "px/m %.8f", out.control_px_per_m);
  CHECK (fabs (out.gsd_m - 0.1) < 1e-9, "gsd %.9f", out.gsd_m);
  /* GPS 5 m and a 2 + 2 degree tilt from 60 m; nadir: yaw and height move nothing */
  const double sig_m = hypot (5.0, 60.0 * tan (hypot (2.0, 2.0) * DEG));
  CHECK (fabs (out.position_sigma_m - sig_m) < 1e-6, "sigma %.6f m, expected %.6f",
      out.position_sigma_m, sig_m);
  CHECK (fabs (out.prior.position_sigma - sig_m * out.control_px_per_m) < 1e-6,
      "sigma px");
  CHECK (out.prior.heading_sigma_deg == 10.0 && fabs (out.prior.scale_sigma - 0.1) < 1e-12,
      "heading and scale sigmas %g %g", out.prior.heading_sigma_deg, out.prior.scale_sigma);

  /* the same lens described at twice the resolution gives the same answer */
  GrCamera big;
  gr_camera_init_focal (&big, 2 * W, 2 * H, 1200.0, 2 * W);   /* f in px */
  GrPoseControlPrior o2;
  CHECK (gr_pose_prior_to_control (&pose, &big, g, W, H, &o2, err, sizeof err) == GR_OK,
      "scaled intrinsics: %s", err);
  for (int i = 0; i < 9; i++)
    CHECK (fabs (o2.h[i] - out.h[i]) < 1e-6 * (1.0 + fabs (out.h[i])),
        "scaled intrinsics h[%d] %.9g vs %.9g", i, o2.h[i], out.h[i]);

  /* search regions in map units and in longitude/latitude, radius in metres */
  double rx, ry, rr;
  CHECK (gr_search_region_to_pixels (g, GR_REGION_LONLAT, lon, lat, 10.0, &rx, &ry, &rr)
      && fabs (rx - 400.0) < 1e-3 && fabs (ry - 300.0) < 1e-3 &&
      fabs (rr - 20.0 * k) < 1e-4, "lonlat region (%.4f, %.4f) r %.5f", rx, ry, rr);
  CHECK (gr_search_region_to_pixels (g, GR_REGION_MAP, e0 + 10.0, n0 - 5.0, 10.0, &rx,
          &ry, &rr) && fabs (rx - 420.0) < 1e-6 && fabs (ry - 310.0) < 1e-6 &&
      fabs (rr - 20.0 * k) < 1e-4, "map region (%.4f, %.4f) r %.5f", rx, ry, rr);
  CHECK (gr_search_region_to_pixels (NULL, GR_REGION_PIXELS, 1.0, 2.0, 3.0, &rx, &ry, &rr)
      && rx == 1.0 && ry == 2.0 && rr == 3.0, "pixel region");
  CHECK (!gr_search_region_to_pixels (NULL, GR_REGION_MAP, 1.0, 2.0, 3.0, &rx, &ry, &rr),
      "map region without a georeference");

  /* tilted and turned: the corners against the camera's footprint through OSR */
  pose.cam_yaw.value = 200.0;
  pose.cam_pitch.value = 12.0;
  pose.cam_roll.value = -7.0;
  const GrCameraPose cp = { 200.0, 12.0, -7.0, 60.0 };
  double fp[8];
  CHECK (gr_camera_footprint (&cam, &cp, fp), "footprint");
  CHECK (gr_pose_prior_to_control (&pose, &cam, g, W, H, &out, err, sizeof err) == GR_OK,
      "tilted: %s", err);
  double e_per_deg, n_per_deg;
  gr_wgs84_local_offset (lat, lon, lat + 1.0, lon + 1.0, &e_per_deg, &n_per_deg);
  const double corner_px[4][2] = { { 0.5, 0.5 }, { W - 0.5, 0.5 }, { W - 0.5, H - 0.5 },
    { 0.5, H - 0.5 } };
  double worst = 0.0;
  for (int i = 0; i < 4; i++) {
    double x = lon + fp[2 * i] / e_per_deg, y = lat + fp[2 * i + 1] / n_per_deg;
    osr_from_lonlat (32617, &x, &y);
    const double px = (x - geo[0]) / geo[1], py = (y - geo[3]) / geo[5];
    double ex, ey;
    CHECK (gr_fit_apply (out.h, corner_px[i][0], corner_px[i][1], &ex, &ey), "apply");
    worst = fmax (worst, hypot (ex - px, ey - py));
  }
  printf ("tilted (yaw 200, pitch 12, roll -7): corners within %.2e control px of OSR; "
      "centre sigma %.2f m\n", worst, out.position_sigma_m);
  CHECK (worst < 1e-3, "corner %.6f px off", worst);
  /* off nadir, the yaw's and the height's sigmas move the centre too */
  CHECK (out.position_sigma_m > sig_m + 0.5 && out.position_sigma_m < 10.0,
      "tilted sigma %.3f m", out.position_sigma_m);

  /* position only, no height, no position */
  pose.cam_yaw.have = false;
  CHECK (gr_pose_prior_to_control (&pose, &cam, g, W, H, &out, err, sizeof err) == GR_OK,
      "no yaw: %s", err);
  CHECK (out.prior.has_position && !out.prior.has_heading && out.prior.has_scale &&
      !out.has_homography, "no yaw: parts");
  pose.height_agl.have = false;
  CHECK (gr_pose_prior_to_control (&pose, &cam, g, W, H, &out, err, sizeof err) == GR_OK,
      "no height: %s", err);
  CHECK (out.prior.has_position && !out.prior.has_scale && isnan (out.gsd_m),
      "no height: parts");
  pose.lat.have = pose.lon.have = false;
  CHECK (gr_pose_prior_to_control (&pose, &cam, g, W, H, &out, err, sizeof err) == GR_OK,
      "no position: %s", err);
  CHECK (!out.prior.has_position, "no position: parts");

  /* a camera looking at the horizon is refused with a reason */
  nadir_pose (&pose, lat, lon, 0.0, 60.0);
  pose.cam_pitch.value = 85.0;
  err[0] = '\0';
  CHECK (gr_pose_prior_to_control (&pose, &cam, g, W, H, &out, err, sizeof err) ==
      GR_ERR_INVALID && strstr (err, "horizon"), "horizon: %s", err);
  CHECK (gr_pose_prior_to_control (NULL, &cam, g, W, H, &out, err, sizeof err) ==
      GR_ERR_INVALID, "NULL pose");
  gr_georef_free (g);
}

/* A geographic control: pixels of 1e-5 degrees, not square on the ground. */
static void
test_geographic (void)
{
  const double lat = 42.8, lon = -76.9;
  const double geo[6] = { lon - 100e-5, 1e-5, 0.0, lat + 100e-5, 0.0, -1e-5 };
  GrCamera cam;
  GrPosePrior pose;
  GrPoseControlPrior out;
  GrGeoRef *g = nadir_over (geo, "EPSG:4326", lat, lon, 90.0, &cam, &pose, &out);
  if (!g)
    return;
  double e_per_deg, n_per_deg;
  gr_wgs84_local_offset (lat, lon, lat + 1.0, lon + 1.0, &e_per_deg, &n_per_deg);
  const double px_per_m = 1.0 / sqrt (e_per_deg * 1e-5 * n_per_deg * 1e-5);
  printf ("geographic: centre (%.4f, %.4f) heading %.4f px/m %.5f (truth %.5f)\n",
      out.prior.x, out.prior.y, out.prior.heading_deg, out.control_px_per_m, px_per_m);
  CHECK (fabs (out.prior.x - 100.0) < 1e-3 && fabs (out.prior.y - 100.0) < 1e-3,
      "centre (%.5f, %.5f)", out.prior.x, out.prior.y);
  /* yaw 90: the frame's up faces east, the control's +x, whatever the pixel aspect */
  CHECK (fabs (out.prior.heading_deg - 90.0) < 1e-3, "heading %.5f", out.prior.heading_deg);
  CHECK (fabs (out.control_px_per_m / px_per_m - 1.0) < 1e-6, "px/m %.6f vs %.6f",
      out.control_px_per_m, px_per_m);
  gr_georef_free (g);
}

int
main (void)
{
  test_utm ();
  test_geographic ();
  return CHECK_DONE ();
}
#endif
