/* Peak analysis: sub-pixel refinement and the separated second peak.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdlib.h>

#include "peak.h"
#include "test_check.h"

int
main (void)
{
  enum { W = 40, H = 30 };
  double *m = malloc (sizeof (double) * W * H);
  /* a paraboloid peak at (12.3, 20.7) of height 1.8, a second bump at (33, 5) of 1.4 */
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      const double d1 = (x - 12.3) * (x - 12.3) + (y - 20.7) * (y - 20.7);
      const double d2 = (x - 33) * (x - 33) + (y - 5) * (y - 5);
      m[y * W + x] = 1.0 + fmax (0.8 - 0.01 * d1, 0.4 - 0.02 * d2);
    }
  m[0] = NAN;
  GrPeak p;
  gr_find_peak (m, W, H, 5, 1.0, &p);
  CHECK (p.ix == 12 && p.iy == 21, "argmax (%d,%d)", p.ix, p.iy);
  CHECK (fabs (p.x - 12.3) < 1e-9 && fabs (p.y - 20.7) < 1e-9,
      "a parabola is refined exactly: (%g,%g)", p.x, p.y);
  CHECK (fabs (p.second - 1.4) < 1e-9, "second %g", p.second);
  CHECK (fabs (p.ratio - (p.score - 1.0) / 0.4) < 1e-9, "ratio %g", p.ratio);
  CHECK (p.flags == 0, "flags %u", p.flags);

  /* best on the edge: flagged, not refined on that axis */
  for (int i = 0; i < W * H; i++)
    m[i] = 1.0 + 0.01 * (i % W);
  gr_find_peak (m, W, H, 3, 1.0, &p);
  CHECK (p.ix == W - 1 && (p.flags & GR_PEAK_AT_BORDER) && p.x == W - 1, "border");

  /* nothing scored */
  for (int i = 0; i < W * H; i++)
    m[i] = NAN;
  gr_find_peak (m, W, H, 3, 1.0, &p);
  CHECK ((p.flags & GR_PEAK_NO_SCORE) && isnan (p.score), "no score");

  /* one cell: no second peak */
  double one = 1.5;
  gr_find_peak (&one, 1, 1, 3, 1.0, &p);
  CHECK (p.ix == 0 && (p.flags & GR_PEAK_NO_SECOND) && isnan (p.ratio) &&
      !(p.flags & GR_PEAK_AT_BORDER), "single cell flags %u", p.flags);
  free (m);
  return CHECK_DONE ();
}
