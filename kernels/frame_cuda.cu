/* Device-resident video frames -> float planes (see frame_cuda.h).
 *
 * Bit-identity with the host path: every floating-point operation below is the one
 * the host code (gst/gstgeoregutils.c, kernels/image.c) performs, written with the
 * _rn intrinsics so that nvcc cannot contract a multiply and an add into an FMA, and
 * accumulated in the same order (row by row, left to right within a cell).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_util.h"
#include "frame_cuda.h"
#include "image.h"

struct GrFrameCuda {
  int device;
  cudaStream_t stream;
  float *d_full;          /* full-resolution plane (scale <= 0) */
  uint8_t *d_fmask;
  size_t full_cap;        /* pixels */
  float *d_small;         /* downscaled plane */
  uint8_t *d_smask;
  size_t small_cap;
  uint8_t *d_ext;         /* external mask, ext_w x ext_h, NULL = none */
  int ext_w, ext_h;
  uint8_t *d_raw;         /* host frames: their rows, uploaded as they are */
  size_t raw_cap;         /* bytes */
};

#define CK(call, what) GR_CUDA_CHECK (call, what, GR_ERR_CUDA)

/* The gray value / luma of pixel x of a row, and its alpha validity: the
 * expressions of gst_georeg_frame_to_plane. */
__device__ __forceinline__ float
read_px (const uint8_t *row, int x, int layout, bool *valid)
{
  switch (layout) {
    case GR_FRAME_Y16LE:
      return (float) (unsigned) (row[2 * x] | (row[2 * x + 1] << 8));
    case GR_FRAME_RGBA:
    case GR_FRAME_BGRA:{
      const uint8_t *p = row + 4 * x;
      const int ri = layout == GR_FRAME_BGRA ? 2 : 0, bi = 2 - ri;
      *valid = p[3] >= 128;
      return __fadd_rn (__fadd_rn (__fmul_rn (0.299f, (float) p[ri]),
              __fmul_rn (0.587f, (float) p[1])), __fmul_rn (0.114f, (float) p[bi]));
    }
    default:
      return (float) row[x];
  }
}

/* The validity of a pixel of value v: alpha, nodata (rounded value), external mask. */
__device__ __forceinline__ bool
pixel_valid (float v, bool alpha_ok, int nodata, const uint8_t *ext, size_t i)
{
  bool ok = alpha_ok;
  if (nodata >= 0 && (int) floorf (__fadd_rn (v, 0.5f)) == nodata)
    ok = false;
  if (ext && !ext[i])
    ok = false;
  return ok;
}

__global__ void
k_convert (const uint8_t *base, size_t stride, int w, int h, int layout, int nodata,
    const uint8_t *ext, float *out, uint8_t *mask)
{
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h)
    return;
  bool ok = true;
  const float v = read_px (base + (size_t) y * stride, x, layout, &ok);
  const size_t i = (size_t) y * w + x;
  out[i] = v;
  if (mask)
    mask[i] = pixel_valid (v, ok, nodata, ext, i);
}

/* gr_plane_downscale's cell [a, b) along one axis */
__device__ __forceinline__ void
cell_span (int i, double inv, int len, double *a, double *b)
{
  *a = __dmul_rn ((double) i, inv);
  *b = __dmul_rn ((double) (i + 1), inv);
  if (*b > len)
    *b = len;
}

/* How much of pixel [s, s + 1) lies in the cell's [a, b) along one axis */
__device__ __forceinline__ double
pixel_share (int s, double a, double b)
{
  return __dsub_rn (fmin (b, __dadd_rn ((double) s, 1.0)), fmax (a, (double) s));
}

/* A cell's value (the valid pixels' weighted mean) and its validity (at least half its
 * weight valid), as gr_plane_downscale writes them */
__device__ __forceinline__ void
cell_store (double sum, double wvalid, double wall, size_t o, float *out, uint8_t *mask)
{
  out[o] = wvalid > 0.0 ? __double2float_rn (__ddiv_rn (sum, wvalid)) : 0.0f;
  if (mask)
    mask[o] = wvalid >= __dmul_rn (0.5, wall) && wvalid > 0.0;
}

/* The pixels a downscale reads: a frame's rows (the value and validity of
 * gst_georeg_frame_to_plane), or a float plane that conversion made (its value and
 * mask).  Both give the same value and validity for the same pixel, so a downscale of
 * either is the same plane. */
