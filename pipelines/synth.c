/* Synthetic drone frames with known ground truth (see synth.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "synth.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif


/* ------------------------------------------------------------------ random numbers */

static inline uint64_t
mix64 (uint64_t z)
{
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void
gr_synth_rng_init (GrSynthRng *rng, uint64_t seed)
{
  rng->s = mix64 (seed ^ 0x6a09e667f3bcc909ULL);
}

uint64_t
gr_synth_rng_next (GrSynthRng *rng)
{
  rng->s += 0x9e3779b97f4a7c15ULL;
  return mix64 (rng->s);
}

double
gr_synth_rng_uniform (GrSynthRng *rng)
{
  return (double) (gr_synth_rng_next (rng) >> 11) * (1.0 / 9007199254740992.0);
}

double
gr_synth_rng_range (GrSynthRng *rng, double lo, double hi)
{
  return lo + (hi - lo) * gr_synth_rng_uniform (rng);
}

double
gr_synth_rng_gauss (GrSynthRng *rng)
{
  /* Box-Muller; u1 in (0, 1] so the log is finite. */
  double u1 = 1.0 - gr_synth_rng_uniform (rng);
  double u2 = gr_synth_rng_uniform (rng);
  return sqrt (-2.0 * log (u1)) * cos (2.0 * M_PI * u2);
}

uint64_t
gr_synth_seed_mix (uint64_t seed, uint64_t index)
{
  return mix64 (mix64 (seed + 0x243f6a8885a308d3ULL) ^ (index * 0x9e3779b97f4a7c15ULL + 1));
}

/* Hash of integer coordinates to [0, 1). */
static inline uint64_t
hash3 (int64_t a, int64_t b, uint64_t c)
{
  uint64_t h = mix64 ((uint64_t) a * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL);
  h = mix64 (h ^ ((uint64_t) b * 0xc2b2ae3d27d4eb4fULL));
  return mix64 (h ^ c);
}

static inline double
hash01 (int64_t a, int64_t b, uint64_t c)
{
  return (double) (hash3 (a, b, c) >> 11) * (1.0 / 9007199254740992.0);
}

/* ------------------------------------------------------------------ planes */

bool
gr_synth_plane_alloc (GrPlaneF *p, int width, int height, bool with_mask)
{
  memset (p, 0, sizeof (*p));
  if (width <= 0 || height <= 0)
    return false;
  size_t n = (size_t) width * (size_t) height;
  p->data = calloc (n, sizeof (float));
  if (!p->data)
    return false;
  if (with_mask) {
    p->mask = malloc (n);
    if (!p->mask) {
      free (p->data);
      p->data = NULL;
      return false;
    }
    memset (p->mask, 1, n);
  }
  p->width = width;
  p->height = height;
  p->stride = (size_t) width;
  return true;
}

void
gr_synth_plane_free (GrPlaneF *p)
{
  if (!p)
    return;
  free (p->data);
  free (p->mask);
  memset (p, 0, sizeof (*p));
}

static inline bool
plane_valid (const GrPlaneF *p, int x, int y)
{
  return !p->mask || p->mask[(size_t) y * (size_t) p->width + (size_t) x];
}

bool
gr_synth_sample_bilinear (const GrPlaneF *p, double x, double y, float *value)
{
  const double eps = 1e-9;
  *value = 0.0f;
  if (!(x >= -eps && y >= -eps && x <= p->width - 1 + eps && y <= p->height - 1 + eps))
    return false;                      /* also rejects NaN */
  if (x < 0)
    x = 0;
  if (y < 0)
    y = 0;
  if (x > p->width - 1)
    x = p->width - 1;
  if (y > p->height - 1)
    y = p->height - 1;
  int x0 = (int) floor (x), y0 = (int) floor (y);
  double fx = x - x0, fy = y - y0;
  double w[4] = { (1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy };
  int dx[4] = { 0, 1, 0, 1 }, dy[4] = { 0, 0, 1, 1 };
  double acc = 0.0;
  for (int k = 0; k < 4; k++) {
    if (w[k] == 0.0)
      continue;
    int xx = x0 + dx[k], yy = y0 + dy[k];
    if (xx >= p->width || yy >= p->height || !plane_valid (p, xx, yy))
      return false;
    acc += w[k] * p->data[(size_t) yy * p->stride + (size_t) xx];
  }
  *value = (float) acc;
  return true;
}

long
gr_synth_mask_from_value (const GrPlaneF *bands, int n, float value, int min_area,
    uint8_t *mask)
{
  if (!bands || n < 1 || !mask)
    return -1;
  const int W = bands[0].width, H = bands[0].height;
  for (int k = 0; k < n; k++)
    if (!bands[k].data || bands[k].width != W || bands[k].height != H)
      return -1;
  const size_t np = (size_t) W * H;
  /* 1 = has the value in every band */
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      bool all = true;
      for (int k = 0; k < n && all; k++)
        all = bands[k].data[(size_t) y * bands[k].stride + x] == value;
      mask[(size_t) y * W + x] = all;
    }
  /* components: flood fill with an explicit stack; small ones become valid */
  int32_t *stack = malloc (sizeof (int32_t) * np);
  int32_t *comp = malloc (sizeof (int32_t) * np);
  if (!stack || !comp) {
    free (stack);
    free (comp);
    return -1;
  }
  for (size_t i = 0; i < np; i++) {
    if (mask[i] != 1)
      continue;
    size_t sp = 0, nc = 0;
    stack[sp++] = (int32_t) i;
    mask[i] = 2;                      /* visited */
    while (sp) {
      int32_t j = stack[--sp];
      comp[nc++] = j;
      int x = j % W, y = j / W;
      int32_t nb[4] = { x > 0 ? j - 1 : -1, x < W - 1 ? j + 1 : -1,
        y > 0 ? j - W : -1, y < H - 1 ? j + W : -1 };
      for (int q = 0; q < 4; q++)
        if (nb[q] >= 0 && mask[nb[q]] == 1) {
          mask[nb[q]] = 2;
          stack[sp++] = nb[q];
        }
    }
    uint8_t mark = (long) nc < (long) min_area ? 3 : 2;  /* 3 = keep valid */
    for (size_t c = 0; c < nc; c++)
      mask[comp[c]] = mark;
  }
  free (stack);
  free (comp);
  long invalid = 0;
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      size_t i = (size_t) y * W + x;
      bool ok = mask[i] != 2;
      for (int k = 0; k < n && ok; k++)
        if (bands[k].mask && !bands[k].mask[i])
          ok = false;
      mask[i] = ok ? 255 : 0;
      invalid += !ok;
    }
  return invalid;
}

bool
gr_synth_guess_nodata (const GrPlaneF *bands, int n, float *value)
{
  if (!bands || n < 1 || !bands[0].data)
    return false;
  const int W = bands[0].width, H = bands[0].height;
  const int cx[4] = { 0, W - 1, 0, W - 1 }, cy[4] = { 0, 0, H - 1, H - 1 };
  float v = bands[0].data[0];
  for (int k = 0; k < n; k++)
    for (int c = 0; c < 4; c++)
      if (bands[k].data[(size_t) cy[c] * bands[k].stride + cx[c]] != v)
        return false;
  *value = v;
  return true;
}

/* ------------------------------------------------------------------ images */

void
gr_synth_image_free (GrSynthImage *img)
{
  if (!img)
    return;
  for (int b = 0; b < GR_SYNTH_MAX_BANDS; b++)
    free (img->band[b]);
  free (img->mask);
  memset (img, 0, sizeof (*img));
}

GrPlaneF
gr_synth_image_plane (const GrSynthImage *img, int b)
{
  GrPlaneF p;
  memset (&p, 0, sizeof (p));
  if (b < 0 || b >= img->bands)
    return p;
  p.data = img->band[b];
  p.mask = img->mask;
  p.width = img->width;
  p.height = img->height;
  p.stride = (size_t) img->width;
  return p;
}

/* ------------------------------------------------------------------ procedural noise */

static inline double
fade (double t)
{
  return t * t * t * (t * (t * 6.0 - 15.0) + 10.0);
}

/* Value noise in [0, 1): random values on the integer lattice, quintic interpolation. */
static double
value_noise (double x, double y, uint64_t seed)
{
  double fx0 = floor (x), fy0 = floor (y);
  int64_t ix = (int64_t) fx0, iy = (int64_t) fy0;
  double tx = fade (x - fx0), ty = fade (y - fy0);
  double a = hash01 (ix, iy, seed), b = hash01 (ix + 1, iy, seed);
  double c = hash01 (ix, iy + 1, seed), d = hash01 (ix + 1, iy + 1, seed);
  double ab = a + (b - a) * tx, cd = c + (d - c) * tx;
  return ab + (cd - ab) * ty;
}

