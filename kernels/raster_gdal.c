/* Controls through GDAL (compiled only in GDAL builds): any raster GDAL reads, the
 * chosen band (or the BT.601 luminance of bands 1-3) as float, GDAL's mask bands
 * (nodata, alpha, internal masks) as the validity mask, palettes expanded through their
 * colour table, the geotransform from GDAL or, failing that, from a world file beside
 * the image.  Read in strips of STRIP_ROWS rows after the size has passed the budget
 * and a first strip has been read (a truncated file fails before the planes exist).
 * The open, the band rules and the georeference are shared with windowed reading
 * (control_source.c) through raster_gdal.h.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "raster.h"
#include "raster_formats.h"
#include "raster_gdal.h"
#include "raster_internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <png.h>
#include <gdal.h>
#include <cpl_error.h>
#include <cpl_conv.h>
#include <cpl_string.h>
#include <cpl_vsi.h>

static pthread_once_t gdal_once = PTHREAD_ONCE_INIT;

static void
gdal_init (void)
{
  GDALAllRegister ();
}

static void CPL_STDCALL
gdal_error_cb (CPLErr cls, CPLErrorNum num, const char *msg)
{
  (void) num;
  GrGdalScope *e = CPLGetErrorHandlerUserData ();
  if (!e || cls < CE_Failure || e->have_failure)
    return;                     /* warnings and debug output are swallowed */
  snprintf (e->failure, sizeof e->failure, "%s", msg ? msg : "GDAL error");
  e->have_failure = true;
}

void
gr_gdal_scope_begin (GrGdalScope *s)
{
  pthread_once (&gdal_once, gdal_init);
  memset (s, 0, sizeof *s);
  CPLPushErrorHandlerEx (gdal_error_cb, s);
  /* libjpeg warnings (truncated or corrupt data, filled with gray) become errors, as in
   * the built-in loader.  Thread-local: other GDAL users in the process are untouched. */
  const char *prev_opt = CPLGetThreadLocalConfigOption ("GDAL_ERROR_ON_LIBJPEG_WARNING", NULL);
  s->prev_jpeg_opt = prev_opt ? strdup (prev_opt) : NULL;
  CPLSetThreadLocalConfigOption ("GDAL_ERROR_ON_LIBJPEG_WARNING", "TRUE");
}

void
gr_gdal_scope_end (GrGdalScope *s)
{
  CPLSetThreadLocalConfigOption ("GDAL_ERROR_ON_LIBJPEG_WARNING", s->prev_jpeg_opt);
  free (s->prev_jpeg_opt);
  s->prev_jpeg_opt = NULL;
  CPLPopErrorHandler ();
}

#define STRIP_ROWS 64

void
gr_gdal_bands_clear (GrGdalBands *b)
{
  if (!b->ct_borrowed) {
    free (b->ct_val);
    free (b->ct_ok);
  }
  memset (b, 0, sizeof *b);
}

/* The mask bands of the source bands (one per dataset when the mask is per dataset). */
static void
bands_find_masks (GrGdalBands *b)
{
  bool per_dataset_done = false;
  b->nmask = 0;
  for (int i = 0; i < b->nsrc; i++) {
    int flags = GDALGetMaskFlags (b->src[i]);
    if (flags & GMF_ALL_VALID)
      continue;
    if (flags & GMF_PER_DATASET) {
      if (per_dataset_done)
        continue;
      per_dataset_done = true;
    }
    GDALRasterBandH m = GDALGetMaskBand (b->src[i]);
    if (m)
      b->mband[b->nmask++] = m;
  }
}

