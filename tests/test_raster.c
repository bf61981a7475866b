/* Tests of kernels/raster*.c: the decoding budget (a 30000 x 30000 PNG refused from its
 * header), FIFOs / devices / directories refused at once, PNG (gray 8/16/2-bit,
 * gray+alpha, RGBA, palette+tRNS, interlaced), JPEG, world files, geotransforms, GDAL vs the built-in loader on the same
 * files, GeoTIFF with nodata (GDAL builds), and the error paths.  Exit 0 = pass.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "raster.h"
#include "raster_internal.h"

#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <png.h>
#include <jpeglib.h>
#if GR_HAVE_GDAL
#include <gdal.h>
#include <cpl_conv.h>
#include <cpl_string.h>
#endif

static int failures;
static int checks;

#define CHECK(cond, ...) do {                                                   \
    checks++;                                                                   \
    if (!(cond)) {                                                              \
      failures++;                                                               \
      fprintf (stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
      fprintf (stderr, __VA_ARGS__);                                            \
      fputc ('\n', stderr);                                                     \
    }                                                                           \
  } while (0)

typedef GrStatus (*LoadFn) (const char *, int, GrRaster *, char *, size_t);

typedef struct {
  const char *name;
  LoadFn fn;
  bool gdal;
} Loader;

static const Loader loaders[] = {
  { "builtin", gr_raster_load_builtin, false },
#if GR_HAVE_GDAL
  { "gdal", gr_raster_load, true },
#endif
};
#define N_LOADERS ((int) (sizeof loaders / sizeof loaders[0]))

static char *tmpdir;

static char *
tpath (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

static void
write_bytes (const char *path, const void *data, size_t n)
{
  GError *err = NULL;
  if (!g_file_set_contents (path, data, (gssize) n, &err)) {
    fprintf (stderr, "cannot write %s: %s\n", path, err->message);
    exit (2);
  }
}

static void
write_text (const char *path, const char *text)
{
  write_bytes (path, text, strlen (text));
}

/* ------------------------------------------------------------ file writers */

typedef struct {
  int w, h;
  int color_type;               /* PNG_COLOR_TYPE_* */
  int depth;
  bool interlace;
  const uint8_t *rows;          /* packed PNG row data, big-endian for 16 bit */
  size_t rowbytes;
  const png_color *palette;
  int npalette;
  const png_byte *trns;
  int ntrns;
} PngSpec;

static void
write_png (const char *path, const PngSpec *s)
{
  FILE *fp = fopen (path, "wb");
  if (!fp) {
    perror (path);
    exit (2);
  }
  png_structp png = png_create_write_struct (PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct (png);
  if (setjmp (png_jmpbuf (png))) {
    fprintf (stderr, "libpng failed writing %s\n", path);
    exit (2);
  }
  png_init_io (png, fp);
  png_set_IHDR (png, info, (png_uint_32) s->w, (png_uint_32) s->h, s->depth, s->color_type,
      s->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
      PNG_FILTER_TYPE_DEFAULT);
  if (s->palette)
    png_set_PLTE (png, info, s->palette, s->npalette);
  if (s->trns)
    png_set_tRNS (png, info, s->trns, s->ntrns, NULL);
  png_write_info (png, info);
  png_bytep *rows = malloc (sizeof (png_bytep) * (size_t) s->h);
  for (int y = 0; y < s->h; y++)
    rows[y] = (png_bytep) (s->rows + (size_t) y * s->rowbytes);
  png_write_image (png, rows);
  png_write_end (png, NULL);
  png_destroy_write_struct (&png, &info);
  free (rows);
  fclose (fp);
}

static void
write_jpeg (const char *path, int w, int h, int comps, const uint8_t *pix, int quality)
{
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr jerr;
  FILE *fp = fopen (path, "wb");
  if (!fp) {
    perror (path);
    exit (2);
  }
  c.err = jpeg_std_error (&jerr);
  jpeg_create_compress (&c);
  jpeg_stdio_dest (&c, fp);
  c.image_width = (JDIMENSION) w;
  c.image_height = (JDIMENSION) h;
  c.input_components = comps;
  c.in_color_space = comps == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults (&c);
  jpeg_set_quality (&c, quality, TRUE);
  jpeg_start_compress (&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW r = (JSAMPROW) (pix + (size_t) c.next_scanline * (size_t) w * (size_t) comps);
    jpeg_write_scanlines (&c, &r, 1);
  }
  jpeg_finish_compress (&c);
  jpeg_destroy_compress (&c);
  fclose (fp);
}

/* ------------------------------------------------------------------ helpers */

static float
luma (double r, double g, double b)
{
  return (float) (0.299 * r + 0.587 * g + 0.114 * b);
}

static bool
geo_eq (const double a[6], const double b[6], double tol)
{
  for (int i = 0; i < 6; i++)
    if (fabs (a[i] - b[i]) > tol)
      return false;
  return true;
}

/* Loads path with loader L and band; prints and counts a failure when not GR_OK. */
static bool
load_ok (const Loader *L, const char *path, int band, GrRaster *r)
{
  char err[1024] = "";
  GrStatus st = L->fn (path, band, r, err, sizeof err);
  CHECK (st == GR_OK, "[%s] load '%s' band %d: status %d: %s", L->name, path, band, st, err);
  if (st == GR_OK) {
    CHECK (r->plane.data != NULL && r->plane.stride == (size_t) r->plane.width,
        "[%s] %s: plane layout", L->name, path);
  }
  return st == GR_OK;
}

/* Expects a failure with status `want` and a message naming the path. */
static void
load_fails (const Loader *L, const char *path, int band, GrStatus want, const char *what)
{
  GrRaster r;
  char err[1024] = "";
  memset (&r, 0x5A, sizeof r);  /* poison: the loader must reset it */
  GrStatus st = L->fn (path, band, &r, err, sizeof err);
  CHECK (st == want, "[%s] %s: status %d (%s), expected %d; message: %s", L->name, what, st,
      gr_status_string (st), want, err);
  CHECK (strstr (err, path) != NULL, "[%s] %s: message does not name the path: '%s'",
      L->name, what, err);
  CHECK (r.plane.data == NULL && r.plane.mask == NULL && !r.has_geo,
      "[%s] %s: output not cleared after failure", L->name, what);
  gr_raster_clear (&r);         /* must be harmless */
  printf ("  [%s] %s -> %s: %s\n", L->name, what, gr_status_string (st), err);
}

/* Both loaders must give identical rasters (apart from the driver name). */
static void
compare_loaders (const char *path, int band)
{
#if GR_HAVE_GDAL
  GrRaster a, b;
  if (!load_ok (&loaders[0], path, band, &a))
    return;
  if (!load_ok (&loaders[1], path, band, &b)) {
    gr_raster_clear (&a);
    return;
  }
  CHECK (a.plane.width == b.plane.width && a.plane.height == b.plane.height,
      "%s: sizes differ: builtin %dx%d, gdal %dx%d", path, a.plane.width, a.plane.height,
      b.plane.width, b.plane.height);
  CHECK (a.bands == b.bands, "%s: bands builtin %d gdal %d", path, a.bands, b.bands);
  CHECK (a.bit_depth == b.bit_depth, "%s: bit depth builtin %d gdal %d", path, a.bit_depth,
      b.bit_depth);
  CHECK (a.has_geo == b.has_geo && geo_eq (a.geo, b.geo, 1e-9),
      "%s: geotransforms differ (has_geo %d/%d)", path, a.has_geo, b.has_geo);
  CHECK ((a.plane.mask == NULL) == (b.plane.mask == NULL),
      "%s band %d: mask presence differs: builtin %s, gdal %s", path, band,
      a.plane.mask ? "mask" : "none", b.plane.mask ? "mask" : "none");
  if (a.plane.width == b.plane.width && a.plane.height == b.plane.height) {
    size_t n = (size_t) a.plane.width * (size_t) a.plane.height;
    size_t vdiff = 0, mdiff = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
      if (a.plane.data[i] != b.plane.data[i] && vdiff++ == 0)
        first = i;
      if (a.plane.mask && b.plane.mask && a.plane.mask[i] != b.plane.mask[i])
        mdiff++;
    }
    CHECK (vdiff == 0, "%s band %d: %zu values differ, first at %zu: builtin %g gdal %g",
        path, band, vdiff, first, a.plane.data[first], b.plane.data[first]);
    CHECK (mdiff == 0, "%s band %d: %zu mask values differ", path, band, mdiff);
  }
  gr_raster_clear (&a);
  gr_raster_clear (&b);
#else
  (void) path;
  (void) band;
#endif
}

