/* Image preparation: masked area downscaling and the mapping to 256 bins.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "test_check.h"

static void
test_downscale_means_and_masks (void)
{
  GrPlaneF src, dst = { 0 };
  gr_plane_alloc (&src, 8, 6, true);
  for (int i = 0; i < 48; i++)
    src.data[i] = (float) i;
  /* 2x2 cell (0,0) covers 0,1,8,9: mask out 9 -> mean of 0,1,8 = 3, still valid */
  src.mask[9] = 0;
  /* cell (1,0) covers 2,3,10,11: mask out three -> invalid */
  src.mask[2] = src.mask[3] = src.mask[10] = 0;
  CHECK (gr_plane_downscale (&src, 0.5, &dst) == GR_OK, "downscale");
  CHECK (dst.width == 4 && dst.height == 3, "size %dx%d", dst.width, dst.height);
  CHECK (fabsf (dst.data[0] - 3.0f) < 1e-6f && dst.mask[0], "cell 0: %g %d", dst.data[0], dst.mask[0]);
  CHECK (!dst.mask[1], "cell 1 has 1/4 valid: must be invalid");
  CHECK (fabsf (dst.data[5] - (18 + 19 + 26 + 27) / 4.0f) < 1e-5f, "cell (1,1): %g", dst.data[5]);
  /* the same call again reuses the buffers */
  float *before = dst.data;
  CHECK (gr_plane_downscale (&src, 0.5, &dst) == GR_OK && dst.data == before, "reuse");

  /* a non-integer factor keeps the mean of a constant plane and covers everything */
  GrPlaneF c, cd = { 0 };
  gr_plane_alloc (&c, 101, 37, false);
  for (int i = 0; i < 101 * 37; i++)
    c.data[i] = 7.25f;
  CHECK (gr_plane_downscale (&c, 0.13, &cd) == GR_OK, "downscale 0.13");
  CHECK (cd.width == 13 && cd.height == 5 && cd.mask == NULL, "size %dx%d", cd.width, cd.height);
  for (int i = 0; i < cd.width * cd.height; i++)
    CHECK (fabsf (cd.data[i] - 7.25f) < 1e-5f, "constant: %g", cd.data[i]);
  CHECK (gr_plane_downscale (&c, 1.5, &cd) == GR_ERR_INVALID, "scale > 1 refused");
  CHECK (gr_plane_downscale (&c, 0.0, &cd) == GR_ERR_INVALID, "scale 0 refused");
  gr_plane_clear (&c);
  gr_plane_clear (&cd);
  gr_plane_clear (&src);
  gr_plane_clear (&dst);
}

/* gr_plane_downscale against its definition written out (every source pixel's
 * weight from the cell edges, in the same order): the same floats and validity, bit
 * for bit, at factors that cut pixels into fractions, with a mask and without, and
 * at a stride wider than the width.  The CUDA downscale (frame_cuda.cu) is held to
 * the same values. */
static void reference_downscale (const GrPlaneF * src, double scale, GrPlaneF * dst);

static void
test_downscale_definition (void)
{
  const double scales[] = { 0.05, 0.13, 0.25, 0.5, 0.77, 1.0 };
  for (int m = 0; m < 2; m++)
    for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
      const int w = 211, h = 97, stride = 223;
      GrPlaneF src = { 0 }, dst = { 0 };
      gr_plane_alloc (&src, w, h, m == 1);
      float *wide = malloc (sizeof (float) * stride * h);
      uint32_t r = 12345u + (uint32_t) k;
      for (int i = 0; i < stride * h; i++) {
        r = r * 1664525u + 1013904223u;
        wide[i] = (float) (r >> 8) / 65536.0f;
      }
      src.data = realloc (src.data, sizeof (float) * stride * h);
      memcpy (src.data, wide, sizeof (float) * stride * h);
      src.stride = stride;
      if (src.mask)
        for (int i = 0; i < w * h; i++)
          src.mask[i] = (i * 7 % 11) != 0 && !(i % w > 150 && i / w < 20);
      CHECK (gr_plane_downscale (&src, scales[k], &dst) == GR_OK, "downscale %g",
          scales[k]);
      const int ow = (int) fmax (1.0, floor (w * scales[k] + 0.5));
      const int oh = (int) fmax (1.0, floor (h * scales[k] + 0.5));
      CHECK (dst.width == ow && dst.height == oh, "size");
      GrPlaneF want = { 0 };
      reference_downscale (&src, scales[k], &want);
      int differ = 0;
      for (size_t o = 0; o < (size_t) ow * oh; o++) {
        differ += memcmp (&want.data[o], &dst.data[o], sizeof (float)) != 0;
        if (src.mask)
          differ += dst.mask[o] != want.mask[o];
      }
      gr_plane_clear (&want);
      CHECK (differ == 0, "downscale %g (mask %d): %d cells differ from the definition",
          scales[k], m, differ);
      free (wide);
      gr_plane_clear (&src);
      gr_plane_clear (&dst);
    }
}

