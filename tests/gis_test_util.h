/* Shared by the GIS tests (test_georegexport.c, test_georegklvenc.c,
 * test_georeg_photos.c): a synthesized control written as a UTM 17N GeoTIFF, frames cut
 * from it through a known transform, register metas carrying that transform, the truth
 * in WGS84 through OSR directly (not through kernels/geo), and the check that a GeoTIFF
 * on the control's grid lines up with the control.  Include after gstcheck.h and
 * gdal.h.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GIS_TEST_UTIL_H
#define GIS_TEST_UTIL_H

#include <ogr_srs_api.h>

#include "georeg-meta.h"
#include "nmiregister-meta.h"
#include "synth.h"

/* control and frame sizes in pixels (a test may define its own before including) */
#ifndef CW
#define CW 400
#define CH 300
#endif
#ifndef FW
#define FW 160
#define FH 120
#endif

static gchar *tmpdir, *control_tif;
static GrSynthImage control;

static gchar *
tmp_path (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

/* The synthesized control's first band as a Byte GeoTIFF in UTM 17N. */
static void
make_control (void)
{
  GrSynthControlParams p;
  char err[256];
  gr_synth_control_params_init (&p);
  p.width = CW;
  p.height = CH;
  p.depth = 8;
  p.seed = 5;
  p.with_geo = TRUE;
  p.pixel_size = 0.5;
  tmpdir = g_dir_make_tmp ("georeg-gis-XXXXXX", NULL);
  if (gr_synth_control_generate (&p, &control, err, sizeof err) != GR_OK)
    g_error ("control: %s", err);
  control_tif = tmp_path ("control.tif");
  GDALAllRegister ();
  GDALDatasetH ds = GDALCreate (GDALGetDriverByName ("GTiff"), control_tif, CW, CH, 1,
      GDT_Byte, NULL);
  GDALSetGeoTransform (ds, control.geo);
  OGRSpatialReferenceH srs = OSRNewSpatialReference (NULL);
  OSRImportFromEPSG (srs, 32617);
  GDALSetSpatialRef (ds, srs);
  OSRRelease (srs);
  guint8 *pix = g_new (guint8, CW * CH);
  for (int i = 0; i < CW * CH; i++)
    pix[i] = (guint8) lrintf (control.band[0][i]);
  if (GDALRasterIO (GDALGetRasterBand (ds, 1), GF_Write, 0, 0, CW, CH, pix, CW, CH,
          GDT_Byte, 0, 0) != CE_None)
    g_error ("cannot write %s", control_tif);
  g_free (pix);
  GDALClose (ds);
}

/* A similarity in pixel CORNER coordinates (frame -> control): scale s, rotation a
 * (degrees, clockwise on screen), frame centre at (cx, cy). */
static void
similarity (double s, double a, double cx, double cy, double H[9])
{
  const double c = cos (a * M_PI / 180) * s, n = sin (a * M_PI / 180) * s;
  H[0] = c;
  H[1] = -n;
  H[3] = n;
  H[4] = c;
  H[2] = cx - (c * FW / 2 - n * FH / 2);
  H[5] = cy - (n * FW / 2 + c * FH / 2);
  H[6] = H[7] = 0;
  H[8] = 1;
}

/* A GRAY8 frame cut from the control through H (pixel corners). */
static GstBuffer *
frame_cut (const double H[9])
{
  /* gr_synth_cut takes pixel-index coordinates: h = T(-0.5) H T(+0.5) */
  double h[9];
  memcpy (h, H, sizeof h);
  h[2] = H[2] + 0.5 * H[0] + 0.5 * H[1] - 0.5;
  h[5] = H[5] + 0.5 * H[3] + 0.5 * H[4] - 0.5;
  GrPlaneF plane = gr_synth_image_plane (&control, 0), cut;
  fail_unless (gr_synth_cut (&plane, h, FW, FH, 2, &cut) == GR_OK);
  GstBuffer *buf = gst_buffer_new_allocate (NULL, FW * FH, NULL);
  GstMapInfo map;
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (int i = 0; i < FW * FH; i++)
    map.data[i] = (guint8) lrintf (cut.data[i]);
  gst_buffer_unmap (buf, &map);
  gr_synth_plane_free (&cut);
  return buf;
}

static void
apply (const double *H, double x, double y, double *X, double *Y)
{
  const double w = H[6] * x + H[7] * y + H[8];
  *X = (H[0] * x + H[1] * y + H[2]) / w;
  *Y = (H[3] * x + H[4] * y + H[5]) / w;
}

/* A register meta with transform H for a w x h frame (footprint from H). */
static GstNmiRegisterMeta *
add_register_meta_sized (GstBuffer *buf, const double H[9], int w, int h)
{
  GstNmiRegisterMeta *m = gst_buffer_add_nmi_register_meta (buf);
  m->model = 3;
  m->has_transform = TRUE;
  memcpy (m->frame_to_control, H, 9 * sizeof (double));
  const double c[8] = { 0, 0, w, 0, w, h, 0, h };
  for (int i = 0; i < 4; i++)
    apply (H, c[2 * i], c[2 * i + 1], &m->footprint_control[2 * i],
        &m->footprint_control[2 * i + 1]);
  return m;
}

G_GNUC_UNUSED static void
add_register_meta (GstBuffer *buf, const double H[9], guint flags)
{
  GstNmiRegisterMeta *m = add_register_meta_sized (buf, H, FW, FH);
  m->flags = flags;
  m->inliers = 42;
  m->matches = 50;
  m->keypoints = 60;
  m->rms = 0.25;
  m->predicted_error = 0.125;
}

/* Truth: control pixel corners -> WGS84 (lon, lat) through OSR directly. */
static void
truth_lonlat (double px, double py, double *lon, double *lat)
{
  const double *g = control.geo;
  double x = g[0] + px * g[1] + py * g[2], y = g[3] + px * g[4] + py * g[5];
  OGRSpatialReferenceH utm = OSRNewSpatialReference (NULL), ll = OSRNewSpatialReference (NULL);
  OSRImportFromEPSG (utm, 32617);
  OSRImportFromEPSG (ll, 4326);
  OSRSetAxisMappingStrategy (ll, OAMS_TRADITIONAL_GIS_ORDER);
  OSRSetAxisMappingStrategy (utm, OAMS_TRADITIONAL_GIS_ORDER);
  OGRCoordinateTransformationH ct = OCTNewCoordinateTransformation (utm, ll);
  fail_unless (OCTTransform (ct, 1, &x, &y, NULL));
  OCTDestroyCoordinateTransformation (ct);
  OSRRelease (utm);
  OSRRelease (ll);
  *lon = x;
  *lat = y;
}

/* Pearson correlation of the GeoTIFF's valid pixels with the control shifted by
 * (dx, dy) control pixels. */
G_GNUC_UNUSED static double
correlation (const guint8 *img, const guint8 *alpha, int w, int h, long x0, long y0, int dx,
    int dy)
{
  double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
  long n = 0;
  for (int j = 2; j < h - 2; j++)
    for (int i = 2; i < w - 2; i++) {
      const long cx = x0 + i + dx, cy = y0 + j + dy;
      if (!alpha[j * w + i] || cx < 0 || cy < 0 || cx >= CW || cy >= CH)
        continue;
      const double a = img[j * w + i], b = control.band[0][cy * CW + cx];
      sa += a;
      sb += b;
      saa += a * a;
      sbb += b * b;
      sab += a * b;
      n++;
    }
  const double cov = sab - sa * sb / n, va = saa - sa * sa / n, vb = sbb - sb * sb / n;
  return cov / sqrt (va * vb);
}

/* Reads a gray (or RGB) + alpha GeoTIFF on the control's grid: its pixels, alpha, size and
 * offset (whole control pixels) from the control's origin. */
G_GNUC_UNUSED static void
read_on_grid (const char *path, guint8 **img, guint8 **alpha, int *w, int *h, long *ox,
    long *oy)
{
  GDALDatasetH ds = GDALOpen (path, GA_ReadOnly);
  fail_unless (ds != NULL, "cannot open %s", path);
  *w = GDALGetRasterXSize (ds);
  *h = GDALGetRasterYSize (ds);
  /* gray + alpha, or RGB + alpha (the first band is read) */
  const int bands = GDALGetRasterCount (ds);
  fail_unless (bands == 2 || bands == 4, "%d bands", bands);
  double gt[6];
  GDALGetGeoTransform (ds, gt);
  /* on the control's grid: same pixel size, origin a whole number of pixels away */
  const double fx = (gt[0] - control.geo[0]) / control.geo[1];
  const double fy = (gt[3] - control.geo[3]) / control.geo[5];
  fail_unless (gt[1] == control.geo[1] && gt[5] == control.geo[5]);
  fail_unless (fabs (fx - lround (fx)) < 1e-6 && fabs (fy - lround (fy)) < 1e-6,
      "off grid %f %f", fx, fy);
  *ox = lround (fx);
  *oy = lround (fy);
  *img = g_new (guint8, (gsize) *w * *h);
  *alpha = g_new (guint8, (gsize) *w * *h);
  fail_unless (GDALRasterIO (GDALGetRasterBand (ds, 1), GF_Read, 0, 0, *w, *h, *img, *w, *h,
          GDT_Byte, 0, 0) == CE_None);
  fail_unless (GDALRasterIO (GDALGetRasterBand (ds, bands), GF_Read, 0, 0, *w, *h, *alpha, *w, *h,
          GDT_Byte, 0, 0) == CE_None);
  GDALClose (ds);
}

/* Correlation at zero shift above 0.95 and at least that of every 1-pixel shift. */
G_GNUC_UNUSED static void
check_lines_up (const guint8 *img, const guint8 *alpha, int w, int h, long ox, long oy)
{
  const double c0 = correlation (img, alpha, w, h, ox, oy, 0, 0);
  fail_unless (c0 > 0.95, "correlation at the registered place %f", c0);
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++)
      if (dx || dy) {
        const double c = correlation (img, alpha, w, h, ox, oy, dx, dy);
        fail_unless (c0 >= c, "shift %d %d correlates better: %f > %f", dx, dy, c, c0);
      }
}

/* metres between two nearby WGS84 points (local sphere; enough for a tolerance) */
G_GNUC_UNUSED static double
metres (double lon0, double lat0, double lon1, double lat1)
{
  const double r = 6371000.0 * M_PI / 180;
  return hypot ((lon1 - lon0) * r * cos (lat0 * M_PI / 180), (lat1 - lat0) * r);
}

/* The standard output of a command line (an oracle: ogrinfo, gdalinfo, python3), or
 * NULL when it cannot run or exits non-zero. */
G_GNUC_UNUSED static gchar *
run_capture (const char *cmd)
{
  gchar *out = NULL;
  gint status = 1;
  if (!g_spawn_command_line_sync (cmd, &out, NULL, &status, NULL) || status != 0) {
    g_free (out);
    return NULL;
  }
  return out;
}

#endif
