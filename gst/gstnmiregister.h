/* nmiregister: refined registration of frames onto control imagery by sparse NMI
 * keypoint matching and a robust transform fit.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_NMI_REGISTER_H__
#define __GST_NMI_REGISTER_H__

#include <gst/gst.h>

#include "gstgeoregbase.h"

G_BEGIN_DECLS

#define GST_TYPE_NMI_REGISTER (gst_nmi_register_get_type ())
G_DECLARE_FINAL_TYPE (GstNmiRegister, gst_nmi_register, GST, NMI_REGISTER, GstGeoregBase)

/* What to do with a frame that carries no GstNmiLocalizeMeta. */
typedef enum {
  GST_NMI_REGISTER_COARSE_NONE = 0,            /* flag NO_COARSE, no registration */
  GST_NMI_REGISTER_COARSE_INITIAL_OFFSET = 1,  /* use initial-offset-x/y, initial-scale */
  GST_NMI_REGISTER_COARSE_FULL_SEARCH = 2,     /* own coarse dense-NMI search */
} GstNmiRegisterCoarseFallback;

#define GST_TYPE_NMI_REGISTER_COARSE_FALLBACK (gst_nmi_register_coarse_fallback_get_type ())
GType gst_nmi_register_coarse_fallback_get_type (void);
#define GST_TYPE_NMI_REGISTER_MODEL (gst_nmi_register_model_get_type ())
GType gst_nmi_register_model_get_type (void);

GST_ELEMENT_REGISTER_DECLARE (nmiregister);

G_END_DECLS

#endif
