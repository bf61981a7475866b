/* Keypoints (kernels/keypoints.h): corners of known squares are found, the response
 * is the Shi-Tomasi minimum eigenvalue (float64 check), flat and masked images give
 * none, margins and masks are honoured, NMS separates keypoints, the grid spreads
 * them, caps and order hold, the result does not depend on the thread count, and it is
 * the list the definition written out pixel by pixel gives, also when detected from
 * responses computed once for the frame (gr_keypoints_detect_with).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#include "image.h"
#include "keypoints.h"
#include "nmi_reference.h"

#include "test_check.h"

/* float64 Shi-Tomasi at (x, y), the definition written out */
static double
ref_response (const GrPlaneF *p, int x, int y, int b)
{
  double a = 0, bb = 0, c = 0;
  for (int j = -b; j <= b; j++)
    for (int i = -b; i <= b; i++) {
      const int xx = x + i, yy = y + j;
      const double gx = 0.5 * ((double) p->data[yy * p->stride + xx + 1] -
          p->data[yy * p->stride + xx - 1]);
      const double gy = 0.5 * ((double) p->data[(yy + 1) * p->stride + xx] -
          p->data[(yy - 1) * p->stride + xx]);
      a += gx * gx;
      bb += gx * gy;
      c += gy * gy;
    }
  const double l = 0.5 * (a + c) - sqrt (0.25 * (a - c) * (a - c) + bb * bb);
  return l > 0 ? l : 0;
}

/* The float response at (x, y) as the detector defines it, pixel by pixel: each tap's
 * gradient from the (clamped) neighbours, the taps summed in float along the row from
 * -b to b, the rows in double from top to bottom.  The detector computes it row-wise
 * and vectorized; it must give these very floats (the CUDA detector does too). */
static float
float_response (const GrPlaneF *p, int x, int y, int b)
{
#define PX(X, Y) p->data[(size_t) ((Y) < 0 ? 0 : (Y) >= p->height ? p->height - 1 : (Y)) * \
    p->stride + ((X) < 0 ? 0 : (X) >= p->width ? p->width - 1 : (X))]
  double a = 0, bb = 0, c = 0;
  for (int j = -b; j <= b; j++) {
    const int yy = y + j;
    float axx = 0, axy = 0, ayy = 0;
    for (int k = -b; k <= b; k++) {
      const int xx = x + k;
      const float gx = 0.5f * (PX (xx + 1, yy) - PX (xx - 1, yy));
      const float gy = 0.5f * (PX (xx, yy + 1) - PX (xx, yy - 1));
      axx += gx * gx;
      axy += gx * gy;
      ayy += gy * gy;
    }
    a += axx;
    bb += axy;
    c += ayy;
  }
#undef PX
  const double half = 0.5 * (a - c);
  const double l = 0.5 * (a + c) - sqrt (half * half + bb * bb);
  return l > 0.0 ? (float) l : 0.0f;
}

static void
squares (GrPlaneF *p, int w, int h)
{
  gr_plane_alloc (p, w, h, false);
  for (int i = 0; i < w * h; i++)
    p->data[i] = 20.0f;
  /* three squares: corners at (30,30),(59,30),(30,59),(59,59) etc. */
  const int sq[3][2] = { {30, 30}, {120, 40}, {60, 110} };
  for (int s = 0; s < 3; s++)
    for (int y = sq[s][1]; y < sq[s][1] + 30; y++)
      for (int x = sq[s][0]; x < sq[s][0] + 30; x++)
        p->data[y * w + x] = 200.0f;
}

static void
noise_image (GrPlaneF *p, int w, int h, uint64_t seed, bool with_mask)
{
  gr_plane_alloc (p, w, h, with_mask);
  uint64_t rng = seed;
  /* blotchy texture: random values smoothed a little */
  float *t = malloc (sizeof (float) * w * h);
  for (int i = 0; i < w * h; i++)
    t[i] = (float) (ref_rand (&rng) & 255);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      float s = 0;
      int n = 0;
      for (int j = -1; j <= 1; j++)
        for (int i = -1; i <= 1; i++)
          if (x + i >= 0 && y + j >= 0 && x + i < w && y + j < h) {
            s += t[(y + j) * w + x + i];
            n++;
          }
      p->data[y * w + x] = s / n;
      if (p->mask)
        p->mask[y * w + x] = !((x - 100) * (x - 100) + (y - 80) * (y - 80) < 40 * 40) &&
            !(x > 200 && y < 30);
    }
  free (t);
}

