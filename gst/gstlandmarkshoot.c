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

GST_DEBUG_CATEGORY_STATIC (gst_landmark_shoot_debug);
#define GST_CAT_DEFAULT gst_landmark_shoot_debug

enum {
  PROP_0,
  PROP_TEMPLATE_LOCATION,
  PROP_SIGMA,
  PROP_TIME_STEPS,
  PROP_LAMBDA,
  PROP_MAX_ITERATIONS,
  PROP_GRADIENT_TOLERANCE,
  PROP_FUNCTION_TOLERANCE,
  PROP_INTEGRATOR,
  PROP_PRECISION,
  PROP_BACKEND,
  PROP_CUDA_DEVICE_ID,
  PROP_EXTRA_LOCATION,
  PROP_OUTPUT,
  PROP_WARM_START,
  PROP_POST_MESSAGES,
  PROP_PROGRESS_INTERVAL,
  PROP_BATCH,
  PROP_DATA_TERM,
  PROP_DATA_SIGMA,
};

#define DEFAULT_SIGMA 1.5
#define DEFAULT_TIME_STEPS 40
#define DEFAULT_LAMBDA 5e5
#define DEFAULT_MAX_ITERATIONS 400
#define DEFAULT_GRADIENT_TOLERANCE 1e-6
#define DEFAULT_FUNCTION_TOLERANCE 1e-9
#define DEFAULT_INTEGRATOR GR_SHOOT_EULER
#define DEFAULT_PRECISION GR_SHOOT_FLOAT32
#define DEFAULT_BACKEND GR_BACKEND_AUTO
#define DEFAULT_CUDA_DEVICE_ID -1
#define DEFAULT_OUTPUT GST_LANDMARK_SHOOT_OUTPUT_LANDMARKS
#define DEFAULT_WARM_START FALSE
#define DEFAULT_POST_MESSAGES TRUE
#define DEFAULT_PROGRESS_INTERVAL 10
#define DEFAULT_BATCH 1
#define DEFAULT_DATA_TERM GST_LANDMARK_SHOOT_DATA_LANDMARKS
#define DEFAULT_DATA_SIGMA 0.0

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_POINTSET_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_POINTSET_CAPS));

GType
gst_landmark_shoot_integrator_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GR_SHOOT_EULER, "forward Euler (as the seed)", "euler"},
    {GR_SHOOT_RALSTON, "Ralston's second-order Runge-Kutta (twice the work per step)",
        "ralston"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstLandmarkShootIntegrator", values));
  return type;
}

GType
gst_landmark_shoot_precision_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GR_SHOOT_FLOAT32,
        "float32 pair arithmetic and storage, float64 sums, integration and loss",
        "float32-f64acc"},
    {GR_SHOOT_FLOAT64, "float64 throughout (slower, reference)", "float64"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstLandmarkShootPrecision",
            values));
  return type;
}

GType
gst_landmark_shoot_output_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_LANDMARK_SHOOT_OUTPUT_LANDMARKS, "the shot template landmarks q(1)",
        "landmarks"},
    {GST_LANDMARK_SHOOT_OUTPUT_EXTRA_POINTS,
        "the extra-location points carried along the same flow", "extra-points"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstLandmarkShootOutput", values));
  return type;
}

GType
gst_landmark_shoot_data_term_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_LANDMARK_SHOOT_DATA_LANDMARKS, "landmarks: sum |q_i(1) - target_i|^2 (same "
          "count, same order)", "landmarks"},
    {GST_LANDMARK_SHOOT_DATA_VARIFOLD, "unoriented varifold: meshes or curves, no "
          "correspondence needed (connectivity from the files)", "varifold"},
    {GST_LANDMARK_SHOOT_DATA_ORIENTED, "oriented varifold (currents): as varifold, "
          "the cells' orientation counts", "oriented-varifold"},
    {GST_LANDMARK_SHOOT_DATA_POINTS, "point-cloud kernel distance: no correspondence, "
          "no connectivity", "point-cloud"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstLandmarkShootDataTerm",
            values));
  return type;
}

