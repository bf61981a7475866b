/* Internal: the CUDA half of the matcher (kernels/matcher_cuda.cu).  Only built when
 * the build has CUDA; matcher.c validates the arguments and dispatches to it.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_MATCHER_CUDA_H
#define GR_MATCHER_CUDA_H

#include "matcher.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct GrMatcherCuda GrMatcherCuda;

/* The pruned sparse form's work (matcher.c builds it from a GrMatcherPairs): image
 * `image` against the queries q0 .. q1 - 1, descriptors of consecutive listed images
 * (never its own); the runs in the matrix's order (image, then query). */
typedef struct {
  int image;
  int64_t q0, q1;
} GrMatcherRun;

GrMatcherCuda *gr_matcher_cuda_new (int device, char *errbuf, size_t errlen);
void gr_matcher_cuda_free (GrMatcherCuda *c);

/* rr = (double) ratio * ratio.  Arguments already validated (k <= MAX_K_CUDA). */
GrStatus gr_matcher_cuda_match_all (GrMatcherCuda *c, const float *desc, int k,
    const int64_t *offsets, int m, double rr, unsigned debug, int32_t *out,
    GrMatchStats *stats, char *errbuf, size_t errlen);
/* The sparse form (matcher.h) of the images [row0, row1) (0 <= row0 <= row1 <= m),
 * desc in host memory or, when on_device, in device memory of the engine's device
 * (read there in place): *count entries at *view, which is either the engine's pinned
 * buffer (the list mode; valid until the next call or free) or *buf (malloc'ed, *cap
 * entries, grown with realloc as needed: the slab path).  runs (nruns >= 0 of them, images within
 * [row0, row1)): only those pairs are computed (on the slab path), the rest of the list
 * is left out (nruns < 0: every pair, list mode); each run holds at most
 * GR_MATCHER_CUDA_RUN queries (GR_MATCHER_DEBUG_SMALL_LIST: 16), so that the re-check
 * queue of its launch cannot overflow. */
#define GR_MATCHER_CUDA_RUN (1 << 22)
GrStatus gr_matcher_cuda_match_all_sparse (GrMatcherCuda *c, const float *desc,
    bool on_device, int k, const int64_t *offsets, int m, int row0, int row1,
    const GrMatcherRun *runs, int64_t nruns, double rr, unsigned debug, GrMatch **buf, int64_t *cap,
    const GrMatch **view, int64_t *count, GrMatchStats *stats, char *errbuf,
    size_t errlen);
/* The batch forms' staged upload (matcher.c, GEOREG_MATCHER_UPLOAD=pinned): _begin
 * returns the engine's pinned buffer of at least `floats` floats (NULL: none could be
 * had; the caller then passes its own memory as before); the caller fills it in
 * order, a part at a time, and _part starts each part's upload at once, so that
 * filling and transfer overlap.  A batch call given the buffer itself as desc, with
 * every float of its n x k sent, skips its own upload.  Valid until the next _begin. */
float *gr_matcher_cuda_stage_begin (GrMatcherCuda *c, size_t floats);
GrStatus gr_matcher_cuda_stage_part (GrMatcherCuda *c, size_t first, size_t floats,
    char *errbuf, size_t errlen);

/* fwd / bwd: the caller's buffers (NULL: not wanted), or, when vfwd / vbwd are
 * non-NULL, that direction goes to the engine's pinned result buffer and *vfwd / *vbwd
 * receive pointers into it (valid until the next call). */
GrStatus gr_matcher_cuda_add (GrMatcherCuda *c, const float *desc, int count, int k,
    double rr, unsigned debug, int32_t *fwd, int32_t *bwd, int32_t **vfwd,
    int32_t **vbwd, GrMatchStats *stats, char *errbuf, size_t errlen);
void gr_matcher_cuda_drop_oldest (GrMatcherCuda *c, int count);
void gr_matcher_cuda_reset (GrMatcherCuda *c);

#ifdef __cplusplus
}
#endif
#endif
