/* Matcher (CPU backend) against OpenCV's BFMatcher (NORM_L2) knnMatch(k = 2) with
 * Lowe's ratio test on the same descriptors: random, survey-like and, when
 * GEOREG_DATA holds aukerman.png, real descriptors of frames cut from the
 * orthomosaic.  Identical except where OpenCV's float32 distances cannot decide: a
 * differing entry must be a float32 near-tie (the two smallest float64 distances, or
 * d1 / d2 and the ratio, within 1e-5 relative).  OpenCV is a test-only dependency.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/features2d.hpp>

#include "matcher.h"
#include "matcher_reference.h"
#include "realdesc.h"

static int failures = 0;
#define EXPECT(cond, ...) do { if (!(cond)) { failures++; \
      std::fprintf (stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      std::fprintf (stderr, __VA_ARGS__); std::fputc ('\n', stderr); } } while (0)

/* the m x n matrix as OpenCV computes it */
static std::vector<int32_t>
opencv_matrix (const float *desc, int k, const int64_t *off, int m, float ratio)
{
  const int64_t n = off[m];
  std::vector<int32_t> out ((size_t) (m * n), -1);
  cv::Mat all (n, k, CV_32F, (void *) desc);
  cv::BFMatcher bf (cv::NORM_L2, false);
  for (int i = 0; i < m; i++) {
    const int ni = (int) (off[i + 1] - off[i]);
    if (ni < 2)
      continue;
    cv::Mat train (ni, k, CV_32F, (void *) (desc + off[i] * k));
    std::vector<std::vector<cv::DMatch>> knn;
    bf.knnMatch (all, train, knn, 2);
    for (int64_t j = 0; j < n; j++) {
      if (j >= off[i] && j < off[i + 1])
        continue;
      const std::vector<cv::DMatch> &mm = knn[j];
      if (mm.size () == 2 && mm[0].distance < ratio * mm[1].distance)
        out[i * n + j] = mm[0].trainIdx;
    }
  }
  return out;
}

static void
compare (const char *what, const float *desc, int k, const int64_t *off, int m,
    float ratio)
{
  char err[256] = "";
  GrStatus st;
  GrMatcher *mt = gr_matcher_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
  const int64_t n = off[m];
  std::vector<int32_t> ours ((size_t) (m * n), 0x7B7B7B7B);
  EXPECT (gr_matcher_match_all (mt, desc, k, off, m, ratio, ours.data (), NULL, err,
          sizeof err) == GR_OK, "%s", err);
  std::vector<int32_t> cv = opencv_matrix (desc, k, off, m, ratio);
  int64_t differ = 0, unexplained = 0, accepted = 0;
  for (int i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      const int32_t a = ours[i * n + j], b = cv[i * n + j];
      accepted += a >= 0;
      if (a == b)
        continue;
      differ++;
      /* a float32 near-tie? */
      RefEntry e = ref_entry (desc + j * k, desc + off[i] * k, off[i + 1] - off[i], k,
          ratio);
      const double d1 = std::sqrt (e.d1), d2 = std::sqrt (e.d2);
      const bool tie = d2 - d1 <= 1e-5 * d2 || std::fabs (d1 / d2 - ratio) <= 1e-5;
      if (!tie) {
        if (unexplained < 5)
          std::fprintf (stderr, "  %s: image %d descriptor %lld: ours %d, OpenCV %d "
              "(d1 %.9g d2 %.9g)\n", what, i, (long long) j, a, b, d1, d2);
        unexplained++;
      }
    }
  std::printf ("%-28s k=%3d m=%3d n=%6lld ratio %.2f: %lld matches, %lld differ from "
      "OpenCV (%lld not float32 near-ties)\n", what, k, m, (long long) n, ratio,
      (long long) accepted, (long long) differ, (long long) unexplained);
  EXPECT (unexplained == 0, "%s: %lld entries differ from OpenCV outside near-ties",
      what, (long long) unexplained);
  EXPECT (accepted > 0, "%s: no match at all", what);
  gr_matcher_free (mt);
}

int
main ()
{
  uint64_t rng = 0xABCDEF12345ull;
  const int sizes[] = { 120, 0, 1, 2, 77, 150, 64, 99, 140, 31 };
  const int m = (int) (sizeof sizes / sizeof sizes[0]);
  std::vector<int64_t> off (m + 1, 0);
  for (int i = 0; i < m; i++)
    off[i + 1] = off[i] + sizes[i];
  const int ks[] = { 32, 64 };
  for (int k : ks) {
    std::vector<float> desc ((size_t) (off[m] * k));
    for (float &v : desc)
      v = (float) mref_gauss (&rng);
    compare ("gaussian", desc.data (), k, off.data (), m, 0.9f);
    mref_survey (desc.data (), off.data (), m, k, 0.1, 0.6, 1, &rng);
    compare ("survey, unit rows", desc.data (), k, off.data (), m, 0.8f);
    compare ("survey, ratio 0.6", desc.data (), k, off.data (), m, 0.6f);
    RealDesc r;
    char why[256];
    if (realdesc_load (&r, k, 12, why, sizeof why)) {
      compare ("real (aukerman frames)", r.desc, r.k, r.off, r.m, 0.8f);
      realdesc_clear (&r);
    } else {
      std::printf ("real descriptors: skipped: %s\n", why);
    }
  }
  if (failures)
    std::fprintf (stderr, "%d check(s) failed\n", failures);
  else
    std::printf ("all checks passed\n");
  return failures ? 1 : 0;
}
