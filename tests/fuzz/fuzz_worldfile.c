/* Fuzz target: world files (.pgw / .jgw / .tfw / .wld) through gr_world_file_read, the
 * reader both raster loaders use for the georeferencing of control images.
 *
 * Oracles on success: six finite numbers with a non-degenerate pixel transform (the
 * geotransform can be inverted); on failure: a message, GR_ERR_FORMAT (the file
 * exists and is readable here).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "fuzz_common.h"

#include <math.h>

#include "raster.h"

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  const char *path = fuzz_write_file (0, "in.wld", data, size);
  double geo[6];
  char err[512];
  err[0] = '\0';
  for (int i = 0; i < 6; i++)
    geo[i] = NAN;               /* poison */
  GrStatus st = gr_world_file_read (path, geo, err, sizeof err);
  if (st != GR_OK) {
    FUZZ_ASSERT (st == GR_ERR_FORMAT, "status %d (%s)", (int) st, err);
    FUZZ_ASSERT (err[0] != '\0', "failure without a message");
    return 0;
  }
  for (int i = 0; i < 6; i++)
    FUZZ_ASSERT (isfinite (geo[i]), "geo[%d] = %g", i, geo[i]);
  double det = geo[1] * geo[5] - geo[2] * geo[4];
  FUZZ_ASSERT (isfinite (det) && det != 0.0, "pixel transform not invertible "
      "(det %g: %g %g %g %g)", det, geo[1], geo[2], geo[4], geo[5]);
  return 0;
}
