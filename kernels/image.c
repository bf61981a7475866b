/* Image preparation: masked area downscaling and mapping to 256 bins.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "image.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool
gr_plane_alloc (GrPlaneF *p, int width, int height, bool with_mask)
{
  memset (p, 0, sizeof *p);
  if (width <= 0 || height <= 0)
    return false;
  const size_t n = (size_t) width * height;
  p->data = malloc (n * sizeof (float));
  p->mask = with_mask ? malloc (n) : NULL;
  if (!p->data || (with_mask && !p->mask)) {
    gr_plane_clear (p);
    return false;
  }
  if (p->mask)
    memset (p->mask, 1, n);
  p->width = width;
  p->height = height;
  p->stride = (size_t) width;
  return true;
}

void
gr_plane_clear (GrPlaneF *p)
{
  free (p->data);
  free (p->mask);
  memset (p, 0, sizeof *p);
}

size_t
gr_plane_count_valid (const GrPlaneF *p)
{
  const size_t n = (size_t) p->width * p->height;
  if (!p->mask)
    return n;
  size_t c = 0;
  for (size_t i = 0; i < n; i++)
    c += p->mask[i] != 0;
  return c;
}

bool
gr_plane_mask_value (GrPlaneF *p, double value)
{
  const size_t n = (size_t) p->width * p->height;
  if (!p->mask) {
    p->mask = malloc (n);
    if (!p->mask)
      return false;
    memset (p->mask, 1, n);
  }
  for (int y = 0; y < p->height; y++)
    for (int x = 0; x < p->width; x++)
      if (floor (p->data[(size_t) y * p->stride + x] + 0.5) == value)
        p->mask[(size_t) y * p->width + x] = 0;
  return true;
}

/* The source interval [a, b) covered by output cell i at inverse scale `inv`,
 * clipped to [0, len). */
static void
cell_span (int i, double inv, int len, double *a, double *b)
{
  *a = i * inv;
  *b = (i + 1) * inv;
  if (*b > len)
    *b = len;
}

GrStatus
gr_plane_downscale (const GrPlaneF *src, double scale, GrPlaneF *dst)
{
  if (!src || !src->data || !dst || !(scale > 0.0) || scale > 1.0)
    return GR_ERR_INVALID;
  const int ow = (int) fmax (1.0, floor (src->width * scale + 0.5));
  const int oh = (int) fmax (1.0, floor (src->height * scale + 0.5));
  const bool fits = dst->data && dst->width == ow && dst->height == oh &&
      dst->stride == (size_t) ow && (dst->mask != NULL) == (src->mask != NULL);
  if (!fits) {
    gr_plane_clear (dst);
    if (!gr_plane_alloc (dst, ow, oh, src->mask != NULL))
      return GR_ERR_NOMEM;
  }
  /* exact cell edges from the actual output size, so the whole source is covered */
  const double invx = (double) src->width / ow, invy = (double) src->height / oh;
  /* each output column's first source column and the weights of its source columns,
   * once (they are the same for every row): the same doubles the inner loop would
   * compute, so the sums are unchanged, without two fmin/fmax per source pixel */
  const int kx = (int) ceil (invx) + 2;       /* source columns a cell can touch */
  double *wxt = malloc (sizeof (double) * (size_t) ow * kx);
  int *x0t = malloc (sizeof (int) * (size_t) ow * 2);
  if (!wxt || !x0t) {
    free (wxt);
    free (x0t);
    return GR_ERR_NOMEM;
  }
  for (int ox = 0; ox < ow; ox++) {
    double xa, xb;
    cell_span (ox, invx, src->width, &xa, &xb);
    int n = 0;
    for (int sx = (int) xa; sx < xb && n < kx; sx++)
      wxt[(size_t) ox * kx + n++] = fmin (xb, sx + 1.0) - fmax (xa, (double) sx);
    x0t[2 * ox] = (int) xa;
    x0t[2 * ox + 1] = n;
  }

#pragma omp parallel for schedule (static)
  for (int oy = 0; oy < oh; oy++) {
    double ya, yb;
    cell_span (oy, invy, src->height, &ya, &yb);
    for (int ox = 0; ox < ow; ox++) {
      const int x0 = x0t[2 * ox], nx = x0t[2 * ox + 1];
      const double *wx = wxt + (size_t) ox * kx;
      double sum = 0.0, wvalid = 0.0, wall = 0.0;
      for (int sy = (int) ya; sy < yb; sy++) {
        const double wy = fmin (yb, sy + 1.0) - fmax (ya, (double) sy);
        const float *row = src->data + (size_t) sy * src->stride + x0;
        const uint8_t *mrow = src->mask ? src->mask + (size_t) sy * src->width + x0 : NULL;
        for (int k = 0; k < nx; k++) {
          const double w = wy * wx[k];
          wall += w;
          if (mrow && !mrow[k])
            continue;
          wvalid += w;
          sum += w * row[k];
        }
      }
      const size_t o = (size_t) oy * ow + ox;
      dst->data[o] = wvalid > 0.0 ? (float) (sum / wvalid) : 0.0f;
      if (dst->mask)
        dst->mask[o] = wvalid >= 0.5 * wall && wvalid > 0.0;
    }
  }
  free (wxt);
  free (x0t);
  return GR_OK;
}

