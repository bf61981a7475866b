/* nmiregister's own properties (gst/gstnmiregister-props.h): the param specs with
 * their help texts, defaults, and the settings they fill.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <string.h>

#include "gstnmiregister-props.h"
#include "gstgeoregcrs.h"
#include "nmi_sparse.h"

enum {
  PROP_0,
  PROP_LEVELS,
  PROP_MAX_KEYPOINTS,
  PROP_TEMPLATE_SIZE,
  PROP_WINDOW_SIZE,
  PROP_REFINE,
  PROP_REFINE_WINDOW,
  PROP_MODEL,
  PROP_RANSAC_THRESHOLD,
  PROP_MIN_PEAK_RATIO,
  PROP_MIN_INLIERS,
  PROP_MIN_INLIER_RATIO,
  PROP_MAX_PREDICTED_ERROR,
  PROP_CAMERA_FIT,
  PROP_COARSE_FALLBACK,
  PROP_INITIAL_OFFSET_X,
  PROP_INITIAL_OFFSET_Y,
  PROP_INITIAL_SCALE,
  PROP_OVERLAY,
  PROP_CRS,
};

#define DEFAULT_LEVELS 16
#define DEFAULT_MAX_KEYPOINTS 400
#define DEFAULT_TEMPLATE_SIZE 11
#define DEFAULT_WINDOW_SIZE 73
#define DEFAULT_REFINE TRUE
#define DEFAULT_REFINE_WINDOW 23
#define DEFAULT_MODEL GR_MODEL_HOMOGRAPHY
#define DEFAULT_RANSAC_THRESHOLD 1.0
#define DEFAULT_MIN_PEAK_RATIO 1.0
#define DEFAULT_MIN_INLIERS 12
#define DEFAULT_MIN_INLIER_RATIO 0.3
#define DEFAULT_MAX_PREDICTED_ERROR 1.0
#define DEFAULT_CAMERA_FIT TRUE
#define DEFAULT_COARSE_FALLBACK GST_NMI_REGISTER_COARSE_NONE
#define DEFAULT_INITIAL_OFFSET 0.0
#define DEFAULT_INITIAL_SCALE 1.0
#define DEFAULT_OVERLAY GST_NMI_REGISTER_OVERLAY_NONE

GType
gst_nmi_register_coarse_fallback_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_NMI_REGISTER_COARSE_NONE, "no registration: the result is flagged no-coarse",
        "none"},
    {GST_NMI_REGISTER_COARSE_INITIAL_OFFSET,
        "the frame's top-left at initial-offset-x/y, scaled by initial-scale",
        "initial-offset"},
    {GST_NMI_REGISTER_COARSE_FULL_SEARCH,
        "a coarse dense-NMI search of the whole control at reduced resolution",
        "full-search"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstNmiRegisterCoarseFallback",
            values));
  return type;
}

GType
gst_nmi_register_model_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GR_MODEL_TRANSLATION, "translation (2 parameters)", "translation"},
    {GR_MODEL_SIMILARITY, "rotation, uniform scale, translation (4)", "similarity"},
    {GR_MODEL_AFFINE, "affine (6)", "affine"},
    {GR_MODEL_HOMOGRAPHY, "homography (8)", "homography"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstNmiRegisterModel", values));
  return type;
}

void
gst_nmi_register_settings_init (GstNmiRegisterSettings * s)
{
  memset (s, 0, sizeof *s);
  s->levels = DEFAULT_LEVELS;
  s->max_keypoints = DEFAULT_MAX_KEYPOINTS;
  s->template_size = DEFAULT_TEMPLATE_SIZE;
  s->window_size = DEFAULT_WINDOW_SIZE;
  s->refine = DEFAULT_REFINE;
  s->refine_window = DEFAULT_REFINE_WINDOW;
  s->model = DEFAULT_MODEL;
  s->ransac_threshold = DEFAULT_RANSAC_THRESHOLD;
  s->min_peak_ratio = DEFAULT_MIN_PEAK_RATIO;
  s->min_inliers = DEFAULT_MIN_INLIERS;
  s->min_inlier_ratio = DEFAULT_MIN_INLIER_RATIO;
  s->max_predicted_error = DEFAULT_MAX_PREDICTED_ERROR;
  s->camera_fit = DEFAULT_CAMERA_FIT;
  s->coarse_fallback = DEFAULT_COARSE_FALLBACK;
  s->initial_offset_x = s->initial_offset_y = DEFAULT_INITIAL_OFFSET;
  s->initial_scale = DEFAULT_INITIAL_SCALE;
  s->overlay = DEFAULT_OVERLAY;
}

void
gst_nmi_register_settings_clear (GstNmiRegisterSettings * s)
{
  g_free (s->crs);
  s->crs = NULL;
}

void
gst_nmi_register_install_properties (GObjectClass * gobject_class)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
  const GParamFlags rw_ready = rw | GST_PARAM_MUTABLE_READY;
  const GParamFlags rw_playing = rw | GST_PARAM_MUTABLE_PLAYING;

  g_object_class_install_property (gobject_class, PROP_LEVELS,
      g_param_spec_uint ("levels", "Levels",
          "Grey levels the values are cut into before matching (equal steps over the "
          "bins range; the histograms have 256 bins). An 11x11 template has too few "
          "pixels to fill 256 levels: 12..16 match noisy, tone-changed frames best",
          2, 256, DEFAULT_LEVELS, rw_ready));
  g_object_class_install_property (gobject_class, PROP_MAX_KEYPOINTS,
      g_param_spec_int ("max-keypoints", "Maximum keypoints",
          "Keypoints per frame at most (Shi-Tomasi corners spread over the frame by an "
          "8x6 grid)",
          1, 1000000, DEFAULT_MAX_KEYPOINTS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_TEMPLATE_SIZE,
      g_param_spec_int ("template-size", "Template size",
          "Side of the square template around each keypoint, in frame pixels (odd)", 3,
          GR_NMI_SPARSE_MAX_TEMPLATE, DEFAULT_TEMPLATE_SIZE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_WINDOW_SIZE,
      g_param_spec_int ("window-size", "Window size",
          "Side of the control window searched around each prediction in the first "
          "pass, in control pixels (odd, >= template-size): (window - template + 1)^2 "
          "offsets", 3,
          GR_NMI_SPARSE_MAX_WINDOW, DEFAULT_WINDOW_SIZE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_REFINE,
      g_param_spec_boolean ("refine", "Refine",
          "Second pass: predict every keypoint with the first fit, resample its "
          "template into the control's geometry and match it in refine-window",
          DEFAULT_REFINE, rw_playing));
  g_object_class_install_property (gobject_class, PROP_REFINE_WINDOW,
      g_param_spec_int ("refine-window", "Refine window",
          "Window side of the second pass, in control pixels (odd, >= template-size)", 3,
          GR_NMI_SPARSE_MAX_WINDOW, DEFAULT_REFINE_WINDOW, rw_ready));
  g_object_class_install_property (gobject_class, PROP_MODEL,
      g_param_spec_enum ("model", "Model",
          "Frame-to-control transform fitted to the matches",
          GST_TYPE_NMI_REGISTER_MODEL, DEFAULT_MODEL, rw_playing));
  g_object_class_install_property (gobject_class, PROP_RANSAC_THRESHOLD,
      g_param_spec_double ("ransac-threshold", "RANSAC threshold",
          "A match is an inlier when the transform puts it within this many control "
          "pixels (the first pass uses twice this)", 0.01, 1000.0,
          DEFAULT_RANSAC_THRESHOLD, rw_playing));
  g_object_class_install_property (gobject_class, PROP_MIN_PEAK_RATIO,
      g_param_spec_double ("min-peak-ratio", "Minimum peak ratio",
          "Matches whose (best - 1) / (second - 1) is lower are dropped before the "
          "fit (1 = keep all)", 1.0, G_MAXDOUBLE, DEFAULT_MIN_PEAK_RATIO, rw_playing));
  g_object_class_install_property (gobject_class, PROP_MIN_INLIERS,
      g_param_spec_uint ("min-inliers", "Minimum inliers",
          "Results with fewer inliers are flagged low-inliers", 0, G_MAXINT,
          DEFAULT_MIN_INLIERS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_MIN_INLIER_RATIO,
      g_param_spec_double ("min-inlier-ratio", "Minimum inlier ratio",
          "Results whose inliers are a smaller fraction of the matches are flagged "
          "low-inliers (a wrong prior gives a few chance inliers among many matches)",
          0.0, 1.0, DEFAULT_MIN_INLIER_RATIO, rw_playing));
  g_object_class_install_property (gobject_class, PROP_MAX_PREDICTED_ERROR,
      g_param_spec_double ("max-predicted-error", "Maximum predicted error",
          "Results whose predicted error over the frame (frame pixels: how far the "
          "transform moves when a ninth of the frame's inliers is left out) is larger "
          "are flagged imprecise; 0 = never", 0.0, G_MAXDOUBLE,
          DEFAULT_MAX_PREDICTED_ERROR, rw_playing));
  g_object_class_install_property (gobject_class, PROP_CAMERA_FIT,
      g_param_spec_boolean ("camera-fit", "Calibrated camera fit",
          "For frames whose pose meta carries calibrated intrinsics (a calibration "
          "file, an application's camera model, or a lens with distortion): the final "
          "fit is the plane homography of that camera (6 parameters instead of 8) when "
          "it fits the inliers as well, so the transform holds where the matches do not "
          "reach (model=homography only)", DEFAULT_CAMERA_FIT, rw_playing));
  g_object_class_install_property (gobject_class, PROP_COARSE_FALLBACK,
      g_param_spec_enum ("coarse-fallback", "Coarse fallback",
          "What frames without a GstNmiLocalizeMeta (no nmilocalize upstream) use as "
          "the prior. full-search also serves frames whose coarse meta has no position, "
          "and frames whose coarse meta is flagged ambiguous or at-border and did not "
          "register soundly (the better of the two results is kept)", GST_TYPE_NMI_REGISTER_COARSE_FALLBACK, DEFAULT_COARSE_FALLBACK,
          rw_playing));
  g_object_class_install_property (gobject_class, PROP_INITIAL_OFFSET_X,
      g_param_spec_double ("initial-offset-x", "Initial offset x",
          "coarse-fallback=initial-offset: control position (full-resolution pixel "
          "corners) of the frame's top-left corner, x", -G_MAXDOUBLE, G_MAXDOUBLE,
          DEFAULT_INITIAL_OFFSET, rw_playing));
  g_object_class_install_property (gobject_class, PROP_INITIAL_OFFSET_Y,
      g_param_spec_double ("initial-offset-y", "Initial offset y",
          "coarse-fallback=initial-offset: the same, y", -G_MAXDOUBLE, G_MAXDOUBLE,
          DEFAULT_INITIAL_OFFSET, rw_playing));
  g_object_class_install_property (gobject_class, PROP_INITIAL_SCALE,
      g_param_spec_double ("initial-scale", "Initial scale",
          "Control pixels per frame pixel for coarse-fallback=initial-offset and "
          "full-search", 1e-3, 1e3, DEFAULT_INITIAL_SCALE, rw_playing));
  g_object_class_install_property (gobject_class, PROP_OVERLAY,
      g_param_spec_enum ("overlay", "Overlay",
          "Draw what the registration saw (keypoints, inliers with their residuals x10, "
          "outliers, the coarse footprint, a border coloured by the result): as a "
          "GstVideoOverlayCompositionMeta, or blended into the frame",
          GST_TYPE_NMI_REGISTER_OVERLAY_MODE, DEFAULT_OVERLAY, rw_playing));
  g_object_class_install_property (gobject_class, PROP_CRS,
      gst_georeg_param_spec_crs (GST_PARAM_MUTABLE_READY));
}

/* The window sizes are odd (a centre pixel): an even one is refused with a warning. */
static void
set_odd (gint * dst, const gchar * name, const GValue * value, gchar ** warning)
{
  const gint v = g_value_get_int (value);
  if (v & 1)
    *dst = v;
  else
    *warning = g_strdup_printf ("nmiregister: %s must be odd; %d ignored", name, v);
}

