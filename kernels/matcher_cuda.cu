/* Per-image ratio-test matching: the CUDA backend (see matcher.h for the contract and
 * matcher.c for the CPU backend it must equal).
 *
 * Design
 *  - Database.  Every image's descriptors live in device memory in a padded row space:
 *    image i occupies rows poff_i .. poff_i + pn_i - 1, pn_i = n_i rounded up to 64.
 *    Per row: the descriptor divided by its norm as FP16 (KP = 32, 64 or 128 halves,
 *    zero padded), the float32 original (for the exact re-check), (|c|^2, |c|), its
 *    index within its image (-1 on padding rows) and a running descriptor id.  Padding
 *    rows are zero with |c|^2 = +inf, so they never win.  One prep kernel builds the
 *    rows from the float32 descriptors in device memory (uploaded, or where the
 *    caller's device form holds them) and the per-image max |c| and |c|^2.
 *    The incremental form appends images and drops the oldest: the row space is
 *    compacted in place or grown (doubled) only when its end is reached, so a sliding
 *    window allocates nothing in steady state.
 *  - Match kernel: one launch for every (query block, image) pair.  A CTA of 4 warps
 *    (4 to 6 CTAs an SM: 128 registers or fewer a thread for k <= 64)
 *    owns 128 query rows (A fragments of mma.m16n8k16 held in registers for the whole
 *    launch) and walks the images of its slice in 64-candidate chunks, double
 *    buffered with cp.async into shared memory (ldmatrix-friendly padded rows).  Tensor
 *    cores give q^.c^ in FP32; the epilogue forms D = |q|^2 + |c|^2 - 2 |q||c| q^.c^,
 *    and packs it with the candidate index into one 32-bit key (the low mantissa bits
 *    give way to the index: the bound below accounts for it), so the per-row top-2 is
 *    three integer min/max per candidate.  Keys compare as SIGNED integers, which
 *    orders non-negative floats by value and puts every negative D~ (a rounding of a
 *    true D <= E) before them: no clamp at 0, one instruction less per candidate on
 *    the integer pipe that bounds the epilogue (finalize_pair says why the order
 *    among negative keys does not matter).  At the end of an image the
 *    4 lanes sharing a row merge their top-2 by shuffles and decide.
 *  - Exactness: |D~ - D| <= E = 2 delta |q| M_i + eps (|q|^2 + M2_i + 2 |q| M_i)
 *    + 2^(b-22) a2 (M_i, M2_i: the image's max |c| and |c|^2; delta bounds the FP16
 *    rounding of both unit vectors and the tensor-core FP32 accumulation; b the index
 *    bits).  With a1 <= a2 the approximate top-2, the pair is rejected when
 *    a1 - E > r^2 (a2 + E), accepted with the approximate winner when a1 + E <
 *    r^2 (a2 - E) and a1 + E < a2 - E, and otherwise queued: a re-check kernel (a warp
 *    per queued pair) recomputes the whole image with the canonical float64 distances
 *    of matcher.h (fma, t = 0 .. k-1, ties to the lower index), exactly as the CPU
 *    backend does.  A full queue is not an error: the entries it could not take stay
 *    marked and a sweep kernel settles them.
 *  - Device buffers grow and are reused; no per-call cudaMalloc in steady state.
 *  - Variants of the list mode's match kernel (GEOREG_MATCHER_VARIANT = min, the
 *    default; top2; key; read at each call; every other path runs key).  key's
 *    epilogue is about 9 instructions a candidate and row, 5 of them on the integer
 *    pipe (16 lanes a clock a sub-partition): that pipe, not the tensor cores, bounds
 *    the kernel.  The variants move the FP32 work into the tensor cores and drop the
 *    index from the top-2: A = -q / t (the batch's query scale t, a power of 2 >=
 *    every |q|, applied to the float32 rows as the A fragments are built), B = c / s_i
 *    (FP16 rows rescaled by the image's power of 2 s_i >= M_i), and the accumulator
 *    starts at |c|^2 / (2 t s_i) (a per-row value the loader copies with the chunk),
 *    so the tensor cores return key = (|c|^2 - 2 q.c) / (2 t s_i), ordered as D
 *    within a row (D~ = |q|^2 + 2 t s_i key), with no epilogue arithmetic.  top2 keeps
 *    the value-only top-2 (3 FMNMX); min keeps, per lane and row, the minimum of each
 *    column parity (1 FMNMX): the 8 subset minima of a row give its nearest value and
 *    an upper bound on its second (bench data: 5% more pairs than the kept ones fail
 *    to be rejected).  Both only reject (finalize_search; bound bounds_var, the same
 *    size as key's): a pair they cannot reject becomes a J2_SEARCH entry whose exact
 *    top-2, winner and ratio test the finishing kernel computes (FP32 screening
 *    seeded with the approximate second's upper bound, float64 where it cannot
 *    exclude), and a compaction drops the entries it rejects.  So the variants' lists
 *    equal key's entry for entry by construction; test_matcher_gpu checks each
 *    against the CPU list, bench_matcher --sparse-goals times each.
 *  - GEOREG_MATCHER_UPLOAD=pinned (the default; =pageable: the plain upload; matcher.c,
 *    the sparse batch forms): the host's value
 *    check writes the descriptors into a pinned buffer of this engine as it scans them
 *    and each part's upload starts at once (gr_matcher_cuda_stage_begin / _part);
 *    batch_setup then finds the batch on its way and uploads nothing itself.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_util.h"
#include "matcher_cuda.h"

#define PENDING (-2)
#define BM 128                  /* query rows per CTA */
#define BN 64                   /* candidates per chunk (and the image padding) */
#define NT 128                  /* threads per CTA */
#define LIST_CAP (1u << 22)     /* re-check queue entries per launch */
#define SLAB_ENTRIES (1ll << 26)  /* sparse form: (image, query) entries per slab */
#define SPARSE_NT 256           /* threads of the compaction kernels */
#define FIN_NT 128              /* sparse list mode: threads of the finishing kernel */
#define FIN_T 32                /* its candidate rows per shared-memory tile */

/* ---- error helpers ---------------------------------------------------------- */

#define CK(call, what) GR_CUDA_CHECK (call, what, GR_ERR_CUDA)

static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* ---- shared types ------------------------------------------------------------- */

struct ImgInfo {
  int poff;             /* first padded row */
  int n;                /* descriptors */
  int pn;               /* padded rows (multiple of BN) */
  unsigned gabs;        /* running id of the first descriptor */
  long long src;        /* prep: first row in the staging buffer */
  float M, M2;          /* max |c|, max |c|^2 (prep: atomicMax from 0) */
  float s;              /* variants: the image's FP16 scale (scale_kernel) */
};

struct DbPtrs {
  __half *h16;          /* rows x kp */
  float2 *cinfo;        /* rows: (|c|^2, |c|) */
  float *f32;           /* rows x k */
  int *rowlocal;        /* rows: index within the image, -1 = padding */
  unsigned *rowglob;    /* rows: running descriptor id */
};

struct MatchParams {
  DbPtrs db;
  int k;
  const int *qlist;     /* query t -> padded row, or NULL: row qr0 + t */
  long long qr0;
  int nq;
  const ImgInfo *imgs;  /* the images of this launch */
  int nimg, ips;        /* images, images per grid.y slice */
  int *out;             /* out[ti * ld + (rowglob - qbase)] */
  long long ld;
  unsigned qbase;
  int self_skip;
  double rr, delta2, eps1, trunc;
  unsigned keymask;
  unsigned long long *plist;
  unsigned *pcount;
  unsigned pcap;
  int force;
  /* sparse form, list mode (sparse = 1): kept pairs are appended to a list (key =
   * image * nall + query, value = slot of the payload) instead of written to out */
  int sparse;
  int img0;                     /* absolute index of imgs[0] */
  long long nall;               /* n of the batch */
  unsigned long long *skey;
  struct SpEnt *spay;
  unsigned long long *scount;
  unsigned long long scap;
  /* variants (VAR_TOP2, VAR_MIN; list mode only): the batch's query scale t (device
   * memory, scale_kernel), the candidates' accumulator start values (rescale_kernel:
   * 2 floats a row, laid out (c0, c1, c0, c1) a row pair), the bound's constants */
  const float *tscale;
  const float *cinit;
  double ea, eb, ei, e0, eq;
};

/* A kept pair of the sparse form's list.  j2 >= 0: the winner is certain (the bound
 * settled it) and j2 is the approximate second, whose exact distance starts the
 * finishing kernel's search for d2; j2 = J2_FINAL: d1, d2 are final (the exact
 * re-check computed them); j2 = J2_SEARCH (the variants): a pair the bound could not
 * reject, winner unknown, d2 an upper bound on its exact second distance (float,
 * rounded up; +inf: none): the finishing kernel finds the exact top-2 and decides. */
#define J2_FINAL (-1)
#define J2_SEARCH (-2)
struct SpEnt {
  int match;
  int j2;
  float d1, d2;
};

/* ---- device helpers ------------------------------------------------------------ */

__device__ __forceinline__ unsigned
smem_u32 (const void *p)
{
  return (unsigned) __cvta_generic_to_shared (p);
}

__device__ __forceinline__ void
cp_async16 (void *sdst, const void *gsrc)
{
#if __CUDA_ARCH__ >= 800
  asm volatile ("cp.async.cg.shared.global [%0], [%1], 16;\n"
      :: "r" (smem_u32 (sdst)), "l" (gsrc));
#endif
}

__device__ __forceinline__ void
cp_async_commit (void)
{
#if __CUDA_ARCH__ >= 800
  asm volatile ("cp.async.commit_group;\n" ::);
#endif
}

__device__ __forceinline__ void
cp_async_wait1 (void)
{
#if __CUDA_ARCH__ >= 800
  asm volatile ("cp.async.wait_group 1;\n" ::);
#endif
}

__device__ __forceinline__ void
ldmatrix_x4 (unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3, const void *p)
{
#if __CUDA_ARCH__ >= 800
  asm volatile ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
      : "=r" (r0), "=r" (r1), "=r" (r2), "=r" (r3) : "r" (smem_u32 (p)));
#else
  r0 = r1 = r2 = r3 = 0;
#endif
}

__device__ __forceinline__ void
mma16816 (float *c, const unsigned *a, unsigned b0, unsigned b1)
{
#if __CUDA_ARCH__ >= 800
  asm volatile ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f" (c[0]), "+f" (c[1]), "+f" (c[2]), "+f" (c[3])
      : "r" (a[0]), "r" (a[1]), "r" (a[2]), "r" (a[3]), "r" (b0), "r" (b1));
#endif
}

/* mma16816 with the accumulator starting from c (the variants' |c|^2 term) rather than
 * from the destination: both row tiles of a column pair read the same c registers, so
 * no copy of c into each accumulator is needed */
__device__ __forceinline__ void
mma16816_from (float *d, const unsigned *a, unsigned b0, unsigned b1, const float4 c)
{
#if __CUDA_ARCH__ >= 800
  asm volatile ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
      : "=f" (d[0]), "=f" (d[1]), "=f" (d[2]), "=f" (d[3])
      : "r" (a[0]), "r" (a[1]), "r" (a[2]), "r" (a[3]), "r" (b0), "r" (b1),
        "f" (c.x), "f" (c.y), "f" (c.z), "f" (c.w));
#endif
}

/* the variants' A operand: components kk, kk + 1 of float32 row R (0 past k, 0 for
 * R < 0), times sc (a power of 2: exact), as an FP16 pair */
__device__ __forceinline__ unsigned
scaled_pair (const float *f32, long long R, int k, int kk, float sc)
{
  if (R < 0)
    return 0u;
  const float *f = f32 + R * k;
  const __half2 h = __halves2half2 (__float2half_rn (kk < k ? f[kk] * sc : 0.f),
      __float2half_rn (kk + 1 < k ? f[kk + 1] * sc : 0.f));
  return *(const unsigned *) &h;
}

/* the canonical squared distance of matcher.h */
__device__ __forceinline__ double
exact_dist (const float *q, const float *c, int k)
{
  double acc = 0.0;
  for (int t = 0; t < k; t++) {
    const double d = (double) q[t] - (double) c[t];
    acc = fma (d, d, acc);
  }
  return acc;
}

/* ---- prep: database rows from float32 descriptors ------------------------------ */

/* The row kernels' grid: (ceil(max pn / 8), images), 256 threads, a warp per padded
 * row: image ti = img_base + blockIdx.y, its row lr (R in the database).  False past
 * the image's padded rows. */
struct PrepRow {
  int ti, lane, lr;
  long long R;
  ImgInfo im;
};

__device__ __forceinline__ bool
prep_row (const ImgInfo *imgs, int img_base, PrepRow &r)
{
  r.ti = img_base + blockIdx.y;
  r.lane = threadIdx.x & 31;
  r.lr = blockIdx.x * 8 + (threadIdx.x >> 5);
  r.im = imgs[r.ti];
  r.R = (long long) r.im.poff + r.lr;
  return r.lr < r.im.pn;
}

__global__ void
prep_kernel (const float *__restrict__ stage, ImgInfo *imgs, int img_base, int k, int kp,
    DbPtrs db, int *qlist)
{
  PrepRow pr;
  if (!prep_row (imgs, img_base, pr))
    return;
  const int ti = pr.ti, lane = pr.lane, lr = pr.lr;
  const ImgInfo &im = pr.im;
  const long long R = pr.R;
  float *f = db.f32 + R * k;
  __half *h = db.h16 + R * kp;
  if (lr < im.n) {
    const float *src = stage + (im.src + lr) * (long long) k;
    double s = 0.0;
    for (int t = lane; t < k; t += 32) {
      const double v = src[t];
      s += v * v;
    }
    for (int o = 16; o > 0; o >>= 1)
      s += __shfl_xor_sync (0xffffffffu, s, o);
    const float n2 = (float) s, n1 = (float) sqrt (s);
    for (int t = lane; t < k; t += 32)
      f[t] = src[t];
    for (int t = lane; t < kp; t += 32)
      h[t] = __float2half_rn (t < k && n1 > 0.f ? src[t] / n1 : 0.f);
    if (lane == 0) {
      db.cinfo[R] = make_float2 (n2, n1);
      db.rowlocal[R] = lr;
      db.rowglob[R] = im.gabs + (unsigned) lr;
      atomicMax ((int *) &imgs[ti].M, __float_as_int (n1));
      atomicMax ((int *) &imgs[ti].M2, __float_as_int (n2));
      if (qlist)
        qlist[im.src + lr] = (int) R;
    }
  } else {
    for (int t = lane; t < k; t += 32)
      f[t] = 0.f;
    for (int t = lane; t < kp; t += 32)
      h[t] = __float2half_rn (0.f);
    if (lane == 0) {
      db.cinfo[R] = make_float2 (__int_as_float (0x7f800000), 0.f);
      db.rowlocal[R] = -1;
      db.rowglob[R] = 0u;
    }
  }
}

/* ---- the variants' database: FP16 rows c / s_i and the accumulator start values --- */

