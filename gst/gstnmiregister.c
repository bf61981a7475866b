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
 *
 * The algorithm is the engine's (kernels/register.h); this file wires it to the
 * element: start (control, engine, map), reading the frame, the prior from the coarse
 * meta, the overlay.  Properties: gstnmiregister-props.c; the result into the meta
 * and the message: gstnmiregister-result.c.
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
#include "gstnmiregister-props.h"
#include "gstnmiregister-result.h"
#include "register.h"
#include "keypoints.h"
#include "georeg-frame-meta.h"
#include "fit.h"
#include "georeg-meta.h"
#include "nmiregister-meta.h"
#include "raster.h"

GST_DEBUG_CATEGORY_STATIC (gst_nmi_register_debug);
#define GST_CAT_DEFAULT gst_nmi_register_debug

#define VIDEO_CAPS GST_GEOREG_CUDA_CAPS (GST_GEOREG_VIDEO_FORMATS)

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));

struct _GstNmiRegister {
  GstGeoregBase parent;

  GstNmiRegisterSettings settings;

  /* prepared in start(): the engine (kernels/register.h) and what the meta needs of
   * the control */
  GrRegister *engine;
  GstGeoregDeviceControl *dctl; /* the shared control levels the engine borrows */
  GstNmiRegisterMap map;        /* the control on the map: geotransform, CRS */

  /* per-frame scratch, reused */
  GrPlaneF full;                /* this frame on the host (host path) */
  gboolean on_host;             /* this frame is `full` (not on the device) */
  GrPlaneF dplane;              /* this frame on the device (the converter's memory) */
  guint64 frame_count;
  gboolean announced;
  gboolean warned_no_coarse;
  gdouble read_ms, keypoints_ms;        /* this frame's phases (element message) */
  gdouble overlay_ms;                   /* drawing the overlay (0 without one) */

  /* a control read in windows (control-mode, control-budget; docs/controls.md): the
   * engine registers on the window around each frame's prior */
  gboolean windowed;
  GstGeoregControlFollow follow;
  gboolean warned_prior_needed; /* the first frame without a position was reported */
  gboolean range_set;           /* ctl_a, ctl_b taken (once: a place keeps its grey
                                 * levels as the window slides) */
  gdouble ctl_a, ctl_b;
  gint bit_depth;
};

#define gst_nmi_register_parent_class parent_class
G_DEFINE_TYPE (GstNmiRegister, gst_nmi_register, GST_TYPE_GEOREG_BASE);
GST_ELEMENT_REGISTER_DEFINE (nmiregister, "nmiregister", GST_RANK_NONE,
    GST_TYPE_NMI_REGISTER);

/* ------------------------------------------------------------------ properties */

static void
gst_nmi_register_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstNmiRegister *self = GST_NMI_REGISTER (object);
  gchar *warning = NULL;

  GST_OBJECT_LOCK (self);
  const gboolean own = gst_nmi_register_settings_set (&self->settings, prop_id, value,
      &warning);
  GST_OBJECT_UNLOCK (self);
  if (warning)
    g_warning ("%s", warning);
  g_free (warning);
  if (!own)
    gst_georeg_base_set_property (object, prop_id, value, pspec);
}

static void
gst_nmi_register_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstNmiRegister *self = GST_NMI_REGISTER (object);

  GST_OBJECT_LOCK (self);
  const gboolean own = gst_nmi_register_settings_get (&self->settings, prop_id, value);
  GST_OBJECT_UNLOCK (self);
  if (!own)
    gst_georeg_base_get_property (object, prop_id, value, pspec);
}

/* ------------------------------------------------------------------ lifecycle */

static void
release_resources (GstNmiRegister * self)
{
  /* the engine borrows the shared device control and the control plane: it goes
   * first */
  gr_register_free (self->engine);
  self->engine = NULL;
  gst_georeg_device_control_release (self->dctl);
  self->dctl = NULL;
  memset (&self->dplane, 0, sizeof self->dplane);
  gst_georeg_control_follow_clear (&self->follow);
  self->windowed = FALSE;
  self->range_set = FALSE;
  gst_georeg_base_release_control (GST_GEOREG_BASE (self));
  gr_plane_clear (&self->full);
  gst_nmi_register_map_clear (&self->map);
}

/* The control plane (whole, or the window `win`) into the engine, ranged a..b: on
 * CUDA through the process-wide device cache (gstgeoregcontrolcuda.h: levels derived
 * on the device, shared with elements of the same levels and range), else the engine
 * makes its own.  The previous device control is released after the engine took the
 * new one.  FALSE with the reason in err. */
