/* JPEG through libjpeg, the built-in loader's reader.  libjpeg's errors longjmp (guard
 * function as in raster_png.c); its warnings (corrupt data that it would fill with
 * gray) stop the decoding and refuse the file.  The size is checked against the budget
 * and against what the file can hold before anything is allocated.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "raster.h"
#include "raster_formats.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>

typedef struct {
  struct jpeg_error_mgr pub;
  jmp_buf jb;
  char msg[JMSG_LENGTH_MAX];
  char warning[JMSG_LENGTH_MAX];
  int warnings;
} JpegErr;

static void
jpeg_error_exit_cb (j_common_ptr cinfo)
{
  JpegErr *e = (JpegErr *) cinfo->err;
  cinfo->err->format_message (cinfo, e->msg);
  longjmp (e->jb, 1);
}

static void
jpeg_emit_message_cb (j_common_ptr cinfo, int level)
{
  JpegErr *e = (JpegErr *) cinfo->err;
  if (level < 0) {              /* a warning: corrupt data; remember the first one */
    if (e->warnings++ == 0)
      cinfo->err->format_message (cinfo, e->warning);
    cinfo->err->num_warnings++;
  }
}

static void
jpeg_output_message_cb (j_common_ptr cinfo)
{
  (void) cinfo;                 /* never print */
}

typedef struct {
  FILE *fp;
  int band;
  const GrRasterBudget *budget;
  struct jpeg_decompress_struct cinfo;
  JpegErr err;
  bool created;
  uint8_t *rowbuf;
  GrRaster *out;
  GrStatus status;
  char msg[512];
} JpegRead;

static void
jpeg_read_body (JpegRead *s)
{
  struct jpeg_decompress_struct *ci = &s->cinfo;
  GrRaster *out = s->out;

  jpeg_create_decompress (ci);
  s->created = true;
  jpeg_stdio_src (ci, s->fp);
  jpeg_read_header (ci, TRUE);
  switch (ci->jpeg_color_space) {
    case JCS_GRAYSCALE:
      ci->out_color_space = JCS_GRAYSCALE;
      break;
    case JCS_YCbCr:
    case JCS_RGB:
      ci->out_color_space = JCS_RGB;
      break;
    default:
      s->status = GR_ERR_FORMAT;
      snprintf (s->msg, sizeof s->msg, "unsupported JPEG colour space %d (CMYK/YCCK?)",
          (int) ci->jpeg_color_space);
      return;
  }
  if (ci->data_precision != 8) {
    s->status = GR_ERR_FORMAT;
    snprintf (s->msg, sizeof s->msg, "unsupported JPEG precision %d bit", ci->data_precision);
    return;
  }
  int bands = ci->out_color_space == JCS_RGB ? 3 : 1;
  if (s->band < 0 || s->band > bands) {
    s->status = GR_ERR_FORMAT;
    snprintf (s->msg, sizeof s->msg, "band %d out of range (the file has %d band%s)",
        s->band, bands, bands == 1 ? "" : "s");
    return;
  }
  /* the budget, from the frame header (SOF): the plane, and for a progressive file
   * libjpeg's whole-image coefficient buffer (2 bytes a sample of each component) */
  uint64_t coef = ci->progressive_mode ? (uint64_t) ci->image_width * ci->image_height
      * (uint64_t) ci->num_components * 2 : 0;
  GrStatus bst = gr_raster_budget_check (s->budget, "JPEG", ci->image_width,
      ci->image_height, false, coef, s->msg, sizeof s->msg);
  if (bst != GR_OK) {
    s->status = bst;
    return;
  }
  /* Huffman-coded data spends at least one bit per MCU (a DC code); a header that
   * declares more MCUs than the file has bits (with a margin of 2) is a truncated or
   * forged file: refused before libjpeg allocates whole-image buffers (progressive
   * files) or the plane is made */
  struct stat fst;
  if (!ci->arith_code && ci->max_h_samp_factor > 0 && fstat (fileno (s->fp), &fst) == 0) {
    unsigned mw = 8u * (unsigned) ci->max_h_samp_factor;
    unsigned long long mcus = (unsigned long long) ((ci->image_width + mw - 1) / mw) *
        ci->total_iMCU_rows;
    if ((unsigned long long) fst.st_size * 16 < mcus) {
      s->status = GR_ERR_FORMAT;
      snprintf (s->msg, sizeof s->msg, "truncated or corrupt JPEG: %u x %u pixels need "
          "at least %llu bytes of coded data, the file has %lld",
          (unsigned) ci->image_width, (unsigned) ci->image_height, mcus / 16,
          (long long) fst.st_size);
      return;
    }
  }
  jpeg_start_decompress (ci);
  if (s->err.warnings > 0)
    goto corrupt;               /* a progressive file's scans are read above */
  int w = (int) ci->output_width, h = (int) ci->output_height, ch = ci->output_components;
  if (w <= 0 || h <= 0 || ch != bands) {
    s->status = GR_ERR_FORMAT;
    snprintf (s->msg, sizeof s->msg, "unsupported JPEG layout (%d x %d, %d components)",
        w, h, ch);
    return;
  }
  if (!gr_raster_plane_alloc (&out->plane, w, h, false)) {
    s->status = GR_ERR_NOMEM;
    snprintf (s->msg, sizeof s->msg, "cannot allocate %d x %d pixels", w, h);
    return;
  }
  out->bands = bands;
  out->bit_depth = 8;
  s->rowbuf = malloc ((size_t) w * (size_t) ch);
  if (!s->rowbuf) {
    s->status = GR_ERR_NOMEM;
    snprintf (s->msg, sizeof s->msg, "out of memory");
    return;
  }
  while (ci->output_scanline < ci->output_height) {
    JSAMPROW rp = s->rowbuf;
    size_t y = ci->output_scanline;
    if (jpeg_read_scanlines (ci, &rp, 1) != 1) {
      s->status = GR_ERR_FORMAT;
      snprintf (s->msg, sizeof s->msg, "JPEG decoding stopped at row %zu", y);
      return;
    }
    gr_raster_convert_row (s->rowbuf, w, ch, false, s->band,
        out->plane.data + y * (size_t) w, NULL);
    if (s->err.warnings > 0)
      goto corrupt;
  }
  jpeg_finish_decompress (ci);
  return;

corrupt:
  /* libjpeg would go on filling the missing rows with gray, for the whole declared
   * size; the file is refused anyway (load_jpeg): stop at the first warning */
  s->status = GR_ERR_FORMAT;
  snprintf (s->msg, sizeof s->msg, "corrupt or truncated JPEG: %s", s->err.warning);
}

