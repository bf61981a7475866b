/* nmiregister's per-frame work on frames that stay in device memory, and the device
 * side of control imagery shared between elements (kernels/register_cuda.cu).
 *
 * Every function reproduces the host code of kernels/register.c operation by
 * operation (IEEE double arithmetic written with the _rn intrinsics, so that nvcc
 * cannot contract a multiply and an add into an FMA, in the host's evaluation
 * order), so a frame matched from device memory gives the very bytes the host path
 * gives: value range, grey levels, second-pass templates.
 *
 * Planes are GrPlaneF whose data and mask are device pointers of the given device
 * (its primary context), data with any row stride, mask packed (width bytes a row).
 * Only built with CUDA.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_REGISTER_CUDA_H
#define GR_REGISTER_CUDA_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct GrRegisterCuda GrRegisterCuda;

/* One per element: its own CUDA stream and grow-only buffers.  Every call is finished
 * (its stream synchronized) when it returns. */
GrRegisterCuda *gr_register_cuda_new (int device, char *errbuf, size_t errlen);
void gr_register_cuda_free (GrRegisterCuda *rc);

/* The smallest and largest value of the valid pixels of a device plane (nmiregister's
 * min-max value range); *any = false when no pixel is valid. */
GrStatus gr_register_cuda_minmax (GrRegisterCuda *rc, const GrPlaneF *dev, float *mn,
    float *mx, bool *any, char *errbuf, size_t errlen);

/* nmiregister's grey levels of a device plane: floor((v - a) / (b - a) * levels)
 * clamped to 0 .. levels - 1 (0 everywhere when b <= a), 0 where the mask is 0;
 * packed (stride = width) into a buffer of rc, *d_levels, valid until the next call. */
GrStatus gr_register_cuda_levels (GrRegisterCuda *rc, const GrPlaneF *dev, double a,
    double b, int levels, const uint8_t **d_levels, char *errbuf, size_t errlen);

/* nmiregister's second-pass templates.  For window centre k (qxy[2k], qxy[2k + 1],
 * control pixels) the T x T template whose pixel (i, j) is the bilinear value of the
 * device plane at Hi (qx - T/2 + i, qy - T/2 + j) (pixel-index coordinates; invalid
 * when Hi is singular there, outside the plane, or where a neighbour with a nonzero
 * weight is masked), in grey levels as gr_register_cuda_levels; invalid pixels are 0
 * with mask 0.  nvalid[k] (host) receives the valid pixels of template k.  The
 * templates stay in rc for gr_register_cuda_gather.  lens (NULL: none): fx fy cx cy
 * k1 k2 k3 p1 p2 of the frame's lens; Hi then gives undistorted positions, which go
 * through the lens (register.c's lens_distort, the same bytes) before sampling. */
GrStatus gr_register_cuda_resample (GrRegisterCuda *rc, const GrPlaneF *dev,
    const double Hi[9], const double lens[9], const int32_t *qxy, int n, int T, double a,
    double b, int levels, int *nvalid, char *errbuf, size_t errlen);

/* The templates keep[0 .. nkeep) of the last resample, in that order, with their
 * masks, for gr_nmi_sparse_run_device: *d_tpl and *d_tmk are buffers of rc (valid
 * until the next call). */
GrStatus gr_register_cuda_gather (GrRegisterCuda *rc, const int *keep, int nkeep, int T,
    const uint8_t **d_tpl, const uint8_t **d_tmk, char *errbuf, size_t errlen);

/* A device plane copied into a host plane (reallocated with gr_plane_alloc when its
 * size or mask presence differ; zero it before the first call), stride = width. */
GrStatus gr_register_cuda_download (GrRegisterCuda *rc, const GrPlaneF *dev,
    GrPlaneF *host, char *errbuf, size_t errlen);

/* ---- control imagery resident on a device (gst/gstgeoregcontrolcuda.c) */

/* Uploads a host plane (any stride) to `device`: dev->data packed floats (stride =
 * width); dev->mask its mask when at least one pixel is invalid, else NULL (a mask
 * with every pixel valid changes no result).  Free both with gr_cuda_device_free. */
GrStatus gr_cuda_plane_upload (int device, const GrPlaneF *host, GrPlaneF *dev,
    char *errbuf, size_t errlen);

/* The grey levels of a device plane (as gr_register_cuda_levels) into a new device
 * buffer *d_out (packed; free it with gr_cuda_device_free) and the largest level of a
 * valid pixel (*vmax; 0 when none).  Synchronous. */
GrStatus gr_cuda_plane_levels (int device, const GrPlaneF *dev, double a, double b,
    int levels, uint8_t **d_out, int *vmax, char *errbuf, size_t errlen);

void gr_cuda_device_free (int device, void *p);

#ifdef __cplusplus
}
#endif
#endif
