/* Varifold / currents / point-cloud kernel distances with exact gradients (see
 * varifold.h).  The pair sums are in varifold_cpu_impl.h; here the cell features
 * (centres and vectors) and the chain rule back to the vertices.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "varifold.h"
#if GR_HAVE_CUDA
#include "varifold_cuda.h"
#endif

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#define R float
#define EXPNEG(x) expf (x)
#define SFX(x) x##_f32
#include "varifold_cpu_impl.h"
#undef R
#undef EXPNEG
#undef SFX
#define R double
#define EXPNEG(x) exp (x)
#define SFX(x) x##_f64
#include "varifold_cpu_impl.h"
#undef R
#undef EXPNEG
#undef SFX

/* The features of one shape: F cells, centres c[D][F] and vectors n[D][F] (float64),
 * and their pair copies (float32 in float32 mode). */
typedef struct {
  size_t F;
  double *c, *n;
  void *cR, *nR;
} Features;

struct GrVarifold {
  GrVarifoldParams p;
  int kind;                     /* 0 points, 1 oriented, 2 unoriented */
  Features tgt;
  double tt;                    /* <T, T> */
  GrBackend backend;            /* where the pair sums run: CPU or CUDA */
#if GR_HAVE_CUDA
  GrVarifoldCuda *cuda;         /* the target in slot 0, the source in slot 1 */
#endif
};

static void
features_clear (Features *f, bool f64)
{
  if (!f64) {
    free (f->cR);
    free (f->nR);
  }
  free (f->c);
  free (f->n);
  memset (f, 0, sizeof *f);
}

static bool
check_shape (const GrVarifoldParams *p, const double *v, size_t nv, const uint32_t *cells,
    size_t ncells, char *errbuf, size_t errlen)
{
  if (!v || nv == 0 || (p->cell_size > 1 && (!cells || ncells == 0))) {
    gr_set_err (errbuf, errlen, "empty shape");
    return false;
  }
  for (size_t i = 0; i < nv * (size_t) p->dim; i++)
    if (!isfinite (v[i])) {
      gr_set_err (errbuf, errlen, "vertex %zu has a non-finite coordinate", i / p->dim);
      return false;
    }
  if (p->cell_size > 1)
    for (size_t i = 0; i < ncells * (size_t) p->cell_size; i++)
      if (cells[i] >= nv) {
        gr_set_err (errbuf, errlen, "cell %zu refers to vertex %u of %zu", i / p->cell_size,
            cells[i], nv);
        return false;
      }
  return true;
}

/* Centres and vectors of the cells (points: every vertex a cell, no vector). */
static bool
features_make (const GrVarifoldParams *p, const double *v, size_t nv,
    const uint32_t *cells, size_t ncells, Features *f)
{
  const int D = p->dim, k = p->cell_size;
  const size_t F = k == 1 ? nv : ncells;
  memset (f, 0, sizeof *f);
  f->F = F;
  f->c = calloc ((size_t) D * F, sizeof (double));
  f->n = calloc ((size_t) D * F, sizeof (double));
  if (!p->float64) {
    f->cR = malloc (sizeof (float) * D * F);
    f->nR = malloc (sizeof (float) * D * F);
  } else {
    f->cR = f->c;
    f->nR = f->n;
  }
  if (!f->c || !f->n || !f->cR || !f->nR)
    return false;
  for (size_t i = 0; i < F; i++) {
    if (k == 1) {
      for (int d = 0; d < D; d++)
        f->c[d * F + i] = v[i * D + d];
      continue;
    }
    const double *a = v + (size_t) cells[i * k] * D, *b = v + (size_t) cells[i * k + 1] * D;
    if (k == 2) {
      for (int d = 0; d < D; d++) {
        f->c[d * F + i] = 0.5 * (a[d] + b[d]);
        f->n[d * F + i] = b[d] - a[d];
      }
    } else {
      const double *c = v + (size_t) cells[i * k + 2] * D;
      double e1[3], e2[3];
      for (int d = 0; d < 3; d++) {
        f->c[d * F + i] = (a[d] + b[d] + c[d]) / 3.0;
        e1[d] = b[d] - a[d];
        e2[d] = c[d] - a[d];
      }
      f->n[i] = 0.5 * (e1[1] * e2[2] - e1[2] * e2[1]);
      f->n[F + i] = 0.5 * (e1[2] * e2[0] - e1[0] * e2[2]);
      f->n[2 * F + i] = 0.5 * (e1[0] * e2[1] - e1[1] * e2[0]);
    }
  }
  if (!p->float64)
    for (size_t i = 0; i < (size_t) D * F; i++) {
      ((float *) f->cR)[i] = (float) f->c[i];
      ((float *) f->nR)[i] = (float) f->n[i];
    }
  return true;
}

