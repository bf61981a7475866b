/* georeg: the full frame -> control mapping of a result (the lens, then the
 * transform), shared inside the meta library by the meta (nmiregister-meta.c) and its
 * binding copy (georeg-results.c).  Not installed.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GEOREG_LENS_PRIVATE_H__
#define __GEOREG_LENS_PRIVATE_H__

#include <glib.h>

/* h: frame_to_control (NAN = none); lens: fx fy cx cy k1 k2 k3 p1 p2, used when
 * undistorted.  See gst_nmi_register_meta_frame_to_control. */
G_GNUC_INTERNAL gboolean georeg_map_frame_point (const gdouble h[9], gboolean undistorted,
    const gdouble lens[9], gdouble x, gdouble y, gdouble * cx, gdouble * cy);

#endif