/* the power of 2 s with x <= s < 2 x, at least 2^-100 (so 1 / s and the bound's
 * products stay finite); x >= 0 finite */
__device__ __forceinline__ float
pow2_at_least (float x)
{
  if (!(x > 0x1p-100f))
    return 0x1p-100f;
  unsigned u = __float_as_uint (x);
  if (u & 0x7fffffu)
    u = (u & 0x7f800000u) + 0x800000u;
  return __uint_as_float (u & 0x7f800000u);
}

/* 1 / x for x a power of 2 in [2^-126, 2^126] (the scales): exact, and without the
 * division's slow-path call */
__device__ __forceinline__ float
pow2_inv (float x)
{
  return __uint_as_float ((254u << 23) - __float_as_uint (x));
}

/* one block: every image's scale s_i = pow2_at_least (M_i), and the batch's query
 * scale t = max s_i into *t_out (each query q lies in some image: |q| <= M_i <= t) */
__global__ void
scale_kernel (ImgInfo *imgs, int m, float *t_out)
{
  typedef cub::BlockReduce<float, SPARSE_NT> Reduce;
  __shared__ typename Reduce::TempStorage tmp;
  float mx = 0x1p-100f;
  for (int i = threadIdx.x; i < m; i += SPARSE_NT) {
    const float sc = pow2_at_least (imgs[i].M);
    imgs[i].s = sc;
    mx = fmaxf (mx, sc);
  }
  const float t = Reduce (tmp).Reduce (mx, [] (float a, float b) { return fmaxf (a, b); });
  if (threadIdx.x == 0)
    *t_out = t;
}

/* A row kernel (prep_row), after prep_kernel and scale_kernel: the FP16 row becomes
 * c / s_i (a power-of-2 scaling: exact before the FP16 rounding; |c / s_i| <= 1), and
 * the row's start value |c|^2 / (2 t s_i) (rounded once, from double) goes to both
 * slots of its column pair in cinit; padding rows start at +inf, so they never win. */
__global__ void
rescale_kernel (const ImgInfo *__restrict__ imgs, int img_base, int k, int kp, DbPtrs db,
    const float *__restrict__ t_in, float *__restrict__ cinit)
{
  PrepRow pr;
  if (!prep_row (imgs, img_base, pr))
    return;
  const ImgInfo &im = pr.im;
  const long long R = pr.R;
  const int lane = pr.lane;
  float init = __int_as_float (0x7f800000);
  if (pr.lr < im.n) {
    const float inv = pow2_inv (im.s);
    const float *f = db.f32 + R * k;
    __half *h = db.h16 + R * kp;
    for (int t = lane; t < kp; t += 32)
      h[t] = __float2half_rn (t < k ? f[t] * inv : 0.f);
    init = (float) ((double) db.cinfo[R].x * 0.5 * (double) pow2_inv (*t_in) *
        (double) inv);
  }
  if (lane == 0) {
    float *c = cinit + (R >> 1) * 4 + (R & 1);
    c[0] = init;
    c[2] = init;
  }
}

/* ---- the match kernel ------------------------------------------------------------ */

__device__ __forceinline__ long long
query_row (const MatchParams &p, long long t)
{
  if (t >= p.nq)
    return -1;
  return p.qlist ? (long long) p.qlist[t] : p.qr0 + t;
}

/* What a lane needs to decide its row: fixed for the whole launch. */
struct RowInfo {
  bool valid;           /* a real query row */
  unsigned gq;          /* its running descriptor id */
  float qn2, qn;        /* |q|^2, |q| */
};

__device__ __forceinline__ RowInfo
row_info (const MatchParams &p, long long R)
{
  RowInfo r;
  r.valid = R >= 0 && p.db.rowlocal[R] >= 0;
  r.gq = r.valid ? p.db.rowglob[R] : 0u;
  const float2 c = r.valid ? p.db.cinfo[R] : make_float2 (0.f, 0.f);
  r.qn2 = c.x;
  r.qn = c.y;
  return r;
}

/* one entry of the list (list mode), in the slot the caller reserved */
__device__ __forceinline__ void
sparse_put (const MatchParams &p, unsigned long long slot, unsigned gq, int ti, int match,
    int j2, float d1, float d2)
{
  if (slot >= p.scap)
    return;                     /* counted: the host grows the list and runs again */
  p.skey[slot] = (unsigned long long) (p.img0 + ti) * (unsigned long long) p.nall +
      (unsigned) (gq - p.qbase);
  SpEnt e;
  e.match = match;
  e.j2 = j2;
  e.d1 = d1;
  e.d2 = d2;
  p.spay[slot] = e;
}

/* list mode: the warp's pairs with keep set take consecutive slots of the list (one
 * atomic; a few kept pairs in a warp's 32 rows is the common case, none the most
 * common).  Every lane of the warp calls it together. */
__device__ __forceinline__ void
sparse_append (const MatchParams &p, bool keep, unsigned gq, int ti, int match, int j2,
    float d2)
{
  const unsigned mask = __ballot_sync (0xffffffffu, keep);
  if (!mask)
    return;
  const int lane = threadIdx.x & 31, leader = __ffs (mask) - 1;
  unsigned long long base = 0;
  if (lane == leader)
    base = atomicAdd (p.scount, (unsigned long long) __popc (mask));
  base = __shfl_sync (0xffffffffu, base, leader);
  if (keep)
    sparse_put (p, base + __popc (mask & ((1u << lane) - 1u)), gq, ti, match, j2, 0.f, d2);
}

/* decide one (row, image) pair from its approximate top-2 keys; writes the output
 * (and queues the pair when the bound cannot settle it).  In list mode every lane of
 * the warp must call it together (the callers do: at the end of an image, uniform
 * across the CTA), since the kept pairs are appended with one atomic per warp. */
__device__ __forceinline__ void
finalize_pair (const MatchParams &p, const RowInfo &ri, long long R, int ti,
    int K1s, int K2s)
{
  /* Signed keys: a negative value v~ (only ever a rounding of a true D <= E) sorts
   * before every non-negative one, and among negatives the order is not the value's.
   * Neither decision below can be taken on a wrong order: acceptance needs
   * v2 - E > 0, so K2 (and every key above it) is non-negative and ordered by value,
   * and only K1 may be negative; rejection needs v1 > E, so no key is negative.  Any
   * pair with two negative top keys is queued for the exact re-check. */
  const unsigned K1 = (unsigned) K1s, K2 = (unsigned) K2s;
  int res = -1;
  if (ri.valid) {
    const ImgInfo im = p.imgs[ti];
    if (!(im.n < 2 || (p.self_skip && (unsigned) (ri.gq - im.gabs) < (unsigned) im.n))) {
      const double qn = ri.qn, qn2 = ri.qn2;
      const double v1 = __uint_as_float (K1 & p.keymask);
      const double v2 = __uint_as_float (K2 & p.keymask);
      const int w = (int) (K1 & ~p.keymask);
      const double S = qn2 + (double) im.M2 + 2.0 * qn * im.M;
      const double E = p.delta2 * qn * im.M + p.eps1 * S + p.trunc * fabs (v2) + 1e-30;
      if (p.force)
        res = PENDING;
      else if (v1 - E > p.rr * (v2 + E))
        res = -1;
      else if (v1 + E < p.rr * (v2 - E) && v1 + E < v2 - E)
        res = w;
      else
        res = PENDING;
      if (res == PENDING) {
        const unsigned slot = atomicAdd (p.pcount, 1u);
        if (slot < p.pcap)
          p.plist[slot] = ((unsigned long long) (unsigned) R << 32) | (unsigned) ti;
      }
    }
    if (!p.sparse)
      p.out[(long long) ti * p.ld + (long long) (unsigned) (ri.gq - p.qbase)] = res;
  }
  if (p.sparse)
    sparse_append (p, res >= 0, ri.gq, ti, res, (int) (K2 & ~p.keymask), 0.f);
}

/* finalize_pair for the variants (list mode only), from the approximate values a1 <=
 * a2 of the row's keys (key = (|c|^2 - 2 q.c) / (2 t s), D~ = |q|^2 + 2 t s key; for
 * VAR_MIN a2 is the second smallest of the subset minima: some candidate other than
 * a1's has that value, so the exact second distance is at most D~(a2) + E as well).
 * The pair is left out only when the bound proves the ratio test fails:
 * D1 >= D~(a1) - E > r^2 (D~(a2) + E) >= r^2 D2.  Any other pair becomes a J2_SEARCH
 * entry: the finishing kernel finds its exact top-2 (winner included) and decides,
 * so no pair goes to the float64 re-check queue.  E (variants' bound, bounds_var on
 * the host): ts2 (A (ea B + eb) + eb B + ei I + e0) + eq |q|^2 with ts2 = 2 t s,
 * A = |q| / t, B = M / s, I = M2 / ts2.  All lanes of the warp call it together. */
__device__ __forceinline__ void
finalize_search (const MatchParams &p, const RowInfo &ri, int ti, float a1, float a2,
    float t, float tinv)
{
  bool put = false;
  float seed = 0.f;
  if (ri.valid) {
    const ImgInfo im = p.imgs[ti];
    if (!(im.n < 2 || (p.self_skip && (unsigned) (ri.gq - im.gabs) < (unsigned) im.n))) {
      /* t, s powers of 2: every scaling below is exact */
      const double sinv = pow2_inv (im.s);
      const double qn2 = ri.qn2, ts2 = 2.0 * (double) t * (double) im.s;
      const double A = ri.qn * (double) tinv, B = im.M * sinv;
      const double I = im.M2 * 0.5 * (double) tinv * sinv;
      const double E = ts2 * (A * (p.ea * B + p.eb) + p.eb * B + p.ei * I + p.e0) +
          p.eq * qn2 + 1e-30;
      const double v1 = qn2 + ts2 * (double) a1, v2 = qn2 + ts2 * (double) a2;
      put = p.force || !(v1 - E > p.rr * (v2 + E));
      /* FORCE_EXACT: no seed, so that the finishing kernel's search starts blind */
      seed = p.force ? __int_as_float (0x7f800000) : __double2float_ru (v2 + E);
    }
  }
  sparse_append (p, put, ri.gq, ti, -1, J2_SEARCH, seed);
}

/* The 4 lanes of each row merge their running top-2 (x1 <= x2: keys or values) by
 * shuffles; the lane's own row (slot tq) comes back as X1 <= X2. */
template <typename T>
__device__ __forceinline__ void
merge_lanes_top2 (T (&x1)[4], T (&x2)[4], int tq, T &X1, T &X2)
{
#pragma unroll
  for (int s = 0; s < 4; s++)
#pragma unroll
    for (int o = 1; o <= 2; o <<= 1) {
      const T o1 = __shfl_xor_sync (0xffffffffu, x1[s], o);
      const T o2 = __shfl_xor_sync (0xffffffffu, x2[s], o);
      x2[s] = min (max (x1[s], o1), min (x2[s], o2));
      x1[s] = min (x1[s], o1);
    }
  X1 = tq == 0 ? x1[0] : tq == 1 ? x1[1] : tq == 2 ? x1[2] : x1[3];
  X2 = tq == 0 ? x2[0] : tq == 1 ? x2[1] : tq == 2 ? x2[2] : x2[3];
}

/* The match kernel's epilogue, per candidate and row (see the design comment):
 * VAR_KEY (default): D~ from the unit-vector dot product (FMUL, FADD, FFMA), packed
 *   with the index into a signed key, integer top-2 (LOP3 + 3 IMNMX);
 * VAR_TOP2: the accumulator starts at |c|^2 / (2 t s) and A = -q / t, B = c / s (FP16),
 *   so the tensor cores leave key = (|c|^2 - 2 q.c) / (2 t s) and the epilogue is the
 *   value-only top-2, 3 FMNMX (no index: the finishing kernel recovers the winner);
 * VAR_MIN: the same key, and each lane keeps one running minimum per row for each of
 *   its two column parities (8 subsets of a row's candidates among the 4 lanes): one
 *   FMNMX.  The smallest subset minimum is the row's approximate nearest, the second
 *   smallest an upper bound on its approximate second (equal unless the two nearest
 *   share a subset), enough to reject; what cannot be rejected is searched exactly. */
enum MatchVariant { VAR_KEY = 0, VAR_TOP2 = 1, VAR_MIN = 2, VAR_COUNT = 3 };

