/* nmilocalize's priors (issue 13): a buffer's GstGeoregPoseMeta (from georegtelemetry
 * or an application's autopilot) brought onto the control through the camera model and
 * the control's georeference (kernels/pose_prior.h), and the user's search region in
 * control pixels, map units or longitude/latitude.  Needs GDAL (kernels/geo); without
 * it the functions find no georeference and the element searches as without a prior.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_NMI_LOCALIZE_PRIOR_H__
#define __GST_NMI_LOCALIZE_PRIOR_H__

#include <gst/gst.h>

#include "localize.h"

G_BEGIN_DECLS

/* Units of search-x, search-y and search-radius (GrRegionUnits' values). */
typedef enum {
  GST_NMI_LOCALIZE_UNITS_PIXELS = 0,
  GST_NMI_LOCALIZE_UNITS_MAP = 1,
  GST_NMI_LOCALIZE_UNITS_LONLAT = 2,
} GstNmiLocalizeUnits;

#define GST_TYPE_NMI_LOCALIZE_UNITS (gst_nmi_localize_units_get_type ())
GType gst_nmi_localize_units_get_type (void);

/* The control's georeference (opaque: a GrGeoRef where GDAL is built in). */
typedef struct _GstNmiLocalizeGeo GstNmiLocalizeGeo;

/* Opens the georeference of the control at path (crs overrides the file's CRS when
 * non-empty).  NULL with a reason in why when there is none (no geotransform, no CRS,
 * or a build without GDAL). */
GstNmiLocalizeGeo *gst_nmi_localize_geo_open (const gchar * path, const gchar * crs,
    gchar * why, gsize whylen);
void gst_nmi_localize_geo_free (GstNmiLocalizeGeo * geo);

/* search-x/search-y/search-radius in units -> control pixels (centre) and a radius in
 * control pixels; FALSE when the units need a georeference that is missing or PROJ
 * fails. */
gboolean gst_nmi_localize_region_to_pixels (const GstNmiLocalizeGeo * geo,
    GstNmiLocalizeUnits units, gdouble x, gdouble y, gdouble radius, gdouble * px,
    gdouble * py, gdouble * radius_px);

/* The prior of buf's pose meta for a width x height frame: FALSE (why says so) when
 * the buffer has no pose meta, the meta has neither a position nor a camera yaw, or the
 * pose cannot be projected.  The camera: the meta's intrinsics (for its image size,
 * scaled to the frame), else its focal length (kernels/camera's sensor table or the
 * 35 mm equivalent); without either, a nominal camera places the frame but the prior
 * carries no scale.  *position_sigma_m: the frame centre's combined sigma. */
gboolean gst_nmi_localize_pose_prior (const GstNmiLocalizeGeo * geo, GstBuffer * buf,
    gint width, gint height, GrLocalizePrior * prior, gdouble * position_sigma_m,
    gchar * why, gsize whylen);

G_END_DECLS

#endif
