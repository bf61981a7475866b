/* Camera model (kernels/camera.h): the ground homography against an independent
 * ray-plane intersection (Rodrigues rotations about fixed axes, long double) over random
 * poses; the pose convention's meaning (yaw turns the image top, pitch looks forward,
 * roll looks left); GSD; the horizon refusal; Brown-Conrady distortion against its
 * formula and the iterative inverse; intrinsics from focal / sensor, 35 mm equivalent
 * and prior; OpenCV calibration files (YAML and JSON) and their errors.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "camera.h"
#include "fit.h"
#include "synth.h"
#include "test_check.h"

#define D2R (M_PI / 180.0)

typedef long double ld;

/* v rotated by angle a about the unit axis k (Rodrigues' formula) */
static void
rodrigues (const ld k[3], ld a, ld v[3])
{
  const ld c = cosl (a), s = sinl (a), kv = k[0] * v[0] + k[1] * v[1] + k[2] * v[2];
  const ld x[3] = { k[1] * v[2] - k[2] * v[1], k[2] * v[0] - k[0] * v[2],
    k[0] * v[1] - k[1] * v[0] };
  for (int i = 0; i < 3; i++)
    v[i] = v[i] * c + x[i] * s + k[i] * kv * (1 - c);
}

/* Where pixel (u, v) meets the ground, built without camera.c's matrices: the pixel's
 * ray in the body (forward = image up, right = image right, down = optical axis),
 * turned by roll, pitch, yaw about the fixed north, east, down axes (which is the
 * intrinsic yaw-pitch-roll sequence), then intersected with the plane z = 0. */
static bool
reference_ground (const GrCamera *cam, const GrCameraPose *pose, double u, double v,
    double *e, double *n)
{
  const ld xc = (u - cam->cx) / (ld) cam->fx, yc = (v - cam->cy) / (ld) cam->fy;
  ld d[3] = { -yc, xc, 1 };                          /* north, east, down */
  const ld ax[3] = { 1, 0, 0 }, ay[3] = { 0, 1, 0 }, az[3] = { 0, 0, 1 };
  rodrigues (ax, pose->roll_deg * (ld) D2R, d);
  rodrigues (ay, pose->pitch_deg * (ld) D2R, d);
  rodrigues (az, pose->yaw_deg * (ld) D2R, d);
  /* camera at down = -height; plane down = 0 with normal (0, 0, 1) */
  const ld c[3] = { 0, 0, -pose->height_m };
  if (d[2] <= 0)
    return false;
  const ld t = (0 - c[2]) / d[2];
  *n = (double) (c[0] + t * d[0]);
  *e = (double) (c[1] + t * d[1]);
  return true;
}

static void
test_against_reference (void)
{
  GrSynthRng rng;
  gr_synth_rng_init (&rng, 77);
  double worst = 0;
  int poses = 0;
  for (int it = 0; it < 300; it++) {
    GrCamera cam;
    const int w = 640 + (int) (gr_synth_rng_next (&rng) % 4000);
    const int h = 480 + (int) (gr_synth_rng_next (&rng) % 3000);
    gr_camera_init_focal (&cam, w, h, gr_synth_rng_range (&rng, 3, 25),
        gr_synth_rng_range (&rng, 6, 36));
    cam.fy = cam.fx * gr_synth_rng_range (&rng, 0.98, 1.02);
    cam.cx += gr_synth_rng_range (&rng, -30, 30);
    cam.cy += gr_synth_rng_range (&rng, -30, 30);
    GrCameraPose pose = { gr_synth_rng_range (&rng, 0, 360),
      gr_synth_rng_range (&rng, -25, 25), gr_synth_rng_range (&rng, -25, 25),
      gr_synth_rng_range (&rng, 10, 800) };
    double H[9];
    if (!gr_camera_ground_homography (&cam, &pose, H))
      continue;                            /* a wide lens tilted to the horizon */
    poses++;
    for (int j = 0; j <= 8; j++)
      for (int i = 0; i <= 8; i++) {
        const double u = i * (w - 1) / 8.0, v = j * (h - 1) / 8.0;
        double e, n, re = NAN, rn = NAN;
        CHECK (reference_ground (&cam, &pose, u, v, &re, &rn), "reference misses");
        CHECK (gr_fit_apply (H, u, v, &e, &n), "homography at infinity");
        const double err = hypot (e - re, n - rn) / pose.height_m;
        if (err > worst)
          worst = err;
      }
  }
  CHECK (poses > 200, "only %d poses see the ground", poses);
  CHECK (worst < 1e-10, "homography vs ray-plane: %.3g x height", worst);
  printf ("ground homography vs ray-plane reference: %d poses, worst %.2g x height\n",
      poses, worst);
}

