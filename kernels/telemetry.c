/* Telemetry priors from JPEG EXIF/XMP and from CSV files (telemetry.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "telemetry.h"
#include "klv.h"
#include "fit.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <libexif/exif-data.h>
#include <exempi/xmp.h>

/* Default 1-sigma uncertainties when the source states none (documented in
 * docs/telemetry.md): a consumer GNSS fix, its (poor) altitude, the heading of a
 * magnetometer/GNSS course, and attitude angles from an autopilot or gimbal. */
#define SIGMA_POS_M 5.0
#define SIGMA_GPS_ALT_M 10.0
#define SIGMA_BARO_ALT_M 2.0
#define SIGMA_HEADING_DEG 5.0
/* a gimbal's yaw follows the aircraft's magnetometer: no better than its heading */
#define SIGMA_GIMBAL_YAW_DEG 5.0
#define SIGMA_ANGLE_DEG 2.0
/* senseFly's Heading follows the course over ground (it agrees with the bearing between
 * consecutive GPS fixes within 3-5 degrees on the Seneca flight), not the airframe's
 * yaw: the Seneca images turn 7-21 degrees more between frames than it does
 * (tests/test_seneca.c, docs/telemetry.md). */
#define SIGMA_COURSE_DEG 20.0

#define NS_DJI "http://www.dji.com/drone-dji/1.0/"
#define NS_SENSEFLY "http://ns.sensefly.com/sensefly/1.0/"
/* Pix4D's Camera namespace; its specification writes the URI without the final slash,
 * the cameras with it: both are read */
#define NS_PIX4D_CAMERA "http://pix4d.com/camera/1.0/"
#define NS_PIX4D_CAMERA_BARE "http://pix4d.com/camera/1.0"

static const GrPriorValue absent = { NAN, 0.0, false };

/* Every measured value of a prior, for the loops below. */
static const size_t value_offsets[] = {
  offsetof (GrPosePrior, lat), offsetof (GrPosePrior, lon),
  offsetof (GrPosePrior, alt_wgs84), offsetof (GrPosePrior, alt_amsl),
  offsetof (GrPosePrior, height_agl), offsetof (GrPosePrior, rel_alt),
  offsetof (GrPosePrior, flight_yaw), offsetof (GrPosePrior, flight_pitch),
  offsetof (GrPosePrior, flight_roll), offsetof (GrPosePrior, gimbal_yaw),
  offsetof (GrPosePrior, gimbal_pitch), offsetof (GrPosePrior, gimbal_roll),
  offsetof (GrPosePrior, cam_yaw), offsetof (GrPosePrior, cam_pitch),
  offsetof (GrPosePrior, cam_roll), offsetof (GrPosePrior, focal_mm),
  offsetof (GrPosePrior, focal_35mm), offsetof (GrPosePrior, focal_plane_px_per_mm),
  offsetof (GrPosePrior, air_speed), offsetof (GrPosePrior, ground_speed),
};
#define VALUE_AT(p, off) ((GrPriorValue *) ((char *) (p) + (off)))

void
gr_pose_prior_init (GrPosePrior *p)
{
  memset (p, 0, sizeof *p);
  for (size_t i = 0; i < G_N_ELEMENTS (value_offsets); i++)
    *VALUE_AT (p, value_offsets[i]) = absent;
}

void
gr_pose_prior_merge (GrPosePrior *dst, const GrPosePrior *src)
{
  for (size_t i = 0; i < G_N_ELEMENTS (value_offsets); i++) {
    const GrPriorValue *v = VALUE_AT (src, value_offsets[i]);
    if (v->have)
      *VALUE_AT (dst, value_offsets[i]) = *v;
  }
  if (src->image_width > 0 && src->image_height > 0) {
    dst->image_width = src->image_width;
    dst->image_height = src->image_height;
  }
  if (src->exif_pixel_width > 0 && src->exif_pixel_height > 0) {
    dst->exif_pixel_width = src->exif_pixel_width;
    dst->exif_pixel_height = src->exif_pixel_height;
  }
  if (src->make[0])
    memcpy (dst->make, src->make, sizeof dst->make);
  if (src->model[0])
    memcpy (dst->model, src->model, sizeof dst->model);
  if (src->utc[0])
    memcpy (dst->utc, src->utc, sizeof dst->utc);
  dst->sources |= src->sources;
  dst->flags |= src->flags;
  gr_pose_prior_finish (dst);
}

/* Sets v when value is finite and inside [lo, hi]; anything else stays absent, so a
 * garbage field never becomes a prior. */
static void
set_value (GrPriorValue *v, double value, double sigma, double lo, double hi)
{
  if (!isfinite (value) || value < lo || value > hi)
    return;
  v->value = value;
  v->sigma = sigma;
  v->have = true;
}

static double
wrap360 (double a)
{
  a = fmod (a, 360.0);
  return a < 0 ? a + 360.0 : a;
}

void
gr_pose_prior_finish (GrPosePrior *p)
{
  /* yaw angles are stored in [0, 360) */
  GrPriorValue *yaws[] = { &p->flight_yaw, &p->gimbal_yaw, &p->pix4d_yaw };
  for (int i = 0; i < 3; i++)
    if (yaws[i]->have)
      yaws[i]->value = wrap360 (yaws[i]->value);

  /* A gimbal states where the camera looks; without one the camera is fixed to the
   * body looking down (fixed wings, survey quads without gimbal). */
  if (p->gimbal_pitch.have) {
    p->cam_pitch = p->gimbal_pitch;
    p->cam_pitch.value += 90.0;
    p->cam_roll = p->gimbal_roll.have ? p->gimbal_roll : p->flight_roll;
    if (!p->gimbal_roll.have && !p->flight_roll.have)
      p->cam_roll = absent;
    p->cam_yaw = p->gimbal_yaw.have ? p->gimbal_yaw : p->flight_yaw;
  } else if (p->pix4d_pitch.have || p->pix4d_yaw.have) {
    /* Pix4D's Camera angles: the camera's own attitude, in cam_*'s convention */
    p->cam_pitch = p->pix4d_pitch.have ? p->pix4d_pitch : p->flight_pitch;
    p->cam_roll = p->pix4d_roll.have ? p->pix4d_roll : p->flight_roll;
    p->cam_yaw = p->pix4d_yaw.have ? p->pix4d_yaw : p->gimbal_yaw.have ?
        p->gimbal_yaw : p->flight_yaw;
  } else {
    p->cam_pitch = p->flight_pitch;
    p->cam_roll = p->flight_roll;
    p->cam_yaw = p->gimbal_yaw.have ? p->gimbal_yaw : p->flight_yaw;
  }
  p->flags &= ~GR_PRIOR_FLAG_YAW_DISAGREES;
  if (p->gimbal_yaw.have && p->flight_yaw.have && p->gimbal_pitch.have &&
      p->gimbal_pitch.value < -60) {
    double d = fabs (p->gimbal_yaw.value - p->flight_yaw.value);
    d = fmin (d, 360 - d);
    if (d > 20) {
      p->flags |= GR_PRIOR_FLAG_YAW_DISAGREES;
      p->cam_yaw.sigma = fmax (p->cam_yaw.sigma, d);
    }
  }
  if (!p->height_agl.have && p->rel_alt.have)
    set_value (&p->height_agl, p->rel_alt.value,
        0.1 * fabs (p->rel_alt.value) + 1.0, -1000, 100000);
  p->flags &= ~GR_PRIOR_FLAG_QUARTER_TURNED;
  if (gr_pose_prior_quarter_turned (p)) {
    p->flags |= GR_PRIOR_FLAG_QUARTER_TURNED;
    if (p->cam_yaw.have)
      p->cam_yaw.sigma = fmax (p->cam_yaw.sigma, 90.0);
  }
}

