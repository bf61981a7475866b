/* nmiregister's optional drawn overlay: what the registration of one frame saw
 * (keypoints, matches and their residuals, where the coarse prior put the frame),
 * rasterized into a GstVideoOverlayComposition the size of the frame.  The element
 * either attaches it as a GstVideoOverlayCompositionMeta (the frame is untouched;
 * sinks that render the meta show it) or blends it into the frame.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_NMI_REGISTER_OVERLAY_H__
#define __GST_NMI_REGISTER_OVERLAY_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "keypoints.h"

G_BEGIN_DECLS

/* What `overlay` does (property of nmiregister). */
typedef enum {
  GST_NMI_REGISTER_OVERLAY_NONE = 0,    /* no overlay */
  GST_NMI_REGISTER_OVERLAY_META = 1,    /* attach a GstVideoOverlayCompositionMeta */
  GST_NMI_REGISTER_OVERLAY_DRAW = 2,    /* blend into the frame's pixels */
} GstNmiRegisterOverlayMode;

#define GST_TYPE_NMI_REGISTER_OVERLAY_MODE (gst_nmi_register_overlay_mode_get_type ())
GType gst_nmi_register_overlay_mode_get_type (void);

/* Residual vectors are drawn this many times their length: inlier residuals are
 * sub-pixel and would be invisible at 1x. */
#define GST_NMI_REGISTER_OVERLAY_RESIDUAL_SCALE 10.0

/* Colours, 0xAARRGGBB (docs/nmiregister.md, "Overlay"). */
#define GST_NMI_REGISTER_OVERLAY_KEYPOINT  0xffb4b4b4u  /* detected, no usable match */
#define GST_NMI_REGISTER_OVERLAY_INLIER    0xff20e020u  /* match consistent with the fit */
#define GST_NMI_REGISTER_OVERLAY_RESIDUAL  0xffffff00u  /* inlier residual, x10 */
#define GST_NMI_REGISTER_OVERLAY_OUTLIER   0xffff2020u  /* match the fit rejected */
#define GST_NMI_REGISTER_OVERLAY_PRIOR     0xff00a0ffu  /* the coarse prior's footprint */
#define GST_NMI_REGISTER_OVERLAY_GOOD      0xff20e020u  /* border: transform, no doubt */
#define GST_NMI_REGISTER_OVERLAY_DOUBTFUL  0xffffa000u  /* border: transform, flagged */
#define GST_NMI_REGISTER_OVERLAY_FAILED    0xffff2020u  /* border: no transform */

/* One frame's registration as the overlay draws it.  Keypoints and matches are in
 * pixel-index coordinates (centre of pixel (0, 0) = (0, 0)); the two transforms are
 * in the meta's pixel-corner convention. */
typedef struct {
  gint width, height;                 /* the frame */
  const GrKeypoint *keypoints;        /* every keypoint detected */
  gint n_keypoints;
  const gdouble *match_frame;         /* the last fit's matches: frame x y pairs, */
  const gdouble *match_control;       /* control x y pairs, */
  const guint8 *inlier;               /* and whether each is an inlier */
  gint n_matches;
  gboolean has_transform;
  gdouble frame_to_control[9];        /* the fit (pixel corners), when has_transform */
  gdouble frame_to_control_index[9];  /* the same in pixel-index coordinates */
  gboolean has_prior;
  gdouble prior[9];                   /* the coarse prior, frame -> control (corners) */
  gboolean doubtful;                  /* the result carries a doubt flag */
} GstNmiRegisterOverlayData;

/* Renders the overlay (transparent where nothing is drawn) as one rectangle the size
 * of the frame, for a GstVideoOverlayCompositionMeta.  NULL when out of memory. */
GstVideoOverlayComposition *gst_nmi_register_overlay_render (const
    GstNmiRegisterOverlayData * d);

typedef enum {
  GST_NMI_REGISTER_OVERLAY_DRAW_OK = 0,
  GST_NMI_REGISTER_OVERLAY_DRAW_NO_MEMORY,   /* the canvas could not be allocated */
  GST_NMI_REGISTER_OVERLAY_DRAW_FORMAT,      /* gst_video_blend cannot write the format */
} GstNmiRegisterOverlayDrawResult;

/* Renders the overlay and blends it into the frame (mapped for writing), in bands of
 * rows on several threads: the same pixels as blending gst_nmi_register_overlay_render's
 * composition with gst_video_overlay_composition_blend, in a fraction of the time. */
GstNmiRegisterOverlayDrawResult gst_nmi_register_overlay_draw (const
    GstNmiRegisterOverlayData * d, GstVideoFrame * frame);

G_END_DECLS

#endif
