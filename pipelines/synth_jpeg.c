/* Synthetic drone photos with DJI-style EXIF and XMP (synth_jpeg.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "synth_jpeg.h"

#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <libexif/exif-data.h>

void
gr_synth_drone_tags_init (GrSynthDroneTags *t)
{
  memset (t, 0, sizeof *t);
}

/* A new entry of `components` values of `format` in `ifd`, data zeroed; NULL on
 * allocation failure. */
static ExifEntry *
add_entry (ExifData *ed, ExifIfd ifd, ExifTag tag, ExifFormat format,
    unsigned long components)
{
  ExifMem *mem = exif_mem_new_default ();
  if (!mem)
    return NULL;
  ExifEntry *e = exif_entry_new_mem (mem);
  if (!e) {
    exif_mem_unref (mem);
    return NULL;
  }
  e->data = exif_mem_alloc (mem, exif_format_get_size (format) * components);
  exif_mem_unref (mem);
  if (!e->data) {
    exif_entry_unref (e);
    return NULL;
  }
  e->tag = tag;
  e->format = format;
  e->components = components;
  e->size = exif_format_get_size (format) * components;
  exif_content_add_entry (ed->ifd[ifd], e);
  exif_entry_unref (e);                    /* the IFD holds it now */
  return e;
}

static bool
add_ascii (ExifData *ed, ExifIfd ifd, ExifTag tag, const char *s)
{
  ExifEntry *e = add_entry (ed, ifd, tag, EXIF_FORMAT_ASCII, strlen (s) + 1);
  if (!e)
    return false;
  memcpy (e->data, s, strlen (s) + 1);
  return true;
}

static ExifRational
rational (double v, ExifLong den)
{
  ExifRational r = { (ExifLong) llround (fabs (v) * den), den };
  return r;
}

/* degrees -> (deg, min, sec) rationals, seconds to 1e-4 (about 3 mm), as DJI writes */
static bool
add_gps_angle (ExifData *ed, ExifTag tag, ExifTag ref_tag, double deg, char pos,
    char neg)
{
  ExifByteOrder bo = exif_data_get_byte_order (ed);
  ExifEntry *e = add_entry (ed, EXIF_IFD_GPS, tag, EXIF_FORMAT_RATIONAL, 3);
  if (!e)
    return false;
  double a = fabs (deg);
  double d = floor (a), m = floor ((a - d) * 60.0);
  double s = (a - d - m / 60.0) * 3600.0;
  exif_set_rational (e->data, bo, rational (d, 1));
  exif_set_rational (e->data + 8, bo, rational (m, 1));
  exif_set_rational (e->data + 16, bo, rational (s, 10000));
  char ref[2] = { deg < 0 ? neg : pos, 0 };
  return add_ascii (ed, EXIF_IFD_GPS, ref_tag, ref);
}

