/* Internal: the CUDA half of shoot (kernels/shoot_cuda.cu).  Only built when the build
 * has CUDA; shoot.c dispatches to it.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_SHOOT_CUDA_H
#define GR_SHOOT_CUDA_H

#include "shoot.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct GrShootCuda GrShootCuda;

/* Allocates every device buffer once (no allocation per evaluation).  desc receives a
 * description of the device. */
GrShootCuda *gr_shoot_cuda_new (const GrShootParams *params, int device, char *desc,
    size_t desclen, char *errbuf, size_t errlen);
void gr_shoot_cuda_free (GrShootCuda *c);

/* Point-major doubles; either may be NULL (kept as they were). */
GrStatus gr_shoot_cuda_set_points (GrShootCuda *c, const double *q0,
    const double *target, char *errbuf, size_t errlen);

/* One evaluation (forward flow, loss, adjoint): out = {loss, kinetic, mismatch};
 * grad (point-major, may be NULL) receives the gradient on p0. */
GrStatus gr_shoot_cuda_eval (GrShootCuda *c, const double *p0, double *grad,
    double out[3], char *errbuf, size_t errlen);

/* The trajectory of the last evaluation, as structure-of-arrays per time point
 * ([t][d][n]): the float64 states xq, xp (T slots), and the pair copies the kernels
 * read: xqR/xpR (T slots) and, for Ralston, the stage states yqR/ypR (T-1 slots), of
 * float in float32 mode and double in float64 mode.  Any pointer may be NULL. */
GrStatus gr_shoot_cuda_trajectory (GrShootCuda *c, double *xq, double *xp, void *xqR,
    void *xpR, void *yqR, void *ypR, char *errbuf, size_t errlen);

/* Populations (shoot_batch.c): an engine for up to `subjects` targets that evaluates
 * many subjects in one launch per time step (grid: row blocks x subjects).  The
 * single-subject functions above are this engine with one subject (subject 0). */
GrShootCuda *gr_shoot_cuda_new_batch (const GrShootParams *params, size_t subjects,
    int device, char *desc, size_t desclen, char *errbuf, size_t errlen);
/* The same, always on the population (row) kernels, even for one subject: what
 * gr_shoot_batch uses, so that a subject registered alone through it (capacity 1)
 * gets exactly its values in a population. */
GrShootCuda *gr_shoot_cuda_new_population (const GrShootParams *params, size_t subjects,
    int device, char *desc, size_t desclen, char *errbuf, size_t errlen);
GrStatus gr_shoot_cuda_set_subject_target (GrShootCuda *c, size_t subject,
    const double *target, char *errbuf, size_t errlen);
/* Evaluates subjects which[0 .. count-1] at p0[k] (point-major); grad (or grad[k])
 * may be NULL; out[k] = {loss, kinetic, mismatch}. */
GrStatus gr_shoot_cuda_eval_batch (GrShootCuda *c, const size_t *which, size_t count,
    const double *const *p0, double *const *grad, double (*out)[3], char *errbuf,
    size_t errlen);
/* The same in two halves, so that the host can work while the device evaluates:
 * submit stages and enqueues one evaluation of count <= subjects (capacity) subjects
 * and returns; collect waits for it and writes grad[k] (if want_grad and grad[k]) and
 * out[k].  One evaluation in flight per engine; eval_batch = submit + collect. */
GrStatus gr_shoot_cuda_submit (GrShootCuda *c, const size_t *which, size_t count,
    const double *const *p0, int want_grad, char *errbuf, size_t errlen);
GrStatus gr_shoot_cuda_collect (GrShootCuda *c, double *const *grad, double (*out)[3],
    char *errbuf, size_t errlen);

/* A device data term in place of the landmark mismatch (single-subject engines): term
 * enqueues, on `stream` (a cudaStream_t), kernels that read q(1) (q1: n vectors of 4
 * doubles x y z 0 on the device) and write the mismatch into m[0] and its gradient on
 * q(1) into g (n vectors of 4 doubles, on the device); it is captured into the
 * evaluation graph, so kernels only: no copy, no synchronization, no allocation, and
 * the buffers it reads stay where they are while it is set.  Returns a cudaError_t.
 * The loss becomes H + lambda / 2 m and the adjoint starts from lambda / 2 g, all on
 * the device: an evaluation copies p0 up and the gradient and three scalars down, as
 * with landmarks.  NULL removes it (the target's mismatch again). */
typedef int (*GrShootCudaTerm) (void *user, void *stream, const double *q1, double *m,
    double *g);
GrStatus gr_shoot_cuda_set_term (GrShootCuda *c, GrShootCudaTerm term, void *user,
    char *errbuf, size_t errlen);
int gr_shoot_cuda_device (const GrShootCuda *c);
size_t gr_shoot_cuda_capacity (const GrShootCuda *c);

#ifdef __cplusplus
}
#endif
#endif