gboolean
gst_nmi_register_settings_set (GstNmiRegisterSettings * s, guint prop_id,
    const GValue * value, gchar ** warning)
{
  *warning = NULL;
  switch (prop_id) {
    case PROP_LEVELS:
      s->levels = g_value_get_uint (value);
      break;
    case PROP_MAX_KEYPOINTS:
      s->max_keypoints = g_value_get_int (value);
      break;
    case PROP_TEMPLATE_SIZE:
      set_odd (&s->template_size, "template-size", value, warning);
      break;
    case PROP_WINDOW_SIZE:
      set_odd (&s->window_size, "window-size", value, warning);
      break;
    case PROP_REFINE:
      s->refine = g_value_get_boolean (value);
      break;
    case PROP_REFINE_WINDOW:
      set_odd (&s->refine_window, "refine-window", value, warning);
      break;
    case PROP_MODEL:
      s->model = g_value_get_enum (value);
      break;
    case PROP_RANSAC_THRESHOLD:
      s->ransac_threshold = g_value_get_double (value);
      break;
    case PROP_MIN_PEAK_RATIO:
      s->min_peak_ratio = g_value_get_double (value);
      break;
    case PROP_MIN_INLIERS:
      s->min_inliers = g_value_get_uint (value);
      break;
    case PROP_MIN_INLIER_RATIO:
      s->min_inlier_ratio = g_value_get_double (value);
      break;
    case PROP_MAX_PREDICTED_ERROR:
      s->max_predicted_error = g_value_get_double (value);
      break;
    case PROP_CAMERA_FIT:
      s->camera_fit = g_value_get_boolean (value);
      break;
    case PROP_COARSE_FALLBACK:
      s->coarse_fallback = g_value_get_enum (value);
      break;
    case PROP_INITIAL_OFFSET_X:
      s->initial_offset_x = g_value_get_double (value);
      break;
    case PROP_INITIAL_OFFSET_Y:
      s->initial_offset_y = g_value_get_double (value);
      break;
    case PROP_INITIAL_SCALE:
      s->initial_scale = g_value_get_double (value);
      break;
    case PROP_OVERLAY:
      s->overlay = g_value_get_enum (value);
      break;
    case PROP_CRS:
      g_free (s->crs);
      s->crs = g_value_dup_string (value);
      break;
    default:
      return FALSE;
  }
  return TRUE;
}

