/* Telemetry priors (kernels/telemetry.h): DJI-style JPEGs written by
 * pipelines/synth_jpeg round-trip through the EXIF/XMP parser; a senseFly XMP packet;
 * hostile JPEGs (every truncation of the header, random byte corruption) never crash and
 * never yield out-of-range values; the telemetry CSV reader and its errors.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "synth.h"
#include "synth_jpeg.h"
#include "camera.h"
#include "fit.h"
#include "klv.h"
#include "telemetry.h"
#include "test_check.h"

#define N_ELEM(a) (sizeof (a) / sizeof ((a)[0]))

static uint8_t *
test_image (int w, int h)
{
  uint8_t *pix = malloc ((size_t) w * h * 3);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int c = 0; c < 3; c++)
        pix[((size_t) y * w + x) * 3 + c] = (uint8_t) ((x * 7 + y * 3 + c * 50) & 255);
  return pix;
}

static void
dji_tags (GrSynthDroneTags *t, double lat, double lon)
{
  gr_synth_drone_tags_init (t);
  t->make = "DJI";
  t->model = "FC300S";
  t->focal_mm = 3.61;
  t->focal_35mm = 20;
  t->focal_plane_px_per_inch = 16393.443;
  t->exif_pixel_width = 4000;
  t->exif_pixel_height = 3000;
  t->have_gps = true;
  t->lat = lat;
  t->lon = lon;
  t->alt_amsl = 312.25;
  t->have_xmp = true;
  t->rel_alt = 80.4;
  t->gimbal_yaw = -12.3;
  t->gimbal_pitch = -85.5;
  t->gimbal_roll = 0.4;
  t->flight_yaw = -10.5;
  t->flight_pitch = -2.3;
  t->flight_roll = 1.2;
}

static bool
near (const GrPriorValue *v, double want, double tol)
{
  return v->have && fabs (v->value - want) <= tol;
}

static void
test_dji_round_trip (void)
{
  const double where[][2] = { { 41.0365294, -83.3039431 }, { -33.8568, 151.2153 },
    { 0.5, -0.25 } };
  for (int k = 0; k < 3; k++) {
    GrSynthDroneTags t;
    dji_tags (&t, where[k][0], where[k][1]);
    uint8_t *pix = test_image (96, 64), *jpg;
    size_t len;
    CHECK (gr_synth_jpeg_encode (pix, 96, 64, 3, 96 * 3, 90, &t, &jpg, &len), "encode");
    GrPosePrior p;
    char err[200] = "";
    CHECK (gr_pose_prior_from_jpeg (jpg, len, &p, err, sizeof err) == GR_OK, "%s", err);
    CHECK (p.sources == (GR_PRIOR_SRC_EXIF | GR_PRIOR_SRC_XMP_DJI), "sources %x", p.sources);
    CHECK (p.image_width == 96 && p.image_height == 64, "size %dx%d", p.image_width,
        p.image_height);
    CHECK (strcmp (p.make, "DJI") == 0 && strcmp (p.model, "FC300S") == 0, "%s %s",
        p.make, p.model);
    /* seconds are written to 1e-4": 3e-8 degrees */
    CHECK (near (&p.lat, where[k][0], 1e-7), "lat %.9f", p.lat.value);
    CHECK (near (&p.lon, where[k][1], 1e-7), "lon %.9f", p.lon.value);
    CHECK (p.lat.sigma > 0 && p.lon.sigma > 0, "position sigma");
    CHECK (near (&p.alt_amsl, 312.25, 1e-6), "alt %.3f", p.alt_amsl.value);
    CHECK (near (&p.rel_alt, 80.4, 1e-9), "rel %.3f", p.rel_alt.value);
    CHECK (near (&p.focal_mm, 3.61, 1e-9), "focal %.3f", p.focal_mm.value);
    CHECK (near (&p.focal_35mm, 20, 0), "f35 %.1f", p.focal_35mm.value);
    /* the pixel pitch in px/inch becomes px/mm, with the size it refers to */
    CHECK (near (&p.focal_plane_px_per_mm, 16393.443 / 25.4, 1e-9) &&
        p.exif_pixel_width == 4000 && p.exif_pixel_height == 3000, "pitch %.4f for %dx%d",
        p.focal_plane_px_per_mm.value, p.exif_pixel_width, p.exif_pixel_height);
    CHECK (near (&p.gimbal_yaw, 360 - 12.3, 1e-9), "gyaw %.3f", p.gimbal_yaw.value);
    CHECK (near (&p.gimbal_pitch, -85.5, 1e-9), "gpitch");
    CHECK (near (&p.gimbal_roll, 0.4, 1e-9), "groll");
    CHECK (near (&p.flight_yaw, 360 - 10.5, 1e-9), "fyaw %.3f", p.flight_yaw.value);
    CHECK (near (&p.flight_pitch, -2.3, 1e-9) && near (&p.flight_roll, 1.2, 1e-9), "flight");
    /* the camera attitude follows the gimbal, in the camera model's convention */
    CHECK (near (&p.cam_yaw, 360 - 12.3, 1e-9), "cam yaw");
    CHECK (near (&p.cam_pitch, 4.5, 1e-9), "cam pitch %.3f", p.cam_pitch.value);
    CHECK (near (&p.cam_roll, 0.4, 1e-9), "cam roll");
    CHECK (p.flags == 0 && p.cam_yaw.sigma == 5.0, "gimbal and flight yaw agree");
    /* no terrain height in DJI files: relative altitude stands in, with 10% + 1 m */
    CHECK (near (&p.height_agl, 80.4, 1e-9) && fabs (p.height_agl.sigma - 9.04) < 1e-9,
        "height %.3f +- %.3f", p.height_agl.value, p.height_agl.sigma);
    free (jpg);
    free (pix);
  }
}