bool
gr_pose_prior_quarter_turned (const GrPosePrior *p)
{
  if (!p || p->image_width <= 0 || p->image_height <= 0 || p->exif_pixel_width <= 0 ||
      p->exif_pixel_height <= 0)
    return false;
  /* the file's aspect is the camera's inverted (resized or not), and not square */
  const double exif = (double) p->exif_pixel_width / p->exif_pixel_height;
  const double file = (double) p->image_width / p->image_height;
  return fabs (exif - 1.0) > 0.05 && fabs (file * exif - 1.0) < 0.01;
}

/* ---- EXIF ------------------------------------------------------------------------- */

static bool
exif_rational (ExifEntry *e, ExifByteOrder bo, unsigned i, double *out)
{
  if (!e || !e->data || i >= e->components)
    return false;
  if (e->format == EXIF_FORMAT_RATIONAL && e->size >= (i + 1) * 8) {
    ExifRational r = exif_get_rational (e->data + 8 * i, bo);
    if (r.denominator == 0)
      return false;
    *out = (double) r.numerator / r.denominator;
    return true;
  }
  if (e->format == EXIF_FORMAT_SRATIONAL && e->size >= (i + 1) * 8) {
    ExifSRational r = exif_get_srational (e->data + 8 * i, bo);
    if (r.denominator == 0)
      return false;
    *out = (double) r.numerator / r.denominator;
    return true;
  }
  return false;
}

static bool
exif_integer (ExifEntry *e, ExifByteOrder bo, double *out)
{
  if (!e || !e->data || e->components < 1)
    return false;
  switch (e->format) {
    case EXIF_FORMAT_SHORT:
      if (e->size < 2)
        return false;
      *out = exif_get_short (e->data, bo);
      return true;
    case EXIF_FORMAT_LONG:
      if (e->size < 4)
        return false;
      *out = exif_get_long (e->data, bo);
      return true;
    case EXIF_FORMAT_BYTE:
      *out = e->data[0];
      return true;
    default:
      return exif_rational (e, bo, 0, out);
  }
}

/* Degrees from a GPS (deg, min, sec) rational triple and its N/S/E/W reference. */
static bool
exif_gps_degrees (ExifContent *gps, ExifTag tag, ExifTag ref_tag, ExifByteOrder bo,
    double *out)
{
  ExifEntry *e = exif_content_get_entry (gps, tag);
  double d, m, s;
  if (!e || e->components < 3 || !exif_rational (e, bo, 0, &d) ||
      !exif_rational (e, bo, 1, &m) || !exif_rational (e, bo, 2, &s))
    return false;
  double v = d + m / 60.0 + s / 3600.0;
  ExifEntry *r = exif_content_get_entry (gps, ref_tag);
  if (r && r->data && r->size >= 1 && (r->data[0] == 'S' || r->data[0] == 'W'))
    v = -v;
  *out = v;
  return true;
}

static void
exif_string (ExifEntry *e, char *out, size_t outlen)
{
  if (!e || !e->data || e->format != EXIF_FORMAT_ASCII || outlen == 0)
    return;
  size_t n = 0;
  for (size_t i = 0; i < e->size && e->data[i] && n + 1 < outlen; i++)
    out[n++] = isprint (e->data[i]) ? (char) e->data[i] : '?';
  while (n > 0 && out[n - 1] == ' ')
    n--;
  out[n] = '\0';
}

