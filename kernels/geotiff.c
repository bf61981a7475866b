/* Registered frames as georeferenced GeoTIFFs (kernels/geotiff.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "geotiff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <gdal.h>
#include <ogr_srs_api.h>

#include "fit.h"

/* A delivered frame pixel corner -> its undistorted pixel corner (OpenCV's pixel
 * centres inside the model, hence the half pixel) */
static bool
undistort_corner (const GrCamera *lens, double x, double y, double *u, double *v)
{
  if (!gr_camera_undistort (lens, x - 0.5, y - 0.5, u, v))
    return false;
  *u += 0.5;
  *v += 0.5;
  return true;
}

GrStatus
gr_warp_window (const double H[9], const GrCamera *lens, int fw, int fh, size_t max_pixels,
    long *x0, long *y0, int *width, int *height, char *errbuf, size_t errlen)
{
  if (fw <= 0 || fh <= 0) {
    gr_set_err (errbuf, errlen, "empty frame (%d x %d)", fw, fh);
    return GR_ERR_INVALID;
  }
  const double c[8] = { 0, 0, fw, 0, fw, fh, 0, fh };
  /* without a lens the corners bound the (convex) footprint; with one, points along
   * each edge from corner i to corner i + 1 */
  const int per_edge = lens ? 64 : 1;
  double minx = INFINITY, miny = INFINITY, maxx = -INFINITY, maxy = -INFINITY;
  for (int i = 0; i < 4; i++)
    for (int k = 0; k < per_edge; k++) {
      const int n = (i + 1) % 4;
      const double t = (double) k / per_edge;
      double px = c[2 * i] + t * (c[2 * n] - c[2 * i]);
      double py = c[2 * i + 1] + t * (c[2 * n + 1] - c[2 * i + 1]);
      bool ok = !lens || undistort_corner (lens, px, py, &px, &py);
      const double w = H[6] * px + H[7] * py + H[8];
      double x, y;
      /* a point behind the camera (w <= 0) has no place on the map: the footprint
       * would be unbounded */
      if (!ok || !(w > 0) || !gr_fit_apply (H, px, py, &x, &y) || !isfinite (x)
          || !isfinite (y)) {
        gr_set_err (errbuf, errlen, "the frame's %s %d has no finite place on the map",
            lens ? "edge" : "corner", i);
        return GR_ERR_INVALID;
      }
      minx = fmin (minx, x);
      maxx = fmax (maxx, x);
      miny = fmin (miny, y);
      maxy = fmax (maxy, y);
    }
  const double wd = ceil (maxx) - floor (minx), ht = ceil (maxy) - floor (miny);
  if (!(wd >= 1 && ht >= 1 && wd * ht <= (double) max_pixels && wd < 1e9 && ht < 1e9)) {
    gr_set_err (errbuf, errlen, "the footprint covers %.0f x %.0f map pixels (limit %zu "
        "pixels)", wd, ht, max_pixels);
    return GR_ERR_INVALID;
  }
  *x0 = (long) floor (minx);
  *y0 = (long) floor (miny);
  *width = (int) wd;
  *height = (int) ht;
  return GR_OK;
}

