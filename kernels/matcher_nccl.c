/* The batch matcher's sparse form over several GPUs through NCCL (matcher_nccl.h).
 * The descriptors cross host -> device once, on the root, and are broadcast into a
 * device buffer on every rank, where the rank's matcher reads them (bcast_blocks,
 * gr_matcher_match_rows_sparse_pairs_device); the small host arrays (header, offsets,
 * pair list) pass through a device staging buffer to the other ranks' host memory.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "matcher_nccl.h"

_Static_assert (sizeof (ncclUniqueId) == GR_NCCL_ID_BYTES, "ncclUniqueId size");

/* descriptors per broadcast block: 64 MB of floats, so that the root's upload of one
 * block overlaps the broadcast of the one before, and host arrays of any size cross
 * through a bounded device buffer per rank (two blocks: one crosses NVLink while the
 * other is copied in or out) */
#define BLOCK_FLOATS ((size_t) 16 << 20)
#define BLOCK_SLOTS 2

struct GrMatcherNccl {
  ncclComm_t comm;
  bool own_comm;
  int rank, size, device;
  cudaStream_t stream;          /* NCCL collectives */
  cudaStream_t copy;            /* host <-> device copies, beside the collectives */
  cudaEvent_t filled[BLOCK_SLOTS], drained[BLOCK_SLOTS];
  GrMatcher *mt;                /* this rank's single-GPU matcher */
  void *dbuf;                   /* device staging (host arrays' blocks, gather) */
  size_t dbuf_cap;
  void *ddesc;                  /* every rank: the broadcast descriptors, in device
                                 * memory, where the matcher reads them */
  size_t ddesc_cap;
  int64_t *hoff;
  size_t hoff_cap;
  int64_t *hpstart;             /* non-root ranks: the broadcast pair list */
  size_t hpstart_cap;
  int32_t *hpimg;
  size_t hpimg_cap;
  GrMatch *out;                 /* root: the gathered list */
  size_t out_cap;                /* bytes */
};

/* the root's description of the batch, broadcast first */
typedef struct {
  int64_t m, k, n;
  double ratio;
  int64_t status;               /* GR_OK, or the root's refusal */
  int64_t npairs;               /* the pair list's entries, -1: every pair */
} Header;

static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

#define NCK(call, what) do { ncclResult_t r_ = (call); if (r_ != ncclSuccess) { \
      gr_set_err (errbuf, errlen, "%s: %s", what, ncclGetErrorString (r_)); \
      return GR_ERR_CUDA; } } while (0)
#define CCK(call, what) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
      gr_set_err (errbuf, errlen, "%s: %s", what, cudaGetErrorString (e_)); \
      return e_ == cudaErrorMemoryAllocation ? GR_ERR_NOMEM : GR_ERR_CUDA; } } while (0)

GrStatus
gr_nccl_unique_id (unsigned char id[GR_NCCL_ID_BYTES], char *errbuf, size_t errlen)
{
  ncclUniqueId u;
  NCK (ncclGetUniqueId (&u), "ncclGetUniqueId");
  memcpy (id, u.internal, GR_NCCL_ID_BYTES);
  return GR_OK;
}

void
gr_nccl_id_to_hex (const unsigned char id[GR_NCCL_ID_BYTES],
    char hex[2 * GR_NCCL_ID_BYTES + 1])
{
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < GR_NCCL_ID_BYTES; i++) {
    hex[2 * i] = digits[id[i] >> 4];
    hex[2 * i + 1] = digits[id[i] & 15];
  }
  hex[2 * GR_NCCL_ID_BYTES] = '\0';
}