static int
nthreads (const GrVarifold *v)
{
  return v->p.threads > 0 ? v->p.threads : omp_get_max_threads ();
}

/* The pair sums of shape a against shape b (the target, or the source just made);
 * on CUDA the shapes are the device's copies (slot 0 the target, 1 the source). */
static GrStatus
rows (const GrVarifold *v, const Features *a, const Features *b, double *row, double *gc,
    double *gn, char *errbuf, size_t errlen)
{
  const double inv_s2 = 1.0 / (v->p.sigma * v->p.sigma);
#if GR_HAVE_CUDA
  if (v->cuda)
    return gr_varifold_cuda_rows (v->cuda, a == &v->tgt ? 0 : 1, b == &v->tgt ? 0 : 1,
        row, gc, gn, errbuf, errlen);
#else
  (void) errbuf;
  (void) errlen;
#endif
  if (v->p.float64)
    vf_rows_f64 (a->F, a->cR, a->nR, b->F, b->cR, b->nR, v->p.dim, v->kind, inv_s2, row,
        gc, gn, nthreads (v));
  else
    vf_rows_f32 (a->F, a->cR, a->nR, b->F, b->cR, b->nR, v->p.dim, v->kind, inv_s2, row,
        gc, gn, nthreads (v));
  return GR_OK;
}

static double
sum (const double *x, size_t n)
{
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += x[i];
  return s;
}

GrVarifold *
gr_varifold_new (const GrVarifoldParams *params, const double *vertices, size_t nvertices,
    const uint32_t *cells, size_t ncells, char *errbuf, size_t errlen)
{
  return gr_varifold_new_backend (params, GR_BACKEND_CPU, -1, vertices, nvertices, cells,
      ncells, NULL, errbuf, errlen);
}

