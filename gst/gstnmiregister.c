/* nmiregister: where exactly, at full resolution, does this frame lie on the control?
 *
 * Per frame: keypoints in the frame (kernels/keypoints.h), a prior frame-to-control
 * transform from nmilocalize's coarse meta (or a fallback), an 11 x 11 template
 * around each keypoint scored by NMI at every offset of a 73 x 73 window of the
 * control around its predicted place (kernels/nmi_sparse.h), then a robust fit of
 * the transform (kernels/fit.h).  With `refine` (the default) a second pass predicts
 * every keypoint with the first fit, resamples its template into the control's
 * geometry (so rotation, scale and perspective no longer distort it) and matches it
 * in a small window; the final fit uses those matches.  Frames pass through
 * unchanged with a GstNmiRegisterMeta (gst/nmiregister-meta.h) and an element message
 * "nmiregister".  docs/nmiregister.md is the reference.
 *
 * Values: frame and control are each mapped onto `levels` grey levels (default 16)
 * before matching: 121 pixels cannot fill a 256 x 256 joint histogram, and with
 * noise or a tone change two images almost never repeat an exact 8-bit pair, so the
 * scores would not discriminate; 12 to 16 levels do (docs/nmiregister.md).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gstnmiregister.h"
#include "gstgeoregcontrolcuda.h"
#include "gstnmiregisteroverlay.h"
#include "descriptors.h"
#include "fit.h"
#include "keypoints.h"
#include "nmi_dense.h"
#include "nmi_sparse.h"
#include "georeg-meta.h"
#include "nmiregister-meta.h"
#include "peak.h"
#include "raster.h"
#if GR_HAVE_CUDA
#include "register_cuda.h"
#endif

GST_DEBUG_CATEGORY_STATIC (gst_nmi_register_debug);
#define GST_CAT_DEFAULT gst_nmi_register_debug

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
  PROP_COARSE_FALLBACK,
  PROP_INITIAL_OFFSET_X,
  PROP_INITIAL_OFFSET_Y,
  PROP_INITIAL_SCALE,
  PROP_OVERLAY,
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
#define DEFAULT_COARSE_FALLBACK GST_NMI_REGISTER_COARSE_NONE
#define DEFAULT_INITIAL_OFFSET 0.0
#define DEFAULT_INITIAL_SCALE 1.0
#define DEFAULT_OVERLAY GST_NMI_REGISTER_OVERLAY_NONE

/* the first pass fits with a looser threshold: its job is a good prediction */
#define PASS1_THRESHOLD_FACTOR 2.0
/* the full search brings the frame's shorter side to about this many pixels */
#define FULL_SEARCH_SIDE 64.0

#define VIDEO_CAPS GST_GEOREG_CUDA_CAPS (GST_GEOREG_VIDEO_FORMATS)

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));

/* Properties, read under the object lock and copied per frame. */
typedef struct {
  GstGeoregBaseSettings c;      /* the base's, filled by each snapshot */
  guint levels;
  gint max_keypoints;
  gint template_size, window_size;
  gboolean refine;
  gint refine_window;
  GrModel model;
  gdouble ransac_threshold;
  gdouble min_peak_ratio;
  guint min_inliers;
  gdouble min_inlier_ratio;
  GstNmiRegisterCoarseFallback coarse_fallback;
  gdouble initial_offset_x, initial_offset_y, initial_scale;
  GstNmiRegisterOverlayMode overlay;
} GstNmiRegisterSettings;

struct _GstNmiRegister {
  GstGeoregBase parent;

  GstNmiRegisterSettings settings;

  /* prepared in start() */
  GrNmiSparse *engine;
  gint ctl_w, ctl_h;
  gdouble ctl_a, ctl_b;         /* the control's value range mapped onto the levels */
  gboolean has_geo;
  gdouble geo[6];

  /* coarse full search (coarse-fallback=full-search), made on first use */
  GrNmiDense *dense;
  gdouble dense_cs;             /* control scale of dense's control */
  gint dense_w, dense_h;

  /* per-frame scratch, reused */
  GrPlaneF full, small;
  guint8 *frame_q;
  guint64 frame_count;
  gboolean announced;
  gboolean warned_no_coarse;

  /* the device path (CUDA engine): frames converted, quantized, their keypoints found
   * and their templates cut on the device; only keypoints and scores come back */
  GstGeoregDeviceControl *dctl; /* the shared control levels the engine borrows */
  GrFeatures *kpf;              /* device keypoint detector (gr_keypoints_detect's) */
  gpointer rc;                  /* GrRegisterCuda: value range, levels, templates */
  gint dev;                     /* the engines' device; -1 = host path */
  GrPlaneF dplane;              /* this frame on the device (the converter's memory) */
  const guint8 *dlevels;        /* its levels on the device (rc's memory) */
  gboolean on_device;           /* this frame takes the device path */
  gboolean full_valid;          /* `full` holds this frame (host path, or downloaded) */
  gdouble read_ms, keypoints_ms;        /* this frame's phases (element message) */
  gdouble overlay_ms;                   /* drawing the overlay (0 without one) */
};

#define gst_nmi_register_parent_class parent_class
G_DEFINE_TYPE (GstNmiRegister, gst_nmi_register, GST_TYPE_GEOREG_BASE);
GST_ELEMENT_REGISTER_DEFINE (nmiregister, "nmiregister", GST_RANK_NONE,
    GST_TYPE_NMI_REGISTER);

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

static const gchar *
model_nick (GrModel m)
{
  GEnumValue *v = g_enum_get_value (g_type_class_peek (GST_TYPE_NMI_REGISTER_MODEL), m);
  return v ? v->value_nick : "?";
}

/* ------------------------------------------------------------------ properties */

static void
gst_nmi_register_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstNmiRegister *self = GST_NMI_REGISTER (object);
  GstNmiRegisterSettings *s = &self->settings;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LEVELS:
      s->levels = g_value_get_uint (value);
      break;
    case PROP_MAX_KEYPOINTS:
      s->max_keypoints = g_value_get_int (value);
      break;
    case PROP_TEMPLATE_SIZE:{
      gint v = g_value_get_int (value);
      if (!(v & 1)) {
        GST_OBJECT_UNLOCK (self);
        g_warning ("nmiregister: template-size must be odd; %d ignored", v);
        return;
      }
      s->template_size = v;
      break;
    }
    case PROP_WINDOW_SIZE:{
      gint v = g_value_get_int (value);
      if (!(v & 1)) {
        GST_OBJECT_UNLOCK (self);
        g_warning ("nmiregister: window-size must be odd; %d ignored", v);
        return;
      }
      s->window_size = v;
      break;
    }
    case PROP_REFINE:
      s->refine = g_value_get_boolean (value);
      break;
    case PROP_REFINE_WINDOW:{
      gint v = g_value_get_int (value);
      if (!(v & 1)) {
        GST_OBJECT_UNLOCK (self);
        g_warning ("nmiregister: refine-window must be odd; %d ignored", v);
        return;
      }
      s->refine_window = v;
      break;
    }
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
    default:
      GST_OBJECT_UNLOCK (self);
      gst_georeg_base_set_property (object, prop_id, value, pspec);
      return;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nmi_register_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstNmiRegister *self = GST_NMI_REGISTER (object);
  GstNmiRegisterSettings *s = &self->settings;

  GST_OBJECT_LOCK (self);
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
    default:
      GST_OBJECT_UNLOCK (self);
      gst_georeg_base_get_property (object, prop_id, value, pspec);
      return;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ------------------------------------------------------------------ value levels */

static int
cmp_float (const void *a, const void *b)
{
  const float x = *(const float *) a, y = *(const float *) b;
  return (x > y) - (x < y);
}

/* The value range [a, b] mapped onto the levels (the semantics of kernels/image.h's
 * bin modes).  FALSE on bad settings or out of memory. */
