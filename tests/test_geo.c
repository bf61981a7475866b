/* Tests of kernels/geo.c: CRS from a GeoTIFF, from a world file + .prj, from a string;
 * EPSG identification; map <-> WGS84 against known EPSG:32617 points and against
 * gdaltransform; the pixel-corner vs world-file-centre convention (half-pixel shift,
 * checked against gdalinfo's corner coordinates); bearings, distances, areas; errors.
 * Exit 0 = pass, 77 = skipped (no GDAL in this build).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "test_check.h"

#if !GR_HAVE_GDAL
int
main (void)
{
  printf ("SKIP: built without GDAL\n");
  return 77;
}
#else
#include <gdal.h>
#include <ogr_srs_api.h>
#include <cpl_conv.h>

#include "geo.h"
#include "raster.h"

/* A small Byte GeoTIFF with geotransform gt and CRS epsg. */
static void
write_geotiff (const char *path, const double gt[6], int epsg)
{
  GDALAllRegister ();
  GDALDriverH drv = GDALGetDriverByName ("GTiff");
  GDALDatasetH ds = GDALCreate (drv, path, 8, 6, 1, GDT_Byte, NULL);
  GDALSetGeoTransform (ds, (double *) gt);
  OGRSpatialReferenceH srs = OSRNewSpatialReference (NULL);
  OSRImportFromEPSG (srs, epsg);
  GDALSetSpatialRef (ds, srs);
  OSRRelease (srs);
  GDALClose (ds);
}

static void
write_text (const char *path, const char *text)
{
  FILE *f = fopen (path, "w");
  fputs (text, f);
  fclose (f);
}

static gboolean
have_program (const char *name)
{
  gchar *p = g_find_program_in_path (name);
  g_free (p);
  return p != NULL;
}

/* gdaltransform's answer for (x, y) from src to EPSG:4326, longitude first;
 * false when the tool is not installed. */
static gboolean
oracle_gdaltransform (const char *src, double x, double y, double *lon, double *lat)
{
  if (!have_program ("gdaltransform"))
    return FALSE;
  gchar *cmd = g_strdup_printf ("echo %.6f %.6f | gdaltransform -s_srs %s -t_srs EPSG:4326 "
      "-output_xy", x, y, src);
  FILE *p = popen (cmd, "r");
  g_free (cmd);
  double a = NAN, b = NAN;
  int n = p ? fscanf (p, "%lf %lf", &a, &b) : 0;
  if (p)
    pclose (p);
  *lon = a;
  *lat = b;
  return n == 2;
}

