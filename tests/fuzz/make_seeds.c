/* Writes the binary seed files of the raster fuzz corpora (small PNG, JPEG and TIFF
 * files covering the layouts the loaders handle).  Run once by hand; the outputs are
 * committed under tests/fuzz/corpus/{raster,raster_gdal}/.  Not part of the build:
 *   cc -o /tmp/make_seeds tests/fuzz/make_seeds.c $(pkg-config --cflags --libs libpng \
 *      libjpeg gdal) && /tmp/make_seeds tests/fuzz/corpus
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>
#include <jpeglib.h>
#include <gdal.h>
#include <cpl_string.h>

#define W 7
#define H 5

static const char *dir;

static char *
path (const char *sub, const char *name)
{
  static char p[4][1024];
  static int k;
  k = (k + 1) % 4;
  snprintf (p[k], sizeof p[k], "%s/%s/%s", dir, sub, name);
  return p[k];
}

static uint16_t
sample (int x, int y, int c, int maxv)
{
  return (uint16_t) (((x * 37 + y * 91 + c * 53) * 257) % (maxv + 1));
}

/* PNG: colour type, bit depth, interlace, optional tRNS / palette */
static void
png (const char *name, int ctype, int depth, int interlace, int trns)
{
  for (int s = 0; s < 2; s++) {
    const char *sub = s ? "raster_gdal" : "raster";
    FILE *f = fopen (path (sub, name), "wb");
    png_structp p = png_create_write_struct (PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct (p);
    png_init_io (p, f);
    png_set_IHDR (p, info, W, H, depth, ctype, interlace ? PNG_INTERLACE_ADAM7 :
        PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    int ch = ctype == PNG_COLOR_TYPE_GRAY ? 1 : ctype == PNG_COLOR_TYPE_GA ? 2 :
        ctype == PNG_COLOR_TYPE_RGB ? 3 : ctype == PNG_COLOR_TYPE_RGBA ? 4 : 1;
    int maxv = (1 << depth) - 1;
    if (ctype == PNG_COLOR_TYPE_PALETTE) {
      png_color pal[16];
      int np = 1 << (depth < 4 ? depth : 4);
      for (int i = 0; i < np; i++)
        pal[i] = (png_color) { (png_byte) (i * 16), (png_byte) (255 - i * 9),
          (png_byte) (i * 5) };
      png_set_PLTE (p, info, pal, np);
      maxv = np - 1;
      if (trns) {
        png_byte a[2] = { 0, 128 };
        png_set_tRNS (p, info, a, 2, NULL);
      }
    } else if (trns) {
      png_color_16 t = { 0 };
      t.gray = t.red = t.green = t.blue = sample (1, 1, 0, maxv);
      png_set_tRNS (p, info, NULL, 0, &t);
    }
    png_write_info (p, info);
    if (depth < 8)
      png_set_packing (p);
    if (depth == 16)
      png_set_swap (p);             /* we fill little-endian host words */
    int passes = png_set_interlace_handling (p);
    size_t bpp = depth == 16 ? 2 : 1;
    uint8_t row[W * 4 * 2];
    for (int pass = 0; pass < passes; pass++)
      for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++)
          for (int c = 0; c < ch; c++) {
            uint16_t v = sample (x, y, c, maxv);
            if (ctype == PNG_COLOR_TYPE_GA && c == 1)
              v = (x == 2 && y == 3) ? 0 : (uint16_t) maxv;
            if (ctype == PNG_COLOR_TYPE_RGBA && c == 3)
              v = (x == 4 && y == 1) ? 0 : (uint16_t) maxv;
            size_t i = ((size_t) x * ch + c) * bpp;
            if (bpp == 2)
              memcpy (row + i, &v, 2);
            else
              row[i] = (uint8_t) v;
          }
        png_write_row (p, row);
      }
    png_write_end (p, NULL);
    png_destroy_write_struct (&p, &info);
    fclose (f);
  }
}

