/* Sparse NMI benchmark (meson benchmark 'nmi_sparse').
 *
 *  A  the seed's workload: 58,000 keypoints x 3,969 offsets (11 x 11 templates in
 *     73 x 73 windows) x 121 pixels = 230 M NMI coefficients, templates cut from a
 *     control image (the real orthomosaic when GEOREG_DATA holds aukerman.png, else a
 *     procedural one) at displaced places, values at 16 levels (what nmiregister
 *     uses) and at 256 levels (raw 8-bit).
 *  B  per-frame latency: a 3840 x 2160 frame, 2,000 keypoints from the detector,
 *     predicted within +-8 px.
 * CUDA: kernel time (CUDA events) and the whole call (uploads, kernel, results
 * down), median of --reps runs after a warm-up.  CPU: the same call on a subset of
 * A's keypoints (--cpu-keypoints, default 4,000), scaled linearly to 58,000 (stated
 * so in the table), and B in full.  The table is printed last; --json PATH writes
 * the figures.
 *   bench_nmi_sparse [--reps N] [--cpu-keypoints N] [--json PATH] [--no-cpu]
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>

#include "image.h"
#include "keypoints.h"
#include "nmi_sparse.h"
#include "raster.h"
#include "synth.h"
#include "bench_util.h"

static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t rng_s = 88172645463325252ull;
static uint32_t
rnd (void)
{
  rng_s ^= rng_s << 13;
  rng_s ^= rng_s >> 7;
  rng_s ^= rng_s << 17;
  return (uint32_t) (rng_s >> 16);
}

typedef struct {
  const char *name;
  const char *backend;
  long keypoints;
  double kernel_ms, call_ms;     /* median; kernel -1 when not measured */
  bool extrapolated;
  long measured_keypoints;
} Row;

static Row rows[16];
static int nrows;

/* times gr_nmi_sparse_run on n keypoints */
static void
time_run (GrNmiSparse *e, const uint8_t *tpl, const GrNmiSparseQuery *q, int n,
    int reps, double *kernel_ms, double *call_ms)
{
  GrNmiSparseParams p;
  gr_nmi_sparse_params_init (&p);
  GrNmiSparseMatch *out = malloc (sizeof *out * n);
  char err[256];
  if (gr_nmi_sparse_run (e, &p, tpl, NULL, q, n, out, NULL, err, sizeof err) != GR_OK) {
    fprintf (stderr, "run failed: %s\n", err);
    exit (1);
  }
  double *k = malloc (sizeof (double) * reps), *c = malloc (sizeof (double) * reps);
  for (int r = 0; r < reps; r++) {
    const double t0 = now_ms ();
    gr_nmi_sparse_run (e, &p, tpl, NULL, q, n, out, NULL, err, sizeof err);
    c[r] = now_ms () - t0;
    k[r] = gr_nmi_sparse_last_kernel_ms (e);
  }
  *call_ms = median (c, reps);
  *kernel_ms = k[0] >= 0 ? median (k, reps) : -1.0;
  free (k);
  free (c);
  free (out);
}

