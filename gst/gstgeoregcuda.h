/* CUDA memory wiring of the frame elements (GstGeoregBase: nmilocalize,
 * nmiregister, featurematch): caps with memory:CUDAMemory, GstCudaContext sharing,
 * CUDA buffer pools in allocation queries, and device access to CUDA-memory frames.
 *
 * The context.  Our kernels use the CUDA runtime in the device's primary context.
 * When no neighbour or application hands the element a GstCudaContext, the element
 * makes one that wraps that primary context (at NULL -> READY, before decoders such as
 * nvh264dec open theirs, so that they adopt it through the context query), and CUDA
 * frames then reach the kernels as device pointers (zero copy).  A context made
 * elsewhere (cuCtxCreate, e.g. by the application) is shared as GStreamer expects, but
 * its memory is not addressable from the primary context: such frames are mapped to
 * the host (GstCudaMemory downloads them) and take the system-memory path, with the
 * same results.
 *
 * Built without gstreamer-cuda-1.0 (GR_HAVE_GST_CUDA 0) every function is a no-op
 * and the caps are system memory only.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_CUDA_H__
#define __GST_GEOREG_CUDA_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gr_common.h"

G_BEGIN_DECLS

#if GR_HAVE_GST_CUDA
#define GST_GEOREG_CUDA_CAPS(formats) \
  GST_VIDEO_CAPS_MAKE_WITH_FEATURES ("memory:CUDAMemory", formats) "; " \
  GST_VIDEO_CAPS_MAKE (formats)
#else
#define GST_GEOREG_CUDA_CAPS(formats) GST_VIDEO_CAPS_MAKE (formats)
#endif

/* Where a frame was read from (reported in element messages as "input-memory"). */
typedef enum {
  GST_GEOREG_INPUT_SYSTEM = 0,      /* system memory */
  GST_GEOREG_INPUT_CUDA_DEVICE = 1, /* CUDA memory read on the device (zero copy) */
  GST_GEOREG_INPUT_CUDA_HOST = 2,   /* CUDA memory mapped to the host (foreign context,
                                     * or the CPU backend) */
} GstGeoregInput;

const gchar *gst_georeg_input_name (GstGeoregInput input);

typedef struct {
  gpointer context;       /* GstCudaContext, NULL = none */
  gint device;            /* its device, -1 = none */
  gboolean zero_copy;     /* it wraps the primary context of `device` */
  gpointer conv;          /* GrFrameCuda of this element, made on first use */
  gint conv_device;       /* its device */
  gboolean caps_cuda;     /* negotiated caps have memory:CUDAMemory */
  gboolean warned;
  gboolean share;         /* frames are shared with the georeg elements downstream
                           * (georeg-frame-meta.h): see "Shared frames" below */
  gboolean frame_mask;    /* a mask is set on the converter (its device planes are
                           * this element's own, never shared) */
  guint64 conversions;    /* frames this element converted (not reused) */
  guint64 kp_reused;      /* frames whose keypoint responses it took as another
                           * element made them (gst_georeg_shared_keypoint_responses) */
  gboolean pool_user;     /* counted among the users of the shared frames' pool */
  gpointer place_key;     /* its pipeline in the placement (gstgeoregplacement.h) */
  gint place_device;      /* the device it counts on there, -1 = not placed */
} GstGeoregCuda;

/* The wiring is owned by GstGeoregBase (gstgeoregbase.c), which calls these from its
 * change_state, set_context, query, propose_allocation and set_caps. */
void gst_georeg_cuda_init (GstGeoregCuda * c);

/* NULL -> READY: unless backend is CPU or no device is usable, finds a GstCudaContext
 * (set by the application, a neighbour's, or a new one over the primary context of
 * device_id; -1 = the device of the pipeline's other georeg elements, else the
 * least-loaded device: gstgeoregplacement.h) for the element.  Never fails: without one, frames in CUDA memory
 * are read through the host. */
void gst_georeg_cuda_open (GstGeoregCuda * c, GstElement * element, GrBackend backend,
    gint device_id);
/* READY -> NULL (and finalize): drops the context and the converter. */
void gst_georeg_cuda_close (GstGeoregCuda * c);

/* The device the element's engines should use: device_id when >= 0, else the
 * context's device, else -1 (the engine's default). */
gint gst_georeg_cuda_engine_device (const GstGeoregCuda * c, gint device_id);

/* GstElement::set_context */
void gst_georeg_cuda_set_context (GstGeoregCuda * c, GstElement * element,
    GstContext * context, gint device_id);
/* GstBaseTransform::query: TRUE when it answered a context query. */
gboolean gst_georeg_cuda_query (GstGeoregCuda * c, GstElement * element,
    GstQuery * query);
/* GstBaseTransform::propose_allocation: offers a CUDA buffer pool (and video meta)
 * for CUDA caps.  TRUE when it handled the query. */
gboolean gst_georeg_cuda_propose_allocation (GstGeoregCuda * c, GstElement * element,
    GstQuery * query);
/* GstBaseTransform::set_caps */
void gst_georeg_cuda_set_caps (GstGeoregCuda * c, GstCaps * caps);

