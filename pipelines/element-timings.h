/* The elements' own timings, as the benchmark programs (georeg-live-bench,
 * georeg-multistream) collect them: every double field named "*-ms" of an element
 * message, by "structure.field" (e.g. "nmiregister.register-ms").
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GEOREG_ELEMENT_TIMINGS_H
#define GEOREG_ELEMENT_TIMINGS_H

#include <gst/gst.h>

/* "structure.field" -> GArray of doubles */
static inline GHashTable *
element_timings_new (void)
{
  return g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      (GDestroyNotify) g_array_unref);
}

typedef struct {
  GHashTable *table;
  const gchar *name;
} ElementTimingsAdd;

static inline gboolean
element_timings_field (GQuark field, const GValue * v, gpointer data)
{
  const ElementTimingsAdd *add = data;
  const gchar *name = g_quark_to_string (field);
  if (!G_VALUE_HOLDS_DOUBLE (v) || !g_str_has_suffix (name, "-ms"))
    return TRUE;
  gchar *key = g_strdup_printf ("%s.%s", add->name, name);
  GArray *a = g_hash_table_lookup (add->table, key);
  if (!a) {
    a = g_array_new (FALSE, FALSE, sizeof (double));
    g_hash_table_insert (add->table, key, a);
  } else {
    g_free (key);
  }
  const double d = g_value_get_double (v);
  g_array_append_val (a, d);
  return TRUE;
}

/* the "*-ms" fields of one message's structure */
static inline void
element_timings_add (GHashTable * table, const GstStructure * s)
{
  ElementTimingsAdd add = { table, gst_structure_get_name (s) };
  gst_structure_foreach (s, element_timings_field, &add);
}

#endif
