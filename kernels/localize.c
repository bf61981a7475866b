/* Coarse localization at any heading and ground resolution (localize.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "localize.h"
#include "fit.h"
#include "image.h"
#include "keypoints.h"
#include "localize_features.h"
#include "nmi_dense.h"
#include "nmi_sparse.h"
#include "peak.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#define MAX_LEVELS 40
/* grey levels of the 11 x 11 templates: with 121 samples, 256 levels put nearly every
 * pixel in its own joint bin and every offset scores alike */
#define REFINE_LEVELS 16
#define SCALE_STEP 1.2599210498948732   /* 2^(1/3): coarse scale steps */

/* The control at one search scale: downscaled, binned, resident in its own engine
 * (for CUDA, on the device).  Search scales are quantized to quarter octaves so
 * nearby scale hypotheses share a level. */
typedef struct {
  int q;                  /* search scale = 2^(q/4), q <= 0 */
  int grey_levels;
  int pad;                /* no-data rim added on every side, px: frames hanging over
                             the control's edge can still be placed where they are */
  double sx, sy;          /* effective search px per control px (rounded sizes) */
  int w, h;               /* with the rim */
  uint8_t *bins;
  uint8_t *mask;          /* NULL when the control has none */
  GrNmiDense *engine;
  GrNmiSparse *sparse;    /* the registration's engine on this level (refine_on), made
                             on first use: the translation check and the sweep's
                             verification register on every frame */
} Level;

struct GrLocalize {
  GrBackend backend;
  int device;
  GrBackend actual;
  GrPlaneF control;       /* packed copy, or the caller's plane when borrowed */
  bool borrowed;          /* gr_localize_set_control_ref: not ours to free */
  Level level[MAX_LEVELS];
  int nlevels;
  /* the engines of dropped levels, for the next levels: a window slide drops every
   * level, and each new one was a new CUDA engine (a stream, pinned and device
   * buffers) and each dropped one a free (cudaFree waits for the whole device).  With
   * them reused, a windowed 4K flight on an H200 spent 418 of its 5,317 ms making
   * levels (docs/benchmarks.md, twelfth session) */
  GrNmiDense *spare[MAX_LEVELS];
  int nspare;
  int built;              /* levels made, and their time (ms), since the start */
  double built_ms;
  int threads;
  GrPlaceFeatures *features;    /* the control's descriptors (doubtful sweeps), made
                                   on first use */
  /* gr_localize_set_control_range: the control's levels from [range_lo, range_hi]
   * instead of each level's percentiles */
  bool has_range;
  double range_lo, range_hi;
};

void
gr_localize_params_init (GrLocalizeParams *p)
{
  memset (p, 0, sizeof *p);
  p->scale_min = 0.25;
  p->scale_max = 4.0;
  p->headings = 36;
  p->coarse_size = 48;
  /* frames without a prior, tests/test_localize_flight.c at 640 x 480 over 0.25-4:
   * seed 1000 (looked at) 3 of 40 placed wrong, 1 with these; seed 2000 3 and 1 */
  p->coarse_peaks = 4;
  p->shortlist = 16;
  p->verify = 1;
  p->feature_places = 2;
  p->fine_size = 128;
  p->levels = 32;
  /* The coarse size's templates (48 px: about 1,700 samples) had 32 x 32 joint bins,
   * under two samples a bin, and NMI's upward bias on sparse histograms decided the
   * sweep: on aukerman.png without a prior (tests/test_localize_flight.c, 640 x 480,
   * 0.25-4, seed 5000) the right place scored below wrong ones on 5 of the 7 frames
   * missed, and the winners bunched at the scales whose quantized templates were the
   * smallest.  Frames without a prior within 0.5 px (docs/benchmarks.md, fifteenth
   * session), 32 / 24 / 16 levels: CPU kernels 97 / 97 / 95 of 110 (aukerman.png 25 /
   * 27 / 27 of 30); through the elements on an H200 481 / 489 / 489 of 514 (priors
   * and edges included).  24 loses none of the cpu suite's replayed frames; 16 lost
   * one (localize_flight_sweep's frame 21). */
  p->coarse_levels = 24;
  p->min_overlap = 0.5;
  p->min_peak_ratio = 1.05;
  /* right against wrong at the fine level: 1.4 to 3.5 on the frames looked at (seed
   * 4000 of test_nmilocalize_pose), wrong against wrong 1.0 to 1.2 */
  p->min_fine_ratio = 1.3;
}

bool
gr_homography_heading_scale (const double h[9], double u, double v, double *heading_deg,
    double *scale)
{
  for (int i = 0; i < 9; i++)
    if (!isfinite (h[i]))
      return false;
  const double w = h[6] * u + h[7] * v + h[8];
  if (!(fabs (w) > 1e-12))
    return false;
  const double x = (h[0] * u + h[1] * v + h[2]) / w, y = (h[3] * u + h[4] * v + h[5]) / w;
  const double j00 = (h[0] - h[6] * x) / w, j01 = (h[1] - h[7] * x) / w;
  const double j10 = (h[3] - h[6] * y) / w, j11 = (h[4] - h[7] * y) / w;
  /* the frame's up (0, -1) lands on (-j01, -j11) */
  double a = atan2 (-j01, j11) * 180.0 / M_PI;
  if (a < 0.0)
    a += 360.0;
  *heading_deg = a >= 360.0 ? 0.0 : a;
  *scale = sqrt (fabs (j00 * j11 - j01 * j10));
  return true;
}

bool
gr_localize_prior_from_homography (GrLocalizePrior *prior, const double h[9], int width,
    int height, double position_sigma, double heading_sigma_deg, double scale_sigma)
{
  double hd, s;
  const double u = 0.5 * width, v = 0.5 * height;
  if (!gr_homography_heading_scale (h, u, v, &hd, &s))
    return false;
  const double w = h[6] * u + h[7] * v + h[8];
  memset (prior, 0, sizeof *prior);
  prior->has_position = true;
  prior->x = (h[0] * u + h[1] * v + h[2]) / w;
  prior->y = (h[3] * u + h[4] * v + h[5]) / w;
  prior->position_sigma = position_sigma;
  prior->has_heading = true;
  prior->heading_deg = hd;
  prior->heading_sigma_deg = heading_sigma_deg;
  prior->has_scale = true;
  prior->scale = s;
  prior->scale_sigma = scale_sigma;
  return true;
}

GrLocalize *
gr_localize_new (GrBackend backend, int cuda_device, GrStatus *status, char *errbuf,
    size_t errlen)
{
  /* probe the backend once: AUTO resolves (and may fall back) as the engine does */
  GrStatus st;
  GrNmiDense *probe = gr_nmi_dense_new (backend, cuda_device, &st, errbuf, errlen);
  if (status)
    *status = st;
  if (!probe)
    return NULL;
  GrLocalize *loc = calloc (1, sizeof *loc);
  if (!loc) {
    gr_nmi_dense_free (probe);
    if (status)
      *status = GR_ERR_NOMEM;
    return NULL;
  }
  loc->actual = gr_nmi_dense_backend (probe);
  /* later engines ask for what the probe got, so AUTO never mixes backends */
  loc->backend = loc->actual;
  loc->device = cuda_device;
  gr_nmi_dense_free (probe);
  return loc;
}

/* Lets go of the control plane (freed when it was our copy). */
static void
forget_control (GrLocalize *loc)
{
  if (loc->borrowed)
    memset (&loc->control, 0, sizeof loc->control);
  else
    gr_plane_clear (&loc->control);
  loc->borrowed = false;
  gr_place_features_reset (loc->features);
}

static void
drop_levels (GrLocalize *loc)
{
  for (int i = 0; i < loc->nlevels; i++) {
    if (loc->level[i].engine && loc->nspare < MAX_LEVELS)
      loc->spare[loc->nspare++] = loc->level[i].engine;
    else
      gr_nmi_dense_free (loc->level[i].engine);
    gr_nmi_sparse_free (loc->level[i].sparse);
    free (loc->level[i].bins);
    free (loc->level[i].mask);
  }
  loc->nlevels = 0;
}

void
gr_localize_free (GrLocalize *loc)
{
  if (!loc)
    return;
  drop_levels (loc);
  for (int i = 0; i < loc->nspare; i++)
    gr_nmi_dense_free (loc->spare[i]);
  forget_control (loc);
  gr_place_features_free (loc->features);
  free (loc);
}

GrBackend
gr_localize_backend (const GrLocalize *loc)
{
  return loc->actual;
}

static bool
plane_ok (const GrPlaneF *p)
{
  return p && p->data && p->width > 0 && p->height > 0 && p->stride >= (size_t) p->width;
}

/* A packed copy (stride = width) of a plane and its mask. */
static bool
plane_copy (const GrPlaneF *src, GrPlaneF *dst)
{
  if (!gr_plane_alloc (dst, src->width, src->height, src->mask != NULL))
    return false;
  for (int y = 0; y < src->height; y++) {
    memcpy (dst->data + (size_t) y * src->width, src->data + y * src->stride,
        sizeof (float) * src->width);
    if (src->mask)
      memcpy (dst->mask + (size_t) y * src->width, src->mask + (size_t) y * src->width,
          src->width);
  }
  return true;
}

GrStatus
gr_localize_set_control (GrLocalize *loc, const GrPlaneF *control, char *errbuf,
    size_t errlen)
{
  if (!loc || !plane_ok (control)) {
    gr_set_err (errbuf, errlen, "control: bad size, stride or pointer");
    return GR_ERR_INVALID;
  }
  drop_levels (loc);
  forget_control (loc);
  if (!plane_copy (control, &loc->control))
    return GR_ERR_NOMEM;
  return GR_OK;
}

GrStatus
gr_localize_set_control_range (GrLocalize *loc, double lo, double hi)
{
  if (!loc || !isfinite (lo) || !isfinite (hi))
    return GR_ERR_INVALID;
  const bool has = lo < hi;
  if (has == loc->has_range && (!has || (lo == loc->range_lo && hi == loc->range_hi)))
    return GR_OK;
  drop_levels (loc);            /* their levels came from the other range */
  loc->has_range = has;
  loc->range_lo = has ? lo : 0.0;
  loc->range_hi = has ? hi : 0.0;
  return GR_OK;
}

GrStatus
gr_localize_set_control_ref (GrLocalize *loc, const GrPlaneF *control, char *errbuf,
    size_t errlen)
{
  if (loc) {
    /* whatever happens, the previous plane is no longer read */
    drop_levels (loc);
    forget_control (loc);
  }
  if (!loc || !plane_ok (control)) {
    gr_set_err (errbuf, errlen, "control: bad size, stride or pointer");
    return GR_ERR_INVALID;
  }
  loc->control = *control;
  loc->borrowed = true;
  return GR_OK;
}

/* Robust bins: the 1st..99th percentile onto `levels` grey levels; range: [range[0],
 * range[1]] instead (NULL: the percentiles). */
static GrStatus
to_levels_in (const GrPlaneF *p, int levels, const double *range, uint8_t *out)
{
  GrStatus st = range ? gr_plane_to_bins (p, GR_BINS_FIXED, range[0], range[1], out) :
      gr_plane_to_bins (p, GR_BINS_PERCENTILE, 1.0, 99.0, out);
  if (st != GR_OK)
    return st;
  const size_t n = (size_t) p->width * p->height;
  for (size_t i = 0; i < n; i++)
    out[i] = (uint8_t) ((out[i] * levels) >> 8);
  return GR_OK;
}

static GrStatus
to_levels (const GrPlaneF *p, int levels, uint8_t *out)
{
  return to_levels_in (p, levels, NULL, out);
}

/* Pads a packed level (bins and mask, NULL = all valid) with an invalid rim. */
static bool
pad_level (Level *L, int pad)
{
  const int pw = L->w + 2 * pad, ph = L->h + 2 * pad;
  uint8_t *b = calloc ((size_t) pw * ph, 1), *m = calloc ((size_t) pw * ph, 1);
  if (!b || !m) {
    free (b);
    free (m);
    return false;
  }
  for (int y = 0; y < L->h; y++) {
    const size_t o = (size_t) (y + pad) * pw + pad;
    memcpy (b + o, L->bins + (size_t) y * L->w, L->w);
    if (L->mask)
      memcpy (m + o, L->mask + (size_t) y * L->w, L->w);
    else
      memset (m + o, 1, L->w);
  }
  free (L->bins);
  free (L->mask);
  L->bins = b;
  L->mask = m;
  L->w = pw;
  L->h = ph;
  L->pad = pad;
  return true;
}

