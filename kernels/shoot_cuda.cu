/* Geodesic shooting: the CUDA backend (see shoot.h for the maths, shoot.c for the
 * CPU twin that these kernels must agree with).
 *
 * Matrix-free and fused: one kernel per time step evaluates every pair sum the step
 * needs (Hp and Hq forward; the four adjoint products backward) and applies the
 * step's update in its epilogue, so a step is one launch and no n x n buffer exists.
 * Work split: a group of `tpr` threads (32 by default) owns RPT rows and strides over
 * j; the block stages 256 j points at a time in shared memory (double-buffered with
 * cp.async in float32 mode) for all its groups.  Each thread keeps float32 partial
 * sums over one tile and adds them into float64 accumulators, which are reduced in a
 * fixed order (warp shuffles, then shared memory), so results are deterministic.
 * Integration states (q, p), the adjoint and the loss are float64; the kernels read
 * float32 copies of them for the pair arithmetic (float64 copies in float64 mode).
 * One evaluation = H2D copy of p0, 2 (T-1) step kernels (4 (T-1) for Ralston), a
 * one-block loss kernel and a D2H copy; the kernels are captured once into a CUDA
 * graph and replayed: no allocation and no host synchronization between the steps.
 * The variant choice (rows per thread, tiling, group size) is in gr_shoot_cuda_new.
 *
 * Populations: an engine holds `cap` evaluation slots.  Every launch has a second grid
 * dimension over slots (blockIdx.y = slot k); slot k evaluates subject active[k] (its
 * target), the first `count` slots are used and the blocks of the others return at
 * once.  One launch per time step thus covers every subject being evaluated, which is
 * what fills the GPU: one subject of n = 1847 is ~120 blocks, a few per SM.  Graphs
 * are captured for slot grids of cap, cap/4, cap/16, ... and an evaluation replays the
 * smallest that covers its count, so the tail of a fit (few subjects left) does not
 * pay for the empty slots.  A single subject is the same engine with cap = 1.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <cuda_runtime.h>
#include <cuda_pipeline.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_util.h"
#include "shoot_cuda.h"

#define CUTOFF 60.0           /* same as GR_SHOOT_CUTOFF in shoot.c */
#define BLOCK 256
#define CH 8

template <typename S> struct alignas (4 * sizeof (S)) V4 {
  S x, y, z, w;
};

template <typename S> __device__ __forceinline__ S
cget (const V4<S> &v, int d)
{
  return d == 0 ? v.x : (d == 1 ? v.y : v.z);
}

template <typename S> __device__ __forceinline__ void
cset (V4<S> &v, int d, S val)
{
  if (d == 0) v.x = val;
  else if (d == 1) v.y = val;
  else v.z = val;
}

template <typename S> __device__ __forceinline__ V4<S>
zero4 ()
{
  V4<S> v;
  v.x = v.y = v.z = v.w = (S) 0;
  return v;
}

template <typename S> __device__ __forceinline__ V4<S>
conv4 (const V4<double> &a)
{
  V4<S> v;
  v.x = (S) a.x;
  v.y = (S) a.y;
  v.z = (S) a.z;
  v.w = (S) 0;
  return v;
}

/* g = exp(-k r^2).  float: kl = -k log2(e) and the hardware ex2.approx (relative error
 * < 2^-22; results below 2^-126 flush to 0, which replaces the CPU's cutoff: both drop
 * terms < 1e-26 of the g_ii = 1 term).  double: kl = -k, exp, 0 beyond the cutoff. */
__device__ __forceinline__ float
gexp (float r2, float kl, float r2cut)
{
  float y;
  asm ("ex2.approx.ftz.f32 %0, %1;" : "=f" (y) : "f" (r2 * kl));
  return y;
}

__device__ __forceinline__ double
gexp (double r2, double kl, double r2cut)
{
  return r2 > r2cut ? 0.0 : exp (r2 * kl);
}

/* Stages BLOCK points of NA arrays, from base, into shared memory asynchronously
 * (cp.async on sm_80+); always commits a batch, possibly empty. */
template <typename S, int NA>
__device__ __forceinline__ void
stage_tile (V4<S> (*buf)[BLOCK], const V4<S> *const *src, int base, int n)
{
  const int jj = base + threadIdx.x;
  if (jj < n) {
#pragma unroll
    for (int a = 0; a < NA; a++)
      __pipeline_memcpy_async (&buf[a][threadIdx.x], &src[a][jj], sizeof (V4<S>));
  }
  __pipeline_commit ();
}

template <typename S> struct Bufs {
  int n, T, dim;
  const int *slots;             /* [0] = slots in use, [1 + k] = subject of slot k */
  double dt, k, c, lambda;
  S kl, r2cut;
  S alpha, beta;                /* row kernels: sqrt(k log2 e) and c / alpha */
  double inv_alpha, inv_beta;   /* their inverses (of them as rounded to S) */
  V4<S> *xq_s, *xp_s;           /* [T][n] pair copies of the states */
  V4<double> *xq_d, *xp_d;      /* [T][n] states */
  V4<S> *yq_s, *yp_s;           /* [T-1][n] Ralston stage states */
  V4<double> *k1q, *k1p;        /* [n] Ralston first-stage derivatives */
  V4<double> *hp0;              /* [n] Hp(q0, p0) */
  double *erow;                 /* [n] p0_i . Hp_i */
  V4<double> *tgt;              /* [n] */
  V4<double> *La_d, *Lb_d;      /* [n] adjoint */
  V4<S> *La_s, *Lb_s;           /* [2][n] its pair copies (ping-pong) */
  V4<double> *mua, *mub;        /* [n] Ralston */
  V4<S> *wa_s, *wb_s;           /* [n] Ralston */
  double *p0_in;                /* [n * D] point-major */
  double *grad_out;             /* [n * D] point-major */
  double *scal;                 /* loss, kinetic, mismatch */
  const double *m1;             /* a device data term's mismatch at q(1) ([1]) */
  const V4<double> *g1;         /* and its gradient on q(1) ([n]); NULL: landmarks */
};

/* Moves b's pointers to the block's slot (blockIdx.y): its trajectory and work arrays,
 * and its subject's target.  False for a slot beyond the count in use. */
template <typename S>
__device__ __forceinline__ bool
at_slot (Bufs<S> &b)
{
  const int k = blockIdx.y;
  if (k >= b.slots[0])
    return false;
  const size_t n = b.n, T = b.T, kk = k;
  b.xq_s += kk * T * n;
  b.xp_s += kk * T * n;
  b.xq_d += kk * T * n;
  b.xp_d += kk * T * n;
  if (b.yq_s) {
    b.yq_s += kk * (T - 1) * n;
    b.yp_s += kk * (T - 1) * n;
    b.k1q += kk * n;
    b.k1p += kk * n;
    b.mua += kk * n;
    b.mub += kk * n;
    b.wa_s += kk * n;
    b.wb_s += kk * n;
  }
  b.hp0 += kk * n;
  b.erow += kk * n;
  b.tgt += (size_t) b.slots[1 + k] * n;
  b.La_d += kk * n;
  b.Lb_d += kk * n;
  b.La_s += 2 * kk * n;
  b.Lb_s += 2 * kk * n;
  b.p0_in += kk * n * b.dim;
  b.grad_out += kk * n * b.dim;
  b.scal += 4 * kk;
  return true;
}

enum { F_EULER = 0, F_RAL1 = 1, F_RAL2 = 2 };
enum { B_EULER = 0, B_RAL1 = 1, B_RAL2 = 2 };

/* Sums NA doubles per row over the tpr threads of a group; the result is valid in the
 * group's first thread.  Every thread of the block must call it. */
template <int NA>
__device__ __forceinline__ void
group_reduce (double *acc, int tpr, double *red)
{
#pragma unroll
  for (int a = 0; a < NA; a++) {
    double v = acc[a];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
      v += __shfl_xor_sync (0xffffffffu, v, off);
    acc[a] = v;
  }
  if (tpr > 32) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0)
#pragma unroll
      for (int a = 0; a < NA; a++)
        red[warp * NA + a] = acc[a];
    __syncthreads ();
    if ((threadIdx.x % tpr) == 0) {
      const int w0 = warp, nw = tpr >> 5;
#pragma unroll
      for (int a = 0; a < NA; a++) {
        double v = red[w0 * NA + a];
        for (int w = 1; w < nw; w++)
          v += red[(w0 + w) * NA + a];
        acc[a] = v;
      }
    }
  }
}

/* ---- the pair terms and the row updates (shared by both kernel layouts) ---------- */

/* Adds float32 partial sums into their float64 accumulators and clears them; sum a
 * is acc[a * STRIDE] (1: an array in registers; the row kernels' sums in shared
 * memory are columns of a thread). */
template <typename S, int NA, int STRIDE = 1>
__device__ __forceinline__ void
flush_part (double *acc, S *part)
{
#pragma unroll
  for (int a = 0; a < NA; a++) {
    acc[a * STRIDE] += (double) part[a];
    part[a] = (S) 0;
  }
}

/* a * b + c rounded once: the pair terms are written as chains of these, since the
 * compiler may not reassociate "p += x * y - u * v" into them itself */
__device__ __forceinline__ float
fmx (float a, float b, float c)
{
  return fmaf (a, b, c);
}

__device__ __forceinline__ double
fmx (double a, double b, double c)
{
  return fma (a, b, c);
}

/* One pair of the forward sums: part[0..D-1] += g p_j, part[D..2D-1] += g (p_i.p_j) dq
 * with dq = q_i - q_j.  3-D: 18 instructions (the exponential's MUFU included). */
template <typename S, int D>
__device__ __forceinline__ void
forward_pair (const S *qi, const S *pi, const V4<S> &qj, const V4<S> &pj, S kl, S r2cut,
    S *part)
{
  S dq[D];
#pragma unroll
  for (int d = 0; d < D; d++)
    dq[d] = qi[d] - cget (qj, d);
  S r2 = dq[0] * dq[0], pp = pi[0] * pj.x;
#pragma unroll
  for (int d = 1; d < D; d++) {
    r2 = fmx (dq[d], dq[d], r2);
    pp = fmx (pi[d], cget (pj, d), pp);
  }
  const S g = gexp (r2, kl, r2cut);
  const S gp = g * pp;
#pragma unroll
  for (int d = 0; d < D; d++) {
    part[d] = fmx (g, cget (pj, d), part[d]);
    part[D + d] = fmx (gp, dq[d], part[D + d]);
  }
}

/* The forward step's update of row i from its sums acc (as forward_pair's part, in
 * float64): the next state (Euler, Ralston's second stage) or the Ralston stage
 * state, and at t = 0 Hp(q0, p0) and the row's kinetic energy. */
template <typename S, int D, int MODE>
__device__ __forceinline__ void
forward_update (Bufs<S> &b, int t, int i, const double *acc)
{
  const int n = b.n;
  const double dt = b.dt;
  double hp[D], hq[D];
#pragma unroll
  for (int d = 0; d < D; d++) {
    hp[d] = acc[d];
    hq[d] = b.c * acc[D + d];
  }
  const size_t cur = (size_t) t * n + i, nxt = cur + n;
  const V4<double> xq = b.xq_d[cur], xp = b.xp_d[cur];
  if (MODE != F_RAL2 && t == 0) {
    V4<double> h = zero4<double> ();
    double e = 0.0;
#pragma unroll
    for (int d = 0; d < D; d++) {
      cset (h, d, hp[d]);
      e += cget (xp, d) * hp[d];
    }
    b.hp0[i] = h;
    b.erow[i] = e;
  }
  if (MODE == F_EULER) {
    V4<double> nq = zero4<double> (), np = zero4<double> ();
#pragma unroll
    for (int d = 0; d < D; d++) {
      cset (nq, d, cget (xq, d) + dt * hp[d]);
      cset (np, d, cget (xp, d) - dt * hq[d]);
    }
    b.xq_d[nxt] = nq;
    b.xp_d[nxt] = np;
    b.xq_s[nxt] = conv4<S> (nq);
    b.xp_s[nxt] = conv4<S> (np);
  } else if (MODE == F_RAL1) {
    const double h = 2.0 / 3.0 * dt;
    V4<double> k1q = zero4<double> (), k1p = zero4<double> ();
    V4<double> yq = zero4<double> (), yp = zero4<double> ();
#pragma unroll
    for (int d = 0; d < D; d++) {
      cset (k1q, d, hp[d]);
      cset (k1p, d, -hq[d]);
      cset (yq, d, cget (xq, d) + h * hp[d]);
      cset (yp, d, cget (xp, d) - h * hq[d]);
    }
    b.k1q[i] = k1q;
    b.k1p[i] = k1p;
    b.yq_s[cur] = conv4<S> (yq);
    b.yp_s[cur] = conv4<S> (yp);
  } else {
    const V4<double> k1q = b.k1q[i], k1p = b.k1p[i];
    V4<double> nq = zero4<double> (), np = zero4<double> ();
#pragma unroll
    for (int d = 0; d < D; d++) {
      cset (nq, d, cget (xq, d) + dt * (0.25 * cget (k1q, d) + 0.75 * hp[d]));
      cset (np, d, cget (xp, d) + dt * (0.25 * cget (k1p, d) - 0.75 * hq[d]));
    }
    b.xq_d[nxt] = nq;
    b.xp_d[nxt] = np;
    b.xq_s[nxt] = conv4<S> (nq);
    b.xp_s[nxt] = conv4<S> (np);
  }
}

