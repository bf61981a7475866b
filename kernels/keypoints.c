/* Keypoint detection (see keypoints.h): Shi-Tomasi minimum eigenvalue of the structure
 * tensor, non-maximum suppression, grid spreading, mask and margin.
 *
 * Method
 *  1. Eligibility: a pixel may become a keypoint when every pixel within
 *     R = max(margin, block_radius + 1) (Chebyshev) lies inside the image and is
 *     valid.  R >= block_radius + 1 because the corner measure at a pixel reads the
 *     gradients of its block, and a gradient reads its 4-neighbours: so a response
 *     never sees invalid data (a mask edge would otherwise look like a corner).
 *     Computed separably with sliding counts of invalid pixels.
 *  2. Response: central-difference gradients, the structure tensor summed over the
 *     (2 block_radius + 1)^2 block, lambda_min = (a + c) / 2 - sqrt(((a - c) / 2)^2
 *     + b^2).  Rows in parallel strips (horizontal box sums kept per strip).
 *  3. Candidates: eligible, response > 0 and >= min_response * (largest eligible
 *     response), and the maximum of its (2 nms_radius + 1)^2 neighbourhood; ties go
 *     to the first pixel in raster order, so a plateau gives one keypoint.
 *  4. Grid: each cell keeps its ceil(max_keypoints / cells) strongest candidates;
 *     the survivors are sorted by response (ties: raster order) and cut to
 *     min(max_keypoints, capacity).
 * Every step is a pure function of the input: the result does not depend on the
 * number of threads.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "keypoints.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

/* Speed without changing a bit (the results are defined pixel by pixel; the tests
 * compare them with that definition and the gpu suite with the CUDA detector):
 *  - sqrt without errno (kernels/meson.build builds this file with -fno-math-errno:
 *    GCC's pragma does not reach the builtin): the argument is never negative, and
 *    errno handling keeps the row loops from vectorizing (the value is the same);
 *  - the row loops also built for x86-64-v3 (AVX2, 4 doubles / 8 floats a vector),
 *    chosen at load time; -ffp-contract=off (meson.build) keeps FMA out, so each
 *    vector lane does the scalar operations. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define KP_CLONES __attribute__ ((target_clones ("arch=x86-64-v3", "default")))
#else
#define KP_CLONES
#endif
#define KP_INLINE static inline __attribute__ ((always_inline))

void
gr_keypoint_params_init (GrKeypointParams *p)
{
  p->max_keypoints = 2000;
  p->grid_cols = 8;
  p->grid_rows = 6;
  p->nms_radius = 4;
  p->margin = 5;
  p->min_response = 0.01f;
  p->block_radius = 2;
}

typedef struct {
  float r;
  int32_t x, y;
} Cand;

/* strongest first; equal responses in raster order */
static int
cand_cmp (const void *pa, const void *pb)
{
  const Cand *a = pa, *b = pb;
  if (a->r != b->r)
    return a->r > b->r ? -1 : 1;
  if (a->y != b->y)
    return a->y < b->y ? -1 : 1;
  return (a->x > b->x) - (a->x < b->x);
}

static inline float
px (const GrPlaneF *img, int x, int y)
{
  /* clamped: values outside the image are never used by an eligible pixel */
  x = x < 0 ? 0 : x >= img->width ? img->width - 1 : x;
  y = y < 0 ? 0 : y >= img->height ? img->height - 1 : y;
  return img->data[(size_t) y * img->stride + x];
}

/* ok[y*w+x] = 1 when every pixel within R of (x, y) is inside and valid (for a
 * masked image: without a mask the caller takes the rectangle R from the edges) */
