/* Camera model (camera.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "camera.h"
#include "fit.h"
#include "brown_conrady.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <yaml.h>

#define DEG (M_PI / 180.0)
#define FULL_FRAME_DIAGONAL_MM 43.2666   /* hypot (36, 24) */

/* Sensor sizes from the makers' specifications (1/2.3" = 6.17 x 4.55 mm, 1" = 13.2 x
 * 8.8 mm, 4/3" = 17.3 x 13.0 mm).  `model` is matched as a prefix of EXIF Model. */
static const struct {
  const char *make, *model;
  double w_mm, h_mm;
} sensors[] = {
  { "Canon", "Canon PowerShot ELPH 300 HS", 6.17, 4.55 },   /* senseFly swinglet CAM */
  { "Canon", "Canon IXUS 220 HS", 6.17, 4.55 },             /* the same camera, EU name */
  { "DJI", "FC300S", 6.17, 4.55 },                          /* Phantom 3 Advanced */
  { "DJI", "FC300X", 6.17, 4.55 },                          /* Phantom 3 Professional */
  { "DJI", "FC330", 6.17, 4.55 },                           /* Phantom 4 */
  { "DJI", "FC220", 6.17, 4.55 },                           /* Mavic Pro */
  { "DJI", "FC6310", 13.2, 8.8 },                           /* Phantom 4 Pro (and S) */
  { "Hasselblad", "L1D-20c", 13.2, 8.8 },                   /* Mavic 2 Pro */
  { "DJI", "FC6520", 17.3, 13.0 },                          /* Zenmuse X5S */
};

bool
gr_camera_sensor_lookup (const char *make, const char *model, double *sensor_w_mm,
    double *sensor_h_mm)
{
  if (!make || !model)
    return false;
  for (size_t i = 0; i < G_N_ELEMENTS (sensors); i++)
    if (g_ascii_strncasecmp (make, sensors[i].make, strlen (sensors[i].make)) == 0 &&
        g_ascii_strncasecmp (model, sensors[i].model, strlen (sensors[i].model)) == 0) {
      if (sensor_w_mm)
        *sensor_w_mm = sensors[i].w_mm;
      if (sensor_h_mm)
        *sensor_h_mm = sensors[i].h_mm;
      return true;
    }
  return false;
}

static void
init_center (GrCamera *cam, int width, int height, double f)
{
  memset (cam, 0, sizeof *cam);
  cam->width = width;
  cam->height = height;
  cam->fx = cam->fy = f;
  cam->cx = (width - 1) / 2.0;
  cam->cy = (height - 1) / 2.0;
}

void
gr_camera_init_focal (GrCamera *cam, int width, int height, double focal_mm,
    double sensor_width_mm)
{
  init_center (cam, width, height, focal_mm / sensor_width_mm * width);
}

void
gr_camera_init_35mm (GrCamera *cam, int width, int height, double focal_35mm)
{
  double diag = hypot (width, height);
  const double lng = width > height ? width : height, shrt = width > height ? height : width;
  if (lng / shrt > 1.5 + 1e-3)
    diag = 1.25 * lng;                     /* 16:9 cropped from a 4:3 sensor, either way up */
  init_center (cam, width, height, focal_35mm / FULL_FRAME_DIAGONAL_MM * diag);
}

