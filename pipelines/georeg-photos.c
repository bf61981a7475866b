/* georeg-photos: registers a set of drone photos onto a georeferenced control image and
 * writes what a GIS opens:
 *
 *   georeg-photos --control ORTHO --out DIR PHOTO...
 *
 * DIR/footprints.geojson (WGS84 footprints, one Feature per photo), DIR/footprints.csv
 * and DIR/<photo>.tif (each registered photo resampled onto the control's grid).  Each
 * photo is decoded by its own small pipeline
 *
 *   filesrc ! typefind ! georegtelemetry ! queue ! decodebin ! videoconvert ! appsink
 *
 * georegtelemetry reads the photo's own EXIF/XMP (GPS position, heights, gimbal and
 * flight angles, focal length) into a GstGeoregPoseMeta before the decoder, which
 * keeps it on the decoded frame (typefind gives it the image/jpeg caps it looks for).
 * A photo that cannot be read is reported and skipped.  A photo finer than the control
 * (its ground sample distance from the pose) is first area-averaged down to about the
 * control's ground resolution, its pose meta's intrinsics with it (--ground-elevation and
 * --takeoff-elevation give the height above ground where the altitudes are not above
 * it).  The decoded photos, pose meta and all, go one at a time through
 *
 *   appsrc ! nmilocalize ! nmiregister ! georegexport ! fakesink
 *
 * so the results are the elements' own, and nmilocalize takes the pose as its prior
 * where it reads one (use-pose; without it the search is the usual blind one).  A
 * progress bar on a terminal (a line per photo otherwise) and a summary: how many
 * registered, doubtful, not registered (and why), unreadable, and how many carried
 * telemetry.  Exit status 0 when every readable photo went through (registered or
 * not), 1 on a pipeline error or when no photo could be read, 2 on bad arguments.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>

#include "georeg-meta.h"
#include "georeg-pose-meta.h"
#include "nmiregister-meta.h"
#include "georeg-results.h"
#include "geo.h"
#include <gdal.h>
#include <gst/video/video.h>
#include <math.h>

/* the longest a photo may take to decode (a hostile file must not hang the batch) */
#define DECODE_TIMEOUT_S 60

typedef struct {
  GMutex lock;
  GCond cond;
  gboolean have_result;
  guint flags;
  gboolean has_transform;
  guint inliers;
  guint pose_sources;           /* GstGeoregPoseSource bits of the photo's prior, 0 = none */
  guint doubt;                  /* gst_nmi_register_meta_doubt: both stages' verdict */
} Result;

static void
on_handoff (GstElement *sink, GstBuffer *buf, GstPad *pad, Result *r)
{
  const GstNmiRegisterMeta *m = gst_buffer_get_nmi_register_meta (buf);
  g_mutex_lock (&r->lock);
  r->flags = m ? m->flags : 0;
  r->has_transform = m && m->has_transform;
  r->inliers = m ? m->inliers : 0;
  r->doubt = m && m->has_transform ?
      gst_nmi_register_meta_doubt (m, gst_buffer_get_nmi_localize_meta (buf)) : 0;
  const GstGeoregPoseMeta *pose = gst_buffer_get_georeg_pose_meta (buf);
  r->pose_sources = pose ? pose->sources : 0;
  r->have_result = TRUE;
  g_cond_signal (&r->cond);
  g_mutex_unlock (&r->lock);
}

/* Decodes one photo to RGBA, its EXIF/XMP telemetry as a GstGeoregPoseMeta on the
 * buffer; NULL with the reason in *why (g_free). */
/* Ground metres per control pixel at the control's centre (the geometric mean of the
 * two axes, through its CRS to WGS84); NAN when the control has no usable georeference. */