static bool
eligibility (const GrPlaneF *img, int R, uint8_t *ok)
{
  const int w = img->width, h = img->height;
  uint8_t *tmp = malloc ((size_t) w * h);
  if (!tmp)
    return false;
  /* rows: pixel x is row-ok when [x-R, x+R] is inside and all valid */
#pragma omp parallel for schedule (static)
  for (int y = 0; y < h; y++) {
    uint8_t *t = tmp + (size_t) y * w;
    const uint8_t *m = img->mask ? img->mask + (size_t) y * w : NULL;
    int run = 0;                 /* valid pixels in a row ending at x */
    for (int x = 0; x < w; x++) {
      run = (!m || m[x]) ? run + 1 : 0;
      t[x] = 0;
      /* pixel x - R is row-ok when run (ending at x) covers [x - 2R, x] */
      if (x - R >= R && run >= 2 * R + 1)
        t[x - R] = 1;
    }
  }
  /* columns, over the row-ok plane */
#pragma omp parallel for schedule (static)
  for (int x = 0; x < w; x++) {
    int run = 0;
    for (int y = 0; y < h; y++) {
      run = tmp[(size_t) y * w + x] ? run + 1 : 0;
      ok[(size_t) y * w + x] = 0;
      if (y - R >= R && run >= 2 * R + 1)
        ok[(size_t) (y - R) * w + x] = 1;
    }
  }
  free (tmp);
  return true;
}

/* Gradients of row y at x = -b .. w - 1 + b (gx[x + b], gy[x + b]), read with the
 * clamping of px(): interior pixels straight from the rows, so that the loop
 * vectorizes; the values are those px() would give. */
KP_INLINE void
gradient_row (const GrPlaneF *img, int b, int y, float *gx, float *gy)
{
  const int w = img->width, h = img->height;
  const int yc = y < 0 ? 0 : y >= h ? h - 1 : y;
  const int yu = y - 1 < 0 ? 0 : y - 1 >= h ? h - 1 : y - 1;
  const int yd = y + 1 < 0 ? 0 : y + 1 >= h ? h - 1 : y + 1;
  const float *rc = img->data + (size_t) yc * img->stride;
  const float *ru = img->data + (size_t) yu * img->stride;
  const float *rd = img->data + (size_t) yd * img->stride;
  for (int x = -b; x < w + b; x++) {
    if (x >= 1 && x < w - 1)
      break;
    gx[x + b] = 0.5f * (px (img, x + 1, y) - px (img, x - 1, y));
    gy[x + b] = 0.5f * (px (img, x, y + 1) - px (img, x, y - 1));
  }
  /* interior: x and its neighbours inside the row; the row itself clamped above
   * (px clamps y the same way for every x) */
  for (int x = 1; x < w - 1; x++) {
    gx[x + b] = 0.5f * (rc[x + 1] - rc[x - 1]);
    gy[x + b] = 0.5f * (rd[x] - ru[x]);
  }
  for (int x = w - 1 > 1 ? w - 1 : 1; x < w + b; x++) {
    gx[x + b] = 0.5f * (px (img, x + 1, y) - px (img, x - 1, y));
    gy[x + b] = 0.5f * (px (img, x, y + 1) - px (img, x, y - 1));
  }
}

/* out[x] = p[x] + p[x + 1] + ... + p[x + 2b], added in that order from 0 */
KP_INLINE void
box_row (const float *restrict p, int b, int w, float *restrict out)
{
  for (int x = 0; x < w; x++)
    out[x] = 0.0f;
  for (int k = 0; k <= 2 * b; k++)
    for (int x = 0; x < w; x++)
      out[x] += p[x + k];
}

/* out[x] = the column sum of rows 0 .. 2b (stride w) from row 0 down, in double */
KP_INLINE void
box_col (const float *restrict rows, int b, int w, double *restrict out)
{
  for (int x = 0; x < w; x++)
    out[x] = 0.0;
  for (int k = 0; k <= 2 * b; k++) {
    const float *restrict r = rows + (size_t) k * w;
    for (int x = 0; x < w; x++)
      out[x] += r[x];
  }
}

/* the smaller eigenvalue of [[a b] [b c]] where eligible and positive, else 0;
 * eligible: ok[x] when there is a mask, else xa <= x < xb (ok NULL).  In separate
 * passes over l (w doubles of scratch): GCC vectorizes neither a sqrt nor a
 * conversion in a loop with a select, and each pass alone it does. */
KP_INLINE void
min_eig_row (const double *restrict a, const double *restrict b,
    const double *restrict c, const uint8_t *restrict ok, int xa, int xb, int w,
    double *restrict l, float *restrict out)
{
  if (ok) {
    xa = 0;
    xb = w;
  }
  for (int x = 0; x < xa; x++)
    out[x] = 0.0f;
  for (int x = xa; x < xb; x++) {
    const double half = 0.5 * (a[x] - c[x]);
    l[x] = 0.5 * (a[x] + c[x]) - sqrt (half * half + b[x] * b[x]);
  }
  for (int x = xa; x < xb; x++)
    l[x] = l[x] > 0.0 ? l[x] : 0.0;
  for (int x = xa; x < xb; x++)
    out[x] = (float) l[x];
  if (ok)
    for (int x = 0; x < w; x++)
      out[x] = ok[x] ? out[x] : 0.0f;
  for (int x = xb > xa ? xb : xa; x < w; x++)
    out[x] = 0.0f;
}