/* One pair of the adjoint sums (see pair_vjp in shoot_cpu_impl.h):
 * part[0..D-1] += g [(A - c P s) dq - P db], part[D..2D-1] += g [a_j - c s p_j]
 * with A = a_i.p_j + a_j.p_i, P = p_i.p_j, s = dq.db.  3-D: 40 instructions (written
 * as below, where the plain expressions compiled to ~65). */
template <typename S, int D>
__device__ __forceinline__ void
backward_pair (const S *qi, const S *pi, const S *ai, const S *bi, const V4<S> &qj,
    const V4<S> &pj, const V4<S> &aj, const V4<S> &bj, S c, S kl, S r2cut, S *part)
{
  S dq[D], db[D];
#pragma unroll
  for (int d = 0; d < D; d++) {
    dq[d] = qi[d] - cget (qj, d);
    db[d] = bi[d] - cget (bj, d);
  }
  S r2 = dq[0] * dq[0], s = dq[0] * db[0], Pd = pi[0] * pj.x;
  S Ad = fmx (aj.x, pi[0], ai[0] * pj.x);
#pragma unroll
  for (int d = 1; d < D; d++) {
    r2 = fmx (dq[d], dq[d], r2);
    s = fmx (dq[d], db[d], s);
    Pd = fmx (pi[d], cget (pj, d), Pd);
    Ad = fmx (ai[d], cget (pj, d), Ad);
    Ad = fmx (cget (aj, d), pi[d], Ad);
  }
  const S g = gexp (r2, kl, r2cut);
  const S cs = c * s;
  const S c1 = g * fmx (-cs, Pd, Ad);     /* g (A - c P s) */
  const S c2 = -(g * Pd);                 /* -g P */
  const S c4 = -(g * cs);                 /* -c g s */
#pragma unroll
  for (int d = 0; d < D; d++) {
    part[d] = fmx (c2, db[d], fmx (c1, dq[d], part[d]));
    part[D + d] = fmx (c4, cget (pj, d), fmx (g, cget (aj, d), part[D + d]));
  }
}

/* The backward step's update of row i from its sums acc (as backward_pair's part, in
 * float64): the adjoint (Euler, Ralston's second stage) or the Ralston stage values,
 * and at t = 0 the gradient row.  rbuf: the ping-pong half the step read. */
template <typename S, int D, int MODE>
__device__ __forceinline__ void
backward_update (Bufs<S> &b, int t, int i, const double *acc, int rbuf)
{
  const int n = b.n;
  const double dt = b.dt;
  double ra[D], rb[D];
#pragma unroll
  for (int d = 0; d < D; d++) {
    ra[d] = b.c * acc[d];
    rb[d] = acc[D + d];
  }
  V4<double> la = b.La_d[i], lb = b.Lb_d[i];
  if (MODE == B_RAL1) {
    const double h = 0.75 * dt;
    V4<double> ma = zero4<double> (), mb = zero4<double> ();
    V4<double> wa = zero4<double> (), wb = zero4<double> ();
#pragma unroll
    for (int d = 0; d < D; d++) {
      cset (ma, d, h * ra[d]);
      cset (mb, d, h * rb[d]);
      cset (wa, d, 0.25 * dt * cget (la, d) + 2.0 / 3.0 * dt * h * ra[d]);
      cset (wb, d, 0.25 * dt * cget (lb, d) + 2.0 / 3.0 * dt * h * rb[d]);
    }
    b.mua[i] = ma;
    b.mub[i] = mb;
    b.wa_s[i] = conv4<S> (wa);
    b.wb_s[i] = conv4<S> (wb);
    return;
  }
  if (MODE == B_EULER) {
#pragma unroll
    for (int d = 0; d < D; d++) {
      cset (la, d, cget (la, d) + dt * ra[d]);
      cset (lb, d, cget (lb, d) + dt * rb[d]);
    }
  } else {
    const V4<double> ma = b.mua[i], mb = b.mub[i];
#pragma unroll
    for (int d = 0; d < D; d++) {
      cset (la, d, cget (la, d) + cget (ma, d) + ra[d]);
      cset (lb, d, cget (lb, d) + cget (mb, d) + rb[d]);
    }
  }
  b.La_d[i] = la;
  b.Lb_d[i] = lb;
  const int wbuf = MODE == B_EULER ? 1 - rbuf : 0;
  b.La_s[(size_t) wbuf * n + i] = conv4<S> (la);
  b.Lb_s[(size_t) wbuf * n + i] = conv4<S> (lb);
  if (t == 0) {
    const V4<double> h = b.hp0[i];
#pragma unroll
    for (int d = 0; d < D; d++)
      b.grad_out[(size_t) i * D + d] = cget (lb, d) + cget (h, d);
  }
}

/* ---- forward step ------------------------------------------------------------------ */

template <typename S, int D, int RPT, int MODE, int TILED>
__global__ void __launch_bounds__ (BLOCK)
k_forward (Bufs<S> b, int t, int tpr)
{
  __shared__ double red[(BLOCK / 32) * RPT * 2 * D];
  if (!at_slot (b))
    return;
  const int n = b.n;
  const int group = threadIdx.x / tpr, lane = threadIdx.x % tpr;
  const int row0 = (blockIdx.x * (BLOCK / tpr) + group) * RPT;
  const V4<S> *__restrict__ Q = (MODE == F_RAL2 ? b.yq_s : b.xq_s) + (size_t) t * n;
  const V4<S> *__restrict__ P = (MODE == F_RAL2 ? b.yp_s : b.xp_s) + (size_t) t * n;

  S qi[RPT][D], pi[RPT][D];
#pragma unroll
  for (int r = 0; r < RPT; r++) {
    int i = min (row0 + r, n - 1);
    V4<S> a = Q[i], c = P[i];
#pragma unroll
    for (int d = 0; d < D; d++) {
      qi[r][d] = cget (a, d);
      pi[r][d] = cget (c, d);
    }
  }
  /* acc[r][0..D-1] = sum g p_j; acc[r][D..2D-1] = sum g (p_i.p_j) dq */
  double acc[RPT * 2 * D];
  S part[RPT * 2 * D];
#pragma unroll
  for (int a = 0; a < RPT * 2 * D; a++) {
    acc[a] = 0.0;
    part[a] = (S) 0;
  }
  auto body = [&] (const V4<S> &qj, const V4<S> &pj) {
#pragma unroll
    for (int r = 0; r < RPT; r++)
      forward_pair<S, D> (qi[r], pi[r], qj, pj, b.kl, b.r2cut, part + r * 2 * D);
  };
  auto flush = [&] () {
    flush_part<S, RPT * 2 * D> (acc, part);
  };
  if constexpr (TILED == 0) {
    for (int j = lane; j < n;) {
#pragma unroll 2
      for (int ch = 0; ch < CH && j < n; ch++, j += tpr)
        body (Q[j], P[j]);
      flush ();
    }
  } else if constexpr (TILED == 2 && sizeof (S) == sizeof (float)) {
    /* double-buffered tiles: the next BLOCK points load (cp.async) while this tile's
     * are summed */
    __shared__ V4<S> sb[2][2][BLOCK];
    const V4<S> *src[2] = { Q, P };
    stage_tile<S, 2> (sb[0], src, 0, n);
    int cur = 0;
    for (int base = 0; base < n; base += BLOCK, cur ^= 1) {
      stage_tile<S, 2> (sb[cur ^ 1], src, base + BLOCK, n);
      __pipeline_wait_prior (1);
      __syncthreads ();
      const int cnt = min (BLOCK, n - base);
#pragma unroll 4
      for (int k = lane; k < cnt; k += tpr)
        body (sb[cur][0][k], sb[cur][1][k]);
      flush ();
      __syncthreads ();
    }
  } else {
    /* the block stages BLOCK points at a time in shared memory; every group reads them */
    __shared__ V4<S> sQ[BLOCK], sP[BLOCK];
    for (int base = 0; base < n; base += BLOCK) {
      const int jj = base + threadIdx.x;
      if (jj < n) {
        sQ[threadIdx.x] = Q[jj];
        sP[threadIdx.x] = P[jj];
      }
      __syncthreads ();
      const int cnt = min (BLOCK, n - base);
#pragma unroll 4
      for (int k = lane; k < cnt; k += tpr)
        body (sQ[k], sP[k]);
      flush ();
      __syncthreads ();
    }
  }
  group_reduce<RPT * 2 * D> (acc, tpr, red);
  if (lane != 0)
    return;

#pragma unroll
  for (int r = 0; r < RPT; r++) {
    const int i = row0 + r;
    if (i >= n)
      break;
    forward_update<S, D, MODE> (b, t, i, acc + r * 2 * D);
  }
}

/* ---- backward step ------------------------------------------------------------------ */

template <typename S, int D, int RPT, int MODE, int TILED>
__global__ void __launch_bounds__ (BLOCK)
k_backward (Bufs<S> b, int t, int tpr, int rbuf)
{
  __shared__ double red[(BLOCK / 32) * RPT * 2 * D];
  if (!at_slot (b))
    return;
  const int n = b.n;
  const int group = threadIdx.x / tpr, lane = threadIdx.x % tpr;
  const int row0 = (blockIdx.x * (BLOCK / tpr) + group) * RPT;
  const size_t off = (size_t) t * n;
  const V4<S> *__restrict__ Q = (MODE == B_RAL1 ? b.yq_s : b.xq_s) + off;
  const V4<S> *__restrict__ P = (MODE == B_RAL1 ? b.yp_s : b.xp_s) + off;
  const V4<S> *__restrict__ A = MODE == B_RAL2 ? b.wa_s : b.La_s + (size_t) rbuf * n;
  const V4<S> *__restrict__ B = MODE == B_RAL2 ? b.wb_s : b.Lb_s + (size_t) rbuf * n;
  const S c = (S) b.c;

  S qi[RPT][D], pi[RPT][D], ai[RPT][D], bi[RPT][D];
#pragma unroll
  for (int r = 0; r < RPT; r++) {
    int i = min (row0 + r, n - 1);
    V4<S> v0 = Q[i], v1 = P[i], v2 = A[i], v3 = B[i];
#pragma unroll
    for (int d = 0; d < D; d++) {
      qi[r][d] = cget (v0, d);
      pi[r][d] = cget (v1, d);
      ai[r][d] = cget (v2, d);
      bi[r][d] = cget (v3, d);
    }
  }
  /* acc[r][0..D-1]: sum g [(A - c P s) dq - P db]  (times c: ra)
   * acc[r][D..2D-1]: sum g [a_j - c s p_j]           (rb) */
  double acc[RPT * 2 * D];
  S part[RPT * 2 * D];
#pragma unroll
  for (int a = 0; a < RPT * 2 * D; a++) {
    acc[a] = 0.0;
    part[a] = (S) 0;
  }
  auto body = [&] (const V4<S> &qj, const V4<S> &pj, const V4<S> &aj, const V4<S> &bj) {
#pragma unroll
    for (int r = 0; r < RPT; r++)
      backward_pair<S, D> (qi[r], pi[r], ai[r], bi[r], qj, pj, aj, bj, c, b.kl, b.r2cut,
          part + r * 2 * D);
  };
  auto flush = [&] () {
    flush_part<S, RPT * 2 * D> (acc, part);
  };
  if constexpr (TILED == 0) {
    for (int j = lane; j < n;) {
#pragma unroll 2
      for (int ch = 0; ch < CH && j < n; ch++, j += tpr)
        body (Q[j], P[j], A[j], B[j]);
      flush ();
    }
  } else if constexpr (TILED == 2 && sizeof (S) == sizeof (float)) {
    __shared__ V4<S> sb[2][4][BLOCK];
    const V4<S> *src[4] = { Q, P, A, B };
    stage_tile<S, 4> (sb[0], src, 0, n);
    int cur = 0;
    for (int base = 0; base < n; base += BLOCK, cur ^= 1) {
      stage_tile<S, 4> (sb[cur ^ 1], src, base + BLOCK, n);
      __pipeline_wait_prior (1);
      __syncthreads ();
      const int cnt = min (BLOCK, n - base);
#pragma unroll 4
      for (int k = lane; k < cnt; k += tpr)
        body (sb[cur][0][k], sb[cur][1][k], sb[cur][2][k], sb[cur][3][k]);
      flush ();
      __syncthreads ();
    }
  } else {
    __shared__ V4<S> sQ[BLOCK], sP[BLOCK], sA[BLOCK], sB[BLOCK];
    for (int base = 0; base < n; base += BLOCK) {
      const int jj = base + threadIdx.x;
      if (jj < n) {
        sQ[threadIdx.x] = Q[jj];
        sP[threadIdx.x] = P[jj];
        sA[threadIdx.x] = A[jj];
        sB[threadIdx.x] = B[jj];
      }
      __syncthreads ();
      const int cnt = min (BLOCK, n - base);
#pragma unroll 4
      for (int k = lane; k < cnt; k += tpr)
        body (sQ[k], sP[k], sA[k], sB[k]);
      flush ();
      __syncthreads ();
    }
  }
  group_reduce<RPT * 2 * D> (acc, tpr, red);
  if (lane != 0)
    return;

#pragma unroll
  for (int r = 0; r < RPT; r++) {
    const int i = row0 + r;
    if (i >= n)
      break;
    backward_update<S, D, MODE> (b, t, i, acc + r * 2 * D, rbuf);
  }
}

