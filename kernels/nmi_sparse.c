/* Sparse NMI matching: dispatcher, parameter checks, and the multi-threaded CPU
 * backend.  The per-keypoint algorithm lives in nmi_sparse_impl.h, shared with the
 * CUDA backend: here one OpenMP thread runs one keypoint at a time through the
 * phases, for each of the GRS_NT "threads" of a CUDA block in turn, except the score
 * phase, which has a CPU form of its own (scores_cpu) giving the same map.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "nmi_sparse.h"
#include "nmi_sparse_impl.h"
#include "nmi_sparse_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

struct GrNmiSparse {
  GrBackend backend;
  GrBackend requested;          /* the backend asked for (AUTO may fall back) */
  int threads;
  int64_t tab[GRS_TAB], dtab[GRS_TAB];
  double lnn[GRS_TAB];
  uint8_t *ctl_pix, *ctl_mask;   /* CPU copy, packed; mask NULL = all valid */
  int ctl_w, ctl_h;
  bool cpu_scores_shared;        /* GEOREG_NMI_SPARSE_CPU_SHARED=1: the CPU runs the
                                  * CUDA kernel's score phase (grs_scores) instead of
                                  * scores_cpu; same results, kept to compare them */
#if GR_HAVE_CUDA
  GrNmiSparseCuda *cuda;
#endif
};

void
gr_nmi_sparse_params_init (GrNmiSparseParams *p)
{
  p->template_size = 11;
  p->window_size = 73;
  p->min_valid = 0;
  p->peak_exclusion = 2;
}

static void
tables_init (GrNmiSparse *nmi)
{
  for (int c = 0; c < GRS_TAB; c++) {
    nmi->tab[c] = c > 1 ? llround (ldexp (c * log ((double) c), 40)) : 0;
    nmi->dtab[c] = c > 0 ? nmi->tab[c] - nmi->tab[c - 1] : 0;
    nmi->lnn[c] = c > 0 ? log ((double) c) : 0.0;
  }
}

GrNmiSparse *
gr_nmi_sparse_new (GrBackend backend, int cuda_device, GrStatus *status,
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
  GrNmiSparse *nmi = calloc (1, sizeof *nmi);
  if (!nmi) {
    *status = GR_ERR_NOMEM;
    gr_set_err (errbuf, errlen, "out of memory");
    return NULL;
  }
  nmi->backend = use;
  nmi->requested = backend;
  const char *shared = getenv ("GEOREG_NMI_SPARSE_CPU_SHARED");
  nmi->cpu_scores_shared = shared && atoi (shared) == 1;
  tables_init (nmi);
#if GR_HAVE_CUDA
  if (use == GR_BACKEND_CUDA) {
    nmi->cuda = gr_nmi_sparse_cuda_new (cuda_device < 0 ? 0 : cuda_device, nmi->tab,
        nmi->dtab, nmi->lnn, errbuf, errlen);
    if (!nmi->cuda && backend != GR_BACKEND_AUTO) {
      free (nmi);
      *status = GR_ERR_CUDA;
      return NULL;
    }
    /* auto means "the best that works" (as the other engines): the CPU; the reason
     * stays in errbuf */
    if (!nmi->cuda)
      nmi->backend = GR_BACKEND_CPU;
  }
#else
  (void) cuda_device;
#endif
  return nmi;
}

void
gr_nmi_sparse_free (GrNmiSparse *nmi)
{
  if (!nmi)
    return;
#if GR_HAVE_CUDA
  gr_nmi_sparse_cuda_free (nmi->cuda);
#endif
  free (nmi->ctl_pix);
  free (nmi->ctl_mask);
  free (nmi);
}

GrBackend
gr_nmi_sparse_backend (const GrNmiSparse *nmi)
{
  return nmi->backend;
}

void
gr_nmi_sparse_set_threads (GrNmiSparse *nmi, int threads)
{
  nmi->threads = threads > 0 ? threads : 0;
}

double
gr_nmi_sparse_last_kernel_ms (const GrNmiSparse *nmi)
{
#if GR_HAVE_CUDA
  if (nmi && nmi->cuda)
    return gr_nmi_sparse_cuda_last_ms (nmi->cuda);
#else
  (void) nmi;
#endif
  return -1.0;
}