static gboolean
set_engine_control (GstNmiRegister * self, GstGeoregControl * control,
    GstGeoregControlWindow * win, const GrPlaneF * plane, gdouble ctl_a, gdouble ctl_b,
    guint levels, gint dev, gchar * err, gsize errlen)
{
  GrImage8 dlv = { 0 };
  gint vmax = 0;
  GstGeoregDeviceControl *old = self->dctl;
  self->dctl = NULL;
#if GR_HAVE_CUDA
  if (gr_register_backend (self->engine) == GR_BACKEND_CUDA) {
    char derr[512] = "";
    GrStatus dst;
    /* the device cache takes its own reference: the only change it makes to it */
    self->dctl = win ? gst_georeg_device_control_window_levels (win, MAX (dev, 0),
        levels, ctl_a, ctl_b, &dst, derr, sizeof derr) :
        gst_georeg_device_control_levels (control, MAX (dev, 0), levels, ctl_a, ctl_b,
        &dst, derr, sizeof derr);
    if (self->dctl) {
      const GrPlaneF *pl = gst_georeg_device_control_get_plane (self->dctl);
      dlv.pix = gst_georeg_device_control_get_levels (self->dctl, &vmax);
      dlv.pix_stride = dlv.mask_stride = (size_t) pl->width;
      dlv.mask = pl->mask;
      dlv.width = pl->width;
      dlv.height = pl->height;
    } else {
      GST_WARNING_OBJECT (self, "no shared device control (%s): the control is "
          "uploaded for this element", derr);
    }
  }
#else
  (void) control;
  (void) win;
  (void) dev;
#endif
  bool used_dev = false;
  GrStatus cst = gr_register_set_control (self->engine, plane, ctl_a, ctl_b,
      (int) levels, self->dctl ? &dlv : NULL, vmax, &used_dev, err, errlen);
  gst_georeg_device_control_release (old);
  if (cst != GR_OK)
    return FALSE;
  if (!used_dev && self->dctl) {
    GST_WARNING_OBJECT (self, "the shared device control was not taken: the control "
        "is uploaded for this element");
    gst_georeg_device_control_release (self->dctl);
    self->dctl = NULL;
  }
  return TRUE;
}

static gboolean
gst_nmi_register_start (GstBaseTransform * trans)
{
  GstNmiRegister *self = GST_NMI_REGISTER (trans);
  char err[512] = "";
  GstNmiRegisterSettings s;
  gboolean ok = FALSE;

  GST_OBJECT_LOCK (self);
  s = self->settings;
  s.crs = g_strdup (s.crs);
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
  GrRaster whole_info = { 0 };
  if (gst_georeg_base_control_windowed (GST_GEOREG_BASE (self))) {
    /* read in windows around each frame's prior: what the map and the messages need
     * of the control, from its header (the plane stays empty) */
    GrControlInfo ci;
    gr_control_source_info (gst_georeg_control_source (control), &ci);
    whole_info.plane.width = ci.width;
    whole_info.plane.height = ci.height;
    whole_info.bands = ci.bands;
    whole_info.bit_depth = ci.bit_depth;
    whole_info.has_geo = ci.has_geo;
    memcpy (whole_info.geo, ci.geo, sizeof whole_info.geo);
    g_strlcpy (whole_info.driver, ci.driver, sizeof whole_info.driver);
    r = &whole_info;
    self->windowed = TRUE;
    self->bit_depth = ci.bit_depth;
    memset (&self->follow, 0, sizeof self->follow);
    self->range_set = FALSE;
    self->warned_prior_needed = FALSE;
  }
  if (!self->windowed && gr_plane_count_valid (&r->plane) == 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("The control image \"%s\" has no valid pixel (all nodata or transparent).",
            s.c.control_location), (NULL));
    goto done;
  }
  gdouble ctl_a = 0.0, ctl_b = 0.0;
  /* windowed: the range is taken on the first window (window_for_frame) */
  if (!self->windowed && gr_plane_value_range (&r->plane, gst_georeg_bins_resolve (s.c.bins,
              r->bit_depth), r->bit_depth, s.c.bin_low, s.c.bin_high, &ctl_a,
          &ctl_b) != GR_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Could not map the control to %u levels: check bins, bin-low and bin-high "
            "(fixed needs bin-low < bin-high; percentile needs 0 <= low < high <= 100).",
            s.levels), (NULL));
    goto done;
  }

  GrStatus est;
  err[0] = '\0';
  const gint dev = gst_georeg_base_engine_device (GST_GEOREG_BASE (self),
      s.c.cuda_device_id);
  self->engine = gr_register_new (s.c.backend, dev, &est, err, sizeof err);
  if (!self->engine) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Cannot use the %s backend.", gr_backend_name (s.c.backend)), ("%s", err));
    goto done;
  }
  if (!self->windowed && !set_engine_control (self, (GstGeoregControl *) control, NULL,
          &r->plane, ctl_a, ctl_b, s.levels, dev, err, sizeof err)) {
    GST_ELEMENT_ERROR (self, LIBRARY, INIT,
        ("Could not prepare the control image for matching."), ("%s", err));
    goto done;
  }
  if (s.c.backend == GR_BACKEND_AUTO && gr_register_backend (self->engine) ==
      GR_BACKEND_CPU && err[0])
    /* auto: the CUDA engine could not be made or could not take the control (e.g.
     * out of device memory); it now matches on the CPU and frames are read on the
     * host */
    GST_WARNING_OBJECT (self, "backend=auto: CUDA cannot be used (%s); matching on "
        "the CPU", err);
  gchar *note = NULL;
  if (!gst_nmi_register_map_init (&self->map, r, s.c.control_location, s.crs, &note, err,
          sizeof err)) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("The crs property cannot be used "
            "for the control \"%s\".", s.c.control_location), ("%s", err));
    goto done;
  }
  if (note)
    GST_WARNING_OBJECT (self, "%s", note);
  g_free (note);
  self->frame_count = 0;
  self->announced = FALSE;
  self->warned_no_coarse = FALSE;
  GST_INFO_OBJECT (self, "control %s: %dx%d (%s, %d-bit, band %u), georeferenced: %s, "
      "CRS %s; %u controls shared in memory; backend %s; control %s; frames read %s",
      s.c.control_location, r->plane.width, r->plane.height, r->driver, r->bit_depth,
      s.c.band, r->has_geo ? "yes" : "no", self->map.crs ? self->map.crs : "unknown",
      gst_georeg_control_cache_count (),
      gr_backend_name (gr_register_backend (self->engine)),
      self->windowed ? "read in windows" : self->dctl ? "shared on the device" :
      "this element's own",
      gr_register_frame_device (self->engine) >= 0 ? "on the device" : "on the host");
  ok = TRUE;