/* Scratch floats response_strip needs per thread for strips of `strip` rows. */
static size_t
strip_scratch_floats (int w, int b, int strip)
{
  return 3 * (size_t) (strip + 2 * b) * w + 5 * (size_t) (w + 2 * b) + 8 * (size_t) w;
}

/* Shi-Tomasi responses of the rows [y0, y1) into resp (0 where not eligible:
 * ok[] with a mask, else outside columns [xa, xb) with ok NULL).
 * Each gradient is computed once per pixel (not once per box tap), and every loop
 * runs along x so that it vectorizes; each pixel's sums still add the same terms in
 * the same order (taps -b .. b, then rows top to bottom), so the responses are the
 * same floats as a per-pixel evaluation gives (and as the CUDA detector's). */
KP_CLONES static void
response_strip (const GrPlaneF *img, int b, const uint8_t *ok, int xa, int xb, int y0,
    int y1, float *hs, float *resp)
{
  const int w = img->width;
  const int nrows = y1 - y0 + 2 * b;
  const size_t wb = (size_t) w + 2 * b;
  /* the doubles first (malloc alignment), then the floats */
  double *da = (double *) hs, *db = da + w, *dc = db + w, *dl = dc + w;
  float *sxx = (float *) (dl + w), *sxy = sxx + (size_t) nrows * w,
      *syy = sxy + (size_t) nrows * w;
  float *gx = syy + (size_t) nrows * w, *gy = gx + wb;
  float *pxx = gy + wb, *pxy = pxx + wb, *pyy = pxy + wb;
  /* horizontal box sums of the gradient products, rows y0 - b .. y1 + b - 1 */
  for (int r = 0; r < nrows; r++) {
    const int y = y0 - b + r;
    float *rxx = sxx + (size_t) r * w, *rxy = sxy + (size_t) r * w, *ryy = syy + (size_t) r * w;
    gradient_row (img, b, y, gx, gy);
    for (size_t i = 0; i < wb; i++) {
      pxx[i] = gx[i] * gx[i];
      pxy[i] = gx[i] * gy[i];
      pyy[i] = gy[i] * gy[i];
    }
    box_row (pxx, b, w, rxx);
    box_row (pxy, b, w, rxy);
    box_row (pyy, b, w, ryy);
  }
  for (int y = y0; y < y1; y++) {
    const int r0 = y - y0;     /* rows r0 .. r0 + 2b of the strip buffers */
    float *out = resp + (size_t) y * w;
    const uint8_t *o = ok ? ok + (size_t) y * w : NULL;
    box_col (sxx + (size_t) r0 * w, b, w, da);
    box_col (sxy + (size_t) r0 * w, b, w, db);
    box_col (syy + (size_t) r0 * w, b, w, dc);
    min_eig_row (da, db, dc, o, xa, xb, w, dl, out);
  }
}

/* the largest of n responses (>= 0, never NaN), 0 when none is positive: in 8 lanes,
 * which GCC turns into vector max instructions (a max is the same in any order) */
KP_CLONES static float
row_max (const float *restrict r, int n)
{
  float m[8] = { 0 };
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++)
      m[j] = r[i + j] > m[j] ? r[i + j] : m[j];
  float best = 0.0f;
  for (; i < n; i++)
    best = r[i] > best ? r[i] : best;
  for (int j = 0; j < 8; j++)
    best = m[j] > best ? m[j] : best;
  return best;
}

/* whether a neighbour (xx, yy) of (x, y) beats a response v there: larger, or equal
 * and earlier in raster order */
static inline bool
beats (float u, float v, int xx, int yy, int x, int y)
{
  return u > v || (u == v && (yy < y || (yy == y && xx < x)));
}

