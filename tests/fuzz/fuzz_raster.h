/* Shared parts of the raster fuzz targets: PNG chunk CRC repair and the checks every
 * successfully loaded raster must pass.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_FUZZ_RASTER_H
#define GR_FUZZ_RASTER_H

#include <math.h>
#include <zlib.h>

#include "raster.h"

/* A mutated PNG almost always fails its chunk CRCs, and libpng stops at the first bad
 * one: the loader's own code (layouts, bands, alpha, interlacing) would never be
 * reached.  So, for inputs with the PNG signature, every complete chunk gets its CRC
 * recomputed before the file is written (seed files keep theirs: they are valid). */
static uint8_t *
fuzz_png_fix_crcs (const uint8_t * data, size_t size)
{
  static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
  uint8_t *copy = malloc (size ? size : 1);
  if (!copy)
    abort ();
  memcpy (copy, data, size);
  if (size < 8 || memcmp (data, sig, 8) != 0)
    return copy;
  size_t off = 8;
  while (off + 12 <= size) {
    uint32_t len = ((uint32_t) copy[off] << 24) | ((uint32_t) copy[off + 1] << 16) |
        ((uint32_t) copy[off + 2] << 8) | copy[off + 3];
    if (len > size - off - 12)
      break;
    uint32_t crc = (uint32_t) crc32 (0L, copy + off + 4, (uInt) len + 4);
    uint8_t *c = copy + off + 8 + len;
    c[0] = (uint8_t) (crc >> 24);
    c[1] = (uint8_t) (crc >> 16);
    c[2] = (uint8_t) (crc >> 8);
    c[3] = (uint8_t) crc;
    off += 12 + (size_t) len;
  }
  return copy;
}

/* The contract of a loaded raster (raster.h). */
static void
fuzz_check_raster (const GrRaster * r, int band, GrStatus st, const char *err,
    const char *who)
{
  if (st != GR_OK) {
    FUZZ_ASSERT (st == GR_ERR_FORMAT || st == GR_ERR_NOMEM || st == GR_ERR_IO,
        "[%s] status %d (%s)", who, (int) st, err);
    FUZZ_ASSERT (err[0] != '\0', "[%s] failure without a message", who);
    FUZZ_ASSERT (r->plane.data == NULL && r->plane.mask == NULL,
        "[%s] failure left planes allocated", who);
    return;
  }
  const GrPlaneF *p = &r->plane;
  FUZZ_ASSERT (p->width > 0 && p->height > 0 && p->data, "[%s] %d x %d", who, p->width,
      p->height);
  FUZZ_ASSERT (p->stride == (size_t) p->width, "[%s] stride %zu", who, p->stride);
  FUZZ_ASSERT (r->bands >= 1, "[%s] %d bands", who, r->bands);
  FUZZ_ASSERT (band >= 0 && band <= r->bands, "[%s] band %d accepted, %d bands", who, band,
      r->bands);
  FUZZ_ASSERT (r->bit_depth == 8 || r->bit_depth == 16 || r->bit_depth == 32
      || r->bit_depth == 64, "[%s] bit depth %d", who, r->bit_depth);
  size_t n = (size_t) p->width * (size_t) p->height;
  size_t invalid = 0;
  for (size_t i = 0; i < n; i++) {
    bool valid = !p->mask || p->mask[i];
    if (!valid) {
      invalid++;
      continue;
    }
    /* valid pixels carry finite values (float rasters: NaN/Inf are masked) */
    FUZZ_ASSERT (isfinite (p->data[i]), "[%s] pixel %zu valid but %g", who, i, p->data[i]);
    if (r->bit_depth <= 16 && strncmp (r->driver, "GDAL", 4) != 0)
      FUZZ_ASSERT (p->data[i] >= 0 && p->data[i] <= (r->bit_depth == 8 ? 255 : 65535),
          "[%s] pixel %zu = %g outside %d-bit range", who, i, p->data[i], r->bit_depth);
  }
  /* the mask is dropped when every pixel is valid */
  FUZZ_ASSERT (!p->mask || invalid > 0, "[%s] all-valid mask kept", who);
  if (r->has_geo)
    for (int i = 0; i < 6; i++)
      FUZZ_ASSERT (isfinite (r->geo[i]), "[%s] geo[%d] = %g", who, i, r->geo[i]);
  FUZZ_ASSERT (r->driver[0] != '\0', "[%s] no driver name", who);
}

#endif
