/* georeg-photos on realistic drone photos (suite data; GEOREG_DATA must hold
 * aukerman.png, else skipped): the orthomosaic as a UTM 17N GeoTIFF at 0.1 m, and photos
 * rendered from it as a DJI Phantom 4 (FC330: 3.61 mm lens, 6.17 mm sensor, 4000 x 3000
 * at full size) would take them over flat ground: any heading (0-360), the gimbal near
 * nadir (true pitch and roll within 2 degrees), 23-28 m above the ground (1.0-1.2 cm per
 * full-size pixel: far finer than the ortho), barrel distortion the EXIF does not state,
 * and EXIF/XMP telemetry in DJI's layout with realistic errors (GPS 3 m, gimbal yaw
 * 5 degrees, relative altitude 5%, pitch and roll as logged without the true tilt).
 * Each photo's footprint from georeg-photos (footprints.geojson) is compared with the
 * truth: where the photo's corner pixels really see the ground, in metres.
 *
 * Issue 13's target: within 1 m for at least 90% of the photos.  CI renders 5 photos at
 * 1000 x 750 (the same camera, resized; about 20 s here); GEOREG_PHOTOS_FULL=1 renders 10
 * at the full 4000 x 3000 (the measurement in docs/telemetry.md).  GEOREG_PHOTOS_KEEP=1
 * keeps the work folder; GEOREG_PHOTOS_HARD=N renders N photos with issue 13's larger
 * errors (GPS 10 m, yaw 10 degrees, height 10%).
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

#include "camera.h"
#include "synth.h"
#include "synth_jpeg.h"

#define ORTHO_PX_M 0.1
#define ORTHO_X0 431000.0
#define ORTHO_Y0 4577000.0
#define FOCAL_MM 3.61
#define SENSOR_MM 6.17
#define GROUND_AMSL 262.0      /* the ground the photos see */
#define TAKEOFF_AMSL 268.5     /* the pilot's hill: relative altitudes are 6.5 m short */

typedef struct {
  int w, h;                     /* ortho size */
  float *rgb;                   /* w x h x 3 */
  guint8 *alpha;                /* w x h: 0 = no data */
  OGRCoordinateTransformationH to_ll;
} Ortho;

/* map (UTM) -> lon/lat */
static void
lonlat (const Ortho *o, double x, double y, double *lon, double *lat)
{
  double a = x, b = y;
  OCTTransform (o->to_ll, 1, &a, &b, NULL);
  *lon = a;
  *lat = b;
}

static bool
load_ortho (const char *png, const char *tif, Ortho *o)
{
  GDALDatasetH src = GDALOpen (png, GA_ReadOnly);
  if (!src)
    return false;
  o->w = GDALGetRasterXSize (src);
  o->h = GDALGetRasterYSize (src);
  o->rgb = g_new (float, (size_t) o->w * o->h * 3);
  o->alpha = g_new (guint8, (size_t) o->w * o->h);
  bool ok = GDALGetRasterCount (src) >= 4;
  for (int b = 0; ok && b < 3; b++)
    ok = GDALRasterIO (GDALGetRasterBand (src, b + 1), GF_Read, 0, 0, o->w, o->h,
        o->rgb + b, o->w, o->h, GDT_Float32, 3 * sizeof (float),
        3 * sizeof (float) * o->w) == CE_None;
  /* the ortho's alpha: photos see only ground it covers */
  ok = ok && GDALRasterIO (GDALGetRasterBand (src, 4), GF_Read, 0, 0, o->w, o->h,
      o->alpha, o->w, o->h, GDT_Byte, 0, 0) == CE_None;
  /* the control: the same pixels, georeferenced (as tests/photos_data.sh does) */
  GDALDatasetH dst = ok ? GDALCreateCopy (GDALGetDriverByName ("GTiff"), tif, src, FALSE,
      NULL, NULL, NULL) : NULL;
  ok = dst != NULL;
  OGRSpatialReferenceH utm = OSRNewSpatialReference (NULL), ll = OSRNewSpatialReference (NULL);
  OSRImportFromEPSG (utm, 32617);
  OSRImportFromEPSG (ll, 4326);
  OSRSetAxisMappingStrategy (utm, OAMS_TRADITIONAL_GIS_ORDER);
  OSRSetAxisMappingStrategy (ll, OAMS_TRADITIONAL_GIS_ORDER);
  if (dst) {
    double geo[6] = { ORTHO_X0, ORTHO_PX_M, 0, ORTHO_Y0, 0, -ORTHO_PX_M };
    GDALSetGeoTransform (dst, geo);
    GDALSetSpatialRef (dst, utm);
    GDALClose (dst);
  }
  o->to_ll = OCTNewCoordinateTransformation (utm, ll);
  OSRRelease (utm);
  OSRRelease (ll);
  GDALClose (src);
  return ok && o->to_ll;
}

