/* The batch matcher's sparse form over several GPUs, of one host or of several, through
 * NCCL (issue 16, item 2).  Built only when nccl.h and libnccl are found (meson option
 * `nccl`, auto; GR_HAVE_NCCL); nothing else in the project depends on it.
 *
 * One rank per GPU.  The root rank holds the batch (descriptors and image offsets, as
 * gr_matcher_match_all_sparse takes them); every rank calls
 * gr_matcher_nccl_match_all_sparse (a collective), which:
 *   1. broadcasts the batch from the root in blocks of descriptors (ncclBroadcast):
 *      every descriptor is a query of every image, so every rank needs them all.  The
 *      root checks the values once, in its host copy; the descriptors then cross
 *      host -> device once, on the root (each block uploaded while the one before is
 *      broadcast), and land in a device buffer on every rank, where they stay;
 *   2. splits the images into one consecutive range per rank of about equal work
 *      (gr_matcher_split_rows: each image's descriptor count; the ranges partition
 *      the images' descriptors over the devices);
 *   3. on each rank, finds for every query the nearest and second-nearest descriptor
 *      of each of its images with the single-GPU exact matcher on that rank's device
 *      (gr_matcher_match_rows_sparse_pairs_device: the same kernels, the same exact
 *      re-check, reading the broadcast descriptors in place);
 *   4. gathers the ranks' sparse lists to the root in rank order (ncclAllGather of
 *      the counts, then ncclSend / ncclRecv of the entries).
 * Since the ranges are consecutive and each range's list is in the matrix order, the
 * root's list is gr_matcher_match_all_sparse's, entry for entry, for any rank count.
 *
 * The communicator comes from a unique id (gr_nccl_unique_id) that a launcher makes
 * once and hands to every rank (an environment variable, a file, MPI's broadcast...):
 * gr_matcher_nccl_new (nranks, rank, id, device).  The same code then runs as threads
 * of one process (one per GPU), as processes of one host, or across hosts
 * (docs/multi-gpu.md).  An existing ncclComm_t can be used instead
 * (gr_matcher_nccl_new_comm).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_MATCHER_NCCL_H
#define GR_MATCHER_NCCL_H

#include "matcher.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_NCCL_ID_BYTES 128    /* sizeof (ncclUniqueId) */

typedef struct GrMatcherNccl GrMatcherNccl;

typedef struct {
  int row0, row1;          /* this rank's images */
  int64_t local_count;     /* this rank's entries */
  double bcast_ms;         /* the batch's checks and broadcast (the root's upload of
                              the descriptors included) */
  double match_ms;         /* this rank's matching (the descriptors already on its
                              device) */
  double gather_ms;        /* the status agreement and the gather */
  double elapsed_ms;       /* the whole call */
} GrMatchNcclStats;

/* The launcher's side: a new unique id, and its text form (2 hex digits a byte,
 * 2 * GR_NCCL_ID_BYTES characters + NUL) for environment variables or command lines;
 * gr_nccl_id_from_hex ignores trailing white space (a file's newline). */
GrStatus gr_nccl_unique_id (unsigned char id[GR_NCCL_ID_BYTES], char *errbuf,
    size_t errlen);
void gr_nccl_id_to_hex (const unsigned char id[GR_NCCL_ID_BYTES],
    char hex[2 * GR_NCCL_ID_BYTES + 1]);
bool gr_nccl_id_from_hex (const char *hex, unsigned char id[GR_NCCL_ID_BYTES]);

/* A rank: joins the communicator of `nranks` ranks named by id as `rank`, on CUDA
 * device `device` (ncclCommInitRank: blocks until every rank has joined).  NULL on
 * failure (*status, errbuf). */
GrMatcherNccl *gr_matcher_nccl_new (int nranks, int rank,
    const unsigned char id[GR_NCCL_ID_BYTES], int device, GrStatus *status,
    char *errbuf, size_t errlen);
/* A rank over an existing communicator (an ncclComm_t, e.g. from ncclCommInitAll),
 * which stays the caller's; device must be the communicator's. */
GrMatcherNccl *gr_matcher_nccl_new_comm (void *comm, int device, GrStatus *status,
    char *errbuf, size_t errlen);
void gr_matcher_nccl_free (GrMatcherNccl *mn);
int gr_matcher_nccl_rank (const GrMatcherNccl *mn);
int gr_matcher_nccl_size (const GrMatcherNccl *mn);

/* Collective: every rank calls it with the same root.  On the root, desc, k, offsets,
 * m and ratio as gr_matcher_match_all_sparse's (other ranks' values are ignored: they
 * receive the root's).  On return the root's *matches / *count hold the whole sparse
 * list (owned by mn, valid until its next call or free); other ranks get their own
 * range's entries there.  Every rank returns the same status: an invalid batch or a
 * failure on any rank fails them all (no rank is left waiting).  stats may be NULL. */
GrStatus gr_matcher_nccl_match_all_sparse (GrMatcherNccl *mn, int root,
    const float *desc, int k, const int64_t *offsets, int m, float ratio,
    const GrMatch **matches, int64_t *count, GrMatchNcclStats *stats, char *errbuf,
    size_t errlen);

/* gr_matcher_nccl_match_all_sparse restricted to a pair list (matcher.h's
 * GrMatcherPairs: pair pruning by footprint overlap), read on the root only (NULL:
 * every pair) and broadcast with the batch; the images are split by the pruned work
 * (gr_matcher_split_rows_pairs).  The root's list is then
 * gr_matcher_match_rows_sparse_pairs's over all images, entry for entry. */
GrStatus gr_matcher_nccl_match_all_sparse_pairs (GrMatcherNccl *mn, int root,
    const float *desc, int k, const int64_t *offsets, int m,
    const GrMatcherPairs *pairs, float ratio, const GrMatch **matches, int64_t *count,
    GrMatchNcclStats *stats, char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
