/* nmilocalize over a control read in windows (issue 18, docs/controls.md "Windows"):
 * a control over control-budget (or control-mode=windowed) is never held whole.  Each
 * frame's prior (pose meta or search region) gives the area the search can reach: the
 * frame's footprint at the prior's scale around the prior's position, grown by six
 * sigmas (the prior's three, doubled by the fallback sweep).  The window over that area
 * (gstgeoregcontrol.h: shared with the elements naming the same control, sliding with
 * hysteresis, the next one prefetched) goes into the heading and scale search
 * (GrLocalize) whenever it changes; the prior is brought into the window's pixels and
 * the result back into the full control's, so the meta, the message and nmiregister
 * see the same frame as on a whole control.
 *
 * The level: with a scale in the prior, the coarsest overview on which GrLocalize's
 * finest template (fine_size px on the frame's long side) still has two window pixels
 * per template pixel; without one, full resolution.
 *
 * Grey levels: the first window's 1st..99th percentile, kept for the whole stream
 * (gr_localize_set_control_range), as nmiregister keeps its first window's range: with
 * each window's own percentiles a place changed its levels with the window around it.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include "gstnmilocalize-private.h"

#define GST_CAT_DEFAULT gst_nmi_localize_debug

/* frames of motion ahead whose window is prefetched */
#define PREFETCH_AHEAD 4

gboolean
gst_nmi_localize_window_start (GstNmiLocalize * self, const GstNmiLocalizeSettings * s,
    const GstGeoregBaseSettings * c)
{
  GstGeoregBase *base = GST_GEOREG_BASE (self);
  GrControlSource *src =
      gst_georeg_control_source (gst_georeg_base_control_windowed (base));
  char err[512] = "";
  GrStatus est;

  if (s->search == GST_NMI_LOCALIZE_SEARCH_TRANSLATION) {
    /* the translation search scores every place of the control at search scale */
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("search=translation needs the whole "
            "control, and \"%s\" is read in windows (control-mode, control-budget).",
            c->control_location), ("use search=auto or full with a prior"));
    return FALSE;
  }
  self->localizer = gr_localize_new (c->backend, gst_georeg_base_engine_device (base,
          c->cuda_device_id), &est, err, sizeof err);
  if (!self->localizer) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Cannot use the %s backend.", gr_backend_name (c->backend)), ("%s", err));
    return FALSE;
  }
  GrControlInfo ci;
  gr_control_source_info (src, &ci);
  self->windowed = TRUE;
  self->window_range_set = FALSE;
  self->ctl_full_w = ci.width;
  self->ctl_full_h = ci.height;
  self->ctl_w = (gint) MIN (G_MAXINT / 2, ceil (ci.width * s->control_scale));
  self->ctl_h = (gint) MIN (G_MAXINT / 2, ceil (ci.height * s->control_scale));
  self->has_geo = ci.has_geo;
  memcpy (self->geo, ci.geo, sizeof self->geo);
  memset (&self->follow, 0, sizeof self->follow);
  GST_INFO_OBJECT (self, "control %s: %dx%d (%s, %d levels), read in windows "
      "around each frame's prior; backend %s", c->control_location, ci.width,
      ci.height, ci.driver, ci.levels, gr_backend_name (gr_localize_backend
          (self->localizer)));
  return TRUE;
}

gboolean
gst_nmi_localize_nodata_copy (const GrPlaneF * in, gint nodata, GrPlaneF * out)
{
  if (!gr_plane_alloc (out, in->width, in->height, in->mask != NULL))
    return FALSE;
  for (int y = 0; y < in->height; y++)
    memcpy (out->data + (gsize) y * out->stride, in->data + (gsize) y * in->stride,
        sizeof (float) * in->width);
  if (in->mask)
    memcpy (out->mask, in->mask, (gsize) in->width * in->height);
  return gr_plane_mask_value (out, nodata);
}

void
gst_nmi_localize_window_release (GstNmiLocalize * self)
{
  gst_georeg_control_follow_clear (&self->follow);
  self->windowed = FALSE;
  self->window_range_set = FALSE;
}

/* The control's level for this prior (module comment). */
static gint
window_level (GrControlSource * src, const GrLocalizePrior * p, gint frame_long)
{
  if (!p->has_scale || !(p->scale > 0))
    return 0;
  GrLocalizeParams lp;
  gr_localize_params_init (&lp);
  const gdouble s_lo = p->scale / (1.0 + 2.0 * MAX (p->scale_sigma, 0.0));
  /* level pixels per full-control pixel the finest template needs, twice over */
  const gdouble need = 2.0 * lp.fine_size / (s_lo * frame_long);
  return need >= 1.0 ? 0 : gr_control_source_level_for_scale (src, need);
}

