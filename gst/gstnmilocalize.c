/* nmilocalize: where over the control image is this frame?
 *
 * An exhaustive translation search of the (downscaled) frame over the (downscaled)
 * control image, scored by normalized mutual information on the full 256 x 256 joint
 * histogram with validity masks (kernels/nmi_dense.h).  Frames pass through
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
#include "peak.h"
#include "raster.h"

GST_DEBUG_CATEGORY_STATIC (gst_nmi_localize_debug);
#define GST_CAT_DEFAULT gst_nmi_localize_debug

enum {
  PROP_0,
  PROP_CONTROL_LOCATION,
  PROP_BAND,
  PROP_CONTROL_NODATA,
  PROP_CONTROL_SCALE,
  PROP_FRAME_SCALE,
  PROP_SEARCH_X,
  PROP_SEARCH_Y,
  PROP_SEARCH_RADIUS,
  PROP_NODATA,
  PROP_MASK_LOCATION,
  PROP_BINS,
  PROP_BIN_LOW,
  PROP_BIN_HIGH,
  PROP_MIN_OVERLAP,
  PROP_PEAK_EXCLUSION,
  PROP_MIN_PEAK_RATIO,
  PROP_SCORE_MAP_LOCATION,
  PROP_BACKEND,
  PROP_CUDA_DEVICE_ID,
  PROP_POST_MESSAGES,
};

#define DEFAULT_BAND 0
#define DEFAULT_CONTROL_NODATA -1
#define DEFAULT_SCALE 1.0
#define DEFAULT_SEARCH_XY -1.0
#define DEFAULT_SEARCH_RADIUS 0.0
#define DEFAULT_NODATA -1
#define DEFAULT_BINS GST_GEOREG_BINS_AUTO
#define DEFAULT_BIN_LOW 2.0
#define DEFAULT_BIN_HIGH 98.0
#define DEFAULT_MIN_OVERLAP 0.5
#define DEFAULT_PEAK_EXCLUSION 0
#define DEFAULT_MIN_PEAK_RATIO 1.1
#define DEFAULT_BACKEND GR_BACKEND_AUTO
#define DEFAULT_CUDA_DEVICE_ID -1
#define DEFAULT_POST_MESSAGES TRUE

#define VIDEO_CAPS GST_GEOREG_CUDA_CAPS (GST_GEOREG_VIDEO_FORMATS)

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));

#define gst_nmi_localize_parent_class parent_class
G_DEFINE_TYPE (GstNmiLocalize, gst_nmi_localize, GST_TYPE_BASE_TRANSFORM);
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
    case PROP_CONTROL_LOCATION:
      g_free (s->control_location);
      s->control_location = g_value_dup_string (value);
      break;
    case PROP_BAND:
      s->band = g_value_get_uint (value);
      break;
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
    case PROP_NODATA:
      s->nodata = g_value_get_int (value);
      break;
    case PROP_MASK_LOCATION:
      g_free (s->mask_location);
      s->mask_location = g_value_dup_string (value);
      break;
    case PROP_BINS:
      s->bins = g_value_get_enum (value);
      break;
    case PROP_BIN_LOW:
      s->bin_low = g_value_get_double (value);
      break;
    case PROP_BIN_HIGH:
      s->bin_high = g_value_get_double (value);
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
    case PROP_BACKEND:
      s->backend = g_value_get_enum (value);
      break;
    case PROP_CUDA_DEVICE_ID:
      s->cuda_device_id = g_value_get_int (value);
      break;
    case PROP_POST_MESSAGES:
      s->post_messages = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
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
    case PROP_CONTROL_LOCATION:
      g_value_set_string (value, s->control_location);
      break;
    case PROP_BAND:
      g_value_set_uint (value, s->band);
      break;
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
    case PROP_NODATA:
      g_value_set_int (value, s->nodata);
      break;
    case PROP_MASK_LOCATION:
      g_value_set_string (value, s->mask_location);
      break;
    case PROP_BINS:
      g_value_set_enum (value, s->bins);
      break;
    case PROP_BIN_LOW:
      g_value_set_double (value, s->bin_low);
      break;
    case PROP_BIN_HIGH:
      g_value_set_double (value, s->bin_high);
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
    case PROP_SCORE_MAP_LOCATION:
      g_value_set_string (value, s->score_map_location);
      break;
    case PROP_BACKEND:
      g_value_set_enum (value, s->backend);
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int (value, s->cuda_device_id);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, s->post_messages);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ------------------------------------------------------------------ lifecycle */

