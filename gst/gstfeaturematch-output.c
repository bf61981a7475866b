/* featurematch's element message and correspondence matrix files (see
 * gstfeaturematch-output.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gstfeaturematch-output.h"

void
gst_feature_match_record_free (gpointer p)
{
  GstFeatureMatchRecord *r = p;
  g_free (r->xy);
  g_free (r->desc);
  g_free (r->fwd);
  g_free (r->bwd);
  g_free (r);
}

/* Writes a version 1.0 .npy header for a C-order array. */
static gboolean
npy_header (FILE * f, const gchar * descr, guint64 rows, gint64 cols)
{
  gchar shape[96];
  if (cols < 0)
    g_snprintf (shape, sizeof shape, "(%" G_GUINT64_FORMAT ",)", rows);
  else
    g_snprintf (shape, sizeof shape, "(%" G_GUINT64_FORMAT ", %" G_GINT64_FORMAT ")",
        rows, cols);
  gchar *dict = g_strdup_printf ("{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
      descr, shape);
  gsize len = strlen (dict) + 1;          /* + '\n' */
  const gsize total = (10 + len + 63) / 64 * 64;
  const gsize pad = total - 10 - len;
  const guint16 hl = GUINT16_TO_LE ((guint16) (total - 10));
  gboolean ok = fwrite ("\x93NUMPY\x01\x00", 1, 8, f) == 8 &&
      fwrite (&hl, 2, 1, f) == 1 && fputs (dict, f) >= 0;
  for (gsize i = 0; ok && i < pad; i++)
    ok = fputc (' ', f) != EOF;
  ok = ok && fputc ('\n', f) != EOF;
  g_free (dict);
  return ok;
}

static gchar *
sibling_path (const gchar * location, const gchar * suffix)
{
  gchar *base = g_str_has_suffix (location, ".npy") ?
      g_strndup (location, strlen (location) - 4) : g_strdup (location);
  gchar *p = g_strconcat (base, suffix, NULL);
  g_free (base);
  return p;
}

gboolean
gst_feature_match_write_npy (const gchar * location, GPtrArray * recs, gint k,
    gchar ** failed, gchar ** reason)
{
  const guint m = recs->len;
  gint64 *goff = g_new (gint64, m + 1);
  goff[0] = 0;
  for (guint i = 0; i < m; i++)
    goff[i + 1] = goff[i] + ((const GstFeatureMatchRecord *) g_ptr_array_index (recs, i))->n;
  const gint64 n = goff[m];
  gchar *paths[4] = { g_strdup (location),
    sibling_path (location, "-keypoints.npy"),
    sibling_path (location, "-offsets.npy"),
    sibling_path (location, "-descriptors.npy")
  };
  gboolean ok = TRUE;
  for (int fi = 0; fi < 4 && ok; fi++) {
    FILE *f = fopen (paths[fi], "wb");
    if (!f) {
      *failed = g_strdup (paths[fi]);
      *reason = g_strdup (g_strerror (errno));
      ok = FALSE;
      break;
    }
    if (fi == 0) {
      /* row i = frame i; column j = descriptor j of frame b */
      ok = npy_header (f, "<i4", m, n);
      gint32 *row = g_new (gint32, MAX (n, 1));
      for (guint i = 0; ok && i < m; i++) {
        const GstFeatureMatchRecord *ri = g_ptr_array_index (recs, i);
        for (guint b = 0; b < m; b++) {
          const GstFeatureMatchRecord *rb = g_ptr_array_index (recs, b);
          gint32 *dst = row + goff[b];
          for (gint a = 0; a < rb->n; a++) {
            gint32 v = -1;
            if (i < b && i >= rb->first)
              v = rb->fwd[(gint64) (i - rb->first) * rb->n + a];
            else if (i > b && b >= ri->first)
              v = ri->bwd[goff[b] - goff[ri->first] + a];
            dst[a] = GINT32_TO_LE (v);
          }
        }
        ok = n == 0 || fwrite (row, sizeof (gint32), n, f) == (gsize) n;
      }
      g_free (row);
    } else if (fi == 1) {
      ok = npy_header (f, "<f4", n, 2);
      for (guint b = 0; ok && b < m; b++) {
        const GstFeatureMatchRecord *rb = g_ptr_array_index (recs, b);
        ok = rb->n == 0 || fwrite (rb->xy, sizeof (gfloat) * 2, rb->n, f) == (gsize) rb->n;
      }
    } else if (fi == 2) {
      ok = npy_header (f, "<i8", m + 1, -1) &&
          fwrite (goff, sizeof (gint64), m + 1, f) == m + 1;
    } else {
      ok = npy_header (f, "<f4", n, k);
      for (guint b = 0; ok && b < m; b++) {
        const GstFeatureMatchRecord *rb = g_ptr_array_index (recs, b);
        ok = rb->n == 0 ||
            fwrite (rb->desc, sizeof (gfloat) * k, rb->n, f) == (gsize) rb->n;
      }
    }
    if (fclose (f) != 0)
      ok = FALSE;
    if (!ok && !*failed) {
      *failed = g_strdup (paths[fi]);
      *reason = g_strdup (g_strerror (errno ? errno : EIO));
    }
  }
  for (int fi = 0; fi < 4; fi++)
    g_free (paths[fi]);
  g_free (goff);
  return ok;
}


