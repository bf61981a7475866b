/* kernels/pairfit: a frame's pair fits in parallel.
 *
 * Scene: the procedural control (pipelines/synth.h), a current frame and P earlier
 * frames cut from it with known homographies (turned, scaled, shifted), keypoints,
 * descriptors and patches as featurematch computes them, and matches from the truth
 * (nearest earlier keypoint within 1.5 px of the mapped position) mixed with 30%
 * random wrong pairs.  Checks:
 *  - gr_pairfit_run with 1 thread equals, bit for bit, a reference written here the
 *    way featurematch used to fit (one pair after another: fit, refine, refit);
 *  - 2, 3 and 8 threads equal 1 thread bit for bit;
 *  - every pair gets a refined homography within 0.5 px of the truth over the whole
 *    overlap (the fit's own residual is not the measure);
 *  - bad arguments give GR_ERR_INVALID.
 * `test_pairfit --bench [frames] [keypoints] [width] [height]` times the live case
 * instead (default 3840 x 2160, 500 keypoints, 8 earlier frames): gr_pairfit_run on 1
 * and on 2 threads, median of 9 runs, its phases, and the accuracy against the truth
 * (meson test --benchmark pairfit).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "descriptors.h"
#include "fit.h"
#include "keypoints.h"
#include "pairfit.h"
#include "synth.h"
#include "test_check.h"

typedef struct {
  int w, h, nfr, nk;            /* nfr: earlier frames */
  GrSynthImage control;
  GrPlaneF *frames;             /* [0] current, [1 .. nfr] earlier */
  double (*g)[9];               /* frame -> control */
  GrKeypoint **kp;
  int *n;
  uint8_t **patches;
  GrDescriptorScratch cur;      /* the current frame's scratch */
  GrPairFitJob *jobs;
  int32_t **pairs;
} Scene;

/* current frame -> earlier frame p */
static void
truth (const Scene *s, int p, double t[9])
{
  double inv[9];
  gr_mat3_inverse (s->g[p], inv);
  gr_mat3_mul (inv, s->g[0], t);
}

static void
scene_free (Scene *s)
{
  for (int f = 0; f <= s->nfr; f++) {
    if (s->frames)
      gr_synth_plane_free (&s->frames[f]);
    if (s->kp)
      free (s->kp[f]);
    if (s->patches)
      free (s->patches[f]);
    if (s->pairs)
      free (s->pairs[f]);
  }
  free (s->frames);
  free (s->g);
  free (s->kp);
  free (s->n);
  free (s->patches);
  free (s->pairs);
  free (s->jobs);
  gr_descriptor_scratch_clear (&s->cur);
  gr_synth_image_free (&s->control);
}

/* spread: the earlier frames' centres lie within +-spread of the frame size of the
 * current one (0.3 for the checks; the bench's live flight, 8 frames of a 30 fps
 * stream, overlaps more) */