struct RawPixels {
  const uint8_t *base;
  size_t stride;
  int w, layout, nodata;
  const uint8_t *ext;
  bool has_mask;
  __device__ __forceinline__ bool read (int sx, int sy, float *v) const
  {
    bool ok = true;
    *v = read_px (base + (size_t) sy * stride, sx, layout, &ok);
    return !has_mask || pixel_valid (*v, ok, nodata, ext, (size_t) sy * w + sx);
  }
};

struct PlanePixels {
  const float *data;
  const uint8_t *mask;    /* NULL = every pixel valid */
  size_t stride;          /* floats; the mask's is the width */
  int w;
  __device__ __forceinline__ bool read (int sx, int sy, float *v) const
  {
    *v = data[(size_t) sy * stride + sx];
    return !mask || mask[(size_t) sy * w + sx];
  }
};

template <class Pixels>
__global__ void
k_downscale (Pixels src, int w, int h, int ow, int oh, double invx, double invy,
    float *out, uint8_t *mask)
{
  const int ox = blockIdx.x * blockDim.x + threadIdx.x;
  const int oy = blockIdx.y * blockDim.y + threadIdx.y;
  if (ox >= ow || oy >= oh)
    return;
  double ya, yb, xa, xb;
  cell_span (oy, invy, h, &ya, &yb);
  cell_span (ox, invx, w, &xa, &xb);
  double sum = 0.0, wvalid = 0.0, wall = 0.0;
  for (int sy = (int) ya; sy < yb; sy++) {
    const double wy = pixel_share (sy, ya, yb);
    for (int sx = (int) xa; sx < xb; sx++) {
      const double wgt = __dmul_rn (wy, pixel_share (sx, xa, xb));
      wall = __dadd_rn (wall, wgt);
      float v;
      if (!src.read (sx, sy, &v))
        continue;
      wvalid = __dadd_rn (wvalid, wgt);
      sum = __dadd_rn (sum, __dmul_rn (wgt, (double) v));
    }
  }
  cell_store (sum, wvalid, wall, (size_t) oy * ow + ox, out, mask);
}

/* k_downscale for few, large cells (a 4K frame to GrLocalize's 48 px coarse
 * template: 1,300 cells of 80 x 80 px): with one thread a cell the GPU holds about a
 * warp per multiprocessor, each waiting on every one of its 6,400 loads in turn (about
 * a millisecond a downscale).  Here a block takes a cell: its threads read the pixels
 * and form their weights and products together, exactly as k_downscale does, and one
 * thread adds them up in k_downscale's order, so the result is the same bit for bit. */
#define CELL_CHUNK 1024
template <class Pixels>
__global__ void __launch_bounds__ (128)
k_downscale_cell (Pixels src, int w, int h, int ow, int oh, double invx, double invy,
    float *out, uint8_t *mask)
{
  __shared__ double wt[CELL_CHUNK], pr[CELL_CHUNK];
  __shared__ uint8_t ok[CELL_CHUNK];
  const int ox = blockIdx.x, oy = blockIdx.y;
  double ya, yb, xa, xb;
  cell_span (oy, invy, h, &ya, &yb);
  cell_span (ox, invx, w, &xa, &xb);
  /* k_downscale's loops: sy from (int) ya while sy < yb, sx likewise */
  const int sx0 = (int) xa, sy0 = (int) ya;
  const int nx = max ((int) ceil (xb) - sx0, 0), ny = max ((int) ceil (yb) - sy0, 0);
  const long total = (long) nx * ny;
  double sum = 0.0, wvalid = 0.0, wall = 0.0;
  for (long base = 0; base < total; base += CELL_CHUNK) {
    const int m = (int) min ((long) CELL_CHUNK, total - base);
    for (int e = threadIdx.x; e < m; e += blockDim.x) {
      const long k = base + e;
      const int sy = sy0 + (int) (k / nx), sx = sx0 + (int) (k % nx);
      const double wgt = __dmul_rn (pixel_share (sy, ya, yb), pixel_share (sx, xa, xb));
      float v;
      const bool valid = src.read (sx, sy, &v);
      wt[e] = wgt;
      ok[e] = valid;
      pr[e] = valid ? __dmul_rn (wgt, (double) v) : 0.0;
    }
    __syncthreads ();
    if (threadIdx.x == 0) {
#pragma unroll 4
      for (int e = 0; e < m; e++) {
        wall = __dadd_rn (wall, wt[e]);
        if (ok[e]) {
          wvalid = __dadd_rn (wvalid, wt[e]);
          sum = __dadd_rn (sum, pr[e]);
        }
      }
    }
    __syncthreads ();
  }
  if (threadIdx.x == 0)
    cell_store (sum, wvalid, wall, (size_t) oy * ow + ox, out, mask);
}

