/* Internal: the sparse NMI algorithm for one keypoint, written once for both
 * backends.  The CUDA kernel (nmi_sparse_cuda.cu) runs it as one CTA of GRS_NT
 * threads per keypoint with the scratch in shared memory; the CPU backend
 * (nmi_sparse.c) runs the very same phase functions for tid = 0 .. GRS_NT - 1 in
 * turn (a phase never reads what another thread writes in the same phase), so the
 * two backends compute the same integers and the same doubles in the same order.
 * (Phase S has a CPU form in nmi_sparse.c laid out for one core; its sums are the
 * same exact integers, so its map is the same.)
 *
 * Per keypoint
 *  L  load: the W x W control window (value, or 0x100 when outside the control or
 *     masked) and the T x T template.
 *  K  rank: the valid template pixels sorted by value (ties in raster order), each
 *     with its offset in the window; equal values form groups.
 *  G  groups of two or more pixels (a single pixel's joint count is always 1, and
 *     1 ln 1 = 0: singletons add nothing to any sum).
 *  S  scores: thread t owns displacement columns t, t + GRS_NT, ...; per column it
 *     walks the rows.  With S = sum over bins of c ln c and n jointly valid pixels,
 *     H = ln n - S / n.  S(B), the window's marginal under the template, slides with
 *     the rows (T pixels out, T in) when the template is wholly valid, else it is
 *     recounted per offset; S(A,B) and S(A) come from the groups: within a group
 *     the template value is constant, so the joint counts are the counts of the
 *     window values met by the group's pixels (a private 256-bin byte histogram per
 *     thread, cleared after each group).  The c ln c values are integers (units of
 *     2^-40): every sum is exact in any order.
 *  A..F  peak: argmax (first in raster order among equals), sub-pixel parabola,
 *     separated second 3 x 3 local maximum, as gr_find_peak (peak.h) does.
 * Private histograms are laid out so that thread t only ever touches bank t % 32.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_NMI_SPARSE_IMPL_H
#define GR_NMI_SPARSE_IMPL_H

#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

#include "nmi_sparse.h"

#ifdef __CUDACC__
#define GRS_DEV __host__ __device__ __forceinline__
#else
#define GRS_DEV static inline
#endif

#define GRS_NT 64                     /* threads per keypoint (multiple of 32) */
#define GRS_HWORDS (64 * GRS_NT)      /* 32-bit words of one set of private histograms */
#define GRS_TAB 256                   /* table entries: counts 0 .. 255 */
#define GRS_INV_SCALE (1.0 / 1099511627776.0)   /* 2^-40 */
#define GRS_INVALID 0x100u

typedef struct {
  int T, W, P, R;          /* template, window, displacements per axis, P = 2R + 1 */
  int min_valid;           /* >= 1 */
  int excl;                /* second-peak exclusion radius */
} GrsGeom;

typedef struct {
  const uint8_t *pix;      /* packed, stride cw */
  const uint8_t *mask;     /* packed 0/1, or NULL */
  int cw, ch;
} GrsControl;

/* Per-keypoint scratch ("shared memory"). */
typedef struct {
  int64_t *tab, *dtab;     /* [GRS_TAB]: c ln c and c ln c - (c-1) ln (c-1), 2^-40 */
  const double *lnn;       /* [GRS_TAB]: ln n (read in place) */
  uint32_t *hb, *hj;       /* [GRS_HWORDS] each: private byte histograms */
  double *pbest, *psec;    /* [GRS_NT] (alias hb: used after the scores) */
  int32_t *pidx;           /* [GRS_NT] (aliases hj) */
  int32_t *misc;           /* [8] */
  uint16_t *win;           /* [W * W] */
  int16_t *off;            /* [T * T] window offsets of the sorted valid pixels */
  int16_t *gstart, *gsize; /* [T * T] */
  uint8_t *tval, *tok, *sval;   /* [T * T] */
} GrsShared;

