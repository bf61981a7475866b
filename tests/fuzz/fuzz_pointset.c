/* Fuzz target: point-set text (CSV / whitespace, PLY ASCII, legacy VTK) through
 * gr_pointset_parse, the parser behind pointsetparse and landmarkshoot's
 * template-location / extra-location.
 *
 * Every input is parsed as auto-detected, and forced as CSV, PLY and VTK, with the
 * three want_dim values spread over the calls.  Oracles on success: 2 or 3
 * dimensions, at least one point, every coordinate finite, dimension conversion as
 * documented; and the CSV writer round-trips: gr_pointset_format_csv's text parses
 * back to exactly the same doubles.  On failure: an error message, an empty result.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "fuzz_common.h"

#include <math.h>

#include "pointset_io.h"

static void
check_one (const uint8_t * data, size_t size, GrPointSetFormat format, int want_dim)
{
  GrPointSet ps;
  char err[256];
  err[0] = '\0';
  memset (&ps, 0x5a, sizeof ps);        /* poison: the parser must set every field */
  GrStatus st = gr_pointset_parse ((const char *) data, size, format, want_dim, &ps, err,
      sizeof err);
  if (st != GR_OK) {
    FUZZ_ASSERT (st == GR_ERR_FORMAT || st == GR_ERR_NOMEM, "status %d", (int) st);
    FUZZ_ASSERT (ps.xyz == NULL && ps.n == 0, "failure left %zu points", ps.n);
    FUZZ_ASSERT (err[0] != '\0', "failure without a message (status %d)", (int) st);
    return;
  }
  FUZZ_ASSERT (ps.dim == 2 || ps.dim == 3, "dim %d", ps.dim);
  FUZZ_ASSERT (want_dim == 0 || ps.dim == want_dim, "dim %d, asked %d", ps.dim, want_dim);
  FUZZ_ASSERT (ps.n > 0 && ps.n <= GR_POINTSET_MAX_POINTS && ps.xyz, "n %zu", ps.n);
  FUZZ_ASSERT (format == GR_POINTSET_AUTO || ps.format == format, "format %d read as %d",
      (int) format, (int) ps.format);
  for (size_t i = 0; i < ps.n * (size_t) ps.dim; i++)
    FUZZ_ASSERT (isfinite (ps.xyz[i]), "coordinate %zu is %g", i, ps.xyz[i]);

  /* writer round trip (double input: 17 significant digits) */
  size_t len = 0;
  char *csv = gr_pointset_format_csv (ps.xyz, NULL, ps.n, ps.dim, &len);
  FUZZ_ASSERT (csv != NULL, "format_csv failed for %zu %d-D points", ps.n, ps.dim);
  FUZZ_ASSERT (strlen (csv) == len, "length %zu, reported %zu", strlen (csv), len);
  GrPointSet back;
  st = gr_pointset_parse (csv, len, GR_POINTSET_CSV, 0, &back, err, sizeof err);
  FUZZ_ASSERT (st == GR_OK, "written CSV does not parse: %s", err);
  FUZZ_ASSERT (back.n == ps.n && back.dim == ps.dim, "%zu x %d read back as %zu x %d",
      ps.n, ps.dim, back.n, back.dim);
  for (size_t i = 0; i < ps.n * (size_t) ps.dim; i++)
    FUZZ_ASSERT (back.xyz[i] == ps.xyz[i] || (ps.xyz[i] == 0 && back.xyz[i] == 0),
        "coordinate %zu: %.17g written, %.17g read", i, ps.xyz[i], back.xyz[i]);
  gr_pointset_clear (&back);

  /* float writer (what pointsetenc uses): parses back, dimension kept */
  float *f = malloc (sizeof (float) * ps.n * (size_t) ps.dim);
  if (f) {
    for (size_t i = 0; i < ps.n * (size_t) ps.dim; i++)
      f[i] = (float) ps.xyz[i];
    char *csvf = gr_pointset_format_csv (NULL, f, ps.n, ps.dim, &len);
    FUZZ_ASSERT (csvf != NULL, "float format_csv failed");
    st = gr_pointset_parse (csvf, len, GR_POINTSET_AUTO, 0, &back, err, sizeof err);
    /* a float that overflowed to Inf is refused on the way back: that is the parser's
     * finite-coordinate rule, not a writer bug */
    bool any_inf = false;
    for (size_t i = 0; i < ps.n * (size_t) ps.dim; i++)
      any_inf |= !isfinite (f[i]);
    FUZZ_ASSERT (st == GR_OK || any_inf, "float CSV does not parse: %s", err);
    if (st == GR_OK) {
      FUZZ_ASSERT (back.n == ps.n && back.dim == ps.dim, "float CSV size");
      for (size_t i = 0; i < ps.n * (size_t) ps.dim; i++)
        FUZZ_ASSERT ((float) back.xyz[i] == f[i], "float coordinate %zu", i);
      gr_pointset_clear (&back);
    }
    free (csvf);
    free (f);
  }
  free (csv);
  gr_pointset_clear (&ps);
  FUZZ_ASSERT (ps.xyz == NULL && ps.n == 0, "clear");
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  static const int dims[3] = { 0, 2, 3 };
  int d = (int) (size % 3);
  check_one (data, size, GR_POINTSET_AUTO, 0);
  check_one (data, size, GR_POINTSET_CSV, dims[d]);
  check_one (data, size, GR_POINTSET_PLY, dims[(d + 1) % 3]);
  check_one (data, size, GR_POINTSET_VTK, dims[(d + 2) % 3]);
  return 0;
}
