/* Dense NMI translation search: the CUDA backend (see nmi_dense.h for the contract
 * and nmi_dense.c for the CPU reference it must match).
 *
 * Design
 *  - Persistent grid: one 1024-thread CTA per SM walks the translations.  Each CTA
 *    holds ONE full 256 x 256 joint histogram in shared memory: 65,536 16-bit
 *    counters packed two to a 32-bit word (128 KB).  Word (a & 127) * 256 + b holds
 *    bin (a, b) in its low half when a < 128, in its high half when a >= 128.
 *    Nothing per translation lives in global memory.
 *  - Counters can pass 65,535 (templates over 65,535 pixels).  When the template
 *    has a grey level with >= 65,535 valid pixels (the only way a joint bin can get
 *    there), the kernel checks the value each atomicAdd returns: a thread whose add
 *    wrapped a field records (bin, +65536) and, for a carry into the neighbouring
 *    high field, (bin', -1) in a small shared list.  Every wrap is seen by exactly
 *    one thread, so the corrections are exact in any order.
 *  - The template is uploaded per run and expanded on the GPU into 16 copies, one per
 *    (dx mod 16), cut into 16-pixel chunks that line up with 16-byte aligned chunks
 *    of the (padded, resident) control: every load is one aligned 16-byte load.  A
 *    32-bit word per chunk holds the valid bits (template mask, image borders) and
 *    the "a >= 128" bits.  The control mask, when there is one, is a bit plane.
 *  - After the increments one pass over the 128 KB reads every word once (16-byte
 *    loads, conflict free), adds sum c ln c (a table of c ln c in shared memory, a
 *    pair table for words whose two counts are < 16, log() above the table),
 *    builds the row sums (template marginal) and column sums (control marginal) of
 *    the jointly valid pixels, and zeroes the words for the next translation.  So a
 *    translation costs its template pixels plus one 128 KB pass, never a
 *    per-position histogram in global memory.
 *  - Entropies are accumulated in double: H = ln n - S / n.  The table is computed
 *    on the host with the same expression as the CPU backend.  A joint histogram
 *    with a single bin (both images constant over the overlap) scores exactly 1.
 *  GPU memory: control (+ mask bits) + 16 x template chunks + score map + a table.
 *  - Split passes for GPUs whose blocks get less shared memory (sm_86 / sm_89: 99 KB,
 *    sm_75: 64 KB): the histogram's 128 word rows (template grey level a & 127) are
 *    cut into PASSES = 2 or 4 groups, and a translation runs its increments and scan
 *    once per group, each pass counting only the pixels whose a falls in its rows
 *    (64 or 32 KB of counters).  Same sums, partly in another order; the template is
 *    read PASSES times.  GEOREG_NMI_CUDA_PASSES=2|4 forces it (tests, benchmarks).
 *
 * What bounds it (H100, 512x256 template, 61,440 translations: docs/benchmarks.md):
 * the shared-memory pipe.  8.05e9 increments are 2.5e8 warp-wide atomicAdds on
 * random bins, about 3.5 bank wavefronts each (the balls-in-bins maximum of 32
 * random banks), plus the per-translation scan; ncu reads L1/shared at ~90% of
 * peak.  Variants (GEOREG_NMI_CUDA_VARIANT) kept for measurement: bit 0 merges
 * uniform chunks into one add of 16, bit 1 reads c ln c from a per-lane
 * (bank-conflict-free) table.  Neither was faster on textured images.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_util.h"
#include "nmi_dense_cuda.h"

#define NMI_THREADS 1024
#define NMI_WARPS (NMI_THREADS / 32)
#define HIST_WORDS 32768          /* 65,536 16-bit counters */
#define PAIR_TAB 256              /* c ln c of two counts < 16 */
#define LANE_TAB 64               /* c ln c for c < 64, one copy per lane (16 KB) */

/* ---- error helpers ---------------------------------------------------------- */

#define CK(call, what) GR_CUDA_CHECK (call, what, GR_ERR_CUDA)

/* ---- device code ------------------------------------------------------------ */

struct NmiParams {
  /* control, resident */
  const uint8_t *ctl;         /* pitched, zero padded */
  size_t cpitch;              /* bytes, multiple of 16 */
  const uint16_t *cbits;      /* valid bits per 16-pixel control chunk, or NULL */
  int cp16;                   /* chunks per control row (cpitch / 16) */
  /* template, per run */
  const uint4 *tchunks;       /* [16][K] */
  const uint32_t *tbits;      /* [16][K]: valid bits | (a >= 128 bits) << 16 */
  const int *thist;           /* [256] template grey-level counts (valid pixels) */
  int K, J;                   /* chunks in all, chunks per template row */
  /* region */
  int x0, y0, rw;
  long npos;
  int min_valid;
  /* outputs */
  double *scores;
  int32_t *valid;
  int *err;                   /* set to 1 when the overflow list ran out */
  /* c ln c table (global copy, loaded into shared memory) */
  const double *tab;
  int T;
  int ovf_cap;
};

/* Shared-memory layout (bytes), computed on the host the same way. */
struct SmemLayout {
  size_t hist, ltab, tab, tab2, ha, hb, ovf_bin, ovf_delta, red_sj, red_sab, red_n,
      red_nnz, misc, total;
};

static __host__ __device__ SmemLayout
smem_layout (int T, int ovf_cap, int passes)
{
  SmemLayout L;
  size_t o = 0;
  L.hist = o;      o += (size_t) HIST_WORDS / passes * 4;
  L.ltab = o;      o += (size_t) LANE_TAB * 32 * 8;
  L.tab = o;       o += (size_t) T * 8;
  L.tab2 = o;      o += (size_t) PAIR_TAB * 8;
  L.red_sj = o;    o += NMI_WARPS * 8;
  L.red_sab = o;   o += NMI_WARPS * 8;
  L.ha = o;        o += 256 * 4;
  L.hb = o;        o += 256 * 4;
  L.ovf_bin = o;   o += (size_t) ovf_cap * 4;
  L.ovf_delta = o; o += (size_t) ovf_cap * 4;
  L.red_n = o;     o += NMI_WARPS * 4;
  L.red_nnz = o;   o += NMI_WARPS * 4;
  o = (o + 15) & ~(size_t) 15;
  L.misc = o;      o += 32;     /* novf, s_corr (double at +8) */
  L.total = o;
  return L;
}