extern "C" GrFrameCuda *
gr_frame_cuda_new (int device, char *errbuf, size_t errlen)
{
  cudaError_t e = cudaSetDevice (device);
  if (e != cudaSuccess) {
    gr_set_err (errbuf, errlen, "CUDA device %d: %s", device, cudaGetErrorString (e));
    cudaGetLastError ();
    return NULL;
  }
  GrFrameCuda *c = (GrFrameCuda *) calloc (1, sizeof *c);
  if (!c) {
    gr_set_err (errbuf, errlen, "out of memory");
    return NULL;
  }
  c->device = device;
  e = cudaStreamCreateWithFlags (&c->stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    gr_set_err (errbuf, errlen, "cudaStreamCreate failed: %s", cudaGetErrorString (e));
    cudaGetLastError ();
    free (c);
    return NULL;
  }
  return c;
}

extern "C" void
gr_frame_cuda_free (GrFrameCuda *c)
{
  if (!c)
    return;
  cudaSetDevice (c->device);
  cudaStreamSynchronize (c->stream);
  cudaFree (c->d_full);
  cudaFree (c->d_fmask);
  cudaFree (c->d_small);
  cudaFree (c->d_smask);
  cudaFree (c->d_ext);
  cudaFree (c->d_raw);
  cudaStreamDestroy (c->stream);
  cudaGetLastError ();
  free (c);
}

extern "C" GrStatus
gr_frame_cuda_set_mask (GrFrameCuda *c, const uint8_t *mask, int width, int height,
    char *errbuf, size_t errlen)
{
  if (!c || (mask && (width <= 0 || height <= 0)))
    return GR_ERR_INVALID;
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  CK (cudaStreamSynchronize (c->stream), "cudaStreamSynchronize");
  cudaFree (c->d_ext);
  c->d_ext = NULL;
  c->ext_w = c->ext_h = 0;
  if (!mask)
    return GR_OK;
  const size_t n = (size_t) width * height;
  CK (gr_cuda_malloc (&c->d_ext, n), "cudaMalloc (mask)");
  CK (gr_cuda_upload (c->d_ext, mask, n), "mask upload");
  c->ext_w = width;
  c->ext_h = height;
  return GR_OK;
}

static cudaError_t
grow2 (float **d, uint8_t **m, size_t *cap, size_t n)
{
  if (*cap >= n)
    return cudaSuccess;
  cudaFree (*d);
  cudaFree (*m);
  *d = NULL;
  *m = NULL;
  *cap = 0;
  cudaError_t e = gr_cuda_malloc ((void **) d, n * sizeof (float));
  if (e == cudaSuccess)
    e = gr_cuda_malloc ((void **) m, n);
  if (e == cudaSuccess)
    *cap = n;
  return e;
}

static size_t
layout_bytes (GrFrameLayout l)
{
  return l == GR_FRAME_Y8 ? 1 : l == GR_FRAME_Y16LE ? 2 : 4;
}

static bool
frame_ok (const GrFrameDev *f)
{
  return f && f->data && f->width > 0 && f->height > 0 && f->layout >= GR_FRAME_Y8 &&
      f->layout <= GR_FRAME_BGRA && f->stride >= (size_t) f->width *
      layout_bytes (f->layout);
}

/* gr_plane_downscale's output size */
static void
downscale_size (int w, int h, double scale, int *ow, int *oh)
{
  *ow = (int) fmax (1.0, floor (w * scale + 0.5));
  *oh = (int) fmax (1.0, floor (h * scale + 0.5));
}

/* Launches the full-resolution conversion of f into data / mask (mask used when the
 * frame has invalid pixels to mark) and describes the result in *dev. */