static void
parse_exif (const uint8_t *payload, size_t len, GrPosePrior *p)
{
  ExifData *ed = exif_data_new ();
  if (!ed)
    return;
  /* never let libexif "repair" entries: we read what the camera wrote */
  exif_data_unset_option (ed, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
  exif_data_load_data (ed, payload, (unsigned int) len);
  ExifByteOrder bo = exif_data_get_byte_order (ed);
  bool any = false;
  double v, lat, lon;

  ExifContent *gps = ed->ifd[EXIF_IFD_GPS];
  if (gps && exif_gps_degrees (gps, EXIF_TAG_GPS_LATITUDE, EXIF_TAG_GPS_LATITUDE_REF, bo,
          &lat) && exif_gps_degrees (gps, EXIF_TAG_GPS_LONGITUDE,
          EXIF_TAG_GPS_LONGITUDE_REF, bo, &lon)) {
    set_value (&p->lat, lat, SIGMA_POS_M, -90, 90);
    set_value (&p->lon, lon, SIGMA_POS_M, -180, 180);
    any = p->lat.have && p->lon.have;
    if (!any)
      p->lat = p->lon = absent;
  }
  if (gps && exif_rational (exif_content_get_entry (gps, EXIF_TAG_GPS_ALTITUDE), bo, 0,
          &v)) {
    ExifEntry *r = exif_content_get_entry (gps, EXIF_TAG_GPS_ALTITUDE_REF);
    if (r && r->data && r->size >= 1 && r->data[0] == 1)
      v = -v;
    /* EXIF defines GPSAltitude above sea level */
    set_value (&p->alt_amsl, v, SIGMA_GPS_ALT_M, -1000, 100000);
    any = true;
  }
  ExifContent *ex = ed->ifd[EXIF_IFD_EXIF];
  if (ex && exif_rational (exif_content_get_entry (ex, EXIF_TAG_FOCAL_LENGTH), bo, 0, &v)) {
    set_value (&p->focal_mm, v, 0.0, 0.1, 2000);
    any = true;
  }
  if (ex && exif_integer (exif_content_get_entry (ex, EXIF_TAG_FOCAL_LENGTH_IN_35MM_FILM),
          bo, &v)) {
    set_value (&p->focal_35mm, v, 0.0, 1, 5000);
    any = true;
  }
  /* the pixel pitch the camera states (units: 2 = inch, the default; 3 = cm; 4 = mm, a
   * common non-standard value), for the image size it states */
  if (ex && exif_rational (exif_content_get_entry (ex, EXIF_TAG_FOCAL_PLANE_X_RESOLUTION),
          bo, 0, &v)) {
    double unit = 2, mm = 25.4;
    exif_integer (exif_content_get_entry (ex, EXIF_TAG_FOCAL_PLANE_RESOLUTION_UNIT), bo,
        &unit);
    mm = unit == 3 ? 10.0 : unit == 4 ? 1.0 : unit == 2 || unit == 1 ? 25.4 : NAN;
    /* 20 to 2000 px/mm: pixel pitches of 0.5 to 50 um */
    set_value (&p->focal_plane_px_per_mm, v / mm, 0.0, 20, 2000);
    double pw = 0, ph = 0;
    if (exif_integer (exif_content_get_entry (ex, EXIF_TAG_PIXEL_X_DIMENSION), bo, &pw) &&
        exif_integer (exif_content_get_entry (ex, EXIF_TAG_PIXEL_Y_DIMENSION), bo, &ph) &&
        pw >= 1 && ph >= 1 && pw <= 1e6 && ph <= 1e6) {
      p->exif_pixel_width = (int) pw;
      p->exif_pixel_height = (int) ph;
    }
    any = any || p->focal_plane_px_per_mm.have;
  }
  if (ed->ifd[EXIF_IFD_0]) {
    exif_string (exif_content_get_entry (ed->ifd[EXIF_IFD_0], EXIF_TAG_MAKE), p->make,
        sizeof p->make);
    exif_string (exif_content_get_entry (ed->ifd[EXIF_IFD_0], EXIF_TAG_MODEL), p->model,
        sizeof p->model);
    any = any || p->make[0] || p->model[0];
  }
  if (any)
    p->sources |= GR_PRIOR_SRC_EXIF;
  exif_data_unref (ed);
}

/* ---- XMP -------------------------------------------------------------------------- */

/* exempi wraps Adobe's XMP toolkit, whose namespace registry is process-global: one
 * parse at a time. */
static GMutex xmp_lock;

static bool
xmp_double (XmpPtr xmp, const char *ns, const char *name, double *out)
{
  XmpStringPtr s = xmp_string_new ();
  bool ok = false;
  if (s && xmp_get_property (xmp, ns, name, s, NULL)) {
    const char *c = xmp_string_cstr (s);
    char *end = NULL;
    double v = g_ascii_strtod (c, &end);
    while (end && *end && isspace ((unsigned char) *end))
      end++;
    if (end != c && end && *end == '\0' && isfinite (v)) {
      *out = v;
      ok = true;
    }
  }
  if (s)
    xmp_string_free (s);
  return ok;
}

static void
xmp_text (XmpPtr xmp, const char *ns, const char *name, char *out, size_t outlen)
{
  XmpStringPtr s = xmp_string_new ();
  if (s && xmp_get_property (xmp, ns, name, s, NULL)) {
    const char *c = xmp_string_cstr (s);
    size_t n = 0;
    for (; c[n] && n + 1 < outlen; n++)
      out[n] = isprint ((unsigned char) c[n]) ? c[n] : '?';
    out[n] = '\0';
  }
  if (s)
    xmp_string_free (s);
}

static gpointer
xmp_init_once (gpointer unused)
{
  if (!xmp_init ())
    return NULL;
  /* register the prefixes so lookups work even when a packet names them otherwise */
  xmp_register_namespace (NS_DJI, "drone-dji", NULL);
  xmp_register_namespace (NS_SENSEFLY, "sensefly", NULL);
  xmp_register_namespace (NS_PIX4D_CAMERA, "Camera", NULL);
  return GINT_TO_POINTER (1);
}

/* One numeric XMP property and the prior field it fills, with its default sigma and
 * plausible range. */
typedef struct {
  const char *name;
  size_t offset;
  double sigma, lo, hi;
} XmpField;

/* Fills the fields found; true when at least one was usable. */
static bool
read_xmp_fields (XmpPtr xmp, const char *ns, const XmpField *fields, size_t n,
    GrPosePrior *p)
{
  bool any = false;
  double v;
  for (size_t i = 0; i < n; i++)
    if (xmp_double (xmp, ns, fields[i].name, &v)) {
      GrPriorValue *dst = VALUE_AT (p, fields[i].offset);
      set_value (dst, v, fields[i].sigma, fields[i].lo, fields[i].hi);
      any = any || dst->have;
    }
  return any;
}

/* Namespace prefixes in scope while screening a packet: declared prefixes, and per
 * open element how many it declared. */
typedef struct {
  GPtrArray *prefixes;
  GArray *declared;
} NsScope;

static bool
prefix_bound (const NsScope *sc, const char *qname)
{
  const char *colon = strchr (qname, ':');
  if (!colon)
    return true;
  const size_t n = (size_t) (colon - qname);
  if (n == 3 && strncmp (qname, "xml", 3) == 0)
    return true;
  for (guint i = 0; i < sc->prefixes->len; i++) {
    const char *pf = g_ptr_array_index (sc->prefixes, i);
    if (strlen (pf) == n && strncmp (pf, qname, n) == 0)
      return true;
  }
  return false;
}

static void
screen_start (GMarkupParseContext *ctx, const gchar *name, const gchar **attr_names,
    const gchar **attr_values, gpointer user_data, GError **error)
{
  NsScope *sc = user_data;
  int declared = 0;
  for (int i = 0; attr_names[i]; i++)
    if (g_str_has_prefix (attr_names[i], "xmlns:")) {
      g_ptr_array_add (sc->prefixes, g_strdup (attr_names[i] + 6));
      declared++;
    }
  g_array_append_val (sc->declared, declared);
  bool ok = prefix_bound (sc, name);
  for (int i = 0; ok && attr_names[i]; i++)
    ok = g_str_has_prefix (attr_names[i], "xmlns") || prefix_bound (sc, attr_names[i]);
  if (!ok)
    g_set_error_literal (error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
        "unbound namespace prefix");
}

static void
screen_end (GMarkupParseContext *ctx, const gchar *name, gpointer user_data,
    GError **error)
{
  NsScope *sc = user_data;
  if (sc->declared->len == 0)
    return;
  const int declared = g_array_index (sc->declared, int, sc->declared->len - 1);
  g_array_set_size (sc->declared, sc->declared->len - 1);
  g_ptr_array_set_size (sc->prefixes, sc->prefixes->len - declared);
}

/* True when the packet is well-formed XML with every namespace prefix declared.
 * exempi prints every parse failure on stderr, so a stream of corrupted files would
 * flood it: GLib's strict markup parser screens the packet first (a cheap pass over a
 * few kilobytes). */
static bool
xml_well_formed (const char *text, size_t len)
{
  static const GMarkupParser screen = { screen_start, screen_end, NULL, NULL, NULL };
  NsScope sc = { g_ptr_array_new_with_free_func (g_free), g_array_new (FALSE, FALSE,
          sizeof (int)) };
  GMarkupParseContext *ctx = g_markup_parse_context_new (&screen, 0, &sc, NULL);
  bool ok = g_markup_parse_context_parse (ctx, text, (gssize) len, NULL) &&
      g_markup_parse_context_end_parse (ctx, NULL);
  g_markup_parse_context_free (ctx);
  g_ptr_array_free (sc.prefixes, TRUE);
  g_array_free (sc.declared, TRUE);
  return ok;
}

bool
gr_pose_prior_parse_xmp (const char *text, size_t len, GrPosePrior *p)
{
  static GOnce once = G_ONCE_INIT;
  if (!text || !p || len == 0 || len > (16u << 20))
    return false;
  /* packets are often padded; some writers end them with NULs */
  while (len > 0 && (text[len - 1] == '\0' || isspace ((unsigned char) text[len - 1])))
    len--;
  if (len == 0 || !xml_well_formed (text, len))
    return false;
  if (!g_once (&once, xmp_init_once, NULL))
    return false;
  g_mutex_lock (&xmp_lock);
  XmpPtr xmp = xmp_new (text, len);
  if (!xmp) {
    g_mutex_unlock (&xmp_lock);
    return false;
  }
  /* DJI: the camera's gimbal and the aircraft's attitude, heights */
  static const XmpField dji_fields[] = {
    { "GimbalYawDegree", offsetof (GrPosePrior, gimbal_yaw), SIGMA_GIMBAL_YAW_DEG, -360, 360 },
    { "GimbalPitchDegree", offsetof (GrPosePrior, gimbal_pitch), SIGMA_ANGLE_DEG, -180, 180 },
    { "GimbalRollDegree", offsetof (GrPosePrior, gimbal_roll), SIGMA_ANGLE_DEG, -180, 180 },
    { "FlightYawDegree", offsetof (GrPosePrior, flight_yaw), SIGMA_HEADING_DEG, -360, 360 },
    { "FlightPitchDegree", offsetof (GrPosePrior, flight_pitch), SIGMA_ANGLE_DEG, -180, 180 },
    { "FlightRollDegree", offsetof (GrPosePrior, flight_roll), SIGMA_ANGLE_DEG, -180, 180 },
    { "RelativeAltitude", offsetof (GrPosePrior, rel_alt), SIGMA_BARO_ALT_M, -1000, 100000 },
    { "AbsoluteAltitude", offsetof (GrPosePrior, alt_amsl), SIGMA_GPS_ALT_M, -1000, 100000 },
    { "GpsLatitude", offsetof (GrPosePrior, lat), SIGMA_POS_M, -90, 90 },
    { "GpsLongitude", offsetof (GrPosePrior, lon), SIGMA_POS_M, -180, 180 },
    { "GpsLongtitude", offsetof (GrPosePrior, lon), SIGMA_POS_M, -180, 180 }, /* DJI typo */
  };
  const bool dji = read_xmp_fields (xmp, NS_DJI, dji_fields, G_N_ELEMENTS (dji_fields), p);

  /* senseFly: the autopilot's state at exposure (a body-fixed camera) */
  static const XmpField sf_fields[] = {
    { "Latitude", offsetof (GrPosePrior, lat), SIGMA_POS_M, -90, 90 },
    { "Longitude", offsetof (GrPosePrior, lon), SIGMA_POS_M, -180, 180 },
    { "AltitudeWGS84", offsetof (GrPosePrior, alt_wgs84), SIGMA_GPS_ALT_M, -1000, 100000 },
    { "AltitudeAMSL", offsetof (GrPosePrior, alt_amsl), SIGMA_GPS_ALT_M, -1000, 100000 },
    /* above the take-off point (AltitudeAMSL - Height is one constant over a flight,
     * tests/test_seneca.c), like DJI's RelativeAltitude: not the ground under the
     * camera */
    { "Height", offsetof (GrPosePrior, rel_alt), SIGMA_BARO_ALT_M, -1000, 100000 },
    { "Heading", offsetof (GrPosePrior, flight_yaw), SIGMA_COURSE_DEG, -360, 360 },
    { "PitchAngle", offsetof (GrPosePrior, flight_pitch), SIGMA_ANGLE_DEG, -180, 180 },
    { "RollAngle", offsetof (GrPosePrior, flight_roll), SIGMA_ANGLE_DEG, -180, 180 },
    { "AirSpeed", offsetof (GrPosePrior, air_speed), 0.0, 0, 200 },
    { "GroundSpeed", offsetof (GrPosePrior, ground_speed), 0.0, 0, 200 },
  };
  const bool sf = read_xmp_fields (xmp, NS_SENSEFLY, sf_fields, G_N_ELEMENTS (sf_fields), p);
  if (sf)
    xmp_text (xmp, NS_SENSEFLY, "UTCTime", p->utc, sizeof p->utc);

  /* Pix4D's Camera namespace (Parrot Sequoia and Anafi, MicaSense, Sentera, ...): the
   * camera's attitude, yaw 0 = the image's top towards north, pitch 0 = nadir and 90 =
   * looking forward, roll 0 on a gimbal (support.pix4d.com, "Yaw, Pitch, Roll and
   * Omega, Phi, Kappa angles"): cam_*'s convention as written.  Its sigmas as a
   * gimbal's. */
  static const XmpField cam_fields[] = {
    { "Yaw", offsetof (GrPosePrior, pix4d_yaw), SIGMA_GIMBAL_YAW_DEG, -360, 360 },
    { "Pitch", offsetof (GrPosePrior, pix4d_pitch), SIGMA_ANGLE_DEG, -180, 180 },
    { "Roll", offsetof (GrPosePrior, pix4d_roll), SIGMA_ANGLE_DEG, -180, 180 },
  };
  bool cam = read_xmp_fields (xmp, NS_PIX4D_CAMERA, cam_fields, G_N_ELEMENTS (cam_fields),
      p);
  if (!cam)
    cam = read_xmp_fields (xmp, NS_PIX4D_CAMERA_BARE, cam_fields,
        G_N_ELEMENTS (cam_fields), p);

  xmp_free (xmp);
  g_mutex_unlock (&xmp_lock);
  if (dji)
    p->sources |= GR_PRIOR_SRC_XMP_DJI;
  if (sf)
    p->sources |= GR_PRIOR_SRC_XMP_SENSEFLY;
  if (cam)
    p->sources |= GR_PRIOR_SRC_XMP_CAMERA;
  return true;
}

/* ---- JPEG markers ----------------------------------------------------------------- */

static const char exif_id[6] = { 'E', 'x', 'i', 'f', 0, 0 };
static const char xmp_id[] = "http://ns.adobe.com/xap/1.0/";   /* + NUL */

GrStatus
gr_pose_prior_from_jpeg (const uint8_t *data, size_t size, GrPosePrior *p, char *err,
    size_t errlen)
{
  if (!data || !p) {
    gr_set_err (err, errlen, "no buffer or no prior");
    return GR_ERR_INVALID;
  }
  gr_pose_prior_init (p);
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) {
    gr_set_err (err, errlen, "not a JPEG (no SOI marker)");
    return GR_ERR_FORMAT;
  }
  size_t pos = 2;
  bool exif_done = false, xmp_done = false;
  /* Walk the header segments up to the first scan.  Each segment is length-prefixed;
   * any length running past the buffer ends the walk (a truncated file). */
  while (pos + 4 <= size) {
    if (data[pos] != 0xFF)
      break;                                 /* not a marker: garbage, stop */
    uint8_t marker = data[pos + 1];
    if (marker == 0xFF) {                    /* fill byte */
      pos++;
      continue;
    }
    if (marker == 0xD9 || marker == 0xDA)    /* EOI or start of scan */
      break;
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {   /* no length */
      pos += 2;
      continue;
    }
    size_t seglen = ((size_t) data[pos + 2] << 8) | data[pos + 3];
    if (seglen < 2 || pos + 2 + seglen > size)
      break;
    const uint8_t *payload = data + pos + 4;
    size_t plen = seglen - 2;
    if (marker == 0xE1 && !exif_done && plen > sizeof exif_id &&
        memcmp (payload, exif_id, sizeof exif_id) == 0) {
      parse_exif (payload, plen, p);
      exif_done = true;
    } else if (marker == 0xE1 && !xmp_done && plen > sizeof xmp_id &&
        memcmp (payload, xmp_id, sizeof xmp_id) == 0) {
      gr_pose_prior_parse_xmp ((const char *) payload + sizeof xmp_id,
          plen - sizeof xmp_id, p);
      xmp_done = true;
    } else if (((marker >= 0xC0 && marker <= 0xC3) || (marker >= 0xC5 && marker <= 0xC7) ||
            (marker >= 0xC9 && marker <= 0xCB) || (marker >= 0xCD && marker <= 0xCF)) &&
        plen >= 5) {
      /* a frame header: precision, height, width */
      p->image_height = (payload[1] << 8) | payload[2];
      p->image_width = (payload[3] << 8) | payload[4];
    }
    pos += 2 + seglen;
  }
  gr_pose_prior_finish (p);
  return GR_OK;
}

