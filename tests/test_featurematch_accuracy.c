/* featurematch accuracy on the real orthomosaic (suite data; GEOREG_DATA must hold
 * aukerman.png, else skipped): a synthetic survey of 30 frames along three flight
 * lines (headings 0, 180 and a camera turned by 90 degrees; +-4 degree and +-3% jitter,
 * noise) with known frame-to-control homographies goes through the element; every
 * reported match is checked against the truth (within 2 px), and every reported
 * homography of a truly overlapping pair (at least 5% of the frame seen by the other)
 * over their overlap (within 2 px everywhere), and pairs overlapping by 40% or more
 * must get one.  Floors set from measurement (see
 * docs/featurematch.md).  GEOREG_FM_BACKEND=cuda runs the element on CUDA.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <gst/check/gstharness.h>
#include <gst/gst.h>

#include "featurematch-meta.h"
#include "fit.h"
#include "realdesc.h"

#define NFR 30
#define MATCH_FLOOR 0.85        /* share of matches within 2 px (measured 0.879) */
#define HOMOG_FLOOR 0.90        /* share of homographies within 2 px (issue: 90%) */
#define RECALL_FLOOR 0.80       /* overlapping pairs (>= 40%) given a homography */
#define MEAN_CEIL 0.25          /* px: mean over the reported homographies of their worst
                                   error over the overlap (measured 0.198 before the
                                   exact-Jacobian refinement, 0.186 with it) */

static double
overlap_share (const Survey *s, int a, int b)
{
  double t[9];
  survey_pair_truth (s, a, b, t);
  int in = 0, all = 0;
  for (int y = 0; y < SURVEY_H; y += 4)
    for (int x = 0; x < SURVEY_W; x += 4) {
      double u, v;
      all++;
      if (gr_fit_apply (t, x, y, &u, &v) && u >= 0 && v >= 0 && u <= SURVEY_W - 1 &&
          v <= SURVEY_H - 1)
        in++;
    }
  return (double) in / all;
}

static double
homography_error (const Survey *s, const double h[9], int a, int b)
{
  double t[9];
  survey_pair_truth (s, a, b, t);
  double worst = 0;
  for (int y = 0; y < SURVEY_H; y += 2)
    for (int x = 0; x < SURVEY_W; x += 2) {
      double u, v, eu, ev;
      if (!gr_fit_apply (t, x, y, &u, &v) || u < 0 || v < 0 || u > SURVEY_W - 1 ||
          v > SURVEY_H - 1)
        continue;
      if (!gr_fit_apply (h, x, y, &eu, &ev))
        return INFINITY;
      const double e = hypot (eu - u, ev - v);
      if (e > worst)
        worst = e;
    }
  return worst;
}

