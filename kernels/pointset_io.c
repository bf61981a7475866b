/* Point-set files: CSV / whitespace text, PLY ASCII and legacy VTK POINTS readers, and
 * a CSV writer.  See pointset_io.h for the accepted formats.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pointset_io.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <glib.h>

#define MAX_COLUMNS 64

const char *
gr_pointset_format_name (GrPointSetFormat format)
{
  switch (format) {
    case GR_POINTSET_AUTO: return "auto";
    case GR_POINTSET_CSV: return "CSV/text";
    case GR_POINTSET_PLY: return "PLY";
    case GR_POINTSET_VTK: return "VTK";
  }
  return "?";
}

void
gr_pointset_clear (GrPointSet *ps)
{
  if (!ps)
    return;
  free (ps->xyz);
  free (ps->cells);
  ps->xyz = NULL;
  ps->cells = NULL;
  ps->n = ps->ncells = 0;
  ps->dim = ps->cell_size = 0;
}

/* ---- growable coordinate array ---------------------------------------------------- */

typedef struct {
  double *v;
  size_t len, cap;
} DArray;

static bool
darray_push (DArray *a, double x)
{
  if (a->len == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 1024;
    double *v = realloc (a->v, cap * sizeof *v);
    if (!v)
      return false;
    a->v = v;
    a->cap = cap;
  }
  a->v[a->len++] = x;
  return true;
}

/* Connectivity being read: vertex indices, cell_size per cell. */
typedef struct {
  uint32_t *v;
  size_t len, cap;
  int cell_size;                /* 0 none yet, 2 segments, 3 triangles */
} Cells;

static bool
cells_push (Cells *c, uint32_t i)
{
  if (c->len == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 1024;
    uint32_t *v = realloc (c->v, cap * sizeof *v);
    if (!v)
      return false;
    c->v = v;
    c->cap = cap;
  }
  c->v[c->len++] = i;
  return true;
}

/* A polygon (k >= 3 indices) as a fan of triangles, or a polyline (k >= 2) as
 * segments; false when out of memory. */
static bool
cells_add (Cells *c, const uint32_t *idx, unsigned k, bool polygon)
{
  for (unsigned j = 1; j + (polygon ? 1 : 0) < k; j++) {
    if (polygon) {
      if (!cells_push (c, idx[0]) || !cells_push (c, idx[j]) || !cells_push (c, idx[j + 1]))
        return false;
    } else if (!cells_push (c, idx[j - 1]) || !cells_push (c, idx[j])) {
      return false;
    }
  }
  return true;
}

/* A vertex index token: a non-negative integer. */
static bool
parse_index (const char *tok, unsigned long long max, uint32_t *out)
{
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull (tok, &end, 10);
  if (!*tok || *end || end == tok || errno || tok[0] == '-' || v > max)
    return false;
  *out = (uint32_t) v;
  return true;
}

/* ---- lines ---------------------------------------------------------------------- */

typedef struct {
  char *p, *end;
  long lineno;                  /* number of the line last returned, 1-based */
} LineIter;

/* Returns the next line, NUL-terminated in place (CR/LF stripped), or NULL at the end. */
static char *
next_line (LineIter *it)
{
  if (it->p >= it->end)
    return NULL;
  char *s = it->p, *e = s;
  while (e < it->end && *e != '\n' && *e != '\r')
    e++;
  char *next = e;
  if (next < it->end) {
    if (*next == '\r' && next + 1 < it->end && next[1] == '\n')
      next += 2;
    else
      next += 1;
  }
  *e = '\0';
  it->p = next;
  it->lineno++;
  return s;
}

static char *
skip_ws (char *s)
{
  while (*s == ' ' || *s == '\t' || *s == '\f' || *s == '\v')
    s++;
  return s;
}

static bool
is_blank_or_comment (const char *s)
{
  while (*s == ' ' || *s == '\t' || *s == '\f' || *s == '\v')
    s++;
  return *s == '\0' || *s == '#';
}

/* Point sets travel as float32 (application/x-pointset): a finite value beyond float32's
 * range (1e300, 3.4028236e38, which rounds up to infinity) would become inf without a
 * word, so it is refused here like NaN and Inf.  Returns false with the message set. */
