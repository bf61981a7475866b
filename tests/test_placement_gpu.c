/* cuda-device-id=-1 on a real host (issue 16, item 1): two pipelines of two georeg
 * elements each land on different devices when the host has 2 or more, on the same
 * one when it has 1; the elements of one pipeline always share a device; a pipeline
 * that stops frees its device for the next.  Then the frames flow (featurematch on
 * CUDA) to show the placed contexts work.  Reads each element's device by a context
 * query on its pad (the element answers with its GstCudaContext).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <gst/gst.h>

#include "gst_gpu_test.h"
#include "test_check.h"

#define LAUNCH "videotestsrc num-buffers=4 pattern=smpte ! " \
  "video/x-raw,format=GRAY8,width=320,height=240 ! " \
  "featurematch name=up backend=cuda cuda-device-id=-1 ! " \
  "featurematch name=down backend=cuda cuda-device-id=-1 ! fakesink"

/* the device of the CUDA context the element holds, -1 = none */
static gint
element_device (GstElement * pipe, const gchar * name)
{
  GstElement *e = gst_bin_get_by_name (GST_BIN (pipe), name);
  GstPad *pad = gst_element_get_static_pad (e, "sink");
  GstQuery *q = gst_query_new_context ("gst.cuda.context");
  gint dev = -1;
  if (gst_pad_query (pad, q)) {
    GstContext *c = NULL;
    gst_query_parse_context (q, &c);
    guint d;
    if (c && gst_structure_get_uint (gst_context_get_structure (c), "cuda-device-id", &d))
      dev = (gint) d;
  }
  gst_query_unref (q);
  gst_object_unref (pad);
  gst_object_unref (e);
  return dev;
}

static GstElement *
start (gint * dev_up, gint * dev_down)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch (LAUNCH, &err);
  if (!p) {
    fprintf (stderr, "parse: %s\n", err->message);
    g_error_free (err);
    return NULL;
  }
  /* placement happens at NULL -> READY; READY holds the place */
  gst_element_set_state (p, GST_STATE_READY);
  *dev_up = element_device (p, "up");
  *dev_down = element_device (p, "down");
  return p;
}

static gboolean
run_to_eos (GstElement * p)
{
  gst_element_set_state (p, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus (p);
  GstMessage *m = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  gboolean ok = m && GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS;
  if (m && !ok) {
    GError *e = NULL;
    gst_message_parse_error (m, &e, NULL);
    fprintf (stderr, "pipeline error: %s\n", e->message);
    g_error_free (e);
  }
  if (m)
    gst_message_unref (m);
  gst_object_unref (bus);
  return ok;
}

int
main (int argc, char **argv)
{
  const char *need[] = { "videotestsrc", "fakesink" };
  int r = gst_gpu_test_init (&argc, &argv, need, 2, "");
  if (r)
    return r;
  const int ndev = gr_cuda_device_count ();
  printf ("%d CUDA device(s)\n", ndev);
  gint a_up, a_down, b_up, b_down, c_up, c_down;
  GstElement *a = start (&a_up, &a_down);
  GstElement *b = start (&b_up, &b_down);
  if (!a || !b)
    return 1;
  printf ("pipeline A: devices %d %d; pipeline B: devices %d %d\n", a_up, a_down, b_up,
      b_down);
  CHECK (a_up >= 0 && a_up == a_down, "A's elements share a device (%d %d)", a_up,
      a_down);
  CHECK (b_up >= 0 && b_up == b_down, "B's elements share a device (%d %d)", b_up,
      b_down);
  if (ndev >= 2)
    CHECK (a_down != b_down, "2+ devices: A and B on different devices (%d %d)",
        a_down, b_down);
  else
    CHECK (a_down == b_down, "1 device: A and B on it (%d %d)", a_down, b_down);
  /* both run at the same time on their devices */
  CHECK (run_to_eos (a), "A runs");
  CHECK (run_to_eos (b), "B runs");
  /* A stops: a new pipeline takes A's device (the least loaded now) */
  gst_element_set_state (a, GST_STATE_NULL);
  GstElement *c = start (&c_up, &c_down);
  printf ("pipeline C (after A stopped): devices %d %d\n", c_up, c_down);
  CHECK (c && c_down == a_down && c_up == c_down, "C takes A's device (%d, A %d)", c_down,
      a_down);
  if (c) {
    CHECK (run_to_eos (c), "C runs");
    gst_element_set_state (c, GST_STATE_NULL);
    gst_object_unref (c);
  }
  gst_element_set_state (b, GST_STATE_NULL);
  gst_object_unref (a);
  gst_object_unref (b);
  return CHECK_DONE ();
}