/* bilinear sample of the ortho at map (x, y); false outside */
static bool
sample (const Ortho *o, double x, double y, float out[3])
{
  const double px = (x - ORTHO_X0) / ORTHO_PX_M - 0.5, py = (ORTHO_Y0 - y) / ORTHO_PX_M - 0.5;
  const int ix = (int) floor (px), iy = (int) floor (py);
  if (ix < 0 || iy < 0 || ix + 1 >= o->w || iy + 1 >= o->h)
    return false;
  const guint8 *a = o->alpha + (size_t) iy * o->w + ix;
  if (!a[0] || !a[1] || !a[o->w] || !a[o->w + 1])
    return false;
  if (!out)
    return true;
  const double fx = px - ix, fy = py - iy;
  const float *p = o->rgb + ((size_t) iy * o->w + ix) * 3;
  const size_t row = (size_t) o->w * 3;
  for (int c = 0; c < 3; c++)
    out[c] = (float) ((1 - fy) * ((1 - fx) * p[c] + fx * p[3 + c]) +
        fy * ((1 - fx) * p[row + c] + fx * p[row + 3 + c]));
  return true;
}

typedef struct {
  GrCamera cam;                 /* the true lens, distortion included */
  GrCameraPose pose;            /* yaw against grid north */
  double x, y;                  /* the camera's nadir, map metres */
  double gh[9];                 /* undistorted pixel -> ground (grid east/north) */
  double corner_lon[4], corner_lat[4];  /* where the corner pixels see the ground */
} Photo;

/* a photo pixel (OpenCV convention, as the lens images it) -> map x/y */
static bool
pixel_to_map (const Photo *ph, double u, double v, double *x, double *y)
{
  double uu, vv, e, n;
  if (!gr_camera_undistort (&ph->cam, u, v, &uu, &vv))
    return false;
  const double *h = ph->gh, wq = h[6] * uu + h[7] * vv + h[8];
  e = (h[0] * uu + h[1] * vv + h[2]) / wq;
  n = (h[3] * uu + h[4] * vv + h[5]) / wq;
  *x = ph->x + e;
  *y = ph->y + n;
  return true;
}

static double
gauss (GrSynthRng *r)
{
  double u = fmax (gr_synth_rng_range (r, 0, 1), 1e-12), v = gr_synth_rng_range (r, 0, 1);
  return sqrt (-2 * log (u)) * cos (2 * M_PI * v);
}

/* A pose and place whose whole view lies on ground the ortho covers (a 40 x 30 grid of
 * its pixels checked; up to 200 draws); false when none was found. */
