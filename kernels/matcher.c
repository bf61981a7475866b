/* Per-image ratio-test matching: dispatcher, argument checks and the multi-threaded
 * CPU backend (see matcher.h for the contract).
 *
 * CPU method.  Each held image keeps, besides its row-major float32 descriptors, a
 * transposed copy (k x pn, pn = n_i rounded up to 16, padding columns zero) and the
 * squared norms (padding +inf).  A block of 4 query rows against 16 candidates is a
 * 4 x 16 tile of dot products computed with 8-wide float vectors (t = 0 .. k-1: two
 * vector loads, eight multiply-adds), D = |q|^2 + |c|^2 - 2 q.c, and a lane-wise top-2
 * (value, index) kept in vector registers; the 16 lanes are merged once per image.
 * Work is cut into tasks (64 queries x a group of images of about 128 KB) so that both
 * stay in cache; OpenMP schedules the tasks dynamically.
 *
 * Exactness.  The float32 distance of a pair is within
 *   E = (k + 8) 2^-23 (|q|^2 + max|c|^2 + 2 |q| max|c|)      (max over image i)
 * of the exact one (sequential sums, with or without FMA).  With a1 <= a2 the two
 * smallest float32 distances, the exact two smallest lie in [a1 - E, a1 + E] and
 * [a2 - E, a2 + E]; so the pair is rejected when a1 - E > r^2 (a2 + E), and the
 * float32 winner is kept when a1 + E < r^2 (a2 - E) and a1 + E < a2 - E.  Any other
 * pair is settled by the canonical float64 distances over the whole image.  The CUDA
 * backend does the same with its own bound, so both return the canonical result.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "matcher.h"
#include "matcher_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>

#define PENDING (-2)
#define QB 4                  /* query rows per micro-tile */
#define CB 16                 /* candidates per micro-tile */
#define QS 64                 /* queries per task */
#define GROUP_FLOATS 32768    /* about 128 KB of transposed descriptors per task */

/* ------------------------------------------------------------------ helpers */

static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

double
gr_matcher_exact_distance (const float *q, const float *c, int k)
{
  double acc = 0.0;
  for (int t = 0; t < k; t++) {
    const double d = (double) q[t] - (double) c[t];
    acc = fma (d, d, acc);
  }
  return acc;
}

/* A float buffer that grows at the end and shrinks at the front.  Elements have
 * logical indices that never change: element L lives at p[base + L - origin]. */
typedef struct {
  float *p;
  size_t base, len, cap;
  int64_t origin;
} FBuf;

static void
fbuf_free (FBuf *b)
{
  free (b->p);
  memset (b, 0, sizeof *b);
}

static inline float *
fbuf_at (const FBuf *b, int64_t L)
{
  return b->p + b->base + (size_t) (L - b->origin);
}

static inline int64_t
fbuf_end (const FBuf *b)
{
  return b->origin + (int64_t) b->len;
}

/* Makes room for `extra` more elements at the end: compacts in place when the live
 * part is small, else grows to twice the need.  Amortized O(1) per element. */
static bool
fbuf_reserve (FBuf *b, size_t extra)
{
  if (b->base + b->len + extra <= b->cap)
    return true;
  if (b->len + extra <= b->cap / 2) {
    memmove (b->p, b->p + b->base, b->len * sizeof (float));
    b->base = 0;
    return true;
  }
  size_t cap = 2 * (b->len + extra);
  if (cap < 1024)
    cap = 1024;
  float *p = malloc (cap * sizeof (float));
  if (!p)
    return false;
  if (b->len)
    memcpy (p, b->p + b->base, b->len * sizeof (float));
  free (b->p);
  b->p = p;
  b->base = 0;
  b->cap = cap;
  return true;
}

static void
fbuf_drop_front (FBuf *b, size_t count)
{
  if (count > b->len)
    count = b->len;
  b->base += count;
  b->len -= count;
  b->origin += (int64_t) count;
  if (b->len == 0)
    b->base = 0;
}

/* Empties the buffer and restarts the logical indices at 0 (the row-major descriptor
 * buffer's index must stay row * k when k changes). */
static void
fbuf_clear (FBuf *b)
{
  b->origin = 0;
  b->base = 0;
  b->len = 0;
}

/* ------------------------------------------------------------------ CPU database */

typedef struct {
  int64_t n;          /* descriptors */
  int64_t row;        /* logical row of the first descriptor (desc: row * k floats) */
  int64_t tpos;       /* logical float index of the transposed block (k x pn) */
  int64_t cpos;       /* logical float index of the padded squared norms (pn) */
  int pn;             /* n rounded up to CB */
  float maxn, maxn2;  /* max |c|, max |c|^2 over the image */
} CpuImg;

typedef struct {
  int k;
  FBuf desc;          /* row-major descriptors, k floats per row */
  FBuf nrm2, nrm;     /* per row: |c|^2 and |c| (float32 of the float64 value) */
  FBuf dT;            /* per image: k x pn, transposed, padding zero */
  FBuf cn2;           /* per image: pn squared norms, padding +inf */
  CpuImg *imgs;
  int nimg, cap_img;
} CpuDb;

static void
cpudb_free (CpuDb *db)
{
  fbuf_free (&db->desc);
  fbuf_free (&db->nrm2);
  fbuf_free (&db->nrm);
  fbuf_free (&db->dT);
  fbuf_free (&db->cn2);
  free (db->imgs);
  memset (db, 0, sizeof *db);
}

static void
cpudb_clear (CpuDb *db)
{
  fbuf_clear (&db->desc);
  fbuf_clear (&db->nrm2);
  fbuf_clear (&db->nrm);
  fbuf_clear (&db->dT);
  fbuf_clear (&db->cn2);
  db->nimg = 0;
}

/* Appends one image of n descriptors (n x k, row-major). */
static GrStatus
cpudb_append (CpuDb *db, const float *d, int64_t n)
{
  const int k = db->k;
  const int pn = (int) ((n + CB - 1) / CB * CB);
  if (db->nimg == db->cap_img) {
    int cap = db->cap_img ? 2 * db->cap_img : 64;
    CpuImg *im = realloc (db->imgs, sizeof (CpuImg) * cap);
    if (!im)
      return GR_ERR_NOMEM;
    db->imgs = im;
    db->cap_img = cap;
  }
  if (!fbuf_reserve (&db->desc, (size_t) n * k) || !fbuf_reserve (&db->nrm2, n) ||
      !fbuf_reserve (&db->nrm, n) || !fbuf_reserve (&db->dT, (size_t) pn * k) ||
      !fbuf_reserve (&db->cn2, pn))
    return GR_ERR_NOMEM;
  CpuImg *im = &db->imgs[db->nimg];
  im->n = n;
  im->pn = pn;
  im->row = fbuf_end (&db->nrm);
  im->tpos = fbuf_end (&db->dT);
  im->cpos = fbuf_end (&db->cn2);
  float *dst = fbuf_at (&db->desc, fbuf_end (&db->desc));
  float *n2 = fbuf_at (&db->nrm2, fbuf_end (&db->nrm2));
  float *n1 = fbuf_at (&db->nrm, fbuf_end (&db->nrm));
  float *tt = fbuf_at (&db->dT, fbuf_end (&db->dT));
  float *c2 = fbuf_at (&db->cn2, fbuf_end (&db->cn2));
  db->desc.len += (size_t) n * k;
  db->nrm2.len += n;
  db->nrm.len += n;
  db->dT.len += (size_t) pn * k;
  db->cn2.len += pn;
  db->nimg++;

  if (n)
    memcpy (dst, d, sizeof (float) * n * k);
  float mx = 0.f, mx2 = 0.f;
  for (int64_t c = 0; c < n; c++) {
    double s = 0.0;
    for (int t = 0; t < k; t++)
      s += (double) d[c * k + t] * d[c * k + t];
    n2[c] = (float) s;
    n1[c] = (float) sqrt (s);
    c2[c] = n2[c];
    if (n1[c] > mx)
      mx = n1[c];
    if (n2[c] > mx2)
      mx2 = n2[c];
  }
  for (int64_t c = n; c < pn; c++)
    c2[c] = INFINITY;
  for (int t = 0; t < k; t++) {
    float *row = tt + (size_t) t * pn;
    for (int64_t c = 0; c < n; c++)
      row[c] = d[c * k + t];
    for (int64_t c = n; c < pn; c++)
      row[c] = 0.f;
  }
  im->maxn = mx;
  im->maxn2 = mx2;
  return GR_OK;
}