static GrStatus
launch_convert (GrFrameCuda *c, const GrFrameDev *f, int nodata, float *data,
    uint8_t *mask, GrPlaneF *dev, char *errbuf, size_t errlen)
{
  const int w = f->width, h = f->height;
  const bool has_mask = f->layout == GR_FRAME_RGBA || f->layout == GR_FRAME_BGRA ||
      nodata >= 0 || c->d_ext;
  const dim3 blk (32, 8), grd ((w + 31) / 32, (h + 7) / 8);
  k_convert<<<grd, blk, 0, c->stream>>> ((const uint8_t *) f->data, f->stride, w, h,
      (int) f->layout, nodata, c->d_ext, data, has_mask ? mask : NULL);
  memset (dev, 0, sizeof *dev);
  dev->data = data;
  dev->mask = has_mask ? mask : NULL;
  dev->width = w;
  dev->height = h;
  dev->stride = (size_t) w;
  CK (cudaGetLastError (), "frame conversion launch");
  return GR_OK;
}

/* Launches the area downscale of `src` (a frame's pixels or a float plane, w x h)
 * into c's small plane, described in *dev. */
template <class Pixels>
static GrStatus
launch_downscale (GrFrameCuda *c, const Pixels &src, int w, int h, bool has_mask,
    double scale, GrPlaneF *dev, char *errbuf, size_t errlen)
{
  int ow, oh;
  downscale_size (w, h, scale, &ow, &oh);
  /* exact cell edges from the actual output size, as gr_plane_downscale */
  const double invx = (double) w / ow, invy = (double) h / oh;
  CK (grow2 (&c->d_small, &c->d_smask, &c->small_cap, (size_t) ow * oh),
      "cudaMalloc (plane)");
  if (invx * invy >= 256.0 && (long) ow * oh <= 65536 && oh <= 65535) {
    /* few large cells: a block a cell (k_downscale_cell; a grid's y is at most 65,535) */
    k_downscale_cell<<<dim3 (ow, oh), 128, 0, c->stream>>> (src, w, h, ow, oh, invx, invy,
        c->d_small, has_mask ? c->d_smask : NULL);
  } else {
    const dim3 blk (32, 8), grd ((ow + 31) / 32, (oh + 7) / 8);
    k_downscale<<<grd, blk, 0, c->stream>>> (src, w, h, ow, oh, invx, invy, c->d_small,
        has_mask ? c->d_smask : NULL);
  }
  memset (dev, 0, sizeof *dev);
  dev->data = c->d_small;
  dev->mask = has_mask ? c->d_smask : NULL;
  dev->width = ow;
  dev->height = oh;
  dev->stride = (size_t) ow;
  CK (cudaGetLastError (), "frame downscale launch");
  return GR_OK;
}

extern "C" GrStatus
gr_frame_cuda_convert (GrFrameCuda *c, const GrFrameDev *f, int nodata, double scale,
    GrPlaneF *dev, char *errbuf, size_t errlen)
{
  if (!c || !frame_ok (f) || !dev || scale > 1.0) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  const int w = f->width, h = f->height;
  if (c->d_ext && (c->ext_w != w || c->ext_h != h)) {
    gr_set_err (errbuf, errlen, "the mask is %dx%d, the frame %dx%d", c->ext_w, c->ext_h,
        w, h);
    return GR_ERR_INVALID;
  }
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  if (scale <= 0.0) {
    CK (grow2 (&c->d_full, &c->d_fmask, &c->full_cap, (size_t) w * h), "cudaMalloc (plane)");
    return launch_convert (c, f, nodata, c->d_full, c->d_fmask, dev, errbuf, errlen);
  }
  RawPixels px;
  px.base = (const uint8_t *) f->data;
  px.stride = f->stride;
  px.w = w;
  px.layout = (int) f->layout;
  px.nodata = nodata;
  px.ext = c->d_ext;
  px.has_mask = f->layout == GR_FRAME_RGBA || f->layout == GR_FRAME_BGRA ||
      nodata >= 0 || c->d_ext;
  return launch_downscale (c, px, w, h, px.has_mask, scale, dev, errbuf, errlen);
}

/* The rows of a host frame uploaded as they are into c's raw buffer; *d describes
 * them there. */
