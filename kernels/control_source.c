/* GrControlSource: windows of a control of any size (see control_source.h).
 *
 * Blocks: level L is cut into block x block squares; block (bx, by) of level L is
 * decoded once by gr_gdal_bands_read (the loader's band rules) and kept in a hash table
 * with an LRU list, bounded in bytes.  A block being decoded is in the table (state
 * LOADING) so that a second reader waits for it rather than decoding it again; blocks
 * in use by a reader are never evicted.  GDAL's dataset is not thread-safe: every
 * decode holds gdal_lock.
 *
 * Prefetch: a worker thread (started on the first request) takes boxes from a short
 * queue and decodes their missing blocks into the cache.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "control_source.h"
#include "raster_formats.h"
#include "raster_internal.h"
#if GR_HAVE_GDAL
#include "raster_gdal.h"
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <sys/stat.h>

#define PREFETCH_QUEUE_MAX 16

/* Window planes kept for reuse (gr_control_source_window_release): one for each of the
 * two elements that follow a flight on one control (nmilocalize's level and
 * nmiregister's). */
#define RECYCLE_SLOTS 2
/* A fresh window plane is allocated this much larger than its window, so that the
 * next windows of a flight, whose size varies with the prior's uncertainty, fit into
 * it when it is reused; pages never written are never mapped. */
#define RECYCLE_HEADROOM 1.5

typedef struct {
  float *data;
  size_t cap;                   /* floats */
} Recycled;

enum { BLOCK_LOADING, BLOCK_READY, BLOCK_FAILED };

typedef struct {
  guint64 key;                  /* level, by, bx */
  int state;                    /* BLOCK_*, under lock */
  int users;                    /* readers holding it, under lock */
  int w, h;
  float *data;
  uint8_t *mask;                /* NULL: every pixel valid */
  size_t bytes;
  GList link;                   /* in lru while READY */
  char error[256];
} Block;

typedef struct {
  int level;
  int bx0, by0, bx1, by1;       /* blocks, inclusive */
} PrefetchReq;

typedef struct {
  int width, height;
  double fx, fy;                /* full-control pixels per level pixel */
#if GR_HAVE_GDAL
  GrGdalBands bands;
#endif
} Level;

struct GrControlSource {
  char *path;
  int band;
  GrControlInfo info;
  int block;
  uint64_t max_window_pixels;
  Level *levels;
  int nlevels;
  GrRaster whole;               /* in_memory: the control */
#if GR_HAVE_GDAL
  GDALDatasetH ds;
#endif
  GMutex gdal_lock;             /* the dataset, one thread at a time */

  GMutex lock;                  /* everything below */
  GCond cond;                   /* a block finished loading; prefetch queue changes */
  GHashTable *blocks;           /* key -> Block* */
  GQueue lru;                   /* READY blocks, most recent first */
  uint64_t cache_bytes;
  GrControlCacheStats stats;

  Recycled recycled[RECYCLE_SLOTS];     /* window planes given back, for reuse */

  GThread *worker;
  GQueue requests;              /* PrefetchReq*, oldest first */
  bool worker_busy;
  bool stop;
};

static guint64
block_key (int level, int bx, int by)
{
  return ((guint64) level << 56) | ((guint64) (guint32) by << 28) | (guint32) bx;
}

static void
block_free (Block * b)
{
  free (b->data);
  free (b->mask);
  g_free (b);
}

/* under lock: drops least-recently used idle blocks until under the bound */
static void
evict_locked (GrControlSource * s)
{
  GList *l = s->lru.tail;
  while (s->stats.bytes > s->cache_bytes && l) {
    GList *prev = l->prev;
    Block *b = l->data;
    if (b->users == 0) {
      g_queue_unlink (&s->lru, l);
      g_hash_table_remove (s->blocks, &b->key);
      s->stats.bytes -= b->bytes;
      s->stats.blocks--;
      s->stats.evictions++;
      block_free (b);
    }
    l = prev;
  }
}