/* Undoes the last cpudb_append. */
static void
cpudb_pop_last (CpuDb *db)
{
  if (db->nimg == 0)
    return;
  const CpuImg *im = &db->imgs[db->nimg - 1];
  db->desc.len -= (size_t) im->n * db->k;
  db->nrm2.len -= im->n;
  db->nrm.len -= im->n;
  db->dT.len -= (size_t) im->pn * db->k;
  db->cn2.len -= im->pn;
  db->nimg--;
}

static void
cpudb_drop (CpuDb *db, int count)
{
  if (count > db->nimg)
    count = db->nimg;
  if (count <= 0)
    return;
  int64_t rows = 0, tf = 0, cf = 0;
  for (int i = 0; i < count; i++) {
    rows += db->imgs[i].n;
    tf += (int64_t) db->imgs[i].pn * db->k;
    cf += db->imgs[i].pn;
  }
  fbuf_drop_front (&db->desc, (size_t) rows * db->k);
  fbuf_drop_front (&db->nrm2, rows);
  fbuf_drop_front (&db->nrm, rows);
  fbuf_drop_front (&db->dT, tf);
  fbuf_drop_front (&db->cn2, cf);
  memmove (db->imgs, db->imgs + count, sizeof (CpuImg) * (db->nimg - count));
  db->nimg -= count;
}

/* ------------------------------------------------------------------ CPU kernel */

typedef float v8f __attribute__ ((vector_size (32)));
typedef int32_t v8i __attribute__ ((vector_size (32)));

/* macros rather than functions: 32-byte vectors passed by value would change the
 * ABI of the baseline (SSE) build */
#define LD8(dst, ptr) memcpy (&(dst), (ptr), sizeof (v8f))
#define VSEL(m, a, b) ((v8f) ((((v8i) (a)) & (m)) | (((v8i) (b)) & ~(m))))
#define ISEL(m, a, b) (((a) & (m)) | ((b) & ~(m)))

/* Float32 top-2 of up to QB query rows against one image: a1 <= a2 (values) and i1
 * (index of a1 within the image). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__ ((target_clones ("arch=x86-64-v3", "default")))
#endif
static void
tile_top2 (const float *const *qrow, const float *qn2, const float *dT,
    const float *cn2, int pn, int k, float *a1, float *a2, int *i1)
{
  const v8f inf = { INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY,
    INFINITY, INFINITY
  };
  const v8i iota = { 0, 1, 2, 3, 4, 5, 6, 7 };
  v8f b1[QB][2], b2[QB][2];
  v8i j1[QB][2];
  for (int r = 0; r < QB; r++)
    for (int h = 0; h < 2; h++) {
      b1[r][h] = inf;
      b2[r][h] = inf;
      j1[r][h] = iota;
    }
  for (int c0 = 0; c0 < pn; c0 += CB) {
    v8f acc[QB][2];
    memset (acc, 0, sizeof acc);
    const float *col = dT + c0;
    for (int t = 0; t < k; t++) {
      v8f x0, x1;
      LD8 (x0, col + (size_t) t * pn);
      LD8 (x1, col + (size_t) t * pn + 8);
      for (int r = 0; r < QB; r++) {
        const float qv = qrow[r][t];
        acc[r][0] += qv * x0;
        acc[r][1] += qv * x1;
      }
    }
    v8f c2[2];
    LD8 (c2[0], cn2 + c0);
    LD8 (c2[1], cn2 + c0 + 8);
    const v8i idx[2] = { iota + c0, iota + (c0 + 8) };
    for (int r = 0; r < QB; r++)
      for (int h = 0; h < 2; h++) {
        const v8f d = (qn2[r] + c2[h]) - 2.0f * acc[r][h];
        const v8i lt1 = d < b1[r][h], lt2 = d < b2[r][h];
        b2[r][h] = VSEL (lt1, b1[r][h], VSEL (lt2, d, b2[r][h]));
        b1[r][h] = VSEL (lt1, d, b1[r][h]);
        j1[r][h] = ISEL (lt1, idx[h], j1[r][h]);
      }
  }
  for (int r = 0; r < QB; r++) {
    float v1 = INFINITY, v2 = INFINITY;
    int w = 0;
    for (int h = 0; h < 2; h++)
      for (int l = 0; l < 8; l++) {
        const float x1 = b1[r][h][l], x2 = b2[r][h][l];
        if (x1 < v1) {
          v2 = fminf (v1, x2);
          v1 = x1;
          w = j1[r][h][l];
        } else {
          v2 = fminf (v2, x1);
        }
      }
    a1[r] = v1;
    a2[r] = v2;
    i1[r] = w;
  }
}

/* The canonical two smallest distances of q among n rows (a full float64 scan, ties
 * to the lower index); returns the winner (-1 when n = 0). */
static int64_t
exact_top2 (const float *q, const float *rows, int64_t n, int k, double *d1o, double *d2o)
{
  double d1 = INFINITY, d2 = INFINITY;
  int64_t w = -1;
  for (int64_t c = 0; c < n; c++) {
    const double d = gr_matcher_exact_distance (q, rows + c * k, k);
    if (d < d1) {
      d2 = d1;
      d1 = d;
      w = c;
    } else if (d < d2) {
      d2 = d;
    }
  }
  *d1o = d1;
  *d2o = d2;
  return w;
}

/* The canonical result of one (query, image) pair. */
static int32_t
exact_pair (const float *q, const float *rows, int64_t n, int k, double rr)
{
  double d1, d2;
  const int64_t w = exact_top2 (q, rows, n, k, &d1, &d2);
  return (n >= 2 && d1 < rr * d2) ? (int32_t) w : -1;
}

/* Clear accept / clear reject / PENDING from the approximate top-2 and the bound. */
static inline int32_t
decide (double a1, double a2, double e, double rr, int32_t w)
{
  if (a1 - e > rr * (a2 + e))
    return -1;
  if (a1 + e < rr * (a2 - e) && a1 + e < a2 - e)
    return w;
  return PENDING;
}

