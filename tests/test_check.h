/* Minimal check macro for the plain-C kernel tests.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_TEST_CHECK_H
#define GR_TEST_CHECK_H
#include <stdio.h>

/* unused in tests that only skip in some builds (no GDAL, no CUDA) */
__attribute__ ((unused)) static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
      fprintf (stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf (stderr, __VA_ARGS__); fputc ('\n', stderr); } } while (0)
#define CHECK_DONE() (failures ? (fprintf (stderr, "%d check(s) failed\n", failures), 1) \
    : (printf ("all checks passed\n"), 0))
#endif