template <int KP, int V>
__global__ void __launch_bounds__ (NT, (KP <= 32 ? 6 : KP <= 64 ? 4 : 3))
match_kernel (const MatchParams p)
{
  constexpr int KS = KP / 16;
  constexpr int SROW = KP + 8;          /* halves; 16-byte pad: ldmatrix conflict free */
  constexpr int PIECES = BN * KP / 8;   /* 16-byte pieces of a chunk */
  constexpr bool KEY = V == VAR_KEY;
  __shared__ __align__ (16) __half sB[2][BN * SROW];
  /* per candidate: VAR_KEY (|c|^2, |c|) as float2; the variants the accumulator start
   * values, (c0, c1, c0, c1) a column pair (the C fragment's layout) */
  __shared__ __align__ (16) float4 sX[2][BN / 2];

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, tq = lane & 3;
  const int i0 = blockIdx.y * p.ips;
  const int i1 = min (p.nimg, i0 + p.ips);
  if (i0 >= i1)
    return;
  const long long tbase = (long long) blockIdx.x * BM + warp * 32;
  const float tsc = KEY ? 1.f : *p.tscale, tinv = KEY ? 1.f : pow2_inv (tsc);

  /* this thread's 4 rows: slot s = mt * 2 + h -> row tbase + mt * 16 + h * 8 + g */
  long long R[4];
  float nqr[4], m2q[4];                 /* VAR_KEY: |q|^2, -2 |q| */
#pragma unroll
  for (int s = 0; s < 4; s++) {
    R[s] = query_row (p, tbase + (s >> 1) * 16 + (s & 1) * 8 + g);
    if (R[s] >= 0) {
      const float2 c = p.db.cinfo[R[s]];
      nqr[s] = c.x;
      m2q[s] = -2.0f * c.y;
    } else {
      nqr[s] = __int_as_float (0x7f800000);
      m2q[s] = 0.f;
    }
  }
  /* A fragments for the whole launch: VAR_KEY the unit rows of the database, the
   * variants -q / t from the float32 rows */
  unsigned a[2][KS][4];
  const float nt = -tinv;
#pragma unroll
  for (int mt = 0; mt < 2; mt++) {
    const long long ra = R[mt * 2], rb = R[mt * 2 + 1];
#pragma unroll
    for (int ks = 0; ks < KS; ks++) {
      const int kk = ks * 16 + 2 * tq;
      if constexpr (KEY) {
        a[mt][ks][0] = ra >= 0 ? *(const unsigned *) (p.db.h16 + ra * KP + kk) : 0u;
        a[mt][ks][1] = rb >= 0 ? *(const unsigned *) (p.db.h16 + rb * KP + kk) : 0u;
        a[mt][ks][2] = ra >= 0 ? *(const unsigned *) (p.db.h16 + ra * KP + kk + 8) : 0u;
        a[mt][ks][3] = rb >= 0 ? *(const unsigned *) (p.db.h16 + rb * KP + kk + 8) : 0u;
      } else {
        a[mt][ks][0] = scaled_pair (p.db.f32, ra, p.k, kk, nt);
        a[mt][ks][1] = scaled_pair (p.db.f32, rb, p.k, kk, nt);
        a[mt][ks][2] = scaled_pair (p.db.f32, ra, p.k, kk + 8, nt);
        a[mt][ks][3] = scaled_pair (p.db.f32, rb, p.k, kk + 8, nt);
      }
    }
  }
  /* the row this lane decides at the end of an image: slot tq */
  const long long Rmine = tq == 0 ? R[0] : tq == 1 ? R[1] : tq == 2 ? R[2] : R[3];
  const RowInfo rmine = row_info (p, Rmine);

  /* images with fewer than 2 descriptors: -1 (the list mode has nothing to write) */
  if (!p.sparse)
    for (int i = i0; i < i1; i++)
      if (p.imgs[i].n < 2)
        finalize_pair (p, rmine, Rmine, i, 0u, 0u);

  /* chunk iterators over the images of the slice that have >= 2 descriptors */
  int li = i0;
  while (li < i1 && p.imgs[li].n < 2)
    li++;
  if (li >= i1)
    return;
  int lc = 0;
  int ni = li, nc = 0;                  /* the chunk to load next */

  auto load_chunk = [&] (int stage, int img, int ch) {
    const long long row0 = (long long) p.imgs[img].poff + (long long) ch * BN;
    const __half *src = p.db.h16 + row0 * KP;
    for (int pc = threadIdx.x; pc < PIECES; pc += NT) {
      const int r = pc / (KP / 8), c16 = pc % (KP / 8);
      cp_async16 (&sB[stage][r * SROW + c16 * 8], src + (long long) r * KP + c16 * 8);
    }
    if (threadIdx.x < BN / 2)
      cp_async16 (&sX[stage][threadIdx.x], KEY ?
          (const void *) (p.db.cinfo + row0 + threadIdx.x * 2) :
          (const void *) (p.cinit + row0 * 2 + threadIdx.x * 4));
  };
  auto advance = [&] (int &img, int &ch) {
    if (++ch * BN >= p.imgs[img].pn) {
      ch = 0;
      do {
        img++;
      } while (img < i1 && p.imgs[img].n < 2);
    }
  };

  load_chunk (0, ni, nc);
  cp_async_commit ();
  advance (ni, nc);

  /* the running top-2 of each row: VAR_KEY signed keys (see finalize_pair); VAR_TOP2
   * values f1 <= f2; VAR_MIN the minima of the two column parities */
  int k1[4], k2[4];
  float f1[4], f2[4];
#pragma unroll
  for (int s = 0; s < 4; s++) {
    k1[s] = k2[s] = 0x7fffffff;
    f1[s] = f2[s] = __int_as_float (0x7f800000);
  }
  int stage = 0;
  for (;;) {
    const bool has_next = ni < i1;
    if (has_next)
      load_chunk (stage ^ 1, ni, nc);
    cp_async_commit ();
    cp_async_wait1 ();
    __syncthreads ();

    /* ---- tensor-core tiles of 32 rows x 16 candidates per warp, each followed by its
     * epilogue (keys and the running top-2): 16 accumulator registers instead of 64,
     * so more warps fit an SM, and each warp's tensor-core and integer work interleave
     * (the accumulation order of every product is the same as a whole-chunk tile's) */
    const __half *sb = sB[stage];
    const float2 *sc = (const float2 *) sX[stage];
    const unsigned cbase = (unsigned) lc * BN;
#pragma unroll
    for (int np = 0; np < 4; np++) {
      float acc[2][2][4];
      float4 cst[2];                    /* the variants' start values, columns j */
#pragma unroll
      for (int j = 0; j < 2; j++)
        if constexpr (!KEY)
          cst[j] = sX[stage][(2 * np + j) * 4 + tq];
#pragma unroll
      for (int mt = 0; mt < 2; mt++)
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
          for (int e = 0; e < 4; e++)
            acc[mt][j][e] = 0.f;
#pragma unroll
      for (int ks = 0; ks < KS; ks++) {
        unsigned b[2][2];
        const int mi = lane >> 3, rr = lane & 7;
        const __half *addr = sb + (np * 16 + (mi >> 1) * 8 + rr) * SROW + ks * 16 +
            (mi & 1) * 8;
        ldmatrix_x4 (b[0][0], b[0][1], b[1][0], b[1][1], addr);
#pragma unroll
        for (int mt = 0; mt < 2; mt++)
#pragma unroll
          for (int j = 0; j < 2; j++)
            if (!KEY && ks == 0)
              mma16816_from (acc[mt][j], a[mt][ks], b[j][0], b[j][1], cst[j]);
            else
              mma16816 (acc[mt][j], a[mt][ks], b[j][0], b[j][1]);
      }
#pragma unroll
      for (int j = 0; j < 2; j++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
          const int col = (2 * np + j) * 8 + 2 * tq + e;
          float2 ci = make_float2 (0.f, 0.f);
          unsigned cid = 0u;
          if constexpr (KEY) {
            ci = sc[col];
            cid = cbase + (unsigned) col;
          }
#pragma unroll
          for (int s = 0; s < 4; s++) {
            const float v = acc[s >> 1][j][(s & 1) * 2 + e];
            if constexpr (KEY) {
              const float d = fmaf (m2q[s], ci.y * v, nqr[s] + ci.x);
              const int key = (int) ((__float_as_uint (d) & p.keymask) | cid);
              k2[s] = min (k2[s], max (k1[s], key));
              k1[s] = min (k1[s], key);
            } else if constexpr (V == VAR_TOP2) {
              f2[s] = fminf (f2[s], fmaxf (f1[s], v));
              f1[s] = fminf (f1[s], v);
            } else if (e == 0) {
              f1[s] = fminf (f1[s], v);
            } else {
              f2[s] = fminf (f2[s], v);
            }
          }
        }
    }

    /* ---- end of an image: merge the 4 lanes of each row, decide */
    if ((lc + 1) * BN >= p.imgs[li].pn) {
      if constexpr (KEY) {
        int K1, K2;
        merge_lanes_top2 (k1, k2, tq, K1, K2);
        finalize_pair (p, rmine, Rmine, li, K1, K2);
      } else {
        if constexpr (V == VAR_MIN)
#pragma unroll
          for (int s = 0; s < 4; s++) {   /* the lane's two subsets as a sorted pair */
            const float lo = fminf (f1[s], f2[s]), hi = fmaxf (f1[s], f2[s]);
            f1[s] = lo;
            f2[s] = hi;
          }
        float A1, A2;
        merge_lanes_top2 (f1, f2, tq, A1, A2);
        finalize_search (p, rmine, li, A1, A2, tsc, tinv);
      }
#pragma unroll
      for (int s = 0; s < 4; s++) {
        k1[s] = k2[s] = 0x7fffffff;
        f1[s] = f2[s] = __int_as_float (0x7f800000);
      }
    }
    __syncthreads ();
    if (!has_next)
      break;
    li = ni;
    lc = nc;
    advance (ni, nc);
    stage ^= 1;
  }
}

/* ---- exact re-check: a warp per queued pair ------------------------------------- */

/* the canonical two smallest distances of q among image im's rows, a warp together
 * (ties to the lower index); every lane gets the result */
__device__ __forceinline__ void
exact_top2_warp (const MatchParams &p, const float *q, const ImgInfo &im, int lane,
    double *d1o, double *d2o, int *i1o)
{
  double d1 = __longlong_as_double (0x7ff0000000000000ll), d2 = d1;
  int i1 = 0x7fffffff;
  for (int c = lane; c < im.n; c += 32) {
    const double d = exact_dist (q, p.db.f32 + ((long long) im.poff + c) * p.k, p.k);
    if (d < d1) {
      d2 = d1;
      d1 = d;
      i1 = c;
    } else if (d < d2) {
      d2 = d;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const double od1 = __shfl_xor_sync (0xffffffffu, d1, o);
    const double od2 = __shfl_xor_sync (0xffffffffu, d2, o);
    const int oi1 = __shfl_xor_sync (0xffffffffu, i1, o);
    const bool mine = d1 < od1 || (d1 == od1 && i1 < oi1);
    const double other = mine ? od1 : d1;
    d2 = fmin (other, fmin (d2, od2));
    if (!mine) {
      d1 = od1;
      i1 = oi1;
    }
  }
  *d1o = d1;
  *d2o = d2;
  *i1o = i1;
}

__device__ __forceinline__ void
exact_pair_warp (const MatchParams &p, long long R, int ti, int lane)
{
  const ImgInfo im = p.imgs[ti];
  double d1, d2;
  int i1;
  exact_top2_warp (p, p.db.f32 + R * p.k, im, lane, &d1, &d2, &i1);
  if (lane == 0) {
    const unsigned gq = p.db.rowglob[R];
    const int res = (im.n >= 2 && d1 < p.rr * d2) ? i1 : -1;
    if (!p.sparse) {
      p.out[(long long) ti * p.ld + (long long) (unsigned) (gq - p.qbase)] = res;
    } else if (res >= 0) {
      /* the list mode: the exact distances are at hand, the entry is final */
      sparse_put (p, atomicAdd (p.scount, 1ull), gq, ti, res, -1, (float) sqrt (d1),
          (float) sqrt (d2));
    }
  }
}

__global__ void
recheck_kernel (const MatchParams p)
{
  const unsigned count = min (*p.pcount, p.pcap);
  const int lane = threadIdx.x & 31;
  const unsigned warps = gridDim.x * (blockDim.x >> 5);
  for (unsigned e = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); e < count;
      e += warps) {
    const unsigned long long v = p.plist[e];
    exact_pair_warp (p, (long long) (v >> 32), (int) (v & 0xffffffffu), lane);
  }
}

/* the queue overflowed: settle every entry still marked, a warp per (row, image) */
__global__ void
sweep_kernel (const MatchParams p)
{
  const int lane = threadIdx.x & 31;
  const long long warps = (long long) gridDim.x * (blockDim.x >> 5);
  const long long total = (long long) p.nq * p.nimg;
  for (long long e = (long long) blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
      e < total; e += warps) {
    const long long t = e / p.nimg;
    const int ti = (int) (e % p.nimg);
    const long long R = query_row (p, t);
    if (R < 0 || p.db.rowlocal[R] < 0)
      continue;
    const unsigned gq = p.db.rowglob[R];
    const long long oi = (long long) ti * p.ld + (long long) (unsigned) (gq - p.qbase);
    if (p.out[oi] == PENDING)        /* uniform across the warp */
      exact_pair_warp (p, R, ti, lane);
  }
}

/* ---- sparse output: compaction of a slab of the matrix on the device ------------- */

/* kept entries (>= 0) of each slab row (an image against every query) */
__global__ void
sparse_count_kernel (const int *__restrict__ slab, long long n, long long *__restrict__ cnt)
{
  typedef cub::BlockReduce<long long, SPARSE_NT> Reduce;
  __shared__ typename Reduce::TempStorage tmp;
  const int *row = slab + (long long) blockIdx.x * n;
  long long c = 0;
  for (long long q = threadIdx.x; q < n; q += SPARSE_NT)
    c += row[q] >= 0;
  const long long tot = Reduce (tmp).Sum (c);
  if (threadIdx.x == 0)
    cnt[blockIdx.x] = tot;
}

/* the kept entries of each row at its offset, in query order (a block scan per chunk) */
__global__ void
sparse_fill_kernel (const int *__restrict__ slab, long long n, int img0,
    const long long *__restrict__ off, GrMatch *__restrict__ out)
{
  typedef cub::BlockScan<int, SPARSE_NT> Scan;
  __shared__ typename Scan::TempStorage tmp;
  const int *row = slab + (long long) blockIdx.x * n;
  long long base = off[blockIdx.x];
  for (long long q0 = 0; q0 < n; q0 += SPARSE_NT) {
    const long long q = q0 + threadIdx.x;
    const int v = q < n ? row[q] : -1;
    int pos, tot;
    Scan (tmp).ExclusiveSum (v >= 0 ? 1 : 0, pos, tot);
    if (v >= 0) {
      GrMatch e;
      e.query = q;
      e.image = img0 + (int) blockIdx.x;
      e.match = v;
      e.d1 = e.d2 = 0.f;
      out[base + pos] = e;
    }
    base += tot;
    __syncthreads ();           /* tmp is reused */
  }
}

/* the canonical d1, d2 of each kept entry: a warp each (p.imgs: the whole table) */
__global__ void
sparse_dist_kernel (const MatchParams p, GrMatch *ent, long long count)
{
  const int lane = threadIdx.x & 31;
  const long long warps = (long long) gridDim.x * (blockDim.x >> 5);
  for (long long e = (long long) blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
      e < count; e += warps) {
    const long long qj = ent[e].query;
    const ImgInfo im = p.imgs[ent[e].image];
    const long long R = p.qlist[qj];
    double d1, d2;
    int i1;
    exact_top2_warp (p, p.db.f32 + R * p.k, im, lane, &d1, &d2, &i1);
    if (lane == 0) {
      ent[e].d1 = (float) sqrt (d1);
      ent[e].d2 = (float) sqrt (d2);
    }
  }
}

/* ---- sparse output, list mode: the finishing kernel ------------------------------ */

/* The list's order without a device-wide sort (cub's would pull libstdc++'s iostream
 * into a library linked as C): (image, query) pairs are unique, so a bitmap of the
 * kept pairs (a bit per pair, m x n / 8 bytes: 32 times less than the matrix) and its
 * prefix counts give every entry its position in the matrix's row-major order.
 * Rows r = image - row0; W = words per row. */
__global__ void
sparse_mark_kernel (const unsigned long long *__restrict__ keys, long long count,
    long long n, int row0, long long W, unsigned *__restrict__ bits)
{
  for (long long e = (long long) blockIdx.x * blockDim.x + threadIdx.x; e < count;
      e += (long long) gridDim.x * blockDim.x) {
    const unsigned long long key = keys[e];
    const long long r = (long long) (key / (unsigned long long) n) - row0;
    const long long q = (long long) (key % (unsigned long long) n);
    atomicOr (bits + r * W + (q >> 5), 1u << (q & 31));
  }
}

/* per row: the exclusive prefix of the words' bit counts, and the row's total */
__global__ void
sparse_wscan_kernel (const unsigned *__restrict__ bits, long long W,
    unsigned *__restrict__ wpre, unsigned *__restrict__ rcnt)
{
  typedef cub::BlockScan<unsigned, SPARSE_NT> Scan;
  __shared__ typename Scan::TempStorage tmp;
  const long long r = blockIdx.x;
  unsigned carry = 0;
  for (long long w0 = 0; w0 < W; w0 += SPARSE_NT) {
    const long long w = w0 + threadIdx.x;
    const unsigned v = w < W ? __popc (bits[r * W + w]) : 0u;
    unsigned pre, tot;
    Scan (tmp).ExclusiveSum (v, pre, tot);
    if (w < W)
      wpre[r * W + w] = carry + pre;
    carry += tot;
    __syncthreads ();           /* tmp is reused */
  }
  if (threadIdx.x == 0)
    rcnt[r] = carry;
}