void
gr_warp_frame (const GrFrame8 *f, const double H[9], long x0, long y0, int width, int height,
    uint8_t *out)
{
  double inv[9];
  const int colours = f->channels == 1 ? 1 : 3, oc = colours + 1;
  if (!gr_mat3_inverse (H, inv)) {
    memset (out, 0, (size_t) width * height * oc);
    return;
  }
  const bool has_alpha = f->channels == 4;
#pragma omp parallel for schedule(static)
  for (int j = 0; j < height; j++) {
    uint8_t *row = out + (size_t) j * width * oc;
    for (int i = 0; i < width; i++) {
      uint8_t *o = row + (size_t) i * oc;
      /* the centre of the map pixel, in control pixel corners, into the frame */
      const double cx = (double) (x0 + i) + 0.5, cy = (double) (y0 + j) + 0.5;
      double fx, fy;
      bool ok = gr_fit_apply (inv, cx, cy, &fx, &fy);
      if (ok && f->lens) {
        /* the undistorted pixel -> where the lens imaged it in the delivered frame */
        gr_camera_distort (f->lens, fx - 0.5, fy - 0.5, &fx, &fy);
        fx += 0.5;
        fy += 0.5;
      }
      if (!ok || !(fx >= 0 && fy >= 0 && fx <= f->width && fy <= f->height)) {
        memset (o, 0, (size_t) oc);
        continue;
      }
      /* bilinear between pixel centres (index = corner - 0.5), clamped at the edges */
      double u = fmin (fmax (fx - 0.5, 0.0), f->width - 1.0);
      double v = fmin (fmax (fy - 0.5, 0.0), f->height - 1.0);
      int iu = (int) u, iv = (int) v;
      if (iu > f->width - 2)
        iu = f->width > 1 ? f->width - 2 : 0;
      if (iv > f->height - 2)
        iv = f->height > 1 ? f->height - 2 : 0;
      const double au = f->width > 1 ? u - iu : 0, av = f->height > 1 ? v - iv : 0;
      const int iu1 = f->width > 1 ? iu + 1 : iu, iv1 = f->height > 1 ? iv + 1 : iv;
      const uint8_t *p00 = f->pix + (size_t) iv * f->stride + (size_t) iu * f->channels;
      const uint8_t *p01 = f->pix + (size_t) iv * f->stride + (size_t) iu1 * f->channels;
      const uint8_t *p10 = f->pix + (size_t) iv1 * f->stride + (size_t) iu * f->channels;
      const uint8_t *p11 = f->pix + (size_t) iv1 * f->stride + (size_t) iu1 * f->channels;
      if (has_alpha) {
        /* the nearest source pixel decides validity */
        const uint8_t *n = (au < 0.5 ? (av < 0.5 ? p00 : p10) : (av < 0.5 ? p01 : p11));
        if (n[3] == 0) {
          memset (o, 0, (size_t) oc);
          continue;
        }
      }
      for (int c = 0; c < colours; c++) {
        const double top = p00[c] + au * (p01[c] - p00[c]);
        const double bot = p10[c] + au * (p11[c] - p10[c]);
        o[c] = (uint8_t) lrint (top + av * (bot - top));
      }
      o[colours] = 255;
    }
  }
}

/* Writes width x height pixels of `colours` + 1 (alpha) interleaved bands, whose
 * top-left pixel is (x0, y0) of geo's grid, as a GeoTIFF with geo's CRS. */
