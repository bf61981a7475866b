/* Geodesic shooting of landmarks: dispatcher, the multi-threaded CPU backend and the
 * L-BFGS fit.  The maths is in shoot.h; the pair sums in shoot_cpu_impl.h.
 *
 * CPU method: the trajectory (q_t, p_t), t = 0 .. T-1, is stored as float64 states and,
 * in float32 mode, as float32 copies that the pair sums read; every pair sum is a
 * row-parallel (OpenMP) loop over j, vectorized over j, accumulated in float64.
 * Forward Euler: x_{t+1} = x_t + dt F(x_t), F = (Hp, -Hq).  Its adjoint runs back
 * through the stored states: L_t = L_{t+1} + dt J_F(x_t)^T L_{t+1}, from
 * L_{T-1} = (lambda (q_{T-1} - target), 0); the gradient is L_0's p part plus Hp(q0, p0)
 * (the kinetic term).  Ralston: y = x + 2/3 dt F(x), x' = x + dt (F(x)/4 + 3 F(y)/4);
 * adjoint mu = 3/4 dt J(y)^T L', L = L' + mu + J(x)^T (dt/4 L' + 2/3 dt mu).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "shoot.h"
#include "shoot_internal.h"
#include "shoot_cuda.h"
#include "varifold.h"
#if GR_HAVE_CUDA
#include "varifold_cuda.h"
#endif

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>

/* g = 0 beyond r^2 / (2 sigma^2) > 60 (g < 9e-27, far below float64 rounding of the
 * g_ii = 1 term); the CUDA kernels use the same cutoff. */
#define GR_SHOOT_CUTOFF 60.0

/* exp(x) for x <= 0 in float32, vectorizable: 2^n e^r with |r| <= ln2 / 2 and a
 * degree-7 Taylor polynomial (truncation < 6e-9 relative); below -87 it returns
 * exp(-87) (~1.6e-38) instead of a denormal, which is 0 for every sum here. */
static inline float
expneg_f32 (float x)
{
  x = x < -87.0f ? -87.0f : x;
  float t = x * 1.44269504088896341f;
  int32_t ni = (int32_t) (t - 0.5f);          /* round to nearest for t <= 0 */
  float fn = (float) ni;
  float r = x - fn * 0.693359375f;            /* ln 2 split in two parts */
  r = r - fn * -2.12194440054690583e-4f;
  float y = 1.0f / 5040.0f;
  y = y * r + 1.0f / 720.0f;
  y = y * r + 1.0f / 120.0f;
  y = y * r + 1.0f / 24.0f;
  y = y * r + 1.0f / 6.0f;
  y = y * r + 0.5f;
  y = y * r + 1.0f;
  y = y * r + 1.0f;
  union { int32_t i; float f; } u;
  u.i = (ni + 127) << 23;
  return y * u.f;
}

#define R float
#define EXPNEG(x) expneg_f32 (x)
#define D 2
#define SFX(x) x##_f32_2
#include "shoot_cpu_impl.h"
#undef D
#undef SFX
#define D 3
#define SFX(x) x##_f32_3
#include "shoot_cpu_impl.h"
#undef D
#undef SFX
#undef R
#undef EXPNEG

#define R double
#define EXPNEG(x) exp (x)
#define D 2
#define SFX(x) x##_f64_2
#include "shoot_cpu_impl.h"
#undef D
#undef SFX
#define D 3
#define SFX(x) x##_f64_3
#include "shoot_cpu_impl.h"
#undef D
#undef SFX
#undef R
#undef EXPNEG

struct GrShoot {
  GrShootParams p;
  GrBackend backend;
  int threads;                  /* 0 = OpenMP default */
  size_t n, dn;                 /* points; dim * n */
  int D, T;
  double dt, k, c;              /* 1/(T-1), 1/(2 sigma^2), -1/sigma^2 */
  size_t es;                    /* bytes of one pair-copy value (4 or 8) */
  bool has_template, has_target;
  char desc[160];

  double *tgt;                  /* target, SoA */
  /* trajectory: states [T][D][n] and the pair copies the sums read */
  double *xq, *xp;
  void *xqR, *xpR;              /* == xq, xp in float64 mode */
  void *yqR, *ypR;              /* Ralston stage states [T-1][D][n] */
  bool traj_valid;              /* the trajectory matches the last p0 shot */
  GrShootDataTerm term;         /* a data term in place of the landmark mismatch */
  void *term_user;
  double *q1pm, *gq1pm;         /* its q(1) and gradient, point-major */
  GrVarifold *vf;               /* gr_shoot_set_varifold's term (not owned) */
  const uint32_t *vf_cells;     /* the template's cells, for the CPU term (not owned) */
  size_t vf_ncells;
  bool dev_term;                /* a data term runs on the device (CUDA) */
  /* CPU work arrays, [D][n] */
  double *hp, *hq, *k1q, *k1p, *hp0, *hq0, *tmpq, *tmpp;
  double *a, *b, *ra, *rb, *mua, *mub, *wa, *wb;
  void *aR, *bR, *waR, *wbR;
#if GR_HAVE_CUDA
  GrShootCuda *cuda;
#endif
};