/* ---- populations: one row per thread ----------------------------------------------
 *
 * With many subjects in one launch there are blocks enough without splitting a row's
 * sum over a group of threads, so each thread owns one row and runs over every j:
 * the block (RB threads, RB rows) stages RB points at a time in shared memory and all
 * its threads read the same point at once (a broadcast: one shared-memory wavefront
 * per load instead of one per 8 lanes), and no shuffle reduction is left.  The
 * float32 partial sums go into the float64 accumulators every WFLUSH points.  The
 * rows' sums are formed in another order than the grouped kernels' (so a subject's
 * values differ from the single-subject engine's by float32 rounding, within the CPU
 * agreement the tests ask of both).
 *
 * What a pair costs here is issue slots and shared-memory traffic, not exponentials
 * (docs/landmarkshoot.md, "Populations"), so the row kernels take the exponential's
 * scale out of the pair: the positions are staged multiplied by alpha =
 * sqrt(k log2 e), so |dq'|^2 is already the exponent and g = 2^-|dq'|^2 needs no
 * multiply, and the adjoint's b (which meets the positions in s = dq.db) times
 * beta = c / alpha, so that s' = dq'.db' is already c s; the sums that carry dq' or
 * db' are divided by alpha or beta once per row in float64.  Each kernel's block
 * shape (threads x rows a thread, RowShape) is chosen by timing (tune_rows). */
/* 128 rather than 32: a flush converts and adds 12 or 18 sums a row on the FP64 pipe
 * (docs/landmarkshoot.md); -DWFLUSH=n builds another for timing */
#ifndef WFLUSH
#define WFLUSH 128
#endif

/* A row kernel's shape: rb threads a block, rpt rows a thread (rows i0 + r rb), tp
 * points a staged tile (rb, or a multiple: every thread stages tp / rb of them; "t"
 * in the name), and the float64 sums in registers or in shared memory ("s": smem 1);
 * each serves the forward kernel, the adjoint or both (kernels).  The two kernels are
 * timed apart (tune_rows) and each keeps its fastest shape.  Every shape forms each
 * row's sums over j in the same order with the same flush points (multiples of
 * WFLUSH, and n), so all give the same values bit for bit.  __launch_bounds__ gives
 * no blocks an SM: naming even 1 frees ptxas from the register target it takes from
 * the thread count alone (the 32x2 adjoint then takes 145 registers instead of 128),
 * and naming more, to cap them, spilled.
 *
 * Counted in the SASS (sm_90, 3-D Euler), issue a pair-row: the unrolled pair loop
 * (17 instructions of forward arithmetic, 37 of adjoint, plus the staged point's 2 or
 * 3 shared reads and the loop control shared by the rows), plus what a tile adds a
 * warp (its staging with the exposed global-load latency, the loop bounds, two
 * barriers, the flush): forward 32x2 18.38 + 7% = 19.99, adjoint 32x2 38.75 + 4.6%
 * = 40.55.  The new shapes (predicted before they ran; registers, warps an SM):
 *  - larger tiles: the per-tile work once per 128 points; forward 32x2t128 19.0 (95,
 *    21), 64x2t128 18.9 (72, 28: two warps share the staging); adjoint 32x2t128 39.6
 *    (140, 14);
 *  - more rows a thread (the staged reads shared by 3 or 4 rows): forward 32x3t128
 *    18.3 (126, 16), 64x3t128 18.25 (128, 16), 32x4t128 18.0 (127, 16); adjoint
 *    32x3t128s 38.9 (128, 16), 32x4t128s 38.6 (138, 13 by shared memory);
 *  - the sums in shared memory: 2 registers a sum freed for 2 more instructions a
 *    sum a flush; forward 32x3t128s 18.5 (70, 26), 32x4t128s 18.1 (92, 21),
 *    64x4t128s 18.1 (92, 20), 32x4t64s 18.3 (92, 21); adjoint 32x2t128s 39.7 (104,
 *    19), 32x2t64s 40.15 (90, 21), 32x3t64s 39.2 (128, 16), 64x2s 40.0 (96, 20),
 *    64x3s 39.1 (128, 16): worth it where a kernel waits on latency with 4 warps a
 *    scheduler, which only the timing can say;
 *  - with_rows: a subject's last block runs only the rows it has: 64x2, 32x3, 32x4,
 *    64x3 and 64x4 sweep 1,856 rows' work for 1,847, not 1,920 (64x2 was 3.4% of its
 *    work wasted, and still timed within 0.6% of 32x2).
 * If time follows issue at today's efficiency, the fastest by count (forward 32x4t128,
 * adjoint 32x4t128s: 18.0 + 38.6 against 20.0 + 40.55) take the step pair of 500
 * subjects from 3.915 to about 3.65 ms (-6.5%), the 1,000-subject fit from 122.15 to
 * about 114 s on an H200; fewer warps an SM may cost some of it back, which is why
 * the shapes with more warps are offered too.  Measured on an H200: the tuner takes
 * forward 32x2t128 (1.208 ms a step of 500 subjects; 32x4t128 1.263) and adjoint
 * 32x3t64s (2.563 ms; 32x4t128s 2.813): pair 3.77 ms, the fit 118.70 s. */
enum { ROWS_FWD = 1, ROWS_ADJ = 2, ROWS_BOTH = 3 };   /* the kernels a shape serves */
struct RowShape {
  const char *name;
  int rb, rpt, tp, smem, kernels;
};
static constexpr RowShape row_shapes[] = {
  { "128x1", 128, 1, 128, 0, ROWS_BOTH }, { "64x1", 64, 1, 64, 0, ROWS_BOTH },
  { "32x2", 32, 2, 32, 0, ROWS_BOTH }, { "64x2", 64, 2, 64, 0, ROWS_BOTH },
  { "32x2t128", 32, 2, 128, 0, ROWS_BOTH }, { "32x4t128s", 32, 4, 128, 1, ROWS_BOTH },
  { "32x3t128", 32, 3, 128, 0, ROWS_FWD }, { "32x4t128", 32, 4, 128, 0, ROWS_FWD },
  { "32x3t128s", 32, 3, 128, 1, ROWS_FWD }, { "32x4t64s", 32, 4, 64, 1, ROWS_FWD },
  { "64x2t128", 64, 2, 128, 0, ROWS_FWD }, { "64x3t128", 64, 3, 128, 0, ROWS_FWD },
  { "64x4t128s", 64, 4, 128, 1, ROWS_FWD },
  { "32x2t64s", 32, 2, 64, 1, ROWS_ADJ }, { "32x2t128s", 32, 2, 128, 1, ROWS_ADJ },
  { "32x3t64s", 32, 3, 64, 1, ROWS_ADJ }, { "32x3t128s", 32, 3, 128, 1, ROWS_ADJ },
  { "64x2s", 64, 2, 64, 1, ROWS_ADJ }, { "64x3s", 64, 3, 64, 1, ROWS_ADJ },
};
static constexpr int ROW_SHAPES = sizeof row_shapes / sizeof row_shapes[0];
/* the shape of engines too small to time them (one row a thread: the most warps,
 * which few subjects need more than throughput) */
static constexpr int ROWS_DEFAULT = 1;

/* x * y rounded, never contracted into a later add: the scaled values must be the
 * same in every kernel shape (and the staged and the row copies alike), or the
 * shapes would part at rounding level. */
__device__ __forceinline__ float
mul_rn (float x, float y)
{
  return __fmul_rn (x, y);
}

__device__ __forceinline__ double
mul_rn (double x, double y)
{
  return __dmul_rn (x, y);
}

/* Row i's values of NA arrays (clamped to the last row: the threads past the end
 * still help stage the tiles), array a multiplied by sc[a] if bit a of SCALED is
 * set. */
template <typename S, int D, int NA, int SCALED>
__device__ __forceinline__ void
load_row (const V4<S> *const *src, int i, int n, const S *sc, S (*out)[D])
{
  const int ic = min (i, n - 1);
#pragma unroll
  for (int a = 0; a < NA; a++) {
    const V4<S> v = src[a][ic];
#pragma unroll
    for (int d = 0; d < D; d++)
      out[a][d] = (SCALED >> a) & 1 ? mul_rn (sc[a], cget (v, d)) : cget (v, d);
  }
}

/* How row_sweep stages a point of NA arrays: in float32 and 3-D the NA x 3 values are
 * packed into float4s (and a float2 for the last two), else NA V4s.  Every staged read
 * is a broadcast (all lanes read the same point), which hands 16 bytes to each of 32
 * lanes, 512 bytes a float4, and shared memory delivers 128 bytes a clock an SM: the
 * adjoint's four V4 reads a point (64 bytes, 16 of them the unused w) took 16 clocks a
 * warp against about 20 clocks of instruction issue for its two rows, a second bound
 * nearly as tight as the first.  Packed, the adjoint reads 48 bytes a point (12
 * clocks) and the forward step 24 instead of 32.  The values and the order of every
 * sum are unchanged. */
template <typename S, int NA, int D> struct Staging {
  static constexpr bool packed = false;
};
template <int NA> struct Staging<float, NA, 3> {
  static constexpr bool packed = true;
  static constexpr int words = NA * 3;
  static_assert (words % 2 == 0, "an even number of floats a point");
  static constexpr int n4 = words / 4, n2 = (words % 4) / 2;
};

/* A row kernel's staged tile: TP points of NA arrays, in the layout Staging says
 * (the arrays of the other layout are one element).  Packed: t4[i][k] holds floats
 * 4i..4i+3 of point k's NA x 3, t2[0][k] the last two when NA x 3 is not a multiple
 * of 4.  Declared once by the kernel, whichever rows-a-thread body (with_rows) runs. */
template <typename S, int NA, int D, int TP> struct RowTile {
  using Pk = Staging<float, NA, 3>;
  static constexpr bool P = Staging<S, NA, D>::packed;
  V4<S> v[P ? 1 : NA][P ? 1 : TP];
  float4 t4[P ? Pk::n4 : 1][P ? TP : 1];
  float2 t2[1][P && Pk::n2 > 0 ? TP : 1];
};

/* The row-per-thread sweep over all n points j: the block stages NA arrays (scaled
 * as load_row's), TP points at a time (TP / RB a thread), in tile; pair (pts, part)
 * adds one staged point's NA values (pts[a], V4s in registers) to the float32
 * partials, which go into the NACC float64 sums every WFLUSH points: acc (registers)
 * or, with SMEM, column threadIdx.x of accs ([NACC][RB] in shared memory), copied into
 * acc at the end.  Every thread of the block must call it. */