static gboolean
value_range (const GrPlaneF * p, GrBinMode mode, gint depth, gdouble lo, gdouble hi,
    gdouble * a, gdouble * b)
{
  const size_t n = (size_t) p->width * p->height;
  switch (mode) {
    case GR_BINS_IDENTITY:
      *a = 0.0;
      *b = depth > 8 ? 65536.0 : 256.0;
      return TRUE;
    case GR_BINS_FIXED:
      *a = lo;
      *b = hi;
      return hi > lo;
    case GR_BINS_MINMAX:{
      double mn = INFINITY, mx = -INFINITY;
      for (int y = 0; y < p->height; y++)
        for (int x = 0; x < p->width; x++) {
          if (p->mask && !p->mask[(size_t) y * p->width + x])
            continue;
          const double v = p->data[(size_t) y * p->stride + x];
          mn = v < mn ? v : mn;
          mx = v > mx ? v : mx;
        }
      *a = isfinite (mn) ? mn : 0.0;
      *b = isfinite (mx) ? mx : 0.0;
      return TRUE;
    }
    case GR_BINS_PERCENTILE:{
      if (!(lo >= 0.0 && hi <= 100.0 && hi > lo))
        return FALSE;
      float *v = g_try_new (float, n);
      if (!v)
        return FALSE;
      size_t k = 0;
      for (int y = 0; y < p->height; y++)
        for (int x = 0; x < p->width; x++)
          if (!p->mask || p->mask[(size_t) y * p->width + x])
            v[k++] = p->data[(size_t) y * p->stride + x];
      if (k == 0) {
        *a = *b = 0.0;
        g_free (v);
        return TRUE;
      }
      qsort (v, k, sizeof (float), cmp_float);
      *a = v[(size_t) floor (lo / 100.0 * (k - 1) + 0.5)];
      *b = v[(size_t) floor (hi / 100.0 * (k - 1) + 0.5)];
      g_free (v);
      return TRUE;
    }
  }
  return FALSE;
}

static inline guint8
to_level (double v, double a, double b, int levels)
{
  if (!(b > a))
    return 0;
  const double q = floor ((v - a) / (b - a) * levels);
  return (guint8) (q < 0.0 ? 0 : q > levels - 1 ? levels - 1 : q);
}

/* packed levels (stride = width); invalid pixels get 0 */
static void
quantize (const GrPlaneF * p, double a, double b, int levels, guint8 * out)
{
  for (int y = 0; y < p->height; y++)
    for (int x = 0; x < p->width; x++) {
      const size_t i = (size_t) y * p->width + x;
      out[i] = (p->mask && !p->mask[i]) ? 0 :
          to_level (p->data[(size_t) y * p->stride + x], a, b, levels);
    }
}

/* bilinear value at pixel-index position (x, y); FALSE outside or when a neighbour
 * with a nonzero weight is invalid */
static gboolean
sample_bilinear (const GrPlaneF * p, double x, double y, double *v)
{
  if (!(x >= 0.0 && y >= 0.0 && x <= p->width - 1 && y <= p->height - 1))
    return FALSE;
  int x0 = (int) floor (x), y0 = (int) floor (y);
  const double fx = x - x0, fy = y - y0;
  const int x1 = fx > 0.0 ? x0 + 1 : x0, y1 = fy > 0.0 ? y0 + 1 : y0;
  if (p->mask) {
    const guint8 *m = p->mask;
    const int w = p->width;
    if (!m[(size_t) y0 * w + x0] || !m[(size_t) y0 * w + x1] || !m[(size_t) y1 * w + x0]
        || !m[(size_t) y1 * w + x1])
      return FALSE;
  }
  const float *d = p->data;
  const size_t s = p->stride;
  const double top = d[y0 * s + x0] * (1.0 - fx) + d[y0 * s + x1] * fx;
  const double bot = d[y1 * s + x0] * (1.0 - fx) + d[y1 * s + x1] * fx;
  *v = top * (1.0 - fy) + bot * fy;
  return TRUE;
}

/* ------------------------------------------------------------------ geometry */

/* pixel-index homography -> pixel-corner homography: T(+1/2) H T(-1/2) */
static void
index_to_corner (const double h[9], double o[9])
{
  const double tp[9] = { 1, 0, 0.5, 0, 1, 0.5, 0, 0, 1 };
  const double tm[9] = { 1, 0, -0.5, 0, 1, -0.5, 0, 0, 1 };
  double t[9];
  gr_mat3_mul (tp, h, t);
  gr_mat3_mul (t, tm, o);
  if (fabs (o[8]) > 1e-300) {
    const double k = o[8];
    for (int i = 0; i < 9; i++)
      o[i] /= k;
  }
}

/* a query's window centre, kept within the range the kernel accepts (far-away
 * windows are all invalid anyway) */
static inline gint32
clamp_query (double v)
{
  if (!isfinite (v))
    return -(1 << 20);
  v = floor (v + 0.5);
  return (gint32) (v < -(1 << 20) ? -(1 << 20) : v > (1 << 20) ? (1 << 20) : v);
}

/* ------------------------------------------------------------------ lifecycle */

static void
release_resources (GstNmiRegister * self)
{
  /* the engine borrows the shared device control: it goes first */
  gr_nmi_sparse_free (self->engine);
  self->engine = NULL;
  gst_georeg_device_control_release (self->dctl);
  self->dctl = NULL;
  gr_features_free (self->kpf);
  self->kpf = NULL;
#if GR_HAVE_CUDA
  gr_register_cuda_free (self->rc);
#endif
  self->rc = NULL;
  self->dev = -1;
  memset (&self->dplane, 0, sizeof self->dplane);
  self->dlevels = NULL;
  gr_nmi_dense_free (self->dense);
  self->dense = NULL;
  gst_georeg_base_release_control (GST_GEOREG_BASE (self));
  gr_plane_clear (&self->full);
  gr_plane_clear (&self->small);
  g_clear_pointer (&self->frame_q, g_free);
}

static gboolean
gst_nmi_register_start (GstBaseTransform * trans)
{
  GstNmiRegister *self = GST_NMI_REGISTER (trans);
  char err[512] = "";
  GstNmiRegisterSettings s;
  gboolean ok = FALSE;
  guint8 *ctl_q = NULL;

  GST_OBJECT_LOCK (self);
  s = self->settings;
  gst_georeg_base_get_settings_unlocked (GST_GEOREG_BASE (self), &s.c);
  GST_OBJECT_UNLOCK (self);

  if (s.window_size < s.template_size || s.refine_window < s.template_size) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("window-size (%d) and refine-window (%d) must not be smaller than "
            "template-size (%d).", s.window_size, s.refine_window, s.template_size),
        (NULL));
    goto done;
  }
  if (!gst_georeg_base_open_control (GST_GEOREG_BASE (self)))
    goto done;
  const GstGeoregControl *control = gst_georeg_base_control (GST_GEOREG_BASE (self));
  const GrRaster *r = gst_georeg_control_raster (control);
  if (gr_plane_count_valid (&r->plane) == 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("The control image \"%s\" has no valid pixel (all nodata or transparent).",
            s.c.control_location), (NULL));
    goto done;
  }
  if (!value_range (&r->plane, gst_georeg_bins_resolve (s.c.bins, r->bit_depth),
          r->bit_depth, s.c.bin_low, s.c.bin_high, &self->ctl_a, &self->ctl_b)) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Could not map the control to %u levels: check bins, bin-low and bin-high "
            "(fixed needs bin-low < bin-high; percentile needs 0 <= low < high <= 100).",
            s.levels), (NULL));
    goto done;
  }
  const int cw = r->plane.width, ch = r->plane.height;

  GrStatus est;
  err[0] = '\0';
  self->engine = gr_nmi_sparse_new (s.c.backend, gst_georeg_base_engine_device (GST_GEOREG_BASE (self),
          s.c.cuda_device_id), &est, err, sizeof err);
  if (!self->engine) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Cannot use the %s backend.", gr_backend_name (s.c.backend)), ("%s", err));
    goto done;
  }
  gboolean ctl_set = FALSE;
