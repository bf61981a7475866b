/* GrRegister: nmiregister's algorithm (see register.h).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "register.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "camera_fit.h"
#include "descriptors.h"
#include "nmi_dense.h"
#include "nmi_sparse.h"
#include "peak.h"
#if GR_HAVE_CUDA
#include "register_cuda.h"
#endif

/* the first pass fits with a looser threshold: its job is a good prediction */
#define PASS1_THRESHOLD_FACTOR 2.0
/* the full search brings the frame's shorter side to about this many pixels */
#define FULL_SEARCH_SIDE 64.0
/* the calibrated camera's fit is kept when its RMS over the inliers is at most this
 * factor of the general homography's plus the slack (control pixels): with the right
 * intrinsics over flat ground the two fit alike (two fewer parameters cost little);
 * intrinsics that are off or ground that is not flat show as a larger residual */
#define CAMERA_FIT_RMS_FACTOR 1.1
#define CAMERA_FIT_RMS_SLACK 0.02
/* the robust fits' seed: results do not depend on anything but the frame */
#define FIT_SEED 0x6e6d6972u

struct GrRegister {
  GrBackend backend;            /* as asked (the dense full search is made with it) */
  int device;                   /* as asked */
  GrNmiSparse *sparse;

  /* the control (borrowed) and its value range */
  const GrPlaneF *control;
  double ctl_a, ctl_b;
  int ctl_levels;

  /* the full search, made on first use */
  GrNmiDense *dense;
  double dense_cs;              /* control scale of dense's control */
  int dense_w, dense_h;

  /* the device path: keypoints, value range, levels and templates on the device */
  GrFeatures *kpf;
  void *rc;                     /* GrRegisterCuda */
  int dev;                      /* -1 = host frames */

  /* this frame */
  const GrPlaneF *frame;        /* host plane, or device plane when on_device */
  bool on_device;
  GrPlaneF full;                /* the host copy of a device frame (full search) */
  bool full_valid;
  GrPlaneF small;               /* the frame at full-search scale */
  const uint8_t *dlevels;       /* device levels (rc's memory) */
  const float *kp_resp;         /* the host frame's keypoint responses, borrowed, or
                                 * NULL (gr_register_set_frame_responses) */
  int kp_resp_block;
  double fa, fb;                /* the frame's value range */
  int levels;

  /* the frame's lens (gr_register_set_lens) */
  bool has_lens;
  GrCamera lens;
  /* the frame camera's calibrated intrinsics (gr_register_set_camera) */
  bool has_camera;
  GrCamera camera;
};

void
gr_register_params_init (GrRegisterParams *p)
{
  memset (p, 0, sizeof *p);
  p->levels = 16;
  p->max_keypoints = 400;
  p->template_size = 11;
  p->window_size = 73;
  p->refine = true;
  p->refine_window = 23;
  p->model = GR_MODEL_HOMOGRAPHY;
  p->ransac_threshold = 1.0;
  p->min_peak_ratio = 1.0;
  p->min_inliers = 12;
  p->min_inlier_ratio = 0.3;
  p->max_predicted_error = 1.0;
  p->camera_fit = true;
}

void
gr_register_result_clear (GrRegisterResult *r)
{
  free (r->kp);
  free (r->match_frame);
  free (r->match_control);
  free (r->inlier);
  memset (r, 0, sizeof *r);
  r->rms = NAN;
  r->predicted_error = NAN;
}

static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------------ levels, samples */

static inline uint8_t
to_level (double v, double a, double b, int levels)
{
  if (!(b > a))
    return 0;
  const double q = floor ((v - a) / (b - a) * levels);
  return (uint8_t) (q < 0.0 ? 0 : q > levels - 1 ? levels - 1 : q);
}

/* packed levels (stride = width); invalid pixels get 0 */
static void
quantize (const GrPlaneF *p, double a, double b, int levels, uint8_t *out)
{
  for (int y = 0; y < p->height; y++)
    for (int x = 0; x < p->width; x++) {
      const size_t i = (size_t) y * p->width + x;
      out[i] = (p->mask && !p->mask[i]) ? 0 :
          to_level (p->data[(size_t) y * p->stride + x], a, b, levels);
    }
}

/* bilinear value at pixel-index position (x, y); false outside or when a neighbour
 * with a nonzero weight is invalid (register_cuda.cu's sampler does the same) */
static bool
sample_bilinear (const GrPlaneF *p, double x, double y, double *v)
{
  if (!(x >= 0.0 && y >= 0.0 && x <= p->width - 1 && y <= p->height - 1))
    return false;
  int x0 = (int) floor (x), y0 = (int) floor (y);
  const double fx = x - x0, fy = y - y0;
  const int x1 = fx > 0.0 ? x0 + 1 : x0, y1 = fy > 0.0 ? y0 + 1 : y0;
  if (p->mask) {
    const uint8_t *m = p->mask;
    const int w = p->width;
    if (!m[(size_t) y0 * w + x0] || !m[(size_t) y0 * w + x1] || !m[(size_t) y1 * w + x0]
        || !m[(size_t) y1 * w + x1])
      return false;
  }
  const float *d = p->data;
  const size_t s = p->stride;
  const double top = d[y0 * s + x0] * (1.0 - fx) + d[y0 * s + x1] * fx;
  const double bot = d[y1 * s + x0] * (1.0 - fx) + d[y1 * s + x1] * fx;
  *v = top * (1.0 - fy) + bot * fy;
  return true;
}

/* ------------------------------------------------------------------ geometry */

/* T(d) H T(-d) normalized to h[8] = 1: d = +1/2 turns a pixel-index homography into
 * a pixel-corner one, d = -1/2 the other way */