done:
  gst_georeg_base_control_done (GST_GEOREG_BASE (self), ok);
  if (!ok)
    release_resources (self);
  gst_georeg_base_settings_clear (&s.c);
  g_free (s.crs);
  return ok;
}

static gboolean
gst_nmi_register_stop (GstBaseTransform * trans)
{
  release_resources (GST_NMI_REGISTER (trans));
  return TRUE;
}


/* ------------------------------------------------------------------ per frame */

static void
post_result (GstNmiRegister * self, GstBuffer * buf, const GstNmiRegisterMeta * m,
    gdouble elapsed_ms)
{
  const GstNmiRegisterMessageInfo info = {
    .frame = self->frame_count,
    .timestamp = GST_BUFFER_PTS (buf),
    .backend = gr_backend_name (gr_register_backend (self->engine)),
    .input_memory = gst_georeg_input_name (gst_georeg_base_input (GST_GEOREG_BASE (self))),
    .register_ms = elapsed_ms,
    .read_ms = self->read_ms,
    .keypoints_ms = self->keypoints_ms,
    .overlay_ms = self->overlay_ms,
  };
  gst_georeg_base_post_result (GST_GEOREG_BASE (self),
      gst_nmi_register_result_structure (m, &info));
}

/* The overlay (property `overlay`, gstnmiregisteroverlay.h) of this frame's result:
 * attached as a GstVideoOverlayCompositionMeta, or blended into the frame (mapped
 * for writing: CUDA memory goes through the host and back).  FALSE after posting an
 * error. */