static double
control_pixel_m (const char *control, const char *crs)
{
  GrGeoRef *g = NULL;
  char err[256];
  if (gr_georef_open (control, crs, &g, err, sizeof err) != GR_OK)
    return NAN;
  double geo[6];
  gr_georef_geotransform (g, geo);
  /* the centre of the raster is unknown here without opening it again: the origin's
   * neighbourhood is as good for the scale of any control a photo fits on */
  double x[3], y[3];
  gr_georef_pixel_to_map (g, 0, 0, &x[0], &y[0]);
  gr_georef_pixel_to_map (g, 1, 0, &x[1], &y[1]);
  gr_georef_pixel_to_map (g, 0, 1, &x[2], &y[2]);
  double m = NAN;
  if (gr_georef_map_to_lonlat (g, x, y, 3))
    m = sqrt (gr_geo_distance_m (x[0], y[0], x[1], y[1]) *
        gr_geo_distance_m (x[0], y[0], x[2], y[2]));
  gr_georef_free (g);
  return m > 0 && isfinite (m) ? m : NAN;
}

/* A photo finer than the control is registered at the control's ground resolution
 * (issue 13: register at the coarser of the two): the decoded RGBA frame area-averaged
 * by `scale` (< 1), its pose meta's intrinsics and image size scaled to match.  NULL
 * when the frame is not RGBA. */
static GstSample *
downscale_sample (GstSample *sample, double scale)
{
  GstVideoInfo in, out;
  GstBuffer *src = gst_sample_get_buffer (sample);
  if (!gst_video_info_from_caps (&in, gst_sample_get_caps (sample)) ||
      GST_VIDEO_INFO_FORMAT (&in) != GST_VIDEO_FORMAT_RGBA)
    return NULL;
  const int w = GST_VIDEO_INFO_WIDTH (&in), h = GST_VIDEO_INFO_HEIGHT (&in);
  const int ow = MAX (16, (int) lround (w * scale)), oh = MAX (16, (int) lround (h * scale));
  gst_video_info_set_format (&out, GST_VIDEO_FORMAT_RGBA, ow, oh);
  GstVideoFrame fin;
  if (!gst_video_frame_map (&fin, &in, src, GST_MAP_READ))
    return NULL;
  GstBuffer *dst = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&out), NULL);
  GstMapInfo mo;
  gst_buffer_map (dst, &mo, GST_MAP_WRITE);
  const guint8 *pi = GST_VIDEO_FRAME_PLANE_DATA (&fin, 0);
  const gint si = GST_VIDEO_FRAME_PLANE_STRIDE (&fin, 0), so = GST_VIDEO_INFO_PLANE_STRIDE (&out, 0);
  /* each output pixel: the mean of the input pixels whose centres fall inside it */
  const double fx = (double) w / ow, fy = (double) h / oh;
  for (int oy = 0; oy < oh; oy++) {
    const int y0 = (int) ceil (oy * fy - 0.5), y1 = MIN (h, (int) ceil ((oy + 1) * fy - 0.5));
    for (int ox = 0; ox < ow; ox++) {
      const int x0 = (int) ceil (ox * fx - 0.5), x1 = MIN (w, (int) ceil ((ox + 1) * fx - 0.5));
      guint sum[4] = { 0, 0, 0, 0 }, n = 0;
      for (int y = MAX (0, y0); y < y1; y++)
        for (int x = MAX (0, x0); x < x1; x++, n++)
          for (int c = 0; c < 4; c++)
            sum[c] += pi[(gsize) y * si + 4 * x + c];
      guint8 *po = mo.data + (gsize) oy * so + 4 * ox;
      for (int c = 0; c < 4; c++)
        po[c] = n ? (guint8) ((sum[c] + n / 2) / n) : 0;
    }
  }
  gst_buffer_unmap (dst, &mo);
  gst_video_frame_unmap (&fin);
  gst_buffer_copy_into (dst, src, GST_BUFFER_COPY_METADATA, 0, -1);
  GstGeoregPoseMeta *m = gst_buffer_get_georeg_pose_meta (dst);
  if (m && m->have_intrinsics) {
    const double sx = (double) ow / (m->image_width > 0 ? m->image_width : w);
    const double sy = (double) oh / (m->image_height > 0 ? m->image_height : h);
    m->fx *= sx;
    m->fy *= sy;
    m->cx = (m->cx + 0.5) * sx - 0.5;
    m->cy = (m->cy + 0.5) * sy - 0.5;
  }
  if (m) {
    m->image_width = ow;
    m->image_height = oh;
  }
  GstCaps *caps = gst_video_info_to_caps (&out);
  GstSample *res = gst_sample_new (dst, caps, NULL, NULL);
  gst_caps_unref (caps);
  gst_buffer_unref (dst);
  return res;
}