static void
shift_homography (const double h[9], double d, double o[9])
{
  const double tp[9] = { 1, 0, d, 0, 1, d, 0, 0, 1 };
  const double tm[9] = { 1, 0, -d, 0, 1, -d, 0, 0, 1 };
  double t[9];
  gr_mat3_mul (tp, h, t);
  gr_mat3_mul (t, tm, o);
  if (fabs (o[8]) > 1e-300) {
    const double k = o[8];
    for (int i = 0; i < 9; i++)
      o[i] /= k;
  }
}

/* a query's window centre, kept within the range the kernel accepts (far-away
 * windows are all invalid anyway) */
static inline int32_t
clamp_query (double v)
{
  if (!isfinite (v))
    return -(1 << 20);
  v = floor (v + 0.5);
  return (int32_t) (v < -(1 << 20) ? -(1 << 20) : v > (1 << 20) ? (1 << 20) : v);
}

/* ------------------------------------------------------------------ the lens */

/* Ideal (undistorted) pixel-index position -> where the lens images it: OpenCV's
 * Brown-Conrady model as kernels/camera.c, written out operation by operation because
 * register_cuda.cu's resample_kernel repeats it with round-to-nearest intrinsics: the
 * host and device templates must be the same bytes. */
static inline void
lens_distort (const GrCamera *c, double u, double v, double *ud, double *vd)
{
  const double x = (u - c->cx) / c->fx, y = (v - c->cy) / c->fy;
  const double xx = x * x, yy = y * y, xy = x * y;
  const double r2 = xx + yy;
  const double rad = 1.0 + r2 * (c->k1 + r2 * (c->k2 + r2 * c->k3));
  const double xd = (x * rad + 2.0 * c->p1 * xy) + c->p2 * (r2 + 2.0 * xx);
  const double yd = (y * rad + c->p1 * (r2 + 2.0 * yy)) + 2.0 * c->p2 * xy;
  *ud = c->cx + c->fx * xd;
  *vd = c->cy + c->fy * yd;
}

static bool
lens_distorts (const GrCamera *c)
{
  return c->k1 != 0.0 || c->k2 != 0.0 || c->k3 != 0.0 || c->p1 != 0.0 || c->p2 != 0.0;
}

bool
gr_register_set_lens (GrRegister *r, const GrCamera *lens)
{
  if (!r)
    return false;
  r->has_lens = false;
  if (!lens || !lens_distorts (lens))
    return true;
  const double v[9] = { lens->fx, lens->fy, lens->cx, lens->cy, lens->k1, lens->k2,
    lens->k3, lens->p1, lens->p2
  };
  for (int i = 0; i < 9; i++)
    if (!isfinite (v[i]))
      return false;
  if (!(lens->fx > 0.0) || !(lens->fy > 0.0))
    return false;
  r->lens = *lens;
  r->has_lens = true;
  return true;
}

bool
gr_register_set_camera (GrRegister *r, const GrCamera *intrinsics)
{
  if (!r)
    return false;
  r->has_camera = false;
  if (!intrinsics)
    return true;
  if (!(intrinsics->fx > 0.0) || !(intrinsics->fy > 0.0) || !isfinite (intrinsics->fx)
      || !isfinite (intrinsics->fy) || !isfinite (intrinsics->cx) ||
      !isfinite (intrinsics->cy))
    return false;
  r->camera = *intrinsics;
  r->has_camera = true;
  return true;
}

bool
gr_register_result_apply (const GrRegisterResult *r, double x, double y, double *cx,
    double *cy)
{
  if (!r->has_transform)
    return false;
  if (r->undistorted) {
    /* pixel corners -> OpenCV's pixel centres, undistort, back */
    double u, v;
    if (!gr_camera_undistort (&r->lens, x - 0.5, y - 0.5, &u, &v))
      return false;
    x = u + 0.5;
    y = v + 0.5;
  }
  return gr_fit_apply (r->h, x, y, cx, cy);
}

/* ------------------------------------------------------------------ lifecycle */

GrRegister *
gr_register_new (GrBackend backend, int device, GrStatus *status, char *errbuf,
    size_t errlen)
{
  GrStatus st = GR_OK;
  GrRegister *r = calloc (1, sizeof *r);
  if (!r) {
    st = GR_ERR_NOMEM;
    goto fail;
  }
  r->backend = backend;
  r->device = device;
  r->dev = -1;
  r->sparse = gr_nmi_sparse_new (backend, device, &st, errbuf, errlen);
  if (!r->sparse)
    goto fail;
#if GR_HAVE_CUDA
  if (gr_nmi_sparse_backend (r->sparse) == GR_BACKEND_CUDA) {
    /* the per-frame device path: keypoints (the CPU detector's, on the device), value
     * range, levels and templates without the frame leaving the GPU.  Without it the
     * frames are read on the host (the matcher still runs on the device). */
    const int dev = device > 0 ? device : 0;
    char derr[256] = "";
    GrStatus fst;
    r->kpf = gr_features_new (GR_BACKEND_CUDA, dev, &fst, derr, sizeof derr);
    if (r->kpf)
      r->rc = gr_register_cuda_new (dev, derr, sizeof derr);
    if (r->kpf && r->rc) {
      r->dev = dev;
    } else {
      gr_features_free (r->kpf);
      r->kpf = NULL;
    }
  }
#endif
  if (status)
    *status = GR_OK;
  return r;
fail:
  if (status)
    *status = st;
  gr_register_free (r);
  return NULL;
}

/* the device frame path is dropped (the matcher fell back to the CPU) */
static void
drop_device_path (GrRegister *r)
{
  gr_features_free (r->kpf);
  r->kpf = NULL;
#if GR_HAVE_CUDA
  gr_register_cuda_free (r->rc);
#endif
  r->rc = NULL;
  r->dev = -1;
}

