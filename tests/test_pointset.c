/* Point-set file parsing and writing (kernels/pointset_io): every accepted format,
 * every documented refusal with its message, a CSV round trip, and a mutation fuzz
 * (thousands of damaged files: an error or a result, never a crash).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pointset_io.h"
#include "test_check.h"

static GrPointSet
parse_ok (const char *text, int want_dim, size_t n, int dim, const double *expect)
{
  GrPointSet ps;
  char err[256] = "";
  GrStatus st = gr_pointset_parse (text, strlen (text), GR_POINTSET_AUTO, want_dim, &ps,
      err, sizeof err);
  CHECK (st == GR_OK, "parse failed (%s) for:\n%s", err, text);
  if (st != GR_OK)
    return ps;
  CHECK (ps.n == n && ps.dim == dim, "got %zu x %d, expected %zu x %d for:\n%s", ps.n,
      ps.dim, n, dim, text);
  if (expect && ps.n == n && ps.dim == dim)
    for (size_t i = 0; i < n * dim; i++)
      CHECK (ps.xyz[i] == expect[i], "value %zu: %g != %g in:\n%s", i, ps.xyz[i],
          expect[i], text);
  return ps;
}

static void
parse_bad (const char *text, size_t len, const char *needle)
{
  GrPointSet ps;
  char err[256] = "";
  GrStatus st = gr_pointset_parse (text, len, GR_POINTSET_AUTO, 0, &ps, err, sizeof err);
  CHECK (st == GR_ERR_FORMAT, "accepted (status %d) malformed input:\n%.*s", st,
      (int) len, text);
  CHECK (ps.xyz == NULL && ps.n == 0, "failure leaves the set empty");
  CHECK (needle == NULL || strstr (err, needle) != NULL, "message '%s' lacks '%s'", err,
      needle);
  gr_pointset_clear (&ps);
}

#define BAD(text, needle) parse_bad (text, strlen (text), needle)

static void
test_csv (void)
{
  const double e2[] = { 1, 2, 3.5, -4 };
  const double e3[] = { 1, 2, 3, 4, 5, 6e-3 };
  GrPointSet ps;
  ps = parse_ok ("1,2\n3.5,-4\n", 0, 2, 2, e2);
  CHECK (ps.format == GR_POINTSET_CSV, "format detected as CSV");
  gr_pointset_clear (&ps);
  ps = parse_ok ("1 2 3\n4\t5   6e-3\n", 0, 2, 3, e3);
  gr_pointset_clear (&ps);
  ps = parse_ok ("x,y,z\r\n1,2,3\r\n4,5,6e-3\r\n", 0, 2, 3, e3);
  gr_pointset_clear (&ps);
  ps = parse_ok ("\xEF\xBB\xBF# landmarks\n\n\"x\";\"y\"\n1;2\n# comment\n3.5;-4\n\n", 0, 2,
      2, e2);
  gr_pointset_clear (&ps);
  ps = parse_ok ("  1 , 2 , 3 ,\n4,5,6e-3,\n", 0, 2, 3, e3);      /* trailing comma */
  gr_pointset_clear (&ps);
  /* header with other columns, in another order */
  ps = parse_ok ("id,Z,label,Y,X\n7,3,a,2,1\n8,6e-3,b,5,4\n", 0, 2, 3, e3);
  gr_pointset_clear (&ps);
  /* no final newline, old Mac line ends */
  ps = parse_ok ("1,2\r3.5,-4", 0, 2, 2, e2);
  gr_pointset_clear (&ps);
  /* dimension requests */
  const double e32[] = { 1, 2, 0, 3.5, -4, 0 };
  ps = parse_ok ("1,2\n3.5,-4\n", 3, 2, 3, e32);
  gr_pointset_clear (&ps);
  ps = parse_ok ("1 2 0\n3.5 -4 0\n", 2, 2, 2, e2);
  gr_pointset_clear (&ps);
  {
    char err[256] = "";
    const char *t = "1 2 0\n3.5 -4 1\n";
    CHECK (gr_pointset_parse (t, strlen (t), GR_POINTSET_AUTO, 2, &ps, err, sizeof err)
        == GR_ERR_FORMAT && strstr (err, "z =") != NULL, "2-D asked of 3-D data: %s", err);
  }
  /* one point parses (the element refuses it later) */
  ps = parse_ok ("1,2\n", 0, 1, 2, e2);
  gr_pointset_clear (&ps);

  BAD ("", "empty");
  BAD ("\n\n# nothing\n", "no points");
  BAD ("x,y,z\n", "no points");
  BAD ("1,2\n3,nan\n", "line 2: non-finite coordinate (NaN)");
  BAD ("1,2\n3,inf\n", "non-finite coordinate (Inf)");
  BAD ("1,2\n3,1e999\n", "non-finite");
  /* finite in float64 but not in float32 (the buffers' type): an error, never inf */
  BAD ("1,2\n3,1e300\n", "line 2: coordinate 1e+300 does not fit float32");
  BAD ("1,2\n-1e300,4\n", "does not fit float32");
  BAD ("1,2\n3,3.4028236e38\n", "does not fit float32");
  BAD ("1,2\n3,3.4028235677973366e38\n", "does not fit float32");   /* the midpoint */
  {
    /* FLT_MAX itself and values that round down to it still fit */
    const double big[] = { 3.40282346e38, -3.4028235e38 };
    ps = parse_ok ("3.40282346e38,-3.4028235e38\n", 0, 1, 2, big);
    gr_pointset_clear (&ps);
  }
  BAD ("1,2\n3,4,5\n", "line 2: 3 values, expected 2");
  BAD ("1,2,3,4\n", "4 values");
  BAD ("1\n2\n", "1 values");
  BAD ("1,,2\n", "empty field");
  BAD (",1,2\n", "empty field");
  BAD ("1,2\n3,abc\n", "line 2: 'abc' is not a number");
  BAD ("1,2\n3,4x\n", "'4x' is not a number");
  BAD ("hello world\n1 2\n", "not a header");
  BAD ("a,b,c\n1,2,3\n", "not a header");
  BAD ("x,y\n1,2\n3\n", "line 3");
  BAD ("x,y\n1,oops\n", "'oops'");
  const char nul[] = "1,2\n3\0,4\n";
  parse_bad (nul, sizeof nul - 1, "NUL byte");
  /* many columns */
  char wide[1024] = "";
  for (int i = 0; i < 80; i++)
    strcat (wide, "1,");
  strcat (wide, "1\n");
  BAD (wide, "too many columns");
}

