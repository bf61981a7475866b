/* Test helper: a synthetic drone survey over the real orthomosaic (GEOREG_DATA/
 * aukerman.png): frames cut along flight lines with known frame-to-control
 * homographies (headings 0, 180 and 90 degrees, small jitter), and their keypoints
 * and descriptors (kernels/keypoints.h, kernels/descriptors.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_TEST_REALDESC_H
#define GR_TEST_REALDESC_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "descriptors.h"
#include "keypoints.h"
#include "raster.h"
#include "synth.h"

#define SURVEY_W 256
#define SURVEY_H 192

typedef struct {
  int m;
  GrPlaneF *frames;      /* SURVEY_W x SURVEY_H, with masks */
  double (*h)[9];        /* frame -> control */
} Survey;

typedef struct {
  int m, k;
  int64_t *off;          /* m + 1 */
  float *desc;           /* n x k */
  GrKeypoint *kp;        /* n */
  Survey survey;
} RealDesc;

static inline void
survey_clear (Survey *s)
{
  for (int i = 0; i < s->m; i++)
    gr_synth_plane_free (&s->frames[i]);
  free (s->frames);
  free (s->h);
  memset (s, 0, sizeof *s);
}

/* up to `frames` frames along three flight lines over the orthomosaic's valid area:
 * line 1 heading 0, line 2 heading 180, line 3 heading 90 (the camera turned), steps
 * of 80 px (about 60% overlap along a line), lines 130 px apart; rotation jitter
 * +-4 degrees, scale 0.97 .. 1.03. */
static inline bool
survey_make (Survey *s, int frames, char *why, size_t len)
{
  memset (s, 0, sizeof *s);
  const char *dir = getenv ("GEOREG_DATA");
  if (!dir || !*dir) {
    snprintf (why, len, "GEOREG_DATA is not set");
    return false;
  }
  char path[1024];
  snprintf (path, sizeof path, "%s/aukerman.png", dir);
  GrRaster r;
  memset (&r, 0, sizeof r);
  char err[256];
  if (gr_raster_load (path, 0, &r, err, sizeof err) != GR_OK) {
    snprintf (why, len, "cannot read aukerman.png: %.200s", err);
    return false;
  }
  s->frames = (GrPlaneF *) calloc (frames, sizeof (GrPlaneF));
  s->h = (double (*)[9]) calloc (frames, sizeof *s->h);
  GrSynthRng rng;
  gr_synth_rng_init (&rng, 20261121);
  const double line_y[3] = { 300, 430, 560 };
  const double heading[3] = { 0, 180, 90 };
  int per_line = (frames + 2) / 3;
  for (int i = 0; i < frames; i++) {
    const int line = i / per_line, j = i % per_line;
    GrSynthPose pose;
    memset (&pose, 0, sizeof pose);
    /* serpentine: line 2 flies back */
    const double x0 = 300, step = 80;
    pose.centre_x = line == 1 ? x0 + step * (per_line - 1 - j) : x0 + step * j;
    pose.centre_y = line_y[line] + gr_synth_rng_range (&rng, -10, 10);
    pose.rotation_deg = heading[line] + gr_synth_rng_range (&rng, -4, 4);
    pose.scale = gr_synth_rng_range (&rng, 0.97, 1.03);
    gr_synth_pose_homography (&pose, SURVEY_W, SURVEY_H, s->h[i]);
    if (gr_synth_cut (&r.plane, s->h[i], SURVEY_W, SURVEY_H, 1, &s->frames[i]) != GR_OK) {
      snprintf (why, len, "gr_synth_cut failed");
      gr_raster_clear (&r);
      survey_clear (s);
      return false;
    }
    gr_synth_add_noise (&s->frames[i], 2.0, 255.0, gr_synth_seed_mix (7, i));
    s->m = i + 1;
  }
  gr_raster_clear (&r);
  return true;
}

static inline void
realdesc_clear (RealDesc *r)
{
  free (r->off);
  free (r->desc);
  free (r->kp);
  survey_clear (&r->survey);
  memset (r, 0, sizeof *r);
}

/* keypoint parameters that suit the descriptors */
static inline void
realdesc_kp_params (GrKeypointParams *kp, const GrDescriptorParams *dp, int max_kp)
{
  gr_keypoint_params_init (kp);
  kp->max_keypoints = max_kp;
  kp->margin = gr_descriptor_margin (dp);
}

static inline bool
realdesc_load (RealDesc *r, int k, int frames, char *why, size_t len)
{
  memset (r, 0, sizeof *r);
  if (!survey_make (&r->survey, frames, why, len))
    return false;
  const int maxkp = 400;
  GrDescriptorParams dp;
  gr_descriptor_params_init (&dp);
  dp.size = k;
  GrKeypointParams kpp;
  realdesc_kp_params (&kpp, &dp, maxkp);
  r->m = frames;
  r->k = k;
  r->off = (int64_t *) malloc (sizeof (int64_t) * (frames + 1));
  r->desc = (float *) malloc (sizeof (float) * (size_t) frames * maxkp * k);
  r->kp = (GrKeypoint *) malloc (sizeof (GrKeypoint) * (size_t) frames * maxkp);
  r->off[0] = 0;
  for (int i = 0; i < frames; i++) {
    const int nk = gr_keypoints_detect (&r->survey.frames[i], &kpp, r->kp + r->off[i],
        maxkp);
    if (nk < 0 || gr_descriptors_compute (&r->survey.frames[i], r->kp + r->off[i], nk,
            &dp, r->desc + r->off[i] * k, NULL, NULL) != GR_OK) {
      snprintf (why, len, "keypoints or descriptors failed on frame %d", i);
      realdesc_clear (r);
      return false;
    }
    r->off[i + 1] = r->off[i] + nk;
  }
  return true;
}

/* 3x3 helpers */
static inline bool
h_invert (const double a[9], double o[9])
{
  const double c0 = a[4] * a[8] - a[5] * a[7], c1 = a[5] * a[6] - a[3] * a[8],
      c2 = a[3] * a[7] - a[4] * a[6];
  const double det = a[0] * c0 + a[1] * c1 + a[2] * c2;
  if (fabs (det) < 1e-300) {
    for (int i = 0; i < 9; i++)
      o[i] = i % 4 == 0 ? 1.0 : 0.0;
    return false;
  }
  const double id = 1.0 / det;
  o[0] = c0 * id;
  o[1] = (a[2] * a[7] - a[1] * a[8]) * id;
  o[2] = (a[1] * a[5] - a[2] * a[4]) * id;
  o[3] = c1 * id;
  o[4] = (a[0] * a[8] - a[2] * a[6]) * id;
  o[5] = (a[2] * a[3] - a[0] * a[5]) * id;
  o[6] = c2 * id;
  o[7] = (a[1] * a[6] - a[0] * a[7]) * id;
  o[8] = (a[0] * a[4] - a[1] * a[3]) * id;
  return true;
}

static inline void
h_mul (const double a[9], const double b[9], double o[9])
{
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      o[i * 3 + j] = a[i * 3] * b[j] + a[i * 3 + 1] * b[3 + j] + a[i * 3 + 2] * b[6 + j];
}

/* the true homography from frame a's pixels to frame b's pixels */
static inline void
survey_pair_truth (const Survey *s, int a, int b, double o[9])
{
  double inv[9];
  h_invert (s->h[b], inv);
  h_mul (inv, s->h[a], o);
}

#endif
