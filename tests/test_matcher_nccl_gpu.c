/* The NCCL matcher (kernels/matcher_nccl.h, issue 16): on CUDA, the sparse lists of
 * the split image ranges concatenate into the single-GPU list; one rank on one GPU
 * gives the single-GPU matcher's list exactly; with 2 or more GPUs, one rank per GPU
 * (threads, unique id) gives it exactly too, whichever rank is the root, and over a
 * communicator of ncclCommInitAll; an invalid batch on the root fails every rank
 * (none is left waiting); with a pair list (pair pruning) the ranks' list is the
 * single-GPU pruned list exactly, and that is the full list restricted to the pairs.
 * The matcher's device form (the batch already in device memory, as the ranks hold
 * it) gives the host form's list exactly, full and pruned, in list mode and on the
 * slab path.  Exit 77 without a CUDA device.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "matcher_batch_gen.h"
#include "matcher_pairs_gen.h"
#include "nccl_ranks.h"
#include "test_check.h"

static int
same_list (const GrMatch *a, int64_t na, const GrMatch *b, int64_t nb)
{
  return na == nb && (na == 0 || memcmp (a, b, sizeof (GrMatch) * (size_t) na) == 0);
}

typedef struct {
  GrMatcherNccl *mn;
  const float *desc;
  const int64_t *off;
  int k, m;
  GrStatus st;
  GrMatch *list;
  int64_t count;
  char err[256];
} CommRank;

static void *
comm_thread (void *arg)
{
  CommRank *c = arg;
  const GrMatch *l;
  int64_t n;
  c->st = gr_matcher_nccl_match_all_sparse (c->mn, 0, c->desc, c->k, c->off, c->m, 0.8f,
      &l, &n, NULL, c->err, sizeof c->err);
  if (c->st == GR_OK) {
    c->list = malloc (sizeof (GrMatch) * (size_t) (n > 0 ? n : 1));
    memcpy (c->list, l, sizeof (GrMatch) * (size_t) n);
    c->count = n;
  }
  return NULL;
}

int
main (void)
{
  const int ndev = gr_cuda_device_count ();
  if (ndev <= 0) {
    printf ("SKIP: no usable CUDA device\n");
    return 77;
  }
  int R = ndev;
  const char *renv = getenv ("GEOREG_NCCL_RANKS");
  if (renv && atoi (renv) > 0 && atoi (renv) < R)
    R = atoi (renv);
  printf ("%d CUDA device(s), up to %d rank(s)\n", ndev, R);
  const int ks[2] = { 64, 32 };
  const int ms[2] = { 37, 9 };
  for (int c = 0; c < 2; c++) {
    const int k = ks[c], m = ms[c];
    int64_t *off;
    float *d = mbg_batch (m, 300, 200, k, 11 + c, &off);
    char err[256] = "";
    GrStatus st;
    GrMatcher *mt = gr_matcher_new (GR_BACKEND_CUDA, 0, &st, err, sizeof err);
    CHECK (mt, "CUDA matcher: %s", err);
    if (!mt)
      return 1;
    const GrMatch *l;
    int64_t n1 = 0;
    st = gr_matcher_match_all_sparse (mt, d, k, off, m, 0.8f, &l, &n1, NULL, err,
        sizeof err);
    CHECK (st == GR_OK && n1 > 0, "single GPU: %s", err);
    GrMatch *ref = malloc (sizeof (GrMatch) * (size_t) (n1 + 1));
    memcpy (ref, l, sizeof (GrMatch) * (size_t) n1);
    printf ("k %d, m %d, n %lld: %lld entries on one GPU\n", k, m, (long long) off[m],
        (long long) n1);

    /* the device form: the batch in device memory, read there == the host form (the
     * copy synchronized: from pageable memory cudaMemcpy may return before its DMA
     * ends, and the matcher's stream does not wait for the legacy one) */
    float *dd = NULL;
    const size_t dbytes = sizeof (float) * (size_t) off[m] * (size_t) k;
    CHECK (cudaSetDevice (0) == cudaSuccess && cudaMalloc ((void **) &dd, dbytes) ==
        cudaSuccess && cudaMemcpy (dd, d, dbytes, cudaMemcpyHostToDevice) ==
        cudaSuccess && cudaDeviceSynchronize () == cudaSuccess,
        "the batch's device copy");
    for (int slab = 0; dd && slab < 2; slab++) {
      gr_matcher_set_debug (mt, slab ? GR_MATCHER_DEBUG_SMALL_SLAB : 0);
      int64_t nd = 0;
      st = gr_matcher_match_rows_sparse_pairs_device (mt, dd, k, off, m, 0, m, NULL, 0.8f,
          &l, &nd, NULL, err, sizeof err);
      CHECK (st == GR_OK && same_list (l, nd, ref, n1), "device form%s: %lld entries "
          "vs %lld (%s)", slab ? ", slabs" : "", (long long) nd, (long long) n1, err);
      printf ("device form%s: %lld entries, %s\n", slab ? " (3-image slabs)" : "",
          (long long) nd, st == GR_OK && same_list (l, nd, ref, n1) ? "identical" :
          "DIFFERENT");
    }
    gr_matcher_set_debug (mt, 0);

    /* CUDA rows: the split ranges concatenate into the list */
    for (int parts = 2; parts <= 4; parts++) {
      int b[5];
      gr_matcher_split_rows (off, m, parts, b);
      int64_t got = 0;
      int same = 1;
      for (int p = 0; p < parts; p++) {
        int64_t np = 0;
        st = gr_matcher_match_rows_sparse (mt, d, k, off, m, b[p], b[p + 1], 0.8f, &l,
            &np, NULL, err, sizeof err);
        CHECK (st == GR_OK, "CUDA rows: %s", err);
        same = same && got + np <= n1 &&
            memcmp (l, ref + got, sizeof (GrMatch) * (size_t) np) == 0;
        got += np;
      }
      CHECK (same && got == n1, "CUDA rows, %d parts: %lld vs %lld entries", parts,
          (long long) got, (long long) n1);
    }

    /* one rank, then every device; the root first, then the last rank */
    int counts[2] = { 1, R };
    for (int ci = 0; ci < (R > 1 ? 2 : 1); ci++) {
      const int nr = counts[ci];
      for (int root = 0; root < nr; root += (nr > 1 ? nr - 1 : 1)) {
        NcclRank *ranks = calloc ((size_t) nr, sizeof *ranks);
        nccl_ranks_run (nr, root, 1, d, k, off, m, 0.8f, ranks);
        int ok = 1;
        for (int r = 0; r < nr; r++) {
          CHECK (ranks[r].st == GR_OK, "%d ranks, rank %d: %s", nr, r, ranks[r].err);
          ok = ok && ranks[r].st == GR_OK;
        }
        if (ok)
          CHECK (same_list (ranks[root].list, ranks[root].count, ref, n1),
              "%d rank(s), root %d: %lld entries vs %lld on one GPU, %s", nr, root,
              (long long) ranks[root].count, (long long) n1,
              ranks[root].count == n1 ? "entries differ" : "counts differ");
        printf ("%d rank(s), root %d: %lld entries, %s\n", nr, root,
            (long long) ranks[root].count,
            ok && same_list (ranks[root].list, ranks[root].count, ref, n1) ?
            "identical" : "DIFFERENT");
        for (int r = 0; r < nr; r++) {
          if (ok && nr > 1)
            printf ("  rank %d: images [%d, %d), %lld entries, match %.1f ms\n", r,
                ranks[r].stats.row0, ranks[r].stats.row1,
                (long long) ranks[r].stats.local_count, ranks[r].stats.match_ms);
          free (ranks[r].list);
        }
        free (ranks);
      }
    }

    /* a pair list (random, asymmetric), one rank and every device: == the single-GPU
     * pruned list == the full list restricted to the pairs */
    {
      GrMatcherPairs P = random_pairs (m, 0.4, 31 + c);
      int64_t np = 0;
      st = gr_matcher_match_rows_sparse_pairs (mt, d, k, off, m, 0, m, &P, 0.8f, &l, &np,
          NULL, err, sizeof err);
      CHECK (st == GR_OK, "single GPU, pruned: %s", err);
      GrMatch *pref = malloc (sizeof (GrMatch) * (size_t) (np + 1));
      memcpy (pref, l, sizeof (GrMatch) * (size_t) np);
      GrMatch *want = malloc (sizeof (GrMatch) * (size_t) (n1 + 1));
      const int64_t nw = restrict_to_pairs (ref, n1, off, m, &P, want);
      CHECK (same_list (pref, np, want, nw), "pruned (%lld) == restricted (%lld)",
          (long long) np, (long long) nw);
      if (dd) {
        int64_t nd = 0;
        st = gr_matcher_match_rows_sparse_pairs_device (mt, dd, k, off, m, 0, m, &P, 0.8f,
            &l, &nd, NULL, err, sizeof err);
        CHECK (st == GR_OK && same_list (l, nd, pref, np), "device form, pruned: %lld "
            "entries vs %lld (%s)", (long long) nd, (long long) np, err);
      }
      for (int ci = 0; ci < (R > 1 ? 2 : 1); ci++) {
        const int nr = ci ? R : 1;
        NcclRank *ranks = calloc ((size_t) nr, sizeof *ranks);
        nccl_ranks_run_pairs (nr, nr - 1, 1, d, k, off, m, &P, 0.8f, ranks);
        const int ok = ranks[nr - 1].st == GR_OK &&
            same_list (ranks[nr - 1].list, ranks[nr - 1].count, pref, np);
        CHECK (ok, "%d rank(s), pairs: %lld entries vs %lld (%s)", nr,
            (long long) ranks[nr - 1].count, (long long) np, ranks[nr - 1].err);
        printf ("%d rank(s), root %d, pair list of %lld: %lld entries, %s\n", nr,
            nr - 1, (long long) P.start[m], (long long) ranks[nr - 1].count,
            ok ? "identical" : "DIFFERENT");
        for (int r = 0; r < nr; r++)
          free (ranks[r].list);
        free (ranks);
      }
      free (want);
      free (pref);
      gr_matcher_pairs_clear (&P);
    }

    /* an invalid batch on the root (k = 0): every rank fails, none hangs */
    if (c == 0) {
      NcclRank *ranks = calloc ((size_t) R, sizeof *ranks);
      nccl_ranks_run (R, 0, 1, d, 0, off, m, 0.8f, ranks);
      for (int r = 0; r < R; r++) {
        CHECK (ranks[r].st == GR_ERR_INVALID, "bad batch, rank %d: status %d", r,
            ranks[r].st);
        free (ranks[r].list);
      }
      printf ("invalid batch: refused on all %d rank(s) (%s)\n", R, ranks[0].err);
      free (ranks);
    }

    /* a communicator of ncclCommInitAll over every device */
    if (c == 0 && R > 1) {
      ncclComm_t *comms = calloc ((size_t) R, sizeof *comms);
      int *devs = malloc (sizeof (int) * (size_t) R);
      for (int r = 0; r < R; r++)
        devs[r] = r;
      ncclResult_t nr = ncclCommInitAll (comms, R, devs);
      CHECK (nr == ncclSuccess, "ncclCommInitAll: %s", ncclGetErrorString (nr));
      if (nr == ncclSuccess) {
        CommRank *cr = calloc ((size_t) R, sizeof *cr);
        pthread_t *th = malloc (sizeof (pthread_t) * (size_t) R);
        for (int r = 0; r < R; r++) {
          cr[r].mn = gr_matcher_nccl_new_comm (comms[r], r, &st, cr[r].err,
              sizeof cr[r].err);
          CHECK (cr[r].mn, "new_comm rank %d: %s", r, cr[r].err);
          cr[r].desc = d;
          cr[r].off = off;
          cr[r].k = k;
          cr[r].m = m;
        }
        for (int r = 0; r < R && cr[r].mn; r++)
          pthread_create (&th[r], NULL, comm_thread, &cr[r]);
        for (int r = 0; r < R && cr[r].mn; r++)
          pthread_join (th[r], NULL);
        CHECK (cr[0].st == GR_OK && same_list (cr[0].list, cr[0].count, ref, n1),
            "ncclCommInitAll: %lld entries vs %lld (%s)", (long long) cr[0].count,
            (long long) n1, cr[0].err);
        printf ("ncclCommInitAll, %d ranks: %s\n", R, cr[0].st == GR_OK &&
            same_list (cr[0].list, cr[0].count, ref, n1) ? "identical" : "DIFFERENT");
        for (int r = 0; r < R; r++) {
          gr_matcher_nccl_free (cr[r].mn);
          free (cr[r].list);
          ncclCommDestroy (comms[r]);
        }
        free (cr);
        free (th);
      }
      free (comms);
      free (devs);
    }
    cudaFree (dd);
    free (ref);
    gr_matcher_free (mt);
    free (d);
    free (off);
  }
  return CHECK_DONE ();
}
