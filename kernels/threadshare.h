/* The cores of the process shared between the parallel regions that run at the same
 * moment (several live streams in one process, each element's CPU work on its own
 * streaming thread).
 *
 * OpenMP gives every region that does not say otherwise a team of one thread per core.
 * Sixteen 4K streams in one process on a 64-core host put sixteen such teams on the
 * cores at once: featurematch's patch extraction, 0.7 ms a frame with four streams,
 * took 20 ms with sixteen (4 x H200 host, 2026-11-28), while the process kept 13 of 64
 * cores busy.  A region that enters here gets the cores divided by the regions running
 * now (itself included), and by the streams that joined (each live element between its
 * start and stop), at least one thread: paced streams' frames arrive together, so
 * their regions overlap, and the teams of the regions that came first would otherwise
 * keep more than their share (sixteen teams summed to about 3.4 threads a core).
 * Results must not depend on the thread count (every user of this keeps its output
 * independent of the team's size).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_THREADSHARE_H
#define GR_THREADSHARE_H

/* Registers a region about to run; returns its team size: `requested` when > 0, else
 * omp_get_max_threads () / max (regions running now, this one included; streams
 * joined), at least 1.  Pair each call with one gr_thread_share_leave (). */
int gr_thread_share_enter (int requested);
void gr_thread_share_leave (void);

/* A stream (an element that runs such regions for every frame) joins while it runs:
 * pair each join with one quit. */
void gr_thread_share_join (void);
void gr_thread_share_quit (void);

#endif
