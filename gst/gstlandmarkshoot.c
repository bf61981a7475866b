/* landmarkshoot: registers a template landmark set onto each incoming target point set
 * by geodesic shooting (Hamiltonian LDDMM, kernels/shoot.h): it finds the initial
 * momentum p0 whose geodesic flow carries the template onto the target, minimizing
 * H(q0, p0) + lambda / 2 sum |q(1) - target|^2 by L-BFGS with the exact discrete
 * adjoint gradient, on the CPU (OpenMP) or CUDA.
 *
 * Input: application/x-pointset buffers (targets), each with the template's number of
 * points and dimension, corresponding by index.  Output: the shot template q(1) (or,
 * output=extra-points, the points of extra-location carried along the same flow), with
 * a GstLandmarkShootMeta (p0 and the fit statistics), GST_MESSAGE_PROGRESS messages
 * while it runs and a final element message "landmarkshoot".
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
#include "varifold.h"
#include "gstlandmarkshoot-private.h"

GST_DEBUG_CATEGORY (gst_landmark_shoot_debug);
#define GST_CAT_DEFAULT gst_landmark_shoot_debug

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_POINTSET_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_POINTSET_CAPS));

#define gst_landmark_shoot_parent_class parent_class
G_DEFINE_TYPE (GstLandmarkShoot, gst_landmark_shoot, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (landmarkshoot, "landmarkshoot", GST_RANK_NONE,
    GST_TYPE_LANDMARK_SHOOT);

static void
release_resources (GstLandmarkShoot * self)
{
  gst_landmark_shoot_clear_batch_queues (self);
  gr_shoot_batch_free (self->batch_engine);
  self->batch_engine = NULL;
  gr_shoot_free (self->engine);
  self->engine = NULL;
  g_clear_pointer (&self->q0, g_free);
  g_clear_pointer (&self->extra, g_free);
  g_clear_pointer (&self->p0, g_free);
  g_clear_pointer (&self->tcells, g_free);
  self->ntcells = 0;
  self->tcell_size = 0;
  self->n = self->n_extra = 0;
  self->dim = 0;
  self->have_p0 = FALSE;
}

static gdouble *
take_points (GrPointSet * ps)
{
  gdouble *v = g_new (gdouble, ps->n * ps->dim);
  memcpy (v, ps->xyz, sizeof (gdouble) * ps->n * ps->dim);
  gr_pointset_clear (ps);
  return v;
}

static gboolean
gst_landmark_shoot_start (GstBaseTransform * trans)
{
  GstLandmarkShoot *self = GST_LANDMARK_SHOOT (trans);
  GstLandmarkShootSettings s;
  char err[512] = "";

  GST_OBJECT_LOCK (self);
  s = self->settings;
  s.template_location = g_strdup (s.template_location);
  s.extra_location = g_strdup (s.extra_location);
  GST_OBJECT_UNLOCK (self);
  release_resources (self);
  g_atomic_int_set (&self->stop, 0);
  self->announced = FALSE;
  self->count = 0;
  gboolean ok = FALSE;

  if (!s.template_location || !*s.template_location) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No template: set the template-location property to a point-set file."),
        (NULL));
    goto done;
  }
  GrPointSet ps;
  GrStatus st = gr_pointset_load (s.template_location, GR_POINTSET_AUTO, 0, &ps, err,
      sizeof err);
  if (st == GR_ERR_IO) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Could not read the template \"%s\".", s.template_location), ("%s", err));
    goto done;
  }
  if (st != GR_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("Malformed template \"%s\": %s", s.template_location, err), (NULL));
    goto done;
  }
  if (ps.n < 2) {
    gr_pointset_clear (&ps);
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("The template \"%s\" has only one point: at least 2 landmarks are needed.",
            s.template_location), (NULL));
    goto done;
  }
  self->n = ps.n;
  self->dim = ps.dim;
  if (ps.cell_size) {
    /* the template's connectivity: the output mesh's, and the varifold's cells */
    self->tcells = g_memdup2 (ps.cells, sizeof (guint32) * ps.ncells * ps.cell_size);
    self->ntcells = ps.ncells;
    self->tcell_size = ps.cell_size;
  }
  self->q0 = take_points (&ps);

  if (s.extra_location && *s.extra_location) {
    st = gr_pointset_load (s.extra_location, GR_POINTSET_AUTO, self->dim, &ps, err,
        sizeof err);
    if (st != GR_OK) {
      if (st == GR_ERR_IO)
        GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
            ("Could not read the extra points \"%s\".", s.extra_location), ("%s", err));
      else
        GST_ELEMENT_ERROR (self, RESOURCE, READ,
            ("Malformed extra points \"%s\": %s", s.extra_location, err), (NULL));
      goto done;
    }
    self->n_extra = ps.n;
    self->extra = take_points (&ps);
  }
  self->output = s.output;
  self->data_term = s.data_term;
  self->data_sigma = s.data_sigma > 0 ? s.data_sigma : s.sigma;
  if (s.data_term != GST_LANDMARK_SHOOT_DATA_LANDMARKS) {
    if (s.data_term != GST_LANDMARK_SHOOT_DATA_POINTS && !self->tcell_size) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("data-term=%s needs a template with connectivity (a PLY file with faces or "
              "edges, or a VTK file with POLYGONS or LINES); \"%s\" has none.",
              s.data_term == GST_LANDMARK_SHOOT_DATA_VARIFOLD ? "varifold"
              : "oriented-varifold", s.template_location), (NULL));
      goto done;
    }
    if (self->tcell_size == 3 && self->dim != 3) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("Triangle meshes must be 3-D for the varifold data terms."), (NULL));
      goto done;
    }
    if (s.batch > 1) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("data-term=varifold, oriented-varifold and point-cloud register one target at "
              "a time for now (batch > 1 is not supported with them)."), (NULL));
      goto done;
    }
    /* the term runs where the shooting runs (data_backend is set from the engine
     * below): on CUDA its kernels go into the shooting's graph (gr_shoot_set_varifold) */
    self->data_cuda_device = s.cuda_device_id;
  }
  if (s.output == GST_LANDMARK_SHOOT_OUTPUT_EXTRA_POINTS && !self->extra) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("output=extra-points needs extra-location (the points to carry along)."),
        (NULL));
    goto done;
  }

  GrShootParams p;
  gr_shoot_params_init (&p);
  p.n = self->n;
  p.dim = self->dim;
  p.sigma = s.sigma;
  p.time_points = s.time_steps;
  p.lambda = s.lambda;
  p.integrator = s.integrator;
  p.precision = s.precision;
  err[0] = '\0';
  self->engine = gr_shoot_new (&p, s.backend, s.cuda_device_id, &st, err, sizeof err);
  if (!self->engine) {
    if (st == GR_ERR_NO_CUDA || st == GR_ERR_CUDA)
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("backend=cuda, but CUDA cannot be used: %s.", err), (NULL));
    else
      GST_ELEMENT_ERROR (self, LIBRARY, INIT,
          ("Could not set up the shooting engine: %s.", err), (NULL));
    goto done;
  }
  if (s.backend == GR_BACKEND_AUTO && gr_shoot_backend (self->engine) == GR_BACKEND_CPU
      && err[0])
    /* auto: the CUDA engine could not be made (e.g. out of device memory) */
    GST_WARNING_OBJECT (self, "backend=auto: the CUDA engine cannot be used (%s); "
        "running on the CPU", err);
  self->data_backend = gr_shoot_backend (self->engine);
  if (gr_shoot_set_template (self->engine, self->q0, err, sizeof err) != GR_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("Unusable template \"%s\": %s.",
            s.template_location, err), (NULL));
    goto done;
  }
  self->batch = s.batch;
  if (s.batch > 1) {
    /* the single engine stays: it shoots each result (and the extra points) */
    self->batch_engine = gr_shoot_batch_new (&p, s.batch, gr_shoot_backend (self->engine),
        s.cuda_device_id, &st, err, sizeof err);
    if (!self->batch_engine || gr_shoot_batch_set_template (self->batch_engine, self->q0,
            err, sizeof err) != GR_OK) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("Could not set up batches of %u targets: %s.", s.batch, err), (NULL));
      goto done;
    }
  }
  self->p0 = g_new0 (gdouble, self->n * self->dim);
  GST_INFO_OBJECT (self, "template \"%s\": %" G_GSIZE_FORMAT " %d-D landmarks; "
      "backend %s (%s)", s.template_location, self->n, self->dim,
      gr_backend_name (gr_shoot_backend (self->engine)),
      gr_shoot_device_description (self->engine));
  ok = TRUE;