/* a return leg whose gimbal yaw is 180 degrees off the aircraft's (GUIDE section 8) */
static void
test_yaw_disagreement (void)
{
  GrSynthDroneTags t;
  dji_tags (&t, 10, 10);
  t.gimbal_yaw = 95;
  t.flight_yaw = -84;
  uint8_t *pix = test_image (16, 16), *jpg;
  size_t len;
  CHECK (gr_synth_jpeg_encode (pix, 16, 16, 3, 48, 80, &t, &jpg, &len), "encode");
  GrPosePrior p;
  CHECK (gr_pose_prior_from_jpeg (jpg, len, &p, NULL, 0) == GR_OK, "parse");
  CHECK (p.flags & GR_PRIOR_FLAG_YAW_DISAGREES, "disagreement not flagged");
  CHECK (near (&p.cam_yaw, 95, 1e-9) && fabs (p.cam_yaw.sigma - 179) < 1e-9,
      "yaw %.1f +- %.1f", p.cam_yaw.value, p.cam_yaw.sigma);
  free (jpg);
  free (pix);
}

static void
test_no_telemetry (void)
{
  GrSynthDroneTags t;
  gr_synth_drone_tags_init (&t);
  uint8_t *pix = test_image (40, 30), *jpg;
  size_t len;
  CHECK (gr_synth_jpeg_encode (pix, 40, 30, 3, 120, 80, &t, &jpg, &len), "encode bare");
  GrPosePrior p;
  CHECK (gr_pose_prior_from_jpeg (jpg, len, &p, NULL, 0) == GR_OK, "bare JPEG");
  CHECK (p.sources == 0 && !p.lat.have && !p.cam_yaw.have && p.image_width == 40,
      "bare: sources %x", p.sources);
  free (jpg);
  free (pix);
  const uint8_t png[] = { 0x89, 'P', 'N', 'G', 13, 10, 26, 10 };
  char err[200] = "";
  CHECK (gr_pose_prior_from_jpeg (png, sizeof png, &p, err, sizeof err) == GR_ERR_FORMAT &&
      err[0], "not a JPEG");
  CHECK (gr_pose_prior_from_jpeg (NULL, 0, &p, NULL, 0) == GR_ERR_INVALID, "NULL");
}

/* every value a parser hands out must be finite and in its documented range */
static void
check_sane (const GrPosePrior *p, const char *what)
{
  const GrPriorValue *ang[] = { &p->flight_yaw, &p->gimbal_yaw, &p->cam_yaw };
  for (int i = 0; i < 3; i++)
    CHECK (!ang[i]->have || (ang[i]->value >= 0 && ang[i]->value < 360), "%s: yaw", what);
  CHECK (!p->lat.have || fabs (p->lat.value) <= 90, "%s: lat", what);
  CHECK (!p->lon.have || fabs (p->lon.value) <= 180, "%s: lon", what);
  CHECK (!p->focal_mm.have || (p->focal_mm.value > 0 && isfinite (p->focal_mm.value)),
      "%s: focal", what);
  CHECK (memchr (p->make, 0, sizeof p->make) && memchr (p->model, 0, sizeof p->model) &&
      memchr (p->utc, 0, sizeof p->utc), "%s: strings terminated", what);
}