void
gr_register_free (GrRegister *r)
{
  if (!r)
    return;
  gr_nmi_sparse_free (r->sparse);
  drop_device_path (r);
  gr_nmi_dense_free (r->dense);
  gr_plane_clear (&r->full);
  gr_plane_clear (&r->small);
  free (r);
}

GrBackend
gr_register_backend (const GrRegister *r)
{
  return gr_nmi_sparse_backend (r->sparse);
}

int
gr_register_frame_device (const GrRegister *r)
{
  return r->dev;
}

GrStatus
gr_register_set_control (GrRegister *r, const GrPlaneF *control, double a, double b,
    int levels, const GrImage8 *dev_levels, int vmax, bool *used_dev, char *errbuf,
    size_t errlen)
{
  bool dev_set = false;
  if (!r || !control || !control->data || levels < 2 || levels > 256)
    return GR_ERR_INVALID;
  if (dev_levels && gr_nmi_sparse_backend (r->sparse) == GR_BACKEND_CUDA)
    dev_set = gr_nmi_sparse_set_control_device (r->sparse, dev_levels->pix,
        dev_levels->mask, dev_levels->width, dev_levels->height, vmax, errbuf,
        errlen) == GR_OK;
  if (used_dev)
    *used_dev = dev_set;
  r->control = control;
  r->ctl_a = a;
  r->ctl_b = b;
  r->ctl_levels = levels;
  r->dense_cs = 0.0;
  if (dev_set)
    return GR_OK;
  const int cw = control->width, ch = control->height;
  uint8_t *q = malloc ((size_t) cw * ch);
  if (!q)
    return GR_ERR_NOMEM;
  quantize (control, a, b, levels, q);
  const GrImage8 img = { q, (size_t) cw, control->mask, (size_t) cw, cw, ch };
  if (errbuf && errlen)
    errbuf[0] = '\0';
  GrStatus st = gr_nmi_sparse_set_control (r->sparse, &img, errbuf, errlen);
  free (q);
  /* auto: the CUDA matcher could not take the control (e.g. out of device memory) and
   * now matches on the CPU, so frames are read on the host too */
  if (st == GR_OK && gr_nmi_sparse_backend (r->sparse) == GR_BACKEND_CPU)
    drop_device_path (r);
  return st;
}

GrStatus
gr_register_set_frame (GrRegister *r, const GrRegisterParams *params,
    const GrPlaneF *frame, bool on_device, GrBinMode mode, int depth, double lo,
    double hi, char *errbuf, size_t errlen)
{
  if (!r || !params || !frame || !frame->data || frame->width <= 0 ||
      frame->height <= 0 || params->levels < 2 || params->levels > 256 ||
      (on_device && (r->dev < 0 || mode == GR_BINS_PERCENTILE))) {
    gr_set_err (errbuf, errlen, "invalid frame or parameters");
    return GR_ERR_INVALID;
  }
  r->frame = frame;
  r->on_device = on_device;
  r->kp_resp = NULL;            /* they were another frame's */
  r->full_valid = !on_device;
  r->levels = params->levels;
  GrStatus st;
#if GR_HAVE_CUDA
  if (on_device && mode == GR_BINS_MINMAX) {
    float mn, mx;
    bool any;
    st = gr_register_cuda_minmax (r->rc, frame, &mn, &mx, &any, errbuf, errlen);
    if (st != GR_OK)
      return st;
    /* the host's min-max: the extremes of the valid values, 0 when none */
    r->fa = any ? mn : 0.0;
    r->fb = any ? mx : 0.0;
  } else
#endif
  {
    /* identity and fixed read only the plane's size */
    st = gr_plane_value_range (frame, mode, depth, lo, hi, &r->fa, &r->fb);
    if (st != GR_OK) {
      gr_set_err (errbuf, errlen, "the value range cannot be made (bins settings)");
      return st;
    }
  }
#if GR_HAVE_CUDA
  if (on_device)
    return gr_register_cuda_levels (r->rc, frame, r->fa, r->fb, params->levels,
        &r->dlevels, errbuf, errlen);
#endif
  /* the host frame's levels are taken where the templates are cut (pass 1 of
   * run_pass), the same to_level() of the same pixels: a few hundred 11 x 11
   * templates, not the whole frame (1080p: 2 million levels, 6% of the onboard
   * chain's CPU) */
  return GR_OK;
}

void
gr_register_set_frame_responses (GrRegister *r, const float *responses, int block_radius)
{
  if (!r)
    return;
  r->kp_resp = r->on_device ? NULL : responses;
  r->kp_resp_block = block_radius;
}

/* ------------------------------------------------------------------ full search */

/* The frame as a host plane: a device frame is downloaded (only the full search needs
 * it).  NULL on failure. */
static const GrPlaneF *
host_frame (GrRegister *r, char *errbuf, size_t errlen)
{
  if (!r->on_device)
    return r->frame;
  if (r->full_valid)
    return &r->full;
#if GR_HAVE_CUDA
  if (r->rc && gr_register_cuda_download (r->rc, r->frame, &r->full, errbuf,
          errlen) == GR_OK) {
    r->full_valid = true;
    return &r->full;
  }
#endif
  return NULL;
}

/* Own coarse search: frame and control at reduced resolution, dense NMI over the
 * whole control, the frame assumed at `scale` control pixels per frame pixel.  true
 * with the frame's top-left (control pixel corners) on success. */