static bool
scene_make (Scene *s, int w, int h, int nfr, int nk, double spread, uint64_t seed)
{
  memset (s, 0, sizeof *s);
  s->w = w;
  s->h = h;
  s->nfr = nfr;
  s->nk = nk;
  GrSynthControlParams cp;
  gr_synth_control_params_init (&cp);
  cp.width = 2 * w + 256;
  cp.height = 2 * h + 256;
  cp.seed = seed;
  char err[256];
  if (gr_synth_control_generate (&cp, &s->control, err, sizeof err) != GR_OK) {
    fprintf (stderr, "control: %s\n", err);
    return false;
  }
  const GrPlaneF ctl = gr_synth_image_plane (&s->control, 1);
  s->frames = calloc (nfr + 1, sizeof (GrPlaneF));
  s->g = calloc (nfr + 1, sizeof *s->g);
  s->kp = calloc (nfr + 1, sizeof (GrKeypoint *));
  s->n = calloc (nfr + 1, sizeof (int));
  s->patches = calloc (nfr + 1, sizeof (uint8_t *));
  s->pairs = calloc (nfr + 1, sizeof (int32_t *));
  s->jobs = calloc (nfr, sizeof (GrPairFitJob));
  GrSynthRng rng;
  gr_synth_rng_init (&rng, seed);
  GrDescriptorParams dp;
  gr_descriptor_params_init (&dp);
  GrKeypointParams kpp;
  gr_keypoint_params_init (&kpp);
  kpp.max_keypoints = nk;
  kpp.margin = gr_descriptor_margin (&dp);
  float *desc = malloc (sizeof (float) * nk * dp.size);
  bool ok = desc != NULL;
  for (int f = 0; ok && f <= nfr; f++) {
    GrSynthPose pose;
    memset (&pose, 0, sizeof pose);
    pose.centre_x = cp.width / 2.0 + (f ? gr_synth_rng_range (&rng, -spread, spread) * w :
        0);
    pose.centre_y = cp.height / 2.0 + (f ? gr_synth_rng_range (&rng, -spread, spread) * h :
        0);
    pose.rotation_deg = f ? gr_synth_rng_range (&rng, -8, 8) : 0;
    pose.scale = f ? gr_synth_rng_range (&rng, 0.95, 1.05) : 1.0;
    gr_synth_pose_homography (&pose, w, h, s->g[f]);
    GrDescriptorScratch local;
    memset (&local, 0, sizeof local);
    GrDescriptorScratch *sc = f == 0 ? &s->cur : &local;
    s->kp[f] = malloc (sizeof (GrKeypoint) * nk);
    ok = s->kp[f] && gr_synth_cut (&ctl, s->g[f], w, h, 1, &s->frames[f]) == GR_OK;
    if (ok) {
      gr_synth_add_noise (&s->frames[f], 1.5, 255.0, gr_synth_seed_mix (seed, f));
      s->n[f] = gr_keypoints_detect (&s->frames[f], &kpp, s->kp[f], nk);
      ok = s->n[f] > 0 && gr_descriptors_compute (&s->frames[f], s->kp[f], s->n[f], &dp,
          desc, NULL, sc) == GR_OK;
    }
    if (ok && f > 0) {
      s->patches[f] = malloc ((size_t) s->n[f] * GR_PATCH_BYTES);
      ok = s->patches[f] && gr_descriptor_patches (&s->frames[f], sc, s->kp[f], s->n[f],
          s->patches[f]) == GR_OK;
    }
    gr_descriptor_scratch_clear (&local);
  }
  free (desc);
  /* matches: the truth's nearest keypoint, then 30% wrong ones */
  for (int p = 1; ok && p <= nfr; p++) {
    double t[9];
    truth (s, p, t);
    const int n0 = s->n[0], np = s->n[p];
    int32_t *pr = s->pairs[p] = malloc (sizeof (int32_t) * 4 * n0);
    int m = 0;
    for (int a = 0; pr && a < n0; a++) {
      double x, y;
      if (!gr_fit_apply (t, s->kp[0][a].x, s->kp[0][a].y, &x, &y))
        continue;
      int best = -1;
      double bd = 1.5 * 1.5;
      for (int b = 0; b < np; b++) {
        const double dx = s->kp[p][b].x - x, dy = s->kp[p][b].y - y;
        if (dx * dx + dy * dy < bd) {
          bd = dx * dx + dy * dy;
          best = b;
        }
      }
      if (best >= 0) {
        pr[2 * m] = a;
        pr[2 * m + 1] = best;
        m++;
      }
    }
    const int wrong = m * 3 / 7;
    for (int q = 0; pr && q < wrong; q++) {
      pr[2 * m] = (int32_t) (gr_synth_rng_next (&rng) % n0);
      pr[2 * m + 1] = (int32_t) (gr_synth_rng_next (&rng) % np);
      m++;
    }
    ok = pr != NULL;
    GrPairFitJob *j = &s->jobs[p - 1];
    j->kp = s->kp[p];
    j->patches = s->patches[p];
    j->pairs = pr;
    j->m = m;
    j->seed = 1000003u * 99 + p;
  }
  if (!ok)
    fprintf (stderr, "scene setup failed\n");
  return ok;
}

static GrPairFitResult *
results_new (const Scene *s)
{
  GrPairFitResult *r = calloc (s->nfr, sizeof *r);
  for (int j = 0; j < s->nfr; j++) {
    r[j].inlier = malloc (s->jobs[j].m > 0 ? s->jobs[j].m : 1);
    memset (r[j].inlier, 0xA5, s->jobs[j].m);     /* poison */
  }
  return r;
}

static void
results_free (const Scene *s, GrPairFitResult *r)
{
  for (int j = 0; j < s->nfr; j++)
    free (r[j].inlier);
  free (r);
}