/* whether (x, y) beats every neighbour of its (2 rad + 1)^2 window (clipped to the
 * image): beats() spelt out per row, an earlier neighbour must be smaller and a later
 * one not larger (responses are never NaN: min_eig_row maps NaN to 0).  The rows
 * nearest first (a pixel that loses, loses mostly there), each row's test without
 * branches, a return after each. */
KP_INLINE bool
is_nms_max (const float *resp, int w, int h, int x, int y, int rad)
{
  const float *c = resp + (size_t) y * w;
  const float v = c[x];
  const int xa = x - rad < 0 ? 0 : x - rad, xb = x + rad >= w ? w - 1 : x + rad;
  bool lose = false;
  for (int xx = xa; xx < x; xx++)
    lose |= c[xx] >= v;
  for (int xx = x + 1; xx <= xb; xx++)
    lose |= c[xx] > v;
  for (int d = 1; d <= rad && !lose; d++) {
    if (y - d >= 0) {
      const float *r = c - (size_t) d * w;
      for (int xx = xa; xx <= xb; xx++)
        lose |= r[xx] >= v;
    }
    if (y + d < h) {
      const float *r = c + (size_t) d * w;
      for (int xx = xa; xx <= xb; xx++)
        lose |= r[xx] > v;
    }
  }
  return !lose;
}

/* cand[x - xa] for the pixels xa <= x < xb of row y (1 <= y < h - 1, 1 <= xa,
 * xb <= w - 1): 1 when the response is > 0, >= thr and beats its 8 neighbours
 * (beats(): an earlier neighbour must be smaller, a later one not larger).  On a
 * smooth response most pixels lose to a neighbour, so this settles them; it runs
 * along the row with no branches, so it vectorizes. */
KP_INLINE void
nms_row (const float *restrict resp, int w, int y, int xa, int xb, float thr,
    uint8_t *restrict cand)
{
  const float *u = resp + (size_t) (y - 1) * w, *c = resp + (size_t) y * w,
      *d = resp + (size_t) (y + 1) * w;
  for (int x = xa; x < xb; x++) {
    const float v = c[x];
    cand[x - xa] = (v > 0.0f) & (v >= thr) & (v > u[x - 1]) & (v > u[x]) &
        (v > u[x + 1]) & (v > c[x - 1]) & (v >= c[x + 1]) & (v >= d[x - 1]) &
        (v >= d[x]) & (v >= d[x + 1]);
  }
}

/* The NMS candidates of the cell [xa, xb) x [ya, yb) into *c (grown as needed, *cap
 * entries), in raster order; their count, or -1 out of memory.  Pixels on the image's
 * border never qualify: their response is 0 (eligibility keeps R >= 2 from it). */
KP_CLONES static int
cell_candidates (const float *resp, int w, int h, int xa, int xb, int ya, int yb,
    float thr, int rad, uint8_t *row, Cand **c, int *cap)
{
  int nc = 0;
  xa = xa < 1 ? 1 : xa;
  xb = xb > w - 1 ? w - 1 : xb;
  ya = ya < 1 ? 1 : ya;
  yb = yb > h - 1 ? h - 1 : yb;
  const int n = xb - xa;
  if (n <= 0)
    return 0;
  /* the row's flags padded to whole 8-byte words */
  memset (row + n, 0, 8);
  for (int y = ya; y < yb; y++) {
    nms_row (resp, w, y, xa, xb, thr, row);
    /* most pixels fail the pre-check (about 95% on a textured 1080p frame): the
     * flags 8 at a time, and within a word only the set ones, in raster order */
    for (int i = 0; i < n; i += 8) {
      uint64_t word;
      memcpy (&word, row + i, 8);
      while (word) {
        /* the set byte at the lowest address: the leftmost pixel left */
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        const int k = __builtin_ctzll (word) >> 3;
        word &= ~((uint64_t) 0xff << (8 * k));
#else
        int k = 0;
        while (!row[i + k])
          k++;
        row[i + k] = 0;
        memcpy (&word, row + i, 8);
#endif
        const int x = xa + i + k;
        if (!is_nms_max (resp, w, h, x, y, rad))
          continue;
        if (nc == *cap) {
          Cand *g = realloc (*c, sizeof (Cand) * (size_t) *cap * 2);
          if (!g)
            return -1;
          *c = g;
          *cap *= 2;
        }
        (*c)[nc++] = (Cand) { resp[(size_t) y * w + x], x, y };
      }
    }
  }
  return nc;
}