/* the rows' first positions: one block */
__global__ void
sparse_rscan_kernel (const unsigned *__restrict__ rcnt, int nr, long long *__restrict__ roff)
{
  typedef cub::BlockScan<long long, SPARSE_NT> Scan;
  __shared__ typename Scan::TempStorage tmp;
  long long carry = 0;
  for (int r0 = 0; r0 < nr; r0 += SPARSE_NT) {
    const int r = r0 + threadIdx.x;
    const long long v = r < nr ? (long long) rcnt[r] : 0;
    long long pre, tot;
    Scan (tmp).ExclusiveSum (v, pre, tot);
    if (r < nr)
      roff[r] = carry + pre;
    carry += tot;
    __syncthreads ();
  }
  if (threadIdx.x == 0)
    roff[nr] = carry;
}

/* each entry to its position: sorted keys and the slot of its payload */
__global__ void
sparse_scatter_kernel (const unsigned long long *__restrict__ keys, long long count,
    long long n, int row0, long long W, const unsigned *__restrict__ bits,
    const unsigned *__restrict__ wpre, const long long *__restrict__ roff,
    unsigned long long *__restrict__ skey, unsigned *__restrict__ sval)
{
  for (long long e = (long long) blockIdx.x * blockDim.x + threadIdx.x; e < count;
      e += (long long) gridDim.x * blockDim.x) {
    const unsigned long long key = keys[e];
    const long long r = (long long) (key / (unsigned long long) n) - row0;
    const long long q = (long long) (key % (unsigned long long) n);
    const long long wi = r * W + (q >> 5);
    const long long pos = roff[r] + wpre[wi] + __popc (bits[wi] & ((1u << (q & 31)) - 1u));
    skey[pos] = key;
    sval[pos] = (unsigned) e;
  }
}

/* What an FP32 distance f can say about the canonical D: whatever the summation order,
 * |f - D| <= gamma D + tiny, gamma = (KP + 8) 2^-23 (at most KP + 4 roundings of
 * non-negative terms, each 2^-24, twice over for the double's own rounding and the
 * order), tiny covering underflow (3 KP operations that may each lose 2^-150).  So a
 * candidate with f > d (1 + gamma) + tiny has D > d: it cannot be (or tie) the second
 * neighbour when d is an exact distance already found. */
template <int KP>
__device__ __forceinline__ float
fp32_threshold (double d)
{
  return (float) (d * (1.0 + 2.0 * (KP + 8) * 0x1p-24) + (double) KP * 0x1p-120);
}

/* The list's entries in their final order (keys sorted: image, then query; row r's
 * entries at roff[r] .. roff[r + 1] - 1): a block per image of [row0, row1), a thread
 * per entry.  An entry whose winner w the bound
 * settled gets d1 = D(q, w) (canonical, float64) and d2 = min over c != w of D(q, c):
 * starting from D(q, j2) (the approximate second), every candidate of the image is
 * screened with an FP32 distance (4 partial sums, from shared-memory tiles that the
 * block's threads read together), and only those the FP32 bound cannot exclude are
 * evaluated exactly.  This replaces a float64 scan of the whole image per entry (the
 * slab path's sparse_dist_kernel, which read n_i x k floats from L2 for each entry).
 * A J2_SEARCH entry (the variants) starts with no candidate and its upper bound u on
 * the exact second distance: the same screening, against min (d2, u), keeps the
 * exact top-2 of the candidates it cannot exclude (in index order, so ties go to the
 * lower index as in the canonical search); every candidate of the exact top-2 has
 * D <= D2 <= min (d2, u), so none is excluded.  The entry is kept when d1 < r^2 d2
 * (rr), else its match becomes -1.  kept[blockIdx.x]: the entries of the image kept. */
template <int KP>
__global__ void __launch_bounds__ (FIN_NT)
sparse_finish_kernel (const DbPtrs db, int k, const ImgInfo *__restrict__ imgs,
    const int *__restrict__ qlist, int row0, long long n,
    const unsigned long long *__restrict__ keys, const unsigned *__restrict__ vals,
    const SpEnt *__restrict__ pay, const long long *__restrict__ roff, double rr,
    GrMatch *__restrict__ out, unsigned *__restrict__ kept)
{
  __shared__ __align__ (16) float tile[FIN_T * KP];
  const double inf = __longlong_as_double (0x7ff0000000000000ll);
  const int img = row0 + (int) blockIdx.x;
  const unsigned long long klo = (unsigned long long) img * (unsigned long long) n;
  const long long e0 = roff[blockIdx.x], e1 = roff[blockIdx.x + 1];
  unsigned nkept = 0;
  if (e0 >= e1) {               /* uniform across the block */
    if (threadIdx.x == 0)
      kept[blockIdx.x] = 0u;
    return;
  }
  const ImgInfo im = imgs[img];
  const float *crow = db.f32 + (long long) im.poff * k;
  for (long long g = e0; g < e1; g += FIN_NT) {
    const long long e = g + threadIdx.x;
    bool active = false, search = false;
    long long query = 0;
    const float *qp = NULL;
    int w = 0;
    double d1 = 0.0, d2 = 0.0, u = inf;
    float qv[KP];
#pragma unroll
    for (int t = 0; t < KP; t++)
      qv[t] = 0.f;
    if (e < e1) {
      query = (long long) (keys[e] - klo);
      const SpEnt se = pay[vals[e]];
      w = se.match;
      if (se.j2 == J2_FINAL) {
        GrMatch o;
        o.query = query;
        o.image = img;
        o.match = se.match;
        o.d1 = se.d1;
        o.d2 = se.d2;
        out[e] = o;
      } else {
        active = true;
        qp = db.f32 + (long long) qlist[query] * k;
#pragma unroll
        for (int t = 0; t < KP; t++)
          if (t < k)
            qv[t] = qp[t];
        if (se.j2 == J2_SEARCH) {
          search = true;
          w = -1;
          d1 = d2 = inf;
          u = se.d2;
        } else {
          d1 = exact_dist (qp, crow + (long long) w * k, k);
          d2 = (se.j2 < im.n && se.j2 != w) ?
              exact_dist (qp, crow + (long long) se.j2 * k, k) : inf;
        }
      }
    }
    if (__syncthreads_or (active)) {
      float thr = fp32_threshold<KP> (fmin (d2, u));
      for (int c0 = 0; c0 < im.n; c0 += FIN_T) {
        const int rows = min (FIN_T, im.n - c0);
        __syncthreads ();       /* the previous tile is no longer read */
        for (int x = threadIdx.x; x < FIN_T * KP; x += FIN_NT) {
          const int r = x / KP, t = x % KP;
          tile[x] = (r < rows && t < k) ? crow[(long long) (c0 + r) * k + t] : 0.f;
        }
        __syncthreads ();
        if (!active)
          continue;
        for (int r = 0; r < rows; r++) {
          const float *cv = tile + r * KP;
          float f0 = 0.f, f1 = 0.f, f2 = 0.f, f3 = 0.f;
#pragma unroll
          for (int t = 0; t < KP; t += 4) {
            const float4 c4 = *(const float4 *) (cv + t);
            const float a = qv[t] - c4.x, b = qv[t + 1] - c4.y;
            const float c = qv[t + 2] - c4.z, d = qv[t + 3] - c4.w;
            f0 = fmaf (a, a, f0);
            f1 = fmaf (b, b, f1);
            f2 = fmaf (c, c, f2);
            f3 = fmaf (d, d, f3);
          }
          const float f = (f0 + f1) + (f2 + f3);
          if (f <= thr && c0 + r != w) {
            /* canonical, as exact_dist (qv is not indexed at run time: it would
             * leave the registers) */
            double acc = 0.0;
            for (int t = 0; t < k; t++) {
              const double dd = (double) qp[t] - (double) cv[t];
              acc = fma (dd, dd, acc);
            }
            /* a settled winner is below every other candidate (the bound): only a
             * search entry's first branch is ever taken */
            if (acc < d1) {
              d2 = d1;
              d1 = acc;
              w = c0 + r;
              thr = fp32_threshold<KP> (fmin (d2, u));
            } else if (acc < d2) {
              d2 = acc;
              thr = fp32_threshold<KP> (fmin (d2, u));
            }
          }
        }
      }
    }
    bool ok = e < e1;
    if (active) {
      ok = !search || d1 < rr * d2;
      GrMatch o;
      o.query = query;
      o.image = img;
      o.match = ok ? w : -1;
      o.d1 = (float) sqrt (d1);
      o.d2 = (float) sqrt (d2);
      out[e] = o;
    }
    nkept += (unsigned) __syncthreads_count (ok);
  }
  if (threadIdx.x == 0)
    kept[blockIdx.x] = nkept;
}

/* The variants' list without the entries the finishing kernel dropped (match -1): a
 * block per image moves its kept entries, in order, to roff2[r] on (roff2: the
 * exclusive prefix of the finishing kernel's counts). */
__global__ void
sparse_compact_kernel (const GrMatch *__restrict__ in, const long long *__restrict__ roff,
    const long long *__restrict__ roff2, GrMatch *__restrict__ out)
{
  typedef cub::BlockScan<int, SPARSE_NT> Scan;
  __shared__ typename Scan::TempStorage tmp;
  const long long e1 = roff[blockIdx.x + 1];
  long long base = roff2[blockIdx.x];
  for (long long g = roff[blockIdx.x]; g < e1; g += SPARSE_NT) {
    const long long e = g + threadIdx.x;
    const bool keep = e < e1 && in[e].match >= 0;
    int pos, tot;
    Scan (tmp).ExclusiveSum (keep ? 1 : 0, pos, tot);
    if (keep)
      out[base + pos] = in[e];
    base += tot;
    __syncthreads ();           /* tmp is reused */
  }
}

/* ---- host side ---------------------------------------------------------------- */

struct DevDb {
  int k, kp;
  long long cap, base, end;     /* rows */
  DbPtrs d;
};

struct HostImg {
  int poff, n, pn;
  unsigned gabs;
  float M, M2;
};

struct GrMatcherCuda {
  int device;
  int nsm;
  cudaStream_t stream;
  cudaStream_t stream2;         /* incremental form: the backward direction */
  cudaEvent_t ev0, ev1;
  cudaEvent_t evk1, evk2;       /* end of each direction's kernels */
  cudaEvent_t evfork, evjoin;   /* ordering between the two streams */
  DevDb db;                     /* incremental form */
  DevDb bdb;                    /* batch form */
  HostImg *held;
  int nheld, held_cap;
  unsigned next_gabs;
  /* scratch, grow-only */
  float *d_stage;
  size_t stage_cap;
  ImgInfo *d_tab;
  size_t tab_cap;
  ImgInfo *h_tab;
  size_t htab_cap;
  int *d_qlist;
  size_t qlist_cap;
  int *d_out;
  size_t out_cap;
  long long *d_rowcnt;          /* sparse form: per slab row, kept count then offset */
  size_t rowcnt_cap;
  long long *h_rowcnt;          /* pinned */
  size_t hrowcnt_cap;
  GrMatch *d_sparse;            /* sparse form: one slab's entries (list mode: all) */
  size_t sparse_cap;
  /* sparse form, list mode: the unsorted list (keys, payloads), the ordered keys and
   * payload slots, the count; the entries' pinned host copy */
  unsigned long long *d_skey, *d_skey2;
  unsigned *d_sval2;
  SpEnt *d_spay;
  size_t skey_cap, skey2_cap, sval2_cap, spay_cap;
  unsigned *d_bits, *d_wpre, *d_rcnt;   /* the kept pairs' bitmap, its prefixes */
  size_t bits_cap, wpre_cap, rcnt_cap;
  long long *d_roff;
  size_t roff_cap;
  unsigned long long *d_scount, *h_scount;
  GrMatch *h_sparse;
  size_t hsparse_cap;
  unsigned long long slist_want;  /* list capacity the last call needed */
  /* the list mode's variants: the query scale t, the start values (2 floats a padded
   * row), the compacted entries and their image offsets */
  float *d_tscale;
  float *d_cinit;
  size_t cinit_cap;
  GrMatch *d_sparse2;
  size_t sparse2_cap;
  long long *d_roff2;
  size_t roff2_cap;
  unsigned long long *d_list;
  unsigned *d_count;
  unsigned *h_count;            /* pinned, 2 */
  ImgInfo *h_newimg;            /* pinned, 1 */
  /* pinned staging, grow-only: the new image's descriptors (upload) and the results
   * of gr_matcher_add_view (download) */
  float *h_in;
  size_t hin_cap;
  /* the batch forms' staged upload (gr_matcher_cuda_stage_begin): pinned copy of the
   * descriptors, and how many floats of it the parts have sent to d_stage */
  float *h_bstage;
  size_t hbstage_cap, bstaged;
  int32_t *h_res;
  size_t hres_cap;
};

/* a pinned host buffer of at least need_elems elements (contents not kept) */
template <typename P>
static cudaError_t
grow_pinned (P **ptr, size_t *cap, size_t need_elems)
{
  if (*ptr && *cap >= need_elems)
    return cudaSuccess;
  size_t n = *ptr ? need_elems + need_elems / 4 : need_elems;
  if (n < 1024)
    n = 1024;
  if (*ptr)
    cudaFreeHost (*ptr);
  *ptr = NULL;
  *cap = 0;
  cudaError_t e = gr_cuda_host_alloc ((void **) ptr, n * sizeof (P),
      cudaHostAllocDefault);
  if (e == cudaSuccess)
    *cap = n;
  else
    *ptr = NULL;
  return e;
}

static int
kp_for (int k)
{
  return k <= 32 ? 32 : k <= 64 ? 64 : 128;
}

static void
db_free (DevDb *db)
{
  cudaFree (db->d.h16);
  cudaFree (db->d.cinfo);
  cudaFree (db->d.f32);
  cudaFree (db->d.rowlocal);
  cudaFree (db->d.rowglob);
  memset (db, 0, sizeof *db);
}

/* copies rows [from, from + rows) of src to [to, ...) of dst (different or
 * non-overlapping) */
static cudaError_t
db_copy_rows (const DevDb *src, DbPtrs *dst, long long from, long long to, long long rows,
    cudaStream_t s)
{
  if (rows <= 0)
    return cudaSuccess;
  cudaError_t e = cudaMemcpyAsync (dst->h16 + to * src->kp, src->d.h16 + from * src->kp,
      rows * src->kp * sizeof (__half), cudaMemcpyDeviceToDevice, s);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync (dst->cinfo + to, src->d.cinfo + from, rows * sizeof (float2),
        cudaMemcpyDeviceToDevice, s);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync (dst->f32 + to * src->k, src->d.f32 + from * src->k,
        rows * src->k * sizeof (float), cudaMemcpyDeviceToDevice, s);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync (dst->rowlocal + to, src->d.rowlocal + from, rows * sizeof (int),
        cudaMemcpyDeviceToDevice, s);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync (dst->rowglob + to, src->d.rowglob + from,
        rows * sizeof (unsigned), cudaMemcpyDeviceToDevice, s);
  return e;
}