static gboolean
draw_overlay (GstNmiRegister * self, const GstNmiRegisterSettings * s, GstBuffer * buf,
    const GstNmiRegisterMeta * m, const GrRegisterResult * res)
{
  const GstVideoInfo *info = gst_georeg_base_info (GST_GEOREG_BASE (self));
  GstNmiRegisterOverlayData d = {
    .width = GST_VIDEO_INFO_WIDTH (info),
    .height = GST_VIDEO_INFO_HEIGHT (info),
    .keypoints = res->kp,
    .n_keypoints = res->kp ? (gint) m->keypoints : 0,
    .match_frame = res->match_frame,
    .match_control = res->match_control,
    .inlier = res->inlier,
    .n_matches = res->n_matches,
    .has_transform = m->has_transform,
    .has_prior = res->has_prior,
    .doubtful = m->has_transform && gst_nmi_register_meta_doubt (m,
        gst_buffer_get_nmi_localize_meta (buf)) != 0,
  };
  if (m->has_transform) {
    memcpy (d.frame_to_control, m->frame_to_control, sizeof d.frame_to_control);
    memcpy (d.frame_to_control_index, res->h_index, sizeof d.frame_to_control_index);
  }
  /* the prior the engine started from: an offset and scale, or nmilocalize's full
   * homography */
  if (d.has_prior)
    memcpy (d.prior, res->prior, sizeof d.prior);
  if (s->overlay == GST_NMI_REGISTER_OVERLAY_META) {
    GstVideoOverlayComposition *comp = gst_nmi_register_overlay_render (&d);
    if (!comp)
      goto no_memory;
    gst_buffer_add_video_overlay_composition_meta (buf, comp);
    gst_video_overlay_composition_unref (comp);
    return TRUE;
  }
  GstVideoFrame frame;
  if (!gst_video_frame_map (&frame, info, buf, GST_MAP_READWRITE)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map the frame to draw the "
            "overlay."), (NULL));
    return FALSE;
  }
  const GstNmiRegisterOverlayDrawResult r = gst_nmi_register_overlay_draw (&d, &frame);
  gst_video_frame_unmap (&frame);
  /* the pixels changed: a converted plane shared downstream is stale now */
  gst_georeg_base_frame_changed (GST_GEOREG_BASE (self), buf);
  switch (r) {
    case GST_NMI_REGISTER_OVERLAY_DRAW_OK:
      return TRUE;
    case GST_NMI_REGISTER_OVERLAY_DRAW_NO_MEMORY:
      goto no_memory;
    case GST_NMI_REGISTER_OVERLAY_DRAW_FORMAT:
    default:
      GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Cannot draw the overlay on %s "
              "frames.", gst_video_format_to_string (GST_VIDEO_INFO_FORMAT (info))), (NULL));
      return FALSE;
  }
no_memory:
  GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory for the "
          "overlay (%dx%d).", d.width, d.height), (NULL));
  return FALSE;
}

/* The engine's parameters from this frame's settings. */
static void
engine_params (const GstNmiRegisterSettings * s, GrRegisterParams * p)
{
  gr_register_params_init (p);
  p->levels = (int) s->levels;
  p->max_keypoints = s->max_keypoints;
  p->template_size = s->template_size;
  p->window_size = s->window_size;
  p->refine = s->refine;
  p->refine_window = s->refine_window;
  p->model = s->model;
  p->ransac_threshold = s->ransac_threshold;
  p->min_peak_ratio = s->min_peak_ratio;
  p->min_inliers = s->min_inliers;
  p->min_inlier_ratio = s->min_inlier_ratio;
  p->max_predicted_error = s->max_predicted_error;
  p->camera_fit = s->camera_fit;
  p->keep_matches = s->overlay != GST_NMI_REGISTER_OVERLAY_NONE;
}

/* The frame into the engine: on the device when the engine keeps frames there (CUDA
 * memory in place, or its 8-bit plane uploaded; percentile bins need a sort of the
 * values and take the host path), else as a host plane.  FALSE after posting an
 * error. */
static gboolean
read_frame (GstNmiRegister * self, const GstNmiRegisterSettings * s,
    const GrRegisterParams * p, GstBuffer * buf)
{
  GstGeoregBase *base = GST_GEOREG_BASE (self);
  const GstVideoInfo *info = gst_georeg_base_info (base);
  const int depth = gst_georeg_video_format_depth (GST_VIDEO_INFO_FORMAT (info));
  const GrBinMode bmode = gst_georeg_bins_resolve (s->c.bins, depth);
  const gint dev = gr_register_frame_device (self->engine);
  gboolean on_device = FALSE;
  char err[512] = "";

  if (dev >= 0 && bmode != GR_BINS_PERCENTILE &&
      !gst_georeg_base_frame_to_device (base, buf, s->c.nodata, dev, 0.0, FALSE,
          &self->dplane, &on_device, err, sizeof err)) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not read the frame on the "
            "device."), ("%s", err));
    return FALSE;
  }
  if (!on_device && !gst_georeg_base_read_plane (base, buf, s->c.nodata, &self->full))
    return FALSE;
  self->on_host = !on_device;
  GrStatus st = gr_register_set_frame (self->engine, p, on_device ? &self->dplane :
      &self->full, on_device, bmode, depth, s->c.bin_low, s->c.bin_high, err,
      sizeof err);
  if (st == GR_ERR_INVALID) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map the frame to %u levels: "
            "check bins, bin-low and bin-high.", s->levels), ("%s", err));
    return FALSE;
  } else if (st != GR_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not quantize the frame (%s).",
            gr_status_string (st)), ("%s", err));
    return FALSE;
  }
  return TRUE;
}

