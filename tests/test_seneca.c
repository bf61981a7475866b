/* Real drone photos (suite data; GEOREG_DATA must hold seneca/, else skipped): the six
 * Seneca frames' telemetry is read from the JPEGs themselves (EXIF + senseFly XMP) and
 * checked against seneca/telemetry.csv; each frame's footprint is projected from its
 * pose with the camera model (Canon ELPH 300 HS: 6.17 mm sensor, 4.3 mm lens); and the
 * frame-to-frame mapping the two poses predict is compared with the homography the
 * project's own feature matching finds between consecutive frames (descriptors.h,
 * matcher.h, fit.h, as featurematch does, on frames downscaled 4x).  Issue 13: they
 * must agree to within 5% of the frame size wherever the frames overlap.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "camera.h"
#include "descriptors.h"
#include "fit.h"
#include "image.h"
#include "matcher.h"
#include "raster.h"
#include "telemetry.h"
#include "test_check.h"

#define NFRAMES 6
#define SCALE 0.25              /* matching runs on frames downscaled 4x */
#define MAX_FEATURES 3000
#define RATIO 0.9f              /* repetitive crop rows: a looser ratio, mutual matches */
#define AGREE_SHARE 0.05        /* issue 13's target: within 5% of the frame size */
/* What the Seneca priors achieve today (measured 14.3% on 0468 -> 0469): the check
 * that fails if the pose -> ground chain breaks.  See docs/telemetry.md. */
#define PRIOR_SHARE 0.20

typedef struct {
  GrPosePrior prior;
  GrCamera cam;
  GrPlaneF small;
  GrKeypoint *kp;
  float *desc;
  int nk;
} Frame;

static const char *names[NFRAMES] = { "IMG_0468.jpg", "IMG_0469.jpg", "IMG_0470.jpg",
  "IMG_0471.jpg", "IMG_0472.jpg", "IMG_0473.jpg" };

static GrCameraPose
pose_of (const GrPosePrior *p)
{
  GrCameraPose pose = { p->cam_yaw.value, p->cam_pitch.value, p->cam_roll.value,
    p->height_agl.value };
  return pose;
}

/* Frame a full-resolution pixel -> frame b full-resolution pixel, from the two poses
 * over one flat ground: a's ground homography, the shift between the cameras, the
 * inverse of b's. */
static bool
predicted_mapping (const Frame *a, const Frame *b, double h[9])
{
  GrCameraPose pa = pose_of (&a->prior), pb = pose_of (&b->prior);
  double ga[9], gb[9], gbi[9], t[9];
  if (!gr_camera_ground_homography (&a->cam, &pa, ga) ||
      !gr_camera_ground_homography (&b->cam, &pb, gb) || !gr_mat3_inverse (gb, gbi))
    return false;
  double de, dn;
  gr_wgs84_local_offset (a->prior.lat.value, a->prior.lon.value, b->prior.lat.value,
      b->prior.lon.value, &de, &dn);
  /* ground east/north about a's nadir -> about b's */
  const double shift[9] = { 1, 0, -de, 0, 1, -dn, 0, 0, 1 };
  gr_mat3_mul (shift, ga, t);
  gr_mat3_mul (gbi, t, h);
  return true;
}

static double
fix_distance (const Frame *a, const Frame *b)
{
  double de, dn;
  gr_wgs84_local_offset (a->prior.lat.value, a->prior.lon.value, b->prior.lat.value,
      b->prior.lon.value, &de, &dn);
  return hypot (de, dn);
}

/* How a mapping moves the frame centre (full-resolution pixels) and turns the image
 * there (degrees, clockwise on screen). */
typedef struct {
  double dx, dy, turn;
} Motion;

static double to_small (double v);
static double to_full (double v);

static void
motion_of (const double h[9], bool small, int w, int hgt, Motion *m)
{
  const double cx = (w - 1) / 2.0, cy = (hgt - 1) / 2.0, d = 50;
  double x[2], y[2];
  for (int k = 0; k < 2; k++) {
    double u = cx + k * d, v = cy, xo = NAN, yo = NAN;
    if (small) {
      gr_fit_apply (h, to_small (u), to_small (v), &xo, &yo);
      xo = to_full (xo);
      yo = to_full (yo);
    } else {
      gr_fit_apply (h, u, v, &xo, &yo);
    }
    x[k] = xo;
    y[k] = yo;
  }
  m->dx = x[0] - cx;
  m->dy = y[0] - cy;
  m->turn = atan2 (y[1] - y[0], x[1] - x[0]) * 180 / M_PI;
}

