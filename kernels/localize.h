/* Coarse localization of a frame over a control image at any heading and any ground
 * resolution: where the frame lies, which way it faces and how large its pixels are
 * on the control, before a fine registration (nmi_sparse + fit) refines it.
 *
 * Method.  The frame is area-downscaled to a small template (about coarse_size pixels
 * on its long side), rotated to each candidate heading (the corners it leaves empty
 * are masked), and scored against the control, area-downscaled so that both share one
 * grid for the candidate scale, by the dense NMI search (nmi_dense.h, overlap-weighted,
 * so places where the frame hangs over the control's edge or no-data do not win).
 * Without a heading prior the headings sweep the full circle (`headings` steps); with
 * one they cover its uncertainty.  Without a scale prior, scales from scale_min to
 * scale_max in steps of 2^(1/3) are searched.  The best (heading, scale, place) is
 * then refined at fine_size over a small window with finer heading and scale steps
 * (parabolas through the neighbouring scores).  When the coarse best is doubtful (its
 * peak ratio below min_peak_ratio), the next best hypotheses at distinct places (up to
 * four in all) are refined too, re-scored with templates of one size, and the best
 * there wins; its ratio to the others is then held to min_fine_ratio.  A prior
 * position limits the search window to 3 sigma around it.
 *
 * A sweep (heading or scale unknown) does more, since among hundreds of maps a lead
 * at the coarse level is weak evidence: it keeps several places per (heading, scale)
 * map and scores the best distinct ones again at the coarse size on a grid a third as
 * coarse around their cells (coarse_peaks, shortlist: the coarse NMI peak is
 * narrower than the grid's step, so the right hypothesis can sit below wrong ones
 * until its cell is refined), and it always sends its best four distinct places to
 * the fine level.  When the candidates' fine scores are too close to tell (ratio
 * below min_fine_ratio), each is registered as gr_localize_refine would (verify):
 * one with at least twice the inliers of every other place wins, and the result is
 * VERIFIED instead of AMBIGUOUS.
 *
 * The searches run on the dense NMI engine's backend (CPU with OpenMP, or CUDA, where
 * the control of each level stays resident on the device).
 *
 * Coordinates: pixel-corner ((0, 0) is the top-left corner of the top-left pixel) in
 * full-resolution frame and control pixels, as gst/georeg-meta.h.  Headings: the
 * frame's up (-y) direction on the control, degrees clockwise from the control's up.
 * Scale: control pixels per frame pixel.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_LOCALIZE_H
#define GR_LOCALIZE_H

#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What is known about the frame before the search.  Each part is optional. */
typedef struct {
  bool has_position;
  double x, y;                /* control position of the frame centre */
  double position_sigma;      /* its 1-sigma uncertainty, control pixels (> 0) */
  bool has_heading;
  double heading_deg;
  double heading_sigma_deg;   /* > 0 */
  bool has_scale;
  double scale;               /* control px per frame px */
  double scale_sigma;         /* relative (0.1 = 10%), >= 0 */
} GrLocalizePrior;

/* A prior from a frame->control homography of a width x height frame (its centre,
 * heading and scale at the centre) with the given uncertainties.  false when the
 * homography is not finite or maps the centre to infinity. */
bool gr_localize_prior_from_homography (GrLocalizePrior *prior, const double h[9],
    int width, int height, double position_sigma, double heading_sigma_deg,
    double scale_sigma);

/* Heading (degrees clockwise, [0, 360)) and scale (control px per frame px) of a
 * frame->control homography at frame position (u, v); false when not finite. */
bool gr_homography_heading_scale (const double h[9], double u, double v,
    double *heading_deg, double *scale);

typedef struct {
  double scale_min, scale_max;  /* scale range without a scale prior (0.25 .. 4) */
  int headings;                 /* sweep steps over 360 degrees (36) */
  int coarse_size;              /* template long side at the coarse level, px (48) */
  int coarse_peaks;             /* a sweep (heading or scale unknown): places kept per
                                   coarse (heading, scale) map, 1 ..
                                   GR_LOCALIZE_MAX_PEAKS (4) */
  int shortlist;                /* a sweep: the best distinct coarse places scored
                                   again between the grid's headings and scales
                                   (16; 0 = none) */
  int verify;                   /* several candidates compared at the fine level: each
                                   registered (gr_localize_refine's rounds) and a
                                   decisive difference in inliers chooses (1; 0 =
                                   NMI alone) */
  int feature_places;           /* a sweep whose candidates stay too close to tell:
                                   the frame is also matched by descriptors at each
                                   searched scale and up to this many of the best
                                   supported similarities join the candidates (2; 0
                                   = none; kernels/localize_features.h) */
  int fine_size;                /* template long side at the fine level, px (128) */
  int levels;                   /* grey levels of templates larger than
                                   coarse_size (the fine level, the candidates'
                                   comparison), 2 .. 256 (32): few levels keep small
                                   templates' joint histograms meaningful */
  int coarse_levels;            /* grey levels at the coarse size, 2 .. 256 (24): a
                                   48 px template has about 1,700 samples, too few
                                   for 32 x 32 joint bins */
  double min_overlap;           /* below this valid-overlap fraction LOW_OVERLAP (0.5) */
  double min_peak_ratio;        /* below this peak ratio AMBIGUOUS (1.05) */
  double min_fine_ratio;        /* when a doubtful coarse result sent several
                                   candidates to the fine level: below this ratio of
                                   the winner's fine score to the best other place's,
                                   AMBIGUOUS (1.3; never below min_peak_ratio) */
  int threads;                  /* CPU threads, 0 = OpenMP's default */
} GrLocalizeParams;

