/* georeg: the public result meta of nmiregister.  Applications include this header
 * and link gstreamer-georeg-1.0 (pkg-config) to read it.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_NMI_REGISTER_META_H__
#define __GST_NMI_REGISTER_META_H__

#include <gst/gst.h>
#include "georeg-meta.h"

G_BEGIN_DECLS

/**
 * GstNmiRegisterFlags:
 * Documented conditions of a registration result (docs/nmiregister.md).  The flags
 * marked "no transform" leave has_transform FALSE and every transform entry NAN.
 */
typedef enum {
  GST_NMI_REGISTER_FLAG_NONE = 0,
  /* no transform: the buffer had no GstNmiLocalizeMeta and coarse-fallback=none */
  GST_NMI_REGISTER_FLAG_NO_COARSE = 1 << 0,
  /* no transform: the coarse meta carries no position (its NO_VALID_PIXELS or
   * NO_OVERLAP flag), or the full search found none */
  GST_NMI_REGISTER_FLAG_COARSE_UNUSABLE = 1 << 1,
  /* the prior came from initial-offset-x/y (coarse-fallback=initial-offset) */
  GST_NMI_REGISTER_FLAG_INITIAL_OFFSET = 1 << 2,
  /* the prior came from the element's own coarse search (coarse-fallback=full-search) */
  GST_NMI_REGISTER_FLAG_FULL_SEARCH = 1 << 3,
  /* no transform: fewer keypoints than the model needs (flat or masked frame) */
  GST_NMI_REGISTER_FLAG_TOO_FEW_KEYPOINTS = 1 << 4,
  /* no transform: fewer usable matches than the model needs (windows outside the
   * control or on no-data, flat templates, peaks on the window edge) */
  GST_NMI_REGISTER_FLAG_TOO_FEW_MATCHES = 1 << 5,
  /* some search windows reached outside the control or into its no-data
   * (information; those pixels took no part in the scores) */
  GST_NMI_REGISTER_FLAG_WINDOWS_CLIPPED = 1 << 6,
  /* no transform: the matches admit no non-degenerate model (e.g. all collinear) */
  GST_NMI_REGISTER_FLAG_DEGENERATE = 1 << 7,
  /* no transform: no model found enough inliers */
  GST_NMI_REGISTER_FLAG_NO_CONSENSUS = 1 << 8,
  /* transform given but doubtful: fewer inliers than min-inliers */
  GST_NMI_REGISTER_FLAG_LOW_INLIERS = 1 << 9,
  /* transform given but doubtful: the inliers span less than a third of the frame
   * along an axis, so the transform is extrapolated over most of the frame */
  GST_NMI_REGISTER_FLAG_POOR_SPREAD = 1 << 10,
  /* the refinement pass failed; the transform is the first pass's */
  GST_NMI_REGISTER_FLAG_REFINE_FAILED = 1 << 11,
  /* transform given but doubtful: its predicted error over the frame (predicted_error,
   * from the fits that each leave a ninth of the frame's inliers out) exceeds
   * max-predicted-error frame pixels: the matches agree but pin the transform poorly */
  GST_NMI_REGISTER_FLAG_IMPRECISE = 1 << 12,
  /* no transform: the control is read in windows around each frame's prior (too
   * large to hold whole: docs/controls.md), and this frame has no coarse position to
   * cut a window around; coarse-fallback=full-search cannot run on such a control.
   * Set by the element, never by the engine (whose flags share bits 0-15) */
  GST_NMI_REGISTER_FLAG_PRIOR_NEEDED = 1 << 16,
} GstNmiRegisterFlags;

typedef struct _GstNmiRegisterMeta GstNmiRegisterMeta;

/**
 * GstNmiRegisterMeta:
 * The registration of a frame onto the control image.
 *
 * Coordinates follow the pixel-corner convention of GstNmiLocalizeMeta: (0, 0) is the
 * top-left corner of the top-left pixel, in full-resolution frame and control pixels.
 * Transforms are 3 x 3, row-major, h[8] = 1, mapping column vectors (x, y, 1):
 * (X, Y) = ((h0 x + h1 y + h2) / w, (h3 x + h4 y + h5) / w), w = h6 x + h7 y + h8.
 */
