/* Sparse NMI matching: the CUDA backend (see nmi_sparse.h for the contract and
 * nmi_sparse_impl.h for the algorithm that the CPU backend runs).
 *
 * The CUDA kernel computes, per offset, the same four integers as the CPU backend
 * (n jointly valid pixels; S(A), S(B), S(A,B), the sums of c ln c in units of 2^-40)
 * by a different route, and turns them into doubles with the same expressions
 * (grs_entropy, grs_parabola of nmi_sparse_impl.h).  Integer sums are exact in any
 * order, so scores, maps and results are bit-identical to the CPU backend.
 *
 * Design (docs/benchmarks-nmiregister.md has the counts behind it)
 *  - One CTA of NT threads per keypoint, a persistent grid that takes keypoints
 *    from an atomic counter.  Thread t owns "items": a displacement column and a
 *    band of its rows (NT / P bands when the columns do not fill the CTA).
 *  - Shared memory per CTA: the W x W window as 16-bit cells holding the byte
 *    offset of the pixel value's bin in a thread's private histogram (invalid
 *    pixels: a dummy bin past the real ones), the template's valid pixels sorted by value, the groups of equal
 *    template values (two pixels or more) as 4-aligned lists of window offsets,
 *    the c ln c tables, and one private histogram per thread of 16-bit bins, only
 *    as many bins as the control has values (16 levels: 32 bytes per thread, not
 *    512).  Bin v of thread t sits in 32-bit word (v / 2) * NT + t: bank t % 32.
 *  - Marginal S(B) (template wholly valid): slid down the item's rows, T cells
 *    out and T in per row, stored per offset as (S << 8 | n) in the score map's
 *    slot, which the same thread overwrites with the score afterwards.  A template
 *    with invalid pixels recounts it per offset as one more "group".
 *  - Joint S(A,B): within a group the template value is constant, so the joint
 *    counts are the counts of equal window values among the group's pixels.
 *    Groups of at most 4 pixels: counted by comparisons in registers, no memory.
 *    Larger groups: 4 pixels at a time (4 independent bin loads, duplicates among
 *    the 4 counted in registers), bins tagged with a per-group epoch in their high
 *    byte (a bin from an older group reads as 0), so no clearing pass; the first
 *    chunk of a group skips the loads, the last skips the stores.  No branch per
 *    pixel: invalid pixels and missing slots hit the dummy bin and add dtab[0] = 0.
 *    Groups of 2 to 4 come first, in a loop without stores, so their loads overlap.
 *  - Peak: argmax kept in registers while scoring, separated second maximum from
 *    the map (global memory: the caller's maps, or one scratch map per CTA), then
 *    the sub-pixel parabola, as gr_find_peak.
 * The phases are __host__ __device__ functions separated by barriers; a phase
 * never reads what another thread writes in it.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_util.h"
#include "nmi_sparse_cuda.h"
#include "nmi_sparse_impl.h"

#define CK(call, what) GR_CUDA_CHECK (call, what, GR_ERR_CUDA)

/* ---- per-keypoint algorithm (host and device) ------------------------------- */

#define SP_KEY_NONE 0xFFFFu       /* template key: invalid pixel */

enum { SP_M_NTV = 0, SP_M_NG, SP_M_CLIPPED, SP_M_TFULL, SP_M_BEST, SP_M_PPOS, SP_M_K,
  SP_M_NS, SP_M_N };

typedef struct {
  GrsGeom g;
  int T2;
  int nw;                  /* 32-bit histogram words per thread (bins / 2) */
  int bands;               /* row bands per displacement column */
  int nitems;              /* P * bands */
  uint32_t inv;            /* the cell of an invalid window pixel: the dummy bin */
} SpGeom;

typedef struct {
  int64_t *tab, *dtab;     /* [T2 + 1] */
  double *pbest, *psec;    /* [NT] */
  uint32_t *hist;          /* [nw * NT] */
  uint16_t *win;           /* [W * W] cells */
  int16_t *plist;          /* [4 T2 + 8] group lists, each 4-aligned */
  int32_t *grp;            /* [T2 + 2] (list position, size) per group */
  int32_t *pidx;           /* [NT] */
  int32_t *misc;           /* [SP_M_N] */
  uint16_t *key;           /* [T2] value << 8 | index, or SP_KEY_NONE */
  int16_t *off;            /* [T2] window offsets of the sorted valid pixels */
  uint8_t *sval;           /* [T2] their values */
} SpShared;

template <int NT>
GRS_DEV size_t
sp_layout (unsigned char *base, const SpGeom *G, SpShared *s)
{
  const size_t T2 = (size_t) G->T2, W = (size_t) G->g.W;
  size_t o = 0;
#define SP_TAKE(field, type, count)                                          \
  do {                                                                        \
    o = (o + 15) & ~(size_t) 15;                                              \
    s->field = (type *) (base + o);                                           \
    o += sizeof (type) * (size_t) (count);                                    \
  } while (0)
  SP_TAKE (tab, int64_t, T2 + 1);
  SP_TAKE (dtab, int64_t, T2 + 1);
  SP_TAKE (pbest, double, NT);
  SP_TAKE (psec, double, NT);
  SP_TAKE (hist, uint32_t, (size_t) (G->nw + 1) * NT);   /* + the dummy word */
  SP_TAKE (win, uint16_t, W * W);
  SP_TAKE (plist, int16_t, 4 * T2 + 8);
  SP_TAKE (grp, int32_t, T2 + 2);
  SP_TAKE (pidx, int32_t, NT);
  SP_TAKE (misc, int32_t, SP_M_N);
  SP_TAKE (key, uint16_t, T2);
  SP_TAKE (off, int16_t, T2);
  SP_TAKE (sval, uint8_t, T2);
#undef SP_TAKE
  return (o + 15) & ~(size_t) 15;
}

