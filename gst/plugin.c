/* georeg: plugin entry.  One GST_ELEMENT_REGISTER per element.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <gst/gst.h>

#include "gstgeoregtelemetry.h"
#include "gstnmilocalize.h"
#include "gstnmiregister.h"
#include "gstpointsetparse.h"
#include "gstpointsetenc.h"
#include "gstlandmarkshoot.h"
#include "gstfeaturematch.h"
#if GR_HAVE_GDAL
#include "gstgeoregexport.h"
#include "gstgeoregklvenc.h"
#endif

static gboolean
plugin_init (GstPlugin * plugin)
{
  gboolean ret = FALSE;

  ret |= GST_ELEMENT_REGISTER (georegtelemetry, plugin);
  ret |= GST_ELEMENT_REGISTER (nmilocalize, plugin);
  ret |= GST_ELEMENT_REGISTER (nmiregister, plugin);
  ret |= GST_ELEMENT_REGISTER (pointsetparse, plugin);
  ret |= GST_ELEMENT_REGISTER (pointsetenc, plugin);
  ret |= GST_ELEMENT_REGISTER (landmarkshoot, plugin);
  ret |= GST_ELEMENT_REGISTER (featurematch, plugin);
#if GR_HAVE_GDAL
  ret |= GST_ELEMENT_REGISTER (georegexport, plugin);
  ret |= GST_ELEMENT_REGISTER (georegklvenc, plugin);
#endif

  return ret;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, georeg,
    "Georegistration of drone imagery: NMI localization and registration, feature "
    "matching, landmark shooting (CPU and CUDA)",
    plugin_init, VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
