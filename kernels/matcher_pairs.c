/* Pair pruning for the batch matcher (matcher.h, issue 16): which image pairs a survey
 * needs matched, from the images' ground footprints, and the checks of a pair list.
 *
 * Two footprints pair when their convex hulls are at most `margin` apart.  The
 * distance between two convex polygons is 0 when one holds a vertex of the other or
 * two edges cross, else the smallest distance between an edge of one and an edge of
 * the other (for segments that do not cross: the smallest of the four endpoint to
 * segment distances).  Candidates come from a sweep over the hulls' bounding boxes
 * (grown by the margin) sorted along the axis of the larger spread, so a survey of m
 * frames costs about m log m plus the pairs near each other, not m^2.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "matcher.h"
#include "matcher_pairs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  double x, y;
} Pt;

typedef struct {
  Pt v[4];
  int n;                        /* hull vertices, counter-clockwise (1 .. 4) */
  double x0, y0, x1, y1;        /* bounding box */
  bool known;
} Hull;

static double
cross (Pt o, Pt a, Pt b)
{
  return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}

static int
pt_cmp (const void *a, const void *b)
{
  const Pt *p = a, *q = b;
  if (p->x != q->x)
    return p->x < q->x ? -1 : 1;
  return p->y < q->y ? -1 : p->y > q->y;
}

/* the convex hull of the 4 corners (monotone chain; collinear and repeated points
 * dropped, so a degenerate footprint is a segment or a point) */
static void
hull_of (const double c[8], Hull *h)
{
  Pt p[4];
  h->known = true;
  for (int i = 0; i < 4; i++) {
    p[i].x = c[2 * i];
    p[i].y = c[2 * i + 1];
    if (!isfinite (p[i].x) || !isfinite (p[i].y))
      h->known = false;
  }
  h->n = 0;
  if (!h->known)
    return;
  qsort (p, 4, sizeof (Pt), pt_cmp);
  Pt H[8];
  int k = 0;
  for (int i = 0; i < 4; i++) {                 /* lower chain */
    while (k >= 2 && cross (H[k - 2], H[k - 1], p[i]) <= 0)
      k--;
    H[k++] = p[i];
  }
  for (int i = 2, lo = k + 1; i >= 0; i--) {    /* upper chain */
    while (k >= lo && cross (H[k - 2], H[k - 1], p[i]) <= 0)
      k--;
    H[k++] = p[i];
  }
  k = k > 1 ? k - 1 : 1;                        /* the last point repeats the first */
  if (k == 2 && H[0].x == H[1].x && H[0].y == H[1].y)
    k = 1;
  h->n = k;
  memcpy (h->v, H, sizeof (Pt) * (size_t) k);
  h->x0 = h->x1 = H[0].x;
  h->y0 = h->y1 = H[0].y;
  for (int i = 1; i < k; i++) {
    h->x0 = fmin (h->x0, H[i].x);
    h->x1 = fmax (h->x1, H[i].x);
    h->y0 = fmin (h->y0, H[i].y);
    h->y1 = fmax (h->y1, H[i].y);
  }
}

static double
pt_seg (Pt p, Pt a, Pt b)
{
  const double dx = b.x - a.x, dy = b.y - a.y, l2 = dx * dx + dy * dy;
  double t = l2 > 0 ? ((p.x - a.x) * dx + (p.y - a.y) * dy) / l2 : 0;
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  return hypot (p.x - (a.x + t * dx), p.y - (a.y + t * dy));
}

static double
seg_seg (Pt a, Pt b, Pt c, Pt d)
{
  const double d1 = cross (a, b, c), d2 = cross (a, b, d);
  const double d3 = cross (c, d, a), d4 = cross (c, d, b);
  if (((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) &&
      ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)))
    return 0;                   /* they cross */
  return fmin (fmin (pt_seg (a, c, d), pt_seg (b, c, d)),
      fmin (pt_seg (c, a, b), pt_seg (d, a, b)));
}

/* p inside (or on) the counter-clockwise convex polygon h (3 or more vertices) */
static bool
inside (Pt p, const Hull *h)
{
  for (int i = 0; i < h->n; i++)
    if (cross (h->v[i], h->v[(i + 1) % h->n], p) < 0)
      return false;
  return true;
}