static bool
full_search (GrRegister *r, double scale, double *px, double *py)
{
  char err[256];
  const GrPlaneF *full = host_frame (r, err, sizeof err);
  if (!full || !r->control)
    return false;
  const int fw = full->width, fh = full->height;
  double fs = FULL_SEARCH_SIDE / (fw < fh ? fw : fh);
  if (fs > 1.0)
    fs = 1.0;
  const double cs = fs / scale;
  if (cs > 1.0 || cs <= 0.0)
    return false;
  if (!r->dense || r->dense_cs != cs) {
    GrPlaneF ctl = { 0 };
    GrStatus est;
    if (!r->dense)
      r->dense = gr_nmi_dense_new (r->backend, r->device, &est, err, sizeof err);
    if (!r->dense)
      return false;
    if (gr_plane_downscale (r->control, cs, &ctl) != GR_OK)
      return false;
    uint8_t *q = malloc ((size_t) ctl.width * ctl.height);
    bool ok = q != NULL;
    if (ok) {
      quantize (&ctl, r->ctl_a, r->ctl_b, r->ctl_levels, q);
      const GrImage8 img = { q, (size_t) ctl.width, ctl.mask, (size_t) ctl.width,
        ctl.width, ctl.height
      };
      /* with auto a device that cannot take the control leaves a CPU search */
      ok = gr_nmi_dense_set_control (r->dense, &img, err, sizeof err) == GR_OK;
    }
    r->dense_w = ctl.width;
    r->dense_h = ctl.height;
    r->dense_cs = ok ? cs : 0.0;
    free (q);
    gr_plane_clear (&ctl);
    if (!ok)
      return false;
  }
  if (gr_plane_downscale (full, fs, &r->small) != GR_OK)
    return false;
  const int tw = r->small.width, th = r->small.height;
  if (tw > r->dense_w || th > r->dense_h)
    return false;
  const size_t nv = gr_plane_count_valid (&r->small);
  if (nv == 0)
    return false;
  uint8_t *tq = malloc ((size_t) tw * th);
  const GrRegion reg = { 0, 0, r->dense_w - tw + 1, r->dense_h - th + 1 };
  const size_t npos = (size_t) (reg.x1 - reg.x0) * (reg.y1 - reg.y0);
  double *scores = malloc (npos * sizeof (double));
  bool ok = tq && scores;
  if (ok) {
    quantize (&r->small, r->fa, r->fb, r->levels, tq);
    const GrImage8 tpl = { tq, (size_t) tw, r->small.mask, (size_t) tw, tw, th };
    ok = gr_nmi_dense_run (r->dense, &tpl, reg, (int) ((nv + 1) / 2), scores, NULL,
        err, sizeof err) == GR_OK;
  }
  if (ok) {
    GrPeak pk;
    const int excl = (tw < th ? tw : th) / 8;
    gr_find_peak (scores, reg.x1 - reg.x0, reg.y1 - reg.y0, excl > 2 ? excl : 2, 1.0,
        &pk);
    ok = !(pk.flags & GR_PEAK_NO_SCORE);
    if (ok) {
      *px = pk.x / cs;
      *py = pk.y / cs;
    }
  }
  free (tq);
  free (scores);
  return ok;
}

/* ------------------------------------------------------------------ matching */

typedef struct {
  double *src, *dst, *w;        /* frame / control pixel-index positions, weights */
  int n;
  bool clipped;
} Corr;

/* One matching pass over the keypoints in windows of side W.  pass 1: templates cut
 * around the keypoints from the frame's levels, windows around the prediction of H.
 * pass 2: each keypoint's prediction g (rounded) is pulled back into the frame, and
 * the template is resampled in the control's geometry around g (the refinement, and
 * the first pass from a prior that rotates or shears the frame, where cut templates
 * would not look like the control).  kpu: the keypoints' x y undistorted (as kp
 * without a lens): they are predicted and fitted; templates are cut around kp, or
 * resampled through the lens. */
