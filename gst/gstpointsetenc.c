/* pointsetenc: writes each application/x-pointset buffer as one CSV document
 * ("x,y[,z]" header, then one point per line, 9 significant digits: float32 values
 * round-trip exactly).  Timestamps and metas are copied to the text buffer.
 * A buffer with a connectivity meta (a mesh or a curve, GstPointSetCellsMeta) is
 * written as PLY ASCII with its faces or edges instead (caps application/x-ply), so
 * that nothing of it is lost.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include "gstpointsetenc.h"
#include "gstpointset.h"
#include "pointset_io.h"

GST_DEBUG_CATEGORY_STATIC (gst_point_set_enc_debug);
#define GST_CAT_DEFAULT gst_point_set_enc_debug

enum {
  PROP_0,
  PROP_HEADER,
};

#define DEFAULT_HEADER TRUE

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_POINTSET_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS ("text/csv; application/x-ply"));

#define gst_point_set_enc_parent_class parent_class
G_DEFINE_TYPE (GstPointSetEnc, gst_point_set_enc, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (pointsetenc, "pointsetenc", GST_RANK_NONE,
    GST_TYPE_POINT_SET_ENC);

static GstFlowReturn
gst_point_set_enc_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstPointSetEnc *self = GST_POINT_SET_ENC (parent);
  gboolean header;
  GST_OBJECT_LOCK (self);
  header = self->header;
  GST_OBJECT_UNLOCK (self);

  if (self->dim == 0) {
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("No caps before the first buffer."),
        (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GstMapInfo map;
  if (!gst_buffer_map (buf, &map, GST_MAP_READ)) {
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map the input."), (NULL));
    return GST_FLOW_ERROR;
  }
  gdouble *xyz = NULL;
  gsize n = 0;
  gchar *error = NULL;
  gboolean ok = gst_pointset_read (map.data, map.size, self->dim, &xyz, &n, &error);
  gst_buffer_unmap (buf, &map);
  if (!ok) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Malformed point-set buffer: %s.", error),
        (NULL));
    g_free (error);
    gst_buffer_unref (buf);
    return GST_FLOW_ERROR;
  }
  gsize m = n * (gsize) self->dim;
  for (gsize i = 0; i < m; i++)
    if (!isfinite (xyz[i])) {
      /* a CSV "inf" or "nan" would be read back by nobody (pointsetparse refuses it) */
      GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Malformed point-set buffer: point %"
              G_GSIZE_FORMAT " has a non-finite coordinate.", i / (gsize) self->dim),
          (NULL));
      g_free (xyz);
      gst_buffer_unref (buf);
      return GST_FLOW_ERROR;
    }
  GstPointSetCellsMeta *cm = gst_buffer_get_point_set_cells_meta (buf);
  if (cm) {
    gsize plen = 0;
    char *ply = gr_pointset_format_ply (xyz, n, self->dim, cm->cells, cm->ncells,
        cm->cell_size, &plen);
    g_free (xyz);
    if (!ply) {
      gst_buffer_unref (buf);
      GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Malformed mesh: its cells refer to "
              "vertices beyond the %" G_GSIZE_FORMAT " points.", n), (NULL));
      return GST_FLOW_ERROR;
    }
    if (!self->ply_caps) {
      GstCaps *caps = gst_caps_new_empty_simple ("application/x-ply");
      gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
      gst_caps_unref (caps);
      self->ply_caps = TRUE;
    }
    GstBuffer *out = gst_buffer_new_memdup (ply, plen);
    free (ply);
    gst_buffer_copy_into (out, buf, GST_BUFFER_COPY_METADATA, 0, -1);
    gst_buffer_unref (buf);
    return gst_pad_push (self->srcpad, out);
  }
  if (self->ply_caps) {
    GstCaps *caps = gst_caps_new_empty_simple ("text/csv");
    gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
    gst_caps_unref (caps);
    self->ply_caps = FALSE;
  }
  gfloat *f = g_new (gfloat, m ? m : 1);
  for (gsize i = 0; i < m; i++)
    f[i] = (gfloat) xyz[i];
  g_free (xyz);
  gsize len = 0;
  char *text = gr_pointset_format_csv (NULL, f, n, self->dim, &len);
  g_free (f);
  if (!text) {
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
    return GST_FLOW_ERROR;
  }
  gsize skip = 0;
  if (!header)
    skip = (gsize) (strchr (text, '\n') - text) + 1;
  GstBuffer *out = gst_buffer_new_memdup (text + skip, len - skip);
  free (text);
  gst_buffer_copy_into (out, buf, GST_BUFFER_COPY_METADATA, 0, -1);
  gst_buffer_unref (buf);
  GST_LOG_OBJECT (self, "%" G_GSIZE_FORMAT " points -> %" G_GSIZE_FORMAT " bytes", n,
      len - skip);
  return gst_pad_push (self->srcpad, out);
}

static gboolean
gst_point_set_enc_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstPointSetEnc *self = GST_POINT_SET_ENC (parent);
  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;
    gst_event_parse_caps (event, &caps);
    gint dim;
    if (!gst_pointset_caps_get_dimensions (caps, &dim)) {
      gst_event_unref (event);
      return FALSE;
    }
    self->dim = dim;
    self->ply_caps = FALSE;
    gst_event_unref (event);
    GstCaps *out = gst_caps_new_empty_simple ("text/csv");
    gboolean ok = gst_pad_push_event (self->srcpad, gst_event_new_caps (out));
    gst_caps_unref (out);
    return ok;
  }
  return gst_pad_event_default (pad, parent, event);
}

static GstStateChangeReturn
gst_point_set_enc_change_state (GstElement * element, GstStateChange transition)
{
  GstPointSetEnc *self = GST_POINT_SET_ENC (element);
  GstStateChangeReturn ret =
      GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    self->dim = 0;
  return ret;
}

static void
gst_point_set_enc_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  GstPointSetEnc *self = GST_POINT_SET_ENC (object);
  switch (prop_id) {
    case PROP_HEADER:
      GST_OBJECT_LOCK (self);
      self->header = g_value_get_boolean (value);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_point_set_enc_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstPointSetEnc *self = GST_POINT_SET_ENC (object);
  switch (prop_id) {
    case PROP_HEADER:
      GST_OBJECT_LOCK (self);
      g_value_set_boolean (value, self->header);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_point_set_enc_class_init (GstPointSetEncClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  gobject_class->set_property = gst_point_set_enc_set_property;
  gobject_class->get_property = gst_point_set_enc_get_property;
  g_object_class_install_property (gobject_class, PROP_HEADER,
      g_param_spec_boolean ("header", "Header",
          "Start each document with the header line x,y[,z]", DEFAULT_HEADER,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Point set CSV encoder",
      "Codec/Encoder", "Writes each application/x-pointset buffer as one CSV document "
      "(header x,y[,z], one point per line, 9 significant digits), e.g. for filesink "
      "or multifilesink", "georeg developers");
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_point_set_enc_change_state);
  GST_DEBUG_CATEGORY_INIT (gst_point_set_enc_debug, "pointsetenc", 0,
      "point set CSV encoder");
}

static void
gst_point_set_enc_init (GstPointSetEnc * self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad, GST_DEBUG_FUNCPTR (gst_point_set_enc_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_point_set_enc_sink_event));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);
  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
  self->header = DEFAULT_HEADER;
}