#define GR_LOCALIZE_MAX_PEAKS 8

void gr_localize_params_init (GrLocalizeParams *p);

/* The same bit values as GstNmiLocalizeFlags (gst/georeg-meta.h), so elements copy. */
typedef enum {
  GR_LOCALIZE_NO_VALID_PIXELS = 1 << 0,
  GR_LOCALIZE_NO_OVERLAP = 1 << 1,
  GR_LOCALIZE_AT_BORDER = 1 << 2,       /* best place on the search window's edge */
  GR_LOCALIZE_AMBIGUOUS = 1 << 3,       /* peak ratio below min_peak_ratio */
  GR_LOCALIZE_NO_SECOND_PEAK = 1 << 4,
  GR_LOCALIZE_HEADING_SEARCHED = 1 << 5,
  GR_LOCALIZE_SCALE_SEARCHED = 1 << 6,
  GR_LOCALIZE_LOW_OVERLAP = 1 << 7,
  GR_LOCALIZE_PRIOR_USED = 1 << 8,
  GR_LOCALIZE_IMPLAUSIBLE = 1 << 9,     /* heading or scale beyond 3 sigma of the prior */
  GR_LOCALIZE_VERIFIED = 1 << 10,       /* candidates told apart by registering them
                                           (verify): no AMBIGUOUS from their scores */
} GrLocalizeFlags;

typedef struct {
  double h[9];           /* frame -> control similarity, pixel-corner, h[8] = 1; NAN
                            when NO_VALID_PIXELS or NO_OVERLAP */
  double x, y;           /* control position of the frame centre */
  double heading_deg;    /* [0, 360) */
  double scale;          /* control px per frame px */
  double score;          /* overlap-weighted NMI at the best place, fine level */
  double second;         /* best separated second peak there (NAN if none); when
                            candidates were compared, the best other candidate's
                            score with the templates they shared */
  double peak_ratio;     /* (score - 1) / (second - 1), the winner's score taken
                            alike with second's */
  double overlap;        /* valid-overlap fraction of the frame's valid pixels */
  double search_scale;   /* fine level: search pixels per control pixel */
  unsigned flags;        /* GrLocalizeFlags */
  int searches;          /* dense NMI searches run */
  int levels_built;      /* control levels made for this run (first use of a search
                            scale on this control), and the time that took, ms: the
                            cost of a new scale or a new window, apart from the search */
  double levels_ms;
  /* where the run's time went, ms: the coarse level's hypotheses, then the fine level
   * and the comparison of candidates; the frame's downscales and the levels made are
   * counted inside those two as well */
  double coarse_ms, fine_ms, downscale_ms;
  /* of coarse_ms, the shortlist's re-scoring between the grid's cells; of the whole,
   * the time inside the dense NMI engine's runs (on CUDA: copies, launches, waits) */
  double shortlist_ms, search_ms;
  int downscales;        /* downscales of the frame made (each reads the whole frame) */
  /* feature_places: the similarities that joined the candidates, the scales matched,
   * and their time (ms, inside fine_ms) */
  int feature_places, feature_scales;
  double feature_ms;
  /* the host's share of the searches, ms: templates made (the frame's downscale
   * turned to each heading and put into grey levels; downscales and levels apart) and
   * score maps read (their peaks) */
  double prepare_ms, read_ms;
} GrLocalizeResult;

typedef struct GrLocalize GrLocalize;

/* backend as gr_nmi_dense_new (AUTO: CUDA when usable, else CPU). */
GrLocalize *gr_localize_new (GrBackend backend, int cuda_device, GrStatus *status,
    char *errbuf, size_t errlen);
void gr_localize_free (GrLocalize *loc);
GrBackend gr_localize_backend (const GrLocalize *loc);

/* Copies the control (float values, mask nonzero = valid or NULL); earlier levels are
 * dropped. */
GrStatus gr_localize_set_control (GrLocalize *loc, const GrPlaneF *control,
    char *errbuf, size_t errlen);
