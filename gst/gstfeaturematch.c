/* featurematch: which earlier frames does this frame overlap, and how?
 *
 * Per frame: Shi-Tomasi keypoints spread over the frame (kernels/keypoints.h, mask
 * honoured), rotation-invariant float descriptors of 32 or 64 values
 * (kernels/descriptors.h), and the matcher's incremental form (kernels/matcher.h):
 * the new descriptors against every held earlier frame and every held descriptor
 * against the new frame, nearest and second-nearest by L2 with Lowe's ratio test.
 * For each earlier frame with at least min-matches (cross-checked) matches: a robust
 * homography (kernels/fit.h, LO-RANSAC, 2 px), its inliers refined to sub-pixel
 * accuracy against the earlier frame's stored patches, and a final fit (1 px).
 * Frames pass through unchanged with a GstFeatureMatchMeta (gst/featurematch-meta.h)
 * and an element message "featurematch".  At EOS, when matrix-location is set, the
 * whole m x n correspondence matrix, the keypoints, the image offsets and the
 * descriptors are written as .npy files.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gstfeaturematch.h"
#include "featurematch-meta.h"
#include "georeg-frame-meta.h"
#include "gstfeaturematch-output.h"
#include "descriptors.h"
#include "fit.h"
#include "keypoints.h"
#include "matcher.h"
#include "pairfit.h"
#include "threadshare.h"

GST_DEBUG_CATEGORY_STATIC (gst_feature_match_debug);
#define GST_CAT_DEFAULT gst_feature_match_debug

enum {
  PROP_0,
  PROP_RATIO,
  PROP_MAX_IMAGES,
  PROP_MIN_MATCHES,
  PROP_MAX_FEATURES,
  PROP_DESCRIPTOR_SIZE,
  PROP_CROSS_CHECK,
  PROP_MATRIX_LOCATION,
};

#define DEFAULT_RATIO 0.8
#define DEFAULT_MAX_IMAGES 0
#define DEFAULT_MIN_MATCHES 20
#define DEFAULT_MAX_FEATURES 500
#define DEFAULT_DESCRIPTOR_SIZE 64
#define DEFAULT_CROSS_CHECK TRUE

#define FIT_THRESHOLD 2.0         /* px, first robust fit */
#define REFIT_THRESHOLD 1.0       /* px, fit on the refined correspondences */
#define REFINE_MIN_NCC 0.8        /* refined correspondences kept above this */
#define MIN_FIT_POINTS 8

#define VIDEO_CAPS GST_GEOREG_CUDA_CAPS (GST_GEOREG_VIDEO_FORMATS)

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));

/* Properties, read under the object lock and copied per frame. */
typedef struct {
  gdouble ratio;
  guint max_images;
  guint min_matches;
  guint max_features;
  gint descriptor_size;
  gboolean cross_check;
  gchar *matrix_location;
} GstFeatureMatchSettings;

struct _GstFeatureMatch {
  GstGeoregBase parent;

  GstFeatureMatchSettings settings;

  /* from start() */
  GrMatcher *matcher;
  GrFeatures *features;         /* keypoints + descriptors, on the element's backend */
  gint k;                       /* descriptor size of this run */
  gchar *matrix_location;       /* of this run */

  gboolean have_info;            /* negotiated (the info is the base's) */

  /* the frames held for matching (oldest first): keypoints and refinement patches */
  GQueue held;
  /* per frame, when matrix_location is set: what the .npy files need */
  GPtrArray *records;

  /* per-frame scratch, reused */
  GrPlaneF plane;
  guint64 frame_count;
  gboolean announced;
  gboolean share_joined;        /* counted among the streams of threadshare.h */

  gint dev;                     /* CUDA features: their device (frames go there as
                                   device planes, gr_features_extract_device); -1 =
                                   host planes */
  const GrPlaneF *view;         /* this frame as patches and refinement read it */
};

#define gst_feature_match_parent_class parent_class
G_DEFINE_TYPE (GstFeatureMatch, gst_feature_match, GST_TYPE_GEOREG_BASE);
GST_ELEMENT_REGISTER_DEFINE (featurematch, "featurematch", GST_RANK_NONE,
    GST_TYPE_FEATURE_MATCH);

