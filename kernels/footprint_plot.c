/* Footprints over the control as a PNG (kernels/footprint_plot.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "footprint_plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <gdal.h>

typedef struct {
  uint8_t *rgb;
  int w, h, thick;
} Canvas;

static const uint8_t GREEN[3] = { 30, 200, 60 };
static const uint8_t RED[3] = { 230, 30, 30 };

static void
stamp (Canvas *c, double x, double y, const uint8_t col[3])
{
  const int r = c->thick / 2;
  const int cx = (int) floor (x), cy = (int) floor (y);
  for (int j = cy - r; j <= cy + r; j++)
    for (int i = cx - r; i <= cx + r; i++)
      if (i >= 0 && j >= 0 && i < c->w && j < c->h)
        memcpy (c->rgb + ((size_t) j * c->w + i) * 3, col, 3);
}

static void
line (Canvas *c, double x0, double y0, double x1, double y1, const uint8_t col[3])
{
  const double len = hypot (x1 - x0, y1 - y0);
  /* a hostile length would loop forever: the picture is bounded, so is the line */
  if (!isfinite (len) || len > 4.0 * (c->w + c->h))
    return;
  const int steps = (int) ceil (len * 2) + 1;
  for (int s = 0; s <= steps; s++) {
    const double t = (double) s / steps;
    stamp (c, x0 + t * (x1 - x0), y0 + t * (y1 - y0), col);
  }
}

static int
cmp_float (const void *a, const void *b)
{
  const float fa = *(const float *) a, fb = *(const float *) b;
  return (fa > fb) - (fa < fb);
}

/* The value at fraction q of the sorted valid samples (a subsample of at most ~1e6). */
static float
percentile (const GrPlaneF *p, double q)
{
  const size_t total = (size_t) p->width * p->height;
  const size_t step = total > 1000000 ? total / 1000000 : 1;
  float *v = malloc ((total / step + 1) * sizeof *v);
  if (!v)
    return 0;
  size_t n = 0;
  for (size_t k = 0; k < total; k += step) {
    const size_t y = k / p->width, x = k % p->width;
    if (!p->mask || p->mask[y * p->width + x])
      v[n++] = p->data[y * p->stride + x];
  }
  float r = 0;
  if (n) {
    qsort (v, n, sizeof *v, cmp_float);
    r = v[(size_t) (q * (n - 1))];
  }
  free (v);
  return r;
}

GrStatus
gr_footprint_plot_png (const char *path, const GrPlaneF *control, const GrPlotFootprint *fp,
    size_t n, int max_side, char *errbuf, size_t errlen)
{
  if (!path || !control || !control->data || control->width <= 0 || control->height <= 0
      || max_side < 16 || (n && !fp)) {
    gr_set_err (errbuf, errlen, "gr_footprint_plot_png: bad argument");
    return GR_ERR_INVALID;
  }
  const double k = fmin (1.0, (double) max_side / fmax (control->width, control->height));
  Canvas c;
  c.w = (int) fmax (1, floor (control->width * k));
  c.h = (int) fmax (1, floor (control->height * k));
  c.thick = c.w + c.h > 1600 ? 3 : 2;
  c.rgb = malloc ((size_t) c.w * c.h * 3);
  if (!c.rgb)
    return GR_ERR_NOMEM;
  const float lo = percentile (control, 0.01), hi = percentile (control, 0.99);
  const float span = hi > lo ? hi - lo : 1;
  /* background: the control darkened a little so that the outlines stand out */
#pragma omp parallel for schedule(static)
  for (int j = 0; j < c.h; j++)
    for (int i = 0; i < c.w; i++) {
      const int sx = (int) fmin (control->width - 1, (i + 0.5) / k);
      const int sy = (int) fmin (control->height - 1, (j + 0.5) / k);
      uint8_t *o = c.rgb + ((size_t) j * c.w + i) * 3;
      if (control->mask && !control->mask[(size_t) sy * control->width + sx]) {
        o[0] = o[1] = o[2] = 255;
        continue;
      }
      const float v = (control->data[(size_t) sy * control->stride + sx] - lo) / span;
      const uint8_t g = (uint8_t) lrintf (40 + 170 * fminf (1, fmaxf (0, v)));
      o[0] = o[1] = o[2] = g;
    }
  for (size_t f = 0; f < n; f++) {
    const GrPlotFootprint *p = &fp[f];
    const uint8_t *col = p->kind == GR_PLOT_REGISTERED ? GREEN : RED;
    if (p->kind == GR_PLOT_POINT) {
      if (!isfinite (p->x[0]) || !isfinite (p->y[0]))
        continue;
      const double x = p->x[0] * k, y = p->y[0] * k, r = 6 + c.thick;
      line (&c, x - r, y - r, x + r, y + r, col);
      line (&c, x - r, y + r, x + r, y - r, col);
      continue;
    }
    for (int e = 0; e < 4; e++) {
      const int a = e, b = (e + 1) % 4;
      if (isfinite (p->x[a]) && isfinite (p->y[a]) && isfinite (p->x[b]) && isfinite (p->y[b]))
        line (&c, p->x[a] * k, p->y[a] * k, p->x[b] * k, p->y[b] * k, col);
    }
  }
  GDALAllRegister ();
  GDALDatasetH mem = GDALCreate (GDALGetDriverByName ("MEM"), "", c.w, c.h, 3, GDT_Byte,
      NULL);
  CPLErr e = mem ? CE_None : CE_Failure;
  for (int b = 0; b < 3 && e == CE_None; b++)
    e = GDALRasterIO (GDALGetRasterBand (mem, b + 1), GF_Write, 0, 0, c.w, c.h, c.rgb + b,
        c.w, c.h, GDT_Byte, 3, (GSpacing) c.w * 3);
  free (c.rgb);
  GDALDatasetH out = e == CE_None ? GDALCreateCopy (GDALGetDriverByName ("PNG"), path, mem,
      FALSE, NULL, NULL, NULL) : NULL;
  if (mem)
    GDALClose (mem);
  if (!out) {
    gr_set_err (errbuf, errlen, "'%s': cannot write the picture: %s", path,
        CPLGetLastErrorMsg ());
    return GR_ERR_IO;
  }
  GDALClose (out);
  /* GDAL's PNG driver leaves a .aux.xml beside the file when it has metadata to keep:
   * none here, but remove any so the folder holds only the picture */
  char *aux = malloc (strlen (path) + 9);
  if (aux) {
    strcpy (aux, path);
    strcat (aux, ".aux.xml");
    remove (aux);
    free (aux);
  }
  return GR_OK;
}
