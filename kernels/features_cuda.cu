/* Keypoints and descriptors of a frame on the device: the CUDA half of
 * gr_features_extract (descriptors.h).  It mirrors kernels/keypoints.c and
 * kernels/descriptors.c operation by operation, so that the keypoints equal the CPU's.
 *
 * Exactness
 *  Every floating-point step before the orientation is written with explicit IEEE
 *  intrinsics (__fadd_rn, __fmul_rn, __dadd_rn, ...) in the CPU's evaluation order:
 *  nvcc would otherwise contract a * b + c into one fused multiply-add, which the CPU
 *  build (x86-64 baseline, no FMA) never does.  Divisions and square roots are IEEE
 *  (nvcc's defaults, no fast math).  The weight tables come from descriptors.c.  So the
 *  responses, the threshold, the smoothed image, the gradients and the sub-pixel
 *  positions are bit-identical to the CPU's; the only differences come from atan2f,
 *  sinf and cosf (the device's differ from the C library's by an ulp or two), which
 *  enter the orientation and the descriptor.  Sums into histogram bins and descriptor
 *  entries keep the CPU's order too (the sample order of the disc), so a descriptor
 *  differs from the CPU's by 1e-5 at most (measured), and the result does not depend
 *  on scheduling.
 *
 * Detection (gr_keypoints_detect)
 *  1. eligibility: every pixel within R = max(margin, block_radius + 1) inside and
 *     valid: a row pass and a column pass over the mask (without a mask: a border
 *     test in the response kernel).
 *  2. responses: a 32 x 8 tile per CTA with its halo in shared memory: horizontal box
 *     sums of the gradient products in float (the CPU's order), then the vertical sums
 *     in double and lambda_min; the largest response by an integer atomicMax (the
 *     responses are >= 0, so their bit patterns order like the values).
 *  3. non-maximum suppression (the CPU's predicate: ties go to the first pixel in
 *     raster order) and the threshold; each candidate is appended to its grid cell's
 *     bucket as a 64-bit key ((0x7fffffff - response bits) << 32 | y * w + x): ascending
 *     keys = the CPU's order (strongest first, ties in raster order), and keys are
 *     unique, so no tie is left to chance.  A bucket cannot overflow: two maxima are
 *     more than nms_radius apart (Chebyshev), so a cell of cw x ch pixels holds at
 *     most ceil(cw / (r + 1)) ceil(ch / (r + 1)) of them.
 *  4. per cell (a CTA each): its `quota` smallest keys, by a radix select (eight 8-bit
 *     passes) then a gather.
 *  5. the final order: each kept key's rank among all kept keys (a count; the kept
 *     set is at most cells x quota keys), the first min(max_keypoints, capacity) go to
 *     their rank's slot.
 * Descriptors (gr_descriptors_compute)
 *  6. masked separable Gaussian (two passes), central-difference gradients with their
 *     validity, over the whole frame.
 *  7. a warp per keypoint: sub-pixel refinement (five Shi-Tomasi measures, one per
 *     lane), the 36-bin orientation histogram and the descriptor: the lanes evaluate 32
 *     samples of the disc at once and every lane then adds, in sample order, the
 *     contributions that fall on the bins / entries it owns; two smoothing passes,
 *     the peak and its parabola, L2 normalization, clipping at 0.2, normalization; and
 *     the 25 x 25 smoothed window around the keypoint (for the element's patches).
 * The frame comes from the host (uploaded) or already lies in device memory
 * (gr_features_extract_device, gr_features_detect_device: used in place when its rows
 * are packed, so a CUDA frame never crosses to the host; then the mask's windows come
 * back with the smoothed ones, for the element's patches).  Detection alone (steps 1
 * to 5, then the keys turned into keypoints) serves nmiregister.
 * The host downloads everything in one copy into pinned memory and synchronizes once.
 * Device buffers and the pinned staging grow and are reused: no allocation per frame.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_util.h"
#include "features_cuda.h"

#define ORI_BINS 36
#define PI_F 3.14159265358979f
#define TX 32                   /* response tile: columns */
#define TY 8                    /* response tile: rows */
#define MAX_BLOCK_RADIUS 16
#define WSIDE GR_PATCH_SIDE     /* smoothed window per keypoint */
#define WAREA (WSIDE * WSIDE)
#define DWARPS 4                /* warps (keypoints) per descriptor CTA */
#define NONE_KEY 0xffffffffffffffffull

/* ---- error helpers ---------------------------------------------------------- */

#define CK(call, what) GR_CUDA_CHECK (call, what, -GR_ERR_CUDA)

/* ---- the IEEE operations of the CPU build (no contraction) -------------------- */

#define FADD(a, b) __fadd_rn ((a), (b))
#define FSUB(a, b) __fsub_rn ((a), (b))
#define FMUL(a, b) __fmul_rn ((a), (b))
#define FDIV(a, b) __fdiv_rn ((a), (b))
#define DADD(a, b) __dadd_rn ((a), (b))
#define DSUB(a, b) __dsub_rn ((a), (b))
#define DMUL(a, b) __dmul_rn ((a), (b))

/* ---- 1. eligibility ------------------------------------------------------------ */

/* rowok = [x - R, x + R] inside the row and all valid */
__global__ void
elig_rows_kernel (const uint8_t *__restrict__ mask, int w, int h, int R,
    uint8_t *__restrict__ rowok)
{
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w)
    return;
  bool ok = x - R >= 0 && x + R <= w - 1;
  const uint8_t *m = mask + (size_t) y * w;
  for (int i = -R; ok && i <= R; i++)
    ok = m[x + i] != 0;
  rowok[(size_t) y * w + x] = ok;
}

/* ok = rowok over [y - R, y + R], inside the image */
__global__ void
elig_cols_kernel (const uint8_t *__restrict__ rowok, int w, int h, int R,
    uint8_t *__restrict__ ok)
{
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w)
    return;
  bool v = y - R >= 0 && y + R <= h - 1;
  for (int i = -R; v && i <= R; i++)
    v = rowok[(size_t) (y + i) * w + x] != 0;
  ok[(size_t) y * w + x] = v;
}

/* ---- 2. Shi-Tomasi responses ------------------------------------------------------ */

/* block (TX, TY); dynamic shared memory: the image tile with a halo of b + 1, then the
 * horizontal sums of rows y0 - b .. y0 + TY + b - 1 */
