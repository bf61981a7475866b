/* CUDA memory wiring shared by the georeg elements (see gstgeoregcuda.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <string.h>

#include "gstgeoregcuda.h"
#include "gstgeoregutils.h"
#include "georeg-frame-meta.h"
#include "gstgeoregplacement.h"
#include "image.h"

#if GR_HAVE_GST_CUDA
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#include <gst/cuda/cuda-gst.h>
#endif
#if GR_HAVE_CUDA
#include "frame_cuda.h"
#endif

GST_DEBUG_CATEGORY_STATIC (gst_georeg_cuda_debug);
#define GST_CAT_DEFAULT gst_georeg_cuda_debug

static void
debug_init (void)
{
  static gsize once = 0;
  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gst_georeg_cuda_debug, "georegcuda", 0,
        "georeg CUDA memory wiring");
    g_once_init_leave (&once, 1);
  }
}

const gchar *
gst_georeg_input_name (GstGeoregInput input)
{
  switch (input) {
    case GST_GEOREG_INPUT_CUDA_DEVICE:
      return "cuda-device";
    case GST_GEOREG_INPUT_CUDA_HOST:
      return "cuda-host";
    default:
      return "system";
  }
}

void
gst_georeg_cuda_init (GstGeoregCuda * c)
{
  memset (c, 0, sizeof *c);
  c->device = -1;
  c->place_device = -1;
}

gint
gst_georeg_cuda_engine_device (const GstGeoregCuda * c, gint device_id)
{
  if (device_id >= 0)
    return device_id;
  return c->context ? c->device : -1;
}

/* ------------------------------------------------------------------ shared frames */

static gsize conversions_total;         /* atomic */

guint64
gst_georeg_cuda_conversion_count (void)
{
  return (guint64) g_atomic_pointer_get (&conversions_total);
}

static void
count_conversion (GstGeoregCuda * c)
{
  c->conversions++;
  g_atomic_pointer_add (&conversions_total, 1);
}

/* The elements between READY and NULL: the pool of shared frames is emptied when the
 * last one stops. */
static GMutex pool_users_lock;
static guint pool_users;

static void
pool_use (GstGeoregCuda * c)
{
  if (c->pool_user)
    return;
  g_mutex_lock (&pool_users_lock);
  pool_users++;
  g_mutex_unlock (&pool_users_lock);
  c->pool_user = TRUE;
}

static void
pool_release (GstGeoregCuda * c)
{
  if (!c->pool_user)
    return;
  c->pool_user = FALSE;
  g_mutex_lock (&pool_users_lock);
  const gboolean last = --pool_users == 0;
  g_mutex_unlock (&pool_users_lock);
  if (last)
    gst_georeg_frame_pool_trim ();
}

/* The buffer's shared frame for a reader converting with `info` and `nodata`, locked,
 * with a reference (release with shared_frame_unlock).  A buffer without one gets a
 * new, empty frame (when it is writable, as in-place elements' buffers are).  NULL
 * when sharing is off or the attached frame was converted otherwise: the caller
 * converts on its own. */
static GstGeoregFrame *
shared_frame_lock (GstGeoregCuda * c, GstBuffer * buf, const GstVideoInfo * info,
    gint nodata)
{
  if (!c->share)
    return NULL;
  GstGeoregFrameMeta *m = gst_buffer_get_georeg_frame_meta (buf);
  GstGeoregFrame *f;
  if (m) {
    if (!gst_georeg_frame_matches (m->frame, info, nodata))
      return NULL;
    f = gst_georeg_frame_ref (m->frame);
  } else {
    if (!gst_buffer_is_writable (buf))
      return NULL;
    /* from the pool of this element's device: its device buffers fit there */
    f = gst_georeg_frame_new (GST_VIDEO_INFO_WIDTH (info),
        GST_VIDEO_INFO_HEIGHT (info), GST_VIDEO_INFO_FORMAT (info), nodata,
        c->context ? c->device : -1);
    gst_buffer_add_georeg_frame_meta (buf, f);
  }
  g_mutex_lock (&f->lock);
  return f;
}