static bool
place_photo (const Ortho *o, GrSynthRng *r, int width, Photo *ph)
{
  const int height = width * 3 / 4;
  for (int attempt = 0; attempt < 200; attempt++) {
    const double gsd_full = gr_synth_rng_range (r, 0.010, 0.012); /* m per 4000-px pixel */
    ph->pose.yaw_deg = gr_synth_rng_range (r, 0, 360);
    ph->pose.pitch_deg = gr_synth_rng_range (r, -2, 2);
    ph->pose.roll_deg = gr_synth_rng_range (r, -2, 2);
    ph->pose.height_m = gsd_full * FOCAL_MM / SENSOR_MM * 4000;
    ph->x = ORTHO_X0 + gr_synth_rng_range (r, 0, o->w * ORTHO_PX_M);
    ph->y = ORTHO_Y0 - gr_synth_rng_range (r, 0, o->h * ORTHO_PX_M);
    if (!gr_camera_ground_homography (&ph->cam, &ph->pose, ph->gh))
      continue;
    bool ok = true;
    for (int gy = 0; ok && gy <= 30; gy++)
      for (int gx = 0; ok && gx <= 40; gx++) {
        double x, y;
        ok = pixel_to_map (ph, gx * (width - 1) / 40.0, gy * (height - 1) / 30.0, &x, &y)
            && sample (o, x, y, NULL);
      }
    if (ok)
      return true;
  }
  return false;
}

/* 1-sigma telemetry errors: GPS metres, yaw degrees, height share */
static double err_pos = 3, err_yaw = 5, err_height = 0.05;

/* Renders photo i and writes it with its telemetry; false when it cannot. */
static bool
make_photo (const Ortho *o, GrSynthRng *r, int width, const char *path, Photo *ph)
{
  const int height = width * 3 / 4;
  gr_camera_init_focal (&ph->cam, width, height, FOCAL_MM, SENSOR_MM);
  ph->cam.k1 = -0.012;          /* mild barrel distortion, not in the EXIF */
  ph->cam.k2 = 0.004;
  if (!place_photo (o, r, width, ph))
    return false;

  /* render (photos are finer than the ortho: bilinear is enough) */
  guint8 *pix = g_new (guint8, (size_t) width * height * 3);
  bool inside = true;
  for (int v = 0; inside && v < height; v++)
    for (int u = 0; u < width; u++) {
      double x, y;
      float c[3];
      inside = pixel_to_map (ph, u, v, &x, &y) && sample (o, x, y, c);
      if (!inside)
        break;
      for (int k = 0; k < 3; k++)
        pix[((size_t) v * width + u) * 3 + k] = (guint8) fminf (255, fmaxf (0, c[k] + 0.5f));
    }

  /* the truth: the outer corners of the corner pixels (pixel-corner convention) */
  const double cu[4] = { -0.5, -0.5, width - 0.5, width - 0.5 };
  const double cv[4] = { -0.5, height - 0.5, height - 0.5, -0.5 };   /* TL BL BR TR */
  for (int k = 0; inside && k < 4; k++) {
    double x, y;
    inside = pixel_to_map (ph, cu[k], cv[k], &x, &y);
    if (inside)                 /* x, y are set only then */
      lonlat (o, x, y, &ph->corner_lon[k], &ph->corner_lat[k]);
  }

  /* the telemetry, as logged: errors on position, yaw, height; the gimbal's own
   * pitch/roll report (-90, 0) without the airframe's true sway */
  GrSynthDroneTags t;
  gr_synth_drone_tags_init (&t);
  t.make = "DJI";
  t.model = "FC330";
  t.focal_mm = FOCAL_MM;
  t.focal_35mm = 20;
  t.have_gps = true;
  const double gx = ph->x + err_pos * gauss (r), gy = ph->y + err_pos * gauss (r);
  lonlat (o, gx, gy, &t.lon, &t.lat);
  /* the yaw against true north: grid north turned by the meridian convergence here */
  double lon1, lat1;
  const double yr = ph->pose.yaw_deg * M_PI / 180;
  lonlat (o, ph->x + 10 * sin (yr), ph->y + 10 * cos (yr), &lon1, &lat1);
  double lon0, lat0;
  lonlat (o, ph->x, ph->y, &lon0, &lat0);
  const double yaw_true = atan2 ((lon1 - lon0) * cos (lat0 * M_PI / 180), lat1 - lat0) *
      180 / M_PI;
  t.have_xmp = true;
  const double amsl = GROUND_AMSL + ph->pose.height_m * (1 + err_height * gauss (r));
  t.rel_alt = amsl - TAKEOFF_AMSL;
  t.alt_amsl = amsl;
  t.gimbal_yaw = yaw_true + err_yaw * gauss (r);
  t.flight_yaw = t.gimbal_yaw + gr_synth_rng_range (r, -3, 3);
  t.gimbal_pitch = -90;
  t.gimbal_roll = 0;
  const bool ok = inside && gr_synth_jpeg_write (path, pix, width, height, 3, width * 3L,
      92, &t);
  g_free (pix);
  return ok;
}

