/* nmilocalize's searches (gstnmilocalize-private.h): the translation search over the
 * dense NMI engine, GrLocalize's heading and scale search with its fallback sweep, the
 * frame's prior (pose meta or search region), the score map and the message.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include "gstnmilocalize-private.h"
#include "georeg-pose-meta.h"
#include "fit.h"
#include "peak.h"
#include "raster.h"

#define GST_CAT_DEFAULT gst_nmi_localize_debug

/* The control at search scale (control-scale, then bins) in a new dense NMI engine
 * (self->engine, self->ctl_w/ctl_h).  FALSE after posting an error. */
gboolean
gst_nmi_localize_prepare_translation (GstNmiLocalize * self, const GrPlaneF * full,
    gint bit_depth, const GstNmiLocalizeSettings * s, const GstGeoregBaseSettings * c)
{
  GstGeoregBase *base = GST_GEOREG_BASE (self);
  GrPlaneF ctl = { 0 };
  guint8 *ctl_bins = NULL;
  char err[512] = "";
  gboolean ok = FALSE;

  if (gr_plane_downscale (full, s->control_scale, &ctl) != GR_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
    goto out;
  }
  ctl_bins = g_try_malloc ((gsize) ctl.width * ctl.height);
  if (!ctl_bins || gr_plane_to_bins (&ctl, gst_georeg_bins_resolve (c->bins,
              bit_depth), c->bin_low, c->bin_high, ctl_bins) != GR_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Could not map the control to 256 bins: check bins, bin-low and bin-high "
            "(fixed needs bin-low < bin-high; percentile needs 0 <= low < high <= 100)."),
        (NULL));
    goto out;
  }

  GrStatus est;
  self->engine = gr_nmi_dense_new (c->backend, gst_georeg_base_engine_device (base,
          c->cuda_device_id), &est, err, sizeof err);
  if (!self->engine) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Cannot use the %s backend.", gr_backend_name (c->backend)), ("%s", err));
    goto out;
  }
  GrImage8 img = { ctl_bins, (size_t) ctl.width, ctl.mask, (size_t) ctl.width,
    ctl.width, ctl.height
  };
  if (gr_nmi_dense_set_control (self->engine, &img, err, sizeof err) != GR_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, INIT,
        ("Could not prepare the control image for the search."), ("%s", err));
    goto out;
  }
  if (c->backend == GR_BACKEND_AUTO && gr_nmi_dense_backend (self->engine) ==
      GR_BACKEND_CPU && err[0])
    /* auto: the CUDA engine could not be made or could not take the control (e.g.
     * out of device memory) */
    GST_WARNING_OBJECT (self, "backend=auto: CUDA cannot be used (%s); searching on "
        "the CPU", err);

  self->ctl_w = ctl.width;
  self->ctl_h = ctl.height;
  ok = TRUE;

out:
  gr_plane_clear (&ctl);
  g_free (ctl_bins);
  return ok;
}

/* The translations to score: the whole control, or the box of translations that put
 * the frame centre within the search radius of the search centre. */
static gboolean
search_region (GstNmiLocalize * self, const GstNmiLocalizeSettings * s,
    const FramePrior * fp, GrRegion * r)
{
  const gint xmax = self->ctl_w - self->tpl_w + 1, ymax = self->ctl_h - self->tpl_h + 1;
  *r = (GrRegion) { 0, 0, xmax, ymax };
  if (fp->has_region) {
    const gdouble cs = s->control_scale, rad = fp->region_radius * cs;
    const gdouble cx = fp->region_x * cs - self->tpl_w / 2.0;
    const gdouble cy = fp->region_y * cs - self->tpl_h / 2.0;
    r->x0 = MAX (0, (gint) floor (cx - rad));
    r->y0 = MAX (0, (gint) floor (cy - rad));
    r->x1 = MIN (xmax, (gint) ceil (cx + rad) + 1);
    r->y1 = MIN (ymax, (gint) ceil (cy + rad) + 1);
  }
  return r->x1 > r->x0 && r->y1 > r->y0;
}

