/* gst/georeg-results.c: the introspectable copies carry every field of the metas
 * (registration, localization, feature matches) and NULL / FALSE without them.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <string.h>
#include <gst/check/gstcheck.h>

#include "georeg-meta.h"
#include "nmiregister-meta.h"
#include "featurematch-meta.h"
#include "georeg-results.h"

GST_START_TEST (test_registration)
{
  GstBuffer *b = gst_buffer_new_allocate (NULL, 16, NULL);
  fail_unless (georeg_buffer_get_registration (b) == NULL);
  GstNmiRegisterMeta *m = gst_buffer_add_nmi_register_meta (b);
  m->flags = GST_NMI_REGISTER_FLAG_LOW_INLIERS | GST_NMI_REGISTER_FLAG_WINDOWS_CLIPPED;
  m->model = 3;
  m->has_transform = m->has_map = TRUE;
  for (int i = 0; i < 9; i++) {
    m->frame_to_control[i] = i + 0.5;
    m->frame_to_map[i] = 1000 + i;
  }
  for (int i = 0; i < 8; i++) {
    m->footprint_control[i] = 10 * i;
    m->footprint_map[i] = 431000 + i;
  }
  m->keypoints = 300;
  m->matches = 120;
  m->inliers = 99;
  m->rms = 0.31;
  m->prior_x = 12.5;
  m->prior_y = -3.25;
  m->prior_scale = 1.5;
  /* without a CRS: none in the copy */
  GeoregRegistration *r = georeg_buffer_get_registration (b);
  fail_unless (georeg_registration_get_crs (r) == NULL && r->epsg == 0 && !r->has_lonlat);
  fail_unless (isnan (r->center_lon) && isnan (georeg_registration_get_footprint_lonlat (r)[3]));
  georeg_registration_free (r);
  m->crs = g_intern_string ("EPSG:32617");
  m->epsg = 32617;
  m->has_lonlat = TRUE;
  for (int i = 0; i < 8; i++)
    m->footprint_lonlat[i] = (i & 1) ? 41.3 + i * 1e-5 : -81.8 - i * 1e-5;
  m->center_control[0] = 111.5;
  m->center_control[1] = 222.5;
  m->center_map[0] = 431100.25;
  m->center_map[1] = 4576900.75;
  m->center_lonlat[0] = -81.81;
  m->center_lonlat[1] = 41.31;
  r = georeg_buffer_get_registration (b);
  fail_unless (r != NULL);
  fail_unless_equals_int (r->flags, m->flags);
  fail_unless (r->model == 3 && r->has_transform && r->has_map);
  fail_unless (r->keypoints == 300 && r->matches == 120 && r->inliers == 99);
  fail_unless (r->rms == 0.31 && r->prior_x == 12.5 && r->prior_y == -3.25
      && r->prior_scale == 1.5);
  fail_unless (memcmp (georeg_registration_get_frame_to_control (r), m->frame_to_control,
          9 * sizeof (double)) == 0);
  fail_unless (memcmp (georeg_registration_get_frame_to_map (r), m->frame_to_map,
          9 * sizeof (double)) == 0);
  fail_unless (memcmp (georeg_registration_get_footprint_control (r), m->footprint_control,
          8 * sizeof (double)) == 0);
  fail_unless (memcmp (georeg_registration_get_footprint_map (r), m->footprint_map,
          8 * sizeof (double)) == 0);
  fail_unless_equals_string (georeg_registration_get_crs (r), "EPSG:32617");
  fail_unless (r->epsg == 32617 && r->has_lonlat);
  fail_unless (memcmp (georeg_registration_get_footprint_lonlat (r), m->footprint_lonlat,
          8 * sizeof (double)) == 0);
  fail_unless (r->center_x == 111.5 && r->center_y == 222.5 && r->center_map_x == 431100.25
      && r->center_map_y == 4576900.75 && r->center_lon == -81.81 && r->center_lat == 41.31);
  /* a copy, not a view: the buffer may go (the CRS string is interned: it stays) */
  gst_buffer_unref (b);
  GeoregRegistration *c = g_boxed_copy (GEOREG_TYPE_REGISTRATION, r);
  fail_unless (memcmp (c, r, sizeof *r) == 0);
  g_boxed_free (GEOREG_TYPE_REGISTRATION, c);
  georeg_registration_free (r);
}
GST_END_TEST;

GST_START_TEST (test_localization)
{
  GstBuffer *b = gst_buffer_new_allocate (NULL, 16, NULL);
  fail_unless (georeg_buffer_get_localization (b) == NULL);
  GstNmiLocalizeMeta *m = gst_buffer_add_nmi_localize_meta (b);
  m->flags = GST_NMI_LOCALIZE_FLAG_AMBIGUOUS;
  m->offset_x = 1;
  m->offset_y = 2;
  m->control_x = 3;
  m->control_y = 4;
  m->center_x = 5;
  m->center_y = 6;
  m->frame_scale = 0.25;
  m->control_scale = 0.5;
  m->score = 1.3;
  m->second_score = NAN;
  m->peak_ratio = 1.7;
  m->valid_pixels = 123456789012ull;
  m->has_map = TRUE;
  m->map_x = 431000.5;
  m->map_y = 4577000.25;
  GeoregLocalization *l = georeg_buffer_get_localization (b);
  gst_buffer_unref (b);
  fail_unless (l->flags == GST_NMI_LOCALIZE_FLAG_AMBIGUOUS);
  fail_unless (l->offset_x == 1 && l->offset_y == 2 && l->control_x == 3 && l->control_y == 4
      && l->center_x == 5 && l->center_y == 6);
  fail_unless (l->frame_scale == 0.25 && l->control_scale == 0.5 && l->score == 1.3
      && isnan (l->second_score) && l->peak_ratio == 1.7);
  fail_unless (l->valid_pixels == 123456789012ull && l->has_map && l->map_x == 431000.5
      && l->map_y == 4577000.25);
  georeg_localization_free (l);
}
GST_END_TEST;