bool
gr_camera_focal_from_exif_pitch (const GrPosePrior *prior, int width, int height,
    double *f_px)
{
  if (!prior || width <= 0 || height <= 0 || !prior->focal_mm.have ||
      !prior->focal_plane_px_per_mm.have)
    return false;
  /* the size the pitch refers to: PixelX/YDimension, else the file's own */
  const double ew = prior->exif_pixel_width > 0 ? prior->exif_pixel_width : width;
  const double eh = prior->exif_pixel_height > 0 ? prior->exif_pixel_height : height;
  /* a sensor 1 to 60 mm wide, or the tag is not a pitch we can use */
  const double sensor_mm = ew / prior->focal_plane_px_per_mm.value;
  if (!(sensor_mm >= 1 && sensor_mm <= 60))
    return false;
  /* The file is that image resized (one scale for both axes), or turned by a quarter
   * since (gr_pose_prior_quarter_turned: the sides swap); another aspect means a crop
   * we cannot place (16:9 cut from 4:3, say), so leave it to the other sources. */
  double sx = width / ew, sy = height / eh;
  if (fabs (sx / sy - 1) > 0.01) {
    sx = width / eh;
    sy = height / ew;
    if (fabs (sx / sy - 1) > 0.01)
      return false;
  }
  *f_px = prior->focal_mm.value * prior->focal_plane_px_per_mm.value * sx;
  return isfinite (*f_px) && *f_px > 0;
}

GrStatus
gr_camera_from_prior (const GrPosePrior *prior, int width, int height, GrCamera *cam,
    char *err, size_t errlen)
{
  if (!prior || !cam) {
    gr_set_err (err, errlen, "no prior or no camera");
    return GR_ERR_INVALID;
  }
  if (width <= 0 || height <= 0) {
    width = prior->image_width;
    height = prior->image_height;
  }
  if (width <= 0 || height <= 0) {
    gr_set_err (err, errlen, "image size unknown");
    return GR_ERR_INVALID;
  }
  double sw, fpx;
  if (gr_camera_focal_from_exif_pitch (prior, width, height, &fpx)) {
    gr_camera_init_focal (cam, width, height, fpx, width);
    return GR_OK;
  }
  if (prior->focal_mm.have && gr_camera_sensor_lookup (prior->make, prior->model, &sw,
          NULL)) {
    /* the table's sensor width lies along the image's width, or along its height when
     * the file was turned by a quarter since */
    if (gr_pose_prior_quarter_turned (prior))
      init_center (cam, width, height, prior->focal_mm.value / sw * height);
    else
      gr_camera_init_focal (cam, width, height, prior->focal_mm.value, sw);
    return GR_OK;
  }
  if (prior->focal_35mm.have) {
    gr_camera_init_35mm (cam, width, height, prior->focal_35mm.value);
    return GR_OK;
  }
  gr_set_err (err, errlen, "no focal length: camera \"%s %s\" is not in the sensor table "
      "and EXIF has no FocalLengthIn35mmFilm (give a calibration file)", prior->make,
      prior->model);
  return GR_ERR_INVALID;
}

/* ---- distortion ------------------------------------------------------------------- */

/* the arithmetic lives in brown_conrady.h, shared with the public meta library */
void
gr_camera_distort (const GrCamera *cam, double u, double v, double *ud, double *vd)
{
  const double k[5] = { cam->k1, cam->k2, cam->k3, cam->p1, cam->p2 };
  double xd, yd;
  gr_bc_distort_normalized (k, (u - cam->cx) / cam->fx, (v - cam->cy) / cam->fy, &xd, &yd);
  *ud = cam->cx + cam->fx * xd;
  *vd = cam->cy + cam->fy * yd;
}

bool
gr_camera_undistort (const GrCamera *cam, double ud, double vd, double *u, double *v)
{
  const double k[5] = { cam->k1, cam->k2, cam->k3, cam->p1, cam->p2 };
  double x, y;
  const bool ok = gr_bc_undistort_normalized (k, cam->fx, cam->fy, (ud - cam->cx) / cam->fx,
      (vd - cam->cy) / cam->fy, &x, &y);
  *u = cam->cx + cam->fx * x;
  *v = cam->cy + cam->fy * y;
  return ok && isfinite (*u) && isfinite (*v);
}

/* ---- pose -> ground --------------------------------------------------------------- */

