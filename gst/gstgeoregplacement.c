/* Placement of georeg pipelines on the CUDA devices of a host (gstgeoregplacement.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "gstgeoregplacement.h"
#include "gr_common.h"
#if GR_HAVE_CUDA
#include "frame_cuda.h"
#endif

GST_DEBUG_CATEGORY_STATIC (gst_georeg_placement_debug);
#define GST_CAT_DEFAULT gst_georeg_placement_debug

/* one (pipeline, device) pair with the number of the pipeline's elements placed there */
typedef struct {
  gpointer pipeline;
  gint device;
  guint elements;
} Place;

static GMutex lock;
static GList *places;           /* of Place, under lock */
static gint fake_n = -1;        /* test hook, under lock */
static guint64 *fake_free;

static void
debug_init (void)
{
  static gsize once = 0;
  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gst_georeg_placement_debug, "georegplacement", 0,
        "georeg placement of pipelines on CUDA devices");
    g_once_init_leave (&once, 1);
  }
}

gint
gst_georeg_placement_pick (gint n, const guint * load, const guint64 * free_bytes)
{
  gint best = -1;
  for (gint d = 0; d < n; d++) {
    if (best < 0 || load[d] < load[best] ||
        (load[d] == load[best] && free_bytes &&
            free_bytes[d] > free_bytes[best] + GST_GEOREG_PLACEMENT_FREE_MARGIN))
      best = d;
  }
  return best;
}

static gpointer
pipeline_of (GstElement * element)
{
  GstObject *top = GST_OBJECT (element);
  GST_OBJECT_LOCK (element);
  GstObject *p = GST_OBJECT_PARENT (element);
  while (p) {
    top = p;
    p = GST_OBJECT_PARENT (p);  /* parents outlive their children: read unlocked */
  }
  GST_OBJECT_UNLOCK (element);
  return top;
}

/* under lock */
static Place *
find_locked (gpointer pipeline, gint device)
{
  for (GList * l = places; l; l = l->next) {
    Place *pl = l->data;
    if (pl->pipeline == pipeline && (device < 0 || pl->device == device))
      return pl;
  }
  return NULL;
}

/* under lock */
static guint
load_locked (gint device)
{
  guint n = 0;
  for (GList * l = places; l; l = l->next)
    n += ((Place *) l->data)->device == device;
  return n;
}

/* under lock: the devices the policy chooses among (the test hook's, or CUDA's) */
static gint
devices_locked (void)
{
  if (fake_n >= 0)
    return fake_n;
  return gr_cuda_device_count ();
}

/* under lock: the least-loaded device; the free memory is read only for the devices
 * that tie on the least load, and only when there are several */
static gint
choose_locked (void)
{
  const gint n = devices_locked ();
  if (n <= 0)
    return -1;
  guint *load = g_new0 (guint, n);
  guint64 *freeb = g_new0 (guint64, n);
  guint least = G_MAXUINT, ties = 0;
  for (gint d = 0; d < n; d++) {
    load[d] = load_locked (d);
    if (load[d] < least) {
      least = load[d];
      ties = 1;
    } else if (load[d] == least)
      ties++;
  }
  gboolean have_free = FALSE;
  if (ties > 1) {
    for (gint d = 0; d < n; d++) {
      if (load[d] != least)
        continue;
      if (fake_n >= 0) {
        freeb[d] = fake_free ? fake_free[d] : 0;
        have_free = TRUE;
      } else {
#if GR_HAVE_CUDA
        size_t f = 0, t = 0;
        if (gr_cuda_mem_info (d, &f, &t) == GR_OK) {
          freeb[d] = f;
          have_free = TRUE;
        }
#endif
      }
    }
  }
  const gint dev = gst_georeg_placement_pick (n, load, have_free ? freeb : NULL);
  g_free (load);
  g_free (freeb);
  return dev;
}

gint
gst_georeg_placement_place (GstElement * element, gint want, gpointer * key)
{
  debug_init ();
  gpointer pipeline = pipeline_of (element);
  *key = pipeline;
  g_mutex_lock (&lock);
  gint dev = want;
  const gchar *why = "asked for";
  if (dev < 0) {
    Place *mine = find_locked (pipeline, -1);
    if (mine) {
      dev = mine->device;
      why = "its pipeline's device";
    } else {
      dev = choose_locked ();
      why = "least loaded";
    }
  }
  if (dev >= 0) {
    Place *pl = find_locked (pipeline, dev);
    if (!pl) {
      pl = g_new0 (Place, 1);
      pl->pipeline = pipeline;
      pl->device = dev;
      places = g_list_prepend (places, pl);
    }
    pl->elements++;
    GST_INFO_OBJECT (element, "placed on CUDA device %d (%s); %u georeg pipeline(s) "
        "there now", dev, why, load_locked (dev));
  }
  g_mutex_unlock (&lock);
  return dev;
}

void
gst_georeg_placement_release (gpointer key, gint device)
{
  if (device < 0)
    return;
  g_mutex_lock (&lock);
  Place *pl = find_locked (key, device);
  if (pl && --pl->elements == 0) {
    places = g_list_remove (places, pl);
    g_free (pl);
  }
  g_mutex_unlock (&lock);
}

guint
gst_georeg_placement_load (gint device)
{
  g_mutex_lock (&lock);
  const guint n = load_locked (device);
  g_mutex_unlock (&lock);
  return n;
}

void
gst_georeg_placement_set_fake_devices (gint n, const guint64 * free_bytes)
{
  g_mutex_lock (&lock);
  fake_n = n;
  g_clear_pointer (&fake_free, g_free);
  if (n > 0 && free_bytes)
    fake_free = g_memdup2 (free_bytes, sizeof (guint64) * n);
  g_mutex_unlock (&lock);
}