#if GR_HAVE_CUDA
  if (gr_nmi_sparse_backend (self->engine) == GR_BACKEND_CUDA) {
    const gint dev = MAX (gst_georeg_base_engine_device (GST_GEOREG_BASE (self),
            s.c.cuda_device_id), 0);
    char derr[512] = "";
    GrStatus dst;
    /* the control's levels, derived on the device from the process-wide plane
     * (gstgeoregcontrolcuda.h) and shared with elements of the same levels and range */
    self->dctl = gst_georeg_device_control_levels (control, dev, s.levels,
        self->ctl_a, self->ctl_b, &dst, derr, sizeof derr);
    if (self->dctl) {
      gint vmax = 0;
      const guint8 *lv = gst_georeg_device_control_get_levels (self->dctl, &vmax);
      const GrPlaneF *pl = gst_georeg_device_control_get_plane (self->dctl);
      ctl_set = gr_nmi_sparse_set_control_device (self->engine, lv, pl->mask, pl->width,
          pl->height, vmax, derr, sizeof derr) == GR_OK;
    }
    if (!ctl_set) {
      GST_WARNING_OBJECT (self, "no shared device control (%s): the control is "
          "uploaded for this element", derr);
      gst_georeg_device_control_release (self->dctl);
      self->dctl = NULL;
    }
    /* the per-frame device path: keypoints (the CPU detector's, on the device), value
     * range, levels and templates without the frame leaving the GPU */
    GrStatus fst;
    self->kpf = gr_features_new (GR_BACKEND_CUDA, dev, &fst, derr, sizeof derr);
    if (self->kpf)
      self->rc = gr_register_cuda_new (dev, derr, sizeof derr);
    if (self->kpf && self->rc) {
      self->dev = dev;
    } else {
      GST_WARNING_OBJECT (self, "frames are read on the host (%s)", derr);
      gr_features_free (self->kpf);
      self->kpf = NULL;
    }
  }
#endif
  if (!ctl_set) {
    ctl_q = g_try_malloc ((gsize) cw * ch);
    if (!ctl_q) {
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
      goto done;
    }
    quantize (&r->plane, self->ctl_a, self->ctl_b, (int) s.levels, ctl_q);
    GrImage8 img = { ctl_q, (size_t) cw, r->plane.mask, (size_t) cw, cw, ch };
    if (gr_nmi_sparse_set_control (self->engine, &img, err, sizeof err) != GR_OK) {
      GST_ELEMENT_ERROR (self, LIBRARY, INIT,
          ("Could not prepare the control image for matching."), ("%s", err));
      goto done;
    }
  }
  if (s.c.backend == GR_BACKEND_AUTO && gr_nmi_sparse_backend (self->engine) ==
      GR_BACKEND_CPU && err[0]) {
    /* auto: the CUDA engine could not be made or could not take the control (e.g.
     * out of device memory); the engine now matches on the CPU, so frames are read
     * on the host too */
    GST_WARNING_OBJECT (self, "backend=auto: CUDA cannot be used (%s); matching on "
        "the CPU", err);
#if GR_HAVE_CUDA
    gr_features_free (self->kpf);
    self->kpf = NULL;
    gr_register_cuda_free (self->rc);
    self->rc = NULL;
#endif
    self->dev = -1;
  }
  self->ctl_w = cw;
  self->ctl_h = ch;
  self->has_geo = r->has_geo;
  memcpy (self->geo, r->geo, sizeof self->geo);
  self->frame_count = 0;
  self->announced = FALSE;
  self->warned_no_coarse = FALSE;
  self->dense_cs = 0.0;
  GST_INFO_OBJECT (self, "control %s: %dx%d (%s, %d-bit, band %u), georeferenced: %s; "
      "%u controls shared in memory; backend %s; control %s; frames read %s",
      s.c.control_location, cw, ch, r->driver, r->bit_depth, s.c.band,
      r->has_geo ? "yes" : "no", gst_georeg_control_cache_count (),
      gr_backend_name (gr_nmi_sparse_backend (self->engine)),
      self->dctl ? "shared on the device" : "this element's own",
      self->dev >= 0 ? "on the device" : "on the host");
  ok = TRUE;

done:
  gst_georeg_base_control_done (GST_GEOREG_BASE (self), ok);
  if (!ok)
    release_resources (self);
  g_free (ctl_q);
  gst_georeg_base_settings_clear (&s.c);
  return ok;
}

static gboolean
gst_nmi_register_stop (GstBaseTransform * trans)
{
  release_resources (GST_NMI_REGISTER (trans));
  return TRUE;
}


/* ------------------------------------------------------------------ caps */

