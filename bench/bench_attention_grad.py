#!/usr/bin/env python3
"""Checks and times tang's attention forward + backward on the GPU, next to
PyTorch's SDPA (FLASH_ATTENTION and CUDNN_ATTENTION backends) forward +
backward in the same process, on the same inputs.

For every gpu-work/attention-grad/<case>/meta.json
(bench/prepare_attention_grad.py):

1. correctness of the training step the bundle holds, @main_fwd (Q, K, V
   -> O, softmax statistics) then @main_bwd (Q, K, V, O, statistics, dO ->
   dQ, dK, dV), outputs poisoned with NaN first (every element must be
   written): where the case has them, the saved inputs against the float64
   interpreter's O and gradients; always, fresh random bf16 inputs against
   float64 autograd of the same attention on the GPU (batch 0, first two
   heads). ||out - ref|| / ||ref|| must be <= REL_TOL per tensor (bf16
   outputs, and P and dS rounded to bf16 as tensor-core operands, as
   FlashAttention does) and a second run must give the same bits;
2. times tang's forward, backward, and forward + backward (one callable, CUDA
   events, median), and each peer's forward + backward
   (torch.autograd.grad of SDPA's output with dO);
3. with --profile, the training step's kernels by time (torch.profiler).

Writes $OUT/attention_grad.json and .md; prints a table last.
Usage: python3 bench/bench_attention_grad.py [--cases NAME ...] [--reps N]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
WORK = ROOT / "gpu-work" / "attention-grad"
REL_TOL = 2e-2

from bench_memory_bound import load_metas, profile_kernels  # noqa: E402
import harness  # noqa: E402



#: A gradient that exceeds the elementwise bound still passes when the best
#: peer (FlashAttention-2, cuDNN) exceeds the same bound by at least
#: 1/PEER_SLACK as much on the same output: the bound's scale (the rms of
#: the reference) is too small for rows whose few terms cancel (the first
#: query rows of a causal mask), and a user's yardstick there is the
#: accuracy of the kernels they would otherwise use.
PEER_SLACK = 1.25


def within_peers(res, peer_checks):
    """Turns an 'incorrect' from gradient checks that every failing output
    of which is within PEER_SLACK of the most accurate peer's error at
    tang's own bound into 'ok', with a note saying so."""
    failing = [c for c in res["checks"] if not c["ok"]]
    notes = []
    for c in failing:
        out = c["name"].rsplit(": ", 1)[-1]
        if out not in ("dQ", "dK", "dV") or c.get("nonfinite_mismatch"):
            return
        peers = [pc.get("max_err_at_tang_bound")
                 for checks in peer_checks.values() for pc in checks
                 if pc["name"].endswith(" " + out)
                 and pc.get("max_err_at_tang_bound") is not None]
        if not peers or c["max_err"] > PEER_SLACK * min(peers):
            return
        notes.append(f"{out} {c['max_err']:.2f} of the bound ({c['bad']} "
                     f"elements over), most accurate peer {min(peers):.2f}")
    res["status"] = "ok"
    res["note"] = (harness.WITHIN_PEERS + " (bound exceeded by the peers "
                   "too): " + "; ".join(notes))

def reference(torch, q, k, v, do, causal, scale):
    """float64 attention softmax(scale q k^T [causal]) v and its autograd:
    (o, dq, dk, dv)."""
    q, k, v = (t.double().requires_grad_() for t in (q, k, v))
    s = (q @ k.transpose(-1, -2)) * scale
    if causal:
        L = s.shape[-1]
        mask = torch.ones(L, L, dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~mask, float("-inf"))
    o = torch.softmax(s, dim=-1) @ v
    return (o.detach(), *torch.autograd.grad(o, (q, k, v), do.double()))


#: Float64 score matrices (and their autograd tensors) of at most this many
#: bytes at a time.
REF_CHUNK_BYTES = 1 << 30


