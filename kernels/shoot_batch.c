/* Geodesic shooting of a population: many targets, one template (see shoot.h,
 * "populations").
 *
 * The fit keeps one reverse-communication L-BFGS (lbfgs.h) per subject and loops:
 * gather the subjects that wait for an evaluation, evaluate them together, hand each
 * its loss and gradient.  Subjects that converge early drop out of the gathering, so
 * the batch shrinks as it goes.
 *
 * CPU: one single-threaded GrShoot engine per OpenMP thread (its trajectory and work
 * arrays are per evaluation, so an engine serves any subject: the subject's target is
 * copied in before its evaluation); subjects are spread over the threads.  A row sum
 * is the same serial loop whatever the thread count, so a subject's evaluations, and
 * hence its iterates, are bit-identical to gr_shoot_fit's.
 * CUDA: shoot_cuda.cu evaluates every gathered subject in one launch per time step.
 *
 * Two halves in a pipeline: the subjects are split into two groups (CUDA: two engines,
 * each with its own stream, holding the first and the second half of the targets).
 * The fit submits one group's evaluation and, while the device works on it, collects
 * and steps the other group's L-BFGS (line search, two-loop recursion, the staging
 * copies): at 1,000 subjects of N = 1,847 those host steps are, by estimate, about
 * 10% of a round, time the device sat idle.  A subject's sequence of evaluations is
 * its own in any grouping, and its values do not depend on its slot or engine, so its
 * iterates are the same as with one group (GEOREG_SHOOT_BATCH_GROUPS=1 keeps one group
 * and one engine, for comparison).  The CPU backend runs the same loop, its "submit"
 * evaluating at once.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "shoot.h"
#include "shoot_internal.h"
#include "shoot_cuda.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>

struct GrShootBatch {
  GrShootParams p;
  size_t cap;                   /* subjects */
  size_t dn;                    /* n * dim */
  GrBackend backend;
  int threads;                  /* 0 = OpenMP default */
  char desc[256];               /* the device, the row shapes, the engines */
  bool has_template;
  bool *has_target;             /* [cap] */
  double *q0;                   /* template, point-major */
  double *targets;              /* [cap][dn], point-major (CPU) */
  GrShoot **eng;                /* CPU engines, one per thread */
  int neng;
  size_t half;                  /* subjects [0, half) form group 0, the rest group 1 */
#if GR_HAVE_CUDA
  GrShootCuda *cuda[2];         /* CUDA: one engine per group (cuda[1] NULL: one group) */
#endif
};

/* The subjects of group 0 (the rest are group 1): two groups on CUDA, where the host's
 * steps then overlap the device's work; one on the CPU, whose evaluations take the
 * host's cores anyway (halving the subjects evaluated at once would only idle some).
 * GEOREG_SHOOT_BATCH_GROUPS=1 or 2 overrides (2 on the CPU: the tests run the
 * pipeline's bookkeeping there). */
static size_t
batch_half (size_t subjects, GrBackend backend)
{
  const char *ev = getenv ("GEOREG_SHOOT_BATCH_GROUPS");
  int groups = backend == GR_BACKEND_CUDA ? 2 : 1;
  if (ev && (atoi (ev) == 1 || atoi (ev) == 2))
    groups = atoi (ev);
  if (subjects < 2 || groups == 1)
    return subjects;
  return (subjects + 1) / 2;
}

static int
batch_threads (const GrShootBatch *b)
{
  return b->threads > 0 ? b->threads : omp_get_max_threads ();
}

static void
describe_cpu (GrShootBatch *b)
{
  snprintf (b->desc, sizeof b->desc, "CPU, %d OpenMP threads over subjects",
      batch_threads (b));
}

/* One single-threaded engine per thread, made on first use (each holds a trajectory:
 * about 3 T n D 8 bytes). */
