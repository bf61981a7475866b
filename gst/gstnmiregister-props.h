/* nmiregister's own properties (the shared ones are the base's, gstgeoregbase.h): one
 * set of param specs, their defaults and the settings they fill.  Private to the
 * element's sources (gstnmiregister*.c), not installed.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_NMI_REGISTER_PROPS_H__
#define __GST_NMI_REGISTER_PROPS_H__

#include <gst/gst.h>

#include "gstgeoregbase.h"
#include "gstnmiregister.h"
#include "gstnmiregisteroverlay.h"
#include "fit.h"

G_BEGIN_DECLS

/* Properties, read under the object lock and copied per frame. */
typedef struct {
  GstGeoregBaseSettings c;      /* the base's, filled by each snapshot */
  guint levels;
  gint max_keypoints;
  gint template_size, window_size;
  gboolean refine;
  gint refine_window;
  GrModel model;
  gdouble ransac_threshold;
  gdouble min_peak_ratio;
  guint min_inliers;
  gdouble min_inlier_ratio;
  gdouble max_predicted_error;
  gboolean camera_fit;
  GstNmiRegisterCoarseFallback coarse_fallback;
  gdouble initial_offset_x, initial_offset_y, initial_scale;
  GstNmiRegisterOverlayMode overlay;
  gchar *crs;                   /* owned by the element; a snapshot borrows it */
} GstNmiRegisterSettings;

/* Every setting at its default (crs NULL). */
void gst_nmi_register_settings_init (GstNmiRegisterSettings * s);
/* Frees what the settings own (crs). */
void gst_nmi_register_settings_clear (GstNmiRegisterSettings * s);

/* Installs nmiregister's own properties on its class. */
void gst_nmi_register_install_properties (GObjectClass * gobject_class);

/* Sets / reads property prop_id in s (the caller holds the object lock).  FALSE when
 * prop_id is not one of nmiregister's own (the base's, then).  A refused value
 * leaves s as it was and returns, in *warning (g_free), what to warn about once the
 * lock is released. */
gboolean gst_nmi_register_settings_set (GstNmiRegisterSettings * s, guint prop_id,
    const GValue * value, gchar ** warning);
gboolean gst_nmi_register_settings_get (const GstNmiRegisterSettings * s,
    guint prop_id, GValue * value);

G_END_DECLS

#endif