int
main (int argc, char **argv)
{
  gst_init (&argc, &argv);
  Survey s;
  char why[256];
  if (!survey_make (&s, NFR, why, sizeof why)) {
    printf ("SKIP: %s\n", why);
    return 77;
  }
  const char *backend = getenv ("GEOREG_FM_BACKEND");
  if (!backend || !*backend)
    backend = "cpu";
  if (!strcmp (backend, "cuda") && gr_cuda_device_count () <= 0) {
    printf ("SKIP: GEOREG_FM_BACKEND=cuda and no usable CUDA device\n");
    survey_clear (&s);
    return 77;
  }
  gchar *desc = g_strdup_printf ("featurematch backend=%s", backend);
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGBA,width=256,height=192,"
      "framerate=1/1");
  GstFeatureMatchMeta metas[NFR];
  GstBuffer *outs[NFR];
  gint64 t0 = g_get_monotonic_time ();
  for (int i = 0; i < NFR; i++) {
    GstBuffer *b = gst_buffer_new_allocate (NULL, SURVEY_W * SURVEY_H * 4, NULL);
    GstMapInfo map;
    gst_buffer_map (b, &map, GST_MAP_WRITE);
    const GrPlaneF *f = &s.frames[i];
    for (int p = 0; p < SURVEY_W * SURVEY_H; p++) {
      const guint8 v = (guint8) CLAMP (floorf (f->data[p] + 0.5f), 0, 255);
      map.data[4 * p] = map.data[4 * p + 1] = map.data[4 * p + 2] = v;
      map.data[4 * p + 3] = f->mask && !f->mask[p] ? 0 : 255;
    }
    gst_buffer_unmap (b, &map);
    outs[i] = gst_harness_push_and_pull (h, b);
    GstFeatureMatchMeta *m = outs[i] ? gst_buffer_get_feature_match_meta (outs[i]) : NULL;
    if (!m) {
      printf ("FAIL: frame %d came back without a meta\n", i);
      return 1;
    }
    metas[i] = *m;
  }
  const double secs = (g_get_monotonic_time () - t0) / 1e6;

  long matches = 0, good = 0;
  int overl = 0, overl_h = 0, reported = 0, reported_good = 0, false_pairs = 0;
  double worst_good = 0, err_sum = 0;
  for (int a = 1; a < NFR; a++) {
    const GstFeatureMatchMeta *m = &metas[a];
    for (guint p = 0; p < m->n_pairs; p++) {
      const GstFeatureMatchPair *pr = &m->pairs[p];
      const int b = (int) pr->frame;
      double t[9];
      survey_pair_truth (&s, a, b, t);
      const GstFeatureMatchMeta *mb = &metas[b];
      for (guint q = 0; q < pr->matches; q++) {
        const float *ka = m->keypoints + 2 * pr->pairs[2 * q];
        const float *kb = mb->keypoints + 2 * pr->pairs[2 * q + 1];
        double u, v;
        gr_fit_apply (t, ka[0], ka[1], &u, &v);
        matches++;
        good += hypot (u - kb[0], v - kb[1]) <= 2.0;
      }
      const double ov = overlap_share (&s, a, b);
      if (ov < 0.05)
        false_pairs++;
      if ((pr->flags & GST_FEATURE_MATCH_PAIR_HOMOGRAPHY) && ov >= 0.05) {
        const double e = homography_error (&s, pr->h, a, b);
        reported++;
        reported_good += e <= 2.0;
        err_sum += e;
        if (e <= 2.0 && e > worst_good)
          worst_good = e;
        printf ("pair %2d-%2d overlap %3.0f%%: %3u matches, %3u inliers, error %.3f px%s\n",
            a, b, 100 * ov, pr->matches, pr->inliers, e, e <= 2.0 ? "" : "  > 2 px");
      }
    }
    for (int b = 0; b < a; b++)
      if (overlap_share (&s, a, b) >= 0.40) {
        overl++;
        for (guint p = 0; p < m->n_pairs; p++)
          if ((int) m->pairs[p].frame == b &&
              (m->pairs[p].flags & GST_FEATURE_MATCH_PAIR_HOMOGRAPHY))
            overl_h++;
      }
  }
  const double share = matches ? (double) good / matches : 0;
  const double hshare = reported ? (double) reported_good / reported : 0;
  const double recall = overl ? (double) overl_h / overl : 0;
  printf ("backend %s, %d frames in %.2f s\n", backend, NFR, secs);
  printf ("matches within 2 px: %ld of %ld (%.1f%%), floor %.0f%%\n", good, matches,
      100 * share, 100 * MATCH_FLOOR);
  printf ("homographies within 2 px over the overlap: %d of %d (%.1f%%), floor %.0f%%\n",
      reported_good, reported, 100 * hshare, 100 * HOMOG_FLOOR);
  printf ("pairs overlapping >= 40%% with a homography: %d of %d (%.1f%%), floor %.0f%%\n",
      overl_h, overl, 100 * recall, 100 * RECALL_FLOOR);
  printf ("pairs reported without overlap: %d\n", false_pairs);
  const double err_mean = reported ? err_sum / reported : INFINITY;
  printf ("homography error over the overlap, mean of the pairs: %.4f px, ceiling %.2f\n",
      err_mean, MEAN_CEIL);
  int fail = 0;
  if (share < MATCH_FLOOR || hshare < HOMOG_FLOOR || recall < RECALL_FLOOR ||
      !(err_mean <= MEAN_CEIL) ||
      reported < 20 || false_pairs > 0) {
    printf ("FAIL\n");
    fail = 1;
  }
  for (int i = 0; i < NFR; i++)
    gst_buffer_unref (outs[i]);
  gst_harness_teardown (h);
  survey_clear (&s);
  return fail;
}
