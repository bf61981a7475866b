/* All of a frame's pair fits in parallel (see pairfit.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pairfit.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "threadshare.h"


void
gr_pairfit_params_init (GrPairFitParams *p)
{
  p->fit_threshold = 2.0;
  p->refit_threshold = 1.0;
  p->min_ncc = 0.8;
  p->min_points = 8;
  p->threads = 0;
}

/* d(H x)/dx at (x, y): the local linear map that turns the refinement's disc */
static void
homography_jacobian (const double h[9], double x, double y, double J[4])
{
  const double w = h[6] * x + h[7] * y + h[8];
  const double u = h[0] * x + h[1] * y + h[2], v = h[3] * x + h[4] * y + h[5];
  J[0] = (h[0] * w - u * h[6]) / (w * w);
  J[1] = (h[1] * w - u * h[7]) / (w * w);
  J[2] = (h[3] * w - v * h[6]) / (w * w);
  J[3] = (h[4] * w - v * h[7]) / (w * w);
}

/* Everything of one call, indexed by the global match index g = moff[job] + i. */
typedef struct {
  int64_t *moff;          /* n + 1 */
  double *src, *dst;      /* 2 per match: current, earlier keypoint */
  uint8_t *inl;           /* first fit's inliers */
  double *ref;            /* 2 per match: the refined position in the earlier frame */
  uint8_t *refined;       /* 1 = refinement kept */
  int64_t *items;         /* global indices of the first fit's inliers */
  GrFit *fit;             /* n: first fit */
  uint8_t *fit_ok;        /* n */
} Work;

static void
work_free (Work *w)
{
  free (w->moff);
  free (w->src);
  free (w->inl);
  free (w->ref);
  free (w->refined);
  free (w->items);
  free (w->fit);
  free (w->fit_ok);
}

static bool
work_alloc (Work *w, const GrPairFitJob *jobs, int n)
{
  memset (w, 0, sizeof *w);
  w->moff = malloc (sizeof (int64_t) * (n + 1));
  if (!w->moff)
    return false;
  w->moff[0] = 0;
  for (int j = 0; j < n; j++)
    w->moff[j + 1] = w->moff[j] + (jobs[j].m > 0 ? jobs[j].m : 0);
  const size_t M = (size_t) w->moff[n] > 0 ? (size_t) w->moff[n] : 1;
  w->src = malloc (sizeof (double) * 4 * M);
  w->dst = w->src ? w->src + 2 * M : NULL;
  w->inl = calloc (M, 1);
  w->ref = malloc (sizeof (double) * 2 * M);
  w->refined = calloc (M, 1);
  w->items = malloc (sizeof (int64_t) * M);
  w->fit = calloc (n > 0 ? n : 1, sizeof (GrFit));
  w->fit_ok = calloc (n > 0 ? n : 1, 1);
  return w->src && w->inl && w->ref && w->refined && w->items && w->fit && w->fit_ok;
}

