/* GstGeoregBase: the abstract base of the frame elements (see gstgeoregbase.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <string.h>

#include "gstgeoregbase.h"
#include "gstgeoregprops.h"
#include "georeg-frame-meta.h"

GST_DEBUG_CATEGORY_STATIC (gst_georeg_base_debug);
#define GST_CAT_DEFAULT gst_georeg_base_debug

enum {
  PROP_CONTROL_LOCATION = GST_GEOREG_BASE_PROP_FIRST,
  PROP_BAND,
  PROP_NODATA,
  PROP_BINS,
  PROP_BIN_LOW,
  PROP_BIN_HIGH,
  PROP_BACKEND,
  PROP_CUDA_DEVICE_ID,
  PROP_POST_MESSAGES,
  PROP_CONTROL_MODE,
  PROP_CONTROL_CACHE_SIZE,
  PROP_CONTROL_WINDOW_MARGIN,
  PROP_CONTROL_BUDGET,
  /* installed on every element by the base itself */
  PROP_SHARE_FRAMES,
  PROP_FRAMES_CONVERTED,
  PROP_KEYPOINTS_SHARED,
};

#define DEFAULT_BAND 0
#define DEFAULT_NODATA -1
#define DEFAULT_BIN_LOW 2.0
#define DEFAULT_BIN_HIGH 98.0
#define DEFAULT_BACKEND GST_GEOREG_DEFAULT_BACKEND
#define DEFAULT_CUDA_DEVICE_ID GST_GEOREG_DEFAULT_CUDA_DEVICE_ID
#define DEFAULT_POST_MESSAGES GST_GEOREG_DEFAULT_POST_MESSAGES
#define DEFAULT_SHARE_FRAMES TRUE

typedef struct {
  GstGeoregBaseSettings settings;       /* under the object lock */
  GstGeoregCuda cuda;
  GstVideoInfo info;
  GstGeoregInput input;         /* where the last frame was read from */
  GstGeoregControl *control;
  gboolean windowed;            /* control was opened for windows */
  GstCaps *refused_caps;        /* caps whose fault was posted (set_caps) */
} GstGeoregBasePrivate;

/* GstPreset with GStreamer's key-file implementation: the system presets
 * (gst/presets/GstNmiLocalize.prs, ..., installed to DATADIR/gstreamer-1.0/presets;
 * GST_PRESET_PATH adds folders) hold named property sets such as "onboard". */
G_DEFINE_ABSTRACT_TYPE_WITH_CODE (GstGeoregBase, gst_georeg_base,
    GST_TYPE_BASE_TRANSFORM, G_ADD_PRIVATE (GstGeoregBase);
    G_IMPLEMENT_INTERFACE (GST_TYPE_PRESET, NULL);
    GST_DEBUG_CATEGORY_INIT (gst_georeg_base_debug, "georegbase", 0,
        "georeg frame element base"));

#define PRIV(b) ((GstGeoregBasePrivate *) gst_georeg_base_get_instance_private (b))

/* ------------------------------------------------------------------ properties */

