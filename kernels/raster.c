/* Control imagery from files: the dispatch to the format readers and what they share.
 *
 * With GDAL (GR_HAVE_GDAL): every file goes to raster_gdal.c, except the PNGs that GDAL
 * reads wrong or would allocate before refusing (gr_raster_gdal_png_to_builtin).
 * Without GDAL (and always for gr_raster_load_builtin): PNG (raster_png.c) and JPEG
 * (raster_jpeg.c) with a world file (raster_worldfile.c).  The PNG writer is
 * raster_png_write.c.
 *
 * Every loader checks the decoded size against a budget (GrRasterBudget) from the file's
 * header before decoding, and opens only regular files.  All loaders give the same
 * planes for the same PNG: same luminance expression, masks 0/255 and dropped (NULL)
 * when every pixel is valid.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "raster.h"
#include "raster_formats.h"
#include "raster_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <png.h>

void
gr_raster_reset (GrRaster *r)
{
  memset (r, 0, sizeof *r);
  r->geo[1] = 1.0;
  r->geo[5] = 1.0;
}

void
gr_raster_clear (GrRaster *r)
{
  if (!r)
    return;
  free (r->plane.data);
  free (r->plane.mask);
  gr_raster_reset (r);
}

void
gr_raster_mask_drop_if_all_valid (GrPlaneF *p)
{
  if (!p->mask)
    return;
  size_t n = (size_t) p->width * (size_t) p->height;
  for (size_t i = 0; i < n; i++)
    if (!p->mask[i])
      return;
  free (p->mask);
  p->mask = NULL;
}

bool
gr_raster_plane_alloc (GrPlaneF *p, int w, int h, bool with_mask)
{
  size_t n = (size_t) w * (size_t) h;
  memset (p, 0, sizeof *p);
  if (w <= 0 || h <= 0 || n / (size_t) w != (size_t) h || n > SIZE_MAX / sizeof (float))
    return false;
  p->data = malloc (n * sizeof (float));
  if (!p->data)
    return false;
  if (with_mask) {
    /* not cleared here: every loader writes each mask row as it decodes it, so a
     * truncated file that claims a huge size touches no more memory than it holds */
    p->mask = malloc (n);
    if (!p->mask) {
      free (p->data);
      p->data = NULL;
      return false;
    }
  }
  p->width = w;
  p->height = h;
  p->stride = (size_t) w;
  return true;
}

GrStatus
gr_raster_budget_check (const GrRasterBudget *budget, const char *format, uint64_t width,
    uint64_t height, bool with_mask, uint64_t extra_bytes, char *errbuf, size_t errlen)
{
  uint64_t max_pixels = budget && budget->max_pixels ? budget->max_pixels :
      GR_RASTER_DEFAULT_MAX_PIXELS;
  uint64_t max_bytes = budget && budget->max_bytes ? budget->max_bytes :
      GR_RASTER_DEFAULT_MAX_BYTES;
  /* width and height come from 32-bit header fields: the products fit in 64 bits
   * (extra_bytes is at most 16 bytes a pixel) */
  uint64_t pixels = width * height;
  uint64_t bytes = pixels * (sizeof (float) + (with_mask ? 1 : 0)) + extra_bytes;
  if (pixels <= max_pixels && bytes <= max_bytes)
    return GR_OK;
  if (pixels > max_pixels)
    gr_set_err (errbuf, errlen, "%s of %llu x %llu pixels is over the decoding budget of "
        "%llu pixels (%.0f megapixels > %.0f): refused before decoding; raise the "
        "budget or prepare the control (docs/controls.md)", format,
        (unsigned long long) width, (unsigned long long) height,
        (unsigned long long) max_pixels, pixels / 1e6, max_pixels / 1e6);
  else
    gr_set_err (errbuf, errlen, "%s of %llu x %llu pixels needs %llu bytes (%.1f MiB) to "
        "decode, over the decoding budget of %llu bytes (%.1f MiB): refused before "
        "decoding; raise the budget or prepare the control (docs/controls.md)", format,
        (unsigned long long) width, (unsigned long long) height,
        (unsigned long long) bytes, bytes / 1048576.0, (unsigned long long) max_bytes,
        max_bytes / 1048576.0);
  return GR_ERR_FORMAT;
}

static const char *
file_kind (mode_t mode)
{
  if (S_ISDIR (mode))
    return "a directory";
  if (S_ISFIFO (mode))
    return "a named pipe (FIFO)";
  if (S_ISCHR (mode))
    return "a character device";
  if (S_ISBLK (mode))
    return "a block device";
  if (S_ISSOCK (mode))
    return "a socket";
  return "not a regular file";
}