template <typename S, int D, int NA, int NACC, int RB, int TP, int SMEM, int SCALED,
    typename Pair>
__device__ __forceinline__ void
row_sweep (const V4<S> *const *src, int n, const S *sc, RowTile<S, NA, D, TP> &tile,
    double *accs, double *acc, Pair pair)
{
  static_assert (TP % RB == 0, "a tile of whole stagings");
  using Pk = Staging<float, NA, 3>;
  constexpr bool P = RowTile<S, NA, D, TP>::P;
  double *const mine = SMEM ? accs + threadIdx.x : accs;   /* this thread's column */
  S part[NACC];
#pragma unroll
  for (int a = 0; a < NACC; a++) {
    if constexpr (SMEM)
      mine[a * RB] = 0.0;
    else
      acc[a] = 0.0;
    part[a] = (S) 0;
  }
  for (int base = 0; base < n; base += TP) {
#pragma unroll
    for (int s0 = 0; s0 < TP; s0 += RB) {
      const int k = s0 + threadIdx.x, jj = base + k;
      if (jj >= n)
        break;
      V4<S> v[NA];
#pragma unroll
      for (int a = 0; a < NA; a++) {
        v[a] = src[a][jj];
        if ((SCALED >> a) & 1) {
          v[a].x = mul_rn (sc[a], v[a].x);
          v[a].y = mul_rn (sc[a], v[a].y);
          v[a].z = mul_rn (sc[a], v[a].z);
        }
      }
      if constexpr (P) {
        float w[NA * 3];
#pragma unroll
        for (int a = 0; a < NA; a++) {
          w[3 * a] = v[a].x;
          w[3 * a + 1] = v[a].y;
          w[3 * a + 2] = v[a].z;
        }
#pragma unroll
        for (int i = 0; i < Pk::n4; i++)
          tile.t4[i][k] = make_float4 (w[4 * i], w[4 * i + 1], w[4 * i + 2],
              w[4 * i + 3]);
        if constexpr (Pk::n2 > 0)
          tile.t2[0][k] = make_float2 (w[NA * 3 - 2], w[NA * 3 - 1]);
      } else {
#pragma unroll
        for (int a = 0; a < NA; a++)
          tile.v[a][k] = v[a];
      }
    }
    __syncthreads ();
    const int cnt = min (TP, n - base);
    /* flushed after every point j that closes a multiple of WFLUSH (and the last),
     * whatever TP: the partials run on across tiles when WFLUSH > TP */
    for (int k0 = 0; k0 < cnt;) {
      const int k1 = min ((base + k0) / WFLUSH * WFLUSH + WFLUSH - base, cnt);
#pragma unroll 8
      for (int k = k0; k < k1; k++) {
        V4<S> pts[NA];
        if constexpr (P) {
          float w[NA * 3];
#pragma unroll
          for (int i = 0; i < Pk::n4; i++) {
            const float4 q = tile.t4[i][k];
            w[4 * i] = q.x;
            w[4 * i + 1] = q.y;
            w[4 * i + 2] = q.z;
            w[4 * i + 3] = q.w;
          }
          if constexpr (Pk::n2 > 0) {
            const float2 q = tile.t2[0][k];
            w[NA * 3 - 2] = q.x;
            w[NA * 3 - 1] = q.y;
          }
#pragma unroll
          for (int a = 0; a < NA; a++) {
            pts[a].x = w[3 * a];
            pts[a].y = w[3 * a + 1];
            pts[a].z = w[3 * a + 2];
            pts[a].w = 0.0f;
          }
        } else {
#pragma unroll
          for (int a = 0; a < NA; a++)
            pts[a] = tile.v[a][k];
        }
        pair (pts, part);
      }
      if ((base + k1) % WFLUSH == 0 || base + k1 == n) {
        if constexpr (SMEM)
          flush_part<S, NACC, RB> (mine, part);
        else
          flush_part<S, NACC> (acc, part);
      }
      k0 = k1;
    }
    __syncthreads ();
  }
  if constexpr (SMEM) {
#pragma unroll
    for (int a = 0; a < NACC; a++)
      acc[a] = mine[a * RB];
  }
}

template <int R> struct Rows {
  static constexpr int value = R;
};

/* f (Rows<R> ()) with R the rows a thread needs in a block with `left` rows still to
 * go (RPT at most, in steps of RB): a subject's last block runs fewer rows a thread
 * instead of sweeping clamped copies of its last row (1,847 rows in blocks of 32x4:
 * 1,856 rows' work instead of 1,920).  Block-uniform, so the barriers in the sweep
 * stay uniform. */
template <int RPT, int RB, typename F>
__device__ __forceinline__ void
with_rows (int left, F &&f)
{
  if constexpr (RPT > 1) {
    if (left <= (RPT - 1) * RB) {
      with_rows<RPT - 1, RB> (left, f);
      return;
    }
  }
  f (Rows<RPT> ());
}

/* g = 2^-r2 for a prescaled r2 (the negation is an operand modifier of MUFU.EX2). */
__device__ __forceinline__ float
gexp_scaled (float r2)
{
  float y;
  asm ("ex2.approx.ftz.f32 %0, %1;" : "=f" (y) : "f" (-r2));
  return y;
}

__device__ __forceinline__ double
gexp_scaled (double r2)
{
  return exp2 (-r2);
}

/* forward_pair on prescaled positions: part[D..2D-1] collects g (p_i.p_j) dq'. */
template <typename S, int D>
__device__ __forceinline__ void
forward_pair_scaled (const S *qi, const S *pi, const V4<S> &qj, const V4<S> &pj,
    S *part)
{
  S dq[D];
#pragma unroll
  for (int d = 0; d < D; d++)
    dq[d] = qi[d] - cget (qj, d);
  S r2 = dq[0] * dq[0], pp = pi[0] * pj.x;
#pragma unroll
  for (int d = 1; d < D; d++) {
    r2 = fmx (dq[d], dq[d], r2);
    pp = fmx (pi[d], cget (pj, d), pp);
  }
  const S g = gexp_scaled (r2);
  const S gp = g * pp;
#pragma unroll
  for (int d = 0; d < D; d++) {
    part[d] = fmx (g, cget (pj, d), part[d]);
    part[D + d] = fmx (gp, dq[d], part[D + d]);
  }
}

/* backward_pair on prescaled q (dq' = alpha dq) and b (db' = beta db, beta = c /
 * alpha, so that s' = dq'.db' is c s): backward_pair's sums, the first split in two,
 * part[0..D-1] += g (A - c P s) dq' and part[2D..3D-1] += -g P db' (divided by alpha
 * and beta in float64), and part[D..2D-1] += g (a_j - c s p_j), one product by g
 * fewer than backward_pair's g a_j - (g c s) p_j.  3-D: 2 instructions a pair fewer
 * than backward_pair (the exponent's and c s's multiplies). */
template <typename S, int D>
__device__ __forceinline__ void
backward_pair_scaled (const S *qi, const S *pi, const S *ai, const S *bi,
    const V4<S> &qj, const V4<S> &pj, const V4<S> &aj, const V4<S> &bj, S *part)
{
  S dq[D], db[D];
#pragma unroll
  for (int d = 0; d < D; d++) {
    dq[d] = qi[d] - cget (qj, d);
    db[d] = bi[d] - cget (bj, d);
  }
  S r2 = dq[0] * dq[0], s = dq[0] * db[0], Pd = pi[0] * pj.x;
  S Ad = fmx (aj.x, pi[0], ai[0] * pj.x);
#pragma unroll
  for (int d = 1; d < D; d++) {
    r2 = fmx (dq[d], dq[d], r2);
    s = fmx (dq[d], db[d], s);
    Pd = fmx (pi[d], cget (pj, d), Pd);
    Ad = fmx (ai[d], cget (pj, d), Ad);
    Ad = fmx (cget (aj, d), pi[d], Ad);
  }
  const S g = gexp_scaled (r2);
  const S c1 = g * fmx (-s, Pd, Ad);      /* g (A - c P s) */
  const S c2 = -(g * Pd);                 /* -g P */
#pragma unroll
  for (int d = 0; d < D; d++) {
    part[d] = fmx (c1, dq[d], part[d]);
    part[2 * D + d] = fmx (c2, db[d], part[2 * D + d]);
    part[D + d] = fmx (g, fmx (-s, cget (pj, d), cget (aj, d)), part[D + d]);
  }
}

/* The row kernels: RB threads a block, each owning RPT rows (i0 + r RB), so that a
 * staged point, read from shared memory once, serves RPT rows: per pair that divides
 * the shared-memory traffic (2 and 3 broadcast reads a point, forward and adjoint)
 * and the load instructions by RPT.  A row's sums are formed in the same order
 * whatever the shape (the flush points are multiples of WFLUSH), so every shape
 * gives the same values bit for bit.  forward_rows and backward_rows are a block's
 * work with R rows a thread (with_rows picks R). */
template <typename S, int D, int MODE, int RB, int R, int TP, int SMEM>
__device__ __forceinline__ void
forward_rows (Bufs<S> &b, int t, int i0, RowTile<S, 2, D, TP> &tile, double *accs)
{
  const int n = b.n;
  const size_t off = (size_t) t * n;
  const V4<S> *src[2] = { (MODE == F_RAL2 ? b.yq_s : b.xq_s) + off,
    (MODE == F_RAL2 ? b.yp_s : b.xp_s) + off };
  const S sc[2] = { b.alpha, (S) 1 };
  S row[R][2][D];
#pragma unroll
  for (int r = 0; r < R; r++)
    load_row<S, D, 2, 1> (src, i0 + r * RB, n, sc, row[r]);
  double acc[R * 2 * D];
  row_sweep<S, D, 2, R * 2 * D, RB, TP, SMEM, 1> (src, n, sc, tile, accs, acc,
      [&] (const V4<S> *pts, S *part) {
    const V4<S> qj = pts[0], pj = pts[1];
#pragma unroll
    for (int r = 0; r < R; r++)
      forward_pair_scaled<S, D> (row[r][0], row[r][1], qj, pj, part + r * 2 * D);
  });
#pragma unroll
  for (int r = 0; r < R; r++) {
    const int i = i0 + r * RB;
    if (i >= n)
      break;
    double *ar = acc + r * 2 * D;
#pragma unroll
    for (int d = 0; d < D; d++)
      ar[D + d] = __dmul_rn (ar[D + d], b.inv_alpha);
    forward_update<S, D, MODE> (b, t, i, ar);
  }
}

template <typename S, int D, int MODE, int RB, int R, int TP, int SMEM>
__device__ __forceinline__ void
backward_rows (Bufs<S> &b, int t, int rbuf, int i0, RowTile<S, 4, D, TP> &tile,
    double *accs)
{
  const int n = b.n;
  const size_t off = (size_t) t * n;
  const V4<S> *src[4] = { (MODE == B_RAL1 ? b.yq_s : b.xq_s) + off,
    (MODE == B_RAL1 ? b.yp_s : b.xp_s) + off,
    MODE == B_RAL2 ? b.wa_s : b.La_s + (size_t) rbuf * n,
    MODE == B_RAL2 ? b.wb_s : b.Lb_s + (size_t) rbuf * n };
  const S sc[4] = { b.alpha, (S) 1, (S) 1, b.beta };
  S row[R][4][D];
#pragma unroll
  for (int r = 0; r < R; r++)       /* 9: q (array 0) and b (array 3) scaled */
    load_row<S, D, 4, 9> (src, i0 + r * RB, n, sc, row[r]);
  double acc[R * 3 * D];
  row_sweep<S, D, 4, R * 3 * D, RB, TP, SMEM, 9> (src, n, sc, tile, accs, acc,
      [&] (const V4<S> *pts, S *part) {
    const V4<S> qj = pts[0], pj = pts[1], aj = pts[2], bj = pts[3];
#pragma unroll
    for (int r = 0; r < R; r++)
      backward_pair_scaled<S, D> (row[r][0], row[r][1], row[r][2], row[r][3], qj, pj, aj,
          bj, part + r * 3 * D);
  });
#pragma unroll
  for (int r = 0; r < R; r++) {
    const int i = i0 + r * RB;
    if (i >= n)
      break;
    double *ar = acc + r * 3 * D;
#pragma unroll
    for (int d = 0; d < D; d++)     /* rounded as written, in every shape */
      ar[d] = __dadd_rn (__dmul_rn (ar[d], b.inv_alpha),
          __dmul_rn (ar[2 * D + d], b.inv_beta));
    backward_update<S, D, MODE> (b, t, i, ar, rbuf);
  }
}

