/* pointsetparse: point-set text files (CSV / whitespace, PLY ASCII, legacy VTK) ->
 * application/x-pointset buffers.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_POINT_SET_PARSE_H__
#define __GST_POINT_SET_PARSE_H__

#include <gst/gst.h>
#include <gst/base/gstadapter.h>

#include "pointset_io.h"

G_BEGIN_DECLS

/* How input buffers make up files. */
typedef enum {
  GST_POINT_SET_PARSE_MODE_AUTO = 0,       /* stream when upstream knows its byte size
                                            * (filesrc), else per-buffer */
  GST_POINT_SET_PARSE_MODE_STREAM = 1,     /* the whole stream is one file (until EOS) */
  GST_POINT_SET_PARSE_MODE_PER_BUFFER = 2, /* each buffer is one whole file (multifilesrc) */
} GstPointSetParseMode;

#define GST_TYPE_POINT_SET_PARSE_MODE (gst_point_set_parse_mode_get_type ())
GType gst_point_set_parse_mode_get_type (void);

#define GST_TYPE_POINT_SET_FORMAT (gst_point_set_format_get_type ())
GType gst_point_set_format_get_type (void);

#define GST_TYPE_POINT_SET_PARSE (gst_point_set_parse_get_type ())
G_DECLARE_FINAL_TYPE (GstPointSetParse, gst_point_set_parse, GST, POINT_SET_PARSE,
    GstElement)

struct _GstPointSetParse {
  GstElement parent;
  GstPad *sinkpad, *srcpad;

  /* properties (object lock) */
  GstPointSetParseMode mode;
  GrPointSetFormat format;
  gint dimensions;

  /* streaming state */
  GstAdapter *adapter;
  gint active_mode;             /* resolved mode, -1 before the first buffer */
  gint64 expected_size;         /* stream mode: bytes upstream announced, -1 unknown */
  gboolean emitted;             /* stream mode: this stream's set was pushed */
  gboolean got_data;
  gint out_dim;                 /* dimensions of the caps sent downstream, 0 = none */
  gboolean need_segment;
  GstClockTime first_pts;
  guint64 sets;
};

GST_ELEMENT_REGISTER_DECLARE (pointsetparse);

G_END_DECLS

#endif
