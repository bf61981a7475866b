/* pointsetparse: reads point-set text files into application/x-pointset buffers.
 *
 * How bytes become files (the `mode` property):
 *  - stream: the whole stream up to EOS is one file.  When upstream answers a BYTES
 *    duration query (filesrc does), the set is pushed as soon as that many bytes have
 *    arrived, without waiting for EOS.
 *  - per-buffer: every input buffer is one whole file: what multifilesrc produces (it
 *    reads each file into one buffer and sends no EOS between files), or an appsrc
 *    that pushes files.
 *  - auto (default): per-buffer when the upstream element is a multi-file source (a
 *    URI handler of the "multifile" protocol: multifilesrc), else stream: filesrc (its
 *    size known: pushed when complete), and pipes or sockets (fdsrc, ...: no size, so
 *    the set is parsed at EOS).  An appsrc that pushes one file per buffer needs
 *    mode=per-buffer.
 * Each file gives one output buffer (float32, see gstpointset.h); the output caps
 * follow the file's dimension (or the `dimensions` property).  A malformed file is a
 * GST_ELEMENT_ERROR (STREAM, DECODE) naming the line and the problem.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <string.h>

#include "gstpointsetparse.h"
#include "gstpointset.h"

GST_DEBUG_CATEGORY_STATIC (gst_point_set_parse_debug);
#define GST_CAT_DEFAULT gst_point_set_parse_debug

enum {
  PROP_0,
  PROP_MODE,
  PROP_FORMAT,
  PROP_DIMENSIONS,
};

#define DEFAULT_MODE GST_POINT_SET_PARSE_MODE_AUTO
#define DEFAULT_FORMAT GR_POINTSET_AUTO
#define DEFAULT_DIMENSIONS 0

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_POINTSET_CAPS));

GType
gst_point_set_parse_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_POINT_SET_PARSE_MODE_AUTO,
        "per-buffer after a multi-file source (multifilesrc), else stream",
        "auto"},
    {GST_POINT_SET_PARSE_MODE_STREAM, "the whole stream (until EOS) is one file",
        "stream"},
    {GST_POINT_SET_PARSE_MODE_PER_BUFFER,
        "each buffer is one whole file (multifilesrc)", "per-buffer"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstPointSetParseMode", values));
  return type;
}

GType
gst_point_set_format_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GR_POINTSET_AUTO, "detect from the content", "auto"},
    {GR_POINTSET_CSV, "CSV or whitespace-separated text, optional x,y,z header", "csv"},
    {GR_POINTSET_PLY, "PLY ASCII (vertex x, y, z)", "ply"},
    {GR_POINTSET_VTK, "legacy VTK ASCII (POINTS)", "vtk"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstPointSetFormat", values));
  return type;
}

#define gst_point_set_parse_parent_class parent_class
G_DEFINE_TYPE (GstPointSetParse, gst_point_set_parse, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (pointsetparse, "pointsetparse", GST_RANK_NONE,
    GST_TYPE_POINT_SET_PARSE);

static void
reset_stream (GstPointSetParse * self)
{
  gst_adapter_clear (self->adapter);
  self->active_mode = -1;
  self->expected_size = -1;
  self->emitted = FALSE;
  self->got_data = FALSE;
  self->first_pts = GST_CLOCK_TIME_NONE;
}

/* Parses one file and pushes its point set. */
static GstFlowReturn
push_set (GstPointSetParse * self, const guint8 * data, gsize len, GstBuffer * in)
{
  GrPointSetFormat format;
  gint want_dim;
  GST_OBJECT_LOCK (self);
  format = self->format;
  want_dim = self->dimensions;
  GST_OBJECT_UNLOCK (self);

  GrPointSet ps;
  char err[512] = "";
  GrStatus st = gr_pointset_parse ((const char *) data, len, format, want_dim, &ps, err,
      sizeof err);
  if (st == GR_ERR_NOMEM) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
    return GST_FLOW_ERROR;
  }
  if (st != GR_OK) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE, ("Malformed point set: %s", err),
        ("point set %" G_GUINT64_FORMAT " (%" G_GSIZE_FORMAT " bytes)", self->sets, len));
    return GST_FLOW_ERROR;
  }
  GST_DEBUG_OBJECT (self, "point set %" G_GUINT64_FORMAT ": %" G_GSIZE_FORMAT
      " %d-D points (%s)", self->sets, ps.n, ps.dim, gr_pointset_format_name (ps.format));

  if (self->out_dim != ps.dim) {
    GstCaps *caps = gst_pointset_caps_new (ps.dim);
    gboolean ok = gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
    gst_caps_unref (caps);
    if (!ok) {
      gint dim = ps.dim;
      gr_pointset_clear (&ps);
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("Downstream does not accept %d-D point sets.", dim), (NULL));
      return GST_FLOW_NOT_NEGOTIATED;
    }
    self->out_dim = ps.dim;
  }
  if (self->need_segment) {
    GstSegment seg;
    gst_segment_init (&seg, GST_FORMAT_TIME);
    gst_pad_push_event (self->srcpad, gst_event_new_segment (&seg));
    self->need_segment = FALSE;
  }
  GstBuffer *out = gst_pointset_buffer_new (ps.xyz, NULL, ps.n, ps.dim);
  if (out && ps.cell_size)
    gst_buffer_add_point_set_cells_meta (out, ps.cells, ps.ncells, ps.cell_size);
  gr_pointset_clear (&ps);
  if (!out) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
    return GST_FLOW_ERROR;
  }
  if (in) {
    GST_BUFFER_PTS (out) = GST_BUFFER_PTS (in);
    GST_BUFFER_DTS (out) = GST_BUFFER_DTS (in);
    GST_BUFFER_DURATION (out) = GST_BUFFER_DURATION (in);
  } else {
    GST_BUFFER_PTS (out) = self->first_pts;
  }
  GST_BUFFER_OFFSET (out) = self->sets;
  GST_BUFFER_OFFSET_END (out) = self->sets + 1;
  self->sets++;
  return gst_pad_push (self->srcpad, out);
}

