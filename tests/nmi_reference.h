/* Float64 reference for NMI, written the plainest way (full 65,536-bin histogram,
 * full scan) so it shares nothing with the kernels it checks.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_TEST_NMI_REFERENCE_H
#define GR_TEST_NMI_REFERENCE_H

#include "nmi_dense.h"

/* NMI of templ placed at (dx, dy) over control; *n_out = jointly valid pixels.
 * Returns NAN when n == 0, 1 when the joint entropy is 0. */
double ref_nmi_at (const GrImage8 *control, const GrImage8 *templ, int dx, int dy,
    long *n_out);

/* Deterministic xorshift generator for test data. */
uint32_t ref_rand (uint64_t *state);

/* Relative difference |a-b| / max(|b|, tiny), treating two NANs as equal (0). */
double ref_rel_diff (double a, double b);

#endif