static bool
check_coordinate (double x, long lineno, char *errbuf, size_t errlen)
{
  if (!isfinite (x)) {
    gr_set_err (errbuf, errlen, "line %ld: non-finite coordinate (%s)", lineno,
        isnan (x) ? "NaN" : "Inf");
    return false;
  }
  /* rounds to infinity in float32 from the midpoint between FLT_MAX and 2^128 up
   * (tested on the double: converting an out-of-range double to float is undefined) */
  if (fabs (x) >= 0x1.ffffffp+127) {
    gr_set_err (errbuf, errlen, "line %ld: coordinate %.9g does not fit float32 "
        "(largest magnitude %.9g)", lineno, x, (double) FLT_MAX);
    return false;
  }
  return true;
}

/* Strict number: the whole token must be consumed. */
static bool
parse_number (const char *tok, double *out)
{
  if (!*tok)
    return false;
  char *end = NULL;
  errno = 0;
  double v = g_ascii_strtod (tok, &end);
  if (end == tok || *end != '\0')
    return false;
  *out = v;
  return true;
}

/* Splits a CSV / whitespace line into tokens (in place).  Separators: ',' ';' and
 * runs of blanks.  An empty field between two ',' or ';' is an error.  Surrounding
 * double quotes of a token are removed. */
static int
split_csv (char *line, char **tok, int maxtok, const char **why)
{
  int n = 0;
  char *s = skip_ws (line);
  bool need_field = false;
  while (*s) {
    if (*s == ',' || *s == ';') {
      if (need_field || n == 0) {
        *why = "empty field";
        return -1;
      }
      need_field = true;
      s = skip_ws (s + 1);
      continue;
    }
    if (n == maxtok) {
      *why = "too many columns (at most 64)";
      return -1;
    }
    char *t = s;
    while (*s && *s != ',' && *s != ';' && *s != ' ' && *s != '\t' && *s != '\f' &&
        *s != '\v')
      s++;
    char *te = s;
    if (*s == ',' || *s == ';') {
      *te = '\0';
      s = skip_ws (s + 1);
      if (*s == ',' || *s == ';') {
        *why = "empty field";
        return -1;
      }
    } else if (*s) {
      *te = '\0';
      s = skip_ws (s + 1);
    }
    if (te - t >= 2 && t[0] == '"' && te[-1] == '"') {
      te[-1] = '\0';
      t++;
    }
    tok[n++] = t;
    need_field = false;
  }
  /* a trailing separator ("1,2,3,") is tolerated */
  return n;
}

static void
describe_token (char *dst, size_t dlen, const char *tok)
{
  size_t l = strlen (tok);
  if (l > 24)
    snprintf (dst, dlen, "%.24s...", tok);
  else
    snprintf (dst, dlen, "%s", tok);
  for (char *c = dst; *c; c++)
    if (!isprint ((unsigned char) *c))
      *c = '?';
}

/* ---- CSV ---------------------------------------------------------------------- */

static GrStatus
parse_csv (char *buf, size_t len, DArray *out, int *dim_out, char *errbuf, size_t errlen)
{
  LineIter it = { buf, buf + len, 0 };
  char *tok[MAX_COLUMNS];
  int col[3] = { 0, 1, 2 };
  int ncols = -1, dim = 0;
  bool first = true;
  char *line;
  char shown[40];

  while ((line = next_line (&it))) {
    if (is_blank_or_comment (line))
      continue;
    const char *why = NULL;
    int nt = split_csv (line, tok, MAX_COLUMNS, &why);
    if (nt < 0) {
      gr_set_err (errbuf, errlen, "line %ld: %s", it.lineno, why);
      return GR_ERR_FORMAT;
    }
    if (nt == 0)
      continue;
    double v[MAX_COLUMNS];
    int bad = -1;
    if (first) {
      for (int i = 0; i < nt; i++)
        if (!parse_number (tok[i], &v[i])) {
          bad = i;
          break;
        }
      first = false;
      if (bad >= 0) {
        /* header: find x, y, z; the other columns are ignored */
        col[0] = col[1] = col[2] = -1;
        for (int i = 0; i < nt; i++) {
          for (int k = 0; k < 3; k++) {
            static const char *names[3] = { "x", "y", "z" };
            if (g_ascii_strcasecmp (tok[i], names[k]) == 0 && col[k] < 0)
              col[k] = i;
          }
        }
        if (col[0] < 0 || col[1] < 0) {
          describe_token (shown, sizeof shown, tok[bad]);
          gr_set_err (errbuf, errlen, "line %ld: '%s' is not a number, and the line is not "
              "a header naming x and y columns", it.lineno, shown);
          return GR_ERR_FORMAT;
        }
        ncols = nt;
        dim = col[2] >= 0 ? 3 : 2;
        continue;
      }
      if (nt != 2 && nt != 3) {
        gr_set_err (errbuf, errlen, "line %ld: %d values; expected 2 (x y) or 3 (x y z) per "
            "line, or a header line naming the x, y, z columns", it.lineno, nt);
        return GR_ERR_FORMAT;
      }
      ncols = nt;
      dim = nt;
    }
    if (nt != ncols) {
      gr_set_err (errbuf, errlen, "line %ld: %d values, expected %d like the first line",
          it.lineno, nt, ncols);
      return GR_ERR_FORMAT;
    }
    for (int k = 0; k < dim; k++) {
      double x;
      if (!parse_number (tok[col[k]], &x)) {
        describe_token (shown, sizeof shown, tok[col[k]]);
        gr_set_err (errbuf, errlen, "line %ld: '%s' is not a number", it.lineno, shown);
        return GR_ERR_FORMAT;
      }
      if (!check_coordinate (x, it.lineno, errbuf, errlen))
        return GR_ERR_FORMAT;
      if (!darray_push (out, x))
        return GR_ERR_NOMEM;
    }
    if (out->len / dim > GR_POINTSET_MAX_POINTS) {
      gr_set_err (errbuf, errlen, "more than %u points", GR_POINTSET_MAX_POINTS);
      return GR_ERR_FORMAT;
    }
  }
  *dim_out = dim;
  return GR_OK;
}

