/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "gr_common.h"
#include "nmi_dense_cuda.h"
#include "cuda_util.h"

const char *
gr_backend_name (GrBackend backend)
{
  switch (backend) {
    case GR_BACKEND_AUTO: return "auto";
    case GR_BACKEND_CPU: return "cpu";
    case GR_BACKEND_CUDA: return "cuda";
  }
  return "?";
}

bool
gr_cuda_compiled (void)
{
  return GR_HAVE_CUDA;
}

int
gr_cuda_device_count (void)
{
#if GR_HAVE_CUDA
  /* cudart is static: with no driver it reports an error, which means zero devices. */
  return gr_cuda_device_count_impl ();
#else
  return 0;
#endif
}

void
gr_cuda_fail_alloc (long fail_from)
{
#if GR_HAVE_CUDA
  gr_cuda_fail_alloc_impl (fail_from);
#else
  (void) fail_from;
#endif
}

long
gr_cuda_alloc_count (void)
{
#if GR_HAVE_CUDA
  return gr_cuda_alloc_count_impl ();
#else
  return 0;
#endif
}
