/* Features of a frame on CUDA (kernels/features_cuda.cu through gr_features_extract)
 * against the CPU engine (kernels/keypoints.c + kernels/descriptors.c), on frames
 * synthesized by pipelines/synth.h (with and without masks, 8- and 16-bit value
 * ranges, a strided plane, several keypoint and descriptor parameters, the limits:
 * flat, wholly masked and too small frames, a capacity below max_keypoints, the CPU
 * detector fallback of a large block radius) and, when GEOREG_DATA holds aukerman.png,
 * on the orthomosaic and on survey frames cut from it (masks, turned by 90 and 180
 * degrees).
 *
 * Asserted per frame: the same number of keypoints; the same keypoints in the same
 * order, positions within 1e-3 px (measured: bit-identical) and the same responses;
 * descriptors within 1e-4 (max |difference| over the entries, the descriptors being
 * unit vectors) and angles within 1e-4 rad, except at documented orientation near-ties
 * (the two highest bins of the CPU's smoothed orientation histogram within 1e-4
 * relative: the backends may pick different peaks), which are counted, shown and
 * allowed only as such; patches (gr_descriptor_patches on each engine's smoothed
 * frame) within one level; the CUDA output deterministic (two runs, same bits); every
 * output poisoned first.
 * Device-resident frames: gr_features_extract_device and gr_features_detect_device on
 * the plane uploaded to the GPU give the very bits gr_features_extract gives on the
 * host plane (keypoints, descriptors, angles, and patches read through
 * gr_features_validity), and the CPU detector's keypoints, bit for bit.
 * Exit 0 pass, 1 fail, 77 skip (no usable CUDA device).
 *   GR_FEATURES_GPU_SELFTEST=1: run the comparisons with a CPU engine on both sides
 *   (checks this harness on a machine without a GPU).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "descriptors.h"
#include "keypoints.h"
#include "raster.h"
#include "synth.h"
#include "realdesc.h"
#if GR_HAVE_CUDA
#include "register_cuda.h"
#endif

#include "test_check.h"

#define POS_TOL 1e-3
#define DESC_TOL 1e-4
#define TIE_REL 1e-4
#define ORI_BINS 36
#define PI_F 3.14159265358979f

static int total_ties, total_kp, total_frames;

/* the CPU's smoothed orientation histogram at keypoint k (descriptors.c's method, on
 * the CPU engine's scratch); returns the relative gap between the two highest bins */
static double
orientation_gap (const GrDescriptorScratch *s, int w, int h, const GrKeypoint *k, int R)
{
  const float so = 0.5f * R;
  float hist[ORI_BINS], hs[ORI_BINS];
  memset (hist, 0, sizeof hist);
  const int cx = (int) lrintf (k->x), cy = (int) lrintf (k->y);
  for (int v = -R; v <= R; v++)
    for (int u = -R; u <= R; u++) {
      const float r2 = (float) (u * u + v * v);
      if (r2 > (float) (R * R))
        continue;
      const float gwt = expf (-r2 / (2 * so * so));
      const int x = cx + u, y = cy + v;
      if (x < 0 || y < 0 || x >= w || y >= h)
        continue;
      const size_t j = (size_t) y * w + x;
      if (!s->gvalid[j])
        continue;
      const float gx = s->gx[j], gy = s->gy[j];
      const float m = sqrtf (gx * gx + gy * gy);
      if (m == 0.f)
        continue;
      float fb = (atan2f (gy, gx) + PI_F) * (ORI_BINS / (2 * PI_F)) - 0.5f;
      int b0 = (int) floorf (fb);
      const float a = fb - b0;
      b0 = (b0 % ORI_BINS + ORI_BINS) % ORI_BINS;
      hist[b0] += gwt * m * (1 - a);
      hist[(b0 + 1) % ORI_BINS] += gwt * m * a;
    }
  for (int pass = 0; pass < 2; pass++) {
    for (int b = 0; b < ORI_BINS; b++)
      hs[b] = 0.25f * hist[(b + ORI_BINS - 1) % ORI_BINS] + 0.5f * hist[b] +
          0.25f * hist[(b + 1) % ORI_BINS];
    memcpy (hist, hs, sizeof hist);
  }
  double b1 = -1, b2 = -1;
  for (int b = 0; b < ORI_BINS; b++) {
    if (hist[b] > b1) {
      b2 = b1;
      b1 = hist[b];
    } else if (hist[b] > b2) {
      b2 = hist[b];
    }
  }
  return b1 > 0 ? (b1 - b2) / b1 : 1.0;
}

