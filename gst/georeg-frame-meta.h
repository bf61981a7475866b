/* GstGeoregFrameMeta: one frame converted once, shared by the georeg frame elements
 * downstream (issue 12, "one pass per frame").
 *
 * The first georeg element that converts a frame (nmilocalize, nmiregister or
 * featurematch, through GstGeoregBase's frame reads) attaches this meta: it holds a
 * reference to a GstGeoregFrame, the converted float plane of the whole frame in host
 * memory and / or on one CUDA device, with what it was converted from and how (size,
 * format, nodata).  The next element whose settings match reuses it instead of
 * converting (and, on CUDA, uploading) the frame again; one whose settings differ
 * converts as before.
 *
 * The handle is reference counted: the meta holds one reference, an element holds one
 * while it reads the planes, so it outlives the buffer when needed; the last unref
 * recycles it (a small process-wide pool, so that a live stream allocates no plane
 * per frame) and device memory is freed on the device that holds it.
 *
 * The meta describes the pixels: it is copied (a new reference to the same handle) by
 * plain buffer copies only, and carries the video tags, so a transform that changes
 * the pixels (a converter, a scaler) drops it.  An element that draws on a frame in
 * place must drop it (gst_georeg_base_frame_changed).
 *
 * Internal to the plugin: applications never see it (not part of the public meta
 * library).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GEOREG_FRAME_META_H__
#define __GEOREG_FRAME_META_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gr_common.h"

G_BEGIN_DECLS

typedef struct _GstGeoregFrame GstGeoregFrame;

struct _GstGeoregFrame {
  /* what the planes were converted from, and how: a reader reuses them only when
   * these equal its own (gst_georeg_frame_matches) */
  gint width, height;
  GstVideoFormat format;
  gint nodata;

  /* the forms, each made at most once; lock `lock` to read or add one (two branches
   * of a tee may read copies of one buffer at the same time) */
  GMutex lock;
  gboolean has_host;
  GrPlaneF host;                /* host form (owned) */
  gint device;                  /* device of the device form, -1 = none */
  GrPlaneF dev;                 /* device form: data, and mask or NULL when every
                                 * pixel is valid (views into dev_buffers) */
  gint kp_block;                /* the host form's keypoint responses were made for this
                                 * block radius (0 = not made) */
  gfloat *kp_resp;              /* those responses (width x height; memory kept on
                                 * recycling), gst_georeg_frame_keypoint_responses */

  /*< private >*/
  gint refcount;
  gint dev_alloc_device;        /* device of dev_buffers, -1 = none */
  GrPlaneF dev_buffers;         /* device allocation (data + mask), kept on recycling */
};

/* A frame for w x h `format` pixels converted with `nodata`, with no form yet (taken
 * from the pool when one is idle: one whose device buffers are on `device`, the CUDA
 * device that will convert it; -1 = converted on the host).  Unref when done. */
GstGeoregFrame *gst_georeg_frame_new (gint width, gint height, GstVideoFormat format,
    gint nodata, gint device);
GstGeoregFrame *gst_georeg_frame_ref (GstGeoregFrame * frame);
void gst_georeg_frame_unref (GstGeoregFrame * frame);
/* Whether a reader converting with `info` and `nodata` may reuse the frame's planes. */
gboolean gst_georeg_frame_matches (const GstGeoregFrame * frame,
    const GstVideoInfo * info, gint nodata);
/* Device buffers of the frame's size on `device` (kept from an earlier use when they
 * fit), for the device form.  FALSE (with a reason) when they cannot be allocated or
 * the build has no CUDA. */
gboolean gst_georeg_frame_ensure_device_buffers (GstGeoregFrame * frame, gint device,
    gchar * err, gsize errlen);
/* The keypoint responses of the frame's host form (gr_keypoints_responses with
 * block_radius), made by the first caller and shared by the next (nmiregister's and
 * featurematch's detections on one frame compute them once): valid while the caller
 * holds a reference, never written again; *made says whether this call made them.
 * NULL when the frame has no host form yet,
 * they were made for another block radius, or out of memory: the caller detects on its
 * own. */
const gfloat *gst_georeg_frame_keypoint_responses (GstGeoregFrame * frame,
    gint block_radius, gboolean * made);
/* Frees the idle frames of the pool (their host and device memory): called when the
 * last element that used it stops. */
void gst_georeg_frame_pool_trim (void);

typedef struct {
  GstMeta meta;
  GstGeoregFrame *frame;        /* one reference, owned by the meta */
} GstGeoregFrameMeta;

GType gst_georeg_frame_meta_api_get_type (void);
#define GST_GEOREG_FRAME_META_API_TYPE (gst_georeg_frame_meta_api_get_type ())
const GstMetaInfo *gst_georeg_frame_meta_get_info (void);
#define GST_GEOREG_FRAME_META_INFO (gst_georeg_frame_meta_get_info ())

/* Attaches `frame` (a new reference) to a writable buffer. */
GstGeoregFrameMeta *gst_buffer_add_georeg_frame_meta (GstBuffer * buffer,
    GstGeoregFrame * frame);
#define gst_buffer_get_georeg_frame_meta(b) \
  ((GstGeoregFrameMeta *) gst_buffer_get_meta ((b), GST_GEOREG_FRAME_META_API_TYPE))

G_END_DECLS

#endif
