/* Telemetry priors: the pose a drone recorded with each frame, read from a JPEG's EXIF
 * (libexif) and XMP (exempi: DJI drone-dji, senseFly and Pix4D Camera namespaces) or
 * from a telemetry CSV.  A prior is a prior: every value has a `have` bit and a 1-sigma
 * uncertainty, and a consumer searches around it (GUIDE section 8).
 *
 * Angle conventions (degrees):
 *  - yaw / heading: clockwise from true north, the direction the image's top edge faces
 *    for a nadir camera (normalised to [0, 360)).
 *  - flight_*: the aircraft body (DJI FlightYaw/Pitch/RollDegree, senseFly Heading,
 *    PitchAngle, RollAngle): pitch positive nose up, roll positive right wing down.
 *  - gimbal_*: DJI GimbalYaw/Pitch/RollDegree as written: gimbal pitch -90 = nadir,
 *    0 = horizon.
 *  - pix4d_*: Pix4D's XMP Camera:Yaw/Pitch/Roll (Parrot, MicaSense and other cameras
 *    made for Pix4D): the camera's attitude in cam_*'s convention (pitch 0 = nadir).
 *  - cam_*: the camera attitude the camera model uses (kernels/camera.h): that of a
 *    camera fixed to a level body looking straight down, so cam_pitch = cam_roll = 0 is
 *    nadir; positive cam_pitch tilts the view forward (towards cam_yaw), positive cam_roll
 *    tilts it to the left of the image (right side down).  gr_pose_prior_finish derives
 *    them from the gimbal when there is one (cam_pitch = gimbal_pitch + 90), else from
 *    the pix4d_* angles, else from the flight angles (a body-fixed nadir camera, as on
 *    fixed wings).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_TELEMETRY_H
#define GR_TELEMETRY_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A measured value with its 1-sigma uncertainty (same unit; metres for positions). */
typedef struct {
  double value;
  double sigma;
  bool have;
} GrPriorValue;

/* Where a prior's values came from (bits). */
typedef enum {
  GR_PRIOR_SRC_EXIF = 1 << 0,          /* EXIF GPS IFD, focal length, make/model */
  GR_PRIOR_SRC_XMP_DJI = 1 << 1,       /* XMP http://www.dji.com/drone-dji/1.0/ */
  GR_PRIOR_SRC_XMP_SENSEFLY = 1 << 2,  /* XMP http://ns.sensefly.com/sensefly/1.0/ */
  GR_PRIOR_SRC_CSV = 1 << 3,           /* a telemetry CSV row */
  GR_PRIOR_SRC_APP = 1 << 4,           /* the application's own autopilot */
  GR_PRIOR_SRC_KLV = 1 << 5,           /* MISB ST 0601 */
  /* (bit 6 is the element's calibration file: GST_GEOREG_POSE_SOURCE_CALIBRATION) */
  GR_PRIOR_SRC_XMP_CAMERA = 1 << 7,    /* XMP http://pix4d.com/camera/1.0/ (Pix4D's
                                        * Camera namespace: Parrot, MicaSense, ...) */
} GrPriorSource;

/* Conditions found while reading a prior (bits). */
typedef enum {
  /* DJI's gimbal yaw and flight yaw differ by more than 20 degrees with the gimbal near
   * nadir: either a free gimbal or the firmware's return-leg yaw that is 180 degrees off
   * (GUIDE section 8).  cam_yaw keeps the gimbal's value with a sigma of at least the
   * disagreement, so a search covers both. */
  GR_PRIOR_FLAG_YAW_DISAGREES = 1 << 0,
  /* The file's pixels were turned by a quarter after capture: the JPEG is h x w (or
   * that resized) where the camera's EXIF PixelX/YDimension say w x h (jpegtran -rotate
   * 90, and the viewers that turn pixels, keep the EXIF as it was).  The recorded yaw
   * is the camera's; the image's top is 90 degrees off it one way or the other, so
   * cam_yaw's sigma is at least 90 degrees (a search covers every heading) and the
   * intrinsics take the sensor's long side along the image's (gr_camera_from_prior). */
  GR_PRIOR_FLAG_QUARTER_TURNED = 1 << 1,
} GrPriorFlags;

