/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <glib/gstdio.h>

#include "gstgeoregcontrol.h"

struct _GstGeoregControl {
  gchar *key;
  gint refs;                    /* under cache_lock */
  gboolean loading;             /* under cache_lock: the first acquirer is loading */
  GrStatus status;              /* result of the load */
  gchar *error;
  GrRaster raster;
};

static GMutex cache_lock;
static GCond cache_cond;
static GHashTable *cache;       /* key -> GstGeoregControl*, under cache_lock */

static void
entry_free (GstGeoregControl * c)
{
  gr_raster_clear (&c->raster);
  g_free (c->error);
  g_free (c->key);
  g_free (c);
}

/* The key: file identity + band.  NULL when the file cannot be stat'ed (the loader
 * then reports why). */
static gchar *
make_key (const gchar * path, guint band)
{
  GStatBuf st;
  if (g_stat (path, &st) != 0)
    return NULL;
  char *real = realpath (path, NULL);
  gchar *key = g_strdup_printf ("%u|%llu|%llu|%lld|%lld.%09ld|%s", band,
      (unsigned long long) st.st_dev, (unsigned long long) st.st_ino,
      (long long) st.st_size, (long long) st.st_mtim.tv_sec, (long) st.st_mtim.tv_nsec,
      real ? real : path);
  free (real);
  return key;
}

GstGeoregControl *
gst_georeg_control_acquire (const gchar * path, guint band, GrStatus * status,
    gchar * errbuf, gsize errlen)
{
  GrStatus dummy;
  if (!status)
    status = &dummy;
  if (!path || !*path) {
    *status = GR_ERR_INVALID;
    if (errbuf && errlen)
      g_strlcpy (errbuf, "no control path given", errlen);
    return NULL;
  }
  gchar *key = make_key (path, band);
  if (!key) {
    /* not cacheable: let the loader say what is wrong */
    GrRaster r = { 0 };
    *status = gr_raster_load (path, (int) band, &r, errbuf, errlen);
    if (*status == GR_OK) {
      /* the file appeared meanwhile: still fine, uncached */
      GstGeoregControl *c = g_new0 (GstGeoregControl, 1);
      c->key = NULL;
      c->refs = 1;
      c->raster = r;
      return c;
    }
    return NULL;
  }

  g_mutex_lock (&cache_lock);
  if (!cache)
    cache = g_hash_table_new (g_str_hash, g_str_equal);
  GstGeoregControl *c = g_hash_table_lookup (cache, key);
  if (c) {
    c->refs++;
    while (c->loading)
      g_cond_wait (&cache_cond, &cache_lock);
    g_free (key);
    if (c->status != GR_OK) {
      *status = c->status;
      if (errbuf && errlen)
        g_strlcpy (errbuf, c->error ? c->error : "load failed", errlen);
      if (--c->refs == 0)
        entry_free (c);         /* already out of the table */
      g_mutex_unlock (&cache_lock);
      return NULL;
    }
    g_mutex_unlock (&cache_lock);
    *status = GR_OK;
    return c;
  }
  c = g_new0 (GstGeoregControl, 1);
  c->key = key;
  c->refs = 1;
  c->loading = TRUE;
  g_hash_table_insert (cache, c->key, c);
  g_mutex_unlock (&cache_lock);

  char err[512] = "";
  GrStatus st = gr_raster_load (path, (int) band, &c->raster, err, sizeof err);

  g_mutex_lock (&cache_lock);
  c->status = st;
  c->loading = FALSE;
  if (st != GR_OK) {
    c->error = g_strdup (err);
    g_hash_table_remove (cache, c->key);        /* later acquirers try again */
  }
  g_cond_broadcast (&cache_cond);
  if (st != GR_OK) {
    *status = st;
    if (errbuf && errlen)
      g_strlcpy (errbuf, err, errlen);
    if (--c->refs == 0)
      entry_free (c);
    g_mutex_unlock (&cache_lock);
    return NULL;
  }
  g_mutex_unlock (&cache_lock);
  *status = GR_OK;
  return c;
}

void
gst_georeg_control_release (GstGeoregControl * c)
{
  if (!c)
    return;
  g_mutex_lock (&cache_lock);
  if (--c->refs == 0) {
    if (c->key && cache && g_hash_table_lookup (cache, c->key) == c)
      g_hash_table_remove (cache, c->key);
    entry_free (c);
  }
  g_mutex_unlock (&cache_lock);
}

const GrRaster *
gst_georeg_control_raster (const GstGeoregControl * c)
{
  return c ? &c->raster : NULL;
}

guint
gst_georeg_control_cache_count (void)
{
  g_mutex_lock (&cache_lock);
  guint n = cache ? g_hash_table_size (cache) : 0;
  g_mutex_unlock (&cache_lock);
  return n;
}

const gchar *
gst_georeg_control_key (const GstGeoregControl * c)
{
  return c ? c->key : NULL;
}