/* The whole detector written out pixel by pixel from its definition (keypoints.c's
 * header): eligibility by looking at every pixel within R, the per-pixel float
 * response, the largest, the full NMS window, the grid quota and the final order.
 * The detector computes all of it row-wise, vectorized and in threads; it must give
 * exactly this list (the speed-ups claim identical results, and the CUDA detector is
 * held to the same list by the gpu suite). */
typedef struct { float r; int x, y; } RefCand;

static int
ref_cand_cmp (const void *pa, const void *pb)
{
  const RefCand *a = pa, *b = pb;
  if (a->r != b->r)
    return a->r > b->r ? -1 : 1;
  if (a->y != b->y)
    return a->y < b->y ? -1 : 1;
  return (a->x > b->x) - (a->x < b->x);
}

static int
ref_detect (const GrPlaneF *img, const GrKeypointParams *p, GrKeypoint *out, int cap)
{
  const int w = img->width, h = img->height, b = p->block_radius;
  const int R = p->margin > b + 1 ? p->margin : b + 1;
  float *resp = calloc ((size_t) w * h, sizeof (float));
  /* invalid pixels counted over rectangles (a summed-area table), so that the test
   * stays quick under qemu: eligible = the (2R+1)^2 square inside, none invalid */
  long *sat = calloc ((size_t) (w + 1) * (h + 1), sizeof (long));
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      sat[(size_t) (y + 1) * (w + 1) + x + 1] = (img->mask && !img->mask[(size_t) y * w + x])
          + sat[(size_t) y * (w + 1) + x + 1] + sat[(size_t) (y + 1) * (w + 1) + x]
          - sat[(size_t) y * (w + 1) + x];
  float rmax = 0.0f;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      const int x0 = x - R, x1 = x + R + 1, y0 = y - R, y1 = y + R + 1;
      const bool ok = x0 >= 0 && y0 >= 0 && x1 <= w && y1 <= h &&
          sat[(size_t) y1 * (w + 1) + x1] - sat[(size_t) y0 * (w + 1) + x1] -
          sat[(size_t) y1 * (w + 1) + x0] + sat[(size_t) y0 * (w + 1) + x0] == 0;
      const float v = ok ? float_response (img, x, y, b) : 0.0f;
      resp[(size_t) y * w + x] = v;
      rmax = v > rmax ? v : rmax;
    }
  int total = 0;
  if (rmax > 0.0f) {
    const float thr = p->min_response * rmax;
    const int ncells = p->grid_cols * p->grid_rows;
    const int quota = (p->max_keypoints + ncells - 1) / ncells;
    RefCand *all = malloc (sizeof (RefCand) * (size_t) w * h);
    RefCand *kept = malloc (sizeof (RefCand) * (size_t) w * h);
    for (int cell = 0; cell < ncells; cell++) {
      const int gx = cell % p->grid_cols, gy = cell / p->grid_cols;
      const int xa = (int) ((long) gx * w / p->grid_cols);
      const int xb = (int) ((long) (gx + 1) * w / p->grid_cols);
      const int ya = (int) ((long) gy * h / p->grid_rows);
      const int yb = (int) ((long) (gy + 1) * h / p->grid_rows);
      int nc = 0;
      for (int y = ya; y < yb; y++)
        for (int x = xa; x < xb; x++) {
          const float v = resp[(size_t) y * w + x];
          if (!(v > 0.0f) || v < thr)
            continue;
          bool max = true;
          for (int yy = y - p->nms_radius; yy <= y + p->nms_radius; yy++)
            for (int xx = x - p->nms_radius; xx <= x + p->nms_radius; xx++) {
              if (xx < 0 || yy < 0 || xx >= w || yy >= h || (xx == x && yy == y))
                continue;
              const float u = resp[(size_t) yy * w + xx];
              if (u > v || (u == v && (yy < y || (yy == y && xx < x))))
                max = false;
            }
          if (max)
            all[nc++] = (RefCand) { v, x, y };
        }
      qsort (all, (size_t) nc, sizeof (RefCand), ref_cand_cmp);
      for (int i = 0; i < nc && i < quota; i++)
        kept[total++] = all[i];
    }
    qsort (kept, (size_t) total, sizeof (RefCand), ref_cand_cmp);
    if (total > p->max_keypoints)
      total = p->max_keypoints;
    if (total > cap)
      total = cap;
    for (int i = 0; i < total; i++)
      out[i] = (GrKeypoint) { (float) kept[i].x, (float) kept[i].y, kept[i].r };
    free (all);
    free (kept);
  }
  free (resp);
  free (sat);
  return total;
}