__global__ void
response_kernel (const float *__restrict__ img, const uint8_t *__restrict__ ok, int w,
    int h, int b, int R, float *__restrict__ resp, unsigned *__restrict__ rmax)
{
  extern __shared__ float sh[];
  const int SW = TX + 2 * b + 2, SH = TY + 2 * b + 2, HR = TY + 2 * b;
  float *simg = sh;
  float *sxx = simg + SW * SH, *sxy = sxx + HR * TX, *syy = sxy + HR * TX;
  const int x0 = blockIdx.x * TX, y0 = blockIdx.y * TY;
  const int tid = threadIdx.y * TX + threadIdx.x;
  /* the tile, clamped at the image edges (as keypoints.c's px()) */
  for (int i = tid; i < SW * SH; i += TX * TY) {
    int gx = x0 - b - 1 + i % SW, gy = y0 - b - 1 + i / SW;
    gx = gx < 0 ? 0 : gx >= w ? w - 1 : gx;
    gy = gy < 0 ? 0 : gy >= h ? h - 1 : gy;
    simg[i] = img[(size_t) gy * w + gx];
  }
  __syncthreads ();
  /* horizontal sums: row r of the strip is image row y0 - b + r (tile row r + 1),
   * column c is image column x0 + c (tile column c + b + 1) */
  for (int i = tid; i < HR * TX; i += TX * TY) {
    const int r = i / TX, c = i % TX;
    const float *row = simg + (r + 1) * SW, *up = row - SW, *dn = row + SW;
    float axx = 0.f, axy = 0.f, ayy = 0.f;
    for (int k = -b; k <= b; k++) {
      const int xs = c + b + 1 + k;
      const float gx = FMUL (0.5f, FSUB (row[xs + 1], row[xs - 1]));
      const float gy = FMUL (0.5f, FSUB (dn[xs], up[xs]));
      axx = FADD (axx, FMUL (gx, gx));
      axy = FADD (axy, FMUL (gx, gy));
      ayy = FADD (ayy, FMUL (gy, gy));
    }
    sxx[i] = axx;
    sxy[i] = axy;
    syy[i] = ayy;
  }
  __syncthreads ();
  const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
  const bool inside = x < w && y < h;
  const bool elig = inside && (ok ? ok[(size_t) y * w + x] != 0 :
      (x - R >= 0 && x + R <= w - 1 && y - R >= 0 && y + R <= h - 1));
  float out = 0.f;
  if (elig) {
    double a = 0.0, bb = 0.0, c = 0.0;
    for (int k = 0; k <= 2 * b; k++) {
      const int i = (threadIdx.y + k) * TX + threadIdx.x;
      a = DADD (a, (double) sxx[i]);
      bb = DADD (bb, (double) sxy[i]);
      c = DADD (c, (double) syy[i]);
    }
    const double half = DMUL (0.5, DSUB (a, c));
    const double l = DSUB (DMUL (0.5, DADD (a, c)),
        __dsqrt_rn (DADD (DMUL (half, half), DMUL (bb, bb))));
    out = l > 0.0 ? __double2float_rn (l) : 0.0f;
  }
  if (inside)
    resp[(size_t) y * w + x] = out;
  /* the largest response of the tile: a warp maximum, then one atomic per warp (the
   * bit patterns of responses >= 0 order like their values) */
  unsigned mb = __float_as_uint (out);
  for (int o = 16; o > 0; o >>= 1)
    mb = max (mb, __shfl_xor_sync (0xffffffffu, mb, o));
  if ((tid & 31) == 0 && mb > 0u)
    atomicMax (rmax, mb);
}

/* ---- 3. non-maximum suppression, threshold, buckets --------------------------------- */

struct GridInfo {
  int cols, rows;       /* grid */
  int quota;            /* per cell */
  int bucket;           /* bucket capacity per cell */
};

__device__ __forceinline__ int
cell_of (int x, int w, int n)
{
  /* the cell g with floor(g w / n) <= x < floor((g + 1) w / n) (keypoints.c) */
  int g = (int) ((long long) x * n / w);
  while (g + 1 < n && x >= (int) ((long long) (g + 1) * w / n))
    g++;
  while (g > 0 && x < (int) ((long long) g * w / n))
    g--;
  return g;
}

__global__ void
nms_kernel (const float *__restrict__ resp, int w, int h, int rad, float min_response,
    unsigned *__restrict__ misc, GridInfo g, unsigned long long *__restrict__ buckets,
    int *__restrict__ counts)
{
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w)
    return;
  const float v = resp[(size_t) y * w + x];
  const float thr = FMUL (min_response, __uint_as_float (misc[0]));
  if (!(v > 0.0f) || v < thr)
    return;
  const int xa = x - rad < 0 ? 0 : x - rad, xb = x + rad >= w ? w - 1 : x + rad;
  const int ya = y - rad < 0 ? 0 : y - rad, yb = y + rad >= h ? h - 1 : y + rad;
  for (int yy = ya; yy <= yb; yy++) {
    const float *row = resp + (size_t) yy * w;
    for (int xx = xa; xx <= xb; xx++) {
      const float u = row[xx];
      if (u > v || (u == v && (yy < y || (yy == y && xx < x))))
        return;
    }
  }
  const int cell = cell_of (y, h, g.rows) * g.cols + cell_of (x, w, g.cols);
  const int slot = atomicAdd (&counts[cell], 1);
  const unsigned long long key =
      ((unsigned long long) (0x7fffffffu - __float_as_uint (v)) << 32) |
      (unsigned long long) ((unsigned) y * (unsigned) w + (unsigned) x);
  if (slot < g.bucket)
    buckets[(size_t) cell * g.bucket + slot] = key;
  else
    atomicOr (&misc[2], 1u);       /* cannot happen (see the bound); reported */
}

/* ---- 4. per cell: the quota smallest keys ------------------------------------------- */

__global__ void
select_kernel (const unsigned long long *__restrict__ buckets, const int *__restrict__ counts,
    GridInfo g, unsigned long long *__restrict__ kept, unsigned *__restrict__ misc)
{
  __shared__ unsigned hist[256];
  __shared__ unsigned long long s_prefix;
  __shared__ int s_k, s_n;
  const int cell = blockIdx.x, tid = threadIdx.x;
  const int n = min (counts[cell], g.bucket);
  const unsigned long long *keys = buckets + (size_t) cell * g.bucket;
  unsigned long long *out = kept + (size_t) cell * g.quota;
  if (tid == 0)
    atomicAdd (&misc[3], (unsigned) n);
  if (n <= g.quota) {
    for (int i = tid; i < n; i += blockDim.x)
      out[i] = keys[i];
    if (tid == 0)
      atomicAdd (&misc[1], (unsigned) n);
    return;
  }
  if (tid == 0) {
    s_prefix = 0ull;
    s_k = g.quota;               /* the rank (1-based) of the last key kept */
    s_n = 0;
  }
  unsigned long long mask = 0ull;
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int i = tid; i < 256; i += blockDim.x)
      hist[i] = 0u;
    __syncthreads ();
    const unsigned long long prefix = s_prefix;
    for (int i = tid; i < n; i += blockDim.x) {
      const unsigned long long key = keys[i];
      if ((key & mask) == prefix)
        atomicAdd (&hist[(key >> shift) & 255u], 1u);
    }
    __syncthreads ();
    if (tid == 0) {
      unsigned cum = 0;
      for (int d = 0; d < 256; d++) {
        if (cum + hist[d] >= (unsigned) s_k) {
          s_k -= (int) cum;
          s_prefix = prefix | ((unsigned long long) d << shift);
          break;
        }
        cum += hist[d];
      }
    }
    __syncthreads ();
    mask |= 255ull << shift;
  }
  const unsigned long long kth = s_prefix;   /* a key of the bucket: keys are unique */
  for (int i = tid; i < n; i += blockDim.x) {
    const unsigned long long key = keys[i];
    if (key <= kth) {
      const int slot = atomicAdd (&s_n, 1);
      if (slot < g.quota)
        out[slot] = key;
    }
  }
  if (tid == 0)
    atomicAdd (&misc[1], (unsigned) g.quota);
}

/* ---- 5. the final order ------------------------------------------------------------ */

/* 256 threads; kept: nk slots (NONE_KEY = empty) */
__global__ void
rank_kernel (const unsigned long long *__restrict__ kept, int nk, int lim,
    unsigned long long *__restrict__ order)
{
  __shared__ unsigned long long tile[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long key = i < nk ? kept[i] : NONE_KEY;
  int rank = 0;
  for (int base = 0; base < nk; base += 256) {
    tile[threadIdx.x] = base + threadIdx.x < nk ? kept[base + threadIdx.x] : NONE_KEY;
    __syncthreads ();
    const int m = nk - base < 256 ? nk - base : 256;
    for (int j = 0; j < m; j++)
      rank += tile[j] < key;
    __syncthreads ();
  }
  if (key != NONE_KEY && rank < lim)
    order[rank] = key;
}

/* ---- 6. smoothing and gradients ------------------------------------------------------ */

struct SmoothTaps {
  int rr;
  float wt[63];
};

__device__ __forceinline__ bool
valid_px (const uint8_t *mask, int w, int x, int y)
{
  return !mask || mask[(size_t) y * w + x];
}

__global__ void
smooth_rows_kernel (const float *__restrict__ img, const uint8_t *__restrict__ mask, int w,
    int h, SmoothTaps t, float *__restrict__ tmp)
{
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w)
    return;
  const size_t i = (size_t) y * w + x;
  if (!valid_px (mask, w, x, y)) {
    tmp[i] = 0.f;
    return;
  }
  const float *row = img + (size_t) y * w;
  float s = 0.f, sw = 0.f;
  for (int k = -t.rr; k <= t.rr; k++) {
    const int xx = x + k;
    if (xx < 0 || xx >= w || !valid_px (mask, w, xx, y))
      continue;
    s = FADD (s, FMUL (t.wt[k + t.rr], row[xx]));
    sw = FADD (sw, t.wt[k + t.rr]);
  }
  tmp[i] = FDIV (s, sw);
}