static int
hexval (char c)
{
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
      c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

bool
gr_nccl_id_from_hex (const char *hex, unsigned char id[GR_NCCL_ID_BYTES])
{
  if (!hex)
    return false;
  /* trailing white space (the newline of a file a launcher wrote, or of `echo`) is
   * not part of the id; anything else must be exactly the id's hex digits */
  size_t len = strlen (hex);
  while (len > 0 && (hex[len - 1] == '\n' || hex[len - 1] == '\r' || hex[len - 1] == ' ' ||
          hex[len - 1] == '\t'))
    len--;
  if (len != 2 * GR_NCCL_ID_BYTES)
    return false;
  for (int i = 0; i < GR_NCCL_ID_BYTES; i++) {
    const int a = hexval (hex[2 * i]), b = hexval (hex[2 * i + 1]);
    if (a < 0 || b < 0)
      return false;
    id[i] = (unsigned char) (a << 4 | b);
  }
  return true;
}

static GrMatcherNccl *
finish_new (GrMatcherNccl *mn, GrStatus *status, char *errbuf, size_t errlen)
{
  GrStatus st = GR_OK;
  bool ok = cudaSetDevice (mn->device) == cudaSuccess &&
      cudaStreamCreateWithFlags (&mn->stream, cudaStreamNonBlocking) == cudaSuccess &&
      cudaStreamCreateWithFlags (&mn->copy, cudaStreamNonBlocking) == cudaSuccess;
  for (int i = 0; ok && i < BLOCK_SLOTS; i++)
    ok = cudaEventCreateWithFlags (&mn->filled[i], cudaEventDisableTiming) == cudaSuccess &&
        cudaEventCreateWithFlags (&mn->drained[i], cudaEventDisableTiming) == cudaSuccess;
  if (!ok) {
    gr_set_err (errbuf, errlen, "CUDA device %d unusable", mn->device);
    st = GR_ERR_CUDA;
  } else if (ncclCommUserRank (mn->comm, &mn->rank) != ncclSuccess ||
      ncclCommCount (mn->comm, &mn->size) != ncclSuccess) {
    gr_set_err (errbuf, errlen, "NCCL communicator unusable");
    st = GR_ERR_CUDA;
  } else {
    mn->mt = gr_matcher_new (GR_BACKEND_CUDA, mn->device, &st, errbuf, errlen);
  }
  if (status)
    *status = st;
  if (st != GR_OK) {
    gr_matcher_nccl_free (mn);
    return NULL;
  }
  return mn;
}

GrMatcherNccl *
gr_matcher_nccl_new (int nranks, int rank, const unsigned char id[GR_NCCL_ID_BYTES],
    int device, GrStatus *status, char *errbuf, size_t errlen)
{
  if (nranks < 1 || rank < 0 || rank >= nranks || device < 0 || !id) {
    gr_set_err (errbuf, errlen, "bad rank %d of %d or device %d", rank, nranks, device);
    if (status)
      *status = GR_ERR_INVALID;
    return NULL;
  }
  if (cudaSetDevice (device) != cudaSuccess) {
    gr_set_err (errbuf, errlen, "CUDA device %d unusable", device);
    if (status)
      *status = GR_ERR_NO_CUDA;
    return NULL;
  }
  ncclUniqueId u;
  memcpy (u.internal, id, GR_NCCL_ID_BYTES);
  ncclComm_t comm;
  ncclResult_t r = ncclCommInitRank (&comm, nranks, u, rank);
  if (r != ncclSuccess) {
    gr_set_err (errbuf, errlen, "ncclCommInitRank (rank %d of %d): %s", rank, nranks,
        ncclGetErrorString (r));
    if (status)
      *status = GR_ERR_CUDA;
    return NULL;
  }
  GrMatcherNccl *mn = calloc (1, sizeof *mn);
  if (!mn) {
    ncclCommDestroy (comm);
    if (status)
      *status = GR_ERR_NOMEM;
    return NULL;
  }
  mn->comm = comm;
  mn->own_comm = true;
  mn->device = device;
  return finish_new (mn, status, errbuf, errlen);
}

GrMatcherNccl *
gr_matcher_nccl_new_comm (void *comm, int device, GrStatus *status, char *errbuf,
    size_t errlen)
{
  GrMatcherNccl *mn = comm ? calloc (1, sizeof *mn) : NULL;
  if (!mn) {
    gr_set_err (errbuf, errlen, comm ? "out of memory" : "no communicator");
    if (status)
      *status = comm ? GR_ERR_NOMEM : GR_ERR_INVALID;
    return NULL;
  }
  mn->comm = (ncclComm_t) comm;
  mn->device = device;
  return finish_new (mn, status, errbuf, errlen);
}

void
gr_matcher_nccl_free (GrMatcherNccl *mn)
{
  if (!mn)
    return;
  cudaSetDevice (mn->device);
  gr_matcher_free (mn->mt);
  if (mn->dbuf)
    cudaFree (mn->dbuf);
  if (mn->ddesc)
    cudaFree (mn->ddesc);
  if (mn->stream)
    cudaStreamDestroy (mn->stream);
  if (mn->copy)
    cudaStreamDestroy (mn->copy);
  for (int i = 0; i < BLOCK_SLOTS; i++) {
    if (mn->filled[i])
      cudaEventDestroy (mn->filled[i]);
    if (mn->drained[i])
      cudaEventDestroy (mn->drained[i]);
  }
  if (mn->own_comm)
    ncclCommDestroy (mn->comm);
  free (mn->hoff);
  free (mn->hpstart);
  free (mn->hpimg);
  free (mn->out);
  free (mn);
}

int
gr_matcher_nccl_rank (const GrMatcherNccl *mn)
{
  return mn->rank;
}

int
gr_matcher_nccl_size (const GrMatcherNccl *mn)
{
  return mn->size;
}

/* a device buffer of at least `bytes` (grow-only; the old contents are not kept) */
static GrStatus
grow_device (void **p, size_t *cap, size_t bytes, const char *what, char *errbuf,
    size_t errlen)
{
  if (bytes <= *cap)
    return GR_OK;
  if (*p)
    cudaFree (*p);
  *p = NULL;
  *cap = 0;
  const cudaError_t e = cudaMalloc (p, bytes);
  if (e != cudaSuccess) {
    *p = NULL;
    /* not left in the runtime's state, where the matcher's next launch check would
     * find it */
    cudaGetLastError ();
    gr_set_err (errbuf, errlen, "cudaMalloc (%s): %s", what, cudaGetErrorString (e));
    return e == cudaErrorMemoryAllocation ? GR_ERR_NOMEM : GR_ERR_CUDA;
  }
  *cap = bytes;
  return GR_OK;
}

static GrStatus
dbuf_need (GrMatcherNccl *mn, size_t bytes, char *errbuf, size_t errlen)
{
  return grow_device (&mn->dbuf, &mn->dbuf_cap, bytes, "NCCL staging", errbuf, errlen);
}

/* root -> every rank: `bytes` of host memory at src (root) in blocks.
 * to_device: into device memory at dst on every rank, the root's included: the root
 * uploads each block there on the copy stream and NCCL carries it in place on
 * mn->stream, so that one block's upload overlaps the broadcast of the one before (no
 * block's place is reused, so nothing waits for a drain).
 * Else into host memory at dst on the other ranks (the root's dst is not used),
 * through the device staging buffer.  Two slots: while NCCL carries block i on
 * mn->stream, the copy stream brings block i + 1 in (root) or takes block i - 1 out
 * (others); the events order each slot's fill, broadcast and drain, so that no host
 * wait stands between blocks (the 512 MB batch, when it took this path, crossed in
 * 95 ms with one slot and a wait a block, about a tenth of the 4-GPU run's time) */
static GrStatus
bcast_blocks (GrMatcherNccl *mn, int root, const void *src, void *dst, bool to_device,
    size_t bytes, char *errbuf, size_t errlen)
{
  const size_t block = BLOCK_FLOATS * sizeof (float);
  const size_t slot = bytes < block ? (bytes ? bytes : 1) : block;
  const int slots = bytes > block ? BLOCK_SLOTS : 1;
  if (!to_device) {
    const GrStatus st = dbuf_need (mn, slot * (size_t) slots, errbuf, errlen);
    if (st != GR_OK)
      return st;
  }
  const bool is_root = mn->rank == root;
  size_t i = 0;
  for (size_t o = 0; o < bytes; o += block, i++) {
    const size_t b = bytes - o < block ? bytes - o : block;
    const int sl = (int) (i % (size_t) slots);
    /* a staging slot is reused from block `slots` on */
    const bool reuse = !to_device && i >= (size_t) slots;
    char *d = to_device ? (char *) dst + o : (char *) mn->dbuf + (size_t) sl * slot;
    if (is_root) {
      /* the slot's previous broadcast must have left before it is refilled */
      if (reuse)
        CCK (cudaStreamWaitEvent (mn->copy, mn->drained[sl], 0), "cudaStreamWaitEvent");
      CCK (cudaMemcpyAsync (d, (const char *) src + o, b, cudaMemcpyHostToDevice,
              mn->copy), "cudaMemcpy (broadcast block)");
      CCK (cudaEventRecord (mn->filled[sl], mn->copy), "cudaEventRecord");
      CCK (cudaStreamWaitEvent (mn->stream, mn->filled[sl], 0), "cudaStreamWaitEvent");
    } else if (reuse) {
      /* the slot's previous block must have been copied out before NCCL overwrites it */
      CCK (cudaStreamWaitEvent (mn->stream, mn->drained[sl], 0), "cudaStreamWaitEvent");
    }
    NCK (ncclBroadcast (d, d, b, ncclUint8, root, mn->comm, mn->stream), "ncclBroadcast");
    if (to_device)
      continue;                 /* the block is in place */
    if (is_root) {
      CCK (cudaEventRecord (mn->drained[sl], mn->stream), "cudaEventRecord");
    } else {
      CCK (cudaEventRecord (mn->filled[sl], mn->stream), "cudaEventRecord");
      CCK (cudaStreamWaitEvent (mn->copy, mn->filled[sl], 0), "cudaStreamWaitEvent");
      CCK (cudaMemcpyAsync ((char *) dst + o, d, b, cudaMemcpyDeviceToHost, mn->copy),
          "cudaMemcpy (broadcast block)");
      CCK (cudaEventRecord (mn->drained[sl], mn->copy), "cudaEventRecord");
    }
  }
  CCK (cudaStreamSynchronize (mn->copy), "broadcast (copies)");
  CCK (cudaStreamSynchronize (mn->stream), "broadcast");
  return GR_OK;
}

/* every rank's status -> the worst (max) on every rank */
static GrStatus
agree (GrMatcherNccl *mn, int64_t *status, char *errbuf, size_t errlen)
{
  GrStatus st = dbuf_need (mn, sizeof (int64_t), errbuf, errlen);
  if (st != GR_OK)
    return st;
  CCK (cudaMemcpyAsync (mn->dbuf, status, sizeof *status, cudaMemcpyHostToDevice,
          mn->stream), "cudaMemcpy (status)");
  NCK (ncclAllReduce (mn->dbuf, mn->dbuf, 1, ncclInt64, ncclMax, mn->comm, mn->stream),
      "ncclAllReduce (status)");
  CCK (cudaMemcpyAsync (status, mn->dbuf, sizeof *status, cudaMemcpyDeviceToHost,
          mn->stream), "cudaMemcpy (status)");
  CCK (cudaStreamSynchronize (mn->stream), "status agreement");
  return GR_OK;
}

/* the root's argument checks (the rest of them are every rank's matcher's, on the same
 * offsets, so they agree; the descriptor values are checked on the root only, in its
 * host copy: the ranks' matchers read theirs on the device) */
static GrStatus
root_check (const float *desc, int k, const int64_t *offsets, int m, float ratio,
    char *errbuf, size_t errlen)
{
  if (k < 1 || k > GR_MATCHER_MAX_K_CUDA || m < 0 || !offsets || !(ratio > 0.f) ||
      !isfinite (ratio)) {
    gr_set_err (errbuf, errlen, "bad k %d, image count %d, offsets or ratio", k, m);
    return GR_ERR_INVALID;
  }
  if (offsets[0] != 0) {
    gr_set_err (errbuf, errlen, "offsets[0] must be 0");
    return GR_ERR_INVALID;
  }
  for (int i = 0; i < m; i++)
    if (offsets[i + 1] < offsets[i]) {
      gr_set_err (errbuf, errlen, "offsets must be nondecreasing (image %d)", i);
      return GR_ERR_INVALID;
    }
  if (offsets[m] > 0 && !desc) {
    gr_set_err (errbuf, errlen, "no descriptors");
    return GR_ERR_INVALID;
  }
  return GR_OK;
}

static GrStatus
grow_host (void **p, size_t *cap, size_t bytes)
{
  if (bytes <= *cap)
    return GR_OK;
  void *n = realloc (*p, bytes);
  if (!n)
    return GR_ERR_NOMEM;
  *p = n;
  *cap = bytes;
  return GR_OK;
}

/* this rank's entries (local, count lc) -> the root's list in rank order */
static GrStatus
gather (GrMatcherNccl *mn, int root, const GrMatch *local, int64_t lc, int64_t *total,
    char *errbuf, size_t errlen)
{
  const int R = mn->size;
  GrStatus st = dbuf_need (mn, sizeof (int64_t) * (size_t) (R + 1), errbuf, errlen);
  if (st != GR_OK)
    return st;
  int64_t *counts = malloc (sizeof (int64_t) * (size_t) R);
  if (!counts)
    return GR_ERR_NOMEM;
  int64_t *d = mn->dbuf;
  cudaMemcpyAsync (d + R, &lc, sizeof lc, cudaMemcpyHostToDevice, mn->stream);
  ncclResult_t nr = ncclAllGather (d + R, d, 1, ncclInt64, mn->comm, mn->stream);
  cudaMemcpyAsync (counts, d, sizeof (int64_t) * (size_t) R, cudaMemcpyDeviceToHost,
      mn->stream);
  if (nr != ncclSuccess || cudaStreamSynchronize (mn->stream) != cudaSuccess) {
    free (counts);
    gr_set_err (errbuf, errlen, "ncclAllGather (counts): %s", ncclGetErrorString (nr));
    return GR_ERR_CUDA;
  }
  int64_t all = 0, before = 0, biggest = 0;
  for (int r = 0; r < R; r++) {
    if (r < root)
      before += counts[r];
    all += counts[r];
    if (counts[r] > biggest)
      biggest = counts[r];
  }
  /* the root receives into one device buffer of the whole list (its own part stays
   * on the host); a sender stages its part */
  const size_t es = sizeof (GrMatch);
  const size_t need = mn->rank == root ? (size_t) (all - counts[root]) * es :
      (size_t) lc * es;
  st = dbuf_need (mn, need ? need : 1, errbuf, errlen);
  if (st == GR_OK && mn->rank == root &&
      grow_host ((void **) &mn->out, &mn->out_cap, (size_t) (all ? all : 1)
          * es) != GR_OK)
    st = GR_ERR_NOMEM;
  /* a rank without room must not leave the others waiting in the exchange below:
   * all agree first, and all give up together */
  int64_t worst = st;
  GrStatus ast = agree (mn, &worst, errbuf, errlen);
  if (ast != GR_OK || worst != GR_OK) {
    free (counts);
    if (ast == GR_OK)
      gr_set_err (errbuf, errlen, "out of memory gathering %lld entries on %s",
          (long long) all, st != GR_OK ? "this rank" : "another rank");
    return ast != GR_OK ? ast : (GrStatus) worst;
  }
  if (mn->rank != root && lc > 0)
    cudaMemcpyAsync (mn->dbuf, local, (size_t) lc * es, cudaMemcpyHostToDevice,
        mn->stream);
  ncclGroupStart ();
  if (mn->rank == root) {
    size_t off = 0;
    for (int r = 0; r < R; r++) {
      if (r == root || counts[r] == 0)
        continue;
      ncclRecv ((char *) mn->dbuf + off, (size_t) counts[r] * es, ncclUint8, r,
          mn->comm, mn->stream);
      off += (size_t) counts[r] * es;
    }
  } else if (lc > 0) {
    ncclSend (mn->dbuf, (size_t) lc * es, ncclUint8, root, mn->comm, mn->stream);
  }
  nr = ncclGroupEnd ();
  if (nr == ncclSuccess && mn->rank == root) {
    /* the ranks before the root, the root's own part, the ranks after it */
    if (before > 0)
      cudaMemcpyAsync (mn->out, mn->dbuf, (size_t) before * es, cudaMemcpyDeviceToHost,
          mn->stream);
    if (all - before - counts[root] > 0)
      cudaMemcpyAsync (mn->out + before + counts[root],
          (char *) mn->dbuf + (size_t) before * es,
          (size_t) (all - before - counts[root]) * es, cudaMemcpyDeviceToHost,
          mn->stream);
    if (lc > 0)
      memcpy (mn->out + before, local, (size_t) lc * es);
  }
  const cudaError_t ce = cudaStreamSynchronize (mn->stream);
  free (counts);
  if (nr != ncclSuccess || ce != cudaSuccess) {
    gr_set_err (errbuf, errlen, "gather: %s", nr != ncclSuccess ?
        ncclGetErrorString (nr) : cudaGetErrorString (ce));
    return GR_ERR_CUDA;
  }
  *total = all;
  return GR_OK;
}

GrStatus
gr_matcher_nccl_match_all_sparse (GrMatcherNccl *mn, int root, const float *desc,
    int k, const int64_t *offsets, int m, float ratio, const GrMatch **matches,
    int64_t *count, GrMatchNcclStats *stats, char *errbuf, size_t errlen)
{
  return gr_matcher_nccl_match_all_sparse_pairs (mn, root, desc, k, offsets, m, NULL,
      ratio, matches, count, stats, errbuf, errlen);
}

GrStatus
gr_matcher_nccl_match_all_sparse_pairs (GrMatcherNccl *mn, int root, const float *desc,
    int k, const int64_t *offsets, int m, const GrMatcherPairs *pairs, float ratio,
    const GrMatch **matches, int64_t *count, GrMatchNcclStats *stats, char *errbuf,
    size_t errlen)
{
  const double t0 = now_ms ();
  GrMatchNcclStats s;
  memset (&s, 0, sizeof s);
  if (!mn || !matches || !count || root < 0 || root >= mn->size) {
    gr_set_err (errbuf, errlen, "no matcher, output pointers or bad root");
    return GR_ERR_INVALID;
  }
  *matches = NULL;
  *count = 0;
  if (cudaSetDevice (mn->device) != cudaSuccess) {
    gr_set_err (errbuf, errlen, "cudaSetDevice (%d)", mn->device);
    return GR_ERR_CUDA;
  }
  /* 1. the header, then the offsets and the descriptors */
  Header h;
  memset (&h, 0, sizeof h);
  char rerr[256] = "";
  if (mn->rank == root) {
    h.status = root_check (desc, k, offsets, m, ratio, rerr, sizeof rerr);
    if (h.status == GR_OK)
      h.status = gr_matcher_check_values (desc, offsets[m], k, 0, rerr, sizeof rerr);
    if (h.status == GR_OK && pairs)
      h.status = gr_matcher_pairs_check (pairs, m, rerr, sizeof rerr);
    h.npairs = pairs && h.status == GR_OK ? pairs->start[m] : -1;
    if (h.status == GR_OK) {
      h.m = m;
      h.k = k;
      h.n = offsets[m];
      h.ratio = ratio;
    }
  }
  GrStatus st = bcast_blocks (mn, root, &h, &h, false, sizeof h, errbuf, errlen);
  if (st != GR_OK)
    return st;
  if (h.status != GR_OK) {
    if (mn->rank == root)
      gr_set_err (errbuf, errlen, "%s", rerr);
    else
      gr_set_err (errbuf, errlen, "the root refused the batch");
    return (GrStatus) h.status;
  }
  /* every rank's descriptors in device memory (the matcher reads them there), the
   * other ranks' offsets and pair list in host memory */
  const size_t dbytes = sizeof (float) * (size_t) (h.n * h.k);
  char aerr[256] = "";
  h.status = grow_device (&mn->ddesc, &mn->ddesc_cap, dbytes ? dbytes : 1,
      "broadcast descriptors", aerr, sizeof aerr);
  if (h.status == GR_OK && mn->rank != root &&
      (grow_host ((void **) &mn->hoff, &mn->hoff_cap, sizeof (int64_t) * (size_t)
              (h.m + 1)) != GR_OK ||
          (h.npairs >= 0 && (grow_host ((void **) &mn->hpstart, &mn->hpstart_cap,
                      sizeof (int64_t) * (size_t) (h.m + 1)) != GR_OK ||
                  grow_host ((void **) &mn->hpimg, &mn->hpimg_cap, sizeof (int32_t) *
                      (size_t) (h.npairs > 0 ? h.npairs : 1)) != GR_OK)))) {
    h.status = GR_ERR_NOMEM;
    gr_set_err (aerr, sizeof aerr, "out of host memory");
  }
  /* every rank must take part in the broadcasts: agree on having room first */
  const int64_t mine = h.status;
  st = agree (mn, &h.status, errbuf, errlen);
  if (st != GR_OK)
    return st;
  if (h.status != GR_OK) {
    if (mine != GR_OK)
      gr_set_err (errbuf, errlen, "%s for %lld descriptors", aerr, (long long) h.n);
    else
      gr_set_err (errbuf, errlen, "another rank had no room for %lld descriptors",
          (long long) h.n);
    return (GrStatus) h.status;
  }
  const int64_t *off = mn->rank == root ? offsets : mn->hoff;
  st = bcast_blocks (mn, root, offsets, mn->hoff, false, sizeof (int64_t) * (size_t)
      (h.m + 1), errbuf, errlen);
  if (st == GR_OK)
    st = bcast_blocks (mn, root, desc, mn->ddesc, true, dbytes, errbuf, errlen);
  /* the pair list: every rank needs its images' lists, and all of them for the split */
  GrMatcherPairs rp = { (int) h.m, mn->hpstart, mn->hpimg };
  const GrMatcherPairs *pl = NULL;
  if (st == GR_OK && h.npairs >= 0) {
    const bool is_root = mn->rank == root;   /* pairs is read on the root only */
    st = bcast_blocks (mn, root, is_root ? pairs->start : NULL, mn->hpstart, false,
        sizeof (int64_t) * (size_t) (h.m + 1), errbuf, errlen);
    if (st == GR_OK)
      st = bcast_blocks (mn, root, is_root ? pairs->images : NULL, mn->hpimg, false,
          sizeof (int32_t) * (size_t) h.npairs, errbuf, errlen);
    pl = mn->rank == root ? pairs : &rp;
  }
  if (st != GR_OK)
    return st;
  const double t1 = now_ms ();
  s.bcast_ms = t1 - t0;

  /* 2-3. this rank's images */
  int *bounds = malloc (sizeof (int) * (size_t) (mn->size + 1));
  if (!bounds)
    return GR_ERR_NOMEM;
  gr_matcher_split_rows_pairs (off, (int) h.m, pl, mn->size, bounds);
  s.row0 = bounds[mn->rank];
  s.row1 = bounds[mn->rank + 1];
  free (bounds);
  const GrMatch *local = NULL;
  int64_t lc = 0;
  char lerr[256] = "";
  int64_t lst = gr_matcher_match_rows_sparse_pairs_device (mn->mt, mn->ddesc, (int) h.k,
      off, (int) h.m, s.row0, s.row1, pl, (float) h.ratio, &local, &lc, NULL, lerr,
      sizeof lerr);
  const double t2 = now_ms ();
  s.match_ms = t2 - t1;
  s.local_count = lc;

  /* 4. agree, then gather */
  int64_t worst = lst;
  st = agree (mn, &worst, errbuf, errlen);
  if (st != GR_OK)
    return st;
  if (worst != GR_OK) {
    if (lst != GR_OK)
      gr_set_err (errbuf, errlen, "rank %d: %s", mn->rank, lerr);
    else
      gr_set_err (errbuf, errlen, "another rank failed");
    return (GrStatus) worst;
  }
  int64_t total = 0;
  st = gather (mn, root, local, lc, &total, errbuf, errlen);
  if (st != GR_OK)
    return st;
  s.gather_ms = now_ms () - t2;
  if (mn->rank == root) {
    *matches = mn->out;
    *count = total;
  } else {
    *matches = local;
    *count = lc;
  }
  s.elapsed_ms = now_ms () - t0;
  if (stats)
    *stats = s;
  return GR_OK;
}