__device__ __forceinline__ uint32_t
prmt (uint32_t a, uint32_t b, uint32_t sel)
{
  uint32_t d;
  asm ("prmt.b32 %0, %1, %2, %3;" : "=r" (d) : "r" (a), "r" (b), "r" (sel));
  return d;
}

/* c ln c for a count, from the shared table or computed */
__device__ __forceinline__ double
clnc (uint32_t c, const double *tab, int T)
{
  return c < (uint32_t) T ? tab[c] : (double) c * log ((double) c);
}

__device__ __noinline__ void
push_ovf (int *novf, int *obin, int *odelta, int cap, int *err, int bin, int delta)
{
  int slot = atomicAdd (novf, 1);
  if (slot < cap) {
    obin[slot] = bin;
    odelta[slot] = delta;
  } else {
    atomicExch (err, 1);
  }
}

/* Records the wraps caused by adding k to the field of 16-bit bin v (a < 128 form:
 * v = (a & 127) << 8 | b) whose add returned `old`. */
__device__ __noinline__ void
check_wrap (uint32_t v, bool hi, uint32_t old, uint32_t k, int *novf, int *obin,
    int *odelta, int cap, int *err)
{
  if (!hi) {
    if ((old & 0xFFFFu) + k > 0xFFFFu) {
      push_ovf (novf, obin, odelta, cap, err, (int) v, 65536);
      push_ovf (novf, obin, odelta, cap, err, (int) (v + 0x8000u), -1);
      if ((old >> 16) == 0xFFFFu)
        push_ovf (novf, obin, odelta, cap, err, (int) (v + 0x8000u), 65536);
    }
  } else {
    if ((old >> 16) + k > 0xFFFFu)
      push_ovf (novf, obin, odelta, cap, err, (int) (v + 0x8000u), 65536);
  }
}

__device__ __forceinline__ bool
uniform_bytes (uint4 v)
{
  const uint32_t b = (v.x & 0xFFu) * 0x01010101u;
  return ((v.x ^ b) | (v.y ^ b) | (v.z ^ b) | (v.w ^ b)) == 0;
}

/* The 16 pixels of one chunk.  MERGE: a chunk of 16 equal (a, b) pairs is one
 * atomicAdd of 16 (uniform ground; measured slower on textured images). */
/* PASSES > 1: this pass counts only the pixels whose row (a & 127) is in its group of
 * 128 / PASSES rows, at word (a & (rows - 1)) << 8 | b. */
template <bool CHECK, bool MERGE, int PASSES>
__device__ __forceinline__ void
chunk_increments (uint32_t *hist, uint4 t, uint4 c, uint32_t valid, uint32_t hib,
    int pass, int *novf, int *obin, int *odelta, int cap, int *err)
{
  constexpr uint32_t ROWS = 128 / PASSES;
  if (PASSES == 1 && MERGE && valid == 0xFFFFu && (hib == 0u || hib == 0xFFFFu) &&
      uniform_bytes (t) && uniform_bytes (c)) {
    const uint32_t v = prmt (c.x, t.x, 0xCC40u);
    const uint32_t inc = hib ? (16u << 16) : 16u;
    const uint32_t old = atomicAdd (hist + v, inc);
    if (CHECK)
      check_wrap (v, hib != 0, old, 16u, novf, obin, odelta, cap, err);
    return;
  }
  const uint32_t tw[4] = { t.x, t.y, t.z, t.w };
  const uint32_t cw[4] = { c.x, c.y, c.z, c.w };
#pragma unroll
  for (int i = 0; i < 16; i++) {
    if (valid & (1u << i)) {
      const int k = i & 3;
      /* byte0 = control byte k, byte1 = template byte k (7-bit), bytes 2-3 = the
       * template byte's sign, which is 0: v = (a & 127) << 8 | b, the word index */
      const uint32_t sel = (uint32_t) k | ((uint32_t) (4 + k) << 4) |
          ((uint32_t) (12 + k) << 8) | ((uint32_t) (12 + k) << 12);
      uint32_t v = prmt (cw[i >> 2], tw[i >> 2], sel);
      if (PASSES > 1) {
        if ((v >> 8) / ROWS != (uint32_t) pass)
          continue;
        v &= (ROWS << 8) - 1u;
      }
      const bool hi = (hib >> i) & 1u;
      const uint32_t old = atomicAdd (hist + v, hi ? 0x10000u : 1u);
      if (CHECK) {
        const uint32_t fm = hi ? 0xFFFF0000u : 0x0000FFFFu;
        if ((old & fm) == fm)
          check_wrap (v, hi, old, 1u, novf, obin, odelta, cap, err);
      }
    }
  }
}

struct ChunkWalk {
  int k, kend, stride;     /* chunk index walk */
  int y, j;                /* row and chunk-in-row of k */
  int sy, sj;              /* stride / J, stride % J */
};

template <bool CHECK, bool MERGE, int PASSES>
__device__ __forceinline__ void
increments (const NmiParams &p, const ChunkWalk &wk, uint32_t *hist, const uint4 *tc,
    const uint32_t *tb, const uint8_t *cb, const uint16_t *cmb, int pass, int *novf,
    int *obin, int *odelta)
{
  int k = wk.k;
  if (k >= wk.kend)
    return;
  int y = wk.y, j = wk.j;
  const size_t cpitch = p.cpitch;
  const int cp16 = p.cp16;
  uint4 t = __ldg (tc + k);
  uint32_t bits = __ldg (tb + k);
  uint4 c = __ldg ((const uint4 *) (cb + (size_t) y * cpitch + 16 * j));
  uint32_t cm = cmb ? __ldg (cmb + (size_t) y * cp16 + j) : 0xFFFFu;
  for (;;) {
    const int kn = k + wk.stride;
    int yn = y + wk.sy, jn = j + wk.sj;
    if (jn >= p.J) {
      jn -= p.J;
      yn++;
    }
    const bool more = kn < wk.kend;
    uint4 tn = make_uint4 (0, 0, 0, 0), cn = make_uint4 (0, 0, 0, 0);
    uint32_t bn = 0, cmn = 0xFFFFu;
    if (more) {
      tn = __ldg (tc + kn);
      bn = __ldg (tb + kn);
      cn = __ldg ((const uint4 *) (cb + (size_t) yn * cpitch + 16 * jn));
      if (cmb)
        cmn = __ldg (cmb + (size_t) yn * cp16 + jn);
    }
    const uint32_t valid = bits & cm & 0xFFFFu;
    if (valid)
      chunk_increments<CHECK, MERGE, PASSES> (hist, t, c, valid, bits >> 16, pass, novf,
          obin, odelta, p.ovf_cap, p.err);
    if (!more)
      break;
    k = kn; y = yn; j = jn;
    t = tn; c = cn; bits = bn; cm = cmn;
  }
}