typedef struct {
  const CpuDb *db;
  int img0, img1;          /* images [img0, img1) of db */
  int64_t qrow0, nq;       /* query rows: logical rows qrow0 .. qrow0 + nq - 1 of db */
  const int32_t *qimg;     /* per query: its image index in db (self: -1), or NULL */
  int32_t *out;            /* out[(i - img0) * ld + q] */
  int64_t ld;
  double rr;
  bool force;
  int threads;
} CpuJob;

static int64_t
cpu_run (const CpuJob *J)
{
  const CpuDb *db = J->db;
  const int k = db->k;
  if (J->nq <= 0 || J->img1 <= J->img0)
    return 0;
  /* image groups of about GROUP_FLOATS transposed floats */
  int *gstart = malloc (sizeof (int) * (J->img1 - J->img0 + 1));
  if (!gstart)
    return -1;
  int ng = 0;
  int64_t acc = 0;
  for (int i = J->img0; i < J->img1; i++) {
    if (i == J->img0 || acc >= GROUP_FLOATS) {
      gstart[ng++] = i;
      acc = 0;
    }
    acc += (int64_t) db->imgs[i].pn * k;
  }
  gstart[ng] = J->img1;
  const int64_t nqs = (J->nq + QS - 1) / QS;
  const int64_t ntask = nqs * ng;
  const double ek = (k + 8) * ldexp (1.0, -23) + 1e-12;
  int64_t rechecked = 0;

#pragma omp parallel for schedule (dynamic, 1) reduction (+:rechecked) \
    num_threads (J->threads > 0 ? J->threads : omp_get_max_threads ())
  for (int64_t task = 0; task < ntask; task++) {
    const int64_t qs = task / ng;
    const int g = (int) (task % ng);
    const int64_t q0 = qs * QS, q1 = q0 + QS < J->nq ? q0 + QS : J->nq;
    for (int i = gstart[g]; i < gstart[g + 1]; i++) {
      const CpuImg *im = &db->imgs[i];
      int32_t *o = J->out + (int64_t) (i - J->img0) * J->ld;
      if (im->n < 2) {
        for (int64_t q = q0; q < q1; q++)
          o[q] = -1;
        continue;
      }
      const float *dT = fbuf_at (&db->dT, im->tpos);
      const float *cn2 = fbuf_at (&db->cn2, im->cpos);
      const float *rows = fbuf_at (&db->desc, im->row * k);
      for (int64_t qb = q0; qb < q1; qb += QB) {
        const int nr = q1 - qb < QB ? (int) (q1 - qb) : QB;
        const float *qrow[QB];
        float qn2[QB], a1[QB], a2[QB];
        int w[QB];
        bool any = false;
        for (int r = 0; r < QB; r++) {
          const int64_t q = qb + (r < nr ? r : 0);
          qrow[r] = fbuf_at (&db->desc, (J->qrow0 + q) * k);
          qn2[r] = *fbuf_at (&db->nrm2, J->qrow0 + q);
          if (r < nr && !(J->qimg && J->qimg[q] == i))
            any = true;
        }
        if (any)
          tile_top2 (qrow, qn2, dT, cn2, im->pn, k, a1, a2, w);
        for (int r = 0; r < nr; r++) {
          const int64_t q = qb + r;
          if (J->qimg && J->qimg[q] == i) {
            o[q] = -1;
            continue;
          }
          int32_t res = PENDING;
          if (!J->force) {
            const double qn = *fbuf_at (&db->nrm, J->qrow0 + q);
            const double s = (double) qn2[r] + im->maxn2 + 2.0 * qn * im->maxn;
            res = decide (a1[r], a2[r], ek * s + 1e-30, J->rr, w[r]);
          }
          if (res == PENDING) {
            res = exact_pair (qrow[r], rows, im->n, k, J->rr);
            rechecked++;
          }
          o[q] = res;
        }
      }
    }
  }
  free (gstart);
  return rechecked;
}

/* ------------------------------------------------------------------ the matcher */

struct GrMatcher {
  GrBackend backend;
  int threads;
  unsigned debug;
  int k;                    /* of the held images; 0 = none yet */
  int *sizes;               /* held image sizes, oldest first */
  int held, sizes_cap;
  int64_t held_desc;
  CpuDb db;                 /* CPU backend: the held images */
  CpuDb batch;              /* CPU backend: scratch of match_all */
  int32_t *qimg;            /* scratch of match_all */
  int64_t qimg_cap;
  int32_t *view;            /* CPU backend: the results of gr_matcher_add_view */
  int64_t view_cap;
  GrMatch *sparse;          /* the results of gr_matcher_match_all_sparse */
  int64_t sparse_cap;
  int32_t *slab;            /* CPU backend: one slab of the sparse form's matrix */
  int64_t slab_cap;
#if GR_HAVE_CUDA
  GrMatcherCuda *cuda;
#endif
};

GrMatcher *
gr_matcher_new (GrBackend backend, int cuda_device, GrStatus *status,
    char *errbuf, size_t errlen)
{
  GrStatus dummy;
  if (!status)
    status = &dummy;
  *status = GR_OK;
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
  GrMatcher *mt = calloc (1, sizeof *mt);
  if (!mt) {
    *status = GR_ERR_NOMEM;
    return NULL;
  }
  mt->backend = use;
#if GR_HAVE_CUDA
  if (use == GR_BACKEND_CUDA) {
    mt->cuda = gr_matcher_cuda_new (cuda_device < 0 ? 0 : cuda_device, errbuf, errlen);
    if (!mt->cuda && backend == GR_BACKEND_AUTO) {
      mt->backend = GR_BACKEND_CPU;       /* e.g. a GPU older than compute 8.0 */
    } else if (!mt->cuda) {
      free (mt);
      *status = GR_ERR_CUDA;
      return NULL;
    }
  }
#else
  (void) cuda_device;
#endif
  return mt;
}

void
gr_matcher_free (GrMatcher *mt)
{
  if (!mt)
    return;
#if GR_HAVE_CUDA
  gr_matcher_cuda_free (mt->cuda);
#endif
  cpudb_free (&mt->db);
  cpudb_free (&mt->batch);
  free (mt->sizes);
  free (mt->qimg);
  free (mt->view);
  free (mt->sparse);
  free (mt->slab);
  free (mt);
}

GrBackend
gr_matcher_backend (const GrMatcher *mt)
{
  return mt->backend;
}

void
gr_matcher_set_threads (GrMatcher *mt, int threads)
{
  mt->threads = threads > 0 ? threads : 0;
}

void
gr_matcher_set_debug (GrMatcher *mt, unsigned flags)
{
  mt->debug = flags;
}

/* Every value finite and within the limit (parallel scan); copy (NULL: none) receives
 * the values as they are read. */
