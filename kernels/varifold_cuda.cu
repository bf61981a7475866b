/* Varifold / currents / point-cloud data terms: the pair sums on CUDA (see varifold.h
 * for the maths and varifold_cpu_impl.h's vf_rows for the CPU twin these kernels must
 * agree with).
 *
 * One thread per cell f of shape A runs over every cell g of shape B; the block stages
 * VBLOCK cells of B at a time in shared memory, where all its threads read the same
 * cell at once (a broadcast).  Each pair is formed in the pair type S (float32, or
 * float64 in float64 mode) and its terms are summed in S over VFLUSH cells, then added
 * into float64 accumulators.  Cells are stored as 4-vectors: the centre, and the
 * vector n with its inverse length in the fourth lane (0 for a zero vector), so the
 * unoriented kernel needs no square root or division per pair.  The sums per row are
 * rearranged where that saves work per pair (exactly, in real arithmetic):
 *   sum_g dK/dc_f = -2 k sum_g K dc          (the -2 k applied once per row)
 *   sum_g w dO/dn_f (unoriented) = sum_g 2 w (n_f.n_g) / (|n_f| |n_g|) n_g
 *                                  - (sum_g K) n_f / |n_f|^2
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_util.h"
#include "varifold_cuda.h"

#define VBLOCK 128
#define VFLUSH 32

template <typename S> struct alignas (4 * sizeof (S)) Cell4 {
  S x, y, z, w;
};

/* w = exp(-k r2) from x = -k r2 (float64) or x = -k r2 log2(e) (float32: the hardware
 * ex2.approx, relative error < 2^-22, results below 2^-126 flushed to 0) */
__device__ __forceinline__ float
wexp (float x)
{
  float y;
  asm ("ex2.approx.ftz.f32 %0, %1;" : "=f" (y) : "f" (x));
  return y;
}

__device__ __forceinline__ double
wexp (double x)
{
  return exp (x);
}