GrStatus
gr_nmi_sparse_set_control (GrNmiSparse *nmi, const GrImage8 *control,
    char *errbuf, size_t errlen)
{
  if (!nmi || !control || !control->pix || control->width <= 0 || control->height <= 0 ||
      control->pix_stride < (size_t) control->width ||
      (control->mask && control->mask_stride < (size_t) control->width)) {
    gr_set_err (errbuf, errlen, "control image: bad size, stride or pointer");
    return GR_ERR_INVALID;
  }
  const int w = control->width, h = control->height;
  const size_t n = (size_t) w * h;
  uint8_t *pix = malloc (n);
  uint8_t *mask = control->mask ? malloc (n) : NULL;
  if (!pix || (control->mask && !mask)) {
    free (pix);
    free (mask);
    gr_set_err (errbuf, errlen, "out of memory (control %dx%d)", w, h);
    return GR_ERR_NOMEM;
  }
  bool all_valid = true;
  for (int y = 0; y < h; y++) {
    memcpy (pix + (size_t) y * w, control->pix + y * control->pix_stride, w);
    if (mask)
      for (int x = 0; x < w; x++) {
        const uint8_t v = control->mask[y * control->mask_stride + x] ? 1 : 0;
        mask[(size_t) y * w + x] = v;
        all_valid &= v != 0;
      }
  }
  if (mask && all_valid) {
    free (mask);
    mask = NULL;
  }
#if GR_HAVE_CUDA
  if (nmi->backend == GR_BACKEND_CUDA) {
    GrStatus st = gr_nmi_sparse_cuda_set_control (nmi->cuda, pix, mask, w, h, errbuf,
        errlen);
    if (st == GR_OK) {
      free (pix);
      free (mask);
      nmi->ctl_w = w;
      nmi->ctl_h = h;
      return st;
    }
    if (st != GR_ERR_CUDA || nmi->requested != GR_BACKEND_AUTO) {
      free (pix);
      free (mask);
      return st;
    }
    /* auto, and the device cannot take the control (e.g. out of device memory): the
     * CPU takes over with the copy made above; the reason stays in errbuf, and
     * gr_nmi_sparse_backend says CPU from now on */
    gr_nmi_sparse_cuda_free (nmi->cuda);
    nmi->cuda = NULL;
    nmi->backend = GR_BACKEND_CPU;
  }
#endif
  free (nmi->ctl_pix);
  free (nmi->ctl_mask);
  nmi->ctl_pix = pix;
  nmi->ctl_mask = mask;
  nmi->ctl_w = w;
  nmi->ctl_h = h;
  return GR_OK;
}

GrStatus
gr_nmi_sparse_cut_templates (const GrImage8 *img, int template_size, const int32_t *xy,
    int n, uint8_t *templates, uint8_t *tmasks)
{
  if (!img || !img->pix || img->width <= 0 || img->height <= 0 || n < 0 ||
      (n > 0 && (!xy || !templates)) || template_size < 1 || !(template_size & 1))
    return GR_ERR_INVALID;
  const int T = template_size, h2 = T / 2, T2 = T * T;
  for (int k = 0; k < n; k++) {
    uint8_t *t = templates + (size_t) k * T2;
    uint8_t *m = tmasks ? tmasks + (size_t) k * T2 : NULL;
    for (int j = 0; j < T; j++)
      for (int i = 0; i < T; i++) {
        const int x = xy[2 * k] - h2 + i, y = xy[2 * k + 1] - h2 + j;
        bool ok = x >= 0 && y >= 0 && x < img->width && y < img->height &&
            (!img->mask || img->mask[(size_t) y * img->mask_stride + x]);
        t[j * T + i] = ok ? img->pix[(size_t) y * img->pix_stride + x] : 0;
        if (m)
          m[j * T + i] = ok ? 1 : 0;
      }
  }
  return GR_OK;
}