typedef struct {
  GrKeypoint *kp;
  float *desc, *angle;
  uint8_t *patches;
  int n;
  GrFeatureStats st;
} Out;

static void
out_free (Out *o)
{
  free (o->kp);
  free (o->desc);
  free (o->angle);
  free (o->patches);
  memset (o, 0, sizeof *o);
}

static void
run (GrFeatures *f, const GrPlaneF *img, const GrKeypointParams *kpp,
    const GrDescriptorParams *dp, int capacity, Out *o)
{
  const size_t cap = capacity > 0 ? (size_t) capacity : 1;
  o->kp = malloc (sizeof (GrKeypoint) * cap);
  o->desc = malloc (sizeof (float) * cap * dp->size);
  o->angle = malloc (sizeof (float) * cap);
  memset (o->kp, 0xA5, sizeof (GrKeypoint) * cap);         /* poison */
  memset (o->desc, 0xA5, sizeof (float) * cap * dp->size);
  memset (o->angle, 0xA5, sizeof (float) * cap);
  char err[256] = "";
  o->n = gr_features_extract (f, img, kpp, dp, o->kp, capacity, o->desc, o->angle, &o->st,
      err, sizeof err);
  CHECK (o->n >= 0, "gr_features_extract (%s): %s", gr_backend_name (gr_features_backend
          (f)), err);
  o->patches = malloc ((size_t) (o->n > 0 ? o->n : 1) * GR_PATCH_BYTES);
  if (o->n > 0)
    CHECK (gr_descriptor_patches (img, gr_features_scratch (f), o->kp, o->n, o->patches)
        == GR_OK, "patches");
}