void
gst_georeg_base_class_install_properties (GstGeoregBaseClass * klass,
    GstGeoregProps which, GstGeoregBins default_bins)
{
  GObjectClass *oc = G_OBJECT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
  const GParamFlags rw_ready = rw | GST_PARAM_MUTABLE_READY;
  const GParamFlags rw_playing = rw | GST_PARAM_MUTABLE_PLAYING;

  if (which & GST_GEOREG_PROPS_CONTROL) {
    g_object_class_install_property (oc, PROP_CONTROL_LOCATION,
        gst_georeg_param_spec_control_location (GST_PARAM_MUTABLE_READY));
    g_object_class_install_property (oc, PROP_BAND,
        g_param_spec_uint ("band", "Band",
            "Band of the control image to match (1-based band number); 0 = luminance "
            "of its colour bands", 0, 65535, DEFAULT_BAND, rw_ready));
  }
  if (which & GST_GEOREG_PROPS_NODATA)
    g_object_class_install_property (oc, PROP_NODATA,
        g_param_spec_int ("nodata", "Nodata",
            "Frame pixel value (gray value, or rounded luma of colour frames) that "
            "marks invalid pixels; -1 = none. Alpha below 128 (RGBA/BGRA) marks them "
            "too", -1, 65535, DEFAULT_NODATA, rw_playing));
  if (which & GST_GEOREG_PROPS_BINS) {
    g_object_class_install_property (oc, PROP_BINS,
        g_param_spec_enum ("bins", "Bins",
            "Value range of frame and control (each taken on its own pixel values) "
            "that is quantized before matching: cut into `levels` equal steps where "
            "the element has that property, else into 256; values outside it are "
            "clamped. min-max of the valid pixels; fixed: bin-low..bin-high; "
            "percentile: the bin-low..bin-high percentiles of the valid pixels; "
            "identity: 0..255 (0..65535 for 16-bit data); auto: identity for 8-bit "
            "data, min-max for 16-bit", GST_TYPE_GEOREG_BINS, default_bins,
            rw_ready));
    g_object_class_install_property (oc, PROP_BIN_LOW,
        g_param_spec_double ("bin-low", "Bin low",
            "Low end of the range: a pixel value for bins=fixed, a percentile "
            "(0..100) for bins=percentile", -G_MAXDOUBLE, G_MAXDOUBLE,
            DEFAULT_BIN_LOW, rw_ready));
    g_object_class_install_property (oc, PROP_BIN_HIGH,
        g_param_spec_double ("bin-high", "Bin high",
            "High end of the range: a pixel value for bins=fixed, a percentile "
            "(0..100) for bins=percentile", -G_MAXDOUBLE, G_MAXDOUBLE,
            DEFAULT_BIN_HIGH, rw_ready));
  }
  if (which & GST_GEOREG_PROPS_BACKEND) {
    g_object_class_install_property (oc, PROP_BACKEND,
        gst_georeg_param_spec_backend (GST_PARAM_MUTABLE_READY));
    g_object_class_install_property (oc, PROP_CUDA_DEVICE_ID,
        gst_georeg_param_spec_cuda_device_id (GST_PARAM_MUTABLE_READY));
  }
  if (which & GST_GEOREG_PROPS_POST_MESSAGES)
    g_object_class_install_property (oc, PROP_POST_MESSAGES,
        gst_georeg_param_spec_post_messages (GST_PARAM_MUTABLE_PLAYING));
  if (which & GST_GEOREG_PROPS_WINDOWS) {
    g_object_class_install_property (oc, PROP_CONTROL_MODE,
        gst_georeg_param_spec_control_mode (GST_PARAM_MUTABLE_READY));
    g_object_class_install_property (oc, PROP_CONTROL_CACHE_SIZE,
        gst_georeg_param_spec_control_cache_size (GST_PARAM_MUTABLE_READY));
    g_object_class_install_property (oc, PROP_CONTROL_WINDOW_MARGIN,
        gst_georeg_param_spec_control_window_margin (GST_PARAM_MUTABLE_PLAYING));
    g_object_class_install_property (oc, PROP_CONTROL_BUDGET,
        gst_georeg_param_spec_control_budget (GST_PARAM_MUTABLE_READY));
    gst_type_mark_as_plugin_api (GST_TYPE_GEOREG_CONTROL_MODE, 0);
  }
  gst_type_mark_as_plugin_api (GST_TYPE_GEOREG_BACKEND, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GEOREG_BINS, 0);
}