static bool
results_equal (const Scene *s, const GrPairFitResult *a, const GrPairFitResult *b)
{
  for (int j = 0; j < s->nfr; j++) {
    if (a[j].flags != b[j].flags || a[j].inliers != b[j].inliers)
      return false;
    if (!(a[j].flags & GR_PAIRFIT_HOMOGRAPHY))
      continue;
    if (memcmp (a[j].h, b[j].h, sizeof a[j].h) || memcmp (&a[j].rms, &b[j].rms,
            sizeof (double)) || memcmp (a[j].inlier, b[j].inlier, s->jobs[j].m))
      return false;
  }
  return true;
}

/* The sequential reference: one pair after another, as featurematch's fit_pair did. */
static void
reference_fit (const Scene *s, const GrPairFitParams *pp, GrPairFitResult *out)
{
  for (int j = 0; j < s->nfr; j++) {
    const GrPairFitJob *jb = &s->jobs[j];
    GrPairFitResult *r = &out[j];
    const int m = jb->m;
    double *src = malloc (sizeof (double) * 4 * m), *dst = src + 2 * m;
    uint8_t *inl = calloc (m, 1);
    for (int i = 0; i < m; i++) {
      src[2 * i] = s->kp[0][jb->pairs[2 * i]].x;
      src[2 * i + 1] = s->kp[0][jb->pairs[2 * i]].y;
      dst[2 * i] = jb->kp[jb->pairs[2 * i + 1]].x;
      dst[2 * i + 1] = jb->kp[jb->pairs[2 * i + 1]].y;
    }
    r->flags = 0;
    r->inliers = 0;
    GrFitParams fp;
    gr_fit_params_init (&fp, GR_MODEL_HOMOGRAPHY);
    fp.threshold = pp->fit_threshold;
    fp.seed = jb->seed;
    GrFit fit;
    if (m >= pp->min_points && gr_fit_robust (src, dst, NULL, m, &fp, &fit, inl) ==
        GR_FIT_OK && fit.inliers >= pp->min_points) {
      memcpy (r->h, fit.h, sizeof r->h);
      r->rms = fit.rms;
      r->inliers = fit.inliers;
      r->flags = GR_PAIRFIT_HOMOGRAPHY;
      memcpy (r->inlier, inl, m);
      double *rs = malloc (sizeof (double) * 4 * m), *rd = rs + 2 * m;
      int *idx = malloc (sizeof (int) * m), nr = 0;
      for (int i = 0; i < m; i++) {
        if (!inl[i])
          continue;
        const double h0 = fit.h[6] * src[2 * i] + fit.h[7] * src[2 * i + 1] + fit.h[8];
        const double u = fit.h[0] * src[2 * i] + fit.h[1] * src[2 * i + 1] + fit.h[2];
        const double v = fit.h[3] * src[2 * i] + fit.h[4] * src[2 * i + 1] + fit.h[5];
        const double J[4] = { (fit.h[0] * h0 - u * fit.h[6]) / (h0 * h0),
          (fit.h[1] * h0 - u * fit.h[7]) / (h0 * h0),
          (fit.h[3] * h0 - v * fit.h[6]) / (h0 * h0),
          (fit.h[4] * h0 - v * fit.h[7]) / (h0 * h0)
        };
        const int e = jb->pairs[2 * i + 1];
        double x, y, ncc;
        if (!gr_fit_apply (fit.h, src[2 * i], src[2 * i + 1], &x, &y) ||
            !gr_patch_refine (&s->frames[0], &s->cur, (float) src[2 * i],
                (float) src[2 * i + 1], jb->patches + (size_t) e * GR_PATCH_BYTES,
                &jb->kp[e], J, &x, &y, &ncc) || ncc < pp->min_ncc)
          continue;
        rs[2 * nr] = src[2 * i];
        rs[2 * nr + 1] = src[2 * i + 1];
        rd[2 * nr] = x;
        rd[2 * nr + 1] = y;
        idx[nr++] = i;
      }
      uint8_t *rinl = calloc (nr > 0 ? nr : 1, 1);
      GrFit f2;
      fp.threshold = pp->refit_threshold;
      if (nr >= pp->min_points && gr_fit_robust (rs, rd, NULL, nr, &fp, &f2, rinl) ==
          GR_FIT_OK && f2.inliers >= pp->min_points) {
        memcpy (r->h, f2.h, sizeof r->h);
        r->rms = f2.rms;
        r->inliers = f2.inliers;
        r->flags |= GR_PAIRFIT_REFINED;
        memset (r->inlier, 0, m);
        for (int q = 0; q < nr; q++)
          r->inlier[idx[q]] = rinl[q];
      }
      free (rinl);
      free (rs);
      free (idx);
    }
    free (src);
    free (inl);
  }
}