static bool
build_exif (const GrSynthDroneTags *t, unsigned char **buf, unsigned int *len)
{
  ExifData *ed = exif_data_new ();
  if (!ed)
    return false;
  exif_data_set_byte_order (ed, EXIF_BYTE_ORDER_INTEL);
  exif_data_set_data_type (ed, EXIF_DATA_TYPE_COMPRESSED);
  const ExifByteOrder bo = EXIF_BYTE_ORDER_INTEL;
  bool ok = true;
  if (t->make)
    ok = ok && add_ascii (ed, EXIF_IFD_0, EXIF_TAG_MAKE, t->make);
  if (t->model)
    ok = ok && add_ascii (ed, EXIF_IFD_0, EXIF_TAG_MODEL, t->model);
  if (ok && t->focal_mm > 0) {
    ExifEntry *e = add_entry (ed, EXIF_IFD_EXIF, EXIF_TAG_FOCAL_LENGTH,
        EXIF_FORMAT_RATIONAL, 1);
    ok = e != NULL;
    if (e)
      exif_set_rational (e->data, bo, rational (t->focal_mm, 100));
  }
  if (ok && t->focal_35mm > 0) {
    ExifEntry *e = add_entry (ed, EXIF_IFD_EXIF, EXIF_TAG_FOCAL_LENGTH_IN_35MM_FILM,
        EXIF_FORMAT_SHORT, 1);
    ok = e != NULL;
    if (e)
      exif_set_short (e->data, bo, (ExifShort) t->focal_35mm);
  }
  if (ok && t->focal_plane_px_per_inch > 0) {
    const ExifTag tags[2] = { EXIF_TAG_FOCAL_PLANE_X_RESOLUTION,
      EXIF_TAG_FOCAL_PLANE_Y_RESOLUTION };
    for (int k = 0; ok && k < 2; k++) {
      ExifEntry *e = add_entry (ed, EXIF_IFD_EXIF, tags[k], EXIF_FORMAT_RATIONAL, 1);
      ok = e != NULL;
      if (e)
        exif_set_rational (e->data, bo, rational (t->focal_plane_px_per_inch, 1000));
    }
    ExifEntry *u = ok ? add_entry (ed, EXIF_IFD_EXIF, EXIF_TAG_FOCAL_PLANE_RESOLUTION_UNIT,
        EXIF_FORMAT_SHORT, 1) : NULL;
    ok = u != NULL;
    if (u)
      exif_set_short (u->data, bo, 2);
  }
  if (ok && t->exif_pixel_width > 0 && t->exif_pixel_height > 0) {
    const ExifTag tags[2] = { EXIF_TAG_PIXEL_X_DIMENSION, EXIF_TAG_PIXEL_Y_DIMENSION };
    const int v[2] = { t->exif_pixel_width, t->exif_pixel_height };
    for (int k = 0; ok && k < 2; k++) {
      ExifEntry *e = add_entry (ed, EXIF_IFD_EXIF, tags[k], EXIF_FORMAT_LONG, 1);
      ok = e != NULL;
      if (e)
        exif_set_long (e->data, bo, (ExifLong) v[k]);
    }
  }
  if (ok && t->have_gps) {
    ExifEntry *v = add_entry (ed, EXIF_IFD_GPS, EXIF_TAG_GPS_VERSION_ID, EXIF_FORMAT_BYTE, 4);
    ok = v != NULL;
    if (v)
      memcpy (v->data, "\2\3\0\0", 4);
    ok = ok && add_gps_angle (ed, EXIF_TAG_GPS_LATITUDE, EXIF_TAG_GPS_LATITUDE_REF, t->lat,
        'N', 'S');
    ok = ok && add_gps_angle (ed, EXIF_TAG_GPS_LONGITUDE, EXIF_TAG_GPS_LONGITUDE_REF,
        t->lon, 'E', 'W');
    ExifEntry *ar = ok ? add_entry (ed, EXIF_IFD_GPS, EXIF_TAG_GPS_ALTITUDE_REF,
        EXIF_FORMAT_BYTE, 1) : NULL;
    ExifEntry *a = ar ? add_entry (ed, EXIF_IFD_GPS, EXIF_TAG_GPS_ALTITUDE,
        EXIF_FORMAT_RATIONAL, 1) : NULL;
    ok = a != NULL;
    if (a) {
      ar->data[0] = t->alt_amsl < 0 ? 1 : 0;
      exif_set_rational (a->data, bo, rational (t->alt_amsl, 1000));
    }
  }
  *buf = NULL;
  *len = 0;
  if (ok)
    exif_data_save_data (ed, buf, len);
  exif_data_unref (ed);
  return ok && *buf && *len > 0 && *len <= 65533;
}

static char *
build_xmp (const GrSynthDroneTags *t, size_t *len)
{
  static const char id[] = "http://ns.adobe.com/xap/1.0/";
  char body[4096];
  int n = snprintf (body, sizeof body,
      "<?xpacket begin=\"\xef\xbb\xbf\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n"
      "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\">\n"
      " <rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n"
      "  <rdf:Description rdf:about=\"DJI Meta Data\"\n"
      "    xmlns:tiff=\"http://ns.adobe.com/tiff/1.0/\"\n"
      "    xmlns:exif=\"http://ns.adobe.com/exif/1.0/\"\n"
      "    xmlns:xmp=\"http://ns.adobe.com/xap/1.0/\"\n"
      "    xmlns:drone-dji=\"http://www.dji.com/drone-dji/1.0/\"\n"
      "   xmp:ModifyDate=\"2026-01-01\"\n"
      "   drone-dji:AbsoluteAltitude=\"%+.2f\"\n"
      "   drone-dji:RelativeAltitude=\"%+.2f\"\n"
      "   drone-dji:GimbalRollDegree=\"%+.2f\"\n"
      "   drone-dji:GimbalYawDegree=\"%+.2f\"\n"
      "   drone-dji:GimbalPitchDegree=\"%+.2f\"\n"
      "   drone-dji:FlightRollDegree=\"%+.2f\"\n"
      "   drone-dji:FlightYawDegree=\"%+.2f\"\n"
      "   drone-dji:FlightPitchDegree=\"%+.2f\">\n"
      "  </rdf:Description>\n"
      " </rdf:RDF>\n"
      "</x:xmpmeta>\n"
      "<?xpacket end=\"w\"?>",
      t->alt_amsl, t->rel_alt, t->gimbal_roll, t->gimbal_yaw, t->gimbal_pitch,
      t->flight_roll, t->flight_yaw, t->flight_pitch);
  if (n < 0 || (size_t) n >= sizeof body)
    return NULL;
  char *out = malloc (sizeof id + (size_t) n);
  if (!out)
    return NULL;
  memcpy (out, id, sizeof id);             /* with its NUL, as the XMP spec says */
  memcpy (out + sizeof id, body, (size_t) n);
  *len = sizeof id + (size_t) n;
  return out;
}