#if GR_HAVE_GDAL
/* Decodes block (bx, by) of `level` into b (gdal_lock taken here). */
static GrStatus
block_decode (GrControlSource * s, int level, int bx, int by, Block * b)
{
  const Level *lv = &s->levels[level];
  int x0 = bx * s->block, y0 = by * s->block;
  int w = MIN (s->block, lv->width - x0), h = MIN (s->block, lv->height - y0);
  size_t np = (size_t) w * (size_t) h;
  b->w = w;
  b->h = h;
  b->data = malloc (np * sizeof (float));
  b->mask = malloc (np);
  float *tmp = lv->bands.nsrc == 3 ? malloc (2 * np * sizeof (float)) : NULL;
  uint8_t *mtmp = lv->bands.nmask > 1 ? malloc (np) : NULL;
  if (!b->data || !b->mask || (lv->bands.nsrc == 3 && !tmp)
      || (lv->bands.nmask > 1 && !mtmp)) {
    free (tmp);
    free (mtmp);
    gr_set_err (b->error, sizeof b->error, "'%s': out of memory for a %d x %d block",
        s->path, w, h);
    return GR_ERR_NOMEM;
  }
  g_mutex_lock (&s->gdal_lock);
  GrGdalScope scope;
  gr_gdal_scope_begin (&scope);
  CPLErr e = gr_gdal_bands_read (&lv->bands, x0, y0, w, h, b->data, b->mask, tmp, mtmp);
  if (e != CE_None)
    gr_set_err (b->error, sizeof b->error, "'%s': read failed at level %d, pixels (%d, %d) "
        "to (%d, %d): %s", s->path, level, x0, y0, x0 + w, y0 + h,
        scope.have_failure ? scope.failure : "GDAL read error");
  gr_gdal_scope_end (&scope);
  g_mutex_unlock (&s->gdal_lock);
  free (tmp);
  free (mtmp);
  if (e != CE_None)
    return GR_ERR_FORMAT;
  b->bytes = np * sizeof (float) + np;
  bool all_valid = true;
  for (size_t i = 0; i < np && all_valid; i++)
    all_valid = b->mask[i] != 0;
  if (all_valid) {
    free (b->mask);
    b->mask = NULL;
    b->bytes = np * sizeof (float);
  }
  return GR_OK;
}
#endif

/* A held block (users counted): from the cache, or decoded here.  NULL on failure with
 * the reason in errbuf.  Release with block_release. */
static Block *
block_get (GrControlSource * s, int level, int bx, int by, bool prefetching,
    GrStatus * st, char *errbuf, size_t errlen)
{
  guint64 key = block_key (level, bx, by);
  g_mutex_lock (&s->lock);
  Block *b = g_hash_table_lookup (s->blocks, &key);
  if (b) {
    b->users++;
    while (b->state == BLOCK_LOADING)
      g_cond_wait (&s->cond, &s->lock);
    if (b->state == BLOCK_FAILED) {
      *st = GR_ERR_FORMAT;
      gr_set_err (errbuf, errlen, "%s", b->error);
      if (--b->users == 0)
        block_free (b);         /* already out of the table */
      g_mutex_unlock (&s->lock);
      return NULL;
    }
    s->stats.hits++;
    g_queue_unlink (&s->lru, &b->link);
    g_queue_push_head_link (&s->lru, &b->link);
    g_mutex_unlock (&s->lock);
    return b;
  }
  b = g_new0 (Block, 1);
  b->key = key;
  b->users = 1;
  b->state = BLOCK_LOADING;
  b->link.data = b;
  g_hash_table_insert (s->blocks, &b->key, b);
  s->stats.misses++;
  if (prefetching)
    s->stats.prefetched++;
  g_mutex_unlock (&s->lock);

#if GR_HAVE_GDAL
  GrStatus dst = block_decode (s, level, bx, by, b);
#else
  GrStatus dst = GR_ERR_INVALID;        /* in-memory sources have no blocks */
  snprintf (b->error, sizeof b->error, "'%s': no blocks in this build", s->path);
#endif

  g_mutex_lock (&s->lock);
  if (dst != GR_OK) {
    b->state = BLOCK_FAILED;
    g_hash_table_remove (s->blocks, &b->key);   /* a later read tries again */
    g_cond_broadcast (&s->cond);
    *st = dst;
    gr_set_err (errbuf, errlen, "%s", b->error);
    if (--b->users == 0)
      block_free (b);
    g_mutex_unlock (&s->lock);
    return NULL;
  }
  b->state = BLOCK_READY;
  g_queue_push_head_link (&s->lru, &b->link);
  s->stats.bytes += b->bytes;
  s->stats.blocks++;
  if (s->stats.bytes > s->stats.peak_bytes)
    s->stats.peak_bytes = s->stats.bytes;
  evict_locked (s);
  g_cond_broadcast (&s->cond);
  g_mutex_unlock (&s->lock);
  return b;
}

static void
block_release (GrControlSource * s, Block * b)
{
  g_mutex_lock (&s->lock);
  b->users--;
  evict_locked (s);
  g_mutex_unlock (&s->lock);
}

/* ------------------------------------------------------------------ prefetch */

