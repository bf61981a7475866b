/* Internal to shoot.c: the CPU pair kernels, included once per (precision, dimension)
 * with these macros defined:
 *   R         float or double: the type of the pair arithmetic and of the copies read
 *   D         2 or 3
 *   SFX(x)    the function name suffix, e.g. x##_f32_3
 *   EXPNEG(x) exp(x) for x <= 0 in type R
 * Pairs farther apart than r^2 / (2 sigma^2) > GR_SHOOT_CUTOFF (g < 9e-27) contribute 0,
 * which keeps every product away from denormals (slow on x86).
 * Arrays are structure-of-arrays, component d of point j at [d * n + j].  Sums over j
 * are accumulated in double (each pair's contribution is formed in R).  j = i is
 * included: its terms vanish where they carry q_i - q_j, and g_ii = 1 elsewhere.
 * SPDX-License-Identifier: LGPL-2.1-or-later */

/* Hp_i = sum_j g_ij p_j;  Hq_i = c sum_j g_ij (p_i.p_j)(q_i - q_j). */
static void
SFX (pair_forward) (size_t n, const R *restrict q, const R *restrict p, double k,
    double c, double *restrict hp, double *restrict hq, int threads)
{
  const R kr = (R) k;
#pragma omp parallel for schedule(static) num_threads(threads) if (n >= 384)
  for (size_t i = 0; i < n; i++) {
    R qi[D], pi[D];
    for (int d = 0; d < D; d++) {
      qi[d] = q[d * n + i];
      pi[d] = p[d * n + i];
    }
    double s0 = 0, s1 = 0, s2 = 0, t0 = 0, t1 = 0, t2 = 0;
#pragma omp simd reduction(+:s0,s1,s2,t0,t1,t2)
    for (size_t j = 0; j < n; j++) {
      R dq0 = qi[0] - q[j], dq1 = qi[1] - q[n + j];
      R p0 = p[j], p1 = p[n + j];
      R r2 = dq0 * dq0 + dq1 * dq1;
      R pp = pi[0] * p0 + pi[1] * p1;
#if D == 3
      R dq2 = qi[2] - q[2 * n + j];
      R p2 = p[2 * n + j];
      r2 += dq2 * dq2;
      pp += pi[2] * p2;
#endif
      R g = kr * r2 > (R) GR_SHOOT_CUTOFF ? (R) 0 : EXPNEG (-kr * r2);
      R gp = g * pp;
      s0 += (double) (g * p0);
      s1 += (double) (g * p1);
      t0 += (double) (gp * dq0);
      t1 += (double) (gp * dq1);
#if D == 3
      s2 += (double) (g * p2);
      t2 += (double) (gp * dq2);
#endif
    }
    hp[i] = s0;
    hp[n + i] = s1;
    hq[i] = c * t0;
    hq[n + i] = c * t1;
#if D == 3
    hp[2 * n + i] = s2;
    hq[2 * n + i] = c * t2;
#else
    (void) s2;
    (void) t2;
#endif
  }
}

/* The transposed Jacobian of the flow field F = (Hp, -Hq) applied to (a, b):
 *   ra = Hqp a - Hqq b = c sum_j g [(A - c P s) dq - P db]
 *   rb = Hpp a - Hpq b =   sum_j g [a_j - c s p_j]
 * with dq = q_i - q_j, db = b_i - b_j, A = a_i.p_j + a_j.p_i, P = p_i.p_j, s = dq.db. */
static void
SFX (pair_vjp) (size_t n, const R *restrict q, const R *restrict p, const R *restrict a,
    const R *restrict b, double k, double c, double *restrict ra, double *restrict rb,
    int threads)
{
  const R kr = (R) k, cr = (R) c;
#pragma omp parallel for schedule(static) num_threads(threads) if (n >= 384)
  for (size_t i = 0; i < n; i++) {
    R qi[D], pi[D], ai[D], bi[D];
    for (int d = 0; d < D; d++) {
      qi[d] = q[d * n + i];
      pi[d] = p[d * n + i];
      ai[d] = a[d * n + i];
      bi[d] = b[d * n + i];
    }
    double u0 = 0, u1 = 0, u2 = 0, v0 = 0, v1 = 0, v2 = 0;
#pragma omp simd reduction(+:u0,u1,u2,v0,v1,v2)
    for (size_t j = 0; j < n; j++) {
      R dq0 = qi[0] - q[j], dq1 = qi[1] - q[n + j];
      R p0 = p[j], p1 = p[n + j];
      R a0 = a[j], a1 = a[n + j];
      R db0 = bi[0] - b[j], db1 = bi[1] - b[n + j];
      R r2 = dq0 * dq0 + dq1 * dq1;
      R A = ai[0] * p0 + ai[1] * p1 + a0 * pi[0] + a1 * pi[1];
      R P = pi[0] * p0 + pi[1] * p1;
      R s = dq0 * db0 + dq1 * db1;
#if D == 3
      R dq2 = qi[2] - q[2 * n + j];
      R p2 = p[2 * n + j];
      R a2 = a[2 * n + j];
      R db2 = bi[2] - b[2 * n + j];
      r2 += dq2 * dq2;
      A += ai[2] * p2 + a2 * pi[2];
      P += pi[2] * p2;
      s += dq2 * db2;
#endif
      R g = kr * r2 > (R) GR_SHOOT_CUTOFF ? (R) 0 : EXPNEG (-kr * r2);
      R c1 = g * (A - cr * P * s);
      R c2 = g * P;
      R c4 = -cr * g * s;
      u0 += (double) (c1 * dq0 - c2 * db0);
      u1 += (double) (c1 * dq1 - c2 * db1);
      v0 += (double) (g * a0 + c4 * p0);
      v1 += (double) (g * a1 + c4 * p1);
#if D == 3
      u2 += (double) (c1 * dq2 - c2 * db2);
      v2 += (double) (g * a2 + c4 * p2);
#endif
    }
    ra[i] = c * u0;
    ra[n + i] = c * u1;
    rb[i] = v0;
    rb[n + i] = v1;
#if D == 3
    ra[2 * n + i] = c * u2;
    rb[2 * n + i] = v2;
#else
    (void) u2;
    (void) v2;
#endif
  }
}

/* Velocity at m free points x: v(x) = sum_l g(|x - q_l|) p_l. */
static void
SFX (pair_velocity) (size_t n, const R *restrict q, const R *restrict p, size_t m,
    const double *restrict x, double k, double *restrict v, int threads)
{
  const R kr = (R) k;
#pragma omp parallel for schedule(static) num_threads(threads) if (m * n >= 147456)
  for (size_t i = 0; i < m; i++) {
    R xi[D];
    for (int d = 0; d < D; d++)
      xi[d] = (R) x[d * m + i];
    double s0 = 0, s1 = 0, s2 = 0;
#pragma omp simd reduction(+:s0,s1,s2)
    for (size_t j = 0; j < n; j++) {
      R dq0 = xi[0] - q[j], dq1 = xi[1] - q[n + j];
      R r2 = dq0 * dq0 + dq1 * dq1;
#if D == 3
      R dq2 = xi[2] - q[2 * n + j];
      r2 += dq2 * dq2;
#endif
      R g = kr * r2 > (R) GR_SHOOT_CUTOFF ? (R) 0 : EXPNEG (-kr * r2);
      s0 += (double) (g * p[j]);
      s1 += (double) (g * p[n + j]);
#if D == 3
      s2 += (double) (g * p[2 * n + j]);
#endif
    }
    v[i] = s0;
    v[m + i] = s1;
#if D == 3
    v[2 * m + i] = s2;
#else
    (void) s2;
#endif
  }
}
