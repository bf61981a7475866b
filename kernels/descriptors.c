/* Rotation-invariant gradient descriptors (see descriptors.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "descriptors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>

#if GR_HAVE_CUDA
#include "features_cuda.h"
#endif
#include "threadshare.h"

#define ORI_BINS 36
#define PI_F 3.14159265358979f

void
gr_descriptor_params_init (GrDescriptorParams *p)
{
  p->size = 64;
  p->radius = 12;
  p->sigma = 1.2f;
  p->subpixel = true;
}

int
gr_descriptor_margin (const GrDescriptorParams *p)
{
  /* disc radius, +1 for the bilinear neighbour, +1 for the gradient's neighbour */
  return p->radius + 3;
}

void
gr_descriptor_scratch_clear (GrDescriptorScratch *s)
{
  free (s->smooth);
  free (s->gx);
  free (s->gy);
  free (s->tmp);
  free (s->gvalid);
  memset (s, 0, sizeof *s);
}

static bool
scratch_fit (GrDescriptorScratch *s, size_t n)
{
  if (s->cap >= n && s->smooth)
    return true;
  gr_descriptor_scratch_clear (s);
  s->smooth = malloc (n * sizeof (float));
  s->gx = malloc (n * sizeof (float));
  s->gy = malloc (n * sizeof (float));
  s->tmp = malloc (n * sizeof (float));
  s->gvalid = malloc (n);
  if (!s->smooth || !s->gx || !s->gy || !s->tmp || !s->gvalid) {
    gr_descriptor_scratch_clear (s);
    return false;
  }
  s->cap = n;
  return true;
}

static inline bool
valid_at (const GrPlaneF *img, int x, int y)
{
  return !img->mask || img->mask[(size_t) y * img->width + x];
}

/* the smoothing taps wt[0 .. 2 rr] (shared with the CUDA backend); returns rr */
static int
smooth_weights (float sigma, float wt[64])
{
  const int r = sigma > 0 ? (int) ceilf (3.0f * sigma) : 0;
  const int rr = r > 31 ? 31 : r;
  for (int i = -rr; i <= rr; i++)
    wt[i + rr] = sigma > 0 ? expf (-(float) (i * i) / (2.0f * sigma * sigma)) : 1.0f;
  return rr;
}

/* the orientation and descriptor weights of the (2R+1)^2 disc (shared with CUDA) */
static void
disc_weights (int R, float *gw_ori, float *gw_desc)
{
  const int side = 2 * R + 1;
  const float so = 0.5f * R, sd = 0.6f * R;
  for (int v = -R; v <= R; v++)
    for (int u = -R; u <= R; u++) {
      const float r2 = (float) (u * u + v * v);
      const bool in = r2 <= (float) (R * R);
      gw_ori[(v + R) * side + u + R] = in ? expf (-r2 / (2 * so * so)) : 0.f;
      gw_desc[(v + R) * side + u + R] = in ? expf (-r2 / (2 * sd * sd)) : 0.f;
    }
}

/* one output of the horizontal pass, any pixel: the valid neighbours' average */
static inline float
smooth_h_at (const GrPlaneF *img, const float *row, const float *wt, int rr, int x, int y)
{
  float s = 0.f, sw = 0.f;
  for (int i = -rr; i <= rr; i++) {
    const int xx = x + i;
    if (xx < 0 || xx >= img->width || !valid_at (img, xx, y))
      continue;
    s += wt[i + rr] * row[xx];
    sw += wt[i + rr];
  }
  return s / sw;
}

/* one output of the vertical pass, any pixel */
static inline float
smooth_v_at (const GrPlaneF *img, const float *tmp, const float *wt, int rr, int x, int y)
{
  const int w = img->width;
  float s = 0.f, sw = 0.f;
  for (int i = -rr; i <= rr; i++) {
    const int yy = y + i;
    if (yy < 0 || yy >= img->height || !valid_at (img, x, yy))
      continue;
    s += wt[i + rr] * tmp[(size_t) yy * w + x];
    sw += wt[i + rr];
  }
  return s / sw;
}

/* masked separable Gaussian: each pass averages the valid neighbours.  Without a
 * mask every tap of an interior pixel is valid: those run as plain weighted sums
 * along the row (vectorized), adding the same terms in the same order as the
 * per-pixel form and dividing by the same weight sum, so the floats are the same
 * (and the same as the CUDA backend's). */
/* smooth_plane and gradients also built for x86-64-v3 (AVX2: 8 floats a vector),
 * chosen at load time; -ffp-contract=off (meson.build) keeps FMA out, so each lane
 * does the scalar operations and the floats are the same */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DESC_CLONES __attribute__ ((target_clones ("arch=x86-64-v3", "default")))
#else
#define DESC_CLONES
#endif

