/* Dense NMI translation search: dispatcher and the multi-threaded CPU backend.
 *
 * CPU method: one joint histogram of 65,536 32-bit counters per thread.  For each
 * translation the jointly valid pixels are counted into it, the bins that went from
 * 0 to 1 are remembered, and S = sum c ln c is summed over those bins only (a
 * precomputed c ln c table), which also resets them.  So a translation costs
 * O(template pixels), never a 65,536-bin scan.  H = ln n - S / n.
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include "nmi_dense.h"
#include "nmi_dense_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

struct GrNmiDense {
  GrBackend backend;
  GrBackend requested;            /* the backend asked for (AUTO may fall back) */
  GrNmiScore score;
  int threads;
  /* CPU copy of the control, packed (stride = width) */
  uint8_t *ctl_pix;
  uint8_t *ctl_mask;              /* NULL = all valid */
  int ctl_w, ctl_h;               /* kept for both backends, to validate regions */
#if GR_HAVE_CUDA
  GrNmiDenseCuda *cuda;
#endif
};

GrNmiDense *
gr_nmi_dense_new (GrBackend backend, int cuda_device, GrStatus *status,
    char *errbuf, size_t errlen)
{
  GrStatus dummy;
  if (!status)
    status = &dummy;
  *status = GR_OK;

  GrBackend use = backend;
  if (use == GR_BACKEND_AUTO)
    use = gr_cuda_device_count () > 0 ? GR_BACKEND_CUDA : GR_BACKEND_CPU;
  if (use == GR_BACKEND_CUDA && gr_cuda_device_count () <= 0) {
    *status = GR_ERR_NO_CUDA;
    gr_set_err (errbuf, errlen, "%s", gr_cuda_compiled ()
        ? "no usable CUDA device (no GPU or no driver)"
        : "this build has no CUDA kernels (built without nvcc)");
    return NULL;
  }

  GrNmiDense *nmi = calloc (1, sizeof *nmi);
  if (!nmi) {
    *status = GR_ERR_NOMEM;
    return NULL;
  }
  nmi->backend = use;
  nmi->requested = backend;
#if GR_HAVE_CUDA
  if (use == GR_BACKEND_CUDA) {
    nmi->cuda = gr_nmi_dense_cuda_new (cuda_device < 0 ? 0 : cuda_device, errbuf, errlen);
    if (!nmi->cuda && backend == GR_BACKEND_AUTO) {
      /* a device too small for the kernel (shared memory) or a failing driver: auto
       * means "the best that works", so fall back; the reason stays in errbuf */
      nmi->backend = GR_BACKEND_CPU;
    } else if (!nmi->cuda) {
      free (nmi);
      *status = GR_ERR_CUDA;
      return NULL;
    }
  }
#else
  (void) cuda_device;
#endif
  return nmi;
}

void
gr_nmi_dense_free (GrNmiDense *nmi)
{
  if (!nmi)
    return;
#if GR_HAVE_CUDA
  gr_nmi_dense_cuda_free (nmi->cuda);
#endif
  free (nmi->ctl_pix);
  free (nmi->ctl_mask);
  free (nmi);
}

GrBackend
gr_nmi_dense_backend (const GrNmiDense *nmi)
{
  return nmi->backend;
}

void
gr_nmi_dense_set_score (GrNmiDense *nmi, GrNmiScore score)
{
  nmi->score = score;
}

double
gr_nmi_overlap_weighted (double nmi, long valid, long template_valid)
{
  if (isnan (nmi) || template_valid <= 0)
    return NAN;
  const double f = valid >= template_valid ? 1.0 : (double) valid / template_valid;
  return 1.0 + (nmi - 1.0) * f;
}

void
gr_nmi_dense_set_threads (GrNmiDense *nmi, int threads)
{
  nmi->threads = threads > 0 ? threads : 0;
}