/* The factor that brings a photo to the control's ground resolution: its ground sample
 * distance from the pose meta (height above ground over the focal length in pixels,
 * at nadir), against the control's; 1 when the photo is not finer by a third or more,
 * or when either is unknown.  Without a pose, a photo larger than the control (in
 * pixels) is brought to half the control's size, so that it can be searched at all. */
static double
photo_scale (GstSample *sample, double control_m, int control_w, int control_h)
{
  GstVideoInfo vi;
  if (!gst_video_info_from_caps (&vi, gst_sample_get_caps (sample)))
    return 1;
  const int w = GST_VIDEO_INFO_WIDTH (&vi), h = GST_VIDEO_INFO_HEIGHT (&vi);
  const GstGeoregPoseMeta *m = gst_buffer_get_georeg_pose_meta (gst_sample_get_buffer (sample));
  double s = 1;
  if (m && m->have_intrinsics && m->height_agl.have && m->height_agl.value > 0 &&
      m->fx > 0 && isfinite (control_m)) {
    const double fx = m->fx * w / (m->image_width > 0 ? m->image_width : w);
    s = (m->height_agl.value / fx) / control_m;
  } else if (control_w > 0 && control_h > 0 && (w > control_w || h > control_h)) {
    s = 0.5 * MIN ((double) control_w / w, (double) control_h / h);
  }
  if (!(s < 0.75))
    return 1;
  /* In steps of a power of the square root of 2 (at most 1.41x finer than the
   * control, which the searches take in their stride): photos of one camera at
   * similar heights then share one size, and the elements do not renegotiate (each new
   * frame size costs them a setup) on every photo. */
  return pow (2, floor (2 * log2 (s)) / 2);
}

/* the user's ground and take-off elevations (metres above sea level; -1000 = not given:
 * georegtelemetry's "unset"), handed to georegtelemetry */
static gdouble ground_elevation = -1000, takeoff_elevation = -1000;