DESC_CLONES static void
smooth_plane (const GrPlaneF *img, float sigma, float *tmp, float *out)
{
  const int w = img->width, h = img->height;
  float wt[64];
  const int rr = smooth_weights (sigma, wt);
  const bool fast = !img->mask;
  float wsum = 0.f;              /* in tap order, as the per-pixel form adds it */
  for (int i = -rr; i <= rr; i++)
    wsum += wt[i + rr];
  /* the interior columns / rows the fast path takes */
  const int xa = rr, xb = w - rr, ya = rr, yb = h - rr;
#pragma omp parallel for schedule (static)
  for (int y = 0; y < h; y++) {
    const float *row = img->data + (size_t) y * img->stride;
    float *t = tmp + (size_t) y * w;
    if (fast && xb > xa) {
      for (int x = xa; x < xb; x++)
        t[x] = 0.f;
      for (int i = -rr; i <= rr; i++) {
        const float k = wt[i + rr];
        const float *r = row + i;
        for (int x = xa; x < xb; x++)
          t[x] += k * r[x];
      }
      for (int x = xa; x < xb; x++)
        t[x] /= wsum;
      for (int x = 0; x < w; x++) {
        if (x == xa)
          x = xb;
        if (x < w)
          t[x] = smooth_h_at (img, row, wt, rr, x, y);
      }
      continue;
    }
    for (int x = 0; x < w; x++)
      t[x] = valid_at (img, x, y) ? smooth_h_at (img, row, wt, rr, x, y) : 0.f;
  }
#pragma omp parallel for schedule (static)
  for (int y = 0; y < h; y++) {
    float *o = out + (size_t) y * w;
    if (fast && y >= ya && y < yb) {
      for (int x = 0; x < w; x++)
        o[x] = 0.f;
      for (int i = -rr; i <= rr; i++) {
        const float k = wt[i + rr];
        const float *r = tmp + (size_t) (y + i) * w;
        for (int x = 0; x < w; x++)
          o[x] += k * r[x];
      }
      for (int x = 0; x < w; x++)
        o[x] /= wsum;
      continue;
    }
    for (int x = 0; x < w; x++)
      o[x] = valid_at (img, x, y) ? smooth_v_at (img, tmp, wt, rr, x, y) : 0.f;
  }
}

DESC_CLONES static void
gradients (const GrPlaneF *img, const float *s, float *gx, float *gy, uint8_t *gv)
{
  const int w = img->width, h = img->height;
#pragma omp parallel for schedule (static)
  for (int y = 0; y < h; y++) {
    const size_t r = (size_t) y * w;
    if (!img->mask && y > 0 && y < h - 1) {
      /* no mask, inner row: valid between the first and last column */
      for (int x = 0; x < w; x++) {
        const size_t i = r + x;
        const bool ok = x > 0 && x < w - 1;
        gv[i] = ok;
        gx[i] = ok ? 0.5f * (s[i + 1] - s[i - 1]) : 0.f;
        gy[i] = ok ? 0.5f * (s[i + w] - s[i - w]) : 0.f;
      }
      continue;
    }
    for (int x = 0; x < w; x++) {
      const size_t i = r + x;
      const bool ok = x > 0 && y > 0 && x < w - 1 && y < h - 1 && valid_at (img, x, y) &&
          valid_at (img, x - 1, y) && valid_at (img, x + 1, y) &&
          valid_at (img, x, y - 1) && valid_at (img, x, y + 1);
      gv[i] = ok;
      gx[i] = ok ? 0.5f * (s[i + 1] - s[i - 1]) : 0.f;
      gy[i] = ok ? 0.5f * (s[i + w] - s[i - w]) : 0.f;
    }
  }
}

/* bilinear gradient at (x, y); false when a needed gradient is invalid */
static inline bool
grad_at (const float *gx, const float *gy, const uint8_t *gv, int w, int h, float x,
    float y, float *ox, float *oy)
{
  const float fx = floorf (x), fy = floorf (y);
  const int x0 = (int) fx, y0 = (int) fy;
  if (x0 < 0 || y0 < 0 || x0 >= w || y0 >= h)
    return false;
  const float ax = x - fx, ay = y - fy;
  const int x1 = ax > 0.f ? x0 + 1 : x0, y1 = ay > 0.f ? y0 + 1 : y0;
  if (x1 >= w || y1 >= h)
    return false;
  const size_t i00 = (size_t) y0 * w + x0, i01 = (size_t) y0 * w + x1,
      i10 = (size_t) y1 * w + x0, i11 = (size_t) y1 * w + x1;
  if (!gv[i00] || !gv[i01] || !gv[i10] || !gv[i11])
    return false;
  const float w00 = (1 - ax) * (1 - ay), w01 = ax * (1 - ay), w10 = (1 - ax) * ay,
      w11 = ax * ay;
  *ox = w00 * gx[i00] + w01 * gx[i01] + w10 * gx[i10] + w11 * gx[i11];
  *oy = w00 * gy[i00] + w01 * gy[i01] + w10 * gy[i10] + w11 * gy[i11];
  return true;
}

/* Shi-Tomasi minimum eigenvalue of the 5 x 5 structure tensor of the smoothed
 * gradients at (x, y); -1 when a gradient is missing */
static float
min_eig (const GrDescriptorScratch *s, int w, int h, int x, int y)
{
  double a = 0, b = 0, c = 0;
  for (int v = -2; v <= 2; v++)
    for (int u = -2; u <= 2; u++) {
      const int xx = x + u, yy = y + v;
      if (xx < 0 || yy < 0 || xx >= w || yy >= h)
        return -1.f;
      const size_t j = (size_t) yy * w + xx;
      if (!s->gvalid[j])
        return -1.f;
      a += (double) s->gx[j] * s->gx[j];
      b += (double) s->gx[j] * s->gy[j];
      c += (double) s->gy[j] * s->gy[j];
    }
  return (float) (0.5 * (a + c) - sqrt (0.25 * (a - c) * (a - c) + b * b));
}

