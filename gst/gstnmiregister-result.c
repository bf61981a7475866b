/* nmiregister's result of a frame (gst/gstnmiregister-result.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include "gstnmiregister-result.h"
#include "georeg-pose-meta.h"
#include "gstnmiregister.h"
#include "fit.h"

gboolean
gst_nmi_register_map_init (GstNmiRegisterMap * map, const GrRaster * r,
    const gchar * path, const gchar * crs, gchar ** note, gchar * err, gsize errlen)
{
  const gboolean want_crs = crs && *crs;

  memset (map, 0, sizeof *map);
  *note = NULL;
  map->has_geo = r->has_geo;
  memcpy (map->geo, r->geo, sizeof map->geo);
  if (!r->has_geo) {
    if (want_crs)
      *note = g_strdup_printf ("crs=%s is not used: '%s' has no geotransform (no world "
          "file), so there are no map coordinates", crs, path);
    return TRUE;
  }
#if GR_HAVE_GDAL
  char why[1024] = "";
  GrStatus st = gr_georef_open (path, want_crs ? crs : NULL, &map->georef, why,
      sizeof why);
  if (st != GR_OK) {
    map->georef = NULL;
    if (want_crs) {
      g_snprintf (err, errlen, "%s", why);
      return FALSE;
    }
    *note = g_strdup_printf ("map coordinates without longitude/latitude: %s", why);
    return TRUE;
  }
  map->crs = g_intern_string (gr_georef_crs_name (map->georef));
  map->epsg = gr_georef_epsg (map->georef);
  return TRUE;
#else
  if (want_crs) {
    g_snprintf (err, errlen, "crs=%s: this build has no GDAL, which reading a CRS needs",
        crs);
    return FALSE;
  }
  *note = g_strdup ("map coordinates without longitude/latitude: this build has no "
      "GDAL to read the control's CRS");
  return TRUE;
#endif
}

void
gst_nmi_register_map_clear (GstNmiRegisterMap * map)
{
#if GR_HAVE_GDAL
  gr_georef_free (map->georef);
#endif
  memset (map, 0, sizeof *map);
}

/* m's map points (the four footprint corners, the centre) in WGS84; FALSE leaves m's
 * WGS84 fields NAN. */
static gboolean
to_lonlat (const GstNmiRegisterMap * map, GstNmiRegisterMeta * m)
{
#if GR_HAVE_GDAL
  double x[5], y[5];
  for (int i = 0; i < 4; i++) {
    x[i] = m->footprint_map[2 * i];
    y[i] = m->footprint_map[2 * i + 1];
  }
  x[4] = m->center_map[0];
  y[4] = m->center_map[1];
  for (int i = 0; i < 5; i++)
    if (!isfinite (x[i]) || !isfinite (y[i]))
      return FALSE;
  if (!gr_georef_map_to_lonlat (map->georef, x, y, 5))
    return FALSE;
  for (int i = 0; i < 4; i++) {
    m->footprint_lonlat[2 * i] = x[i];
    m->footprint_lonlat[2 * i + 1] = y[i];
  }
  m->center_lonlat[0] = x[4];
  m->center_lonlat[1] = y[4];
  return TRUE;
#else
  (void) map;
  (void) m;
  return FALSE;
#endif
}