static void
ground_of (const GrCamera *cam, double yaw, double pitch, double roll, double u, double v,
    double *e, double *n)
{
  GrCameraPose pose = { yaw, pitch, roll, 100 };
  double H[9];
  *e = *n = NAN;
  if (gr_camera_ground_homography (cam, &pose, H))
    gr_fit_apply (H, u, v, e, n);
}

static void
test_convention (void)
{
  GrCamera cam;
  gr_camera_init_focal (&cam, 4000, 3000, 4.3, 6.17);
  double e, n;
  const double tan10 = 100 * tan (10 * D2R);
  /* nadir, yaw 0: the image's top is north, its right east */
  ground_of (&cam, 0, 0, 0, cam.cx, 0, &e, &n);
  CHECK (fabs (e) < 1e-9 && n > 50, "yaw 0 top: %.3f %.3f", e, n);
  ground_of (&cam, 0, 0, 0, 3999, cam.cy, &e, &n);
  CHECK (e > 50 && fabs (n) < 1e-9, "yaw 0 right: %.3f %.3f", e, n);
  /* heading 90: the top faces east */
  ground_of (&cam, 90, 0, 0, cam.cx, 0, &e, &n);
  CHECK (e > 50 && fabs (n) < 1e-9, "yaw 90 top: %.3f %.3f", e, n);
  /* nose up 10 degrees: the optical axis meets the ground ahead */
  ground_of (&cam, 0, 10, 0, cam.cx, cam.cy, &e, &n);
  CHECK (fabs (e) < 1e-9 && fabs (n - tan10) < 1e-9, "pitch: %.4f %.4f", e, n);
  ground_of (&cam, 90, 10, 0, cam.cx, cam.cy, &e, &n);
  CHECK (fabs (e - tan10) < 1e-9 && fabs (n) < 1e-9, "pitch at yaw 90: %.4f %.4f", e, n);
  /* right side down 10 degrees: the optical axis meets the ground to the left */
  ground_of (&cam, 0, 0, 10, cam.cx, cam.cy, &e, &n);
  CHECK (fabs (e + tan10) < 1e-9 && fabs (n) < 1e-9, "roll: %.4f %.4f", e, n);
  /* GSD of a nadir frame: height x sensor width / (focal x image width) */
  GrCameraPose pose = { 33, 0, 0, 71 };
  const double gsd = gr_camera_gsd (&cam, &pose);
  CHECK (fabs (gsd - 71 * 6.17 / (4.3 * 4000)) < 1e-12, "gsd %.6f", gsd);
  /* the footprint of a nadir frame is the sensor scaled by height / focal */
  double c[8];
  CHECK (gr_camera_footprint (&cam, &pose, c), "footprint");
  const double diag = hypot (c[4] - c[0], c[5] - c[1]);
  CHECK (fabs (diag - 71 / cam.fx * hypot (3999, 2999)) < 1e-9, "footprint diagonal %.4f",
      diag);
  /* the horizon in view: refused */
  GrCameraPose oblique = { 0, 70, 0, 100 };
  double H[9];
  CHECK (!gr_camera_ground_homography (&cam, &oblique, H), "horizon accepted");
  CHECK (isnan (gr_camera_gsd (&cam, &oblique)), "gsd of a sky view");
  GrCameraPose under = { 0, 0, 0, -5 };
  CHECK (!gr_camera_ground_homography (&cam, &under, H), "negative height accepted");
}

