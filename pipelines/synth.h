/* Synthetic drone frames with known ground truth: a procedural "aerial" control image,
 * frames cut from a control under a known transform, modality changes (band, tone
 * curve, band mix, noise, no-data borders), and the truth written to / read from CSV.
 * Plain C (no GStreamer, no GLib): linked by the georeg-synth tool, the tests, the demo
 * and the benchmarks.
 *
 * Coordinates.  Pixel-index coordinates throughout: the centre of pixel (i, j) is at
 * (i, j), so the top-left pixel's centre is (0, 0) and a plane spans
 * [-0.5, width - 0.5].  A frame-to-control homography h[9] (row-major, h[8] = 1) maps
 * frame pixel (u, v) to control position (x, y) = ((h0 u + h1 v + h2) / w,
 * (h3 u + h4 v + h5) / w), w = h6 u + h7 v + h8.  With a pure translation, frame pixel
 * (0, 0) lands on control pixel (x, y): the same convention as nmi_dense.h's
 * translations (template top-left pixel at control pixel (dx, dy)).
 * Geotransforms use GDAL order and pixel-corner coordinates (raster.h), so the map
 * position of control pixel-index position (x, y) is geo applied to (x + 0.5, y + 0.5).
 *
 * Values.  Planes hold native values: 0..maxval with maxval 255 (8-bit) or 65535
 * (16-bit).  Masks are width*height bytes, nonzero = valid.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef GR_SYNTH_H
#define GR_SYNTH_H

#include <stdio.h>
#include "gr_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_SYNTH_MAX_BANDS 4

/* ---- Deterministic random numbers (splitmix64): the same seed gives the same output
 * on every platform. */
typedef struct {
  uint64_t s;
} GrSynthRng;

void gr_synth_rng_init (GrSynthRng *rng, uint64_t seed);
uint64_t gr_synth_rng_next (GrSynthRng *rng);
double gr_synth_rng_uniform (GrSynthRng *rng);                /* [0, 1) */
double gr_synth_rng_range (GrSynthRng *rng, double lo, double hi); /* [lo, hi) */
double gr_synth_rng_gauss (GrSynthRng *rng);                  /* N(0, 1) */
/* A seed for sub-stream `index` of `seed` (frame i of a run, ...). */
uint64_t gr_synth_seed_mix (uint64_t seed, uint64_t index);

/* ---- Planes.  Allocated planes have stride = width and, when asked, a mask that
 * starts all valid.  Free with gr_synth_plane_free (free() of data and mask). */
bool gr_synth_plane_alloc (GrPlaneF *p, int width, int height, bool with_mask);
void gr_synth_plane_free (GrPlaneF *p);

/* Bilinear value at pixel-index position (x, y).  Returns false (and *value = 0) when
 * the position lies outside [0, width-1] x [0, height-1] (1e-9 tolerance) or when a
 * neighbour with a nonzero weight is masked invalid.  At an integer position only that
 * pixel is read, so integer translations copy exactly. */
bool gr_synth_sample_bilinear (const GrPlaneF *p, double x, double y, float *value);

/* No-data by value, for controls whose file carries no mask (e.g. an orthomosaic with
 * white, fully opaque no-data): a pixel is invalid where every one of the n bands
 * equals `value`, except inside connected (4-neighbour) groups of such pixels smaller
 * than min_area (saturated specks in the imagery).  mask: width*height bytes, written
 * 0 / 255, ANDed with the bands' own masks.  Returns the number of invalid pixels, or
 * -1 on bad arguments or allocation failure. */
long gr_synth_mask_from_value (const GrPlaneF *bands, int n, float value, int min_area,
    uint8_t *mask);

/* The no-data value suggested by a mask-less plane set: when the four corner pixels
 * agree in every band on one value, that value (*value) and true; else false. */
bool gr_synth_guess_nodata (const GrPlaneF *bands, int n, float *value);

/* ---- Multi-band images (the procedural control; colour frames). */
typedef struct {
  int width, height;
  int bands;                       /* 1 .. GR_SYNTH_MAX_BANDS */
  int depth;                       /* 8 or 16: values 0..255 or 0..65535 */
  float *band[GR_SYNTH_MAX_BANDS]; /* width*height floats each */
  uint8_t *mask;                   /* width*height, nonzero = valid; NULL = all valid */
  bool has_geo;
  double geo[6];                   /* GDAL order, pixel corners (see raster.h) */
} GrSynthImage;