void
gr_shoot_params_init (GrShootParams *p)
{
  memset (p, 0, sizeof *p);
  p->sigma = 1.5;
  p->time_points = 40;
  p->lambda = 5e5;
  p->integrator = GR_SHOOT_EULER;
  p->precision = GR_SHOOT_FLOAT32;
}

static bool
params_ok (const GrShootParams *p, char *errbuf, size_t errlen)
{
  if (!p) {
    gr_set_err (errbuf, errlen, "no parameters");
    return false;
  }
  if (p->dim != 2 && p->dim != 3) {
    gr_set_err (errbuf, errlen, "dimension %d: only 2-D and 3-D point sets", p->dim);
    return false;
  }
  if (p->n < 2) {
    gr_set_err (errbuf, errlen, "%zu landmark(s): at least 2 are needed", p->n);
    return false;
  }
  if (p->n > (size_t) 1 << 26) {
    gr_set_err (errbuf, errlen, "%zu landmarks: too many", p->n);
    return false;
  }
  if (!(p->sigma > 0.0) || !isfinite (p->sigma)) {
    gr_set_err (errbuf, errlen, "sigma must be positive and finite");
    return false;
  }
  if (p->time_points < 2 || p->time_points > 100000) {
    gr_set_err (errbuf, errlen, "time points must be in 2 .. 100000");
    return false;
  }
  if (!(p->lambda > 0.0) || !isfinite (p->lambda)) {
    gr_set_err (errbuf, errlen, "lambda must be positive and finite");
    return false;
  }
  if (p->integrator != GR_SHOOT_EULER && p->integrator != GR_SHOOT_RALSTON) {
    gr_set_err (errbuf, errlen, "unknown integrator");
    return false;
  }
  if (p->precision != GR_SHOOT_FLOAT32 && p->precision != GR_SHOOT_FLOAT64) {
    gr_set_err (errbuf, errlen, "unknown precision");
    return false;
  }
  return true;
}

static int
nthreads (const GrShoot *s)
{
  return s->threads > 0 ? s->threads : omp_get_max_threads ();
}

static void *
xalloc (size_t bytes, bool *ok)
{
  void *m = malloc (bytes ? bytes : 1);
  if (!m)
    *ok = false;
  return m;
}

/* Host trajectory (both backends: the CUDA one downloads into it for gr_shoot_flow). */
static bool
alloc_trajectory (GrShoot *s)
{
  if (s->xq)
    return true;
  bool ok = true;
  size_t T = s->T, dn = s->dn;
  s->xq = xalloc (sizeof (double) * T * dn, &ok);
  s->xp = xalloc (sizeof (double) * T * dn, &ok);
  if (s->p.precision == GR_SHOOT_FLOAT32) {
    s->xqR = xalloc (s->es * T * dn, &ok);
    s->xpR = xalloc (s->es * T * dn, &ok);
  } else {
    s->xqR = s->xq;
    s->xpR = s->xp;
  }
  if (s->p.integrator == GR_SHOOT_RALSTON) {
    s->yqR = xalloc (s->es * (T - 1) * dn, &ok);
    s->ypR = xalloc (s->es * (T - 1) * dn, &ok);
  }
  return ok;
}

static bool
alloc_cpu_work (GrShoot *s)
{
  bool ok = true;
  size_t b = sizeof (double) * s->dn;
  double **d[] = { &s->hp, &s->hq, &s->k1q, &s->k1p, &s->hp0, &s->hq0, &s->tmpq, &s->tmpp,
    &s->a,
    &s->b, &s->ra, &s->rb, &s->mua, &s->mub, &s->wa, &s->wb };
  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
    *d[i] = xalloc (b, &ok);
  if (s->p.precision == GR_SHOOT_FLOAT32) {
    s->aR = xalloc (s->es * s->dn, &ok);
    s->bR = xalloc (s->es * s->dn, &ok);
    s->waR = xalloc (s->es * s->dn, &ok);
    s->wbR = xalloc (s->es * s->dn, &ok);
  } else {
    s->aR = s->a;
    s->bR = s->b;
    s->waR = s->wa;
    s->wbR = s->wb;
  }
  return ok;
}

