/* georeg: a frame's registration result on the map, shared by the elements that write
 * it out (georegexport, georegklvenc): the GstNmiRegisterMeta / GstNmiLocalizeMeta of
 * a buffer composed with the control's georeference (kernels/geo) into WGS84 corners,
 * centre, heading and ground sample distance (kernels/geojson's GrFootprint).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_FOOTPRINT_H__
#define __GST_GEOREG_FOOTPRINT_H__

#include <gst/gst.h>

#include "geo.h"
#include "geojson.h"
#include "camera.h"
#include "nmiregister-meta.h"

G_BEGIN_DECLS

/* Fills f (every field) from buf's metas: geometry 2 (footprint) when the
 * registration has a transform that keeps every corner in front of the camera, 1
 * (centre only) from a localization, else 0; quality "registered", "doubtful"
 * (gst_nmi_register_meta_doubt: low inliers, poor spread, refinement failed, or a
 * doubtful coarse result it started from, named "coarse-<flag>" in *flag_names),
 * "coarse" or "failed".  Every frame point goes through the result's full mapping
 * (its lens, then the transform).  *flag_names is
 * newly allocated (g_free) or NULL; f->flag_names and f->file are left for the
 * caller. */
void gst_georeg_footprint_from_buffer (GrGeoRef * georef, GstBuffer * buf, guint64 frame,
    GrFootprint * f, gchar ** flag_names);

/* The frame's lens as a camera model (width and height 0: the lens fields only) when
 * the result is undistorted (its transform takes undistorted pixels); FALSE without. */
gboolean gst_georeg_lens_from_meta (const GstNmiRegisterMeta * m, GrCamera * cam);

/* The two properties that place an element's results on the map, the same in every
 * such element (georegexport, georegklvenc): control-location (the georeferenced
 * control the frames were registered on) and crs (its CRS when the file has none).
 * The element keeps a GstGeoregMapProps in its instance, guarded by its object lock. */
typedef struct {
  gchar *control_location;
  gchar *crs;
} GstGeoregMapProps;

/* Installs control-location as property id first_id and crs as first_id + 1
 * (mutable in READY). */
void gst_georeg_map_props_install (GObjectClass * klass, guint first_id);

/* set_property / get_property for those two ids: TRUE when prop_id was one of them
 * (call with the object lock held, as the other properties are). */
gboolean gst_georeg_map_props_set (GstGeoregMapProps * props, guint first_id,
    guint prop_id, const GValue * value);
gboolean gst_georeg_map_props_get (const GstGeoregMapProps * props, guint first_id,
    guint prop_id, GValue * value);
void gst_georeg_map_props_clear (GstGeoregMapProps * props);

/* The georeference of the control the properties name (read under element's object
 * lock), or NULL after posting a RESOURCE error on element that names the file and the
 * reason (no control given, cannot open, no geotransform or CRS). */
GrGeoRef *gst_georeg_map_props_open (GstElement * element, GstGeoregMapProps * props);

G_END_DECLS

#endif
