/* Image preparation for the NMI searches: area downscaling with masks, and mapping
 * of float or 16-bit values to the 256 histogram bins.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_IMAGE_H
#define GR_IMAGE_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Allocates a width x height plane (stride = width) with a mask when with_mask;
 * the mask starts all valid.  false on allocation failure. */
bool gr_plane_alloc (GrPlaneF *p, int width, int height, bool with_mask);
void gr_plane_clear (GrPlaneF *p);

/* Number of valid pixels (width*height when the plane has no mask). */
size_t gr_plane_count_valid (const GrPlaneF *p);

/* Marks pixels whose value rounds to `value` invalid (a nodata value), creating the
 * mask when the plane has none.  false when out of memory. */
bool gr_plane_mask_value (GrPlaneF *p, double value);

/* Area (box) resampling by `scale` (0 < scale <= 1; 1 copies): each output pixel is
 * the mean of the valid source pixels it covers, weighted by covered area; it is
 * valid when at least half of its covered area is valid.  Output size is
 * max(1, round(width * scale)) x max(1, round(height * scale)).  dst must be zeroed
 * or hold a plane from an earlier call: it is reused when its size and mask presence
 * already fit (per-frame callers allocate once), else (re)allocated.  It has a mask
 * when src has one. */
GrStatus gr_plane_downscale (const GrPlaneF *src, double scale, GrPlaneF *dst);

typedef enum {
  GR_BINS_IDENTITY = 0,    /* values already 0..255: round and clamp (8-bit input) */
  GR_BINS_MINMAX = 1,      /* [min, max] of the valid pixels onto 0..255 */
  GR_BINS_FIXED = 2,       /* [lo, hi] onto 0..255, clamped outside */
  GR_BINS_PERCENTILE = 3,  /* [lo-th, hi-th] percentile of the valid pixels (0..100) */
} GrBinMode;

/* The value range [a, b] that `mode` maps onto the bins or levels, from the valid
 * pixels of p (any stride): identity 0..256 (0..65536 when depth > 8), fixed lo..hi
 * (GR_ERR_INVALID unless lo < hi), min..max of the valid values, or their lo-th and
 * hi-th percentiles (GR_ERR_INVALID unless 0 <= lo < hi <= 100); 0..0 when no pixel
 * is valid.  GR_ERR_NOMEM when the percentile sort cannot allocate. */
GrStatus gr_plane_value_range (const GrPlaneF *p, GrBinMode mode, int depth, double lo,
    double hi, double *a, double *b);

/* Maps the plane to 256 bins: bin = floor((v - a) / (b - a) * 256) clamped to 0..255,
 * where [a, b] follows `mode` (lo and hi are used by FIXED and PERCENTILE).  A
 * constant plane maps to bin 0.  out has stride = width; invalid pixels get 0. */
GrStatus gr_plane_to_bins (const GrPlaneF *p, GrBinMode mode, double lo, double hi,
    uint8_t *out);

#ifdef __cplusplus
}
#endif
#endif