/* The level of search scale 2^(q/4) with a rim of pad px, NULL when not built. */
static Level *
find_level (GrLocalize *loc, int q, int grey_levels, int pad)
{
  for (int i = 0; i < loc->nlevels; i++)
    if (loc->level[i].q == q && loc->level[i].grey_levels == grey_levels &&
        loc->level[i].pad == pad)
      return &loc->level[i];
  return NULL;
}

/* The level of search scale 2^(q/4) with a rim of pad px, built on first use. */
static Level *
get_level (GrLocalize *loc, int q, int grey_levels, int pad, GrStatus *st, char *errbuf,
    size_t errlen)
{
  Level *have = find_level (loc, q, grey_levels, pad);
  if (have)
    return have;
  if (loc->nlevels == MAX_LEVELS)
    drop_levels (loc);
  const gint64 t0 = g_get_monotonic_time ();
  Level *L = &loc->level[loc->nlevels];
  memset (L, 0, sizeof *L);
  GrPlaneF small;
  memset (&small, 0, sizeof small);
  *st = gr_plane_downscale (&loc->control, pow (2.0, q / 4.0), &small);
  if (*st != GR_OK)
    return NULL;
  L->q = q;
  L->grey_levels = grey_levels;
  L->w = small.width;
  L->h = small.height;
  L->sx = (double) small.width / loc->control.width;
  L->sy = (double) small.height / loc->control.height;
  L->bins = malloc ((size_t) L->w * L->h);
  if (!L->bins) {
    gr_plane_clear (&small);
    *st = GR_ERR_NOMEM;
    return NULL;
  }
  const double range[2] = { loc->range_lo, loc->range_hi };
  *st = to_levels_in (&small, grey_levels, loc->has_range ? range : NULL, L->bins);
  if (*st == GR_OK && small.mask) {
    L->mask = small.mask;      /* packed: stride = width */
    small.mask = NULL;
  }
  gr_plane_clear (&small);
  if (*st == GR_OK && pad > 0 && !pad_level (L, pad))
    *st = GR_ERR_NOMEM;
  if (*st == GR_OK) {
    /* a dropped level's engine when there is one: set_control replaces its control
     * whole, and nothing else it holds depends on the control */
    L->engine = loc->nspare > 0 ? loc->spare[--loc->nspare] :
        gr_nmi_dense_new (loc->backend, loc->device, st, errbuf, errlen);
    if (L->engine) {
      gr_nmi_dense_set_threads (L->engine, loc->threads);
      GrImage8 im = { L->bins, (size_t) L->w, L->mask, (size_t) L->w, L->w, L->h };
      *st = gr_nmi_dense_set_control (L->engine, &im, errbuf, errlen);
    }
  }
  if (*st != GR_OK) {
    gr_nmi_dense_free (L->engine);
    free (L->bins);
    free (L->mask);
    return NULL;
  }
  loc->nlevels++;
  loc->built++;
  loc->built_ms += (g_get_monotonic_time () - t0) / 1000.0;
  return L;
}

/* The frame downscaled for one search scale, kept while its scale is in use. */
typedef struct {
  double fs;              /* requested frame px -> search px */
  GrPlaneF small;
  guint64 used;           /* when last asked for (Ctx.uses) */
  int pins;               /* searches whose templates are still to be made from it:
                             never dropped while pinned */
} SmallFrame;

/* Downscales a run keeps: more than the distinct scales of a sweep's shortlist (the
 * grid's scales, each +- a third of a step) or its fine stage, and at most
 * SMALL_FRAME_PIXELS pixels in all (four 4K frames' worth). */
#define SMALL_FRAMES 16
#define SMALL_FRAME_PIXELS ((size_t) 4 * 3840 * 2160)

/* One scored hypothesis. */
typedef struct {
  double heading, scale;
  double score;           /* NAN when nothing was scored */
  double h[9];            /* frame corner -> control corner at the peak */
  double cx, cy;          /* control position of the frame centre */
  double second;          /* the map's separated second peak */
  double overlap;
  unsigned peak_flags;
} Hypo;

/* Bilinear value of a packed plane at pixel-index (x, y); false (value 0) outside or
 * when a neighbour is masked. */
static bool
sample_bilinear (const GrPlaneF *p, double x, double y, float *value)
{
  const int w = p->width, h = p->height;
  *value = 0.0f;
  if (!(x >= -1e-9 && y >= -1e-9 && x <= w - 1 + 1e-9 && y <= h - 1 + 1e-9))
    return false;
  /* the tolerance admits -1e-9: clamp into the plane on both sides */
  int x0 = (int) floor (x), y0 = (int) floor (y);
  x0 = x0 > w - 2 ? (w > 1 ? w - 2 : 0) : (x0 < 0 ? 0 : x0);
  y0 = y0 > h - 2 ? (h > 1 ? h - 2 : 0) : (y0 < 0 ? 0 : y0);
  const int x1 = x0 + (w > 1), y1 = y0 + (h > 1);
  if (p->mask && !(p->mask[(size_t) y0 * w + x0] && p->mask[(size_t) y0 * w + x1]
          && p->mask[(size_t) y1 * w + x0] && p->mask[(size_t) y1 * w + x1]))
    return false;
  const double fx = x - x0, fy = y - y0;
  const float *r0 = p->data + (size_t) y0 * p->stride, *r1 = p->data + (size_t) y1 * p->stride;
  *value = (float) ((1 - fy) * ((1 - fx) * r0[x0] + fx * r0[x1])
      + fy * ((1 - fx) * r1[x0] + fx * r1[x1]));
  return true;
}

/* Rotates the small frame by `heading` (clockwise) into its bounding box: bilinear,
 * a pixel valid only when its four neighbours are.  rot: small-frame index ->
 * template index. */
static bool
rotate_frame (const GrPlaneF *sf, double heading, GrPlaneF *tpl, double rot[9])
{
  const double a = heading * M_PI / 180.0, c = cos (a), s = sin (a);
  const int sw = sf->width, sh = sf->height;
  const int tw = (int) ceil (fabs (c) * sw + fabs (s) * sh - 1e-9);
  const int th = (int) ceil (fabs (s) * sw + fabs (c) * sh - 1e-9);
  if (!gr_plane_alloc (tpl, tw, th, true))
    return false;
  const double scx = 0.5 * (sw - 1), scy = 0.5 * (sh - 1);
  const double tcx = 0.5 * (tw - 1), tcy = 0.5 * (th - 1);
  const double m[9] = { c, -s, tcx - (c * scx - s * scy), s, c, tcy - (s * scx + c * scy),
    0, 0, 1
  };
  memcpy (rot, m, sizeof m);
  /* each pixel on its own (the same values on any number of threads): the fine
   * templates (~140 x 120 at 4K) are rotated 16 times a frame */
#pragma omp parallel for schedule(static) if (th >= 64 && !omp_in_parallel ())
  for (int j = 0; j < th; j++)
    for (int i = 0; i < tw; i++) {
      /* inverse rotation: template index -> small-frame index */
      const double di = i - tcx, dj = j - tcy;
      const size_t o = (size_t) j * tw + i;
      tpl->mask[o] = sample_bilinear (sf, scx + c * di + s * dj, scy - s * di + c * dj,
          &tpl->data[o]);
    }
  return true;
}

typedef struct {
  GrLocalize *loc;
  const GrPlaneF *frame;  /* its size always; its pixels only without `downscale` */
  GrLocalizeDownscaleFunc downscale;    /* the frame's downscales from elsewhere */
  void *user;
  const GrLocalizeParams *p;
  SmallFrame sf[SMALL_FRAMES];  /* the run's downscales, least recently used dropped */
  guint64 uses;
  int searches, downscales;
  double downscale_ms;    /* in the frame's downscales (small_frame) */
  double search_ms;       /* in the dense NMI engine's runs */
  double prepare_ms;      /* making templates (batch_add, downscales and levels apart) */
  double read_ms;         /* reading score maps (search_read) */
  char *errbuf;
  size_t errlen;
} Ctx;

/* The least recently used cached downscale, or a free slot; with more than
 * SMALL_FRAME_PIXELS frame pixels cached, the least recently used of the others are
 * dropped first (a refine level's downscale can be most of a 4K frame). */
static int
small_frame_slot (Ctx *cx)
{
  size_t total = 0;
  for (int i = 0; i < SMALL_FRAMES; i++)
    total += (size_t) cx->sf[i].small.width * cx->sf[i].small.height;
  for (;;) {
    int lru = -1, free_slot = -1;
    for (int i = 0; i < SMALL_FRAMES; i++) {
      if (!cx->sf[i].small.data)
        free_slot = free_slot < 0 ? i : free_slot;
      else if (cx->sf[i].pins == 0 && (lru < 0 || cx->sf[i].used < cx->sf[lru].used))
        lru = i;
    }
    /* pinned downscales are a search's (its template's size): never dropped, they
     * may hold the total above the bound until their templates are made */
    if (lru < 0 || (total <= SMALL_FRAME_PIXELS && free_slot >= 0))
      return free_slot;
    if (total <= SMALL_FRAME_PIXELS)
      return lru;
    total -= (size_t) cx->sf[lru].small.width * cx->sf[lru].small.height;
    gr_plane_clear (&cx->sf[lru].small);
  }
}

static void
small_frames_clear (Ctx *cx)
{
  for (int i = 0; i < SMALL_FRAMES; i++)
    gr_plane_clear (&cx->sf[i].small);
}

/* Whether small_frame (fs) can succeed without dropping a pinned downscale. */
static bool
small_frame_room (const Ctx *cx, double fs)
{
  for (int i = 0; i < SMALL_FRAMES; i++)
    if (!cx->sf[i].small.data || cx->sf[i].pins == 0 || cx->sf[i].fs == fs)
      return true;
  return false;
}

/* small_frame's cache entry (the caller may pin it). */
static SmallFrame *small_frame_entry (Ctx *cx, double fs, GrStatus *st);

static const GrPlaneF *
small_frame (Ctx *cx, double fs, GrStatus *st)
{
  SmallFrame *e = small_frame_entry (cx, fs, st);
  return e ? &e->small : NULL;
}

/* The frame downscaled by fs, from the cache when it was made before in this run.  The
 * sweep asks for few distinct scales many times over (the shortlist's 16 places
 * share the grid's scales, the fine stage revisits its candidates'), and each miss
 * reads the whole frame: at 4K those reads were a third of the sweep's time. */
static SmallFrame *
small_frame_entry (Ctx *cx, double fs, GrStatus *st)
{
  for (int i = 0; i < SMALL_FRAMES; i++)
    if (cx->sf[i].small.data && cx->sf[i].fs == fs) {
      cx->sf[i].used = ++cx->uses;
      return &cx->sf[i];
    }
  const int slot = small_frame_slot (cx);
  if (slot < 0) {
    /* batch_add makes its pending templates first (small_frame_room) */
    gr_set_err (cx->errbuf, cx->errlen, "every cached downscale is pinned (internal error)");
    *st = GR_ERR_INVALID;
    return NULL;
  }
  SmallFrame *e = &cx->sf[slot];
  gr_plane_clear (&e->small);
  e->fs = fs;
  e->used = ++cx->uses;
  const gint64 t0 = g_get_monotonic_time ();
  cx->downscales++;
  if (cx->downscale) {
    *st = cx->downscale (cx->user, fs, &e->small, cx->errbuf, cx->errlen);
    if (*st == GR_OK && (!e->small.data || e->small.width !=
            (int) fmax (1.0, floor (cx->frame->width * fs + 0.5)) ||
            e->small.height != (int) fmax (1.0, floor (cx->frame->height * fs + 0.5)))) {
      /* not gr_plane_downscale's size: the source is broken */
      gr_set_err (cx->errbuf, cx->errlen, "the frame's downscale has the wrong size");
      *st = GR_ERR_INVALID;
    }
  } else {
    *st = gr_plane_downscale (cx->frame, fs, &e->small);
  }
  cx->downscale_ms += (g_get_monotonic_time () - t0) / 1000.0;
  if (*st != GR_OK) {
    gr_plane_clear (&e->small);
    return NULL;
  }
  return e;
}

