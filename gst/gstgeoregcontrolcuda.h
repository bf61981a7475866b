/* Control imagery resident on CUDA devices, loaded once per process per device and
 * shared by the elements (issue 6, item 2).
 *
 * A process-wide, thread-safe, reference-counted cache keyed by the control's
 * identity (gst_georeg_control_key: file identity + band), the device, and the form:
 *
 *   plane   the control's full-resolution float plane (the band gstgeoregcontrol
 *           loaded) and its mask (NULL when every pixel is valid), uploaded once from
 *           the host raster;
 *   levels  that plane cut into L grey levels over [a, b] as nmiregister quantizes
 *           (floor((v - a) / (b - a) * L), masked pixels 0), derived on the device from
 *           the shared plane, which it keeps resident; elements asking for the same L,
 *           a and b (bit for bit) share one copy, others get their own levels from the
 *           same plane.
 *
 * An entry is freed when its last holder releases it (a levels entry then releases its
 * plane).  Engines borrow the device buffers (gr_nmi_sparse_set_control_device): an
 * element frees its engine before it releases its entry.  Controls that could not be
 * identified (gst_georeg_control_key NULL) get private entries, never shared.
 * docs/cuda-memory.md says which element uses which form.  Built without CUDA the
 * acquire functions return NULL (GR_ERR_NO_CUDA).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_CONTROL_CUDA_H__
#define __GST_GEOREG_CONTROL_CUDA_H__

#include <glib.h>

#include "gstgeoregcontrol.h"

G_BEGIN_DECLS

typedef struct _GstGeoregDeviceControl GstGeoregDeviceControl;

/* A reference to the control's plane on `device` (>= 0), uploaded by the first
 * acquirer.  NULL on failure with *status and a reason. */
GstGeoregDeviceControl *gst_georeg_device_control_plane (GstGeoregControl * control,
    gint device, GrStatus * status, gchar * errbuf, gsize errlen);

/* A reference to the control's grey levels (levels 2 .. 256 over [a, b]) on `device`,
 * derived on the device from the shared plane by the first acquirer. */
GstGeoregDeviceControl *gst_georeg_device_control_levels (GstGeoregControl * control,
    gint device, guint levels, gdouble a, gdouble b, GrStatus * status,
    gchar * errbuf, gsize errlen);

/* The same for a window of a control of any size (gst_georeg_control_window_px):
 * keyed by the window's identity (its control's and its serial), so a window is
 * uploaded once per device however many times an element asks while it holds it; an
 * element releases the entry of its old window when its window slides.  The levels
 * are of the window's plane (an element quantizes with the same a, b as on a whole
 * control).  The window must outlive nothing: the device copy is independent. */
GstGeoregDeviceControl *gst_georeg_device_control_window_plane (GstGeoregControlWindow *
    window, gint device, GrStatus * status, gchar * errbuf, gsize errlen);
GstGeoregDeviceControl *gst_georeg_device_control_window_levels (GstGeoregControlWindow *
    window, gint device, guint levels, gdouble a, gdouble b, GrStatus * status,
    gchar * errbuf, gsize errlen);

/* Drops a reference (NULL is ignored). */
void gst_georeg_device_control_release (GstGeoregDeviceControl * dc);

/* The full-resolution plane (device pointers, stride = width, mask NULL = all valid);
 * for a levels entry, the plane it was derived from. */
const GrPlaneF *gst_georeg_device_control_get_plane (const GstGeoregDeviceControl * dc);

/* The levels (device pointer, packed, width x height; NULL for a plane entry) and the
 * largest level of a valid pixel. */
const guint8 *gst_georeg_device_control_get_levels (const GstGeoregDeviceControl * dc,
    gint * vmax);

/* What the cache holds now and has done since the process started (tests, logs). */
typedef struct {
  guint planes;          /* plane entries alive */
  guint levels;          /* levels entries alive */
  guint64 uploads;       /* planes uploaded so far */
  guint64 derivations;   /* levels derived so far */
} GstGeoregDeviceControlStats;

void gst_georeg_device_control_stats (GstGeoregDeviceControlStats * stats);

G_END_DECLS

#endif