/* ---- PLY ---------------------------------------------------------------------- */

typedef struct {
  char name[64];
  unsigned long count;
  int nprops;
  bool has_list;
  int list_at;                  /* the list property's position, -1 none */
  int ix, iy, iz;
  int iv1, iv2;                 /* edge: vertex1, vertex2 */
} PlyElement;

static int
split_ws (char *line, char **tok, int maxtok)
{
  int n = 0;
  char *s = skip_ws (line);
  while (*s) {
    if (n == maxtok)
      return -1;
    tok[n++] = s;
    while (*s && *s != ' ' && *s != '\t' && *s != '\f' && *s != '\v')
      s++;
    if (*s)
      *s++ = '\0';
    s = skip_ws (s);
  }
  return n;
}

static GrStatus
parse_ply (char *buf, size_t len, DArray *out, int *dim_out, Cells *cells, char *errbuf,
    size_t errlen)
{
  LineIter it = { buf, buf + len, 0 };
  char *tok[MAX_COLUMNS];
  PlyElement el[16];
  int nel = 0;
  bool ascii = false, ended = false;
  char *line = next_line (&it);
  char shown[40];

  if (!line || strncmp (skip_ws (line), "ply", 3) != 0) {
    gr_set_err (errbuf, errlen, "line 1: PLY files start with 'ply'");
    return GR_ERR_FORMAT;
  }
  while ((line = next_line (&it))) {
    int nt = split_ws (line, tok, MAX_COLUMNS);
    if (nt <= 0)
      continue;
    if (strcmp (tok[0], "format") == 0) {
      if (nt < 2 || strcmp (tok[1], "ascii") != 0) {
        gr_set_err (errbuf, errlen, "line %ld: PLY format '%s' is not supported (only "
            "'format ascii 1.0'; convert binary PLY to ASCII)", it.lineno,
            nt >= 2 ? tok[1] : "");
        return GR_ERR_FORMAT;
      }
      ascii = true;
    } else if (strcmp (tok[0], "comment") == 0 || strcmp (tok[0], "obj_info") == 0) {
      continue;
    } else if (strcmp (tok[0], "element") == 0) {
      if (nt < 3 || nel == 16) {
        gr_set_err (errbuf, errlen, "line %ld: bad PLY element line", it.lineno);
        return GR_ERR_FORMAT;
      }
      char *end = NULL;
      errno = 0;
      unsigned long long c = strtoull (tok[2], &end, 10);
      if (*end || end == tok[2] || errno || tok[2][0] == '-' || c > GR_POINTSET_MAX_POINTS) {
        describe_token (shown, sizeof shown, tok[2]);
        gr_set_err (errbuf, errlen, "line %ld: bad PLY element count '%s'", it.lineno, shown);
        return GR_ERR_FORMAT;
      }
      PlyElement *e = &el[nel++];
      memset (e, 0, sizeof *e);
      snprintf (e->name, sizeof e->name, "%s", tok[1]);
      e->count = (unsigned long) c;
      e->ix = e->iy = e->iz = e->iv1 = e->iv2 = e->list_at = -1;
    } else if (strcmp (tok[0], "property") == 0) {
      if (nel == 0 || nt < 3) {
        gr_set_err (errbuf, errlen, "line %ld: PLY property outside an element", it.lineno);
        return GR_ERR_FORMAT;
      }
      PlyElement *e = &el[nel - 1];
      if (strcmp (tok[1], "list") == 0) {
        if (!e->has_list)
          e->list_at = e->nprops;
        e->has_list = true;
      } else {
        const char *name = tok[2];
        if (strcmp (name, "x") == 0) e->ix = e->nprops;
        else if (strcmp (name, "y") == 0) e->iy = e->nprops;
        else if (strcmp (name, "z") == 0) e->iz = e->nprops;
        else if (strcmp (name, "vertex1") == 0) e->iv1 = e->nprops;
        else if (strcmp (name, "vertex2") == 0) e->iv2 = e->nprops;
      }
      e->nprops++;
    } else if (strcmp (tok[0], "end_header") == 0) {
      ended = true;
      break;
    } else {
      describe_token (shown, sizeof shown, tok[0]);
      gr_set_err (errbuf, errlen, "line %ld: unknown PLY header keyword '%s'", it.lineno,
          shown);
      return GR_ERR_FORMAT;
    }
  }
  if (!ascii || !ended) {
    gr_set_err (errbuf, errlen, "PLY header incomplete (no 'format ascii 1.0' or no "
        "'end_header')");
    return GR_ERR_FORMAT;
  }
  int vi = -1;
  for (int i = 0; i < nel; i++)
    if (strcmp (el[i].name, "vertex") == 0) {
      vi = i;
      break;
    }
  if (vi < 0) {
    gr_set_err (errbuf, errlen, "PLY file has no vertex element");
    return GR_ERR_FORMAT;
  }
  PlyElement *v = &el[vi];
  if (v->ix < 0 || v->iy < 0) {
    gr_set_err (errbuf, errlen, "PLY vertex element has no x and y properties");
    return GR_ERR_FORMAT;
  }
  if (v->has_list) {
    gr_set_err (errbuf, errlen, "PLY vertex element with list properties is not supported");
    return GR_ERR_FORMAT;
  }
  int dim = v->iz >= 0 ? 3 : 2;
  /* skip the elements stored before the vertices: one line per instance */
  for (int i = 0; i < vi; i++)
    for (unsigned long k = 0; k < el[i].count; k++) {
      line = next_line (&it);
      if (!line) {
        gr_set_err (errbuf, errlen, "PLY file ends inside element '%s'", el[i].name);
        return GR_ERR_FORMAT;
      }
      if (is_blank_or_comment (line))
        k--;
    }
  for (unsigned long k = 0; k < v->count; k++) {
    line = next_line (&it);
    if (!line) {
      gr_set_err (errbuf, errlen, "PLY file ends after %lu of %lu vertices", k, v->count);
      return GR_ERR_FORMAT;
    }
    if (is_blank_or_comment (line)) {
      k--;
      continue;
    }
    int nt = split_ws (line, tok, MAX_COLUMNS);
    if (nt != v->nprops) {
      gr_set_err (errbuf, errlen, "line %ld: %d values, the PLY vertex has %d properties",
          it.lineno, nt < 0 ? MAX_COLUMNS : nt, v->nprops);
      return GR_ERR_FORMAT;
    }
    int idx[3] = { v->ix, v->iy, v->iz };
    for (int d = 0; d < dim; d++) {
      double x;
      if (!parse_number (tok[idx[d]], &x)) {
        describe_token (shown, sizeof shown, tok[idx[d]]);
        gr_set_err (errbuf, errlen, "line %ld: '%s' is not a number", it.lineno, shown);
        return GR_ERR_FORMAT;
      }
      if (!check_coordinate (x, it.lineno, errbuf, errlen))
        return GR_ERR_FORMAT;
      if (!darray_push (out, x))
        return GR_ERR_NOMEM;
    }
  }
  *dim_out = dim;
  /* the elements after the vertices: faces (a vertex index list first) or edges
   * (vertex1, vertex2) become cells; any other element is skipped, one line each */
  const unsigned long long maxi = v->count ? v->count - 1 : 0;
  for (int i = vi + 1; i < nel; i++) {
    PlyElement *e = &el[i];
    bool face = strcmp (e->name, "face") == 0 && e->list_at == 0;
    bool edge = strcmp (e->name, "edge") == 0 && e->iv1 >= 0 && e->iv2 >= 0 &&
        !e->has_list;
    if ((face || edge) && cells->cell_size && cells->cell_size != (face ? 3 : 2)) {
      gr_set_err (errbuf, errlen, "PLY file with both faces and edges: not supported");
      return GR_ERR_FORMAT;
    }
    for (unsigned long k = 0; k < e->count; k++) {
      line = next_line (&it);
      if (!line) {
        gr_set_err (errbuf, errlen, "PLY file ends inside element '%s' (%lu of %lu)",
            e->name, k, e->count);
        return GR_ERR_FORMAT;
      }
      if (is_blank_or_comment (line)) {
        k--;
        continue;
      }
      if (!face && !edge)
        continue;
      int nt = split_ws (line, tok, MAX_COLUMNS);
      uint32_t idx[MAX_COLUMNS];
      unsigned cnt = 2;
      bool ok = nt >= 2;
      if (face) {
        ok = ok && parse_index (tok[0], MAX_COLUMNS - 1, idx) && idx[0] >= 3 &&
            (int) idx[0] + 1 <= nt;
        cnt = ok ? idx[0] : 0;
        for (unsigned j = 0; ok && j < cnt; j++)
          ok = parse_index (tok[1 + j], maxi, &idx[j]);
      } else {
        ok = ok && e->iv1 < nt && e->iv2 < nt && parse_index (tok[e->iv1], maxi, &idx[0])
            && parse_index (tok[e->iv2], maxi, &idx[1]);
      }
      if (!ok) {
        gr_set_err (errbuf, errlen, "line %ld: bad PLY %s: expected %s, indices below %lu",
            it.lineno, face ? "face" : "edge", face ? "a count >= 3 and that many vertex "
            "indices" : "two vertex indices", v->count);
        return GR_ERR_FORMAT;
      }
      cells->cell_size = face ? 3 : 2;
      if (!cells_add (cells, idx, cnt, face))
        return GR_ERR_NOMEM;
    }
  }
  return GR_OK;
}