/* min-max value range without a mask (8 float lanes) against the plain scan, with
 * widths that leave a remainder, a NaN (skipped) and an infinity (range 0 there, as
 * the scan gives) */
static void
test_minmax_range (void)
{
  const int widths[] = { 1, 7, 8, 13, 64, 101 };
  for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++)
    for (int special = 0; special < 3; special++) {
      const int w = widths[k], h = 5, stride = w + 3;
      GrPlaneF p = { 0 };
      p.width = w;
      p.height = h;
      p.stride = stride;
      p.data = malloc (sizeof (float) * stride * h);
      uint32_t r = 777u + (uint32_t) k;
      for (int i = 0; i < stride * h; i++) {
        r = r * 1664525u + 1013904223u;
        /* the padding holds extremes that must not count */
        p.data[i] = i % stride >= w ? 1e30f : (float) (r >> 8) / 4096.0f - 1000.0f;
      }
      if (special == 1)
        p.data[(h - 1) * stride + w - 1] = NAN;
      if (special == 2)
        p.data[w / 2] = INFINITY;
      double mn = INFINITY, mx = -INFINITY;
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
          const double v = p.data[(size_t) y * stride + x];
          mn = v < mn ? v : mn;
          mx = v > mx ? v : mx;
        }
      const double wa = isfinite (mn) ? mn : 0.0, wb = isfinite (mx) ? mx : 0.0;
      double a = -1, b = -1;
      CHECK (gr_plane_value_range (&p, GR_BINS_MINMAX, 8, 0, 0, &a, &b) == GR_OK &&
          a == wa && b == wb, "min-max width %d case %d: %g %g, want %g %g", w, special,
          a, b, wa, wb);
      free (p.data);
    }
}

static void
test_bins (void)
{
  GrPlaneF p;
  gr_plane_alloc (&p, 5, 1, true);
  const float v[5] = { 1000, 2000, 3000, 65535, 0 };
  memcpy (p.data, v, sizeof v);
  p.mask[4] = 0;                              /* the 0 is nodata: not in min-max */
  uint8_t out[5];
  CHECK (gr_plane_to_bins (&p, GR_BINS_MINMAX, 0, 0, out) == GR_OK, "minmax");
  CHECK (out[0] == 0 && out[3] == 255 && out[4] == 0, "minmax ends %d %d", out[0], out[3]);
  CHECK (out[1] == (int) floor ((2000.0 - 1000) / (64535.0) * 256), "minmax mid %d", out[1]);
  CHECK (gr_plane_to_bins (&p, GR_BINS_FIXED, 1000, 3000, out) == GR_OK, "fixed");
  CHECK (out[0] == 0 && out[1] == 128 && out[2] == 255 && out[3] == 255, "fixed %d %d %d %d",
      out[0], out[1], out[2], out[3]);
  CHECK (gr_plane_to_bins (&p, GR_BINS_FIXED, 5, 5, out) == GR_ERR_INVALID, "empty range");
  CHECK (gr_plane_to_bins (&p, GR_BINS_PERCENTILE, 50, 40, out) == GR_ERR_INVALID, "bad pct");
  gr_plane_clear (&p);

  /* percentile clipping: 1000 values 0..999 plus one wild outlier */
  GrPlaneF q;
  gr_plane_alloc (&q, 1001, 1, false);
  for (int i = 0; i < 1000; i++)
    q.data[i] = (float) i;
  q.data[1000] = 1e6f;
  uint8_t *o = malloc (1001);
  CHECK (gr_plane_to_bins (&q, GR_BINS_PERCENTILE, 0, 99, o) == GR_OK, "pct");
  CHECK (o[500] > 120 && o[500] < 135, "outlier clipped: mid bin %d", o[500]);
  CHECK (o[1000] == 255, "outlier clamps to 255");
  CHECK (gr_plane_to_bins (&q, GR_BINS_MINMAX, 0, 0, o) == GR_OK && o[999] == 0,
      "min-max is dominated by the outlier (why percentile exists)");
  /* identity: 8-bit values keep their value */
  for (int i = 0; i < 1001; i++)
    q.data[i] = (float) (i % 256);
  CHECK (gr_plane_to_bins (&q, GR_BINS_IDENTITY, 0, 0, o) == GR_OK, "identity");
  for (int i = 0; i < 1001; i++)
    CHECK (o[i] == i % 256, "identity %d -> %d", i % 256, o[i]);
  free (o);
  gr_plane_clear (&q);
}

/* The area downscale as the plain definition: every source pixel's overlap with its
 * output cell, weights summed in source order (rows, then columns).  The kernel takes
 * each column's weights from a table made once a call and must give these values bit
 * for bit: the coarse search's grey levels, hence its
 * results, must not move by a rounding. */
