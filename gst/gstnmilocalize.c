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
 * refines.
 * search=auto (the default): a frame's pose meta on a georeferenced control limits
 * GrLocalize to the prior's uncertainty (kernels/pose_prior.h), swept again when the
 * prior proves wrong; without one the translation search, and the sweep when its result
 * is doubtful.  Frames pass through unchanged; the result is attached as a
 * GstNmiLocalizeMeta (gst/georeg-meta.h) and posted as an element message
 * "nmilocalize".
 *
 * This file: properties, lifecycle, the per-frame dispatch; the searches are in
 * gstnmilocalize-search.c, the priors in gstnmilocalize-prior.c.
 * The wiring only: the maths lives in kernels/ (nmi_dense, image, peak, raster).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include "gstnmilocalize-private.h"
#include "georeg-meta.h"
#include "gstgeoregcrs.h"
#include "georeg-pose-meta.h"
#include "localize.h"
#include "nmi_dense.h"
#include "peak.h"
#include "raster.h"

GST_DEBUG_CATEGORY (gst_nmi_localize_debug);
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
  PROP_USE_POSE,
  PROP_SEARCH_UNITS,
  PROP_CRS,
};


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
    {GST_NMI_LOCALIZE_SEARCH_AUTO, "With a pose prior, heading, scale and place within "
          "its uncertainty; without one, the translation search, then the heading and "
          "scale sweep when its result is doubtful", "auto"},
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
#define DEFAULT_SEARCH GST_NMI_LOCALIZE_SEARCH_AUTO
#define DEFAULT_USE_POSE TRUE
#define DEFAULT_SEARCH_UNITS GST_NMI_LOCALIZE_UNITS_PIXELS
#define DEFAULT_SCALE_MIN 0.25
#define DEFAULT_SCALE_MAX 4.0

#define VIDEO_CAPS GST_GEOREG_CUDA_CAPS (GST_GEOREG_VIDEO_FORMATS)

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));


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
      s->scales_given = TRUE;
      break;
    case PROP_FRAME_SCALE:
      s->frame_scale = g_value_get_double (value);
      s->scales_given = TRUE;
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
    case PROP_USE_POSE:
      s->use_pose = g_value_get_boolean (value);
      break;
    case PROP_SEARCH_UNITS:
      s->search_units = g_value_get_enum (value);
      break;
    case PROP_CRS:
      g_free (s->crs);
      s->crs = g_value_dup_string (value);
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
    case PROP_USE_POSE:
      g_value_set_boolean (value, s->use_pose);
      break;
    case PROP_SEARCH_UNITS:
      g_value_set_enum (value, s->search_units);
      break;
    case PROP_CRS:
      g_value_set_string (value, s->crs);
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
  gst_nmi_localize_geo_free (self->georef);
  self->georef = NULL;
  gst_nmi_localize_window_release (self);
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
  const GrRaster *raster = NULL;
  GrPlaneF nodata_copy = { 0 };

  GST_OBJECT_LOCK (self);
  s = self->settings;
  s.mask_location = g_strdup (s.mask_location);
  s.score_map_location = NULL;
  s.crs = g_strdup (s.crs);
  gst_georeg_base_get_settings_unlocked (base, &c);
  GST_OBJECT_UNLOCK (self);

  if (!gst_georeg_base_open_control (base))
    goto done;
  if (gst_georeg_base_control_windowed (base)) {
    /* over the budget (or control-mode=windowed): windows around each frame's prior */
    if (!gst_nmi_localize_window_start (self, &s, &c))
      goto done;
  } else {
    raster = gst_georeg_control_raster (gst_georeg_base_control (base));
    /* the cached raster is shared and read-only: a nodata value is applied to a
     * transient copy, freed once the search-scale control is made */
    const GrPlaneF *full = &raster->plane;
    if (s.control_nodata >= 0) {
      if (!gst_nmi_localize_nodata_copy (full, s.control_nodata, &nodata_copy)) {
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
    if (!gst_nmi_localize_prepare_translation (self, full, raster->bit_depth, &s, &c))
      goto done;
    GrStatus est;
    err[0] = '\0';
    if (s.search != GST_NMI_LOCALIZE_SEARCH_TRANSLATION) {
      /* the localizer keeps its own pyramid of the full-resolution control */
      self->localizer = gr_localize_new (gr_nmi_dense_backend (self->engine),
          gst_georeg_base_engine_device (base, c.cuda_device_id), &est, err, sizeof err);
      /* the shared control is borrowed (the base holds it until stop, after the
       * localizer is freed); a nodata copy is freed below, so it is copied */
      if (!self->localizer || (full == &nodata_copy ?
              gr_localize_set_control (self->localizer, full, err, sizeof err) :
              gr_localize_set_control_ref (self->localizer, full, err, sizeof err)) !=
          GR_OK) {
        GST_ELEMENT_ERROR (self, LIBRARY, INIT,
            ("Could not prepare the control image for the heading and scale search."),
            ("%s", err));
        goto done;
      }
    }
  }

  /* the georeference: pose priors and search regions in map units need it */
  char why[512] = "";
  self->georef = gst_nmi_localize_geo_open (c.control_location, s.crs, why, sizeof why);
  if (!self->georef && s.search_units != GST_NMI_LOCALIZE_UNITS_PIXELS) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("search-units needs a georeferenced "
            "control, and \"%s\" has no usable georeference.", c.control_location),
        ("%s", why));
    goto done;
  }
  if (!self->georef)
    GST_INFO_OBJECT (self, "no georeference: pose metas are not used (%s)", why);
  self->warned_pose = FALSE;
  self->warned_no_prior = FALSE;

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

  self->frame_count = 0;
  self->announced = FALSE;
  ok = TRUE;
  if (self->windowed)
    goto done;
  self->ctl_full_w = raster->plane.width;
  self->ctl_full_h = raster->plane.height;
  self->has_geo = raster->has_geo;
  memcpy (self->geo, raster->geo, sizeof self->geo);
  GST_INFO_OBJECT (self, "control %s: %dx%d (%s, %d-bit, band %u), %dx%d at search "
      "scale %g, georeferenced: %s; backend %s", c.control_location,
      raster->plane.width, raster->plane.height, raster->driver, raster->bit_depth,
      c.band, self->ctl_w, self->ctl_h, s.control_scale, raster->has_geo ? "yes" : "no",
      gr_backend_name (gr_nmi_dense_backend (self->engine)));