static bool
params_resolve (const GrNmiSparseParams *in, GrNmiSparseParams *out, GrsGeom *g,
    char *errbuf, size_t errlen)
{
  GrNmiSparseParams p;
  if (in)
    p = *in;
  else
    gr_nmi_sparse_params_init (&p);
  const int T = p.template_size, W = p.window_size;
  if (T < 3 || T > GR_NMI_SPARSE_MAX_TEMPLATE || !(T & 1)) {
    gr_set_err (errbuf, errlen, "template size %d: must be odd, 3 .. %d", T,
        GR_NMI_SPARSE_MAX_TEMPLATE);
    return false;
  }
  if (W < T || W > GR_NMI_SPARSE_MAX_WINDOW || !(W & 1)) {
    gr_set_err (errbuf, errlen, "window size %d: must be odd, %d .. %d", W, T,
        GR_NMI_SPARSE_MAX_WINDOW);
    return false;
  }
  if (p.min_valid < 0 || p.min_valid > T * T) {
    gr_set_err (errbuf, errlen, "min_valid %d: must be 0 .. %d", p.min_valid, T * T);
    return false;
  }
  if (p.min_valid == 0)
    p.min_valid = (T * T + 1) / 2;
  if (p.peak_exclusion < 1)
    p.peak_exclusion = 1;
  g->T = T;
  g->W = W;
  g->P = W - T + 1;
  g->R = (W - T) / 2;
  g->min_valid = p.min_valid;
  g->excl = p.peak_exclusion;
  *out = p;
  return true;
}

/* Phase S on the CPU: the same score map as grs_scores (the integer sums S are exact,
 * so any order gives the same integers, and the doubles are formed as there), but laid
 * out for one core instead of 64 threads sharing banks: plain byte histograms, each
 * group's window values gathered once, and the columns walked one after another.
 * Measured on 1080p frames (300 keypoints, 31-pixel windows) it takes about half the
 * time of running grs_scores for the 64 emulated threads. */
static void
scores_cpu (const GrsGeom *g, const GrsShared *s, double *map)
{
  const int T = g->T, W = g->W, P = g->P;
  const int ntv = s->misc[GRS_M_NTV], ng = s->misc[GRS_M_NGROUPS];
  const int tfull = s->misc[GRS_M_TFULL];
  const uint16_t *win = s->win;
  const int16_t *off = s->off;
  const int64_t *tab = s->tab, *dtab = s->dtab;
  uint8_t hb[GRS_INVALID + 1], hj[GRS_INVALID + 1];   /* + the invalid slot, unused */
  uint16_t vals[GR_NMI_SPARSE_MAX_TEMPLATE * GR_NMI_SPARSE_MAX_TEMPLATE];
  memset (hb, 0, sizeof hb);
  memset (hj, 0, sizeof hj);

  for (int col = 0; col < P; col++) {
    int64_t sB = 0;
    int nv = 0;
    if (tfull)
      for (int r = 0; r < T; r++)
        for (int x = 0; x < T; x++) {
          const uint32_t v = win[r * W + col + x];
          if (!(v & GRS_INVALID)) {
            sB += dtab[++hb[v]];
            nv++;
          }
        }
    for (int oy = 0; oy < P; oy++) {
      if (tfull && oy > 0) {
        const uint16_t *ro = win + (oy - 1) * W + col, *ri = win + (oy + T - 1) * W + col;
        for (int x = 0; x < T; x++) {
          const uint32_t vo = ro[x];
          if (!(vo & GRS_INVALID)) {
            sB -= dtab[hb[vo]--];
            nv--;
          }
          const uint32_t vi = ri[x];
          if (!(vi & GRS_INVALID)) {
            sB += dtab[++hb[vi]];
            nv++;
          }
        }
      }
      const uint16_t *base = win + oy * W + col;
      int n;
      int64_t sb;
      if (tfull) {
        n = nv;
        sb = sB;
      } else {
        n = 0;
        sb = 0;
        for (int r = 0; r < ntv; r++) {
          const uint32_t v = base[off[r]];
          if (!(v & GRS_INVALID)) {
            sb += dtab[++hb[v]];
            n++;
          }
        }
        for (int r = 0; r < ntv; r++)
          hb[base[off[r]] & 255u] = 0;
      }
      int64_t sJ = 0, sA = 0;
      for (int gi = 0; gi < ng; gi++) {
        const int st = s->gstart[gi], sz = s->gsize[gi];
        int cv = 0;
        for (int m = 0; m < sz; m++)
          vals[m] = base[off[st + m]];
        for (int m = 0; m < sz; m++) {
          const uint32_t v = vals[m];
          if (!(v & GRS_INVALID)) {
            sJ += dtab[++hj[v]];
            cv++;
          }
        }
        sA += tab[cv];
        for (int m = 0; m < sz; m++)
          hj[vals[m]] = 0;
      }
      map[oy * P + col] = grs_score (sJ, sA, sb, n, g->min_valid, tab, s->lnn);
    }
    /* the column's marginal back to zero for the next one */
    if (tfull)
      for (int r = P - 1; r < P - 1 + T; r++)
        for (int x = 0; x < T; x++)
          hb[win[r * W + col + x] & 255u] = 0;
  }
}

