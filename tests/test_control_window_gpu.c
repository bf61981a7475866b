/* Windows of a control of any size resident on a CUDA device
 * (gst/gstgeoregcontrolcuda.c, gst_georeg_device_control_window_*): a window is
 * uploaded once per device however often it is asked for, its device plane equals its
 * host plane bit for bit (values and mask), its levels derive from that plane, a
 * window that slid is a new upload, and releasing every entry frees the device copies.
 * Skips (77) without a CUDA device or without GDAL.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#if GR_HAVE_CUDA && GR_HAVE_GDAL
#include "test_check.h"
#include <gdal.h>

#include "image.h"
#include "register_cuda.h"
#include "../gst/gstgeoregcontrol.c"
#include "../gst/gstgeoregcontrolcuda.c"

#define W 700
#define H 500

/* The device plane back on the host equals the window's plane. */
static void
check_same (GrRegisterCuda *rc, const GstGeoregDeviceControl *dc,
    const GrControlWindow *w, const char *what)
{
  char err[256] = "";
  GrPlaneF back = { 0 };
  CHECK (gr_register_cuda_download (rc, gst_georeg_device_control_get_plane (dc), &back,
          err, sizeof err) == GR_OK, "%s: download: %s", what, err);
  const GrPlaneF *p = &w->raster.plane;
  CHECK (back.width == p->width && back.height == p->height
      && (back.mask != NULL) == (p->mask != NULL), "%s: device plane %d x %d", what,
      back.width, back.height);
  long bad = 0;
  for (int y = 0; back.data && y < p->height && back.width == p->width; y++) {
    if (memcmp (back.data + (size_t) y * back.stride, p->data + (size_t) y * p->stride,
            sizeof (float) * (size_t) p->width) != 0)
      bad++;
    if (p->mask && back.mask && memcmp (back.mask + (size_t) y * back.width,
            p->mask + (size_t) y * p->width, (size_t) p->width) != 0)
      bad++;
  }
  CHECK (bad == 0, "%s: %ld rows differ on the device", what, bad);
  gr_plane_clear (&back);
}

int
main (void)
{
  if (gr_cuda_device_count () <= 0) {
    printf ("SKIP: no usable CUDA device\n");
    return 77;
  }
  GDALAllRegister ();
  char err[512] = "";
  gchar *dir = g_dir_make_tmp ("georeg-window-gpu-XXXXXX", NULL);
  gchar *path = g_build_filename (dir, "control.tif", NULL);

  /* a GeoTIFF with texture and a nodata corner */
  uint8_t *pix = malloc ((size_t) W * H);
  GRand *rng = g_rand_new_with_seed (18);
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++)
      pix[(size_t) y * W + x] = x + y < 60 ? 0 : (uint8_t) g_rand_int_range (rng, 1, 256);
  g_rand_free (rng);
  GDALDatasetH ds = GDALCreate (GDALGetDriverByName ("GTiff"), path, W, H, 1, GDT_Byte,
      NULL);
  double geo[6] = { 431000, 0.1, 0, 4577000, 0, -0.1 };
  GDALSetGeoTransform (ds, geo);
  GDALRasterBandH band = GDALGetRasterBand (ds, 1);
  GDALSetRasterNoDataValue (band, 0);
  CHECK (GDALRasterIO (band, GF_Write, 0, 0, W, H, pix, W, H, GDT_Byte, 0, 0) == CE_None,
      "write");
  GDALClose (ds);

  GrStatus st;
  GstGeoregControl *c = gst_georeg_control_open_windowed (path, 0, 0, &st, err, sizeof err);
  CHECK (c != NULL, "open: %s", err);
  GrRegisterCuda *rc = gr_register_cuda_new (0, err, sizeof err);
  CHECK (rc != NULL, "gr_register_cuda_new: %s", err);
  if (!c || !rc)
    return CHECK_DONE ();

  GstGeoregDeviceControlStats s0, s1;
  gst_georeg_device_control_stats (&s0);
  CHECK (gst_georeg_device_control_plane (c, 0, &st, err, sizeof err) == NULL
      && st == GR_ERR_INVALID, "a windowed control has no whole plane to upload");

  /* a window at the nodata corner (masked pixels), asked for twice */
  const double box_a[4] = { 0, 0, 200, 150 };
  GstGeoregControlWindow *wa = gst_georeg_control_window_px (c, box_a, 0, 16, NULL, &st,
      err, sizeof err);
  CHECK (wa != NULL, "window a: %s", err);
  GstGeoregDeviceControl *da = gst_georeg_device_control_window_plane (wa, 0, &st, err,
      sizeof err);
  GstGeoregDeviceControl *da2 = gst_georeg_device_control_window_plane (wa, 0, &st, err,
      sizeof err);
  CHECK (da && da == da2, "the same window is one device entry: %s", err);
  gst_georeg_device_control_stats (&s1);
  CHECK (s1.uploads == s0.uploads + 1, "one upload for two asks (%llu)",
      (unsigned long long) (s1.uploads - s0.uploads));
  if (da)
    check_same (rc, da, gst_georeg_control_window_get (wa), "window a");

  /* its levels, derived on the device from the same plane */
  GstGeoregDeviceControl *la = gst_georeg_device_control_window_levels (wa, 0, 16, 0.0,
      255.0, &st, err, sizeof err);
  gint vmax = 0;
  CHECK (la && gst_georeg_device_control_get_levels (la, &vmax) && vmax > 0 && vmax <= 15
      && gst_georeg_device_control_get_plane (la)->data ==
      gst_georeg_device_control_get_plane (da)->data, "window levels: %s", err);

  /* the box moves inside the window: the same window, no upload; then out of it */
  const double box_b[4] = { 10, 8, 210, 158 };
  GstGeoregControlWindow *wb = gst_georeg_control_window_px (c, box_b, 0, 16, wa, &st,
      err, sizeof err);
  CHECK (wb == wa, "a box inside the window keeps it");
  gst_georeg_control_window_unref (wb);
  const double box_c[4] = { 400, 300, 600, 450 };
  GstGeoregControlWindow *wc = gst_georeg_control_window_px (c, box_c, 0, 16, wa, &st,
      err, sizeof err);
  CHECK (wc && wc != wa, "a box that left the window: a new one");
  GstGeoregDeviceControl *dcc = wc ? gst_georeg_device_control_window_plane (wc, 0, &st,
      err, sizeof err) : NULL;
  CHECK (dcc && dcc != da, "the new window's own upload: %s", err);
  if (dcc)
    check_same (rc, dcc, gst_georeg_control_window_get (wc), "window c");

  gst_georeg_device_control_release (la);
  gst_georeg_device_control_release (da2);
  gst_georeg_device_control_release (da);
  gst_georeg_device_control_release (dcc);
  gst_georeg_device_control_stats (&s1);
  CHECK (s1.planes == s0.planes && s1.levels == s0.levels, "every device entry freed");
  gst_georeg_control_window_unref (wa);
  gst_georeg_control_window_unref (wc);
  gst_georeg_control_release (c);
  CHECK (gst_georeg_control_cache_count () == 0, "the control released");

  gr_register_cuda_free (rc);
  g_unlink (path);
  g_rmdir (dir);
  g_free (path);
  g_free (dir);
  free (pix);
  return CHECK_DONE ();
}
#else
int
main (void)
{
  printf ("SKIP: needs CUDA and GDAL in the build\n");
  return 77;
}
#endif
