/* GstGeoregBase: the abstract base of the frame elements (nmilocalize, nmiregister,
 * featurematch), modelled on gst-plugins-bad's GstCudaBaseTransform.
 *
 * It owns what the three share, so that each element is a thin adapter over its
 * kernels/ engine:
 *   - the shared properties, spec'd once here and installed by each element through
 *     gst_georeg_base_class_install_properties (an element installs only those it
 *     uses): control-location, band, nodata, bins, bin-low, bin-high, backend,
 *     cuda-device-id, post-messages;
 *   - the CUDA context (set_context, context queries, the context made at
 *     NULL -> READY), CUDA buffer pools in allocation queries, and the frame-to-plane
 *     and frame-to-device conversions (gstgeoregcuda.h), which synchronize with the
 *     stream that wrote the upstream CUDA memory before reading it;
 *   - the negotiated GstVideoInfo and where the last frame was read from;
 *   - the control image handle (gstgeoregcontrol.h), with its progress messages and
 *     errors;
 *   - posting the per-frame element message;
 *   - one pass per frame: the frame conversions share their planes with the georeg
 *     elements downstream through a buffer meta (georeg-frame-meta.h; properties
 *     share-frames and frames-converted, installed on every element).
 *
 * A subclass sets GstGeoregBaseClass::set_info instead of GstBaseTransform::set_caps,
 * calls gst_georeg_base_set_property / _get_property from the default case of its
 * own set_property / get_property, and reads the shared settings per frame with
 * gst_georeg_base_get_settings.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_BASE_H__
#define __GST_GEOREG_BASE_H__

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include <gst/video/video.h>

#include "gstgeoregcontrol.h"
#include "gstgeoregcuda.h"
#include "gstgeoregutils.h"

G_BEGIN_DECLS

#define GST_TYPE_GEOREG_BASE (gst_georeg_base_get_type ())
G_DECLARE_DERIVABLE_TYPE (GstGeoregBase, gst_georeg_base, GST, GEOREG_BASE,
    GstBaseTransform)

struct _GstGeoregBaseClass {
  GstBaseTransformClass parent_class;

  /* Called from set_caps once the input caps were parsed into `info` (also kept by
   * the base, gst_georeg_base_info).  FALSE after posting an error refuses them. */
  gboolean (*set_info) (GstGeoregBase * base, GstCaps * incaps,
      const GstVideoInfo * info);

  gpointer _gst_reserved[GST_PADDING];
};

/* The shared properties an element can install (or-ed). */
typedef enum {
  GST_GEOREG_PROPS_CONTROL = 1 << 0,    /* control-location, band */
  GST_GEOREG_PROPS_NODATA = 1 << 1,     /* nodata */
  GST_GEOREG_PROPS_BINS = 1 << 2,       /* bins, bin-low, bin-high */
  GST_GEOREG_PROPS_BACKEND = 1 << 3,    /* backend, cuda-device-id */
  GST_GEOREG_PROPS_POST_MESSAGES = 1 << 4,      /* post-messages */
  GST_GEOREG_PROPS_WINDOWS = 1 << 5,    /* control-mode, control-cache-size,
                                         * control-window-margin, control-budget */
} GstGeoregProps;

/* The shared settings (a snapshot taken under the object lock). */
typedef struct {
  gchar *control_location;      /* owned by the snapshot (gst_georeg_base_settings_clear) */
  guint band;
  gint nodata;
  GstGeoregBins bins;
  gdouble bin_low, bin_high;
  GrBackend backend;
  gint cuda_device_id;
  gboolean post_messages;
  gint control_mode;            /* GstGeoregControlMode (gstgeoregprops.h) */
  guint64 control_cache_size;
  gdouble control_window_margin;
  guint64 control_budget;       /* pixels */
} GstGeoregBaseSettings;

/* Installs the `which` properties on an element class (call from its class_init).
 * default_bins: the element's default for `bins`.  The property ids are the base's
 * own (above any the element uses, >= GST_GEOREG_BASE_PROP_FIRST). */
#define GST_GEOREG_BASE_PROP_FIRST 0x1000
void gst_georeg_base_class_install_properties (GstGeoregBaseClass * klass,
    GstGeoregProps which, GstGeoregBins default_bins);

/* For the default case of the element's set_property / get_property: handles the
 * base's properties, warns about any other id. */
