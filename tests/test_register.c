/* GrRegister (kernels/register.h) on the CPU, without GStreamer: ground-truth
 * accuracy over the whole frame from an offset prior, from a full 3x3 prior, from
 * the full search and with a second opinion; determinism; and bad input (invalid
 * parameters, calls out of order, a flat frame, a prior off the control, a NaN
 * prior).
 * SPDX-License-Identifier: LGPL-2.1-or-later */
#include "test_register_common.h"

static GrRegisterResult
run_ok (GrRegister *r, const GrRegisterParams *p, const GrRegisterPrior *prior)
{
  GrRegisterResult res;
  char err[256] = "";
  GrStatus st = gr_register_run (r, p, prior, &res, err, sizeof err);
  CHECK (st == GR_OK, "gr_register_run: %s (%s)", gr_status_string (st), err);
  return res;
}

static void
check_accurate (const char *what, const GrRegisterResult *res, const double ht[9])
{
  double rms = INFINITY, worst = INFINITY;
  if (res->has_transform)
    rt_truth_error (res->h_index, ht, &rms, &worst);
  printf ("%-22s flags 0x%03x kp %3d matches %3d inliers %3d fit-rms %.3f  "
      "truth rms %.3f max %.3f\n", what, res->flags, res->keypoints, res->matches,
      res->inliers, res->rms, rms, worst);
  CHECK (res->has_transform, "%s: no transform", what);
  CHECK (gr_register_result_sound (res), "%s: not sound (flags 0x%x)", what,
      res->flags);
  CHECK (rms < 0.3 && worst < 0.8, "%s: truth error rms %.3f max %.3f", what, rms,
      worst);
  /* the corner form is the index form shifted by half a pixel */
  double x, y, xi, yi;
  gr_fit_apply (res->h, 10.5, 20.5, &x, &y);
  gr_fit_apply (res->h_index, 10.0, 20.0, &xi, &yi);
  CHECK (fabs (x - (xi + 0.5)) < 1e-9 && fabs (y - (yi + 0.5)) < 1e-9,
      "%s: corner and index transforms disagree", what);
}

