/* Small CUDA runtime helpers shared by the CUDA modules.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <cuda_runtime.h>
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
