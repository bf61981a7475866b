/* Footprints as GeoJSON (RFC 7946 / RFC 8142) and CSV (kernels/geojson.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "geojson.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

struct GrFootprintWriter {
  FILE *json, *csv;
  GrGeoJsonForm form;
  char *json_path, *csv_path;
  unsigned long features;
};

/* The collection's closing text: the writer overwrites it with each new Feature
 * and writes it again after. */
static const char COLLECTION_HEAD[] = "{\"type\":\"FeatureCollection\",\"features\":[\n";
static const char COLLECTION_TAIL[] = "\n]}\n";

static void
json_string (GString *s, const char *v)
{
  if (!v) {
    g_string_append (s, "null");
    return;
  }
  g_string_append_c (s, '"');
  for (const unsigned char *p = (const unsigned char *) v; *p; p++) {
    switch (*p) {
      case '"': g_string_append (s, "\\\""); break;
      case '\\': g_string_append (s, "\\\\"); break;
      case '\n': g_string_append (s, "\\n"); break;
      case '\r': g_string_append (s, "\\r"); break;
      case '\t': g_string_append (s, "\\t"); break;
      default:
        if (*p < 0x20)
          g_string_append_printf (s, "\\u%04x", *p);
        else
          g_string_append_c (s, (char) *p);
    }
  }
  g_string_append_c (s, '"');
}

/* A number, or null for NAN / infinity (JSON has neither). */
static void
json_number (GString *s, const char *fmt, double v)
{
  if (isfinite (v))
    g_string_append_printf (s, fmt, v);
  else
    g_string_append (s, "null");
}

static void
json_position (GString *s, double lon, double lat)
{
  /* 9 decimals of a degree: 0.1 mm */
  g_string_append_printf (s, "[%.9f,%.9f]", lon, lat);
}

static bool
corners_finite (const GrFootprint *f)
{
  for (int i = 0; i < 4; i++)
    if (!isfinite (f->corner_lon[i]) || !isfinite (f->corner_lat[i]))
      return false;
  return true;
}

char *
gr_footprint_to_geojson (const GrFootprint *f)
{
  GString *s = g_string_sized_new (1024);
  g_string_append (s, "{\"type\":\"Feature\",\"geometry\":");
  if (f->geometry == 2 && corners_finite (f)) {
    /* frame order TL(0) TR(1) BR(2) BL(3); the ring TL BL BR TR TL is counter-clockwise
     * for an unmirrored frame on a north-up map.  A mirrored one (signed area < 0)
     * goes the other way round from the same corner, to keep the right-hand rule. */
    double area = 0;
    static const int ccw[4] = { 0, 3, 2, 1 };
    for (int i = 0; i < 4; i++) {
      int a = ccw[i], b = ccw[(i + 1) % 4];
      area += f->corner_lon[a] * f->corner_lat[b] - f->corner_lon[b] * f->corner_lat[a];
    }
    static const int cw[4] = { 0, 1, 2, 3 };
    const int *order = area >= 0 ? ccw : cw;
    g_string_append (s, "{\"type\":\"Polygon\",\"coordinates\":[[");
    for (int i = 0; i <= 4; i++) {
      if (i)
        g_string_append_c (s, ',');
      json_position (s, f->corner_lon[order[i % 4]], f->corner_lat[order[i % 4]]);
    }
    g_string_append (s, "]]}");
  } else if (f->geometry >= 1 && isfinite (f->centre_lon) && isfinite (f->centre_lat)) {
    g_string_append (s, "{\"type\":\"Point\",\"coordinates\":");
    json_position (s, f->centre_lon, f->centre_lat);
    g_string_append_c (s, '}');
  } else {
    g_string_append (s, "null");
  }
  g_string_append (s, ",\"properties\":{\"file\":");
  json_string (s, f->file);
  g_string_append_printf (s, ",\"frame\":%llu,\"timestamp\":", (unsigned long long) f->frame);
  json_number (s, "%.9f", f->timestamp_ns >= 0 ? f->timestamp_ns / 1e9 : NAN);
  g_string_append_printf (s, ",\"flags\":%u,\"flag_names\":", f->flags);
  json_string (s, f->flag_names ? f->flag_names : "");
  g_string_append (s, ",\"quality\":");
  json_string (s, f->quality);
  g_string_append_printf (s, ",\"inliers\":%u,\"rms\":", f->inliers);
  json_number (s, "%.4f", f->rms_px);
  g_string_append (s, ",\"predicted_error\":");
  json_number (s, "%.4f", f->predicted_error_px);
  g_string_append (s, ",\"heading\":");
  json_number (s, "%.3f", f->heading_deg);
  g_string_append (s, ",\"gsd\":");
  json_number (s, "%.5f", f->gsd_m);
  g_string_append (s, ",\"center_lon\":");
  json_number (s, "%.9f", f->centre_lon);
  g_string_append (s, ",\"center_lat\":");
  json_number (s, "%.9f", f->centre_lat);
  g_string_append (s, ",\"map_crs\":");
  json_string (s, f->crs);
  g_string_append (s, ",\"map_corners\":");
  if (f->geometry == 2) {
    g_string_append_c (s, '[');
    for (int i = 0; i < 4; i++) {
      g_string_append (s, i ? ",[" : "[");
      json_number (s, "%.4f", f->corner_x[i]);
      g_string_append_c (s, ',');
      json_number (s, "%.4f", f->corner_y[i]);
      g_string_append_c (s, ']');
    }
    g_string_append_c (s, ']');
  } else {
    g_string_append (s, "null");
  }
  g_string_append (s, "}}");
  return g_string_free (s, FALSE);
}