/* ---- legacy VTK ------------------------------------------------------------------- */

typedef struct {
  char *p, *end;
  long lineno;
} TokIter;

/* Next whitespace-separated token across lines (NUL-terminated in place). */
static char *
next_token (TokIter *it)
{
  while (it->p < it->end && isspace ((unsigned char) *it->p)) {
    if (*it->p == '\n')
      it->lineno++;
    it->p++;
  }
  if (it->p >= it->end)
    return NULL;
  char *t = it->p;
  while (it->p < it->end && !isspace ((unsigned char) *it->p))
    it->p++;
  if (it->p < it->end) {
    if (*it->p == '\n')
      it->lineno++;
    *it->p++ = '\0';
  }
  return t;
}

/* After POINTS: the LINES or POLYGONS section, when there is one ("LINES n size", then
 * n cells "k i0 .. i(k-1)"); other sections end the reading. */
static GrStatus
parse_vtk_cells (TokIter *it, unsigned long long npoints, Cells *cells, char *errbuf,
    size_t errlen)
{
  char *t;
  while ((t = next_token (it))) {
    bool poly = g_ascii_strcasecmp (t, "POLYGONS") == 0;
    if (!poly && g_ascii_strcasecmp (t, "LINES") != 0)
      continue;
    if (cells->cell_size) {
      gr_set_err (errbuf, errlen, "line %ld: VTK file with both LINES and POLYGONS: not "
          "supported", it->lineno);
      return GR_ERR_FORMAT;
    }
    long sl = it->lineno;
    char *tn = next_token (it), *ts = tn ? next_token (it) : NULL;
    uint32_t n = 0, size = 0;
    if (!tn || !ts || !parse_index (tn, GR_POINTSET_MAX_POINTS, &n) ||
        !parse_index (ts, 4ull * GR_POINTSET_MAX_POINTS, &size)) {
      gr_set_err (errbuf, errlen, "line %ld: expected '%s <cells> <size>'", sl,
          poly ? "POLYGONS" : "LINES");
      return GR_ERR_FORMAT;
    }
    cells->cell_size = poly ? 3 : 2;
    uint32_t idx[MAX_COLUMNS];
    for (uint32_t c = 0; c < n; c++) {
      t = next_token (it);
      uint32_t k = 0;
      if (!t || !parse_index (t, MAX_COLUMNS, &k) || k < (poly ? 3u : 2u)) {
        gr_set_err (errbuf, errlen, "line %ld: VTK cell %u: expected a vertex count of "
            "%s to %d", it->lineno, c, poly ? "3" : "2", MAX_COLUMNS);
        return GR_ERR_FORMAT;
      }
      for (uint32_t j = 0; j < k; j++) {
        t = next_token (it);
        if (!t || !parse_index (t, npoints ? npoints - 1 : 0, &idx[j])) {
          gr_set_err (errbuf, errlen, "line %ld: VTK cell %u: a vertex index below %llu "
              "expected", it->lineno, c, npoints);
          return GR_ERR_FORMAT;
        }
      }
      if (!cells_add (cells, idx, k, poly))
        return GR_ERR_NOMEM;
    }
  }
  return GR_OK;
}