static gpointer
prefetch_worker (gpointer data)
{
  GrControlSource *s = data;
  g_mutex_lock (&s->lock);
  for (;;) {
    while (!s->stop && g_queue_is_empty (&s->requests)) {
      s->worker_busy = false;
      g_cond_broadcast (&s->cond);
      g_cond_wait (&s->cond, &s->lock);
    }
    if (s->stop)
      break;
    PrefetchReq *r = g_queue_pop_head (&s->requests);
    s->worker_busy = true;
    g_mutex_unlock (&s->lock);
    for (int by = r->by0; by <= r->by1; by++)
      for (int bx = r->bx0; bx <= r->bx1; bx++) {
        guint64 key = block_key (r->level, bx, by);
        g_mutex_lock (&s->lock);
        bool have = g_hash_table_contains (s->blocks, &key);
        bool stop = s->stop;
        g_mutex_unlock (&s->lock);
        if (stop)
          break;
        if (have)
          continue;
        GrStatus st;
        /* a failure is the reader's to report, when it reads that block itself */
        Block *b = block_get (s, r->level, bx, by, true, &st, NULL, 0);
        if (b)
          block_release (s, b);
      }
    g_free (r);
    g_mutex_lock (&s->lock);
  }
  s->worker_busy = false;
  g_cond_broadcast (&s->cond);
  g_mutex_unlock (&s->lock);
  return NULL;
}

/* The level-pixel rectangle [x0, x1) x [y0, y1) of a full-control pixel box grown by
 * margin, clipped to the level; false when empty or not finite. */
static bool
level_rect (const GrControlSource * s, int level, const double px_box[4], double margin,
    int r[4])
{
  const Level *lv = &s->levels[level];
  double b[4] = { px_box[0] - margin, px_box[1] - margin, px_box[2] + margin,
    px_box[3] + margin
  };
  for (int i = 0; i < 4; i++)
    if (!isfinite (b[i]))
      return false;
  /* a box edge within 1e-6 px of a pixel edge is on it (map units -> pixels rounds) */
  double x0 = floor (b[0] / lv->fx + 1e-6), y0 = floor (b[1] / lv->fy + 1e-6);
  double x1 = ceil (b[2] / lv->fx - 1e-6), y1 = ceil (b[3] / lv->fy - 1e-6);
  x0 = MAX (x0, 0.0);
  y0 = MAX (y0, 0.0);
  x1 = MIN (x1, (double) lv->width);
  y1 = MIN (y1, (double) lv->height);
  if (!(x0 < x1 && y0 < y1))
    return false;
  r[0] = (int) x0;
  r[1] = (int) y0;
  r[2] = (int) x1;
  r[3] = (int) y1;
  return true;
}

void
gr_control_source_prefetch (GrControlSource * s, int level, const double px_box[4],
    double margin)
{
  int r[4];
  if (!s || s->info.in_memory || level < 0 || level >= s->nlevels
      || !level_rect (s, level, px_box, margin, r))
    return;
  PrefetchReq *q = g_new (PrefetchReq, 1);
  q->level = level;
  q->bx0 = r[0] / s->block;
  q->by0 = r[1] / s->block;
  q->bx1 = (r[2] - 1) / s->block;
  q->by1 = (r[3] - 1) / s->block;
  g_mutex_lock (&s->lock);
  g_queue_push_tail (&s->requests, q);
  while (g_queue_get_length (&s->requests) > PREFETCH_QUEUE_MAX)
    g_free (g_queue_pop_head (&s->requests));   /* the flight has moved on */
  if (!s->worker) {
    s->worker_busy = true;
    s->worker = g_thread_new ("georeg-prefetch", prefetch_worker, s);
  }
  g_cond_broadcast (&s->cond);
  g_mutex_unlock (&s->lock);
}

void
gr_control_source_prefetch_wait (GrControlSource * s)
{
  if (!s)
    return;
  g_mutex_lock (&s->lock);
  while (s->worker && (s->worker_busy || !g_queue_is_empty (&s->requests)))
    g_cond_wait (&s->cond, &s->lock);
  g_mutex_unlock (&s->lock);
}

/* ------------------------------------------------------------------ open, free */

static void
params_resolve (const GrControlSourceParams * p, GrControlSource * s)
{
  s->cache_bytes = p && p->cache_bytes ? p->cache_bytes : GR_CONTROL_DEFAULT_CACHE_BYTES;
  s->block = p && p->block_size ? p->block_size : GR_CONTROL_DEFAULT_BLOCK;
  s->block = CLAMP (s->block, 16, 4096);
  s->max_window_pixels = p && p->max_window_pixels ? p->max_window_pixels :
      GR_RASTER_DEFAULT_MAX_PIXELS;
}

