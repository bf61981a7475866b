/* Pair pruning of the batch matcher (matcher.h, issue 16), CPU backend:
 *  - the pruned sparse form equals the full sparse list restricted to the listed
 *    pairs, entry for entry (random, asymmetric lists; runs crossing the image itself;
 *    small slabs and chunks; every pair settled exactly), over ranges of a split by
 *    the pruned work too, and it computes fewer candidates;
 *  - footprints: distances of known shapes (gaps along an axis and across a corner,
 *    one inside another, crossed and degenerate quadrilaterals), and the pair list of
 *    random rotated footprints against a brute-force reference that measures the
 *    distance by sampling the boundaries (independent of the sweep and of the
 *    edge-to-edge distance); unknown footprints pair with every image;
 *  - bad pair lists and arguments are refused.
 * The CUDA and NCCL paths are compared with this one in test_matcher_pairs_gpu and
 * test_matcher_nccl_gpu.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matcher.h"
#include "matcher_pairs.h"
#include "matcher_batch_gen.h"
#include "matcher_pairs_gen.h"
#include "test_check.h"

/* pruned (over the ranges of a split of `parts`) == the full list restricted to P;
 * returns the pruned count */
static int64_t
check_pruned (GrMatcher *mt, const float *d, int k, const int64_t *off, int m,
    const GrMatcherPairs *P, const GrMatch *ref, int64_t nref, int parts, const char *what,
    GrMatchStats *stats)
{
  char err[256] = "";
  GrMatch *want = malloc (sizeof (GrMatch) * (size_t) (nref + 1));
  const int64_t nw = restrict_to_pairs (ref, nref, off, m, P, want);
  int *b = malloc (sizeof (int) * (parts + 1));
  gr_matcher_split_rows_pairs (off, m, P, parts, b);
  CHECK (b[0] == 0 && b[parts] == m, "%s: split ends", what);
  int64_t got = 0;
  int same = 1;
  for (int p = 0; p < parts; p++) {
    const GrMatch *part;
    int64_t np = -1;
    CHECK (b[p] <= b[p + 1], "%s: split nondecreasing", what);
    GrStatus s = gr_matcher_match_rows_sparse_pairs (mt, d, k, off, m, b[p], b[p + 1], P,
        0.8f, &part, &np, parts == 1 ? stats : NULL, err, sizeof err);
    CHECK (s == GR_OK, "%s: rows [%d, %d): %s", what, b[p], b[p + 1], err);
    if (s != GR_OK)
      break;
    same = same && got + np <= nw && memcmp (part, want + got, sizeof (GrMatch) * np) == 0;
    got += np;
  }
  CHECK (same && got == nw, "%s, %d parts: %lld pruned entries %s the full list's %lld "
      "listed ones", what, parts, (long long) got, same ? "vs" : "DIFFER from",
      (long long) nw);
  free (b);
  free (want);
  return got;
}