/* ---- CSV -------------------------------------------------------------------------- */

#define CSV_MAX_BYTES ((size_t) 64 << 20)
#define CSV_MAX_ROWS 1000000
#define CSV_MAX_COLS 256

typedef enum {
  COL_IGNORE = 0, COL_FILE, COL_FRAME, COL_TIME, COL_UTC, COL_LAT, COL_LON, COL_ALT_WGS84,
  COL_ALT_AMSL, COL_HEIGHT, COL_REL_ALT, COL_YAW, COL_PITCH, COL_ROLL, COL_GYAW,
  COL_GPITCH, COL_GROLL, COL_FOCAL, COL_FOCAL35, COL_WIDTH, COL_HEIGHT_PX,
  COL_POS_SIGMA, COL_ALT_SIGMA, COL_ANGLE_SIGMA, COL_HEADING_SIGMA,
} CsvColumn;

static const struct { const char *name; CsvColumn col; } csv_names[] = {
  { "filename", COL_FILE }, { "file", COL_FILE }, { "image", COL_FILE },
  { "frame", COL_FRAME }, { "index", COL_FRAME },
  { "timestamp", COL_TIME }, { "time_s", COL_TIME }, { "pts_s", COL_TIME },
  { "utc", COL_UTC }, { "lat", COL_LAT }, { "lon", COL_LON },
  { "alt_wgs84_m", COL_ALT_WGS84 }, { "alt_amsl_m", COL_ALT_AMSL },
  { "height_agl_m", COL_HEIGHT }, { "rel_alt_m", COL_REL_ALT },
  { "heading_deg", COL_YAW }, { "yaw_deg", COL_YAW }, { "pitch_deg", COL_PITCH },
  { "roll_deg", COL_ROLL }, { "gimbal_yaw_deg", COL_GYAW },
  { "gimbal_pitch_deg", COL_GPITCH }, { "gimbal_roll_deg", COL_GROLL },
  { "focal_mm", COL_FOCAL }, { "focal_35mm", COL_FOCAL35 }, { "width", COL_WIDTH },
  { "height", COL_HEIGHT_PX }, { "pos_sigma_m", COL_POS_SIGMA },
  { "alt_sigma_m", COL_ALT_SIGMA }, { "angle_sigma_deg", COL_ANGLE_SIGMA },
  { "heading_sigma_deg", COL_HEADING_SIGMA },
};