static GrStatus
run_cpu (GrNmiSparse *nmi, const GrsGeom *g, const uint8_t *templates,
    const uint8_t *tmasks, const GrNmiSparseQuery *q, int n, GrNmiSparseMatch *out,
    double *maps)
{
  const GrsControl ctl = { nmi->ctl_pix, nmi->ctl_mask, nmi->ctl_w, nmi->ctl_h };
  const int T2 = g->T * g->T;
  const size_t P2 = (size_t) g->P * g->P;
  GrsShared probe;
  const size_t bytes = grs_layout (NULL, g, &probe);
  bool oom = false;

#pragma omp parallel num_threads (nmi->threads > 0 ? nmi->threads : omp_get_max_threads ())
  {
    unsigned char *blob = malloc (bytes);
    double *own_map = maps ? NULL : malloc (sizeof (double) * P2);
    if (!blob || (!maps && !own_map)) {
#pragma omp atomic write
      oom = true;
    }
    GrsShared s;
    memset (&s, 0, sizeof s);
    if (blob) {
      grs_layout (blob, g, &s);
      s.lnn = nmi->lnn;
    }
#pragma omp for schedule (dynamic, 2)
    for (int k = 0; k < n; k++) {
      if (!blob || (!maps && !own_map))
        continue;
      double *map = maps ? maps + (size_t) k * P2 : own_map;
      const uint8_t *tm = tmasks ? tmasks + (size_t) k * T2 : NULL;
      for (int t = 0; t < GRS_NT; t++)
        grs_load (g, &s, t, &ctl, templates + (size_t) k * T2, tm, q[k].x, q[k].y,
            nmi->tab, nmi->dtab);
      for (int t = 0; t < GRS_NT; t++)
        grs_rank (g, &s, t);
      grs_groups (&s);
      if (nmi->cpu_scores_shared)
        for (int t = 0; t < GRS_NT; t++)
          grs_scores (g, &s, t, map);
      else
        scores_cpu (g, &s, map);
      for (int t = 0; t < GRS_NT; t++)
        grs_argmax_partial (g, &s, t, map);
      grs_argmax_reduce (&s);
      for (int t = 0; t < GRS_NT; t++)
        grs_second_partial (g, &s, t, map);
      grs_finish (g, &s, map, &out[k]);
    }
    free (blob);
    free (own_map);
  }
  return oom ? GR_ERR_NOMEM : GR_OK;
}

/* the checks every run entry makes: params resolved into p / g; 1 = run, 0 = nothing
 * to do (n = 0), negative = error (status in *st) */
static int
run_checks (GrNmiSparse *nmi, const GrNmiSparseParams *params,
    const GrNmiSparseQuery *queries, int n, GrNmiSparseParams *p, GrsGeom *g,
    GrStatus *st, char *errbuf, size_t errlen)
{
  *st = GR_ERR_INVALID;
  if (!params_resolve (params, p, g, errbuf, errlen))
    return -1;
  if (nmi->ctl_w == 0) {
    gr_set_err (errbuf, errlen, "no control image set");
    return -1;
  }
  *st = GR_OK;
  if (n == 0)
    return 0;
  for (int k = 0; k < n; k++)
    /* far-away windows are legal (all invalid) but the arithmetic must not wrap */
    if (queries[k].x < -(1 << 28) || queries[k].x > (1 << 28) ||
        queries[k].y < -(1 << 28) || queries[k].y > (1 << 28)) {
      gr_set_err (errbuf, errlen, "query %d: window centre (%d, %d) out of range", k,
          queries[k].x, queries[k].y);
      *st = GR_ERR_INVALID;
      return -1;
    }
  return 1;
}

GrStatus
gr_nmi_sparse_run (GrNmiSparse *nmi, const GrNmiSparseParams *params,
    const uint8_t *templates, const uint8_t *tmasks, const GrNmiSparseQuery *queries,
    int n, GrNmiSparseMatch *out, double *maps, char *errbuf, size_t errlen)
{
  if (!nmi || n < 0 || (n > 0 && (!templates || !queries || !out))) {
    gr_set_err (errbuf, errlen, "bad arguments (NULL pointer or negative count)");
    return GR_ERR_INVALID;
  }
  GrNmiSparseParams p;
  GrsGeom g;
  GrStatus st;
  const int go = run_checks (nmi, params, queries, n, &p, &g, &st, errbuf, errlen);
  if (go <= 0)
    return st;
#if GR_HAVE_CUDA
  if (nmi->backend == GR_BACKEND_CUDA)
    return gr_nmi_sparse_cuda_run (nmi->cuda, &p, templates, tmasks, queries, n, out,
        maps, errbuf, errlen);
#endif
  st = run_cpu (nmi, &g, templates, tmasks, queries, n, out, maps);
  if (st != GR_OK)
    gr_set_err (errbuf, errlen, "%s", gr_status_string (st));
  return st;
}