int
main (int argc, char **argv)
{
  int reps = 10, cpu_kp = 4000;
  bool do_cpu = true;
  const char *json = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp (argv[i], "--reps") && i + 1 < argc)
      reps = atoi (argv[++i]);
    else if (!strcmp (argv[i], "--cpu-keypoints") && i + 1 < argc)
      cpu_kp = atoi (argv[++i]);
    else if (!strcmp (argv[i], "--json") && i + 1 < argc)
      json = argv[++i];
    else if (!strcmp (argv[i], "--no-cpu"))
      do_cpu = false;
  }
  if (reps < 1)
    reps = 1;
  char err[512];
  const bool have_cuda = gr_cuda_device_count () > 0;
  GrNmiSparse *gpu = have_cuda ? gr_nmi_sparse_new (GR_BACKEND_CUDA, -1, NULL, err,
      sizeof err) : NULL;
  GrNmiSparse *cpu = gr_nmi_sparse_new (GR_BACKEND_CPU, -1, NULL, err, sizeof err);
  if (have_cuda && !gpu)
    fprintf (stderr, "CUDA engine: %s\n", err);

  /* ---- A: the control */
  GrPlaneF ctl = { 0 };
  char source[256] = "procedural 1024x768";
  const char *dir = getenv ("GEOREG_DATA");
  GrRaster r = { 0 };
  if (dir && *dir) {
    char path[4096];
    snprintf (path, sizeof path, "%s/aukerman.png", dir);
    if (gr_raster_load (path, 0, &r, err, sizeof err) == GR_OK) {
      ctl = r.plane;
      snprintf (source, sizeof source, "aukerman.png %dx%d", ctl.width, ctl.height);
    }
  }
  GrSynthImage simg = { 0 };
  if (!ctl.data) {
    GrSynthControlParams sp;
    gr_synth_control_params_init (&sp);
    sp.width = 1024;
    sp.height = 768;
    if (gr_synth_control_generate (&sp, &simg, err, sizeof err) != GR_OK) {
      fprintf (stderr, "%s\n", err);
      return 1;
    }
    ctl = gr_synth_image_plane (&simg, 1);
  }
  const int cw = ctl.width, ch = ctl.height;
  const int NA = 58000;
  uint8_t *c16 = malloc ((size_t) cw * ch), *c256 = malloc ((size_t) cw * ch);
  for (int i = 0; i < cw * ch; i++) {
    const float v = ctl.data[i] < 0 ? 0 : ctl.data[i] > 255 ? 255 : ctl.data[i];
    c256[i] = (uint8_t) v;
    c16[i] = (uint8_t) (v / 16.0f);
  }
  /* keypoints at valid places with a wholly valid window, displaced queries */
  int32_t *xy = malloc (sizeof (int32_t) * 2 * NA);
  GrNmiSparseQuery *qa = malloc (sizeof *qa * NA);
  for (int k = 0; k < NA; k++) {
    int x, y, tries = 0;
    do {
      x = 36 + 20 + (int) (rnd () % (cw - 2 * 56));
      y = 36 + 20 + (int) (rnd () % (ch - 2 * 56));
    } while (ctl.mask && !ctl.mask[y * cw + x] && ++tries < 1000);
    xy[2 * k] = x;
    xy[2 * k + 1] = y;
    qa[k].x = x + (int) (rnd () % 41) - 20;
    qa[k].y = y + (int) (rnd () % 41) - 20;
  }
  uint8_t *ta16 = malloc ((size_t) NA * 121), *ta256 = malloc ((size_t) NA * 121);
  GrImage8 i16 = { c16, (size_t) cw, ctl.mask, (size_t) cw, cw, ch };
  GrImage8 i256 = { c256, (size_t) cw, ctl.mask, (size_t) cw, cw, ch };
  gr_nmi_sparse_cut_templates (&i16, 11, xy, NA, ta16, NULL);
  gr_nmi_sparse_cut_templates (&i256, 11, xy, NA, ta256, NULL);

  printf ("sparse NMI benchmark: %s, CUDA devices %d, CPU threads %d, %d reps\n", source,
      gr_cuda_device_count (), omp_get_max_threads (), reps);
  for (int lv = 0; lv < 2; lv++) {
    const GrImage8 *im = lv ? &i256 : &i16;
    const uint8_t *tpl = lv ? ta256 : ta16;
    const char *name = lv ? "A: 58,000 kp, 256 levels" : "A: 58,000 kp, 16 levels";
    if (gpu) {
      gr_nmi_sparse_set_control (gpu, im, err, sizeof err);
      Row *row = &rows[nrows++];
      *row = (Row) { name, "cuda", NA, 0, 0, false, NA };
      time_run (gpu, tpl, qa, NA, reps, &row->kernel_ms, &row->call_ms);
      printf ("  %-28s cuda: kernel %.2f ms, call %.2f ms\n", name, row->kernel_ms,
          row->call_ms);
    }
    if (do_cpu) {
      gr_nmi_sparse_set_control (cpu, im, err, sizeof err);
      const int n = cpu_kp < NA ? cpu_kp : NA;
      Row *row = &rows[nrows++];
      *row = (Row) { name, "cpu", NA, -1, 0, n < NA, n };
      double k, c;
      time_run (cpu, tpl, qa, n, reps > 3 ? 3 : reps, &k, &c);
      row->call_ms = c * NA / n;
      printf ("  %-28s cpu: %.1f ms for %d keypoints (x %.1f -> %.0f ms)\n", name, c, n,
          (double) NA / n, row->call_ms);
    }
  }

  /* ---- B: a 4K frame, 2,000 keypoints */
  {
    GrSynthControlParams sp;
    gr_synth_control_params_init (&sp);
    sp.width = 3840 + 160;
    sp.height = 2160 + 160;
    sp.seed = 4;
    GrSynthImage big;
    if (gr_synth_control_generate (&sp, &big, err, sizeof err) != GR_OK) {
      fprintf (stderr, "%s\n", err);
      return 1;
    }
    GrPlaneF bp = gr_synth_image_plane (&big, 1);
    const int bw = bp.width, bh = bp.height;
    uint8_t *b16 = malloc ((size_t) bw * bh);
    for (int i = 0; i < bw * bh; i++)
      b16[i] = (uint8_t) ((bp.data[i] < 0 ? 0 : bp.data[i] > 255 ? 255 : bp.data[i]) / 16.0f);
    /* the frame: the control's inner 3840 x 2160 */
    GrPlaneF frame;
    gr_plane_alloc (&frame, 3840, 2160, false);
    uint8_t *f16 = malloc ((size_t) 3840 * 2160);
    for (int y = 0; y < 2160; y++)
      for (int x = 0; x < 3840; x++) {
        frame.data[y * 3840 + x] = bp.data[(y + 80) * bw + x + 80];
        f16[y * 3840 + x] = b16[(y + 80) * bw + x + 80];
      }
    GrKeypointParams kpp;
    gr_keypoint_params_init (&kpp);
    kpp.max_keypoints = 2000;
    GrKeypoint *kp = malloc (sizeof *kp * 2000);
    double t0 = now_ms ();
    const int nk = gr_keypoints_detect (&frame, &kpp, kp, 2000);
    const double kp_ms = now_ms () - t0;
    int32_t *bxy = malloc (sizeof (int32_t) * 2 * nk);
    GrNmiSparseQuery *qb = malloc (sizeof *qb * nk);
    for (int k = 0; k < nk; k++) {
      bxy[2 * k] = (int) kp[k].x;
      bxy[2 * k + 1] = (int) kp[k].y;
      qb[k].x = bxy[2 * k] + 80 + (int) (rnd () % 17) - 8;
      qb[k].y = bxy[2 * k + 1] + 80 + (int) (rnd () % 17) - 8;
    }
    uint8_t *tb = malloc ((size_t) nk * 121);
    GrImage8 fi = { f16, 3840, NULL, 3840, 3840, 2160 };
    t0 = now_ms ();
    gr_nmi_sparse_cut_templates (&fi, 11, bxy, nk, tb, NULL);
    const double cut_ms = now_ms () - t0;
    GrImage8 bi = { b16, (size_t) bw, NULL, (size_t) bw, bw, bh };
    printf ("  B: 3840x2160 frame: %d keypoints detected in %.1f ms (CPU), templates cut "
        "in %.2f ms\n", nk, kp_ms, cut_ms);
    if (gpu) {
      gr_nmi_sparse_set_control (gpu, &bi, err, sizeof err);
      Row *row = &rows[nrows++];
      *row = (Row) { "B: 4K frame, 2,000 kp", "cuda", nk, 0, 0, false, nk };
      time_run (gpu, tb, qb, nk, reps * 3, &row->kernel_ms, &row->call_ms);
      printf ("  %-28s cuda: kernel %.3f ms, call %.3f ms\n", row->name, row->kernel_ms,
          row->call_ms);
    }
    if (do_cpu) {
      gr_nmi_sparse_set_control (cpu, &bi, err, sizeof err);
      Row *row = &rows[nrows++];
      *row = (Row) { "B: 4K frame, 2,000 kp", "cpu", nk, -1, 0, false, nk };
      double k;
      time_run (cpu, tb, qb, nk, reps > 3 ? 3 : reps, &k, &row->call_ms);
      printf ("  %-28s cpu: %.1f ms\n", row->name, row->call_ms);
    }
    Row *row = &rows[nrows++];
    *row = (Row) { "B: keypoint detection (4K)", "cpu", nk, -1, kp_ms, false, nk };
    free (tb);
    free (qb);
    free (bxy);
    free (kp);
    free (f16);
    free (b16);
    gr_plane_clear (&frame);
    gr_synth_image_free (&big);
  }

  /* ---- table */
  printf ("\n| workload | backend | keypoints | kernel (ms) | call (ms) | coefficients/s |\n");
  printf ("|---|---|---|---|---|---|\n");
  for (int i = 0; i < nrows; i++) {
    const Row *w = &rows[i];
    char kern[32] = "-";
    if (w->kernel_ms >= 0)
      snprintf (kern, sizeof kern, "%.3f", w->kernel_ms);
    const double t = w->kernel_ms >= 0 ? w->kernel_ms : w->call_ms;
    char rate[48] = "-";
    if (strncmp (w->name, "B: keypoint", 11) != 0)
      snprintf (rate, sizeof rate, "%.3g", w->keypoints * 3969.0 / (t / 1e3));
    printf ("| %s | %s | %ld | %s | %.3f%s | %s |\n", w->name, w->backend, w->keypoints,
        kern, w->call_ms, w->extrapolated ? " (scaled from a subset)" : "", rate);
  }
  for (int i = 0; i < nrows; i++)
    if (rows[i].extrapolated) {
      printf ("(cpu A rows: measured on %ld keypoints, scaled linearly to 58,000)\n",
          rows[i].measured_keypoints);
      break;
    }
  if (json) {
    FILE *f = fopen (json, "w");
    if (f) {
      fprintf (f, "{\"source\": \"%s\", \"cuda_devices\": %d, \"cpu_threads\": %d, "
          "\"rows\": [", source, gr_cuda_device_count (), omp_get_max_threads ());
      for (int i = 0; i < nrows; i++)
        fprintf (f, "%s{\"workload\": \"%s\", \"backend\": \"%s\", \"keypoints\": %ld, "
            "\"kernel_ms\": %.4f, \"call_ms\": %.4f, \"measured_keypoints\": %ld}",
            i ? ", " : "", rows[i].name, rows[i].backend, rows[i].keypoints,
            rows[i].kernel_ms, rows[i].call_ms, rows[i].measured_keypoints);
      fprintf (f, "]}\n");
      fclose (f);
    }
  }
  gr_nmi_sparse_free (gpu);
  gr_nmi_sparse_free (cpu);
  free (c16);
  free (c256);
  free (xy);
  free (qa);
  free (ta16);
  free (ta256);
  gr_raster_clear (&r);
  gr_synth_image_free (&simg);
  return 0;
}
