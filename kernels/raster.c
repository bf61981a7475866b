/* Control imagery from files.
 *
 * With GDAL (GR_HAVE_GDAL): any raster GDAL reads, the chosen band (or the BT.601
 * luminance of bands 1-3) as float, GDAL's mask bands (nodata, alpha, internal masks)
 * as the validity mask, palettes expanded through their colour table, the
 * geotransform from GDAL or, failing that, from a world file beside the image.
 *
 * Built-in (always compiled; the loader when GDAL is absent): PNG through libpng and
 * JPEG through libjpeg, with a world file.  Decoder errors are caught with the
 * libraries' longjmp handlers; the setjmp sits in a small guard function and all the
 * decoder state lives in the caller's frame, so nothing is indeterminate after a jump.
 *
 * Both loaders give the same planes for the same PNG: same luminance expression, masks
 * 0/255 and dropped (NULL) when every pixel is valid.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "raster.h"
#include "raster_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <glib.h>
#include <png.h>
#include <jpeglib.h>

#if GR_HAVE_GDAL
#include <pthread.h>
#include <gdal.h>
#include <cpl_error.h>
#include <cpl_conv.h>
#include <cpl_string.h>
#include <cpl_vsi.h>
#endif

#define MASK_VALID 255

/* BT.601 luma; both loaders use exactly this expression so they agree bit for bit. */
static inline float
luma601 (double r, double g, double b)
{
  return (float) (0.299 * r + 0.587 * g + 0.114 * b);
}

static void
raster_init (GrRaster *r)
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
  raster_init (r);
}

/* Frees the mask when every pixel is valid. */
static void
mask_drop_if_all_valid (GrPlaneF *p)
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

static bool
plane_alloc (GrPlaneF *p, int w, int h, bool with_mask)
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

static bool
is_regular_file (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0 && S_ISREG (st.st_mode);
}

