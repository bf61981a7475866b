/* The control's coordinate reference system (CRS) and transforms between its map
 * coordinates and WGS84 longitude/latitude, through GDAL's OSR (PROJ underneath).
 *
 * A GrGeoRef is a control's georeference: its geotransform (GDAL order, pixel
 * CORNERS: pixel (0,0)'s top-left corner is (geo[0], geo[3])) and its CRS.  The CRS
 * comes, in this order, from an explicit string (a property: "EPSG:32617", WKT,
 * PROJ string, anything OSRSetFromUserInput takes), from the file itself
 * (GDALGetSpatialRef), or from a .prj beside it.  A world file's numbers give the
 * CENTRE of the top-left pixel; they are converted to corners here.
 * Built only with GDAL (GR_HAVE_GDAL).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_GEO_H
#define GR_GEO_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct GrGeoRef GrGeoRef;

/* Opens the georeference of the image at `path` (reads only its header) and, when
 * `crs` is non-NULL and non-empty, takes that CRS instead of the file's.
 * GR_ERR_IO: the file cannot be opened; GR_ERR_FORMAT: it has no geotransform (no
 * world file either), or no CRS anywhere, or a CRS that PROJ cannot use; the reason,
 * naming the path, in errbuf. */
GrStatus gr_georef_open (const char *path, const char *crs, GrGeoRef **out,
    char *errbuf, size_t errlen);

/* A georeference from a geotransform (pixel corners) and a CRS string.
 * GR_ERR_INVALID for a degenerate geotransform, GR_ERR_FORMAT for an unusable CRS. */
GrStatus gr_georef_new (const double geo[6], const char *crs, GrGeoRef **out,
    char *errbuf, size_t errlen);

void gr_georef_free (GrGeoRef *g);

/* The geotransform, GDAL order, pixel corners. */
void gr_georef_geotransform (const GrGeoRef *g, double geo[6]);

/* EPSG code of the CRS (OSRAutoIdentifyEPSG or its authority code), 0 if none. */
int gr_georef_epsg (const GrGeoRef *g);

/* "EPSG:<code>" when there is a code, the WKT2 text otherwise.  Owned by g. */
const char *gr_georef_crs_name (const GrGeoRef *g);

/* WKT (WKT1 as GeoTIFF writers expect it is not needed: GDAL takes WKT2).  Owned by g. */
const char *gr_georef_wkt (const GrGeoRef *g);

/* True when the map units are metres (projected CRS in metres). */
bool gr_georef_is_projected (const GrGeoRef *g);

/* Control pixel-corner coordinates -> map coordinates. */
void gr_georef_pixel_to_map (const GrGeoRef *g, double px, double py, double *mx, double *my);

/* Map coordinates -> control pixel corners; false for a non-invertible geotransform. */
bool gr_georef_map_to_pixel (const GrGeoRef *g, double mx, double my, double *px, double *py);

/* Map coordinates <-> WGS84 longitude, latitude in degrees (longitude first).
 * n points in place; false when PROJ fails on any point (those become NAN). */
bool gr_georef_map_to_lonlat (const GrGeoRef *g, double *x, double *y, int n);
bool gr_georef_lonlat_to_map (const GrGeoRef *g, double *x, double *y, int n);

/* Heading (degrees clockwise from true north, [0, 360)) of the direction from
 * (lon0, lat0) to (lon1, lat1), and the distance in metres between them, on the
 * WGS84 ellipsoid (short distances: a local tangent plane). */
double gr_geo_bearing_deg (double lon0, double lat0, double lon1, double lat1);
double gr_geo_distance_m (double lon0, double lat0, double lon1, double lat1);

/* Area in square metres of a polygon given in longitude/latitude (n vertices, not
 * repeated), on a local tangent plane at its first vertex (footprint-sized shapes). */
double gr_geo_area_m2 (const double *lon, const double *lat, int n);

#ifdef __cplusplus
}
#endif
#endif
