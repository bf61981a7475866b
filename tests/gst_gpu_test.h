/* The common start of the GStreamer tests of the gpu suite.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_GST_GPU_TEST_H
#define GR_GST_GPU_TEST_H
#include <stdio.h>
#include <gst/gst.h>

#include "gr_common.h"

/* Skips without a usable CUDA device; adds the system plugins to the isolated test
 * registry ($GST_PLUGIN_SYSTEM_PATH, set by .gstroot/env.sh on the GPU machine);
 * gst_init; skips when an element of need[] (n_need names) is missing, printing
 * `hint` (may be "") after its name.  0 to go on, or 77 (a skip, already printed). */
static inline int
gst_gpu_test_init (int *argc, char ***argv, const char *const *need, guint n_need,
    const char *hint)
{
  if (gr_cuda_device_count () <= 0) {
    printf ("SKIP: no usable CUDA device\n");
    return 77;
  }
  const gchar *sys = g_getenv ("GST_PLUGIN_SYSTEM_PATH");
  if (sys && *sys) {
    const gchar *pp = g_getenv ("GST_PLUGIN_PATH_1_0");
    gchar *both = g_strjoin (":", pp ? pp : "", sys, NULL);
    g_setenv ("GST_PLUGIN_PATH_1_0", both, TRUE);
    g_free (both);
  }
  gst_init (argc, argv);
  for (guint i = 0; i < n_need; i++) {
    GstElementFactory *f = gst_element_factory_find (need[i]);
    if (!f) {
      printf ("SKIP: no %s element%s\n", need[i], hint);
      return 77;
    }
    gst_object_unref (f);
  }
  return 0;
}
#endif