/* Room for `extra` rows at the end.  *shift receives how far the live rows moved
 * towards 0 (callers fix their row offsets). */
static GrStatus
db_reserve (DevDb *db, long long extra, cudaStream_t s, long long *shift,
    char *errbuf, size_t errlen)
{
  *shift = 0;
  if (db->end + extra <= db->cap)
    return GR_OK;
  const long long live = db->end - db->base;
  if (live + extra <= db->cap / 2) {
    /* compact in place: the end was reached, so base > cap / 2 >= live: the source
     * and the destination do not overlap */
    CK (db_copy_rows (db, &db->d, db->base, 0, live, s), "database compaction");
    *shift = db->base;
    db->base = 0;
    db->end = live;
    return GR_OK;
  }
  long long cap = 2 * (live + extra);
  if (cap < 4096)
    cap = 4096;
  DbPtrs n = { 0 };
  cudaError_t e = gr_cuda_malloc (&n.h16, cap * db->kp * sizeof (__half));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&n.cinfo, cap * sizeof (float2));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&n.f32, cap * db->k * sizeof (float));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&n.rowlocal, cap * sizeof (int));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&n.rowglob, cap * sizeof (unsigned));
  if (e == cudaSuccess)
    e = db_copy_rows (db, &n, db->base, 0, live, s);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize (s);
  if (e != cudaSuccess) {
    cudaFree (n.h16);
    cudaFree (n.cinfo);
    cudaFree (n.f32);
    cudaFree (n.rowlocal);
    cudaFree (n.rowglob);
    CK (e, "database allocation");
  }
  cudaFree (db->d.h16);
  cudaFree (db->d.cinfo);
  cudaFree (db->d.f32);
  cudaFree (db->d.rowlocal);
  cudaFree (db->d.rowglob);
  db->d = n;
  db->cap = cap;
  *shift = db->base;
  db->base = 0;
  db->end = live;
  return GR_OK;
}

/* device-side bound constants */
static void
bounds (int kp, int keybits, double *delta2, double *eps1, double *trunc)
{
  /* FP16 rounding of both unit vectors (2 x 2^-11 relative per product), tensor-core
   * FP32 accumulation (generously (kp + 16) 2^-22), FP16 subnormals (2^-18); x 1.25 */
  const double delta = 1.25 * (1.05 * ldexp (1.0, -10) + (kp + 16) * ldexp (1.0, -22) +
      ldexp (1.0, -18));
  *delta2 = 2.0 * delta;
  *eps1 = 16.0 * ldexp (1.0, -24) + 1e-12;
  *trunc = ldexp (1.0, keybits - 22);
}

/* The variants' bound (finalize_search), in key units (key = (|c|^2 - 2 q.c) / (2 t s),
 * a = -q / t and b = c / s, |a| = A <= 1, |b| <= B = M / s <= 1, I = M2 / (2 t s)):
 *  - FP16 rounding of a and b (round to nearest, |x| <= 1: |dx| <= 2^-11 |x| + 2^-25,
 *    the second term for subnormals): |sum a^ b^ - a.b| <= (2^-10 + 2^-22) A B
 *    + 2^-25 (1 + 2^-11) sqrt(k) (A + B) + k 2^-50 (Cauchy-Schwarz: sum |x_t| <=
 *    sqrt(k) |x|);
 *  - the start value |c|^2 / (2 t s): |c|^2 rounded to float (2^-24 relative), the
 *    power-of-2 division exact, one rounding from double: 2^-23 I + 2^-149;
 *  - the tensor cores' FP32 accumulation (exact FP16 products, each of the kp / 16
 *    steps aligning and truncating at most 17 addends to 24 bits): generously
 *    (kp + 16) 2^-22 times the largest partial sum, <= I + 1.01 A B + 2^-20;
 * then D~ = |q|^2 + 2 t s key: |q|^2 rounded to float (2^-24) and the double ops and
 * canonical-vs-real differences (1e-12 of D's scale |q|^2 + 2 t s (I + A B)).  Times
 * 1.25, as bounds ().  E = ts2 (A (ea B + eb) + eb B + ei I + e0) + eq |q|^2. */
static void
bounds_var (int kp, int k, MatchParams *p)
{
  const double acc = (kp + 16) * ldexp (1.0, -22);
  const double sub = ldexp (1.0, -25) * (1.0 + ldexp (1.0, -11)) * sqrt ((double) k);
  p->ea = 1.25 * (ldexp (1.0, -10) + ldexp (1.0, -22) + 1.01 * acc) + 1e-12;
  p->eb = 1.25 * sub;
  p->ei = 1.25 * (ldexp (1.0, -23) + acc) + 1e-12;
  p->e0 = 1.25 * (k * ldexp (1.0, -50) + ldexp (1.0, -149) + acc * ldexp (1.0, -20));
  p->eq = 1.25 * ldexp (1.0, -23) + 1e-12;
}

static int
keybits_for (int max_pn)
{
  int b = 6;
  while ((1 << b) < max_pn)
    b++;
  return b;
}

extern "C" GrMatcherCuda *
gr_matcher_cuda_new (int device, char *errbuf, size_t errlen)
{
  cudaDeviceProp prop;
  cudaError_t e = cudaSetDevice (device);
  if (e == cudaSuccess)
    e = cudaGetDeviceProperties (&prop, device);
  if (e != cudaSuccess) {
    gr_set_err (errbuf, errlen, "CUDA device %d: %s", device, cudaGetErrorString (e));
    cudaGetLastError ();
    return NULL;
  }
  if (prop.major < 8) {
    gr_set_err (errbuf, errlen, "CUDA device %d (%s) has compute capability %d.%d; the "
        "matcher needs 8.0 or newer", device, prop.name, prop.major, prop.minor);
    return NULL;
  }
  GrMatcherCuda *c = (GrMatcherCuda *) calloc (1, sizeof *c);
  if (!c) {
    gr_set_err (errbuf, errlen, "out of host memory");
    return NULL;
  }
  c->device = device;
  c->nsm = prop.multiProcessorCount;
  e = cudaStreamCreateWithFlags (&c->stream, cudaStreamNonBlocking);
  if (e == cudaSuccess)
    e = cudaStreamCreateWithFlags (&c->stream2, cudaStreamNonBlocking);
  if (e == cudaSuccess)
    e = cudaEventCreate (&c->ev0);
  if (e == cudaSuccess)
    e = cudaEventCreate (&c->ev1);
  if (e == cudaSuccess)
    e = cudaEventCreate (&c->evk1);
  if (e == cudaSuccess)
    e = cudaEventCreate (&c->evk2);
  if (e == cudaSuccess)
    e = cudaEventCreateWithFlags (&c->evfork, cudaEventDisableTiming);
  if (e == cudaSuccess)
    e = cudaEventCreateWithFlags (&c->evjoin, cudaEventDisableTiming);
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_list, 2ull * LIST_CAP * sizeof (unsigned long long));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_count, 2 * sizeof (unsigned));
  if (e == cudaSuccess)
    e = gr_cuda_malloc_host (&c->h_count, 2 * sizeof (unsigned));
  if (e == cudaSuccess)
    e = gr_cuda_malloc_host (&c->h_newimg, sizeof (ImgInfo));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_scount, sizeof (unsigned long long));
  if (e == cudaSuccess)
    e = gr_cuda_malloc_host (&c->h_scount, sizeof (unsigned long long));
  if (e == cudaSuccess)
    e = gr_cuda_malloc (&c->d_tscale, sizeof (float));
  if (e != cudaSuccess) {
    gr_set_err (errbuf, errlen, "CUDA matcher setup: %s", cudaGetErrorString (e));
    cudaGetLastError ();
    gr_matcher_cuda_free (c);
    return NULL;
  }
  return c;
}

extern "C" void
gr_matcher_cuda_free (GrMatcherCuda *c)
{
  if (!c)
    return;
  cudaSetDevice (c->device);
  if (c->stream)
    cudaStreamSynchronize (c->stream);
  if (c->stream2)
    cudaStreamSynchronize (c->stream2);
  db_free (&c->db);
  db_free (&c->bdb);
  cudaFree (c->d_stage);
  cudaFree (c->d_tab);
  cudaFree (c->d_qlist);
  cudaFree (c->d_out);
  cudaFree (c->d_rowcnt);
  cudaFree (c->d_sparse);
  /* the list mode's buffers */
  void *dev[] = { c->d_skey, c->d_skey2, c->d_sval2, c->d_spay, c->d_bits, c->d_wpre,
    c->d_rcnt, c->d_roff, c->d_scount, c->d_tscale, c->d_cinit, c->d_sparse2,
    c->d_roff2 };
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    cudaFree (dev[i]);
  void *host[] = { c->h_scount, c->h_sparse };
  for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
    if (host[i])
      cudaFreeHost (host[i]);
  if (c->h_rowcnt)
    cudaFreeHost (c->h_rowcnt);
  cudaFree (c->d_list);
  cudaFree (c->d_count);
  if (c->h_count)
    cudaFreeHost (c->h_count);
  if (c->h_newimg)
    cudaFreeHost (c->h_newimg);
  if (c->h_in)
    cudaFreeHost (c->h_in);
  if (c->h_bstage)
    cudaFreeHost (c->h_bstage);
  if (c->h_res)
    cudaFreeHost (c->h_res);
  cudaEvent_t evs[6] = { c->ev0, c->ev1, c->evk1, c->evk2, c->evfork, c->evjoin };
  for (int i = 0; i < 6; i++)
    if (evs[i])
      cudaEventDestroy (evs[i]);
  if (c->stream)
    cudaStreamDestroy (c->stream);
  if (c->stream2)
    cudaStreamDestroy (c->stream2);
  cudaGetLastError ();
  free (c->held);
  free (c->h_tab);
  free (c);
}

/* Sets the database's k, dropping its rows when k changes. */
static void
db_set_k (DevDb *db, int k)
{
  if (db->k == k)
    return;
  db_free (db);
  db->k = k;
  db->kp = kp_for (k);
}

static GrStatus
host_tab (GrMatcherCuda *c, size_t n, char *errbuf, size_t errlen)
{
  if (c->htab_cap >= n)
    return GR_OK;
  size_t cap = n < 64 ? 64 : 2 * n;
  ImgInfo *t = (ImgInfo *) realloc (c->h_tab, cap * sizeof (ImgInfo));
  if (!t) {
    gr_set_err (errbuf, errlen, "out of host memory");
    return GR_ERR_NOMEM;
  }
  c->h_tab = t;
  c->htab_cap = cap;
  return GR_OK;
}

/* a row kernel (prep_row) over table entries [first, first + count): launch (grid,
 * img_base) once per 65,535 images */
template <typename F>
static GrStatus
row_launches (int first, int count, int max_pn, char *errbuf, size_t errlen,
    const char *what, F launch)
{
  for (int done = 0; done < count && max_pn > 0; done += 65535) {
    const int part = count - done < 65535 ? count - done : 65535;
    launch (dim3 ((unsigned) ((max_pn + 7) / 8), (unsigned) part), first + done);
    CK (cudaGetLastError (), what);
  }
  return GR_OK;
}

/* prep of table entries [first, first + count) from the descriptors at stage (device
 * memory; M, M2 zeroed by the caller) */
static GrStatus
launch_prep (GrMatcherCuda *c, DevDb *db, const float *stage, int first, int count,
    int max_pn, int *qlist, char *errbuf, size_t errlen)
{
  return row_launches (first, count, max_pn, errbuf, errlen, "prep kernel launch",
      [&] (dim3 grid, int base) {
        prep_kernel<<<grid, 256, 0, c->stream>>> (stage, c->d_tab, base, db->k, db->kp,
            db->d, qlist);
      });
}

/* one match launch + its re-check; list = 0 or 1 selects the queue; variant: a
 * MatchVariant (other than VAR_KEY: list mode, p.tscale and p.cinit set) */
static GrStatus
launch_match (GrMatcherCuda *c, cudaStream_t stream, DevDb *db, MatchParams p, int list,
    int max_pn, unsigned debug, int variant, char *errbuf, size_t errlen)
{
  if (p.nq <= 0 || p.nimg <= 0)
    return GR_OK;
  const int keybits = keybits_for (max_pn);
  if (keybits > 22) {
    gr_set_err (errbuf, errlen, "an image of %d descriptors is too large for the CUDA "
        "matcher (at most 4,194,304)", max_pn);
    return GR_ERR_INVALID;
  }
  p.db = db->d;
  p.k = db->k;
  p.keymask = ~((1u << keybits) - 1u);
  bounds (db->kp, keybits, &p.delta2, &p.eps1, &p.trunc);
  bounds_var (db->kp, db->k, &p);
  p.plist = c->d_list + (size_t) list * LIST_CAP;
  p.pcount = c->d_count + list;
  p.pcap = (debug & GR_MATCHER_DEBUG_SMALL_LIST) ? 16u : LIST_CAP;
  p.force = (debug & GR_MATCHER_DEBUG_FORCE_EXACT) != 0;
  const long long gx = (p.nq + BM - 1) / BM;
  if (gx > 0x7fffffffll) {
    gr_set_err (errbuf, errlen, "too many queries");
    return GR_ERR_INVALID;
  }
  /* about 24 CTAs an SM in all: 4 to 6 are resident at once (launch bounds), so the
   * last wave's tail is a small part of the launch */
  const long long target = (long long) c->nsm * 24;
  long long slices = (target + gx - 1) / gx;
  if (slices < 1)
    slices = 1;
  if (slices > p.nimg)
    slices = p.nimg;
  if (slices > 65535)
    slices = 65535;
  p.ips = (int) ((p.nimg + slices - 1) / slices);
  slices = (p.nimg + p.ips - 1) / p.ips;
  dim3 grid ((unsigned) gx, (unsigned) slices);
  typedef void (*MatchFn) (const MatchParams);
  static const MatchFn fns[3][VAR_COUNT] = {
    { match_kernel<32, VAR_KEY>, match_kernel<32, VAR_TOP2>, match_kernel<32, VAR_MIN> },
    { match_kernel<64, VAR_KEY>, match_kernel<64, VAR_TOP2>, match_kernel<64, VAR_MIN> },
    { match_kernel<128, VAR_KEY>, match_kernel<128, VAR_TOP2>,
      match_kernel<128, VAR_MIN> },
  };
  fns[db->kp == 32 ? 0 : db->kp == 64 ? 1 : 2][variant]<<<grid, NT, 0, stream>>> (p);
  CK (cudaGetLastError (), "match kernel launch");
  recheck_kernel<<<c->nsm * 4, 256, 0, stream>>> (p);
  CK (cudaGetLastError (), "re-check kernel launch");
  return GR_OK;
}

