#!/usr/bin/env python3
"""Benchmark only: a population registered to one template, written in PyTorch the way a
user would, on the data of tests/bench_shoot.c's population mode (GEOREG_BENCH_POPULATION
with GEOREG_BENCH_DUMP: pop_tmpl_N.csv and pop_targets_N_S.csv).

Same model as kernels/shoot.h and tools/bench_shoot_torch.py (g = exp(-r^2 / (2 sigma^2)),
T = 40 Euler steps, lambda 5e5, float32; Hp and Hq written out, autograd through the
steps).  Subjects are batched: momenta of shape (C, N, 3) for a chunk of C subjects, the
kernel matrices as (C, N, N) batched tensors, the loss the sum of the subjects' losses.
torch.optim.LBFGS has one state per parameter tensor, so there are two ways to write it:
  --mode joint       one L-BFGS over a chunk's summed loss (400 iterations; the
                     subjects share line searches, so each subject's loss differs
                     from its lone fit: reported per subject next to georeg's);
  --mode sequential  one L-BFGS per subject (the same stopping rule as georeg's
                     per-subject L-BFGS), timed on --limit subjects and extrapolated
                     to all of them (said so in the output).
Out of memory is reported, not fatal: lower --chunk.

  bench_population_torch.py --dir DUMP --n 1847 --subjects 1000 [--chunk 8]
      [--mode joint|sequential] [--limit 8] [--iters 400] [--out result.json]

Prints one line (subjects timed, seconds, mean loss reached, evaluations, peak memory);
--out writes the details (per-subject losses) as JSON.  Needs only torch.
"""
import argparse
import json
import os
import sys
import time

import torch

SIGMA, T_POINTS, LAMBDA = 1.5, 40, 5e5


def load_population(path, n, s, device):
    """subject,x,y,z rows, subject-major (as bench_shoot writes them) -> (s, n, 3)."""
    rows = [[], [], [], []]
    with open(path) as f:
        for line in f:
            if not line or line[0].isalpha():
                continue
            for col, v in zip(rows, line.split(",")):
                col.append(float(v))
    subj = torch.tensor(rows[0], dtype=torch.int64)
    xyz = torch.tensor(rows[1:], dtype=torch.float64).T
    if xyz.shape[0] != s * n or bool((subj != torch.arange(s).repeat_interleave(n)).any()):
        raise SystemExit(f"{path}: expected {s} subjects of {n} points, subject-major")
    return xyz.reshape(s, n, 3).float().to(device)


def load_csv(path, device):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line[0].isalpha():
                rows.append([float(v) for v in line.split(",")])
    return torch.tensor(rows, dtype=torch.float32, device=device)


def make_loss(q0, tgt, sigma=SIGMA, T=T_POINTS, lam=LAMBDA):
    """Per-subject losses for momenta p0 (C, N, 3) and targets tgt (C, N, 3)."""
    k = 1.0 / (2.0 * sigma * sigma)
    c = -1.0 / (sigma * sigma)
    dt = 1.0 / (T - 1)

    def loss(p0):
        q = q0.expand_as(p0)
        p = p0
        energy = None
        for t in range(T - 1):
            sq = (q * q).sum(2)
            d2 = (sq[:, :, None] + sq[:, None, :] - 2.0 * torch.bmm(q, q.transpose(1, 2)))
            K = torch.exp(-k * d2.clamp_min(0.0))
            hp = torch.bmm(K, p)
            if t == 0:
                energy = 0.5 * (p * hp).sum((1, 2))
            W = K * torch.bmm(p, p.transpose(1, 2))
            hq = c * (W.sum(2, keepdim=True) * q - torch.bmm(W, q))
            q, p = q + dt * hp, p - dt * hq
        return energy + 0.5 * lam * ((q - tgt) ** 2).sum((1, 2))

    return loss


def fit(loss_fn, p0, iters):
    opt = torch.optim.LBFGS([p0], lr=1.0, max_iter=iters, max_eval=int(iters * 1.25) + 10,
                            tolerance_grad=0.0, tolerance_change=0.0, history_size=10,
                            line_search_fn="strong_wolfe")
    evals = [0]

    def closure():
        opt.zero_grad()
        l = loss_fn(p0).sum()
        l.backward()
        # LBFGS flattens with .view(-1): autograd may hand back a strided gradient
        p0.grad = p0.grad.contiguous()
        evals[0] += 1
        return l

    opt.step(closure)
    return evals[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--n", type=int, default=1847)
    ap.add_argument("--subjects", type=int, default=1000)
    ap.add_argument("--chunk", type=int, default=8)
    ap.add_argument("--mode", choices=["joint", "sequential"], default="joint")
    ap.add_argument("--limit", type=int, default=0,
                    help="time only this many subjects and extrapolate (0 = all)")
    ap.add_argument("--iters", type=int, default=400)
    ap.add_argument("--out")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device for PyTorch")
        return 1
    dev = torch.device("cuda")
    q0 = load_csv(os.path.join(a.dir, f"pop_tmpl_{a.n}.csv"), dev)
    tg = load_population(os.path.join(a.dir, f"pop_targets_{a.n}_{a.subjects}.csv"), a.n,
                         a.subjects, dev)
    todo = a.subjects if a.limit <= 0 else min(a.limit, a.subjects)
    chunk = a.chunk if a.mode == "joint" else 1
    losses, evals, err = [], 0, None
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    try:
        for s0 in range(0, todo, chunk):
            tgt = tg[s0:min(todo, s0 + chunk)].contiguous()
            loss_fn = make_loss(q0, tgt)
            # a fresh contiguous tensor: torch.optim.LBFGS flattens grads with .view()
            p0 = torch.zeros(tgt.shape, dtype=tgt.dtype, device=tgt.device,
                             requires_grad=True)
            evals += fit(loss_fn, p0, a.iters)
            with torch.no_grad():
                losses += [float(v) for v in loss_fn(p0)]
    except torch.cuda.OutOfMemoryError as e:
        err = "out of memory: " + str(e).splitlines()[0]
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    res = {"benchmark": "landmarkshoot-population-pytorch", "mode": a.mode, "n": a.n,
           "subjects": a.subjects, "timed_subjects": len(losses), "chunk": chunk,
           "iterations": a.iters, "seconds": secs, "evaluations": evals,
           "device": torch.cuda.get_device_name(dev), "torch": torch.__version__,
           "peak_gb": torch.cuda.max_memory_allocated(dev) / 2**30,
           "losses": losses}
    if err:
        res["error"] = err
    if losses and len(losses) < a.subjects:
        res["extrapolated_seconds"] = secs * a.subjects / len(losses)
    # one line: what bench_shoot's population mode prints next to it
    line = (f"pytorch {a.mode} (chunk {chunk}): {len(losses)} of {a.subjects} subjects "
            f"of N = {a.n} in {secs:.1f} s")
    if "extrapolated_seconds" in res:
        line += f" (extrapolated to {a.subjects}: {res['extrapolated_seconds']:.0f} s)"
    if losses:
        line += (f"; mean loss {sum(losses) / len(losses):.6g}; {evals} evaluations; "
                 f"peak {res['peak_gb']:.1f} GiB")
    if err:
        line += f"; {err}"
    print(line + f"; {res['device']}, torch {res['torch']}", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
    return 0 if not err else 2


if __name__ == "__main__":
    sys.exit(main())
