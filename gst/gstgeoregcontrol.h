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

G_END_DECLS

#endif
