/* GPU suite: CUDA memory (video/x-raw(memory:CUDAMemory)) through the georeg elements.
 *
 *  1. caps: cudaupload ! nmilocalize ! cudadownload negotiates CUDA memory on both pads
 *     of nmilocalize, and its frames are read on the device ("input-memory" =
 *     "cuda-device": the elements share one context, the primary one);
 *  2. results: per frame, the CUDA-memory pipeline gives bit-identical results (offset,
 *     score, second score, flags, valid pixels) to the system-memory pipeline, for NV12,
 *     I420, RGBA (alpha mask) and BGRA, with nodata and frame-scale < 1 and = 1;
 *  3. leaks: 1,000 frames through cudaupload ! nmilocalize ! cudadownload: device
 *     memory (cudaMemGetInfo) and host RSS after the run match those after a warm-up
 *     run of 100 frames.
 * Frames come from PNG crops of a synthetic control (multifilesrc ! pngdec), so
 * both pipelines decode the same bytes.
 * Exit 0 pass, 1 fail, 77 skip (no usable CUDA device, or no nvcodec plugin).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <gst/gst.h>

#include "gr_common.h"
#include "raster.h"
#include "synth.h"
#if GR_HAVE_CUDA && GR_HAVE_GST_CUDA
#include "frame_cuda.h"

#define CW 480
#define CH 360
#define FW 160
#define FH 120
#define NFRAMES 8

static gchar *tmpdir, *control_path;
static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf (stderr, "FAIL %s:%d: ", \
        __FILE__, __LINE__); fprintf (stderr, __VA_ARGS__); fputc ('\n', stderr); } } while (0)

typedef struct {
  double ox, oy, score, second;
  guint flags;
  guint64 valid;
  gchar input[16];
} Result;

static void
make_data (void)
{
  GrSynthControlParams p;
  GrSynthImage control;
  char err[256];
  gr_synth_control_params_init (&p);
  p.width = CW;
  p.height = CH;
  p.depth = 8;
  p.seed = 11;
  tmpdir = g_dir_make_tmp ("georeg-cudamem-XXXXXX", NULL);
  control_path = g_build_filename (tmpdir, "control.png", NULL);
  if (gr_synth_control_generate (&p, &control, err, sizeof err) != GR_OK ||
      gr_synth_image_write_png (control_path, &control, err, sizeof err) != GR_OK)
    g_error ("control: %s", err);
  /* frames: gray crops along a diagonal, some pixels 0 (nodata) */
  GrPlaneF l = gr_synth_image_plane (&control, 0);
  guint8 *pix = g_malloc (FW * FH);
  for (int i = 0; i < NFRAMES; i++) {
    const int x0 = 20 + i * 37, y0 = 15 + i * 25;
    for (int v = 0; v < FH; v++)
      for (int u = 0; u < FW; u++) {
        float val = floorf (l.data[(size_t) (y0 + v) * CW + x0 + u] + 0.5f);
        pix[v * FW + u] = (u + v) % 53 == 0 ? 0 : (guint8) CLAMP (val, 1, 255);
      }
    gchar *f = g_strdup_printf ("%s/f%03d.png", tmpdir, i);
    if (gr_png_write_gray8 (f, pix, FW, FH, FW, err, sizeof err) != GR_OK)
      g_error ("frame: %s", err);
    g_free (f);
  }
  g_free (pix);
  gr_synth_image_free (&control);
}

/* Runs a pipeline to EOS, collecting the nmilocalize messages; returns their number
 * (-1 on error).  caps_cuda (may be NULL): whether nmilocalize's sink caps had CUDA
 * memory. */