/* A frame-sized external mask (nonzero = valid where mask->data != 0 and its own mask
 * allows), ANDed on the device into each frame's mask like gst_georeg_plane_and_mask;
 * NULL clears it.  FALSE on failure. */
gboolean gst_georeg_cuda_set_frame_mask (GstGeoregCuda * c, const GrPlaneF * mask);

/* Converts a frame on the device when it is CUDA memory of the element's zero-copy
 * context: scale <= 0 gives gst_georeg_frame_to_plane's plane, else that plane
 * area-downscaled (gr_plane_downscale), finished before it returns (the buffer is
 * no longer read).  on_host: the plane is copied into *plane (host memory,
 * reallocated as needed; zero it before the first call); else *plane points to device
 * memory owned by the converter (primary context), valid until the next call.  *input says where the frame was
 * read from; when it is not GST_GEOREG_INPUT_CUDA_DEVICE nothing was done and the
 * caller takes its host path.  FALSE (with a reason) when a CUDA call failed. */
gboolean gst_georeg_cuda_frame_to_plane (GstGeoregCuda * c, GstElement * element,
    GstBuffer * buf, const GstVideoInfo * info, gint nodata, gdouble scale,
    gboolean on_host, GrPlaneF * plane, GstGeoregInput * input, gchar * err,
    gsize errlen);

/* For elements whose engines run on CUDA device `device` (>= 0): the frame converted
 * on that device, whatever memory it came in.  CUDA memory of the element's zero-copy
 * context (on that device) is read in place, as gst_georeg_cuda_frame_to_plane does;
 * any other frame (system memory, or CUDA memory of another context, mapped to the
 * host) has its plane 0 uploaded as it is (1 byte a pixel for GRAY8 and the Y plane of
 * I420 / NV12, 2 for GRAY16_LE, 4 for RGBA / BGRA: never a float plane) and converted
 * on the device, with the same result.  scale as gst_georeg_cuda_frame_to_plane.
 * on_host: the plane is copied into *plane (host memory, reallocated as needed; zero
 * it before the first call); else *plane receives device pointers owned by the
 * converter (primary context, stride = width, mask NULL when every pixel is valid),
 * valid until the next call.  The conversion is finished when it returns.  *input
 * says where the frame was read from.  *done = FALSE when nothing was done (device <
 * 0, or a build without CUDA kernels): the caller takes its host path.  FALSE (with a
 * reason) when the map or a CUDA call failed. */
gboolean gst_georeg_cuda_frame_to_device (GstGeoregCuda * c, GstElement * element,
    GstBuffer * buf, const GstVideoInfo * info, gint nodata, gint device,
    gdouble scale, gboolean on_host, GrPlaneF * plane, GstGeoregInput * input,
    gboolean * done, gchar * err, gsize errlen);

/* The frame as a float plane in host memory: converted on the device when it is CUDA
 * memory of the element's context (only the plane comes back), else mapped on the
 * host (gst_georeg_frame_to_plane).  *input says where it was read from.  On failure
 * the element error is posted and FALSE returned. */
gboolean gst_georeg_read_frame_plane (GstGeoregCuda * c, GstElement * element,
    GstBuffer * buf, const GstVideoInfo * info, gint nodata, GrPlaneF * plane,
    GstGeoregInput * input);

/* ---- Shared frames (one pass per frame, georeg-frame-meta.h)
 *
 * With c->share (the elements' `share-frames`, default on), the conversions above and
 * gst_georeg_read_frame_plane go through the buffer's GstGeoregFrameMeta: the first
 * element that converts a frame attaches its full-resolution plane (on the device
 * that converted it, or on the host), and an element downstream whose settings match
 * (frame size and format, nodata) reads that plane instead of converting the frame
 * again: the device form is borrowed as it is (no copy), downscaled on the device
 * (scale > 0) or downloaded once into the host form; the host form is copied into the
 * caller's plane (callers may modify their plane).  The results are those of the
 * conversions without sharing, bit for bit.  Not shared: planes made with a converter
 * mask (gst_georeg_cuda_set_frame_mask), and a device form on another device than the
 * reader's (both convert as before). */

/* The keypoint responses (block_radius) of the host form of the frame shared on
 * `buf` when it is the one gst_georeg_read_frame_plane copied into the caller's plane
 * (sharing on, settings matching), made by the first caller
 * (gst_georeg_frame_keypoint_responses); *hold gets a reference to release with
 * gst_georeg_frame_unref once the detection is done.  NULL (and *hold NULL)
 * otherwise: the caller detects on its own plane. */
struct _GstGeoregFrame;
const gfloat *gst_georeg_shared_keypoint_responses (GstGeoregCuda * c, GstBuffer * buf,
    const GstVideoInfo * info, gint nodata, gint block_radius,
    struct _GstGeoregFrame ** hold);

/* Frames converted (from the video frame's pixels to a float plane, on the host or
 * the device, uploads included) by every georeg element of the process so far;
 * reused shared frames are not counted. */
guint64 gst_georeg_cuda_conversion_count (void);

G_END_DECLS

#endif