static bool
values_ok (const float *d, int64_t count, int threads, int64_t *bad, float *copy)
{
  int64_t first = -1;
#pragma omp parallel for schedule (static) \
    num_threads (threads > 0 ? threads : omp_get_max_threads ()) if (count > 65536)
  for (int64_t i = 0; i < count; i++) {
    const float v = d[i];
    if (copy)
      copy[i] = v;
    if (!(fabsf (v) <= GR_MATCHER_MAX_ABS)) {   /* NaN fails too */
#pragma omp critical (gr_matcher_bad)
      if (first < 0 || i < first)
        first = i;
    }
  }
  *bad = first;
  return first < 0;
}

static GrStatus
check_common (const GrMatcher *mt, int k, float ratio, char *errbuf, size_t errlen)
{
  if (!mt) {
    gr_set_err (errbuf, errlen, "no matcher");
    return GR_ERR_INVALID;
  }
  if (k < 1 || k > GR_MATCHER_MAX_K) {
    gr_set_err (errbuf, errlen, "descriptor length k = %d outside 1 .. %d", k,
        GR_MATCHER_MAX_K);
    return GR_ERR_INVALID;
  }
  if (mt->backend == GR_BACKEND_CUDA && k > GR_MATCHER_MAX_K_CUDA) {
    gr_set_err (errbuf, errlen, "the CUDA matcher takes k <= %d (k = %d): use the CPU "
        "backend", GR_MATCHER_MAX_K_CUDA, k);
    return GR_ERR_INVALID;
  }
  if (!(ratio > 0.0f) || !isfinite (ratio)) {
    gr_set_err (errbuf, errlen, "ratio must be a finite value > 0 (got %g)", ratio);
    return GR_ERR_INVALID;
  }
  return GR_OK;
}

/* the value checks' error: the first bad value, flat index bad */
static GrStatus
bad_value (int64_t bad, int k, char *errbuf, size_t errlen)
{
  gr_set_err (errbuf, errlen, "descriptor %lld, component %lld is not finite or exceeds "
      "%g in magnitude", (long long) (bad / k), (long long) (bad % k),
      (double) GR_MATCHER_MAX_ABS);
  return GR_ERR_INVALID;
}

GrStatus
gr_matcher_check_values (const float *desc, int64_t count, int k, int threads,
    char *errbuf, size_t errlen)
{
  if (count < 0 || k < 1 || (count > 0 && !desc)) {
    gr_set_err (errbuf, errlen, "bad descriptor count, length or pointer");
    return GR_ERR_INVALID;
  }
  int64_t bad;
  return values_ok (desc, count * k, threads, &bad, NULL) ? GR_OK :
      bad_value (bad, k, errbuf, errlen);
}

#if GR_HAVE_CUDA
/* GEOREG_MATCHER_UPLOAD=pinned (the default; =pageable: the plain upload), the CUDA batch forms: the value check copies the
 * descriptors into the engine's pinned buffer as it reads them, STAGE_PART floats at
 * a time, and each part's upload starts at once, so that the scan, the copy and the
 * transfer overlap (instead of the scan, then a pageable upload that the driver copies
 * through its own pinned buffers on one thread).  *desc becomes the pinned buffer.  No
 * pinned buffer to be had: the plain check, *desc unchanged.  n x k floats. */
#define STAGE_PART ((int64_t) 1 << 20)

static bool
upload_pinned (void)
{
  /* the default since an H200 measured it 13 ms ahead on (b)'s 128 MB; "pageable"
   * keeps the plain upload (no pinned copy of the batch held by the engine) */
  const char *v = getenv ("GEOREG_MATCHER_UPLOAD");
  return !(v && !strcmp (v, "pageable"));
}

static GrStatus
cuda_stage_checked (GrMatcher *mt, const float **desc, int64_t n, int k, char *errbuf,
    size_t errlen)
{
  const int64_t total = n * k;
  float *pin = gr_matcher_cuda_stage_begin (mt->cuda, (size_t) total);
  if (!pin)
    return gr_matcher_check_values (*desc, n, k, mt->threads, errbuf, errlen);
  for (int64_t first = 0; first < total; first += STAGE_PART) {
    const int64_t part = total - first < STAGE_PART ? total - first : STAGE_PART;
    int64_t bad;
    if (!values_ok (*desc + first, part, mt->threads, &bad, pin + first))
      return bad_value (first + bad, k, errbuf, errlen);
    const GrStatus st = gr_matcher_cuda_stage_part (mt->cuda, (size_t) first,
        (size_t) part, errbuf, errlen);
    if (st != GR_OK)
      return st;
  }
  *desc = pin;
  return GR_OK;
}
#endif

/* The batch forms' argument checks, and the values' when scan (not when they are on
 * the device, where the host cannot read them, nor when the caller checks them as it
 * stages them). */
static GrStatus
batch_check (const GrMatcher *mt, const float *desc, bool scan, int k,
    const int64_t *offsets, int m, float ratio, bool have_out, char *errbuf,
    size_t errlen)
{
  GrStatus st = check_common (mt, k, ratio, errbuf, errlen);
  if (st != GR_OK)
    return st;
  if (m < 0 || !offsets || (m > 0 && !have_out)) {
    gr_set_err (errbuf, errlen, "bad image count, offsets or output");
    return GR_ERR_INVALID;
  }
  if (offsets[0] != 0) {
    gr_set_err (errbuf, errlen, "offsets[0] must be 0");
    return GR_ERR_INVALID;
  }
  for (int i = 0; i < m; i++)
    if (offsets[i + 1] < offsets[i] || offsets[i + 1] - offsets[i] > INT32_MAX) {
      gr_set_err (errbuf, errlen, "offsets must be nondecreasing (image %d)", i);
      return GR_ERR_INVALID;
    }
  const int64_t n = offsets[m];
  if (n > 0 && !desc) {
    gr_set_err (errbuf, errlen, "no descriptors");
    return GR_ERR_INVALID;
  }
  if ((double) m * (double) n > 9.0e18 / 4) {
    gr_set_err (errbuf, errlen, "m x n too large");
    return GR_ERR_INVALID;
  }
  return scan ? gr_matcher_check_values (desc, n, k, mt->threads, errbuf, errlen) : GR_OK;
}

/* CPU backend: the batch's images into mt->batch, each query's image into mt->qimg. */
static GrStatus
cpu_batch_load (GrMatcher *mt, const float *desc, int k, const int64_t *offsets, int m,
    char *errbuf, size_t errlen)
{
  CpuDb *db = &mt->batch;
  const int64_t n = offsets[m];
  cpudb_clear (db);
  db->k = k;
  if (mt->qimg_cap < n) {
    free (mt->qimg);
    mt->qimg = malloc (sizeof (int32_t) * n);
    mt->qimg_cap = mt->qimg ? n : 0;
    if (!mt->qimg)
      return GR_ERR_NOMEM;
  }
  for (int i = 0; i < m; i++) {
    if (cpudb_append (db, desc + offsets[i] * k, offsets[i + 1] - offsets[i]) != GR_OK) {
      gr_set_err (errbuf, errlen, "out of memory");
      return GR_ERR_NOMEM;
    }
    for (int64_t j = offsets[i]; j < offsets[i + 1]; j++)
      mt->qimg[j] = i;
  }
  return GR_OK;
}