static GrStatus
ensure_engines (GrShootBatch *b, int count, char *errbuf, size_t errlen)
{
  if (count <= b->neng)
    return GR_OK;
  GrShoot **e = realloc (b->eng, sizeof *e * (size_t) count);
  if (!e) {
    gr_set_err (errbuf, errlen, "out of memory");
    return GR_ERR_NOMEM;
  }
  b->eng = e;
  for (int i = b->neng; i < count; i++) {
    GrStatus st;
    e[i] = gr_shoot_new (&b->p, GR_BACKEND_CPU, -1, &st, errbuf, errlen);
    if (!e[i])
      return st;
    b->neng = i + 1;
    gr_shoot_set_threads (e[i], 1);
    if (b->has_template && (st = gr_shoot_set_template (e[i], b->q0, errbuf, errlen))
        != GR_OK)
      return st;
  }
  return GR_OK;
}

GrShootBatch *
gr_shoot_batch_new (const GrShootParams *params, size_t subjects, GrBackend backend,
    int cuda_device, GrStatus *status, char *errbuf, size_t errlen)
{
  GrStatus dummy;
  if (!status)
    status = &dummy;
  *status = GR_OK;
  if (subjects < 1 || subjects > 65535) {
    *status = GR_ERR_INVALID;
    gr_set_err (errbuf, errlen, "%zu subjects: 1 .. 65535 per batch", subjects);
    return NULL;
  }
  /* validates the parameters and resolves the backend the same way as one subject */
  GrShoot *probe = gr_shoot_new (params, GR_BACKEND_CPU, -1, status, errbuf, errlen);
  if (!probe)
    return NULL;
  GrShootBatch *b = calloc (1, sizeof *b);
  if (!b) {
    gr_shoot_free (probe);
    *status = GR_ERR_NOMEM;
    return NULL;
  }
  b->p = *params;
  b->cap = subjects;
  b->dn = params->n * (size_t) params->dim;
  b->has_target = calloc (subjects, sizeof (bool));
  b->q0 = malloc (sizeof (double) * b->dn);
  if (!b->has_target || !b->q0) {
    gr_shoot_free (probe);
    gr_shoot_batch_free (b);
    *status = GR_ERR_NOMEM;
    gr_set_err (errbuf, errlen, "out of memory");
    return NULL;
  }
  GrBackend use = backend;
  if (use == GR_BACKEND_AUTO)
    use = gr_cuda_device_count () > 0 ? GR_BACKEND_CUDA : GR_BACKEND_CPU;
  if (use == GR_BACKEND_CUDA && (gr_cuda_device_count () <= 0 ||
          cuda_device >= gr_cuda_device_count ())) {
    gr_shoot_free (probe);
    gr_shoot_batch_free (b);
    *status = GR_ERR_NO_CUDA;
    gr_set_err (errbuf, errlen, "%s", gr_cuda_compiled ()
        ? "no usable CUDA device (no GPU, no driver, or no such device)"
        : "this build has no CUDA kernels (built without nvcc)");
    return NULL;
  }
  b->backend = use;
  b->half = batch_half (subjects, use);
#if GR_HAVE_CUDA
  if (use == GR_BACKEND_CUDA) {
    const int dev = cuda_device < 0 ? 0 : cuda_device;
    b->cuda[0] = gr_shoot_cuda_new_population (params, b->half, dev, b->desc,
        sizeof b->desc, errbuf, errlen);
    if (b->cuda[0] && b->half < subjects) {
      b->cuda[1] = gr_shoot_cuda_new_population (params, subjects - b->half, dev, NULL,
          0, errbuf, errlen);
      if (!b->cuda[1]) {
        gr_shoot_cuda_free (b->cuda[0]);
        b->cuda[0] = NULL;
      } else {
        snprintf (b->desc + strlen (b->desc), sizeof b->desc - strlen (b->desc),
            "; 2 engines of %zu + %zu subjects, pipelined", b->half, subjects - b->half);
      }
    }
    if (b->cuda[0]) {
      gr_shoot_free (probe);
      return b;
    }
    if (backend != GR_BACKEND_AUTO) {
      gr_shoot_free (probe);
      gr_shoot_batch_free (b);
      *status = GR_ERR_CUDA;
      return NULL;
    }
    /* auto: the CPU, the reason left in errbuf (as gr_shoot_new) */
    b->backend = GR_BACKEND_CPU;
    b->half = batch_half (subjects, GR_BACKEND_CPU);
  }
#endif
  b->targets = malloc (sizeof (double) * b->dn * subjects);
  b->eng = malloc (sizeof *b->eng);
  if (!b->targets || !b->eng) {
    gr_shoot_free (probe);
    gr_shoot_batch_free (b);
    *status = GR_ERR_NOMEM;
    gr_set_err (errbuf, errlen, "out of memory for %zu targets", subjects);
    return NULL;
  }
  gr_shoot_set_threads (probe, 1);
  b->eng[0] = probe;            /* the first engine */
  b->neng = 1;
  describe_cpu (b);
  return b;
}