static GrStatus
parse_vtk (char *buf, size_t len, DArray *out, int *dim_out, Cells *cells, char *errbuf,
    size_t errlen)
{
  LineIter li = { buf, buf + len, 0 };
  char shown[40];
  char *l1 = next_line (&li);
  char *l2 = l1 ? next_line (&li) : NULL;
  char *l3 = l2 ? next_line (&li) : NULL;
  (void) l2;
  if (!l1 || !l3) {
    gr_set_err (errbuf, errlen, "VTK file too short: expected a version line, a title and "
        "ASCII/BINARY");
    return GR_ERR_FORMAT;
  }
  char *kind = skip_ws (l3);
  if (g_ascii_strncasecmp (kind, "ASCII", 5) != 0) {
    gr_set_err (errbuf, errlen, "line 3: VTK '%s' files are not supported (only ASCII)",
        g_ascii_strncasecmp (kind, "BINARY", 6) == 0 ? "BINARY" : "unknown");
    return GR_ERR_FORMAT;
  }
  TokIter it = { li.p, li.end, li.lineno + 1 };
  char *t;
  while ((t = next_token (&it)) && g_ascii_strcasecmp (t, "POINTS") != 0) {
  }
  if (!t) {
    gr_set_err (errbuf, errlen, "VTK file has no POINTS section");
    return GR_ERR_FORMAT;
  }
  long pl = it.lineno;
  char *tn = next_token (&it);
  char *tt = tn ? next_token (&it) : NULL;
  char *end = NULL;
  unsigned long long n = 0;
  if (tn) {
    errno = 0;
    n = strtoull (tn, &end, 10);
  }
  if (!tn || !tt || *end || end == tn || errno || tn[0] == '-' ||
      n > GR_POINTSET_MAX_POINTS) {
    gr_set_err (errbuf, errlen, "line %ld: expected 'POINTS <count> <type>'", pl);
    return GR_ERR_FORMAT;
  }
  for (unsigned long long k = 0; k < 3 * n; k++) {
    t = next_token (&it);
    if (!t) {
      gr_set_err (errbuf, errlen, "VTK POINTS section ends after %llu of %llu coordinates",
          k, 3 * n);
      return GR_ERR_FORMAT;
    }
    double x;
    if (!parse_number (t, &x)) {
      describe_token (shown, sizeof shown, t);
      gr_set_err (errbuf, errlen, "line %ld: '%s' is not a number", it.lineno, shown);
      return GR_ERR_FORMAT;
    }
    if (!check_coordinate (x, it.lineno, errbuf, errlen))
      return GR_ERR_FORMAT;
    if (!darray_push (out, x))
      return GR_ERR_NOMEM;
  }
  *dim_out = 3;
  return parse_vtk_cells (&it, n, cells, errbuf, errlen);
}

