/* nmilocalize: where over the control image is this frame?
 *
 * search=translation: an exhaustive translation search of the (downscaled) frame over
 * the (downscaled) control image, north-up at the scale given by frame-scale and
 * control-scale, scored by normalized mutual information on the full 256 x 256 joint
 * histogram with validity masks (kernels/nmi_dense.h).
 * search=full: kernels/localize.h (GrLocalize): a heading sweep and a scale search
 * (scale-min .. scale-max control px per frame px) with an overlap-weighted NMI, so
 * frames at any heading and ground resolution are placed; the result is a full
 * frame->control similarity in the meta (has_prior_transform), the start nmiregister
 * refines.  Frames pass through
 * unchanged; the result is attached as a GstNmiLocalizeMeta (gst/georeg-meta.h) and
 * posted as an element message "nmilocalize".
 *
 * The wiring only: the maths lives in kernels/ (nmi_dense, image, peak, raster).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include "gstnmilocalize.h"
#include "georeg-meta.h"
#include "localize.h"
#include "nmi_dense.h"
#include "peak.h"
#include "raster.h"

GST_DEBUG_CATEGORY_STATIC (gst_nmi_localize_debug);
#define GST_CAT_DEFAULT gst_nmi_localize_debug

enum {
  PROP_0,
  PROP_CONTROL_NODATA,
  PROP_CONTROL_SCALE,
  PROP_FRAME_SCALE,
  PROP_SEARCH_X,
  PROP_SEARCH_Y,
  PROP_SEARCH_RADIUS,
  PROP_MASK_LOCATION,
  PROP_MIN_OVERLAP,
  PROP_PEAK_EXCLUSION,
  PROP_MIN_PEAK_RATIO,
  PROP_SCORE_MAP_LOCATION,
  PROP_SEARCH,
  PROP_SCALE_MIN,
  PROP_SCALE_MAX,
};

/* What the coarse search looks for. */
typedef enum {
  GST_NMI_LOCALIZE_SEARCH_TRANSLATION,  /* north-up, known scale: translations only */
  GST_NMI_LOCALIZE_SEARCH_FULL,         /* heading, scale and place (GrLocalize) */
} GstNmiLocalizeSearch;

#define GST_TYPE_NMI_LOCALIZE_SEARCH (gst_nmi_localize_search_get_type ())
static GType
gst_nmi_localize_search_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_NMI_LOCALIZE_SEARCH_TRANSLATION, "North-up translation search at the scale "
          "of frame-scale / control-scale", "translation"},
    {GST_NMI_LOCALIZE_SEARCH_FULL, "Heading sweep, scale range and place (any "
          "heading, scale-min .. scale-max)", "full"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNmiLocalizeSearch", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

#define DEFAULT_CONTROL_NODATA -1
#define DEFAULT_SCALE 1.0
#define DEFAULT_SEARCH_XY -1.0
#define DEFAULT_SEARCH_RADIUS 0.0
#define DEFAULT_MIN_OVERLAP 0.5
#define DEFAULT_PEAK_EXCLUSION 0
#define DEFAULT_MIN_PEAK_RATIO 1.1
#define DEFAULT_SEARCH GST_NMI_LOCALIZE_SEARCH_TRANSLATION
#define DEFAULT_SCALE_MIN 0.25
#define DEFAULT_SCALE_MAX 4.0

#define VIDEO_CAPS GST_GEOREG_CUDA_CAPS (GST_GEOREG_VIDEO_FORMATS)

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));

/* Properties, read under the object lock and copied per frame. */
typedef struct {
  gint control_nodata;
  gdouble control_scale;
  gdouble frame_scale;
  gdouble search_x, search_y, search_radius;
  gchar *mask_location;
  gdouble min_overlap;
  gint peak_exclusion;
  gdouble min_peak_ratio;
  gchar *score_map_location;
  GstNmiLocalizeSearch search;
  gdouble scale_min, scale_max;
} GstNmiLocalizeSettings;

struct _GstNmiLocalize {
  GstGeoregBase parent;

  GstNmiLocalizeSettings settings;

  /* prepared in start(): the engine and the control at search scale inside it (the
   * shared full-resolution control is the base's, held until stop so that elements
   * naming the same file share one copy) */
  GrNmiDense *engine;
  GrLocalize *localizer;        /* search=full: heading/scale search, full control */
  gint ctl_w, ctl_h;            /* control at search scale */
  gint ctl_full_w, ctl_full_h;
  gboolean has_geo;
  gdouble geo[6];
  GrPlaneF frame_mask;          /* mask-location, full frame size; data NULL if unset */

  /* negotiated (the video info is the base's) */
  gint tpl_w, tpl_h;            /* frame at search scale */

  /* per-frame scratch, reused */
  GrPlaneF full, small;
  guint8 *bins;
  gdouble *scores;              /* score map of the search region */
  gint32 *valid;                /* jointly valid pixels per translation */
  gsize scores_len;
  guint64 frame_count;
  gboolean announced;           /* the backend was reported on the bus */
};

#define gst_nmi_localize_parent_class parent_class
G_DEFINE_TYPE (GstNmiLocalize, gst_nmi_localize, GST_TYPE_GEOREG_BASE);
GST_ELEMENT_REGISTER_DEFINE (nmilocalize, "nmilocalize", GST_RANK_NONE,
    GST_TYPE_NMI_LOCALIZE);

/* ------------------------------------------------------------------ properties */

/* A per-frame file pattern may hold one integer conversion (%d, %05d, ...) and %%
 * escapes, nothing else: it is handed to printf. */