static size_t
count_invalid (const GrPlaneF *p)
{
  if (!p->mask)
    return 0;
  size_t n = 0, total = (size_t) p->width * (size_t) p->height;
  for (size_t i = 0; i < total; i++)
    n += p->mask[i] == 0;
  return n;
}

/* -------------------------------------------------------------------- tests */

static void
test_world_files (void)
{
  printf ("world files\n");
  char err[1024];
  double geo[6];
  char *p = tpath ("plain.wld");
  write_text (p, "1.5\n0\n0\n-2.0\n100.75\n200.0\n");
  CHECK (gr_world_file_read (p, geo, err, sizeof err) == GR_OK, "%s", err);
  const double want[6] = { 100.0, 1.5, 0.0, 201.0, 0.0, -2.0 };
  CHECK (geo_eq (geo, want, 1e-12), "geo = %g %g %g %g %g %g", geo[0], geo[1], geo[2],
      geo[3], geo[4], geo[5]);
  double mx, my;
  gr_geo_apply (geo, 0.5, 0.5, &mx, &my);      /* centre of pixel (0,0) = C, F */
  CHECK (fabs (mx - 100.75) < 1e-12 && fabs (my - 200.0) < 1e-12, "centre (%g, %g)", mx, my);
  gr_geo_apply (geo, 3, 7, &mx, &my);
  CHECK (fabs (mx - 104.5) < 1e-12 && fabs (my - 187.0) < 1e-12, "corner (%g, %g)", mx, my);
  g_free (p);

  /* rotated, CRLF line ends, extra blank lines and a byte order mark */
  p = tpath ("rot.wld");
  write_text (p, "\xEF\xBB\xBF" "2\r\n0.5\r\n0.25\r\n-3\r\n10\r\n20\r\n\r\n");
  CHECK (gr_world_file_read (p, geo, err, sizeof err) == GR_OK, "%s", err);
  const double want2[6] = { 8.875, 2.0, 0.25, 21.25, 0.5, -3.0 };
  CHECK (geo_eq (geo, want2, 1e-12), "rot geo = %g %g %g %g %g %g", geo[0], geo[1], geo[2],
      geo[3], geo[4], geo[5]);
  gr_geo_apply (geo, 0.5, 0.5, &mx, &my);
  CHECK (fabs (mx - 10) < 1e-12 && fabs (my - 20) < 1e-12, "rot centre (%g, %g)", mx, my);
  gr_geo_apply (geo, 4, 2, &mx, &my);
  CHECK (fabs (mx - (8.875 + 8 + 0.5)) < 1e-12 && fabs (my - (21.25 + 2 - 6)) < 1e-12,
      "rot (4,2) -> (%g, %g)", mx, my);
  g_free (p);

  static const struct { const char *name, *text; } bad[] = {
    { "bad_word.wld", "1\n0\n0\nabc\n5\n6\n" },
    { "bad_short.wld", "1 0 0 -1 5\n" },
    { "bad_long.wld", "1 0 0 -1 5 6 7\n" },
    { "bad_comma.wld", "1,5\n0\n0\n-1\n5\n6\n" },
    { "bad_zero.wld", "0\n0\n0\n0\n5\n6\n" },
    { "bad_nan.wld", "1\n0\n0\n-1\nnan\n6\n" },
    { "bad_empty.wld", "" },
  };
  for (size_t i = 0; i < G_N_ELEMENTS (bad); i++) {
    p = tpath (bad[i].name);
    write_text (p, bad[i].text);
    err[0] = '\0';
    GrStatus st = gr_world_file_read (p, geo, err, sizeof err);
    CHECK (st == GR_ERR_FORMAT, "%s: status %d", bad[i].name, st);
    CHECK (strstr (err, p) != NULL, "%s: message lacks path: %s", bad[i].name, err);
    printf ("  %s -> %s\n", bad[i].name, err);
    g_free (p);
  }
  p = tpath ("missing.wld");
  err[0] = '\0';
  CHECK (gr_world_file_read (p, geo, err, sizeof err) == GR_ERR_IO, "missing world file");
  CHECK (strstr (err, p) != NULL, "missing world file message: %s", err);
  g_free (p);
}

/* 8-bit gray through gr_png_write_gray8 (stride > width), plus a .pgw world file */
static void
test_gray8 (void)
{
  printf ("gray8 png (gr_png_write_gray8)\n");
  const int w = 37, h = 23, stride = 40;
  uint8_t *pix = malloc ((size_t) stride * h);
  memset (pix, 0xEE, (size_t) stride * h);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      pix[y * stride + x] = (uint8_t) ((x * 7 + y * 13 + 3) & 255);
  char *p = tpath ("gray8.png");
  char err[1024] = "";
  CHECK (gr_png_write_gray8 (p, pix, w, h, stride, err, sizeof err) == GR_OK, "%s", err);

  for (int li = 0; li < N_LOADERS; li++) {
    const Loader *L = &loaders[li];
    for (int band = 0; band <= 1; band++) {
      GrRaster r;
      if (!load_ok (L, p, band, &r))
        continue;
      CHECK (r.plane.width == w && r.plane.height == h, "[%s] size %dx%d", L->name,
          r.plane.width, r.plane.height);
      CHECK (r.bands == 1 && r.bit_depth == 8, "[%s] bands %d depth %d", L->name, r.bands,
          r.bit_depth);
      CHECK (r.plane.mask == NULL, "[%s] gray8 should have no mask", L->name);
      CHECK (!r.has_geo, "[%s] gray8 without world file has geo", L->name);
      CHECK (strcmp (r.driver, L->gdal ? "GDAL/PNG" : "png") == 0, "[%s] driver '%s'",
          L->name, r.driver);
      int bad = 0;
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
          bad += r.plane.data[(size_t) y * w + x] != (float) pix[y * stride + x];
      CHECK (bad == 0, "[%s] band %d: %d wrong pixels", L->name, band, bad);
      gr_raster_clear (&r);
      CHECK (r.plane.data == NULL, "[%s] clear", L->name);
    }
    load_fails (L, p, 2, GR_ERR_FORMAT, "gray8 band 2");
    load_fails (L, p, -1, GR_ERR_FORMAT, "gray8 band -1");
  }
  compare_loaders (p, 0);

  /* the same image with a .pgw */
  char *p2 = tpath ("gray8w.png");
  CHECK (gr_png_write_gray8 (p2, pix, w, h, stride, err, sizeof err) == GR_OK, "%s", err);
  char *wf = tpath ("gray8w.pgw");
  write_text (wf, "0.5\n0.0\n0.0\n-0.5\n1000.25\n2000.25\n");
  char *found = gr_world_file_find (p2);
  CHECK (found && strcmp (found, wf) == 0, "world file found: %s", found ? found : "(none)");
  free (found);
  const double want[6] = { 1000.0, 0.5, 0.0, 2000.5, 0.0, -0.5 };
  for (int li = 0; li < N_LOADERS; li++) {
    GrRaster r;
    if (!load_ok (&loaders[li], p2, 0, &r))
      continue;
    CHECK (r.has_geo && geo_eq (r.geo, want, 1e-9), "[%s] .pgw geo %g %g %g %g %g %g",
        loaders[li].name, r.geo[0], r.geo[1], r.geo[2], r.geo[3], r.geo[4], r.geo[5]);
    double mx, my;
    gr_geo_apply (r.geo, w, h, &mx, &my);
    CHECK (fabs (mx - (1000.0 + 0.5 * w)) < 1e-9 && fabs (my - (2000.5 - 0.5 * h)) < 1e-9,
        "[%s] bottom-right corner (%g, %g)", loaders[li].name, mx, my);
    gr_raster_clear (&r);
  }
  compare_loaders (p2, 0);
  g_free (wf);
  g_free (p2);
  g_free (p);
  free (pix);
}

