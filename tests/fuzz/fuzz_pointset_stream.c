/* Fuzz target: the point-set elements on a byte stream: pointsetparse (its modes, the
 * adapter that gathers a file from chunks, caps that follow each file's dimension)
 * followed by pointsetenc (x-pointset buffers back to CSV), in a GstHarness.
 *
 * Input: byte 0 picks the mode (auto / stream / per-buffer), the dimensions property
 * (0 / 2 / 3) and the format (auto / csv / ply / vtk); byte 1 seeds the chunk sizes;
 * the rest is the file data, pushed in chunks.  Oracles: per-buffer mode: every chunk
 * is a file: the push succeeds exactly when gr_pointset_parse accepts the chunk, and
 * then one CSV document comes out holding the same points rounded to float32; stream
 * mode: the same for the whole data at EOS.  Never a crash, a leak or a hang.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "fuzz_common.h"

#include <math.h>

#include <gst/gst.h>
#include <gst/check/gstharness.h>

#include "gstpointsetparse.h"
#include "gstpointsetenc.h"
#include "pointset_io.h"

/* The CSV document out of pointsetenc must hold exactly `expect` rounded to float. */
static void
check_output (GstBuffer * out, const GrPointSet * expect)
{
  GstMapInfo map;
  FUZZ_ASSERT (gst_buffer_map (out, &map, GST_MAP_READ), "map");
  GrPointSet got;
  char err[256] = "";
  GrStatus st = gr_pointset_parse ((const char *) map.data, map.size, GR_POINTSET_CSV, 0,
      &got, err, sizeof err);
  bool any_inf = false;
  for (size_t i = 0; i < expect->n * (size_t) expect->dim; i++)
    any_inf |= isinf ((float) expect->xyz[i]);
  /* coordinates beyond float32 range become inf in the buffer: the CSV then says "inf"
   * and does not parse back; anything else must round-trip */
  FUZZ_ASSERT (st == GR_OK || any_inf, "pointsetenc output does not parse: %s", err);
  if (st == GR_OK) {
    FUZZ_ASSERT (got.n == expect->n && got.dim == expect->dim, "%zu x %d out, %zu x %d in",
        got.n, got.dim, expect->n, expect->dim);
    for (size_t i = 0; i < got.n * (size_t) got.dim; i++)
      FUZZ_ASSERT ((float) got.xyz[i] == (float) expect->xyz[i], "coordinate %zu: %g vs %g",
          i, got.xyz[i], expect->xyz[i]);
    gr_pointset_clear (&got);
  }
  gst_buffer_unmap (out, &map);
}

static GstBuffer *
buffer_of (const uint8_t * data, size_t len)
{
  return gst_buffer_new_memdup (len ? data : (const uint8_t *) "", len);
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  static bool inited;
  if (!inited) {
    gst_init (NULL, NULL);
    GST_ELEMENT_REGISTER (pointsetparse, NULL);
    GST_ELEMENT_REGISTER (pointsetenc, NULL);
    inited = true;
  }
  if (size < 2)
    return 0;
  static const char *modes[3] = { "auto", "stream", "per-buffer" };
  static const int dims[3] = { 0, 2, 3 };
  static const char *formats[4] = { "auto", "csv", "ply", "vtk" };
  int mode = data[0] % 3, dim = dims[(data[0] / 3) % 3];
  int format = (data[0] / 9) % 4;
  uint32_t rng = data[1] * 2654435761u + 1;
  data += 2;
  size -= 2;

  char launch[256];
  snprintf (launch, sizeof launch, "pointsetparse mode=%s dimensions=%d format=%s ! "
      "pointsetenc", modes[mode], dim, formats[format]);
  GstHarness *h = gst_harness_new_parse (launch);
  FUZZ_ASSERT (h != NULL, "harness");
  gst_harness_set_src_caps_str (h, "text/plain");
  /* the harness' source answers no BYTES duration and is no multi-file source: auto
   * resolves to stream (read to EOS) */
  bool per_buffer = mode == 2;

  size_t off = 0;
  int chunks = 0;
  while (off < size && chunks < 64) {
    rng = rng * 1103515245u + 12345u;
    size_t len = 1 + (rng >> 16) % (size - off < 512 ? size - off : 512);
    if (chunks == 63)
      len = size - off;
    GstFlowReturn fr = gst_harness_push (h, buffer_of (data + off, len));
    if (per_buffer) {
      GrPointSet ps;
      char err[256];
      GrStatus st = gr_pointset_parse ((const char *) data + off, len, format, dim, &ps,
          err, sizeof err);
      if (st == GR_OK) {
        FUZZ_ASSERT (fr == GST_FLOW_OK, "chunk %d parses (%zu points) but push gave %s",
            chunks, ps.n, gst_flow_get_name (fr));
        GstBuffer *out = gst_harness_try_pull (h);
        FUZZ_ASSERT (out != NULL, "chunk %d: no output", chunks);
        check_output (out, &ps);
        gst_buffer_unref (out);
        gr_pointset_clear (&ps);
      } else {
        FUZZ_ASSERT (fr == GST_FLOW_ERROR, "chunk %d is malformed (%s) but push gave %s",
            chunks, err, gst_flow_get_name (fr));
        FUZZ_ASSERT (gst_harness_buffers_in_queue (h) == 0, "output for a bad chunk");
      }
    } else {
      FUZZ_ASSERT (fr == GST_FLOW_OK, "stream mode chunk %d: %s", chunks,
          gst_flow_get_name (fr));
    }
    off += len;
    chunks++;
  }
  gst_harness_push_event (h, gst_event_new_eos ());
  if (!per_buffer) {
    GrPointSet ps;
    char err[256];
    GrStatus st = gr_pointset_parse ((const char *) data, size, format, dim, &ps, err,
        sizeof err);
    GstBuffer *out = gst_harness_try_pull (h);
    if (st == GR_OK) {
      FUZZ_ASSERT (out != NULL, "stream parses (%zu points) but no output", ps.n);
      check_output (out, &ps);
      gr_pointset_clear (&ps);
    } else {
      FUZZ_ASSERT (out == NULL, "output for a malformed stream (%s)", err);
    }
    if (out)
      gst_buffer_unref (out);
  }
  FUZZ_ASSERT (gst_harness_buffers_in_queue (h) == 0, "extra output");
  gst_harness_teardown (h);
  return 0;
}
