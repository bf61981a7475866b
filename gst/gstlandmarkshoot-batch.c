/* landmarkshoot, batch > 1: targets collected up to the batch size or to EOS,
 * registered together (gr_shoot_batch_fit: one L-BFGS per target, the evaluations of
 * all of them at once), results queued in the order the targets came.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <string.h>

#include "gstlandmarkshoot.h"
#include "gstlandmarkshoot-private.h"
#include "gstpointset.h"

#define GST_CAT_DEFAULT gst_landmark_shoot_debug

typedef struct {
  GstBuffer *buf;
  gdouble *tgt;
} PendingTarget;

static void
pending_target_free (gpointer data)
{
  PendingTarget *pt = data;
  gst_buffer_unref (pt->buf);
  g_free (pt->tgt);
  g_free (pt);
}

/* Drops the collected targets and the results not pushed yet (flush, stop). */
void
gst_landmark_shoot_clear_batch_queues (GstLandmarkShoot * self)
{
  g_queue_clear_full (&self->pending, pending_target_free);
  g_queue_clear_full (&self->ready, (GDestroyNotify) gst_buffer_unref);
}

static int
batch_progress (void *user, size_t subject, int iteration, int evaluations, double loss,
    double gnorm)
{
  ProgressCtx *ctx = user;
  if (ctx->interval > 0 && iteration % ctx->interval == 0) {
    gchar *text = g_strdup_printf ("target %zu of the batch: iteration %d (%d "
        "evaluations): loss %.6g, gradient norm %.3g", subject, iteration, evaluations,
        loss, gnorm);
    gst_landmark_shoot_post_progress (ctx->self, GST_PROGRESS_TYPE_CONTINUE, text);
    g_free (text);
  }
  return g_atomic_int_get (&ctx->self->stop);
}

/* The target's connectivity is not the output's (see transform_meta). */
static gboolean
drop_cells_meta (GstBuffer * buffer, GstMeta ** meta, gpointer user)
{
  if ((*meta)->info->api == GST_POINT_SET_CELLS_META_API_TYPE)
    *meta = NULL;
  return TRUE;
}

/* Fits the collected targets together; their results go to the ready queue, in the
 * order the targets came. */
GstFlowReturn
gst_landmark_shoot_run_batch (GstLandmarkShoot * self)
{
  GstLandmarkShootSettings s;
  char err[512] = "";
  GST_OBJECT_LOCK (self);
  s = self->settings;
  GST_OBJECT_UNLOCK (self);
  const guint count = g_queue_get_length (&self->pending);
  const gsize dn = self->n * (gsize) self->dim;
  if (count == 0)
    return GST_FLOW_OK;
  GstFlowReturn ret = GST_FLOW_ERROR;
  gdouble *p0 = g_new0 (gdouble, dn * count);
  GrShootFitResult *res = g_new0 (GrShootFitResult, count);
  guint k = 0;
  for (GList * l = self->pending.head; l; l = l->next, k++) {
    PendingTarget *pt = l->data;
    if (gr_shoot_batch_set_target (self->batch_engine, k, pt->tgt, err, sizeof err) !=
        GR_OK) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not set the target: %s.", err),
          (NULL));
      goto out;
    }
    if (s.warm_start && self->have_p0)
      memcpy (p0 + k * dn, self->p0, sizeof (gdouble) * dn);
  }
  {
    gchar *text = g_strdup_printf ("Registering %u targets of %" G_GSIZE_FORMAT " %d-D "
        "landmarks together on the %s backend (%s)", count, self->n, self->dim,
        gr_backend_name (gr_shoot_batch_backend (self->batch_engine)),
        gr_shoot_batch_device_description (self->batch_engine));
    gst_landmark_shoot_post_progress (self, GST_PROGRESS_TYPE_START, text);
    g_free (text);
  }
  GrLbfgsParams lp = gst_landmark_shoot_lbfgs_params (&s);
  ProgressCtx pctx = { self, s.progress_interval };
  GrStatus st = gr_shoot_batch_fit (self->batch_engine, count, p0, &lp, batch_progress,
      &pctx, res, err, sizeof err);
  if (st != GR_OK) {
    gst_landmark_shoot_post_progress (self, GST_PROGRESS_TYPE_ERROR,
        "Registration failed");
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Geodesic shooting failed: %s.", err),
        (NULL));
    goto out;
  }
  for (k = 0; k < count; k++)
    if (res[k].result == GR_LBFGS_STOPPED) {
      gst_landmark_shoot_post_progress (self, GST_PROGRESS_TYPE_CANCELED,
          "Registration stopped");
      ret = GST_FLOW_FLUSHING;
      goto out;
    }
  gst_landmark_shoot_post_progress (self, GST_PROGRESS_TYPE_COMPLETE,
      "Done: batch registered");
  const gboolean extra_out = self->output == GST_LANDMARK_SHOOT_OUTPUT_EXTRA_POINTS;
  const gsize out_size = (extra_out ? self->n_extra : self->n) * (gsize) self->dim * 4;
  for (k = 0; k < count; k++) {
    PendingTarget *pt = g_queue_pop_head (&self->pending);
    GstBuffer *outbuf = gst_buffer_new_allocate (NULL, out_size, NULL);
    gst_buffer_copy_into (outbuf, pt->buf, GST_BUFFER_COPY_METADATA, 0, -1);
    gst_buffer_foreach_meta (outbuf, drop_cells_meta, NULL);
    ret = gst_landmark_shoot_emit_result (self, &s, pt->buf, pt->tgt, p0 + k * dn,
        &res[k], outbuf);
    pending_target_free (pt);
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref (outbuf);
      goto out;
    }
    g_queue_push_tail (&self->ready, outbuf);
  }
  memcpy (self->p0, p0 + (gsize) (count - 1) * dn, sizeof (gdouble) * dn);
  self->have_p0 = TRUE;
  ret = GST_FLOW_OK;

out:
  g_queue_clear_full (&self->pending, pending_target_free);
  g_free (p0);
  g_free (res);
  return ret;
}

GstFlowReturn
gst_landmark_shoot_queue_target (GstLandmarkShoot * self, GstBuffer * input)
{
  gdouble *tgt;
  gsize count;
  if (!gst_landmark_shoot_read_target (self, input, &tgt, &count)) {
    gst_buffer_unref (input);
    return GST_FLOW_ERROR;
  }
  PendingTarget *pt = g_new (PendingTarget, 1);
  pt->buf = input;
  pt->tgt = tgt;
  g_queue_push_tail (&self->pending, pt);
  if (g_queue_get_length (&self->pending) < self->batch)
    return GST_FLOW_OK;
  return gst_landmark_shoot_run_batch (self);
}
