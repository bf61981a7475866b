/* georeg: a frame's registration result on the map (gst/gstgeoregfootprint.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>

#include "gstgeoregfootprint.h"
#include "gstgeoregprops.h"
#include "gstgeoregcrs.h"
#include "georeg-meta.h"
#include "nmiregister-meta.h"
#include "fit.h"
#include "georeg-results.h"

gboolean
gst_georeg_lens_from_meta (const GstNmiRegisterMeta * m, GrCamera * cam)
{
  if (!m->undistorted)
    return FALSE;
  const double *L = m->lens;
  *cam = (GrCamera) { 0, 0, L[0], L[1], L[2], L[3], L[4], L[5], L[6], L[7], L[8] };
  return TRUE;
}

/* The frame's size from its transform: the full mapping takes (w, h) onto the
 * footprint's third corner, so its inverse (the inverse transform, then the lens's
 * distortion) gives it back (any caps, no video info needed). */
static gboolean
frame_size_from_meta (const GstNmiRegisterMeta * m, double *w, double *h)
{
  double inv[9];
  if (!gr_mat3_inverse (m->frame_to_control, inv)
      || !gr_fit_apply (inv, m->footprint_control[4], m->footprint_control[5], w, h))
    return FALSE;
  GrCamera lens;
  if (gst_georeg_lens_from_meta (m, &lens)) {
    /* pixel corners <-> OpenCV's pixel centres around the model */
    gr_camera_distort (&lens, *w - 0.5, *h - 0.5, w, h);
    *w += 0.5;
    *h += 0.5;
  }
  return *w > 0 && *h > 0;
}

/* Control pixel corners -> map -> (lon, lat); FALSE when PROJ fails. */
static gboolean
control_to_lonlat (GrGeoRef * g, double px, double py, double *mx, double *my, double *lon,
    double *lat)
{
  gr_georef_pixel_to_map (g, px, py, mx, my);
  *lon = *mx;
  *lat = *my;
  return gr_georef_map_to_lonlat (g, lon, lat, 1);
}

void
gst_georeg_footprint_from_buffer (GrGeoRef * georef, GstBuffer * buf, guint64 frame,
    GrFootprint * f, gchar ** flag_names)
{
  GstNmiRegisterMeta *rm = gst_buffer_get_nmi_register_meta (buf);
  GstNmiLocalizeMeta *lm = gst_buffer_get_nmi_localize_meta (buf);
  f->frame = frame;
  f->timestamp_ns = GST_BUFFER_PTS_IS_VALID (buf) ? (gint64) GST_BUFFER_PTS (buf) : -1;
  f->crs = gr_georef_crs_name (georef);
  f->rms_px = f->heading_deg = f->gsd_m = f->predicted_error_px = NAN;
  f->centre_lon = f->centre_lat = f->centre_x = f->centre_y = NAN;
  for (int i = 0; i < 4; i++)
    f->corner_lon[i] = f->corner_lat[i] = f->corner_x[i] = f->corner_y[i] = NAN;
  f->quality = "failed";

  if (rm) {
    f->flags = rm->flags;
    *flag_names = georeg_register_flags_to_string (rm->flags);
    f->inliers = rm->inliers;
    f->rms_px = rm->rms;
    f->predicted_error_px = rm->predicted_error;
  } else if (lm) {
    f->flags = lm->flags;
*flag_names = georeg_localize_flags_to_string (lm->flags);
  }

  double w, h;
  if (rm && rm->has_transform && frame_size_from_meta (rm, &w, &h)) {
    /* every point through the full mapping (the lens, then the transform), which
     * also refuses a corner behind the camera: the footprint would be no polygon */
    gboolean ok = TRUE;
    const double cx4[4] = { 0, w, w, 0 }, cy4[4] = { 0, 0, h, h };
    double x, y;
    for (int i = 0; i < 4; i++)
      ok = ok && gst_nmi_register_meta_frame_to_control (rm, cx4[i], cy4[i], &x, &y);
    for (int i = 0; i < 4 && ok; i++)
      ok = control_to_lonlat (georef, rm->footprint_control[2 * i],
          rm->footprint_control[2 * i + 1], &f->corner_x[i], &f->corner_y[i],
          &f->corner_lon[i], &f->corner_lat[i]);
    double cx, cy, tx, ty, tlon, tlat;
    ok = ok && gst_nmi_register_meta_frame_to_control (rm, w / 2, h / 2, &cx, &cy)
        && control_to_lonlat (georef, cx, cy, &f->centre_x, &f->centre_y,
        &f->centre_lon, &f->centre_lat)
        && gst_nmi_register_meta_frame_to_control (rm, w / 2, 0, &tx, &ty)
        && control_to_lonlat (georef, tx, ty, &tx, &ty, &tlon, &tlat);
    if (ok) {
      f->geometry = 2;
      /* the frame's up direction: from its centre to the middle of its top edge */
      f->heading_deg = gr_geo_bearing_deg (f->centre_lon, f->centre_lat, tlon, tlat);
      f->gsd_m = sqrt (gr_geo_area_m2 (f->corner_lon, f->corner_lat, 4) / (w * h));
      const guint doubt = gst_nmi_register_meta_doubt (rm, lm);
      f->quality = doubt ? "doubtful" : "registered";
      if (doubt & GST_NMI_REGISTER_DOUBT_COARSE) {
        /* say why: the coarse flags, prefixed, after nmiregister's own */
        gchar *coarse = georeg_localize_flags_to_string (lm->flags &
            GST_NMI_REGISTER_COARSE_DOUBT);
        gchar **names = g_strsplit (coarse, ",", -1);
        GString *all = g_string_new (*flag_names);
        for (gchar ** n = names; *n; n++)
          g_string_append_printf (all, "%scoarse-%s", all->len ? "," : "", *n);
        g_strfreev (names);
        g_free (coarse);
        g_free (*flag_names);
        *flag_names = g_string_free (all, FALSE);
      }
      return;
    }
  }
  /* no footprint: the coarse centre, when the localization has one */
  if (lm && isfinite (lm->center_x) && isfinite (lm->center_y)
      && control_to_lonlat (georef, lm->center_x, lm->center_y, &f->centre_x,
          &f->centre_y, &f->centre_lon, &f->centre_lat)) {
    f->geometry = 1;
    f->quality = "coarse";
  }
}