static void
test_pruned_equals_restricted (void)
{
  const int ks[2] = { 32, 64 };
  for (int ki = 0; ki < 2; ki++) {
    const int k = ks[ki], m = 19;
    int64_t *off;
    float *d = mbg_batch (m, 50, 30, k, 11 + ki, &off);
    for (int mode = 0; mode < (ki == 0 ? 3 : 2); mode++) {
      GrStatus st;
      char err[256] = "";
      GrMatcher *mt = gr_matcher_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
      const unsigned dbg[3] = { 0, GR_MATCHER_DEBUG_SMALL_SLAB,
        GR_MATCHER_DEBUG_FORCE_EXACT | GR_MATCHER_DEBUG_SMALL_SLAB };
      gr_matcher_set_debug (mt, dbg[mode]);
      const GrMatch *all;
      int64_t na = 0;
      GrMatchStats full;
      st = gr_matcher_match_all_sparse (mt, d, k, off, m, 0.8f, &all, &na, &full, err,
          sizeof err);
      CHECK (st == GR_OK && na > 0, "full sparse: %s", err);
      GrMatch *ref = malloc (sizeof (GrMatch) * (na + 1));
      memcpy (ref, all, sizeof (GrMatch) * na);
      for (int pi = 0; pi < 3; pi++) {
        const double dens[3] = { 0.3, 0.7, 1.0 };
        GrMatcherPairs P = random_pairs (m, dens[pi], 100 * ki + 10 * mode + pi);
        char what[96];
        snprintf (what, sizeof what, "k %d, debug %u, density %.1f", k, dbg[mode],
            dens[pi]);
        GrMatchStats ps;
        const int64_t np = check_pruned (mt, d, k, off, m, &P, ref, na, 1, what, &ps);
        check_pruned (mt, d, k, off, m, &P, ref, na, 4, what, NULL);
        CHECK (pi == 2 || (ps.candidates < full.candidates && ps.pairs < full.pairs),
            "%s: %lld candidates pruned vs %lld", what, (long long) ps.candidates,
            (long long) full.candidates);
        if (mode == 0)
          printf ("%s: %lld of %lld entries, %lld of %lld candidates\n", what,
              (long long) np, (long long) na, (long long) ps.candidates,
              (long long) full.candidates);
        gr_matcher_pairs_clear (&P);
      }
      /* an empty list: nothing; NULL: the full list */
      GrMatcherPairs none = { m, calloc ((size_t) m + 1, sizeof (int64_t)), NULL };
      const GrMatch *x;
      int64_t nx = -1;
      st = gr_matcher_match_rows_sparse_pairs (mt, d, k, off, m, 0, m, &none, 0.8f, &x,
          &nx, NULL, err, sizeof err);
      CHECK (st == GR_OK && nx == 0, "no pairs: %lld entries (%s)", (long long) nx, err);
      st = gr_matcher_match_rows_sparse_pairs (mt, d, k, off, m, 0, m, NULL, 0.8f, &x,
          &nx, NULL, err, sizeof err);
      CHECK (st == GR_OK && nx == na && memcmp (x, ref, sizeof (GrMatch) * na) == 0,
          "NULL pairs == the full list");
      /* bad lists */
      GrMatcherPairs bad = random_pairs (m, 0.5, 99);
      bad.m = m - 1;
      CHECK (gr_matcher_match_rows_sparse_pairs (mt, d, k, off, m, 0, m, &bad, 0.8f, &x,
              &nx, NULL, err, sizeof err) == GR_ERR_INVALID, "wrong m refused");
      bad.m = m;
      int row = 0;                              /* a row of 2 or more */
      while (bad.start[row + 1] - bad.start[row] < 2)
        row++;
      const int64_t at = bad.start[row];
      const int32_t keep = bad.images[at];
      bad.images[at] = bad.images[at + 1];
      CHECK (gr_matcher_match_rows_sparse_pairs (mt, d, k, off, m, 0, m, &bad, 0.8f, &x,
              &nx, NULL, err, sizeof err) == GR_ERR_INVALID, "repeated image refused");
      bad.images[at] = m;
      CHECK (gr_matcher_pairs_check (&bad, m, err, sizeof err) == GR_ERR_INVALID,
          "image out of range refused");
      bad.images[at] = keep;
      CHECK (gr_matcher_pairs_check (&bad, m, err, sizeof err) == GR_OK, "restored");
      bad.start[row + 1] = bad.start[row] - 1;
      CHECK (gr_matcher_pairs_check (&bad, m, err, sizeof err) == GR_ERR_INVALID,
          "decreasing start refused");
      gr_matcher_pairs_clear (&bad);
      free (none.start);
      free (ref);
      gr_matcher_free (mt);
    }
    free (d);
    free (off);
  }
}

/* a w x h rectangle centred at (cx, cy), turned by a */
static void
rect (double cx, double cy, double w, double h, double a, double c[8])
{
  const double u[4] = { -0.5, 0.5, 0.5, -0.5 }, v[4] = { -0.5, -0.5, 0.5, 0.5 };
  for (int i = 0; i < 4; i++) {
    const double x = u[i] * w, y = v[i] * h;
    c[2 * i] = cx + x * cos (a) - y * sin (a);
    c[2 * i + 1] = cy + x * sin (a) + y * cos (a);
  }
}

/* reference distance between two convex quadrilaterals (corners in order): 0 when a
 * sampled point of one lies inside the other, else the smallest distance between
 * boundary samples (an over-estimate by at most one sample step) */
static bool
ref_inside (double x, double y, const double *q)
{
  int pos = 0, neg = 0;
  for (int i = 0; i < 4; i++) {
    const double *a = q + 2 * i, *b = q + 2 * ((i + 1) % 4);
    const double c = (b[0] - a[0]) * (y - a[1]) - (b[1] - a[1]) * (x - a[0]);
    pos += c >= 0;
    neg += c <= 0;
  }
  return pos == 4 || neg == 4;
}