/* A frame held for matching. */
typedef struct {
  guint64 index;
  gint n;
  GrKeypoint *kp;
  guint8 *patches;              /* n x GR_PATCH_BYTES */
} HeldFrame;


static void
held_frame_free (gpointer p)
{
  HeldFrame *f = p;
  g_free (f->kp);
  g_free (f->patches);
  g_free (f);
}

/* ------------------------------------------------------------------ properties */

static void
gst_feature_match_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstFeatureMatch *self = GST_FEATURE_MATCH (object);
  GstFeatureMatchSettings *s = &self->settings;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_RATIO:
      s->ratio = g_value_get_double (value);
      break;
    case PROP_MAX_IMAGES:
      s->max_images = g_value_get_uint (value);
      break;
    case PROP_MIN_MATCHES:
      s->min_matches = g_value_get_uint (value);
      break;
    case PROP_MAX_FEATURES:
      s->max_features = g_value_get_uint (value);
      break;
    case PROP_DESCRIPTOR_SIZE:{
      const gint v = g_value_get_int (value);
      if (v != 32 && v != 64) {
        GST_OBJECT_UNLOCK (self);
        g_warning ("featurematch: descriptor-size must be 32 or 64 (got %d); ignored", v);
        return;
      }
      if (self->matcher && v != self->k) {
        GST_OBJECT_UNLOCK (self);
        g_warning ("featurematch: descriptor-size cannot change while running (%d in "
            "use); ignored", self->k);
        return;
      }
      s->descriptor_size = v;
      break;
    }
    case PROP_CROSS_CHECK:
      s->cross_check = g_value_get_boolean (value);
      break;
    case PROP_MATRIX_LOCATION:
      g_free (s->matrix_location);
      s->matrix_location = g_value_dup_string (value);
      break;
    default:
      GST_OBJECT_UNLOCK (self);
      gst_georeg_base_set_property (object, prop_id, value, pspec);
      return;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_feature_match_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstFeatureMatch *self = GST_FEATURE_MATCH (object);
  GstFeatureMatchSettings *s = &self->settings;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_RATIO:
      g_value_set_double (value, s->ratio);
      break;
    case PROP_MAX_IMAGES:
      g_value_set_uint (value, s->max_images);
      break;
    case PROP_MIN_MATCHES:
      g_value_set_uint (value, s->min_matches);
      break;
    case PROP_MAX_FEATURES:
      g_value_set_uint (value, s->max_features);
      break;
    case PROP_DESCRIPTOR_SIZE:
      g_value_set_int (value, s->descriptor_size);
      break;
    case PROP_CROSS_CHECK:
      g_value_set_boolean (value, s->cross_check);
      break;
    case PROP_MATRIX_LOCATION:
      g_value_set_string (value, s->matrix_location);
      break;
    default:
      GST_OBJECT_UNLOCK (self);
      gst_georeg_base_get_property (object, prop_id, value, pspec);
      return;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ------------------------------------------------------------------ lifecycle */

static void
release_resources (GstFeatureMatch * self)
{
  gr_matcher_free (self->matcher);
  self->matcher = NULL;
  gr_features_free (self->features);
  self->features = NULL;
  g_queue_clear_full (&self->held, held_frame_free);
  if (self->records) {
    g_ptr_array_free (self->records, TRUE);
    self->records = NULL;
  }
  gr_plane_clear (&self->plane);
  self->view = NULL;
  self->dev = -1;
  g_clear_pointer (&self->matrix_location, g_free);
}