/* ---- L: window cells, template keys; per-thread "clipped" into pidx */
template <int NT>
GRS_DEV void
sp_load (const SpGeom *G, SpShared *s, int tid, const GrsControl *c, const uint8_t *tpl,
    const uint8_t *tm, int qx, int qy)
{
  const int W = G->g.W, WW = W * W, T2 = G->T2;
  const int x0 = qx - W / 2, y0 = qy - W / 2;
  int clipped = 0;
  for (int i0 = tid; i0 < WW; i0 += 4 * NT) {
    uint32_t v[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int i = i0 + j * NT;
      v[j] = 0x100u;
      if (i < WW) {
        const int yy = i / W, xx = i - yy * W;
        const int X = x0 + xx, Y = y0 + yy;
        if (X >= 0 && Y >= 0 && X < c->cw && Y < c->ch) {
          const size_t at = (size_t) Y * c->cw + X;
          const uint32_t p = c->pix[at];
          v[j] = (c->mask && !c->mask[at]) ? 0x100u : p;
        }
      }
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int i = i0 + j * NT;
      if (i < WW) {
        const uint32_t x = v[j];
        s->win[i] = (x & 0x100u) ? (uint16_t) G->inv
            : (uint16_t) ((x >> 1) * (4u * NT) + ((x & 1u) << 1));
        clipped |= (int) (x >> 8);
      }
    }
  }
  for (int i = tid; i < T2; i += NT)
    s->key[i] = (!tm || tm[i]) ? (uint16_t) (((uint32_t) tpl[i] << 8) | (uint32_t) i)
        : (uint16_t) SP_KEY_NONE;
  s->pidx[tid] = clipped;
}

/* ---- K: rank the valid template pixels by (value, raster index); thread 0 reduces
 * the flags */
template <int NT>
GRS_DEV void
sp_rank (const SpGeom *G, SpShared *s, int tid)
{
  const int T = G->g.T, W = G->g.W, T2 = G->T2;
  for (int i = tid; i < T2; i += NT) {
    const uint32_t ki = s->key[i];
    if (ki == SP_KEY_NONE)
      continue;
    int r = 0;
    for (int j = 0; j < T2; j++)
      r += s->key[j] < ki;
    const int ty = i / T, tx = i - ty * T;
    s->off[r] = (int16_t) (ty * W + tx);
    s->sval[r] = (uint8_t) (ki >> 8);
  }
  if (tid == 0) {
    int clipped = 0, ntv = 0;
    for (int t = 0; t < NT; t++)
      clipped |= s->pidx[t];
    for (int j = 0; j < T2; j++)
      ntv += s->key[j] != SP_KEY_NONE;
    s->misc[SP_M_CLIPPED] = clipped;
    s->misc[SP_M_NTV] = ntv;
    s->misc[SP_M_TFULL] = ntv == T2;
  }
}

/* ---- G: groups of two or more equal template values as 4-aligned offset lists,
 * the groups of 2 to 4 pixels first (SP_M_NS of them, one 4-slot each); with an
 * incomplete template, all valid pixels as one more list (thread 0) */
GRS_DEV void
sp_groups (SpShared *s)
{
  const int ntv = s->misc[SP_M_NTV];
  int ng = 0, pos = 0;
  for (int pass = 0; pass < 2; pass++) {
    int r = 0;
    while (r < ntv) {
      int e = r + 1;
      while (e < ntv && s->sval[e] == s->sval[r])
        e++;
      const int sz = e - r;
      if (pass == 0 ? (sz >= 2 && sz <= 4) : sz > 4) {
        s->grp[2 * ng] = pos;
        s->grp[2 * ng + 1] = sz;
        int m = 0;
        for (; m < sz; m++)
          s->plist[pos + m] = s->off[r + m];
        for (; m & 3; m++)
          s->plist[pos + m] = 0;
        pos += m;
        ng++;
      }
      r = e;
    }
    if (pass == 0)
      s->misc[SP_M_NS] = ng;
  }
  s->misc[SP_M_NG] = ng;
  s->misc[SP_M_PPOS] = pos;
  if (!s->misc[SP_M_TFULL]) {
    int m = 0;
    for (; m < ntv; m++)
      s->plist[pos + m] = s->off[m];
    for (; m & 3; m++)
      s->plist[pos + m] = 0;
  }
}

/* earlier slots of a chunk with the same cell */
GRS_DEV void
sp_dups (const uint32_t c[4], uint32_t k[4])
{
  k[0] = 0;
  k[1] = (uint32_t) (c[1] == c[0]);
  k[2] = (uint32_t) (c[2] == c[0]) + (uint32_t) (c[2] == c[1]);
  k[3] = (uint32_t) (c[3] == c[0]) + (uint32_t) (c[3] == c[1]) + (uint32_t) (c[3] == c[2]);
}

GRS_DEV uint32_t
sp_bin_get (const unsigned char *hb, uint32_t cell)
{
  return *(const uint16_t *) (hb + cell);
}

