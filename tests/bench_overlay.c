/* nmiregister's overlay (gst/gstnmiregisteroverlay.c): the cost per frame of
 * overlay=meta (render the composition) and overlay=draw (render + blend into the
 * frame, in bands of rows on every core), on a 3840 x 2160 frame with 2,000
 * keypoints, 1,900 matches of which 1,805 are inliers of a slightly rotated
 * similarity: what the element does in draw_overlay(), without the registration.
 * For comparison, the single-threaded gst_video_overlay_composition_blend of the
 * meta's composition, which the banded draw must equal byte for byte (checked on
 * every repetition; a difference fails the benchmark).  Median of the repetitions,
 * ms; OMP_NUM_THREADS sets the threads.
 *   bench_overlay [--reps N] [--width W --height H] [--keypoints K]
 * The test suite runs it once on odd sizes (tests/meson.build: overlay_draw_*), for
 * the byte-for-byte check across band boundaries and subsampled chroma.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gstnmiregisteroverlay.h"
#include "bench_util.h"

int
main (int argc, char **argv)
{
  int reps = 15, w = 3840, h = 2160, nk = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp (argv[i], "--reps"))
      reps = atoi (argv[i + 1]);
    else if (!strcmp (argv[i], "--width"))
      w = atoi (argv[i + 1]);
    else if (!strcmp (argv[i], "--height"))
      h = atoi (argv[i + 1]);
    else if (!strcmp (argv[i], "--keypoints"))
      nk = atoi (argv[i + 1]);
  }
  if (reps < 1 || w < 16 || h < 16 || nk < 1) {
    fprintf (stderr, "usage: bench_overlay [--reps N] [--width W --height H] "
        "[--keypoints K]\n");
    return 2;
  }
  gst_init (NULL, NULL);

  /* keypoints on a jittered grid, as the detector spreads them */
  GrKeypoint *kp = g_new (GrKeypoint, nk);
  const int cols = (int) ceil (sqrt ((double) nk * w / h));
  const int rows = (nk + cols - 1) / cols;
  GRand *rng = g_rand_new_with_seed (7);
  for (int k = 0; k < nk; k++) {
    kp[k].x = (float) ((k % cols + 0.5) * w / cols + g_rand_double_range (rng, -8, 8));
    kp[k].y = (float) ((k / cols + 0.5) * h / rows + g_rand_double_range (rng, -8, 8));
    kp[k].response = 1.0f;
  }
  /* frame -> control: 3 degrees, scale 1.02, shifted; matches = keypoints through it
   * with sub-pixel noise; every 20th an outlier */
  const double a = 3.0 * G_PI / 180.0, s = 1.02;
  const double H[9] = { s * cos (a), -s * sin (a), 900, s * sin (a), s * cos (a), 400,
    0, 0, 1
  };
  const int nm = nk * 19 / 20;
  double *mf = g_new (double, 2 * nm), *mc = g_new (double, 2 * nm);
  guint8 *inl = g_new (guint8, nm);
  for (int k = 0; k < nm; k++) {
    mf[2 * k] = kp[k].x;
    mf[2 * k + 1] = kp[k].y;
    mc[2 * k] = H[0] * kp[k].x + H[1] * kp[k].y + H[2] + g_rand_double_range (rng, -.3, .3);
    mc[2 * k + 1] = H[3] * kp[k].x + H[4] * kp[k].y + H[5] + g_rand_double_range (rng,
        -.3, .3);
    inl[k] = (k % 20) != 0;
  }
  g_rand_free (rng);

  GstNmiRegisterOverlayData d = {
    .width = w,.height = h,.keypoints = kp,.n_keypoints = nk,
    .match_frame = mf,.match_control = mc,.inlier = inl,.n_matches = nm,
    .has_transform = TRUE,.has_prior = TRUE,.doubtful = FALSE,
  };
  memcpy (d.frame_to_control, H, sizeof H);
  memcpy (d.frame_to_control_index, H, sizeof H);
  const double prior[9] = { 1, 0, 896, 0, 1, 420, 0, 0, 1 };
  memcpy (d.prior, prior, sizeof prior);

  printf ("bench_overlay: %dx%d, %d keypoints, %d matches, %d repetitions\n", w, h, nk,
      nm, reps);
  printf ("| format | meta: render | draw: render + banded blend | render + "
      "gst_video_overlay_composition_blend |\n");
  printf ("| --- | ---: | ---: | ---: |\n");
  const GstVideoFormat formats[] = { GST_VIDEO_FORMAT_GRAY8, GST_VIDEO_FORMAT_GRAY16_LE,
    GST_VIDEO_FORMAT_NV12, GST_VIDEO_FORMAT_I420, GST_VIDEO_FORMAT_RGBA,
    GST_VIDEO_FORMAT_BGRA
  };
  double *tm = g_new (double, reps), *td = g_new (double, reps), *tb = g_new (double,
      reps);
  int status = 0;
  for (guint f = 0; f < G_N_ELEMENTS (formats) && !status; f++) {
    GstVideoInfo info;
    gst_video_info_set_format (&info, formats[f], w, h);
    const gsize size = GST_VIDEO_INFO_SIZE (&info);
    guint8 *input = g_malloc (size);
    for (gsize i = 0; i < size; i++)
      input[i] = (guint8) (i * 2654435761u >> 24);       /* not flat: every byte counts */
    GstBuffer *a = gst_buffer_new_allocate (NULL, size, NULL),
        *b = gst_buffer_new_allocate (NULL, size, NULL);
    for (int r = 0; r < reps && !status; r++) {
      gst_buffer_fill (a, 0, input, size);
      gst_buffer_fill (b, 0, input, size);
      gint64 t0 = g_get_monotonic_time ();
      GstVideoOverlayComposition *c = gst_nmi_register_overlay_render (&d);
      tm[r] = (g_get_monotonic_time () - t0) / 1000.0;
      GstVideoFrame frame;
      if (!c || !gst_video_frame_map (&frame, &info, a, GST_MAP_READWRITE)) {
        status = 1;
        break;
      }
      t0 = g_get_monotonic_time ();
      status |= !gst_video_overlay_composition_blend (c, &frame);
      tb[r] = tm[r] + (g_get_monotonic_time () - t0) / 1000.0;
      gst_video_frame_unmap (&frame);
      gst_video_overlay_composition_unref (c);

      if (!gst_video_frame_map (&frame, &info, b, GST_MAP_READWRITE)) {
        status = 1;
        break;
      }
      t0 = g_get_monotonic_time ();
      status |= gst_nmi_register_overlay_draw (&d, &frame) != GST_NMI_REGISTER_OVERLAY_DRAW_OK;
      td[r] = (g_get_monotonic_time () - t0) / 1000.0;
      gst_video_frame_unmap (&frame);

      GstMapInfo ma, mb;
      gst_buffer_map (a, &ma, GST_MAP_READ);
      gst_buffer_map (b, &mb, GST_MAP_READ);
      if (memcmp (ma.data, mb.data, size) != 0) {
        printf ("%s: the banded draw differs from the composition's blend\n",
            gst_video_format_to_string (formats[f]));
        status = 1;
      }
      gst_buffer_unmap (a, &ma);
      gst_buffer_unmap (b, &mb);
    }
    gst_buffer_unref (a);
    gst_buffer_unref (b);
    g_free (input);
    if (status) {
      printf ("%s: failed\n", gst_video_format_to_string (formats[f]));
      break;
    }
    printf ("| %s | %.1f | %.1f | %.1f |\n", gst_video_format_to_string (formats[f]),
        median (tm, reps), median (td, reps), median (tb, reps));
  }
  g_free (tb);
  g_free (tm);
  g_free (td);
  g_free (kp);
  g_free (mf);
  g_free (mc);
  g_free (inl);
  return status;
}