/* sub-pixel keypoints: the peak of a quadratic through the corner measure at the
 * keypoint and its 4-neighbours, when the keypoint is a local maximum of it */
static void
refine_keypoints (const GrDescriptorScratch *s, int w, int h, GrKeypoint *kp, int n)
{
#pragma omp parallel for schedule (static)
  for (int i = 0; i < n; i++) {
    const int x = (int) lrintf (kp[i].x), y = (int) lrintf (kp[i].y);
    const float c = min_eig (s, w, h, x, y);
    const float l = min_eig (s, w, h, x - 1, y), r = min_eig (s, w, h, x + 1, y);
    const float t = min_eig (s, w, h, x, y - 1), b = min_eig (s, w, h, x, y + 1);
    if (c <= 0.f || l < 0.f || r < 0.f || t < 0.f || b < 0.f)
      continue;
    const float dxx = l - 2 * c + r, dyy = t - 2 * c + b;
    float dx = 0.f, dy = 0.f;
    if (dxx < 0.f && c >= l && c >= r)
      dx = 0.5f * (l - r) / dxx;
    if (dyy < 0.f && c >= t && c >= b)
      dy = 0.5f * (t - b) / dyy;
    kp[i].x = x + fmaxf (-0.5f, fminf (0.5f, dx));
    kp[i].y = y + fmaxf (-0.5f, fminf (0.5f, dy));
  }
}

