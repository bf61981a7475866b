/* georeg: introspectable copies of the result metas (gst/georeg-results.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "georeg-results.h"

#include <string.h>

#include "georeg-meta.h"
#include "nmiregister-meta.h"
#include "featurematch-meta.h"
#include "georeg-lens-private.h"

GeoregRegistration *
georeg_registration_copy (const GeoregRegistration * r)
{
  return g_memdup2 (r, sizeof *r);
}

void
georeg_registration_free (GeoregRegistration * r)
{
  g_free (r);
}

G_DEFINE_BOXED_TYPE (GeoregRegistration, georeg_registration, georeg_registration_copy,
    georeg_registration_free);

GeoregRegistration *
georeg_buffer_get_registration (GstBuffer * buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  const GstNmiRegisterMeta *m = gst_buffer_get_nmi_register_meta (buffer);
  if (!m)
    return NULL;
  GeoregRegistration *r = g_new0 (GeoregRegistration, 1);
  r->flags = m->flags;
  r->model = m->model;
  r->has_transform = m->has_transform;
  r->has_map = m->has_map;
  r->keypoints = m->keypoints;
  r->matches = m->matches;
  r->inliers = m->inliers;
  r->rms = m->rms;
  r->prior_x = m->prior_x;
  r->prior_y = m->prior_y;
  r->prior_scale = m->prior_scale;
  memcpy (r->frame_to_control, m->frame_to_control, sizeof r->frame_to_control);
  memcpy (r->frame_to_map, m->frame_to_map, sizeof r->frame_to_map);
  memcpy (r->footprint_control, m->footprint_control, sizeof r->footprint_control);
  memcpy (r->footprint_map, m->footprint_map, sizeof r->footprint_map);
  r->crs = m->crs;
  r->epsg = m->epsg;
  r->has_lonlat = m->has_lonlat;
  r->center_x = m->center_control[0];
  r->center_y = m->center_control[1];
  r->center_map_x = m->center_map[0];
  r->center_map_y = m->center_map[1];
  r->center_lon = m->center_lonlat[0];
  r->center_lat = m->center_lonlat[1];
  memcpy (r->footprint_lonlat, m->footprint_lonlat, sizeof r->footprint_lonlat);
  r->undistorted = m->undistorted;
  memcpy (r->lens, m->lens, sizeof r->lens);
  r->doubtful = m->has_transform && gst_nmi_register_meta_doubt (m,
      gst_buffer_get_nmi_localize_meta (buffer)) != 0;
  r->predicted_error = m->predicted_error;
  return r;
}

gboolean
georeg_registration_frame_to_control (const GeoregRegistration * r, gdouble x, gdouble y,
    gdouble * cx, gdouble * cy)
{
  g_return_val_if_fail (r != NULL && cx != NULL && cy != NULL, FALSE);
  if (!r->has_transform)
    return FALSE;
  return georeg_map_frame_point (r->frame_to_control, r->undistorted, r->lens, x, y, cx, cy);
}

gboolean
georeg_registration_get_undistorted (const GeoregRegistration * r)
{
  g_return_val_if_fail (r != NULL, FALSE);
  return r->undistorted;
}

const gdouble *
georeg_registration_get_frame_to_control (const GeoregRegistration * r)
{
  return r->frame_to_control;
}

const gdouble *
georeg_registration_get_frame_to_map (const GeoregRegistration * r)
{
  return r->frame_to_map;
}

const gdouble *
georeg_registration_get_footprint_control (const GeoregRegistration * r)
{
  return r->footprint_control;
}

const gdouble *
georeg_registration_get_footprint_map (const GeoregRegistration * r)
{
  return r->footprint_map;
}

const gdouble *
georeg_registration_get_footprint_lonlat (const GeoregRegistration * r)
{
  return r->footprint_lonlat;
}

const gchar *
georeg_registration_get_crs (const GeoregRegistration * r)
{
  return r->crs;
}

GeoregLocalization *
georeg_localization_copy (const GeoregLocalization * l)
{
  return g_memdup2 (l, sizeof *l);
}

void
georeg_localization_free (GeoregLocalization * l)
{
  g_free (l);
}

G_DEFINE_BOXED_TYPE (GeoregLocalization, georeg_localization, georeg_localization_copy,
    georeg_localization_free);

GeoregLocalization *
georeg_buffer_get_localization (GstBuffer * buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  const GstNmiLocalizeMeta *m = gst_buffer_get_nmi_localize_meta (buffer);
  if (!m)
    return NULL;
  GeoregLocalization *l = g_new0 (GeoregLocalization, 1);
  l->flags = m->flags;
  l->offset_x = m->offset_x;
  l->offset_y = m->offset_y;
  l->control_x = m->control_x;
  l->control_y = m->control_y;
  l->center_x = m->center_x;
  l->center_y = m->center_y;
  l->frame_scale = m->frame_scale;
  l->control_scale = m->control_scale;
  l->score = m->score;
  l->second_score = m->second_score;
  l->peak_ratio = m->peak_ratio;
  l->valid_pixels = m->valid_pixels;
  l->has_map = m->has_map;
  l->map_x = m->map_x;
  l->map_y = m->map_y;
  return l;
}

GeoregMatchPair *
georeg_match_pair_copy (const GeoregMatchPair * p)
{
  return g_memdup2 (p, sizeof *p);
}

void
georeg_match_pair_free (GeoregMatchPair * p)
{
  g_free (p);
}

G_DEFINE_BOXED_TYPE (GeoregMatchPair, georeg_match_pair, georeg_match_pair_copy,
    georeg_match_pair_free);

const gdouble *
georeg_match_pair_get_homography (const GeoregMatchPair * p)
{
  return p->h;
}

gboolean
georeg_buffer_get_match_pairs (GstBuffer * buffer, guint64 * frame, guint * n_keypoints,
    GPtrArray ** pairs)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), FALSE);
  const GstFeatureMatchMeta *m = gst_buffer_get_feature_match_meta (buffer);
  if (pairs)
    *pairs = NULL;
  if (!m)
    return FALSE;
  if (frame)
    *frame = m->frame;
  if (n_keypoints)
    *n_keypoints = m->n_keypoints;
  if (!pairs)
    return TRUE;
  GPtrArray *a = g_ptr_array_new_with_free_func ((GDestroyNotify) georeg_match_pair_free);
  for (guint i = 0; i < m->n_pairs; i++) {
    const GstFeatureMatchPair *s = &m->pairs[i];
    GeoregMatchPair *p = g_new0 (GeoregMatchPair, 1);
    p->frame = s->frame;
    p->matches = s->matches;
    p->inliers = s->inliers;
    p->flags = s->flags;
    p->rms = s->rms;
    memcpy (p->h, s->h, sizeof p->h);
    g_ptr_array_add (a, p);
  }
  *pairs = a;
  return TRUE;
}

/* The custom meta is registered on first use by whichever side (application or plugin)
 * gets there first. */
