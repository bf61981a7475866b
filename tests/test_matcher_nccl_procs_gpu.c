/* The NCCL matcher's communicator set up from a unique id across separate processes
 * (issue 16, item 3; docs/multi-gpu.md), as a launcher on several hosts would do it:
 * this program starts R copies of itself (posix_spawn, so no CUDA or NCCL state is
 * inherited), one rank per GPU (R = every GPU of the host, at most 8; 1 on a
 * one-GPU host), and they join through the id, passed two ways:
 *   env:  the launcher (this parent) makes the id (ncclGetUniqueId) and hands it to
 *         every rank as text in GEOREG_NCCL_ID;
 *   file: rank 0 makes the id and writes it as text to a file (written whole, then
 *         renamed into place); the other ranks wait for the file and read it.
 * Each rank calls gr_matcher_nccl_new (ncclCommInitRank) and the sparse matcher; the
 * root (rank 0, the only one with the batch: the others pass nothing) writes its list
 * to a file, which must equal the single-GPU matcher's list, entry for entry.  Then a
 * pair list (pair pruning) through the same processes: == the single-GPU pruned list.
 * Every child runs under a deadline (killed past it): no hang.  GEOREG_TEST_QUICK=1
 * (the compute-sanitizer runs of tools/gpu.sh): one rank, the id in the environment.
 * Exit 0 pass, 1 fail, 77 skip (no usable CUDA device).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "matcher_nccl.h"
#include "matcher_batch_gen.h"
#include "matcher_pairs_gen.h"
#include "test_check.h"

extern char **environ;

#define M 29
#define K 64
#define DEADLINE_S 120

static float *
the_batch (int64_t **off)
{
  return mbg_batch (M, 200, 150, K, 41, off);
}

static GrMatcherPairs
the_pairs (void)
{
  return random_pairs (M, 0.35, 43);
}

/* ---- a rank (child process) */

/* waits for rank 0's file (at most ID_WAIT_S, under the launcher's deadline), then
 * reads it; on failure says which of the two went wrong */
#define ID_WAIT_S (DEADLINE_S / 2)
static bool
read_id_file (int rank, const char *path, unsigned char id[GR_NCCL_ID_BYTES])
{
  const time_t t0 = time (NULL);
  while (time (NULL) - t0 <= ID_WAIT_S) {
    FILE *f = fopen (path, "r");
    if (f) {
      char hex[2 * GR_NCCL_ID_BYTES + 2] = "";
      const bool got = fgets (hex, sizeof hex, f) != NULL;
      fclose (f);
      if (got && gr_nccl_id_from_hex (hex, id))
        return true;
      fprintf (stderr, "rank %d: %s after %lld s holds no id (%zu characters: \"%.16s"
          "...\")\n", rank, path, (long long) (time (NULL) - t0), strlen (hex), hex);
      return false;
    }
    struct timespec ts = { 0, 50000000 };
    nanosleep (&ts, NULL);
  }
  fprintf (stderr, "rank %d: no %s after %d s (rank 0 never published it)\n", rank, path,
      ID_WAIT_S);
  return false;
}

static int
rank_main (int rank, int nranks, int device)
{
  unsigned char id[GR_NCCL_ID_BYTES];
  char err[256] = "";
  const char *idtext = getenv ("GEOREG_NCCL_ID");
  const char *idfile = getenv ("GEOREG_NCCL_ID_FILE");
  if (idtext) {
    if (!gr_nccl_id_from_hex (idtext, id)) {
      fprintf (stderr, "rank %d: bad GEOREG_NCCL_ID\n", rank);
      return 1;
    }
  } else if (idfile && rank == 0) {
    /* rank 0 makes the id and publishes it whole (rename is atomic) */
    char hex[2 * GR_NCCL_ID_BYTES + 1], tmp[4096];
    if (gr_nccl_unique_id (id, err, sizeof err) != GR_OK) {
      fprintf (stderr, "rank 0: %s\n", err);
      return 1;
    }
    gr_nccl_id_to_hex (id, hex);
    snprintf (tmp, sizeof tmp, "%s.tmp", idfile);
    FILE *f = fopen (tmp, "w");
    if (!f || fprintf (f, "%s\n", hex) < 0 || fclose (f) != 0 || rename (tmp, idfile) != 0) {
      fprintf (stderr, "rank 0: cannot write %s: %s\n", idfile, strerror (errno));
      return 1;
    }
    printf ("rank 0: published the id in %s\n", idfile);
    fflush (stdout);
  } else if (idfile) {
    if (!read_id_file (rank, idfile, id))
      return 1;
  } else {
    fprintf (stderr, "rank %d: neither GEOREG_NCCL_ID nor GEOREG_NCCL_ID_FILE\n", rank);
    return 1;
  }
  GrStatus st;
  GrMatcherNccl *mn = gr_matcher_nccl_new (nranks, rank, id, device, &st, err, sizeof err);
  if (!mn) {
    fprintf (stderr, "rank %d: %s\n", rank, err);
    return 1;
  }
  int64_t *off = NULL;
  float *d = NULL;
  GrMatcherPairs P = { 0 };
  if (rank == 0) {              /* only the root has the batch */
    d = the_batch (&off);
    P = the_pairs ();
  }
  int rc = 0;
  for (int pass = 0; pass < 2 && rc == 0; pass++) {
    const GrMatch *l;
    int64_t n = 0;
    GrMatchNcclStats s;
    st = gr_matcher_nccl_match_all_sparse_pairs (mn, 0, d, rank == 0 ? K : 0, off,
        rank == 0 ? M : 0, pass && rank == 0 ? &P : NULL, 0.8f, &l, &n, &s, err,
        sizeof err);
    if (st != GR_OK) {
      fprintf (stderr, "rank %d, pass %d: %s\n", rank, pass, err);
      rc = 1;
      break;
    }
    printf ("rank %d of %d (device %d), pass %d: images [%d, %d), %lld local entries\n",
        rank, nranks, device, pass, s.row0, s.row1, (long long) s.local_count);
    if (rank == 0) {
      char path[4096];
      snprintf (path, sizeof path, "%s.%d", getenv ("GEOREG_NCCL_OUT"), pass);
      FILE *f = fopen (path, "wb");
      if (!f || (n > 0 && fwrite (l, sizeof (GrMatch), (size_t) n, f) != (size_t) n) ||
          fclose (f) != 0) {
        fprintf (stderr, "rank 0: cannot write %s\n", path);
        rc = 1;
      }
    }
  }
  gr_matcher_nccl_free (mn);
  gr_matcher_pairs_clear (&P);
  free (d);
  free (off);
  return rc;
}