/* Local maxima (3 x 3) of a w x h score map kept while it is scanned: the best few
 * by score, so that the places of a map's next peaks cost one comparison a pixel. */
#define PEAK_POOL 24

/* The best npeaks - 1 places of the map after (bx, by): 3 x 3 local maxima, each
 * farther than excl (Chebyshev) from (bx, by) and from every place taken before it,
 * best first, into x[], y[], s[]; returns how many. */
static int
next_peaks (const double *map, int w, int h, int bx, int by, int excl, int npeaks,
    int *x, int *y, double *s)
{
  int px[PEAK_POOL], py[PEAK_POOL];
  double ps[PEAK_POOL];
  int np = 0;
  for (int j = 1; j < h - 1; j++)
    for (int i = 1; i < w - 1; i++) {
      const double v = map[(size_t) j * w + i];
      if (!isfinite (v) || (np == PEAK_POOL && !(v > ps[np - 1])))
        continue;
      if (abs (i - bx) <= excl && abs (j - by) <= excl)
        continue;
      bool local = true;
      for (int dj = -1; dj <= 1 && local; dj++)
        for (int di = -1; di <= 1 && local; di++)
          local = !(map[(size_t) (j + dj) * w + i + di] > v);
      if (!local)
        continue;
      /* sorted insertion, dropping the worst when full */
      int k = np < PEAK_POOL ? np++ : PEAK_POOL - 1;
      while (k > 0 && ps[k - 1] < v) {
        px[k] = px[k - 1];
        py[k] = py[k - 1];
        ps[k] = ps[k - 1];
        k--;
      }
      px[k] = i;
      py[k] = j;
      ps[k] = v;
    }
  int n = 0;
  for (int k = 0; k < np && n < npeaks - 1; k++) {
    bool apart = true;
    for (int c = 0; c < n && apart; c++)
      apart = abs (px[k] - x[c]) > excl || abs (py[k] - y[c]) > excl;
    if (!apart)
      continue;
    x[n] = px[k];
    y[n] = py[k];
    s[n++] = ps[k];
  }
  return n;
}

/* One search of a (heading, scale) hypothesis, prepared (the frame turned and
 * quantized, its region on a level) so that many can run in one batch
 * (gr_nmi_dense_run_batch), then read (search_read).  It keeps what reading needs
 * of its level, not the level: a later level may drop it (MAX_LEVELS). */
typedef struct {
  double heading, scale;
  GrNmiDense *engine;     /* the level's; valid until the batch has run */
  double sx, sy;          /* the level's search px per control px, and its rim */
  int pad;
  int lw, lh;             /* the level's size, rim included */
  int grey;               /* the template's grey levels */
  bool has_centre;        /* the region: within radius control px of centre, else the
                             whole level */
  double centre[2], radius;
  SmallFrame *from;       /* pinned until the template is made from it (NULL after) */
  int sw, sh;             /* the small frame's size */
  double rot[9];          /* template index -> small-frame index */
  GrPlaneF tpl;           /* the turned frame (its mask is the template's) */
  uint8_t *tb;            /* its grey levels */
  size_t tvalid;
  int min_valid;
  GrRegion r;
  double *scores;
  int32_t *valid;
  bool run;               /* something to search (else the score stays NAN) */
  bool done;              /* searched */
} Search;

static void
search_clear (Search *se)
{
  if (se->from)
    se->from->pins--;
  gr_plane_clear (&se->tpl);
  free (se->tb);
  free (se->scores);
  free (se->valid);
  memset (se, 0, sizeof *se);
}

/* A batch of prepared searches, run together per level engine. */
typedef struct {
  Search *se;
  int n, cap;
} SearchBatch;

static void
batch_clear (SearchBatch *b)
{
  for (int k = 0; k < b->n; k++)
    search_clear (&b->se[k]);
  free (b->se);
  memset (b, 0, sizeof *b);
}

/* The score maps a batch holds: the sweep's full-control maps are run in batches of
 * at most BATCH_BYTES (a 36-heading scale of a large control is hundreds of MB). */
#define BATCH_BYTES ((size_t) 32 << 20)

static size_t
batch_bytes (const SearchBatch *b)
{
  size_t t = 0;
  for (int k = 0; k < b->n; k++)
    t += (size_t) (b->se[k].r.x1 - b->se[k].r.x0) * (b->se[k].r.y1 - b->se[k].r.y0) *
        (sizeof (double) + sizeof (int32_t));
  return t;
}

/* Search se's template: its small frame turned to its heading, in its grey levels,
 * and its region on its level (the whole level, or within radius control px of
 * centre).  Reads only se and its (pinned) small frame: the templates of a batch are
 * made on all threads at once (batch_prepare). */
static GrStatus
make_template (Search *se)
{
  const GrPlaneF *sf = &se->from->small;
  if (!rotate_frame (sf, se->heading, &se->tpl, se->rot))
    return GR_ERR_NOMEM;
  const GrPlaneF *tpl = &se->tpl;
  se->tb = malloc ((size_t) tpl->width * tpl->height);
  if (!se->tb)
    return GR_ERR_NOMEM;
  se->tvalid = gr_plane_count_valid (tpl);
  GrRegion r = { 0, 0, se->lw - tpl->width + 1, se->lh - tpl->height + 1 };
  if (se->has_centre) {
    /* the template centre over the prior centre, +- radius */
    const double px = se->centre[0] * se->sx - 0.5 + se->pad - 0.5 * (tpl->width - 1);
    const double py = se->centre[1] * se->sy - 0.5 + se->pad - 0.5 * (tpl->height - 1);
    const double rx = se->radius * se->sx + 1.0, ry = se->radius * se->sy + 1.0;
    r.x0 = (int) floor (px - rx) > 0 ? (int) floor (px - rx) : 0;
    r.y0 = (int) floor (py - ry) > 0 ? (int) floor (py - ry) : 0;
    const int x1 = (int) ceil (px + rx) + 1, y1 = (int) ceil (py + ry) + 1;
    r.x1 = x1 < r.x1 ? x1 : r.x1;
    r.y1 = y1 < r.y1 ? y1 : r.y1;
  }
  se->r = r;
  const int rw = r.x1 - r.x0, rh = r.y1 - r.y0;
  if (se->tvalid > 0 && rw > 0 && rh > 0 && to_levels (tpl, se->grey, se->tb) == GR_OK) {
    se->scores = malloc (sizeof (double) * (size_t) rw * rh);
    se->valid = malloc (sizeof (int32_t) * (size_t) rw * rh);
    if (!se->scores || !se->valid)
      return GR_ERR_NOMEM;
    /* a quarter of the frame on valid control at least; the weighting does the rest */
    const int min_valid = (int) ceil (0.25 * se->tvalid);
    se->min_valid = min_valid > 0 ? min_valid : 1;
    se->run = true;
  }
  return GR_OK;
}

/* Makes the templates of the batch's searches that have none yet, on all threads
 * (each from its own pinned downscale into its own buffers: the same bytes on any
 * number of threads), and unpins their downscales.  At 4K a sweep's ~250 templates
 * took 20-28 ms on one thread (H200 host, eighteenth session). */
static GrStatus
batch_prepare (Ctx *cx, SearchBatch *b)
{
  const gint64 t0 = g_get_monotonic_time ();
  GrStatus st = GR_OK;
  int pending = 0;
  for (int k = 0; k < b->n; k++)
    pending += b->se[k].from != NULL;
#pragma omp parallel for schedule(dynamic) if (pending > 1)
  for (int k = 0; k < b->n; k++) {
    Search *se = &b->se[k];
    if (!se->from)
      continue;
    const GrStatus r = make_template (se);
    if (r != GR_OK) {
#pragma omp critical (localize_prepare)
      st = r;
    }
  }
  for (int k = 0; k < b->n; k++)
    if (b->se[k].from) {
      b->se[k].from->pins--;
      b->se[k].from = NULL;
    }
  cx->prepare_ms += (g_get_monotonic_time () - t0) / 1000.0;
  return st;
}

/* Runs the batch's searches not run yet: one gr_nmi_dense_run_batch per engine. */
static GrStatus
batch_run (Ctx *cx, SearchBatch *b)
{
  GrStatus pst = batch_prepare (cx, b);
  if (pst != GR_OK)
    return pst;
  const size_t cap = (size_t) (b->n > 0 ? b->n : 1);
  GrNmiDenseJob *jobs = malloc (sizeof (GrNmiDenseJob) * cap);
  GrImage8 *ti = malloc (sizeof (GrImage8) * cap);
  int *idx = malloc (sizeof (int) * cap);
  if (!jobs || !ti || !idx) {
    free (jobs);
    free (ti);
    free (idx);
    return GR_ERR_NOMEM;
  }
  GrStatus st = GR_OK;
  for (int k = 0; k < b->n && st == GR_OK; k++) {
    if (b->se[k].done || !b->se[k].run)
      continue;
    GrNmiDense *engine = b->se[k].engine;
    int nj = 0;
    for (int m = k; m < b->n; m++) {
      Search *se = &b->se[m];
      if (se->done || !se->run || se->engine != engine)
        continue;
      ti[nj] = (GrImage8) { se->tb, (size_t) se->tpl.width, se->tpl.mask,
        (size_t) se->tpl.width, se->tpl.width, se->tpl.height };
      jobs[nj] = (GrNmiDenseJob) { &ti[nj], se->r, se->min_valid, se->scores, se->valid };
      idx[nj++] = m;
    }
    const gint64 t0 = g_get_monotonic_time ();
    st = gr_nmi_dense_run_batch (engine, jobs, nj, cx->errbuf, cx->errlen);
    cx->search_ms += (g_get_monotonic_time () - t0) / 1000.0;
    cx->searches += nj;
    for (int m = 0; m < nj; m++)
      b->se[idx[m]].done = true;
  }
  free (jobs);
  free (ti);
  free (idx);
  return st;
}


/* Prepares the search of one (heading, scale) with a template of about `size` px on
 * its long side, over the control or within radius control px of centre, as the
 * batch's next search (its results then by search_read).  A level that would drop
 * those the batch's pending searches use (MAX_LEVELS) runs them first. */
static GrStatus
batch_add (Ctx *cx, SearchBatch *b, double heading, double scale, int size,
    const double *centre, double radius)
{
  GrLocalize *loc = cx->loc;
  const GrPlaneF *fr = cx->frame;
  if (b->n == b->cap) {
    const int cap = b->cap ? 2 * b->cap : 16;
    Search *se = realloc (b->se, sizeof (Search) * (size_t) cap);
    if (!se)
      return GR_ERR_NOMEM;
    b->se = se;
    b->cap = cap;
  }
  Search *se = &b->se[b->n++];
  memset (se, 0, sizeof *se);
  se->heading = heading;
  se->scale = scale;
  const double fs0 = (double) size / (fr->width > fr->height ? fr->width : fr->height);
  /* search px per control px, on a quarter-octave grid, never above 1 */
  int q = (int) lround (4.0 * log2 (fs0 / scale));
  q = q > 0 ? 0 : q;
  q = q < -60 ? -60 : q;
  double fs = scale * pow (2.0, q / 4.0);
  fs = fs > 1.0 ? 1.0 : fs;
  GrStatus st = GR_OK;
  /* grey levels by the template's sample count: coarse-size templates get fewer */
  const int grey = size <= cx->p->coarse_size ? cx->p->coarse_levels : cx->p->levels;
  /* a rim of half a template: a frame may hang up to about half over the edge */
  const int pad = (size + 1) / 2;
  if (!find_level (loc, q, grey, pad) && loc->nlevels == MAX_LEVELS &&
      (st = batch_run (cx, b)) != GR_OK)
    return st;
  Level *L = get_level (loc, q, grey, pad, &st, cx->errbuf, cx->errlen);
  if (!L)
    return st;
  se->engine = L->engine;
  se->sx = L->sx;
  se->sy = L->sy;
  se->pad = L->pad;
  se->lw = L->w;
  se->lh = L->h;
  se->grey = grey;
  se->has_centre = centre != NULL;
  if (centre) {
    se->centre[0] = centre[0];
    se->centre[1] = centre[1];
  }
  se->radius = radius;
  /* every cached downscale pinned by this batch: its templates are made now, which
   * frees them for others */
  if (!small_frame_room (cx, fs) && (st = batch_prepare (cx, b)) != GR_OK)
    return st;
  SmallFrame *sf = small_frame_entry (cx, fs, &st);
  if (!sf)
    return st;
  se->sw = sf->small.width;
  se->sh = sf->small.height;
  se->from = sf;
  sf->pins++;
  return GR_OK;
}