GrShoot *
gr_shoot_new (const GrShootParams *params, GrBackend backend, int cuda_device,
    GrStatus *status, char *errbuf, size_t errlen)
{
  GrStatus dummy;
  if (!status)
    status = &dummy;
  *status = GR_OK;
  if (!params_ok (params, errbuf, errlen)) {
    *status = GR_ERR_INVALID;
    return NULL;
  }
  GrBackend use = backend;
  if (use == GR_BACKEND_AUTO)
    use = gr_cuda_device_count () > 0 ? GR_BACKEND_CUDA : GR_BACKEND_CPU;
  if (use == GR_BACKEND_CUDA && gr_cuda_device_count () <= 0) {
    *status = GR_ERR_NO_CUDA;
    gr_set_err (errbuf, errlen, "%s", gr_cuda_compiled ()
        ? "no usable CUDA device (no GPU or no driver)"
        : "this build has no CUDA kernels (built without nvcc)");
    return NULL;
  }
  if (use == GR_BACKEND_CUDA && cuda_device >= gr_cuda_device_count ()) {
    *status = GR_ERR_NO_CUDA;
    gr_set_err (errbuf, errlen, "CUDA device %d does not exist (%d device(s))", cuda_device,
        gr_cuda_device_count ());
    return NULL;
  }

  GrShoot *s = calloc (1, sizeof *s);
  if (!s) {
    *status = GR_ERR_NOMEM;
    return NULL;
  }
  s->p = *params;
  s->backend = use;
  s->n = params->n;
  s->D = params->dim;
  s->dn = s->n * (size_t) s->D;
  s->T = params->time_points;
  s->dt = 1.0 / (s->T - 1);
  s->k = 1.0 / (2.0 * params->sigma * params->sigma);
  s->c = -1.0 / (params->sigma * params->sigma);
  s->es = params->precision == GR_SHOOT_FLOAT32 ? sizeof (float) : sizeof (double);

  bool ok = true;
  s->tgt = xalloc (sizeof (double) * s->dn, &ok);
  if (!ok) {
    gr_shoot_free (s);
    *status = GR_ERR_NOMEM;
    gr_set_err (errbuf, errlen, "out of memory");
    return NULL;
  }
#if GR_HAVE_CUDA
  if (use == GR_BACKEND_CUDA) {
    s->cuda = gr_shoot_cuda_new (params, cuda_device < 0 ? 0 : cuda_device, s->desc,
        sizeof s->desc, errbuf, errlen);
    if (s->cuda)
      return s;
    if (backend != GR_BACKEND_AUTO) {
      gr_shoot_free (s);
      *status = GR_ERR_CUDA;
      return NULL;
    }
    /* auto means "the best that works" (as nmi_dense, the descriptors and the
     * matcher): the CPU engine below; the reason stays in errbuf */
    s->backend = GR_BACKEND_CPU;
  }
#else
  (void) cuda_device;
#endif
  if (!alloc_trajectory (s) || !alloc_cpu_work (s)) {
    gr_shoot_free (s);
    *status = GR_ERR_NOMEM;
    gr_set_err (errbuf, errlen, "out of memory for %zu landmarks x %d time points",
        params->n, params->time_points);
    return NULL;
  }
  snprintf (s->desc, sizeof s->desc, "CPU, %d OpenMP threads", nthreads (s));
  return s;
}

void
gr_shoot_free (GrShoot *s)
{
  if (!s)
    return;
#if GR_HAVE_CUDA
  gr_shoot_cuda_free (s->cuda);
#endif
  if (s->xqR != s->xq)
    free (s->xqR);
  if (s->xpR != s->xp)
    free (s->xpR);
  if (s->aR != s->a)
    free (s->aR);
  if (s->bR != s->b)
    free (s->bR);
  if (s->waR != s->wa)
    free (s->waR);
  if (s->wbR != s->wb)
    free (s->wbR);
  free (s->xq);
  free (s->xp);
  free (s->yqR);
  free (s->ypR);
  free (s->q1pm);
  free (s->gq1pm);
  double *d[] = { s->tgt, s->hp, s->hq, s->k1q, s->k1p, s->hp0, s->hq0, s->tmpq, s->tmpp,
    s->a,
    s->b, s->ra, s->rb, s->mua, s->mub, s->wa, s->wb };
  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
    free (d[i]);
  free (s);
}

GrBackend
gr_shoot_backend (const GrShoot *s)
{
  return s->backend;
}

const GrShootParams *
gr_shoot_params (const GrShoot *s)
{
  return &s->p;
}

const char *
gr_shoot_device_description (const GrShoot *s)
{
  return s->desc;
}

void
gr_shoot_set_threads (GrShoot *s, int threads)
{
  s->threads = threads > 0 ? threads : 0;
  if (s->backend == GR_BACKEND_CPU)
    snprintf (s->desc, sizeof s->desc, "CPU, %d OpenMP threads", nthreads (s));
}