void
gst_georeg_base_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  GstGeoregBaseSettings *s = &PRIV (GST_GEOREG_BASE (object))->settings;

  GST_OBJECT_LOCK (object);
  switch (prop_id) {
    case PROP_CONTROL_LOCATION:
      g_free (s->control_location);
      s->control_location = g_value_dup_string (value);
      break;
    case PROP_BAND:
      s->band = g_value_get_uint (value);
      break;
    case PROP_NODATA:
      s->nodata = g_value_get_int (value);
      break;
    case PROP_BINS:
      s->bins = g_value_get_enum (value);
      break;
    case PROP_BIN_LOW:
      s->bin_low = g_value_get_double (value);
      break;
    case PROP_BIN_HIGH:
      s->bin_high = g_value_get_double (value);
      break;
    case PROP_BACKEND:
      s->backend = g_value_get_enum (value);
      break;
    case PROP_CUDA_DEVICE_ID:
      s->cuda_device_id = g_value_get_int (value);
      break;
    case PROP_POST_MESSAGES:
      s->post_messages = g_value_get_boolean (value);
      break;
    case PROP_CONTROL_MODE:
      s->control_mode = g_value_get_enum (value);
      break;
    case PROP_CONTROL_CACHE_SIZE:
      s->control_cache_size = g_value_get_uint64 (value);
      break;
    case PROP_CONTROL_WINDOW_MARGIN:
      s->control_window_margin = g_value_get_double (value);
      break;
    case PROP_CONTROL_BUDGET:
      s->control_budget = g_value_get_uint64 (value);
      break;
    case PROP_SHARE_FRAMES:
      PRIV (GST_GEOREG_BASE (object))->cuda.share = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (object);
}

void
gst_georeg_base_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstGeoregBaseSettings *s = &PRIV (GST_GEOREG_BASE (object))->settings;

  GST_OBJECT_LOCK (object);
  switch (prop_id) {
    case PROP_CONTROL_LOCATION:
      g_value_set_string (value, s->control_location);
      break;
    case PROP_BAND:
      g_value_set_uint (value, s->band);
      break;
    case PROP_NODATA:
      g_value_set_int (value, s->nodata);
      break;
    case PROP_BINS:
      g_value_set_enum (value, s->bins);
      break;
    case PROP_BIN_LOW:
      g_value_set_double (value, s->bin_low);
      break;
    case PROP_BIN_HIGH:
      g_value_set_double (value, s->bin_high);
      break;
    case PROP_BACKEND:
      g_value_set_enum (value, s->backend);
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int (value, s->cuda_device_id);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, s->post_messages);
      break;
    case PROP_CONTROL_MODE:
      g_value_set_enum (value, s->control_mode);
      break;
    case PROP_CONTROL_CACHE_SIZE:
      g_value_set_uint64 (value, s->control_cache_size);
      break;
    case PROP_CONTROL_WINDOW_MARGIN:
      g_value_set_double (value, s->control_window_margin);
      break;
    case PROP_CONTROL_BUDGET:
      g_value_set_uint64 (value, s->control_budget);
      break;
    case PROP_SHARE_FRAMES:
      g_value_set_boolean (value, PRIV (GST_GEOREG_BASE (object))->cuda.share);
      break;
    case PROP_FRAMES_CONVERTED:
      g_value_set_uint64 (value, PRIV (GST_GEOREG_BASE (object))->cuda.conversions);
      break;
    case PROP_KEYPOINTS_SHARED:
      g_value_set_uint64 (value, PRIV (GST_GEOREG_BASE (object))->cuda.kp_reused);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (object);
}

void
gst_georeg_base_get_settings_unlocked (GstGeoregBase * base,
    GstGeoregBaseSettings * out)
{
  *out = PRIV (base)->settings;
  out->control_location = g_strdup (out->control_location);
}

void
gst_georeg_base_get_settings (GstGeoregBase * base, GstGeoregBaseSettings * out)
{
  GST_OBJECT_LOCK (base);
  gst_georeg_base_get_settings_unlocked (base, out);
  GST_OBJECT_UNLOCK (base);
}

void
gst_georeg_base_settings_clear (GstGeoregBaseSettings * s)
{
  g_clear_pointer (&s->control_location, g_free);
}

const GstVideoInfo *
gst_georeg_base_info (GstGeoregBase * base)
{
  return &PRIV (base)->info;
}

