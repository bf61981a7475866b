/* GrControlSource (kernels/control_source.h) on synthesized large controls, without
 * GStreamer:
 *  - a VRT over 192 GeoTIFF tiles (64 x 64 px, per-band nodata) of a synthesized RGB
 *    orthomosaic: windows (level 0, boxes in pixels and in map units, blocks not
 *    aligned with the tiles, a block cache far smaller than the control, 4 threads at
 *    once) equal bit for bit the same area of the same image written as one GeoTIFF
 *    and loaded whole by gr_raster_load (the in-memory crop), geotransforms included;
 *  - registration (kernels/register, CPU) of a frame cut from the control under a
 *    known homography, on the whole control and on a window around the prior: the
 *    same transform after the window's offset, both within 0.3 px RMS of the truth
 *    over the whole frame;
 *  - a 100,000 x 100,000 px sparse GeoTIFF (SPARSE_OK: a few hundred KB on disk) with
 *    overviews at 4, 16 and 64: the no-prior whole read refused from the header with
 *    a message asking for a prior, windows at level 0 and at overview 1 holding the
 *    patch written there at the right map position, level choice, the covers test
 *    (hysteresis), prefetch (the next window's blocks decoded by the worker: no miss
 *    when it is read), and a window over the limit refused;
 *  - a 16-bit interlaced PNG, which GDAL 3.6 reads wrong: held whole, windows cut from
 *    it equal the loader's plane;
 *  - the elements' shared cache (gst/gstgeoregcontrol.c): two names of the VRT share
 *    one source, a window slides only when the frame's box leaves it along a
 *    synthesized flight (each window checked against the crop), windows keep their
 *    control alive, the no-prior whole window refused over a budget asking for a
 *    prior;
 *  - the peak resident memory of the whole test (getrusage), bounded.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "control_source.h"
#include "test_check.h"

#if GR_HAVE_GDAL
#include <gdal.h>
#include <gdal_utils.h>
#include <cpl_conv.h>
#include <cpl_string.h>
#include <png.h>

#include "register.h"
#include "synth.h"
#include "../gst/gstgeoregcontrol.c"

#define CW 1024                 /* the tiled control */
#define CH 768
#define TILE 64
#define FW 160                  /* the frame */
#define FH 120

static char *tmpdir;