/* acc: [0] sum K; [1 .. D] sum K dc; [1 + D .. 2 D] the n_g part of sum w dO/dn_f */
template <typename S, int D, int KIND, bool GRAD>
__global__ void __launch_bounds__ (VBLOCK)
k_vf_rows (const Cell4<S> *__restrict__ ca, const Cell4<S> *__restrict__ na, int F,
    const Cell4<S> *__restrict__ cb, const Cell4<S> *__restrict__ nb, int G, S kexp,
    double k, double *__restrict__ row, double *__restrict__ gc, double *__restrict__ gn)
{
  constexpr int NACC = GRAD ? 1 + 2 * D : 1;
  __shared__ Cell4<S> sc[VBLOCK], sn[VBLOCK];
  const int f = blockIdx.x * VBLOCK + threadIdx.x;
  const int fc = min (f, F - 1);
  const Cell4<S> cf = ca[fc];
  Cell4<S> nf;
  nf.x = nf.y = nf.z = nf.w = (S) 0;
  if (KIND)
    nf = na[fc];
  double acc[NACC];
  S part[NACC];
#pragma unroll
  for (int a = 0; a < NACC; a++) {
    acc[a] = 0.0;
    part[a] = (S) 0;
  }
  for (int base = 0; base < G; base += VBLOCK) {
    const int gg = base + threadIdx.x;
    if (gg < G) {
      sc[threadIdx.x] = cb[gg];
      if (KIND)
        sn[threadIdx.x] = nb[gg];
    }
    __syncthreads ();
    const int cnt = min (VBLOCK, G - base);
    for (int k0 = 0; k0 < cnt; k0 += VFLUSH) {
      const int k1 = min (k0 + VFLUSH, cnt);
#pragma unroll 4
      for (int j = k0; j < k1; j++) {
        const Cell4<S> cg = sc[j];
        S dc[3];
        dc[0] = cf.x - cg.x;
        dc[1] = cf.y - cg.y;
        dc[2] = D == 3 ? cf.z - cg.z : (S) 0;
        S r2 = dc[0] * dc[0];
#pragma unroll
        for (int d = 1; d < D; d++)
          r2 = fma (dc[d], dc[d], r2);
        const S w = wexp (r2 * kexp);
        S K = w, wn = (S) 0;
        Cell4<S> ng;
        ng.x = ng.y = ng.z = ng.w = (S) 0;
        if (KIND) {
          ng = sn[j];
          S dot = nf.x * ng.x;
          dot = fma (nf.y, ng.y, dot);
          if (D == 3)
            dot = fma (nf.z, ng.z, dot);
          if (KIND == 1) {              /* oriented: O = n_f . n_g, dO/dn_f = n_g */
            K = w * dot;
            wn = w;
          } else {                      /* unoriented: O = dot^2 / (|n_f| |n_g|) */
            const S t = dot * (nf.w * ng.w);
            K = w * (dot * t);
            wn = 2 * w * t;
          }
        }
        part[0] += K;
        if (GRAD) {
#pragma unroll
          for (int d = 0; d < D; d++)
            part[1 + d] = fma (K, dc[d], part[1 + d]);
          if (KIND) {
            part[1 + D] = fma (wn, ng.x, part[1 + D]);
            part[2 + D] = fma (wn, ng.y, part[2 + D]);
            if (D == 3)
              part[3 + D] = fma (wn, ng.z, part[3 + D]);
          }
        }
      }
#pragma unroll
      for (int a = 0; a < NACC; a++) {
        acc[a] += (double) part[a];
        part[a] = (S) 0;
      }
    }
    __syncthreads ();
  }
  if (f >= F)
    return;
  row[f] = acc[0];
  if (!GRAD)
    return;
  const double nfv[3] = { (double) nf.x, (double) nf.y, (double) nf.z };
  const double inv_nf2 = (double) nf.w * (double) nf.w;
#pragma unroll
  for (int d = 0; d < D; d++) {
    gc[(size_t) d * F + f] = -2.0 * k * acc[1 + d];
    double n = KIND ? acc[1 + D + d] : 0.0;
    if (KIND == 2)
      n -= acc[0] * inv_nf2 * nfv[d];
    gn[(size_t) d * F + f] = n;
  }
}

/* ---- host side --------------------------------------------------------------------- */

struct GrVarifoldCuda {
  int dev, dim, kind;
  bool f64;
  double inv_s2;
  size_t es;                    /* sizeof (S) */
  void *c[2], *n[2];            /* Cell4<S> per slot */
  size_t F[2], capF[2];
  double *row, *gc, *gn;        /* [capOut], [3 capOut] each */
  size_t capOut;
};

static bool
ck (cudaError_t e, const char *what, char *errbuf, size_t errlen)
{
  if (e == cudaSuccess)
    return true;
  gr_set_err (errbuf, errlen, "%s: %s", what, cudaGetErrorString (e));
  cudaGetLastError ();
  return false;
}

extern "C" void
gr_varifold_cuda_free (GrVarifoldCuda *c)
{
  if (!c)
    return;
  cudaSetDevice (c->dev);
  for (int s = 0; s < 2; s++) {
    cudaFree (c->c[s]);
    cudaFree (c->n[s]);
  }
  cudaFree (c->row);
  cudaFree (c->gc);
  cudaFree (c->gn);
  cudaGetLastError ();
  free (c);
}