/* The row kernel of one step: the forward's (Hp, Hq: 2 arrays staged, 2 D sums a row)
 * or the adjoint's (ADJ: 4 arrays, 3 D sums; rbuf its ping-pong buffer), MODE of the
 * kernel's F_ or B_ modes. */
template <typename S, int D, int MODE, int RB, int RPT, int TP, int SMEM, bool ADJ>
__global__ void __launch_bounds__ (RB)
k_rows (Bufs<S> b, int t, int rbuf)
{
  constexpr int NA = ADJ ? 4 : 2, NS = ADJ ? 3 : 2;
  if (!at_slot (b))
    return;
  __shared__ RowTile<S, NA, D, TP> tile;
  __shared__ double accs[SMEM ? RPT * NS * D : 1][SMEM ? RB : 1];
  const int first = blockIdx.x * RB * RPT;
  with_rows<RPT, RB> (b.n - first, [&] (auto rows) {
    constexpr int R = decltype (rows)::value;
    if constexpr (ADJ)
      backward_rows<S, D, MODE, RB, R, TP, SMEM> (b, t, rbuf, first + threadIdx.x, tile,
          &accs[0][0]);
    else
      forward_rows<S, D, MODE, RB, R, TP, SMEM> (b, t, first + threadIdx.x, tile,
          &accs[0][0]);
  });
}

/* ---- small kernels ----------------------------------------------------------------- */

template <typename S, int D>
__global__ void
k_init (Bufs<S> b)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= b.n || !at_slot (b))
    return;
  V4<double> p = zero4<double> ();
#pragma unroll
  for (int d = 0; d < D; d++)
    cset (p, d, b.p0_in[(size_t) i * D + d]);
  b.xp_d[i] = p;
  b.xp_s[i] = conv4<S> (p);
}

/* One block: mismatch, kinetic energy and loss in float64 (fixed-order reduction), and
 * the adjoint's terminal value: lambda (q(1) - target) for landmarks; with a device
 * data term (TERM), whose kernels ran just before, its mismatch m1 and
 * lambda / 2 dm/dq1, as shoot.c's cpu_backward. */
template <typename S, int D, bool TERM>
__global__ void __launch_bounds__ (1024)
k_terminal (Bufs<S> b)
{
  __shared__ double sm[1024], se[1024];
  if (!at_slot (b))
    return;
  const int n = b.n;
  const V4<double> *qT = b.xq_d + (size_t) (b.T - 1) * n;
  double m = 0.0, e = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    V4<double> a = zero4<double> ();
    if (TERM) {
      const V4<double> g = b.g1[i];
#pragma unroll
      for (int d = 0; d < D; d++)
        cset (a, d, 0.5 * b.lambda * cget (g, d));
    } else {
      V4<double> q = qT[i], tg = b.tgt[i];
#pragma unroll
      for (int d = 0; d < D; d++) {
        double r = cget (q, d) - cget (tg, d);
        m += r * r;
        cset (a, d, b.lambda * r);
      }
    }
    e += b.erow[i];
    b.La_d[i] = a;
    b.Lb_d[i] = zero4<double> ();
    b.La_s[i] = conv4<S> (a);
    b.Lb_s[i] = zero4<S> ();
  }
  sm[threadIdx.x] = m;
  se[threadIdx.x] = e;
  __syncthreads ();
  for (int h = blockDim.x / 2; h > 0; h >>= 1) {
    if ((int) threadIdx.x < h) {
      sm[threadIdx.x] += sm[threadIdx.x + h];
      se[threadIdx.x] += se[threadIdx.x + h];
    }
    __syncthreads ();
  }
  if (threadIdx.x == 0) {
    const double mm = TERM ? b.m1[0] : sm[0];
    b.scal[0] = 0.5 * se[0] + 0.5 * b.lambda * mm;
    b.scal[1] = 0.5 * se[0];
    b.scal[2] = mm;
  }
}

/* ---- host side ------------------------------------------------------------------- */