/* worst distance between h and the truth over the part of the current frame that the
 * earlier frame sees */
static double
truth_error (const Scene *s, int p, const double h[9])
{
  double t[9], worst = 0;
  truth (s, p, t);
  for (int y = 0; y < s->h; y += 4)
    for (int x = 0; x < s->w; x += 4) {
      double u, v, eu, ev;
      if (!gr_fit_apply (t, x, y, &u, &v) || u < 0 || v < 0 || u > s->w - 1 ||
          v > s->h - 1)
        continue;
      if (!gr_fit_apply (h, x, y, &eu, &ev))
        return INFINITY;
      worst = fmax (worst, hypot (eu - u, ev - v));
    }
  return worst;
}

static int
run_bench (int nfr, int nk, int w, int h)
{
  Scene s;
  if (!scene_make (&s, w, h, nfr, nk, 0.1, 4242)) {
    scene_free (&s);
    return 1;
  }
  GrPairFitParams pp;
  gr_pairfit_params_init (&pp);
  long matches = 0;
  for (int j = 0; j < nfr; j++)
    matches += s.jobs[j].m;
  GrPairFitResult *r = results_new (&s);
  /* GEOREG_BENCH_REPS: runs of each thread count (default 9) */
  const char *re = getenv ("GEOREG_BENCH_REPS");
  const int REPS = re && atoi (re) > 0 && atoi (re) <= 1000 ? atoi (re) : 9;
  const int threads[2] = { 1, 2 };
  double med[2], cpu[2], ph[2][3];
  GrPairFitStats st = { 0 };
  for (int t = 0; t < 2; t++) {
    double *tot = calloc (5 * (size_t) REPS, sizeof (double)), *ct = tot + REPS,
        *f1 = ct + REPS, *rf = f1 + REPS, *f2 = rf + REPS;
    pp.threads = threads[t];
    for (int rep = 0; rep < REPS; rep++) {
      const double t0 = omp_get_wtime (), c0 = (double) clock () / CLOCKS_PER_SEC;
      gr_pairfit_run (&s.frames[0], &s.cur, s.kp[0], s.jobs, nfr, &pp, r, &st);
      tot[rep] = (omp_get_wtime () - t0) * 1e3;
      ct[rep] = ((double) clock () / CLOCKS_PER_SEC - c0) * 1e3;
      f1[rep] = st.fit_ms;
      rf[rep] = st.refine_ms;
      f2[rep] = st.refit_ms;
    }
    med[t] = median (tot, REPS);
    cpu[t] = median (ct, REPS);
    ph[t][0] = median (f1, REPS);
    ph[t][1] = median (rf, REPS);
    ph[t][2] = median (f2, REPS);
    free (tot);
  }
  /* accuracy against the truth over each pair's overlap (not the fit's residual) */
  double worst = 0, sum = 0;
  int refined = 0, fitted = 0;
  for (int j = 0; j < nfr; j++) {
    if (!(r[j].flags & GR_PAIRFIT_HOMOGRAPHY))
      continue;
    const double e = truth_error (&s, j + 1, r[j].h);
    worst = fmax (worst, e);
    sum += e;
    fitted++;
    refined += (r[j].flags & GR_PAIRFIT_REFINED) != 0;
  }
  printf ("pairfit: %dx%d, %d earlier frames, %d keypoints, %ld matches (30%% wrong); "
      "%d/%d pairs refined; %" PRId64 " refinements tried, %" PRId64 " kept\n", w, h,
      nfr, s.n[0], matches, refined, nfr, st.refinements, st.refined);
  printf ("accuracy vs truth over the overlap: worst %.4f px, mean of the pairs' worst "
      "%.4f px\n", worst, fitted ? sum / fitted : NAN);
  /* the process CPU time beside the wall time: on a shared machine the wall time
   * also counts the other jobs */
  printf ("| threads | wall ms a frame (median of %d) | CPU ms a frame | first fits | "
      "refinement | refits |\n| --- | --- | --- | --- | --- | --- |\n", REPS);
  for (int t = 0; t < 2; t++)
    printf ("| %d | %.2f | %.2f | %.2f | %.2f | %.2f |\n", threads[t], med[t], cpu[t],
        ph[t][0], ph[t][1], ph[t][2]);
  results_free (&s, r);
  scene_free (&s);
  return 0;
}

