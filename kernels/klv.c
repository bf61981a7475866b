/* MISB ST 0601 UAS Datalink Local Set encoder and decoder (kernels/klv.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "klv.h"

#include <math.h>
#include <string.h>

const uint8_t GR_KLV_UAS_KEY[16] = { 0x06, 0x0E, 0x2B, 0x34, 0x02, 0x0B, 0x01, 0x01,
  0x0E, 0x01, 0x03, 0x01, 0x01, 0x00, 0x00, 0x00
};

/* A tag's mapping: `bytes` big-endian bytes, signed or not; the value range
 * [lo, hi] maps linearly onto [-(2^(8n-1) - 1), 2^(8n-1) - 1] (signed) or
 * [0, 2^(8n) - 1] (unsigned).  Signed tags reserve -(2^(8n-1)) as "error". */
typedef struct {
  int bytes;
  bool is_signed;
  double lo, hi;
} Mapping;

static const Mapping MAP_HEADING = { 2, false, 0, 360 };
static const Mapping MAP_PITCH = { 2, true, -20, 20 };
static const Mapping MAP_ROLL = { 2, true, -50, 50 };
static const Mapping MAP_LAT = { 4, true, -90, 90 };
static const Mapping MAP_LON = { 4, true, -180, 180 };
static const Mapping MAP_ALT = { 2, false, -900, 19000 };
static const Mapping MAP_OFFSET = { 2, true, -0.075, 0.075 };

enum {
  TAG_CHECKSUM = 1, TAG_TIMESTAMP = 2, TAG_HEADING = 5, TAG_PITCH = 6, TAG_ROLL = 7,
  TAG_SENSOR_LAT = 13, TAG_SENSOR_LON = 14, TAG_SENSOR_ALT = 15, TAG_CENTRE_LAT = 23,
  TAG_CENTRE_LON = 24, TAG_CENTRE_ELEV = 25, TAG_OFFSET_LAT1 = 26, TAG_VERSION = 65,
  TAG_CORNER_LAT1 = 82,
};

void
gr_klv_uas_init (GrKlvUas *v)
{
  memset (v, 0, sizeof *v);
  v->platform_heading_deg = v->platform_pitch_deg = v->platform_roll_deg = NAN;
  v->sensor_lat = v->sensor_lon = v->sensor_alt_m = NAN;
  v->centre_lat = v->centre_lon = v->centre_elevation_m = NAN;
  for (int i = 0; i < 4; i++)
    v->corner_lat[i] = v->corner_lon[i] = v->offset_lat[i] = v->offset_lon[i] = NAN;
}

uint16_t
gr_klv_checksum (const uint8_t *data, size_t len)
{
  uint32_t sum = 0;
  for (size_t i = 0; i < len; i++)
    sum += (uint32_t) data[i] << (i % 2 == 0 ? 8 : 0);
  return (uint16_t) sum;
}

static double
map_scale (const Mapping *m)
{
  const double n = (double) (m->is_signed ? (1ull << (8 * m->bytes - 1)) - 1 :
      (1ull << (8 * m->bytes)) - 1);
  return m->is_signed ? 2 * n / (m->hi - m->lo) : n / (m->hi - m->lo);
}

/* v onto the tag's integer, big-endian, at p.  NAN or out of range: the error value
 * for signed mappings, the nearest end for unsigned ones (they have none). */
static void
map_encode (const Mapping *m, double v, uint8_t *p)
{
  int64_t k;
  if (m->is_signed) {
    const int64_t max = (int64_t) ((1ull << (8 * m->bytes - 1)) - 1);
    if (!isfinite (v) || v < m->lo || v > m->hi)
      k = -max - 1;
    else
      k = llround ((v - (m->lo + m->hi) / 2) * map_scale (m));
    if (k > max)
      k = max;
  } else {
    const int64_t max = (int64_t) ((1ull << (8 * m->bytes)) - 1);
    double c = isfinite (v) ? fmin (fmax (v, m->lo), m->hi) : m->lo;
    k = llround ((c - m->lo) * map_scale (m));
    if (k > max)
      k = max;
  }
  const uint64_t u = (uint64_t) k;
  for (int i = 0; i < m->bytes; i++)
    p[i] = (uint8_t) (u >> (8 * (m->bytes - 1 - i)));
}

static double
map_decode (const Mapping *m, const uint8_t *p)
{
  uint64_t u = 0;
  for (int i = 0; i < m->bytes; i++)
    u = (u << 8) | p[i];
  if (m->is_signed) {
    const int bits = 8 * m->bytes;
    const int64_t k = (u & (1ull << (bits - 1))) ? (int64_t) u - (int64_t) (1ull << bits) :
        (int64_t) u;
    if (k == -(int64_t) (1ull << (bits - 1)))
      return NAN;
    return (m->lo + m->hi) / 2 + (double) k / map_scale (m);
  }
  return m->lo + (double) u / map_scale (m);
}

