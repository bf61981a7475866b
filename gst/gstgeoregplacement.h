/* Placement of georeg pipelines on the CUDA devices of a host (issue 16, item 1).
 *
 * An element whose cuda-device-id is -1 and that finds no CUDA context to share (from
 * a neighbour, the application, or its bin) asks the placement for a device.  The
 * answer:
 *   1. the device its pipeline already has (another georeg element of the same
 *      top-level bin placed first), so that all elements of one pipeline share one
 *      device and one context;
 *   2. else the least-loaded device: the one with the fewest georeg pipelines placed
 *      on it in this process right now; ties go to the device with clearly more free
 *      memory (more than GST_GEOREG_PLACEMENT_FREE_MARGIN above the others':
 *      cudaMemGetInfo, asked only when there is a tie; it makes the runtime's primary
 *      context on the devices compared), else to the lowest index.  The margin keeps
 *      the few hundred MB of a context from moving a lone pipeline off device 0, where
 *      nvh264dec (nvcodec's decoder of device 0) decodes.
 * A pipeline counts on a device while at least one of its georeg elements holds a CUDA
 * context there (NULL -> READY until READY -> NULL), whatever gave it the device (an
 * explicit cuda-device-id, a shared context, or this policy), so explicit placements
 * weigh on the choice too.  The choice and its registration happen under one lock, so
 * pipelines started at the same time from different threads spread as well.
 *
 * A "pipeline" is the element's top-level GstObject parent (its GstPipeline); an
 * element outside any bin counts as a pipeline of its own.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_PLACEMENT_H__
#define __GST_GEOREG_PLACEMENT_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_GEOREG_PLACEMENT_FREE_MARGIN ((guint64) 1 << 30)  /* 1 GiB */

/* The policy alone: of n devices with load[d] pipelines each and free_bytes[d] free
 * memory (NULL: unknown, ties then go to the lowest index), the chosen index; -1 when
 * n <= 0.  Pure function. */
gint gst_georeg_placement_pick (gint n, const guint * load, const guint64 * free_bytes);

/* Places `element` for its pipeline: want >= 0 registers it on that device (an
 * explicit id, or the device of a context it adopted); want < 0 chooses as above.
 * Returns the device (-1: no CUDA device, nothing registered) and sets *key to the
 * pipeline it was counted for (compared, never dereferenced: the element may have left
 * its bin by the time it releases).  Pair each placement with one
 * gst_georeg_placement_release (key, device). */
gint gst_georeg_placement_place (GstElement * element, gint want, gpointer * key);
void gst_georeg_placement_release (gpointer key, gint device);

/* Pipelines placed on `device` now. */
guint gst_georeg_placement_load (gint device);

/* Test hook: n >= 0 makes the placement see n devices with free_bytes[d] free
 * (NULL: all equal) instead of asking CUDA; n < 0 goes back to CUDA. */
void gst_georeg_placement_set_fake_devices (gint n, const guint64 * free_bytes);

G_END_DECLS

#endif