done:
  if (!ok)
    release_resources (self);
  g_free (s.template_location);
  g_free (s.extra_location);
  return ok;
}

static gboolean
gst_landmark_shoot_stop (GstBaseTransform * trans)
{
  gst_caps_replace (&GST_LANDMARK_SHOOT (trans)->refused_caps, NULL);
  release_resources (GST_LANDMARK_SHOOT (trans));
  return TRUE;
}

static gboolean
gst_landmark_shoot_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  GstLandmarkShoot *self = GST_LANDMARK_SHOOT (trans);
  if (gst_georeg_caps_refused_before (self->refused_caps, incaps))
    return FALSE;               /* reported at the first attempt */
  gint dim;
  if (!gst_pointset_caps_get_dimensions (incaps, &dim)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Unsupported caps."),
        ("%" GST_PTR_FORMAT, incaps));
    gst_georeg_caps_refused (GST_ELEMENT (self), &self->refused_caps, incaps);
    return FALSE;
  }
  if (self->dim && dim != self->dim) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Dimension mismatch: the targets are %d-D point sets, the template is %d-D.",
            dim, self->dim), (NULL));
    gst_georeg_caps_refused (GST_ELEMENT (self), &self->refused_caps, incaps);
    return FALSE;
  }
  gst_caps_replace (&self->refused_caps, NULL);
  return TRUE;
}

