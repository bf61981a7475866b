/* Sparse NMI matching: the CUDA backend (see nmi_sparse.h for the contract and
 * nmi_sparse_impl.h for the algorithm, which both backends share).
 *
 * Design
 *  - One CTA of GRS_NT = 64 threads per keypoint: the 73 x 73 window (16-bit cells:
 *    value or "invalid"), the template's sorted pixel list and groups, the c ln c
 *    tables and two private 256-bin byte histograms per thread (32 KB: thread t
 *    only touches bank t % 32) live in shared memory, about 45 KB for the default
 *    sizes.  Thread t scores displacement column t; the window marginal slides down
 *    the column (11 pixels out, 11 in).
 *  - Persistent grid (a few CTAs per SM, each looping over keypoints): every CTA
 *    owns one P x P score map in global memory (32 KB, L2-resident) for the peak
 *    search, or writes the caller's maps directly when they are asked for.
 *  - The control is uploaded once (set_control) and stays resident; per run only the
 *    templates (T*T bytes each), their masks, the queries go up and the results come
 *    down.
 *  - All sums are 64-bit integers (exact in any order); the doubles are computed by
 *    the same expressions as the CPU backend, so scores are bit-identical.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <cuda_runtime.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nmi_sparse_cuda.h"
#include "nmi_sparse_impl.h"

static void
set_err (char *errbuf, size_t errlen, const char *fmt, ...)
{
  if (!errbuf || errlen == 0)
    return;
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (errbuf, errlen, fmt, ap);
  va_end (ap);
}

#define CK(call, what)                                                        \
  do {                                                                        \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) {                                                  \
      set_err (errbuf, errlen, "CUDA %s failed: %s", (what),                  \
          cudaGetErrorString (e_));                                           \
      cudaGetLastError ();                                                    \
      return GR_ERR_CUDA;                                                     \
    }                                                                         \
  } while (0)

/* ---- device code ------------------------------------------------------------ */

struct SparseArgs {
  GrsGeom g;
  GrsControl ctl;
  const uint8_t *tpl;
  const uint8_t *tmask;          /* or NULL */
  const GrNmiSparseQuery *q;
  int n;
  const int64_t *tab, *dtab;
  const double *lnn;
  double *maps;                  /* per keypoint (maps_per_keypoint) or per CTA */
  int maps_per_keypoint;
  GrNmiSparseMatch *out;
};

__global__ void __launch_bounds__ (GRS_NT)
nmi_sparse_kernel (SparseArgs a)
{
  extern __shared__ __align__ (16) unsigned char smem[];
  GrsShared s;
  grs_layout (smem, &a.g, &s);
  s.lnn = a.lnn;
  const int tid = threadIdx.x;
  const int T2 = a.g.T * a.g.T;
  const size_t P2 = (size_t) a.g.P * a.g.P;

  for (int k = blockIdx.x; k < a.n; k += gridDim.x) {
    double *map = a.maps + (a.maps_per_keypoint ? (size_t) k : (size_t) blockIdx.x) * P2;
    grs_load (&a.g, &s, tid, &a.ctl, a.tpl + (size_t) k * T2,
        a.tmask ? a.tmask + (size_t) k * T2 : NULL, a.q[k].x, a.q[k].y, a.tab, a.dtab);
    __syncthreads ();
    grs_rank (&a.g, &s, tid);
    __syncthreads ();
    if (tid == 0)
      grs_groups (&s);
    __syncthreads ();
    grs_scores (&a.g, &s, tid, map);
    __syncthreads ();
    grs_argmax_partial (&a.g, &s, tid, map);
    __syncthreads ();
    if (tid == 0)
      grs_argmax_reduce (&s);
    __syncthreads ();
    grs_second_partial (&a.g, &s, tid, map);
    __syncthreads ();
    if (tid == 0)
      grs_finish (&a.g, &s, map, &a.out[k]);
    __syncthreads ();
  }
}

/* ---- host side ------------------------------------------------------------- */

struct GrNmiSparseCuda {
  int device;
  int nsm;
  size_t smem_optin;
  cudaStream_t stream;
  cudaEvent_t ev0, ev1;
  bool have_events;
  double last_ms;
  /* resident */
  uint8_t *d_ctl, *d_cmask;
  int cw, ch;
  int64_t *d_tab, *d_dtab;
  double *d_lnn;
  /* per run, grown on demand */
  uint8_t *d_tpl, *d_tmask;
  size_t tpl_cap, tmask_cap;
  GrNmiSparseQuery *d_q;
  size_t q_cap;
  GrNmiSparseMatch *d_out;
  size_t out_cap;
  double *d_maps;
  size_t maps_cap;
};