__global__ void
smooth_cols_kernel (const float *__restrict__ tmp, const uint8_t *__restrict__ mask, int w,
    int h, SmoothTaps t, float *__restrict__ out)
{
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w)
    return;
  const size_t i = (size_t) y * w + x;
  if (!valid_px (mask, w, x, y)) {
    out[i] = 0.f;
    return;
  }
  float s = 0.f, sw = 0.f;
  for (int k = -t.rr; k <= t.rr; k++) {
    const int yy = y + k;
    if (yy < 0 || yy >= h || !valid_px (mask, w, x, yy))
      continue;
    s = FADD (s, FMUL (t.wt[k + t.rr], tmp[(size_t) yy * w + x]));
    sw = FADD (sw, t.wt[k + t.rr]);
  }
  out[i] = FDIV (s, sw);
}

__global__ void
gradient_kernel (const float *__restrict__ s, const uint8_t *__restrict__ mask, int w, int h,
    float *__restrict__ gx, float *__restrict__ gy, uint8_t *__restrict__ gv)
{
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= w)
    return;
  const size_t i = (size_t) y * w + x;
  const bool ok = x > 0 && y > 0 && x < w - 1 && y < h - 1 && valid_px (mask, w, x, y) &&
      valid_px (mask, w, x - 1, y) && valid_px (mask, w, x + 1, y) &&
      valid_px (mask, w, x, y - 1) && valid_px (mask, w, x, y + 1);
  gv[i] = ok;
  gx[i] = ok ? FMUL (0.5f, FSUB (s[i + 1], s[i - 1])) : 0.f;
  gy[i] = ok ? FMUL (0.5f, FSUB (s[i + w], s[i - w])) : 0.f;
}

/* ---- 7. refinement, orientation, descriptor: a warp per keypoint ----------------- */

struct DescParams {
  const float *gx, *gy, *smooth;
  const uint8_t *gv;
  int w, h;
  const unsigned long long *order;  /* device detection: keys in their final order */
  const float *kin;                 /* host detection: x, y, response per keypoint */
  const unsigned *misc;             /* [1]: keys kept over all cells */
  int host_n;                       /* >= 0: host detection */
  int lim;                          /* device detection: min(max_keypoints, capacity) */
  const float *gw_ori, *gw_desc;
  int R, size, subpixel;
  float k_ori, k_theta, k_desc;
  float *kp_out;                    /* x, y, response */
  float *desc_out, *angle_out, *win_out;
};

/* descriptors.c's min_eig: the 5 x 5 structure tensor of the smoothed gradients */
__device__ float
min_eig_dev (const DescParams &P, int x, int y)
{
  double a = 0.0, b = 0.0, c = 0.0;
  for (int v = -2; v <= 2; v++)
    for (int u = -2; u <= 2; u++) {
      const int xx = x + u, yy = y + v;
      if (xx < 0 || yy < 0 || xx >= P.w || yy >= P.h)
        return -1.f;
      const size_t j = (size_t) yy * P.w + xx;
      if (!P.gv[j])
        return -1.f;
      const double gx = P.gx[j], gy = P.gy[j];
      a = DADD (a, DMUL (gx, gx));
      b = DADD (b, DMUL (gx, gy));
      c = DADD (c, DMUL (gy, gy));
    }
  const double d = DSUB (a, c);
  return __double2float_rn (DSUB (DMUL (0.5, DADD (a, c)),
          __dsqrt_rn (DADD (DMUL (DMUL (0.25, d), d), DMUL (b, b)))));
}

/* descriptors.c's grad_at: the bilinear gradient at (x, y) */
__device__ __forceinline__ bool
grad_at_dev (const DescParams &P, float x, float y, float *ox, float *oy)
{
  const float fx = floorf (x), fy = floorf (y);
  const int x0 = (int) fx, y0 = (int) fy;
  if (x0 < 0 || y0 < 0 || x0 >= P.w || y0 >= P.h)
    return false;
  const float ax = FSUB (x, fx), ay = FSUB (y, fy);
  const int x1 = ax > 0.f ? x0 + 1 : x0, y1 = ay > 0.f ? y0 + 1 : y0;
  if (x1 >= P.w || y1 >= P.h)
    return false;
  const size_t i00 = (size_t) y0 * P.w + x0, i01 = (size_t) y0 * P.w + x1,
      i10 = (size_t) y1 * P.w + x0, i11 = (size_t) y1 * P.w + x1;
  if (!P.gv[i00] || !P.gv[i01] || !P.gv[i10] || !P.gv[i11])
    return false;
  const float bx = FSUB (1.f, ax), by = FSUB (1.f, ay);
  const float w00 = FMUL (bx, by), w01 = FMUL (ax, by), w10 = FMUL (bx, ay),
      w11 = FMUL (ax, ay);
  *ox = FADD (FADD (FADD (FMUL (w00, P.gx[i00]), FMUL (w01, P.gx[i01])),
          FMUL (w10, P.gx[i10])), FMUL (w11, P.gx[i11]));
  *oy = FADD (FADD (FADD (FMUL (w00, P.gy[i00]), FMUL (w01, P.gy[i01])),
          FMUL (w10, P.gy[i10])), FMUL (w11, P.gy[i11]));
  return true;
}

struct WarpShared {
  /* one chunk of 32 samples */
  int b0[32];                   /* orientation bin, or the packed cell (u0, v0, o0) */
  float f0[32], f1[32];         /* orientation: the two bin weights; descriptor: au, av */
  float f2[32], f3[32];         /* descriptor: ao, magnitude */
  float hist[ORI_BINS];
  float d[64];
};

