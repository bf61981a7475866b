/* Frame footprints as files a GIS opens: GeoJSON (RFC 7946: WGS84 longitude/latitude,
 * one Feature per frame) and CSV.  Plain C, no GStreamer.
 *
 * The GeoJSON file is valid after every frame: in FeatureCollection form the writer
 * appends each Feature in place of the collection's closing brackets and writes them
 * again after it (so a crash loses at most the frame being written); in sequence form
 * (RFC 8142, "application/geo+json-seq") each Feature is one record: 0x1E, the JSON
 * text, a line feed.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_GEOJSON_H
#define GR_GEOJSON_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One frame's result, in the units a GIS user reads. */
typedef struct {
  const char *file;          /* source file name, NULL when unknown */
  uint64_t frame;            /* frame number from 0 */
  int64_t timestamp_ns;      /* stream time of the frame, < 0 when unknown */
  unsigned flags;            /* the registration's GstNmiRegisterFlags (or localize's) */
  const char *flag_names;    /* the flags in words, comma-separated ("" for none) */
  const char *quality;       /* "registered", "doubtful", "coarse", "failed" */
  const char *crs;           /* the map CRS ("EPSG:32617" or WKT) */
  int geometry;              /* 0 none, 1 point (centre only), 2 polygon (footprint) */
  /* the frame's corners in WGS84, longitude first, in frame order: top-left,
   * top-right, bottom-right, bottom-left (geometry 2) */
  double corner_lon[4], corner_lat[4];
  /* the same corners in the control's map CRS */
  double corner_x[4], corner_y[4];
  double centre_lon, centre_lat;   /* the frame centre (geometry 1 and 2) */
  double centre_x, centre_y;       /* the same in map coordinates */
  unsigned inliers;
  double rms_px;             /* RMS residual of the inliers, control pixels (NAN: none) */
  double heading_deg;        /* the frame's "up" direction, degrees clockwise from true
                                north (NAN: unknown) */
  double gsd_m;              /* ground sample distance, metres per frame pixel (NAN) */
  double predicted_error_px; /* the registration's predicted error over the frame,
                                frame pixels (NAN: unknown); the CSV's last column */
} GrFootprint;

typedef enum {
  GR_GEOJSON_COLLECTION = 0, /* one FeatureCollection, valid after every frame */
  GR_GEOJSON_SEQUENCE = 1,   /* RFC 8142 GeoJSON text sequence */
} GrGeoJsonForm;

typedef struct GrFootprintWriter GrFootprintWriter;

/* Creates (truncates) the files: geojson_path and/or csv_path (either may be NULL).
 * GR_ERR_IO with the path and the reason on failure. */
GrStatus gr_footprint_writer_open (const char *geojson_path, GrGeoJsonForm form,
    const char *csv_path, GrFootprintWriter **out, char *errbuf, size_t errlen);

/* Appends one frame to every open file and flushes them. */
GrStatus gr_footprint_writer_add (GrFootprintWriter *w, const GrFootprint *f,
    char *errbuf, size_t errlen);

/* Closes the files (they are complete at any time; this only releases them). */
void gr_footprint_writer_close (GrFootprintWriter *w);

/* The Feature of one frame as a newly allocated JSON text (g_free()).  The polygon
 * ring is closed, counter-clockwise (RFC 7946's right-hand rule), and
 * starts at the frame's top-left corner: top-left, bottom-left, bottom-right,
 * top-right, top-left (the other way round for a mirrored frame). */
char *gr_footprint_to_geojson (const GrFootprint *f);

#ifdef __cplusplus
}
#endif
#endif
