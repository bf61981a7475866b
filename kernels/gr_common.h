/* georeg kernels: shared types of the plain C API (no GStreamer).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_COMMON_H
#define GR_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where a computation runs.  AUTO picks CUDA when a usable device exists. */
typedef enum {
  GR_BACKEND_AUTO = 0,
  GR_BACKEND_CPU = 1,
  GR_BACKEND_CUDA = 2,
} GrBackend;

typedef enum {
  GR_OK = 0,
  GR_ERR_INVALID = 1,     /* bad argument: sizes, NULL pointers, region */
  GR_ERR_NOMEM = 2,       /* host allocation failed */
  GR_ERR_NO_CUDA = 3,     /* CUDA asked for, but not built in or no usable device */
  GR_ERR_CUDA = 4,        /* a CUDA call failed (detail in the error text) */
  GR_ERR_IO = 5,          /* a file could not be read or written */
  GR_ERR_FORMAT = 6,      /* a file was read but its content is unusable */
} GrStatus;

const char *gr_status_string (GrStatus status);

/* printf into errbuf (up to errlen bytes, always terminated); nothing when errbuf is
 * NULL or errlen 0.  The library's modules report errors through it. */
void gr_set_err (char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));
const char *gr_backend_name (GrBackend backend);

/* Number of usable CUDA devices: 0 when built without CUDA, without a driver, or
 * without a GPU.  Never fails. */
int gr_cuda_device_count (void);

/* True when the build has CUDA kernels compiled in. */
bool gr_cuda_compiled (void);

/* Test hook: allocation fault injection (kernels/cuda_util.h, docs/gpu-tests.md).
 * Every device and pinned allocation of the CUDA backends is counted while the hook is
 * armed, by GEOREG_CUDA_FAIL_ALLOC=N in the environment (read at the first allocation)
 * or by this call: fail_from >= 1: the fail_from-th allocation from now on and every
 * later one fail with "out of memory"; 0: count only; < 0: off.  Resets the count.
 * No-ops (count 0) in a build without CUDA. */
void gr_cuda_fail_alloc (long fail_from);
/* Allocations counted since the hook was armed (0 when it is off). */
long gr_cuda_alloc_count (void);

/* An 8-bit image already mapped to 256 bins, with an optional validity mask
 * (nonzero = valid; NULL = every pixel valid). Strides are in bytes. */
typedef struct {
  const uint8_t *pix;
  size_t pix_stride;
  const uint8_t *mask;
  size_t mask_stride;
  int width;
  int height;
} GrImage8;

/* A float plane with an optional mask (nonzero = valid), stride in elements. */
typedef struct {
  float *data;
  uint8_t *mask;          /* width*height bytes, NULL = all valid */
  int width;
  int height;
  size_t stride;          /* in floats; mask stride is width */
} GrPlaneF;

#ifdef __cplusplus
}
#endif
#endif