/* body (forward, right, down) -> north, east, down: Rz(yaw) Ry(pitch) Rx(roll) */
static void
body_to_ned (double yaw_deg, double pitch_deg, double roll_deg, double nb[9])
{
  const double cy = cos (yaw_deg * DEG), sy = sin (yaw_deg * DEG);
  const double cp = cos (pitch_deg * DEG), sp = sin (pitch_deg * DEG);
  const double cr = cos (roll_deg * DEG), sr = sin (roll_deg * DEG);
  const double m[9] = {
    cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr,
    sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr,
    -sp, cp * sr, cp * cr,
  };
  memcpy (nb, m, sizeof m);
}

void
gr_camera_rotation (const GrCameraPose *pose, double r[9])
{
  double nb[9];
  body_to_ned (pose->yaw_deg, pose->pitch_deg, pose->roll_deg, nb);
  /* camera (right, image-down, optical axis) in the body: (0,1,0), (-1,0,0), (0,0,1) */
  const double bc[9] = { 0, -1, 0, 1, 0, 0, 0, 0, 1 };
  /* north-east-down -> east-north-up */
  const double en[9] = { 0, 1, 0, 1, 0, 0, 0, 0, -1 };
  double t[9];
  gr_mat3_mul (nb, bc, t);
  gr_mat3_mul (en, t, r);
}

bool
gr_camera_ground_homography (const GrCamera *cam, const GrCameraPose *pose, double h[9])
{
  if (!cam || !pose || !(pose->height_m > 0) || !(cam->fx > 0) || !(cam->fy > 0) ||
      cam->width < 1 || cam->height < 1 || !isfinite (pose->yaw_deg) ||
      !isfinite (pose->pitch_deg) || !isfinite (pose->roll_deg))
    return false;
  double r[9], m[9];
  gr_camera_rotation (pose, r);
  const double kinv[9] = {
    1 / cam->fx, 0, -cam->cx / cam->fx,
    0, 1 / cam->fy, -cam->cy / cam->fy,
    0, 0, 1,
  };
  gr_mat3_mul (r, kinv, m);                /* pixel -> world ray direction */
  /* The ray from (0, 0, height) along d meets z = 0 at height * (-dx / dz, -dy / dz):
   * homogeneous (height dx, height dy, -dz).  All four corners must look down (then
   * the whole frame does: the horizon is a line in the image). */
  const double corners[4][2] = { { 0, 0 }, { cam->width - 1, 0 },
    { cam->width - 1, cam->height - 1 }, { 0, cam->height - 1 } };
  for (int i = 0; i < 4; i++) {
    const double u = corners[i][0], v = corners[i][1];
    const double dx = m[0] * u + m[1] * v + m[2], dy = m[3] * u + m[4] * v + m[5];
    const double dz = m[6] * u + m[7] * v + m[8];
    if (!(-dz > sin (1.0 * DEG) * sqrt (dx * dx + dy * dy + dz * dz)))
      return false;
  }
  const double hh = pose->height_m;
  double raw[9] = { hh * m[0], hh * m[1], hh * m[2], hh * m[3], hh * m[4], hh * m[5],
    -m[6], -m[7], -m[8] };
  if (!(fabs (raw[8]) > 1e-12))
    return false;
  for (int i = 0; i < 9; i++)
    h[i] = raw[i] / raw[8];
  return true;
}

bool
gr_camera_footprint (const GrCamera *cam, const GrCameraPose *pose, double corners[8])
{
  double h[9];
  if (!gr_camera_ground_homography (cam, pose, h))
    return false;
  const double px[4][2] = { { 0, 0 }, { cam->width - 1, 0 },
    { cam->width - 1, cam->height - 1 }, { 0, cam->height - 1 } };
  for (int i = 0; i < 4; i++) {
    double u, v;
    if (!gr_camera_undistort (cam, px[i][0], px[i][1], &u, &v) ||
        !gr_fit_apply (h, u, v, &corners[2 * i], &corners[2 * i + 1]))
      return false;
  }
  return true;
}