static void
test_distortion (void)
{
  GrCamera cam;
  gr_camera_init_focal (&cam, 4000, 3000, 3.61, 6.17);
  cam.k1 = -0.12;
  cam.k2 = 0.06;
  cam.k3 = -0.012;
  cam.p1 = 1.1e-3;
  cam.p2 = -4e-4;
  /* one point against OpenCV's formula written out */
  const double u = 3500, v = 400;
  const double x = (u - cam.cx) / cam.fx, y = (v - cam.cy) / cam.fy, r2 = x * x + y * y;
  const double rad = 1 + cam.k1 * r2 + cam.k2 * r2 * r2 + cam.k3 * r2 * r2 * r2;
  const double xd = x * rad + 2 * cam.p1 * x * y + cam.p2 * (r2 + 2 * x * x);
  const double yd = y * rad + cam.p1 * (r2 + 2 * y * y) + 2 * cam.p2 * x * y;
  double ud, vd;
  gr_camera_distort (&cam, u, v, &ud, &vd);
  CHECK (fabs (ud - (cam.cx + cam.fx * xd)) < 1e-9 && fabs (vd - (cam.cy + cam.fy * yd)) <
      1e-9, "distort %.4f %.4f", ud, vd);
  CHECK (hypot (ud - u, vd - v) > 20, "the test lens barely distorts");
  /* the inverse over the whole frame */
  double worst = 0;
  for (int j = 0; j <= 20; j++)
    for (int i = 0; i <= 20; i++) {
      const double pu = i * 3999 / 20.0, pv = j * 2999 / 20.0;
      double du, dv, bu, bv;
      gr_camera_distort (&cam, pu, pv, &du, &dv);
      CHECK (gr_camera_undistort (&cam, du, dv, &bu, &bv), "undistort failed at %g %g",
          pu, pv);
      worst = fmax (worst, hypot (bu - pu, bv - pv));
    }
  CHECK (worst < 1e-6, "undistort round trip %.3g px", worst);
  /* no distortion: identity */
  GrCamera plain;
  gr_camera_init_focal (&plain, 100, 80, 4, 6);
  double a, b;
  CHECK (gr_camera_undistort (&plain, 12.5, 70.25, &a, &b) && a == 12.5 && b == 70.25,
      "identity");
}

