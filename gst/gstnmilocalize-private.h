/* nmilocalize's insides, shared by gstnmilocalize.c (properties, lifecycle, the
 * per-frame dispatch) and gstnmilocalize-search.c (the searches and their priors).
 * Not installed.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_NMI_LOCALIZE_PRIVATE_H__
#define __GST_NMI_LOCALIZE_PRIVATE_H__

#include "gstnmilocalize.h"
#include "gstnmilocalize-prior.h"
#include "georeg-meta.h"
#include "localize.h"
#include "nmi_dense.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_nmi_localize_debug);

/* What the coarse search looks for. */
typedef enum {
  GST_NMI_LOCALIZE_SEARCH_TRANSLATION,  /* north-up, known scale: translations only */
  GST_NMI_LOCALIZE_SEARCH_FULL,         /* heading, scale and place (GrLocalize) */
  GST_NMI_LOCALIZE_SEARCH_AUTO,         /* the prior's window, else translation and a
                                           sweep when that is doubtful */
} GstNmiLocalizeSearch;

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
  gboolean use_pose;
  GstNmiLocalizeUnits search_units;
  gchar *crs;
  gboolean scales_given;        /* frame-scale or control-scale was set */
} GstNmiLocalizeSettings;

struct _GstNmiLocalize {
  GstGeoregBase parent;

  GstNmiLocalizeSettings settings;

  /* prepared in start(): the engine and the control at search scale inside it (the
   * shared full-resolution control is the base's, held until stop so that elements
   * naming the same file share one copy) */
  GrNmiDense *engine;
  GrLocalize *localizer;        /* search=full/auto: heading/scale search, full control */
  GstNmiLocalizeGeo *georef;    /* the control's CRS + geotransform, NULL if none */
  gboolean translation_ok;      /* the translation search runs (not search=full) */
  gboolean warned_pose;         /* an unusable pose meta was reported */
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
  gint levels_built;            /* this frame's search: control levels made, and their
                                 * ms (a new search scale or window; in search-ms) */
  gdouble levels_ms;
  gdouble coarse_ms, fine_ms, downscale_ms;     /* its stages (GrLocalizeResult) */
  gint feature_places;          /* places descriptors proposed (doubtful sweeps), and */
  gdouble feature_ms;           /* their time (inside fine_ms) */

  /* a control read in windows (gstnmilocalize-window.c): no translation engine, the
   * localizer holds the current window */
  gboolean windowed;
  GstGeoregControlFollow follow;
  gboolean window_range_set;    /* the localizer's control range was fixed on the first
                                 * window (gstnmilocalize-window.c) */
  gboolean warned_no_prior;     /* the first frame without a prior was reported */
};

/* What a frame's search starts from (per frame: the pose meta is per buffer and the
 * search region may change in PLAYING). */
typedef struct {
  gboolean has_region;          /* search-x/y/radius, converted to control pixels */
  gdouble region_x, region_y, region_radius;
  gboolean has_prior;
  GrLocalizePrior prior;
  const gchar *kind;            /* "pose", "search-region" or "none" */
} FramePrior;

/* Results of the coarse search that must not stand without a second look. */
#define DOUBTFUL_TRANSLATION (GST_NMI_LOCALIZE_FLAG_NO_OVERLAP | \
    GST_NMI_LOCALIZE_FLAG_AMBIGUOUS | GST_NMI_LOCALIZE_FLAG_AT_BORDER)
/* The control at search scale (control-scale, then bins) in a new dense NMI engine
 * (self->engine, self->ctl_w/ctl_h).  FALSE after posting an error. */
gboolean gst_nmi_localize_prepare_translation (GstNmiLocalize * self,
    const GrPlaneF * full, gint bit_depth, const GstNmiLocalizeSettings * s,
    const GstGeoregBaseSettings * c);

/* The frame's prior: its pose meta (use-pose, a georeferenced control and a search
 * other than translation), else the search region as a position prior (its radius
 * taken as 3 sigma). */
void gst_nmi_localize_frame_prior (GstNmiLocalize * self, GstBuffer * buf,
    const GstNmiLocalizeSettings * s, FramePrior * fp);

/* The translation search at frame-scale / control-scale, within the search region when
 * one is set; attaches the meta. */
GstFlowReturn gst_nmi_localize_translation (GstNmiLocalize * self, GstBuffer * buf,
    const GstNmiLocalizeSettings * s, const GstGeoregBaseSettings * c,
    const FramePrior * fp, gdouble * elapsed_ms, guint64 * positions);

/* GrLocalize from prior (NULL: none), with the fallback sweep when `fallback`;
 * attaches the meta (see gstnmilocalize-search.c). */
/* Whether the translation result m registers from its place (north-up at
 * frame-scale / control-scale): *holds (or too few matches to judge), *verified
 * (judged and held); FALSE after posting an error. */
gboolean gst_nmi_localize_translation_holds (GstNmiLocalize * self, GstBuffer * buf,
    const GstNmiLocalizeSettings * s, const GstGeoregBaseSettings * c,
    const GstNmiLocalizeMeta * m, gboolean * holds, gboolean * verified);
GstFlowReturn gst_nmi_localize_full (GstNmiLocalize * self, GstBuffer * buf,
    const GstNmiLocalizeSettings * s, const GstGeoregBaseSettings * c,
    const GrLocalizePrior * prior, gboolean fallback, gboolean * rejected,
    gdouble * elapsed_ms, guint64 * searches);

/* The "nmilocalize" element message of a frame. */
void gst_nmi_localize_post_result (GstNmiLocalize * self, GstBuffer * buf,
    const GstNmiLocalizeMeta * m, guint64 positions, gdouble elapsed_ms,
    const gchar * search, const gchar * prior);

/* ---- a control read in windows (gstnmilocalize-window.c) */

/* start() for a windowed control: the localizer without a control, the full control's
 * size and geotransform.  FALSE after posting an error. */
gboolean gst_nmi_localize_window_start (GstNmiLocalize * self,
    const GstNmiLocalizeSettings * s, const GstGeoregBaseSettings * c);
void gst_nmi_localize_window_release (GstNmiLocalize * self);
/* A copy of the control plane `in` with the value `nodata` masked out (control-nodata:
 * the shared control is read-only).  FALSE: out of memory. */
gboolean gst_nmi_localize_nodata_copy (const GrPlaneF * in, gint nodata,
    GrPlaneF * out);
/* The window around the frame's prior into the localizer, and the prior in window
 * pixels.  A frame without a prior position is not searched: *no_prior, TRUE (the
 * caller flags it PRIOR_NEEDED).  FALSE after posting an error. */
gboolean gst_nmi_localize_window_prepare (GstNmiLocalize * self,
    const GstNmiLocalizeSettings * s, const FramePrior * fp, GrLocalizePrior * wprior,
    gboolean * no_prior);
/* A result in window pixels back into full-control pixels (no-op on a whole
 * control). */
void gst_nmi_localize_window_result (GstNmiLocalize * self, GrLocalizeResult * res);

G_END_DECLS

#endif