static gboolean
gst_landmark_shoot_transform_size (GstBaseTransform * trans, GstPadDirection direction,
    GstCaps * caps, gsize size, GstCaps * othercaps, gsize * othersize)
{
  GstLandmarkShoot *self = GST_LANDMARK_SHOOT (trans);
  /* the output is the template shot (or the extra points): its size, whatever the
   * target's point count (which differs with the varifold data terms) */
  if (direction == GST_PAD_SINK && self->output == GST_LANDMARK_SHOOT_OUTPUT_EXTRA_POINTS
      && self->dim)
    *othersize = self->n_extra * (gsize) self->dim * 4;
  else if (direction == GST_PAD_SINK && self->dim)
    *othersize = self->n * (gsize) self->dim * 4;
  else
    *othersize = size;
  return TRUE;
}

/* The target's connectivity is not the output's (the template's is attached). */
static gboolean
gst_landmark_shoot_transform_meta (GstBaseTransform * trans, GstBuffer * outbuf,
    GstMeta * meta, GstBuffer * inbuf)
{
  if (meta->info->api == GST_POINT_SET_CELLS_META_API_TYPE)
    return FALSE;
  return GST_BASE_TRANSFORM_CLASS (parent_class)->transform_meta (trans, outbuf, meta,
      inbuf);
}

