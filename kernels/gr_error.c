/* Status strings and the error-message helper: no CUDA and no other module, so that
 * the fuzz targets (tests/fuzz) can compile it beside the parsers they exercise.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>

#include "gr_common.h"

const char *
gr_status_string (GrStatus status)
{
  switch (status) {
    case GR_OK: return "ok";
    case GR_ERR_INVALID: return "invalid argument";
    case GR_ERR_NOMEM: return "out of memory";
    case GR_ERR_NO_CUDA: return "CUDA not available";
    case GR_ERR_CUDA: return "CUDA error";
    case GR_ERR_IO: return "I/O error";
    case GR_ERR_FORMAT: return "unusable file content";
  }
  return "unknown error";
}

void
gr_set_err (char *errbuf, size_t errlen, const char *fmt, ...)
{
  if (!errbuf || errlen == 0)
    return;
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (errbuf, errlen, fmt, ap);
  va_end (ap);
}