static void
jpeg (const char *name, int comps, int progressive, int restart, size_t cut)
{
  for (int s = 0; s < 2; s++) {
    const char *sub = s ? "raster_gdal" : "raster";
    unsigned char *mem = NULL;
    unsigned long len = 0;
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error (&e);
    jpeg_create_compress (&c);
    jpeg_mem_dest (&c, &mem, &len);
    c.image_width = 16;
    c.image_height = 9;
    c.input_components = comps;
    c.in_color_space = comps == 1 ? JCS_GRAYSCALE : comps == 3 ? JCS_RGB : JCS_CMYK;
    jpeg_set_defaults (&c);
    jpeg_set_quality (&c, 75, TRUE);
    if (progressive)
      jpeg_simple_progression (&c);
    c.restart_interval = restart;
    jpeg_start_compress (&c, TRUE);
    uint8_t row[16 * 4];
    while (c.next_scanline < c.image_height) {
      for (int x = 0; x < 16; x++)
        for (int k = 0; k < comps; k++)
          row[x * comps + k] = (uint8_t) sample (x, (int) c.next_scanline, k, 255);
      JSAMPROW r = row;
      jpeg_write_scanlines (&c, &r, 1);
    }
    jpeg_finish_compress (&c);
    jpeg_destroy_compress (&c);
    FILE *f = fopen (path (sub, name), "wb");
    fwrite (mem, 1, cut && cut < len ? cut : len, f);
    fclose (f);
    free (mem);
  }
}

/* GeoTIFF through GDAL: type, bands, creation options, and extras by flag */
enum { GEO = 1, NODATA = 2, PALETTE = 4, ALPHA = 8, NANS = 16, MASK = 32 };

static void
tiff (const char *name, GDALDataType dt, int nb, const char *opts, int extra)
{
  GDALDriverH drv = GDALGetDriverByName ("GTiff");
  char **o = opts ? CSLTokenizeString2 (opts, " ", 0) : NULL;
  GDALDatasetH ds = GDALCreate (drv, path ("raster_gdal", name), W, H, nb, dt, o);
  CSLDestroy (o);
  if (!ds) {
    fprintf (stderr, "cannot create %s\n", name);
    exit (1);
  }
  if (extra & GEO) {
    double gt[6] = { 500000, 0.5, 0, 4000000, 0, -0.5 };
    GDALSetGeoTransform (ds, gt);
  }
  double buf[W * H];
  for (int b = 1; b <= nb; b++) {
    GDALRasterBandH band = GDALGetRasterBand (ds, b);
    int maxv = dt == GDT_Byte ? 255 : dt == GDT_UInt16 ? 65535 : 30000;
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++)
        buf[y * W + x] = dt == GDT_Float32 || dt == GDT_Float64 ?
            (x - 3) * 1.25 + y * 0.5 : (double) sample (x, y, b, maxv);
    if (extra & PALETTE)
      for (int i = 0; i < W * H; i++)
        buf[i] = (double) ((int) buf[i] % 4);
    if ((extra & ALPHA) && b == nb) {
      GDALSetRasterColorInterpretation (band, GCI_AlphaBand);
      for (int i = 0; i < W * H; i++)
        buf[i] = i == 8 ? 0 : 255;
    }
    if (extra & NANS) {
      buf[3] = NAN;
      buf[10] = INFINITY;
    }
    if (extra & NODATA) {
      GDALSetRasterNoDataValue (band, buf[5]);
    }
    if (extra & PALETTE) {
      GDALColorTableH ct = GDALCreateColorTable (GPI_RGB);
      for (int i = 0; i < 3; i++) {
        GDALColorEntry e = { (short) (i * 80), (short) (200 - i * 50), (short) (i * 30),
          (short) (i == 2 ? 0 : 255) };
        GDALSetColorEntry (ct, i, &e);
      }
      GDALSetRasterColorTable (band, ct);
      GDALDestroyColorTable (ct);
    }
    (void) !GDALRasterIO (band, GF_Write, 0, 0, W, H, buf, W, H, GDT_Float64, 0, 0);
  }
  if (extra & MASK) {
    GDALCreateDatasetMaskBand (ds, GMF_PER_DATASET);
    GDALRasterBandH m = GDALGetMaskBand (GDALGetRasterBand (ds, 1));
    uint8_t mb[W * H];
    for (int i = 0; i < W * H; i++)
      mb[i] = i % 6 == 0 ? 0 : 255;
    (void) !GDALRasterIO (m, GF_Write, 0, 0, W, H, mb, W, H, GDT_Byte, 0, 0);
  }
  GDALClose (ds);
}