/* Fractal sum of value noise, normalised to about [0, 1]; period of the first octave
 * in pixels. */
static double
fbm (double x, double y, double period, int octaves, double gain, uint64_t seed)
{
  double f = 1.0 / period, amp = 1.0, sum = 0.0, norm = 0.0;
  for (int o = 0; o < octaves; o++) {
    /* a rotation per octave hides the lattice axes */
    double c = cos (0.5 + o * 1.1), s = sin (0.5 + o * 1.1);
    double u = (c * x - s * y) * f, v = (s * x + c * y) * f;
    sum += amp * value_noise (u, v, seed + (uint64_t) o * 7919);
    norm += amp;
    amp *= gain;
    f *= 2.03;
  }
  return sum / norm;
}

/* Worley F1: distance to the nearest jittered point of a grid of `cell` pixels. */
static double
worley (double x, double y, double cell, uint64_t seed, double *cell_rand)
{
  double gx = x / cell, gy = y / cell;
  int64_t cx = (int64_t) floor (gx), cy = (int64_t) floor (gy);
  double best = 1e30;
  double r = 0.0;
  for (int j = -1; j <= 1; j++)
    for (int i = -1; i <= 1; i++) {
      int64_t qx = cx + i, qy = cy + j;
      double px = qx + 0.1 + 0.8 * hash01 (qx, qy, seed);
      double py = qy + 0.1 + 0.8 * hash01 (qx, qy, seed ^ 0x5555);
      double d = (gx - px) * (gx - px) + (gy - py) * (gy - py);
      if (d < best) {
        best = d;
        r = hash01 (qx, qy, seed ^ 0xaaaa);
      }
    }
  if (cell_rand)
    *cell_rand = r;
  return sqrt (best) * cell;
}

/* ------------------------------------------------------------------ procedural control */

enum { LC_CROP, LC_MEADOW, LC_SOIL, LC_FOREST, LC_WATER, LC_BUILT, LC_COUNT };

typedef struct {
  int cls;
  double rgb[3];
  double angle;        /* row / building orientation */
  double period;       /* crop row period, px */
  double amp;          /* texture amplitude */
  double tex_scale;    /* noise period, px */
  bool hedge;
  double hedge_w;
  uint64_t seed;
} Parcel;

static void
parcel_props (int64_t cx, int64_t cy, int side, uint64_t seed, Parcel *pp)
{
  uint64_t s = hash3 (cx * 2 + side, cy, seed ^ 0x7061726365ULL);
  GrSynthRng r;
  gr_synth_rng_init (&r, s);
  double u = gr_synth_rng_uniform (&r);
  int cls;
  if (u < 0.40) cls = LC_CROP;
  else if (u < 0.60) cls = LC_MEADOW;
  else if (u < 0.74) cls = LC_SOIL;
  else if (u < 0.87) cls = LC_FOREST;
  else if (u < 0.91) cls = LC_WATER;
  else cls = LC_BUILT;
  pp->cls = cls;
  pp->seed = s;
  pp->angle = gr_synth_rng_range (&r, 0, M_PI);
  pp->period = gr_synth_rng_range (&r, 3.5, 12.0);
  pp->amp = gr_synth_rng_range (&r, 0.05, 0.22);
  pp->tex_scale = gr_synth_rng_range (&r, 6.0, 40.0);
  pp->hedge = gr_synth_rng_uniform (&r) < 0.45;
  pp->hedge_w = gr_synth_rng_range (&r, 2.0, 5.0);
  double t = gr_synth_rng_uniform (&r), j0 = gr_synth_rng_range (&r, -0.04, 0.04),
      j1 = gr_synth_rng_range (&r, -0.04, 0.04);
  switch (cls) {
    case LC_CROP: {               /* green to ripe */
      double g[3] = { 0.30, 0.46, 0.17 }, y[3] = { 0.66, 0.60, 0.34 };
      for (int c = 0; c < 3; c++)
        pp->rgb[c] = g[c] + (y[c] - g[c]) * t;
      break;
    }
    case LC_MEADOW:
      pp->rgb[0] = 0.34 + 0.08 * t; pp->rgb[1] = 0.47 + 0.06 * t; pp->rgb[2] = 0.22;
      break;
    case LC_SOIL:
      pp->rgb[0] = 0.50 + 0.12 * t; pp->rgb[1] = 0.39 + 0.08 * t; pp->rgb[2] = 0.27 + 0.05 * t;
      pp->period = gr_synth_rng_range (&r, 2.5, 6.0);
      break;
    case LC_FOREST:
      pp->rgb[0] = 0.13; pp->rgb[1] = 0.24 + 0.06 * t; pp->rgb[2] = 0.11;
      break;
    case LC_WATER:
      pp->rgb[0] = 0.10; pp->rgb[1] = 0.16 + 0.05 * t; pp->rgb[2] = 0.20 + 0.04 * t;
      break;
    default:                      /* built: a paved or gravel lot */
      pp->rgb[0] = 0.48 + 0.1 * t; pp->rgb[1] = 0.47 + 0.1 * t; pp->rgb[2] = 0.45 + 0.1 * t;
      pp->period = gr_synth_rng_range (&r, 22.0, 34.0);   /* building block size */
      break;
  }
  pp->rgb[0] += j0;
  pp->rgb[2] += j1;
}

/* The parcel at (x, y): jittered-grid Voronoi cells, each cut in two by a random line
 * through its site.  Returns the distance to the nearest parcel edge. */
static double
parcel_at (double x, double y, double cell, uint64_t seed, int64_t *pcx, int64_t *pcy,
    int *pside)
{
  double gx = x / cell, gy = y / cell;
  int64_t cx = (int64_t) floor (gx), cy = (int64_t) floor (gy);
  double sx[25], sy[25];
  int64_t ix[25], iy[25];
  int n = 0, best = -1;
  double bd = 1e30;
  for (int j = -2; j <= 2; j++)
    for (int i = -2; i <= 2; i++) {
      int64_t qx = cx + i, qy = cy + j;
      sx[n] = (qx + 0.15 + 0.7 * hash01 (qx, qy, seed)) * cell;
      sy[n] = (qy + 0.15 + 0.7 * hash01 (qx, qy, seed ^ 0x1234)) * cell;
      ix[n] = qx;
      iy[n] = qy;
      double d = (x - sx[n]) * (x - sx[n]) + (y - sy[n]) * (y - sy[n]);
      if (d < bd) {
        bd = d;
        best = n;
      }
      n++;
    }
  /* distance to the cell's edges: the bisectors with every other site */
  double edge = 1e30;
  for (int k = 0; k < n; k++) {
    if (k == best)
      continue;
    double ex = sx[k] - sx[best], ey = sy[k] - sy[best];
    double len = sqrt (ex * ex + ey * ey);
    double mx = 0.5 * (sx[k] + sx[best]), my = 0.5 * (sy[k] + sy[best]);
    double d = -((x - mx) * ex + (y - my) * ey) / len;
    if (d < edge)
      edge = d;
  }
  /* the split line through the site */
  int side = 0;
  double split_u = hash01 (ix[best], iy[best], seed ^ 0x5157);
  if (split_u < 0.6) {
    double a = M_PI * hash01 (ix[best], iy[best], seed ^ 0x4242);
    double nx = cos (a), ny = sin (a);
    double d = (x - sx[best]) * nx + (y - sy[best]) * ny;
    side = d >= 0;
    if (fabs (d) < edge)
      edge = fabs (d);
  }
  *pcx = ix[best];
  *pcy = iy[best];
  *pside = side;
  return edge;
}

/* Building roof at (x, y) in a built parcel: blocks of `period` px along the parcel's
 * orientation, one random rectangle per block.  Returns 0 = none, else 1 / 2 for the two
 * roof halves, with the roof colour. */