void
gst_nmi_register_fill_meta (const GstNmiRegisterMap * map, const GrRegisterResult * res,
    gint fw, gint fh, GstNmiRegisterMeta * m)
{
  m->flags |= res->flags;
  if (res->has_prior && (res->flags & GR_REGISTER_FULL_SEARCH)) {
    m->prior_x = res->prior[2];
    m->prior_y = res->prior[5];
    m->prior_scale = res->prior[0];
  }
  m->keypoints = (guint) res->keypoints;
  m->matches = (guint) res->matches;
  /* the CRS says what the map fields mean even for a frame that has none */
  m->crs = map->crs;
  m->epsg = map->epsg;
  if (!res->has_transform)
    return;
  m->has_transform = TRUE;
  m->inliers = (guint) res->inliers;
  m->rms = res->rms;
  m->predicted_error = res->predicted_error;
  memcpy (m->frame_to_control, res->h, sizeof m->frame_to_control);
  m->camera_fit = res->camera_fit;
  if (res->undistorted) {
    const GrCamera *L = &res->lens;
    const double lens[9] = { L->fx, L->fy, L->cx, L->cy, L->k1, L->k2, L->k3, L->p1,
      L->p2
    };
    m->undistorted = TRUE;
    memcpy (m->lens, lens, sizeof m->lens);
  }
  /* corners and centre through the full mapping (the lens, then the transform) */
  const double corners[8] = { 0, 0, fw, 0, fw, fh, 0, fh };
  for (int i = 0; i < 4; i++)
    if (!gr_register_result_apply (res, corners[2 * i], corners[2 * i + 1],
            &m->footprint_control[2 * i], &m->footprint_control[2 * i + 1]))
      m->footprint_control[2 * i] = m->footprint_control[2 * i + 1] = NAN;
  if (!gr_register_result_apply (res, fw / 2.0, fh / 2.0, &m->center_control[0],
          &m->center_control[1]))
    m->center_control[0] = m->center_control[1] = NAN;
  if (!map->has_geo)
    return;
  const double *g = map->geo;
  const double G[9] = { g[1], g[2], g[0], g[4], g[5], g[3], 0, 0, 1 };
  gr_mat3_mul (G, m->frame_to_control, m->frame_to_map);
  for (int i = 0; i < 4; i++)
    gr_geo_apply (g, m->footprint_control[2 * i], m->footprint_control[2 * i + 1],
        &m->footprint_map[2 * i], &m->footprint_map[2 * i + 1]);
  gr_geo_apply (g, m->center_control[0], m->center_control[1], &m->center_map[0],
      &m->center_map[1]);
  m->has_map = TRUE;
  if (map->georef)
    m->has_lonlat = to_lonlat (map, m);
}

static void
set_double_array (GstStructure * st, const gchar * name, const gdouble * v, gint n)
{
  GValue arr = G_VALUE_INIT;
  g_value_init (&arr, GST_TYPE_ARRAY);
  for (gint i = 0; i < n; i++) {
    GValue d = G_VALUE_INIT;
    g_value_init (&d, G_TYPE_DOUBLE);
    g_value_set_double (&d, v[i]);
    gst_value_array_append_and_take_value (&arr, &d);
  }
  gst_structure_take_value (st, name, &arr);
}

static const gchar *
model_nick (guint model)
{
  GEnumClass *klass = g_type_class_ref (GST_TYPE_NMI_REGISTER_MODEL);
  GEnumValue *v = g_enum_get_value (klass, (gint) model);
  const gchar *nick = v ? v->value_nick : "?";
  g_type_class_unref (klass);   /* the element's class keeps it alive */
  return nick;
}