static void
test_hostile (void)
{
  GrSynthDroneTags t;
  dji_tags (&t, 47.1, 8.5);
  uint8_t *pix = test_image (32, 16), *jpg;
  size_t len;
  CHECK (gr_synth_jpeg_encode (pix, 32, 16, 3, 96, 75, &t, &jpg, &len), "encode");
  /* the header segments end where the scan starts */
  size_t header = 2;
  while (header + 4 < len && !(jpg[header] == 0xFF && jpg[header + 1] == 0xDA))
    header += 2 + ((jpg[header + 2] << 8) | jpg[header + 3]);
  CHECK (header > 500 && header < len, "header length %zu", header);
  GrPosePrior p;
  /* every truncation: a copy of exactly that length, so ASan sees any overread */
  for (size_t cut = 0; cut <= header + 4 && cut <= len; cut++) {
    uint8_t *c = malloc (cut ? cut : 1);
    memcpy (c, jpg, cut);
    GrStatus st = gr_pose_prior_from_jpeg (c, cut, &p, NULL, 0);
    CHECK (st == GR_OK || st == GR_ERR_FORMAT, "cut %zu: status %d", cut, st);
    if (st == GR_OK)
      check_sane (&p, "truncated");
    free (c);
  }
  /* random corruption of the header: single bytes, runs, and length fields */
  GrSynthRng rng;
  gr_synth_rng_init (&rng, 1313);
  int parsed_gps = 0;
  for (int it = 0; it < 1500; it++) {
    uint8_t *c = malloc (len);
    memcpy (c, jpg, len);
    const int edits = 1 + (int) (gr_synth_rng_next (&rng) % 8);
    for (int e = 0; e < edits; e++) {
      size_t at = 2 + gr_synth_rng_next (&rng) % (header - 2);
      c[at] = (uint8_t) gr_synth_rng_next (&rng);
    }
    GrStatus st = gr_pose_prior_from_jpeg (c, len, &p, NULL, 0);
    CHECK (st == GR_OK, "corrupt %d: status %d", it, st);
    check_sane (&p, "corrupted");
    parsed_gps += p.lat.have;
    free (c);
  }
  /* most single-edit copies still carry a readable GPS block: the walk resynchronises */
  CHECK (parsed_gps > 100, "GPS survived in only %d corrupted copies", parsed_gps);
  /* garbage XMP packets */
  const char *bad_xmp[] = { "", "<", "<x:xmpmeta", "<?xpacket begin='", "\xff\xfe\x00",
    "<x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:RDF><rdf:Description "
        "drone-dji:GimbalYawDegree='nan'/></rdf:RDF></x:xmpmeta>" };
  for (size_t i = 0; i < N_ELEM (bad_xmp); i++) {
    GrPosePrior q;
    gr_pose_prior_init (&q);
    gr_pose_prior_parse_xmp (bad_xmp[i], strlen (bad_xmp[i]), &q);
    CHECK (!q.gimbal_yaw.have && q.sources == 0, "garbage XMP %zu gave values", i);
  }
  free (jpg);
  free (pix);
}

/* gr_pose_prior_parse_xmp of a whole packet into a fresh prior, finished */
static bool
parse_finished (const char *xmp, GrPosePrior *p)
{
  gr_pose_prior_init (p);
  const bool ok = gr_pose_prior_parse_xmp (xmp, strlen (xmp), p);
  gr_pose_prior_finish (p);
  return ok;
}

/* A file turned by a quarter after capture (the JPEG's size is the EXIF's swapped):
 * flagged, the camera yaw's sigma at least 90 degrees; a resize is not a turn. */
static void
test_quarter_turned (void)
{
  GrPosePrior p;
  gr_pose_prior_init (&p);
  p.gimbal_yaw = (GrPriorValue) { 30.0, 5.0, true };
  p.gimbal_pitch = (GrPriorValue) { -90.0, 2.0, true };
  p.exif_pixel_width = 4000;
  p.exif_pixel_height = 3000;
  p.image_width = 3000;
  p.image_height = 4000;
  gr_pose_prior_finish (&p);
  CHECK ((p.flags & GR_PRIOR_FLAG_QUARTER_TURNED) && near (&p.cam_yaw, 30.0, 1e-12) &&
      p.cam_yaw.sigma == 90.0, "turned: flags %x, yaw %.1f +- %.1f", p.flags,
      p.cam_yaw.value, p.cam_yaw.sigma);
  gr_pose_prior_finish (&p);
  CHECK (p.cam_yaw.sigma == 90.0, "finish not idempotent");
  p.image_width = 2000;
  p.image_height = 1500;
  gr_pose_prior_finish (&p);
  CHECK (!(p.flags & GR_PRIOR_FLAG_QUARTER_TURNED) && p.cam_yaw.sigma == 5.0,
      "a resize flagged: %x, sigma %.1f", p.flags, p.cam_yaw.sigma);
  p.exif_pixel_width = p.exif_pixel_height = 3000;
  p.image_width = p.image_height = 3000;
  gr_pose_prior_finish (&p);
  CHECK (!(p.flags & GR_PRIOR_FLAG_QUARTER_TURNED), "a square image flagged");
}

