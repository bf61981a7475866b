/* georeg-synth: procedural control imagery and synthetic drone frames with ground truth.
 *
 *   georeg-synth control --out DIR/control.png [--width 1024] [--height 768] [--seed 1]
 *       [--depth 8|16] [--nodata-border FRAC] [--pixel-size 0.1] [--origin-x X]
 *       [--origin-y Y] [--no-geo]
 *   georeg-synth frames --control PATH --out DIR [--count N] [--width W] [--height H]
 *       [--seed S] [--control-band B] [--frame-band B|nir|color] [--tone KIND]
 *       [--noise SIGMA] [--rotation-max DEG] [--scale-min S] [--scale-max S]
 *       [--perspective P] [--nodata-border FRAC] [--border-kind KIND]
 *       [--format gray8|gray16|rgba] [--margin PX] [--control-nodata auto|none|V]
 *       [--nodata-min-area PX] [--supersample N] [--tilt-max DEG] [--focal PX]
 *       [--k1 K] [--k2 K] [--p1 P] [--p2 P]
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "synth.h"
#include "raster.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
fail (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  fputs ("georeg-synth: error: ", stderr);
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
  return 1;
}

static bool
make_parent_dir (const char *path)
{
  char *dir = g_path_get_dirname (path);
  int rc = g_mkdir_with_parents (dir, 0755);
  g_free (dir);
  return rc == 0;
}

/* ------------------------------------------------------------------ control */

static int
cmd_control (int argc, char **argv)
{
  GrSynthControlParams p;
  gr_synth_control_params_init (&p);
  char *out = NULL;
  gint width = p.width, height = p.height, depth = p.depth;
  gint64 seed = 1;
  gdouble border = 0.0, pixel = p.pixel_size, ox = p.origin_x, oy = p.origin_y;
  gboolean no_geo = FALSE;
  GOptionEntry entries[] = {
    { "out", 'o', 0, G_OPTION_ARG_FILENAME, &out, "output PNG (a .pgw world file is "
      "written beside it)", "PATH" },
    { "width", 'W', 0, G_OPTION_ARG_INT, &width, "width in pixels (default 1024)", "PX" },
    { "height", 'H', 0, G_OPTION_ARG_INT, &height, "height in pixels (default 768)", "PX" },
    { "seed", 's', 0, G_OPTION_ARG_INT64, &seed, "random seed (default 1)", "N" },
    { "depth", 'd', 0, G_OPTION_ARG_INT, &depth, "bits per sample: 8 or 16 (default 8)",
      "BITS" },
    { "nodata-border", 0, 0, G_OPTION_ARG_DOUBLE, &border, "irregular no-data rim (alpha "
      "0) up to FRAC of the smaller side, 0..0.45 (default 0: no alpha)", "FRAC" },
    { "pixel-size", 0, 0, G_OPTION_ARG_DOUBLE, &pixel, "map units per pixel (default 0.1)",
      "M" },
    { "origin-x", 0, 0, G_OPTION_ARG_DOUBLE, &ox, "map x of the top-left corner "
      "(default 431000)", "X" },
    { "origin-y", 0, 0, G_OPTION_ARG_DOUBLE, &oy, "map y of the top-left corner "
      "(default 4577000)", "Y" },
    { "no-geo", 0, 0, G_OPTION_ARG_NONE, &no_geo, "write no world file", NULL },
    { NULL }
  };
  GOptionContext *ctx = g_option_context_new ("- write a procedural aerial control image");
  g_option_context_add_main_entries (ctx, entries, NULL);
  GError *err = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    int rc = fail ("control: %s", err->message);
    g_error_free (err);
    g_option_context_free (ctx);
    return rc;
  }
  g_option_context_free (ctx);
  if (argc > 1)
    return fail ("control: unexpected argument '%s'", argv[1]);
  if (!out)
    return fail ("control: --out PATH is required");
  if (seed < 0)
    return fail ("control: --seed must be >= 0");
  p.width = width;
  p.height = height;
  p.depth = depth;
  p.seed = (uint64_t) seed;
  p.nodata_border = border;
  p.pixel_size = pixel;
  p.origin_x = ox;
  p.origin_y = oy;
  p.with_geo = !no_geo;

  char ebuf[512];
  GrSynthImage img;
  GrStatus st = gr_synth_control_generate (&p, &img, ebuf, sizeof (ebuf));
  if (st != GR_OK)
    return fail ("control: %s", ebuf);
  if (!make_parent_dir (out)) {
    gr_synth_image_free (&img);
    return fail ("control: cannot create the folder of '%s'", out);
  }
  st = gr_synth_image_write_png (out, &img, ebuf, sizeof (ebuf));
  char *wld = NULL;
  if (st == GR_OK && img.has_geo) {
    wld = gr_synth_world_file_path (out);
    st = gr_synth_world_file_write (wld, img.geo, ebuf, sizeof (ebuf));
  }
  if (st != GR_OK) {
    gr_synth_image_free (&img);
    free (wld);
    return fail ("control: %s", ebuf);
  }
  printf ("georeg-synth: control %dx%d %s %d-bit seed %" G_GINT64_FORMAT " -> %s%s%s\n",
      img.width, img.height, img.mask ? "RGBA" : "RGB", img.depth, seed, out,
      wld ? " + " : "", wld ? wld : "");
  free (wld);
  gr_synth_image_free (&img);
  g_free (out);
  return 0;
}

