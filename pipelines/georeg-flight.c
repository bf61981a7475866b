/* georeg-flight: raw I420 video of a straight flight over a control image, on stdout.
 *
 *   georeg-flight CONTROL [--width 3840] [--height 2160] [--frames 90]
 *       [--from X,Y] [--to X,Y]  (top-left corners in control pixels)
 *
 * Each frame is the control's luminance (band 0) cut at a position moving linearly
 * from --from to --to (bilinear, sub-pixel), U and V neutral.  Pipe it into
 * rawvideoparse and an encoder (pipelines/live-4k.sh make does, with x264enc).  The
 * positions go to stderr, one "frame x y" line each (the ground truth).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raster.h"

int
main (int argc, char **argv)
{
  int w = 3840, h = 2160, n = 90;
  double x0 = -1, y0 = -1, x1 = -1, y1 = -1;
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp (argv[i], "--width") && i + 1 < argc)
      w = atoi (argv[++i]);
    else if (!strcmp (argv[i], "--height") && i + 1 < argc)
      h = atoi (argv[++i]);
    else if (!strcmp (argv[i], "--frames") && i + 1 < argc)
      n = atoi (argv[++i]);
    else if (!strcmp (argv[i], "--from") && i + 1 < argc)
      sscanf (argv[++i], "%lf,%lf", &x0, &y0);
    else if (!strcmp (argv[i], "--to") && i + 1 < argc)
      sscanf (argv[++i], "%lf,%lf", &x1, &y1);
    else if (argv[i][0] != '-' && !path)
      path = argv[i];
    else {
      fprintf (stderr, "usage: georeg-flight CONTROL [--width W] [--height H] "
          "[--frames N] [--from X,Y] [--to X,Y]\n");
      return 2;
    }
  }
  if (!path || w < 2 || h < 2 || (w & 1) || (h & 1) || n < 1) {
    fprintf (stderr, "georeg-flight: a control path, even sizes and frames >= 1\n");
    return 2;
  }
  GrRaster r = { 0 };
  char err[512];
  if (gr_raster_load (path, 0, &r, err, sizeof err) != GR_OK) {
    fprintf (stderr, "georeg-flight: %s\n", err);
    return 1;
  }
  const GrPlaneF *p = &r.plane;
  if (p->width < w + 1 || p->height < h + 1) {
    fprintf (stderr, "georeg-flight: the control (%dx%d) must be larger than the frame\n",
        p->width, p->height);
    return 1;
  }
  const double mx = p->width - w - 1, my = p->height - h - 1;
  if (x0 < 0) {
    x0 = 0.1 * mx;
    y0 = 0.2 * my;
  }
  if (x1 < 0) {
    x1 = 0.9 * mx;
    y1 = 0.7 * my;
  }
  x0 = fmin (x0, mx);
  x1 = fmin (x1, mx);
  y0 = fmin (y0, my);
  y1 = fmin (y1, my);
  const size_t ysz = (size_t) w * h, csz = ysz / 4;
  unsigned char *buf = malloc (ysz + 2 * csz);
  if (!buf)
    return 1;
  memset (buf + ysz, 128, 2 * csz);
  for (int f = 0; f < n; f++) {
    const double t = n > 1 ? (double) f / (n - 1) : 0.0;
    const double fx = x0 + t * (x1 - x0), fy = y0 + t * (y1 - y0);
    const int ix = (int) floor (fx), iy = (int) floor (fy);
    const float ax = (float) (fx - ix), ay = (float) (fy - iy);
    for (int y = 0; y < h; y++) {
      const float *r0 = p->data + (size_t) (iy + y) * p->stride + ix;
      const float *r1 = r0 + p->stride;
      unsigned char *o = buf + (size_t) y * w;
      for (int x = 0; x < w; x++) {
        const float v = (1 - ay) * ((1 - ax) * r0[x] + ax * r0[x + 1]) +
            ay * ((1 - ax) * r1[x] + ax * r1[x + 1]);
        o[x] = (unsigned char) fminf (255.f, fmaxf (0.f, v + 0.5f));
      }
    }
    if (fwrite (buf, 1, ysz + 2 * csz, stdout) != ysz + 2 * csz) {
      fprintf (stderr, "georeg-flight: write failed\n");
      return 1;
    }
    fprintf (stderr, "%d %.3f %.3f\n", f, fx, fy);
  }
  free (buf);
  gr_raster_clear (&r);
  return 0;
}
