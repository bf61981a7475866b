/* Internal: the CUDA half of nmi_sparse (kernels/nmi_sparse_cuda.cu).  Only built
 * when the build has CUDA; nmi_sparse.c dispatches to it.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_NMI_SPARSE_CUDA_H
#define GR_NMI_SPARSE_CUDA_H

#include "nmi_sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct GrNmiSparseCuda GrNmiSparseCuda;

/* tab, dtab, lnn: the host tables (GRS_TAB entries each, nmi_sparse_impl.h), copied
 * to the device so that both backends use the same values. */
GrNmiSparseCuda *gr_nmi_sparse_cuda_new (int device, const int64_t *tab,
    const int64_t *dtab, const double *lnn, char *errbuf, size_t errlen);
void gr_nmi_sparse_cuda_free (GrNmiSparseCuda *c);
/* control: packed (stride = width) values; mask packed 0/1 or NULL (all valid) */
GrStatus gr_nmi_sparse_cuda_set_control (GrNmiSparseCuda *c, const uint8_t *pix,
    const uint8_t *mask, int width, int height, char *errbuf, size_t errlen);
/* Same contract as gr_nmi_sparse_run; params already validated and resolved
 * (min_valid >= 1). */
GrStatus gr_nmi_sparse_cuda_run (GrNmiSparseCuda *c, const GrNmiSparseParams *params,
    const uint8_t *templates, const uint8_t *tmasks, const GrNmiSparseQuery *queries,
    int n, GrNmiSparseMatch *out, double *maps, char *errbuf, size_t errlen);
/* A borrowed device control (never freed by c). */
GrStatus gr_nmi_sparse_cuda_set_control_device (GrNmiSparseCuda *c, const uint8_t *d_pix,
    const uint8_t *d_mask, int width, int height, int vmax, char *errbuf, size_t errlen);
/* Device-side templates: either d_templates / d_tmasks (device), or cut on the device
 * from d_img at the host centres xy (with masks when with_masks).  No maps. */
GrStatus gr_nmi_sparse_cuda_run_dev (GrNmiSparseCuda *c, const GrNmiSparseParams *params,
    const uint8_t *d_templates, const uint8_t *d_tmasks, const GrImage8 *d_img,
    const int32_t *xy, bool with_masks, const GrNmiSparseQuery *queries, int n,
    GrNmiSparseMatch *out, char *errbuf, size_t errlen);
double gr_nmi_sparse_cuda_last_ms (const GrNmiSparseCuda *c);

#ifdef __cplusplus
}
#endif
#endif