GrStatus
gr_gdal_bands_init (GDALDatasetH ds, const char *path, int band, GrGdalBands *b,
    char *errbuf, size_t errlen)
{
  int w = GDALGetRasterXSize (ds), h = GDALGetRasterYSize (ds);
  int n = GDALGetRasterCount (ds);
  GDALRasterBandH *data = NULL;

  memset (b, 0, sizeof *b);
  if (n < 1 || w <= 0 || h <= 0) {
    gr_set_err (errbuf, errlen, "'%s': no raster data (%d x %d, %d bands)", path, w, h, n);
    return GR_ERR_FORMAT;
  }
  data = malloc (sizeof *data * (size_t) n);
  if (!data) {
    gr_set_err (errbuf, errlen, "'%s': out of memory", path);
    return GR_ERR_NOMEM;
  }
  int nb = 0;
  for (int i = 1; i <= n; i++) {
    GDALRasterBandH d = GDALGetRasterBand (ds, i);
    if (d && GDALGetRasterColorInterpretation (d) != GCI_AlphaBand)
      data[nb++] = d;
  }
  if (nb == 0) {
    free (data);
    gr_set_err (errbuf, errlen, "'%s': only an alpha band, no data band", path);
    return GR_ERR_FORMAT;
  }
  GDALDataType dt = GDALGetRasterDataType (data[0]);
  if (GDALDataTypeIsComplex (dt)) {
    free (data);
    gr_set_err (errbuf, errlen, "'%s': complex-valued rasters are not supported", path);
    return GR_ERR_FORMAT;
  }

  /* A palette band is expanded through its colour table, like the PNG loader does. */
  GDALColorTableH ct = NULL;
  GDALPaletteInterp pi = GPI_RGB;
  if (nb == 1 && GDALGetRasterColorInterpretation (data[0]) == GCI_PaletteIndex) {
    ct = GDALGetRasterColorTable (data[0]);
    if (ct) {
      pi = GDALGetPaletteInterpretation (ct);
      if (pi != GPI_RGB && pi != GPI_Gray)
        ct = NULL;              /* CMYK/HLS tables: keep the raw indices */
    }
  }
  int bands = ct ? (pi == GPI_RGB ? 3 : 1) : nb;
  if (band < 0 || band > bands) {
    free (data);
    gr_set_err (errbuf, errlen, "'%s': band %d out of range (the file has %d band%s)", path,
        band, bands, bands == 1 ? "" : "s");
    return GR_ERR_FORMAT;
  }

  if (ct || dt == GDT_Byte)
    b->bit_depth = 8;
  else if (dt == GDT_UInt16 || dt == GDT_Int16)
    b->bit_depth = 16;
  else
    b->bit_depth = GDALGetDataTypeSizeBits (dt);
  b->is_float = dt == GDT_Float32 || dt == GDT_Float64;
  b->bands = bands;
  b->width = w;
  b->height = h;

  /* source bands: 1 (a band, or a palette index) or 3 (luminance) */
  b->nsrc = 1;
  if (ct) {
    b->src[0] = data[0];
  } else if (band == 0 && bands >= 3) {
    b->src[0] = data[0];
    b->src[1] = data[1];
    b->src[2] = data[2];
    b->nsrc = 3;
  } else {
    b->src[0] = data[band == 0 ? 0 : band - 1];
  }
  free (data);

  /* low-bit data (NBITS 1..7, e.g. a 2-bit gray PNG) is stretched to 0..255, as libpng
   * expands it, so both loaders agree */
  if (!ct && dt == GDT_Byte) {
    const char *nbits = GDALGetMetadataItem (b->src[0], "NBITS", "IMAGE_STRUCTURE");
    int nbi = nbits ? atoi (nbits) : 8;
    if (nbi >= 1 && nbi < 8)
      b->nscale = 255.0 / (double) ((1 << nbi) - 1);
  }
  bands_find_masks (b);

  /* colour table lookups: value of the chosen band (or luminance) and validity */
  if (ct) {
    int count = GDALGetColorEntryCount (ct);
    b->ct_count = count;
    b->ct_val = malloc (sizeof (float) * (size_t) (count > 0 ? count : 1));
    b->ct_ok = malloc ((size_t) (count > 0 ? count : 1));
    if (!b->ct_val || !b->ct_ok) {
      gr_gdal_bands_clear (b);
      gr_set_err (errbuf, errlen, "'%s': out of memory", path);
      return GR_ERR_NOMEM;
    }
    for (int k = 0; k < count; k++) {
      GDALColorEntry e;
      GDALGetColorEntryAsRGB (ct, k, &e);
      if (pi == GPI_Gray)
        b->ct_val[k] = (float) e.c1;
      else if (band == 0)
        b->ct_val[k] = gr_luma601 (e.c1, e.c2, e.c3);
      else
        b->ct_val[k] = (float) (band == 1 ? e.c1 : band == 2 ? e.c2 : e.c3);
      b->ct_ok[k] = e.c4 != 0 ? GR_MASK_VALID : 0;
    }
  }
  return GR_OK;
}