static const char CSV_HEADER[] = "file,frame,timestamp_s,flags,flag_names,quality,inliers,"
    "rms_px,heading_deg,gsd_m,center_lon,center_lat,tl_lon,tl_lat,tr_lon,tr_lat,br_lon,"
    "br_lat,bl_lon,bl_lat,center_x,center_y,tl_x,tl_y,tr_x,tr_y,br_x,br_y,bl_x,bl_y,"
    "predicted_error_px\n";

/* RFC 4180 quoting where needed. */
static void
csv_field (GString *s, const char *v)
{
  if (!v)
    return;
  if (!strpbrk (v, ",\"\r\n")) {
    g_string_append (s, v);
    return;
  }
  g_string_append_c (s, '"');
  for (const char *p = v; *p; p++) {
    if (*p == '"')
      g_string_append_c (s, '"');
    g_string_append_c (s, *p);
  }
  g_string_append_c (s, '"');
}

static void
csv_number (GString *s, const char *fmt, double v)
{
  g_string_append_c (s, ',');
  if (isfinite (v))
    g_string_append_printf (s, fmt, v);
}

static char *
footprint_to_csv (const GrFootprint *f)
{
  GString *s = g_string_sized_new (512);
  csv_field (s, f->file);
  g_string_append_printf (s, ",%llu", (unsigned long long) f->frame);
  csv_number (s, "%.9f", f->timestamp_ns >= 0 ? f->timestamp_ns / 1e9 : NAN);
  g_string_append_printf (s, ",%u,", f->flags);
  csv_field (s, f->flag_names);
  g_string_append_c (s, ',');
  csv_field (s, f->quality);
  g_string_append_printf (s, ",%u", f->inliers);
  csv_number (s, "%.4f", f->rms_px);
  csv_number (s, "%.3f", f->heading_deg);
  csv_number (s, "%.5f", f->gsd_m);
  const bool geo = f->geometry >= 1, poly = f->geometry == 2;
  csv_number (s, "%.9f", geo ? f->centre_lon : NAN);
  csv_number (s, "%.9f", geo ? f->centre_lat : NAN);
  for (int i = 0; i < 4; i++) {
    csv_number (s, "%.9f", poly ? f->corner_lon[i] : NAN);
    csv_number (s, "%.9f", poly ? f->corner_lat[i] : NAN);
  }
  csv_number (s, "%.4f", geo ? f->centre_x : NAN);
  csv_number (s, "%.4f", geo ? f->centre_y : NAN);
  for (int i = 0; i < 4; i++) {
    csv_number (s, "%.4f", poly ? f->corner_x[i] : NAN);
    csv_number (s, "%.4f", poly ? f->corner_y[i] : NAN);
  }
  /* appended last: the columns before it keep their places */
  csv_number (s, "%.4f", f->predicted_error_px);
  g_string_append_c (s, '\n');
  return g_string_free (s, FALSE);
}