typedef struct {
  GrPosePrior prior;
  char *file;          /* basename, or NULL */
  int64_t frame;       /* -1 = none */
  double time_s;       /* NAN = none */
} CsvRow;

struct GrTelemetryCsv {
  CsvRow *rows;
  int n;
  bool has_file, has_frame, has_time;
};

/* Splits one line into cells in place (quotes removed, "" -> ").  Returns the count. */
static int
csv_split (char *line, char **cells, int max)
{
  int n = 0;
  char *r = line, *w = line;
  while (n < max) {
    cells[n++] = w;
    bool quoted = false;
    if (*r == '"') {
      quoted = true;
      r++;
    }
    for (;;) {
      if (*r == '\0')
        break;
      if (quoted && *r == '"') {
        if (r[1] == '"') {
          *w++ = '"';
          r += 2;
          continue;
        }
        quoted = false;
        r++;
        continue;
      }
      if (!quoted && *r == ',')
        break;
      *w++ = *r++;
    }
    bool more = *r == ',';
    *w = '\0';
    if (!more)
      break;
    r++;
    w = r;
  }
  return n;
}

static char *
trim (char *s)
{
  while (isspace ((unsigned char) *s))
    s++;
  char *e = s + strlen (s);
  while (e > s && isspace ((unsigned char) e[-1]))
    *--e = '\0';
  return s;
}

static bool
parse_number (const char *s, double *out)
{
  if (!*s)
    return false;
  char *end;
  double v = g_ascii_strtod (s, &end);
  if (end == s || *end != '\0' || !isfinite (v))
    return false;
  *out = v;
  return true;
}

static const char *
basename_of (const char *path)
{
  const char *b = path;
  for (const char *c = path; *c; c++)
    if (*c == '/' || *c == '\\')
      b = c + 1;
  return b;
}

void
gr_telemetry_csv_free (GrTelemetryCsv *csv)
{
  if (!csv)
    return;
  for (int i = 0; i < csv->n; i++)
    g_free (csv->rows[i].file);
  g_free (csv->rows);
  g_free (csv);
}