/* point-major -> SoA */
static void
to_soa (const double *pm, double *soa, size_t n, int D)
{
  for (size_t i = 0; i < n; i++)
    for (int d = 0; d < D; d++)
      soa[d * n + i] = pm[i * D + d];
}

static void
from_soa (const double *soa, double *pm, size_t n, int D)
{
  for (size_t i = 0; i < n; i++)
    for (int d = 0; d < D; d++)
      pm[i * D + d] = soa[d * n + i];
}

/* The pair copy of count doubles (a no-op in float64 mode when dst == src). */
static void
to_R (const GrShoot *s, void *dst, const double *src, size_t count)
{
  if (s->p.precision == GR_SHOOT_FLOAT32) {
    float *f = dst;
    for (size_t i = 0; i < count; i++)
      f[i] = (float) src[i];
  } else if (dst != (const void *) src) {
    memcpy (dst, src, sizeof (double) * count);
  }
}

static void *
rslot (const GrShoot *s, void *base, size_t slot)
{
  return (char *) base + s->es * slot * s->dn;
}

GrStatus
gr_shoot_set_template (GrShoot *s, const double *q0, char *errbuf, size_t errlen)
{
  size_t bad;
  if (!s || !q0) {
    gr_set_err (errbuf, errlen, "no template");
    return GR_ERR_INVALID;
  }
  if (!gr_shoot_all_finite (q0, s->dn, &bad)) {
    gr_set_err (errbuf, errlen, "template point %zu has a non-finite coordinate", bad / s->D);
    return GR_ERR_INVALID;
  }
  s->traj_valid = false;
#if GR_HAVE_CUDA
  if (s->cuda) {
    GrStatus st = gr_shoot_cuda_set_points (s->cuda, q0, NULL, errbuf, errlen);
    if (st == GR_OK)
      s->has_template = true;
    return st;
  }
#endif
  to_soa (q0, s->xq, s->n, s->D);
  to_R (s, s->xqR, s->xq, s->dn);
  s->has_template = true;
  return GR_OK;
}

GrStatus
gr_shoot_set_data_term (GrShoot *s, GrShootDataTerm term, void *user, char *errbuf,
    size_t errlen)
{
  if (!s) {
    gr_set_err (errbuf, errlen, "no engine");
    return GR_ERR_INVALID;
  }
  if (term && s->backend != GR_BACKEND_CPU) {
    gr_set_err (errbuf, errlen, "data terms run on the CPU backend only");
    return GR_ERR_INVALID;
  }
  if (term && !s->q1pm) {
    s->q1pm = malloc (sizeof (double) * s->dn);
    s->gq1pm = malloc (sizeof (double) * s->dn);
    if (!s->q1pm || !s->gq1pm) {
      gr_set_err (errbuf, errlen, "out of memory");
      return GR_ERR_NOMEM;
    }
  }
  s->term = term;
  s->term_user = user;
  s->traj_valid = false;
  return GR_OK;
}

/* The CPU side of gr_shoot_set_varifold: the distance of the shot template (its
 * cells) to the varifold's target. */
static GrStatus
varifold_term (void *user, const double *q1, double *mismatch, double *grad_q1,
    char *errbuf, size_t errlen)
{
  GrShoot *s = user;
  return gr_varifold_distance (s->vf, q1, s->n, s->vf_cells, s->vf_ncells, mismatch,
      grad_q1, errbuf, errlen);
}

GrStatus
gr_shoot_set_varifold (GrShoot *s, GrVarifold *v, const uint32_t *cells, size_t ncells,
    char *errbuf, size_t errlen)
{
  if (!s) {
    gr_set_err (errbuf, errlen, "no engine");
    return GR_ERR_INVALID;
  }
  /* off with the previous term first, on either backend */
#if GR_HAVE_CUDA
  if (s->cuda && s->dev_term) {
    s->dev_term = false;
    GrStatus st = gr_shoot_cuda_set_term (s->cuda, NULL, NULL, errbuf, errlen);
    if (st != GR_OK)
      return st;
  }
#endif
  if (s->vf && s->backend == GR_BACKEND_CPU)
    gr_shoot_set_data_term (s, NULL, NULL, NULL, 0);
  s->vf = NULL;
  s->vf_cells = NULL;
  s->vf_ncells = 0;
  s->traj_valid = false;
  if (!v)
    return GR_OK;
#if GR_HAVE_CUDA
  if (s->cuda) {
    GrStatus st;
    GrVarifoldCuda *vc = gr_varifold_bind_device (v, s->n, cells, ncells, &st, errbuf,
        errlen);
    if (!vc)
      return st == GR_OK ? GR_ERR_INVALID : st;
    if (gr_varifold_cuda_device (vc) != gr_shoot_cuda_device (s->cuda)) {
      gr_set_err (errbuf, errlen, "the varifold runs on CUDA device %d, the shooting on "
          "%d", gr_varifold_cuda_device (vc), gr_shoot_cuda_device (s->cuda));
      return GR_ERR_INVALID;
    }
    st = gr_shoot_cuda_set_term (s->cuda, gr_varifold_cuda_enqueue_term, vc, errbuf,
        errlen);
    if (st != GR_OK)
      return st;
    s->vf = v;
    s->dev_term = true;
    return GR_OK;
  }
#endif
  s->vf = v;
  s->vf_cells = cells;
  s->vf_ncells = ncells;
  return gr_shoot_set_data_term (s, varifold_term, s, errbuf, errlen);
}

