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
};

GType gst_nmi_localize_meta_api_get_type (void);
#define GST_NMI_LOCALIZE_META_API_TYPE (gst_nmi_localize_meta_api_get_type ())
const GstMetaInfo *gst_nmi_localize_meta_get_info (void);
#define GST_NMI_LOCALIZE_META_INFO (gst_nmi_localize_meta_get_info ())

#define gst_buffer_get_nmi_localize_meta(b) \
  ((GstNmiLocalizeMeta *) gst_buffer_get_meta ((b), GST_NMI_LOCALIZE_META_API_TYPE))

/* Adds a meta with every coordinate NAN and flags 0; the caller fills it. */
GstNmiLocalizeMeta *gst_buffer_add_nmi_localize_meta (GstBuffer * buffer);

G_END_DECLS

#endif