static void
test_ply (void)
{
  const char *ply =
      "ply\nformat ascii 1.0\ncomment made by hand\nelement vertex 3\n"
      "property float x\nproperty float y\nproperty float z\nproperty float nx\n"
      "element face 1\nproperty list uchar int vertex_indices\nend_header\n"
      "1 2 3 0\n4 5 6 0\n7 8 9.5 1\n3 0 1 2\n";
  const double e[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9.5 };
  GrPointSet ps = parse_ok (ply, 0, 3, 3, e);
  CHECK (ps.format == GR_POINTSET_PLY, "format detected as PLY");
  gr_pointset_clear (&ps);
  /* 2-D vertices, another element first */
  const char *ply2 =
      "ply\nformat ascii 1.0\nelement camera 1\nproperty float f\n"
      "element vertex 2\nproperty double y\nproperty double x\nend_header\n"
      "42\n2 1\n-4 3.5\n";
  const double e2[] = { 1, 2, 3.5, -4 };
  ps = parse_ok (ply2, 0, 2, 2, e2);
  gr_pointset_clear (&ps);

  BAD ("ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
      "end_header\n1 2\n3 1e300\n", "does not fit float32");
  BAD ("ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty float x\n"
      "property float y\nend_header\n", "not supported");
  BAD ("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
      "end_header\n1 2\n3 4\n", "ends after 2 of 3 vertices");
  BAD ("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n",
      "header incomplete");
  BAD ("ply\nformat ascii 1.0\nelement vertex 1\nproperty float a\nproperty float b\n"
      "end_header\n1 2\n", "no x and y");
  BAD ("ply\nformat ascii 1.0\nelement face 1\nend_header\n", "no vertex element");
  BAD ("ply\nformat ascii 1.0\nelement vertex 99999999999\nproperty float x\n"
      "property float y\nend_header\n", "bad PLY element count");
  BAD ("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n"
      "end_header\n1 nan\n", "non-finite");
  BAD ("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n"
      "end_header\n1 2 3\n", "3 values");
  BAD ("ply\nformat ascii 1.0\nbogus line\nend_header\n", "unknown PLY header keyword");
}