static gboolean
pattern_is_safe (const gchar * pattern)
{
  gint conversions = 0;
  for (const gchar * p = pattern; *p; p++) {
    if (*p != '%')
      continue;
    p++;
    if (*p == '%')
      continue;
    while (g_ascii_isdigit (*p))
      p++;
    if (*p != 'd' || ++conversions > 1)
      return FALSE;
  }
  return TRUE;
}

static void
gst_nmi_localize_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstNmiLocalize *self = GST_NMI_LOCALIZE (object);
  GstNmiLocalizeSettings *s = &self->settings;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_CONTROL_NODATA:
      s->control_nodata = g_value_get_int (value);
      break;
    case PROP_CONTROL_SCALE:
      s->control_scale = g_value_get_double (value);
      break;
    case PROP_FRAME_SCALE:
      s->frame_scale = g_value_get_double (value);
      break;
    case PROP_SEARCH_X:
      s->search_x = g_value_get_double (value);
      break;
    case PROP_SEARCH_Y:
      s->search_y = g_value_get_double (value);
      break;
    case PROP_SEARCH_RADIUS:
      s->search_radius = g_value_get_double (value);
      break;
    case PROP_MASK_LOCATION:
      g_free (s->mask_location);
      s->mask_location = g_value_dup_string (value);
      break;
    case PROP_MIN_OVERLAP:
      s->min_overlap = g_value_get_double (value);
      break;
    case PROP_PEAK_EXCLUSION:
      s->peak_exclusion = g_value_get_int (value);
      break;
    case PROP_MIN_PEAK_RATIO:
      s->min_peak_ratio = g_value_get_double (value);
      break;
    case PROP_SEARCH:
      s->search = g_value_get_enum (value);
      break;
    case PROP_SCALE_MIN:
      s->scale_min = g_value_get_double (value);
      break;
    case PROP_SCALE_MAX:
      s->scale_max = g_value_get_double (value);
      break;
    case PROP_SCORE_MAP_LOCATION:{
      const gchar *pat = g_value_get_string (value);
      if (pat && !pattern_is_safe (pat)) {
        GST_OBJECT_UNLOCK (self);
        g_warning ("nmilocalize: score-map-location '%s' may hold one %%d and no "
            "other %% conversion; ignored", pat);
        return;
      }
      g_free (s->score_map_location);
      s->score_map_location = g_strdup (pat);
      break;
    }
    default:
      GST_OBJECT_UNLOCK (self);
      gst_georeg_base_set_property (object, prop_id, value, pspec);
      return;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_nmi_localize_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstNmiLocalize *self = GST_NMI_LOCALIZE (object);
  GstNmiLocalizeSettings *s = &self->settings;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_CONTROL_NODATA:
      g_value_set_int (value, s->control_nodata);
      break;
    case PROP_CONTROL_SCALE:
      g_value_set_double (value, s->control_scale);
      break;
    case PROP_FRAME_SCALE:
      g_value_set_double (value, s->frame_scale);
      break;
    case PROP_SEARCH_X:
      g_value_set_double (value, s->search_x);
      break;
    case PROP_SEARCH_Y:
      g_value_set_double (value, s->search_y);
      break;
    case PROP_SEARCH_RADIUS:
      g_value_set_double (value, s->search_radius);
      break;
    case PROP_MASK_LOCATION:
      g_value_set_string (value, s->mask_location);
      break;
    case PROP_MIN_OVERLAP:
      g_value_set_double (value, s->min_overlap);
      break;
    case PROP_PEAK_EXCLUSION:
      g_value_set_int (value, s->peak_exclusion);
      break;
    case PROP_MIN_PEAK_RATIO:
      g_value_set_double (value, s->min_peak_ratio);
      break;
    case PROP_SEARCH:
      g_value_set_enum (value, s->search);
      break;
    case PROP_SCALE_MIN:
      g_value_set_double (value, s->scale_min);
      break;
    case PROP_SCALE_MAX:
      g_value_set_double (value, s->scale_max);
      break;
    case PROP_SCORE_MAP_LOCATION:
      g_value_set_string (value, s->score_map_location);
      break;
    default:
      GST_OBJECT_UNLOCK (self);
      gst_georeg_base_get_property (object, prop_id, value, pspec);
      return;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ------------------------------------------------------------------ lifecycle */

static void
release_resources (GstNmiLocalize * self)
{
  gr_nmi_dense_free (self->engine);
  self->engine = NULL;
  gr_localize_free (self->localizer);
  self->localizer = NULL;
  gst_georeg_base_release_control (GST_GEOREG_BASE (self));
  gr_plane_clear (&self->frame_mask);
  gr_plane_clear (&self->full);
  gr_plane_clear (&self->small);
  g_clear_pointer (&self->bins, g_free);
  g_clear_pointer (&self->scores, g_free);
  g_clear_pointer (&self->valid, g_free);
  self->scores_len = 0;
}

