/* Per-image ratio-test matching of float descriptors (the featurematch core).
 *
 * n descriptors of length k come from m images, image i holding descriptors
 * offsets[i] .. offsets[i+1]-1.  For every descriptor j and every image i the matcher
 * finds the nearest and the second-nearest descriptor of image i by L2 distance and
 * keeps the nearest when d1 / d2 < ratio (Lowe's test), else -1: an m x n int32
 * correspondence matrix, row i = image i:
 *
 *   out[i * n + j] = index of j's nearest neighbour WITHIN image i (0 .. n_i - 1), or -1
 *
 * Documented cases (docs/featurematch.md):
 *  - j's own image: -1 (a descriptor is never matched inside its own image);
 *  - an image with fewer than 2 descriptors: -1 (no second neighbour, no ratio test);
 *  - d2 = 0 (two candidates at distance 0): -1, since 0 / 0 is not < ratio.
 *
 * Exactness.  The result is that of an exact search: distances are ranked by the
 * canonical squared distance D(q, c) = sum_t (q_t - c_t)^2 evaluated in float64
 * (difference of the float32 values in double, then fma(d, d, acc) in the order
 * t = 0 .. k-1), ties broken by the lower index, and a neighbour is kept when
 * D1 < ratio^2 * D2 (ratio^2 in double).  Both backends first rank every candidate
 * with a fast approximate distance (FP32 SIMD on the CPU, FP16 tensor cores on CUDA)
 * under a proven error bound; every (descriptor, image) pair whose winner or ratio
 * test the bound cannot settle is re-evaluated with the canonical distances.  So the
 * CPU and CUDA outputs are identical, and they equal a float64 brute-force search
 * except where two float64 distances differ by less than about 1e-13 relative
 * (near-ties: docs/featurematch.md).
 *
 * Memory: O(n k + m n); never an n x n distance matrix.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_MATCHER_H
#define GR_MATCHER_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_MATCHER_MAX_K 512          /* descriptor length, CPU backend */
#define GR_MATCHER_MAX_K_CUDA 128     /* descriptor length, CUDA backend */
#define GR_MATCHER_MAX_ABS 1e15f      /* |descriptor value| limit (finite, no overflow) */

typedef struct GrMatcher GrMatcher;

/* What a call did. */
typedef struct {
  int64_t pairs;          /* (descriptor, image) pairs decided */
  int64_t rechecked;      /* pairs settled by the exact re-check */
  int64_t candidates;     /* approximate distances evaluated (padding included) */
  double elapsed_ms;      /* wall time of the call */
  double kernel_ms;       /* CUDA: device time of the matching kernels (events);
                             CPU: the matching time */
} GrMatchStats;

/* backend AUTO picks CUDA when gr_cuda_device_count() > 0, else CPU.  CUDA asked for
 * and not available: NULL and *status = GR_ERR_NO_CUDA.  cuda_device -1 = device 0. */
GrMatcher *gr_matcher_new (GrBackend backend, int cuda_device, GrStatus *status,
    char *errbuf, size_t errlen);
void gr_matcher_free (GrMatcher *mt);

/* The backend actually used (never AUTO). */
GrBackend gr_matcher_backend (const GrMatcher *mt);

/* CPU threads (0 = OpenMP's default). */
void gr_matcher_set_threads (GrMatcher *mt, int threads);

/* ---- Batch form (the seed's interface).
 * desc: n x k floats, row-major (n = offsets[m]); offsets: m + 1 nondecreasing values,
 * offsets[0] = 0 (empty images allowed).  ratio > 0.  out: m x n int32 (every entry is
 * written).  Values must be finite with |v| <= GR_MATCHER_MAX_ABS.  The held images
 * of the incremental form are not touched.  stats may be NULL. */
GrStatus gr_matcher_match_all (GrMatcher *mt, const float *desc, int k,
    const int64_t *offsets, int m, float ratio, int32_t *out, GrMatchStats *stats,
    char *errbuf, size_t errlen);

