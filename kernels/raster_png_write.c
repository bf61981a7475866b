/* The PNG writer: 8-bit gray images (score maps, debug output) through libpng.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "raster.h"
#include "raster_formats.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <png.h>

typedef struct {
  FILE *fp;
  const uint8_t *pix;
  int width, height;
  size_t stride;
  png_structp png;
  png_infop info;
  char msg[512];
} PngWrite;

static void
png_write_error_cb (png_structp png, png_const_charp msg)
{
  PngWrite *s = png_get_error_ptr (png);
  snprintf (s->msg, sizeof s->msg, "%s", msg ? msg : "libpng error");
  png_longjmp (png, 1);
}

static void
png_write_body (PngWrite *s)
{
  png_init_io (s->png, s->fp);
  png_set_IHDR (s->png, s->info, (png_uint_32) s->width, (png_uint_32) s->height, 8,
      PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
      PNG_FILTER_TYPE_DEFAULT);
  png_write_info (s->png, s->info);
  for (int y = 0; y < s->height; y++)
    png_write_row (s->png, (png_const_bytep) (s->pix + (size_t) y * s->stride));
  png_write_end (s->png, NULL);
}

static int
png_write_guarded (PngWrite *s)
{
  if (setjmp (png_jmpbuf (s->png)))
    return -1;
  png_write_body (s);
  return 0;
}

GrStatus
gr_png_write_gray8 (const char *path, const uint8_t *pix, int width, int height,
    size_t stride, char *errbuf, size_t errlen)
{
  if (!path || !pix || width <= 0 || height <= 0 || stride < (size_t) width) {
    gr_set_err (errbuf, errlen, "gr_png_write_gray8: invalid argument (%d x %d, stride %zu)",
        width, height, stride);
    return GR_ERR_INVALID;
  }
  PngWrite s;
  memset (&s, 0, sizeof s);
  s.pix = pix;
  s.width = width;
  s.height = height;
  s.stride = stride;
  s.fp = fopen (path, "wb");
  if (!s.fp) {
    gr_set_err (errbuf, errlen, "cannot open '%s' for writing: %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  s.png = png_create_write_struct (PNG_LIBPNG_VER_STRING, &s, png_write_error_cb,
      gr_raster_png_warning_ignore);
  if (s.png)
    s.info = png_create_info_struct (s.png);
  int failed;
  if (!s.png || !s.info) {
    snprintf (s.msg, sizeof s.msg, "cannot initialise libpng");
    failed = 1;
  } else {
    failed = png_write_guarded (&s);
  }
  png_destroy_write_struct (s.png ? &s.png : NULL, s.info ? &s.info : NULL);
  errno = 0;
  if (fclose (s.fp) != 0 && !failed) {
    snprintf (s.msg, sizeof s.msg, "%s", strerror (errno ? errno : EIO));
    failed = 1;
  }
  if (failed) {
    gr_set_err (errbuf, errlen, "cannot write '%s': %s", path, s.msg);
    struct stat st;
    if (stat (path, &st) == 0 && S_ISREG (st.st_mode))
      remove (path);            /* no half-written PNG left behind */
    return GR_ERR_IO;
  }
  return GR_OK;
}