GrStatus
gr_matcher_match_all (GrMatcher *mt, const float *desc, int k, const int64_t *offsets,
    int m, float ratio, int32_t *out, GrMatchStats *stats, char *errbuf, size_t errlen)
{
  const double t0 = now_ms ();
  GrStatus st = batch_check (mt, desc, true, k, offsets, m, ratio, out != NULL, errbuf,
      errlen);
  if (st != GR_OK)
    return st;
  const int64_t n = offsets[m];
  const double rr = (double) ratio * (double) ratio;
  GrMatchStats s = { 0 };
  s.pairs = (int64_t) m * n;
  if (m == 0 || n == 0)
    goto done;

#if GR_HAVE_CUDA
  if (mt->backend == GR_BACKEND_CUDA) {
    st = gr_matcher_cuda_match_all (mt->cuda, desc, k, offsets, m, rr, mt->debug, out,
        &s, errbuf, errlen);
    if (st != GR_OK)
      return st;
    goto done;
  }
#endif
  {
    st = cpu_batch_load (mt, desc, k, offsets, m, errbuf, errlen);
    if (st != GR_OK)
      return st;
    CpuDb *db = &mt->batch;
    const double t1 = now_ms ();
    CpuJob J = { db, 0, m, db->imgs[0].row, n, mt->qimg, out, n, rr,
      (mt->debug & GR_MATCHER_DEBUG_FORCE_EXACT) != 0, mt->threads
    };
    int64_t r = cpu_run (&J);
    if (r < 0) {
      gr_set_err (errbuf, errlen, "out of memory");
      return GR_ERR_NOMEM;
    }
    s.rechecked = r;
    for (int i = 0; i < m; i++)
      s.candidates += (int64_t) db->imgs[i].pn * n;
    s.kernel_ms = now_ms () - t1;
  }
done:
  s.elapsed_ms = now_ms () - t0;
  if (stats)
    *stats = s;
  return GR_OK;
}

#define SPARSE_CHUNK 4096       /* queries per compaction task */
#define CPU_SLAB_ENTRIES (1ll << 24)  /* (image, query) entries per slab: 64 MB */

/* mt->sparse holds at least `need` entries */
static bool
sparse_reserve (GrMatcher *mt, int64_t need)
{
  if (need <= mt->sparse_cap)
    return true;
  const int64_t cap = need + need / 2 + 1024;
  GrMatch *b = realloc (mt->sparse, sizeof (GrMatch) * (size_t) cap);
  if (!b)
    return false;
  mt->sparse = b;
  mt->sparse_cap = cap;
  return true;
}

/* the sparse entry of query q (batch row qrow0 + q) kept in image i with `match`: its
 * canonical d1, d2 by a full scan of the image */
static void
sparse_entry (const CpuDb *db, int64_t qrow0, int64_t q, int i, int32_t match,
    GrMatch *e)
{
  const CpuImg *im = &db->imgs[i];
  const int k = db->k;
  double d1, d2;
  exact_top2 (fbuf_at (&db->desc, (qrow0 + q) * k), fbuf_at (&db->desc, im->row * k),
      im->n, k, &d1, &d2);
  e->query = q;
  e->image = i;
  e->match = match;
  e->d1 = (float) sqrt (d1);
  e->d2 = (float) sqrt (d2);
}

/* CPU backend of the sparse form: slabs of images through cpu_run, each compacted in
 * parallel (tasks of SPARSE_CHUNK queries of one image: counted, offsets by a prefix
 * sum, then filled, so the order is the matrix's whatever the threads). */
static GrStatus
cpu_sparse (GrMatcher *mt, int row0, int row1, int64_t n, double rr, int64_t *count,
    GrMatchStats *s, char *errbuf, size_t errlen)
{
  const CpuDb *db = &mt->batch;
  const int m = row1;           /* the slabs end there */
  int64_t srows64 = CPU_SLAB_ENTRIES / n > 0 ? CPU_SLAB_ENTRIES / n : 1;
  if (mt->debug & GR_MATCHER_DEBUG_SMALL_SLAB)
    srows64 = 3;
  const int srows = srows64 < row1 - row0 ? (int) srows64 : row1 - row0;
  *count = 0;
  if (srows <= 0)
    return GR_OK;
  const int64_t chunks = (n + SPARSE_CHUNK - 1) / SPARSE_CHUNK;
  const int64_t ntask = chunks * srows;
  if (mt->slab_cap < (int64_t) srows * n) {
    free (mt->slab);
    mt->slab = malloc (sizeof (int32_t) * (size_t) srows * n);
    mt->slab_cap = mt->slab ? (int64_t) srows * n : 0;
  }
  int64_t *toff = malloc (sizeof (int64_t) * (ntask + 1));
  if (!mt->slab || !toff) {
    free (toff);
    gr_set_err (errbuf, errlen, "out of memory");
    return GR_ERR_NOMEM;
  }
  const int threads = mt->threads > 0 ? mt->threads : omp_get_max_threads ();
  const int64_t qrow0 = db->imgs[0].row;
  int64_t total = 0;
  for (int i0 = row0; i0 < m; i0 += srows) {
    const int i1 = i0 + srows < m ? i0 + srows : m;
    CpuJob J = { db, i0, i1, qrow0, n, mt->qimg, mt->slab, n, rr,
      (mt->debug & GR_MATCHER_DEBUG_FORCE_EXACT) != 0, mt->threads
    };
    const int64_t r = cpu_run (&J);
    if (r < 0) {
      free (toff);
      gr_set_err (errbuf, errlen, "out of memory");
      return GR_ERR_NOMEM;
    }
    s->rechecked += r;
    const int64_t nt = chunks * (i1 - i0);
#pragma omp parallel for schedule (static) num_threads (threads)
    for (int64_t t = 0; t < nt; t++) {
      const int32_t *o = mt->slab + (t / chunks) * n;
      const int64_t q0 = (t % chunks) * SPARSE_CHUNK;
      const int64_t q1 = q0 + SPARSE_CHUNK < n ? q0 + SPARSE_CHUNK : n;
      int64_t c = 0;
      for (int64_t q = q0; q < q1; q++)
        c += o[q] >= 0;
      toff[t + 1] = c;
    }
    toff[0] = total;
    for (int64_t t = 0; t < nt; t++)
      toff[t + 1] += toff[t];
    if (!sparse_reserve (mt, toff[nt] + 1)) {
      free (toff);
      gr_set_err (errbuf, errlen, "out of memory");
      return GR_ERR_NOMEM;
    }
#pragma omp parallel for schedule (dynamic, 1) num_threads (threads)
    for (int64_t t = 0; t < nt; t++) {
      const int i = i0 + (int) (t / chunks);
      const int32_t *o = mt->slab + (t / chunks) * n;
      const int64_t q0 = (t % chunks) * SPARSE_CHUNK;
      const int64_t q1 = q0 + SPARSE_CHUNK < n ? q0 + SPARSE_CHUNK : n;
      GrMatch *e = mt->sparse + toff[t];
      for (int64_t q = q0; q < q1; q++)
        if (o[q] >= 0)
          sparse_entry (db, qrow0, q, i, o[q], e++);
    }
    total = toff[nt];
  }
  free (toff);
  *count = total;
  return GR_OK;
}