void
gst_georeg_map_props_install (GObjectClass * klass, guint first_id)
{
  g_object_class_install_property (klass, first_id,
      gst_georeg_param_spec_control_location (GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (klass, first_id + 1,
      gst_georeg_param_spec_crs (GST_PARAM_MUTABLE_READY));
}

gboolean
gst_georeg_map_props_set (GstGeoregMapProps * props, guint first_id, guint prop_id,
    const GValue * value)
{
  gchar **field = prop_id == first_id ? &props->control_location :
      prop_id == first_id + 1 ? &props->crs : NULL;
  if (!field)
    return FALSE;
  g_free (*field);
  *field = g_value_dup_string (value);
  return TRUE;
}

gboolean
gst_georeg_map_props_get (const GstGeoregMapProps * props, guint first_id, guint prop_id,
    GValue * value)
{
  if (prop_id == first_id)
    g_value_set_string (value, props->control_location);
  else if (prop_id == first_id + 1)
    g_value_set_string (value, props->crs);
  else
    return FALSE;
  return TRUE;
}

void
gst_georeg_map_props_clear (GstGeoregMapProps * props)
{
  g_clear_pointer (&props->control_location, g_free);
  g_clear_pointer (&props->crs, g_free);
}

/* The georeference of the control (path, optional CRS string), or NULL after posting
 * the error. */
static GrGeoRef *
open_control_georef (GstElement * element, const gchar * control, const gchar * crs)
{
  char err[1024];
  GrGeoRef *g = NULL;
  if (!control || !*control) {
    GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND, ("No control image given."),
        ("Set control-location to the georeferenced control the frames were registered "
            "on."));
    return NULL;
  }
  GrStatus st = gr_georef_open (control, crs, &g, err, sizeof err);
  if (st == GR_ERR_IO)
    GST_ELEMENT_ERROR (element, RESOURCE, OPEN_READ, ("Could not open the control '%s'.",
            control), ("%s", err));
  else if (st != GR_OK)
    GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS, ("The control '%s' has no usable "
            "georeference.", control), ("%s", err));
  else
    GST_INFO_OBJECT (element, "control CRS %s", gr_georef_crs_name (g));
  return g;
}

GrGeoRef *
gst_georeg_map_props_open (GstElement * element, GstGeoregMapProps * props)
{
  GST_OBJECT_LOCK (element);
  gchar *control = g_strdup (props->control_location), *crs = g_strdup (props->crs);
  GST_OBJECT_UNLOCK (element);
  GrGeoRef *g = open_control_georef (element, control, crs);
  g_free (control);
  g_free (crs);
  return g;
}
