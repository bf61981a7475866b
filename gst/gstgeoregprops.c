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

GType
gst_georeg_control_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GEOREG_CONTROL_MODE_AUTO, "Whole when the control fits control-budget, else "
          "windows around each frame's prior", "auto"},
    {GST_GEOREG_CONTROL_MODE_WHOLE, "Always whole (a control over the decoding budget "
          "is refused)", "whole"},
    {GST_GEOREG_CONTROL_MODE_WINDOWED, "Always windows around each frame's prior "
          "(every frame needs a pose meta or a search region)", "windowed"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGeoregControlMode", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GParamSpec *
gst_georeg_param_spec_control_mode (GParamFlags flags)
{
  return g_param_spec_enum ("control-mode", "Control mode",
      "How the control is held: auto = whole when it fits control-budget, else read "
      "in windows around each frame's prior (pose meta or search region) through a "
      "block cache; whole = always whole; windowed = always in windows "
      "(docs/controls.md)", GST_TYPE_GEOREG_CONTROL_MODE,
      GST_GEOREG_DEFAULT_CONTROL_MODE, flags | SHARED_FLAGS);
}

GParamSpec *
gst_georeg_param_spec_control_cache_size (GParamFlags flags)
{
  return g_param_spec_uint64 ("control-cache-size", "Control cache size",
      "Windowed controls: bytes of decoded control blocks kept in the cache shared by "
      "the elements naming the same control (the largest asked wins)", 1 << 20,
      G_MAXUINT64, GST_GEOREG_DEFAULT_CONTROL_CACHE_SIZE, flags | SHARED_FLAGS);
}

GParamSpec *
gst_georeg_param_spec_control_window_margin (GParamFlags flags)
{
  return g_param_spec_double ("control-window-margin", "Control window margin",
      "Windowed controls: full-control pixels added on every side of the area a frame "
      "needs when a window is cut; larger = fewer re-cuts (and GPU uploads), more "
      "memory", 0.0, 65536.0, GST_GEOREG_DEFAULT_CONTROL_WINDOW_MARGIN,
      flags | SHARED_FLAGS);
}

GParamSpec *
gst_georeg_param_spec_control_budget (GParamFlags flags)
{
  return g_param_spec_uint64 ("control-budget", "Control budget",
      "control-mode=auto: pixels of the largest control held whole (a larger one is "
      "read in windows); a control held whole is also bounded by the decoding budget "
      "(268 M pixels, 4 GiB: docs/controls.md)",
      1, G_MAXUINT64, GST_GEOREG_DEFAULT_CONTROL_BUDGET, flags | SHARED_FLAGS);
}
