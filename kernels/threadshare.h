/* The cores of the process shared between the parallel regions that run at the same
 * moment (several live streams in one process, each element's CPU work on its own
 * streaming thread).
 *
 * OpenMP gives every region that does not say otherwise a team of one thread per core.
 * Sixteen 4K streams in one process on a 64-core host put sixteen such teams on the
 * cores at once: featurematch's patch extraction, 0.7 ms a frame with four streams,
 * took 20 ms with sixteen (4 x H200 host, 2026-11-28), while the process kept 13 of 64
 * cores busy.  A region that enters here gets the cores divided by the regions running
 * now (itself included), at least one.  Results must not depend on the thread count
 * (every user of this keeps its output independent of the team's size).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_THREADSHARE_H
#define GR_THREADSHARE_H

/* Registers a region about to run; returns its team size: `requested` when > 0, else
 * omp_get_max_threads () / (regions running now, this one included), at least 1.
 * Pair each call with one gr_thread_share_leave (). */
int gr_thread_share_enter (int requested);
void gr_thread_share_leave (void);

#endif
