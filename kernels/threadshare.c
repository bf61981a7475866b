/* Cores shared between concurrent parallel regions (threadshare.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "threadshare.h"

#include <omp.h>

static int active_regions;      /* in every thread of the process */
static int joined_streams;

int
gr_thread_share_enter (int requested)
{
  const int others = __atomic_fetch_add (&active_regions, 1, __ATOMIC_RELAXED);
  if (requested > 0)
    return requested;
  const int streams = __atomic_load_n (&joined_streams, __ATOMIC_RELAXED);
  const int share = omp_get_max_threads () / (streams > others + 1 ? streams : others + 1);
  return share > 0 ? share : 1;
}

void
gr_thread_share_leave (void)
{
  __atomic_fetch_sub (&active_regions, 1, __ATOMIC_RELAXED);
}

void
gr_thread_share_join (void)
{
  __atomic_fetch_add (&joined_streams, 1, __ATOMIC_RELAXED);
}

void
gr_thread_share_quit (void)
{
  __atomic_fetch_sub (&joined_streams, 1, __ATOMIC_RELAXED);
}