struct GrShootCuda {
  GrShootParams p;
  int dev, sms;
  int n, D, T;
  size_t es;                    /* sizeof (S) */
  int tpr, rpt;                 /* threads per row group, rows per thread */
  int tiled;                    /* j points staged in shared memory: 0 no, 1 one
                                 * buffer, 2 double-buffered (cp.async) */
  bool wide;                    /* one row per thread (k_rows): populations */
  int rowshape[2];              /* their shapes (row_shapes): forward, adjoint */
  bool rowtune[2];              /* each chosen by timing (tune_rows) */
  cudaStream_t stream;
  size_t cap;                   /* evaluation slots (subjects evaluated at once) */
  int ngraphs;
  cudaGraphExec_t exec[8];      /* for slot grids graph_slots[g], cap down to 1 */
  int graph_slots[8];
  void *arena;
  double *h_p0, *h_grad, *h_scal;   /* pinned, [cap] slots each */
  int *h_slots, *slots_d;       /* [0] = count, [1 + k] = subject of slot k */
  size_t inflight;              /* subjects of the submitted, uncollected evaluation */
  bool inflight_grad;
  /* device pointers, stored untyped; Bufs<S> is rebuilt from them */
  void *xq_s, *xp_s, *yq_s, *yp_s, *La_s, *Lb_s, *wa_s, *wb_s;
  V4<double> *xq_d, *xp_d, *k1q, *k1p, *hp0, *tgt, *La_d, *Lb_d, *mua, *mub;
  double *erow, *p0_in, *grad_out, *scal;
  /* a device data term (gr_shoot_cuda_set_term; single subject): its kernels are
   * captured into the graph between the forward and the adjoint passes */
  GrShootCudaTerm term;
  void *term_user;
  double *term_buf;             /* m1 ([4]) then g1 ([n] V4<double>) */
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

template <typename S>
static Bufs<S>
make_bufs (const GrShootCuda *c)
{
  Bufs<S> b;
  b.n = c->n;
  b.T = c->T;
  b.dim = c->D;
  b.slots = c->slots_d;
  b.dt = 1.0 / (c->T - 1);
  b.k = 1.0 / (2.0 * c->p.sigma * c->p.sigma);
  b.c = -1.0 / (c->p.sigma * c->p.sigma);
  b.lambda = c->p.lambda;
  if (sizeof (S) == sizeof (float))
    b.kl = (S) (-b.k * 1.4426950408889634);
  else
    b.kl = (S) (-b.k);
  b.r2cut = (S) (CUTOFF / b.k);
  b.alpha = (S) sqrt (b.k * 1.4426950408889634);
  b.inv_alpha = 1.0 / (double) b.alpha;
  b.beta = (S) (b.c / (double) b.alpha);
  b.inv_beta = 1.0 / (double) b.beta;
  b.xq_s = (V4<S> *) c->xq_s;
  b.xp_s = (V4<S> *) c->xp_s;
  b.yq_s = (V4<S> *) c->yq_s;
  b.yp_s = (V4<S> *) c->yp_s;
  b.La_s = (V4<S> *) c->La_s;
  b.Lb_s = (V4<S> *) c->Lb_s;
  b.wa_s = (V4<S> *) c->wa_s;
  b.wb_s = (V4<S> *) c->wb_s;
  b.xq_d = c->xq_d;
  b.xp_d = c->xp_d;
  b.k1q = c->k1q;
  b.k1p = c->k1p;
  b.hp0 = c->hp0;
  b.erow = c->erow;
  b.tgt = c->tgt;
  b.La_d = c->La_d;
  b.Lb_d = c->Lb_d;
  b.mua = c->mua;
  b.mub = c->mub;
  b.p0_in = c->p0_in;
  b.grad_out = c->grad_out;
  b.scal = c->scal;
  b.m1 = c->term ? c->term_buf : NULL;
  b.g1 = c->term ? (const V4<double> *) (c->term_buf + 4) : NULL;
  return b;
}

/* The end of the forward pass: the device data term's kernels (if any) on q(1), then
 * the loss and the adjoint's terminal value. */
template <typename S, int D>
static cudaError_t
enqueue_terminal (GrShootCuda *c, const Bufs<S> &b, int G)
{
  if (c->term) {
    const double *q1 = (const double *) (c->xq_d + (size_t) (c->T - 1) * c->n);
    int e = c->term (c->term_user, (void *) c->stream, q1, c->term_buf, c->term_buf + 4);
    if (e != (int) cudaSuccess)
      return (cudaError_t) e;
    k_terminal<S, D, true><<<dim3 (1, G), 1024, 0, c->stream>>> (b);
  } else {
    k_terminal<S, D, false><<<dim3 (1, G), 1024, 0, c->stream>>> (b);
  }
  return cudaGetLastError ();
}

/* Launches the row kernel (ADJ: the adjoint's) of mode MODE in shape v of row_shapes
 * (one that serves it) over G slots. */
template <bool ADJ, typename S, int D, int MODE, int V = 0>
static void
launch_rows (GrShootCuda *c, const Bufs<S> &b, int G, int v, int t, int rbuf)
{
  constexpr RowShape sh = row_shapes[V];
  if constexpr ((sh.kernels & (ADJ ? ROWS_ADJ : ROWS_FWD)) == 0) {
    /* not instantiated for this kernel */
  } else if (v == V) {
    const dim3 grid ((c->n + sh.rb * sh.rpt - 1) / (sh.rb * sh.rpt), G);
    k_rows<S, D, MODE, sh.rb, sh.rpt, sh.tp, sh.smem, ADJ><<<grid, sh.rb, 0, c->stream>>>
        (b, t, rbuf);
  }
  if constexpr (V + 1 < ROW_SHAPES) {
    if (v != V)
      launch_rows<ADJ, S, D, MODE, V + 1> (c, b, G, v, t, rbuf);
  }
}

/* True when the environment variable is set to 0. */
static bool
env_off (const char *name)
{
  const char *ev = getenv (name);
  return ev && *ev && atoi (ev) == 0;
}

/* Asks each row kernel of D dimensions (float32, every mode, every shape of each
 * kernel) for the largest shared-memory carveout.  The shapes' needs differ (16 KB a
 * block in 32x4t128s, 1.8 KB in 32x2), and blocks of kernels that want different
 * carveouts cannot share an SM, which must drain before it changes: the forward
 * kernel of one engine and the adjoint of the other run at once in a batched fit.
 * The row kernels' global loads (the staging, the row epilogues) have little to
 * reuse in L1.  Not measured yet: GEOREG_SHOOT_CARVE=0 leaves the driver's choice.
 * The F_ and B_ modes are 0, 1 and 2 alike. */
template <bool ADJ, int D, int V>
static void
carve_shape ()
{
  constexpr RowShape sh = row_shapes[V];
  if constexpr ((sh.kernels & (ADJ ? ROWS_ADJ : ROWS_FWD)) != 0) {
    const void *const k[3] = {
      (const void *) k_rows<float, D, 0, sh.rb, sh.rpt, sh.tp, sh.smem, ADJ>,
      (const void *) k_rows<float, D, 1, sh.rb, sh.rpt, sh.tp, sh.smem, ADJ>,
      (const void *) k_rows<float, D, 2, sh.rb, sh.rpt, sh.tp, sh.smem, ADJ> };
    for (int m = 0; m < 3; m++)
      cudaFuncSetAttribute (k[m], cudaFuncAttributePreferredSharedMemoryCarveout,
          cudaSharedmemCarveoutMaxShared);
  }
}

template <int D, int V = 0>
static void
carve_rows ()
{
  static_assert (F_RAL2 == 2 && B_RAL2 == 2, "modes 0, 1, 2");
  carve_shape<false, D, V> ();
  carve_shape<true, D, V> ();
  if constexpr (V + 1 < ROW_SHAPES)
    carve_rows<D, V + 1> ();
}

/* enqueue_eval with the row-per-thread kernels (populations, float32) in the engine's
 * shapes. */
template <typename S, int D>
static cudaError_t
enqueue_eval_rows (GrShootCuda *c, const Bufs<S> &b, int G)
{
  const int T = c->T, fv = c->rowshape[0], av = c->rowshape[1];
  const bool ral = c->p.integrator == GR_SHOOT_RALSTON;
  for (int t = 0; t + 1 < T; t++) {
    if (!ral) {
      launch_rows<false, S, D, F_EULER> (c, b, G, fv, t, 0);
    } else {
      launch_rows<false, S, D, F_RAL1> (c, b, G, fv, t, 0);
      launch_rows<false, S, D, F_RAL2> (c, b, G, fv, t, 0);
    }
  }
  {
    cudaError_t e = enqueue_terminal<S, D> (c, b, G);
    if (e != cudaSuccess)
      return e;
  }
  for (int t = T - 2; t >= 0; t--) {
    if (!ral) {
      launch_rows<true, S, D, B_EULER> (c, b, G, av, t, (T - 2 - t) & 1);
    } else {
      launch_rows<true, S, D, B_RAL1> (c, b, G, av, t, 0);
      launch_rows<true, S, D, B_RAL2> (c, b, G, av, t, 0);
    }
  }
  return cudaGetLastError ();
}

/* Enqueues the kernels of one evaluation of up to G slots on the stream (captured
 * into a graph; the copies around them are made per evaluation, sized by the count). */
template <typename S, int D, int RPT, int TILED>
static cudaError_t
enqueue_eval (GrShootCuda *c, int G)
{
  Bufs<S> b = make_bufs<S> (c);
  const int n = c->n, T = c->T, tpr = c->tpr;
  k_init<S, D><<<dim3 ((n + 255) / 256, G), 256, 0, c->stream>>> (b);
  const int rows_per_block = (BLOCK / tpr) * RPT;
  const dim3 grid ((n + rows_per_block - 1) / rows_per_block, G);
  const bool ral = c->p.integrator == GR_SHOOT_RALSTON;
  if constexpr (sizeof (S) == sizeof (float)) {
    if (c->wide)
      return enqueue_eval_rows<S, D> (c, b, G);
  }
  for (int t = 0; t + 1 < T; t++) {
    if (!ral) {
      k_forward<S, D, RPT, F_EULER, TILED><<<grid, BLOCK, 0, c->stream>>> (b, t, tpr);
    } else {
      k_forward<S, D, RPT, F_RAL1, TILED><<<grid, BLOCK, 0, c->stream>>> (b, t, tpr);
      k_forward<S, D, RPT, F_RAL2, TILED><<<grid, BLOCK, 0, c->stream>>> (b, t, tpr);
    }
  }
  {
    cudaError_t e = enqueue_terminal<S, D> (c, b, G);
    if (e != cudaSuccess)
      return e;
  }
  for (int t = T - 2; t >= 0; t--) {
    if (!ral) {
      int rbuf = (T - 2 - t) & 1;
      k_backward<S, D, RPT, B_EULER, TILED><<<grid, BLOCK, 0, c->stream>>> (b, t, tpr, rbuf);
    } else {
      k_backward<S, D, RPT, B_RAL1, TILED><<<grid, BLOCK, 0, c->stream>>> (b, t, tpr, 0);
      k_backward<S, D, RPT, B_RAL2, TILED><<<grid, BLOCK, 0, c->stream>>> (b, t, tpr, 0);
    }
  }
  return cudaGetLastError ();
}

template <typename S, int RPT, int TILED>
static cudaError_t
enqueue_dim (GrShootCuda *c, int G)
{
  return c->D == 3 ? enqueue_eval<S, 3, RPT, TILED> (c, G)
      : enqueue_eval<S, 2, RPT, TILED> (c, G);
}

template <typename S, int RPT>
static cudaError_t
enqueue_tiled (GrShootCuda *c, int G)
{
  switch (c->tiled) {
    case 0: return enqueue_dim<S, RPT, 0> (c, G);
    case 1: return enqueue_dim<S, RPT, 1> (c, G);
    default: return enqueue_dim<S, RPT, 2> (c, G);
  }
}

static cudaError_t
enqueue_dispatch (GrShootCuda *c, int G)
{
  if (c->p.precision == GR_SHOOT_FLOAT64)
    return c->tiled ? enqueue_dim<double, 1, 1> (c, G) : enqueue_dim<double, 1, 0> (c, G);
  return c->rpt == 1 ? enqueue_tiled<float, 1> (c, G) : enqueue_tiled<float, 2> (c, G);
}

/* Resident blocks per SM of the chosen backward kernel (the one that limits). */
template <typename S, int RPT, int TILED>
static int
occupancy_of (int D)
{
  int nb = 0;
  cudaError_t e = D == 3
      ? cudaOccupancyMaxActiveBlocksPerMultiprocessor (&nb,
      k_backward<S, 3, RPT, B_EULER, TILED>, BLOCK, 0)
      : cudaOccupancyMaxActiveBlocksPerMultiprocessor (&nb,
      k_backward<S, 2, RPT, B_EULER, TILED>, BLOCK, 0);
  cudaGetLastError ();
  return e == cudaSuccess && nb > 0 ? nb : 2;
}

template <int RPT>
static int
occupancy_float (const GrShootCuda *c)
{
  switch (c->tiled) {
    case 0: return occupancy_of<float, RPT, 0> (c->D);
    case 1: return occupancy_of<float, RPT, 1> (c->D);
    default: return occupancy_of<float, RPT, 2> (c->D);
  }
}

static int
occupancy (const GrShootCuda *c)
{
  if (c->p.precision == GR_SHOOT_FLOAT64)
    return c->tiled ? occupancy_of<double, 1, 1> (c->D) : occupancy_of<double, 1, 0> (c->D);
  return c->rpt == 1 ? occupancy_float<1> (c) : occupancy_float<2> (c);
}

static size_t
align_up (size_t x)
{
  return (x + 255) & ~(size_t) 255;
}

extern "C" void
gr_shoot_cuda_free (GrShootCuda *c)
{
  if (!c)
    return;
  cudaSetDevice (c->dev);
  if (c->inflight && c->stream)
    cudaStreamSynchronize (c->stream);  /* its copies still target the staging */
  for (int g = 0; g < c->ngraphs; g++)
    if (c->exec[g])
      cudaGraphExecDestroy (c->exec[g]);
  if (c->stream)
    cudaStreamDestroy (c->stream);
  cudaFree (c->arena);
  cudaFree (c->term_buf);
  cudaFreeHost (c->h_p0);
  cudaFreeHost (c->h_grad);
  cudaFreeHost (c->h_scal);
  cudaFreeHost (c->h_slots);
  cudaGetLastError ();
  free (c);
}

/* One Euler step (t = 0) of every slot, forward or (adj) adjoint, in shape v: what
 * tune_rows times. */
static void
probe_rows (GrShootCuda *c, const Bufs<float> &b, int G, bool adj, int v)
{
  if (c->D == 3 && adj)
    launch_rows<true, float, 3, B_EULER> (c, b, G, v, 0, 0);
  else if (c->D == 3)
    launch_rows<false, float, 3, F_EULER> (c, b, G, v, 0, 0);
  else if (adj)
    launch_rows<true, float, 2, B_EULER> (c, b, G, v, 0, 0);
  else
    launch_rows<false, float, 2, F_EULER> (c, b, G, v, 0, 0);
}

/* Times each row-kernel shape on the engine's own slots (all of them, on the zeroed
 * buffers: a step's work does not depend on the values), the forward kernel's and the
 * adjoint's apart, and keeps the fastest of each (those of rowtune[]).  The best shape
 * depends on the GPU and on the kernel (the adjoint needs about twice the forward's
 * registers a row), and every shape gives the same values, so choosing by time
 * changes no result.  About 1.5 ms a forward shape and 2.5 ms an adjoint one for 500
 * subjects of N = 1,847.  On any error the defaults stay.
 * GEOREG_SHOOT_TUNE_VERBOSE=1 prints the times on stderr. */
static void
tune_rows (GrShootCuda *c)
{
  static const int serves[2] = { ROWS_FWD, ROWS_ADJ };
  const int G = (int) c->cap;
  Bufs<float> b = make_bufs<float> (c);
  c->h_slots[0] = G;
  for (int k = 0; k < G; k++)
    c->h_slots[1 + k] = k;
  cudaEvent_t e0 = NULL, e1 = NULL;
  float ms[2][ROW_SHAPES];
  bool ok = cudaMemcpyAsync (c->slots_d, c->h_slots, sizeof (int) * (G + 1),
      cudaMemcpyHostToDevice, c->stream) == cudaSuccess &&
      cudaEventCreate (&e0) == cudaSuccess && cudaEventCreate (&e1) == cudaSuccess;
  int best[2] = { -1, -1 };
  for (int k = 0; k < 2; k++)
    for (int v = 0; ok && c->rowtune[k] && v < ROW_SHAPES; v++) {
      if (!(row_shapes[v].kernels & serves[k]))
        continue;
      for (int rep = 0; rep < 3; rep++) {   /* rep 0 warms up */
        if (rep == 1)
          cudaEventRecord (e0, c->stream);
        probe_rows (c, b, G, k == 1, v);
      }
      cudaEventRecord (e1, c->stream);
      ok = cudaEventSynchronize (e1) == cudaSuccess &&
          cudaEventElapsedTime (&ms[k][v], e0, e1) == cudaSuccess &&
          cudaGetLastError () == cudaSuccess;
      ms[k][v] *= 0.5f;
      if (ok && (best[k] < 0 || ms[k][v] < ms[k][best[k]]))
        best[k] = v;
    }
  for (int k = 0; k < 2; k++) {
    if (ok && best[k] >= 0)
      c->rowshape[k] = best[k];
    else
      c->rowtune[k] = false;
  }
  /* one line: each kernel's times and choice, the chosen step pair, and the step
   * pair of each shape that serves both (what earlier sessions timed as one) */
  const char *ev = getenv ("GEOREG_SHOOT_TUNE_VERBOSE");
  if (ev && *ev && atoi (ev)) {
    static const char *const what[2] = { "forward", "adjoint" };
    fprintf (stderr, "shoot row kernels, %d slots, one step (ms):", G);
    for (int k = 0; k < 2; k++) {
      fprintf (stderr, "%s %s", k ? ";" : "", what[k]);
      for (int v = 0; ok && best[k] >= 0 && v < ROW_SHAPES; v++)
        if (row_shapes[v].kernels & serves[k])
          fprintf (stderr, " %s %.3f", row_shapes[v].name, ms[k][v]);
      fprintf (stderr, " -> %s", row_shapes[c->rowshape[k]].name);
    }
    if (ok && best[0] >= 0 && best[1] >= 0) {
      fprintf (stderr, "; step pair %.3f; same shape both:", ms[0][best[0]] +
          ms[1][best[1]]);
      for (int v = 0; v < ROW_SHAPES; v++)
        if (row_shapes[v].kernels == ROWS_BOTH)
          fprintf (stderr, " %s %.3f", row_shapes[v].name, ms[0][v] + ms[1][v]);
    }
    fprintf (stderr, "%s\n", ok ? "" : " (failed)");
  }
  if (e0)
    cudaEventDestroy (e0);
  if (e1)
    cudaEventDestroy (e1);
  cudaStreamSynchronize (c->stream);
  cudaGetLastError ();
}

/* Captures the evaluation graphs (for slot grids cap, cap/4, ..., 1), replacing any
 * captured before (a data term set or removed changes what an evaluation runs). */
static bool
capture_graphs (GrShootCuda *c, char *errbuf, size_t errlen)
{
  for (int g = 0; g < c->ngraphs; g++)
    if (c->exec[g])
      cudaGraphExecDestroy (c->exec[g]);
  memset (c->exec, 0, sizeof c->exec);
  c->ngraphs = 0;
  /* graphs for slot grids cap, cap/4, cap/16, ..., 1 */
  for (size_t G = c->cap; c->ngraphs < 8; G = G > 1 ? (G + 3) / 4 : 0) {
    if (G == 0 || (c->ngraphs == 7 && G > 1))
      G = 1;                    /* the last one always covers a single subject */
    cudaGraph_t graph = NULL;
    if (!ck (cudaStreamBeginCapture (c->stream, cudaStreamCaptureModeThreadLocal),
            "cudaStreamBeginCapture", errbuf, errlen))
      return false;
    cudaError_t e = enqueue_dispatch (c, (int) G);
    cudaError_t e2 = cudaStreamEndCapture (c->stream, &graph);
    if (!ck (e, "kernel launch (capture)", errbuf, errlen) ||
        !ck (e2, "cudaStreamEndCapture", errbuf, errlen)) {
      if (graph)
        cudaGraphDestroy (graph);
      return false;
    }
    e = cudaGraphInstantiate (&c->exec[c->ngraphs], graph, 0);
    cudaGraphDestroy (graph);
    if (!ck (e, "cudaGraphInstantiate", errbuf, errlen))
      return false;
    c->graph_slots[c->ngraphs++] = (int) G;
    if (G == 1)
      break;
  }
  return true;
}

static GrShootCuda *new_engine (const GrShootParams *params, size_t subjects,
    bool population, int device, char *desc, size_t desclen, char *errbuf,
    size_t errlen);

extern "C" GrShootCuda *
gr_shoot_cuda_new (const GrShootParams *params, int device, char *desc, size_t desclen,
    char *errbuf, size_t errlen)
{
  return new_engine (params, 1, false, device, desc, desclen, errbuf, errlen);
}

extern "C" GrShootCuda *
gr_shoot_cuda_new_batch (const GrShootParams *params, size_t subjects, int device,
    char *desc, size_t desclen, char *errbuf, size_t errlen)
{
  return new_engine (params, subjects, subjects > 1, device, desc, desclen, errbuf,
      errlen);
}

extern "C" GrShootCuda *
gr_shoot_cuda_new_population (const GrShootParams *params, size_t subjects, int device,
    char *desc, size_t desclen, char *errbuf, size_t errlen)
{
  return new_engine (params, subjects, true, device, desc, desclen, errbuf, errlen);
}

/* population: the row kernels (float32), whatever the capacity: a population engine
 * of one subject gives that subject's values in any population bit for bit. */
static GrShootCuda *
new_engine (const GrShootParams *params, size_t subjects, bool population, int device,
    char *desc, size_t desclen, char *errbuf, size_t errlen)
{
  if (subjects < 1 || subjects > 65535) {
    gr_set_err (errbuf, errlen, "%zu subjects: 1 .. 65535", subjects);
    return NULL;
  }
  GrShootCuda *c = (GrShootCuda *) calloc (1, sizeof *c);
  if (!c) {
    gr_set_err (errbuf, errlen, "out of memory");
    return NULL;
  }
  c->p = *params;
  c->cap = subjects;
  c->dev = device;
  c->n = (int) params->n;
  c->D = params->dim;
  c->T = params->time_points;
  c->es = params->precision == GR_SHOOT_FLOAT32 ? sizeof (float) : sizeof (double);
  if (!ck (cudaSetDevice (device), "cudaSetDevice", errbuf, errlen)) {
    free (c);
    return NULL;
  }
  cudaDeviceProp prop;
  if (!ck (cudaGetDeviceProperties (&prop, device), "cudaGetDeviceProperties", errbuf,
          errlen)) {
    free (c);
    return NULL;
  }
  c->sms = prop.multiProcessorCount;
  {
    /* the SM clock (kHz) goes into the description: the benchmark's floors use it */
    int clock_khz = 0;
    if (cudaDeviceGetAttribute (&clock_khz, cudaDevAttrClockRate, device) != cudaSuccess)
      clock_khz = 0;
    cudaGetLastError ();
    if (desc)
      snprintf (desc, desclen, "CUDA device %d: %s (%d SMs, %.2f GHz)", device, prop.name,
          c->sms, clock_khz * 1e-6);
  }

  /* Kernel variant, from the measurements in docs/benchmarks-landmarkshoot.md (H200,
   * n = 500 .. 20,000; other GPUs may prefer others).  float32 mode: j points staged
   * in shared memory, double-buffered with cp.async; rows per thread and threads per
   * row group by n: 1 x 64 below 1500, 2 x 32 up to 3000 (the seed's 1847), 1 x 32 up
   * to 8000, 2 x 32 above (two rows share each j load; one row per thread makes more
   * groups).  float64 mode: single-buffered tiles, 1 row per thread, and 64 threads
   * per group when all groups still fit in one wave of resident threads, else 32.
   * GEOREG_SHOOT_RPT (1, 2), GEOREG_SHOOT_TILED (0 none, 1 single, 2 double buffer)
   * and GEOREG_SHOOT_TPR (32 .. 256) override the choice, for tuning. */
  {
    const bool f32 = params->precision == GR_SHOOT_FLOAT32;
    const int n = c->n;
    c->rpt = f32 && ((n >= 1500 && n <= 3000) || n > 8000) ? 2 : 1;
    c->tiled = f32 ? 2 : 1;
    const char *ev = getenv ("GEOREG_SHOOT_RPT");
    if (ev && f32 && (atoi (ev) == 1 || atoi (ev) == 2))
      c->rpt = atoi (ev);
    ev = getenv ("GEOREG_SHOOT_TILED");
    if (ev && *ev && atoi (ev) >= 0 && atoi (ev) <= 2)
      c->tiled = f32 ? atoi (ev) : (atoi (ev) ? 1 : 0);
    const int nb = occupancy (c);
    const long groups = (c->n + c->rpt - 1) / c->rpt;
    const long wave = (long) c->sms * nb * BLOCK;
    if (f32)
      c->tpr = n < 1500 ? 64 : 32;
    else
      c->tpr = groups * 64 <= wave ? 64 : 32;
    ev = getenv ("GEOREG_SHOOT_TPR");
    if (ev) {
      int v = atoi (ev);
      if (v == 32 || v == 64 || v == 128 || v == 256)
        c->tpr = v;
    }
    /* Populations (float32): one row per thread (k_rows) in population engines
     * (gr_shoot_batch, any capacity, and gr_shoot_cuda_new_batch with several slots),
     * since the slots then fill the device; GEOREG_SHOOT_WIDE=0 keeps the grouped
     * kernels (whose values a single-subject GrShoot gets bit for bit), =1 takes the
     * row kernels for a single-subject GrShoot too (bit for bit the batch's values). */
    c->wide = f32 && population;
    ev = getenv ("GEOREG_SHOOT_WIDE");
    if (ev && *ev && f32)
      c->wide = atoi (ev) != 0;
    /* the row kernels' shapes: GEOREG_SHOOT_ROWS=NAME sets each kernel that the shape
     * of that name serves (row_shapes: 128x1, 64x1, 32x2 and 64x2 serve both),
     * GEOREG_SHOOT_ROWS=FWD/ADJ each apart; otherwise engines of 16 subjects or more
     * time each shape on their own slots once (tune_rows) and keep the fastest, and
     * smaller ones take ROWS_DEFAULT.  All give the same values. */
    c->rowshape[0] = c->rowshape[1] = ROWS_DEFAULT;
    c->rowtune[0] = c->rowtune[1] = c->wide && c->cap >= 16;
    ev = getenv ("GEOREG_SHOOT_ROWS");
    if (ev && *ev) {
      static const int serves[2] = { ROWS_FWD, ROWS_ADJ };
      const char *slash = strchr (ev, '/');
      for (int k = 0; k < 2; k++) {
        const char *name = k && slash ? slash + 1 : ev;
        const size_t len = !k && slash ? (size_t) (slash - ev) : strlen (name);
        for (int v = 0; v < ROW_SHAPES; v++)
          if ((row_shapes[v].kernels & serves[k]) && strlen (row_shapes[v].name) == len &&
              strncmp (name, row_shapes[v].name, len) == 0) {
            c->rowshape[k] = v;
            c->rowtune[k] = false;
          }
      }
    }
    if (!c->wide && desc)
      snprintf (desc + strlen (desc), desclen - strlen (desc), ", %d threads x %d rows "
          "per group%s", c->tpr, c->rpt, c->tiled == 2 ? ", tiles double-buffered"
          : c->tiled ? ", tiled" : "");
  }

  const size_t n = c->n * c->cap, T = c->T, es = c->es;   /* n: rows of all slots */
  const size_t v4s = 4 * es, v4d = 4 * sizeof (double);
  const bool ral = params->integrator == GR_SHOOT_RALSTON;
  struct {
    void **ptr;
    size_t bytes;
  } parts[] = {
    { &c->xq_s, v4s * T * n }, { &c->xp_s, v4s * T * n },
    { (void **) &c->xq_d, v4d * T * n }, { (void **) &c->xp_d, v4d * T * n },
    { &c->yq_s, ral ? v4s * (T - 1) * n : 0 }, { &c->yp_s, ral ? v4s * (T - 1) * n : 0 },
    { (void **) &c->k1q, ral ? v4d * n : 0 }, { (void **) &c->k1p, ral ? v4d * n : 0 },
    { (void **) &c->hp0, v4d * n }, { (void **) &c->erow, sizeof (double) * n },
    { (void **) &c->tgt, v4d * n },
    { (void **) &c->La_d, v4d * n }, { (void **) &c->Lb_d, v4d * n },
    { &c->La_s, 2 * v4s * n }, { &c->Lb_s, 2 * v4s * n },
    { (void **) &c->mua, ral ? v4d * n : 0 }, { (void **) &c->mub, ral ? v4d * n : 0 },
    { &c->wa_s, ral ? v4s * n : 0 }, { &c->wb_s, ral ? v4s * n : 0 },
    { (void **) &c->p0_in, sizeof (double) * n * c->D },
    { (void **) &c->grad_out, sizeof (double) * n * c->D },
    { (void **) &c->scal, 4 * sizeof (double) * c->cap },
    { (void **) &c->slots_d, sizeof (int) * (c->cap + 1) },
  };
  size_t total = 0;
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    total += align_up (parts[i].bytes);
  if (!ck (gr_cuda_malloc (&c->arena, total), "cudaMalloc (device arena)", errbuf,
          errlen))
    goto fail;
  {
    char *base = (char *) c->arena;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
      *parts[i].ptr = parts[i].bytes ? base : NULL;
      base += align_up (parts[i].bytes);
    }
  }
  /* zero everything once: the w lanes of the V4s and the unused z of 2-D stay 0.  The
   * memset runs on the legacy stream, which the non-blocking stream below does not
   * wait for: wait here (cuda_util.h, gr_cuda_upload) */
  if (!ck (cudaMemset (c->arena, 0, total), "cudaMemset", errbuf, errlen) ||
      !ck (cudaStreamSynchronize (0), "cudaMemset", errbuf, errlen))
    goto fail;
  if (!ck (gr_cuda_malloc_host ((void **) &c->h_p0, sizeof (double) * n * c->D),
          "cudaMallocHost (staging)", errbuf, errlen) ||
      !ck (gr_cuda_malloc_host ((void **) &c->h_grad, sizeof (double) * n * c->D),
          "cudaMallocHost (staging)", errbuf, errlen) ||
      !ck (gr_cuda_malloc_host ((void **) &c->h_scal, 4 * sizeof (double) * c->cap),
          "cudaMallocHost (staging)", errbuf, errlen) ||
      !ck (gr_cuda_malloc_host ((void **) &c->h_slots, sizeof (int) * (c->cap + 1)),
          "cudaMallocHost (staging)", errbuf, errlen))
    goto fail;
  if (!ck (cudaStreamCreateWithFlags (&c->stream, cudaStreamNonBlocking),
          "cudaStreamCreate", errbuf, errlen))
    goto fail;
  if (c->wide && !env_off ("GEOREG_SHOOT_CARVE")) {
    if (c->D == 3)
      carve_rows<3> ();
    else
      carve_rows<2> ();
    cudaGetLastError ();        /* a hint: an engine without it still runs */
  }
  if (c->rowtune[0] || c->rowtune[1])
    tune_rows (c);
  if (desc && c->wide)
    snprintf (desc + strlen (desc), desclen - strlen (desc), ", one row per thread, "
        "forward %s%s, adjoint %s%s", row_shapes[c->rowshape[0]].name,
        c->rowtune[0] ? " (timed)" : "", row_shapes[c->rowshape[1]].name,
        c->rowtune[1] ? " (timed)" : "");
  if (!capture_graphs (c, errbuf, errlen))
    goto fail;
  return c;

fail:
  gr_shoot_cuda_free (c);
  return NULL;
}