gboolean
gst_nmi_localize_window_prepare (GstNmiLocalize * self, const GstNmiLocalizeSettings * s,
    const FramePrior * fp, GrLocalizePrior * wprior, gboolean * no_prior)
{
  GstGeoregBase *base = GST_GEOREG_BASE (self);
  GstGeoregControl *control = gst_georeg_base_control_windowed (base);
  GrControlSource *src = gst_georeg_control_source (control);
  const GstVideoInfo *info = gst_georeg_base_info (base);
  const gint fw = GST_VIDEO_INFO_WIDTH (info), fh = GST_VIDEO_INFO_HEIGHT (info);
  char err[512] = "";

  *no_prior = FALSE;
  if (!fp->has_prior || !fp->prior.has_position) {
    /* issue 18: a flag on this frame, not an error that ends the stream (a gap in the
     * telemetry must not stop a flight); said once on the bus as a warning */
    *no_prior = TRUE;
    if (!self->warned_no_prior) {
      self->warned_no_prior = TRUE;
      GST_ELEMENT_WARNING (self, STREAM, FAILED, ("Frame %" G_GUINT64_FORMAT " has no "
              "prior position, and the control (%d x %d) is read in windows around "
              "each frame's prior (control-mode, control-budget): a pose prior is "
              "needed.  Such frames are flagged prior-needed and not searched.",
              self->frame_count, self->ctl_full_w, self->ctl_full_h),
          ("give the frames a pose meta (georegtelemetry, use-pose=true, a "
              "georeferenced control with a CRS) or set search-x, search-y and "
              "search-radius; or prepare a smaller control (docs/controls.md)"));
    }
    return TRUE;
  }
  const GrLocalizePrior *p = &fp->prior;
  const gdouble s_hi = p->has_scale && p->scale > 0 ?
      p->scale * (1.0 + 2.0 * MAX (p->scale_sigma, 0.0)) : MAX (s->scale_min,
      s->scale_max);
  const gdouble reach = 0.5 * hypot (fw, fh) * s_hi + 6.0 * p->position_sigma;
  const gdouble box[4] = { p->x - reach, p->y - reach, p->x + reach, p->y + reach };
  const gint level = window_level (src, p, MAX (fw, fh));
  GstGeoregBaseSettings c;
  gst_georeg_base_get_settings (base, &c);
  const gdouble margin = c.control_window_margin;
  gst_georeg_base_settings_clear (&c);

  gboolean changed = FALSE;
  GrStatus st;
  const gint64 t0 = g_get_monotonic_time ();
  if (!gst_georeg_control_follow (control, &self->follow, box, level, margin,
          PREFETCH_AHEAD, &changed, &st, err, sizeof err)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("Could not read the control around "
            "frame %" G_GUINT64_FORMAT "'s prior (%.0f, %.0f) +- %.0f px.",
            self->frame_count, p->x, p->y, reach), ("%s", err));
    return FALSE;
  }
  const GrControlWindow *w = gst_georeg_control_window_get (self->follow.window);
  const gint64 t1 = g_get_monotonic_time ();
  if (changed) {
    /* the search keeps its own pyramid of the window (a copy: control-nodata is
     * applied to it, never to the shared window) */
    const GrPlaneF *plane = &w->raster.plane;
    GrPlaneF masked = { 0 };
    gboolean ok = TRUE;
    if (s->control_nodata >= 0) {
      ok = gst_nmi_localize_nodata_copy (plane, s->control_nodata, &masked);
      plane = &masked;
    }
    /* the window itself is borrowed (self->follow holds it until the next one is
     * set): no copy of its pixels at every slide */
    ok = ok && (plane == &masked ? gr_localize_set_control (self->localizer, plane, err,
            sizeof err) : gr_localize_set_control_ref (self->localizer, plane, err,
            sizeof err)) == GR_OK;
    if (ok && !self->window_range_set) {
      /* once, on the first window: a place keeps its grey levels as windows slide
       * (an all-invalid window gives 0..0: the percentiles stay, and the next window
       * tries again) */
      gdouble lo = 0.0, hi = 0.0;
      ok = gr_plane_value_range (plane, GR_BINS_PERCENTILE, 8, 1.0, 99.0, &lo,
          &hi) == GR_OK;
      if (ok && lo < hi) {
        ok = gr_localize_set_control_range (self->localizer, lo, hi) == GR_OK;
        self->window_range_set = ok;
        GST_DEBUG_OBJECT (self, "control grey levels from %g..%g (the first window's "
            "1st..99th percentile) for the whole stream", lo, hi);
      }
      if (!ok)
        g_strlcpy (err, "the window's value range", sizeof err);
    }
    gr_plane_clear (&masked);
    if (!ok) {
      GST_ELEMENT_ERROR (self, LIBRARY, INIT, ("Could not prepare the control window "
              "(%d x %d at level %d) for the heading and scale search.",
              plane->width, plane->height, level), ("%s", err));
      return FALSE;
    }
    GST_DEBUG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": window %dx%d at level %d, "
        "full-control origin (%.0f, %.0f), %.1f ms (read %.1f, into the search %.1f)",
        self->frame_count, w->raster.plane.width, w->raster.plane.height, level,
        w->off_x, w->off_y, (g_get_monotonic_time () - t0) / 1000.0, (t1 - t0) / 1000.0,
        (g_get_monotonic_time () - t1) / 1000.0);
  }
  /* the prior in window pixels */
  *wprior = *p;
  wprior->x = (p->x - w->off_x) / w->scale_x;
  wprior->y = (p->y - w->off_y) / w->scale_y;
  wprior->position_sigma = p->position_sigma / w->scale_x;
  if (p->has_scale)
    wprior->scale = p->scale / w->scale_x;
  return TRUE;
}

void
gst_nmi_localize_window_result (GstNmiLocalize * self, GrLocalizeResult * res)
{
  const GrControlWindow *w = gst_georeg_control_window_get (self->follow.window);
  if (!self->windowed || !w || !isfinite (res->h[0]))
    return;
  double h[9];
  gr_control_window_to_full (w, res->h, h);
  memcpy (res->h, h, sizeof h);
  res->x = res->x * w->scale_x + w->off_x;
  res->y = res->y * w->scale_y + w->off_y;
  res->scale *= w->scale_x;
}