static GrStatus
match_pass (GrRegister *r, const GrRegisterParams *s, int pass, int W,
    const GrKeypoint *kp, const double *kpu, int nk, const double H[9], Corr *c,
    char *err, size_t errlen)
{
  const int T = s->template_size, T2 = T * T, h2 = T / 2;
  const int fw = r->frame->width;
  const bool dev = r->on_device;
  const size_t nk1 = nk > 1 ? (size_t) nk : 1;
  /* host path: the templates; device path: the centres (pass 1) or the candidates'
   * windows and valid counts (pass 2) */
  uint8_t *tpl = dev ? NULL : malloc ((size_t) T2 * nk1);
  uint8_t *tmk = dev ? NULL : malloc ((size_t) T2 * nk1);
  int32_t *xy = dev ? malloc (2 * nk1 * sizeof (int32_t)) : NULL;
  int *nvalid = dev ? malloc (nk1 * sizeof (int)) : NULL;
  GrNmiSparseQuery *q = malloc (nk1 * sizeof *q);
  GrNmiSparseMatch *m = malloc (nk1 * sizeof *m);
  double *fx = malloc (2 * nk1 * sizeof (double));
  bool use_mask = false;
  GrStatus st = GR_OK;
  int nq = 0;
  double Hi[9];

  if ((dev ? !xy || !nvalid : !tpl || !tmk) || !q || !m || !fx) {
    st = GR_ERR_NOMEM;
    goto out;
  }
  if (pass == 2 && !gr_mat3_inverse (H, Hi)) {
    c->n = 0;
    goto out;
  }
  for (int k = 0; k < nk; k++) {
    double X, Y;
    if (!gr_fit_apply (H, kpu[2 * k], kpu[2 * k + 1], &X, &Y))
      continue;
    q[nq].x = clamp_query (X);
    q[nq].y = clamp_query (Y);
    if (pass == 1) {
      if (dev) {
        /* cut on the device from the frame's levels around the same centre */
        xy[2 * nq] = (int32_t) kp[k].x;
        xy[2 * nq + 1] = (int32_t) kp[k].y;
      } else {
        uint8_t *t = tpl + (size_t) nq * T2, *tm = tmk + (size_t) nq * T2;
        const int x0 = (int) kp[k].x - h2, y0 = (int) kp[k].y - h2;
        for (int j = 0; j < T; j++)
          for (int i = 0; i < T; i++) {
            const size_t at = (size_t) (y0 + j) * fw + (x0 + i);
            /* quantize()'s value of the pixel (0 where masked) */
            t[j * T + i] = r->frame->mask && !r->frame->mask[at] ? 0 :
                to_level (r->frame->data[(size_t) (y0 + j) * r->frame->stride + (x0 + i)],
                r->fa, r->fb, r->levels);
            tm[j * T + i] = 1;  /* keypoints keep their template valid (margin) */
          }
      }
      fx[2 * nq] = kpu[2 * k];
      fx[2 * nq + 1] = kpu[2 * k + 1];
    } else {
      double u, v;
      if (!gr_fit_apply (Hi, q[nq].x, q[nq].y, &u, &v))
        continue;
      fx[2 * nq] = u;
      fx[2 * nq + 1] = v;
      if (dev) {
        /* a candidate: resampled on the device below */
        xy[2 * nq] = q[nq].x;
        xy[2 * nq + 1] = q[nq].y;
      } else {
        uint8_t *t = tpl + (size_t) nq * T2, *tm = tmk + (size_t) nq * T2;
        int nv = 0;
        for (int j = 0; j < T; j++)
          for (int i = 0; i < T; i++) {
            double su, sv, val;
            bool okp = gr_fit_apply (Hi, q[nq].x - h2 + i, q[nq].y - h2 + j, &su, &sv);
            if (okp && r->has_lens)
              lens_distort (&r->lens, su, sv, &su, &sv);
            okp = okp && sample_bilinear (r->frame, su, sv, &val);
            t[j * T + i] = okp ? to_level (val, r->fa, r->fb, r->levels) : 0;
            tm[j * T + i] = okp;
            nv += okp;
          }
        if (nv < T2)
          use_mask = true;
        if (nv == 0)
          continue;
      }
    }
    nq++;
  }
  GrNmiSparseParams p;
  gr_nmi_sparse_params_init (&p);
  p.template_size = T;
  p.window_size = W;
  if (!dev) {
    st = gr_nmi_sparse_run (r->sparse, &p, tpl, use_mask ? tmk : NULL, q, nq, m, NULL,
        err, errlen);
  } else if (pass == 1) {
    const GrImage8 lv = { r->dlevels, (size_t) r->frame->width, NULL,
      (size_t) r->frame->width, r->frame->width, r->frame->height
    };
    st = gr_nmi_sparse_run_cut_device (r->sparse, &p, &lv, xy, false, q, nq, m, err,
        errlen);
  } else {
#if GR_HAVE_CUDA
    /* the candidates' templates, then those with a valid pixel, in order (the host
     * path's selection) */
    const double lens[9] = { r->lens.fx, r->lens.fy, r->lens.cx, r->lens.cy, r->lens.k1,
      r->lens.k2, r->lens.k3, r->lens.p1, r->lens.p2
    };
    st = gr_register_cuda_resample (r->rc, r->frame, Hi, r->has_lens ? lens : NULL, xy,
        nq, T, r->fa, r->fb, r->levels, nvalid, err, errlen);
    int nkeep = 0;
    for (int k = 0; st == GR_OK && k < nq; k++) {
      if (nvalid[k] < T2)
        use_mask = true;
      if (nvalid[k] == 0)
        continue;
      nvalid[nkeep] = k;        /* reused as the list of kept candidates */
      q[nkeep] = q[k];
      fx[2 * nkeep] = fx[2 * k];
      fx[2 * nkeep + 1] = fx[2 * k + 1];
      nkeep++;
    }
    const uint8_t *dt = NULL, *dm = NULL;
    if (st == GR_OK)
      st = gr_register_cuda_gather (r->rc, nvalid, nkeep, T, &dt, &dm, err, errlen);
    nq = nkeep;
    if (st == GR_OK)
      st = gr_nmi_sparse_run_device (r->sparse, &p, dt, use_mask ? dm : NULL, q, nq,
          m, err, errlen);
#else
    st = GR_ERR_NO_CUDA;
#endif
  }
  if (st != GR_OK)
    goto out;
  c->n = 0;
  for (int k = 0; k < nq; k++) {
    if (m[k].flags & GR_NMI_SPARSE_CLIPPED)
      c->clipped = true;
    if (m[k].flags & (GR_NMI_SPARSE_NO_SCORE | GR_NMI_SPARSE_AT_BORDER |
            GR_NMI_SPARSE_FLAT))
      continue;
    if (!(m[k].score > 1.0 + 1e-9))
      continue;
    if (!isnan (m[k].ratio) && m[k].ratio < s->min_peak_ratio)
      continue;
    c->src[2 * c->n] = fx[2 * k];
    c->src[2 * c->n + 1] = fx[2 * k + 1];
    c->dst[2 * c->n] = q[k].x + m[k].dx;
    c->dst[2 * c->n + 1] = q[k].y + m[k].dy;
    c->w[c->n] = m[k].score - 1.0;
    c->n++;
  }
out:
  free (tpl);
  free (tmk);
  free (xy);
  free (nvalid);
  free (q);
  free (m);
  free (fx);
  return st;
}