GrStatus
gr_shoot_set_target (GrShoot *s, const double *target, char *errbuf, size_t errlen)
{
  size_t bad;
  if (!s || !target) {
    gr_set_err (errbuf, errlen, "no target");
    return GR_ERR_INVALID;
  }
  if (!gr_shoot_all_finite (target, s->dn, &bad)) {
    gr_set_err (errbuf, errlen, "target point %zu has a non-finite coordinate", bad / s->D);
    return GR_ERR_INVALID;
  }
  s->traj_valid = false;
#if GR_HAVE_CUDA
  if (s->cuda) {
    GrStatus st = gr_shoot_cuda_set_points (s->cuda, NULL, target, errbuf, errlen);
    if (st == GR_OK)
      s->has_target = true;
    return st;
  }
#endif
  to_soa (target, s->tgt, s->n, s->D);
  s->has_target = true;
  return GR_OK;
}

/* ---- CPU evaluation ---------------------------------------------------------------- */

static void
pair_forward (const GrShoot *s, const void *q, const void *p, double *hp, double *hq)
{
  int th = nthreads (s);
  if (s->p.precision == GR_SHOOT_FLOAT32) {
    if (s->D == 3)
      pair_forward_f32_3 (s->n, q, p, s->k, s->c, hp, hq, th);
    else
      pair_forward_f32_2 (s->n, q, p, s->k, s->c, hp, hq, th);
  } else {
    if (s->D == 3)
      pair_forward_f64_3 (s->n, q, p, s->k, s->c, hp, hq, th);
    else
      pair_forward_f64_2 (s->n, q, p, s->k, s->c, hp, hq, th);
  }
}

static void
pair_vjp (const GrShoot *s, const void *q, const void *p, const void *a, const void *b,
    double *ra, double *rb)
{
  int th = nthreads (s);
  if (s->p.precision == GR_SHOOT_FLOAT32) {
    if (s->D == 3)
      pair_vjp_f32_3 (s->n, q, p, a, b, s->k, s->c, ra, rb, th);
    else
      pair_vjp_f32_2 (s->n, q, p, a, b, s->k, s->c, ra, rb, th);
  } else {
    if (s->D == 3)
      pair_vjp_f64_3 (s->n, q, p, a, b, s->k, s->c, ra, rb, th);
    else
      pair_vjp_f64_2 (s->n, q, p, a, b, s->k, s->c, ra, rb, th);
  }
}

static void
pair_velocity (const GrShoot *s, const void *q, const void *p, size_t m, const double *x,
    double *v)
{
  int th = nthreads (s);
  if (s->p.precision == GR_SHOOT_FLOAT32) {
    if (s->D == 3)
      pair_velocity_f32_3 (s->n, q, p, m, x, s->k, v, th);
    else
      pair_velocity_f32_2 (s->n, q, p, m, x, s->k, v, th);
  } else {
    if (s->D == 3)
      pair_velocity_f64_3 (s->n, q, p, m, x, s->k, v, th);
    else
      pair_velocity_f64_2 (s->n, q, p, m, x, s->k, v, th);
  }
}