static void
shared_frame_unlock (GstGeoregFrame * f)
{
  g_mutex_unlock (&f->lock);
  gst_georeg_frame_unref (f);
}

const gfloat *
gst_georeg_shared_keypoint_responses (GstGeoregCuda * c, GstBuffer * buf,
    const GstVideoInfo * info, gint nodata, gint block_radius, GstGeoregFrame ** hold)
{
  *hold = NULL;
  if (!c->share)
    return NULL;
  /* the same test as shared_frame_lock's: then the caller's plane is this host form */
  GstGeoregFrameMeta *m = gst_buffer_get_georeg_frame_meta (buf);
  if (!m || !gst_georeg_frame_matches (m->frame, info, nodata))
    return NULL;
  GstGeoregFrame *f = gst_georeg_frame_ref (m->frame);
  gboolean made;
  const gfloat *r = gst_georeg_frame_keypoint_responses (f, block_radius, &made);
  if (!r) {
    gst_georeg_frame_unref (f);
    return NULL;
  }
  if (!made)
    c->kp_reused++;
  *hold = f;
  return r;
}

/* src copied into dst (reallocated when its size or mask presence differs) */
static gboolean
plane_copy (const GrPlaneF * src, GrPlaneF * dst)
{
  if (!dst->data || dst->width != src->width || dst->height != src->height ||
      dst->stride != (gsize) src->width || (dst->mask != NULL) != (src->mask != NULL)) {
    gr_plane_clear (dst);
    if (!gr_plane_alloc (dst, src->width, src->height, src->mask != NULL))
      return FALSE;
  }
  for (gint y = 0; y < src->height; y++)
    memcpy (dst->data + (gsize) y * dst->stride, src->data + (gsize) y * src->stride,
        sizeof (float) * src->width);
  if (src->mask)
    memcpy (dst->mask, src->mask, (gsize) src->width * src->height);
  return TRUE;
}

#if GR_HAVE_CUDA
/* the element's converter, on `device` (made again if it was made for another) */
static gboolean
ensure_conv (GstGeoregCuda * c, gint device, gchar * err, gsize errlen)
{
  if (c->conv && c->conv_device != device) {
    gr_frame_cuda_free (c->conv);
    c->conv = NULL;
  }
  if (!c->conv) {
    c->conv = gr_frame_cuda_new (device, err, errlen);
    c->conv_device = device;
  }
  return c->conv != NULL;
}

static GrFrameLayout
frame_layout (GstVideoFormat format)
{
  switch (format) {
    case GST_VIDEO_FORMAT_GRAY16_LE:
      return GR_FRAME_Y16LE;
    case GST_VIDEO_FORMAT_RGBA:
      return GR_FRAME_RGBA;
    case GST_VIDEO_FORMAT_BGRA:
      return GR_FRAME_BGRA;
    default:                   /* GRAY8, the Y plane of I420 / NV12 */
      return GR_FRAME_Y8;
  }
}

/* Maps the frame (GST_MAP_CUDA: device pointers; else host, whose plane 0 is then
 * uploaded as it is) and converts plane 0 with c's converter on the device, finished
 * before it returns.  into: the full-resolution plane becomes that shared frame's
 * device form (its buffers allocated on the converter's device); else on_host: the
 * plane is copied into *plane (host memory); else *plane points to the converter's
 * device memory. */