template <bool MERGE, bool LANETAB, int PASSES>
__global__ void __launch_bounds__ (NMI_THREADS, 1)
nmi_dense_kernel (NmiParams p)
{
  /* rows of 256 words per pass; the scan gives 4 rows to each warp, so with passes
   * only the first ROWS / 4 warps scan */
  constexpr int ROWS = 128 / PASSES;
  extern __shared__ __align__ (16) unsigned char smem[];
  const SmemLayout L = smem_layout (p.T, p.ovf_cap, PASSES);
  uint32_t *hist = (uint32_t *) (smem + L.hist);
  double *tab = (double *) (smem + L.tab);
  double *ltab = (double *) (smem + L.ltab);
  double *tab2 = (double *) (smem + L.tab2);
  double *red_sj = (double *) (smem + L.red_sj);
  double *red_sab = (double *) (smem + L.red_sab);
  int *ha = (int *) (smem + L.ha);
  int *hb = (int *) (smem + L.hb);
  int *obin = (int *) (smem + L.ovf_bin);
  int *odelta = (int *) (smem + L.ovf_delta);
  int *red_n = (int *) (smem + L.red_n);
  int *red_nnz = (int *) (smem + L.red_nnz);
  int *novf = (int *) (smem + L.misc);
  double *s_corr = (double *) (smem + L.misc + 8);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int T = p.T;

  /* one-off init: zero histogram, tables, marginals */
  for (int i = tid; i < HIST_WORDS / PASSES / 4; i += NMI_THREADS)
    ((uint4 *) hist)[i] = make_uint4 (0, 0, 0, 0);
  for (int i = tid; i < T; i += NMI_THREADS)
    tab[i] = p.tab[i];
  for (int i = tid; i < PAIR_TAB; i += NMI_THREADS)
    tab2[i] = p.tab[i & 15] + p.tab[i >> 4];   /* T >= LANE_TAB = 64 */
  if (LANETAB)
    for (int i = tid; i < LANE_TAB * 32; i += NMI_THREADS)
      ltab[i] = p.tab[i >> 5];                  /* entry c of lane l at c * 32 + l */
  for (int i = tid; i < 256; i += NMI_THREADS) {
    ha[i] = 0;
    hb[i] = 0;
  }
  if (tid == 0) {
    *novf = 0;
    *s_corr = 0.0;
  }
  /* any grey level with >= 65,535 valid template pixels -> a joint bin can wrap */
  bool check = false;
  for (int i = 0; i < 256; i++)
    check |= __ldg (p.thist + i) >= 65535;

  /* this thread's chunk walk (independent of the translation) */
  ChunkWalk wk;
  {
    /* 4 groups of 8 lanes, each group in its own quarter of the template: lanes of
     * a warp rarely hit the same bin on uniform ground, and 8 lanes still read 128
     * contiguous bytes (measured 3-4% faster than 32 consecutive chunks) */
    const int g = lane >> 3;
    const int Kq = (p.K + 3) >> 2;
    wk.k = g * Kq + warp * 8 + (lane & 7);
    wk.kend = min (p.K, (g + 1) * Kq);
    wk.stride = NMI_WARPS * 8;
  }
  wk.y = wk.k / p.J;
  wk.j = wk.k - wk.y * p.J;
  wk.sy = wk.stride / p.J;
  wk.sj = wk.stride - wk.sy * p.J;
  __syncthreads ();

  for (long pos = blockIdx.x; pos < p.npos; pos += gridDim.x) {
    const int dy = p.y0 + (int) (pos / p.rw);
    const int dx = p.x0 + (int) (pos % p.rw);
    const int s = dx & 15, q = dx >> 4;
    const uint4 *tc = p.tchunks + (size_t) s * p.K;
    const uint32_t *tb = p.tbits + (size_t) s * p.K;
    const uint8_t *cb = p.ctl + (size_t) dy * p.cpitch + 16 * (size_t) q;
    const uint16_t *cmb = p.cbits ? p.cbits + (size_t) dy * p.cp16 + q : NULL;

    double sj_acc = 0.0;        /* this thread's sum c ln c over the passes */
    bool had_ovf = false;
    for (int pass = 0; pass < PASSES; pass++) {
      /* 1. joint histogram */
      if (check)
        increments<true, MERGE, PASSES> (p, wk, hist, tc, tb, cb, cmb, pass, novf, obin,
            odelta);
      else
        increments<false, MERGE, PASSES> (p, wk, hist, tc, tb, cb, cmb, pass, novf, obin,
            odelta);
      __syncthreads ();

      /* 2. wrapped counters: sum c ln c correction from the stored fields (rare) */
      const int nov = *novf;
      had_ovf |= nov > 0;
      if (nov > 0) {
        if (tid == 0) {
          const int n = min (nov, p.ovf_cap);
          double corr = 0.0;
          for (int e = 0; e < n; e++) {
            const int bin = obin[e];
            bool seen = false;
            for (int f = 0; f < e; f++)
              seen |= obin[f] == bin;
            if (seen)
              continue;
            long delta = 0;
            for (int f = e; f < n; f++)
              if (obin[f] == bin)
                delta += odelta[f];
            const uint32_t wv = hist[bin & 0x7FFF];
            const uint32_t stored = (bin & 0x8000) ? wv >> 16 : wv & 0xFFFFu;
            const double tru = (double) stored + (double) delta;
            corr += (tru > 1.0 ? tru * log (tru) : 0.0) - clnc (stored, tab, T);
          }
          *s_corr += corr;      /* reset when the translation's score is made */
        }
        __syncthreads ();
      }

      /* 3. scan: sum c ln c, marginals, zero.  Warp w owns word rows 4w..4w+3; a
       * row's two 16-byte loads go out together, four independent accumulators. */
      double sjv[4] = { 0.0, 0.0, 0.0, 0.0 };
      uint32_t rsum[8];          /* [r] = row 4w+r low field (a < 128), [4+r] high */
      uint32_t col[8];           /* columns 4*lane+i and 128+4*lane+i */
#pragma unroll
      for (int i = 0; i < 8; i++) {
        rsum[i] = 0;
        col[i] = 0;
      }
      const bool scans = warp < ROWS / 4;
#pragma unroll
      for (int r = 0; r < 4; r++) {
        if (!scans)
          break;
        uint4 hv[2];
#pragma unroll
        for (int h = 0; h < 2; h++)
          hv[h] = *(const uint4 *) (hist + (warp * 4 + r) * 256 + h * 128 + 4 * lane);
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const uint4 v = hv[h];
          if (v.x | v.y | v.z | v.w) {
            *(uint4 *) (hist + (warp * 4 + r) * 256 + h * 128 + 4 * lane) = make_uint4 (0, 0, 0, 0);
            const uint32_t wv[4] = { v.x, v.y, v.z, v.w };
#pragma unroll
            for (int i = 0; i < 4; i++) {
              const uint32_t x = wv[i];
              const uint32_t lo = x & 0xFFFFu, hi = x >> 16;
              rsum[r] += lo;
              rsum[4 + r] += hi;
              col[h * 4 + i] += lo + hi;
              if (LANETAB) {
                /* lane l reads entry c at bank pair l mod 16: conflict free */
                const double *lt = ltab + lane;
                sjv[i] += (lo < LANE_TAB ? lt[lo * 32] : clnc (lo, tab, T)) +
                    (hi < LANE_TAB ? lt[hi * 32] : clnc (hi, tab, T));
              } else if ((x & 0xFFF0FFF0u) == 0) {
                sjv[i] += tab2[(x | (x >> 12)) & 0xFFu];
              } else {
                sjv[i] += clnc (lo, tab, T) + clnc (hi, tab, T);
              }
            }
          }
        }
      }
      sj_acc += (sjv[0] + sjv[1]) + (sjv[2] + sjv[3]);
      /* row sums: transposed butterfly, 8 values over 32 lanes in 9 shuffles */
      if (scans) {
        const bool b4 = lane & 16, b3 = lane & 8, b2 = lane & 4;
        uint32_t v4[4], v2[2];
#pragma unroll
        for (int i = 0; i < 4; i++) {
          const uint32_t send = b4 ? rsum[i] : rsum[i + 4];
          const uint32_t keep = b4 ? rsum[i + 4] : rsum[i];
          v4[i] = keep + __shfl_xor_sync (0xFFFFFFFFu, send, 16);
        }
#pragma unroll
        for (int i = 0; i < 2; i++) {
          const uint32_t send = b3 ? v4[i] : v4[i + 2];
          const uint32_t keep = b3 ? v4[i + 2] : v4[i];
          v2[i] = keep + __shfl_xor_sync (0xFFFFFFFFu, send, 8);
        }
        const uint32_t send = b2 ? v2[0] : v2[1];
        const uint32_t keep = b2 ? v2[1] : v2[0];
        uint32_t v1 = keep + __shfl_xor_sync (0xFFFFFFFFu, send, 4);
        v1 += __shfl_xor_sync (0xFFFFFFFFu, v1, 2);
        v1 += __shfl_xor_sync (0xFFFFFFFFu, v1, 1);
        if ((lane & 3) == 0) {
          const int idx = lane >> 2;           /* = r + 4 h */
          ha[pass * ROWS + warp * 4 + (idx & 3) + 128 * (idx >> 2)] = (int) v1;
        }
      }
#pragma unroll
      for (int i = 0; i < 8; i++)
        if (col[i])
          atomicAdd (hb + (i >> 2) * 128 + 4 * lane + (i & 3), (int) col[i]);
      if (pass == PASSES - 1) {
        double sj = sj_acc;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
          sj += __shfl_xor_sync (0xFFFFFFFFu, sj, o);
        if (lane == 0)
          red_sj[warp] = sj;
      }
      __syncthreads ();

      /* 4. marginal corrections for wrapped counters (rare) */
      if (nov > 0) {
        if (tid == 0) {
          const int n = min (nov, p.ovf_cap);
          for (int e = 0; e < n; e++) {
            /* the field's grey level a: high flag (bit 15) and this pass's row */
            const int ar = obin[e] >> 8;
            ha[(ar & 128) | (pass * ROWS) | (ar & (ROWS - 1))] += odelta[e];
            hb[obin[e] & 255] += odelta[e];
          }
          *novf = 0;      /* before the sync: the next pass may push again */
        }
        __syncthreads ();
      }
    }                           /* passes */

    /* 5. marginal entropies (warps 0-15), then one warp reduces */
    if (warp < 16) {
      const int m = tid & 255;
      int val;
      if (warp < 8) {
        val = ha[m];
      } else {
        val = hb[m];
        hb[m] = 0;
      }
      double sab = val > 1 ? clnc ((uint32_t) val, tab, T) : 0.0;
      int n = warp < 8 ? val : 0;
      const int nnz = __popc (__ballot_sync (0xFFFFFFFFu, val != 0));
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        sab += __shfl_xor_sync (0xFFFFFFFFu, sab, o);
        n += __shfl_xor_sync (0xFFFFFFFFu, n, o);
      }
      if (lane == 0) {
        red_sab[warp] = sab;
        red_n[warp] = n;
        red_nnz[warp] = nnz;
      }
    }
    __syncthreads ();
    /* the last warp (no marginal work above) reduces; the other warps go on with
     * the next translation, whose syncs order the reuse of these buffers */
    if (warp == NMI_WARPS - 1) {
      double a = red_sj[lane];
      double b = lane < 16 ? red_sab[lane] : 0.0;
      long n = lane < 8 ? red_n[lane] : 0;
      int nnza = lane < 8 ? red_nnz[lane] : 0;
      int nnzb = (lane >= 8 && lane < 16) ? red_nnz[lane] : 0;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        a += __shfl_xor_sync (0xFFFFFFFFu, a, o);
        b += __shfl_xor_sync (0xFFFFFFFFu, b, o);
        n += __shfl_xor_sync (0xFFFFFFFFu, n, o);
        nnza += __shfl_xor_sync (0xFFFFFFFFu, nnza, o);
        nnzb += __shfl_xor_sync (0xFFFFFFFFu, nnzb, o);
      }
      if (lane == 0) {
        if (had_ovf) {
          a += *s_corr;
          *s_corr = 0.0;        /* read by no one before the next translation's sync */
        }
        if (p.valid)
          p.valid[pos] = (int32_t) n;
        double score;
        if (n < p.min_valid || n == 0) {
          score = __longlong_as_double (0x7ff8000000000000LL);   /* NAN */
        } else if (nnza <= 1 && nnzb <= 1) {
          score = 1.0;      /* one joint bin: H(A,B) = 0 */
        } else {
          const double dn = (double) n, ln = log (dn);
          const double hab = ln - a / dn;
          const double hsum = 2.0 * ln - b / dn;
          score = hab > 0.0 ? hsum / hab : 1.0;
        }
        p.scores[pos] = score;
      }
    }
    /* the next translation's increments touch only the (zeroed) histogram; the
     * syncs after them order everything else */
  }
}

