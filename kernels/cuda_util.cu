/* Small CUDA runtime helpers shared by the CUDA modules.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include "cuda_util.h"
#include "nmi_dense_cuda.h"

extern "C" int
gr_cuda_device_count_impl (void)
{
  int n = 0;
  if (cudaGetDeviceCount (&n) != cudaSuccess) {
    cudaGetLastError ();   /* clear the sticky-free error so later calls start clean */
    return 0;
  }
  return n;
}

/* ---- allocation fault injection (cuda_util.h: GEOREG_CUDA_FAIL_ALLOC) -----------
 * File-scope atomics, not function statics: the library is built with
 * -fno-threadsafe-statics.  g_fail_from: FAIL_UNREAD until the variable is read,
 * FAIL_OFF, 0 (count only) or N >= 1 (the N-th allocation and every later one fail). */
#define FAIL_UNREAD (-2L)
#define FAIL_OFF (-1L)
static long g_fail_from = FAIL_UNREAD;
static long g_alloc_count = 0;

static long
fail_from (void)
{
  long v = __atomic_load_n (&g_fail_from, __ATOMIC_ACQUIRE);
  if (v != FAIL_UNREAD)
    return v;
  /* first allocation: read the environment (two threads racing here read the same
   * value; the first store wins) */
  const char *env = getenv ("GEOREG_CUDA_FAIL_ALLOC");
  long n = FAIL_OFF;
  if (env && *env) {
    char *end = NULL;
    const long x = strtol (env, &end, 10);
    if (end && *end == '\0' && x >= 0)
      n = x;
    else
      fprintf (stderr, "georeg: GEOREG_CUDA_FAIL_ALLOC=\"%s\" ignored (want an integer "
          ">= 0)\n", env);
  }
  long expected = FAIL_UNREAD;
  __atomic_compare_exchange_n (&g_fail_from, &expected, n, false, __ATOMIC_ACQ_REL,
      __ATOMIC_ACQUIRE);
  return __atomic_load_n (&g_fail_from, __ATOMIC_ACQUIRE);
}

/* true when this allocation must fail */
static bool
inject_failure (void)
{
  const long f = fail_from ();
  if (f < 0)
    return false;
  const long k = __atomic_add_fetch (&g_alloc_count, 1, __ATOMIC_RELAXED);
  return f >= 1 && k >= f;
}

extern "C" cudaError_t
gr_cuda_malloc (void **ptr, size_t bytes)
{
  if (inject_failure ()) {
    *ptr = NULL;
    return cudaErrorMemoryAllocation;
  }
  return cudaMalloc (ptr, bytes);
}

extern "C" cudaError_t
gr_cuda_malloc_host (void **ptr, size_t bytes)
{
  if (inject_failure ()) {
    *ptr = NULL;
    return cudaErrorMemoryAllocation;
  }
  return cudaMallocHost (ptr, bytes);
}

extern "C" cudaError_t
gr_cuda_host_alloc (void **ptr, size_t bytes, unsigned int flags)
{
  if (inject_failure ()) {
    *ptr = NULL;
    return cudaErrorMemoryAllocation;
  }
  return cudaHostAlloc (ptr, bytes, flags);
}

extern "C" void
gr_cuda_fail_alloc_impl (long fail_from_n)
{
  __atomic_store_n (&g_alloc_count, 0L, __ATOMIC_RELAXED);
  __atomic_store_n (&g_fail_from, fail_from_n >= 0 ? fail_from_n : FAIL_OFF,
      __ATOMIC_RELEASE);
}

extern "C" long
gr_cuda_alloc_count_impl (void)
{
  return __atomic_load_n (&g_alloc_count, __ATOMIC_RELAXED);
}
