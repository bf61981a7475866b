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

extern "C" {
cudaError_t gr_cuda_malloc (void **ptr, size_t bytes);
cudaError_t gr_cuda_malloc_host (void **ptr, size_t bytes);
cudaError_t gr_cuda_host_alloc (void **ptr, size_t bytes, unsigned int flags);
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
#endif /* __CUDACC__ */

#endif