done:
  gst_georeg_base_control_done (base, ok);
  if (!ok)
    release_resources (self);
  gr_plane_clear (&nodata_copy);
  gst_georeg_base_settings_clear (&c);
  g_free (s.mask_location);
  g_free (s.crs);
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
  GstNmiLocalizeSearch search;
  gboolean scales_given;

  GST_OBJECT_LOCK (self);
  fs = self->settings.frame_scale;
  search = self->settings.search;
  scales_given = self->settings.scales_given;
  GST_OBJECT_UNLOCK (self);
  const gint fw = GST_VIDEO_INFO_WIDTH (&info), fh = GST_VIDEO_INFO_HEIGHT (&info);
  const gboolean fits = MAX (1, (gint) floor (fw * fs + 0.5)) <= self->ctl_w &&
      MAX (1, (gint) floor (fh * fs + 0.5)) <= self->ctl_h;
  self->translation_ok = search != GST_NMI_LOCALIZE_SEARCH_FULL;
  /* search=full scales the frame itself (any ground resolution): frame-scale only
   * sizes the translation search's buffers, which stay unused.  So does auto when the
   * frame at frame-scale is larger than the control and neither scale was set: the
   * usual 4K video against a coarser orthomosaic, which only the sweep or a pose prior
   * can place (the translation search is then never tried).  With frame-scale or
   * control-scale set, such a frame is a setting to correct (or a case for
   * search=full). */
  if (search == GST_NMI_LOCALIZE_SEARCH_AUTO && !fits && !scales_given) {
    GST_INFO_OBJECT (self, "the %dx%d frame is larger than the %dx%d control at "
        "frame-scale %g: no translation search, every frame swept (or placed by its "
        "pose prior)", fw, fh, self->ctl_w, self->ctl_h, fs);
    self->translation_ok = FALSE;
  }
  if (!self->translation_ok)
    fs = MIN (fs, MIN ((gdouble) self->ctl_w / fw, (gdouble) self->ctl_h / fh));

  const gint tw = MAX (1, (gint) floor (fw * fs + 0.5));
  const gint th = MAX (1, (gint) floor (fh * fs + 0.5));
  if (tw > self->ctl_w || th > self->ctl_h) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("The frame (%dx%d, %dx%d at search scale) is larger than the control image "
            "(%dx%d at search scale): check frame-scale and control-scale, or use "
            "search=full for frames finer than the control.",
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
  /* windowed: no translation search, so no score map over the (huge) control */
  const gsize npos = self->windowed ? 1 :
      (gsize) (self->ctl_w - tw + 1) * (self->ctl_h - th + 1);
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

static GstFlowReturn
gst_nmi_localize_transform_ip (GstBaseTransform * trans, GstBuffer * buf)
{
  GstNmiLocalize *self = GST_NMI_LOCALIZE (trans);
  GstGeoregBase *base = GST_GEOREG_BASE (trans);
  GstNmiLocalizeSettings s;
  GstGeoregBaseSettings c;
  guint64 positions = 0;
  gdouble elapsed_ms = 0.0;
  self->levels_built = 0;
  self->levels_ms = self->coarse_ms = self->fine_ms = self->downscale_ms = 0.0;
  self->feature_places = 0;
  self->feature_ms = 0.0;
  GstFlowReturn ret;
  const gchar *search_done;
  gboolean rejected = FALSE;

  if ((!self->engine && !self->windowed) || !self->bins) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("Not negotiated."), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GST_OBJECT_LOCK (self);
  s = self->settings;
  s.mask_location = NULL;
  s.crs = NULL;
  s.score_map_location = g_strdup (s.score_map_location);
  gst_georeg_base_get_settings_unlocked (base, &c);
  GST_OBJECT_UNLOCK (self);
  gst_georeg_base_settings_clear (&c);  /* only the numbers are used */

  FramePrior fp;
  gst_nmi_localize_frame_prior (self, buf, &s, &fp);
  const gboolean pose = g_strcmp0 (fp.kind, "pose") == 0;
  if (self->windowed) {
    /* the heading and scale search on the window around the prior (its result comes
     * back in full-control pixels) */
    GrLocalizePrior wprior;
    gboolean no_prior = FALSE;
    if (!gst_nmi_localize_window_prepare (self, &s, &fp, &wprior, &no_prior)) {
      g_free (s.score_map_location);
      return GST_FLOW_ERROR;
    }
    if (no_prior) {
      GstNmiLocalizeMeta *nm = gst_buffer_add_nmi_localize_meta (buf);
      nm->frame_scale = s.frame_scale;
      nm->control_scale = s.control_scale;
      nm->flags = GST_NMI_LOCALIZE_FLAG_PRIOR_NEEDED | GST_NMI_LOCALIZE_FLAG_NO_OVERLAP;
      ret = GST_FLOW_OK;
      search_done = "none (prior needed)";
    } else {
      ret = gst_nmi_localize_full (self, buf, &s, &c, &wprior, pose, &rejected,
          &elapsed_ms, &positions);
      search_done = rejected ? "prior, then sweep (window)" : "prior (window)";
    }
  } else if (s.search == GST_NMI_LOCALIZE_SEARCH_TRANSLATION ||
      (s.search == GST_NMI_LOCALIZE_SEARCH_AUTO && !pose && self->translation_ok)) {
    ret = gst_nmi_localize_translation (self, buf, &s, &c, &fp, &elapsed_ms, &positions);
    search_done = "translation";
    GstNmiLocalizeMeta *m = ret == GST_FLOW_OK ? gst_buffer_get_nmi_localize_meta (buf) :
        NULL;
    /* auto: a doubtful result is swept again, unless the user described the
     * translation search (frame-scale, control-scale): then it stands, flagged.  An
     * undescribed one that looks clean must also register from its place (VERIFIED),
     * or it is swept too: frames at another heading or scale can peak cleanly */
    gboolean sweep = m && s.search == GST_NMI_LOCALIZE_SEARCH_AUTO && !s.scales_given &&
        !(m->flags & GST_NMI_LOCALIZE_FLAG_NO_VALID_PIXELS);
    if (sweep && !(m->flags & DOUBTFUL_TRANSLATION)) {
      gboolean holds = FALSE, verified = FALSE;
      if (!gst_nmi_localize_translation_holds (self, buf, &s, &c, m, &holds, &verified)) {
        g_free (s.score_map_location);
        return GST_FLOW_ERROR;
      }
      if (verified)
        m->flags |= GST_NMI_LOCALIZE_FLAG_VERIFIED;
      sweep = !holds;
    }
    if (sweep) {
      /* not clearly north-up at the expected scale: any heading and scale */
      const gdouble t_ms = elapsed_ms;
      const guint64 t_pos = positions;
      GST_DEBUG_OBJECT (self, "translation result doubtful (flags 0x%x) or not "
          "registering from its place: sweeping headings and scales", m->flags);
      gst_buffer_remove_meta (buf, (GstMeta *) m);
      ret = gst_nmi_localize_full (self, buf, &s, &c, fp.has_prior ? &fp.prior : NULL, FALSE,
          &rejected, &elapsed_ms, &positions);
      elapsed_ms += t_ms;
      positions += t_pos;
      search_done = "translation, then sweep";
    }
  } else {
    ret = gst_nmi_localize_full (self, buf, &s, &c, fp.has_prior ? &fp.prior : NULL, pose,
        &rejected, &elapsed_ms, &positions);
    search_done = !fp.has_prior || !(fp.prior.has_heading || fp.prior.has_scale) ?
        "sweep" : rejected ? "prior, then sweep" : "prior";
  }
  if (ret != GST_FLOW_OK) {
    g_free (s.score_map_location);
    return ret;
  }
  GstNmiLocalizeMeta *m = gst_buffer_get_nmi_localize_meta (buf);
  if (!self->announced) {
    GST_INFO_OBJECT (self, "localizing on the %s backend", gr_backend_name (self->engine ?
            gr_nmi_dense_backend (self->engine) : gr_localize_backend (self->localizer)));
    self->announced = TRUE;
  }
  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT " (%s, prior %s): centre (%.2f, "
      "%.2f) heading %.2f scale %.4f score %.5f ratio %.3f flags 0x%x; %.1f ms, %"
      G_GUINT64_FORMAT " positions (coarse %.1f ms, fine %.1f ms; frame downscales %.1f "
      "ms, %d control levels made in %.1f ms)", self->frame_count, search_done, fp.kind,
      m->center_x, m->center_y, m->heading_deg, m->scale, m->score, m->peak_ratio,
      m->flags, elapsed_ms, positions, self->coarse_ms, self->fine_ms, self->downscale_ms,
      self->levels_built, self->levels_ms);
  if (c.post_messages)
    gst_nmi_localize_post_result (self, buf, m, positions, elapsed_ms, search_done, fp.kind);
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
  g_free (self->settings.crs);
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
          "Expected frame centre, x in the units of search-units: full-resolution "
          "control pixels (negative = none: search the whole control), map x (easting) "
          "in the control's CRS, or WGS84 longitude in degrees", -G_MAXDOUBLE,
          G_MAXDOUBLE, DEFAULT_SEARCH_XY, rw_playing));
  g_object_class_install_property (gobject_class, PROP_SEARCH_Y,
      g_param_spec_double ("search-y", "Search centre y",
          "Expected frame centre, y in the units of search-units: control pixels "
          "(negative = none), map y (northing) or WGS84 latitude in degrees",
          -G_MAXDOUBLE, G_MAXDOUBLE, DEFAULT_SEARCH_XY, rw_playing));
  g_object_class_install_property (gobject_class, PROP_SEARCH_RADIUS,
      g_param_spec_double ("search-radius", "Search radius",
          "Half-width of the square of frame centres searched around (search-x, "
          "search-y): full-resolution control pixels with search-units=pixels, metres "
          "on the ground with map and lonlat; 0 = the whole control",
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
          "auto: with a pose prior on the frame (use-pose), heading, scale and place "
          "within its uncertainty (the full sweep again when the prior proves wrong); "
          "without one, the translation search, then (when neither frame-scale nor "
          "control-scale is set) the full sweep when its result is ambiguous, at the "
          "search window's edge or without overlap.  "
          "translation: only north-up frames at the scale of frame-scale/control-scale "
          "(the fastest; score-map-location and peak-exclusion apply to it only); "
          "full: any heading and a ground resolution between scale-min and scale-max "
          "control pixels per frame pixel, the result a full frame->control transform "
          "that nmiregister starts from", GST_TYPE_NMI_LOCALIZE_SEARCH, DEFAULT_SEARCH,
          rw_ready));
  g_object_class_install_property (gobject_class, PROP_USE_POSE,
      g_param_spec_boolean ("use-pose", "Use pose priors",
          "search=auto/full: use each frame's pose meta (georegtelemetry, or the "
          "application's autopilot: position, height, camera yaw/pitch/roll and their "
          "uncertainties) on a georeferenced control to limit the search",
          DEFAULT_USE_POSE, rw_playing));
  g_object_class_install_property (gobject_class, PROP_SEARCH_UNITS,
      g_param_spec_enum ("search-units", "Search region units",
          "Units of search-x, search-y and search-radius: control pixels, map "
          "coordinates in the control's CRS (radius in metres) or WGS84 "
          "longitude/latitude (radius in metres); map and lonlat need a georeferenced "
          "control", GST_TYPE_NMI_LOCALIZE_UNITS, DEFAULT_SEARCH_UNITS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_CRS,
      gst_georeg_param_spec_crs (GST_PARAM_MUTABLE_READY));
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
      GST_GEOREG_PROPS_BACKEND | GST_GEOREG_PROPS_POST_MESSAGES |
      GST_GEOREG_PROPS_WINDOWS, GST_GEOREG_BINS_AUTO);

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
  s->use_pose = DEFAULT_USE_POSE;
  s->search_units = DEFAULT_SEARCH_UNITS;
}