/* ---- entry points --------------------------------------------------------------- */

static GrPointSetFormat
detect (const char *s)
{
  while (*s && isspace ((unsigned char) *s))
    s++;
  if (strncmp (s, "ply", 3) == 0 && (s[3] == '\n' || s[3] == '\r' || s[3] == ' ' ||
          s[3] == '\0'))
    return GR_POINTSET_PLY;
  if (s[0] == '#') {
    const char *p = s + 1;
    while (*p == ' ')
      p++;
    if (g_ascii_strncasecmp (p, "vtk", 3) == 0)
      return GR_POINTSET_VTK;
  }
  return GR_POINTSET_CSV;
}

GrStatus
gr_pointset_parse (const char *data, size_t len, GrPointSetFormat format, int want_dim,
    GrPointSet *out, char *errbuf, size_t errlen)
{
  if (!out || (!data && len) || (want_dim != 0 && want_dim != 2 && want_dim != 3) ||
      format < GR_POINTSET_AUTO || format > GR_POINTSET_VTK) {
    gr_set_err (errbuf, errlen, "bad arguments");
    return GR_ERR_INVALID;
  }
  memset (out, 0, sizeof *out);
  if (len == 0) {
    gr_set_err (errbuf, errlen, "empty input: no points");
    return GR_ERR_FORMAT;
  }
  const char *nul = memchr (data, '\0', len);
  if (nul) {
    gr_set_err (errbuf, errlen, "binary data (NUL byte at offset %zu): expected a text point "
        "set (CSV, PLY ASCII or VTK ASCII)", (size_t) (nul - data));
    return GR_ERR_FORMAT;
  }
  char *buf = malloc (len + 1);
  if (!buf)
    return GR_ERR_NOMEM;
  memcpy (buf, data, len);
  buf[len] = '\0';
  char *s = buf;
  size_t slen = len;
  if (slen >= 3 && (unsigned char) s[0] == 0xEF && (unsigned char) s[1] == 0xBB &&
      (unsigned char) s[2] == 0xBF) {
    s += 3;                     /* UTF-8 byte order mark */
    slen -= 3;
  }
  if (format == GR_POINTSET_AUTO)
    format = detect (s);

  DArray a = { 0 };
  Cells cells = { 0 };
  int dim = 0;
  GrStatus st;
  switch (format) {
    case GR_POINTSET_PLY: st = parse_ply (s, slen, &a, &dim, &cells, errbuf, errlen); break;
    case GR_POINTSET_VTK: st = parse_vtk (s, slen, &a, &dim, &cells, errbuf, errlen); break;
    default: st = parse_csv (s, slen, &a, &dim, errbuf, errlen); break;
  }
  free (buf);
  if (st != GR_OK || cells.len == 0) {
    free (cells.v);
    cells.v = NULL;
    cells.cell_size = 0;
  }
  if (st == GR_OK && (a.len == 0 || dim == 0)) {
    gr_set_err (errbuf, errlen, "no points in the %s data", gr_pointset_format_name (format));
    st = GR_ERR_FORMAT;
  }
  if (st != GR_OK) {
    if (st == GR_ERR_NOMEM)
      gr_set_err (errbuf, errlen, "out of memory");
    free (a.v);
    free (cells.v);
    return st;
  }
  size_t n = a.len / dim;
  if (want_dim == 2 && dim == 3) {
    for (size_t i = 0; i < n; i++)
      if (a.v[3 * i + 2] != 0.0) {
        gr_set_err (errbuf, errlen, "2-D points asked for, but point %zu has z = %g (the data "
            "is 3-D)", i, a.v[3 * i + 2]);
        free (a.v);
        free (cells.v);
        return GR_ERR_FORMAT;
      }
    for (size_t i = 0; i < n; i++) {
      a.v[2 * i] = a.v[3 * i];
      a.v[2 * i + 1] = a.v[3 * i + 1];
    }
    dim = 2;
  } else if (want_dim == 3 && dim == 2) {
    double *v = malloc (3 * n * sizeof *v);
    if (!v) {
      free (a.v);
      free (cells.v);
      return GR_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
      v[3 * i] = a.v[2 * i];
      v[3 * i + 1] = a.v[2 * i + 1];
      v[3 * i + 2] = 0.0;
    }
    free (a.v);
    a.v = v;
    dim = 3;
  }
  out->xyz = a.v;
  out->n = n;
  out->dim = dim;
  out->format = format;
  out->cells = cells.v;
  out->cell_size = cells.cell_size;
  out->ncells = cells.cell_size ? cells.len / cells.cell_size : 0;
  return GR_OK;
}

