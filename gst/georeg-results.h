/* georeg: the results on a buffer as introspectable types, for language bindings
 * (PyGObject: `from gi.repository import Georeg`) and for C applications that prefer
 * copies to metas.  Part of the meta library (gstreamer-georeg-1.0); typelib
 * Georeg-1.0.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GEOREG_RESULTS_H__
#define __GEOREG_RESULTS_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/**
 * GeoregRegistration:
 * @flags: GstNmiRegisterFlags bits (Georeg.NmiRegisterFlags; docs/python.md)
 * @model: 0 translation, 1 similarity, 2 affine, 3 homography
 * @has_transform: the transforms and footprints are set
 * @has_map: the control is georeferenced: the map transform and footprint are set
 * @keypoints: keypoints detected in the frame
 * @matches: matches that passed the match filter
 * @inliers: matches consistent with the transform
 * @rms: RMS residual of the inliers, control pixels
 * @prior_x: the coarse top-left used, control pixel corners
 * @prior_y: the coarse top-left used, control pixel corners
 * @prior_scale: the coarse scale used, control pixels per frame pixel
 * @epsg: EPSG code of the control's CRS (the CRS of the map fields), 0 when it has
 *   none (georeg_registration_get_crs() then gives its WKT, or %NULL without a CRS)
 * @has_lonlat: the control's CRS is known: @center_lon, @center_lat and
 *   georeg_registration_get_footprint_lonlat() are set
 * @center_x: the frame centre (w/2, h/2) in control pixels
 * @center_y: the frame centre in control pixels
 * @center_map_x: the frame centre in map coordinates (control's CRS; @has_map)
 * @center_map_y: the frame centre in map coordinates
 * @center_lon: the frame centre, WGS84 longitude in degrees (@has_lonlat)
 * @center_lat: the frame centre, WGS84 latitude in degrees
 * @doubtful: the result has a transform but should not be trusted: nmiregister's own
 *   LOW_INLIERS, POOR_SPREAD, REFINE_FAILED or IMPRECISE, or a doubtful coarse result
 *   (nmilocalize's AMBIGUOUS, AT_BORDER, IMPLAUSIBLE or LOW_OVERLAP) it started from
 *   (gst_nmi_register_meta_doubt; docs/gis.md)
 * @predicted_error: the transform's expected error over the frame, frame pixels (a
 *   lower bound; the meta's predicted_error), NAN when unknown
 *
 * A copy of a frame's nmiregister result.  Pixel-corner coordinates: (0, 0) is the
 * top-left corner of the top-left pixel.  Fields that are not set are NAN.
 */
typedef struct {
  guint flags;
  guint model;
  gboolean has_transform;
  gboolean has_map;
  guint keypoints;
  guint matches;
  guint inliers;
  gdouble rms;
  gdouble prior_x;
  gdouble prior_y;
  gdouble prior_scale;
  /*< private >*/
  gdouble frame_to_control[9];
  gdouble frame_to_map[9];
  gdouble footprint_control[8];
  gdouble footprint_map[8];
  /*< public >*/
  gint epsg;
  gboolean has_lonlat;
  gdouble center_x;
  gdouble center_y;
  gdouble center_map_x;
  gdouble center_map_y;
  gdouble center_lon;
  gdouble center_lat;
  /*< private >*/
  const gchar *crs;             /* interned, as in the meta */
  gdouble footprint_lonlat[8];
  /* appended for the lens (issue 13): as in the meta */
  gboolean undistorted;
  gdouble lens[9];
  /*< public >*/
  gboolean doubtful;
  gdouble predicted_error;
} GeoregRegistration;

#define GEOREG_TYPE_REGISTRATION (georeg_registration_get_type ())
GType georeg_registration_get_type (void);
GeoregRegistration *georeg_registration_copy (const GeoregRegistration * r);
void georeg_registration_free (GeoregRegistration * r);

/**
 * georeg_buffer_get_registration:
 * @buffer: a frame that went through nmiregister
 *
 * Returns: (transfer full) (nullable): a copy of the frame's registration, or %NULL
 * when the buffer carries none
 */
GeoregRegistration *georeg_buffer_get_registration (GstBuffer * buffer);