typedef struct {
  unsigned sources;                   /* GrPriorSource bits */
  unsigned flags;                     /* GrPriorFlags bits */
  /* position: WGS84 degrees; sigma in metres (horizontal) */
  GrPriorValue lat, lon;
  GrPriorValue alt_wgs84;             /* metres above the WGS84 ellipsoid */
  GrPriorValue alt_amsl;              /* metres above mean sea level */
  GrPriorValue height_agl;            /* metres above the ground under the camera */
  GrPriorValue rel_alt;               /* metres above the take-off point (DJI) */
  GrPriorValue flight_yaw, flight_pitch, flight_roll;
  GrPriorValue gimbal_yaw, gimbal_pitch, gimbal_roll;
  /* Pix4D's Camera:Yaw/Pitch/Roll as written: the camera's own attitude, pitch 0 =
   * nadir and 90 = looking forward, i.e. already cam_*'s convention */
  GrPriorValue pix4d_yaw, pix4d_pitch, pix4d_roll;
  GrPriorValue cam_yaw, cam_pitch, cam_roll;     /* derived: see the header comment */
  GrPriorValue focal_mm;              /* EXIF FocalLength */
  GrPriorValue focal_35mm;            /* EXIF FocalLengthIn35mmFilm */
  int image_width, image_height;      /* from the JPEG frame header (0 = unknown) */
  char make[64], model[64];           /* EXIF Make / Model, trimmed ("" = unknown) */
  char utc[32];                       /* ISO 8601 time as recorded ("" = unknown) */
  /* The camera's own statement of its pixel pitch: EXIF FocalPlaneXResolution in pixels
   * per millimetre (unit converted), for an image of exif_pixel_width x
   * exif_pixel_height (PixelX/YDimension; 0 = not written), which may differ from the
   * file's size when a tool resized the photo afterwards.  Sigma 0. */
  GrPriorValue focal_plane_px_per_mm;
  int exif_pixel_width, exif_pixel_height;
  /* senseFly AirSpeed / GroundSpeed (m/s): with the course, the wind triangle that
   * gives the airframe's yaw (gr_telemetry_wind_estimate). */
  GrPriorValue air_speed, ground_speed;
} GrPosePrior;

/* Every value absent, sigmas 0, strings empty. */
void gr_pose_prior_init (GrPosePrior *p);

/* Derives the cam_* attitude (see the header comment) from the gimbal or flight angles,
 * fills height_agl from rel_alt (sigma 10% + 1 m: the take-off point is not the
 * ground under the camera) when there is no better height, and sets the flags
 * (GrPriorFlags).  Idempotent. */
void gr_pose_prior_finish (GrPosePrior *p);

/* True when the file's pixels were turned by a quarter after capture: the JPEG's aspect
 * (image_width / image_height) is the inverse of the camera's EXIF PixelX/YDimension
 * (within 1%; resized or not), and not square.  gr_pose_prior_finish sets
 * GR_PRIOR_FLAG_QUARTER_TURNED from it. */
bool gr_pose_prior_quarter_turned (const GrPosePrior *p);

/* Overlays src on dst: every value src has replaces dst's, src's non-empty strings and
 * non-zero image size replace dst's, sources are OR'ed; then gr_pose_prior_finish.
 * (A CSV row given by the user overrides what the JPEG says.) */
void gr_pose_prior_merge (GrPosePrior *dst, const GrPosePrior *src);

/* Reads the prior from a JPEG held in memory: the APP1 EXIF and XMP segments and the
 * frame size.  Walks only the markers before the first scan, each bounded by the buffer;
 * truncated or garbage segments are skipped, never trusted.  Returns GR_OK when the
 * buffer is a JPEG (even one with no telemetry: check p->sources), GR_ERR_FORMAT when
 * it is not, GR_ERR_INVALID on bad arguments.  Calls gr_pose_prior_finish. */
GrStatus gr_pose_prior_from_jpeg (const uint8_t *data, size_t size, GrPosePrior *p,
    char *err, size_t errlen);

/* Parses one XMP packet (UTF-8 RDF/XML) into p (DJI and senseFly fields); false when
 * the packet does not parse.  Exposed for XMP from other containers. */
bool gr_pose_prior_parse_xmp (const char *xmp, size_t len, GrPosePrior *p);

/* ---- MISB ST 0601 KLV (kernels/klv.h decodes the packet) ----------------------------
 * One UAS Datalink Local Set packet -> a prior: sensor latitude/longitude/altitude
 * (tags 13-15), platform heading/pitch/roll (5-7, as flight_*), and, where the packet
 * gives the frame centre and its elevation (23-25), the look direction from the sensor
 * to that centre as the camera's yaw and angle off nadir (written as gimbal angles,
 * DJI's convention) and the height above that ground; the roll about the line of sight
 * is unknown (0, sigma 10 degrees).  *timestamp_us (may be NULL): tag 2.  GR_ERR_FORMAT
 * with the decoder's reason for a bad packet. */
GrStatus gr_pose_prior_from_klv (const uint8_t *packet, size_t len, GrPosePrior *p,
    uint64_t *timestamp_us, char *err, size_t errlen);

/* East/north metres of (lat, lon) from (lat0, lon0) on the WGS84 ellipsoid (its radii
 * of curvature at lat0: millimetre-exact over a few hundred metres). */
void gr_wgs84_local_offset (double lat0, double lon0, double lat, double lon,
    double *east, double *north);