static gboolean
convert_frame (GstGeoregCuda * c, GstBuffer * buf, const GstVideoInfo * info,
    gboolean cuda_map, gint nodata, gdouble scale, gboolean on_host, GrPlaneF * plane,
    GstGeoregFrame * into, gchar * err, gsize errlen)
{
  GstVideoFrame frame;
  GstMapFlags flags = GST_MAP_READ;
#if GR_HAVE_GST_CUDA
  if (cuda_map)
    flags |= GST_MAP_CUDA;
#endif
#if GR_HAVE_GST_CUDA && GST_CHECK_VERSION (1, 24, 0)
  /* upstream may have written the memory on its own stream, still running: wait for
   * it before our kernels (on the runtime's stream) read it, as gstcudaconvertscale
   * does.  GStreamer 1.22's CUDA memory has no stream (its writers finish before they
   * push), so there is nothing to wait for there. */
  if (cuda_map)
    for (guint i = 0; i < gst_buffer_n_memory (buf); i++)
      gst_cuda_memory_sync (GST_CUDA_MEMORY_CAST (gst_buffer_peek_memory (buf, i)));
#endif
  if (!gst_video_frame_map (&frame, info, buf, flags)) {
    g_snprintf (err, errlen, "could not map the %s frame", cuda_map ? "CUDA" : "");
    return FALSE;
  }
  GrFrameDev f;
  f.layout = frame_layout (GST_VIDEO_FRAME_FORMAT (&frame));
  f.data = GST_VIDEO_FRAME_PLANE_DATA (&frame, 0);
  f.stride = (size_t) GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0);
  f.width = GST_VIDEO_FRAME_WIDTH (&frame);
  f.height = GST_VIDEO_FRAME_HEIGHT (&frame);
  GrStatus st;
  if (into) {
    st = gr_frame_cuda_convert_to (c->conv, &f, !cuda_map, nodata, &into->dev_buffers,
        &into->dev, err, errlen);
    if (st == GR_OK)
      st = gr_frame_cuda_sync (c->conv, err, errlen);
    if (st == GR_OK)
      into->device = c->conv_device;
  } else if (on_host) {
    st = cuda_map ? gr_frame_cuda_to_host (c->conv, &f, nodata, scale, plane, err, errlen)
        : gr_frame_cuda_host_to_host (c->conv, &f, nodata, scale, plane, err, errlen);
  } else {
    st = cuda_map ? gr_frame_cuda_convert (c->conv, &f, nodata, scale, plane, err, errlen)
        : gr_frame_cuda_convert_host (c->conv, &f, nodata, scale, plane, err, errlen);
    if (st == GR_OK)
      st = gr_frame_cuda_sync (c->conv, err, errlen);
  }
  gst_video_frame_unmap (&frame);
  if (st == GR_OK)
    count_conversion (c);
  return st == GR_OK;
}

/* What a reader asked of the shared frame f (its device form on c's converter's
 * device): scale > 0, its downscale; else on_host, the host form (downloaded once)
 * copied into *plane; else the device form itself. */
static gboolean
derive_from_device_form (GstGeoregCuda * c, GstGeoregFrame * f, gdouble scale,
    gboolean on_host, GrPlaneF * plane, gchar * err, gsize errlen)
{
  if (scale > 0.0)
    return gr_frame_cuda_downscale (c->conv, &f->dev, scale, on_host, plane, err,
        errlen) == GR_OK;
  if (!on_host) {
    *plane = f->dev;
    return TRUE;
  }
  if (!f->has_host) {
    if (gr_frame_cuda_download (c->conv, &f->dev, &f->host, err, errlen) != GR_OK)
      return FALSE;
    f->has_host = TRUE;
  }
  if (!plane_copy (&f->host, plane)) {
    g_snprintf (err, errlen, "out of memory");
    return FALSE;
  }
  return TRUE;
}

/* The frame converted on c's converter (made on its device) as convert_frame does,
 * through the shared frame when there is one: its device form is made once (or
 * reused), the plane asked for derived from it. */