static int
run (const gchar * desc, Result * res, int max, gboolean * caps_cuda)
{
  GError *e = NULL;
  GstElement *pipe = gst_parse_launch (desc, &e);
  if (!pipe) {
    fprintf (stderr, "parse: %s\n", e ? e->message : "?");
    g_clear_error (&e);
    return -1;
  }
  GstBus *bus = gst_element_get_bus (pipe);
  int n = 0;
  gboolean ok = TRUE;
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  for (;;) {
    GstMessage *m = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT);
    if (!m) {
      fprintf (stderr, "timeout: %s\n", desc);
      ok = FALSE;
      break;
    }
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
      GError *err = NULL;
      gchar *dbg = NULL;
      gst_message_parse_error (m, &err, &dbg);
      fprintf (stderr, "error: %s (%s)\n  in %s\n", err->message, dbg ? dbg : "", desc);
      g_clear_error (&err);
      g_free (dbg);
      gst_message_unref (m);
      ok = FALSE;
      break;
    }
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS) {
      gst_message_unref (m);
      break;
    }
    if (gst_message_has_name (m, "nmilocalize")) {
      const GstStructure *s = gst_message_get_structure (m);
      if (res && n < max) {
        Result *r = &res[n];
        memset (r, 0, sizeof *r);
        gst_structure_get_double (s, "offset-x", &r->ox);
        gst_structure_get_double (s, "offset-y", &r->oy);
        gst_structure_get_double (s, "score", &r->score);
        gst_structure_get_double (s, "second-score", &r->second);
        gst_structure_get_uint (s, "flags", &r->flags);
        gst_structure_get_uint64 (s, "valid-pixels", &r->valid);
        const gchar *in = gst_structure_get_string (s, "input-memory");
        g_strlcpy (r->input, in ? in : "?", sizeof r->input);
      }
      if (n == 0 && caps_cuda) {
        GstElement *el = gst_bin_get_by_name (GST_BIN (pipe), "loc");
        GstPad *pad = el ? gst_element_get_static_pad (el, "sink") : NULL;
        GstCaps *caps = pad ? gst_pad_get_current_caps (pad) : NULL;
        *caps_cuda = caps && gst_caps_features_contains (gst_caps_get_features (caps, 0),
            "memory:CUDAMemory");
        if (caps)
          gst_caps_unref (caps);
        if (pad)
          gst_object_unref (pad);
        if (el)
          gst_object_unref (el);
      }
      n++;
    }
    gst_message_unref (m);
  }
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  return ok ? n : -1;
}

static gchar *
source (int nframes, const gchar * fmt)
{
  return g_strdup_printf ("multifilesrc location=%s/f%%03d.png index=0 stop-index=%d "
      "caps=image/png,framerate=10/1 ! pngdec ! videoconvert ! video/x-raw,format=%s",
      tmpdir, nframes - 1, fmt);
}

static void
compare (const gchar * fmt, const gchar * props)
{
  Result a[NFRAMES], b[NFRAMES];
  gchar *src = source (NFRAMES, fmt);
  gchar *loc = g_strdup_printf ("nmilocalize name=loc control-location=%s backend=cuda %s",
      control_path, props);
  gchar *sys = g_strdup_printf ("%s ! %s ! fakesink", src, loc);
  gchar *cuda = g_strdup_printf ("%s ! cudaupload ! video/x-raw(memory:CUDAMemory) ! %s ! "
      "cudadownload ! video/x-raw ! fakesink", src, loc);
  gboolean caps_sys = TRUE, caps_cuda = FALSE;
  const int na = run (sys, a, NFRAMES, &caps_sys);
  const int nb = run (cuda, b, NFRAMES, &caps_cuda);
  CHECK (na == NFRAMES && nb == NFRAMES, "%s %s: %d and %d results", fmt, props, na, nb);
  CHECK (!caps_sys && caps_cuda, "%s %s: caps system %d, CUDA %d", fmt, props, caps_sys,
      caps_cuda);
  int same = 0;
  for (int i = 0; i < MIN (na, nb); i++) {
    CHECK (strcmp (a[i].input, "system") == 0 && strcmp (b[i].input, "cuda-device") == 0,
        "%s %s frame %d: input %s / %s", fmt, props, i, a[i].input, b[i].input);
    const gboolean eq = a[i].ox == b[i].ox && a[i].oy == b[i].oy &&
        memcmp (&a[i].score, &b[i].score, sizeof (double)) == 0 &&
        memcmp (&a[i].second, &b[i].second, sizeof (double)) == 0 &&
        a[i].flags == b[i].flags && a[i].valid == b[i].valid;
    CHECK (eq, "%s %s frame %d: system (%g, %g) %.17g %.17g 0x%x %" G_GUINT64_FORMAT
        " vs CUDA (%g, %g) %.17g %.17g 0x%x %" G_GUINT64_FORMAT, fmt, props, i, a[i].ox,
        a[i].oy, a[i].score, a[i].second, a[i].flags, a[i].valid, b[i].ox, b[i].oy,
        b[i].score, b[i].second, b[i].flags, b[i].valid);
    same += eq;
  }
  printf ("%-5s %-40s %d/%d frames identical (first: offset %g,%g score %.6f, %s)\n",
      fmt, props, same, NFRAMES, nb > 0 ? b[0].ox : -1, nb > 0 ? b[0].oy : -1,
      nb > 0 ? b[0].score : 0, nb > 0 ? b[0].input : "-");
  g_free (src);
  g_free (loc);
  g_free (sys);
  g_free (cuda);
}

