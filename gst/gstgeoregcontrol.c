/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <errno.h>
#include <math.h>
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
  GrRaster raster;              /* whole entries */
  GrControlSource *source;      /* windowed entries (raster empty) */
  GstGeoregControlWindow *last; /* under cache_lock, no reference: the window cut
                                 * last, which another element sharing the control
                                 * reuses where it covers its frame */
};

struct _GstGeoregControlWindow {
  gint refs;                    /* atomic */
  GstGeoregControl *control;    /* held */
  guint64 serial;
  gchar *key;                   /* the control's key and the serial; NULL: private */
  GrControlWindow window;
};

/* How an entry is filled by its first acquirer (without the cache lock). */
typedef GrStatus (*ControlLoadFunc) (GstGeoregControl * c, const gchar * path,
    guint band, guint64 cache_bytes, char *err, size_t errlen);

static GMutex cache_lock;
static GCond cache_cond;
static GHashTable *cache;       /* key -> GstGeoregControl*, under cache_lock */

static void
entry_free (GstGeoregControl * c)
{
  gr_raster_clear (&c->raster);
  gr_control_source_free (c->source);
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

static GrStatus
load_whole (GstGeoregControl * c, const gchar * path, guint band, guint64 cache_bytes,
    char *err, size_t errlen)
{
  (void) cache_bytes;
  return gr_raster_load (path, (int) band, &c->raster, err, errlen);
}

static GrStatus
load_windowed (GstGeoregControl * c, const gchar * path, guint band, guint64 cache_bytes,
    char *err, size_t errlen)
{
  GrControlSourceParams p = {.cache_bytes = cache_bytes };
  return gr_control_source_open (path, (int) band, &p, &c->source, err, errlen);
}

/* The cache's common path: the entry of (prefix, file identity, band), filled by
 * `load` for the first acquirer, shared by later ones. */
static GstGeoregControl *
control_acquire (const gchar * path, guint band, const gchar * prefix,
    ControlLoadFunc load, guint64 cache_bytes, GrStatus * status, gchar * errbuf,
    gsize errlen)
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
    GstGeoregControl *c = g_new0 (GstGeoregControl, 1);
    c->refs = 1;
    *status = load (c, path, band, cache_bytes, errbuf, errlen);
    if (*status == GR_OK)
      return c;                 /* the file appeared meanwhile: still fine, uncached */
    entry_free (c);
    return NULL;
  }
  if (*prefix) {
    gchar *k = g_strconcat (prefix, key, NULL);
    g_free (key);
    key = k;
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
    if (c->source)
      gr_control_source_raise_cache_bytes (c->source, cache_bytes);
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
  GrStatus st = load (c, path, band, cache_bytes, err, sizeof err);

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

GstGeoregControl *
gst_georeg_control_acquire (const gchar * path, guint band, GrStatus * status,
    gchar * errbuf, gsize errlen)
{
  return control_acquire (path, band, "", load_whole, 0, status, errbuf, errlen);
}

GstGeoregControl *
gst_georeg_control_open_windowed (const gchar * path, guint band, guint64 cache_bytes,
    GrStatus * status, gchar * errbuf, gsize errlen)
{
  return control_acquire (path, band, "windowed|", load_windowed, cache_bytes, status,
      errbuf, errlen);
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
  return c && !c->source ? &c->raster : NULL;
}

GrControlSource *
gst_georeg_control_source (const GstGeoregControl * c)
{
  return c ? c->source : NULL;
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

/* ------------------------------------------------------------------ windows */

static guint64 window_serials;  /* under cache_lock */

/* A window of `control` (taken over from w), holding a reference to the control. */
static GstGeoregControlWindow *
window_wrap (GstGeoregControl * control, GrControlWindow * w)
{
  GstGeoregControlWindow *win = g_new0 (GstGeoregControlWindow, 1);
  win->refs = 1;
  win->control = control;
  win->window = *w;
  g_mutex_lock (&cache_lock);
  control->refs++;
  win->serial = ++window_serials;
  control->last = win;
  g_mutex_unlock (&cache_lock);
  if (control->key)
    win->key = g_strdup_printf ("%s|window%" G_GUINT64_FORMAT, control->key, win->serial);
  return win;
}

static gboolean
windowed_or_fail (GstGeoregControl * control, GrStatus * status, gchar * errbuf,
    gsize errlen)
{
  if (control && control->source)
    return TRUE;
  *status = GR_ERR_INVALID;
  if (errbuf && errlen)
    g_strlcpy (errbuf, "not a control opened for windows "
        "(gst_georeg_control_open_windowed)", errlen);
  return FALSE;
}

GstGeoregControlWindow *
gst_georeg_control_window_px (GstGeoregControl * control, const gdouble px_box[4],
    gint level, gdouble margin, GstGeoregControlWindow * previous, GrStatus * status,
    gchar * errbuf, gsize errlen)
{
  GrStatus dummy;
  if (!status)
    status = &dummy;
  if (!windowed_or_fail (control, status, errbuf, errlen))
    return NULL;
  if (previous && previous->control == control && previous->window.level == level
      && gr_control_window_covers (&previous->window, control->source, px_box)) {
    *status = GR_OK;
    return gst_georeg_control_window_ref (previous);
  }
  GrControlWindow w;
  *status = gr_control_source_window (control->source, level, px_box, margin, &w, errbuf,
      errlen);
  return *status == GR_OK ? window_wrap (control, &w) : NULL;
}

GstGeoregControlWindow *
gst_georeg_control_window (GstGeoregControl * control, const gdouble map_box[4],
    gint level, gdouble margin, GstGeoregControlWindow * previous, GrStatus * status,
    gchar * errbuf, gsize errlen)
{
  gdouble px[4] = { NAN, NAN, NAN, NAN };      /* refused by the window below */
  if (control && control->source && (!map_box
          || !gr_control_source_map_to_px (control->source, map_box, px))) {
    if (status)
      *status = GR_ERR_INVALID;
    if (errbuf && errlen)
      g_strlcpy (errbuf, "a map box needs the control's geotransform (it has none "
          "usable)", errlen);
    return NULL;
  }
  return gst_georeg_control_window_px (control, px, level, margin, previous, status,
      errbuf, errlen);
}

GstGeoregControlWindow *
gst_georeg_control_window_whole (GstGeoregControl * control,
    const GrRasterBudget * budget, GrStatus * status, gchar * errbuf, gsize errlen)
{
  GrStatus dummy;
  if (!status)
    status = &dummy;
  if (!windowed_or_fail (control, status, errbuf, errlen))
    return NULL;
  GrControlWindow w;
  *status = gr_control_source_whole (control->source, budget, &w, errbuf, errlen);
  return *status == GR_OK ? window_wrap (control, &w) : NULL;
}

void
gst_georeg_control_prefetch (GstGeoregControl * control, const gdouble px_box[4],
    gint level, gdouble margin)
{
  if (control && control->source)
    gr_control_source_prefetch (control->source, level, px_box, margin);
}

GstGeoregControlWindow *
gst_georeg_control_window_ref (GstGeoregControlWindow * w)
{
  g_atomic_int_inc (&w->refs);
  return w;
}

void
gst_georeg_control_window_unref (GstGeoregControlWindow * w)
{
  if (!w)
    return;
  /* the last reference is dropped under the cache lock, where a window is also taken
   * from its control's `last`: so that one is never revived while it is freed */
  g_mutex_lock (&cache_lock);
  const gboolean gone = g_atomic_int_dec_and_test (&w->refs);
  if (gone && w->control->last == w)
    w->control->last = NULL;
  g_mutex_unlock (&cache_lock);
  if (!gone)
    return;
  /* its plane back to the source for the next window (the control, and so the
   * source, is still held) */
  gr_control_source_window_release (w->control->source, &w->window);
  gst_georeg_control_release (w->control);
  g_free (w->key);
  g_free (w);
}

const GrControlWindow *
gst_georeg_control_window_get (const GstGeoregControlWindow * w)
{
  return w ? &w->window : NULL;
}

guint64
gst_georeg_control_window_serial (const GstGeoregControlWindow * w)
{
  return w ? w->serial : 0;
}

const gchar *
gst_georeg_control_window_key (const GstGeoregControlWindow * w)
{
  return w ? w->key : NULL;
}

/* ------------------------------------------------------------------ following a flight */

/* The control's last window when it is of `level` and covers box: a new reference. */
static GstGeoregControlWindow *
last_covering (GstGeoregControl * c, const gdouble box[4], gint level)
{
  GstGeoregControlWindow *w = NULL;
  g_mutex_lock (&cache_lock);
  if (c->last && c->last->window.level == level &&
      gr_control_window_covers (&c->last->window, c->source, box)) {
    w = c->last;
    g_atomic_int_inc (&w->refs);
  }
  g_mutex_unlock (&cache_lock);
  return w;
}

/* Window edges on multiples of this many level pixels: the pyramids the engines build
 * on a window then sample the control on the same grid as on the whole control (or
 * on a crop made on that grid), whatever the prior. */
#define WINDOW_ALIGN 64

gboolean
gst_georeg_control_follow (GstGeoregControl * control, GstGeoregControlFollow * f,
    const gdouble box[4], gint level, gdouble margin, gint ahead, gboolean * changed,
    GrStatus * status, gchar * errbuf, gsize errlen)
{
  GrStatus dummy;
  if (!status)
    status = &dummy;
  *changed = FALSE;
  if (!windowed_or_fail (control, status, errbuf, errlen))
    return FALSE;
  for (int i = 0; i < 4; i++)
    if (!isfinite (box[i])) {
      *status = GR_ERR_INVALID;
      g_strlcpy (errbuf, "the frame's area on the control is not finite", errlen);
      return FALSE;
    }
  GstGeoregControlWindow *w = NULL;
  if (f->window && f->window->control == control && f->window->window.level == level &&
      gr_control_window_covers (&f->window->window, control->source, box))
    w = gst_georeg_control_window_ref (f->window);
  if (!w)
    w = last_covering (control, box, level);
  if (!w) {
    /* a new window: the box grown by the margin, its edges on the level's grid */
    int lw, lh;
    double sx, sy;
    if (!gr_control_source_level_size (control->source, level, &lw, &lh, &sx, &sy)) {
      *status = GR_ERR_INVALID;
      g_snprintf (errbuf, errlen, "the control has no level %d", level);
      return FALSE;
    }
    const double ax = WINDOW_ALIGN * sx, ay = WINDOW_ALIGN * sy;
    const gdouble grown[4] = {
      floor ((box[0] - margin) / ax) * ax, floor ((box[1] - margin) / ay) * ay,
      ceil ((box[2] + margin) / ax) * ax, ceil ((box[3] + margin) / ay) * ay
    };
    w = gst_georeg_control_window_px (control, grown, level, 0.0, NULL, status, errbuf,
        errlen);
    if (!w)
      return FALSE;
    f->cuts++;
  }
  *status = GR_OK;
  *changed = w != f->window;
  gst_georeg_control_window_unref (f->window);
  f->window = w;

  /* the flight's next boxes: this one moved on by the last frame's motion */
  const gdouble cx = (box[0] + box[2]) / 2.0, cy = (box[1] + box[3]) / 2.0;
  if (f->have_prev && ahead > 0) {
    const gdouble dx = (cx - f->prev_cx) * ahead, dy = (cy - f->prev_cy) * ahead;
    const gdouble next[4] = { box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy };
    if ((dx != 0.0 || dy != 0.0) &&
        !gr_control_window_covers (&w->window, control->source, next))
      gst_georeg_control_prefetch (control, next, level, margin);
  }
  f->prev_cx = cx;
  f->prev_cy = cy;
  f->have_prev = TRUE;
  return TRUE;
}

void
gst_georeg_control_follow_clear (GstGeoregControlFollow * f)
{
  gst_georeg_control_window_unref (f->window);
  memset (f, 0, sizeof *f);
}
