/* Internal: small CUDA runtime helpers shared by the CUDA modules (kernels/cuda_util.cu).
 * Only built when the build has CUDA.
 *
 * Every device or pinned host allocation of the CUDA modules goes through
 * gr_cuda_malloc / gr_cuda_malloc_host / gr_cuda_host_alloc, which behave exactly as
 * cudaMalloc / cudaMallocHost / cudaHostAlloc, plus a fault-injection hook for the
 * tests (tests/test_cuda_oom_gpu.c, docs/gpu-tests.md):
 *
 *   GEOREG_CUDA_FAIL_ALLOC=N   N >= 1: the N-th allocation through these wrappers in
 *                              the process, and every later one, fails with
 *                              cudaErrorMemoryAllocation ("out of memory") without
 *                              calling CUDA (no error is left in the runtime's state);
 *                              N = 0: allocations are only counted.
 *                              Unset or empty: off (one atomic load per allocation).
 *
 * The variable is read once, at the first allocation; gr_cuda_fail_alloc (gr_common.h)
 * re-arms the hook from code.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_CUDA_UTIL_H
#define GR_CUDA_UTIL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* gr_cuda_fail_alloc / gr_cuda_alloc_count of gr_common.h */
void gr_cuda_fail_alloc_impl (long fail_from);
long gr_cuda_alloc_count_impl (void);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
#include <cuda_runtime.h>

#include "gr_common.h"

/* In a function with errbuf / errlen in scope: a failing CUDA call writes "CUDA <what>
 * failed: <reason>" there, clears the runtime's error state and returns `fail`
 * (GR_ERR_CUDA, or what the function reports errors with). */
#define GR_CUDA_CHECK(call, what, fail)                                       \
  do {                                                                        \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) {                                                  \
      gr_set_err (errbuf, errlen, "CUDA %s failed: %s", (what),               \
          cudaGetErrorString (e_));                                           \
      cudaGetLastError ();                                                    \
      return (fail);                                                          \
    }                                                                         \
  } while (0)

extern "C" {
cudaError_t gr_cuda_malloc (void **ptr, size_t bytes);
cudaError_t gr_cuda_malloc_host (void **ptr, size_t bytes);
cudaError_t gr_cuda_host_alloc (void **ptr, size_t bytes, unsigned int flags);
}

/* cudaMemcpy / cudaMemcpy2D host to device, returning only when the bytes are on the
 * device.  A plain cudaMemcpy from pageable memory returns once the host buffer is
 * staged, before the DMA ends (CUDA Runtime API, "API synchronization behavior"), and
 * our kernels run on non-blocking streams that do not wait for the legacy stream the
 * copy went on: a kernel or a download on another stream could read the old bytes.
 * Seen: test_control_window_gpu's download of a just-uploaded window differed on
 * every row while other processes loaded the GPU. */
static inline cudaError_t
gr_cuda_upload (void *dst, const void *src, size_t bytes)
{
  cudaError_t e = cudaMemcpy (dst, src, bytes, cudaMemcpyHostToDevice);
  return e == cudaSuccess ? cudaStreamSynchronize (0) : e;
}

static inline cudaError_t
gr_cuda_upload_2d (void *dst, size_t dpitch, const void *src, size_t spitch,
    size_t width_bytes, size_t height)
{
  cudaError_t e = cudaMemcpy2D (dst, dpitch, src, spitch, width_bytes, height,
      cudaMemcpyHostToDevice);
  return e == cudaSuccess ? cudaStreamSynchronize (0) : e;
}

/* typed pointers, as the runtime's own template overloads of cudaMalloc */
template <typename T>
static inline cudaError_t
gr_cuda_malloc (T **ptr, size_t bytes)
{
  return gr_cuda_malloc ((void **) ptr, bytes);
}

template <typename T>
static inline cudaError_t
gr_cuda_malloc_host (T **ptr, size_t bytes)
{
  return gr_cuda_malloc_host ((void **) ptr, bytes);
}

template <typename T>
static inline cudaError_t
gr_cuda_host_alloc (T **ptr, size_t bytes, unsigned int flags)
{
  return gr_cuda_host_alloc ((void **) ptr, bytes, flags);
}

/* A device buffer of at least `need` elements, reused while large enough; one that
 * grows again gets 25% slack (a growing frame or window reallocates rarely), and no
 * buffer is under `least` elements.  *cap: its size in elements (0 after a failure,
 * with *ptr NULL). */
template <typename P>
static inline cudaError_t
gr_cuda_grow (P **ptr, size_t *cap, size_t need, size_t least = 64)
{
  if (*ptr && *cap >= need)
    return cudaSuccess;
  size_t n = *ptr ? need + need / 4 : need;
  if (n < least)
    n = least;
  cudaFree (*ptr);
  *ptr = NULL;
  *cap = 0;
  cudaError_t e = gr_cuda_malloc ((void **) ptr, n * sizeof (P));
  if (e == cudaSuccess)
    *cap = n;
  else
    *ptr = NULL;
  return e;
}
#endif /* __CUDACC__ */

#endif