GrStatus
gr_descriptors_compute (const GrPlaneF *img, GrKeypoint *kp, int n,
    const GrDescriptorParams *p, float *out, float *angle, GrDescriptorScratch *scratch)
{
  if (!img || !img->data || img->width < 1 || img->height < 1 || !p || n < 0 ||
      (n > 0 && (!kp || !out)) || (p->size != 32 && p->size != 64) ||
      p->radius < 4 || p->radius > 64 || !(p->sigma >= 0.f) || p->sigma > 10.f)
    return GR_ERR_INVALID;
  if (n == 0)
    return GR_OK;
  const int w = img->width, h = img->height;
  GrDescriptorScratch local = { 0 };
  GrDescriptorScratch *s = scratch ? scratch : &local;
  if (!scratch_fit (s, (size_t) w * h))
    return GR_ERR_NOMEM;
  smooth_plane (img, p->sigma, s->tmp, s->smooth);
  gradients (img, s->smooth, s->gx, s->gy, s->gvalid);

  if (p->subpixel)
    refine_keypoints (s, w, h, kp, n);

  const int R = p->radius;
  const int NC = p->size == 64 ? 4 : 2;       /* cells per side */
  const int NB = p->size == 64 ? 4 : 8;       /* orientation bins */
  const int side = 2 * R + 1;
  float *gw_ori = malloc (sizeof (float) * side * side);
  float *gw_desc = malloc (sizeof (float) * side * side);
  if (!gw_ori || !gw_desc) {
    free (gw_ori);
    free (gw_desc);
    if (!scratch)
      gr_descriptor_scratch_clear (&local);
    return GR_ERR_NOMEM;
  }
  disc_weights (R, gw_ori, gw_desc);

#pragma omp parallel for schedule (dynamic, 16)
  for (int i = 0; i < n; i++) {
    float *d = out + (size_t) i * p->size;
    memset (d, 0, sizeof (float) * p->size);
    const float kx = kp[i].x, ky = kp[i].y;
    /* orientation */
    float hist[ORI_BINS], hs[ORI_BINS];
    memset (hist, 0, sizeof hist);
    const int cx = (int) lrintf (kx), cy = (int) lrintf (ky);
    for (int v = -R; v <= R; v++)
      for (int u = -R; u <= R; u++) {
        const float gwt = gw_ori[(v + R) * side + u + R];
        const int x = cx + u, y = cy + v;
        if (gwt == 0.f || x < 0 || y < 0 || x >= w || y >= h)
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
    int best = 0;
    for (int b = 1; b < ORI_BINS; b++)
      if (hist[b] > hist[best])
        best = b;
    if (hist[best] <= 0.f) {
      if (angle)
        angle[i] = 0.f;
      continue;     /* no valid gradient: zero descriptor */
    }
    const float l = hist[(best + ORI_BINS - 1) % ORI_BINS], c = hist[best],
        r = hist[(best + 1) % ORI_BINS];
    const float den = l - 2 * c + r;
    const float off = den < 0.f ? 0.5f * (l - r) / den : 0.f;
    const float theta = (best + 0.5f + off) * (2 * PI_F / ORI_BINS) - PI_F;
    if (angle)
      angle[i] = theta;
    const float ct = cosf (theta), st = sinf (theta);

    /* descriptor */
    for (int v = -R; v <= R; v++)
      for (int u = -R; u <= R; u++) {
        const float gwt = gw_desc[(v + R) * side + u + R];
        if (gwt == 0.f)
          continue;
        const float x = kx + ct * u - st * v, y = ky + st * u + ct * v;
        float gx, gy;
        if (!grad_at (s->gx, s->gy, s->gvalid, w, h, x, y, &gx, &gy))
          continue;
        const float gu = ct * gx + st * gy, gv = -st * gx + ct * gy;
        const float m = sqrtf (gu * gu + gv * gv) * gwt;
        if (m == 0.f)
          continue;
        /* spatial cell coordinates (cell centres at integers) and orientation bin */
        const float fu = (u + R + 0.5f) * NC / (float) side - 0.5f;
        const float fv = (v + R + 0.5f) * NC / (float) side - 0.5f;
        const float fo = (atan2f (gv, gu) + PI_F) * (NB / (2 * PI_F));
        const int u0 = (int) floorf (fu), v0 = (int) floorf (fv);
        int o0 = (int) floorf (fo);
        const float au = fu - u0, av = fv - v0, ao = fo - o0;
        o0 = (o0 % NB + NB) % NB;
        for (int dv = 0; dv <= 1; dv++) {
          const int cv = v0 + dv;
          if (cv < 0 || cv >= NC)
            continue;
          const float wv = dv ? av : 1 - av;
          for (int du = 0; du <= 1; du++) {
            const int cu = u0 + du;
            if (cu < 0 || cu >= NC)
              continue;
            const float wuv = wv * (du ? au : 1 - au) * m;
            float *cell = d + (cv * NC + cu) * NB;
            cell[o0] += wuv * (1 - ao);
            cell[(o0 + 1) % NB] += wuv * ao;
          }
        }
      }
    /* normalize, clip, normalize */
    for (int pass = 0; pass < 2; pass++) {
      double nn = 0.0;
      for (int t = 0; t < p->size; t++)
        nn += (double) d[t] * d[t];
      if (nn <= 0.0)
        break;
      const float inv = (float) (1.0 / sqrt (nn));
      for (int t = 0; t < p->size; t++) {
        d[t] *= inv;
        if (pass == 0 && d[t] > 0.2f)
          d[t] = 0.2f;
      }
    }
  }
  free (gw_ori);
  free (gw_desc);
  if (!scratch)
    gr_descriptor_scratch_clear (&local);
  return GR_OK;
}

/* ------------------------------------------------------------------ the engine */

struct GrFeatures {
  GrBackend backend;
  GrDescriptorScratch scratch;  /* CPU: the full scratch; CUDA: smooth (windows) only */
  float *gw;                    /* CUDA: the disc weights of the last R */
  int gw_r;
  uint8_t *valid;               /* CUDA, device frames with a mask: validity windows */
  size_t valid_cap;
  GrPlaneF view;                /* gr_features_validity */
  const float *kp_resp;         /* for the next host extraction only, borrowed, or NULL
                                 * (gr_features_set_responses) */
  int kp_resp_block;
#if GR_HAVE_CUDA
  GrFeaturesCuda *cuda;
#endif
};

static double
fnow_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

GrFeatures *
gr_features_new (GrBackend backend, int cuda_device, GrStatus *status, char *errbuf,
    size_t errlen)
{
  GrStatus dummy;
  if (!status)
    status = &dummy;
  *status = GR_OK;
  GrBackend use = backend;
  if (use == GR_BACKEND_AUTO)
    use = gr_cuda_device_count () > 0 ? GR_BACKEND_CUDA : GR_BACKEND_CPU;
  if (use == GR_BACKEND_CUDA && gr_cuda_device_count () <= 0) {
    *status = GR_ERR_NO_CUDA;
    gr_set_err (errbuf, errlen, "%s", gr_cuda_compiled ()
        ? "no usable CUDA device (no GPU or no driver)"
        : "this build has no CUDA kernels (built without nvcc)");
    return NULL;
  }
  GrFeatures *f = calloc (1, sizeof *f);
  if (!f) {
    *status = GR_ERR_NOMEM;
    return NULL;
  }
  f->backend = use;
#if GR_HAVE_CUDA
  if (use == GR_BACKEND_CUDA) {
    f->cuda = gr_features_cuda_new (cuda_device < 0 ? 0 : cuda_device, errbuf, errlen);
    if (!f->cuda && backend == GR_BACKEND_AUTO) {
      f->backend = GR_BACKEND_CPU;      /* auto: the best that works */
    } else if (!f->cuda) {
      free (f);
      *status = GR_ERR_CUDA;
      return NULL;
    }
  }
#else
  (void) cuda_device;
#endif
  return f;
}

void
gr_features_free (GrFeatures *f)
{
  if (!f)
    return;
#if GR_HAVE_CUDA
  gr_features_cuda_free (f->cuda);
#endif
  gr_descriptor_scratch_clear (&f->scratch);
  free (f->gw);
  free (f->valid);
  free (f);
}

GrBackend
gr_features_backend (const GrFeatures *f)
{
  return f->backend;
}

const GrDescriptorScratch *
gr_features_scratch (const GrFeatures *f)
{
  return f ? &f->scratch : NULL;
}

const GrPlaneF *
gr_features_validity (const GrFeatures *f)
{
  return f && f->view.width > 0 ? &f->view : NULL;
}

/* the checks shared by the extraction entry points; frame: NULL = not checked */
static int
check_args (const GrFeatures *f, const GrPlaneF *img, const GrKeypointParams *kpp,
    const GrDescriptorParams *dp, GrKeypoint *kp, int capacity, float *desc,
    char *errbuf, size_t errlen)
{
  if (!f || !img || !img->data || img->width <= 0 || img->height <= 0 ||
      img->stride < (size_t) img->width || !kpp || capacity < 0 || (capacity > 0 && !kp)
      || (dp && capacity > 0 && !desc)) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return -GR_ERR_INVALID;
  }
  if (kpp->max_keypoints <= 0 || kpp->grid_cols <= 0 || kpp->grid_rows <= 0 ||
      kpp->nms_radius < 1 || kpp->margin < 0 || kpp->block_radius < 1 ||
      !(kpp->min_response >= 0.0f && kpp->min_response <= 1.0f)) {
    gr_set_err (errbuf, errlen, "bad keypoint parameters");
    return -GR_ERR_INVALID;
  }
  if (dp && ((dp->size != 32 && dp->size != 64) || dp->radius < 4 || dp->radius > 64 ||
          !(dp->sigma >= 0.f) || dp->sigma > 10.f)) {
    gr_set_err (errbuf, errlen, "bad descriptor parameters");
    return -GR_ERR_INVALID;
  }
  return 0;
}

