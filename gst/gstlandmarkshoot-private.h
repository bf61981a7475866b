/* Internal to the landmarkshoot element: what its files (gstlandmarkshoot.c: start,
 * caps, one target at a time; gstlandmarkshoot-batch.c: batch > 1;
 * gstlandmarkshoot-props.c: properties) share.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_LANDMARK_SHOOT_PRIVATE_H__
#define __GST_LANDMARK_SHOOT_PRIVATE_H__

#include "gstlandmarkshoot.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_landmark_shoot_debug);

/* The progress callbacks' context: the element and the iterations between messages. */
typedef struct {
  GstLandmarkShoot *self;
  guint interval;
} ProgressCtx;

/* gstlandmarkshoot.c */
gboolean gst_landmark_shoot_read_target (GstLandmarkShoot * self, GstBuffer * inbuf,
    gdouble ** tgt, gsize * count);
void gst_landmark_shoot_post_progress (GstLandmarkShoot * self, GstProgressType type,
    const gchar * text);
GrLbfgsParams gst_landmark_shoot_lbfgs_params (const GstLandmarkShootSettings * s);
GstFlowReturn gst_landmark_shoot_emit_result (GstLandmarkShoot * self,
    const GstLandmarkShootSettings * s, GstBuffer * inbuf, const gdouble * tgt,
    const gdouble * p0, const GrShootFitResult * res, GstBuffer * outbuf);

/* gstlandmarkshoot-batch.c */
/* Queues the input's target; fits the batch once it is full. */
GstFlowReturn gst_landmark_shoot_queue_target (GstLandmarkShoot * self, GstBuffer * input);
GstFlowReturn gst_landmark_shoot_run_batch (GstLandmarkShoot * self);
void gst_landmark_shoot_clear_batch_queues (GstLandmarkShoot * self);

/* gstlandmarkshoot-props.c */
void gst_landmark_shoot_install_properties (GObjectClass * gobject_class);
void gst_landmark_shoot_settings_init (GstLandmarkShootSettings * s);
void gst_landmark_shoot_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
void gst_landmark_shoot_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec);

G_END_DECLS

#endif
