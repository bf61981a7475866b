/* georegklvenc: one MISB ST 0601 UAS Datalink Local Set (meta/x-klv) per video frame,
 * from the frame's registration (nmiregister / nmilocalize metas) and the control's
 * georeference, timestamped like the frame, for mpegtsmux.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_KLV_ENC_H__
#define __GST_GEOREG_KLV_ENC_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_GEOREG_KLV_ENC (gst_georeg_klv_enc_get_type ())
G_DECLARE_FINAL_TYPE (GstGeoregKlvEnc, gst_georeg_klv_enc, GST, GEOREG_KLV_ENC, GstElement)

GST_ELEMENT_REGISTER_DECLARE (georegklvenc);

G_END_DECLS

#endif
