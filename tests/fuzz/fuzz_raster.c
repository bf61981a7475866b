/* Fuzz target: the built-in control-image loader (gr_raster_load_builtin: PNG through
 * libpng, JPEG through libjpeg, with their longjmp error handlers), which nmilocalize
 * and nmiregister use for control-location (and nmilocalize for mask-location) in
 * builds without GDAL.
 *
 * The input is written to a file (PNG chunk CRCs repaired, see fuzz_raster.h) and
 * loaded as luminance (band 0) and as band (size % 4), so bands 1..3 and the
 * out-of-range case are reached.  Oracles: the raster contract (fuzz_raster.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "fuzz_common.h"
#include "fuzz_raster.h"

#include "raster_internal.h"

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  uint8_t *fixed = fuzz_png_fix_crcs (data, size);
  const char *path = fuzz_write_file (0, "in.img", fixed, size);
  free (fixed);
  int bands[2] = { 0, (int) (size % 4) };
  for (int k = 0; k < (bands[1] ? 2 : 1); k++) {
    GrRaster r;
    char err[1024];
    err[0] = '\0';
    memset (&r, 0x5a, sizeof r);        /* poison: the loader must initialise it */
    GrStatus st = gr_raster_load_builtin (path, bands[k], &r, err, sizeof err);
    fuzz_check_raster (&r, bands[k], st, err, "builtin");
    if (st == GR_OK)
      FUZZ_ASSERT (strcmp (r.driver, "png") == 0 || strcmp (r.driver, "jpeg") == 0,
          "driver %s", r.driver);
    gr_raster_clear (&r);
  }
  return 0;
}