/* corners' bounding-box gap: a lower bound of the distance */
static double
box_gap (const double *p, const double *q)
{
  double px0 = INFINITY, px1 = -INFINITY, py0 = INFINITY, py1 = -INFINITY;
  double qx0 = INFINITY, qx1 = -INFINITY, qy0 = INFINITY, qy1 = -INFINITY;
  for (int i = 0; i < 4; i++) {
    px0 = fmin (px0, p[2 * i]); px1 = fmax (px1, p[2 * i]);
    py0 = fmin (py0, p[2 * i + 1]); py1 = fmax (py1, p[2 * i + 1]);
    qx0 = fmin (qx0, q[2 * i]); qx1 = fmax (qx1, q[2 * i]);
    qy0 = fmin (qy0, q[2 * i + 1]); qy1 = fmax (qy1, q[2 * i + 1]);
  }
  return hypot (fmax (0, fmax (qx0 - px1, px0 - qx1)), fmax (0, fmax (qy0 - py1, py0 - qy1)));
}

static double
ref_distance (const double *p, const double *q, double *stepmax)
{
  enum { S = 100 };
  double pp[4 * S][2], qq[4 * S][2];
  *stepmax = 0;
  for (int i = 0; i < 4; i++) {
    const double *p0 = p + 2 * i, *p1 = p + 2 * ((i + 1) % 4);
    const double *q0 = q + 2 * i, *q1 = q + 2 * ((i + 1) % 4);
    *stepmax = fmax (*stepmax, fmax (hypot (p1[0] - p0[0], p1[1] - p0[1]),
            hypot (q1[0] - q0[0], q1[1] - q0[1])) / S);
    for (int s = 0; s < S; s++) {
      const double t = (double) s / S;
      pp[i * S + s][0] = p0[0] + t * (p1[0] - p0[0]);
      pp[i * S + s][1] = p0[1] + t * (p1[1] - p0[1]);
      qq[i * S + s][0] = q0[0] + t * (q1[0] - q0[0]);
      qq[i * S + s][1] = q0[1] + t * (q1[1] - q0[1]);
    }
  }
  for (int a = 0; a < 4 * S; a++)
    if (ref_inside (pp[a][0], pp[a][1], q) || ref_inside (qq[a][0], qq[a][1], p))
      return 0;
  double best = INFINITY;
  for (int a = 0; a < 4 * S; a++)
    for (int b = 0; b < 4 * S; b++)
      best = fmin (best, hypot (pp[a][0] - qq[b][0], pp[a][1] - qq[b][1]));
  return best;
}