/* Pix4D's Camera namespace (Parrot, MicaSense and other cameras made for Pix4D): the
 * camera's attitude with pitch 0 = nadir, taken as the camera angles as written; with
 * the URI as the cameras write it (final slash) and as Pix4D's specification prints it,
 * as attributes and as child elements; a DJI gimbal in the same packet wins. */
static void
test_pix4d_camera_xmp (void)
{
  const char *attrs =
      "<x:xmpmeta xmlns:x='adobe:ns:meta/'>"
      "<rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>"
      "<rdf:Description rdf:about='' xmlns:Camera='http://pix4d.com/camera/1.0/' "
      "Camera:Yaw='-97.5' Camera:Pitch='3.25' Camera:Roll='-1.5' "
      "Camera:GPSXYAccuracy='0.9'/></rdf:RDF></x:xmpmeta>";
  GrPosePrior p;
  CHECK (parse_finished (attrs, &p), "Pix4D Camera parse");
  CHECK (p.sources == GR_PRIOR_SRC_XMP_CAMERA, "sources %x", p.sources);
  CHECK (near (&p.pix4d_yaw, 262.5, 1e-12) && near (&p.pix4d_pitch, 3.25, 1e-12) &&
      near (&p.pix4d_roll, -1.5, 1e-12), "raw angles %.2f %.2f %.2f", p.pix4d_yaw.value,
      p.pix4d_pitch.value, p.pix4d_roll.value);
  CHECK (near (&p.cam_yaw, 262.5, 1e-12) && near (&p.cam_pitch, 3.25, 1e-12) &&
      near (&p.cam_roll, -1.5, 1e-12) && p.cam_yaw.sigma > 0 && p.cam_pitch.sigma > 0,
      "camera %.2f %.2f %.2f", p.cam_yaw.value, p.cam_pitch.value, p.cam_roll.value);
  CHECK (!p.gimbal_pitch.have && !p.flight_yaw.have, "nothing else");

  const char *elements =
      "<x:xmpmeta xmlns:x='adobe:ns:meta/'>\n"
      "<rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>\n"
      " <rdf:Description rdf:about='' xmlns:Camera='http://pix4d.com/camera/1.0'>\n"
      "  <Camera:Yaw>12.0</Camera:Yaw>\n  <Camera:Pitch>0.5</Camera:Pitch>\n"
      " </rdf:Description>\n</rdf:RDF>\n</x:xmpmeta>\n";
  CHECK (parse_finished (elements, &p), "bare URI parse");
  CHECK (p.sources == GR_PRIOR_SRC_XMP_CAMERA && near (&p.cam_yaw, 12.0, 1e-12) &&
      near (&p.cam_pitch, 0.5, 1e-12) && !p.cam_roll.have, "bare URI: %x %.2f %.2f",
      p.sources, p.cam_yaw.value, p.cam_pitch.value);

  const char *both =
      "<x:xmpmeta xmlns:x='adobe:ns:meta/'>"
      "<rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>"
      "<rdf:Description rdf:about='' xmlns:Camera='http://pix4d.com/camera/1.0/' "
      "xmlns:drone-dji='http://www.dji.com/drone-dji/1.0/' "
      "Camera:Yaw='40' Camera:Pitch='0' drone-dji:GimbalYawDegree='45' "
      "drone-dji:GimbalPitchDegree='-89' drone-dji:GimbalRollDegree='0'/>"
      "</rdf:RDF></x:xmpmeta>";
  CHECK (parse_finished (both, &p), "both parse");
  CHECK (p.sources == (GR_PRIOR_SRC_XMP_CAMERA | GR_PRIOR_SRC_XMP_DJI) &&
      near (&p.cam_yaw, 45.0, 1e-12) && near (&p.cam_pitch, 1.0, 1e-12),
      "the gimbal first: %x %.2f %.2f", p.sources, p.cam_yaw.value, p.cam_pitch.value);

  const char *wild =
      "<x:xmpmeta xmlns:x='adobe:ns:meta/'>"
      "<rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>"
      "<rdf:Description rdf:about='' xmlns:Camera='http://pix4d.com/camera/1.0/' "
      "Camera:Yaw='inf' Camera:Pitch='720'/></rdf:RDF></x:xmpmeta>";
  parse_finished (wild, &p);
  CHECK (!p.cam_yaw.have && !p.cam_pitch.have && p.sources == 0,
      "out-of-range Camera angles were taken");
}