/* A coarse homography the engine can start from: finite, finite at the frame's
 * top-left, from a result that found a place. */
static gboolean
prior_transform_usable (const GstNmiLocalizeMeta * lm)
{
  if (lm->flags & (GST_NMI_LOCALIZE_FLAG_NO_VALID_PIXELS |
          GST_NMI_LOCALIZE_FLAG_NO_OVERLAP))
    return FALSE;
  for (int i = 0; i < 9; i++)
    if (!isfinite (lm->frame_to_control[i]))
      return FALSE;
  return fabs (lm->frame_to_control[8]) > 1e-12;
}

/* The engine's prior from nmilocalize's meta or the coarse fallback; the meta's
 * coarse flags and prior fields are set here. */
static void
make_prior (GstNmiRegister * self, const GstNmiRegisterSettings * s, GstBuffer * buf,
    GstNmiRegisterMeta * m, GrRegisterPrior * prior)
{
  const GstNmiLocalizeMeta *lm = gst_buffer_get_nmi_localize_meta (buf);
  gboolean use_fallback = lm == NULL, coarse_doubtful = FALSE;
  double px = NAN, py = NAN, pscale = NAN;

  memset (prior, 0, sizeof *prior);
  prior->search_scale = s->initial_scale;
  if (lm && lm->has_prior_transform && prior_transform_usable (lm)) {
    /* the full coarse homography (any heading and scale): the engine starts from it
     * as it is */
    const double *h = lm->frame_to_control;
    memcpy (prior->h, h, sizeof prior->h);
    prior->has_prior = TRUE;
    px = h[2] / h[8];
    py = h[5] / h[8];
    pscale = isfinite (lm->scale) ? lm->scale : sqrt (fabs (h[0] * h[4] - h[1] * h[3]))
        / fabs (h[8]);
    coarse_doubtful = (lm->flags & (GST_NMI_LOCALIZE_FLAG_AMBIGUOUS |
            GST_NMI_LOCALIZE_FLAG_AT_BORDER | GST_NMI_LOCALIZE_FLAG_IMPLAUSIBLE)) != 0;
  } else if (lm) {
    if ((lm->flags & (GST_NMI_LOCALIZE_FLAG_NO_VALID_PIXELS |
                GST_NMI_LOCALIZE_FLAG_NO_OVERLAP)) || !isfinite (lm->control_x) ||
        !isfinite (lm->control_y) || !(lm->control_scale > 0.0) ||
        !(lm->frame_scale > 0.0)) {
      m->flags |= GST_NMI_REGISTER_FLAG_COARSE_UNUSABLE;
      /* only the full search can help a frame the coarse search could not place */
      use_fallback = s->coarse_fallback == GST_NMI_REGISTER_COARSE_FULL_SEARCH;
    } else {
      px = lm->control_x;
      py = lm->control_y;
      pscale = lm->frame_scale / lm->control_scale;
      prior->has_prior = TRUE;
      coarse_doubtful = (lm->flags & (GST_NMI_LOCALIZE_FLAG_AMBIGUOUS |
              GST_NMI_LOCALIZE_FLAG_AT_BORDER)) != 0;
    }
  }
  if (use_fallback) {
    switch (s->coarse_fallback) {
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
        px = s->initial_offset_x;
        py = s->initial_offset_y;
        pscale = s->initial_scale;
        prior->has_prior = TRUE;
        break;
      case GST_NMI_REGISTER_COARSE_FULL_SEARCH:
        /* the engine searches: its flags tell whether it found a position */
        m->flags &= ~GST_NMI_REGISTER_FLAG_COARSE_UNUSABLE;
        pscale = s->initial_scale;
        prior->search = TRUE;
        break;
    }
  }
  if (prior->has_prior && !(lm && lm->has_prior_transform &&
          prior_transform_usable (lm))) {
    const double h[9] = { pscale, 0, px, 0, pscale, py, 0, 0, 1 };
    memcpy (prior->h, h, sizeof h);
  }
  prior->second_opinion = coarse_doubtful &&
      s->coarse_fallback == GST_NMI_REGISTER_COARSE_FULL_SEARCH;
  m->prior_x = px;
  m->prior_y = py;
  m->prior_scale = pscale;
}

/* ---- a control read in windows */

/* frames of motion ahead whose window is prefetched */
#define PREFETCH_AHEAD 4

