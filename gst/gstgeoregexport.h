/* georegexport: writes the registration results that travel on the frames (metas of
 * nmiregister and nmilocalize) as files a GIS opens: GeoJSON footprints, CSV, and one
 * georeferenced GeoTIFF per registered frame.  Passthrough.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_EXPORT_H__
#define __GST_GEOREG_EXPORT_H__

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

#define GST_TYPE_GEOREG_EXPORT (gst_georeg_export_get_type ())
G_DECLARE_FINAL_TYPE (GstGeoregExport, gst_georeg_export, GST, GEOREG_EXPORT,
    GstBaseTransform)

typedef enum {
  GST_GEOREG_EXPORT_GEOJSON_COLLECTION = 0,
  GST_GEOREG_EXPORT_GEOJSON_SEQUENCE = 1,
} GstGeoregExportGeoJsonForm;

typedef enum {
  GST_GEOREG_EXPORT_GEOTIFF_COG = 0,
  GST_GEOREG_EXPORT_GEOTIFF_GTIFF = 1,
} GstGeoregExportGeoTiffFormat;

GST_ELEMENT_REGISTER_DECLARE (georegexport);

G_END_DECLS

#endif