#if GR_HAVE_CUDA
/* the CUDA engine's per-call host state: the smoothed plane (windows) and the weight
 * tables, the very floats the CPU path uses */
static int
cuda_tables (GrFeatures *f, const GrPlaneF *img, const GrDescriptorParams *dp,
    GrFeaturesTables *tab, char *errbuf, size_t errlen)
{
  const size_t npix = (size_t) img->width * img->height;
  if (f->scratch.cap < npix || !f->scratch.smooth) {
    gr_descriptor_scratch_clear (&f->scratch);
    f->scratch.smooth = malloc (npix * sizeof (float));
    if (!f->scratch.smooth) {
      gr_set_err (errbuf, errlen, "out of memory");
      return -GR_ERR_NOMEM;
    }
    f->scratch.cap = npix;
  }
  const int R = dp->radius, side = 2 * R + 1;
  if (!f->gw || f->gw_r != R) {
    free (f->gw);
    f->gw = malloc (sizeof (float) * 2 * side * side);
    if (!f->gw) {
      f->gw_r = 0;
      gr_set_err (errbuf, errlen, "out of memory");
      return -GR_ERR_NOMEM;
    }
    disc_weights (R, f->gw, f->gw + side * side);
    f->gw_r = R;
  }
  float wt[64];
  tab->rr = smooth_weights (dp->sigma, wt);
  memcpy (tab->wt, wt, sizeof (float) * (2 * tab->rr + 1));
  tab->gw_ori = f->gw;
  tab->gw_desc = f->gw + side * side;
  tab->k_ori = ORI_BINS / (2 * PI_F);
  tab->k_theta = 2 * PI_F / ORI_BINS;
  tab->k_desc = (dp->size == 64 ? 4 : 8) / (2 * PI_F);
  return 0;
}

/* the device detector's limits */
static bool
device_detector_fits (const GrPlaneF *img, const GrKeypointParams *kpp)
{
  return kpp->block_radius <= 16 && (size_t) img->width * img->height < (size_t) 1 << 31;
}
#endif

void
gr_features_set_responses (GrFeatures *f, const float *responses, int block_radius)
{
  if (!f)
    return;
  f->kp_resp = responses;
  f->kp_resp_block = block_radius;
}

int
gr_features_extract (GrFeatures *f, const GrPlaneF *img, const GrKeypointParams *kpp,
    const GrDescriptorParams *dp, GrKeypoint *kp, int capacity, float *desc, float *angle,
    GrFeatureStats *stats, char *errbuf, size_t errlen)
{
  const double t0 = fnow_ms ();
  GrFeatureStats st = { 0 };
  st.candidates = -1;
  /* the responses set for this call only */
  const float *kp_resp = f ? f->kp_resp : NULL;
  if (f)
    f->kp_resp = NULL;
  if (!dp) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return -GR_ERR_INVALID;
  }
  int n = check_args (f, img, kpp, dp, kp, capacity, desc, errbuf, errlen);
  if (n < 0)
    return n;
#if GR_HAVE_CUDA
  if (f->backend == GR_BACKEND_CUDA) {
    GrFeaturesTables tab;
    n = cuda_tables (f, img, dp, &tab, errbuf, errlen);
    if (n < 0)
      return n;
    /* the device detector's limits: outside them the CPU detector (the definition)
     * finds the keypoints and the device computes their descriptors */
    const bool host = !device_detector_fits (img, kpp);
    int hn = 0;
    if (host) {
      hn = gr_keypoints_detect (img, kpp, kp, capacity);
      if (hn < 0) {
        gr_set_err (errbuf, errlen, "keypoint detection failed");
        return hn;
      }
    }
    n = gr_features_cuda_extract (f->cuda, img, false, kpp, dp, &tab, host ? kp : NULL,
        hn, capacity, kp, desc, angle, f->scratch.smooth, NULL, &st, errbuf, errlen);
    st.host_detect = host;
    if (n < 0)
      return n;
  } else