static void
test_intrinsics (void)
{
  GrCamera cam;
  /* GUIDE section 8: the FC300S's real sensor gives 2,340 px at 4000 wide; its 20 mm
   * equivalent on a 16:9 crop of the 4:3 sensor gives about 2,311, not the 2,121 the
   * 16:9 diagonal would suggest */
  gr_camera_init_focal (&cam, 4000, 3000, 3.61, 6.17);
  CHECK (fabs (cam.fx - 2340.36) < 0.01 && cam.cx == 1999.5 && cam.cy == 1499.5,
      "focal %.2f", cam.fx);
  gr_camera_init_35mm (&cam, 4000, 2250, 20);
  CHECK (fabs (cam.fx - 20 / 43.2666 * 5000) < 1e-9, "35 mm 16:9 %.2f", cam.fx);
  gr_camera_init_35mm (&cam, 4000, 3000, 20);
  CHECK (fabs (cam.fx - 20 / 43.2666 * 5000) < 1e-9, "35 mm 4:3 %.2f", cam.fx);
  gr_camera_init_35mm (&cam, 6000, 4000, 35);
  CHECK (fabs (cam.fx - 35 / 43.2666 * hypot (6000, 4000)) < 1e-9, "35 mm 3:2");

  GrPosePrior p;
  gr_pose_prior_init (&p);
  char err[200] = "";
  CHECK (gr_camera_from_prior (&p, 3600, 2700, &cam, err, sizeof err) == GR_ERR_INVALID &&
      err[0], "no focal accepted");
  strcpy (p.make, "Canon");
  strcpy (p.model, "Canon PowerShot ELPH 300 HS");
  p.focal_mm = (GrPriorValue) { 4.3, 0, true };
  p.image_width = 3600;
  p.image_height = 2700;
  CHECK (gr_camera_from_prior (&p, 0, 0, &cam, err, sizeof err) == GR_OK &&
      fabs (cam.fx - 4.3 / 6.17 * 3600) < 1e-9, "Canon from table: %.2f", cam.fx);
  strcpy (p.model, "Unknown 1");
  p.focal_35mm = (GrPriorValue) { 24, 0, true };
  CHECK (gr_camera_from_prior (&p, 0, 0, &cam, err, sizeof err) == GR_OK &&
      fabs (cam.fx - 24 / 43.2666 * 4500) < 1e-9, "35 mm fallback: %.2f", cam.fx);
  /* the camera's own pixel pitch wins over the table and the 35 mm equivalent: the
   * Seneca EXIF (16393.44 px/inch for 4000 x 3000) on a 3600 x 2700 file is a resize */
  strcpy (p.model, "Canon PowerShot ELPH 300 HS");
  p.focal_plane_px_per_mm = (GrPriorValue) { 16393.44262295082 / 25.4, 0, true };
  p.exif_pixel_width = 4000;
  p.exif_pixel_height = 3000;
  const double f_seneca = 4.3 * 16393.44262295082 / 25.4 * 0.9;
  CHECK (gr_camera_from_prior (&p, 0, 0, &cam, err, sizeof err) == GR_OK &&
      fabs (cam.fx - f_seneca) < 1e-6 && fabs (cam.fy - f_seneca) < 1e-6,
      "EXIF pitch, resized: %.3f", cam.fx);
  /* decoded at another size (a scaled stream): the same lens, scaled again */
  CHECK (gr_camera_from_prior (&p, 900, 675, &cam, err, sizeof err) == GR_OK &&
      fabs (cam.fx - f_seneca / 4) < 1e-6, "EXIF pitch, 900 wide: %.3f", cam.fx);
  /* the file turned by a quarter since (2700 x 3600 where the EXIF says 4000 x 3000):
   * the same lens, its long side along the image's height */
  p.image_width = 2700;
  p.image_height = 3600;
  CHECK (gr_pose_prior_quarter_turned (&p), "quarter turn not seen");
  CHECK (gr_camera_from_prior (&p, 0, 0, &cam, err, sizeof err) == GR_OK &&
      fabs (cam.fx - f_seneca) < 1e-6 && fabs (cam.cx - 1349.5) < 1e-9 &&
      fabs (cam.cy - 1799.5) < 1e-9, "EXIF pitch, turned: %.3f", cam.fx);
  GrPosePrior t = p;
  t.focal_plane_px_per_mm = (GrPriorValue) { NAN, 0, false };
  CHECK (gr_camera_from_prior (&t, 0, 0, &cam, err, sizeof err) == GR_OK &&
      fabs (cam.fx - 4.3 / 6.17 * 3600) < 1e-9, "table, turned: %.2f", cam.fx);
  t.focal_mm.have = false;
  CHECK (gr_camera_from_prior (&t, 0, 0, &cam, err, sizeof err) == GR_OK &&
      fabs (cam.fx - 24 / 43.2666 * 4500) < 1e-9, "35 mm, turned: %.2f", cam.fx);
  p.image_width = 3600;
  p.image_height = 2700;
  CHECK (!gr_pose_prior_quarter_turned (&p), "resize taken for a quarter turn");
  /* a 16:9 file from a 4:3 capture is a crop the tags cannot place: the next source */
  double fpx = 0;
  CHECK (!gr_camera_focal_from_exif_pitch (&p, 4000, 2250, &fpx), "16:9 crop accepted");
  /* no PixelXDimension: the pitch refers to the file itself */
  p.exif_pixel_width = p.exif_pixel_height = 0;
  CHECK (gr_camera_focal_from_exif_pitch (&p, 4000, 3000, &fpx) &&
      fabs (fpx - 4.3 * 16393.44262295082 / 25.4) < 1e-6, "pitch of the file %.2f", fpx);
  /* an implausible pitch (a 0.1 mm or a 400 mm wide sensor) is ignored */
  p.focal_plane_px_per_mm.value = 40000;
  CHECK (!gr_camera_focal_from_exif_pitch (&p, 4000, 3000, &fpx), "0.1 mm sensor used");
  p.focal_plane_px_per_mm.value = 10;
  CHECK (!gr_camera_focal_from_exif_pitch (&p, 4000, 3000, &fpx), "400 mm sensor used");
  p.focal_plane_px_per_mm = (GrPriorValue) { NAN, 0, false };
  double sw, sh;
  CHECK (gr_camera_sensor_lookup ("dji", "FC6310S", &sw, &sh) && sw == 13.2 && sh == 8.8,
      "FC6310S lookup");
  CHECK (!gr_camera_sensor_lookup ("DJI", "XYZ", &sw, &sh), "unknown model found");
}