static GrStatus
open_in_memory (GrControlSource * s, char *errbuf, size_t errlen)
{
  GrStatus st = gr_raster_load (s->path, s->band, &s->whole, errbuf, errlen);
  if (st != GR_OK)
    return st;
  s->info.in_memory = true;
  s->info.width = s->whole.plane.width;
  s->info.height = s->whole.plane.height;
  s->info.bands = s->whole.bands;
  s->info.bit_depth = s->whole.bit_depth;
  s->info.has_geo = s->whole.has_geo;
  memcpy (s->info.geo, s->whole.geo, sizeof s->info.geo);
  snprintf (s->info.driver, sizeof s->info.driver, "%s", s->whole.driver);
  s->nlevels = 1;
  s->levels = g_new0 (Level, 1);
  s->levels[0].width = s->info.width;
  s->levels[0].height = s->info.height;
  s->levels[0].fx = s->levels[0].fy = 1.0;
  return GR_OK;
}

#if GR_HAVE_GDAL
static GrStatus
open_gdal (GrControlSource * s, char *errbuf, size_t errlen)
{
  GrGdalScope scope;
  gr_gdal_scope_begin (&scope);
  GrStatus st = gr_gdal_open (s->path, &scope, &s->ds, errbuf, errlen);
  GrGdalBands full;
  memset (&full, 0, sizeof full);
  if (st == GR_OK)
    st = gr_gdal_bands_init (s->ds, s->path, s->band, &full, errbuf, errlen);
  GrRaster geo;
  gr_raster_reset (&geo);
  if (st == GR_OK)
    st = gr_gdal_georef (s->ds, s->path, &geo, errbuf, errlen);
  if (st == GR_OK) {
    int nov = GDALGetOverviewCount (full.src[0]);
    s->levels = g_new0 (Level, 1 + MAX (nov, 0));
    s->levels[0].width = full.width;
    s->levels[0].height = full.height;
    s->levels[0].fx = s->levels[0].fy = 1.0;
    s->levels[0].bands = full;
    s->nlevels = 1;
    /* overviews, finest first; one that is not coarser than the last, or that a source
     * band lacks, ends the list */
    for (int k = 0; k < nov; k++) {
      Level *lv = &s->levels[s->nlevels];
      const Level *prev = &s->levels[s->nlevels - 1];
      if (!gr_gdal_bands_overview (&full, k, &lv->bands) || lv->bands.width >= prev->width
          || lv->bands.height >= prev->height) {
        memset (lv, 0, sizeof *lv);
        break;
      }
      lv->width = lv->bands.width;
      lv->height = lv->bands.height;
      lv->fx = (double) full.width / lv->width;
      lv->fy = (double) full.height / lv->height;
      s->nlevels++;
    }
    s->info.width = full.width;
    s->info.height = full.height;
    s->info.bands = full.bands;
    s->info.bit_depth = full.bit_depth;
    s->info.has_geo = geo.has_geo;
    memcpy (s->info.geo, geo.geo, sizeof geo.geo);
    snprintf (s->info.driver, sizeof s->info.driver, "%s", geo.driver);
  } else {
    gr_gdal_bands_clear (&full);
  }
  gr_gdal_scope_end (&scope);
  return st;
}
#endif

GrStatus
gr_control_source_open (const char *path, int band, const GrControlSourceParams * params,
    GrControlSource ** out, char *errbuf, size_t errlen)
{
  if (!out || !path || !*path) {
    gr_set_err (errbuf, errlen, "gr_control_source_open: no path or no output");
    return GR_ERR_INVALID;
  }
  *out = NULL;
  GrControlSource *s = g_new0 (GrControlSource, 1);
  s->path = g_strdup (path);
  s->band = band;
  params_resolve (params, s);
  gr_raster_reset (&s->whole);
  g_mutex_init (&s->gdal_lock);
  g_mutex_init (&s->lock);
  g_cond_init (&s->cond);
  s->blocks = g_hash_table_new (g_int64_hash, g_int64_equal);
  g_queue_init (&s->lru);
  g_queue_init (&s->requests);

  GrStatus st;
#if GR_HAVE_GDAL
  /* the PNGs GDAL reads wrong (raster.c) are held whole, as gr_raster_load reads them */
  if (gr_raster_gdal_png_to_builtin (path))
    st = open_in_memory (s, errbuf, errlen);
  else
    st = open_gdal (s, errbuf, errlen);
#else
  st = open_in_memory (s, errbuf, errlen);
#endif
  if (st != GR_OK) {
    gr_control_source_free (s);
    return st;
  }
  s->info.levels = s->nlevels;
  *out = s;
  return GR_OK;
}

