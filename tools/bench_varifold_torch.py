#!/usr/bin/env python3
"""Benchmark only: surface matching with a varifold data term, written in PyTorch the
way a user would (dense kernel matrices, autograd through the Euler steps and through
the varifold, torch.optim.LBFGS with the strong-Wolfe line search).

The same objective as kernels/varifold.h with kernels/shoot.h's data term (and as
tests/bench_varifold_shoot.c, which runs it on georeg's CUDA shooting,
gr_shoot_set_varifold):
  shooting: g = exp(-r^2 / (2 sigma^2)), T Euler steps, H = 1/2 sum g p_i.p_j;
  varifold: <S, T> = sum_fg exp(-|c_f - c_g|^2 / sigma_w^2) O(n_f, n_g), O = n.n'
  (oriented) or (n.n')^2 / (|n||n'|) (unoriented), d^2 = <S,S> - 2<S,T> + <T,T>;
  loss = H(q0, p0) + lambda / 2 d^2(q(1), target), float32 (Hq written out as in
  bench_shoot_torch.py).
The meshes are those of tests/test_varifold.c: an ellipsoid (radii 5, 4, 3.5) meshed by
L x M latitude/longitude bands for the source, and the same ellipsoid under the known
smooth deformation meshed at another resolution for the target; --vertices picks the
resolutions (about 10,000 and 100,000 vertices in issue 15).
Memory: written plainly, every N x N kernel matrix of every step is kept for autograd
(72 GiB at 10,000 vertices: out of memory).  --chunk R (the default, rows chosen so a
block of rows x N floats is about 256 MiB) sums the kernels over blocks of rows, each
under torch.utils.checkpoint, so autograd keeps only the blocks' inputs and recomputes
a block's matrices in the backward pass: what a user does to make it fit.  --chunk 0
is the plain version.  Out of memory is reported, not fatal.
Stopping rule (as bench_varifold_shoot's): --iters L-BFGS iterations (one count per
size, the last repeats), every tolerance 0; the time and the loss at that iteration are
reported.  --target-loss (one per size: georeg's loss after as many iterations) goes on,
up to --more times the iterations or --time-limit seconds, until an evaluated loss is at
or below it, and reports when (the two L-BFGS line searches differ, so equal iteration
counts need not give equal losses).

  bench_varifold_torch.py [--vertices 10000,100000] [--iters 100,3] [--chunk R]
      [--orientation unoriented|oriented] [--out result.json] [--device cuda|cpu]

Prints one line per problem (loss and varifold d2 before -> after, fit time, peak
memory, or out of memory); --out writes them as JSON.  Needs only torch.
"""
import argparse
import json
import math
import sys
import time

import torch
from torch.utils.checkpoint import checkpoint

SIGMA, SIGMA_W, T_POINTS, LAMBDA = 2.5, 1.0, 10, 300.0
CHUNK = -1   # rows per kernel block: -1 auto, 0 none (--chunk)


def ellipsoid(L, M, lon0, device):
    th = torch.arange(1, L, dtype=torch.float64) * math.pi / L
    ph = torch.arange(M, dtype=torch.float64) * 2 * math.pi / M + lon0
    th, ph = torch.meshgrid(th, ph, indexing="ij")
    v = torch.stack([5.0 * th.sin() * ph.cos(), 4.0 * th.sin() * ph.sin(),
                     3.5 * th.cos()], -1).reshape(-1, 3)
    v = torch.cat([v, torch.tensor([[0, 0, 3.5], [0, 0, -3.5]], dtype=torch.float64)])
    top, bot = (L - 1) * M, (L - 1) * M + 1

    def ring(i, j):
        return (i - 1) * M + (j % M)

    tris = []
    for j in range(M):
        tris.append((top, ring(1, j), ring(1, j + 1)))
        tris.append((bot, ring(L - 1, j + 1), ring(L - 1, j)))
        for i in range(1, L - 1):
            tris.append((ring(i, j), ring(i + 1, j), ring(i + 1, j + 1)))
            tris.append((ring(i, j), ring(i + 1, j + 1), ring(i, j + 1)))
    return v.to(device), torch.tensor(tris, dtype=torch.long, device=device)


def deform(v):
    x, y, z = v[:, 0], v[:, 1], v[:, 2]
    return torch.stack([x + 0.1 * x + 0.8 * torch.sin(y / 4) + 2.4,
                        y + 0.7 * torch.cos(x / 5) - 0.5,
                        z + 0.6 * torch.sin((x + y) / 6) + 0.3], -1)


def features(v, tri):
    a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
    return (a + b + c) / 3, 0.5 * torch.cross(b - a, c - a, dim=1)