void gr_synth_image_free (GrSynthImage *img);

/* A GrPlaneF view of band b (0-based) sharing the image's memory and mask. */
GrPlaneF gr_synth_image_plane (const GrSynthImage *img, int b);

/* ---- Procedural control. */
typedef struct {
  int width, height;     /* > 0 */
  int depth;             /* 8 or 16 */
  uint64_t seed;
  double nodata_border;  /* 0 = none; else an irregular no-data rim (mask 0, value 0)
                            up to this fraction of min(width, height), 0 .. 0.45 */
  bool with_geo;         /* fill geo[] from the three values below */
  double origin_x;       /* map x of the top-left corner (default 431000, UTM-like) */
  double origin_y;       /* map y of the top-left corner (default 4577000) */
  double pixel_size;     /* map units per pixel (default 0.1 m) */
} GrSynthControlParams;

void gr_synth_control_params_init (GrSynthControlParams *p);

/* A 3-band (R, G, B) aerial-looking image: parcels (Voronoi fields) of several land
 * covers (crop rows of various orientations and periods, meadow, bare soil, forest
 * crowns, water), hedges along parcel edges, curved roads with shoulders and dashed
 * centre lines, buildings with shadows, scattered trees, and fractal value noise at
 * several scales (illumination / moisture / grain).  Deterministic in seed.
 * out->mask is NULL unless nodata_border > 0. */
GrStatus gr_synth_control_generate (const GrSynthControlParams *p, GrSynthImage *out,
    char *errbuf, size_t errlen);

/* ---- PNG and world files (libpng). */

/* Writes 1..4 channels of 8 or 16 bits.  planes[c] are width*height floats in
 * 0..maxval (maxval: 255 or 65535 whatever the output depth: values are rescaled to
 * the output depth, rounded and clamped).  When mask is non-NULL an alpha channel is
 * appended (0 = invalid, full = valid) and invalid pixels are written as 0. */
GrStatus gr_synth_png_write (const char *path, const float *const *planes,
    int channels, const uint8_t *mask, int width, int height, double maxval,
    int out_depth, char *errbuf, size_t errlen);

/* RGB (or RGBA when the image has a mask) at the image's depth. */
GrStatus gr_synth_image_write_png (const char *path, const GrSynthImage *img,
    char *errbuf, size_t errlen);

/* Writes a 6-line world file (pixel-centre convention) for a GDAL-order geo[6]. */
GrStatus gr_synth_world_file_write (const char *path, const double geo[6],
    char *errbuf, size_t errlen);

/* The world file name of an image path: ".png" -> ".pgw", ".jpg" -> ".jgw",
 * ".tif" -> ".tfw", otherwise ".wld" appended.  Returns a malloc'ed string. */
char *gr_synth_world_file_path (const char *image_path);

/* ---- Frame geometry. */
typedef struct {
  double centre_x, centre_y;  /* control position of the frame centre
                                 ((width-1)/2, (height-1)/2) */
  double rotation_deg;        /* angle from the control's +x axis to the frame's +x
                                 axis, in control pixel coordinates (y down): positive
                                 turns the footprint clockwise on screen */
  double scale;               /* frame pixel size / control pixel size: one frame
                                 pixel step covers `scale` control pixels */
  double persp_x, persp_y;    /* perspective (1/frame-pixel units, 0 = none): frame
                                 coordinates about the centre are divided by
                                 1 + persp_x u + persp_y v before the similarity */
} GrSynthPose;

/* The frame-to-control homography of a pose for a width x height frame. */
void gr_synth_pose_homography (const GrSynthPose *pose, int width, int height,
    double h[9]);

/* A pure translation: frame pixel (0, 0) on control position (x, y). */
void gr_synth_translation_homography (double x, double y, double h[9]);

/* (x, y) = H (u, v).  Returns false when w <= 0 (behind the camera). */
bool gr_synth_homography_apply (const double h[9], double u, double v,
    double *x, double *y);

/* Cuts a width x height frame: frame pixel (u, v) takes the control's bilinear value
 * at H (u, v).  supersample n >= 1 averages n x n bilinear samples per pixel (offsets
 * within the frame pixel; use about ceil(scale) when scale > 1 against aliasing; 1 =
 * plain bilinear).  A pixel is invalid (mask 0, value 0) when any of its samples falls
 * outside the control or needs a no-data control pixel.  out is allocated with a mask. */