static gboolean
device_read (GstGeoregCuda * c, GstBuffer * buf, const GstVideoInfo * info,
    gboolean cuda_map, gint nodata, gdouble scale, gboolean on_host, GrPlaneF * plane,
    gchar * err, gsize errlen)
{
  GstGeoregFrame *f = c->frame_mask ? NULL : shared_frame_lock (c, buf, info, nodata);
  if (f && f->device >= 0 && f->device != c->conv_device) {
    shared_frame_unlock (f);    /* on another device: converted here as before */
    f = NULL;
  }
  if (!f)
    return convert_frame (c, buf, info, cuda_map, nodata, scale, on_host, plane, NULL,
        err, errlen);
  gboolean ok = TRUE;
  if (f->device < 0)
    ok = gst_georeg_frame_ensure_device_buffers (f, c->conv_device, err, errlen) &&
        convert_frame (c, buf, info, cuda_map, nodata, 0.0, FALSE, NULL, f, err,
        errlen);
  if (ok)
    ok = derive_from_device_form (c, f, scale, on_host, plane, err, errlen);
  shared_frame_unlock (f);
  return ok;
}
#endif

void
gst_georeg_cuda_close (GstGeoregCuda * c)
{
#if GR_HAVE_CUDA
  if (c->conv)
    gr_frame_cuda_free (c->conv);
#endif
  c->conv = NULL;
#if GR_HAVE_GST_CUDA
  gst_clear_object ((GstCudaContext **) & c->context);
#endif
  c->device = -1;
  c->zero_copy = FALSE;
  c->warned = FALSE;
  c->frame_mask = FALSE;
  gst_georeg_placement_release (c->place_key, c->place_device);
  c->place_device = -1;
  c->place_key = NULL;
  pool_release (c);
}

#if GR_HAVE_GST_CUDA

/* The primary context's handle of each device, learnt once: the runtime makes it
 * current, and popping it off the driver's context stack reads its handle. */
static GMutex primary_lock;
static GHashTable *primary_handles;     /* device + 1 -> CUcontext */

static CUcontext
primary_handle (gint device)
{
  CUcontext h = NULL;
  char err[256];
  g_mutex_lock (&primary_lock);
  if (!primary_handles)
    primary_handles = g_hash_table_new (g_direct_hash, g_direct_equal);
  h = g_hash_table_lookup (primary_handles, GINT_TO_POINTER (device + 1));
  if (!h && gr_cuda_make_primary_current (device, err, sizeof err) == GR_OK) {
    CUcontext popped = NULL;
    if (gst_cuda_context_pop (&popped) && popped) {
      h = popped;
      g_hash_table_insert (primary_handles, GINT_TO_POINTER (device + 1), h);
    }
    /* the runtime's binding of this thread back */
    gr_cuda_make_primary_current (device, err, sizeof err);
  }
  g_mutex_unlock (&primary_lock);
  return h;
}

static void
adopt (GstGeoregCuda * c, GstElement * element, GstCudaContext * ctx)
{
  guint dev = 0;
  g_object_get (ctx, "cuda-device-id", &dev, NULL);
  c->context = ctx;
  c->device = (gint) dev;
  CUcontext prim = primary_handle (c->device);
  c->zero_copy = prim && gst_cuda_context_get_handle (ctx) == (gpointer) prim;
  GST_INFO_OBJECT (element, "CUDA context %" GST_PTR_FORMAT " on device %d: %s", ctx,
      c->device, c->zero_copy ? "the primary context, CUDA frames are read on the "
      "device" : "not the primary context, CUDA frames are read through the host");
}

/* Asks the neighbours (peer context queries), then the application (need-context
 * message), as gst_cuda_ensure_element_context does. */
