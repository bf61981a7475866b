/* landmarkshoot: diffeomorphic landmark matching by geodesic shooting (Hamiltonian
 * LDDMM) of a template point set onto each incoming target point set.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_LANDMARK_SHOOT_H__
#define __GST_LANDMARK_SHOOT_H__

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>

#include "gr_common.h"
#include "shoot.h"

G_BEGIN_DECLS

#define GST_TYPE_LANDMARK_SHOOT_INTEGRATOR (gst_landmark_shoot_integrator_get_type ())
GType gst_landmark_shoot_integrator_get_type (void);
#define GST_TYPE_LANDMARK_SHOOT_PRECISION (gst_landmark_shoot_precision_get_type ())
GType gst_landmark_shoot_precision_get_type (void);

typedef enum {
  GST_LANDMARK_SHOOT_OUTPUT_LANDMARKS = 0,   /* the shot template q(1) */
  GST_LANDMARK_SHOOT_OUTPUT_EXTRA_POINTS = 1, /* the extra-location points, flowed */
} GstLandmarkShootOutput;
#define GST_TYPE_LANDMARK_SHOOT_OUTPUT (gst_landmark_shoot_output_get_type ())
GType gst_landmark_shoot_output_get_type (void);

typedef enum {
  GST_LANDMARK_SHOOT_DATA_LANDMARKS = 0,  /* sum |q_i(1) - target_i|^2, same order */
  GST_LANDMARK_SHOOT_DATA_VARIFOLD = 1,   /* unoriented varifold (meshes, curves) */
  GST_LANDMARK_SHOOT_DATA_ORIENTED = 2,   /* oriented (currents) */
  GST_LANDMARK_SHOOT_DATA_POINTS = 3,     /* point-cloud kernel distance */
} GstLandmarkShootDataTerm;
#define GST_TYPE_LANDMARK_SHOOT_DATA_TERM (gst_landmark_shoot_data_term_get_type ())
GType gst_landmark_shoot_data_term_get_type (void);

#define GST_TYPE_LANDMARK_SHOOT (gst_landmark_shoot_get_type ())
G_DECLARE_FINAL_TYPE (GstLandmarkShoot, gst_landmark_shoot, GST, LANDMARK_SHOOT,
    GstBaseTransform)

/* Properties, read under the object lock and copied per buffer. */
typedef struct {
  gchar *template_location;
  gchar *extra_location;
  gdouble sigma;
  gint time_steps;
  gdouble lambda;
  guint max_iterations;
  gdouble gradient_tolerance;
  gdouble function_tolerance;
  GrShootIntegrator integrator;
  GrShootPrecision precision;
  GrBackend backend;
  gint cuda_device_id;
  GstLandmarkShootOutput output;
  gboolean warm_start;
  gboolean post_messages;
  guint progress_interval;
  guint batch;
  GstLandmarkShootDataTerm data_term;
  gdouble data_sigma;
} GstLandmarkShootSettings;

struct _GstLandmarkShoot {
  GstBaseTransform parent;

  GstLandmarkShootSettings settings;

  /* prepared in start() */
  GrShoot *engine;
  gdouble *q0;                  /* template, point-major */
  gsize n;
  gint dim;
  gdouble *extra;               /* extra-location points, point-major, or NULL */
  gsize n_extra;
  GstLandmarkShootOutput output;
  /* data-term != landmarks: the template's connectivity, the term's kind and width */
  GstLandmarkShootDataTerm data_term;
  gdouble data_sigma;
  GrBackend data_backend;       /* where it runs: the shooting engine's backend */
  gint data_cuda_device;
  guint32 *tcells;
  gsize ntcells;
  gint tcell_size;
  GstCaps *refused_caps;        /* caps whose fault was posted (set_caps) */

  gdouble *p0;                  /* last result (warm-start) */
  gboolean have_p0;
  gint stop;                    /* atomic: flushing or shutting down */
  /* batch > 1: targets collected, fitted together, results pushed in order */
  GrShootBatch *batch_engine;
  guint batch;
  GQueue pending;               /* PendingTarget: input buffers and their targets */
  GQueue ready;                 /* output buffers waiting for generate_output */
  gboolean announced;
  guint64 count;
};

GST_ELEMENT_REGISTER_DECLARE (landmarkshoot);

G_END_DECLS

#endif