void
gr_shoot_batch_free (GrShootBatch *b)
{
  if (!b)
    return;
#if GR_HAVE_CUDA
  gr_shoot_cuda_free (b->cuda[0]);
  gr_shoot_cuda_free (b->cuda[1]);
#endif
  for (int i = 0; i < b->neng; i++)
    gr_shoot_free (b->eng[i]);
  free (b->eng);
  free (b->targets);
  free (b->q0);
  free (b->has_target);
  free (b);
}

GrBackend
gr_shoot_batch_backend (const GrShootBatch *b)
{
  return b->backend;
}

const char *
gr_shoot_batch_device_description (const GrShootBatch *b)
{
  return b->desc;
}

size_t
gr_shoot_batch_capacity (const GrShootBatch *b)
{
  return b->cap;
}

void
gr_shoot_batch_set_threads (GrShootBatch *b, int threads)
{
  b->threads = threads > 0 ? threads : 0;
  if (b->backend == GR_BACKEND_CPU)
    describe_cpu (b);
}

GrStatus
gr_shoot_batch_set_template (GrShootBatch *b, const double *q0, char *errbuf,
    size_t errlen)
{
  size_t bad;
  if (!b || !q0) {
    gr_set_err (errbuf, errlen, "no template");
    return GR_ERR_INVALID;
  }
  if (!gr_shoot_all_finite (q0, b->dn, &bad)) {
    gr_set_err (errbuf, errlen, "template point %zu has a non-finite coordinate",
        bad / b->p.dim);
    return GR_ERR_INVALID;
  }
  memcpy (b->q0, q0, sizeof (double) * b->dn);
#if GR_HAVE_CUDA
  if (b->cuda[0]) {
    GrStatus st = gr_shoot_cuda_set_points (b->cuda[0], q0, NULL, errbuf, errlen);
    if (st == GR_OK && b->cuda[1])
      st = gr_shoot_cuda_set_points (b->cuda[1], q0, NULL, errbuf, errlen);
    if (st == GR_OK)
      b->has_template = true;
    return st;
  }
#endif
  for (int i = 0; i < b->neng; i++) {
    GrStatus st = gr_shoot_set_template (b->eng[i], q0, errbuf, errlen);
    if (st != GR_OK)
      return st;
  }
  b->has_template = true;
  return GR_OK;
}

GrStatus
gr_shoot_batch_set_target (GrShootBatch *b, size_t subject, const double *target,
    char *errbuf, size_t errlen)
{
  size_t bad;
  if (!b || !target || subject >= b->cap) {
    gr_set_err (errbuf, errlen, "no target, or subject out of range");
    return GR_ERR_INVALID;
  }
  if (!gr_shoot_all_finite (target, b->dn, &bad)) {
    gr_set_err (errbuf, errlen, "target %zu: point %zu has a non-finite coordinate",
        subject, bad / b->p.dim);
    return GR_ERR_INVALID;
  }
#if GR_HAVE_CUDA
  if (b->cuda[0]) {
    const int e = subject >= b->half;
    GrStatus st = gr_shoot_cuda_set_subject_target (b->cuda[e], subject - e * b->half,
        target, errbuf, errlen);
    if (st == GR_OK)
      b->has_target[subject] = true;
    return st;
  }
#endif
  memcpy (b->targets + subject * b->dn, target, sizeof (double) * b->dn);
  b->has_target[subject] = true;
  return GR_OK;
}