static int
building_at (const Parcel *pp, double x, double y, double rgb[3])
{
  double c = cos (pp->angle), s = sin (pp->angle);
  double u = c * x + s * y, v = -s * x + c * y;
  double b = pp->period;
  int64_t bx = (int64_t) floor (u / b), by = (int64_t) floor (v / b);
  double lu = u - bx * b, lv = v - by * b;
  uint64_t hs = pp->seed ^ 0x6275696cULL;
  if (hash01 (bx, by, hs) < 0.25)
    return 0;                           /* empty lot */
  double w = b * (0.45 + 0.4 * hash01 (bx, by, hs + 1));
  double h = b * (0.35 + 0.45 * hash01 (bx, by, hs + 2));
  double u0 = (b - w) * hash01 (bx, by, hs + 3), v0 = (b - h) * hash01 (bx, by, hs + 4);
  if (lu < u0 || lu >= u0 + w || lv < v0 || lv >= v0 + h)
    return 0;
  double t = hash01 (bx, by, hs + 5);
  if (t < 0.4) {
    rgb[0] = 0.62; rgb[1] = 0.30; rgb[2] = 0.24;     /* tiles */
  } else if (t < 0.75) {
    rgb[0] = 0.55; rgb[1] = 0.55; rgb[2] = 0.57;     /* metal / concrete */
  } else {
    rgb[0] = 0.32; rgb[1] = 0.30; rgb[2] = 0.30;     /* dark roofing */
  }
  /* ridge along the long side: one half lit, the other shaded */
  bool half = (w >= h) ? (lv - v0 < h * 0.5) : (lu - u0 < w * 0.5);
  return half ? 1 : 2;
}

typedef struct {
  float *dist;          /* distance to the nearest road centre line */
  float *arc;           /* arc length at that point */
  float *halfw;         /* half width of that road */
} RoadField;

static void
stamp_roads (RoadField *rf, int W, int H, uint64_t seed)
{
  size_t n = (size_t) W * H;
  for (size_t i = 0; i < n; i++) {
    rf->dist[i] = 1e9f;
    rf->arc[i] = 0.0f;
    rf->halfw[i] = 0.0f;
  }
  GrSynthRng r;
  gr_synth_rng_init (&r, seed ^ 0x726f616473ULL);
  int nroads = 2 + (int) (gr_synth_rng_uniform (&r) * 2.0 * (1.0 + (double) n / 2.0e6));
  for (int k = 0; k < nroads; k++) {
    double x, y, a;
    double halfw = gr_synth_rng_range (&r, 2.5, 5.0);
    /* from a random edge, heading roughly across the image */
    int edge = (int) (gr_synth_rng_uniform (&r) * 4.0);
    double t = gr_synth_rng_range (&r, 0.1, 0.9);
    switch (edge) {
      case 0: x = -10; y = t * H; a = 0.0; break;
      case 1: x = t * W; y = -10; a = M_PI / 2; break;
      case 2: x = W + 10; y = t * H; a = M_PI; break;
      default: x = t * W; y = H + 10; a = -M_PI / 2; break;
    }
    a += gr_synth_rng_range (&r, -0.6, 0.6);
    double curv = 0.0, arc = 0.0;
    int R = (int) ceil (halfw + 3.0);
    for (int step = 0; step < 8 * (W + H); step++) {
      /* gentle bends: curvature follows a slow random walk, kept small */
      curv += gr_synth_rng_range (&r, -1.0, 1.0) * 0.0003;
      curv *= 0.99;
      a += curv;
      x += cos (a);
      y += sin (a);
      arc += 1.0;
      if (x < -30 || y < -30 || x > W + 30 || y > H + 30)
        break;
      int xi = (int) floor (x), yi = (int) floor (y);
      for (int yy = yi - R; yy <= yi + R + 1; yy++) {
        if (yy < 0 || yy >= H)
          continue;
        for (int xx = xi - R; xx <= xi + R + 1; xx++) {
          if (xx < 0 || xx >= W)
            continue;
          double d = hypot (xx - x, yy - y);
          size_t i = (size_t) yy * W + xx;
          if (d < rf->dist[i]) {
            rf->dist[i] = (float) d;
            rf->arc[i] = (float) arc;
            rf->halfw[i] = (float) halfw;
          }
        }
      }
    }
  }
}

void
gr_synth_control_params_init (GrSynthControlParams *p)
{
  memset (p, 0, sizeof (*p));
  p->width = 1024;
  p->height = 768;
  p->depth = 8;
  p->seed = 1;
  p->nodata_border = 0.0;
  p->with_geo = true;
  p->origin_x = 431000.0;
  p->origin_y = 4577000.0;
  p->pixel_size = 0.1;
}

static inline double
clamp01 (double v)
{
  return v < 0 ? 0 : (v > 1 ? 1 : v);
}