GrStatus gr_synth_cut (const GrPlaneF *control, const double h[9], int width,
    int height, int supersample, GrPlaneF *out);

/* ---- A drone camera: a tilted pinhole over flat ground with Brown-Conrady lens
 * distortion.  The ground is the control's plane in control pixel-index coordinates
 * (x right, y down; "north" is the control's up).  The camera looks at the ground
 * point (aim_x, aim_y) along its optical axis; at pitch = roll = 0 it looks straight
 * down (nadir) from a height of scale * focal control pixels, so one frame pixel at
 * the principal point covers `scale` control pixels. */
typedef struct {
  double k1, k2, k3;   /* radial, on normalized coordinates (pixels / focal) */
  double p1, p2;       /* tangential (OpenCV's order and signs) */
} GrSynthLens;

typedef struct {
  double aim_x, aim_y;   /* control position hit by the optical axis (frame centre) */
  double heading_deg;    /* the frame's up, clockwise from the control's up */
  double pitch_deg;      /* optical axis tilted from nadir towards the frame's up */
  double roll_deg;       /* optical axis tilted from nadir towards the frame's right */
  double scale;          /* ground resolution ratio: control px per frame px at nadir */
  double focal;          /* focal length in frame pixels; <= 0: the frame width */
  GrSynthLens lens;      /* all 0: no distortion */
} GrSynthCamera;

/* The homography from pinhole (undistorted) frame pixels to control positions for a
 * width x height frame, principal point at the frame centre ((w-1)/2, (h-1)/2).
 * Returns false for |pitch| or |roll| >= 80 degrees or scale <= 0. */
bool gr_synth_camera_homography (const GrSynthCamera *cam, int width, int height,
    double h[9]);

/* The lens: a pinhole frame pixel -> where the real (distorting) lens images it, and
 * back (Newton iterations; false when it does not converge, far outside the lens's
 * valid field). */
void gr_synth_lens_distort (const GrSynthCamera *cam, int width, int height,
    double u, double v, double *ud, double *vd);
bool gr_synth_lens_undistort (const GrSynthCamera *cam, int width, int height,
    double ud, double vd, double *u, double *v);

/* The exact truth: a pixel (u, v) of the distorted frame -> control position
 * (undistort, then the homography h of gr_synth_camera_homography).  False when the
 * pixel cannot be undistorted or its ray misses the ground. */
bool gr_synth_camera_apply (const GrSynthCamera *cam, const double h[9], int width,
    int height, double u, double v, double *x, double *y);

/* As gr_synth_cut, through the camera (distortion included). */
GrStatus gr_synth_cut_camera (const GrPlaneF *control, const GrSynthCamera *cam,
    int width, int height, int supersample, GrPlaneF *out);

/* ---- Modality changes. */

/* out = sum_i w[i] * bands[i] + offset, clamped to 0..maxval; out's mask is the AND of
 * the band masks.  All bands the same size.  out is allocated with a mask. */
GrStatus gr_synth_mix (const GrPlaneF *bands, const double *weights, int n,
    double offset, double maxval, GrPlaneF *out);

/* "NIR-like" from red and green: 0.7 G - 0.3 R + 0.3 maxval (maps 0..maxval onto
 * itself, so no clamping). */
GrStatus gr_synth_mix_nir_like (const GrPlaneF *red, const GrPlaneF *green,
    double maxval, GrPlaneF *out);

typedef enum {
  GR_SYNTH_TONE_NONE = 0,
  GR_SYNTH_TONE_GAMMA = 1,    /* v^gamma */
  GR_SYNTH_TONE_SCURVE = 2,   /* logistic S-curve rescaled to [0,1] -> [0,1] */
  GR_SYNTH_TONE_LUT = 3,      /* random monotone piecewise-linear curve */
  GR_SYNTH_TONE_INVERT = 4,   /* 1 - v */
} GrSynthToneKind;

#define GR_SYNTH_LUT_KNOTS 9

typedef struct {
  GrSynthToneKind kind;
  double gamma;                       /* GAMMA */
  double contrast, midpoint;          /* SCURVE: slope (> 0) and centre (0..1) */
  double knots[GR_SYNTH_LUT_KNOTS];   /* LUT: values at 0, 1/8, .., 1: increasing */
  bool invert;                        /* 1 - f(v) after the curve (INVERT sets it) */
} GrSynthTone;