enum { GRS_M_NTV = 0, GRS_M_NGROUPS = 1, GRS_M_CLIPPED = 2, GRS_M_BEST = 3,
  GRS_M_TFULL = 4 };

/* Carves the scratch out of base (may be NULL to get the size). */
GRS_DEV size_t
grs_layout (unsigned char *base, const GrsGeom *g, GrsShared *s)
{
  const int T2 = g->T * g->T;
  size_t o = 0;
  s->tab = (int64_t *) (base + o);
  o += sizeof (int64_t) * GRS_TAB;
  s->dtab = (int64_t *) (base + o);
  o += sizeof (int64_t) * GRS_TAB;
  s->hb = (uint32_t *) (base + o);
  s->pbest = (double *) (base + o);
  s->psec = (double *) (base + o) + GRS_NT;
  o += sizeof (uint32_t) * GRS_HWORDS;
  s->hj = (uint32_t *) (base + o);
  s->pidx = (int32_t *) (base + o);
  o += sizeof (uint32_t) * GRS_HWORDS;
  s->misc = (int32_t *) (base + o);
  o += sizeof (int32_t) * 8;
  s->win = (uint16_t *) (base + o);
  o += sizeof (uint16_t) * (size_t) g->W * g->W;
  o = (o + 7) & ~(size_t) 7;
  s->off = (int16_t *) (base + o);
  o += sizeof (int16_t) * T2;
  s->gstart = (int16_t *) (base + o);
  o += sizeof (int16_t) * T2;
  s->gsize = (int16_t *) (base + o);
  o += sizeof (int16_t) * T2;
  s->tval = base + o;
  o += T2;
  s->tok = base + o;
  o += T2;
  s->sval = base + o;
  o += T2;
  o = (o + 15) & ~(size_t) 15;
  s->lnn = NULL;
  return o;
}

/* word of thread tid's counter for value v; the byte is v & 3 */
GRS_DEV int
grs_hword (int tid, int v)
{
  return ((((tid >> 5) << 6) + (v >> 2)) << 5) + (tid & 31);
}

/* ++count, returns the new count */
GRS_DEV uint32_t
grs_hinc (uint32_t *h, int tid, int v)
{
  uint32_t *w = h + grs_hword (tid, v);
  const int sh = (v & 3) << 3;
  const uint32_t x = *w + (1u << sh);
  *w = x;
  return (x >> sh) & 255u;
}

/* --count, returns the count before */
GRS_DEV uint32_t
grs_hdec (uint32_t *h, int tid, int v)
{
  uint32_t *w = h + grs_hword (tid, v);
  const int sh = (v & 3) << 3;
  const uint32_t x = *w - (1u << sh);
  *w = x;
  return ((x >> sh) & 255u) + 1u;
}

GRS_DEV void
grs_hzero (uint32_t *h, int tid, int v)
{
  uint32_t *w = h + grs_hword (tid, v);
  *w &= ~(255u << ((v & 3) << 3));
}

GRS_DEV double
grs_entropy (int64_t S, int n, const int64_t *tab, const double *lnn)
{
  if (S == tab[n])
    return 0.0;                /* one bin holds everything */
  return lnn[n] - ((double) S * GRS_INV_SCALE) / (double) n;
}

/* NMI of one offset from its exact sums (joint, template, window) over n valid
 * pixels; NAN below min_valid */
GRS_DEV double
grs_score (int64_t sJ, int64_t sA, int64_t sB, int n, int min_valid, const int64_t *tab,
    const double *lnn)
{
  if (n < min_valid || n == 0)
    return NAN;
  const double hab = grs_entropy (sJ, n, tab, lnn);
  const double ha = grs_entropy (sA, n, tab, lnn);
  const double hb = grs_entropy (sB, n, tab, lnn);
  return hab > 0.0 ? (ha + hb) / hab : 1.0;
}

