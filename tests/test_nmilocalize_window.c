/* Issue 18 through the elements: `nmilocalize ! nmiregister` over a control far larger
 * than the decoding budget, read in windows around each frame's pose prior, against
 * the same frames registered on an in-memory crop of the same area.
 *
 * The control: a procedural 768 x 512 control (UTM 17N, 0.2 m), written as 256 px
 * GeoTIFF tiles placed at pixel (98304, 98304) of a VRT of 200,000 x 200,000 px
 * (virtual: GDALBuildVRT with -te; 40 G pixels, 160 GB as floats), and the same
 * control as one GeoTIFF (the crop).  A flight of frames (240 x 180, heading 30
 * degrees, pitch and roll a few degrees, a tone curve and noise) moving across it, each
 * with a pose meta (position 10 m, yaw 10 degrees, height 10 %, intrinsics).
 * Required:
 *  - on the VRT the elements run windowed (control-mode=auto, the VRT over
 *    control-budget) and every frame's nmiregister transform equals the crop's, moved
 *    by the crop's offset, to GEOREG_WINDOW_TOL px RMS over the frame (default 0.25: nmilocalize
 *    takes its grey levels on the window it searches, so its coarse result differs
 *    a little from the crop's),
 *    and the map coordinates agree; both are measured against the truth too;
 *  - nmiregister alone, from the same coarse results on the frames: the transforms
 *    agree to 1e-6 px (the window is the crop's pixels, bit for bit);
 *  - the peak resident memory of the whole test stays under 600 MiB;
 *  - a frame without a prior on the VRT: flagged PRIOR_NEEDED by both elements, a
 *    warning that says a prior is needed, no error, and the next frame registers;
 *  - the hostile 30000 x 30000 PNG (110 KB, 3.6 GB as floats) refused at start with
 *    RESOURCE/READ naming the budget, in every control-mode, in well under a second.
 * Printed: first-frame latency and the time per frame of both pipelines (a shared CPU
 * machine: upper bounds).  Environment: GEOREG_WINDOW_FRAMES (chain, default 2), GEOREG_WINDOW_REGISTER_FRAMES (default 4),
 * GEOREG_WINDOW_RSS_MIB (peak RSS bound, 600), GEOREG_WINDOW_W/H (frame size), GEOREG_WINDOW_SCALE (control px per frame px, 1),
 * GEOREG_WINDOW_CONTROL_W/H (the procedural control), GEOREG_TEST_BACKEND (cpu|cuda), GEOREG_WINDOW_BIG
 * (VRT side, default 200000), GEOREG_WINDOW_TOL, GEOREG_WINDOW_SKIP_CROP=1 (only
 * the windowed pipeline: the GPU flight), GEOREG_WINDOW_OVERVIEWS=1 (the tiles with
 * overviews 2-16, so the VRT has them), GEOREG_WINDOW_ONLY (a comma list of frame
 * numbers: only those frames of the flight are made and run, to look at a few frames
 * of a long flight; the counts then cover them), GEOREG_TEST_VERBOSE.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <gst/gst.h>
#include <glib/gstdio.h>
#include <gst/check/gstharness.h>

#include "test_check.h"

#if !GR_HAVE_GDAL
int
main (void)
{
  printf ("SKIP: built without GDAL (windowed controls need it)\n");
  return 77;
}
#else
#include <gdal.h>
#include <gdal_utils.h>
#include <ogr_srs_api.h>
#include <cpl_string.h>

#include "camera.h"
#include "cuda_util.h"
#if GR_HAVE_CUDA
#include "frame_cuda.h"     /* gr_cuda_mem_info */
#endif
#include "fit.h"
#include "geo.h"
#include "georeg-meta.h"
#include "georeg-pose-meta.h"
#include "nmiregister-meta.h"
#include "raster.h"
#include "synth.h"
#include "flight_truth.h"

static int W = 240, H = 180;
#define OFF 98304               /* the control's pixel offset in the VRT (a tile multiple) */
#define TILE 256

static double
env_double (const char *name, double dflt)
{
  const char *v = g_getenv (name);
  return v && *v ? atof (v) : dflt;
}

/* One GeoTIFF of the w x h area of plane p at (x0, y0), 8-bit, geotransform g, UTM 17N. */
static gboolean
write_tif (const char *path, const GrPlaneF * p, int x0, int y0, int w, int h,
    const double g[6], const char *wkt)
{
  GDALDriverH drv = GDALGetDriverByName ("GTiff");
  char **opts = CSLSetNameValue (NULL, "TILED", "YES");
  GDALDatasetH ds = GDALCreate (drv, path, w, h, 1, GDT_Byte, opts);
  CSLDestroy (opts);
  if (!ds)
    return FALSE;
  GDALSetGeoTransform (ds, (double *) g);
  GDALSetProjection (ds, wkt);
  guint8 *row = g_malloc (w);
  CPLErr e = CE_None;
  for (int y = 0; y < h && e == CE_None; y++) {
    for (int x = 0; x < w; x++) {
      const float v = p->data[(gsize) (y0 + y) * p->stride + x0 + x];
      row[x] = (guint8) CLAMP (lrintf (v), 1, 255);     /* 0: the VRT's nodata */
    }
    e = GDALRasterIO (GDALGetRasterBand (ds, 1), GF_Write, 0, y, w, 1, row, w, 1,
        GDT_Byte, 0, 0);
  }
  g_free (row);
  GDALClose (ds);
  return e == CE_None;
}

