/* georegexport's instance, shared by its two source files: gstgeoregexport.c (the
 * element: properties, start/stop, per-frame footprints and messages) and
 * gstgeoregexport-raster.c (the raster outputs: per-frame GeoTIFFs, the mosaic, the
 * footprint picture).  Private to the plugin.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_EXPORT_PRIVATE_H__
#define __GST_GEOREG_EXPORT_PRIVATE_H__

#include "gstgeoregexport.h"
#include "gstgeoregfootprint.h"
#include "footprint_plot.h"
#include "geo.h"
#include "geojson.h"
#include "geotiff.h"
#include "raster.h"

G_BEGIN_DECLS

#define DEFAULT_MAX_GEOTIFF_PIXELS (64u * 1024u * 1024u)

struct _GstGeoregExport {
  GstBaseTransform parent;

  /* properties (object lock; read at start) */
  GstGeoregMapProps map;        /* control-location, crs */
  gchar *geojson_location, *csv_location, *geotiff_dir;
  gchar *source_location, *picture_location, *mosaic_location;
  guint mosaic_every_prop;
  gboolean post_messages;
  GstGeoregExportGeoJsonForm geojson_form;
  GstGeoregExportGeoTiffFormat geotiff_format;
  guint64 max_geotiff_pixels;

  /* streaming state */
  GrGeoRef *georef;
  GrFootprintWriter *writer;
  gchar *tiff_dir;              /* copy taken at start, NULL = no GeoTIFFs */
  gchar *source_pattern;
  gboolean cog;
  gsize max_pixels;
  GstVideoInfo vinfo;
  gboolean have_vinfo;
  guint64 frame;
  guint geotiffs;
  /* the picture: its path (copy taken at start), the control's luminance, and every
   * footprint so far in control pixels */
  gchar *picture;
  GrRaster picture_control;
  GArray *plotted;              /* GrPlotFootprint */
  gboolean picture_stale;       /* footprints added since the last write */
  /* the mosaic (NULL = none) */
  GrMosaic *mosaic;
  gchar *mosaic_path;
  guint mosaic_every, mosaic_added;
  gboolean mosaic_stale;
};


/* The frame as a GeoTIFF in tiff_dir (named after source, else the frame number) and
 * into the mosaic, when it has a transform.  FALSE on a write error (element error
 * posted); a transform that places the frame nowhere is a warning. */
gboolean gst_georeg_export_write_frame (GstGeoregExport * self, GstBuffer * buf,
    const gchar * source);

/* Writes the mosaic now; FALSE on a write error (element error posted). */
gboolean gst_georeg_export_write_mosaic (GstGeoregExport * self);

/* Keeps the frame's footprint (control pixels) for the picture. */
void gst_georeg_export_remember_footprint (GstGeoregExport * self, GstBuffer * buf,
    const GrFootprint * f);

/* Writes the picture when footprints were added since the last write. */
gboolean gst_georeg_export_write_picture (GstGeoregExport * self);

G_END_DECLS

#endif