#if GR_HAVE_CUDA
/* Subjects which[0 .. count-1] on the engines that hold them: each engine's share is
 * submitted before any is collected, so that both engines' kernels run together. */
static GrStatus
cuda_loss_grad (GrShootBatch *b, const size_t *which, size_t count,
    const double *const *p0, double *const *grad, GrShootLoss *loss, char *errbuf,
    size_t errlen)
{
  const int ne = b->cuda[1] ? 2 : 1;
  size_t *ord = malloc (sizeof *ord * count), *loc = malloc (sizeof *loc * count);
  const double **pts = malloc (sizeof *pts * count);
  double **gr = malloc (sizeof *gr * count);
  double (*out)[3] = malloc (sizeof *out * count);
  GrStatus st = GR_OK;
  if (!ord || !loc || !pts || !gr || !out) {
    gr_set_err (errbuf, errlen, "out of memory");
    st = GR_ERR_NOMEM;
    goto done;
  }
  /* ord: the subjects grouped by engine, each group in the caller's order */
  size_t beg[3] = { 0, 0, 0 }, o = 0;
  for (int e = 0; e < ne; e++) {
    beg[e] = o;
    for (size_t k = 0; k < count; k++)
      if ((int) (which[k] >= b->half) == e) {
        ord[o] = k;
        loc[o] = which[k] - (size_t) e * b->half;
        pts[o] = p0[k];
        gr[o] = grad ? grad[k] : NULL;
        o++;
      }
    beg[e + 1] = o;
  }
  int want_grad = 0;
  for (size_t k = 0; grad && k < count; k++)
    want_grad = want_grad || grad[k] != NULL;
  /* rounds of at most one capacity per engine (more only with repeated subjects) */
  size_t pos[2] = { beg[0], beg[1] };
  for (;;) {
    size_t cnt[2] = { 0, 0 };
    for (int e = 0; e < ne && st == GR_OK; e++) {
      const size_t cap = gr_shoot_cuda_capacity (b->cuda[e]);
      cnt[e] = beg[e + 1] - pos[e] < cap ? beg[e + 1] - pos[e] : cap;
      if (cnt[e])
        st = gr_shoot_cuda_submit (b->cuda[e], loc + pos[e], cnt[e], pts + pos[e],
            want_grad, errbuf, errlen);
      if (st != GR_OK)
        cnt[e] = 0;
    }
    for (int e = 0; e < ne; e++) {
      if (!cnt[e])
        continue;
      /* collected even after an error: the engine must not stay in flight */
      GrStatus s2 = gr_shoot_cuda_collect (b->cuda[e], gr + pos[e], out + pos[e],
          st == GR_OK ? errbuf : NULL, st == GR_OK ? errlen : 0);
      if (st == GR_OK)
        st = s2;
      pos[e] += cnt[e];
    }
    if (st != GR_OK || (cnt[0] == 0 && cnt[1] == 0))
      break;
  }
  for (o = 0; st == GR_OK && o < count; o++) {
    loss[ord[o]].loss = out[o][0];
    loss[ord[o]].kinetic = out[o][1];
    loss[ord[o]].mismatch = out[o][2];
  }
done:
  free (ord);
  free (loc);
  free (pts);
  free (gr);
  free (out);
  return st;
}
#endif

