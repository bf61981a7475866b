/* Varifold and kernel data terms: distances between shapes that need not correspond
 * (different samplings, different counts), with exact gradients (plain C; the pair
 * sums on the CPU or, with gr_varifold_new_backend, on CUDA: varifold_cuda.cu).
 *
 * A shape is vertices (D = 2 or 3 coordinates, point-major) and cells of k vertex
 * indices: k = 1 points (a point cloud), k = 2 segments (polylines, curves), k = 3
 * triangles (surfaces, 3-D).  Each cell f has a centre c_f (the mean of its vertices)
 * and a vector n_f: none for points (weight 1), the edge v1 - v0 for a segment (its
 * length is the weight), the area normal 1/2 (v1 - v0) x (v2 - v0) for a triangle.
 * With w(c, c') = exp(-|c - c'|^2 / sigma^2) the inner product of two shapes is
 *     <S, T> = sum_{f in S} sum_{g in T} w(c_f, c_g) O(n_f, n_g)
 * with O = 1 (points), n_f . n_g (ORIENTED: currents, the linear orientation kernel), or
 * (n_f . n_g)^2 / (|n_f| |n_g|) (UNORIENTED varifold, area-weighted Binet kernel:
 * flipping a cell changes nothing).  The squared distance is
 *     d^2(S, T) = <S, S> - 2 <S, T> + <T, T>
 * and its gradient on S's vertices follows the centres and the vectors by the chain
 * rule (exact: it matches finite differences to rounding).  Matrix-free: every pair is
 * formed on the fly; O(|S| (|S| + |T|)) pairs per evaluation, rows in parallel
 * (OpenMP).  float32 pair arithmetic with float64 sums, or float64 throughout.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_VARIFOLD_H
#define GR_VARIFOLD_H

#include <stdint.h>

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  GR_VARIFOLD_ORIENTED = 0,     /* n_f . n_g (currents) */
  GR_VARIFOLD_UNORIENTED = 1,   /* (n_f . n_g)^2 / (|n_f| |n_g|) */
} GrVarifoldOrientation;

typedef struct {
  int dim;                      /* 2 or 3 */
  int cell_size;                /* 1 points, 2 segments, 3 triangles (3-D only) */
  double sigma;                 /* spatial kernel width, > 0 */
  GrVarifoldOrientation orientation;   /* ignored for points */
  int float64;                  /* 0: float32 pairs, float64 sums; 1: float64 */
  int threads;                  /* 0 = OpenMP's default */
} GrVarifoldParams;

typedef struct GrVarifold GrVarifold;

/* The target shape (copied; its self term computed once).  cells: ncells * cell_size
 * vertex indices (NULL for points: every vertex is a cell).  NULL on bad input (an
 * index out of range, a non-finite coordinate, ...), errbuf says why. */
GrVarifold *gr_varifold_new (const GrVarifoldParams *params, const double *vertices,
    size_t nvertices, const uint32_t *cells, size_t ncells, char *errbuf, size_t errlen);
void gr_varifold_free (GrVarifold *v);

/* As gr_varifold_new, with the pair sums on a backend: GR_BACKEND_CPU (OpenMP);
 * GR_BACKEND_CUDA (device cuda_device, -1 = 0; NULL with *status GR_ERR_NO_CUDA when
 * there is none, GR_ERR_CUDA when it fails); GR_BACKEND_AUTO: CUDA when a device is
 * usable (falling back to the CPU when its engine cannot be made), else the CPU.  The
 * cell features and the chain rule to the vertices run on the CPU either way.  CPU and
 * CUDA agree to the pairs' rounding (float64: ~1e-12 relative).  status may be NULL. */
GrVarifold *gr_varifold_new_backend (const GrVarifoldParams *params, GrBackend backend,
    int cuda_device, const double *vertices, size_t nvertices, const uint32_t *cells,
    size_t ncells, GrStatus *status, char *errbuf, size_t errlen);
/* Where the pair sums run (CPU or CUDA). */
GrBackend gr_varifold_backend (const GrVarifold *v);

/* d^2 between the source (its vertices and cells, as above) and the target; grad (may
 * be NULL) receives d d^2 / d vertices (nvertices * dim). */
GrStatus gr_varifold_distance (GrVarifold *v, const double *vertices, size_t nvertices,
    const uint32_t *cells, size_t ncells, double *d2, double *grad, char *errbuf,
    size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