/* ---- the launcher (parent) */

static GrMatch *
read_list (const char *path, int64_t *n)
{
  FILE *f = fopen (path, "rb");
  *n = -1;
  if (!f)
    return NULL;
  fseek (f, 0, SEEK_END);
  const long bytes = ftell (f);
  fseek (f, 0, SEEK_SET);
  GrMatch *l = malloc ((size_t) bytes + sizeof (GrMatch));
  if (l && fread (l, 1, (size_t) bytes, f) == (size_t) bytes)
    *n = bytes / (long) sizeof (GrMatch);
  fclose (f);
  return l;
}

/* R ranks as processes; idmode 0: the id in the environment, 1: through a file made
 * by rank 0.  true when every rank exited 0 in time. */
static bool
launch (int R, int idmode, const char *dir)
{
  char idhex[2 * GR_NCCL_ID_BYTES + 1] = "", err[256] = "";
  if (idmode == 0) {
    unsigned char id[GR_NCCL_ID_BYTES];
    if (gr_nccl_unique_id (id, err, sizeof err) != GR_OK) {
      CHECK (0, "ncclGetUniqueId: %s", err);
      return false;
    }
    gr_nccl_id_to_hex (id, idhex);
  }
  pid_t *pid = calloc ((size_t) R, sizeof (pid_t));
  bool ok = true;
  for (int r = 0; r < R; r++) {
    char e_rank[64], e_n[64], e_dev[64], e_id[300], e_file[4200], e_out[4200];
    snprintf (e_rank, sizeof e_rank, "GEOREG_NCCL_RANK=%d", r);
    snprintf (e_n, sizeof e_n, "GEOREG_NCCL_NRANKS=%d", R);
    snprintf (e_dev, sizeof e_dev, "GEOREG_NCCL_DEVICE=%d", r);
    snprintf (e_id, sizeof e_id, "GEOREG_NCCL_ID=%s", idhex);
    snprintf (e_file, sizeof e_file, "GEOREG_NCCL_ID_FILE=%s/id.txt", dir);
    snprintf (e_out, sizeof e_out, "GEOREG_NCCL_OUT=%s/list", dir);
    int ne = 0;
    while (environ[ne])
      ne++;
    char **env = calloc ((size_t) ne + 8, sizeof (char *));
    int j = 0;
    for (int i = 0; i < ne; i++)
      if (strncmp (environ[i], "GEOREG_NCCL_", 12) != 0)
        env[j++] = environ[i];
    env[j++] = e_rank;
    env[j++] = e_n;
    env[j++] = e_dev;
    env[j++] = idmode == 0 ? e_id : e_file;
    env[j++] = e_out;
    char *argv[] = { "test_matcher_nccl_procs_gpu", NULL };
    const int e = posix_spawn (&pid[r], "/proc/self/exe", NULL, NULL, argv, env);
    free (env);
    if (e != 0) {
      CHECK (0, "posix_spawn rank %d: %s", r, strerror (e));
      pid[r] = 0;
      ok = false;
    }
  }
  /* wait, under the deadline: a rank that never joins must not hang the test */
  const time_t end = time (NULL) + DEADLINE_S;
  int left = 0;
  for (int r = 0; r < R; r++)
    left += pid[r] > 0;
  while (left > 0) {
    for (int r = 0; r < R; r++) {
      if (pid[r] <= 0)
        continue;
      int status;
      const pid_t w = waitpid (pid[r], &status, WNOHANG);
      if (w == pid[r]) {
        if (!WIFEXITED (status) || WEXITSTATUS (status) != 0) {
          CHECK (0, "%s id, rank %d of %d: exit status %d", idmode ? "file" : "env", r,
              R, WIFEXITED (status) ? WEXITSTATUS (status) : -1);
          ok = false;
        }
        pid[r] = 0;
        left--;
      }
    }
    if (left > 0 && time (NULL) > end) {
      for (int r = 0; r < R; r++)
        if (pid[r] > 0) {
          kill (pid[r], SIGKILL);
          waitpid (pid[r], NULL, 0);
          CHECK (0, "%s id, rank %d of %d: still running after %d s, killed",
              idmode ? "file" : "env", r, R, DEADLINE_S);
          pid[r] = 0;
        }
      ok = false;
      break;
    }
    struct timespec ts = { 0, 20000000 };
    nanosleep (&ts, NULL);
  }
  free (pid);
  return ok;
}

