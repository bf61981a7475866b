/* The control's CRS and map <-> WGS84 transforms through GDAL OSR (kernels/geo.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "geo.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <gdal.h>
#include <ogr_srs_api.h>

#include "raster.h"
#include "raster_internal.h"

struct GrGeoRef {
  double geo[6];
  double inv[6];                /* map -> pixel corners */
  bool invertible;
  OGRSpatialReferenceH srs;
  OGRCoordinateTransformationH to_ll, from_ll;
  int epsg;
  char *name;                   /* "EPSG:n" or WKT2 */
  char *wkt;
};

/* WGS84 ellipsoid */
static const double WGS84_A = 6378137.0;
static const double WGS84_E2 = 6.69437999014e-3;

void
gr_georef_free (GrGeoRef *g)
{
  if (!g)
    return;
  if (g->to_ll)
    OCTDestroyCoordinateTransformation (g->to_ll);
  if (g->from_ll)
    OCTDestroyCoordinateTransformation (g->from_ll);
  if (g->srs)
    OSRRelease (g->srs);
  free (g->name);
  free (g->wkt);
  free (g);
}

/* The EPSG code of srs: its own authority code when it has one, else what
 * OSRAutoIdentifyEPSG recognizes (it may fill the authority in). */
static int
identify_epsg (OGRSpatialReferenceH srs)
{
  const char *key = OSRIsProjected (srs) ? "PROJCS" : (OSRIsGeographic (srs) ? "GEOGCS" : NULL);
  const char *auth = OSRGetAuthorityName (srs, key);
  const char *code = OSRGetAuthorityCode (srs, key);
  if (!(auth && code && strcmp (auth, "EPSG") == 0) && OSRAutoIdentifyEPSG (srs) == OGRERR_NONE) {
    auth = OSRGetAuthorityName (srs, key);
    code = OSRGetAuthorityCode (srs, key);
  }
  if (auth && code && strcmp (auth, "EPSG") == 0)
    return atoi (code);
  /* ESRI .prj files name no authority: ask PROJ's database for an equivalent CRS,
   * accepted only at high confidence (>= 90: same definition, names may differ) */
  int n = 0, *confidence = NULL, epsg = 0;
  OGRSpatialReferenceH *matches = OSRFindMatches (srs, NULL, &n, &confidence);
  if (matches && n > 0 && confidence && confidence[0] >= 90) {
    const char *ka = OSRIsProjected (matches[0]) ? "PROJCS" : "GEOGCS";
    const char *ma = OSRGetAuthorityName (matches[0], ka);
    const char *mc = OSRGetAuthorityCode (matches[0], ka);
    if (ma && mc && strcmp (ma, "EPSG") == 0)
      epsg = atoi (mc);
  }
  if (matches)
    OSRFreeSRSArray (matches);
  CPLFree (confidence);
  return epsg;
}