/* CUDA vs CPU on one frame */
static void
compare (const char *what, GrFeatures *gpu, GrFeatures *cpu, const GrPlaneF *img,
    const GrKeypointParams *kpp, const GrDescriptorParams *dp, int capacity,
    int expect_min)
{
  Out g, c;
  run (gpu, img, kpp, dp, capacity, &g);
  run (cpu, img, kpp, dp, capacity, &c);
  total_frames++;
  CHECK (g.n == c.n, "%s: %d keypoints on CUDA, %d on the CPU", what, g.n, c.n);
  CHECK (c.n >= expect_min, "%s: %d keypoints, at least %d expected", what, c.n,
      expect_min);
  const int n = g.n < c.n ? g.n : c.n;
  double maxpos = 0, maxdesc = 0, maxang = 0, maxresp = 0;
  int bitpos = 1, ties = 0, bad = 0, patchdiff = 0, patchbad = 0;
  for (int i = 0; i < n; i++) {
    const double dx = fabs ((double) g.kp[i].x - c.kp[i].x),
        dy = fabs ((double) g.kp[i].y - c.kp[i].y);
    maxpos = fmax (maxpos, fmax (dx, dy));
    bitpos &= g.kp[i].x == c.kp[i].x && g.kp[i].y == c.kp[i].y;
    const double dr = fabs ((double) g.kp[i].response - c.kp[i].response) /
        fmax (1e-30, fabs (c.kp[i].response));
    maxresp = fmax (maxresp, dr);
    double dd = 0;
    for (int t = 0; t < dp->size; t++) {
      const double e = fabs ((double) g.desc[(size_t) i * dp->size + t] -
          c.desc[(size_t) i * dp->size + t]);
      dd = isnan (e) ? INFINITY : fmax (dd, e);
    }
    double da = fabs ((double) g.angle[i] - c.angle[i]);
    da = isnan (da) ? INFINITY : fmin (da, 2 * M_PI - da);
    if (dd > DESC_TOL || da > 1e-4) {
      /* allowed only at an orientation near-tie of the CPU's histogram */
      const GrDescriptorScratch *s = gr_features_scratch (cpu);
      const double gap = s->gx ? orientation_gap (s, img->width, img->height, &c.kp[i],
          dp->radius) : 1.0;
      if (gap < TIE_REL) {
        ties++;
        printf ("  %s: keypoint %d (%.2f, %.2f): orientation near-tie (gap %.2e): "
            "angles %.6f / %.6f, descriptor difference %.2e\n", what, i, c.kp[i].x,
            c.kp[i].y, gap, g.angle[i], c.angle[i], dd);
        continue;
      }
      if (bad < 5)
        fprintf (stderr, "  %s: keypoint %d (%.2f, %.2f): descriptor difference %.3e, "
            "angles %.7f / %.7f (histogram gap %.2e)\n", what, i, c.kp[i].x, c.kp[i].y,
            dd, g.angle[i], c.angle[i], gap);
      bad++;
    }
    maxdesc = fmax (maxdesc, dd);
    maxang = fmax (maxang, da);
    for (int t = 0; t < GR_PATCH_BYTES; t++) {
      const int e = abs ((int) g.patches[(size_t) i * GR_PATCH_BYTES + t] -
          c.patches[(size_t) i * GR_PATCH_BYTES + t]);
      patchdiff += e != 0;
      patchbad += e > 1;
    }
  }
  total_ties += ties;
  total_kp += n;
  printf ("%-34s %5dx%-5d n %4d/%4d (cand %6d%s)  pos %.1e%s  resp %.1e  desc %.2e  "
      "angle %.1e  near-ties %d  patch bytes differing %d  cuda %.2f ms (kernels %.2f)  "
      "cpu %.1f ms\n", what, img->width, img->height, g.n, c.n, g.st.candidates,
      g.st.host_detect ? ", host detect" : "", maxpos, bitpos ? " (bit-identical)" : "",
      maxresp, maxdesc, maxang, ties, patchdiff, g.st.elapsed_ms, g.st.kernel_ms,
      c.st.elapsed_ms);
  CHECK (maxpos <= POS_TOL, "%s: keypoint positions differ by %.3e px", what, maxpos);
  CHECK (maxresp == 0, "%s: responses differ (%.3e relative)", what, maxresp);
  CHECK (bad == 0, "%s: %d descriptors beyond %.0e (not near-ties)", what, bad, DESC_TOL);
  CHECK (patchbad == 0, "%s: %d patch bytes differ by more than one level", what,
      patchbad);
  out_free (&g);
  out_free (&c);
}

/* grey plane (luminance) of a synthesized control image; the mask is taken over */
static void
synth_frame (int w, int h, uint64_t seed, double border, double scale, GrPlaneF *p)
{
  GrSynthControlParams sp;
  gr_synth_control_params_init (&sp);
  sp.width = w;
  sp.height = h;
  sp.seed = seed;
  sp.nodata_border = border;
  sp.with_geo = false;
  GrSynthImage im;
  char err[256];
  if (gr_synth_control_generate (&sp, &im, err, sizeof err) != GR_OK) {
    CHECK (0, "synth: %s", err);
    memset (p, 0, sizeof *p);
    return;
  }
  gr_synth_plane_alloc (p, w, h, im.mask != NULL);
  for (size_t i = 0; i < (size_t) w * h; i++) {
    p->data[i] = (float) (scale * (0.299 * im.band[0][i] + 0.587 * im.band[1][i] +
            0.114 * im.band[2][i]));
    if (im.mask)
      p->mask[i] = im.mask[i] != 0;
  }
  gr_synth_image_free (&im);
}