/**
 * georeg_registration_get_frame_to_control:
 * @r: a registration
 *
 * Returns: (array fixed-size=9) (transfer none): the 3 x 3 frame -> control pixel
 * transform, row-major (NAN without a transform)
 */
const gdouble *georeg_registration_get_frame_to_control (const GeoregRegistration * r);

/**
 * georeg_registration_frame_to_control:
 * @r: a registration
 * @x: a frame position as delivered (pixel corners)
 * @y: the same, vertical
 * @cx: (out): the control pixel corner it maps to
 * @cy: (out): the same, vertical
 *
 * Maps a frame point the way the result does: through the frame's lens when the
 * registration is undistorted (georeg_registration_get_undistorted), then
 * frame_to_control.  Use this rather than applying frame_to_control yourself.
 *
 * Returns: %FALSE without a transform, or when the point cannot be undistorted or
 * maps to infinity or behind the camera
 */
gboolean georeg_registration_frame_to_control (const GeoregRegistration * r, gdouble x,
    gdouble y, gdouble * cx, gdouble * cy);

/**
 * georeg_registration_get_undistorted:
 * @r: a registration
 *
 * Returns: %TRUE when the frame had a lens: frame_to_control and frame_to_map take
 * undistorted frame pixels (map points with georeg_registration_frame_to_control)
 */
gboolean georeg_registration_get_undistorted (const GeoregRegistration * r);

/**
 * georeg_registration_get_frame_to_map:
 * @r: a registration
 *
 * Returns: (array fixed-size=9) (transfer none): the frame -> map transform in the
 * control's CRS (NAN without a georeferenced control)
 */
const gdouble *georeg_registration_get_frame_to_map (const GeoregRegistration * r);

/**
 * georeg_registration_get_footprint_control:
 * @r: a registration
 *
 * Returns: (array fixed-size=8) (transfer none): the frame's corners (0,0) (w,0)
 * (w,h) (0,h) in control pixels, x0 y0 x1 y1 x2 y2 x3 y3
 */
const gdouble *georeg_registration_get_footprint_control (const GeoregRegistration * r);

/**
 * georeg_registration_get_footprint_map:
 * @r: a registration
 *
 * Returns: (array fixed-size=8) (transfer none): the same corners in map coordinates
 */
const gdouble *georeg_registration_get_footprint_map (const GeoregRegistration * r);

/**
 * georeg_registration_get_footprint_lonlat:
 * @r: a registration
 *
 * Returns: (array fixed-size=8) (transfer none): the same corners in WGS84 degrees,
 * longitude first: lon0 lat0 lon1 lat1 lon2 lat2 lon3 lat3 (NAN unless has_lonlat)
 */
const gdouble *georeg_registration_get_footprint_lonlat (const GeoregRegistration * r);

/**
 * georeg_registration_get_crs:
 * @r: a registration
 *
 * Returns: (transfer none) (nullable): the control's CRS, the CRS of the map fields:
 * "EPSG:<code>" where it has one, its WKT2 text otherwise; %NULL when the control has
 * no CRS (no CRS in the file, no .prj beside it, no `crs` property on nmiregister)
 */
const gchar *georeg_registration_get_crs (const GeoregRegistration * r);

/**
 * GeoregLocalization:
 * @flags: GstNmiLocalizeFlags bits (Georeg.NmiLocalizeFlags)
 * @offset_x: the frame's top-left at search scale
 * @offset_y: the frame's top-left at search scale
 * @control_x: the frame's top-left in control pixels
 * @control_y: the frame's top-left in control pixels
 * @center_x: the frame centre in control pixels
 * @center_y: the frame centre in control pixels
 * @frame_scale: frame pixels -> search pixels
 * @control_scale: control pixels -> search pixels
 * @score: NMI at the best translation, 1 to 2
 * @second_score: the best separated local maximum (NAN if none)
 * @peak_ratio: how far the best score stands above the second, score - 1 over
 *   second_score - 1
 * @valid_pixels: jointly valid pixels at the best translation
 * @has_map: the control is georeferenced: @map_x, @map_y are set
 * @map_x: map x of the frame centre (control's CRS)
 * @map_y: map y of the frame centre
 *
 * A copy of a frame's nmilocalize result (pixel corners).
 */