/* Finishes g from g->geo and g->srs: inverse, transforms to and from WGS84, names. */
static GrStatus
georef_finish (GrGeoRef *g, const char *what, char *errbuf, size_t errlen)
{
  const double *t = g->geo;
  const double det = t[1] * t[5] - t[2] * t[4];
  if (!(isfinite (det) && det != 0)) {
    gr_set_err (errbuf, errlen, "%s: degenerate geotransform (zero pixel size)", what);
    return GR_ERR_INVALID;
  }
  g->inv[1] = t[5] / det;
  g->inv[2] = -t[2] / det;
  g->inv[4] = -t[4] / det;
  g->inv[5] = t[1] / det;
  g->inv[0] = -(g->inv[1] * t[0] + g->inv[2] * t[3]);
  g->inv[3] = -(g->inv[4] * t[0] + g->inv[5] * t[3]);
  g->invertible = true;

  OSRSetAxisMappingStrategy (g->srs, OAMS_TRADITIONAL_GIS_ORDER);
  OGRSpatialReferenceH ll = OSRNewSpatialReference (NULL);
  if (!ll || OSRImportFromEPSG (ll, 4326) != OGRERR_NONE) {
    if (ll)
      OSRRelease (ll);
    gr_set_err (errbuf, errlen, "%s: PROJ has no EPSG:4326 (is proj-data installed?)", what);
    return GR_ERR_FORMAT;
  }
  OSRSetAxisMappingStrategy (ll, OAMS_TRADITIONAL_GIS_ORDER);
  g->to_ll = OCTNewCoordinateTransformation (g->srs, ll);
  g->from_ll = OCTNewCoordinateTransformation (ll, g->srs);
  OSRRelease (ll);
  if (!g->to_ll || !g->from_ll) {
    gr_set_err (errbuf, errlen, "%s: no transformation between the CRS and WGS84: %s", what,
        CPLGetLastErrorMsg ());
    return GR_ERR_FORMAT;
  }
  g->epsg = identify_epsg (g->srs);
  char *wkt = NULL;
  const char *opts[] = { "FORMAT=WKT2_2018", NULL };
  if (OSRExportToWktEx (g->srs, &wkt, opts) != OGRERR_NONE || !wkt) {
    CPLFree (wkt);
    gr_set_err (errbuf, errlen, "%s: the CRS cannot be written as WKT", what);
    return GR_ERR_FORMAT;
  }
  g->wkt = strdup (wkt);
  CPLFree (wkt);
  if (g->epsg > 0) {
    g->name = malloc (24);
    if (g->name)
      snprintf (g->name, 24, "EPSG:%d", g->epsg);
  } else {
    g->name = g->wkt ? strdup (g->wkt) : NULL;
  }
  if (!g->wkt || !g->name) {
    gr_set_err (errbuf, errlen, "%s: out of memory", what);
    return GR_ERR_NOMEM;
  }
  return GR_OK;
}

/* Parses a user CRS string into a new srs, or NULL with the reason in errbuf. */
static OGRSpatialReferenceH
srs_from_string (const char *crs, const char *what, char *errbuf, size_t errlen)
{
  OGRSpatialReferenceH srs = OSRNewSpatialReference (NULL);
  if (srs && OSRSetFromUserInput (srs, crs) == OGRERR_NONE)
    return srs;
  if (srs)
    OSRRelease (srs);
  gr_set_err (errbuf, errlen, "%s: CRS '%.200s' not understood (give e.g. EPSG:32617 or WKT)",
      what, crs);
  return NULL;
}

GrStatus
gr_georef_new (const double geo[6], const char *crs, GrGeoRef **out, char *errbuf,
    size_t errlen)
{
  if (!geo || !crs || !out) {
    gr_set_err (errbuf, errlen, "gr_georef_new: NULL argument");
    return GR_ERR_INVALID;
  }
  *out = NULL;
  GrGeoRef *g = calloc (1, sizeof *g);
  if (!g)
    return GR_ERR_NOMEM;
  memcpy (g->geo, geo, sizeof g->geo);
  g->srs = srs_from_string (crs, "georeference", errbuf, errlen);
  GrStatus st = g->srs ? georef_finish (g, "georeference", errbuf, errlen) : GR_ERR_FORMAT;
  if (st != GR_OK) {
    gr_georef_free (g);
    return st;
  }
  *out = g;
  return GR_OK;
}

/* <stem>.prj beside path (also <name>.prj), newly allocated, or NULL. */
static char *
prj_beside (const char *path)
{
  const char *slash = strrchr (path, '/');
  const char *base = slash ? slash + 1 : path;
  const char *dot = strrchr (base, '.');
  size_t stem = dot && dot != base ? (size_t) (dot - path) : strlen (path);
  for (int pass = 0; pass < 2; pass++) {
    size_t n = pass == 0 ? stem : strlen (path);
    char *p = malloc (n + 5);
    if (!p)
      return NULL;
    memcpy (p, path, n);
    memcpy (p + n, ".prj", 5);
    struct stat sb;
    if (stat (p, &sb) == 0 && S_ISREG (sb.st_mode))
      return p;
    free (p);
  }
  return NULL;
}