static void
set_value (GstGeoregPoseValue * v, double value, double sigma)
{
  v->value = value;
  v->sigma = sigma;
  v->have = TRUE;
}

/* The synthesized camera's pose as an autopilot would give it, with errors from rng
 * (as test_nmilocalize_pose's "full" prior): position 10 m, yaw 10 degrees, height
 * 10 %, pitch and roll 2 degrees, the intrinsics. */
static void
attach_pose (GstBuffer * buf, const GrSynthCamera * cam, const GrGeoRef * g,
    const double geo[6], GrSynthRng * rng)
{
  GrCamera gc;
  gr_camera_init_focal (&gc, W, H, cam->focal, W);
  const GrCameraPose cp = { cam->heading_deg, cam->pitch_deg, -cam->roll_deg,
    cam->scale * cam->focal * geo[1]
  };
  double hg[9], de, dn;
  gr_camera_ground_homography (&gc, &cp, hg);
  gr_fit_apply (hg, gc.cx, gc.cy, &de, &dn);
  double mx = geo[0] + (cam->aim_x + 0.5) * geo[1] - de;
  double my = geo[3] + (cam->aim_y + 0.5) * geo[5] - dn;
  mx += 10.0 / G_SQRT2 * gr_synth_rng_gauss (rng);
  my += 10.0 / G_SQRT2 * gr_synth_rng_gauss (rng);
  gr_georef_map_to_lonlat (g, &mx, &my, 1);
  GstGeoregPoseMeta *m = gst_buffer_add_georeg_pose_meta (buf);
  m->sources = GST_GEOREG_POSE_SOURCE_APP;
  set_value (&m->latitude, my, 10.0);
  set_value (&m->longitude, mx, 10.0);
  set_value (&m->height_agl, cp.height_m * (1.0 + 0.1 * gr_synth_rng_gauss (rng)),
      0.1 * cp.height_m);
  set_value (&m->camera_yaw, fmod (cp.yaw_deg + 10.0 * gr_synth_rng_gauss (rng) + 720.0,
          360.0), 10.0);
  set_value (&m->camera_pitch, cp.pitch_deg + 2.0 * gr_synth_rng_gauss (rng), 2.0);
  set_value (&m->camera_roll, cp.roll_deg + 2.0 * gr_synth_rng_gauss (rng), 2.0);
  m->have_intrinsics = TRUE;
  m->image_width = W;
  m->image_height = H;
  m->fx = m->fy = gc.fx;
  m->cx = gc.cx;
  m->cy = gc.cy;
}

/* Frame f of the flight (the same buffer every time it is asked for) and its true
 * frame -> crop homography. */
static GstBuffer *
make_frame (int f, int n, const GrPlaneF * src, const GrGeoRef * g, const double geo[6],
    gboolean pose, double truth[9]);

/* Frame f with a coarse result already attached, as nmilocalize would give it: the
 * truth moved by a few pixels and turned by a degree, then by `offset` control pixels
 * (the crop's place in the VRT, or 0). */
static GstBuffer *
make_coarse_frame (int f, int n, const GrPlaneF * src, const GrGeoRef * g,
    const double geo[6], double offset)
{
  double truth[9], h[9], t[9];
  GstBuffer *buf = make_frame (f, n, src, g, geo, FALSE, truth);
  if (!buf)
    return NULL;
  const double a = G_PI / 180.0 * (f % 2 ? 1.0 : -1.0);
  const double cx = W / 2.0, cy = H / 2.0;
  /* about the frame's centre, then 3 px right and 2 down, then the offset */
  const double r[9] = { cos (a), -sin (a), cx - cos (a) * cx + sin (a) * cy,
    sin (a), cos (a), cy - sin (a) * cx - cos (a) * cy, 0, 0, 1
  };
  const double m[9] = { 1, 0, 3.0 + offset, 0, 1, 2.0 + offset, 0, 0, 1 };
  gr_mat3_mul (truth, r, t);
  gr_mat3_mul (m, t, h);
  GstNmiLocalizeMeta *lm = gst_buffer_add_nmi_localize_meta (buf);
  lm->frame_scale = lm->control_scale = 1.0;
  gst_nmi_localize_meta_set_transform (lm, h, W, H);
  lm->control_x = h[2];
  lm->control_y = h[5];
  return buf;
}

