/* The pieces of the GDAL loader (raster_gdal.c) that windowed reading
 * (control_source.c) shares with it, so that a window of a control and the same area
 * of the whole control loaded by gr_raster_load agree bit for bit: the open (regular
 * files only, sidecars listed, GDAL errors captured), the band rules (the chosen band,
 * the BT.601 luminance of bands 1-3, palettes through their colour table, low-bit data
 * stretched, mask bands as the validity mask) and the geotransform (GDAL's or a world
 * file's).  Private to kernels/: not installed, not for callers.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_RASTER_GDAL_H
#define GR_RASTER_GDAL_H

#include <gdal.h>

#include "raster.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GDAL's error messages during one operation on one thread, and the thread-local
 * settings the loader runs under (libjpeg warnings are errors).  Begin and end on the
 * same thread, strictly nested. */
typedef struct {
  char failure[512];            /* first CE_Failure/CE_Fatal message */
  bool have_failure;
  char *prev_jpeg_opt;          /* the thread's setting before begin */
} GrGdalScope;

void gr_gdal_scope_begin (GrGdalScope *s);
void gr_gdal_scope_end (GrGdalScope *s);

/* Opens `path` read-only (GDAL registered on first use): a local path must be a
 * regular file (GR_ERR_IO at once for a FIFO, a device, a folder), a /vsi path must
 * open.  Call inside a scope.  *ds: GDALClose it. */
GrStatus gr_gdal_open (const char *path, GrGdalScope *scope, GDALDatasetH *ds,
    char *errbuf, size_t errlen);

/* How the chosen band's float values and its validity come from the dataset's bands. */
typedef struct {
  GDALRasterBandH src[3];       /* one (a band, a palette index) or three (luminance) */
  int nsrc;
  GDALRasterBandH mband[3];     /* mask bands to AND (none: all valid) */
  int nmask;
  float *ct_val;                /* palette: value of each entry (owned unless borrowed) */
  uint8_t *ct_ok;               /* palette: entry opaque */
  int ct_count;
  bool ct_borrowed;
  double nscale;                /* != 0: low-bit samples stretched to 0..255 */
  bool is_float;                /* float data: non-finite values are invalid */
  int bands;                    /* as GrRaster.bands */
  int bit_depth;                /* as GrRaster.bit_depth */
  int width, height;            /* of these bands */
} GrGdalBands;

/* The bands of `ds` for `band` (0 = luminance): GR_ERR_FORMAT for no data band, complex
 * data, a band out of range.  Clear with gr_gdal_bands_clear. */
GrStatus gr_gdal_bands_init (GDALDatasetH ds, const char *path, int band, GrGdalBands *b,
    char *errbuf, size_t errlen);

/* The same rules on overview `index` (0 = GDAL's first, the finest) of every source
 * band: false when a source band lacks it or the sizes differ.  The palette tables
 * are borrowed from `full`. */
bool gr_gdal_bands_overview (const GrGdalBands *full, int index, GrGdalBands *ovr);

void gr_gdal_bands_clear (GrGdalBands *b);

/* Reads w x h pixels at (x0, y0) of the bands into dst (floats) and mdst (0 or
 * GR_MASK_VALID), both packed w wide.  tmp: 2 w h floats when nsrc == 3, mtmp: w h
 * bytes when nmask > 1 (else may be NULL).  Returns GDAL's error. */
CPLErr gr_gdal_bands_read (const GrGdalBands *b, int x0, int y0, int w, int h, float *dst,
    uint8_t *mdst, float *tmp, uint8_t *mtmp);

/* The raster's georeference into out->has_geo / geo: a world file beside a local path
 * when GDAL has none or read that file itself (leniently), else GDAL's; and
 * out->driver.  GR_ERR_FORMAT for a malformed world file or an unusable geotransform. */
GrStatus gr_gdal_georef (GDALDatasetH ds, const char *path, GrRaster *out, char *errbuf,
    size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