/* connectivity: PLY faces (polygons as fans) and edges, VTK POLYGONS and LINES, the PLY
 * writer's round trip, and the refusals */
static const double tri_points[] = { 0, 0, 1, 0 };

static void
test_connectivity (void)
{
  const char *ply =
      "ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\n"
      "property float z\nelement face 2\nproperty list uchar int vertex_indices\n"
      "property uchar red\nend_header\n0 0 0\n1 0 0\n1 1 0\n0 1 1\n4 0 1 2 3 255\n"
      "3 3 2 1 0\n";
  GrPointSet ps = parse_ok (ply, 0, 4, 3, NULL);
  const uint32_t tri[] = { 0, 1, 2, 0, 2, 3, 3, 2, 1 };
  CHECK (ps.cell_size == 3 && ps.ncells == 3 && memcmp (ps.cells, tri, sizeof tri) == 0,
      "PLY faces: a quad as two triangles, then a triangle (%d, %zu)", ps.cell_size,
      ps.ncells);
  /* the writer's round trip */
  size_t len = 0;
  char *text = gr_pointset_format_ply (ps.xyz, ps.n, ps.dim, ps.cells, ps.ncells,
      ps.cell_size, &len);
  CHECK (text != NULL && len == strlen (text), "PLY written");
  GrPointSet back = parse_ok (text, 0, 4, 3, ps.xyz);
  CHECK (back.cell_size == 3 && back.ncells == 3 && memcmp (back.cells, tri,
          sizeof tri) == 0, "PLY round trip keeps the faces");
  gr_pointset_clear (&back);
  free (text);
  gr_pointset_clear (&ps);
  CHECK (ps.cells == NULL && ps.ncells == 0, "cleared");

  const char *edges =
      "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
      "element edge 2\nproperty int vertex1\nproperty int vertex2\nend_header\n"
      "0 0\n1 0\n1 1\n0 1\n1 2\n";
  ps = parse_ok (edges, 0, 3, 2, NULL);
  const uint32_t seg[] = { 0, 1, 1, 2 };
  CHECK (ps.cell_size == 2 && ps.ncells == 2 && memcmp (ps.cells, seg, sizeof seg) == 0,
      "PLY edges");
  text = gr_pointset_format_ply (ps.xyz, ps.n, ps.dim, ps.cells, ps.ncells, ps.cell_size,
      NULL);
  back = parse_ok (text, 0, 3, 2, ps.xyz);
  CHECK (back.cell_size == 2 && memcmp (back.cells, seg, sizeof seg) == 0,
      "PLY edges round trip");
  gr_pointset_clear (&back);
  free (text);
  gr_pointset_clear (&ps);

  const char *vtk =
      "# vtk DataFile Version 3.0\nmesh\nASCII\nDATASET POLYDATA\nPOINTS 4 float\n"
      "0 0 0 1 0 0 1 1 0 0 1 1\nPOLYGONS 2 9\n4 0 1 2 3\n3 3 2 1\n";
  ps = parse_ok (vtk, 0, 4, 3, NULL);
  const uint32_t vtri[] = { 0, 1, 2, 0, 2, 3, 3, 2, 1 };
  CHECK (ps.cell_size == 3 && ps.ncells == 3 && memcmp (ps.cells, vtri, sizeof vtri) == 0,
      "VTK POLYGONS");
  gr_pointset_clear (&ps);
  const char *vtkl =
      "# vtk DataFile Version 3.0\ncurve\nASCII\nDATASET POLYDATA\nPOINTS 3 float\n"
      "0 0 0 1 0 0 1 1 0\nLINES 1 4\n3 0 1 2\n";
  ps = parse_ok (vtkl, 0, 3, 3, NULL);
  CHECK (ps.cell_size == 2 && ps.ncells == 2 && memcmp (ps.cells, seg, sizeof seg) == 0,
      "VTK LINES as segments");
  gr_pointset_clear (&ps);
  /* a plain point set has no cells */
  ps = parse_ok ("1,2\n3,4\n", 0, 2, 2, NULL);
  CHECK (ps.cells == NULL && ps.cell_size == 0, "CSV: no cells");
  gr_pointset_clear (&ps);

  BAD ("ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
      "element face 1\nproperty list uchar int vertex_indices\nend_header\n0 0\n1 0\n"
      "3 0 1 2\n", "indices below 2");
  BAD ("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
      "element face 1\nproperty list uchar int vertex_indices\nend_header\n0 0\n1 0\n"
      "0 1\n2 0 1\n", "bad PLY face");
  BAD ("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
      "element face 1\nproperty list uchar int vertex_indices\nend_header\n0 0\n1 0\n"
      "0 1\n", "ends inside element 'face'");
  BAD ("# vtk DataFile Version 3.0\nm\nASCII\nDATASET POLYDATA\nPOINTS 3 float\n"
      "0 0 0 1 0 0 1 1 0\nPOLYGONS 1 4\n3 0 1 7\n", "index below 3");
  BAD ("# vtk DataFile Version 3.0\nm\nASCII\nDATASET POLYDATA\nPOINTS 3 float\n"
      "0 0 0 1 0 0 1 1 0\nLINES 1 3\n2 0 1\nPOLYGONS 1 4\n3 0 1 2\n", "both LINES");
  CHECK (gr_pointset_format_ply (tri_points, 2, 2, tri, 1, 3, NULL) == NULL,
      "the writer refuses an index out of range");
}

