/* georeg: the `crs` property (gst/gstgeoregcrs.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "gstgeoregcrs.h"

GParamSpec *
gst_georeg_param_spec_crs (GParamFlags flags)
{
  return g_param_spec_string ("crs", "Control CRS",
      "The coordinate reference system of the control's map coordinates when its file "
      "has none (no GeoTIFF CRS, no .prj beside it); overrides the file's when set: "
      "EPSG:32617, WKT or a PROJ string (what GDAL's OSRSetFromUserInput takes). "
      "Longitude/latitude results need a CRS", NULL,
      flags | G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
}
