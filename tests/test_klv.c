/* kernels/klv: ST 0601 encode/decode round trip on random values within half a step
 * of each tag's resolution, known mappings (+-90, 0, error values), item order (2
 * first, 1 last), the checksum, and hostile input (every truncation, every single-byte
 * corruption, bad lengths).  Prints the encode cost per packet.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "klv.h"
#include "test_check.h"

static double
urand (unsigned *s, double lo, double hi)
{
  *s = *s * 1103515245u + 12345u;
  return lo + (hi - lo) * ((*s >> 8) & 0xffffff) / (double) 0xffffff;
}

/* the first item with this tag in an encoded packet: its value bytes, or NULL */
static const uint8_t *
find_item (const uint8_t *pkt, size_t len, int tag, size_t *vlen)
{
  size_t p = 17 + (pkt[16] & 0x80 ? (pkt[16] & 0x7f) : 0);
  while (p + 2 <= len) {
    if (pkt[p] == tag) {
      *vlen = pkt[p + 1];
      return pkt + p + 2;
    }
    p += 2 + pkt[p + 1];
  }
  return NULL;
}

int
main (void)
{
  uint8_t pkt[GR_KLV_UAS_MAX_BYTES];
  char err[256];
  unsigned seed = 7;
  const double step_lat = 180.0 / 4294967294.0, step_lon = 360.0 / 4294967294.0;
  const double step_off = 0.15 / 65534.0;
  for (int trial = 0; trial < 2000; trial++) {
    GrKlvUas v, d;
    gr_klv_uas_init (&v);
    v.timestamp_us = 1700000000000000ull + (uint64_t) trial * 33333;
    v.has_centre = true;
    v.centre_lat = urand (&seed, -89.9, 89.9);
    v.centre_lon = urand (&seed, -179.9, 179.9);
    v.has_corners = true;
    for (int i = 0; i < 4; i++) {
      v.corner_lat[i] = v.centre_lat + urand (&seed, -0.07, 0.07);
      v.corner_lon[i] = v.centre_lon + urand (&seed, -0.07, 0.07);
    }
    v.has_platform_angles = trial % 2;
    v.platform_heading_deg = urand (&seed, 0, 360);
    v.platform_pitch_deg = urand (&seed, -20, 20);
    v.platform_roll_deg = urand (&seed, -50, 50);
    v.has_sensor_position = trial % 3 == 0;
    v.sensor_lat = urand (&seed, -90, 90);
    v.sensor_lon = urand (&seed, -180, 180);
    v.sensor_alt_m = urand (&seed, -900, 19000);
    v.has_centre_elevation = trial % 5 == 0;
    v.centre_elevation_m = urand (&seed, -900, 19000);
    size_t n = gr_klv_uas_encode (&v, pkt);
    CHECK (n > 0 && n <= GR_KLV_UAS_MAX_BYTES, "length %zu", n);
    CHECK (gr_klv_uas_decode (pkt, n, &d, err, sizeof err) == GR_OK, "decode: %s", err);
    CHECK (d.timestamp_us == v.timestamp_us, "timestamp");
    CHECK (d.version == GR_KLV_UAS_VERSION, "version %u", d.version);
    CHECK (fabs (d.centre_lat - v.centre_lat) <= step_lat && fabs (d.centre_lon - v.centre_lon)
        <= step_lon, "centre %.9f %.9f", d.centre_lat, d.centre_lon);
    for (int i = 0; i < 4; i++) {
      CHECK (fabs (d.corner_lat[i] - v.corner_lat[i]) <= step_lat
          && fabs (d.corner_lon[i] - v.corner_lon[i]) <= step_lon, "corner %d", i);
      CHECK (fabs (d.offset_lat[i] - (v.corner_lat[i] - v.centre_lat)) <= step_off
          && fabs (d.offset_lon[i] - (v.corner_lon[i] - v.centre_lon)) <= step_off,
          "offset %d: %g vs %g", i, d.offset_lat[i], v.corner_lat[i] - v.centre_lat);
    }
    CHECK (d.has_platform_angles == v.has_platform_angles, "angles flag");
    if (v.has_platform_angles)
      CHECK (fabs (d.platform_heading_deg - v.platform_heading_deg) <= 360.0 / 65535
          && fabs (d.platform_pitch_deg - v.platform_pitch_deg) <= 40.0 / 65534
          && fabs (d.platform_roll_deg - v.platform_roll_deg) <= 100.0 / 65534, "angles");
    CHECK (d.has_sensor_position == v.has_sensor_position, "sensor flag");
    if (v.has_sensor_position)
      CHECK (fabs (d.sensor_lat - v.sensor_lat) <= step_lat
          && fabs (d.sensor_alt_m - v.sensor_alt_m) <= 19900.0 / 65535, "sensor");
    if (v.has_centre_elevation)
      CHECK (fabs (d.centre_elevation_m - v.centre_elevation_m) <= 19900.0 / 65535, "elev");
    /* order: the timestamp first, the checksum last */
    size_t first = 17 + (pkt[16] & 0x80 ? (pkt[16] & 0x7f) : 0);
    CHECK (pkt[first] == 2 && pkt[first + 1] == 8, "tag 2 first");
    CHECK (pkt[n - 4] == 1 && pkt[n - 3] == 2, "tag 1 last");
  }

  /* known mappings */
  GrKlvUas v;
  gr_klv_uas_init (&v);
  v.has_centre = true;
  v.centre_lat = 90;
  v.centre_lon = -180;
  v.has_corners = true;
  for (int i = 0; i < 4; i++) {
    v.corner_lat[i] = 0;
    v.corner_lon[i] = NAN;     /* unknown: error value */
  }
  size_t n = gr_klv_uas_encode (&v, pkt), l = 0;
  const uint8_t *p = find_item (pkt, n, 23, &l);
  CHECK (p && l == 4 && p[0] == 0x7f && p[1] == 0xff && p[2] == 0xff && p[3] == 0xff,
      "lat 90");
  p = find_item (pkt, n, 24, &l);
  CHECK (p && l == 4 && p[0] == 0x80 && p[1] == 0x00 && p[2] == 0x00 && p[3] == 0x01,
      "lon -180");
  p = find_item (pkt, n, 82, &l);
  CHECK (p && l == 4 && !p[0] && !p[1] && !p[2] && !p[3], "lat 0");
  p = find_item (pkt, n, 83, &l);
  CHECK (p && l == 4 && p[0] == 0x80 && !p[1] && !p[2] && !p[3], "error value");
  /* the corner is 90 degrees from the centre: no offset fits +-0.075 */
  p = find_item (pkt, n, 26, &l);
  CHECK (p && l == 2 && p[0] == 0x80 && p[1] == 0x00, "offset out of range");
  GrKlvUas d;
  CHECK (gr_klv_uas_decode (pkt, n, &d, err, sizeof err) == GR_OK, "%s", err);
  CHECK (isnan (d.corner_lon[0]) && isnan (d.offset_lat[0]) && d.corner_lat[0] == 0,
      "error values read as NAN");
  /* checksum: the 16-bit sum of big-endian words (bytes at even offsets high) */
  const uint8_t ck[5] = { 0x01, 0x02, 0x03, 0x04, 0x05 };
  CHECK (gr_klv_checksum (ck, 5) == (uint16_t) (0x0102 + 0x0304 + 0x0500), "checksum");

  /* hostile input: every truncation and every single-byte corruption is rejected or
   * decoded without reading out of bounds (ASan watches) */
  gr_klv_uas_init (&v);
  v.has_centre = v.has_corners = true;
  v.centre_lat = 41.1;
  v.centre_lon = -81.2;
  for (int i = 0; i < 4; i++) {
    v.corner_lat[i] = 41.1 + 0.001 * i;
    v.corner_lon[i] = -81.2 - 0.001 * i;
  }
  n = gr_klv_uas_encode (&v, pkt);
  for (size_t k = 0; k < n; k++) {
    uint8_t *t = malloc (k ? k : 1);
    memcpy (t, pkt, k);
    CHECK (gr_klv_uas_decode (t, k, &d, err, sizeof err) == GR_ERR_FORMAT, "truncated %zu", k);
    free (t);
  }
  int accepted = 0;
  for (size_t k = 0; k < n; k++)
    for (int bit = 0; bit < 8; bit++) {
      uint8_t t[GR_KLV_UAS_MAX_BYTES];
      memcpy (t, pkt, n);
      t[k] ^= (uint8_t) (1u << bit);
      accepted += gr_klv_uas_decode (t, n, &d, err, sizeof err) == GR_OK;
    }
  CHECK (accepted == 0, "%d corrupted packets accepted", accepted);

  /* cost */
  struct timespec a, b;
  clock_gettime (CLOCK_MONOTONIC, &a);
  const int reps = 100000;
  size_t total = 0;
  for (int i = 0; i < reps; i++) {
    v.timestamp_us = (uint64_t) i;
    total += gr_klv_uas_encode (&v, pkt);
  }
  clock_gettime (CLOCK_MONOTONIC, &b);
  const double us = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3 / reps;
  printf ("encode: %.3f us per packet (%zu bytes)\n", us, total / reps);
  return CHECK_DONE ();
}