/* The queries image i meets under the pair list: the descriptors of its listed images
 * (its own excluded when skip_self); pairs_work sums them over images [row0, row1):
 * the (query, image) pairs decided.  Times n_i, an image's share of the work (the
 * split's weight). */
static int64_t
pairs_work_row (const int64_t *offsets, const GrMatcherPairs *P, int i, bool skip_self)
{
  int64_t w = 0;
  for (int64_t e = P->start[i]; e < P->start[i + 1]; e++) {
    const int b = P->images[e];
    if (!(skip_self && b == i))
      w += offsets[b + 1] - offsets[b];
  }
  return w;
}

static int64_t
pairs_work (const int64_t *offsets, const GrMatcherPairs *P, int row0, int row1,
    bool skip_self)
{
  int64_t w = 0;
  for (int i = row0; i < row1; i++)
    w += pairs_work_row (offsets, P, i, skip_self);
  return w;
}

void
gr_matcher_split_rows_pairs (const int64_t *offsets, int m, const GrMatcherPairs *P,
    int parts, int *bounds)
{
  if (!P) {
    gr_matcher_split_rows (offsets, m, parts, bounds);
    return;
  }
  /* cumulative work; part p starts at the first image at or after p/parts of it */
  double total = 0;
  for (int i = 0; i < m; i++)
    total += (double) (offsets[i + 1] - offsets[i]) *
        (double) pairs_work_row (offsets, P, i, true);
  int i = 0;
  double acc = 0;
  bounds[0] = 0;
  for (int p = 1; p < parts; p++) {
    const double target = total * p / parts;
    while (i < m && acc < target) {
      acc += (double) (offsets[i + 1] - offsets[i]) *
          (double) pairs_work_row (offsets, P, i, true);
      i++;
    }
    bounds[p] = i;
  }
  bounds[parts] = m;
}

/* The listed pairs of images [row0, row1) as runs (matcher_cuda.h's GrMatcherRun: an
 * image against consecutive listed images' queries, never its own, in chunks of at
 * most `chunk` queries), in the matrix's order; images of fewer than 2 descriptors
 * have no run (their entries are all -1).  *cand: the candidates, padded sizes pn. */
static GrStatus
pair_runs (const int64_t *offsets, const GrMatcherPairs *P, int row0, int row1,
    int64_t chunk, int pad, GrMatcherRun **out, int64_t *nout, int64_t *cand)
{
  GrMatcherRun *run = NULL;
  int64_t nr = 0, cap = 0;
  *cand = 0;
  for (int i = row0; i < row1; i++) {
    const int64_t ni = offsets[i + 1] - offsets[i];
    if (ni < 2)
      continue;
    const int64_t pn = (ni + pad - 1) / pad * pad;
    for (int64_t e = P->start[i]; e < P->start[i + 1];) {
      const int b0 = P->images[e++];
      if (b0 == i)
        continue;
      int b1 = b0 + 1;
      while (e < P->start[i + 1] && P->images[e] == b1 && b1 != i) {
        b1++;
        e++;
      }
      for (int64_t q0 = offsets[b0]; q0 < offsets[b1]; q0 += chunk) {
        if (nr == cap) {
          cap = cap ? 2 * cap : 1024;
          GrMatcherRun *t = realloc (run, sizeof (GrMatcherRun) * (size_t) cap);
          if (!t) {
            free (run);
            return GR_ERR_NOMEM;
          }
          run = t;
        }
        const int64_t q1 = q0 + chunk < offsets[b1] ? q0 + chunk : offsets[b1];
        run[nr++] = (GrMatcherRun) { i, q0, q1 };
        *cand += pn * (q1 - q0);
      }
    }
  }
  *out = run;
  *nout = nr;
  return GR_OK;
}

/* CPU backend of the pruned sparse form: the runs of pair_runs as tasks, in batches of
 * about CPU_SLAB_ENTRIES entries (each task through cpu_run on one thread, the tasks
 * in parallel), each batch compacted as cpu_sparse does. */
static GrStatus
cpu_sparse_pairs (GrMatcher *mt, const int64_t *offsets, int row0, int row1,
    const GrMatcherPairs *P, double rr, int64_t *count, GrMatchStats *s, char *errbuf,
    size_t errlen)
{
  const CpuDb *db = &mt->batch;
  const int64_t qrow0 = db->imgs[0].row;
  const int64_t chunk = (mt->debug & GR_MATCHER_DEBUG_SMALL_SLAB) ? 7 : SPARSE_CHUNK;
  const int64_t slab = (mt->debug & GR_MATCHER_DEBUG_SMALL_SLAB) ? 2000 : CPU_SLAB_ENTRIES;
  *count = 0;
  GrMatcherRun *task = NULL;
  int64_t nt = 0;
  if (pair_runs (offsets, P, row0, row1, chunk, CB, &task, &nt, &s->candidates)
      != GR_OK) {
    gr_set_err (errbuf, errlen, "out of memory");
    return GR_ERR_NOMEM;
  }
  int64_t *toff = malloc (sizeof (int64_t) * (size_t) (nt + 1));
  int64_t *roff = malloc (sizeof (int64_t) * (size_t) (nt + 1));
  GrStatus st = toff && roff ? GR_OK : GR_ERR_NOMEM;
  const int threads = mt->threads > 0 ? mt->threads : omp_get_max_threads ();
  const bool force = (mt->debug & GR_MATCHER_DEBUG_FORCE_EXACT) != 0;
  int64_t total = 0;
  for (int64_t t0 = 0, t1; st == GR_OK && t0 < nt; t0 = t1) {
    /* a batch: tasks t0 .. t1 - 1, their results at roff[] in mt->slab */
    int64_t ent = 0;
    for (t1 = t0; t1 < nt && (t1 == t0 || ent + task[t1].q1 - task[t1].q0 <= slab); t1++) {
      roff[t1 - t0] = ent;
      ent += task[t1].q1 - task[t1].q0;
    }
    if (mt->slab_cap < ent) {
      free (mt->slab);
      mt->slab = malloc (sizeof (int32_t) * (size_t) ent);
      mt->slab_cap = mt->slab ? ent : 0;
      if (!mt->slab) {
        st = GR_ERR_NOMEM;
        break;
      }
    }
    int64_t rechecked = 0;
    bool failed = false;
#pragma omp parallel for schedule (dynamic, 1) reduction (+:rechecked) \
    num_threads (threads)
    for (int64_t t = t0; t < t1; t++) {
      const GrMatcherRun *T = &task[t];
      int32_t *o = mt->slab + roff[t - t0];
      CpuJob J = { db, T->image, T->image + 1, qrow0 + T->q0, T->q1 - T->q0, mt->qimg + T->q0,
        o, T->q1 - T->q0, rr, force, 1
      };
      const int64_t r = cpu_run (&J);
      if (r < 0) {
#pragma omp atomic write
        failed = true;
      } else {
        rechecked += r;
      }
      int64_t c = 0;
      for (int64_t q = 0; q < T->q1 - T->q0; q++)
        c += o[q] >= 0;
      toff[t - t0 + 1] = c;
    }
    if (failed) {
      st = GR_ERR_NOMEM;
      break;
    }
    s->rechecked += rechecked;
    toff[0] = total;
    for (int64_t t = 0; t < t1 - t0; t++)
      toff[t + 1] += toff[t];
    if (!sparse_reserve (mt, toff[t1 - t0] + 1)) {
      st = GR_ERR_NOMEM;
      break;
    }
#pragma omp parallel for schedule (dynamic, 1) num_threads (threads)
    for (int64_t t = t0; t < t1; t++) {
      const GrMatcherRun *T = &task[t];
      const int32_t *o = mt->slab + roff[t - t0];
      GrMatch *e = mt->sparse + toff[t - t0];
      for (int64_t q = T->q0; q < T->q1; q++)
        if (o[q - T->q0] >= 0)
          sparse_entry (db, qrow0, q, T->image, o[q - T->q0], e++);
    }
    total = toff[t1 - t0];
  }
  free (task);
  free (toff);
  free (roff);
  if (st != GR_OK) {
    gr_set_err (errbuf, errlen, "out of memory");
    return st;
  }
  *count = total;
  return GR_OK;
}