struct _GstNmiRegisterMeta {
  GstMeta meta;

  guint flags;                    /* GstNmiRegisterFlags */
  guint model;                    /* 0 translation, 1 similarity, 2 affine, 3 homography */
  gboolean has_transform;         /* frame_to_control (and the rest) are set */
  gdouble frame_to_control[9];    /* frame pixel corners -> control pixel corners */
  gboolean has_map;               /* the control is georeferenced: the map fields are set */
  gdouble frame_to_map[9];        /* frame pixel corners -> map coordinates */
  gdouble footprint_control[8];   /* the frame's corners (0,0) (w,0) (w,h) (0,h) in the
                                     control, x0 y0 x1 y1 x2 y2 x3 y3 */
  gdouble footprint_map[8];       /* the same in map coordinates */
  guint keypoints;                /* keypoints detected in the frame */
  guint matches;                  /* matches that passed the match filter (last pass) */
  guint inliers;                  /* matches consistent with the transform */
  gdouble rms;                    /* RMS residual of the inliers (control pixels) */
  gdouble prior_x, prior_y;       /* the coarse top-left used (control pixel corners) */
  gdouble prior_scale;            /* the coarse scale used (control pixels per frame pixel) */

  /* ---- appended for the CRS and WGS84 results (issue 17); ABI: append only */

  /* the control's CRS, the CRS of every map field: "EPSG:<code>" where there is one,
   * its WKT2 text otherwise; NULL when the control has none (no CRS in the file, no
   * .prj beside it, no `crs` property).  An interned string (g_intern_string): shared
   * by every meta, never freed. */
  const gchar *crs;
  gint epsg;                      /* the CRS's EPSG code, 0 when it has none */
  gdouble center_control[2];      /* the frame centre (w/2, h/2) in control pixels */
  gdouble center_map[2];          /* the same in map coordinates (has_map) */
  gboolean has_lonlat;            /* the CRS is known: the WGS84 fields are set */
  gdouble footprint_lonlat[8];    /* footprint_map's corners in WGS84 degrees,
                                     longitude first: lon0 lat0 ... lon3 lat3 */
  gdouble center_lonlat[2];       /* the frame centre, WGS84 longitude, latitude */

  /* ---- appended for lens distortion (issue 13); ABI: append only */

  /* TRUE when the frame's pose meta gave a lens with distortion: frame_to_control and
   * frame_to_map then take UNDISTORTED frame pixel corners, i.e. a delivered pixel
   * corner x maps to frame_to_control (undistort (x)) with undistort the inverse of
   * the Brown-Conrady model in lens[] (OpenCV's, pixel centres at integers: subtract
   * 0.5 from a pixel corner first).  The footprints and the centre already went
   * through the lens. */
  gboolean undistorted;
  gdouble lens[9];                /* fx fy cx cy k1 k2 k3 p1 p2 for this frame's size;
                                     NAN unless undistorted */

  /* ---- appended for the precision evidence (issue 13); ABI: append only */

  /* the transform's expected error over the frame, in frame pixels: the jackknife
   * spread of the fits that each leave out the inliers of one ninth (3 x 3 blocks) of
   * the frame, RMS over the frame.  A lower bound (a bias common to every match cannot
   * show); NAN without a transform or when it cannot be told.  Above the element's
   * max-predicted-error the result is flagged IMPRECISE. */
  gdouble predicted_error;

  /* ---- appended for the calibrated camera fit (issue 13); ABI: append only */

  /* TRUE when the transform is the plane homography of the frame's calibrated camera
   * (the pose meta's intrinsics; nmiregister's camera-fit), FALSE for a general fit of
   * the element's model */
  gboolean camera_fit;
};

