/* georeg-photos, the command-line tool, end to end: 20 photos synthesized over a
 * georeferenced control (a UTM 17N GeoTIFF), written as JPEGs carrying DJI-style
 * EXIF/XMP telemetry (pipelines/synth_jpeg: GPS position of the photo's centre, height,
 * gimbal and flight angles, focal length) and one corrupt photo among them.  Checks:
 *  - the corrupt photo is reported and skipped, the 20 others come out; the summary
 *    counts them and says that each carried its telemetry;
 *  - footprints.geojson opens with ogrinfo as WGS84; every footprint ring is closed,
 *    counter-clockwise, ordered TL BL BR TR TL, each corner within 0.5 photo pixel (in
 *    metres) of the truth;
 *  - footprints.csv has a row per photo;
 *  - one GeoTIFF per photo, gdalinfo shows the control's CRS, and the image lines up
 *    with the control (correlation at its place >= at any 1-pixel shift);
 *  - a progress bar only on a terminal (a pseudo-terminal here), a line per photo
 *    otherwise.
 * The tool is GEOREG_BUILD_ROOT/pipelines/georeg-photos.  Exit 77 without GDAL.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <pty.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>

#if !GR_HAVE_GDAL
int
main (void)
{
  printf ("SKIP: built without GDAL\n");
  return 77;
}
#else
#include <gdal.h>
#include <cpl_conv.h>

/* a 320 x 240 m control at 0.5 m, 256 x 192 photos */
#define CW 640
#define CH 480
#define FW 256
#define FH 192
#include "gis_test_util.h"
#include "synth_jpeg.h"

#define N_PHOTOS 20
/* one photo pixel on the ground = SCALE control pixels of 0.5 m */
#define SCALE 1.0
#define PIXEL_M 0.5
/* DJI Phantom 3 (FC300S): 3.61 mm lens on a 6.17 mm wide sensor */
#define FOCAL_MM 3.61
#define SENSOR_W_MM 6.17

static double truth_h[N_PHOTOS][9];
static gchar *photo_path[N_PHOTOS + 1];
static gchar *corrupt_path;

static gchar *
tool_path (void)
{
  const char *root = g_getenv ("GEOREG_BUILD_ROOT");
  fail_unless (root != NULL, "GEOREG_BUILD_ROOT is not set (run through meson test)");
  return g_build_filename (root, "pipelines", "georeg-photos", NULL);
}

/* The photos: frames cut from the control through a similarity (frame centre spread
 * over the control, up to 3 degrees of heading), JPEG with the telemetry a DJI
 * aircraft would have written for that view. */