static GrStatus
launch_sweep (GrMatcherCuda *c, DevDb *db, MatchParams p, char *errbuf, size_t errlen)
{
  p.db = db->d;
  p.k = db->k;
  sweep_kernel<<<c->nsm * 8, 256, 0, c->stream>>> (p);   /* after a full sync only */
  CK (cudaGetLastError (), "sweep kernel launch");
  return GR_OK;
}

/* The batch forms' first half: the image table, the upload and the prep of every
 * image into c->bdb (c->d_qlist: query -> padded row).  *rows_out: padded rows.
 * on_device: desc is already in device memory, and the prep reads it there (no copy
 * into c->d_stage: the prep reads each value once either way, and the batch's n k
 * floats are not held twice on the device). */
static GrStatus
batch_setup (GrMatcherCuda *c, const float *desc, bool on_device, int k,
    const int64_t *offsets, int m, long long *rows_out, int *max_pn_out, char *errbuf,
    size_t errlen)
{
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  const long long n = offsets[m];
  if (n > 0x7fffffffll) {
    gr_set_err (errbuf, errlen, "the CUDA matcher takes at most 2^31 - 1 descriptors");
    return GR_ERR_INVALID;
  }
  DevDb *db = &c->bdb;
  db_set_k (db, k);
  db->base = db->end = 0;
  GrStatus st = host_tab (c, (size_t) m, errbuf, errlen);
  if (st != GR_OK)
    return st;
  long long rows = 0;
  int max_pn = 0;
  for (int i = 0; i < m; i++) {
    const int ni = (int) (offsets[i + 1] - offsets[i]);
    const int pn = (ni + BN - 1) / BN * BN;
    c->h_tab[i].poff = (int) rows;
    c->h_tab[i].n = ni;
    c->h_tab[i].pn = pn;
    c->h_tab[i].gabs = (unsigned) offsets[i];
    c->h_tab[i].src = offsets[i];
    c->h_tab[i].M = c->h_tab[i].M2 = c->h_tab[i].s = 0.f;
    rows += pn;
    if (pn > max_pn)
      max_pn = pn;
  }
  if (rows > 0x7fffffffll) {
    gr_set_err (errbuf, errlen, "too many descriptors for the CUDA matcher");
    return GR_ERR_INVALID;
  }
  long long shift;
  st = db_reserve (db, rows, c->stream, &shift, errbuf, errlen);
  if (st != GR_OK)
    return st;
  db->end = rows;
  CK (gr_cuda_grow (&c->d_tab, &c->tab_cap, (size_t) m, 16), "cudaMalloc (image table)");
  CK (gr_cuda_grow (&c->d_qlist, &c->qlist_cap, (size_t) n, 16),
      "cudaMalloc (query list)");
  cudaStream_t s = c->stream;
  if (!on_device) {
    CK (gr_cuda_grow (&c->d_stage, &c->stage_cap, (size_t) n * k, 16),
        "cudaMalloc (staging)");
    /* staged: the parts are on their way already, ahead in the stream */
    if (!(desc == c->h_bstage && c->bstaged == (size_t) n * k))
      CK (cudaMemcpyAsync (c->d_stage, desc, (size_t) n * k * sizeof (float),
              cudaMemcpyHostToDevice, s), "descriptor upload");
  }
  CK (cudaMemcpyAsync (c->d_tab, c->h_tab, (size_t) m * sizeof (ImgInfo),
          cudaMemcpyHostToDevice, s), "image table upload");
  st = launch_prep (c, db, on_device ? desc : c->d_stage, 0, m, max_pn, c->d_qlist,
      errbuf, errlen);
  if (st != GR_OK)
    return st;
  *rows_out = rows;
  *max_pn_out = max_pn;
  return GR_OK;
}

/* A batch launch's parameters: queries qlist[0 .. nq) of the batch's n descriptors
 * against images imgs[0 .. nimg), each image's own queries skipped (self_skip), dense
 * output rows of ld entries at out (NULL in list mode) */
static MatchParams
batch_params (const int *qlist, int nq, const ImgInfo *imgs, int nimg, int *out,
    long long ld, double rr)
{
  MatchParams p;
  memset (&p, 0, sizeof p);
  p.qlist = qlist;
  p.nq = nq;
  p.imgs = imgs;
  p.nimg = nimg;
  p.out = out;
  p.ld = ld;
  p.self_skip = 1;
  p.rr = rr;
  return p;
}

/* The matrix rows of images [i0, i1) into c->d_out (row i - i0, n queries each), the
 * re-checks included: on return (synchronized) the slab is final.  *rechecked grows by
 * the queued pairs.  (The callers' events ev0 .. ev1 span an overflow sweep too.) */
static GrStatus
batch_slab (GrMatcherCuda *c, int i0, int i1, long long n, int max_pn, double rr,
    unsigned debug, long long *rechecked, char *errbuf, size_t errlen)
{
  DevDb *db = &c->bdb;
  cudaStream_t s = c->stream;
  CK (cudaMemsetAsync (c->d_count, 0, 2 * sizeof (unsigned), s), "cudaMemset");
  MatchParams p = batch_params (c->d_qlist, (int) n, c->d_tab + i0, i1 - i0, c->d_out, n,
      rr);
  GrStatus st = launch_match (c, s, db, p, 0, max_pn, debug, VAR_KEY, errbuf, errlen);
  if (st != GR_OK)
    return st;
  CK (cudaMemcpyAsync (c->h_count, c->d_count, sizeof (unsigned), cudaMemcpyDeviceToHost,
          s), "cudaMemcpy (count)");
  CK (cudaStreamSynchronize (s), "match kernels");
  const unsigned pcap = (debug & GR_MATCHER_DEBUG_SMALL_LIST) ? 16u : LIST_CAP;
  *rechecked += c->h_count[0];
  if (c->h_count[0] > pcap) {
    p.keymask = 0;
    st = launch_sweep (c, db, p, errbuf, errlen);
    if (st != GR_OK)
      return st;
    CK (cudaStreamSynchronize (s), "sweep kernel");
  }
  return GR_OK;
}

extern "C" float *
gr_matcher_cuda_stage_begin (GrMatcherCuda *c, size_t floats)
{
  c->bstaged = 0;
  /* the last call's parts may still be reading the buffer (a bad value ended it) */
  cudaError_t e = cudaSetDevice (c->device);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize (c->stream);
  if (e == cudaSuccess)
    e = grow_pinned (&c->h_bstage, &c->hbstage_cap, floats);
  if (e == cudaSuccess)
    e = gr_cuda_grow (&c->d_stage, &c->stage_cap, floats, 16);
  if (e != cudaSuccess) {
    cudaGetLastError ();
    return NULL;
  }
  return c->h_bstage;
}

extern "C" GrStatus
gr_matcher_cuda_stage_part (GrMatcherCuda *c, size_t first, size_t floats, char *errbuf,
    size_t errlen)
{
  CK (cudaMemcpyAsync (c->d_stage + first, c->h_bstage + first, floats * sizeof (float),
          cudaMemcpyHostToDevice, c->stream), "descriptor upload");
  c->bstaged = first + floats;
  return GR_OK;
}

/* the batch forms' stats: device time between ev0 and ev1 */
static GrStatus
batch_stats (GrMatcherCuda *c, long long rows, long long n, long long rechecked,
    GrMatchStats *stats, char *errbuf, size_t errlen)
{
  float ms = 0.f;
  CK (cudaEventElapsedTime (&ms, c->ev0, c->ev1), "cudaEventElapsedTime");
  stats->rechecked = rechecked;
  stats->candidates = rows * n;
  stats->kernel_ms = ms;
  return GR_OK;
}

extern "C" GrStatus
gr_matcher_cuda_match_all (GrMatcherCuda *c, const float *desc, int k,
    const int64_t *offsets, int m, double rr, unsigned debug, int32_t *out,
    GrMatchStats *stats, char *errbuf, size_t errlen)
{
  long long rows;
  int max_pn;
  GrStatus st = batch_setup (c, desc, false, k, offsets, m, &rows, &max_pn, errbuf,
      errlen);
  if (st != GR_OK)
    return st;
  const long long n = offsets[m];
  cudaStream_t s = c->stream;
  CK (gr_cuda_grow (&c->d_out, &c->out_cap, (size_t) m * n, 16), "cudaMalloc (output)");
  CK (cudaEventRecord (c->ev0, s), "cudaEventRecord");
  long long rechecked = 0;
  st = batch_slab (c, 0, m, n, max_pn, rr, debug, &rechecked, errbuf, errlen);
  if (st != GR_OK)
    return st;
  CK (cudaEventRecord (c->ev1, s), "cudaEventRecord");
  CK (cudaMemcpyAsync (out, c->d_out, (size_t) m * n * sizeof (int32_t),
          cudaMemcpyDeviceToHost, s), "cudaMemcpy (output)");
  CK (cudaStreamSynchronize (s), "output download");
  return batch_stats (c, rows, n, rechecked, stats, errbuf, errlen);
}

static_assert (GR_MATCHER_CUDA_RUN <= LIST_CAP, "a run's queued pairs fit the queue");

/* the pruned form's count of queued pairs: launch's counter into the slab's total */
__global__ void
runs_count_kernel (unsigned *count)
{
  count[1] += count[0];
  count[0] = 0;
}

/* batch_slab for the pruned form: the slab's matrix rows all -1, then one launch (and
 * its re-check) per run of images [i0, i1): image run.image against its queries only.
 * A run holds at most LIST_CAP queries (matcher_cuda.h), so its queue never overflows
 * and no sweep is needed.  runs: those of images [i0, i1). */
static GrStatus
runs_slab (GrMatcherCuda *c, const GrMatcherRun *runs, int64_t nruns, int i0, int i1,
    long long n, int max_pn, double rr, unsigned debug, long long *rechecked,
    char *errbuf, size_t errlen)
{
  DevDb *db = &c->bdb;
  cudaStream_t s = c->stream;
  CK (cudaMemsetAsync (c->d_out, 0xff, (size_t) (i1 - i0) * n * sizeof (int), s),
      "cudaMemset (slab)");
  CK (cudaMemsetAsync (c->d_count, 0, 2 * sizeof (unsigned), s), "cudaMemset");
  for (int64_t r = 0; r < nruns; r++) {
    MatchParams p = batch_params (c->d_qlist + runs[r].q0,
        (int) (runs[r].q1 - runs[r].q0), c->d_tab + runs[r].image, 1,
        c->d_out + (size_t) (runs[r].image - i0) * n, n, rr);
    GrStatus st = launch_match (c, s, db, p, 0, max_pn, debug, VAR_KEY, errbuf, errlen);
    if (st != GR_OK)
      return st;
    runs_count_kernel<<<1, 1, 0, s>>> (c->d_count);
    CK (cudaGetLastError (), "count kernel launch");
  }
  CK (cudaMemcpyAsync (c->h_count, c->d_count, 2 * sizeof (unsigned),
          cudaMemcpyDeviceToHost, s), "cudaMemcpy (count)");
  CK (cudaStreamSynchronize (s), "match kernels");
  *rechecked += c->h_count[1];
  return GR_OK;
}

/* The slab path of the sparse form: the matrix of a slab of images on the device,
 * compacted there, then a float64 scan of the image per kept entry.  The list mode
 * (below) falls back to it when the re-check queue overflows (its sweep reads the
 * matrix) or the list does not fit; GR_MATCHER_DEBUG_SMALL_SLAB selects it. */
static GrStatus
sparse_slabs (GrMatcherCuda *c, const float *desc, bool on_device, int k,
    const int64_t *offsets, int m, int row0, int row1, const GrMatcherRun *runs,
    int64_t nruns, double rr, unsigned debug,
    GrMatch **buf, int64_t *cap, int64_t *count, GrMatchStats *stats, char *errbuf,
    size_t errlen)
{
  *count = 0;
  if (row1 <= row0)
    return GR_OK;
  long long rows;
  int max_pn;
  GrStatus st = batch_setup (c, desc, on_device, k, offsets, m, &rows, &max_pn, errbuf,
      errlen);
  if (st != GR_OK)
    return st;
  const long long n = offsets[m];
  long long srows = SLAB_ENTRIES / n > 0 ? SLAB_ENTRIES / n : 1;
  if (debug & GR_MATCHER_DEBUG_SMALL_SLAB)
    srows = 3;
  if (srows > row1 - row0)
    srows = row1 - row0;
  cudaStream_t s = c->stream;
  CK (gr_cuda_grow (&c->d_out, &c->out_cap, (size_t) srows * n, 16),
      "cudaMalloc (slab)");
  CK (gr_cuda_grow (&c->d_rowcnt, &c->rowcnt_cap, (size_t) srows + 1, 16),
      "cudaMalloc (slab counts)");
  CK (grow_pinned (&c->h_rowcnt, &c->hrowcnt_cap, (size_t) srows + 1),
      "cudaMallocHost (slab counts)");
  MatchParams pd;               /* the distance kernel's view: the whole table */
  memset (&pd, 0, sizeof pd);
  pd.db = c->bdb.d;
  pd.k = c->bdb.k;
  pd.qlist = c->d_qlist;
  pd.imgs = c->d_tab;
  /* GEOREG_MATCHER_TIMING=1: where the wall time of this call goes, per phase, on
   * stderr (host clock between the synchronizations the loop makes anyway, and CUDA
   * events around the distance kernel): to find what to move off the critical path */
  const char *tenv = getenv ("GEOREG_MATCHER_TIMING");
  const bool timing = tenv && atoi (tenv) == 1;
  double t_setup = 0, t_match = 0, t_count = 0, t_host = 0, t_rest = 0, t_dist = 0;
  double t_prev = timing ? now_ms () : 0;
#define PHASE(acc) do { if (timing) { const double t_ = now_ms (); acc += t_ - t_prev; \
    t_prev = t_; } } while (0)
  CK (cudaEventRecord (c->ev0, s), "cudaEventRecord");
  long long rechecked = 0, total = 0;
  int slabs = 0;
  int64_t run0 = 0;             /* the pruned form: the first run of this slab */
  for (int i0 = row0; i0 < row1; i0 += (int) srows) {
    const int i1 = i0 + srows < row1 ? i0 + (int) srows : row1;
    const int nr = i1 - i0;
    slabs++;
    PHASE (t_setup);
    if (nruns >= 0) {
      int64_t run1 = run0;
      while (run1 < nruns && runs[run1].image < i1)
        run1++;
      st = runs_slab (c, runs + run0, run1 - run0, i0, i1, n, max_pn, rr, debug,
          &rechecked, errbuf, errlen);
      run0 = run1;
    } else {
      st = batch_slab (c, i0, i1, n, max_pn, rr, debug, &rechecked, errbuf, errlen);
    }
    if (st != GR_OK)
      return st;
    PHASE (t_match);
    sparse_count_kernel<<<nr, SPARSE_NT, 0, s>>> (c->d_out, n, c->d_rowcnt);
    CK (cudaGetLastError (), "sparse count kernel launch");
    CK (cudaMemcpyAsync (c->h_rowcnt, c->d_rowcnt, (size_t) nr * sizeof (long long),
            cudaMemcpyDeviceToHost, s), "cudaMemcpy (slab counts)");
    CK (cudaStreamSynchronize (s), "sparse count kernel");
    PHASE (t_count);
    long long kept = 0;
    for (int r = 0; r < nr; r++) {
      const long long cr = c->h_rowcnt[r];
      c->h_rowcnt[r] = kept;
      kept += cr;
    }
    if (kept == 0)
      continue;
    if (total + kept > *cap) {
      const long long ncap = total + kept + (total + kept) / 2 + 1024;
      GrMatch *nb = (GrMatch *) realloc (*buf, sizeof (GrMatch) * (size_t) ncap);
      if (!nb) {
        gr_set_err (errbuf, errlen, "out of host memory");
        return GR_ERR_NOMEM;
      }
      *buf = nb;
      *cap = ncap;
    }
    PHASE (t_host);
    CK (gr_cuda_grow (&c->d_sparse, &c->sparse_cap, (size_t) kept, 1024),
        "cudaMalloc (sparse entries)");
    CK (cudaMemcpyAsync (c->d_rowcnt, c->h_rowcnt, (size_t) nr * sizeof (long long),
            cudaMemcpyHostToDevice, s), "cudaMemcpy (slab offsets)");
    sparse_fill_kernel<<<nr, SPARSE_NT, 0, s>>> (c->d_out, n, i0, c->d_rowcnt,
        c->d_sparse);
    CK (cudaGetLastError (), "sparse fill kernel launch");
    /* evk1 / evk2 belong to the incremental form, idle here */
    if (timing)
      CK (cudaEventRecord (c->evk1, s), "cudaEventRecord");
    sparse_dist_kernel<<<c->nsm * 8, 256, 0, s>>> (pd, c->d_sparse, kept);
    CK (cudaGetLastError (), "sparse distance kernel launch");
    if (timing)
      CK (cudaEventRecord (c->evk2, s), "cudaEventRecord");
    CK (cudaMemcpyAsync (*buf + total, c->d_sparse, (size_t) kept * sizeof (GrMatch),
            cudaMemcpyDeviceToHost, s), "cudaMemcpy (sparse entries)");
    CK (cudaStreamSynchronize (s), "sparse entries download");
    if (timing) {
      float dms = 0.f;
      CK (cudaEventElapsedTime (&dms, c->evk1, c->evk2), "cudaEventElapsedTime");
      t_dist += dms;
    }
    PHASE (t_rest);
    total += kept;
  }
  CK (cudaEventRecord (c->ev1, s), "cudaEventRecord");
  CK (cudaStreamSynchronize (s), "sparse form");
  PHASE (t_setup);