/* True when the element feeding our sink pad sends one whole file per buffer
 * (multifilesrc: a URI handler of the multifile protocol). */
static gboolean
upstream_is_multifile (GstPointSetParse * self)
{
  gboolean multi = FALSE;
  GstPad *peer = gst_pad_get_peer (self->sinkpad);
  if (!peer)
    return FALSE;
  GstElement *up = gst_pad_get_parent_element (peer);
  gst_object_unref (peer);
  if (!up)
    return FALSE;
  if (GST_IS_URI_HANDLER (up)) {
    const gchar *const *protocols = gst_uri_handler_get_protocols (GST_URI_HANDLER (up));
    for (guint i = 0; protocols && protocols[i]; i++)
      if (g_ascii_strcasecmp (protocols[i], "multifile") == 0)
        multi = TRUE;
  }
  gst_object_unref (up);
  return multi;
}

static void
resolve_mode (GstPointSetParse * self)
{
  GstPointSetParseMode mode;
  GST_OBJECT_LOCK (self);
  mode = self->mode;
  GST_OBJECT_UNLOCK (self);

  gint64 size = -1;
  if (mode != GST_POINT_SET_PARSE_MODE_PER_BUFFER) {
    GstQuery *q = gst_query_new_duration (GST_FORMAT_BYTES);
    if (gst_pad_peer_query (self->sinkpad, q))
      gst_query_parse_duration (q, NULL, &size);
    gst_query_unref (q);
  }
  /* without a size, a pipe's chunks must not be taken for files (each parsed alone,
   * several sets out of one file): only a multi-file source is per-buffer */
  if (mode == GST_POINT_SET_PARSE_MODE_AUTO)
    mode = size <= 0 && upstream_is_multifile (self)
        ? GST_POINT_SET_PARSE_MODE_PER_BUFFER : GST_POINT_SET_PARSE_MODE_STREAM;
  self->active_mode = mode;
  self->expected_size = mode == GST_POINT_SET_PARSE_MODE_STREAM && size > 0 ? size : -1;
  GST_INFO_OBJECT (self, "%s mode%s", mode == GST_POINT_SET_PARSE_MODE_STREAM ?
      "stream (one file until EOS)" : "per-buffer (one file per buffer)",
      self->expected_size > 0 ? ", upstream size known" : "");
}

