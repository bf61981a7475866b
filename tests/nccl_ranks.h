/* Runs the NCCL matcher with R ranks as threads of this process, one per CUDA device
 * 0 .. R-1, joined through a unique id as a launcher would hand it out (the test and
 * the benchmark of issue 16; docs/multi-gpu.md).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_NCCL_RANKS_H
#define GR_NCCL_RANKS_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "matcher_nccl.h"

typedef struct {
  int R, rank, root, reps;
  const unsigned char *id;
  const float *desc;
  int k, m;
  const int64_t *off;
  float ratio;
  const GrMatcherPairs *pairs;  /* the root's pair list, or NULL */
  pthread_barrier_t *bar;
  /* out */
  GrStatus st;
  char err[256];
  GrMatch *list;                /* the last call's list (a copy), count entries */
  int64_t count;
  double best_ms;               /* the fastest of the reps calls, barrier to return */
  GrMatchNcclStats stats;
} NcclRank;

static double
nr_now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void *
nr_thread (void *arg)
{
  NcclRank *t = arg;
  GrMatcherNccl *mn = gr_matcher_nccl_new (t->R, t->rank, t->id, t->rank, &t->st, t->err,
      sizeof t->err);
  /* a rank that could not join still meets the others at the barrier */
  pthread_barrier_wait (t->bar);
  if (!mn)
    return NULL;
  t->best_ms = 1e300;
  for (int r = 0; r < t->reps; r++) {
    pthread_barrier_wait (t->bar);
    const double t0 = nr_now_ms ();
    const GrMatch *l;
    int64_t c;
    t->st = gr_matcher_nccl_match_all_sparse_pairs (mn, t->root, t->desc, t->k, t->off,
        t->m, t->pairs, t->ratio, &l, &c, &t->stats, t->err, sizeof t->err);
    const double ms = nr_now_ms () - t0;
    if (ms < t->best_ms)
      t->best_ms = ms;
    if (t->st != GR_OK)
      break;
    if (r == t->reps - 1) {
      t->list = malloc (sizeof (GrMatch) * (size_t) (c > 0 ? c : 1));
      memcpy (t->list, l, sizeof (GrMatch) * (size_t) c);
      t->count = c;
    }
  }
  gr_matcher_nccl_free (mn);
  return NULL;
}

/* R ranks over devices 0 .. R-1; the root's batch is (desc, k, off, m, ratio, pairs:
 * NULL for every pair); the other ranks pass nothing (NULL, 0).  ranks[] receives each
 * rank's outcome. */
static inline void
nccl_ranks_run_pairs (int R, int root, int reps, const float *desc, int k,
    const int64_t *off, int m, const GrMatcherPairs *pairs, float ratio, NcclRank *ranks)
{
  unsigned char id[GR_NCCL_ID_BYTES];
  char err[256] = "";
  memset (ranks, 0, sizeof (NcclRank) * (size_t) R);
  if (gr_nccl_unique_id (id, err, sizeof err) != GR_OK) {
    for (int r = 0; r < R; r++) {
      ranks[r].st = GR_ERR_CUDA;
      snprintf (ranks[r].err, sizeof ranks[r].err, "%s", err);
    }
    return;
  }
  /* the id crosses as text, as a launcher would pass it */
  char hex[2 * GR_NCCL_ID_BYTES + 1];
  unsigned char id2[GR_NCCL_ID_BYTES];
  gr_nccl_id_to_hex (id, hex);
  if (!gr_nccl_id_from_hex (hex, id2) || memcmp (id, id2, sizeof id) != 0)
    fprintf (stderr, "unique id text round trip failed\n");
  pthread_barrier_t bar;
  pthread_barrier_init (&bar, NULL, (unsigned) R);
  pthread_t *th = malloc (sizeof (pthread_t) * (size_t) R);
  for (int r = 0; r < R; r++) {
    NcclRank *t = &ranks[r];
    t->R = R;
    t->rank = r;
    t->root = root;
    t->reps = reps;
    t->id = id2;
    t->bar = &bar;
    t->desc = r == root ? desc : NULL;
    t->off = r == root ? off : NULL;
    t->k = r == root ? k : 0;
    t->m = r == root ? m : 0;
    t->ratio = r == root ? ratio : 0.f;
    t->pairs = r == root ? pairs : NULL;
    pthread_create (&th[r], NULL, nr_thread, t);
  }
  for (int r = 0; r < R; r++)
    pthread_join (th[r], NULL);
  pthread_barrier_destroy (&bar);
  free (th);
}

static inline void
nccl_ranks_run (int R, int root, int reps, const float *desc, int k, const int64_t *off,
    int m, float ratio, NcclRank *ranks)
{
  nccl_ranks_run_pairs (R, root, reps, desc, k, off, m, NULL, ratio, ranks);
}
#endif
