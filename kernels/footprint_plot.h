/* A picture of frame footprints over the control image, drawn by the project itself:
 * the control in gray, each registered footprint outlined in green, each flagged one
 * (doubtful, or only a coarse position: a cross) in red.  Written as an RGB PNG through
 * GDAL.  Built only with GDAL.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_FOOTPRINT_PLOT_H
#define GR_FOOTPRINT_PLOT_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  GR_PLOT_REGISTERED = 0,   /* polygon, green */
  GR_PLOT_FLAGGED = 1,      /* polygon, red */
  GR_PLOT_POINT = 2,        /* a cross at (x[0], y[0]), red: coarse position only */
} GrPlotKind;

typedef struct {
  double x[4], y[4];        /* corners in control pixel corners (TL TR BR BL) */
  GrPlotKind kind;
} GrPlotFootprint;

/* Draws n footprints over control (its values stretched between their 1st and 99th
 * percentiles, no-data white), scaled so that the longer side is at most max_side
 * pixels, and writes an RGB PNG.  Non-finite corners are skipped.  GR_ERR_INVALID,
 * GR_ERR_NOMEM, GR_ERR_IO with the reason. */
GrStatus gr_footprint_plot_png (const char *path, const GrPlaneF *control,
    const GrPlotFootprint *fp, size_t n, int max_side, char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
