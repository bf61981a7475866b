/* Point-set files: parsing and writing (plain C, no GStreamer).
 *
 * Formats read (detected from the content when format is GR_POINTSET_AUTO):
 *  - CSV / whitespace text: one point per line, 2 or 3 numbers separated by commas,
 *    semicolons, tabs or spaces.  Lines starting with '#' and empty lines are skipped.
 *    The first non-comment line may be a header naming the columns; then the columns
 *    named x, y and (optionally) z are used and other columns are ignored.  Without a
 *    header every line must have exactly 2 or 3 numbers.  Every line has the same
 *    number of fields.
 *  - PLY ASCII ("ply" / "format ascii 1.0"): the x, y, (z) properties of the vertex
 *    element; other elements (faces, ...) are skipped.  Binary PLY is refused.
 *  - Legacy VTK ASCII ("# vtk DataFile Version ..."): the POINTS section (always 3
 *    coordinates).  BINARY files are refused.
 * Numbers are read locale-independently ('.' decimal point).  Every coordinate must be
 * finite and fit float32 (the point-set buffers are float32): NaN, Inf and values such
 * as 1e300 are errors naming the line.  Errors never crash: they return a
 * status and a message naming the line and the problem.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_POINTSET_IO_H
#define GR_POINTSET_IO_H

#include <stdint.h>

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  GR_POINTSET_AUTO = 0,
  GR_POINTSET_CSV = 1,
  GR_POINTSET_PLY = 2,
  GR_POINTSET_VTK = 3,
} GrPointSetFormat;

/* Largest point count accepted from a file (guards against absurd headers). */
#define GR_POINTSET_MAX_POINTS 50000000u

typedef struct {
  double *xyz;                  /* n * dim coordinates, point-major (x0 y0 [z0] x1 ...) */
  size_t n;
  int dim;                      /* 2 or 3 */
  GrPointSetFormat format;      /* the format the data was read as */
  /* connectivity, when the file has some (PLY faces or edges, VTK POLYGONS or LINES):
   * ncells cells of cell_size vertex indices (2 segments, 3 triangles; polygons are
   * split into triangles as fans, polylines into segments); cell_size 0 and cells
   * NULL for a plain point set */
  uint32_t *cells;
  size_t ncells;
  int cell_size;
} GrPointSet;

const char *gr_pointset_format_name (GrPointSetFormat format);

/* Parses len bytes (need not be NUL-terminated).  want_dim: 0 keeps the file's
 * dimension; 2 accepts 3-column data only when every z is 0 (then drops z); 3 pads
 * 2-column data with z = 0.  On success out owns a malloc'ed array (free it with
 * gr_pointset_clear); on failure out is empty and errbuf says why.
 * Returns GR_ERR_FORMAT for unusable content, GR_ERR_NOMEM, GR_ERR_INVALID for bad
 * arguments. */
GrStatus gr_pointset_parse (const char *data, size_t len, GrPointSetFormat format,
    int want_dim, GrPointSet *out, char *errbuf, size_t errlen);

/* Reads a whole file and parses it (GR_ERR_IO when it cannot be read). */
GrStatus gr_pointset_load (const char *path, GrPointSetFormat format, int want_dim,
    GrPointSet *out, char *errbuf, size_t errlen);

void gr_pointset_clear (GrPointSet *ps);

/* Writes CSV text: a header line "x,y" or "x,y,z", then one point per line: float
 * input with 9 significant digits, double input with 17 (both round-trip exactly).
 * Exactly one of xyz / xyz_f must be non-NULL.  Returns a malloc'ed NUL-terminated string (length in *len_out), or NULL
 * when out of memory or arguments are bad. */
char *gr_pointset_format_csv (const double *xyz, const float *xyz_f, size_t n, int dim,
    size_t *len_out);

/* Writes PLY ASCII: the vertices (x, y[, z]) and, when cell_size is 2 or 3, the cells
 * as 'edge' (vertex1, vertex2) or 'face' (vertex_indices) elements; 17 significant
 * digits (doubles round-trip).  A malloc'ed NUL-terminated string (length in *len_out),
 * or NULL when out of memory or arguments are bad. */
char *gr_pointset_format_ply (const double *xyz, size_t n, int dim, const uint32_t *cells,
    size_t ncells, int cell_size, size_t *len_out);

GrStatus gr_pointset_save_csv (const char *path, const double *xyz, size_t n, int dim,
    char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