static gboolean
gst_nmi_register_set_info (GstGeoregBase * base, GstCaps * incaps,
    const GstVideoInfo * info)
{
  GstNmiRegister *self = GST_NMI_REGISTER (base);
  g_free (self->frame_q);
  self->frame_q = g_try_malloc ((gsize) GST_VIDEO_INFO_WIDTH (info) *
      GST_VIDEO_INFO_HEIGHT (info));
  if (!self->frame_q) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
    return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------------------ coarse prior */

/* The frame as a host plane in `full`: a device-path frame is downloaded (only the
 * full search needs it). */
static gboolean
host_full (GstNmiRegister * self)
{
  if (self->full_valid)
    return TRUE;
#if GR_HAVE_CUDA
  char err[256] = "";
  if (self->on_device && self->rc &&
      gr_register_cuda_download (self->rc, &self->dplane, &self->full, err,
          sizeof err) == GR_OK) {
    self->full_valid = TRUE;
    return TRUE;
  }
  GST_WARNING_OBJECT (self, "could not bring the frame to the host: %s", err);
#endif
  return FALSE;
}

/* Own coarse search: frame and control at reduced resolution, dense NMI over the
 * whole control.  TRUE with the frame's top-left (control pixel corners) on
 * success. */
static gboolean
full_search (GstNmiRegister * self, const GstNmiRegisterSettings * s, double fa,
    double fb, double *px, double *py)
{
  char err[512];
  if (!host_full (self))
    return FALSE;
  const int fw = self->full.width, fh = self->full.height;
  double fs = FULL_SEARCH_SIDE / MIN (fw, fh);
  if (fs > 1.0)
    fs = 1.0;
  const double cs = fs / s->initial_scale;
  if (cs > 1.0 || cs <= 0.0)
    return FALSE;
  const GrRaster *r =
      gst_georeg_control_raster (gst_georeg_base_control (GST_GEOREG_BASE (self)));
  if (!self->dense || self->dense_cs != cs) {
    GrPlaneF ctl = { 0 };
    GrStatus est;
    if (!self->dense)
      self->dense = gr_nmi_dense_new (s->c.backend, gst_georeg_base_engine_device
          (GST_GEOREG_BASE (self), s->c.cuda_device_id), &est, err, sizeof err);
    if (!self->dense) {
      GST_WARNING_OBJECT (self, "full search: %s", err);
      return FALSE;
    }
    if (gr_plane_downscale (&r->plane, cs, &ctl) != GR_OK)
      return FALSE;
    guint8 *q = g_try_malloc ((gsize) ctl.width * ctl.height);
    gboolean ok = q != NULL;
    if (ok) {
      quantize (&ctl, self->ctl_a, self->ctl_b, (int) s->levels, q);
      GrImage8 img = { q, (size_t) ctl.width, ctl.mask, (size_t) ctl.width, ctl.width,
        ctl.height
      };
      err[0] = '\0';
      ok = gr_nmi_dense_set_control (self->dense, &img, err, sizeof err) == GR_OK;
      if (ok && err[0])
        /* backend=auto and the device could not take the control: CPU search */
        GST_WARNING_OBJECT (self, "full search on the CPU: %s", err);
    }
    self->dense_w = ctl.width;
    self->dense_h = ctl.height;
    self->dense_cs = ok ? cs : 0.0;
    g_free (q);
    gr_plane_clear (&ctl);
    if (!ok)
      return FALSE;
  }
  if (gr_plane_downscale (&self->full, fs, &self->small) != GR_OK)
    return FALSE;
  const int tw = self->small.width, th = self->small.height;
  if (tw > self->dense_w || th > self->dense_h)
    return FALSE;
  const size_t nv = gr_plane_count_valid (&self->small);
  if (nv == 0)
    return FALSE;
  guint8 *tq = g_try_malloc ((gsize) tw * th);
  const GrRegion reg = { 0, 0, self->dense_w - tw + 1, self->dense_h - th + 1 };
  const size_t npos = (size_t) (reg.x1 - reg.x0) * (reg.y1 - reg.y0);
  double *scores = g_try_new (double, npos);
  gboolean ok = tq && scores;
  if (ok) {
    quantize (&self->small, fa, fb, (int) s->levels, tq);
    GrImage8 tpl = { tq, (size_t) tw, self->small.mask, (size_t) tw, tw, th };
    ok = gr_nmi_dense_run (self->dense, &tpl, reg, (int) ((nv + 1) / 2), scores, NULL,
        err, sizeof err) == GR_OK;
  }
  if (ok) {
    GrPeak pk;
    gr_find_peak (scores, reg.x1 - reg.x0, reg.y1 - reg.y0, MAX (2, MIN (tw, th) / 8),
        1.0, &pk);
    ok = !(pk.flags & GR_PEAK_NO_SCORE);
    if (ok) {
      *px = pk.x / cs;
      *py = pk.y / cs;
      GST_DEBUG_OBJECT (self, "full search: top-left (%.1f, %.1f), score %.4f, ratio "
          "%.3f", *px, *py, pk.score, pk.ratio);
    }
  }
  g_free (tq);
  g_free (scores);
  return ok;
}

/* ------------------------------------------------------------------ matching */

typedef struct {
  double *src, *dst, *w;   /* frame / control pixel-index positions, weights */
  int n;
  gboolean clipped;
} Corr;

/* One matching pass over the keypoints.  pass 1: templates cut around the keypoints
 * from the frame's levels, windows around the prior's prediction.  pass 2: each
 * keypoint's prediction g (rounded) is pulled back into the frame, and the template
 * is resampled in the control's geometry around g.  Returns FALSE on an engine
 * error (err set). */
static gboolean
match_pass (GstNmiRegister * self, const GstNmiRegisterSettings * s, int pass,
    const GrKeypoint * kp, int nk, const double H[9], double fa, double fb, Corr * c,
    char *err, size_t errlen)
{
  const int T = s->template_size, T2 = T * T, h2 = T / 2;
  const int W = pass == 1 ? s->window_size : s->refine_window;
  const int fw = self->full.width;
  const gboolean dev = self->on_device;
  const gsize nk1 = MAX (nk, 1);
  /* host path: the templates; device path: the centres (pass 1) or the candidates'
   * windows and valid counts (pass 2) */
  guint8 *tpl = dev ? NULL : g_new (guint8, (gsize) T2 * nk1);
  guint8 *tmk = dev ? NULL : g_new (guint8, (gsize) T2 * nk1);
  gint32 *xy = dev ? g_new (gint32, 2 * nk1) : NULL;
  gint *nvalid = dev ? g_new (gint, nk1) : NULL;
  GrNmiSparseQuery *q = g_new (GrNmiSparseQuery, nk1);
  GrNmiSparseMatch *m = g_new (GrNmiSparseMatch, nk1);
  double *fx = g_new (double, 2 * nk1);
  gboolean use_mask = FALSE, ok = TRUE;
  int nq = 0;
  double Hi[9];

  if (pass == 2 && !gr_mat3_inverse (H, Hi)) {
    c->n = 0;
    goto out;
  }
  for (int k = 0; k < nk; k++) {
    double X, Y;
    if (!gr_fit_apply (H, kp[k].x, kp[k].y, &X, &Y))
      continue;
    q[nq].x = clamp_query (X);
    q[nq].y = clamp_query (Y);
    if (pass == 1) {
      if (dev) {
        /* cut on the device from the frame's levels around the same centre */
        xy[2 * nq] = (gint32) kp[k].x;
        xy[2 * nq + 1] = (gint32) kp[k].y;
      } else {
        guint8 *t = tpl + (size_t) nq * T2, *tm = tmk + (size_t) nq * T2;
        const int x0 = (int) kp[k].x - h2, y0 = (int) kp[k].y - h2;
        for (int j = 0; j < T; j++)
          for (int i = 0; i < T; i++) {
            const size_t at = (size_t) (y0 + j) * fw + (x0 + i);
            t[j * T + i] = self->frame_q[at];
            tm[j * T + i] = 1;  /* keypoints keep their template valid (margin) */
          }
      }
      fx[2 * nq] = kp[k].x;
      fx[2 * nq + 1] = kp[k].y;
    } else {
      double u, v;
      if (!gr_fit_apply (Hi, q[nq].x, q[nq].y, &u, &v))
        continue;
      fx[2 * nq] = u;
      fx[2 * nq + 1] = v;
      if (dev) {
        /* a candidate: resampled on the device below */
        xy[2 * nq] = q[nq].x;
        xy[2 * nq + 1] = q[nq].y;
      } else {
        guint8 *t = tpl + (size_t) nq * T2, *tm = tmk + (size_t) nq * T2;
        int nv = 0;
        for (int j = 0; j < T; j++)
          for (int i = 0; i < T; i++) {
            double su, sv, val;
            gboolean okp = gr_fit_apply (Hi, q[nq].x - h2 + i, q[nq].y - h2 + j, &su,
                &sv) && sample_bilinear (&self->full, su, sv, &val);
            t[j * T + i] = okp ? to_level (val, fa, fb, (int) s->levels) : 0;
            tm[j * T + i] = okp;
            nv += okp;
          }
        if (nv < T2)
          use_mask = TRUE;
        if (nv == 0)
          continue;
      }
    }
    nq++;
  }
  GrNmiSparseParams p;
  gr_nmi_sparse_params_init (&p);
  p.template_size = T;
  p.window_size = W;
  GrStatus st;
  if (!dev) {
    st = gr_nmi_sparse_run (self->engine, &p, tpl, use_mask ? tmk : NULL, q, nq, m, NULL,
        err, errlen);
  } else if (pass == 1) {
    const GrImage8 lv = { self->dlevels, (size_t) self->dplane.width, NULL,
      (size_t) self->dplane.width, self->dplane.width, self->dplane.height
    };
    st = gr_nmi_sparse_run_cut_device (self->engine, &p, &lv, xy, FALSE, q, nq, m, err,
        errlen);
  } else {
#if GR_HAVE_CUDA
    /* the candidates' templates, then those with a valid pixel, in order (the host
     * path's selection) */
    st = gr_register_cuda_resample (self->rc, &self->dplane, Hi, xy, nq, T, fa, fb,
        (int) s->levels, nvalid, err, errlen);
    int nkeep = 0;
    for (int k = 0; st == GR_OK && k < nq; k++) {
      if (nvalid[k] < T2)
        use_mask = TRUE;
      if (nvalid[k] == 0)
        continue;
      nvalid[nkeep] = k;        /* reused as the list of kept candidates */
      q[nkeep] = q[k];
      fx[2 * nkeep] = fx[2 * k];
      fx[2 * nkeep + 1] = fx[2 * k + 1];
      nkeep++;
    }
    const guint8 *dt = NULL, *dm = NULL;
    if (st == GR_OK)
      st = gr_register_cuda_gather (self->rc, nvalid, nkeep, T, &dt, &dm, err, errlen);
    nq = nkeep;
    if (st == GR_OK)
      st = gr_nmi_sparse_run_device (self->engine, &p, dt, use_mask ? dm : NULL, q, nq,
          m, err, errlen);
#else
    st = GR_ERR_NO_CUDA;
#endif
  }
  if (st != GR_OK) {
    ok = FALSE;
    goto out;
  }
  c->n = 0;
  for (int k = 0; k < nq; k++) {
    if (m[k].flags & GR_NMI_SPARSE_CLIPPED)
      c->clipped = TRUE;
    if (m[k].flags & (GR_NMI_SPARSE_NO_SCORE | GR_NMI_SPARSE_AT_BORDER | GR_NMI_SPARSE_FLAT))
      continue;
    if (!(m[k].score > 1.0 + 1e-9))
      continue;
    if (!isnan (m[k].ratio) && m[k].ratio < s->min_peak_ratio)
      continue;
    c->src[2 * c->n] = fx[2 * k];
    c->src[2 * c->n + 1] = fx[2 * k + 1];
    c->dst[2 * c->n] = q[k].x + m[k].dx;
    c->dst[2 * c->n + 1] = q[k].y + m[k].dy;
    c->w[c->n] = m[k].score - 1.0;
    c->n++;
  }
out:
  g_free (tpl);
  g_free (tmk);
  g_free (xy);
  g_free (nvalid);
  g_free (q);
  g_free (m);
  g_free (fx);
  return ok;
}

static guint
fit_flags (GrFitResult r)
{
  switch (r) {
    case GR_FIT_OK:
      return 0;
    case GR_FIT_TOO_FEW:
      return GST_NMI_REGISTER_FLAG_TOO_FEW_MATCHES;
    case GR_FIT_DEGENERATE:
      return GST_NMI_REGISTER_FLAG_DEGENERATE;
    case GR_FIT_NO_CONSENSUS:
      return GST_NMI_REGISTER_FLAG_NO_CONSENSUS;
  }
  return GST_NMI_REGISTER_FLAG_NO_CONSENSUS;
}

static const int model_minimum[] = { 1, 2, 3, 4 };

/* ------------------------------------------------------------------ per frame */

static void
set_double_array (GstStructure * st, const gchar * name, const gdouble * v, gint n)
{
  GValue arr = G_VALUE_INIT;
  g_value_init (&arr, GST_TYPE_ARRAY);
  for (gint i = 0; i < n; i++) {
    GValue d = G_VALUE_INIT;
    g_value_init (&d, G_TYPE_DOUBLE);
    g_value_set_double (&d, v[i]);
    gst_value_array_append_and_take_value (&arr, &d);
  }
  gst_structure_take_value (st, name, &arr);
}

static void
post_result (GstNmiRegister * self, GstBuffer * buf, const GstNmiRegisterMeta * m,
    gdouble elapsed_ms)
{
  GstStructure *st = gst_structure_new ("nmiregister",
      "frame", G_TYPE_UINT64, self->frame_count,
      "timestamp", G_TYPE_UINT64, GST_BUFFER_PTS (buf),
      "backend", G_TYPE_STRING, gr_backend_name (gr_nmi_sparse_backend (self->engine)),
      "input-memory", G_TYPE_STRING, gst_georeg_input_name (gst_georeg_base_input (GST_GEOREG_BASE
          (self))),
      "flags", G_TYPE_UINT, m->flags,
      "model", G_TYPE_STRING, model_nick ((GrModel) m->model),
      "has-transform", G_TYPE_BOOLEAN, m->has_transform,
      "keypoints", G_TYPE_UINT, m->keypoints,
      "matches", G_TYPE_UINT, m->matches,
      "inliers", G_TYPE_UINT, m->inliers,
      "rms", G_TYPE_DOUBLE, m->rms,
      "prior-x", G_TYPE_DOUBLE, m->prior_x,
      "prior-y", G_TYPE_DOUBLE, m->prior_y,
      "prior-scale", G_TYPE_DOUBLE, m->prior_scale,
      "register-ms", G_TYPE_DOUBLE, elapsed_ms,
      "read-ms", G_TYPE_DOUBLE, self->read_ms,
      "keypoints-ms", G_TYPE_DOUBLE, self->keypoints_ms,
      "overlay-ms", G_TYPE_DOUBLE, self->overlay_ms, NULL);
  if (m->has_transform) {
    set_double_array (st, "frame-to-control", m->frame_to_control, 9);
    set_double_array (st, "footprint-control", m->footprint_control, 8);
    if (m->has_map) {
      set_double_array (st, "frame-to-map", m->frame_to_map, 9);
      set_double_array (st, "footprint-map", m->footprint_map, 8);
    }
  }
  gst_georeg_base_post_result (GST_GEOREG_BASE (self), st);
}

/* One registration from a prior (frame top-left px, py in control pixel corners,
 * scale k control pixels per frame pixel).  FALSE on an engine error (err set). */
typedef struct {
  guint flags;               /* failure and quality flags of this attempt */
  gboolean has;
  double h[9];               /* frame -> control, pixel-index coordinates */
  int matches, inliers;
  double rms;
  /* the matches of the transform's fit (frame / control x y pairs) and its inlier
   * mask, kept only for the overlay; inlier NULL: no fit holds them (all outliers) */
  double *match_frame, *match_control;
  guint8 *inlier;
  int n_matches;
} RegResult;

static void
reg_result_clear (RegResult * r)
{
  g_free (r->match_frame);
  g_free (r->match_control);
  g_free (r->inlier);
  memset (r, 0, sizeof *r);
  r->rms = NAN;
}

static gboolean
register_from_prior (GstNmiRegister * self, const GstNmiRegisterSettings * s,
    const GrKeypoint * kp, int nk, double fa, double fb, double px, double py,
    double k, gboolean keep_matches, RegResult * r, char *err, size_t errlen)
{
  const int mmin = model_minimum[s->model];
  const GrPlaneF *fplane = self->on_device ? &self->dplane : &self->full;
  const int fw = fplane->width, fh = fplane->height;
  gboolean ok = TRUE, matches_fit = FALSE;
  Corr c = { 0 };
  memset (r, 0, sizeof *r);
  r->rms = NAN;
  c.src = g_new (double, 2 * nk);
  c.dst = g_new (double, 2 * nk);
  c.w = g_new (double, nk);
  uint8_t *inl = g_new (uint8_t, nk);

  /* prior (pixel-index coordinates): X = px + k (u + 1/2) - 1/2 */
  const double H0[9] = { k, 0, px + 0.5 * k - 0.5, 0, k, py + 0.5 * k - 0.5, 0, 0, 1 };
  GrFitParams fp;
  gr_fit_params_init (&fp, s->model);
  fp.threshold = s->ransac_threshold * PASS1_THRESHOLD_FACTOR;
  fp.seed = 0x6e6d6972u;
  GrFit fit;
  if (!match_pass (self, s, 1, kp, nk, H0, fa, fb, &c, err, errlen)) {
    ok = FALSE;
    goto out;
  }
  r->matches = c.n;
  if (c.clipped)
    r->flags |= GST_NMI_REGISTER_FLAG_WINDOWS_CLIPPED;
  if (c.n < mmin + 1) {
    r->flags |= GST_NMI_REGISTER_FLAG_TOO_FEW_MATCHES;
    goto out;
  }
  GrFitResult fr = gr_fit_robust (c.src, c.dst, c.w, c.n, &fp, &fit, inl);
  if (fr != GR_FIT_OK) {
    r->flags |= fit_flags (fr);
    goto out;
  }
  GST_LOG_OBJECT (self, "pass 1: %d matches, %d inliers, rms %.3f", c.n, fit.inliers,
      fit.rms);
  /* the first pass, with its wide windows, is the honest test of the prior (the
   * second pass only looks near the first fit's predictions, so a wrong first fit can
   * collect a misleading share of inliers there).  With a right prior but a scale or
   * rotation the prior does not know, the first pass's share can be low (13% seen at
   * scale 1.1), with a wrong prior it is chance (4-5% seen): hence a quarter of
   * min-inlier-ratio here */
  if (fit.inliers < (int) s->min_inliers ||
      fit.inliers < 0.25 * s->min_inlier_ratio * c.n)
    r->flags |= GST_NMI_REGISTER_FLAG_LOW_INLIERS;
  gboolean spread_known = TRUE;
  if (s->refine) {
    Corr c2 = { c.src, c.dst, c.w, 0, FALSE };
    double H1[9];
    memcpy (H1, fit.h, sizeof H1);
    GrFit fit2;
    fp.threshold = s->ransac_threshold;
    if (!match_pass (self, s, 2, kp, nk, H1, fa, fb, &c2, err, errlen)) {
      ok = FALSE;
      goto out;
    }
    GrFitResult fr2 = c2.n >= mmin + 1 ? gr_fit_robust (c2.src, c2.dst, c2.w, c2.n, &fp,
        &fit2, inl) : GR_FIT_TOO_FEW;
    if (fr2 == GR_FIT_OK) {
      fit = fit2;
      c.n = c2.n;
      r->matches = c2.n;
      if (c2.clipped)
        r->flags |= GST_NMI_REGISTER_FLAG_WINDOWS_CLIPPED;
      GST_LOG_OBJECT (self, "pass 2: %d matches, %d inliers, rms %.3f", c2.n,
          fit.inliers, fit.rms);
    } else {
      /* pass 1's transform stands (its matches were overwritten: no spread test) */
      r->flags |= GST_NMI_REGISTER_FLAG_REFINE_FAILED;
      spread_known = FALSE;
    }
  }
  r->has = TRUE;
  memcpy (r->h, fit.h, sizeof r->h);
  r->inliers = fit.inliers;
  r->rms = fit.rms;
  if (fit.inliers < (int) s->min_inliers ||
      fit.inliers < s->min_inlier_ratio * r->matches)
    r->flags |= GST_NMI_REGISTER_FLAG_LOW_INLIERS;
  if (spread_known) {
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int i = 0; i < c.n; i++)
      if (inl[i]) {
        x0 = MIN (x0, c.src[2 * i]);
        x1 = MAX (x1, c.src[2 * i]);
        y0 = MIN (y0, c.src[2 * i + 1]);
        y1 = MAX (y1, c.src[2 * i + 1]);
      }
    if (!(x1 - x0 >= fw / 3.0) || !(y1 - y0 >= fh / 3.0))
      r->flags |= GST_NMI_REGISTER_FLAG_POOR_SPREAD;
  }
  matches_fit = spread_known;
out:
  /* for the overlay: the matches behind the transform with their inlier mask, or,
   * without a transform, the matches no fit accepted.  After a failed refinement the
   * arrays hold the second pass's matches, which the first pass's transform did not
   * see: none are kept */
  if (ok && keep_matches && (matches_fit || !r->has)) {
    r->n_matches = c.n;
    r->match_frame = c.src;
    r->match_control = c.dst;
    c.src = c.dst = NULL;
    if (matches_fit) {
      r->inlier = inl;
      inl = NULL;
    }
  }
  g_free (c.src);
  g_free (c.dst);
  g_free (c.w);
  g_free (inl);
  return ok;
}