GrTelemetryCsv *
gr_telemetry_csv_parse (const char *text, size_t len, GrStatus *status, char *err,
    size_t errlen)
{
  GrStatus dummy;
  if (!status)
    status = &dummy;
  if (!text) {
    *status = GR_ERR_INVALID;
    gr_set_err (err, errlen, "no text");
    return NULL;
  }
  if (len > CSV_MAX_BYTES) {
    *status = GR_ERR_FORMAT;
    gr_set_err (err, errlen, "telemetry CSV larger than %zu bytes", CSV_MAX_BYTES);
    return NULL;
  }
  char *buf = g_malloc (len + 1);
  memcpy (buf, text, len);
  buf[len] = '\0';
  if (memchr (buf, '\0', len)) {
    g_free (buf);
    *status = GR_ERR_FORMAT;
    gr_set_err (err, errlen, "telemetry CSV holds NUL bytes: not a text file");
    return NULL;
  }
  GrTelemetryCsv *csv = g_new0 (GrTelemetryCsv, 1);
  CsvColumn cols[CSV_MAX_COLS];
  char *cells[CSV_MAX_COLS];
  int ncols = 0, line_no = 0, cap = 0;
  *status = GR_OK;
  for (char *line = buf, *next; line; line = next) {
    /* one physical line at a time, so errors name the file's own line numbers */
    next = strchr (line, '\n');
    if (next)
      *next++ = '\0';
    line_no++;
    size_t ll = strlen (line);
    if (ll && line[ll - 1] == '\r')
      line[ll - 1] = '\0';
    if (line_no == 1 && (unsigned char) line[0] == 0xEF && (unsigned char) line[1] == 0xBB &&
        (unsigned char) line[2] == 0xBF)
      line += 3;                             /* UTF-8 byte order mark */
    if (*trim (line) == '\0' || line[0] == '#')
      continue;
    int n = csv_split (line, cells, CSV_MAX_COLS);
    if (ncols == 0) {                        /* the header */
      bool key = false;
      for (int c = 0; c < n; c++) {
        char *name = trim (cells[c]);
        cols[c] = COL_IGNORE;
        for (size_t k = 0; k < G_N_ELEMENTS (csv_names); k++)
          if (g_ascii_strcasecmp (name, csv_names[k].name) == 0)
            cols[c] = csv_names[k].col;
        csv->has_file |= cols[c] == COL_FILE;
        csv->has_frame |= cols[c] == COL_FRAME;
        csv->has_time |= cols[c] == COL_TIME;
      }
      key = csv->has_file || csv->has_frame || csv->has_time;
      if (!key) {
        *status = GR_ERR_FORMAT;
        gr_set_err (err, errlen, "telemetry CSV header (line %d) names no key column "
            "(filename, frame or timestamp)", line_no);
        goto fail;
      }
      ncols = n;
      continue;
    }
    if (csv->n >= CSV_MAX_ROWS) {
      *status = GR_ERR_FORMAT;
      gr_set_err (err, errlen, "telemetry CSV has more than %d rows", CSV_MAX_ROWS);
      goto fail;
    }
    if (n != ncols) {
      *status = GR_ERR_FORMAT;
      gr_set_err (err, errlen, "telemetry CSV line %d has %d cells, the header %d",
          line_no, n, ncols);
      goto fail;
    }
    if (csv->n == cap) {
      cap = cap ? 2 * cap : 64;
      csv->rows = g_renew (CsvRow, csv->rows, cap);
    }
    CsvRow *row = &csv->rows[csv->n++];
    memset (row, 0, sizeof *row);
    gr_pose_prior_init (&row->prior);
    row->frame = -1;
    row->time_s = NAN;
    GrPosePrior *p = &row->prior;
    double pos_sigma = SIGMA_POS_M, alt_sigma = SIGMA_GPS_ALT_M, ang_sigma = SIGMA_ANGLE_DEG;
    double head_sigma = SIGMA_HEADING_DEG;
    /* sigma overrides first, so they apply whatever the column order */
    for (int c = 0; c < n; c++) {
      double v;
      char *cell = trim (cells[c]);
      if (!parse_number (cell, &v) || v < 0)
        continue;
      if (cols[c] == COL_POS_SIGMA)
        pos_sigma = v;
      else if (cols[c] == COL_ALT_SIGMA)
        alt_sigma = v;
      else if (cols[c] == COL_ANGLE_SIGMA)
        ang_sigma = v;
      else if (cols[c] == COL_HEADING_SIGMA)
        head_sigma = v;
    }
    for (int c = 0; c < n; c++) {
      char *cell = trim (cells[c]);
      double v;
      if (cols[c] == COL_IGNORE || !*cell)
        continue;
      if (cols[c] == COL_FILE) {
        g_free (row->file);
        row->file = g_strdup (basename_of (cell));
        continue;
      }
      if (cols[c] == COL_UTC) {
        g_strlcpy (p->utc, cell, sizeof p->utc);
        continue;
      }
      if (!parse_number (cell, &v)) {
        *status = GR_ERR_FORMAT;
        gr_set_err (err, errlen, "telemetry CSV line %d, column %d: \"%.40s\" is not a "
            "number", line_no, c + 1, cell);
        goto fail;
      }
      switch (cols[c]) {
        case COL_FRAME:
          if (v >= 0 && v < 9e15 && v == floor (v))
            row->frame = (int64_t) v;
          break;
        case COL_TIME: row->time_s = v; break;
        case COL_LAT: set_value (&p->lat, v, pos_sigma, -90, 90); break;
        case COL_LON: set_value (&p->lon, v, pos_sigma, -180, 180); break;
        case COL_ALT_WGS84: set_value (&p->alt_wgs84, v, alt_sigma, -1000, 100000); break;
        case COL_ALT_AMSL: set_value (&p->alt_amsl, v, alt_sigma, -1000, 100000); break;
        case COL_HEIGHT:
          set_value (&p->height_agl, v, SIGMA_BARO_ALT_M, -1000, 100000);
          break;
        case COL_REL_ALT:
          set_value (&p->rel_alt, v, SIGMA_BARO_ALT_M, -1000, 100000);
          break;
        case COL_YAW: set_value (&p->flight_yaw, v, head_sigma, -360, 360); break;
        case COL_PITCH: set_value (&p->flight_pitch, v, ang_sigma, -180, 180); break;
        case COL_ROLL: set_value (&p->flight_roll, v, ang_sigma, -180, 180); break;
        case COL_GYAW:
          set_value (&p->gimbal_yaw, v, fmin (head_sigma, SIGMA_GIMBAL_YAW_DEG), -360, 360);
          break;
        case COL_GPITCH: set_value (&p->gimbal_pitch, v, ang_sigma, -180, 180); break;
        case COL_GROLL: set_value (&p->gimbal_roll, v, ang_sigma, -180, 180); break;
        case COL_FOCAL: set_value (&p->focal_mm, v, 0, 0.1, 2000); break;
        case COL_FOCAL35: set_value (&p->focal_35mm, v, 0, 1, 5000); break;
        case COL_WIDTH:
          if (v >= 1 && v <= 1e6)
            p->image_width = (int) v;
          break;
        case COL_HEIGHT_PX:
          if (v >= 1 && v <= 1e6)
            p->image_height = (int) v;
          break;
        default:
          break;
      }
    }
    p->sources = GR_PRIOR_SRC_CSV;
    gr_pose_prior_finish (p);
  }
  if (ncols == 0) {
    *status = GR_ERR_FORMAT;
    gr_set_err (err, errlen, "telemetry CSV is empty (no header line)");
    goto fail;
  }
  g_free (buf);
  return csv;
fail:
  g_free (buf);
  gr_telemetry_csv_free (csv);
  return NULL;
}

