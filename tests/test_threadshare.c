/* kernels/threadshare.h: the team a parallel region gets while other regions run and
 * streams have joined (many live streams in one process, issue 16).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include <omp.h>

#include "threadshare.h"
#include "test_check.h"

int
main (void)
{
  omp_set_num_threads (16);     /* the cores as OpenMP sees them, fixed for the test */
  const int cores = omp_get_max_threads ();
  CHECK (cores == 16, "omp_get_max_threads %d", cores);

  /* alone: every core; an explicit request wins */
  int t = gr_thread_share_enter (0);
  CHECK (t == 16, "alone: %d threads", t);
  gr_thread_share_leave ();
  t = gr_thread_share_enter (5);
  CHECK (t == 5, "requested 5: %d", t);
  gr_thread_share_leave ();

  /* regions running at once divide the cores (the one entering counts itself) */
  int a = gr_thread_share_enter (0), b = gr_thread_share_enter (0),
      c = gr_thread_share_enter (0);
  CHECK (a == 16 && b == 8 && c == 5, "three regions: %d %d %d", a, b, c);
  gr_thread_share_leave ();
  gr_thread_share_leave ();
  gr_thread_share_leave ();

  /* four streams joined: a region gets a quarter even when it runs alone, so that
   * regions arriving together never put more threads than cores to work */
  for (int i = 0; i < 4; i++)
    gr_thread_share_join ();
  t = gr_thread_share_enter (0);
  CHECK (t == 4, "4 streams, alone: %d", t);
  gr_thread_share_leave ();
  for (int i = 0; i < 4; i++)
    gr_thread_share_join ();
  a = gr_thread_share_enter (0);
  CHECK (a == 2, "8 streams: %d", a);
  gr_thread_share_leave ();
  /* more streams or regions than cores: one thread each, never none */
  for (int i = 0; i < 24; i++)
    gr_thread_share_join ();
  t = gr_thread_share_enter (0);
  CHECK (t == 1, "32 streams on 16 cores: %d", t);
  gr_thread_share_leave ();
  for (int i = 0; i < 32; i++)
    gr_thread_share_quit ();
  t = gr_thread_share_enter (0);
  CHECK (t == 16, "every stream gone: %d", t);
  gr_thread_share_leave ();
  return CHECK_DONE ();
}