/* ------------------------------------------------------------------ control image */

gboolean
gst_georeg_base_open_control (GstGeoregBase * base)
{
  GstGeoregBasePrivate *p = PRIV (base);
  GstGeoregBaseSettings s;
  char err[512] = "";
  gboolean ok = FALSE;

  gst_georeg_base_get_settings (base, &s);
  if (!s.control_location || !*s.control_location) {
    GST_ELEMENT_ERROR (base, RESOURCE, NOT_FOUND,
        ("No control image: set the control-location property."), (NULL));
    goto done;
  }
  /* a large GeoTIFF takes a while: say so on the bus (GST_MESSAGE_PROGRESS) */
  gst_element_post_message (GST_ELEMENT (base), gst_message_new_progress (GST_OBJECT
          (base), GST_PROGRESS_TYPE_START, "control", "Loading the control image"));
  GrStatus st;
  gst_georeg_control_release (p->control);
  p->control = NULL;
  p->windowed = FALSE;
  /* PNG and JPEG (no random access) are held whole, subject to the budget, in every
   * mode (kernels/control_source.h) */
  /* only elements that take windows install control-mode (featurematch needs the
   * whole control) */
  const gboolean windows = g_object_class_find_property (G_OBJECT_GET_CLASS (base),
      "control-mode") != NULL;
  if (windows && s.control_mode != GST_GEOREG_CONTROL_MODE_WHOLE &&
      gr_control_source_can_window (s.control_location)) {
    /* the header only: windows when asked for, or (auto) when the control is over the
     * budget; a control that fits is then acquired whole as before */
    p->control = gst_georeg_control_open_windowed (s.control_location, s.band,
        s.control_cache_size, &st, err, sizeof err);
    if (p->control) {
      GrControlInfo ci;
      gr_control_source_info (gst_georeg_control_source (p->control), &ci);
      p->windowed = s.control_mode == GST_GEOREG_CONTROL_MODE_WINDOWED ||
          (guint64) ci.width * (guint64) ci.height > s.control_budget;
      if (!p->windowed) {
        gst_georeg_control_release (p->control);
        p->control = NULL;
      } else {
        GST_INFO_OBJECT (base, "control %s (%d x %d, %d levels, %s) read in windows "
            "around each frame's prior", s.control_location, ci.width, ci.height,
            ci.levels, ci.driver);
      }
    }
  }
  if (!p->control && !p->windowed)
    p->control = gst_georeg_control_acquire (s.control_location, s.band, &st, err,
        sizeof err);
  if (!p->control) {
    if (st == GR_ERR_IO)
      GST_ELEMENT_ERROR (base, RESOURCE, OPEN_READ,
          ("Could not read the control image \"%s\".", s.control_location), ("%s", err));
    else
      GST_ELEMENT_ERROR (base, RESOURCE, READ,
          ("Unusable control image \"%s\".", s.control_location), ("%s", err));
    goto done;
  }
  ok = TRUE;
done:
  gst_georeg_base_settings_clear (&s);
  return ok;
}

void
gst_georeg_base_control_done (GstGeoregBase * base, gboolean ok)
{
  gst_element_post_message (GST_ELEMENT (base), gst_message_new_progress (GST_OBJECT
          (base), ok ? GST_PROGRESS_TYPE_COMPLETE : GST_PROGRESS_TYPE_ERROR, "control",
          ok ? "Control image ready" : "Control image unusable"));
}

const GstGeoregControl *
gst_georeg_base_control (GstGeoregBase * base)
{
  return PRIV (base)->control;
}

GstGeoregControl *
gst_georeg_base_control_windowed (GstGeoregBase * base)
{
  GstGeoregBasePrivate *p = PRIV (base);
  return p->windowed ? p->control : NULL;
}

void
gst_georeg_base_release_control (GstGeoregBase * base)
{
  GstGeoregBasePrivate *p = PRIV (base);
  gst_georeg_control_release (p->control);
  p->control = NULL;
  p->windowed = FALSE;
}