static void
release_resources (GstNmiLocalize * self)
{
  gr_nmi_dense_free (self->engine);
  self->engine = NULL;
  gst_georeg_control_release (self->control);
  self->control = NULL;
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
  GstNmiLocalizeSettings s;
  gboolean ok = FALSE;
  const GrRaster *raster;
  GrPlaneF nodata_copy = { 0 };
  GrPlaneF ctl = { 0 };
  guint8 *ctl_bins = NULL;

  GST_OBJECT_LOCK (self);
  s = self->settings;
  s.control_location = g_strdup (s.control_location);
  s.mask_location = g_strdup (s.mask_location);
  s.score_map_location = NULL;
  GST_OBJECT_UNLOCK (self);

  if (!s.control_location || !*s.control_location) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No control image: set the control-location property."), (NULL));
    goto done;
  }

  /* a large GeoTIFF takes a while: say so on the bus (GST_MESSAGE_PROGRESS) */
  gst_element_post_message (GST_ELEMENT (self), gst_message_new_progress (GST_OBJECT
          (self), GST_PROGRESS_TYPE_START, "control", "Loading the control image"));
  GrStatus st;
  self->control = gst_georeg_control_acquire (s.control_location, s.band, &st, err,
      sizeof err);
  if (!self->control) {
    if (st == GR_ERR_IO)
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Could not read the control image \"%s\".", s.control_location), ("%s", err));
    else
      GST_ELEMENT_ERROR (self, RESOURCE, READ,
          ("Unusable control image \"%s\".", s.control_location), ("%s", err));
    goto done;
  }
  raster = gst_georeg_control_raster (self->control);
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
            s.control_location), (NULL));
    goto done;
  }
  if (gr_plane_downscale (full, s.control_scale, &ctl) != GR_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
    goto done;
  }
  ctl_bins = g_try_malloc ((gsize) ctl.width * ctl.height);
  if (!ctl_bins || gr_plane_to_bins (&ctl, gst_georeg_bins_resolve (s.bins,
              raster->bit_depth), s.bin_low, s.bin_high, ctl_bins) != GR_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Could not map the control to 256 bins: check bins, bin-low and bin-high "
            "(fixed needs bin-low < bin-high; percentile needs 0 <= low < high <= 100)."),
        (NULL));
    goto done;
  }

  GrStatus est;
  err[0] = '\0';
  self->engine = gr_nmi_dense_new (s.backend, gst_georeg_cuda_engine_device (&self->cuda,
          s.cuda_device_id), &est, err, sizeof err);
  if (!self->engine) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Cannot use the %s backend.", gr_backend_name (s.backend)), ("%s", err));
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
  if (s.backend == GR_BACKEND_AUTO && gr_nmi_dense_backend (self->engine) ==
      GR_BACKEND_CPU && err[0])
    /* auto: the CUDA engine could not be made or could not take the control (e.g.
     * out of device memory) */
    GST_WARNING_OBJECT (self, "backend=auto: CUDA cannot be used (%s); searching on "
        "the CPU", err);

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
      "scale %g, georeferenced: %s; backend %s", s.control_location,
      raster->plane.width, raster->plane.height, raster->driver, raster->bit_depth,
      s.band, ctl.width, ctl.height, s.control_scale, raster->has_geo ? "yes" : "no",
      gr_backend_name (gr_nmi_dense_backend (self->engine)));
  ok = TRUE;

done:
  gst_element_post_message (GST_ELEMENT (self), gst_message_new_progress (GST_OBJECT
          (self), ok ? GST_PROGRESS_TYPE_COMPLETE : GST_PROGRESS_TYPE_ERROR, "control",
          ok ? "Control image ready" : "Control image unusable"));
  if (!ok)
    release_resources (self);
  gr_plane_clear (&nodata_copy);
  gr_plane_clear (&ctl);
  g_free (ctl_bins);
  g_free (s.control_location);
  g_free (s.mask_location);
  return ok;
}