/* tag (< 128), length, mapped value */
static size_t
put_mapped (uint8_t *p, int tag, const Mapping *m, double v)
{
  p[0] = (uint8_t) tag;
  p[1] = (uint8_t) m->bytes;
  map_encode (m, v, p + 2);
  return 2 + (size_t) m->bytes;
}

size_t
gr_klv_uas_encode (const GrKlvUas *v, uint8_t *out)
{
  uint8_t items[GR_KLV_UAS_MAX_BYTES];
  size_t n = 0;
  items[n++] = TAG_TIMESTAMP;
  items[n++] = 8;
  for (int i = 0; i < 8; i++)
    items[n++] = (uint8_t) (v->timestamp_us >> (8 * (7 - i)));
  items[n++] = TAG_VERSION;
  items[n++] = 1;
  items[n++] = GR_KLV_UAS_VERSION;
  if (v->has_platform_angles) {
    n += put_mapped (items + n, TAG_HEADING, &MAP_HEADING, v->platform_heading_deg);
    n += put_mapped (items + n, TAG_PITCH, &MAP_PITCH, v->platform_pitch_deg);
    n += put_mapped (items + n, TAG_ROLL, &MAP_ROLL, v->platform_roll_deg);
  }
  if (v->has_sensor_position) {
    n += put_mapped (items + n, TAG_SENSOR_LAT, &MAP_LAT, v->sensor_lat);
    n += put_mapped (items + n, TAG_SENSOR_LON, &MAP_LON, v->sensor_lon);
    n += put_mapped (items + n, TAG_SENSOR_ALT, &MAP_ALT, v->sensor_alt_m);
  }
  if (v->has_centre) {
    n += put_mapped (items + n, TAG_CENTRE_LAT, &MAP_LAT, v->centre_lat);
    n += put_mapped (items + n, TAG_CENTRE_LON, &MAP_LON, v->centre_lon);
  }
  if (v->has_centre_elevation)
    n += put_mapped (items + n, TAG_CENTRE_ELEV, &MAP_ALT, v->centre_elevation_m);
  if (v->has_corners) {
    /* offsets need the centre; without one they are error values */
    for (int i = 0; i < 4; i++) {
      const double dlat = v->has_centre ? v->corner_lat[i] - v->centre_lat : NAN;
      const double dlon = v->has_centre ? v->corner_lon[i] - v->centre_lon : NAN;
      n += put_mapped (items + n, TAG_OFFSET_LAT1 + 2 * i, &MAP_OFFSET, dlat);
      n += put_mapped (items + n, TAG_OFFSET_LAT1 + 2 * i + 1, &MAP_OFFSET, dlon);
    }
    for (int i = 0; i < 4; i++) {
      n += put_mapped (items + n, TAG_CORNER_LAT1 + 2 * i, &MAP_LAT, v->corner_lat[i]);
      n += put_mapped (items + n, TAG_CORNER_LAT1 + 2 * i + 1, &MAP_LON, v->corner_lon[i]);
    }
  }
  /* the checksum item: its tag and length are summed, its value is the sum */
  const size_t payload = n + 4;
  size_t o = 0;
  memcpy (out, GR_KLV_UAS_KEY, 16);
  o = 16;
  /* BER length: short form below 128, else long form with one byte */
  if (payload < 128) {
    out[o++] = (uint8_t) payload;
  } else {
    out[o++] = 0x81;
    out[o++] = (uint8_t) payload;
  }
  memcpy (out + o, items, n);
  o += n;
  out[o++] = TAG_CHECKSUM;
  out[o++] = 2;
  const uint16_t sum = gr_klv_checksum (out, o);
  out[o++] = (uint8_t) (sum >> 8);
  out[o++] = (uint8_t) sum;
  return o;
}

/* BER length at p (n bytes left): the value and the bytes it used, 0 on error. */
static size_t
ber_length (const uint8_t *p, size_t n, size_t *value)
{
  if (n < 1)
    return 0;
  if (p[0] < 0x80) {
    *value = p[0];
    return 1;
  }
  const size_t k = p[0] & 0x7f;
  if (k == 0 || k > 4 || n < 1 + k)
    return 0;
  size_t v = 0;
  for (size_t i = 0; i < k; i++)
    v = (v << 8) | p[1 + i];
  *value = v;
  return 1 + k;
}

/* BER-OID tag: the value and the bytes it used, 0 on error. */
static size_t
ber_oid (const uint8_t *p, size_t n, unsigned *tag)
{
  unsigned v = 0;
  for (size_t i = 0; i < n && i < 4; i++) {
    v = (v << 7) | (p[i] & 0x7f);
    if (!(p[i] & 0x80)) {
      *tag = v;
      return i + 1;
    }
  }
  return 0;
}

static bool
read_mapped (const Mapping *m, const uint8_t *p, size_t len, double *out)
{
  if (len != (size_t) m->bytes)
    return false;
  *out = map_decode (m, p);
  return true;
}