#define gst_landmark_shoot_parent_class parent_class
G_DEFINE_TYPE (GstLandmarkShoot, gst_landmark_shoot, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (landmarkshoot, "landmarkshoot", GST_RANK_NONE,
    GST_TYPE_LANDMARK_SHOOT);

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

static GstFlowReturn run_batch (GstLandmarkShoot * self);

/* Drops the collected targets and the results not pushed yet (flush, stop). */
static void
clear_batch_queues (GstLandmarkShoot * self)
{
  g_queue_clear_full (&self->pending, pending_target_free);
  g_queue_clear_full (&self->ready, (GDestroyNotify) gst_buffer_unref);
}

static void
release_resources (GstLandmarkShoot * self)
{
  clear_batch_queues (self);
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
    if (s.backend == GR_BACKEND_CUDA || s.batch > 1) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("data-term=varifold, oriented-varifold and point-cloud run on the CPU backend "
              "and one target at a time for now (backend=cuda and batch > 1 are not "
              "supported with them)."), (NULL));
      goto done;
    }
    s.backend = GR_BACKEND_CPU;
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
    clear_batch_queues (self);
    g_atomic_int_set (&self->stop, 0);
  } else if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && self->batch_engine &&
      !g_queue_is_empty (&self->pending)) {
    /* the last, partial batch: fitted now, its results pushed before the EOS */
    GstFlowReturn ret = run_batch (self);
    GstBuffer *buf;
    while (ret == GST_FLOW_OK && (buf = g_queue_pop_head (&self->ready)))
      ret = gst_pad_push (GST_BASE_TRANSFORM_SRC_PAD (trans), buf);
    clear_batch_queues (self);
    if (ret != GST_FLOW_OK)
      GST_DEBUG_OBJECT (self, "last batch: %s", gst_flow_get_name (ret));
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

typedef struct {
  GstLandmarkShoot *self;
  guint interval;
} ProgressCtx;

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

/* Reads and checks one target buffer into *tgt (self->n points); FALSE after posting
 * the error. */
static gboolean
read_target (GstLandmarkShoot * self, GstBuffer * inbuf, gdouble ** tgt, gsize * count)
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

static void
post_progress (GstLandmarkShoot * self, GstProgressType type, const gchar * text)
{
  gst_element_post_message (GST_ELEMENT (self), gst_message_new_progress (GST_OBJECT
          (self), type, "landmarkshoot", text));
}

static GrLbfgsParams
lbfgs_params (const GstLandmarkShootSettings * s)
{
  GrLbfgsParams lp;
  gr_lbfgs_params_init (&lp);
  lp.max_iterations = (int) MIN (s->max_iterations, (guint) G_MAXINT);
  lp.gtol_rel = s->gradient_tolerance;
  lp.ftol = s->function_tolerance;
  return lp;
}

/* After the fit of target tgt (momentum p0, result res): shoots the template (and the
 * extra points) with the single engine, writes outbuf, adds the meta and posts the
 * messages. */
static GstFlowReturn
emit_result (GstLandmarkShoot * self, const GstLandmarkShootSettings * s,
    GstBuffer * inbuf, const gdouble * tgt, const gdouble * p0,
    const GrShootFitResult * res, GstBuffer * outbuf)
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

typedef struct {
  GrVarifold *v;
  const guint32 *cells;         /* the template's (NULL for point clouds) */
  gsize ncells;
  gsize n;
} DataTermCtx;

static GrStatus
data_term_eval (void *user, const double *q1, double *mismatch, double *grad_q1,
    char *errbuf, size_t errlen)
{
  DataTermCtx *c = user;
  return gr_varifold_distance (c->v, q1, c->n, c->cells, c->ncells, mismatch, grad_q1,
      errbuf, errlen);
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
  GrVarifold *v = gr_varifold_new (&vp, tgt, ntgt, points ? NULL : cm->cells,
      points ? 0 : cm->ncells, err, sizeof err);
  if (!v)
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
  DataTermCtx dctx = { NULL, NULL, 0, 0 };
  if (!read_target (self, inbuf, &tgt, &ntgt))
    return GST_FLOW_ERROR;
  if (self->data_term != GST_LANDMARK_SHOOT_DATA_LANDMARKS) {
    if (!(vf = make_data_term (self, inbuf, tgt, ntgt)))
      goto out;
    dctx.v = vf;
    dctx.cells = self->tcells;
    dctx.ncells = self->ntcells;
    dctx.n = self->n;
    gr_shoot_set_data_term (self->engine, data_term_eval, &dctx, NULL, 0);
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
    post_progress (self, GST_PROGRESS_TYPE_START, text);
    g_free (text);
  }

  if (!s.warm_start || !self->have_p0)
    memset (self->p0, 0, sizeof (gdouble) * n * self->dim);
  GrLbfgsParams lp = lbfgs_params (&s);
  ProgressCtx pctx = { self, s.progress_interval };
  GrShootFitResult res;
  GrStatus st = gr_shoot_fit (self->engine, self->p0, &lp, fit_progress, &pctx, &res,
      err, sizeof err);
  if (st != GR_OK) {
    post_progress (self, GST_PROGRESS_TYPE_ERROR, "Registration failed");
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Geodesic shooting failed: %s.", err),
        (NULL));
    goto out;
  }
  if (res.result == GR_LBFGS_STOPPED) {
    post_progress (self, GST_PROGRESS_TYPE_CANCELED, "Registration stopped");
    GST_DEBUG_OBJECT (self, "stopped (flushing or shutting down)");
    ret = GST_FLOW_FLUSHING;
    goto out;
  }
  self->have_p0 = TRUE;
  {
    gchar *text = g_strdup_printf ("Done: %d iterations, %s", res.iterations,
        gr_lbfgs_result_string (res.result));
    post_progress (self, GST_PROGRESS_TYPE_COMPLETE, text);
    g_free (text);
  }
  ret = emit_result (self, &s, inbuf, tgt, self->p0, &res, outbuf);

out:
  if (vf) {
    gr_shoot_set_data_term (self->engine, NULL, NULL, NULL, 0);
    gr_varifold_free (vf);
  }
  g_free (tgt);
  return ret;
}