bool
gr_control_source_can_window (const char *path)
{
#if GR_HAVE_GDAL
  if (!path || gr_raster_gdal_png_to_builtin (path))
    return false;
  /* a FIFO or a device would block GDAL's identification: the whole-image loader
   * refuses those by name */
  GStatBuf st;
  if (strncmp (path, "/vsi", 4) != 0 && (g_stat (path, &st) != 0 || !S_ISREG (st.st_mode)))
    return false;
  /* PNG and JPEG have no random access: every window would decode the file from its
   * start (and an interlaced PNG or a progressive JPEG whole), so they are held whole,
   * under the decoding budget, never windowed */
  static gsize registered = 0;
  if (g_once_init_enter (&registered)) {
    GDALAllRegister ();
    g_once_init_leave (&registered, 1);
  }
  CPLPushErrorHandler (CPLQuietErrorHandler);
  GDALDriverH d = GDALIdentifyDriver (path, NULL);
  CPLPopErrorHandler ();
  const char *name = d ? GDALGetDriverShortName (d) : "";
  return strcmp (name, "PNG") != 0 && strcmp (name, "JPEG") != 0;
#else
  (void) path;
  return false;
#endif
}

void
gr_control_source_free (GrControlSource * s)
{
  if (!s)
    return;
  g_mutex_lock (&s->lock);
  s->stop = true;
  g_cond_broadcast (&s->cond);
  GThread *worker = s->worker;
  g_mutex_unlock (&s->lock);
  if (worker)
    g_thread_join (worker);
  PrefetchReq *r;
  while ((r = g_queue_pop_head (&s->requests)))
    g_free (r);
  GList *l;
  while ((l = g_queue_pop_head_link (&s->lru)))
    block_free (l->data);
  g_hash_table_destroy (s->blocks);
#if GR_HAVE_GDAL
  for (int i = 0; s->levels && i < s->nlevels; i++)
    gr_gdal_bands_clear (&s->levels[i].bands);
  if (s->ds) {
    GrGdalScope scope;
    gr_gdal_scope_begin (&scope);
    GDALClose (s->ds);
    gr_gdal_scope_end (&scope);
  }
#endif
  g_free (s->levels);
  gr_raster_clear (&s->whole);
  for (int i = 0; i < RECYCLE_SLOTS; i++)
    free (s->recycled[i].data);
  g_mutex_clear (&s->gdal_lock);
  g_mutex_clear (&s->lock);
  g_cond_clear (&s->cond);
  g_free (s->path);
  g_free (s);
}

/* ------------------------------------------------------------------ queries */

void
gr_control_source_info (const GrControlSource * s, GrControlInfo * info)
{
  *info = s->info;
}

bool
gr_control_source_level_size (const GrControlSource * s, int level, int *width,
    int *height, double *scale_x, double *scale_y)
{
  if (!s || level < 0 || level >= s->nlevels)
    return false;
  const Level *lv = &s->levels[level];
  if (width)
    *width = lv->width;
  if (height)
    *height = lv->height;
  if (scale_x)
    *scale_x = lv->fx;
  if (scale_y)
    *scale_y = lv->fy;
  return true;
}

int
gr_control_source_level_for_scale (const GrControlSource * s, double scale)
{
  if (!s || !(scale > 0.0) || scale >= 1.0)
    return 0;
  double want = 1.0 / scale * (1.0 + 1e-9);
  int best = 0;
  for (int k = 1; k < s->nlevels; k++)
    if (s->levels[k].fx <= want && s->levels[k].fy <= want)
      best = k;
  return best;
}

void
gr_control_source_raise_cache_bytes (GrControlSource * s, uint64_t bytes)
{
  g_mutex_lock (&s->lock);
  if (bytes > s->cache_bytes)
    s->cache_bytes = bytes;
  g_mutex_unlock (&s->lock);
}

void
gr_control_source_stats (GrControlSource * s, GrControlCacheStats * stats)
{
  g_mutex_lock (&s->lock);
  *stats = s->stats;
  g_mutex_unlock (&s->lock);
}

bool
gr_control_source_map_to_px (const GrControlSource * s, const double map_box[4],
    double px_box[4])
{
  if (!s->info.has_geo)
    return false;
  const double *g = s->info.geo;
  double det = g[1] * g[5] - g[2] * g[4];
  if (det == 0.0 || !isfinite (det))
    return false;
  double lo_x = INFINITY, lo_y = INFINITY, hi_x = -INFINITY, hi_y = -INFINITY;
  for (int c = 0; c < 4; c++) {
    double dx = map_box[c & 1 ? 2 : 0] - g[0], dy = map_box[c & 2 ? 3 : 1] - g[3];
    double px = (g[5] * dx - g[2] * dy) / det, py = (-g[4] * dx + g[1] * dy) / det;
    lo_x = MIN (lo_x, px);
    hi_x = MAX (hi_x, px);
    lo_y = MIN (lo_y, py);
    hi_y = MAX (hi_y, py);
  }
  px_box[0] = lo_x;
  px_box[1] = lo_y;
  px_box[2] = hi_x;
  px_box[3] = hi_y;
  return isfinite (lo_x) && isfinite (lo_y) && isfinite (hi_x) && isfinite (hi_y);
}

