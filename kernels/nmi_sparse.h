/* Sparse NMI matching: for a batch of keypoints, a small template (default 11 x 11)
 * cut around each keypoint of a frame is scored by normalized mutual information
 *   NMI = (H(A) + H(B)) / H(A,B)
 * at every offset of a window (default 73 x 73) of the control image around the
 * keypoint's predicted place: (73 - 11 + 1)^2 = 3,969 offsets.  Each score uses the
 * exact joint histogram of the template's jointly valid pixels (at most 121 distinct
 * pairs) with 256 bins per marginal, the marginals over the same pixels, as in
 * nmi_dense.h: NMI lies in [1, 2], 1 when H(A,B) = 0 (both constant there).  The
 * best offset is refined to sub-pixel precision (a parabola per axis, as
 * gr_find_peak) and rated by the separated second peak.
 *
 * Geometry.  Pixel-index coordinates (the centre of pixel (0, 0) is (0, 0)).  A query
 * names the control pixel (cx, cy) where the template's centre pixel sits at zero
 * displacement; the window spans control pixels cx - W/2 .. cx + W/2 (W odd) and
 * displacements d run over -R .. R per axis, R = (W - T) / 2.  So the template's
 * centre pixel lands on control pixel (cx + dx, cy + dy).  Window pixels outside the
 * control, or masked in the control, are invalid: they take no part in the
 * histograms (a window may leave the control; such matches are flagged).
 *
 * Exactness.  Entropies are sums of c ln c over histogram counts c; both backends
 * keep those sums as integers (c ln c in units of 2^-40, rounded once per count
 * value), so the sums are exact in any order and the CUDA and CPU backends produce
 * bit-identical scores and the same best offsets.  Against a float64 reference the
 * scores agree to about 1e-12 relative.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_NMI_SPARSE_H
#define GR_NMI_SPARSE_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_NMI_SPARSE_MAX_TEMPLATE 15     /* template side, odd, 3 .. 15 */
#define GR_NMI_SPARSE_MAX_WINDOW 129      /* window side, odd, template .. 129 */

typedef struct {
  int template_size;   /* T: odd, 3 .. 15 (default 11) */
  int window_size;     /* W: odd, T .. 129 (default 73) */
  int min_valid;       /* offsets with fewer jointly valid pixels are not scored (NAN);
                          0 = half the template's pixels, rounded up (default 0) */
  int peak_exclusion;  /* Chebyshev radius around the best offset inside which no
                          second peak is sought (>= 1, default 2) */
} GrNmiSparseParams;

void gr_nmi_sparse_params_init (GrNmiSparseParams *p);

typedef struct {
  int32_t x, y;        /* control pixel under the template's centre at zero displacement */
} GrNmiSparseQuery;

typedef enum {
  GR_NMI_SPARSE_NO_SCORE = 1 << 0,     /* no offset had min_valid jointly valid pixels */
  GR_NMI_SPARSE_AT_BORDER = 1 << 1,    /* best offset on the window's edge (not refined
                                          on that axis; the match may lie beyond) */
  GR_NMI_SPARSE_NO_SECOND = 1 << 2,    /* no local maximum outside the exclusion radius */
  GR_NMI_SPARSE_CLIPPED = 1 << 3,      /* part of the window lies outside the control
                                          or is masked there */
  GR_NMI_SPARSE_FLAT = 1 << 4,         /* the template's valid pixels share one value:
                                          H(A) = 0, every score is 1 */
} GrNmiSparseFlags;

typedef struct {
  int ix, iy;          /* best integer displacement, -R .. R (0, 0 when NO_SCORE) */
  double dx, dy;       /* sub-pixel displacement (NAN when NO_SCORE) */
  double score;        /* NMI at (ix, iy) */
  double second;       /* best separated local maximum (NAN when none) */
  double ratio;        /* (score - 1) / (second - 1); INFINITY when second <= 1,
                          NAN when no second */
  int32_t valid;       /* jointly valid pixels at (ix, iy) */
  uint32_t flags;      /* GrNmiSparseFlags */
} GrNmiSparseMatch;

/* One engine: owns the control (uploaded once for CUDA) and scratch.  Not
 * thread-safe: one per thread. */
typedef struct GrNmiSparse GrNmiSparse;

/* backend AUTO picks CUDA when gr_cuda_device_count () > 0 (device cuda_device, -1 =
 * device 0), else CPU.  CUDA asked for and not available: NULL and *status =
 * GR_ERR_NO_CUDA. */
