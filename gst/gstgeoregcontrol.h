/* A process-wide, thread-safe, reference-counted cache of loaded control images, so
 * that elements naming the same control file share one copy in memory.
 *
 * Entries are keyed by the file's identity (device, inode, size, modification time,
 * canonical path) and the band: two elements that name the same file (even by
 * different paths) and band share one GrRaster (full resolution, float values,
 * mask, geotransform); a file replaced on disk is loaded afresh.  The first
 * acquirer loads the file without holding the cache lock; concurrent acquirers of
 * the same key wait for that load and share its result (or its error).  An entry is
 * freed when its last reference is released.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_CONTROL_H__
#define __GST_GEOREG_CONTROL_H__

#include <glib.h>

#include "gr_common.h"
#include "raster.h"
#include "control_source.h"

G_BEGIN_DECLS

typedef struct _GstGeoregControl GstGeoregControl;

/* A reference to the control (path, band), loaded on first use by gr_raster_load.
 * NULL on failure, with *status (GR_ERR_IO: cannot open/read, GR_ERR_FORMAT:
 * unusable content, GR_ERR_NOMEM) and a reason naming the path in errbuf.  The
 * raster is read-only for every holder. */
GstGeoregControl *gst_georeg_control_acquire (const gchar * path, guint band,
    GrStatus * status, gchar * errbuf, gsize errlen);

/* Drops a reference (NULL is ignored). */
void gst_georeg_control_release (GstGeoregControl * control);

const GrRaster *gst_georeg_control_raster (const GstGeoregControl * control);

/* The control's identity in the cache (file identity + band), or NULL when the file
 * could not be identified (such a control is never shared). */
const gchar *gst_georeg_control_key (const GstGeoregControl * control);

/* Number of controls held in memory now (for tests and debug logs). */
guint gst_georeg_control_cache_count (void);

/* ---- Controls of any size, read in windows around a prior (issue 18,
 * docs/controls.md "Windows").
 *
 * gst_georeg_control_open_windowed opens the control without reading its pixels
 * (kernels/control_source.h): size, geotransform, overviews.  Entries are shared like
 * whole ones, in their own namespace of the same cache: elements naming the same file
 * and band share one GrControlSource and so one cache of decoded blocks, bounded by
 * the largest cache_bytes any of them asked for (0: 512 MiB).  Such an entry has no
 * whole raster (gst_georeg_control_raster returns NULL); it gives windows:
 *
 *   win = gst_georeg_control_window_px (control, box, level, margin, win_prev, ...)
 *
 * returns win_prev again (a new reference, nothing read) while it still holds the
 * needed box, and otherwise cuts a new window around the box grown by the margin: a
 * window slides only when the frame's area leaves it, so uploads to a GPU are rare
 * (compare gst_georeg_control_window_serial).  An element keeps its current window,
 * registers on gst_georeg_control_window_get (win)->raster.plane as on a whole
 * control, and maps its transform back with gr_control_window_to_full. */
GstGeoregControl *gst_georeg_control_open_windowed (const gchar * path, guint band,
    guint64 cache_bytes, GrStatus * status, gchar * errbuf, gsize errlen);

/* The opened control of a windowed entry (NULL for a whole entry): level sizes,
 * level_for_scale, stats. */
GrControlSource *gst_georeg_control_source (const GstGeoregControl * control);

typedef struct _GstGeoregControlWindow GstGeoregControlWindow;

/* The window of `level` for the full-control pixel box {x0, y0, x1, y1} (the frame's
 * prior footprint plus its uncertainty): `previous` (may be NULL) when it is a window
 * of the same control and level that covers the box, else a new one over the box
 * grown by `margin` full-control pixels, clipped to the control.  NULL on failure
 * (GR_ERR_INVALID: a box off the control or over the window limit, not a windowed
 * control; GR_ERR_FORMAT: a read failed).  The window holds the control. */
GstGeoregControlWindow *gst_georeg_control_window_px (GstGeoregControl * control,
    const gdouble px_box[4], gint level, gdouble margin,
    GstGeoregControlWindow * previous, GrStatus * status, gchar * errbuf, gsize errlen);

/* The same from a box {xmin, ymin, xmax, ymax} in the control's map coordinates. */
GstGeoregControlWindow *gst_georeg_control_window (GstGeoregControl * control,
    const gdouble map_box[4], gint level, gdouble margin,
    GstGeoregControlWindow * previous, GrStatus * status, gchar * errbuf, gsize errlen);

/* No prior: the whole control as one window when it fits `budget` (NULL: the
 * decoding budget's defaults); over it, GR_ERR_FORMAT with a message that asks for a
 * pose prior. */
GstGeoregControlWindow *gst_georeg_control_window_whole (GstGeoregControl * control,
    const GrRasterBudget * budget, GrStatus * status, gchar * errbuf, gsize errlen);

/* Decodes the blocks of the box the flight will need next on the control's worker
 * thread; returns at once (a no-op for a whole entry). */
void gst_georeg_control_prefetch (GstGeoregControl * control, const gdouble px_box[4],
    gint level, gdouble margin);

GstGeoregControlWindow *gst_georeg_control_window_ref (GstGeoregControlWindow * w);
/* NULL is ignored; the last reference frees the window and releases its control. */
void gst_georeg_control_window_unref (GstGeoregControlWindow * w);
/* The window's raster and placement (read-only). */
const GrControlWindow *gst_georeg_control_window_get (const GstGeoregControlWindow * w);
/* A number that differs for every window cut in the process (0 for NULL): a device
 * copy of a window is current while its serial is. */
guint64 gst_georeg_control_window_serial (const GstGeoregControlWindow * w);
/* The window's identity (its control's key and its serial) for device caches, NULL
 * when its control has none. */
const gchar *gst_georeg_control_window_key (const GstGeoregControlWindow * w);

/* ---- an element following a flight over a windowed control */

typedef struct {
  GstGeoregControlWindow *window;       /* the window the element registers on (held) */
  gboolean have_prev;
  gdouble prev_cx, prev_cy;             /* the last box's centre (motion, prefetch) */
  guint cuts;                           /* windows this follower cut */
} GstGeoregControlFollow;

/* The window of `level` for this frame's box (full-control pixels: the frame's area
 * under its prior, grown by the prior's uncertainty), into f->window: the follower's
 * window while it covers the box, else the window an element sharing the control cut
 * last when that covers it (nmiregister after nmilocalize), else a new one over the
 * box grown by `margin`, its edges on a grid of 64 level pixels.  Then the box moved
 * on by `ahead` times the last frame's motion is queued for the prefetch worker
 * (unless the window holds it already).  *changed: f->window is another window than
 * before (an engine re-sets its control).  FALSE with *status and a reason. */
gboolean gst_georeg_control_follow (GstGeoregControl * control,
    GstGeoregControlFollow * f, const gdouble box[4], gint level, gdouble margin,
    gint ahead, gboolean * changed, GrStatus * status, gchar * errbuf, gsize errlen);
/* Drops the follower's window and motion. */
void gst_georeg_control_follow_clear (GstGeoregControlFollow * f);

G_END_DECLS

#endif
