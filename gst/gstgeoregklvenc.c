/* georegklvenc: ST 0601 KLV per frame (gst/gstgeoregklvenc.h).
 *
 * The precision time stamp (tag 2) is the frame's capture time: a
 * GstReferenceTimestampMeta with caps timestamp/x-unix when the buffer has one (the
 * GStreamer convention for absolute times), else start-time plus the frame's PTS
 * since the first frame (start-time 0: the wall clock at the first frame).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>

#include "gstgeoregklvenc.h"
#include "gstgeoregfootprint.h"
#include "geo.h"
#include "klv.h"

GST_DEBUG_CATEGORY_STATIC (gst_georeg_klv_enc_debug);
#define GST_CAT_DEFAULT gst_georeg_klv_enc_debug

enum {
  PROP_0,
  PROP_CONTROL_LOCATION,        /* and PROP_CONTROL_LOCATION + 1: crs (GstGeoregMapProps) */
  PROP_CRS,
  PROP_START_TIME,
};

struct _GstGeoregKlvEnc {
  GstElement parent;
  GstPad *sinkpad, *srcpad;

  /* properties (object lock) */
  GstGeoregMapProps map;        /* control-location, crs */
  guint64 start_time_us;

  /* streaming */
  GrGeoRef *georef;
  gboolean caps_sent;
  guint64 frame;
  guint64 first_pts;            /* GST_CLOCK_TIME_NONE until the first timed frame */
  guint64 epoch_us;             /* capture time of the first frame */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS ("video/x-raw(ANY)"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS ("meta/x-klv, parsed = (boolean) true"));

#define gst_georeg_klv_enc_parent_class parent_class
G_DEFINE_TYPE (GstGeoregKlvEnc, gst_georeg_klv_enc, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (georegklvenc, "georegklvenc", GST_RANK_NONE,
    GST_TYPE_GEOREG_KLV_ENC);

static GstCaps *unix_caps;      /* timestamp/x-unix, for reference timestamp metas */

/* The capture time of buf in microseconds since 1970 (see the file comment). */
static guint64
capture_time_us (GstGeoregKlvEnc * self, GstBuffer * buf)
{
  GstReferenceTimestampMeta *rt = gst_buffer_get_reference_timestamp_meta (buf, unix_caps);
  if (rt)
    return rt->timestamp / 1000;
  const GstClockTime pts = GST_BUFFER_PTS (buf);
  if (self->first_pts == GST_CLOCK_TIME_NONE) {
    GST_OBJECT_LOCK (self);
    guint64 start = self->start_time_us;
    GST_OBJECT_UNLOCK (self);
    self->epoch_us = start ? start : (guint64) g_get_real_time ();
    self->first_pts = GST_CLOCK_TIME_IS_VALID (pts) ? pts : 0;
  }
  if (!GST_CLOCK_TIME_IS_VALID (pts) || pts < self->first_pts)
    return self->epoch_us;
  return self->epoch_us + (pts - self->first_pts) / 1000;
}

static GstFlowReturn
gst_georeg_klv_enc_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstGeoregKlvEnc *self = GST_GEOREG_KLV_ENC (parent);
  if (!self->caps_sent) {
    GstCaps *caps = gst_pad_get_pad_template_caps (self->srcpad);
    gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
    gst_caps_unref (caps);
    self->caps_sent = TRUE;
  }
  GrFootprint f = { 0 };
  gchar *flag_names = NULL;
  gst_georeg_footprint_from_buffer (self->georef, buf, self->frame, &f, &flag_names);
  g_free (flag_names);

  GrKlvUas v;
  gr_klv_uas_init (&v);
  v.timestamp_us = capture_time_us (self, buf);
  if (f.geometry >= 1) {
    v.has_centre = TRUE;
    v.centre_lat = f.centre_lat;
    v.centre_lon = f.centre_lon;
  }
  if (f.geometry == 2) {
    /* GrFootprint's corners are TL TR BR BL: ST 0601's points 1 to 4 */
    v.has_corners = TRUE;
    for (int i = 0; i < 4; i++) {
      v.corner_lat[i] = f.corner_lat[i];
      v.corner_lon[i] = f.corner_lon[i];
    }
  }
  GstBuffer *out = gst_buffer_new_allocate (NULL, GR_KLV_UAS_MAX_BYTES, NULL);
  GstMapInfo map;
  gst_buffer_map (out, &map, GST_MAP_WRITE);
  const gsize n = gr_klv_uas_encode (&v, map.data);
  gst_buffer_unmap (out, &map);
  gst_buffer_set_size (out, n);
  GST_BUFFER_PTS (out) = GST_BUFFER_PTS (buf);
  GST_BUFFER_DTS (out) = GST_BUFFER_PTS (buf);
  GST_BUFFER_DURATION (out) = GST_BUFFER_DURATION (buf);
  GST_BUFFER_OFFSET (out) = self->frame;
  self->frame++;
  gst_buffer_unref (buf);
  return gst_pad_push (self->srcpad, out);
}

static gboolean
gst_georeg_klv_enc_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstGeoregKlvEnc *self = GST_GEOREG_KLV_ENC (parent);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      /* the video caps are not ours to forward: send the KLV caps instead */
      GstCaps *caps = gst_pad_get_pad_template_caps (self->srcpad);
      gboolean ok = gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
      gst_caps_unref (caps);
      gst_event_unref (event);
      self->caps_sent = TRUE;
      return ok;
    }
    default:
      return gst_pad_event_default (pad, parent, event);
  }
}