extern "C" GrVarifoldCuda *
gr_varifold_cuda_new (int device, int dim, int kind, int float64, double inv_s2, char *desc,
    size_t desclen, char *errbuf, size_t errlen)
{
  if ((dim != 2 && dim != 3) || kind < 0 || kind > 2 || !(inv_s2 > 0)) {
    gr_set_err (errbuf, errlen, "bad varifold parameters");
    return NULL;
  }
  if (!ck (cudaSetDevice (device), "cudaSetDevice", errbuf, errlen))
    return NULL;
  cudaDeviceProp prop;
  if (!ck (cudaGetDeviceProperties (&prop, device), "cudaGetDeviceProperties", errbuf,
          errlen))
    return NULL;
  GrVarifoldCuda *c = (GrVarifoldCuda *) calloc (1, sizeof *c);
  if (!c) {
    gr_set_err (errbuf, errlen, "out of memory");
    return NULL;
  }
  c->dev = device;
  c->dim = dim;
  c->kind = kind;
  c->f64 = float64 != 0;
  c->inv_s2 = inv_s2;
  c->es = c->f64 ? sizeof (double) : sizeof (float);
  if (desc)
    snprintf (desc, desclen, "CUDA device %d: %s", device, prop.name);
  return c;
}

/* SoA [d][F] (float or double) -> Cell4<S>[F]; with_len: the inverse length in w */
template <typename S>
static void
pack_cells (const void *src, size_t F, int D, bool f64_src, bool with_len, Cell4<S> *dst)
{
  for (size_t f = 0; f < F; f++) {
    double v[3] = { 0, 0, 0 };
    for (int d = 0; d < D; d++)
      v[d] = f64_src ? ((const double *) src)[d * F + f] : ((const float *) src)[d * F + f];
    dst[f].x = (S) v[0];
    dst[f].y = (S) v[1];
    dst[f].z = (S) v[2];
    dst[f].w = (S) 0;
    if (with_len) {
      /* the length of the vector as the pairs see it (its S copy) */
      double l = sqrt ((double) dst[f].x * dst[f].x + (double) dst[f].y * dst[f].y +
          (double) dst[f].z * dst[f].z);
      dst[f].w = l > 0 ? (S) (1.0 / l) : (S) 0;
    }
  }
}

extern "C" GrStatus
gr_varifold_cuda_set_shape (GrVarifoldCuda *c, int slot, size_t F, const void *c_,
    const void *n_, char *errbuf, size_t errlen)
{
  if (slot < 0 || slot > 1 || F == 0 || F > (size_t) 0x7fffffff) {
    gr_set_err (errbuf, errlen, "bad shape for the device (%zu cells)", F);
    return GR_ERR_INVALID;
  }
  if (!ck (cudaSetDevice (c->dev), "cudaSetDevice", errbuf, errlen))
    return GR_ERR_CUDA;
  const size_t bytes = 4 * c->es * F;
  if (F > c->capF[slot]) {
    cudaFree (c->c[slot]);
    cudaFree (c->n[slot]);
    c->c[slot] = c->n[slot] = NULL;
    c->capF[slot] = 0;
    if (!ck (gr_cuda_malloc (&c->c[slot], bytes), "cudaMalloc (varifold cells)", errbuf,
            errlen) ||
        !ck (gr_cuda_malloc (&c->n[slot], bytes), "cudaMalloc (varifold cells)", errbuf,
            errlen))
      return GR_ERR_CUDA;
    c->capF[slot] = F;
  }
  void *tmp = malloc (bytes);
  if (!tmp) {
    gr_set_err (errbuf, errlen, "out of memory");
    return GR_ERR_NOMEM;
  }
  bool ok = true;
  for (int part = 0; ok && part < 2; part++) {
    const bool is_n = part == 1;
    if (is_n && c->kind == 0)
      break;                    /* points: no vectors */
    if (c->f64)
      pack_cells<double> (is_n ? n_ : c_, F, c->dim, true, is_n, (Cell4<double> *) tmp);
    else
      pack_cells<float> (is_n ? n_ : c_, F, c->dim, false, is_n, (Cell4<float> *) tmp);
    ok = ck (cudaMemcpy (is_n ? c->n[slot] : c->c[slot], tmp, bytes,
            cudaMemcpyHostToDevice), "cudaMemcpy", errbuf, errlen);
  }
  free (tmp);
  if (!ok)
    return GR_ERR_CUDA;
  c->F[slot] = F;
  return GR_OK;
}