double
gr_camera_gsd (const GrCamera *cam, const GrCameraPose *pose)
{
  double h[9];
  if (!gr_camera_ground_homography (cam, pose, h))
    return NAN;
  /* Jacobian of the homography at the principal point */
  const double x = cam->cx, y = cam->cy;
  const double w = h[6] * x + h[7] * y + h[8];
  const double X = (h[0] * x + h[1] * y + h[2]) / w, Y = (h[3] * x + h[4] * y + h[5]) / w;
  const double j00 = (h[0] - X * h[6]) / w, j01 = (h[1] - X * h[7]) / w;
  const double j10 = (h[3] - Y * h[6]) / w, j11 = (h[4] - Y * h[7]) / w;
  return sqrt (fabs (j00 * j11 - j01 * j10));
}

/* ---- boresight self-calibration --------------------------------------------------- */

void
gr_camera_pose_apply_boresight (const GrCameraPose *pose, const GrBoresight *bs,
    GrCameraPose *out)
{
  double nb[9], b[9], t[9];
  body_to_ned (pose->yaw_deg, pose->pitch_deg, pose->roll_deg, nb);
  body_to_ned (bs->yaw_deg, bs->pitch_deg, bs->roll_deg, b);
  gr_mat3_mul (nb, b, t);
  /* t = Rz(yaw) Ry(pitch) Rx(roll): t[6] = -sin pitch, t[7] / t[8] = tan roll,
   * t[3] / t[0] = tan yaw */
  GrCameraPose o;
  o.pitch_deg = asin (fmax (-1.0, fmin (1.0, -t[6]))) / DEG;
  o.roll_deg = atan2 (t[7], t[8]) / DEG;
  o.yaw_deg = atan2 (t[3], t[0]) / DEG;
  if (o.yaw_deg < 0)
    o.yaw_deg += 360;
  o.height_m = pose->height_m * bs->height_scale;
  *out = o;
}

bool
gr_camera_pair_predict (const GrCameraPair *pair, const GrBoresight *bs, double h[9])
{
  GrCameraPose pa = pair->pose_a, pb = pair->pose_b;
  if (bs) {
    gr_camera_pose_apply_boresight (&pair->pose_a, bs, &pa);
    gr_camera_pose_apply_boresight (&pair->pose_b, bs, &pb);
  }
  double ga[9], gb[9], gbi[9], t[9];
  if (!gr_camera_ground_homography (pair->cam_a, &pa, ga) ||
      !gr_camera_ground_homography (pair->cam_b, &pb, gb) || !gr_mat3_inverse (gb, gbi))
    return false;
  /* ground east/north about a's nadir -> about b's */
  const double shift[9] = { 1, 0, -pair->de_m, 0, 1, -pair->dn_m, 0, 0, 1 };
  gr_mat3_mul (shift, ga, t);
  gr_mat3_mul (gbi, t, h);
  return true;
}

#define PAIR_GRID 11
#define BS_MAX_PARAMS 4

/* The grid of a's pixels the image homography keeps inside b, as (x, y) in a and the
 * imaged (x, y) in b; returns how many. */
static int
pair_grid (const GrCameraPair *pair, double *pts)
{
  const GrCamera *ca = pair->cam_a, *cb = pair->cam_b;
  int n = 0;
  for (int gy = 0; gy < PAIR_GRID; gy++)
    for (int gx = 0; gx < PAIR_GRID; gx++) {
      const double x = gx * (ca->width - 1) / (PAIR_GRID - 1.0);
      const double y = gy * (ca->height - 1) / (PAIR_GRID - 1.0);
      double xb, yb;
      if (!gr_fit_apply (pair->h_ab, x, y, &xb, &yb) || xb < 0 || yb < 0 ||
          xb > cb->width - 1 || yb > cb->height - 1)
        continue;
      double *q = pts + 4 * n++;
      q[0] = x;
      q[1] = y;
      q[2] = xb;
      q[3] = yb;
    }
  return n;
}