GrStatus
gr_klv_uas_decode (const uint8_t *data, size_t len, GrKlvUas *v, char *errbuf,
    size_t errlen)
{
  gr_klv_uas_init (v);
  if (!data || len < 17 || memcmp (data, GR_KLV_UAS_KEY, 16) != 0) {
    gr_set_err (errbuf, errlen, "not a UAS Datalink Local Set (wrong or missing key)");
    return GR_ERR_FORMAT;
  }
  size_t payload;
  size_t lb = ber_length (data + 16, len - 16, &payload);
  if (!lb || payload > len - 16 - lb) {
    gr_set_err (errbuf, errlen, "bad or truncated BER length");
    return GR_ERR_FORMAT;
  }
  const size_t start = 16 + lb, end = start + payload;
  bool have_checksum = false, have_timestamp = false;
  size_t p = start;
  while (p < end) {
    unsigned tag;
    size_t tb = ber_oid (data + p, end - p, &tag), l;
    size_t vb = tb ? ber_length (data + p + tb, end - p - tb, &l) : 0;
    if (!tb || !vb || l > end - p - tb - vb) {
      gr_set_err (errbuf, errlen, "item at byte %zu: truncated or bad tag/length", p);
      return GR_ERR_FORMAT;
    }
    const uint8_t *val = data + p + tb + vb;
    bool ok = true;
    switch (tag) {
      case TAG_CHECKSUM:
        if (l != 2 || p + tb + vb + 2 != end) {
          gr_set_err (errbuf, errlen, "the checksum is not the last item");
          return GR_ERR_FORMAT;
        }
        if (gr_klv_checksum (data, (size_t) (val - data)) != ((val[0] << 8) | val[1])) {
          gr_set_err (errbuf, errlen, "checksum mismatch");
          return GR_ERR_FORMAT;
        }
        have_checksum = true;
        break;
      case TAG_TIMESTAMP:
        ok = l == 8;
        for (size_t i = 0; ok && i < 8; i++)
          v->timestamp_us = (v->timestamp_us << 8) | val[i];
        have_timestamp = ok;
        break;
      case TAG_VERSION:
        ok = l == 1;
        if (ok)
          v->version = val[0];
        break;
      case TAG_HEADING:
        ok = read_mapped (&MAP_HEADING, val, l, &v->platform_heading_deg);
        v->has_platform_angles = true;
        break;
      case TAG_PITCH:
        ok = read_mapped (&MAP_PITCH, val, l, &v->platform_pitch_deg);
        break;
      case TAG_ROLL:
        ok = read_mapped (&MAP_ROLL, val, l, &v->platform_roll_deg);
        break;
      case TAG_SENSOR_LAT:
        ok = read_mapped (&MAP_LAT, val, l, &v->sensor_lat);
        v->has_sensor_position = true;
        break;
      case TAG_SENSOR_LON:
        ok = read_mapped (&MAP_LON, val, l, &v->sensor_lon);
        break;
      case TAG_SENSOR_ALT:
        ok = read_mapped (&MAP_ALT, val, l, &v->sensor_alt_m);
        break;
      case TAG_CENTRE_LAT:
        ok = read_mapped (&MAP_LAT, val, l, &v->centre_lat);
        v->has_centre = true;
        break;
      case TAG_CENTRE_LON:
        ok = read_mapped (&MAP_LON, val, l, &v->centre_lon);
        break;
      case TAG_CENTRE_ELEV:
        ok = read_mapped (&MAP_ALT, val, l, &v->centre_elevation_m);
        v->has_centre_elevation = true;
        break;
      default:
        if (tag >= TAG_OFFSET_LAT1 && tag < TAG_OFFSET_LAT1 + 8) {
          const int i = (int) (tag - TAG_OFFSET_LAT1);
          ok = read_mapped (&MAP_OFFSET, val, l, i % 2 ? &v->offset_lon[i / 2] :
              &v->offset_lat[i / 2]);
        } else if (tag >= TAG_CORNER_LAT1 && tag < TAG_CORNER_LAT1 + 8) {
          const int i = (int) (tag - TAG_CORNER_LAT1);
          ok = read_mapped (i % 2 ? &MAP_LON : &MAP_LAT, val, l, i % 2 ?
              &v->corner_lon[i / 2] : &v->corner_lat[i / 2]);
          v->has_corners = true;
        }
        /* other tags: not ours, skipped */
    }
    if (!ok) {
      gr_set_err (errbuf, errlen, "tag %u: length %zu is not the standard's", tag, l);
      return GR_ERR_FORMAT;
    }
    p += tb + vb + l;
  }
  if (!have_checksum || !have_timestamp) {
    gr_set_err (errbuf, errlen, "no %s item", have_checksum ? "precision time stamp" :
        "checksum");
    return GR_ERR_FORMAT;
  }
  return GR_OK;
}
