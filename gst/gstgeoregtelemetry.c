/* georegtelemetry: the pose prior of each frame as a GstGeoregPoseMeta.
 *
 * A passthrough GstBaseTransform.  Placed before the decoder it reads each JPEG's own
 * EXIF/XMP (kernels/telemetry.h); with telemetry-location it also looks the frame up in
 * a telemetry CSV (by file name, frame index or timestamp) and lets the row override the
 * JPEG's values; with calibration-location it attaches the lens's intrinsics, else
 * those the EXIF focal length implies (kernels/camera.h).  The meta has no tags, so the
 * decoder copies it onto the decoded frame.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include <gst/base/gstbasesrc.h>

#include "gstgeoregtelemetry.h"
#include "gstgeoregprops.h"
#include "georeg-pose-meta.h"
#include "camera.h"
#include "telemetry.h"

GST_DEBUG_CATEGORY_STATIC (gst_georeg_telemetry_debug);
#define GST_CAT_DEFAULT gst_georeg_telemetry_debug

enum {
  PROP_0,
  PROP_TELEMETRY_LOCATION,
  PROP_CSV_KEY,
  PROP_TIME_TOLERANCE,
  PROP_CALIBRATION_LOCATION,
  PROP_POST_MESSAGES,
  PROP_GROUND_ELEVATION,
  PROP_TAKEOFF_ELEVATION,
  PROP_ELEVATION_SIGMA,
};

/* below any land on Earth (the Dead Sea shore is at -430 m): "not given" */
#define ELEVATION_UNSET -1000.0
#define DEFAULT_ELEVATION_SIGMA 2.0

#define DEFAULT_CSV_KEY GST_GEOREG_TELEMETRY_KEY_AUTO
#define DEFAULT_TIME_TOLERANCE 0.5
#define DEFAULT_POST_MESSAGES GST_GEOREG_DEFAULT_POST_MESSAGES
#define MAX_UPSTREAM_HOPS 16

struct _GstGeoregTelemetry {
  GstBaseTransform parent;

  /* properties (object lock) */
  gchar *telemetry_location;
  gchar *calibration_location;
  GstGeoregTelemetryKey key;
  gdouble time_tolerance;
  gboolean post_messages;
  gdouble ground_elevation, takeoff_elevation, elevation_sigma;

  /* loaded in start() */
  GrTelemetryCsv *csv;
  GrCamera calibration;
  gboolean have_calibration;

  /* stream state (streaming thread) */
  gboolean is_jpeg;
  gint caps_width, caps_height;
  guint64 frame;
  gboolean located;             /* the upstream source was looked for */
  gchar *source_location;       /* filesrc location, or a multifilesrc pattern */
  gboolean source_is_pattern;
  gint source_start_index;
  gboolean warned_no_row;
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

GType
gst_georeg_telemetry_key_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GEOREG_TELEMETRY_KEY_AUTO, "the file name when the CSV has one and the "
          "upstream file source is known, else the frame index, else the timestamp",
        "auto"},
    {GST_GEOREG_TELEMETRY_KEY_FILENAME, "the upstream filesrc/multifilesrc file name",
        "filename"},
    {GST_GEOREG_TELEMETRY_KEY_FRAME, "the frame index since the stream started (0 first)",
        "frame"},
    {GST_GEOREG_TELEMETRY_KEY_TIMESTAMP, "the buffer timestamp in seconds (nearest row "
          "within timestamp-tolerance)", "timestamp"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstGeoregTelemetryKey", values));
  return type;
}

