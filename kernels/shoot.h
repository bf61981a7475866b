/* Geodesic shooting of landmarks (Hamiltonian LDDMM), CPU and CUDA behind one API.
 *
 * Landmarks q (n points in 2-D or 3-D) carry momenta p.  With the Gaussian kernel
 *     g_ij = exp(-|q_i - q_j|^2 / (2 sigma^2))     (note the factor 2; KeOps' LDDMM
 *                                                   tutorial uses exp(-r^2 / sigma^2))
 * the Hamiltonian is H(q, p) = 1/2 sum_ij g_ij p_i.p_j, and the geodesic flows
 *     dq/dt = dH/dp = sum_j g_ij p_j,   dp/dt = -dH/dq = -c sum_j g_ij (p_i.p_j)(q_i - q_j)
 * with c = -1/sigma^2, integrated over t in [0, 1] with T time points (dt = 1/(T-1)) by
 * forward Euler (default) or Ralston's second-order Runge-Kutta.  The loss is
 *     f(p0) = H(q0, p0) + lambda / 2 * sum_i |q_i(1) - target_i|^2
 * and its gradient on p0 is the exact gradient of the discrete scheme (the discrete
 * adjoint run backwards through the stored trajectory), so it agrees with finite
 * differences of f to rounding.
 *
 * Precision: GR_SHOOT_FLOAT32 evaluates each pair in float32 (the trajectory is kept as
 * float32 copies for the pair sums) and accumulates the sums over j, the time
 * integration and the loss in float64; GR_SHOOT_FLOAT64 does everything in float64.
 * No n x n buffer is ever formed: every pair sum is recomputed on the fly.
 * Memory: about T * n * D * 8 * 3 bytes of trajectory.
 *
 * Coordinates in this API are point-major doubles: x0 y0 [z0] x1 y1 ...
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_SHOOT_H
#define GR_SHOOT_H

#include "gr_common.h"
#include "lbfgs.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  GR_SHOOT_EULER = 0,
  GR_SHOOT_RALSTON = 1,
} GrShootIntegrator;

typedef enum {
  GR_SHOOT_FLOAT32 = 0,   /* float32 pairs and storage, float64 accumulation */
  GR_SHOOT_FLOAT64 = 1,
} GrShootPrecision;

typedef struct {
  size_t n;               /* landmarks, >= 2 */
  int dim;                /* 2 or 3 */
  double sigma;           /* kernel width, > 0, in coordinate units */
  int time_points;        /* T >= 2 */
  double lambda;          /* mismatch weight, > 0 */
  GrShootIntegrator integrator;
  GrShootPrecision precision;
} GrShootParams;

/* Sets the defaults: sigma 1.5, T 40, lambda 5e5, Euler, float32 (n and dim 0). */
void gr_shoot_params_init (GrShootParams *p);

typedef struct GrShoot GrShoot;

/* backend AUTO picks CUDA when gr_cuda_device_count() > 0 (device cuda_device, -1 =
 * device 0), else CPU; with AUTO, a CUDA engine that cannot be created (e.g. out of
 * device memory) falls back to the CPU, the reason in errbuf and gr_shoot_backend
 * saying CPU.  CUDA asked for and not available: NULL, *status = GR_ERR_NO_CUDA; asked
 * for and failing: NULL, GR_ERR_CUDA.  Bad parameters: NULL, GR_ERR_INVALID.  errbuf
 * gets the reason. */
GrShoot *gr_shoot_new (const GrShootParams *params, GrBackend backend, int cuda_device,
    GrStatus *status, char *errbuf, size_t errlen);
void gr_shoot_free (GrShoot *s);

GrBackend gr_shoot_backend (const GrShoot *s);
const GrShootParams *gr_shoot_params (const GrShoot *s);
/* A short description of where it runs ("CPU, 16 threads", "CUDA device 0: NVIDIA
 * H100 ..."). */
const char *gr_shoot_device_description (const GrShoot *s);

/* CPU threads (0 = OpenMP's default). */
void gr_shoot_set_threads (GrShoot *s, int threads);

/* Template landmarks q0 and the target (n * dim each, copied).  Every coordinate must
 * be finite (GR_ERR_INVALID otherwise). */
GrStatus gr_shoot_set_template (GrShoot *s, const double *q0, char *errbuf, size_t errlen);
GrStatus gr_shoot_set_target (GrShoot *s, const double *target, char *errbuf,
    size_t errlen);

typedef struct {
  double loss;            /* H(q0, p0) + lambda / 2 * mismatch */
  double kinetic;         /* H(q0, p0) */
  double mismatch;        /* sum_i |q_i(1) - target_i|^2 */
} GrShootLoss;