static GrStatus
write_all (FILE *fp, const char *path, const char *text, size_t len, char *errbuf,
    size_t errlen)
{
  if (fwrite (text, 1, len, fp) != len || fflush (fp) != 0) {
    gr_set_err (errbuf, errlen, "'%s': cannot write: %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  return GR_OK;
}

void
gr_footprint_writer_close (GrFootprintWriter *w)
{
  if (!w)
    return;
  if (w->json)
    fclose (w->json);
  if (w->csv)
    fclose (w->csv);
  free (w->json_path);
  free (w->csv_path);
  free (w);
}

GrStatus
gr_footprint_writer_open (const char *geojson_path, GrGeoJsonForm form, const char *csv_path,
    GrFootprintWriter **out, char *errbuf, size_t errlen)
{
  if (!out) {
    gr_set_err (errbuf, errlen, "gr_footprint_writer_open: NULL argument");
    return GR_ERR_INVALID;
  }
  *out = NULL;
  GrFootprintWriter *w = calloc (1, sizeof *w);
  if (!w)
    return GR_ERR_NOMEM;
  w->form = form;
  GrStatus st = GR_OK;
  if (geojson_path && *geojson_path) {
    w->json_path = strdup (geojson_path);
    w->json = fopen (geojson_path, "w+");
    if (!w->json) {
      gr_set_err (errbuf, errlen, "'%s': cannot create: %s", geojson_path, strerror (errno));
      st = GR_ERR_IO;
    } else if (form == GR_GEOJSON_COLLECTION) {
      GString *s = g_string_new (COLLECTION_HEAD);
      /* drop the head's line feed: the tail starts with one */
      g_string_truncate (s, s->len - 1);
      g_string_append (s, COLLECTION_TAIL);
      st = write_all (w->json, geojson_path, s->str, s->len, errbuf, errlen);
      g_string_free (s, TRUE);
    }
  }
  if (st == GR_OK && csv_path && *csv_path) {
    w->csv_path = strdup (csv_path);
    w->csv = fopen (csv_path, "w");
    if (!w->csv) {
      gr_set_err (errbuf, errlen, "'%s': cannot create: %s", csv_path, strerror (errno));
      st = GR_ERR_IO;
    } else {
      st = write_all (w->csv, csv_path, CSV_HEADER, strlen (CSV_HEADER), errbuf, errlen);
    }
  }
  if (st != GR_OK) {
    gr_footprint_writer_close (w);
    return st;
  }
  *out = w;
  return GR_OK;
}

GrStatus
gr_footprint_writer_add (GrFootprintWriter *w, const GrFootprint *f, char *errbuf,
    size_t errlen)
{
  if (!w || !f) {
    gr_set_err (errbuf, errlen, "gr_footprint_writer_add: NULL argument");
    return GR_ERR_INVALID;
  }
  GrStatus st = GR_OK;
  if (w->json) {
    char *feature = gr_footprint_to_geojson (f);
    GString *s = g_string_new (NULL);
    if (w->form == GR_GEOJSON_SEQUENCE) {
      g_string_append_c (s, '\x1e');
      g_string_append (s, feature);
      g_string_append_c (s, '\n');
    } else {
      /* overwrite the closing brackets: the file stays one valid collection */
      const long tail = (long) strlen (COLLECTION_TAIL);
      if (fseek (w->json, -tail, SEEK_END) != 0) {
        gr_set_err (errbuf, errlen, "'%s': cannot seek: %s", w->json_path, strerror (errno));
        st = GR_ERR_IO;
      }
      g_string_append (s, w->features ? ",\n" : "\n");
      g_string_append (s, feature);
      g_string_append (s, COLLECTION_TAIL);
    }
    g_free (feature);
    if (st == GR_OK)
      st = write_all (w->json, w->json_path, s->str, s->len, errbuf, errlen);
    g_string_free (s, TRUE);
  }
  if (st == GR_OK && w->csv) {
    char *row = footprint_to_csv (f);
    st = write_all (w->csv, w->csv_path, row, strlen (row), errbuf, errlen);
    g_free (row);
  }
  if (st == GR_OK)
    w->features++;
  return st;
}