/* Forward flow from p0 (point-major); returns H(q0, p0). */
static double
cpu_forward (GrShoot *s, const double *p0)
{
  const size_t dn = s->dn;
  const double dt = s->dt;
  to_soa (p0, s->xp, s->n, s->D);
  to_R (s, s->xpR, s->xp, dn);
  double energy = 0.0;
  for (int t = 0; t + 1 < s->T; t++) {
    const double *xq = s->xq + t * dn, *xp = s->xp + t * dn;
    double *nq = s->xq + (t + 1) * dn, *np = s->xp + (t + 1) * dn;
    pair_forward (s, rslot (s, s->xqR, t), rslot (s, s->xpR, t), s->hp, s->hq);
    if (t == 0) {
      memcpy (s->hp0, s->hp, sizeof (double) * dn);
      memcpy (s->hq0, s->hq, sizeof (double) * dn);
      for (size_t e = 0; e < dn; e++)
        energy += xp[e] * s->hp[e];
      energy *= 0.5;
    }
    if (s->p.integrator == GR_SHOOT_EULER) {
      for (size_t e = 0; e < dn; e++) {
        nq[e] = xq[e] + dt * s->hp[e];
        np[e] = xp[e] - dt * s->hq[e];
      }
    } else {
      const double h = 2.0 / 3.0 * dt;
      for (size_t e = 0; e < dn; e++) {
        s->k1q[e] = s->hp[e];
        s->k1p[e] = -s->hq[e];
        s->tmpq[e] = xq[e] + h * s->hp[e];
        s->tmpp[e] = xp[e] - h * s->hq[e];
      }
      void *yq = rslot (s, s->yqR, t), *yp = rslot (s, s->ypR, t);
      to_R (s, yq, s->tmpq, dn);
      to_R (s, yp, s->tmpp, dn);
      pair_forward (s, yq, yp, s->hp, s->hq);
      for (size_t e = 0; e < dn; e++) {
        nq[e] = xq[e] + dt * (0.25 * s->k1q[e] + 0.75 * s->hp[e]);
        np[e] = xp[e] + dt * (0.25 * s->k1p[e] - 0.75 * s->hq[e]);
      }
    }
    to_R (s, rslot (s, s->xqR, t + 1), nq, dn);
    to_R (s, rslot (s, s->xpR, t + 1), np, dn);
  }
  return energy;
}

/* The adjoint; grad (may be NULL) gets d loss / d p0, grad_q0 (may be NULL)
 * d loss / d q0 = the adjoint's q part at t = 0 + dH/dq (q0, p0). */
static void
cpu_backward (GrShoot *s, double *grad, double *grad_q0)
{
  const size_t dn = s->dn;
  const double dt = s->dt, lam = s->p.lambda;
  const double *qT = s->xq + (size_t) (s->T - 1) * dn;
  if (s->term)
    to_soa (s->gq1pm, s->a, s->n, s->D);
  for (size_t e = 0; e < dn; e++) {
    s->a[e] = s->term ? 0.5 * lam * s->a[e] : lam * (qT[e] - s->tgt[e]);
    s->b[e] = 0.0;
  }
  to_R (s, s->aR, s->a, dn);
  to_R (s, s->bR, s->b, dn);
  for (int t = s->T - 2; t >= 0; t--) {
    const void *xq = rslot (s, s->xqR, t), *xp = rslot (s, s->xpR, t);
    if (s->p.integrator == GR_SHOOT_EULER) {
      pair_vjp (s, xq, xp, s->aR, s->bR, s->ra, s->rb);
      for (size_t e = 0; e < dn; e++) {
        s->a[e] += dt * s->ra[e];
        s->b[e] += dt * s->rb[e];
      }
    } else {
      pair_vjp (s, rslot (s, s->yqR, t), rslot (s, s->ypR, t), s->aR, s->bR, s->ra, s->rb);
      const double h = 0.75 * dt;
      for (size_t e = 0; e < dn; e++) {
        s->mua[e] = h * s->ra[e];
        s->mub[e] = h * s->rb[e];
        s->wa[e] = 0.25 * dt * s->a[e] + 2.0 / 3.0 * dt * s->mua[e];
        s->wb[e] = 0.25 * dt * s->b[e] + 2.0 / 3.0 * dt * s->mub[e];
      }
      to_R (s, s->waR, s->wa, dn);
      to_R (s, s->wbR, s->wb, dn);
      pair_vjp (s, xq, xp, s->waR, s->wbR, s->ra, s->rb);
      for (size_t e = 0; e < dn; e++) {
        s->a[e] += s->mua[e] + s->ra[e];
        s->b[e] += s->mub[e] + s->rb[e];
      }
    }
    to_R (s, s->aR, s->a, dn);
    to_R (s, s->bR, s->b, dn);
  }
  if (grad) {
    for (size_t e = 0; e < dn; e++)
      s->tmpp[e] = s->b[e] + s->hp0[e];
    from_soa (s->tmpp, grad, s->n, s->D);
  }
  if (grad_q0) {
    for (size_t e = 0; e < dn; e++)
      s->tmpq[e] = s->a[e] + s->hq0[e];
    from_soa (s->tmpq, grad_q0, s->n, s->D);
  }
}