static void
test_vtk (void)
{
  const char *vtk =
      "# vtk DataFile Version 3.0\nlandmarks\nASCII\nDATASET POLYDATA\n"
      "POINTS 3 float\n1 2 3 4\n5 6\n7 8 9.5\nVERTICES 1 4\n3 0 1 2\n";
  const double e[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9.5 };
  GrPointSet ps = parse_ok (vtk, 0, 3, 3, e);
  CHECK (ps.format == GR_POINTSET_VTK, "format detected as VTK");
  gr_pointset_clear (&ps);
  const double e2[] = { 1, 2, 4, 5 };
  ps = parse_ok ("# vtk DataFile Version 2.0\nt\nASCII\nDATASET UNSTRUCTURED_GRID\n"
      "POINTS 2 double\n1 2 0 4 5 0\n", 2, 2, 2, e2);
  gr_pointset_clear (&ps);
  BAD ("# vtk DataFile Version 3.0\nt\nASCII\nDATASET POLYDATA\nPOINTS 1 float\n"
      "1 -3.4028236e38 3\n", "does not fit float32");
  BAD ("# vtk DataFile Version 3.0\nt\nBINARY\nDATASET POLYDATA\nPOINTS 1 float\n",
      "BINARY");
  BAD ("# vtk DataFile Version 3.0\nt\nASCII\nDATASET POLYDATA\nPOINTS 3 float\n1 2 3\n",
      "ends after 3 of 9");
  BAD ("# vtk DataFile Version 3.0\nt\nASCII\nDATASET POLYDATA\nPOLYGONS 0 0\n",
      "no POINTS");
  BAD ("# vtk DataFile Version 3.0\nt\nASCII\nDATASET POLYDATA\nPOINTS many float\n",
      "POINTS <count>");
  BAD ("# vtk DataFile Version 3.0\nt\n", "too short");
  BAD ("# vtk DataFile Version 3.0\nt\nASCII\nPOINTS 1 float\n1 2 inf\n", "non-finite");
}

