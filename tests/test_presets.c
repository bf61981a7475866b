/* The "onboard" system preset (the .prs files in gst/presets, through GstPreset): nmilocalize,
 * nmiregister and featurematch list it, loading it sets exactly the values that
 * pipelines/onboard.sh documents (read from that script, so the two cannot drift),
 * and an unknown preset name loads nothing.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <gst/check/gstcheck.h>

static gchar *onboard_script;   /* pipelines/onboard.sh */

/* The words of the shell assignment NAME="..." in onboard.sh. */
static gchar **
script_words (const gchar * name)
{
  gchar *key = g_strconcat ("\n", name, "=\"", NULL);
  const gchar *start = strstr (onboard_script, key);
  fail_unless (start != NULL, "%s not found in pipelines/onboard.sh", name);
  start += strlen (key);
  const gchar *end = strchr (start, '"');
  fail_unless (end != NULL);
  gchar *value = g_strndup (start, end - start);
  gchar **words = g_strsplit_set (value, " ", -1);
  g_free (value);
  g_free (key);
  return words;
}

/* Every key=value of `words` whose key is in `only` (NULL = all) is what the element
 * holds; returns how many were checked. */
static guint
check_words (GstElement * e, gchar ** words, const gchar * const *only)
{
  guint checked = 0;
  for (guint i = 0; words[i]; i++) {
    gchar **kv = g_strsplit (words[i], "=", 2);
    if (kv[0] && kv[1] && (!only || g_strv_contains (only, kv[0]))) {
      GParamSpec *ps = g_object_class_find_property (G_OBJECT_GET_CLASS (e), kv[0]);
      fail_unless (ps != NULL, "%s has no property %s", GST_ELEMENT_NAME (e), kv[0]);
      GValue want = G_VALUE_INIT, have = G_VALUE_INIT;
      g_value_init (&want, ps->value_type);
      g_value_init (&have, ps->value_type);
      fail_unless (gst_value_deserialize (&want, kv[1]));
      g_object_get_property (G_OBJECT (e), kv[0], &have);
      gchar *have_str = gst_value_serialize (&have);
      fail_unless (gst_value_compare (&want, &have) == GST_VALUE_EQUAL,
          "%s.%s is %s after the onboard preset, onboard.sh says %s",
          GST_ELEMENT_NAME (e), kv[0], have_str, kv[1]);
      g_free (have_str);
      g_value_unset (&want);
      g_value_unset (&have);
      checked++;
    }
    g_strfreev (kv);
  }
  return checked;
}

/* Loads "onboard" into a new `factory` element; the values differ from the defaults
 * before (the preset changes something) and match onboard.sh after. */
static void
check_onboard (const gchar * factory, const gchar * script_var,
    const gchar * const *only, guint expected)
{
  GstElement *e = gst_element_factory_make (factory, NULL);
  fail_unless (e != NULL, "no element %s", factory);
  fail_unless (GST_IS_PRESET (e));

  gchar **names = gst_preset_get_preset_names (GST_PRESET (e));
  fail_unless (names && g_strv_contains ((const gchar * const *) names, "onboard"),
      "%s does not list the onboard preset", factory);
  g_strfreev (names);

  gchar **words = script_words (script_var);
  /* before: every documented value is not the default yet */
  for (guint i = 0; words[i]; i++) {
    gchar **kv = g_strsplit (words[i], "=", 2);
    if (kv[0] && kv[1] && (!only || g_strv_contains (only, kv[0]))) {
      gchar *now = NULL;
      GValue v = G_VALUE_INIT;
      GParamSpec *ps = g_object_class_find_property (G_OBJECT_GET_CLASS (e), kv[0]);
      fail_unless (ps != NULL);
      g_value_init (&v, ps->value_type);
      g_object_get_property (G_OBJECT (e), kv[0], &v);
      now = gst_value_serialize (&v);
      fail_if (g_strcmp0 (now, kv[1]) == 0, "%s.%s is already %s by default", factory,
          kv[0], now);
      g_free (now);
      g_value_unset (&v);
    }
    g_strfreev (kv);
  }

  fail_if (gst_preset_load_preset (GST_PRESET (e), "no-such-preset"));
  fail_unless (gst_preset_load_preset (GST_PRESET (e), "onboard"));
  fail_unless_equals_int (check_words (e, words, only), expected);
  g_strfreev (words);
  gst_object_unref (e);
}

GST_START_TEST (test_onboard_localize)
{
  /* the search window is per frame (from the prior); the fixed properties are the
   * scales the chains share */
  static const gchar *const fixed[] = { "frame-scale", "control-scale", NULL };
  check_onboard ("nmilocalize", "LOC_COMMON", fixed, 2);
}
GST_END_TEST;

GST_START_TEST (test_onboard_register)
{
  check_onboard ("nmiregister", "ONB_REG", NULL, 3);
}
GST_END_TEST;

GST_START_TEST (test_onboard_featurematch)
{
  check_onboard ("featurematch", "ONB_FM", NULL, 2);
}
GST_END_TEST;

static Suite *
presets_suite (void)
{
  Suite *s = suite_create ("presets");
  TCase *tc = tcase_create ("onboard");
  tcase_add_test (tc, test_onboard_localize);
  tcase_add_test (tc, test_onboard_register);
  tcase_add_test (tc, test_onboard_featurematch);
  suite_add_tcase (s, tc);
  return s;
}

int
main (int argc, char **argv)
{
  const gchar *src = g_getenv ("GEOREG_SOURCE_ROOT");
  if (!src) {
    printf ("SKIP: GEOREG_SOURCE_ROOT not set (run through meson test)\n");
    return 77;
  }
  /* the presets of the source tree, not installed or user ones: a user's own
   * "onboard" (XDG_DATA_HOME) would override the system one */
  gchar *presets = g_build_filename (src, "gst", "presets", NULL);
  gchar *script = g_build_filename (src, "pipelines", "onboard.sh", NULL);
  gchar *home = g_build_filename (g_get_tmp_dir (), "georeg-presets-test-none", NULL);
  g_setenv ("GST_PRESET_PATH", presets, TRUE);
  g_setenv ("XDG_DATA_HOME", home, TRUE);
  if (!g_file_get_contents (script, &onboard_script, NULL, NULL)) {
    fprintf (stderr, "cannot read %s\n", script);
    return 1;
  }
  g_free (presets);
  g_free (script);
  g_free (home);

  gst_check_init (&argc, &argv);
  int failed = gst_check_run_suite (presets_suite (), "presets", __FILE__);
  g_free (onboard_script);
  return failed;
}