double
gr_camera_pair_disagreement (const GrCameraPair *pair, const GrBoresight *bs,
    double *overlap)
{
  double pts[4 * PAIR_GRID * PAIR_GRID], h[9], worst = 0;
  const int n = pair_grid (pair, pts);
  if (overlap)
    *overlap = n / (double) (PAIR_GRID * PAIR_GRID);
  if (!gr_camera_pair_predict (pair, bs, h))
    return INFINITY;
  for (int i = 0; i < n; i++) {
    double xp, yp;
    if (!gr_fit_apply (h, pts[4 * i], pts[4 * i + 1], &xp, &yp))
      return INFINITY;
    worst = fmax (worst, hypot (xp - pts[4 * i + 2], yp - pts[4 * i + 3]));
  }
  return worst;
}

static void
boresight_of (const double *x, GrBoresight *bs)
{
  bs->roll_deg = x[0];
  bs->pitch_deg = x[1];
  bs->yaw_deg = x[2];
  bs->height_scale = exp (x[3]);
}

/* Residuals (predicted minus imaged, x and y) of every pair's grid; false where a
 * prediction does not exist. */
static bool
boresight_residuals (const GrCameraPair *pairs, int n_pairs, const double *grids,
    const int *counts, const double *x, double *r)
{
  GrBoresight bs;
  boresight_of (x, &bs);
  const double *g = grids;
  for (int k = 0; k < n_pairs; k++) {
    double h[9];
    if (counts[k] > 0 && !gr_camera_pair_predict (&pairs[k], &bs, h))
      return false;
    for (int i = 0; i < counts[k]; i++, g += 4) {
      double xp, yp;
      if (!gr_fit_apply (h, g[0], g[1], &xp, &yp))
        return false;
      *r++ = xp - g[2];
      *r++ = yp - g[3];
    }
  }
  return true;
}

static double
sum_sq (const double *r, int n)
{
  double s = 0;
  for (int i = 0; i < n; i++)
    s += r[i] * r[i];
  return s;
}

/* Solves the symmetric positive definite n x n system a x = b (the damped normal
 * equations) by Cholesky factorisation, a overwritten by L; false when not positive
 * definite. */
bool
gr_camera_solve_spd (double *a, const double *b, int n, double *x)
{
  for (int c = 0; c < n; c++) {
    for (int r = c; r < n; r++) {
      double s = a[r * n + c];
      for (int k = 0; k < c; k++)
        s -= a[r * n + k] * a[c * n + k];
      if (r == c) {
        if (!(s > 1e-300))
          return false;
        a[c * n + c] = sqrt (s);
      } else {
        a[r * n + c] = s / a[c * n + c];
      }
    }
  }
  for (int r = 0; r < n; r++) {              /* L y = b */
    double s = b[r];
    for (int k = 0; k < r; k++)
      s -= a[r * n + k] * x[k];
    x[r] = s / a[r * n + r];
  }
  for (int r = n - 1; r >= 0; r--) {         /* L^T x = y */
    double s = x[r];
    for (int k = r + 1; k < n; k++)
      s -= a[k * n + r] * x[k];
    x[r] = s / a[r * n + r];
  }
  return true;
}