static double
hull_distance (const Hull *a, const Hull *b)
{
  if ((a->n >= 3 && inside (b->v[0], a)) || (b->n >= 3 && inside (a->v[0], b)))
    return 0;
  double d = INFINITY;
  /* edges: a point is one zero-length edge, a segment one edge */
  const int ea = a->n >= 3 ? a->n : 1, eb = b->n >= 3 ? b->n : 1;
  for (int i = 0; i < ea; i++)
    for (int j = 0; j < eb; j++)
      d = fmin (d, seg_seg (a->v[i], a->v[(i + 1) % a->n], b->v[j],
              b->v[(j + 1) % b->n]));
  return d;
}

double
gr_matcher_footprint_distance (const double a[8], const double b[8])
{
  Hull ha, hb;
  hull_of (a, &ha);
  hull_of (b, &hb);
  if (!ha.known || !hb.known)
    return NAN;
  return hull_distance (&ha, &hb);
}

typedef struct {
  int32_t i, j;
} Edge;

typedef struct {
  double key;
  int i;
} Key;

static int
key_cmp (const void *a, const void *b)
{
  const Key *p = a, *q = b;
  return p->key < q->key ? -1 : p->key > q->key ? 1 : p->i - q->i;
}

static int
i32_cmp (const void *a, const void *b)
{
  const int32_t p = *(const int32_t *) a, q = *(const int32_t *) b;
  return (p > q) - (p < q);
}

static bool
edge_push (Edge **e, int64_t *n, int64_t *cap, int i, int j)
{
  if (*n + 2 > *cap) {
    const int64_t nc = *cap ? 2 * *cap : 4096;
    Edge *t = realloc (*e, sizeof (Edge) * (size_t) nc);
    if (!t)
      return false;
    *e = t;
    *cap = nc;
  }
  (*e)[(*n)++] = (Edge) { i, j };
  (*e)[(*n)++] = (Edge) { j, i };
  return true;
}

GrStatus
gr_matcher_pairs_from_footprints (const double *corners, int m, double margin,
    GrMatcherPairs *pairs, char *errbuf, size_t errlen)
{
  if (!pairs || m < 0 || (m > 0 && !corners) || !(margin >= 0) || !isfinite (margin)) {
    gr_set_err (errbuf, errlen, "bad footprints, image count %d or margin %g", m, margin);
    return GR_ERR_INVALID;
  }
  memset (pairs, 0, sizeof *pairs);
  Hull *h = malloc (sizeof (Hull) * (size_t) (m > 0 ? m : 1));
  Key *key = malloc (sizeof (Key) * (size_t) (m > 0 ? m : 1));
  int *unknown = malloc (sizeof (int) * (size_t) (m > 0 ? m : 1));
  Edge *e = NULL;
  int64_t ne = 0, ecap = 0;
  GrStatus st = h && key && unknown ? GR_OK : GR_ERR_NOMEM;
  int nk = 0, nu = 0;
  double cx0 = INFINITY, cx1 = -INFINITY, cy0 = INFINITY, cy1 = -INFINITY;
  for (int i = 0; st == GR_OK && i < m; i++) {
    hull_of (corners + 8 * (size_t) i, &h[i]);
    if (!h[i].known) {
      unknown[nu++] = i;
      continue;
    }
    cx0 = fmin (cx0, h[i].x0);
    cx1 = fmax (cx1, h[i].x1);
    cy0 = fmin (cy0, h[i].y0);
    cy1 = fmax (cy1, h[i].y1);
    key[nk++].i = i;
  }
  /* the sweep along the axis of the larger spread: boxes overlap along it (grown by
   * the margin) before anything else is tested */
  const bool alongx = cx1 - cx0 >= cy1 - cy0;
  for (int a = 0; a < nk; a++)
    key[a].key = alongx ? h[key[a].i].x0 : h[key[a].i].y0;
  if (st == GR_OK)
    qsort (key, (size_t) nk, sizeof (Key), key_cmp);
  for (int a = 0; st == GR_OK && a < nk; a++) {
    const Hull *A = &h[key[a].i];
    const double end = (alongx ? A->x1 : A->y1) + margin;
    for (int b = a + 1; b < nk && key[b].key <= end; b++) {
      const Hull *B = &h[key[b].i];
      if (B->x0 > A->x1 + margin || A->x0 > B->x1 + margin ||
          B->y0 > A->y1 + margin || A->y0 > B->y1 + margin)
        continue;
      if (hull_distance (A, B) <= margin &&
          !edge_push (&e, &ne, &ecap, key[a].i, key[b].i)) {
        st = GR_ERR_NOMEM;
        break;
      }
    }
  }
  /* an unknown footprint pairs with every image */
  for (int u = 0; st == GR_OK && u < nu; u++)
    for (int j = 0; j < m; j++)
      if (j != unknown[u] && (h[j].known || j > unknown[u]) &&
          !edge_push (&e, &ne, &ecap, unknown[u], j)) {
        st = GR_ERR_NOMEM;
        break;
      }
  /* the CSR: counts, offsets, then each row sorted */
  if (st == GR_OK) {
    pairs->m = m;
    pairs->start = calloc ((size_t) m + 1, sizeof (int64_t));
    pairs->images = malloc (sizeof (int32_t) * (size_t) (ne > 0 ? ne : 1));
    if (!pairs->start || !pairs->images)
      st = GR_ERR_NOMEM;
  }
  if (st == GR_OK) {
    for (int64_t x = 0; x < ne; x++)
      pairs->start[e[x].i + 1]++;
    for (int i = 0; i < m; i++)
      pairs->start[i + 1] += pairs->start[i];
    int64_t *fill = malloc (sizeof (int64_t) * (size_t) (m > 0 ? m : 1));
    if (!fill) {
      st = GR_ERR_NOMEM;
    } else {
      memcpy (fill, pairs->start, sizeof (int64_t) * (size_t) m);
      for (int64_t x = 0; x < ne; x++)
        pairs->images[fill[e[x].i]++] = e[x].j;
      for (int i = 0; i < m; i++)
        qsort (pairs->images + pairs->start[i],
            (size_t) (pairs->start[i + 1] - pairs->start[i]), sizeof (int32_t), i32_cmp);
      free (fill);
    }
  }
  free (h);
  free (key);
  free (unknown);
  free (e);
  if (st != GR_OK) {
    gr_matcher_pairs_clear (pairs);
    gr_set_err (errbuf, errlen, "out of memory");
  }
  return st;
}