typedef struct {
  guint flags;
  gdouble offset_x;
  gdouble offset_y;
  gdouble control_x;
  gdouble control_y;
  gdouble center_x;
  gdouble center_y;
  gdouble frame_scale;
  gdouble control_scale;
  gdouble score;
  gdouble second_score;
  gdouble peak_ratio;
  guint64 valid_pixels;
  gboolean has_map;
  gdouble map_x;
  gdouble map_y;
} GeoregLocalization;

#define GEOREG_TYPE_LOCALIZATION (georeg_localization_get_type ())
GType georeg_localization_get_type (void);
GeoregLocalization *georeg_localization_copy (const GeoregLocalization * l);
void georeg_localization_free (GeoregLocalization * l);

/**
 * georeg_buffer_get_localization:
 * @buffer: a frame that went through nmilocalize
 *
 * Returns: (transfer full) (nullable): a copy of the localization, or %NULL
 */
GeoregLocalization *georeg_buffer_get_localization (GstBuffer * buffer);

/**
 * GeoregMatchPair:
 * @frame: the earlier frame's number
 * @matches: matched keypoint pairs
 * @inliers: pairs consistent with the homography
 * @flags: GstFeatureMatchPairFlags bits (1 homography, 2 refined)
 * @rms: RMS reprojection error of the inliers, pixels (NAN without a homography)
 *
 * The matches between a frame and one earlier frame (featurematch).
 */
typedef struct {
  guint64 frame;
  guint matches;
  guint inliers;
  guint flags;
  gdouble rms;
  /*< private >*/
  gdouble h[9];
} GeoregMatchPair;

#define GEOREG_TYPE_MATCH_PAIR (georeg_match_pair_get_type ())
GType georeg_match_pair_get_type (void);
GeoregMatchPair *georeg_match_pair_copy (const GeoregMatchPair * p);
void georeg_match_pair_free (GeoregMatchPair * p);

/**
 * georeg_match_pair_get_homography:
 * @p: a pair
 *
 * Returns: (array fixed-size=9) (transfer none): x_earlier ~ h x_this, row-major
 * (NAN without a homography)
 */
const gdouble *georeg_match_pair_get_homography (const GeoregMatchPair * p);

/**
 * georeg_buffer_get_match_pairs:
 * @buffer: a frame that went through featurematch
 * @frame: (out) (optional): this frame's number
 * @n_keypoints: (out) (optional): keypoints found in this frame
 * @pairs: (out) (optional) (transfer full) (element-type GeoregMatchPair): the pairs
 *   with earlier frames (possibly none)
 *
 * Returns: %TRUE when the buffer carries a match result (the outputs are set)
 */
gboolean georeg_buffer_get_match_pairs (GstBuffer * buffer, guint64 * frame,
    guint * n_keypoints, GPtrArray ** pairs);

/**
 * georeg_register_flags_to_string:
 * @flags: GstNmiRegisterFlags bits
 *
 * Returns: (transfer full): the flags in words, comma-separated ("low-inliers,
 * poor-spread"; unknown bits as "bit-N"; "" for none)
 */
gchar *georeg_register_flags_to_string (guint flags);

/**
 * georeg_localize_flags_to_string:
 * @flags: GstNmiLocalizeFlags bits
 *
 * Returns: (transfer full): the flags in words, comma-separated
 */
gchar *georeg_localize_flags_to_string (guint flags);

/**
 * georeg_buffer_set_source_location:
 * @buffer: (transfer none): a writable frame
 * @location: the file the frame was read from (a photo, a video)
 *
 * Tags the frame with its source file (a GstCustomMeta named "GeoregSourceMeta",
 * structure field "location"), for georegexport's `file` field and GeoTIFF names.
 */
void georeg_buffer_set_source_location (GstBuffer * buffer, const gchar * location);

/**
 * georeg_buffer_get_source_location:
 * @buffer: a frame
 *
 * Returns: (transfer none) (nullable): the source file set by
 * georeg_buffer_set_source_location(), or %NULL
 */
const gchar *georeg_buffer_get_source_location (GstBuffer * buffer);

G_END_DECLS

#endif