bool
gr_camera_boresight_estimate (const GrCameraPair *pairs, int n_pairs,
    bool estimate_height_scale, GrBoresight *bs, double *rms_px)
{
  if (!pairs || n_pairs < 1 || !bs)
    return false;
  const int np = estimate_height_scale ? 4 : 3;
  const size_t per = 4 * PAIR_GRID * PAIR_GRID;
  double *grids = g_new (double, per * n_pairs);
  int *counts = g_new0 (int, n_pairs);
  int m = 0;
  for (int k = 0; k < n_pairs; k++) {
    if (!pairs[k].cam_a || !pairs[k].cam_b)
      continue;
    counts[k] = pair_grid (&pairs[k], grids + (size_t) 4 * m);
    m += counts[k];
  }
  const int nr = 2 * m;
  double *r = g_new (double, (size_t) nr * (2 + BS_MAX_PARAMS));
  double *rt = r + nr, *jac = rt + nr;       /* jac: np columns of nr */
  double x[BS_MAX_PARAMS] = { 0, 0, 0, 0 }, lambda = 1e-3;
  bool ok = m >= 3 && boresight_residuals (pairs, n_pairs, grids, counts, x, r);
  double cost = ok ? sum_sq (r, nr) : INFINITY;
  for (int it = 0; ok && it < 100; it++) {
    /* Jacobian by central differences (0.01 degree, 1e-4 in log height) */
    for (int j = 0; j < np && ok; j++) {
      const double step = j < 3 ? 1e-2 : 1e-4;
      double xp[BS_MAX_PARAMS], xm[BS_MAX_PARAMS];
      memcpy (xp, x, sizeof x);
      memcpy (xm, x, sizeof x);
      xp[j] += step;
      xm[j] -= step;
      double *col = jac + (size_t) j * nr;
      ok = boresight_residuals (pairs, n_pairs, grids, counts, xp, col) &&
          boresight_residuals (pairs, n_pairs, grids, counts, xm, rt);
      for (int i = 0; ok && i < nr; i++)
        col[i] = (col[i] - rt[i]) / (2 * step);
    }
    if (!ok)
      break;
    double jtj[BS_MAX_PARAMS * BS_MAX_PARAMS], jtr[BS_MAX_PARAMS];
    for (int a = 0; a < np; a++) {
      jtr[a] = 0;
      for (int i = 0; i < nr; i++)
        jtr[a] -= jac[(size_t) a * nr + i] * r[i];
      for (int b = 0; b < np; b++) {
        double s = 0;
        for (int i = 0; i < nr; i++)
          s += jac[(size_t) a * nr + i] * jac[(size_t) b * nr + i];
        jtj[a * np + b] = s;
      }
    }
    /* Levenberg-Marquardt: grow the damping until a step lowers the cost */
    bool improved = false;
    double dx[BS_MAX_PARAMS] = { 0 };
    for (int tries = 0; tries < 20 && !improved; tries++) {
      double a[BS_MAX_PARAMS * BS_MAX_PARAMS], b[BS_MAX_PARAMS], xn[BS_MAX_PARAMS];
      memcpy (a, jtj, sizeof a);
      memcpy (b, jtr, sizeof b);
      for (int d = 0; d < np; d++)
        a[d * np + d] *= 1 + lambda;
      memcpy (xn, x, sizeof x);
      if (gr_camera_solve_spd (a, b, np, dx)) {
        for (int d = 0; d < np; d++)
          xn[d] += dx[d];
        double c;
        if (boresight_residuals (pairs, n_pairs, grids, counts, xn, rt) &&
            (c = sum_sq (rt, nr)) < cost) {
          improved = true;
          memcpy (x, xn, sizeof x);
          memcpy (r, rt, sizeof (double) * nr);
          const double gain = cost - c;
          cost = c;
          lambda = fmax (lambda / 10, 1e-9);
          if (gain < 1e-12 * (1 + cost))
            it = 100;                          /* converged */
          break;
        }
      }
      lambda *= 10;
    }
    if (!improved)
      break;                                   /* at the minimum (or stuck) */
  }
  ok = ok && isfinite (cost);
  if (ok) {
    boresight_of (x, bs);
    if (rms_px)
      *rms_px = sqrt (cost / m);
  }
  g_free (r);
  g_free (counts);
  g_free (grids);
  return ok;
}

/* ---- calibration files ------------------------------------------------------------ */

#define CALIB_MAX_BYTES (1 << 20)
#define CALIB_MAX_VALUES 16

typedef struct {
  double cm[CALIB_MAX_VALUES];
  int n_cm;
  double dist[CALIB_MAX_VALUES];
  int n_dist;
  double width, height;
} CalibValues;