/* The window around this frame's prior into the engine, and the prior in its pixels
 * (*wprior).  *skip: the frame has no prior (flagged no-coarse or coarse-unusable by
 * make_prior): nothing to register on.  FALSE after posting an error. */
static gboolean
window_for_frame (GstNmiRegister * self, const GstNmiRegisterSettings * s,
    const GrRegisterPrior * prior, GrRegisterPrior * wprior, gboolean * skip)
{
  GstGeoregBase *base = GST_GEOREG_BASE (self);
  GstGeoregControl *control = gst_georeg_base_control_windowed (base);
  const GstVideoInfo *info = gst_georeg_base_info (base);
  const gint fw = GST_VIDEO_INFO_WIDTH (info), fh = GST_VIDEO_INFO_HEIGHT (info);
  char err[512] = "";

  *wprior = *prior;
  *skip = FALSE;
  if (prior->search) {
    /* issue 18: a flag on this frame (PRIOR_NEEDED, set by the caller), not an error
     * that ends the stream; said once on the bus */
    if (!self->warned_prior_needed) {
      self->warned_prior_needed = TRUE;
      GST_ELEMENT_WARNING (self, STREAM, FAILED, ("Frame %" G_GUINT64_FORMAT " has "
              "no usable coarse result and coarse-fallback=full-search needs the "
              "whole control, which is read in windows (control-mode, "
              "control-budget): a prior is needed.  Such frames are flagged "
              "prior-needed and not registered.", self->frame_count),
          ("put nmilocalize with pose priors before nmiregister, or use "
              "coarse-fallback=none"));
    }
    *skip = TRUE;
    return TRUE;
  }
  if (!prior->has_prior) {
    *skip = TRUE;
    return TRUE;
  }
  /* the frame's corners under the prior, grown by the first pass's window (control
   * pixels) and a template */
  gdouble box[4] = { G_MAXDOUBLE, G_MAXDOUBLE, -G_MAXDOUBLE, -G_MAXDOUBLE };
  const gdouble corners[4][2] = { {0, 0}, {fw, 0}, {0, fh}, {fw, fh} };
  for (int i = 0; i < 4; i++) {
    double x, y;
    if (!gr_fit_apply (prior->h, corners[i][0], corners[i][1], &x, &y)) {
      *skip = TRUE;             /* a prior that sends the frame to infinity */
      return TRUE;
    }
    box[0] = MIN (box[0], x);
    box[1] = MIN (box[1], y);
    box[2] = MAX (box[2], x);
    box[3] = MAX (box[3], y);
  }
  const gdouble grow = s->window_size + s->template_size;
  box[0] -= grow;
  box[1] -= grow;
  box[2] += grow;
  box[3] += grow;
  GstGeoregBaseSettings c;
  gst_georeg_base_get_settings (base, &c);
  const gdouble margin = c.control_window_margin;
  gst_georeg_base_settings_clear (&c);

  gboolean changed = FALSE;
  GrStatus st;
  const gint64 t0 = g_get_monotonic_time ();
  if (!gst_georeg_control_follow (control, &self->follow, box, 0, margin,
          PREFETCH_AHEAD, &changed, &st, err, sizeof err)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("Could not read the control under "
            "frame %" G_GUINT64_FORMAT "'s prior (%.0f, %.0f) - (%.0f, %.0f).",
            self->frame_count, box[0], box[1], box[2], box[3]), ("%s", err));
    return FALSE;
  }
  const GrControlWindow *w = gst_georeg_control_window_get (self->follow.window);
  const gint64 t1 = g_get_monotonic_time ();
  if (changed) {
    if (!self->range_set) {
      /* once, on the first window: a place keeps its grey levels as windows slide */
      if (gr_plane_value_range (&w->raster.plane, gst_georeg_bins_resolve (s->c.bins,
                  self->bit_depth), self->bit_depth, s->c.bin_low, s->c.bin_high,
              &self->ctl_a, &self->ctl_b) != GR_OK) {
        GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
            ("Could not map the control to %u levels: check bins, bin-low and "
                "bin-high (or the first window has no valid pixel).", s->levels),
            (NULL));
        return FALSE;
      }
      self->range_set = TRUE;
    }
    const gint dev = gst_georeg_base_engine_device (base, s->c.cuda_device_id);
    if (!set_engine_control (self, control, self->follow.window, &w->raster.plane,
            self->ctl_a, self->ctl_b, s->levels, dev, err, sizeof err)) {
      GST_ELEMENT_ERROR (self, LIBRARY, INIT, ("Could not prepare the control window "
              "(%d x %d) for matching.", w->raster.plane.width,
              w->raster.plane.height), ("%s", err));
      return FALSE;
    }
    GST_DEBUG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": window %dx%d, full-control "
        "origin (%.0f, %.0f), %.1f ms (read %.1f, into the engine %.1f)",
        self->frame_count, w->raster.plane.width, w->raster.plane.height, w->off_x,
        w->off_y, (g_get_monotonic_time () - t0) / 1000.0, (t1 - t0) / 1000.0,
        (g_get_monotonic_time () - t1) / 1000.0);
  }
  gr_control_window_from_full (w, prior->h, wprior->h);
  /* a doubtful coarse result's second opinion is the full search: not on a window */
  wprior->second_opinion = FALSE;
  return TRUE;
}