static void
test_sensefly_xmp (void)
{
  /* laid out as the senseFly autopilot writes it: child elements, not attributes */
  const char *xmp =
      "<x:xmpmeta xmlns:x='adobe:ns:meta/'>\n"
      "<rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>\n"
      " <rdf:Description rdf:about='' xmlns:sensefly='http://ns.sensefly.com/sensefly/1.0/'>\n"
      "  <sensefly:AirSpeed>8.94</sensefly:AirSpeed>\n"
      "  <sensefly:AltitudeAMSL>315.84</sensefly:AltitudeAMSL>\n"
      "  <sensefly:AltitudeWGS84>279.86</sensefly:AltitudeWGS84>\n"
      "  <sensefly:GroundSpeed>5.92</sensefly:GroundSpeed>\n"
      "  <sensefly:Heading>-55.5</sensefly:Heading>\n"
      "  <sensefly:Height>67.96</sensefly:Height>\n"
      "  <sensefly:Latitude>41.0365294</sensefly:Latitude>\n"
      "  <sensefly:Longitude>-83.3039431</sensefly:Longitude>\n"
      "  <sensefly:PitchAngle>5.08</sensefly:PitchAngle>\n"
      "  <sensefly:RollAngle>-1.23</sensefly:RollAngle>\n"
      "  <sensefly:UTCTime>2013-06-04T17:40:11</sensefly:UTCTime>\n"
      " </rdf:Description>\n</rdf:RDF>\n</x:xmpmeta>\n";
  GrPosePrior p;
  CHECK (parse_finished (xmp, &p), "senseFly parse");
  CHECK (p.sources == GR_PRIOR_SRC_XMP_SENSEFLY, "sources %x", p.sources);
  CHECK (near (&p.lat, 41.0365294, 1e-12) && near (&p.lon, -83.3039431, 1e-12), "pos");
  CHECK (near (&p.alt_amsl, 315.84, 1e-9) && near (&p.alt_wgs84, 279.86, 1e-9), "alts");
  /* senseFly's Height is above the take-off point: a relative altitude, and the height
   * above ground only for want of better (10% + 1 m) */
  CHECK (near (&p.rel_alt, 67.96, 1e-9) && near (&p.height_agl, 67.96, 1e-9) &&
      fabs (p.height_agl.sigma - 7.796) < 1e-9, "height %.2f +- %.3f", p.height_agl.value,
      p.height_agl.sigma);
  /* a ground elevation: AMSL minus ground, or take-off based when given */
  GrPosePrior q = p;
  CHECK (gr_pose_prior_set_ground (&q, 250.0, NAN, 3.0) && near (&q.height_agl, 65.84,
          1e-9) && fabs (q.height_agl.sigma - (q.alt_amsl.sigma + 3)) < 1e-9,
      "AMSL - ground %.3f +- %.2f", q.height_agl.value, q.height_agl.sigma);
  q = p;
  CHECK (gr_pose_prior_set_ground (&q, 260.0, 247.88, 2.0) && near (&q.height_agl,
          67.96 - 12.12, 1e-9) && fabs (q.height_agl.sigma - (q.rel_alt.sigma + 2)) < 1e-9,
      "take-off based %.3f", q.height_agl.value);
  q = p;
  CHECK (!gr_pose_prior_set_ground (&q, 315.5, NAN, 1.0) && near (&q.height_agl, 67.96,
          1e-9), "camera below the ground accepted");
  CHECK (!gr_pose_prior_set_ground (&q, NAN, NAN, 1.0), "NaN ground accepted");
  q.alt_amsl.have = false;
  CHECK (!gr_pose_prior_set_ground (&q, 250.0, NAN, 1.0), "no altitude accepted");
  CHECK (near (&p.cam_yaw, 304.5, 1e-9), "heading %.3f", p.cam_yaw.value);
  CHECK (near (&p.cam_pitch, 5.08, 1e-9) && near (&p.cam_roll, -1.23, 1e-9),
      "body-fixed camera follows the aircraft");
  CHECK (strcmp (p.utc, "2013-06-04T17:40:11") == 0, "utc '%s'", p.utc);
  CHECK (near (&p.air_speed, 8.94, 1e-12) && near (&p.ground_speed, 5.92, 1e-12), "speeds");
}

