/* georegexport: registration results as GeoJSON, CSV and GeoTIFF files (gst/gstgeoregexport.h).
 *
 * Each frame's GstNmiRegisterMeta (frame -> control transform) is composed with the
 * control's own georeference, opened here from control-location through GDAL (its CRS,
 * a .prj beside it, or the crs property), so the files do not depend on how the
 * registering element was configured.  A frame with only a GstNmiLocalizeMeta gets its
 * centre as a Point; a frame with neither, a Feature without geometry.  The raster
 * outputs (GeoTIFFs, mosaic, picture) live in gstgeoregexport-raster.c; the
 * control-location and crs properties are shared with georegklvenc
 * (gstgeoregfootprint.h's GstGeoregMapProps).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "gstgeoregexport-private.h"
#include "gstgeoregprops.h"
#include "georeg-results.h"
#include "georeg-meta.h"

GST_DEBUG_CATEGORY (gst_georeg_export_debug);
#define GST_CAT_DEFAULT gst_georeg_export_debug

#define DEFAULT_MAX_GEOTIFF_PIXELS (64u * 1024u * 1024u)

enum {
  PROP_0,
  PROP_CONTROL_LOCATION,        /* and PROP_CONTROL_LOCATION + 1: crs (GstGeoregMapProps) */
  PROP_CRS,
  PROP_GEOJSON_LOCATION,
  PROP_GEOJSON_FORM,
  PROP_CSV_LOCATION,
  PROP_GEOTIFF_DIR,
  PROP_GEOTIFF_FORMAT,
  PROP_MAX_GEOTIFF_PIXELS,
  PROP_SOURCE_LOCATION,
  PROP_PICTURE_LOCATION,
  PROP_MOSAIC_LOCATION,
  PROP_MOSAIC_EVERY,
  PROP_POST_MESSAGES,
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

#define gst_georeg_export_parent_class parent_class
G_DEFINE_TYPE (GstGeoregExport, gst_georeg_export, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (georegexport, "georegexport", GST_RANK_NONE,
    GST_TYPE_GEOREG_EXPORT);

#define GST_TYPE_GEOREG_EXPORT_GEOJSON_FORM (gst_georeg_export_geojson_form_get_type ())
static GType
gst_georeg_export_geojson_form_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GEOREG_EXPORT_GEOJSON_COLLECTION, "One FeatureCollection, valid after every frame",
        "collection"},
    {GST_GEOREG_EXPORT_GEOJSON_SEQUENCE, "GeoJSON text sequence (RFC 8142), one record "
          "per frame, for live streams", "sequence"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstGeoregExportGeoJsonForm", values));
  return type;
}

#define GST_TYPE_GEOREG_EXPORT_GEOTIFF_FORMAT (gst_georeg_export_geotiff_format_get_type ())
static GType
gst_georeg_export_geotiff_format_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GEOREG_EXPORT_GEOTIFF_COG, "Cloud Optimized GeoTIFF (tiled GeoTIFF where GDAL "
          "lacks the COG driver)", "cog"},
    {GST_GEOREG_EXPORT_GEOTIFF_GTIFF, "Tiled GeoTIFF", "gtiff"},
    {0, NULL, NULL}
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstGeoregExportGeoTiffFormat",
            values));
  return type;
}

/* The frame's result on the map as an element message: plain fields only (no arrays),
 * so bindings read them without python3-gst-1.0. */
static void
post_result (GstGeoregExport * self, const GrFootprint * f)
{
  GstStructure *st = gst_structure_new ("georegexport",
      "frame", G_TYPE_UINT64, (guint64) f->frame,
      "file", G_TYPE_STRING, f->file,
      "quality", G_TYPE_STRING, f->quality,
      "flags", G_TYPE_UINT, f->flags,
      "flag-names", G_TYPE_STRING, f->flag_names,
      "crs", G_TYPE_STRING, gr_georef_crs_name (self->georef),
      "epsg", G_TYPE_INT, gr_georef_epsg (self->georef),
      "has-footprint", G_TYPE_BOOLEAN, f->geometry == 2,
      "center-lon", G_TYPE_DOUBLE, f->centre_lon,
      "center-lat", G_TYPE_DOUBLE, f->centre_lat,
      "heading", G_TYPE_DOUBLE, f->heading_deg,
      "gsd", G_TYPE_DOUBLE, f->gsd_m,
      "predicted-error", G_TYPE_DOUBLE, f->predicted_error_px, NULL);
  static const char *const corner[4] = { "tl", "tr", "br", "bl" };
  for (int i = 0; i < 4; i++) {
    gchar *lon = g_strdup_printf ("%s-lon", corner[i]), *lat = g_strdup_printf ("%s-lat",
        corner[i]);
    gst_structure_set (st, lon, G_TYPE_DOUBLE, f->corner_lon[i], lat, G_TYPE_DOUBLE,
        f->corner_lat[i], NULL);
    g_free (lon);
    g_free (lat);
  }
  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), st));
}