static void
defaults (GrKeypointParams *kpp, GrDescriptorParams *dp, int size, int maxkp)
{
  gr_descriptor_params_init (dp);
  dp->size = size;
  gr_keypoint_params_init (kpp);
  kpp->max_keypoints = maxkp;
  kpp->margin = gr_descriptor_margin (dp);
}

#if GR_HAVE_CUDA
/* one frame: host input against device input on the same CUDA engine */
static void
compare_device (const char *what, GrFeatures *gpu, const GrPlaneF *img, int maxkp)
{
  GrKeypointParams kpp;
  GrDescriptorParams dp;
  defaults (&kpp, &dp, 64, maxkp);
  char err[256] = "";
  GrPlaneF dev;
  if (gr_cuda_plane_upload (0, img, &dev, err, sizeof err) != GR_OK) {
    CHECK (0, "%s: upload: %s", what, err);
    return;
  }
  const size_t cap = (size_t) maxkp;
  GrKeypoint *ka = calloc (cap, sizeof *ka), *kb = calloc (cap, sizeof *kb),
      *kc = calloc (cap, sizeof *kc), *kd = calloc (cap, sizeof *kd);
  float *da = calloc (cap * 64, sizeof (float)), *db = calloc (cap * 64, sizeof (float));
  float *aa = calloc (cap, sizeof (float)), *ab = calloc (cap, sizeof (float));
  uint8_t *pa = calloc (cap * GR_PATCH_BYTES, 1), *pb = calloc (cap * GR_PATCH_BYTES, 1);
  const int na = gr_features_extract (gpu, img, &kpp, &dp, ka, maxkp, da, aa, NULL, err,
      sizeof err);
  CHECK (na >= 0, "%s: host extract: %s", what, err);
  if (na > 0)
    gr_descriptor_patches (img, gr_features_scratch (gpu), ka, na, pa);
  const int nb = gr_features_extract_device (gpu, &dev, &kpp, &dp, kb, maxkp, db, ab, NULL,
      err, sizeof err);
  CHECK (nb >= 0, "%s: device extract: %s", what, err);
  const GrPlaneF *view = gr_features_validity (gpu);
  CHECK (view && view->width == img->width && view->height == img->height &&
      (view->mask != NULL) == (dev.mask != NULL), "%s: validity view", what);
  if (nb > 0 && view)
    gr_descriptor_patches (view, gr_features_scratch (gpu), kb, nb, pb);
  /* the CPU detector against the device detector on the device plane */
  GrKeypointParams kq = kpp;
  kq.margin = 5;
  const int nc = gr_keypoints_detect (img, &kq, kc, maxkp);
  const int nd = gr_features_detect_device (gpu, &dev, &kq, kd, maxkp, NULL, err,
      sizeof err);
  CHECK (nd >= 0, "%s: device detection: %s", what, err);
  const bool same = na == nb && na >= 0 &&
      memcmp (ka, kb, sizeof *ka * (size_t) na) == 0 &&
      memcmp (da, db, sizeof (float) * 64 * (size_t) na) == 0 &&
      memcmp (aa, ab, sizeof (float) * (size_t) na) == 0 &&
      memcmp (pa, pb, (size_t) GR_PATCH_BYTES * na) == 0;
  const bool same_det = nc == nd && nc >= 0 &&
      memcmp (kc, kd, sizeof *kc * (size_t) nc) == 0;
  CHECK (same, "%s: device frame: %d vs %d features, not bit-identical", what, na, nb);
  CHECK (same_det, "%s: device detection: %d vs CPU %d keypoints, not bit-identical",
      what, nd, nc);
  printf ("%-28s device frame: %d features %s; detection %d keypoints %s\n", what, nb,
      same ? "identical" : "DIFFER", nd, same_det ? "identical" : "DIFFER");
  gr_cuda_device_free (0, dev.data);
  gr_cuda_device_free (0, dev.mask);
  free (ka);
  free (kb);
  free (kc);
  free (kd);
  free (da);
  free (db);
  free (aa);
  free (ab);
  free (pa);
  free (pb);
}