/* The detector against ref_detect over a spread of sizes (odd widths, strides wider
 * than the width, strips of rows cut anywhere), masks, margins, block and NMS radii
 * and thresholds: the same keypoints, responses bit for bit, in the same order. */
static void
check_against_reference (void)
{
  const struct { int w, h, pad; bool mask; int margin, block, nms; float minr; int maxk; }
  cases[] = {
    { 320, 240, 0, true, 7, 2, 4, 0.01f, 300 },
    { 320, 240, 0, false, 5, 2, 4, 0.01f, 200 },
    { 333, 217, 5, false, 15, 2, 4, 0.01f, 200 },
    { 333, 217, 3, true, 0, 1, 1, 0.0f, 5000 },
    { 257, 97, 0, true, 3, 3, 2, 0.05f, 100 },
    { 97, 131, 7, false, 4, 3, 6, 0.2f, 50 },
    { 200, 70, 0, false, 2, 1, 3, 0.0f, 1000 },
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const int w = cases[c].w, h = cases[c].h, stride = w + cases[c].pad;
    GrPlaneF packed;
    noise_image (&packed, w, h, 100 + c, cases[c].mask);
    /* the same pixels at a wider stride */
    GrPlaneF img = packed;
    img.stride = stride;
    img.data = malloc (sizeof (float) * stride * h);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < stride; x++)
        img.data[(size_t) y * stride + x] = x < w ? packed.data[y * w + x] : 1e6f;
    GrKeypointParams q;
    gr_keypoint_params_init (&q);
    q.margin = cases[c].margin;
    q.block_radius = cases[c].block;
    q.nms_radius = cases[c].nms;
    q.min_response = cases[c].minr;
    q.max_keypoints = cases[c].maxk;
    const int cap = cases[c].maxk + 10;
    GrKeypoint *got = malloc (sizeof *got * cap), *want = malloc (sizeof *want * cap);
    const int n = gr_keypoints_detect (&img, &q, got, cap);
    const int nr = ref_detect (&img, &q, want, cap);
    int first = -1;
    for (int i = 0; i < n && i < nr && first < 0; i++)
      if (memcmp (&got[i], &want[i], sizeof *got) != 0)
        first = i;
    CHECK (n == nr && first < 0, "case %zu (%dx%d stride %d, mask %d, margin %d, block %d, "
        "nms %d, min %g): %d keypoints, the reference %d, first difference at %d", c, w,
        h, stride, cases[c].mask, q.margin, q.block_radius, q.nms_radius, q.min_response,
        n, nr, first);
    /* the responses made once for the frame (mask not read), then each detection
     * from them: the same list for this margin and for a wider one */
    float *resp = malloc (sizeof (float) * w * h);
    CHECK (gr_keypoints_responses (&img, q.block_radius, resp) == 0, "responses");
    for (int wide = 0; wide < 2; wide++) {
      GrKeypointParams qw = q;
      qw.margin += wide * 10;
      const int nw = gr_keypoints_detect_with (&img, &qw, resp, got, cap);
      const int nrw = wide ? ref_detect (&img, &qw, want, cap) : nr;
      int diff = nw != nrw;
      for (int i = 0; i < nw && i < nrw; i++)
        diff += memcmp (&got[i], &want[i], sizeof *got) != 0;
      CHECK (diff == 0, "case %zu margin %d: from the shared responses %d keypoints, the "
          "reference %d, %d differ", c, qw.margin, nw, nrw, diff);
      if (!wide) {
        /* nothing of the frame's responses is written */
        float *again = malloc (sizeof (float) * w * h);
        gr_keypoints_responses (&img, q.block_radius, again);
        CHECK (memcmp (again, resp, sizeof (float) * w * h) == 0, "responses changed");
        free (again);
      }
    }
    free (resp);
    printf ("reference case %zu: %d keypoints, identical (also from shared responses)\n",
        c, n);
    free (got);
    free (want);
    free (img.data);
    gr_plane_clear (&packed);
  }
}

