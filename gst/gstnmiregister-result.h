/* nmiregister's result of a frame: the engine's result (kernels/register.h) into the
 * GstNmiRegisterMeta (control pixels, map coordinates in the control's CRS, WGS84
 * longitude/latitude) and into the element message.  The map side is prepared once
 * per start from the control: its geotransform (kernels/raster) and, with GDAL, its
 * CRS through kernels/geo (the file's own, a .prj beside it, or the `crs` property),
 * the same reader georegexport and georegklvenc use.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_NMI_REGISTER_RESULT_H__
#define __GST_NMI_REGISTER_RESULT_H__

#include <gst/gst.h>

#include "geo.h"
#include "nmiregister-meta.h"
#include "raster.h"
#include "register.h"

G_BEGIN_DECLS

/* The control on the map. */
typedef struct {
  gboolean has_geo;             /* the control has a geotransform: map fields are set */
  gdouble geo[6];               /* GDAL order, pixel corners */
  GrGeoRef *georef;             /* its CRS; NULL without one (or without GDAL) */
  const gchar *crs;             /* interned "EPSG:<code>" or WKT2; NULL without a CRS */
  gint epsg;                    /* 0 when none */
} GstNmiRegisterMap;

/* Prepares map for the control r read from path; crs (the `crs` property, NULL or ""
 * for none) overrides the file's CRS.  A control without a CRS is no error: the map
 * fields are set, the WGS84 ones are not, and *note says why (g_free).  FALSE, with
 * the reason in err, only for a `crs` the build or PROJ cannot use. */
gboolean gst_nmi_register_map_init (GstNmiRegisterMap * map, const GrRaster * r,
    const gchar * path, const gchar * crs, gchar ** note, gchar * err, gsize errlen);
void gst_nmi_register_map_clear (GstNmiRegisterMap * map);

/* The engine's result of a fw x fh frame into m (whose coarse fields and flags the
 * caller set): transform, footprints, centre, and on the map and in WGS84 where
 * map knows how. */
void gst_nmi_register_fill_meta (const GstNmiRegisterMap * map,
    const GrRegisterResult * res, gint fw, gint fh, GstNmiRegisterMeta * m);

/* The lens of a fw x fh frame from its GstGeoregPoseMeta (intrinsics with a
 * distortion coefficient; scaled when the meta describes another image size): FALSE
 * when the frame has none. */
gboolean gst_nmi_register_frame_lens (GstBuffer * buf, gint fw, gint fh,
    GrCamera * cam);
/* The frame's intrinsics (scaled to fw x fh) when its pose meta says they were
 * calibrated: from a calibration file, an application's own camera model, or with
 * distortion coefficients (someone measured the lens).  FALSE otherwise (no meta, no
 * intrinsics, or a focal length from EXIF only). */
gboolean gst_nmi_register_frame_calibrated (GstBuffer * buf, gint fw, gint fh,
    GrCamera * cam);

/* What the message says besides the meta. */
typedef struct {
  guint64 frame;
  GstClockTime timestamp;
  const gchar *backend, *input_memory;
  gdouble register_ms, read_ms, keypoints_ms, overlay_ms;
} GstNmiRegisterMessageInfo;

/* The "nmiregister" element message of a frame (docs/nmiregister.md lists the
 * fields; docs/python.md their types). */
GstStructure *gst_nmi_register_result_structure (const GstNmiRegisterMeta * m,
    const GstNmiRegisterMessageInfo * info);

G_END_DECLS

#endif