/* Builds the 16 shifted chunk copies of the template and its grey-level counts. */
__global__ void
nmi_template_prep (const uint8_t *__restrict__ tpix, const uint8_t *__restrict__ tmask,
    int tw, int th, int J, int K, uint4 *tchunks, uint32_t *tbits, int *thist)
{
  const long idx = (long) blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= 16L * K)
    return;
  const int s = (int) (idx / K), k = (int) (idx - (long) s * K);
  const int y = k / J, j = k - y * J;
  uint32_t w[4] = { 0, 0, 0, 0 };
  uint32_t valid = 0, hib = 0;
  for (int i = 0; i < 16; i++) {
    const int x = 16 * j + i - s;
    if (x < 0 || x >= tw)
      continue;
    const size_t o = (size_t) y * tw + x;
    if (tmask && !tmask[o])
      continue;
    const uint32_t a = tpix[o];
    w[i >> 2] |= (a & 127u) << (8 * (i & 3));
    valid |= 1u << i;
    hib |= (a >> 7) << i;
    if (s == 0)
      atomicAdd (thist + a, 1);
  }
  tchunks[idx] = make_uint4 (w[0], w[1], w[2], w[3]);
  tbits[idx] = valid | (hib << 16);
}

/* ---- host side -------------------------------------------------------------- */