gboolean
gst_nmi_register_settings_get (const GstNmiRegisterSettings * s, guint prop_id,
    GValue * value)
{
  switch (prop_id) {
    case PROP_LEVELS:
      g_value_set_uint (value, s->levels);
      break;
    case PROP_MAX_KEYPOINTS:
      g_value_set_int (value, s->max_keypoints);
      break;
    case PROP_TEMPLATE_SIZE:
      g_value_set_int (value, s->template_size);
      break;
    case PROP_WINDOW_SIZE:
      g_value_set_int (value, s->window_size);
      break;
    case PROP_REFINE:
      g_value_set_boolean (value, s->refine);
      break;
    case PROP_REFINE_WINDOW:
      g_value_set_int (value, s->refine_window);
      break;
    case PROP_MODEL:
      g_value_set_enum (value, s->model);
      break;
    case PROP_RANSAC_THRESHOLD:
      g_value_set_double (value, s->ransac_threshold);
      break;
    case PROP_MIN_PEAK_RATIO:
      g_value_set_double (value, s->min_peak_ratio);
      break;
    case PROP_MIN_INLIERS:
      g_value_set_uint (value, s->min_inliers);
      break;
    case PROP_MIN_INLIER_RATIO:
      g_value_set_double (value, s->min_inlier_ratio);
      break;
    case PROP_MAX_PREDICTED_ERROR:
      g_value_set_double (value, s->max_predicted_error);
      break;
    case PROP_CAMERA_FIT:
      g_value_set_boolean (value, s->camera_fit);
      break;
    case PROP_COARSE_FALLBACK:
      g_value_set_enum (value, s->coarse_fallback);
      break;
    case PROP_INITIAL_OFFSET_X:
      g_value_set_double (value, s->initial_offset_x);
      break;
    case PROP_INITIAL_OFFSET_Y:
      g_value_set_double (value, s->initial_offset_y);
      break;
    case PROP_INITIAL_SCALE:
      g_value_set_double (value, s->initial_scale);
      break;
    case PROP_OVERLAY:
      g_value_set_enum (value, s->overlay);
      break;
    case PROP_CRS:
      g_value_set_string (value, s->crs);
      break;
    default:
      return FALSE;
  }
  return TRUE;
}