/* ------------------------------------------------------------------ windows */

void
gr_control_window_clear (GrControlWindow * w)
{
  if (!w)
    return;
  gr_raster_clear (&w->raster);
  memset (w, 0, sizeof *w);
  gr_raster_reset (&w->raster);
}

void
gr_control_source_window_release (GrControlSource * s, GrControlWindow * w)
{
  if (!w)
    return;
  float *spill = NULL;
  if (s && w->raster.plane.data && w->data_capacity > 0) {
    /* kept in an empty slot, else in place of the smallest kept plane if that one is
     * smaller (the larger serves more windows) */
    Recycled in = { w->raster.plane.data, w->data_capacity };
    g_mutex_lock (&s->lock);
    int slot = 0;               /* an empty slot, else the smallest plane's */
    for (int i = 1; i < RECYCLE_SLOTS && s->recycled[slot].data; i++)
      if (!s->recycled[i].data || s->recycled[i].cap < s->recycled[slot].cap)
        slot = i;
    if (!s->recycled[slot].data || s->recycled[slot].cap < in.cap) {
      spill = s->recycled[slot].data;
      s->recycled[slot] = in;
    } else {
      spill = in.data;
    }
    g_mutex_unlock (&s->lock);
    w->raster.plane.data = NULL;
  }
  free (spill);
  gr_control_window_clear (w);
}

/* The window's plane (w x h, a mask with `with_mask`, as gr_raster_plane_alloc) in a
 * kept plane that holds it (the smallest such), else freshly allocated with room for
 * the next windows. */
static bool
window_plane_alloc (GrControlSource * s, GrControlWindow * out, int w, int h,
    bool with_mask)
{
  GrPlaneF *p = &out->raster.plane;
  memset (p, 0, sizeof *p);
  out->data_capacity = 0;
  const size_t n = (size_t) w * (size_t) h;
  if (w <= 0 || h <= 0 || n / (size_t) w != (size_t) h || n > SIZE_MAX / sizeof (float))
    return false;
  float *data = NULL;
  size_t cap = 0;
  g_mutex_lock (&s->lock);
  int best = -1;
  for (int i = 0; i < RECYCLE_SLOTS; i++)
    if (s->recycled[i].data && s->recycled[i].cap >= n &&
        (best < 0 || s->recycled[i].cap < s->recycled[best].cap))
      best = i;
  if (best >= 0) {
    data = s->recycled[best].data;
    cap = s->recycled[best].cap;
    s->recycled[best] = (Recycled) { NULL, 0 };
  }
  g_mutex_unlock (&s->lock);
  if (!data) {
    /* the headroom within the window limit (which n is already under) */
    cap = MAX (n, (size_t) MIN ((double) n * RECYCLE_HEADROOM,
            (double) s->max_window_pixels));
    data = malloc (cap * sizeof (float));
    if (!data) {
      cap = n;
      data = malloc (n * sizeof (float));
    }
    if (!data)
      return false;
  }
  if (with_mask) {
    p->mask = malloc (n);
    if (!p->mask) {
      free (data);
      return false;
    }
  }
  p->data = data;
  p->width = w;
  p->height = h;
  p->stride = (size_t) w;
  out->data_capacity = cap;
  return true;
}

/* Fills the window's placement and geotransform for level rect r. */
static void
window_place (const GrControlSource * s, int level, const int r[4], GrControlWindow * out)
{
  const Level *lv = &s->levels[level];
  const double *g = s->info.geo;
  out->level = level;
  out->x0 = r[0];
  out->y0 = r[1];
  out->scale_x = lv->fx;
  out->scale_y = lv->fy;
  out->off_x = r[0] * lv->fx;
  out->off_y = r[1] * lv->fy;
  out->raster.bands = s->info.bands;
  out->raster.bit_depth = s->info.bit_depth;
  out->raster.has_geo = s->info.has_geo;
  snprintf (out->raster.driver, sizeof out->raster.driver, "%s", s->info.driver);
  if (s->info.has_geo) {
    double *wg = out->raster.geo;
    wg[0] = g[0] + g[1] * out->off_x + g[2] * out->off_y;
    wg[1] = g[1] * lv->fx;
    wg[2] = g[2] * lv->fy;
    wg[3] = g[3] + g[4] * out->off_x + g[5] * out->off_y;
    wg[4] = g[4] * lv->fx;
    wg[5] = g[5] * lv->fy;
  }
}

