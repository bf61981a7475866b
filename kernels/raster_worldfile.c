/* World files (.pgw/.pngw/.jgw/.jpgw/.tfw/.wld): six numbers beside an image that give
 * its geotransform.  Read strictly (a word where a number belongs is an error, not a
 * 0), converted from the world file's pixel-centre convention to GDAL's pixel corners.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "raster.h"
#include "raster_formats.h"
#include "raster_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <glib.h>

void
gr_geo_apply (const double geo[6], double px, double py, double *mx, double *my)
{
  double x = geo[0] + px * geo[1] + py * geo[2];
  double y = geo[3] + px * geo[4] + py * geo[5];
  if (mx)
    *mx = x;
  if (my)
    *my = y;
}

/* A geotransform the elements can use: six finite numbers and an invertible, finite
 * pixel-to-map matrix (NaN/Inf or overflowing values would turn every map position
 * in the results into NaN). */
bool
gr_raster_geo_usable (const double g[6])
{
  for (int i = 0; i < 6; i++)
    if (!isfinite (g[i]))
      return false;
  double det = g[1] * g[5] - g[2] * g[4];
  return isfinite (det) && det != 0.0;
}

GrStatus
gr_world_file_read (const char *path, double geo[6], char *errbuf, size_t errlen)
{
  if (!path || !geo) {
    gr_set_err (errbuf, errlen, "gr_world_file_read: NULL argument");
    return GR_ERR_INVALID;
  }
  FILE *f = NULL;
  GrStatus ost = gr_raster_open_regular (path, &f, errbuf, errlen);
  if (ost != GR_OK)
    return ost;
  char buf[4096];
  size_t n = fread (buf, 1, sizeof buf - 1, f);
  if (ferror (f)) {
    int e = errno;
    fclose (f);
    gr_set_err (errbuf, errlen, "cannot read '%s': %s", path, strerror (e ? e : EIO));
    return GR_ERR_IO;
  }
  bool more = (n == sizeof buf - 1) && fgetc (f) != EOF;
  fclose (f);
  if (more) {
    gr_set_err (errbuf, errlen, "'%s': too large for a world file (6 numbers expected)", path);
    return GR_ERR_FORMAT;
  }
  buf[n] = '\0';
  if (memchr (buf, '\0', n)) {
    gr_set_err (errbuf, errlen, "'%s': binary data, not a world file", path);
    return GR_ERR_FORMAT;
  }

  const char *p = buf;
  if (n >= 3 && (unsigned char) p[0] == 0xEF && (unsigned char) p[1] == 0xBB
      && (unsigned char) p[2] == 0xBF)
    p += 3;                     /* UTF-8 byte order mark */
  double v[6];
  int count = 0;
  for (;;) {
    while (*p && isspace ((unsigned char) *p))
      p++;
    if (!*p)
      break;
    const char *tok = p;
    size_t toklen = 0;
    while (tok[toklen] && !isspace ((unsigned char) tok[toklen]))
      toklen++;
    if (count == 6) {
      gr_set_err (errbuf, errlen, "'%s': more than 6 values in a world file", path);
      return GR_ERR_FORMAT;
    }
    char *end = NULL;
    double d = g_ascii_strtod (tok, &end);
    if (end != tok + toklen || toklen == 0) {
      gr_set_err (errbuf, errlen, "'%s': value %d of the world file ('%.*s') is not a number",
          path, count + 1, (int) (toklen > 40 ? 40 : toklen), tok);
      return GR_ERR_FORMAT;
    }
    if (!isfinite (d)) {
      gr_set_err (errbuf, errlen, "'%s': value %d of the world file is not finite",
          path, count + 1);
      return GR_ERR_FORMAT;
    }
    v[count++] = d;
    p = tok + toklen;
  }
  if (count < 6) {
    gr_set_err (errbuf, errlen, "'%s': %d value(s) in the world file, 6 expected", path, count);
    return GR_ERR_FORMAT;
  }
  /* A D B E C F: x pixel size, rotation terms, y pixel size, centre of pixel (0,0) */
  double A = v[0], D = v[1], B = v[2], E = v[3], C = v[4], F = v[5];
  if (A * E - B * D == 0.0) {
    gr_set_err (errbuf, errlen, "'%s': degenerate world file (zero pixel size)", path);
    return GR_ERR_FORMAT;
  }
  double g[6] = { C - A / 2 - B / 2, A, B, F - D / 2 - E / 2, D, E };
  if (!gr_raster_geo_usable (g)) {
    gr_set_err (errbuf, errlen, "'%s': world file values out of range (the pixel corners "
        "or the pixel size overflow)", path);
    return GR_ERR_FORMAT;
  }
  memcpy (geo, g, sizeof g);
  return GR_OK;
}

static bool
is_regular_file (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0 && S_ISREG (st.st_mode);
}

static char *
str_concat (const char *a, size_t alen, const char *b)
{
  size_t blen = strlen (b);
  char *s = malloc (alen + blen + 1);
  if (!s)
    return NULL;
  memcpy (s, a, alen);
  memcpy (s + alen, b, blen + 1);
  return s;
}

char *
gr_world_file_find (const char *path)
{
  if (!path || !*path)
    return NULL;
  size_t len = strlen (path);
  const char *slash = strrchr (path, '/');
  const char *base = slash ? slash + 1 : path;
  const char *dot = strrchr (base, '.');
  if (dot == base)
    dot = NULL;                 /* ".hidden" has no extension */
  size_t stem_len = dot ? (size_t) (dot - path) : len;
  const char *ext = dot ? dot + 1 : "";
  size_t ext_len = strlen (ext);
  bool upper = ext_len > 0 && isupper ((unsigned char) ext[ext_len - 1]);

  char *cand[4] = { NULL, NULL, NULL, NULL };
  int nc = 0;
  if (ext_len > 0) {
    char sfx[5] = { '.', ext[0], ext[ext_len - 1], upper ? 'W' : 'w', '\0' };
    cand[nc++] = str_concat (path, stem_len, sfx);
    cand[nc++] = str_concat (path, len, upper ? "W" : "w");
  }
  cand[nc++] = str_concat (path, stem_len, upper ? ".WLD" : ".wld");
  cand[nc++] = str_concat (path, stem_len, upper ? ".TFW" : ".tfw");

  char *found = NULL;
  for (int i = 0; i < nc; i++) {
    if (!found && cand[i] && strcmp (cand[i], path) != 0 && is_regular_file (cand[i]))
      found = cand[i];
    else
      free (cand[i]);
  }
  return found;
}

/* Reads the world file wf (found beside the image path) into r->geo.  A world file
 * that exists but cannot be used is an error: a silent loss of georeferencing would be
 * worse. */
GrStatus
gr_raster_world_file_apply (const char *path, const char *wf, GrRaster *r, char *errbuf,
    size_t errlen)
{
  double geo[6];
  char why[1024] = "";
  GrStatus st = gr_world_file_read (wf, geo, why, sizeof why);
  if (st != GR_OK) {
    gr_set_err (errbuf, errlen, "'%s': bad world file: %s", path, why);
    return GR_ERR_FORMAT;
  }
  memcpy (r->geo, geo, sizeof geo);
  r->has_geo = true;
  return GR_OK;
}

GrStatus
gr_raster_world_file_load (const char *path, GrRaster *r, char *errbuf, size_t errlen)
{
  char *wf = gr_world_file_find (path);
  if (!wf)
    return GR_OK;
  GrStatus st = gr_raster_world_file_apply (path, wf, r, errbuf, errlen);
  free (wf);
  return st;
}