/* The frame's prior: its pose meta (use-pose, a georeferenced control and a search
 * other than translation), else the search region as a position prior (its radius
 * taken as 3 sigma). */
void
gst_nmi_localize_frame_prior (GstNmiLocalize * self, GstBuffer * buf,
    const GstNmiLocalizeSettings * s, FramePrior * fp)
{
  const GstVideoInfo *info = gst_georeg_base_info (GST_GEOREG_BASE (self));
  memset (fp, 0, sizeof *fp);
  fp->kind = "none";
  const gboolean region_set = s->search_radius > 0.0 &&
      (s->search_units != GST_NMI_LOCALIZE_UNITS_PIXELS ||
      (s->search_x >= 0.0 && s->search_y >= 0.0));
  if (region_set) {
    fp->has_region = gst_nmi_localize_region_to_pixels (self->georef, s->search_units,
        s->search_x, s->search_y, s->search_radius, &fp->region_x, &fp->region_y,
        &fp->region_radius);
    if (!fp->has_region)
      GST_WARNING_OBJECT (self, "the search region (%g, %g) cannot be brought into the "
          "control's pixels: searching without it", s->search_x, s->search_y);
  }
  if (s->search != GST_NMI_LOCALIZE_SEARCH_TRANSLATION && s->use_pose) {
    gchar why[256] = "";
    gdouble sigma_m = 0.0;
    if (gst_nmi_localize_pose_prior (self->georef, buf, GST_VIDEO_INFO_WIDTH (info),
            GST_VIDEO_INFO_HEIGHT (info), &fp->prior, &sigma_m, why, sizeof why)) {
      fp->has_prior = TRUE;
      fp->kind = "pose";
      GST_LOG_OBJECT (self, "pose prior: centre (%.1f, %.1f) +- %.1f px (%.1f m), "
          "heading %s%.1f +- %.1f, scale %s%.4f", fp->prior.x, fp->prior.y,
          fp->prior.position_sigma, sigma_m, fp->prior.has_heading ? "" : "(unknown) ",
          fp->prior.heading_deg, fp->prior.heading_sigma_deg,
          fp->prior.has_scale ? "" : "(unknown) ", fp->prior.scale);
      return;
    }
    /* a meta with neither position nor yaw (a calibration only) is no prior: no
     * warning for it */
    const GstGeoregPoseMeta *pm = gst_buffer_get_georeg_pose_meta (buf);
    if (pm && (pm->latitude.have || pm->longitude.have || pm->camera_yaw.have) &&
        !self->warned_pose) {
      self->warned_pose = TRUE;
      GST_ELEMENT_WARNING (self, STREAM, FAILED, ("The frames' pose priors cannot be "
              "used: %s.", why), ("searching without them (reported once)"));
    }
  }
  if (fp->has_region) {
    fp->has_prior = TRUE;
    fp->kind = "search-region";
    fp->prior.has_position = TRUE;
    fp->prior.x = fp->region_x;
    fp->prior.y = fp->region_y;
    fp->prior.position_sigma = fp->region_radius / 3.0;
  }
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

void
gst_nmi_localize_post_result (GstNmiLocalize * self, GstBuffer * buf,
    const GstNmiLocalizeMeta * m, guint64 positions, gdouble elapsed_ms,
    const gchar * search, const gchar * prior)
{
  GstStructure *st = gst_structure_new ("nmilocalize",
      "frame", G_TYPE_UINT64, self->frame_count,
      "timestamp", G_TYPE_UINT64, GST_BUFFER_PTS (buf),
      "backend", G_TYPE_STRING, gr_backend_name (self->engine ?
          gr_nmi_dense_backend (self->engine) : gr_localize_backend (self->localizer)),
      "input-memory", G_TYPE_STRING,
      gst_georeg_input_name (gst_georeg_base_input (GST_GEOREG_BASE (self))),
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
      "search-ms", G_TYPE_DOUBLE, elapsed_ms,
      "levels-built", G_TYPE_INT, self->levels_built,
      "levels-ms", G_TYPE_DOUBLE, self->levels_ms,
      "coarse-ms", G_TYPE_DOUBLE, self->coarse_ms,
      "fine-ms", G_TYPE_DOUBLE, self->fine_ms,
      "downscale-ms", G_TYPE_DOUBLE, self->downscale_ms,
      "feature-places", G_TYPE_INT, self->feature_places,
      "feature-ms", G_TYPE_DOUBLE, self->feature_ms,
      "search", G_TYPE_STRING, search, "prior", G_TYPE_STRING, prior, NULL);
  if (m->has_prior_transform)
    gst_structure_set (st, "heading", G_TYPE_DOUBLE, m->heading_deg,
        "scale", G_TYPE_DOUBLE, m->scale, "overlap", G_TYPE_DOUBLE, m->overlap, NULL);
  if (m->has_map)
    gst_structure_set (st, "map-x", G_TYPE_DOUBLE, m->map_x,
        "map-y", G_TYPE_DOUBLE, m->map_y, NULL);
  gst_georeg_base_post_result (GST_GEOREG_BASE (self), st);
}

/* Results of GrLocalize that must not stand without a second look. */
#define DOUBTFUL_FULL (GR_LOCALIZE_NO_OVERLAP | GR_LOCALIZE_AMBIGUOUS | \
    GR_LOCALIZE_AT_BORDER | GR_LOCALIZE_LOW_OVERLAP | GR_LOCALIZE_IMPLAUSIBLE)

