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

G_BEGIN_DECLS

/* Fills f (every field) from buf's metas: geometry 2 (footprint) when the
 * registration has a transform that keeps every corner in front of the camera, 1
 * (centre only) from a localization, else 0; quality "registered", "doubtful" (low
 * inliers, poor spread, refinement failed), "coarse" or "failed".  *flag_names is
 * newly allocated (g_free) or NULL; f->flag_names and f->file are left for the
 * caller. */
void gst_georeg_footprint_from_buffer (GrGeoRef * georef, GstBuffer * buf, guint64 frame,
    GrFootprint * f, gchar ** flag_names);

/* The georeference of the control (path, optional CRS string), or NULL after posting
 * a RESOURCE error on element that names the file and the reason (no control given,
 * cannot open, no geotransform or CRS). */
GrGeoRef *gst_georeg_open_control_georef (GstElement * element, const gchar * control,
    const gchar * crs);

G_END_DECLS

#endif