GrNmiSparse *gr_nmi_sparse_new (GrBackend backend, int cuda_device, GrStatus *status,
    char *errbuf, size_t errlen);
void gr_nmi_sparse_free (GrNmiSparse *nmi);
GrBackend gr_nmi_sparse_backend (const GrNmiSparse *nmi);
void gr_nmi_sparse_set_threads (GrNmiSparse *nmi, int threads);   /* CPU; 0 = default */

/* Copies the control (and its mask: nonzero = valid) into the engine (the device for
 * CUDA); it stays resident until replaced. */
GrStatus gr_nmi_sparse_set_control (GrNmiSparse *nmi, const GrImage8 *control,
    char *errbuf, size_t errlen);

/* Scores n templates.  templates: n * T * T bytes (template k at k * T * T,
 * row-major); tmasks: the same layout, nonzero = valid, or NULL (all valid).
 * queries: n window centres.  out: n results.  maps (may be NULL): n * P * P doubles
 * (P = W - T + 1), map k row-major by displacement dy then dx, NAN where not scored.
 * n = 0 is valid and does nothing. */
GrStatus gr_nmi_sparse_run (GrNmiSparse *nmi, const GrNmiSparseParams *params,
    const uint8_t *templates, const uint8_t *tmasks, const GrNmiSparseQuery *queries,
    int n, GrNmiSparseMatch *out, double *maps, char *errbuf, size_t errlen);

/* Device time of the last CUDA run's kernel in milliseconds (CUDA events), or -1
 * (CPU backend, or timing unavailable). */
double gr_nmi_sparse_last_kernel_ms (const GrNmiSparse *nmi);

/* Cuts T x T templates centred on integer pixels (xy[2k], xy[2k+1]) of img into the
 * layout gr_nmi_sparse_run reads; pixels outside img or masked are invalid (mask 0,
 * value 0).  tmasks may be NULL when the caller knows every pixel is valid. */
GrStatus gr_nmi_sparse_cut_templates (const GrImage8 *img, int template_size,
    const int32_t *xy, int n, uint8_t *templates, uint8_t *tmasks);

/* ---- Inputs already in device memory (CUDA engine only; a CPU engine answers
 * GR_ERR_INVALID).  Pointers are of the engine's device, in its primary context; work
 * that wrote them must be finished (synchronized) before the call.  The results are
 * those of gr_nmi_sparse_run on the same bytes (the same kernel). */

/* Uses a control image that lies in device memory, packed (stride = width), mask
 * packed 0/1 or NULL (all valid); vmax: the largest value of a valid control pixel
 * (it sizes the histograms, as gr_nmi_sparse_set_control finds it).  The engine
 * borrows the buffers: they must outlive its use of them (the next set_control or
 * gr_nmi_sparse_free); it never frees them.  Shared device controls
 * (gst/gstgeoregcontrolcuda.h) are handed to engines this way. */
GrStatus gr_nmi_sparse_set_control_device (GrNmiSparse *nmi, const uint8_t *d_pix,
    const uint8_t *d_mask, int width, int height, int vmax, char *errbuf, size_t errlen);

/* gr_nmi_sparse_run with the templates (and masks, or NULL) in device memory. */
GrStatus gr_nmi_sparse_run_device (GrNmiSparse *nmi, const GrNmiSparseParams *params,
    const uint8_t *d_templates, const uint8_t *d_tmasks, const GrNmiSparseQuery *queries,
    int n, GrNmiSparseMatch *out, char *errbuf, size_t errlen);

/* Cuts the templates on the device from an 8-bit image in device memory (d_img's
 * pointers are device pointers), with gr_nmi_sparse_cut_templates's semantics
 * (centres xy[2k], xy[2k + 1] on the host; pixels outside or masked invalid, value 0),
 * then runs: only the centres and queries go up, only the results come back.
 * with_masks false: no template masks (as gr_nmi_sparse_run with tmasks NULL; for
 * callers that know every pixel is valid). */
GrStatus gr_nmi_sparse_run_cut_device (GrNmiSparse *nmi, const GrNmiSparseParams *params,
    const GrImage8 *d_img, const int32_t *xy, bool with_masks,
    const GrNmiSparseQuery *queries, int n, GrNmiSparseMatch *out, char *errbuf,
    size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