__global__ void __launch_bounds__ (32 * DWARPS)
describe_kernel (const DescParams P)
{
  __shared__ WarpShared shw[DWARPS];
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  WarpShared &S = shw[wid];
  const int i = blockIdx.x * DWARPS + wid;
  int n;
  if (P.host_n >= 0) {
    n = P.host_n;
  } else {
    n = (int) P.misc[1];
    n = n < P.lim ? n : P.lim;
  }
  if (i >= n)
    return;                     /* uniform across the warp */

  /* the keypoint */
  float kx, ky, resp;
  if (P.host_n >= 0) {
    kx = P.kin[3 * i];
    ky = P.kin[3 * i + 1];
    resp = P.kin[3 * i + 2];
  } else {
    const unsigned long long key = P.order[i];
    const unsigned ras = (unsigned) (key & 0xffffffffu);
    kx = (float) (ras % (unsigned) P.w);
    ky = (float) (ras / (unsigned) P.w);
    resp = __uint_as_float (0x7fffffffu - (unsigned) (key >> 32));
  }

  /* sub-pixel refinement: lanes 0..4 take c, l, r, t, b */
  if (P.subpixel) {
    const int x = __float2int_rn (kx), y = __float2int_rn (ky);
    float me = 0.f;
    if (lane < 5) {
      const int dx = lane == 1 ? -1 : lane == 2 ? 1 : 0;
      const int dy = lane == 3 ? -1 : lane == 4 ? 1 : 0;
      me = min_eig_dev (P, x + dx, y + dy);
    }
    const float c = __shfl_sync (0xffffffffu, me, 0), l = __shfl_sync (0xffffffffu, me, 1),
        r = __shfl_sync (0xffffffffu, me, 2), t = __shfl_sync (0xffffffffu, me, 3),
        b = __shfl_sync (0xffffffffu, me, 4);
    if (!(c <= 0.f || l < 0.f || r < 0.f || t < 0.f || b < 0.f)) {
      const float dxx = FADD (FSUB (l, FMUL (2.f, c)), r);
      const float dyy = FADD (FSUB (t, FMUL (2.f, c)), b);
      float ddx = 0.f, ddy = 0.f;
      if (dxx < 0.f && c >= l && c >= r)
        ddx = FDIV (FMUL (0.5f, FSUB (l, r)), dxx);
      if (dyy < 0.f && c >= t && c >= b)
        ddy = FDIV (FMUL (0.5f, FSUB (t, b)), dyy);
      kx = FADD ((float) x, fmaxf (-0.5f, fminf (0.5f, ddx)));
      ky = FADD ((float) y, fmaxf (-0.5f, fminf (0.5f, ddy)));
    }
  }

  const int R = P.R, side = 2 * R + 1, nsamp = side * side;
  const int size = P.size;
  const int NC = size == 64 ? 4 : 2, NB = size == 64 ? 4 : 8;

  /* orientation histogram: lane owns bins lane and lane + 32 */
  const int cx = __float2int_rn (kx), cy = __float2int_rn (ky);
  float h0 = 0.f, h1 = 0.f;
  for (int base = 0; base < nsamp; base += 32) {
    const int s = base + lane;
    int bin = -1;
    float w0 = 0.f, w1 = 0.f;
    if (s < nsamp) {
      const int v = s / side - R, u = s % side - R;
      const float gwt = P.gw_ori[s];
      const int x = cx + u, y = cy + v;
      if (!(gwt == 0.f || x < 0 || y < 0 || x >= P.w || y >= P.h)) {
        const size_t j = (size_t) y * P.w + x;
        if (P.gv[j]) {
          const float gx = P.gx[j], gy = P.gy[j];
          const float m = __fsqrt_rn (FADD (FMUL (gx, gx), FMUL (gy, gy)));
          if (m != 0.f) {
            const float fb = FSUB (FMUL (FADD (atan2f (gy, gx), PI_F), P.k_ori), 0.5f);
            int b0 = (int) floorf (fb);
            const float a = FSUB (fb, (float) b0);
            b0 = (b0 % ORI_BINS + ORI_BINS) % ORI_BINS;
            const float gm = FMUL (gwt, m);
            bin = b0;
            w0 = FMUL (gm, FSUB (1.f, a));
            w1 = FMUL (gm, a);
          }
        }
      }
    }
    S.b0[lane] = bin;
    S.f0[lane] = w0;
    S.f1[lane] = w1;
    __syncwarp ();
    const int m = nsamp - base < 32 ? nsamp - base : 32;
    for (int j = 0; j < m; j++) {
      const int b = S.b0[j];
      if (b < 0)
        continue;
      const int b1 = (b + 1) % ORI_BINS;
      if (b == lane)
        h0 = FADD (h0, S.f0[j]);
      else if (b1 == lane)
        h0 = FADD (h0, S.f1[j]);
      if (lane + 32 < ORI_BINS) {
        if (b == lane + 32)
          h1 = FADD (h1, S.f0[j]);
        else if (b1 == lane + 32)
          h1 = FADD (h1, S.f1[j]);
      }
    }
    __syncwarp ();
  }
  S.hist[lane] = h0;
  if (lane + 32 < ORI_BINS)
    S.hist[lane + 32] = h1;
  __syncwarp ();
  /* two smoothing passes, the peak, its parabola: lane 0 (as the CPU, in order) */
  float theta = 0.f;
  int has = 0;
  if (lane == 0) {
    float hs[ORI_BINS];
    for (int pass = 0; pass < 2; pass++) {
      for (int b = 0; b < ORI_BINS; b++)
        hs[b] = FADD (FADD (FMUL (0.25f, S.hist[(b + ORI_BINS - 1) % ORI_BINS]),
                FMUL (0.5f, S.hist[b])), FMUL (0.25f, S.hist[(b + 1) % ORI_BINS]));
      for (int b = 0; b < ORI_BINS; b++)
        S.hist[b] = hs[b];
    }
    int best = 0;
    for (int b = 1; b < ORI_BINS; b++)
      if (S.hist[b] > S.hist[best])
        best = b;
    if (S.hist[best] > 0.f) {
      has = 1;
      const float l = S.hist[(best + ORI_BINS - 1) % ORI_BINS], c = S.hist[best],
          r = S.hist[(best + 1) % ORI_BINS];
      const float den = FADD (FSUB (l, FMUL (2.f, c)), r);
      const float off = den < 0.f ? FDIV (FMUL (0.5f, FSUB (l, r)), den) : 0.f;
      theta = FSUB (FMUL (FADD (FADD ((float) best, 0.5f), off), P.k_theta), PI_F);
    }
  }
  has = __shfl_sync (0xffffffffu, has, 0);
  theta = __shfl_sync (0xffffffffu, theta, 0);

  /* descriptor: lane owns entries lane and lane + 32 */
  float e0 = 0.f, e1 = 0.f;
  const int own = size == 64 ? 2 : 1;
  int ecu[2], ecv[2], eo[2];
  for (int q = 0; q < 2; q++) {
    const int e = lane + 32 * q;
    const int cell = e / NB;
    eo[q] = e % NB;
    ecu[q] = cell % NC;
    ecv[q] = cell / NC;
  }
  if (has) {
    const float ct = cosf (theta), st = sinf (theta);
    for (int base = 0; base < nsamp; base += 32) {
      const int s = base + lane;
      int packed = -1;
      float au = 0.f, av = 0.f, ao = 0.f, mm = 0.f;
      if (s < nsamp) {
        const float gwt = P.gw_desc[s];
        if (gwt != 0.f) {
          const int v = s / side - R, u = s % side - R;
          const float fu_ = (float) u, fv_ = (float) v;
          const float x = FSUB (FADD (kx, FMUL (ct, fu_)), FMUL (st, fv_));
          const float y = FADD (FADD (ky, FMUL (st, fu_)), FMUL (ct, fv_));
          float gx, gy;
          if (grad_at_dev (P, x, y, &gx, &gy)) {
            const float gu = FADD (FMUL (ct, gx), FMUL (st, gy));
            const float gvv = FADD (FMUL (-st, gx), FMUL (ct, gy));
            const float m = FMUL (__fsqrt_rn (FADD (FMUL (gu, gu), FMUL (gvv, gvv))), gwt);
            if (m != 0.f) {
              const float fu = FSUB (FDIV (FMUL (FADD ((float) (u + R), 0.5f), (float) NC),
                      (float) side), 0.5f);
              const float fv = FSUB (FDIV (FMUL (FADD ((float) (v + R), 0.5f), (float) NC),
                      (float) side), 0.5f);
              const float fo = FMUL (FADD (atan2f (gvv, gu), PI_F), P.k_desc);
              const int u0 = (int) floorf (fu), v0 = (int) floorf (fv);
              int o0 = (int) floorf (fo);
              au = FSUB (fu, (float) u0);
              av = FSUB (fv, (float) v0);
              ao = FSUB (fo, (float) o0);
              o0 = (o0 % NB + NB) % NB;
              mm = m;
              /* u0, v0 in -1 .. NC - 1, o0 in 0 .. NB - 1: packed with an offset */
              packed = ((u0 + 1) << 16) | ((v0 + 1) << 8) | o0;
            }
          }
        }
      }
      S.b0[lane] = packed;
      S.f0[lane] = au;
      S.f1[lane] = av;
      S.f2[lane] = ao;
      S.f3[lane] = mm;
      __syncwarp ();
      const int m = nsamp - base < 32 ? nsamp - base : 32;
      for (int j = 0; j < m; j++) {
        const int pk = S.b0[j];
        if (pk < 0)
          continue;
        const int u0 = (pk >> 16) - 1, v0 = ((pk >> 8) & 255) - 1, o0 = pk & 255;
        const int o1 = (o0 + 1) % NB;
        for (int q = 0; q < own; q++) {
          const int dv = ecv[q] - v0, du = ecu[q] - u0;
          if (dv < 0 || dv > 1 || du < 0 || du > 1)
            continue;
          if (eo[q] != o0 && eo[q] != o1)
            continue;
          const float wv = dv ? S.f1[j] : FSUB (1.f, S.f1[j]);
          const float wu = du ? S.f0[j] : FSUB (1.f, S.f0[j]);
          const float wuv = FMUL (FMUL (wv, wu), S.f3[j]);
          const float val = eo[q] == o0 ? FMUL (wuv, FSUB (1.f, S.f2[j])) :
              FMUL (wuv, S.f2[j]);
          if (q == 0)
            e0 = FADD (e0, val);
          else
            e1 = FADD (e1, val);
        }
      }
      __syncwarp ();
    }
    /* normalize, clip, normalize: the sum in double in entry order (lane 0) */
    for (int pass = 0; pass < 2; pass++) {
      S.d[lane] = e0;
      if (own == 2)
        S.d[lane + 32] = e1;
      __syncwarp ();
      double nn = 0.0;
      if (lane == 0)
        for (int t = 0; t < size; t++)
          nn = DADD (nn, DMUL ((double) S.d[t], (double) S.d[t]));
      nn = __shfl_sync (0xffffffffu, nn, 0);
      __syncwarp ();
      if (nn <= 0.0)
        break;
      const float inv = __double2float_rn (__ddiv_rn (1.0, __dsqrt_rn (nn)));
      e0 = FMUL (e0, inv);
      e1 = FMUL (e1, inv);
      if (pass == 0) {
        if (e0 > 0.2f)
          e0 = 0.2f;
        if (e1 > 0.2f)
          e1 = 0.2f;
      }
    }
  }
  float *d = P.desc_out + (size_t) i * size;
  d[lane] = e0;
  if (own == 2)
    d[lane + 32] = e1;
  if (lane == 0) {
    P.kp_out[3 * i] = kx;
    P.kp_out[3 * i + 1] = ky;
    P.kp_out[3 * i + 2] = resp;
    P.angle_out[i] = theta;
  }
  /* the smoothed window around the refined keypoint's nearest pixel */
  const int wx = __float2int_rn (kx), wy = __float2int_rn (ky);
  float *win = P.win_out + (size_t) i * WAREA;
  for (int t = lane; t < WAREA; t += 32) {
    const int x = wx + t % WSIDE - GR_PATCH_RADIUS, y = wy + t / WSIDE - GR_PATCH_RADIUS;
    win[t] = x >= 0 && y >= 0 && x < P.w && y < P.h ? P.smooth[(size_t) y * P.w + x] : 0.f;
  }
}