static gdouble
heading_difference (gdouble a, gdouble b)
{
  const gdouble d = fmod (fabs (a - b), 360.0);
  return d > 180.0 ? 360.0 - d : d;
}

/* The frame's downscales for GrLocalize (gr_localize_run_downscaled): the search
 * reads a frame only through a few small downscales (6 or 7 at a pose prior's
 * scales), so a frame for a CUDA localizer goes up once as 8-bit rows (shared with
 * nmiregister downstream: gstgeoregcuda.h) and each downscale is made there and comes
 * back small, as the translation search does, instead of a float copy of the whole
 * frame on the host and 4K-wide downscales on the CPU (issue 13: they were most of
 * the pose path's ~90 ms a 4K frame).  The device downscale equals gr_plane_downscale
 * bit for bit (frame_cuda.h; test_frame_downscale_gpu), so results do not move.
 * Elsewhere (a CPU localizer, or no device form), the host plane, read once. */
typedef struct {
  GstNmiLocalize *self;
  GstBuffer *buf;
  gint nodata;
  gint device;                  /* the localizer's device, -1: host downscales */
  gboolean host_read;           /* self->full holds the frame */
} FrameSource;

static GrStatus
frame_downscale (void *user, double scale, GrPlaneF * out, char *errbuf, size_t errlen)
{
  FrameSource *fs = user;
  GstGeoregBase *base = GST_GEOREG_BASE (fs->self);
  if (fs->device >= 0 && !fs->host_read) {
    /* a CUDA frame of our context is read in place; any other goes up once */
    if (!gst_georeg_base_frame_to_plane (base, fs->buf, fs->nodata, scale, TRUE, out,
            errbuf, errlen))
      return GR_ERR_CUDA;
    if (gst_georeg_base_input (base) == GST_GEOREG_INPUT_CUDA_DEVICE)
      return GR_OK;
    gboolean done = FALSE;
    if (!gst_georeg_base_frame_to_device (base, fs->buf, fs->nodata, fs->device, scale,
            TRUE, out, &done, errbuf, errlen))
      return GR_ERR_CUDA;
    if (done)
      return GR_OK;
  }
  if (!fs->host_read) {
    if (!gst_georeg_base_read_plane (base, fs->buf, fs->nodata, &fs->self->full)) {
      g_strlcpy (errbuf, "the frame could not be read", errlen);
      return GR_ERR_INVALID;
    }
    fs->host_read = TRUE;
  }
  return gr_plane_downscale (&fs->self->full, scale, out);
}

/* A GrLocalize run's stage times into the frame's (zeroed as each frame starts). */
static void
add_run_times (GstNmiLocalize * self, const GrLocalizeResult * r)
{
  self->levels_built += r->levels_built;
  self->levels_ms += r->levels_ms;
  self->coarse_ms += r->coarse_ms;
  self->fine_ms += r->fine_ms;
  self->downscale_ms += r->downscale_ms;
  self->feature_places += r->feature_places;
  self->feature_ms += r->feature_ms;
}

