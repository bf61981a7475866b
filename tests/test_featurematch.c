/* featurematch element: caps, properties, meta, message, the .npy files, the sliding
 * window, and bad input (transparent and flat frames, short buffers, descriptor-size
 * changes while running, an unwritable matrix path, CUDA without a device)
 * (GstHarness).  Frames are cut from a procedural control (pipelines/synth.h) with
 * known homographies, turned by 0, 90 and 180 degrees.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "featurematch-meta.h"
#include "fit.h"
#include "realdesc.h"
#include "synth.h"

#define CW 640
#define CH 480
#define FW 192
#define FH 144

static gchar *tmpdir;
static GrSynthImage control;

/* frame i: centre along a line, rotations 0, 0, 180, 90, 0 */
#define NFRAMES 5
static const double frame_cx[NFRAMES] = { 140, 200, 260, 320, 380 };
static const double frame_rot[NFRAMES] = { 0, 3, 180, 90, -2 };
static double frame_h[NFRAMES][9];
static GrPlaneF frames[NFRAMES];

static void
make_data (void)
{
  GrSynthControlParams p;
  char err[256];
  gr_synth_control_params_init (&p);
  p.width = CW;
  p.height = CH;
  p.seed = 11;
  tmpdir = g_dir_make_tmp ("georeg-featurematch-XXXXXX", NULL);
  if (!tmpdir || gr_synth_control_generate (&p, &control, err, sizeof err) != GR_OK)
    g_error ("cannot make the test control image: %s", err);
  GrPlaneF band = gr_synth_image_plane (&control, 1);
  for (int i = 0; i < NFRAMES; i++) {
    GrSynthPose pose = { 0 };
    pose.centre_x = frame_cx[i];
    pose.centre_y = 150;
    pose.rotation_deg = frame_rot[i];
    pose.scale = 1.0;
    gr_synth_pose_homography (&pose, FW, FH, frame_h[i]);
    if (gr_synth_cut (&band, frame_h[i], FW, FH, 1, &frames[i]) != GR_OK)
      g_error ("cannot cut frame %d", i);
  }
}

static GstBuffer *
gray8_buffer (const GrPlaneF *f)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, FW * FH, NULL);
  GstMapInfo map;
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (int i = 0; i < FW * FH; i++)
    map.data[i] = (guint8) CLAMP (floorf (f->data[i] + 0.5f), 0, 255);
  gst_buffer_unmap (buf, &map);
  return buf;
}

/* RGBA: gray in the colour channels, alpha from `alpha` (NULL = opaque) */
static GstBuffer *
rgba_buffer (const GrPlaneF *f, const guint8 *alpha)
{
  GstBuffer *buf = gst_buffer_new_allocate (NULL, FW * FH * 4, NULL);
  GstMapInfo map;
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (int i = 0; i < FW * FH; i++) {
    const guint8 v = (guint8) CLAMP (floorf (f->data[i] + 0.5f), 0, 255);
    map.data[4 * i] = map.data[4 * i + 1] = map.data[4 * i + 2] = v;
    map.data[4 * i + 3] = alpha ? alpha[i] : 255;
  }
  gst_buffer_unmap (buf, &map);
  return buf;
}

#define GRAY8_CAPS "video/x-raw,format=GRAY8,width=192,height=144,framerate=5/1"
#define RGBA_CAPS "video/x-raw,format=RGBA,width=192,height=144,framerate=5/1"

static GstHarness *
new_harness (const gchar * extra, const gchar * caps)
{
  gchar *desc = g_strdup_printf ("featurematch backend=cpu %s", extra ? extra : "");
  GstHarness *h = gst_harness_new_parse (desc);
  g_free (desc);
  gst_harness_set_src_caps_str (h, caps);
  return h;
}

static GstMessage *
pop_message (GstBus * bus)
{
  GstMessage *msg;
  while ((msg = gst_bus_pop (bus))) {
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT &&
        gst_message_has_name (msg, "featurematch"))
      return msg;
    gst_message_unref (msg);
  }
  return NULL;
}