/* ---- Sparse batch form: what a stitcher consumes.  The kept entries of
 * gr_matcher_match_all's matrix (the entries >= 0: the very same ones, on both
 * backends), without the m x n int32 matrix ever existing in host or device memory.
 * CPU: the images are matched in slabs of 2^24 (image, query) entries (64 MB), each
 * compacted in parallel.  CUDA: one launch appends the kept pairs to a device list,
 * ordered there by a bitmap of the pairs (m x n bits); only the list crosses to the
 * host, into pinned memory (when the list or the bitmap cannot be allocated, or the
 * re-check queue overflows: slabs of 2^26 entries compacted on the device).  Order: the matrix's row-major order, image ascending,
 * then query ascending (so each image's matches are one contiguous run: a CSR by
 * image).  d1, d2: the L2 distances (square roots of the canonical squared distances
 * of the header comment, rounded to float) of j to its nearest and second-nearest
 * descriptor in image i, as the exact float64 search finds them (whatever settled the
 * pair); so d1 / d2 < ratio holds for every entry.  Cost beyond the dense form: CPU,
 * one canonical scan of image i per kept entry; CUDA, an FP32 screening of image i per
 * kept entry under a proven bound, with canonical distances only for the winner, the
 * approximate second and the candidates the screening cannot exclude.
 * *matches points at a buffer the matcher owns, valid until the next match_all,
 * match_all_sparse, add, add_view, reset or free of this matcher; *count entries.
 * Arguments as gr_matcher_match_all's. */
typedef struct {
  int64_t query;      /* descriptor j (0 .. n - 1) */
  int32_t image;      /* image i (never j's own) */
  int32_t match;      /* j's nearest neighbour within image i (0 .. n_i - 1) */
  float d1, d2;       /* L2 distances to the nearest and second-nearest of image i */
} GrMatch;

GrStatus gr_matcher_match_all_sparse (GrMatcher *mt, const float *desc, int k,
    const int64_t *offsets, int m, float ratio, const GrMatch **matches, int64_t *count,
    GrMatchStats *stats, char *errbuf, size_t errlen);

/* The rows [row0, row1) of the sparse form (0 <= row0 <= row1 <= m): its entries of
 * the images row0 .. row1 - 1, every descriptor still a query (so the queries' own
 * images anywhere in the batch are excluded as before).  The sparse forms of
 * consecutive ranges, concatenated, are gr_matcher_match_all_sparse's list, entry for
 * entry: how kernels/matcher_nccl.h spreads the images over devices.  Arguments and
 * lifetime of *matches as gr_matcher_match_all_sparse's. */
GrStatus gr_matcher_match_rows_sparse (GrMatcher *mt, const float *desc, int k,
    const int64_t *offsets, int m, int row0, int row1, float ratio,
    const GrMatch **matches, int64_t *count, GrMatchStats *stats, char *errbuf,
    size_t errlen);

/* Splits images 0 .. m-1 into `parts` consecutive ranges of about equal work (the
 * work of image i is proportional to its descriptor count, each image meeting every
 * query): bounds[0] = 0 <= bounds[1] <= ... <= bounds[parts] = m, range p = images
 * bounds[p] .. bounds[p+1]-1.  offsets as above; parts >= 1. */
void gr_matcher_split_rows (const int64_t *offsets, int m, int parts, int *bounds);

/* ---- Pair pruning (issue 16): match only the image pairs that can share points.
 * A survey does not need frames kilometres apart matched.  GrMatcherPairs says, for
 * every image i (a row of the matrix), whose queries are matched against it: the
 * images images[start[i]] .. images[start[i+1] - 1], ascending and distinct, each in
 * 0 .. m - 1 (a CSR; i itself may be listed: its entries are -1 as always; the lists
 * need not be symmetric).  start[0] = 0, nondecreasing.
 *
 * The pruned sparse form is the sparse form's list restricted to the entries (query j
 * of image b, image i) with b listed for i, entry for entry and in the same order:
 * each (query, image) decision is independent of the other pairs.  Only the listed
 * pairs are computed (CPU: one image against each run of consecutive listed images'
 * queries; CUDA: one launch of the same kernels per such run), so the work is the
 * listed pairs' instead of m x n.  docs/multi-gpu.md. */