/* ------------------------------------------------------------------ frames */

/* Chamfer (3-4) distance, in pixels, from each pixel to the nearest invalid one; the
 * outside of the image counts as invalid.  So a valid pixel beside the edge gets 1. */
static float *
valid_distance (const GrPlaneF *p)
{
  const int W = p->width + 2, H = p->height + 2;
  float *d = malloc (sizeof (float) * (size_t) W * H);
  if (!d)
    return NULL;
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      bool in = x > 0 && y > 0 && x < W - 1 && y < H - 1
          && (!p->mask || p->mask[(size_t) (y - 1) * p->width + (x - 1)]);
      d[(size_t) y * W + x] = in ? 1e9f : 0.0f;
    }
  for (int y = 1; y < H - 1; y++)
    for (int x = 1; x < W - 1; x++) {
      float *c = &d[(size_t) y * W + x];
      float v = *c;
      v = fminf (v, c[-1] + 3);
      v = fminf (v, c[-W] + 3);
      v = fminf (v, c[-W - 1] + 4);
      v = fminf (v, c[-W + 1] + 4);
      *c = v;
    }
  for (int y = H - 2; y >= 1; y--)
    for (int x = W - 2; x >= 1; x--) {
      float *c = &d[(size_t) y * W + x];
      float v = *c;
      v = fminf (v, c[1] + 3);
      v = fminf (v, c[W] + 3);
      v = fminf (v, c[W + 1] + 4);
      v = fminf (v, c[W - 1] + 4);
      *c = v;
    }
  /* unpad, in units of pixels */
  float *o = malloc (sizeof (float) * (size_t) p->width * p->height);
  if (o)
    for (int y = 0; y < p->height; y++)
      for (int x = 0; x < p->width; x++)
        o[(size_t) y * p->width + x] = d[(size_t) (y + 1) * W + x + 1] / 3.0f;
  free (d);
  return o;
}

/* True when the 4 bilinear neighbours of (x, y) are at least `need` from no-data. */
static bool
point_ok (const float *dist, int W, int H, double x, double y, double need)
{
  if (!(x >= 0 && y >= 0 && x <= W - 1 && y <= H - 1))
    return false;
  int x0 = (int) floor (x), y0 = (int) floor (y);
  int x1 = x0 + 1 < W ? x0 + 1 : x0, y1 = y0 + 1 < H ? y0 + 1 : y0;
  return dist[(size_t) y0 * W + x0] >= need && dist[(size_t) y0 * W + x1] >= need
      && dist[(size_t) y1 * W + x0] >= need && dist[(size_t) y1 * W + x1] >= need;
}

static bool
map_ok (const float *dist, int W, int H, const double hm[9], int u, int v, double need)
{
  double x, y;
  return gr_synth_homography_apply (hm, u, v, &x, &y)
      && point_ok (dist, W, H, x, y, need);
}

/* Whether the footprint of a w x h frame under hm lies in the valid area, `need` away
 * from no-data: every pixel of the frame's edges, and the inside on a 3-pixel grid
 * (gr_synth_cut's mask then confirms every pixel). */
static bool
footprint_ok (const float *dist, int W, int H, const double hm[9], int w, int h,
    double need)
{
  for (int u = 0; u < w; u++)
    if (!map_ok (dist, W, H, hm, u, 0, need) || !map_ok (dist, W, H, hm, u, h - 1, need))
      return false;
  for (int v = 0; v < h; v++)
    if (!map_ok (dist, W, H, hm, 0, v, need) || !map_ok (dist, W, H, hm, w - 1, v, need))
      return false;
  for (int v = 3; v < h - 1; v += 3)
    for (int u = 3; u < w - 1; u += 3)
      if (!map_ok (dist, W, H, hm, u, v, need))
        return false;
  return true;
}