static bool
image_ok (const GrImage8 *im)
{
  return im && im->pix && im->width > 0 && im->height > 0 &&
      im->pix_stride >= (size_t) im->width &&
      (!im->mask || im->mask_stride >= (size_t) im->width);
}

GrStatus
gr_nmi_dense_set_control (GrNmiDense *nmi, const GrImage8 *control,
    char *errbuf, size_t errlen)
{
  if (!nmi || !image_ok (control)) {
    gr_set_err (errbuf, errlen, "control image: bad size, stride or pointer");
    return GR_ERR_INVALID;
  }
#if GR_HAVE_CUDA
  if (nmi->backend == GR_BACKEND_CUDA) {
    GrStatus st = gr_nmi_dense_cuda_set_control (nmi->cuda, control, errbuf, errlen);
    if (st == GR_OK) {
      nmi->ctl_w = control->width;
      nmi->ctl_h = control->height;
      return st;
    }
    if (st != GR_ERR_CUDA || nmi->requested != GR_BACKEND_AUTO)
      return st;
    /* auto, and the device cannot take the control (e.g. out of device memory): as
     * when the engine cannot be created, the CPU takes over; the reason stays in
     * errbuf, and gr_nmi_dense_backend says CPU from now on */
    gr_nmi_dense_cuda_free (nmi->cuda);
    nmi->cuda = NULL;
    nmi->backend = GR_BACKEND_CPU;
  }
#endif
  size_t n = (size_t) control->width * control->height;
  uint8_t *pix = malloc (n);
  uint8_t *mask = control->mask ? malloc (n) : NULL;
  if (!pix || (control->mask && !mask)) {
    free (pix);
    free (mask);
    return GR_ERR_NOMEM;
  }
  for (int y = 0; y < control->height; y++) {
    memcpy (pix + (size_t) y * control->width,
        control->pix + y * control->pix_stride, control->width);
    if (mask)
      for (int x = 0; x < control->width; x++)
        mask[(size_t) y * control->width + x] =
            control->mask[y * control->mask_stride + x] ? 1 : 0;
  }
  free (nmi->ctl_pix);
  free (nmi->ctl_mask);
  nmi->ctl_pix = pix;
  nmi->ctl_mask = mask;
  nmi->ctl_w = control->width;
  nmi->ctl_h = control->height;
  return GR_OK;
}

/* One valid template pixel: its offset in the (packed) control relative to the
 * translation's top-left, and its bin. */
typedef struct {
  int32_t off;
  int32_t bin;
} TplPixel;

static double
entropy_256 (const int32_t *h, double n, const double *clnc)
{
  double s = 0.0;
  for (int i = 0; i < 256; i++)
    s += clnc[h[i]];
  return log (n) - s / n;
}