static gboolean
gst_nmi_localize_stop (GstBaseTransform * trans)
{
  gst_caps_replace (&GST_NMI_LOCALIZE (trans)->refused_caps, NULL);
  release_resources (GST_NMI_LOCALIZE (trans));
  return TRUE;
}

static gboolean
gst_nmi_localize_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  GstNmiLocalize *self = GST_NMI_LOCALIZE (trans);
  if (gst_georeg_caps_refused_before (self->refused_caps, incaps))
    return FALSE;               /* reported at the first attempt */
  GstVideoInfo info;
  gdouble fs;

  if (!gst_video_info_from_caps (&info, incaps)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Unsupported caps."),
        ("%" GST_PTR_FORMAT, incaps));
    gst_georeg_caps_refused (GST_ELEMENT (self), &self->refused_caps, incaps);
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  fs = self->settings.frame_scale;
  GST_OBJECT_UNLOCK (self);

  const gint tw = MAX (1, (gint) floor (GST_VIDEO_INFO_WIDTH (&info) * fs + 0.5));
  const gint th = MAX (1, (gint) floor (GST_VIDEO_INFO_HEIGHT (&info) * fs + 0.5));
  if (tw > self->ctl_w || th > self->ctl_h) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("The frame (%dx%d, %dx%d at search scale) is larger than the control image "
            "(%dx%d at search scale): check frame-scale and control-scale.",
            GST_VIDEO_INFO_WIDTH (&info), GST_VIDEO_INFO_HEIGHT (&info), tw, th,
            self->ctl_w, self->ctl_h), (NULL));
    gst_georeg_caps_refused (GST_ELEMENT (self), &self->refused_caps, incaps);
    return FALSE;
  }
  if (self->frame_mask.data && (self->frame_mask.width != GST_VIDEO_INFO_WIDTH (&info)
          || self->frame_mask.height != GST_VIDEO_INFO_HEIGHT (&info))) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("The frame mask is %dx%d but frames are %dx%d.", self->frame_mask.width,
            self->frame_mask.height, GST_VIDEO_INFO_WIDTH (&info),
            GST_VIDEO_INFO_HEIGHT (&info)), (NULL));
    gst_georeg_caps_refused (GST_ELEMENT (self), &self->refused_caps, incaps);
    return FALSE;
  }

  self->info = info;
  self->tpl_w = tw;
  self->tpl_h = th;
  gst_georeg_cuda_set_caps (&self->cuda, incaps);
  if (!gst_georeg_cuda_set_frame_mask (&self->cuda, self->frame_mask.data ?
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
  gst_caps_replace (&self->refused_caps, NULL);
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
      "input-memory", G_TYPE_STRING, gst_georeg_input_name (self->input),
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
  if (m->has_map)
    gst_structure_set (st, "map-x", G_TYPE_DOUBLE, m->map_x,
        "map-y", G_TYPE_DOUBLE, m->map_y, NULL);
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), st));
}