GstStructure *
gst_feature_match_message (const GstFeatureMatchMeta * m, GstClockTime pts,
    const gchar * backend, const gchar * input_memory, guint held_frames,
    const GstFeatureMatchTimes * t)
{
  GValue arr = G_VALUE_INIT;
  gst_value_array_init (&arr, m->n_pairs);
  for (guint i = 0; i < m->n_pairs; i++) {
    const GstFeatureMatchPair *p = &m->pairs[i];
    GValue hv = G_VALUE_INIT, v = G_VALUE_INIT, sv = G_VALUE_INIT;
    gst_value_array_init (&hv, 9);
    for (int j = 0; j < 9; j++) {
      g_value_init (&v, G_TYPE_DOUBLE);
      g_value_set_double (&v, p->h[j]);
      gst_value_array_append_and_take_value (&hv, &v);
    }
    GstStructure *ps = gst_structure_new ("pair",
        "frame", G_TYPE_UINT64, p->frame,
        "matches", G_TYPE_UINT, p->matches,
        "inliers", G_TYPE_UINT, p->inliers,
        "flags", G_TYPE_UINT, p->flags,
        "rms", G_TYPE_DOUBLE, p->rms, NULL);
    gst_structure_take_value (ps, "homography", &hv);
    g_value_init (&sv, GST_TYPE_STRUCTURE);
    gst_value_set_structure (&sv, ps);
    gst_structure_free (ps);
    gst_value_array_append_and_take_value (&arr, &sv);
  }
  GstStructure *st = gst_structure_new ("featurematch",
      "frame", G_TYPE_UINT64, m->frame,
      "timestamp", G_TYPE_UINT64, pts,
      "backend", G_TYPE_STRING, backend,
      "input-memory", G_TYPE_STRING, input_memory,
      "flags", G_TYPE_UINT, m->flags,
      "keypoints", G_TYPE_UINT, m->n_keypoints,
      "descriptor-size", G_TYPE_UINT, m->descriptor_size,
      "held-frames", G_TYPE_UINT, held_frames,
      "features-ms", G_TYPE_DOUBLE, t->features_ms,
      "match-ms", G_TYPE_DOUBLE, t->match_ms,
      "total-ms", G_TYPE_DOUBLE, t->total_ms,
      "read-ms", G_TYPE_DOUBLE, t->read_ms,
      "extract-wall-ms", G_TYPE_DOUBLE, t->extract_wall_ms,
      "patches-ms", G_TYPE_DOUBLE, t->patches_ms,
      "match-wall-ms", G_TYPE_DOUBLE, t->match_wall_ms,
      "fits-ms", G_TYPE_DOUBLE, t->fits_ms,
      "fit-first-ms", G_TYPE_DOUBLE, t->fit_first_ms,
      "refine-ms", G_TYPE_DOUBLE, t->refine_ms,
      "refit-ms", G_TYPE_DOUBLE, t->refit_ms, NULL);
  gst_structure_take_value (st, "pairs", &arr);
  return st;
}