/* full-resolution pixel (centre convention) <-> downscaled pixel */
static double
to_small (double v)
{
  return (v + 0.5) * SCALE - 0.5;
}

static double
to_full (double v)
{
  return (v + 0.5) / SCALE - 0.5;
}

/* an image homography between downscaled frames -> between full-resolution frames */
static void
small_to_full (const double hs[9], double hf[9])
{
  const double o = 0.5 * SCALE - 0.5;       /* small = SCALE x full + o */
  const double s[9] = { SCALE, 0, o, 0, SCALE, o, 0, 0, 1 };
  const double si[9] = { 1 / SCALE, 0, -o / SCALE, 0, 1 / SCALE, -o / SCALE, 0, 0, 1 };
  double t[9];
  gr_mat3_mul (hs, s, t);
  gr_mat3_mul (si, t, hf);
}

static bool
load_frame (const char *dir, int i, const GrTelemetryCsv *csv, GrFeatures *feat, Frame *f)
{
  gchar *path = g_build_filename (dir, "seneca", names[i], NULL);
  gchar *bytes = NULL;
  gsize len = 0;
  char err[256] = "";
  bool ok = g_file_get_contents (path, &bytes, &len, NULL);
  CHECK (ok, "cannot read %s", path);
  if (!ok) {
    g_free (path);
    return false;
  }
  /* 1. the telemetry, from the JPEG itself */
  CHECK (gr_pose_prior_from_jpeg ((const uint8_t *) bytes, len, &f->prior, err,
          sizeof err) == GR_OK, "%s: %s", names[i], err);
  g_free (bytes);
  const GrPosePrior *p = &f->prior;
  CHECK (p->sources == (GR_PRIOR_SRC_EXIF | GR_PRIOR_SRC_XMP_SENSEFLY), "%s sources %x",
      names[i], p->sources);
  GrPosePrior row;
  CHECK (gr_telemetry_csv_find_file (csv, names[i], &row), "%s not in telemetry.csv",
      names[i]);
  /* the CSV lists the XMP's values, printed to about 1e-7 degrees and 1e-6 m */
  CHECK (fabs (p->lat.value - row.lat.value) < 1e-7 &&
      fabs (p->lon.value - row.lon.value) < 1e-7, "%s position", names[i]);
  CHECK (fabs (p->alt_wgs84.value - row.alt_wgs84.value) < 1e-5 &&
      fabs (p->alt_amsl.value - row.alt_amsl.value) < 1e-5 &&
      fabs (p->height_agl.value - row.height_agl.value) < 1e-5, "%s heights", names[i]);
  CHECK (fabs (p->flight_yaw.value - row.flight_yaw.value) < 1e-6 &&
      fabs (p->flight_pitch.value - row.flight_pitch.value) < 1e-6 &&
      fabs (p->flight_roll.value - row.flight_roll.value) < 1e-6, "%s attitude", names[i]);
  CHECK (strcmp (p->utc, row.utc) == 0, "%s time %s vs %s", names[i], p->utc, row.utc);
  CHECK (p->image_width == row.image_width && p->image_height == row.image_height,
      "%s size", names[i]);
  CHECK (fabs (p->focal_mm.value - row.focal_mm.value) < 1e-9, "%s focal", names[i]);
  CHECK (strcmp (p->model, "Canon PowerShot ELPH 300 HS") == 0, "model %s", p->model);

  /* 2. the camera from this file's own EXIF: 4.3 mm x FocalPlaneXResolution 16393.44
   * px/inch for the 4000 x 3000 the EXIF states, the file being 3600 x 2700 (read as a
   * resize: 0.9).  2497.7 px; the sensor table's 6.17 mm would give 2508.9, a central
   * crop 2775.3 (docs/telemetry.md). */
  CHECK (p->exif_pixel_width == 4000 && p->exif_pixel_height == 3000 &&
      fabs (p->focal_plane_px_per_mm.value - 16393.44262295082 / 25.4) < 1e-6,
      "%s EXIF pitch %.4f px/mm for %d x %d", names[i], p->focal_plane_px_per_mm.value,
      p->exif_pixel_width, p->exif_pixel_height);
  CHECK (p->air_speed.have && p->ground_speed.have, "%s air/ground speed", names[i]);
  CHECK (gr_camera_from_prior (p, 0, 0, &f->cam, err, sizeof err) == GR_OK, "%s", err);
  CHECK (fabs (f->cam.fx - 4.3 * 16393.44262295082 / 25.4 * 0.9) < 1e-6, "fx %.3f",
      f->cam.fx);

  /* 3. features of the downscaled frame */
  GrRaster r;
  memset (&r, 0, sizeof r);
  ok = gr_raster_load (path, 0, &r, err, sizeof err) == GR_OK;
  CHECK (ok, "%s", err);
  g_free (path);
  if (!ok)
    return false;
  memset (&f->small, 0, sizeof f->small);
  ok = gr_plane_downscale (&r.plane, SCALE, &f->small) == GR_OK;
  gr_raster_clear (&r);
  CHECK (ok, "downscale");
  GrDescriptorParams dp;
  gr_descriptor_params_init (&dp);
  GrKeypointParams kpp;
  gr_keypoint_params_init (&kpp);
  kpp.max_keypoints = MAX_FEATURES;
  kpp.margin = gr_descriptor_margin (&dp);
  f->kp = g_new (GrKeypoint, MAX_FEATURES);
  f->desc = g_new (float, (size_t) MAX_FEATURES * dp.size);
  f->nk = gr_features_extract (feat, &f->small, &kpp, &dp, f->kp, MAX_FEATURES, f->desc,
      NULL, NULL, err, sizeof err);
  CHECK (f->nk > 500, "%s: %d keypoints (%s)", names[i], f->nk, err);
  return ok && f->nk > 0;
}

