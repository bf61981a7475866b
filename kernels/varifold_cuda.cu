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
    const Cell4<S> *__restrict__ cb, const Cell4<S> *__restrict__ nb, int G, int gchunk,
    S kexp, double k, double *__restrict__ row, double *__restrict__ gc,
    double *__restrict__ gn)
{
  /* blockIdx.y: the part of B's cells this block sums (g0 .. g1), into its own slice
   * of the outputs (row [F], gc and gn [3 F] per part); one part: all of B */
  const int g0 = blockIdx.y * gchunk, g1 = min (G, g0 + gchunk);
  row += (size_t) blockIdx.y * F;
  if (GRAD) {
    gc += (size_t) blockIdx.y * 3 * F;
    gn += (size_t) blockIdx.y * 3 * F;
  }
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
  for (int base = g0; base < g1; base += VBLOCK) {
    const int gg = base + threadIdx.x;
    if (gg < g1) {
      sc[threadIdx.x] = cb[gg];
      if (KIND)
        sn[threadIdx.x] = nb[gg];
    }
    __syncthreads ();
    const int cnt = min (VBLOCK, g1 - base);
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

/* ---- the device term: the shooting's data term without a host round trip ----------
 *
 * From the source's vertices on the device (the shooting's q(1): 4 doubles per vertex,
 * x y z 0), k_vf_features forms the cells' centres and vectors (float64, then their S
 * copies with the inverse length as pack_cells makes them), the two rows launches
 * give <S, S> and <S, T> with their gradients on (c_f, n_f), k_vf_finish sums the rows
 * in a fixed order into d2, and k_vf_chain carries the gradient to the vertices by
 * gathering each vertex's incidences (CSR, in cell order: the CPU's order of
 * accumulation, no atomics, deterministic). */

template <typename S, int D, int K>
__global__ void
k_vf_features (const double *__restrict__ q, const unsigned *__restrict__ cells, int F,
    Cell4<S> *__restrict__ co, Cell4<S> *__restrict__ no)
{
  const int f = blockIdx.x * blockDim.x + threadIdx.x;
  if (f >= F)
    return;
  double c[3] = { 0, 0, 0 }, n[3] = { 0, 0, 0 };
  if (K == 1) {
#pragma unroll
    for (int d = 0; d < D; d++)
      c[d] = q[4 * (size_t) f + d];
  } else if (K == 2) {
    const double *a = q + 4 * (size_t) cells[2 * (size_t) f];
    const double *b = q + 4 * (size_t) cells[2 * (size_t) f + 1];
#pragma unroll
    for (int d = 0; d < D; d++) {
      c[d] = 0.5 * (a[d] + b[d]);
      n[d] = b[d] - a[d];
    }
  } else {
    const double *a = q + 4 * (size_t) cells[3 * (size_t) f];
    const double *b = q + 4 * (size_t) cells[3 * (size_t) f + 1];
    const double *e = q + 4 * (size_t) cells[3 * (size_t) f + 2];
    double e1[3], e2[3];
#pragma unroll
    for (int d = 0; d < 3; d++) {
      c[d] = (a[d] + b[d] + e[d]) / 3.0;
      e1[d] = b[d] - a[d];
      e2[d] = e[d] - a[d];
    }
    n[0] = 0.5 * (e1[1] * e2[2] - e1[2] * e2[1]);
    n[1] = 0.5 * (e1[2] * e2[0] - e1[0] * e2[2]);
    n[2] = 0.5 * (e1[0] * e2[1] - e1[1] * e2[0]);
  }
  Cell4<S> cc, nn;
  cc.x = (S) c[0];
  cc.y = (S) c[1];
  cc.z = (S) c[2];
  cc.w = (S) 0;
  co[f] = cc;
  if (K == 1)
    return;
  nn.x = (S) n[0];
  nn.y = (S) n[1];
  nn.z = (S) n[2];
  const double l = sqrt ((double) nn.x * nn.x + (double) nn.y * nn.y +
      (double) nn.z * nn.z);
  nn.w = l > 0 ? (S) (1.0 / l) : (S) 0;
  no[f] = nn;
}

/* The parts of a split rows launch summed into part 0, in part order. */
template <int D>
__global__ void
k_vf_sum_parts (double *__restrict__ row, double *__restrict__ gc, double *__restrict__ gn,
    int F, int parts)
{
  const int f = blockIdx.x * blockDim.x + threadIdx.x;
  if (f >= F)
    return;
  const size_t F3 = 3 * (size_t) F;
  double r = row[f];
  for (int p = 1; p < parts; p++)
    r += row[(size_t) p * F + f];
  row[f] = r;
#pragma unroll
  for (int d = 0; d < D; d++) {
    double a = gc[(size_t) d * F + f], b = gn[(size_t) d * F + f];
    for (int p = 1; p < parts; p++) {
      a += gc[p * F3 + (size_t) d * F + f];
      b += gn[p * F3 + (size_t) d * F + f];
    }
    gc[(size_t) d * F + f] = a;
    gn[(size_t) d * F + f] = b;
  }
}

/* One block of 1024: m = sum rs - 2 sum rt + tt (each sum in a fixed order). */
__global__ void __launch_bounds__ (1024)
k_vf_finish (const double *__restrict__ rs, const double *__restrict__ rt, int F, double tt,
    double *__restrict__ m)
{
  __shared__ double ss[1024], st[1024];
  double a = 0, b = 0;
  for (int f = threadIdx.x; f < F; f += blockDim.x) {
    a += rs[f];
    b += rt[f];
  }
  ss[threadIdx.x] = a;
  st[threadIdx.x] = b;
  __syncthreads ();
  for (int h = blockDim.x / 2; h > 0; h >>= 1) {
    if ((int) threadIdx.x < h) {
      ss[threadIdx.x] += ss[threadIdx.x + h];
      st[threadIdx.x] += st[threadIdx.x + h];
    }
    __syncthreads ();
  }
  if (threadIdx.x == 0)
    m[0] = ss[0] - 2.0 * st[0] + tt;
}

/* d d2 / d vertex v (4 doubles per vertex out, lanes from D on 0), as varifold.c's
 * chain rule: G = 2 (S part - T part) per cell, then through the centre and vector. */
template <int D, int K>
__global__ void
k_vf_chain (const double *__restrict__ q, const unsigned *__restrict__ cells, int nv, int F,
    const int *__restrict__ vstart, const int *__restrict__ vinc,
    const double *__restrict__ gcs, const double *__restrict__ gns,
    const double *__restrict__ gct, const double *__restrict__ gnt, double *__restrict__ g)
{
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= nv)
    return;
  double acc[3] = { 0, 0, 0 };
  const int e0 = K == 1 ? v : vstart[v], e1n = K == 1 ? v + 1 : vstart[v + 1];
  for (int e = e0; e < e1n; e++) {
    const int inc = K == 1 ? v * K : vinc[e];
    const int f = inc / K, r = inc - f * K;
    double Gc[3] = { 0, 0, 0 }, Gn[3] = { 0, 0, 0 };
#pragma unroll
    for (int d = 0; d < D; d++) {
      Gc[d] = 2.0 * (gcs[(size_t) d * F + f] - gct[(size_t) d * F + f]);
      if (K > 1)
        Gn[d] = 2.0 * (gns[(size_t) d * F + f] - gnt[(size_t) d * F + f]);
    }
    if (K == 1) {
#pragma unroll
      for (int d = 0; d < D; d++)
        acc[d] += Gc[d];
    } else if (K == 2) {
#pragma unroll
      for (int d = 0; d < D; d++)
        acc[d] += 0.5 * Gc[d] + (r == 0 ? -Gn[d] : Gn[d]);
    } else {
      const double *a = q + 4 * (size_t) cells[3 * (size_t) f];
      const double *b = q + 4 * (size_t) cells[3 * (size_t) f + 1];
      const double *c = q + 4 * (size_t) cells[3 * (size_t) f + 2];
      double x1[3], x2[3], g1[3], g2[3];
#pragma unroll
      for (int d = 0; d < 3; d++) {
        x1[d] = b[d] - a[d];
        x2[d] = c[d] - a[d];
      }
      g1[0] = 0.5 * (x2[1] * Gn[2] - x2[2] * Gn[1]);
      g1[1] = 0.5 * (x2[2] * Gn[0] - x2[0] * Gn[2]);
      g1[2] = 0.5 * (x2[0] * Gn[1] - x2[1] * Gn[0]);
      g2[0] = 0.5 * (Gn[1] * x1[2] - Gn[2] * x1[1]);
      g2[1] = 0.5 * (Gn[2] * x1[0] - Gn[0] * x1[2]);
      g2[2] = 0.5 * (Gn[0] * x1[1] - Gn[1] * x1[0]);
#pragma unroll
      for (int d = 0; d < 3; d++)
        acc[d] += Gc[d] / 3.0 + (r == 0 ? -g1[d] - g2[d] : r == 1 ? g1[d] : g2[d]);
    }
  }
  double *o = g + 4 * (size_t) v;
  o[0] = acc[0];
  o[1] = acc[1];
  o[2] = D == 3 ? acc[2] : 0.0;
  o[3] = 0.0;
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
  /* the device term (gr_varifold_cuda_set_source): the source's connectivity and
   * the outputs of its two rows launches (S against S, S against T) */
  int cell_size;
  size_t nv;                    /* source vertices */
  double tt;                    /* <T, T> */
  unsigned *cells_d;            /* [F * cell_size] */
  int *vstart_d, *vinc_d;       /* CSR: vertex v's incidences cell * k + corner */
  double *rs, *gcs, *gns, *rt, *gct, *gnt;   /* [parts F], [parts 3 F] */
  int parts;                    /* the term's rows launches split B over this many */
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
  cudaFree (c->cells_d);
  cudaFree (c->vstart_d);
  cudaFree (c->vinc_d);
  cudaFree (c->rs);
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

/* The outputs of one rows launch (device pointers) and the stream it goes on. */
struct RowsOut {
  double *row, *gc, *gn;
  cudaStream_t stream;
  int parts;                    /* B's cells split over this many block rows (>= 1) */
};

template <typename S, int D, int KIND, bool GRAD>
static void
launch_rows (GrVarifoldCuda *c, int a, int b, const RowsOut &o)
{
  const int F = (int) c->F[a], G = (int) c->F[b];
  const double kexp = sizeof (S) == sizeof (float) ? -c->inv_s2 * 1.4426950408889634
      : -c->inv_s2;
  const int parts = o.parts > 1 ? o.parts : 1;
  const int gchunk = (G + parts - 1) / parts;
  k_vf_rows<S, D, KIND, GRAD><<<dim3 ((F + VBLOCK - 1) / VBLOCK, parts), VBLOCK, 0,
      o.stream>>> ((const Cell4<S> *) c->c[a], (const Cell4<S> *) c->n[a], F,
      (const Cell4<S> *) c->c[b], (const Cell4<S> *) c->n[b], G, gchunk, (S) kexp,
      c->inv_s2, o.row, o.gc, o.gn);
}

template <typename S, int D, bool GRAD>
static void
launch_kind (GrVarifoldCuda *c, int a, int b, const RowsOut &o)
{
  switch (c->kind) {
    case 0: launch_rows<S, D, 0, GRAD> (c, a, b, o); break;
    case 1: launch_rows<S, D, 1, GRAD> (c, a, b, o); break;
    default: launch_rows<S, D, 2, GRAD> (c, a, b, o); break;
  }
}

template <typename S>
static void
launch_type (GrVarifoldCuda *c, int a, int b, bool grad, const RowsOut &o)
{
  if (c->dim == 3)
    grad ? launch_kind<S, 3, true> (c, a, b, o) : launch_kind<S, 3, false> (c, a, b, o);
  else
    grad ? launch_kind<S, 2, true> (c, a, b, o) : launch_kind<S, 2, false> (c, a, b, o);
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
  const RowsOut o = { c->row, c->gc, c->gn, 0, 1 };
  if (c->f64)
    launch_type<double> (c, a, b, grad, o);
  else
    launch_type<float> (c, a, b, grad, o);
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

/* ---- the device term, host side --------------------------------------------------- */

extern "C" int
gr_varifold_cuda_device (const GrVarifoldCuda *c)
{
  return c->dev;
}

extern "C" GrStatus
gr_varifold_cuda_set_source (GrVarifoldCuda *c, size_t nv, int cell_size,
    const uint32_t *cells, size_t ncells, double tt, char *errbuf, size_t errlen)
{
  const size_t F = cell_size == 1 ? nv : ncells;
  if (nv == 0 || nv > (size_t) 0x3fffffff || F == 0 || F * cell_size > (size_t) 0x7fffffff
      || cell_size < 1 || cell_size > 3 || (cell_size > 1) != (c->kind != 0) ||
      (cell_size > 1 && !cells)) {
    gr_set_err (errbuf, errlen, "bad source shape for the device term");
    return GR_ERR_INVALID;
  }
  if (!ck (cudaSetDevice (c->dev), "cudaSetDevice", errbuf, errlen))
    return GR_ERR_CUDA;
  cudaFree (c->cells_d);
  cudaFree (c->vstart_d);
  cudaFree (c->vinc_d);
  cudaFree (c->rs);
  c->cells_d = NULL;
  c->vstart_d = c->vinc_d = NULL;
  c->rs = NULL;
  c->nv = 0;
  /* the source's cell slot (1) sized for F: its features are written on the device */
  const size_t bytes = 4 * c->es * F;
  if (F > c->capF[1]) {
    cudaFree (c->c[1]);
    cudaFree (c->n[1]);
    c->c[1] = c->n[1] = NULL;
    c->capF[1] = 0;
    if (!ck (gr_cuda_malloc (&c->c[1], bytes), "cudaMalloc (varifold cells)", errbuf,
            errlen) ||
        !ck (gr_cuda_malloc (&c->n[1], bytes), "cudaMalloc (varifold cells)", errbuf,
            errlen))
      return GR_ERR_CUDA;
    c->capF[1] = F;
  }
  c->F[1] = F;
  /* One thread per source cell: below ~8 blocks per SM the device idles, so the
   * other shape's cells are split into parts, each summed by its own blocks and the
   * parts added in order afterwards (k_vf_sum_parts); parts of at least 2 tiles.
   * GEOREG_VARIFOLD_PARTS (1 .. 64) overrides, for tests and tuning. */
  {
    int sms = 0;
    if (cudaDeviceGetAttribute (&sms, cudaDevAttrMultiProcessorCount, c->dev) !=
        cudaSuccess || sms <= 0)
      sms = 1;
    cudaGetLastError ();
    const size_t nb = (F + VBLOCK - 1) / VBLOCK, Gmin = F < c->F[0] ? F : c->F[0];
    size_t P = (8 * (size_t) sms + nb - 1) / nb;
    const size_t Pmax = Gmin / (2 * VBLOCK) > 1 ? Gmin / (2 * VBLOCK) : 1;
    P = P < Pmax ? P : Pmax;
    P = P < 32 ? P : 32;
    const char *ev = getenv ("GEOREG_VARIFOLD_PARTS");
    if (ev && atoi (ev) >= 1 && atoi (ev) <= 64)
      P = (size_t) atoi (ev);
    c->parts = (int) (P > 0 ? P : 1);
  }
  /* rs, rt [parts F], gcs, gns, gct, gnt [parts 3 F]: one allocation */
  const size_t PF = (size_t) c->parts * F;
  if (!ck (gr_cuda_malloc ((void **) &c->rs, sizeof (double) * 14 * PF),
          "cudaMalloc (varifold term)", errbuf, errlen))
    return GR_ERR_CUDA;
  c->rt = c->rs + PF;
  c->gcs = c->rt + PF;
  c->gns = c->gcs + 3 * PF;
  c->gct = c->gns + 3 * PF;
  c->gnt = c->gct + 3 * PF;
  GrStatus st = GR_OK;
  if (cell_size > 1) {
    const size_t ne = F * cell_size;
    int *vstart = (int *) calloc (nv + 1, sizeof (int));
    int *vinc = (int *) malloc (sizeof (int) * ne);
    int *fill = (int *) malloc (sizeof (int) * nv);
    if (!vstart || !vinc || !fill) {
      gr_set_err (errbuf, errlen, "out of memory");
      st = GR_ERR_NOMEM;
    }
    for (size_t e = 0; st == GR_OK && e < ne; e++) {
      if (cells[e] >= nv) {
        gr_set_err (errbuf, errlen, "cell %zu refers to vertex %u of %zu", e / cell_size,
            cells[e], nv);
        st = GR_ERR_INVALID;
      } else {
        vstart[cells[e] + 1]++;
      }
    }
    if (st == GR_OK) {
      for (size_t v = 0; v < nv; v++) {
        vstart[v + 1] += vstart[v];
        fill[v] = vstart[v];
      }
      /* in cell order: each vertex sums its cells as varifold.c does */
      for (size_t e = 0; e < ne; e++)
        vinc[fill[cells[e]]++] = (int) e;
      if (!ck (gr_cuda_malloc ((void **) &c->cells_d, sizeof (unsigned) * ne),
              "cudaMalloc (varifold term)", errbuf, errlen) ||
          !ck (gr_cuda_malloc ((void **) &c->vstart_d, sizeof (int) * (nv + 1)),
              "cudaMalloc (varifold term)", errbuf, errlen) ||
          !ck (gr_cuda_malloc ((void **) &c->vinc_d, sizeof (int) * ne),
              "cudaMalloc (varifold term)", errbuf, errlen) ||
          !ck (cudaMemcpy (c->cells_d, cells, sizeof (unsigned) * ne,
                  cudaMemcpyHostToDevice), "cudaMemcpy", errbuf, errlen) ||
          !ck (cudaMemcpy (c->vstart_d, vstart, sizeof (int) * (nv + 1),
                  cudaMemcpyHostToDevice), "cudaMemcpy", errbuf, errlen) ||
          !ck (cudaMemcpy (c->vinc_d, vinc, sizeof (int) * ne, cudaMemcpyHostToDevice),
              "cudaMemcpy", errbuf, errlen))
        st = GR_ERR_CUDA;
    }
    free (vstart);
    free (vinc);
    free (fill);
  }
  /* the copies from pageable memory may still be in flight when cudaMemcpy returns;
   * the shooting's graph runs on its own non-blocking stream */
  if (st == GR_OK && !ck (cudaDeviceSynchronize (), "cudaDeviceSynchronize", errbuf, errlen))
    st = GR_ERR_CUDA;
  if (st != GR_OK)
    return st;
  c->cell_size = cell_size;
  c->nv = nv;
  c->tt = tt;
  return GR_OK;
}

template <typename S, int D, int K>
static void
enqueue_term_k (GrVarifoldCuda *c, cudaStream_t s, const double *q, double *m, double *g)
{
  const int F = (int) c->F[1], nv = (int) c->nv;
  k_vf_features<S, D, K><<<(F + 255) / 256, 256, 0, s>>> (q, c->cells_d, F,
      (Cell4<S> *) c->c[1], (Cell4<S> *) c->n[1]);
  const RowsOut ss = { c->rs, c->gcs, c->gns, s, c->parts },
      st = { c->rt, c->gct, c->gnt, s, c->parts };
  launch_kind<S, D, true> (c, 1, 1, ss);
  launch_kind<S, D, true> (c, 1, 0, st);
  if (c->parts > 1) {
    k_vf_sum_parts<D><<<(F + 255) / 256, 256, 0, s>>> (c->rs, c->gcs, c->gns, F, c->parts);
    k_vf_sum_parts<D><<<(F + 255) / 256, 256, 0, s>>> (c->rt, c->gct, c->gnt, F, c->parts);
  }
  k_vf_finish<<<1, 1024, 0, s>>> (c->rs, c->rt, F, c->tt, m);
  k_vf_chain<D, K><<<(nv + 255) / 256, 256, 0, s>>> (q, c->cells_d, nv, F, c->vstart_d,
      c->vinc_d, c->gcs, c->gns, c->gct, c->gnt, g);
}

template <typename S>
static void
enqueue_term_t (GrVarifoldCuda *c, cudaStream_t s, const double *q, double *m, double *g)
{
  if (c->dim == 3) {
    switch (c->cell_size) {
      case 1: enqueue_term_k<S, 3, 1> (c, s, q, m, g); break;
      case 2: enqueue_term_k<S, 3, 2> (c, s, q, m, g); break;
      default: enqueue_term_k<S, 3, 3> (c, s, q, m, g); break;
    }
  } else if (c->cell_size == 1) {
    enqueue_term_k<S, 2, 1> (c, s, q, m, g);
  } else {
    enqueue_term_k<S, 2, 2> (c, s, q, m, g);
  }
}

extern "C" int
gr_varifold_cuda_enqueue_term (void *user, void *stream, const double *q1, double *m,
    double *g)
{
  GrVarifoldCuda *c = (GrVarifoldCuda *) user;
  if (!c->nv || !c->F[0])
    return (int) cudaErrorInvalidValue;
  cudaStream_t s = (cudaStream_t) stream;
  if (c->f64)
    enqueue_term_t<double> (c, s, q1, m, g);
  else
    enqueue_term_t<float> (c, s, q1, m, g);
  return (int) cudaGetLastError ();
}
