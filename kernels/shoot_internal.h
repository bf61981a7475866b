/* Internal helpers shared by shoot.c, shoot_batch.c and shoot_atlas.c.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_SHOOT_INTERNAL_H
#define GR_SHOOT_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* Monotonic wall time in seconds (the fits' run times). */
static inline double
gr_shoot_now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* True when every value is finite; else *bad = the index of the first that is not. */
static inline bool
gr_shoot_all_finite (const double *v, size_t count, size_t *bad)
{
  for (size_t i = 0; i < count; i++)
    if (!isfinite (v[i])) {
      *bad = i;
      return false;
    }
  return true;
}

#endif
