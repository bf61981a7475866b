/* Peak analysis of a score map: the best translation with sub-pixel refinement, and
 * the best separated second peak as a confidence.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_PEAK_H
#define GR_PEAK_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  GR_PEAK_NONE = 0,
  GR_PEAK_NO_SCORE = 1 << 0,       /* no finite score in the map */
  GR_PEAK_AT_BORDER = 1 << 1,      /* best on the map's edge: not refined on that axis */
  GR_PEAK_NO_SECOND = 1 << 2,      /* no local maximum outside the exclusion radius */
} GrPeakFlags;

typedef struct {
  int ix, iy;            /* integer argmax (map coordinates) */
  double x, y;           /* sub-pixel position: parabola through the 3 neighbours per axis */
  double score;          /* map value at (ix, iy) */
  double second;         /* best 3x3 local maximum farther than the exclusion radius
                            (Chebyshev) from (ix, iy); NAN when none */
  double ratio;          /* (score - floor) / (second - floor): with NMI, floor = 1, so
                            it compares the information above independence; INFINITY
                            when second <= floor, NAN when no second */
  unsigned flags;        /* GrPeakFlags */
} GrPeak;

/* Map: w x h doubles, row-major, NAN = not scored.  floor_value is the score of "no
 * information" (1 for NMI). */
void gr_find_peak (const double *map, int w, int h, int exclusion_radius,
    double floor_value, GrPeak *out);

#ifdef __cplusplus
}
#endif
#endif