#endif
  {
    n = gr_keypoints_detect_with (img, kpp, kp_resp && f->kp_resp_block ==
        kpp->block_radius ? kp_resp : NULL, kp, capacity);
    if (n < 0) {
      gr_set_err (errbuf, errlen, "keypoint detection failed (%s)",
          gr_status_string ((GrStatus) -n));
      return n;
    }
    const GrStatus s = gr_descriptors_compute (img, kp, n, dp, desc, angle, &f->scratch);
    if (s != GR_OK) {
      gr_set_err (errbuf, errlen, "descriptors failed (%s)", gr_status_string (s));
      return -(int) s;
    }
  }
  f->view = *img;
  st.elapsed_ms = fnow_ms () - t0;
  if (f->backend != GR_BACKEND_CUDA)
    st.kernel_ms = st.elapsed_ms;
  if (stats)
    *stats = st;
  return n;
}

int
gr_features_extract_device (GrFeatures *f, const GrPlaneF *frame,
    const GrKeypointParams *kp_params, const GrDescriptorParams *dp, GrKeypoint *kp,
    int capacity, float *desc, float *angle, GrFeatureStats *stats, char *errbuf,
    size_t errlen)
{
  const double t0 = fnow_ms ();
  GrFeatureStats st = { 0 };
  st.candidates = -1;
  if (f)
    f->kp_resp = NULL;          /* host responses are for a host extraction only */
  if (!dp) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return -GR_ERR_INVALID;
  }
  int n = check_args (f, frame, kp_params, dp, kp, capacity, desc, errbuf, errlen);
  if (n < 0)
    return n;
#if GR_HAVE_CUDA
  if (f->backend != GR_BACKEND_CUDA) {
    gr_set_err (errbuf, errlen, "a device frame needs the CUDA engine");
    return -GR_ERR_INVALID;
  }
  if (!device_detector_fits (frame, kp_params)) {
    gr_set_err (errbuf, errlen, "outside the device detector's limits (block radius <= 16, "
        "fewer than 2^31 pixels)");
    return -GR_ERR_INVALID;
  }
  GrFeaturesTables tab;
  n = cuda_tables (f, frame, dp, &tab, errbuf, errlen);
  if (n < 0)
    return n;
  const size_t npix = (size_t) frame->width * frame->height;
  if (frame->mask && (f->valid_cap < npix || !f->valid)) {
    free (f->valid);
    f->valid_cap = 0;
    f->valid = malloc (npix);
    if (!f->valid) {
      gr_set_err (errbuf, errlen, "out of memory");
      return -GR_ERR_NOMEM;
    }
    f->valid_cap = npix;
  }
  n = gr_features_cuda_extract (f->cuda, frame, true, kp_params, dp, &tab, NULL, 0,
      capacity, kp, desc, angle, f->scratch.smooth, frame->mask ? f->valid : NULL, &st,
      errbuf, errlen);
  if (n < 0)
    return n;
  f->view.data = f->scratch.smooth;
  f->view.mask = frame->mask ? f->valid : NULL;
  f->view.width = frame->width;
  f->view.height = frame->height;
  f->view.stride = (size_t) frame->width;
  st.elapsed_ms = fnow_ms () - t0;
  if (stats)
    *stats = st;
  return n;
#else
  (void) angle;
  (void) stats;
  (void) t0;
  (void) st;
  gr_set_err (errbuf, errlen, "this build has no CUDA kernels");
  return -GR_ERR_INVALID;
#endif
}

int
gr_features_detect_device (GrFeatures *f, const GrPlaneF *frame,
    const GrKeypointParams *kp_params, GrKeypoint *kp, int capacity,
    GrFeatureStats *stats, char *errbuf, size_t errlen)
{
  const double t0 = fnow_ms ();
  GrFeatureStats st = { 0 };
  st.candidates = -1;
  int n = check_args (f, frame, kp_params, NULL, kp, capacity, NULL, errbuf, errlen);
  if (n < 0)
    return n;
#if GR_HAVE_CUDA
  if (f->backend != GR_BACKEND_CUDA) {
    gr_set_err (errbuf, errlen, "a device frame needs the CUDA engine");
    return -GR_ERR_INVALID;
  }
  if (!device_detector_fits (frame, kp_params)) {
    gr_set_err (errbuf, errlen, "outside the device detector's limits (block radius <= 16, "
        "fewer than 2^31 pixels)");
    return -GR_ERR_INVALID;
  }
  n = gr_features_cuda_detect (f->cuda, frame, true, kp_params, capacity, kp, &st, errbuf,
      errlen);
  if (n < 0)
    return n;
  st.elapsed_ms = fnow_ms () - t0;
  if (stats)
    *stats = st;
  return n;
#else
  (void) stats;
  (void) t0;
  (void) st;
  gr_set_err (errbuf, errlen, "this build has no CUDA kernels");
  return -GR_ERR_INVALID;
#endif
}

/* ------------------------------------------------------------------ patches */

