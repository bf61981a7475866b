/* nmilocalize: coarse localization of frames over control imagery by dense NMI.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_NMI_LOCALIZE_H__
#define __GST_NMI_LOCALIZE_H__

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include <gst/video/video.h>

#include "gstgeoregcontrol.h"
#include "gstgeoregutils.h"
#include "gstgeoregcuda.h"
#include "nmi_dense.h"

G_BEGIN_DECLS

#define GST_TYPE_NMI_LOCALIZE (gst_nmi_localize_get_type ())
G_DECLARE_FINAL_TYPE (GstNmiLocalize, gst_nmi_localize, GST, NMI_LOCALIZE, GstBaseTransform)

/* Properties, read under the object lock and copied per frame. */
typedef struct {
  gchar *control_location;
  guint band;
  gint control_nodata;
  gdouble control_scale;
  gdouble frame_scale;
  gdouble search_x, search_y, search_radius;
  gint nodata;
  gchar *mask_location;
  GstGeoregBins bins;
  gdouble bin_low, bin_high;
  gdouble min_overlap;
  gint peak_exclusion;
  gdouble min_peak_ratio;
  gchar *score_map_location;
  GrBackend backend;
  gint cuda_device_id;
  gboolean post_messages;
} GstNmiLocalizeSettings;

struct _GstNmiLocalize {
  GstBaseTransform parent;

  GstNmiLocalizeSettings settings;

  /* prepared in start(): the shared full-resolution control (held until stop, so
   * elements naming the same file share one copy), the engine and the control at
   * search scale inside it */
  GstGeoregControl *control;
  GrNmiDense *engine;
  gint ctl_w, ctl_h;            /* control at search scale */
  gint ctl_full_w, ctl_full_h;
  gboolean has_geo;
  gdouble geo[6];
  GrPlaneF frame_mask;          /* mask-location, full frame size; data NULL if unset */

  /* negotiated */
  GstVideoInfo info;
  gint tpl_w, tpl_h;            /* frame at search scale */
  GstCaps *refused_caps;        /* caps whose fault was posted (set_caps) */

  /* per-frame scratch, reused */
  GrPlaneF full, small;
  guint8 *bins;
  gdouble *scores;              /* score map of the search region */
  gint32 *valid;                /* jointly valid pixels per translation */
  gsize scores_len;
  guint64 frame_count;
  gboolean announced;           /* the backend was reported on the bus */

  /* CUDA memory: context, device conversion of CUDA frames (gst/gstgeoregcuda.h) */
  GstGeoregCuda cuda;
  GstGeoregInput input;         /* where the last frame was read from */
};

GST_ELEMENT_REGISTER_DECLARE (nmilocalize);

G_END_DECLS

#endif