GrVarifold *
gr_varifold_new_backend (const GrVarifoldParams *params, GrBackend backend,
    int cuda_device, const double *vertices, size_t nvertices, const uint32_t *cells,
    size_t ncells, GrStatus *status, char *errbuf, size_t errlen)
{
  GrStatus dummy;
  if (!status)
    status = &dummy;
  *status = GR_ERR_INVALID;
  if (!params || (params->dim != 2 && params->dim != 3) || params->cell_size < 1 ||
      params->cell_size > 3 || (params->cell_size == 3 && params->dim != 3) ||
      !(params->sigma > 0) || !isfinite (params->sigma) ||
      (params->orientation != GR_VARIFOLD_ORIENTED &&
          params->orientation != GR_VARIFOLD_UNORIENTED)) {
    gr_set_err (errbuf, errlen, "bad varifold parameters (dimension 2 or 3, cells of 1, "
        "2 or 3 vertices, triangles in 3-D only, sigma > 0)");
    return NULL;
  }
  if (!check_shape (params, vertices, nvertices, cells, ncells, errbuf, errlen))
    return NULL;
  GrVarifold *v = calloc (1, sizeof *v);
  if (!v) {
    gr_set_err (errbuf, errlen, "out of memory");
    *status = GR_ERR_NOMEM;
    return NULL;
  }
  v->p = *params;
  v->kind = params->cell_size == 1 ? 0 : params->orientation == GR_VARIFOLD_ORIENTED
      ? 1 : 2;
  v->backend = GR_BACKEND_CPU;
  double *row = NULL;
  if (!features_make (params, vertices, nvertices, cells, ncells, &v->tgt) ||
      !(row = malloc (sizeof (double) * v->tgt.F))) {
    gr_set_err (errbuf, errlen, "out of memory");
    gr_varifold_free (v);
    *status = GR_ERR_NOMEM;
    return NULL;
  }
  GrBackend use = backend;
  if (use == GR_BACKEND_AUTO)
    use = gr_cuda_device_count () > 0 ? GR_BACKEND_CUDA : GR_BACKEND_CPU;
  if (use == GR_BACKEND_CUDA && (gr_cuda_device_count () <= 0 ||
          cuda_device >= gr_cuda_device_count ())) {
    gr_set_err (errbuf, errlen, "%s", gr_cuda_compiled ()
        ? "no usable CUDA device (no GPU, no driver, or no such device)"
        : "this build has no CUDA kernels (built without nvcc)");
    free (row);
    gr_varifold_free (v);
    *status = GR_ERR_NO_CUDA;
    return NULL;
  }
#if GR_HAVE_CUDA
  if (use == GR_BACKEND_CUDA) {
    v->cuda = gr_varifold_cuda_new (cuda_device < 0 ? 0 : cuda_device, params->dim,
        v->kind, params->float64, 1.0 / (params->sigma * params->sigma), NULL, 0, errbuf,
        errlen);
    if (v->cuda && gr_varifold_cuda_set_shape (v->cuda, 0, v->tgt.F, v->tgt.cR, v->tgt.nR,
            errbuf, errlen) == GR_OK)
      v->backend = GR_BACKEND_CUDA;
    else if (backend == GR_BACKEND_CUDA) {
      free (row);
      gr_varifold_free (v);
      *status = GR_ERR_CUDA;
      return NULL;
    } else {
      /* auto: the CPU (the reason stays in errbuf) */
      gr_varifold_cuda_free (v->cuda);
      v->cuda = NULL;
    }
  }
#endif
  GrStatus st = rows (v, &v->tgt, &v->tgt, row, NULL, NULL, errbuf, errlen);
  v->tt = sum (row, v->tgt.F);
  free (row);
  if (st != GR_OK) {
    gr_varifold_free (v);
    *status = st;
    return NULL;
  }
  *status = GR_OK;
  return v;
}

GrBackend
gr_varifold_backend (const GrVarifold *v)
{
  return v->backend;
}

void
gr_varifold_free (GrVarifold *v)
{
  if (!v)
    return;
#if GR_HAVE_CUDA
  gr_varifold_cuda_free (v->cuda);
#endif
  features_clear (&v->tgt, v->p.float64);
  free (v);
}

