/* georeg: the param specs of the properties several elements share (post-messages,
 * backend, cuda-device-id, control-location), one function each, so that their names,
 * ranges and help texts are written once and cannot drift (issue 12).  The `crs`
 * property has its own (gstgeoregcrs.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_PROPS_H__
#define __GST_GEOREG_PROPS_H__

#include <gst/gst.h>

#include "gr_common.h"

G_BEGIN_DECLS

/* The defaults, for the elements' instance init (the param specs carry them too). */
#define GST_GEOREG_DEFAULT_POST_MESSAGES TRUE
#define GST_GEOREG_DEFAULT_BACKEND GR_BACKEND_AUTO
#define GST_GEOREG_DEFAULT_CUDA_DEVICE_ID -1

/* Each returns a new param spec; `flags` are added to readwrite and static strings
 * (the elements pass GST_PARAM_MUTABLE_READY or _PLAYING). */

/* "post-messages", boolean, default TRUE: one element message per buffer the element
 * handles (its name and fields are in the element's documentation). */
GParamSpec *gst_georeg_param_spec_post_messages (GParamFlags flags);

/* "backend", GstGeoregBackend (gstgeoregutils.h), default auto. */
GParamSpec *gst_georeg_param_spec_backend (GParamFlags flags);

/* "cuda-device-id", int -1..G_MAXINT, default -1 (the device of a shared CUDA
 * context, else device 0). */
GParamSpec *gst_georeg_param_spec_cuda_device_id (GParamFlags flags);

/* "control-location", string, default NULL: the georeferenced control image. */
GParamSpec *gst_georeg_param_spec_control_location (GParamFlags flags);

/* ---- controls read in windows (issue 18, docs/controls.md "Windows") */

/* How the control is held: auto = whole when it fits control-budget, in windows
 * around each frame's prior when it does not; whole = always whole (as before issue
 * 18: a control over the decoding budget is refused); windowed = always in windows (every
 * frame needs a prior). */
typedef enum {
  GST_GEOREG_CONTROL_MODE_AUTO = 0,
  GST_GEOREG_CONTROL_MODE_WHOLE = 1,
  GST_GEOREG_CONTROL_MODE_WINDOWED = 2,
} GstGeoregControlMode;

#define GST_TYPE_GEOREG_CONTROL_MODE (gst_georeg_control_mode_get_type ())
GType gst_georeg_control_mode_get_type (void);

#define GST_GEOREG_DEFAULT_CONTROL_MODE GST_GEOREG_CONTROL_MODE_AUTO
#define GST_GEOREG_DEFAULT_CONTROL_CACHE_SIZE (512ull << 20)
#define GST_GEOREG_DEFAULT_CONTROL_WINDOW_MARGIN 256.0
#define GST_GEOREG_DEFAULT_CONTROL_BUDGET (16384ull * 16384ull)

/* "control-mode", GstGeoregControlMode, default auto. */
GParamSpec *gst_georeg_param_spec_control_mode (GParamFlags flags);
/* "control-cache-size", guint64 bytes, default 512 MiB: the bound of the shared cache
 * of decoded control blocks (the largest any element asks for wins). */
GParamSpec *gst_georeg_param_spec_control_cache_size (GParamFlags flags);
/* "control-window-margin", double, default 256: full-control pixels added around the
 * area a frame needs when a window is cut. */
GParamSpec *gst_georeg_param_spec_control_window_margin (GParamFlags flags);
/* "control-budget", guint64 pixels, default 16384 x 16384: control-mode=auto holds a
 * control of at most this many pixels whole, reads a larger one in windows. */
GParamSpec *gst_georeg_param_spec_control_budget (GParamFlags flags);

G_END_DECLS

#endif