static void
test_csv (void)
{
  const char *text =
      "\xef\xbb\xbf" "filename,frame,timestamp,lat,lon,height_agl_m,heading_deg,pitch_deg,"
      "roll_deg,gimbal_pitch_deg,focal_mm,unknown_col,heading_sigma_deg\r\n"
      "a.jpg,0,0.0,10.5,20.25,50,90,1,2,,4.3,x,20\r\n"
      "\"dir,with,commas/b.jpg\",1,0.5,-10.5,-20.25,60,-90,0,0,-90,,y,\n"
      "\n"
      "c.jpg,2,1.0,,,,,,,,,,\n";
  GrStatus st;
  char err[200] = "";
  GrTelemetryCsv *csv = gr_telemetry_csv_parse (text, strlen (text), &st, err, sizeof err);
  CHECK (csv && st == GR_OK, "parse: %s", err);
  if (!csv)
    return;
  CHECK (gr_telemetry_csv_rows (csv) == 3, "rows %d", gr_telemetry_csv_rows (csv));
  CHECK (gr_telemetry_csv_has_filenames (csv) && gr_telemetry_csv_has_frames (csv) &&
      gr_telemetry_csv_has_timestamps (csv), "keys");
  GrPosePrior p;
  CHECK (gr_telemetry_csv_find_file (csv, "/some/where/a.jpg", &p), "find a.jpg");
  CHECK (near (&p.lat, 10.5, 0) && near (&p.lon, 20.25, 0) && near (&p.height_agl, 50, 0),
      "row a");
  CHECK (near (&p.cam_yaw, 90, 0) && near (&p.cam_pitch, 1, 0) && near (&p.cam_roll, 2, 0),
      "row a attitude");
  CHECK (p.cam_yaw.sigma == 20 && p.cam_pitch.sigma == 2, "row a sigmas %.1f %.1f",
      p.cam_yaw.sigma, p.cam_pitch.sigma);
  CHECK (p.sources == GR_PRIOR_SRC_CSV && near (&p.focal_mm, 4.3, 0), "row a source");
  CHECK (gr_telemetry_csv_find_file (csv, "b.jpg", &p) && near (&p.lat, -10.5, 0),
      "quoted file name");
  CHECK (near (&p.cam_yaw, 270, 0) && near (&p.cam_pitch, 0, 0), "gimbal nadir: %.2f %.2f",
      p.cam_yaw.value, p.cam_pitch.value);
  CHECK (gr_telemetry_csv_find_frame (csv, 2, &p) && !p.lat.have && !p.cam_yaw.have,
      "empty cells are absent");
  CHECK (gr_telemetry_csv_find_time (csv, 0.45, 0.1, &p) && near (&p.lat, -10.5, 0),
      "nearest time");
  CHECK (!gr_telemetry_csv_find_time (csv, 3.0, 0.5, &p), "time beyond tolerance");
  CHECK (!gr_telemetry_csv_find_frame (csv, 7, &p), "missing frame");
  CHECK (!gr_telemetry_csv_find_file (csv, "zzz.jpg", &p), "missing file");
  CHECK (gr_telemetry_csv_row (csv, 0, &p) && !gr_telemetry_csv_row (csv, 3, &p), "row");
  gr_telemetry_csv_free (csv);

  const struct { const char *text; const char *why; } bad[] = {
    { "", "empty" },
    { "lat,lon\n1,2\n", "no key column" },
    { "frame,lat\n0,1,2\n", "too many cells" },
    { "frame,lat\n0,north\n", "not a number" },
    { "frame,lat\n0,1\0\n", "NUL byte" },
  };
  for (size_t i = 0; i < N_ELEM (bad); i++) {
    size_t n = strlen (bad[i].text) + (strstr (bad[i].why, "NUL") ? 2 : 0);
    err[0] = '\0';
    csv = gr_telemetry_csv_parse (bad[i].text, n, &st, err, sizeof err);
    CHECK (!csv && st == GR_ERR_FORMAT && err[0], "bad CSV (%s) accepted", bad[i].why);
    gr_telemetry_csv_free (csv);
  }
  /* corrupted copies of a valid CSV: never a crash; OK or FORMAT */
  GrSynthRng rng;
  gr_synth_rng_init (&rng, 99);
  const size_t tlen = strlen (text);
  char *copy = malloc (tlen);
  for (int it = 0; it < 800; it++) {
    memcpy (copy, text, tlen);
    const int edits = 1 + (int) (gr_synth_rng_next (&rng) % 6);
    for (int e = 0; e < edits; e++)
      copy[gr_synth_rng_next (&rng) % tlen] = (char) (gr_synth_rng_next (&rng) & 0xff);
    csv = gr_telemetry_csv_parse (copy, tlen - gr_synth_rng_next (&rng) % 8, &st, NULL, 0);
    CHECK ((csv != NULL) == (st == GR_OK) && (st == GR_OK || st == GR_ERR_FORMAT),
        "corrupt CSV %d: status %d", it, st);
    for (int r = 0; csv && r < gr_telemetry_csv_rows (csv); r++) {
      CHECK (gr_telemetry_csv_row (csv, r, &p), "row");
      check_sane (&p, "corrupt CSV");
    }
    gr_telemetry_csv_free (csv);
  }
  free (copy);
  /* errors name the file's own line, blank lines counted */
  const char *late = "frame,lat\n\n0,1\n\n1,x\n";
  csv = gr_telemetry_csv_parse (late, strlen (late), &st, err, sizeof err);
  CHECK (!csv && strstr (err, "line 5"), "line number: %s", err);
  csv = gr_telemetry_csv_load ("/nonexistent/telemetry.csv", &st, err, sizeof err);
  CHECK (!csv && st == GR_ERR_IO && strstr (err, "/nonexistent"), "missing file: %s", err);
}

