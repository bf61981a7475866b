/* Device-resident video frames -> float planes, on the GPU (kernels/frame_cuda.cu).
 *
 * The device twin of gst_georeg_frame_to_plane (+ gst_georeg_plane_and_mask) and of
 * gr_plane_downscale: it reads the gray value or luma of a frame that already lies in
 * device memory (a CUDA-memory video buffer: one plane, any row stride), applies the
 * alpha / nodata / external masks, and optionally area-downscales it, with the same
 * floating-point operations in the same order as the host code (no contraction into
 * FMA), so the planes are bit-identical to the host path's.
 *
 * Runs in the device's primary context (the one the other engines use); the frame's
 * pointer must belong to that context.  Only built with CUDA.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_FRAME_CUDA_H
#define GR_FRAME_CUDA_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a pixel of plane 0 is read: one byte (GRAY8, or the Y plane of I420/NV12),
 * 16-bit little endian (GRAY16_LE), or 4 bytes RGBA / BGRA (BT.601 luma, alpha >= 128
 * is valid). */
typedef enum {
  GR_FRAME_Y8 = 0,
  GR_FRAME_Y16LE = 1,
  GR_FRAME_RGBA = 2,
  GR_FRAME_BGRA = 3,
} GrFrameLayout;

typedef struct {
  const void *data;       /* device pointer to the first row */
  size_t stride;          /* bytes between rows */
  int width, height;
  GrFrameLayout layout;
} GrFrameDev;

typedef struct GrFrameCuda GrFrameCuda;

/* One converter: its own CUDA stream and grow-only device and pinned buffers. */
GrFrameCuda *gr_frame_cuda_new (int device, char *errbuf, size_t errlen);
void gr_frame_cuda_free (GrFrameCuda *c);

/* An external frame-sized mask (host, nonzero = valid), uploaded once and ANDed into
 * every frame's mask (as gst_georeg_plane_and_mask); NULL clears it. */
GrStatus gr_frame_cuda_set_mask (GrFrameCuda *c, const uint8_t *mask, int width,
    int height, char *errbuf, size_t errlen);

/* Converts the frame.  nodata >= 0: a pixel whose rounded value equals it is invalid.
 * scale <= 0: no resampling (the plane of gst_georeg_frame_to_plane, with its mask
 * when the layout has alpha, nodata >= 0 or a mask is set); 0 < scale <= 1: then
 * gr_plane_downscale (scale).  The result stays on the device: *dev receives device
 * pointers owned by c (valid until the next call), stride = width.  Asynchronous on
 * c's stream; gr_frame_cuda_sync waits for it. */
GrStatus gr_frame_cuda_convert (GrFrameCuda *c, const GrFrameDev *f, int nodata,
    double scale, GrPlaneF *dev, char *errbuf, size_t errlen);

/* gr_frame_cuda_convert, then a copy into the host plane `out` (reallocated with
 * gr_plane_alloc when its size or mask presence differs; zero it before the first
 * call), and a wait for the copy. */
GrStatus gr_frame_cuda_to_host (GrFrameCuda *c, const GrFrameDev *f, int nodata,
    double scale, GrPlaneF *out, char *errbuf, size_t errlen);

GrStatus gr_frame_cuda_sync (GrFrameCuda *c, char *errbuf, size_t errlen);

/* gr_frame_cuda_convert for a frame in host memory (f->data a host pointer, any
 * stride): its rows are uploaded as they are (1 byte a pixel for GR_FRAME_Y8, 2 for
 * Y16LE, 4 for RGBA / BGRA; never a float plane) into a device buffer of c, then
 * converted on the device, so the result equals gst_georeg_frame_to_plane's plane
 * bit for bit.  The host rows may be reused when it returns; the conversion itself is
 * asynchronous on c's stream, as gr_frame_cuda_convert. */
GrStatus gr_frame_cuda_convert_host (GrFrameCuda *c, const GrFrameDev *f, int nodata,
    double scale, GrPlaneF *dev, char *errbuf, size_t errlen);

/* gr_frame_cuda_convert_host, then a copy into the host plane `out` (as
 * gr_frame_cuda_to_host): e.g. a 4K 8-bit frame goes up as 8 MB and comes back
 * downscaled. */
GrStatus gr_frame_cuda_host_to_host (GrFrameCuda *c, const GrFrameDev *f, int nodata,
    double scale, GrPlaneF *out, char *errbuf, size_t errlen);

/* ---- planes that outlive the converter's next call (frames shared between
 * elements, gst/georeg-frame-meta.h) */

/* A device plane of width x height floats and as many mask bytes (stride = width),
 * on `device` (its primary context); free with gr_frame_cuda_plane_free on the same
 * device. */
GrStatus gr_frame_cuda_plane_alloc (int device, int width, int height, GrPlaneF *dev,
    char *errbuf, size_t errlen);
void gr_frame_cuda_plane_free (int device, GrPlaneF *dev);

/* gr_frame_cuda_convert (scale <= 0) into `buffers` (gr_frame_cuda_plane_alloc's, the
 * frame's size) instead of c's own memory; host_rows: f->data is host memory, uploaded
 * first as gr_frame_cuda_convert_host does.  *dev describes the result (buffers' data,
 * their mask or NULL when every pixel is valid).  Asynchronous on c's stream. */
GrStatus gr_frame_cuda_convert_to (GrFrameCuda *c, const GrFrameDev *f, bool host_rows,
    int nodata, const GrPlaneF *buffers, GrPlaneF *dev, char *errbuf, size_t errlen);

/* gr_plane_downscale of a device plane (e.g. gr_frame_cuda_convert_to's) on c's
 * device, bit-identical to the host's: on_host, copied into the host plane `out` (as
 * gr_frame_cuda_to_host); else *out receives c's device memory (valid until the next
 * call).  Finished when it returns. */
GrStatus gr_frame_cuda_downscale (GrFrameCuda *c, const GrPlaneF *src, double scale,
    bool on_host, GrPlaneF *out, char *errbuf, size_t errlen);

/* A device plane (stride = width) copied into the host plane `out` (reallocated as
 * gr_frame_cuda_to_host does), finished when it returns. */
GrStatus gr_frame_cuda_download (GrFrameCuda *c, const GrPlaneF *src, GrPlaneF *out,
    char *errbuf, size_t errlen);

/* Makes the device's primary context (the one every georeg engine runs in) current
 * on the calling thread, creating it if needed. */
GrStatus gr_cuda_make_primary_current (int device, char *errbuf, size_t errlen);

/* Device memory: free and total bytes of the current device (cudaMemGetInfo), for
 * leak tests.  GR_ERR_NO_CUDA without a device. */
GrStatus gr_cuda_mem_info (int device, size_t *free_bytes, size_t *total_bytes);

#ifdef __cplusplus
}
#endif
#endif
