/* GrControlSource: a control image of any size, opened without reading it, from which
 * windows are cut around the area a frame needs, at the resolution it needs (issue 18).
 *
 * Opening reads only the header: size, bands, geotransform and the overviews GDAL
 * lists (GeoTIFF/COG internal, .ovr external, a VRT's).  Level 0 is the full
 * resolution, level k the k-th overview (each coarser than the one before).
 *
 * A window (GrControlWindow) is a GrRaster holding a crop of one level: the same float
 * values and validity mask, by the same band rules, as gr_raster_load gives for the
 * same pixels of the whole control (raster_gdal.h), plus where it lies: its top-left
 * pixel in the level, the offset and scale that map its pixels to full-control pixels
 * and its own geotransform.  An element registers on the window exactly as on a whole
 * control and maps the result back with gr_control_window_to_full.
 *
 * Pixels are decoded in square blocks of one level, kept in an LRU cache bounded in
 * bytes (GrControlSourceParams.cache_bytes, 512 MiB by default), so overlapping windows
 * of a flight decode each block once.  gr_control_source_prefetch queues boxes the
 * flight will need next; a worker thread decodes their blocks ahead of the stream.
 * Every function is thread-safe (GDAL's dataset is used by one thread at a time).
 *
 * Builds without GDAL, and PNGs that GDAL builds read with the built-in loader
 * (raster.c), hold the whole control in memory (subject to the decoding budget) and
 * cut windows from it: one level, no cache.
 *
 * Coordinates: pixel corners everywhere ((0,0) is the top-left corner of the top-left
 * pixel), boxes as {x0, y0, x1, y1} with x0 < x1, y0 < y1.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_CONTROL_SOURCE_H
#define GR_CONTROL_SOURCE_H

#include "gr_common.h"
#include "raster.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct GrControlSource GrControlSource;

#define GR_CONTROL_DEFAULT_CACHE_BYTES (512ull << 20)
#define GR_CONTROL_DEFAULT_BLOCK 256

typedef struct {
  uint64_t cache_bytes;         /* bound of the decoded-block cache (0: 512 MiB); a
                                 * block in use by a read is never evicted, so a read
                                 * may briefly hold one block over it */
  int block_size;               /* side of a cached block, pixels (16..4096; 0: 256) */
  uint64_t max_window_pixels;   /* largest window one read returns (0: the decoding
                                 * budget's GR_RASTER_DEFAULT_MAX_PIXELS) */
} GrControlSourceParams;

typedef struct {
  int width, height;            /* full resolution */
  int bands, bit_depth;         /* as GrRaster */
  bool has_geo;
  double geo[6];                /* full resolution, GDAL order, pixel corners */
  int levels;                   /* 1 + the usable overviews */
  bool in_memory;               /* held whole (no GDAL, or a PNG read by libpng) */
  char driver[32];
} GrControlInfo;

/* A crop of one level of the control. */
typedef struct {
  GrRaster raster;              /* window pixels; plane.mask NULL when all valid; geo:
                                 * the window's own geotransform (has_geo as the
                                 * control's) */
  int level;
  int x0, y0;                   /* the window's top-left pixel in the level's pixels */
  double scale_x, scale_y;      /* full-control pixels per window pixel (1 at level 0) */
  double off_x, off_y;          /* full-control position of the window's (0,0) corner:
                                 * full = off + window * scale */
  size_t data_capacity;         /* floats allocated at raster.plane.data (>= its pixels:
                                 * gr_control_source_window_release reuses it) */
} GrControlWindow;

typedef struct {
  uint64_t hits, misses;        /* block look-ups served from the cache / decoded */
  uint64_t evictions;           /* blocks dropped to stay under the bound */
  uint64_t prefetched;          /* blocks decoded by the prefetch worker */
  uint64_t bytes, blocks;       /* held now */
  uint64_t peak_bytes;          /* most held at once */
} GrControlCacheStats;

/* Opens the control at `path` (band 0 = luminance, as gr_raster_load), reading no
 * pixels.  GR_ERR_IO: cannot open (a FIFO, a device: at once); GR_ERR_FORMAT:
 * unusable (no data band, complex data, band out of range, malformed world file).
 * params may be NULL (defaults). */
GrStatus gr_control_source_open (const char *path, int band,
    const GrControlSourceParams *params, GrControlSource **out, char *errbuf,
    size_t errlen);