/* ---- batches (batch > 1) ------------------------------------------------------------ */

typedef struct {
  GstLandmarkShoot *self;
  guint interval;
} BatchProgressCtx;

static int
batch_progress (void *user, size_t subject, int iteration, int evaluations, double loss,
    double gnorm)
{
  BatchProgressCtx *ctx = user;
  if (ctx->interval > 0 && iteration % ctx->interval == 0) {
    gchar *text = g_strdup_printf ("target %zu of the batch: iteration %d (%d "
        "evaluations): loss %.6g, gradient norm %.3g", subject, iteration, evaluations,
        loss, gnorm);
    post_progress (ctx->self, GST_PROGRESS_TYPE_CONTINUE, text);
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
static GstFlowReturn
run_batch (GstLandmarkShoot * self)
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
    post_progress (self, GST_PROGRESS_TYPE_START, text);
    g_free (text);
  }
  GrLbfgsParams lp = lbfgs_params (&s);
  BatchProgressCtx pctx = { self, s.progress_interval };
  GrStatus st = gr_shoot_batch_fit (self->batch_engine, count, p0, &lp, batch_progress,
      &pctx, res, err, sizeof err);
  if (st != GR_OK) {
    post_progress (self, GST_PROGRESS_TYPE_ERROR, "Registration failed");
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Geodesic shooting failed: %s.", err),
        (NULL));
    goto out;
  }
  for (k = 0; k < count; k++)
    if (res[k].result == GR_LBFGS_STOPPED) {
      post_progress (self, GST_PROGRESS_TYPE_CANCELED, "Registration stopped");
      ret = GST_FLOW_FLUSHING;
      goto out;
    }
  post_progress (self, GST_PROGRESS_TYPE_COMPLETE, "Done: batch registered");
  const gboolean extra_out = self->output == GST_LANDMARK_SHOOT_OUTPUT_EXTRA_POINTS;
  const gsize out_size = (extra_out ? self->n_extra : self->n) * (gsize) self->dim * 4;
  for (k = 0; k < count; k++) {
    PendingTarget *pt = g_queue_pop_head (&self->pending);
    GstBuffer *outbuf = gst_buffer_new_allocate (NULL, out_size, NULL);
    gst_buffer_copy_into (outbuf, pt->buf, GST_BUFFER_COPY_METADATA, 0, -1);
    gst_buffer_foreach_meta (outbuf, drop_cells_meta, NULL);
    ret = emit_result (self, &s, pt->buf, pt->tgt, p0 + k * dn, &res[k], outbuf);
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

static GstFlowReturn
gst_landmark_shoot_submit_input_buffer (GstBaseTransform * trans, gboolean is_discont,
    GstBuffer * input)
{
  GstLandmarkShoot *self = GST_LANDMARK_SHOOT (trans);
  if (self->batch <= 1 || !self->batch_engine)
    return GST_BASE_TRANSFORM_CLASS (parent_class)->submit_input_buffer (trans,
        is_discont, input);
  gdouble *tgt;
  gsize count;
  if (!read_target (self, input, &tgt, &count)) {
    gst_buffer_unref (input);
    return GST_FLOW_ERROR;
  }
  PendingTarget *pt = g_new (PendingTarget, 1);
  pt->buf = input;
  pt->tgt = tgt;
  g_queue_push_tail (&self->pending, pt);
  if (g_queue_get_length (&self->pending) < self->batch)
    return GST_FLOW_OK;
  return run_batch (self);
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
gst_landmark_shoot_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  GstLandmarkShoot *self = GST_LANDMARK_SHOOT (object);
  GstLandmarkShootSettings *s = &self->settings;
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_TEMPLATE_LOCATION:
      g_free (s->template_location);
      s->template_location = g_value_dup_string (value);
      break;
    case PROP_EXTRA_LOCATION:
      g_free (s->extra_location);
      s->extra_location = g_value_dup_string (value);
      break;
    case PROP_SIGMA:
      s->sigma = g_value_get_double (value);
      break;
    case PROP_TIME_STEPS:
      s->time_steps = g_value_get_int (value);
      break;
    case PROP_LAMBDA:
      s->lambda = g_value_get_double (value);
      break;
    case PROP_MAX_ITERATIONS:
      s->max_iterations = g_value_get_uint (value);
      break;
    case PROP_GRADIENT_TOLERANCE:
      s->gradient_tolerance = g_value_get_double (value);
      break;
    case PROP_FUNCTION_TOLERANCE:
      s->function_tolerance = g_value_get_double (value);
      break;
    case PROP_INTEGRATOR:
      s->integrator = g_value_get_enum (value);
      break;
    case PROP_PRECISION:
      s->precision = g_value_get_enum (value);
      break;
    case PROP_BACKEND:
      s->backend = g_value_get_enum (value);
      break;
    case PROP_CUDA_DEVICE_ID:
      s->cuda_device_id = g_value_get_int (value);
      break;
    case PROP_OUTPUT:
      s->output = g_value_get_enum (value);
      break;
    case PROP_WARM_START:
      s->warm_start = g_value_get_boolean (value);
      break;
    case PROP_POST_MESSAGES:
      s->post_messages = g_value_get_boolean (value);
      break;
    case PROP_PROGRESS_INTERVAL:
      s->progress_interval = g_value_get_uint (value);
      break;
    case PROP_BATCH:
      s->batch = g_value_get_uint (value);
      break;
    case PROP_DATA_TERM:
      s->data_term = g_value_get_enum (value);
      break;
    case PROP_DATA_SIGMA:
      s->data_sigma = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_landmark_shoot_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstLandmarkShoot *self = GST_LANDMARK_SHOOT (object);
  GstLandmarkShootSettings *s = &self->settings;
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_TEMPLATE_LOCATION:
      g_value_set_string (value, s->template_location);
      break;
    case PROP_EXTRA_LOCATION:
      g_value_set_string (value, s->extra_location);
      break;
    case PROP_SIGMA:
      g_value_set_double (value, s->sigma);
      break;
    case PROP_TIME_STEPS:
      g_value_set_int (value, s->time_steps);
      break;
    case PROP_LAMBDA:
      g_value_set_double (value, s->lambda);
      break;
    case PROP_MAX_ITERATIONS:
      g_value_set_uint (value, s->max_iterations);
      break;
    case PROP_GRADIENT_TOLERANCE:
      g_value_set_double (value, s->gradient_tolerance);
      break;
    case PROP_FUNCTION_TOLERANCE:
      g_value_set_double (value, s->function_tolerance);
      break;
    case PROP_INTEGRATOR:
      g_value_set_enum (value, s->integrator);
      break;
    case PROP_PRECISION:
      g_value_set_enum (value, s->precision);
      break;
    case PROP_BACKEND:
      g_value_set_enum (value, s->backend);
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int (value, s->cuda_device_id);
      break;
    case PROP_OUTPUT:
      g_value_set_enum (value, s->output);
      break;
    case PROP_WARM_START:
      g_value_set_boolean (value, s->warm_start);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, s->post_messages);
      break;
    case PROP_PROGRESS_INTERVAL:
      g_value_set_uint (value, s->progress_interval);
      break;
    case PROP_BATCH:
      g_value_set_uint (value, s->batch);
      break;
    case PROP_DATA_TERM:
      g_value_set_enum (value, s->data_term);
      break;
    case PROP_DATA_SIGMA:
      g_value_set_double (value, s->data_sigma);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
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
  const GParamFlags rw_ready = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;
  const GParamFlags rw_playing = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_PLAYING;

  gobject_class->set_property = gst_landmark_shoot_set_property;
  gobject_class->get_property = gst_landmark_shoot_get_property;
  gobject_class->finalize = gst_landmark_shoot_finalize;

  g_object_class_install_property (gobject_class, PROP_TEMPLATE_LOCATION,
      g_param_spec_string ("template-location", "Template location",
          "Template landmark file (CSV/whitespace text, PLY ASCII or legacy VTK, as "
          "pointsetparse reads): the points shot onto every target", NULL, rw_ready));
  g_object_class_install_property (gobject_class, PROP_SIGMA,
      g_param_spec_double ("sigma", "Sigma",
          "Kernel width in coordinate units: g(r) = exp(-r^2 / (2 sigma^2))",
          1e-9, G_MAXDOUBLE, DEFAULT_SIGMA, rw_ready));
  g_object_class_install_property (gobject_class, PROP_TIME_STEPS,
      g_param_spec_int ("time-steps", "Time steps",
          "Time points T of the geodesic over [0, 1], both ends included "
          "(T - 1 integration steps of 1/(T - 1))", 2, 100000, DEFAULT_TIME_STEPS,
          rw_ready));
  g_object_class_install_property (gobject_class, PROP_LAMBDA,
      g_param_spec_double ("lambda", "Lambda",
          "Weight of the mismatch: loss = H(q0, p0) + lambda / 2 sum |q(1) - target|^2",
          1e-12, G_MAXDOUBLE, DEFAULT_LAMBDA, rw_ready));
  g_object_class_install_property (gobject_class, PROP_MAX_ITERATIONS,
      g_param_spec_uint ("max-iterations", "Maximum iterations",
          "L-BFGS iterations per target at most (0 = until a tolerance is met)",
          0, G_MAXINT, DEFAULT_MAX_ITERATIONS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_GRADIENT_TOLERANCE,
      g_param_spec_double ("gradient-tolerance", "Gradient tolerance",
          "Stop when the gradient norm falls below this fraction of its initial value "
          "(0 = off)", 0.0, 1.0, DEFAULT_GRADIENT_TOLERANCE, rw_playing));
  g_object_class_install_property (gobject_class, PROP_FUNCTION_TOLERANCE,
      g_param_spec_double ("function-tolerance", "Function tolerance",
          "Stop when the loss decreased by less than this fraction over the last 5 "
          "iterations (0 = off)", 0.0, 1.0, DEFAULT_FUNCTION_TOLERANCE, rw_playing));
  g_object_class_install_property (gobject_class, PROP_INTEGRATOR,
      g_param_spec_enum ("integrator", "Integrator", "Time integration of the geodesic",
          GST_TYPE_LANDMARK_SHOOT_INTEGRATOR, DEFAULT_INTEGRATOR, rw_ready));
  g_object_class_install_property (gobject_class, PROP_PRECISION,
      g_param_spec_enum ("precision", "Precision", "Arithmetic of the pair sums",
          GST_TYPE_LANDMARK_SHOOT_PRECISION, DEFAULT_PRECISION, rw_ready));
  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend", "Where the shooting runs",
          GST_TYPE_GEOREG_BACKEND, DEFAULT_BACKEND, rw_ready));
  g_object_class_install_property (gobject_class, PROP_CUDA_DEVICE_ID,
      g_param_spec_int ("cuda-device-id", "CUDA device id",
          "CUDA device to use (-1 = any)", -1, G_MAXINT, DEFAULT_CUDA_DEVICE_ID,
          rw_ready));
  g_object_class_install_property (gobject_class, PROP_EXTRA_LOCATION,
      g_param_spec_string ("extra-location", "Extra points location",
          "Optional point file (mesh vertices, a grid, ...) carried along the same "
          "geodesic by the interpolated velocity v(x, t) = sum_l g(|q_l - x|) p_l(t); "
          "see output", NULL, rw_ready));
  g_object_class_install_property (gobject_class, PROP_OUTPUT,
      g_param_spec_enum ("output", "Output",
          "What the output buffer holds", GST_TYPE_LANDMARK_SHOOT_OUTPUT,
          DEFAULT_OUTPUT, rw_ready));
  g_object_class_install_property (gobject_class, PROP_WARM_START,
      g_param_spec_boolean ("warm-start", "Warm start",
          "Start each target from the previous target's momentum instead of zero "
          "(for sequences of similar targets)", DEFAULT_WARM_START, rw_playing));
  g_object_class_install_property (gobject_class, PROP_POST_MESSAGES,
      g_param_spec_boolean ("post-messages", "Post messages",
          "Post an element message 'landmarkshoot' per target", DEFAULT_POST_MESSAGES,
          rw_playing));
  g_object_class_install_property (gobject_class, PROP_PROGRESS_INTERVAL,
      g_param_spec_uint ("progress-interval", "Progress interval",
          "Post a GST_MESSAGE_PROGRESS every this many iterations (0 = only at the "
          "start and the end)", 0, G_MAXINT, DEFAULT_PROGRESS_INTERVAL, rw_playing));

  g_object_class_install_property (gobject_class, PROP_BATCH,
      g_param_spec_uint ("batch", "Batch",
          "Targets registered together (a population): collected up to this count or "
          "to EOS, fitted at once (each with its own momenta and L-BFGS; on CUDA one "
          "launch covers them all), results pushed in order; 1 = one at a time",
          1, 65535, DEFAULT_BATCH, rw_ready));
  g_object_class_install_property (gobject_class, PROP_DATA_TERM,
      g_param_spec_enum ("data-term", "Data term",
          "What the mismatch measures: landmarks (same count, same order), or, for "
          "shapes without correspondence, a varifold (meshes or curves: connectivity "
          "from the template file and the target buffers), an oriented varifold "
          "(currents) or a point-cloud kernel distance (CPU backend)",
          GST_TYPE_LANDMARK_SHOOT_DATA_TERM, DEFAULT_DATA_TERM, rw_ready));
  g_object_class_install_property (gobject_class, PROP_DATA_SIGMA,
      g_param_spec_double ("data-sigma", "Data term sigma",
          "Width of the varifold / point-cloud kernel exp(-|c - c'|^2 / data-sigma^2) in "
          "coordinate units (0 = sigma)", 0.0, G_MAXDOUBLE, DEFAULT_DATA_SIGMA,
          rw_ready));

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
  GstLandmarkShootSettings *s = &self->settings;
  s->sigma = DEFAULT_SIGMA;
  s->time_steps = DEFAULT_TIME_STEPS;
  s->lambda = DEFAULT_LAMBDA;
  s->max_iterations = DEFAULT_MAX_ITERATIONS;
  s->gradient_tolerance = DEFAULT_GRADIENT_TOLERANCE;
  s->function_tolerance = DEFAULT_FUNCTION_TOLERANCE;
  s->integrator = DEFAULT_INTEGRATOR;
  s->precision = DEFAULT_PRECISION;
  s->backend = DEFAULT_BACKEND;
  s->cuda_device_id = DEFAULT_CUDA_DEVICE_ID;
  s->output = DEFAULT_OUTPUT;
  s->warm_start = DEFAULT_WARM_START;
  s->post_messages = DEFAULT_POST_MESSAGES;
  s->progress_interval = DEFAULT_PROGRESS_INTERVAL;
  s->batch = DEFAULT_BATCH;
  s->data_term = DEFAULT_DATA_TERM;
  s->data_sigma = DEFAULT_DATA_SIGMA;
  g_queue_init (&self->pending);
  g_queue_init (&self->ready);
}
