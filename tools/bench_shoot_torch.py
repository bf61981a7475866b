#!/usr/bin/env python3
"""Benchmark only: the landmarkshoot objective written in PyTorch, the way a user would
(dense N x N kernel matrices, autograd through the Euler steps, torch.optim.LBFGS with
the strong-Wolfe line search), timed on the same data as tests/bench_shoot.c.

Same model as kernels/shoot.h: g = exp(-r^2 / (2 sigma^2)), H = 1/2 sum_ij g_ij p_i.p_j,
T time points, forward Euler, loss = H(q0, p0) + lambda / 2 |q(1) - target|^2, float32.
The Hamiltonian's gradients are written out (Hp = K p, Hq = c (rowsum(W) q - W q) with
W = K * (p p^T)) rather than taken by a second autograd pass, which is the faster of the
two ways a user would write it.

  bench_shoot_torch.py --dir DUMP [--sizes 500,1000,1847,...] [--iters 400]
                       [--sweep-iters 50] [--out result.json]

DUMP holds tmpl_N.csv / tgt_N.csv written by bench_shoot (GEOREG_BENCH_DUMP).  The
seed's size (N = 1847) runs --iters iterations; the others --sweep-iters (their time per
evaluation is the comparable figure).  Out of memory is reported, not fatal.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

SIGMA, T_POINTS, LAMBDA = 1.5, 40, 5e5


def load_csv(path, device):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0].isalpha():
                continue
            rows.append([float(v) for v in line.split(",")])
    return torch.tensor(rows, dtype=torch.float32, device=device)


def make_loss(q0, tgt, sigma=SIGMA, T=T_POINTS, lam=LAMBDA):
    k = 1.0 / (2.0 * sigma * sigma)
    c = -1.0 / (sigma * sigma)
    dt = 1.0 / (T - 1)

    def loss(p0):
        q, p = q0, p0
        energy = None
        for t in range(T - 1):
            sq = (q * q).sum(1)
            d2 = (sq[:, None] + sq[None, :] - 2.0 * (q @ q.T)).clamp_min(0.0)
            K = torch.exp(-k * d2)
            hp = K @ p
            if t == 0:
                energy = 0.5 * (p * hp).sum()
            W = K * (p @ p.T)
            hq = c * (W.sum(1, keepdim=True) * q - W @ q)
            q, p = q + dt * hp, p - dt * hq
        return energy + 0.5 * lam * ((q - tgt) ** 2).sum(), q

    return loss


def mean_distance(a, b):
    return float(torch.linalg.norm(a - b, dim=1).mean())


def run(n, data_dir, iters, device, reps=5):
    q0 = load_csv(os.path.join(data_dir, f"tmpl_{n}.csv"), device)
    tgt = load_csv(os.path.join(data_dir, f"tgt_{n}.csv"), device)
    loss_fn = make_loss(q0, tgt)
    res = {"n": n, "device": torch.cuda.get_device_name(device), "torch": torch.__version__}

    # time of one loss + gradient evaluation (median after warm-up)
    p = (0.01 * torch.sin(0.25 * q0)).requires_grad_(True)
    times = []
    for i in range(reps + 2):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        l, _ = loss_fn(p)
        l.backward()
        p.grad = None
        torch.cuda.synchronize()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    res["eval_ms"] = 1e3 * statistics.median(times)
    res["peak_gb"] = torch.cuda.max_memory_allocated(device) / 2**30

    # the fit from p0 = 0, tolerances off
    p0 = torch.zeros_like(q0, requires_grad=True)
    opt = torch.optim.LBFGS([p0], lr=1.0, max_iter=iters, max_eval=int(iters * 1.25) + 10,
                            tolerance_grad=0.0, tolerance_change=0.0, history_size=10,
                            line_search_fn="strong_wolfe")
    evals = [0]

    def closure():
        opt.zero_grad()
        l, _ = loss_fn(p0)
        l.backward()
        evals[0] += 1
        return l

    with torch.no_grad():
        l0, _ = loss_fn(p0)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    opt.step(closure)
    torch.cuda.synchronize()
    res["fit_s"] = time.perf_counter() - t0
    state = opt.state[opt._params[0]]
    res["iterations"] = int(state.get("n_iter", 0))
    res["evaluations"] = evals[0]
    with torch.no_grad():
        l1, q1 = loss_fn(p0)
    res["loss_before"], res["loss_after"] = float(l0), float(l1)
    res["mean_distance_before"] = mean_distance(q0, tgt)
    res["mean_distance_after"] = mean_distance(q1, tgt)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--sizes", default="500,1000,1847,5000,10000,20000")
    ap.add_argument("--iters", type=int, default=400)
    ap.add_argument("--sweep-iters", type=int, default=50)
    ap.add_argument("--out")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device for PyTorch")
        return 1
    dev = torch.device("cuda")
    results = []
    for n in [int(s) for s in a.sizes.split(",") if s]:
        iters = a.iters if n == 1847 else a.sweep_iters
        try:
            r = run(n, a.dir, iters, dev)
        except torch.cuda.OutOfMemoryError as e:
            r = {"n": n, "error": "out of memory", "detail": str(e).splitlines()[0]}
        except FileNotFoundError as e:
            r = {"n": n, "error": "no data", "detail": str(e)}
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
        results.append(r)
        print(json.dumps(r), flush=True)
    print("\n| N | ms / evaluation | iterations | evaluations | fit s | mean distance "
          "before -> after | peak GiB |\n|---|---|---|---|---|---|---|")
    for r in results:
        if "error" in r:
            print(f"| {r['n']} | {r['error']} | | | | | |")
        else:
            print(f"| {r['n']} | {r['eval_ms']:.2f} | {r['iterations']} | {r['evaluations']} "
                  f"| {r['fit_s']:.2f} | {r['mean_distance_before']:.4f} -> "
                  f"{r['mean_distance_after']:.4f} | {r['peak_gb']:.1f} |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"benchmark": "landmarkshoot-pytorch", "results": results}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