/* The homography a -> b (downscaled pixels) from mutual ratio-test matches and the
 * project's robust fit; false when the frames do not match. */
static bool
image_mapping (GrMatcher *mt, const Frame *a, const Frame *b, double h[9], int *inliers)
{
  const int k = 64, n = a->nk + b->nk;
  float *desc = g_new (float, (size_t) n * k);
  memcpy (desc, a->desc, sizeof (float) * a->nk * k);
  memcpy (desc + (size_t) a->nk * k, b->desc, sizeof (float) * b->nk * k);
  const int64_t offsets[3] = { 0, a->nk, n };
  int32_t *out = g_new (int32_t, 2 * (size_t) n);
  char err[256] = "";
  GrStatus st = gr_matcher_match_all (mt, desc, k, offsets, 2, RATIO, out, NULL, err,
      sizeof err);
  CHECK (st == GR_OK, "matcher: %s", err);
  double *src = g_new (double, 4 * (size_t) a->nk), *dst = src + 2 * a->nk;
  int m = 0;
  for (int j = 0; st == GR_OK && j < a->nk; j++) {
    const int jb = out[n + j];                /* j's neighbour in b */
    if (jb < 0 || out[a->nk + jb] != j)       /* mutual only */
      continue;
    src[2 * m] = a->kp[j].x;
    src[2 * m + 1] = a->kp[j].y;
    dst[2 * m] = b->kp[jb].x;
    dst[2 * m + 1] = b->kp[jb].y;
    m++;
  }
  GrFitParams fp;
  gr_fit_params_init (&fp, GR_MODEL_HOMOGRAPHY);
  fp.threshold = 1.5;
  fp.seed = 13;
  GrFit fit;
  bool ok = m >= 12 && gr_fit_robust (src, dst, NULL, m, &fp, &fit, NULL) == GR_FIT_OK &&
      fit.inliers >= 30;
  if (ok) {
    memcpy (h, fit.h, sizeof fit.h);
    *inliers = fit.inliers;
  }
  g_free (src);
  g_free (out);
  g_free (desc);
  return ok;
}

/* Over a grid of frame-a pixels that the image homography puts inside frame b: the
 * largest and the mean distance (full-resolution pixels of b) between where the pose
 * prediction and the image homography put them, and the share of a that overlaps b. */
static void
compare (const double pred[9], const double img_small[9], int w, int h, double *worst,
    double *mean, double *overlap)
{
  int n = 0, all = 0;
  double sum = 0;
  *worst = 0;
  for (int gy = 0; gy <= 40; gy++)
    for (int gx = 0; gx <= 40; gx++) {
      const double x = gx * (w - 1) / 40.0, y = gy * (h - 1) / 40.0;
      double xs, ys, xp, yp;
      all++;
      if (!gr_fit_apply (img_small, to_small (x), to_small (y), &xs, &ys))
        continue;
      xs = to_full (xs);
      ys = to_full (ys);
      if (xs < 0 || ys < 0 || xs > w - 1 || ys > h - 1)
        continue;
      if (!gr_fit_apply (pred, x, y, &xp, &yp)) {
        *worst = INFINITY;
        continue;
      }
      const double d = hypot (xp - xs, yp - ys);
      *worst = fmax (*worst, d);
      sum += d;
      n++;
    }
  *mean = n ? sum / n : NAN;
  *overlap = (double) n / all;
}

