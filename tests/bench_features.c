/* Per-frame feature extraction (gr_features_extract: keypoints + descriptors), CPU vs
 * CUDA, on synthesized aerial frames (pipelines/synth.h, luminance): 3840 x 2160 and
 * 1920 x 1080 (and 1920 x 1080 with a no-data border, i.e. a mask), featurematch's
 * defaults: at most 500 keypoints, 64 values, margin = the descriptor support.
 * CUDA: wall time of the call (median), and its parts by CUDA events: the frame upload
 * (pageable float32 plane + mask), the kernels, the download (keypoints, descriptors,
 * smoothed windows for the patches).  Before a figure is kept the CUDA output is
 * compared with the CPU's on the same frame: keypoint count, positions, descriptors.
 *   bench_features [--quick] [--json FILE] [--reps N]
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "descriptors.h"
#include "keypoints.h"
#include "synth.h"
#include "bench_util.h"

typedef struct {
  char name[64];
  const char *backend;
  int n, reps;
  double wall, upload, kernel, download;
  double maxpos, maxdesc;
  int desc_beyond;
} Row;

static Row rows[16];
static int nrows, mismatches;

static int
frame (int w, int h, uint64_t seed, double border, GrPlaneF *p)
{
  GrSynthControlParams sp;
  gr_synth_control_params_init (&sp);
  sp.width = w;
  sp.height = h;
  sp.seed = seed;
  sp.nodata_border = border;
  sp.with_geo = false;
  GrSynthImage im;
  char err[256];
  if (gr_synth_control_generate (&sp, &im, err, sizeof err) != GR_OK) {
    printf ("synth: %s\n", err);
    return 0;
  }
  gr_synth_plane_alloc (p, w, h, im.mask != NULL);
  for (size_t i = 0; i < (size_t) w * h; i++) {
    p->data[i] = (float) (0.299 * im.band[0][i] + 0.587 * im.band[1][i] +
        0.114 * im.band[2][i]);
    if (im.mask)
      p->mask[i] = im.mask[i] != 0;
  }
  gr_synth_image_free (&im);
  return 1;
}

/* times `reps` calls after one warm-up; returns the last call's keypoint count */
static int
time_engine (const char *name, GrFeatures *f, const GrPlaneF *img, int reps,
    GrKeypoint *kp, float *desc)
{
  GrKeypointParams kpp;
  GrDescriptorParams dp;
  gr_descriptor_params_init (&dp);
  gr_keypoint_params_init (&kpp);
  kpp.max_keypoints = 500;
  kpp.margin = gr_descriptor_margin (&dp);
  double wall[64], up[64], ker[64], dn[64];
  int n = 0;
  char err[256];
  for (int r = -1; r < reps; r++) {
    GrFeatureStats st;
    n = gr_features_extract (f, img, &kpp, &dp, kp, 500, desc, NULL, &st, err, sizeof err);
    if (n < 0) {
      printf ("  %s: %s\n", name, err);
      return -1;
    }
    if (r >= 0) {
      wall[r] = st.elapsed_ms;
      up[r] = st.upload_ms;
      ker[r] = st.kernel_ms;
      dn[r] = st.download_ms;
    }
  }
  Row *row = &rows[nrows++];
  snprintf (row->name, sizeof row->name, "%s", name);
  row->backend = gr_backend_name (gr_features_backend (f));
  row->n = n;
  row->reps = reps;
  row->wall = median (wall, reps);
  row->upload = median (up, reps);
  row->kernel = median (ker, reps);
  row->download = median (dn, reps);
  row->maxpos = row->maxdesc = -1;
  printf ("  %-28s %-4s n %3d  wall %8.3f ms  (upload %.3f, kernels %.3f, download %.3f)"
      "  min wall %.3f\n", name, row->backend, n, row->wall, row->upload, row->kernel,
      row->download, wall[0]);
  fflush (stdout);
  return n;
}

