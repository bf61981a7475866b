/* landmarkshoot's properties: their enums, specs, defaults, and the table that maps
 * each property to its field of GstLandmarkShootSettings, so that one pair of generic
 * accessors (by the spec's value type) replaces a switch per property.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "gstlandmarkshoot.h"
#include "gstlandmarkshoot-private.h"
#include "gstgeoregutils.h"
#include "gstgeoregprops.h"

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
#define DEFAULT_BACKEND GST_GEOREG_DEFAULT_BACKEND
#define DEFAULT_CUDA_DEVICE_ID GST_GEOREG_DEFAULT_CUDA_DEVICE_ID
#define DEFAULT_OUTPUT GST_LANDMARK_SHOOT_OUTPUT_LANDMARKS
#define DEFAULT_WARM_START FALSE
#define DEFAULT_POST_MESSAGES GST_GEOREG_DEFAULT_POST_MESSAGES
#define DEFAULT_PROGRESS_INTERVAL 10
#define DEFAULT_BATCH 1
#define DEFAULT_DATA_TERM GST_LANDMARK_SHOOT_DATA_LANDMARKS
#define DEFAULT_DATA_SIGMA 0.0

/* the settings field of each property */
static const gsize prop_field[] = {
  [PROP_TEMPLATE_LOCATION] = G_STRUCT_OFFSET (GstLandmarkShootSettings, template_location),
  [PROP_SIGMA] = G_STRUCT_OFFSET (GstLandmarkShootSettings, sigma),
  [PROP_TIME_STEPS] = G_STRUCT_OFFSET (GstLandmarkShootSettings, time_steps),
  [PROP_LAMBDA] = G_STRUCT_OFFSET (GstLandmarkShootSettings, lambda),
  [PROP_MAX_ITERATIONS] = G_STRUCT_OFFSET (GstLandmarkShootSettings, max_iterations),
  [PROP_GRADIENT_TOLERANCE] = G_STRUCT_OFFSET (GstLandmarkShootSettings, gradient_tolerance),
  [PROP_FUNCTION_TOLERANCE] = G_STRUCT_OFFSET (GstLandmarkShootSettings, function_tolerance),
  [PROP_INTEGRATOR] = G_STRUCT_OFFSET (GstLandmarkShootSettings, integrator),
  [PROP_PRECISION] = G_STRUCT_OFFSET (GstLandmarkShootSettings, precision),
  [PROP_BACKEND] = G_STRUCT_OFFSET (GstLandmarkShootSettings, backend),
  [PROP_CUDA_DEVICE_ID] = G_STRUCT_OFFSET (GstLandmarkShootSettings, cuda_device_id),
  [PROP_EXTRA_LOCATION] = G_STRUCT_OFFSET (GstLandmarkShootSettings, extra_location),
  [PROP_OUTPUT] = G_STRUCT_OFFSET (GstLandmarkShootSettings, output),
  [PROP_WARM_START] = G_STRUCT_OFFSET (GstLandmarkShootSettings, warm_start),
  [PROP_POST_MESSAGES] = G_STRUCT_OFFSET (GstLandmarkShootSettings, post_messages),
  [PROP_PROGRESS_INTERVAL] = G_STRUCT_OFFSET (GstLandmarkShootSettings, progress_interval),
  [PROP_BATCH] = G_STRUCT_OFFSET (GstLandmarkShootSettings, batch),
  [PROP_DATA_TERM] = G_STRUCT_OFFSET (GstLandmarkShootSettings, data_term),
  [PROP_DATA_SIGMA] = G_STRUCT_OFFSET (GstLandmarkShootSettings, data_sigma),
};

GType
gst_landmark_shoot_integrator_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GR_SHOOT_EULER, "forward Euler (one evaluation per step)", "euler"},
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

/* Reads or writes the settings field of a property, whatever its value type (the
 * enums are stored as the int-sized C enums of the settings). */
