/* Control imagery resident on CUDA devices (see gstgeoregcontrolcuda.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <string.h>

#include "gstgeoregcontrolcuda.h"
#if GR_HAVE_CUDA
#include "register_cuda.h"
#endif

struct _GstGeoregDeviceControl {
  gchar *key;                   /* NULL: private (the control has no identity) */
  gint refs;                    /* under lock */
  gint device;
  GstGeoregDeviceControl *parent;       /* levels: the plane entry (held) */
  GrPlaneF plane;               /* device pointers; owned by plane entries */
  guint8 *levels;               /* levels entries: owned */
  gint vmax;
};

static GMutex lock;
static GstGeoregDeviceControlStats stats;

#if GR_HAVE_CUDA
static GHashTable *table;       /* key -> entry, under lock */

/* under lock */
static void
unref_locked (GstGeoregDeviceControl * dc)
{
  if (--dc->refs > 0)
    return;
  if (dc->key && table && g_hash_table_lookup (table, dc->key) == dc)
    g_hash_table_remove (table, dc->key);
  if (dc->parent) {
    gr_cuda_device_free (dc->device, dc->levels);
    stats.levels--;
    unref_locked (dc->parent);
  } else {
    gr_cuda_device_free (dc->device, dc->plane.data);
    gr_cuda_device_free (dc->device, dc->plane.mask);
    stats.planes--;
  }
  g_free (dc->key);
  g_free (dc);
}

static GstGeoregDeviceControl *
lookup_locked (const gchar * key)
{
  if (!key || !table)
    return NULL;
  GstGeoregDeviceControl *dc = g_hash_table_lookup (table, key);
  if (dc)
    dc->refs++;
  return dc;
}

static void
insert_locked (GstGeoregDeviceControl * dc)
{
  if (!dc->key)
    return;
  if (!table)
    table = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_insert (table, dc->key, dc);
}

/* The plane entry of `host` (a whole control's plane or a window's) whose identity is
 * ck (NULL: private). */
static GstGeoregDeviceControl *
plane_locked (const gchar * ck, const GrPlaneF * host, gint device, GrStatus * status,
    gchar * errbuf, gsize errlen)
{
  gchar *key = ck ? g_strdup_printf ("%s|cuda%d|plane", ck, device) : NULL;
  GstGeoregDeviceControl *dc = lookup_locked (key);
  if (dc) {
    g_free (key);
    return dc;
  }
  GrPlaneF dev;
  const GrStatus st = gr_cuda_plane_upload (device, host, &dev, errbuf, errlen);
  if (st != GR_OK) {
    g_free (key);
    *status = st;
    return NULL;
  }
  dc = g_new0 (GstGeoregDeviceControl, 1);
  dc->key = key;
  dc->refs = 1;
  dc->device = device;
  dc->plane = dev;
  stats.planes++;
  stats.uploads++;
  insert_locked (dc);
  return dc;
}
#endif

/* The plane entry of `host` (identity ck, NULL: private) on `device`. */
static GstGeoregDeviceControl *
plane_for (const gchar * ck, const GrPlaneF * host, gint device, GrStatus * status,
    gchar * errbuf, gsize errlen)
{
  GrStatus dummy;
  if (!status)
    status = &dummy;
  *status = GR_OK;
  if (!host || device < 0) {
    *status = GR_ERR_INVALID;
    if (errbuf && errlen)
      g_strlcpy (errbuf, "no control (or a windowed one: upload its windows) or no "
          "device", errlen);
    return NULL;
  }
#if GR_HAVE_CUDA
  g_mutex_lock (&lock);
  GstGeoregDeviceControl *dc = plane_locked (ck, host, device, status, errbuf, errlen);
  g_mutex_unlock (&lock);
  return dc;
#else
  (void) ck;
  *status = GR_ERR_NO_CUDA;
  if (errbuf && errlen)
    g_strlcpy (errbuf, "this build has no CUDA kernels", errlen);
  return NULL;
#endif
}

GstGeoregDeviceControl *
gst_georeg_device_control_plane (GstGeoregControl * control, gint device,
    GrStatus * status, gchar * errbuf, gsize errlen)
{
  const GrRaster *r = gst_georeg_control_raster (control);
  return plane_for (gst_georeg_control_key (control), r ? &r->plane : NULL, device,
      status, errbuf, errlen);
}