/* max distance, over the part of frame a that frame b sees, between h and the truth */
static double
homography_error (const double h[9], int a, int b)
{
  double t[9];
  double inv[9];
  h_invert (frame_h[b], inv);
  h_mul (inv, frame_h[a], t);
  double worst = 0;
  for (int y = 0; y < FH; y += 4)
    for (int x = 0; x < FW; x += 4) {
      double tx, ty, ex, ey;
      if (!gr_fit_apply (t, x, y, &tx, &ty) || tx < 0 || ty < 0 || tx > FW - 1 ||
          ty > FH - 1)
        continue;
      gr_fit_apply (h, x, y, &ex, &ey);
      worst = MAX (worst, hypot (ex - tx, ey - ty));
    }
  return worst;
}

GST_START_TEST (test_properties)
{
  GstElement *e = gst_element_factory_make ("featurematch", NULL);
  gdouble ratio;
  guint maxi, minm, maxf;
  gint ds, backend, dev, nodata;
  gboolean cc, post;
  gchar *loc;
  fail_unless (e != NULL);
  g_object_get (e, "ratio", &ratio, "max-images", &maxi, "min-matches", &minm,
      "max-features", &maxf, "descriptor-size", &ds, "backend", &backend,
      "cuda-device-id", &dev, "cross-check", &cc, "nodata", &nodata, "post-messages",
      &post, "matrix-location", &loc, NULL);
  fail_unless_equals_float (ratio, 0.8);
  fail_unless_equals_int (maxi, 0);
  fail_unless_equals_int (minm, 20);
  fail_unless_equals_int (maxf, 500);
  fail_unless_equals_int (ds, 64);
  fail_unless_equals_int (backend, 0);
  fail_unless_equals_int (dev, -1);
  fail_unless (cc && post);
  fail_unless_equals_int (nodata, -1);
  fail_unless (loc == NULL);
  g_object_set (e, "ratio", 0.7, "max-images", 3, "descriptor-size", 32,
      "matrix-location", "/tmp/x.npy", NULL);
  gst_util_set_object_arg (G_OBJECT (e), "backend", "cpu");
  g_object_get (e, "ratio", &ratio, "max-images", &maxi, "descriptor-size", &ds,
      "backend", &backend, "matrix-location", &loc, NULL);
  fail_unless_equals_float (ratio, 0.7);
  fail_unless_equals_int (maxi, 3);
  fail_unless_equals_int (ds, 32);
  fail_unless_equals_int (backend, 1);
  fail_unless_equals_string (loc, "/tmp/x.npy");
  g_free (loc);
  /* only 32 and 64 */
  ASSERT_WARNING (g_object_set (e, "descriptor-size", 48, NULL));
  g_object_get (e, "descriptor-size", &ds, NULL);
  fail_unless_equals_int (ds, 32);
  gst_object_unref (e);
}
GST_END_TEST;