int
main (void)
{
  gchar *dir = g_dir_make_tmp ("georeg-geo-XXXXXX", NULL);
  char err[512];
  GrGeoRef *g = NULL;

  /* ---- GeoTIFF in UTM 17N (EPSG:32617): the CRS, the EPSG code, the geotransform */
  const double gt[6] = { 500000.0, 0.5, 0, 4550000.0, 0, -0.5 };
  gchar *tif = g_build_filename (dir, "ortho.tif", NULL);
  write_geotiff (tif, gt, 32617);
  GrStatus st = gr_georef_open (tif, NULL, &g, err, sizeof err);
  CHECK (st == GR_OK && g, "open GeoTIFF: %s", err);
  if (g) {
    CHECK (gr_georef_epsg (g) == 32617, "epsg %d", gr_georef_epsg (g));
    CHECK (strcmp (gr_georef_crs_name (g), "EPSG:32617") == 0, "name %s",
        gr_georef_crs_name (g));
    CHECK (strstr (gr_georef_wkt (g), "UTM zone 17N") != NULL, "wkt %.80s", gr_georef_wkt (g));
    CHECK (gr_georef_is_projected (g), "projected");
    double got[6];
    gr_georef_geotransform (g, got);
    CHECK (memcmp (got, gt, sizeof gt) == 0, "geotransform");

    /* known points: the zone's central meridian is -81 deg, easting 500000 on it;
     * the equator is northing 0 */
    double x[3] = { 500000.0, 500000.0, 600000.0 }, y[3] = { 0.0, 4550000.0, 4550000.0 };
    CHECK (gr_georef_map_to_lonlat (g, x, y, 3), "to lonlat");
    CHECK (fabs (x[0] + 81.0) < 1e-9 && fabs (y[0]) < 1e-9, "(500000,0) -> %.10f %.10f",
        x[0], y[0]);
    CHECK (fabs (x[1] + 81.0) < 1e-9 && y[1] > 41.0 && y[1] < 41.2, "(500000,4550000) -> %f %f",
        x[1], y[1]);
    CHECK (x[2] > -81.0 && x[2] < -79.5, "east of the meridian: lon %f", x[2]);
    /* against gdaltransform (PROJ through another path) on a few points */
    const double px[3] = { 512345.25, 487654.5, 530000.0 }, py[3] = { 4551234.5, 4548765.25,
      4560000.0 };
    int oracles = 0;
    for (int i = 0; i < 3; i++) {
      double lx = px[i], ly = py[i], olon, olat;
      if (!oracle_gdaltransform ("EPSG:32617", px[i], py[i], &olon, &olat))
        continue;
      oracles++;
      gr_georef_map_to_lonlat (g, &lx, &ly, 1);
      CHECK (fabs (lx - olon) < 1e-7 && fabs (ly - olat) < 1e-7,
          "point %d: ours %.9f %.9f, gdaltransform %.9f %.9f", i, lx, ly, olon, olat);
      /* and back */
      gr_georef_lonlat_to_map (g, &lx, &ly, 1);
      CHECK (fabs (lx - px[i]) < 1e-4 && fabs (ly - py[i]) < 1e-4, "round trip %d: %f %f", i,
          lx, ly);
    }
    if (!oracles)
      printf ("note: gdaltransform not installed; known points only\n");

    /* pixel corners: (0,0) is the top-left corner = (gt0, gt3); pixel (1,1)'s centre */
    double mx, my, qx, qy;
    gr_georef_pixel_to_map (g, 0, 0, &mx, &my);
    CHECK (mx == 500000.0 && my == 4550000.0, "corner %f %f", mx, my);
    gr_georef_pixel_to_map (g, 1.5, 1.5, &mx, &my);
    CHECK (fabs (mx - 500000.75) < 1e-9 && fabs (my - 4549999.25) < 1e-9, "centre %f %f", mx, my);
    CHECK (gr_georef_map_to_pixel (g, mx, my, &qx, &qy) && fabs (qx - 1.5) < 1e-9
        && fabs (qy - 1.5) < 1e-9, "inverse %f %f", qx, qy);

    /* gdalinfo's "Upper Left" is the corner of pixel (0,0): the same convention */
    gchar *cmd = g_strdup_printf ("gdalinfo '%s'", tif), *out = NULL;
    if (have_program ("gdalinfo") && g_spawn_command_line_sync (cmd, &out, NULL,
            NULL, NULL)) {
      const char *ul = strstr (out, "Upper Left");
      double ux = NAN, uy = NAN;
      CHECK (ul && sscanf (ul, "Upper Left ( %lf, %lf)", &ux, &uy) == 2, "gdalinfo: %s", out);
      gr_georef_pixel_to_map (g, 0, 0, &mx, &my);
      CHECK (fabs (ux - mx) < 1e-3 && fabs (uy - my) < 1e-3, "gdalinfo UL %f %f vs %f %f", ux,
          uy, mx, my);
    }
    g_free (out);
    g_free (cmd);

    /* distances and areas on the ellipsoid: a 1000 m UTM square near the central
     * meridian (grid scale 0.9996) */
    double sx[4] = { 500000, 501000, 501000, 500000 }, sy[4] = { 4550000, 4550000, 4551000,
      4551000 };
    gr_georef_map_to_lonlat (g, sx, sy, 4);
    double area = gr_geo_area_m2 (sx, sy, 4);
    CHECK (fabs (area - 1e6 / (0.9996 * 0.9996)) < 1e6 * 2e-4, "area %f", area);
    double d = gr_geo_distance_m (sx[0], sy[0], sx[1], sy[1]);
    CHECK (fabs (d - 1000.0 / 0.9996) < 0.5, "distance %f", d);
    /* grid north at the central meridian is true north */
    double b = gr_geo_bearing_deg (sx[0], sy[0], sx[3], sy[3]);
    CHECK (fabs (b) < 0.01 || fabs (b - 360) < 0.01, "bearing north %f", b);
    b = gr_geo_bearing_deg (sx[0], sy[0], sx[1], sy[1]);
    CHECK (fabs (b - 90) < 0.05, "bearing east %f", b);
    gr_georef_free (g);
    g = NULL;
  }
  /* one degree of latitude at the equator: 110574 m */
  double deg = gr_geo_distance_m (10, -0.5, 10, 0.5);
  CHECK (fabs (deg - 110574) < 20, "1 deg at the equator %f", deg);
  CHECK (fabs (gr_geo_bearing_deg (0, 0, -1e-3, 0) - 270) < 1e-6, "west");

  /* ---- a PNG with a world file (pixel CENTRES) and a .prj (ESRI WKT) */
  gchar *png = g_build_filename (dir, "ortho.png", NULL);
  uint8_t pix[6 * 8] = { 0 };
  gr_png_write_gray8 (png, pix, 8, 6, 8, err, sizeof err);
  gchar *pgw = g_build_filename (dir, "ortho.pgw", NULL);
  /* top-left pixel centre at (600000.25, 4500000.75), 0.5 m pixels */
  write_text (pgw, "0.5\n0\n0\n-0.5\n600000.25\n4500000.75\n");
  st = gr_georef_open (png, NULL, &g, err, sizeof err);
  CHECK (st == GR_ERR_FORMAT && strstr (err, "no CRS"), "no .prj: %d %s", st, err);
  gr_georef_free (g);
  g = NULL;
  /* with crs given */
  st = gr_georef_open (png, "EPSG:32617", &g, err, sizeof err);
  CHECK (st == GR_OK, "crs property: %s", err);
  if (g) {
    double mx, my;
    /* half-pixel shift: the world file's centre of pixel (0,0) is corner + half a pixel */
    gr_georef_pixel_to_map (g, 0.5, 0.5, &mx, &my);
    CHECK (fabs (mx - 600000.25) < 1e-9 && fabs (my - 4500000.75) < 1e-9, "centre %f %f", mx,
        my);
    gr_georef_pixel_to_map (g, 0, 0, &mx, &my);
    CHECK (fabs (mx - 600000.0) < 1e-9 && fabs (my - 4500001.0) < 1e-9, "corner %f %f", mx, my);
    gr_georef_free (g);
    g = NULL;
  }
  /* the .prj in ESRI's WKT */
  OGRSpatialReferenceH srs = OSRNewSpatialReference (NULL);
  OSRImportFromEPSG (srs, 32617);
  OSRMorphToESRI (srs);
  char *esri = NULL;
  OSRExportToWkt (srs, &esri);
  gchar *prj = g_build_filename (dir, "ortho.prj", NULL);
  write_text (prj, esri);
  CPLFree (esri);
  OSRRelease (srs);
  st = gr_georef_open (png, NULL, &g, err, sizeof err);
  CHECK (st == GR_OK, ".prj: %s", err);
  if (g) {
    CHECK (gr_georef_epsg (g) == 32617, ".prj epsg %d (%s)", gr_georef_epsg (g),
        gr_georef_crs_name (g));
    double x = 500000, y = 0;
    gr_georef_map_to_lonlat (g, &x, &y, 1);
    CHECK (fabs (x + 81) < 1e-9 && fabs (y) < 1e-9, ".prj transform %f %f", x, y);
    gr_georef_free (g);
    g = NULL;
  }
  /* a property overrides the file's CRS */
  st = gr_georef_open (tif, "EPSG:3857", &g, err, sizeof err);
  CHECK (st == GR_OK && g && gr_georef_epsg (g) == 3857, "override: %s", err);
  gr_georef_free (g);
  g = NULL;
  /* a CRS without an EPSG code is named by its WKT2 */
  const double gt2[6] = { 0, 1, 0, 0, 0, -1 };
  st = gr_georef_new (gt2, "+proj=tmerc +lat_0=0 +lon_0=-80.3 +k=1 +x_0=0 +y_0=0 "
      "+ellps=WGS84 +units=m", &g, err, sizeof err);
  CHECK (st == GR_OK && g && gr_georef_epsg (g) == 0
      && strncmp (gr_georef_crs_name (g), "PROJCRS", 7) == 0, "custom: %s %s", err,
      g ? gr_georef_crs_name (g) : "");
  if (g) {
    double x = 0, y = 0;
    gr_georef_map_to_lonlat (g, &x, &y, 1);
    CHECK (fabs (x + 80.3) < 1e-9 && fabs (y) < 1e-9, "custom origin %f %f", x, y);
  }
  gr_georef_free (g);
  g = NULL;

  /* ---- errors */
  st = gr_georef_open (tif, "EPSG:999999999", &g, err, sizeof err);
  CHECK (st == GR_ERR_FORMAT && !g && strstr (err, "not understood"), "bad crs: %d %s", st, err);
  gchar *missing = g_build_filename (dir, "missing.tif", NULL);
  st = gr_georef_open (missing, NULL, &g, err, sizeof err);
  CHECK (st == GR_ERR_IO && !g && strstr (err, "missing.tif"), "missing: %d %s", st, err);
  gchar *plain = g_build_filename (dir, "plain.png", NULL);
  gr_png_write_gray8 (plain, pix, 8, 6, 8, err, sizeof err);
  st = gr_georef_open (plain, "EPSG:32617", &g, err, sizeof err);
  CHECK (st == GR_ERR_FORMAT && !g && strstr (err, "not georeferenced"), "plain: %d %s", st,
      err);
  const double flat[6] = { 0, 0, 0, 0, 0, 0 };
  st = gr_georef_new (flat, "EPSG:32617", &g, err, sizeof err);
  CHECK (st == GR_ERR_INVALID && !g, "degenerate: %d %s", st, err);
  gchar *badwf = g_build_filename (dir, "plain.pgw", NULL);
  write_text (badwf, "0.5\n0\n0\nfoo\n1\n2\n");
  st = gr_georef_open (plain, "EPSG:32617", &g, err, sizeof err);
  CHECK (st == GR_ERR_FORMAT && !g, "bad world file: %d %s", st, err);

  const char *files[] = { tif, png, pgw, prj, plain, badwf };
  for (guint i = 0; i < G_N_ELEMENTS (files); i++)
    g_unlink (files[i]);
  g_rmdir (dir);
  g_free (tif);
  g_free (png);
  g_free (pgw);
  g_free (prj);
  g_free (plain);
  g_free (badwf);
  g_free (missing);
  g_free (dir);
  return CHECK_DONE ();
}
#endif