GrStatus
gr_shoot_loss_grad_template (GrShoot *s, const double *p0, double *grad, double *grad_q0,
    GrShootLoss *loss, char *errbuf, size_t errlen)
{
  if (!s || !p0) {
    gr_set_err (errbuf, errlen, "no momentum");
    return GR_ERR_INVALID;
  }
  if (!s->has_template || (!s->has_target && !s->term && !s->dev_term)) {
    gr_set_err (errbuf, errlen, "template or target not set");
    return GR_ERR_INVALID;
  }
  GrShootLoss l = { 0 };
#if GR_HAVE_CUDA
  if (s->cuda && grad_q0) {
    gr_set_err (errbuf, errlen, "the template gradient is computed on the CPU backend "
        "only");
    return GR_ERR_INVALID;
  }
  if (s->cuda) {
    double out[3];
    GrStatus st = gr_shoot_cuda_eval (s->cuda, p0, grad, out, errbuf, errlen);
    if (st != GR_OK)
      return st;
    l.loss = out[0];
    l.kinetic = out[1];
    l.mismatch = out[2];
    s->traj_valid = false;
    if (loss)
      *loss = l;
    return GR_OK;
  }
#endif
  l.kinetic = cpu_forward (s, p0);
  const double *qT = s->xq + (size_t) (s->T - 1) * s->dn;
  double m = 0.0;
  if (s->term) {
    from_soa (qT, s->q1pm, s->n, s->D);
    GrStatus st = s->term (s->term_user, s->q1pm, &m, grad || grad_q0 ? s->gq1pm : NULL,
        errbuf, errlen);
    if (st != GR_OK)
      return st;
  } else {
    for (size_t e = 0; e < s->dn; e++) {
      double r = qT[e] - s->tgt[e];
      m += r * r;
    }
  }
  l.mismatch = m;
  l.loss = l.kinetic + 0.5 * s->p.lambda * m;
  s->traj_valid = true;
  if (grad || grad_q0)
    cpu_backward (s, grad, grad_q0);
  if (loss)
    *loss = l;
  return GR_OK;
}

GrStatus
gr_shoot_loss_grad (GrShoot *s, const double *p0, double *grad, GrShootLoss *loss,
    char *errbuf, size_t errlen)
{
  return gr_shoot_loss_grad_template (s, p0, grad, NULL, loss, errbuf, errlen);
}

GrStatus
gr_shoot_flow (GrShoot *s, const double *p0, double *q1, double *p1, const double *extra,
    size_t n_extra, double *extra_out, char *errbuf, size_t errlen)
{
  if (!s || !p0 || (n_extra > 0 && (!extra || !extra_out))) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  if (!s->has_template) {
    gr_set_err (errbuf, errlen, "template not set");
    return GR_ERR_INVALID;
  }
  size_t bad;
  if (!gr_shoot_all_finite (p0, s->dn, &bad)) {
    gr_set_err (errbuf, errlen, "momentum %zu is not finite", bad / s->D);
    return GR_ERR_INVALID;
  }
  if (n_extra > 0 && !gr_shoot_all_finite (extra, n_extra * s->D, &bad)) {
    gr_set_err (errbuf, errlen, "extra point %zu has a non-finite coordinate", bad / s->D);
    return GR_ERR_INVALID;
  }
#if GR_HAVE_CUDA
  if (s->cuda) {
    /* the target may not be set: shoot with the template as a dummy target */
    if (!s->has_target && !s->dev_term) {
      gr_set_err (errbuf, errlen, "target not set");
      return GR_ERR_INVALID;
    }
    double out[3];
    GrStatus st = gr_shoot_cuda_eval (s->cuda, p0, NULL, out, errbuf, errlen);
    if (st != GR_OK)
      return st;
    if (!alloc_trajectory (s)) {
      gr_set_err (errbuf, errlen, "out of memory");
      return GR_ERR_NOMEM;
    }
    st = gr_shoot_cuda_trajectory (s->cuda, s->xq, s->xp,
        s->p.precision == GR_SHOOT_FLOAT32 ? s->xqR : NULL,
        s->p.precision == GR_SHOOT_FLOAT32 ? s->xpR : NULL, s->yqR, s->ypR,
        errbuf, errlen);
    if (st != GR_OK)
      return st;
  } else
#endif
  {
    cpu_forward (s, p0);
  }
  s->traj_valid = true;
  const size_t last = (size_t) (s->T - 1) * s->dn;
  if (q1)
    from_soa (s->xq + last, q1, s->n, s->D);
  if (p1)
    from_soa (s->xp + last, p1, s->n, s->D);
  if (n_extra == 0)
    return GR_OK;

  size_t me = n_extra * s->D;
  double *x = malloc (sizeof (double) * me);
  double *v1 = malloc (sizeof (double) * me);
  double *v2 = malloc (sizeof (double) * me);
  double *xm = malloc (sizeof (double) * me);
  if (!x || !v1 || !v2 || !xm) {
    free (x);
    free (v1);
    free (v2);
    free (xm);
    gr_set_err (errbuf, errlen, "out of memory");
    return GR_ERR_NOMEM;
  }
  to_soa (extra, x, n_extra, s->D);
  const double dt = s->dt;
  for (int t = 0; t + 1 < s->T; t++) {
    pair_velocity (s, rslot (s, s->xqR, t), rslot (s, s->xpR, t), n_extra, x, v1);
    if (s->p.integrator == GR_SHOOT_EULER) {
      for (size_t e = 0; e < me; e++)
        x[e] += dt * v1[e];
    } else {
      for (size_t e = 0; e < me; e++)
        xm[e] = x[e] + 2.0 / 3.0 * dt * v1[e];
      pair_velocity (s, rslot (s, s->yqR, t), rslot (s, s->ypR, t), n_extra, xm, v2);
      for (size_t e = 0; e < me; e++)
        x[e] += dt * (0.25 * v1[e] + 0.75 * v2[e]);
    }
  }
  from_soa (x, extra_out, n_extra, s->D);
  free (x);
  free (v1);
  free (v2);
  free (xm);
  return GR_OK;
}