/* The hypothesis at map position (px, py) of search se of frame fr. */
static void
search_place (const Search *se, const GrPlaneF *fr, double px, double py, Hypo *hy)
{
  /* frame corner -> small index -> template index -> level index -> control corner */
  const double m1[9] = { (double) se->sw / fr->width, 0, -0.5,
    0, (double) se->sh / fr->height, -0.5, 0, 0, 1
  };
  const double m3[9] = { 1, 0, se->r.x0 + px, 0, 1, se->r.y0 + py, 0, 0, 1 };
  const double m4[9] = { 1.0 / se->sx, 0, (0.5 - se->pad) / se->sx,
    0, 1.0 / se->sy, (0.5 - se->pad) / se->sy, 0, 0, 1
  };
  double t[9];
  gr_mat3_mul (se->rot, m1, t);
  gr_mat3_mul (m3, t, t);
  gr_mat3_mul (m4, t, hy->h);
  gr_fit_apply (hy->h, 0.5 * fr->width, 0.5 * fr->height, &hy->cx, &hy->cy);
}

/* Reads a searched map: hy[0] gets its best place and, with npeaks > 1, hy[1 ..] its
 * next best distinct places (NAN scores where the map has no more).  Without a prior
 * the right hypothesis is often not its cell's best place: its NMI peak is narrow in
 * heading and scale (a few degrees and percent at the coarse level), so a cell off it
 * by half a step scores the right place no higher than the noise of wrong ones, and
 * only its map's second or third peak sits there. */
static void
search_read_map (const Ctx *cx, const Search *se, Hypo *hy, int npeaks)
{
  const GrPlaneF *fr = cx->frame;
  for (int k = 0; k < npeaks; k++) {
    memset (&hy[k], 0, sizeof hy[k]);
    hy[k].heading = se->heading;
    hy[k].scale = se->scale;
    hy[k].score = NAN;
  }
  if (!se->run || !se->done)
    return;
  const int rw = se->r.x1 - se->r.x0, rh = se->r.y1 - se->r.y0;
  const int tw = se->tpl.width, th = se->tpl.height;
  GrPeak pk;
  const int excl = (tw < th ? tw : th) / 4;
  gr_find_peak (se->scores, rw, rh, excl > 2 ? excl : 2, 1.0, &pk);
  if (pk.flags & GR_PEAK_NO_SCORE)
    return;
  hy->score = pk.score;
  hy->second = pk.second;
  hy->peak_flags = pk.flags;
  hy->overlap = (double) se->valid[(size_t) pk.iy * rw + pk.ix] / se->tvalid;
  search_place (se, fr, pk.x, pk.y, hy);
  if (npeaks > 1) {
    int nx[GR_LOCALIZE_MAX_PEAKS], ny[GR_LOCALIZE_MAX_PEAKS];
    double ns[GR_LOCALIZE_MAX_PEAKS];
    const int n = next_peaks (se->scores, rw, rh, pk.ix, pk.iy, excl > 2 ? excl : 2,
        npeaks, nx, ny, ns);
    for (int k = 0; k < n; k++) {
      Hypo *e = &hy[1 + k];
      e->score = ns[k];
      e->second = pk.second;
      e->overlap = (double) se->valid[(size_t) ny[k] * rw + nx[k]] / se->tvalid;
      search_place (se, fr, nx[k], ny[k], e);
    }
  }
}

/* search_read_map, its time counted in read_ms (callers on one thread). */
static void
search_read (Ctx *cx, const Search *se, Hypo *hy, int npeaks)
{
  const gint64 t0 = g_get_monotonic_time ();
  search_read_map (cx, se, hy, npeaks);
  cx->read_ms += (g_get_monotonic_time () - t0) / 1000.0;
}

/* One hypothesis searched on its own (a batch of one): hy[0 .. npeaks-1] as
 * search_read gives them. */
static GrStatus
score_hypothesis_peaks (Ctx *cx, double heading, double scale, int size,
    const double *centre, double radius, Hypo *hy, int npeaks)
{
  SearchBatch b = { 0 };
  GrStatus st = batch_add (cx, &b, heading, scale, size, centre, radius);
  if (st == GR_OK)
    st = batch_run (cx, &b);
  if (b.n > 0)
    search_read (cx, &b.se[0], hy, npeaks);
  else
    for (int k = 0; k < npeaks; k++)
      hy[k] = (Hypo) { .heading = heading, .scale = scale, .score = NAN };
  batch_clear (&b);
  return st;
}

static GrStatus
score_hypothesis (Ctx *cx, double heading, double scale, int size, const double *centre,
    double radius, Hypo *hy)
{
  return score_hypothesis_peaks (cx, heading, scale, size, centre, radius, hy, 1);
}

static double
wrap360 (double a)
{
  a = fmod (a, 360.0);
  return a < 0 ? a + 360.0 : a;
}

static double
heading_diff (double a, double b)
{
  const double d = fabs (wrap360 (a - b));
  return d > 180.0 ? 360.0 - d : d;
}

/* Vertex offset of the parabola through (-1, a), (0, b), (1, c), in [-0.5, 0.5]. */
static double
parabola (double a, double b, double c)
{
  if (!isfinite (a) || !isfinite (c))
    return 0.0;
  const double den = a - 2.0 * b + c;
  if (!(den < 0.0))
    return 0.0;
  double o = 0.5 * (a - c) / den;
  return o > 0.5 ? 0.5 : (o < -0.5 ? -0.5 : o);
}

static bool
better (const Hypo *a, const Hypo *b)
{
  return isfinite (a->score) && (!isfinite (b->score) || a->score > b->score);
}

/* The arguments every run needs: an engine with a control, a frame, outputs. */
static bool
engine_ready (const GrLocalize *loc, const GrPlaneF *frame, bool outputs, char *errbuf,
    size_t errlen)
{
  if (!loc || !plane_ok (frame) || !outputs) {
    gr_set_err (errbuf, errlen, "bad frame (size, stride or pointer) or output");
    return false;
  }
  if (!loc->control.data) {
    gr_set_err (errbuf, errlen, "no control image set");
    return false;
  }
  return true;
}

/* Coarse hypotheses refined at the fine level: at most this many per run, and the
 * places proposed by descriptors (feature_places) that may join them. */
#define MAX_CANDIDATES 4
#define MAX_FEATURE_PLACES 4
#define CAND_SLOTS (MAX_CANDIDATES + MAX_FEATURE_PLACES)
/* a proposed similarity needs this many inliers: on the frames that motivated it the
 * right scale gave 6-10, every other scale 0-3 (one near the right scale 5) */
#define FEATURE_MIN_INLIERS 5

typedef struct {
  Hypo h;                 /* coarse */
  int index;              /* in the coarse array */
  Hypo fine;              /* its fine-level result (NAN score: none) */
  double decide;          /* the score candidates are compared by (equal templates) */
  int support;            /* its registration's support (verify_candidates); -1 until
                             registered, so a second comparison registers only the
                             candidates that joined since */
} Cand;

/* The best `want` coarse hypotheses whose places lie a quarter footprint apart from
 * every better one kept (bi, the best, first). */
static void
pick_candidates (const Hypo *coarse, int n, int bi, int want, double long_side,
    Cand *cand, int *nc)
{
  *nc = 0;
  cand[*nc].index = bi;
  cand[*nc].support = -1;
  cand[(*nc)++].h = coarse[bi];
  while (*nc < want) {
    int pick = -1;
    for (int i = 0; i < n; i++) {
      if (!isfinite (coarse[i].score) || (pick >= 0 && coarse[i].score <= coarse[pick].score))
        continue;
      bool apart = true;
      for (int c = 0; c < *nc && apart; c++) {
        const double foot = fmax (coarse[i].scale, cand[c].h.scale);
        apart = hypot (coarse[i].cx - cand[c].h.cx, coarse[i].cy - cand[c].h.cy) >
            0.25 * foot * long_side;
      }
      if (apart)
        pick = i;
    }
    if (pick < 0)
      break;
    cand[*nc].index = pick;
    cand[*nc].support = -1;
    cand[(*nc)++].h = coarse[pick];
  }
}

/* The strongest competitor of candidate `chosen` (whose refined place is ref) at the
 * coarse level: its map's own second peak, or any hypothesis whose place lies a
 * quarter footprint or more away from both; refined candidates whose fine result came
 * to the same place agree with it and are no competitors. */
static double
coarse_second (const Hypo *coarse, int n, const Cand *cand, int refined, int chosen,
    const Hypo *ref, double long_side)
{
  const Hypo *b = &cand[chosen].h;
  const double foot = (isfinite (ref->score) ? ref->scale : b->scale) * long_side;
  const double rx = isfinite (ref->score) ? ref->cx : b->cx;
  const double ry = isfinite (ref->score) ? ref->cy : b->cy;
  double second = b->second;
  for (int i = 0; i < n; i++) {
    bool agrees = i == cand[chosen].index;
    for (int c = 0; c < refined && !agrees; c++)
      agrees = cand[c].index == i && isfinite (cand[c].fine.score) &&
          hypot (cand[c].fine.cx - rx, cand[c].fine.cy - ry) <= 0.25 * foot;
    if (!agrees && isfinite (coarse[i].score) &&
        hypot (coarse[i].cx - b->cx, coarse[i].cy - b->cy) > 0.25 * foot &&
        hypot (coarse[i].cx - rx, coarse[i].cy - ry) > 0.25 * foot &&
        !(coarse[i].score <= second))
      second = coarse[i].score;
  }
  return second;
}

/* Refined candidates compared alike.  Small samples inflate NMI: a frame finer than
 * the control (scale below fine_size / long side) gets a fine template smaller than
 * fine_size (never finer than the control), and a wrong place at a small scale then
 * outscores the right one at a larger scale (the sixth session's miss at scale 0.23
 * for 0.85).  So every candidate's refined pose is scored again with the template
 * size the smallest of them could have, in a small window around its place, and those
 * scores decide (*win; -1 when none could be scored). */
static GrStatus
equalize_candidates (Ctx *cx, Cand *cand, int n, double long_side, int *win)
{
  double size = cx->p->fine_size;
  for (int c = 0; c < n; c++) {
    cand[c].decide = cand[c].fine.score;
    if (isfinite (cand[c].fine.score) && cand[c].fine.scale * long_side < size)
      size = cand[c].fine.scale * long_side;
  }
  GrStatus st = GR_OK;
  const int isize = (int) floor (size);
  if (isize < cx->p->fine_size) {
    SearchBatch batch = { 0 };
    int at[CAND_SLOTS];
    for (int c = 0; c < n && st == GR_OK; c++) {
      at[c] = -1;
      if (!isfinite (cand[c].fine.score))
        continue;
      const double centre[2] = { cand[c].fine.cx, cand[c].fine.cy };
      at[c] = batch.n;
      st = batch_add (cx, &batch, cand[c].fine.heading, cand[c].fine.scale,
          isize > cx->p->coarse_size ? isize : cx->p->coarse_size, centre,
          2.0 * cand[c].fine.scale * long_side / cx->p->fine_size + 1.0);
    }
    if (st == GR_OK)
      st = batch_run (cx, &batch);
    for (int c = 0; c < n && st == GR_OK; c++) {
      if (at[c] < 0)
        continue;
      Hypo r;
      search_read (cx, &batch.se[at[c]], &r, 1);
      cand[c].decide = r.score;
    }
    batch_clear (&batch);
  }
  *win = -1;
  for (int c = 0; c < n; c++)
    if (isfinite (cand[c].decide) && (*win < 0 || cand[c].decide > cand[*win].decide))
      *win = c;
  return st;
}