int
main (void)
{
  const char *rank = getenv ("GEOREG_NCCL_RANK");
  if (rank)
    return rank_main (atoi (rank), atoi (getenv ("GEOREG_NCCL_NRANKS")),
        atoi (getenv ("GEOREG_NCCL_DEVICE")));
  const int ndev = gr_cuda_device_count ();
  if (ndev <= 0) {
    printf ("SKIP: no usable CUDA device\n");
    return 77;
  }
  const char *q = getenv ("GEOREG_TEST_QUICK");
  const bool quick = q && atoi (q) == 1;
  int R = quick ? 1 : ndev < 8 ? ndev : 8;
  const char *renv = getenv ("GEOREG_NCCL_RANKS");
  if (renv && atoi (renv) > 0 && atoi (renv) < R)
    R = atoi (renv);
  /* the references: the single-GPU lists (full and pruned) */
  int64_t *off;
  float *d = the_batch (&off);
  GrMatcherPairs P = the_pairs ();
  char err[256] = "";
  GrStatus st;
  GrMatcher *mt = gr_matcher_new (GR_BACKEND_CUDA, 0, &st, err, sizeof err);
  CHECK (mt, "CUDA matcher: %s", err);
  if (!mt)
    return CHECK_DONE ();
  GrMatch *ref[2];
  int64_t nref[2];
  for (int pass = 0; pass < 2; pass++) {
    const GrMatch *l;
    st = gr_matcher_match_rows_sparse_pairs (mt, d, K, off, M, 0, M, pass ? &P : NULL,
        0.8f, &l, &nref[pass], NULL, err, sizeof err);
    CHECK (st == GR_OK, "single GPU: %s", err);
    ref[pass] = malloc (sizeof (GrMatch) * (size_t) (nref[pass] + 1));
    memcpy (ref[pass], l, sizeof (GrMatch) * (size_t) nref[pass]);
  }
  gr_matcher_free (mt);
  printf ("%d CUDA device(s): %d rank process(es); single GPU: %lld entries, %lld with "
      "the pair list\n", ndev, R, (long long) nref[0], (long long) nref[1]);
  for (int idmode = 0; idmode < (quick ? 1 : 2); idmode++) {
    char dir[] = "/tmp/georeg-nccl-XXXXXX";
    if (!mkdtemp (dir)) {
      CHECK (0, "mkdtemp: %s", strerror (errno));
      break;
    }
    const bool ok = launch (R, idmode, dir);
    for (int pass = 0; ok && pass < 2; pass++) {
      char path[64];
      snprintf (path, sizeof path, "%s/list.%d", dir, pass);
      int64_t n;
      GrMatch *l = read_list (path, &n);
      const bool same = l && n == nref[pass] &&
          (n == 0 || memcmp (l, ref[pass], sizeof (GrMatch) * (size_t) n) == 0);
      CHECK (same, "%s id, %d processes, %s: %lld entries vs %lld on one GPU",
          idmode ? "file" : "env", R, pass ? "pair list" : "every pair", (long long) n,
          (long long) nref[pass]);
      printf ("%d process(es), id via %s, %s: %lld entries, %s\n", R,
          idmode ? "a file by rank 0" : "the environment", pass ? "pair list" :
          "every pair", (long long) n, same ? "identical" : "DIFFERENT");
      free (l);
      unlink (path);
    }
    char p2[64];
    snprintf (p2, sizeof p2, "%s/id.txt", dir);
    unlink (p2);
    rmdir (dir);
  }
  free (ref[0]);
  free (ref[1]);
  gr_matcher_pairs_clear (&P);
  free (d);
  free (off);
  return CHECK_DONE ();
}