int
main (void)
{
  const char *dir = g_getenv ("GEOREG_DATA");
  gchar *probe = dir ? g_build_filename (dir, "seneca", names[0], NULL) : NULL;
  if (!probe || !g_file_test (probe, G_FILE_TEST_EXISTS)) {
    printf ("SKIP: GEOREG_DATA does not name a folder with seneca/ (set it to "
        "shared/data)\n");
    g_free (probe);
    return 77;
  }
  g_free (probe);
  gchar *csv_path = g_build_filename (dir, "seneca", "telemetry.csv", NULL);
  char err[256] = "";
  GrStatus st;
  GrTelemetryCsv *csv = gr_telemetry_csv_load (csv_path, &st, err, sizeof err);
  g_free (csv_path);
  CHECK (csv && gr_telemetry_csv_rows (csv) == NFRAMES, "telemetry.csv: %s", err);
  if (!csv)
    return CHECK_DONE ();
  GrFeatures *feat = gr_features_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
  GrMatcher *mt = gr_matcher_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
  CHECK (feat && mt, "engines: %s", err);
  Frame fr[NFRAMES];
  memset (fr, 0, sizeof fr);
  bool loaded = feat && mt;
  for (int i = 0; loaded && i < NFRAMES; i++)
    loaded = load_frame (dir, i, csv, feat, &fr[i]);

  /* footprints from the poses: GSD and ground size as the data's README states */
  for (int i = 0; loaded && i < NFRAMES; i++) {
    GrCameraPose pose = pose_of (&fr[i].prior);
    double c[8];
    const double gsd = gr_camera_gsd (&fr[i].cam, &pose);
    CHECK (gr_camera_footprint (&fr[i].cam, &pose, c), "%s footprint", names[i]);
    CHECK (gsd > 0.024 && gsd < 0.032, "%s GSD %.4f m (README: 2.5-3 cm)", names[i], gsd);
    printf ("%s: height %.1f m, heading %.1f, pitch %.1f, roll %.1f, GSD %.2f cm, "
        "footprint corners (E,N) m: (%.1f,%.1f) (%.1f,%.1f) (%.1f,%.1f) (%.1f,%.1f)\n",
        names[i], pose.height_m, pose.yaw_deg, pose.pitch_deg, pose.roll_deg, gsd * 100,
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
  }

  /* senseFly's Height is the altitude above the take-off point, not above the ground
   * under the camera: AltitudeAMSL - Height is one constant over the flight. */
  for (int i = 1; loaded && i < NFRAMES; i++) {
    const double t0 = fr[0].prior.alt_amsl.value - fr[0].prior.height_agl.value;
    const double ti = fr[i].prior.alt_amsl.value - fr[i].prior.height_agl.value;
    CHECK (fabs (ti - t0) < 1e-3, "%s: AltitudeAMSL - Height %.4f, frame 0 %.4f", names[i],
        ti, t0);
    if (i == NFRAMES - 1)
      printf ("AltitudeAMSL - Height = %.3f m on all frames: Height is above the take-off "
          "point\n", t0);
  }

  /* consecutive pairs: pose prediction vs image homography */
  int matched = 0, same_line = 0, within_issue = 0;
  GrCameraPair pairs[NFRAMES];
  for (int i = 0; loaded && i + 1 < NFRAMES; i++) {
    const Frame *a = &fr[i], *b = &fr[i + 1];
    const int w = a->cam.width, h = a->cam.height;
    double pred[9], img[9], worst, mean, overlap;
    int inliers = 0;
    const bool have_pred = predicted_mapping (a, b, pred);
    CHECK (have_pred, "%s -> %s: no pose prediction", names[i], names[i + 1]);
    if (!have_pred)
      continue;
    if (!image_mapping (mt, a, b, img, &inliers)) {
      printf ("%s -> %s: no image homography (GPS fixes %.0f m apart: little or no "
          "overlap)\n", names[i], names[i + 1], fix_distance (a, b));
      continue;
    }
    GrCameraPair *pr = &pairs[matched++];
    pr->cam_a = &a->cam;
    pr->cam_b = &b->cam;
    pr->pose_a = pose_of (&a->prior);
    pr->pose_b = pose_of (&b->prior);
    gr_wgs84_local_offset (a->prior.lat.value, a->prior.lon.value, b->prior.lat.value,
        b->prior.lon.value, &pr->de_m, &pr->dn_m);
    small_to_full (img, pr->h_ab);
    compare (pred, img, w, h, &worst, &mean, &overlap);
    Motion mp, mi;
    motion_of (pred, false, w, h, &mp);
    motion_of (img, true, w, h, &mi);
    printf ("%s -> %s: %d inliers, overlap %.0f%%; frame centre moves (%.0f, %.0f) px "
        "and turns %.1f deg by the poses, (%.0f, %.0f) px and %.1f deg by the images; "
        "disagreement mean %.0f px, worst %.0f px = %.1f%% of the frame width\n",
        names[i], names[i + 1], inliers, 100 * overlap, mp.dx, mp.dy, mp.turn, mi.dx, mi.dy,
        mi.turn, mean, worst, 100 * worst / w);
    /* both mappings at full resolution, so the pair can be inspected (a warp of a onto
     * b with these coefficients must line the crop rows up) */
    printf ("  image H (full px, a -> b): %.6g %.6g %.6g  %.6g %.6g %.6g  %.6g %.6g %.6g\n"
        "  poses H (full px, a -> b): %.6g %.6g %.6g  %.6g %.6g %.6g  %.6g %.6g %.6g\n",
        pr->h_ab[0], pr->h_ab[1], pr->h_ab[2], pr->h_ab[3], pr->h_ab[4], pr->h_ab[5],
        pr->h_ab[6], pr->h_ab[7], pr->h_ab[8], pred[0], pred[1], pred[2], pred[3], pred[4],
        pred[5], pred[6], pred[7], pred[8]);
    within_issue += worst <= AGREE_SHARE * w;
    /* frames of one flight line (course change under 20 degrees) */
    double turn = fabs (b->prior.cam_yaw.value - a->prior.cam_yaw.value);
    turn = fmin (turn, 360 - turn);
    if (turn < 20 && overlap > 0.1) {
      same_line++;
      CHECK (worst <= PRIOR_SHARE * w, "%s -> %s: the poses predict the mapping %.0f px "
          "off (more than %.0f%% of the frame)", names[i], names[i + 1], worst,
          100 * PRIOR_SHARE);
    }
  }
  printf ("issue 13's target (within %.0f%% of the frame): met by %d of %d matched pairs "
      "(docs/telemetry.md explains the gap)\n", 100 * AGREE_SHARE, within_issue, matched);

  /* What no yaw correction can fix: the best worst-case disagreement over any pair of
   * yaws (each within 45 degrees of its logged course), with the logged heights,
   * pitches and rolls; then with one height scale free as well (0.70-1.10). */
  for (int k = 0; k < matched; k++) {
    double fl_yaw = INFINITY, fl_scale = INFINITY, best_s = 1, ya = 0, yb = 0;
    for (double hs = 0.70; hs < 1.1005; hs += 0.01)
      for (double da = -45; da <= 45; da += 1)
        for (double db = -45; db <= 45; db += 1) {
          GrCameraPair q = pairs[k];
          q.pose_a.yaw_deg += da;
          q.pose_b.yaw_deg += db;
          q.pose_a.height_m *= hs;
          q.pose_b.height_m *= hs;
          const double d = gr_camera_pair_disagreement (&q, NULL, NULL);
          if (fabs (hs - 1) < 1e-9 && d < fl_yaw) {
            fl_yaw = d;
            ya = da;
            yb = db;
          }
          if (d < fl_scale) {
            fl_scale = d;
            best_s = hs;
          }
        }
    const double w = pairs[k].cam_a->width;
    printf ("pair %d, best over any yaws (%+.0f, %+.0f deg): %.1f%% of the frame width; "
        "with a height scale too (x%.2f): %.1f%%\n", k, ya, yb, 100 * fl_yaw / w, best_s,
        100 * fl_scale / w);
    /* pair 0468 -> 0469 (straight, level): even the best yaws leave more than 5% */
    if (k == 0)
      CHECK (fl_yaw > AGREE_SHARE * w, "pair 0: yaws alone reach %.1f%%", 100 * fl_yaw / w);
  }

  /* The wind triangle (telemetry.h): the course, ground speed and AirSpeed of the six
   * frames give the wind and each frame's yaw (nose direction) instead of its course. */
  GrPosePrior priors[NFRAMES];
  for (int i = 0; loaded && i < NFRAMES; i++)
    priors[i] = fr[i].prior;
  for (int fit_k = 0; loaded && fit_k < 2; fit_k++) {
    GrWind wind;
    const bool got = gr_telemetry_wind_estimate (priors, NFRAMES, fit_k, &wind);
    CHECK (got, "wind triangle (airspeed scale %s)", fit_k ? "fitted" : "1");
    if (!got)
      continue;
    printf ("wind triangle%s: wind %.1f m/s towards %.0f deg, airspeed x%.2f, RMS %.2f m/s; "
        "crab (yaw - course):", fit_k ? " (airspeed scale fitted)" : "",
        hypot (wind.east, wind.north), fmod (atan2 (wind.east, wind.north) * 180 / M_PI +
            360, 360), wind.airspeed_scale, wind.rms);
    GrPosePrior wp[NFRAMES];
    for (int i = 0; i < NFRAMES; i++) {
      wp[i] = priors[i];
      CHECK (gr_pose_prior_apply_wind (&wp[i], &wind), "apply wind %d", i);
      double c = wp[i].cam_yaw.value - priors[i].cam_yaw.value;
      c = fmod (c + 540, 360) - 180;
      printf (" %+.1f", c);
    }
    printf ("\n");
    for (int k = 0; k < matched; k++) {
      GrCameraPair q = pairs[k];
      int a = -1;
      for (int i = 0; i < NFRAMES; i++)
        if (pairs[k].cam_a == &fr[i].cam)
          a = i;
      q.pose_a.yaw_deg = wp[a].cam_yaw.value;
      q.pose_b.yaw_deg = wp[a + 1].cam_yaw.value;
      const double w = q.cam_a->width;
      printf ("  pair %d: %.1f%% of the frame width with the logged course, %.1f%% with "
          "the wind triangle's yaws\n", k, 100 * gr_camera_pair_disagreement (&pairs[k],
              NULL, NULL) / w, 100 * gr_camera_pair_disagreement (&q, NULL, NULL) / w);
    }
  }
  CHECK (same_line >= 1, "no pair along one line matched (%d pairs matched)", matched);

  /* Boresight self-calibration (camera.h), leave-one-pair-out: estimated on the other
   * matched pairs, checked on the held-out one.  Printed, not asserted against 5%: with
   * the logged course standing in for the yaw, the yaw error differs from frame to frame
   * (docs/telemetry.md), which no fixed mounting offset can absorb. */
  GrBoresight all;
  double rms = NAN;
  if (matched >= 1) {
    CHECK (gr_camera_boresight_estimate (pairs, matched, true, &all, &rms),
        "boresight estimate on all %d pairs", matched);
    printf ("boresight on all %d pairs: roll %.1f, pitch %.1f, yaw %.1f deg, height x%.3f, "
        "RMS %.0f px\n", matched, all.roll_deg, all.pitch_deg, all.yaw_deg,
        all.height_scale, rms);
  }
  for (int k = 0; matched >= 2 && k < matched; k++) {
    GrCameraPair rest[NFRAMES];
    int nr = 0;
    for (int j = 0; j < matched; j++)
      if (j != k)
        rest[nr++] = pairs[j];
    GrBoresight bs;
    const bool est = gr_camera_boresight_estimate (rest, nr, true, &bs, &rms);
    CHECK (est, "boresight estimate without pair %d", k);
    const double w = pairs[k].cam_a->width;
    const double before = gr_camera_pair_disagreement (&pairs[k], NULL, NULL);
    const double after = est ? gr_camera_pair_disagreement (&pairs[k], &bs, NULL) : NAN;
    printf ("held-out pair %d: boresight from the other pairs (roll %.1f, pitch %.1f, "
        "yaw %.1f, height x%.3f) takes it from %.1f%% to %.1f%% of the frame width\n", k,
        bs.roll_deg, bs.pitch_deg, bs.yaw_deg, bs.height_scale, 100 * before / w,
        100 * after / w);
  }

  for (int i = 0; i < NFRAMES; i++) {
    gr_plane_clear (&fr[i].small);
    g_free (fr[i].kp);
    g_free (fr[i].desc);
  }
  gr_features_free (feat);
  gr_matcher_free (mt);
  gr_telemetry_csv_free (csv);
  return CHECK_DONE ();
}