/* The sweep's best `want` places a quarter footprint apart, each scored again at the
 * coarse size on a grid a third of the coarse steps around its cell (headings +-
 * hstep / 3, scales sratio^(+-1/3); the nearest grid point is then at most a sixth of
 * a step off the truth instead of half), in a window of a few coarse pixels around
 * its place; the best of each replaces its hypothesis (keeping its map's second
 * peak, which the ratio tests compare with) and *bi becomes the best overall.  The
 * coarse grid (10 degrees, 2^(1/3)) is too coarse for the narrow NMI peak at 48 px:
 * on frames without a prior the right hypothesis, half a step off, ranked 6th to
 * 20th among places (tests/test_localize_flight.c, 640 x 480, 0.25-4) and lost to a
 * wrong one the fine level could not tell apart.  The windows are small, so the
 * 8 x want searches cost far less than the sweep's full-control ones. */
static GrStatus
shortlist_coarse (Ctx *cx, Hypo *coarse, int n, int *bi, int want, double hstep,
    double sratio, const double range[4])
{
  const GrLocalizeParams *pp = cx->p;
  const double long_side = cx->frame->width > cx->frame->height ? cx->frame->width :
      cx->frame->height;
  Cand *list = malloc (sizeof (Cand) * (size_t) want);
  if (!list)
    return GR_ERR_NOMEM;
  int nl = 0;
  pick_candidates (coarse, n, *bi, want, long_side, list, &nl);
  const double dh = hstep / 3.0, ds = pow (sratio, 1.0 / 3.0);
  GrStatus st = GR_OK;
  /* every place's eight neighbours in one batch, then each place's best */
  SearchBatch batch = { 0 };
  int *owner = malloc (sizeof (int) * (size_t) (8 * nl + 1));
  if (!owner) {
    free (list);
    return GR_ERR_NOMEM;
  }
  for (int c = 0; c < nl && st == GR_OK; c++) {
    const Hypo *h0 = &list[c].h;
    const double centre[2] = { h0->cx, h0->cy };
    /* a coarse search pixel is foot / coarse_size control pixels */
    const double rad = 1.5 * h0->scale * long_side / pp->coarse_size + 1.0;
    for (int a = -1; a <= 1 && st == GR_OK; a++)
      for (int b = -1; b <= 1 && st == GR_OK; b++) {
        if ((a == 0 && b == 0) || (dh == 0.0 && b != 0) || (ds == 1.0 && a != 0))
          continue;
        /* never beyond the searched range (a prior's scale or heading window): a
         * result there would be flagged IMPLAUSIBLE for the shortlist's step alone */
        const double hd = wrap360 (h0->heading + b * dh), sc = h0->scale * pow (ds, a);
        if (sc < range[0] * (1.0 - 1e-9) || sc > range[1] * (1.0 + 1e-9) ||
            heading_diff (hd, range[2]) > range[3] + 1e-9)
          continue;
        owner[batch.n] = c;
        st = batch_add (cx, &batch, hd, sc, pp->coarse_size, centre, rad);
      }
  }
  if (st == GR_OK)
    st = batch_run (cx, &batch);
  for (int c = 0; c < nl && st == GR_OK; c++) {
    const Hypo *h0 = &list[c].h;
    Hypo top = *h0;
    for (int m = 0; m < batch.n; m++) {
      if (owner[m] != c)
        continue;
      Hypo r;
      search_read (cx, &batch.se[m], &r, 1);
      if (better (&r, &top))
        top = r;
    }
    top.second = h0->second;
    top.peak_flags = h0->peak_flags;
    coarse[list[c].index] = top;
  }
  batch_clear (&batch);
  free (owner);
  free (list);
  for (int i = 0; i < n; i++)
    if (better (&coarse[i], &coarse[*bi]))
      *bi = i;
  return st;
}

/* The fine level around one coarse hypothesis: finer headings and scales, a small
 * window, parabolas through the neighbouring scores.  *out: NAN score when nothing
 * could be scored there (the caller then keeps the coarse hypothesis). */
static GrStatus
fine_stage (Ctx *cx, const Hypo *best, int nh, int ns, double hstep, double sratio,
    const double *srange, Hypo *out)
{
  const GrPlaneF *frame = cx->frame;
  const GrLocalizeParams *pp = cx->p;
  const double foot = best->scale * (frame->width > frame->height ? frame->width :
      frame->height);
  const double hd = hstep / 4.0;
  const int fk = nh > 1 ? 2 : 0;
  const double fsr = ns > 1 ? pow (sratio, 1.0 / 3.0) : 1.0;
  const int fks = ns > 1 ? 1 : 0;
  Hypo fine[5][3];
  Hypo fb = { .score = NAN };
  int fbh = 0, fbs = 0;
  GrStatus st = GR_OK;
  const double fcentre[2] = { best->cx, best->cy };
  /* a coarse search pixel is foot / coarse_size control pixels */
  const double frad = 2.0 * foot / pp->coarse_size + 1.0;
  /* the grid around it in one batch, read in the grid's order */
  SearchBatch batch = { 0 };
  int at[5][3];
  for (int a = -fks; a <= fks && st == GR_OK; a++)
    for (int b = -fk; b <= fk && st == GR_OK; b++) {
      fine[b + 2][a + 1].score = NAN;
      at[b + 2][a + 1] = -1;
      const double sc = best->scale * pow (fsr, a);
      /* never a scale beyond the searched scale-min .. scale-max (a result there
       * came back at 0.2313 from a sweep over 0.25-4) */
      if (srange && (sc < srange[0] * (1.0 - 1e-9) || sc > srange[1] * (1.0 + 1e-9)))
        continue;
      at[b + 2][a + 1] = batch.n;
      st = batch_add (cx, &batch, wrap360 (best->heading + b * hd), sc, pp->fine_size,
          fcentre, frad);
    }
  if (st == GR_OK)
    st = batch_run (cx, &batch);
  for (int a = -fks; a <= fks && st == GR_OK; a++)
    for (int b = -fk; b <= fk && st == GR_OK; b++) {
      Hypo *hy = &fine[b + 2][a + 1];
      if (at[b + 2][a + 1] < 0)
        continue;
      search_read (cx, &batch.se[at[b + 2][a + 1]], hy, 1);
      if (better (hy, &fb)) {
        fb = *hy;
        fbh = b;
        fbs = a;
      }
    }
  batch_clear (&batch);
  if (st == GR_OK && isfinite (fb.score)) {
    /* parabolas through the neighbours, then the place at the refined pose */
    double oh = 0.0, os = 0.0;
    if (fk && fbh > -fk && fbh < fk)
      oh = parabola (fine[fbh + 1][fbs + 1].score, fb.score, fine[fbh + 3][fbs + 1].score);
    if (fks && fbs == 0)
      os = parabola (fine[fbh + 2][0].score, fb.score, fine[fbh + 2][2].score);
    if (oh != 0.0 || os != 0.0) {
      Hypo r;
      const double fc2[2] = { fb.cx, fb.cy };
      st = score_hypothesis (cx, wrap360 (fb.heading + oh * hd), fb.scale * pow (fsr, os),
          pp->fine_size, fc2, 2.0 * foot / pp->fine_size + 1.0, &r);
      if (st == GR_OK && isfinite (r.score) && r.score >= fb.score - 1e-3)
        fb = r;
    }
  }
  *out = fb;
  return st;
}

static Level *refine_level (GrLocalize *loc, double scale, double *pf, GrStatus *st,
    char *errbuf, size_t errlen);
static GrStatus refine_on (GrLocalize *loc, Level *L, const GrPlaneF *fp, int fw,
    int fh, const double h_coarse[9], double heading, double scale,
    const GrRefineParams *p, GrRefineResult *out, char *errbuf, size_t errlen);

/* The candidates compared at the fine level, registered as nmiregister would (sparse
 * NMI of keypoint templates, a robust homography): a place's support is its inliers
 * when the fit is found and plausible, else 0.  NMI alone cannot always tell them
 * apart: without a prior on aukerman.png the right and a wrong place scored 1.084 and
 * 1.064 at the fine level (1.053 and 1.052 with larger templates), while the right one
 * registered with 90 inliers of 93 and the wrong one with none.  *win becomes the
 * best supported candidate when its support is at least twice any other's (and the
 * minimum inliers), and *decisive says that it then stands alone: no candidate at
 * another place has half its support.  Candidates whose fine results came to the
 * same place as the winner agree with it. */
static GrStatus
verify_candidates (Ctx *cx, Cand *cand, int n, double long_side, int *win,
    bool *decisive)
{
  GrRefineParams rp;
  gr_refine_params_init (&rp);
  GrStatus st = GR_OK;
  const int fw = cx->frame->width, fh = cx->frame->height;
  for (int c = 0; c < n && st == GR_OK; c++) {
    if (cand[c].support >= 0)
      continue;                 /* registered by an earlier comparison of this run */
    cand[c].support = 0;
    if (!isfinite (cand[c].fine.score))
      continue;
    double heading, scale, pf;
    if (!gr_homography_heading_scale (cand[c].fine.h, 0.5 * fw, 0.5 * fh, &heading,
            &scale) || !(scale > 0))
      continue;
    Level *L = refine_level (cx->loc, scale, &pf, &st, cx->errbuf, cx->errlen);
    const GrPlaneF *fp = L ? small_frame (cx, pf, &st) : NULL;
    if (!fp)
      break;
    GrRefineResult rr;
    st = refine_on (cx->loc, L, fp, fw, fh, cand[c].fine.h, heading, scale, &rp, &rr,
        cx->errbuf, cx->errlen);
    const unsigned implausible = GR_PLAUSIBLE_NOT_FINITE | GR_PLAUSIBLE_NEAR_SINGULAR |
        GR_PLAUSIBLE_NON_CONVEX | GR_PLAUSIBLE_AREA | GR_PLAUSIBLE_ASPECT |
        GR_PLAUSIBLE_HEADING;
    if (st == GR_OK && !(rr.flags & (GR_REFINE_LOW_INLIERS | implausible)))
      cand[c].support = rr.inliers;
  }
  *decisive = false;
  if (st != GR_OK)
    return st;
  int support[CAND_SLOTS] = { 0 };
  for (int c = 0; c < n; c++)
    support[c] = cand[c].support > 0 ? cand[c].support : 0;
  int best = *win;
  for (int c = 0; c < n; c++)
    if (support[c] > support[best])
      best = c;
  /* the strongest other place (those that came to the winner's place agree) */
  int other = 0;
  const Hypo *bf = &cand[best].fine;
  for (int c = 0; c < n; c++)
    if (c != best && !(isfinite (cand[c].fine.score) &&
            hypot (cand[c].fine.cx - bf->cx, cand[c].fine.cy - bf->cy) <=
            0.25 * bf->scale * long_side) && support[c] > other)
      other = support[c];
  const int need = 2 * (other > rp.min_inliers ? other : rp.min_inliers);
  if (support[best] >= need) {
    *win = best;
    *decisive = true;
  }
  return GR_OK;
}

/* The strongest refined candidate other than win at a place a quarter footprint or
 * more from ref (win's refined place), scored alike (decide); NAN when none. */
static double
fine_competitor (const Cand *cand, int n, int win, const Hypo *ref, double long_side)
{
  double second = NAN;
  for (int c = 0; c < n; c++)
    if (c != win && isfinite (cand[c].decide) &&
        hypot (cand[c].fine.cx - ref->cx, cand[c].fine.cy - ref->cy) >
        0.25 * ref->scale * long_side && !(cand[c].decide <= second))
      second = cand[c].decide;
  return second;
}

/* Whether the fine level's winner (score best) and the best other place (second)
 * are too close to tell: their ratio above independence below min_fine_ratio (never
 * below min_peak_ratio). */
static bool
fine_undecided (double best, double second, const GrLocalizeParams *p)
{
  return isfinite (second) && second > 1.0 && (best - 1.0) / (second - 1.0) <
      fmax (p->min_peak_ratio, p->min_fine_ratio);
}