static int
cmp_float (const void *a, const void *b)
{
  const float x = *(const float *) a, y = *(const float *) b;
  return (x > y) - (x < y);
}

/* The k-th smallest of v[0 .. n-1] (n > k), v reordered so that every element before
 * k is <= it and every one after is >= it: the value qsort would put at k, for values
 * without NaN.  Quickselect (median of three, Hoare partition), so a percentile costs
 * O(n) instead of a sort: the coarse search takes two percentiles of every rotated
 * template (dozens a frame).  After 64 rounds (adversarial data), the rest is sorted. */
static float
select_kth (float *v, size_t n, size_t k)
{
  size_t lo = 0, hi = n - 1;
  for (int round = 0; lo < hi; round++) {
    if (round == 64) {
      qsort (v + lo, hi - lo + 1, sizeof (float), cmp_float);
      break;
    }
    const size_t mid = lo + (hi - lo) / 2;
    const float a = v[lo], b = v[mid], c = v[hi];
    const float pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
    size_t i = lo, j = hi;
    for (;;) {
      while (v[i] < pivot)
        i++;
      while (v[j] > pivot)
        j--;
      if (i >= j)
        break;
      const float t = v[i];
      v[i] = v[j];
      v[j] = t;
      i++;
      j--;
    }
    /* v[lo .. j] <= pivot <= v[j + 1 .. hi] */
    if (k <= j)
      hi = j;
    else
      lo = j + 1;
  }
  return v[k];
}

