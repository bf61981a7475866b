/* georeg: the pose prior of a frame, as a public meta.
 *
 * Two kinds of producers attach it:
 *  - the georegtelemetry element, from the JPEG's own EXIF/XMP or a telemetry CSV;
 *  - an application's own autopilot: a capture application that knows the aircraft's
 *    state at exposure calls gst_buffer_add_georeg_pose_meta() on each frame it pushes
 *    (for example from appsrc), fills what it knows, sets `have` and a 1-sigma on each
 *    value and GST_GEOREG_POSE_SOURCE_APP in `sources`.  georegtelemetry downstream
 *    keeps such a meta and only fills the fields it leaves absent.
 * The meta has no tags, so decoders (GstVideoDecoder) and GstBaseTransform elements copy
 * it to their output: put the producer before jpegdec and the prior reaches the decoded
 * frame.  Applications include this header and link gstreamer-georeg-1.0.
 *
 * Conventions (docs/telemetry.md): WGS84 degrees; metres; angles in degrees, yaw
 * clockwise from true north.  camera_yaw/pitch/roll are the camera model's attitude:
 * 0/0/0 looks straight down with north at the image top, pitch > 0 looks forward (nose
 * up on a body-fixed camera; DJI gimbal pitch + 90), roll > 0 looks to the image's left.
 * flight_* are the aircraft body; gimbal_* are as DJI writes them (pitch -90 = nadir).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef __GST_GEOREG_POSE_META_H__
#define __GST_GEOREG_POSE_META_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/**
 * GstGeoregPoseSource:
 * Where a pose's values came from (bits of GstGeoregPoseMeta.sources).
 */
typedef enum {
  GST_GEOREG_POSE_SOURCE_EXIF = 1 << 0,
  GST_GEOREG_POSE_SOURCE_XMP_DJI = 1 << 1,
  GST_GEOREG_POSE_SOURCE_XMP_SENSEFLY = 1 << 2,
  GST_GEOREG_POSE_SOURCE_CSV = 1 << 3,
  GST_GEOREG_POSE_SOURCE_APP = 1 << 4,     /* the application's own autopilot */
  GST_GEOREG_POSE_SOURCE_KLV = 1 << 5,     /* MISB ST 0601 */
  GST_GEOREG_POSE_SOURCE_CALIBRATION = 1 << 6,   /* intrinsics from a calibration file */
  GST_GEOREG_POSE_SOURCE_XMP_CAMERA = 1 << 7,    /* Pix4D's XMP Camera namespace */
} GstGeoregPoseSource;

/**
 * GstGeoregPoseFlags:
 * Conditions of a pose (bits of GstGeoregPoseMeta.flags).
 */
typedef enum {
  /* DJI gimbal yaw and flight yaw disagree by more than 20 degrees with the gimbal near
   * nadir (a free gimbal, or firmware that writes a return leg's yaw 180 degrees off):
   * camera_yaw.sigma is at least the disagreement */
  GST_GEOREG_POSE_FLAG_YAW_DISAGREES = 1 << 0,
  /* the JPEG's pixels were turned by a quarter after capture (its size is the EXIF's
   * swapped): camera_yaw.sigma is at least 90 degrees */
  GST_GEOREG_POSE_FLAG_QUARTER_TURNED = 1 << 1,
} GstGeoregPoseFlags;

/* A value, its 1-sigma uncertainty (same unit; metres for latitude/longitude) and
 * whether it is known at all. */
typedef struct {
  gdouble value;
  gdouble sigma;
  gboolean have;
} GstGeoregPoseValue;

typedef struct _GstGeoregPoseMeta GstGeoregPoseMeta;

struct _GstGeoregPoseMeta {
  GstMeta meta;

  guint sources;                            /* GstGeoregPoseSource bits */
  guint flags;                              /* GstGeoregPoseFlags bits */
  GstGeoregPoseValue latitude, longitude;   /* WGS84 degrees; sigma in metres */
  GstGeoregPoseValue altitude_wgs84;        /* above the ellipsoid */
  GstGeoregPoseValue altitude_amsl;         /* above mean sea level */
  GstGeoregPoseValue height_agl;            /* above the ground under the camera */
  GstGeoregPoseValue relative_altitude;     /* above the take-off point */
  GstGeoregPoseValue camera_yaw, camera_pitch, camera_roll;
  GstGeoregPoseValue flight_yaw, flight_pitch, flight_roll;
  GstGeoregPoseValue gimbal_yaw, gimbal_pitch, gimbal_roll;
  GstGeoregPoseValue focal_length_mm, focal_length_35mm;
  gint image_width, image_height;           /* of the encoded image; 0 = unknown */
  gchar camera_make[64], camera_model[64];  /* EXIF Make / Model */
  gchar utc[32];                            /* ISO 8601 as recorded; "" = unknown */

  /* Pinhole intrinsics for image_width x image_height (OpenCV conventions: pixel
   * centres at integers; Brown-Conrady k1, k2, k3, p1, p2), when known. */
  gboolean have_intrinsics;
  gdouble fx, fy, cx, cy;
  gdouble k1, k2, k3, p1, p2;
};

GType gst_georeg_pose_meta_api_get_type (void);
#define GST_GEOREG_POSE_META_API_TYPE (gst_georeg_pose_meta_api_get_type ())
const GstMetaInfo *gst_georeg_pose_meta_get_info (void);
#define GST_GEOREG_POSE_META_INFO (gst_georeg_pose_meta_get_info ())

#define gst_buffer_get_georeg_pose_meta(b) \
  ((GstGeoregPoseMeta *) gst_buffer_get_meta ((b), GST_GEOREG_POSE_META_API_TYPE))

/* Adds a meta with every value absent (have FALSE, value NAN), strings empty, sources 0
 * and no intrinsics; the caller fills it. */
GstGeoregPoseMeta *gst_buffer_add_georeg_pose_meta (GstBuffer * buffer);

G_END_DECLS

#endif
