/* Internal: the CUDA half of nmi_dense (kernels/nmi_dense_cuda.cu).  Only built when
 * the build has CUDA; nmi_dense.c dispatches to it.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_NMI_DENSE_CUDA_H
#define GR_NMI_DENSE_CUDA_H

#include "nmi_dense.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct GrNmiDenseCuda GrNmiDenseCuda;

GrNmiDenseCuda *gr_nmi_dense_cuda_new (int device, char *errbuf, size_t errlen);
void gr_nmi_dense_cuda_free (GrNmiDenseCuda *c);
GrStatus gr_nmi_dense_cuda_set_control (GrNmiDenseCuda *c, const GrImage8 *control,
    char *errbuf, size_t errlen);
/* Same contract as gr_nmi_dense_run_batch; the jobs already validated by the caller
 * (regions inside the control, min_valid >= 1). */
GrStatus gr_nmi_dense_cuda_run_batch (GrNmiDenseCuda *c, const GrNmiDenseJob *jobs,
    int n, char *errbuf, size_t errlen);

int gr_cuda_device_count_impl (void);

#ifdef __cplusplus
}
#endif
#endif
