/* What the raster format files (raster_png.c, raster_jpeg.c, raster_gdal.c,
 * raster_worldfile.c) share with the dispatch in raster.c: the decoding budget, the
 * plane allocation, the regular-file check and the pixel conversions both built-in
 * decoders use.  Private to kernels/raster*.c: not installed, not for callers.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_RASTER_FORMATS_H
#define GR_RASTER_FORMATS_H

#include <stdio.h>

#include <png.h>

#include "raster.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_MASK_VALID 255

/* BT.601 luma; every loader uses exactly this expression so that they agree bit for
 * bit on the same file. */
static inline float
gr_luma601 (double r, double g, double b)
{
  return (float) (0.299 * r + 0.587 * g + 0.114 * b);
}

/* Resets a GrRaster to "nothing loaded" (identity geotransform). */
void gr_raster_reset (GrRaster *r);

/* Allocates plane->data (and the mask when asked; neither is cleared: every loader
 * writes each row it decodes).  false on overflow or out of memory. */
bool gr_raster_plane_alloc (GrPlaneF *p, int w, int h, bool with_mask);

/* Frees the mask when every pixel is valid. */
void gr_raster_mask_drop_if_all_valid (GrPlaneF *p);

/* Checks a decoded size against the budget BEFORE anything is allocated or decoded:
 * width x height against max_pixels, and the bytes the loader will hold (float plane,
 * the mask when with_mask, plus extra_bytes of decoder buffers) against max_bytes.
 * GR_ERR_FORMAT with a message naming the format, the sizes and the limits (not the
 * path: the caller prefixes it). */
GrStatus gr_raster_budget_check (const GrRasterBudget *budget, const char *format,
    uint64_t width, uint64_t height, bool with_mask, uint64_t extra_bytes, char *errbuf,
    size_t errlen);

/* Opens a local path for reading when it is a regular file (or a link to one): a FIFO,
 * a device, a socket or a directory is GR_ERR_IO at once, naming what it is.  Never
 * blocks: the file is opened non-blocking and checked with fstat before any read.
 * *fp = the stream (fclose it). */
GrStatus gr_raster_open_regular (const char *path, FILE **fp, char *errbuf, size_t errlen);

/* One decoded row (8 or 16 bit big-endian samples, ch = 1..4 interleaved channels,
 * alpha last when ch is 2 or 4) to the chosen band (0 = luminance); mask (may be NULL)
 * from the alpha channel. */
void gr_raster_convert_row (const uint8_t *row, int w, int ch, bool b16, int band,
    float *dst, uint8_t *mask);

/* libpng warnings (ancillary chunks) are not worth failing a load or a write for. */
void gr_raster_png_warning_ignore (png_structp png, png_const_charp msg);

/* The built-in decoders: fp is positioned at the start of the file. */
GrStatus gr_raster_png_read (const char *path, FILE *fp, int band,
    const GrRasterBudget *budget, GrRaster *out, char *errbuf, size_t errlen);
GrStatus gr_raster_jpeg_read (const char *path, FILE *fp, int band,
    const GrRasterBudget *budget, GrRaster *out, char *errbuf, size_t errlen);

/* World files: the geotransform of an image from the world file beside it. */
bool gr_raster_geo_usable (const double g[6]);
GrStatus gr_raster_world_file_apply (const char *path, const char *wf, GrRaster *r,
    char *errbuf, size_t errlen);
GrStatus gr_raster_world_file_load (const char *path, GrRaster *r, char *errbuf,
    size_t errlen);

#if GR_HAVE_GDAL
/* The GDAL loader (raster_gdal.c, compiled only in GDAL builds). */
GrStatus gr_raster_gdal_read (const char *path, int band, const GrRasterBudget *budget,
    GrRaster *out, char *errbuf, size_t errlen);
/* PNG files that GDAL builds read with the built-in loader (see raster_gdal.c). */
bool gr_raster_gdal_png_to_builtin (const char *path);
#endif

#ifdef __cplusplus
}
#endif
#endif