int
main (void)
{
  GrKeypointParams p;
  gr_keypoint_params_init (&p);
  CHECK (p.max_keypoints == 2000 && p.grid_cols == 8 && p.grid_rows == 6 &&
      p.nms_radius == 4 && p.margin == 5 && fabsf (p.min_response - 0.01f) < 1e-9f &&
      p.block_radius == 2, "defaults");

  /* ---- corners of squares */
  {
    GrPlaneF img;
    squares (&img, 200, 160);
    GrKeypoint kp[64];
    GrKeypointParams q = p;
    q.min_response = 0.1f;
    int n = gr_keypoints_detect (&img, &q, kp, 64);
    CHECK (n >= 12, "squares: %d keypoints, want the 12 corners", n);
    const int sq[3][2] = { {30, 30}, {120, 40}, {60, 110} };
    int found = 0;
    for (int s = 0; s < 3; s++)
      for (int c = 0; c < 4; c++) {
        const double cx = sq[s][0] + (c & 1 ? 29.5 : -0.5);
        const double cy = sq[s][1] + (c & 2 ? 29.5 : -0.5);
        bool hit = false;
        for (int i = 0; i < n; i++)
          hit |= fabs (kp[i].x - cx) <= 1.5 && fabs (kp[i].y - cy) <= 1.5;
        found += hit;
      }
    CHECK (found == 12, "squares: %d of 12 corners found", found);
    /* every keypoint near a corner (edges are not corners) */
    for (int i = 0; i < n; i++) {
      bool near = false;
      for (int s = 0; s < 3; s++)
        for (int c = 0; c < 4; c++)
          near |= fabs (kp[i].x - (sq[s][0] + (c & 1 ? 29.5 : -0.5))) <= 3 &&
              fabs (kp[i].y - (sq[s][1] + (c & 2 ? 29.5 : -0.5))) <= 3;
      CHECK (near, "squares: keypoint (%g, %g) is not at a corner", kp[i].x, kp[i].y);
    }
    /* response = float64 Shi-Tomasi; sorted strongest first */
    for (int i = 0; i < n; i++) {
      const double r = ref_response (&img, (int) kp[i].x, (int) kp[i].y, 2);
      CHECK (fabs (kp[i].response - r) <= 1e-4 * r + 1e-3, "response %g vs %g",
          kp[i].response, r);
      if (i)
        CHECK (kp[i].response <= kp[i - 1].response, "not sorted");
    }
    printf ("squares: %d keypoints, %d of 12 corners\n", n, found);
    gr_plane_clear (&img);
  }

  /* ---- flat, wholly masked, tiny */
  {
    GrPlaneF img;
    gr_plane_alloc (&img, 64, 48, true);
    for (int i = 0; i < 64 * 48; i++)
      img.data[i] = 99.0f;
    GrKeypoint kp[8];
    CHECK (gr_keypoints_detect (&img, &p, kp, 8) == 0, "flat image gave keypoints");
    for (int i = 0; i < 64 * 48; i++)
      img.data[i] = (float) ((i * 7919) % 251);
    memset (img.mask, 0, 64 * 48);
    CHECK (gr_keypoints_detect (&img, &p, kp, 8) == 0, "masked image gave keypoints");
    gr_plane_clear (&img);
    gr_plane_alloc (&img, 9, 9, false);
    for (int i = 0; i < 81; i++)
      img.data[i] = (float) (i * 37 % 17);
    CHECK (gr_keypoints_detect (&img, &p, kp, 8) == 0, "9x9 image with margin 5");
    gr_plane_clear (&img);
  }

  /* ---- masks, margins, NMS, grid, caps, determinism */
  {
    GrPlaneF img;
    const int w = 320, h = 240;
    noise_image (&img, w, h, 42, true);
    GrKeypointParams q = p;
    q.max_keypoints = 300;
    q.margin = 7;
    GrKeypoint *kp = malloc (sizeof *kp * 400), *kp1 = malloc (sizeof *kp1 * 400);
    int n = gr_keypoints_detect (&img, &q, kp, 400);
    CHECK (n == 300, "textured image: %d keypoints, want 300", n);
    int bad_margin = 0, bad_nms = 0;
    int cells[48] = { 0 };
    for (int i = 0; i < n; i++) {
      const int x = (int) kp[i].x, y = (int) kp[i].y;
      CHECK (kp[i].x == x && kp[i].y == y, "keypoints sit on pixels");
      for (int j = -q.margin; j <= q.margin; j++)
        for (int k = -q.margin; k <= q.margin; k++) {
          const int xx = x + k, yy = y + j;
          if (xx < 0 || yy < 0 || xx >= w || yy >= h || !img.mask[yy * w + xx])
            bad_margin++;
        }
      for (int j = 0; j < i; j++)
        if (fabsf (kp[j].x - kp[i].x) <= q.nms_radius && fabsf (kp[j].y - kp[i].y) <= q.nms_radius)
          bad_nms++;
      cells[(y * 6 / h) * 8 + x * 8 / w]++;
    }
    CHECK (bad_margin == 0, "%d margin pixels invalid or outside", bad_margin);
    CHECK (bad_nms == 0, "%d keypoint pairs within the NMS radius", bad_nms);
    const int quota = (300 + 47) / 48;
    int used = 0;
    for (int c = 0; c < 48; c++) {
      CHECK (cells[c] <= quota, "cell %d holds %d > quota %d", c, cells[c], quota);
      used += cells[c] > 0;
    }
    CHECK (used >= 44, "only %d of 48 cells hold keypoints", used);
    /* the responses are the per-pixel floats, bit for bit, for block radii 1 .. 3 */
    for (int br = 1; br <= 3; br++) {
      GrKeypointParams qb = q;
      qb.block_radius = br;
      qb.margin = br + 1;          /* keypoints down to the edge: clamped taps count */
      const int nb = gr_keypoints_detect (&img, &qb, kp1, 400);
      int differ = 0;
      for (int i = 0; i < nb; i++)
        differ += kp1[i].response != float_response (&img, (int) kp1[i].x, (int) kp1[i].y, br);
      CHECK (nb > 0 && differ == 0, "block radius %d: %d of %d responses differ from the "
          "per-pixel floats", br, differ, nb);
    }
    /* threads */
    omp_set_num_threads (1);
    int n1 = gr_keypoints_detect (&img, &q, kp1, 400);
    omp_set_num_threads (4);
    int n4 = gr_keypoints_detect (&img, &q, kp1 + 0, 400);
    CHECK (n1 == n && n4 == n && memcmp (kp, kp1, sizeof *kp * n) == 0,
        "result depends on the thread count");
    /* capacity smaller than max: the strongest come first */
    GrKeypoint few[10];
    int nf = gr_keypoints_detect (&img, &q, few, 10);
    CHECK (nf == 10 && memcmp (few, kp, sizeof few) == 0, "capacity cut");
    /* min_response 1: only the strongest response(s) */
    q.min_response = 1.0f;
    nf = gr_keypoints_detect (&img, &q, few, 10);
    CHECK (nf >= 1 && few[0].response == kp[0].response, "min_response 1: %d", nf);
    printf ("textured 320x240 with mask: %d keypoints in %d of 48 cells (quota %d)\n", n,
        used, quota);
    free (kp);
    free (kp1);
    gr_plane_clear (&img);
  }

  check_against_reference ();

  /* ---- argument checks */
  {
    GrPlaneF img;
    noise_image (&img, 64, 64, 3, false);
    GrKeypoint kp[4];
    GrKeypointParams q = p;
    q.nms_radius = 0;
    CHECK (gr_keypoints_detect (&img, &q, kp, 4) == -GR_ERR_INVALID, "nms 0");
    q = p;
    q.max_keypoints = 0;
    CHECK (gr_keypoints_detect (&img, &q, kp, 4) == -GR_ERR_INVALID, "max 0");
    q = p;
    q.min_response = 1.5f;
    CHECK (gr_keypoints_detect (&img, &q, kp, 4) == -GR_ERR_INVALID, "min_response 1.5");
    CHECK (gr_keypoints_detect (NULL, &p, kp, 4) == -GR_ERR_INVALID, "NULL image");
    CHECK (gr_keypoints_detect (&img, &p, NULL, 4) == -GR_ERR_INVALID, "NULL out");
    CHECK (gr_keypoints_detect (&img, &p, kp, 0) == 0, "capacity 0");
    gr_plane_clear (&img);
  }
  return CHECK_DONE ();
}