GrStatus
gr_plane_value_range (const GrPlaneF *p, GrBinMode mode, int depth, double lo,
    double hi, double *a, double *b)
{
  switch (mode) {
    case GR_BINS_IDENTITY:
      *a = 0.0;
      *b = depth > 8 ? 65536.0 : 256.0;
      return GR_OK;
    case GR_BINS_FIXED:
      if (!(hi > lo))
        return GR_ERR_INVALID;
      *a = lo;
      *b = hi;
      return GR_OK;
    case GR_BINS_MINMAX: {
      double mn = INFINITY, mx = -INFINITY;
      if (!p->mask) {
        /* the same extremes in float, 8 lanes a row (vector min/max: a NaN is
         * skipped by the comparisons as below), widened at the end: exact */
        float lmn[8], lmx[8];
        for (int j = 0; j < 8; j++) {
          lmn[j] = INFINITY;
          lmx[j] = -INFINITY;
        }
        for (int y = 0; y < p->height; y++) {
          const float *row = p->data + (size_t) y * p->stride;
          int x = 0;
          for (; x + 8 <= p->width; x += 8)
            for (int j = 0; j < 8; j++) {
              lmn[j] = row[x + j] < lmn[j] ? row[x + j] : lmn[j];
              lmx[j] = row[x + j] > lmx[j] ? row[x + j] : lmx[j];
            }
          for (; x < p->width; x++) {
            lmn[0] = row[x] < lmn[0] ? row[x] : lmn[0];
            lmx[0] = row[x] > lmx[0] ? row[x] : lmx[0];
          }
        }
        for (int j = 0; j < 8; j++) {
          mn = lmn[j] < mn ? lmn[j] : mn;
          mx = lmx[j] > mx ? lmx[j] : mx;
        }
        *a = isfinite (mn) ? mn : 0.0;
        *b = isfinite (mx) ? mx : 0.0;
        return GR_OK;
      }
      for (int y = 0; y < p->height; y++)
        for (int x = 0; x < p->width; x++) {
          if (p->mask && !p->mask[(size_t) y * p->width + x])
            continue;
          const double v = p->data[(size_t) y * p->stride + x];
          mn = v < mn ? v : mn;
          mx = v > mx ? v : mx;
        }
      *a = isfinite (mn) ? mn : 0.0;
      *b = isfinite (mx) ? mx : 0.0;
      return GR_OK;
    }
    case GR_BINS_PERCENTILE: {
      if (!(lo >= 0.0 && hi <= 100.0 && hi > lo))
        return GR_ERR_INVALID;
      const size_t nv = gr_plane_count_valid (p);
      if (nv == 0) {
        *a = *b = 0.0;
        return GR_OK;
      }
      float *v = malloc (nv * sizeof (float));
      if (!v)
        return GR_ERR_NOMEM;
      size_t k = 0;
      bool nan = false;
      for (int y = 0; y < p->height; y++)
        for (int x = 0; x < p->width; x++)
          if (!p->mask || p->mask[(size_t) y * p->width + x]) {
            const float f = p->data[(size_t) y * p->stride + x];
            nan |= isnan (f);
            v[k++] = f;
          }
      const size_t ka = (size_t) floor (lo / 100.0 * (nv - 1) + 0.5);
      const size_t kb = (size_t) floor (hi / 100.0 * (nv - 1) + 0.5);
      if (nan) {
        /* NaN orders with nothing: the sort's order, as before */
        qsort (v, nv, sizeof (float), cmp_float);
        *a = v[ka];
        *b = v[kb];
      } else {
        /* the same two order statistics without sorting: ka's, then kb's among the
         * elements after it (all >= it, ka <= kb) */
        *a = select_kth (v, nv, ka);
        *b = select_kth (v + ka, nv - ka, kb - ka);
      }
      free (v);
      return GR_OK;
    }
  }
  return GR_ERR_INVALID;
}

GrStatus
gr_plane_to_bins (const GrPlaneF *p, GrBinMode mode, double lo, double hi, uint8_t *out)
{
  if (!p || !p->data || !out)
    return GR_ERR_INVALID;
  double a, b;
  /* 8-bit semantics: identity rounds the values themselves */
  GrStatus st = gr_plane_value_range (p, mode, 8, lo, hi, &a, &b);
  if (st != GR_OK)
    return st;
  /* 256 equal-width bins over [a, b]; b itself falls on 256 and is clamped into 255. */
  const double k = b > a ? 256.0 / (b - a) : 0.0;
  for (int y = 0; y < p->height; y++) {
    const float *row = p->data + (size_t) y * p->stride;
    for (int x = 0; x < p->width; x++) {
      const size_t i = (size_t) y * p->width + x;
      if (p->mask && !p->mask[i]) {
        out[i] = 0;
        continue;
      }
      double v = mode == GR_BINS_IDENTITY ? floor (row[x] + 0.5) : floor ((row[x] - a) * k);
      out[i] = (uint8_t) (v < 0.0 ? 0 : v > 255.0 ? 255 : v);
    }
  }
  return GR_OK;
}