/* Places proposed by descriptor matching (localize_features.h) for a sweep whose n
 * refined candidates stay too close to tell: the frame matched at each of the ns grid
 * scales (smid * sratio^k), the similarities with FEATURE_MIN_INLIERS or more kept
 * when they lie within the searched range (scales, the heading window `range` as
 * shortlist_coarse takes it, the position prior's circle cp / radius) and a quarter
 * footprint from every candidate and better proposal, and the best `want` of them
 * refined at the fine level (fine_stage) into cand[n ..]; *added says how many. */
static GrStatus
feature_candidates (Ctx *cx, Cand *cand, int n, int want, int ns, double smid,
    double sratio, const double range[4], const double *cp, double radius, int nh,
    double hstep, const double *srange, int *added, int *scales)
{
  GrLocalize *loc = cx->loc;
  const int fw = cx->frame->width, fh = cx->frame->height;
  const double long_side = fw > fh ? fw : fh;
  *added = *scales = 0;
  if (!loc->features && !(loc->features = gr_place_features_new ()))
    return GR_ERR_NOMEM;
  Hypo prop[MAX_FEATURE_PLACES];
  int inl[MAX_FEATURE_PLACES], np = 0;
  GrStatus st = GR_OK;
  for (int k = 0; k < ns && st == GR_OK; k++) {
    const double s = smid * pow (sratio, k - 0.5 * (ns - 1));
    const GrPlaneF *sf = small_frame (cx, gr_place_features_frame_factor (s, long_side,
            loc->control.width, loc->control.height), &st);
    if (!sf)
      break;
    GrFeaturePlace fp;
    st = gr_place_features_match (loc->features, &loc->control, s, sf, fw, fh,
        cx->p->threads, &fp);
    (*scales)++;
    if (st != GR_OK || fp.inliers < FEATURE_MIN_INLIERS)
      continue;
    Hypo hy = { .score = NAN, .second = NAN, .overlap = NAN };
    if (!gr_homography_heading_scale (fp.h, 0.5 * fw, 0.5 * fh, &hy.heading, &hy.scale) ||
        !gr_fit_apply (fp.h, 0.5 * fw, 0.5 * fh, &hy.cx, &hy.cy))
      continue;
    if (!(hy.scale >= range[0] / SCALE_STEP && hy.scale <= range[1] * SCALE_STEP) ||
        heading_diff (hy.heading, range[2]) > range[3] + hstep)
      continue;
    if (cp && hypot (hy.cx - cp[0], hy.cy - cp[1]) > radius)
      continue;
    const double quarter = 0.25 * long_side;
    bool apart = true;
    for (int c = 0; c < n && apart; c++)
      apart = !(isfinite (cand[c].fine.score) && hypot (cand[c].fine.cx - hy.cx,
              cand[c].fine.cy - hy.cy) <= quarter * fmax (hy.scale, cand[c].fine.scale));
    if (!apart)
      continue;
    /* sorted by inliers among the proposals, one per place (the better kept) */
    int at = np;
    for (int c = 0; c < np; c++)
      if (hypot (prop[c].cx - hy.cx, prop[c].cy - hy.cy) <=
          quarter * fmax (hy.scale, prop[c].scale)) {
        at = fp.inliers > inl[c] ? c : -1;
        break;
      }
    if (at < 0)
      continue;
    if (at == np) {
      if (np < want)
        np++;
      else if (fp.inliers <= inl[np - 1])
        continue;
      at = np - 1;
    }
    prop[at] = hy;
    inl[at] = fp.inliers;
    while (at > 0 && inl[at - 1] < inl[at]) {
      const Hypo th = prop[at - 1];
      const int ti = inl[at - 1];
      prop[at - 1] = prop[at];
      inl[at - 1] = inl[at];
      prop[at] = th;
      inl[at] = ti;
      at--;
    }
  }
  for (int c = 0; c < np && st == GR_OK; c++) {
    Cand *cd = &cand[n + *added];
    cd->index = -1;
    cd->decide = NAN;
    cd->support = -1;
    st = fine_stage (cx, &prop[c], nh, ns, hstep, sratio, srange, &cd->fine);
    if (st != GR_OK || !isfinite (cd->fine.score))
      continue;
    /* the proposal stands as its own coarse hypothesis: its fine result, no map */
    cd->h = cd->fine;
    cd->h.second = NAN;
    cd->h.peak_flags = 0;
    (*added)++;
  }
  return st;
}

/* gr_localize_run on a frame of frame->width x frame->height with `valid` valid
 * pixels, its downscales from `downscale` (NULL: gr_plane_downscale of frame). */
