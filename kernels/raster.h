/* Control imagery and masks from files: GDAL when built with it (GeoTIFF, TIFF, PNG,
 * JPEG; nodata and alpha as mask; geotransform), otherwise PNG and JPEG with a world
 * file (.pgw/.pngw/.jgw/.jpgw/.tfw/.wld).  And a PNG writer for score maps.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_RASTER_H
#define GR_RASTER_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  GrPlaneF plane;        /* the chosen band as float (native values, e.g. 0..65535);
                            plane.mask from nodata / alpha / GDAL mask band, or NULL */
  int bands;             /* colour or data bands in the file (alpha not counted) */
  int bit_depth;         /* 8 or 16 (or 32 for float rasters) */
  bool has_geo;          /* geotransform known */
  double geo[6];         /* GDAL order: map_x = g0 + px*g1 + py*g2, map_y = g3 + px*g4 + py*g5
                            where (px, py) are pixel-corner coordinates (0,0 = top-left
                            corner of the top-left pixel) */
  char driver[32];       /* "GDAL/GTiff", "png", "jpeg", ... */
} GrRaster;

/* An absolute limit on what loading a control may decode and hold, checked from the
 * file's header (PNG IHDR, JPEG SOF, GDAL raster size) before anything is decoded or
 * allocated: a small file can declare a huge image (a 109 KB PNG of 30000 x 30000
 * 1-bit pixels decodes to 3.6 GB of floats).  A field left 0 takes its default. */
typedef struct {
  uint64_t max_pixels;   /* width x height of the raster */
  uint64_t max_bytes;    /* host memory of the decoded raster: the float plane (4 bytes
                            a pixel), the mask (1) and the decoder's whole-image buffers
                            (interlaced PNG, progressive JPEG) */
} GrRasterBudget;

/* Enough for a 16384 x 16384 control in any layout (4 GiB covers an interlaced 16-bit
 * RGBA PNG of that size: plane, mask and libpng's image buffer). */
#define GR_RASTER_DEFAULT_MAX_PIXELS (16384ull * 16384ull)
#define GR_RASTER_DEFAULT_MAX_BYTES (4ull << 30)

/* band: 0 = luminance of the colour bands (BT.601 weights for 3 or more bands, the
 * band itself for 1 or 2), 1..bands picks one.  On failure returns GR_ERR_IO (cannot
 * open/read) or GR_ERR_FORMAT (unsupported or corrupt content, band out of range,
 * over the default budget), with a reason naming the path in errbuf. */
GrStatus gr_raster_load (const char *path, int band, GrRaster *out,
    char *errbuf, size_t errlen);
/* gr_raster_load with an explicit budget (NULL = the defaults above).  A raster over
 * the budget is GR_ERR_FORMAT, the message naming its size and the limit.  Local paths
 * must be regular files (or links to one): a FIFO, a device or a directory is GR_ERR_IO
 * at once, never a blocking open. */
GrStatus gr_raster_load_budget (const char *path, int band, const GrRasterBudget *budget,
    GrRaster *out, char *errbuf, size_t errlen);
void gr_raster_clear (GrRaster *r);

/* Reads a 6-line world file into GDAL-order geo[6] (world files give pixel-centre
 * coordinates; this converts to pixel corners).  GR_ERR_IO / GR_ERR_FORMAT. */
GrStatus gr_world_file_read (const char *path, double geo[6], char *errbuf, size_t errlen);

/* Map coordinates of pixel position (px, py) (pixel-corner convention). */
void gr_geo_apply (const double geo[6], double px, double py, double *mx, double *my);

/* Writes an 8-bit gray PNG (stride in bytes). */
GrStatus gr_png_write_gray8 (const char *path, const uint8_t *pix, int width, int height,
    size_t stride, char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
