/* PNG through libpng, the built-in loader's reader (and GDAL builds' for the PNGs
 * that GDAL reads wrong, see raster_gdal.c).  libpng's errors longjmp: the setjmp sits
 * in a small guard function and all decoder state lives in the caller's frame, so
 * nothing is indeterminate after a jump.  Palettes are expanded here (as GDAL does),
 * everything else by libpng; the size is checked against the budget and against what
 * the file can hold before anything is allocated.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "raster.h"
#include "raster_formats.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <png.h>

/* Palette indices to RGB (pch 3) or RGBA (pch 4) bytes, as libpng's expansion does
 * (alpha from tRNS, 255 beyond it), except that an index past the palette gives
 * transparent black. */
static const uint8_t *
expand_palette (const uint8_t *idx, int w, const png_color *pal, int npal,
    const png_byte *trans, int ntrans, int pch, uint8_t *out)
{
  for (int x = 0; x < w; x++) {
    int k = idx[x];
    uint8_t *o = out + (size_t) x * (size_t) pch;
    if (k < npal) {
      o[0] = pal[k].red;
      o[1] = pal[k].green;
      o[2] = pal[k].blue;
      if (pch == 4)
        o[3] = k < ntrans ? trans[k] : 255;
    } else {
      o[0] = o[1] = o[2] = 0;
      if (pch == 4)
        o[3] = 0;
    }
  }
  return out;
}

typedef struct {
  const char *path;
  FILE *fp;
  int band;
  const GrRasterBudget *budget;
  png_structp png;
  png_infop info;
  uint8_t *palbuf;              /* one row of expanded palette colours */
  uint8_t *rowbuf;              /* one row, or the whole image when interlaced */
  png_bytep *rows;
  GrRaster *out;
  GrStatus status;              /* set by the body for non-libpng failures */
  char msg[512];                /* libpng's error text, or the body's */
} PngRead;

static void
png_error_cb (png_structp png, png_const_charp msg)
{
  PngRead *s = png_get_error_ptr (png);
  snprintf (s->msg, sizeof s->msg, "%s", msg ? msg : "libpng error");
  png_longjmp (png, 1);
}