static GrStatus
localize_run (GrLocalize *loc, const GrPlaneF *frame, size_t valid,
    GrLocalizeDownscaleFunc downscale, void *user, const GrLocalizePrior *prior,
    const GrLocalizeParams *params, GrLocalizeResult *out, char *errbuf, size_t errlen)
{
  GrLocalizeParams p;
  if (params)
    p = *params;
  else
    gr_localize_params_init (&p);
  if (!(p.scale_min > 0) || !(p.scale_max >= p.scale_min) || p.headings < 1 ||
      p.coarse_size < 8 || p.fine_size < p.coarse_size || p.levels < 2 || p.levels > 256 ||
      p.coarse_levels < 2 || p.coarse_levels > 256) {
    gr_set_err (errbuf, errlen, "bad localize parameters");
    return GR_ERR_INVALID;
  }
  if (p.threads != loc->threads) {
    loc->threads = p.threads;
    for (int i = 0; i < loc->nlevels; i++)
      gr_nmi_dense_set_threads (loc->level[i].engine, p.threads);
  }
  memset (out, 0, sizeof *out);
  for (int i = 0; i < 9; i++)
    out->h[i] = NAN;
  out->x = out->y = out->heading_deg = out->scale = NAN;
  out->score = out->second = out->peak_ratio = out->overlap = NAN;
  if (valid == 0) {
    out->flags = GR_LOCALIZE_NO_VALID_PIXELS;
    return GR_OK;
  }

  const int built0 = loc->built;
  const double built_ms0 = loc->built_ms;
  Ctx cx;
  memset (&cx, 0, sizeof cx);
  cx.loc = loc;
  cx.frame = frame;
  cx.downscale = downscale;
  cx.user = user;
  cx.p = &p;
  cx.errbuf = errbuf;
  cx.errlen = errlen;
  GrStatus st = GR_OK;
  unsigned flags = 0;

  /* ---- the hypotheses of the coarse level */
  const double hstep = 360.0 / p.headings;
  double heading0 = 0.0;
  int nh = p.headings, h_lo = 0;
  if (prior && prior->has_heading && prior->heading_sigma_deg > 0 &&
      2.5 * prior->heading_sigma_deg < 180.0) {
    const int k = (int) ceil (2.5 * prior->heading_sigma_deg / hstep);
    heading0 = prior->heading_deg;
    h_lo = -k;
    nh = 2 * k + 1 < p.headings ? 2 * k + 1 : p.headings;
    flags |= GR_LOCALIZE_PRIOR_USED;
  } else {
    flags |= GR_LOCALIZE_HEADING_SEARCHED;
  }
  double s_lo, s_hi;
  if (prior && prior->has_scale && prior->scale > 0) {
    const double sg = prior->scale_sigma > 0 ? prior->scale_sigma : 0.0;
    s_lo = prior->scale / (1.0 + 2.0 * sg);
    s_hi = prior->scale * (1.0 + 2.0 * sg);
    flags |= GR_LOCALIZE_PRIOR_USED;
  } else {
    s_lo = p.scale_min;
    s_hi = p.scale_max;
    flags |= GR_LOCALIZE_SCALE_SEARCHED;
  }
  /* scales: log-spaced with ratio <= SCALE_STEP, centred on the range's middle */
  const int ns = 1 + (int) ceil (log (s_hi / s_lo) / log (SCALE_STEP) - 1e-9);
  const double smid = sqrt (s_lo * s_hi);
  const double sratio = ns > 1 ? pow (s_hi / s_lo, 1.0 / (ns - 1)) : 1.0;
  double centre[2], radius = 0.0;
  const double *cp = NULL;
  if (prior && prior->has_position && prior->position_sigma > 0) {
    centre[0] = prior->x;
    centre[1] = prior->y;
    radius = 3.0 * prior->position_sigma;
    cp = centre;
    flags |= GR_LOCALIZE_PRIOR_USED;
  }

  /* a sweep (the heading or the scale unknown): several places a map, and the best
   * distinct ones re-scored between the grid's cells (shortlist_coarse) */
  const bool sweep = (flags & (GR_LOCALIZE_HEADING_SEARCHED | GR_LOCALIZE_SCALE_SEARCHED)) &&
      nh * ns > 1;
  int npk = sweep && p.coarse_peaks > 1 ? p.coarse_peaks : 1;
  npk = npk > GR_LOCALIZE_MAX_PEAKS ? GR_LOCALIZE_MAX_PEAKS : npk;
  const int ncoarse = nh * ns * npk;
  Hypo *coarse = malloc (sizeof (Hypo) * (size_t) ncoarse);
  if (!coarse)
    return GR_ERR_NOMEM;
  const gint64 t_coarse = g_get_monotonic_time ();
  Hypo best = { .score = NAN };
  int bi = -1;
  /* in batches of up to BATCH_BYTES of maps, read in the grid's order */
  SearchBatch batch = { 0 };
  int first = 0;              /* the grid cell of the batch's first search */
  for (int cell = 0; cell < nh * ns && st == GR_OK; cell++) {
    const int si = cell / nh, hi = cell % nh;
    const double s = smid * pow (sratio, si - 0.5 * (ns - 1));
    st = batch_add (&cx, &batch, wrap360 (heading0 + (h_lo + hi) * hstep), s,
        p.coarse_size, cp, radius);
    if (st != GR_OK || (cell < nh * ns - 1 && batch_bytes (&batch) < BATCH_BYTES))
      continue;
    if ((st = batch_run (&cx, &batch)) != GR_OK)
      break;
    /* the maps read on all threads (each whole control: their peaks are most of the
     * host's share of a sweep), the best taken in order after */
    const gint64 t_read = g_get_monotonic_time ();
#pragma omp parallel for schedule(dynamic)
    for (int m = 0; m < batch.n; m++)
      search_read_map (&cx, &batch.se[m], &coarse[(first + m) * npk], npk);
    cx.read_ms += (g_get_monotonic_time () - t_read) / 1000.0;
    for (int m = 0; m < batch.n; m++) {
      const int at = (first + m) * npk;
      for (int k = 0; k < npk; k++)
        if (better (&coarse[at + k], &best)) {
          best = coarse[at + k];
          bi = at + k;
        }
    }
    batch_clear (&batch);
    first = cell + 1;
  }
  batch_clear (&batch);
  /* the grid's scales: [s_lo, s_hi] */
  const double grid_scales[2] = { smid * pow (sratio, -0.5 * (ns - 1)),
    smid * pow (sratio, 0.5 * (ns - 1)) };
  /* the grid's scales and headings: [s_lo, s_hi], heading0 + (h_lo .. -h_lo) hstep
   * (the whole circle without a heading prior), which the shortlist and the
   * descriptors' places never leave */
  const double range[4] = { grid_scales[0], grid_scales[1], heading0,
    nh < p.headings ? -h_lo * hstep : 360.0 };
  if (st == GR_OK && bi >= 0 && sweep && p.shortlist > 0) {
    const gint64 t_short = g_get_monotonic_time ();
    st = shortlist_coarse (&cx, coarse, ncoarse, &bi, p.shortlist, nh > 1 ? hstep : 0.0,
        ns > 1 ? sratio : 1.0, range);
    out->shortlist_ms = (g_get_monotonic_time () - t_short) / 1000.0;
  }
  if (bi >= 0)
    best = coarse[bi];
  out->coarse_ms = (g_get_monotonic_time () - t_coarse) / 1000.0;
  if (st != GR_OK || bi < 0) {
    free (coarse);
    small_frames_clear (&cx);
    if (st == GR_OK)
      out->flags = flags | GR_LOCALIZE_NO_OVERLAP;
    out->searches = cx.searches;
    out->levels_built = loc->built - built0;
    out->levels_ms = loc->built_ms - built_ms0;
    out->downscale_ms = cx.downscale_ms;
    out->downscales = cx.downscales;
    out->search_ms = cx.search_ms;
    out->prepare_ms = cx.prepare_ms;
    out->read_ms = cx.read_ms;
    return st;
  }
  const gint64 t_fine = g_get_monotonic_time ();
  const double long_side = frame->width > frame->height ? frame->width : frame->height;
  /* The coarse level's best is refined at the fine level.  When it is doubtful (its
   * peak ratio against every other place below min_peak_ratio), the coarse best is
   * often not the right hypothesis: with hundreds of (heading, scale, place) maps a
   * wrong one often wins by a hair (the sixth session's flightacc flagged 43 of 100
   * frames without a prior, 9 of 100 with position only; one frame here, heading 104.9
   * with a full prior, had its right hypothesis second at the coarse level, 1.0889
   * against 1.0906, and first at the fine level, 1.072 against 1.041).  Then the next
   * best few at distinct places
   * (a quarter footprint apart) go to the fine level too, whose templates (fine_size
   * px) tell right from wrong far better, and the fine scores decide, the ambiguity
   * included.  In a sweep they always do; with a heading and scale prior a clear
   * coarse result costs nothing more than before. */
  Cand cand[CAND_SLOTS];
  int nc = 0;
  pick_candidates (coarse, ncoarse, bi, nh * ns > 1 ? MAX_CANDIDATES : 1, long_side, cand,
      &nc);
  Hypo fb = { .score = NAN };
  double fine_second = NAN, fine_best = NAN, second = NAN;
  int fbi = -1, refined = 0;
  bool verified = false;      /* the candidates' registrations settled it */
  for (int c = 0; c < nc && st == GR_OK; c++) {
    if (c == 1 && !sweep) {
      /* after the coarse best: go on only when it is doubtful (a sweep always goes
       * on: among hundreds of maps a lead of 5-7% at the coarse level is no evidence,
       * and on aukerman.png a wrong place led the right one by that much) */
      second = coarse_second (coarse, ncoarse, cand, 1, 0, &cand[0].fine, long_side);
      const double ratio = isfinite (second) && second > 1.0 ?
          (cand[0].h.score - 1.0) / (second - 1.0) : INFINITY;
      if (!(ratio < p.min_peak_ratio))
        break;
    }
    st = fine_stage (&cx, &cand[c].h, nh, ns, hstep, sratio,
        (flags & GR_LOCALIZE_SCALE_SEARCHED) ? grid_scales : NULL, &cand[c].fine);
    refined++;
    if (st == GR_OK && better (&cand[c].fine, &fb)) {
      fb = cand[c].fine;
      fbi = c;
    }
  }
  if (st == GR_OK) {
    if (fbi < 0)
      fbi = 0;                  /* no fine score anywhere: the coarse best stands */
    best = cand[fbi].h;
    const Hypo *ref = isfinite (fb.score) ? &fb : &best;
    if (refined > 1) {
      st = equalize_candidates (&cx, cand, refined, long_side, &fbi);
      if (fbi < 0)
        fbi = 0;
      fb = cand[fbi].fine;
      best = cand[fbi].h;
      ref = isfinite (fb.score) ? &fb : &best;
      fine_second = fine_competitor (cand, refined, fbi, ref, long_side);
      fine_best = cand[fbi].decide;
      /* scores too close to tell: the candidates' registrations may (and may choose
       * another) */
      if (st == GR_OK && p.verify && fine_undecided (fine_best, fine_second, &p)) {
        const int before = fbi;
        st = verify_candidates (&cx, cand, refined, long_side, &fbi, &verified);
        if (fbi != before) {
          fb = cand[fbi].fine;
          best = cand[fbi].h;
          ref = isfinite (fb.score) ? &fb : &best;
          fine_second = fine_competitor (cand, refined, fbi, ref, long_side);
          fine_best = cand[fbi].decide;
        }
      }
      /* still too close to tell: places from descriptors join the candidates, and
       * all of them are compared and registered again */
      const int want = p.feature_places < MAX_FEATURE_PLACES ? p.feature_places :
          MAX_FEATURE_PLACES;
      if (st == GR_OK && sweep && want > 0 && !verified &&
          fine_undecided (fine_best, fine_second, &p)) {
        const gint64 t_feat = g_get_monotonic_time ();
        int added = 0;
        st = feature_candidates (&cx, cand, refined, want, ns, smid, sratio, range, cp,
            radius, nh, hstep,
            (flags & GR_LOCALIZE_SCALE_SEARCHED) ? grid_scales : NULL, &added,
            &out->feature_scales);
        out->feature_places = added;
        if (st == GR_OK && added > 0) {
          refined += added;
          st = equalize_candidates (&cx, cand, refined, long_side, &fbi);
          if (fbi < 0)
            fbi = 0;
          if (st == GR_OK && p.verify)
            st = verify_candidates (&cx, cand, refined, long_side, &fbi, &verified);
          fb = cand[fbi].fine;
          best = cand[fbi].h;
          ref = isfinite (fb.score) ? &fb : &best;
          fine_second = fine_competitor (cand, refined, fbi, ref, long_side);
          fine_best = cand[fbi].decide;
        }
        out->feature_ms = (g_get_monotonic_time () - t_feat) / 1000.0;
      }
    }
    second = coarse_second (coarse, ncoarse, cand, refined, fbi, ref, long_side);
  }
  free (coarse);
  small_frames_clear (&cx);
  out->searches = cx.searches;
  out->levels_built = loc->built - built0;
  out->levels_ms = loc->built_ms - built_ms0;
  out->downscale_ms = cx.downscale_ms;
  out->downscales = cx.downscales;
  out->search_ms = cx.search_ms;
  out->prepare_ms = cx.prepare_ms;
  out->read_ms = cx.read_ms;
  out->fine_ms = (g_get_monotonic_time () - t_fine) / 1000.0;
  if (st != GR_OK)
    return st;
  if (!isfinite (fb.score))
    fb = best;                 /* the fine window could not be scored: keep coarse */

  memcpy (out->h, fb.h, sizeof out->h);
  for (int i = 0; i < 9; i++)
    out->h[i] /= fb.h[8];
  out->x = fb.cx;
  out->y = fb.cy;
  gr_homography_heading_scale (out->h, 0.5 * frame->width, 0.5 * frame->height,
      &out->heading_deg, &out->scale);
  out->score = fb.score;
  out->overlap = fb.overlap;
  out->search_scale = pow (2.0, (int) lround (4.0 * log2 ((double) p.fine_size /
              (frame->width > frame->height ? frame->width : frame->height) / fb.scale)) / 4.0);
  /* ambiguity: at the fine level among the candidates when several were refined
   * (the same template size on both sides), else at the coarse level, where every
   * place competed */
  if (verified)
    flags |= GR_LOCALIZE_VERIFIED;
  if (isfinite (fine_second)) {
    out->second = fine_second;
    out->peak_ratio = fine_second > 1.0 ? (fine_best - 1.0) / (fine_second - 1.0) :
        INFINITY;
    if (out->peak_ratio < fmax (p.min_peak_ratio, p.min_fine_ratio) && !verified)
      flags |= GR_LOCALIZE_AMBIGUOUS;
  } else if (isfinite (second)) {
    out->second = second;
    out->peak_ratio = second > 1.0 ? (best.score - 1.0) / (second - 1.0) : INFINITY;
    if (out->peak_ratio < p.min_peak_ratio)
      flags |= GR_LOCALIZE_AMBIGUOUS;
  } else {
    flags |= GR_LOCALIZE_NO_SECOND_PEAK;
  }
  if ((best.peak_flags & GR_PEAK_AT_BORDER) && cp)
    flags |= GR_LOCALIZE_AT_BORDER;
  if (fb.overlap < p.min_overlap)
    flags |= GR_LOCALIZE_LOW_OVERLAP;
  if (prior && prior->has_heading && prior->heading_sigma_deg > 0 &&
      heading_diff (out->heading_deg, prior->heading_deg) > 3.0 * prior->heading_sigma_deg)
    flags |= GR_LOCALIZE_IMPLAUSIBLE;
  if (prior && prior->has_scale && prior->scale > 0 && prior->scale_sigma > 0 &&
      fabs (log (out->scale / prior->scale)) > log (1.0 + 3.0 * prior->scale_sigma))
    flags |= GR_LOCALIZE_IMPLAUSIBLE;
  out->flags = flags;
  return GR_OK;
}

GrStatus
gr_localize_run (GrLocalize *loc, const GrPlaneF *frame, const GrLocalizePrior *prior,
    const GrLocalizeParams *params, GrLocalizeResult *out, char *errbuf, size_t errlen)
{
  if (!engine_ready (loc, frame, out != NULL, errbuf, errlen))
    return GR_ERR_INVALID;
  return localize_run (loc, frame, gr_plane_count_valid (frame), NULL, NULL, prior,
      params, out, errbuf, errlen);
}

GrStatus
gr_localize_run_downscaled (GrLocalize *loc, int width, int height, size_t valid,
    GrLocalizeDownscaleFunc downscale, void *user, const GrLocalizePrior *prior,
    const GrLocalizeParams *params, GrLocalizeResult *out, char *errbuf, size_t errlen)
{
  if (!loc || width <= 0 || height <= 0 || !downscale || !out ||
      valid > (size_t) width * height) {
    gr_set_err (errbuf, errlen, "bad frame size, valid count, source or output");
    return GR_ERR_INVALID;
  }
  if (!loc->control.data) {
    gr_set_err (errbuf, errlen, "no control image set");
    return GR_ERR_INVALID;
  }
  /* the size only: every pixel comes through `downscale` */
  const GrPlaneF shape = { .width = width, .height = height, .stride = (size_t) width };
  return localize_run (loc, &shape, valid, downscale, user, prior, params, out, errbuf,
      errlen);
}

/* ------------------------------------------------------------------ refinement */

void
gr_refine_params_init (GrRefineParams *p)
{
  p->iterations = 3;
  p->spacing = 12;
  p->template_size = 11;
  p->window_size = 41;
  p->threshold = 1.0;
  p->min_inliers = 12;
}

/* One warp-match-fit round on level L with the frame prefiltered to fp (fpx, fpy:
 * prefiltered px per frame px).  On success h is replaced by the fit. */
