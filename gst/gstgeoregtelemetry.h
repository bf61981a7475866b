/* georegtelemetry: attaches each frame's pose prior (GstGeoregPoseMeta) from the JPEG's
 * own EXIF/XMP, a telemetry CSV and an optional camera calibration file.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_TELEMETRY_H__
#define __GST_GEOREG_TELEMETRY_H__

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

/* Which CSV column a frame is looked up by. */
typedef enum {
  GST_GEOREG_TELEMETRY_KEY_AUTO = 0,       /* filename where known, else frame, else time */
  GST_GEOREG_TELEMETRY_KEY_FILENAME = 1,
  GST_GEOREG_TELEMETRY_KEY_FRAME = 2,
  GST_GEOREG_TELEMETRY_KEY_TIMESTAMP = 3,
} GstGeoregTelemetryKey;
#define GST_TYPE_GEOREG_TELEMETRY_KEY (gst_georeg_telemetry_key_get_type ())
GType gst_georeg_telemetry_key_get_type (void);

#define GST_TYPE_GEOREG_TELEMETRY (gst_georeg_telemetry_get_type ())
G_DECLARE_FINAL_TYPE (GstGeoregTelemetry, gst_georeg_telemetry, GST, GEOREG_TELEMETRY,
    GstBaseTransform)

GST_ELEMENT_REGISTER_DECLARE (georegtelemetry);

G_END_DECLS

#endif