static void
upload_v4 (const double *pm, int n, int D, V4<double> *tmp)
{
  for (int i = 0; i < n; i++) {
    tmp[i].x = pm[(size_t) i * D];
    tmp[i].y = pm[(size_t) i * D + 1];
    tmp[i].z = D == 3 ? pm[(size_t) i * D + 2] : 0.0;
    tmp[i].w = 0.0;
  }
}

extern "C" GrStatus
gr_shoot_cuda_set_points (GrShootCuda *c, const double *q0, const double *target,
    char *errbuf, size_t errlen)
{
  if (!ck (cudaSetDevice (c->dev), "cudaSetDevice", errbuf, errlen))
    return GR_ERR_CUDA;
  V4<double> *tmp = (V4<double> *) malloc (sizeof (V4<double>) * c->n);
  if (!tmp)
    return GR_ERR_NOMEM;
  bool ok = true;
  /* the template is time point 0 of every slot's trajectory */
  const size_t slot_stride = (size_t) c->T * c->n;
  if (q0) {
    upload_v4 (q0, c->n, c->D, tmp);
    for (size_t k = 0; ok && k < c->cap; k++)
      ok = ck (cudaMemcpy (c->xq_d + k * slot_stride, tmp, sizeof (V4<double>) * c->n,
              cudaMemcpyHostToDevice), "cudaMemcpy", errbuf, errlen);
    if (ok && c->es == sizeof (float)) {
      V4<float> *tf = (V4<float> *) tmp;      /* fits: half the size */
      for (int i = 0; i < c->n; i++) {
        V4<float> v;
        v.x = (float) tmp[i].x;
        v.y = (float) tmp[i].y;
        v.z = (float) tmp[i].z;
        v.w = 0.0f;
        tf[i] = v;
      }
      for (size_t k = 0; ok && k < c->cap; k++)
        ok = ck (cudaMemcpy ((V4<float> *) c->xq_s + k * slot_stride, tf,
                sizeof (V4<float>) * c->n, cudaMemcpyHostToDevice), "cudaMemcpy", errbuf,
            errlen);
    } else if (ok) {
      for (size_t k = 0; ok && k < c->cap; k++)
        ok = ck (cudaMemcpy ((V4<double> *) c->xq_s + k * slot_stride, tmp,
                sizeof (V4<double>) * c->n, cudaMemcpyHostToDevice), "cudaMemcpy", errbuf,
            errlen);
    }
  }
  if (ok && target) {
    upload_v4 (target, c->n, c->D, tmp);
    ok = ck (cudaMemcpy (c->tgt, tmp, sizeof (V4<double>) * c->n, cudaMemcpyHostToDevice),
        "cudaMemcpy", errbuf, errlen);
  }
  free (tmp);
  return ok ? GR_OK : GR_ERR_CUDA;
}