#define gst_georeg_telemetry_parent_class parent_class
G_DEFINE_TYPE (GstGeoregTelemetry, gst_georeg_telemetry, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (georegtelemetry, "georegtelemetry", GST_RANK_NONE,
    GST_TYPE_GEOREG_TELEMETRY);

/* ---- the upstream file name ------------------------------------------------------ */

/* pattern with one printf-style integer conversion (%d, %05d, %i, %u; %% for a '%'),
 * as multifilesrc takes, formatted without handing a user string to printf */
static gchar *
format_pattern (const gchar * pattern, gint index)
{
  GString *out = g_string_new (NULL);
  gboolean used = FALSE;
  for (const gchar * c = pattern; *c; c++) {
    if (*c != '%') {
      g_string_append_c (out, *c);
      continue;
    }
    c++;
    if (*c == '%') {
      g_string_append_c (out, '%');
      continue;
    }
    gboolean zero = *c == '0';
    if (zero)
      c++;
    gint width = 0;
    while (g_ascii_isdigit (*c) && width < 100)
      width = width * 10 + (*c++ - '0');
    if (used || width > 32 || (*c != 'd' && *c != 'i' && *c != 'u')) {
      g_string_free (out, TRUE);
      return NULL;
    }
    g_string_append_printf (out, zero ? "%0*d" : "%*d", width, index);
    used = TRUE;
  }
  return g_string_free (out, FALSE);
}

/* Walks upstream through single-input elements to a source with a "location"
 * (filesrc, multifilesrc, imagesequencesrc...).  Bins and multi-input elements end the
 * walk. */
static void
locate_source (GstGeoregTelemetry * self)
{
  self->located = TRUE;
  GstPad *pad = gst_object_ref (GST_BASE_TRANSFORM_SINK_PAD (self));
  for (int hop = 0; pad && hop < MAX_UPSTREAM_HOPS; hop++) {
    GstPad *peer = gst_pad_get_peer (pad);
    gst_object_unref (pad);
    pad = NULL;
    GstElement *el = peer ? gst_pad_get_parent_element (peer) : NULL;
    if (peer)
      gst_object_unref (peer);
    if (!el)
      break;
    GObjectClass *klass = G_OBJECT_GET_CLASS (el);
    GParamSpec *loc = g_object_class_find_property (klass, "location");
    if (GST_IS_BASE_SRC (el) && loc && loc->value_type == G_TYPE_STRING) {
      g_object_get (el, "location", &self->source_location, NULL);
      GParamSpec *si = g_object_class_find_property (klass, "start-index");
      self->source_is_pattern = si && si->value_type == G_TYPE_INT &&
          self->source_location && strchr (self->source_location, '%');
      if (self->source_is_pattern)
        g_object_get (el, "start-index", &self->source_start_index, NULL);
      GST_INFO_OBJECT (self, "upstream source %s, location %s%s", GST_OBJECT_NAME (el),
          GST_STR_NULL (self->source_location), self->source_is_pattern ?
          " (pattern)" : "");
      gst_object_unref (el);
      break;
    }
    if (el->numsinkpads == 1 && !GST_IS_BIN (el)) {
      GST_OBJECT_LOCK (el);
      pad = el->sinkpads ? gst_object_ref (el->sinkpads->data) : NULL;
      GST_OBJECT_UNLOCK (el);
    }
    gst_object_unref (el);
  }
  if (pad)
    gst_object_unref (pad);
}

/* the file this buffer came from, or NULL */
static gchar *
current_file (GstGeoregTelemetry * self)
{
  if (!self->located)
    locate_source (self);
  if (!self->source_location)
    return NULL;
  if (!self->source_is_pattern)
    return g_strdup (self->source_location);
  return format_pattern (self->source_location,
      self->source_start_index + (gint) self->frame);
}

/* ---- per buffer ------------------------------------------------------------------- */

static void
set_value (GstGeoregPoseValue * dst, const GrPriorValue * src)
{
  /* what the buffer already carries (an application's autopilot) wins */
  if (dst->have || !src->have)
    return;
  dst->value = src->value;
  dst->sigma = src->sigma;
  dst->have = TRUE;
}

static void
fill_meta (GstGeoregPoseMeta * m, const GrPosePrior * p, const GrCamera * cam,
    gboolean from_calibration)
{
  set_value (&m->latitude, &p->lat);
  set_value (&m->longitude, &p->lon);
  set_value (&m->altitude_wgs84, &p->alt_wgs84);
  set_value (&m->altitude_amsl, &p->alt_amsl);
  set_value (&m->height_agl, &p->height_agl);
  set_value (&m->relative_altitude, &p->rel_alt);
  set_value (&m->camera_yaw, &p->cam_yaw);
  set_value (&m->camera_pitch, &p->cam_pitch);
  set_value (&m->camera_roll, &p->cam_roll);
  set_value (&m->flight_yaw, &p->flight_yaw);
  set_value (&m->flight_pitch, &p->flight_pitch);
  set_value (&m->flight_roll, &p->flight_roll);
  set_value (&m->gimbal_yaw, &p->gimbal_yaw);
  set_value (&m->gimbal_pitch, &p->gimbal_pitch);
  set_value (&m->gimbal_roll, &p->gimbal_roll);
  set_value (&m->focal_length_mm, &p->focal_mm);
  set_value (&m->focal_length_35mm, &p->focal_35mm);
  if (m->image_width <= 0 || m->image_height <= 0) {
    m->image_width = p->image_width;
    m->image_height = p->image_height;
  }
  if (!m->camera_make[0])
    g_strlcpy (m->camera_make, p->make, sizeof m->camera_make);
  if (!m->camera_model[0])
    g_strlcpy (m->camera_model, p->model, sizeof m->camera_model);
  if (!m->utc[0])
    g_strlcpy (m->utc, p->utc, sizeof m->utc);
  /* the sources bits name the sources this element read */
  m->sources |= p->sources;
  if (p->flags & GR_PRIOR_FLAG_YAW_DISAGREES)
    m->flags |= GST_GEOREG_POSE_FLAG_YAW_DISAGREES;
  if (p->flags & GR_PRIOR_FLAG_QUARTER_TURNED)
    m->flags |= GST_GEOREG_POSE_FLAG_QUARTER_TURNED;
  if (cam && !m->have_intrinsics) {
    m->have_intrinsics = TRUE;
    m->fx = cam->fx;
    m->fy = cam->fy;
    m->cx = cam->cx;
    m->cy = cam->cy;
    m->k1 = cam->k1;
    m->k2 = cam->k2;
    m->k3 = cam->k3;
    m->p1 = cam->p1;
    m->p2 = cam->p2;
    if (from_calibration)
      m->sources |= GST_GEOREG_POSE_SOURCE_CALIBRATION;
  }
}

/* The CSV row of this buffer; FALSE when none matches. */
static gboolean
csv_lookup (GstGeoregTelemetry * self, GstBuffer * buf, GstGeoregTelemetryKey key,
    gdouble tolerance, GrPosePrior * row, gchar ** what)
{
  if (key == GST_GEOREG_TELEMETRY_KEY_AUTO) {
    gchar *file = gr_telemetry_csv_has_filenames (self->csv) ? current_file (self) : NULL;
    key = file ? GST_GEOREG_TELEMETRY_KEY_FILENAME :
        gr_telemetry_csv_has_frames (self->csv) ? GST_GEOREG_TELEMETRY_KEY_FRAME :
        GST_GEOREG_TELEMETRY_KEY_TIMESTAMP;
    g_free (file);
  }
  switch (key) {
    case GST_GEOREG_TELEMETRY_KEY_FILENAME:{
      gchar *file = current_file (self);
      gboolean ok = file && gr_telemetry_csv_find_file (self->csv, file, row);
      *what = g_strdup_printf ("file %s", file ? file : "(upstream file name unknown)");
      g_free (file);
      return ok;
    }
    case GST_GEOREG_TELEMETRY_KEY_FRAME:
      *what = g_strdup_printf ("frame %" G_GUINT64_FORMAT, self->frame);
      return gr_telemetry_csv_find_frame (self->csv, (gint64) self->frame, row);
    default:{
      GstClockTime ts = GST_BUFFER_PTS (buf);
      *what = g_strdup_printf ("timestamp %" GST_TIME_FORMAT, GST_TIME_ARGS (ts));
      return GST_CLOCK_TIME_IS_VALID (ts) && gr_telemetry_csv_find_time (self->csv,
          (gdouble) ts / GST_SECOND, tolerance, row);
    }
  }
}

static GstFlowReturn
gst_georeg_telemetry_transform_ip (GstBaseTransform * trans, GstBuffer * buf)
{
  GstGeoregTelemetry *self = GST_GEOREG_TELEMETRY (trans);
  GST_OBJECT_LOCK (self);
  const GstGeoregTelemetryKey key = self->key;
  const gdouble tolerance = self->time_tolerance;
  const gboolean post = self->post_messages;
  const gdouble ground = self->ground_elevation, takeoff = self->takeoff_elevation;
  const gdouble elev_sigma = self->elevation_sigma;
  GST_OBJECT_UNLOCK (self);

  GrPosePrior prior;
  gr_pose_prior_init (&prior);
  if (self->is_jpeg) {
    GstMapInfo map;
    if (gst_buffer_map (buf, &map, GST_MAP_READ)) {
      char err[200] = "";
      if (gr_pose_prior_from_jpeg (map.data, map.size, &prior, err, sizeof err) != GR_OK)
        GST_DEBUG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": %s", self->frame, err);
      gst_buffer_unmap (buf, &map);
    }
  }
  if (self->csv) {
    GrPosePrior row;
    gchar *what = NULL;
    if (csv_lookup (self, buf, key, tolerance, &row, &what)) {
      gr_pose_prior_merge (&prior, &row);
    } else if (!self->warned_no_row) {
      self->warned_no_row = TRUE;
      GST_ELEMENT_WARNING (self, STREAM, FAILED,
          ("No telemetry CSV row for %s (further misses are logged at debug level)",
              what), (NULL));
    } else {
      GST_DEBUG_OBJECT (self, "no CSV row for %s", what);
    }
    g_free (what);
  }

  /* the user's ground elevation turns altitudes into the height above that ground */
  if (ground > ELEVATION_UNSET && prior.sources &&
      !gr_pose_prior_set_ground (&prior, ground, takeoff > ELEVATION_UNSET ? takeoff : NAN,
          elev_sigma))
    GST_DEBUG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": ground-elevation not applied "
        "(no altitude, or the camera would be below that ground)", self->frame);

  /* the image size the intrinsics refer to */
  gint w = prior.image_width > 0 ? prior.image_width : self->caps_width;
  gint h = prior.image_height > 0 ? prior.image_height : self->caps_height;
  GrCamera cam;
  gboolean have_cam = FALSE, from_calibration = FALSE;
  if (self->have_calibration) {
    cam = self->calibration;
    if (w > 0 && h > 0 && (w != cam.width || h != cam.height)) {
      /* the same lens at another resolution: scale, when the aspect matches */
      const gdouble sx = (gdouble) w / cam.width, sy = (gdouble) h / cam.height;
      have_cam = fabs (sx / sy - 1) < 1e-3;
      cam.fx *= sx;
      cam.cx = (cam.cx + 0.5) * sx - 0.5;
      cam.fy *= sy;
      cam.cy = (cam.cy + 0.5) * sy - 0.5;
      cam.width = w;
      cam.height = h;
    } else {
      have_cam = TRUE;
    }
    from_calibration = have_cam;
  }
  if (!have_cam && w > 0 && h > 0)
    have_cam = gr_camera_from_prior (&prior, w, h, &cam, NULL, 0) == GR_OK;

  if (prior.sources || have_cam) {
    GstGeoregPoseMeta *m = gst_buffer_get_georeg_pose_meta (buf);
    if (!m)
      m = gst_buffer_add_georeg_pose_meta (buf);
    if (m) {
      fill_meta (m, &prior, have_cam ? &cam : NULL, from_calibration);
      if (m->image_width <= 0)
        m->image_width = w, m->image_height = h;
      if (post) {
        GstStructure *s = gst_structure_new ("georeg_telemetry",
            "frame", G_TYPE_UINT64, self->frame,
            "timestamp", G_TYPE_UINT64, GST_BUFFER_PTS (buf),
            "sources", G_TYPE_UINT, m->sources,
            "flags", G_TYPE_UINT, m->flags,
            "latitude", G_TYPE_DOUBLE, m->latitude.value,
            "longitude", G_TYPE_DOUBLE, m->longitude.value,
            "height-agl", G_TYPE_DOUBLE, m->height_agl.value,
            "camera-yaw", G_TYPE_DOUBLE, m->camera_yaw.value,
            "camera-pitch", G_TYPE_DOUBLE, m->camera_pitch.value,
            "camera-roll", G_TYPE_DOUBLE, m->camera_roll.value,
            "focal-px", G_TYPE_DOUBLE, m->have_intrinsics ? m->fx : NAN, NULL);
        gst_element_post_message (GST_ELEMENT (self),
            gst_message_new_element (GST_OBJECT (self), s));
      }
    }
  } else {
    GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": no telemetry", self->frame);
  }
  self->frame++;
  return GST_FLOW_OK;
}