GrStatus
gr_varifold_distance (GrVarifold *v, const double *vertices, size_t nvertices,
    const uint32_t *cells, size_t ncells, double *d2, double *grad, char *errbuf,
    size_t errlen)
{
  if (!v || !d2) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  if (!check_shape (&v->p, vertices, nvertices, cells, ncells, errbuf, errlen))
    return GR_ERR_INVALID;
  const int D = v->p.dim, k = v->p.cell_size;
  Features s;
  GrStatus st = GR_OK;
  const bool g = grad != NULL;
  double *rs = NULL, *rt = NULL, *gc = NULL, *gn = NULL, *gc2 = NULL, *gn2 = NULL;
  if (!features_make (&v->p, vertices, nvertices, cells, ncells, &s))
    goto nomem;
  const size_t F = s.F;
  rs = malloc (sizeof (double) * F);
  rt = malloc (sizeof (double) * F);
  if (!rs || !rt)
    goto nomem;
  if (g) {
    gc = malloc (sizeof (double) * D * F);
    gn = malloc (sizeof (double) * D * F);
    gc2 = malloc (sizeof (double) * D * F);
    gn2 = malloc (sizeof (double) * D * F);
    if (!gc || !gn || !gc2 || !gn2)
      goto nomem;
  }
#if GR_HAVE_CUDA
  if (v->cuda && (st = gr_varifold_cuda_set_shape (v->cuda, 1, F, s.cR, s.nR, errbuf,
              errlen)) != GR_OK)
    goto out;
#endif
  if ((st = rows (v, &s, &s, rs, gc, gn, errbuf, errlen)) != GR_OK ||
      (st = rows (v, &s, &v->tgt, rt, gc2, gn2, errbuf, errlen)) != GR_OK)
    goto out;
  *d2 = sum (rs, F) - 2.0 * sum (rt, F) + v->tt;
  if (g) {
    /* d d2 / d (c_f, n_f) = 2 (sum over S) - 2 (sum over T); then to the vertices */
    memset (grad, 0, sizeof (double) * nvertices * D);
    for (size_t f = 0; f < F; f++) {
      double Gc[3] = { 0, 0, 0 }, Gn[3] = { 0, 0, 0 };
      for (int d = 0; d < D; d++) {
        Gc[d] = 2.0 * (gc[d * F + f] - gc2[d * F + f]);
        Gn[d] = 2.0 * (gn[d * F + f] - gn2[d * F + f]);
      }
      if (k == 1) {
        for (int d = 0; d < D; d++)
          grad[f * D + d] += Gc[d];
        continue;
      }
      const uint32_t *cv = cells + f * k;
      if (k == 2) {
        for (int d = 0; d < D; d++) {
          grad[(size_t) cv[0] * D + d] += 0.5 * Gc[d] - Gn[d];
          grad[(size_t) cv[1] * D + d] += 0.5 * Gc[d] + Gn[d];
        }
        continue;
      }
      /* n = 1/2 e1 x e2: d/de1 = 1/2 e2 x Gn, d/de2 = 1/2 Gn x e1 */
      const double *a = vertices + (size_t) cv[0] * 3, *b = vertices + (size_t) cv[1] * 3,
          *c = vertices + (size_t) cv[2] * 3;
      double e1[3], e2[3], g1[3], g2[3];
      for (int d = 0; d < 3; d++) {
        e1[d] = b[d] - a[d];
        e2[d] = c[d] - a[d];
      }
      g1[0] = 0.5 * (e2[1] * Gn[2] - e2[2] * Gn[1]);
      g1[1] = 0.5 * (e2[2] * Gn[0] - e2[0] * Gn[2]);
      g1[2] = 0.5 * (e2[0] * Gn[1] - e2[1] * Gn[0]);
      g2[0] = 0.5 * (Gn[1] * e1[2] - Gn[2] * e1[1]);
      g2[1] = 0.5 * (Gn[2] * e1[0] - Gn[0] * e1[2]);
      g2[2] = 0.5 * (Gn[0] * e1[1] - Gn[1] * e1[0]);
      for (int d = 0; d < 3; d++) {
        grad[(size_t) cv[0] * 3 + d] += Gc[d] / 3.0 - g1[d] - g2[d];
        grad[(size_t) cv[1] * 3 + d] += Gc[d] / 3.0 + g1[d];
        grad[(size_t) cv[2] * 3 + d] += Gc[d] / 3.0 + g2[d];
      }
    }
  }
  goto out;

nomem:
  gr_set_err (errbuf, errlen, "out of memory");
  st = GR_ERR_NOMEM;
out:
  features_clear (&s, v->p.float64);
  free (rs);
  free (rt);
  free (gc);
  free (gn);
  free (gc2);
  free (gn2);
  return st;
}

#if GR_HAVE_CUDA
GrVarifoldCuda *
gr_varifold_bind_device (GrVarifold *v, size_t nvertices, const uint32_t *cells,
    size_t ncells, GrStatus *status, char *errbuf, size_t errlen)
{
  *status = GR_ERR_INVALID;
  if (!v || !v->cuda) {
    gr_set_err (errbuf, errlen, "the varifold term does not run on CUDA");
    return NULL;
  }
  if (nvertices == 0 || (v->p.cell_size > 1 && (!cells || ncells == 0))) {
    gr_set_err (errbuf, errlen, "empty source shape");
    return NULL;
  }
  *status = gr_varifold_cuda_set_source (v->cuda, nvertices, v->p.cell_size,
      v->p.cell_size > 1 ? cells : NULL, ncells, v->tt, errbuf, errlen);
  return *status == GR_OK ? v->cuda : NULL;
}
#endif