GRS_DEV void
sp_bin_set (unsigned char *hb, uint32_t cell, uint32_t v)
{
  *(uint16_t *) (hb + cell) = (uint16_t) v;
}

/* ---- S helpers.  Pixels go 4 at a time ("chunks"), without branches: an invalid
 * window pixel's cell (G->inv) and a missing slot both point at the thread's dummy
 * bin (word nw), so every bin load and store is harmless and runs unconditionally;
 * a slot's contribution is dtab[0] = 0 when it is the dummy.  Valid cells never
 * equal the dummy, so the duplicate counts of valid slots are exact. */
GRS_DEV void
sp_cells (const uint16_t *rc, const int16_t *lst, int nact, uint32_t dum, uint32_t c[4])
{
  const uint2 o = *(const uint2 *) lst;     /* pad entries are 0: inside the window */
  const uint32_t c0 = rc[o.x & 0xffffu], c1 = rc[o.x >> 16];
  const uint32_t c2 = rc[o.y & 0xffffu], c3 = rc[o.y >> 16];
  c[0] = c0;
  c[1] = nact > 1 ? c1 : dum;
  c[2] = nact > 2 ? c2 : dum;
  c[3] = nact > 3 ? c3 : dum;
}

GRS_DEV void
sp_rcells (const uint16_t *row, int nact, uint32_t dum, uint32_t c[4])
{
  c[0] = row[0];
  c[1] = nact > 1 ? (uint32_t) row[1] : dum;
  c[2] = nact > 2 ? (uint32_t) row[2] : dum;
  c[3] = nact > 3 ? (uint32_t) row[3] : dum;
}

GRS_DEV void
sp_jchunk (const uint32_t c[4], bool first, bool last, uint32_t E, uint32_t dum,
    unsigned char *hb, const int64_t *dtab, int64_t *sJ, int *cv)
{
  uint32_t k[4], b[4], nv[4];
  sp_dups (c, k);
  if (first) {
#pragma unroll
    for (int j = 0; j < 4; j++)
      b[j] = E;
  } else {
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const uint32_t x = sp_bin_get (hb, c[j]);
      b[j] = x > E ? x : E;
    }
  }
#pragma unroll
  for (int j = 0; j < 4; j++)
    nv[j] = b[j] + 1u + k[j];
  if (!last) {
#pragma unroll
    for (int j = 0; j < 4; j++)
      sp_bin_set (hb, c[j], nv[j]);
  }
  int64_t acc = 0;
  int nvalid = 0;
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const bool ok = c[j] != dum;
    acc += dtab[ok ? nv[j] - E : 0u];
    nvalid += ok;
  }
  *sJ += acc;
  *cv += nvalid;
}

template <int NT>
GRS_DEV void
sp_jgroup (const uint16_t *rc, const int16_t *lst, int gs, unsigned char *hb,
    uint32_t *hist, int tid, int nw, uint32_t dum, const int64_t *dtab, uint32_t *E,
    int64_t *sJ, int *cv)
{
  if (gs > 4) {
    if (*E >= 0xFF00u) {
      for (int w = 0; w < nw; w++)
        hist[w * NT + tid] = 0;
      *E = 0;
    }
    *E += 0x100u;
  }
  const uint32_t ep = *E;
  uint32_t c[4];
  sp_cells (rc, lst, gs, dum, c);
  for (int m = 0; m < gs; m += 4) {
    const bool last = m + 4 >= gs;
    uint32_t cn[4] = { dum, dum, dum, dum };
    if (!last)
      sp_cells (rc, lst + m + 4, gs - m - 4, dum, cn);
    sp_jchunk (c, m == 0, last, ep, dum, hb, dtab, sJ, cv);
#pragma unroll
    for (int j = 0; j < 4; j++)
      c[j] = cn[j];
  }
}

template <bool INC>
GRS_DEV void
sp_mchunk (const uint32_t c[4], uint32_t dum, unsigned char *hb, const int64_t *dtab,
    int64_t *sB, int *n)
{
  uint32_t k[4], b[4];
  sp_dups (c, k);
#pragma unroll
  for (int j = 0; j < 4; j++)
    b[j] = sp_bin_get (hb, c[j]);
  int64_t acc = 0;
  int cnt = 0;
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const bool ok = c[j] != dum;
    if (INC) {
      const uint32_t nv = b[j] + 1u + k[j];
      sp_bin_set (hb, c[j], nv);
      acc += dtab[ok ? nv : 0u];
    } else {
      const uint32_t old = b[j] - k[j];
      sp_bin_set (hb, c[j], old - 1u);
      acc -= dtab[ok ? old : 0u];
    }
    cnt += ok;
  }
  *sB += acc;
  *n += INC ? cnt : -cnt;
}