def inner_block(c1, n1, c2, n2, oriented):
    w = torch.exp(-torch.cdist(c1, c2) ** 2 / SIGMA_W**2)
    dot = n1 @ n2.T
    if oriented:
        o = dot
    else:
        o = dot**2 / (n1.norm(dim=1)[:, None] * n2.norm(dim=1)[None, :]).clamp_min(1e-30)
    return (w * o).sum()


def rows(n, m):
    """Rows per block: CHUNK, or (0) all of them; auto (-1): ~256 MiB of floats."""
    if CHUNK == 0:
        return n
    if CHUNK > 0:
        return CHUNK
    return max(1, min(n, (64 << 20) // max(1, m)))


def inner(c1, n1, c2, n2, oriented):
    r = rows(c1.shape[0], c2.shape[0])
    if r >= c1.shape[0]:
        return inner_block(c1, n1, c2, n2, oriented)
    total = None
    for s in range(0, c1.shape[0], r):
        part = checkpoint(inner_block, c1[s:s + r], n1[s:s + r], c2, n2, oriented,
                          use_reentrant=False)
        total = part if total is None else total + part
    return total


def step_block(qi, pi, q, p, k, c):
    K = torch.exp(-k * torch.cdist(qi, q) ** 2)
    hp = K @ p
    W = K * (pi @ p.T)
    hq = c * (W.sum(1, keepdim=True) * qi - W @ q)
    return hp, hq


def step(q, p, k, c):
    r = rows(q.shape[0], q.shape[0])
    if r >= q.shape[0]:
        return step_block(q, p, q, p, k, c)
    hps, hqs = [], []
    for s in range(0, q.shape[0], r):
        hp, hq = checkpoint(step_block, q[s:s + r], p[s:s + r], q, p, k, c,
                            use_reentrant=False)
        hps.append(hp)
        hqs.append(hq)
    return torch.cat(hps), torch.cat(hqs)


def make_loss(q0, tri_s, ct, nt, oriented):
    k = 1.0 / (2.0 * SIGMA * SIGMA)
    c = -1.0 / (SIGMA * SIGMA)
    dt = 1.0 / (T_POINTS - 1)
    with torch.no_grad():
        tt = inner(ct, nt, ct, nt, oriented)

    def loss(p0):
        q, p = q0, p0
        energy = None
        for t in range(T_POINTS - 1):
            hp, hq = step(q, p, k, c)
            if t == 0:
                energy = 0.5 * (p * hp).sum()
            q, p = q + dt * hp, p - dt * hq
        cs, ns = features(q, tri_s)
        d2 = inner(cs, ns, cs, ns, oriented) - 2 * inner(cs, ns, ct, nt, oriented) + tt
        return energy + 0.5 * LAMBDA * d2, d2

    return loss


def resolution(nv):
    # L x M bands with M ~ 1.6 L: (L - 1) M + 2 ~ nv
    L = max(4, int(round(math.sqrt(nv / 1.6))))
    return L, max(6, int(round(nv / L)))


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


class _Stop(Exception):
    """Raised from the closure to end a fit that has done what was asked."""


def run(nv_src, nv_tgt, iters, oriented, dev, target=None, more=3, time_limit=None):
    """L-BFGS for `iters` iterations; with a target loss (georeg's after as many
    iterations), on up to more * iters iterations or time_limit seconds until an
    evaluated loss is at or below it.  Every evaluation's time and loss is logged:
    fit_s / loss_after are at the end of iteration `iters`, target_s when the target
    was first reached."""
    Ls, Ms = resolution(nv_src)
    Lt, Mt = resolution(nv_tgt)
    vs, ts = ellipsoid(Ls, Ms, 0.0, dev)
    vt, tt = ellipsoid(Lt, Mt, 0.2, dev)
    vt = deform(vt)
    q0 = vs.float()
    ct, nt = features(vt.float(), tt)
    loss_fn = make_loss(q0, ts, ct, nt, oriented)
    p0 = torch.zeros_like(q0, requires_grad=True)
    cap = iters if target is None else max(iters, more * iters)
    # the iteration count is the stopping rule (as bench_varifold_shoot: no evaluation cap)
    opt = torch.optim.LBFGS([p0], lr=1.0, max_iter=cap, max_eval=cap * 30,
                            tolerance_grad=0.0, tolerance_change=0.0, history_size=10,
                            line_search_fn="strong_wolfe")
    log = []            # (seconds since the start, loss, L-BFGS iteration, d2)
    hit = []            # (seconds, iteration) when the target was first reached
    t0 = [0.0]

    def closure():
        it = opt.state[opt._params[0]].get("n_iter", 0)
        now = time.perf_counter() - t0[0]
        if it > iters and (target is None or hit or (time_limit and now > time_limit)):
            raise _Stop()
        opt.zero_grad()
        l, d2 = loss_fn(p0)
        l.backward()
        lv = float(l.detach())          # synchronizes
        now = time.perf_counter() - t0[0]
        log.append((now, lv, it, float(d2.detach())))
        if target is not None and not hit and lv <= target:
            hit.append((now, it))
        return l

    with torch.no_grad():
        l0, d0 = loss_fn(p0)
    sync(dev)
    t0[0] = time.perf_counter()
    try:
        opt.step(closure)
    except _Stop:
        pass
    sync(dev)
    upto = [e for e in log if e[2] <= iters]
    best = min(upto, key=lambda e: e[1])
    return {"source_vertices": vs.shape[0], "target_vertices": vt.shape[0],
            "orientation": "oriented" if oriented else "unoriented", "iterations": iters,
            "lbfgs_iterations": opt.state[opt._params[0]].get("n_iter", -1),
            "chunk_rows": rows(vs.shape[0], vs.shape[0]),
            "evaluations": sum(1 for e in log if e[2] <= iters),
            "fit_s": upto[-1][0], "loss_before": float(l0), "loss_after": best[1],
            "varifold_d2_before": float(d0), "varifold_d2_after": best[3],
            "target_loss": target, "target_s": hit[0][0] if hit else None,
            "target_iteration": hit[0][1] if hit else None,
            "total_s": log[-1][0], "total_evaluations": len(log),
            "best_loss": min(e[1] for e in log),
            "peak_gb": (torch.cuda.max_memory_allocated(dev) / 2**30
                        if dev.type == "cuda" else 0.0),
            "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
            "torch": torch.__version__}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vertices", default="10000,100000")
    ap.add_argument("--iters", default="100,3")
    ap.add_argument("--chunk", type=int, default=-1)
    ap.add_argument("--orientation", choices=["unoriented", "oriented"],
                    default="unoriented")
    ap.add_argument("--out")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu for a quick check")
    ap.add_argument("--target-loss", default="",
                    help="per size: go on until the loss is at or below it (georeg's)")
    ap.add_argument("--more", type=int, default=3,
                    help="with --target-loss: at most MORE x --iters iterations")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="with --target-loss: stop after this many seconds (0: none)")
    a = ap.parse_args()
    global CHUNK
    CHUNK = a.chunk
    iters = [int(s) for s in a.iters.split(",") if s]
    targets = [float(s) for s in a.target_loss.split(",") if s]
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("no CUDA device for PyTorch")
        return 1
    results = []
    for i, nv in enumerate([int(s) for s in a.vertices.split(",") if s]):
        it = iters[min(i, len(iters) - 1)]
        try:
            r = run(nv, int(nv * 1.3), it, a.orientation == "oriented", dev,
                    targets[i] if i < len(targets) else None, a.more,
                    a.time_limit or None)
        except torch.cuda.OutOfMemoryError as e:
            r = {"source_vertices": nv, "error": "out of memory",
                 "detail": str(e).splitlines()[0]}
        if dev.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(dev)
        results.append(r)
        # one line per problem: the loss reached and the time
        if "error" in r:
            print(f"pytorch varifold matching, {nv} source vertices: {r['error']} "
                  f"({r['detail']})", flush=True)
        else:
            print(f"pytorch varifold matching ({r['orientation']}), {r['source_vertices']} "
                  f"onto {r['target_vertices']} vertices: loss {r['loss_before']:.6g} -> "
                  f"{r['loss_after']:.6g} (d2 {r['varifold_d2_before']:.4g} -> "
                  f"{r['varifold_d2_after']:.4g}) in {r['fit_s']:.2f} s, {r['iterations']} "
                  f"iterations, {r['evaluations']} evaluations, blocks of "
                  f"{r['chunk_rows']} rows, peak {r['peak_gb']:.1f} GiB; "
                  f"{r['device']}, torch {r['torch']}", flush=True)
            if r["target_loss"] is not None:
                print(f"  target loss {r['target_loss']:.6g}: "
                      + (f"reached in {r['target_s']:.2f} s (iteration {r['target_iteration']})"
                         if r["target_s"] is not None else
                         f"not reached in {r['total_s']:.2f} s, {r['lbfgs_iterations']} "
                         f"iterations (best {r['best_loss']:.6g})"), flush=True)
        # after every problem: a run cut by a time limit keeps what it finished
        if a.out:
            with open(a.out, "w") as f:
                json.dump({"benchmark": "varifold-pytorch", "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