static GrStatus
run_cpu (GrNmiDense *nmi, const GrImage8 *templ, GrRegion r, int min_valid,
    double *scores, int32_t *valid)
{
  const int tw = templ->width, th = templ->height;
  const int cw = nmi->ctl_w;
  TplPixel *tp = malloc (sizeof (TplPixel) * (size_t) tw * th);
  double *clnc = malloc (sizeof (double) * ((size_t) tw * th + 1));
  if (!tp || !clnc) {
    free (tp);
    free (clnc);
    return GR_ERR_NOMEM;
  }
  int ntp = 0;
  for (int y = 0; y < th; y++)
    for (int x = 0; x < tw; x++)
      if (!templ->mask || templ->mask[y * templ->mask_stride + x]) {
        tp[ntp].off = y * cw + x;
        tp[ntp].bin = templ->pix[y * templ->pix_stride + x] << 8;
        ntp++;
      }
  clnc[0] = 0.0;
  for (int c = 1; c <= ntp; c++)
    clnc[c] = c * log ((double) c);

  const int rw = r.x1 - r.x0, rh = r.y1 - r.y0;
  const long npos = (long) rw * rh;
  const uint8_t *cpix = nmi->ctl_pix, *cmask = nmi->ctl_mask;
  bool oom = false;

#pragma omp parallel num_threads (nmi->threads > 0 ? nmi->threads : omp_get_max_threads ())
  {
    uint32_t *joint = calloc (65536, sizeof (uint32_t));
    uint16_t *touched = malloc (sizeof (uint16_t) * 65537);   /* one spare slot */
    int32_t ha[256], hb[256];
    if (!joint || !touched) {
#pragma omp atomic write
      oom = true;
    }
#pragma omp for schedule (dynamic, 16)
    for (long i = 0; i < npos; i++) {
      if (!joint || !touched)
        continue;
      const int dy = r.y0 + (int) (i / rw), dx = r.x0 + (int) (i % rw);
      const size_t base = (size_t) dy * cw + dx;
      const uint8_t *cp = cpix + base;
      const uint8_t *cm = cmask ? cmask + base : NULL;
      int n = 0, nt = 0;
      memset (ha, 0, sizeof ha);
      memset (hb, 0, sizeof hb);
      /* branch-free inner loops: first touches of a bin, and masked pixels, come in
       * no predictable order */
      if (cm) {
        for (int k = 0; k < ntp; k++) {
          const int32_t off = tp[k].off;
          const uint32_t v = cm[off];          /* 0 or 1 (normalized in set_control) */
          const int bin = tp[k].bin | cp[off];
          const uint32_t old = joint[bin];
          joint[bin] = old + v;
          touched[nt] = (uint16_t) bin;
          nt += (old == 0) & v;
          n += v;
        }
      } else {
        for (int k = 0; k < ntp; k++) {
          const int32_t off = tp[k].off;
          const int bin = tp[k].bin | cp[off];
          touched[nt] = (uint16_t) bin;
          nt += joint[bin]++ == 0;
        }
        n = ntp;
      }
      /* the marginals come from the touched bins (at most n of them, usually far
       * fewer), not from two more increments per pixel */
      double s = 0.0;
      for (int t = 0; t < nt; t++) {
        const int bin = touched[t];
        const uint32_t c = joint[bin];
        s += clnc[c];
        ha[bin >> 8] += c;
        hb[bin & 255] += c;
        joint[bin] = 0;
      }
      if (valid)
        valid[i] = n;
      if (n < min_valid || n == 0) {
        scores[i] = NAN;
        continue;
      }
      const double dn = n;
      const double hab = log (dn) - s / dn;
      const double hA = entropy_256 (ha, dn, clnc);
      const double hB = entropy_256 (hb, dn, clnc);
      /* one occupied joint bin: both images constant, H(A,B) = 0 exactly (the
       * formula above leaves a rounding residue), score 1 by definition */
      scores[i] = nt > 1 && hab > 0.0 ? (hA + hB) / hab : 1.0;
    }
    free (joint);
    free (touched);
  }
  free (tp);
  free (clnc);
  return oom ? GR_ERR_NOMEM : GR_OK;
}

static GrStatus
job_ok (const GrNmiDense *nmi, const GrNmiDenseJob *j, char *errbuf, size_t errlen)
{
  if (!image_ok (j->templ) || !j->scores) {
    gr_set_err (errbuf, errlen, "template image: bad size, stride or pointer");
    return GR_ERR_INVALID;
  }
  const int cw = nmi->ctl_w, ch = nmi->ctl_h;
  const GrRegion r = j->region;
  if (r.x1 <= r.x0 || r.y1 <= r.y0 || r.x0 < 0 || r.y0 < 0 ||
      r.x1 - 1 + j->templ->width > cw || r.y1 - 1 + j->templ->height > ch) {
    gr_set_err (errbuf, errlen, "search region [%d,%d)x[%d,%d) with a %dx%d template does "
        "not fit the %dx%d control", r.x0, r.x1, r.y0, r.y1, j->templ->width,
        j->templ->height, cw, ch);
    return GR_ERR_INVALID;
  }
  return GR_OK;
}

