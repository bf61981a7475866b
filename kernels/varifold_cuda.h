/* Internal: the CUDA half of the varifold data terms (kernels/varifold_cuda.cu).  Only
 * built when the build has CUDA; varifold.c dispatches to it.  The device computes the
 * pair sums (varifold_cpu_impl.h's vf_rows); the features and the chain rule back to
 * the vertices stay in varifold.c, shared with the CPU.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_VARIFOLD_CUDA_H
#define GR_VARIFOLD_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct GrVarifoldCuda GrVarifoldCuda;

/* kind: 0 points, 1 oriented, 2 unoriented; float64: 0 float32 pairs (float64 sums),
 * 1 float64 throughout; inv_s2 = 1 / sigma^2.  desc receives the device's name. */
GrVarifoldCuda *gr_varifold_cuda_new (int device, int dim, int kind, int float64,
    double inv_s2, char *desc, size_t desclen, char *errbuf, size_t errlen);
void gr_varifold_cuda_free (GrVarifoldCuda *c);

/* Shape `slot` (0 or 1; varifold.c keeps the target in 0 and the source in 1): F cells,
 * centres c and vectors n as structure-of-arrays [d * F + f] of float (float32 mode)
 * or double.  Copied to the device. */
GrStatus gr_varifold_cuda_set_shape (GrVarifoldCuda *c, int slot, size_t F, const void *c_,
    const void *n_, char *errbuf, size_t errlen);

/* vf_rows of shape a against shape b (slots): row[F_a], and when gc is not NULL
 * gc, gn [d * F_a + f] (float64, as the CPU's). */
GrStatus gr_varifold_cuda_rows (GrVarifoldCuda *c, int a, int b, double *row, double *gc,
    double *gn, char *errbuf, size_t errlen);

/* ---- the device term (shoot.c: the shooting's data term on CUDA) ------------------
 * The source's connectivity (nv vertices; cells of cell_size as the engine's kind:
 * 1 with kind 0 points, NULL cells; 2 or 3 otherwise), fixed for the term's life, and
 * <T, T>: uploaded once, with the vertex -> cells incidence lists the chain rule
 * gathers. */
GrStatus gr_varifold_cuda_set_source (GrVarifoldCuda *c, size_t nv, int cell_size,
    const uint32_t *cells, size_t ncells, double tt, char *errbuf, size_t errlen);
int gr_varifold_cuda_device (const GrVarifoldCuda *c);
/* A GrShootCudaTerm (shoot_cuda.h), user = the engine: enqueues on `stream` (a
 * cudaStream_t) the kernels that read the source's vertices q1 (device, 4 doubles per
 * vertex) and write d2 into m[0] and d d2 / d q1 into g (device, 4 doubles per vertex).
 * Kernels only (no copy, no synchronization): it is captured into the shooting's
 * graph.  Returns a cudaError_t. */
int gr_varifold_cuda_enqueue_term (void *user, void *stream, const double *q1, double *m,
    double *g);

/* varifold.c: v's device engine with the source bound (the cells copied to the
 * device); NULL with errbuf set when v does not run on CUDA or the cells are bad. */
struct GrVarifold;
GrVarifoldCuda *gr_varifold_bind_device (struct GrVarifold *v, size_t nvertices,
    const uint32_t *cells, size_t ncells, GrStatus *status, char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
