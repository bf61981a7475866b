/* GstGeoregFrameMeta and its shared frames (see georeg-frame-meta.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <string.h>

#include "georeg-frame-meta.h"
#include "image.h"
#include "keypoints.h"
#if GR_HAVE_CUDA
#include "frame_cuda.h"
#endif

/* ------------------------------------------------------------------ the pool */

/* Idle frames kept for reuse, one queue per device of their device buffers (-1: none):
 * a live stream then allocates its planes once.  A few frames are in flight at a time
 * (queues between elements hold some); more idle ones than this on one device are
 * freed.  One queue for every device made several streams over four GPUs in one
 * process free and allocate 41 MB of device planes a 4K frame (a frame from another
 * device, or none idle), and cudaFree waits for the whole device: 16 paced streams'
 * worst p99 after their first second was 59.8 ms with one queue, 49.9 ms with one a
 * device (4 x H200, 2026-11-28). */
#define POOL_MAX_IDLE 8

static GMutex pool_lock;
static GHashTable *pool_idle;   /* device + 1 -> GQueue of frames */

static void
frame_free (GstGeoregFrame * f)
{
  gr_plane_clear (&f->host);
  g_free (f->kp_resp);
#if GR_HAVE_CUDA
  if (f->dev_alloc_device >= 0)
    gr_frame_cuda_plane_free (f->dev_alloc_device, &f->dev_buffers);
#endif
  g_mutex_clear (&f->lock);
  g_free (f);
}

/* the idle queue of `device` (made when `make`), under pool_lock */
static GQueue *
pool_queue (gint device, gboolean make)
{
  if (!pool_idle && make)
    pool_idle = g_hash_table_new (g_direct_hash, g_direct_equal);
  GQueue *q = pool_idle ? g_hash_table_lookup (pool_idle, GINT_TO_POINTER (device + 1)) :
      NULL;
  if (!q && make) {
    q = g_queue_new ();
    g_hash_table_insert (pool_idle, GINT_TO_POINTER (device + 1), q);
  }
  return q;
}

GstGeoregFrame *
gst_georeg_frame_new (gint width, gint height, GstVideoFormat format, gint nodata,
    gint device)
{
  g_mutex_lock (&pool_lock);
  GQueue *q = pool_queue (device, FALSE);
  GstGeoregFrame *f = q ? g_queue_pop_head (q) : NULL;
  g_mutex_unlock (&pool_lock);
  if (!f) {
    f = g_new0 (GstGeoregFrame, 1);
    g_mutex_init (&f->lock);
    f->dev_alloc_device = -1;
  }
  if (f->kp_resp && (f->width != width || f->height != height)) {
    g_free (f->kp_resp);
    f->kp_resp = NULL;
  }
  f->width = width;
  f->height = height;
  f->format = format;
  f->nodata = nodata;
  f->has_host = FALSE;          /* the host plane's memory stays for the next use */
  f->kp_block = 0;              /* so does the responses' (same size: kept above) */
  f->device = -1;
  memset (&f->dev, 0, sizeof f->dev);
  f->refcount = 1;
  return f;
}

GstGeoregFrame *
gst_georeg_frame_ref (GstGeoregFrame * frame)
{
  g_atomic_int_inc (&frame->refcount);
  return frame;
}

void
gst_georeg_frame_unref (GstGeoregFrame * frame)
{
  if (!frame || !g_atomic_int_dec_and_test (&frame->refcount))
    return;
  g_mutex_lock (&pool_lock);
  GQueue *q = pool_queue (frame->dev_alloc_device, TRUE);
  if (g_queue_get_length (q) < POOL_MAX_IDLE) {
    g_queue_push_tail (q, frame);
    frame = NULL;
  }
  g_mutex_unlock (&pool_lock);
  if (frame)
    frame_free (frame);
}

void
gst_georeg_frame_pool_trim (void)
{
  g_mutex_lock (&pool_lock);
  GHashTable *idle = pool_idle;
  pool_idle = NULL;
  g_mutex_unlock (&pool_lock);
  if (!idle)
    return;
  GHashTableIter it;
  gpointer q;
  g_hash_table_iter_init (&it, idle);
  while (g_hash_table_iter_next (&it, NULL, &q)) {
    GstGeoregFrame *f;
    while ((f = g_queue_pop_head (q)))
      frame_free (f);
    g_queue_free (q);
  }
  g_hash_table_unref (idle);
}