/* The camera of frame f of the flight (rng: its stream, for the pose's errors next). */
static void
flight_camera (int f, int n, const GrPlaneF * src, GrSynthCamera * cam, GrSynthRng * rng)
{
  gr_synth_rng_init (rng, 1800 + f);
  memset (cam, 0, sizeof *cam);
  const double t = n > 1 ? (double) f / (n - 1) : 0.0;
  cam->heading_deg = 30.0 + 4.0 * gr_synth_rng_gauss (rng);
  cam->scale = env_double ("GEOREG_WINDOW_SCALE", 1.0) * (1.0 + 0.05 *
      gr_synth_rng_gauss (rng));
  cam->pitch_deg = 3.0 * gr_synth_rng_gauss (rng);
  cam->roll_deg = 3.0 * gr_synth_rng_gauss (rng);
  cam->focal = 1.1 * W;
  /* from near the top-left to near the bottom-right, the frame inside the control */
  const double edge = 0.55 * hypot (W, H) * cam->scale + 20.0;
  cam->aim_x = edge + t * (src->width - 2.0 * edge);
  cam->aim_y = edge + t * (src->height - 2.0 * edge);
}

/* The true frame -> crop homography of frame f (pixel corners). */
static void
flight_truth (int f, int n, const GrPlaneF * src, double truth[9])
{
  GrSynthCamera cam;
  GrSynthRng rng;
  double hp[9];
  flight_camera (f, n, src, &cam, &rng);
  gr_synth_camera_homography (&cam, W, H, hp);
  to_corner (hp, truth);
}

static GstBuffer *
make_frame (int f, int n, const GrPlaneF * src, const GrGeoRef * g, const double geo[6],
    gboolean pose, double truth[9])
{
  GrSynthRng rng;
  GrSynthCamera cam;
  flight_camera (f, n, src, &cam, &rng);
  GrPlaneF cut;
  if (!flight_cut_on_control (src, &cam, W, H, &cut))
    return NULL;
  flight_tone_and_noise (&cut, f);
  double hp[9];
  gr_synth_camera_homography (&cam, W, H, hp);
  to_corner (hp, truth);
  GstBuffer *buf = gray8_buffer_wh (&cut, W, H);
  gr_synth_plane_free (&cut);
  GST_BUFFER_PTS (buf) = f * GST_SECOND / 10;
  if (pose)
    attach_pose (buf, &cam, g, geo, &rng);
  return buf;
}

typedef struct {
  gboolean ok;
  double h[9];                  /* nmiregister frame -> control */
  double map[2];                /* its centre on the map */
  double coarse[9];             /* nmilocalize's */
  unsigned lflags, rflags;
} FrameResult;

/* The flight's frames, made ahead in batches by worker threads while the pipeline
 * waits (a 4K frame takes longer to synthesize than to register: made one by one
 * between the pushes, the 200-frame 4K flight did not end in 150 s).  The pipeline
 * runs alone between batches, so its times are its own.  The pose meta is attached
 * on the calling thread (the georeference's PROJ transformation is not to be shared
 * between threads), from the frame's own random stream as make_frame does. */
typedef struct {
  int n;                        /* frames of the flight */
  const GrPlaneF *src;
  const GrGeoRef *g;
  const double *geo;
  double coarse_offset;         /* >= 0: make_coarse_frame */
  int base, count;              /* this batch: frames base .. base + count - 1 */
  gint next;                    /* the next one to make (atomic) */
  GstBuffer **buf;              /* the batch's frames, NULL: off the control */
} Feed;

/* GEOREG_WINDOW_ONLY: is frame f one to run (all when unset) */
static gboolean
frame_selected (int f)
{
  const char *only = g_getenv ("GEOREG_WINDOW_ONLY");
  if (!only || !*only)
    return TRUE;
  gchar **v = g_strsplit (only, ",", -1);
  gboolean in = FALSE;
  for (int i = 0; v[i] && !in; i++)
    in = atoi (v[i]) == f;
  g_strfreev (v);
  return in;
}

static gpointer
feed_worker (gpointer data)
{
  Feed *fd = data;
#ifdef _OPENMP
  omp_set_num_threads (1);      /* the workers are the parallelism */
#endif
  for (;;) {
    const int i = g_atomic_int_add (&fd->next, 1);
    if (i >= fd->count)
      return NULL;
    const int f = fd->base + i;
    double truth[9];
    if (!frame_selected (f)) {
      fd->buf[i] = NULL;
      continue;
    }
    fd->buf[i] = fd->coarse_offset >= 0 ? make_coarse_frame (f, fd->n, fd->src, fd->g,
        fd->geo, fd->coarse_offset) : make_frame (f, fd->n, fd->src, fd->g, fd->geo,
        FALSE, truth);
  }
}

/* Makes frames base .. base + count - 1 (GEOREG_WINDOW_GEN_THREADS workers, default
 * up to 6: each holds a float frame while it works). */
static void
feed_batch (Feed * fd, int base, int count)
{
  int nt = (int) env_double ("GEOREG_WINDOW_GEN_THREADS",
      MIN (6, (int) g_get_num_processors ()));
  nt = CLAMP (nt, 1, count);
  fd->base = base;
  fd->count = count;
  g_atomic_int_set (&fd->next, 0);
  GThread **t = g_new (GThread *, nt);
  for (int i = 0; i < nt; i++)
    t[i] = g_thread_new ("frames", feed_worker, fd);
  for (int i = 0; i < nt; i++)
    g_thread_join (t[i]);
  g_free (t);
  for (int i = 0; i < count && fd->coarse_offset < 0; i++)
    if (fd->buf[i]) {
      GrSynthCamera cam;
      GrSynthRng rng;
      flight_camera (base + i, fd->n, fd->src, &cam, &rng);
      attach_pose (fd->buf[i], &cam, fd->g, fd->geo, &rng);
    }
}