/* 16-bit gray with a .pngw world file */
static void
test_gray16 (void)
{
  printf ("gray16 png\n");
  const int w = 19, h = 11;
  uint16_t *v = malloc (sizeof (uint16_t) * w * h);
  uint8_t *rows = malloc ((size_t) w * h * 2);
  for (int i = 0; i < w * h; i++)
    v[i] = (uint16_t) ((i * 3001u + 5u) % 65536u);
  v[0] = 65535;
  v[1] = 0;
  v[2] = 256;
  v[3] = 1;
  for (int i = 0; i < w * h; i++) {
    rows[2 * i] = (uint8_t) (v[i] >> 8);
    rows[2 * i + 1] = (uint8_t) (v[i] & 255);
  }
  char *p = tpath ("gray16.png");
  PngSpec s = { w, h, PNG_COLOR_TYPE_GRAY, 16, false, rows, (size_t) w * 2, NULL, 0, NULL, 0 };
  write_png (p, &s);
  char *wf = tpath ("gray16.pngw");
  write_text (wf, "30\n0\n0\n-30\n500015\n4100015\n");
  const double want[6] = { 500000, 30, 0, 4100030, 0, -30 };
  for (int li = 0; li < N_LOADERS; li++) {
    GrRaster r;
    if (!load_ok (&loaders[li], p, 0, &r))
      continue;
    CHECK (r.plane.width == w && r.plane.height == h, "size");
    CHECK (r.bands == 1 && r.bit_depth == 16, "[%s] bands %d depth %d", loaders[li].name,
        r.bands, r.bit_depth);
    CHECK (r.plane.mask == NULL, "[%s] no mask expected", loaders[li].name);
    int bad = 0;
    for (int i = 0; i < w * h; i++)
      bad += r.plane.data[i] != (float) v[i];
    CHECK (bad == 0, "[%s] %d wrong 16-bit values (first %g, want 65535)", loaders[li].name,
        bad, r.plane.data[0]);
    CHECK (r.has_geo && geo_eq (r.geo, want, 1e-9), "[%s] .pngw geo", loaders[li].name);
    gr_raster_clear (&r);
  }
  compare_loaders (p, 0);
  compare_loaders (p, 1);
  g_free (wf);
  g_free (p);
  free (rows);
  free (v);
}

static bool
in_hole (int x, int y)
{
  return x >= 5 && x <= 8 && y >= 4 && y <= 9;
}

/* RGBA 8-bit with an alpha hole and a .wld world file; also 16-bit RGBA. */
static void
test_rgba (void)
{
  printf ("rgba png\n");
  const int w = 21, h = 17;
  uint8_t *rows = malloc ((size_t) w * h * 4);
  uint8_t *rows16 = malloc ((size_t) w * h * 8);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      uint8_t *px = rows + ((size_t) y * w + x) * 4;
      px[0] = (uint8_t) (x * 12);
      px[1] = (uint8_t) (y * 15);
      px[2] = (uint8_t) (((x + y) * 5 + 200) & 255);
      px[3] = in_hole (x, y) ? 0 : (x == 0 ? 128 : 255);
      for (int c = 0; c < 4; c++) {
        unsigned v16 = px[c] * 256u + (c < 3 ? (unsigned) (x + y) : 0u);
        if (c == 3)
          v16 = px[3] ? (x == 1 ? 1u : 65535u) : 0u;   /* alpha 1 of 65535 is still valid */
        rows16[((size_t) y * w + x) * 8 + 2 * c] = (uint8_t) (v16 >> 8);
        rows16[((size_t) y * w + x) * 8 + 2 * c + 1] = (uint8_t) (v16 & 255);
      }
    }
  char *p = tpath ("rgba.png");
  PngSpec s = { w, h, PNG_COLOR_TYPE_RGBA, 8, false, rows, (size_t) w * 4, NULL, 0, NULL, 0 };
  write_png (p, &s);
  char *wf = tpath ("rgba.wld");
  write_text (wf, "1\n0\n0\n-1\n0.5\n-0.5\n");
  const double want[6] = { 0, 1, 0, 0, 0, -1 };
  for (int li = 0; li < N_LOADERS; li++) {
    const Loader *L = &loaders[li];
    for (int band = 0; band <= 3; band++) {
      GrRaster r;
      if (!load_ok (L, p, band, &r))
        continue;
      CHECK (r.plane.width == w && r.plane.height == h, "size");
      CHECK (r.bands == 3 && r.bit_depth == 8, "[%s] bands %d depth %d", L->name, r.bands,
          r.bit_depth);
      CHECK (r.has_geo && geo_eq (r.geo, want, 1e-12), "[%s] .wld geo (an identity-like "
          "transform from a world file is still georeferencing? %d)", L->name, r.has_geo);
      CHECK (r.plane.mask != NULL, "[%s] band %d: RGBA with a hole needs a mask", L->name,
          band);
      int badv = 0, badm = 0;
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
          const uint8_t *px = rows + ((size_t) y * w + x) * 4;
          float e = band == 0 ? luma (px[0], px[1], px[2]) : (float) px[band - 1];
          float g = r.plane.data[(size_t) y * w + x];
          badv += fabsf (g - e) > 1e-3f;
          if (r.plane.mask)
            badm += (r.plane.mask[(size_t) y * w + x] != 0) != !in_hole (x, y);
        }
      CHECK (badv == 0, "[%s] band %d: %d wrong values", L->name, band, badv);
      CHECK (badm == 0, "[%s] band %d: %d wrong mask values", L->name, band, badm);
      CHECK (count_invalid (&r.plane) == 24, "[%s] invalid count %zu", L->name,
          count_invalid (&r.plane));
      gr_raster_clear (&r);
    }
    load_fails (L, p, 4, GR_ERR_FORMAT, "rgba band 4");
  }
  for (int band = 0; band <= 3; band++)
    compare_loaders (p, band);

  /* 16-bit RGBA (no world file) */
  char *p16 = tpath ("rgba16.png");
  PngSpec s16 = { w, h, PNG_COLOR_TYPE_RGBA, 16, false, rows16, (size_t) w * 8, NULL, 0,
    NULL, 0 };
  write_png (p16, &s16);
  for (int li = 0; li < N_LOADERS; li++) {
    GrRaster r;
    if (!load_ok (&loaders[li], p16, 2, &r))
      continue;
    CHECK (r.bands == 3 && r.bit_depth == 16 && !r.has_geo, "[%s] rgba16 header",
        loaders[li].name);
    int badv = 0;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        badv += r.plane.data[(size_t) y * w + x]
            != (float) (rows[((size_t) y * w + x) * 4 + 1] * 256u + (unsigned) (x + y));
    CHECK (badv == 0, "[%s] rgba16 band 2: %d wrong values", loaders[li].name, badv);
    CHECK (count_invalid (&r.plane) == 24, "[%s] rgba16 invalid %zu", loaders[li].name,
        count_invalid (&r.plane));
    gr_raster_clear (&r);
  }
  for (int band = 0; band <= 3; band++)
    compare_loaders (p16, band);

  /* RGBA that is fully opaque: mask dropped */
  for (int i = 0; i < w * h; i++)
    rows[i * 4 + 3] = 255;
  char *po = tpath ("rgba_opaque.png");
  write_png (po, &s);
  for (int li = 0; li < N_LOADERS; li++) {
    GrRaster r;
    if (!load_ok (&loaders[li], po, 0, &r))
      continue;
    CHECK (r.plane.mask == NULL, "[%s] opaque RGBA: mask should be NULL", loaders[li].name);
    gr_raster_clear (&r);
  }
  compare_loaders (po, 0);
  g_free (po);
  g_free (p16);
  g_free (wf);
  g_free (p);
  free (rows16);
  free (rows);
}