typedef struct {
  int m;                /* images */
  int64_t *start;       /* m + 1 */
  int32_t *images;      /* start[m] */
} GrMatcherPairs;

/* The pairs of images whose ground footprints are at most `margin` apart (overlapping:
 * 0 apart).  corners: m x 8 doubles, each image's 4 corners (x0, y0, .. x3, y3) in
 * metres of one projected CRS, in any order and winding (gr_camera_footprint's output;
 * the convex hull of the 4 is taken, so a crossed or non-convex quadrilateral counts
 * as its hull: pruning errs towards matching).  An image with any corner not finite
 * (unknown footprint) is paired with every image.  The result is symmetric and never
 * lists an image for itself; free it with gr_matcher_pairs_clear.  margin >= 0. */
GrStatus gr_matcher_pairs_from_footprints (const double *corners, int m, double margin,
    GrMatcherPairs *pairs, char *errbuf, size_t errlen);
void gr_matcher_pairs_clear (GrMatcherPairs *pairs);
/* The distance in metres between two footprints as gr_matcher_pairs_from_footprints
 * measures it (between the convex hulls; 0 when they overlap; NAN if a corner is not
 * finite). */
double gr_matcher_footprint_distance (const double a[8], const double b[8]);
/* GR_OK when pairs is a valid pair list for m images (as above). */
GrStatus gr_matcher_pairs_check (const GrMatcherPairs *pairs, int m, char *errbuf,
    size_t errlen);

/* gr_matcher_match_rows_sparse restricted to pairs (NULL: every pair, the same as
 * gr_matcher_match_rows_sparse).  The ranges of a split, concatenated, are
 * gr_matcher_match_all_sparse's list restricted to the pairs. */
GrStatus gr_matcher_match_rows_sparse_pairs (GrMatcher *mt, const float *desc, int k,
    const int64_t *offsets, int m, int row0, int row1, const GrMatcherPairs *pairs,
    float ratio, const GrMatch **matches, int64_t *count, GrMatchStats *stats,
    char *errbuf, size_t errlen);

/* gr_matcher_match_rows_sparse_pairs with the descriptors already in device memory
 * (kernels/matcher_nccl.c broadcasts them there): d_desc is a device pointer on the
 * matcher's CUDA device, n x k floats laid out as desc, read there in place (no
 * upload); offsets and pairs stay in host memory.  CUDA backend only (any other:
 * GR_ERR_INVALID).  The values are the caller's to have checked
 * (gr_matcher_check_values on the host copy): the host scan of the other forms cannot
 * read them, and a value that is not finite or exceeds GR_MATCHER_MAX_ABS voids the
 * exactness bounds.  Results and lifetime as gr_matcher_match_rows_sparse_pairs's. */
GrStatus gr_matcher_match_rows_sparse_pairs_device (GrMatcher *mt, const float *d_desc,
    int k, const int64_t *offsets, int m, int row0, int row1,
    const GrMatcherPairs *pairs, float ratio, const GrMatch **matches, int64_t *count,
    GrMatchStats *stats, char *errbuf, size_t errlen);

/* The batch forms' check of the descriptor values on its own: `count` descriptors of
 * k floats at desc (host memory), each value finite with |v| <= GR_MATCHER_MAX_ABS,
 * scanned by `threads` threads (0 = OpenMP's default).  GR_OK, or GR_ERR_INVALID with
 * the batch forms' message (the first bad descriptor and component).  For callers
 * that check a batch once and match it elsewhere (the NCCL root). */
GrStatus gr_matcher_check_values (const float *desc, int64_t count, int k, int threads,
    char *errbuf, size_t errlen);

/* gr_matcher_split_rows by the pruned work: image i weighs n_i times the descriptors
 * of its listed images (pairs NULL: gr_matcher_split_rows). */