/* Loads the control, brings it to the search scale and hands it to a new engine. */
static gboolean
gst_nmi_localize_start (GstBaseTransform * trans)
{
  GstNmiLocalize *self = GST_NMI_LOCALIZE (trans);
  char err[512] = "";
  GstGeoregBase *base = GST_GEOREG_BASE (trans);
  GstNmiLocalizeSettings s;
  GstGeoregBaseSettings c;
  gboolean ok = FALSE;
  const GrRaster *raster;
  GrPlaneF nodata_copy = { 0 };
  GrPlaneF ctl = { 0 };
  guint8 *ctl_bins = NULL;

  GST_OBJECT_LOCK (self);
  s = self->settings;
  s.mask_location = g_strdup (s.mask_location);
  s.score_map_location = NULL;
  gst_georeg_base_get_settings_unlocked (base, &c);
  GST_OBJECT_UNLOCK (self);

  if (!gst_georeg_base_open_control (base))
    goto done;
  raster = gst_georeg_control_raster (gst_georeg_base_control (base));
  /* the cached raster is shared and read-only: a nodata value is applied to a
   * transient copy, freed once the search-scale control is made */
  const GrPlaneF *full = &raster->plane;
  if (s.control_nodata >= 0) {
    if (!gr_plane_alloc (&nodata_copy, full->width, full->height, full->mask != NULL)) {
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
      goto done;
    }
    for (int y = 0; y < full->height; y++)
      memcpy (nodata_copy.data + (gsize) y * nodata_copy.stride,
          full->data + (gsize) y * full->stride, sizeof (float) * full->width);
    if (full->mask)
      memcpy (nodata_copy.mask, full->mask, (gsize) full->width * full->height);
    if (!gr_plane_mask_value (&nodata_copy, s.control_nodata)) {
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
      goto done;
    }
    full = &nodata_copy;
  }
  if (gr_plane_count_valid (full) == 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("The control image \"%s\" has no valid pixel (all nodata or transparent).",
            c.control_location), (NULL));
    goto done;
  }
  if (gr_plane_downscale (full, s.control_scale, &ctl) != GR_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
    goto done;
  }
  ctl_bins = g_try_malloc ((gsize) ctl.width * ctl.height);
  if (!ctl_bins || gr_plane_to_bins (&ctl, gst_georeg_bins_resolve (c.bins,
              raster->bit_depth), c.bin_low, c.bin_high, ctl_bins) != GR_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Could not map the control to 256 bins: check bins, bin-low and bin-high "
            "(fixed needs bin-low < bin-high; percentile needs 0 <= low < high <= 100)."),
        (NULL));
    goto done;
  }

  GrStatus est;
  err[0] = '\0';
  self->engine = gr_nmi_dense_new (c.backend, gst_georeg_base_engine_device (base,
          c.cuda_device_id), &est, err, sizeof err);
  if (!self->engine) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Cannot use the %s backend.", gr_backend_name (c.backend)), ("%s", err));
    goto done;
  }
  GrImage8 img = { ctl_bins, (size_t) ctl.width, ctl.mask, (size_t) ctl.width,
    ctl.width, ctl.height
  };
  if (gr_nmi_dense_set_control (self->engine, &img, err, sizeof err) != GR_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, INIT,
        ("Could not prepare the control image for the search."), ("%s", err));
    goto done;
  }
  if (c.backend == GR_BACKEND_AUTO && gr_nmi_dense_backend (self->engine) ==
      GR_BACKEND_CPU && err[0])
    /* auto: the CUDA engine could not be made or could not take the control (e.g.
     * out of device memory) */
    GST_WARNING_OBJECT (self, "backend=auto: CUDA cannot be used (%s); searching on "
        "the CPU", err);

  if (s.search == GST_NMI_LOCALIZE_SEARCH_FULL) {
    /* the localizer keeps its own pyramid of the full-resolution control */
    self->localizer = gr_localize_new (gr_nmi_dense_backend (self->engine),
        gst_georeg_base_engine_device (base, c.cuda_device_id), &est, err, sizeof err);
    if (!self->localizer ||
        gr_localize_set_control (self->localizer, full, err, sizeof err) != GR_OK) {
      GST_ELEMENT_ERROR (self, LIBRARY, INIT,
          ("Could not prepare the control image for the heading and scale search."),
          ("%s", err));
      goto done;
    }
  }

  if (s.mask_location && *s.mask_location) {
    GrRaster m = { 0 };
    if (gr_raster_load (s.mask_location, 1, &m, err, sizeof err) != GR_OK) {
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Could not read the frame mask \"%s\".", s.mask_location), ("%s", err));
      goto done;
    }
    self->frame_mask = m.plane;   /* takes the planes over */
    m.plane.data = NULL;
    m.plane.mask = NULL;
    gr_raster_clear (&m);
  }

  self->ctl_w = ctl.width;
  self->ctl_h = ctl.height;
  self->ctl_full_w = raster->plane.width;
  self->ctl_full_h = raster->plane.height;
  self->has_geo = raster->has_geo;
  memcpy (self->geo, raster->geo, sizeof self->geo);
  self->frame_count = 0;
  self->announced = FALSE;
  GST_INFO_OBJECT (self, "control %s: %dx%d (%s, %d-bit, band %u), %dx%d at search "
      "scale %g, georeferenced: %s; backend %s", c.control_location,
      raster->plane.width, raster->plane.height, raster->driver, raster->bit_depth,
      c.band, ctl.width, ctl.height, s.control_scale, raster->has_geo ? "yes" : "no",
      gr_backend_name (gr_nmi_dense_backend (self->engine)));
  ok = TRUE;

done:
  gst_georeg_base_control_done (base, ok);
  if (!ok)
    release_resources (self);
  gr_plane_clear (&nodata_copy);
  gr_plane_clear (&ctl);
  g_free (ctl_bins);
  gst_georeg_base_settings_clear (&c);
  g_free (s.mask_location);
  return ok;
}

static gboolean
gst_nmi_localize_stop (GstBaseTransform * trans)
{
  release_resources (GST_NMI_LOCALIZE (trans));
  return TRUE;
}