/* gray+alpha, palette with tRNS, 2-bit gray, interlaced gray, RGB with tRNS */
static void
test_png_variants (void)
{
  printf ("png variants\n");
  const int w = 13, h = 9;

  /* gray + alpha */
  uint8_t ga[13 * 9 * 2];
  for (int i = 0; i < w * h; i++) {
    ga[2 * i] = (uint8_t) (i * 2);
    ga[2 * i + 1] = (i % 7 == 3) ? 0 : 200;
  }
  char *p = tpath ("grayalpha.png");
  PngSpec s = { w, h, PNG_COLOR_TYPE_GRAY_ALPHA, 8, false, ga, (size_t) w * 2, NULL, 0,
    NULL, 0 };
  write_png (p, &s);
  for (int li = 0; li < N_LOADERS; li++) {
    GrRaster r;
    if (!load_ok (&loaders[li], p, 0, &r))
      continue;
    CHECK (r.bands == 1 && r.bit_depth == 8 && r.plane.mask, "[%s] gray+alpha header",
        loaders[li].name);
    int bad = 0;
    for (int i = 0; i < w * h && r.plane.mask; i++)
      bad += r.plane.data[i] != (float) ga[2 * i] || (r.plane.mask[i] != 0) != (i % 7 != 3);
    CHECK (bad == 0, "[%s] gray+alpha: %d wrong", loaders[li].name, bad);
    gr_raster_clear (&r);
    load_fails (&loaders[li], p, 2, GR_ERR_FORMAT, "gray+alpha band 2");
  }
  compare_loaders (p, 0);
  g_free (p);

  /* 8-bit palette, entry 2 fully transparent, entry 3 half */
  static const png_color pal[5] = { { 0, 0, 0 }, { 255, 0, 0 }, { 0, 255, 0 },
    { 10, 20, 30 }, { 250, 251, 252 } };
  static const png_byte trns[4] = { 255, 255, 0, 128 };
  uint8_t idx[13 * 9];
  for (int i = 0; i < w * h; i++)
    idx[i] = (uint8_t) ((i * 3) % 5);
  p = tpath ("palette.png");
  PngSpec sp = { w, h, PNG_COLOR_TYPE_PALETTE, 8, false, idx, (size_t) w, pal, 5, trns, 4 };
  write_png (p, &sp);
  for (int li = 0; li < N_LOADERS; li++) {
    for (int band = 0; band <= 3; band++) {
      GrRaster r;
      if (!load_ok (&loaders[li], p, band, &r))
        continue;
      CHECK (r.bands == 3 && r.bit_depth == 8 && r.plane.mask, "[%s] palette header: "
          "bands %d depth %d mask %p", loaders[li].name, r.bands, r.bit_depth,
          (void *) r.plane.mask);
      int bad = 0;
      for (int i = 0; i < w * h && r.plane.mask; i++) {
        const png_color *c = &pal[idx[i]];
        float e = band == 0 ? luma (c->red, c->green, c->blue)
            : (float) (band == 1 ? c->red : band == 2 ? c->green : c->blue);
        bad += fabsf (r.plane.data[i] - e) > 1e-3f || (r.plane.mask[i] != 0) != (idx[i] != 2);
      }
      CHECK (bad == 0, "[%s] palette band %d: %d wrong", loaders[li].name, band, bad);
      gr_raster_clear (&r);
    }
  }
  for (int band = 0; band <= 3; band++)
    compare_loaders (p, band);
  g_free (p);

  /* 2-bit gray: expanded to 0, 85, 170, 255 */
  uint8_t g2[9 * 4];            /* 13 pixels -> 4 bytes a row */
  memset (g2, 0, sizeof g2);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int v = (x + y) & 3;
      g2[y * 4 + x / 4] |= (uint8_t) (v << (6 - 2 * (x % 4)));
    }
  p = tpath ("gray2.png");
  PngSpec s2 = { w, h, PNG_COLOR_TYPE_GRAY, 2, false, g2, 4, NULL, 0, NULL, 0 };
  write_png (p, &s2);
  for (int li = 0; li < N_LOADERS; li++) {
    GrRaster r;
    if (!load_ok (&loaders[li], p, 0, &r))
      continue;
    int bad = 0;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        bad += r.plane.data[y * w + x] != (float) (((x + y) & 3) * 85);
    CHECK (r.bit_depth == 8 && r.bands == 1 && !r.plane.mask, "[%s] gray2 header",
        loaders[li].name);
    CHECK (bad == 0, "[%s] gray2: %d wrong (GDAL gives raw 0..3 values?)", loaders[li].name,
        bad);
    gr_raster_clear (&r);
  }
  g_free (p);

  /* interlaced (Adam7) 8-bit gray: the builtin loader's full-image path */
  uint8_t gi[13 * 9];
  for (int i = 0; i < w * h; i++)
    gi[i] = (uint8_t) (255 - i);
  p = tpath ("interlaced.png");
  PngSpec si = { w, h, PNG_COLOR_TYPE_GRAY, 8, true, gi, (size_t) w, NULL, 0, NULL, 0 };
  write_png (p, &si);
  for (int li = 0; li < N_LOADERS; li++) {
    GrRaster r;
    if (!load_ok (&loaders[li], p, 1, &r))
      continue;
    int bad = 0;
    for (int i = 0; i < w * h; i++)
      bad += r.plane.data[i] != (float) gi[i];
    CHECK (bad == 0, "[%s] interlaced: %d wrong", loaders[li].name, bad);
    gr_raster_clear (&r);
  }
  compare_loaders (p, 0);
  g_free (p);

  /* RGB with a tRNS colour: only pixels of exactly that colour are invalid */
  uint8_t rgb[13 * 9 * 3];
  for (int i = 0; i < w * h; i++) {
    rgb[3 * i] = (uint8_t) (i % 4 == 1 ? 7 : 9);
    rgb[3 * i + 1] = (uint8_t) (i % 3 == 1 ? 8 : 6);
    rgb[3 * i + 2] = 9;
  }
  png_color_16 tc;
  memset (&tc, 0, sizeof tc);
  tc.red = 7;
  tc.green = 8;
  tc.blue = 9;
  p = tpath ("rgbtrns.png");
  {
    FILE *fp = fopen (p, "wb");
    png_structp png = png_create_write_struct (PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct (png);
    if (setjmp (png_jmpbuf (png)))
      exit (2);
    png_init_io (png, fp);
    png_set_IHDR (png, info, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
        PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_tRNS (png, info, NULL, 0, &tc);
    png_write_info (png, info);
    for (int y = 0; y < h; y++)
      png_write_row (png, rgb + (size_t) y * w * 3);
    png_write_end (png, NULL);
    png_destroy_write_struct (&png, &info);
    fclose (fp);
  }
  for (int li = 0; li < N_LOADERS; li++) {
    GrRaster r;
    if (!load_ok (&loaders[li], p, 1, &r))
      continue;
    CHECK (r.plane.mask != NULL, "[%s] RGB+tRNS: mask expected", loaders[li].name);
    int bad = 0;
    for (int i = 0; i < w * h && r.plane.mask; i++)
      bad += (r.plane.mask[i] != 0) != !(i % 4 == 1 && i % 3 == 1);
    CHECK (bad == 0, "[%s] RGB+tRNS: %d wrong mask values", loaders[li].name, bad);
    gr_raster_clear (&r);
  }
  compare_loaders (p, 0);
  g_free (p);
}

static void
test_jpeg (void)
{
  printf ("jpeg\n");
  const int w = 64, h = 48;
  uint8_t *rgb = malloc ((size_t) w * h * 3), *gray = malloc ((size_t) w * h);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      uint8_t *px = rgb + ((size_t) y * w + x) * 3;
      px[0] = (uint8_t) (40 + 2 * x);
      px[1] = (uint8_t) (60 + 3 * y);
      px[2] = (uint8_t) (100 + x + y);
      gray[y * w + x] = (uint8_t) (30 + 2 * x + y);
    }
  char *pg = tpath ("gray.jpg"), *pc = tpath ("rgb.jpeg");
  write_jpeg (pg, w, h, 1, gray, 100);
  write_jpeg (pc, w, h, 3, rgb, 100);
  char *wf = tpath ("gray.jgw");
  write_text (wf, "2\n0\n0\n-2\n11\n99\n");
  char *wf2 = tpath ("rgb.jpegw");
  write_text (wf2, "4\n0\n0\n-4\n2\n-2\n");
  const double wg[6] = { 10, 2, 0, 100, 0, -2 }, wc[6] = { 0, 4, 0, 0, 0, -4 };
  for (int li = 0; li < N_LOADERS; li++) {
    const Loader *L = &loaders[li];
    GrRaster r;
    if (load_ok (L, pg, 0, &r)) {
      CHECK (r.bands == 1 && r.bit_depth == 8 && !r.plane.mask, "[%s] gray jpeg header",
          L->name);
      CHECK (strcmp (r.driver, L->gdal ? "GDAL/JPEG" : "jpeg") == 0, "[%s] driver %s",
          L->name, r.driver);
      CHECK (r.has_geo && geo_eq (r.geo, wg, 1e-12), "[%s] .jgw", L->name);
      double maxd = 0;
      for (int i = 0; i < w * h; i++)
        maxd = fmax (maxd, fabs (r.plane.data[i] - gray[i]));
      CHECK (maxd <= 4, "[%s] gray jpeg max error %g", L->name, maxd);
      gr_raster_clear (&r);
    }
    load_fails (L, pg, 2, GR_ERR_FORMAT, "gray jpeg band 2");
    for (int band = 0; band <= 3; band++) {
      if (!load_ok (L, pc, band, &r))
        continue;
      CHECK (r.bands == 3 && r.bit_depth == 8 && !r.plane.mask, "[%s] rgb jpeg header",
          L->name);
      CHECK (r.has_geo && geo_eq (r.geo, wc, 1e-12), "[%s] .jpegw", L->name);
      double maxd = 0;
      for (int i = 0; i < w * h; i++) {
        const uint8_t *px = rgb + (size_t) i * 3;
        double e = band == 0 ? luma (px[0], px[1], px[2]) : px[band - 1];
        maxd = fmax (maxd, fabs (r.plane.data[i] - e));
      }
      CHECK (maxd <= 6, "[%s] rgb jpeg band %d max error %g", L->name, band, maxd);
      gr_raster_clear (&r);
    }
    load_fails (L, pc, 4, GR_ERR_FORMAT, "rgb jpeg band 4");
  }
  for (int band = 0; band <= 3; band++)
    compare_loaders (pc, band);
  compare_loaders (pg, 0);

  /* truncated JPEG: refused (libjpeg would fill the missing rows with gray) */
  gchar *bytes = NULL;
  gsize n = 0;
  g_file_get_contents (pc, &bytes, &n, NULL);
  char *pt = tpath ("truncated.jpg");
  write_bytes (pt, bytes, n / 2);
  for (int li = 0; li < N_LOADERS; li++)
    load_fails (&loaders[li], pt, 0, GR_ERR_FORMAT, "truncated JPEG");
  /* a JPEG header and nothing else */
  char *ph = tpath ("header_only.jpg");
  write_bytes (ph, bytes, 200 < n ? 200 : n);
  for (int li = 0; li < N_LOADERS; li++)
    load_fails (&loaders[li], ph, 0, GR_ERR_FORMAT, "JPEG cut at 200 bytes");
  g_free (bytes);
  g_free (ph);
  g_free (pt);
  g_free (wf2);
  g_free (wf);
  g_free (pc);
  g_free (pg);
  free (gray);
  free (rgb);
}