/* The engine's result on the window back into full-control pixels (level 0: a
 * translation by the window's origin, for corner and index coordinates alike). */
static void
result_to_full (GstNmiRegister * self, GrRegisterResult * res)
{
  const GrControlWindow *w = gst_georeg_control_window_get (self->follow.window);
  double h[9];
  if (res->has_transform) {
    gr_control_window_to_full (w, res->h, h);
    memcpy (res->h, h, sizeof h);
    gr_control_window_to_full (w, res->h_index, h);
    memcpy (res->h_index, h, sizeof h);
  }
  if (res->has_prior) {
    gr_control_window_to_full (w, res->prior, h);
    memcpy (res->prior, h, sizeof h);
  }
  for (int i = 0; res->match_control && i < res->n_matches; i++) {
    res->match_control[2 * i] += w->off_x;
    res->match_control[2 * i + 1] += w->off_y;
  }
}

static GstFlowReturn
gst_nmi_register_transform_ip (GstBaseTransform * trans, GstBuffer * buf)
{
  GstNmiRegister *self = GST_NMI_REGISTER (trans);
  GstNmiRegisterSettings s;
  GrRegisterParams p;
  GrRegisterPrior prior;
  GrRegisterResult res = { 0 };
  char err[512] = "";
  GstFlowReturn ret = GST_FLOW_OK;

  if (!self->engine) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("Not negotiated."), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GST_OBJECT_LOCK (self);
  s = self->settings;
  gst_georeg_base_get_settings_unlocked (GST_GEOREG_BASE (self), &s.c);
  GST_OBJECT_UNLOCK (self);
  gst_georeg_base_settings_clear (&s.c);        /* only the numbers are used */
  const gint64 t0 = g_get_monotonic_time ();
  engine_params (&s, &p);
  if (!read_frame (self, &s, &p, buf))
    return GST_FLOW_ERROR;
  self->read_ms = (g_get_monotonic_time () - t0) / 1000.0;

  GstNmiRegisterMeta *m = gst_buffer_add_nmi_register_meta (buf);
  m->model = s.model;
  make_prior (self, &s, buf, m, &prior);
  {
    /* the frame's lens (pose meta): keypoints undistorted before the fit */
    const GstVideoInfo *vi = gst_georeg_base_info (GST_GEOREG_BASE (self));
    GrCamera lens;
    const gboolean has_lens = gst_nmi_register_frame_lens (buf,
        GST_VIDEO_INFO_WIDTH (vi), GST_VIDEO_INFO_HEIGHT (vi), &lens);
    if (!gr_register_set_lens (self->engine, has_lens ? &lens : NULL))
      GST_WARNING_OBJECT (self, "the frame's lens is unusable (focal length %g): "
          "registering without it", lens.fx);
    /* calibrated intrinsics: the camera's own plane homography (camera-fit) */
    GrCamera intrinsics;
    const gboolean calibrated = gst_nmi_register_frame_calibrated (buf,
        GST_VIDEO_INFO_WIDTH (vi), GST_VIDEO_INFO_HEIGHT (vi), &intrinsics);
    if (!gr_register_set_camera (self->engine, calibrated ? &intrinsics : NULL))
      GST_WARNING_OBJECT (self, "the frame's intrinsics are unusable (focal length "
          "%g): fitting a general homography", intrinsics.fx);
  }
  GrRegisterPrior wprior = prior;
  gboolean skip = FALSE;
  if (self->windowed && !window_for_frame (self, &s, &prior, &wprior, &skip))
    return GST_FLOW_ERROR;
  if (self->windowed && skip && !prior.has_prior) {
    /* nothing to cut a window around, for want of a prior (nmilocalize's flag, or
     * the full search that a windowed control cannot serve): no transform */
    const GstNmiLocalizeMeta *lm = gst_buffer_get_nmi_localize_meta (buf);
    if (prior.search || (lm && (lm->flags & GST_NMI_LOCALIZE_FLAG_PRIOR_NEEDED)))
      m->flags |= GST_NMI_REGISTER_FLAG_PRIOR_NEEDED;
    if (prior.search)
      m->flags |= GST_NMI_REGISTER_FLAG_COARSE_UNUSABLE;
  }
  /* the keypoint responses of a host frame, made once for every georeg element on
   * it (featurematch downstream detects from them too), when the run detects */
  GstGeoregFrame *hold = NULL;
  gdouble resp_ms = 0.0;
  if (!skip && self->on_host && (wprior.has_prior || wprior.search)) {
    const gint64 tr = g_get_monotonic_time ();
    GrKeypointParams kpp;
    gr_keypoint_params_init (&kpp);       /* the engine's block radius */
    const gfloat *resp = gst_georeg_base_keypoint_responses (GST_GEOREG_BASE (self),
        buf, s.c.nodata, kpp.block_radius, &hold);
    gr_register_set_frame_responses (self->engine, resp, kpp.block_radius);
    resp_ms = (g_get_monotonic_time () - tr) / 1000.0;
  }
  GrStatus st = skip ? GR_OK : gr_register_run (self->engine, &p, &wprior, &res, err,
      sizeof err);
  gr_register_set_frame_responses (self->engine, NULL, 0);
  gst_georeg_frame_unref (hold);
  if (st != GR_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Registration failed (%s).",
            gr_status_string (st)), ("%s", err));
    return GST_FLOW_ERROR;
  }
  if (self->windowed && !skip)
    result_to_full (self, &res);
  /* with the shared responses (made before the run) */
  self->keypoints_ms = res.keypoints_ms + resp_ms;
  const GstVideoInfo *info = gst_georeg_base_info (GST_GEOREG_BASE (self));
  gst_nmi_register_fill_meta (&self->map, &res, GST_VIDEO_INFO_WIDTH (info),
      GST_VIDEO_INFO_HEIGHT (info), m);

  if (!self->announced) {
    GST_INFO_OBJECT (self, "registering on the %s backend",
        gr_backend_name (gr_register_backend (self->engine)));
    self->announced = TRUE;
  }
  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": %u keypoints, %u matches, %u "
      "inliers, rms %.3f, flags 0x%x; %.1f ms so far (read %.1f, keypoints %.1f)",
      self->frame_count, m->keypoints, m->matches, m->inliers, m->rms, m->flags,
      (g_get_monotonic_time () - t0) / 1000.0, self->read_ms, self->keypoints_ms);
  self->overlay_ms = 0.0;
  if (p.keep_matches) {
    const gint64 t_ov = g_get_monotonic_time ();
    if (!draw_overlay (self, &s, buf, m, &res)) {
      ret = GST_FLOW_ERROR;
      goto done;
    }
    self->overlay_ms = (g_get_monotonic_time () - t_ov) / 1000.0;
  }
  if (s.c.post_messages)
    post_result (self, buf, m, (g_get_monotonic_time () - t0) / 1000.0);
  self->frame_count++;
