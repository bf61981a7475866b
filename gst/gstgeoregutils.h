/* Shared wiring of the georeg elements: enums, frame -> plane conversion.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_UTILS_H__
#define __GST_GEOREG_UTILS_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gr_common.h"
#include "image.h"

G_BEGIN_DECLS

/* The video formats every frame-consuming element accepts: the luma (or gray value)
 * is used, alpha is the validity mask. */
#define GST_GEOREG_VIDEO_FORMATS "{ GRAY8, GRAY16_LE, RGBA, BGRA, I420, NV12 }"

#define GST_TYPE_GEOREG_BACKEND (gst_georeg_backend_get_type ())
GType gst_georeg_backend_get_type (void);

/* How pixel values become the 256 histogram bins (kernels/image.h GrBinMode, plus
 * AUTO: identity for 8-bit data, min-max for deeper data). */
typedef enum {
  GST_GEOREG_BINS_AUTO = -1,
  GST_GEOREG_BINS_IDENTITY = GR_BINS_IDENTITY,
  GST_GEOREG_BINS_MIN_MAX = GR_BINS_MINMAX,
  GST_GEOREG_BINS_FIXED = GR_BINS_FIXED,
  GST_GEOREG_BINS_PERCENTILE = GR_BINS_PERCENTILE,
} GstGeoregBins;

#define GST_TYPE_GEOREG_BINS (gst_georeg_bins_get_type ())
GType gst_georeg_bins_get_type (void);

/* The concrete mode for data of `bit_depth` bits. */
GrBinMode gst_georeg_bins_resolve (GstGeoregBins bins, int bit_depth);

/* Bits per value of the frame's gray/luma data (8 or 16). */
gint gst_georeg_video_format_depth (GstVideoFormat format);

/* Converts a mapped frame to a float plane: gray value or luma (BT.601 for RGBA/BGRA,
 * the Y plane for I420/NV12) and a mask: alpha >= 128 for RGBA/BGRA, and value !=
 * nodata when nodata >= 0 (compared with the gray value, or with the rounded luma).
 * `out` is reused when its size fits (zero it before the first call).  FALSE when
 * out of memory. */
gboolean gst_georeg_frame_to_plane (const GstVideoFrame * frame, gint nodata,
    GrPlaneF * out);

/* Applies an external mask (nonzero = valid, same size) to a plane, creating the
 * plane's mask if it has none.  FALSE when out of memory. */
gboolean gst_georeg_plane_and_mask (GrPlaneF * plane, const GrPlaneF * mask);

/* One ERROR per refused caps: GstBaseTransform retries set_caps with the same caps at
 * every buffer after a refusal (it marks the source pad for reconfiguration), and an
 * element that posts its fault each time floods the bus (issue 12).  In set_caps:
 * return FALSE quietly when gst_georeg_caps_refused_before (*refused, incaps); after
 * posting the ERROR for a refusal, gst_georeg_caps_refused (element, refused, incaps);
 * on success and in stop, gst_caps_replace (refused, NULL). */
gboolean gst_georeg_caps_refused_before (GstCaps * refused, GstCaps * caps);
void gst_georeg_caps_refused (GstElement * element, GstCaps ** refused, GstCaps * caps);

G_END_DECLS

#endif