/* How GrLocalize reads the frame: through its downscales (*by_downscales, *src) when
 * its valid pixels are known without reading it (no nodata, no alpha, no frame mask:
 * every pixel), else from self->full, read here with the frame mask applied.  FALSE
 * after posting an error. */
static gboolean
frame_source_open (GstNmiLocalize * self, GstBuffer * buf,
    const GstGeoregBaseSettings * c, FrameSource * src, gboolean * by_downscales)
{
  GstGeoregBase *base = GST_GEOREG_BASE (self);
  *by_downscales = c->nodata < 0 && !self->frame_mask.data &&
      !GST_VIDEO_INFO_HAS_ALPHA (gst_georeg_base_info (base));
  *src = (FrameSource) { self, buf, c->nodata, -1, FALSE };
  if (*by_downscales) {
    if (gr_localize_backend (self->localizer) == GR_BACKEND_CUDA)
      src->device = MAX (gst_georeg_base_engine_device (base, c->cuda_device_id), 0);
    return TRUE;
  }
  if (!gst_georeg_base_read_plane (base, buf, c->nodata, &self->full))
    return FALSE;
  if (self->frame_mask.data && !gst_georeg_plane_and_mask (&self->full,
          &self->frame_mask)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
    return FALSE;
  }
  return TRUE;
}

/* GrLocalize over the full-resolution frame and control from prior (NULL: none).
 * With `fallback`, a doubtful result from a prior with a heading or a scale is
 * searched again over every heading and scale (the position kept, its window doubled)
 * and the better result taken; *rejected tells that the prior's heading or scale lost,
 * and the result is flagged IMPLAUSIBLE when it lies beyond 3 sigma of them.
 * Fills the meta: the similarity as frame_to_control, heading, scale, overlap, and
 * the translation-era fields (offset, control_x/y = the frame's top-left corner on the
 * control, score, peak ratio) consistent with it. */