GType gst_nmi_register_meta_api_get_type (void);
#define GST_NMI_REGISTER_META_API_TYPE (gst_nmi_register_meta_api_get_type ())
const GstMetaInfo *gst_nmi_register_meta_get_info (void);
#define GST_NMI_REGISTER_META_INFO (gst_nmi_register_meta_get_info ())

#define gst_buffer_get_nmi_register_meta(b) \
  ((GstNmiRegisterMeta *) gst_buffer_get_meta ((b), GST_NMI_REGISTER_META_API_TYPE))

/**
 * gst_buffer_add_nmi_register_meta: (skip)
 *
 * Adds a meta with every coordinate NAN, no transform and flags 0; the caller
 * fills it.  (Bindings read results through georeg_buffer_get_registration.)
 */
GstNmiRegisterMeta *gst_buffer_add_nmi_register_meta (GstBuffer * buffer);

/**
 * gst_nmi_register_meta_frame_to_control: (skip)
 * @meta: a result
 * @x: a frame position as delivered (pixel corners), e.g. a corner (w, h)
 * @y: the same, vertical
 * @cx: (out): the control pixel corner it maps to
 * @cy: (out): the same, vertical
 *
 * The full mapping of the result: through the frame's lens first when @meta is
 * `undistorted` (frame_to_control takes undistorted pixels), then frame_to_control.
 * Without a lens this is frame_to_control alone.  Every consumer of the result
 * (exports, KLV, bindings) maps frame points through this, never through
 * frame_to_control directly.  (Bindings: georeg_registration_frame_to_control.)
 *
 * Returns: FALSE (outputs unchanged) without a transform, when the point cannot be
 * undistorted (far outside the lens's valid field), or when it maps to infinity or
 * behind the camera (the transform's w <= 0): such a point has no place on the control.
 */
gboolean gst_nmi_register_meta_frame_to_control (const GstNmiRegisterMeta * meta,
    gdouble x, gdouble y, gdouble * cx, gdouble * cy);

/**
 * GST_NMI_REGISTER_COARSE_DOUBT:
 * The GstNmiLocalizeFlags that make a coarse result doubtful (docs/nmilocalize.md):
 * another place scores almost as well, the best place is on the search's edge, the
 * result contradicts the prior, or it rests on a small part of the frame.
 */
#define GST_NMI_REGISTER_COARSE_DOUBT (GST_NMI_LOCALIZE_FLAG_AMBIGUOUS | \
    GST_NMI_LOCALIZE_FLAG_AT_BORDER | GST_NMI_LOCALIZE_FLAG_IMPLAUSIBLE | \
    GST_NMI_LOCALIZE_FLAG_LOW_OVERLAP)

/**
 * gst_nmi_register_meta_doubt: (skip)
 * @meta: a result with a transform
 * @coarse: (nullable): the frame's GstNmiLocalizeMeta, when it has one
 *
 * Why a registered frame should not be trusted, combining both stages (docs/gis.md):
 * nmiregister's own LOW_INLIERS, POOR_SPREAD, REFINE_FAILED or IMPRECISE; or a coarse result
 * flagged doubtful (GST_NMI_REGISTER_COARSE_DOUBT) that nmiregister started from.
 * The fine registration refines the coarse place locally; it can converge with many
 * inliers on the wrong place or scale the coarse stage picked, so it is no
 * independent evidence.  Its own search is: a frame with FULL_SEARCH or
 * INITIAL_OFFSET did not start from the coarse result and keeps no coarse doubt.
 *
 * Returns: 0 when the result is sound; otherwise bit 0 set for nmiregister's own
 * doubt and bit 1 for the inherited coarse doubt.
 */
guint gst_nmi_register_meta_doubt (const GstNmiRegisterMeta * meta,
    const GstNmiLocalizeMeta * coarse);

#define GST_NMI_REGISTER_DOUBT_OWN 1u
#define GST_NMI_REGISTER_DOUBT_COARSE 2u

G_END_DECLS

#endif