static GrStatus
pairfit_run (const GrPlaneF *view, const GrDescriptorScratch *scratch,
    const GrKeypoint *kp, const GrPairFitJob *jobs, int n, const GrPairFitParams *p,
    int threads, GrPairFitResult *out, GrPairFitStats *stats)
{
  GrPairFitStats st = { 0 };
  if (n < 0 || !p || (n > 0 && (!view || !scratch || !scratch->smooth || !jobs || !out ||
              !kp)))
    return GR_ERR_INVALID;
  for (int j = 0; j < n; j++)
    if (jobs[j].m < 0 || (jobs[j].m > 0 && (!jobs[j].pairs || !jobs[j].kp ||
                !jobs[j].patches || !out[j].inlier)))
      return GR_ERR_INVALID;
  if (stats)
    *stats = st;
  if (n == 0)
    return GR_OK;
  Work w;
  if (!work_alloc (&w, jobs, n)) {
    work_free (&w);
    return GR_ERR_NOMEM;
  }
  const int minp = p->min_points;
  double t0 = omp_get_wtime ();

  /* 1: the first robust fit of every pair */
#pragma omp parallel for schedule (dynamic, 1) num_threads (threads) if (n > 1)
  for (int j = 0; j < n; j++) {
    const GrPairFitJob *jb = &jobs[j];
    const int64_t o = w.moff[j];
    double *src = w.src + 2 * o, *dst = w.dst + 2 * o;
    for (int i = 0; i < jb->m; i++) {
      src[2 * i] = kp[jb->pairs[2 * i]].x;
      src[2 * i + 1] = kp[jb->pairs[2 * i]].y;
      dst[2 * i] = jb->kp[jb->pairs[2 * i + 1]].x;
      dst[2 * i + 1] = jb->kp[jb->pairs[2 * i + 1]].y;
    }
    GrPairFitResult *r = &out[j];
    r->flags = GR_PAIRFIT_NONE;
    r->inliers = 0;
    r->rms = NAN;
    for (int t = 0; t < 9; t++)
      r->h[t] = NAN;
    GrFitParams fp;
    gr_fit_params_init (&fp, GR_MODEL_HOMOGRAPHY);
    fp.threshold = p->fit_threshold;
    fp.seed = jb->seed;
    if (jb->m < minp || gr_fit_robust (src, dst, NULL, jb->m, &fp, &w.fit[j],
            w.inl + o) != GR_FIT_OK || w.fit[j].inliers < minp)
      continue;
    w.fit_ok[j] = 1;
    memcpy (r->h, w.fit[j].h, sizeof r->h);
    r->rms = w.fit[j].rms;
    r->inliers = w.fit[j].inliers;
    r->flags |= GR_PAIRFIT_HOMOGRAPHY;
    memcpy (r->inlier, w.inl + o, jb->m);
  }

  double t1 = omp_get_wtime ();
  st.fit_ms = (t1 - t0) * 1e3;
  t0 = t1;

  /* 2: the refinement of every inlier of every fitted pair, as one list */
  int64_t nitems = 0;
  for (int j = 0; j < n; j++)
    if (w.fit_ok[j])
      for (int64_t g = w.moff[j]; g < w.moff[j + 1]; g++)
        if (w.inl[g])
          w.items[nitems++] = g;
  int *job_of = NULL;
  if (nitems > 0) {
    /* the pair of each global index (binary search would do; this is O(M)) */
    job_of = malloc (sizeof (int) * (size_t) w.moff[n]);
    if (!job_of) {
      work_free (&w);
      return GR_ERR_NOMEM;
    }
    for (int j = 0; j < n; j++)
      for (int64_t g = w.moff[j]; g < w.moff[j + 1]; g++)
        job_of[g] = j;
  }
#pragma omp parallel for schedule (dynamic, 8) num_threads (threads) if (nitems > 8)
  for (int64_t t = 0; t < nitems; t++) {
    const int64_t g = w.items[t];
    const int j = job_of[g];
    const GrPairFitJob *jb = &jobs[j];
    const int i = (int) (g - w.moff[j]);
    const double *h = w.fit[j].h;
    const double sx = w.src[2 * g], sy = w.src[2 * g + 1];
    const int e = jb->pairs[2 * i + 1];
    double J[4], x, y, ncc;
    homography_jacobian (h, sx, sy, J);
    if (!gr_fit_apply (h, sx, sy, &x, &y))
      continue;
    if (!gr_patch_refine (view, scratch, (float) sx, (float) sy,
            jb->patches + (size_t) e * GR_PATCH_BYTES, &jb->kp[e], J, &x, &y, &ncc) ||
        ncc < p->min_ncc)
      continue;
    w.ref[2 * g] = x;
    w.ref[2 * g + 1] = y;
    w.refined[g] = 1;
  }
  free (job_of);
  t1 = omp_get_wtime ();
  st.refine_ms = (t1 - t0) * 1e3;
  st.refinements = nitems;
  for (int64_t t = 0; t < nitems; t++)
    st.refined += w.refined[w.items[t]];
  t0 = t1;

  /* 3: the final fit of every pair on its refined correspondences (in match order) */
  int nomem = 0;
#pragma omp parallel for schedule (dynamic, 1) num_threads (threads) if (n > 1) \
    reduction (||:nomem)
  for (int j = 0; j < n; j++) {
    if (!w.fit_ok[j])
      continue;
    const GrPairFitJob *jb = &jobs[j];
    const int64_t o = w.moff[j];
    double *rs = malloc (sizeof (double) * 4 * (size_t) jb->m), *rd = rs + 2 * jb->m;
    int *idx = malloc (sizeof (int) * (size_t) jb->m);
    uint8_t *rinl = calloc (jb->m, 1);
    if (!rs || !idx || !rinl) {
      free (rs);
      free (idx);
      free (rinl);
      nomem = 1;
      continue;
    }
    int nr = 0;
    for (int i = 0; i < jb->m; i++) {
      if (!w.refined[o + i])
        continue;
      rs[2 * nr] = w.src[2 * (o + i)];
      rs[2 * nr + 1] = w.src[2 * (o + i) + 1];
      rd[2 * nr] = w.ref[2 * (o + i)];
      rd[2 * nr + 1] = w.ref[2 * (o + i) + 1];
      idx[nr++] = i;
    }
    GrFitParams fp;
    gr_fit_params_init (&fp, GR_MODEL_HOMOGRAPHY);
    fp.threshold = p->refit_threshold;
    fp.seed = jb->seed;
    GrFit f2;
    if (nr >= minp && gr_fit_robust (rs, rd, NULL, nr, &fp, &f2, rinl) == GR_FIT_OK &&
        f2.inliers >= minp) {
      GrPairFitResult *r = &out[j];
      memcpy (r->h, f2.h, sizeof r->h);
      r->rms = f2.rms;
      r->inliers = f2.inliers;
      r->flags |= GR_PAIRFIT_REFINED;
      memset (r->inlier, 0, jb->m);
      for (int q = 0; q < nr; q++)
        r->inlier[idx[q]] = rinl[q];
    }
    free (rs);
    free (idx);
    free (rinl);
  }
  work_free (&w);
  st.refit_ms = (omp_get_wtime () - t0) * 1e3;
  if (stats)
    *stats = st;
  return nomem ? GR_ERR_NOMEM : GR_OK;
}

GrStatus
gr_pairfit_run (const GrPlaneF *view, const GrDescriptorScratch *scratch,
    const GrKeypoint *kp, const GrPairFitJob *jobs, int n, const GrPairFitParams *p,
    GrPairFitResult *out, GrPairFitStats *stats)
{
  /* several live streams run their pair fits at the same moment: each taking every
   * core put four teams of 16 threads on 16 cores, and the fits of four streams took
   * twice as long as one stream's (H100 host, 2026-11-25).  The results do not depend
   * on the thread count (each pair has its own seed). */
  const int threads = gr_thread_share_enter (p && p->threads > 0 ? p->threads : 0);
  const GrStatus st = pairfit_run (view, scratch, kp, jobs, n, p, threads, out, stats);
  gr_thread_share_leave ();
  return st;
}