GstFlowReturn
gst_nmi_localize_full (GstNmiLocalize * self, GstBuffer * buf,
    const GstNmiLocalizeSettings * s, const GstGeoregBaseSettings * c,
    const GrLocalizePrior * prior, gboolean fallback, gboolean * rejected, gdouble * elapsed_ms, guint64 * searches)
{
  GstGeoregBase *base = GST_GEOREG_BASE (self);
  const GstVideoInfo *info = gst_georeg_base_info (base);
  const gint fw = GST_VIDEO_INFO_WIDTH (info), fh = GST_VIDEO_INFO_HEIGHT (info);
  char err[512] = "";

  *rejected = FALSE;
  FrameSource src;
  gboolean by_downscales;
  if (!frame_source_open (self, buf, c, &src, &by_downscales))
    return GST_FLOW_ERROR;
  const gsize valid = by_downscales ? (gsize) fw * fh : gr_plane_count_valid (&self->full);

  GrLocalizeParams lp;
  gr_localize_params_init (&lp);
  lp.scale_min = MIN (s->scale_min, s->scale_max);
  lp.scale_max = MAX (s->scale_min, s->scale_max);
  lp.min_overlap = s->min_overlap;
  lp.min_peak_ratio = s->min_peak_ratio;
  GrLocalizeResult res;
  gint64 t0 = g_get_monotonic_time ();
  GrStatus st = by_downscales ? gr_localize_run_downscaled (self->localizer, fw, fh,
      valid, frame_downscale, &src, prior, &lp, &res, err, sizeof err) :
      gr_localize_run (self->localizer, &self->full, prior, &lp, &res, err, sizeof err);
  *searches = st == GR_OK ? (guint64) res.searches : 0;
  if (st == GR_OK)
    add_run_times (self, &res);
  if (st == GR_OK && fallback && prior && (prior->has_heading || prior->has_scale) &&
      (res.flags & DOUBTFUL_FULL)) {
    /* the prior may be wrong: every heading and scale, around its position */
    GrLocalizePrior wide = { 0 };
    if (prior->has_position) {
      wide.has_position = TRUE;
      wide.x = prior->x;
      wide.y = prior->y;
      wide.position_sigma = 2.0 * prior->position_sigma;
    }
    GrLocalizeResult again;
    st = by_downscales ? gr_localize_run_downscaled (self->localizer, fw, fh, valid,
        frame_downscale, &src, wide.has_position ? &wide : NULL, &lp, &again, err,
        sizeof err) : gr_localize_run (self->localizer, &self->full,
        wide.has_position ? &wide : NULL, &lp, &again, err, sizeof err);
    if (st == GR_OK) {
      *searches += (guint64) again.searches;
      add_run_times (self, &again);
      const gboolean again_doubtful = (again.flags & DOUBTFUL_FULL) != 0;
      if (!(again.flags & GR_LOCALIZE_NO_OVERLAP) && (!again_doubtful ||
              (res.flags & GR_LOCALIZE_NO_OVERLAP) || again.score > res.score)) {
        GST_DEBUG_OBJECT (self, "the prior's window gave flags 0x%x score %.4f; the "
            "sweep found heading %.1f scale %.4f score %.4f", res.flags, res.score,
            again.heading_deg, again.scale, again.score);
        res = again;
        *rejected = TRUE;
        /* the image disagrees with the prior: say so where it is beyond 3 sigma */
        if ((prior->has_heading && heading_difference (res.heading_deg,
                    prior->heading_deg) > 3.0 * prior->heading_sigma_deg) ||
            (prior->has_scale && prior->scale_sigma > 0 &&
                fabs (log (res.scale / prior->scale)) > log (1.0 + 3.0 *
                    prior->scale_sigma)))
          res.flags |= GR_LOCALIZE_IMPLAUSIBLE;
        res.flags |= GR_LOCALIZE_PRIOR_USED;
      }
    }
  }
  *elapsed_ms = (g_get_monotonic_time () - t0) / 1000.0;
  if (st == GR_OK)
    gst_nmi_localize_window_result (self, &res);        /* window -> full control */
  if (st != GR_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("The heading and scale search failed "
            "(%s).", gr_status_string (st)), ("%s", err));
    return GST_FLOW_ERROR;
  }

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
  m->valid_pixels = (guint64) (res.overlap * valid);
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

/* Whether the translation search's result m registers: the frame taken north-up at
 * frame-scale / control-scale from m's place, refined as nmiregister would
 * (gr_localize_refine: keypoint templates, sparse NMI, a robust homography).  Without
 * a prior, a frame at another heading or scale can still give the translation search a
 * clean peak (issue 13, frames without a prior through the elements on CUDA: 9 of 83
 * placed 500-2000 px wrong with no flag), and its NMI alone cannot tell; its
 * registration can (26 inliers of 371 matches against 90% and more).  *holds: enough
 * inliers, a third of the matches or so, and a plausible fit, or too few matches to
 * judge; *verified: judged and held.  FALSE with an error posted when the check
 * could not run. */
#define TRANSLATION_MIN_INLIER_RATIO 0.3