/* ---- 8. detection only: the keypoints from their keys ------------------------------ */

__global__ void
keys_to_kp_kernel (const unsigned long long *__restrict__ order,
    const unsigned *__restrict__ misc, int lim, int w, float *__restrict__ kp)
{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  int n = (int) misc[1];
  n = n < lim ? n : lim;
  if (i >= n)
    return;
  /* describe_kernel's reading of a key */
  const unsigned long long key = order[i];
  const unsigned ras = (unsigned) (key & 0xffffffffu);
  kp[3 * i] = (float) (ras % (unsigned) w);
  kp[3 * i + 1] = (float) (ras / (unsigned) w);
  kp[3 * i + 2] = __uint_as_float (0x7fffffffu - (unsigned) (key >> 32));
}

/* ---- 9. device frames: the validity around each keypoint -------------------------- */

/* the frame's mask in the WSIDE x WSIDE window around each returned keypoint's nearest
 * pixel (the smoothed window's footprint): what gr_descriptor_patches and
 * gr_patch_refine read of the mask; 0 outside the frame */
__global__ void
mask_window_kernel (const float *__restrict__ kp, const unsigned *__restrict__ misc,
    int host_n, int lim, const uint8_t *__restrict__ mask, int w, int h,
    uint8_t *__restrict__ out)
{
  const int i = blockIdx.x;
  int n = host_n >= 0 ? host_n : (int) misc[1];
  n = n < lim ? n : lim;
  if (i >= n)
    return;
  const int wx = __float2int_rn (kp[3 * i]), wy = __float2int_rn (kp[3 * i + 1]);
  uint8_t *o = out + (size_t) i * WAREA;
  for (int t = threadIdx.x; t < WAREA; t += blockDim.x) {
    const int x = wx + t % WSIDE - GR_PATCH_RADIUS, y = wy + t / WSIDE - GR_PATCH_RADIUS;
    o[t] = x >= 0 && y >= 0 && x < w && y < h && mask[(size_t) y * w + x] != 0;
  }
}

/* ---- host side ---------------------------------------------------------------- */

struct GrFeaturesCuda {
  int device;
  cudaStream_t stream;
  cudaEvent_t ev[4];            /* upload start, kernels start, kernels end, download end */
  /* host frames (and device frames whose rows are not packed): the frame, its mask */
  float *d_img;
  uint8_t *d_mask;
  size_t in_cap;                /* pixels */
  /* detection, per pixel */
  float *d_resp;
  uint8_t *d_rowok, *d_ok;
  size_t det_cap;
  /* descriptors, per pixel */
  float *d_tmp, *d_smooth, *d_gx, *d_gy;
  uint8_t *d_gv;
  size_t desc_cap;
  /* detection */
  unsigned long long *d_buckets;
  size_t buckets_cap;
  unsigned long long *d_kept;
  size_t kept_cap;
  int *d_counts;
  size_t counts_cap;
  unsigned *d_misc;             /* [0] largest response bits, [1] kept keys, [2] bucket
                                   overflow (never), [3] candidates */
  unsigned long long *d_order;
  size_t order_cap;
  /* per keypoint */
  size_t kp_cap;
  float *d_kin, *d_kp, *d_desc, *d_angle, *d_win;
  uint8_t *d_mwin;              /* device frames with a mask: validity windows */
  size_t mwin_cap;
  /* weights */
  float *d_gw;
  size_t gw_cap;
  /* pinned staging: the download (misc, kp, desc, angle, windows) and the weights */
  void *h_pin;
  size_t pin_cap;
};

static void
free_in (GrFeaturesCuda *c)
{
  cudaFree (c->d_img);
  cudaFree (c->d_mask);
  c->d_img = NULL;
  c->d_mask = NULL;
  c->in_cap = 0;
}

static cudaError_t
grow_in (GrFeaturesCuda *c, size_t n)
{
  if (c->in_cap >= n)
    return cudaSuccess;
  free_in (c);
  cudaError_t e = gr_cuda_malloc (&c->d_img, n * sizeof (float));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_mask, n);
  if (e != cudaSuccess) {
    free_in (c);
    return e;
  }
  c->in_cap = n;
  return cudaSuccess;
}

static void
free_det (GrFeaturesCuda *c)
{
  cudaFree (c->d_resp);
  cudaFree (c->d_rowok);
  cudaFree (c->d_ok);
  c->d_resp = NULL;
  c->d_rowok = c->d_ok = NULL;
  c->det_cap = 0;
}

static cudaError_t
grow_det (GrFeaturesCuda *c, size_t n)
{
  if (c->det_cap >= n)
    return cudaSuccess;
  free_det (c);
  cudaError_t e = gr_cuda_malloc (&c->d_resp, n * sizeof (float));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_rowok, n);
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_ok, n);
  if (e != cudaSuccess) {
    free_det (c);
    return e;
  }
  c->det_cap = n;
  return cudaSuccess;
}

static void
free_desc (GrFeaturesCuda *c)
{
  cudaFree (c->d_tmp);
  cudaFree (c->d_smooth);
  cudaFree (c->d_gx);
  cudaFree (c->d_gy);
  cudaFree (c->d_gv);
  c->d_tmp = c->d_smooth = c->d_gx = c->d_gy = NULL;
  c->d_gv = NULL;
  c->desc_cap = 0;
}

static cudaError_t
grow_desc (GrFeaturesCuda *c, size_t n)
{
  if (c->desc_cap >= n)
    return cudaSuccess;
  free_desc (c);
  cudaError_t e = gr_cuda_malloc (&c->d_tmp, n * sizeof (float));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_smooth, n * sizeof (float));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_gx, n * sizeof (float));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_gy, n * sizeof (float));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_gv, n);
  if (e != cudaSuccess) {
    free_desc (c);
    return e;
  }
  c->desc_cap = n;
  return cudaSuccess;
}