static GstFlowReturn
gst_point_set_parse_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstPointSetParse *self = GST_POINT_SET_PARSE (parent);
  if (self->active_mode < 0)
    resolve_mode (self);
  self->got_data = TRUE;

  if (self->active_mode == GST_POINT_SET_PARSE_MODE_PER_BUFFER) {
    GstMapInfo map;
    if (!gst_buffer_map (buf, &map, GST_MAP_READ)) {
      gst_buffer_unref (buf);
      GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map the input."), (NULL));
      return GST_FLOW_ERROR;
    }
    GstFlowReturn ret = push_set (self, map.data, map.size, buf);
    gst_buffer_unmap (buf, &map);
    gst_buffer_unref (buf);
    return ret;
  }

  if (self->emitted) {
    /* the announced size was reached: trailing bytes of the same stream are ignored */
    GST_LOG_OBJECT (self, "dropping %" G_GSIZE_FORMAT " bytes after the point set",
        gst_buffer_get_size (buf));
    gst_buffer_unref (buf);
    return GST_FLOW_OK;
  }
  if (!GST_CLOCK_TIME_IS_VALID (self->first_pts))
    self->first_pts = GST_BUFFER_PTS (buf);
  gst_adapter_push (self->adapter, buf);
  gsize avail = gst_adapter_available (self->adapter);
  if (self->expected_size > 0 && avail >= (gsize) self->expected_size) {
    guint8 *data = gst_adapter_take (self->adapter, avail);
    GstFlowReturn ret = push_set (self, data, avail, NULL);
    g_free (data);
    self->emitted = TRUE;
    return ret;
  }
  return GST_FLOW_OK;
}

static gboolean
gst_point_set_parse_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstPointSetParse *self = GST_POINT_SET_PARSE (parent);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_STREAM_START:
      reset_stream (self);
      self->need_segment = TRUE;
      return gst_pad_push_event (self->srcpad, event);
    case GST_EVENT_CAPS:
      /* our output caps follow the parsed content */
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_SEGMENT:
      /* upstream's (bytes) segment says nothing about point sets: send a time one */
      self->need_segment = TRUE;
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_FLUSH_STOP:
      reset_stream (self);
      self->need_segment = TRUE;
      return gst_pad_push_event (self->srcpad, event);
    case GST_EVENT_EOS:{
      if (self->active_mode != GST_POINT_SET_PARSE_MODE_PER_BUFFER && !self->emitted) {
        gsize avail = gst_adapter_available (self->adapter);
        if (avail == 0) {
          GST_ELEMENT_ERROR (self, STREAM, DECODE,
              ("Malformed point set: empty input, no points."),
              ("EOS before any data"));
          gst_event_unref (event);
          return FALSE;
        }
        guint8 *data = gst_adapter_take (self->adapter, avail);
        GstFlowReturn ret = push_set (self, data, avail, NULL);
        g_free (data);
        self->emitted = TRUE;
        if (ret == GST_FLOW_ERROR) {
          gst_event_unref (event);
          return FALSE;
        }
      } else if (!self->got_data) {
        GST_ELEMENT_ERROR (self, STREAM, DECODE,
            ("Malformed point set: empty input, no points."), ("EOS before any data"));
        gst_event_unref (event);
        return FALSE;
      }
      return gst_pad_push_event (self->srcpad, event);
    }
    default:
      return gst_pad_event_default (pad, parent, event);
  }
}