char *
gr_pointset_format_ply (const double *xyz, size_t n, int dim, const uint32_t *cells,
    size_t ncells, int cell_size, size_t *len_out)
{
  if (!xyz || n == 0 || (dim != 2 && dim != 3) || (cell_size != 0 && cell_size != 2 &&
          cell_size != 3) || (cell_size && ncells && !cells))
    return NULL;
  for (size_t i = 0; cell_size && i < ncells * (size_t) cell_size; i++)
    if (cells[i] >= n)
      return NULL;
  GString *s = g_string_sized_new (64 + n * dim * 26 + ncells * cell_size * 12);
  if (!s)
    return NULL;
  g_string_append_printf (s, "ply\nformat ascii 1.0\ncomment georeg\nelement vertex %zu\n"
      "property double x\nproperty double y\n%s", n, dim == 3 ? "property double z\n" : "");
  if (cell_size == 3 && ncells)
    g_string_append_printf (s, "element face %zu\nproperty list uchar uint "
        "vertex_indices\n", ncells);
  else if (cell_size == 2 && ncells)
    g_string_append_printf (s, "element edge %zu\nproperty uint vertex1\n"
        "property uint vertex2\n", ncells);
  g_string_append (s, "end_header\n");
  char num[G_ASCII_DTOSTR_BUF_SIZE];
  for (size_t i = 0; i < n; i++)
    for (int d = 0; d < dim; d++) {
      g_ascii_formatd (num, sizeof num, "%.17g", xyz[i * dim + d]);
      g_string_append (s, num);
      g_string_append_c (s, d + 1 < dim ? ' ' : '\n');
    }
  for (size_t f = 0; f < ncells && cell_size; f++) {
    const uint32_t *c = cells + f * cell_size;
    if (cell_size == 3)
      g_string_append_printf (s, "3 %u %u %u\n", c[0], c[1], c[2]);
    else
      g_string_append_printf (s, "%u %u\n", c[0], c[1]);
  }
  if (len_out)
    *len_out = s->len;
  char *g = g_string_free (s, FALSE);
  /* callers free () it, as the CSV writer's result */
  char *out = malloc (strlen (g) + 1);
  if (out)
    memcpy (out, g, strlen (g) + 1);
  g_free (g);
  return out;
}