/* MISB ST 0601: a sensor 300 m above the ground looking at a frame centre 300 m to its
 * north-east (45 degrees off nadir): position, heights and the look direction as a
 * camera attitude whose optical axis meets the ground at that centre. */
static void
test_klv (void)
{
  GrKlvUas v;
  gr_klv_uas_init (&v);
  v.timestamp_us = 1700000000000000ull;
  v.has_sensor_position = true;
  v.sensor_lat = 41.03;
  v.sensor_lon = -83.3;
  v.sensor_alt_m = 500;
  v.has_platform_angles = true;
  v.platform_heading_deg = 30;
  v.platform_pitch_deg = 2;
  v.platform_roll_deg = -3;
  /* the centre 212.13 m east and north: find its latitude/longitude by the inverse */
  double de, dn;
  gr_wgs84_local_offset (v.sensor_lat, v.sensor_lon, v.sensor_lat + 1e-3,
      v.sensor_lon + 1e-3, &de, &dn);
  v.has_centre = true;
  v.centre_lat = v.sensor_lat + 1e-3 * (300 / sqrt (2)) / dn;
  v.centre_lon = v.sensor_lon + 1e-3 * (300 / sqrt (2)) / de;
  v.has_centre_elevation = true;
  v.centre_elevation_m = 200;
  uint8_t pkt[GR_KLV_UAS_MAX_BYTES];
  const size_t n = gr_klv_uas_encode (&v, pkt);
  GrPosePrior p;
  uint64_t ts = 0;
  char err[200] = "";
  CHECK (gr_pose_prior_from_klv (pkt, n, &p, &ts, err, sizeof err) == GR_OK, "%s", err);
  CHECK (ts == v.timestamp_us && p.sources == GR_PRIOR_SRC_KLV, "timestamp, sources");
  /* ST 0601 quantizes latitude to 4e-8 degrees and altitude to 0.3 m */
  CHECK (near (&p.lat, 41.03, 1e-6) && near (&p.lon, -83.3, 1e-6), "klv position");
  CHECK (near (&p.alt_amsl, 500, 0.5) && near (&p.height_agl, 300, 1), "klv heights %.2f",
      p.height_agl.value);
  CHECK (near (&p.flight_yaw, 30, 0.01) && near (&p.flight_pitch, 2, 0.01) &&
      near (&p.flight_roll, -3, 0.01), "platform angles");
  CHECK (near (&p.cam_yaw, 45, 0.2) && near (&p.cam_pitch, 45, 0.2) &&
      near (&p.cam_roll, 0, 0) && p.cam_roll.sigma >= 10, "look direction %.2f %.2f",
      p.cam_yaw.value, p.cam_pitch.value);
  /* the camera's optical axis meets the ground at the frame centre */
  GrCamera cam;
  gr_camera_init_focal (&cam, 1920, 1080, 10, 6.17);
  GrCameraPose pose = { p.cam_yaw.value, p.cam_pitch.value, p.cam_roll.value,
    p.height_agl.value };
  double H[9], ge = NAN, gn = NAN;
  CHECK (gr_camera_ground_homography (&cam, &pose, H) &&
      gr_fit_apply (H, cam.cx, cam.cy, &ge, &gn) &&
      hypot (ge - 300 / sqrt (2), gn - 300 / sqrt (2)) < 3, "axis meets (%.1f, %.1f)",
      ge, gn);
  /* a corrupted packet is refused with a reason */
  pkt[n / 2] ^= 0x5a;
  err[0] = '\0';
  CHECK (gr_pose_prior_from_klv (pkt, n, &p, NULL, err, sizeof err) == GR_ERR_FORMAT &&
      err[0], "corrupt KLV accepted");
}

/* The wind triangle on synthesized flights with a known wind and crab: lines flown on
 * several courses, each frame's course and ground speed from its (true) yaw, air speed
 * and the wind, the logged air speed off by a scale and noise. */