/* ---- fit ----------------------------------------------------------------------- */

typedef struct {
  GrShoot *s;
  GrShootProgress progress;
  void *user;
  GrStatus status;
  char *errbuf;
  size_t errlen;
} FitCtx;

static double
fit_eval (void *user, const double *x, double *g, int n, int *abort_run)
{
  FitCtx *f = user;
  GrShootLoss l;
  GrStatus st = gr_shoot_loss_grad (f->s, x, g, &l, f->errbuf, f->errlen);
  if (st != GR_OK) {
    f->status = st;
    *abort_run = 1;
    return NAN;
  }
  return l.loss;
}

static int
fit_progress (void *user, const double *x, const double *g, double fx, double gnorm,
    double step, int n, int iteration, int evaluations)
{
  FitCtx *f = user;
  if (f->progress)
    return f->progress (f->user, iteration, evaluations, fx, gnorm);
  return 0;
}

GrStatus
gr_shoot_fit (GrShoot *s, double *p0, const GrLbfgsParams *lbfgs, GrShootProgress progress,
    void *user, GrShootFitResult *result, char *errbuf, size_t errlen)
{
  GrShootFitResult dummy;
  if (!result)
    result = &dummy;
  memset (result, 0, sizeof *result);
  if (!s || !p0) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  if (s->dn > (size_t) INT32_MAX) {
    gr_set_err (errbuf, errlen, "too many unknowns");
    return GR_ERR_INVALID;
  }
  size_t bad;
  if (!gr_shoot_all_finite (p0, s->dn, &bad)) {
    gr_set_err (errbuf, errlen, "initial momentum %zu is not finite", bad / s->D);
    return GR_ERR_INVALID;
  }
  double t0 = gr_shoot_now_s ();
  GrShootLoss l0;
  GrStatus st = gr_shoot_loss_grad (s, p0, NULL, &l0, errbuf, errlen);
  if (st != GR_OK)
    return st;
  FitCtx ctx = { s, progress, user, GR_OK, errbuf, errlen };
  GrLbfgsInfo info;
  GrLbfgsResult r = gr_lbfgs_minimize ((int) s->dn, p0, NULL, fit_eval, fit_progress,
      &ctx, lbfgs, &info);
  if (ctx.status != GR_OK)
    return ctx.status;
  if (r == GR_LBFGS_NOMEM) {
    gr_set_err (errbuf, errlen, "out of memory");
    return GR_ERR_NOMEM;
  }
  if (r == GR_LBFGS_INVALID) {
    gr_set_err (errbuf, errlen, "invalid L-BFGS parameters");
    return GR_ERR_INVALID;
  }
  GrShootLoss l;
  st = gr_shoot_loss_grad (s, p0, NULL, &l, errbuf, errlen);
  if (st != GR_OK)
    return st;
  result->result = r;
  result->iterations = info.iterations;
  result->evaluations = info.evaluations;
  result->loss = l.loss;
  result->kinetic = l.kinetic;
  result->mismatch = l.mismatch;
  result->loss0 = l0.loss;
  result->mismatch0 = l0.mismatch;
  result->gnorm = info.gnorm;
  result->gnorm0 = info.gnorm0;
  result->seconds = gr_shoot_now_s () - t0;
  if (r == GR_LBFGS_EVALUATION_ERROR) {
    gr_set_err (errbuf, errlen, "the loss is not finite at the starting momentum");
    return GR_ERR_INVALID;
  }
  return GR_OK;
}