static GstCudaContext *
find_context (GstElement * element, gint device_id)
{
  GstCudaContext *ctx = NULL;
  GstQuery *q = gst_query_new_context (GST_CUDA_CONTEXT_TYPE);
  const GstPadDirection dirs[2] = { GST_PAD_SRC, GST_PAD_SINK };

  for (int d = 0; d < 2 && !ctx; d++) {
    GstIterator *it = dirs[d] == GST_PAD_SRC ? gst_element_iterate_src_pads (element)
        : gst_element_iterate_sink_pads (element);
    GValue v = G_VALUE_INIT;
    while (!ctx && gst_iterator_next (it, &v) == GST_ITERATOR_OK) {
      GstPad *pad = g_value_get_object (&v);
      if (gst_pad_peer_query (pad, q)) {
        GstContext *gc = NULL;
        gst_query_parse_context (q, &gc);
        if (gc)
          gst_cuda_handle_set_context (element, gc, device_id, &ctx);
      }
      g_value_reset (&v);
    }
    g_value_unset (&v);
    gst_iterator_free (it);
  }
  gst_query_unref (q);
  return ctx;
}

void
gst_georeg_cuda_open (GstGeoregCuda * c, GstElement * element, GrBackend backend,
    gint device_id)
{
  debug_init ();
  pool_use (c);
  if (backend == GR_BACKEND_CPU || gr_cuda_device_count () <= 0) {
    GST_DEBUG_OBJECT (element, "no CUDA context: %s", backend == GR_BACKEND_CPU ?
        "CPU backend" : "no usable device");
    return;
  }
  if (!gst_cuda_load_library ()) {
    GST_INFO_OBJECT (element, "the CUDA driver library could not be loaded");
    return;
  }
  GstCudaContext *ctx = c->context;     /* set by the application already? */
  c->context = NULL;
  if (!ctx)
    ctx = find_context (element, device_id);
  if (!ctx) {
    GST_OBJECT_LOCK (element);
    GstContext *gc = gst_element_get_context_unlocked (element, GST_CUDA_CONTEXT_TYPE);
    GST_OBJECT_UNLOCK (element);
    if (!gc) {
      /* the application may answer synchronously through set_context */
      gst_element_post_message (element,
          gst_message_new_need_context (GST_OBJECT (element), GST_CUDA_CONTEXT_TYPE));
      GST_OBJECT_LOCK (element);
      gc = gst_element_get_context_unlocked (element, GST_CUDA_CONTEXT_TYPE);
      GST_OBJECT_UNLOCK (element);
    }
    if (gc) {
      gst_cuda_handle_set_context (element, gc, device_id, &ctx);
      gst_context_unref (gc);
    }
  }
  if (!ctx) {
    /* -1: the pipeline's device, else the least-loaded one (gstgeoregplacement.h);
     * registered now, under the placement's lock, so that pipelines starting at the
     * same time spread too */
    const gint dev = gst_georeg_placement_place (element, device_id, &c->place_key);
    c->place_device = dev;
    CUcontext prim = dev >= 0 ? primary_handle (dev) : NULL;
    CUdevice cudev;
    if (prim && CuDeviceGet (&cudev, dev) == CUDA_SUCCESS)
      ctx = gst_cuda_context_new_wrapped (prim, cudev);
    if (!ctx) {
      GST_WARNING_OBJECT (element, "could not make a CUDA context on device %d", dev);
      gst_georeg_placement_release (c->place_key, c->place_device);
      c->place_device = -1;
      return;
    }
    GstContext *gc = gst_context_new_cuda_context (ctx);
    gst_element_post_message (element,
        gst_message_new_have_context (GST_OBJECT (element), gc));
  }
  adopt (c, element, ctx);
  /* a context shared from elsewhere: the pipeline counts on its device too */
  if (c->place_device < 0)
    c->place_device = gst_georeg_placement_place (element, c->device, &c->place_key);
}


void
gst_georeg_cuda_set_context (GstGeoregCuda * c, GstElement * element,
    GstContext * context, gint device_id)
{
  debug_init ();
  /* a context in use is kept: the engines and the buffers belong to it */
  if (c->context)
    return;
  GstCudaContext *ctx = NULL;
  if (gst_cuda_handle_set_context (element, context, device_id, &ctx) && ctx)
    c->context = ctx;   /* adopted (zero-copy check) in open */
}

