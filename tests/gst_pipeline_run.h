/* Runs a gst_parse_launch pipeline to EOS for the element tests that read results
 * from element messages (tests/test_frameshare.c, tests/test_cudamem_gpu.c).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_GST_PIPELINE_RUN_H
#define GR_GST_PIPELINE_RUN_H
#include <stdio.h>
#include <gst/gst.h>

/* Called for each element message (the pipeline is PLAYING). */
typedef void (*GstPipelineRunMessage) (GstElement * pipe, GstMessage * m,
    gpointer data);
/* Called after EOS (or a failure), before the pipeline goes to NULL: e.g. to read the
 * elements' properties. */
typedef void (*GstPipelineRunDone) (GstElement * pipe, gpointer data);

/* Parses and plays `desc` until EOS, an ERROR (printed) or `timeout_s` seconds
 * without a message; on_message and done may be NULL.  FALSE on a parse error, an
 * ERROR or a timeout. */
static inline gboolean
gst_pipeline_run (const gchar * desc, guint timeout_s, GstPipelineRunMessage on_message,
    GstPipelineRunDone done, gpointer data)
{
  GError *e = NULL;
  GstElement *pipe = gst_parse_launch (desc, &e);
  if (!pipe) {
    fprintf (stderr, "parse: %s\n", e ? e->message : "?");
    g_clear_error (&e);
    return FALSE;
  }
  GstBus *bus = gst_element_get_bus (pipe);
  gboolean ok = TRUE;
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  for (;;) {
    GstMessage *m = gst_bus_timed_pop_filtered (bus, timeout_s * GST_SECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT);
    if (!m) {
      fprintf (stderr, "timeout: %s\n", desc);
      ok = FALSE;
      break;
    }
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
      GError *err = NULL;
      gchar *dbg = NULL;
      gst_message_parse_error (m, &err, &dbg);
      fprintf (stderr, "error: %s (%s)\n  in %s\n", err->message, dbg ? dbg : "", desc);
      g_clear_error (&err);
      g_free (dbg);
      gst_message_unref (m);
      ok = FALSE;
      break;
    }
    if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS) {
      gst_message_unref (m);
      break;
    }
    if (on_message)
      on_message (pipe, m, data);
    gst_message_unref (m);
  }
  if (done)
    done (pipe, data);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipe);
  return ok;
}
#endif