/* Picks the curve's parameters from seed: gamma in [0.45, 2.2] (away from 1), S-curve
 * contrast 6..12 with midpoint 0.35..0.65, LUT increments random but each >= 2.5% of
 * the range. */
void gr_synth_tone_init (GrSynthTone *t, GrSynthToneKind kind, uint64_t seed);

/* f(v) for v in [0, 1] (clamped): monotone, f(0) and f(1) are 0 and 1 (1 and 0 when
 * inverted). */
double gr_synth_tone_eval (const GrSynthTone *t, double v);

/* Applies the curve to the valid pixels of p on the scale 0..maxval. */
void gr_synth_tone_apply (const GrSynthTone *t, GrPlaneF *p, double maxval);

/* Parses "none", "gamma", "scurve", "lut", "invert"; -1 when unknown. */
int gr_synth_tone_kind_from_string (const char *s);
const char *gr_synth_tone_kind_name (GrSynthToneKind kind);

/* Adds N(0, sigma^2) noise to the valid pixels and clamps to 0..maxval. */
void gr_synth_add_noise (GrPlaneF *p, double sigma, double maxval, uint64_t seed);

typedef enum {
  GR_SYNTH_BORDER_RANDOM = 0,     /* one of the three below, from the seed */
  GR_SYNTH_BORDER_STRIPS = 1,     /* 1..3 invalid strips along random sides */
  GR_SYNTH_BORDER_CORNERS = 2,    /* 1..4 invalid triangular corners */
  GR_SYNTH_BORDER_FOOTPRINT = 3,  /* valid area is a rotated, shrunk quad (as a
                                     rectified image's footprint) */
} GrSynthBorderKind;

/* Marks no-data borders in p (mask 0, value 0), each up to frac (0..0.5) of the frame
 * size.  p must have a mask.  Returns the kind actually used. */
GrSynthBorderKind gr_synth_nodata_border (GrPlaneF *p, GrSynthBorderKind kind,
    double frac, uint64_t seed);
int gr_synth_border_kind_from_string (const char *s);
const char *gr_synth_border_kind_name (GrSynthBorderKind kind);

/* ---- Ground truth. */
typedef struct {
  int index;
  char file[256];             /* frame file name (relative to the truth file) */
  double x, y;                /* control position of frame pixel (0, 0) */
  double centre_x, centre_y;  /* control position of the frame centre */
  double rotation_deg;        /* GrSynthPose's */
  double scale;
  double h[9];                /* frame-to-control homography, h[8] = 1 */
  double map_x, map_y;        /* map coordinates of the frame centre; NAN without geo */
} GrSynthTruth;

/* Fills t from a pose (geo may be NULL). */
void gr_synth_truth_from_pose (GrSynthTruth *t, int index, const char *file,
    const GrSynthPose *pose, int width, int height, const double *geo);

/* The truth of a camera frame: h is the pinhole homography (the exact mapping adds
 * the lens: gr_synth_camera_apply), rotation_deg the heading.  false when the camera
 * is refused (gr_synth_camera_homography). */
bool gr_synth_truth_from_camera (GrSynthTruth *t, int index, const char *file,
    const GrSynthCamera *cam, int width, int height, const double *geo);

/* camera.csv, beside truth.csv when frames come through a camera: header
 * "index,file,heading_deg,pitch_deg,roll_deg,scale,focal,k1,k2,k3,p1,p2" (focal in
 * frame pixels, lens on coordinates normalized by it, principal point at the centre). */
void gr_synth_camera_write_header (FILE *f);
void gr_synth_camera_write_row (FILE *f, int index, const char *file,
    const GrSynthCamera *cam, int width);

/* CSV: header "index,file,x,y,centre_x,centre_y,rotation_deg,scale,h00,h01,h02,h10,
 * h11,h12,h20,h21,h22,map_x,map_y", then one row per frame; doubles in the shortest
 * of %.15g .. %.17g that reads back bit-exact; "nan" without geo.  File names must
 * not contain "," or a line break. */
GrStatus gr_synth_truth_write_csv (const char *path, const GrSynthTruth *rows, int n,
    char *errbuf, size_t errlen);
void gr_synth_truth_write_header (FILE *f);
void gr_synth_truth_write_row (FILE *f, const GrSynthTruth *t);

/* Reads a truth CSV written above: *rows is malloc'ed (free()), *n its length. */
GrStatus gr_synth_truth_read_csv (const char *path, GrSynthTruth **rows, int *n,
    char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
