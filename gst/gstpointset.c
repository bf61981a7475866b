/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <string.h>

#include "gstpointset.h"

GstCaps *
gst_pointset_caps_new (gint dimensions)
{
  g_return_val_if_fail (dimensions == 2 || dimensions == 3, NULL);
  return gst_caps_new_simple (GST_POINTSET_MEDIA_TYPE, "dimensions", G_TYPE_INT,
      dimensions, NULL);
}

gboolean
gst_pointset_caps_get_dimensions (const GstCaps * caps, gint * dimensions)
{
  if (!caps || gst_caps_get_size (caps) < 1)
    return FALSE;
  const GstStructure *s = gst_caps_get_structure (caps, 0);
  gint d = 0;
  if (!gst_structure_has_name (s, GST_POINTSET_MEDIA_TYPE) ||
      !gst_structure_get_int (s, "dimensions", &d) || (d != 2 && d != 3))
    return FALSE;
  *dimensions = d;
  return TRUE;
}

static inline void
put_f32_le (guint8 * dst, gfloat v)
{
  guint32 u;
  memcpy (&u, &v, 4);
  u = GUINT32_TO_LE (u);
  memcpy (dst, &u, 4);
}

void
gst_pointset_write (guint8 * dest, const gdouble * xyz, gsize n, gint dimensions)
{
  for (gsize i = 0; i < n * (gsize) dimensions; i++)
    put_f32_le (dest + 4 * i, (gfloat) xyz[i]);
}

GstBuffer *
gst_pointset_buffer_new (const gdouble * xyz, const gfloat * xyz_f, gsize n,
    gint dimensions)
{
  g_return_val_if_fail (dimensions == 2 || dimensions == 3, NULL);
  g_return_val_if_fail ((xyz == NULL) != (xyz_f == NULL) || n == 0, NULL);
  gsize m = n * (gsize) dimensions;
  GstBuffer *buf = gst_buffer_new_allocate (NULL, m * 4, NULL);
  if (!buf)
    return NULL;
  GstMapInfo map;
  if (!gst_buffer_map (buf, &map, GST_MAP_WRITE)) {
    gst_buffer_unref (buf);
    return NULL;
  }
  for (gsize i = 0; i < m; i++)
    put_f32_le (map.data + 4 * i, xyz ? (gfloat) xyz[i] : xyz_f[i]);
  gst_buffer_unmap (buf, &map);
  return buf;
}

gboolean
gst_pointset_read (const guint8 * data, gsize size, gint dimensions, gdouble ** xyz,
    gsize * n, gchar ** error)
{
  *xyz = NULL;
  *n = 0;
  if (dimensions != 2 && dimensions != 3) {
    *error = g_strdup_printf ("bad dimensions %d", dimensions);
    return FALSE;
  }
  gsize unit = 4 * (gsize) dimensions;
  if (size % unit != 0) {
    *error = g_strdup_printf ("a buffer of %" G_GSIZE_FORMAT " bytes is not a whole "
        "number of %d-D float32 points (%" G_GSIZE_FORMAT " bytes each)", size,
        dimensions, unit);
    return FALSE;
  }
  gsize m = size / 4;
  *n = size / unit;
  if (m == 0)
    return TRUE;
  gdouble *v = g_try_new (gdouble, m);
  if (!v) {
    *error = g_strdup ("out of memory");
    return FALSE;
  }
  for (gsize i = 0; i < m; i++) {
    guint32 u;
    gfloat f;
    memcpy (&u, data + 4 * i, 4);
    u = GUINT32_FROM_LE (u);
    memcpy (&f, &u, 4);
    v[i] = f;
  }
  *xyz = v;
  return TRUE;
}

/* ---- connectivity meta ------------------------------------------------------------ */

GType
gst_point_set_cells_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { NULL };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, gst_meta_api_type_register ("GstPointSetCellsMetaAPI",
            tags));
  return type;
}

static gboolean
cells_meta_init (GstMeta * meta, gpointer params, GstBuffer * buffer)
{
  GstPointSetCellsMeta *m = (GstPointSetCellsMeta *) meta;
  m->cell_size = 0;
  m->ncells = 0;
  m->cells = NULL;
  return TRUE;
}

static void
cells_meta_free (GstMeta * meta, GstBuffer * buffer)
{
  g_free (((GstPointSetCellsMeta *) meta)->cells);
}

static gboolean
cells_meta_transform (GstBuffer * dest, GstMeta * meta, GstBuffer * buffer, GQuark type,
    gpointer data)
{
  GstPointSetCellsMeta *m = (GstPointSetCellsMeta *) meta;
  if (!GST_META_TRANSFORM_IS_COPY (type))
    return FALSE;
  return gst_buffer_add_point_set_cells_meta (dest, m->cells, m->ncells, m->cell_size)
      != NULL;
}

const GstMetaInfo *
gst_point_set_cells_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;
  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_POINT_SET_CELLS_META_API_TYPE,
        "GstPointSetCellsMeta", sizeof (GstPointSetCellsMeta), cells_meta_init,
        cells_meta_free, cells_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) mi);
  }
  return info;
}

GstPointSetCellsMeta *
gst_buffer_add_point_set_cells_meta (GstBuffer * buffer, const guint32 * cells,
    gsize ncells, guint cell_size)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  if ((cell_size != 2 && cell_size != 3) || (ncells && !cells))
    return NULL;
  GstPointSetCellsMeta *m = (GstPointSetCellsMeta *) gst_buffer_add_meta (buffer,
      gst_point_set_cells_meta_get_info (), NULL);
  if (!m)
    return NULL;
  m->cell_size = cell_size;
  m->ncells = ncells;
  m->cells = g_memdup2 (cells, sizeof (guint32) * ncells * cell_size);
  return m;
}