/* a result worth keeping without a second opinion */
static gboolean
result_sound (const RegResult * r)
{
  return r->has && !(r->flags & (GST_NMI_REGISTER_FLAG_LOW_INLIERS |
          GST_NMI_REGISTER_FLAG_REFINE_FAILED));
}

/* The overlay (property `overlay`, gstnmiregisteroverlay.h) of this frame's result:
 * attached as a GstVideoOverlayCompositionMeta, or blended into the frame (mapped
 * for writing: CUDA memory goes through the host and back).  FALSE after posting an
 * error. */
static gboolean
draw_overlay (GstNmiRegister * self, const GstNmiRegisterSettings * s, GstBuffer * buf,
    const GstNmiRegisterMeta * m, const GrKeypoint * kp, const RegResult * res)
{
  GstNmiRegisterOverlayData d = {
    .width = GST_VIDEO_INFO_WIDTH (gst_georeg_base_info (GST_GEOREG_BASE (self))),
    .height = GST_VIDEO_INFO_HEIGHT (gst_georeg_base_info (GST_GEOREG_BASE (self))),
    .keypoints = kp,
    .n_keypoints = kp ? (gint) m->keypoints : 0,
    .match_frame = res->match_frame,
    .match_control = res->match_control,
    .inlier = res->inlier,
    .n_matches = res->n_matches,
    .has_transform = m->has_transform,
    .has_prior = isfinite (m->prior_x) && isfinite (m->prior_y) &&
        m->prior_scale > 0.0,
    .doubtful = (m->flags & (GST_NMI_REGISTER_FLAG_LOW_INLIERS |
            GST_NMI_REGISTER_FLAG_POOR_SPREAD |
            GST_NMI_REGISTER_FLAG_REFINE_FAILED)) != 0,
  };
  if (m->has_transform) {
    memcpy (d.frame_to_control, m->frame_to_control, sizeof d.frame_to_control);
    memcpy (d.frame_to_control_index, res->h, sizeof d.frame_to_control_index);
  }
  if (d.has_prior) {
    const double p[9] = { m->prior_scale, 0, m->prior_x, 0, m->prior_scale,
      m->prior_y, 0, 0, 1
    };
    memcpy (d.prior, p, sizeof p);
  }
  if (s->overlay == GST_NMI_REGISTER_OVERLAY_META) {
    GstVideoOverlayComposition *comp = gst_nmi_register_overlay_render (&d);
    if (!comp)
      goto no_memory;
    gst_buffer_add_video_overlay_composition_meta (buf, comp);
    gst_video_overlay_composition_unref (comp);
    return TRUE;
  }
  GstVideoFrame frame;
  if (!gst_video_frame_map (&frame, gst_georeg_base_info (GST_GEOREG_BASE (self)), buf, GST_MAP_READWRITE)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map the frame to draw the "
            "overlay."), (NULL));
    return FALSE;
  }
  const GstNmiRegisterOverlayDrawResult r = gst_nmi_register_overlay_draw (&d, &frame);
  gst_video_frame_unmap (&frame);
  switch (r) {
    case GST_NMI_REGISTER_OVERLAY_DRAW_OK:
      return TRUE;
    case GST_NMI_REGISTER_OVERLAY_DRAW_NO_MEMORY:
      goto no_memory;
    case GST_NMI_REGISTER_OVERLAY_DRAW_FORMAT:
    default:
      GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Cannot draw the overlay on %s "
              "frames.", gst_video_format_to_string (GST_VIDEO_INFO_FORMAT
                  (gst_georeg_base_info (GST_GEOREG_BASE (self))))), (NULL));
      return FALSE;
  }