GrStatus
gr_synth_control_generate (const GrSynthControlParams *p, GrSynthImage *out,
    char *errbuf, size_t errlen)
{
  if (!p || !out) {
    gr_set_err (errbuf, errlen, "NULL argument");
    return GR_ERR_INVALID;
  }
  memset (out, 0, sizeof (*out));
  if (p->width <= 0 || p->height <= 0 || p->width > 65536 || p->height > 65536) {
    gr_set_err (errbuf, errlen, "control size %dx%d out of range (1..65536)", p->width,
        p->height);
    return GR_ERR_INVALID;
  }
  if (p->depth != 8 && p->depth != 16) {
    gr_set_err (errbuf, errlen, "control depth %d: must be 8 or 16", p->depth);
    return GR_ERR_INVALID;
  }
  if (!(p->nodata_border >= 0.0 && p->nodata_border <= 0.45)) {
    gr_set_err (errbuf, errlen, "no-data border fraction %g out of range (0..0.45)",
        p->nodata_border);
    return GR_ERR_INVALID;
  }
  if (p->with_geo && !(p->pixel_size > 0)) {
    gr_set_err (errbuf, errlen, "pixel size %g must be > 0", p->pixel_size);
    return GR_ERR_INVALID;
  }
  const int W = p->width, H = p->height;
  const size_t n = (size_t) W * H;
  const uint64_t seed = mix64 (p->seed + 0x636f6e74726f6cULL);
  out->width = W;
  out->height = H;
  out->bands = 3;
  out->depth = p->depth;
  for (int b = 0; b < 3; b++) {
    out->band[b] = malloc (n * sizeof (float));
    if (!out->band[b]) {
      gr_synth_image_free (out);
      gr_set_err (errbuf, errlen, "out of memory for a %dx%d control", W, H);
      return GR_ERR_NOMEM;
    }
  }
  RoadField rf;
  rf.dist = malloc (n * sizeof (float));
  rf.arc = malloc (n * sizeof (float));
  rf.halfw = malloc (n * sizeof (float));
  uint8_t *cls_map = malloc (n);
  if (!rf.dist || !rf.arc || !rf.halfw || !cls_map) {
    free (rf.dist); free (rf.arc); free (rf.halfw); free (cls_map);
    gr_synth_image_free (out);
    gr_set_err (errbuf, errlen, "out of memory for a %dx%d control", W, H);
    return GR_ERR_NOMEM;
  }
  stamp_roads (&rf, W, H, seed);

  const double cell = 150.0;           /* parcel site spacing, px */
  float *R = out->band[0], *G = out->band[1], *B = out->band[2];

  /* every pixel is a pure function of (x, y, seed): rows run in parallel */
#pragma omp parallel for schedule(dynamic, 4)
  for (int y = 0; y < H; y++) {
    for (int x = 0; x < W; x++) {
      size_t i = (size_t) y * W + x;
      /* a slight warp so field edges are not ruler-straight */
      double wx = x + 2.0 * (fbm (x, y, 90.0, 2, 0.5, seed + 11) - 0.5);
      double wy = y + 2.0 * (fbm (x, y, 90.0, 2, 0.5, seed + 12) - 0.5);
      int64_t pcx, pcy;
      int side;
      double edge = parcel_at (wx, wy, cell, seed + 1, &pcx, &pcy, &side);
      Parcel pp;
      parcel_props (pcx, pcy, side, seed, &pp);
      double rgb[3] = { pp.rgb[0], pp.rgb[1], pp.rgb[2] };
      double grain = fbm (x, y, pp.tex_scale, 3, 0.5, pp.seed) - 0.5;
      double fine = hash01 (x, y, seed + 99) - 0.5;
      double k = 1.0;
      int cls = pp.cls;
      switch (pp.cls) {
        case LC_CROP: {
          double c = cos (pp.angle), s = sin (pp.angle);
          double t = (c * x + s * y) / pp.period;
          double row = 0.5 + 0.5 * sin (2 * M_PI * t);
          k = 1.0 + pp.amp * (row - 0.5) * 2.0 + 0.35 * pp.amp * grain
              + 0.03 * fine;
          break;
        }
        case LC_MEADOW:
          k = 1.0 + 0.5 * grain + 0.05 * fine;
          break;
        case LC_SOIL: {
          double c = cos (pp.angle), s = sin (pp.angle);
          double t = (c * x + s * y) / pp.period;
          k = 1.0 + 0.06 * sin (2 * M_PI * t) + 0.35 * grain + 0.06 * fine;
          break;
        }
        case LC_FOREST: {
          double cr;
          double d = worley (x, y, 7.0, pp.seed, &cr);
          double crown = clamp01 (1.0 - d / (4.0 + 2.5 * cr));
          k = 0.55 + 1.1 * crown + 0.2 * grain + 0.05 * fine;
          break;
        }
        case LC_WATER:
          k = 1.0 + 0.08 * grain + 0.02 * fine;
          break;
        default: {
          double roof[3];
          int part = building_at (&pp, x, y, roof);
          if (part) {
            double lit = part == 1 ? 1.12 : 0.86;
            for (int c = 0; c < 3; c++)
              rgb[c] = roof[c] * lit;
            k = 1.0 + 0.04 * fine;
          } else {
            /* shadow: the building up-left of here casts onto this pixel */
            double tmp[3];
            bool shadow = building_at (&pp, x - 3.0, y - 3.0, tmp) != 0;
            k = (shadow ? 0.55 : 1.0) * (1.0 + 0.25 * grain + 0.05 * fine);
          }
          break;
        }
      }
      for (int c = 0; c < 3; c++)
        rgb[c] *= k;
      /* parcel edges: hedges (tree rows) or a thin track */
      if (pp.hedge && edge < pp.hedge_w && cls != LC_WATER && cls != LC_BUILT) {
        double cr;
        double d = worley (x, y, 4.0, seed + 5, &cr);
        double crown = clamp01 (1.0 - d / 3.2);
        double hk = 0.6 + 0.9 * crown;
        rgb[0] = 0.12 * hk; rgb[1] = 0.22 * hk; rgb[2] = 0.10 * hk;
        cls = LC_FOREST;
      } else if (edge < 1.2) {
        double t = 1.0 - edge / 1.2;
        for (int c = 0; c < 3; c++)
          rgb[c] = rgb[c] * (1.0 - 0.5 * t) + 0.55 * 0.5 * t;
      }
      /* roads on top */
      float rd = rf.dist[i];
      if (rd < rf.halfw[i] + 1.8f) {
        double hw = rf.halfw[i];
        double v;
        if (rd < hw) {
          v = 0.33 + 0.04 * grain + 0.03 * fine;
          /* dashed centre line: 6 px on, 6 px off */
          if (rd < 0.55 && fmod (rf.arc[i], 12.0) < 6.0)
            v = 0.85;
          rgb[0] = v; rgb[1] = v; rgb[2] = v * 1.03;
        } else {
          v = 0.58 + 0.08 * grain;         /* gravel shoulder */
          rgb[0] = v; rgb[1] = v * 0.95; rgb[2] = v * 0.85;
        }
        cls = LC_BUILT;
      }
      /* large-scale illumination and moisture, then sensor grain */
      double illum = 0.80 + 0.40 * fbm (x, y, 400.0, 4, 0.55, seed + 21);
      double moist = fbm (x, y, 250.0, 3, 0.5, seed + 22) - 0.5;
      rgb[0] *= illum * (1.0 - 0.15 * moist);
      rgb[1] *= illum * (1.0 + 0.10 * moist);
      rgb[2] *= illum;
      double sn = 0.012 * (hash01 (x, y, seed + 31) - 0.5);
      R[i] = (float) clamp01 (rgb[0] + sn);
      G[i] = (float) clamp01 (rgb[1] + sn);
      B[i] = (float) clamp01 (rgb[2] + sn);
      cls_map[i] = (uint8_t) cls;
    }
  }

  /* scattered trees: shadows first, then the crowns */
  {
    GrSynthRng r;
    gr_synth_rng_init (&r, seed ^ 0x7472656573ULL);
    int ntrees = (int) (n / 2500);
    double *tx = malloc (sizeof (double) * 3 * (size_t) (ntrees + 1));
    int kept = 0;
    if (tx) {
      for (int t = 0; t < ntrees; t++) {
        double cx = gr_synth_rng_range (&r, 0, W), cy = gr_synth_rng_range (&r, 0, H);
        double rad = gr_synth_rng_range (&r, 2.5, 6.5);
        size_t ci = (size_t) (int) cy * W + (size_t) (int) cx;
        if (cls_map[ci] == LC_WATER || cls_map[ci] == LC_BUILT)
          continue;
        tx[3 * kept] = cx;
        tx[3 * kept + 1] = cy;
        tx[3 * kept + 2] = rad;
        kept++;
      }
      for (int pass = 0; pass < 2; pass++)
        for (int t = 0; t < kept; t++) {
          double rad = tx[3 * t + 2];
          double cx = tx[3 * t] + (pass == 0 ? 0.7 * rad : 0.0);
          double cy = tx[3 * t + 1] + (pass == 0 ? 0.7 * rad : 0.0);
          int R0 = (int) ceil (rad) + 1;
          for (int yy = (int) cy - R0; yy <= (int) cy + R0; yy++) {
            if (yy < 0 || yy >= H)
              continue;
            for (int xx = (int) cx - R0; xx <= (int) cx + R0; xx++) {
              if (xx < 0 || xx >= W)
                continue;
              double d = hypot (xx - cx, yy - cy);
              if (d > rad)
                continue;
              size_t i = (size_t) yy * W + xx;
              if (pass == 0) {
                R[i] *= 0.6f; G[i] *= 0.6f; B[i] *= 0.65f;
              } else {
                /* a sunlit crown: brighter towards the up-left */
                double lit = 0.7 + 0.6 * clamp01 (1.0 - hypot (xx - (cx - 0.3 * rad),
                        yy - (cy - 0.3 * rad)) / rad);
                R[i] = (float) clamp01 (0.12 * lit);
                G[i] = (float) clamp01 (0.25 * lit);
                B[i] = (float) clamp01 (0.10 * lit);
              }
            }
          }
        }
      free (tx);
    }
  }
  free (rf.dist);
  free (rf.arc);
  free (rf.halfw);
  free (cls_map);

  /* no-data rim */
  if (p->nodata_border > 0) {
    out->mask = malloc (n);
    if (!out->mask) {
      gr_synth_image_free (out);
      gr_set_err (errbuf, errlen, "out of memory for a %dx%d control", W, H);
      return GR_ERR_NOMEM;
    }
    double maxw = p->nodata_border * (W < H ? W : H);
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++) {
        size_t i = (size_t) y * W + x;
        int de = x;
        if (y < de) de = y;
        if (W - 1 - x < de) de = W - 1 - x;
        if (H - 1 - y < de) de = H - 1 - y;
        double t = maxw * (0.15 + 0.85 * clamp01 (1.4 * fbm (x, y, 180.0, 3, 0.5,
                        seed + 41) - 0.2));
        out->mask[i] = (double) de >= t;
      }
  }

  /* quantize to the depth; no-data pixels hold 0 */
  double maxval = p->depth == 16 ? 65535.0 : 255.0;
  for (int b = 0; b < 3; b++)
    for (size_t i = 0; i < n; i++) {
      double v = out->mask && !out->mask[i] ? 0.0 : out->band[b][i];
      out->band[b][i] = (float) floor (v * maxval + 0.5);
    }

  if (p->with_geo) {
    out->has_geo = true;
    out->geo[0] = p->origin_x;
    out->geo[1] = p->pixel_size;
    out->geo[2] = 0.0;
    out->geo[3] = p->origin_y;
    out->geo[4] = 0.0;
    out->geo[5] = -p->pixel_size;
  }
  return GR_OK;
}

/* ------------------------------------------------------------------ PNG / world files */