static GstStateChangeReturn
gst_point_set_parse_change_state (GstElement * element, GstStateChange transition)
{
  GstPointSetParse *self = GST_POINT_SET_PARSE (element);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    reset_stream (self);
    self->out_dim = 0;
    self->need_segment = TRUE;
    self->sets = 0;
  }
  GstStateChangeReturn ret =
      GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    reset_stream (self);
  return ret;
}

static void
gst_point_set_parse_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstPointSetParse *self = GST_POINT_SET_PARSE (object);
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODE:
      self->mode = g_value_get_enum (value);
      break;
    case PROP_FORMAT:
      self->format = g_value_get_enum (value);
      break;
    case PROP_DIMENSIONS:{
      gint d = g_value_get_int (value);
      if (d == 1)
        GST_WARNING_OBJECT (self, "dimensions must be 0, 2 or 3; 1 ignored");
      else
        self->dimensions = d;
      break;
    }
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_point_set_parse_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstPointSetParse *self = GST_POINT_SET_PARSE (object);
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODE:
      g_value_set_enum (value, self->mode);
      break;
    case PROP_FORMAT:
      g_value_set_enum (value, self->format);
      break;
    case PROP_DIMENSIONS:
      g_value_set_int (value, self->dimensions);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_point_set_parse_finalize (GObject * object)
{
  GstPointSetParse *self = GST_POINT_SET_PARSE (object);
  g_object_unref (self->adapter);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_point_set_parse_class_init (GstPointSetParseClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;

  gobject_class->set_property = gst_point_set_parse_set_property;
  gobject_class->get_property = gst_point_set_parse_get_property;
  gobject_class->finalize = gst_point_set_parse_finalize;

  g_object_class_install_property (gobject_class, PROP_MODE,
      g_param_spec_enum ("mode", "Mode",
          "How input buffers make up files: the whole stream until EOS (filesrc, fdsrc), "
          "one file per buffer (multifilesrc, an appsrc pushing files), or auto: "
          "per-buffer after multifilesrc, else stream", GST_TYPE_POINT_SET_PARSE_MODE, DEFAULT_MODE, rw));
  g_object_class_install_property (gobject_class, PROP_FORMAT,
      g_param_spec_enum ("format", "Format",
          "File format (auto: 'ply' header -> PLY, '# vtk' header -> VTK, else CSV)",
          GST_TYPE_POINT_SET_FORMAT, DEFAULT_FORMAT, rw));
  g_object_class_install_property (gobject_class, PROP_DIMENSIONS,
      g_param_spec_int ("dimensions", "Dimensions",
          "Output dimension: 0 = the file's; 2 = drop z (only when every z is 0, e.g. "
          "VTK files of 2-D data); 3 = pad 2-D points with z = 0", 0, 3,
          DEFAULT_DIMENSIONS, rw));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Point set parser",
      "Codec/Parser", "Reads landmark / point-set files (CSV or whitespace text with an "
      "optional x,y,z header, PLY ASCII, legacy VTK POINTS) into "
      "application/x-pointset buffers of float32 x,y[,z] (one buffer per file; works "
      "after filesrc and multifilesrc)", "georeg developers");
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_point_set_parse_change_state);

  gst_type_mark_as_plugin_api (GST_TYPE_POINT_SET_PARSE_MODE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_POINT_SET_FORMAT, 0);
  GST_DEBUG_CATEGORY_INIT (gst_point_set_parse_debug, "pointsetparse", 0,
      "point set parser");
}

static void
gst_point_set_parse_init (GstPointSetParse * self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_point_set_parse_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_point_set_parse_sink_event));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);
  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->mode = DEFAULT_MODE;
  self->format = DEFAULT_FORMAT;
  self->dimensions = DEFAULT_DIMENSIONS;
  self->adapter = gst_adapter_new ();
  self->need_segment = TRUE;
  reset_stream (self);
}