/* Walks the YAML (or JSON, a subset of YAML's flow style) event stream: top-level keys
 * image_width / image_height (scalars) and camera_matrix / distortion_coefficients
 * (mappings whose "data" is a sequence of numbers).  Anything else is skipped. */
#define CALIB_MAX_DEPTH 8

static GrStatus
calib_walk (yaml_parser_t *yp, CalibValues *cv, char *err, size_t errlen)
{
  int depth = 0;                                   /* open mappings and sequences */
  bool is_map[CALIB_MAX_DEPTH] = { false };
  bool expect_key[CALIB_MAX_DEPTH] = { false };    /* next scalar there is a key */
  char key[CALIB_MAX_DEPTH][32] = { "" };
  for (;;) {
    yaml_event_t ev;
    if (!yaml_parser_parse (yp, &ev)) {
      gr_set_err (err, errlen, "line %zu: %s", yp->problem_mark.line + 1,
          yp->problem ? yp->problem : "parse error");
      return GR_ERR_FORMAT;
    }
    GrStatus st = GR_OK;
    bool done = false;
    switch (ev.type) {
      case YAML_STREAM_END_EVENT:
        done = true;
        break;
      case YAML_MAPPING_START_EVENT:
      case YAML_SEQUENCE_START_EVENT:
        if (++depth >= CALIB_MAX_DEPTH) {
          gr_set_err (err, errlen, "nested too deeply");
          st = GR_ERR_FORMAT;
          break;
        }
        is_map[depth] = ev.type == YAML_MAPPING_START_EVENT;
        expect_key[depth] = is_map[depth];
        key[depth][0] = '\0';
        break;
      case YAML_MAPPING_END_EVENT:
      case YAML_SEQUENCE_END_EVENT:
        if (--depth >= 1 && is_map[depth])
          expect_key[depth] = true;                /* that value is complete */
        break;
      case YAML_SCALAR_EVENT:{
        const char *s = (const char *) ev.data.scalar.value;
        if (depth >= 1 && is_map[depth] && expect_key[depth]) {
          g_strlcpy (key[depth], s, sizeof key[depth]);
          expect_key[depth] = false;
          break;
        }
        char *end;
        const double v = g_ascii_strtod (s, &end);
        const bool num = end != s && *end == '\0' && isfinite (v);
        if (depth == 1 && strcmp (key[1], "image_width") == 0 && num)
          cv->width = v;
        else if (depth == 1 && strcmp (key[1], "image_height") == 0 && num)
          cv->height = v;
        else if (depth == 3 && !is_map[3] && strcmp (key[2], "data") == 0) {
          const bool cm = strcmp (key[1], "camera_matrix") == 0;
          const bool dist = strcmp (key[1], "distortion_coefficients") == 0;
          int *n = cm ? &cv->n_cm : &cv->n_dist;
          if ((cm || dist) && (!num || *n >= CALIB_MAX_VALUES)) {
            gr_set_err (err, errlen, "%s: a value that is not a number, or more than %d",
                key[1], CALIB_MAX_VALUES);
            st = GR_ERR_FORMAT;
          } else if (cm || dist) {
            (cm ? cv->cm : cv->dist)[(*n)++] = v;
          }
        }
        if (depth >= 1 && is_map[depth])
          expect_key[depth] = true;
        break;
      }
      default:
        break;
    }
    yaml_event_delete (&ev);
    if (st != GR_OK || done)
      return st;
  }
}

