/* landmarkshoot's result of one target: the shot template (or the extra points) into
 * the output buffer, the meta, and the "landmarkshoot" message (split out of
 * gstlandmarkshoot.c so that the element file is about the fitting).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include "gstlandmarkshoot.h"
#include "gstgeoregutils.h"
#include "gstpointset.h"
#include "landmarkshoot-meta.h"
#include "pointset_io.h"
#include "gstlandmarkshoot-private.h"

GST_DEBUG_CATEGORY_EXTERN (gst_landmark_shoot_debug);
#define GST_CAT_DEFAULT gst_landmark_shoot_debug

static gdouble
mean_distance (const gdouble * a, const gdouble * b, gsize n, gint dim)
{
  gdouble s = 0.0;
  for (gsize i = 0; i < n; i++) {
    gdouble d2 = 0.0;
    for (gint k = 0; k < dim; k++) {
      gdouble d = a[i * dim + k] - b[i * dim + k];
      d2 += d * d;
    }
    s += sqrt (d2);
  }
  return n ? s / n : 0.0;
}

/* After the fit of target tgt (momentum p0, result res): shoots the template (and the
 * extra points) with the single engine, writes outbuf, adds the meta and posts the
 * messages. */
GstFlowReturn
gst_landmark_shoot_emit_result (GstLandmarkShoot * self,
    const GstLandmarkShootSettings * s, GstBuffer * inbuf, const gdouble * tgt,
    const gdouble * p0, const GrShootFitResult * res, GstBuffer * outbuf)
{
  char err[512] = "";
  const gsize n = self->n;
  GstFlowReturn ret = GST_FLOW_ERROR;
  gdouble *q1 = g_new (gdouble, n * self->dim), *xout = NULL;
  if (self->n_extra)
    xout = g_new (gdouble, self->n_extra * self->dim);
  const gboolean landmarks = self->data_term == GST_LANDMARK_SHOOT_DATA_LANDMARKS;
  if ((landmarks && gr_shoot_set_target (self->engine, tgt, err, sizeof err) != GR_OK) ||
      gr_shoot_flow (self->engine, p0, q1, NULL, self->extra, self->n_extra, xout,
          err, sizeof err) != GR_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Geodesic shooting failed: %s.", err),
        (NULL));
    goto out;
  }
  GstMapInfo out;
  if (!gst_buffer_map (outbuf, &out, GST_MAP_WRITE)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map the output."), (NULL));
    goto out;
  }
  gboolean extra_out = self->output == GST_LANDMARK_SHOOT_OUTPUT_EXTRA_POINTS;
  gsize nout = extra_out ? self->n_extra : n;
  if (out.size != nout * self->dim * 4) {
    gst_buffer_unmap (outbuf, &out);
    GST_ELEMENT_ERROR (self, CORE, FAILED, ("Output buffer of the wrong size."), (NULL));
    goto out;
  }
  gst_pointset_write (out.data, extra_out ? xout : q1, nout, self->dim);
  gst_buffer_unmap (outbuf, &out);

  const gchar *backend = gr_backend_name (gr_shoot_backend (self->engine));
  const gchar *device = self->batch_engine
      ? gr_shoot_batch_device_description (self->batch_engine)
      : gr_shoot_device_description (self->engine);
  /* mean landmark distances need correspondence: NaN with the other data terms */
  gdouble before = landmarks ? mean_distance (self->q0, tgt, n, self->dim) : NAN;
  gdouble after = landmarks ? mean_distance (q1, tgt, n, self->dim) : NAN;
  if (self->tcell_size && !extra_out)
    gst_buffer_add_point_set_cells_meta (outbuf, self->tcells, self->ntcells,
        self->tcell_size);
  gboolean converged = gr_lbfgs_result_converged (res->result);
  GstLandmarkShootMeta *m = gst_buffer_add_landmark_shoot_meta (outbuf, p0,
      (guint) n, (guint) self->dim);
  m->kinetic_energy = res->kinetic;
  m->mismatch = res->mismatch;
  m->loss = res->loss;
  m->mean_distance = after;
  m->mean_distance_before = before;
  m->iterations = res->iterations;
  m->evaluations = res->evaluations;
  m->gradient_norm = res->gnorm;
  m->converged = converged;
  m->run_time = res->seconds;
  m->backend = gr_shoot_backend (self->engine);
  GST_DEBUG_OBJECT (self, "set %" G_GUINT64_FORMAT ": mean distance %.5g -> %.5g, "
      "%d iterations, %d evaluations, %s, %.3f s", self->count, before, after,
      res->iterations, res->evaluations, gr_lbfgs_result_string (res->result),
      res->seconds);

  if (s->post_messages) {
    GstStructure *st_msg = gst_structure_new ("landmarkshoot",
        "timestamp", G_TYPE_UINT64, GST_BUFFER_PTS (inbuf),
        "index", G_TYPE_UINT64, self->count,
        "points", G_TYPE_UINT, (guint) n,
        "dimensions", G_TYPE_INT, self->dim,
        "loss", G_TYPE_DOUBLE, res->loss,
        "kinetic-energy", G_TYPE_DOUBLE, res->kinetic,
        "mismatch", G_TYPE_DOUBLE, res->mismatch,
        "mean-distance", G_TYPE_DOUBLE, after,
        "mean-distance-before", G_TYPE_DOUBLE, before,
        "gradient-norm", G_TYPE_DOUBLE, res->gnorm,
        "iterations", G_TYPE_UINT, (guint) res->iterations,
        "evaluations", G_TYPE_UINT, (guint) res->evaluations,
        "converged", G_TYPE_BOOLEAN, converged,
        "stop-reason", G_TYPE_STRING, gr_lbfgs_result_string (res->result),
        "run-time", G_TYPE_DOUBLE, res->seconds,
        "backend", G_TYPE_STRING, backend,
        "device", G_TYPE_STRING, device, NULL);
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_element (GST_OBJECT (self), st_msg));
  }
  self->count++;
  ret = GST_FLOW_OK;

out:
  g_free (q1);
  g_free (xout);
  return ret;
}