GstStructure *
gst_nmi_register_result_structure (const GstNmiRegisterMeta * m,
    const GstNmiRegisterMessageInfo * info)
{
  GstStructure *st = gst_structure_new ("nmiregister",
      "frame", G_TYPE_UINT64, info->frame,
      "timestamp", G_TYPE_UINT64, info->timestamp,
      "backend", G_TYPE_STRING, info->backend,
      "input-memory", G_TYPE_STRING, info->input_memory,
      "flags", G_TYPE_UINT, m->flags,
      "model", G_TYPE_STRING, model_nick (m->model),
      "has-transform", G_TYPE_BOOLEAN, m->has_transform,
      "keypoints", G_TYPE_UINT, m->keypoints,
      "matches", G_TYPE_UINT, m->matches,
      "inliers", G_TYPE_UINT, m->inliers,
      "rms", G_TYPE_DOUBLE, m->rms,
      "predicted-error", G_TYPE_DOUBLE, m->predicted_error,
      "prior-x", G_TYPE_DOUBLE, m->prior_x,
      "prior-y", G_TYPE_DOUBLE, m->prior_y,
      "prior-scale", G_TYPE_DOUBLE, m->prior_scale,
      "register-ms", G_TYPE_DOUBLE, info->register_ms,
      "read-ms", G_TYPE_DOUBLE, info->read_ms,
      "keypoints-ms", G_TYPE_DOUBLE, info->keypoints_ms,
      "overlay-ms", G_TYPE_DOUBLE, info->overlay_ms, NULL);
  if (m->crs)
    gst_structure_set (st, "crs", G_TYPE_STRING, m->crs, "epsg", G_TYPE_INT, m->epsg,
        NULL);
  if (!m->has_transform)
    return st;
  set_double_array (st, "frame-to-control", m->frame_to_control, 9);
  /* the transforms take undistorted frame pixels: say so, with the lens */
  gst_structure_set (st, "undistorted", G_TYPE_BOOLEAN, m->undistorted,
      "camera-fit", G_TYPE_BOOLEAN, m->camera_fit, NULL);
  if (m->undistorted)
    set_double_array (st, "lens", m->lens, 9);
  set_double_array (st, "footprint-control", m->footprint_control, 8);
  gst_structure_set (st, "center-x", G_TYPE_DOUBLE, m->center_control[0],
      "center-y", G_TYPE_DOUBLE, m->center_control[1], NULL);
  if (m->has_map) {
    set_double_array (st, "frame-to-map", m->frame_to_map, 9);
    set_double_array (st, "footprint-map", m->footprint_map, 8);
    gst_structure_set (st, "center-map-x", G_TYPE_DOUBLE, m->center_map[0],
        "center-map-y", G_TYPE_DOUBLE, m->center_map[1], NULL);
  }
  if (m->has_lonlat) {
    /* plain doubles, as georegexport's message: readable without python3-gst-1.0 */
    static const gchar *const names[4][2] = { {"tl-lon", "tl-lat"}, {"tr-lon", "tr-lat"},
    {"br-lon", "br-lat"}, {"bl-lon", "bl-lat"}
    };
    gst_structure_set (st, "center-lon", G_TYPE_DOUBLE, m->center_lonlat[0],
        "center-lat", G_TYPE_DOUBLE, m->center_lonlat[1], NULL);
    for (int i = 0; i < 4; i++)
      gst_structure_set (st, names[i][0], G_TYPE_DOUBLE, m->footprint_lonlat[2 * i],
          names[i][1], G_TYPE_DOUBLE, m->footprint_lonlat[2 * i + 1], NULL);
  }
  return st;
}

/* the meta's intrinsics scaled to the fw x fh frame, distortion included */
static void
meta_camera (const GstGeoregPoseMeta * pm, gint fw, gint fh, GrCamera * cam)
{
  /* intrinsics of another resolution of the same image: scaled about pixel corners
   * (OpenCV's centres sit half a pixel in) */
  const gdouble sx = pm->image_width > 0 ? (gdouble) fw / pm->image_width : 1.0;
  const gdouble sy = pm->image_height > 0 ? (gdouble) fh / pm->image_height : 1.0;
  memset (cam, 0, sizeof *cam);
  cam->width = fw;
  cam->height = fh;
  cam->fx = pm->fx * sx;
  cam->fy = pm->fy * sy;
  cam->cx = (pm->cx + 0.5) * sx - 0.5;
  cam->cy = (pm->cy + 0.5) * sy - 0.5;
  cam->k1 = pm->k1;
  cam->k2 = pm->k2;
  cam->k3 = pm->k3;
  cam->p1 = pm->p1;
  cam->p2 = pm->p2;
}

static gboolean
meta_distorts (const GstGeoregPoseMeta * pm)
{
  return pm->k1 != 0.0 || pm->k2 != 0.0 || pm->k3 != 0.0 || pm->p1 != 0.0 ||
      pm->p2 != 0.0;
}

gboolean
gst_nmi_register_frame_lens (GstBuffer * buf, gint fw, gint fh, GrCamera * cam)
{
  const GstGeoregPoseMeta *pm = gst_buffer_get_georeg_pose_meta (buf);
  if (!pm || !pm->have_intrinsics || !meta_distorts (pm))
    return FALSE;
  meta_camera (pm, fw, fh, cam);
  return TRUE;
}

gboolean
gst_nmi_register_frame_calibrated (GstBuffer * buf, gint fw, gint fh, GrCamera * cam)
{
  const GstGeoregPoseMeta *pm = gst_buffer_get_georeg_pose_meta (buf);
  /* a focal length from EXIF alone (a sensor width from a table, a 35 mm equivalent)
   * is a few percent off: not calibrated */
  if (!pm || !pm->have_intrinsics || !((pm->sources &
              (GST_GEOREG_POSE_SOURCE_CALIBRATION | GST_GEOREG_POSE_SOURCE_APP)) ||
          meta_distorts (pm)))
    return FALSE;
  meta_camera (pm, fw, fh, cam);
  return TRUE;
}