extern "C" GrStatus
gr_shoot_cuda_set_subject_target (GrShootCuda *c, size_t subject, const double *target,
    char *errbuf, size_t errlen)
{
  if (subject >= c->cap) {
    gr_set_err (errbuf, errlen, "subject %zu out of range", subject);
    return GR_ERR_INVALID;
  }
  if (!ck (cudaSetDevice (c->dev), "cudaSetDevice", errbuf, errlen))
    return GR_ERR_CUDA;
  V4<double> *tmp = (V4<double> *) malloc (sizeof (V4<double>) * c->n);
  if (!tmp)
    return GR_ERR_NOMEM;
  upload_v4 (target, c->n, c->D, tmp);
  bool ok = ck (cudaMemcpy (c->tgt + subject * c->n, tmp, sizeof (V4<double>) * c->n,
          cudaMemcpyHostToDevice), "cudaMemcpy", errbuf, errlen);
  free (tmp);
  return ok ? GR_OK : GR_ERR_CUDA;
}

/* Stages subjects which[0 .. count-1] (count <= cap) and enqueues their evaluation:
 * the copies up, the graph, the copies down; returns without waiting, so that the
 * host can step other subjects while the device works (gr_shoot_cuda_collect waits). */
extern "C" GrStatus
gr_shoot_cuda_submit (GrShootCuda *c, const size_t *which, size_t count,
    const double *const *p0, int want_grad, char *errbuf, size_t errlen)
{
  if (c->inflight) {
    gr_set_err (errbuf, errlen, "an evaluation is already in flight");
    return GR_ERR_INVALID;
  }
  if (count < 1 || count > c->cap) {
    gr_set_err (errbuf, errlen, "%zu subjects in one evaluation: 1 .. %zu", count, c->cap);
    return GR_ERR_INVALID;
  }
  if (!ck (cudaSetDevice (c->dev), "cudaSetDevice", errbuf, errlen))
    return GR_ERR_CUDA;
  const size_t m = (size_t) c->n * c->D;
  for (size_t k = 0; k < count; k++)
    if (which[k] >= c->cap) {
      gr_set_err (errbuf, errlen, "subject %zu out of range", which[k]);
      return GR_ERR_INVALID;
    }
  c->h_slots[0] = (int) count;
  for (size_t k = 0; k < count; k++) {
    c->h_slots[1 + k] = (int) which[k];
    memcpy (c->h_p0 + k * m, p0[k], sizeof (double) * m);
  }
  int g = 0;
  while (g + 1 < c->ngraphs && (size_t) c->graph_slots[g + 1] >= count)
    g++;
  if (!ck (cudaMemcpyAsync (c->slots_d, c->h_slots, sizeof (int) * (count + 1),
              cudaMemcpyHostToDevice, c->stream), "cudaMemcpyAsync", errbuf, errlen) ||
      !ck (cudaMemcpyAsync (c->p0_in, c->h_p0, sizeof (double) * m * count,
              cudaMemcpyHostToDevice, c->stream), "cudaMemcpyAsync", errbuf, errlen) ||
      !ck (cudaGraphLaunch (c->exec[g], c->stream), "cudaGraphLaunch", errbuf, errlen) ||
      (want_grad && !ck (cudaMemcpyAsync (c->h_grad, c->grad_out,
                  sizeof (double) * m * count, cudaMemcpyDeviceToHost, c->stream),
              "cudaMemcpyAsync", errbuf, errlen)) ||
      !ck (cudaMemcpyAsync (c->h_scal, c->scal, 4 * sizeof (double) * count,
              cudaMemcpyDeviceToHost, c->stream), "cudaMemcpyAsync", errbuf, errlen)) {
    /* whatever was enqueued must finish before the staging is reused */
    cudaStreamSynchronize (c->stream);
    cudaGetLastError ();
    return GR_ERR_CUDA;
  }
  c->inflight = count;
  c->inflight_grad = want_grad != 0;
  return GR_OK;
}

/* Waits for the evaluation gr_shoot_cuda_submit enqueued and hands out its results in
 * submission order: grad (or grad[k]) and out may be NULL; out[k] = {loss, kinetic,
 * mismatch}. */
extern "C" GrStatus
gr_shoot_cuda_collect (GrShootCuda *c, double *const *grad, double (*out)[3],
    char *errbuf, size_t errlen)
{
  const size_t count = c->inflight;
  if (!count) {
    gr_set_err (errbuf, errlen, "no evaluation in flight");
    return GR_ERR_INVALID;
  }
  c->inflight = 0;
  if (!ck (cudaSetDevice (c->dev), "cudaSetDevice", errbuf, errlen) ||
      !ck (cudaStreamSynchronize (c->stream), "shooting kernels", errbuf, errlen))
    return GR_ERR_CUDA;
  const size_t m = (size_t) c->n * c->D;
  for (size_t k = 0; k < count; k++) {
    if (grad && grad[k] && c->inflight_grad)
      memcpy (grad[k], c->h_grad + k * m, sizeof (double) * m);
    if (!out)
      continue;
    out[k][0] = c->h_scal[4 * k];
    out[k][1] = c->h_scal[4 * k + 1];
    out[k][2] = c->h_scal[4 * k + 2];
  }
  return GR_OK;
}

extern "C" GrStatus
gr_shoot_cuda_eval_batch (GrShootCuda *c, const size_t *which, size_t count,
    const double *const *p0, double *const *grad, double (*out)[3], char *errbuf,
    size_t errlen)
{
  bool want_grad = false;
  for (size_t k = 0; grad && k < count; k++)
    want_grad = want_grad || grad[k];
  /* chunks of at most cap slots */
  for (size_t done = 0; done < count;) {
    const size_t cnt = count - done < c->cap ? count - done : c->cap;
    GrStatus st = gr_shoot_cuda_submit (c, which + done, cnt, p0 + done, want_grad,
        errbuf, errlen);
    if (st == GR_OK)
      st = gr_shoot_cuda_collect (c, grad ? grad + done : NULL, out + done, errbuf,
          errlen);
    if (st != GR_OK)
      return st;
    done += cnt;
  }
  return GR_OK;
}

extern "C" GrStatus
gr_shoot_cuda_eval (GrShootCuda *c, const double *p0, double *grad, double out[3],
    char *errbuf, size_t errlen)
{
  const size_t which = 0;
  double res[1][3];
  GrStatus st = gr_shoot_cuda_eval_batch (c, &which, 1, &p0, &grad, res, errbuf, errlen);
  if (st == GR_OK) {
    out[0] = res[0][0];
    out[1] = res[0][1];
    out[2] = res[0][2];
  }
  return st;
}

/* [slots][n] V4 on the device -> [slots][d][n] on the host */
static bool
download_soa (const void *dsrc, size_t es_src, bool to_double, void *dst, int slots,
    int n, int D, char *errbuf, size_t errlen)
{
  size_t bytes = 4 * es_src * (size_t) slots * n;
  void *tmp = malloc (bytes);
  if (!tmp) {
    gr_set_err (errbuf, errlen, "out of memory");
    return false;
  }
  if (!ck (cudaMemcpy (tmp, dsrc, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy", errbuf,
          errlen)) {
    free (tmp);
    return false;
  }
  for (size_t s = 0; s < (size_t) slots; s++)
    for (int i = 0; i < n; i++)
      for (int d = 0; d < D; d++) {
        size_t src = (s * n + i) * 4 + d, o = (s * D + d) * n + i;
        double v = es_src == sizeof (float) ? (double) ((const float *) tmp)[src]
            : ((const double *) tmp)[src];
        if (to_double)
          ((double *) dst)[o] = v;
        else if (es_src == sizeof (float))
          ((float *) dst)[o] = (float) v;
        else
          ((double *) dst)[o] = v;
      }
  free (tmp);
  return true;
}

extern "C" GrStatus
gr_shoot_cuda_trajectory (GrShootCuda *c, double *xq, double *xp, void *xqR, void *xpR,
    void *yqR, void *ypR, char *errbuf, size_t errlen)
{
  if (!ck (cudaSetDevice (c->dev), "cudaSetDevice", errbuf, errlen))
    return GR_ERR_CUDA;
  const int T = c->T, n = c->n, D = c->D;
  const bool ral = c->p.integrator == GR_SHOOT_RALSTON;
  bool ok = true;
  if (ok && xq)
    ok = download_soa (c->xq_d, sizeof (double), true, xq, T, n, D, errbuf, errlen);
  if (ok && xp)
    ok = download_soa (c->xp_d, sizeof (double), true, xp, T, n, D, errbuf, errlen);
  if (ok && xqR)
    ok = download_soa (c->xq_s, c->es, false, xqR, T, n, D, errbuf, errlen);
  if (ok && xpR)
    ok = download_soa (c->xp_s, c->es, false, xpR, T, n, D, errbuf, errlen);
  if (ok && ral && yqR)
    ok = download_soa (c->yq_s, c->es, false, yqR, T - 1, n, D, errbuf, errlen);
  if (ok && ral && ypR)
    ok = download_soa (c->yp_s, c->es, false, ypR, T - 1, n, D, errbuf, errlen);
  return ok ? GR_OK : GR_ERR_CUDA;
}

extern "C" size_t
gr_shoot_cuda_capacity (const GrShootCuda *c)
{
  return c->cap;
}

extern "C" int
gr_shoot_cuda_device (const GrShootCuda *c)
{
  return c->dev;
}

extern "C" GrStatus
gr_shoot_cuda_set_term (GrShootCuda *c, GrShootCudaTerm term, void *user, char *errbuf,
    size_t errlen)
{
  if (term && c->cap != 1) {
    gr_set_err (errbuf, errlen, "a data term needs a single-subject engine");
    return GR_ERR_INVALID;
  }
  if (!ck (cudaSetDevice (c->dev), "cudaSetDevice", errbuf, errlen))
    return GR_ERR_CUDA;
  if (term && !c->term_buf &&
      !ck (gr_cuda_malloc ((void **) &c->term_buf, sizeof (double) * 4 * (1 + (size_t) c->n)),
          "cudaMalloc (data term)", errbuf, errlen))
    return GR_ERR_CUDA;
  c->term = term;
  c->term_user = user;
  if (capture_graphs (c, errbuf, errlen))
    return GR_OK;
  /* back to the landmark graphs, so that the engine stays usable */
  c->term = NULL;
  c->term_user = NULL;
  char dummy[8];
  capture_graphs (c, dummy, sizeof dummy);
  return GR_ERR_CUDA;
}