GrStatus
gr_descriptor_patches (const GrPlaneF *img, const GrDescriptorScratch *s,
    const GrKeypoint *kp, int n, uint8_t *patches)
{
  if (!img || !s || !s->smooth || s->cap < (size_t) img->width * img->height || n < 0 ||
      (n > 0 && (!kp || !patches)))
    return GR_ERR_INVALID;
  const int w = img->width, h = img->height;
  /* a live stream's few hundred patches a frame, beside the other streams' work
   * (threadshare.h); each patch is its keypoint's alone, whatever the team */
  const int threads = gr_thread_share_enter (0);
#pragma omp parallel for schedule (static) num_threads (threads) if (n >= 64)
  for (int i = 0; i < n; i++) {
    const int cx = (int) lrintf (kp[i].x), cy = (int) lrintf (kp[i].y);
    float lo = INFINITY, hi = -INFINITY;
    for (int v = -GR_PATCH_RADIUS; v <= GR_PATCH_RADIUS; v++)
      for (int u = -GR_PATCH_RADIUS; u <= GR_PATCH_RADIUS; u++) {
        const int x = cx + u, y = cy + v;
        if (x < 0 || y < 0 || x >= w || y >= h || !valid_at (img, x, y))
          continue;
        const float val = s->smooth[(size_t) y * w + x];
        lo = fminf (lo, val);
        hi = fmaxf (hi, val);
      }
    uint8_t *o = patches + (size_t) i * GR_PATCH_BYTES;
    const float sc = hi > lo ? 255.0f / (hi - lo) : 0.0f;
    for (int v = -GR_PATCH_RADIUS; v <= GR_PATCH_RADIUS; v++)
      for (int u = -GR_PATCH_RADIUS; u <= GR_PATCH_RADIUS; u++) {
        const int x = cx + u, y = cy + v;
        float q = 0.f;
        if (x >= 0 && y >= 0 && x < w && y < h && valid_at (img, x, y))
          q = (s->smooth[(size_t) y * w + x] - lo) * sc;
        o[(v + GR_PATCH_RADIUS) * GR_PATCH_SIDE + u + GR_PATCH_RADIUS] =
            (uint8_t) fminf (255.f, fmaxf (0.f, q + 0.5f));
      }
  }
  gr_thread_share_leave ();
  return GR_OK;
}

/* Bilinear value of a grid of `cols` columns at (fx, fy), grid coordinates; the
 * caller has checked that the cell lies inside. */
static inline double
grid_at (const float *g, int cols, double fx, double fy)
{
  const int ix = (int) fx, iy = (int) fy;      /* fx, fy >= 0: (int) is floor */
  const double ax = fx - ix, ay = fy - iy;
  const float *r0 = g + iy * cols + ix, *r1 = r0 + cols;
  return (1 - ay) * ((1 - ax) * r0[0] + ax * r0[1]) + ay * ((1 - ax) * r1[0] + ax * r1[1]);
}

#define REF_R 5
#define REF_N ((2 * REF_R + 1) * (2 * REF_R + 1))