GST_START_TEST (test_matches_meta_message)
{
  GstHarness *h = new_harness ("min-matches=15", GRAY8_CAPS);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  int with_h = 0, good_h = 0;
  for (int i = 0; i < NFRAMES; i++) {
    GstBuffer *in = gray8_buffer (&frames[i]);
    GST_BUFFER_PTS (in) = i * GST_SECOND / 5;
    GstBuffer *out = gst_harness_push_and_pull (h, in);
    fail_unless (out != NULL);
    /* the pixels pass through */
    GstBuffer *ref = gray8_buffer (&frames[i]);
    GstMapInfo map;
    gst_buffer_map (ref, &map, GST_MAP_READ);
    fail_unless (gst_buffer_memcmp (out, 0, map.data, map.size) == 0);
    gst_buffer_unmap (ref, &map);
    gst_buffer_unref (ref);

    GstFeatureMatchMeta *m = gst_buffer_get_feature_match_meta (out);
    fail_unless (m != NULL);
    fail_unless_equals_uint64 (m->frame, i);
    fail_unless_equals_int (m->descriptor_size, 64);
    fail_unless (m->n_keypoints > 40 && m->n_keypoints <= 500, "%u keypoints",
        m->n_keypoints);
    fail_unless_equals_int (m->flags, 0);
    for (guint k = 0; k < m->n_keypoints; k++)
      fail_unless (m->keypoints[2 * k] >= 0 && m->keypoints[2 * k] <= FW - 1 &&
          m->keypoints[2 * k + 1] >= 0 && m->keypoints[2 * k + 1] <= FH - 1);
    if (i > 0)
      fail_unless (m->n_pairs >= 1, "frame %d overlaps frame %d but has no pair", i,
          i - 1);
    for (guint p = 0; p < m->n_pairs; p++) {
      const GstFeatureMatchPair *pr = &m->pairs[p];
      fail_unless (pr->frame < (guint64) i);
      fail_unless (pr->matches >= 15);
      for (guint q = 0; q < pr->matches; q++)
        fail_unless (pr->pairs[2 * q] >= 0 && pr->pairs[2 * q] < (gint) m->n_keypoints);
      if (pr->flags & GST_FEATURE_MATCH_PAIR_HOMOGRAPHY) {
        with_h++;
        const double err = homography_error (pr->h, i, (int) pr->frame);
        GST_INFO ("frame %d vs %d: %u matches, %u inliers, error %.2f px", i,
            (int) pr->frame, pr->matches, pr->inliers, err);
        good_h += err <= 2.0;
        fail_unless (pr->inliers >= 8 && pr->inliers <= pr->matches);
        fail_unless (isfinite (pr->rms) && pr->rms < 2.0);
        guint ninl = 0;
        for (guint q = 0; q < pr->matches; q++)
          ninl += pr->inlier[q];
        fail_unless_equals_int (ninl, pr->inliers);
      }
    }
    GstMessage *msg = pop_message (bus);
    fail_unless (msg != NULL, "no featurematch message");
    const GstStructure *s = gst_message_get_structure (msg);
    guint64 frame, ts;
    guint nkp, held;
    fail_unless (gst_structure_get (s, "frame", G_TYPE_UINT64, &frame, "timestamp",
            G_TYPE_UINT64, &ts, "keypoints", G_TYPE_UINT, &nkp, "held-frames",
            G_TYPE_UINT, &held, NULL));
    fail_unless_equals_uint64 (frame, i);
    fail_unless_equals_uint64 (ts, i * GST_SECOND / 5);
    fail_unless_equals_int (nkp, m->n_keypoints);
    fail_unless_equals_int (held, i);
    fail_unless_equals_string (gst_structure_get_string (s, "backend"), "cpu");
    const GValue *pairs = gst_structure_get_value (s, "pairs");
    fail_unless (pairs && GST_VALUE_HOLDS_ARRAY (pairs));
    fail_unless_equals_int (gst_value_array_get_size (pairs), m->n_pairs);
    if (m->n_pairs > 0) {
      const GstStructure *ps =
          gst_value_get_structure (gst_value_array_get_value (pairs, 0));
      guint64 pf;
      guint pm;
      fail_unless (gst_structure_get (ps, "frame", G_TYPE_UINT64, &pf, "matches",
              G_TYPE_UINT, &pm, NULL));
      fail_unless_equals_uint64 (pf, m->pairs[0].frame);
      fail_unless_equals_int (pm, m->pairs[0].matches);
      const GValue *hv = gst_structure_get_value (ps, "homography");
      fail_unless (hv && gst_value_array_get_size (hv) == 9);
    }
    gst_message_unref (msg);
    /* a copy of the buffer keeps a deep copy of the meta */
    GstBuffer *copy = gst_buffer_copy (out);
    gst_buffer_unref (out);
    GstFeatureMatchMeta *mc = gst_buffer_get_feature_match_meta (copy);
    fail_unless (mc && mc->n_keypoints == nkp && mc->frame == (guint64) i);
    gst_buffer_unref (copy);
  }
  fail_unless (with_h >= NFRAMES - 1, "only %d homographies", with_h);
  fail_unless (good_h >= with_h - 1, "%d of %d homographies within 2 px", good_h, with_h);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

/* ---- .npy reading */

typedef struct {
  gchar descr[8];
  gint64 shape[2];
  int ndim;
  gsize data_off;
  gchar *buf;
  gsize len;
} Npy;

static gboolean
npy_read (const gchar * path, Npy * n)
{
  memset (n, 0, sizeof *n);
  if (!g_file_get_contents (path, &n->buf, &n->len, NULL))
    return FALSE;
  if (n->len < 10 || memcmp (n->buf, "\x93NUMPY\x01\x00", 8) != 0)
    return FALSE;
  const guint hl = (guint8) n->buf[8] | ((guint8) n->buf[9] << 8);
  n->data_off = 10 + hl;
  if (n->data_off % 64 != 0 || n->data_off > n->len)
    return FALSE;
  gchar *hdr = g_strndup (n->buf + 10, hl);
  const gchar *d = strstr (hdr, "'descr': '");
  const gchar *s = strstr (hdr, "'shape': (");
  gboolean ok = d && s && strstr (hdr, "'fortran_order': False");
  if (ok) {
    g_strlcpy (n->descr, d + 10, 4);
    s += 10;
    n->shape[0] = g_ascii_strtoll (s, (gchar **) & s, 10);
    n->ndim = 1;
    if (*s == ',' && s[1] == ' ') {
      n->shape[1] = g_ascii_strtoll (s + 2, NULL, 10);
      n->ndim = 2;
    }
  }
  g_free (hdr);
  return ok;
}

GST_START_TEST (test_matrix_files)
{
  gchar *loc = g_build_filename (tmpdir, "corr.npy", NULL);
  gchar *extra = g_strdup_printf ("matrix-location=\"%s\" descriptor-size=32 "
      "min-matches=10 cross-check=false", loc);
  GstHarness *h = new_harness (extra, GRAY8_CAPS);
  guint nk[NFRAMES];
  GstFeatureMatchMeta metas[NFRAMES];
  GstBuffer *outs[NFRAMES];
  for (int i = 0; i < NFRAMES; i++) {
    outs[i] = gst_harness_push_and_pull (h, gray8_buffer (&frames[i]));
    GstFeatureMatchMeta *m = gst_buffer_get_feature_match_meta (outs[i]);
    fail_unless (m != NULL);
    nk[i] = m->n_keypoints;
    metas[i] = *m;
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  Npy mat, kp, off, desc;
  fail_unless (npy_read (loc, &mat), "matrix file");
  gchar *p1 = g_build_filename (tmpdir, "corr-keypoints.npy", NULL);
  gchar *p2 = g_build_filename (tmpdir, "corr-offsets.npy", NULL);
  gchar *p3 = g_build_filename (tmpdir, "corr-descriptors.npy", NULL);
  fail_unless (npy_read (p1, &kp) && npy_read (p2, &off) && npy_read (p3, &desc));
  gint64 n = 0;
  for (int i = 0; i < NFRAMES; i++)
    n += nk[i];
  fail_unless_equals_string (mat.descr, "<i4");
  fail_unless (mat.ndim == 2 && mat.shape[0] == NFRAMES && mat.shape[1] == n);
  fail_unless_equals_int (mat.len - mat.data_off, NFRAMES * n * 4);
  fail_unless_equals_string (kp.descr, "<f4");
  fail_unless (kp.ndim == 2 && kp.shape[0] == n && kp.shape[1] == 2);
  fail_unless_equals_string (off.descr, "<i8");
  fail_unless (off.ndim == 1 && off.shape[0] == NFRAMES + 1);
  fail_unless (desc.ndim == 2 && desc.shape[0] == n && desc.shape[1] == 32);
  fail_unless_equals_int (desc.len - desc.data_off, n * 32 * 4);
  const gint32 *M = (const gint32 *) (mat.buf + mat.data_off);
  const gint64 *O = (const gint64 *) (off.buf + off.data_off);
  const gfloat *K = (const gfloat *) (kp.buf + kp.data_off);
  for (int i = 0; i < NFRAMES; i++) {
    fail_unless_equals_int (O[i + 1] - O[i], nk[i]);
    /* the keypoints are the meta's */
    for (guint a = 0; a < nk[i]; a++)
      fail_unless (K[2 * (O[i] + a)] == metas[i].keypoints[2 * a] &&
          K[2 * (O[i] + a) + 1] == metas[i].keypoints[2 * a + 1]);
    /* own frame: -1; entries within range */
    for (gint64 j = O[i]; j < O[i + 1]; j++)
      fail_unless_equals_int (M[i * n + j], -1);
    for (int r = 0; r < NFRAMES; r++)
      for (gint64 j = O[i]; j < O[i + 1]; j++)
        fail_unless (M[r * n + j] >= -1 && M[r * n + j] < (gint32) nk[r]);
    /* every reported pair (no cross-check) is in the matrix: row = earlier frame,
     * column = this frame's descriptor */
    for (guint p = 0; p < metas[i].n_pairs; p++) {
      const GstFeatureMatchPair *pr = &metas[i].pairs[p];
      for (guint q = 0; q < pr->matches; q++)
        fail_unless_equals_int (M[pr->frame * n + O[i] + pr->pairs[2 * q]],
            pr->pairs[2 * q + 1]);
    }
  }
  for (int i = 0; i < NFRAMES; i++)
    gst_buffer_unref (outs[i]);
  g_free (mat.buf);
  g_free (kp.buf);
  g_free (off.buf);
  g_free (desc.buf);
  g_free (p1);
  g_free (p2);
  g_free (p3);
  g_free (extra);
  g_free (loc);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_sliding_window)
{
  GstHarness *h = new_harness ("max-images=1 min-matches=5", GRAY8_CAPS);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  for (int i = 0; i < 4; i++) {
    GstBuffer *out = gst_harness_push_and_pull (h, gray8_buffer (&frames[i]));
    GstFeatureMatchMeta *m = gst_buffer_get_feature_match_meta (out);
    fail_unless (m != NULL);
    for (guint p = 0; p < m->n_pairs; p++)
      fail_unless_equals_uint64 (m->pairs[p].frame, i - 1);
    GstMessage *msg = pop_message (bus);
    guint held;
    fail_unless (gst_structure_get_uint (gst_message_get_structure (msg), "held-frames",
            &held));
    fail_unless_equals_int (held, i > 0 ? 1 : 0);
    gst_message_unref (msg);
    gst_buffer_unref (out);
  }
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_rgba_mask_and_bad_frames)
{
  GstHarness *h = new_harness ("min-matches=10", RGBA_CAPS);
  /* a frame with alpha: its right half transparent; keypoints stay off it */
  guint8 *alpha = g_malloc (FW * FH);
  for (int y = 0; y < FH; y++)
    for (int x = 0; x < FW; x++)
      alpha[y * FW + x] = x < FW / 2 ? 255 : 0;
  GstBuffer *out = gst_harness_push_and_pull (h, rgba_buffer (&frames[0], alpha));
  GstFeatureMatchMeta *m = gst_buffer_get_feature_match_meta (out);
  fail_unless (m && m->n_keypoints > 10);
  for (guint k = 0; k < m->n_keypoints; k++)
    fail_unless (m->keypoints[2 * k] < FW / 2 - 10, "keypoint at x %g in the masked half",
        m->keypoints[2 * k]);
  gst_buffer_unref (out);
  /* a wholly transparent frame: no features, no pairs, no error */
  memset (alpha, 0, FW * FH);
  out = gst_harness_push_and_pull (h, rgba_buffer (&frames[1], alpha));
  m = gst_buffer_get_feature_match_meta (out);
  fail_unless (m && m->n_keypoints == 0 && m->n_pairs == 0);
  fail_unless_equals_int (m->flags, GST_FEATURE_MATCH_FLAG_NO_FEATURES);
  gst_buffer_unref (out);
  /* a flat frame: no features */
  GrPlaneF flat;
  gr_synth_plane_alloc (&flat, FW, FH, FALSE);
  for (int i = 0; i < FW * FH; i++)
    flat.data[i] = 77.0f;
  out = gst_harness_push_and_pull (h, rgba_buffer (&flat, NULL));
  m = gst_buffer_get_feature_match_meta (out);
  fail_unless (m && m->n_keypoints == 0 && m->flags == GST_FEATURE_MATCH_FLAG_NO_FEATURES);
  fail_unless_equals_uint64 (m->frame, 2);
  gst_buffer_unref (out);
  gr_synth_plane_free (&flat);
  /* matching goes on after them: frame 3 (frame 0's pixels, opaque) overlaps frame 0 */
  out = gst_harness_push_and_pull (h, rgba_buffer (&frames[0], NULL));
  m = gst_buffer_get_feature_match_meta (out);
  fail_unless (m && m->n_pairs == 1 && m->pairs[0].frame == 0, "pairs %u", m->n_pairs);
  gst_buffer_unref (out);
  /* descriptor-size cannot change while running (k mismatch) */
  GstElement *fm = gst_harness_find_element (h, "featurematch");
  ASSERT_WARNING (g_object_set (fm, "descriptor-size", 32, NULL));
  gint ds;
  g_object_get (fm, "descriptor-size", &ds, NULL);
  fail_unless_equals_int (ds, 64);
  gst_object_unref (fm);
  out = gst_harness_push_and_pull (h, rgba_buffer (&frames[2], NULL));
  fail_unless (gst_buffer_get_feature_match_meta (out)->descriptor_size == 64);
  gst_buffer_unref (out);
  g_free (alpha);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_short_buffer)
{
  GstHarness *h = new_harness (NULL, GRAY8_CAPS);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  /* an empty buffer */
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new ()), GST_FLOW_ERROR);
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  GError *err = NULL;
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (g_error_matches (err, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT));
  fail_unless (strstr (err->message, "too small") != NULL, "%s", err->message);
  g_clear_error (&err);
  gst_message_unref (msg);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}