bool
gr_gdal_bands_overview (const GrGdalBands *full, int index, GrGdalBands *ovr)
{
  *ovr = *full;
  ovr->ct_borrowed = true;
  for (int i = 0; i < full->nsrc; i++) {
    if (index < 0 || index >= GDALGetOverviewCount (full->src[i]))
      return false;
    ovr->src[i] = GDALGetOverview (full->src[i], index);
    if (!ovr->src[i])
      return false;
    int w = GDALGetRasterBandXSize (ovr->src[i]), h = GDALGetRasterBandYSize (ovr->src[i]);
    if (i == 0) {
      ovr->width = w;
      ovr->height = h;
    } else if (w != ovr->width || h != ovr->height) {
      return false;
    }
  }
  if (ovr->width <= 0 || ovr->height <= 0)
    return false;
  /* the overview's own masks (its nodata, its dataset's alpha or internal mask) */
  bands_find_masks (ovr);
  return true;
}

CPLErr
gr_gdal_bands_read (const GrGdalBands *b, int x0, int y0, int w, int h, float *dst,
    uint8_t *mdst, float *tmp, uint8_t *mtmp)
{
  size_t np = (size_t) w * (size_t) h;
  CPLErr e = GDALRasterIO (b->src[0], GF_Read, x0, y0, w, h, dst, w, h, GDT_Float32, 0, 0);
  if (e == CE_None && b->nsrc == 3)
    e = GDALRasterIO (b->src[1], GF_Read, x0, y0, w, h, tmp, w, h, GDT_Float32, 0, 0);
  if (e == CE_None && b->nsrc == 3)
    e = GDALRasterIO (b->src[2], GF_Read, x0, y0, w, h, tmp + np, w, h, GDT_Float32, 0, 0);
  if (b->nmask == 0)
    memset (mdst, GR_MASK_VALID, np);
  else if (e == CE_None)
    e = GDALRasterIO (b->mband[0], GF_Read, x0, y0, w, h, mdst, w, h, GDT_Byte, 0, 0);
  for (int m = 1; e == CE_None && m < b->nmask; m++) {
    e = GDALRasterIO (b->mband[m], GF_Read, x0, y0, w, h, mtmp, w, h, GDT_Byte, 0, 0);
    for (size_t i = 0; e == CE_None && i < np; i++)
      if (!mtmp[i])
        mdst[i] = 0;
  }
  if (e != CE_None)
    return e;
  for (size_t i = 0; i < np; i++) {
    uint8_t ok = mdst[i] ? GR_MASK_VALID : 0;
    if (b->nscale != 0.0) {
      dst[i] = (float) rint (dst[i] * b->nscale);
      if (b->nsrc == 3) {
        tmp[i] = (float) rint (tmp[i] * b->nscale);
        tmp[np + i] = (float) rint (tmp[np + i] * b->nscale);
      }
    }
    if (b->nsrc == 3) {
      dst[i] = gr_luma601 (dst[i], tmp[i], tmp[np + i]);
    } else if (b->ct_val) {
      float v = dst[i];
      int k = (int) v;
      if (v >= 0 && k < b->ct_count) {
        dst[i] = b->ct_val[k];
        if (!b->ct_ok[k])
          ok = 0;
      } else {
        dst[i] = 0;
        ok = 0;
      }
    }
    if (b->is_float && !isfinite (dst[i]))
      ok = 0;
    mdst[i] = ok;
  }
  return CE_None;
}