done:
  gr_register_result_clear (&res);
  return ret;
}

/* ------------------------------------------------------------------ class */

static void
gst_nmi_register_finalize (GObject * object)
{
  GstNmiRegister *self = GST_NMI_REGISTER (object);
  release_resources (self);
  gst_nmi_register_settings_clear (&self->settings);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_nmi_register_class_init (GstNmiRegisterClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  gobject_class->set_property = gst_nmi_register_set_property;
  gobject_class->get_property = gst_nmi_register_get_property;
  gobject_class->finalize = gst_nmi_register_finalize;

  gst_nmi_register_install_properties (gobject_class);
  gst_georeg_base_class_install_properties (GST_GEOREG_BASE_CLASS (klass),
      GST_GEOREG_PROPS_CONTROL | GST_GEOREG_PROPS_NODATA | GST_GEOREG_PROPS_BINS |
      GST_GEOREG_PROPS_BACKEND | GST_GEOREG_PROPS_POST_MESSAGES |
      GST_GEOREG_PROPS_WINDOWS, GST_GEOREG_BINS_MIN_MAX);

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
  gst_type_mark_as_plugin_api (GST_TYPE_NMI_REGISTER_MODEL, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_NMI_REGISTER_COARSE_FALLBACK, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_NMI_REGISTER_OVERLAY_MODE, 0);
  GST_DEBUG_CATEGORY_INIT (gst_nmi_register_debug, "nmiregister", 0,
      "NMI keypoint registration");
}

static void
gst_nmi_register_init (GstNmiRegister * self)
{
  gst_nmi_register_settings_init (&self->settings);
}