GST_END_TEST;

GST_START_TEST (test_bad_matrix_path_and_backend)
{
  GstHarness *h = new_harness ("matrix-location=/nonexistent/dir/m.npy", GRAY8_CAPS);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  gst_buffer_unref (gst_harness_push_and_pull (h, gray8_buffer (&frames[0])));
  gst_harness_push_event (h, gst_event_new_eos ());
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error for an unwritable matrix-location");
  GError *err = NULL;
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (g_error_matches (err, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_WRITE));
  fail_unless (strstr (err->message, "/nonexistent/dir/m.npy") != NULL, "%s",
      err->message);
  g_clear_error (&err);
  gst_message_unref (msg);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);

  if (gr_cuda_device_count () == 0) {
    GstElement *e = gst_element_factory_make ("featurematch", NULL);
    gst_util_set_object_arg (G_OBJECT (e), "backend", "cuda");
    bus = gst_bus_new ();
    gst_element_set_bus (e, bus);
    fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
        GST_STATE_CHANGE_FAILURE);
    msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    fail_unless (msg != NULL);
    gst_message_parse_error (msg, &err, NULL);
    fail_unless (g_error_matches (err, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS));
    g_clear_error (&err);
    gst_message_unref (msg);
    gst_element_set_state (e, GST_STATE_NULL);
    gst_element_set_bus (e, NULL);
    gst_object_unref (bus);
    gst_object_unref (e);
  }
}
GST_END_TEST;