#define TAB_MAX 4096

/* One job's sizes and its place in the batch's arenas. */
struct JobPlan {
  int tw, th, J, K, T, ovf_cap;
  long N, npos;
  size_t smem;
  size_t pix, mask;           /* bytes into the template arena, mask ~0: none */
  size_t chunks;              /* uint4 / uint32 entries into tchunks / tbits */
  size_t pos;                 /* translations into the score and count arenas */
};

struct GrNmiDenseCuda {
  int device;
  cudaStream_t stream;
  int nsm;
  size_t smem_optin;
  int variant;            /* tuning knob GEOREG_NMI_CUDA_VARIANT: bit 0 merges uniform
                             chunks, bit 1 uses the per-lane c ln c table; default 0 */
  int passes;             /* 1, or 2 / 4 where shared memory is short (split passes) */
  bool timing;
  cudaEvent_t ev0, ev1;
  /* control */
  uint8_t *d_ctl;
  size_t ctl_bytes;             /* allocated at d_ctl: a later control that fits reuses it */
  uint16_t *d_cbits;
  size_t cpitch;
  int cp16, cw, ch;
  /* c ln c table */
  double *d_tab;
  int T;
  /* template */
  uint8_t *d_tpix;        /* a batch's templates and masks, packed */
  size_t tpix_cap;
  uint4 *d_tchunks;
  uint32_t *d_tbits;
  size_t chunks_cap, bits_cap;
  int *d_thist, *d_err;   /* 256 counts a template of the batch; the overflow flag */
  size_t thist_cap;
  /* outputs */
  double *d_scores;
  int32_t *d_valid;
  size_t scores_cap, valid_cap;
  void *h_out;            /* pinned: a batch's templates, then its maps */
  JobPlan *plan;          /* a batch's jobs: sizes and arena offsets */
  int plan_cap;
  size_t hcap;
};

static double g_last_kernel_ms = -1.0;

/* Internal hook for the benchmark: device time of the last run's kernels (template
 * expansion + search), measured with CUDA events when GEOREG_NMI_CUDA_TIMING is
 * set in the environment at engine creation; -1 otherwise. */
extern "C" double
gr_nmi_dense_cuda_last_kernel_ms (void)
{
  return g_last_kernel_ms;
}

static int
engine_table_size (size_t smem_optin, int ovf_cap, int passes)
{
  int T = TAB_MAX;
  while (T > LANE_TAB && smem_layout (T, ovf_cap, passes).total > smem_optin)
    T >>= 1;
  return T;
}