/* ---- negotiation, events, state --------------------------------------------------- */

static gboolean
gst_georeg_telemetry_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  GstGeoregTelemetry *self = GST_GEOREG_TELEMETRY (trans);
  const GstStructure *s = gst_caps_get_structure (incaps, 0);
  self->is_jpeg = gst_structure_has_name (s, "image/jpeg");
  self->caps_width = self->caps_height = 0;
  gst_structure_get_int (s, "width", &self->caps_width);
  gst_structure_get_int (s, "height", &self->caps_height);
  return TRUE;
}

static gboolean
gst_georeg_telemetry_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  GstGeoregTelemetry *self = GST_GEOREG_TELEMETRY (trans);
  if (GST_EVENT_TYPE (event) == GST_EVENT_STREAM_START) {
    /* a new stream counts its frames from 0, and may come from another source */
    self->frame = 0;
    self->located = FALSE;
    g_clear_pointer (&self->source_location, g_free);
    self->warned_no_row = FALSE;
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

/* A file property that could not be used: OPEN_READ when it could not be read,
 * READ when its content is unusable; the reason goes to the debug text. */
static void
post_load_error (GstGeoregTelemetry * self, GrStatus st, const gchar * what,
    const gchar * path, const gchar * reason)
{
  if (st == GR_ERR_IO)
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("Could not read %s \"%s\".", what,
            path), ("%s", reason));
  else
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("The %s \"%s\" is not usable.", what,
            path), ("%s", reason));
}