void gr_matcher_split_rows_pairs (const int64_t *offsets, int m,
    const GrMatcherPairs *pairs, int parts, int *bounds);

/* ---- Incremental form: the matcher holds images (their descriptors stay resident:
 * in device memory for CUDA) and matches each new image against them, both ways.
 *
 * gr_matcher_add: `count` descriptors (count >= 0) of a new image, count x k floats.
 *  fwd (may be NULL): held x count int32, fwd[p * count + a] = the neighbour of new
 *      descriptor a in held image p (index within p), or -1;
 *  bwd (may be NULL): held_descriptors int32, bwd[b] = the neighbour in the new image
 *      of held descriptor b (held order: the oldest image's descriptors first), or -1;
 *  where held / held_descriptors are the values before the call (p = 0 is the oldest).
 * Then the new image is held too.  k is fixed by the first image after creation or
 * gr_matcher_reset; another k is GR_ERR_INVALID.  Adding the images of a batch one by
 * one reproduces gr_matcher_match_all's matrix: out[p][j in image b] = fwd_b[p][j]
 * for p < b, bwd_p[j] for p > b, -1 for p = b. */
GrStatus gr_matcher_add (GrMatcher *mt, const float *desc, int count, int k,
    float ratio, int32_t *fwd, int32_t *bwd, GrMatchStats *stats,
    char *errbuf, size_t errlen);

/* gr_matcher_add without a copy: the results stay in buffers the matcher owns (CUDA:
 * pinned host memory the device writes by DMA, so no pageable copy of the held x count
 * + held_descriptors entries; CPU: host memory) and *fwd / *bwd point at them, with
 * gr_matcher_add's layouts.  A direction is computed when its pointer argument is
 * non-NULL (NULL: skipped).  The views stay valid until the next add, add_view,
 * match_all, reset or free of this matcher (drop_oldest leaves them alone).  Results
 * equal gr_matcher_add's. */
GrStatus gr_matcher_add_view (GrMatcher *mt, const float *desc, int count, int k,
    float ratio, const int32_t **fwd, const int32_t **bwd, GrMatchStats *stats,
    char *errbuf, size_t errlen);

/* Forgets the `count` oldest held images (a sliding window); count > held forgets
 * all.  Storage is reused (compacted when needed, amortized O(1) per image). */
void gr_matcher_drop_oldest (GrMatcher *mt, int count);

/* Forgets every held image; k may change at the next add. */
void gr_matcher_reset (GrMatcher *mt);

int gr_matcher_held_images (const GrMatcher *mt);
int64_t gr_matcher_held_descriptors (const GrMatcher *mt);
/* Descriptors of held image p (0 = oldest); -1 when out of range. */
int gr_matcher_held_image_size (const GrMatcher *mt, int p);

/* ---- Testing hooks. */
typedef enum {
  GR_MATCHER_DEBUG_NONE = 0,
  GR_MATCHER_DEBUG_FORCE_EXACT = 1 << 0,  /* settle every pair by the exact re-check */
  GR_MATCHER_DEBUG_SMALL_LIST = 1 << 1,   /* CUDA: a tiny re-check list, so that its
                                             overflow path runs */
  GR_MATCHER_DEBUG_ONE_STREAM = 1 << 2,   /* CUDA, incremental form: run the two
                                             directions one after the other on one
                                             stream (default: concurrently on two) */
  GR_MATCHER_DEBUG_SMALL_SLAB = 1 << 3,   /* sparse form: slabs of 3 images, so that
                                             the slab boundaries are crossed (CUDA:
                                             the slab path, not the list mode) */
  GR_MATCHER_DEBUG_SMALL_SPARSE = 1 << 4, /* CUDA sparse form: a list of 4 entries at
                                             first, so that its regrowth runs */
} GrMatcherDebug;
void gr_matcher_set_debug (GrMatcher *mt, unsigned flags);

/* The canonical squared distance (see above), as both backends compute it. */
double gr_matcher_exact_distance (const float *q, const float *c, int k);

#ifdef __cplusplus
}
#endif
#endif
