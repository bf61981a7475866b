/* Dense NMI translation search: the score of a template at every translation of a
 * search region over a control image, by normalized mutual information
 *   NMI = (H(A) + H(B)) / H(A,B)
 * on the full 256 x 256 = 65,536-bin joint histogram of the pixels valid in both
 * images at that translation (the marginals are taken over the same pixels).
 * NMI lies in [1, 2]; 1 means independent.  When H(A,B) = 0 (both constant over the
 * overlap) the score is 1: no information.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_NMI_DENSE_H
#define GR_NMI_DENSE_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Translations (dx, dy) place the template's top-left pixel at control pixel (dx, dy).
 * Both ranges are half-open: x0 <= dx < x1, y0 <= dy < y1.  The template must lie
 * wholly inside the control at every translation of the region:
 * 0 <= x0, x1 - 1 + template_width <= control_width, same for y. */
typedef struct {
  int x0, y0, x1, y1;
} GrRegion;

/* What gr_nmi_dense_run writes as the score of a translation. */
typedef enum {
  /* overlap-weighted (the default): 1 + (NMI - 1) * n / n_template, n the jointly
   * valid pixels and n_template the template's valid pixels.  Plain NMI over a small
   * overlap is biased high (fewer samples spread over 65,536 bins look more
   * dependent), so a frame hanging over the control's edge or no-data would outscore
   * its true place; weighting by the overlap fraction removes that preference and
   * leaves every fully overlapping translation's score unchanged. */
  GR_NMI_SCORE_OVERLAP_WEIGHTED = 0,
  /* plain NMI over the jointly valid pixels */
  GR_NMI_SCORE_PLAIN = 1,
} GrNmiScore;

/* One search engine: owns the control image (uploaded once for CUDA), scratch and,
 * for CUDA, the device buffers and the stream.  Not thread-safe: one per thread. */
typedef struct GrNmiDense GrNmiDense;

/* backend AUTO picks CUDA when gr_cuda_device_count() > 0 (device cuda_device, -1 =
 * device 0), else CPU; with AUTO, a CUDA engine that cannot be created falls back to
 * the CPU (the reason in errbuf).  CUDA asked for and not available: NULL and *status
 * = GR_ERR_NO_CUDA.  errbuf (may be NULL) receives a reason on failure. */
GrNmiDense *gr_nmi_dense_new (GrBackend backend, int cuda_device, GrStatus *status,
    char *errbuf, size_t errlen);
void gr_nmi_dense_free (GrNmiDense *nmi);

/* The backend actually used (never AUTO). */
GrBackend gr_nmi_dense_backend (const GrNmiDense *nmi);

/* CPU threads used by the CPU backend (0 = OpenMP's default). */
void gr_nmi_dense_set_threads (GrNmiDense *nmi, int threads);

/* The score written by gr_nmi_dense_run (default GR_NMI_SCORE_OVERLAP_WEIGHTED).  The
 * weighting runs on the host after either backend, so CPU and CUDA agree exactly as
 * their plain scores do. */
void gr_nmi_dense_set_score (GrNmiDense *nmi, GrNmiScore score);

/* Overlap weighting of one plain score (what GR_NMI_SCORE_OVERLAP_WEIGHTED applies):
 * NAN stays NAN; template_valid <= 0 gives NAN. */
double gr_nmi_overlap_weighted (double nmi, long valid, long template_valid);

/* Copies the control (and its mask); replaces any earlier one.  An engine made with
 * AUTO whose device cannot take the control (a CUDA error, e.g. out of device memory)
 * falls back to the CPU and returns GR_OK, the reason in errbuf; gr_nmi_dense_backend
 * then says CPU.  A failing search (gr_nmi_dense_run) is an error, never a fallback. */
GrStatus gr_nmi_dense_set_control (GrNmiDense *nmi, const GrImage8 *control,
    char *errbuf, size_t errlen);

/* Scores every translation of region.  scores: (x1-x0)*(y1-y0) doubles, row-major by
 * dy then dx.  valid (may be NULL): the number of pixels valid in both at each
 * translation.  Translations with fewer than min_valid (>= 1) such pixels get NAN.
 * Scores are overlap-weighted unless gr_nmi_dense_set_score says otherwise.
 * The template is copied per call; the control stays resident. */
GrStatus gr_nmi_dense_run (GrNmiDense *nmi, const GrImage8 *templ, GrRegion region,
    int min_valid, double *scores, int32_t *valid, char *errbuf, size_t errlen);

/* One search of a batch: gr_nmi_dense_run's arguments. */
typedef struct {
  const GrImage8 *templ;
  GrRegion region;
  int min_valid;
  double *scores;         /* out */
  int32_t *valid;         /* out, may be NULL */
} GrNmiDenseJob;

/* The n searches of jobs, each with exactly the results gr_nmi_dense_run gives it.  On
 * CUDA the templates go up in one copy, the searches run back to back and the maps
 * come back in one copy after one wait: a windowed search is mostly that round trip
 * (the sweep's shortlist runs 100 or more of a few dozen translations each).  A job
 * that fails validation fails the batch before anything runs. */
GrStatus gr_nmi_dense_run_batch (GrNmiDense *nmi, const GrNmiDenseJob *jobs, int n,
    char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