/* Responses of the rows [ya, yb) into resp (0 where not eligible: ok[] with a mask,
 * else outside columns [R, w - R)); the other rows are the caller's.  false out of
 * memory. */
static bool
compute_responses (const GrPlaneF *img, int b, const uint8_t *ok, int R, int ya, int yb,
    float *resp)
{
  const int w = img->width;
  /* strips of rows, in parallel */
  const int strip = 32;
  const int nstrips = (yb - ya + strip - 1) / strip;
  bool oom = false;
#pragma omp parallel
  {
    float *hs = malloc (sizeof (float) * strip_scratch_floats (w, b, strip));
    if (!hs) {
#pragma omp atomic write
      oom = true;
    }
#pragma omp for schedule (dynamic, 1)
    for (int s = 0; s < nstrips; s++) {
      const int y0 = ya + s * strip, y1 = y0 + strip < yb ? y0 + strip : yb;
      if (hs)
        response_strip (img, b, ok, R, w - R, y0, y1, hs, resp);
    }
    free (hs);
  }
  return !oom;
}

int
gr_keypoints_responses (const GrPlaneF *img, int block_radius, float *resp)
{
  if (!img || !img->data || !resp || img->width <= 0 || img->height <= 0 ||
      img->stride < (size_t) img->width || block_radius < 1)
    return -GR_ERR_INVALID;
  const int w = img->width, h = img->height, R = block_radius + 1;
  if (2 * R + 1 > w || 2 * R + 1 > h) {
    memset (resp, 0, sizeof (float) * (size_t) w * h);
    return 0;
  }
  memset (resp, 0, sizeof (float) * (size_t) R * w);
  memset (resp + (size_t) (h - R) * w, 0, sizeof (float) * (size_t) R * w);
  /* the mask is not read: eligibility is each detection's (gr_keypoints_detect_with) */
  GrPlaneF nomask = *img;
  nomask.mask = NULL;
  return compute_responses (&nomask, block_radius, NULL, R, R, h - R, resp) ? 0 :
      -GR_ERR_NOMEM;
}

/* resp = the responses `raw` (gr_keypoints_responses) where eligible, else 0 */
KP_CLONES static void
eligible_responses (const float *restrict raw, const uint8_t *restrict ok, int w, int h,
    int R, float *restrict resp)
{
#pragma omp parallel for schedule (static)
  for (int y = 0; y < h; y++) {
    const float *r = raw + (size_t) y * w;
    float *o = resp + (size_t) y * w;
    if (ok) {
      const uint8_t *e = ok + (size_t) y * w;
      for (int x = 0; x < w; x++)
        o[x] = e[x] ? r[x] : 0.0f;
    } else if (y < R || y >= h - R) {
      memset (o, 0, sizeof (float) * w);
    } else {
      memset (o, 0, sizeof (float) * R);
      memcpy (o + R, r + R, sizeof (float) * (w - 2 * R));
      memset (o + w - R, 0, sizeof (float) * R);
    }
  }
}

int
gr_keypoints_detect (const GrPlaneF *img, const GrKeypointParams *params,
    GrKeypoint *out, int capacity)
{
  return gr_keypoints_detect_with (img, params, NULL, out, capacity);
}