gboolean
gst_georeg_frame_matches (const GstGeoregFrame * frame, const GstVideoInfo * info,
    gint nodata)
{
  return frame->width == GST_VIDEO_INFO_WIDTH (info) &&
      frame->height == GST_VIDEO_INFO_HEIGHT (info) &&
      frame->format == GST_VIDEO_INFO_FORMAT (info) && frame->nodata == nodata;
}

const gfloat *
gst_georeg_frame_keypoint_responses (GstGeoregFrame * frame, gint block_radius,
    gboolean * made)
{
  const gfloat *r = NULL;
  *made = FALSE;
  g_mutex_lock (&frame->lock);
  if (frame->kp_block == block_radius) {
    r = frame->kp_resp;
  } else if (frame->kp_block == 0 && frame->has_host) {
    /* made once under the lock: a second branch of a tee waits for them */
    if (!frame->kp_resp)
      frame->kp_resp = g_try_new (gfloat, (gsize) frame->width * frame->height);
    if (frame->kp_resp && gr_keypoints_responses (&frame->host, block_radius,
            frame->kp_resp) == 0) {
      frame->kp_block = block_radius;
      r = frame->kp_resp;
      *made = TRUE;
    }
  }
  g_mutex_unlock (&frame->lock);
  return r;
}

gboolean
gst_georeg_frame_ensure_device_buffers (GstGeoregFrame * frame, gint device,
    gchar * err, gsize errlen)
{
#if GR_HAVE_CUDA
  GrPlaneF *b = &frame->dev_buffers;
  if (frame->dev_alloc_device == device && b->width == frame->width &&
      b->height == frame->height)
    return TRUE;
  if (frame->dev_alloc_device >= 0)
    gr_frame_cuda_plane_free (frame->dev_alloc_device, b);
  frame->dev_alloc_device = -1;
  if (gr_frame_cuda_plane_alloc (device, frame->width, frame->height, b, err,
          errlen) != GR_OK)
    return FALSE;
  frame->dev_alloc_device = device;
  return TRUE;
#else
  g_snprintf (err, errlen, "built without CUDA");
  return FALSE;
#endif
}

/* ------------------------------------------------------------------ the meta */

GType
gst_georeg_frame_meta_api_get_type (void)
{
  static GType type = 0;
  /* the planes are the pixels: a transform that changes them drops the meta */
  static const gchar *tags[] = { GST_META_TAG_VIDEO_STR,
    GST_META_TAG_VIDEO_SIZE_STR, GST_META_TAG_VIDEO_ORIENTATION_STR,
    GST_META_TAG_VIDEO_COLORSPACE_STR, NULL
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        gst_meta_api_type_register ("GstGeoregFrameMetaAPI", tags));
  return type;
}

static gboolean
frame_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  ((GstGeoregFrameMeta *) meta)->frame = NULL;
  return TRUE;
}

static void
frame_meta_free (GstMeta * meta, GstBuffer * buffer)
{
  GstGeoregFrameMeta *m = (GstGeoregFrameMeta *) meta;
  gst_georeg_frame_unref (m->frame);
  m->frame = NULL;
}

static gboolean
frame_meta_transform (GstBuffer * dest, GstMeta * meta, GstBuffer * buffer,
    GQuark type, gpointer data)
{
  /* only a copy of the whole buffer keeps the same pixels; anything else (a region,
   * a scale, a conversion) is not this frame any more: the meta is left behind */
  if (!GST_META_TRANSFORM_IS_COPY (type))
    return TRUE;
  const GstMetaTransformCopy *copy = data;
  if (copy->region)
    return TRUE;
  if (gst_buffer_get_georeg_frame_meta (dest))
    return TRUE;
  return gst_buffer_add_georeg_frame_meta (dest,
      ((GstGeoregFrameMeta *) meta)->frame) != NULL;
}

const GstMetaInfo *
gst_georeg_frame_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;
  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_GEOREG_FRAME_META_API_TYPE,
        "GstGeoregFrameMeta", sizeof (GstGeoregFrameMeta), frame_meta_init,
        frame_meta_free, frame_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) mi);
  }
  return info;
}

GstGeoregFrameMeta *
gst_buffer_add_georeg_frame_meta (GstBuffer * buffer, GstGeoregFrame * frame)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer) && frame, NULL);
  GstGeoregFrameMeta *m = (GstGeoregFrameMeta *) gst_buffer_add_meta (buffer,
      GST_GEOREG_FRAME_META_INFO, NULL);
  if (m)
    m->frame = gst_georeg_frame_ref (frame);
  return m;
}