static void
field_from_value (gpointer field, const GValue * value)
{
  switch (G_TYPE_FUNDAMENTAL (G_VALUE_TYPE (value))) {
    case G_TYPE_STRING:
      g_free (*(gchar **) field);
      *(gchar **) field = g_value_dup_string (value);
      break;
    case G_TYPE_DOUBLE:
      *(gdouble *) field = g_value_get_double (value);
      break;
    case G_TYPE_INT:
      *(gint *) field = g_value_get_int (value);
      break;
    case G_TYPE_UINT:
      *(guint *) field = g_value_get_uint (value);
      break;
    case G_TYPE_BOOLEAN:
      *(gboolean *) field = g_value_get_boolean (value);
      break;
    case G_TYPE_ENUM:
      *(gint *) field = g_value_get_enum (value);
      break;
    default:
      g_assert_not_reached ();
  }
}

static void
field_to_value (gconstpointer field, GValue * value)
{
  switch (G_TYPE_FUNDAMENTAL (G_VALUE_TYPE (value))) {
    case G_TYPE_STRING:
      g_value_set_string (value, *(gchar * const *) field);
      break;
    case G_TYPE_DOUBLE:
      g_value_set_double (value, *(const gdouble *) field);
      break;
    case G_TYPE_INT:
      g_value_set_int (value, *(const gint *) field);
      break;
    case G_TYPE_UINT:
      g_value_set_uint (value, *(const guint *) field);
      break;
    case G_TYPE_BOOLEAN:
      g_value_set_boolean (value, *(const gboolean *) field);
      break;
    case G_TYPE_ENUM:
      g_value_set_enum (value, *(const gint *) field);
      break;
    default:
      g_assert_not_reached ();
  }
}

/* The settings field of a property; NULL (after the warning) for an unknown id. */
static gpointer
settings_field (GObject * object, guint prop_id, GParamSpec * pspec)
{
  if (prop_id == PROP_0 || prop_id >= G_N_ELEMENTS (prop_field)) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    return NULL;
  }
  return G_STRUCT_MEMBER_P (&GST_LANDMARK_SHOOT (object)->settings, prop_field[prop_id]);
}

void
gst_landmark_shoot_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  gpointer field = settings_field (object, prop_id, pspec);
  if (!field)
    return;
  GST_OBJECT_LOCK (object);
  field_from_value (field, value);
  GST_OBJECT_UNLOCK (object);
}

void
gst_landmark_shoot_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  gpointer field = settings_field (object, prop_id, pspec);
  if (!field)
    return;
  GST_OBJECT_LOCK (object);
  field_to_value (field, value);
  GST_OBJECT_UNLOCK (object);
}

void
gst_landmark_shoot_settings_init (GstLandmarkShootSettings * s)
{
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
}

void
gst_landmark_shoot_install_properties (GObjectClass * gobject_class)
{
  const GParamFlags rw_ready = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;
  const GParamFlags rw_playing = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_PLAYING;

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
      gst_georeg_param_spec_backend (GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_CUDA_DEVICE_ID,
      gst_georeg_param_spec_cuda_device_id (GST_PARAM_MUTABLE_READY));
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
      gst_georeg_param_spec_post_messages (GST_PARAM_MUTABLE_PLAYING));
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
          "(currents) or a point-cloud kernel distance (the shooting then runs on the "
          "CPU; backend=cuda puts the term's pair sums on the device)",
          GST_TYPE_LANDMARK_SHOOT_DATA_TERM, DEFAULT_DATA_TERM, rw_ready));
  g_object_class_install_property (gobject_class, PROP_DATA_SIGMA,
      g_param_spec_double ("data-sigma", "Data term sigma",
          "Width of the varifold / point-cloud kernel exp(-|c - c'|^2 / data-sigma^2) in "
          "coordinate units (0 = sigma)", 0.0, G_MAXDOUBLE, DEFAULT_DATA_SIGMA,
          rw_ready));
}
