/* nmilocalize: coarse localization of frames over control imagery by dense NMI.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_NMI_LOCALIZE_H__
#define __GST_NMI_LOCALIZE_H__

#include <gst/gst.h>
#include "gstgeoregbase.h"

G_BEGIN_DECLS

#define GST_TYPE_NMI_LOCALIZE (gst_nmi_localize_get_type ())
G_DECLARE_FINAL_TYPE (GstNmiLocalize, gst_nmi_localize, GST, NMI_LOCALIZE, GstGeoregBase)

GST_ELEMENT_REGISTER_DECLARE (nmilocalize);

G_END_DECLS

#endif
