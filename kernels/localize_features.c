/* Places proposed by descriptor matching (see localize_features.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "localize_features.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#include "descriptors.h"
#include "fit.h"
#include "image.h"
#include "keypoints.h"

/* Quarter-octave levels kept: a sweep over 0.25-4 uses q = 0 (frames finer than the
 * control) and q = -1 .. -8 (coarser). */
#define FEATURE_LEVELS 12
#define DESC 64
/* Keypoints: the control's level at most this many, spread by the grid; the frame's
 * (a footprint, so far fewer matter) at most FRAME_KEYPOINTS. */
#define CONTROL_KEYPOINTS 8000
#define FRAME_KEYPOINTS 500
/* Lowe's ratio on the distances (squared below) */
#define MATCH_RATIO 0.8
#define FIT_THRESHOLD 2.0
#define MATCH_LONG 1024.0
#define LEVEL_PIXELS (4096.0 * 4096.0)

typedef struct {
  int q;
  double sx, sy;          /* level px per control px (rounded sizes) */
  GrKeypoint *kp;
  float *desc;
  int n;
} FeatureLevel;

struct GrPlaceFeatures {
  FeatureLevel level[FEATURE_LEVELS];
  int nlevels;
};

GrPlaceFeatures *
gr_place_features_new (void)
{
  return calloc (1, sizeof (GrPlaceFeatures));
}

void
gr_place_features_reset (GrPlaceFeatures *pf)
{
  if (!pf)
    return;
  for (int i = 0; i < pf->nlevels; i++) {
    free (pf->level[i].kp);
    free (pf->level[i].desc);
  }
  pf->nlevels = 0;
}

void
gr_place_features_free (GrPlaceFeatures *pf)
{
  gr_place_features_reset (pf);
  free (pf);
}

/* The control's level for matching a frame of long side long_side px at `scale`: the
 * ground resolution of the finer of the two, but never a frame beyond MATCH_LONG px
 * (the keypoints of a 4K frame at full size would cost more than the sweep) nor a
 * level beyond LEVEL_PIXELS (a large orthomosaic without a prior window: its copy and
 * keypoints bounded, the frame downscaled to match) */
static int
level_q (double scale, double long_side, int control_w, int control_h)
{
  const double f0 = fmin (1.0, MATCH_LONG / long_side);
  int q = (int) lround (4.0 * log2 (f0 / scale));
  q = q > 0 ? 0 : q;
  /* level pixels: control pixels x 2^(q/2) */
  const double cpx = (double) control_w * control_h;
  if (cpx > LEVEL_PIXELS) {
    const int qmax = (int) floor (2.0 * log2 (LEVEL_PIXELS / cpx));
    q = q < qmax ? q : qmax;
  }
  return q < -60 ? -60 : q;
}

double
gr_place_features_frame_factor (double scale, double long_side, int control_w,
    int control_h)
{
  const double f = scale * pow (2.0, level_q (scale, long_side, control_w, control_h) /
      4.0);
  return f < 1.0 ? f : 1.0;
}

/* Keypoints (at most cap, the descriptor's whole support valid) and descriptors of
 * img: the count, or a negative GrStatus. */
static int
detect_describe (const GrPlaneF *img, int cap, GrKeypoint **kp, float **desc)
{
  GrKeypointParams kpp;
  gr_keypoint_params_init (&kpp);
  GrDescriptorParams dp;
  gr_descriptor_params_init (&dp);
  kpp.max_keypoints = cap;
  kpp.margin = gr_descriptor_margin (&dp);
  *kp = malloc (sizeof (GrKeypoint) * (size_t) cap);
  *desc = NULL;
  if (!*kp)
    return -GR_ERR_NOMEM;
  const int n = img->width > 2 * kpp.margin && img->height > 2 * kpp.margin ?
      gr_keypoints_detect (img, &kpp, *kp, cap) : 0;
  if (n <= 0) {
    free (*kp);
    *kp = NULL;
    return n;
  }
  *desc = malloc (sizeof (float) * DESC * (size_t) n);
  GrStatus st = *desc ? gr_descriptors_compute (img, *kp, n, &dp, *desc, NULL, NULL) :
      GR_ERR_NOMEM;
  if (st != GR_OK) {
    free (*kp);
    free (*desc);
    *kp = NULL;
    *desc = NULL;
    return -st;
  }
  return n;
}