no_memory:
  GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory for the "
          "overlay (%dx%d).", d.width, d.height), (NULL));
  return FALSE;
}

static GstFlowReturn
gst_nmi_register_transform_ip (GstBaseTransform * trans, GstBuffer * buf)
{
  GstNmiRegister *self = GST_NMI_REGISTER (trans);
  GstNmiRegisterSettings s;
  char err[512] = "";
  GrKeypoint *kp = NULL;
  GstFlowReturn ret = GST_FLOW_OK;

  if (!self->engine || !self->frame_q) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("Not negotiated."), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GST_OBJECT_LOCK (self);
  s = self->settings;
  gst_georeg_base_get_settings_unlocked (GST_GEOREG_BASE (self), &s.c);
  GST_OBJECT_UNLOCK (self);
  gst_georeg_base_settings_clear (&s.c);        /* only the numbers are used */
  const gint64 t0 = g_get_monotonic_time ();
  const int depth = gst_georeg_video_format_depth (GST_VIDEO_INFO_FORMAT (gst_georeg_base_info (GST_GEOREG_BASE (self))));
  const GrBinMode bmode = gst_georeg_bins_resolve (s.c.bins, depth);

  /* the device path: the frame (CUDA memory in place, or its 8-bit plane uploaded)
   * converted, ranged and quantized on the device; percentile bins need a sort of the
   * values and take the host path */
  self->on_device = FALSE;
  self->full_valid = FALSE;
  if (self->dev >= 0 && bmode != GR_BINS_PERCENTILE) {
    gboolean done = FALSE;
    if (!gst_georeg_base_frame_to_device (GST_GEOREG_BASE (self), buf, s.c.nodata,
            self->dev, 0.0, FALSE, &self->dplane, &done, err, sizeof err)) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not read the frame on the "
              "device."), ("%s", err));
      return GST_FLOW_ERROR;
    }
    self->on_device = done;
  }
  if (!self->on_device) {
    if (!gst_georeg_base_read_plane (GST_GEOREG_BASE (self), buf, s.c.nodata,
            &self->full))
      return GST_FLOW_ERROR;
    self->full_valid = TRUE;
  }
  const GrPlaneF *fplane = self->on_device ? &self->dplane : &self->full;
  const int fw = fplane->width, fh = fplane->height;
  double fa, fb;
  gboolean range_ok;