gboolean
gst_nmi_localize_translation_holds (GstNmiLocalize * self, GstBuffer * buf,
    const GstNmiLocalizeSettings * s, const GstGeoregBaseSettings * c,
    const GstNmiLocalizeMeta * m, gboolean * holds, gboolean * verified)
{
  GstGeoregBase *base = GST_GEOREG_BASE (self);
  const GstVideoInfo *info = gst_georeg_base_info (base);
  const gint fw = GST_VIDEO_INFO_WIDTH (info), fh = GST_VIDEO_INFO_HEIGHT (info);
  char err[512] = "";
  const gdouble k = s->frame_scale / s->control_scale;
  const double h[9] = { k, 0, m->control_x, 0, k, m->control_y, 0, 0, 1 };
  FrameSource src;
  gboolean by_downscales;
  if (!frame_source_open (self, buf, c, &src, &by_downscales))
    return FALSE;
  GrRefineResult rr;
  const GrStatus st = by_downscales ? gr_localize_refine_downscaled (self->localizer,
      fw, fh, frame_downscale, &src, h, NULL, &rr, err, sizeof err) :
      gr_localize_refine (self->localizer, &self->full, h, NULL, &rr, err, sizeof err);
  if (st != GR_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Checking the translation result "
            "failed (%s).", gr_status_string (st)), ("%s", err));
    return FALSE;
  }
  const unsigned implausible = GR_PLAUSIBLE_NOT_FINITE | GR_PLAUSIBLE_NEAR_SINGULAR |
      GR_PLAUSIBLE_NON_CONVEX | GR_PLAUSIBLE_AREA | GR_PLAUSIBLE_ASPECT |
      GR_PLAUSIBLE_HEADING;
  /* the share of the matches as nmiregister's min-inlier-ratio (0.3) judges it: a
   * wrong place still fits a few dozen of several hundred matches by chance.  Too few
   * matches to judge (a small or mostly masked frame: 5-8 templates) refute nothing:
   * the result stands, without VERIFIED */
  GrRefineParams rp;
  gr_refine_params_init (&rp);
  const gboolean conclusive = rr.matches >= 2 * rp.min_inliers;
  *holds = !(rr.flags & (GR_REFINE_LOW_INLIERS | implausible)) &&
      rr.inliers >= TRANSLATION_MIN_INLIER_RATIO * rr.matches;
  *verified = conclusive && *holds;
  if (!conclusive)
    *holds = TRUE;
  GST_DEBUG_OBJECT (self, "translation result at (%.1f, %.1f): %d of %d matches "
      "registered, flags 0x%x: %s", m->control_x, m->control_y, rr.inliers, rr.matches,
      rr.flags, *verified ? "verified" : *holds ? "stands (too few matches to judge)" :
      "swept");
  return TRUE;
}

/* The translation search at frame-scale / control-scale (north-up frames of a known
 * ground resolution), within the search region when one is set. */