GrStatus
gr_camera_parse_calibration (const char *text, size_t len, GrCamera *cam, char *err,
    size_t errlen)
{
  if (!text || !cam) {
    gr_set_err (err, errlen, "no text or no camera");
    return GR_ERR_INVALID;
  }
  if (len > CALIB_MAX_BYTES) {
    gr_set_err (err, errlen, "calibration file larger than %d bytes", CALIB_MAX_BYTES);
    return GR_ERR_FORMAT;
  }
  /* OpenCV writes "%YAML:1.0", which YAML parsers reject: skip that line */
  if (len >= 6 && strncmp (text, "%YAML:", 6) == 0) {
    const char *nl = memchr (text, '\n', len);
    size_t skip = nl ? (size_t) (nl - text) + 1 : len;
    text += skip;
    len -= skip;
  }
  yaml_parser_t yp;
  if (!yaml_parser_initialize (&yp)) {
    gr_set_err (err, errlen, "out of memory");
    return GR_ERR_NOMEM;
  }
  yaml_parser_set_input_string (&yp, (const unsigned char *) text, len);
  CalibValues cv = { .width = NAN, .height = NAN };
  GrStatus st = calib_walk (&yp, &cv, err, errlen);
  yaml_parser_delete (&yp);
  if (st != GR_OK)
    return st;
  if (cv.n_cm != 9) {
    gr_set_err (err, errlen, "camera_matrix must hold 9 numbers (found %d)", cv.n_cm);
    return GR_ERR_FORMAT;
  }
  if (cv.n_dist != 0 && cv.n_dist != 4 && cv.n_dist != 5 && cv.n_dist != 8 &&
      cv.n_dist != 12 && cv.n_dist != 14) {
    gr_set_err (err, errlen, "distortion_coefficients: %d values (OpenCV writes 4, 5, 8, "
        "12 or 14)", cv.n_dist);
    return GR_ERR_FORMAT;
  }
  for (int i = 5; i < cv.n_dist; i++)
    if (cv.dist[i] != 0) {
      gr_set_err (err, errlen, "distortion coefficient %d is not 0: the rational, thin "
          "prism and tilted models are not supported", i);
      return GR_ERR_FORMAT;
    }
  if (!(cv.width >= 1 && cv.width <= 1e6 && cv.height >= 1 && cv.height <= 1e6)) {
    gr_set_err (err, errlen, "image_width / image_height missing or out of range");
    return GR_ERR_FORMAT;
  }
  const double *k = cv.cm;
  if (!(k[0] > 0) || !(k[4] > 0) || k[3] != 0 || k[6] != 0 || k[7] != 0 || k[8] != 1) {
    gr_set_err (err, errlen, "camera_matrix is not [fx 0 cx; 0 fy cy; 0 0 1]");
    return GR_ERR_FORMAT;
  }
  memset (cam, 0, sizeof *cam);
  cam->width = (int) cv.width;
  cam->height = (int) cv.height;
  cam->fx = k[0];
  cam->fy = k[4];
  cam->cx = k[2];
  cam->cy = k[5];
  if (cv.n_dist >= 4) {
    cam->k1 = cv.dist[0];
    cam->k2 = cv.dist[1];
    cam->p1 = cv.dist[2];
    cam->p2 = cv.dist[3];
  }
  if (cv.n_dist >= 5)
    cam->k3 = cv.dist[4];
  return GR_OK;
}

GrStatus
gr_camera_load_calibration (const char *path, GrCamera *cam, char *err, size_t errlen)
{
  if (!path || !cam) {
    gr_set_err (err, errlen, "no path or no camera");
    return GR_ERR_INVALID;
  }
  FILE *f = fopen (path, "rb");
  if (!f) {
    gr_set_err (err, errlen, "cannot open %s: %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  /* read at most one byte past the limit, so a huge file is refused unread */
  char *text = g_malloc (CALIB_MAX_BYTES + 1);
  size_t len = fread (text, 1, CALIB_MAX_BYTES + 1, f);
  const bool rerr = ferror (f);
  fclose (f);
  if (rerr) {
    g_free (text);
    gr_set_err (err, errlen, "cannot read %s", path);
    return GR_ERR_IO;
  }
  char e2[200] = "";
  GrStatus st = gr_camera_parse_calibration (text, len, cam, e2, sizeof e2);
  if (st != GR_OK)
    gr_set_err (err, errlen, "%s: %s", path, e2);
  g_free (text);
  return st;
}