static gboolean
gst_landmark_shoot_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  GstLandmarkShoot *self = GST_LANDMARK_SHOOT (trans);
  if (GST_EVENT_TYPE (event) == GST_EVENT_FLUSH_START)
    g_atomic_int_set (&self->stop, 1);
  else if (GST_EVENT_TYPE (event) == GST_EVENT_FLUSH_STOP) {
    gst_landmark_shoot_clear_batch_queues (self);
    g_atomic_int_set (&self->stop, 0);
  } else if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && self->batch_engine &&
      !g_queue_is_empty (&self->pending)) {
    /* the last, partial batch: fitted now, its results pushed before the EOS */
    GstFlowReturn ret = gst_landmark_shoot_run_batch (self);
    GstBuffer *buf;
    while (ret == GST_FLOW_OK && (buf = g_queue_pop_head (&self->ready)))
      ret = gst_pad_push (GST_BASE_TRANSFORM_SRC_PAD (trans), buf);
    gst_landmark_shoot_clear_batch_queues (self);
    if (ret != GST_FLOW_OK)
      GST_DEBUG_OBJECT (self, "last batch: %s", gst_flow_get_name (ret));
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

static int
fit_progress (void *user, int iteration, int evaluations, double loss, double gnorm)
{
  ProgressCtx *ctx = user;
  if (ctx->interval > 0 && iteration % ctx->interval == 0) {
    gchar *text = g_strdup_printf ("iteration %d (%d evaluations): loss %.6g, gradient "
        "norm %.3g", iteration, evaluations, loss, gnorm);
    gst_element_post_message (GST_ELEMENT (ctx->self),
        gst_message_new_progress (GST_OBJECT (ctx->self), GST_PROGRESS_TYPE_CONTINUE,
            "landmarkshoot", text));
    g_free (text);
  }
  return g_atomic_int_get (&ctx->self->stop);
}

/* Reads and checks one target buffer into *tgt (self->n points); FALSE after posting
 * the error. */
gboolean
gst_landmark_shoot_read_target (GstLandmarkShoot * self, GstBuffer * inbuf,
    gdouble ** tgt, gsize * count)
{
  gsize n = 0;
  gchar *error = NULL;
  GstMapInfo in;
  *tgt = NULL;
  if (!gst_buffer_map (inbuf, &in, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map the input."), (NULL));
    return FALSE;
  }
  gboolean ok = gst_pointset_read (in.data, in.size, self->dim, tgt, &n, &error);
  gst_buffer_unmap (inbuf, &in);
  if (!ok) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Malformed point-set buffer: %s.", error),
        (NULL));
    g_free (error);
    goto bad;
  }
  if (n == 0) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Empty point set: the target buffer holds no points."), (NULL));
    goto bad;
  }
  if (n == 1 && self->data_term == GST_LANDMARK_SHOOT_DATA_LANDMARKS) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("The target has only one point; the template has %" G_GSIZE_FORMAT
            " (points correspond by index).", self->n), (NULL));
    goto bad;
  }
  if (n != self->n && self->data_term == GST_LANDMARK_SHOOT_DATA_LANDMARKS) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Point count mismatch: the target has %" G_GSIZE_FORMAT " points, the template "
            "%" G_GSIZE_FORMAT " (points correspond by index).", n, self->n), (NULL));
    goto bad;
  }
  *count = n;
  for (gsize i = 0; i < n * self->dim; i++)
    if (!isfinite ((*tgt)[i])) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT,
          ("Target point %" G_GSIZE_FORMAT " has a non-finite coordinate (%s).",
              i / self->dim, isnan ((*tgt)[i]) ? "NaN" : "Inf"), (NULL));
      goto bad;
    }
  return TRUE;

bad:
  g_clear_pointer (tgt, g_free);
  return FALSE;
}

void
gst_landmark_shoot_post_progress (GstLandmarkShoot * self, GstProgressType type,
    const gchar * text)
{
  gst_element_post_message (GST_ELEMENT (self), gst_message_new_progress (GST_OBJECT
          (self), type, "landmarkshoot", text));
}

GrLbfgsParams
gst_landmark_shoot_lbfgs_params (const GstLandmarkShootSettings * s)
{
  GrLbfgsParams lp;
  gr_lbfgs_params_init (&lp);
  lp.max_iterations = (int) MIN (s->max_iterations, (guint) G_MAXINT);
  lp.gtol_rel = s->gradient_tolerance;
  lp.ftol = s->function_tolerance;
  return lp;
}

/* The target's side of a varifold / point-cloud term (its connectivity from the
 * buffer's GstPointSetCellsMeta); NULL after posting the error. */
static GrVarifold *
make_data_term (GstLandmarkShoot * self, GstBuffer * inbuf, const gdouble * tgt,
    gsize ntgt)
{
  char err[256] = "";
  const gboolean points = self->data_term == GST_LANDMARK_SHOOT_DATA_POINTS;
  const GstPointSetCellsMeta *cm = gst_buffer_get_point_set_cells_meta (inbuf);
  if (!points && (!cm || (gint) cm->cell_size != self->tcell_size)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("The target has no %s: the varifold data "
            "terms need the target's connectivity like the template's (read from PLY "
            "faces or edges, VTK POLYGONS or LINES by pointsetparse).",
            self->tcell_size == 3 ? "triangles" : "segments"), (NULL));
    return NULL;
  }
  GrVarifoldParams vp = { self->dim, points ? 1 : self->tcell_size, self->data_sigma,
    self->data_term == GST_LANDMARK_SHOOT_DATA_ORIENTED ? GR_VARIFOLD_ORIENTED
        : GR_VARIFOLD_UNORIENTED, 0, 0 };
  GrStatus st;
  GrVarifold *v = gr_varifold_new_backend (&vp, self->data_backend,
      self->data_cuda_device, tgt, ntgt, points ? NULL : cm->cells,
      points ? 0 : cm->ncells, &st, err, sizeof err);
  if (!v && (st == GR_ERR_NO_CUDA || st == GR_ERR_CUDA))
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("backend=cuda, but the data term cannot run on CUDA: %s.", err), (NULL));
  else if (!v)
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Unusable target shape: %s.", err), (NULL));
  return v;
}