static void
test_errors (void)
{
  printf ("errors\n");
  char *missing = tpath ("does-not-exist.png");
  char *dir = tpath ("a-directory.png");
  g_mkdir (dir, 0700);
  char *empty = tpath ("empty.png");
  write_bytes (empty, "", 0);
  char *garbage = tpath ("garbage.png");
  char junk[3000];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (char) ((i * 2654435761u) >> 13);
  write_bytes (garbage, junk, sizeof junk);

  /* truncated PNG: a real RGBA file cut in the middle of its image data */
  char *src = tpath ("rgba.png");
  gchar *bytes = NULL;
  gsize n = 0;
  CHECK (g_file_get_contents (src, &bytes, &n, NULL), "read back rgba.png");
  char *trunc = tpath ("truncated.png");
  write_bytes (trunc, bytes, n * 2 / 3);
  char *sigonly = tpath ("signature-only.png");
  write_bytes (sigonly, bytes, 8);
  /* a corrupted CRC in the IHDR chunk */
  char *badcrc = tpath ("badcrc.png");
  if (n > 40) {
    bytes[30] ^= 0x55;          /* IHDR CRC bytes are 29..32 */
    write_bytes (badcrc, bytes, n);
  }
  g_free (bytes);

  /* a valid PNG with a malformed world file beside it */
  uint8_t pix[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
  char *badw = tpath ("badworld.png");
  char err[1024] = "";
  CHECK (gr_png_write_gray8 (badw, pix, 4, 4, 4, err, sizeof err) == GR_OK, "%s", err);
  char *badwf = tpath ("badworld.pgw");
  write_text (badwf, "1\n0\n0\n-1\nnot-a-number\n5\n");

  for (int li = 0; li < N_LOADERS; li++) {
    const Loader *L = &loaders[li];
    load_fails (L, missing, 0, GR_ERR_IO, "missing file");
    load_fails (L, dir, 0, GR_ERR_IO, "directory");
    load_fails (L, empty, 0, GR_ERR_FORMAT, "empty file");
    load_fails (L, garbage, 0, GR_ERR_FORMAT, "garbage .png");
    load_fails (L, trunc, 0, GR_ERR_FORMAT, "truncated PNG");
    load_fails (L, sigonly, 0, GR_ERR_FORMAT, "PNG signature only");
    if (n > 40)
      load_fails (L, badcrc, 0, GR_ERR_FORMAT, "PNG with a bad IHDR CRC");
    load_fails (L, badw, 0, GR_ERR_FORMAT, "malformed world file");
    load_fails (L, badw, 7, GR_ERR_FORMAT, "band 7 of a gray PNG");
  }

  /* without GDAL, the builtin loader names TIFF as unsupported */
  char *tif = tpath ("fake.tif");
  write_bytes (tif, "II*\0\x08\0\0\0\0\0\0\0\0\0\0\0", 16);
  load_fails (&loaders[0], tif, 0, GR_ERR_FORMAT, "TIFF through the builtin loader");

  /* writer errors */
  char *nodir = tpath ("no/such/dir/out.png");
  err[0] = '\0';
  GrStatus st = gr_png_write_gray8 (nodir, pix, 4, 4, 4, err, sizeof err);
  CHECK (st == GR_ERR_IO && strstr (err, nodir), "write into a missing dir: %d %s", st, err);
  printf ("  write into a missing dir -> %s\n", err);
  if (access ("/dev/full", W_OK) == 0) {
    uint8_t *big = calloc (512 * 512, 1);
    for (int i = 0; i < 512 * 512; i++)
      big[i] = (uint8_t) ((i * 2654435761u) >> 7);    /* incompressible-ish */
    err[0] = '\0';
    st = gr_png_write_gray8 ("/dev/full", big, 512, 512, 512, err, sizeof err);
    CHECK (st == GR_ERR_IO && strstr (err, "/dev/full"), "write to /dev/full: %d %s", st, err);
    printf ("  write to /dev/full -> %s\n", err);
    free (big);
  }
  CHECK (gr_png_write_gray8 (nodir, pix, 4, 4, 3, err, sizeof err) == GR_ERR_INVALID,
      "stride < width");
  CHECK (gr_png_write_gray8 (nodir, NULL, 4, 4, 4, err, sizeof err) == GR_ERR_INVALID,
      "NULL pixels");
  GrRaster r;
  CHECK (gr_raster_load (NULL, 0, &r, err, sizeof err) == GR_ERR_INVALID, "NULL path");
  CHECK (gr_raster_load (missing, 0, NULL, err, sizeof err) == GR_ERR_INVALID, "NULL out");

  g_free (tif);
  g_free (nodir);
  g_free (badwf);
  g_free (badw);
  g_free (badcrc);
  g_free (sigonly);
  g_free (trunc);
  g_free (src);
  g_free (garbage);
  g_free (empty);
  g_free (dir);
  g_free (missing);
}

#if GR_HAVE_GDAL
static GDALDatasetH
create_tiff (const char *path, int w, int h, int nbands, GDALDataType dt, char **opts)
{
  GDALDriverH drv = GDALGetDriverByName ("GTiff");
  if (!drv) {
    fprintf (stderr, "no GTiff driver\n");
    exit (2);
  }
  GDALDatasetH ds = GDALCreate (drv, path, w, h, nbands, dt, opts);
  if (!ds) {
    fprintf (stderr, "cannot create %s\n", path);
    exit (2);
  }
  return ds;
}
#endif

static void
test_geotiff (void)
{
#if GR_HAVE_GDAL
  printf ("geotiff (GDAL)\n");
  GDALAllRegister ();
  const int w = 30, h = 20;
  const double gt[6] = { 500000.0, 2.0, 0.0, 4100000.0, 0.0, -2.0 };

  /* UInt16 with nodata 0 */
  char *p = tpath ("u16_nodata.tif");
  GDALDatasetH ds = create_tiff (p, w, h, 1, GDT_UInt16, NULL);
  GDALSetGeoTransform (ds, (double *) gt);
  GDALRasterBandH b = GDALGetRasterBand (ds, 1);
  GDALSetRasterNoDataValue (b, 0);
  uint16_t *v = malloc (sizeof (uint16_t) * w * h);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      v[y * w + x] = (x < 3 || (x == 10 && y == 10)) ? 0 : (uint16_t) (1000 + 97 * x + 1013 * y);
  v[w * h - 1] = 65535;
  CHECK (GDALRasterIO (b, GF_Write, 0, 0, w, h, v, w, h, GDT_UInt16, 0, 0) == CE_None,
      "write tiff");
  GDALClose (ds);
  GrRaster r;
  if (load_ok (&loaders[1], p, 0, &r)) {
    CHECK (strcmp (r.driver, "GDAL/GTiff") == 0, "driver %s", r.driver);
    CHECK (r.bands == 1 && r.bit_depth == 16, "bands %d depth %d", r.bands, r.bit_depth);
    CHECK (r.has_geo && geo_eq (r.geo, gt, 1e-9), "geotiff geo %g %g %g %g %g %g", r.geo[0],
        r.geo[1], r.geo[2], r.geo[3], r.geo[4], r.geo[5]);
    CHECK (r.plane.mask != NULL, "nodata mask");
    int badv = 0, badm = 0;
    for (int i = 0; i < w * h; i++) {
      badv += r.plane.data[i] != (float) v[i];
      if (r.plane.mask)
        badm += (r.plane.mask[i] != 0) != (v[i] != 0);
    }
    CHECK (badv == 0 && badm == 0, "u16 tiff: %d wrong values, %d wrong mask", badv, badm);
    CHECK (count_invalid (&r.plane) == (size_t) (3 * h + 1), "invalid %zu",
        count_invalid (&r.plane));
    double mx, my;
    gr_geo_apply (r.geo, 10.5, 4.5, &mx, &my);
    CHECK (fabs (mx - 500021.0) < 1e-9 && fabs (my - 4099991.0) < 1e-9, "apply (%g, %g)", mx,
        my);
    gr_raster_clear (&r);
  }
  load_fails (&loaders[1], p, 2, GR_ERR_FORMAT, "geotiff band 2");
  g_free (p);

  /* Float32 with nodata -9999 and a NaN: both invalid */
  p = tpath ("f32.tif");
  ds = create_tiff (p, w, h, 1, GDT_Float32, NULL);
  GDALSetGeoTransform (ds, (double *) gt);
  b = GDALGetRasterBand (ds, 1);
  GDALSetRasterNoDataValue (b, -9999);
  float *f = malloc (sizeof (float) * w * h);
  for (int i = 0; i < w * h; i++)
    f[i] = 0.25f * (float) i - 3.5f;
  f[5] = -9999.0f;
  f[6] = NAN;
  CHECK (GDALRasterIO (b, GF_Write, 0, 0, w, h, f, w, h, GDT_Float32, 0, 0) == CE_None, "w");
  GDALClose (ds);
  if (load_ok (&loaders[1], p, 1, &r)) {
    CHECK (r.bit_depth == 32 && r.bands == 1, "f32 header: %d %d", r.bit_depth, r.bands);
    CHECK (count_invalid (&r.plane) == 2 && r.plane.mask && !r.plane.mask[5]
        && !r.plane.mask[6], "f32 mask: %zu invalid", count_invalid (&r.plane));
    int bad = 0;
    for (int i = 0; i < w * h; i++)
      if (i != 5 && i != 6)
        bad += r.plane.data[i] != f[i];
    CHECK (bad == 0, "f32 values: %d wrong", bad);
    gr_raster_clear (&r);
  }
  g_free (p);
  free (f);

  /* RGBA GeoTIFF: alpha band is not counted; luminance of bands 1-3; alpha as mask */
  p = tpath ("rgba.tif");
  char **opts = CSLSetNameValue (NULL, "PHOTOMETRIC", "RGB");
  opts = CSLSetNameValue (opts, "ALPHA", "YES");
  ds = create_tiff (p, w, h, 4, GDT_Byte, opts);
  CSLDestroy (opts);
  GDALSetGeoTransform (ds, (double *) gt);
  uint8_t *px = malloc ((size_t) w * h * 4);
  for (int c = 0; c < 4; c++)
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        px[(size_t) c * w * h + y * w + x] = c == 3 ? (in_hole (x, y) ? 0 : 255)
            : (uint8_t) (x * 5 + y * 3 + c * 40);
  CHECK (GDALDatasetRasterIO (ds, GF_Write, 0, 0, w, h, px, w, h, GDT_Byte, 4, NULL, 0, 0, 0)
      == CE_None, "write rgba tiff");
  GDALClose (ds);
  for (int band = 0; band <= 3; band++) {
    if (!load_ok (&loaders[1], p, band, &r))
      continue;
    CHECK (r.bands == 3 && r.bit_depth == 8, "rgba tiff: bands %d", r.bands);
    CHECK (count_invalid (&r.plane) == 24, "rgba tiff band %d: invalid %zu", band,
        count_invalid (&r.plane));
    int bad = 0;
    for (int i = 0; i < w * h; i++) {
      float e = band == 0 ? luma (px[i], px[w * h + i], px[2 * w * h + i])
          : (float) px[(size_t) (band - 1) * w * h + i];
      bad += fabsf (r.plane.data[i] - e) > 1e-3f;
    }
    CHECK (bad == 0, "rgba tiff band %d: %d wrong", band, bad);
    gr_raster_clear (&r);
  }
  load_fails (&loaders[1], p, 4, GR_ERR_FORMAT, "rgba tiff band 4");
  /* truncated TIFF */
  gchar *bytes = NULL;
  gsize n = 0;
  g_file_get_contents (p, &bytes, &n, NULL);
  char *pt = tpath ("truncated.tif");
  write_bytes (pt, bytes, n / 2);
  g_free (bytes);
  {
    char err[1024] = "";
    GrStatus st = gr_raster_load (pt, 0, &r, err, sizeof err);
    /* the strips may sit at either end of the file: either the open or the read fails */
    CHECK (st == GR_ERR_FORMAT && strstr (err, pt), "truncated tiff: %d %s", st, err);
    printf ("  [gdal] truncated TIFF -> %s: %s\n", gr_status_string (st), err);
    gr_raster_clear (&r);
  }
  g_free (pt);
  g_free (p);
  free (px);
  free (v);

  /* a PNG beside a .tfw: GDAL does not look for .tfw there, our fallback does */
  uint8_t pix[4] = { 1, 2, 3, 4 };
  char err[1024] = "";
  p = tpath ("tfwbeside.png");
  CHECK (gr_png_write_gray8 (p, pix, 2, 2, 2, err, sizeof err) == GR_OK, "%s", err);
  char *tfw = tpath ("tfwbeside.tfw");
  write_text (tfw, "10\n0\n0\n-10\n105\n995\n");
  const double wt[6] = { 100, 10, 0, 1000, 0, -10 };
  for (int li = 0; li < N_LOADERS; li++) {
    if (!load_ok (&loaders[li], p, 0, &r))
      continue;
    CHECK (r.has_geo && geo_eq (r.geo, wt, 1e-9), "[%s] .tfw beside png", loaders[li].name);
    gr_raster_clear (&r);
  }
  g_free (tfw);
  g_free (p);
#else
  printf ("SKIP geotiff tests: built without GDAL\n");
#endif
}

static void
test_real_data (void)
{
  const char *dir = g_getenv ("GEOREG_DATA");
  if (!dir || !*dir) {
    printf ("SKIP aukerman.png: GEOREG_DATA is not set\n");
    return;
  }
  char *p = g_build_filename (dir, "aukerman.png", NULL);
  if (!g_file_test (p, G_FILE_TEST_EXISTS)) {
    printf ("SKIP aukerman.png: not in GEOREG_DATA=%s\n", dir);
    g_free (p);
    return;
  }
  printf ("aukerman.png\n");
  /* count alpha == 0 independently, through libpng's simplified API */
  png_image img;
  memset (&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  size_t alpha0 = 0;
  bool decoded = false;
  if (png_image_begin_read_from_file (&img, p)) {
    img.format = PNG_FORMAT_RGBA;
    uint8_t *buf = malloc (PNG_IMAGE_SIZE (img));
    if (buf && png_image_finish_read (&img, NULL, buf, 0, NULL)) {
      decoded = true;
      for (size_t i = 0; i < (size_t) img.width * img.height; i++)
        alpha0 += buf[4 * i + 3] == 0;
    }
    free (buf);
    png_image_free (&img);
  }
  CHECK (decoded, "libpng simplified API could not decode %s", p);
  printf ("  %zu pixels with alpha 0 (libpng simplified API)\n", alpha0);
  for (int li = 0; li < N_LOADERS; li++) {
    GrRaster r;
    if (!load_ok (&loaders[li], p, 0, &r))
      continue;
    size_t inv = count_invalid (&r.plane);
    printf ("  [%s] %dx%d bands %d depth %d driver %s mask %s invalid %zu geo %d\n",
        loaders[li].name, r.plane.width, r.plane.height, r.bands, r.bit_depth, r.driver,
        r.plane.mask ? "yes" : "NULL (all valid)", inv, r.has_geo);
    CHECK (r.plane.width == 1053 && r.plane.height == 810, "aukerman size %dx%d",
        r.plane.width, r.plane.height);
    CHECK (r.bands == 3 && r.bit_depth == 8, "aukerman bands %d depth %d", r.bands,
        r.bit_depth);
    /* the mask is exactly alpha != 0; it is NULL when every pixel is opaque */
    CHECK (inv == alpha0 && (r.plane.mask != NULL) == (alpha0 > 0),
        "aukerman mask: %zu invalid, %zu pixels with alpha 0", inv, alpha0);
    double sum = 0;
    for (size_t i = 0; i < (size_t) 1053 * 810; i++)
      if (!r.plane.mask || r.plane.mask[i])
        sum += r.plane.data[i];
    double mean = sum / (double) ((size_t) 1053 * 810 - inv);
    CHECK (mean > 5 && mean < 250, "aukerman mean luminance %g", mean);
    gr_raster_clear (&r);
  }
  compare_loaders (p, 0);
  compare_loaders (p, 2);
  g_free (p);
}

/* -------------------------------------------------- budget and special files */

typedef GrStatus (*LoadBudgetFn) (const char *, int, const GrRasterBudget *, GrRaster *,
    char *, size_t);

static const struct {
  const char *name;
  LoadBudgetFn fn;
} budget_loaders[] = {
  { "builtin", gr_raster_load_builtin_budget },
#if GR_HAVE_GDAL
  { "gdal", gr_raster_load_budget },
#endif
};
#define N_BUDGET_LOADERS ((int) (sizeof budget_loaders / sizeof budget_loaders[0]))

static long
peak_rss_kib (void)
{
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

/* A real (decodable) PNG of w x h 1-bit pixels, all zero, at zlib's best compression:
 * 30000 x 30000 gives ~110 KB that decode to 900 M pixels (3.6 GB as floats). */
static void
write_zero_png_1bit (const char *path, int w, int h)
{
  FILE *fp = fopen (path, "wb");
  if (!fp) {
    perror (path);
    exit (2);
  }
  png_structp png = png_create_write_struct (PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct (png);
  uint8_t *row = calloc ((size_t) (w + 7) / 8, 1);
  if (setjmp (png_jmpbuf (png))) {
    fprintf (stderr, "libpng failed writing %s\n", path);
    exit (2);
  }
  png_init_io (png, fp);
  png_set_compression_level (png, 9);
  png_set_IHDR (png, info, (png_uint_32) w, (png_uint_32) h, 1, PNG_COLOR_TYPE_GRAY,
      PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info (png, info);
  for (int y = 0; y < h; y++)
    png_write_row (png, row);
  png_write_end (png, NULL);
  png_destroy_write_struct (&png, &info);
  free (row);
  fclose (fp);
}

/* Issue 12: a real 30000 x 30000 PNG of ~110 KB was loaded in full (5-8 GB, over
 * 60 s).  It must be refused from its header, within a second, without the peak
 * resident memory growing (run first, so that the peak is still low). */
static void
test_huge_png_refused (void)
{
  printf ("budget: 30000 x 30000 PNG\n");
  char *path = tpath ("huge-30000.png");
  write_zero_png_1bit (path, 30000, 30000);
  GStatBuf st;
  g_stat (path, &st);
  printf ("  %s: %lld bytes\n", path, (long long) st.st_size);
  CHECK (st.st_size < 200 * 1024, "the test PNG should be small (%lld bytes)",
      (long long) st.st_size);
  for (int k = 0; k < N_BUDGET_LOADERS; k++) {
    GrRaster r;
    char err[1024] = "";
    long rss0 = peak_rss_kib ();
    gint64 t0 = g_get_monotonic_time ();
    GrStatus rc = budget_loaders[k].fn (path, 0, NULL, &r, err, sizeof err);
    double secs = (g_get_monotonic_time () - t0) / 1e6;
    long grown = peak_rss_kib () - rss0;
    printf ("  [%s] %s in %.3f s, peak RSS +%ld KiB: %s\n", budget_loaders[k].name,
        gr_status_string (rc), secs, grown, err);
    CHECK (rc == GR_ERR_FORMAT, "[%s] status %d", budget_loaders[k].name, rc);
    CHECK (strstr (err, path) && strstr (err, "30000 x 30000") && strstr (err, "budget"),
        "[%s] message should name the path, the size and the budget: %s",
        budget_loaders[k].name, err);
    CHECK (secs < 1.0, "[%s] refused in %.2f s (limit 1 s)", budget_loaders[k].name, secs);
    CHECK (grown < 64 * 1024, "[%s] peak RSS grew by %ld KiB (limit 64 MiB)",
        budget_loaders[k].name, grown);
    CHECK (r.plane.data == NULL && r.plane.mask == NULL, "[%s] output not cleared",
        budget_loaders[k].name);
  }
  g_unlink (path);
  g_free (path);
}

#if GR_HAVE_GDAL
/* A VRT is a few hundred bytes of XML that GDAL reads as one raster of any declared
 * size (issue 18: a mosaic of 200,000 x 200,000 px): refused against the budget from
 * its declared size, before GDAL reads a block. */
static void
test_huge_vrt_refused (void)
{
  printf ("budget: 200000 x 200000 VRT\n");
  char *png = tpath ("vrt-source.png");
  char *vrt = tpath ("huge.vrt");
  uint8_t g[8 * 8] = { 0 };
  PngSpec spec = { .w = 8, .h = 8, .color_type = PNG_COLOR_TYPE_GRAY, .depth = 8,
    .rows = g, .rowbytes = 8 };
  write_png (png, &spec);
  char *xml = g_strdup_printf ("<VRTDataset rasterXSize=\"200000\" rasterYSize=\"200000\">"
      "<VRTRasterBand dataType=\"Byte\" band=\"1\"><SimpleSource>"
      "<SourceFilename relativeToVRT=\"0\">%s</SourceFilename><SourceBand>1</SourceBand>"
      "<SrcRect xOff=\"0\" yOff=\"0\" xSize=\"8\" ySize=\"8\"/>"
      "<DstRect xOff=\"0\" yOff=\"0\" xSize=\"8\" ySize=\"8\"/>"
      "</SimpleSource></VRTRasterBand></VRTDataset>\n", png);
  write_text (vrt, xml);
  GrRaster r;
  char err[1024] = "";
  long rss0 = peak_rss_kib ();
  gint64 t0 = g_get_monotonic_time ();
  GrStatus rc = gr_raster_load (vrt, 0, &r, err, sizeof err);
  double secs = (g_get_monotonic_time () - t0) / 1e6;
  long grown = peak_rss_kib () - rss0;
  printf ("  %s in %.3f s, peak RSS +%ld KiB: %s\n", gr_status_string (rc), secs, grown, err);
  CHECK (rc == GR_ERR_FORMAT && strstr (err, "200000 x 200000") && strstr (err, "budget"),
      "VRT over the budget: status %d: %s", rc, err);
  CHECK (secs < 1.0, "refused in %.2f s", secs);
  CHECK (grown < 64 * 1024, "peak RSS grew by %ld KiB", grown);
  g_unlink (vrt);
  g_unlink (png);
  g_free (xml);
  g_free (vrt);
  g_free (png);
}
#endif

/* The budget is overridable: the same small files pass or fail by pixels and by bytes,
 * for PNG (plain and interlaced), JPEG and, in GDAL builds, GeoTIFF. */
static void
test_budget_override (void)
{
  printf ("budget: overrides\n");
  enum { W = 40, H = 30 };
  uint8_t pix[W * H * 3];
  for (size_t i = 0; i < sizeof pix; i++)
    pix[i] = (uint8_t) (i * 7);
  char *png = tpath ("budget.png");
  char *ipng = tpath ("budget-interlaced.png");
  char *jpg = tpath ("budget.jpg");
  PngSpec spec = { .w = W, .h = H, .color_type = PNG_COLOR_TYPE_RGB, .depth = 8,
    .rows = pix, .rowbytes = W * 3 };
  write_png (png, &spec);
  spec.interlace = true;
  write_png (ipng, &spec);
  write_jpeg (jpg, W, H, 3, pix, 90);
  const char *files[] = { png, ipng, jpg };
  const char *formats[] = { "PNG", "PNG", "JPEG" };
  for (int k = 0; k < N_BUDGET_LOADERS; k++) {
    for (int f = 0; f < 3; f++) {
      GrRaster r;
      char err[1024] = "";
      GrRasterBudget exact = { .max_pixels = W * H, .max_bytes = 0 };
      GrStatus rc = budget_loaders[k].fn (files[f], 0, &exact, &r, err, sizeof err);
      CHECK (rc == GR_OK, "[%s] %s within a budget of exactly its pixels: %s",
          budget_loaders[k].name, files[f], err);
      gr_raster_clear (&r);
      GrRasterBudget one_less = { .max_pixels = W * H - 1 };
      rc = budget_loaders[k].fn (files[f], 0, &one_less, &r, err, sizeof err);
      CHECK (rc == GR_ERR_FORMAT && strstr (err, "40 x 30") && strstr (err, "pixels"),
          "[%s] %s over the pixel budget by one: status %d: %s", budget_loaders[k].name,
          files[f], rc, err);
      /* GDAL reads every format as "raster"; the built-in loader names it */
      if (!strcmp (budget_loaders[k].name, "builtin"))
        CHECK (strstr (err, formats[f]) != NULL, "names the format: %s", err);
      GrRasterBudget few_bytes = { .max_bytes = W * H * 4 - 1 };
      rc = budget_loaders[k].fn (files[f], 0, &few_bytes, &r, err, sizeof err);
      CHECK (rc == GR_ERR_FORMAT && strstr (err, "4799 bytes"),
          "[%s] %s over the byte budget: status %d: %s", budget_loaders[k].name, files[f],
          rc, err);
      printf ("  [%s] %s: %s\n", budget_loaders[k].name, files[f], err);
    }
  }
  /* an interlaced PNG needs libpng's whole-image buffer on top of the plane: a byte
   * budget that fits the plane alone refuses it, and not the plain PNG */
  GrRaster r;
  char err[1024] = "";
  GrRasterBudget plane_only = { .max_bytes = W * H * 4 };
  CHECK (gr_raster_load_builtin_budget (png, 0, &plane_only, &r, err, sizeof err) == GR_OK,
      "plain PNG within a plane-sized budget: %s", err);
  gr_raster_clear (&r);
  CHECK (gr_raster_load_builtin_budget (ipng, 0, &plane_only, &r, err, sizeof err) ==
      GR_ERR_FORMAT, "interlaced PNG needs more than its plane: %s", err);
  /* the default budget (NULL and zeros) takes them */
  GrRasterBudget zeros = { 0, 0 };
  CHECK (gr_raster_load_budget (jpg, 0, &zeros, &r, err, sizeof err) == GR_OK,
      "zero fields are the defaults: %s", err);
  gr_raster_clear (&r);
  g_unlink (png);
  g_unlink (ipng);
  g_unlink (jpg);
  g_free (png);
  g_free (ipng);
  g_free (jpg);
}

/* A FIFO, a device or a directory as the control: a clear GR_ERR_IO at once, never a
 * blocking open (issue 12: a named pipe blocked the state change for ever).  An
 * alarm turns a hang into a failure. */
static void
test_special_files (void)
{
  printf ("special files\n");
  char *fifo = tpath ("pipe.png");
  char *dir = tpath ("dir.tif");
  g_mkdir (dir, 0700);
  CHECK (mkfifo (fifo, 0600) == 0, "mkfifo %s", fifo);
  struct { const char *path; const char *kind; } cases[] = {
    { fifo, "named pipe" }, { "/dev/zero", "character device" }, { dir, "directory" },
  };
  alarm (20);                   /* a blocking open would end the test here */
  for (int k = 0; k < N_LOADERS; k++) {
    for (size_t c = 0; c < G_N_ELEMENTS (cases); c++) {
      gint64 t0 = g_get_monotonic_time ();
      load_fails (&loaders[k], cases[c].path, 0, GR_ERR_IO, cases[c].kind);
      double secs = (g_get_monotonic_time () - t0) / 1e6;
      char err[1024] = "";
      GrRaster r;
      loaders[k].fn (cases[c].path, 0, &r, err, sizeof err);
      CHECK (strstr (err, cases[c].kind) != NULL, "[%s] message names '%s': %s",
          loaders[k].name, cases[c].kind, err);
      CHECK (secs < 1.0, "[%s] %s took %.2f s", loaders[k].name, cases[c].path, secs);
    }
  }
  double geo[6];
  char err[1024] = "";
  CHECK (gr_world_file_read (fifo, geo, err, sizeof err) == GR_ERR_IO
      && strstr (err, "named pipe"), "world file as a FIFO: %s", err);
  /* a FIFO where a world file would be is not a world file: the image loads */
  char *img = tpath ("with-fifo-wf.png");
  char *wf = tpath ("with-fifo-wf.pgw");
  uint8_t g[4 * 3] = { 0 };
  PngSpec spec = { .w = 4, .h = 3, .color_type = PNG_COLOR_TYPE_GRAY, .depth = 8,
    .rows = g, .rowbytes = 4 };
  write_png (img, &spec);
  CHECK (mkfifo (wf, 0600) == 0, "mkfifo %s", wf);
  for (int k = 0; k < N_LOADERS; k++) {
    GrRaster r;
    if (load_ok (&loaders[k], img, 0, &r))
      CHECK (!r.has_geo, "[%s] no geotransform from a FIFO", loaders[k].name);
    gr_raster_clear (&r);
  }
  alarm (0);
  g_unlink (img);
  g_unlink (wf);
  g_unlink (fifo);
  g_rmdir (dir);
  g_free (img);
  g_free (wf);
  g_free (fifo);
  g_free (dir);
}

static void
remove_tree (const char *path)
{
  GDir *d = g_dir_open (path, 0, NULL);
  if (d) {
    const char *name;
    while ((name = g_dir_read_name (d))) {
      char *c = g_build_filename (path, name, NULL);
      if (g_file_test (c, G_FILE_TEST_IS_DIR))
        remove_tree (c);
      else
        g_unlink (c);
      g_free (c);
    }
    g_dir_close (d);
  }
  g_rmdir (path);
}

int
main (void)
{
  GError *err = NULL;
  tmpdir = g_dir_make_tmp ("georeg-raster-XXXXXX", &err);
  if (!tmpdir) {
    fprintf (stderr, "cannot make a temporary folder: %s\n", err->message);
    return 2;
  }
  printf ("temporary folder %s; GDAL %s\n", tmpdir, GR_HAVE_GDAL ? "built in" : "absent");
  test_huge_png_refused ();
#if GR_HAVE_GDAL
  test_huge_vrt_refused ();
#endif
  test_budget_override ();
  test_special_files ();
  test_world_files ();
  test_gray8 ();
  test_gray16 ();
  test_rgba ();
  test_png_variants ();
  test_jpeg ();
  test_errors ();
  test_geotiff ();
  test_real_data ();
  if (failures == 0 || !g_getenv ("GEOREG_KEEP_TMP"))
    remove_tree (tmpdir);
  g_free (tmpdir);
  printf ("%d checks, %d failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