/* The levels entry of `host` (identity ck, NULL: private) on `device`. */
static GstGeoregDeviceControl *
levels_for (const gchar * ck, const GrPlaneF * host, gint device, guint levels,
    gdouble a, gdouble b, GrStatus * status, gchar * errbuf, gsize errlen)
{
  GrStatus dummy;
  if (!status)
    status = &dummy;
  *status = GR_OK;
  if (!host || device < 0 || levels < 2 || levels > 256) {
    *status = GR_ERR_INVALID;
    if (errbuf && errlen)
      g_strlcpy (errbuf, "no control, no device or bad levels", errlen);
    return NULL;
  }
#if GR_HAVE_CUDA
  /* %a: the range bit for bit */
  gchar *key = ck ? g_strdup_printf ("%s|cuda%d|levels|%u|%a|%a", ck, device, levels, a,
      b) : NULL;
  g_mutex_lock (&lock);
  GstGeoregDeviceControl *dc = lookup_locked (key);
  if (dc) {
    g_mutex_unlock (&lock);
    g_free (key);
    return dc;
  }
  GstGeoregDeviceControl *parent = plane_locked (ck, host, device, status, errbuf, errlen);
  if (!parent) {
    g_mutex_unlock (&lock);
    g_free (key);
    return NULL;
  }
  guint8 *lv = NULL;
  gint vmax = 0;
  const GrStatus st = gr_cuda_plane_levels (device, &parent->plane, a, b, (int) levels,
      &lv, &vmax, errbuf, errlen);
  if (st != GR_OK) {
    unref_locked (parent);
    g_mutex_unlock (&lock);
    g_free (key);
    *status = st;
    return NULL;
  }
  dc = g_new0 (GstGeoregDeviceControl, 1);
  dc->key = key;
  dc->refs = 1;
  dc->device = device;
  dc->parent = parent;
  dc->plane = parent->plane;
  dc->levels = lv;
  dc->vmax = vmax;
  stats.levels++;
  stats.derivations++;
  insert_locked (dc);
  g_mutex_unlock (&lock);
  return dc;
#else
  (void) ck;
  (void) a;
  (void) b;
  *status = GR_ERR_NO_CUDA;
  if (errbuf && errlen)
    g_strlcpy (errbuf, "this build has no CUDA kernels", errlen);
  return NULL;
#endif
}

GstGeoregDeviceControl *
gst_georeg_device_control_levels (GstGeoregControl * control, gint device,
    guint levels, gdouble a, gdouble b, GrStatus * status, gchar * errbuf,
    gsize errlen)
{
  const GrRaster *r = gst_georeg_control_raster (control);
  return levels_for (gst_georeg_control_key (control), r ? &r->plane : NULL, device,
      levels, a, b, status, errbuf, errlen);
}

GstGeoregDeviceControl *
gst_georeg_device_control_window_plane (GstGeoregControlWindow * window, gint device,
    GrStatus * status, gchar * errbuf, gsize errlen)
{
  return plane_for (gst_georeg_control_window_key (window),
      window ? &gst_georeg_control_window_get (window)->raster.plane : NULL, device,
      status, errbuf, errlen);
}

GstGeoregDeviceControl *
gst_georeg_device_control_window_levels (GstGeoregControlWindow * window, gint device,
    guint levels, gdouble a, gdouble b, GrStatus * status, gchar * errbuf,
    gsize errlen)
{
  return levels_for (gst_georeg_control_window_key (window),
      window ? &gst_georeg_control_window_get (window)->raster.plane : NULL, device,
      levels, a, b, status, errbuf, errlen);
}

void
gst_georeg_device_control_release (GstGeoregDeviceControl * dc)
{
  if (!dc)
    return;
#if GR_HAVE_CUDA
  g_mutex_lock (&lock);
  unref_locked (dc);
  g_mutex_unlock (&lock);
#endif
}

const GrPlaneF *
gst_georeg_device_control_get_plane (const GstGeoregDeviceControl * dc)
{
  return dc ? &dc->plane : NULL;
}

const guint8 *
gst_georeg_device_control_get_levels (const GstGeoregDeviceControl * dc, gint * vmax)
{
  if (vmax)
    *vmax = dc ? dc->vmax : 0;
  return dc ? dc->levels : NULL;
}

void
gst_georeg_device_control_stats (GstGeoregDeviceControlStats * st)
{
  g_mutex_lock (&lock);
  *st = stats;
  g_mutex_unlock (&lock);
}
