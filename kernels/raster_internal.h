/* Internal entry points of the raster loaders (kernels/raster*.c), for the tests: not
 * part of the public kernels API.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_RASTER_INTERNAL_H
#define GR_RASTER_INTERNAL_H

#include "raster.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The loader used when the build has no GDAL: PNG (libpng) and JPEG (libjpeg) with a
 * world file beside the image.  Same contract as gr_raster_load; it is compiled in
 * every build so that tests can compare it with the GDAL loader on the same files. */
GrStatus gr_raster_load_builtin (const char *path, int band, GrRaster *out,
    char *errbuf, size_t errlen);
GrStatus gr_raster_load_builtin_budget (const char *path, int band,
    const GrRasterBudget *budget, GrRaster *out, char *errbuf, size_t errlen);

/* Finds the world file beside `path` (<stem>.<first+last ext letter>w, <name>w, .wld,
 * .tfw, in this order): a newly allocated path (free()), or NULL when there is none. */
char *gr_world_file_find (const char *path);

#ifdef __cplusplus
}
#endif
#endif
