/* pointsetenc: application/x-pointset buffers -> CSV text (one document per buffer).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_POINT_SET_ENC_H__
#define __GST_POINT_SET_ENC_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_POINT_SET_ENC (gst_point_set_enc_get_type ())
G_DECLARE_FINAL_TYPE (GstPointSetEnc, gst_point_set_enc, GST, POINT_SET_ENC, GstElement)

struct _GstPointSetEnc {
  GstElement parent;
  GstPad *sinkpad, *srcpad;
  gboolean header;              /* property (object lock) */
  gboolean ply_caps;            /* the src caps say application/x-ply (meshes) */
  gint dim;                     /* from the caps, 0 = not negotiated */
};

GST_ELEMENT_REGISTER_DECLARE (pointsetenc);

G_END_DECLS

#endif