/* Copies level rect r of the in-memory control into the window plane. */
static void
window_copy_whole (const GrControlSource * s, const int r[4], GrPlaneF * p)
{
  const GrPlaneF *src = &s->whole.plane;
  for (int y = r[1]; y < r[3]; y++) {
    size_t drow = (size_t) (y - r[1]) * p->stride;
    size_t srow = (size_t) y * src->stride;
    memcpy (p->data + drow, src->data + srow + r[0], sizeof (float) * (size_t) p->width);
    if (src->mask)
      memcpy (p->mask + drow, src->mask + (size_t) y * (size_t) src->width + r[0],
          (size_t) p->width);
    else
      memset (p->mask + drow, GR_MASK_VALID, (size_t) p->width);
  }
}

GrStatus
gr_control_source_window (GrControlSource * s, int level, const double px_box[4],
    double margin, GrControlWindow * out, char *errbuf, size_t errlen)
{
  if (!s || !out || !px_box) {
    gr_set_err (errbuf, errlen, "gr_control_source_window: NULL argument");
    return GR_ERR_INVALID;
  }
  memset (out, 0, sizeof *out);
  gr_raster_reset (&out->raster);
  if (level < 0 || level >= s->nlevels) {
    gr_set_err (errbuf, errlen, "'%s': no level %d (the control has %d)", s->path, level,
        s->nlevels);
    return GR_ERR_INVALID;
  }
  int r[4];
  if (!(margin >= 0.0) || !level_rect (s, level, px_box, margin, r)) {
    gr_set_err (errbuf, errlen, "'%s': the box (%g, %g)-(%g, %g) +- %g px is off the %d x "
        "%d control", s->path, px_box[0], px_box[1], px_box[2], px_box[3], margin,
        s->info.width, s->info.height);
    return GR_ERR_INVALID;
  }
  int w = r[2] - r[0], h = r[3] - r[1];
  if ((uint64_t) w * (uint64_t) h > s->max_window_pixels) {
    gr_set_err (errbuf, errlen, "'%s': a window of %d x %d pixels at level %d is over the "
        "limit of %llu pixels (a coarser level, or a smaller prior uncertainty)", s->path,
        w, h, level, (unsigned long long) s->max_window_pixels);
    return GR_ERR_INVALID;
  }
  window_place (s, level, r, out);
  GrPlaneF *p = &out->raster.plane;
  /* from blocks, the mask is made only when a block has one (below) */
  if (!window_plane_alloc (s, out, w, h, s->info.in_memory)) {
    gr_set_err (errbuf, errlen, "'%s': cannot allocate a %d x %d window", s->path, w, h);
    return GR_ERR_NOMEM;
  }
  if (s->info.in_memory) {
    window_copy_whole (s, r, p);
  } else {
    int B = s->block;
    for (int by = r[1] / B; by <= (r[3] - 1) / B; by++)
      for (int bx = r[0] / B; bx <= (r[2] - 1) / B; bx++) {
        GrStatus st = GR_OK;
        Block *b = block_get (s, level, bx, by, false, &st, errbuf, errlen);
        if (!b) {
          gr_control_window_clear (out);
          return st;
        }
        /* the window's mask on the first block with invalid pixels, all valid until
         * then: a window of valid blocks (the usual case inside a mosaic) has none,
         * and is not written and scanned a second time for it (memory traffic is
         * what a slide costs: docs/benchmarks.md, ninth session) */
        if (b->mask && !p->mask) {
          p->mask = malloc ((size_t) w * (size_t) h);
          if (!p->mask) {
            block_release (s, b);
            gr_control_window_clear (out);
            gr_set_err (errbuf, errlen, "'%s': cannot allocate a %d x %d window", s->path,
                w, h);
            return GR_ERR_NOMEM;
          }
          memset (p->mask, GR_MASK_VALID, (size_t) w * (size_t) h);
        }
        /* the part of the block inside the window, in level pixels */
        int bx0 = bx * B, by0 = by * B;
        int x0 = MAX (r[0], bx0), x1 = MIN (r[2], bx0 + b->w);
        int y0 = MAX (r[1], by0), y1 = MIN (r[3], by0 + b->h);
        for (int y = y0; y < y1; y++) {
          size_t drow = (size_t) (y - r[1]) * p->stride + (size_t) (x0 - r[0]);
          size_t srow = (size_t) (y - by0) * (size_t) b->w + (size_t) (x0 - bx0);
          memcpy (p->data + drow, b->data + srow, sizeof (float) * (size_t) (x1 - x0));
          if (b->mask)
            memcpy (p->mask + drow, b->mask + srow, (size_t) (x1 - x0));
        }
        block_release (s, b);
      }
  }
  gr_raster_mask_drop_if_all_valid (p);
  return GR_OK;
}

