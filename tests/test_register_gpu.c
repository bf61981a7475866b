/* GrRegister (kernels/register.h) on CUDA: the same frames and priors as
 * test_register.c, once as host frames and once as device frames (the frame plane
 * uploaded, ranged, quantized and its keypoints found on the device), each giving
 * the CPU engine's result bit for bit; plus ground-truth accuracy and the full
 * search.  Exit 0 pass, 1 fail, 77 skip (no usable CUDA device).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <stdio.h>

#if GR_HAVE_CUDA
#include "register_cuda.h"
#include "test_register_common.h"

static void
compare (const char *what, const GrRegisterResult *a, const GrRegisterResult *b)
{
  CHECK (a->has_transform == b->has_transform && a->flags == b->flags &&
      a->keypoints == b->keypoints && a->matches == b->matches &&
      a->inliers == b->inliers, "%s: CUDA (flags 0x%x kp %d m %d inl %d) vs CPU "
      "(flags 0x%x kp %d m %d inl %d)", what, a->flags, a->keypoints, a->matches,
      a->inliers, b->flags, b->keypoints, b->matches, b->inliers);
  CHECK (memcmp (a->h, b->h, sizeof a->h) == 0, "%s: transforms differ", what);
  CHECK ((isnan (a->rms) && isnan (b->rms)) || a->rms == b->rms, "%s: rms differs",
      what);
}

int
main (void)
{
  char err[256] = "";
  if (gr_cuda_device_count () == 0) {
    printf ("SKIP: no usable CUDA device\n");
    return 77;
  }
  rt_make_control ();
  GrRegister *cpu = rt_engine (GR_BACKEND_CPU), *gpu = rt_engine (GR_BACKEND_CUDA);
  if (!cpu || !gpu)
    return 1;
  CHECK (gr_register_backend (gpu) == GR_BACKEND_CUDA, "CUDA engine on %s",
      gr_backend_name (gr_register_backend (gpu)));
  const int dev = gr_register_frame_device (gpu);
  CHECK (dev >= 0, "the CUDA engine takes device frames");

  GrRegisterParams p;
  gr_register_params_init (&p);
  p.max_keypoints = 200;
  static const double poses[3][4] = {
    {3.0, 1.05, 210.0, 140.0}, {-4.0, 0.95, 120.0, 90.0}, {1.0, 1.0, 300.0, 200.0},
  };
  for (int f = 0; f < 3; f++) {
    GrPlaneF frame = { 0 }, dframe = { 0 };
    double ht[9];
    rt_make_frame (poses[f][0], poses[f][1], poses[f][2], poses[f][3], 5 + f, &frame,
        ht);
    GrRegisterPrior prior;
    rt_offset_prior (ht, 1.0, 6.0, -5.0, &prior);
    GrRegisterResult rc = { 0 }, rg = { 0 }, rd = { 0 };
    CHECK (gr_register_set_frame (cpu, &p, &frame, false, GR_BINS_MINMAX, 8, 0, 0, err,
            sizeof err) == GR_OK, "cpu set_frame: %s", err);
    CHECK (gr_register_run (cpu, &p, &prior, &rc, err, sizeof err) == GR_OK,
        "cpu run: %s", err);
    /* host frame, CUDA matcher */
    CHECK (gr_register_set_frame (gpu, &p, &frame, false, GR_BINS_MINMAX, 8, 0, 0, err,
            sizeof err) == GR_OK, "gpu set_frame: %s", err);
    CHECK (gr_register_run (gpu, &p, &prior, &rg, err, sizeof err) == GR_OK,
        "gpu run: %s", err);
    compare ("host frame", &rg, &rc);
    /* device frame */
    CHECK (gr_cuda_plane_upload (dev, &frame, &dframe, err, sizeof err) == GR_OK,
        "upload: %s", err);
    CHECK (gr_register_set_frame (gpu, &p, &dframe, true, GR_BINS_MINMAX, 8, 0, 0, err,
            sizeof err) == GR_OK, "gpu device set_frame: %s", err);
    CHECK (gr_register_run (gpu, &p, &prior, &rd, err, sizeof err) == GR_OK,
        "gpu device run: %s", err);
    compare ("device frame", &rd, &rc);
    double rms = INFINITY, worst = INFINITY;
    if (rd.has_transform)
      rt_truth_error (rd.h_index, ht, &rms, &worst);
    printf ("frame %d: flags 0x%03x inliers %d truth rms %.3f max %.3f\n", f, rd.flags,
        rd.inliers, rms, worst);
    CHECK (rms < 0.3 && worst < 0.8, "frame %d: truth error rms %.3f max %.3f", f, rms,
        worst);
    gr_register_result_clear (&rd);
    /* the full search from a device frame (downloaded for it) */
    memset (&prior, 0, sizeof prior);
    prior.search = true;
    prior.search_scale = 1.0;
    CHECK (gr_register_run (gpu, &p, &prior, &rd, err, sizeof err) == GR_OK,
        "gpu search: %s", err);
    gr_register_result_clear (&rc);
    CHECK (gr_register_run (cpu, &p, &prior, &rc, err, sizeof err) == GR_OK,
        "cpu search: %s", err);
    compare ("device frame, full search", &rd, &rc);
    gr_register_result_clear (&rc);
    gr_register_result_clear (&rg);
    gr_register_result_clear (&rd);
    gr_cuda_device_free (dev, dframe.data);
    gr_cuda_device_free (dev, dframe.mask);
    gr_plane_clear (&frame);
  }
  /* a lens (issue 13): the refinement's templates resampled through it on the device
   * (register_cuda.cu's lens_distort_dev) give the CPU's bytes, from a host frame and
   * from a device frame, and the result is right against the truth */
  {
    const GrCamera lens = rt_lens ();
    GrPlaneF df = { 0 }, ddf = { 0 };
    double hd[9];
    rt_make_distorted_frame (-6.0, 1.1, 220.0, 150.0, 9, &lens, &df, hd);
    GrRegisterPrior lp;
    rt_offset_prior (hd, 1.1, 5.0, -4.0, &lp);
    GrRegisterResult rc = { 0 }, rg = { 0 }, rd = { 0 };
    CHECK (gr_register_set_lens (cpu, &lens) && gr_register_set_lens (gpu, &lens),
        "set_lens");
    CHECK (gr_register_set_frame (cpu, &p, &df, false, GR_BINS_MINMAX, 8, 0, 0, err,
            sizeof err) == GR_OK && gr_register_run (cpu, &p, &lp, &rc, err,
            sizeof err) == GR_OK, "cpu lens: %s", err);
    CHECK (gr_register_set_frame (gpu, &p, &df, false, GR_BINS_MINMAX, 8, 0, 0, err,
            sizeof err) == GR_OK && gr_register_run (gpu, &p, &lp, &rg, err,
            sizeof err) == GR_OK, "gpu lens: %s", err);
    compare ("lens, host frame", &rg, &rc);
    CHECK (gr_cuda_plane_upload (dev, &df, &ddf, err, sizeof err) == GR_OK, "upload: %s",
        err);
    CHECK (gr_register_set_frame (gpu, &p, &ddf, true, GR_BINS_MINMAX, 8, 0, 0, err,
            sizeof err) == GR_OK && gr_register_run (gpu, &p, &lp, &rd, err,
            sizeof err) == GR_OK, "gpu device lens: %s", err);
    compare ("lens, device frame", &rd, &rc);
    double rms = INFINITY, worst = INFINITY;
    rt_truth_error_lens (&rd, &lens, hd, &rms, &worst);
    printf ("lens: undistorted %d flags 0x%03x inliers %d truth rms %.3f max %.3f\n",
        rd.undistorted, rd.flags, rd.inliers, rms, worst);
    CHECK (rd.undistorted && rms < 0.3 && worst < 0.8, "lens: undistorted %d truth "
        "error rms %.3f max %.3f", rd.undistorted, rms, worst);
    gr_register_result_clear (&rc);
    gr_register_result_clear (&rg);
    gr_register_result_clear (&rd);
    gr_cuda_device_free (dev, ddf.data);
    gr_cuda_device_free (dev, ddf.mask);
    gr_plane_clear (&df);
  }
  gr_register_free (cpu);
  gr_register_free (gpu);
  gr_synth_image_free (&rt_control);
  return CHECK_DONE ();
}

#else

int
main (void)
{
  printf ("SKIP: built without CUDA\n");
  return 77;
}

#endif