static gboolean
gst_georeg_export_sink_event (GstBaseTransform * bt, GstEvent * event)
{
  GstGeoregExport *self = GST_GEOREG_EXPORT (bt);
  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
    gst_georeg_export_write_picture (self);
    if (self->mosaic && self->mosaic_stale)
      gst_georeg_export_write_mosaic (self);
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (bt, event);
}

static GstFlowReturn
gst_georeg_export_transform_ip (GstBaseTransform * bt, GstBuffer * buf)
{
  GstGeoregExport *self = GST_GEOREG_EXPORT (bt);
  gchar *source = NULL, *flag_names = NULL;
  const gchar *tagged = georeg_buffer_get_source_location (buf);
  if (tagged)
    source = g_strdup (tagged);
  else if (self->source_pattern)
    source = g_strdup_printf (self->source_pattern, (unsigned long long) self->frame);
  GrFootprint f = { 0 };
  gst_georeg_footprint_from_buffer (self->georef, buf, self->frame, &f, &flag_names);
  f.file = source;
  f.flag_names = flag_names ? flag_names : "";
  GstFlowReturn ret = GST_FLOW_OK;
  char err[512];
  if (self->plotted)
    gst_georeg_export_remember_footprint (self, buf, &f);
  if (self->writer && gr_footprint_writer_add (self->writer, &f, err, sizeof err) != GR_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("Could not write the footprints."), ("%s",
            err));
    ret = GST_FLOW_ERROR;
  }
  GST_OBJECT_LOCK (self);
  const gboolean post = self->post_messages;
  GST_OBJECT_UNLOCK (self);
  if (post)
    post_result (self, &f);
  if (ret == GST_FLOW_OK && (self->tiff_dir || self->mosaic)
      && !gst_georeg_export_write_frame (self, buf, source))
    ret = GST_FLOW_ERROR;
  self->frame++;
  g_free (source);
  g_free (flag_names);
  return ret;
}

static gboolean
gst_georeg_export_set_caps (GstBaseTransform * bt, GstCaps * incaps, GstCaps * outcaps)
{
  GstGeoregExport *self = GST_GEOREG_EXPORT (bt);
  self->have_vinfo = gst_video_info_from_caps (&self->vinfo, incaps);
  return TRUE;
}

/* TRUE when pattern holds exactly one integer conversion (%d, %05u, %llu...) and no
 * other conversion: it is given to printf with the frame number. */
static gboolean
source_pattern_ok (const gchar * p)
{
  int conversions = 0;
  for (const gchar * c = p; *c; c++) {
    if (*c != '%')
      continue;
    if (c[1] == '%') {
      c++;
      continue;
    }
    c++;
    while (*c && strchr ("0123456789-+ #", *c))
      c++;
    if (!*c)
      return FALSE;
    if (*c == 'l' || *c == 'j')
      return FALSE;
    if (!strchr ("diux", *c))
      return FALSE;
    conversions++;
  }
  return conversions <= 1;
}

static gboolean gst_georeg_export_stop (GstBaseTransform * bt);