gboolean
gst_georeg_cuda_query (GstGeoregCuda * c, GstElement * element, GstQuery * query)
{
  if (GST_QUERY_TYPE (query) != GST_QUERY_CONTEXT || !c->context)
    return FALSE;
  return gst_cuda_handle_context_query (element, query, c->context);
}

static gboolean
caps_are_cuda (GstCaps * caps)
{
  GstCapsFeatures *f = caps && gst_caps_get_size (caps) > 0 ?
      gst_caps_get_features (caps, 0) : NULL;
  return f && gst_caps_features_contains (f, GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY);
}

gboolean
gst_georeg_cuda_propose_allocation (GstGeoregCuda * c, GstElement * element,
    GstQuery * query)
{
  GstCaps *caps = NULL;
  GstVideoInfo info;
  gboolean need_pool = FALSE;

  gst_query_parse_allocation (query, &caps, &need_pool);
  if (!caps_are_cuda (caps) || !c->context || !gst_video_info_from_caps (&info, caps))
    return FALSE;
  gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);
  if (!need_pool)
    return TRUE;
  GstBufferPool *pool = gst_cuda_buffer_pool_new (c->context);
  GstStructure *config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  gst_buffer_pool_config_set_params (config, caps, GST_VIDEO_INFO_SIZE (&info), 0, 0);
  if (!gst_buffer_pool_set_config (pool, config)) {
    GST_WARNING_OBJECT (element, "the CUDA buffer pool refused its configuration");
    gst_object_unref (pool);
    return TRUE;
  }
  /* the pool may have padded the planes: announce the size it will allocate */
  guint size = GST_VIDEO_INFO_SIZE (&info);
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_get_params (config, NULL, &size, NULL, NULL);
  gst_structure_free (config);
  gst_query_add_allocation_pool (query, pool, size, 0, 0);
  gst_object_unref (pool);
  GST_DEBUG_OBJECT (element, "offered a CUDA buffer pool (%u bytes a buffer)", size);
  return TRUE;
}

void
gst_georeg_cuda_set_caps (GstGeoregCuda * c, GstCaps * caps)
{
  c->caps_cuda = caps_are_cuda (caps);
}


gboolean
gst_georeg_cuda_set_frame_mask (GstGeoregCuda * c, const GrPlaneF * mask)
{
  char err[256];
  if (!c->context || !c->zero_copy)
    return TRUE;                /* no device path */
  if (!ensure_conv (c, c->device, err, sizeof err))
    return FALSE;
  c->frame_mask = FALSE;
  if (!mask || !mask->data)
    return gr_frame_cuda_set_mask (c->conv, NULL, 0, 0, err, sizeof err) == GR_OK;
  const gsize n = (gsize) mask->width * mask->height;
  guint8 *m = g_try_malloc (n);
  if (!m)
    return FALSE;
  for (gint y = 0; y < mask->height; y++)
    for (gint x = 0; x < mask->width; x++) {
      const gsize i = (gsize) y * mask->width + x;
      m[i] = (!mask->mask || mask->mask[i]) &&
          mask->data[(gsize) y * mask->stride + x] != 0.0f;
    }
  gboolean ok = gr_frame_cuda_set_mask (c->conv, m, mask->width, mask->height, err,
      sizeof err) == GR_OK;
  c->frame_mask = ok;
  g_free (m);
  return ok;
}

static gboolean
buffer_in_context (GstGeoregCuda * c, GstBuffer * buf, gboolean * is_cuda)
{
  const guint n = gst_buffer_n_memory (buf);
  *is_cuda = n > 0;
  gboolean ours = n > 0;
  for (guint i = 0; i < n; i++) {
    GstMemory *mem = gst_buffer_peek_memory (buf, i);
    if (!gst_is_cuda_memory (mem)) {
      *is_cuda = FALSE;
      return FALSE;
    }
    if (GST_CUDA_MEMORY_CAST (mem)->context != (GstCudaContext *) c->context &&
        gst_cuda_context_get_handle (GST_CUDA_MEMORY_CAST (mem)->context) !=
        gst_cuda_context_get_handle (c->context))
      ours = FALSE;
  }
  return ours;
}