static GstSample *
decode_photo (const char *path, gboolean telemetry, gchar **why)
{
  GError *err = NULL;
  /* the queue keeps decodebin's typefinder from pulling through georegtelemetry before
   * the caps are known */
  GstElement *pipe = gst_parse_launch (telemetry ? "filesrc name=src ! typefind ! "
      "georegtelemetry name=tel post-messages=false ! queue ! decodebin ! videoconvert ! "
      "video/x-raw,format=RGBA ! appsink name=sink sync=false max-buffers=1" :
      "filesrc name=src ! decodebin ! videoconvert ! video/x-raw,format=RGBA ! "
      "appsink name=sink sync=false max-buffers=1", &err);
  if (!pipe) {
    *why = g_strdup_printf ("no decoder: %s", err->message);
    g_error_free (err);
    return NULL;
  }
  g_clear_error (&err);         /* a recoverable parse warning */
  GstElement *src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  g_object_set (src, "location", path, NULL);
  gst_object_unref (src);
  GstElement *tel = gst_bin_get_by_name (GST_BIN (pipe), "tel");
  if (tel) {
    g_object_set (tel, "ground-elevation", ground_elevation, "takeoff-elevation",
        takeoff_elevation, NULL);
    gst_object_unref (tel);
  }
  GstSample *sample = NULL;
  gst_element_set_state (pipe, GST_STATE_PAUSED);
  GstBus *bus = gst_element_get_bus (pipe);
  /* the first buffer (preroll) or an error, whichever comes first; a decoder's last
   * warning explains a file that ends without an image; a file that neither decodes
   * nor fails within DECODE_TIMEOUT_S is given up */
  gchar *warning = NULL;
  const gint64 deadline = g_get_monotonic_time () + DECODE_TIMEOUT_S * G_TIME_SPAN_SECOND;
  for (;;) {
    GstMessage *msg = gst_bus_timed_pop_filtered (bus, 20 * GST_MSECOND,
        GST_MESSAGE_ERROR | GST_MESSAGE_WARNING | GST_MESSAGE_ASYNC_DONE);
    if (msg && GST_MESSAGE_TYPE (msg) != GST_MESSAGE_ASYNC_DONE) {
      GError *e = NULL;
      const gboolean error = GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR;
      if (error)
        gst_message_parse_error (msg, &e, NULL);
      else
        gst_message_parse_warning (msg, &e, NULL);
      g_free (warning);
      warning = g_strdup_printf ("%s: %s", GST_OBJECT_NAME (msg->src), e->message);
      if (error)
        *why = g_strdup (e->message);
      g_error_free (e);
      gst_message_unref (msg);
      if (error)
        break;
      continue;
    }
    if (msg) {
      gst_message_unref (msg);
      sample = gst_app_sink_try_pull_preroll (GST_APP_SINK (sink), 0);
      if (!sample)
        *why = warning ? g_strdup_printf ("no image in the file (%s)", warning) :
            g_strdup ("no image in the file");
      break;
    }
    GstState state;
    if (gst_element_get_state (pipe, &state, NULL, 0) == GST_STATE_CHANGE_FAILURE) {
      *why = g_strdup ("cannot be decoded");
      break;
    }
    if (g_get_monotonic_time () > deadline) {
      *why = g_strdup_printf ("not decoded within %d s", DECODE_TIMEOUT_S);
      break;
    }
  }
  g_free (warning);
  gst_object_unref (bus);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (pipe);
  return sample;
}

static void
progress (gboolean tty, guint done, guint total, const char *name, const char *what)
{
  if (tty) {
    const int width = 30, filled = total ? (int) (width * done / total) : width;
    fprintf (stderr, "\r[%.*s%*s] %u/%u %-32.32s %-24.24s", filled,
        "##############################", width - filled, "", done, total, name, what);
    if (done == total)
      fputc ('\n', stderr);
  } else {
    fprintf (stderr, "%u/%u %s: %s\n", done, total, name, what);
  }
}

/* Adds each flag of `flags` that explains a doubtful or failed result to the counts
 * (not the informational windows-clipped, initial-offset, full-search). */
static void
count_reasons (GHashTable *counts, guint flags)
{
  const guint info = GST_NMI_REGISTER_FLAG_WINDOWS_CLIPPED |
      GST_NMI_REGISTER_FLAG_INITIAL_OFFSET | GST_NMI_REGISTER_FLAG_FULL_SEARCH;
  gchar *text = georeg_register_flags_to_string (flags & ~info);
  gchar **names = g_strsplit (text, ",", -1);
  for (gchar **n = names; *n && **n; n++) {
    guint c = GPOINTER_TO_UINT (g_hash_table_lookup (counts, *n));
    g_hash_table_insert (counts, g_strdup (*n), GUINT_TO_POINTER (c + 1));
  }
  g_strfreev (names);
  g_free (text);
}

static gchar *
reasons_text (GHashTable *counts)
{
  GString *s = g_string_new (NULL);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, counts);
  while (g_hash_table_iter_next (&it, &k, &v))
    g_string_append_printf (s, "%s%s x%u", s->len ? ", " : "", (const char *) k,
        GPOINTER_TO_UINT (v));
  return g_string_free (s, FALSE);
}