static GrStatus
write_window (const char *path, const GrGeoRef *geo, const uint8_t *pix, long x0, long y0,
    int width, int height, int colours, bool cog, char *errbuf, size_t errlen)
{
  const int bands = colours + 1;
  GDALAllRegister ();
  GDALDatasetH mem = GDALCreate (GDALGetDriverByName ("MEM"), "", width, height, bands,
      GDT_Byte, NULL);
  if (!mem) {
    gr_set_err (errbuf, errlen, "'%s': GDAL MEM dataset: %s", path, CPLGetLastErrorMsg ());
    return GR_ERR_NOMEM;
  }
  double g[6], t[6];
  gr_georef_geotransform (geo, g);
  /* the window's top-left corner on the control's grid; the pixel size is the control's */
  memcpy (t, g, sizeof t);
  t[0] = g[0] + x0 * g[1] + y0 * g[2];
  t[3] = g[3] + x0 * g[4] + y0 * g[5];
  GDALSetGeoTransform (mem, t);
  OGRSpatialReferenceH srs = OSRNewSpatialReference (NULL);
  char *wkt = (char *) gr_georef_wkt (geo);
  if (srs && OSRImportFromWkt (srs, &wkt) == OGRERR_NONE)
    GDALSetSpatialRef (mem, srs);
  if (srs)
    OSRRelease (srs);
  CPLErr e = CE_None;
  for (int b = 0; b < bands && e == CE_None; b++) {
    GDALRasterBandH band = GDALGetRasterBand (mem, b + 1);
    e = GDALRasterIO (band, GF_Write, 0, 0, width, height, (uint8_t *) pix + b, width, height,
        GDT_Byte, bands, (GSpacing) width * bands);
    GDALSetRasterColorInterpretation (band, b == colours ? GCI_AlphaBand : colours == 1 ?
        GCI_GrayIndex : (GDALColorInterp) (GCI_RedBand + b));
  }
  GDALDriverH drv = cog ? GDALGetDriverByName ("COG") : NULL;
  char **opts = NULL;
  opts = CSLSetNameValue (opts, "COMPRESS", "DEFLATE");
  if (!drv) {
    drv = GDALGetDriverByName ("GTiff");
    opts = CSLSetNameValue (opts, "TILED", "YES");
    opts = CSLSetNameValue (opts, "ALPHA", "YES");
    if (colours == 3)
      opts = CSLSetNameValue (opts, "PHOTOMETRIC", "RGB");
  }
  GDALDatasetH ds = e == CE_None && drv ? GDALCreateCopy (drv, path, mem, FALSE, opts, NULL,
      NULL) : NULL;
  CSLDestroy (opts);
  GDALClose (mem);
  if (!ds) {
    gr_set_err (errbuf, errlen, "'%s': cannot write the GeoTIFF: %s", path,
        CPLGetLastErrorMsg ());
    return GR_ERR_IO;
  }
  GDALClose (ds);
  return GR_OK;
}

GrStatus
gr_geotiff_write_frame (const char *path, const GrGeoRef *geo, const GrFrame8 *frame,
    const double H[9], bool cog, size_t max_pixels, char *errbuf, size_t errlen)
{
  if (!path || !geo || !frame || !frame->pix || !H
      || !(frame->channels == 1 || frame->channels == 3 || frame->channels == 4)) {
    gr_set_err (errbuf, errlen, "gr_geotiff_write_frame: bad argument");
    return GR_ERR_INVALID;
  }
  long x0, y0;
  int width, height;
  GrStatus st = gr_warp_window (H, frame->lens, frame->width, frame->height, max_pixels,
      &x0, &y0, &width, &height, errbuf, errlen);
  if (st != GR_OK)
    return st;
  const int colours = frame->channels == 1 ? 1 : 3;
  uint8_t *out = malloc ((size_t) width * height * (colours + 1));
  if (!out) {
    gr_set_err (errbuf, errlen, "'%s': out of memory for %d x %d pixels", path, width, height);
    return GR_ERR_NOMEM;
  }
  gr_warp_frame (frame, H, x0, y0, width, height, out);
  st = write_window (path, geo, out, x0, y0, width, height, colours, cog, errbuf, errlen);
  free (out);
  return st;
}

/* ---- mosaic */

struct GrMosaic {
  int colours;                  /* 1 or 3, from the first frame; 0 = empty */
  size_t max_pixels;
  long x0, y0;                  /* the canvas's top-left pixel on the control's grid */
  int width, height;
  uint8_t *pix;                 /* colours + 1 interleaved */
};

GrMosaic *
gr_mosaic_new (size_t max_pixels)
{
  GrMosaic *m = calloc (1, sizeof *m);
  if (m)
    m->max_pixels = max_pixels;
  return m;
}

void
gr_mosaic_free (GrMosaic *m)
{
  if (!m)
    return;
  free (m->pix);
  free (m);
}