/* ------------------------------------------------------------------ CUDA, frames */

GstGeoregCuda *
gst_georeg_base_cuda (GstGeoregBase * base)
{
  return &PRIV (base)->cuda;
}

gint
gst_georeg_base_engine_device (GstGeoregBase * base, gint cuda_device_id)
{
  return gst_georeg_cuda_engine_device (&PRIV (base)->cuda, cuda_device_id);
}

GstGeoregInput
gst_georeg_base_input (GstGeoregBase * base)
{
  return PRIV (base)->input;
}

void
gst_georeg_base_set_input (GstGeoregBase * base, GstGeoregInput input)
{
  PRIV (base)->input = input;
}

gboolean
gst_georeg_base_frame_to_plane (GstGeoregBase * base, GstBuffer * buf, gint nodata,
    gdouble scale, gboolean on_host, GrPlaneF * plane, gchar * err, gsize errlen)
{
  GstGeoregBasePrivate *p = PRIV (base);
  return gst_georeg_cuda_frame_to_plane (&p->cuda, GST_ELEMENT (base), buf, &p->info,
      nodata, scale, on_host, plane, &p->input, err, errlen);
}

gboolean
gst_georeg_base_frame_to_device (GstGeoregBase * base, GstBuffer * buf, gint nodata,
    gint device, gdouble scale, gboolean on_host, GrPlaneF * plane, gboolean * done,
    gchar * err, gsize errlen)
{
  GstGeoregBasePrivate *p = PRIV (base);
  return gst_georeg_cuda_frame_to_device (&p->cuda, GST_ELEMENT (base), buf, &p->info,
      nodata, device, scale, on_host, plane, &p->input, done, err, errlen);
}

gboolean
gst_georeg_base_read_plane (GstGeoregBase * base, GstBuffer * buf, gint nodata,
    GrPlaneF * plane)
{
  GstGeoregBasePrivate *p = PRIV (base);
  return gst_georeg_read_frame_plane (&p->cuda, GST_ELEMENT (base), buf, &p->info,
      nodata, plane, &p->input);
}

const gfloat *
gst_georeg_base_keypoint_responses (GstGeoregBase * base, GstBuffer * buf, gint nodata,
    gint block_radius, GstGeoregFrame ** hold)
{
  GstGeoregBasePrivate *p = PRIV (base);
  return gst_georeg_shared_keypoint_responses (&p->cuda, buf, &p->info, nodata,
      block_radius, hold);
}

void
gst_georeg_base_frame_changed (GstGeoregBase * base, GstBuffer * buf)
{
  GstGeoregFrameMeta *m = gst_buffer_get_georeg_frame_meta (buf);
  if (m)
    gst_buffer_remove_meta (buf, (GstMeta *) m);
}

guint64
gst_georeg_base_conversion_count (void)
{
  return gst_georeg_cuda_conversion_count ();
}

void
gst_georeg_base_post_result (GstGeoregBase * base, GstStructure * st)
{
  gst_element_post_message (GST_ELEMENT (base),
      gst_message_new_element (GST_OBJECT (base), st));
}

/* ------------------------------------------------------------------ vfuncs */