GrStatus
gr_control_source_window_map (GrControlSource * s, int level, const double map_box[4],
    double margin, GrControlWindow * out, char *errbuf, size_t errlen)
{
  double px[4];
  if (!s || !map_box || !gr_control_source_map_to_px (s, map_box, px)) {
    if (out) {
      memset (out, 0, sizeof *out);
      gr_raster_reset (&out->raster);
    }
    gr_set_err (errbuf, errlen, "'%s': a map box needs the control's geotransform (it "
        "has none usable)", s ? s->path : "?");
    return GR_ERR_INVALID;
  }
  return gr_control_source_window (s, level, px, margin, out, errbuf, errlen);
}

GrStatus
gr_control_source_whole (GrControlSource * s, const GrRasterBudget * budget,
    GrControlWindow * out, char *errbuf, size_t errlen)
{
  memset (out, 0, sizeof *out);
  gr_raster_reset (&out->raster);
  char why[400];
  if (gr_raster_budget_check (budget, "control", (uint64_t) s->info.width,
          (uint64_t) s->info.height, true, 0, why, sizeof why) != GR_OK) {
    /* the finest level that would fit, as a hint */
    int fit = -1;
    for (int k = 1; k < s->nlevels && fit < 0; k++)
      if (gr_raster_budget_check (budget, "level", (uint64_t) s->levels[k].width,
              (uint64_t) s->levels[k].height, true, 0, NULL, 0) == GR_OK)
        fit = k;
    char hint[160] = "";
    if (fit > 0)
      snprintf (hint, sizeof hint, " (its overview level %d, %d x %d, would fit)", fit,
          s->levels[fit].width, s->levels[fit].height);
    gr_set_err (errbuf, errlen, "'%s': %s.  Without a pose prior the whole control is "
        "needed: give the element a prior (then only a window around it is read)%s",
        s->path, why, hint);
    return GR_ERR_FORMAT;
  }
  GrStatus st;
  if (s->info.in_memory) {
    int r[4] = { 0, 0, s->info.width, s->info.height };
    window_place (s, 0, r, out);
    if (!gr_raster_plane_alloc (&out->raster.plane, r[2], r[3], true)) {
      gr_set_err (errbuf, errlen, "'%s': cannot allocate %d x %d pixels", s->path, r[2],
          r[3]);
      return GR_ERR_NOMEM;
    }
    window_copy_whole (s, r, &out->raster.plane);
    gr_raster_mask_drop_if_all_valid (&out->raster.plane);
    return GR_OK;
  }
  /* read as gr_raster_load reads it: strips, not through the block cache (whose bound
   * it would flush for nothing) */
  st = gr_raster_load_budget (s->path, s->band, budget, &out->raster, errbuf, errlen);
  if (st == GR_OK) {
    out->scale_x = out->scale_y = 1.0;
  }
  return st;
}

bool
gr_control_window_covers (const GrControlWindow * w, const GrControlSource * s,
    const double px_box[4])
{
  if (!w || !s || !w->raster.plane.data)
    return false;
  double x0 = MAX (px_box[0], 0.0), y0 = MAX (px_box[1], 0.0);
  double x1 = MIN (px_box[2], (double) s->info.width);
  double y1 = MIN (px_box[3], (double) s->info.height);
  if (!(x0 < x1 && y0 < y1))
    return false;
  double wx1 = w->off_x + w->raster.plane.width * w->scale_x;
  double wy1 = w->off_y + w->raster.plane.height * w->scale_y;
  /* the window's right and bottom edges at the control's edge are the control's edge
   * (an overview's scale is not an exact divisor) */
  if (w->x0 + w->raster.plane.width >= s->levels[w->level].width)
    wx1 = s->info.width;
  if (w->y0 + w->raster.plane.height >= s->levels[w->level].height)
    wy1 = s->info.height;
  return x0 >= w->off_x && y0 >= w->off_y && x1 <= wx1 && y1 <= wy1;
}

void
gr_control_window_to_full (const GrControlWindow * w, const double h_win[9],
    double h_full[9])
{
  /* full = S * win, S = [sx 0 ox; 0 sy oy; 0 0 1] */
  for (int c = 0; c < 3; c++) {
    h_full[c] = w->scale_x * h_win[c] + w->off_x * h_win[6 + c];
    h_full[3 + c] = w->scale_y * h_win[3 + c] + w->off_y * h_win[6 + c];
    h_full[6 + c] = h_win[6 + c];
  }
}

void
gr_control_window_from_full (const GrControlWindow * w, const double h_full[9],
    double h_win[9])
{
  /* win = S^-1 * full, S^-1 = [1/sx 0 -ox/sx; 0 1/sy -oy/sy; 0 0 1] */
  for (int c = 0; c < 3; c++) {
    h_win[c] = (h_full[c] - w->off_x * h_full[6 + c]) / w->scale_x;
    h_win[3 + c] = (h_full[3 + c] - w->off_y * h_full[6 + c]) / w->scale_y;
    h_win[6 + c] = h_full[6 + c];
  }
}
