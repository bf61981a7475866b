/* Cores shared between concurrent parallel regions (threadshare.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "threadshare.h"

#include <omp.h>

static int active_regions;      /* in every thread of the process */

int
gr_thread_share_enter (int requested)
{
  const int others = __atomic_fetch_add (&active_regions, 1, __ATOMIC_RELAXED);
  if (requested > 0)
    return requested;
  const int share = omp_get_max_threads () / (others + 1);
  return share > 0 ? share : 1;
}

void
gr_thread_share_leave (void)
{
  __atomic_fetch_sub (&active_regions, 1, __ATOMIC_RELAXED);
}