#undef PHASE
  if (timing)
    fprintf (stderr, "matcher sparse: m %d n %lld k %d, %d slab(s) of %lld images, %lld "
        "entries (%.1f MB), %lld re-checked; ms: match kernels + re-check %.2f, count + "
        "sizes down %.2f, host prefix / realloc %.2f, fill + distances + entries down "
        "%.2f (distance kernel %.2f), setup / tail %.2f\n", m, n, k, slabs, srows,
        total, total * (double) sizeof (GrMatch) / 1e6, rechecked, t_match, t_count,
        t_host, t_rest, t_dist, t_setup);
  *count = total;
  return batch_stats (c, rows, n, rechecked, stats, errbuf, errlen);
}

/* the slab path, its entries in *buf (which it may move: *view follows) */
static GrStatus
slabs_view (GrMatcherCuda *c, const float *desc, bool on_device, int k,
    const int64_t *offsets, int m, int row0, int row1, const GrMatcherRun *runs,
    int64_t nruns, double rr, unsigned debug, GrMatch **buf, int64_t *cap,
    const GrMatch **view, int64_t *count, GrMatchStats *stats, char *errbuf,
    size_t errlen)
{
  const GrStatus st = sparse_slabs (c, desc, on_device, k, offsets, m, row0, row1, runs,
      nruns, rr, debug, buf, cap, count, stats, errbuf, errlen);
  *view = *buf;
  return st;
}

/* a device list of at least `need` entries (keys, payloads, ordered keys and slots);
 * cudaErrorMemoryAllocation when it does not fit */
static cudaError_t
slist_reserve (GrMatcherCuda *c, size_t need)
{
  cudaError_t e = gr_cuda_grow (&c->d_skey, &c->skey_cap, need, 4096);
  if (e == cudaSuccess)
    e = gr_cuda_grow (&c->d_skey2, &c->skey2_cap, need, 4096);
  if (e == cudaSuccess)
    e = gr_cuda_grow (&c->d_sval2, &c->sval2_cap, need, 4096);
  if (e == cudaSuccess)
    e = gr_cuda_grow (&c->d_spay, &c->spay_cap, need, 4096);
  return e;
}

/* GEOREG_MATCHER_VARIANT: the list mode's match kernel (design comment: "min", the
 * default since it was measured fastest on both goal cases on an H200, (b) 105 ms of
 * kernel against key's 184; "top2"; "key", the first kernel), read at every call so
 * that a test or a benchmark can switch it between calls.  An unknown name is reported
 * once and runs the default. */
static const char *const variant_names[VAR_COUNT] = { "key", "top2", "min" };

static int
variant_from_env (void)
{
  const char *v = getenv ("GEOREG_MATCHER_VARIANT");
  if (!v || !*v)
    return VAR_MIN;
  for (int i = 0; i < VAR_COUNT; i++)
    if (!strcmp (v, variant_names[i]))
      return i;
  static bool told;
  if (!told)
    fprintf (stderr, "georeg matcher: GEOREG_MATCHER_VARIANT=%s unknown (key, top2, "
        "min): running min\n", v);
  told = true;
  return VAR_MIN;
}

/* The variants' database on top of batch_setup's: the scales (scale_kernel), the
 * FP16 rows c / s_i and the start values (rescale_kernel); p gets the pointers. */
static GrStatus
variant_setup (GrMatcherCuda *c, int m, long long rows, int max_pn, MatchParams *p,
    char *errbuf, size_t errlen)
{
  DevDb *db = &c->bdb;
  CK (gr_cuda_grow (&c->d_cinit, &c->cinit_cap, (size_t) rows * 2, 4096),
      "cudaMalloc (start values)");
  scale_kernel<<<1, SPARSE_NT, 0, c->stream>>> (c->d_tab, m, c->d_tscale);
  CK (cudaGetLastError (), "scale kernel launch");
  const GrStatus st = row_launches (0, m, max_pn, errbuf, errlen, "rescale kernel launch",
      [&] (dim3 grid, int base) {
        rescale_kernel<<<grid, 256, 0, c->stream>>> (c->d_tab, base, db->k, db->kp, db->d,
            c->d_tscale, c->d_cinit);
      });
  if (st != GR_OK)
    return st;
  p->tscale = c->d_tscale;
  p->cinit = c->d_cinit;
  return GR_OK;
}

/* The sparse form in list mode: one match launch over the images [row0, row1) appends
 * the kept pairs to a device list (no m x n matrix, no slabs, no per-slab host round
 * trip); a bitmap of the kept pairs and its prefix counts give the matrix's row-major
 * order; the finishing kernel computes d1, d2 (a block per image, FP32 screening, float64 only
 * where the screening cannot decide); one download into pinned memory.  A list that
 * overflows is grown and the launch repeated (the capacity is kept for the next call);
 * a re-check queue that overflows falls back to the slab path. */
extern "C" GrStatus
gr_matcher_cuda_match_all_sparse (GrMatcherCuda *c, const float *desc, bool on_device,
    int k, const int64_t *offsets, int m, int row0, int row1, const GrMatcherRun *runs,
    int64_t nruns, double rr, unsigned debug, GrMatch **buf, int64_t *cap,
    const GrMatch **view, int64_t *count, GrMatchStats *stats, char *errbuf,
    size_t errlen)
{
  *count = 0;
  *view = *buf;
  if (row1 <= row0)
    return GR_OK;
  /* a pair list: the slab path, one launch a run (matcher_cuda.h) */
  if (nruns >= 0)
    return slabs_view (c, desc, on_device, k, offsets, m, row0, row1, runs, nruns, rr,
        debug, buf, cap, view, count, stats, errbuf, errlen);
  if (debug & GR_MATCHER_DEBUG_SMALL_SLAB)
    return slabs_view (c, desc, on_device, k, offsets, m, row0, row1, NULL, -1, rr, debug,
        buf, cap, view, count, stats, errbuf, errlen);
  long long rows;
  int max_pn;
  GrStatus st = batch_setup (c, desc, on_device, k, offsets, m, &rows, &max_pn, errbuf,
      errlen);
  if (st != GR_OK)
    return st;
  const long long n = offsets[m];
  DevDb *db = &c->bdb;
  cudaStream_t s = c->stream;
  const unsigned pcap = (debug & GR_MATCHER_DEBUG_SMALL_LIST) ? 16u : LIST_CAP;
  /* first guess: 16 kept pairs a query (a survey's overlap and the ratio test's
   * chance passes: about 10 a query for (a) of docs/benchmarks.md), at least what the
   * last call needed; 36 bytes an entry; GR_MATCHER_DEBUG_SMALL_SPARSE: 4, so that
   * the regrowth runs */
  const unsigned long long list_max = 0x7fffffffull;  /* payload slots are 32-bit */
  unsigned long long want = (unsigned long long) (16 * n < (1ll << 26) ? 16 * n :
      (1ll << 26));
  if (want < c->slist_want)
    want = c->slist_want;
  if (want < 4096)
    want = 4096;
  if (debug & GR_MATCHER_DEBUG_SMALL_SPARSE)
    want = 4;
  MatchParams p = batch_params (c->d_qlist, (int) n, c->d_tab + row0, row1 - row0, NULL,
      n, rr);
  p.sparse = 1;
  p.img0 = row0;
  p.nall = n;
  const int variant = variant_from_env ();
  if (variant != VAR_KEY &&
      (st = variant_setup (c, m, rows, max_pn, &p, errbuf, errlen)) != GR_OK)
    return st;
  const char *tenv = getenv ("GEOREG_MATCHER_TIMING");
  const bool timing = tenv && atoi (tenv) == 1;
  const double tw0 = now_ms ();
  long long rechecked = 0;
  unsigned long long kept = 0;
  int launches = 0;
  for (;;) {
    if (want > list_max ||
        slist_reserve (c, (size_t) (want > 4096 ? want : 4096)) != cudaSuccess) {
      cudaGetLastError ();
      return slabs_view (c, desc, on_device, k, offsets, m, row0, row1, NULL, -1, rr,
          debug, buf, cap, view, count, stats, errbuf, errlen);
    }
    p.skey = c->d_skey;
    p.spay = c->d_spay;
    p.scount = c->d_scount;
    p.scap = want;
    CK (cudaMemsetAsync (c->d_count, 0, 2 * sizeof (unsigned), s), "cudaMemset");
    CK (cudaMemsetAsync (c->d_scount, 0, sizeof (unsigned long long), s), "cudaMemset");
    CK (cudaEventRecord (c->ev0, s), "cudaEventRecord");
    launches++;
    st = launch_match (c, s, db, p, 0, max_pn, debug, variant, errbuf, errlen);
    if (st != GR_OK)
      return st;
    CK (cudaEventRecord (c->evk1, s), "cudaEventRecord");
    CK (cudaMemcpyAsync (c->h_count, c->d_count, sizeof (unsigned),
            cudaMemcpyDeviceToHost, s), "cudaMemcpy (count)");
    CK (cudaMemcpyAsync (c->h_scount, c->d_scount, sizeof (unsigned long long),
            cudaMemcpyDeviceToHost, s), "cudaMemcpy (list count)");
    CK (cudaStreamSynchronize (s), "match kernels");
    if (c->h_count[0] > pcap)   /* the sweep needs the matrix */
      return slabs_view (c, desc, on_device, k, offsets, m, row0, row1, NULL, -1, rr,
          debug, buf, cap, view, count, stats, errbuf, errlen);
    kept = *c->h_scount;
    if (kept <= want)
      break;
    want = kept + kept / 4 + 1024;
  }
  /* the variants queue nothing: their list entries are what the finishing kernel
   * settles exactly (all of them) */
  rechecked = variant == VAR_KEY ? c->h_count[0] : (long long) kept;
  if (!(debug & GR_MATCHER_DEBUG_SMALL_SPARSE) && kept > c->slist_want)
    c->slist_want = kept + kept / 8;
  double t_after_match = now_ms ();
  if (kept > 0) {
    /* the order: bitmap of the kept pairs, prefix counts, scatter (see
     * sparse_mark_kernel) */
    const int nr = row1 - row0;
    const long long W = (n + 31) / 32;
    const size_t words = (size_t) nr * (size_t) W;
    cudaError_t e = gr_cuda_grow (&c->d_bits, &c->bits_cap, words, 4096);
    if (e == cudaSuccess)
      e = gr_cuda_grow (&c->d_wpre, &c->wpre_cap, words, 4096);
    if (e != cudaSuccess) {
      cudaGetLastError ();
      return slabs_view (c, desc, on_device, k, offsets, m, row0, row1, NULL, -1, rr,
          debug, buf, cap, view, count, stats, errbuf, errlen);
    }
    CK (gr_cuda_grow (&c->d_rcnt, &c->rcnt_cap, (size_t) nr + 1, 1024),
        "cudaMalloc (row counts)");
    CK (gr_cuda_grow (&c->d_roff, &c->roff_cap, (size_t) nr + 1, 1024),
        "cudaMalloc (row offsets)");
    CK (cudaMemsetAsync (c->d_bits, 0, words * sizeof (unsigned), s), "cudaMemset");
    const unsigned eg = (unsigned) ((kept + SPARSE_NT - 1) / SPARSE_NT < 65536 ?
        (kept + SPARSE_NT - 1) / SPARSE_NT : 65536);
    sparse_mark_kernel<<<eg, SPARSE_NT, 0, s>>> (c->d_skey, (long long) kept, n, row0, W,
        c->d_bits);
    CK (cudaGetLastError (), "sparse mark kernel launch");
    sparse_wscan_kernel<<<nr, SPARSE_NT, 0, s>>> (c->d_bits, W, c->d_wpre, c->d_rcnt);
    CK (cudaGetLastError (), "sparse scan kernel launch");
    sparse_rscan_kernel<<<1, SPARSE_NT, 0, s>>> (c->d_rcnt, nr, c->d_roff);
    CK (cudaGetLastError (), "sparse row scan kernel launch");
    sparse_scatter_kernel<<<eg, SPARSE_NT, 0, s>>> (c->d_skey, (long long) kept, n, row0,
        W, c->d_bits, c->d_wpre, c->d_roff, c->d_skey2, c->d_sval2);
    CK (cudaGetLastError (), "sparse scatter kernel launch");
    CK (cudaEventRecord (c->evk2, s), "cudaEventRecord");
    CK (gr_cuda_grow (&c->d_sparse, &c->sparse_cap, (size_t) kept, 1024),
        "cudaMalloc (sparse entries)");
    const unsigned grid = (unsigned) (row1 - row0);
    auto finish = db->kp == 32 ? sparse_finish_kernel<32> : db->kp == 64 ?
        sparse_finish_kernel<64> : sparse_finish_kernel<128>;
    finish<<<grid, FIN_NT, 0, s>>> (db->d, db->k, c->d_tab, c->d_qlist, row0, n,
        c->d_skey2, c->d_sval2, c->d_spay, c->d_roff, rr, c->d_sparse, c->d_rcnt);
    CK (cudaGetLastError (), "sparse finishing kernel launch");
  } else {
    CK (cudaEventRecord (c->evk2, s), "cudaEventRecord");
  }
  const GrMatch *d_final = c->d_sparse;
  unsigned long long final_count = kept;
  if (variant != VAR_KEY && kept > 0) {
    /* the entries the finishing kernel dropped leave the list: the kept counts'
     * prefix, the compaction, and the final count (one more wait, for the count, so
     * that only the kept entries cross to the host) */
    const int nr = row1 - row0;
    CK (gr_cuda_grow (&c->d_roff2, &c->roff2_cap, (size_t) nr + 1, 1024),
        "cudaMalloc (row offsets)");
    CK (gr_cuda_grow (&c->d_sparse2, &c->sparse2_cap, (size_t) kept, 1024),
        "cudaMalloc (sparse entries)");
    sparse_rscan_kernel<<<1, SPARSE_NT, 0, s>>> (c->d_rcnt, nr, c->d_roff2);
    CK (cudaGetLastError (), "sparse row scan kernel launch");
    sparse_compact_kernel<<<nr, SPARSE_NT, 0, s>>> (c->d_sparse, c->d_roff, c->d_roff2,
        c->d_sparse2);
    CK (cudaGetLastError (), "sparse compaction kernel launch");
    CK (cudaEventRecord (c->ev1, s), "cudaEventRecord");
    CK (cudaMemcpyAsync (c->h_scount, c->d_roff2 + nr, sizeof (long long),
            cudaMemcpyDeviceToHost, s), "cudaMemcpy (list count)");
    CK (cudaStreamSynchronize (s), "sparse finishing kernel");
    final_count = *c->h_scount;
    d_final = c->d_sparse2;
  } else {
    CK (cudaEventRecord (c->ev1, s), "cudaEventRecord");
  }
  CK (grow_pinned (&c->h_sparse, &c->hsparse_cap, (size_t) final_count + 1),
      "cudaHostAlloc (sparse entries)");
  if (final_count > 0)
    CK (cudaMemcpyAsync (c->h_sparse, d_final, (size_t) final_count * sizeof (GrMatch),
            cudaMemcpyDeviceToHost, s), "cudaMemcpy (sparse entries)");
  CK (cudaStreamSynchronize (s), "sparse entries download");
  if (timing) {
    float ms_match = 0.f, ms_sort = 0.f, ms_fin = 0.f;
    CK (cudaEventElapsedTime (&ms_match, c->ev0, c->evk1), "cudaEventElapsedTime");
    CK (cudaEventElapsedTime (&ms_sort, c->evk1, c->evk2), "cudaEventElapsedTime");
    CK (cudaEventElapsedTime (&ms_fin, c->evk2, c->ev1), "cudaEventElapsedTime");
    const double tw1 = now_ms ();
    /* (tools/gpu.sh picks these lines by their start: keep it) */
    fprintf (stderr, "matcher sparse (list): m %d n %lld k %d, %lld entries (%.1f MB), "
        "%lld re-checked, %d launch(es); ms: match kernels + re-check %.2f, order %.2f, "
        "finish (d1, d2; variants: and compaction) %.2f; host: up to the count %.2f, "
        "then %.2f (order, finish, download %.1f MB); variant %s (%lld in the list)\n",
        m, n, k, (long long) final_count, final_count * (double) sizeof (GrMatch) / 1e6,
        rechecked, launches, ms_match, ms_sort, ms_fin, t_after_match - tw0,
        tw1 - t_after_match, final_count * (double) sizeof (GrMatch) / 1e6,
        variant_names[variant], (long long) kept);
  }
  *view = c->h_sparse;
  *count = (int64_t) final_count;
  return batch_stats (c, rows, n, rechecked, stats, errbuf, errlen);
}

