/* Benchmark of the dense NMI search: the seed experiment.  A 512x256 template over
 * controls 527..991 x 383 (2,048 .. 61,440 translations), masks 100% and 50% jointly
 * valid (random blotchy masks on template and control), CPU and CUDA backends.
 *
 *   bench_nmi_dense [out.json]
 *
 * Environment (all optional):
 *   GEOREG_BENCH_WIDTHS    control widths, comma separated (527,591,655,783,991)
 *   GEOREG_BENCH_CONTENT   terrain,noise,aukerman (default terrain; aukerman needs
 *                          GEOREG_DATA): what the images hold
 *   GEOREG_BENCH_CPU       all | largest | smallest | none (default all)
 *   GEOREG_BENCH_CPU_REPS  CPU repetitions (default 3; 1 above 20,000 positions)
 *   GEOREG_BENCH_REPS      CUDA repetitions after 3 warm-up runs (default 20)
 *   GEOREG_BENCH_VARIANTS  CUDA kernel variants to time, e.g. 0,1,2,3 (default: the
 *                          built-in default only); see kernels/nmi_dense_cuda.cu
 *   GEOREG_BENCH_THREADS   CPU threads (default: OpenMP's)
 * CUDA times: wall time of gr_nmi_dense_run (template upload, kernels, score map and
 * counts copied back), and the kernels alone from CUDA events (internal hook).
 * Increments = the sum over translations of the jointly valid pixel counts.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nmi_dense.h"
#include "nmi_reference.h"
#include "raster.h"
#include "bench_util.h"

#if GR_HAVE_CUDA
/* internal hook of kernels/nmi_dense_cuda.cu (not public API) */
extern double gr_nmi_dense_cuda_last_kernel_ms (void);
#endif

#define TW 512
#define TH 256
#define CH 383

typedef struct {
  int positions;
  const char *content;
  int mask_pct;            /* 100 or 50 (target jointly valid) */
  double valid_pct;        /* measured */
  const char *backend;
  int variant;             /* -1 = default / n.a. */
  int reps;
  double med_ms, min_ms, kernel_ms;
  double pos_per_s, gincr_per_s;
  double max_rel_vs_cpu;   /* CUDA rows: vs the CPU backend on the same inputs, or -1 */
} Row;

static Row rows[512];
static int nrows;

static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int
parse_list (const char *env, const char *def, int *out, int max)
{
  const char *s = getenv (env);
  if (!s || !*s)
    s = def;
  int n = 0;
  while (*s && n < max) {
    char *end;
    long v = strtol (s, &end, 10);
    if (end == s)
      break;
    out[n++] = (int) v;
    s = *end ? end + 1 : end;
  }
  return n;
}

static void
smooth_field (float *f, int w, int h, int cell, uint64_t *rng)
{
  const int gw = w / cell + 2, gh = h / cell + 2;
  float *g = malloc (sizeof (float) * gw * gh);
  for (int i = 0; i < gw * gh; i++)
    g[i] = (ref_rand (rng) & 0xFFFF) / 65535.0f;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      const float fx = (float) x / cell, fy = (float) y / cell;
      const int ix = (int) fx, iy = (int) fy;
      const float ax = fx - ix, ay = fy - iy;
      const float v0 = g[iy * gw + ix] * (1 - ax) + g[iy * gw + ix + 1] * ax;
      const float v1 = g[(iy + 1) * gw + ix] * (1 - ax) + g[(iy + 1) * gw + ix + 1] * ax;
      f[y * w + x] = v0 * (1 - ay) + v1 * ay;
    }
  free (g);
}