int
main (int argc, char **argv)
{
  if (argc > 1 && strcmp (argv[1], "--bench") == 0)
    return run_bench (argc > 2 ? atoi (argv[2]) : 8, argc > 3 ? atoi (argv[3]) : 500,
        argc > 4 ? atoi (argv[4]) : 3840, argc > 5 ? atoi (argv[5]) : 2160);

  Scene s;
  if (!scene_make (&s, 320, 240, 6, 300, 0.3, 20261125)) {
    scene_free (&s);
    return 1;
  }
  GrPairFitParams pp;
  gr_pairfit_params_init (&pp);
  GrPairFitResult *ref = results_new (&s), *one = results_new (&s);
  reference_fit (&s, &pp, ref);
  pp.threads = 1;
  CHECK (gr_pairfit_run (&s.frames[0], &s.cur, s.kp[0], s.jobs, s.nfr, &pp, one, NULL) == GR_OK,
      "1 thread");
  CHECK (results_equal (&s, ref, one), "1 thread differs from the sequential reference");
  const int tc[3] = { 2, 3, 8 };
  for (int t = 0; t < 3; t++) {
    GrPairFitResult *r = results_new (&s);
    pp.threads = tc[t];
    CHECK (gr_pairfit_run (&s.frames[0], &s.cur, s.kp[0], s.jobs, s.nfr, &pp, r, NULL) ==
        GR_OK, "%d threads", tc[t]);
    CHECK (results_equal (&s, one, r), "%d threads differ from 1 thread", tc[t]);
    results_free (&s, r);
  }
  for (int j = 0; j < s.nfr; j++) {
    const double e = (one[j].flags & GR_PAIRFIT_HOMOGRAPHY) ?
        truth_error (&s, j + 1, one[j].h) : INFINITY;
    printf ("pair %d: %d matches, %d inliers, flags %u, worst error vs truth %.3f px\n",
        j, s.jobs[j].m, one[j].inliers, one[j].flags, e);
    CHECK (one[j].flags == (GR_PAIRFIT_HOMOGRAPHY | GR_PAIRFIT_REFINED),
        "pair %d not refined (flags %u)", j, one[j].flags);
    CHECK (e < 0.5, "pair %d: %.3f px from the truth", j, e);
    /* the wrong pairs (the last 30%) must not be inliers */
    int bad = 0;
    const int wrong0 = s.jobs[j].m - (s.jobs[j].m * 3 / 10);
    for (int i = wrong0 + 1; i < s.jobs[j].m; i++)
      bad += one[j].inlier[i] != 0;
    CHECK (bad <= (s.jobs[j].m - wrong0) / 20, "pair %d: %d wrong pairs kept", j, bad);
  }

  /* bad arguments */
  pp.threads = 0;
  CHECK (gr_pairfit_run (&s.frames[0], &s.cur, s.kp[0], NULL, 2, &pp, one, NULL) ==
      GR_ERR_INVALID, "NULL jobs");
  GrPairFitJob badjob = s.jobs[0];
  badjob.m = -1;
  CHECK (gr_pairfit_run (&s.frames[0], &s.cur, s.kp[0], &badjob, 1, &pp, one, NULL) ==
      GR_ERR_INVALID, "negative match count");
  CHECK (gr_pairfit_run (&s.frames[0], NULL, s.kp[0], s.jobs, 1, &pp, one, NULL) ==
      GR_ERR_INVALID, "no scratch");
  CHECK (gr_pairfit_run (NULL, NULL, NULL, NULL, 0, &pp, NULL, NULL) == GR_OK, "no pairs");
  /* a refinement through a non-finite Jacobian (a degenerate first fit) gives no
   * position and reads nothing out of the patch */
  {
    const double jn[4] = { NAN, 0, 0, 1 }, ji[4] = { INFINITY, 0, 0, 1 };
    double x = s.kp[1][0].x, y = s.kp[1][0].y, ncc;
    CHECK (!gr_patch_refine (&s.frames[0], &s.cur, s.kp[0][0].x, s.kp[0][0].y,
            s.patches[1], &s.kp[1][0], jn, &x, &y, &ncc), "NaN Jacobian refined");
    CHECK (!gr_patch_refine (&s.frames[0], &s.cur, s.kp[0][0].x, s.kp[0][0].y,
            s.patches[1], &s.kp[1][0], ji, &x, &y, &ncc), "infinite Jacobian refined");
  }

  results_free (&s, ref);
  results_free (&s, one);
  scene_free (&s);
  return CHECK_DONE ();
}
