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
import datetime
import json
import math
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
WORK = ROOT / "gpu-work" / "attention-grad"
REL_TOL = 2e-2

from bench_memory_bound import (load_metas, plan,  # noqa: E402
                                poisoned_runs, probe_ms, profile_kernels,
                                rel_err, summary, time_ms)


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="*")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--profile", nargs="*", default=[],
                    help="cases whose backward kernels are profiled")
    ap.add_argument("--work", default=str(WORK),
                    help="where bench/prepare_attention_grad.py left the cases")
    ap.add_argument("--out", default=os.environ.get("OUT")
                    or str(ROOT / "gpu-work" / "attention-grad-out"))
    args = ap.parse_args()
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import tang.cuda as tang_cuda

    work = Path(args.work)
    metas = load_metas(work, args.cases, "bench/prepare_attention_grad.py",
                       "flops_forward")
    report = {"date": datetime.datetime.now(datetime.timezone.utc)
              .isoformat(timespec="seconds"),
              "device": torch.cuda.get_device_name(0),
              "torch": torch.__version__, "cases": []}
    bad = 0
    for meta in metas:
        p = meta["params"]
        B, H, L, D, causal = p["B"], p["H"], p["L"], p["D"], p["causal"]
        res = {"case": meta["case"], "params": p, "status": "ok",
               "checks": []}
        report["cases"].append(res)
        if not meta["ok"]:
            res.update(status="compile failed", note=meta["error"][:400])
            bad += 1
            continue
        case = work / meta["case"]
        try:
            train = tang_cuda.Bundle(case / "train")
            scale = float(torch.tensor(1.0 / D ** 0.5).to(torch.bfloat16))
            shape = (B, H, L, D)
            bf = torch.bfloat16
            o = torch.empty(shape, device="cuda", dtype=bf)
            stats = [torch.empty((B, H, L), device="cuda",
                                 dtype=torch.float32) for _ in range(2)]
            grads = [torch.empty(shape, device="cuda", dtype=bf)
                     for _ in range(3)]
            written = [o, *stats, *grads]

            def forward(ins):
                train.run("main_fwd", *ins[:3], outputs=[o, *stats])

            def backward(ins):
                train.run("main_bwd", *ins[:3], o, *stats, ins[3],
                          outputs=grads)

            def step(ins):
                forward(ins)
                backward(ins)

            checks = []
            if meta["interpreter_ref"]:
                ins = [torch.from_numpy(np.load(case / f"input_{i}.npy"))
                       .cuda().to(bf) for i in range(4)]
                load = lambda p: torch.from_numpy(np.load(p)).cuda().double()
                refs = [load(case / "ref_fwd" / "output_0.npy")] + [
                    load(case / "ref" / f"output_{i}.npy") for i in range(3)]
                checks.append(("interpreter", ins, refs, None))
            g = torch.Generator(device="cuda").manual_seed(4321)
            fresh = [(torch.rand(shape, device="cuda", generator=g) * 2 - 1)
                     .to(bf) for _ in range(4)]
            sl = (slice(0, 1), slice(0, min(H, 2)))
            refs = reference(torch, *(t[sl] for t in fresh), causal, scale)
            checks.append(("gpu float64", fresh, refs, sl))
            for what, ins, refs, part in checks:
                runs = poisoned_runs(torch, written, lambda: step(ins))
                errs = []
                # O, dQ, dK, dV (the statistics: checked through the
                # gradients, and finite).
                outs = [runs[0][0]] + runs[0][3:]
                if not all(bool(torch.isfinite(t).all()) for t in runs[0]):
                    errs = [math.inf]
                else:
                    errs = [rel_err(torch, got[part] if part else got, ref)
                            for got, ref in zip(outs, refs)]
                same = all(torch.equal(a, b) for a, b in zip(*runs))
                res["checks"].append({"against": what,
                                      "rel_err_o_dq_dk_dv": errs,
                                      "deterministic": same})
                if not all(e <= REL_TOL for e in errs) or not same:
                    res["status"] = "incorrect"
            if res["status"] != "ok":
                bad += 1
                print(json.dumps(res), flush=True)
                continue

            q, k, v, do = fresh
            call_f = lambda i: forward(fresh)
            call_b = lambda i: backward(fresh)
            call_fb = lambda i: step(fresh)
            for name, fn in (("forward", call_f), ("backward", call_b),
                             ("forward_backward", call_fb)):
                res[name] = summary(time_ms(torch, fn, 1,
                                            *plan(probe_ms(torch, fn), args)))
            res["peers"] = []
            for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
                pr = {"id": be.name.lower()}
                try:
                    qg, kg, vg = (t.detach().clone().requires_grad_()
                                  for t in (q, k, v))

                    def peer(i, be=be):
                        with sdpa_kernel(be):
                            out = F.scaled_dot_product_attention(
                                qg, kg, vg, is_causal=causal, scale=scale)
                        return torch.autograd.grad(out, (qg, kg, vg), do)

                    got = peer(0)
                    pr["rel_err_dq_dk_dv"] = [rel_err(torch, t[sl], r)
                                              for t, r in zip(got, refs[1:])]
                    pr.update(summary(time_ms(
                        torch, peer, 1, *plan(probe_ms(torch, peer), args))))
                    pr["peer_over_tang"] = pr["ms"] / \
                        res["forward_backward"]["ms"]
                except Exception as e:  # a backend that does not run this
                    pr["error"] = f"{type(e).__name__}: {e}"[:200]
                res["peers"].append(pr)
            flops = meta["flops_forward"] + meta["flops_backward"]
            res["tflops"] = flops / res["forward_backward"]["ms"] / 1e9
            if meta["case"] in args.profile:
                res["profile"] = profile_kernels(torch, lambda: call_fb(0))
        except Exception as e:  # a load or launch failure
            res.update(status="failed", note=f"{type(e).__name__}: {e}"[:400])
            bad += 1
        print(json.dumps(res), flush=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "attention_grad" + ("" if work == WORK else "_" + work.name)
    (out / f"{stem}.json").write_text(json.dumps(report, indent=1) + "\n")
    f = lambda x, fmt: "-" if x is None else format(x, fmt)
    lines = [f"# Attention forward + backward, {report['device']}, "
             f"{report['date']}, torch {report['torch']}", "",
             "| case | status | max rel err (O, dQ, dK, dV) | tang fwd ms | "
             "tang bwd ms | tang fwd+bwd ms | TFLOP/s | FA2 fwd+bwd ms | "
             "FA2/tang | cuDNN fwd+bwd ms | cuDNN/tang |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["cases"]:
        errs = [max(c["rel_err_o_dq_dk_dv"]) for c in r.get("checks", [])]
        peers = {p["id"]: p for p in r.get("peers", [])}
        fa, cu = peers.get("flash_attention", {}), peers.get(
            "cudnn_attention", {})
        lines.append(
            f"| {r['case']} | {r['status']} | "
            f"{f(max(errs) if errs else None, '.2e')} | "
            f"{f(r.get('forward', {}).get('ms'), '.3f')} | "
            f"{f(r.get('backward', {}).get('ms'), '.3f')} | "
            f"{f(r.get('forward_backward', {}).get('ms'), '.3f')} | "
            f"{f(r.get('tflops'), '.0f')} | {f(fa.get('ms'), '.3f')} | "
            f"{f(fa.get('peer_over_tang'), '.3f')} | "
            f"{f(cu.get('ms'), '.3f')} | "
            f"{f(cu.get('peer_over_tang'), '.3f')} |")
    for r in report["cases"]:
        for e in r.get("profile", []):
            lines.append(f"- {r['case']}: {e['ms']:.3f} ms {e['kernel']}")
    text = "\n".join(lines) + "\n"
    (out / f"{stem}.md").write_text(text)
    print(text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