typedef struct {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
} EncodeError;

static void
encode_error_exit (j_common_ptr cinfo)
{
  longjmp (((EncodeError *) cinfo->err)->jump, 1);
}

/* libjpeg reports errors by longjmp: kept in its own function, with only what it needs,
 * so no caller's variable lives across the setjmp. */
static bool
compress (const uint8_t *pix, int width, int height, int channels, size_t stride,
    int quality, const unsigned char *exif, unsigned exif_len, const char *xmp,
    unsigned xmp_len, unsigned char **mem, unsigned long *mem_len)
{
  struct jpeg_compress_struct ci;
  EncodeError jerr;
  ci.err = jpeg_std_error (&jerr.pub);
  jerr.pub.error_exit = encode_error_exit;
  if (setjmp (jerr.jump)) {
    jpeg_destroy_compress (&ci);
    return false;
  }
  jpeg_create_compress (&ci);
  jpeg_mem_dest (&ci, mem, mem_len);
  ci.image_width = width;
  ci.image_height = height;
  ci.input_components = channels;
  ci.in_color_space = channels == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults (&ci);
  jpeg_set_quality (&ci, quality, TRUE);
  ci.write_JFIF_header = FALSE;            /* DJI files start with the EXIF APP1 */
  jpeg_start_compress (&ci, TRUE);
  if (exif)
    jpeg_write_marker (&ci, JPEG_APP0 + 1, exif, exif_len);
  if (xmp)
    jpeg_write_marker (&ci, JPEG_APP0 + 1, (const JOCTET *) xmp, xmp_len);
  while (ci.next_scanline < ci.image_height) {
    JSAMPROW row = (JSAMPROW) (pix + ci.next_scanline * stride);
    jpeg_write_scanlines (&ci, &row, 1);
  }
  jpeg_finish_compress (&ci);
  jpeg_destroy_compress (&ci);
  return true;
}

bool
gr_synth_jpeg_encode (const uint8_t *pix, int width, int height, int channels,
    size_t stride, int quality, const GrSynthDroneTags *tags, uint8_t **out,
    size_t *out_len)
{
  if (!out || !out_len)
    return false;
  *out = NULL;
  *out_len = 0;
  if (!pix || !tags || width < 1 || height < 1 || width > 65500 || height > 65500 ||
      (channels != 1 && channels != 3) || stride < (size_t) width * channels ||
      quality < 1 || quality > 100)
    return false;
  unsigned char *exif = NULL;
  unsigned int exif_len = 0;
  if ((tags->make || tags->model || tags->focal_mm > 0 || tags->focal_35mm > 0 ||
          tags->have_gps) && !build_exif (tags, &exif, &exif_len)) {
    free (exif);
    return false;
  }
  size_t xmp_len = 0;
  char *xmp = tags->have_xmp ? build_xmp (tags, &xmp_len) : NULL;
  if (tags->have_xmp && !xmp) {
    free (exif);
    return false;
  }
  unsigned char *mem = NULL;
  unsigned long mem_len = 0;
  bool ok = compress (pix, width, height, channels, stride, quality, exif, exif_len, xmp,
      (unsigned) xmp_len, &mem, &mem_len);
  free (exif);
  free (xmp);
  if (!ok) {
    free (mem);
    return false;
  }
  *out = mem;
  *out_len = mem_len;
  return true;
}

bool
gr_synth_jpeg_write (const char *path, const uint8_t *pix, int width, int height,
    int channels, size_t stride, int quality, const GrSynthDroneTags *tags)
{
  uint8_t *buf;
  size_t len;
  if (!path || !gr_synth_jpeg_encode (pix, width, height, channels, stride, quality, tags,
          &buf, &len))
    return false;
  FILE *f = fopen (path, "wb");
  bool ok = f && fwrite (buf, 1, len, f) == len;
  if (f)
    ok = fclose (f) == 0 && ok;
  free (buf);
  return ok;
}