static void
test_calibration (void)
{
  const char *yaml =
      "%YAML:1.0\n---\n"
      "calibration_time: \"Mon 01 Jan\"\n"
      "image_width: 4000\nimage_height: 3000\n"
      "camera_matrix: !!opencv-matrix\n   rows: 3\n   cols: 3\n   dt: d\n"
      "   data: [ 2.3e+03, 0., 2.01e+03, 0., 2.31e+03, 1.49e+03, 0., 0., 1. ]\n"
      "distortion_coefficients: !!opencv-matrix\n   rows: 1\n   cols: 5\n   dt: d\n"
      "   data: [ -0.1, 0.05, 1e-3, -2e-4, -0.01 ]\n"
      "avg_reprojection_error: 0.3\n";
  GrCamera cam;
  char err[200] = "";
  CHECK (gr_camera_parse_calibration (yaml, strlen (yaml), &cam, err, sizeof err) == GR_OK,
      "yaml: %s", err);
  CHECK (cam.width == 4000 && cam.height == 3000 && cam.fx == 2300 && cam.fy == 2310 &&
      cam.cx == 2010 && cam.cy == 1490, "yaml intrinsics");
  CHECK (cam.k1 == -0.1 && cam.k2 == 0.05 && cam.p1 == 1e-3 && cam.p2 == -2e-4 &&
      cam.k3 == -0.01, "yaml distortion");
  const char *json =
      "{\n \"image_width\": 1920, \"image_height\": 1080,\n"
      " \"camera_matrix\": {\"type_id\": \"opencv-matrix\", \"rows\": 3, \"cols\": 3,"
      " \"dt\": \"d\", \"data\": [1400.5, 0.0, 960.0, 0.0, 1401.5, 540.0, 0.0, 0.0, 1.0]},\n"
      " \"distortion_coefficients\": {\"type_id\": \"opencv-matrix\", \"rows\": 1,"
      " \"cols\": 4, \"dt\": \"d\", \"data\": [-0.2, 0.1, 0.0, 0.001]}\n}\n";
  CHECK (gr_camera_parse_calibration (json, strlen (json), &cam, err, sizeof err) == GR_OK,
      "json: %s", err);
  CHECK (cam.width == 1920 && cam.fx == 1400.5 && cam.fy == 1401.5 && cam.cx == 960 &&
      cam.k1 == -0.2 && cam.p2 == 0.001 && cam.k3 == 0, "json values");
  const char *bad[] = {
    "image_width: 10\nimage_height: 10\n",                                   /* no matrix */
    "image_width: 10\nimage_height: 10\ncamera_matrix: {data: [1, 0, 5, 0, 1, 5]}\n",
    "image_width: 10\nimage_height: 10\ncamera_matrix: {data: [1,0,5,0,1,5,0,0,1]}\n"
        "distortion_coefficients: {data: [0.1, 0, 0, 0, 0, 0.5, 0, 0]}\n",  /* rational */
    "camera_matrix: {data: [1,0,5,0,1,5,0,0,1]}\n",                       /* no size */
    "image_width: 10\nimage_height: 10\ncamera_matrix: {data: [1,0,5,0,1,5,0,0,2]}\n",
    "image_width: 10\nimage_height: 10\ncamera_matrix: {data: [a,0,5,0,1,5,0,0,1]}\n",
    "{{{{{{{{{{[[[[[[[[1", "\x01\x02garbage: [", "",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    CHECK (gr_camera_parse_calibration (bad[i], strlen (bad[i]), &cam, err, sizeof err) ==
        GR_ERR_FORMAT && err[0], "bad calibration %zu accepted", i);
  }
  /* corrupted copies of the YAML: never a crash, OK or FORMAT, sane values if OK */
  GrSynthRng rng;
  gr_synth_rng_init (&rng, 4242);
  const size_t ylen = strlen (yaml);
  char *copy = malloc (ylen);
  for (int it = 0; it < 800; it++) {
    memcpy (copy, yaml, ylen);
    const int edits = 1 + (int) (gr_synth_rng_next (&rng) % 6);
    for (int e = 0; e < edits; e++)
      copy[gr_synth_rng_next (&rng) % ylen] = (char) (gr_synth_rng_next (&rng) & 0xff);
    const size_t cut = ylen - gr_synth_rng_next (&rng) % 8;
    GrStatus st = gr_camera_parse_calibration (copy, cut, &cam, NULL, 0);
    CHECK (st == GR_OK || st == GR_ERR_FORMAT, "corrupt %d: status %d", it, st);
    if (st == GR_OK)
      CHECK (cam.fx > 0 && cam.fy > 0 && cam.width >= 1 && cam.height >= 1 &&
          isfinite (cam.cx) && isfinite (cam.k1), "corrupt %d accepted with bad values",
          it);
  }
  free (copy);
  CHECK (gr_camera_load_calibration ("/nonexistent.yml", &cam, err, sizeof err) ==
      GR_ERR_IO && strstr (err, "/nonexistent.yml"), "missing file: %s", err);
}