static void
make_photos (void)
{
  GrSynthRng rng;
  gr_synth_rng_init (&rng, 17);
  gchar *dir = tmp_path ("photos");
  g_mkdir_with_parents (dir, 0755);
  for (int i = 0; i < N_PHOTOS; i++) {
    const double cx = gr_synth_rng_range (&rng, FW * 0.6, CW - FW * 0.6);
    const double cy = gr_synth_rng_range (&rng, FH * 0.6, CH - FH * 0.6);
    const double heading = gr_synth_rng_range (&rng, -3, 3);
    similarity (SCALE, heading, cx, cy, truth_h[i]);
    GstBuffer *b = frame_cut (truth_h[i]);
    GstMapInfo map;
    fail_unless (gst_buffer_map (b, &map, GST_MAP_READ));

    GrSynthDroneTags t;
    gr_synth_drone_tags_init (&t);
    t.make = "DJI";
    t.model = "FC300S";
    t.focal_mm = FOCAL_MM;
    t.focal_35mm = 20;
    t.have_gps = TRUE;
    truth_lonlat (cx, cy, &t.lon, &t.lat);
    /* the height that gives this ground sample distance through this lens */
    const double height = SCALE * PIXEL_M * FOCAL_MM / SENSOR_W_MM * FW;
    t.alt_amsl = 190.0 + height;
    t.have_xmp = TRUE;
    t.rel_alt = height;
    /* the photo's up direction against true north (the control's up is grid north,
     * half a degree off here) */
    double tx, ty, tlon, tlat;
    apply (truth_h[i], FW / 2.0, 0, &tx, &ty);
    truth_lonlat (tx, ty, &tlon, &tlat);
    double yaw = atan2 ((tlon - t.lon) * cos (t.lat * M_PI / 180), tlat - t.lat) * 180 / M_PI;
    t.gimbal_yaw = t.flight_yaw = yaw;
    t.gimbal_pitch = -90.0;
    photo_path[i] = g_strdup_printf ("%s/DJI_%04d.JPG", dir, i + 1);
    fail_unless (gr_synth_jpeg_write (photo_path[i], map.data, FW, FH, 1, FW, 95, &t),
        "cannot write %s", photo_path[i]);
    gst_buffer_unmap (b, &map);
    gst_buffer_unref (b);
  }
  /* a corrupt photo: a real one's headers (EXIF, XMP, frame header) and then garbage
   * where the compressed image should be, put among the others */
  gchar *head = NULL;
  gsize len = 0;
  fail_unless (g_file_get_contents (photo_path[0], &head, &len, NULL));
  const gsize keep = MIN (len, 1500);
  GString *bad = g_string_new_len (head, keep);
  for (int k = 0; k < 3000; k++)
    g_string_append_c (bad, (char) (gr_synth_rng_next (&rng) & 0xff));
  corrupt_path = g_strdup_printf ("%s/DJI_0011_corrupt.JPG", dir);
  fail_unless (g_file_set_contents (corrupt_path, bad->str, bad->len, NULL));
  g_string_free (bad, TRUE);
  g_free (head);
  g_free (dir);
}

/* Runs the tool on the photos (the corrupt one 11th) with stdout and stderr captured;
 * returns the exit status. */