static void
free_kps (GrFeaturesCuda *c)
{
  cudaFree (c->d_kin);
  cudaFree (c->d_kp);
  cudaFree (c->d_desc);
  cudaFree (c->d_angle);
  cudaFree (c->d_win);
  c->d_kin = c->d_kp = c->d_desc = c->d_angle = c->d_win = NULL;
  c->kp_cap = 0;
}

static cudaError_t
grow_kps (GrFeaturesCuda *c, size_t n)
{
  if (c->kp_cap >= n)
    return cudaSuccess;
  free_kps (c);
  cudaError_t e = gr_cuda_malloc (&c->d_kin, n * 3 * sizeof (float));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_kp, n * 3 * sizeof (float));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_desc, n * 64 * sizeof (float));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_angle, n * sizeof (float));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_win, n * WAREA * sizeof (float));
  if (e != cudaSuccess) {
    free_kps (c);
    return e;
  }
  c->kp_cap = n;
  return cudaSuccess;
}

static cudaError_t
grow_pin (GrFeaturesCuda *c, size_t need)
{
  if (c->pin_cap >= need)
    return cudaSuccess;
  if (c->h_pin)
    cudaFreeHost (c->h_pin);
  c->h_pin = NULL;
  c->pin_cap = 0;
  const size_t want = need + need / 4;
  cudaError_t e = gr_cuda_host_alloc (&c->h_pin, want, cudaHostAllocDefault);
  if (e == cudaSuccess)
    c->pin_cap = want;
  else
    c->h_pin = NULL;
  return e;
}

extern "C" GrFeaturesCuda *
gr_features_cuda_new (int device, char *errbuf, size_t errlen)
{
  cudaError_t e = cudaSetDevice (device);
  if (e != cudaSuccess) {
    gr_set_err (errbuf, errlen, "CUDA device %d: %s", device, cudaGetErrorString (e));
    cudaGetLastError ();
    return NULL;
  }
  GrFeaturesCuda *c = (GrFeaturesCuda *) calloc (1, sizeof *c);
  if (!c) {
    gr_set_err (errbuf, errlen, "out of host memory");
    return NULL;
  }
  c->device = device;
  e = cudaStreamCreateWithFlags (&c->stream, cudaStreamNonBlocking);
  for (int i = 0; i < 4 && e == cudaSuccess; i++)
    e = cudaEventCreate (&c->ev[i]);
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_misc, 4 * sizeof (unsigned));
  if (e != cudaSuccess) {
    gr_set_err (errbuf, errlen, "CUDA features setup: %s", cudaGetErrorString (e));
    cudaGetLastError ();
    gr_features_cuda_free (c);
    return NULL;
  }
  return c;
}

extern "C" void
gr_features_cuda_free (GrFeaturesCuda *c)
{
  if (!c)
    return;
  cudaSetDevice (c->device);
  if (c->stream)
    cudaStreamSynchronize (c->stream);
  free_in (c);
  free_det (c);
  free_desc (c);
  free_kps (c);
  cudaFree (c->d_mwin);
  cudaFree (c->d_buckets);
  cudaFree (c->d_kept);
  cudaFree (c->d_counts);
  cudaFree (c->d_misc);
  cudaFree (c->d_order);
  cudaFree (c->d_gw);
  if (c->h_pin)
    cudaFreeHost (c->h_pin);
  for (int i = 0; i < 4; i++)
    if (c->ev[i])
      cudaEventDestroy (c->ev[i]);
  if (c->stream)
    cudaStreamDestroy (c->stream);
  cudaGetLastError ();
  free (c);
}

static inline int
cell_edge (int g, int len, int n)
{
  return (int) ((long long) g * len / n);
}

/* The frame (and its mask) as dense device planes, on c's stream: a host frame is
 * uploaded; a device frame is used in place when its rows are packed, else copied
 * (device to device) into c's buffer.  A device mask is always packed (GrPlaneF). */
static int
frame_in (GrFeaturesCuda *c, const GrPlaneF *img, bool on_device, const float **d_img,
    const uint8_t **d_mask, char *errbuf, size_t errlen)
{
  const int w = img->width, h = img->height;
  const size_t npix = (size_t) w * h;
  cudaStream_t s = c->stream;
  const bool packed = img->stride == (size_t) w;
  if (on_device && packed) {
    *d_img = img->data;
    *d_mask = img->mask;
    return 0;
  }
  CK (grow_in (c, npix), "cudaMalloc (frame)");
  const cudaMemcpyKind kind = on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
  /* a pageable host frame: the driver stages it */
  if (packed)
    CK (cudaMemcpyAsync (c->d_img, img->data, npix * sizeof (float), kind, s),
        "frame upload");
  else
    CK (cudaMemcpy2DAsync (c->d_img, (size_t) w * sizeof (float), img->data,
            img->stride * sizeof (float), (size_t) w * sizeof (float), (size_t) h,
            kind, s), "frame upload");
  *d_img = c->d_img;
  *d_mask = NULL;
  if (img->mask && on_device) {
    *d_mask = img->mask;
  } else if (img->mask) {
    CK (cudaMemcpyAsync (c->d_mask, img->mask, npix, cudaMemcpyHostToDevice, s),
        "mask upload");
    *d_mask = c->d_mask;
  }
  return 0;
}

/* The detector's geometry: the grid, the per-cell quota and bucket bound. */
typedef struct {
  GridInfo g;
  int ncells;
  size_t nkept;
} DetectPlan;

static int
detect_prepare (GrFeaturesCuda *c, int w, int h, const GrKeypointParams *kpp, int lim,
    DetectPlan *pl, char *errbuf, size_t errlen)
{
  GridInfo g;
  g.cols = kpp->grid_cols;
  g.rows = kpp->grid_rows;
  const int ncells = g.cols * g.rows;
  g.quota = (kpp->max_keypoints + ncells - 1) / ncells;
  int cwmax = 0, chmax = 0;
  for (int i = 0; i < g.cols; i++) {
    const int cw = cell_edge (i + 1, w, g.cols) - cell_edge (i, w, g.cols);
    cwmax = cw > cwmax ? cw : cwmax;
  }
  for (int i = 0; i < g.rows; i++) {
    const int ch = cell_edge (i + 1, h, g.rows) - cell_edge (i, h, g.rows);
    chmax = ch > chmax ? ch : chmax;
  }
  const long long rad1 = (long long) kpp->nms_radius + 1;
  long long bucket = ((cwmax + rad1 - 1) / rad1) * ((chmax + rad1 - 1) / rad1);
  if (bucket < 1)
    bucket = 1;
  g.bucket = (int) bucket;
  pl->g = g;
  pl->ncells = ncells;
  pl->nkept = (size_t) ncells * g.quota;
  CK (grow_det (c, (size_t) w * h), "cudaMalloc (detection planes)");
  CK (gr_cuda_grow (&c->d_buckets, &c->buckets_cap, (size_t) ncells * g.bucket),
      "cudaMalloc (candidates)");
  CK (gr_cuda_grow (&c->d_kept, &c->kept_cap, pl->nkept), "cudaMalloc (kept keys)");
  CK (gr_cuda_grow (&c->d_counts, &c->counts_cap, (size_t) ncells),
      "cudaMalloc (cell counts)");
  CK (gr_cuda_grow (&c->d_order, &c->order_cap, (size_t) lim), "cudaMalloc (order)");
  return 0;
}