static void
test_footprints (void)
{
  double a[8], b[8];
  /* gap of 10 along x; across a corner (5, 5) apart: sqrt (50) */
  rect (0, 0, 20, 10, 0, a);
  rect (30, 0, 20, 10, 0, b);
  CHECK (fabs (gr_matcher_footprint_distance (a, b) - 10) < 1e-12, "gap 10: %g",
      gr_matcher_footprint_distance (a, b));
  rect (25, 15, 20, 10, 0, b);
  CHECK (fabs (gr_matcher_footprint_distance (a, b) - sqrt (50)) < 1e-12,
      "corner gap: %g", gr_matcher_footprint_distance (a, b));
  rect (1, 1, 4, 3, 0.3, b);                     /* inside a */
  CHECK (gr_matcher_footprint_distance (a, b) == 0 &&
      gr_matcher_footprint_distance (b, a) == 0, "one inside the other");
  rect (10, 5, 4, 4, 0.785398, b);               /* overlapping a's corner */
  CHECK (gr_matcher_footprint_distance (a, b) == 0, "overlap");
  /* a crossed quadrilateral (corners out of order) counts as its hull */
  double crossed[8] = { 30, -5, 50, 5, 50, -5, 30, 5 };
  CHECK (fabs (gr_matcher_footprint_distance (a, crossed) - 20) < 1e-12, "crossed: %g",
      gr_matcher_footprint_distance (a, crossed));
  /* degenerate: a segment and a point */
  double seg[8] = { 20, 20, 20, 30, 20, 25, 20, 20 }, pt[8] = { 10, 12, 10, 12, 10, 12,
    10, 12 };
  CHECK (fabs (gr_matcher_footprint_distance (a, seg) - hypot (10, 15)) < 1e-12,
      "segment: %g", gr_matcher_footprint_distance (a, seg));
  CHECK (fabs (gr_matcher_footprint_distance (a, pt) - 7) < 1e-12, "point: %g",
      gr_matcher_footprint_distance (a, pt));
  CHECK (fabs (gr_matcher_footprint_distance (seg, pt) - hypot (10, 8)) < 1e-12,
      "segment to point: %g", gr_matcher_footprint_distance (seg, pt));
  double nan_fp[8] = { NAN, 0, 1, 0, 1, 1, 0, 1 };
  CHECK (isnan (gr_matcher_footprint_distance (a, nan_fp)), "unknown: NAN");

  /* random footprints of a survey area: the list against the sampled reference */
  enum { M = 60 };
  double *fp = malloc (sizeof (double) * 8 * M);
  uint64_t s = 12345;
  for (int i = 0; i < M; i++) {
    const double cx = 400 * (mbg_unit (&s) + 1), cy = 150 * (mbg_unit (&s) + 1);
    rect (cx, cy, 60 + 30 * mbg_unit (&s), 40 + 20 * mbg_unit (&s), 3.2 * mbg_unit (&s),
        fp + 8 * i);
    /* a perspective-like taper: one side shortened towards its centre */
    for (int t = 0; t < 2; t++) {
      fp[8 * i + 2 * t] += 0.2 * (fp[8 * i + 2 * (1 - t)] - fp[8 * i + 2 * t]);
      fp[8 * i + 2 * t + 1] += 0.2 * (fp[8 * i + 2 * (1 - t) + 1] - fp[8 * i + 2 * t + 1]);
    }
  }
  const double margin = 15;
  GrMatcherPairs P;
  char err[256] = "";
  CHECK (gr_matcher_pairs_from_footprints (fp, M, margin, &P, err, sizeof err) == GR_OK,
      "footprints: %s", err);
  CHECK (gr_matcher_pairs_check (&P, M, err, sizeof err) == GR_OK, "valid list: %s", err);
  int wrong = 0, npairs = 0, unsure = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < M; j++) {
      const bool in = listed (&P, i, j);
      if (i == j) {
        wrong += in;
        continue;
      }
      double stepmax = 0;
      const double g = box_gap (fp + 8 * i, fp + 8 * j);
      const double r = g > margin ? g : ref_distance (fp + 8 * i, fp + 8 * j, &stepmax);
      npairs += in;
      /* the sampled distance over-estimates by at most one sample step */
      if (r - stepmax > margin + 1e-9)
        wrong += in;
      else if (r < margin - 1e-9)
        wrong += !in;
      else
        unsure++;
      wrong += in != listed (&P, j, i);
    }
  CHECK (wrong == 0 && npairs > 0 && npairs < M * (M - 1), "random footprints: %d "
      "listed pairs, %d wrong against the sampled reference (%d too close to call)",
      npairs, wrong, unsure);
  printf ("footprints: %d of %d ordered pairs within %.0f m, none wrong (%d too close to "
      "call)\n", npairs, M * (M - 1), margin, unsure);
  gr_matcher_pairs_clear (&P);
  /* unknown footprints pair with everything, themselves excluded */
  fp[8 * 5] = NAN;
  fp[8 * 9 + 3] = INFINITY;
  CHECK (gr_matcher_pairs_from_footprints (fp, M, margin, &P, err, sizeof err) == GR_OK,
      "footprints with unknowns");
  CHECK (P.start[6] - P.start[5] == M - 1 && P.start[10] - P.start[9] == M - 1 &&
      listed (&P, 5, 9) && listed (&P, 9, 5) && !listed (&P, 5, 5) && listed (&P, 17, 5),
      "unknown footprints pair with all");
  CHECK (gr_matcher_pairs_check (&P, M, err, sizeof err) == GR_OK, "valid: %s", err);
  gr_matcher_pairs_clear (&P);
  CHECK (gr_matcher_pairs_from_footprints (fp, M, -1, &P, err, sizeof err) ==
      GR_ERR_INVALID && gr_matcher_pairs_from_footprints (NULL, M, 1, &P, err,
          sizeof err) == GR_ERR_INVALID, "bad margin / footprints refused");
  CHECK (gr_matcher_pairs_from_footprints (fp, 0, 1, &P, err, sizeof err) == GR_OK &&
      P.m == 0 && P.start[0] == 0, "no images");
  gr_matcher_pairs_clear (&P);
  free (fp);
}

/* from poses: a nadir camera (4000 x 3000 px, f = 3000 px) at 100 m sees 133.3 m (east)
 * x 100 m (north); frames every 30 m northwards overlap the 3 before and after (a 4th
 * is 20 m away), so with margin 0 frame i pairs with |i - j| <= 3, with margin 25 with
 * |i - j| <= 4; a frame looking at the horizon, or without a position, pairs with all */