static void
test_device (GrFeatures *gpu)
{
  if (gr_features_backend (gpu) != GR_BACKEND_CUDA)
    return;
  GrPlaneF a, m;
  synth_frame (640, 480, 21, 0.0, 1.0, &a);
  synth_frame (640, 480, 22, 0.3, 1.0, &m);
  if (a.data)
    compare_device ("synth", gpu, &a, 500);
  if (m.data)
    compare_device ("synth, no-data border", gpu, &m, 2000);
  gr_synth_plane_free (&a);
  gr_synth_plane_free (&m);
}
#endif

static void
test_synth (GrFeatures *gpu, GrFeatures *cpu, int quick)
{
  GrKeypointParams kpp;
  GrDescriptorParams dp;
  GrPlaneF a, m;
  synth_frame (640, 480, 11, 0.0, 1.0, &a);
  synth_frame (640, 480, 12, 0.3, 1.0, &m);
  if (!a.data || !m.data)
    return;
  defaults (&kpp, &dp, 64, 500);
  compare ("synth, defaults", gpu, cpu, &a, &kpp, &dp, 500, 400);
  compare ("synth, no-data border", gpu, cpu, &m, &kpp, &dp, 500, 200);
  defaults (&kpp, &dp, 32, 2000);
  compare ("synth, k32, 2000", gpu, cpu, &m, &kpp, &dp, 2000, 300);
  /* a 16-bit value range */
  GrPlaneF s16;
  gr_synth_plane_alloc (&s16, a.width, a.height, false);
  for (size_t i = 0; i < (size_t) a.width * a.height; i++)
    s16.data[i] = a.data[i] * 257.0f;
  defaults (&kpp, &dp, 64, 500);
  compare ("synth x257 (16-bit)", gpu, cpu, &s16, &kpp, &dp, 500, 400);
  gr_synth_plane_free (&s16);
  /* a strided plane: the same frame inside a wider buffer */
  GrPlaneF st = m;
  st.stride = (size_t) m.width + 13;
  st.data = malloc (sizeof (float) * st.stride * m.height);
  for (int y = 0; y < m.height; y++)
    for (size_t x = 0; x < st.stride; x++)
      st.data[(size_t) y * st.stride + x] = x < (size_t) m.width ?
          m.data[(size_t) y * m.width + x] : NAN;
  compare ("synth, strided, mask", gpu, cpu, &st, &kpp, &dp, 500, 200);
  free (st.data);

  /* parameter variants */
  struct {
    const char *name;
    int block, nms, gc, gr, margin, radius, subpixel, capacity, maxkp, size;
    float minr, sigma;
  } v[] = {
    { "block 1, nms 1", 1, 1, 8, 6, -1, 12, 1, 800, 800, 64, 0.01f, 1.2f },
    { "block 3, nms 8, grid 1x1", 3, 8, 1, 1, -1, 12, 1, 300, 300, 64, 0.01f, 1.2f },
    { "grid 16x12, min 0.2", 2, 4, 16, 12, -1, 12, 1, 1000, 1000, 32, 0.2f, 1.2f },
    { "min response 0, sigma 0", 2, 4, 8, 6, -1, 12, 1, 500, 500, 64, 0.0f, 0.0f },
    { "no sub-pixel, sigma 2.5", 2, 4, 8, 6, -1, 12, 0, 500, 500, 64, 0.01f, 2.5f },
    { "margin 0 (supports cut)", 2, 4, 8, 6, 0, 12, 1, 500, 500, 64, 0.01f, 1.2f },
    { "radius 4", 2, 4, 8, 6, -1, 4, 1, 500, 500, 32, 0.01f, 1.2f },
    { "radius 20", 2, 3, 4, 3, -1, 20, 1, 500, 500, 64, 0.01f, 1.2f },
    { "capacity 37 < max 500", 2, 4, 8, 6, -1, 12, 1, 37, 500, 64, 0.01f, 1.2f },
    { "block 20 (CPU detector)", 20, 4, 8, 6, -1, 12, 1, 300, 300, 64, 0.01f, 1.2f },
  };
  for (unsigned i = 0; i < sizeof v / sizeof v[0]; i++) {
    if (quick && i % 3 != 0)
      continue;
    defaults (&kpp, &dp, v[i].size, v[i].maxkp);
    kpp.block_radius = v[i].block;
    kpp.nms_radius = v[i].nms;
    kpp.grid_cols = v[i].gc;
    kpp.grid_rows = v[i].gr;
    kpp.min_response = v[i].minr;
    dp.radius = v[i].radius;
    dp.sigma = v[i].sigma;
    dp.subpixel = v[i].subpixel;
    kpp.margin = v[i].margin >= 0 ? v[i].margin : gr_descriptor_margin (&dp);
    char name[96];
    snprintf (name, sizeof name, "synth, %s", v[i].name);
    compare (name, gpu, cpu, i % 2 ? &m : &a, &kpp, &dp, v[i].capacity,
        v[i].capacity < 100 ? v[i].capacity : 100);
  }

  /* the limits: flat, wholly masked, too small */
  defaults (&kpp, &dp, 64, 500);
  GrPlaneF flat;
  gr_synth_plane_alloc (&flat, 200, 150, true);
  for (size_t i = 0; i < 200 * 150; i++)
    flat.data[i] = 77.f;
  compare ("flat", gpu, cpu, &flat, &kpp, &dp, 500, 0);
  memcpy (flat.data, a.data, sizeof (float) * 200 * 150);
  memset (flat.mask, 0, 200 * 150);
  compare ("wholly masked", gpu, cpu, &flat, &kpp, &dp, 500, 0);
  gr_synth_plane_free (&flat);
  GrPlaneF tiny;
  gr_synth_plane_alloc (&tiny, 30, 24, false);
  for (int i = 0; i < 30 * 24; i++)
    tiny.data[i] = (float) ((i * 37) % 101);
  compare ("30x24 (smaller than the margin)", gpu, cpu, &tiny, &kpp, &dp, 500, 0);
  gr_synth_plane_free (&tiny);

  /* a full-HD frame, then the small one again (buffers reused), determinism */
  if (!quick) {
    GrPlaneF hd;
    synth_frame (1920, 1080, 13, 0.0, 1.0, &hd);
    if (hd.data) {
      compare ("synth 1920x1080", gpu, cpu, &hd, &kpp, &dp, 500, 400);
      Out r1, r2;
      run (gpu, &hd, &kpp, &dp, 500, &r1);
      run (gpu, &hd, &kpp, &dp, 500, &r2);
      const int same = r1.n == r2.n && r1.n > 0 &&
          !memcmp (r1.kp, r2.kp, sizeof (GrKeypoint) * r1.n) &&
          !memcmp (r1.desc, r2.desc, sizeof (float) * r1.n * dp.size) &&
          !memcmp (r1.angle, r2.angle, sizeof (float) * r1.n) &&
          !memcmp (r1.patches, r2.patches, (size_t) r1.n * GR_PATCH_BYTES);
      printf ("determinism (1920x1080, two runs): %s\n", same ? "identical" : "DIFFERENT");
      CHECK (same, "two CUDA runs on the same frame differ");
      out_free (&r1);
      out_free (&r2);
      gr_synth_plane_free (&hd);
    }
    compare ("synth, defaults (again)", gpu, cpu, &a, &kpp, &dp, 500, 400);
  }
  gr_synth_plane_free (&a);
  gr_synth_plane_free (&m);
}