GrStatus
gr_matcher_match_all_sparse (GrMatcher *mt, const float *desc, int k,
    const int64_t *offsets, int m, float ratio, const GrMatch **matches, int64_t *count,
    GrMatchStats *stats, char *errbuf, size_t errlen)
{
  return gr_matcher_match_rows_sparse (mt, desc, k, offsets, m, 0, m, ratio, matches,
      count, stats, errbuf, errlen);
}

GrStatus
gr_matcher_match_rows_sparse (GrMatcher *mt, const float *desc, int k,
    const int64_t *offsets, int m, int row0, int row1, float ratio,
    const GrMatch **matches, int64_t *count, GrMatchStats *stats, char *errbuf,
    size_t errlen)
{
  return gr_matcher_match_rows_sparse_pairs (mt, desc, k, offsets, m, row0, row1, NULL,
      ratio, matches, count, stats, errbuf, errlen);
}

/* gr_matcher_match_rows_sparse_pairs (desc in host memory) and its _device form (desc
 * on the CUDA matcher's device: unchecked here, and handed to the CUDA backend to read
 * in place) */
static GrStatus
rows_sparse_pairs (GrMatcher *mt, const float *desc, bool on_device, int k,
    const int64_t *offsets, int m, int row0, int row1, const GrMatcherPairs *pairs,
    float ratio, const GrMatch **matches, int64_t *count, GrMatchStats *stats,
    char *errbuf, size_t errlen)
{
  const double t0 = now_ms ();
  if (on_device && mt && mt->backend != GR_BACKEND_CUDA) {
    gr_set_err (errbuf, errlen, "descriptors in device memory need the CUDA backend");
    return GR_ERR_INVALID;
  }
#if GR_HAVE_CUDA
  const bool stage = !on_device && mt && mt->backend == GR_BACKEND_CUDA &&
      upload_pinned ();
#else
  const bool stage = false;
#endif
  GrStatus st = batch_check (mt, desc, !on_device && !stage, k, offsets, m, ratio,
      matches && count, errbuf, errlen);
  if (st != GR_OK)
    return st;
  if (!matches || !count) {
    gr_set_err (errbuf, errlen, "no output pointers");
    return GR_ERR_INVALID;
  }
  if (row0 < 0 || row1 < row0 || row1 > m) {
    gr_set_err (errbuf, errlen, "bad image range [%d, %d) of %d images", row0, row1, m);
    return GR_ERR_INVALID;
  }
  if (pairs && (st = gr_matcher_pairs_check (pairs, m, errbuf, errlen)) != GR_OK)
    return st;
  const int64_t n = offsets[m];
  const double rr = (double) ratio * (double) ratio;
  GrMatchStats s = { 0 };
  s.pairs = pairs ? pairs_work (offsets, pairs, row0, row1, false) :
      (int64_t) (row1 - row0) * n;
  *count = 0;
  *matches = NULL;
  int64_t total = 0;
  if (m == 0 || n == 0)
    goto done;
#if GR_HAVE_CUDA
  if (mt->backend == GR_BACKEND_CUDA) {
    GrMatcherRun *runs = NULL;
    int64_t nruns = 0, cand = 0;
    /* one launch per run: a run of at most the re-check queue's size never overflows
     * it (one image, at most one queued pair per query) */
    if (pairs && pair_runs (offsets, pairs, row0, row1, (mt->debug &
                GR_MATCHER_DEBUG_SMALL_LIST) ? 16 : GR_MATCHER_CUDA_RUN, 64, &runs,
            &nruns, &cand) != GR_OK) {
      gr_set_err (errbuf, errlen, "out of memory");
      return GR_ERR_NOMEM;
    }
    if (stage && (st = cuda_stage_checked (mt, &desc, n, k, errbuf, errlen)) != GR_OK) {
      free (runs);
      return st;
    }
    const GrMatch *view = NULL;
    st = gr_matcher_cuda_match_all_sparse (mt->cuda, desc, on_device, k, offsets, m,
        row0, row1, runs, pairs ? nruns : -1, rr, mt->debug, &mt->sparse,
        &mt->sparse_cap, &view, &total, &s, errbuf, errlen);
    free (runs);
    if (st != GR_OK)
      return st;
    if (pairs)
      s.candidates = cand;
    *count = total;
    *matches = view;
    goto out;
  }
#endif
  {
    st = cpu_batch_load (mt, desc, k, offsets, m, errbuf, errlen);
    if (st != GR_OK)
      return st;
    const double t1 = now_ms ();
    st = pairs ? cpu_sparse_pairs (mt, offsets, row0, row1, pairs, rr, &total, &s, errbuf,
        errlen) : cpu_sparse (mt, row0, row1, n, rr, &total, &s, errbuf, errlen);
    if (st != GR_OK)
      return st;
    if (!pairs)
      for (int i = row0; i < row1; i++)
        s.candidates += (int64_t) mt->batch.imgs[i].pn * n;
    s.kernel_ms = now_ms () - t1;
  }
done:
  *matches = mt->sparse;
  *count = total;
#if GR_HAVE_CUDA
out:
#endif
  s.elapsed_ms = now_ms () - t0;
  if (stats)
    *stats = s;
  return GR_OK;
}

GrStatus
gr_matcher_match_rows_sparse_pairs (GrMatcher *mt, const float *desc, int k,
    const int64_t *offsets, int m, int row0, int row1, const GrMatcherPairs *pairs,
    float ratio, const GrMatch **matches, int64_t *count, GrMatchStats *stats,
    char *errbuf, size_t errlen)
{
  return rows_sparse_pairs (mt, desc, false, k, offsets, m, row0, row1, pairs, ratio,
      matches, count, stats, errbuf, errlen);
}

GrStatus
gr_matcher_match_rows_sparse_pairs_device (GrMatcher *mt, const float *d_desc, int k,
    const int64_t *offsets, int m, int row0, int row1, const GrMatcherPairs *pairs,
    float ratio, const GrMatch **matches, int64_t *count, GrMatchStats *stats,
    char *errbuf, size_t errlen)
{
  return rows_sparse_pairs (mt, d_desc, true, k, offsets, m, row0, row1, pairs, ratio,
      matches, count, stats, errbuf, errlen);
}