static GrStatus
refine_round (const Level *L, GrNmiSparse *sp, const GrPlaneF *fp, double fpx, double fpy,
    const GrRefineParams *p, int window, double h[9], GrRefineResult *res, char *errbuf,
    size_t errlen)
{
  double hinv[9];
  if (!gr_mat3_inverse (h, hinv))
    return GR_OK;
  /* the footprint's bounding box on the level */
  double bx0 = INFINITY, by0 = INFINITY, bx1 = -INFINITY, by1 = -INFINITY;
  const double fw = fp->width / fpx, fh = fp->height / fpy;
  const double cu[4] = { 0, fw, fw, 0 }, cv[4] = { 0, 0, fh, fh };
  for (int k = 0; k < 4; k++) {
    double x, y;
    if (!gr_fit_apply (h, cu[k], cv[k], &x, &y))
      return GR_OK;
    bx0 = fmin (bx0, x * L->sx - 0.5);
    bx1 = fmax (bx1, x * L->sx - 0.5);
    by0 = fmin (by0, y * L->sy - 0.5);
    by1 = fmax (by1, y * L->sy - 0.5);
  }
  const int x0 = (int) fmax (0.0, floor (bx0)), y0 = (int) fmax (0.0, floor (by0));
  const int x1 = (int) fmin (L->w - 1, ceil (bx1)), y1 = (int) fmin (L->h - 1, ceil (by1));
  const int ww = x1 - x0 + 1, wh = y1 - y0 + 1;
  if (ww < p->template_size || wh < p->template_size || (double) ww * wh > 6e7)
    return GR_OK;
  GrPlaneF warp;
  if (!gr_plane_alloc (&warp, ww, wh, true))
    return GR_ERR_NOMEM;
  /* level index -> control corner -> frame corner -> prefiltered index */
#pragma omp parallel for schedule(static)
  for (int j = 0; j < wh; j++)
    for (int i = 0; i < ww; i++) {
      double u, v;
      const size_t o = (size_t) j * ww + i;
      warp.mask[o] = gr_fit_apply (hinv, (x0 + i + 0.5) / L->sx, (y0 + j + 0.5) / L->sy,
          &u, &v) && sample_bilinear (fp, u * fpx - 0.5, v * fpy - 0.5, &warp.data[o]);
    }
  uint8_t *wb = malloc ((size_t) ww * wh);
  const int T = p->template_size, half = T / 2;
  /* small footprints (a frame much finer than the control) get a denser grid, so the
   * fit still sees about a hundred candidates */
  int spacing = (int) sqrt ((double) ww * wh / 100.0);
  spacing = spacing > p->spacing ? p->spacing : (spacing < 4 ? 4 : spacing);
  const int maxn = (ww / spacing + 1) * (wh / spacing + 1);
  int32_t *xy = malloc (sizeof (int32_t) * 2 * (size_t) maxn);
  GrNmiSparseQuery *q = malloc (sizeof *q * (size_t) maxn);
  uint8_t *tp = malloc ((size_t) maxn * T * T), *tm = malloc ((size_t) maxn * T * T);
  GrNmiSparseMatch *m = malloc (sizeof *m * (size_t) maxn);
  double *src = malloc (sizeof (double) * 2 * (size_t) maxn);
  double *dst = malloc (sizeof (double) * 2 * (size_t) maxn);
  GrStatus st = GR_OK;
  if (!wb || !xy || !q || !tp || !tm || !m || !src || !dst) {
    st = GR_ERR_NOMEM;
    goto out;
  }
  if (gr_plane_count_valid (&warp) == 0 || to_levels (&warp, REFINE_LEVELS, wb) != GR_OK)
    goto out;
  /* corners of the warped frame (textured places match; flat ones wander), about one
   * per spacing x spacing cell, whose template is wholly valid */
  int n = 0;
  GrKeypointParams kp;
  gr_keypoint_params_init (&kp);
  kp.max_keypoints = maxn;
  kp.grid_cols = ww / (4 * spacing) > 1 ? ww / (4 * spacing) : 1;
  kp.grid_rows = wh / (4 * spacing) > 1 ? wh / (4 * spacing) : 1;
  kp.nms_radius = spacing / 2 > 1 ? spacing / 2 : 1;
  kp.margin = half;
  GrKeypoint *kps = malloc (sizeof *kps * (size_t) maxn);
  const int nk = kps ? gr_keypoints_detect (&warp, &kp, kps, maxn) : -1;
  for (int k = 0; k < nk; k++) {
    const int i = (int) lroundf (kps[k].x), j = (int) lroundf (kps[k].y);
    const int cx = x0 + i, cy = y0 + j;
    if (L->mask && !L->mask[(size_t) cy * L->w + cx])
      continue;
    xy[2 * n] = i;
    xy[2 * n + 1] = j;
    q[n].x = cx;
    q[n].y = cy;
    n++;
  }
  free (kps);
  if (nk < 0) {
    st = GR_ERR_NOMEM;
    goto out;
  }
  GrImage8 wi = { wb, (size_t) ww, warp.mask, (size_t) ww, ww, wh };
  if (n < 4 || gr_nmi_sparse_cut_templates (&wi, T, xy, n, tp, tm) != GR_OK)
    goto out;
  GrNmiSparseParams sp_p;
  gr_nmi_sparse_params_init (&sp_p);
  sp_p.template_size = T;
  sp_p.window_size = window;
  st = gr_nmi_sparse_run (sp, &sp_p, tp, tm, q, n, m, NULL, errbuf, errlen);
  if (st != GR_OK)
    goto out;
  int nc = 0;
  for (int k = 0; k < n; k++) {
    if (m[k].flags & (GR_NMI_SPARSE_NO_SCORE | GR_NMI_SPARSE_AT_BORDER | GR_NMI_SPARSE_FLAT))
      continue;
    /* the template centre in frame corner coordinates, and its match on the control */
    double u, v;
    if (!gr_fit_apply (hinv, (q[k].x + 0.5) / L->sx, (q[k].y + 0.5) / L->sy, &u, &v))
      continue;
    src[2 * nc] = u;
    src[2 * nc + 1] = v;
    dst[2 * nc] = (q[k].x + m[k].dx + 0.5) / L->sx;
    dst[2 * nc + 1] = (q[k].y + m[k].dy + 0.5) / L->sy;
    nc++;
  }
  res->matches = nc;
  GrFitParams fpar;
  gr_fit_params_init (&fpar, GR_MODEL_HOMOGRAPHY);
  fpar.threshold = p->threshold / L->sx;
  GrFit fit;
  const GrFitResult fr = nc >= p->min_inliers ?
      gr_fit_robust (src, dst, NULL, nc, &fpar, &fit, NULL) : GR_FIT_TOO_FEW;
  if (fr == GR_FIT_OK && fit.inliers >= p->min_inliers) {
    memcpy (h, fit.h, sizeof fit.h);
    res->inliers = fit.inliers;
    res->rms = fit.rms * L->sx;
  } else {
    res->inliers = 0;
  }
out:
  gr_plane_clear (&warp);
  free (wb);
  free (xy);
  free (q);
  free (tp);
  free (tm);
  free (m);
  free (src);
  free (dst);
  return st;
}

/* The working grid of a fine registration at `scale` (control px per frame px): the
 * control level whose pixel is about a frame pixel when the control is finer, the
 * full control otherwise; *pf: the frame's downscale onto it (at most 1).  NULL and
 * *st on failure. */
static Level *
refine_level (GrLocalize *loc, double scale, double *pf, GrStatus *st, char *errbuf,
    size_t errlen)
{
  int q = (int) lround (4.0 * log2 (1.0 / scale));
  q = q > 0 ? 0 : (q < -60 ? -60 : q);
  Level *L = get_level (loc, q, REFINE_LEVELS, 0, st, errbuf, errlen);
  if (L)
    *pf = scale * L->sx < 1.0 ? scale * L->sx : 1.0;
  return L;
}

/* gr_localize_refine's rounds on level L, from h_coarse (heading and scale its own),
 * with the fw x fh frame already brought onto the level's grid as fp. */
static GrStatus
refine_on (GrLocalize *loc, Level *L, const GrPlaneF *fp, int fw, int fh,
    const double h_coarse[9], double heading, double scale, const GrRefineParams *p,
    GrRefineResult *out, char *errbuf, size_t errlen)
{
  memset (out, 0, sizeof *out);
  memcpy (out->h, h_coarse, sizeof out->h);
  out->rms = NAN;
  out->work_scale = L->sx;
  GrStatus st = GR_OK;
  if (!L->sparse) {
    GrNmiSparse *made = gr_nmi_sparse_new (loc->backend, loc->device, &st, errbuf,
        errlen);
    if (made) {
      GrImage8 ci = { L->bins, (size_t) L->w, L->mask, (size_t) L->w, L->w, L->h };
      st = gr_nmi_sparse_set_control (made, &ci, errbuf, errlen);
      if (st == GR_OK)
        L->sparse = made;
      else
        gr_nmi_sparse_free (made);
    }
  }
  GrNmiSparse *sp = L->sparse;
  if (sp)
    gr_nmi_sparse_set_threads (sp, loc->threads);
  double h[9];
  memcpy (h, h_coarse, sizeof h);
  bool fitted = false;
  for (int it = 0; it < p->iterations && sp && st == GR_OK; it++) {
    const int window = it == 0 ? p->window_size :
        (p->window_size < 21 ? p->window_size : (21 > p->template_size ? 21 : p->template_size));
    GrRefineResult r = { .rms = NAN };
    double hn[9];
    memcpy (hn, h, sizeof hn);
    st = refine_round (L, sp, fp, (double) fp->width / fw, (double) fp->height / fh, p,
        window, hn, &r, errbuf, errlen);
    if (st != GR_OK || r.inliers < p->min_inliers) {
      if (!fitted) {
        /* the first round's counts say how clearly the start failed (nmilocalize's
         * check of a translation result tells a refuted place from a frame too small
         * to register) */
        out->matches = r.matches;
        out->inliers = r.inliers;
      }
      break;
    }
    memcpy (h, hn, sizeof h);
    out->matches = r.matches;
    out->inliers = r.inliers;
    out->rms = r.rms;
    fitted = true;
  }
  if (st != GR_OK)
    return st;
  for (int i = 0; i < 9; i++)
    out->h[i] = h[i] / h[8];
  if (!fitted)
    out->flags |= GR_REFINE_LOW_INLIERS;
  GrPlausibleParams pp;
  gr_plausible_params_init (&pp);
  pp.expected_scale = scale;
  pp.has_heading = true;
  pp.heading_deg = heading;
  out->flags |= gr_fit_check_plausible (out->h, fw, fh, &pp, NULL);
  return GR_OK;
}

static bool
refine_params_ok (const GrRefineParams *p)
{
  return p->template_size >= 3 && p->template_size <= GR_NMI_SPARSE_MAX_TEMPLATE &&
      (p->template_size & 1) && p->window_size >= p->template_size &&
      p->window_size <= GR_NMI_SPARSE_MAX_WINDOW && (p->window_size & 1) &&
      p->spacing >= 1 && p->iterations >= 1 && p->threshold > 0;
}

/* gr_localize_refine and its downscaled form: frame's pixels from frame itself, or
 * from `downscale` when given (frame then only gives the size), read as the search
 * reads them (small_frame). */
static GrStatus
refine_from (GrLocalize *loc, const GrPlaneF *frame, GrLocalizeDownscaleFunc downscale,
    void *user, const double h_coarse[9], const GrRefineParams *params,
    GrRefineResult *out, char *errbuf, size_t errlen)
{
  GrRefineParams p;
  if (params)
    p = *params;
  else
    gr_refine_params_init (&p);
  if (!refine_params_ok (&p)) {
    gr_set_err (errbuf, errlen, "bad refine parameters");
    return GR_ERR_INVALID;
  }
  const int fw = frame->width, fh = frame->height;
  memset (out, 0, sizeof *out);
  memcpy (out->h, h_coarse, sizeof out->h);
  out->rms = NAN;
  double heading, scale;
  if (!gr_homography_heading_scale (h_coarse, 0.5 * fw, 0.5 * fh, &heading, &scale) ||
      !(scale > 0)) {
    out->flags = GR_REFINE_LOW_INLIERS | GR_PLAUSIBLE_NOT_FINITE;
    return GR_OK;
  }
  GrStatus st = GR_OK;
  double pf;
  Level *L = refine_level (loc, scale, &pf, &st, errbuf, errlen);
  if (!L)
    return st;
  /* the frame area-downscaled onto that grid (pf < 1) or as it is */
  Ctx cx = { .loc = loc, .frame = frame, .downscale = downscale, .user = user,
    .errbuf = errbuf, .errlen = errlen };
  const GrPlaneF *fp = small_frame (&cx, pf, &st);
  if (fp)
    st = refine_on (loc, L, fp, fw, fh, h_coarse, heading, scale, &p, out, errbuf,
        errlen);
  small_frames_clear (&cx);
  return st;
}

GrStatus
gr_localize_refine (GrLocalize *loc, const GrPlaneF *frame, const double h_coarse[9],
    const GrRefineParams *params, GrRefineResult *out, char *errbuf, size_t errlen)
{
  if (!engine_ready (loc, frame, h_coarse && out, errbuf, errlen))
    return GR_ERR_INVALID;
  return refine_from (loc, frame, NULL, NULL, h_coarse, params, out, errbuf, errlen);
}

GrStatus
gr_localize_refine_downscaled (GrLocalize *loc, int width, int height,
    GrLocalizeDownscaleFunc downscale, void *user, const double h_coarse[9],
    const GrRefineParams *params, GrRefineResult *out, char *errbuf, size_t errlen)
{
  if (!loc || width < 1 || height < 1 || !downscale || !h_coarse || !out) {
    gr_set_err (errbuf, errlen, "bad frame size, downscale or output");
    return GR_ERR_INVALID;
  }
  if (!loc->control.data) {
    gr_set_err (errbuf, errlen, "no control image set");
    return GR_ERR_INVALID;
  }
  /* the size only: every pixel comes through `downscale` */
  const GrPlaneF shape = { .width = width, .height = height, .stride = (size_t) width };
  return refine_from (loc, &shape, downscale, user, h_coarse, params, out, errbuf,
      errlen);
}
