/* Shared helpers of the fuzz targets (libFuzzer entry point LLVMFuzzerTestOneInput;
 * the same file builds with clang -fsanitize=fuzzer or with replay_main.c).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_FUZZ_COMMON_H
#define GR_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

static char fuzz_dir[256];

/* Removes the private folder and what the targets wrote into it (names are ours and
 * flat: no recursion needed). */
static __attribute__ ((unused)) void
fuzz_tmpdir_remove (void)
{
  static const char *names[] = { "in.png", "in.jpg", "in.tif", "in.img", "in.pgw",
    "in.wld", "in.tfw", "in.aux.xml", "in.tif.aux.xml", "in.img.aux.xml", "in.png.aux.xml",
    "in.jpg.aux.xml", "in.ovr", "in.tif.ovr", "in.tif.msk", "in.img.msk", NULL };
  char p[600];
  for (int i = 0; names[i]; i++) {
    snprintf (p, sizeof p, "%s/%s", fuzz_dir, names[i]);
    unlink (p);
  }
  rmdir (fuzz_dir);
}

/* A private folder for the files the file-based loaders read, made once per process
 * (in /dev/shm when it exists: no disk traffic), removed at exit. */
static __attribute__ ((unused)) const char *
fuzz_tmpdir (void)
{
  char *dir = fuzz_dir;
  if (!dir[0]) {
    const char *base = access ("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf (dir, sizeof fuzz_dir, "%s/georeg-fuzz-XXXXXX", base);
    if (!mkdtemp (dir)) {
      perror ("mkdtemp");
      abort ();
    }
    atexit (fuzz_tmpdir_remove);
  }
  return dir;
}

/* Writes data to dir/name and returns the path (static buffer per slot). */
static __attribute__ ((unused)) const char *
fuzz_write_file (int slot, const char *name, const uint8_t * data, size_t size)
{
  static char paths[4][512];
  snprintf (paths[slot], sizeof paths[slot], "%s/%s", fuzz_tmpdir (), name);
  FILE *f = fopen (paths[slot], "wb");
  if (!f || (size && fwrite (data, 1, size, f) != size) || fclose (f) != 0) {
    perror (paths[slot]);
    abort ();
  }
  return paths[slot];
}

/* An oracle failed: a wrong answer, not a crash: make it one so the fuzzer keeps it. */
#define FUZZ_ASSERT(cond, ...) do { if (!(cond)) { \
      fprintf (stderr, "FUZZ ASSERT %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf (stderr, __VA_ARGS__); fputc ('\n', stderr); abort (); } } while (0)

#endif