static gboolean
gst_nmi_localize_set_info (GstGeoregBase * base, GstCaps * incaps,
    const GstVideoInfo * vinfo)
{
  GstNmiLocalize *self = GST_NMI_LOCALIZE (base);
  const GstVideoInfo info = *vinfo;
  gdouble fs;

  GST_OBJECT_LOCK (self);
  fs = self->settings.frame_scale;
  GST_OBJECT_UNLOCK (self);
  /* search=full scales the frame itself (any ground resolution): frame-scale only
   * sizes the translation search's buffers, which stay unused */
  if (self->localizer)
    fs = MIN (fs, MIN ((gdouble) self->ctl_w / GST_VIDEO_INFO_WIDTH (&info),
            (gdouble) self->ctl_h / GST_VIDEO_INFO_HEIGHT (&info)));

  const gint tw = MAX (1, (gint) floor (GST_VIDEO_INFO_WIDTH (&info) * fs + 0.5));
  const gint th = MAX (1, (gint) floor (GST_VIDEO_INFO_HEIGHT (&info) * fs + 0.5));
  if (tw > self->ctl_w || th > self->ctl_h) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("The frame (%dx%d, %dx%d at search scale) is larger than the control image "
            "(%dx%d at search scale): check frame-scale and control-scale.",
            GST_VIDEO_INFO_WIDTH (&info), GST_VIDEO_INFO_HEIGHT (&info), tw, th,
            self->ctl_w, self->ctl_h), (NULL));
    return FALSE;
  }
  if (self->frame_mask.data && (self->frame_mask.width != GST_VIDEO_INFO_WIDTH (&info)
          || self->frame_mask.height != GST_VIDEO_INFO_HEIGHT (&info))) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("The frame mask is %dx%d but frames are %dx%d.", self->frame_mask.width,
            self->frame_mask.height, GST_VIDEO_INFO_WIDTH (&info),
            GST_VIDEO_INFO_HEIGHT (&info)), (NULL));
    return FALSE;
  }

  self->tpl_w = tw;
  self->tpl_h = th;
  if (!gst_georeg_cuda_set_frame_mask (gst_georeg_base_cuda (base),
          self->frame_mask.data ?
          &self->frame_mask : NULL)) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("Could not upload the frame mask to "
            "the CUDA device."), (NULL));
    return FALSE;
  }
  g_free (self->bins);
  self->bins = g_try_malloc ((gsize) tw * th);
  const gsize npos = (gsize) (self->ctl_w - tw + 1) * (self->ctl_h - th + 1);
  if (npos > self->scores_len) {
    g_free (self->scores);
    g_free (self->valid);
    self->scores = g_try_new (gdouble, npos);
    self->valid = g_try_new (gint32, npos);
    self->scores_len = self->scores && self->valid ? npos : 0;
  }
  if (!self->bins || !self->scores || !self->valid) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
    return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------------------ per frame */

/* The translations to score: the whole control, or the box of translations that put
 * the frame centre within search-radius of (search-x, search-y). */
static gboolean
search_region (GstNmiLocalize * self, const GstNmiLocalizeSettings * s, GrRegion * r)
{
  const gint xmax = self->ctl_w - self->tpl_w + 1, ymax = self->ctl_h - self->tpl_h + 1;
  *r = (GrRegion) { 0, 0, xmax, ymax };
  if (s->search_radius > 0.0 && s->search_x >= 0.0 && s->search_y >= 0.0) {
    const gdouble cs = s->control_scale, rad = s->search_radius * cs;
    const gdouble cx = s->search_x * cs - self->tpl_w / 2.0;
    const gdouble cy = s->search_y * cs - self->tpl_h / 2.0;
    r->x0 = MAX (0, (gint) floor (cx - rad));
    r->y0 = MAX (0, (gint) floor (cy - rad));
    r->x1 = MIN (xmax, (gint) ceil (cx + rad) + 1);
    r->y1 = MIN (ymax, (gint) ceil (cy + rad) + 1);
  }
  return r->x1 > r->x0 && r->y1 > r->y0;
}

static void
write_score_map (GstNmiLocalize * self, const gchar * pattern, const gdouble * map,
    gint w, gint h)
{
  gdouble lo = INFINITY, hi = -INFINITY;
  const gsize n = (gsize) w * h;
  for (gsize i = 0; i < n; i++)
    if (isfinite (map[i])) {
      lo = MIN (lo, map[i]);
      hi = MAX (hi, map[i]);
    }
  /* unscored translations black, the rest stretched over 1..255 */
  guint8 *pix = g_malloc (n);
  const gdouble k = hi > lo ? 254.0 / (hi - lo) : 0.0;
  for (gsize i = 0; i < n; i++)
    pix[i] = isfinite (map[i]) ? (guint8) (1.0 + (map[i] - lo) * k + 0.5) : 0;
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS;
  gchar *path = g_strdup_printf (pattern, (gint) self->frame_count);
  G_GNUC_END_IGNORE_DEPRECATIONS;
  char err[512];
  if (gr_png_write_gray8 (path, pix, w, h, (size_t) w, err, sizeof err) != GR_OK)
    GST_ELEMENT_WARNING (self, RESOURCE, WRITE,
        ("Could not write the score map \"%s\".", path), ("%s", err));
  g_free (path);
  g_free (pix);
}