static gboolean
gst_georeg_klv_enc_sink_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:{
      /* any raw video: the pixels are not read */
      GstCaps *filter, *caps = gst_pad_get_pad_template_caps (pad);
      gst_query_parse_caps (query, &filter);
      if (filter) {
        GstCaps *i = gst_caps_intersect_full (filter, caps, GST_CAPS_INTERSECT_FIRST);
        gst_caps_unref (caps);
        caps = i;
      }
      gst_query_set_caps_result (query, caps);
      gst_caps_unref (caps);
      return TRUE;
    }
    case GST_QUERY_ALLOCATION:
      /* the frames stop here: nothing to propose, and no reason to ask the muxer */
      return FALSE;
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

static GstStateChangeReturn
gst_georeg_klv_enc_change_state (GstElement * element, GstStateChange transition)
{
  GstGeoregKlvEnc *self = GST_GEOREG_KLV_ENC (element);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    self->georef = gst_georeg_map_props_open (element, &self->map);
    if (!self->georef)
      return GST_STATE_CHANGE_FAILURE;
    self->frame = 0;
    self->first_pts = GST_CLOCK_TIME_NONE;
    self->caps_sent = FALSE;
  }
  GstStateChangeReturn ret = GST_ELEMENT_CLASS (parent_class)->change_state (element,
      transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    gr_georef_free (self->georef);
    self->georef = NULL;
  }
  return ret;
}

static void
gst_georeg_klv_enc_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  GstGeoregKlvEnc *self = GST_GEOREG_KLV_ENC (object);
  GST_OBJECT_LOCK (self);
  if (prop_id == PROP_START_TIME)
    self->start_time_us = g_value_get_uint64 (value);
  else if (!gst_georeg_map_props_set (&self->map, PROP_CONTROL_LOCATION, prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  GST_OBJECT_UNLOCK (self);
}

static void
gst_georeg_klv_enc_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstGeoregKlvEnc *self = GST_GEOREG_KLV_ENC (object);
  GST_OBJECT_LOCK (self);
  if (prop_id == PROP_START_TIME)
    g_value_set_uint64 (value, self->start_time_us);
  else if (!gst_georeg_map_props_get (&self->map, PROP_CONTROL_LOCATION, prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  GST_OBJECT_UNLOCK (self);
}

static void
gst_georeg_klv_enc_finalize (GObject * object)
{
  GstGeoregKlvEnc *self = GST_GEOREG_KLV_ENC (object);
  gst_georeg_map_props_clear (&self->map);
  gr_georef_free (self->georef);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_georeg_klv_enc_class_init (GstGeoregKlvEncClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;

  gobject_class->set_property = gst_georeg_klv_enc_set_property;
  gobject_class->get_property = gst_georeg_klv_enc_get_property;
  gobject_class->finalize = gst_georeg_klv_enc_finalize;
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_georeg_klv_enc_change_state);

  gst_georeg_map_props_install (gobject_class, PROP_CONTROL_LOCATION);
  g_object_class_install_property (gobject_class, PROP_START_TIME,
      g_param_spec_uint64 ("start-time", "Capture time of the first frame",
          "Microseconds since 1970-01-01 UTC of the first frame, for the precision time "
          "stamp when frames carry no timestamp/x-unix reference timestamp; 0 = the wall "
          "clock when the first frame arrives", 0, G_MAXUINT64, 0, rw));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Georegistration to MISB KLV",
      "Encoder/Metadata",
      "Writes one MISB ST 0601 UAS Datalink Local Set per registered video frame (time "
      "stamp, frame centre and corner latitudes/longitudes in WGS84) as meta/x-klv for "
      "mpegtsmux, so full-motion-video tools show the footprint", "georeg");
  unix_caps = gst_caps_new_empty_simple ("timestamp/x-unix");
  GST_MINI_OBJECT_FLAG_SET (unix_caps, GST_MINI_OBJECT_FLAG_MAY_BE_LEAKED);
  GST_DEBUG_CATEGORY_INIT (gst_georeg_klv_enc_debug, "georegklvenc", 0,
      "georeg results as MISB ST 0601 KLV");
}

static void
gst_georeg_klv_enc_init (GstGeoregKlvEnc * self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad, GST_DEBUG_FUNCPTR (gst_georeg_klv_enc_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_georeg_klv_enc_sink_event));
  gst_pad_set_query_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_georeg_klv_enc_sink_query));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);
  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
  self->first_pts = GST_CLOCK_TIME_NONE;
}