def full_reference(torch, q, k, v, do, causal, scale):
    """reference() over every (batch, head), in chunks of heads: float64
    (o, dq, dk, dv) of the whole tensors."""
    B, H, L, D = q.shape
    outs = [torch.empty((B, H, L, D), dtype=torch.float64, device=q.device)
            for _ in range(4)]
    hc = max(1, min(H, REF_CHUNK_BYTES // (L * L * 8 * 3)))
    for b in range(B):
        for h0 in range(0, H, hc):
            sl = (slice(b, b + 1), slice(h0, min(H, h0 + hc)))
            for dst, got in zip(outs, reference(
                    torch, *(t[sl] for t in (q, k, v, do)), causal, scale)):
                dst[sl] = got
    return outs


def sensitivity(torch, inputs, refs, causal, scale, trials=2,
                storage="bf16"):
    """How far each float64 output moves when every input moves by a random
    fraction (uniform in [-1, 1]) of its rounding to `storage` (bf16, or
    f16 for the portable suite's f16 programs): the largest change
    over `trials` perturbed references, as gpu_check's sensitivity (made
    with the interpreter, scripts/prepare-gpu-check.py). Early causal rows
    average a few keys, so their outputs are sums of terms much larger than
    the output's rms over all rows; rounding P and dS to bf16 moves them by
    this much in any implementation (FlashAttention-2 and cuDNN included)."""
    u = harness.UNIT_ROUNDOFF[storage]
    g = torch.Generator(device=inputs[0].device).manual_seed(8765)
    worst = [torch.zeros_like(r, dtype=torch.float32) for r in refs]
    for _ in range(trials):
        moved = [t.double() * (1 + u * (torch.rand(
            t.shape, device=t.device, generator=g, dtype=torch.float64)
            * 2 - 1)) for t in inputs]
        for w, r, m in zip(worst, refs, full_reference(
                torch, *moved, causal, scale)):
            torch.fmax(w, (m - r).abs().float(), out=w)
            del m
        del moved
    return worst


def tolerances(L, peer=False):
    """O: bf16 storage, f32 sums over the keys, the program's roundings of
    scores, probabilities and output (R 3); the gradients add the bf16
    tensor-core operands P and dS, and dS = P (dP - D) cancels, with D from
    the bf16 O (R 9). Peers: three more."""
    e = 3 if peer else 0
    return [harness.Tolerance("bf16", reduction=L, roundings=3 + e)] + \
        [harness.Tolerance("bf16", reduction=L, roundings=9 + e)] * 3


def run_case(torch, F, tang_cuda, meta, work, args, deadline):
    import numpy as np
    from torch.nn.attention import SDPBackend, sdpa_kernel
    p = meta["params"]
    B, H, L, D, causal = p["B"], p["H"], p["L"], p["D"], p["causal"]
    res = harness.case_result(meta["case"], params=p,
                              flops=meta["flops_forward"]
                              + meta["flops_backward"])
    if not meta["ok"]:
        res.update(status="compile failed", note=meta["error"][-400:])
        return res
    case = work / meta["case"]
    train = tang_cuda.Bundle(case / "train")
    scale = float(torch.tensor(1.0 / D ** 0.5).to(torch.bfloat16))
    shape = (B, H, L, D)
    bf = torch.bfloat16
    o = torch.empty(shape, device="cuda", dtype=bf)
    stats = [torch.empty((B, H, L), device="cuda", dtype=torch.float32)
             for _ in range(2)]
    grads = [torch.empty(shape, device="cuda", dtype=bf) for _ in range(3)]
    written = [o, *stats, *grads]

    def forward(ins):
        train.run("main_fwd", *ins[:3], outputs=[o, *stats])

    def backward(ins):
        train.run("main_bwd", *ins[:3], o, *stats, ins[3], outputs=grads)

    def step(ins):
        forward(ins)
        backward(ins)

    tols, tols_p = tolerances(L), tolerances(L, peer=True)
    res["tolerance"] = {"o": tols[0].describe(), "grads": tols[1].describe(),
                        "peers": tols_p[1].describe()}
    checks = []
    if meta["interpreter_ref"]:
        ins = [torch.from_numpy(np.load(case / f"input_{i}.npy"))
               .cuda().to(bf) for i in range(4)]
        load = lambda q: torch.from_numpy(np.load(q)).cuda().double()
        refs = [load(case / "ref_fwd" / "output_0.npy")] + [
            load(case / "ref" / f"output_{i}.npy") for i in range(3)]
        checks.append(("interpreter", ins, refs, [None] * 4))
    g = torch.Generator(device="cuda").manual_seed(4321)
    fresh = [(torch.rand(shape, device="cuda", generator=g) * 2 - 1).to(bf)
             for _ in range(4)]
    refs_fresh = full_reference(torch, *fresh, causal, scale)
    sens_fresh = sensitivity(torch, fresh, refs_fresh, causal, scale)
    checks.append(("gpu float64 autograd", fresh, refs_fresh, sens_fresh))
    same_all = True
    for what, ins, refs, sens in checks:
        first, same = harness.poisoned_runs(torch, written, lambda: step(ins))
        same_all &= same
        got = [first[0]] + first[3:]
        for name, a, r, t, w in zip(("O", "dQ", "dK", "dV"), got, refs,
                                    tols, sens):
            res["checks"].append(harness.check_tensor(a, r, t,
                                                      f"{what}: {name}", w))
        res["checks"].append({"name": f"{what}: statistics finite",
                              "ok": all(bool(torch.isfinite(x).all())
                                        for x in first[1:3]),
                              "max_err": None})
        del first, got
    harness.judge_checks(res, same_all)
    if args.sanitize:
        return harness.sanitized(res)

    q, k, v, do = fresh
    graphs = {}
    call, gr, why = harness.try_graphed(torch, lambda: step(fresh))
    graphs["tang"] = gr or why
    contenders = [("tang", call)]
    peer_checks = {}
    backends = [("flash_attention", SDPBackend.FLASH_ATTENTION, None),
                ("cudnn_attention", SDPBackend.CUDNN_ATTENTION, None)]
    if not args.quick:
        backends.append(("torch_compile", None, "max-autotune-no-cudagraphs"))
    else:
        res.setdefault("peer_status", {})["torch_compile"] = (
            "skipped: --quick (SDPA's compiled graph calls the same "
            "FlashAttention/cuDNN kernels)")
    for pid, be, mode in backends:
        try:
            qg, kg, vg = (t.detach().clone().requires_grad_()
                          for t in (q, k, v))
            if mode:
                if deadline.passed(args.compile_reserve_s):
                    res.setdefault("peer_status", {})[pid] = "skipped: budget"
                    continue
                fwd = torch.compile(
                    lambda a, b_, c: F.scaled_dot_product_attention(
                        a, b_, c, is_causal=causal, scale=scale), mode=mode)

                def peer(qg=qg, kg=kg, vg=vg, fwd=fwd):
                    out = fwd(qg, kg, vg)
                    return torch.autograd.grad(out, (qg, kg, vg), do)
            else:
                def peer(qg=qg, kg=kg, vg=vg, be=be):
                    with sdpa_kernel(be):
                        out = F.scaled_dot_product_attention(
                            qg, kg, vg, is_causal=causal, scale=scale)
                    return torch.autograd.grad(out, (qg, kg, vg), do)
            got = peer()
            peer_checks[pid] = [
                harness.check_tensor(a, r, t, f"{pid} {n}", w)
                for n, a, r, t, w in zip(("dQ", "dK", "dV"), got,
                                         refs_fresh[1:], tols_p[1:],
                                         sens_fresh[1:])]
            # The same gradients against tang's own (tighter) bound: how
            # the peers fare under the rule tang is held to.
            for c, a, r, w in zip(peer_checks[pid], got, refs_fresh[1:],
                                  sens_fresh[1:]):
                c["max_err_at_tang_bound"] = harness.check_tensor(
                    a, r, tols[1], sensitivity=w)["max_err"]
            del got
            call, gr, why = harness.try_graphed(torch, peer)
            graphs[pid] = gr or why
            contenders.append((pid, call))
        except Exception as e:  # a backend that does not run this
            res.setdefault("peer_status", {})[pid] = "failed: " + \
                harness.short(e)
    del refs_fresh, sens_fresh
    if res["status"] == "incorrect" and same_all:
        within_peers(res, peer_checks)
    res["cuda_graphs"] = graphs
    res["peer_checks"] = {k_: [{kk: c[kk] for kk in (
        "name", "ok", "max_err", "max_err_at_tang_bound", "bad", "worst")}
        for c in v_] for k_, v_ in peer_checks.items()}
    if res["status"] != "ok":
        return res
    timed = harness.interleaved_rounds(
        torch, contenders, rounds=args.rounds_n, target_ms=args.target_ms,
        deadline=deadline.monotonic())
    wrong = [k_ for k_, v_ in peer_checks.items()
             if not all(c["ok"] for c in v_)]
    if (res.get("note") or "").startswith(harness.WITHIN_PEERS):
        # tang passed by the peers' yardstick: the peers that set it are
        # compared with, not excluded.
        wrong = []
    harness.record_timing(res, timed, wrong)
    if not args.quick:
        for name, fn in (("forward", lambda i: forward(fresh)),
                         ("backward", lambda i: backward(fresh))):
            pl = harness.plan_calls(torch, fn, args.target_ms)
            res[f"tang_{name}_ms"] = statistics.median(harness.time_calls(
                torch, fn, pl.reps, 1, pl.hold_ms))
    if meta["case"] in args.profile:
        res["profile"] = profile_kernels(torch, lambda: step(fresh))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="*")
    ap.add_argument("--profile", nargs="*", default=[],
                    help="cases whose backward kernels are profiled")
    ap.add_argument("--work", default=str(WORK),
                    help="where bench/prepare_attention_grad.py left the cases")
    ap.add_argument("--compile-reserve-s", type=float, default=90,
                    help="skip a torch.compile peer when less than this is "
                         "left before --deadline (default 90)")
    ap.add_argument("--graphs", action="store_true",
                    help="time the contenders as CUDA graphs (off by default: "
                         "the FlashAttention-2 peer's captured backward "
                         "faults at B=64, L=512; see bench/README.md and "
                         "bench/repro_graph_fault.py)")
    harness.add_common_args(ap)
    args = ap.parse_args()
    if not args.graphs:
        os.environ.setdefault("TANG_BENCH_GRAPHS", "0")
    args.rounds_n = harness.rounds_of(args)
    args.target_ms = harness.target_ms_of(args)
    deadline = harness.Deadline(args.deadline)
    t_start = time.monotonic()
    import torch
    import torch.nn.functional as F
    import tang.cuda as tang_cuda

    work = Path(args.work)
    metas = load_metas(work, args.cases, "bench/prepare_attention_grad.py",
                       "flops_forward")
    out = Path(args.out) if args.out else harness.out_dir(
        "attention-grad-out")
    stem = "attention_grad" + ("" if work == WORK else "_" + work.name)
    path = out / f"{stem}.json"
    report = harness.new_report("attention_grad", torch, settings={
        "rounds": args.rounds_n, "target_ms": args.target_ms,
        "quick": args.quick})
    return harness.run_cases(
        torch, report, path, metas,
        lambda meta: run_case(torch, F, tang_cuda, meta, work, args, deadline),
        deadline, t_start)


if __name__ == "__main__":
    sys.exit(main())