/* Loss and (when grad is not NULL) its gradient on p0 (n * dim). */
GrStatus gr_shoot_loss_grad (GrShoot *s, const double *p0, double *grad,
    GrShootLoss *loss, char *errbuf, size_t errlen);

/* A data term in place of |q(1) - target|^2, for shapes without correspondence (e.g.
 * a varifold distance, varifold.h): it returns the mismatch m at q1 (n * dim,
 * point-major) and writes d m / d q1 into grad_q1 (when not NULL); the loss becomes
 * H(q0, p0) + lambda / 2 * m(q(1)).  Non-zero status: the evaluation fails with it. */
typedef GrStatus (*GrShootDataTerm) (void *user, const double *q1, double *mismatch,
    double *grad_q1, char *errbuf, size_t errlen);

/* Sets (or, with NULL, removes) the data term; no target is needed while one is set.
 * CPU backend only (GR_ERR_INVALID on CUDA). */
GrStatus gr_shoot_set_data_term (GrShoot *s, GrShootDataTerm term, void *user,
    char *errbuf, size_t errlen);

/* The varifold (or point-cloud kernel) distance of the shot template to v's target as
 * the data term (varifold.h): cells (ncells of v's cell size; NULL for point clouds)
 * are the template's connectivity.  v and cells are not copied: they must outlive the
 * setting (NULL v removes it), and v is not to be used otherwise meanwhile.
 * CPU engine: gr_varifold_distance is the data term, its pair sums on v's backend.
 * CUDA engine: v must run on CUDA on the same device; then the whole evaluation stays
 * on the device (the template's cell features, the pair sums, d^2 and its gradient on
 * q(1) feed the adjoint in the same CUDA graph): an evaluation moves p0 up and the
 * gradient and three scalars down, as with landmarks.  CPU and CUDA agree to the
 * pairs' rounding (float64: ~1e-12 relative).  No target is needed while it is set. */
struct GrVarifold;
GrStatus gr_shoot_set_varifold (GrShoot *s, struct GrVarifold *v, const uint32_t *cells,
    size_t ncells, char *errbuf, size_t errlen);

/* As gr_shoot_loss_grad, and grad_q0 (n * dim, may be NULL) receives the gradient on
 * the template q0 (what atlas estimation needs).  CPU backend only (GR_ERR_INVALID on
 * CUDA when grad_q0 is asked for). */
GrStatus gr_shoot_loss_grad_template (GrShoot *s, const double *p0, double *grad,
    double *grad_q0, GrShootLoss *loss, char *errbuf, size_t errlen);

/* Shoots from p0: q1 (n * dim, may be NULL) receives q(1); p1 (may be NULL) p(1).
 * When n_extra > 0, the points extra (n_extra * dim) are carried along the same flow
 * by the velocity v(x, t) = sum_l g(|q_l(t) - x|) p_l(t) with the same integrator, into
 * extra_out. */
GrStatus gr_shoot_flow (GrShoot *s, const double *p0, double *q1, double *p1,
    const double *extra, size_t n_extra, double *extra_out, char *errbuf, size_t errlen);

/* Called after each L-BFGS iteration; return non-zero to stop. */
typedef int (*GrShootProgress) (void *user, int iteration, int evaluations, double loss,
    double gnorm);

typedef struct {
  GrLbfgsResult result;
  int iterations;
  int evaluations;
  double loss, kinetic, mismatch;   /* at the returned p0 */
  double loss0, mismatch0;          /* at the starting p0 */
  double gnorm, gnorm0;             /* gradient norms at the end and at the start */
  double seconds;                   /* wall time of the fit */
} GrShootFitResult;

/* Minimizes the loss over p0 by L-BFGS (lbfgs may be NULL for the defaults), starting
 * from p0 (n * dim; zeros are a good start) and leaving the best p0 found in it.
 * Returns GR_OK whenever p0 holds a usable result (also when the L-BFGS stopped at
 * max-iterations or on a line-search failure: see result->result); an error only when
 * an evaluation failed (CUDA error) or memory ran out. */
GrStatus gr_shoot_fit (GrShoot *s, double *p0, const GrLbfgsParams *lbfgs,
    GrShootProgress progress, void *user, GrShootFitResult *result, char *errbuf,
    size_t errlen);

/* ---- populations: many targets registered to one template together --------------
 *
 * A batch holds S subjects (targets) that share the template and the parameters; each
 * subject has its own momenta and its own L-BFGS state (the same minimization as
 * gr_shoot_fit, driven by reverse communication), and the evaluations the active
 * subjects ask for are done together: on the CPU in parallel over subjects (OpenMP,
 * one engine per thread), on CUDA in one launch per time step covering every active
 * subject (grid: row blocks x subjects; two engines, one per half of the subjects, so
 * that the host's L-BFGS steps of one half overlap the device's work on the other).
 * Each subject goes through exactly the steps it would take alone: on the CPU its loss
 * is bit-identical to gr_shoot_fit's; on CUDA to a batch of capacity 1's (the same
 * population kernels, whatever the capacity and the subject's place in the batch),
 * while gr_shoot_fit's single-subject kernels sum in another order (float32 rounding
 * apart; docs/landmarkshoot.md, "Registered alone"). */