#if GR_HAVE_CUDA
  if (self->on_device && bmode == GR_BINS_MINMAX) {
    float mn, mx;
    bool any;
    if (gr_register_cuda_minmax (self->rc, &self->dplane, &mn, &mx, &any, err,
            sizeof err) != GR_OK) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not range the frame on the "
              "device."), ("%s", err));
      return GST_FLOW_ERROR;
    }
    /* value_range's min-max: the extremes of the valid values, 0 when none */
    fa = any ? mn : 0.0;
    fb = any ? mx : 0.0;
    range_ok = TRUE;
  } else
#endif
  {
    /* identity and fixed read only the plane's size */
    range_ok = value_range (fplane, bmode, depth, s.c.bin_low, s.c.bin_high, &fa, &fb);
  }
  if (!range_ok) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map the frame to %u levels: "
            "check bins, bin-low and bin-high.", s.levels), (NULL));
    return GST_FLOW_ERROR;
  }
#if GR_HAVE_CUDA
  if (self->on_device) {
    if (gr_register_cuda_levels (self->rc, &self->dplane, fa, fb, (int) s.levels,
            &self->dlevels, err, sizeof err) != GR_OK) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not quantize the frame on the "
              "device."), ("%s", err));
      return GST_FLOW_ERROR;
    }
  } else
#endif
  {
    quantize (&self->full, fa, fb, (int) s.levels, self->frame_q);
  }
  const gint64 t_read = g_get_monotonic_time ();
  self->read_ms = (t_read - t0) / 1000.0;
  self->keypoints_ms = 0.0;

  GstNmiRegisterMeta *m = gst_buffer_add_nmi_register_meta (buf);
  m->model = s.model;
  const int mmin = model_minimum[s.model];

  /* ---- prior: frame top-left (control pixel corners) and scale */
  gboolean have_prior = FALSE, coarse_doubtful = FALSE, searched = FALSE;
  double px = NAN, py = NAN, pscale = NAN;
  GstNmiLocalizeMeta *lm = gst_buffer_get_nmi_localize_meta (buf);
  gboolean use_fallback = lm == NULL;
  if (lm) {
    if ((lm->flags & (GST_NMI_LOCALIZE_FLAG_NO_VALID_PIXELS |
                GST_NMI_LOCALIZE_FLAG_NO_OVERLAP)) || !isfinite (lm->control_x) ||
        !isfinite (lm->control_y) || !(lm->control_scale > 0.0) ||
        !(lm->frame_scale > 0.0)) {
      m->flags |= GST_NMI_REGISTER_FLAG_COARSE_UNUSABLE;
      /* only the full search can help a frame the coarse search could not place */
      use_fallback = s.coarse_fallback == GST_NMI_REGISTER_COARSE_FULL_SEARCH;
    } else {
      px = lm->control_x;
      py = lm->control_y;
      pscale = lm->frame_scale / lm->control_scale;
      have_prior = TRUE;
      coarse_doubtful = (lm->flags & (GST_NMI_LOCALIZE_FLAG_AMBIGUOUS |
              GST_NMI_LOCALIZE_FLAG_AT_BORDER)) != 0;
    }
  }
  if (use_fallback) {
    switch (s.coarse_fallback) {
      case GST_NMI_REGISTER_COARSE_NONE:
        m->flags |= GST_NMI_REGISTER_FLAG_NO_COARSE;
        if (!self->warned_no_coarse) {
          GST_WARNING_OBJECT (self, "frames carry no nmilocalize meta and "
              "coarse-fallback=none: frames are flagged no-coarse and not registered "
              "(put nmilocalize before nmiregister, or set coarse-fallback)");
          self->warned_no_coarse = TRUE;
        }
        break;
      case GST_NMI_REGISTER_COARSE_INITIAL_OFFSET:
        m->flags |= GST_NMI_REGISTER_FLAG_INITIAL_OFFSET;
        px = s.initial_offset_x;
        py = s.initial_offset_y;
        pscale = s.initial_scale;
        have_prior = TRUE;
        break;
      case GST_NMI_REGISTER_COARSE_FULL_SEARCH:
        m->flags |= GST_NMI_REGISTER_FLAG_FULL_SEARCH;
        pscale = s.initial_scale;
        searched = TRUE;
        have_prior = full_search (self, &s, fa, fb, &px, &py);
        if (have_prior)
          m->flags &= ~GST_NMI_REGISTER_FLAG_COARSE_UNUSABLE;
        else
          m->flags |= GST_NMI_REGISTER_FLAG_COARSE_UNUSABLE;
        break;
    }
  }

  /* ---- keypoints, matches, fits */
  const gboolean want_overlay = s.overlay != GST_NMI_REGISTER_OVERLAY_NONE;
  RegResult res = { 0 };
  res.rms = NAN;
  if (have_prior) {
    GrKeypointParams kpp;
    gr_keypoint_params_init (&kpp);
    kpp.max_keypoints = s.max_keypoints;
    kpp.margin = MAX (s.template_size / 2, 1);
    kp = g_new (GrKeypoint, s.max_keypoints);
    /* the device detector finds the CPU detector's keypoints, bit for bit */
    int nk = self->on_device ? gr_features_detect_device (self->kpf, &self->dplane, &kpp,
        kp, s.max_keypoints, NULL, err, sizeof err) :
        gr_keypoints_detect (&self->full, &kpp, kp, s.max_keypoints);
    if (nk < 0) {
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Keypoint detection failed "
              "(%s).", gr_status_string ((GrStatus) - nk)), ("%s", err));
      ret = GST_FLOW_ERROR;
      goto done;
    }
    m->keypoints = (guint) nk;
    self->keypoints_ms = (g_get_monotonic_time () - t_read) / 1000.0;
    if (nk < mmin + 1) {
      m->flags |= GST_NMI_REGISTER_FLAG_TOO_FEW_KEYPOINTS;
    } else {
      if (!register_from_prior (self, &s, kp, nk, fa, fb, px, py, pscale, want_overlay,
              &res, err, sizeof err))
        goto engine_error;
      /* an ambiguous coarse answer that did not register: a second opinion */
      if (coarse_doubtful && !searched && !result_sound (&res) &&
          s.coarse_fallback == GST_NMI_REGISTER_COARSE_FULL_SEARCH) {
        double qx, qy;
        const double qscale = s.initial_scale;
        if (full_search (self, &s, fa, fb, &qx, &qy)) {
          RegResult res2;
          if (!register_from_prior (self, &s, kp, nk, fa, fb, qx, qy, qscale,
                  want_overlay, &res2, err, sizeof err)) {
            reg_result_clear (&res2);
            goto engine_error;
          }
          GST_DEBUG_OBJECT (self, "ambiguous coarse meta: %d inliers from it, %d from "
              "the full search", res.inliers, res2.inliers);
          if (res2.has && (!res.has || res2.inliers > res.inliers)) {
            reg_result_clear (&res);
            res = res2;
            px = qx;
            py = qy;
            pscale = qscale;
            m->flags |= GST_NMI_REGISTER_FLAG_FULL_SEARCH;
          } else {
            reg_result_clear (&res2);
          }
        }
      }
      m->flags |= res.flags;
    }
  }
  m->prior_x = px;
  m->prior_y = py;
  m->prior_scale = pscale;

  /* ---- the result */
  if (res.has) {
    m->has_transform = TRUE;
    m->matches = (guint) res.matches;
    m->inliers = (guint) res.inliers;
    m->rms = res.rms;
    index_to_corner (res.h, m->frame_to_control);
    const double corners[8] = { 0, 0, fw, 0, fw, fh, 0, fh };
    for (int i = 0; i < 4; i++)
      if (!gr_fit_apply (m->frame_to_control, corners[2 * i], corners[2 * i + 1],
              &m->footprint_control[2 * i], &m->footprint_control[2 * i + 1]))
        m->footprint_control[2 * i] = m->footprint_control[2 * i + 1] = NAN;
    if (self->has_geo) {
      const double G[9] = { self->geo[1], self->geo[2], self->geo[0],
        self->geo[4], self->geo[5], self->geo[3], 0, 0, 1
      };
      gr_mat3_mul (G, m->frame_to_control, m->frame_to_map);
      for (int i = 0; i < 4; i++)
        gr_geo_apply (self->geo, m->footprint_control[2 * i],
            m->footprint_control[2 * i + 1], &m->footprint_map[2 * i],
            &m->footprint_map[2 * i + 1]);
      m->has_map = TRUE;
    }
  } else {
    m->matches = (guint) res.matches;
  }

  if (!self->announced) {
    GST_INFO_OBJECT (self, "registering on the %s backend",
        gr_backend_name (gr_nmi_sparse_backend (self->engine)));
    self->announced = TRUE;
  }
  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": %u keypoints, %u matches, %u "
      "inliers, rms %.3f, flags 0x%x", self->frame_count, m->keypoints, m->matches,
      m->inliers, m->rms, m->flags);
  self->overlay_ms = 0.0;
  if (want_overlay) {
    const gint64 t_ov = g_get_monotonic_time ();
    if (!draw_overlay (self, &s, buf, m, kp, &res)) {
      ret = GST_FLOW_ERROR;
      goto done;
    }
    self->overlay_ms = (g_get_monotonic_time () - t_ov) / 1000.0;
  }
  if (s.c.post_messages)
    post_result (self, buf, m, (g_get_monotonic_time () - t0) / 1000.0);
  self->frame_count++;
  goto done;