extern "C" GrNmiDenseCuda *
gr_nmi_dense_cuda_new (int device, char *errbuf, size_t errlen)
{
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount (&ndev);
  if (e != cudaSuccess || device < 0 || device >= ndev) {
    gr_set_err (errbuf, errlen, "CUDA device %d not available (%s)", device,
        e != cudaSuccess ? cudaGetErrorString (e) : "index out of range");
    cudaGetLastError ();
    return NULL;
  }
  GrNmiDenseCuda *c = (GrNmiDenseCuda *) calloc (1, sizeof *c);
  if (!c) {
    gr_set_err (errbuf, errlen, "out of host memory");
    return NULL;
  }
  c->device = device;
  cudaDeviceProp prop;
  if ((e = cudaSetDevice (device)) != cudaSuccess ||
      (e = cudaGetDeviceProperties (&prop, device)) != cudaSuccess ||
      (e = cudaStreamCreateWithFlags (&c->stream, cudaStreamNonBlocking)) != cudaSuccess) {
    gr_set_err (errbuf, errlen, "CUDA device %d setup failed: %s", device, cudaGetErrorString (e));
    cudaGetLastError ();
    free (c);
    return NULL;
  }
  c->nsm = prop.multiProcessorCount;
  c->smem_optin = prop.sharedMemPerBlockOptin;
  /* the fewest passes whose smallest layout (the counters + a 64-entry table) fits:
   * 1 on sm_80 / sm_90 class GPUs, 2 on sm_86 / sm_89, 4 on sm_75 */
  c->passes = 1;
  while (c->passes <= 4 && smem_layout (LANE_TAB, 64, c->passes).total > c->smem_optin)
    c->passes *= 2;
  const char *fp = getenv ("GEOREG_NMI_CUDA_PASSES");
  if (fp && (atoi (fp) == 2 || atoi (fp) == 4) && atoi (fp) > c->passes)
    c->passes = atoi (fp);
  if (c->passes > 4) {
    gr_set_err (errbuf, errlen, "CUDA device %d (%s, sm_%d%d) offers %zu KB of shared memory "
        "per block; the dense NMI kernel needs %zu KB", device, prop.name, prop.major,
        prop.minor, c->smem_optin / 1024, smem_layout (LANE_TAB, 64, 4).total / 1024 + 1);
    cudaStreamDestroy (c->stream);
    free (c);
    return NULL;
  }
  c->variant = 0;
  const char *v = getenv ("GEOREG_NMI_CUDA_VARIANT");
  if (v && *v)
    c->variant = atoi (v) & 3;
  const char *tm = getenv ("GEOREG_NMI_CUDA_TIMING");
  c->timing = tm && *tm && strcmp (tm, "0") != 0;
  if (c->timing) {
    if (cudaEventCreate (&c->ev0) != cudaSuccess || cudaEventCreate (&c->ev1) != cudaSuccess) {
      cudaGetLastError ();
      c->timing = false;
    }
  }
  return c;
}

extern "C" void
gr_nmi_dense_cuda_free (GrNmiDenseCuda *c)
{
  if (!c)
    return;
  cudaSetDevice (c->device);
  if (c->stream)
    cudaStreamSynchronize (c->stream);
  cudaFree (c->d_ctl);
  cudaFree (c->d_cbits);
  cudaFree (c->d_tab);
  cudaFree (c->d_tpix);
  cudaFree (c->d_tchunks);
  cudaFree (c->d_tbits);
  cudaFree (c->d_thist);
  cudaFree (c->d_err);
  cudaFree (c->d_scores);
  cudaFree (c->d_valid);
  if (c->h_out)
    cudaFreeHost (c->h_out);
  free (c->plan);
  if (c->timing) {
    cudaEventDestroy (c->ev0);
    cudaEventDestroy (c->ev1);
  }
  if (c->stream)
    cudaStreamDestroy (c->stream);
  cudaGetLastError ();
  free (c);
}

extern "C" GrStatus
gr_nmi_dense_cuda_set_control (GrNmiDenseCuda *c, const GrImage8 *control,
    char *errbuf, size_t errlen)
{
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  CK (cudaStreamSynchronize (c->stream), "cudaStreamSynchronize");
  const int cw = control->width, ch = control->height;
  /* pad so that a template chunk walk may read up to 31 bytes past the last column */
  const size_t cpitch = (((size_t) cw + 32) + 15) & ~(size_t) 15;
  const int cp16 = (int) (cpitch / 16);

  /* the control's buffer kept when the new control fits (an engine reused for another
   * level, gr_localize's spares): cudaFree would wait for the whole device */
  if (c->ctl_bytes < cpitch * ch) {
    cudaFree (c->d_ctl);
    c->d_ctl = NULL;
    c->ctl_bytes = 0;
  }
  cudaFree (c->d_cbits);
  c->d_cbits = NULL;
  c->cw = c->ch = 0;
  if (!c->d_ctl) {
    CK (gr_cuda_malloc (&c->d_ctl, cpitch * ch), "cudaMalloc (control)");
    c->ctl_bytes = cpitch * ch;
  }
  CK (cudaMemsetAsync (c->d_ctl, 0, cpitch * ch, c->stream), "cudaMemset (control)");
  CK (cudaMemcpy2DAsync (c->d_ctl, cpitch, control->pix, control->pix_stride, cw, ch,
          cudaMemcpyHostToDevice, c->stream), "cudaMemcpy2D (control)");

  bool all_valid = true;
  if (control->mask)
    for (int y = 0; y < ch && all_valid; y++) {
      const uint8_t *m = control->mask + (size_t) y * control->mask_stride;
      for (int x = 0; x < cw; x++)
        if (!m[x]) {
          all_valid = false;
          break;
        }
    }
  if (!all_valid) {
    uint16_t *bits = (uint16_t *) calloc ((size_t) cp16 * ch, sizeof (uint16_t));
    if (!bits) {
      gr_set_err (errbuf, errlen, "out of host memory");
      return GR_ERR_NOMEM;
    }
    for (int y = 0; y < ch; y++) {
      const uint8_t *m = control->mask + (size_t) y * control->mask_stride;
      uint16_t *row = bits + (size_t) y * cp16;
      for (int x = 0; x < cw; x++)
        if (m[x])
          row[x >> 4] |= (uint16_t) (1u << (x & 15));
    }
    cudaError_t e = gr_cuda_malloc (&c->d_cbits, (size_t) cp16 * ch * sizeof (uint16_t));
    if (e == cudaSuccess)
      e = cudaMemcpyAsync (c->d_cbits, bits, (size_t) cp16 * ch * sizeof (uint16_t),
          cudaMemcpyHostToDevice, c->stream);
    if (e == cudaSuccess)
      e = cudaStreamSynchronize (c->stream);
    free (bits);
    CK (e, "control mask upload");
  }
  CK (cudaStreamSynchronize (c->stream), "control upload");
  c->cpitch = cpitch;
  c->cp16 = cp16;
  c->cw = cw;
  c->ch = ch;
  return GR_OK;
}