static void
png_read_body (PngRead *s)
{
  png_structp png = s->png;
  png_infop info = s->info;
  GrRaster *out = s->out;

  png_init_io (png, s->fp);
  png_read_info (png, info);
  png_uint_32 w = 0, h = 0;
  int depth = 0, ctype = 0, interlace = 0;
  png_get_IHDR (png, info, &w, &h, &depth, &ctype, &interlace, NULL, NULL);
  /* the budget, from IHDR alone: the plane, a mask when the image can have
   * transparency, and libpng's whole-image buffer when interlaced (samples expanded to
   * at most 4 channels of 8 or 16 bits) */
  bool maybe_alpha = (ctype & PNG_COLOR_MASK_ALPHA) || ctype == PNG_COLOR_TYPE_PALETTE
      || png_get_valid (png, info, PNG_INFO_tRNS);
  uint64_t expanded_row = (uint64_t) w * ((ctype & PNG_COLOR_MASK_COLOR) ? 4 : 2)
      * (depth == 16 ? 2 : 1);
  GrStatus bst = gr_raster_budget_check (s->budget, "PNG", w, h, maybe_alpha,
      interlace != PNG_INTERLACE_NONE ? expanded_row * h + sizeof (png_bytep) * (uint64_t) h
      : 0, s->msg, sizeof s->msg);
  if (bst != GR_OK) {
    s->status = bst;
    return;
  }
  /* deflate compresses at most 1032:1: a header that declares more pixel data than
   * the file could hold is a truncated or forged file; refused before the planes are
   * allocated (a 100-byte file claiming 60000 x 60000 RGBA would otherwise cost
   * gigabytes and seconds) */
  struct stat fst;
  if (fstat (fileno (s->fp), &fst) == 0 && fst.st_size >= 0) {
    int chans = ctype == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : ctype == PNG_COLOR_TYPE_RGB ? 3 :
        ctype == PNG_COLOR_TYPE_RGB_ALPHA ? 4 : 1;
    unsigned long long raw = ((unsigned long long) w * chans * depth + 7) / 8 * h;
    unsigned long long cap = 1032ull * (unsigned long long) fst.st_size + 65536;
    if (raw > cap) {
      s->status = GR_ERR_FORMAT;
      snprintf (s->msg, sizeof s->msg, "truncated or corrupt PNG: %u x %u pixels need "
          "at least %llu bytes of compressed data, the file has %lld", (unsigned) w,
          (unsigned) h, raw / 1032, (long long) fst.st_size);
      return;
    }
  }
  /* A gray or RGB tRNS value beyond the bit depth is corrupt: libpng would keep its
   * low bits (some pixels turn transparent), GDAL compares it whole (none do).
   * Refused, so that no loader invents a mask (found by fuzz_raster_gdal). */
  png_color_16p tc = NULL;
  if (depth < 16 && (ctype == PNG_COLOR_TYPE_GRAY || ctype == PNG_COLOR_TYPE_RGB) &&
      (png_get_tRNS (png, info, NULL, NULL, &tc) & PNG_INFO_tRNS) && tc) {
    unsigned maxv = (1u << depth) - 1;
    if (ctype == PNG_COLOR_TYPE_GRAY ? tc->gray > maxv :
        (tc->red > maxv || tc->green > maxv || tc->blue > maxv)) {
      s->status = GR_ERR_FORMAT;
      snprintf (s->msg, sizeof s->msg, "corrupt PNG: tRNS transparent colour out of range "
          "for %d-bit samples", depth);
      return;
    }
  }
  /* Palette images are expanded here, not by libpng: libpng gives an index beyond a
   * short palette opaque black, the GDAL loader masks it (value 0); here too (found by
   * fuzz_raster_gdal).  Gray < 8 bit -> 8 and tRNS -> alpha are libpng's. */
  bool palette = ctype == PNG_COLOR_TYPE_PALETTE;
  png_colorp pal = NULL;
  png_bytep trans = NULL;
  int npal = 0, ntrans = 0;
  if (palette) {
    png_get_PLTE (png, info, &pal, &npal);
    png_get_tRNS (png, info, &trans, &ntrans, NULL);
    if (!trans)
      ntrans = 0;
    if (depth < 8)
      png_set_packing (png);    /* one index per byte */
  } else {
    png_set_expand (png);
  }
  int passes = png_set_interlace_handling (png);
  png_read_update_info (png, info);
  int ch = png_get_channels (png, info);
  int bd = png_get_bit_depth (png, info);
  size_t rowbytes = png_get_rowbytes (png, info);
  if (w == 0 || h == 0 || w > INT32_MAX || h > INT32_MAX || ch < 1 || ch > 4
      || (bd != 8 && bd != 16)) {
    s->status = GR_ERR_FORMAT;
    snprintf (s->msg, sizeof s->msg, "unsupported PNG layout (%u x %u, %d channels, %d bit)",
        (unsigned) w, (unsigned) h, ch, bd);
    return;
  }
  if (palette && (ch != 1 || bd != 8 || !pal || npal < 1)) {
    s->status = GR_ERR_FORMAT;
    snprintf (s->msg, sizeof s->msg, "unsupported PNG palette layout");
    return;
  }
  /* a palette expands to RGB, with alpha when some entry is transparent or missing */
  int pch = !palette ? ch : (ntrans > 0 || npal < (1 << depth)) ? 4 : 3;
  int bands = pch >= 3 ? 3 : 1;
  if (s->band < 0 || s->band > bands) {
    s->status = GR_ERR_FORMAT;
    snprintf (s->msg, sizeof s->msg, "band %d out of range (the file has %d band%s)",
        s->band, bands, bands == 1 ? "" : "s");
    return;
  }
  bool has_alpha = pch == 2 || pch == 4;
  if (palette) {
    s->palbuf = malloc ((size_t) w * 4);
    if (!s->palbuf) {
      s->status = GR_ERR_NOMEM;
      snprintf (s->msg, sizeof s->msg, "out of memory");
      return;
    }
  }
  if (!gr_raster_plane_alloc (&out->plane, (int) w, (int) h, has_alpha)) {
    s->status = GR_ERR_NOMEM;
    snprintf (s->msg, sizeof s->msg, "cannot allocate %u x %u pixels", (unsigned) w,
        (unsigned) h);
    return;
  }
  out->bands = bands;
  out->bit_depth = bd;

  if (passes <= 1) {
    s->rowbuf = malloc (rowbytes);
    if (!s->rowbuf) {
      s->status = GR_ERR_NOMEM;
      snprintf (s->msg, sizeof s->msg, "out of memory");
      return;
    }
    for (png_uint_32 y = 0; y < h; y++) {
      png_read_row (png, s->rowbuf, NULL);
      const uint8_t *row = s->rowbuf;
      if (palette)
        row = expand_palette (s->rowbuf, (int) w, pal, npal, trans, ntrans, pch,
            s->palbuf);
      gr_raster_convert_row (row, (int) w, pch, bd == 16, s->band,
          out->plane.data + (size_t) y * w,
          out->plane.mask ? out->plane.mask + (size_t) y * w : NULL);
    }
  } else {
    if (rowbytes != 0 && (size_t) h > SIZE_MAX / rowbytes) {
      s->status = GR_ERR_NOMEM;
      snprintf (s->msg, sizeof s->msg, "image too large");
      return;
    }
    s->rowbuf = malloc (rowbytes * h);
    s->rows = malloc (sizeof (png_bytep) * h);
    if (!s->rowbuf || !s->rows) {
      s->status = GR_ERR_NOMEM;
      snprintf (s->msg, sizeof s->msg, "out of memory");
      return;
    }
    for (png_uint_32 y = 0; y < h; y++)
      s->rows[y] = s->rowbuf + (size_t) y * rowbytes;
    png_read_image (png, s->rows);
    for (png_uint_32 y = 0; y < h; y++) {
      const uint8_t *row = s->rows[y];
      if (palette)
        row = expand_palette (s->rows[y], (int) w, pal, npal, trans, ntrans, pch,
            s->palbuf);
      gr_raster_convert_row (row, (int) w, pch, bd == 16, s->band,
          out->plane.data + (size_t) y * w,
          out->plane.mask ? out->plane.mask + (size_t) y * w : NULL);
    }
  }
  png_read_end (png, NULL);
}