GrStatus
gr_shoot_batch_loss_grad (GrShootBatch *b, const size_t *which, size_t count,
    const double *const *p0, double *const *grad, GrShootLoss *loss, char *errbuf,
    size_t errlen)
{
  if (!b || (count > 0 && (!which || !p0 || !loss)) || count > b->cap) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  if (!b->has_template) {
    gr_set_err (errbuf, errlen, "template not set");
    return GR_ERR_INVALID;
  }
  for (size_t k = 0; k < count; k++)
    if (which[k] >= b->cap || !b->has_target[which[k]] || !p0[k]) {
      gr_set_err (errbuf, errlen, "subject %zu: no target set, or out of range", which[k]);
      return GR_ERR_INVALID;
    }
  if (count == 0)
    return GR_OK;
#if GR_HAVE_CUDA
  if (b->cuda[0])
    return cuda_loss_grad (b, which, count, p0, grad, loss, errbuf, errlen);
#endif
  int th = batch_threads (b);
  if ((size_t) th > count)
    th = (int) count;
  GrStatus st = ensure_engines (b, th, errbuf, errlen);
  if (st != GR_OK)
    return st;
  GrStatus first = GR_OK;
  char (*errs)[160] = calloc ((size_t) th, sizeof *errs);
  if (!errs) {
    gr_set_err (errbuf, errlen, "out of memory");
    return GR_ERR_NOMEM;
  }
  GrStatus *sts = calloc ((size_t) th, sizeof *sts);
  if (!sts) {
    free (errs);
    gr_set_err (errbuf, errlen, "out of memory");
    return GR_ERR_NOMEM;
  }
#pragma omp parallel for schedule(dynamic, 1) num_threads(th)
  for (size_t k = 0; k < count; k++) {
    const int me = omp_get_thread_num ();
    GrShoot *e = b->eng[me];
    if (sts[me] != GR_OK)
      continue;
    GrStatus s = gr_shoot_set_target (e, b->targets + which[k] * b->dn, errs[me],
        sizeof errs[me]);
    if (s == GR_OK)
      s = gr_shoot_loss_grad (e, p0[k], grad ? grad[k] : NULL, &loss[k], errs[me],
          sizeof errs[me]);
    sts[me] = s;
  }
  for (int i = 0; i < th; i++)
    if (sts[i] != GR_OK && first == GR_OK) {
      first = sts[i];
      gr_set_err (errbuf, errlen, "%s", errs[i]);
    }
  free (sts);
  free (errs);
  return first;
}

/* ---- the fit --------------------------------------------------------------------- */

typedef struct {
  GrLbfgs **L;
  GrLbfgsRequest *req;
  size_t *which;
  const double **pts;
  double **grads;
  GrShootLoss *loss;
} FitWork;

static void
fit_work_free (FitWork *w, size_t count)
{
  if (w->L)
    for (size_t s = 0; s < count; s++)
      gr_lbfgs_free (w->L[s]);
  free (w->L);
  free (w->req);
  free (w->which);
  free (w->pts);
  free (w->grads);
  free (w->loss);
}

/* Evaluates group g's gathered subjects which[0 .. count-1] (all in [lo, hi) of
 * group g): CUDA enqueues them on group g's engine and returns at once; the CPU
 * evaluates them now.  group_collect then delivers the losses (and, for CUDA, the
 * gradients into grads[k]). */
static GrStatus
group_submit (GrShootBatch *b, int g, const size_t *which, size_t count,
    const double *const *pts, double *const *grads, GrShootLoss *loss, char *errbuf,
    size_t errlen)
{
#if GR_HAVE_CUDA
  if (b->cuda[0]) {
    size_t *loc = malloc (sizeof *loc * count);
    if (!loc) {
      gr_set_err (errbuf, errlen, "out of memory");
      return GR_ERR_NOMEM;
    }
    for (size_t k = 0; k < count; k++)
      loc[k] = which[k] - (size_t) g * b->half;
    GrStatus st = gr_shoot_cuda_submit (b->cuda[g], loc, count, pts, 1, errbuf, errlen);
    free (loc);
    return st;
  }
#endif
  (void) g;
  return gr_shoot_batch_loss_grad (b, which, count, pts, grads, loss, errbuf, errlen);
}

