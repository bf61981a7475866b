/* cuda-device-id=-1 placement (gst/gstgeoregplacement.c, issue 16): the policy and the
 * process-wide registry, with a fake device count (the test hook), on the CPU.
 * Pipelines are real GstPipelines holding identity elements that stand in for the
 * georeg elements (the placement only reads their top-level parent).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <gst/gst.h>

#include "gstgeoregplacement.h"
#include "test_check.h"

typedef struct {
  GstElement *pipe, *a, *b;
  gpointer ka, kb;
  gint da, db;
} Pipe;

static void
pipe_make (Pipe * p)
{
  p->pipe = gst_pipeline_new (NULL);
  /* one element one bin down: the pipeline is the top-level parent, not the bin */
  GstElement *bin = gst_bin_new (NULL);
  p->a = gst_element_factory_make ("identity", NULL);
  p->b = gst_element_factory_make ("identity", NULL);
  gst_bin_add (GST_BIN (bin), p->b);
  gst_bin_add_many (GST_BIN (p->pipe), p->a, bin, NULL);
  p->da = p->db = -1;
}

/* both "georeg elements" of the pipeline ask with cuda-device-id=-1 */
static void
pipe_place (Pipe * p)
{
  p->da = gst_georeg_placement_place (p->a, -1, &p->ka);
  p->db = gst_georeg_placement_place (p->b, -1, &p->kb);
}

static void
pipe_release (Pipe * p)
{
  gst_georeg_placement_release (p->ka, p->da);
  gst_georeg_placement_release (p->kb, p->db);
  p->da = p->db = -1;
}

int
main (int argc, char **argv)
{
  gst_init (&argc, &argv);

  /* the policy alone */
  const guint64 G = (guint64) 1 << 30;
  const guint load[4] = { 2, 1, 1, 3 };
  const guint64 freeb[4] = { 90 * G, 10 * G, 50 * G, 99 * G };
  CHECK (gst_georeg_placement_pick (4, load, freeb) == 2, "ties on load go to free memory");
  CHECK (gst_georeg_placement_pick (4, load, NULL) == 1, "ties without memory: lowest");
  CHECK (gst_georeg_placement_pick (0, load, NULL) == -1, "no device");
  const guint load2[2] = { 0, 0 };
  const guint64 free2[2] = { 5 * G, 5 * G };
  CHECK (gst_georeg_placement_pick (2, load2, free2) == 0, "full tie: lowest index");
  /* less than the margin more: a context's worth, not a reason to move */
  const guint64 free2b[2] = { 70 * G, 70 * G + G / 2 };
  CHECK (gst_georeg_placement_pick (2, load2, free2b) == 0, "within the margin: lowest");
  const guint64 free2c[2] = { 70 * G, 72 * G };
  CHECK (gst_georeg_placement_pick (2, load2, free2c) == 1, "beyond the margin: freer");

  /* two devices: pipelines alternate, both elements of one pipeline together */
  gst_georeg_placement_set_fake_devices (2, NULL);
  Pipe p[5];
  for (int i = 0; i < 5; i++)
    pipe_make (&p[i]);
  pipe_place (&p[0]);
  pipe_place (&p[1]);
  CHECK (p[0].da == 0 && p[0].db == 0, "first pipeline on device 0 (%d %d)", p[0].da,
      p[0].db);
  CHECK (p[1].da == 1 && p[1].db == 1, "second on device 1 (%d %d)", p[1].da, p[1].db);
  CHECK (gst_georeg_placement_load (0) == 1 && gst_georeg_placement_load (1) == 1,
      "a pipeline counts once, not per element (%u %u)", gst_georeg_placement_load (0),
      gst_georeg_placement_load (1));
  pipe_place (&p[2]);
  pipe_place (&p[3]);
  CHECK (p[2].da != p[3].da && p[2].da == p[2].db && p[3].da == p[3].db,
      "third and fourth spread (%d %d)", p[2].da, p[3].da);
  CHECK (gst_georeg_placement_load (0) == 2 && gst_georeg_placement_load (1) == 2,
      "2 + 2");
  /* a pipeline stops: the next one takes its device */
  const gint freed = p[1].da;
  pipe_release (&p[1]);
  CHECK (gst_georeg_placement_load (freed) == 1, "released");
  pipe_place (&p[4]);
  CHECK (p[4].da == freed && p[4].db == freed, "the freed device is chosen (%d, %d)",
      p[4].da, freed);
  /* an explicit id counts on that device, and the pipeline's other elements follow */
  Pipe e;
  pipe_make (&e);
  e.da = gst_georeg_placement_place (e.a, 0, &e.ka);
  e.db = gst_georeg_placement_place (e.b, -1, &e.kb);
  CHECK (e.da == 0 && e.db == 0, "explicit device followed (%d %d)", e.da, e.db);
  CHECK (gst_georeg_placement_load (0) == 3, "explicit placement counted (%u)",
      gst_georeg_placement_load (0));
  /* only one element released: the pipeline still counts */
  gst_georeg_placement_release (e.ka, e.da);
  CHECK (gst_georeg_placement_load (0) == 3, "pipeline counted while an element holds");
  gst_georeg_placement_release (e.kb, e.db);
  CHECK (gst_georeg_placement_load (0) == 2, "and released with its last element");

  /* ties by free memory: 3 devices, loads 2 2 0 -> device 2; then equal loads 2 2 1
   * with device 1 the freest: 2 (less loaded); then 2 2 2: the freest, device 1 */
  for (int i = 0; i < 5; i++)
    pipe_release (&p[i]);
  const guint64 free3[3] = { 10 * G, 30 * G, 20 * G };
  gst_georeg_placement_set_fake_devices (3, free3);
  Pipe q[7];
  for (int i = 0; i < 7; i++) {
    pipe_make (&q[i]);
    pipe_place (&q[i]);
  }
  /* all idle: 1 (30) then 2 (20) then 0 (10), round and round */
  const gint want[7] = { 1, 2, 0, 1, 2, 0, 1 };
  for (int i = 0; i < 7; i++)
    CHECK (q[i].da == want[i], "pipeline %d on %d, expected %d", i, q[i].da, want[i]);
  for (int i = 0; i < 7; i++)
    pipe_release (&q[i]);

  /* one device: everything on it; no device: -1 and nothing registered */
  gst_georeg_placement_set_fake_devices (1, NULL);
  Pipe r[2];
  pipe_make (&r[0]);
  pipe_make (&r[1]);
  pipe_place (&r[0]);
  pipe_place (&r[1]);
  CHECK (r[0].da == 0 && r[1].da == 0, "one device: both on it");
  pipe_release (&r[0]);
  pipe_release (&r[1]);
  gst_georeg_placement_set_fake_devices (0, NULL);
  Pipe z;
  pipe_make (&z);
  pipe_place (&z);
  CHECK (z.da == -1 && gst_georeg_placement_load (0) == 0, "no device: not placed");
  for (int d = 0; d < 3; d++)
    CHECK (gst_georeg_placement_load (d) == 0, "all released (device %d: %u)", d,
        gst_georeg_placement_load (d));

  gst_georeg_placement_set_fake_devices (-1, NULL);
  for (int i = 0; i < 5; i++)
    gst_object_unref (p[i].pipe);
  for (int i = 0; i < 7; i++)
    gst_object_unref (q[i].pipe);
  gst_object_unref (r[0].pipe);
  gst_object_unref (r[1].pipe);
  gst_object_unref (e.pipe);
  gst_object_unref (z.pipe);
  return CHECK_DONE ();
}