GrTelemetryCsv *
gr_telemetry_csv_load (const char *path, GrStatus *status, char *err, size_t errlen)
{
  GrStatus dummy;
  if (!status)
    status = &dummy;
  if (!path) {
    *status = GR_ERR_INVALID;
    gr_set_err (err, errlen, "no path");
    return NULL;
  }
  FILE *f = fopen (path, "rb");
  if (!f) {
    *status = GR_ERR_IO;
    gr_set_err (err, errlen, "cannot open %s: %s", path, strerror (errno));
    return NULL;
  }
  char *text = g_malloc (CSV_MAX_BYTES + 1);
  size_t len = fread (text, 1, CSV_MAX_BYTES + 1, f);
  bool rerr = ferror (f);
  fclose (f);
  GrTelemetryCsv *csv = NULL;
  if (rerr) {
    *status = GR_ERR_IO;
    gr_set_err (err, errlen, "cannot read %s", path);
  } else {
    char e2[200] = "";
    csv = gr_telemetry_csv_parse (text, len, status, e2, sizeof e2);
    if (!csv)
      gr_set_err (err, errlen, "%s: %s", path, e2);
  }
  g_free (text);
  return csv;
}

int
gr_telemetry_csv_rows (const GrTelemetryCsv *csv)
{
  return csv ? csv->n : 0;
}

bool
gr_telemetry_csv_has_filenames (const GrTelemetryCsv *csv)
{
  return csv && csv->has_file;
}

bool
gr_telemetry_csv_has_frames (const GrTelemetryCsv *csv)
{
  return csv && csv->has_frame;
}

bool
gr_telemetry_csv_has_timestamps (const GrTelemetryCsv *csv)
{
  return csv && csv->has_time;
}

bool
gr_telemetry_csv_row (const GrTelemetryCsv *csv, int i, GrPosePrior *p)
{
  if (!csv || !p || i < 0 || i >= csv->n)
    return false;
  *p = csv->rows[i].prior;
  return true;
}

bool
gr_telemetry_csv_find_file (const GrTelemetryCsv *csv, const char *name, GrPosePrior *p)
{
  if (!csv || !name || !p)
    return false;
  const char *b = basename_of (name);
  for (int i = 0; i < csv->n; i++)
    if (csv->rows[i].file && strcmp (csv->rows[i].file, b) == 0) {
      *p = csv->rows[i].prior;
      return true;
    }
  return false;
}

bool
gr_telemetry_csv_find_frame (const GrTelemetryCsv *csv, int64_t frame, GrPosePrior *p)
{
  if (!csv || !p || frame < 0)
    return false;
  for (int i = 0; i < csv->n; i++)
    if (csv->rows[i].frame == frame) {
      *p = csv->rows[i].prior;
      return true;
    }
  return false;
}

bool
gr_telemetry_csv_find_time (const GrTelemetryCsv *csv, double t_s, double tolerance_s,
    GrPosePrior *p)
{
  if (!csv || !p || !isfinite (t_s))
    return false;
  int best = -1;
  double bd = INFINITY;
  for (int i = 0; i < csv->n; i++) {
    const double d = fabs (csv->rows[i].time_s - t_s);
    if (isfinite (d) && d < bd) {
      bd = d;
      best = i;
    }
  }
  if (best < 0 || bd > tolerance_s)
    return false;
  *p = csv->rows[best].prior;
  return true;
}

/* ---- MISB ST 0601 KLV ------------------------------------------------------------- */

void
gr_wgs84_local_offset (double lat0, double lon0, double lat, double lon, double *east,
    double *north)
{
  /* the ellipsoid's radii of curvature at lat0: exact to millimetres over the few
   * hundred metres between a sensor and what it looks at */
  const double a = 6378137.0, e2 = 6.69437999014e-3, phi = lat0 * G_PI / 180;
  const double w = sqrt (1 - e2 * sin (phi) * sin (phi));
  const double m = a * (1 - e2) / (w * w * w), n = a / w;
  *north = (lat - lat0) * G_PI / 180 * m;
  *east = (lon - lon0) * G_PI / 180 * n * cos (phi);
}

GrStatus
gr_pose_prior_from_klv (const uint8_t *packet, size_t len, GrPosePrior *p,
    uint64_t *timestamp_us, char *err, size_t errlen)
{
  if (!packet || !p) {
    gr_set_err (err, errlen, "no packet or no prior");
    return GR_ERR_INVALID;
  }
  gr_pose_prior_init (p);
  GrKlvUas v;
  GrStatus st = gr_klv_uas_decode (packet, len, &v, err, errlen);
  if (st != GR_OK)
    return st;
  if (timestamp_us)
    *timestamp_us = v.timestamp_us;
  if (v.has_sensor_position) {
    set_value (&p->lat, v.sensor_lat, SIGMA_POS_M, -90, 90);
    set_value (&p->lon, v.sensor_lon, SIGMA_POS_M, -180, 180);
    if (!p->lat.have || !p->lon.have)
      p->lat = p->lon = absent;
    set_value (&p->alt_amsl, v.sensor_alt_m, SIGMA_GPS_ALT_M, -1000, 100000);
  }
  if (v.has_platform_angles) {
    set_value (&p->flight_yaw, v.platform_heading_deg, SIGMA_HEADING_DEG, -360, 360);
    set_value (&p->flight_pitch, v.platform_pitch_deg, SIGMA_ANGLE_DEG, -180, 180);
    set_value (&p->flight_roll, v.platform_roll_deg, SIGMA_ANGLE_DEG, -180, 180);
  }
  /* Full-motion video cameras sit in gimbals, so the platform's attitude is not the
   * camera's.  Where the packet says what the sensor looks at (frame centre and its
   * elevation), the look direction from the sensor gives the camera's yaw and its
   * angle off nadir (written as gimbal angles, DJI's convention) and the height above
   * that ground; the roll about the line of sight stays unknown (0 +- 10 degrees). */
  if (p->lat.have && p->alt_amsl.have && v.has_centre && v.has_centre_elevation &&
      isfinite (v.centre_lat) && isfinite (v.centre_lon) &&
      isfinite (v.centre_elevation_m)) {
    double de, dn;
    gr_wgs84_local_offset (p->lat.value, p->lon.value, v.centre_lat, v.centre_lon, &de,
        &dn);
    const double height = p->alt_amsl.value - v.centre_elevation_m;
    const double ground = hypot (de, dn);
    if (height > 1) {
      set_value (&p->height_agl, height, p->alt_amsl.sigma, 0, 100000);
      const double off_nadir = atan2 (ground, height) * 180 / G_PI;
      /* the position's uncertainty turns into a bearing uncertainty */
      const double bearing_sigma = ground > SIGMA_POS_M ?
          atan2 (SIGMA_POS_M, ground) * 180 / G_PI : 180;
      if (ground > 1e-3)
        set_value (&p->gimbal_yaw, atan2 (de, dn) * 180 / G_PI, bearing_sigma, -360, 360);
      else if (p->flight_yaw.have)
        p->gimbal_yaw = p->flight_yaw;
      set_value (&p->gimbal_pitch, off_nadir - 90, SIGMA_ANGLE_DEG, -180, 180);
      set_value (&p->gimbal_roll, 0, 10, -180, 180);
    }
  }
  p->sources = GR_PRIOR_SRC_KLV;
  gr_pose_prior_finish (p);
  return GR_OK;
}