static gboolean
gst_feature_match_start (GstBaseTransform * trans)
{
  GstFeatureMatch *self = GST_FEATURE_MATCH (trans);
  char err[512] = "";
  GrBackend backend;
  gint dev;

  GstGeoregBaseSettings c;
  GST_OBJECT_LOCK (self);
  gst_georeg_base_get_settings_unlocked (GST_GEOREG_BASE (self), &c);
  backend = c.backend;
  dev = gst_georeg_base_engine_device (GST_GEOREG_BASE (self), c.cuda_device_id);
  gst_georeg_base_settings_clear (&c);
  self->k = self->settings.descriptor_size;
  self->matrix_location = g_strdup (self->settings.matrix_location);
  GST_OBJECT_UNLOCK (self);

  GrStatus st;
  GrMatcher *mt = gr_matcher_new (backend, dev, &st, err, sizeof err);
  if (!mt) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Cannot use the %s backend.", gr_backend_name (backend)), ("%s", err));
    release_resources (self);
    return FALSE;
  }
  /* auto: a CUDA engine that cannot be made (e.g. out of device memory) falls back to
   * the CPU, the reason in err */
  if (backend == GR_BACKEND_AUTO && gr_matcher_backend (mt) == GR_BACKEND_CPU && err[0])
    GST_WARNING_OBJECT (self, "backend=auto: the CUDA matcher cannot be used (%s); "
        "matching on the CPU", err);
  err[0] = '\0';
  GrFeatures *ft = gr_features_new (backend, dev, &st, err, sizeof err);
  if (!ft) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Cannot use the %s backend.", gr_backend_name (backend)), ("%s", err));
    gr_matcher_free (mt);
    release_resources (self);
    return FALSE;
  }
  if (backend == GR_BACKEND_AUTO && gr_features_backend (ft) == GR_BACKEND_CPU && err[0])
    GST_WARNING_OBJECT (self, "backend=auto: CUDA features cannot be used (%s); "
        "keypoints and descriptors on the CPU", err);
  GST_OBJECT_LOCK (self);
  self->matcher = mt;
  self->features = ft;
  GST_OBJECT_UNLOCK (self);
  /* CUDA features take every frame as a device plane: CUDA memory in place, system
   * memory as its 8-bit plane uploaded and converted there */
  self->dev = gr_features_backend (ft) == GR_BACKEND_CUDA ? MAX (dev, 0) : -1;
  if (self->matrix_location && *self->matrix_location)
    self->records = g_ptr_array_new_with_free_func (gst_feature_match_record_free);
  self->frame_count = 0;
  self->announced = FALSE;
  /* its patches and pair fits share the host's cores with the other streams'
   * (threadshare.h) */
  gr_thread_share_join ();
  self->share_joined = TRUE;
  GST_INFO_OBJECT (self, "features on the %s backend, matching on the %s backend, "
      "descriptors of %d", gr_backend_name (gr_features_backend (ft)),
      gr_backend_name (gr_matcher_backend (mt)), self->k);
  return TRUE;
}

static gboolean
gst_feature_match_stop (GstBaseTransform * trans)
{
  GstFeatureMatch *self = GST_FEATURE_MATCH (trans);
  GST_OBJECT_LOCK (self);
  GrMatcher *mt = self->matcher;
  self->matcher = NULL;
  GST_OBJECT_UNLOCK (self);
  gr_matcher_free (mt);
  release_resources (self);
  if (self->share_joined)
    gr_thread_share_quit ();
  self->share_joined = FALSE;
  return TRUE;
}


/* ------------------------------------------------------------------ caps */

static gboolean
gst_feature_match_set_info (GstGeoregBase * base, GstCaps * incaps,
    const GstVideoInfo * info)
{
  GST_FEATURE_MATCH (base)->have_info = TRUE;
  return TRUE;
}

static gboolean
gst_feature_match_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  GstFeatureMatch *self = GST_FEATURE_MATCH (trans);
  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && self->records &&
      self->matrix_location && *self->matrix_location) {
    gchar *failed = NULL, *reason = NULL;
    if (!gst_feature_match_write_npy (self->matrix_location, self->records, self->k,
            &failed, &reason)) {
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE,
          ("Could not write the correspondence matrix files (\"%s\").", failed),
          ("%s", reason));
    } else {
      GST_INFO_OBJECT (self, "wrote the %u x %s matrix to %s", self->records->len,
          "n", self->matrix_location);
    }
    g_free (failed);
    g_free (reason);
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

/* ------------------------------------------------------------------ per frame */

/* The robust, sub-pixel refined homographies of the frame's pairs: all pairs and all
 * their refinements at once on every core (kernels/pairfit.h), each pair with its own
 * seed, so the results do not depend on the thread count.  fit_of[i]: the held frame
 * of m->pairs[i]. */