void gr_control_source_free (GrControlSource *s);

/* Whether gr_control_source_open reads `path` without decoding it (through GDAL's
 * blocks): false in builds without GDAL and for the PNGs read by the built-in loader,
 * which are decoded whole at open (an element then holds such a control whole). */
bool gr_control_source_can_window (const char *path);

void gr_control_source_info (const GrControlSource *s, GrControlInfo *info);

/* Size of `level` and its full-control pixels per level pixel; false when there is no
 * such level. */
bool gr_control_source_level_size (const GrControlSource *s, int level, int *width,
    int *height, double *scale_x, double *scale_y);

/* The coarsest level that still has at least `scale` level pixels per full-control
 * pixel (scale 0.25: a level of factor 4 or finer); 0 for scale >= 1. */
int gr_control_source_level_for_scale (const GrControlSource *s, double scale);

/* Raises (never lowers) the cache bound: elements sharing a source ask for their own. */
void gr_control_source_raise_cache_bytes (GrControlSource *s, uint64_t bytes);

/* The map box {xmin, ymin, xmax, ymax} (the control's CRS) as a full-control pixel
 * box (the bounding box of its four corners); false without a geotransform. */
bool gr_control_source_map_to_px (const GrControlSource *s, const double map_box[4],
    double px_box[4]);

/* The window of `level` covering the full-control pixel box grown by `margin`
 * full-control pixels on every side, clipped to the control.  GR_ERR_INVALID: no such
 * level, a box that misses the control or is not finite, a window over
 * max_window_pixels; GR_ERR_FORMAT: the file failed to read; GR_ERR_NOMEM. */
GrStatus gr_control_source_window (GrControlSource *s, int level, const double px_box[4],
    double margin, GrControlWindow *out, char *errbuf, size_t errlen);

/* The same from a map box (the control's CRS).  GR_ERR_INVALID without a
 * geotransform. */
GrStatus gr_control_source_window_map (GrControlSource *s, int level,
    const double map_box[4], double margin, GrControlWindow *out, char *errbuf,
    size_t errlen);

/* The whole control at full resolution (the no-prior case), when it fits `budget`
 * (NULL: the decoding budget's defaults), read as gr_raster_load reads it.  Over the
 * budget: GR_ERR_FORMAT without allocating, the message saying that a pose prior (a
 * window around it) is needed, and which level would fit. */
GrStatus gr_control_source_whole (GrControlSource *s, const GrRasterBudget *budget,
    GrControlWindow *out, char *errbuf, size_t errlen);

void gr_control_window_clear (GrControlWindow *w);

/* gr_control_window_clear for a window of s that s may reuse: its plane goes back to
 * s (at most two planes are kept, the largest), and the next window that fits is
 * written into it.  A fresh plane of tens of MB is mapped page by page as the copy
 * first writes it, which was most of a slide's read (docs/controls.md); a reused one
 * is written at memory speed.  The cost is the kept planes' memory, resident while
 * kept.  s may be NULL (then as gr_control_window_clear). */
void gr_control_source_window_release (GrControlSource *s, GrControlWindow *w);

/* Whether the window holds the full-control pixel box (clipped to the control first,
 * so a box reaching past the control's edge is covered by a window at that edge):
 * the test for re-cutting a window only when the needed box leaves it. */
bool gr_control_window_covers (const GrControlWindow *w, const GrControlSource *s,
    const double px_box[4]);

/* A homography into window pixels (frame -> window) as one into full-control pixels
 * (frame -> full), and back; pixel corners. */
void gr_control_window_to_full (const GrControlWindow *w, const double h_win[9],
    double h_full[9]);
void gr_control_window_from_full (const GrControlWindow *w, const double h_full[9],
    double h_win[9]);

/* Queues the blocks of `level` under the full-control pixel box (grown by margin) for
 * the worker thread to decode ahead; returns at once.  The queue keeps the newest 16
 * requests. */
void gr_control_source_prefetch (GrControlSource *s, int level, const double px_box[4],
    double margin);
/* Waits until the prefetch queue is empty and the worker idle. */
void gr_control_source_prefetch_wait (GrControlSource *s);

void gr_control_source_stats (GrControlSource *s, GrControlCacheStats *stats);

#ifdef __cplusplus
}
#endif
#endif