static unsigned
fit_flags (GrFitResult r)
{
  switch (r) {
    case GR_FIT_OK:
      return 0;
    case GR_FIT_TOO_FEW:
      return GR_REGISTER_TOO_FEW_MATCHES;
    case GR_FIT_DEGENERATE:
      return GR_REGISTER_DEGENERATE;
    case GR_FIT_NO_CONSENSUS:
      return GR_REGISTER_NO_CONSENSUS;
  }
  return GR_REGISTER_NO_CONSENSUS;
}

static int
model_minimum (GrModel m)
{
  static const int minimum[] = { 1, 2, 3, 4 };
  return m >= GR_MODEL_TRANSLATION && m <= GR_MODEL_HOMOGRAPHY ? minimum[m] : 4;
}

/* One registration from a prior H0 (pixel-index coordinates) into r (whose keypoint
 * fields are the caller's).  An error status only when an engine failed. */
static GrStatus
register_from_prior (GrRegister *r, const GrRegisterParams *s, const GrKeypoint *kp,
    const double *kpu, int nk, const double H0[9], GrRegisterResult *res, char *err,
    size_t errlen)
{
  const int mmin = model_minimum (s->model);
  const int fw = r->frame->width, fh = r->frame->height;
  bool matches_fit = false;
  GrStatus st = GR_OK;
  Corr c = { 0 };
  res->rms = NAN;
  res->predicted_error = NAN;
  const size_t nk1 = nk > 1 ? (size_t) nk : 1;
  c.src = malloc (2 * nk1 * sizeof (double));
  c.dst = malloc (2 * nk1 * sizeof (double));
  c.w = malloc (nk1 * sizeof (double));
  uint8_t *inl = malloc (nk1);
  if (!c.src || !c.dst || !c.w || !inl) {
    st = GR_ERR_NOMEM;
    goto out;
  }
  GrFitParams fp;
  gr_fit_params_init (&fp, s->model);
  fp.threshold = s->ransac_threshold * PASS1_THRESHOLD_FACTOR;
  fp.seed = FIT_SEED;
  GrFit fit;
  /* an offset and scale prior: templates as cut from the frame; a prior that turns,
   * shears or tilts the frame: resampled into the control's geometry */
  const bool axis_aligned = H0[1] == 0.0 && H0[3] == 0.0 && H0[6] == 0.0 &&
      H0[7] == 0.0;
  st = match_pass (r, s, axis_aligned ? 1 : 2, s->window_size, kp, kpu, nk, H0, &c, err,
      errlen);
  if (st != GR_OK)
    goto out;
  res->matches = c.n;
  if (c.clipped)
    res->flags |= GR_REGISTER_WINDOWS_CLIPPED;
  if (c.n < mmin + 1) {
    res->flags |= GR_REGISTER_TOO_FEW_MATCHES;
    goto out;
  }
  GrFitResult fr = gr_fit_robust (c.src, c.dst, c.w, c.n, &fp, &fit, inl);
  if (fr != GR_FIT_OK) {
    res->flags |= fit_flags (fr);
    goto out;
  }
  /* the first pass, with its wide windows, is the honest test of the prior (the
   * second pass only looks near the first fit's predictions, so a wrong first fit can
   * collect a misleading share of inliers there).  With a right prior but a scale or
   * rotation the prior does not know, the first pass's share can be low (13% seen at
   * scale 1.1), with a wrong prior it is chance (4-5% seen): hence a quarter of
   * min-inlier-ratio here */
  if (fit.inliers < (int) s->min_inliers ||
      fit.inliers < 0.25 * s->min_inlier_ratio * c.n)
    res->flags |= GR_REGISTER_LOW_INLIERS;
  bool spread_known = true;
  if (s->refine) {
    Corr c2 = { c.src, c.dst, c.w, 0, false };
    double H1[9];
    memcpy (H1, fit.h, sizeof H1);
    GrFit fit2;
    fp.threshold = s->ransac_threshold;
    st = match_pass (r, s, 2, s->refine_window, kp, kpu, nk, H1, &c2, err, errlen);
    if (st != GR_OK)
      goto out;
    GrFitResult fr2 = c2.n >= mmin + 1 ? gr_fit_robust (c2.src, c2.dst, c2.w, c2.n, &fp,
        &fit2, inl) : GR_FIT_TOO_FEW;
    if (fr2 == GR_FIT_OK) {
      fit = fit2;
      c.n = c2.n;
      res->matches = c2.n;
      if (c2.clipped)
        res->flags |= GR_REGISTER_WINDOWS_CLIPPED;
    } else {
      /* pass 1's transform stands (its matches were overwritten: no spread test) */
      res->flags |= GR_REGISTER_REFINE_FAILED;
      spread_known = false;
    }
  }
  /* the calibrated camera's plane homography on the same inliers, kept when it fits
   * them as well: two parameters fewer, so it holds beyond the inliers' hull */
  if (s->camera_fit && r->has_camera && s->model == GR_MODEL_HOMOGRAPHY &&
      spread_known) {
    int *idx = malloc (nk1 * sizeof *idx), k = 0;
    double hc[9], rms_c;
    if (idx) {
      for (int i = 0; i < c.n; i++)
        if (inl[i])
          idx[k++] = i;
      if (gr_camera_fit_homography (&r->camera, fit.h, c.src, c.dst, idx, k, c.n, hc,
              &rms_c) && rms_c <= CAMERA_FIT_RMS_FACTOR * fit.rms + CAMERA_FIT_RMS_SLACK) {
        memcpy (fit.h, hc, sizeof hc);
        fit.rms = rms_c;
        res->camera_fit = true;
      }
      free (idx);
    }
  }
  res->has_transform = true;
  memcpy (res->h_index, fit.h, sizeof res->h_index);
  shift_homography (fit.h, 0.5, res->h);
  res->inliers = fit.inliers;
  res->rms = fit.rms;
  /* Evidence beside the residual, which only says how well the inliers agree with the
   * fit they made: how much the transform over the whole frame moves when a ninth of
   * the frame's inliers is left out.  Matches that agree with each other but pin the
   * transform poorly (few independent templates on a frame much finer than the
   * control) show here: on the 0.25-4 range a frame at 0.26 control pixels a
   * frame pixel kept 116 of 260 matches at 0.43 control px RMS and was 5.1 frame px
   * wrong; this said 1.35 px, and 0.03-0.14 px on frames at 0.5-2 that were 0.05-0.18
   * px off.  It is a lower bound: a bias common to every match cannot show.  After a
   * failed refinement the matches are not the transform's: unknown. */
  res->predicted_error = !spread_known ? NAN : res->camera_fit ?
      gr_camera_fit_predicted_error (&r->camera, fit.h, c.src, c.dst, inl, c.n, fw, fh) :
      gr_fit_predicted_error (fit.h, s->model, c.src, c.dst, inl, c.n, fw, fh);
  if (s->max_predicted_error > 0.0 && res->predicted_error > s->max_predicted_error)
    res->flags |= GR_REGISTER_IMPRECISE;
  if (fit.inliers < (int) s->min_inliers ||
      fit.inliers < s->min_inlier_ratio * res->matches)
    res->flags |= GR_REGISTER_LOW_INLIERS;
  if (spread_known) {
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int i = 0; i < c.n; i++)
      if (inl[i]) {
        x0 = fmin (x0, c.src[2 * i]);
        x1 = fmax (x1, c.src[2 * i]);
        y0 = fmin (y0, c.src[2 * i + 1]);
        y1 = fmax (y1, c.src[2 * i + 1]);
      }
    if (!(x1 - x0 >= fw / 3.0) || !(y1 - y0 >= fh / 3.0))
      res->flags |= GR_REGISTER_POOR_SPREAD;
  }
  matches_fit = spread_known;