static GrStatus
fit_pairs (GstFeatureMatch * self, const GrKeypoint * kp, const HeldFrame ** fit_of,
    GstFeatureMatchMeta * m, GstFeatureMatchTimes * times)
{
  const gint n = (gint) m->n_pairs;
  if (n == 0)
    return GR_OK;
  GrPairFitJob *jobs = g_new0 (GrPairFitJob, n);
  GrPairFitResult *res = g_new0 (GrPairFitResult, n);
  for (gint i = 0; i < n; i++) {
    jobs[i].kp = fit_of[i]->kp;
    jobs[i].patches = fit_of[i]->patches;
    jobs[i].pairs = m->pairs[i].pairs;
    jobs[i].m = (gint) m->pairs[i].matches;
    jobs[i].seed = self->frame_count * 1000003u + fit_of[i]->index;
    res[i].inlier = m->pairs[i].inlier;
  }
  GrPairFitParams pp;
  gr_pairfit_params_init (&pp);
  pp.fit_threshold = FIT_THRESHOLD;
  pp.refit_threshold = REFIT_THRESHOLD;
  pp.min_ncc = REFINE_MIN_NCC;
  pp.min_points = MIN_FIT_POINTS;
  GrPairFitStats ps;
  const GrStatus st = gr_pairfit_run (self->view, gr_features_scratch (self->features),
      kp, jobs, n, &pp, res, &ps);
  times->fit_first_ms = ps.fit_ms;
  times->refine_ms = ps.refine_ms;
  times->refit_ms = ps.refit_ms;
  for (gint i = 0; st == GR_OK && i < n; i++) {
    GstFeatureMatchPair *out = &m->pairs[i];
    if (!(res[i].flags & GR_PAIRFIT_HOMOGRAPHY))
      continue;
    memcpy (out->h, res[i].h, sizeof out->h);
    out->rms = res[i].rms;
    out->inliers = res[i].inliers;
    out->flags |= GST_FEATURE_MATCH_PAIR_HOMOGRAPHY;
    if (res[i].flags & GR_PAIRFIT_REFINED)
      out->flags |= GST_FEATURE_MATCH_PAIR_REFINED;
  }
  g_free (jobs);
  g_free (res);
  return st;
}