static GrStatus
gdal_read (GDALDatasetH ds, const char *path, int band, const GrRasterBudget *budget,
    GrRaster *out, GrGdalScope *errs, char *errbuf, size_t errlen)
{
  GrStatus st = GR_OK;
  float *tmp = NULL;
  uint8_t *mtmp = NULL;
  GrGdalBands b;

  st = gr_gdal_bands_init (ds, path, band, &b, errbuf, errlen);
  if (st != GR_OK)
    return st;
  int w = b.width, h = b.height;

  /* the budget, from the raster size: the plane and the mask */
  char why[400];
  st = gr_raster_budget_check (budget, "raster", (uint64_t) w, (uint64_t) h, true, 0, why,
      sizeof why);
  if (st != GR_OK) {
    gr_set_err (errbuf, errlen, "'%s': %s", path, why);
    goto done;
  }

  /* A raster whose blocks are all missing (a sparse file, or a header whose strip
   * tables were lost) would be read in full as zeros: a 179-byte TIFF claiming 65286 x
   * 3149 x 65 bands cost 6 s and 1.7 GB (found by fuzz_raster_gdal).  Nothing in it
   * can be registered against: refused before the planes are allocated. */
  double covered = 0.0;
  if (GDALGetDataCoverageStatus (b.src[0], 0, 0, w, h, 0, &covered) ==
      GDAL_DATA_COVERAGE_STATUS_EMPTY) {
    gr_set_err (errbuf, errlen, "'%s': no pixel data in the file (%d x %d declared, every "
        "block missing)", path, w, h);
    st = GR_ERR_FORMAT;
    goto done;
  }

  /* The first strip is read before the planes are allocated: a truncated or forged
   * file (a 740-byte JPEG claiming 15000 x 15000) fails here, having cost one strip,
   * not a full-size plane (which the allocator may touch: MALLOC_PERTURB_, sanitizers). */
  {
    int rows = h < STRIP_ROWS ? h : STRIP_ROWS;
    float *probe = malloc (sizeof (float) * (size_t) w * (size_t) rows);
    if (!probe) {
      gr_set_err (errbuf, errlen, "'%s': out of memory", path);
      st = GR_ERR_NOMEM;
      goto done;
    }
    CPLErr pe = GDALRasterIO (b.src[0], GF_Read, 0, 0, w, rows, probe, w, rows, GDT_Float32,
        0, 0);
    free (probe);
    if (pe != CE_None) {
      gr_set_err (errbuf, errlen, "'%s': read failed at rows 0-%d: %s", path, rows - 1,
          errs->have_failure ? errs->failure : "GDAL read error");
      st = GR_ERR_FORMAT;
      goto done;
    }
  }

  if (!gr_raster_plane_alloc (&out->plane, w, h, true)) {
    st = GR_ERR_NOMEM;
    gr_set_err (errbuf, errlen, "'%s': cannot allocate %d x %d pixels", path, w, h);
    goto done;
  }
  if (b.nsrc == 3)
    tmp = malloc (sizeof (float) * 2 * (size_t) w * STRIP_ROWS);
  if (b.nmask > 1)
    mtmp = malloc ((size_t) w * STRIP_ROWS);
  if ((b.nsrc == 3 && !tmp) || (b.nmask > 1 && !mtmp)) {
    st = GR_ERR_NOMEM;
    gr_set_err (errbuf, errlen, "'%s': out of memory", path);
    goto done;
  }

  for (int y0 = 0; y0 < h; y0 += STRIP_ROWS) {
    int rows = h - y0 < STRIP_ROWS ? h - y0 : STRIP_ROWS;
    float *dst = out->plane.data + (size_t) y0 * (size_t) w;
    uint8_t *mdst = out->plane.mask + (size_t) y0 * (size_t) w;
    if (gr_gdal_bands_read (&b, 0, y0, w, rows, dst, mdst, tmp, mtmp) != CE_None) {
      st = GR_ERR_FORMAT;
      gr_set_err (errbuf, errlen, "'%s': read failed at rows %d-%d: %s", path, y0,
          y0 + rows - 1, errs->have_failure ? errs->failure : "GDAL read error");
      goto done;
    }
  }
  out->bands = b.bands;
  out->bit_depth = b.bit_depth;

done:
  gr_gdal_bands_clear (&b);
  free (tmp);
  free (mtmp);
  return st;
}

static const char *
base_name (const char *p)
{
  const char *s = strrchr (p, '/');
  return s ? s + 1 : p;
}

/* Whether GDAL lists the file wf among the dataset's files (sidecars it used). */
static bool
file_list_has (GDALDatasetH ds, const char *wf)
{
  char **files = GDALGetFileList (ds);
  bool found = false;
  for (int i = 0; files && files[i] && !found; i++)
    found = strcmp (base_name (files[i]), base_name (wf)) == 0;
  CSLDestroy (files);
  return found;
}

/* The files beside a local path that GDAL may open as sidecars (world files, .aux.xml,
 * .ovr, .msk: their names start with the image's stem), regular files only, the image
 * itself first.  Given to GDALOpenEx as its sibling list, so that GDAL looks at nothing
 * else: without it GDAL probes the sidecar names itself and a FIFO named like a world
 * file blocks its open for ever.  NULL when the folder cannot be listed (GDAL probes). */