/* a blotchy mask with about pct % valid */
static void
blotchy_mask (uint8_t *m, int w, int h, double pct, uint64_t *rng)
{
  float *f = malloc (sizeof (float) * w * h);
  smooth_field (f, w, h, 24, rng);
  /* threshold at the pct-th percentile of the field */
  float *sorted = malloc (sizeof (float) * w * h);
  memcpy (sorted, f, sizeof (float) * w * h);
  int lo = 0, hi = w * h - 1, k = (int) (pct / 100.0 * (w * h - 1));
  while (lo < hi) {                      /* quickselect */
    const float piv = sorted[(lo + hi) / 2];
    int i = lo, j = hi;
    while (i <= j) {
      while (sorted[i] < piv) i++;
      while (sorted[j] > piv) j--;
      if (i <= j) {
        float t = sorted[i];
        sorted[i] = sorted[j];
        sorted[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  const float th = sorted[k];
  for (int i = 0; i < w * h; i++)
    m[i] = f[i] <= th;
  free (sorted);
  free (f);
}

/* The images of one content kind: a control of width cw (x 383) and the 512x256
 * template cut from it at (tx, 60) with another tone curve and noise. */
static bool
make_images (const char *content, int cw, uint8_t **ctl, uint8_t **tpl, uint64_t *rng)
{
  *ctl = malloc ((size_t) cw * CH);
  *tpl = malloc ((size_t) TW * TH);
  if (!strcmp (content, "noise")) {
    for (int i = 0; i < cw * CH; i++)
      (*ctl)[i] = (uint8_t) ref_rand (rng);
    for (int i = 0; i < TW * TH; i++)
      (*tpl)[i] = (uint8_t) ref_rand (rng);
    return true;
  }
  if (!strcmp (content, "aukerman")) {
    const char *dir = getenv ("GEOREG_DATA");
    if (!dir || !*dir)
      return false;
    char path[4096], err[512];
    snprintf (path, sizeof path, "%s/aukerman.png", dir);
    GrRaster r;
    if (gr_raster_load (path, 0, &r, err, sizeof err) != GR_OK) {
      fprintf (stderr, "aukerman: %s\n", err);
      return false;
    }
    if (r.plane.width < cw + 40 || r.plane.height < CH + 200) {
      gr_raster_clear (&r);
      return false;
    }
    for (int y = 0; y < CH; y++)
      for (int x = 0; x < cw; x++) {
        float v = r.plane.data[(size_t) (y + 200) * r.plane.stride + x + 40];
        (*ctl)[y * cw + x] = (uint8_t) (v < 0 ? 0 : v > 255 ? 255 : lrintf (v));
      }
    gr_raster_clear (&r);
  } else {                               /* terrain: smooth field + noise */
    float *f = malloc (sizeof (float) * cw * CH);
    smooth_field (f, cw, CH, 29, rng);
    for (int i = 0; i < cw * CH; i++) {
      int v = (int) (f[i] * 220.0f) + (int) (ref_rand (rng) % 36);
      (*ctl)[i] = (uint8_t) (v > 255 ? 255 : v);
    }
    free (f);
  }
  const int tx = (cw - TW) / 3, ty = 60;
  for (int y = 0; y < TH; y++)
    for (int x = 0; x < TW; x++) {
      const double v = (*ctl)[(ty + y) * cw + tx + x] / 255.0;
      int o = (int) lrint (255.0 * pow (v, 0.8)) + (int) (ref_rand (rng) % 11) - 5;
      (*tpl)[y * TW + x] = (uint8_t) (o < 0 ? 0 : o > 255 ? 255 : o);
    }
  return true;
}

/* Times one backend (and variant) on one input; fills a Row, returns false on error.
 * scores_out (may be NULL) receives the scores of the last run. */
static bool
time_backend (GrBackend be, int variant, const GrImage8 *ci, const GrImage8 *ti, GrRegion reg,
    int reps, int warmup, Row *row, double *scores_out)
{
  char err[512] = "", vbuf[16];
  GrStatus st;
  if (variant >= 0) {
    snprintf (vbuf, sizeof vbuf, "%d", variant);
    setenv ("GEOREG_NMI_CUDA_VARIANT", vbuf, 1);
  } else {
    unsetenv ("GEOREG_NMI_CUDA_VARIANT");
  }
  GrNmiDense *nmi = gr_nmi_dense_new (be, 0, &st, err, sizeof err);
  if (!nmi) {
    fprintf (stderr, "%s engine: %s\n", gr_backend_name (be), err);
    return false;
  }
  const char *thr = getenv ("GEOREG_BENCH_THREADS");
  if (thr && *thr)
    gr_nmi_dense_set_threads (nmi, atoi (thr));
  if (gr_nmi_dense_set_control (nmi, ci, err, sizeof err) != GR_OK) {
    fprintf (stderr, "set_control: %s\n", err);
    gr_nmi_dense_free (nmi);
    return false;
  }
  const long n = (long) (reg.x1 - reg.x0) * (reg.y1 - reg.y0);
  double *s = malloc (sizeof (double) * n);
  int32_t *v = malloc (sizeof (int32_t) * n);
  double *t = malloc (sizeof (double) * (reps + 1)), *tk = malloc (sizeof (double) * (reps + 1));
  bool ok = true;
  for (int i = 0; i < warmup + reps && ok; i++) {
    const double t0 = now_ms ();
    ok = gr_nmi_dense_run (nmi, ti, reg, 1, s, v, err, sizeof err) == GR_OK;
    const double t1 = now_ms ();
    if (!ok)
      fprintf (stderr, "run: %s\n", err);
    if (i >= warmup) {
      t[i - warmup] = t1 - t0;
      tk[i - warmup] = -1.0;
#if GR_HAVE_CUDA
      if (be == GR_BACKEND_CUDA)
        tk[i - warmup] = gr_nmi_dense_cuda_last_kernel_ms ();
#endif
    }
  }
  if (ok) {
    double incr = 0;
    for (long i = 0; i < n; i++)
      incr += v[i];
    row->positions = (int) n;
    row->valid_pct = 100.0 * incr / ((double) n * TW * TH);
    row->backend = gr_backend_name (be);
    row->variant = variant;
    row->reps = reps;
    double mn = t[0];
    for (int i = 1; i < reps; i++)
      mn = t[i] < mn ? t[i] : mn;
    row->min_ms = mn;
    row->med_ms = median (t, reps);
    row->kernel_ms = tk[0] >= 0 ? median (tk, reps) : -1.0;
    row->pos_per_s = n / (row->med_ms * 1e-3);
    row->gincr_per_s = incr / (row->med_ms * 1e-3) * 1e-9;
    row->max_rel_vs_cpu = -1.0;
    if (scores_out)
      memcpy (scores_out, s, sizeof (double) * n);
  }
  free (s);
  free (v);
  free (t);
  free (tk);
  gr_nmi_dense_free (nmi);
  return ok;
}

static void
print_row (const Row *r)
{
  char var[16] = "-", kern[16] = "-", rel[16] = "-";
  if (r->variant >= 0)
    snprintf (var, sizeof var, "%d", r->variant);
  if (r->kernel_ms >= 0)
    snprintf (kern, sizeof kern, "%.3f", r->kernel_ms);
  if (r->max_rel_vs_cpu >= 0)
    snprintf (rel, sizeof rel, "%.1e", r->max_rel_vs_cpu);
  printf ("%9d %-9s %4d%% %6.1f%% %-5s %3s %4d %11.3f %10.3f %12.0f %9.2f %9s\n",
      r->positions, r->content, r->mask_pct, r->valid_pct, r->backend, var, r->reps,
      r->med_ms, strcmp (kern, "-") ? r->kernel_ms : NAN, r->pos_per_s, r->gincr_per_s, rel);
  fflush (stdout);
}

int
main (int argc, char **argv)
{
  int widths[16];
  const int nw = parse_list ("GEOREG_BENCH_WIDTHS", "527,591,655,783,991", widths, 16);
  const char *content_env = getenv ("GEOREG_BENCH_CONTENT");
  char contents[256];
  snprintf (contents, sizeof contents, "%s", content_env && *content_env ? content_env : "terrain");
  const char *cpu_mode = getenv ("GEOREG_BENCH_CPU");
  cpu_mode = cpu_mode && *cpu_mode ? cpu_mode : "all";
  const char *e;
  const int reps = (e = getenv ("GEOREG_BENCH_REPS")) && *e ? atoi (e) : 20;
  const int cpu_reps_env = (e = getenv ("GEOREG_BENCH_CPU_REPS")) && *e ? atoi (e) : 0;
  int variants[16];
  int nv = 0;
  if ((e = getenv ("GEOREG_BENCH_VARIANTS")) && *e)
    nv = parse_list ("GEOREG_BENCH_VARIANTS", "", variants, 16);
  if (nv == 0) {
    variants[0] = -1;
    nv = 1;
  }
  const bool have_cuda = gr_cuda_device_count () > 0;
  setenv ("GEOREG_NMI_CUDA_TIMING", "1", 1);

  printf ("dense NMI benchmark: template %dx%d, controls %d wide .. x %d, CUDA %s\n",
      TW, TH, widths[0], CH, have_cuda ? "available" : "not available (CPU only)");
  printf ("%9s %-9s %5s %7s %-5s %3s %4s %11s %10s %12s %9s %9s\n", "positions", "content",
      "mask", "valid", "back", "var", "reps", "median_ms", "kernel_ms", "positions/s",
      "G_incr/s", "rel_cpu");

  char *save = NULL;
  for (char *content = strtok_r (contents, ",", &save); content;
       content = strtok_r (NULL, ",", &save)) {
    for (int wi = 0; wi < nw; wi++) {
      const int cw = widths[wi];
      uint64_t rng = 0xC0FFEEULL + cw;
      uint8_t *cpix, *tpix;
      if (!make_images (content, cw, &cpix, &tpix, &rng)) {
        printf ("(content %s unavailable: skipped)\n", content);
        free (cpix);
        free (tpix);
        break;
      }
      uint8_t *cmask = malloc ((size_t) cw * CH), *tmask = malloc ((size_t) TW * TH);
      /* 50% jointly valid: each mask ~70.7% valid, independent blotches */
      blotchy_mask (cmask, cw, CH, 70.7, &rng);
      blotchy_mask (tmask, TW, TH, 70.7, &rng);
      const GrRegion reg = { 0, 0, cw - TW + 1, CH - TH + 1 };
      const long npos = (long) reg.x1 * reg.y1;
      for (int mi = 0; mi < 2; mi++) {
        const int mpct = mi == 0 ? 100 : 50;
        const GrImage8 ci = { cpix, (size_t) cw, mi ? cmask : NULL, (size_t) cw, cw, CH };
        const GrImage8 ti = { tpix, TW, mi ? tmask : NULL, TW, TW, TH };
        double *cpu_scores = NULL;
        bool do_cpu = !strcmp (cpu_mode, "all") ||
            (!strcmp (cpu_mode, "largest") && wi == nw - 1) ||
            (!strcmp (cpu_mode, "smallest") && wi == 0);
        if (do_cpu) {
          Row *r = &rows[nrows];
          r->content = content;
          r->mask_pct = mpct;
          const int cr = cpu_reps_env > 0 ? cpu_reps_env : (npos > 20000 ? 1 : 3);
          cpu_scores = malloc (sizeof (double) * npos);
          if (time_backend (GR_BACKEND_CPU, -1, &ci, &ti, reg, cr, npos > 20000 ? 0 : 1, r,
                  cpu_scores)) {
            print_row (r);
            nrows++;
          } else {
            free (cpu_scores);
            cpu_scores = NULL;
          }
        }
        if (have_cuda)
          for (int v = 0; v < nv; v++) {
            Row *r = &rows[nrows];
            r->content = content;
            r->mask_pct = mpct;
            double *gs = malloc (sizeof (double) * npos);
            if (time_backend (GR_BACKEND_CUDA, variants[v], &ci, &ti, reg, reps, 3, r, gs)) {
              if (cpu_scores) {
                double worst = 0;
                for (long i = 0; i < npos; i++) {
                  const double d = ref_rel_diff (gs[i], cpu_scores[i]);
                  worst = d > worst ? d : worst;
                }
                r->max_rel_vs_cpu = worst;
              }
              print_row (r);
              nrows++;
            }
            free (gs);
          }
        free (cpu_scores);
      }
      free (cpix);
      free (tpix);
      free (cmask);
      free (tmask);
    }
  }

  /* ratio CUDA / CPU per input */
  printf ("\nspeed-up of CUDA (default variant, wall median) over the CPU backend:\n");
  for (int i = 0; i < nrows; i++) {
    if (strcmp (rows[i].backend, "cuda") || rows[i].variant > 0)
      continue;
    for (int j = 0; j < nrows; j++)
      if (!strcmp (rows[j].backend, "cpu") && rows[j].positions == rows[i].positions &&
          rows[j].mask_pct == rows[i].mask_pct && !strcmp (rows[j].content, rows[i].content))
        printf ("  %6d positions %-8s %3d%% mask: cpu %.1f ms / cuda %.3f ms = %.0fx\n",
            rows[i].positions, rows[i].content, rows[i].mask_pct, rows[j].med_ms,
            rows[i].med_ms, rows[j].med_ms / rows[i].med_ms);
  }

  if (argc > 1) {
    FILE *f = fopen (argv[1], "w");
    if (!f) {
      perror (argv[1]);
      return 1;
    }
    fprintf (f, "{\n  \"template\": [%d, %d], \"control_height\": %d,\n  \"rows\": [\n", TW, TH, CH);
    for (int i = 0; i < nrows; i++) {
      const Row *r = &rows[i];
      fprintf (f, "    {\"positions\": %d, \"content\": \"%s\", \"mask_pct\": %d, "
          "\"valid_pct\": %.2f, \"backend\": \"%s\", \"variant\": %d, \"reps\": %d, "
          "\"median_ms\": %.4f, \"min_ms\": %.4f, \"kernel_ms\": %.4f, "
          "\"positions_per_s\": %.1f, \"g_increments_per_s\": %.3f, "
          "\"max_rel_vs_cpu\": %.3g}%s\n", r->positions, r->content, r->mask_pct,
          r->valid_pct, r->backend, r->variant, r->reps, r->med_ms, r->min_ms,
          r->kernel_ms, r->pos_per_s, r->gincr_per_s, r->max_rel_vs_cpu,
          i + 1 < nrows ? "," : "");
    }
    fprintf (f, "  ]\n}\n");
    fclose (f);
  }
  return 0;
}