static GrStatus
group_collect (GrShootBatch *b, int g, size_t count, double *const *grads,
    GrShootLoss *loss, char *errbuf, size_t errlen)
{
#if GR_HAVE_CUDA
  if (b->cuda[0]) {
    double (*out)[3] = malloc (sizeof *out * count);
    if (!out) {
      gr_set_err (errbuf, errlen, "out of memory");
      /* still wait: the engine must not stay in flight */
      gr_shoot_cuda_collect (b->cuda[g], NULL, NULL, NULL, 0);
      return GR_ERR_NOMEM;
    }
    GrStatus st = gr_shoot_cuda_collect (b->cuda[g], grads, out, errbuf, errlen);
    for (size_t k = 0; st == GR_OK && k < count; k++) {
      loss[k].loss = out[k][0];
      loss[k].kinetic = out[k][1];
      loss[k].mismatch = out[k][2];
    }
    free (out);
    return st;
  }
#endif
  (void) b;
  (void) g;
  (void) count;
  (void) grads;
  (void) loss;
  (void) errbuf;
  (void) errlen;
  return GR_OK;
}

/* Hands each evaluated subject which[k] its loss (its gradient is in its buffer) and
 * runs its L-BFGS up to its next evaluation.  Each subject's step (line search,
 * two-loop recursion: ~4 m n D flops) is independent of the others'; with 1000
 * subjects these steps took as long as the device's evaluation when run one after
 * another, so they run in parallel.  A subject's iterates do not depend on the
 * thread that steps it. */
static void
step_group (FitWork *w, const size_t *which, size_t count, bool first,
    GrShootFitResult *results, GrShootBatchProgress progress, void *user, int threads)
{
  const size_t off = (size_t) (which - w->which);  /* the group's offset in the lists */
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads) if (count > 1)
  for (size_t k = 0; k < count; k++) {
    const size_t s = which[k];
    const GrShootLoss *l = &w->loss[off + k];
    if (first) {
      results[s].loss0 = l->loss;
      results[s].mismatch0 = l->mismatch;
    }
    GrLbfgsRequest r = gr_lbfgs_tell (w->L[s], l->loss, 0);
    while (r == GR_LBFGS_NEW_ITERATE) {
      GrLbfgsInfo info;
      gr_lbfgs_result (w->L[s], &info);
      int stop = 0;
      if (progress) {
#pragma omp critical (gr_shoot_batch_progress)
        stop = progress (user, s, info.iterations, info.evaluations, info.f, info.gnorm);
      }
      r = gr_lbfgs_resume (w->L[s], stop);
    }
    w->req[s] = r;
  }
}

