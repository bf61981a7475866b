/* Shared by the benchmarks (tests/bench_*.c): the median of repeated timings.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_BENCH_UTIL_H
#define GR_BENCH_UTIL_H

#include <stdlib.h>

static inline int
bench_cmp_double (const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* sorts v in place */
static inline double
median (double *v, int n)
{
  qsort (v, n, sizeof *v, bench_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