static void
post_result (GstNmiLocalize * self, GstBuffer * buf, const GstNmiLocalizeMeta * m,
    guint64 positions, gdouble elapsed_ms)
{
  GstStructure *st = gst_structure_new ("nmilocalize",
      "frame", G_TYPE_UINT64, self->frame_count,
      "timestamp", G_TYPE_UINT64, GST_BUFFER_PTS (buf),
      "backend", G_TYPE_STRING, gr_backend_name (gr_nmi_dense_backend (self->engine)),
      "input-memory", G_TYPE_STRING, gst_georeg_input_name (gst_georeg_base_input (GST_GEOREG_BASE
          (self))),
      "flags", G_TYPE_UINT, m->flags,
      "offset-x", G_TYPE_DOUBLE, m->offset_x,
      "offset-y", G_TYPE_DOUBLE, m->offset_y,
      "control-x", G_TYPE_DOUBLE, m->control_x,
      "control-y", G_TYPE_DOUBLE, m->control_y,
      "center-x", G_TYPE_DOUBLE, m->center_x,
      "center-y", G_TYPE_DOUBLE, m->center_y,
      "score", G_TYPE_DOUBLE, m->score,
      "second-score", G_TYPE_DOUBLE, m->second_score,
      "peak-ratio", G_TYPE_DOUBLE, m->peak_ratio,
      "valid-pixels", G_TYPE_UINT64, m->valid_pixels,
      "positions", G_TYPE_UINT64, positions,
      "search-ms", G_TYPE_DOUBLE, elapsed_ms, NULL);
  if (m->has_prior_transform)
    gst_structure_set (st, "heading", G_TYPE_DOUBLE, m->heading_deg,
        "scale", G_TYPE_DOUBLE, m->scale, "overlap", G_TYPE_DOUBLE, m->overlap, NULL);
  if (m->has_map)
    gst_structure_set (st, "map-x", G_TYPE_DOUBLE, m->map_x,
        "map-y", G_TYPE_DOUBLE, m->map_y, NULL);
  gst_georeg_base_post_result (GST_GEOREG_BASE (self), st);
}

/* search=full: GrLocalize over the full-resolution frame and control.  A position
 * prior comes from search-x/search-y/search-radius (the radius taken as 3 sigma).
 * Fills the meta: the similarity as frame_to_control, heading, scale, overlap, and
 * the translation-era fields (offset, control_x/y = the frame's top-left corner on the
 * control, score, peak ratio) consistent with it. */