GrStatus
gr_shoot_batch_fit (GrShootBatch *b, size_t count, double *p0, const GrLbfgsParams *lbfgs,
    GrShootBatchProgress progress, void *user, GrShootFitResult *results, char *errbuf,
    size_t errlen)
{
  if (!b || !p0 || !results || count < 1 || count > b->cap) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  if (b->dn > (size_t) INT32_MAX) {
    gr_set_err (errbuf, errlen, "too many unknowns");
    return GR_ERR_INVALID;
  }
  memset (results, 0, sizeof *results * count);
  size_t bad;
  if (!gr_shoot_all_finite (p0, b->dn * count, &bad)) {
    gr_set_err (errbuf, errlen, "subject %zu: initial momentum %zu is not finite",
        bad / b->dn, (bad % b->dn) / b->p.dim);
    return GR_ERR_INVALID;
  }
  const double t0 = gr_shoot_now_s ();
  const int n = (int) b->dn;
  FitWork w = { 0 };
  w.L = calloc (count, sizeof *w.L);
  w.req = calloc (count, sizeof *w.req);
  w.which = calloc (count, sizeof *w.which);
  w.pts = calloc (count, sizeof *w.pts);
  w.grads = calloc (count, sizeof *w.grads);
  w.loss = calloc (count, sizeof *w.loss);
  if (!w.L || !w.req || !w.which || !w.pts || !w.grads || !w.loss) {
    fit_work_free (&w, count);
    gr_set_err (errbuf, errlen, "out of memory");
    return GR_ERR_NOMEM;
  }
  for (size_t s = 0; s < count; s++) {
    GrLbfgsResult why;
    w.L[s] = gr_lbfgs_new (n, lbfgs, &why);
    if (!w.L[s]) {
      fit_work_free (&w, count);
      gr_set_err (errbuf, errlen, why == GR_LBFGS_NOMEM ? "out of memory"
          : "invalid L-BFGS parameters");
      return why == GR_LBFGS_NOMEM ? GR_ERR_NOMEM : GR_ERR_INVALID;
    }
    w.req[s] = gr_lbfgs_start (w.L[s], p0 + s * b->dn);
  }

  GrStatus st = GR_OK;
  /* the pipeline (see the top of this file): group g is subjects [lo[g], hi[g]);
   * its gathered lists live at offset lo[g] of the work arrays */
  const size_t lo[2] = { 0, count < b->half ? count : b->half };
  const size_t hi[2] = { lo[1], count };
  size_t active[2] = { 0, 0 };
  bool pending[2] = { false, false }, first[2] = { true, true };
  const int host_threads = batch_threads (b);
  for (;;) {
    for (int g = 0; g < 2 && st == GR_OK; g++) {
      if (pending[g]) {
        pending[g] = false;
        st = group_collect (b, g, active[g], w.grads + lo[g], w.loss + lo[g], errbuf,
            errlen);
        if (st != GR_OK)
          break;
        step_group (&w, w.which + lo[g], active[g], first[g], results, progress, user,
            host_threads);
        first[g] = false;
      }
      active[g] = 0;
      for (size_t s = lo[g]; s < hi[g]; s++)
        if (w.req[s] == GR_LBFGS_NEED_EVALUATION) {
          const size_t k = lo[g] + active[g]++;
          w.which[k] = s;
          w.pts[k] = gr_lbfgs_point (w.L[s]);
          w.grads[k] = gr_lbfgs_gradient_buffer (w.L[s]);
        }
      if (active[g]) {
        st = group_submit (b, g, w.which + lo[g], active[g], w.pts + lo[g],
            w.grads + lo[g], w.loss + lo[g], errbuf, errlen);
        pending[g] = st == GR_OK;
      }
    }
    if (st != GR_OK || (!pending[0] && !pending[1]))
      break;
  }
  for (int g = 0; g < 2; g++)
    if (pending[g])             /* an error in the other group: leave nothing in flight */
      group_collect (b, g, active[g], w.grads + lo[g], w.loss + lo[g], NULL, 0);
  if (st != GR_OK) {
    fit_work_free (&w, count);
    return st;
  }

  /* the results, and their loss split at the returned momenta (one more batch) */
  for (size_t s = 0; s < count; s++) {
    GrLbfgsInfo info;
    GrShootFitResult *r = &results[s];
    r->result = gr_lbfgs_result (w.L[s], &info);
    r->iterations = info.iterations;
    r->evaluations = info.evaluations;
    r->gnorm = info.gnorm;
    r->gnorm0 = info.gnorm0;
    if (info.iterations > 0)
      memcpy (p0 + s * b->dn, gr_lbfgs_x (w.L[s]), sizeof (double) * b->dn);
    w.which[s] = s;
    w.pts[s] = p0 + s * b->dn;
  }
  st = gr_shoot_batch_loss_grad (b, w.which, count, w.pts, NULL, w.loss, errbuf, errlen);
  const double secs = gr_shoot_now_s () - t0;
  for (size_t s = 0; st == GR_OK && s < count; s++) {
    results[s].loss = w.loss[s].loss;
    results[s].kinetic = w.loss[s].kinetic;
    results[s].mismatch = w.loss[s].mismatch;
    results[s].seconds = secs;
  }
  fit_work_free (&w, count);
  return st;
}
