/* Camera model (camera.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "camera.h"
#include "fit.h"

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
  if ((double) width / height > 1.5 + 1e-3)
    diag = 1.25 * width;                   /* 16:9 cropped from a 4:3 sensor */
  init_center (cam, width, height, focal_35mm / FULL_FRAME_DIAGONAL_MM * diag);
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
  double sw;
  if (prior->focal_mm.have && gr_camera_sensor_lookup (prior->make, prior->model, &sw,
          NULL)) {
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

static void
distort_normalized (const GrCamera *c, double x, double y, double *xd, double *yd)
{
  const double r2 = x * x + y * y;
  const double radial = 1 + r2 * (c->k1 + r2 * (c->k2 + r2 * c->k3));
  *xd = x * radial + 2 * c->p1 * x * y + c->p2 * (r2 + 2 * x * x);
  *yd = y * radial + c->p1 * (r2 + 2 * y * y) + 2 * c->p2 * x * y;
}

void
gr_camera_distort (const GrCamera *cam, double u, double v, double *ud, double *vd)
{
  double xd, yd;
  distort_normalized (cam, (u - cam->cx) / cam->fx, (v - cam->cy) / cam->fy, &xd, &yd);
  *ud = cam->cx + cam->fx * xd;
  *vd = cam->cy + cam->fy * yd;
}

bool
gr_camera_undistort (const GrCamera *cam, double ud, double vd, double *u, double *v)
{
  const double xd = (ud - cam->cx) / cam->fx, yd = (vd - cam->cy) / cam->fy;
  double x = xd, y = yd;
  bool ok = false;
  for (int it = 0; it < 50; it++) {
    const double r2 = x * x + y * y;
    const double radial = 1 + r2 * (cam->k1 + r2 * (cam->k2 + r2 * cam->k3));
    const double dx = 2 * cam->p1 * x * y + cam->p2 * (r2 + 2 * x * x);
    const double dy = cam->p1 * (r2 + 2 * y * y) + 2 * cam->p2 * x * y;
    if (!(radial > 1e-6) || !isfinite (dx) || !isfinite (dy))
      break;
    x = (xd - dx) / radial;
    y = (yd - dy) / radial;
    double ex, ey;
    distort_normalized (cam, x, y, &ex, &ey);
    if (hypot ((ex - xd) * cam->fx, (ey - yd) * cam->fy) < 1e-9) {
      ok = true;
      break;
    }
  }
  *u = cam->cx + cam->fx * x;
  *v = cam->cy + cam->fy * y;
  return ok && isfinite (*u) && isfinite (*v);
}

/* ---- pose -> ground --------------------------------------------------------------- */

void
gr_camera_rotation (const GrCameraPose *pose, double r[9])
{
  const double cy = cos (pose->yaw_deg * DEG), sy = sin (pose->yaw_deg * DEG);
  const double cp = cos (pose->pitch_deg * DEG), sp = sin (pose->pitch_deg * DEG);
  const double cr = cos (pose->roll_deg * DEG), sr = sin (pose->roll_deg * DEG);
  /* body (forward, right, down) -> north, east, down: Rz(yaw) Ry(pitch) Rx(roll) */
  const double nb[9] = {
    cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr,
    sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr,
    -sp, cp * sr, cp * cr,
  };
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