static int
png_read_guarded (PngRead *s)
{
  if (setjmp (png_jmpbuf (s->png)))
    return -1;
  png_read_body (s);
  return 0;
}

GrStatus
gr_raster_png_read (const char *path, FILE *fp, int band, const GrRasterBudget *budget,
    GrRaster *out, char *errbuf, size_t errlen)
{
  PngRead s;
  memset (&s, 0, sizeof s);
  s.path = path;
  s.fp = fp;
  s.band = band;
  s.budget = budget;
  s.out = out;
  s.status = GR_OK;
  s.png = png_create_read_struct (PNG_LIBPNG_VER_STRING, &s, png_error_cb,
      gr_raster_png_warning_ignore);
  if (s.png)
    s.info = png_create_info_struct (s.png);
  if (!s.png || !s.info) {
    png_destroy_read_struct (s.png ? &s.png : NULL, NULL, NULL);
    gr_set_err (errbuf, errlen, "'%s': cannot initialise libpng", path);
    return GR_ERR_NOMEM;
  }
  int jumped = png_read_guarded (&s);
  png_destroy_read_struct (&s.png, &s.info, NULL);
  free (s.rows);
  free (s.rowbuf);
  free (s.palbuf);
  if (jumped) {
    gr_set_err (errbuf, errlen, "'%s': corrupt or truncated PNG: %s", path, s.msg);
    return GR_ERR_FORMAT;
  }
  if (s.status != GR_OK) {
    gr_set_err (errbuf, errlen, "'%s': %s", path, s.msg);
    return s.status;
  }
  snprintf (out->driver, sizeof out->driver, "png");
  return GR_OK;
}
