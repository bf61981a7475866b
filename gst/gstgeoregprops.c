/* georeg: the shared properties' param specs (gst/gstgeoregprops.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "gstgeoregprops.h"
#include "gstgeoregutils.h"

#define SHARED_FLAGS (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS)

GParamSpec *
gst_georeg_param_spec_post_messages (GParamFlags flags)
{
  return g_param_spec_boolean ("post-messages", "Post messages",
      "Post an element message for each frame (landmarkshoot: each target) the "
      "element handles; its name, its fields and when it is posted are listed in the "
      "element's documentation", GST_GEOREG_DEFAULT_POST_MESSAGES, flags | SHARED_FLAGS);
}

GParamSpec *
gst_georeg_param_spec_backend (GParamFlags flags)
{
  return g_param_spec_enum ("backend", "Backend",
      "Where the element's computation runs (what runs where is in the element's "
      "documentation)", GST_TYPE_GEOREG_BACKEND, GST_GEOREG_DEFAULT_BACKEND, flags | SHARED_FLAGS);
}

GParamSpec *
gst_georeg_param_spec_cuda_device_id (GParamFlags flags)
{
  return g_param_spec_int ("cuda-device-id", "CUDA device id",
      "CUDA device (index) to use; -1 = the device of a shared CUDA context, else "
      "that of the pipeline's other georeg elements, else the device with the fewest "
      "georeg pipelines of this process (ties: the most free memory)", -1, G_MAXINT, GST_GEOREG_DEFAULT_CUDA_DEVICE_ID, flags | SHARED_FLAGS);
}

GParamSpec *
gst_georeg_param_spec_control_location (GParamFlags flags)
{
  return g_param_spec_string ("control-location", "Control location",
      "The georeferenced control image file (GeoTIFF/TIFF/PNG/JPEG through GDAL when "
      "built with it; else PNG/JPEG with a world file): its geotransform and CRS place "
      "the results on the map, its nodata or alpha is its mask. Elements naming the "
      "same file and band share one copy in memory", NULL, flags | SHARED_FLAGS);
}