static GrStatus
ensure_table (GrNmiDenseCuda *c, int T, char *errbuf, size_t errlen)
{
  if (c->d_tab && c->T >= T)
    return GR_OK;
  double *h = (double *) malloc (sizeof (double) * T);
  if (!h) {
    gr_set_err (errbuf, errlen, "out of host memory");
    return GR_ERR_NOMEM;
  }
  h[0] = 0.0;
  for (int i = 1; i < T; i++)
    h[i] = i * log ((double) i);     /* same expression as the CPU backend */
  cudaFree (c->d_tab);
  c->d_tab = NULL;
  cudaError_t e = gr_cuda_malloc (&c->d_tab, sizeof (double) * T);
  if (e == cudaSuccess)
    e = gr_cuda_upload (c->d_tab, h, sizeof (double) * T);
  free (h);
  CK (e, "c ln c table upload");
  c->T = T;
  return GR_OK;
}

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

extern "C" GrStatus
gr_nmi_dense_cuda_run_batch (GrNmiDenseCuda *c, const GrNmiDenseJob *jobs, int n,
    char *errbuf, size_t errlen)
{
  if (!c->d_ctl || c->cw == 0) {      /* cw is set once the whole upload succeeded */
    gr_set_err (errbuf, errlen, "no control image set");
    return GR_ERR_INVALID;
  }
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  if (c->plan_cap < n) {
    JobPlan *grown = (JobPlan *) realloc (c->plan, sizeof (JobPlan) * (size_t) n);
    if (!grown) {
      gr_set_err (errbuf, errlen, "out of host memory");
      return GR_ERR_NOMEM;
    }
    c->plan = grown;
    c->plan_cap = n;
  }
  JobPlan *plan = c->plan;
  /* sizes and arena offsets of every job, checked before anything is enqueued */
  size_t in_bytes = 0, chunks = 0, pos = 0;
  int Tmax = 0;
  bool any_valid = false;
  GrStatus st = GR_OK;
  for (int k = 0; k < n && st == GR_OK; k++) {
    JobPlan *q = &plan[k];
    const GrImage8 *t = jobs[k].templ;
    q->tw = t->width;
    q->th = t->height;
    q->J = (q->tw + 15 + 15) / 16;          /* chunks per row for any shift 0..15 */
    const long Kl = (long) q->J * q->th;
    q->N = (long) q->tw * q->th;
    if (Kl > (1L << 26) || q->N > (1L << 30)) {
      gr_set_err (errbuf, errlen, "template %dx%d too large for the CUDA dense NMI", q->tw,
          q->th);
      st = GR_ERR_INVALID;
      break;
    }
    q->K = (int) Kl;
    /* wrap events: at most one per 65,536 increments of a field plus the carries */
    q->ovf_cap = (int) (3 * (2 * (q->N / 65536) + 4)) + 16;
    q->T = engine_table_size (c->smem_optin, q->ovf_cap, c->passes);
    q->smem = smem_layout (q->T, q->ovf_cap, c->passes).total;
    if (q->smem > c->smem_optin) {
      gr_set_err (errbuf, errlen, "template %dx%d needs %zu bytes of shared memory, device "
          "offers %zu", q->tw, q->th, q->smem, c->smem_optin);
      st = GR_ERR_INVALID;
      break;
    }
    Tmax = q->T > Tmax ? q->T : Tmax;
    q->pix = in_bytes;
    in_bytes += (size_t) q->N;
    q->mask = ~(size_t) 0;
    if (t->mask) {
      q->mask = in_bytes;
      in_bytes += (size_t) q->N;
    }
    in_bytes = (in_bytes + 15) & ~(size_t) 15;
    q->chunks = chunks;
    chunks += (size_t) 16 * q->K;
    q->npos = (long) (jobs[k].region.x1 - jobs[k].region.x0) *
        (jobs[k].region.y1 - jobs[k].region.y0);
    q->pos = pos;
    pos += (size_t) q->npos;
    any_valid |= jobs[k].valid != NULL;
  }
  if (st == GR_OK)
    st = ensure_table (c, Tmax, errbuf, errlen);
  if (st != GR_OK)
    return st;
  CK (grow (&c->d_tpix, &c->tpix_cap, in_bytes), "cudaMalloc (templates)");
  CK (grow (&c->d_tchunks, &c->chunks_cap, chunks * sizeof (uint4)),
      "cudaMalloc (template chunks)");
  CK (grow (&c->d_tbits, &c->bits_cap, chunks * sizeof (uint32_t)),
      "cudaMalloc (template chunk bits)");
  CK (grow (&c->d_thist, &c->thist_cap, (size_t) n * 256 * sizeof (int)),
      "cudaMalloc (template histograms)");
  if (!c->d_err)
    CK (gr_cuda_malloc (&c->d_err, sizeof (int)), "cudaMalloc (flag)");
  CK (grow (&c->d_scores, &c->scores_cap, pos * sizeof (double)), "cudaMalloc (scores)");
  CK (grow (&c->d_valid, &c->valid_cap, pos * sizeof (int32_t)),
      "cudaMalloc (valid counts)");
  /* pinned: the templates going up, then the maps and the flag coming back */
  const size_t out_bytes = pos * (sizeof (double) + sizeof (int32_t)) + 16;
  const size_t host_bytes = in_bytes + out_bytes;
  if (!c->h_out || c->hcap < host_bytes) {
    if (c->h_out)
      cudaFreeHost (c->h_out);
    c->h_out = NULL;
    c->hcap = 0;
    CK (gr_cuda_malloc_host (&c->h_out, host_bytes), "cudaMallocHost (batch)");
    c->hcap = host_bytes;
  }
  uint8_t *h_in = (uint8_t *) c->h_out;
  double *h_scores = (double *) (h_in + in_bytes);      /* in_bytes: a multiple of 16 */
  int32_t *h_valid = (int32_t *) (h_scores + pos);
  int *h_err = (int *) (h_valid + pos);
  for (int k = 0; k < n; k++) {
    const GrImage8 *t = jobs[k].templ;
    const JobPlan *q = &plan[k];
    for (int y = 0; y < q->th; y++) {
      memcpy (h_in + q->pix + (size_t) y * q->tw, t->pix + (size_t) y * t->pix_stride, q->tw);
      if (t->mask)
        memcpy (h_in + q->mask + (size_t) y * q->tw, t->mask + (size_t) y * t->mask_stride,
            q->tw);
    }
  }

  cudaStream_t s = c->stream;
  CK (cudaMemcpyAsync (c->d_tpix, h_in, in_bytes, cudaMemcpyHostToDevice, s),
      "cudaMemcpy (templates)");
  CK (cudaMemsetAsync (c->d_thist, 0, (size_t) n * 256 * sizeof (int), s), "cudaMemset");
  CK (cudaMemsetAsync (c->d_err, 0, sizeof (int), s), "cudaMemset");
  if (c->timing)
    CK (cudaEventRecord (c->ev0, s), "cudaEventRecord");

  void (*kern) (NmiParams);
  void (*const kernels[4]) (NmiParams) = {
    nmi_dense_kernel<false, false, 1>, nmi_dense_kernel<true, false, 1>,
    nmi_dense_kernel<false, true, 1>, nmi_dense_kernel<true, true, 1>,
  };
  /* split passes: the default variant only */
  kern = c->passes == 4 ? nmi_dense_kernel<false, false, 4> :
      c->passes == 2 ? nmi_dense_kernel<false, false, 2> : kernels[c->variant & 3];
  /* The limit belongs to the kernel function, shared by all engines in the process
   * (several live streams): setting our own size could lower it under another
   * stream's launch.  The device's opt-in maximum is the same for everyone. */
  CK (cudaFuncSetAttribute (kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
          (int) c->smem_optin), "cudaFuncSetAttribute (shared memory)");
  size_t occ_smem = 0;
  int per_sm = 0;
  for (int k = 0; k < n; k++) {
    const JobPlan *q = &plan[k];
    const uint8_t *d_pix = c->d_tpix + q->pix;
    const uint8_t *d_mask = q->mask != ~(size_t) 0 ? c->d_tpix + q->mask : NULL;
    uint4 *d_chunks = c->d_tchunks + q->chunks;
    uint32_t *d_bits = c->d_tbits + q->chunks;
    int *d_hist = c->d_thist + (size_t) k * 256;
    {
      const long nk = 16L * q->K;
      const int bs = 256;
      nmi_template_prep<<<(unsigned) ((nk + bs - 1) / bs), bs, 0, s>>> (d_pix, d_mask,
          q->tw, q->th, q->J, q->K, d_chunks, d_bits, d_hist);
      CK (cudaGetLastError (), "template expansion launch");
    }
    NmiParams p;
    p.ctl = c->d_ctl;
    p.cpitch = c->cpitch;
    p.cbits = c->d_cbits;
    p.cp16 = c->cp16;
    p.tchunks = d_chunks;
    p.tbits = d_bits;
    p.thist = d_hist;
    p.K = q->K;
    p.J = q->J;
    p.x0 = jobs[k].region.x0;
    p.y0 = jobs[k].region.y0;
    p.rw = jobs[k].region.x1 - jobs[k].region.x0;
    p.npos = q->npos;
    p.min_valid = jobs[k].min_valid;
    p.scores = c->d_scores + q->pos;
    p.valid = c->d_valid + q->pos;
    p.err = c->d_err;
    p.tab = c->d_tab;
    p.T = q->T;
    p.ovf_cap = q->ovf_cap;
    if (k == 0 || q->smem != occ_smem) {
      CK (cudaOccupancyMaxActiveBlocksPerMultiprocessor (&per_sm, kern, NMI_THREADS,
              q->smem), "occupancy query");
      occ_smem = q->smem;
    }
    if (per_sm < 1) {
      gr_set_err (errbuf, errlen, "dense NMI kernel cannot be resident on device %d "
          "(%zu bytes of shared memory, %d threads)", c->device, q->smem, NMI_THREADS);
      return GR_ERR_CUDA;
    }
    long grid = (long) c->nsm * per_sm;
    if (grid > q->npos)
      grid = q->npos;
    kern<<<(unsigned) grid, NMI_THREADS, q->smem, s>>> (p);
    CK (cudaGetLastError (), "dense NMI kernel launch");
  }
  if (c->timing)
    CK (cudaEventRecord (c->ev1, s), "cudaEventRecord");
  CK (cudaMemcpyAsync (h_scores, c->d_scores, pos * sizeof (double),
          cudaMemcpyDeviceToHost, s), "cudaMemcpy (scores)");
  if (any_valid)
    CK (cudaMemcpyAsync (h_valid, c->d_valid, pos * sizeof (int32_t),
            cudaMemcpyDeviceToHost, s), "cudaMemcpy (valid)");
  CK (cudaMemcpyAsync (h_err, c->d_err, sizeof (int), cudaMemcpyDeviceToHost, s),
      "cudaMemcpy (flag)");
  CK (cudaStreamSynchronize (s), "dense NMI kernel");
  if (*h_err) {
    gr_set_err (errbuf, errlen, "dense NMI kernel: counter-overflow list full (internal error)");
    return GR_ERR_CUDA;
  }
  if (c->timing) {
    float ms = 0.f;
    if (cudaEventElapsedTime (&ms, c->ev0, c->ev1) == cudaSuccess)
      g_last_kernel_ms = ms;
    else
      cudaGetLastError ();
  }
  for (int k = 0; k < n; k++) {
    memcpy (jobs[k].scores, h_scores + plan[k].pos, plan[k].npos * sizeof (double));
    if (jobs[k].valid)
      memcpy (jobs[k].valid, h_valid + plan[k].pos, plan[k].npos * sizeof (int32_t));
  }
  return GR_OK;
}