static GstFlowReturn
gst_feature_match_transform_ip (GstBaseTransform * trans, GstBuffer * buf)
{
  GstFeatureMatch *self = GST_FEATURE_MATCH (trans);
  GstGeoregBase *base = GST_GEOREG_BASE (trans);
  const GstVideoInfo *info = gst_georeg_base_info (base);
  GstFeatureMatchSettings s;
  GstGeoregBaseSettings c;
  char err[512] = "";
  const gint64 t0 = g_get_monotonic_time ();

  if (!self->matcher || !self->have_info) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("Not negotiated."), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  GST_OBJECT_LOCK (self);
  s = self->settings;
  s.matrix_location = NULL;
  gst_georeg_base_get_settings_unlocked (base, &c);
  GST_OBJECT_UNLOCK (self);
  gst_georeg_base_settings_clear (&c);  /* only the numbers are used */

  if (gst_buffer_get_size (buf) < GST_VIDEO_INFO_SIZE (info)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Frame buffer too small: %" G_GSIZE_FORMAT
            " bytes, the caps need %" G_GSIZE_FORMAT ".", gst_buffer_get_size (buf),
            GST_VIDEO_INFO_SIZE (info)), (NULL));
    return GST_FLOW_ERROR;
  }
  GrPlaneF dplane = { 0 };
  gboolean on_device = FALSE;
  if (self->dev >= 0) {
    if (!gst_georeg_base_frame_to_device (base, buf, c.nodata, self->dev, 0.0, FALSE,
            &dplane, &on_device, err, sizeof err)) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Could not read the frame on the "
              "device."), ("%s", err));
      return GST_FLOW_ERROR;
    }
  }
  if (!on_device && !gst_georeg_base_read_plane (base, buf, c.nodata, &self->plane))
    return GST_FLOW_ERROR;
  /* wall-clock phases (the engines' own figures are device or CPU time): where a frame
   * waits when several streams share the GPU and the cores */
  GstFeatureMatchTimes times = { 0 };
  gint64 tp = g_get_monotonic_time ();
  times.read_ms = (tp - t0) / 1000.0;

  /* keypoints, descriptors, patches */
  GrDescriptorParams dp;
  gr_descriptor_params_init (&dp);
  dp.size = self->k;
  GrKeypointParams kpp;
  gr_keypoint_params_init (&kpp);
  kpp.max_keypoints = MAX (1, (gint) s.max_features);
  kpp.margin = gr_descriptor_margin (&dp);
  const gint cap = kpp.max_keypoints;
  GrKeypoint *kp = g_new (GrKeypoint, cap);
  gfloat *desc = g_new (gfloat, (gsize) cap * self->k);
  GrFeatureStats fs;
  /* a host frame's keypoint responses, made once for every georeg element on it
   * (nmiregister upstream has made them when it detected on this frame) */
  GstGeoregFrame *hold = NULL;
  if (!on_device && gr_features_backend (self->features) == GR_BACKEND_CPU)
    gr_features_set_responses (self->features, gst_georeg_base_keypoint_responses (base,
            buf, c.nodata, kpp.block_radius, &hold), kpp.block_radius);
  gint nk = on_device ? gr_features_extract_device (self->features, &dplane, &kpp, &dp,
      kp, cap, desc, NULL, &fs, err, sizeof err) :
      gr_features_extract (self->features, &self->plane, &kpp, &dp, kp, cap, desc, NULL,
      &fs, err, sizeof err);
  gst_georeg_frame_unref (hold);
  /* what patches and refinement read of the frame: its mask around the keypoints */
  self->view = on_device ? gr_features_validity (self->features) : &self->plane;
  times.extract_wall_ms = (g_get_monotonic_time () - tp) / 1000.0;
  tp = g_get_monotonic_time ();
  if (nk < 0) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Keypoints or descriptors failed (%s).",
            gr_status_string ((GrStatus) - nk)), ("%s", err));
    g_free (kp);
    g_free (desc);
    return GST_FLOW_ERROR;
  }
  guint8 *patches = g_new (guint8, (gsize) MAX (nk, 1) * GR_PATCH_BYTES);
  if (nk > 0 && gr_descriptor_patches (self->view,
          gr_features_scratch (self->features), kp, nk, patches) != GR_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Patch extraction failed."), (NULL));
    g_free (kp);
    g_free (desc);
    g_free (patches);
    return GST_FLOW_ERROR;
  }

  times.patches_ms = (g_get_monotonic_time () - tp) / 1000.0;
  tp = g_get_monotonic_time ();

  /* the sliding window */
  if (s.max_images > 0) {
    while (g_queue_get_length (&self->held) > s.max_images) {
      gr_matcher_drop_oldest (self->matcher, 1);
      held_frame_free (g_queue_pop_head (&self->held));
    }
  }
  const gint held = gr_matcher_held_images (self->matcher);
  const gint64 held_desc = gr_matcher_held_descriptors (self->matcher);
  /* the results stay in the matcher's (pinned) buffers until the next add */
  const gint32 *fwd = NULL, *bwd = NULL;
  GrMatchStats ms;
  GrStatus st = gr_matcher_add_view (self->matcher, desc, nk, self->k, (float) s.ratio,
      &fwd, &bwd, &ms, err, sizeof err);
  if (st != GR_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Matching failed (%s).",
            gr_status_string (st)), ("%s", err));
    g_free (kp);
    g_free (desc);
    g_free (patches);
    return GST_FLOW_ERROR;
  }

  GstFeatureMatchMeta *m = gst_buffer_add_feature_match_meta (buf);
  m->frame = self->frame_count;
  m->descriptor_size = self->k;
  gfloat *xy = g_new (gfloat, 2 * (gsize) MAX (nk, 1));
  for (gint i = 0; i < nk; i++) {
    xy[2 * i] = kp[i].x;
    xy[2 * i + 1] = kp[i].y;
  }
  gst_feature_match_meta_set_keypoints (m, nk, xy);
  if (nk == 0)
    m->flags |= GST_FEATURE_MATCH_FLAG_NO_FEATURES;

  /* the pairs: this frame against each held frame; their robust fits (independent,
   * each with its own seed, so the results do not depend on the threads) run in
   * parallel once every pair is in the meta (adding a pair may move the array) */
  gint32 *pairs = g_new (gint32, 2 * (gsize) MAX (nk, 1));
  const HeldFrame **fit_of = g_new (const HeldFrame *,
      MAX (g_queue_get_length (&self->held), 1));
  gint64 boff = 0;
  gint p = 0;
  for (GList * l = self->held.head; l; l = l->next, p++) {
    const HeldFrame *e = l->data;
    gint cnt = 0;
    for (gint a = 0; a < nk; a++) {
      const gint32 w = fwd[(gint64) p * nk + a];
      if (w < 0)
        continue;
      if (s.cross_check && bwd[boff + w] != a)
        continue;
      pairs[2 * cnt] = a;
      pairs[2 * cnt + 1] = w;
      cnt++;
    }
    if (cnt > 0 && (guint) cnt >= s.min_matches) {
      fit_of[m->n_pairs] = e;
      gst_feature_match_meta_add_pair (m, e->index, cnt, pairs, NULL);
    }
    boff += e->n;
  }
  g_free (pairs);
  times.match_wall_ms = (g_get_monotonic_time () - tp) / 1000.0;
  tp = g_get_monotonic_time ();
  const GrStatus fst = fit_pairs (self, kp, fit_of, m, &times);
  times.fits_ms = (g_get_monotonic_time () - tp) / 1000.0;
  g_free (fit_of);
  if (fst != GR_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("The pair fits failed (%s).",
            gr_status_string (fst)), (NULL));
    g_free (kp);
    g_free (desc);
    g_free (patches);
    g_free (xy);
    return GST_FLOW_ERROR;
  }

  if (self->records) {
    GstFeatureMatchRecord *r = g_new0 (GstFeatureMatchRecord, 1);
    r->n = nk;
    r->held = held;
    r->first = self->frame_count - held;
    r->held_desc = held_desc;
    r->xy = xy;
    xy = NULL;
    r->desc = desc;
    desc = NULL;
    r->fwd = g_memdup2 (fwd, sizeof (gint32) * MAX ((gsize) held * nk, 1));
    r->bwd = g_memdup2 (bwd, sizeof (gint32) * MAX ((gsize) held_desc, 1));
    g_ptr_array_add (self->records, r);
  }
  HeldFrame *hf = g_new0 (HeldFrame, 1);
  hf->index = self->frame_count;
  hf->n = nk;
  hf->kp = kp;
  hf->patches = patches;
  g_queue_push_tail (&self->held, hf);
  g_free (xy);
  g_free (desc);

  if (!self->announced) {
    GST_INFO_OBJECT (self, "matching on the %s backend",
        gr_backend_name (gr_matcher_backend (self->matcher)));
    self->announced = TRUE;
  }
  const gdouble total_ms = (g_get_monotonic_time () - t0) / 1000.0;
  times.features_ms = fs.elapsed_ms;
  times.match_ms = ms.elapsed_ms;
  times.total_ms = total_ms;
  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": %d keypoints (%.2f ms), %u pairs, "
      "match %.2f ms (%" G_GINT64_FORMAT " re-checked), total %.1f ms", self->frame_count,
      nk, fs.elapsed_ms, m->n_pairs, ms.elapsed_ms, ms.rechecked, total_ms);
  if (c.post_messages)
    gst_georeg_base_post_result (base, gst_feature_match_message (m,
            GST_BUFFER_PTS (buf), gr_backend_name (gr_matcher_backend (self->matcher)),
            gst_georeg_input_name (gst_georeg_base_input (base)),
            gr_matcher_held_images (self->matcher) - 1, &times));
  self->frame_count++;
  return GST_FLOW_OK;
}

