/* featurematch's outputs beside the buffer meta: its element message and, at EOS,
 * the correspondence matrix files (.npy).  Internal to gstfeaturematch.c.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_FEATURE_MATCH_OUTPUT_H__
#define __GST_FEATURE_MATCH_OUTPUT_H__

#include <gst/gst.h>

#include "featurematch-meta.h"

G_BEGIN_DECLS

/* What the .npy files need of one frame. */
typedef struct {
  gint n;
  guint64 first;                /* the oldest frame it was matched against */
  gint held;                    /* frames first .. index - 1 */
  gint64 held_desc;
  gfloat *xy;                   /* n x 2 */
  gfloat *desc;                 /* n x k */
  gint32 *fwd;                  /* held x n */
  gint32 *bwd;                  /* held_desc */
} GstFeatureMatchRecord;
void gst_feature_match_record_free (gpointer p);

/* Writes the m x n correspondence matrix of `records` (GstFeatureMatchRecord, one per
 * frame) to `location` and beside it <name>-keypoints.npy, <name>-offsets.npy and
 * <name>-descriptors.npy (descriptors of k values).  FALSE with the file that failed
 * and the reason (both to free). */
gboolean gst_feature_match_write_npy (const gchar * location, GPtrArray * records,
    gint k, gchar ** failed, gchar ** reason);

/* A frame's timings, milliseconds.  features_ms and match_ms are the engines' own
 * (device time on CUDA); the others are wall-clock phases of the element. */
typedef struct {
  gdouble features_ms, match_ms, total_ms;
  gdouble read_ms;              /* the frame to a plane (or the shared one borrowed) */
  gdouble extract_wall_ms;      /* keypoints + descriptors, waiting included */
  gdouble patches_ms;           /* refinement patches of the keypoints */
  gdouble match_wall_ms;        /* sliding window + matching, waiting included */
  gdouble fits_ms;              /* the pairs' robust fits and refinement */
  gdouble fit_first_ms, refine_ms, refit_ms;   /* fits_ms's phases (kernels/pairfit.h) */
} GstFeatureMatchTimes;

/* The "featurematch" element message of a frame's meta (the fields are documented in
 * docs/featurematch.md). */
GstStructure *gst_feature_match_message (const GstFeatureMatchMeta * m,
    GstClockTime pts, const gchar * backend, const gchar * input_memory,
    guint held_frames, const GstFeatureMatchTimes * t);

G_END_DECLS

#endif