static void
test_wind_triangle (void)
{
  GRand *rng = g_rand_new_with_seed (13);
  for (int trial = 0; trial < 40; trial++) {
    const double wdir = g_rand_double_range (rng, 0, 2 * G_PI);
    const double wspd = g_rand_double_range (rng, 1, 7);
    const double we = wspd * sin (wdir), wn = wspd * cos (wdir);
    const double k = trial < 20 ? 1.0 : g_rand_double_range (rng, 0.8, 1.25);
    const double line = g_rand_double_range (rng, 0, 360);
    const bool fit_k = trial >= 20;
    enum { N = 16 };
    GrPosePrior p[N];
    double yaw[N];
    for (int i = 0; i < N; i++) {
      /* back and forth on survey lines, and a cross line every fourth frame */
      yaw[i] = line + (i % 2) * 180 + (i % 4 == 3 ? 90 : 0) +
          g_rand_double_range (rng, -5, 5);
      const double air = g_rand_double_range (rng, 10, 14), y = yaw[i] * G_PI / 180;
      const double ge = air * sin (y) + we, gn = air * cos (y) + wn;
      gr_pose_prior_init (&p[i]);
      p[i].flight_yaw = (GrPriorValue) { atan2 (ge, gn) * 180 / G_PI, 20, true };
      p[i].ground_speed = (GrPriorValue) { hypot (ge, gn), 0, true };
      p[i].air_speed = (GrPriorValue) { air / k + g_rand_double_range (rng, -0.1, 0.1),
        0, true };
      gr_pose_prior_finish (&p[i]);
    }
    GrWind w;
    CHECK (gr_telemetry_wind_estimate (p, N, fit_k, &w), "trial %d: no estimate", trial);
    CHECK (hypot (w.east - we, w.north - wn) < 0.3 && w.used == N,
        "trial %d: wind (%.2f, %.2f) vs (%.2f, %.2f)", trial, w.east, w.north, we, wn);
    CHECK (!fit_k || fabs (w.airspeed_scale - k) < 0.02, "trial %d: scale %.3f vs %.3f",
        trial, w.airspeed_scale, k);
    double worst = 0, worst_course = 0;
    for (int i = 0; i < N; i++) {
      double c = fabs (p[i].cam_yaw.value - yaw[i]);
      worst_course = fmax (worst_course, fmin (fmod (c, 360), 360 - fmod (c, 360)));
      CHECK (gr_pose_prior_apply_wind (&p[i], &w), "apply");
      double d = fabs (p[i].cam_yaw.value - yaw[i]);
      d = fmin (fmod (d, 360), 360 - fmod (d, 360));
      worst = fmax (worst, d);
      CHECK (p[i].cam_yaw.sigma >= 3 && p[i].cam_yaw.sigma < 5, "sigma %.2f",
          p[i].cam_yaw.sigma);
    }
    /* the crab is up to asin (7 / 10), 44 degrees; the triangle's yaw is within 1.5 */
    CHECK (worst < 1.5, "trial %d: yaw off by %.2f deg (course off by %.1f)", trial, worst,
        worst_course);
  }
  /* unobservable: one course only, or too few frames; no air speed */
  GrPosePrior p[4];
  for (int i = 0; i < 4; i++) {
    gr_pose_prior_init (&p[i]);
    p[i].flight_yaw = (GrPriorValue) { 40 + i, 20, true };
    p[i].ground_speed = (GrPriorValue) { 12, 0, true };
    p[i].air_speed = (GrPriorValue) { 11, 0, true };
  }
  GrWind w;
  CHECK (!gr_telemetry_wind_estimate (p, 4, false, &w), "one course accepted");
  p[2].flight_yaw.value = 220;
  CHECK (!gr_telemetry_wind_estimate (p, 2, false, &w), "two frames accepted");
  p[3].air_speed.have = false;
  p[1].air_speed.have = false;
  CHECK (!gr_telemetry_wind_estimate (p, 4, false, &w), "two usable frames accepted");
  CHECK (!gr_pose_prior_apply_wind (&p[1], &w), "applied without air speed");
  CHECK (!gr_telemetry_wind_estimate (NULL, 4, false, &w), "NULL accepted");
  g_rand_free (rng);
}

int
main (void)
{
  test_wind_triangle ();
  test_dji_round_trip ();
  test_no_telemetry ();
  test_yaw_disagreement ();
  test_sensefly_xmp ();
  test_pix4d_camera_xmp ();
  test_quarter_turned ();
  test_hostile ();
  test_csv ();
  test_klv ();
  return CHECK_DONE ();
}
