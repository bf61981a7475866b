/* nmiregister's per-frame device work and the device side of shared control imagery
 * (see register_cuda.h).
 *
 * Bit-identity with kernels/register.c: to_level, sample_bilinear and gr_fit_apply
 * (kernels/fit.c) are written below with the same operations in the same order, each
 * with an explicit IEEE intrinsic (the host build, x86-64 baseline, has no FMA).
 * The min / max of the value range are exact in any order.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_util.h"
#include "register_cuda.h"
#include "image.h"

#define RED_BLOCKS 1024
#define RED_THREADS 256

#define CK(call, what) GR_CUDA_CHECK (call, what, GR_ERR_CUDA)

/* ---- the host's expressions ------------------------------------------------ */

/* register.c's to_level */
__device__ __forceinline__ uint8_t
to_level_dev (double v, double a, double b, int levels)
{
  if (!(b > a))
    return 0;
  const double q = floor (__dmul_rn (__ddiv_rn (__dsub_rn (v, a), __dsub_rn (b, a)),
          (double) levels));
  return (uint8_t) (q < 0.0 ? 0 : q > levels - 1 ? levels - 1 : q);
}

struct Hmat {
  double h[9];
};

/* fit.c's gr_fit_apply */
__device__ __forceinline__ bool
fit_apply_dev (const Hmat &H, double x, double y, double *xo, double *yo)
{
  const double w = __dadd_rn (__dadd_rn (__dmul_rn (H.h[6], x), __dmul_rn (H.h[7], y)),
      H.h[8]);
  if (!isfinite (w) || fabs (w) < 1e-300)
    return false;
  const double u = __ddiv_rn (__dadd_rn (__dadd_rn (__dmul_rn (H.h[0], x),
              __dmul_rn (H.h[1], y)), H.h[2]), w);
  const double v = __ddiv_rn (__dadd_rn (__dadd_rn (__dmul_rn (H.h[3], x),
              __dmul_rn (H.h[4], y)), H.h[5]), w);
  if (!isfinite (u) || !isfinite (v))
    return false;
  *xo = u;
  *yo = v;
  return true;
}

/* register.c's sample_bilinear */
__device__ __forceinline__ bool
sample_dev (const float *d, size_t s, const uint8_t *m, int w, int h, double x, double y,
    double *v)
{
  if (!(x >= 0.0 && y >= 0.0 && x <= w - 1 && y <= h - 1))
    return false;
  const int x0 = (int) floor (x), y0 = (int) floor (y);
  const double fx = __dsub_rn (x, (double) x0), fy = __dsub_rn (y, (double) y0);
  const int x1 = fx > 0.0 ? x0 + 1 : x0, y1 = fy > 0.0 ? y0 + 1 : y0;
  if (m && (!m[(size_t) y0 * w + x0] || !m[(size_t) y0 * w + x1] ||
          !m[(size_t) y1 * w + x0] || !m[(size_t) y1 * w + x1]))
    return false;
  const double top = __dadd_rn (__dmul_rn ((double) d[y0 * s + x0], __dsub_rn (1.0, fx)),
      __dmul_rn ((double) d[y0 * s + x1], fx));
  const double bot = __dadd_rn (__dmul_rn ((double) d[y1 * s + x0], __dsub_rn (1.0, fx)),
      __dmul_rn ((double) d[y1 * s + x1], fx));
  *v = __dadd_rn (__dmul_rn (top, __dsub_rn (1.0, fy)), __dmul_rn (bot, fy));
  return true;
}