static void
test_poses (void)
{
  enum { M = 12 };
  GrCamera cam = { 4000, 3000, 3000, 3000, 1999.5, 1499.5, 0, 0, 0, 0, 0 };
  GrCameraPose pose[M];
  double east[M], north[M];
  for (int i = 0; i < M; i++) {
    pose[i] = (GrCameraPose) { 0, 0, 0, 100 };
    east[i] = 500000;
    north[i] = 4600000 + 30.0 * i;
  }
  char err[256] = "";
  for (int mi = 0; mi < 2; mi++) {
    const double margin = mi ? 25 : 0;
    const int reach = mi ? 4 : 3;
    GrMatcherPairs P;
    CHECK (gr_matcher_pairs_from_poses (&cam, NULL, pose, east, north, M, margin, &P, err,
            sizeof err) == GR_OK, "from poses: %s", err);
    int wrong = 0;
    for (int i = 0; i < M; i++)
      for (int j = 0; j < M; j++)
        wrong += listed (&P, i, j) != (i != j && abs (i - j) <= reach);
    CHECK (wrong == 0, "poses, margin %g: %d pairs wrong", margin, wrong);
    gr_matcher_pairs_clear (&P);
  }
  /* frame 2 pitched up to the horizon, frame 7 without a position */
  pose[2].pitch_deg = 80;
  north[7] = NAN;
  GrMatcherPairs P;
  CHECK (gr_matcher_pairs_from_poses (&cam, NULL, pose, east, north, M, 0, &P, err,
          sizeof err) == GR_OK, "from poses: %s", err);
  CHECK (P.start[3] - P.start[2] == M - 1 && P.start[8] - P.start[7] == M - 1 &&
      listed (&P, 11, 2) && listed (&P, 0, 7) && !listed (&P, 0, 5),
      "unknown footprints (horizon, no position) pair with all, the others as before");
  gr_matcher_pairs_clear (&P);
  CHECK (gr_matcher_pairs_from_poses (NULL, NULL, pose, east, north, M, 0, &P, err,
          sizeof err) == GR_ERR_INVALID, "no camera refused");
  printf ("poses: frames every 30 m at 100 m pair with their 3 (margin 0) or 4 (25 m) "
      "neighbours; unknown footprints with all\n");
}

/* GEOREG_PAIRS_BENCH=m: a survey of m frames x 200 descriptors (k = 64) on the CPU,
 * full vs pruned by footprint overlap (margin 0): times and identity */
static void
bench (int m)
{
  int64_t *off;
  float *d = mbg_batch (m, 200, 0, 64, 5, &off);
  double *fp = survey_footprints (m, 25);
  GrMatcherPairs P;
  char err[256] = "";
  CHECK (gr_matcher_pairs_from_footprints (fp, m, 0.0, &P, err, sizeof err) == GR_OK,
      "footprints: %s", err);
  GrStatus st;
  GrMatcher *mt = gr_matcher_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
  const GrMatch *l;
  int64_t nf = 0;
  GrMatchStats sf, sp;
  CHECK (gr_matcher_match_all_sparse (mt, d, 64, off, m, 0.8f, &l, &nf, &sf, err,
          sizeof err) == GR_OK, "full: %s", err);
  GrMatch *ref = malloc (sizeof (GrMatch) * (size_t) (nf + 1));
  memcpy (ref, l, sizeof (GrMatch) * (size_t) nf);   /* the next call reuses l */
  const int64_t nw = check_pruned (mt, d, 64, off, m, &P, ref, nf, 1, "bench", &sp);
  free (ref);
  printf ("bench: m = %d x 200, k = 64, CPU: %lld listed pairs of %lld; full %.0f ms "
      "(%lld entries), pruned %.0f ms (%lld entries)\n", m, (long long) P.start[m],
      (long long) m * (m - 1), sf.elapsed_ms, (long long) nf, sp.elapsed_ms,
      (long long) nw);
  gr_matcher_pairs_clear (&P);
  gr_matcher_free (mt);
  free (fp);
  free (d);
  free (off);
}

int
main (void)
{
  test_footprints ();
  test_poses ();
  test_pruned_equals_restricted ();
  const char *b = getenv ("GEOREG_PAIRS_BENCH");
  if (b && atoi (b) > 1)
    bench (atoi (b));
  return CHECK_DONE ();
}