static void
test_roundtrip_and_files (void)
{
  float f[3 * 50];
  for (int i = 0; i < 150; i++)
    f[i] = (float) (sin (i * 1.7) * pow (10.0, (i % 9) - 4));
  size_t len = 0;
  char *csv = gr_pointset_format_csv (NULL, f, 50, 3, &len);
  CHECK (csv && len == strlen (csv) && strncmp (csv, "x,y,z\n", 6) == 0, "csv header");
  GrPointSet ps;
  char err[256] = "";
  CHECK (gr_pointset_parse (csv, len, GR_POINTSET_AUTO, 0, &ps, err, sizeof err) == GR_OK,
      "round trip parse: %s", err);
  int same = ps.n == 50 && ps.dim == 3;
  for (int i = 0; same && i < 150; i++)
    same = (float) ps.xyz[i] == f[i];
  CHECK (same, "float32 values survive the CSV round trip exactly");
  gr_pointset_clear (&ps);
  free (csv);
  CHECK (gr_pointset_format_csv (NULL, f, 5, 4, &len) == NULL, "dim 4 refused");

  char path[] = "/tmp/georeg-pointset-XXXXXX";
  int fd = mkstemp (path);
  CHECK (fd >= 0, "temp file");
  close (fd);
  double d[6] = { 0.1, 0.2, 0.3, 1e10, -2.5, 1.0 / 3.0 };
  CHECK (gr_pointset_save_csv (path, d, 3, 2, err, sizeof err) == GR_OK, "save: %s", err);
  CHECK (gr_pointset_load (path, GR_POINTSET_AUTO, 0, &ps, err, sizeof err) == GR_OK &&
      ps.n == 3 && ps.dim == 2, "load: %s", err);
  for (int i = 0; ps.xyz && i < 6; i++)
    CHECK (ps.xyz[i] == d[i], "double round trip %d", i);
  gr_pointset_clear (&ps);
  unlink (path);
  CHECK (gr_pointset_load ("/nonexistent/dir/atlas.csv", GR_POINTSET_AUTO, 0, &ps, err,
          sizeof err) == GR_ERR_IO && strstr (err, "/nonexistent/dir/atlas.csv"),
      "missing file: %s", err);
  CHECK (gr_pointset_parse ("1,2", 3, GR_POINTSET_AUTO, 1, &ps, err, sizeof err) ==
      GR_ERR_INVALID, "want_dim 1 refused");
}

/* Damaged copies of valid files: flipped, deleted and inserted bytes, truncation. */
static void
test_fuzz (void)
{
  const char *seeds[] = {
    "x,y,z\n1,2,3\n4,5,6\n7,8,9\n",
    "1 2\n3 4\n5 6\n",
    "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
        "property float z\nelement face 1\nproperty list uchar int vertex_indices\n"
        "end_header\n1 2 3\n4 5 6\n3 0 1 1\n",
    "# vtk DataFile Version 3.0\nt\nASCII\nDATASET POLYDATA\nPOINTS 2 float\n1 2 3 4 5 6\n",
  };
  const char alphabet[] = "0123456789.,;-+eE \t\n\r#xyzplyPOINTS\"nanif";
  unsigned long long st = 12345;
  int ok = 0, bad = 0;
  for (int iter = 0; iter < 6000; iter++) {
    const char *src = seeds[iter % 4];
    size_t len = strlen (src);
    char buf[512];
    memcpy (buf, src, len);
    int edits = 1 + (int) ((st = st * 6364136223846793005ull + 1442695040888963407ull) >> 61);
    for (int e = 0; e < edits && len > 1; e++) {
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      size_t pos = (size_t) ((st >> 33) % len);
      int kind = (int) ((st >> 20) % 4);
      char c = alphabet[(st >> 40) % (sizeof alphabet - 1)];
      if (kind == 0)
        buf[pos] = c;
      else if (kind == 1) {
        memmove (buf + pos, buf + pos + 1, len - pos - 1);
        len--;
      } else if (kind == 2 && len < sizeof buf - 1) {
        memmove (buf + pos + 1, buf + pos, len - pos);
        buf[pos] = c;
        len++;
      } else
        len = pos + 1;
    }
    GrPointSet ps;
    char err[256];
    GrStatus s = gr_pointset_parse (buf, len, GR_POINTSET_AUTO, 0, &ps, err, sizeof err);
    if (s == GR_OK) {
      ok++;
      int finite = ps.n > 0 && (ps.dim == 2 || ps.dim == 3);
      for (size_t i = 0; finite && i < ps.n * ps.dim; i++)
        finite = isfinite (ps.xyz[i]);
      CHECK (finite, "fuzz: an accepted set is non-empty and finite");
      gr_pointset_clear (&ps);
    } else {
      bad++;
      CHECK (s == GR_ERR_FORMAT && err[0] != '\0' && ps.xyz == NULL,
          "fuzz: refusal with a message");
    }
  }
  printf ("fuzz: %d accepted, %d refused, no crash\n", ok, bad);
  CHECK (ok > 100 && bad > 100, "fuzz exercised both outcomes");
}

int
main (void)
{
  test_csv ();
  test_ply ();
  test_vtk ();
  test_connectivity ();
  test_roundtrip_and_files ();
  test_fuzz ();
  return CHECK_DONE ();
}