static GrStatus
upload_rows (GrFrameCuda *c, const GrFrameDev *f, GrFrameDev *d, char *errbuf,
    size_t errlen)
{
  const size_t row = (size_t) f->width * layout_bytes (f->layout);
  const size_t need = row * (size_t) f->height;
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  if (c->raw_cap < need) {
    CK (cudaStreamSynchronize (c->stream), "cudaStreamSynchronize");
    cudaFree (c->d_raw);
    c->d_raw = NULL;
    c->raw_cap = 0;
    CK (gr_cuda_malloc ((void **) &c->d_raw, need), "cudaMalloc (frame rows)");
    c->raw_cap = need;
  }
  /* pageable source: the call returns once the rows are staged */
  CK (cudaMemcpy2DAsync (c->d_raw, row, f->data, f->stride, row, (size_t) f->height,
          cudaMemcpyHostToDevice, c->stream), "frame upload");
  *d = *f;
  d->data = c->d_raw;
  d->stride = row;
  return GR_OK;
}

extern "C" GrStatus
gr_frame_cuda_convert_to (GrFrameCuda *c, const GrFrameDev *f, bool host_rows,
    int nodata, const GrPlaneF *buffers, GrPlaneF *dev, char *errbuf, size_t errlen)
{
  if (!c || !frame_ok (f) || !buffers || !buffers->data || !buffers->mask || !dev ||
      buffers->width != f->width || buffers->height != f->height ||
      buffers->stride != (size_t) f->width) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  if (c->d_ext && (c->ext_w != f->width || c->ext_h != f->height)) {
    gr_set_err (errbuf, errlen, "the mask is %dx%d, the frame %dx%d", c->ext_w, c->ext_h,
        f->width, f->height);
    return GR_ERR_INVALID;
  }
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  GrFrameDev d = *f;
  if (host_rows) {
    GrStatus st = upload_rows (c, f, &d, errbuf, errlen);
    if (st != GR_OK)
      return st;
  }
  return launch_convert (c, &d, nodata, buffers->data, buffers->mask, dev, errbuf,
      errlen);
}

extern "C" GrStatus
gr_frame_cuda_plane_alloc (int device, int width, int height, GrPlaneF *dev,
    char *errbuf, size_t errlen)
{
  memset (dev, 0, sizeof *dev);
  if (width <= 0 || height <= 0) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  const size_t n = (size_t) width * height;
  CK (cudaSetDevice (device), "cudaSetDevice");
  float *data = NULL;
  uint8_t *mask = NULL;
  cudaError_t e = gr_cuda_malloc ((void **) &data, n * sizeof (float));
  if (e == cudaSuccess)
    e = gr_cuda_malloc ((void **) &mask, n);
  if (e != cudaSuccess) {
    cudaFree (data);
    cudaGetLastError ();
    gr_set_err (errbuf, errlen, "cudaMalloc (shared plane, %dx%d): %s", width, height,
        cudaGetErrorString (e));
    return GR_ERR_NOMEM;
  }
  dev->data = data;
  dev->mask = mask;
  dev->width = width;
  dev->height = height;
  dev->stride = (size_t) width;
  return GR_OK;
}

extern "C" void
gr_frame_cuda_plane_free (int device, GrPlaneF *dev)
{
  if (!dev || (!dev->data && !dev->mask))
    return;
  /* the last reference may drop on any thread (a sink's, the application's): its
   * current device is put back afterwards */
  int prev = -1;
  if (cudaGetDevice (&prev) != cudaSuccess)
    prev = -1;
  if (cudaSetDevice (device) == cudaSuccess) {
    cudaFree (dev->data);
    cudaFree (dev->mask);
  }
  if (prev >= 0 && prev != device)
    cudaSetDevice (prev);
  cudaGetLastError ();
  memset (dev, 0, sizeof *dev);
}

extern "C" GrStatus
gr_frame_cuda_sync (GrFrameCuda *c, char *errbuf, size_t errlen)
{
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  CK (cudaStreamSynchronize (c->stream), "frame conversion");
  return GR_OK;
}