/* ---- wind triangle ------------------------------------------------------------------ */

static bool
wind_usable (const GrPosePrior *p)
{
  return p->flight_yaw.have && p->ground_speed.have && p->air_speed.have &&
      p->air_speed.value > 0.5;
}

static void
ground_velocity (const GrPosePrior *p, double *ve, double *vn)
{
  const double c = p->flight_yaw.value * G_PI / 180;
  *ve = p->ground_speed.value * sin (c);
  *vn = p->ground_speed.value * cos (c);
}

/* sum of squared residuals |v_i - W| - k a_i at x = (W east, W north, k) */
static double
wind_cost (const GrPosePrior *priors, int n, const double x[3])
{
  double c = 0;
  for (int i = 0; i < n; i++) {
    if (!wind_usable (&priors[i]))
      continue;
    double ve, vn;
    ground_velocity (&priors[i], &ve, &vn);
    const double r = hypot (ve - x[0], vn - x[1]) - x[2] * priors[i].air_speed.value;
    c += r * r;
  }
  return c;
}

bool
gr_telemetry_wind_estimate (const GrPosePrior *priors, int n, bool fit_airspeed_scale,
    GrWind *wind)
{
  if (!priors || !wind || n < 1)
    return false;
  /* the spread of courses: the wind is unobservable from one direction of flight */
  int used = 0;
  double spread = 0;
  for (int i = 0; i < n; i++) {
    if (!wind_usable (&priors[i]))
      continue;
    used++;
    for (int j = 0; j < i; j++)
      if (wind_usable (&priors[j])) {
        double d = fabs (priors[i].flight_yaw.value - priors[j].flight_yaw.value);
        spread = fmax (spread, fmin (fmod (d, 360), 360 - fmod (d, 360)));
      }
  }
  const int np = fit_airspeed_scale ? 3 : 2;
  if (used < np + 1 || spread < 45)
    return false;
  /* Gauss-Newton from no wind and k = 1, with step halving: the residual
   * r_i = |v_i - W| - k a_i is smooth wherever the air speed is not zero. */
  double x[3] = { 0, 0, 1 }, cost = INFINITY;
  for (int it = 0; it < 100; it++) {
    double jtj[9] = { 0 }, jtr[3] = { 0 }, c = 0;
    for (int i = 0; i < n; i++) {
      if (!wind_usable (&priors[i]))
        continue;
      double ve, vn;
      ground_velocity (&priors[i], &ve, &vn);
      const double ae = ve - x[0], an = vn - x[1], m = hypot (ae, an);
      if (m < 1e-9)
        return false;
      const double r = m - x[2] * priors[i].air_speed.value;
      const double jr[3] = { -ae / m, -an / m, -priors[i].air_speed.value };
      c += r * r;
      for (int a = 0; a < np; a++) {
        jtr[a] += jr[a] * r;
        for (int b = 0; b < np; b++)
          jtj[3 * a + b] += jr[a] * jr[b];
      }
    }
    cost = c;
    /* solve the np x np normal equations (Cramer's rule; tiny system) */
    double step[3] = { 0, 0, 0 };
    if (np == 2) {
      const double det = jtj[0] * jtj[4] - jtj[1] * jtj[3];
      if (fabs (det) < 1e-12)
        return false;
      step[0] = -(jtj[4] * jtr[0] - jtj[1] * jtr[1]) / det;
      step[1] = -(jtj[0] * jtr[1] - jtj[3] * jtr[0]) / det;
    } else {
      double inv[9];
      if (!gr_mat3_inverse (jtj, inv))
        return false;
      for (int a = 0; a < 3; a++)
        step[a] = -(inv[3 * a] * jtr[0] + inv[3 * a + 1] * jtr[1] + inv[3 * a + 2] * jtr[2]);
    }
    /* halve the step until the cost does not rise */
    double t = 1, trial[3], tc = INFINITY;
    for (int h = 0; h < 30; h++, t *= 0.5) {
      for (int a = 0; a < 3; a++)
        trial[a] = x[a] + t * step[a];
      tc = wind_cost (priors, n, trial);
      if (tc <= cost)
        break;
    }
    if (!(tc <= cost))
      break;                    /* no descent left: converged */
    const double moved = t * hypot (hypot (step[0], step[1]), step[2]);
    memcpy (x, trial, sizeof x);
    cost = tc;
    if (moved < 1e-9)
      break;
  }
  if (!(x[2] > 0.2 && x[2] < 5) || !isfinite (cost))
    return false;
  wind->east = x[0];
  wind->north = x[1];
  wind->airspeed_scale = x[2];
  wind->rms = sqrt (cost / used);
  wind->used = used;
  return true;
}

bool
gr_pose_prior_apply_wind (GrPosePrior *p, const GrWind *wind)
{
  if (!p || !wind || !wind_usable (p))
    return false;
  double ve, vn;
  ground_velocity (p, &ve, &vn);
  const double ae = ve - wind->east, an = vn - wind->north, m = hypot (ae, an);
  if (!(m > 0.5))
    return false;
  p->flight_yaw.value = atan2 (ae, an) * 180 / G_PI;
  /* a speed error of rms across the air velocity turns it by atan (rms / m) */
  p->flight_yaw.sigma = 3.0 + atan2 (wind->rms, m) * 180 / G_PI;
  gr_pose_prior_finish (p);
  return true;
}

bool
gr_pose_prior_set_ground (GrPosePrior *p, double ground_m, double takeoff_m,
    double sigma_m)
{
  if (!p || !isfinite (ground_m) || !(sigma_m >= 0))
    return false;
  double h, s;
  if (isfinite (takeoff_m) && p->rel_alt.have) {
    h = p->rel_alt.value + takeoff_m - ground_m;
    s = p->rel_alt.sigma + sigma_m;
  } else if (p->alt_amsl.have) {
    h = p->alt_amsl.value - ground_m;
    s = p->alt_amsl.sigma + sigma_m;
  } else {
    return false;
  }
  /* a camera at or below the ground it sees: the elevation is wrong, keep the prior */
  if (!(h > 1))
    return false;
  set_value (&p->height_agl, h, s, 0, 100000);
  return true;
}