/* Checks that a local path can be opened for reading: GR_ERR_IO with strerror if not. */
static GrStatus
check_readable (const char *path, char *errbuf, size_t errlen)
{
  struct stat st;
  if (stat (path, &st) != 0) {
    gr_set_err (errbuf, errlen, "cannot open '%s': %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  if (S_ISDIR (st.st_mode)) {
    gr_set_err (errbuf, errlen, "cannot open '%s': %s", path, strerror (EISDIR));
    return GR_ERR_IO;
  }
  FILE *f = fopen (path, "rb");
  if (!f) {
    gr_set_err (errbuf, errlen, "cannot open '%s': %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  fclose (f);
  return GR_OK;
}

/* ------------------------------------------------------------------ world files */

void
gr_geo_apply (const double geo[6], double px, double py, double *mx, double *my)
{
  double x = geo[0] + px * geo[1] + py * geo[2];
  double y = geo[3] + px * geo[4] + py * geo[5];
  if (mx)
    *mx = x;
  if (my)
    *my = y;
}

/* A geotransform the elements can use: six finite numbers and an invertible, finite
 * pixel-to-map matrix (NaN/Inf or overflowing values would turn every map position
 * in the results into NaN). */
static bool
geo_usable (const double g[6])
{
  for (int i = 0; i < 6; i++)
    if (!isfinite (g[i]))
      return false;
  double det = g[1] * g[5] - g[2] * g[4];
  return isfinite (det) && det != 0.0;
}

GrStatus
gr_world_file_read (const char *path, double geo[6], char *errbuf, size_t errlen)
{
  if (!path || !geo) {
    gr_set_err (errbuf, errlen, "gr_world_file_read: NULL argument");
    return GR_ERR_INVALID;
  }
  FILE *f = fopen (path, "rb");
  if (!f) {
    gr_set_err (errbuf, errlen, "cannot open '%s': %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  char buf[4096];
  size_t n = fread (buf, 1, sizeof buf - 1, f);
  if (ferror (f)) {
    int e = errno;
    fclose (f);
    gr_set_err (errbuf, errlen, "cannot read '%s': %s", path, strerror (e ? e : EIO));
    return GR_ERR_IO;
  }
  bool more = (n == sizeof buf - 1) && fgetc (f) != EOF;
  fclose (f);
  if (more) {
    gr_set_err (errbuf, errlen, "'%s': too large for a world file (6 numbers expected)", path);
    return GR_ERR_FORMAT;
  }
  buf[n] = '\0';
  if (memchr (buf, '\0', n)) {
    gr_set_err (errbuf, errlen, "'%s': binary data, not a world file", path);
    return GR_ERR_FORMAT;
  }

  const char *p = buf;
  if (n >= 3 && (unsigned char) p[0] == 0xEF && (unsigned char) p[1] == 0xBB
      && (unsigned char) p[2] == 0xBF)
    p += 3;                     /* UTF-8 byte order mark */
  double v[6];
  int count = 0;
  for (;;) {
    while (*p && isspace ((unsigned char) *p))
      p++;
    if (!*p)
      break;
    const char *tok = p;
    size_t toklen = 0;
    while (tok[toklen] && !isspace ((unsigned char) tok[toklen]))
      toklen++;
    if (count == 6) {
      gr_set_err (errbuf, errlen, "'%s': more than 6 values in a world file", path);
      return GR_ERR_FORMAT;
    }
    char *end = NULL;
    double d = g_ascii_strtod (tok, &end);
    if (end != tok + toklen || toklen == 0) {
      gr_set_err (errbuf, errlen, "'%s': value %d of the world file ('%.*s') is not a number",
          path, count + 1, (int) (toklen > 40 ? 40 : toklen), tok);
      return GR_ERR_FORMAT;
    }
    if (!isfinite (d)) {
      gr_set_err (errbuf, errlen, "'%s': value %d of the world file is not finite",
          path, count + 1);
      return GR_ERR_FORMAT;
    }
    v[count++] = d;
    p = tok + toklen;
  }
  if (count < 6) {
    gr_set_err (errbuf, errlen, "'%s': %d value(s) in the world file, 6 expected", path, count);
    return GR_ERR_FORMAT;
  }
  /* A D B E C F: x pixel size, rotation terms, y pixel size, centre of pixel (0,0) */
  double A = v[0], D = v[1], B = v[2], E = v[3], C = v[4], F = v[5];
  if (A * E - B * D == 0.0) {
    gr_set_err (errbuf, errlen, "'%s': degenerate world file (zero pixel size)", path);
    return GR_ERR_FORMAT;
  }
  double g[6] = { C - A / 2 - B / 2, A, B, F - D / 2 - E / 2, D, E };
  if (!geo_usable (g)) {
    gr_set_err (errbuf, errlen, "'%s': world file values out of range (the pixel corners "
        "or the pixel size overflow)", path);
    return GR_ERR_FORMAT;
  }
  memcpy (geo, g, sizeof g);
  return GR_OK;
}

static char *
str_concat (const char *a, size_t alen, const char *b)
{
  size_t blen = strlen (b);
  char *s = malloc (alen + blen + 1);
  if (!s)
    return NULL;
  memcpy (s, a, alen);
  memcpy (s + alen, b, blen + 1);
  return s;
}

char *
gr_world_file_find (const char *path)
{
  if (!path || !*path)
    return NULL;
  size_t len = strlen (path);
  const char *slash = strrchr (path, '/');
  const char *base = slash ? slash + 1 : path;
  const char *dot = strrchr (base, '.');
  if (dot == base)
    dot = NULL;                 /* ".hidden" has no extension */
  size_t stem_len = dot ? (size_t) (dot - path) : len;
  const char *ext = dot ? dot + 1 : "";
  size_t ext_len = strlen (ext);
  bool upper = ext_len > 0 && isupper ((unsigned char) ext[ext_len - 1]);

  char *cand[4] = { NULL, NULL, NULL, NULL };
  int nc = 0;
  if (ext_len > 0) {
    char sfx[5] = { '.', ext[0], ext[ext_len - 1], upper ? 'W' : 'w', '\0' };
    cand[nc++] = str_concat (path, stem_len, sfx);
    cand[nc++] = str_concat (path, len, upper ? "W" : "w");
  }
  cand[nc++] = str_concat (path, stem_len, upper ? ".WLD" : ".wld");
  cand[nc++] = str_concat (path, stem_len, upper ? ".TFW" : ".tfw");

  char *found = NULL;
  for (int i = 0; i < nc; i++) {
    if (!found && cand[i] && strcmp (cand[i], path) != 0 && is_regular_file (cand[i]))
      found = cand[i];
    else
      free (cand[i]);
  }
  return found;
}

/* Reads the world file wf (found beside the image path) into r->geo.  A world file
 * that exists but cannot be used is an error: a silent loss of georeferencing would be
 * worse. */
static GrStatus
apply_world_file (const char *path, const char *wf, GrRaster *r, char *errbuf, size_t errlen)
{
  double geo[6];
  char why[1024] = "";
  GrStatus st = gr_world_file_read (wf, geo, why, sizeof why);
  if (st != GR_OK) {
    gr_set_err (errbuf, errlen, "'%s': bad world file: %s", path, why);
    return GR_ERR_FORMAT;
  }
  memcpy (r->geo, geo, sizeof geo);
  r->has_geo = true;
  return GR_OK;
}

static GrStatus
load_world_file (const char *path, GrRaster *r, char *errbuf, size_t errlen)
{
  char *wf = gr_world_file_find (path);
  if (!wf)
    return GR_OK;
  GrStatus st = apply_world_file (path, wf, r, errbuf, errlen);
  free (wf);
  return st;
}

/* -------------------------------------------------------------- built-in: PNG */

/* Converts one decoded row (8 or 16 bit, 1..4 channels) to the chosen band. */
static void
convert_row (const uint8_t *row, int w, int ch, bool b16, int band, float *dst,
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
      dst[x] = luma601 (s[0], s[1], s[2]);
    else
      dst[x] = (float) s[src];
    if (mask)
      mask[x] = (alpha >= 0 && s[alpha] != 0.0) ? MASK_VALID : 0;
  }
}

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
png_warning_cb (png_structp png, png_const_charp msg)
{
  (void) png;
  (void) msg;                   /* ancillary-chunk warnings: not worth failing a load */
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
  if (!plane_alloc (&out->plane, (int) w, (int) h, has_alpha)) {
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
      convert_row (row, (int) w, pch, bd == 16, s->band,
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
      convert_row (row, (int) w, pch, bd == 16, s->band,
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

static GrStatus
load_png (const char *path, FILE *fp, int band, GrRaster *out, char *errbuf, size_t errlen)
{
  PngRead s;
  memset (&s, 0, sizeof s);
  s.path = path;
  s.fp = fp;
  s.band = band;
  s.out = out;
  s.status = GR_OK;
  s.png = png_create_read_struct (PNG_LIBPNG_VER_STRING, &s, png_error_cb, png_warning_cb);
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

/* ------------------------------------------------------------- built-in: JPEG */

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
  if (!plane_alloc (&out->plane, w, h, false)) {
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
    convert_row (s->rowbuf, w, ch, false, s->band, out->plane.data + y * (size_t) w, NULL);
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

static GrStatus
load_jpeg (const char *path, FILE *fp, int band, GrRaster *out, char *errbuf, size_t errlen)
{
  JpegRead s;
  memset (&s, 0, sizeof s);
  s.fp = fp;
  s.band = band;
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

GrStatus
gr_raster_load_builtin (const char *path, int band, GrRaster *out, char *errbuf, size_t errlen)
{
  if (!out) {
    gr_set_err (errbuf, errlen, "gr_raster_load: NULL output");
    return GR_ERR_INVALID;
  }
  raster_init (out);
  if (!path) {
    gr_set_err (errbuf, errlen, "gr_raster_load: NULL path");
    return GR_ERR_INVALID;
  }
  GrStatus st = check_readable (path, errbuf, errlen);
  if (st != GR_OK)
    return st;
  FILE *fp = fopen (path, "rb");
  if (!fp) {
    gr_set_err (errbuf, errlen, "cannot open '%s': %s", path, strerror (errno));
    return GR_ERR_IO;
  }
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
    st = load_png (path, fp, band, out, errbuf, errlen);
  } else if (n >= 3 && sig[0] == 0xFF && sig[1] == 0xD8 && sig[2] == 0xFF) {
    st = load_jpeg (path, fp, band, out, errbuf, errlen);
  } else {
    st = GR_ERR_FORMAT;
    gr_set_err (errbuf, errlen, "'%s': not a PNG or JPEG file%s", path,
        GR_HAVE_GDAL ? "" : " (built without GDAL: only PNG and JPEG are read)");
  }
  fclose (fp);
  if (st == GR_OK)
    st = load_world_file (path, out, errbuf, errlen);
  if (st == GR_OK)
    mask_drop_if_all_valid (&out->plane);
  else
    gr_raster_clear (out);
  return st;
}

/* --------------------------------------------------------------------- GDAL */

#if GR_HAVE_GDAL

static pthread_once_t gdal_once = PTHREAD_ONCE_INIT;

static void
gdal_init (void)
{
  GDALAllRegister ();
}

typedef struct {
  char failure[512];            /* first CE_Failure/CE_Fatal message */
  bool have_failure;
} GdalErrs;

static void CPL_STDCALL
gdal_error_cb (CPLErr cls, CPLErrorNum num, const char *msg)
{
  (void) num;
  GdalErrs *e = CPLGetErrorHandlerUserData ();
  if (!e || cls < CE_Failure || e->have_failure)
    return;                     /* warnings and debug output are swallowed */
  snprintf (e->failure, sizeof e->failure, "%s", msg ? msg : "GDAL error");
  e->have_failure = true;
}

#define STRIP_ROWS 64

static GrStatus
gdal_read (GDALDatasetH ds, const char *path, int band, GrRaster *out, GdalErrs *errs,
    char *errbuf, size_t errlen)
{
  GrStatus st = GR_OK;
  int w = GDALGetRasterXSize (ds), h = GDALGetRasterYSize (ds);
  int n = GDALGetRasterCount (ds);
  GDALRasterBandH *data = NULL;
  float *tmp = NULL;
  uint8_t *mtmp = NULL;

  if (n < 1 || w <= 0 || h <= 0) {
    gr_set_err (errbuf, errlen, "'%s': no raster data (%d x %d, %d bands)", path, w, h, n);
    return GR_ERR_FORMAT;
  }
  data = malloc (sizeof *data * (size_t) n);
  if (!data) {
    gr_set_err (errbuf, errlen, "'%s': out of memory", path);
    return GR_ERR_NOMEM;
  }
  int nb = 0;
  for (int i = 1; i <= n; i++) {
    GDALRasterBandH b = GDALGetRasterBand (ds, i);
    if (b && GDALGetRasterColorInterpretation (b) != GCI_AlphaBand)
      data[nb++] = b;
  }
  if (nb == 0) {
    free (data);
    gr_set_err (errbuf, errlen, "'%s': only an alpha band, no data band", path);
    return GR_ERR_FORMAT;
  }
  GDALDataType dt = GDALGetRasterDataType (data[0]);
  if (GDALDataTypeIsComplex (dt)) {
    free (data);
    gr_set_err (errbuf, errlen, "'%s': complex-valued rasters are not supported", path);
    return GR_ERR_FORMAT;
  }

  /* A palette band is expanded through its colour table, like the PNG loader does. */
  GDALColorTableH ct = NULL;
  GDALPaletteInterp pi = GPI_RGB;
  if (nb == 1 && GDALGetRasterColorInterpretation (data[0]) == GCI_PaletteIndex) {
    ct = GDALGetRasterColorTable (data[0]);
    if (ct) {
      pi = GDALGetPaletteInterpretation (ct);
      if (pi != GPI_RGB && pi != GPI_Gray)
        ct = NULL;              /* CMYK/HLS tables: keep the raw indices */
    }
  }
  int bands = ct ? (pi == GPI_RGB ? 3 : 1) : nb;
  if (band < 0 || band > bands) {
    free (data);
    gr_set_err (errbuf, errlen, "'%s': band %d out of range (the file has %d band%s)", path,
        band, bands, bands == 1 ? "" : "s");
    return GR_ERR_FORMAT;
  }

  int bit_depth;
  if (ct || dt == GDT_Byte)
    bit_depth = 8;
  else if (dt == GDT_UInt16 || dt == GDT_Int16)
    bit_depth = 16;
  else
    bit_depth = GDALGetDataTypeSizeBits (dt);
  bool is_float = dt == GDT_Float32 || dt == GDT_Float64;

  /* source bands: 1 (a band, or a palette index) or 3 (luminance) */
  GDALRasterBandH src[3];
  int nsrc = 1;
  if (ct) {
    src[0] = data[0];
  } else if (band == 0 && bands >= 3) {
    src[0] = data[0];
    src[1] = data[1];
    src[2] = data[2];
    nsrc = 3;
  } else {
    src[0] = data[band == 0 ? 0 : band - 1];
  }
  free (data);
  data = NULL;

  /* A raster whose blocks are all missing (a sparse file, or a header whose strip
   * tables were lost) would be read in full as zeros: a 179-byte TIFF claiming 65286 x
   * 3149 x 65 bands cost 6 s and 1.7 GB (found by fuzz_raster_gdal).  Nothing in it
   * can be registered against: refused before the planes are allocated. */
  double covered = 0.0;
  if (GDALGetDataCoverageStatus (src[0], 0, 0, w, h, 0, &covered) ==
      GDAL_DATA_COVERAGE_STATUS_EMPTY) {
    gr_set_err (errbuf, errlen, "'%s': no pixel data in the file (%d x %d declared, every "
        "block missing)", path, w, h);
    return GR_ERR_FORMAT;
  }

  /* The first strip is read before the planes are allocated: a truncated or forged
   * file (a 740-byte JPEG claiming 15000 x 15000) fails here, having cost one strip,
   * not a full-size plane (which the allocator may touch: MALLOC_PERTURB_, sanitizers). */
  {
    int rows = h < STRIP_ROWS ? h : STRIP_ROWS;
    float *probe = malloc (sizeof (float) * (size_t) w * (size_t) rows);
    if (!probe) {
      gr_set_err (errbuf, errlen, "'%s': out of memory", path);
      return GR_ERR_NOMEM;
    }
    CPLErr pe = GDALRasterIO (src[0], GF_Read, 0, 0, w, rows, probe, w, rows, GDT_Float32,
        0, 0);
    free (probe);
    if (pe != CE_None) {
      gr_set_err (errbuf, errlen, "'%s': read failed at rows 0-%d: %s", path, rows - 1,
          errs->have_failure ? errs->failure : "GDAL read error");
      return GR_ERR_FORMAT;
    }
  }

  /* low-bit data (NBITS 1..7, e.g. a 2-bit gray PNG) is stretched to 0..255, as libpng
   * expands it, so both loaders agree */
  double nscale = 0.0;
  if (!ct && dt == GDT_Byte) {
    const char *nbits = GDALGetMetadataItem (src[0], "NBITS", "IMAGE_STRUCTURE");
    int nbi = nbits ? atoi (nbits) : 8;
    if (nbi >= 1 && nbi < 8)
      nscale = 255.0 / (double) ((1 << nbi) - 1);
  }

  /* mask bands of the source bands (one per dataset when the mask is per dataset) */
  GDALRasterBandH mband[3];
  int nmask = 0;
  bool per_dataset_done = false;
  for (int i = 0; i < nsrc; i++) {
    int flags = GDALGetMaskFlags (src[i]);
    if (flags & GMF_ALL_VALID)
      continue;
    if (flags & GMF_PER_DATASET) {
      if (per_dataset_done)
        continue;
      per_dataset_done = true;
    }
    GDALRasterBandH m = GDALGetMaskBand (src[i]);
    if (m)
      mband[nmask++] = m;
  }

  /* colour table lookups: value of the chosen band (or luminance) and validity */
  float *ct_val = NULL;
  uint8_t *ct_ok = NULL;
  int ct_count = 0;
  if (ct) {
    ct_count = GDALGetColorEntryCount (ct);
    ct_val = malloc (sizeof (float) * (size_t) (ct_count > 0 ? ct_count : 1));
    ct_ok = malloc ((size_t) (ct_count > 0 ? ct_count : 1));
    if (!ct_val || !ct_ok) {
      st = GR_ERR_NOMEM;
      gr_set_err (errbuf, errlen, "'%s': out of memory", path);
      goto done;
    }
    for (int k = 0; k < ct_count; k++) {
      GDALColorEntry e;
      GDALGetColorEntryAsRGB (ct, k, &e);
      if (pi == GPI_Gray)
        ct_val[k] = (float) e.c1;
      else if (band == 0)
        ct_val[k] = luma601 (e.c1, e.c2, e.c3);
      else
        ct_val[k] = (float) (band == 1 ? e.c1 : band == 2 ? e.c2 : e.c3);
      ct_ok[k] = e.c4 != 0 ? MASK_VALID : 0;
    }
  }

  if (!plane_alloc (&out->plane, w, h, true)) {
    st = GR_ERR_NOMEM;
    gr_set_err (errbuf, errlen, "'%s': cannot allocate %d x %d pixels", path, w, h);
    goto done;
  }
  if (nsrc == 3)
    tmp = malloc (sizeof (float) * 2 * (size_t) w * STRIP_ROWS);
  if (nmask > 1)
    mtmp = malloc ((size_t) w * STRIP_ROWS);
  if ((nsrc == 3 && !tmp) || (nmask > 1 && !mtmp)) {
    st = GR_ERR_NOMEM;
    gr_set_err (errbuf, errlen, "'%s': out of memory", path);
    goto done;
  }

  for (int y0 = 0; y0 < h; y0 += STRIP_ROWS) {
    int rows = h - y0 < STRIP_ROWS ? h - y0 : STRIP_ROWS;
    size_t np = (size_t) w * (size_t) rows;
    float *dst = out->plane.data + (size_t) y0 * (size_t) w;
    uint8_t *mdst = out->plane.mask + (size_t) y0 * (size_t) w;
    CPLErr e = GDALRasterIO (src[0], GF_Read, 0, y0, w, rows, dst, w, rows, GDT_Float32, 0, 0);
    if (e == CE_None && nsrc == 3)
      e = GDALRasterIO (src[1], GF_Read, 0, y0, w, rows, tmp, w, rows, GDT_Float32, 0, 0);
    if (e == CE_None && nsrc == 3)
      e = GDALRasterIO (src[2], GF_Read, 0, y0, w, rows, tmp + np, w, rows, GDT_Float32, 0, 0);
    if (nmask == 0)
      memset (mdst, MASK_VALID, np);
    else if (e == CE_None)
      e = GDALRasterIO (mband[0], GF_Read, 0, y0, w, rows, mdst, w, rows, GDT_Byte, 0, 0);
    for (int m = 1; e == CE_None && m < nmask; m++) {
      e = GDALRasterIO (mband[m], GF_Read, 0, y0, w, rows, mtmp, w, rows, GDT_Byte, 0, 0);
      for (size_t i = 0; e == CE_None && i < np; i++)
        if (!mtmp[i])
          mdst[i] = 0;
    }
    if (e != CE_None) {
      st = GR_ERR_FORMAT;
      gr_set_err (errbuf, errlen, "'%s': read failed at rows %d-%d: %s", path, y0,
          y0 + rows - 1, errs->have_failure ? errs->failure : "GDAL read error");
      goto done;
    }
    for (size_t i = 0; i < np; i++) {
      uint8_t ok = mdst[i] ? MASK_VALID : 0;
      if (nscale != 0.0) {
        dst[i] = (float) rint (dst[i] * nscale);
        if (nsrc == 3) {
          tmp[i] = (float) rint (tmp[i] * nscale);
          tmp[np + i] = (float) rint (tmp[np + i] * nscale);
        }
      }
      if (nsrc == 3) {
        dst[i] = luma601 (dst[i], tmp[i], tmp[np + i]);
      } else if (ct) {
        float v = dst[i];
        int k = (int) v;
        if (v >= 0 && k < ct_count) {
          dst[i] = ct_val[k];
          if (!ct_ok[k])
            ok = 0;
        } else {
          dst[i] = 0;
          ok = 0;
        }
      }
      if (is_float && !isfinite (dst[i]))
        ok = 0;
      mdst[i] = ok;
    }
  }
  out->bands = bands;
  out->bit_depth = bit_depth;

done:
  free (ct_val);
  free (ct_ok);
  free (tmp);
  free (mtmp);
  return st;
}

static const char *
base_name (const char *p)
{
  const char *s = strrchr (p, '/');
  return s ? s + 1 : p;
}

/* Whether GDAL lists the file wf among the dataset's files (sidecars it used). */
static bool
file_list_has (GDALDatasetH ds, const char *wf)
{
  char **files = GDALGetFileList (ds);
  bool found = false;
  for (int i = 0; files && files[i] && !found; i++)
    found = strcmp (base_name (files[i]), base_name (wf)) == 0;
  CSLDestroy (files);
  return found;
}

static GrStatus
load_gdal (const char *path, int band, GrRaster *out, char *errbuf, size_t errlen)
{
  pthread_once (&gdal_once, gdal_init);

  if (strncmp (path, "/vsi", 4) != 0) {
    GrStatus st = check_readable (path, errbuf, errlen);
    if (st != GR_OK)
      return st;
  } else {
    errno = 0;
    VSILFILE *vf = VSIFOpenL (path, "rb");
    if (!vf) {
      gr_set_err (errbuf, errlen, "cannot open '%s': %s", path,
          errno ? strerror (errno) : "not found");
      return GR_ERR_IO;
    }
    VSIFCloseL (vf);
  }

  GdalErrs errs;
  memset (&errs, 0, sizeof errs);
  CPLPushErrorHandlerEx (gdal_error_cb, &errs);
  /* libjpeg warnings (truncated or corrupt data, filled with gray) become errors, as in
   * the built-in loader.  Thread-local: other GDAL users in the process are untouched. */
  const char *prev_opt = CPLGetThreadLocalConfigOption ("GDAL_ERROR_ON_LIBJPEG_WARNING", NULL);
  char *prev = prev_opt ? strdup (prev_opt) : NULL;
  CPLSetThreadLocalConfigOption ("GDAL_ERROR_ON_LIBJPEG_WARNING", "TRUE");
  GrStatus st = GR_OK;
  GDALDatasetH ds = GDALOpenEx (path, GDAL_OF_RASTER | GDAL_OF_READONLY
      | GDAL_OF_VERBOSE_ERROR, NULL, NULL, NULL);
  if (!ds) {
    st = GR_ERR_FORMAT;
    gr_set_err (errbuf, errlen, "'%s': GDAL cannot read it: %s", path,
        errs.have_failure ? errs.failure : "unsupported format");
  } else {
    st = gdal_read (ds, path, band, out, &errs, errbuf, errlen);
    if (st == GR_OK) {
      double gt[6];
      static const double ident[6] = { 0, 1, 0, 0, 0, 1 };
      bool gdal_geo = GDALGetGeoTransform (ds, gt) == CE_None
          && memcmp (gt, ident, sizeof gt) != 0;
      /* GDAL reads world files leniently (a word becomes 0) and ignores some names
       * (.tfw beside a PNG): when the geotransform is GDAL's reading of our world
       * file, or GDAL has none, read the world file ourselves, so that both builds
       * agree and a malformed one is an error. */
      char *wf = strncmp (path, "/vsi", 4) != 0 ? gr_world_file_find (path) : NULL;
      if (wf && (!gdal_geo || file_list_has (ds, wf)))
        st = apply_world_file (path, wf, out, errbuf, errlen);
      free (wf);
      if (st == GR_OK && !out->has_geo && gdal_geo) {
        if (!geo_usable (gt)) {
          st = GR_ERR_FORMAT;
          gr_set_err (errbuf, errlen, "'%s': unusable geotransform (%g %g %g %g %g %g: not "
              "finite or not invertible)", path, gt[0], gt[1], gt[2], gt[3], gt[4], gt[5]);
        } else {
          memcpy (out->geo, gt, sizeof gt);
          out->has_geo = true;
        }
      }
      GDALDriverH drv = GDALGetDatasetDriver (ds);
      snprintf (out->driver, sizeof out->driver, "GDAL/%s",
          drv ? GDALGetDriverShortName (drv) : "?");
    }
    GDALClose (ds);
  }
  CPLSetThreadLocalConfigOption ("GDAL_ERROR_ON_LIBJPEG_WARNING", prev);
  free (prev);
  CPLPopErrorHandler ();
  return st;
}

/* PNG files that the built-in loader reads in GDAL builds too, so that both builds give
 * the same planes (or the same refusal):
 *  - GDAL before 3.10.1 returns byte-swapped samples for Adam7-interlaced 16-bit PNGs
 *    on little-endian hosts (fixed upstream by OSGeo/gdal PR 11553; Debian 12 ships
 *    3.6);
 *  - a gray or RGB tRNS colour out of range for the bit depth, which the built-in
 *    loader refuses as corrupt (GDAL would ignore it);
 *  - a header declaring more pixel data than the file can hold (refused by the
 *    built-in loader before any allocation).
 * The first two were found by fuzz_raster_gdal's comparison of the two loaders. */
static bool
gdal_png_to_builtin (const char *path)
{
  static int buggy = -1;
  if (buggy < 0) {
    const char *v = GDALVersionInfo ("VERSION_NUM");
    buggy = v && atoi (v) < 3100100;
  }
  if (strncmp (path, "/vsi", 4) == 0)
    return false;
  FILE *f = fopen (path, "rb");
  if (!f)
    return false;
  uint8_t h[29];
  bool to_builtin = false;
  /* signature, IHDR first: bit depth at byte 24, colour type at 25, interlace at 28 */
  if (fread (h, 1, sizeof h, f) == sizeof h && png_sig_cmp (h, 0, 8) == 0 &&
      memcmp (h + 12, "IHDR", 4) == 0) {
    int depth = h[24], ctype = h[25];
    to_builtin = buggy && depth == 16 && h[28] == 1;
    /* more pixel data declared than the file can hold: the built-in loader refuses it
     * before allocating (GDAL would allocate the planes first) */
    uint32_t pw = ((uint32_t) h[16] << 24) | ((uint32_t) h[17] << 16) |
        ((uint32_t) h[18] << 8) | h[19];
    uint32_t ph = ((uint32_t) h[20] << 24) | ((uint32_t) h[21] << 16) |
        ((uint32_t) h[22] << 8) | h[23];
    int chans = ctype == 4 ? 2 : ctype == 2 ? 3 : ctype == 6 ? 4 : 1;
    struct stat fst;
    if (fstat (fileno (f), &fst) == 0 && pw <= 1000000 && ph <= 1000000 &&
        ((unsigned long long) pw * chans * depth + 7) / 8 * ph >
        1032ull * (unsigned long long) fst.st_size + 65536)
      to_builtin = true;
    /* the chunks before the image data: look for tRNS */
    long off = 33;
    for (int k = 0; k < 64 && !to_builtin && fseek (f, off, SEEK_SET) == 0; k++) {
      uint8_t c[14];
      size_t n = fread (c, 1, sizeof c, f);
      if (n < 8 || memcmp (c + 4, "IDAT", 4) == 0 || memcmp (c + 4, "IEND", 4) == 0)
        break;
      uint32_t len = ((uint32_t) c[0] << 24) | ((uint32_t) c[1] << 16) |
          ((uint32_t) c[2] << 8) | c[3];
      if (memcmp (c + 4, "tRNS", 4) == 0 && depth < 16 && (ctype == 0 || ctype == 2)) {
        unsigned maxv = (1u << depth) - 1;
        for (uint32_t i = 0; i + 1 < len && i + 1 < n - 8 && i < (ctype ? 6u : 2u); i += 2)
          if ((((unsigned) c[8 + i] << 8) | c[9 + i]) > maxv)
            to_builtin = true;
      }
      if (len > 0x7fffffffu - 12)
        break;
      off += 12 + (long) len;
    }
  }
  fclose (f);
  return to_builtin;
}

#endif /* GR_HAVE_GDAL */

GrStatus
gr_raster_load (const char *path, int band, GrRaster *out, char *errbuf, size_t errlen)
{
#if GR_HAVE_GDAL
  if (!out) {
    gr_set_err (errbuf, errlen, "gr_raster_load: NULL output");
    return GR_ERR_INVALID;
  }
  raster_init (out);
  if (!path) {
    gr_set_err (errbuf, errlen, "gr_raster_load: NULL path");
    return GR_ERR_INVALID;
  }
  if (gdal_png_to_builtin (path))
    return gr_raster_load_builtin (path, band, out, errbuf, errlen);
  GrStatus st = load_gdal (path, band, out, errbuf, errlen);
  if (st == GR_OK)
    mask_drop_if_all_valid (&out->plane);
  else
    gr_raster_clear (out);
  return st;
#else
  return gr_raster_load_builtin (path, band, out, errbuf, errlen);
#endif
}

/* ---------------------------------------------------------------- PNG writer */

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
      png_warning_cb);
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
    if (is_regular_file (path))
      remove (path);            /* no half-written PNG left behind */
    return GR_ERR_IO;
  }
  return GR_OK;
}