static gboolean
gst_georeg_export_start (GstBaseTransform * bt)
{
  GstGeoregExport *self = GST_GEOREG_EXPORT (bt);
  GST_OBJECT_LOCK (self);
  gchar *control = g_strdup (self->map.control_location);
  gchar *json = g_strdup (self->geojson_location), *csv = g_strdup (self->csv_location);
  self->tiff_dir = self->geotiff_dir && *self->geotiff_dir ? g_strdup (self->geotiff_dir) : NULL;
  gchar *source = g_strdup (self->source_location);
  self->picture = self->picture_location && *self->picture_location ?
      g_strdup (self->picture_location) : NULL;
  self->mosaic_path = self->mosaic_location && *self->mosaic_location ?
      g_strdup (self->mosaic_location) : NULL;
  self->mosaic_every = self->mosaic_every_prop;
  self->mosaic_added = 0;
  self->mosaic_stale = FALSE;
  if (self->mosaic_path)
    self->mosaic = gr_mosaic_new ((gsize) self->max_geotiff_pixels);
  GrGeoJsonForm form = self->geojson_form == GST_GEOREG_EXPORT_GEOJSON_SEQUENCE ?
      GR_GEOJSON_SEQUENCE : GR_GEOJSON_COLLECTION;
  self->cog = self->geotiff_format == GST_GEOREG_EXPORT_GEOTIFF_COG;
  self->max_pixels = (gsize) self->max_geotiff_pixels;
  GST_OBJECT_UNLOCK (self);
  gboolean ok = FALSE;
  char err[1024];
  self->frame = 0;
  self->geotiffs = 0;

  if (source && *source) {
    /* the pattern is printf'd with a guint64: allow one integer conversion only, then
     * rewrite it with G_GUINT64_FORMAT's length */
    if (!source_pattern_ok (source)) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("Bad source-location '%s'.", source),
          ("Give a file name with at most one integer conversion such as %%04d."));
      goto done;
    }
    GString *p = g_string_new (NULL);
    for (const gchar * c = source; *c; c++) {
      g_string_append_c (p, *c);
      if (*c == '%' && c[1] == '%') {
        g_string_append_c (p, *++c);
      } else if (*c == '%') {
        while (c[1] && strchr ("0123456789-+ #", c[1]))
          g_string_append_c (p, *++c);
        g_string_append (p, "ll");
        c++;
        g_string_append_c (p, *c == 'd' || *c == 'i' ? 'u' : *c);
      }
    }
    self->source_pattern = g_string_free (p, FALSE);
  }
  self->georef = gst_georeg_map_props_open (GST_ELEMENT (self), &self->map);
  if (!self->georef)
    goto done;
  GrStatus st;
  if ((json && *json) || (csv && *csv)) {
    st = gr_footprint_writer_open (json, form, csv, &self->writer, err, sizeof err);
    if (st != GR_OK) {
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE, ("Could not create the footprint "
              "files."), ("%s", err));
      goto done;
    }
  }
  if (self->picture) {
    /* the control's luminance as the picture's background */
    GrStatus pst = gr_raster_load (control, 0, &self->picture_control, err, sizeof err);
    if (pst != GR_OK) {
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("Could not read the control '%s' for "
              "the picture.", control), ("%s", err));
      goto done;
    }
    self->plotted = g_array_new (FALSE, FALSE, sizeof (GrPlotFootprint));
  }
  if (self->tiff_dir && g_mkdir_with_parents (self->tiff_dir, 0755) != 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE, ("Could not create the folder '%s'.",
            self->tiff_dir), GST_ERROR_SYSTEM);
    goto done;
  }
  ok = TRUE;
done:
  /* a failed start gets no stop: release what was opened */
  if (!ok)
    gst_georeg_export_stop (bt);
  g_free (control);
  g_free (json);
  g_free (csv);
  g_free (source);
  return ok;
}

static gboolean
gst_georeg_export_stop (GstBaseTransform * bt)
{
  GstGeoregExport *self = GST_GEOREG_EXPORT (bt);
  /* a pipeline stopped without EOS still gets its picture and mosaic */
  gst_georeg_export_write_picture (self);
  if (self->mosaic && self->mosaic_stale)
    gst_georeg_export_write_mosaic (self);
  gr_mosaic_free (self->mosaic);
  self->mosaic = NULL;
  g_clear_pointer (&self->mosaic_path, g_free);
  if (self->plotted)
    g_array_free (self->plotted, TRUE);
  self->plotted = NULL;
  gr_raster_clear (&self->picture_control);
  g_clear_pointer (&self->picture, g_free);
  gr_footprint_writer_close (self->writer);
  self->writer = NULL;
  gr_georef_free (self->georef);
  self->georef = NULL;
  g_clear_pointer (&self->tiff_dir, g_free);
  g_clear_pointer (&self->source_pattern, g_free);
  self->have_vinfo = FALSE;
  return TRUE;
}