static GstStateChangeReturn
gst_georeg_base_change_state (GstElement * element, GstStateChange transition)
{
  GstGeoregBase *base = GST_GEOREG_BASE (element);
  GstGeoregBasePrivate *p = PRIV (base);
  if (transition == GST_STATE_CHANGE_NULL_TO_READY) {
    GrBackend backend;
    gint dev;
    GST_OBJECT_LOCK (base);
    backend = p->settings.backend;
    dev = p->settings.cuda_device_id;
    GST_OBJECT_UNLOCK (base);
    /* before the neighbours open theirs, so that decoders adopt ours */
    gst_georeg_cuda_open (&p->cuda, element, backend, dev);
  }
  GstStateChangeReturn ret =
      GST_ELEMENT_CLASS (gst_georeg_base_parent_class)->change_state (element,
      transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    gst_caps_replace (&p->refused_caps, NULL);
  if (transition == GST_STATE_CHANGE_READY_TO_NULL)
    gst_georeg_cuda_close (&p->cuda);
  return ret;
}

static void
gst_georeg_base_set_context (GstElement * element, GstContext * context)
{
  GstGeoregBase *base = GST_GEOREG_BASE (element);
  GstGeoregBasePrivate *p = PRIV (base);
  gint dev;
  GST_OBJECT_LOCK (base);
  dev = p->settings.cuda_device_id;
  GST_OBJECT_UNLOCK (base);
  gst_georeg_cuda_set_context (&p->cuda, element, context, dev);
  GST_ELEMENT_CLASS (gst_georeg_base_parent_class)->set_context (element, context);
}

static gboolean
gst_georeg_base_query (GstBaseTransform * trans, GstPadDirection direction,
    GstQuery * query)
{
  GstGeoregBase *base = GST_GEOREG_BASE (trans);
  if (gst_georeg_cuda_query (&PRIV (base)->cuda, GST_ELEMENT (trans), query))
    return TRUE;
  return GST_BASE_TRANSFORM_CLASS (gst_georeg_base_parent_class)->query (trans,
      direction, query);
}

static gboolean
gst_georeg_base_propose_allocation (GstBaseTransform * trans, GstQuery * decide_query,
    GstQuery * query)
{
  GstGeoregBase *base = GST_GEOREG_BASE (trans);
  if (gst_georeg_cuda_propose_allocation (&PRIV (base)->cuda, GST_ELEMENT (trans),
          query))
    return TRUE;
  return GST_BASE_TRANSFORM_CLASS (gst_georeg_base_parent_class)->propose_allocation
      (trans, decide_query, query);
}

static gboolean
gst_georeg_base_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  GstGeoregBase *base = GST_GEOREG_BASE (trans);
  GstGeoregBasePrivate *p = PRIV (base);
  GstGeoregBaseClass *klass = GST_GEOREG_BASE_GET_CLASS (base);
  GstVideoInfo info;

  /* GstBaseTransform retries refused caps at every buffer: one ERROR per fault
   * (gst_georeg_caps_refused_before), for every subclass's set_info too */
  if (gst_georeg_caps_refused_before (p->refused_caps, incaps))
    return FALSE;
  if (!gst_video_info_from_caps (&info, incaps)) {
    GST_ELEMENT_ERROR (base, STREAM, FORMAT, ("Unsupported caps."),
        ("%" GST_PTR_FORMAT, incaps));
    gst_georeg_caps_refused (GST_ELEMENT (base), &p->refused_caps, incaps);
    return FALSE;
  }
  if (klass->set_info && !klass->set_info (base, incaps, &info)) {
    gst_georeg_caps_refused (GST_ELEMENT (base), &p->refused_caps, incaps);
    return FALSE;
  }
  gst_caps_replace (&p->refused_caps, NULL);
  p->info = info;
  gst_georeg_cuda_set_caps (&p->cuda, incaps);
  return TRUE;
}

static void
gst_georeg_base_constructed (GObject * object)
{
  GstGeoregBase *base = GST_GEOREG_BASE (object);
  /* the element's default `bins` lives in its one param spec */
  GParamSpec *bins = g_object_class_find_property (G_OBJECT_GET_CLASS (object), "bins");
  if (bins)
    PRIV (base)->settings.bins = G_PARAM_SPEC_ENUM (bins)->default_value;
  G_OBJECT_CLASS (gst_georeg_base_parent_class)->constructed (object);
}

static void
gst_georeg_base_finalize (GObject * object)
{
  GstGeoregBase *base = GST_GEOREG_BASE (object);
  GstGeoregBasePrivate *p = PRIV (base);
  gst_georeg_control_release (p->control);
  p->control = NULL;
  gst_georeg_cuda_close (&p->cuda);
  gst_caps_replace (&p->refused_caps, NULL);
  g_free (p->settings.control_location);
  G_OBJECT_CLASS (gst_georeg_base_parent_class)->finalize (object);
}

