/* Corpus replay without libFuzzer: feeds every file named on the command line (or found
 * in a folder named there, not recursing) to the target's LLVMFuzzerTestOneInput, once
 * each, in name order.  Built with the project's compiler and ASan/UBSan, so CI replays
 * the seed corpora and the crash reproducers on every change (meson suite 'fuzz').
 * A finding aborts (sanitizer report or FUZZ ASSERT); a clean run prints the count.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

static int
run_file (const char *path)
{
  FILE *f = fopen (path, "rb");
  if (!f) {
    perror (path);
    return -1;
  }
  size_t cap = 4096, len = 0;
  uint8_t *buf = malloc (cap);
  for (;;) {
    if (!buf) {
      fclose (f);
      return -1;
    }
    size_t r = fread (buf + len, 1, cap - len, f);
    len += r;
    if (len < cap)
      break;
    cap *= 2;
    buf = realloc (buf, cap);
  }
  fclose (f);
  /* an exact-size copy, so ASan sees reads past the end of the input */
  uint8_t *exact = malloc (len ? len : 1);
  memcpy (exact, buf, len);
  free (buf);
  fprintf (stderr, "replay %s (%zu bytes)\n", path, len);
  LLVMFuzzerTestOneInput (exact, len);
  free (exact);
  return 0;
}

static int
cmp (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

int
main (int argc, char **argv)
{
  int count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat (argv[i], &st) != 0) {
      perror (argv[i]);
      return 1;
    }
    if (!S_ISDIR (st.st_mode)) {
      if (run_file (argv[i]) != 0)
        return 1;
      count++;
      continue;
    }
    DIR *d = opendir (argv[i]);
    if (!d) {
      perror (argv[i]);
      return 1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir (d))) {
      if (e->d_name[0] == '.')
        continue;
      names = realloc (names, (n + 1) * sizeof *names);
      names[n] = malloc (strlen (argv[i]) + strlen (e->d_name) + 2);
      sprintf (names[n], "%s/%s", argv[i], e->d_name);
      n++;
    }
    closedir (d);
    qsort (names, n, sizeof *names, cmp);
    for (size_t k = 0; k < n; k++) {
      if (stat (names[k], &st) == 0 && S_ISREG (st.st_mode)) {
        if (run_file (names[k]) != 0)
          return 1;
        count++;
      }
      free (names[k]);
    }
    free (names);
  }
  if (count == 0) {
    fprintf (stderr, "no corpus files given\n");
    return 1;
  }
  printf ("replayed %d input(s): no finding\n", count);
  return 0;
}
