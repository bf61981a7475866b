/* Internal to varifold.c: the pair sums, included once per precision with
 *   R       float or double: the pair arithmetic and the feature copies read
 *   SFX(x)  the function name suffix
 *   EXPNEG  exp(x) for x <= 0 in type R
 * Features are structure-of-arrays: component d of cell f at [d * F + f].
 * SPDX-License-Identifier: LGPL-2.1-or-later */

/* For every cell f of A: row[f] = sum_g K(f, g) over the cells g of B, and (when gc is
 * not NULL) gc[f] = sum_g dK/dc_f, gn[f] = sum_g dK/dn_f; sums in float64. */
static void
SFX (vf_rows) (size_t F, const R *restrict ca, const R *restrict na, size_t G,
    const R *restrict cb, const R *restrict nb, int D, int kind, double inv_s2,
    double *restrict row, double *restrict gc, double *restrict gn, int threads)
{
  const R k = (R) inv_s2;
#pragma omp parallel for schedule(static) num_threads(threads) if (F * G >= 65536)
  for (size_t f = 0; f < F; f++) {
    R cf[3] = { 0, 0, 0 }, nf[3] = { 0, 0, 0 };
    for (int d = 0; d < D; d++) {
      cf[d] = ca[d * F + f];
      nf[d] = kind ? na[d * F + f] : (R) 0;
    }
    const R nf2 = nf[0] * nf[0] + nf[1] * nf[1] + nf[2] * nf[2];
    const R nfl = (R) sqrt ((double) nf2);
    double s = 0, c0 = 0, c1 = 0, c2 = 0, n0 = 0, n1 = 0, n2 = 0;
    for (size_t g = 0; g < G; g++) {
      R dc[3] = { 0, 0, 0 }, ng[3] = { 0, 0, 0 };
      R r2 = 0;
      for (int d = 0; d < D; d++) {
        dc[d] = cf[d] - cb[d * G + g];
        r2 += dc[d] * dc[d];
        if (kind)
          ng[d] = nb[d * G + g];
      }
      R w = EXPNEG (-k * r2);
      R O = 1, dO[3] = { 0, 0, 0 };
      if (kind == 1) {            /* oriented: n_f . n_g */
        O = nf[0] * ng[0] + nf[1] * ng[1] + nf[2] * ng[2];
        for (int d = 0; d < 3; d++)
          dO[d] = ng[d];
      } else if (kind == 2) {     /* unoriented: (n_f . n_g)^2 / (|n_f| |n_g|) */
        R dot = nf[0] * ng[0] + nf[1] * ng[1] + nf[2] * ng[2];
        R ngl = (R) sqrt ((double) (ng[0] * ng[0] + ng[1] * ng[1] + ng[2] * ng[2]));
        R a = nfl * ngl;
        if (a > 0) {
          O = dot * dot / a;
          for (int d = 0; d < 3; d++)
            dO[d] = 2 * dot / a * ng[d] - O / nf2 * nf[d];
        } else {
          O = 0;
        }
      }
      R K = w * O;
      s += (double) K;
      if (gc) {
        R t = -2 * k * K;
        c0 += (double) (t * dc[0]);
        c1 += (double) (t * dc[1]);
        c2 += (double) (t * dc[2]);
        n0 += (double) (w * dO[0]);
        n1 += (double) (w * dO[1]);
        n2 += (double) (w * dO[2]);
      }
    }
    row[f] = s;
    if (gc) {
      double cs[3] = { c0, c1, c2 }, ns[3] = { n0, n1, n2 };
      for (int d = 0; d < D; d++) {
        gc[d * F + f] = cs[d];
        gn[d * F + f] = ns[d];
      }
    }
  }
}