static char **
regular_siblings (const char *path)
{
  char *dir = CPLStrdup (CPLGetPath (path));
  char *stem = CPLStrdup (CPLGetBasename (path));
  const char *name = CPLGetFilename (path);
  char **list = NULL;
  DIR *d = opendir (*dir ? dir : ".");
  if (d) {
    list = CSLAddString (list, name);
    size_t stem_len = strlen (stem);
    struct dirent *e;
    int kept = 0;
    while ((e = readdir (d)) && kept < 4096) {
      struct stat st;
      if (strcmp (e->d_name, name) != 0 && strncasecmp (e->d_name, stem, stem_len) == 0
          && fstatat (dirfd (d), e->d_name, &st, 0) == 0 && S_ISREG (st.st_mode)) {
        list = CSLAddString (list, e->d_name);
        kept++;
      }
    }
    closedir (d);
  }
  CPLFree (dir);
  CPLFree (stem);
  return list;
}

GrStatus
gr_gdal_open (const char *path, GrGdalScope *scope, GDALDatasetH *ds, char *errbuf,
    size_t errlen)
{
  pthread_once (&gdal_once, gdal_init);
  *ds = NULL;
  if (strncmp (path, "/vsi", 4) != 0) {
    /* a FIFO or a device would block GDAL's open (or never end): refused here.  GDAL
     * opens the path again; a file swapped in between is the caller's own doing */
    FILE *fp = NULL;
    GrStatus st = gr_raster_open_regular (path, &fp, errbuf, errlen);
    if (st != GR_OK)
      return st;
    fclose (fp);
  } else {
    errno = 0;
    VSILFILE *vf = VSIFOpenL (path, "rb");
    if (!vf) {
      gr_set_err (errbuf, errlen, "cannot open '%s': %s", path,
          errno ? strerror (errno) : "not found");
      return GR_ERR_IO;
    }
    VSIFCloseL (vf);
  }
  char **siblings = strncmp (path, "/vsi", 4) != 0 ? regular_siblings (path) : NULL;
  *ds = GDALOpenEx (path, GDAL_OF_RASTER | GDAL_OF_READONLY | GDAL_OF_VERBOSE_ERROR, NULL,
      NULL, (const char *const *) siblings);
  CSLDestroy (siblings);
  if (!*ds) {
    gr_set_err (errbuf, errlen, "'%s': GDAL cannot read it: %s", path,
        scope->have_failure ? scope->failure : "unsupported format");
    return GR_ERR_FORMAT;
  }
  return GR_OK;
}

GrStatus
gr_gdal_georef (GDALDatasetH ds, const char *path, GrRaster *out, char *errbuf,
    size_t errlen)
{
  GrStatus st = GR_OK;
  double gt[6];
  static const double ident[6] = { 0, 1, 0, 0, 0, 1 };
  bool gdal_geo = GDALGetGeoTransform (ds, gt) == CE_None
      && memcmp (gt, ident, sizeof gt) != 0;
  /* GDAL reads world files leniently (a word becomes 0) and ignores some names
   * (.tfw beside a PNG): when the geotransform is GDAL's reading of our world
   * file, or GDAL has none, read the world file ourselves, so that both builds
   * agree and a malformed one is an error. */
  char *wf = strncmp (path, "/vsi", 4) != 0 ? gr_world_file_find (path) : NULL;
  if (wf && (!gdal_geo || file_list_has (ds, wf)))
    st = gr_raster_world_file_apply (path, wf, out, errbuf, errlen);
  free (wf);
  if (st == GR_OK && !out->has_geo && gdal_geo) {
    if (!gr_raster_geo_usable (gt)) {
      st = GR_ERR_FORMAT;
      gr_set_err (errbuf, errlen, "'%s': unusable geotransform (%g %g %g %g %g %g: not "
          "finite or not invertible)", path, gt[0], gt[1], gt[2], gt[3], gt[4], gt[5]);
    } else {
      memcpy (out->geo, gt, sizeof gt);
      out->has_geo = true;
    }
  }
  GDALDriverH drv = GDALGetDatasetDriver (ds);
  snprintf (out->driver, sizeof out->driver, "GDAL/%s",
      drv ? GDALGetDriverShortName (drv) : "?");
  return st;
}