out:
  /* for the overlay: the matches behind the transform with their inlier mask, or,
   * without a transform, the matches no fit accepted.  After a failed refinement the
   * arrays hold the second pass's matches, which the first pass's transform did not
   * see: none are kept */
  if (st == GR_OK && s->keep_matches && (matches_fit || !res->has_transform)) {
    res->n_matches = c.n;
    if (r->has_lens)
      /* the overlay draws them on the frame as delivered */
      for (int i = 0; i < c.n; i++)
        lens_distort (&r->lens, c.src[2 * i], c.src[2 * i + 1], &c.src[2 * i],
            &c.src[2 * i + 1]);
    res->match_frame = c.src;
    res->match_control = c.dst;
    c.src = c.dst = NULL;
    if (matches_fit) {
      res->inlier = inl;
      inl = NULL;
    }
  }
  free (c.src);
  free (c.dst);
  free (c.w);
  free (inl);
  return st;
}

bool
gr_register_result_sound (const GrRegisterResult *r)
{
  return r->has_transform && !(r->flags & (GR_REGISTER_LOW_INLIERS |
          GR_REGISTER_REFINE_FAILED));
}

static void
offset_prior (double x, double y, double k, double h[9])
{
  const double p[9] = { k, 0, x, 0, k, y, 0, 0, 1 };
  memcpy (h, p, sizeof p);
}

/* The registration from `prior_h` (pixel corners) as a result of its own: keypoints
 * are the caller's, the result's flags and counts are this attempt's. */
static GrStatus
attempt (GrRegister *r, const GrRegisterParams *s, const GrKeypoint *kp,
    const double *kpu, int nk, const double prior_h[9], GrRegisterResult *res,
    char *err, size_t errlen)
{
  double H0[9];
  shift_homography (prior_h, -0.5, H0);
  res->has_prior = true;
  memcpy (res->prior, prior_h, sizeof res->prior);
  res->undistorted = r->has_lens;
  if (r->has_lens)
    res->lens = r->lens;
  return register_from_prior (r, s, kp, kpu, nk, H0, res, err, errlen);
}

/* The keypoints' x y (2 nk doubles; NULL after a failed allocation), undistorted
 * through the frame's lens when it has one.  A keypoint the lens model cannot invert
 * (far outside its valid field) gets a non-finite position and is never predicted. */
static double *
keypoint_positions (const GrRegister *r, const GrKeypoint *kp, int nk)
{
  double *u = malloc (2 * (size_t) (nk > 0 ? nk : 1) * sizeof *u);
  if (!u)
    return NULL;
  for (int k = 0; k < nk; k++) {
    u[2 * k] = kp[k].x;
    u[2 * k + 1] = kp[k].y;
    if (r->has_lens && !gr_camera_undistort (&r->lens, kp[k].x, kp[k].y, &u[2 * k],
            &u[2 * k + 1]))
      u[2 * k] = u[2 * k + 1] = NAN;
  }
  return u;
}

/* Evidence beside the fit's own residual: the transform's footprint over the whole
 * frame must still be a camera's (finite, convex, not folded or stretched: the same
 * test as nmilocalize's IMPLAUSIBLE) and its scale within a factor of two of the
 * prior's.  A fit can hold its inliers to a fraction of a pixel and still bend far
 * away outside their hull: on the 0.25-4 range, a frame at 0.3 control pixels
 * a frame pixel kept 90 of 241 matches and was 204 px RMS wrong over the frame with no
 * flag.  GR_REGISTER_DEGENERATE when it fails. */