/* ---- device-resident inputs (CUDA engine only) */

GrStatus
gr_nmi_sparse_set_control_device (GrNmiSparse *nmi, const uint8_t *d_pix,
    const uint8_t *d_mask, int width, int height, int vmax, char *errbuf, size_t errlen)
{
  if (!nmi || !d_pix || width <= 0 || height <= 0 || vmax < 0 || vmax > 255) {
    gr_set_err (errbuf, errlen, "control image: bad size, value range or pointer");
    return GR_ERR_INVALID;
  }
#if GR_HAVE_CUDA
  if (nmi->backend == GR_BACKEND_CUDA) {
    GrStatus st = gr_nmi_sparse_cuda_set_control_device (nmi->cuda, d_pix, d_mask, width,
        height, vmax, errbuf, errlen);
    if (st == GR_OK) {
      nmi->ctl_w = width;
      nmi->ctl_h = height;
    }
    return st;
  }
#endif
  gr_set_err (errbuf, errlen, "a device control needs the CUDA backend");
  return GR_ERR_INVALID;
}

GrStatus
gr_nmi_sparse_run_device (GrNmiSparse *nmi, const GrNmiSparseParams *params,
    const uint8_t *d_templates, const uint8_t *d_tmasks, const GrNmiSparseQuery *queries,
    int n, GrNmiSparseMatch *out, char *errbuf, size_t errlen)
{
  if (!nmi || n < 0 || (n > 0 && (!d_templates || !queries || !out))) {
    gr_set_err (errbuf, errlen, "bad arguments (NULL pointer or negative count)");
    return GR_ERR_INVALID;
  }
  GrNmiSparseParams p;
  GrsGeom g;
  GrStatus st;
#if GR_HAVE_CUDA
  if (nmi->backend == GR_BACKEND_CUDA) {
    const int go = run_checks (nmi, params, queries, n, &p, &g, &st, errbuf, errlen);
    if (go <= 0)
      return st;
    return gr_nmi_sparse_cuda_run_dev (nmi->cuda, &p, d_templates, d_tmasks, NULL, 0,
        false, queries, n, out, errbuf, errlen);
  }
#endif
  (void) p;
  (void) g;
  (void) st;
  gr_set_err (errbuf, errlen, "device templates need the CUDA backend");
  return GR_ERR_INVALID;
}

GrStatus
gr_nmi_sparse_run_cut_device (GrNmiSparse *nmi, const GrNmiSparseParams *params,
    const GrImage8 *d_img, const int32_t *xy, bool with_masks,
    const GrNmiSparseQuery *queries, int n, GrNmiSparseMatch *out, char *errbuf,
    size_t errlen)
{
  if (!nmi || n < 0 || !d_img || !d_img->pix || d_img->width <= 0 || d_img->height <= 0
      || d_img->pix_stride < (size_t) d_img->width ||
      (d_img->mask && d_img->mask_stride < (size_t) d_img->width) ||
      (n > 0 && (!xy || !queries || !out))) {
    gr_set_err (errbuf, errlen, "bad arguments (NULL pointer, size or negative count)");
    return GR_ERR_INVALID;
  }
  GrNmiSparseParams p;
  GrsGeom g;
  GrStatus st;
#if GR_HAVE_CUDA
  if (nmi->backend == GR_BACKEND_CUDA) {
    const int go = run_checks (nmi, params, queries, n, &p, &g, &st, errbuf, errlen);
    if (go <= 0)
      return st;
    return gr_nmi_sparse_cuda_run_dev (nmi->cuda, &p, NULL, NULL, d_img, xy, with_masks,
        queries, n, out, errbuf, errlen);
  }
#endif
  (void) p;
  (void) g;
  (void) st;
  (void) with_masks;
  gr_set_err (errbuf, errlen, "device templates need the CUDA backend");
  return GR_ERR_INVALID;
}