static gboolean
gst_georeg_telemetry_start (GstBaseTransform * trans)
{
  GstGeoregTelemetry *self = GST_GEOREG_TELEMETRY (trans);
  GST_OBJECT_LOCK (self);
  gchar *csv_path = g_strdup (self->telemetry_location);
  gchar *cal_path = g_strdup (self->calibration_location);
  GST_OBJECT_UNLOCK (self);
  gboolean ok = TRUE;
  char err[512] = "";
  if (csv_path && *csv_path) {
    GrStatus st;
    self->csv = gr_telemetry_csv_load (csv_path, &st, err, sizeof err);
    if (!self->csv) {
      post_load_error (self, st, "telemetry CSV", csv_path, err);
      ok = FALSE;
    } else {
      GST_INFO_OBJECT (self, "telemetry CSV %s: %d rows", csv_path,
          gr_telemetry_csv_rows (self->csv));
    }
  }
  if (ok && cal_path && *cal_path) {
    GrStatus st = gr_camera_load_calibration (cal_path, &self->calibration, err,
        sizeof err);
    if (st != GR_OK) {
      post_load_error (self, st, "camera calibration", cal_path, err);
      ok = FALSE;
    }
    self->have_calibration = st == GR_OK;
  }
  g_free (csv_path);
  g_free (cal_path);
  self->frame = 0;
  self->located = FALSE;
  self->warned_no_row = FALSE;
  if (!ok) {
    gr_telemetry_csv_free (self->csv);
    self->csv = NULL;
  }
  return ok;
}