template <typename P>
static cudaError_t
grow (P **ptr, size_t *cap, size_t need_bytes)
{
  if (*ptr && *cap >= need_bytes)
    return cudaSuccess;
  cudaFree (*ptr);
  *ptr = NULL;
  *cap = 0;
  cudaError_t e = cudaMalloc ((void **) ptr, need_bytes);
  if (e == cudaSuccess)
    *cap = need_bytes;
  return e;
}

extern "C" void
gr_nmi_sparse_cuda_free (GrNmiSparseCuda *c)
{
  if (!c)
    return;
  cudaSetDevice (c->device);
  if (c->stream)
    cudaStreamSynchronize (c->stream);
  cudaFree (c->d_ctl);
  cudaFree (c->d_cmask);
  cudaFree (c->d_tab);
  cudaFree (c->d_dtab);
  cudaFree (c->d_lnn);
  cudaFree (c->d_tpl);
  cudaFree (c->d_tmask);
  cudaFree (c->d_q);
  cudaFree (c->d_out);
  cudaFree (c->d_maps);
  if (c->have_events) {
    cudaEventDestroy (c->ev0);
    cudaEventDestroy (c->ev1);
  }
  if (c->stream)
    cudaStreamDestroy (c->stream);
  cudaGetLastError ();
  free (c);
}