static bool
file_list_has (GDALDatasetH ds, const char *file)
{
  char **files = ds ? GDALGetFileList (ds) : NULL;
  bool has = files && CSLFindString (files, file) >= 0;
  CSLDestroy (files);
  return has;
}

/* Reads a .prj (ESRI WKT, OGC WKT, or anything OSRSetFromUserInput takes). */
static OGRSpatialReferenceH
srs_from_prj (const char *prj, char *errbuf, size_t errlen)
{
  char **lines = CSLLoad2 (prj, 1000, 100000, NULL);
  if (!lines) {
    gr_set_err (errbuf, errlen, "'%s': cannot read the .prj", prj);
    return NULL;
  }
  OGRSpatialReferenceH srs = OSRNewSpatialReference (NULL);
  OGRErr e = srs ? OSRImportFromESRI (srs, lines) : OGRERR_FAILURE;
  CSLDestroy (lines);
  if (srs && e == OGRERR_NONE)
    return srs;
  if (srs)
    OSRRelease (srs);
  gr_set_err (errbuf, errlen, "'%s': the .prj holds no CRS that PROJ understands", prj);
  return NULL;
}

GrStatus
gr_georef_open (const char *path, const char *crs, GrGeoRef **out, char *errbuf,
    size_t errlen)
{
  if (!path || !out) {
    gr_set_err (errbuf, errlen, "gr_georef_open: NULL argument");
    return GR_ERR_INVALID;
  }
  *out = NULL;
  GDALAllRegister ();
  GrGeoRef *g = calloc (1, sizeof *g);
  if (!g)
    return GR_ERR_NOMEM;
  GrStatus st = GR_OK;
  /* the file's own geotransform; a world file is read by the project's reader
   * (kernels/raster.c), so both agree with what the elements load */
  GDALDatasetH ds = GDALOpenEx (path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
  static const double ident[6] = { 0, 1, 0, 0, 0, 1 };
  bool have_geo = ds && GDALGetGeoTransform (ds, g->geo) == CE_None
      && memcmp (g->geo, ident, sizeof ident) != 0;
  /* as gr_raster_load does: a world file GDAL itself read (or GDAL has no
   * geotransform) is read by the project's reader, so both agree */
  char *wf = gr_world_file_find (path);
  if (wf && (!have_geo || file_list_has (ds, wf))) {
    st = gr_world_file_read (wf, g->geo, errbuf, errlen);
    have_geo = st == GR_OK;
  }
  free (wf);
  if (st != GR_OK)
    goto fail;
  if (!ds && !have_geo) {
    struct stat sb;
    gr_set_err (errbuf, errlen, "'%s': cannot open: %s", path, stat (path, &sb) != 0 ?
        strerror (errno) : CPLGetLastErrorMsg ());
    st = GR_ERR_IO;
    goto fail;
  }
  if (!have_geo) {
    gr_set_err (errbuf, errlen, "'%s': not georeferenced (no geotransform, no world file)",
        path);
    st = GR_ERR_FORMAT;
    goto fail;
  }
  if (crs && *crs) {
    g->srs = srs_from_string (crs, path, errbuf, errlen);
  } else {
    OGRSpatialReferenceH own = ds ? GDALGetSpatialRef (ds) : NULL;
    if (own) {
      g->srs = OSRClone (own);
    } else {
      char *prj = prj_beside (path);
      if (prj) {
        g->srs = srs_from_prj (prj, errbuf, errlen);
        free (prj);
      } else {
        gr_set_err (errbuf, errlen, "'%s': no CRS in the file and no .prj beside it "
            "(give one, e.g. crs=EPSG:32617)", path);
      }
    }
  }
  if (!g->srs) {
    st = GR_ERR_FORMAT;
    goto fail;
  }
  st = georef_finish (g, path, errbuf, errlen);
  if (st != GR_OK)
    goto fail;
  if (ds)
    GDALClose (ds);
  *out = g;
  return GR_OK;

fail:
  if (ds)
    GDALClose (ds);
  gr_georef_free (g);
  return st;
}

void
gr_georef_geotransform (const GrGeoRef *g, double geo[6])
{
  memcpy (geo, g->geo, sizeof g->geo);
}

int
gr_georef_epsg (const GrGeoRef *g)
{
  return g->epsg;
}

const char *
gr_georef_crs_name (const GrGeoRef *g)
{
  return g->name;
}

const char *
gr_georef_wkt (const GrGeoRef *g)
{
  return g->wkt;
}

bool
gr_georef_is_projected (const GrGeoRef *g)
{
  return OSRIsProjected (g->srs) && fabs (OSRGetLinearUnits (g->srs, NULL) - 1.0) < 1e-12;
}

void
gr_georef_pixel_to_map (const GrGeoRef *g, double px, double py, double *mx, double *my)
{
  gr_geo_apply (g->geo, px, py, mx, my);
}

bool
gr_georef_map_to_pixel (const GrGeoRef *g, double mx, double my, double *px, double *py)
{
  if (!g->invertible)
    return false;
  gr_geo_apply (g->inv, mx, my, px, py);
  return true;
}

static bool
transform_points (OGRCoordinateTransformationH ct, double *x, double *y, int n)
{
  if (n <= 0)
    return true;
  int *ok = calloc ((size_t) n, sizeof *ok);
  if (!ok)
    return false;
  bool all = OCTTransformEx (ct, n, x, y, NULL, ok) != 0;
  for (int i = 0; i < n; i++)
    if (!ok[i] || !isfinite (x[i]) || !isfinite (y[i])) {
      x[i] = y[i] = NAN;
      all = false;
    }
  free (ok);
  return all;
}

bool
gr_georef_map_to_lonlat (const GrGeoRef *g, double *x, double *y, int n)
{
  return transform_points (g->to_ll, x, y, n);
}

bool
gr_georef_lonlat_to_map (const GrGeoRef *g, double *x, double *y, int n)
{
  return transform_points (g->from_ll, x, y, n);
}

/* Metres per radian of latitude (meridional) and of longitude at latitude lat. */
static void
local_radii (double lat_deg, double *m_lat, double *m_lon)
{
  const double phi = lat_deg * M_PI / 180.0, s = sin (phi);
  const double w = 1.0 - WGS84_E2 * s * s;
  *m_lat = WGS84_A * (1.0 - WGS84_E2) / (w * sqrt (w));
  *m_lon = WGS84_A / sqrt (w) * cos (phi);
}

static void
local_en (double lon0, double lat0, double lon, double lat, double *e, double *n)
{
  double ml, mo;
  local_radii (lat0, &ml, &mo);
  double dlon = remainder (lon - lon0, 360.0);
  *e = dlon * M_PI / 180.0 * mo;
  *n = (lat - lat0) * M_PI / 180.0 * ml;
}

double
gr_geo_bearing_deg (double lon0, double lat0, double lon1, double lat1)
{
  double e, n;
  local_en (lon0, lat0, lon1, lat1, &e, &n);
  double b = atan2 (e, n) * 180.0 / M_PI;
  return b < 0 ? b + 360.0 : b;
}

double
gr_geo_distance_m (double lon0, double lat0, double lon1, double lat1)
{
  double e, n;
  local_en (lon0, lat0, lon1, lat1, &e, &n);
  return hypot (e, n);
}

double
gr_geo_area_m2 (const double *lon, const double *lat, int n)
{
  double a = 0, pe = 0, pn = 0;
  for (int i = 0; i <= n; i++) {
    double e, nn;
    local_en (lon[0], lat[0], lon[i % n], lat[i % n], &e, &nn);
    if (i > 0)
      a += pe * nn - e * pn;
    pe = e;
    pn = nn;
  }
  return fabs (a) / 2.0;
}