/* steps 1 to 5 on c's stream: c->d_order[0 .. min(misc[1], lim)) */
static int
detect_launch (GrFeaturesCuda *c, const float *d_img, const uint8_t *d_mask, int w, int h,
    const GrKeypointParams *kpp, int lim, const DetectPlan *pl, char *errbuf,
    size_t errlen)
{
  cudaStream_t s = c->stream;
  const int b = kpp->block_radius;
  const int R = kpp->margin > b + 1 ? kpp->margin : b + 1;
  const dim3 rowblk (256), rowgrid ((unsigned) ((w + 255) / 256), (unsigned) h);
  CK (cudaMemsetAsync (c->d_misc, 0, 4 * sizeof (unsigned), s), "cudaMemset");
  CK (cudaMemsetAsync (c->d_counts, 0, (size_t) pl->ncells * sizeof (int), s),
      "cudaMemset");
  CK (cudaMemsetAsync (c->d_kept, 0xff, pl->nkept * sizeof (unsigned long long), s),
      "cudaMemset");
  if (d_mask) {
    elig_rows_kernel<<<rowgrid, rowblk, 0, s>>> (d_mask, w, h, R, c->d_rowok);
    elig_cols_kernel<<<rowgrid, rowblk, 0, s>>> (c->d_rowok, w, h, R, c->d_ok);
  }
  const size_t shm = sizeof (float) * ((size_t) (TX + 2 * b + 2) * (TY + 2 * b + 2) +
      3 * (size_t) (TY + 2 * b) * TX);
  response_kernel<<<dim3 ((unsigned) ((w + TX - 1) / TX), (unsigned) ((h + TY - 1) / TY)),
      dim3 (TX, TY), shm, s>>> (d_img, d_mask ? c->d_ok : NULL, w, h, b, R, c->d_resp,
      c->d_misc);
  nms_kernel<<<rowgrid, rowblk, 0, s>>> (c->d_resp, w, h, kpp->nms_radius,
      kpp->min_response, c->d_misc, pl->g, c->d_buckets, c->d_counts);
  select_kernel<<<pl->ncells, 256, 0, s>>> (c->d_buckets, c->d_counts, pl->g, c->d_kept,
      c->d_misc);
  rank_kernel<<<(unsigned) ((pl->nkept + 255) / 256), 256, 0, s>>> (c->d_kept,
      (int) pl->nkept, lim, c->d_order);
  CK (cudaGetLastError (), "detection kernels");
  return 0;
}

extern "C" int
gr_features_cuda_detect (GrFeaturesCuda *c, const GrPlaneF *img, bool img_on_device,
    const GrKeypointParams *kpp, int capacity, GrKeypoint *kp, GrFeatureStats *stats,
    char *errbuf, size_t errlen)
{
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  const int w = img->width, h = img->height;
  const int b = kpp->block_radius;
  const int R = kpp->margin > b + 1 ? kpp->margin : b + 1;
  stats->candidates = 0;
  if (capacity == 0 || 2 * R + 1 > w || 2 * R + 1 > h)
    return 0;                   /* as gr_keypoints_detect: nothing to find */
  const int lim = kpp->max_keypoints < capacity ? kpp->max_keypoints : capacity;
  DetectPlan pl;
  int r = detect_prepare (c, w, h, kpp, lim, &pl, errbuf, errlen);
  if (r < 0)
    return r;
  const size_t o_kp = 4 * sizeof (unsigned);
  CK (grow_kps (c, (size_t) lim), "cudaMalloc (keypoint buffers)");
  CK (grow_pin (c, o_kp + (size_t) lim * 3 * sizeof (float)), "cudaHostAlloc (staging)");
  unsigned *h_misc = (unsigned *) c->h_pin;
  float *h_kp = (float *) ((char *) c->h_pin + o_kp);
  cudaStream_t s = c->stream;
  CK (cudaEventRecord (c->ev[0], s), "cudaEventRecord");
  const float *d_img;
  const uint8_t *d_mask;
  r = frame_in (c, img, img_on_device, &d_img, &d_mask, errbuf, errlen);
  if (r < 0)
    return r;
  CK (cudaEventRecord (c->ev[1], s), "cudaEventRecord");
  r = detect_launch (c, d_img, d_mask, w, h, kpp, lim, &pl, errbuf, errlen);
  if (r < 0)
    return r;
  keys_to_kp_kernel<<<(unsigned) ((lim + 255) / 256), 256, 0, s>>> (c->d_order, c->d_misc,
      lim, w, c->d_kp);
  CK (cudaGetLastError (), "keypoint kernel");
  CK (cudaEventRecord (c->ev[2], s), "cudaEventRecord");
  CK (cudaMemcpyAsync (h_misc, c->d_misc, 4 * sizeof (unsigned), cudaMemcpyDeviceToHost,
          s), "download (counts)");
  CK (cudaMemcpyAsync (h_kp, c->d_kp, (size_t) lim * 3 * sizeof (float),
          cudaMemcpyDeviceToHost, s), "download (keypoints)");
  CK (cudaEventRecord (c->ev[3], s), "cudaEventRecord");
  CK (cudaStreamSynchronize (s), "keypoint detection");
  if (h_misc[2]) {
    gr_set_err (errbuf, errlen, "internal error: a candidate bucket overflowed");
    return -GR_ERR_CUDA;
  }
  int n = (int) h_misc[1];
  if (n > lim)
    n = lim;
  float ms = 0.f;
  if (cudaEventElapsedTime (&ms, c->ev[0], c->ev[1]) == cudaSuccess)
    stats->upload_ms = ms;
  if (cudaEventElapsedTime (&ms, c->ev[1], c->ev[2]) == cudaSuccess)
    stats->kernel_ms = ms;
  if (cudaEventElapsedTime (&ms, c->ev[2], c->ev[3]) == cudaSuccess)
    stats->download_ms = ms;
  cudaGetLastError ();
  stats->candidates = (int) h_misc[3];
  for (int i = 0; i < n; i++) {
    kp[i].x = h_kp[3 * i];
    kp[i].y = h_kp[3 * i + 1];
    kp[i].response = h_kp[3 * i + 2];
  }
  return n;
}

/* a window of WSIDE x WSIDE values around (wx, wy) into a dense w x h plane */
template <typename T>
static void
scatter_window (T *plane, int w, int h, int wx, int wy, const T *win)
{
  for (int r = 0; r < WSIDE; r++) {
    const int y = wy + r - GR_PATCH_RADIUS;
    if (y < 0 || y >= h)
      continue;
    int x0 = wx - GR_PATCH_RADIUS, c0 = 0, cnt = WSIDE;
    if (x0 < 0) {
      c0 = -x0;
      cnt -= c0;
      x0 = 0;
    }
    if (x0 + cnt > w)
      cnt = w - x0;
    if (cnt > 0)
      memcpy (plane + (size_t) y * w + x0, win + r * WSIDE + c0, (size_t) cnt * sizeof (T));
  }
}