/* floats as unsigned keys that order like the values */
__device__ __forceinline__ unsigned
fkey (float f)
{
  const unsigned b = __float_as_uint (f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

static inline float
unkey (unsigned k)
{
  const unsigned b = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
  float f;
  memcpy (&f, &b, sizeof f);
  return f;
}

__device__ __forceinline__ unsigned
warp_min (unsigned v)
{
  for (int o = 16; o > 0; o >>= 1)
    v = min (v, __shfl_xor_sync (0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ unsigned
warp_max (unsigned v)
{
  for (int o = 16; o > 0; o >>= 1)
    v = max (v, __shfl_xor_sync (0xffffffffu, v, o));
  return v;
}

/* ---- kernels ---------------------------------------------------------------- */

/* red[0] = min key, red[1] = max key of the valid pixels (red[0] stays ~0u when none) */
__global__ void __launch_bounds__ (RED_THREADS)
minmax_kernel (const float *__restrict__ d, size_t stride, const uint8_t *__restrict__ m,
    int w, int h, unsigned *__restrict__ red)
{
  __shared__ unsigned smin[RED_THREADS / 32], smax[RED_THREADS / 32];
  const size_t n = (size_t) w * h;
  unsigned lo = 0xffffffffu, hi = 0u;
  for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
      i += (size_t) gridDim.x * blockDim.x) {
    if (m && !m[i])
      continue;
    const size_t y = i / (size_t) w, x = i - y * (size_t) w;
    const unsigned k = fkey (d[y * stride + x]);
    lo = min (lo, k);
    hi = max (hi, k);
  }
  lo = warp_min (lo);
  hi = warp_max (hi);
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  if (lane == 0) {
    smin[wid] = lo;
    smax[wid] = hi;
  }
  __syncthreads ();
  if (threadIdx.x == 0) {
    for (int i = 1; i < RED_THREADS / 32; i++) {
      lo = min (lo, smin[i]);
      hi = max (hi, smax[i]);
    }
    if (lo != 0xffffffffu) {
      atomicMin (&red[0], lo);
      atomicMax (&red[1], hi);
    }
  }
}

/* levels of the plane; vmax (may be NULL): the largest level of a valid pixel.  Rows
 * y = blockIdx.y, + gridDim.y, ... (any height) */
__global__ void
levels_kernel (const float *__restrict__ d, size_t stride, const uint8_t *__restrict__ m,
    int w, int h, double a, double b, int levels, uint8_t *__restrict__ out,
    unsigned *__restrict__ vmax)
{
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  for (int y = blockIdx.y; y < h; y += gridDim.y) {
    unsigned lv = 0;
    bool valid = false;
    if (x < w) {
      const size_t i = (size_t) y * w + x;
      valid = !m || m[i];
      lv = valid ? to_level_dev ((double) d[(size_t) y * stride + x], a, b, levels) : 0;
      out[i] = (uint8_t) lv;
    }
    if (vmax) {
      lv = warp_max (valid ? lv : 0u);
      if ((threadIdx.x & 31) == 0 && lv > 0u)
        atomicMax (vmax, lv);
    }
  }
}

/* register.c's lens_distort, operation by operation in round-to-nearest (no
 * contraction into fused multiply-adds): the host's bytes.  L: fx fy cx cy k1 k2 k3
 * p1 p2 */
__device__ static void
lens_distort_dev (const Hmat &L, double u, double v, double *ud, double *vd)
{
  const double x = __ddiv_rn (__dsub_rn (u, L.h[2]), L.h[0]);
  const double y = __ddiv_rn (__dsub_rn (v, L.h[3]), L.h[1]);
  const double xx = __dmul_rn (x, x), yy = __dmul_rn (y, y), xy = __dmul_rn (x, y);
  const double r2 = __dadd_rn (xx, yy);
  const double rad = __dadd_rn (1.0, __dmul_rn (r2, __dadd_rn (L.h[4], __dmul_rn (r2,
                  __dadd_rn (L.h[5], __dmul_rn (r2, L.h[6]))))));
  const double xd = __dadd_rn (__dadd_rn (__dmul_rn (x, rad),
          __dmul_rn (__dmul_rn (2.0, L.h[7]), xy)),
      __dmul_rn (L.h[8], __dadd_rn (r2, __dmul_rn (2.0, xx))));
  const double yd = __dadd_rn (__dadd_rn (__dmul_rn (y, rad),
          __dmul_rn (L.h[7], __dadd_rn (r2, __dmul_rn (2.0, yy)))),
      __dmul_rn (__dmul_rn (2.0, L.h[8]), xy));
  *ud = __dadd_rn (L.h[2], __dmul_rn (L.h[0], xd));
  *vd = __dadd_rn (L.h[3], __dmul_rn (L.h[1], yd));
}

/* one block per template: register.c's second-pass template of centre k */
__global__ void
resample_kernel (const float *__restrict__ d, size_t stride, const uint8_t *__restrict__ m,
    int w, int h, Hmat Hi, bool has_lens, Hmat lens, const int32_t *__restrict__ qxy,
    int T, double a, double b, int levels, uint8_t *__restrict__ tpl,
    uint8_t *__restrict__ tmk, int *__restrict__ nvalid)
{
  const int k = blockIdx.x, T2 = T * T, h2 = T / 2;
  const int t = threadIdx.x;
  bool ok = false;
  if (t < T2) {
    const int i = t % T, j = t / T;
    double su, sv, val = 0.0;
    ok = fit_apply_dev (Hi, (double) (qxy[2 * k] - h2 + i), (double) (qxy[2 * k + 1] - h2 + j),
        &su, &sv);
    if (ok && has_lens)
      lens_distort_dev (lens, su, sv, &su, &sv);
    ok = ok && sample_dev (d, stride, m, w, h, su, sv, &val);
    tpl[(size_t) k * T2 + t] = ok ? to_level_dev (val, a, b, levels) : 0;
    tmk[(size_t) k * T2 + t] = ok;
  }
  const int cnt = __syncthreads_count (ok);
  if (t == 0)
    nvalid[k] = cnt;
}

__global__ void
gather_kernel (const uint8_t *__restrict__ tpl, const uint8_t *__restrict__ tmk,
    const int *__restrict__ keep, int T2, uint8_t *__restrict__ otpl,
    uint8_t *__restrict__ otmk)
{
  const int j = blockIdx.x;
  const size_t src = (size_t) keep[j] * T2, dst = (size_t) j * T2;
  for (int t = threadIdx.x; t < T2; t += blockDim.x) {
    otpl[dst + t] = tpl[src + t];
    otmk[dst + t] = tmk[src + t];
  }
}

/* ---- the per-element state ------------------------------------------------------ */

struct GrRegisterCuda {
  int device;
  cudaStream_t stream;
  unsigned *d_red;              /* [0] min key, [1] max key */
  uint8_t *d_levels;
  size_t levels_cap;
  uint8_t *d_tpl, *d_tmk;       /* resampled templates */
  size_t tpl_cap;
  int *d_nvalid;
  size_t nvalid_cap;
  int32_t *d_q;
  size_t q_cap;
  int *d_keep;
  size_t keep_cap;
  uint8_t *d_gtpl, *d_gtmk;     /* gathered */
  size_t gtpl_cap;
};

extern "C" GrRegisterCuda *
gr_register_cuda_new (int device, char *errbuf, size_t errlen)
{
  cudaError_t e = cudaSetDevice (device);
  if (e != cudaSuccess) {
    gr_set_err (errbuf, errlen, "CUDA device %d: %s", device, cudaGetErrorString (e));
    cudaGetLastError ();
    return NULL;
  }
  GrRegisterCuda *rc = (GrRegisterCuda *) calloc (1, sizeof *rc);
  if (!rc) {
    gr_set_err (errbuf, errlen, "out of host memory");
    return NULL;
  }
  rc->device = device;
  e = cudaStreamCreateWithFlags (&rc->stream, cudaStreamNonBlocking);
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&rc->d_red, 2 * sizeof (unsigned));
  if (e != cudaSuccess) {
    gr_set_err (errbuf, errlen, "CUDA registration setup: %s", cudaGetErrorString (e));
    cudaGetLastError ();
    gr_register_cuda_free (rc);
    return NULL;
  }
  return rc;
}

extern "C" void
gr_register_cuda_free (GrRegisterCuda *rc)
{
  if (!rc)
    return;
  cudaSetDevice (rc->device);
  if (rc->stream)
    cudaStreamSynchronize (rc->stream);
  cudaFree (rc->d_red);
  cudaFree (rc->d_levels);
  cudaFree (rc->d_tpl);
  cudaFree (rc->d_tmk);
  cudaFree (rc->d_nvalid);
  cudaFree (rc->d_q);
  cudaFree (rc->d_keep);
  cudaFree (rc->d_gtpl);
  cudaFree (rc->d_gtmk);
  if (rc->stream)
    cudaStreamDestroy (rc->stream);
  cudaGetLastError ();
  free (rc);
}

static bool
plane_ok (const GrPlaneF *p)
{
  return p && p->data && p->width > 0 && p->height > 0 && p->stride >= (size_t) p->width;
}

extern "C" GrStatus
gr_register_cuda_minmax (GrRegisterCuda *rc, const GrPlaneF *dev, float *mn, float *mx,
    bool *any, char *errbuf, size_t errlen)
{
  if (!rc || !plane_ok (dev) || !mn || !mx || !any) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  CK (cudaSetDevice (rc->device), "cudaSetDevice");
  const unsigned init[2] = { 0xffffffffu, 0u };
  unsigned red[2];
  cudaStream_t s = rc->stream;
  CK (cudaMemcpyAsync (rc->d_red, init, sizeof init, cudaMemcpyHostToDevice, s),
      "reduction reset");
  const size_t n = (size_t) dev->width * dev->height;
  size_t blocks = (n + RED_THREADS - 1) / RED_THREADS;
  if (blocks > RED_BLOCKS)
    blocks = RED_BLOCKS;
  minmax_kernel<<<(unsigned) blocks, RED_THREADS, 0, s>>> (dev->data, dev->stride,
      dev->mask, dev->width, dev->height, rc->d_red);
  CK (cudaGetLastError (), "min-max kernel");
  CK (cudaMemcpyAsync (red, rc->d_red, sizeof red, cudaMemcpyDeviceToHost, s),
      "reduction download");
  CK (cudaStreamSynchronize (s), "min-max");
  *any = red[0] != 0xffffffffu;
  *mn = *any ? unkey (red[0]) : 0.f;
  *mx = *any ? unkey (red[1]) : 0.f;
  return GR_OK;
}

static GrStatus
launch_levels (cudaStream_t s, const GrPlaneF *dev, double a, double b, int levels,
    uint8_t *out, unsigned *vmax, char *errbuf, size_t errlen)
{
  const dim3 blk (256), grd ((unsigned) ((dev->width + 255) / 256),
      (unsigned) (dev->height < 65535 ? dev->height : 65535));
  levels_kernel<<<grd, blk, 0, s>>> (dev->data, dev->stride, dev->mask, dev->width,
      dev->height, a, b, levels, out, vmax);
  CK (cudaGetLastError (), "levels kernel");
  return GR_OK;
}

extern "C" GrStatus
gr_register_cuda_levels (GrRegisterCuda *rc, const GrPlaneF *dev, double a, double b,
    int levels, const uint8_t **d_levels, char *errbuf, size_t errlen)
{
  if (!rc || !plane_ok (dev) || levels < 2 || levels > 256 || !d_levels) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  CK (cudaSetDevice (rc->device), "cudaSetDevice");
  CK (gr_cuda_grow (&rc->d_levels, &rc->levels_cap, (size_t) dev->width * dev->height),
      "cudaMalloc (levels)");
  GrStatus st = launch_levels (rc->stream, dev, a, b, levels, rc->d_levels, NULL, errbuf,
      errlen);
  if (st != GR_OK)
    return st;
  CK (cudaStreamSynchronize (rc->stream), "levels");
  *d_levels = rc->d_levels;
  return GR_OK;
}

extern "C" GrStatus
gr_register_cuda_resample (GrRegisterCuda *rc, const GrPlaneF *dev, const double Hi[9],
    const double lens[9], const int32_t *qxy, int n, int T, double a, double b,
    int levels, int *nvalid, char *errbuf, size_t errlen)
{
  if (!rc || !plane_ok (dev) || !Hi || n < 0 || (n > 0 && (!qxy || !nvalid)) || T < 1 ||
      T > 15 || !(T & 1) || levels < 2 || levels > 256) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  if (n == 0)
    return GR_OK;
  CK (cudaSetDevice (rc->device), "cudaSetDevice");
  const size_t T2 = (size_t) T * T;
  if (rc->tpl_cap < T2 * n) {
    cudaFree (rc->d_tpl);
    cudaFree (rc->d_tmk);
    rc->d_tpl = rc->d_tmk = NULL;
    rc->tpl_cap = 0;
    const size_t cap = T2 * n + T2 * n / 4;
    CK (gr_cuda_malloc (&rc->d_tpl, cap), "cudaMalloc (templates)");
    CK (gr_cuda_malloc (&rc->d_tmk, cap), "cudaMalloc (template masks)");
    rc->tpl_cap = cap;
  }
  CK (gr_cuda_grow (&rc->d_nvalid, &rc->nvalid_cap, (size_t) n), "cudaMalloc (counts)");
  CK (gr_cuda_grow (&rc->d_q, &rc->q_cap, 2 * (size_t) n), "cudaMalloc (centres)");
  cudaStream_t s = rc->stream;
  CK (cudaMemcpyAsync (rc->d_q, qxy, sizeof (int32_t) * 2 * n, cudaMemcpyHostToDevice, s),
      "centre upload");
  Hmat H, L;
  memcpy (H.h, Hi, sizeof H.h);
  memset (L.h, 0, sizeof L.h);
  if (lens)
    memcpy (L.h, lens, sizeof L.h);
  resample_kernel<<<(unsigned) n, 256, 0, s>>> (dev->data, dev->stride, dev->mask,
      dev->width, dev->height, H, lens != NULL, L, rc->d_q, T, a, b, levels, rc->d_tpl,
      rc->d_tmk, rc->d_nvalid);
  CK (cudaGetLastError (), "template kernel");
  CK (cudaMemcpyAsync (nvalid, rc->d_nvalid, sizeof (int) * n, cudaMemcpyDeviceToHost, s),
      "count download");
  CK (cudaStreamSynchronize (s), "templates");
  return GR_OK;
}

extern "C" GrStatus
gr_register_cuda_gather (GrRegisterCuda *rc, const int *keep, int nkeep, int T,
    const uint8_t **d_tpl, const uint8_t **d_tmk, char *errbuf, size_t errlen)
{
  if (!rc || nkeep < 0 || (nkeep > 0 && !keep) || T < 1 || !d_tpl || !d_tmk) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  CK (cudaSetDevice (rc->device), "cudaSetDevice");
  const size_t T2 = (size_t) T * T;
  const size_t need = T2 * (nkeep > 0 ? nkeep : 1);
  if (rc->gtpl_cap < need) {
    cudaFree (rc->d_gtpl);
    cudaFree (rc->d_gtmk);
    rc->d_gtpl = rc->d_gtmk = NULL;
    rc->gtpl_cap = 0;
    CK (gr_cuda_malloc (&rc->d_gtpl, need + need / 4), "cudaMalloc (templates)");
    CK (gr_cuda_malloc (&rc->d_gtmk, need + need / 4), "cudaMalloc (template masks)");
    rc->gtpl_cap = need + need / 4;
  }
  if (nkeep > 0) {
    CK (gr_cuda_grow (&rc->d_keep, &rc->keep_cap, (size_t) nkeep),
        "cudaMalloc (indices)");
    cudaStream_t s = rc->stream;
    CK (cudaMemcpyAsync (rc->d_keep, keep, sizeof (int) * nkeep, cudaMemcpyHostToDevice,
            s), "index upload");
    gather_kernel<<<(unsigned) nkeep, 128, 0, s>>> (rc->d_tpl, rc->d_tmk, rc->d_keep,
        (int) T2, rc->d_gtpl, rc->d_gtmk);
    CK (cudaGetLastError (), "gather kernel");
    CK (cudaStreamSynchronize (s), "gather");
  }
  *d_tpl = rc->d_gtpl;
  *d_tmk = rc->d_gtmk;
  return GR_OK;
}

extern "C" GrStatus
gr_register_cuda_download (GrRegisterCuda *rc, const GrPlaneF *dev, GrPlaneF *host,
    char *errbuf, size_t errlen)
{
  if (!rc || !plane_ok (dev) || !host) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  CK (cudaSetDevice (rc->device), "cudaSetDevice");
  if (!host->data || host->width != dev->width || host->height != dev->height ||
      host->stride != (size_t) dev->width || (host->mask != NULL) != (dev->mask != NULL)) {
    gr_plane_clear (host);
    if (!gr_plane_alloc (host, dev->width, dev->height, dev->mask != NULL)) {
      gr_set_err (errbuf, errlen, "out of memory");
      return GR_ERR_NOMEM;
    }
  }
  cudaStream_t s = rc->stream;
  const size_t w = (size_t) dev->width, h = (size_t) dev->height;
  CK (cudaMemcpy2DAsync (host->data, host->stride * sizeof (float), dev->data,
          dev->stride * sizeof (float), w * sizeof (float), h, cudaMemcpyDeviceToHost, s),
      "plane download");
  if (dev->mask)
    CK (cudaMemcpyAsync (host->mask, dev->mask, w * h, cudaMemcpyDeviceToHost, s),
        "mask download");
  CK (cudaStreamSynchronize (s), "plane download");
  return GR_OK;
}

/* ---- shared control imagery --------------------------------------------------- */

extern "C" GrStatus
gr_cuda_plane_upload (int device, const GrPlaneF *host, GrPlaneF *dev, char *errbuf,
    size_t errlen)
{
  if (!plane_ok (host) || !dev) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  memset (dev, 0, sizeof *dev);
  const size_t w = (size_t) host->width, h = (size_t) host->height;
  bool masked = false;
  if (host->mask)
    for (size_t i = 0; i < w * h && !masked; i++)
      masked = host->mask[i] == 0;
  CK (cudaSetDevice (device), "cudaSetDevice");
  float *d = NULL;
  uint8_t *m = NULL;
  cudaError_t e = gr_cuda_malloc (&d, w * h * sizeof (float));
  if (e == cudaSuccess)
    e = gr_cuda_upload_2d (d, w * sizeof (float), host->data, host->stride * sizeof (float),
        w * sizeof (float), h);
  if (e == cudaSuccess && masked) {
    e = gr_cuda_malloc (&m, w * h);
    if (e == cudaSuccess)
      e = gr_cuda_upload (m, host->mask, w * h);
  }
  if (e != cudaSuccess) {
    gr_set_err (errbuf, errlen, "CUDA control upload (%zux%zu) failed: %s", w, h,
        cudaGetErrorString (e));
    cudaGetLastError ();
    cudaFree (d);
    cudaFree (m);
    return GR_ERR_CUDA;
  }
  dev->data = d;
  dev->mask = m;
  dev->width = host->width;
  dev->height = host->height;
  dev->stride = w;
  return GR_OK;
}

extern "C" GrStatus
gr_cuda_plane_levels (int device, const GrPlaneF *dev, double a, double b, int levels,
    uint8_t **d_out, int *vmax, char *errbuf, size_t errlen)
{
  if (!plane_ok (dev) || levels < 2 || levels > 256 || !d_out || !vmax) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  *d_out = NULL;
  *vmax = 0;
  CK (cudaSetDevice (device), "cudaSetDevice");
  uint8_t *out = NULL;
  unsigned *d_vmax = NULL;
  unsigned h_vmax = 0;
  cudaError_t e = gr_cuda_malloc (&out, (size_t) dev->width * dev->height);
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&d_vmax, sizeof (unsigned));
  if (e == cudaSuccess)
    e = cudaMemset (d_vmax, 0, sizeof (unsigned));
  if (e == cudaSuccess) {
    char buf[128] = "";
    if (launch_levels (0, dev, a, b, levels, out, d_vmax, buf, sizeof buf) != GR_OK)
      e = cudaErrorLaunchFailure;
  }
  if (e == cudaSuccess)
    e = cudaMemcpy (&h_vmax, d_vmax, sizeof (unsigned), cudaMemcpyDeviceToHost);
  cudaFree (d_vmax);
  if (e != cudaSuccess) {
    gr_set_err (errbuf, errlen, "CUDA control levels failed: %s", cudaGetErrorString (e));
    cudaGetLastError ();
    cudaFree (out);
    return GR_ERR_CUDA;
  }
  *d_out = out;
  *vmax = (int) h_vmax;
  return GR_OK;
}

extern "C" void
gr_cuda_device_free (int device, void *p)
{
  if (!p)
    return;
  cudaSetDevice (device);
  cudaFree (p);
  cudaGetLastError ();
}