static gboolean
gst_georeg_telemetry_stop (GstBaseTransform * trans)
{
  GstGeoregTelemetry *self = GST_GEOREG_TELEMETRY (trans);
  gr_telemetry_csv_free (self->csv);
  self->csv = NULL;
  self->have_calibration = FALSE;
  g_clear_pointer (&self->source_location, g_free);
  self->located = FALSE;
  return TRUE;
}

/* ---- properties ------------------------------------------------------------------- */

static void
gst_georeg_telemetry_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstGeoregTelemetry *self = GST_GEOREG_TELEMETRY (object);
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_TELEMETRY_LOCATION:
      g_free (self->telemetry_location);
      self->telemetry_location = g_value_dup_string (value);
      break;
    case PROP_CSV_KEY:
      self->key = g_value_get_enum (value);
      break;
    case PROP_TIME_TOLERANCE:
      self->time_tolerance = g_value_get_double (value);
      break;
    case PROP_CALIBRATION_LOCATION:
      g_free (self->calibration_location);
      self->calibration_location = g_value_dup_string (value);
      break;
    case PROP_POST_MESSAGES:
      self->post_messages = g_value_get_boolean (value);
      break;
    case PROP_GROUND_ELEVATION:
      self->ground_elevation = g_value_get_double (value);
      break;
    case PROP_TAKEOFF_ELEVATION:
      self->takeoff_elevation = g_value_get_double (value);
      break;
    case PROP_ELEVATION_SIGMA:
      self->elevation_sigma = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_georeg_telemetry_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstGeoregTelemetry *self = GST_GEOREG_TELEMETRY (object);
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_TELEMETRY_LOCATION:
      g_value_set_string (value, self->telemetry_location);
      break;
    case PROP_CSV_KEY:
      g_value_set_enum (value, self->key);
      break;
    case PROP_TIME_TOLERANCE:
      g_value_set_double (value, self->time_tolerance);
      break;
    case PROP_CALIBRATION_LOCATION:
      g_value_set_string (value, self->calibration_location);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, self->post_messages);
      break;
    case PROP_GROUND_ELEVATION:
      g_value_set_double (value, self->ground_elevation);
      break;
    case PROP_TAKEOFF_ELEVATION:
      g_value_set_double (value, self->takeoff_elevation);
      break;
    case PROP_ELEVATION_SIGMA:
      g_value_set_double (value, self->elevation_sigma);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_georeg_telemetry_finalize (GObject * object)
{
  GstGeoregTelemetry *self = GST_GEOREG_TELEMETRY (object);
  g_free (self->telemetry_location);
  g_free (self->calibration_location);
  gr_telemetry_csv_free (self->csv);
  g_free (self->source_location);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_georeg_telemetry_class_init (GstGeoregTelemetryClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *bt_class = GST_BASE_TRANSFORM_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (gst_georeg_telemetry_debug, "georegtelemetry", 0,
      "georeg telemetry priors");

  gobject_class->set_property = gst_georeg_telemetry_set_property;
  gobject_class->get_property = gst_georeg_telemetry_get_property;
  gobject_class->finalize = gst_georeg_telemetry_finalize;

  g_object_class_install_property (gobject_class, PROP_TELEMETRY_LOCATION,
      g_param_spec_string ("telemetry-location", "Telemetry CSV",
          "A telemetry CSV (docs/telemetry.md: a header naming filename/frame/timestamp "
          "and lat, lon, height_agl_m, heading_deg, pitch_deg, roll_deg, ...); its row "
          "for each frame overrides the JPEG's own values", NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_CSV_KEY,
      g_param_spec_enum ("csv-key", "CSV key", "How a frame finds its CSV row",
          GST_TYPE_GEOREG_TELEMETRY_KEY, DEFAULT_CSV_KEY,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_TIME_TOLERANCE,
      g_param_spec_double ("timestamp-tolerance", "Timestamp tolerance",
          "With csv-key=timestamp: the farthest a row's time may be from the buffer's "
          "(seconds)", 0, 3600, DEFAULT_TIME_TOLERANCE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_CALIBRATION_LOCATION,
      g_param_spec_string ("calibration-location", "Camera calibration",
          "An OpenCV camera calibration (YAML or JSON: image_width, image_height, "
          "camera_matrix, distortion_coefficients); without it the intrinsics follow "
          "from the EXIF focal length", NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_POST_MESSAGES,
      gst_georeg_param_spec_post_messages (GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_GROUND_ELEVATION,
      g_param_spec_double ("ground-elevation", "Ground elevation",
          "Elevation of the ground the photos see, metres above mean sea level; the "
          "height above ground becomes the altitude above sea level minus it (or, with "
          "takeoff-elevation, the height above the take-off point plus take-off minus "
          "ground).  -1000 (default): not given; the height above the take-off point "
          "then stands for the height above ground", ELEVATION_UNSET, 9000,
          ELEVATION_UNSET,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_TAKEOFF_ELEVATION,
      g_param_spec_double ("takeoff-elevation", "Take-off elevation",
          "Elevation of the take-off point, metres above mean sea level (-1000: not "
          "given); with ground-elevation, preferred to the absolute altitude, which on "
          "DJI aircraft can be tens of metres off", ELEVATION_UNSET, 9000,
          ELEVATION_UNSET,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_ELEVATION_SIGMA,
      g_param_spec_double ("elevation-sigma", "Elevation sigma",
          "1-sigma uncertainty of ground-elevation (and take-off elevation), metres; "
          "added to the altitude's own", 0, 1000, DEFAULT_ELEVATION_SIGMA,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Georeg telemetry priors",
      "Filter/Metadata",
      "Attaches each frame's pose prior (GstGeoregPoseMeta: position, height, heading, "
      "pitch, roll with uncertainties, and camera intrinsics) read from the JPEG's "
      "EXIF/XMP (DJI, senseFly, Pix4D Camera) and/or a telemetry CSV.  Place it before "
      "the decoder: the meta survives decoding", "georeg");

  bt_class->transform_ip = GST_DEBUG_FUNCPTR (gst_georeg_telemetry_transform_ip);
  bt_class->set_caps = GST_DEBUG_FUNCPTR (gst_georeg_telemetry_set_caps);
  bt_class->sink_event = GST_DEBUG_FUNCPTR (gst_georeg_telemetry_sink_event);
  bt_class->start = GST_DEBUG_FUNCPTR (gst_georeg_telemetry_start);
  bt_class->stop = GST_DEBUG_FUNCPTR (gst_georeg_telemetry_stop);
  /* in place, not passthrough: adding a meta needs a writable buffer, which the base
   * class then provides (a shallow copy at most; the JPEG bytes are never copied) */
  bt_class->passthrough_on_same_caps = FALSE;

  gst_type_mark_as_plugin_api (GST_TYPE_GEOREG_TELEMETRY_KEY, 0);
}

static void
gst_georeg_telemetry_init (GstGeoregTelemetry * self)
{
  self->key = DEFAULT_CSV_KEY;
  self->time_tolerance = DEFAULT_TIME_TOLERANCE;
  self->post_messages = DEFAULT_POST_MESSAGES;
  self->ground_elevation = self->takeoff_elevation = ELEVATION_UNSET;
  self->elevation_sigma = DEFAULT_ELEVATION_SIGMA;
  gst_base_transform_set_in_place (GST_BASE_TRANSFORM (self), TRUE);
}