static GstFlowReturn
gst_nmi_localize_transform_ip (GstBaseTransform * trans, GstBuffer * buf)
{
  GstNmiLocalize *self = GST_NMI_LOCALIZE (trans);
  GstNmiLocalizeSettings s;
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
  s.control_location = s.mask_location = NULL;
  s.score_map_location = g_strdup (s.score_map_location);
  GST_OBJECT_UNLOCK (self);

  /* a CUDA frame of our context: luma, masks and the downscale on the device, only
   * the small search-scale plane comes back (bit-identical to the host path) */
  if (!gst_georeg_cuda_frame_to_plane (&self->cuda, GST_ELEMENT (self), buf,
          &self->info, s.nodata, s.frame_scale, TRUE, &self->small, &self->input, err,
          sizeof err)) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not read the CUDA frame."),
        ("%s", err));
    g_free (s.score_map_location);
    return GST_FLOW_ERROR;
  }
  gboolean mem_ok = TRUE, uploaded = FALSE;
  if (self->input != GST_GEOREG_INPUT_CUDA_DEVICE && !self->frame_mask.data &&
      gr_nmi_dense_backend (self->engine) == GR_BACKEND_CUDA) {
    /* any other frame for a CUDA engine: its 8-bit plane goes up, the same conversion
     * and downscale run on the device, the search-scale plane comes back (frames with
     * a mask-location take the host path) */
    const gint dev = MAX (gst_georeg_cuda_engine_device (&self->cuda,
            s.cuda_device_id), 0);
    if (!gst_georeg_cuda_frame_to_device (&self->cuda, GST_ELEMENT (self), buf,
            &self->info, s.nodata, dev, s.frame_scale, TRUE, &self->small, &self->input,
            &uploaded, err, sizeof err)) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not read the frame on the "
              "device."), ("%s", err));
      g_free (s.score_map_location);
      return GST_FLOW_ERROR;
    }
  }
  if (self->input != GST_GEOREG_INPUT_CUDA_DEVICE && !uploaded) {
    if (!gst_video_frame_map (&frame, &self->info, buf, GST_MAP_READ)) {
      GST_ELEMENT_ERROR (self, STREAM, DECODE, ("Could not map the frame."), (NULL));
      g_free (s.score_map_location);
      return GST_FLOW_ERROR;
    }
    mem_ok = gst_georeg_frame_to_plane (&frame, s.nodata, &self->full);
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
  if (gr_plane_to_bins (&self->small, gst_georeg_bins_resolve (s.bins,
              gst_georeg_video_format_depth (GST_VIDEO_INFO_FORMAT (&self->info))),
          s.bin_low, s.bin_high, self->bins) != GR_OK) {
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
      m->center_x = m->control_x + GST_VIDEO_INFO_WIDTH (&self->info) * k / 2.0;
      m->center_y = m->control_y + GST_VIDEO_INFO_HEIGHT (&self->info) * k / 2.0;
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
  if (s.post_messages)
    post_result (self, buf, m, positions, elapsed_ms);
  self->frame_count++;
  g_free (s.score_map_location);
  return GST_FLOW_OK;
}

/* ------------------------------------------------------------------ CUDA memory */

static void
cuda_settings (GstElement * element, GrBackend * backend, gint * device_id)
{
  GstNmiLocalize *self = GST_NMI_LOCALIZE (element);
  GST_OBJECT_LOCK (self);
  *backend = self->settings.backend;
  *device_id = self->settings.cuda_device_id;
  GST_OBJECT_UNLOCK (self);
}

/* ------------------------------------------------------------------ class */

static void
gst_nmi_localize_finalize (GObject * object)
{
  GstNmiLocalize *self = GST_NMI_LOCALIZE (object);
  release_resources (self);
  gst_georeg_cuda_close (&self->cuda);
  g_free (self->settings.control_location);
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

  g_object_class_install_property (gobject_class, PROP_CONTROL_LOCATION,
      g_param_spec_string ("control-location", "Control location",
          "Control image file (GeoTIFF/TIFF/PNG/JPEG through GDAL when built with it; "
          "else PNG/JPEG with a world file). Nodata or alpha is its mask, its "
          "geotransform gives map coordinates", NULL, rw_ready));
  g_object_class_install_property (gobject_class, PROP_BAND,
      g_param_spec_uint ("band", "Band",
          "Band of the control image to match (1-based); 0 = luminance of its colour "
          "bands", 0, 65535, DEFAULT_BAND, rw_ready));
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
          "the seed pipeline does)", 1e-3, 1.0, DEFAULT_SCALE, rw_ready));
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
  g_object_class_install_property (gobject_class, PROP_NODATA,
      g_param_spec_int ("nodata", "Nodata",
          "Frame value that marks invalid pixels (gray value, or rounded luma of "
          "colour frames); -1 = none", -1, 65535, DEFAULT_NODATA, rw_playing));
  g_object_class_install_property (gobject_class, PROP_MASK_LOCATION,
      g_param_spec_string ("mask-location", "Mask location",
          "Optional frame mask image, frame-sized, nonzero = valid (combined with "
          "alpha and nodata)", NULL, rw_ready));
  g_object_class_install_property (gobject_class, PROP_BINS,
      g_param_spec_enum ("bins", "Bins",
          "How values of frame and control become the 256 histogram bins (each image "
          "on its own values)", GST_TYPE_GEOREG_BINS, DEFAULT_BINS, rw_ready));
  g_object_class_install_property (gobject_class, PROP_BIN_LOW,
      g_param_spec_double ("bin-low", "Bin low",
          "Low end for bins=fixed (a value) or bins=percentile (0..100)",
          -G_MAXDOUBLE, G_MAXDOUBLE, DEFAULT_BIN_LOW, rw_ready));
  g_object_class_install_property (gobject_class, PROP_BIN_HIGH,
      g_param_spec_double ("bin-high", "Bin high",
          "High end for bins=fixed (a value) or bins=percentile (0..100)",
          -G_MAXDOUBLE, G_MAXDOUBLE, DEFAULT_BIN_HIGH, rw_ready));
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
  g_object_class_install_property (gobject_class, PROP_SCORE_MAP_LOCATION,
      g_param_spec_string ("score-map-location", "Score map location",
          "Write each frame's score map as an 8-bit PNG (brighter = higher NMI, black = "
          "not scored); a pattern with one %d for the frame number, e.g. "
          "map-%05d.png; unset = none", NULL, rw_playing));
  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend",
          "Where the search runs", GST_TYPE_GEOREG_BACKEND, DEFAULT_BACKEND, rw_ready));
  g_object_class_install_property (gobject_class, PROP_CUDA_DEVICE_ID,
      g_param_spec_int ("cuda-device-id", "CUDA device id",
          "CUDA device to use (-1 = any)", -1, G_MAXINT, DEFAULT_CUDA_DEVICE_ID,
          rw_ready));
  g_object_class_install_property (gobject_class, PROP_POST_MESSAGES,
      g_param_spec_boolean ("post-messages", "Post messages",
          "Post an element message 'nmilocalize' per frame", DEFAULT_POST_MESSAGES,
          rw_playing));

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
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_nmi_localize_set_caps);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR (gst_nmi_localize_transform_ip);
  gst_georeg_cuda_class_setup (element_class, G_STRUCT_OFFSET (GstNmiLocalize, cuda),
      cuda_settings);
  trans_class->passthrough_on_same_caps = FALSE;
  trans_class->transform_ip_on_passthrough = FALSE;

  gst_type_mark_as_plugin_api (GST_TYPE_GEOREG_BACKEND, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GEOREG_BINS, 0);
  GST_DEBUG_CATEGORY_INIT (gst_nmi_localize_debug, "nmilocalize", 0,
      "NMI coarse localization");
}

