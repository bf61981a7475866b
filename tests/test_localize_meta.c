/* GstNmiLocalizeMeta: the fields appended for any heading and ground resolution, and
 * gst_nmi_localize_meta_set_transform deriving centre, heading and scale.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>

#include <gst/gst.h>

#include "georeg-meta.h"
#include "test_check.h"

/* frame -> control: rotate the frame by heading (clockwise, degrees), scale by s,
 * put its centre at (cx, cy) */
static void
similarity (double heading, double s, int w, int h, double cx, double cy, double out[9])
{
  const double a = heading * G_PI / 180.0, c = cos (a) * s, n = sin (a) * s;
  /* the frame's up (0,-1) must land on (sin a, -cos a): [c -n; n c] * (0,-1) */
  out[0] = c;
  out[1] = -n;
  out[3] = n;
  out[4] = c;
  out[2] = cx - (c * w / 2.0 - n * h / 2.0);
  out[5] = cy - (n * w / 2.0 + c * h / 2.0);
  out[6] = out[7] = 0.0;
  out[8] = 1.0;
}

int
main (int argc, char **argv)
{
  gst_init (&argc, &argv);
  GstBuffer *buf = gst_buffer_new ();
  GstNmiLocalizeMeta *m = gst_buffer_add_nmi_localize_meta (buf);
  CHECK (m && !m->has_prior_transform && isnan (m->frame_to_control[0]) &&
      isnan (m->frame_to_control[8]) && isnan (m->heading_deg) && isnan (m->scale) &&
      isnan (m->gsd) && isnan (m->overlap), "a new meta has no transform");

  const double headings[] = { 0.0, 30.0, 90.0, 180.0, 271.5, 359.0 };
  for (unsigned i = 0; i < G_N_ELEMENTS (headings); i++) {
    double hm[9];
    similarity (headings[i], 0.37, 640, 360, 1200.5, 800.25, hm);
    CHECK (gst_nmi_localize_meta_set_transform (m, hm, 640, 360), "set %g", headings[i]);
    double dh = fabs (m->heading_deg - headings[i]);
    dh = fmin (dh, 360.0 - dh);
    CHECK (dh < 1e-9, "heading %g -> %g", headings[i], m->heading_deg);
    CHECK (m->heading_deg >= 0.0 && m->heading_deg < 360.0, "range %g", m->heading_deg);
    CHECK (fabs (m->scale - 0.37) < 1e-12, "scale %g", m->scale);
    CHECK (fabs (m->center_x - 1200.5) < 1e-9 && fabs (m->center_y - 800.25) < 1e-9,
        "centre (%g, %g)", m->center_x, m->center_y);
    CHECK (m->has_prior_transform && m->frame_to_control[2] == hm[2], "copied");
  }

  /* a frame heading east: its top edge runs down the control's +y axis */
  double east[9];
  similarity (90.0, 1.0, 100, 50, 500.0, 500.0, east);
  const double top_left_x = east[0] * 0 + east[1] * 0 + east[2];
  const double top_right_y = east[3] * 100 + east[4] * 0 + east[5];
  const double top_left_y = east[5];
  CHECK (top_left_x > 500.0 && top_right_y > top_left_y, "east: top edge on the right");

  /* perspective: heading and scale are those of the local map at the centre */
  double persp[9] = { 1, 0, 0, 0, 1, 0, 1e-4, 0, 1 };
  CHECK (gst_nmi_localize_meta_set_transform (m, persp, 200, 100), "perspective");
  CHECK (fabs (m->center_x - 100.0 / 1.01) < 1e-9, "centre x %g", m->center_x);
  CHECK (m->scale < 1.0 && m->scale > 0.97, "scale %g", m->scale);

  /* rejected without change */
  const double before = m->frame_to_control[6];
  double bad[9] = { 1, 0, 0, 0, 1, 0, 0, 0, NAN };
  CHECK (!gst_nmi_localize_meta_set_transform (m, bad, 200, 100), "NAN rejected");
  double inf[9] = { 1, 0, 0, 0, 1, 0, -0.01, 0, 1 };
  CHECK (!gst_nmi_localize_meta_set_transform (m, inf, 200, 100), "centre at infinity");
  CHECK (m->frame_to_control[6] == before, "unchanged after a rejection");

  /* the appended fields survive a copy */
  m->gsd = 0.05;
  m->overlap = 0.9;
  m->flags = GST_NMI_LOCALIZE_FLAG_HEADING_SEARCHED | GST_NMI_LOCALIZE_FLAG_LOW_OVERLAP;
  GstBuffer *copy = gst_buffer_copy (buf);
  GstNmiLocalizeMeta *c = gst_buffer_get_nmi_localize_meta (copy);
  CHECK (c && c->has_prior_transform && c->gsd == 0.05 && c->overlap == 0.9 &&
      c->frame_to_control[6] == before && c->flags == m->flags, "copied meta");
  gst_buffer_unref (copy);
  gst_buffer_unref (buf);
  return CHECK_DONE ();
}