gboolean
gst_georeg_cuda_frame_to_plane (GstGeoregCuda * c, GstElement * element,
    GstBuffer * buf, const GstVideoInfo * info, gint nodata, gdouble scale,
    gboolean on_host, GrPlaneF * plane, GstGeoregInput * input, gchar * err,
    gsize errlen)
{
  gboolean is_cuda = FALSE;
  *input = GST_GEOREG_INPUT_SYSTEM;
  if (!c->context) {
    if (gst_buffer_n_memory (buf) > 0 && gst_is_cuda_memory (gst_buffer_peek_memory
            (buf, 0)))
      *input = GST_GEOREG_INPUT_CUDA_HOST;
    return TRUE;
  }
  const gboolean ours = buffer_in_context (c, buf, &is_cuda);
  if (!is_cuda)
    return TRUE;
  *input = GST_GEOREG_INPUT_CUDA_HOST;
  if (!ours || !c->zero_copy) {
    if (!c->warned)
      GST_INFO_OBJECT (element, "CUDA frames %s: read through the host", !ours ?
          "of another CUDA context" : "of a context other than the primary one");
    c->warned = TRUE;
    return TRUE;
  }
  if (!ensure_conv (c, c->device, err, errlen) ||
      !device_read (c, buf, info, TRUE, nodata, scale, on_host, plane, err, errlen))
    return FALSE;
  *input = GST_GEOREG_INPUT_CUDA_DEVICE;
  return TRUE;
}

gboolean
gst_georeg_cuda_frame_to_device (GstGeoregCuda * c, GstElement * element,
    GstBuffer * buf, const GstVideoInfo * info, gint nodata, gint device,
    gdouble scale, gboolean on_host, GrPlaneF * plane, GstGeoregInput * input,
    gboolean * done, gchar * err, gsize errlen)
{
  *done = FALSE;
  *input = GST_GEOREG_INPUT_SYSTEM;
  if (device < 0)
    return TRUE;
  gboolean is_cuda = FALSE, ours = FALSE;
  if (c->context)
    ours = buffer_in_context (c, buf, &is_cuda);
  else
    is_cuda = gst_buffer_n_memory (buf) > 0 &&
        gst_is_cuda_memory (gst_buffer_peek_memory (buf, 0));
  const gboolean in_place = is_cuda && ours && c->zero_copy && c->device == device;
  if (is_cuda && !in_place && !c->warned) {
    GST_INFO_OBJECT (element, "CUDA frames %s: read through the host", !ours ?
        "of another CUDA context" : "of a context other than the primary one");
    c->warned = TRUE;
  }
  if (!ensure_conv (c, device, err, errlen) ||
      !device_read (c, buf, info, in_place, nodata, scale, on_host, plane, err, errlen))
    return FALSE;
  *input = in_place ? GST_GEOREG_INPUT_CUDA_DEVICE : is_cuda ?
      GST_GEOREG_INPUT_CUDA_HOST : GST_GEOREG_INPUT_SYSTEM;
  *done = TRUE;
  return TRUE;
}

#else /* !GR_HAVE_GST_CUDA */

void
gst_georeg_cuda_open (GstGeoregCuda * c, GstElement * element, GrBackend backend,
    gint device_id)
{
  debug_init ();
  pool_use (c);
}


void
gst_georeg_cuda_set_context (GstGeoregCuda * c, GstElement * element,
    GstContext * context, gint device_id)
{
}

gboolean
gst_georeg_cuda_query (GstGeoregCuda * c, GstElement * element, GstQuery * query)
{
  return FALSE;
}