static char *
tmp_path (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

/* Writes bands (Byte, w x h, packed) as a GeoTIFF with geo and nodata 0 on every band. */
static void
write_tif (const char *path, uint8_t *const *bands, int nb, int stride, int x0, int y0,
    int w, int h, const double geo[6], char **opts)
{
  GDALDriverH drv = GDALGetDriverByName ("GTiff");
  GDALDatasetH ds = GDALCreate (drv, path, w, h, nb, GDT_Byte, opts);
  if (!ds) {
    fprintf (stderr, "cannot create %s\n", path);
    exit (1);
  }
  GDALSetGeoTransform (ds, (double *) geo);
  for (int b = 0; b < nb; b++) {
    GDALRasterBandH band = GDALGetRasterBand (ds, b + 1);
    GDALSetRasterNoDataValue (band, 0);
    CPLErr e = GDALRasterIO (band, GF_Write, 0, 0, w, h,
        bands[b] + (size_t) y0 * (size_t) stride + (size_t) x0, w, h, GDT_Byte, 1, stride);
    CHECK (e == CE_None, "write %s", path);
  }
  GDALClose (ds);
}

/* A size x size synthesized control's green band as bytes (malloc'ed). */
static uint8_t *
synth_gray8 (int size, uint64_t seed)
{
  char err[256] = "";
  GrSynthControlParams cp;
  gr_synth_control_params_init (&cp);
  cp.width = cp.height = size;
  cp.depth = 8;
  cp.seed = seed;
  GrSynthImage img;
  if (gr_synth_control_generate (&cp, &img, err, sizeof err) != GR_OK) {
    fprintf (stderr, "synth: %s\n", err);
    exit (1);
  }
  uint8_t *pix = malloc ((size_t) size * size);
  for (size_t i = 0; i < (size_t) size * size; i++) {
    float v = floorf (img.band[1][i] + 0.5f);
    pix[i] = (uint8_t) (v < 0 ? 0 : v > 255 ? 255 : v);
  }
  gr_synth_image_free (&img);
  return pix;
}

/* A window equals rect (x0, y0, w, h) of the whole raster, values and validity. */
static bool
window_equals_crop (const GrControlWindow *win, const GrRaster *whole, int x0, int y0,
    const char *what)
{
  const GrPlaneF *p = &win->raster.plane, *q = &whole->plane;
  long bad = 0, badm = 0;
  for (int y = 0; y < p->height; y++)
    for (int x = 0; x < p->width; x++) {
      size_t i = (size_t) y * p->stride + x;
      size_t j = (size_t) (y + y0) * q->stride + (size_t) (x + x0);
      uint8_t mw = p->mask ? p->mask[(size_t) y * p->width + x] : 255;
      size_t jm = (size_t) (y + y0) * (size_t) q->width + (size_t) (x + x0);
      uint8_t mq = q->mask ? q->mask[jm] : 255;
      if (memcmp (&p->data[i], &q->data[j], sizeof (float)) != 0)
        bad++;
      if (mw != mq)
        badm++;
    }
  CHECK (bad == 0 && badm == 0, "%s: %ld values and %ld mask bytes differ from the "
      "in-memory crop", what, bad, badm);
  return bad == 0 && badm == 0;
}

static void
check_window_geo (const GrControlWindow *win, const GrRaster *whole, const char *what)
{
  double mx = whole->geo[0] + whole->geo[1] * win->off_x + whole->geo[2] * win->off_y;
  double my = whole->geo[3] + whole->geo[4] * win->off_x + whole->geo[5] * win->off_y;
  CHECK (win->raster.has_geo && fabs (win->raster.geo[0] - mx) < 1e-6
      && fabs (win->raster.geo[3] - my) < 1e-6
      && fabs (win->raster.geo[1] - whole->geo[1] * win->scale_x) < 1e-12
      && fabs (win->raster.geo[5] - whole->geo[5] * win->scale_y) < 1e-12,
      "%s: window geotransform %g %g %g / %g %g %g", what, win->raster.geo[0],
      win->raster.geo[1], win->raster.geo[2], win->raster.geo[3], win->raster.geo[4],
      win->raster.geo[5]);
}

/* ------------------------------------------------------------------ the tiled VRT */

typedef struct {
  GrControlSource *src;
  const GrRaster *whole;
  int seed;
  int ok;
} ThreadArg;

static gpointer
reader_thread (gpointer data)
{
  ThreadArg *a = data;
  GRand *rng = g_rand_new_with_seed (a->seed);
  a->ok = 1;
  for (int k = 0; k < 12; k++) {
    double x0 = g_rand_int_range (rng, 0, CW - 40), y0 = g_rand_int_range (rng, 0, CH - 40);
    double box[4] = { x0, y0, x0 + g_rand_int_range (rng, 1, 300),
      y0 + g_rand_int_range (rng, 1, 300) };
    GrControlWindow win;
    char err[512] = "";
    if (gr_control_source_window (a->src, 0, box, 0.0, &win, err, sizeof err) != GR_OK) {
      a->ok = 0;
      fprintf (stderr, "thread window: %s\n", err);
      continue;
    }
    if (!window_equals_crop (&win, a->whole, win.x0, win.y0, "thread window"))
      a->ok = 0;
    /* given back: the threads' windows reuse each other's planes */
    gr_control_source_window_release (a->src, &win);
  }
  g_rand_free (rng);
  return NULL;
}

/* Registers `frame` on `control` (fixed value range 0..255, 16 levels) from the
 * prior; the result's transform (frame -> control, pixel corners) in h. */
static bool
register_on (const GrPlaneF *control, const GrPlaneF *frame, const double prior_h[9],
    double h[9], double h_index[9])
{
  char err[256] = "";
  GrStatus st;
  GrRegister *r = gr_register_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
  CHECK (r != NULL, "gr_register_new: %s", err);
  if (!r)
    return false;
  GrRegisterParams p;
  gr_register_params_init (&p);
  p.max_keypoints = 200;
  bool ok = gr_register_set_control (r, control, 0.0, 255.0, p.levels, NULL, 0, NULL, err,
      sizeof err) == GR_OK;
  CHECK (ok, "set_control: %s", err);
  ok = ok && gr_register_set_frame (r, &p, frame, false, GR_BINS_FIXED, 8, 0, 255, err,
      sizeof err) == GR_OK;
  CHECK (ok, "set_frame: %s", err);
  GrRegisterPrior prior;
  memset (&prior, 0, sizeof prior);
  prior.has_prior = true;
  memcpy (prior.h, prior_h, sizeof prior.h);
  GrRegisterResult res;
  memset (&res, 0, sizeof res);
  ok = ok && gr_register_run (r, &p, &prior, &res, err, sizeof err) == GR_OK;
  CHECK (ok, "register: %s", err);
  ok = ok && res.has_transform && gr_register_result_sound (&res);
  CHECK (ok, "registration not sound (flags 0x%x)", res.flags);
  if (ok) {
    memcpy (h, res.h, sizeof res.h);
    memcpy (h_index, res.h_index, sizeof res.h_index);
  }
  gr_register_result_clear (&res);
  gr_register_free (r);
  return ok;
}

/* RMS distance (control pixels) between h_index and the truth over every 4th frame
 * pixel. */
static double
truth_rms (const double h_index[9], const double ht[9])
{
  double s = 0.0;
  int n = 0;
  for (int v = 0; v < FH; v += 4)
    for (int u = 0; u < FW; u += 4) {
      double x, y, tx, ty;
      gr_synth_homography_apply (h_index, u, v, &x, &y);
      gr_synth_homography_apply (ht, u, v, &tx, &ty);
      s += (x - tx) * (x - tx) + (y - ty) * (y - ty);
      n++;
    }
  return sqrt (s / n);
}

static void test_shared_windows (const char *vrt_path, const GrRaster *whole);

static void
test_vrt (void)
{
  char err[512] = "";
  GrSynthControlParams cp;
  gr_synth_control_params_init (&cp);
  cp.width = CW;
  cp.height = CH;
  cp.depth = 8;
  cp.seed = 18;
  cp.nodata_border = 0.06;
  cp.with_geo = true;
  GrSynthImage img;
  CHECK (gr_synth_control_generate (&cp, &img, err, sizeof err) == GR_OK, "synth: %s", err);
  uint8_t *bands[3];
  for (int b = 0; b < 3; b++) {
    bands[b] = malloc ((size_t) CW * CH);
    for (size_t i = 0; i < (size_t) CW * CH; i++) {
      float v = img.mask && !img.mask[i] ? 0.0f : floorf (img.band[b][i] + 0.5f);
      /* 0 is nodata: valid pixels are 1..255 */
      bool valid = !img.mask || img.mask[i];
      bands[b][i] = (uint8_t) (!valid ? 0 : v < 1 ? 1 : v > 255 ? 255 : v);
    }
  }

  /* the reference: one GeoTIFF, loaded whole */
  char *ref_path = tmp_path ("whole.tif");
  write_tif (ref_path, bands, 3, CW, 0, 0, CW, CH, img.geo, NULL);
  GrRaster whole;
  CHECK (gr_raster_load (ref_path, 0, &whole, err, sizeof err) == GR_OK, "load: %s", err);
  CHECK (whole.plane.mask != NULL, "the reference has a nodata rim");

  /* 16 x 12 = 192 tiles and a VRT over them */
  int ntx = CW / TILE, nty = CH / TILE;
  char **tiles = g_new0 (char *, ntx * nty + 1);
  gint64 t0 = g_get_monotonic_time ();
  for (int ty = 0; ty < nty; ty++)
    for (int tx = 0; tx < ntx; tx++) {
      double g[6] = { img.geo[0] + tx * TILE * img.geo[1], img.geo[1], 0,
        img.geo[3] + ty * TILE * img.geo[5], 0, img.geo[5]
      };
      char name[64];
      snprintf (name, sizeof name, "tile_%02d_%02d.tif", ty, tx);
      tiles[ty * ntx + tx] = tmp_path (name);
      write_tif (tiles[ty * ntx + tx], bands, 3, CW, tx * TILE, ty * TILE, TILE, TILE, g,
          NULL);
    }
  char *vrt_path = tmp_path ("mosaic.vrt");
  int usage_error = 0;
  GDALDatasetH vrt = GDALBuildVRT (vrt_path, ntx * nty, NULL,
      (const char *const *) tiles, NULL, &usage_error);
  CHECK (vrt != NULL, "GDALBuildVRT failed");
  GDALClose (vrt);
  printf ("vrt: %d tiles of %d x %d written in %.0f ms\n", ntx * nty, TILE, TILE,
      (g_get_monotonic_time () - t0) / 1000.0);

  /* blocks of 100 px (not aligned with the 64 px tiles), cache of 256 KiB: a tenth of
   * the control's floats, so blocks are evicted and decoded again */
  GrControlSourceParams sp = { .cache_bytes = 256 << 10, .block_size = 100 };
  GrControlSource *src = NULL;
  CHECK (gr_control_source_open (vrt_path, 0, &sp, &src, err, sizeof err) == GR_OK,
      "open vrt: %s", err);
  if (!src)
    exit (1);
  GrControlInfo info;
  gr_control_source_info (src, &info);
  CHECK (info.width == CW && info.height == CH && info.bands == 3 && info.bit_depth == 8
      && info.has_geo && fabs (info.geo[0] - whole.geo[0]) < 1e-6
      && fabs (info.geo[3] - whole.geo[3]) < 1e-6
      && fabs (info.geo[1] - whole.geo[1]) < 1e-12
      && fabs (info.geo[5] - whole.geo[5]) < 1e-12 && !info.in_memory
      && strcmp (info.driver, "GDAL/VRT") == 0,
      "vrt info %d x %d, %d bands, depth %d, geo %d, in memory %d, driver %s",
      info.width, info.height, info.bands, info.bit_depth, info.has_geo, info.in_memory,
      info.driver);
  GrControlCacheStats st0;
  gr_control_source_stats (src, &st0);
  CHECK (st0.misses == 0 && st0.blocks == 0, "opening read pixels");

  /* windows from pixel boxes, some at the edges */
  const double boxes[][4] = {
    { 0, 0, 1, 1 }, { 10.5, 20.2, 300.7, 180.1 }, { 500, 300, 820, 600 },
    { 900, 700, 1200, 900 }, { -50, -50, 2000, 2000 }, { 63, 63, 65, 65 },
  };
  for (size_t k = 0; k < G_N_ELEMENTS (boxes); k++) {
    GrControlWindow win;
    GrStatus st = gr_control_source_window (src, 0, boxes[k], 3.0, &win, err, sizeof err);
    CHECK (st == GR_OK, "window %zu: %s", k, err);
    if (st != GR_OK)
      continue;
    int ex0 = MAX (0, (int) floor (boxes[k][0] - 3));
    int ey0 = MAX (0, (int) floor (boxes[k][1] - 3));
    int ex1 = MIN (CW, (int) ceil (boxes[k][2] + 3));
    int ey1 = MIN (CH, (int) ceil (boxes[k][3] + 3));
    CHECK (win.level == 0 && win.x0 == ex0 && win.y0 == ey0
        && win.raster.plane.width == ex1 - ex0 && win.raster.plane.height == ey1 - ey0
        && win.off_x == ex0 && win.off_y == ey0 && win.scale_x == 1.0,
        "window %zu at (%d, %d) %d x %d, expected (%d, %d) %d x %d", k, win.x0, win.y0,
        win.raster.plane.width, win.raster.plane.height, ex0, ey0, ex1 - ex0, ey1 - ey0);
    window_equals_crop (&win, &whole, win.x0, win.y0, "vrt window");
    check_window_geo (&win, &whole, "vrt window");
    CHECK (gr_control_window_covers (&win, src, boxes[k]), "window %zu covers its box", k);
    gr_control_window_clear (&win);
  }

  /* windows given back are reused: the next window that fits is written into a kept
   * plane (the same values as a fresh one), one that does not fit gets its own */
  {
    const double a_box[4] = { 500, 300, 820, 600 }, b_box[4] = { 540, 320, 800, 580 };
    GrControlWindow a, b, c;
    CHECK (gr_control_source_window (src, 0, a_box, 0.0, &a, err, sizeof err) == GR_OK,
        "window a: %s", err);
    const float *a_data = a.raster.plane.data;
    CHECK (a.data_capacity >= (size_t) a.raster.plane.width * a.raster.plane.height,
        "window a holds its pixels (capacity %zu)", a.data_capacity);
    gr_control_source_window_release (src, &a);
    CHECK (a.raster.plane.data == NULL, "a released window holds nothing");
    CHECK (gr_control_source_window (src, 0, b_box, 0.0, &b, err, sizeof err) == GR_OK,
        "window b: %s", err);
    CHECK (b.raster.plane.data == a_data, "the smaller window b reuses a's plane");
    window_equals_crop (&b, &whole, b.x0, b.y0, "reused window");
    const double big_box[4] = { 0, 0, 1500, 1500 };
    CHECK (gr_control_source_window (src, 0, big_box, 0.0, &c, err, sizeof err) == GR_OK,
        "window c: %s", err);
    CHECK (c.raster.plane.data != b.raster.plane.data, "a larger window has its own plane");
    window_equals_crop (&c, &whole, c.x0, c.y0, "large window");
    gr_control_source_window_release (src, &b);
    gr_control_source_window_release (src, &c);
    gr_control_source_window_release (NULL, &c);        /* a cleared window, no source */
  }

  /* a box in map units */
  {
    double mb[4] = { img.geo[0] + 200.25 * img.geo[1], img.geo[3] + 400.75 * img.geo[5],
      img.geo[0] + 350.5 * img.geo[1], img.geo[3] + 250.5 * img.geo[5]
    };
    GrControlWindow win;
    CHECK (gr_control_source_window_map (src, 0, mb, 0.0, &win, err, sizeof err) == GR_OK,
        "map window: %s", err);
    CHECK (win.x0 == 200 && win.y0 == 250 && win.raster.plane.width == 151
        && win.raster.plane.height == 151, "map window at (%d, %d) %d x %d", win.x0, win.y0,
        win.raster.plane.width, win.raster.plane.height);
    window_equals_crop (&win, &whole, win.x0, win.y0, "map window");
    gr_control_window_clear (&win);
  }

  /* a box off the control, a NaN box, a negative margin, no such level */
  {
    GrControlWindow win;
    const double off[4] = { 2000, 2000, 2100, 2100 }, nan_box[4] = { NAN, 0, 10, 10 };
    CHECK (gr_control_source_window (src, 0, off, 0, &win, err, sizeof err) ==
        GR_ERR_INVALID, "a box off the control");
    CHECK (gr_control_source_window (src, 0, nan_box, 0, &win, err, sizeof err) ==
        GR_ERR_INVALID, "a NaN box");
    CHECK (gr_control_source_window (src, 0, boxes[1], -1, &win, err, sizeof err) ==
        GR_ERR_INVALID, "a negative margin");
    CHECK (gr_control_source_window (src, 5, boxes[1], 0, &win, err, sizeof err) ==
        GR_ERR_INVALID, "no level 5");
    CHECK (win.raster.plane.data == NULL, "nothing held after a failure");
  }

  /* 4 readers at once, sharing the cache */
  {
    GThread *th[4];
    ThreadArg args[4];
    for (int i = 0; i < 4; i++) {
      args[i] = (ThreadArg) { src, &whole, 100 + i, 0 };
      th[i] = g_thread_new ("reader", reader_thread, &args[i]);
    }
    for (int i = 0; i < 4; i++) {
      g_thread_join (th[i]);
      CHECK (args[i].ok, "reader thread %d", i);
    }
  }
  GrControlCacheStats cs;
  gr_control_source_stats (src, &cs);
  /* one block is 100 x 100 x 5 bytes at most; each of 4 readers may hold one over */
  CHECK (cs.bytes <= sp.cache_bytes && cs.peak_bytes <= sp.cache_bytes + 4 * 50000,
      "cache %llu bytes (peak %llu) over its bound %llu", (unsigned long long) cs.bytes,
      (unsigned long long) cs.peak_bytes, (unsigned long long) sp.cache_bytes);
  CHECK (cs.hits > 0 && cs.evictions > 0, "hits %llu evictions %llu",
      (unsigned long long) cs.hits, (unsigned long long) cs.evictions);
  printf ("vrt cache: %llu hits, %llu misses, %llu evictions, peak %llu bytes\n",
      (unsigned long long) cs.hits, (unsigned long long) cs.misses,
      (unsigned long long) cs.evictions, (unsigned long long) cs.peak_bytes);

  /* registration: on the whole control and on a window around the prior */
  {
    GrSynthPose pose;
    memset (&pose, 0, sizeof pose);
    pose.rotation_deg = 4.0;
    pose.scale = 1.05;
    pose.centre_x = 610.0;
    pose.centre_y = 390.0;
    double ht[9];
    gr_synth_pose_homography (&pose, FW, FH, ht);
    GrPlaneF cut = { 0 };
    CHECK (gr_synth_cut (&whole.plane, ht, FW, FH, 2, &cut) == GR_OK, "cut");
    GrSynthTone tone;
    gr_synth_tone_init (&tone, GR_SYNTH_TONE_GAMMA, 5);
    gr_synth_tone_apply (&tone, &cut, 255.0);
    gr_synth_add_noise (&cut, 3.0, 255.0, 6);
    for (int i = 0; i < FW * FH; i++)
      cut.data[i] = fminf (255.0f, fmaxf (0.0f, floorf (cut.data[i] + 0.5f)));
    GrPlaneF frame = cut;
    frame.mask = NULL;

    /* an offset prior (pixel corners) 5 px off the truth */
    double x, y;
    gr_synth_homography_apply (ht, -0.5, -0.5, &x, &y);
    const double prior[9] = { 1.05, 0, x + 0.5 + 5.0, 0, 1.05, y + 0.5 - 4.0, 0, 0, 1 };
    double h_whole[9], hi_whole[9], h_win[9], hi_win[9], prior_win[9], h_back[9];
    bool ok_whole = register_on (&whole.plane, &frame, prior, h_whole, hi_whole);

    /* the window: the prior's footprint plus the search reach (73 px windows) */
    double fb[4] = { INFINITY, INFINITY, -INFINITY, -INFINITY };
    for (int c = 0; c < 4; c++) {
      double u = c & 1 ? FW : 0, v = c & 2 ? FH : 0, px, py;
      gr_synth_homography_apply (prior, u, v, &px, &py);
      fb[0] = fmin (fb[0], px);
      fb[1] = fmin (fb[1], py);
      fb[2] = fmax (fb[2], px);
      fb[3] = fmax (fb[3], py);
    }
    GrControlWindow win;
    CHECK (gr_control_source_window (src, 0, fb, 64.0, &win, err, sizeof err) == GR_OK,
        "registration window: %s", err);
    gr_control_window_from_full (&win, prior, prior_win);
    bool ok_win = register_on (&win.raster.plane, &frame, prior_win, h_win, hi_win);
    if (ok_whole && ok_win) {
      gr_control_window_to_full (&win, h_win, h_back);
      /* the same transform (within float noise of the shifted coordinates) */
      double worst = 0.0;
      for (int v = 0; v <= FH; v += FH / 4)
        for (int u = 0; u <= FW; u += FW / 4) {
          double ax, ay, bx, by;
          gr_synth_homography_apply (h_whole, u, v, &ax, &ay);
          gr_synth_homography_apply (h_back, u, v, &bx, &by);
          worst = fmax (worst, hypot (ax - bx, ay - by));
        }
      /* the index form in full-control pixels: corners shifted by half a pixel */
      double hi_back[9];
      gr_control_window_to_full (&win, hi_win, hi_back);
      double rms_whole = truth_rms (hi_whole, ht), rms_win = truth_rms (hi_back, ht);
      printf ("registration: window %d x %d at (%d, %d); whole vs window %.2g px; truth "
          "RMS %.3f (whole) %.3f (window)\n", win.raster.plane.width,
          win.raster.plane.height, win.x0, win.y0, worst, rms_whole, rms_win);
      CHECK (worst < 1e-6, "window and whole registrations differ by %g px", worst);
      CHECK (rms_whole < 0.3 && rms_win < 0.3, "truth RMS %.3f / %.3f", rms_whole, rms_win);
    }
    gr_control_window_clear (&win);
    gr_synth_plane_free (&cut);
  }

  gr_control_source_free (src);
  test_shared_windows (vrt_path, &whole);
  gr_raster_clear (&whole);
  for (int i = 0; tiles[i]; i++)
    g_unlink (tiles[i]);
  g_strfreev (tiles);
  g_unlink (vrt_path);
  g_unlink (ref_path);
  g_free (vrt_path);
  g_free (ref_path);
  for (int b = 0; b < 3; b++)
    free (bands[b]);
  gr_synth_image_free (&img);
}

/* ------------------------------------------------------------------ the elements' cache */

static void
test_shared_windows (const char *vrt_path, const GrRaster *whole)
{
  char err[512] = "";
  GrStatus st;
  CHECK (gst_georeg_control_cache_count () == 0, "cache empty at start");
  GstGeoregControl *c1 = gst_georeg_control_open_windowed (vrt_path, 0, 1 << 20, &st, err,
      sizeof err);
  CHECK (c1 != NULL, "open_windowed: %s", err);
  gchar *dir = g_path_get_dirname (vrt_path);
  gchar *other_name = g_build_filename (dir, ".", "mosaic.vrt", NULL);
  GstGeoregControl *c2 = gst_georeg_control_open_windowed (other_name, 0, 2 << 20, &st,
      err, sizeof err);
  CHECK (c2 == c1 && gst_georeg_control_source (c1) != NULL
      && gst_georeg_control_raster (c1) == NULL && gst_georeg_control_cache_count () == 1,
      "two names of the same control share one source");
  if (!c1 || !c2)
    exit (1);

  /* the whole entry of the same file is its own, and equals the reference */
  GstGeoregControl *cw = gst_georeg_control_acquire (vrt_path, 0, &st, err, sizeof err);
  CHECK (cw && cw != c1 && gst_georeg_control_source (cw) == NULL
      && gst_georeg_control_cache_count () == 2, "whole and windowed entries are apart");
  if (cw) {
    GrControlWindow as_win = { .raster = *gst_georeg_control_raster (cw) };
    window_equals_crop (&as_win, whole, 0, 0, "whole entry of the VRT");
    CHECK (gst_georeg_control_window_px (cw, (const double[4]) { 0, 0, 10, 10 }, 0, 0, NULL,
            &st, err, sizeof err) == NULL && st == GR_ERR_INVALID, "no windows of a "
        "whole entry");
    gst_georeg_control_release (cw);
  }

  /* a flight: the frame's box moves 7 px right and 4 px down a frame; the window (48
   * px margin) is cut again only when the box leaves it */
  GstGeoregControlWindow *win = NULL;
  int cuts = 0;
  for (int f = 0; f < 60; f++) {
    double box[4] = { 80 + 7.0 * f, 60 + 4.0 * f, 80 + 7.0 * f + FW, 60 + 4.0 * f + FH };
    GstGeoregControlWindow *next = gst_georeg_control_window_px (c1, box, 0, 48.0, win,
        &st, err, sizeof err);
    CHECK (next != NULL, "frame %d: %s", f, err);
    if (!next)
      break;
    if (!win || gst_georeg_control_window_serial (next) !=
        gst_georeg_control_window_serial (win)) {
      cuts++;
      const GrControlWindow *w = gst_georeg_control_window_get (next);
      window_equals_crop (w, whole, w->x0, w->y0, "flight window");
    }
    CHECK (gr_control_window_covers (gst_georeg_control_window_get (next),
            gst_georeg_control_source (c1), box), "frame %d: the window holds the box", f);
    /* the next frame's box, ahead */
    double ahead[4] = { box[0] + 7, box[1] + 4, box[2] + 7, box[3] + 4 };
    gst_georeg_control_prefetch (c1, ahead, 0, 48.0);
    gst_georeg_control_window_unref (win);
    win = next;
  }
  printf ("flight of 60 frames: %d windows cut\n", cuts);
  CHECK (cuts >= 5 && cuts <= 12, "%d windows cut for 60 frames", cuts);
  gr_control_source_prefetch_wait (gst_georeg_control_source (c1));

  /* a map box (the prior's footprint in the control's CRS) */
  {
    const double *g = whole->geo;
    double mb[4] = { g[0] + 100 * g[1], g[3] + 300 * g[5], g[0] + 260 * g[1],
      g[3] + 180 * g[5] };
    GstGeoregControlWindow *mw = gst_georeg_control_window (c1, mb, 0, 8.0, NULL, &st,
        err, sizeof err);
    CHECK (mw != NULL, "map window: %s", err);
    if (mw) {
      const GrControlWindow *w = gst_georeg_control_window_get (mw);
      CHECK (w->x0 == 92 && w->y0 == 172 && w->raster.plane.width == 176,
          "map window at (%d, %d) %d wide", w->x0, w->y0, w->raster.plane.width);
      window_equals_crop (w, whole, w->x0, w->y0, "map window");
    }
    gst_georeg_control_window_unref (mw);
  }

  /* the window keeps its control alive */
  gst_georeg_control_release (c1);
  gst_georeg_control_release (c2);
  CHECK (gst_georeg_control_cache_count () == 1, "the window holds the control");
  if (win) {
    const GrControlWindow *w = gst_georeg_control_window_get (win);
    window_equals_crop (w, whole, w->x0, w->y0, "window after its control's release");
  }
  gst_georeg_control_window_unref (win);
  CHECK (gst_georeg_control_cache_count () == 0, "the last window released the control");

  /* no prior: the whole control as a window, and over a budget a clear refusal */
  c1 = gst_georeg_control_open_windowed (vrt_path, 0, 0, &st, err, sizeof err);
  GstGeoregControlWindow *all = gst_georeg_control_window_whole (c1, NULL, &st, err,
      sizeof err);
  CHECK (all != NULL, "whole window: %s", err);
  if (all)
    window_equals_crop (gst_georeg_control_window_get (all), whole, 0, 0, "whole window");
  gst_georeg_control_window_unref (all);
  GrRasterBudget small = { .max_pixels = 500 * 500 };
  CHECK (gst_georeg_control_window_whole (c1, &small, &st, err, sizeof err) == NULL
      && st == GR_ERR_FORMAT && strstr (err, "prior"), "over the budget: %s", err);
  gst_georeg_control_release (c1);

  CHECK (gst_georeg_control_open_windowed ("/nonexistent/control.tif", 0, 0, &st, err,
          sizeof err) == NULL && st == GR_ERR_IO, "a missing file: %s", err);
  CHECK (gst_georeg_control_cache_count () == 0, "cache empty at the end");
  g_free (other_name);
  g_free (dir);
}

/* ------------------------------------------------------------------ held whole */

/* A 16-bit gray Adam7-interlaced PNG: GDAL before 3.10.1 reads those byte-swapped, so
 * GDAL builds read them with libpng (raster.c) and a source holds them whole.  Where
 * GDAL is newer the same checks run through GDAL. */
static void
test_in_memory (void)
{
  char err[512] = "";
  char *path = tmp_path ("interlaced16.png");
  const int w = 300, h = 200;
  FILE *fp = fopen (path, "wb");
  png_structp png = png_create_write_struct (PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop pinfo = png_create_info_struct (png);
  if (!fp || !png || !pinfo || setjmp (png_jmpbuf (png))) {
    fprintf (stderr, "cannot write %s\n", path);
    exit (1);
  }
  png_init_io (png, fp);
  png_set_IHDR (png, pinfo, w, h, 16, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_ADAM7,
      PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  uint8_t *rows = malloc ((size_t) w * h * 2);
  png_bytep *rp = malloc (sizeof *rp * h);
  for (int y = 0; y < h; y++) {
    rp[y] = rows + (size_t) y * w * 2;
    for (int x = 0; x < w; x++) {
      unsigned v = (unsigned) (x * 211 + y * 97 + x * y) & 0xffff;
      rp[y][2 * x] = (uint8_t) (v >> 8);
      rp[y][2 * x + 1] = (uint8_t) v;
    }
  }
  png_set_rows (png, pinfo, rp);
  png_write_png (png, pinfo, PNG_TRANSFORM_IDENTITY, NULL);
  png_destroy_write_struct (&png, &pinfo);
  fclose (fp);

  GrRaster whole;
  CHECK (gr_raster_load (path, 0, &whole, err, sizeof err) == GR_OK, "load: %s", err);
  GrControlSource *src = NULL;
  CHECK (gr_control_source_open (path, 0, NULL, &src, err, sizeof err) == GR_OK,
      "open png: %s", err);
  if (src) {
    GrControlInfo info;
    gr_control_source_info (src, &info);
    const char *v = GDALVersionInfo ("VERSION_NUM");
    bool held = v && atoi (v) < 3100100;
    CHECK (info.width == w && info.height == h && info.bit_depth == 16 && info.levels == 1
        && info.in_memory == held, "png info %d x %d, depth %d, %d levels, in memory %d",
        info.width, info.height, info.bit_depth, info.levels, info.in_memory);
    const double box[4] = { 17.5, 33, 250, 190.5 };
    GrControlWindow win;
    CHECK (gr_control_source_window (src, 0, box, 2.0, &win, err, sizeof err) == GR_OK,
        "png window: %s", err);
    CHECK (win.x0 == 15 && win.y0 == 31 && win.raster.plane.width == 237
        && win.raster.plane.height == 162, "png window at (%d, %d) %d x %d", win.x0, win.y0,
        win.raster.plane.width, win.raster.plane.height);
    if (win.raster.plane.data)
      window_equals_crop (&win, &whole, win.x0, win.y0, "png window");
    gr_control_window_clear (&win);
    gr_control_source_prefetch (src, 0, box, 0);        /* nothing to decode ahead */
    gr_control_source_prefetch_wait (src);
    CHECK (gr_control_source_whole (src, NULL, &win, err, sizeof err) == GR_OK,
        "png whole: %s", err);
    if (win.raster.plane.data)
      window_equals_crop (&win, &whole, 0, 0, "png whole");
    gr_control_window_clear (&win);
    gr_control_source_free (src);
  }
  gr_raster_clear (&whole);
  free (rp);
  free (rows);
  g_unlink (path);
  g_free (path);
}

/* ------------------------------------------------------------------ 100k x 100k sparse */

#define BIG 100000
#define PATCH 1024
#define PX 61452                /* the patch's corner: multiples of 4 */
#define PY 40964

static void
test_sparse (void)
{
  char err[512] = "";
  char *path = tmp_path ("sparse.tif");
  const double geo[6] = { 500000.0, 0.05, 0, 4600000.0, 0, -0.05 };

  /* the patch (a synthesized control's green band) and its 4 x 4 average */
  uint8_t *patch = synth_gray8 (PATCH, 7), *small = malloc (PATCH / 4 * PATCH / 4);
  for (int y = 0; y < PATCH / 4; y++)
    for (int x = 0; x < PATCH / 4; x++) {
      int s = 0;
      for (int j = 0; j < 16; j++)
        s += patch[(size_t) (4 * y + j / 4) * PATCH + 4 * x + j % 4];
      small[y * (PATCH / 4) + x] = (uint8_t) ((s + 8) / 16);
    }

  gint64 t0 = g_get_monotonic_time ();
  char **opts = NULL;
  opts = CSLSetNameValue (opts, "TILED", "YES");
  opts = CSLSetNameValue (opts, "BLOCKXSIZE", "256");
  opts = CSLSetNameValue (opts, "BLOCKYSIZE", "256");
  opts = CSLSetNameValue (opts, "COMPRESS", "DEFLATE");
  opts = CSLSetNameValue (opts, "SPARSE_OK", "TRUE");
  GDALDatasetH ds = GDALCreate (GDALGetDriverByName ("GTiff"), path, BIG, BIG, 1, GDT_Byte,
      opts);
  CSLDestroy (opts);
  CHECK (ds != NULL, "cannot create the sparse GeoTIFF");
  if (!ds)
    return;
  GDALSetGeoTransform (ds, (double *) geo);
  /* overviews without computing them ("NONE"): their blocks stay sparse too */
  int factors[3] = { 4, 16, 64 };
  CPLSetThreadLocalConfigOption ("SPARSE_OK_OVERVIEW", "ON");
  CHECK (GDALBuildOverviews (ds, "NONE", 3, factors, 0, NULL, NULL, NULL) == CE_None,
      "overviews");
  CPLSetThreadLocalConfigOption ("SPARSE_OK_OVERVIEW", NULL);
  GDALRasterBandH band = GDALGetRasterBand (ds, 1);
  CHECK (GDALRasterIO (band, GF_Write, PX, PY, PATCH, PATCH, patch, PATCH, PATCH, GDT_Byte,
          0, 0) == CE_None, "patch");
  GDALRasterBandH ov = GDALGetOverview (band, 0);
  CHECK (ov && GDALRasterIO (ov, GF_Write, PX / 4, PY / 4, PATCH / 4, PATCH / 4, small,
          PATCH / 4, PATCH / 4, GDT_Byte, 0, 0) == CE_None, "overview patch");
  GDALClose (ds);
  GStatBuf fst;
  CHECK (g_stat (path, &fst) == 0 && fst.st_size < (40 << 20), "the sparse file takes %lld "
      "bytes", (long long) fst.st_size);
  printf ("sparse: %d x %d GeoTIFF with 3 overviews, %lld bytes on disk, made in %.0f ms\n",
      BIG, BIG, (long long) fst.st_size, (g_get_monotonic_time () - t0) / 1000.0);

  GrControlSource *src = NULL;
  t0 = g_get_monotonic_time ();
  CHECK (gr_control_source_open (path, 0, NULL, &src, err, sizeof err) == GR_OK,
      "open sparse: %s", err);
  if (!src)
    return;
  GrControlInfo info;
  gr_control_source_info (src, &info);
  printf ("sparse: opened in %.1f ms, %d levels\n", (g_get_monotonic_time () - t0) / 1000.0,
      info.levels);
  CHECK (info.width == BIG && info.height == BIG && info.levels == 4 && info.has_geo,
      "sparse info %d x %d, %d levels", info.width, info.height, info.levels);
  const int want[4] = { BIG, BIG / 4, BIG / 16, (BIG + 63) / 64 };
  for (int k = 0; k < info.levels && k < 4; k++) {
    int w, h;
    double sx, sy;
    CHECK (gr_control_source_level_size (src, k, &w, &h, &sx, &sy) && w == want[k] && h == w
        && fabs (sx - (double) BIG / w) < 1e-12, "level %d: %d x %d, scale %g", k, w, h,
        sx);
  }
  CHECK (!gr_control_source_level_size (src, 4, NULL, NULL, NULL, NULL), "no level 4");
  CHECK (gr_control_source_level_for_scale (src, 1.0) == 0
      && gr_control_source_level_for_scale (src, 0.3) == 0
      && gr_control_source_level_for_scale (src, 0.25) == 1
      && gr_control_source_level_for_scale (src, 0.1) == 1
      && gr_control_source_level_for_scale (src, 1.0 / 16) == 2
      && gr_control_source_level_for_scale (src, 0.001) == 3, "level choice");

  /* no prior: the whole control is refused from its size, at once, naming the cure */
  {
    GrControlWindow win;
    t0 = g_get_monotonic_time ();
    GrStatus st = gr_control_source_whole (src, NULL, &win, err, sizeof err);
    double ms = (g_get_monotonic_time () - t0) / 1000.0;
    printf ("sparse whole: %s (%.1f ms)\n", err, ms);
    CHECK (st == GR_ERR_FORMAT && strstr (err, "prior") && strstr (err, "100000 x 100000")
        && strstr (err, "level 2"), "whole refused asking for a prior: %s", err);
    CHECK (ms < 1000, "the refusal took %.0f ms", ms);
    CHECK (win.raster.plane.data == NULL, "nothing allocated");
    /* a window over the limit, too */
    const double all[4] = { 0, 0, BIG, BIG };
    CHECK (gr_control_source_window (src, 0, all, 0, &win, err, sizeof err) ==
        GR_ERR_INVALID && strstr (err, "over the limit"), "a huge window: %s", err);
  }

  /* level 0 around the patch, from a map box */
  double mb[4] = { geo[0] + (PX - 20) * geo[1], geo[3] + (PY + PATCH + 20) * geo[5],
    geo[0] + (PX + PATCH + 20) * geo[1], geo[3] + (PY - 20) * geo[5]
  };
  GrControlWindow win;
  CHECK (gr_control_source_window_map (src, 0, mb, 0.0, &win, err, sizeof err) == GR_OK,
      "sparse window: %s", err);
  if (win.raster.plane.data) {
    CHECK (win.x0 == PX - 20 && win.y0 == PY - 20 && win.raster.plane.width == PATCH + 40,
        "sparse window at (%d, %d) %d wide", win.x0, win.y0, win.raster.plane.width);
    long bad = 0;
    for (int y = 0; y < win.raster.plane.height; y++)
      for (int x = 0; x < win.raster.plane.width; x++) {
        int u = x - 20, v = y - 20;
        float want_v = (u >= 0 && v >= 0 && u < PATCH && v < PATCH) ?
            patch[(size_t) v * PATCH + u] : 0.0f;
        if (win.raster.plane.data[(size_t) y * win.raster.plane.stride + x] != want_v)
          bad++;
      }
    CHECK (bad == 0, "level 0: %ld pixels differ from the patch written", bad);
    CHECK (fabs (win.raster.geo[0] - (geo[0] + (PX - 20) * geo[1])) < 1e-6, "level 0 geo");
  }
  double pbox[4] = { PX, PY, PX + PATCH, PY + PATCH };
  CHECK (gr_control_window_covers (&win, src, pbox), "the window covers the patch");
  double moved[4] = { PX + 30, PY, PX + PATCH + 30, PY + PATCH };
  CHECK (!gr_control_window_covers (&win, src, moved), "a box that left the window");
  gr_control_window_clear (&win);

  /* overview 1 (factor 4): the 4 x 4 average written there, at the same map place */
  CHECK (gr_control_source_window (src, 1, pbox, 0.0, &win, err, sizeof err) == GR_OK,
      "level 1 window: %s", err);
  if (win.raster.plane.data) {
    CHECK (win.x0 == PX / 4 && win.y0 == PY / 4 && win.raster.plane.width == PATCH / 4
        && win.scale_x == 4.0 && win.off_x == PX && win.off_y == PY,
        "level 1 window at (%d, %d) %d wide, scale %g", win.x0, win.y0,
        win.raster.plane.width, win.scale_x);
    long bad = 0;
    for (int y = 0; y < PATCH / 4; y++)
      for (int x = 0; x < PATCH / 4; x++)
        if (win.raster.plane.data[(size_t) y * win.raster.plane.stride + x] !=
            small[y * (PATCH / 4) + x])
          bad++;
    CHECK (bad == 0, "level 1: %ld pixels differ from the overview written", bad);
    CHECK (fabs (win.raster.geo[1] - 0.2) < 1e-12 && fabs (win.raster.geo[0] -
            (geo[0] + PX * geo[1])) < 1e-6, "level 1 geotransform");
    /* a point of the window maps to the full control by the offset and scale */
    double hw[9] = { 1, 0, 10, 0, 1, 20, 0, 0, 1 }, hf[9], hb[9];
    gr_control_window_to_full (&win, hw, hf);
    CHECK (fabs (hf[2] - (PX + 40)) < 1e-9 && fabs (hf[5] - (PY + 80)) < 1e-9
        && fabs (hf[0] - 4) < 1e-12, "window -> full");
    gr_control_window_from_full (&win, hf, hb);
    for (int i = 0; i < 9; i++)
      CHECK (fabs (hb[i] - hw[i]) < 1e-9, "full -> window round trip");
  }
  gr_control_window_clear (&win);

  /* prefetch: the next box along the "flight" is decoded by the worker; reading it
   * then decodes nothing */
  {
    double next[4] = { PX + 1500, PY + 300, PX + 2100, PY + 800 };
    GrControlCacheStats a, b;
    gr_control_source_prefetch (src, 0, next, 16.0);
    gr_control_source_prefetch_wait (src);
    gr_control_source_stats (src, &a);
    CHECK (gr_control_source_window (src, 0, next, 16.0, &win, err, sizeof err) == GR_OK,
        "prefetched window: %s", err);
    gr_control_source_stats (src, &b);
    CHECK (a.prefetched > 0 && b.misses == a.misses && b.hits > a.hits,
        "prefetch: %llu prefetched, misses %llu -> %llu", (unsigned long long) a.prefetched,
        (unsigned long long) a.misses, (unsigned long long) b.misses);
    {
      long bad = 0;
      for (int y = 0; win.raster.plane.data && y < win.raster.plane.height; y++)
        for (int x = 0; x < win.raster.plane.width; x++)
          if (win.raster.plane.data[(size_t) y * win.raster.plane.stride + x] != 0.0f)
            bad++;
      CHECK (bad == 0, "prefetched window: %ld pixels differ", bad);
    }
    gr_control_window_clear (&win);
    /* a prefetch left queued when the source is freed is dropped */
    double far[4] = { 1000, 1000, 9000, 9000 };
    gr_control_source_prefetch (src, 0, far, 0);
  }

  gr_control_source_free (src);
  g_unlink (path);
  g_free (path);
  free (patch);
  free (small);
}

/* ------------------------------------------------------------------ a flight over 200k */

/* GEOREG_CONTROL_BENCH=1: a flight of 200 frames over a VRT of 200,000 x 200,000 px
 * (virtual size; 1024 px GeoTIFF tiles along the flight), windows through the
 * elements' cache with prefetch: first-window latency, time per frame, re-cuts, peak
 * RSS (docs/controls.md).  Not run in CI (it writes about 60 MB of tiles). */
static void
bench_flight (void)
{
  const int big = 200000, tile = 1024, n_frames = 200;
  const double step_x = 30, step_y = 20, fw = 1280, fh = 720, margin = 256;
  const double x_start = 50000, y_start = 50000;
  char err[512] = "";
  uint8_t *pix = synth_gray8 (tile, 3);
  const double g0[6] = { 300000.0, 0.05, 0, 5000000.0, 0, -0.05 };
  int tx0 = (int) ((x_start - margin - 64) / tile);
  int ty0 = (int) ((y_start - margin - 64) / tile);
  int tx1 = (int) ((x_start + n_frames * step_x + fw + 2 * margin + 64) / tile);
  int ty1 = (int) ((y_start + n_frames * step_y + fh + 2 * margin + 64) / tile);
  int nt = (tx1 - tx0 + 1) * (ty1 - ty0 + 1);
  char **tiles = g_new0 (char *, nt + 1);
  char **opts = CSLSetNameValue (NULL, "TILED", "YES");
  int k = 0;
  gint64 t0 = g_get_monotonic_time ();
  for (int ty = ty0; ty <= ty1; ty++)
    for (int tx = tx0; tx <= tx1; tx++) {
      double g[6] = { g0[0] + tx * tile * g0[1], g0[1], 0, g0[3] + ty * tile * g0[5], 0,
        g0[5]
      };
      char name[64];
      snprintf (name, sizeof name, "bench_%d_%d.tif", ty, tx);
      tiles[k] = tmp_path (name);
      uint8_t *one[1] = { pix };
      write_tif (tiles[k++], one, 1, tile, 0, 0, tile, tile, g, opts);
    }
  CSLDestroy (opts);
  char *vrt_path = tmp_path ("bench.vrt");
  char te[4][32];
  snprintf (te[0], 32, "%.6f", g0[0]);
  snprintf (te[1], 32, "%.6f", g0[3] + big * g0[5]);
  snprintf (te[2], 32, "%.6f", g0[0] + big * g0[1]);
  snprintf (te[3], 32, "%.6f", g0[3]);
  char *argv[] = { "-te", te[0], te[1], te[2], te[3], NULL };
  GDALBuildVRTOptions *vo = GDALBuildVRTOptionsNew (argv, NULL);
  int usage_error = 0;
  GDALDatasetH vrt = GDALBuildVRT (vrt_path, nt, NULL, (const char *const *) tiles, vo,
      &usage_error);
  GDALBuildVRTOptionsFree (vo);
  CHECK (vrt && GDALGetRasterXSize (vrt) == big && GDALGetRasterYSize (vrt) == big,
      "a %d x %d VRT", big, big);
  if (vrt)
    GDALClose (vrt);
  printf ("bench: %d tiles of %d px, VRT of %d x %d, written in %.1f s\n", nt, tile, big,
      big, (g_get_monotonic_time () - t0) / 1e6);

  GrStatus st;
  t0 = g_get_monotonic_time ();
  GstGeoregControl *c = gst_georeg_control_open_windowed (vrt_path, 0, 0, &st, err,
      sizeof err);
  CHECK (c != NULL, "open: %s", err);
  double open_ms = (g_get_monotonic_time () - t0) / 1000.0;
  GstGeoregControlWindow *win = NULL;
  int cuts = 0;
  double first_ms = 0, total_ms = 0, worst_ms = 0;
  for (int f = 0; c && f < n_frames; f++) {
    double x = x_start + f * step_x, y = y_start + f * step_y;
    double box[4] = { x, y, x + fw, y + fh };
    gint64 t1 = g_get_monotonic_time ();
    GstGeoregControlWindow *next = gst_georeg_control_window_px (c, box, 0, margin, win,
        &st, err, sizeof err);
    double ms = (g_get_monotonic_time () - t1) / 1000.0;
    CHECK (next != NULL, "frame %d: %s", f, err);
    if (!next)
      break;
    if (next != win)
      cuts++;
    if (f == 0)
      first_ms = ms;
    else
      total_ms += ms;
    worst_ms = f > 0 && ms > worst_ms ? ms : worst_ms;
    /* where the frame will be in 4 frames, ahead */
    double ahead[4] = { box[0] + 4 * step_x, box[1] + 4 * step_y, box[2] + 4 * step_x,
      box[3] + 4 * step_y
    };
    gst_georeg_control_prefetch (c, ahead, 0, margin);
    gst_georeg_control_window_unref (win);
    win = next;
    /* a real element spends its frame time registering (33 ms at 30 fps) */
    g_usleep (5000);
  }
  GrControlCacheStats cs;
  gr_control_source_stats (gst_georeg_control_source (c), &cs);
  gst_georeg_control_window_unref (win);
  gst_georeg_control_release (c);
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  printf ("bench: open %.1f ms, first window %.1f ms, then %.2f ms a frame (worst %.1f) "
      "over %d frames, %d windows cut, cache %llu hits %llu misses (%llu prefetched), "
      "peak %.1f MiB; peak RSS %.1f MiB\n", open_ms, first_ms, total_ms / (n_frames - 1),
      worst_ms, n_frames, cuts, (unsigned long long) cs.hits,
      (unsigned long long) cs.misses, (unsigned long long) cs.prefetched,
      cs.peak_bytes / 1048576.0, ru.ru_maxrss / 1024.0);
  for (int i = 0; tiles[i]; i++)
    g_unlink (tiles[i]);
  g_strfreev (tiles);
  g_unlink (vrt_path);
  g_free (vrt_path);
  free (pix);
}

int
main (void)
{
  GError *gerr = NULL;
  GDALAllRegister ();
  tmpdir = g_dir_make_tmp ("georeg-control-XXXXXX", &gerr);
  if (!tmpdir) {
    fprintf (stderr, "tmpdir: %s\n", gerr->message);
    return 1;
  }
  gint64 t0 = g_get_monotonic_time ();
  test_vrt ();
  gint64 t1 = g_get_monotonic_time ();
  test_sparse ();
  test_in_memory ();
  if (g_getenv ("GEOREG_CONTROL_BENCH"))
    bench_flight ();
  printf ("times: tiled VRT %.2f s, sparse %.2f s\n", (t1 - t0) / 1e6,
      (g_get_monotonic_time () - t1) / 1e6);
  g_rmdir (tmpdir);
  g_free (tmpdir);

  /* the whole test (a 100,000 x 100,000 control: 50 GB as floats) in bounded memory */
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  printf ("peak resident memory: %.1f MiB\n", ru.ru_maxrss / 1024.0);
#if defined(__SANITIZE_ADDRESS__)
  /* AddressSanitizer keeps freed memory in quarantine (256 MiB) and redzones */
  const long limit_mib = 1200;
#else
  const long limit_mib = 400;
#endif
  CHECK (ru.ru_maxrss < limit_mib * 1024, "peak resident memory %.1f MiB (limit %ld)",
      ru.ru_maxrss / 1024.0, limit_mib);
  return CHECK_DONE ();
}
#else
int
main (void)
{
  printf ("SKIP: built without GDAL (windows of tiled controls need it)\n");
  return 77;
}
#endif
