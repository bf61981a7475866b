/* A registered frame as a georeferenced GeoTIFF: the frame resampled onto the
 * control's map grid through its exact projective transform (no ground control points,
 * no thin-plate spline), with the control's CRS and a geotransform, and an alpha band
 * that marks the pixels outside the frame (no-data).  GDAL's GTiff driver, or its COG
 * driver (Cloud Optimized GeoTIFF) where GDAL has it.  Built only with GDAL.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_GEOTIFF_H
#define GR_GEOTIFF_H

#include "gr_common.h"
#include "geo.h"
#include "camera.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 8-bit interleaved frame pixels: channels 1 (gray), 3 (RGB) or 4 (RGBA, alpha 0 =
 * invalid pixel).  stride in bytes. */
typedef struct {
  const uint8_t *pix;
  int width, height, channels;
  size_t stride;
  /* appended (issue 13): the lens that imaged these pixels when frame_to_control takes
   * UNDISTORTED pixels (a result with a lens); NULL: it takes them as delivered */
  const GrCamera *lens;
} GrFrame8;

/* The output grid: a window of the control's pixel grid (x0, y0 its top-left pixel,
 * width x height pixels) that covers the footprint of frame_to_control (frame pixel
 * corners -> control pixel corners) on a frame of fw x fh pixels.  With a lens (may be
 * NULL) the frame's pixels are undistorted first, which bends its straight edges, so
 * the window covers 64 points along every edge, not only the corners.  GR_ERR_INVALID
 * when such a point is not finite, cannot be undistorted or lies behind the camera (the
 * homography's w <= 0), or the window would exceed max_pixels. */
GrStatus gr_warp_window (const double frame_to_control[9], const GrCamera *lens, int fw,
    int fh, size_t max_pixels, long *x0, long *y0, int *width, int *height, char *errbuf,
    size_t errlen);

/* Resamples the frame (bilinear) onto that window, each map pixel through the inverse
 * transform and then, with frame->lens, the lens's distortion (cheap, per pixel): out holds width x height pixels of
 * `frame->channels` colour channels (without alpha: 1 or 3) plus one alpha byte
 * (255 = inside the frame, 0 = no data), interleaved.  Multi-threaded (OpenMP). */
void gr_warp_frame (const GrFrame8 *frame, const double frame_to_control[9], long x0,
    long y0, int width, int height, uint8_t *out);

/* Warps the frame and writes it to path with geo's CRS and the window's
 * geotransform.  cog: the COG driver (falls back to tiled GTiff when GDAL lacks
 * it).  max_pixels bounds the output (hostile transforms).  GR_ERR_INVALID (see
 * gr_warp_window), GR_ERR_IO (cannot write), GR_ERR_NOMEM. */
GrStatus gr_geotiff_write_frame (const char *path, const GrGeoRef *geo, const GrFrame8 *frame,
    const double frame_to_control[9], bool cog, size_t max_pixels, char *errbuf,
    size_t errlen);

/* A growing mosaic of registered frames on the control's grid: the canvas covers the
 * union of the frames' windows (at most max_pixels), the newest frame on top; gray
 * or RGB after the first frame, alpha 0 where no frame has data. */
typedef struct GrMosaic GrMosaic;

GrMosaic *gr_mosaic_new (size_t max_pixels);
void gr_mosaic_free (GrMosaic *m);

/* Adds a frame through frame_to_control.  GR_ERR_INVALID (the mosaic unchanged) for a
 * transform that places it nowhere, or when the canvas would exceed max_pixels. */
GrStatus gr_mosaic_add (GrMosaic *m, const GrFrame8 *frame, const double frame_to_control[9],
    char *errbuf, size_t errlen);

/* Writes the mosaic as a GeoTIFF (COG or tiled GTiff) with geo's CRS. */
GrStatus gr_mosaic_write (const GrMosaic *m, const char *path, const GrGeoRef *geo, bool cog,
    char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