static int
cmp_double (const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* GPU memory in use on device 0 (cudaMemGetInfo: the whole device), MiB; -1 without
 * CUDA. */
/* CPU time of the process (every thread), ms: on a shared machine a steadier
 * measure of the work than the wall clock */
static double
cpu_ms (void)
{
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
      (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/* CPU time of the calling thread, ms: the harness runs the chain in the thread that
 * pushes, so this is the elements' own work (without OpenMP's helpers and the
 * control's prefetch worker) */
static double
thread_cpu_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double
gpu_used_mib (void)
{
#if GR_HAVE_CUDA
  size_t free_b = 0, total_b = 0;
  if (gr_cuda_mem_info (0, &free_b, &total_b) == GR_OK)
    return (double) (total_b - free_b) / (1024.0 * 1024.0);
#endif
  return -1.0;
}

/* The flight through `nmilocalize ! nmiregister` on control `path`; results per frame,
 * the first frame's latency and the mean of the others (ms). */
static void
fly (const char *path, const char *extra, int n, const GrPlaneF * src, const GrGeoRef * g,
    const double geo[6], double coarse_offset, FrameResult * out, double *first_ms,
    double *rest_ms)
{
  const gchar *be = g_getenv ("GEOREG_TEST_BACKEND") ? g_getenv ("GEOREG_TEST_BACKEND")
      : "cpu";
  /* coarse_offset >= 0: nmiregister alone, from a coarse meta on the frames */
  gchar *loc = coarse_offset >= 0 ? g_strdup ("") :
      g_strdup_printf ("nmilocalize control-location=\"%s\" backend=%s %s ! ", path, be,
      extra);
  gchar *desc = g_strdup_printf ("%snmiregister control-location=\"%s\" backend=%s "
      "bins=fixed bin-low=0 bin-high=255 %s", loc, path, be, extra);
  g_free (loc);
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  gchar *caps = g_strdup_printf ("video/x-raw,format=GRAY8,width=%d,height=%d,"
      "framerate=10/1", W, H);
  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  *first_ms = *rest_ms = 0.0;
  const int batch = MAX (1, (int) env_double ("GEOREG_WINDOW_BATCH", 16));
  Feed fd = { n, src, g, geo, coarse_offset, 0, 0, 0, g_new0 (GstBuffer *, batch) };
  const double gpu0 = gpu_used_mib ();
  double gpu_peak = gpu0, worst_ms = 0.0, cpu_rest = 0.0, thread_rest = 0.0;
  /* each frame's wall time: the median says what a frame costs, the spikes what the
   * windows' slides cost (a mean alone mixes the two) */
  double *frame_ms = g_new0 (double, n);
  for (int f = 0; f < n; f++) {
    if (f % batch == 0)
      feed_batch (&fd, f, MIN (batch, n - f));
    GstBuffer *in = fd.buf[f % batch];
    fd.buf[f % batch] = NULL;
    memset (&out[f], 0, sizeof out[f]);
    if (!in)
      continue;
    const gint64 t0 = g_get_monotonic_time ();
    const double c0 = cpu_ms (), tc0 = thread_cpu_ms ();
    GstBuffer *b = gst_harness_push_and_pull (h, in);
    const double ms = (g_get_monotonic_time () - t0) / 1000.0;
    frame_ms[f] = ms;
    if (g_getenv ("GEOREG_WINDOW_FRAME_MS"))
      printf ("    frame %d: %.1f ms\n", f, ms);       /* numbered as below, from 0 */
    if (f > 0) {
      cpu_rest += (cpu_ms () - c0) / (n - 1);
      thread_rest += (thread_cpu_ms () - tc0) / (n - 1);
    }
    if (f == 0)
      *first_ms = ms;
    else
      *rest_ms += ms / (n - 1);
    if (f > 0)
      worst_ms = MAX (worst_ms, ms);
    if (gpu0 >= 0)
      gpu_peak = MAX (gpu_peak, gpu_used_mib ());
    CHECK (b != NULL, "%s: frame %d: no output", path, f);
    if (!b)
      continue;
    GstNmiLocalizeMeta *lm = gst_buffer_get_nmi_localize_meta (b);
    GstNmiRegisterMeta *rm = gst_buffer_get_nmi_register_meta (b);
    /* the flags of every frame, for the report of one that differs */
    out[f].lflags = lm ? lm->flags : 0u;
    out[f].rflags = rm ? rm->flags : 0u;
    if (lm && rm && rm->has_transform && !(rm->flags & FLIGHT_DOUBTFUL_REGISTER_FLAGS)) {
      out[f].ok = TRUE;
      memcpy (out[f].h, rm->frame_to_control, sizeof out[f].h);
      out[f].map[0] = rm->center_map[0];
      out[f].map[1] = rm->center_map[1];
      memcpy (out[f].coarse, lm->frame_to_control, sizeof out[f].coarse);
    }
    gst_buffer_unref (b);
  }
  g_free (fd.buf);
  gst_harness_teardown (h);
  if (n > 1) {
    printf ("  %s: worst frame after the first %.1f ms; CPU time a frame after the "
        "first %.1f ms (all threads), %.1f ms (the streaming thread)\n", path, worst_ms,
        cpu_rest, thread_rest);
    /* after the first: the median, and the frames over twice it with their share of
     * the total */
    const int m = n - 1;
    double *sorted = g_memdup2 (frame_ms + 1, sizeof (double) * m);
    qsort (sorted, m, sizeof (double), cmp_double);
    const double median = sorted[m / 2];
    double spike_ms = 0.0, all_ms = 0.0;
    int spikes = 0;
    for (int f = 1; f < n; f++) {
      all_ms += frame_ms[f];
      if (frame_ms[f] > 2.0 * median) {
        spikes++;
        spike_ms += frame_ms[f];
      }
    }
    printf ("  %s: median frame after the first %.1f ms; %d frames over twice it "
        "(%.0f%% of the time)\n", path, median, spikes,
        all_ms > 0 ? 100.0 * spike_ms / all_ms : 0.0);
    g_free (sorted);
  }
  g_free (frame_ms);
  if (gpu0 >= 0)
    /* the device's whole use (cudaMemGetInfo): the context and every engine */
    printf ("  %s: GPU memory in use %.0f MiB before the flight, peak %.0f MiB "
        "(+%.0f MiB) while it ran, %.0f MiB after teardown\n", path, gpu0, gpu_peak,
        gpu_peak - gpu0, gpu_used_mib ());
}

/* The first error an element posts: frame == NULL: `desc` (one element) brought to
 * PAUSED; else `desc` in a harness fed the frame.  Its domain and text (g_free), NULL
 * when none; *ms: how long it took. */
static gchar *
first_error (const char *desc, GstBuffer * frame, GQuark * domain, double *ms)
{
  GstBus *bus = gst_bus_new ();
  GstHarness *h = NULL;
  GstElement *e = NULL;
  const gint64 t0 = g_get_monotonic_time ();
  if (frame) {
    h = gst_harness_new_parse (desc);
    gst_element_set_bus (h->element, bus);
    gchar *caps = g_strdup_printf ("video/x-raw,format=GRAY8,width=%d,height=%d,"
        "framerate=10/1", W, H);
    gst_harness_set_src_caps_str (h, caps);
    g_free (caps);
    gst_harness_push (h, frame);
  } else {
    e = gst_parse_launch (desc, NULL);
    gst_element_set_bus (e, bus);
    gst_element_set_state (e, GST_STATE_PAUSED);
  }
  *ms = (g_get_monotonic_time () - t0) / 1000.0;
  gchar *text = NULL;
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  if (msg) {
    GError *err = NULL;
    gchar *dbg = NULL;
    gst_message_parse_error (msg, &err, &dbg);
    *domain = err->domain;
    text = g_strdup_printf ("%s (%s)", err->message, dbg ? dbg : "");
    g_error_free (err);
    g_free (dbg);
    gst_message_unref (msg);
  }
  if (h) {
    gst_element_set_bus (h->element, NULL);
    gst_harness_teardown (h);
  } else {
    gst_element_set_state (e, GST_STATE_NULL);
    gst_element_set_bus (e, NULL);
    gst_object_unref (e);
  }
  gst_object_unref (bus);
  return text;
}

int
main (int argc, char **argv)
{
  setvbuf (stdout, NULL, _IOLBF, 0);
  gst_init (&argc, &argv);
  GDALAllRegister ();
  if (!g_strcmp0 (g_getenv ("GEOREG_TEST_BACKEND"), "cuda") &&
      gr_cuda_device_count () <= 0) {
    printf ("SKIP: GEOREG_TEST_BACKEND=cuda and no usable CUDA device\n");
    return 77;
  }
  W = (int) env_double ("GEOREG_WINDOW_W", 240);
  H = (int) env_double ("GEOREG_WINDOW_H", 180);
  const int n = (int) env_double ("GEOREG_WINDOW_FRAMES", 2);
  const int big = (int) env_double ("GEOREG_WINDOW_BIG", 200000);
  /* the whole chain: nmilocalize takes its grey levels on the window it searches (a
   * percentile of it), not on the crop, so its coarse result differs a little and
   * nmiregister converges from another start */
  const double tol = env_double ("GEOREG_WINDOW_TOL", 0.25);
  const gboolean verbose = g_getenv ("GEOREG_TEST_VERBOSE") != NULL;
  char e[512] = "";

  GrSynthControlParams cp;
  gr_synth_control_params_init (&cp);
  cp.width = (int) env_double ("GEOREG_WINDOW_CONTROL_W", 768);
  cp.height = (int) env_double ("GEOREG_WINDOW_CONTROL_H", 512);
  cp.width = (cp.width + TILE - 1) / TILE * TILE;
  cp.height = (cp.height + TILE - 1) / TILE * TILE;
  cp.seed = 1818;
  cp.depth = 8;
  GrSynthImage img;
  memset (&img, 0, sizeof img);
  CHECK (gr_synth_control_generate (&cp, &img, e, sizeof e) == GR_OK, "control: %s", e);
  const GrPlaneF ctl = gr_synth_image_plane (&img, 0);
  const GrPlaneF src = gr_synth_image_plane (&img, 1);
  const double px_m = 0.2;
  /* the crop: UTM 17N, its centre on the central meridian */
  const double geo[6] = { 500000.0 - 0.5 * ctl.width * px_m, px_m, 0.0,
    4570000.0 + 0.5 * ctl.height * px_m, 0.0, -px_m
  };
  GrGeoRef *g = NULL;
  CHECK (gr_georef_new (geo, "EPSG:32617", &g, e, sizeof e) == GR_OK, "georef: %s", e);
  OGRSpatialReferenceH srs = OSRNewSpatialReference (NULL);
  OSRImportFromEPSG (srs, 32617);
  char *wkt = NULL;
  OSRExportToWkt (srs, &wkt);

  gchar *dir = g_dir_make_tmp ("georeg-window-XXXXXX", NULL);
  gchar *crop = g_build_filename (dir, "crop.tif", NULL);
  CHECK (write_tif (crop, &ctl, 0, 0, ctl.width, ctl.height, geo, wkt), "crop.tif");
  /* the tiles, then the VRT of `big` px around them */
  const gboolean overviews = env_double ("GEOREG_WINDOW_OVERVIEWS", 0) != 0;
  const int nx = ctl.width / TILE, ny = ctl.height / TILE;
  char **tiles = g_new0 (char *, nx * ny + 1);
  for (int ty = 0, k = 0; ty < ny; ty++)
    for (int tx = 0; tx < nx; tx++, k++) {
      const double tg[6] = { geo[0] + tx * TILE * px_m, px_m, 0, geo[3] - ty * TILE * px_m,
        0, -px_m
      };
      gchar *name = g_strdup_printf ("tile_%d_%d.tif", ty, tx);
      tiles[k] = g_build_filename (dir, name, NULL);
      g_free (name);
      CHECK (write_tif (tiles[k], &ctl, tx * TILE, ty * TILE, TILE, TILE, tg, wkt),
          "tile %d", k);
      if (overviews) {
        /* what docs/controls.md asks of a control (gdaladdo -r average): the VRT
         * then has the tiles' overviews as its own, and nmilocalize cuts its windows
         * at the level its search needs */
        GDALDatasetH t = GDALOpen (tiles[k], GA_Update);
        int factors[] = { 2, 4, 8, 16 };
        CHECK (t && GDALBuildOverviews (t, "AVERAGE", 4, factors, 0, NULL, NULL,
                NULL) == CE_None, "tile %d: overviews", k);
        if (t)
          GDALClose (t);
      }
    }
  gchar *vrt_path = g_build_filename (dir, "big.vrt", NULL);
  char te[4][40];
  const double vx0 = geo[0] - OFF * px_m, vy1 = geo[3] + OFF * px_m;
  snprintf (te[0], sizeof te[0], "%.6f", vx0);
  snprintf (te[1], sizeof te[1], "%.6f", vy1 - big * px_m);
  snprintf (te[2], sizeof te[2], "%.6f", vx0 + big * px_m);
  snprintf (te[3], sizeof te[3], "%.6f", vy1);
  /* nodata 0 (which no tile holds): the VRT's area without tiles is off the control,
   * as around the crop */
  char *argv_vrt[] = { "-te", te[0], te[1], te[2], te[3], "-vrtnodata", "0", NULL };
  GDALBuildVRTOptions *vo = GDALBuildVRTOptionsNew (argv_vrt, NULL);
  int usage = 0;
  GDALDatasetH vrt = GDALBuildVRT (vrt_path, nx * ny, NULL, (const char *const *) tiles,
      vo, &usage);
  GDALBuildVRTOptionsFree (vo);
  CHECK (vrt && GDALGetRasterXSize (vrt) == big && GDALGetRasterYSize (vrt) == big,
      "a VRT of %d x %d", big, big);
  /* the tiles' overviews are the VRT's (GDAL's implicit VRT overviews: GDAL 3.6
   * shows the first of the four here, which is the level nmilocalize needs) */
  CHECK (!vrt || !overviews || GDALGetOverviewCount (GDALGetRasterBand (vrt, 1)) >= 1,
      "the VRT shows its tiles' overviews (%d)", vrt ?
      GDALGetOverviewCount (GDALGetRasterBand (vrt, 1)) : -1);
  if (vrt)
    GDALClose (vrt);
  printf ("control %d x %d at (%d, %d) of a %d x %d VRT over %d GeoTIFF tiles%s; "
      "%d frames of %d x %d\n", ctl.width, ctl.height, OFF, OFF, big, big, nx * ny,
      overviews ? " with overviews 2-16" : "", n, W, H);

  /* ---- the flight, windowed on the VRT and whole on the crop: the whole chain, then
   * nmiregister alone from the same coarse results */
  const gboolean skip_crop = g_getenv ("GEOREG_WINDOW_SKIP_CROP") != NULL;
  const int n_reg = (int) env_double ("GEOREG_WINDOW_REGISTER_FRAMES", 3);
  const double tol_reg = 1e-6;
  for (int pass = 0; pass < 2; pass++) {
    const gboolean chain = pass == 0;
    const int nf = chain ? n : n_reg;
    const double t = chain ? tol : tol_reg;
    const char *what = chain ? "nmilocalize ! nmiregister" : "nmiregister alone";
    if (nf <= 0)
      continue;
    FrameResult *rw = g_new0 (FrameResult, nf), *rc = g_new0 (FrameResult, nf);
    double first_w, rest_w, first_c = 0, rest_c = 0;
    fly (vrt_path, "", nf, &src, g, geo, chain ? -1.0 : OFF, rw, &first_w, &rest_w);
    if (!skip_crop)
      fly (crop, "control-mode=whole", nf, &src, g, geo, chain ? -1.0 : 0.0, rc,
          &first_c, &rest_c);
    int agree = 0, good_w = 0, placed = 0, ran = 0;
    double worst = 0.0, worst_map = 0.0;
    for (int f = 0; f < nf; f++) {
      if (!frame_selected (f))
        continue;
      ran++;
      double truth[9], tfull[9];
      flight_truth (f, nf, &src, truth);
      const double shift[9] = { 1, 0, OFF, 0, 1, OFF, 0, 0, 1 };
      gr_mat3_mul (shift, truth, tfull);
      const double err_w = rw[f].ok ? frame_rms_wh (rw[f].h, tfull, W, H) : INFINITY;
      good_w += err_w <= 0.5;
      placed += rw[f].ok;
      double d = 0.0, dm = 0.0, err_c = NAN;
      if (!skip_crop) {
        CHECK (rw[f].ok == rc[f].ok, "%s, frame %d: registered windowed %d (flags "
            "0x%x/0x%x), on the crop %d (flags 0x%x/0x%x)", what, f, rw[f].ok,
            rw[f].lflags, rw[f].rflags, rc[f].ok, rc[f].lflags, rc[f].rflags);
        if (rw[f].ok && rc[f].ok) {
          double cfull[9];
          gr_mat3_mul (shift, rc[f].h, cfull);
          d = frame_rms_wh (rw[f].h, cfull, W, H);
          dm = hypot (rw[f].map[0] - rc[f].map[0], rw[f].map[1] - rc[f].map[1]) / px_m;
          err_c = frame_rms_wh (rc[f].h, truth, W, H);
          worst = fmax (worst, d);
          worst_map = fmax (worst_map, dm);
          agree += d <= t && dm <= t;
        }
      }
      if (verbose || d > t || dm > t)
        printf ("  %s, frame %d: windowed %.3f px from the truth (flags 0x%x/0x%x), "
            "crop %.3f px; they differ by %.3g px (map centre %.3g px)\n", what, f,
            err_w, rw[f].lflags, rw[f].rflags, err_c, d, dm);
    }
    printf ("%s windowed on the VRT: %d of %d registered, %d within 0.5 px of the "
        "truth; first frame %.0f ms, then %.1f ms a frame\n", what, placed, ran, good_w,
        first_w, rest_w);
    if (!skip_crop) {
      printf ("%s whole on the crop: first frame %.0f ms, then %.1f ms a frame; %d of "
          "%d frames agree within %g px (worst %.3g px over the frame, %.3g px on the "
          "map)\n", what, first_c, rest_c, agree, ran, t, worst, worst_map);
      CHECK (agree == ran, "%s: %d of %d frames agree with the crop within %g px", what,
          agree, ran, t);
    }
    CHECK (placed * 10 >= ran * 8, "%s: registered %d of %d frames windowed", what,
        placed, ran);
    g_free (rw);
    g_free (rc);
  }

  /* ---- a frame without a prior on the VRT (issue 18 item 2): flagged PRIOR_NEEDED by
   * both elements with a warning on the bus, no error; the next frame, with its prior,
   * registers (the stream went on) */
  {
    double truth[9];
    GstBus *bus = gst_bus_new ();
    gchar *desc = g_strdup_printf ("nmilocalize control-location=\"%s\" ! nmiregister "
        "control-location=\"%s\" bins=fixed bin-low=0 bin-high=255", vrt_path,
        vrt_path);
    GstHarness *hn = gst_harness_new_parse (desc);
    g_free (desc);
    gst_element_set_bus (hn->element, bus);
    gchar *caps = g_strdup_printf ("video/x-raw,format=GRAY8,width=%d,height=%d,"
        "framerate=10/1", W, H);
    gst_harness_set_src_caps_str (hn, caps);
    g_free (caps);
    GstBuffer *b = gst_harness_push_and_pull (hn, make_frame (0, n, &src, g, geo, FALSE,
            truth));
    GstNmiLocalizeMeta *lm = b ? gst_buffer_get_nmi_localize_meta (b) : NULL;
    GstNmiRegisterMeta *rm = b ? gst_buffer_get_nmi_register_meta (b) : NULL;
    const unsigned want_l = GST_NMI_LOCALIZE_FLAG_PRIOR_NEEDED |
        GST_NMI_LOCALIZE_FLAG_NO_OVERLAP;
    CHECK (lm && (lm->flags & want_l) == want_l && !lm->has_prior_transform,
        "no prior on the VRT: nmilocalize flags 0x%x", lm ? lm->flags : 0u);
    CHECK (rm && (rm->flags & GST_NMI_REGISTER_FLAG_PRIOR_NEEDED) &&
        !rm->has_transform, "no prior on the VRT: nmiregister flags 0x%x",
        rm ? rm->flags : 0u);
    /* the metas live in the buffer: their flags are kept for the report below */
    const unsigned lflags = lm ? lm->flags : 0u, rflags = rm ? rm->flags : 0u;
    if (b)
      gst_buffer_unref (b);
    /* (pop_filtered drops what it does not match: both kinds at once) */
    gboolean err = FALSE;
    gchar *text = NULL;
    GstMessage *msg;
    while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR | GST_MESSAGE_WARNING))) {
      if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
        err = TRUE;
      } else if (!text) {
        GError *e2 = NULL;
        gst_message_parse_warning (msg, &e2, NULL);
        text = g_strdup (e2->message);
        g_error_free (e2);
      }
      gst_message_unref (msg);
    }
    printf ("no prior on the VRT: flags 0x%x / 0x%x; warning: %s\n", lflags, rflags,
        text ? text : "(none)");
    CHECK (!err, "no prior on the VRT: an error was posted");
    CHECK (text && strstr (text, "prior is needed"), "no prior on the VRT: a warning "
        "that says a prior is needed");
    g_free (text);
    GstBuffer *next = make_frame (0, n, &src, g, geo, TRUE, truth);
    b = next ? gst_harness_push_and_pull (hn, next) : NULL;
    rm = b ? gst_buffer_get_nmi_register_meta (b) : NULL;
    CHECK (rm && rm->has_transform && !(rm->flags & FLIGHT_DOUBTFUL_REGISTER_FLAGS),
        "the frame after the one without a prior: flags 0x%x", rm ? rm->flags : 0u);
    if (b)
      gst_buffer_unref (b);
    gst_element_set_bus (hn->element, NULL);
    gst_harness_teardown (hn);
    gst_object_unref (bus);
  }

  /* ---- the hostile PNG: refused against the budget, in every mode */
  const gchar *root = g_getenv ("GEOREG_SOURCE_ROOT");
  if (root) {
    gchar *png = g_build_filename (root, "tests", "fuzz", "corpus", "raster",
        "dos-png-gray1-30000x30000.png", NULL);
    const char *modes[] = { "auto", "whole", "windowed" };
    for (int i = 0; i < 3; i++) {
      GQuark dom = 0;
      double ms;
      gchar *desc = g_strdup_printf ("nmilocalize control-location=\"%s\" "
          "control-mode=%s", png, modes[i]);
      gchar *msg = first_error (desc, NULL, &dom, &ms);
      g_free (desc);
      printf ("hostile PNG, control-mode=%s: %.0f ms: %s\n", modes[i], ms,
          msg ? msg : "(no error)");
      CHECK (msg && dom == GST_RESOURCE_ERROR && strstr (msg, "decoding budget") &&
          ms < 2000.0,
          "the 30000 x 30000 PNG (control-mode=%s) refused at once: %s", modes[i],
          msg ? msg : "no error");
      g_free (msg);
    }
    g_free (png);
  } else {
    printf ("hostile PNG: skipped (GEOREG_SOURCE_ROOT is not set)\n");
  }

  for (int i = 0; tiles[i]; i++)
    g_unlink (tiles[i]);
  g_strfreev (tiles);
  g_unlink (vrt_path);
  g_unlink (crop);
  g_rmdir (dir);
  g_free (vrt_path);
  g_free (crop);
  g_free (dir);
  CPLFree (wkt);
  OSRDestroySpatialReference (srs);
  gr_georef_free (g);
  gr_synth_image_free (&img);

  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  printf ("peak resident memory: %.1f MiB\n", ru.ru_maxrss / 1024.0);
  /* the small default flight's bound; the 4K flight of tools/gpu.sh flight holds the
   * issue's 2 GB (GEOREG_WINDOW_RSS_MIB) */
#if defined(__SANITIZE_ADDRESS__)
  const long limit_mib = (long) env_double ("GEOREG_WINDOW_RSS_MIB", 1500);
#else
  const long limit_mib = (long) env_double ("GEOREG_WINDOW_RSS_MIB", 600);
#endif
  CHECK (ru.ru_maxrss < limit_mib * 1024, "peak resident memory %.1f MiB (limit %ld)",
      ru.ru_maxrss / 1024.0, limit_mib);
  return CHECK_DONE ();
}
#endif