static GstFlowReturn
localize_full (GstNmiLocalize * self, GstBuffer * buf, const GstNmiLocalizeSettings * s,
    const GstGeoregBaseSettings * c, gdouble * elapsed_ms, guint64 * searches)
{
  GstGeoregBase *base = GST_GEOREG_BASE (self);
  const GstVideoInfo *info = gst_georeg_base_info (base);
  const gint fw = GST_VIDEO_INFO_WIDTH (info), fh = GST_VIDEO_INFO_HEIGHT (info);
  char err[512] = "";

  if (!gst_georeg_base_read_plane (base, buf, c->nodata, &self->full))
    return GST_FLOW_ERROR;
  if (self->frame_mask.data && !gst_georeg_plane_and_mask (&self->full,
          &self->frame_mask)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
    return GST_FLOW_ERROR;
  }

  GrLocalizeParams lp;
  gr_localize_params_init (&lp);
  lp.scale_min = MIN (s->scale_min, s->scale_max);
  lp.scale_max = MAX (s->scale_min, s->scale_max);
  lp.min_overlap = s->min_overlap;
  lp.min_peak_ratio = s->min_peak_ratio;
  GrLocalizePrior prior = { 0 };
  const gboolean has_position = s->search_radius > 0.0 && s->search_x >= 0.0 &&
      s->search_y >= 0.0;
  if (has_position) {
    prior.has_position = TRUE;
    prior.x = s->search_x;
    prior.y = s->search_y;
    prior.position_sigma = s->search_radius / 3.0;
  }
  GrLocalizeResult res;
  gint64 t0 = g_get_monotonic_time ();
  GrStatus st = gr_localize_run (self->localizer, &self->full,
      has_position ? &prior : NULL, &lp, &res, err, sizeof err);
  *elapsed_ms = (g_get_monotonic_time () - t0) / 1000.0;
  if (st != GR_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("The heading and scale search failed "
            "(%s).", gr_status_string (st)), ("%s", err));
    return GST_FLOW_ERROR;
  }
  *searches = (guint64) res.searches;

  GstNmiLocalizeMeta *m = gst_buffer_add_nmi_localize_meta (buf);
  m->frame_scale = s->frame_scale;
  m->control_scale = s->control_scale;
  m->flags = res.flags;         /* GrLocalizeFlags share GstNmiLocalizeFlags' bits */
  if (res.flags & (GR_LOCALIZE_NO_VALID_PIXELS | GR_LOCALIZE_NO_OVERLAP))
    return GST_FLOW_OK;
  if (!gst_nmi_localize_meta_set_transform (m, res.h, fw, fh)) {
    m->flags |= GST_NMI_LOCALIZE_FLAG_IMPLAUSIBLE;
    return GST_FLOW_OK;
  }
  m->score = res.score;
  m->second_score = res.second;
  m->peak_ratio = res.peak_ratio;
  m->overlap = res.overlap;
  m->valid_pixels = (guint64) (res.overlap * gr_plane_count_valid (&self->full));
  m->control_x = res.h[2];      /* frame (0, 0) on the control */
  m->control_y = res.h[5];
  m->offset_x = m->control_x * s->control_scale;
  m->offset_y = m->control_y * s->control_scale;
  if (self->has_geo) {
    m->has_map = TRUE;
    gr_geo_apply (self->geo, m->center_x, m->center_y, &m->map_x, &m->map_y);
    m->gsd = m->scale * sqrt (fabs (self->geo[1] * self->geo[5] -
            self->geo[2] * self->geo[4]));
  }
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_nmi_localize_transform_ip (GstBaseTransform * trans, GstBuffer * buf)
{
  GstNmiLocalize *self = GST_NMI_LOCALIZE (trans);
  GstGeoregBase *base = GST_GEOREG_BASE (trans);
  const GstVideoInfo *info = gst_georeg_base_info (base);
  GstNmiLocalizeSettings s;
  GstGeoregBaseSettings c;
  GstVideoFrame frame;
  char err[512];
  guint64 positions = 0;
  gdouble elapsed_ms = 0.0;

  if (!self->engine || !self->bins) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("Not negotiated."), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GST_OBJECT_LOCK (self);
  s = self->settings;
  s.mask_location = NULL;
  s.score_map_location = g_strdup (s.score_map_location);
  gst_georeg_base_get_settings_unlocked (base, &c);
  GST_OBJECT_UNLOCK (self);
  gst_georeg_base_settings_clear (&c);  /* only the numbers are used */

  if (self->localizer) {
    GstFlowReturn ret = localize_full (self, buf, &s, &c, &elapsed_ms, &positions);
    g_free (s.score_map_location);
    if (ret != GST_FLOW_OK)
      return ret;
    GstNmiLocalizeMeta *m = gst_buffer_get_nmi_localize_meta (buf);
    GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": centre (%.2f, %.2f) heading "
        "%.2f scale %.4f score %.5f flags 0x%x", self->frame_count, m->center_x,
        m->center_y, m->heading_deg, m->scale, m->score, m->flags);
    if (c.post_messages)
      post_result (self, buf, m, positions, elapsed_ms);
    self->frame_count++;
    return GST_FLOW_OK;
  }

  /* a CUDA frame of our context: luma, masks and the downscale on the device, only
   * the small search-scale plane comes back (bit-identical to the host path) */
  if (!gst_georeg_base_frame_to_plane (base, buf, c.nodata, s.frame_scale, TRUE,
          &self->small, err, sizeof err)) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not read the CUDA frame."),
        ("%s", err));
    g_free (s.score_map_location);
    return GST_FLOW_ERROR;
  }
  gboolean mem_ok = TRUE, uploaded = FALSE;
  if (gst_georeg_base_input (base) != GST_GEOREG_INPUT_CUDA_DEVICE &&
      !self->frame_mask.data &&
      gr_nmi_dense_backend (self->engine) == GR_BACKEND_CUDA) {
    /* any other frame for a CUDA engine: its 8-bit plane goes up, the same conversion
     * and downscale run on the device, the search-scale plane comes back (frames with
     * a mask-location take the host path) */
    const gint dev = MAX (gst_georeg_base_engine_device (base, c.cuda_device_id), 0);
    if (!gst_georeg_base_frame_to_device (base, buf, c.nodata, dev, s.frame_scale,
            TRUE, &self->small, &uploaded, err, sizeof err)) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not read the frame on the "
              "device."), ("%s", err));
      g_free (s.score_map_location);
      return GST_FLOW_ERROR;
    }
  }
  if (gst_georeg_base_input (base) != GST_GEOREG_INPUT_CUDA_DEVICE && !uploaded) {
    if (!gst_video_frame_map (&frame, info, buf, GST_MAP_READ)) {
      GST_ELEMENT_ERROR (self, STREAM, DECODE, ("Could not map the frame."), (NULL));
      g_free (s.score_map_location);
      return GST_FLOW_ERROR;
    }
    mem_ok = gst_georeg_frame_to_plane (&frame, c.nodata, &self->full);
    gst_video_frame_unmap (&frame);
    if (mem_ok && self->frame_mask.data)
      mem_ok = gst_georeg_plane_and_mask (&self->full, &self->frame_mask);
    if (mem_ok)
      mem_ok = gr_plane_downscale (&self->full, s.frame_scale, &self->small) == GR_OK;
  }
  if (!mem_ok || self->small.width != self->tpl_w || self->small.height != self->tpl_h) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
    g_free (s.score_map_location);
    return GST_FLOW_ERROR;
  }
  if (gr_plane_to_bins (&self->small, gst_georeg_bins_resolve (c.bins,
              gst_georeg_video_format_depth (GST_VIDEO_INFO_FORMAT (info))),
          c.bin_low, c.bin_high, self->bins) != GR_OK) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map the frame to 256 bins: "
            "check bins, bin-low and bin-high."), (NULL));
    g_free (s.score_map_location);
    return GST_FLOW_ERROR;
  }

  GstNmiLocalizeMeta *m = gst_buffer_add_nmi_localize_meta (buf);
  m->frame_scale = s.frame_scale;
  m->control_scale = s.control_scale;
  const gsize tpl_valid = gr_plane_count_valid (&self->small);
  GrRegion r;

  if (tpl_valid == 0) {
    m->flags |= GST_NMI_LOCALIZE_FLAG_NO_VALID_PIXELS;
  } else if (!search_region (self, &s, &r)) {
    m->flags |= GST_NMI_LOCALIZE_FLAG_NO_OVERLAP;
    GST_WARNING_OBJECT (self, "the search region lies outside the control image");
  } else {
    const gint rw = r.x1 - r.x0, rh = r.y1 - r.y0;
    const gint min_valid = MAX (1, (gint) ceil (s.min_overlap * tpl_valid));
    GrImage8 tpl = { self->bins, (size_t) self->tpl_w, self->small.mask,
      (size_t) self->tpl_w, self->tpl_w, self->tpl_h
    };
    gint64 t0 = g_get_monotonic_time ();
    GrStatus st = gr_nmi_dense_run (self->engine, &tpl, r, min_valid, self->scores,
        self->valid, err, sizeof err);
    elapsed_ms = (g_get_monotonic_time () - t0) / 1000.0;
    if (st != GR_OK) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("The NMI search failed (%s).",
              gr_status_string (st)), ("%s", err));
      g_free (s.score_map_location);
      return GST_FLOW_ERROR;
    }
    positions = (guint64) rw * rh;

    GrPeak pk;
    const gint excl = s.peak_exclusion > 0 ? s.peak_exclusion :
        MAX (2, MIN (self->tpl_w, self->tpl_h) / 8);
    gr_find_peak (self->scores, rw, rh, excl, 1.0, &pk);
    if (pk.flags & GR_PEAK_NO_SCORE) {
      m->flags |= GST_NMI_LOCALIZE_FLAG_NO_OVERLAP;
    } else {
      if (pk.flags & GR_PEAK_AT_BORDER)
        m->flags |= GST_NMI_LOCALIZE_FLAG_AT_BORDER;
      if (pk.flags & GR_PEAK_NO_SECOND)
        m->flags |= GST_NMI_LOCALIZE_FLAG_NO_SECOND_PEAK;
      else if (pk.ratio < s.min_peak_ratio)
        m->flags |= GST_NMI_LOCALIZE_FLAG_AMBIGUOUS;
      m->offset_x = r.x0 + pk.x;
      m->offset_y = r.y0 + pk.y;
      m->score = pk.score;
      m->second_score = pk.second;
      m->peak_ratio = pk.ratio;
      m->valid_pixels = (guint64) self->valid[(gsize) pk.iy * rw + pk.ix];
      m->control_x = m->offset_x / s.control_scale;
      m->control_y = m->offset_y / s.control_scale;
      const gdouble k = s.frame_scale / s.control_scale;
      m->center_x = m->control_x + GST_VIDEO_INFO_WIDTH (info) * k / 2.0;
      m->center_y = m->control_y + GST_VIDEO_INFO_HEIGHT (info) * k / 2.0;
      if (self->has_geo) {
        m->has_map = TRUE;
        gr_geo_apply (self->geo, m->center_x, m->center_y, &m->map_x, &m->map_y);
      }
    }
    if (s.score_map_location && *s.score_map_location)
      write_score_map (self, s.score_map_location, self->scores, rw, rh);
  }

  if (!self->announced) {
    GST_INFO_OBJECT (self, "localizing on the %s backend",
        gr_backend_name (gr_nmi_dense_backend (self->engine)));
    self->announced = TRUE;
  }
  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": offset (%.2f, %.2f) score %.5f "
      "ratio %.3f flags 0x%x", self->frame_count, m->offset_x, m->offset_y, m->score,
      m->peak_ratio, m->flags);
  if (c.post_messages)
    post_result (self, buf, m, positions, elapsed_ms);
  self->frame_count++;
  g_free (s.score_map_location);
  return GST_FLOW_OK;
}