static void
test_real (GrFeatures *gpu, GrFeatures *cpu)
{
  const char *dir = getenv ("GEOREG_DATA");
  if (!dir || !*dir) {
    printf ("real data: skipped (GEOREG_DATA is not set)\n");
    return;
  }
  char path[1024];
  snprintf (path, sizeof path, "%s/aukerman.png", dir);
  GrRaster r;
  memset (&r, 0, sizeof r);
  char err[256];
  if (gr_raster_load (path, 0, &r, err, sizeof err) != GR_OK) {
    printf ("real data: skipped (%s)\n", err);
    return;
  }
  GrKeypointParams kpp;
  GrDescriptorParams dp;
  defaults (&kpp, &dp, 64, 500);
  compare ("aukerman.png, 500", gpu, cpu, &r.plane, &kpp, &dp, 500, 400);
  defaults (&kpp, &dp, 32, 3000);
  compare ("aukerman.png, k32, 3000", gpu, cpu, &r.plane, &kpp, &dp, 3000, 1000);
  gr_raster_clear (&r);
  Survey s;
  char why[256];
  if (!survey_make (&s, 9, why, sizeof why)) {
    printf ("survey frames: skipped (%s)\n", why);
    return;
  }
  defaults (&kpp, &dp, 64, 400);
  for (int i = 0; i < s.m; i++) {
    char name[64];
    snprintf (name, sizeof name, "survey frame %d (line %d)", i, i / 3);
    compare (name, gpu, cpu, &s.frames[i], &kpp, &dp, 400, 50);
  }
  survey_clear (&s);
}