int
main (void)
{
  const char *data = g_getenv ("GEOREG_DATA"), *root = g_getenv ("GEOREG_BUILD_ROOT");
  gchar *png = data ? g_build_filename (data, "aukerman.png", NULL) : NULL;
  if (!png || !g_file_test (png, G_FILE_TEST_EXISTS) || !root) {
    printf ("SKIP: GEOREG_DATA (with aukerman.png) or GEOREG_BUILD_ROOT not set\n");
    g_free (png);
    return 77;
  }
  const bool full = g_getenv ("GEOREG_PHOTOS_FULL") != NULL;
  int n = full ? 10 : 5;
  const int width = full ? 4000 : 1000;
  /* GEOREG_PHOTOS_HARD=N: N photos with issue 13's "realistic" errors of its
   * synthesized criterion (10 m, 10 degrees, 10%) */
  if (g_getenv ("GEOREG_PHOTOS_HARD")) {
    n = CLAMP (atoi (g_getenv ("GEOREG_PHOTOS_HARD")), 1, 100);
    err_pos = 10;
    err_yaw = 10;
    err_height = 0.10;
  }
  printf ("telemetry errors (1 sigma): GPS %.0f m, yaw %.0f deg, height %.0f%%\n", err_pos,
      err_yaw, 100 * err_height);
  GDALAllRegister ();
  gchar *dir = g_dir_make_tmp ("georeg-photos-flight-XXXXXX", NULL);
  gchar *tif = g_build_filename (dir, "ortho.tif", NULL);
  Ortho o = { 0 };
  CHECK (load_ortho (png, tif, &o), "cannot make the control from %s", png);
  g_free (png);

  Photo *ph = g_new0 (Photo, n);
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (argv, g_build_filename (root, "pipelines", "georeg-photos", NULL));
  g_ptr_array_add (argv, g_strdup ("--control"));
  g_ptr_array_add (argv, g_strdup (tif));
  g_ptr_array_add (argv, g_strdup ("--out"));
  g_ptr_array_add (argv, g_build_filename (dir, "out", NULL));
  /* the user knows the ground and the take-off elevations (docs/telemetry.md) */
  g_ptr_array_add (argv, g_strdup_printf ("--ground-elevation=%.1f", GROUND_AMSL));
  g_ptr_array_add (argv, g_strdup_printf ("--takeoff-elevation=%.1f", TAKEOFF_AMSL));
  GrSynthRng rng;
  gr_synth_rng_init (&rng, 1302);
  gint64 t0 = g_get_monotonic_time ();
  for (int i = 0; o.rgb && i < n; i++) {
    gchar *name = g_strdup_printf ("DJI_%04d.JPG", i + 1);
    gchar *path = g_build_filename (dir, name, NULL);
    CHECK (make_photo (&o, &rng, width, path, &ph[i]), "cannot make %s", name);
    g_ptr_array_add (argv, path);
    g_free (name);
  }
  printf ("%d photos of %d x %d rendered in %.1f s\n", n, width, width * 3 / 4,
      (g_get_monotonic_time () - t0) / 1e6);
  g_ptr_array_add (argv, NULL);

  /* the tool, as a user runs it */
  gchar *out = NULL, *err = NULL;
  gint status = -1;
  t0 = g_get_monotonic_time ();
  const bool ran = g_spawn_sync (NULL, (gchar **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL,
      NULL, &out, &err, &status, NULL);
  const double secs = (g_get_monotonic_time () - t0) / 1e6;
  CHECK (ran && g_spawn_check_wait_status (status, NULL), "georeg-photos failed:\n%s%s",
      out ? out : "", err ? err : "");
  printf ("georeg-photos: %.1f s for %d photos\n%s", secs, n, out ? out : "");

  /* the footprints, through Python's strict JSON parser: "file quality lon lat ..." */
  gchar *json = g_build_filename (dir, "out", "footprints.geojson", NULL);
  gchar *cmd = g_strdup_printf ("python3 -c \"import json,sys\n"
      "for f in json.load(open(sys.argv[1]))['features']:\n"
      " g=f['geometry']; c=g['coordinates'][0] if g and g['type']=='Polygon' else []\n"
      " print(f['properties']['file'].split('/')[-1], f['properties']['quality'],"
      " ' '.join('%%.10f %%.10f'%%tuple(q) for q in c[:4]))\" %s", json);
  gchar *lines = NULL;
  gint st = 1;
  g_spawn_command_line_sync (cmd, &lines, NULL, &st, NULL);
  CHECK (lines && st == 0, "cannot read %s", json);
  int within = 0;
  double worst_all = 0;
  gchar **row = lines ? g_strsplit (lines, "\n", -1) : NULL;
  for (int i = 0; i < n; i++) {
    gchar *name = g_strdup_printf ("DJI_%04d.JPG", i + 1);
    double worst = INFINITY;
    const char *quality = "missing";
    gchar **tok = NULL;
    for (int k = 0; row && row[k]; k++)
      if (g_str_has_prefix (row[k], name)) {
        tok = g_strsplit (row[k], " ", -1);
        break;
      }
    if (tok && g_strv_length (tok) >= 10) {
      quality = tok[1];
      worst = 0;
      for (int k = 0; k < 4; k++) {
        const double lon = g_ascii_strtod (tok[2 + 2 * k], NULL);
        const double lat = g_ascii_strtod (tok[3 + 2 * k], NULL);
        const double r = 6371000.0 * M_PI / 180;
        worst = fmax (worst, hypot ((lon - ph[i].corner_lon[k]) * r *
                cos (lat * M_PI / 180), (lat - ph[i].corner_lat[k]) * r));
      }
    }
    within += worst <= 1.0;
    worst_all = fmax (worst_all, worst);
    printf ("%s: heading %5.1f, height %.1f m, %s, worst corner %.2f m from the truth\n",
        name, ph[i].pose.yaw_deg, ph[i].pose.height_m, quality, worst);
    g_strfreev (tok);
    g_free (name);
  }
  printf ("within 1 m: %d of %d photos (worst corner %.2f m)\n", within, n, worst_all);
  CHECK (within * 10 >= 9 * n, "issue 13: within 1 m for %d of %d photos (90%% needed)",
      within, n);

  g_strfreev (row);
  g_free (lines);
  g_free (cmd);
  g_free (json);
  g_free (out);
  g_free (err);
  g_ptr_array_unref (argv);
  g_free (ph);
  g_free (o.rgb);
  g_free (o.alpha);
  if (o.to_ll)
    OCTDestroyCoordinateTransformation (o.to_ll);
  if (!g_getenv ("GEOREG_PHOTOS_KEEP")) {
    gchar *rm = g_strdup_printf ("rm -rf %s", dir);
    if (system (rm) != 0)
      fprintf (stderr, "could not remove %s\n", dir);
    g_free (rm);
  } else {
    printf ("kept %s\n", dir);
  }
  g_free (tif);
  g_free (dir);
  return CHECK_DONE ();
}
#endif