static GstFlowReturn
gst_landmark_shoot_transform (GstBaseTransform * trans, GstBuffer * inbuf,
    GstBuffer * outbuf)
{
  GstLandmarkShoot *self = GST_LANDMARK_SHOOT (trans);
  GstLandmarkShootSettings s;
  char err[512] = "";
  GstFlowReturn ret = GST_FLOW_ERROR;
  gdouble *tgt = NULL;
  const gsize n = self->n;

  if (!self->engine) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("Not started."), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GST_OBJECT_LOCK (self);
  s = self->settings;
  GST_OBJECT_UNLOCK (self);

  gsize ntgt = 0;
  GrVarifold *vf = NULL;
  if (!gst_landmark_shoot_read_target (self, inbuf, &tgt, &ntgt))
    return GST_FLOW_ERROR;
  if (self->data_term != GST_LANDMARK_SHOOT_DATA_LANDMARKS) {
    if (!(vf = make_data_term (self, inbuf, tgt, ntgt)))
      goto out;
    if (gr_shoot_set_varifold (self->engine, vf, self->tcells, self->ntcells, err,
            sizeof err) != GR_OK) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not set the data term: %s.", err),
          (NULL));
      goto out;
    }
  } else if (gr_shoot_set_target (self->engine, tgt, err, sizeof err) != GR_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not set the target: %s.", err),
        (NULL));
    goto out;
  }

  const gchar *backend = gr_backend_name (gr_shoot_backend (self->engine));
  const gchar *device = gr_shoot_device_description (self->engine);
  if (!self->announced) {
    GST_INFO_OBJECT (self, "registering on the %s backend: %s", backend, device);
    self->announced = TRUE;
  }
  {
    gchar *text = g_strdup_printf ("Registering %" G_GSIZE_FORMAT " %d-D landmarks on "
        "the %s backend (%s)", n, self->dim, backend, device);
    gst_landmark_shoot_post_progress (self, GST_PROGRESS_TYPE_START, text);
    g_free (text);
  }

  if (!s.warm_start || !self->have_p0)
    memset (self->p0, 0, sizeof (gdouble) * n * self->dim);
  GrLbfgsParams lp = gst_landmark_shoot_lbfgs_params (&s);
  ProgressCtx pctx = { self, s.progress_interval };
  GrShootFitResult res;
  GrStatus st = gr_shoot_fit (self->engine, self->p0, &lp, fit_progress, &pctx, &res,
      err, sizeof err);
  if (st != GR_OK) {
    gst_landmark_shoot_post_progress (self, GST_PROGRESS_TYPE_ERROR,
        "Registration failed");
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Geodesic shooting failed: %s.", err),
        (NULL));
    goto out;
  }
  if (res.result == GR_LBFGS_STOPPED) {
    gst_landmark_shoot_post_progress (self, GST_PROGRESS_TYPE_CANCELED,
        "Registration stopped");
    GST_DEBUG_OBJECT (self, "stopped (flushing or shutting down)");
    ret = GST_FLOW_FLUSHING;
    goto out;
  }
  self->have_p0 = TRUE;
  {
    gchar *text = g_strdup_printf ("Done: %d iterations, %s", res.iterations,
        gr_lbfgs_result_string (res.result));
    gst_landmark_shoot_post_progress (self, GST_PROGRESS_TYPE_COMPLETE, text);
    g_free (text);
  }
  ret = gst_landmark_shoot_emit_result (self, &s, inbuf, tgt, self->p0, &res, outbuf);

