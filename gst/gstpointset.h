/* The point-set media type shared by pointsetparse, landmarkshoot and pointsetenc.
 *
 *   application/x-pointset, dimensions = (int) { 2, 3 }
 *
 * One buffer is one complete point set: N points of D = dimensions float32 coordinates,
 * point-major (x0 y0 [z0] x1 y1 [z1] ...), little-endian, so the buffer holds
 * N * D * 4 bytes.  N is not in the caps: it is the buffer size / (4 D) and may change
 * from buffer to buffer (e.g. one subject per buffer from multifilesrc) without a caps
 * renegotiation.  An empty buffer is an empty set (an error for landmarkshoot).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_POINTSET_H__
#define __GST_POINTSET_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_POINTSET_MEDIA_TYPE "application/x-pointset"
#define GST_POINTSET_CAPS GST_POINTSET_MEDIA_TYPE ", dimensions = (int) { 2, 3 }"

/* Fixed caps for D = 2 or 3. */
GstCaps *gst_pointset_caps_new (gint dimensions);

/* The dimensions of fixed point-set caps; FALSE when the caps are not point-set caps
 * with dimensions 2 or 3. */
gboolean gst_pointset_caps_get_dimensions (const GstCaps * caps, gint * dimensions);

/* A new buffer holding n points of dimension D (from doubles or floats, exactly one
 * non-NULL), converted to little-endian float32. */
GstBuffer *gst_pointset_buffer_new (const gdouble * xyz, const gfloat * xyz_f, gsize n,
    gint dimensions);

/* Writes n * D coordinates into dest (n * D * 4 bytes) as little-endian float32. */
void gst_pointset_write (guint8 * dest, const gdouble * xyz, gsize n, gint dimensions);

/* Reads the point set of a mapped buffer into a newly allocated array of doubles
 * (g_free it).  FALSE, with *error set (g_free it), when size is not a whole number of
 * points.  *n may be 0 (empty set: *xyz is NULL). */
gboolean gst_pointset_read (const guint8 * data, gsize size, gint dimensions,
    gdouble ** xyz, gsize * n, gchar ** error);

/* Connectivity of a mesh or a curve travelling with its point set: a meta on the
 * buffer (elements that do not know it pass it on or drop it; the points are the same
 * either way).  ncells cells of cell_size (2 segments, 3 triangles) vertex indices. */
typedef struct {
  GstMeta meta;
  guint cell_size;
  gsize ncells;
  guint32 *cells;
} GstPointSetCellsMeta;

GType gst_point_set_cells_meta_api_get_type (void);
const GstMetaInfo *gst_point_set_cells_meta_get_info (void);
#define GST_POINT_SET_CELLS_META_API_TYPE (gst_point_set_cells_meta_api_get_type ())
#define gst_buffer_get_point_set_cells_meta(b) ((GstPointSetCellsMeta *) \
    gst_buffer_get_meta ((b), GST_POINT_SET_CELLS_META_API_TYPE))

/* Attaches a copy of the cells (NULL when cell_size is not 2 or 3). */
GstPointSetCellsMeta *gst_buffer_add_point_set_cells_meta (GstBuffer * buffer,
    const guint32 * cells, gsize ncells, guint cell_size);

G_END_DECLS

#endif