void
gr_matcher_split_rows (const int64_t *offsets, int m, int parts, int *bounds)
{
  const int64_t n = offsets[m];
  int i = 0;
  bounds[0] = 0;
  for (int p = 1; p < parts; p++) {
    /* the first image starting at or after p/parts of the descriptors */
    const int64_t target = (int64_t) ((double) n * p / parts + 0.5);
    while (i < m && offsets[i] < target)
      i++;
    bounds[p] = i;
  }
  bounds[parts] = m;
}

/* gr_matcher_add (vfwd = vbwd = NULL) and gr_matcher_add_view (fwd = bwd = NULL) */
static GrStatus
add_impl (GrMatcher *mt, const float *desc, int count, int k, float ratio,
    int32_t *fwd, int32_t *bwd, const int32_t **vfwd, const int32_t **vbwd,
    GrMatchStats *stats, char *errbuf, size_t errlen)
{
  const double t0 = now_ms ();
  GrStatus st = check_common (mt, k, ratio, errbuf, errlen);
  if (st != GR_OK)
    return st;
  if (count < 0 || (count > 0 && !desc)) {
    gr_set_err (errbuf, errlen, "bad descriptor count or pointer");
    return GR_ERR_INVALID;
  }
  if (mt->k != 0 && mt->k != k) {
    gr_set_err (errbuf, errlen, "descriptor length mismatch: the held images have k = %d, "
        "the new one k = %d", mt->k, k);
    return GR_ERR_INVALID;
  }
  st = gr_matcher_check_values (desc, count, k, mt->threads, errbuf, errlen);
  if (st != GR_OK)
    return st;
  if (mt->held == mt->sizes_cap) {
    int cap = mt->sizes_cap ? 2 * mt->sizes_cap : 64;
    int *s2 = realloc (mt->sizes, sizeof (int) * cap);
    if (!s2)
      return GR_ERR_NOMEM;
    mt->sizes = s2;
    mt->sizes_cap = cap;
  }
  const double rr = (double) ratio * (double) ratio;
  const int held = mt->held;
  const int64_t held_desc = mt->held_desc;
  GrMatchStats s = { 0 };
  s.pairs = (int64_t) held * count + held_desc;

#if GR_HAVE_CUDA
  if (mt->backend == GR_BACKEND_CUDA) {
    int32_t *vf = NULL, *vb = NULL;
    st = gr_matcher_cuda_add (mt->cuda, desc, count, k, rr, mt->debug, fwd, bwd,
        vfwd ? &vf : NULL, vbwd ? &vb : NULL, &s, errbuf, errlen);
    if (st != GR_OK)
      return st;
    if (vfwd)
      *vfwd = vf;
    if (vbwd)
      *vbwd = vb;
  } else
#endif
  {
    if (vfwd || vbwd) {
      /* the view buffer: forward entries first, then the backward ones */
      const int64_t need = (int64_t) held * count + held_desc + 1;
      if (need > mt->view_cap) {
        int32_t *v = realloc (mt->view, sizeof (int32_t) * (size_t) need);
        if (!v) {
          gr_set_err (errbuf, errlen, "out of memory");
          return GR_ERR_NOMEM;
        }
        mt->view = v;
        mt->view_cap = need;
      }
      if (vfwd)
        *vfwd = fwd = mt->view;
      if (vbwd)
        *vbwd = bwd = mt->view + (int64_t) held * count;
    }
    CpuDb *db = &mt->db;
    db->k = k;
    if (cpudb_append (db, desc, count) != GR_OK) {
      gr_set_err (errbuf, errlen, "out of memory");
      return GR_ERR_NOMEM;
    }
    const double t1 = now_ms ();
    const bool force = (mt->debug & GR_MATCHER_DEBUG_FORCE_EXACT) != 0;
    int64_t r1 = 0, r2 = 0;
    if (fwd && held > 0 && count > 0) {
      CpuJob J = { db, 0, held, db->imgs[held].row, count, NULL, fwd, count, rr, force,
        mt->threads
      };
      r1 = cpu_run (&J);
      for (int p = 0; p < held; p++)
        s.candidates += (int64_t) db->imgs[p].pn * count;
    }
    if (bwd && held_desc > 0) {
      CpuJob J = { db, held, held + 1, db->imgs[0].row, held_desc, NULL, bwd, held_desc,
        rr, force, mt->threads
      };
      r2 = cpu_run (&J);
      s.candidates += (int64_t) db->imgs[held].pn * held_desc;
    }
    if (r1 < 0 || r2 < 0) {
      cpudb_pop_last (db);
      gr_set_err (errbuf, errlen, "out of memory");
      return GR_ERR_NOMEM;
    }
    s.rechecked = r1 + r2;
    s.kernel_ms = now_ms () - t1;
  }
  mt->k = k;
  mt->sizes[mt->held++] = count;
  mt->held_desc += count;
  s.elapsed_ms = now_ms () - t0;
  if (stats)
    *stats = s;
  return GR_OK;
}

GrStatus
gr_matcher_add (GrMatcher *mt, const float *desc, int count, int k, float ratio,
    int32_t *fwd, int32_t *bwd, GrMatchStats *stats, char *errbuf, size_t errlen)
{
  return add_impl (mt, desc, count, k, ratio, fwd, bwd, NULL, NULL, stats, errbuf,
      errlen);
}

GrStatus
gr_matcher_add_view (GrMatcher *mt, const float *desc, int count, int k, float ratio,
    const int32_t **fwd, const int32_t **bwd, GrMatchStats *stats, char *errbuf,
    size_t errlen)
{
  if (fwd)
    *fwd = NULL;
  if (bwd)
    *bwd = NULL;
  return add_impl (mt, desc, count, k, ratio, NULL, NULL, fwd, bwd, stats, errbuf,
      errlen);
}

void
gr_matcher_drop_oldest (GrMatcher *mt, int count)
{
  if (!mt || count <= 0)
    return;
  if (count > mt->held)
    count = mt->held;
  for (int i = 0; i < count; i++)
    mt->held_desc -= mt->sizes[i];
  memmove (mt->sizes, mt->sizes + count, sizeof (int) * (mt->held - count));
  mt->held -= count;
#if GR_HAVE_CUDA
  if (mt->cuda)
    gr_matcher_cuda_drop_oldest (mt->cuda, count);
#endif
  cpudb_drop (&mt->db, count);
}

void
gr_matcher_reset (GrMatcher *mt)
{
  if (!mt)
    return;
  mt->held = 0;
  mt->held_desc = 0;
  mt->k = 0;
#if GR_HAVE_CUDA
  if (mt->cuda)
    gr_matcher_cuda_reset (mt->cuda);
#endif
  cpudb_clear (&mt->db);
}

int
gr_matcher_held_images (const GrMatcher *mt)
{
  return mt ? mt->held : 0;
}

int64_t
gr_matcher_held_descriptors (const GrMatcher *mt)
{
  return mt ? mt->held_desc : 0;
}

int
gr_matcher_held_image_size (const GrMatcher *mt, int p)
{
  if (!mt || p < 0 || p >= mt->held)
    return -1;
  return mt->sizes[p];
}