void gst_georeg_base_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
void gst_georeg_base_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec);

/* A copy of the shared settings; _unlocked: the caller holds the object lock. */
void gst_georeg_base_get_settings (GstGeoregBase * base, GstGeoregBaseSettings * out);
void gst_georeg_base_get_settings_unlocked (GstGeoregBase * base,
    GstGeoregBaseSettings * out);
void gst_georeg_base_settings_clear (GstGeoregBaseSettings * s);

/* The negotiated input (valid after set_caps). */
const GstVideoInfo *gst_georeg_base_info (GstGeoregBase * base);

/* ---- the control image */

/* Acquires the control named by control-location and band (shared with every element
 * naming the same file, gstgeoregcontrol.h), after posting the "control" progress
 * START message.  FALSE after posting a RESOURCE error naming the path.  Pair with
 * gst_georeg_base_control_done. */
gboolean gst_georeg_base_open_control (GstGeoregBase * base);
/* Posts the "control" progress COMPLETE (ok) or ERROR message. */
void gst_georeg_base_control_done (GstGeoregBase * base, gboolean ok);
const GstGeoregControl *gst_georeg_base_control (GstGeoregBase * base);
/* The control opened for windows (control-mode, GST_GEOREG_PROPS_WINDOWS), or NULL
 * when it is held whole (gst_georeg_control_raster then gives it). */
GstGeoregControl *gst_georeg_base_control_windowed (GstGeoregBase * base);
/* Drops the element's reference to the control (stop, or a failed start). */
void gst_georeg_base_release_control (GstGeoregBase * base);

/* ---- CUDA and frames */

/* The element's CUDA wiring (context, converter): for gstgeoregcuda.h calls. */
GstGeoregCuda *gst_georeg_base_cuda (GstGeoregBase * base);
/* The device the element's engines should use (gst_georeg_cuda_engine_device). */
gint gst_georeg_base_engine_device (GstGeoregBase * base, gint cuda_device_id);
/* Where the last frame was read from, and setting it (the conversions below set it). */
GstGeoregInput gst_georeg_base_input (GstGeoregBase * base);
void gst_georeg_base_set_input (GstGeoregBase * base, GstGeoregInput input);

/* gst_georeg_cuda_frame_to_plane / _frame_to_device on the element's wiring and
 * negotiated info; they record where the frame was read from. */
gboolean gst_georeg_base_frame_to_plane (GstGeoregBase * base, GstBuffer * buf,
    gint nodata, gdouble scale, gboolean on_host, GrPlaneF * plane, gchar * err,
    gsize errlen);
gboolean gst_georeg_base_frame_to_device (GstGeoregBase * base, GstBuffer * buf,
    gint nodata, gint device, gdouble scale, gboolean on_host, GrPlaneF * plane,
    gboolean * done, gchar * err, gsize errlen);
/* The frame as a host float plane (gst_georeg_read_frame_plane): FALSE after posting
 * an error. */
gboolean gst_georeg_base_read_plane (GstGeoregBase * base, GstBuffer * buf,
    gint nodata, GrPlaneF * plane);
/* The keypoint responses of the plane gst_georeg_base_read_plane gave for `buf`,
 * computed once per frame for every georeg element on it
 * (gst_georeg_shared_keypoint_responses): NULL when not shared; else release *hold
 * (gst_georeg_frame_unref) after the detection. */
const gfloat *gst_georeg_base_keypoint_responses (GstGeoregBase * base, GstBuffer * buf,
    gint nodata, gint block_radius, struct _GstGeoregFrame ** hold);

/* ---- shared frames (georeg-frame-meta.h; property share-frames) */

/* An element that drew on the frame in place (its pixels changed) calls this: the
 * planes converted upstream no longer describe it, the elements downstream convert
 * it again. */
void gst_georeg_base_frame_changed (GstGeoregBase * base, GstBuffer * buf);
/* Frames converted by every georeg element of the process so far (reused shared
 * frames are not counted; each element's own count is its frames-converted). */
guint64 gst_georeg_base_conversion_count (void);

/* ---- messages */

/* Posts the element message `st` (taken) on the bus. */
void gst_georeg_base_post_result (GstGeoregBase * base, GstStructure * st);

G_END_DECLS

#endif