bool
gr_patch_refine (const GrPlaneF *img, const GrDescriptorScratch *s, float ax, float ay,
    const uint8_t *patch, const GrKeypoint *pk, const double J[4], double *x, double *y,
    double *ncc)
{
  const int w = img->width, h = img->height;
  double tv[REF_N];
  int tu[REF_N][2];
  int nt = 0;
  double tm = 0;
  for (int v = -REF_R; v <= REF_R; v++)
    for (int u = -REF_R; u <= REF_R; u++) {
      if (u * u + v * v > REF_R * REF_R)
        continue;
      const float sx = ax + u, sy = ay + v;
      const float fx = floorf (sx), fy = floorf (sy);
      const int ix = (int) fx, iy = (int) fy;
      if (ix < 0 || iy < 0 || ix + 1 >= w || iy + 1 >= h)
        return false;
      const float bx = sx - fx, by = sy - fy;
      const float *r0 = s->smooth + (size_t) iy * w + ix, *r1 = r0 + w;
      if (!valid_at (img, ix, iy) || !valid_at (img, ix + 1, iy) ||
          !valid_at (img, ix, iy + 1) || !valid_at (img, ix + 1, iy + 1))
        return false;
      tv[nt] = (1 - by) * ((1 - bx) * r0[0] + bx * r0[1]) +
          by * ((1 - bx) * r1[0] + bx * r1[1]);
      tu[nt][0] = u;
      tu[nt][1] = v;
      tm += tv[nt];
      nt++;
    }
  tm /= nt;
  double ts = 0;
  for (int i = 0; i < nt; i++) {
    tv[i] -= tm;
    ts += tv[i] * tv[i];
  }
  if (ts <= 1e-9 * nt)
    return false;
  ts = sqrt (ts);
  for (int i = 0; i < nt; i++)
    tv[i] /= ts;          /* unit vector */

  /* The stored patch's value and gradient at the disc's samples.  The gradient is
   * the difference of the bilinear patch half a pixel either side, I(q + 0.5) -
   * I(q - 0.5): along x that is the linear interpolation of the forward differences
   * P[k+1] - P[k] at q - 0.5 (and likewise along y), so the value and both gradients
   * are three bilinear reads of the patch and of its two difference grids, instead of
   * five reads of the patch: about 3x less work a sample (the refinements are most
   * of featurematch's pair fits on a CPU).  Same maths as five reads, other rounding. */
  enum { S = GR_PATCH_SIDE };
  /* float: the patch is 8-bit, and float keeps the three grids small and their
   * conversion loops vectorized */
  float pv[S * S], dxg[S * (S - 1)], dyg[(S - 1) * S];
  for (int i = 0; i < S * S; i++)
    pv[i] = patch[i];
  for (int r = 0; r < S; r++)
    for (int k = 0; k < S - 1; k++)
      dxg[r * (S - 1) + k] = pv[r * S + k + 1] - pv[r * S + k];
  for (int i = 0; i < (S - 1) * S; i++)
    dyg[i] = pv[i + S] - pv[i];
  /* the samples' offsets from the estimate (fixed: J does not change), and their
   * extent, so that one test per iteration says whether every read stays inside */
  double ou[REF_N], ov[REF_N];
  double umin = INFINITY, umax = -INFINITY, vmin = INFINITY, vmax = -INFINITY;
  for (int i = 0; i < nt; i++) {
    ou[i] = J[0] * tu[i][0] + J[1] * tu[i][1] + GR_PATCH_RADIUS;
    ov[i] = J[2] * tu[i][0] + J[3] * tu[i][1] + GR_PATCH_RADIUS;
    if (!isfinite (ou[i]) || !isfinite (ov[i]))
      return false;             /* a Jacobian from a degenerate map: no position */
    umin = fmin (umin, ou[i]);
    umax = fmax (umax, ou[i]);
    vmin = fmin (vmin, ov[i]);
    vmax = fmax (vmax, ov[i]);
  }

  /* the estimate in the patch's coordinates */
  const double cx = lrintf (pk->x), cy = lrintf (pk->y);
  double px = *x - cx, py = *y - cy;
  const double px0 = px, py0 = py;
  double iv[REF_N], gxv[REF_N], gyv[REF_N];
  double c = 0;
  for (int it = 0; it < 12; it++) {
    /* every read inside: q -/+ 0.5 within [0, S - 1) along each axis (as reading the
     * patch at q and half a pixel either side needs) */
    if (!(px + umin >= 0.5 && px + umax < S - 1.5 && py + vmin >= 0.5 &&
            py + vmax < S - 1.5))
      return false;
    double im = 0;
    for (int i = 0; i < nt; i++) {
      const double fx = px + ou[i], fy = py + ov[i];
      iv[i] = grid_at (pv, S, fx, fy);
      gxv[i] = grid_at (dxg, S - 1, fx - 0.5, fy);
      gyv[i] = grid_at (dyg, S, fx, fy - 0.5);
      im += iv[i];
    }
    im /= nt;
    double is = 0;
    for (int i = 0; i < nt; i++) {
      iv[i] -= im;
      is += iv[i] * iv[i];
    }
    if (is <= 1e-9 * nt)
      return false;
    is = sqrt (is);
    /* Gauss-Newton on the shift for the residual t - n of the two unit, zero-mean
     * vectors (n = the patch's samples normalized).  Its Jacobian is the exact one of
     * the normalization: dn = (g - mean g - n (n . g)) / |v| for the gradient g of
     * the samples.  The gradient alone (leaving out the mean and the norm) made every
     * step fall short by a fixed ratio, about half of what remained, so the steps
     * shrank only linearly (6.5 iterations a refinement on average), and its fixed
     * point, where g . (t - n) = 0, is not the maximum of the NCC t . n, which is
     * where t . g = (t . n) (n . g). */
    double gmx = 0, gmy = 0, ngx = 0, ngy = 0;
    for (int i = 0; i < nt; i++) {
      iv[i] /= is;
      gmx += gxv[i];
      gmy += gyv[i];
      ngx += iv[i] * gxv[i];
      ngy += iv[i] * gyv[i];
    }
    gmx /= nt;
    gmy /= nt;
    double hxx = 0, hxy = 0, hyy = 0, bx = 0, by = 0;
    c = 0;
    for (int i = 0; i < nt; i++) {
      const double r = tv[i] - iv[i];
      const double gx = (gxv[i] - gmx - iv[i] * ngx) / is;
      const double gy = (gyv[i] - gmy - iv[i] * ngy) / is;
      c += tv[i] * iv[i];
      hxx += gx * gx;
      hxy += gx * gy;
      hyy += gy * gy;
      bx += gx * r;
      by += gy * r;
    }
    const double det = hxx * hyy - hxy * hxy;
    if (!(det > 1e-12))
      return false;
    const double dx = (hyy * bx - hxy * by) / det, dy = (hxx * by - hxy * bx) / det;
    px += dx;
    py += dy;
    if (fabs (px - px0) > 3.0 || fabs (py - py0) > 3.0)
      return false;
    /* converged: with the exact Jacobian each step leaves about a tenth of the
     * previous one, so after a step under 0.01 px what is left is about 0.001 px,
     * far below the refinement's noise (0.02 px and more); the old tolerance (0.001
     * px) cost a third iteration on most refinements */
    if (dx * dx + dy * dy < 1e-4)
      break;
  }
  *x = px + cx;
  *y = py + cy;
  if (ncc)
    *ncc = c;
  return true;
}