GST_START_TEST (test_matches)
{
  GstBuffer *b = gst_buffer_new_allocate (NULL, 16, NULL);
  guint64 frame = 99;
  guint nk = 99;
  GPtrArray *pairs = (GPtrArray *) 0x1;
  fail_if (georeg_buffer_get_match_pairs (b, &frame, &nk, &pairs));
  fail_unless (pairs == NULL);
  GstFeatureMatchMeta *m = gst_buffer_add_feature_match_meta (b);
  m->frame = 7;
  const gfloat xy[6] = { 1, 2, 3, 4, 5, 6 };
  gst_feature_match_meta_set_keypoints (m, 3, xy);
  const gint32 idx[4] = { 0, 1, 2, 0 };
  GstFeatureMatchPair *p = gst_feature_match_meta_add_pair (m, 5, 2, idx, NULL);
  p->inliers = 2;
  p->flags = GST_FEATURE_MATCH_PAIR_HOMOGRAPHY;
  p->rms = 0.4;
  for (int i = 0; i < 9; i++)
    p->h[i] = i == 0 || i == 4 || i == 8 ? 1 : 0.1 * i;
  fail_unless (georeg_buffer_get_match_pairs (b, &frame, &nk, &pairs));
  fail_unless (frame == 7 && nk == 3 && pairs && pairs->len == 1);
  GeoregMatchPair *q = g_ptr_array_index (pairs, 0);
  fail_unless (q->frame == 5 && q->matches == 2 && q->inliers == 2
      && q->flags == GST_FEATURE_MATCH_PAIR_HOMOGRAPHY && q->rms == 0.4);
  fail_unless (memcmp (georeg_match_pair_get_homography (q), p->h, sizeof p->h) == 0);
  g_ptr_array_unref (pairs);
  fail_unless (georeg_buffer_get_match_pairs (b, NULL, NULL, NULL));
  gst_buffer_unref (b);
}
GST_END_TEST;

GST_START_TEST (test_source_location)
{
  GstBuffer *b = gst_buffer_new_allocate (NULL, 16, NULL);
  fail_unless (georeg_buffer_get_source_location (b) == NULL);
  georeg_buffer_set_source_location (b, "a/IMG_1.JPG");
  georeg_buffer_set_source_location (b, "b/IMG_2.JPG");
  fail_unless_equals_string (georeg_buffer_get_source_location (b), "b/IMG_2.JPG");
  GstBuffer *c = gst_buffer_copy (b);
  gst_buffer_unref (b);
  fail_unless_equals_string (georeg_buffer_get_source_location (c), "b/IMG_2.JPG");
  gst_buffer_unref (c);
}
GST_END_TEST;

GST_START_TEST (test_flag_names)
{
  gchar *t = georeg_register_flags_to_string (GST_NMI_REGISTER_FLAG_LOW_INLIERS |
      GST_NMI_REGISTER_FLAG_NO_COARSE | (1u << 20));
  fail_unless_equals_string (t, "no-coarse,low-inliers,bit-20");
  g_free (t);
  t = georeg_register_flags_to_string (GST_NMI_REGISTER_FLAG_REFINE_FAILED);
  fail_unless_equals_string (t, "refine-failed");
  g_free (t);
  t = georeg_register_flags_to_string (GST_NMI_REGISTER_FLAG_IMPRECISE |
      GST_NMI_REGISTER_FLAG_PRIOR_NEEDED | (1u << 13));
  fail_unless_equals_string (t, "imprecise,bit-13,prior-needed");
  g_free (t);
  t = georeg_register_flags_to_string (0);
  fail_unless_equals_string (t, "");
  g_free (t);
  t = georeg_localize_flags_to_string (GST_NMI_LOCALIZE_FLAG_NO_SECOND_PEAK |
      GST_NMI_LOCALIZE_FLAG_NO_VALID_PIXELS);
  fail_unless_equals_string (t, "no-valid-pixels,no-second-peak");
  g_free (t);
}
GST_END_TEST;

static Suite *
georeg_results_suite (void)
{
  Suite *s = suite_create ("georeg_results");
  TCase *tc = tcase_create ("general");
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_registration);
  tcase_add_test (tc, test_localization);
  tcase_add_test (tc, test_matches);
  tcase_add_test (tc, test_source_location);
  tcase_add_test (tc, test_flag_names);
  return s;
}

GST_CHECK_MAIN (georeg_results);