static FeatureLevel *
get_level (GrPlaceFeatures *pf, const GrPlaneF *control, int q, GrStatus *st)
{
  for (int i = 0; i < pf->nlevels; i++)
    if (pf->level[i].q == q)
      return &pf->level[i];
  if (pf->nlevels == FEATURE_LEVELS)
    gr_place_features_reset (pf);     /* never in a sweep of 0.25-4: 9 levels */
  GrPlaneF lv;
  memset (&lv, 0, sizeof lv);
  if ((*st = gr_plane_downscale (control, pow (2.0, q / 4.0), &lv)) != GR_OK)
    return NULL;
  FeatureLevel *L = &pf->level[pf->nlevels];
  memset (L, 0, sizeof *L);
  L->q = q;
  L->sx = (double) lv.width / control->width;
  L->sy = (double) lv.height / control->height;
  const int n = detect_describe (&lv, CONTROL_KEYPOINTS, &L->kp, &L->desc);
  gr_plane_clear (&lv);
  if (n < 0) {
    *st = (GrStatus) - n;
    return NULL;
  }
  L->n = n;
  pf->nlevels++;
  return L;
}

GrStatus
gr_place_features_match (GrPlaceFeatures *pf, const GrPlaneF *control, double scale,
    const GrPlaneF *small, int frame_w, int frame_h, int threads, GrFeaturePlace *out)
{
  memset (out, 0, sizeof *out);
  if (!pf || !control || !small || !small->data || !(scale > 0) || frame_w <= 0 ||
      frame_h <= 0)
    return GR_ERR_INVALID;
  GrStatus st = GR_OK;
  FeatureLevel *L = get_level (pf, control, level_q (scale, frame_w > frame_h ? frame_w :
          frame_h, control->width, control->height), &st);
  if (!L)
    return st;
  if (L->n < 2)
    return GR_OK;
  GrKeypoint *kf;
  float *df;
  const int nf = detect_describe (small, FRAME_KEYPOINTS, &kf, &df);
  if (nf < 0)
    return (GrStatus) - nf;
  if (nf < 2) {
    free (kf);
    free (df);
    return GR_OK;
  }
  int *match = malloc (sizeof (int) * (size_t) nf);
  double *src = malloc (sizeof (double) * 4 * (size_t) nf);
  if (!match || !src) {
    free (kf);
    free (df);
    free (match);
    free (src);
    return GR_ERR_NOMEM;
  }
  const int nc = L->n;
  const float *dc = L->desc;
  /* each frame descriptor's nearest control descriptor, kept when the second nearest
   * is clearly farther (a repeated texture matches nowhere in particular) */
#pragma omp parallel for schedule(dynamic, 8) num_threads(threads > 0 ? threads : omp_get_max_threads ())
  for (int i = 0; i < nf; i++) {
    const float *a = df + (size_t) DESC * i;
    float b1 = INFINITY, b2 = INFINITY;
    int bj = -1;
    for (int j = 0; j < nc; j++) {
      const float *b = dc + (size_t) DESC * j;
      float d = 0.0f;
      for (int k = 0; k < DESC; k++) {
        const float t = a[k] - b[k];
        d += t * t;
      }
      if (d < b1) {
        b2 = b1;
        b1 = d;
        bj = j;
      } else if (d < b2) {
        b2 = d;
      }
    }
    match[i] = bj >= 0 && b1 < (float) (MATCH_RATIO * MATCH_RATIO) * b2 ? bj : -1;
  }
  /* in the matching resolution's pixel-index coordinates (the fit's threshold is in
   * its pixels) */
  double *dst = src + 2 * (size_t) nf;
  int m = 0;
  for (int i = 0; i < nf; i++)
    if (match[i] >= 0) {
      src[2 * m] = kf[i].x;
      src[2 * m + 1] = kf[i].y;
      dst[2 * m] = L->kp[match[i]].x;
      dst[2 * m + 1] = L->kp[match[i]].y;
      m++;
    }
  out->matches = m;
  GrFit fit;
  memset (&fit, 0, sizeof fit);
  GrFitParams fp;
  gr_fit_params_init (&fp, GR_MODEL_SIMILARITY);
  fp.threshold = FIT_THRESHOLD;
  fp.seed = 0x6765 + (uint64_t) m;
  if (m >= 3 && gr_fit_robust (src, dst, NULL, m, &fp, &fit, NULL) == GR_FIT_OK) {
    /* frame corner -> small index -> level index -> control corner */
    const double fx = (double) small->width / frame_w, fy = (double) small->height / frame_h;
    const double to_small[9] = { fx, 0, -0.5, 0, fy, -0.5, 0, 0, 1 };
    const double to_control[9] = { 1.0 / L->sx, 0, 0.5 / L->sx, 0, 1.0 / L->sy,
      0.5 / L->sy, 0, 0, 1
    };
    double t[9];
    gr_mat3_mul (fit.h, to_small, t);
    gr_mat3_mul (to_control, t, out->h);
    for (int k = 0; k < 9; k++)
      out->h[k] /= out->h[8];
    out->inliers = fit.inliers;
  }
  free (kf);
  free (df);
  free (match);
  free (src);
  return GR_OK;
}