static int
jpeg_read_guarded (JpegRead *s)
{
  if (setjmp (s->err.jb))
    return -1;
  jpeg_read_body (s);
  return 0;
}

GrStatus
gr_raster_jpeg_read (const char *path, FILE *fp, int band, const GrRasterBudget *budget,
    GrRaster *out, char *errbuf, size_t errlen)
{
  JpegRead s;
  memset (&s, 0, sizeof s);
  s.fp = fp;
  s.band = band;
  s.budget = budget;
  s.out = out;
  s.status = GR_OK;
  s.cinfo.err = jpeg_std_error (&s.err.pub);
  s.err.pub.error_exit = jpeg_error_exit_cb;
  s.err.pub.emit_message = jpeg_emit_message_cb;
  s.err.pub.output_message = jpeg_output_message_cb;
  int jumped = jpeg_read_guarded (&s);
  if (s.created)
    jpeg_destroy_decompress (&s.cinfo);
  free (s.rowbuf);
  if (jumped) {
    gr_set_err (errbuf, errlen, "'%s': corrupt JPEG: %s", path, s.err.msg);
    return GR_ERR_FORMAT;
  }
  if (s.status != GR_OK) {
    gr_set_err (errbuf, errlen, "'%s': %s", path, s.msg);
    return s.status;
  }
  if (s.err.warnings > 0) {
    /* libjpeg fills what it could not decode with gray: refuse rather than register
     * against invented pixels. */
    gr_set_err (errbuf, errlen, "'%s': corrupt or truncated JPEG: %s", path, s.err.warning);
    return GR_ERR_FORMAT;
  }
  snprintf (out->driver, sizeof out->driver, "jpeg");
  return GR_OK;
}
