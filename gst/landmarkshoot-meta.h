/* georeg: the landmarkshoot result meta.  Applications include this header and link
 * gstreamer-georeg-1.0 (pkg-config) to read the momentum and the fit statistics that
 * landmarkshoot attaches to each output buffer.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_LANDMARK_SHOOT_META_H__
#define __GST_LANDMARK_SHOOT_META_H__

#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct _GstLandmarkShootMeta GstLandmarkShootMeta;

/**
 * GstLandmarkShootMeta:
 * The result of one geodesic-shooting registration (landmarkshoot): the initial
 * momentum p0 that flows the template landmarks q0 onto the target, and how the fit
 * went.  Kernel convention: g(r) = exp(-r^2 / (2 sigma^2)).
 */
struct _GstLandmarkShootMeta {
  GstMeta meta;

  guint n_points;               /* landmarks (the template's count) */
  guint dimensions;             /* 2 or 3 */
  gdouble *momentum;            /* p0: n_points * dimensions doubles, point-major
                                 * (px0 py0 [pz0] px1 ...); owned by the meta */
  gdouble kinetic_energy;       /* H(q0, p0) = 1/2 sum_ij g_ij p_i.p_j */
  gdouble mismatch;             /* sum_i |q_i(1) - target_i|^2 */
  gdouble loss;                 /* kinetic_energy + lambda / 2 * mismatch */
  gdouble mean_distance;        /* mean_i |q_i(1) - target_i| after the fit */
  gdouble mean_distance_before; /* mean_i |q0_i - target_i| */
  guint iterations;             /* L-BFGS iterations */
  guint evaluations;            /* loss + gradient evaluations */
  gdouble gradient_norm;        /* |d loss / d p0| at the result */
  gboolean converged;           /* a tolerance was met (not max-iterations, not a
                                 * line-search stall) */
  gdouble run_time;             /* seconds spent in the fit */
  guint backend;                /* 1 = CPU, 2 = CUDA */
};

GType gst_landmark_shoot_meta_api_get_type (void);
#define GST_LANDMARK_SHOOT_META_API_TYPE (gst_landmark_shoot_meta_api_get_type ())
const GstMetaInfo *gst_landmark_shoot_meta_get_info (void);
#define GST_LANDMARK_SHOOT_META_INFO (gst_landmark_shoot_meta_get_info ())

#define gst_buffer_get_landmark_shoot_meta(b) \
  ((GstLandmarkShootMeta *) gst_buffer_get_meta ((b), GST_LANDMARK_SHOOT_META_API_TYPE))

/* Adds a meta holding a copy of momentum (n_points * dimensions doubles, may be NULL
 * for zeros); every statistic starts as NAN / 0 and the caller fills them. */
GstLandmarkShootMeta *gst_buffer_add_landmark_shoot_meta (GstBuffer * buffer,
    const gdouble * momentum, guint n_points, guint dimensions);

G_END_DECLS

#endif