static void
gst_georeg_export_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  GstGeoregExport *self = GST_GEOREG_EXPORT (object);
  GST_OBJECT_LOCK (self);
  if (gst_georeg_map_props_set (&self->map, PROP_CONTROL_LOCATION, prop_id, value)) {
    GST_OBJECT_UNLOCK (self);
    return;
  }
  switch (prop_id) {
    case PROP_GEOJSON_LOCATION:
      g_free (self->geojson_location);
      self->geojson_location = g_value_dup_string (value);
      break;
    case PROP_GEOJSON_FORM:
      self->geojson_form = g_value_get_enum (value);
      break;
    case PROP_CSV_LOCATION:
      g_free (self->csv_location);
      self->csv_location = g_value_dup_string (value);
      break;
    case PROP_GEOTIFF_DIR:
      g_free (self->geotiff_dir);
      self->geotiff_dir = g_value_dup_string (value);
      break;
    case PROP_GEOTIFF_FORMAT:
      self->geotiff_format = g_value_get_enum (value);
      break;
    case PROP_MAX_GEOTIFF_PIXELS:
      self->max_geotiff_pixels = g_value_get_uint64 (value);
      break;
    case PROP_SOURCE_LOCATION:
      g_free (self->source_location);
      self->source_location = g_value_dup_string (value);
      break;
    case PROP_PICTURE_LOCATION:
      g_free (self->picture_location);
      self->picture_location = g_value_dup_string (value);
      break;
    case PROP_MOSAIC_LOCATION:
      g_free (self->mosaic_location);
      self->mosaic_location = g_value_dup_string (value);
      break;
    case PROP_MOSAIC_EVERY:
      self->mosaic_every_prop = g_value_get_uint (value);
      break;
    case PROP_POST_MESSAGES:
      self->post_messages = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_georeg_export_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstGeoregExport *self = GST_GEOREG_EXPORT (object);
  GST_OBJECT_LOCK (self);
  if (gst_georeg_map_props_get (&self->map, PROP_CONTROL_LOCATION, prop_id, value)) {
    GST_OBJECT_UNLOCK (self);
    return;
  }
  switch (prop_id) {
    case PROP_GEOJSON_LOCATION:
      g_value_set_string (value, self->geojson_location);
      break;
    case PROP_GEOJSON_FORM:
      g_value_set_enum (value, self->geojson_form);
      break;
    case PROP_CSV_LOCATION:
      g_value_set_string (value, self->csv_location);
      break;
    case PROP_GEOTIFF_DIR:
      g_value_set_string (value, self->geotiff_dir);
      break;
    case PROP_GEOTIFF_FORMAT:
      g_value_set_enum (value, self->geotiff_format);
      break;
    case PROP_MAX_GEOTIFF_PIXELS:
      g_value_set_uint64 (value, self->max_geotiff_pixels);
      break;
    case PROP_SOURCE_LOCATION:
      g_value_set_string (value, self->source_location);
      break;
    case PROP_PICTURE_LOCATION:
      g_value_set_string (value, self->picture_location);
      break;
    case PROP_MOSAIC_LOCATION:
      g_value_set_string (value, self->mosaic_location);
      break;
    case PROP_MOSAIC_EVERY:
      g_value_set_uint (value, self->mosaic_every_prop);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, self->post_messages);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_georeg_export_finalize (GObject * object)
{
  GstGeoregExport *self = GST_GEOREG_EXPORT (object);
  gst_georeg_map_props_clear (&self->map);
  g_free (self->geojson_location);
  g_free (self->csv_location);
  g_free (self->geotiff_dir);
  g_free (self->source_location);
  g_free (self->picture_location);
  g_free (self->mosaic_location);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_georeg_export_class_init (GstGeoregExportClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *bt_class = GST_BASE_TRANSFORM_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;

  gobject_class->set_property = gst_georeg_export_set_property;
  gobject_class->get_property = gst_georeg_export_get_property;
  gobject_class->finalize = gst_georeg_export_finalize;

  gst_georeg_map_props_install (gobject_class, PROP_CONTROL_LOCATION);
  g_object_class_install_property (gobject_class, PROP_GEOJSON_LOCATION,
      g_param_spec_string ("geojson-location", "GeoJSON file",
          "Write the frame footprints here as GeoJSON (RFC 7946: WGS84 longitude, latitude), "
          "one Feature per frame, valid after every frame; NULL = none", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_GEOJSON_FORM,
      g_param_spec_enum ("geojson-form", "GeoJSON form",
          "One FeatureCollection, or a GeoJSON text sequence (RFC 8142) for live streams",
          GST_TYPE_GEOREG_EXPORT_GEOJSON_FORM, GST_GEOREG_EXPORT_GEOJSON_COLLECTION, rw));
  g_object_class_install_property (gobject_class, PROP_CSV_LOCATION,
      g_param_spec_string ("csv-location", "CSV file",
          "Write one line per frame here (centre and corners in degrees and in map units, "
          "quality, inliers, heading in degrees, GSD in metres); NULL = none", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_GEOTIFF_DIR,
      g_param_spec_string ("geotiff-dir", "GeoTIFF folder",
          "Write each registered frame here as a georeferenced GeoTIFF, resampled onto the "
          "control's map grid (its CRS and pixel size), alpha band 0 outside the frame; "
          "NULL = none", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_GEOTIFF_FORMAT,
      g_param_spec_enum ("geotiff-format", "GeoTIFF format", "Cloud Optimized or plain tiled",
          GST_TYPE_GEOREG_EXPORT_GEOTIFF_FORMAT, GST_GEOREG_EXPORT_GEOTIFF_COG, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_GEOTIFF_PIXELS,
      g_param_spec_uint64 ("max-geotiff-pixels", "Largest GeoTIFF",
          "Skip (with a warning) a GeoTIFF larger than this many map pixels (a transform "
          "that stretches the frame far over the map)", 1, G_MAXUINT32,
          DEFAULT_MAX_GEOTIFF_PIXELS, rw));
  g_object_class_install_property (gobject_class, PROP_SOURCE_LOCATION,
      g_param_spec_string ("source-location", "Source file names",
          "File name of each frame, for the 'file' field and the GeoTIFF names: a pattern "
          "with the frame number, as multifilesrc's location (e.g. frames/frame_%04d.png); "
          "a name tagged on the frame (georeg_buffer_set_source_location) wins; NULL = "
          "unknown", NULL, rw));

  g_object_class_install_property (gobject_class, PROP_PICTURE_LOCATION,
      g_param_spec_string ("picture-location", "Footprint picture",
          "Draw the footprints over the control (gray) as a PNG, registered frames in "
          "green, flagged ones in red (a cross where only a coarse position exists); "
          "written at end of stream; NULL = none", NULL, rw));

  g_object_class_install_property (gobject_class, PROP_MOSAIC_LOCATION,
      g_param_spec_string ("mosaic-location", "Mosaic GeoTIFF",
          "Write a growing mosaic of the registered frames here (GeoTIFF on the control's "
          "grid, the newest frame on top, alpha 0 where no frame has data), rewritten "
          "every mosaic-every frames and at end of stream; NULL = none", NULL, rw));
  g_object_class_install_property (gobject_class, PROP_MOSAIC_EVERY,
      g_param_spec_uint ("mosaic-every", "Mosaic period",
          "Rewrite the mosaic after this many registered frames (0 = only at end of "
          "stream)", 0, G_MAXUINT, 10, rw));

  g_object_class_install_property (gobject_class, PROP_POST_MESSAGES,
      gst_georeg_param_spec_post_messages (GST_PARAM_MUTABLE_PLAYING));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Georegistration export",
      "Filter/Metadata",
      "Writes the frames' registration results (nmiregister, nmilocalize metas) as GIS "
      "files: GeoJSON footprints in WGS84, CSV, and one georeferenced GeoTIFF per frame "
      "in the control's CRS.  Passes the frames through unchanged", "georeg");

  bt_class->transform_ip = GST_DEBUG_FUNCPTR (gst_georeg_export_transform_ip);
  bt_class->set_caps = GST_DEBUG_FUNCPTR (gst_georeg_export_set_caps);
  bt_class->start = GST_DEBUG_FUNCPTR (gst_georeg_export_start);
  bt_class->stop = GST_DEBUG_FUNCPTR (gst_georeg_export_stop);
  bt_class->sink_event = GST_DEBUG_FUNCPTR (gst_georeg_export_sink_event);
  bt_class->transform_ip_on_passthrough = TRUE;

  gst_type_mark_as_plugin_api (GST_TYPE_GEOREG_EXPORT_GEOJSON_FORM, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GEOREG_EXPORT_GEOTIFF_FORMAT, 0);
  GST_DEBUG_CATEGORY_INIT (gst_georeg_export_debug, "georegexport", 0,
      "georeg results as GIS files");
}

static void
gst_georeg_export_init (GstGeoregExport * self)
{
  self->max_geotiff_pixels = DEFAULT_MAX_GEOTIFF_PIXELS;
  self->mosaic_every_prop = 10;
  self->post_messages = GST_GEOREG_DEFAULT_POST_MESSAGES;
  gst_base_transform_set_passthrough (GST_BASE_TRANSFORM (self), TRUE);
}