GstFlowReturn
gst_nmi_localize_translation (GstNmiLocalize * self, GstBuffer * buf,
    const GstNmiLocalizeSettings * s, const GstGeoregBaseSettings * c,
    const FramePrior * fp, gdouble * elapsed_ms, guint64 * positions)
{
  GstGeoregBase *base = GST_GEOREG_BASE (self);
  const GstVideoInfo *info = gst_georeg_base_info (base);
  char err[512];

  /* a CUDA frame of our context: luma, masks and the downscale on the device, only
   * the small search-scale plane comes back (bit-identical to the host path) */
  if (!gst_georeg_base_frame_to_plane (base, buf, c->nodata, s->frame_scale, TRUE,
          &self->small, err, sizeof err)) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not read the CUDA frame."),
        ("%s", err));
    return GST_FLOW_ERROR;
  }
  gboolean mem_ok = TRUE, uploaded = FALSE;
  if (gst_georeg_base_input (base) != GST_GEOREG_INPUT_CUDA_DEVICE &&
      !self->frame_mask.data &&
      gr_nmi_dense_backend (self->engine) == GR_BACKEND_CUDA) {
    /* any other frame for a CUDA engine: its 8-bit plane goes up, the same conversion
     * and downscale run on the device, the search-scale plane comes back (frames with
     * a mask-location take the host path) */
    const gint dev = MAX (gst_georeg_base_engine_device (base, c->cuda_device_id), 0);
    if (!gst_georeg_base_frame_to_device (base, buf, c->nodata, dev, s->frame_scale,
            TRUE, &self->small, &uploaded, err, sizeof err)) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not read the frame on the "
              "device."), ("%s", err));
      return GST_FLOW_ERROR;
    }
  }
  if (gst_georeg_base_input (base) != GST_GEOREG_INPUT_CUDA_DEVICE && !uploaded) {
    /* through the base: the plane is shared with the elements downstream (one
     * conversion per frame), or taken from upstream's */
    if (!gst_georeg_base_read_plane (base, buf, c->nodata, &self->full))
      return GST_FLOW_ERROR;
    if (self->frame_mask.data)
      mem_ok = gst_georeg_plane_and_mask (&self->full, &self->frame_mask);
    if (mem_ok)
      mem_ok = gr_plane_downscale (&self->full, s->frame_scale, &self->small) == GR_OK;
  }
  if (!mem_ok || self->small.width != self->tpl_w || self->small.height != self->tpl_h) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
    return GST_FLOW_ERROR;
  }
  if (gr_plane_to_bins (&self->small, gst_georeg_bins_resolve (c->bins,
              gst_georeg_video_format_depth (GST_VIDEO_INFO_FORMAT (info))),
          c->bin_low, c->bin_high, self->bins) != GR_OK) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map the frame to 256 bins: "
            "check bins, bin-low and bin-high."), (NULL));
    return GST_FLOW_ERROR;
  }

  GstNmiLocalizeMeta *m = gst_buffer_add_nmi_localize_meta (buf);
  m->frame_scale = s->frame_scale;
  m->control_scale = s->control_scale;
  const gsize tpl_valid = gr_plane_count_valid (&self->small);
  GrRegion r;

  if (tpl_valid == 0) {
    m->flags |= GST_NMI_LOCALIZE_FLAG_NO_VALID_PIXELS;
  } else if (!search_region (self, s, fp, &r)) {
    m->flags |= GST_NMI_LOCALIZE_FLAG_NO_OVERLAP;
    GST_WARNING_OBJECT (self, "the search region lies outside the control image");
  } else {
    const gint rw = r.x1 - r.x0, rh = r.y1 - r.y0;
    const gint min_valid = MAX (1, (gint) ceil (s->min_overlap * tpl_valid));
    GrImage8 tpl = { self->bins, (size_t) self->tpl_w, self->small.mask,
      (size_t) self->tpl_w, self->tpl_w, self->tpl_h
    };
    gint64 t0 = g_get_monotonic_time ();
    GrStatus st = gr_nmi_dense_run (self->engine, &tpl, r, min_valid, self->scores,
        self->valid, err, sizeof err);
    *elapsed_ms = (g_get_monotonic_time () - t0) / 1000.0;
    if (st != GR_OK) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("The NMI search failed (%s).",
              gr_status_string (st)), ("%s", err));
      return GST_FLOW_ERROR;
    }
    *positions = (guint64) rw * rh;

    GrPeak pk;
    const gint excl = s->peak_exclusion > 0 ? s->peak_exclusion :
        MAX (2, MIN (self->tpl_w, self->tpl_h) / 8);
    gr_find_peak (self->scores, rw, rh, excl, 1.0, &pk);
    if (pk.flags & GR_PEAK_NO_SCORE) {
      m->flags |= GST_NMI_LOCALIZE_FLAG_NO_OVERLAP;
    } else {
      if (pk.flags & GR_PEAK_AT_BORDER)
        m->flags |= GST_NMI_LOCALIZE_FLAG_AT_BORDER;
      if (pk.flags & GR_PEAK_NO_SECOND)
        m->flags |= GST_NMI_LOCALIZE_FLAG_NO_SECOND_PEAK;
      else if (pk.ratio < s->min_peak_ratio)
        m->flags |= GST_NMI_LOCALIZE_FLAG_AMBIGUOUS;
      m->offset_x = r.x0 + pk.x;
      m->offset_y = r.y0 + pk.y;
      m->score = pk.score;
      m->second_score = pk.second;
      m->peak_ratio = pk.ratio;
      m->valid_pixels = (guint64) self->valid[(gsize) pk.iy * rw + pk.ix];
      m->control_x = m->offset_x / s->control_scale;
      m->control_y = m->offset_y / s->control_scale;
      const gdouble k = s->frame_scale / s->control_scale;
      m->center_x = m->control_x + GST_VIDEO_INFO_WIDTH (info) * k / 2.0;
      m->center_y = m->control_y + GST_VIDEO_INFO_HEIGHT (info) * k / 2.0;
      if (self->has_geo) {
        m->has_map = TRUE;
        gr_geo_apply (self->geo, m->center_x, m->center_y, &m->map_x, &m->map_y);
      }
    }
    if (s->score_map_location && *s->score_map_location)
      write_score_map (self, s->score_map_location, self->scores, rw, rh);
  }

  return GST_FLOW_OK;
}

