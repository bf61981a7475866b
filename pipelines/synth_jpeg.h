/* Synthetic drone photos: an 8-bit frame written as a JPEG carrying the telemetry a DJI
 * aircraft records, laid out as DJI lays it out, so the parsers (kernels/telemetry.h)
 * meet the real structure: an APP1 EXIF segment (IFD0 Make/Model, the Exif IFD's
 * FocalLength and FocalLengthIn35mmFilm, the GPS IFD's latitude/longitude as
 * degree/minute/second rationals with their N/S/E/W references and GPSAltitude) and an
 * APP1 XMP packet whose drone-dji: fields are attributes of one rdf:Description, with
 * DJI's explicit signs ("+12.30").
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_SYNTH_JPEG_H
#define GR_SYNTH_JPEG_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char *make, *model;         /* EXIF Make / Model; NULL = not written */
  double focal_mm;                  /* EXIF FocalLength; <= 0 = not written */
  int focal_35mm;                   /* EXIF FocalLengthIn35mmFilm; <= 0 = not written */
  /* EXIF FocalPlaneXResolution/YResolution in pixels per inch (unit 2, as cameras
   * write it) and the PixelX/YDimension it refers to; <= 0 = not written.  A camera
   * that wrote 4000 x 3000 and a file resized afterwards: give the file's pixels and
   * the camera's dimensions here. */
  double focal_plane_px_per_inch;
  int exif_pixel_width, exif_pixel_height;
  bool have_gps;                    /* EXIF GPS IFD */
  double lat, lon;                  /* WGS84 degrees */
  double alt_amsl;                  /* EXIF GPSAltitude and drone-dji:AbsoluteAltitude */
  bool have_xmp;                    /* the drone-dji XMP packet */
  double rel_alt;                   /* drone-dji:RelativeAltitude */
  double gimbal_yaw, gimbal_pitch, gimbal_roll;   /* DJI: gimbal pitch -90 = nadir */
  double flight_yaw, flight_pitch, flight_roll;
} GrSynthDroneTags;

/* Zeroes the tags (nothing written). */
void gr_synth_drone_tags_init (GrSynthDroneTags *t);

/* Encodes pix (width x height, 1 = gray or 3 = RGB interleaved channels, row stride in
 * bytes) as a baseline JPEG of the given quality (1..100) with the tags; *out is
 * malloc'ed (free with free()).  false (and *out NULL) on bad arguments or an encoder
 * failure. */
bool gr_synth_jpeg_encode (const uint8_t *pix, int width, int height, int channels,
    size_t stride, int quality, const GrSynthDroneTags *tags, uint8_t **out,
    size_t *out_len);

/* The same, written to a file. */
bool gr_synth_jpeg_write (const char *path, const uint8_t *pix, int width, int height,
    int channels, size_t stride, int quality, const GrSynthDroneTags *tags);

#ifdef __cplusplus
}
#endif
#endif