/* Boresight: applying it composes the body rotation with the mount's (checked through
 * gr_camera_rotation: R(pose with boresight) = R(pose) diag(1,-1,-1) R(boresight as a
 * pose)); and a synthesized flight whose camera is mounted with a known boresight and
 * whose logged height is off by a known scale gives them back from its consecutive-frame
 * homographies (exact, then with the logged attitude noisy, then held out). */
static void
flight_pairs (const GrCamera *cam, const GrBoresight *truth, double yaw_noise_deg,
    guint32 seed, GrCameraPair *pairs, int n_pairs)
{
  GRand *rng = g_rand_new_with_seed (seed);
  GrCameraPose logged[64];
  double east[64], north[64];
  const int n_frames = n_pairs + 1;
  g_assert (n_frames <= 64);
  for (int i = 0; i < n_frames; i++) {
    /* lines of 4 frames 25 m apart, flown back and forth 60 m apart */
    const int line = i / 4, k = i % 4;
    const double heading = line % 2 ? 235 : 55, along = line % 2 ? 75 - 25 * k : 25 * k;
    const double hr = 55 * D2R;
    east[i] = along * sin (hr) + line * 60 * cos (hr);
    north[i] = along * cos (hr) - line * 60 * sin (hr);
    logged[i].yaw_deg = heading + g_rand_double_range (rng, -8, 8);
    logged[i].pitch_deg = g_rand_double_range (rng, -8, 8);
    logged[i].roll_deg = g_rand_double_range (rng, -8, 8);
    logged[i].height_m = g_rand_double_range (rng, 65, 75);
  }
  for (int i = 0; i < n_pairs; i++) {
    const int a = i, b = i + 1;   /* consecutive frames (a line change included) */
    GrCameraPair *p = &pairs[i];
    GrCameraPair truth_pair = { cam, cam, logged[a], logged[b], east[b] - east[a],
      north[b] - north[a], { 0 } };
    gr_camera_pose_apply_boresight (&logged[a], truth, &truth_pair.pose_a);
    gr_camera_pose_apply_boresight (&logged[b], truth, &truth_pair.pose_b);
    *p = truth_pair;
    CHECK (gr_camera_pair_predict (&truth_pair, NULL, p->h_ab), "pair %d truth", i);
    p->pose_a = logged[a];
    p->pose_b = logged[b];
    p->pose_a.yaw_deg += g_rand_double_range (rng, -yaw_noise_deg, yaw_noise_deg);
    p->pose_b.yaw_deg += g_rand_double_range (rng, -yaw_noise_deg, yaw_noise_deg);
  }
  g_rand_free (rng);
}