/* ---- S: scores of thread tid's items into map, argmax partial */
template <int NT>
GRS_DEV void
sp_scores (const SpGeom *G, SpShared *s, int tid, double *map, const double *lnn)
{
  const int T = G->g.T, W = G->g.W, P = G->g.P, nw = G->nw;
  const int ntv = s->misc[SP_M_NTV], ng = s->misc[SP_M_NG], ns = s->misc[SP_M_NS];
  const int tfull = s->misc[SP_M_TFULL], ppos = s->misc[SP_M_PPOS];
  const int CH = (T + 3) >> 2;
  const uint32_t dum = G->inv;
  unsigned char *hb = (unsigned char *) s->hist + 4 * tid;
  const int64_t *tab = s->tab, *dtab = s->dtab;
  const uint16_t *win = s->win;
  long long *map64 = (long long *) map;
  double bv = 0.0;
  int bi = -1;

  for (int item = tid; item < G->nitems; item += NT) {
    const int col = item % P, band = item / P;
    const int r0 = band * P / G->bands, r1 = (band + 1) * P / G->bands;
    for (int w = 0; w < nw; w++)
      s->hist[w * NT + tid] = 0;
    if (tfull) {
      int64_t sB = 0;
      int n = 0;
      for (int y = 0; y < T; y++) {
        const uint16_t *row = win + (r0 + y) * W + col;
        for (int x = 0; x < T; x += 4) {
          uint32_t c[4];
          sp_rcells (row + x, T - x, dum, c);
          sp_mchunk<true> (c, dum, hb, dtab, &sB, &n);
        }
      }
      map64[r0 * P + col] = (long long) ((sB << 8) | n);
      for (int oy = r0 + 1; oy < r1; oy++) {
        const uint16_t *ro = win + (oy - 1) * W + col, *ri = win + (oy + T - 1) * W + col;
        uint32_t c[4];
        sp_rcells (ro, T, dum, c);
        for (int q = 0; q < 2 * CH; q++) {
          uint32_t cn[4] = { dum, dum, dum, dum };
          const int qn = q + 1;
          if (qn < 2 * CH) {
            const int x = 4 * (qn < CH ? qn : qn - CH);
            sp_rcells ((qn < CH ? ro : ri) + x, T - x, dum, cn);
          }
          if (q < CH)
            sp_mchunk<false> (c, dum, hb, dtab, &sB, &n);
          else
            sp_mchunk<true> (c, dum, hb, dtab, &sB, &n);
#pragma unroll
          for (int j = 0; j < 4; j++)
            c[j] = cn[j];
        }
        map64[oy * P + col] = (long long) ((sB << 8) | n);
      }
    }
    uint32_t E = 0;
    long long pk = tfull ? map64[r0 * P + col] : 0;
    for (int oy = r0; oy < r1; oy++) {
      const uint16_t *rc = win + oy * W + col;
      int64_t sJ = 0, sA = 0, sb = 0;
      int n = 0;
      if (tfull) {
        sb = (int64_t) (pk >> 8);
        n = (int) (pk & 255);
        if (oy + 1 < r1)
          pk = map64[(oy + 1) * P + col];
      }
      /* groups of 2 to 4 pixels: counts from comparisons alone, no stores */
      for (int gi = 0; gi < ns; gi++) {
        const int gs = s->grp[2 * gi + 1];
        uint32_t c[4], k[4];
        sp_cells (rc, s->plist + 4 * gi, gs, dum, c);
        sp_dups (c, k);
        int64_t acc = 0;
        int cv = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
          const bool ok = c[j] != dum;
          acc += dtab[ok ? 1u + k[j] : 0u];
          cv += ok;
        }
        sJ += acc;
        sA += tab[cv];
      }
      for (int gi = ns; gi < ng; gi++) {
        const int gp = s->grp[2 * gi], gs = s->grp[2 * gi + 1];
        int cv = 0;
        sp_jgroup<NT> (rc, s->plist + gp, gs, hb, s->hist, tid, nw, dum, dtab, &E, &sJ, &cv);
        sA += tab[cv];
      }
      if (!tfull && ntv > 0) {
        int cv = 0;
        sp_jgroup<NT> (rc, s->plist + ppos, ntv, hb, s->hist, tid, nw, dum, dtab, &E, &sb,
            &cv);
        n = cv;
      }
      double score;
      if (n < G->g.min_valid || n == 0) {
        score = NAN;
      } else {
        const double hab = grs_entropy (sJ, n, tab, lnn);
        const double ha = grs_entropy (sA, n, tab, lnn);
        const double hbv = grs_entropy (sb, n, tab, lnn);
        score = hab > 0.0 ? (ha + hbv) / hab : 1.0;
      }
      const int i = oy * P + col;
      map[i] = score;
      if (isfinite (score) && (bi < 0 || score > bv || (score == bv && i < bi))) {
        bv = score;
        bi = i;
      }
    }
  }
  s->pbest[tid] = bv;
  s->pidx[tid] = bi;
}

/* ---- B: the best of the partials (thread 0) */
template <int NT>
GRS_DEV void
sp_argmax (SpShared *s)
{
  double bv = 0.0;
  int bi = -1;
  for (int t = 0; t < NT; t++) {
    const int i = s->pidx[t];
    if (i < 0)
      continue;
    const double v = s->pbest[t];
    if (bi < 0 || v > bv || (v == bv && i < bi)) {
      bv = v;
      bi = i;
    }
  }
  s->misc[SP_M_BEST] = bi;
}

