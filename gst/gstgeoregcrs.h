/* georeg: the `crs` property, one param spec for every element that places results on
 * the map and reads the control's CRS through kernels/geo (nmiregister; georegexport
 * and georegklvenc can take it too), so the name, range and help text cannot drift.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_CRS_H__
#define __GST_GEOREG_CRS_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* A new string param spec "crs" (default NULL) with the given flags (readwrite and
 * static strings are added). */
GParamSpec *gst_georeg_param_spec_crs (GParamFlags flags);

G_END_DECLS

#endif