GrStatus
gr_synth_png_write (const char *path, const float *const *planes, int channels,
    const uint8_t *mask, int width, int height, double maxval, int out_depth,
    char *errbuf, size_t errlen)
{
  if (!path || !planes || channels < 1 || channels > 4 || width <= 0 || height <= 0
      || (out_depth != 8 && out_depth != 16) || !(maxval > 0)
      || (mask && channels == 4)) {
    gr_set_err (errbuf, errlen, "%s: invalid PNG write arguments", path ? path : "(null)");
    return GR_ERR_INVALID;
  }
  int out_ch = channels + (mask ? 1 : 0);
  int color_type;
  switch (out_ch) {
    case 1: color_type = PNG_COLOR_TYPE_GRAY; break;
    case 2: color_type = PNG_COLOR_TYPE_GRAY_ALPHA; break;
    case 3: color_type = PNG_COLOR_TYPE_RGB; break;
    default: color_type = PNG_COLOR_TYPE_RGB_ALPHA; break;
  }
  FILE *f = fopen (path, "wb");
  if (!f) {
    gr_set_err (errbuf, errlen, "%s: cannot open for writing: %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  size_t bpc = out_depth / 8;
  size_t rowbytes = (size_t) width * out_ch * bpc;
  uint8_t *row = malloc (rowbytes);
  png_structp png = png_create_write_struct (PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png ? png_create_info_struct (png) : NULL;
  if (!row || !png || !info) {
    if (png)
      png_destroy_write_struct (&png, info ? &info : NULL);
    free (row);
    fclose (f);
    gr_set_err (errbuf, errlen, "%s: out of memory", path);
    return GR_ERR_NOMEM;
  }
  if (setjmp (png_jmpbuf (png))) {
    png_destroy_write_struct (&png, &info);
    free (row);
    fclose (f);
    gr_set_err (errbuf, errlen, "%s: libpng write error", path);
    return GR_ERR_IO;
  }
  png_init_io (png, f);
  png_set_IHDR (png, info, width, height, out_depth, color_type, PNG_INTERLACE_NONE,
      PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info (png, info);
  double full = out_depth == 16 ? 65535.0 : 255.0;
  double k = full / maxval;
  for (int y = 0; y < height; y++) {
    uint8_t *o = row;
    for (int x = 0; x < width; x++) {
      size_t i = (size_t) y * width + x;
      bool ok = !mask || mask[i];
      for (int c = 0; c < out_ch; c++) {
        double v;
        if (c < channels)
          v = ok ? planes[c][i] * k : 0.0;
        else
          v = ok ? full : 0.0;
        if (!(v > 0))
          v = 0;                      /* also NaN */
        if (v > full)
          v = full;
        unsigned q = (unsigned) (v + 0.5);
        if (bpc == 2) {
          *o++ = (uint8_t) (q >> 8);
          *o++ = (uint8_t) (q & 0xff);
        } else {
          *o++ = (uint8_t) q;
        }
      }
    }
    png_write_row (png, row);
  }
  png_write_end (png, NULL);
  png_destroy_write_struct (&png, &info);
  free (row);
  if (fclose (f) != 0) {
    gr_set_err (errbuf, errlen, "%s: write failed: %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  return GR_OK;
}

GrStatus
gr_synth_image_write_png (const char *path, const GrSynthImage *img, char *errbuf,
    size_t errlen)
{
  const float *planes[GR_SYNTH_MAX_BANDS];
  int ch = img->bands > 3 ? 3 : img->bands;
  for (int b = 0; b < ch; b++)
    planes[b] = img->band[b];
  return gr_synth_png_write (path, planes, ch, img->mask, img->width, img->height,
      img->depth == 16 ? 65535.0 : 255.0, img->depth, errbuf, errlen);
}

/* The shortest of %.15g .. %.17g that reads back to the same double. */
static void
put_exact (FILE *f, double v, const char *sep)
{
  char buf[64];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf (buf, sizeof (buf), "%.*g", prec, v);
    if (strtod (buf, NULL) == v)
      break;
  }
  fprintf (f, "%s%s", buf, sep);
}

GrStatus
gr_synth_world_file_write (const char *path, const double geo[6], char *errbuf,
    size_t errlen)
{
  FILE *f = fopen (path, "w");
  if (!f) {
    gr_set_err (errbuf, errlen, "%s: cannot open for writing: %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  /* A, D, B, E, C, F; C/F are the centre of the top-left pixel */
  double v[6] = { geo[1], geo[4], geo[2], geo[5], geo[0] + 0.5 * geo[1] + 0.5 * geo[2],
    geo[3] + 0.5 * geo[4] + 0.5 * geo[5] };
  for (int k = 0; k < 6; k++)
    put_exact (f, v[k], "\n");
  if (fclose (f) != 0) {
    gr_set_err (errbuf, errlen, "%s: write failed: %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  return GR_OK;
}

char *
gr_synth_world_file_path (const char *image_path)
{
  size_t len = strlen (image_path);
  const char *dot = strrchr (image_path, '.');
  const char *slash = strrchr (image_path, '/');
  const char *ext = NULL;
  if (dot && (!slash || dot > slash)) {
    if (!strcasecmp (dot, ".png"))
      ext = ".pgw";
    else if (!strcasecmp (dot, ".jpg") || !strcasecmp (dot, ".jpeg"))
      ext = ".jgw";
    else if (!strcasecmp (dot, ".tif") || !strcasecmp (dot, ".tiff"))
      ext = ".tfw";
  }
  char *out = malloc (len + 8);
  if (!out)
    return NULL;
  if (ext) {
    size_t stem = (size_t) (dot - image_path);
    memcpy (out, image_path, stem);
    strcpy (out + stem, ext);
  } else {
    memcpy (out, image_path, len);
    strcpy (out + len, ".wld");
  }
  return out;
}

/* ------------------------------------------------------------------ geometry */

static void
mat3_mul (const double a[9], const double b[9], double out[9])
{
  double r[9];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      r[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
  memcpy (out, r, sizeof (r));
}

void
gr_synth_pose_homography (const GrSynthPose *pose, int width, int height, double h[9])
{
  double uc = 0.5 * (width - 1), vc = 0.5 * (height - 1);
  double a = pose->rotation_deg * M_PI / 180.0;
  double c = cos (a) * pose->scale, s = sin (a) * pose->scale;
  /* exact for the axis-aligned cases so integer poses cut exactly */
  if (pose->rotation_deg == 0.0) {
    c = pose->scale;
    s = 0.0;
  }
  double T0[9] = { 1, 0, -uc, 0, 1, -vc, 0, 0, 1 };
  double P[9] = { 1, 0, 0, 0, 1, 0, pose->persp_x, pose->persp_y, 1 };
  double S[9] = { c, -s, pose->centre_x, s, c, pose->centre_y, 0, 0, 1 };
  double t[9];
  mat3_mul (P, T0, t);
  mat3_mul (S, t, h);
  double k = h[8];
  for (int i = 0; i < 9; i++)
    h[i] /= k;
}

void
gr_synth_translation_homography (double x, double y, double h[9])
{
  double t[9] = { 1, 0, x, 0, 1, y, 0, 0, 1 };
  memcpy (h, t, sizeof (t));
}

bool
gr_synth_homography_apply (const double h[9], double u, double v, double *x, double *y)
{
  double w = h[6] * u + h[7] * v + h[8];
  if (!(w > 0)) {
    *x = *y = NAN;
    return false;
  }
  *x = (h[0] * u + h[1] * v + h[2]) / w;
  *y = (h[3] * u + h[4] * v + h[5]) / w;
  return true;
}

/* Frame pixel -> control position for the cutters. */
typedef bool (*FrameToControl) (const void *ctx, double u, double v, double *x, double *y);

typedef struct {
  const GrSynthCamera *cam;
  const double *h;
  int width, height;
} CameraMap;

static bool
homography_map (const void *ctx, double u, double v, double *x, double *y)
{
  return gr_synth_homography_apply ((const double *) ctx, u, v, x, y);
}

static bool
camera_map (const void *ctx, double u, double v, double *x, double *y)
{
  const CameraMap *m = ctx;
  return gr_synth_camera_apply (m->cam, m->h, m->width, m->height, u, v, x, y);
}

static GrStatus
cut_mapped (const GrPlaneF *control, FrameToControl map, const void *ctx, int width,
    int height, int supersample, GrPlaneF *out)
{
  if (!control || !control->data || !out || width <= 0 || height <= 0
      || supersample < 1 || supersample > 16)
    return GR_ERR_INVALID;
  if (!gr_synth_plane_alloc (out, width, height, true))
    return GR_ERR_NOMEM;
  const int n = supersample;
#pragma omp parallel for schedule(static)
  for (int v = 0; v < height; v++) {
    for (int u = 0; u < width; u++) {
      size_t i = (size_t) v * width + u;
      double acc = 0.0;
      bool ok = true;
      for (int sy = 0; sy < n && ok; sy++)
        for (int sx = 0; sx < n && ok; sx++) {
          double fu = u, fv = v;
          if (n > 1) {
            fu += (sx + 0.5) / n - 0.5;
            fv += (sy + 0.5) / n - 0.5;
          }
          double x, y;
          float val;
          if (!map (ctx, fu, fv, &x, &y)
              || !gr_synth_sample_bilinear (control, x, y, &val))
            ok = false;
          else
            acc += val;
        }
      out->data[i] = ok ? (float) (acc / (n * n)) : 0.0f;
      out->mask[i] = ok;
    }
  }
  return GR_OK;
}

GrStatus
gr_synth_cut (const GrPlaneF *control, const double h[9], int width, int height,
    int supersample, GrPlaneF *out)
{
  if (!h)
    return GR_ERR_INVALID;
  return cut_mapped (control, homography_map, h, width, height, supersample, out);
}

/* ------------------------------------------------------------------ camera */

static double
camera_focal (const GrSynthCamera *cam, int width)
{
  return cam->focal > 0 ? cam->focal : (double) width;
}

bool
gr_synth_camera_homography (const GrSynthCamera *cam, int width, int height, double h[9])
{
  if (!(cam->scale > 0) || !(fabs (cam->pitch_deg) < 80) || !(fabs (cam->roll_deg) < 80))
    return false;
  const double f = camera_focal (cam, width);
  const double cu = 0.5 * (width - 1), cv = 0.5 * (height - 1);
  const double ps = cam->heading_deg * M_PI / 180.0;
  const double th = cam->pitch_deg * M_PI / 180.0, ph = cam->roll_deg * M_PI / 180.0;
  /* camera axes in ground coordinates (X east = control x, Y south = control y, Z up):
   * nadir first (image right = heading + 90, image down = opposite the heading, axis
   * down), then pitch turns the axis towards the image's up, then roll towards its
   * right */
  double xa[3] = { cos (ps), sin (ps), 0 };
  double ya[3] = { -sin (ps), cos (ps), 0 };
  double za[3] = { 0, 0, -1 };
  double y1[3], z1[3], x2[3], z2[3];
  for (int k = 0; k < 3; k++) {
    z1[k] = cos (th) * za[k] - sin (th) * ya[k];
    y1[k] = cos (th) * ya[k] + sin (th) * za[k];
  }
  for (int k = 0; k < 3; k++) {
    z2[k] = cos (ph) * z1[k] + sin (ph) * xa[k];
    x2[k] = cos (ph) * xa[k] - sin (ph) * z1[k];
  }
  /* the camera centre: on the axis through the aim point, at height scale * f */
  const double height_px = cam->scale * f;
  const double t = height_px / -z2[2];
  const double C[3] = { cam->aim_x - t * z2[0], cam->aim_y - t * z2[1], -t * z2[2] };
  const double *R[3] = { x2, y1, z2 };
  /* ground (X, Y, 1) -> camera: rows (r_x, r_y, -r . C) */
  double M[9];
  for (int r = 0; r < 3; r++) {
    M[r * 3 + 0] = R[r][0];
    M[r * 3 + 1] = R[r][1];
    M[r * 3 + 2] = -(R[r][0] * C[0] + R[r][1] * C[1] + R[r][2] * C[2]);
  }
  const double K[9] = { f, 0, cu, 0, f, cv, 0, 0, 1 };
  double G[9];
  mat3_mul (K, M, G);             /* ground -> frame */
  /* frame -> ground: the inverse (adjugate; the scale is normalized below) */
  const double a = G[0], b = G[1], c = G[2], d = G[3], e = G[4], g = G[5];
  const double p = G[6], q = G[7], r = G[8];
  double inv[9] = { e * r - g * q, c * q - b * r, b * g - c * e,
    g * p - d * r, a * r - c * p, c * d - a * g,
    d * q - e * p, b * p - a * q, a * e - b * d
  };
  if (!(fabs (inv[8]) > 1e-300))
    return false;
  for (int k = 0; k < 9; k++)
    h[k] = inv[k] / inv[8];
  return true;
}

void
gr_synth_lens_distort (const GrSynthCamera *cam, int width, int height, double u,
    double v, double *ud, double *vd)
{
  const double f = camera_focal (cam, width);
  const double cu = 0.5 * (width - 1), cv = 0.5 * (height - 1);
  const GrSynthLens *L = &cam->lens;
  const double x = (u - cu) / f, y = (v - cv) / f, r2 = x * x + y * y;
  const double rad = 1.0 + r2 * (L->k1 + r2 * (L->k2 + r2 * L->k3));
  const double xd = x * rad + 2.0 * L->p1 * x * y + L->p2 * (r2 + 2.0 * x * x);
  const double yd = y * rad + L->p1 * (r2 + 2.0 * y * y) + 2.0 * L->p2 * x * y;
  *ud = cu + f * xd;
  *vd = cv + f * yd;
}

bool
gr_synth_lens_undistort (const GrSynthCamera *cam, int width, int height, double ud,
    double vd, double *u, double *v)
{
  const GrSynthLens *L = &cam->lens;
  if (L->k1 == 0 && L->k2 == 0 && L->k3 == 0 && L->p1 == 0 && L->p2 == 0) {
    *u = ud;
    *v = vd;
    return true;
  }
  /* Newton on distort(u, v) = (ud, vd) with a numerical Jacobian (pixel units) */
  double x = ud, y = vd;
  for (int it = 0; it < 30; it++) {
    double fx, fy, ax, ay, bx, by;
    gr_synth_lens_distort (cam, width, height, x, y, &fx, &fy);
    const double rx = fx - ud, ry = fy - vd;
    if (rx * rx + ry * ry < 1e-20) {
      *u = x;
      *v = y;
      return true;
    }
    gr_synth_lens_distort (cam, width, height, x + 1e-3, y, &ax, &ay);
    gr_synth_lens_distort (cam, width, height, x, y + 1e-3, &bx, &by);
    const double j00 = (ax - fx) / 1e-3, j10 = (ay - fy) / 1e-3;
    const double j01 = (bx - fx) / 1e-3, j11 = (by - fy) / 1e-3;
    const double det = j00 * j11 - j01 * j10;
    if (!(fabs (det) > 1e-12))
      break;
    x -= (j11 * rx - j01 * ry) / det;
    y -= (-j10 * rx + j00 * ry) / det;
  }
  *u = *v = NAN;
  return false;
}

bool
gr_synth_camera_apply (const GrSynthCamera *cam, const double h[9], int width,
    int height, double u, double v, double *x, double *y)
{
  double pu, pv;
  if (!gr_synth_lens_undistort (cam, width, height, u, v, &pu, &pv)) {
    *x = *y = NAN;
    return false;
  }
  return gr_synth_homography_apply (h, pu, pv, x, y);
}

GrStatus
gr_synth_cut_camera (const GrPlaneF *control, const GrSynthCamera *cam, int width,
    int height, int supersample, GrPlaneF *out)
{
  double h[9];
  if (!cam || !gr_synth_camera_homography (cam, width, height, h))
    return GR_ERR_INVALID;
  const CameraMap m = { cam, h, width, height };
  return cut_mapped (control, camera_map, &m, width, height, supersample, out);
}

/* ------------------------------------------------------------------ modality */

GrStatus
gr_synth_mix (const GrPlaneF *bands, const double *weights, int n, double offset,
    double maxval, GrPlaneF *out)
{
  if (!bands || !weights || n < 1 || !out)
    return GR_ERR_INVALID;
  int W = bands[0].width, H = bands[0].height;
  for (int k = 0; k < n; k++)
    if (!bands[k].data || bands[k].width != W || bands[k].height != H)
      return GR_ERR_INVALID;
  if (!gr_synth_plane_alloc (out, W, H, true))
    return GR_ERR_NOMEM;
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      size_t i = (size_t) y * W + x;
      bool ok = true;
      double v = offset;
      for (int k = 0; k < n; k++) {
        if (bands[k].mask && !bands[k].mask[i])
          ok = false;
        v += weights[k] * bands[k].data[(size_t) y * bands[k].stride + x];
      }
      if (v < 0)
        v = 0;
      if (v > maxval)
        v = maxval;
      out->data[i] = ok ? (float) v : 0.0f;
      out->mask[i] = ok;
    }
  return GR_OK;
}

GrStatus
gr_synth_mix_nir_like (const GrPlaneF *red, const GrPlaneF *green, double maxval,
    GrPlaneF *out)
{
  GrPlaneF b[2] = { *red, *green };
  double w[2] = { -0.3, 0.7 };
  return gr_synth_mix (b, w, 2, 0.3 * maxval, maxval, out);
}

void
gr_synth_tone_init (GrSynthTone *t, GrSynthToneKind kind, uint64_t seed)
{
  memset (t, 0, sizeof (*t));
  t->kind = kind;
  GrSynthRng r;
  gr_synth_rng_init (&r, seed ^ 0x746f6e65ULL);
  /* gamma away from 1: [0.45, 0.8] or [1.3, 2.2] */
  t->gamma = gr_synth_rng_uniform (&r) < 0.5 ? gr_synth_rng_range (&r, 0.45, 0.8)
      : gr_synth_rng_range (&r, 1.3, 2.2);
  t->contrast = gr_synth_rng_range (&r, 6.0, 12.0);
  t->midpoint = gr_synth_rng_range (&r, 0.35, 0.65);
  /* random positive increments, normalised, then mixed 80/20 with the identity so
   * that every step is at least 0.2 / 8 = 2.5% of the range */
  double inc[GR_SYNTH_LUT_KNOTS - 1], sum = 0.0;
  for (int k = 0; k < GR_SYNTH_LUT_KNOTS - 1; k++) {
    inc[k] = gr_synth_rng_uniform (&r);
    sum += inc[k];
  }
  t->knots[0] = 0.0;
  double acc = 0.0;
  for (int k = 0; k < GR_SYNTH_LUT_KNOTS - 1; k++) {
    acc += inc[k] / sum;
    double ident = (double) (k + 1) / (GR_SYNTH_LUT_KNOTS - 1);
    t->knots[k + 1] = 0.8 * acc + 0.2 * ident;
  }
  t->knots[GR_SYNTH_LUT_KNOTS - 1] = 1.0;
  t->invert = kind == GR_SYNTH_TONE_INVERT;
}

static inline double
logistic (double z)
{
  return 1.0 / (1.0 + exp (-z));
}

double
gr_synth_tone_eval (const GrSynthTone *t, double v)
{
  v = clamp01 (v);
  double f;
  switch (t->kind) {
    case GR_SYNTH_TONE_GAMMA:
      f = pow (v, t->gamma);
      break;
    case GR_SYNTH_TONE_SCURVE: {
      double lo = logistic (-t->contrast * t->midpoint);
      double hi = logistic (t->contrast * (1.0 - t->midpoint));
      f = (logistic (t->contrast * (v - t->midpoint)) - lo) / (hi - lo);
      break;
    }
    case GR_SYNTH_TONE_LUT: {
      double pos = v * (GR_SYNTH_LUT_KNOTS - 1);
      int k = (int) floor (pos);
      if (k >= GR_SYNTH_LUT_KNOTS - 1)
        k = GR_SYNTH_LUT_KNOTS - 2;
      double fr = pos - k;
      f = t->knots[k] + (t->knots[k + 1] - t->knots[k]) * fr;
      break;
    }
    default:
      f = v;
      break;
  }
  f = clamp01 (f);
  return t->invert ? 1.0 - f : f;
}

void
gr_synth_tone_apply (const GrSynthTone *t, GrPlaneF *p, double maxval)
{
  if (t->kind == GR_SYNTH_TONE_NONE && !t->invert)
    return;
  for (int y = 0; y < p->height; y++)
    for (int x = 0; x < p->width; x++) {
      if (!plane_valid (p, x, y))
        continue;
      float *d = &p->data[(size_t) y * p->stride + x];
      *d = (float) (gr_synth_tone_eval (t, *d / maxval) * maxval);
    }
}

static const char *const tone_names[] = { "none", "gamma", "scurve", "lut", "invert" };

int
gr_synth_tone_kind_from_string (const char *s)
{
  for (int k = 0; k < 5; k++)
    if (s && !strcmp (s, tone_names[k]))
      return k;
  return -1;
}

const char *
gr_synth_tone_kind_name (GrSynthToneKind kind)
{
  return (unsigned) kind < 5 ? tone_names[kind] : "?";
}

void
gr_synth_add_noise (GrPlaneF *p, double sigma, double maxval, uint64_t seed)
{
  if (!(sigma > 0))
    return;
  GrSynthRng r;
  gr_synth_rng_init (&r, seed ^ 0x6e6f697365ULL);
  for (int y = 0; y < p->height; y++)
    for (int x = 0; x < p->width; x++) {
      double g = gr_synth_rng_gauss (&r);    /* drawn for every pixel: reproducible */
      if (!plane_valid (p, x, y))
        continue;
      float *d = &p->data[(size_t) y * p->stride + x];
      double v = *d + sigma * g;
      *d = (float) (v < 0 ? 0 : (v > maxval ? maxval : v));
    }
}

static void
invalidate (GrPlaneF *p, int x, int y)
{
  p->mask[(size_t) y * p->width + x] = 0;
  p->data[(size_t) y * p->stride + x] = 0.0f;
}

/* Inside the convex quad q (4 points, either orientation). */
static bool
in_quad (const double q[8], double x, double y)
{
  int pos = 0, neg = 0;
  for (int k = 0; k < 4; k++) {
    double ax = q[2 * k], ay = q[2 * k + 1];
    double bx = q[2 * ((k + 1) % 4)], by = q[2 * ((k + 1) % 4) + 1];
    double c = (bx - ax) * (y - ay) - (by - ay) * (x - ax);
    if (c > 0) pos++;
    if (c < 0) neg++;
  }
  return pos == 0 || neg == 0;
}

GrSynthBorderKind
gr_synth_nodata_border (GrPlaneF *p, GrSynthBorderKind kind, double frac, uint64_t seed)
{
  if (!p || !p->mask || !(frac > 0))
    return kind;
  if (frac > 0.5)
    frac = 0.5;
  GrSynthRng r;
  gr_synth_rng_init (&r, seed ^ 0x626f72646572ULL);
  if (kind == GR_SYNTH_BORDER_RANDOM)
    kind = (GrSynthBorderKind) (1 + (int) (gr_synth_rng_uniform (&r) * 3.0) % 3);
  const int W = p->width, H = p->height;
  if (kind == GR_SYNTH_BORDER_STRIPS) {
    int nsides = 1 + (int) (gr_synth_rng_uniform (&r) * 3.0);
    int first = (int) (gr_synth_rng_uniform (&r) * 4.0);
    for (int k = 0; k < nsides; k++) {
      int side = (first + k) % 4;     /* 0 left, 1 top, 2 right, 3 bottom */
      int dim = (side % 2 == 0) ? W : H;
      int w = (int) ceil (dim * frac * gr_synth_rng_range (&r, 0.3, 1.0));
      for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
          bool in = (side == 0 && x < w) || (side == 1 && y < w)
              || (side == 2 && x >= W - w) || (side == 3 && y >= H - w);
          if (in)
            invalidate (p, x, y);
        }
    }
  } else if (kind == GR_SYNTH_BORDER_CORNERS) {
    int ncorners = 1 + (int) (gr_synth_rng_uniform (&r) * 4.0);
    int first = (int) (gr_synth_rng_uniform (&r) * 4.0);
    double lim = frac * 2.0 > 1.0 ? 1.0 : frac * 2.0;
    for (int k = 0; k < ncorners; k++) {
      int corner = (first + k) % 4;   /* 0 TL, 1 TR, 2 BR, 3 BL */
      double lx = W * lim * gr_synth_rng_range (&r, 0.5, 1.0);
      double ly = H * lim * gr_synth_rng_range (&r, 0.5, 1.0);
      for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
          double dx = (corner == 0 || corner == 3) ? x + 0.5 : W - (x + 0.5);
          double dy = (corner == 0 || corner == 1) ? y + 0.5 : H - (y + 0.5);
          if (dx / lx + dy / ly < 1.0)
            invalidate (p, x, y);
        }
    }
  } else {                            /* FOOTPRINT */
    /* a rotated rectangle with the frame's aspect, as large as fits, then its corners
     * pulled in at random (perspective of a rectified image) */
    double phi = gr_synth_rng_range (&r, 0.3, 1.0) * frac * (M_PI / 2.0)
        * (gr_synth_rng_uniform (&r) < 0.5 ? -1.0 : 1.0);
    double c = fabs (cos (phi)), s = fabs (sin (phi));
    double k = fmin (W / (W * c + H * s), H / (W * s + H * c));
    double hw = 0.5 * W * k, hh = 0.5 * H * k;
    double cx = 0.5 * W, cy = 0.5 * H;
    double q[8];
    double lx[4] = { -hw, hw, hw, -hw }, ly[4] = { -hh, -hh, hh, hh };
    for (int i = 0; i < 4; i++) {
      double pull = gr_synth_rng_range (&r, 0.0, 0.25 * frac);
      double ux = lx[i] * (1.0 - pull), uy = ly[i] * (1.0 - pull);
      q[2 * i] = cx + cos (phi) * ux - sin (phi) * uy;
      q[2 * i + 1] = cy + sin (phi) * ux + cos (phi) * uy;
    }
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++)
        if (!in_quad (q, x + 0.5, y + 0.5))
          invalidate (p, x, y);
  }
  return kind;
}

static const char *const border_names[] = { "random", "strips", "corners", "footprint" };

int
gr_synth_border_kind_from_string (const char *s)
{
  for (int k = 0; k < 4; k++)
    if (s && !strcmp (s, border_names[k]))
      return k;
  return -1;
}

const char *
gr_synth_border_kind_name (GrSynthBorderKind kind)
{
  return (unsigned) kind < 4 ? border_names[kind] : "?";
}

/* ------------------------------------------------------------------ truth */

/* The truth of a frame whose pixel-index -> control mapping is h (the pinhole part
 * for a camera; gr_synth_camera_apply gives the exact mapping with its lens). */
static void
truth_from_homography (GrSynthTruth *t, int index, const char *file, const double h[9],
    double rotation_deg, double scale, int width, int height, const double *geo)
{
  memset (t, 0, sizeof (*t));
  t->index = index;
  snprintf (t->file, sizeof (t->file), "%s", file ? file : "");
  memcpy (t->h, h, sizeof (t->h));
  gr_synth_homography_apply (t->h, 0, 0, &t->x, &t->y);
  gr_synth_homography_apply (t->h, 0.5 * (width - 1), 0.5 * (height - 1), &t->centre_x,
      &t->centre_y);
  t->rotation_deg = rotation_deg;
  t->scale = scale;
  if (geo) {
    double px = t->centre_x + 0.5, py = t->centre_y + 0.5;
    t->map_x = geo[0] + px * geo[1] + py * geo[2];
    t->map_y = geo[3] + px * geo[4] + py * geo[5];
  } else {
    t->map_x = t->map_y = NAN;
  }
}

void
gr_synth_truth_from_pose (GrSynthTruth *t, int index, const char *file,
    const GrSynthPose *pose, int width, int height, const double *geo)
{
  double h[9];
  gr_synth_pose_homography (pose, width, height, h);
  truth_from_homography (t, index, file, h, pose->rotation_deg, pose->scale, width, height,
      geo);
}

bool
gr_synth_truth_from_camera (GrSynthTruth *t, int index, const char *file,
    const GrSynthCamera *cam, int width, int height, const double *geo)
{
  double h[9];
  if (!gr_synth_camera_homography (cam, width, height, h))
    return false;
  truth_from_homography (t, index, file, h, cam->heading_deg, cam->scale, width, height,
      geo);
  return true;
}

static const char *const truth_header =
    "index,file,x,y,centre_x,centre_y,rotation_deg,scale,"
    "h00,h01,h02,h10,h11,h12,h20,h21,h22,map_x,map_y";

void
gr_synth_truth_write_header (FILE *f)
{
  fprintf (f, "%s\n", truth_header);
}

static void
put_double (FILE *f, double v)
{
  if (isnan (v))
    fputs (",nan", f);
  else {
    fputc (',', f);
    put_exact (f, v, "");
  }
}

static const char *const camera_header =
    "index,file,heading_deg,pitch_deg,roll_deg,scale,focal,k1,k2,k3,p1,p2";

void
gr_synth_camera_write_header (FILE *f)
{
  fprintf (f, "%s\n", camera_header);
}

void
gr_synth_camera_write_row (FILE *f, int index, const char *file, const GrSynthCamera *cam,
    int width)
{
  fprintf (f, "%d,%s", index, file);
  const double v[10] = { cam->heading_deg, cam->pitch_deg, cam->roll_deg, cam->scale,
    cam->focal > 0 ? cam->focal : width, cam->lens.k1, cam->lens.k2, cam->lens.k3,
    cam->lens.p1, cam->lens.p2
  };
  for (int k = 0; k < 10; k++)
    put_double (f, v[k]);
  fputc ('\n', f);
}

void
gr_synth_truth_write_row (FILE *f, const GrSynthTruth *t)
{
  fprintf (f, "%d,%s", t->index, t->file);
  double v[6] = { t->x, t->y, t->centre_x, t->centre_y, t->rotation_deg, t->scale };
  for (int k = 0; k < 6; k++)
    put_double (f, v[k]);
  for (int k = 0; k < 9; k++)
    put_double (f, t->h[k]);
  put_double (f, t->map_x);
  put_double (f, t->map_y);
  fputc ('\n', f);
}

GrStatus
gr_synth_truth_write_csv (const char *path, const GrSynthTruth *rows, int n,
    char *errbuf, size_t errlen)
{
  FILE *f = fopen (path, "w");
  if (!f) {
    gr_set_err (errbuf, errlen, "%s: cannot open for writing: %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  gr_synth_truth_write_header (f);
  for (int i = 0; i < n; i++)
    gr_synth_truth_write_row (f, &rows[i]);
  if (fclose (f) != 0) {
    gr_set_err (errbuf, errlen, "%s: write failed: %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  return GR_OK;
}

GrStatus
gr_synth_truth_read_csv (const char *path, GrSynthTruth **rows, int *n, char *errbuf,
    size_t errlen)
{
  *rows = NULL;
  *n = 0;
  FILE *f = fopen (path, "r");
  if (!f) {
    gr_set_err (errbuf, errlen, "%s: cannot open: %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  char line[4096];
  if (!fgets (line, sizeof (line), f)
      || strncmp (line, truth_header, strlen (truth_header)) != 0) {
    fclose (f);
    gr_set_err (errbuf, errlen, "%s: not a georeg-synth truth file (header mismatch)", path);
    return GR_ERR_FORMAT;
  }
  int cap = 0, count = 0, lineno = 1;
  GrSynthTruth *out = NULL;
  while (fgets (line, sizeof (line), f)) {
    lineno++;
    size_t len = strlen (line);
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
      line[--len] = '\0';
    if (len == 0)
      continue;
    char *field[19];
    int nf = 0;
    char *s = line;
    while (nf < 19) {
      field[nf++] = s;
      char *comma = strchr (s, ',');
      if (!comma)
        break;
      *comma = '\0';
      s = comma + 1;
    }
    if (nf != 19 || strchr (field[18], ',')) {
      free (out);
      fclose (f);
      gr_set_err (errbuf, errlen, "%s:%d: expected 19 fields", path, lineno);
      return GR_ERR_FORMAT;
    }
    if (count == cap) {
      cap = cap ? cap * 2 : 64;
      GrSynthTruth *nr = realloc (out, sizeof (*out) * (size_t) cap);
      if (!nr) {
        free (out);
        fclose (f);
        gr_set_err (errbuf, errlen, "%s: out of memory", path);
        return GR_ERR_NOMEM;
      }
      out = nr;
    }
    GrSynthTruth *t = &out[count];
    memset (t, 0, sizeof (*t));
    double *dst[17] = { &t->x, &t->y, &t->centre_x, &t->centre_y, &t->rotation_deg,
      &t->scale, &t->h[0], &t->h[1], &t->h[2], &t->h[3], &t->h[4], &t->h[5], &t->h[6],
      &t->h[7], &t->h[8], &t->map_x, &t->map_y };
    char *end;
    long idx = strtol (field[0], &end, 10);
    bool bad = end == field[0] || *end;
    snprintf (t->file, sizeof (t->file), "%s", field[1]);
    for (int k = 0; k < 17 && !bad; k++) {
      *dst[k] = strtod (field[2 + k], &end);
      bad = end == field[2 + k] || *end;
    }
    if (bad) {
      free (out);
      fclose (f);
      gr_set_err (errbuf, errlen, "%s:%d: malformed number", path, lineno);
      return GR_ERR_FORMAT;
    }
    t->index = (int) idx;
    count++;
  }
  fclose (f);
  *rows = out;
  *n = count;
  return GR_OK;
}