static void
gst_nmi_localize_init (GstNmiLocalize * self)
{
  GstNmiLocalizeSettings *s = &self->settings;
  s->band = DEFAULT_BAND;
  s->control_nodata = DEFAULT_CONTROL_NODATA;
  s->control_scale = DEFAULT_SCALE;
  s->frame_scale = DEFAULT_SCALE;
  s->search_x = s->search_y = DEFAULT_SEARCH_XY;
  s->search_radius = DEFAULT_SEARCH_RADIUS;
  s->nodata = DEFAULT_NODATA;
  s->bins = DEFAULT_BINS;
  s->bin_low = DEFAULT_BIN_LOW;
  s->bin_high = DEFAULT_BIN_HIGH;
  s->min_overlap = DEFAULT_MIN_OVERLAP;
  s->peak_exclusion = DEFAULT_PEAK_EXCLUSION;
  s->min_peak_ratio = DEFAULT_MIN_PEAK_RATIO;
  s->backend = DEFAULT_BACKEND;
  s->cuda_device_id = DEFAULT_CUDA_DEVICE_ID;
  s->post_messages = DEFAULT_POST_MESSAGES;
  gst_georeg_cuda_init (&self->cuda);
  gst_base_transform_set_in_place (GST_BASE_TRANSFORM (self), TRUE);
}