int
main (int argc, char **argv)
{
  if (argc != 2) {
    fprintf (stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  dir = argv[1];
  GDALAllRegister ();
  CPLSetConfigOption ("GDAL_PAM_ENABLED", "NO");
  CPLSetConfigOption ("GDAL_TIFF_INTERNAL_MASK", "YES");

  png ("gray1.png", PNG_COLOR_TYPE_GRAY, 1, 0, 0);
  png ("gray2.png", PNG_COLOR_TYPE_GRAY, 2, 0, 0);
  png ("gray4_trns.png", PNG_COLOR_TYPE_GRAY, 4, 0, 1);
  png ("gray8.png", PNG_COLOR_TYPE_GRAY, 8, 0, 0);
  png ("gray8_trns.png", PNG_COLOR_TYPE_GRAY, 8, 0, 1);
  png ("gray16.png", PNG_COLOR_TYPE_GRAY, 16, 0, 0);
  png ("ga8.png", PNG_COLOR_TYPE_GA, 8, 0, 0);
  png ("ga16.png", PNG_COLOR_TYPE_GA, 16, 0, 0);
  png ("rgb8.png", PNG_COLOR_TYPE_RGB, 8, 0, 0);
  png ("rgb8_trns.png", PNG_COLOR_TYPE_RGB, 8, 0, 1);
  png ("rgb16.png", PNG_COLOR_TYPE_RGB, 16, 0, 0);
  png ("rgba8.png", PNG_COLOR_TYPE_RGBA, 8, 0, 0);
  png ("rgba16.png", PNG_COLOR_TYPE_RGBA, 16, 0, 0);
  png ("pal1.png", PNG_COLOR_TYPE_PALETTE, 1, 0, 0);
  png ("pal4_trns.png", PNG_COLOR_TYPE_PALETTE, 4, 0, 1);
  png ("pal8.png", PNG_COLOR_TYPE_PALETTE, 8, 0, 0);
  png ("gray8_adam7.png", PNG_COLOR_TYPE_GRAY, 8, 1, 0);
  png ("rgba16_adam7.png", PNG_COLOR_TYPE_RGBA, 16, 1, 0);

  jpeg ("gray.jpg", 1, 0, 0, 0);
  jpeg ("rgb.jpg", 3, 0, 0, 0);
  jpeg ("rgb_progressive.jpg", 3, 1, 0, 0);
  jpeg ("rgb_restart.jpg", 3, 0, 1, 0);
  jpeg ("cmyk.jpg", 4, 0, 0, 0);
  jpeg ("rgb_truncated.jpg", 3, 0, 0, 300);

  tiff ("byte1_geo.tif", GDT_Byte, 1, NULL, GEO);
  tiff ("byte3.tif", GDT_Byte, 3, "PHOTOMETRIC=RGB", 0);
  tiff ("byte4_alpha.tif", GDT_Byte, 4, "PHOTOMETRIC=RGB ALPHA=YES", ALPHA);
  tiff ("uint16_nodata.tif", GDT_UInt16, 1, NULL, NODATA | GEO);
  tiff ("int16.tif", GDT_Int16, 1, "COMPRESS=DEFLATE", 0);
  tiff ("float32_nan.tif", GDT_Float32, 1, NULL, NANS);
  tiff ("float64.tif", GDT_Float64, 1, "TILED=YES BLOCKXSIZE=16 BLOCKYSIZE=16", 0);
  tiff ("int32_3band.tif", GDT_Int32, 3, "INTERLEAVE=BAND", 0);
  tiff ("palette.tif", GDT_Byte, 1, NULL, PALETTE);
  tiff ("nbits4.tif", GDT_Byte, 1, "NBITS=4", 0);
  tiff ("cint16.tif", GDT_CInt16, 1, NULL, 0);
  tiff ("byte1_mask.tif", GDT_Byte, 1, NULL, MASK);
  tiff ("uint16_lzw.tif", GDT_UInt16, 2, "COMPRESS=LZW PREDICTOR=2", 0);
  return 0;
}