GrStatus
gr_raster_open_regular (const char *path, FILE **fp, char *errbuf, size_t errlen)
{
  *fp = NULL;
  /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, for ever */
  int fd = open (path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    gr_set_err (errbuf, errlen, "cannot open '%s': %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  struct stat st;
  if (fstat (fd, &st) != 0) {
    int e = errno;
    close (fd);
    gr_set_err (errbuf, errlen, "cannot open '%s': %s", path, strerror (e));
    return GR_ERR_IO;
  }
  if (!S_ISREG (st.st_mode)) {
    close (fd);
    gr_set_err (errbuf, errlen, "cannot open '%s': %s, not a regular file (an image file "
        "is needed)", path, file_kind (st.st_mode));
    return GR_ERR_IO;
  }
  int fl = fcntl (fd, F_GETFL);
  if (fl >= 0)
    fcntl (fd, F_SETFL, fl & ~O_NONBLOCK);
  *fp = fdopen (fd, "rb");
  if (!*fp) {
    int e = errno;
    close (fd);
    gr_set_err (errbuf, errlen, "cannot open '%s': %s", path, strerror (e));
    return GR_ERR_IO;
  }
  return GR_OK;
}

/* Converts one decoded row (8 or 16 bit, 1..4 channels) to the chosen band. */
void
gr_raster_convert_row (const uint8_t *row, int w, int ch, bool b16, int band, float *dst,
    uint8_t *mask)
{
  int colour = ch >= 3 ? 3 : 1;
  int alpha = (ch == 2 || ch == 4) ? ch - 1 : -1;
  int src = band == 0 ? 0 : band - 1;
  for (int x = 0; x < w; x++) {
    double s[4];
    for (int c = 0; c < ch; c++) {
      size_t i = (size_t) x * (size_t) ch + (size_t) c;
      s[c] = b16 ? (double) ((row[2 * i] << 8) | row[2 * i + 1]) : (double) row[i];
    }
    if (band == 0 && colour == 3)
      dst[x] = gr_luma601 (s[0], s[1], s[2]);
    else
      dst[x] = (float) s[src];
    if (mask)
      mask[x] = (alpha >= 0 && s[alpha] != 0.0) ? GR_MASK_VALID : 0;
  }
}

void
gr_raster_png_warning_ignore (png_structp png, png_const_charp msg)
{
  (void) png;
  (void) msg;
}

GrStatus
gr_raster_load_builtin_budget (const char *path, int band, const GrRasterBudget *budget,
    GrRaster *out, char *errbuf, size_t errlen)
{
  if (!out) {
    gr_set_err (errbuf, errlen, "gr_raster_load: NULL output");
    return GR_ERR_INVALID;
  }
  gr_raster_reset (out);
  if (!path) {
    gr_set_err (errbuf, errlen, "gr_raster_load: NULL path");
    return GR_ERR_INVALID;
  }
  FILE *fp = NULL;
  GrStatus st = gr_raster_open_regular (path, &fp, errbuf, errlen);
  if (st != GR_OK)
    return st;
  uint8_t sig[8];
  size_t n = fread (sig, 1, sizeof sig, fp);
  if (ferror (fp)) {
    int e = errno;
    fclose (fp);
    gr_set_err (errbuf, errlen, "cannot read '%s': %s", path, strerror (e ? e : EIO));
    return GR_ERR_IO;
  }
  rewind (fp);
  if (n == 0) {
    st = GR_ERR_FORMAT;
    gr_set_err (errbuf, errlen, "'%s': empty file", path);
  } else if (n == 8 && png_sig_cmp (sig, 0, 8) == 0) {
    st = gr_raster_png_read (path, fp, band, budget, out, errbuf, errlen);
  } else if (n >= 3 && sig[0] == 0xFF && sig[1] == 0xD8 && sig[2] == 0xFF) {
    st = gr_raster_jpeg_read (path, fp, band, budget, out, errbuf, errlen);
  } else {
    st = GR_ERR_FORMAT;
    gr_set_err (errbuf, errlen, "'%s': not a PNG or JPEG file%s", path,
        GR_HAVE_GDAL ? "" : " (built without GDAL: only PNG and JPEG are read)");
  }
  fclose (fp);
  if (st == GR_OK)
    st = gr_raster_world_file_load (path, out, errbuf, errlen);
  if (st == GR_OK)
    gr_raster_mask_drop_if_all_valid (&out->plane);
  else
    gr_raster_clear (out);
  return st;
}

GrStatus
gr_raster_load_builtin (const char *path, int band, GrRaster *out, char *errbuf, size_t errlen)
{
  return gr_raster_load_builtin_budget (path, band, NULL, out, errbuf, errlen);
}

GrStatus
gr_raster_load_budget (const char *path, int band, const GrRasterBudget *budget,
    GrRaster *out, char *errbuf, size_t errlen)
{
#if GR_HAVE_GDAL
  if (!out) {
    gr_set_err (errbuf, errlen, "gr_raster_load: NULL output");
    return GR_ERR_INVALID;
  }
  gr_raster_reset (out);
  if (!path) {
    gr_set_err (errbuf, errlen, "gr_raster_load: NULL path");
    return GR_ERR_INVALID;
  }
  if (gr_raster_gdal_png_to_builtin (path))
    return gr_raster_load_builtin_budget (path, band, budget, out, errbuf, errlen);
  GrStatus st = gr_raster_gdal_read (path, band, budget, out, errbuf, errlen);
  if (st == GR_OK)
    gr_raster_mask_drop_if_all_valid (&out->plane);
  else
    gr_raster_clear (out);
  return st;
#else
  return gr_raster_load_builtin_budget (path, band, budget, out, errbuf, errlen);
#endif
}

GrStatus
gr_raster_load (const char *path, int band, GrRaster *out, char *errbuf, size_t errlen)
{
  return gr_raster_load_budget (path, band, NULL, out, errbuf, errlen);
}