int
main (int argc, char **argv)
{
  gchar *control = NULL, *crs = NULL, *out = NULL, *backend = NULL;
  gint band = 0, control_nodata = -1;
  gdouble frame_scale = 0.25, control_scale = 0.25;
  gboolean no_telemetry = FALSE;
  gchar **photos = NULL;
  GOptionEntry entries[] = {
    {"control", 'c', 0, G_OPTION_ARG_FILENAME, &control,
        "georeferenced control image (GeoTIFF, or an image with a world file)", "PATH"},
    {"crs", 0, 0, G_OPTION_ARG_STRING, &crs,
        "the control's CRS when its file has none (e.g. EPSG:32617)", "CRS"},
    {"out", 'o', 0, G_OPTION_ARG_FILENAME, &out, "output folder (created)", "DIR"},
    {"band", 'b', 0, G_OPTION_ARG_INT, &band,
        "control band to match (0 = luminance, default)", "B"},
    {"control-nodata", 0, 0, G_OPTION_ARG_INT, &control_nodata,
        "control value that marks no data when its file has no mask (-1 = none)", "V"},
    {"frame-scale", 0, 0, G_OPTION_ARG_DOUBLE, &frame_scale,
        "coarse search: photo pixels -> search pixels (default 0.25)", "S"},
    {"control-scale", 0, 0, G_OPTION_ARG_DOUBLE, &control_scale,
        "coarse search: control pixels -> search pixels (default 0.25)", "S"},
    {"backend", 0, 0, G_OPTION_ARG_STRING, &backend, "auto (default), cpu or cuda", "B"},
    {"ground-elevation", 0, 0, G_OPTION_ARG_DOUBLE, &ground_elevation,
        "elevation of the ground the photos see, metres above sea level: the height "
          "above ground is then the altitude minus it (default: the height above the "
          "take-off point stands for it, docs/telemetry.md)", "M"},
    {"takeoff-elevation", 0, 0, G_OPTION_ARG_DOUBLE, &takeoff_elevation,
        "elevation of the take-off point, metres above sea level; with "
          "--ground-elevation the height is the relative altitude + take-off - ground "
          "(better than DJI's absolute altitude)", "M"},
    {"no-telemetry", 0, 0, G_OPTION_ARG_NONE, &no_telemetry,
        "ignore the photos' EXIF/XMP (GPS, heights, angles): search without a prior", NULL},
    {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &photos, NULL, "PHOTO..."},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("PHOTO... - register drone photos onto a "
      "georeferenced control image");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  GError *err = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || !control || !out || !photos) {
    fprintf (stderr, "%s\nusage: georeg-photos --control ORTHO --out DIR PHOTO...\n",
        err ? err->message : "--control, --out and at least one photo are required");
    g_clear_error (&err);
    g_option_context_free (ctx);
    return 2;
  }
  g_option_context_free (ctx);
  if ((ground_elevation != -1000 && !(ground_elevation > -1000 && ground_elevation <= 9000))
      || (takeoff_elevation != -1000 && !(takeoff_elevation > -1000 &&
              takeoff_elevation <= 9000))) {
    fprintf (stderr, "georeg-photos: elevations must lie within -1000..9000 m\n");
    return 2;
  }
  if (g_mkdir_with_parents (out, 0755) != 0) {
    fprintf (stderr, "georeg-photos: cannot create '%s': %s\n", out, g_strerror (errno));
    return 1;
  }

  GstElement *pipe = gst_parse_launch ("appsrc name=src format=time ! "
      "nmilocalize name=loc ! nmiregister name=reg ! georegexport name=exp ! "
      "fakesink name=sink signal-handoffs=true sync=false", &err);
  if (!pipe) {
    fprintf (stderr, "georeg-photos: %s (is the georeg plugin on GST_PLUGIN_PATH?)\n",
        err->message);
    return 1;
  }
  GstElement *src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  GstElement *loc = gst_bin_get_by_name (GST_BIN (pipe), "loc");
  GstElement *reg = gst_bin_get_by_name (GST_BIN (pipe), "reg");
  GstElement *exp = gst_bin_get_by_name (GST_BIN (pipe), "exp");
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  gchar *json = g_build_filename (out, "footprints.geojson", NULL);
  gchar *csv = g_build_filename (out, "footprints.csv", NULL);
  g_object_set (loc, "control-location", control, "band", (guint) band, "frame-scale",
      frame_scale, "control-scale", control_scale, "control-nodata", control_nodata,
      "post-messages", FALSE, NULL);
  g_object_set (reg, "control-location", control, "band", (guint) band, "post-messages",
      FALSE, NULL);
  /* the pose meta as nmilocalize's prior, where this build's nmilocalize reads it */
  const gboolean pose_prior = !no_telemetry &&
      g_object_class_find_property (G_OBJECT_GET_CLASS (loc), "use-pose") != NULL;
  if (pose_prior)
    g_object_set (loc, "use-pose", TRUE, NULL);
  if (backend) {
    gst_util_set_object_arg (G_OBJECT (loc), "backend", backend);
    gst_util_set_object_arg (G_OBJECT (reg), "backend", backend);
  }
  g_object_set (exp, "control-location", control, "crs", crs, "geojson-location", json,
      "csv-location", csv, "geotiff-dir", out, NULL);
  Result r = { 0 };
  g_mutex_init (&r.lock);
  g_cond_init (&r.cond);
  g_signal_connect (sink, "handoff", G_CALLBACK (on_handoff), &r);

  GstBus *bus = gst_element_get_bus (pipe);
  int status = 0;
  if (gst_element_set_state (pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE)
    status = 1;
  /* the control's ground resolution and size, for photos finer than it */
  const double control_m = control_pixel_m (control, crs);
  int control_w = 0, control_h = 0;
  GDALAllRegister ();
  GDALDatasetH cds = GDALOpen (control, GA_ReadOnly);
  if (cds) {
    control_w = GDALGetRasterXSize (cds);
    control_h = GDALGetRasterYSize (cds);
    GDALClose (cds);
  }
  guint downscaled = 0;
  const guint total = g_strv_length (photos);
  const gboolean tty = isatty (fileno (stderr));
  guint registered = 0, doubtful = 0, failed = 0, unreadable = 0, done = 0, with_prior = 0;
  GHashTable *doubt_reasons = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  GHashTable *fail_reasons = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  GString *unreadable_list = g_string_new (NULL);
  for (guint i = 0; i < total && status == 0; i++) {
    const char *path = photos[i];
    gchar *base = g_path_get_basename (path), *why = NULL;
    GstSample *sample = decode_photo (path, !no_telemetry, &why);
    if (!sample) {
      unreadable++;
      g_string_append_printf (unreadable_list, "  %s: %s\n", path, why);
      if (tty)
        fputc ('\n', stderr);
      fprintf (stderr, "georeg-photos: skipping '%s': %s\n", path, why);
      g_free (why);
      progress (tty, ++done, total, base, "unreadable");
      g_free (base);
      continue;
    }
    /* finer than the control: registered at the control's ground resolution */
    const double scale = photo_scale (sample, control_m, control_w, control_h);
    GstSample *small = scale < 1 ? downscale_sample (sample, scale) : NULL;
    if (small) {
      gst_sample_unref (sample);
      sample = small;
      downscaled++;
    }
    /* a new sample carrying the buffer tagged with its file, timed one second apart */
    GstBuffer *buf = gst_buffer_copy (gst_sample_get_buffer (sample));
    GST_BUFFER_PTS (buf) = i * GST_SECOND;
    GST_BUFFER_DURATION (buf) = GST_SECOND;
    georeg_buffer_set_source_location (buf, path);
    GstSample *tagged = gst_sample_new (buf, gst_sample_get_caps (sample), NULL, NULL);
    gst_buffer_unref (buf);
    gst_sample_unref (sample);
    g_mutex_lock (&r.lock);
    r.have_result = FALSE;
    g_mutex_unlock (&r.lock);
    gst_app_src_push_sample (GST_APP_SRC (src), tagged);
    gst_sample_unref (tagged);
    /* wait for the photo's result, or an error */
    gboolean have = FALSE;
    while (!have && status == 0) {
      g_mutex_lock (&r.lock);
      gint64 until = g_get_monotonic_time () + 50 * G_TIME_SPAN_MILLISECOND;
      while (!r.have_result && g_cond_wait_until (&r.cond, &r.lock, until));
      have = r.have_result;
      g_mutex_unlock (&r.lock);
      GstMessage *msg = have ? NULL : gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
      if (msg) {
        GError *e = NULL;
        gchar *dbg = NULL;
        gst_message_parse_error (msg, &e, &dbg);
        fprintf (stderr, "\ngeoreg-photos: %s: %s\n%s\n", GST_OBJECT_NAME (msg->src),
            e->message, dbg ? dbg : "");
        g_error_free (e);
        g_free (dbg);
        gst_message_unref (msg);
        status = 1;
      }
    }
    if (have) {
      const char *what;
      if (r.pose_sources)
        with_prior++;
      /* doubtful by either stage (docs/gis.md "Quality: both stages") */
      if (r.has_transform && !r.doubt) {
        registered++;
        what = "registered";
      } else if (r.has_transform) {
        doubtful++;
        count_reasons (doubt_reasons, r.flags);
        what = "registered, doubtful";
      } else {
        failed++;
        count_reasons (fail_reasons, r.flags);
        what = "not registered";
      }
      progress (tty, ++done, total, base, what);
    }
    g_free (base);
  }
  if (status == 0) {
    gst_app_src_end_of_stream (GST_APP_SRC (src));
    GstMessage *msg = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    if (!msg || GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR)
      status = 1;
    if (msg)
      gst_message_unref (msg);
  }
  gst_element_set_state (pipe, GST_STATE_NULL);

  gchar *dr = reasons_text (doubt_reasons), *fr = reasons_text (fail_reasons);
  printf ("georeg-photos: %u photos: %u registered, %u doubtful%s%s%s, %u not registered"
      "%s%s%s, %u unreadable\n", total, registered, doubtful, *dr ? " (" : "", dr,
      *dr ? ")" : "", failed, *fr ? " (" : "", fr, *fr ? ")" : "", unreadable);
  if (unreadable)
    printf ("unreadable:\n%s", unreadable_list->str);
  printf ("telemetry (EXIF/XMP position, height, angles): %u of %u photos%s\n", with_prior,
      registered + doubtful + failed, no_telemetry ? " (ignored: --no-telemetry)" :
      pose_prior ? ", the prior of nmilocalize's search" :
      " (not used: this nmilocalize has no use-pose)");
  if (downscaled)
    printf ("downscaled to the control's ground resolution (%.3g m) first: %u of %u "
        "photos\n", control_m, downscaled, registered + doubtful + failed);
  printf ("wrote %s, %s and a GeoTIFF per registered photo in %s\n", json, csv, out);
  if (registered + doubtful + failed == 0)
    status = 1;
  g_free (dr);
  g_free (fr);
  g_string_free (unreadable_list, TRUE);
  g_hash_table_unref (doubt_reasons);
  g_hash_table_unref (fail_reasons);
  gst_object_unref (bus);
  gst_object_unref (src);
  gst_object_unref (loc);
  gst_object_unref (reg);
  gst_object_unref (exp);
  gst_object_unref (sink);
  gst_object_unref (pipe);
  g_mutex_clear (&r.lock);
  g_cond_clear (&r.cond);
  g_free (json);
  g_free (csv);
  g_free (control);
  g_free (crs);
  g_free (out);
  g_free (backend);
  g_strfreev (photos);
  return status;
}