extern "C" GrStatus
gr_matcher_cuda_add (GrMatcherCuda *c, const float *desc, int count, int k, double rr,
    unsigned debug, int32_t *fwd, int32_t *bwd, int32_t **vfwd, int32_t **vbwd,
    GrMatchStats *stats, char *errbuf, size_t errlen)
{
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  DevDb *db = &c->db;
  if (c->nheld == 0) {
    db_set_k (db, k);
    db->base = db->end = 0;
  }
  if (c->nheld == c->held_cap) {
    int cap = c->held_cap ? 2 * c->held_cap : 64;
    HostImg *h = (HostImg *) realloc (c->held, cap * sizeof (HostImg));
    if (!h) {
      gr_set_err (errbuf, errlen, "out of host memory");
      return GR_ERR_NOMEM;
    }
    c->held = h;
    c->held_cap = cap;
  }
  const bool want_f = fwd || vfwd, want_b = bwd || vbwd;
  const int held = c->nheld;
  const int pn = (count + BN - 1) / BN * BN;
  long long shift;
  GrStatus st = db_reserve (db, pn, c->stream, &shift, errbuf, errlen);
  if (st != GR_OK)
    return st;
  for (int i = 0; i < held; i++)
    c->held[i].poff -= (int) shift;
  if (db->end + pn > 0x7fffffffll) {
    gr_set_err (errbuf, errlen, "too many descriptors for the CUDA matcher");
    return GR_ERR_INVALID;
  }
  st = host_tab (c, (size_t) held + 1, errbuf, errlen);
  if (st != GR_OK)
    return st;
  int max_pn_old = 0;
  long long old_desc = 0;
  for (int i = 0; i < held; i++) {
    const HostImg *h = &c->held[i];
    c->h_tab[i] = ImgInfo { h->poff, h->n, h->pn, h->gabs, 0, h->M, h->M2 };
    if (h->pn > max_pn_old)
      max_pn_old = h->pn;
    old_desc += h->n;
  }
  const int poff_new = (int) db->end;
  c->h_tab[held] = ImgInfo { poff_new, count, pn, c->next_gabs, 0, 0.f, 0.f };
  CK (gr_cuda_grow (&c->d_stage, &c->stage_cap, (size_t) count * k + 1, 16),
      "cudaMalloc (staging)");
  CK (gr_cuda_grow (&c->d_tab, &c->tab_cap, (size_t) held + 1, 16),
      "cudaMalloc (image table)");
  const size_t nfwd = (size_t) held * count, nbwd = (size_t) old_desc;
  CK (gr_cuda_grow (&c->d_out, &c->out_cap, nfwd + nbwd + 1, 16), "cudaMalloc (output)");
  /* pinned staging: the upload is a DMA from it (the previous call's copies are
   * complete: every call ends with a stream synchronization) */
  CK (grow_pinned (&c->h_in, &c->hin_cap, (size_t) count * k + 1),
      "cudaHostAlloc (descriptor staging)");
  if (vfwd || vbwd)
    CK (grow_pinned (&c->h_res, &c->hres_cap, nfwd + nbwd + 1),
        "cudaHostAlloc (result staging)");
  cudaStream_t s = c->stream;
  if (count > 0) {
    memcpy (c->h_in, desc, (size_t) count * k * sizeof (float));
    CK (cudaMemcpyAsync (c->d_stage, c->h_in, (size_t) count * k * sizeof (float),
            cudaMemcpyHostToDevice, s), "descriptor upload");
  }
  CK (cudaMemcpyAsync (c->d_tab, c->h_tab, (size_t) (held + 1) * sizeof (ImgInfo),
          cudaMemcpyHostToDevice, s), "image table upload");
  st = launch_prep (c, db, c->d_stage, held, 1, pn, NULL, errbuf, errlen);
  if (st != GR_OK)
    return st;
  db->end += pn;
  CK (cudaMemsetAsync (c->d_count, 0, 2 * sizeof (unsigned), s), "cudaMemset");
  CK (cudaEventRecord (c->ev0, s), "cudaEventRecord");

  /* the new image against every held image: rows of the new image, images 0..held-1 */
  MatchParams p1;
  memset (&p1, 0, sizeof p1);
  p1.qr0 = poff_new;
  p1.nq = want_f && count > 0 ? pn : 0;
  p1.imgs = c->d_tab;
  p1.nimg = held;
  p1.out = c->d_out;
  p1.ld = count;
  p1.qbase = c->next_gabs;
  p1.rr = rr;
  /* every held descriptor against the new image */
  MatchParams p2;
  memset (&p2, 0, sizeof p2);
  p2.qr0 = db->base;
  p2.nq = want_b && old_desc > 0 ? (int) (poff_new - db->base) : 0;
  p2.imgs = c->d_tab + held;
  p2.nimg = 1;
  p2.out = c->d_out + nfwd;
  p2.ld = 0;
  p2.qbase = held > 0 ? c->held[0].gabs : 0;
  p2.rr = rr;

  /* The two directions are independent (disjoint outputs, their own re-check queues):
   * by default they run concurrently, the backward one on stream2, so that each
   * launch's tail overlaps the other's.  A re-check queue cannot overflow when a
   * launch has at most pcap (query, image) pairs (always so in streaming use): then
   * the results are downloaded right behind each direction's kernels, with no host
   * synchronization in between; otherwise every stream is synchronized, the counts
   * read and the sweep run first (the overflow path, as before). */
  const unsigned pcap = (debug & GR_MATCHER_DEBUG_SMALL_LIST) ? 16u : LIST_CAP;
  const bool may_overflow = (long long) p1.nq * p1.nimg > (long long) pcap ||
      (long long) p2.nq * p2.nimg > (long long) pcap;
  const bool two = !(debug & GR_MATCHER_DEBUG_ONE_STREAM);
  cudaStream_t s2 = two ? c->stream2 : s;
  if (two) {
    CK (cudaEventRecord (c->evfork, s), "cudaEventRecord");
    CK (cudaStreamWaitEvent (s2, c->evfork, 0), "cudaStreamWaitEvent");
  }
  st = launch_match (c, s, db, p1, 0, max_pn_old, debug, VAR_KEY, errbuf, errlen);
  if (st != GR_OK)
    return st;
  CK (cudaEventRecord (c->evk1, s), "cudaEventRecord");
  st = launch_match (c, s2, db, p2, 1, pn > 0 ? pn : BN, debug, VAR_KEY,
      errbuf, errlen);
  if (st != GR_OK)
    return st;
  CK (cudaEventRecord (c->evk2, s2), "cudaEventRecord");

  int32_t *dst_f = vfwd ? c->h_res : fwd;
  int32_t *dst_b = vbwd ? c->h_res + nfwd : bwd;
  float sweep_ms = 0.f;
  if (!may_overflow) {
    /* (copies are issued after both launches: a copy into pageable memory blocks the
     * host until it is done) */
    if (dst_f && nfwd > 0)
      CK (cudaMemcpyAsync (dst_f, c->d_out, nfwd * sizeof (int32_t),
              cudaMemcpyDeviceToHost, s), "cudaMemcpy (forward matches)");
    if (dst_b && nbwd > 0)
      CK (cudaMemcpyAsync (dst_b, c->d_out + nfwd, nbwd * sizeof (int32_t),
              cudaMemcpyDeviceToHost, s2), "cudaMemcpy (backward matches)");
  }
  if (two) {
    CK (cudaEventRecord (c->evjoin, s2), "cudaEventRecord");
    CK (cudaStreamWaitEvent (s, c->evjoin, 0), "cudaStreamWaitEvent");
  }
  CK (cudaMemcpyAsync (c->h_count, c->d_count, 2 * sizeof (unsigned),
          cudaMemcpyDeviceToHost, s), "cudaMemcpy (count)");
  CK (cudaMemcpyAsync (c->h_newimg, c->d_tab + held, sizeof (ImgInfo),
          cudaMemcpyDeviceToHost, s), "cudaMemcpy (image)");
  CK (cudaStreamSynchronize (s), "match kernels");
  if (may_overflow) {
    if (c->h_count[0] > pcap || c->h_count[1] > pcap) {
      const double t0 = now_ms ();
      if (c->h_count[0] > pcap && p1.nq > 0)
        if ((st = launch_sweep (c, db, p1, errbuf, errlen)) != GR_OK)
          return st;
      if (c->h_count[1] > pcap && p2.nq > 0)
        if ((st = launch_sweep (c, db, p2, errbuf, errlen)) != GR_OK)
          return st;
      CK (cudaStreamSynchronize (s), "sweep kernel");
      sweep_ms = (float) (now_ms () - t0);
    }
    if (dst_f && nfwd > 0)
      CK (cudaMemcpyAsync (dst_f, c->d_out, nfwd * sizeof (int32_t),
              cudaMemcpyDeviceToHost, s), "cudaMemcpy (forward matches)");
    if (dst_b && nbwd > 0)
      CK (cudaMemcpyAsync (dst_b, c->d_out + nfwd, nbwd * sizeof (int32_t),
              cudaMemcpyDeviceToHost, s), "cudaMemcpy (backward matches)");
    CK (cudaStreamSynchronize (s), "output download");
  }
  float ms1 = 0.f, ms2 = 0.f;
  CK (cudaEventElapsedTime (&ms1, c->ev0, c->evk1), "cudaEventElapsedTime");
  CK (cudaEventElapsedTime (&ms2, c->ev0, c->evk2), "cudaEventElapsedTime");
  if (vfwd)
    *vfwd = c->h_res;
  if (vbwd)
    *vbwd = c->h_res + nfwd;

  c->held[held] = HostImg { poff_new, count, pn, c->next_gabs, c->h_newimg->M,
    c->h_newimg->M2 };
  c->nheld++;
  c->next_gabs += (unsigned) count;
  stats->rechecked = (int64_t) c->h_count[0] + c->h_count[1];
  stats->candidates = (int64_t) (p1.nq > 0 ? pn : 0) * (poff_new - db->base) +
      (int64_t) (p2.nq) * pn;
  stats->kernel_ms = (ms1 > ms2 ? ms1 : ms2) + sweep_ms;
  return GR_OK;
}

extern "C" void
gr_matcher_cuda_drop_oldest (GrMatcherCuda *c, int count)
{
  if (count <= 0)
    return;
  if (count >= c->nheld) {
    gr_matcher_cuda_reset (c);
    return;
  }
  memmove (c->held, c->held + count, (c->nheld - count) * sizeof (HostImg));
  c->nheld -= count;
  c->db.base = c->held[0].poff;
}

extern "C" void
gr_matcher_cuda_reset (GrMatcherCuda *c)
{
  c->nheld = 0;
  c->db.base = c->db.end = 0;
}
