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

G_END_DECLS

#endif