GrStatus
gr_mosaic_add (GrMosaic *m, const GrFrame8 *frame, const double H[9], char *errbuf,
    size_t errlen)
{
  if (!m || !frame || !frame->pix || !H
      || !(frame->channels == 1 || frame->channels == 3 || frame->channels == 4)) {
    gr_set_err (errbuf, errlen, "gr_mosaic_add: bad argument");
    return GR_ERR_INVALID;
  }
  long fx0, fy0;
  int fw, fh;
  GrStatus st = gr_warp_window (H, frame->lens, frame->width, frame->height,
      m->max_pixels, &fx0, &fy0, &fw, &fh, errbuf, errlen);
  if (st != GR_OK)
    return st;
  const int fc = frame->channels == 1 ? 1 : 3;
  if (!m->colours)
    m->colours = fc;
  /* grow the canvas to the union of the windows */
  const long nx0 = m->pix ? (fx0 < m->x0 ? fx0 : m->x0) : fx0;
  const long ny0 = m->pix ? (fy0 < m->y0 ? fy0 : m->y0) : fy0;
  const long nx1 = m->pix ? (fx0 + fw > m->x0 + m->width ? fx0 + fw : m->x0 + m->width) :
      fx0 + fw;
  const long ny1 = m->pix ? (fy0 + fh > m->y0 + m->height ? fy0 + fh : m->y0 + m->height) :
      fy0 + fh;
  const double area = (double) (nx1 - nx0) * (double) (ny1 - ny0);
  if (area > (double) m->max_pixels) {
    gr_set_err (errbuf, errlen, "the mosaic would cover %ld x %ld map pixels (limit %zu "
        "pixels)", nx1 - nx0, ny1 - ny0, m->max_pixels);
    return GR_ERR_INVALID;
  }
  const int ob = m->colours + 1;
  if (!m->pix || nx0 != m->x0 || ny0 != m->y0 || nx1 - nx0 != m->width
      || ny1 - ny0 != m->height) {
    const int nw = (int) (nx1 - nx0), nh = (int) (ny1 - ny0);
    uint8_t *np = calloc ((size_t) nw * nh, (size_t) ob);
    if (!np)
      return GR_ERR_NOMEM;
    for (int j = 0; m->pix && j < m->height; j++)
      memcpy (np + (((size_t) (j + m->y0 - ny0)) * nw + (size_t) (m->x0 - nx0)) * ob,
          m->pix + (size_t) j * m->width * ob, (size_t) m->width * ob);
    free (m->pix);
    m->pix = np;
    m->x0 = nx0;
    m->y0 = ny0;
    m->width = nw;
    m->height = nh;
  }
  uint8_t *w = malloc ((size_t) fw * fh * (fc + 1));
  if (!w)
    return GR_ERR_NOMEM;
  gr_warp_frame (frame, H, fx0, fy0, fw, fh, w);
  /* the newest frame on top, where it has data */
#pragma omp parallel for schedule(static)
  for (int j = 0; j < fh; j++)
    for (int i = 0; i < fw; i++) {
      const uint8_t *s = w + ((size_t) j * fw + i) * (fc + 1);
      if (!s[fc])
        continue;
      uint8_t *d = m->pix + (((size_t) (j + fy0 - m->y0)) * m->width + (size_t) (i + fx0 - m->x0))
          * ob;
      if (m->colours == fc) {
        memcpy (d, s, (size_t) fc);
      } else if (m->colours == 1) {
        d[0] = (uint8_t) lrint (0.299 * s[0] + 0.587 * s[1] + 0.114 * s[2]);
      } else {
        d[0] = d[1] = d[2] = s[0];
      }
      d[m->colours] = 255;
    }
  free (w);
  return GR_OK;
}

GrStatus
gr_mosaic_write (const GrMosaic *m, const char *path, const GrGeoRef *geo, bool cog,
    char *errbuf, size_t errlen)
{
  if (!m || !m->pix || !path || !geo) {
    gr_set_err (errbuf, errlen, "gr_mosaic_write: empty mosaic");
    return GR_ERR_INVALID;
  }
  return write_window (path, geo, m->pix, m->x0, m->y0, m->width, m->height, m->colours, cog,
      errbuf, errlen);
}