/* ------------------------------------------------------------------ class */

static void
gst_feature_match_finalize (GObject * object)
{
  GstFeatureMatch *self = GST_FEATURE_MATCH (object);
  release_resources (self);
  g_free (self->settings.matrix_location);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_feature_match_class_init (GstFeatureMatchClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
  const GParamFlags rw_ready = rw | GST_PARAM_MUTABLE_READY;
  const GParamFlags rw_playing = rw | GST_PARAM_MUTABLE_PLAYING;

  gobject_class->set_property = gst_feature_match_set_property;
  gobject_class->get_property = gst_feature_match_get_property;
  gobject_class->finalize = gst_feature_match_finalize;

  g_object_class_install_property (gobject_class, PROP_RATIO,
      g_param_spec_double ("ratio", "Ratio",
          "Lowe's ratio test: a nearest neighbour is kept when d1 / d2 < ratio "
          "(d1, d2: L2 distances to the nearest and second-nearest descriptor of the "
          "other frame)", 0.01, 4.0, DEFAULT_RATIO, rw_playing));
  g_object_class_install_property (gobject_class, PROP_MAX_IMAGES,
      g_param_spec_uint ("max-images", "Max images",
          "Earlier frames each frame is matched against: 0 = all of them; N = the N "
          "most recent (a sliding window)", 0, G_MAXINT, DEFAULT_MAX_IMAGES,
          rw_playing));
  g_object_class_install_property (gobject_class, PROP_MIN_MATCHES,
      g_param_spec_uint ("min-matches", "Min matches",
          "An earlier frame is reported (with a homography) when it shares at least "
          "this many matches with the frame", 1, G_MAXINT, DEFAULT_MIN_MATCHES,
          rw_playing));
  g_object_class_install_property (gobject_class, PROP_MAX_FEATURES,
      g_param_spec_uint ("max-features", "Max features",
          "Keypoints per frame at most (spread over the frame by a grid)", 1, 100000,
          DEFAULT_MAX_FEATURES, rw_playing));
  g_object_class_install_property (gobject_class, PROP_DESCRIPTOR_SIZE,
      g_param_spec_int ("descriptor-size", "Descriptor size",
          "Descriptor length: 32 (2x2 cells x 8 orientations) or 64 (4x4 cells x 4 "
          "orientations)", 32, 64, DEFAULT_DESCRIPTOR_SIZE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_CROSS_CHECK,
      g_param_spec_boolean ("cross-check", "Cross check",
          "Keep a match only when it is also the other frame's match (both ratio "
          "tests pass and agree)", DEFAULT_CROSS_CHECK, rw_playing));
  g_object_class_install_property (gobject_class, PROP_MATRIX_LOCATION,
      g_param_spec_string ("matrix-location", "Matrix location",
          "At EOS write the m x n int32 correspondence matrix (row i = frame i, "
          "column j = descriptor j; entry = index of j's match within frame i, or -1) "
          "to this .npy file, and beside it <name>-keypoints.npy (float32 n x 2), "
          "<name>-offsets.npy (int64 m+1: the frames' first descriptors) and "
          "<name>-descriptors.npy (float32 n x k); unset = none (nothing is kept)",
          NULL, rw_ready));
  gst_georeg_base_class_install_properties (GST_GEOREG_BASE_CLASS (klass),
      GST_GEOREG_PROPS_NODATA | GST_GEOREG_PROPS_BACKEND |
      GST_GEOREG_PROPS_POST_MESSAGES, GST_GEOREG_BINS_AUTO);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Feature matching", "Filter/Analyzer/Video",
      "Detects keypoints and rotation-invariant descriptors in every frame and matches "
      "them against the earlier frames (nearest and second-nearest neighbour by L2, "
      "Lowe's ratio test; exact float search on CPU or CUDA), with a robust, "
      "sub-pixel refined homography per overlapping pair.  Frames pass through with "
      "a GstFeatureMatchMeta and a 'featurematch' message; the whole correspondence "
      "matrix is written as .npy at EOS on request", "georeg developers");

  trans_class->start = GST_DEBUG_FUNCPTR (gst_feature_match_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_feature_match_stop);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (gst_feature_match_sink_event);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR (gst_feature_match_transform_ip);
  GST_GEOREG_BASE_CLASS (klass)->set_info =
      GST_DEBUG_FUNCPTR (gst_feature_match_set_info);

  GST_DEBUG_CATEGORY_INIT (gst_feature_match_debug, "featurematch", 0,
      "Feature matching");
}

static void
gst_feature_match_init (GstFeatureMatch * self)
{
  GstFeatureMatchSettings *s = &self->settings;
  s->ratio = DEFAULT_RATIO;
  s->max_images = DEFAULT_MAX_IMAGES;
  s->min_matches = DEFAULT_MIN_MATCHES;
  s->max_features = DEFAULT_MAX_FEATURES;
  s->descriptor_size = DEFAULT_DESCRIPTOR_SIZE;
  s->cross_check = DEFAULT_CROSS_CHECK;
  g_queue_init (&self->held);
  self->dev = -1;
}