extern "C" int
gr_features_cuda_extract (GrFeaturesCuda *c, const GrPlaneF *img, bool img_on_device,
    const GrKeypointParams *kpp, const GrDescriptorParams *dp,
    const GrFeaturesTables *tab, const GrKeypoint *host_kp, int host_n, int capacity,
    GrKeypoint *kp, float *desc, float *angle, float *smooth, uint8_t *valid,
    GrFeatureStats *stats, char *errbuf, size_t errlen)
{
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  const int w = img->width, h = img->height;
  const size_t npix = (size_t) w * h;
  const bool detect = host_kp == NULL;
  const int b = kpp->block_radius;
  const int R = kpp->margin > b + 1 ? kpp->margin : b + 1;
  stats->candidates = 0;
  if (capacity == 0 || (detect && (2 * R + 1 > w || 2 * R + 1 > h)) ||
      (!detect && host_n == 0))
    return 0;                   /* as gr_keypoints_detect: nothing to find */
  const int lim = detect ? (kpp->max_keypoints < capacity ? kpp->max_keypoints : capacity)
      : host_n;
  const int size = dp->size;
  const int side = 2 * dp->radius + 1;
  const bool mwin = valid && img->mask;

  /* buffers (grow-only) */
  DetectPlan pl;
  if (detect) {
    const int r = detect_prepare (c, w, h, kpp, lim, &pl, errbuf, errlen);
    if (r < 0)
      return r;
  }
  CK (grow_desc (c, npix), "cudaMalloc (frame planes)");
  CK (grow_kps (c, (size_t) lim), "cudaMalloc (keypoint buffers)");
  if (mwin)
    CK (gr_cuda_grow (&c->d_mwin, &c->mwin_cap, (size_t) lim * WAREA),
        "cudaMalloc (validity)");
  const size_t ngw = 2 * (size_t) side * side;
  CK (gr_cuda_grow (&c->d_gw, &c->gw_cap, ngw), "cudaMalloc (weights)");
  /* pinned layout: misc (4 unsigned) | kin/kp (3 lim) | desc (64 lim) | angle (lim) |
   * windows (WAREA lim) | weights (ngw) | validity windows (WAREA lim bytes) */
  const size_t o_kp = 4 * sizeof (unsigned);
  const size_t o_desc = o_kp + (size_t) lim * 3 * sizeof (float);
  const size_t o_ang = o_desc + (size_t) lim * size * sizeof (float);
  const size_t o_win = o_ang + (size_t) lim * sizeof (float);
  const size_t o_gw = o_win + (size_t) lim * WAREA * sizeof (float);
  const size_t o_mwin = o_gw + ngw * sizeof (float);
  const size_t pin_need = o_mwin + (mwin ? (size_t) lim * WAREA : 0);
  CK (grow_pin (c, pin_need), "cudaHostAlloc (staging)");
  char *pin = (char *) c->h_pin;
  unsigned *h_misc = (unsigned *) pin;
  float *h_kp = (float *) (pin + o_kp);
  float *h_desc = (float *) (pin + o_desc);
  float *h_ang = (float *) (pin + o_ang);
  float *h_win = (float *) (pin + o_win);
  float *h_gw = (float *) (pin + o_gw);
  uint8_t *h_mwin = (uint8_t *) (pin + o_mwin);

  cudaStream_t s = c->stream;
  CK (cudaEventRecord (c->ev[0], s), "cudaEventRecord");
  /* the frame and the mask */
  const float *d_img;
  const uint8_t *d_mask;
  int r = frame_in (c, img, img_on_device, &d_img, &d_mask, errbuf, errlen);
  if (r < 0)
    return r;
  memcpy (h_gw, tab->gw_ori, (size_t) side * side * sizeof (float));
  memcpy (h_gw + (size_t) side * side, tab->gw_desc, (size_t) side * side * sizeof (float));
  CK (cudaMemcpyAsync (c->d_gw, h_gw, ngw * sizeof (float), cudaMemcpyHostToDevice, s),
      "weights upload");
  if (!detect) {
    for (int i = 0; i < host_n; i++) {
      h_kp[3 * i] = host_kp[i].x;
      h_kp[3 * i + 1] = host_kp[i].y;
      h_kp[3 * i + 2] = host_kp[i].response;
    }
    CK (cudaMemcpyAsync (c->d_kin, h_kp, (size_t) host_n * 3 * sizeof (float),
            cudaMemcpyHostToDevice, s), "keypoint upload");
  }
  CK (cudaEventRecord (c->ev[1], s), "cudaEventRecord");

  const dim3 rowblk (256), rowgrid ((unsigned) ((w + 255) / 256), (unsigned) h);
  if (detect) {
    r = detect_launch (c, d_img, d_mask, w, h, kpp, lim, &pl, errbuf, errlen);
    if (r < 0)
      return r;
  } else {
    CK (cudaMemsetAsync (c->d_misc, 0, 4 * sizeof (unsigned), s), "cudaMemset");
  }
  SmoothTaps taps;
  memset (&taps, 0, sizeof taps);
  taps.rr = tab->rr;
  memcpy (taps.wt, tab->wt, sizeof (float) * (2 * tab->rr + 1));
  smooth_rows_kernel<<<rowgrid, rowblk, 0, s>>> (d_img, d_mask, w, h, taps, c->d_tmp);
  smooth_cols_kernel<<<rowgrid, rowblk, 0, s>>> (c->d_tmp, d_mask, w, h, taps, c->d_smooth);
  gradient_kernel<<<rowgrid, rowblk, 0, s>>> (c->d_smooth, d_mask, w, h, c->d_gx, c->d_gy,
      c->d_gv);
  DescParams P;
  memset (&P, 0, sizeof P);
  P.gx = c->d_gx;
  P.gy = c->d_gy;
  P.smooth = c->d_smooth;
  P.gv = c->d_gv;
  P.w = w;
  P.h = h;
  P.order = c->d_order;
  P.kin = c->d_kin;
  P.misc = c->d_misc;
  P.host_n = detect ? -1 : host_n;
  P.lim = lim;
  P.gw_ori = c->d_gw;
  P.gw_desc = c->d_gw + (size_t) side * side;
  P.R = dp->radius;
  P.size = size;
  P.subpixel = dp->subpixel ? 1 : 0;
  P.k_ori = tab->k_ori;
  P.k_theta = tab->k_theta;
  P.k_desc = tab->k_desc;
  P.kp_out = c->d_kp;
  P.desc_out = c->d_desc;
  P.angle_out = c->d_angle;
  P.win_out = c->d_win;
  describe_kernel<<<(unsigned) ((lim + DWARPS - 1) / DWARPS), 32 * DWARPS, 0, s>>> (P);
  if (mwin)
    mask_window_kernel<<<(unsigned) lim, 128, 0, s>>> (c->d_kp, c->d_misc,
        detect ? -1 : host_n, lim, d_mask, w, h, c->d_mwin);
  CK (cudaGetLastError (), "descriptor kernels");
  CK (cudaEventRecord (c->ev[2], s), "cudaEventRecord");

  /* one download of everything (lim slots; n is known after it) */
  CK (cudaMemcpyAsync (h_misc, c->d_misc, 4 * sizeof (unsigned), cudaMemcpyDeviceToHost,
          s), "download (counts)");
  CK (cudaMemcpyAsync (h_kp, c->d_kp, (size_t) lim * 3 * sizeof (float),
          cudaMemcpyDeviceToHost, s), "download (keypoints)");
  CK (cudaMemcpyAsync (h_desc, c->d_desc, (size_t) lim * size * sizeof (float),
          cudaMemcpyDeviceToHost, s), "download (descriptors)");
  CK (cudaMemcpyAsync (h_ang, c->d_angle, (size_t) lim * sizeof (float),
          cudaMemcpyDeviceToHost, s), "download (angles)");
  CK (cudaMemcpyAsync (h_win, c->d_win, (size_t) lim * WAREA * sizeof (float),
          cudaMemcpyDeviceToHost, s), "download (windows)");
  if (mwin)
    CK (cudaMemcpyAsync (h_mwin, c->d_mwin, (size_t) lim * WAREA, cudaMemcpyDeviceToHost,
            s), "download (validity windows)");
  CK (cudaEventRecord (c->ev[3], s), "cudaEventRecord");
  CK (cudaStreamSynchronize (s), "feature kernels");
  if (h_misc[2]) {
    gr_set_err (errbuf, errlen, "internal error: a candidate bucket overflowed");
    return -GR_ERR_CUDA;
  }
  int n = detect ? (int) h_misc[1] : host_n;
  if (n > lim)
    n = lim;
  float ms = 0.f;
  if (cudaEventElapsedTime (&ms, c->ev[0], c->ev[1]) == cudaSuccess)
    stats->upload_ms = ms;
  if (cudaEventElapsedTime (&ms, c->ev[1], c->ev[2]) == cudaSuccess)
    stats->kernel_ms = ms;
  if (cudaEventElapsedTime (&ms, c->ev[2], c->ev[3]) == cudaSuccess)
    stats->download_ms = ms;
  cudaGetLastError ();
  stats->candidates = detect ? (int) h_misc[3] : -1;
  for (int i = 0; i < n; i++) {
    kp[i].x = h_kp[3 * i];
    kp[i].y = h_kp[3 * i + 1];
    kp[i].response = h_kp[3 * i + 2];
  }
  memcpy (desc, h_desc, (size_t) n * size * sizeof (float));
  if (angle)
    memcpy (angle, h_ang, (size_t) n * sizeof (float));
  /* the windows into the host's smoothed plane (and validity plane) */
  for (int i = 0; i < n; i++) {
    const int wx = (int) lrintf (kp[i].x), wy = (int) lrintf (kp[i].y);
    scatter_window (smooth, w, h, wx, wy, h_win + (size_t) i * WAREA);
    if (mwin)
      scatter_window (valid, w, h, wx, wy, h_mwin + (size_t) i * WAREA);
  }
  return n;
}