static const gchar SOURCE_META[] = "GeoregSourceMeta";

static void
source_meta_register (void)
{
  static gsize done = 0;
  if (g_once_init_enter (&done)) {
    /* no tags: every element (transforms included) keeps it */
    static const gchar *no_tags[] = { NULL };
    if (!gst_meta_get_info (SOURCE_META))
      gst_meta_register_custom (SOURCE_META, no_tags, NULL, NULL, NULL);
    g_once_init_leave (&done, 1);
  }
}

void
georeg_buffer_set_source_location (GstBuffer * buffer, const gchar * location)
{
  g_return_if_fail (GST_IS_BUFFER (buffer) && gst_buffer_is_writable (buffer));
  source_meta_register ();
  GstCustomMeta *m = gst_buffer_get_custom_meta (buffer, SOURCE_META);
  if (!m)
    m = gst_buffer_add_custom_meta (buffer, SOURCE_META);
  if (m)
    gst_structure_set (gst_custom_meta_get_structure (m), "location", G_TYPE_STRING,
        location, NULL);
}

const gchar *
georeg_buffer_get_source_location (GstBuffer * buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  source_meta_register ();
  GstCustomMeta *m = gst_buffer_get_custom_meta (buffer, SOURCE_META);
  return m ? gst_structure_get_string (gst_custom_meta_get_structure (m), "location") : NULL;
}

static gchar *
flags_to_string (guint flags, const char *const *names, guint n)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < 32; i++) {
    if (!(flags & (1u << i)))
      continue;
    if (s->len)
      g_string_append_c (s, ',');
    if (i < n && names[i])
      g_string_append (s, names[i]);
    else
      g_string_append_printf (s, "bit-%u", i);
  }
  return g_string_free (s, FALSE);
}

gchar *
georeg_register_flags_to_string (guint flags)
{
  /* bit order of GstNmiRegisterFlags (nmiregister-meta.h) */
  static const char *const names[] = { "no-coarse", "coarse-unusable", "initial-offset",
    "full-search", "too-few-keypoints", "too-few-matches", "windows-clipped", "degenerate",
    "no-consensus", "low-inliers", "poor-spread", "refine-failed", "imprecise", NULL,
    NULL, NULL, "prior-needed"
  };
  return flags_to_string (flags, names, G_N_ELEMENTS (names));
}

gchar *
georeg_localize_flags_to_string (guint flags)
{
  /* bit order of GstNmiLocalizeFlags (georeg-meta.h) */
  static const char *const names[] = { "no-valid-pixels", "no-overlap", "at-border",
    "ambiguous", "no-second-peak", "heading-searched", "scale-searched", "low-overlap",
    "prior-used", "implausible", "verified", NULL, NULL, NULL, NULL, NULL, "prior-needed"
  };
  return flags_to_string (flags, names, G_N_ELEMENTS (names));
}