/* ---- C: per-thread best separated local maximum over its items */
template <int NT>
GRS_DEV void
sp_second (const SpGeom *G, SpShared *s, int tid, const double *map)
{
  const int P = G->g.P, best = s->misc[SP_M_BEST];
  double sec = NAN;
  if (best >= 0) {
    const int bx = best % P, by = best / P;
    for (int item = tid; item < G->nitems; item += NT) {
      const int col = item % P, band = item / P;
      const int r0 = band * P / G->bands, r1 = (band + 1) * P / G->bands;
      for (int oy = r0; oy < r1; oy++) {
        if (abs (col - bx) <= G->g.excl && abs (oy - by) <= G->g.excl)
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
  }
  s->psec[tid] = sec;
}

/* ---- F: the result (thread 0): grs_match_from_map, as grs_finish */
template <int NT>
GRS_DEV void
sp_finish (const SpGeom *G, SpShared *s, const double *map, GrNmiSparseMatch *out)
{
  const int ntv = s->misc[SP_M_NTV];
  const bool flat = ntv > 0 && s->misc[SP_M_NG] == 1 && s->grp[1] == ntv;
  if (!grs_match_from_map (G->g.P, G->g.R, s->misc[SP_M_BEST], map, s->psec, NT,
          s->misc[SP_M_CLIPPED] != 0, flat, out))
    return;
  int nvalid = 0;
  const uint16_t *base = s->win + (out->iy + G->g.R) * G->g.W + (out->ix + G->g.R);
  for (int r = 0; r < ntv; r++)
    nvalid += base[(uint16_t) s->off[r]] != G->inv;
  out->valid = nvalid;
}

typedef struct {
  SpGeom G;
  GrsControl ctl;
  const uint8_t *tpl;
  const uint8_t *tmask;          /* or NULL */
  const GrNmiSparseQuery *q;
  int n;
  const int64_t *tab, *dtab;
  const double *lnn;
  double *maps;                  /* per keypoint (maps_per_keypoint) or per CTA */
  int maps_per_keypoint;
  GrNmiSparseMatch *out;
  int *counter;                  /* next keypoint (device) */
} SpArgs;

#ifdef __CUDA_ARCH__
#define SP_SYNC() __syncthreads ()
#else
#define SP_SYNC() do { } while (0)
#endif
/* a phase: every thread (EMU: thread after thread, on the host), then a barrier */
#define SP_PHASE(stmt)                                                        \
  do {                                                                        \
    if (EMU) {                                                                \
      for (int tid = 0; tid < NT; tid++) {                                    \
        stmt;                                                                 \
      }                                                                       \
    } else {                                                                  \
      const int tid = tid_dev;                                                \
      stmt;                                                                   \
    }                                                                         \
    SP_SYNC ();                                                               \
  } while (0)
#define SP_SOLO(stmt)                                                         \
  do {                                                                        \
    if (EMU || tid_dev == 0) {                                                \
      stmt;                                                                   \
    }                                                                         \
    SP_SYNC ();                                                               \
  } while (0)

/* one keypoint, all phases; EMU runs the CTA's threads one after another */
template <int NT, bool EMU>
GRS_DEV void
sp_keypoint (const SpArgs *a, SpShared *s, int k, double *map, int tid_dev)
{
  const int T2 = a->G.T2;
  const uint8_t *tpl = a->tpl + (size_t) k * T2;
  const uint8_t *tm = a->tmask ? a->tmask + (size_t) k * T2 : NULL;
  const int qx = a->q[k].x, qy = a->q[k].y;
  SP_PHASE (sp_load<NT> (&a->G, s, tid, &a->ctl, tpl, tm, qx, qy));
  SP_PHASE (sp_rank<NT> (&a->G, s, tid));
  SP_SOLO (sp_groups (s));
  SP_PHASE (sp_scores<NT> (&a->G, s, tid, map, a->lnn));
  SP_SOLO (sp_argmax<NT> (s));
  SP_PHASE (sp_second<NT> (&a->G, s, tid, map));
  SP_SOLO (sp_finish<NT> (&a->G, s, map, &a->out[k]));
}

/* ---- device code ------------------------------------------------------------ */

template <int NT>
__global__ void __launch_bounds__ (NT)
nmi_sparse_kernel (const SpArgs args)
{
  static_assert (NT % 32 == 0 && NT <= 64, "cells hold bin offsets below 0xFFFF");
  extern __shared__ __align__ (16) unsigned char smem[];
  const SpArgs a = args;
  SpShared s;
  sp_layout<NT> (smem, &a.G, &s);
  const int tid = threadIdx.x;
  for (int i = tid; i <= a.G.T2; i += NT) {
    s.tab[i] = a.tab[i];
    s.dtab[i] = a.dtab[i];
  }
  const size_t P2 = (size_t) a.G.g.P * a.G.g.P;
  for (;;) {
    if (tid == 0)
      s.misc[SP_M_K] = atomicAdd (a.counter, 1);
    __syncthreads ();
    const int k = s.misc[SP_M_K];
    if (k >= a.n)
      break;
    double *map = a.maps + (a.maps_per_keypoint ? (size_t) k : (size_t) blockIdx.x) * P2;
    sp_keypoint<NT, false> (&a, &s, k, map, tid);
  }
}

/* ---- templates cut on the device (gr_nmi_sparse_cut_templates) -------------- */

__global__ void
cut_templates_kernel (const uint8_t *__restrict__ pix, size_t ps,
    const uint8_t *__restrict__ mask, size_t ms, int w, int h,
    const int32_t *__restrict__ xy, int T, uint8_t *__restrict__ tpl,
    uint8_t *__restrict__ tmk)
{
  const int k = blockIdx.x, T2 = T * T, h2 = T / 2;
  for (int t = threadIdx.x; t < T2; t += blockDim.x) {
    const int i = t % T, j = t / T;
    const int x = xy[2 * k] - h2 + i, y = xy[2 * k + 1] - h2 + j;
    const bool ok = x >= 0 && y >= 0 && x < w && y < h &&
        (!mask || mask[(size_t) y * ms + x]);
    tpl[(size_t) k * T2 + t] = ok ? pix[(size_t) y * ps + x] : 0;
    if (tmk)
      tmk[(size_t) k * T2 + t] = ok ? 1 : 0;
  }
}

/* ---- host side ------------------------------------------------------------- */

struct GrNmiSparseCuda {
  int device;
  int nsm;
  size_t smem_optin;
  cudaStream_t stream;
  cudaEvent_t ev0, ev1;
  bool have_events;
  double last_ms;
  /* resident */
  uint8_t *d_ctl, *d_cmask;
  bool ctl_borrowed;             /* set_control_device: not ours to free */
  int cw, ch;
  int nbins;                     /* even, > the largest valid control value */
  int64_t *d_tab, *d_dtab;
  double *d_lnn;
  int *d_counter;
  /* launch configuration of the last run */
  size_t cfg_smem;
  int cfg_per_sm;
  /* per run, grown on demand */
  uint8_t *d_tpl, *d_tmask;
  size_t tpl_cap, tmask_cap;
  GrNmiSparseQuery *d_q;
  size_t q_cap;
  int32_t *d_xy;                 /* template centres (cut on the device) */
  size_t xy_cap;
  GrNmiSparseMatch *d_out;
  size_t out_cap;
  double *d_maps;
  size_t maps_cap;
};

template <typename P>
static cudaError_t
grow (P **ptr, size_t *cap, size_t need_bytes)
{
  if (*ptr && *cap >= need_bytes)
    return cudaSuccess;
  cudaFree (*ptr);
  *ptr = NULL;
  *cap = 0;
  cudaError_t e = gr_cuda_malloc ((void **) ptr, need_bytes);
  if (e == cudaSuccess)
    *cap = need_bytes;
  return e;
}

extern "C" void
gr_nmi_sparse_cuda_free (GrNmiSparseCuda *c)
{
  if (!c)
    return;
  cudaSetDevice (c->device);
  if (c->stream)
    cudaStreamSynchronize (c->stream);
  if (!c->ctl_borrowed) {
    cudaFree (c->d_ctl);
    cudaFree (c->d_cmask);
  }
  cudaFree (c->d_xy);
  cudaFree (c->d_tab);
  cudaFree (c->d_dtab);
  cudaFree (c->d_lnn);
  cudaFree (c->d_counter);
  cudaFree (c->d_tpl);
  cudaFree (c->d_tmask);
  cudaFree (c->d_q);
  cudaFree (c->d_out);
  cudaFree (c->d_maps);
  if (c->have_events) {
    cudaEventDestroy (c->ev0);
    cudaEventDestroy (c->ev1);
  }
  if (c->stream)
    cudaStreamDestroy (c->stream);
  cudaGetLastError ();
  free (c);
}

static GrStatus
cuda_init (GrNmiSparseCuda *c, const int64_t *tab, const int64_t *dtab,
    const double *lnn, char *errbuf, size_t errlen)
{
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  cudaDeviceProp prop;
  CK (cudaGetDeviceProperties (&prop, c->device), "cudaGetDeviceProperties");
  c->nsm = prop.multiProcessorCount;
  c->smem_optin = prop.sharedMemPerBlockOptin;
  CK (cudaStreamCreateWithFlags (&c->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  CK (gr_cuda_malloc (&c->d_tab, sizeof (int64_t) * GRS_TAB), "cudaMalloc (tables)");
  CK (gr_cuda_malloc (&c->d_dtab, sizeof (int64_t) * GRS_TAB), "cudaMalloc (tables)");
  CK (gr_cuda_malloc (&c->d_lnn, sizeof (double) * GRS_TAB), "cudaMalloc (tables)");
  CK (gr_cuda_malloc (&c->d_counter, sizeof (int)), "cudaMalloc (counter)");
  CK (gr_cuda_upload (c->d_tab, tab, sizeof (int64_t) * GRS_TAB),
      "table upload");
  CK (gr_cuda_upload (c->d_dtab, dtab, sizeof (int64_t) * GRS_TAB),
      "table upload");
  CK (gr_cuda_upload (c->d_lnn, lnn, sizeof (double) * GRS_TAB),
      "table upload");
  if (cudaEventCreate (&c->ev0) == cudaSuccess && cudaEventCreate (&c->ev1) == cudaSuccess)
    c->have_events = true;
  cudaGetLastError ();
  return GR_OK;
}

extern "C" GrNmiSparseCuda *
gr_nmi_sparse_cuda_new (int device, const int64_t *tab, const int64_t *dtab,
    const double *lnn, char *errbuf, size_t errlen)
{
  GrNmiSparseCuda *c = (GrNmiSparseCuda *) calloc (1, sizeof *c);
  if (!c) {
    gr_set_err (errbuf, errlen, "out of host memory");
    return NULL;
  }
  c->device = device;
  c->last_ms = -1.0;
  if (cuda_init (c, tab, dtab, lnn, errbuf, errlen) != GR_OK) {
    gr_nmi_sparse_cuda_free (c);
    return NULL;
  }
  return c;
}

extern "C" double
gr_nmi_sparse_cuda_last_ms (const GrNmiSparseCuda *c)
{
  return c ? c->last_ms : -1.0;
}

extern "C" GrStatus
gr_nmi_sparse_cuda_set_control (GrNmiSparseCuda *c, const uint8_t *pix,
    const uint8_t *mask, int width, int height, char *errbuf, size_t errlen)
{
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  CK (cudaStreamSynchronize (c->stream), "cudaStreamSynchronize");
  if (!c->ctl_borrowed) {
    cudaFree (c->d_ctl);
    cudaFree (c->d_cmask);
  }
  c->d_ctl = NULL;
  c->d_cmask = NULL;
  c->ctl_borrowed = false;
  c->cw = c->ch = 0;
  const size_t n = (size_t) width * height;
  /* the histograms need a bin per value that a valid window pixel can take */
  unsigned vmax = 0;
  for (size_t i = 0; i < n; i++)
    if ((!mask || mask[i]) && pix[i] > vmax)
      vmax = pix[i];
  CK (gr_cuda_malloc (&c->d_ctl, n), "cudaMalloc (control)");
  CK (gr_cuda_upload (c->d_ctl, pix, n), "control upload");
  if (mask) {
    CK (gr_cuda_malloc (&c->d_cmask, n), "cudaMalloc (control mask)");
    CK (gr_cuda_upload (c->d_cmask, mask, n), "control mask upload");
  }
  c->cw = width;
  c->ch = height;
  c->nbins = (int) ((vmax + 2) & ~1u);
  return GR_OK;
}

extern "C" GrStatus
gr_nmi_sparse_cuda_set_control_device (GrNmiSparseCuda *c, const uint8_t *d_pix,
    const uint8_t *d_mask, int width, int height, int vmax, char *errbuf, size_t errlen)
{
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  CK (cudaStreamSynchronize (c->stream), "cudaStreamSynchronize");
  if (!c->ctl_borrowed) {
    cudaFree (c->d_ctl);
    cudaFree (c->d_cmask);
  }
  c->d_ctl = (uint8_t *) d_pix;
  c->d_cmask = (uint8_t *) d_mask;
  c->ctl_borrowed = true;
  c->cw = width;
  c->ch = height;
  c->nbins = (int) (((unsigned) vmax + 2) & ~1u);
  return GR_OK;
}

#define SP_NT 64                 /* threads per keypoint */

static GrStatus
sp_configure (GrNmiSparseCuda *c, size_t smem, char *errbuf, size_t errlen)
{
  if (c->cfg_smem == smem)
    return GR_OK;
  /* The limit is a property of the kernel function, shared by every engine in the
   * process: an engine of another stream that set it lower for a smaller window would
   * make our launch fail ("invalid argument").  Every engine sets the device's opt-in
   * maximum, so the value never moves, and the occupancy below uses our own size. */
  CK (cudaFuncSetAttribute (nmi_sparse_kernel<SP_NT>,
          cudaFuncAttributeMaxDynamicSharedMemorySize, (int) c->smem_optin),
      "cudaFuncSetAttribute (shared memory)");
  CK (cudaFuncSetAttribute (nmi_sparse_kernel<SP_NT>,
          cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared),
      "cudaFuncSetAttribute (carveout)");
  int per_sm = 0;
  CK (cudaOccupancyMaxActiveBlocksPerMultiprocessor (&per_sm, nmi_sparse_kernel<SP_NT>,
          SP_NT, smem), "occupancy query");
  if (per_sm < 1) {
    gr_set_err (errbuf, errlen, "sparse NMI kernel cannot be resident on device %d",
        c->device);
    return GR_ERR_CUDA;
  }
  c->cfg_smem = smem;
  c->cfg_per_sm = per_sm;
  return GR_OK;
}

/* The templates come from the host (templates / tmasks), from device memory
 * (d_tpl_in / d_tmask_in) or are cut on the device from d_img at xy. */
static GrStatus
run_impl (GrNmiSparseCuda *c, const GrNmiSparseParams *p, const uint8_t *templates,
    const uint8_t *tmasks, const uint8_t *d_tpl_in, const uint8_t *d_tmask_in,
    const GrImage8 *d_img, const int32_t *xy, bool with_masks,
    const GrNmiSparseQuery *queries, int n, GrNmiSparseMatch *out, double *maps,
    char *errbuf, size_t errlen)
{
  const bool cut = d_img != NULL, dev = d_tpl_in != NULL;
  const bool has_mask = cut ? with_masks : dev ? d_tmask_in != NULL : tmasks != NULL;
  if (!c->d_ctl || c->cw == 0) {      /* cw is set once the whole upload succeeded */
    gr_set_err (errbuf, errlen, "no control image set");
    return GR_ERR_INVALID;
  }
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  const int NT = SP_NT;
  SpArgs a;
  memset (&a, 0, sizeof a);
  a.G.g.T = p->template_size;
  a.G.g.W = p->window_size;
  a.G.g.P = a.G.g.W - a.G.g.T + 1;
  a.G.g.R = (a.G.g.W - a.G.g.T) / 2;
  a.G.g.min_valid = p->min_valid;
  a.G.g.excl = p->peak_exclusion;
  a.G.T2 = a.G.g.T * a.G.g.T;
  a.G.nw = c->nbins / 2;
  const int P = a.G.g.P;
  int bands = P >= NT ? 1 : NT / P;
  if (bands > P)
    bands = P;
  a.G.bands = bands;
  a.G.nitems = P * bands;
  a.G.inv = (uint32_t) a.G.nw * 4u * NT;      /* the dummy bin, word nw */
  SpShared probe;
  const size_t smem = sp_layout<SP_NT> (NULL, &a.G, &probe);
  if (smem > c->smem_optin) {
    gr_set_err (errbuf, errlen, "window %d needs %zu bytes of shared memory, device %d "
        "offers %zu", a.G.g.W, smem, c->device, c->smem_optin);
    return GR_ERR_INVALID;
  }
  GrStatus st = sp_configure (c, smem, errbuf, errlen);
  if (st != GR_OK)
    return st;
  long grid = (long) c->nsm * c->cfg_per_sm;
  if (grid > n)
    grid = n;
  const size_t T2 = (size_t) a.G.T2;
  const size_t P2 = (size_t) P * P;
  const size_t nmaps = maps ? (size_t) n : (size_t) grid;

  if (!dev)
    CK (grow (&c->d_tpl, &c->tpl_cap, T2 * n), "cudaMalloc (templates)");
  if (has_mask && !dev)
    CK (grow (&c->d_tmask, &c->tmask_cap, T2 * n), "cudaMalloc (template masks)");
  if (cut)
    CK (grow (&c->d_xy, &c->xy_cap, sizeof (int32_t) * 2 * n), "cudaMalloc (centres)");
  CK (grow (&c->d_q, &c->q_cap, sizeof (GrNmiSparseQuery) * n), "cudaMalloc (queries)");
  CK (grow (&c->d_out, &c->out_cap, sizeof (GrNmiSparseMatch) * n), "cudaMalloc (results)");
  CK (grow (&c->d_maps, &c->maps_cap, sizeof (double) * P2 * nmaps), "cudaMalloc (maps)");

  cudaStream_t s = c->stream;
  if (cut) {
    CK (cudaMemcpyAsync (c->d_xy, xy, sizeof (int32_t) * 2 * n, cudaMemcpyHostToDevice,
            s), "centre upload");
    cut_templates_kernel<<<(unsigned) n, 128, 0, s>>> (d_img->pix, d_img->pix_stride,
        d_img->mask, d_img->mask_stride, d_img->width, d_img->height, c->d_xy,
        a.G.g.T, c->d_tpl, has_mask ? c->d_tmask : NULL);
    CK (cudaGetLastError (), "template cut launch");
  } else if (!dev) {
    CK (cudaMemcpyAsync (c->d_tpl, templates, T2 * n, cudaMemcpyHostToDevice, s),
        "template upload");
    if (tmasks)
      CK (cudaMemcpyAsync (c->d_tmask, tmasks, T2 * n, cudaMemcpyHostToDevice, s),
          "template mask upload");
  }
  CK (cudaMemcpyAsync (c->d_q, queries, sizeof (GrNmiSparseQuery) * n,
          cudaMemcpyHostToDevice, s), "query upload");
  CK (cudaMemsetAsync (c->d_counter, 0, sizeof (int), s), "counter reset");

  a.ctl.pix = c->d_ctl;
  a.ctl.mask = c->d_cmask;
  a.ctl.cw = c->cw;
  a.ctl.ch = c->ch;
  a.tpl = dev ? d_tpl_in : c->d_tpl;
  a.tmask = !has_mask ? NULL : dev ? d_tmask_in : c->d_tmask;
  a.q = c->d_q;
  a.n = n;
  a.tab = c->d_tab;
  a.dtab = c->d_dtab;
  a.lnn = c->d_lnn;
  a.maps = c->d_maps;
  a.maps_per_keypoint = maps != NULL;
  a.out = c->d_out;
  a.counter = c->d_counter;

  if (c->have_events)
    CK (cudaEventRecord (c->ev0, s), "cudaEventRecord");
  nmi_sparse_kernel<SP_NT><<<(unsigned) grid, SP_NT, smem, s>>> (a);
  CK (cudaGetLastError (), "sparse NMI kernel launch");
  if (c->have_events)
    CK (cudaEventRecord (c->ev1, s), "cudaEventRecord");
  CK (cudaMemcpyAsync (out, c->d_out, sizeof (GrNmiSparseMatch) * n,
          cudaMemcpyDeviceToHost, s), "result download");
  if (maps)
    CK (cudaMemcpyAsync (maps, c->d_maps, sizeof (double) * P2 * n,
            cudaMemcpyDeviceToHost, s), "map download");
  CK (cudaStreamSynchronize (s), "sparse NMI kernel");
  c->last_ms = -1.0;
  if (c->have_events) {
    float ms = 0.f;
    if (cudaEventElapsedTime (&ms, c->ev0, c->ev1) == cudaSuccess)
      c->last_ms = ms;
    else
      cudaGetLastError ();
  }
  return GR_OK;
}

extern "C" GrStatus
gr_nmi_sparse_cuda_run (GrNmiSparseCuda *c, const GrNmiSparseParams *p,
    const uint8_t *templates, const uint8_t *tmasks, const GrNmiSparseQuery *queries,
    int n, GrNmiSparseMatch *out, double *maps, char *errbuf, size_t errlen)
{
  return run_impl (c, p, templates, tmasks, NULL, NULL, NULL, NULL, false, queries, n,
      out, maps, errbuf, errlen);
}

extern "C" GrStatus
gr_nmi_sparse_cuda_run_dev (GrNmiSparseCuda *c, const GrNmiSparseParams *p,
    const uint8_t *d_templates, const uint8_t *d_tmasks, const GrImage8 *d_img,
    const int32_t *xy, bool with_masks, const GrNmiSparseQuery *queries, int n,
    GrNmiSparseMatch *out, char *errbuf, size_t errlen)
{
  return run_impl (c, p, NULL, NULL, d_templates, d_tmasks, d_img, xy, with_masks,
      queries, n, out, NULL, errbuf, errlen);
}