GrStatus
gr_pointset_load (const char *path, GrPointSetFormat format, int want_dim,
    GrPointSet *out, char *errbuf, size_t errlen)
{
  if (out)
    memset (out, 0, sizeof *out);
  if (!path || !out) {
    gr_set_err (errbuf, errlen, "no file name");
    return GR_ERR_INVALID;
  }
  FILE *f = fopen (path, "rb");
  if (!f) {
    gr_set_err (errbuf, errlen, "cannot open '%s': %s", path, strerror (errno));
    return GR_ERR_IO;
  }
  size_t cap = 1 << 16, len = 0;
  char *data = malloc (cap);
  if (!data) {
    fclose (f);
    return GR_ERR_NOMEM;
  }
  for (;;) {
    if (len == cap) {
      if (cap > ((size_t) 1 << 33)) {
        free (data);
        fclose (f);
        gr_set_err (errbuf, errlen, "'%s' is too large", path);
        return GR_ERR_FORMAT;
      }
      char *d = realloc (data, cap * 2);
      if (!d) {
        free (data);
        fclose (f);
        return GR_ERR_NOMEM;
      }
      data = d;
      cap *= 2;
    }
    size_t r = fread (data + len, 1, cap - len, f);
    len += r;
    if (r == 0)
      break;
  }
  int rerr = ferror (f);
  fclose (f);
  if (rerr) {
    free (data);
    gr_set_err (errbuf, errlen, "cannot read '%s'", path);
    return GR_ERR_IO;
  }
  char inner[256] = "";
  GrStatus st = gr_pointset_parse (data, len, format, want_dim, out, inner, sizeof inner);
  free (data);
  if (st != GR_OK)
    gr_set_err (errbuf, errlen, "'%s': %s", path, inner);
  return st;
}

char *
gr_pointset_format_csv (const double *xyz, const float *xyz_f, size_t n, int dim,
    size_t *len_out)
{
  if ((dim != 2 && dim != 3) || (!xyz == !xyz_f) || n > GR_POINTSET_MAX_POINTS)
    return NULL;
  /* at most 3 * (25 + 1) characters per line */
  size_t cap = 16 + n * 3 * 27 + 1;
  char *s = malloc (cap);
  if (!s)
    return NULL;
  size_t len = (size_t) sprintf (s, dim == 3 ? "x,y,z\n" : "x,y\n");
  char num[G_ASCII_DTOSTR_BUF_SIZE];
  for (size_t i = 0; i < n; i++) {
    for (int d = 0; d < dim; d++) {
      if (xyz_f)
        g_ascii_formatd (num, sizeof num, "%.9g", (double) xyz_f[i * dim + d]);
      else
        g_ascii_formatd (num, sizeof num, "%.17g", xyz[i * dim + d]);
      size_t l = strlen (num);
      memcpy (s + len, num, l);
      len += l;
      s[len++] = d + 1 < dim ? ',' : '\n';
    }
  }
  s[len] = '\0';
  if (len_out)
    *len_out = len;
  return s;
}

GrStatus
gr_pointset_save_csv (const char *path, const double *xyz, size_t n, int dim,
    char *errbuf, size_t errlen)
{
  size_t len = 0;
  char *s = gr_pointset_format_csv (xyz, NULL, n, dim, &len);
  if (!s) {
    gr_set_err (errbuf, errlen, "bad point set or out of memory");
    return GR_ERR_INVALID;
  }
  FILE *f = fopen (path, "wb");
  if (!f) {
    gr_set_err (errbuf, errlen, "cannot create '%s': %s", path, strerror (errno));
    free (s);
    return GR_ERR_IO;
  }
  size_t w = fwrite (s, 1, len, f);
  int cerr = fclose (f);
  free (s);
  if (w != len || cerr != 0) {
    gr_set_err (errbuf, errlen, "cannot write '%s'", path);
    return GR_ERR_IO;
  }
  return GR_OK;
}