static unsigned
implausible_against_prior (const GrRegisterResult *res, int width, int height)
{
  if (!res->has_transform || !res->has_prior || width < 2 || height < 2)
    return 0;
  GrPlausibility pr;
  if (gr_fit_check_plausible (res->prior, width, height, NULL, &pr) &
      GR_PLAUSIBLE_NOT_FINITE || !(pr.scale > 0.0))
    return 0;                   /* no usable prior shape to compare with */
  GrPlausibleParams pp;
  gr_plausible_params_init (&pp);
  pp.expected_scale = pr.scale;
  pp.scale_tolerance = 2.0;
  const unsigned f = gr_fit_check_plausible (res->h, width, height, &pp, NULL);
  return f & (GR_PLAUSIBLE_NOT_FINITE | GR_PLAUSIBLE_NEAR_SINGULAR |
      GR_PLAUSIBLE_NON_CONVEX | GR_PLAUSIBLE_AREA | GR_PLAUSIBLE_ASPECT) ?
      GR_REGISTER_DEGENERATE : 0;
}

GrStatus
gr_register_run (GrRegister *r, const GrRegisterParams *s, const GrRegisterPrior *prior,
    GrRegisterResult *res, char *err, size_t errlen)
{
  memset (res, 0, sizeof *res);
  res->rms = NAN;
  res->predicted_error = NAN;
  if (!r || !s || !prior || !r->frame || !r->control || s->template_size < 3 ||
      !(s->template_size & 1) || s->window_size < s->template_size ||
      s->refine_window < s->template_size || s->max_keypoints < 1 ||
      (!prior->has_prior && prior->search && !(prior->search_scale > 0.0))) {
    gr_set_err (err, errlen, "invalid parameters, or no frame or control set");
    return GR_ERR_INVALID;
  }
  double prior_h[9];
  bool have_prior = prior->has_prior;
  if (have_prior) {
    memcpy (prior_h, prior->h, sizeof prior_h);
  } else if (prior->search) {
    double px, py;
    res->searched = true;
    res->flags |= GR_REGISTER_FULL_SEARCH;
    have_prior = full_search (r, prior->search_scale, &px, &py);
    if (have_prior)
      offset_prior (px, py, prior->search_scale, prior_h);
    else
      res->flags |= GR_REGISTER_SEARCH_FAILED;
  }
  if (!have_prior)
    return GR_OK;

  /* keypoints, once for every attempt */
  GrKeypointParams kpp;
  gr_keypoint_params_init (&kpp);
  kpp.max_keypoints = s->max_keypoints;
  kpp.margin = s->template_size / 2 > 1 ? s->template_size / 2 : 1;
  GrKeypoint *kp = malloc ((size_t) s->max_keypoints * sizeof *kp);
  if (!kp)
    return GR_ERR_NOMEM;
  const double t0 = now_ms ();
  /* the device detector finds the CPU detector's keypoints, bit for bit */
  const int nk = r->on_device ? gr_features_detect_device (r->kpf, r->frame, &kpp, kp,
      s->max_keypoints, NULL, err, errlen) :
      gr_keypoints_detect_with (r->frame, &kpp, r->kp_resp && r->kp_resp_block ==
      kpp.block_radius ? r->kp_resp : NULL, kp, s->max_keypoints);
  if (nk < 0) {
    free (kp);
    return (GrStatus) - nk;
  }
  res->keypoints_ms = now_ms () - t0;
  const int nkp = nk;
  const double kms = res->keypoints_ms;
  GrStatus st = GR_OK;
  double *kpu = keypoint_positions (r, kp, nk);
  if (!kpu) {
    free (kp);
    return GR_ERR_NOMEM;
  }
  if (nk < model_minimum (s->model) + 1) {
    res->flags |= GR_REGISTER_TOO_FEW_KEYPOINTS;
    res->has_prior = true;
    memcpy (res->prior, prior_h, sizeof res->prior);
  } else {
    const unsigned search_flags = res->flags;
    const bool searched = res->searched;
    st = attempt (r, s, kp, kpu, nk, prior_h, res, err, errlen);
    res->flags |= search_flags;
    res->searched = searched;
    /* a doubtful prior that did not register: a second opinion from the full search */
    if (st == GR_OK && prior->second_opinion && !res->searched &&
        !gr_register_result_sound (res) && prior->search_scale > 0.0) {
      double qx, qy, qh[9];
      if (full_search (r, prior->search_scale, &qx, &qy)) {
        GrRegisterResult res2 = { 0 };
        offset_prior (qx, qy, prior->search_scale, qh);
        st = attempt (r, s, kp, kpu, nk, qh, &res2, err, errlen);
        if (st == GR_OK && res2.has_transform && (!res->has_transform ||
                res2.inliers > res->inliers)) {
          const unsigned keep = res->flags & ~(GR_REGISTER_TOO_FEW_MATCHES |
              GR_REGISTER_WINDOWS_CLIPPED | GR_REGISTER_DEGENERATE |
              GR_REGISTER_NO_CONSENSUS | GR_REGISTER_LOW_INLIERS |
              GR_REGISTER_POOR_SPREAD | GR_REGISTER_REFINE_FAILED |
              GR_REGISTER_IMPRECISE);
          gr_register_result_clear (res);
          *res = res2;
          res->flags |= keep | GR_REGISTER_FULL_SEARCH;
        } else {
          gr_register_result_clear (&res2);
        }
      }
    }
  }
  free (kpu);
  if (st == GR_OK)
    res->flags |= implausible_against_prior (res, r->frame->width, r->frame->height);
  res->keypoints = nkp;
  res->keypoints_ms = kms;
  if (st != GR_OK) {
    gr_register_result_clear (res);
    free (kp);
    return st;
  }
  if (s->keep_matches)
    res->kp = kp;
  else
    free (kp);
  return GR_OK;
}