static void
reference_downscale (const GrPlaneF * src, double scale, GrPlaneF * dst)
{
  const int ow = (int) fmax (1.0, floor (src->width * scale + 0.5));
  const int oh = (int) fmax (1.0, floor (src->height * scale + 0.5));
  gr_plane_alloc (dst, ow, oh, src->mask != NULL);
  const double invx = (double) src->width / ow, invy = (double) src->height / oh;
  for (int oy = 0; oy < oh; oy++) {
    const double ya = oy * invy, yb = fmin ((oy + 1) * invy, src->height);
    for (int ox = 0; ox < ow; ox++) {
      const double xa = ox * invx, xb = fmin ((ox + 1) * invx, src->width);
      double sum = 0.0, wvalid = 0.0, wall = 0.0;
      for (int sy = (int) ya; sy < yb; sy++) {
        const double wy = fmin (yb, sy + 1.0) - fmax (ya, (double) sy);
        for (int sx = (int) xa; sx < xb; sx++) {
          const double w = wy * (fmin (xb, sx + 1.0) - fmax (xa, (double) sx));
          wall += w;
          if (src->mask && !src->mask[(size_t) sy * src->width + sx])
            continue;
          wvalid += w;
          sum += w * src->data[(size_t) sy * src->stride + sx];
        }
      }
      const size_t o = (size_t) oy * ow + ox;
      dst->data[o] = wvalid > 0.0 ? (float) (sum / wvalid) : 0.0f;
      if (dst->mask)
        dst->mask[o] = wvalid >= 0.5 * wall && wvalid > 0.0;
    }
  }
}

static void
test_downscale_bit_exact (void)
{
  srand (7);
  int differ = 0;
  const int cases = 200;
  for (int t = 0; t < cases; t++) {
    const int w = 1 + rand () % 600, h = 1 + rand () % 400;
    const bool masked = t % 2;
    GrPlaneF src, got = { 0 }, want;
    gr_plane_alloc (&src, w, h, masked);
    for (size_t i = 0; i < (size_t) w * h; i++) {
      src.data[i] = (float) (rand () % 100000) / 37.0f;
      if (masked)
        src.mask[i] = rand () % 5 != 0;
    }
    /* scales from 1/1000 to 1, and the pose path's ~1/80 and ~1/30 */
    const double scale = t < 4 ? (t < 2 ? 0.0125 : 0.0333) : (rand () % 1000 + 1) / 1000.0;
    CHECK (gr_plane_downscale (&src, scale, &got) == GR_OK, "downscale %g", scale);
    reference_downscale (&src, scale, &want);
    const size_t n = (size_t) want.width * want.height;
    if (got.width != want.width || got.height != want.height ||
        memcmp (got.data, want.data, n * sizeof (float)) ||
        (masked && memcmp (got.mask, want.mask, n)))
      differ++;
    gr_plane_clear (&src);
    gr_plane_clear (&got);
    gr_plane_clear (&want);
  }
  CHECK (differ == 0, "%d of %d downscales differ from the plain definition", differ,
      cases);
}

static int
cmp_f (const void *a, const void *b)
{
  const float x = *(const float *) a, y = *(const float *) b;
  return (x > y) - (x < y);
}

/* Percentile ranges are two order statistics of the valid values: the kernel selects
 * them without sorting and must give the sorted array's values, exactly (few distinct
 * values, many, masks, one value). */
static void
test_percentile_exact (void)
{
  srand (11);
  int differ = 0;
  const int cases = 300;
  for (int t = 0; t < cases; t++) {
    const int w = 1 + rand () % 150, h = 1 + rand () % 120;
    const int distinct = t % 3 == 0 ? 1 + rand () % 4 : 1 + rand () % 100000;
    GrPlaneF p;
    gr_plane_alloc (&p, w, h, t % 2);
    for (size_t i = 0; i < (size_t) w * h; i++) {
      p.data[i] = (float) (rand () % distinct) * 0.37f;
      if (p.mask)
        p.mask[i] = rand () % 4 != 0;
    }
    const double lo = (rand () % 500) / 10.0, hi = lo + 0.1 + (rand () % 500) / 10.0;
    double a, b;
    CHECK (gr_plane_value_range (&p, GR_BINS_PERCENTILE, 8, lo, hi, &a, &b) == GR_OK,
        "percentile %g %g", lo, hi);
    float *v = malloc (sizeof (float) * (size_t) w * h);
    size_t n = 0;
    for (size_t i = 0; i < (size_t) w * h; i++)
      if (!p.mask || p.mask[i])
        v[n++] = p.data[i];
    double wa = 0.0, wb = 0.0;
    if (n > 0) {
      qsort (v, n, sizeof (float), cmp_f);
      wa = v[(size_t) floor (lo / 100.0 * (n - 1) + 0.5)];
      wb = v[(size_t) floor (hi / 100.0 * (n - 1) + 0.5)];
    }
    differ += a != wa || b != wb;
    free (v);
    gr_plane_clear (&p);
  }
  CHECK (differ == 0, "%d of %d percentile ranges differ from the sorted values", differ,
      cases);
}

int
main (void)
{
  test_downscale_means_and_masks ();
  test_downscale_bit_exact ();
  test_percentile_exact ();
  test_downscale_definition ();
  test_minmax_range ();
  test_bins ();
  return CHECK_DONE ();
}