gboolean
gst_georeg_cuda_propose_allocation (GstGeoregCuda * c, GstElement * element,
    GstQuery * query)
{
  return FALSE;
}

void
gst_georeg_cuda_set_caps (GstGeoregCuda * c, GstCaps * caps)
{
}

gboolean
gst_georeg_cuda_set_frame_mask (GstGeoregCuda * c, const GrPlaneF * mask)
{
  return TRUE;
}

gboolean
gst_georeg_cuda_frame_to_plane (GstGeoregCuda * c, GstElement * element,
    GstBuffer * buf, const GstVideoInfo * info, gint nodata, gdouble scale,
    gboolean on_host, GrPlaneF * plane, GstGeoregInput * input, gchar * err,
    gsize errlen)
{
  *input = GST_GEOREG_INPUT_SYSTEM;
  return TRUE;
}

gboolean
gst_georeg_cuda_frame_to_device (GstGeoregCuda * c, GstElement * element,
    GstBuffer * buf, const GstVideoInfo * info, gint nodata, gint device,
    gdouble scale, gboolean on_host, GrPlaneF * plane, GstGeoregInput * input,
    gboolean * done, gchar * err, gsize errlen)
{
  *done = FALSE;
  *input = GST_GEOREG_INPUT_SYSTEM;
#if GR_HAVE_CUDA
  if (device < 0)
    return TRUE;
  if (!ensure_conv (c, device, err, errlen) ||
      !device_read (c, buf, info, FALSE, nodata, scale, on_host, plane, err, errlen))
    return FALSE;
  *done = TRUE;
#endif
  return TRUE;
}

#endif

/* ---- both builds ---------------------------------------------------------------- */

gboolean
gst_georeg_read_frame_plane (GstGeoregCuda * c, GstElement * element, GstBuffer * buf,
    const GstVideoInfo * info, gint nodata, GrPlaneF * plane, GstGeoregInput * input)
{
  char err[256] = "";
  GstVideoFrame frame;
  if (!gst_georeg_cuda_frame_to_plane (c, element, buf, info, nodata, 0.0, TRUE, plane,
          input, err, sizeof err)) {
    GST_ELEMENT_ERROR (element, LIBRARY, FAILED, ("Could not read the CUDA frame."),
        ("%s", err));
    return FALSE;
  }
  if (*input == GST_GEOREG_INPUT_CUDA_DEVICE)
    return TRUE;
  GstGeoregFrame *f = shared_frame_lock (c, buf, info, nodata);
  gboolean mem_ok = TRUE;
  if (f && !f->has_host) {
#if GR_HAVE_CUDA
    /* a device form made upstream comes down (a copy) rather than being converted
     * again, when this element's converter is on that device */
    if (f->device >= 0 && c->conv && c->conv_device == f->device &&
        gr_frame_cuda_download (c->conv, &f->dev, &f->host, err, sizeof err) == GR_OK)
      f->has_host = TRUE;
#endif
  }
  if (!f || !f->has_host) {
    if (!gst_video_frame_map (&frame, info, buf, GST_MAP_READ)) {
      if (f)
        shared_frame_unlock (f);
      GST_ELEMENT_ERROR (element, STREAM, DECODE, ("Could not map the frame."), (NULL));
      return FALSE;
    }
    mem_ok = gst_georeg_frame_to_plane (&frame, nodata, f ? &f->host : plane);
    gst_video_frame_unmap (&frame);
    if (mem_ok)
      count_conversion (c);
    if (f)
      f->has_host = mem_ok;
  }
  if (f) {
    /* the caller's own copy: elements may modify their plane (e.g. AND a mask) */
    if (mem_ok)
      mem_ok = plane_copy (&f->host, plane);
    shared_frame_unlock (f);
  }
  if (!mem_ok)
    GST_ELEMENT_ERROR (element, RESOURCE, NO_SPACE_LEFT, ("Out of memory."), (NULL));
  return mem_ok;
}