GRS_DEV double
grs_parabola (double l, double c, double r)
{
  const double den = l - 2.0 * c + r;
  if (!isfinite (l) || !isfinite (r) || !(den < 0.0))
    return 0.0;
  const double d = 0.5 * (l - r) / den;
  return d < -0.5 ? -0.5 : d > 0.5 ? 0.5 : d;
}

/* ---- L: load (all threads) */
GRS_DEV void
grs_load (const GrsGeom *g, GrsShared *s, int tid, const GrsControl *c,
    const uint8_t *tpl, const uint8_t *tmask, int qx, int qy, const int64_t *tab,
    const int64_t *dtab)
{
  const int W = g->W, T2 = g->T * g->T;
  for (int i = tid; i < GRS_TAB; i += GRS_NT) {
    s->tab[i] = tab[i];
    s->dtab[i] = dtab[i];
  }
  const int x0 = qx - W / 2, y0 = qy - W / 2;
  int clipped = 0;
  for (int i = tid; i < W * W; i += GRS_NT) {
    const int yy = i / W, xx = i - yy * W;
    const int X = x0 + xx, Y = y0 + yy;
    uint32_t v = GRS_INVALID;
    if (X >= 0 && Y >= 0 && X < c->cw && Y < c->ch) {
      const size_t at = (size_t) Y * c->cw + X;
      if (!c->mask || c->mask[at])
        v = c->pix[at];
    }
    s->win[i] = (uint16_t) v;
    clipped |= v == GRS_INVALID;
  }
  for (int i = tid; i < T2; i += GRS_NT) {
    s->tval[i] = tpl[i];
    s->tok[i] = (uint8_t) (!tmask || tmask[i]);
  }
  s->pidx[tid] = clipped;      /* reduced by thread 0 in grs_rank */
}

/* ---- K: rank the valid template pixels (all threads); thread 0 also reduces the
 * load phase's flags */
GRS_DEV void
grs_rank (const GrsGeom *g, GrsShared *s, int tid)
{
  const int T = g->T, W = g->W, T2 = T * T;
  for (int i = tid; i < T2; i += GRS_NT) {
    if (!s->tok[i])
      continue;
    const int a = s->tval[i];
    int r = 0;
    for (int j = 0; j < T2; j++)
      r += s->tok[j] && (s->tval[j] < a || (s->tval[j] == a && j < i));
    const int ty = i / T, tx = i - ty * T;
    s->off[r] = (int16_t) (ty * W + tx);
    s->sval[r] = (uint8_t) a;
  }
  if (tid == 0) {
    int clipped = 0, ntv = 0;
    for (int t = 0; t < GRS_NT; t++)
      clipped |= s->pidx[t];
    for (int i = 0; i < T2; i++)
      ntv += s->tok[i];
    s->misc[GRS_M_CLIPPED] = clipped;
    s->misc[GRS_M_NTV] = ntv;
    s->misc[GRS_M_TFULL] = ntv == T2;
  }
}

/* ---- G: groups of equal template values with two pixels or more (thread 0) */
GRS_DEV void
grs_groups (GrsShared *s)
{
  const int ntv = s->misc[GRS_M_NTV];
  int ng = 0, r = 0;
  while (r < ntv) {
    int e = r + 1;
    while (e < ntv && s->sval[e] == s->sval[r])
      e++;
    if (e - r >= 2) {
      s->gstart[ng] = (int16_t) r;
      s->gsize[ng] = (int16_t) (e - r);
      ng++;
    }
    r = e;
  }
  s->misc[GRS_M_NGROUPS] = ng;
}