static int
run_tool (const char *out, gchar **std_out, gchar **std_err)
{
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (argv, tool_path ());
  g_ptr_array_add (argv, g_strdup ("--control"));
  g_ptr_array_add (argv, g_strdup (control_tif));
  g_ptr_array_add (argv, g_strdup ("--out"));
  g_ptr_array_add (argv, g_strdup (out));
  for (int i = 0; i < N_PHOTOS; i++) {
    if (i == 10)
      g_ptr_array_add (argv, g_strdup (corrupt_path));
    g_ptr_array_add (argv, g_strdup (photo_path[i]));
  }
  g_ptr_array_add (argv, NULL);
  gint status = -1;
  GError *err = NULL;
  fail_unless (g_spawn_sync (NULL, (gchar **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL,
          NULL, std_out, std_err, &status, &err), "spawn: %s", err ? err->message : "");
  g_ptr_array_unref (argv);
  return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

/* The GeoJSON through Python's strict JSON parser: per feature "file n lon lat ...". */
static void
check_geojson (const char *path)
{
  gchar *cmd = g_strdup_printf ("ogrinfo -ro -al -so %s", path);
  gchar *info = run_capture (cmd);
  g_free (cmd);
  fail_unless (info && strstr (info, "Feature Count: 20") && strstr (info, "WGS 84"),
      "ogrinfo: %s", info ? info : "(failed)");
  g_free (info);

  cmd = g_strdup_printf ("python3 -c \"import json,sys\n"
      "for f in json.load(open(sys.argv[1]))['features']:\n"
      " g=f['geometry']; c=g['coordinates'][0] if g and g['type']=='Polygon' else []\n"
      " print(f['properties']['file'], f['properties']['quality'], len(c),"
      " ' '.join('%%.10f %%.10f'%%tuple(q) for q in c))\" %s", path);
  gchar *out = run_capture (cmd);
  g_free (cmd);
  fail_unless (out != NULL, "python3 could not parse %s as JSON", path);
  gchar **lines = g_strsplit (g_strchomp (out), "\n", -1);
  g_free (out);
  fail_unless_equals_int (g_strv_length (lines), N_PHOTOS);
  /* the ring: TL BL BR TR TL of the photo */
  const double corner_of[5][2] = { {0, 0}, {0, FH}, {FW, FH}, {FW, 0}, {0, 0} };
  const double photo_px_m = SCALE * PIXEL_M;
  double worst = 0;
  for (int k = 0; k < N_PHOTOS; k++) {
    gchar **tok = g_strsplit (lines[k], " ", -1);
    fail_unless (g_strv_length (tok) == 3 + 10, "feature %d: %s", k, lines[k]);
    fail_unless_equals_string (tok[0], photo_path[k]);
    fail_unless_equals_string (tok[1], "registered");
    fail_unless_equals_int (atoi (tok[2]), 5);
    double area = 0, lon[5], lat[5];
    for (int i = 0; i < 5; i++) {
      double px, py, tlon, tlat;
      lon[i] = g_ascii_strtod (tok[3 + 2 * i], NULL);
      lat[i] = g_ascii_strtod (tok[4 + 2 * i], NULL);
      apply (truth_h[k], corner_of[i][0], corner_of[i][1], &px, &py);
      truth_lonlat (px, py, &tlon, &tlat);
      const double err = metres (tlon, tlat, lon[i], lat[i]);
      worst = MAX (worst, err / photo_px_m);
      fail_unless (err < 0.5 * photo_px_m, "%s corner %d: %.3f m from the truth",
          photo_path[k], i, err);
      if (i)
        area += lon[i - 1] * lat[i] - lon[i] * lat[i - 1];
    }
    fail_unless (lon[0] == lon[4] && lat[0] == lat[4], "ring not closed");
    fail_unless (area > 0, "%s: ring not counter-clockwise", photo_path[k]);
    g_strfreev (tok);
  }
  printf ("georeg-photos: worst footprint corner %.3f photo pixels from the truth\n", worst);
  g_strfreev (lines);
}

static void
check_geotiffs (const char *out)
{
  for (int k = 0; k < N_PHOTOS; k++) {
    gchar *tif = g_strdup_printf ("%s/DJI_%04d.tif", out, k + 1);
    gchar *cmd = g_strdup_printf ("gdalinfo %s", tif);
    gchar *info = run_capture (cmd);
    fail_unless (info && strstr (info, "ID[\"EPSG\",32617]"), "gdalinfo %s: %s", tif,
        info ? info : "(failed)");
    guint8 *img, *alpha;
    int w, h;
    long ox, oy;
    read_on_grid (tif, &img, &alpha, &w, &h, &ox, &oy);
    check_lines_up (img, alpha, w, h, ox, oy);
    g_free (img);
    g_free (alpha);
    g_free (info);
    g_free (cmd);
    g_free (tif);
  }
  gchar *bad = g_strdup_printf ("%s/DJI_0011_corrupt.tif", out);
  fail_if (g_file_test (bad, G_FILE_TEST_EXISTS), "a GeoTIFF for the corrupt photo");
  g_free (bad);
}

GST_START_TEST (test_photos)
{
  gchar *out = tmp_path ("out"), *std_out = NULL, *std_err = NULL;
  const int rc = run_tool (out, &std_out, &std_err);
  printf ("%s%s", std_out, std_err);
  fail_unless_equals_int (rc, 0);
  fail_unless (strstr (std_out, "21 photos: 20 registered, 0 doubtful, 0 not registered, "
          "1 unreadable") != NULL, "summary: %s", std_out);
  gchar *line = g_strdup_printf ("unreadable:\n  %s: ", corrupt_path);
  fail_unless (strstr (std_out, line) != NULL, "the corrupt photo is not listed");
  g_free (line);
  fail_unless (strstr (std_out, "telemetry (EXIF/XMP position, height, angles): 20 of 20 "
          "photos") != NULL, "the photos' telemetry did not reach the elements");
  line = g_strdup_printf ("skipping '%s'", corrupt_path);
  fail_unless (strstr (std_err, line) != NULL, "the corrupt photo is not reported");
  g_free (line);
  /* not a terminal: one line per photo, no bar */
  fail_if (strchr (std_err, '\r') != NULL, "a progress bar on a pipe");
  fail_unless (strstr (std_err, "11/21 DJI_0011_corrupt.JPG: unreadable\n") != NULL
      && strstr (std_err, "21/21 DJI_0020.JPG: registered\n") != NULL, "%s", std_err);

  gchar *json = g_build_filename (out, "footprints.geojson", NULL);
  check_geojson (json);
  gchar *csv = g_build_filename (out, "footprints.csv", NULL), *text = NULL;
  fail_unless (g_file_get_contents (csv, &text, NULL, NULL));
  gchar **rows = g_strsplit (g_strchomp (text), "\n", -1);
  fail_unless_equals_int (g_strv_length (rows), 1 + N_PHOTOS);
  fail_unless (g_str_has_prefix (rows[1], photo_path[0]), "%s", rows[1]);
  g_strfreev (rows);
  g_free (text);
  check_geotiffs (out);
  g_free (json);
  g_free (csv);
  g_free (std_out);
  g_free (std_err);
  g_free (out);
}
GST_END_TEST;

/* On a terminal: the bar ("\r[####  ] k/n") instead of a line per photo. */
GST_START_TEST (test_progress_bar_on_terminal)
{
  gchar *tool = tool_path (), *out = tmp_path ("tty");
  int master = -1;
  pid_t pid = forkpty (&master, NULL, NULL, NULL);
  fail_unless (pid >= 0, "forkpty: %s", g_strerror (errno));
  if (pid == 0) {
    execl (tool, tool, "--control", control_tif, "--out", out, photo_path[0],
        corrupt_path, (char *) NULL);
    _exit (127);
  }
  GString *seen = g_string_new (NULL);
  char buf[4096];
  for (;;) {
    ssize_t n = read (master, buf, sizeof buf);
    if (n > 0)
      g_string_append_len (seen, buf, n);
    else if (n < 0 && errno == EINTR)
      continue;
    else
      break;                    /* EIO once the child has gone */
  }
  close (master);
  int status = 0;
  fail_unless (waitpid (pid, &status, 0) == pid);
  fail_unless (WIFEXITED (status) && WEXITSTATUS (status) == 0, "status %d: %s", status,
      seen->str);
  fail_unless (strstr (seen->str, "\r[###############") != NULL && strstr (seen->str,
          "] 2/2 ") != NULL, "no progress bar on a terminal: %s", seen->str);
  fail_unless (strstr (seen->str, "2 photos: 1 registered") != NULL, "%s", seen->str);
  g_string_free (seen, TRUE);
  g_free (tool);
  g_free (out);
}
GST_END_TEST;

static Suite *
photos_suite (void)
{
  Suite *s = suite_create ("georeg_photos");
  TCase *tc = tcase_create ("general");
  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  /* inside the runner, where fail_unless may be called */
  tcase_add_unchecked_fixture (tc, make_photos, NULL);
  tcase_add_test (tc, test_photos);
  tcase_add_test (tc, test_progress_bar_on_terminal);
  return s;
}

int
main (int argc, char **argv)
{
  gst_check_init (&argc, &argv);
  make_control ();
  int failed = gst_check_run_suite (photos_suite (), "georeg_photos", __FILE__);
  gchar *cmd = g_strdup_printf ("rm -rf %s", tmpdir);
  if (system (cmd) != 0)
    fprintf (stderr, "could not remove %s\n", tmpdir);
  g_free (cmd);
  for (int i = 0; i < N_PHOTOS; i++)
    g_free (photo_path[i]);
  g_free (corrupt_path);
  g_free (control_tif);
  g_free (tmpdir);
  gr_synth_image_free (&control);
  return failed;
}
#endif