/* The control's grey levels from the fixed value range [lo, hi] (clamped outside)
 * instead of the 1st..99th percentile of each search level; hi <= lo goes back to the
 * percentiles.  It outlives set_control(_ref).  A control read in windows keeps one
 * range as its windows slide: with each window's own percentiles a place changed its
 * levels with the window around it, and a frame the whole control placed right was
 * swept and lost on a smaller window (issue 18's flight, frame 9).  Built levels are
 * dropped when the range changes.  GR_ERR_INVALID for a non-finite bound. */
GrStatus gr_localize_set_control_range (GrLocalize *loc, double lo, double hi);

/* The same without the copy: the plane is borrowed and must stay alive and unchanged
 * until the next set_control(_ref) or gr_localize_free (a shared control, or a window
 * the caller holds: a 4K flight's window is 14 M pixels, copied at every slide).  On
 * any return the previous control is no longer read. */
GrStatus gr_localize_set_control_ref (GrLocalize *loc, const GrPlaneF *control,
    char *errbuf, size_t errlen);

/* Localizes one frame (float values, mask or NULL).  prior may be NULL.  Returns an
 * error only for bad arguments, memory or a failing backend; a frame that cannot be
 * placed comes back GR_OK with its flags. */
GrStatus gr_localize_run (GrLocalize *loc, const GrPlaneF *frame,
    const GrLocalizePrior *prior, const GrLocalizeParams *params,
    GrLocalizeResult *out, char *errbuf, size_t errlen);

/* The frame's area downscale at `scale` (0 < scale <= 1) into *out (a plane the
 * caller zeroed or a previous result; gr_plane_alloc'd, freed by the localizer with
 * gr_plane_clear), equal to gr_plane_downscale of the frame bit for bit, e.g. made on
 * the GPU where the frame already is (frame_cuda.h).  GR_OK or an error. */
typedef GrStatus (*GrLocalizeDownscaleFunc) (void *user, double scale, GrPlaneF *out,
    char *errbuf, size_t errlen);

/* gr_localize_run for a width x height frame of which `valid` pixels are valid, read
 * only through its downscales (the search never needs its full-resolution pixels):
 * the same result as gr_localize_run on the frame itself when `downscale` gives
 * gr_plane_downscale's planes.  A frame on the GPU then never comes to the host
 * whole (nmilocalize with a pose prior on CUDA). */
GrStatus gr_localize_run_downscaled (GrLocalize *loc, int width, int height,
    size_t valid, GrLocalizeDownscaleFunc downscale, void *user,
    const GrLocalizePrior *prior, const GrLocalizeParams *params, GrLocalizeResult *out,
    char *errbuf, size_t errlen);

/* ---- Fine registration from a coarse result: the frame is warped onto the control's
 * grid at the coarser of the two resolutions (the control area-downscaled when it is
 * finer, the frame when it is), templates on a regular grid of the warped frame are
 * matched by sparse NMI (nmi_sparse.h) in windows around their predicted places, and
 * a homography is fitted (LO-RANSAC, fit.h); repeated from the new estimate, with a
 * shrinking window.  The result is checked by gr_fit_check_plausible against the
 * coarse scale and heading. */
typedef struct {
  int iterations;          /* warp-match-fit rounds (3) */
  int spacing;             /* grid step of the templates in the warped frame, px (12);
                              denser (down to 4) on small footprints */
  int template_size;       /* odd, 3 .. 15 (11) */
  int window_size;         /* first round's window, odd (41); later rounds 21 */
  double threshold;        /* RANSAC inlier threshold, working-grid px (1.0) */
  int min_inliers;         /* fewer: LOW_INLIERS (12) */
} GrRefineParams;

void gr_refine_params_init (GrRefineParams *p);

typedef enum {
  GR_REFINE_LOW_INLIERS = 1 << 8,     /* too few consistent matches: h is the input */
  /* bits 0..5: GrPlausibleFlags of the result (fit.h) */
} GrRefineFlags;

typedef struct {
  double h[9];             /* frame -> control homography, pixel-corner, h[8] = 1 */
  int matches, inliers;
  double rms;              /* of the fit, working-grid px (not an accuracy measure) */
  double work_scale;       /* working grid px per control px */
  unsigned flags;          /* GrRefineFlags | GrPlausibleFlags */
} GrRefineResult;

/* Refines h_coarse (frame -> control, pixel-corner) against the control set on loc.
 * backend of the sparse engine: loc's. */
GrStatus gr_localize_refine (GrLocalize *loc, const GrPlaneF *frame,
    const double h_coarse[9], const GrRefineParams *params, GrRefineResult *out,
    char *errbuf, size_t errlen);

/* gr_localize_refine for a width x height frame read only through its downscale
 * (GrLocalizeDownscaleFunc, at most 1: scale 1 is the frame itself), as
 * gr_localize_run_downscaled reads it: nmilocalize checks a translation result so. */
GrStatus gr_localize_refine_downscaled (GrLocalize *loc, int width, int height,
    GrLocalizeDownscaleFunc downscale, void *user, const double h_coarse[9],
    const GrRefineParams *params, GrRefineResult *out, char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