void
gr_matcher_pairs_clear (GrMatcherPairs *pairs)
{
  if (!pairs)
    return;
  free (pairs->start);
  free (pairs->images);
  memset (pairs, 0, sizeof *pairs);
}

GrStatus
gr_matcher_pairs_check (const GrMatcherPairs *P, int m, char *errbuf, size_t errlen)
{
  if (!P || P->m != m || !P->start || (P->start[m] > 0 && !P->images) ||
      P->start[0] != 0) {
    gr_set_err (errbuf, errlen, "pair list: not one for %d images", m);
    return GR_ERR_INVALID;
  }
  for (int i = 0; i < m; i++) {
    if (P->start[i + 1] < P->start[i]) {
      gr_set_err (errbuf, errlen, "pair list: start decreases at image %d", i);
      return GR_ERR_INVALID;
    }
    for (int64_t x = P->start[i]; x < P->start[i + 1]; x++)
      if (P->images[x] < 0 || P->images[x] >= m ||
          (x > P->start[i] && P->images[x] <= P->images[x - 1])) {
        gr_set_err (errbuf, errlen, "pair list: image %d's list is not ascending "
            "images of 0 .. %d", i, m - 1);
        return GR_ERR_INVALID;
      }
  }
  return GR_OK;
}

GrStatus
gr_matcher_pairs_from_poses (const GrCamera *cam, const GrCamera *cams,
    const GrCameraPose *poses, const double *east, const double *north, int m,
    double margin, GrMatcherPairs *pairs, char *errbuf, size_t errlen)
{
  if (m < 0 || (m > 0 && (!poses || !east || !north || (!cam && !cams)))) {
    gr_set_err (errbuf, errlen, "bad poses, positions or image count %d", m);
    return GR_ERR_INVALID;
  }
  double *fp = malloc (sizeof (double) * 8 * (size_t) (m > 0 ? m : 1));
  if (!fp) {
    gr_set_err (errbuf, errlen, "out of memory");
    return GR_ERR_NOMEM;
  }
  for (int i = 0; i < m; i++) {
    double *c = fp + 8 * (size_t) i;
    if (!gr_camera_footprint (cams ? &cams[i] : cam, &poses[i], c)) {
      for (int t = 0; t < 8; t++)
        c[t] = NAN;             /* unknown: pairs with every frame */
      continue;
    }
    for (int t = 0; t < 4; t++) {
      c[2 * t] += east[i];
      c[2 * t + 1] += north[i];
    }
  }
  GrStatus st = gr_matcher_pairs_from_footprints (fp, m, margin, pairs, errbuf, errlen);
  free (fp);
  return st;
}