/* ---- telemetry CSV ----------------------------------------------------------------
 * A comma-separated file, first line a header naming the columns (case-insensitive;
 * unknown columns are ignored, empty cells mean "absent"):
 *   filename | file | image          the frame's file name (matched on its basename)
 *   frame | index                    the frame index (0-based, as multifilesrc counts)
 *   timestamp | time_s | pts_s       stream time in seconds
 *   utc                              ISO 8601 time, copied into GrPosePrior.utc
 *   lat, lon                         WGS84 degrees
 *   alt_wgs84_m, alt_amsl_m, height_agl_m, rel_alt_m
 *   heading_deg | yaw_deg, pitch_deg, roll_deg             aircraft (flight_*)
 *   gimbal_yaw_deg, gimbal_pitch_deg, gimbal_roll_deg      DJI gimbal convention
 *   focal_mm, focal_35mm, width, height
 *   pos_sigma_m, alt_sigma_m, angle_sigma_deg (pitch, roll), heading_sigma_deg (yaws)
 *                                    override the default sigmas
 * At least one key column (filename, frame or timestamp) is required.  Quoted cells
 * ("a,b") are understood; files over 64 MiB or with more than 1,000,000 rows are refused. */
typedef struct GrTelemetryCsv GrTelemetryCsv;

GrTelemetryCsv *gr_telemetry_csv_load (const char *path, GrStatus *status, char *err,
    size_t errlen);
/* The same from text in memory (len bytes, need not be terminated). */
GrTelemetryCsv *gr_telemetry_csv_parse (const char *text, size_t len, GrStatus *status,
    char *err, size_t errlen);
void gr_telemetry_csv_free (GrTelemetryCsv *csv);
int gr_telemetry_csv_rows (const GrTelemetryCsv *csv);
bool gr_telemetry_csv_has_filenames (const GrTelemetryCsv *csv);
bool gr_telemetry_csv_has_frames (const GrTelemetryCsv *csv);
bool gr_telemetry_csv_has_timestamps (const GrTelemetryCsv *csv);

/* Lookups: true and *p filled (with gr_pose_prior_finish applied, sources CSV) when a
 * row matches.  By file name: the basename of `name` against the basename of the cell.
 * By frame: the row whose frame column equals `frame`.  By timestamp: the row nearest
 * to t_s within tolerance_s. */
bool gr_telemetry_csv_find_file (const GrTelemetryCsv *csv, const char *name,
    GrPosePrior *p);
bool gr_telemetry_csv_find_frame (const GrTelemetryCsv *csv, int64_t frame,
    GrPosePrior *p);
bool gr_telemetry_csv_find_time (const GrTelemetryCsv *csv, double t_s,
    double tolerance_s, GrPosePrior *p);
/* The height above the ground under the camera from a ground elevation the user knows
 * (metres above mean sea level; sigma its uncertainty): with a take-off elevation
 * (finite) and a height above the take-off point (rel_alt: DJI RelativeAltitude,
 * senseFly Height), rel_alt + takeoff - ground; else the altitude above sea level
 * (alt_amsl: EXIF GPSAltitude, DJI AbsoluteAltitude, senseFly AltitudeAMSL) - ground.
 * Replaces height_agl, sigma the source's plus sigma_m.  false (p unchanged) without a
 * usable altitude or when the camera would be less than 1 m above that ground. */
bool gr_pose_prior_set_ground (GrPosePrior *p, double ground_m, double takeoff_m,
    double sigma_m);

/* ---- wind triangle: the yaw of an airframe whose log gives only its course ----------
 * A fixed wing's logged heading may be its course over ground (senseFly's Heading,
 * docs/telemetry.md); the nose points elsewhere by the crab angle, which the wind sets.
 * Given each frame's course, ground speed and air speed, the wind W (and optionally a
 * scale k of the air speed sensor) is the least-squares solution of
 *   | ground_speed x (sin course, cos course) - W | = k x air_speed
 * over the frames, and each frame's yaw is the direction of its air velocity.  It needs
 * frames on at least two courses 45 degrees or more apart (3 for the scale); a GPS track
 * alone (course and ground speed) cannot give the crab. */
typedef struct {
  double east, north;          /* wind velocity (where it blows to), m/s */
  double airspeed_scale;       /* k (1 when not estimated) */
  double rms;                  /* RMS residual of the triangle, m/s */
  int used;                    /* frames with course, ground speed and air speed */
} GrWind;

/* false when too few frames or courses, or when it does not converge. */
bool gr_telemetry_wind_estimate (const GrPosePrior *priors, int n, bool fit_airspeed_scale,
    GrWind *wind);
/* Replaces p's course (flight_yaw) by the yaw the wind triangle gives, with a sigma of
 * 3 degrees plus what the triangle's RMS turns the air velocity by, and redoes
 * gr_pose_prior_finish; false (p unchanged) without course, ground and air speed. */
bool gr_pose_prior_apply_wind (GrPosePrior *p, const GrWind *wind);

/* Row i (0-based) as a prior; false when out of range. */
bool gr_telemetry_csv_row (const GrTelemetryCsv *csv, int i, GrPosePrior *p);

#ifdef __cplusplus
}
#endif
#endif