int
gr_keypoints_detect_with (const GrPlaneF *img, const GrKeypointParams *params,
    const float *responses, GrKeypoint *out, int capacity)
{
  if (!img || !img->data || !params || img->width <= 0 || img->height <= 0 ||
      img->stride < (size_t) img->width || capacity < 0 || (capacity > 0 && !out))
    return -GR_ERR_INVALID;
  const GrKeypointParams *p = params;
  if (p->max_keypoints <= 0 || p->grid_cols <= 0 || p->grid_rows <= 0 ||
      p->nms_radius < 1 || p->margin < 0 || p->block_radius < 1 ||
      !(p->min_response >= 0.0f && p->min_response <= 1.0f))
    return -GR_ERR_INVALID;
  if (capacity == 0)
    return 0;
  const int w = img->width, h = img->height;
  const int b = p->block_radius;
  const int R = p->margin > b + 1 ? p->margin : b + 1;
  if (2 * R + 1 > w || 2 * R + 1 > h)
    return 0;                    /* no pixel can be far enough from the edges */

  const size_t npix = (size_t) w * h;
  /* without a mask the eligible pixels are those at least R from every edge: no
   * eligibility plane, and the rows outside [R, h - R) need no response at all */
  uint8_t *ok = img->mask ? malloc (npix) : NULL;
  float *resp = malloc (npix * sizeof (float));
  if ((img->mask && !ok) || !resp || (ok && !eligibility (img, R, ok))) {
    free (ok);
    free (resp);
    return -GR_ERR_NOMEM;
  }
  const int ya = ok ? 0 : R, yb = ok ? h : h - R;
  bool mem_ok = true, oom = false;
  if (responses) {
    /* computed once for the frame: the same floats at every eligible pixel (R >=
     * block_radius + 1, where they were made) */
    eligible_responses (responses, ok, w, h, R, resp);
  } else {
    if (!ok) {
      memset (resp, 0, sizeof (float) * (size_t) R * w);
      memset (resp + (size_t) (h - R) * w, 0, sizeof (float) * (size_t) R * w);
    }
    mem_ok = compute_responses (img, b, ok, R, ya, yb, resp);
  }
  if (!mem_ok) {
    free (ok);
    free (resp);
    return -GR_ERR_NOMEM;
  }

  float rmax = 0.0f;
#pragma omp parallel for reduction (max:rmax) schedule (static)
  for (int y = ya; y < yb; y++) {
    const float m = row_max (resp + (size_t) y * w, w);
    rmax = m > rmax ? m : rmax;
  }
  if (!(rmax > 0.0f)) {
    free (ok);
    free (resp);
    return 0;                    /* flat or wholly masked */
  }
  const float thr = p->min_response * rmax;

  /* per grid cell: NMS candidates, strongest `quota` kept */
  const int ncells = p->grid_cols * p->grid_rows;
  const int quota = (p->max_keypoints + ncells - 1) / ncells;
  Cand *kept = malloc (sizeof (Cand) * (size_t) ncells * quota);
  int *nkept = calloc ((size_t) ncells, sizeof (int));
  if (!kept || !nkept) {
    free (ok);
    free (resp);
    free (kept);
    free (nkept);
    return -GR_ERR_NOMEM;
  }
#pragma omp parallel
  {
    int cap = 256;
    Cand *c = malloc (sizeof (Cand) * cap);
    uint8_t *row = malloc ((size_t) w + 8);     /* + a word of padding */
    if (!c || !row) {
#pragma omp atomic write
      oom = true;
    }
#pragma omp for schedule (dynamic, 1)
    for (int cell = 0; cell < ncells; cell++) {
      if (!c || !row)
        continue;
      const int gx = cell % p->grid_cols, gy = cell / p->grid_cols;
      const int xa = (int) ((long) gx * w / p->grid_cols);
      const int xb = (int) ((long) (gx + 1) * w / p->grid_cols);
      const int ya = (int) ((long) gy * h / p->grid_rows);
      const int yb = (int) ((long) (gy + 1) * h / p->grid_rows);
      const int nc = cell_candidates (resp, w, h, xa, xb, ya, yb, thr, p->nms_radius,
          row, &c, &cap);
      if (nc < 0) {
#pragma omp atomic write
        oom = true;
        continue;
      }
      qsort (c, (size_t) nc, sizeof (Cand), cand_cmp);
      nkept[cell] = nc < quota ? nc : quota;
      memcpy (kept + (size_t) cell * quota, c, sizeof (Cand) * nkept[cell]);
    }
    free (c);
    free (row);
  }
  free (ok);
  free (resp);
  if (oom) {
    free (kept);
    free (nkept);
    return -GR_ERR_NOMEM;
  }
  /* pack, sort, cut */
  int total = 0;
  for (int cell = 0; cell < ncells; cell++) {
    memmove (kept + total, kept + (size_t) cell * quota, sizeof (Cand) * nkept[cell]);
    total += nkept[cell];
  }
  qsort (kept, (size_t) total, sizeof (Cand), cand_cmp);
  int n = total < p->max_keypoints ? total : p->max_keypoints;
  if (n > capacity)
    n = capacity;
  for (int i = 0; i < n; i++)
    out[i] = (GrKeypoint) { (float) kept[i].x, (float) kept[i].y, kept[i].r };
  free (kept);
  free (nkept);
  return n;
}