/* the converted plane `dev` (c's memory) into the host plane `out` */
static GrStatus
download (GrFrameCuda *c, const GrPlaneF *dev, GrPlaneF *out, char *errbuf, size_t errlen)
{
  if (!out->data || out->width != dev->width || out->height != dev->height ||
      out->stride != (size_t) dev->width || (out->mask != NULL) != (dev->mask != NULL)) {
    gr_plane_clear (out);
    if (!gr_plane_alloc (out, dev->width, dev->height, dev->mask != NULL)) {
      gr_set_err (errbuf, errlen, "out of memory");
      cudaStreamSynchronize (c->stream);
      return GR_ERR_NOMEM;
    }
  }
  const size_t n = (size_t) dev->width * dev->height;
  CK (cudaMemcpyAsync (out->data, dev->data, n * sizeof (float), cudaMemcpyDeviceToHost,
          c->stream), "plane download");
  if (dev->mask)
    CK (cudaMemcpyAsync (out->mask, dev->mask, n, cudaMemcpyDeviceToHost, c->stream),
        "mask download");
  return gr_frame_cuda_sync (c, errbuf, errlen);
}

extern "C" GrStatus
gr_frame_cuda_download (GrFrameCuda *c, const GrPlaneF *src, GrPlaneF *out,
    char *errbuf, size_t errlen)
{
  if (!c || !src || !src->data || !out || src->stride != (size_t) src->width) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  return download (c, src, out, errbuf, errlen);
}

extern "C" GrStatus
gr_frame_cuda_downscale (GrFrameCuda *c, const GrPlaneF *src, double scale,
    bool on_host, GrPlaneF *out, char *errbuf, size_t errlen)
{
  if (!c || !src || !src->data || !out || src->width <= 0 || src->height <= 0 ||
      !(scale > 0.0) || scale > 1.0) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  CK (cudaSetDevice (c->device), "cudaSetDevice");
  PlanePixels px;
  px.data = src->data;
  px.mask = src->mask;
  px.stride = src->stride;
  px.w = src->width;
  GrPlaneF small;
  GrStatus st = launch_downscale (c, px, src->width, src->height, src->mask != NULL,
      scale, &small, errbuf, errlen);
  if (st != GR_OK)
    return st;
  if (on_host)
    return download (c, &small, out, errbuf, errlen);
  *out = small;
  return gr_frame_cuda_sync (c, errbuf, errlen);
}

extern "C" GrStatus
gr_frame_cuda_to_host (GrFrameCuda *c, const GrFrameDev *f, int nodata, double scale,
    GrPlaneF *out, char *errbuf, size_t errlen)
{
  GrPlaneF dev;
  GrStatus st = gr_frame_cuda_convert (c, f, nodata, scale, &dev, errbuf, errlen);
  if (st != GR_OK)
    return st;
  return download (c, &dev, out, errbuf, errlen);
}

extern "C" GrStatus
gr_frame_cuda_convert_host (GrFrameCuda *c, const GrFrameDev *f, int nodata,
    double scale, GrPlaneF *dev, char *errbuf, size_t errlen)
{
  if (!c || !frame_ok (f)) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  GrFrameDev d;
  GrStatus st = upload_rows (c, f, &d, errbuf, errlen);
  if (st != GR_OK)
    return st;
  return gr_frame_cuda_convert (c, &d, nodata, scale, dev, errbuf, errlen);
}

extern "C" GrStatus
gr_frame_cuda_host_to_host (GrFrameCuda *c, const GrFrameDev *f, int nodata,
    double scale, GrPlaneF *out, char *errbuf, size_t errlen)
{
  GrPlaneF dev;
  GrStatus st = gr_frame_cuda_convert_host (c, f, nodata, scale, &dev, errbuf, errlen);
  if (st != GR_OK)
    return st;
  return download (c, &dev, out, errbuf, errlen);
}

extern "C" GrStatus
gr_cuda_make_primary_current (int device, char *errbuf, size_t errlen)
{
  CK (cudaSetDevice (device), "cudaSetDevice");
  CK (cudaFree (0), "context creation");
  return GR_OK;
}

extern "C" GrStatus
gr_cuda_mem_info (int device, size_t *free_bytes, size_t *total_bytes)
{
  int n = 0;
  if (cudaGetDeviceCount (&n) != cudaSuccess || n <= 0 || device >= n) {
    cudaGetLastError ();
    return GR_ERR_NO_CUDA;
  }
  if (cudaSetDevice (device < 0 ? 0 : device) != cudaSuccess ||
      cudaMemGetInfo (free_bytes, total_bytes) != cudaSuccess) {
    cudaGetLastError ();
    return GR_ERR_CUDA;
  }
  return GR_OK;
}