template <typename S, int D, int KIND, bool GRAD>
static void
launch_rows (GrVarifoldCuda *c, int a, int b)
{
  const int F = (int) c->F[a], G = (int) c->F[b];
  const double kexp = sizeof (S) == sizeof (float) ? -c->inv_s2 * 1.4426950408889634
      : -c->inv_s2;
  k_vf_rows<S, D, KIND, GRAD><<<(F + VBLOCK - 1) / VBLOCK, VBLOCK>>> (
      (const Cell4<S> *) c->c[a], (const Cell4<S> *) c->n[a], F,
      (const Cell4<S> *) c->c[b], (const Cell4<S> *) c->n[b], G, (S) kexp, c->inv_s2,
      c->row, c->gc, c->gn);
}

template <typename S, int D, bool GRAD>
static void
launch_kind (GrVarifoldCuda *c, int a, int b)
{
  switch (c->kind) {
    case 0: launch_rows<S, D, 0, GRAD> (c, a, b); break;
    case 1: launch_rows<S, D, 1, GRAD> (c, a, b); break;
    default: launch_rows<S, D, 2, GRAD> (c, a, b); break;
  }
}

template <typename S>
static void
launch_type (GrVarifoldCuda *c, int a, int b, bool grad)
{
  if (c->dim == 3)
    grad ? launch_kind<S, 3, true> (c, a, b) : launch_kind<S, 3, false> (c, a, b);
  else
    grad ? launch_kind<S, 2, true> (c, a, b) : launch_kind<S, 2, false> (c, a, b);
}

extern "C" GrStatus
gr_varifold_cuda_rows (GrVarifoldCuda *c, int a, int b, double *row, double *gc,
    double *gn, char *errbuf, size_t errlen)
{
  if (a < 0 || a > 1 || b < 0 || b > 1 || c->F[a] == 0 || c->F[b] == 0) {
    gr_set_err (errbuf, errlen, "varifold shape not set on the device");
    return GR_ERR_INVALID;
  }
  if (!ck (cudaSetDevice (c->dev), "cudaSetDevice", errbuf, errlen))
    return GR_ERR_CUDA;
  const size_t F = c->F[a];
  if (F > c->capOut) {
    cudaFree (c->row);
    cudaFree (c->gc);
    cudaFree (c->gn);
    c->row = c->gc = c->gn = NULL;
    c->capOut = 0;
    if (!ck (gr_cuda_malloc (&c->row, sizeof (double) * F), "cudaMalloc (varifold rows)",
            errbuf, errlen) ||
        !ck (gr_cuda_malloc (&c->gc, sizeof (double) * 3 * F),
            "cudaMalloc (varifold rows)", errbuf, errlen) ||
        !ck (gr_cuda_malloc (&c->gn, sizeof (double) * 3 * F),
            "cudaMalloc (varifold rows)", errbuf, errlen))
      return GR_ERR_CUDA;
    c->capOut = F;
  }
  const bool grad = gc != NULL;
  if (c->f64)
    launch_type<double> (c, a, b, grad);
  else
    launch_type<float> (c, a, b, grad);
  const size_t dF = (size_t) c->dim * F;
  if (!ck (cudaGetLastError (), "varifold kernel launch", errbuf, errlen) ||
      !ck (cudaMemcpy (row, c->row, sizeof (double) * F, cudaMemcpyDeviceToHost),
          "varifold kernel", errbuf, errlen) ||
      (grad && !ck (cudaMemcpy (gc, c->gc, sizeof (double) * dF, cudaMemcpyDeviceToHost),
              "cudaMemcpy", errbuf, errlen)) ||
      (grad && gn && !ck (cudaMemcpy (gn, c->gn, sizeof (double) * dF,
                  cudaMemcpyDeviceToHost), "cudaMemcpy", errbuf, errlen)))
    return GR_ERR_CUDA;
  return GR_OK;
}