engine_error:
  GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Sparse NMI matching failed."), ("%s", err));
  ret = GST_FLOW_ERROR;
done:
  reg_result_clear (&res);
  g_free (kp);
  return ret;
}

/* ------------------------------------------------------------------ class */

static void
gst_nmi_register_finalize (GObject * object)
{
  GstNmiRegister *self = GST_NMI_REGISTER (object);
  release_resources (self);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_nmi_register_class_init (GstNmiRegisterClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
  const GParamFlags rw_ready = rw | GST_PARAM_MUTABLE_READY;
  const GParamFlags rw_playing = rw | GST_PARAM_MUTABLE_PLAYING;

  gobject_class->set_property = gst_nmi_register_set_property;
  gobject_class->get_property = gst_nmi_register_get_property;
  gobject_class->finalize = gst_nmi_register_finalize;

  g_object_class_install_property (gobject_class, PROP_LEVELS,
      g_param_spec_uint ("levels", "Levels",
          "Grey levels the values are cut into before matching (equal steps over the "
          "bins range; the histograms have 256 bins). An 11x11 template has too few "
          "pixels to fill 256 levels: 12..16 match noisy, tone-changed frames best",
          2, 256, DEFAULT_LEVELS, rw_ready));
  g_object_class_install_property (gobject_class, PROP_MAX_KEYPOINTS,
      g_param_spec_int ("max-keypoints", "Maximum keypoints",
          "Keypoints per frame at most (Shi-Tomasi corners spread by an 8x6 grid)",
          1, 1000000, DEFAULT_MAX_KEYPOINTS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_TEMPLATE_SIZE,
      g_param_spec_int ("template-size", "Template size",
          "Side of the square template around each keypoint (odd)", 3,
          GR_NMI_SPARSE_MAX_TEMPLATE, DEFAULT_TEMPLATE_SIZE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_WINDOW_SIZE,
      g_param_spec_int ("window-size", "Window size",
          "Side of the control window searched around each prediction in the first "
          "pass (odd, >= template-size): (window - template + 1)^2 offsets", 3,
          GR_NMI_SPARSE_MAX_WINDOW, DEFAULT_WINDOW_SIZE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_REFINE,
      g_param_spec_boolean ("refine", "Refine",
          "Second pass: predict every keypoint with the first fit, resample its "
          "template into the control's geometry and match it in refine-window",
          DEFAULT_REFINE, rw_playing));
  g_object_class_install_property (gobject_class, PROP_REFINE_WINDOW,
      g_param_spec_int ("refine-window", "Refine window",
          "Window side of the second pass (odd, >= template-size)", 3,
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

  gst_georeg_base_class_install_properties (GST_GEOREG_BASE_CLASS (klass),
      GST_GEOREG_PROPS_CONTROL | GST_GEOREG_PROPS_NODATA | GST_GEOREG_PROPS_BINS |
      GST_GEOREG_PROPS_BACKEND | GST_GEOREG_PROPS_POST_MESSAGES,
      GST_GEOREG_BINS_MIN_MAX);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "NMI keypoint registration", "Filter/Analyzer/Video",
      "Registers drone frames onto georeferenced control imagery at full resolution: "
      "keypoints in the frame, each 11x11 template matched by normalized mutual "
      "information over a 73x73 control window around the coarse prediction "
      "(nmilocalize's meta), then a robust (LO-RANSAC) fit of a translation, "
      "similarity, affine or homography. Frames pass through with a "
      "GstNmiRegisterMeta and an 'nmiregister' message", "georeg developers");

  trans_class->start = GST_DEBUG_FUNCPTR (gst_nmi_register_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_nmi_register_stop);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR (gst_nmi_register_transform_ip);
  GST_GEOREG_BASE_CLASS (klass)->set_info =
      GST_DEBUG_FUNCPTR (gst_nmi_register_set_info);
  gst_type_mark_as_plugin_api (GST_TYPE_NMI_REGISTER_MODEL, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_NMI_REGISTER_COARSE_FALLBACK, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_NMI_REGISTER_OVERLAY_MODE, 0);
  GST_DEBUG_CATEGORY_INIT (gst_nmi_register_debug, "nmiregister", 0,
      "NMI keypoint registration");
}

static void
gst_nmi_register_init (GstNmiRegister * self)
{
  GstNmiRegisterSettings *s = &self->settings;
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
  s->coarse_fallback = DEFAULT_COARSE_FALLBACK;
  s->initial_offset_x = s->initial_offset_y = DEFAULT_INITIAL_OFFSET;
  s->initial_scale = DEFAULT_INITIAL_SCALE;
  s->overlay = DEFAULT_OVERLAY;
  self->dev = -1;
}