out:
  if (vf) {
    gr_shoot_set_varifold (self->engine, NULL, NULL, 0, NULL, 0);
    gr_varifold_free (vf);
  }
  g_free (tgt);
  return ret;
}

static GstFlowReturn
gst_landmark_shoot_submit_input_buffer (GstBaseTransform * trans, gboolean is_discont,
    GstBuffer * input)
{
  GstLandmarkShoot *self = GST_LANDMARK_SHOOT (trans);
  if (self->batch <= 1 || !self->batch_engine)
    return GST_BASE_TRANSFORM_CLASS (parent_class)->submit_input_buffer (trans,
        is_discont, input);
  return gst_landmark_shoot_queue_target (self, input);
}

static GstFlowReturn
gst_landmark_shoot_generate_output (GstBaseTransform * trans, GstBuffer ** outbuf)
{
  GstLandmarkShoot *self = GST_LANDMARK_SHOOT (trans);
  if (self->batch <= 1 || !self->batch_engine)
    return GST_BASE_TRANSFORM_CLASS (parent_class)->generate_output (trans, outbuf);
  *outbuf = g_queue_pop_head (&self->ready);
  return GST_FLOW_OK;
}

static GstStateChangeReturn
gst_landmark_shoot_change_state (GstElement * element, GstStateChange transition)
{
  GstLandmarkShoot *self = GST_LANDMARK_SHOOT (element);
  /* a running fit checks this flag after every iteration */
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    g_atomic_int_set (&self->stop, 1);
  return GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
}

static void
gst_landmark_shoot_finalize (GObject * object)
{
  GstLandmarkShoot *self = GST_LANDMARK_SHOOT (object);
  release_resources (self);
  g_free (self->settings.template_location);
  g_free (self->settings.extra_location);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_landmark_shoot_class_init (GstLandmarkShootClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);

  gobject_class->set_property = gst_landmark_shoot_set_property;
  gobject_class->get_property = gst_landmark_shoot_get_property;
  gobject_class->finalize = gst_landmark_shoot_finalize;
  gst_landmark_shoot_install_properties (gobject_class);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Landmark geodesic shooting", "Filter/Analyzer",
      "Diffeomorphic landmark matching (Hamiltonian LDDMM): finds the initial momentum "
      "whose geodesic flow carries the template-location landmarks onto each incoming "
      "target point set (same count, matched by index), by L-BFGS on kinetic energy + "
      "lambda x mismatch with exact adjoint gradients, on CUDA or multi-threaded CPU. "
      "Outputs the shot template with a GstLandmarkShootMeta (momentum, energy, "
      "mismatch, iterations, convergence) and a 'landmarkshoot' message",
      "georeg developers");

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_landmark_shoot_change_state);
  trans_class->start = GST_DEBUG_FUNCPTR (gst_landmark_shoot_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_landmark_shoot_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_landmark_shoot_set_caps);
  trans_class->transform_size = GST_DEBUG_FUNCPTR (gst_landmark_shoot_transform_size);
  trans_class->transform = GST_DEBUG_FUNCPTR (gst_landmark_shoot_transform);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (gst_landmark_shoot_sink_event);
  trans_class->submit_input_buffer =
      GST_DEBUG_FUNCPTR (gst_landmark_shoot_submit_input_buffer);
  trans_class->generate_output = GST_DEBUG_FUNCPTR (gst_landmark_shoot_generate_output);
  trans_class->transform_meta = GST_DEBUG_FUNCPTR (gst_landmark_shoot_transform_meta);
  trans_class->passthrough_on_same_caps = FALSE;

  gst_type_mark_as_plugin_api (GST_TYPE_GEOREG_BACKEND, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_LANDMARK_SHOOT_INTEGRATOR, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_LANDMARK_SHOOT_PRECISION, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_LANDMARK_SHOOT_OUTPUT, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_LANDMARK_SHOOT_DATA_TERM, 0);
  GST_DEBUG_CATEGORY_INIT (gst_landmark_shoot_debug, "landmarkshoot", 0,
      "landmark geodesic shooting");
}

static void
gst_landmark_shoot_init (GstLandmarkShoot * self)
{
  gst_landmark_shoot_settings_init (&self->settings);
  g_queue_init (&self->pending);
  g_queue_init (&self->ready);
}