typedef enum { FB_BAND, FB_NIR, FB_COLOR } FrameBandKind;

typedef enum { FMT_GRAY8, FMT_GRAY16, FMT_RGBA } FrameFormat;

static void
free_rasters (GrRaster *r, int n)
{
  for (int i = 0; i < n; i++)
    gr_raster_clear (&r[i]);
}

static int
cmd_frames (int argc, char **argv)
{
  char *control = NULL, *outdir = NULL, *frame_band_s = NULL, *tone_s = NULL;
  char *format_s = NULL, *border_kind_s = NULL, *nodata_s = NULL;
  gint nodata_min_area = 64;
  gint count = 10, width = 256, height = 192, control_band = 0, supersample = 0;
  gint64 seed = 1;
  gdouble noise = 0.0, rot_max = 0.0, scale_min = 1.0, scale_max = 1.0, persp = 0.0;
  gdouble border = 0.0, margin = 0.0;
  gdouble tilt_max = 0.0, focal = 0.0, k1 = 0.0, k2 = 0.0, p1 = 0.0, p2 = 0.0;
  GOptionEntry entries[] = {
    { "control", 'c', 0, G_OPTION_ARG_FILENAME, &control, "control image (PNG/JPEG + "
      "world file, or any GDAL raster when built with GDAL)", "PATH" },
    { "out", 'o', 0, G_OPTION_ARG_FILENAME, &outdir, "output folder (created)", "DIR" },
    { "count", 'n', 0, G_OPTION_ARG_INT, &count, "number of frames (default 10)", "N" },
    { "width", 'W', 0, G_OPTION_ARG_INT, &width, "frame width (default 256)", "PX" },
    { "height", 'H', 0, G_OPTION_ARG_INT, &height, "frame height (default 192)", "PX" },
    { "seed", 's', 0, G_OPTION_ARG_INT64, &seed, "random seed (default 1); frame i "
      "depends only on the seed, i and the options", "N" },
    { "control-band", 0, 0, G_OPTION_ARG_INT, &control_band, "control band for the "
      "localizer: 0 = luminance (default), 1..bands", "B" },
    { "frame-band", 0, 0, G_OPTION_ARG_STRING, &frame_band_s, "frame source: a band "
      "number (0 = luminance), 'nir' (0.7 G - 0.3 R + 0.3 max) or 'color' (R,G,B; "
      "rgba only); default: the control band", "B" },
    { "tone", 0, 0, G_OPTION_ARG_STRING, &tone_s, "tone curve: none (default), gamma, "
      "scurve, lut or invert (parameters drawn once per run from the seed)", "KIND" },
    { "noise", 0, 0, G_OPTION_ARG_DOUBLE, &noise, "Gaussian noise sigma on a 0..255 "
      "scale (default 0)", "SIGMA" },
    { "rotation-max", 0, 0, G_OPTION_ARG_DOUBLE, &rot_max, "rotation uniform in "
      "[-DEG, DEG] (default 0)", "DEG" },
    { "scale-min", 0, 0, G_OPTION_ARG_DOUBLE, &scale_min, "smallest scale, frame pixel "
      "/ control pixel (default 1)", "S" },
    { "scale-max", 0, 0, G_OPTION_ARG_DOUBLE, &scale_max, "largest scale (default 1)",
      "S" },
    { "perspective", 0, 0, G_OPTION_ARG_DOUBLE, &persp, "perspective strength: the "
      "homography's denominator varies by up to +-P/2 across the frame (default 0)",
      "P" },
    { "nodata-border", 0, 0, G_OPTION_ARG_DOUBLE, &border, "no-data borders in the "
      "frames, up to FRAC of the frame size, 0..0.5 (default 0: none)", "FRAC" },
    { "border-kind", 0, 0, G_OPTION_ARG_STRING, &border_kind_s, "random (default), "
      "strips, corners or footprint", "KIND" },
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_s, "gray8 (default), gray16 or "
      "rgba (alpha = validity); gray formats write 0 where invalid", "FMT" },
    { "margin", 0, 0, G_OPTION_ARG_DOUBLE, &margin, "keep every frame footprint at "
      "least PX control pixels from no-data and the control's edge (default 0)", "PX" },
    { "control-nodata", 0, 0, G_OPTION_ARG_STRING, &nodata_s, "for a control without "
      "mask or alpha: pixels equal to V in every colour band are no-data; 'auto' "
      "(default) takes the corners' value when all four corners agree on 0 or the "
      "maximum, 'none' never", "V" },
    { "nodata-min-area", 0, 0, G_OPTION_ARG_INT, &nodata_min_area, "no-data groups "
      "smaller than this many pixels stay valid (default 64)", "PX" },
    { "supersample", 0, 0, G_OPTION_ARG_INT, &supersample, "samples per frame pixel "
      "per axis; 0 = ceil(scale) (default)", "N" },
    { "tilt-max", 0, 0, G_OPTION_ARG_DOUBLE, &tilt_max, "camera pitch and roll each "
      "uniform in [-DEG, DEG], 0..60: frames are tilted pinhole views of the flat "
      "control (heading = the rotation, scale = ground resolution at nadir); writes "
      "camera.csv (default 0)", "DEG" },
    { "focal", 0, 0, G_OPTION_ARG_DOUBLE, &focal, "camera focal length in frame pixels "
      "(default: the frame width)", "PX" },
    { "k1", 0, 0, G_OPTION_ARG_DOUBLE, &k1, "Brown-Conrady radial k1 of the camera's "
      "lens (default 0)", "K" },
    { "k2", 0, 0, G_OPTION_ARG_DOUBLE, &k2, "radial k2 (default 0)", "K" },
    { "p1", 0, 0, G_OPTION_ARG_DOUBLE, &p1, "tangential p1 (default 0)", "P" },
    { "p2", 0, 0, G_OPTION_ARG_DOUBLE, &p2, "tangential p2 (default 0)", "P" },
    { NULL }
  };
  GOptionContext *ctx = g_option_context_new ("- cut synthetic drone frames with truth");
  g_option_context_add_main_entries (ctx, entries, NULL);
  GError *err = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    int rc = fail ("frames: %s", err->message);
    g_error_free (err);
    g_option_context_free (ctx);
    return rc;
  }
  g_option_context_free (ctx);
  if (argc > 1)
    return fail ("frames: unexpected argument '%s'", argv[1]);
  if (!control)
    return fail ("frames: --control PATH is required");
  if (!outdir)
    return fail ("frames: --out DIR is required");
  if (count < 1 || count > 1000000)
    return fail ("frames: --count %d out of range (1..1000000)", count);
  if (width < 1 || height < 1 || width > 16384 || height > 16384)
    return fail ("frames: frame size %dx%d out of range (1..16384)", width, height);
  if (seed < 0)
    return fail ("frames: --seed must be >= 0");
  if (!(noise >= 0))
    return fail ("frames: --noise must be >= 0");
  if (!(rot_max >= 0 && rot_max <= 180))
    return fail ("frames: --rotation-max must be in 0..180");
  if (!(scale_min > 0 && scale_max >= scale_min && scale_max <= 64))
    return fail ("frames: need 0 < --scale-min <= --scale-max <= 64");
  if (!(persp >= 0 && persp < 1))
    return fail ("frames: --perspective must be in [0, 1)");
  if (!(tilt_max >= 0 && tilt_max <= 60) || !(focal >= 0))
    return fail ("frames: --tilt-max must be in 0..60 and --focal >= 0");
  const gboolean use_camera = tilt_max > 0 || k1 != 0 || k2 != 0 || p1 != 0 || p2 != 0;
  if (use_camera && persp > 0)
    return fail ("frames: --perspective and the camera (--tilt-max, --k1, ...) exclude "
        "each other: the camera's tilt is its perspective");
  if (!(border >= 0 && border <= 0.5))
    return fail ("frames: --nodata-border must be in 0..0.5");
  if (!(margin >= 0))
    return fail ("frames: --margin must be >= 0");
  if (supersample < 0 || supersample > 16)
    return fail ("frames: --supersample must be in 0..16");
  if (control_band < 0)
    return fail ("frames: --control-band must be >= 0");
  bool nodata_auto = true, nodata_fixed = false;
  double nodata_v = 0.0;
  if (nodata_s && strcmp (nodata_s, "auto") != 0) {
    nodata_auto = false;
    if (strcmp (nodata_s, "none") != 0) {
      char *end;
      nodata_v = strtod (nodata_s, &end);
      if (end == nodata_s || *end)
        return fail ("frames: --control-nodata '%s': expected auto, none or a number",
            nodata_s);
      nodata_fixed = true;
    }
  }
  if (nodata_min_area < 1)
    return fail ("frames: --nodata-min-area must be >= 1");

  FrameBandKind fbk = FB_BAND;
  int frame_band = control_band;
  if (frame_band_s) {
    if (!strcmp (frame_band_s, "nir"))
      fbk = FB_NIR;
    else if (!strcmp (frame_band_s, "color") || !strcmp (frame_band_s, "rgb"))
      fbk = FB_COLOR;
    else {
      char *end;
      long b = strtol (frame_band_s, &end, 10);
      if (end == frame_band_s || *end || b < 0 || b > 64)
        return fail ("frames: --frame-band '%s': expected a band number, nir or color",
            frame_band_s);
      frame_band = (int) b;
    }
  }
  int tone_kind = tone_s ? gr_synth_tone_kind_from_string (tone_s) : GR_SYNTH_TONE_NONE;
  if (tone_kind < 0)
    return fail ("frames: --tone '%s': expected none, gamma, scurve, lut or invert",
        tone_s);
  int border_kind = border_kind_s ? gr_synth_border_kind_from_string (border_kind_s)
      : GR_SYNTH_BORDER_RANDOM;
  if (border_kind < 0)
    return fail ("frames: --border-kind '%s': expected random, strips, corners or "
        "footprint", border_kind_s);
  FrameFormat fmt = FMT_GRAY8;
  if (format_s) {
    if (!strcmp (format_s, "gray8"))
      fmt = FMT_GRAY8;
    else if (!strcmp (format_s, "gray16"))
      fmt = FMT_GRAY16;
    else if (!strcmp (format_s, "rgba"))
      fmt = FMT_RGBA;
    else
      return fail ("frames: --format '%s': expected gray8, gray16 or rgba", format_s);
  }
  if (fbk == FB_COLOR && fmt != FMT_RGBA)
    return fail ("frames: --frame-band color needs --format rgba");

  /* ---- load the control band, then the frame source bands */
  char ebuf[1024];
  GrRaster ctl;
  GrStatus st = gr_raster_load (control, control_band, &ctl, ebuf, sizeof (ebuf));
  if (st != GR_OK)
    return fail ("frames: cannot load control band %d: %s", control_band, ebuf);
  const int CW = ctl.plane.width, CH = ctl.plane.height;
  GrRaster src[3];
  memset (src, 0, sizeof (src));
  int nsrc = 0;
  const GrPlaneF *srcp[3] = { NULL, NULL, NULL };
  int want[3], nwant = 0;
  if (fbk == FB_BAND) {
    want[nwant++] = frame_band;
  } else {
    if (ctl.bands < 3) {
      gr_raster_clear (&ctl);
      return fail ("frames: --frame-band %s needs a control with 3 colour bands; '%s' "
          "has %d", frame_band_s, control, ctl.bands);
    }
    want[nwant++] = 1;
    want[nwant++] = 2;
    if (fbk == FB_COLOR)
      want[nwant++] = 3;
  }
  for (int k = 0; k < nwant; k++) {
    if (want[k] == control_band) {
      srcp[k] = &ctl.plane;
      continue;
    }
    st = gr_raster_load (control, want[k], &src[nsrc], ebuf, sizeof (ebuf));
    if (st != GR_OK) {
      free_rasters (src, nsrc);
      gr_raster_clear (&ctl);
      return fail ("frames: cannot load frame band %d: %s", want[k], ebuf);
    }
    if (src[nsrc].plane.width != CW || src[nsrc].plane.height != CH) {
      free_rasters (src, nsrc + 1);
      gr_raster_clear (&ctl);
      return fail ("frames: band %d of '%s' has another size", want[k], control);
    }
    srcp[k] = &src[nsrc].plane;
    nsrc++;
  }
  double maxval = ctl.bit_depth == 16 ? 65535.0 : 255.0;
  if (ctl.bit_depth != 8 && ctl.bit_depth != 16) {
    /* float rasters: the largest valid value of the bands used */
    maxval = 0.0;
    const GrPlaneF *all[4] = { &ctl.plane, srcp[0], srcp[1], srcp[2] };
    for (int k = 0; k < 4; k++) {
      const GrPlaneF *p = all[k];
      if (!p)
        continue;
      for (int y = 0; y < p->height; y++)
        for (int x = 0; x < p->width; x++)
          if ((!p->mask || p->mask[(size_t) y * p->width + x])
              && p->data[(size_t) y * p->stride + x] > maxval)
            maxval = p->data[(size_t) y * p->stride + x];
    }
    if (!(maxval > 0))
      maxval = 1.0;
  }
  int ctl_out_depth = ctl.bit_depth == 8 ? 8 : 16;

  /* ---- no-data by value when the file has no mask */
  char nodata_note[128] = "file mask";
  if (!ctl.plane.mask)
    snprintf (nodata_note, sizeof (nodata_note), "none");
  if (!ctl.plane.mask && (nodata_auto || nodata_fixed)) {
    int nb = ctl.bands >= 3 ? 3 : 1;
    GrRaster colour[3];
    memset (colour, 0, sizeof (colour));
    GrPlaneF cp[3];
    for (int k = 0; k < nb; k++) {
      st = gr_raster_load (control, k + 1, &colour[k], ebuf, sizeof (ebuf));
      if (st != GR_OK) {
        free_rasters (colour, k);
        free_rasters (src, nsrc);
        gr_raster_clear (&ctl);
        return fail ("frames: cannot load band %d: %s", k + 1, ebuf);
      }
      cp[k] = colour[k].plane;
    }
    float v = (float) nodata_v;
    bool use = nodata_fixed;
    if (nodata_auto) {
      use = gr_synth_guess_nodata (cp, nb, &v) && (v == 0.0f || v == (float) maxval);
    }
    if (use) {
      uint8_t *m = malloc ((size_t) CW * CH);
      long bad = m ? gr_synth_mask_from_value (cp, nb, v, nodata_min_area, m) : -1;
      if (bad < 0) {
        free (m);
        free_rasters (colour, nb);
        free_rasters (src, nsrc);
        gr_raster_clear (&ctl);
        return fail ("frames: out of memory");
      }
      snprintf (nodata_note, sizeof (nodata_note), "value %g%s, %ld px", (double) v,
          nodata_auto ? " (auto)" : "", bad);
      if (bad > 0) {
        GrPlaneF *targets[4] = { &ctl.plane, &src[0].plane, &src[1].plane, &src[2].plane };
        for (int k = 0; k < 1 + nsrc; k++) {
          free (targets[k]->mask);
          targets[k]->mask = malloc ((size_t) CW * CH);
          if (!targets[k]->mask) {
            free (m);
            free_rasters (colour, nb);
            free_rasters (src, nsrc);
            gr_raster_clear (&ctl);
            return fail ("frames: out of memory");
          }
          memcpy (targets[k]->mask, m, (size_t) CW * CH);
        }
      }
      free (m);
    }
    free_rasters (colour, nb);
  }

  /* ---- output folder, control band (+ world file) */
  int rc = 0;
  float *dist = NULL;
  char *path = NULL;
  FILE *csv = NULL, *cam_csv = NULL;
  if (g_mkdir_with_parents (outdir, 0755) != 0) {
    rc = fail ("frames: cannot create folder '%s'", outdir);
    goto done;
  }
  path = g_build_filename (outdir, "control_band.png", NULL);
  {
    const float *pl[1] = { ctl.plane.data };
    st = gr_synth_png_write (path, pl, 1, ctl.plane.mask, CW, CH, maxval, ctl_out_depth,
        ebuf, sizeof (ebuf));
  }
  if (st == GR_OK && ctl.has_geo) {
    char *wld = gr_synth_world_file_path (path);
    st = gr_synth_world_file_write (wld, ctl.geo, ebuf, sizeof (ebuf));
    free (wld);
  }
  g_free (path);
  path = NULL;
  if (st != GR_OK) {
    rc = fail ("frames: %s", ebuf);
    goto done;
  }

  dist = valid_distance (&ctl.plane);
  if (!dist) {
    rc = fail ("frames: out of memory");
    goto done;
  }
  path = g_build_filename (outdir, "truth.csv", NULL);
  csv = fopen (path, "w");
  if (!csv) {
    rc = fail ("frames: cannot write '%s'", path);
    goto done;
  }
  gr_synth_truth_write_header (csv);
  if (use_camera) {
    g_free (path);
    path = g_build_filename (outdir, "camera.csv", NULL);
    cam_csv = fopen (path, "w");
    if (!cam_csv) {
      rc = fail ("frames: cannot write '%s'", path);
      goto done;
    }
    gr_synth_camera_write_header (cam_csv);
  }

  GrSynthTone tone;
  gr_synth_tone_init (&tone, (GrSynthToneKind) tone_kind, gr_synth_seed_mix (seed, 0x746f6e65));
  const double sigma = noise * maxval / 255.0;
  int placed_tries = 0;
  for (int i = 0; i < count; i++) {
    uint64_t fseed = gr_synth_seed_mix ((uint64_t) seed, (uint64_t) i);
    GrSynthRng rng;
    gr_synth_rng_init (&rng, fseed);
    GrSynthPose pose;
    GrSynthCamera cam;
    double hm[9];
    bool placed = false;
    GrPlaneF cut[3];
    memset (cut, 0, sizeof (cut));
    int ss = 1;
    for (int attempt = 0; attempt < 20000 && !placed; attempt++) {
      placed_tries++;
      memset (&pose, 0, sizeof (pose));
      pose.rotation_deg = rot_max > 0 ? gr_synth_rng_range (&rng, -rot_max, rot_max) : 0.0;
      pose.scale = scale_max > scale_min ? gr_synth_rng_range (&rng, scale_min, scale_max)
          : scale_min;
      double pm = persp / (width > height ? width : height);
      if (persp > 0) {
        pose.persp_x = gr_synth_rng_range (&rng, -pm, pm);
        pose.persp_y = gr_synth_rng_range (&rng, -pm, pm);
      }
      pose.centre_x = gr_synth_rng_range (&rng, 0, CW - 1);
      pose.centre_y = gr_synth_rng_range (&rng, 0, CH - 1);
      if (use_camera) {
        /* a tilted pinhole with a lens aimed at the pose's centre */
        cam = (GrSynthCamera) { .aim_x = pose.centre_x, .aim_y = pose.centre_y,
          .heading_deg = pose.rotation_deg, .scale = pose.scale, .focal = focal,
          .lens = { k1, k2, 0.0, p1, p2 } };
        if (tilt_max > 0) {
          cam.pitch_deg = gr_synth_rng_range (&rng, -tilt_max, tilt_max);
          cam.roll_deg = gr_synth_rng_range (&rng, -tilt_max, tilt_max);
        }
        if (!gr_synth_camera_homography (&cam, width, height, hm))
          continue;
      } else {
        gr_synth_pose_homography (&pose, width, height, hm);
      }
      ss = supersample > 0 ? supersample : (int) ceil (pose.scale - 1e-9);
      if (ss < 1)
        ss = 1;
      if (ss > 16)
        ss = 16;
      /* supersamples reach half a frame pixel beyond the pixel centres */
      double need = margin + 1.0 + (ss > 1 ? 0.75 * pose.scale : 0.0);
      if (!footprint_ok (dist, CW, CH, hm, width, height, need))
        continue;
      /* cut every source band and confirm the footprint is wholly valid */
      bool ok = true;
      for (int k = 0; k < nwant && ok; k++) {
        if ((use_camera ? gr_synth_cut_camera (srcp[k], &cam, width, height, ss, &cut[k])
                : gr_synth_cut (srcp[k], hm, width, height, ss, &cut[k])) != GR_OK) {
          rc = fail ("frames: out of memory cutting frame %d", i);
          goto done;
        }
        for (size_t j = 0; j < (size_t) width * height && ok; j++)
          ok = cut[k].mask[j] != 0;
      }
      if (!ok) {
        for (int k = 0; k < nwant; k++)
          gr_synth_plane_free (&cut[k]);
        continue;
      }
      placed = true;
    }
    if (!placed) {
      rc = fail ("frames: cannot place frame %d (%dx%d, rotation up to %g deg, scale up "
          "to %g, margin %g) inside the valid area of '%s' (%dx%d) after 20000 tries: "
          "use smaller frames, a smaller scale or margin", i, width, height, rot_max,
          scale_max, margin, control, CW, CH);
      goto done;
    }

    /* ---- modality */
    GrPlaneF out[3];
    int nout = 1;
    memset (out, 0, sizeof (out));
    if (fbk == FB_NIR) {
      if (gr_synth_mix_nir_like (&cut[0], &cut[1], maxval, &out[0]) != GR_OK) {
        for (int k = 0; k < nwant; k++)
          gr_synth_plane_free (&cut[k]);
        rc = fail ("frames: out of memory");
        goto done;
      }
      gr_synth_plane_free (&cut[0]);
      gr_synth_plane_free (&cut[1]);
    } else {
      nout = nwant;
      for (int k = 0; k < nwant; k++)
        out[k] = cut[k];
    }
    for (int k = 0; k < nout; k++) {
      gr_synth_tone_apply (&tone, &out[k], maxval);
      gr_synth_add_noise (&out[k], sigma, maxval, gr_synth_seed_mix (fseed, 100 + k));
    }
    if (border > 0) {
      /* one border for all channels: draw it on the first, copy the mask */
      gr_synth_nodata_border (&out[0], (GrSynthBorderKind) border_kind, border,
          gr_synth_seed_mix (fseed, 7));
      for (int k = 1; k < nout; k++)
        for (size_t j = 0; j < (size_t) width * height; j++)
          if (!out[0].mask[j]) {
            out[k].mask[j] = 0;
            out[k].data[j] = 0.0f;
          }
    }

    /* ---- write */
    char name[64];
    snprintf (name, sizeof (name), "frame_%04d.png", i);
    g_free (path);
    path = g_build_filename (outdir, name, NULL);
    const float *pl[3];
    switch (fmt) {
      case FMT_GRAY8:
      case FMT_GRAY16:
        pl[0] = out[0].data;
        st = gr_synth_png_write (path, pl, 1, NULL, width, height, maxval,
            fmt == FMT_GRAY8 ? 8 : 16, ebuf, sizeof (ebuf));
        break;
      default:
        for (int k = 0; k < 3; k++)
          pl[k] = out[nout == 3 ? k : 0].data;
        st = gr_synth_png_write (path, pl, 3, out[0].mask, width, height, maxval, 8,
            ebuf, sizeof (ebuf));
        break;
    }
    for (int k = 0; k < nout; k++)
      gr_synth_plane_free (&out[k]);
    if (st != GR_OK) {
      rc = fail ("frames: %s", ebuf);
      goto done;
    }
    GrSynthTruth t;
    if (use_camera) {
      gr_synth_truth_from_camera (&t, i, name, &cam, width, height,
          ctl.has_geo ? ctl.geo : NULL);
      gr_synth_camera_write_row (cam_csv, i, name, &cam, width);
    } else {
      gr_synth_truth_from_pose (&t, i, name, &pose, width, height,
          ctl.has_geo ? ctl.geo : NULL);
    }
    gr_synth_truth_write_row (csv, &t);
  }
  if (fclose (csv) != 0) {
    csv = NULL;
    rc = fail ("frames: writing truth.csv failed");
    goto done;
  }
  csv = NULL;
  if (cam_csv && fclose (cam_csv) != 0) {
    cam_csv = NULL;
    rc = fail ("frames: writing camera.csv failed");
    goto done;
  }
  cam_csv = NULL;
  {
    char fb[32];
    if (fbk == FB_NIR)
      snprintf (fb, sizeof (fb), "nir");
    else if (fbk == FB_COLOR)
      snprintf (fb, sizeof (fb), "color");
    else
      snprintf (fb, sizeof (fb), "%d", frame_band);
    printf ("georeg-synth: %d frames %dx%d %s from %s (%dx%d, %d-bit, control band %d, "
        "frame band %s, tone %s, noise %g, rotation +-%g deg, scale %g..%g, perspective "
        "%g, border %g, margin %g, control no-data: %s) -> "
        "%s/{frame_*.png,truth.csv,control_band.png}\n",
        count, width, height, fmt == FMT_GRAY8 ? "gray8" : fmt == FMT_GRAY16 ? "gray16"
        : "rgba", control, CW, CH, ctl.bit_depth, control_band, fb,
        gr_synth_tone_kind_name ((GrSynthToneKind) tone_kind), noise, rot_max, scale_min,
        scale_max, persp, border, margin, nodata_note, outdir);
  }