static void
gst_georeg_base_class_init (GstGeoregBaseClass * klass)
{
  GObjectClass *oc = G_OBJECT_CLASS (klass);
  GstElementClass *ec = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *tc = GST_BASE_TRANSFORM_CLASS (klass);

  oc->constructed = gst_georeg_base_constructed;
  oc->finalize = gst_georeg_base_finalize;
  /* for the two properties below, which the base installs on every element (GObject
   * dispatches a property to the class that installed it) */
  oc->set_property = gst_georeg_base_set_property;
  oc->get_property = gst_georeg_base_get_property;
  g_object_class_install_property (oc, PROP_SHARE_FRAMES,
      g_param_spec_boolean ("share-frames", "Share frames",
          "Share this element's conversion of each frame (its float plane, on the "
          "host or the CUDA device) with the georeg elements downstream, and reuse "
          "one made upstream when the settings match (frame format, nodata), so that "
          "a frame is converted and uploaded once per pipeline; the results are the "
          "same either way", DEFAULT_SHARE_FRAMES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (oc, PROP_FRAMES_CONVERTED,
      g_param_spec_uint64 ("frames-converted", "Frames converted",
          "Frames this element converted itself (read from their pixels, uploads "
          "included), not counting those it reused from an element upstream "
          "(share-frames)", 0, G_MAXUINT64, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (oc, PROP_KEYPOINTS_SHARED,
      g_param_spec_uint64 ("keypoints-shared", "Keypoint responses shared",
          "Frames whose keypoint responses (the corner measure every detection "
          "starts from) this element took as an element upstream made them on the "
          "shared frame (share-frames; the CPU path), instead of computing them; the "
          "keypoints are the same either way", 0, G_MAXUINT64, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  ec->change_state = GST_DEBUG_FUNCPTR (gst_georeg_base_change_state);
  ec->set_context = GST_DEBUG_FUNCPTR (gst_georeg_base_set_context);
  tc->query = GST_DEBUG_FUNCPTR (gst_georeg_base_query);
  tc->propose_allocation = GST_DEBUG_FUNCPTR (gst_georeg_base_propose_allocation);
  tc->set_caps = GST_DEBUG_FUNCPTR (gst_georeg_base_set_caps);
  tc->passthrough_on_same_caps = FALSE;
  tc->transform_ip_on_passthrough = FALSE;
  gst_type_mark_as_plugin_api (GST_TYPE_GEOREG_BASE, 0);
}

static void
gst_georeg_base_init (GstGeoregBase * base)
{
  GstGeoregBasePrivate *p = PRIV (base);
  p->settings.band = DEFAULT_BAND;
  p->settings.control_mode = GST_GEOREG_DEFAULT_CONTROL_MODE;
  p->settings.control_cache_size = GST_GEOREG_DEFAULT_CONTROL_CACHE_SIZE;
  p->settings.control_window_margin = GST_GEOREG_DEFAULT_CONTROL_WINDOW_MARGIN;
  p->settings.control_budget = GST_GEOREG_DEFAULT_CONTROL_BUDGET;
  p->settings.nodata = DEFAULT_NODATA;
  p->settings.bins = GST_GEOREG_BINS_AUTO;
  p->settings.bin_low = DEFAULT_BIN_LOW;
  p->settings.bin_high = DEFAULT_BIN_HIGH;
  p->settings.backend = DEFAULT_BACKEND;
  p->settings.cuda_device_id = DEFAULT_CUDA_DEVICE_ID;
  p->settings.post_messages = DEFAULT_POST_MESSAGES;
  gst_georeg_cuda_init (&p->cuda);
  p->cuda.share = DEFAULT_SHARE_FRAMES;
  gst_video_info_init (&p->info);
  gst_base_transform_set_in_place (GST_BASE_TRANSFORM (base), TRUE);
}
