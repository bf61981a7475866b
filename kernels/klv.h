/* MISB ST 0601 UAS Datalink Local Set: encode and decode one KLV packet per frame
 * (SMPTE ST 336 key, BER length, BER-OID tags).  Plain C, no GStreamer.
 *
 * Written items, in this order: 2 precision time stamp (first, as the standard
 * asks), 65 LS version, the optional platform / sensor / frame-centre items that are
 * set, 26-33 corner offsets from the frame centre (+-0.075 degrees, the error value
 * when a corner lies farther), 82-89 full corner latitudes/longitudes, and 1 checksum
 * (last).  Corners are numbered as the standard does: 1 upper left, 2 upper right,
 * 3 lower right, 4 lower left of the image.  Values are mapped onto the integer
 * ranges of ST 0601's tag table (e.g. latitude +-90 onto +-(2^31 - 1)); on decode
 * the standard's error values (0x80000000, 0x8000) read as NAN.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_KLV_H
#define GR_KLV_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The 16-byte universal key of the UAS Datalink Local Set. */
extern const uint8_t GR_KLV_UAS_KEY[16];

/* ST 0601 version written in tag 65. */
#define GR_KLV_UAS_VERSION 19

/* The largest packet gr_klv_uas_encode writes. */
#define GR_KLV_UAS_MAX_BYTES 256

typedef struct {
  uint64_t timestamp_us;       /* tag 2: microseconds since 1970-01-01 UTC */
  unsigned version;            /* tag 65 (decode only; encode writes GR_KLV_UAS_VERSION) */
  /* each group is written when its has_ flag is set; a NAN or out-of-range value is
   * written as the standard's error value where it has one */
  bool has_platform_angles;
  double platform_heading_deg; /* tag 5: 0..360 */
  double platform_pitch_deg;   /* tag 6: +-20 */
  double platform_roll_deg;    /* tag 7: +-50 */
  bool has_sensor_position;
  double sensor_lat, sensor_lon;  /* tags 13, 14 */
  double sensor_alt_m;         /* tag 15: true altitude (MSL), -900..19000 m */
  bool has_centre;
  double centre_lat, centre_lon;  /* tags 23, 24 */
  bool has_centre_elevation;
  double centre_elevation_m;   /* tag 25: -900..19000 m */
  bool has_corners;
  double corner_lat[4], corner_lon[4];  /* tags 82-89 (full) and 26-33 (offsets) */
  /* decode only: the offsets of tags 26-33 as read (NAN when absent or error) */
  double offset_lat[4], offset_lon[4];
} GrKlvUas;

/* Sets every value to "absent" (flags false, numbers NAN). */
void gr_klv_uas_init (GrKlvUas *v);

/* Encodes v into out (at least GR_KLV_UAS_MAX_BYTES bytes): the packet length. */
size_t gr_klv_uas_encode (const GrKlvUas *v, uint8_t *out);

/* Decodes one packet (key, BER length, items, checksum verified).  Unknown tags are
 * skipped.  GR_ERR_FORMAT with the reason on a wrong key, a truncated or overlong
 * item, a bad BER length, or a checksum mismatch. */
GrStatus gr_klv_uas_decode (const uint8_t *data, size_t len, GrKlvUas *v, char *errbuf,
    size_t errlen);

/* The ST 0601 checksum of len bytes (the 16-bit sum of big-endian words). */
uint16_t gr_klv_checksum (const uint8_t *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
