/* The frame's downscales on the GPU equal the host's bit for bit (issue 13, pose path).
 *
 * nmilocalize's heading and scale search (GrLocalize) reads a CUDA frame only through
 * its downscales, made on the device from the frame's shared device form
 * (gst/gstgeoregcuda.c: gr_frame_cuda_convert_to, then gr_frame_cuda_downscale) and
 * brought back small; on the host they are gr_plane_downscale of the frame's float
 * plane.  The search's results stay those of the host path only if the planes are
 * identical, so checked here on that same sequence of calls:
 *  - 8-bit grey and RGBA frames (random values; 4K and odd sizes; RGBA's luma is
 *    fractional, so a cell's sums added in another order would show in the last bits,
 *    and its alpha masks pixels), without nodata and with a nodata value (masks),
 *    converted into device buffers as a shared frame is, then
 *    downscaled on the device at the pose path's scales (about 1/80 and 1/30 of a 4K
 *    frame: few large cells, one block a cell) and at random ones: values and masks
 *    equal the host's byte for byte;
 *  - the one-call form (gr_frame_cuda_host_to_host with a scale) likewise.
 * Skips (77) without CUDA in the build or a device.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gr_common.h"
#include "image.h"
#include "test_check.h"

#if !GR_HAVE_CUDA
int
main (void)
{
  printf ("SKIP: built without CUDA\n");
  return 77;
}
#else
#include "frame_cuda.h"

/* The host path: gst_georeg_frame_to_plane's plane of an 8-bit grey or RGBA frame (the
 * value: RGBA's luma as gst/gstgeoregutils.c forms it, fractional, so that the order of
 * a cell's sums shows in the last bits; a mask, invalid where the value rounds to
 * nodata or alpha is under 128, when nodata >= 0 or RGBA), then the downscale. */
static void
host_downscale (const uint8_t *pix, int w, int h, bool rgba, int nodata, double scale,
    GrPlaneF *out)
{
  GrPlaneF p;
  gr_plane_alloc (&p, w, h, nodata >= 0 || rgba);
  for (size_t i = 0; i < (size_t) w * h; i++) {
    bool valid = true;
    if (rgba) {
      const uint8_t *q = pix + 4 * i;
      p.data[i] = 0.299f * q[0] + 0.587f * q[1] + 0.114f * q[2];
      valid = q[3] >= 128;
    } else {
      p.data[i] = pix[i];
    }
    if (nodata >= 0 && (int) floorf (p.data[i] + 0.5f) == nodata)
      valid = false;
    if (p.mask)
      p.mask[i] = valid;
  }
  memset (out, 0, sizeof *out);
  CHECK (gr_plane_downscale (&p, scale, out) == GR_OK, "host downscale %g", scale);
  gr_plane_clear (&p);
}

static bool
same (const GrPlaneF *a, const GrPlaneF *b)
{
  if (a->width != b->width || a->height != b->height || (!a->mask) != (!b->mask))
    return false;
  for (int y = 0; y < a->height; y++)
    if (memcmp (a->data + (size_t) y * a->stride, b->data + (size_t) y * b->stride,
            sizeof (float) * a->width) ||
        (a->mask && memcmp (a->mask + (size_t) y * a->width, b->mask +
                (size_t) y * b->width, a->width)))
      return false;
  return true;
}

int
main (void)
{
  if (gr_cuda_device_count () <= 0) {
    printf ("SKIP: no usable CUDA device\n");
    return 77;
  }
  char e[256] = "";
  GrFrameCuda *c = gr_frame_cuda_new (0, e, sizeof e);
  CHECK (c != NULL, "converter: %s", e);
  if (!c)
    return CHECK_DONE ();
  srand (13);
  const int sizes[][2] = { {3840, 2160}, {1920, 1080}, {641, 479}, {97, 33} };
  int cases = 0, differ = 0;
  for (int si = 0; si < 8; si++) {
    /* each size as grey, then as RGBA (alpha under 128 on one pixel in ten) */
    const int w = sizes[si / 2][0], h = sizes[si / 2][1];
    const bool rgba = si % 2 == 1;
    const int bpp = rgba ? 4 : 1;
    uint8_t *pix = malloc ((size_t) w * h * bpp);
    for (size_t i = 0; i < (size_t) w * h * bpp; i++)
      pix[i] = (uint8_t) (rand () % 256);
    if (rgba)
      for (size_t i = 0; i < (size_t) w * h; i++)
        pix[4 * i + 3] = rand () % 10 ? 255 : 0;
    const GrFrameDev f = { pix, (size_t) w * bpp, w, h, rgba ? GR_FRAME_RGBA : GR_FRAME_Y8 };
    for (int nd = 0; nd < 2; nd++) {
      const int nodata = nd ? 7 : -1;
      /* the shared frame's device form (gst/gstgeoregcuda.c: convert_frame `into`) */
      GrPlaneF buffers, dev;
      CHECK (gr_frame_cuda_plane_alloc (0, w, h, &buffers, e, sizeof e) == GR_OK,
          "device plane: %s", e);
      CHECK (gr_frame_cuda_convert_to (c, &f, true, nodata, &buffers, &dev, e,
              sizeof e) == GR_OK && gr_frame_cuda_sync (c, e, sizeof e) == GR_OK,
          "convert: %s", e);
      const double scales[] = { 0.0125 * 0.97, 0.0125 * 1.05, 0.0333, 0.0345,
        (rand () % 1000 + 1) / 1000.0, (rand () % 200 + 1) / 1000.0
      };
      for (int k = 0; k < 6; k++) {
        GrPlaneF want, got = { 0 }, one = { 0 };
        host_downscale (pix, w, h, rgba, nodata, scales[k], &want);
        CHECK (gr_frame_cuda_downscale (c, &dev, scales[k], true, &got, e,
                sizeof e) == GR_OK, "device downscale %g: %s", scales[k], e);
        CHECK (gr_frame_cuda_host_to_host (c, &f, nodata, scales[k], &one, e,
                sizeof e) == GR_OK, "host_to_host %g: %s", scales[k], e);
        const bool ok = same (&want, &got) && same (&want, &one);
        if (!ok)
          printf ("  %d x %d %s, nodata %d, scale %g: device %dx%d differs from the "
              "host's %dx%d\n", w, h, rgba ? "RGBA" : "grey", nodata, scales[k],
              got.width, got.height,
              want.width, want.height);
        differ += !ok;
        cases++;
        gr_plane_clear (&want);
        gr_plane_clear (&got);
        gr_plane_clear (&one);
      }
      gr_frame_cuda_plane_free (0, &buffers);
    }
    free (pix);
  }
  printf ("%d of %d device downscales equal the host's bit for bit\n", cases - differ,
      cases);
  CHECK (differ == 0, "%d of %d device downscales differ from the host's", differ,
      cases);
  gr_frame_cuda_free (c);
  return CHECK_DONE ();
}
#endif