GrStatus
gr_raster_gdal_read (const char *path, int band, const GrRasterBudget *budget,
    GrRaster *out, char *errbuf, size_t errlen)
{
  GrGdalScope scope;
  GDALDatasetH ds = NULL;
  gr_gdal_scope_begin (&scope);
  GrStatus st = gr_gdal_open (path, &scope, &ds, errbuf, errlen);
  if (st == GR_OK) {
    st = gdal_read (ds, path, band, budget, out, &scope, errbuf, errlen);
    if (st == GR_OK)
      st = gr_gdal_georef (ds, path, out, errbuf, errlen);
    GDALClose (ds);
  }
  gr_gdal_scope_end (&scope);
  return st;
}

/* PNG files that the built-in loader reads in GDAL builds too, so that both builds give
 * the same planes (or the same refusal):
 *  - GDAL before 3.10.1 returns byte-swapped samples for Adam7-interlaced 16-bit PNGs
 *    on little-endian hosts (fixed upstream by OSGeo/gdal PR 11553; Debian 12 ships
 *    3.6);
 *  - a gray or RGB tRNS colour out of range for the bit depth, which the built-in
 *    loader refuses as corrupt (GDAL would ignore it);
 *  - a header declaring more pixel data than the file can hold (refused by the
 *    built-in loader before any allocation).
 * The first two were found by fuzz_raster_gdal's comparison of the two loaders. */
bool
gr_raster_gdal_png_to_builtin (const char *path)
{
  static int buggy = -1;
  if (buggy < 0) {
    const char *v = GDALVersionInfo ("VERSION_NUM");
    buggy = v && atoi (v) < 3100100;
  }
  if (strncmp (path, "/vsi", 4) == 0)
    return false;
  FILE *f = NULL;
  if (gr_raster_open_regular (path, &f, NULL, 0) != GR_OK)
    return false;               /* gr_raster_gdal_read says why */
  uint8_t h[29];
  bool to_builtin = false;
  /* signature, IHDR first: bit depth at byte 24, colour type at 25, interlace at 28 */
  if (fread (h, 1, sizeof h, f) == sizeof h && png_sig_cmp (h, 0, 8) == 0 &&
      memcmp (h + 12, "IHDR", 4) == 0) {
    int depth = h[24], ctype = h[25];
    to_builtin = buggy && depth == 16 && h[28] == 1;
    /* more pixel data declared than the file can hold: the built-in loader refuses it
     * before allocating (GDAL would allocate the planes first) */
    uint32_t pw = ((uint32_t) h[16] << 24) | ((uint32_t) h[17] << 16) |
        ((uint32_t) h[18] << 8) | h[19];
    uint32_t ph = ((uint32_t) h[20] << 24) | ((uint32_t) h[21] << 16) |
        ((uint32_t) h[22] << 8) | h[23];
    int chans = ctype == 4 ? 2 : ctype == 2 ? 3 : ctype == 6 ? 4 : 1;
    struct stat fst;
    if (fstat (fileno (f), &fst) == 0 && pw <= 1000000 && ph <= 1000000 &&
        ((unsigned long long) pw * chans * depth + 7) / 8 * ph >
        1032ull * (unsigned long long) fst.st_size + 65536)
      to_builtin = true;
    /* the chunks before the image data: look for tRNS */
    long off = 33;
    for (int k = 0; k < 64 && !to_builtin && fseek (f, off, SEEK_SET) == 0; k++) {
      uint8_t c[14];
      size_t n = fread (c, 1, sizeof c, f);
      if (n < 8 || memcmp (c + 4, "IDAT", 4) == 0 || memcmp (c + 4, "IEND", 4) == 0)
        break;
      uint32_t len = ((uint32_t) c[0] << 24) | ((uint32_t) c[1] << 16) |
          ((uint32_t) c[2] << 8) | c[3];
      if (memcmp (c + 4, "tRNS", 4) == 0 && depth < 16 && (ctype == 0 || ctype == 2)) {
        unsigned maxv = (1u << depth) - 1;
        for (uint32_t i = 0; i + 1 < len && i + 1 < n - 8 && i < (ctype ? 6u : 2u); i += 2)
          if ((((unsigned) c[8 + i] << 8) | c[9 + i]) > maxv)
            to_builtin = true;
      }
      if (len > 0x7fffffffu - 12)
        break;
      off += 12 + (long) len;
    }
  }
  fclose (f);
  return to_builtin;
}