/* ---- S: the scores of thread tid's columns into map (P x P) */
GRS_DEV void
grs_scores (const GrsGeom *g, GrsShared *s, int tid, double *map)
{
  const int T = g->T, W = g->W, P = g->P;
  const int ntv = s->misc[GRS_M_NTV], ng = s->misc[GRS_M_NGROUPS];
  const int tfull = s->misc[GRS_M_TFULL];
  const uint16_t *win = s->win;
  const int16_t *off = s->off;
  const int64_t *tab = s->tab, *dtab = s->dtab;
  uint32_t *hb = s->hb, *hj = s->hj;

  for (int col = tid; col < P; col += GRS_NT) {
    for (int k = 0; k < 64; k++) {
      const int w = ((((tid >> 5) << 6) + k) << 5) + (tid & 31);
      hb[w] = 0;
      hj[w] = 0;
    }
    int64_t sB = 0;
    int nv = 0;
    if (tfull) {
      for (int r = 0; r < T; r++)
        for (int x = 0; x < T; x++) {
          const uint32_t v = win[r * W + col + x];
          if (!(v & GRS_INVALID)) {
            sB += dtab[grs_hinc (hb, tid, (int) v)];
            nv++;
          }
        }
    }
    for (int oy = 0; oy < P; oy++) {
      if (tfull && oy > 0) {
        const uint16_t *ro = win + (oy - 1) * W + col, *ri = win + (oy + T - 1) * W + col;
        for (int x = 0; x < T; x++) {
          const uint32_t vo = ro[x];
          if (!(vo & GRS_INVALID)) {
            sB -= dtab[grs_hdec (hb, tid, (int) vo)];
            nv--;
          }
          const uint32_t vi = ri[x];
          if (!(vi & GRS_INVALID)) {
            sB += dtab[grs_hinc (hb, tid, (int) vi)];
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
            sb += dtab[grs_hinc (hb, tid, (int) v)];
            n++;
          }
        }
        for (int r = 0; r < ntv; r++)
          grs_hzero (hb, tid, (int) (base[off[r]] & 255u));
      }
      int64_t sJ = 0, sA = 0;
      for (int gi = 0; gi < ng; gi++) {
        const int st = s->gstart[gi], en = st + s->gsize[gi];
        int cv = 0;
        for (int m = st; m < en; m++) {
          const uint32_t v = base[off[m]];
          if (!(v & GRS_INVALID)) {
            sJ += dtab[grs_hinc (hj, tid, (int) v)];
            cv++;
          }
        }
        sA += tab[cv];
        for (int m = st; m < en; m++)
          grs_hzero (hj, tid, (int) (base[off[m]] & 255u));
      }
      map[oy * P + col] = grs_score (sJ, sA, sb, n, g->min_valid, tab, s->lnn);
    }
  }
}

/* ---- A: per-thread argmax over its columns */
GRS_DEV void
grs_argmax_partial (const GrsGeom *g, GrsShared *s, int tid, const double *map)
{
  const int P = g->P;
  double bv = 0.0;
  int bi = -1;
  for (int col = tid; col < P; col += GRS_NT)
    for (int oy = 0; oy < P; oy++) {
      const int i = oy * P + col;
      const double v = map[i];
      if (isfinite (v) && (bi < 0 || v > bv || (v == bv && i < bi))) {
        bv = v;
        bi = i;
      }
    }
  s->pbest[tid] = bv;
  s->pidx[tid] = bi;
}

/* ---- B: the best of the partials (thread 0) */
GRS_DEV void
grs_argmax_reduce (GrsShared *s)
{
  double bv = 0.0;
  int bi = -1;
  for (int t = 0; t < GRS_NT; t++) {
    const int i = s->pidx[t];
    if (i < 0)
      continue;
    const double v = s->pbest[t];
    if (bi < 0 || v > bv || (v == bv && i < bi)) {
      bv = v;
      bi = i;
    }
  }
  s->misc[GRS_M_BEST] = bi;
}