int
main (void)
{
  setvbuf (stdout, NULL, _IOLBF, 0);
  const char *self = getenv ("GR_FEATURES_GPU_SELFTEST");
  const int selftest = self && *self && *self != '0';
  if (!selftest && gr_cuda_device_count () <= 0) {
    printf ("SKIP: %s\n", gr_cuda_compiled () ? "no usable CUDA device" :
        "built without CUDA");
    return 77;
  }
  const char *q = getenv ("GR_FEATURES_GPU_QUICK");
  const int quick = q && *q && *q != '0';
  GrStatus st;
  char err[256] = "";
  GrFeatures *gpu = gr_features_new (selftest ? GR_BACKEND_CPU : GR_BACKEND_CUDA, -1, &st,
      err, sizeof err);
  CHECK (gpu != NULL, "gr_features_new (cuda): %s", err);
  GrFeatures *cpu = gr_features_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
  CHECK (cpu != NULL, "gr_features_new (cpu): %s", err);
  if (!gpu || !cpu)
    return CHECK_DONE ();
  printf ("backends: %s vs %s%s\n", gr_backend_name (gr_features_backend (gpu)),
      gr_backend_name (gr_features_backend (cpu)), selftest ? " (self-test)" : "");
  CHECK (selftest || gr_features_backend (gpu) == GR_BACKEND_CUDA, "not on CUDA");
  /* bad arguments are refused the same way */
  GrKeypointParams kpp;
  GrDescriptorParams dp;
  defaults (&kpp, &dp, 48, 10);
  GrPlaneF p;
  gr_synth_plane_alloc (&p, 64, 64, false);
  GrKeypoint kp[10];
  float d[640];
  CHECK (gr_features_extract (gpu, &p, &kpp, &dp, kp, 10, d, NULL, NULL, err, sizeof err)
      == -GR_ERR_INVALID, "descriptor size 48 must be refused");
  gr_synth_plane_free (&p);

  test_synth (gpu, cpu, quick);
#if GR_HAVE_CUDA
  if (!selftest)
    test_device (gpu);
#endif
  test_real (gpu, cpu);
  printf ("%d frames, %d keypoints compared, %d orientation near-ties\n", total_frames,
      total_kp, total_ties);
  gr_features_free (gpu);
  gr_features_free (cpu);
  return CHECK_DONE ();
}