typedef struct GrShootBatch GrShootBatch;

/* Up to `subjects` targets (>= 1; at most 65535 on CUDA).  Backend and errors as
 * gr_shoot_new; CUDA memory grows with the subjects (about 4 T n D 12 bytes each). */
GrShootBatch *gr_shoot_batch_new (const GrShootParams *params, size_t subjects,
    GrBackend backend, int cuda_device, GrStatus *status, char *errbuf, size_t errlen);
void gr_shoot_batch_free (GrShootBatch *b);
GrBackend gr_shoot_batch_backend (const GrShootBatch *b);
const char *gr_shoot_batch_device_description (const GrShootBatch *b);
size_t gr_shoot_batch_capacity (const GrShootBatch *b);
/* CPU threads (0 = OpenMP's default). */
void gr_shoot_batch_set_threads (GrShootBatch *b, int threads);

GrStatus gr_shoot_batch_set_template (GrShootBatch *b, const double *q0, char *errbuf,
    size_t errlen);
/* The target of one subject (0 .. capacity-1), n * dim point-major, copied. */
GrStatus gr_shoot_batch_set_target (GrShootBatch *b, size_t subject, const double *target,
    char *errbuf, size_t errlen);

/* Loss and gradients of `count` subjects at once: subject which[k] at p0[k] (n * dim
 * each); grad[k] may be NULL (or grad itself NULL) for no gradient; loss[k] set. */
GrStatus gr_shoot_batch_loss_grad (GrShootBatch *b, const size_t *which, size_t count,
    const double *const *p0, double *const *grad, GrShootLoss *loss, char *errbuf,
    size_t errlen);

/* Called after each accepted L-BFGS iteration of a subject; non-zero stops it.  The
 * subjects' L-BFGS steps run on several host threads: the calls come from any of them,
 * one at a time (serialized), in no fixed subject order. */
typedef int (*GrShootBatchProgress) (void *user, size_t subject, int iteration,
    int evaluations, double loss, double gnorm);

/* Fits subjects 0 .. count-1 (count <= capacity): p0 holds count * n * dim starting
 * momenta (subject-major, each point-major), replaced by the results; results[count]
 * as gr_shoot_fit's (seconds: the wall time of the whole batch).  GR_OK whenever p0
 * holds usable results; an error only when an evaluation failed (CUDA) or memory ran
 * out. */
GrStatus gr_shoot_batch_fit (GrShootBatch *b, size_t count, double *p0,
    const GrLbfgsParams *lbfgs, GrShootBatchProgress progress, void *user,
    GrShootFitResult *results, char *errbuf, size_t errlen);

/* ---- atlas: the template estimated from a population ------------------------------
 *
 * Deterministic atlas (as Deformetrica's): the template q0 and every subject's momenta
 * p_s minimize together
 *     F(q0, p_1 .. p_S) = sum_s [ H(q0, p_s) + lambda / 2 |q_s(1) - target_s|^2 ]
 * by L-BFGS over all of them, with exact gradients (the adjoint's q part at t = 0 plus
 * dH/dq0 for the template).  CPU, in parallel over subjects (OpenMP); the sums over
 * subjects are taken in subject order, so the result does not depend on the thread
 * count.  The momenta are the per-subject output for statistics on shape (their PCA). */
typedef enum {
  GR_SHOOT_ATLAS_FROM_MEAN = 0,   /* start from the mean of the targets */
  GR_SHOOT_ATLAS_FROM_GIVEN = 1,  /* start from the template passed in */
} GrShootAtlasStart;

typedef struct {
  GrLbfgsResult result;
  int iterations, evaluations;
  double loss0, loss;             /* F at the start and at the end */
  double kinetic, mismatch;       /* their sums over subjects, at the end */
  double seconds;
} GrShootAtlasResult;

/* targets: subjects * n * dim (subject-major, each point-major).  template_io: n * dim,
 * the initial template with FROM_GIVEN, filled with the mean first with FROM_MEAN; the
 * estimate on return.  momenta_io: subjects * n * dim starting momenta (zeros are a
 * good start), the estimates on return.  threads 0 = OpenMP's default.  GR_OK whenever
 * the outputs hold a usable estimate (see result->result). */
GrStatus gr_shoot_atlas (const GrShootParams *params, size_t subjects,
    const double *targets, GrShootAtlasStart start, double *template_io,
    double *momenta_io, const GrLbfgsParams *lbfgs, int threads,
    GrShootAtlasResult *result, char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