/* ---- C: per-thread best separated local maximum */
GRS_DEV void
grs_second_partial (const GrsGeom *g, GrsShared *s, int tid, const double *map)
{
  const int P = g->P, best = s->misc[GRS_M_BEST];
  double sec = NAN;
  if (best >= 0) {
    const int bx = best % P, by = best / P;
    for (int col = tid; col < P; col += GRS_NT)
      for (int oy = 0; oy < P; oy++) {
        if (abs (col - bx) <= g->excl && abs (oy - by) <= g->excl)
          continue;
        const double v = map[oy * P + col];
        if (!isfinite (v) || (!isnan (sec) && v <= sec))
          continue;
        int local = 1;
        for (int j = -1; j <= 1 && local; j++)
          for (int i = -1; i <= 1; i++) {
            const int xx = col + i, yy = oy + j;
            if ((i || j) && xx >= 0 && yy >= 0 && xx < P && yy < P && map[yy * P + xx] > v) {
              local = 0;
              break;
            }
          }
        if (local)
          sec = v;
      }
  }
  s->psec[tid] = sec;
}

/* ---- F: the result (thread 0) */

/* The match from a finished score map, shared by both backends so that they agree bit
 * for bit: the best offset (best < 0: none) refined by a parabola along each axis, the
 * best of the nsec per-thread second peaks, the ratio and the flags.  FALSE when there
 * is no score; else the caller counts the valid pixels at the best offset (window
 * position (out->ix + R, out->iy + R)) in its own window form and sets out->valid. */
GRS_DEV bool
grs_match_from_map (int P, int R, int best, const double *map, const double *psec,
    int nsec, bool clipped, bool flat, GrNmiSparseMatch *out)
{
  GrNmiSparseMatch m;
  m.flags = 0;
  if (clipped)
    m.flags |= GR_NMI_SPARSE_CLIPPED;
  if (flat)
    m.flags |= GR_NMI_SPARSE_FLAT;
  m.second = NAN;
  m.ratio = NAN;
  m.valid = 0;
  if (best < 0) {
    m.ix = m.iy = 0;
    m.dx = m.dy = NAN;
    m.score = NAN;
    m.flags |= GR_NMI_SPARSE_NO_SCORE | GR_NMI_SPARSE_NO_SECOND;
    *out = m;
    return false;
  }
  const int bx = best % P, by = best / P;
  const double sc = map[best];
  double x = bx, y = by;
  if (bx > 0 && bx < P - 1)
    x += grs_parabola (map[best - 1], sc, map[best + 1]);
  else if (P > 1)
    m.flags |= GR_NMI_SPARSE_AT_BORDER;
  if (by > 0 && by < P - 1)
    y += grs_parabola (map[best - P], sc, map[best + P]);
  else if (P > 1)
    m.flags |= GR_NMI_SPARSE_AT_BORDER;
  double sec = NAN;
  for (int t = 0; t < nsec; t++) {
    const double v = psec[t];
    if (!isnan (v) && (isnan (sec) || v > sec))
      sec = v;
  }
  if (isnan (sec)) {
    m.flags |= GR_NMI_SPARSE_NO_SECOND;
  } else {
    const double above = sec - 1.0;
    m.second = sec;
    m.ratio = above > 0.0 ? (sc - 1.0) / above : INFINITY;
  }
  m.ix = bx - R;
  m.iy = by - R;
  m.dx = x - R;
  m.dy = y - R;
  m.score = sc;
  *out = m;
  return true;
}

GRS_DEV void
grs_finish (const GrsGeom *g, GrsShared *s, const double *map, GrNmiSparseMatch *out)
{
  const int ntv = s->misc[GRS_M_NTV];
  const bool flat = ntv > 0 && s->misc[GRS_M_NGROUPS] == 1 && s->gsize[0] == ntv;
  if (!grs_match_from_map (g->P, g->R, s->misc[GRS_M_BEST], map, s->psec, GRS_NT,
          s->misc[GRS_M_CLIPPED] != 0, flat, out))
    return;
  int nvalid = 0;
  const uint16_t *base = s->win + (out->iy + g->R) * g->W + (out->ix + g->R);
  for (int r = 0; r < ntv; r++)
    nvalid += !(base[s->off[r]] & GRS_INVALID);
  out->valid = nvalid;
}

#endif