static void
test_boresight (void)
{
  GrCamera cam;
  gr_camera_init_focal (&cam, 3600, 2700, 4.3, 6.17);

  /* composition */
  GRand *rng = g_rand_new_with_seed (31);
  double worst = 0;
  for (int t = 0; t < 200; t++) {
    GrCameraPose p = { g_rand_double_range (rng, 0, 360), g_rand_double_range (rng, -40, 40),
      g_rand_double_range (rng, -40, 40), 50 };
    GrBoresight bs = { g_rand_double_range (rng, -20, 20), g_rand_double_range (rng, -20,
          20), g_rand_double_range (rng, -180, 180), 0.9 };
    GrCameraPose q, bp = { bs.yaw_deg, bs.pitch_deg, bs.roll_deg, 1 };
    gr_camera_pose_apply_boresight (&p, &bs, &q);
    double rp[9], rb[9], rq[9], t1[9], want[9];
    const double flip[9] = { 1, 0, 0, 0, -1, 0, 0, 0, -1 };
    gr_camera_rotation (&p, rp);
    gr_camera_rotation (&bp, rb);
    gr_camera_rotation (&q, rq);
    gr_mat3_mul (rp, flip, t1);
    gr_mat3_mul (t1, rb, want);
    for (int i = 0; i < 9; i++)
      worst = fmax (worst, fabs (rq[i] - want[i]));
    CHECK (fabs (q.height_m - 45) < 1e-12 && q.yaw_deg >= 0 && q.yaw_deg < 360,
        "height %.6f yaw %.3f", q.height_m, q.yaw_deg);
  }
  g_rand_free (rng);
  CHECK (worst < 1e-12, "boresight composition off by %.3g", worst);

  /* exact homographies: the boresight and height scale come back */
  const GrBoresight truth = { 4.0, -3.0, 6.0, 0.88 };
  GrCameraPair pairs[11];
  flight_pairs (&cam, &truth, 0, 7, pairs, 11);
  GrBoresight est;
  double rms = NAN;
  CHECK (gr_camera_boresight_estimate (pairs, 11, true, &est, &rms), "estimate");
  CHECK (fabs (est.roll_deg - 4) < 1e-3 && fabs (est.pitch_deg + 3) < 1e-3 &&
      fabs (est.yaw_deg - 6) < 1e-3 && fabs (est.height_scale - 0.88) < 1e-5 && rms < 0.05,
      "boresight %.4f %.4f %.4f scale %.5f rms %.3g px", est.roll_deg, est.pitch_deg,
      est.yaw_deg, est.height_scale, rms);
  double before = 0, after = 0;
  for (int i = 0; i < 11; i++) {
    before = fmax (before, gr_camera_pair_disagreement (&pairs[i], NULL, NULL));
    after = fmax (after, gr_camera_pair_disagreement (&pairs[i], &est, NULL));
  }
  CHECK (before > 100 && after < 0.1, "disagreement %.1f px before, %.3f after", before,
      after);

  /* rotation only: the height scale stays 1 */
  const GrBoresight rot_only = { -2.0, 5.0, -4.0, 1.0 };
  flight_pairs (&cam, &rot_only, 0, 8, pairs, 11);
  CHECK (gr_camera_boresight_estimate (pairs, 11, false, &est, &rms) &&
      fabs (est.roll_deg + 2) < 1e-3 && fabs (est.pitch_deg - 5) < 1e-3 &&
      fabs (est.yaw_deg + 4) < 1e-3 && est.height_scale == 1.0,
      "rotation only: %.4f %.4f %.4f %.5f", est.roll_deg, est.pitch_deg, est.yaw_deg,
      est.height_scale);

  /* logged yaw noisy by up to 1 degree per frame: estimated on 10 pairs, the held-out
   * pair is predicted far better than without the calibration */
  flight_pairs (&cam, &truth, 1.0, 9, pairs, 11);
  CHECK (gr_camera_boresight_estimate (pairs, 10, true, &est, &rms), "noisy estimate");
  CHECK (fabs (est.roll_deg - 4) < 0.5 && fabs (est.pitch_deg + 3) < 0.5 &&
      fabs (est.yaw_deg - 6) < 1.0 && fabs (est.height_scale - 0.88) < 0.01,
      "noisy: %.3f %.3f %.3f %.4f", est.roll_deg, est.pitch_deg, est.yaw_deg,
      est.height_scale);
  const double held_before = gr_camera_pair_disagreement (&pairs[10], NULL, NULL);
  const double held_after = gr_camera_pair_disagreement (&pairs[10], &est, NULL);
  printf ("boresight self-calibration: noisy flight gives roll %.3f pitch %.3f yaw %.3f "
      "height x%.4f (true 4, -3, 6, x0.88), RMS %.1f px; held-out pair %.0f px before, "
      "%.0f px after\n", est.roll_deg, est.pitch_deg, est.yaw_deg, est.height_scale, rms,
      held_before, held_after);
  CHECK (held_after < 0.05 * 3600 && held_after < held_before / 3,
      "held-out pair: %.0f px before, %.0f px after", held_before, held_after);

  /* bad arguments */
  CHECK (!gr_camera_boresight_estimate (NULL, 3, true, &est, NULL) &&
      !gr_camera_boresight_estimate (pairs, 0, true, &est, NULL), "bad arguments accepted");
}

int
main (void)
{
  test_against_reference ();
  test_convention ();
  test_distortion ();
  test_intrinsics ();
  test_calibration ();
  test_boresight ();
  return CHECK_DONE ();
}