done:
  if (csv)
    fclose (csv);
  if (cam_csv)
    fclose (cam_csv);
  g_free (path);
  free (dist);
  free_rasters (src, nsrc);
  gr_raster_clear (&ctl);
  g_free (control);
  g_free (outdir);
  g_free (frame_band_s);
  g_free (tone_s);
  g_free (format_s);
  g_free (border_kind_s);
  g_free (nodata_s);
  return rc;
}

static void
usage (FILE *f)
{
  fputs ("usage: georeg-synth control --out PATH [--width W] [--height H] [--seed S] "
      "[--depth 8|16] ...\n"
      "       georeg-synth frames --control PATH --out DIR [--count N] [--width W] "
      "[--height H] [--seed S] ...\n"
      "Run 'georeg-synth control --help' or 'georeg-synth frames --help' for every "
      "option.\n", f);
}

int
main (int argc, char **argv)
{
  if (argc < 2) {
    usage (stderr);
    return 2;
  }
  if (!strcmp (argv[1], "-h") || !strcmp (argv[1], "--help")) {
    usage (stdout);
    return 0;
  }
  /* the sub-command's options: argv[1] plays the program name */
  if (!strcmp (argv[1], "control")) {
    g_set_prgname ("georeg-synth control");
    return cmd_control (argc - 1, argv + 1);
  }
  if (!strcmp (argv[1], "frames")) {
    g_set_prgname ("georeg-synth frames");
    return cmd_frames (argc - 1, argv + 1);
  }
  fprintf (stderr, "georeg-synth: error: unknown command '%s'\n", argv[1]);
  usage (stderr);
  return 2;
}