/* ------------------------------------------------------------------ class */

static void
gst_nmi_localize_finalize (GObject * object)
{
  GstNmiLocalize *self = GST_NMI_LOCALIZE (object);
  release_resources (self);
  g_free (self->settings.mask_location);
  g_free (self->settings.score_map_location);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_nmi_localize_class_init (GstNmiLocalizeClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
  const GParamFlags rw_ready = rw | GST_PARAM_MUTABLE_READY;
  const GParamFlags rw_playing = rw | GST_PARAM_MUTABLE_PLAYING;

  gobject_class->set_property = gst_nmi_localize_set_property;
  gobject_class->get_property = gst_nmi_localize_get_property;
  gobject_class->finalize = gst_nmi_localize_finalize;

  g_object_class_install_property (gobject_class, PROP_CONTROL_NODATA,
      g_param_spec_int ("control-nodata", "Control nodata",
          "Value of the chosen control band (or rounded luminance) that marks no data, "
          "for controls whose file carries no nodata or alpha (e.g. a white or black "
          "background); -1 = none", -1, 65535, DEFAULT_CONTROL_NODATA, rw_ready));
  g_object_class_install_property (gobject_class, PROP_CONTROL_SCALE,
      g_param_spec_double ("control-scale", "Control scale",
          "Resampling factor of the control image before the search (area average): "
          "with frame-scale it brings both to one ground resolution", 1e-3, 1.0,
          DEFAULT_SCALE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FRAME_SCALE,
      g_param_spec_double ("frame-scale", "Frame scale",
          "Resampling factor of the frames before the search (0.05 = 20x smaller, as "
          "typical for 4000-pixel drone frames)", 1e-3, 1.0, DEFAULT_SCALE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_SEARCH_X,
      g_param_spec_double ("search-x", "Search centre x",
          "Expected frame centre, x in full-resolution control pixels (-1 = none: "
          "search the whole control)", -1.0, G_MAXDOUBLE, DEFAULT_SEARCH_XY, rw_playing));
  g_object_class_install_property (gobject_class, PROP_SEARCH_Y,
      g_param_spec_double ("search-y", "Search centre y",
          "Expected frame centre, y in full-resolution control pixels (-1 = none)",
          -1.0, G_MAXDOUBLE, DEFAULT_SEARCH_XY, rw_playing));
  g_object_class_install_property (gobject_class, PROP_SEARCH_RADIUS,
      g_param_spec_double ("search-radius", "Search radius",
          "Half-width of the square of frame centres searched around (search-x, "
          "search-y), in full-resolution control pixels; 0 = the whole control",
          0.0, G_MAXDOUBLE, DEFAULT_SEARCH_RADIUS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_MASK_LOCATION,
      g_param_spec_string ("mask-location", "Mask location",
          "Optional frame mask image, frame-sized, nonzero = valid (combined with "
          "alpha and nodata)", NULL, rw_ready));
  g_object_class_install_property (gobject_class, PROP_MIN_OVERLAP,
      g_param_spec_double ("min-overlap", "Minimum overlap",
          "Fraction of the frame's valid pixels that must be valid in the control too "
          "for a translation to be scored", 0.0, 1.0, DEFAULT_MIN_OVERLAP, rw_playing));
  g_object_class_install_property (gobject_class, PROP_PEAK_EXCLUSION,
      g_param_spec_int ("peak-exclusion", "Peak exclusion",
          "Radius (search pixels) around the best translation inside which no second "
          "peak is sought; 0 = max(2, min(frame size at search scale) / 8)",
          0, G_MAXINT, DEFAULT_PEAK_EXCLUSION, rw_playing));
  g_object_class_install_property (gobject_class, PROP_MIN_PEAK_RATIO,
      g_param_spec_double ("min-peak-ratio", "Minimum peak ratio",
          "Results whose peak-ratio (best - 1) / (second - 1) is lower are flagged "
          "ambiguous", 1.0, G_MAXDOUBLE, DEFAULT_MIN_PEAK_RATIO, rw_playing));
  g_object_class_install_property (gobject_class, PROP_SEARCH,
      g_param_spec_enum ("search", "Search",
          "translation: north-up frames at the scale of frame-scale/control-scale "
          "(the fastest; score-map-location and peak-exclusion apply to it only); "
          "full: any heading and a ground resolution between scale-min and scale-max "
          "control pixels per frame pixel, the result a full frame->control transform "
          "that nmiregister starts from", GST_TYPE_NMI_LOCALIZE_SEARCH, DEFAULT_SEARCH,
          rw_ready));
  g_object_class_install_property (gobject_class, PROP_SCALE_MIN,
      g_param_spec_double ("scale-min", "Minimum scale",
          "search=full: smallest ground-resolution ratio searched, control pixels per "
          "frame pixel (0.5 = the control is twice as coarse as the frame)", 0.01, 100.0,
          DEFAULT_SCALE_MIN, rw_playing));
  g_object_class_install_property (gobject_class, PROP_SCALE_MAX,
      g_param_spec_double ("scale-max", "Maximum scale",
          "search=full: largest ground-resolution ratio searched, control pixels per "
          "frame pixel", 0.01, 100.0, DEFAULT_SCALE_MAX, rw_playing));
  g_object_class_install_property (gobject_class, PROP_SCORE_MAP_LOCATION,
      g_param_spec_string ("score-map-location", "Score map location",
          "Write each frame's score map as an 8-bit PNG (brighter = higher NMI, black = "
          "not scored); a pattern with one %d for the frame number, e.g. "
          "map-%05d.png; unset = none", NULL, rw_playing));

  gst_georeg_base_class_install_properties (GST_GEOREG_BASE_CLASS (klass),
      GST_GEOREG_PROPS_CONTROL | GST_GEOREG_PROPS_NODATA | GST_GEOREG_PROPS_BINS |
      GST_GEOREG_PROPS_BACKEND | GST_GEOREG_PROPS_POST_MESSAGES,
      GST_GEOREG_BINS_AUTO);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "NMI coarse localization", "Filter/Analyzer/Video",
      "Finds where a (downscaled) drone frame lies over georeferenced control imagery "
      "by an exhaustive translation search scored by normalized mutual information "
      "(full 256x256 joint histogram, validity masks; works across bands and sensors). "
      "Frames pass through with a GstNmiLocalizeMeta and an 'nmilocalize' message",
      "georeg developers");

  trans_class->start = GST_DEBUG_FUNCPTR (gst_nmi_localize_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_nmi_localize_stop);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR (gst_nmi_localize_transform_ip);
  GST_GEOREG_BASE_CLASS (klass)->set_info =
      GST_DEBUG_FUNCPTR (gst_nmi_localize_set_info);
  GST_DEBUG_CATEGORY_INIT (gst_nmi_localize_debug, "nmilocalize", 0,
      "NMI coarse localization");
}

static void
gst_nmi_localize_init (GstNmiLocalize * self)
{
  GstNmiLocalizeSettings *s = &self->settings;
  s->control_nodata = DEFAULT_CONTROL_NODATA;
  s->control_scale = DEFAULT_SCALE;
  s->frame_scale = DEFAULT_SCALE;
  s->search_x = s->search_y = DEFAULT_SEARCH_XY;
  s->search_radius = DEFAULT_SEARCH_RADIUS;
  s->min_overlap = DEFAULT_MIN_OVERLAP;
  s->peak_exclusion = DEFAULT_PEAK_EXCLUSION;
  s->min_peak_ratio = DEFAULT_MIN_PEAK_RATIO;
  s->search = DEFAULT_SEARCH;
  s->scale_min = DEFAULT_SCALE_MIN;
  s->scale_max = DEFAULT_SCALE_MAX;
}