static long
rss_kib (void)
{
  long kib = -1;
  FILE *f = fopen ("/proc/self/status", "r");
  char line[256];
  while (f && fgets (line, sizeof line, f))
    if (sscanf (line, "VmRSS: %ld", &kib) == 1)
      break;
  if (f)
    fclose (f);
  return kib;
}

static void
leaks (void)
{
  gchar *d = g_strdup_printf ("videotestsrc num-buffers=%%d pattern=ball ! "
      "video/x-raw,format=NV12,width=%d,height=%d ! cudaupload ! nmilocalize "
      "control-location=%s control-scale=0.5 frame-scale=0.5 post-messages=false ! "
      "cudadownload ! fakesink", FW * 2, FH * 2, control_path);
  gchar *d100 = g_strdup_printf (d, 100), *d1000 = g_strdup_printf (d, 1000);
  size_t f0 = 0, f1 = 0, tot = 0;
  run (d100, NULL, 0, NULL);
  run (d100, NULL, 0, NULL);
  gr_cuda_mem_info (0, &f0, &tot);
  const long r0 = rss_kib ();
  const gint64 t0 = g_get_monotonic_time ();
  const int n = run (d1000, NULL, 0, NULL);
  const double secs = (g_get_monotonic_time () - t0) / 1e6;
  gr_cuda_mem_info (0, &f1, &tot);
  const long r1 = rss_kib ();
  const double dgpu = ((double) f0 - (double) f1) / 1048576.0;
  printf ("leaks: 1000 frames (%.1f s): GPU memory used +%.2f MiB, RSS %+ld KiB\n", secs,
      dgpu, r1 - r0);
  CHECK (n == 0, "the 1000-frame run failed");
  CHECK (dgpu < 1.0, "GPU memory grew by %.2f MiB over 1000 frames", dgpu);
  CHECK (r1 - r0 < 4096, "RSS grew by %ld KiB over 1000 frames", r1 - r0);
  g_free (d);
  g_free (d100);
  g_free (d1000);
}

int
main (int argc, char **argv)
{
  if (gr_cuda_device_count () <= 0) {
    printf ("SKIP: no usable CUDA device\n");
    return 77;
  }
  /* the test environment isolates the registry: add the system plugins (nvcodec) */
  const gchar *sys = g_getenv ("GST_PLUGIN_SYSTEM_PATH");
  if (sys && *sys) {
    const gchar *pp = g_getenv ("GST_PLUGIN_PATH_1_0");
    gchar *both = g_strjoin (":", pp ? pp : "", sys, NULL);
    g_setenv ("GST_PLUGIN_PATH_1_0", both, TRUE);
    g_free (both);
  }
  gst_init (&argc, &argv);
  const gchar *need[] = { "cudaupload", "cudadownload", "nmilocalize", "pngdec",
    "multifilesrc", "videoconvert"
  };
  for (guint i = 0; i < G_N_ELEMENTS (need); i++) {
    GstElementFactory *f = gst_element_factory_find (need[i]);
    if (!f) {
      printf ("SKIP: no %s element (nvcodec needs a CUDA driver)\n", need[i]);
      return 77;
    }
    gst_object_unref (f);
  }
  make_data ();
  compare ("NV12", "frame-scale=0.5 control-scale=0.5 nodata=0");
  compare ("I420", "frame-scale=1.0 control-scale=1.0");
  compare ("RGBA", "frame-scale=0.35 control-scale=0.35");
  compare ("BGRA", "frame-scale=0.5 control-scale=0.5 nodata=40 bins=min-max");
  leaks ();
  printf ("%s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}

#else

int
main (void)
{
  printf ("SKIP: built without CUDA or without gstreamer-cuda-1.0\n");
  return 77;
}
#endif
