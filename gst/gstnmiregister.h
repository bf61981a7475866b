/* nmiregister: refined registration of frames onto control imagery by sparse NMI
 * keypoint matching and a robust transform fit.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_NMI_REGISTER_H__
#define __GST_NMI_REGISTER_H__

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include <gst/video/video.h>

#include "gstgeoregutils.h"
#include "gstgeoregcuda.h"
#include "gstgeoregcontrol.h"
#include "gstgeoregcontrolcuda.h"
#include "gstnmiregisteroverlay.h"
#include "descriptors.h"
#include "fit.h"
#include "keypoints.h"
#include "nmi_dense.h"
#include "nmi_sparse.h"

G_BEGIN_DECLS

#define GST_TYPE_NMI_REGISTER (gst_nmi_register_get_type ())
G_DECLARE_FINAL_TYPE (GstNmiRegister, gst_nmi_register, GST, NMI_REGISTER, GstBaseTransform)

/* What to do with a frame that carries no GstNmiLocalizeMeta. */
typedef enum {
  GST_NMI_REGISTER_COARSE_NONE = 0,            /* flag NO_COARSE, no registration */
  GST_NMI_REGISTER_COARSE_INITIAL_OFFSET = 1,  /* use initial-offset-x/y, initial-scale */
  GST_NMI_REGISTER_COARSE_FULL_SEARCH = 2,     /* own coarse dense-NMI search */
} GstNmiRegisterCoarseFallback;

#define GST_TYPE_NMI_REGISTER_COARSE_FALLBACK (gst_nmi_register_coarse_fallback_get_type ())
GType gst_nmi_register_coarse_fallback_get_type (void);
#define GST_TYPE_NMI_REGISTER_MODEL (gst_nmi_register_model_get_type ())
GType gst_nmi_register_model_get_type (void);

/* Properties, read under the object lock and copied per frame. */
typedef struct {
  gchar *control_location;
  guint band;
  gint nodata;
  GstGeoregBins bins;
  gdouble bin_low, bin_high;
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
  GstNmiRegisterCoarseFallback coarse_fallback;
  gdouble initial_offset_x, initial_offset_y, initial_scale;
  GrBackend backend;
  gint cuda_device_id;
  gboolean post_messages;
  GstNmiRegisterOverlayMode overlay;
} GstNmiRegisterSettings;

struct _GstNmiRegister {
  GstBaseTransform parent;

  GstNmiRegisterSettings settings;

  /* prepared in start() */
  GstGeoregControl *control;    /* shared full-resolution control (gstgeoregcontrol.h) */
  GrNmiSparse *engine;
  gint ctl_w, ctl_h;
  gdouble ctl_a, ctl_b;         /* the control's value range mapped onto the levels */
  gboolean has_geo;
  gdouble geo[6];

  /* coarse full search (coarse-fallback=full-search), made on first use */
  GrNmiDense *dense;
  gdouble dense_cs;             /* control scale of dense's control */
  gint dense_w, dense_h;

  /* negotiated */
  GstVideoInfo info;

  /* per-frame scratch, reused */
  GrPlaneF full, small;
  guint8 *frame_q;
  guint64 frame_count;
  gboolean announced;
  gboolean warned_no_coarse;

  /* CUDA memory: context, device conversion of CUDA frames (gst/gstgeoregcuda.h) */
  GstGeoregCuda cuda;
  GstGeoregInput input;         /* where the last frame was read from */

  /* the device path (CUDA engine): frames converted, quantized, their keypoints found
   * and their templates cut on the device; only keypoints and scores come back */
  GstGeoregDeviceControl *dctl; /* the shared control levels the engine borrows */
  GrFeatures *kpf;              /* device keypoint detector (gr_keypoints_detect's) */
  gpointer rc;                  /* GrRegisterCuda: value range, levels, templates */
  gint dev;                     /* the engines' device; -1 = host path */
  GrPlaneF dplane;              /* this frame on the device (the converter's memory) */
  const guint8 *dlevels;        /* its levels on the device (rc's memory) */
  gboolean on_device;           /* this frame takes the device path */
  gboolean full_valid;          /* `full` holds this frame (host path, or downloaded) */
  gdouble read_ms, keypoints_ms;        /* this frame's phases (element message) */
  gdouble overlay_ms;                   /* drawing the overlay (0 without one) */
};

GST_ELEMENT_REGISTER_DECLARE (nmiregister);

G_END_DECLS

#endif