static long
job_positions (const GrNmiDenseJob *j)
{
  return (long) (j->region.x1 - j->region.x0) * (j->region.y1 - j->region.y0);
}

GrStatus
gr_nmi_dense_run_batch (GrNmiDense *nmi, const GrNmiDenseJob *jobs, int n, char *errbuf,
    size_t errlen)
{
  if (!nmi || n < 0 || (n > 0 && !jobs)) {
    gr_set_err (errbuf, errlen, "bad search batch");
    return GR_ERR_INVALID;
  }
  if (nmi->ctl_w == 0) {
    gr_set_err (errbuf, errlen, "no control image set");
    return GR_ERR_INVALID;
  }
  for (int k = 0; k < n; k++) {
    const GrStatus st = job_ok (nmi, &jobs[k], errbuf, errlen);
    if (st != GR_OK)
      return st;
  }
  if (n == 0)
    return GR_OK;
  /* the backends' view: min_valid >= 1, and the counts the weighting needs */
  const bool weighted = nmi->score == GR_NMI_SCORE_OVERLAP_WEIGHTED;
  GrNmiDenseJob *run = malloc (sizeof (GrNmiDenseJob) * (size_t) n);
  int32_t **own = calloc ((size_t) n, sizeof (int32_t *));
  GrStatus st = run && own ? GR_OK : GR_ERR_NOMEM;
  for (int k = 0; k < n && st == GR_OK; k++) {
    run[k] = jobs[k];
    run[k].min_valid = jobs[k].min_valid < 1 ? 1 : jobs[k].min_valid;
    if (weighted && !jobs[k].valid) {
      own[k] = malloc (sizeof (int32_t) * (size_t) job_positions (&jobs[k]));
      run[k].valid = own[k];
      if (!own[k])
        st = GR_ERR_NOMEM;
    }
  }
  if (st != GR_OK) {
    gr_set_err (errbuf, errlen, "%s", gr_status_string (st));
  } else {
#if GR_HAVE_CUDA
    if (nmi->backend == GR_BACKEND_CUDA)
      st = gr_nmi_dense_cuda_run_batch (nmi->cuda, run, n, errbuf, errlen);
    else
#endif
    {
      for (int k = 0; k < n && st == GR_OK; k++)
        st = run_cpu (nmi, run[k].templ, run[k].region, run[k].min_valid, run[k].scores,
            run[k].valid);
      if (st != GR_OK)
        gr_set_err (errbuf, errlen, "%s", gr_status_string (st));
    }
  }
  for (int k = 0; k < n && st == GR_OK && weighted; k++) {
    /* on the host for both backends: one pass over the map, identical results */
    const GrImage8 *t = run[k].templ;
    long tvalid = 0;
    for (int y = 0; y < t->height; y++)
      for (int x = 0; x < t->width; x++)
        tvalid += !t->mask || t->mask[y * t->mask_stride + x];
    const long npos = job_positions (&run[k]);
    for (long i = 0; i < npos; i++)
      run[k].scores[i] = gr_nmi_overlap_weighted (run[k].scores[i], run[k].valid[i], tvalid);
  }
  for (int k = 0; own && k < n; k++)
    free (own[k]);
  free (own);
  free (run);
  return st;
}

GrStatus
gr_nmi_dense_run (GrNmiDense *nmi, const GrImage8 *templ, GrRegion region,
    int min_valid, double *scores, int32_t *valid, char *errbuf, size_t errlen)
{
  if (!nmi || !image_ok (templ) || !scores) {
    gr_set_err (errbuf, errlen, "template image: bad size, stride or pointer");
    return GR_ERR_INVALID;
  }
  const GrNmiDenseJob job = { templ, region, min_valid, scores, valid };
  return gr_nmi_dense_run_batch (nmi, &job, 1, errbuf, errlen);
}