int
main (void)
{
  char err[256];
  rt_make_control ();
  GrRegister *r = rt_engine (GR_BACKEND_CPU);
  if (!r)
    return 1;
  CHECK (gr_register_backend (r) == GR_BACKEND_CPU, "backend");
  CHECK (gr_register_frame_device (r) == -1, "a CPU engine takes host frames");

  GrRegisterParams p;
  gr_register_params_init (&p);
  p.max_keypoints = 200;
  GrPlaneF frame = { 0 };
  double ht[9];
  rt_make_frame (3.0, 1.05, 210.0, 140.0, 5, &frame, ht);
  CHECK (gr_register_set_frame (r, &p, &frame, false, GR_BINS_MINMAX, 8, 0, 0, err,
          sizeof err) == GR_OK, "set_frame: %s", err);

  /* an offset prior 6 px off */
  GrRegisterPrior prior;
  rt_offset_prior (ht, 1.0, 6.0, -5.0, &prior);
  GrRegisterResult res = run_ok (r, &p, &prior);
  check_accurate ("offset prior", &res, ht);
  CHECK (!(res.flags & GR_REGISTER_FULL_SEARCH), "no search was asked for");
  CHECK (res.has_prior && memcmp (res.prior, prior.h, sizeof prior.h) == 0,
      "the prior used is the one given");
  CHECK (res.kp == NULL && res.match_frame == NULL, "nothing kept unless asked");

  /* the same again: bit for bit */
  GrRegisterResult again = run_ok (r, &p, &prior);
  CHECK (again.has_transform && memcmp (again.h, res.h, sizeof res.h) == 0 &&
      again.inliers == res.inliers && again.matches == res.matches,
      "a second run differs");
  gr_register_result_clear (&again);

  /* keep_matches: the keypoints and the fit's matches with their inlier mask */
  p.keep_matches = true;
  again = run_ok (r, &p, &prior);
  CHECK (again.kp != NULL && again.match_frame && again.match_control && again.inlier
      && again.n_matches == again.matches, "keep_matches keeps the matches");
  int ninl = 0;
  for (int i = 0; again.inlier && i < again.n_matches; i++)
    ninl += again.inlier[i] != 0;
  CHECK (ninl == again.inliers, "inlier mask %d vs %d inliers", ninl, again.inliers);
  CHECK (memcmp (again.h, res.h, sizeof res.h) == 0, "keep_matches changed the fit");
  gr_register_result_clear (&again);
  p.keep_matches = false;
  gr_register_result_clear (&res);

  /* a full 3x3 prior: the true homography (corners) with a 4 px error */
  double hc[9];
  {
    const double tp[9] = { 1, 0, 0.5, 0, 1, 0.5, 0, 0, 1 };
    const double tm[9] = { 1, 0, -0.5, 0, 1, -0.5, 0, 0, 1 };
    double t[9];
    gr_mat3_mul (tp, ht, t);
    gr_mat3_mul (t, tm, hc);
    hc[2] += 4.0 * hc[8];
    hc[5] -= 3.0 * hc[8];
  }
  memset (&prior, 0, sizeof prior);
  prior.has_prior = true;
  memcpy (prior.h, hc, sizeof hc);
  res = run_ok (r, &p, &prior);
  check_accurate ("homography prior", &res, ht);
  gr_register_result_clear (&res);

  /* a frame turned by 30 degrees at scale 1.1: an offset prior cannot start it, its
   * homography (4 px off) can */
  {
    GrPlaneF turned = { 0 };
    double ht2[9], hc2[9];
    rt_make_frame (30.0, 1.1, 200.0, 150.0, 9, &turned, ht2);
    const double tp[9] = { 1, 0, 0.5, 0, 1, 0.5, 0, 0, 1 };
    const double tm[9] = { 1, 0, -0.5, 0, 1, -0.5, 0, 0, 1 };
    double t[9];
    gr_mat3_mul (tp, ht2, t);
    gr_mat3_mul (t, tm, hc2);
    hc2[2] += 4.0 * hc2[8];
    hc2[5] += 2.0 * hc2[8];
    CHECK (gr_register_set_frame (r, &p, &turned, false, GR_BINS_MINMAX, 8, 0, 0, err,
            sizeof err) == GR_OK, "set_frame: %s", err);
    memset (&prior, 0, sizeof prior);
    prior.has_prior = true;
    memcpy (prior.h, hc2, sizeof hc2);
    res = run_ok (r, &p, &prior);
    check_accurate ("turned, homography", &res, ht2);
    gr_register_result_clear (&res);
    CHECK (gr_register_set_frame (r, &p, &frame, false, GR_BINS_MINMAX, 8, 0, 0, err,
            sizeof err) == GR_OK, "set_frame: %s", err);
    gr_plane_clear (&turned);
  }

  /* no prior: the full search */
  memset (&prior, 0, sizeof prior);
  prior.search = true;
  prior.search_scale = 1.0;
  res = run_ok (r, &p, &prior);
  check_accurate ("full search", &res, ht);
  CHECK (res.searched && (res.flags & GR_REGISTER_FULL_SEARCH) && res.has_prior,
      "the full search is reported");
  gr_register_result_clear (&res);

  /* a wrong, doubtful prior: the second opinion from the full search wins */
  rt_offset_prior (ht, 1.0, 120.0, -90.0, &prior);
  prior.second_opinion = true;
  res = run_ok (r, &p, &prior);
  check_accurate ("second opinion", &res, ht);
  CHECK (res.flags & GR_REGISTER_FULL_SEARCH, "the second opinion is flagged");
  gr_register_result_clear (&res);
  /* ... and without the second opinion the wrong prior gives no sound result */
  prior.second_opinion = false;
  res = run_ok (r, &p, &prior);
  CHECK (!gr_register_result_sound (&res), "a wrong prior passed as sound (0x%x)",
      res.flags);
  gr_register_result_clear (&res);

  /* a NaN prior and a prior far off the control: flagged, no transform, no crash */
  rt_offset_prior (ht, 1.0, 0, 0, &prior);
  prior.h[2] = NAN;
  res = run_ok (r, &p, &prior);
  CHECK (!res.has_transform && (res.flags & GR_REGISTER_TOO_FEW_MATCHES),
      "NaN prior: flags 0x%x", res.flags);
  gr_register_result_clear (&res);
  rt_offset_prior (ht, 1.0, 1e7, 1e7, &prior);
  res = run_ok (r, &p, &prior);
  CHECK (!res.has_transform, "a prior off the control registered");
  gr_register_result_clear (&res);

  /* bad parameters */
  GrRegisterParams bad = p;
  bad.template_size = 10;
  rt_offset_prior (ht, 1.0, 0, 0, &prior);
  CHECK (gr_register_run (r, &bad, &prior, &res, err, sizeof err) == GR_ERR_INVALID,
      "even template accepted");
  bad = p;
  bad.window_size = 5;
  CHECK (gr_register_run (r, &bad, &prior, &res, err, sizeof err) == GR_ERR_INVALID,
      "window smaller than the template accepted");
  bad = p;
  bad.levels = 1;
  CHECK (gr_register_set_frame (r, &bad, &frame, false, GR_BINS_MINMAX, 8, 0, 0, err,
          sizeof err) == GR_ERR_INVALID, "1 level accepted");
  CHECK (gr_register_set_frame (r, &p, &frame, false, GR_BINS_FIXED, 8, 5, 5, err,
          sizeof err) == GR_ERR_INVALID, "an empty fixed range accepted");
  CHECK (gr_register_set_frame (r, &p, &frame, false, GR_BINS_PERCENTILE, 8, 50, 120,
          err, sizeof err) == GR_ERR_INVALID, "a percentile above 100 accepted");
  CHECK (gr_register_set_frame (r, &p, &frame, true, GR_BINS_MINMAX, 8, 0, 0, err,
          sizeof err) == GR_ERR_INVALID, "a device frame accepted by a CPU engine");
  CHECK (gr_register_set_frame (r, &p, NULL, false, GR_BINS_MINMAX, 8, 0, 0, err,
          sizeof err) == GR_ERR_INVALID, "a NULL frame accepted");
  memset (&prior, 0, sizeof prior);
  prior.search = true;          /* search without a scale */
  CHECK (gr_register_run (r, &p, &prior, &res, err, sizeof err) == GR_ERR_INVALID,
      "a search without a scale accepted");

  /* a flat frame: too few keypoints, flagged */
  GrPlaneF flat = { 0 };
  gr_plane_alloc (&flat, RFW, RFH, false);
  for (int i = 0; i < RFW * RFH; i++)
    flat.data[i] = 77.0f;
  CHECK (gr_register_set_frame (r, &p, &flat, false, GR_BINS_MINMAX, 8, 0, 0, err,
          sizeof err) == GR_OK, "flat frame: %s", err);
  rt_offset_prior (ht, 1.0, 0, 0, &prior);
  res = run_ok (r, &p, &prior);
  CHECK (!res.has_transform && (res.flags & GR_REGISTER_TOO_FEW_KEYPOINTS),
      "flat frame: flags 0x%x", res.flags);
  gr_register_result_clear (&res);

  /* calls out of order: no frame, no control */
  GrStatus st;
  GrRegister *fresh = gr_register_new (GR_BACKEND_CPU, -1, &st, err, sizeof err);
  CHECK (fresh && gr_register_run (fresh, &p, &prior, &res, err, sizeof err) ==
      GR_ERR_INVALID, "run without control or frame accepted");
  CHECK (gr_register_set_control (fresh, NULL, 0, 1, 16, NULL, 0, NULL, err,
          sizeof err) == GR_ERR_INVALID, "a NULL control accepted");
  gr_register_free (fresh);
  gr_register_free (NULL);

  /* a lens (issue 13): keypoints undistorted before the fit, the refinement's
   * templates resampled through it; the transform takes undistorted pixels and the
   * full mapping is right over the whole frame, where the pinhole fit of the same
   * frame is not */
  {
    const GrCamera lens = rt_lens ();
    GrPlaneF df = { 0 };
    double hd[9];
    rt_make_distorted_frame (-6.0, 1.1, 220.0, 150.0, 9, &lens, &df, hd);
    GrRegisterPrior lp;
    rt_offset_prior (hd, 1.1, 5.0, -4.0, &lp);
    CHECK (gr_register_set_frame (r, &p, &df, false, GR_BINS_MINMAX, 8, 0, 0, err,
            sizeof err) == GR_OK, "set_frame (lens): %s", err);
    double rms_lens, max_lens, rms_pin, max_pin;
    CHECK (gr_register_set_lens (r, &lens), "set_lens");
    GrRegisterResult rl = run_ok (r, &p, &lp);
    rt_truth_error_lens (&rl, &lens, hd, &rms_lens, &max_lens);
    CHECK (gr_register_set_lens (r, NULL), "clear the lens");
    GrRegisterResult rp = run_ok (r, &p, &lp);
    rt_truth_error_lens (&rp, &lens, hd, &rms_pin, &max_pin);
    printf ("lens: undistorted %d flags 0x%03x inliers %d truth rms %.3f max %.3f; "
        "pinhole fit: flags 0x%03x truth rms %.3f max %.3f\n", rl.undistorted, rl.flags,
        rl.inliers, rms_lens, max_lens, rp.flags, rms_pin, max_pin);
    CHECK (rl.undistorted && !rp.undistorted, "undistorted flags %d %d", rl.undistorted,
        rp.undistorted);
    CHECK (gr_register_result_sound (&rl), "lens: not sound (flags 0x%x)", rl.flags);
    CHECK (rms_lens < 0.3 && max_lens < 0.8, "lens: truth error rms %.3f max %.3f",
        rms_lens, max_lens);
    CHECK (max_pin > 2.0 * max_lens, "the lens made no difference (max %.3f vs %.3f)",
        max_pin, max_lens);
    /* a lens that is not one is refused and leaves none set */
    GrCamera bad = lens;
    bad.fx = 0.0;
    CHECK (!gr_register_set_lens (r, &bad), "a zero focal length accepted");
    GrRegisterResult rn = run_ok (r, &p, &lp);
    CHECK (!rn.undistorted, "a refused lens was used");
    gr_register_result_clear (&rl);
    gr_register_result_clear (&rp);
    gr_register_result_clear (&rn);
    gr_plane_clear (&df);
  }

  gr_plane_clear (&flat);
  gr_plane_clear (&frame);
  gr_register_free (r);
  gr_synth_image_free (&rt_control);
  return CHECK_DONE ();
}
