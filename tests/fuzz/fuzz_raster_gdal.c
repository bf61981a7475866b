/* Fuzz target: the GDAL control-image path (gr_raster_load in a GDAL build: our code
 * around GDAL: band choice, palettes through their colour table, NBITS stretching,
 * mask bands, float NaN masking, strip reads, world-file arbitration), which
 * nmilocalize and nmiregister use for control-location and mask-location.  GDAL itself
 * is not instrumented: crashes inside GDAL's drivers are GDAL's.
 *
 * The input is written as in.tif (PNG chunk CRCs repaired) and loaded as band 0 and
 * band (size % 4).  Oracles: the raster contract (fuzz_raster.h), and for PNG input
 * the documented agreement with the built-in loader: when both load it, the same
 * size, bands, bit depth, mask presence and values.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "fuzz_common.h"
#include "fuzz_raster.h"

#include "raster_internal.h"

#include <cpl_conv.h>

static void
compare (const GrRaster * a, const GrRaster * b)
{
  FUZZ_ASSERT (a->plane.width == b->plane.width && a->plane.height == b->plane.height,
      "sizes differ: builtin %dx%d, gdal %dx%d", a->plane.width, a->plane.height,
      b->plane.width, b->plane.height);
  FUZZ_ASSERT (a->bands == b->bands, "bands: builtin %d, gdal %d", a->bands, b->bands);
  FUZZ_ASSERT (a->bit_depth == b->bit_depth, "bit depth: builtin %d, gdal %d",
      a->bit_depth, b->bit_depth);
  FUZZ_ASSERT ((a->plane.mask == NULL) == (b->plane.mask == NULL),
      "mask: builtin %s, gdal %s", a->plane.mask ? "yes" : "none",
      b->plane.mask ? "yes" : "none");
  size_t n = (size_t) a->plane.width * (size_t) a->plane.height;
  for (size_t i = 0; i < n; i++) {
    FUZZ_ASSERT (a->plane.data[i] == b->plane.data[i],
        "pixel %zu: builtin %g, gdal %g", i, a->plane.data[i], b->plane.data[i]);
    if (a->plane.mask)
      FUZZ_ASSERT (!a->plane.mask[i] == !b->plane.mask[i], "mask pixel %zu", i);
  }
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  static int init;
  if (!init) {
    /* no .aux.xml side files, no network, no driver plugins beyond the built-in set */
    CPLSetConfigOption ("GDAL_PAM_ENABLED", "NO");
    CPLSetConfigOption ("CPL_DEBUG", "OFF");
    CPLSetConfigOption ("GDAL_DISABLE_READDIR_ON_OPEN", "EMPTY_DIR");
    init = 1;
  }
  uint8_t *fixed = fuzz_png_fix_crcs (data, size);
  const char *path = fuzz_write_file (0, "in.tif", fixed, size);
  free (fixed);
  bool png = size >= 8 && memcmp (data, "\x89PNG\r\n\x1a\n", 8) == 0;
  int bands[2] = { 0, (int) (size % 4) };
  for (int k = 0; k < (bands[1] ? 2 : 1); k++) {
    GrRaster r;
    char err[1024];
    err[0] = '\0';
    memset (&r, 0x5a, sizeof r);
    GrStatus st = gr_raster_load (path, bands[k], &r, err, sizeof err);
    fuzz_check_raster (&r, bands[k], st, err, "gdal");
    if (st == GR_OK && png) {
      GrRaster b;
      char err2[1024] = "";
      if (gr_raster_load_builtin (path, bands[k], &b, err2, sizeof err2) == GR_OK) {
        compare (&b, &r);
        gr_raster_clear (&b);
      }
    }
    gr_raster_clear (&r);
  }
  return 0;
}
