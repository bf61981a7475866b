/* nmilocalize's priors: pose meta -> GrLocalizePrior, search regions in map units or
 * longitude/latitude (gstnmilocalize-prior.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include "gstnmilocalize-prior.h"
#include "georeg-pose-meta.h"

#if GR_HAVE_GDAL
#include "pose_prior.h"
#endif

GType
gst_nmi_localize_units_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_NMI_LOCALIZE_UNITS_PIXELS, "Full-resolution control pixels", "pixels"},
    {GST_NMI_LOCALIZE_UNITS_MAP, "Map coordinates in the control's CRS, radius in "
          "metres", "map"},
    {GST_NMI_LOCALIZE_UNITS_LONLAT, "WGS84 longitude (search-x) and latitude "
          "(search-y) in degrees, radius in metres", "lonlat"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstNmiLocalizeUnits", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

#if GR_HAVE_GDAL

struct _GstNmiLocalizeGeo {
  GrGeoRef *ref;
};

GstNmiLocalizeGeo *
gst_nmi_localize_geo_open (const gchar * path, const gchar * crs, gchar * why,
    gsize whylen)
{
  GrGeoRef *ref = NULL;
  if (!path || gr_georef_open (path, crs, &ref, why, whylen) != GR_OK)
    return NULL;
  GstNmiLocalizeGeo *geo = g_new0 (GstNmiLocalizeGeo, 1);
  geo->ref = ref;
  return geo;
}

void
gst_nmi_localize_geo_free (GstNmiLocalizeGeo * geo)
{
  if (!geo)
    return;
  gr_georef_free (geo->ref);
  g_free (geo);
}

gboolean
gst_nmi_localize_region_to_pixels (const GstNmiLocalizeGeo * geo,
    GstNmiLocalizeUnits units, gdouble x, gdouble y, gdouble radius, gdouble * px,
    gdouble * py, gdouble * radius_px)
{
  return gr_search_region_to_pixels (geo ? geo->ref : NULL, (GrRegionUnits) units, x, y,
      radius, px, py, radius_px);
}

static void
copy_value (GrPriorValue * dst, const GstGeoregPoseValue * src)
{
  dst->have = src->have;
  dst->value = src->value;
  dst->sigma = src->sigma;
}

/* The meta's fields as a GrPosePrior (the camera attitude as the meta gives it: the
 * producer derived it already). */
static void
pose_from_meta (const GstGeoregPoseMeta * m, GrPosePrior * p)
{
  gr_pose_prior_init (p);
  copy_value (&p->lat, &m->latitude);
  copy_value (&p->lon, &m->longitude);
  copy_value (&p->alt_wgs84, &m->altitude_wgs84);
  copy_value (&p->alt_amsl, &m->altitude_amsl);
  copy_value (&p->height_agl, &m->height_agl);
  copy_value (&p->rel_alt, &m->relative_altitude);
  copy_value (&p->cam_yaw, &m->camera_yaw);
  copy_value (&p->cam_pitch, &m->camera_pitch);
  copy_value (&p->cam_roll, &m->camera_roll);
  copy_value (&p->focal_mm, &m->focal_length_mm);
  copy_value (&p->focal_35mm, &m->focal_length_35mm);
  p->image_width = m->image_width;
  p->image_height = m->image_height;
  g_strlcpy (p->make, m->camera_make, sizeof p->make);
  g_strlcpy (p->model, m->camera_model, sizeof p->model);
  /* a height above the take-off point stands in for the height above ground, with
   * the wider sigma gr_pose_prior_finish gives it (kernels/telemetry.h; not called
   * here: it would derive the camera attitude again, over an application's own) */
  if (!p->height_agl.have && p->rel_alt.have && p->rel_alt.value > 0) {
    p->height_agl = p->rel_alt;
    p->height_agl.sigma = fmax (p->rel_alt.sigma, 0.1 * p->rel_alt.value + 1.0);
  }
}

gboolean
gst_nmi_localize_pose_prior (const GstNmiLocalizeGeo * geo, GstBuffer * buf,
    gint width, gint height, GrLocalizePrior * prior, gdouble * position_sigma_m,
    gchar * why, gsize whylen)
{
  const GstGeoregPoseMeta *m = gst_buffer_get_georeg_pose_meta (buf);
  if (!m) {
    g_strlcpy (why, "no pose meta", whylen);
    return FALSE;
  }
  if (!geo) {
    g_strlcpy (why, "the control has no georeference", whylen);
    return FALSE;
  }
  GrPosePrior pose;
  pose_from_meta (m, &pose);
  if (!(pose.lat.have && pose.lon.have) && !pose.cam_yaw.have) {
    g_strlcpy (why, "the pose has neither a position nor a camera yaw", whylen);
    return FALSE;
  }
  const gint iw = m->image_width > 0 ? m->image_width : width;
  const gint ih = m->image_height > 0 ? m->image_height : height;
  GrCamera cam;
  gboolean nominal = FALSE;
  if (m->have_intrinsics) {
    memset (&cam, 0, sizeof cam);
    cam.width = iw;
    cam.height = ih;
    cam.fx = m->fx;
    cam.fy = m->fy;
    cam.cx = m->cx;
    cam.cy = m->cy;
    cam.k1 = m->k1;
    cam.k2 = m->k2;
    cam.k3 = m->k3;
    cam.p1 = m->p1;
    cam.p2 = m->p2;
  } else if (gr_camera_from_prior (&pose, iw, ih, &cam, NULL, 0) != GR_OK) {
    /* no focal length: a nominal lens (about 53 degrees across) still puts a nadir
     * frame's centre in the right place; its scale is unknown */
    gr_camera_init_focal (&cam, width, height, 1.0, 1.0);
    nominal = TRUE;
  }
  GrPoseControlPrior pc;
  char err[256] = "";
  if (gr_pose_prior_to_control (&pose, &cam, geo->ref, width, height, &pc, err,
          sizeof err) != GR_OK) {
    g_strlcpy (why, err, whylen);
    return FALSE;
  }
  *prior = pc.prior;
  if (nominal)
    prior->has_scale = false;
  *position_sigma_m = pc.position_sigma_m;
  return prior->has_position || prior->has_heading;
}

#else /* without GDAL: no georeference, so no prior in map terms */

GstNmiLocalizeGeo *
gst_nmi_localize_geo_open (const gchar * path, const gchar * crs, gchar * why,
    gsize whylen)
{
  g_strlcpy (why, "built without GDAL", whylen);
  return NULL;
}

void
gst_nmi_localize_geo_free (GstNmiLocalizeGeo * geo)
{
}

gboolean
gst_nmi_localize_region_to_pixels (const GstNmiLocalizeGeo * geo,
    GstNmiLocalizeUnits units, gdouble x, gdouble y, gdouble radius, gdouble * px,
    gdouble * py, gdouble * radius_px)
{
  *px = x;
  *py = y;
  *radius_px = radius;
  return units == GST_NMI_LOCALIZE_UNITS_PIXELS;
}

gboolean
gst_nmi_localize_pose_prior (const GstNmiLocalizeGeo * geo, GstBuffer * buf,
    gint width, gint height, GrLocalizePrior * prior, gdouble * position_sigma_m,
    gchar * why, gsize whylen)
{
  g_strlcpy (why, "built without GDAL", whylen);
  return FALSE;
}

#endif