static Suite *
featurematch_suite (void)
{
  Suite *s = suite_create ("featurematch");
  TCase *tc = tcase_create ("general");
  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_properties);
  tcase_add_test (tc, test_matches_meta_message);
  tcase_add_test (tc, test_matrix_files);
  tcase_add_test (tc, test_sliding_window);
  tcase_add_test (tc, test_rgba_mask_and_bad_frames);
  tcase_add_test (tc, test_short_buffer);
  tcase_add_test (tc, test_bad_matrix_path_and_backend);
  return s;
}

int
main (int argc, char **argv)
{
  gst_check_init (&argc, &argv);
  make_data ();
  int failed = gst_check_run_suite (featurematch_suite (), "featurematch", __FILE__);
  for (int i = 0; i < NFRAMES; i++)
    gr_synth_plane_free (&frames[i]);
  gr_synth_image_free (&control);
  if (!failed) {
    GDir *d = g_dir_open (tmpdir, 0, NULL);
    const gchar *n;
    while (d && (n = g_dir_read_name (d))) {
      gchar *p = g_build_filename (tmpdir, n, NULL);
      g_unlink (p);
      g_free (p);
    }
    if (d)
      g_dir_close (d);
    g_rmdir (tmpdir);
  }
  g_free (tmpdir);
  return failed ? 1 : 0;
}