int
main (int argc, char **argv)
{
  int quick = 0, reps = 0;
  const char *json = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp (argv[i], "--quick"))
      quick = 1;
    else if (!strcmp (argv[i], "--json") && i + 1 < argc)
      json = argv[++i];
    else if (!strcmp (argv[i], "--reps") && i + 1 < argc)
      reps = atoi (argv[++i]);
  }
  GrStatus st;
  char err[256] = "";
  GrFeatures *cpu = gr_features_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
  GrFeatures *gpu = gr_cuda_device_count () > 0 ?
      gr_features_new (GR_BACKEND_CUDA, -1, &st, err, sizeof err) : NULL;
  if (!gpu)
    printf ("no CUDA engine (%s): CPU only\n", err[0] ? err : "no device");
  struct {
    const char *name;
    int w, h;
    double border;
  } cases[] = {
    { "3840x2160", 3840, 2160, 0.0 },
    { "1920x1080", 1920, 1080, 0.0 },
    { "1920x1080, no-data border", 1920, 1080, 0.25 },
  };
  for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const int w = quick ? cases[c].w / 4 : cases[c].w, h = quick ? cases[c].h / 4 :
        cases[c].h;
    GrPlaneF img;
    if (!frame (w, h, 100 + c, cases[c].border, &img))
      return 1;
    printf ("%s (%dx%d%s)\n", cases[c].name, w, h, img.mask ? ", mask" : "");
    GrKeypoint kc[500], kg[500];
    float *dc = malloc (sizeof (float) * 500 * 64), *dg = malloc (sizeof (float) * 500 * 64);
    const int cr = reps > 0 ? reps : quick ? 2 : w > 2000 ? 5 : 10;
    const int nc = time_engine (cases[c].name, cpu, &img, cr, kc, dc);
    if (gpu) {
      const int gr = reps > 0 ? reps : quick ? 3 : 30;
      const int ng = time_engine (cases[c].name, gpu, &img, gr, kg, dg);
      /* the check: the same keypoints and descriptors as the CPU */
      double mp = 0, md = 0;
      int beyond = 0;
      const int n = nc < ng ? nc : ng;
      for (int i = 0; i < n; i++) {
        mp = fmax (mp, fmax (fabs (kc[i].x - kg[i].x), fabs (kc[i].y - kg[i].y)));
        double dd = 0;
        for (int t = 0; t < 64; t++)
          dd = fmax (dd, fabs ((double) dc[i * 64 + t] - dg[i * 64 + t]));
        beyond += dd > 1e-4;
        md = fmax (md, dd);
      }
      Row *r = &rows[nrows - 1];
      r->maxpos = mp;
      r->maxdesc = md;
      r->desc_beyond = beyond;
      const int bad = nc != ng || mp > 1e-3;
      mismatches += bad;
      printf ("  check CUDA vs CPU: %d / %d keypoints, positions %.1e px, descriptors "
          "max %.2e (%d beyond 1e-4: orientation near-ties)%s\n", ng, nc, mp, md, beyond,
          bad ? "  <-- MISMATCH" : "");
      printf ("  CPU / CUDA (wall): %.1fx\n", rows[nrows - 2].wall / r->wall);
    }
    free (dc);
    free (dg);
    gr_synth_plane_free (&img);
  }
  printf ("\n| frame | backend | keypoints | wall median ms | upload ms | kernels ms | "
      "download ms | reps |\n|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < nrows; i++)
    printf ("| %s | %s | %d | %.3f | %.3f | %.3f | %.3f | %d |\n", rows[i].name,
        rows[i].backend, rows[i].n, rows[i].wall, rows[i].upload, rows[i].kernel,
        rows[i].download, rows[i].reps);
  if (json) {
    FILE *f = fopen (json, "w");
    if (f) {
      fprintf (f, "[\n");
      for (int i = 0; i < nrows; i++)
        fprintf (f, "  {\"frame\": \"%s\", \"backend\": \"%s\", \"keypoints\": %d, "
            "\"wall_ms\": %.6f, \"upload_ms\": %.6f, \"kernel_ms\": %.6f, "
            "\"download_ms\": %.6f, \"reps\": %d}%s\n", rows[i].name, rows[i].backend,
            rows[i].n, rows[i].wall, rows[i].upload, rows[i].kernel, rows[i].download,
            rows[i].reps, i + 1 < nrows ? "," : "");
      fprintf (f, "]\n");
      fclose (f);
    }
  }
  gr_features_free (cpu);
  gr_features_free (gpu);
  if (mismatches)
    printf ("CUDA and CPU keypoints differ in %d case(s)\n", mismatches);
  return mismatches ? 1 : 0;
}
