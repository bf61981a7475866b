/* georeg: public result metas.  Applications include this header and link
 * gstreamer-georeg-1.0 (pkg-config) to read the results that georeg elements attach
 * to buffers.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_META_H__
#define __GST_GEOREG_META_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* ---- nmilocalize ---------------------------------------------------------------- */

/**
 * GstNmiLocalizeFlags:
 * Documented conditions of a localization result.  A result with NO_VALID_PIXELS or
 * NO_OVERLAP carries no position (the coordinates are NAN).
 */
typedef enum {
  GST_NMI_LOCALIZE_FLAG_NONE = 0,
  /* the frame had no valid pixel after masking and scaling */
  GST_NMI_LOCALIZE_FLAG_NO_VALID_PIXELS = 1 << 0,
  /* no translation of the search region had enough jointly valid pixels (min-overlap) */
  GST_NMI_LOCALIZE_FLAG_NO_OVERLAP = 1 << 1,
  /* the best translation lies on the edge of the search region: the frame may lie
   * beyond it, and the sub-pixel refinement was skipped on that axis */
  GST_NMI_LOCALIZE_FLAG_AT_BORDER = 1 << 2,
  /* peak-ratio below the element's min-peak-ratio: another place scores almost as well */
  GST_NMI_LOCALIZE_FLAG_AMBIGUOUS = 1 << 3,
  /* no separated second peak existed (tiny search region): peak-ratio is NAN */
  GST_NMI_LOCALIZE_FLAG_NO_SECOND_PEAK = 1 << 4,
  /* the heading was not known (or the prior's heading was rejected): a sweep of
   * rotations found it; heading_deg is the sweep's result */
  GST_NMI_LOCALIZE_FLAG_HEADING_SEARCHED = 1 << 5,
  /* the ground resolution was not known well: a range of scales was searched */
  GST_NMI_LOCALIZE_FLAG_SCALE_SEARCHED = 1 << 6,
  /* the frame overlaps valid control pixels by less than the element's min-overlap
   * at the best place (it hangs over the control's edge or its no-data): the position
   * rests on a small part of the frame */
  GST_NMI_LOCALIZE_FLAG_LOW_OVERLAP = 1 << 7,
  /* the search window was limited by a prior (pose, telemetry or an upstream result) */
  GST_NMI_LOCALIZE_FLAG_PRIOR_USED = 1 << 8,
  /* the result disagrees with the prior beyond its stated uncertainty (position,
   * heading or scale), or frame_to_control is degenerate: do not trust it as good */
  GST_NMI_LOCALIZE_FLAG_IMPLAUSIBLE = 1 << 9,
  /* several places scored too alike to tell at the fine level, and registering each
   * (keypoint templates by sparse NMI, a robust homography, as nmiregister does) told
   * them apart: the place kept had at least twice the inliers of any other (and the
   * minimum), so AMBIGUOUS is not set although peak_ratio is low */
  GST_NMI_LOCALIZE_FLAG_VERIFIED = 1 << 10,
  /* the control is read in windows around each frame's prior (too large to hold
   * whole: docs/controls.md) and this frame has no prior position: it was not
   * searched.  Always with NO_OVERLAP (no position).  Set by the element, never by
   * GrLocalize (whose flags share bits 0-15) */
  GST_NMI_LOCALIZE_FLAG_PRIOR_NEEDED = 1 << 16,
} GstNmiLocalizeFlags;

typedef struct _GstNmiLocalizeMeta GstNmiLocalizeMeta;

/**
 * GstNmiLocalizeMeta:
 * The coarse position of a frame over the control image.
 *
 * Coordinates follow the pixel-corner convention: (0, 0) is the top-left corner of the
 * top-left pixel.  "Search scale" is the grid the search ran on: the control resampled
 * by control_scale, the frame by frame_scale.
 */
struct _GstNmiLocalizeMeta {
  GstMeta meta;

  guint flags;                  /* GstNmiLocalizeFlags */
  gdouble offset_x, offset_y;   /* the frame's top-left at search scale, sub-pixel */
  gdouble control_x, control_y; /* the same in full-resolution control pixels */
  gdouble center_x, center_y;   /* the frame centre in full-resolution control pixels */
  gdouble frame_scale;          /* frame pixels -> search pixels */
  gdouble control_scale;        /* control pixels -> search pixels */
  gdouble score;                /* NMI at the best translation, in [1, 2] */
  gdouble second_score;         /* best separated local maximum, NAN if none */
  gdouble peak_ratio;           /* (score - 1) / (second_score - 1) */
  guint64 valid_pixels;         /* jointly valid pixels at the best translation */
  gboolean has_map;             /* the control is georeferenced: map_x/map_y are set */
  gdouble map_x, map_y;         /* map coordinates of the frame centre */

  /* ---- appended for any heading and ground resolution (issue 13); ABI: append only */

  /* frame_to_control is set: the full coarse result as a homography, the start that
   * nmiregister refines.  Without it (an older producer) the coarse result is the pure
   * translation and scale in the fields above. */
  gboolean has_prior_transform;
  /* row-major 3x3 homography, full-resolution frame pixels -> full-resolution control
   * pixels, both in the pixel-corner convention; NAN when has_prior_transform is FALSE */
  gdouble frame_to_control[9];
  /* the direction of the frame's "up" (its -y axis) in the control, in degrees
   * clockwise from the control's up (north for a north-up map), in [0, 360); NAN if
   * unknown */
  gdouble heading_deg;
  /* control pixels per frame pixel at the frame centre (sqrt of the local area ratio);
   * NAN if unknown */
  gdouble scale;
  /* ground sample distance of the frame at its centre, in the control CRS's linear
   * units per frame pixel; NAN unless has_map */
  gdouble gsd;
  /* fraction of the frame's valid pixels that land on valid control pixels at the
   * best place, in [0, 1]; NAN if not measured */
  gdouble overlap;
};

GType gst_nmi_localize_meta_api_get_type (void);
#define GST_NMI_LOCALIZE_META_API_TYPE (gst_nmi_localize_meta_api_get_type ())
const GstMetaInfo *gst_nmi_localize_meta_get_info (void);
#define GST_NMI_LOCALIZE_META_INFO (gst_nmi_localize_meta_get_info ())

#define gst_buffer_get_nmi_localize_meta(b) \
  ((GstNmiLocalizeMeta *) gst_buffer_get_meta ((b), GST_NMI_LOCALIZE_META_API_TYPE))

/* Adds a meta with every coordinate NAN and flags 0; the caller fills it. */
GstNmiLocalizeMeta *gst_buffer_add_nmi_localize_meta (GstBuffer * buffer);

/* Sets frame_to_control (and has_prior_transform) from a frame->control homography of a
 * frame_width x frame_height frame, and derives from it center_x/center_y, heading_deg
 * and scale at the frame centre (the other fields are left as they are).  Returns FALSE,
 * changing nothing, when the homography is not finite or maps the centre to infinity. */
gboolean gst_nmi_localize_meta_set_transform (GstNmiLocalizeMeta * meta,
    const gdouble frame_to_control[9], gint frame_width, gint frame_height);

G_END_DECLS

#endif