static GrStatus
cuda_init (GrNmiSparseCuda *c, const int64_t *tab, const int64_t *dtab,
    const double *lnn, char *errbuf, size_t errlen)
{
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  cudaDeviceProp prop;
  CK (cudaGetDeviceProperties (&prop, c->device), "cudaGetDeviceProperties");
  c->nsm = prop.multiProcessorCount;
  c->smem_optin = prop.sharedMemPerBlockOptin;
  CK (cudaStreamCreateWithFlags (&c->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  CK (cudaMalloc (&c->d_tab, sizeof (int64_t) * GRS_TAB), "cudaMalloc (tables)");
  CK (cudaMalloc (&c->d_dtab, sizeof (int64_t) * GRS_TAB), "cudaMalloc (tables)");
  CK (cudaMalloc (&c->d_lnn, sizeof (double) * GRS_TAB), "cudaMalloc (tables)");
  CK (cudaMemcpy (c->d_tab, tab, sizeof (int64_t) * GRS_TAB, cudaMemcpyHostToDevice),
      "table upload");
  CK (cudaMemcpy (c->d_dtab, dtab, sizeof (int64_t) * GRS_TAB, cudaMemcpyHostToDevice),
      "table upload");
  CK (cudaMemcpy (c->d_lnn, lnn, sizeof (double) * GRS_TAB, cudaMemcpyHostToDevice),
      "table upload");
  if (cudaEventCreate (&c->ev0) == cudaSuccess && cudaEventCreate (&c->ev1) == cudaSuccess)
    c->have_events = true;
  cudaGetLastError ();
  return GR_OK;
}

extern "C" GrNmiSparseCuda *
gr_nmi_sparse_cuda_new (int device, const int64_t *tab, const int64_t *dtab,
    const double *lnn, char *errbuf, size_t errlen)
{
  GrNmiSparseCuda *c = (GrNmiSparseCuda *) calloc (1, sizeof *c);
  if (!c) {
    set_err (errbuf, errlen, "out of host memory");
    return NULL;
  }
  c->device = device;
  c->last_ms = -1.0;
  if (cuda_init (c, tab, dtab, lnn, errbuf, errlen) != GR_OK) {
    gr_nmi_sparse_cuda_free (c);
    return NULL;
  }
  return c;
}

extern "C" double
gr_nmi_sparse_cuda_last_ms (const GrNmiSparseCuda *c)
{
  return c ? c->last_ms : -1.0;
}

extern "C" GrStatus
gr_nmi_sparse_cuda_set_control (GrNmiSparseCuda *c, const uint8_t *pix,
    const uint8_t *mask, int width, int height, char *errbuf, size_t errlen)
{
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  CK (cudaStreamSynchronize (c->stream), "cudaStreamSynchronize");
  cudaFree (c->d_ctl);
  cudaFree (c->d_cmask);
  c->d_ctl = NULL;
  c->d_cmask = NULL;
  c->cw = c->ch = 0;
  const size_t n = (size_t) width * height;
  CK (cudaMalloc (&c->d_ctl, n), "cudaMalloc (control)");
  CK (cudaMemcpy (c->d_ctl, pix, n, cudaMemcpyHostToDevice), "control upload");
  if (mask) {
    CK (cudaMalloc (&c->d_cmask, n), "cudaMalloc (control mask)");
    CK (cudaMemcpy (c->d_cmask, mask, n, cudaMemcpyHostToDevice), "control mask upload");
  }
  c->cw = width;
  c->ch = height;
  return GR_OK;
}

extern "C" GrStatus
gr_nmi_sparse_cuda_run (GrNmiSparseCuda *c, const GrNmiSparseParams *p,
    const uint8_t *templates, const uint8_t *tmasks, const GrNmiSparseQuery *queries,
    int n, GrNmiSparseMatch *out, double *maps, char *errbuf, size_t errlen)
{
  if (!c->d_ctl) {
    set_err (errbuf, errlen, "no control image set");
    return GR_ERR_INVALID;
  }
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  SparseArgs a;
  memset (&a, 0, sizeof a);
  a.g.T = p->template_size;
  a.g.W = p->window_size;
  a.g.P = a.g.W - a.g.T + 1;
  a.g.R = (a.g.W - a.g.T) / 2;
  a.g.min_valid = p->min_valid;
  a.g.excl = p->peak_exclusion;
  GrsShared probe;
  const size_t smem = grs_layout (NULL, &a.g, &probe);
  if (smem > c->smem_optin) {
    set_err (errbuf, errlen, "window %d needs %zu bytes of shared memory, device %d "
        "offers %zu", a.g.W, smem, c->device, c->smem_optin);
    return GR_ERR_INVALID;
  }
  CK (cudaFuncSetAttribute (nmi_sparse_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
          (int) smem), "cudaFuncSetAttribute (shared memory)");
  int per_sm = 0;
  CK (cudaOccupancyMaxActiveBlocksPerMultiprocessor (&per_sm, nmi_sparse_kernel, GRS_NT,
          smem), "occupancy query");
  if (per_sm < 1) {
    set_err (errbuf, errlen, "sparse NMI kernel cannot be resident on device %d",
        c->device);
    return GR_ERR_CUDA;
  }
  long grid = (long) c->nsm * per_sm;
  if (grid > n)
    grid = n;
  const size_t T2 = (size_t) a.g.T * a.g.T;
  const size_t P2 = (size_t) a.g.P * a.g.P;
  const size_t nmaps = maps ? (size_t) n : (size_t) grid;

  CK (grow (&c->d_tpl, &c->tpl_cap, T2 * n), "cudaMalloc (templates)");
  if (tmasks)
    CK (grow (&c->d_tmask, &c->tmask_cap, T2 * n), "cudaMalloc (template masks)");
  CK (grow (&c->d_q, &c->q_cap, sizeof (GrNmiSparseQuery) * n), "cudaMalloc (queries)");
  CK (grow (&c->d_out, &c->out_cap, sizeof (GrNmiSparseMatch) * n), "cudaMalloc (results)");
  CK (grow (&c->d_maps, &c->maps_cap, sizeof (double) * P2 * nmaps), "cudaMalloc (maps)");

  cudaStream_t s = c->stream;
  CK (cudaMemcpyAsync (c->d_tpl, templates, T2 * n, cudaMemcpyHostToDevice, s),
      "template upload");
  if (tmasks)
    CK (cudaMemcpyAsync (c->d_tmask, tmasks, T2 * n, cudaMemcpyHostToDevice, s),
        "template mask upload");
  CK (cudaMemcpyAsync (c->d_q, queries, sizeof (GrNmiSparseQuery) * n,
          cudaMemcpyHostToDevice, s), "query upload");

  a.ctl.pix = c->d_ctl;
  a.ctl.mask = c->d_cmask;
  a.ctl.cw = c->cw;
  a.ctl.ch = c->ch;
  a.tpl = c->d_tpl;
  a.tmask = tmasks ? c->d_tmask : NULL;
  a.q = c->d_q;
  a.n = n;
  a.tab = c->d_tab;
  a.dtab = c->d_dtab;
  a.lnn = c->d_lnn;
  a.maps = c->d_maps;
  a.maps_per_keypoint = maps != NULL;
  a.out = c->d_out;

  if (c->have_events)
    CK (cudaEventRecord (c->ev0, s), "cudaEventRecord");
  nmi_sparse_kernel<<<(unsigned) grid, GRS_NT, smem, s>>> (a);
  CK (cudaGetLastError (), "sparse NMI kernel launch");
  if (c->have_events)
    CK (cudaEventRecord (c->ev1, s), "cudaEventRecord");
  CK (cudaMemcpyAsync (out, c->d_out, sizeof (GrNmiSparseMatch) * n,
          cudaMemcpyDeviceToHost, s), "result download");
  if (maps)
    CK (cudaMemcpyAsync (maps, c->d_maps, sizeof (double) * P2 * n,
            cudaMemcpyDeviceToHost, s), "map download");
  CK (cudaStreamSynchronize (s), "sparse NMI kernel");
  c->last_ms = -1.0;
  if (c->have_events) {
    float ms = 0.f;
    if (cudaEventElapsedTime (&ms, c->ev0, c->ev1) == cudaSuccess)
      c->last_ms = ms;
    else
      cudaGetLastError ();
  }
  return GR_OK;
}
