#!/usr/bin/env python3
"""Checks and times tang's transformer block forward + backward on the GPU,
next to PyTorch eager forward + backward of the same block in the same
process, on the same inputs.

For every gpu-work/block-grad/<case>/meta.json (bench/prepare_block_grad.py):

1. correctness of the training step the bundle holds: @main_fwd (x, weights
   -> out, residuals) then @main_bwd (x, weights, out, residuals, dout ->
   dx and the six weight gradients), every output poisoned with NaN first:
   where the case has them, the saved inputs against the float64
   interpreter's out and gradients; always, fresh random inputs (weights
   scaled as prepare_gemm.draw) against float64 autograd of the same block
   on the GPU (bench_gemm.block_forward, whole batch). ||got - ref|| /
   ||ref|| must be <= REL_TOL per tensor (bf16 storage of every
   intermediate, as the program is written), and a second run must give the
   same bits;
2. times tang's forward, backward and forward + backward (medians, CUDA
   events), and the peers' forward + backward (torch.autograd.grad of the
   output with dout, for x and the six weights): PyTorch eager in fp32 with
   TF32 matmuls (ANCHORS.md's peer: its nn.Module block, and the same math
   written functionally; the faster counts) and PyTorch eager in bf16;
3. with --profile, the training step's kernels by time (torch.profiler).

Writes $OUT/block_grad.json and .md; prints a table last.
Usage: python3 bench/bench_block_grad.py [--cases NAME ...] [--reps N]
"""

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
WORK = ROOT / "gpu-work" / "block-grad"
REL_TOL = 3e-2

from bench_gemm import block_forward  # noqa: E402
from bench_memory_bound import (load_metas, plan,  # noqa: E402
                                poisoned_runs, probe_ms, profile_kernels,
                                rel_err, summary, time_ms)

NAMES = ["out", "dx", "dwn1", "dWqkv", "dWo", "dwn2", "dW13", "dW2"]


def module_block(torch, F, ins, H):
    """ANCHORS.md's nn.Module block (nn.RMSNorm, bias-free nn.Linear) holding
    `ins`' weights, fp32."""
    x, wn1, Wqkv, Wo, wn2, W13, W2 = ins
    D = x.shape[-1]

    class Block(torch.nn.Module):
        def __init__(s):
            super().__init__()
            s.n1 = torch.nn.RMSNorm(D, eps=1e-6)
            s.n2 = torch.nn.RMSNorm(D, eps=1e-6)
            s.qkv = torch.nn.Linear(D, Wqkv.shape[1], bias=False)
            s.o = torch.nn.Linear(D, D, bias=False)
            s.gu = torch.nn.Linear(D, W13.shape[1], bias=False)
            s.dn = torch.nn.Linear(W2.shape[0], D, bias=False)

        def forward(s, x):
            B, L, _ = x.shape
            q, k, v = s.qkv(s.n1(x)).view(B, L, 3, H, D // H).permute(
                2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(
                q, k, v, is_causal=True).transpose(1, 2).reshape(B, L, D)
            x = x + s.o(a)
            g, u = s.gu(s.n2(x)).chunk(2, -1)
            return x + s.dn(F.silu(g) * u)

    blk = Block().cuda()
    with torch.no_grad():
        blk.n1.weight.copy_(wn1)
        blk.n2.weight.copy_(wn2)
        blk.qkv.weight.copy_(Wqkv.t())
        blk.o.weight.copy_(Wo.t())
        blk.gu.weight.copy_(W13.t())
        blk.dn.weight.copy_(W2.t())
    return blk


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="*")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--profile", nargs="*", default=[],
                    help="cases whose training-step kernels are profiled")
    ap.add_argument("--work", default=str(WORK),
                    help="where bench/prepare_block_grad.py left the cases")
    ap.add_argument("--out", default=os.environ.get("OUT")
                    or str(ROOT / "gpu-work" / "block-grad-out"))
    args = ap.parse_args()
    import numpy as np
    import torch
    import torch.nn.functional as F
    import tang.cuda as tang_cuda

    work = Path(args.work)
    metas = load_metas(work, args.cases, "bench/prepare_block_grad.py",
                       "flops_forward")
    report = {"date": datetime.datetime.now(datetime.timezone.utc)
              .isoformat(timespec="seconds"),
              "device": torch.cuda.get_device_name(0),
              "torch": torch.__version__, "cases": []}
    bad = 0
    for meta in metas:
        p = meta["params"]
        B, L, D, H = p["B"], p["L"], p["D"], p["H"]
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
            bf = torch.bfloat16
            g = torch.Generator(device="cuda").manual_seed(4321)
            fresh = []
            for s in meta["inputs"]:
                a = torch.randn(s, generator=g, device="cuda")
                if len(s) == 2:
                    a /= s[0] ** 0.5
                elif len(s) == 1:
                    a = 1 + 0.1 * a
                fresh.append(a.to(bf))
            dout = torch.randn((B, L, D), generator=g, device="cuda").to(bf)
            # Output buffers: the first run allocates them.
            fwd_outs = list(train.run("main_fwd", *fresh))
            grads = list(train.run("main_bwd", *fresh, *fwd_outs, dout))
            written = fwd_outs + grads

            def forward(ins):
                train.run("main_fwd", *ins[:7], outputs=fwd_outs)

            def backward(ins):
                train.run("main_bwd", *ins[:7], *fwd_outs, ins[7],
                          outputs=grads)

            def step(ins):
                forward(ins)
                backward(ins)

            def reference(ins):
                """float64 out and gradients of the block at `ins`."""
                xs = [t.double().requires_grad_() for t in ins[:7]]
                out = block_forward(torch, F, xs, H)
                return [out.detach(), *torch.autograd.grad(
                    out, xs, ins[7].double())]

            checks = []
            if meta["interpreter_ref"]:
                ins = [torch.from_numpy(np.load(case / f"input_{i}.npy"))
                       .cuda().to(bf) for i in range(8)]
                load = lambda p: torch.from_numpy(np.load(p)).cuda().double()
                refs = [load(case / "ref_fwd" / "output_0.npy")] + [
                    load(case / "ref" / f"output_{i}.npy") for i in range(7)]
                checks.append(("interpreter", ins, refs))
            fresh.append(dout)
            checks.append(("gpu float64 autograd", fresh, reference(fresh)))
            torch.cuda.empty_cache()
            for what, ins, refs in checks:
                runs = poisoned_runs(torch, written, lambda: step(ins))
                got = [runs[0][0]] + runs[0][len(fwd_outs):]
                errs = [rel_err(torch, a, r) for a, r in zip(got, refs)]
                finite = all(bool(torch.isfinite(t).all()) for t in runs[0])
                same = all(torch.equal(a, b) for a, b in zip(*runs))
                res["checks"].append({"against": what,
                                      "rel_err": dict(zip(NAMES, errs)),
                                      "all_finite": finite,
                                      "deterministic": same})
                if not all(e <= REL_TOL for e in errs) or not same or \
                        not finite:
                    res["status"] = "incorrect"
            if res["status"] != "ok":
                bad += 1
                print(json.dumps(res), flush=True)
                continue

            for name, fn in (("forward", lambda i: forward(fresh)),
                             ("backward", lambda i: backward(fresh)),
                             ("forward_backward", lambda i: step(fresh))):
                res[name] = summary(time_ms(torch, fn, 1,
                                            *plan(probe_ms(torch, fn), args)))

            res["peers"] = []

            def add_peer(pid, fn, tf32):
                pr = {"id": pid}
                old = torch.backends.cuda.matmul.allow_tf32
                torch.backends.cuda.matmul.allow_tf32 = tf32
                try:
                    fn(0)
                    pr.update(summary(time_ms(
                        torch, fn, 1, *plan(probe_ms(torch, fn), args))))
                    pr["peer_over_tang"] = pr["ms"] / \
                        res["forward_backward"]["ms"]
                    # Eager PyTorch's medians swing with host-side launch
                    # time at small sizes: the ratio of the best times too.
                    pr["peer_min_over_tang_min"] = pr["min_ms"] / \
                        res["forward_backward"]["min_ms"]
                except Exception as e:  # a peer that does not run here
                    pr["error"] = f"{type(e).__name__}: {e}"[:200]
                finally:
                    torch.backends.cuda.matmul.allow_tf32 = old
                res["peers"].append(pr)

            for dt, tag in ((torch.float32, "fp32_tf32"), (bf, "bf16")):
                ws = [t.to(dt).requires_grad_() for t in fresh[:7]]
                do = dout.to(dt)

                def functional(i, ws=ws, do=do):
                    out = block_forward(torch, F, ws, H)
                    return torch.autograd.grad(out, ws, do)

                add_peer(f"torch_eager_{tag}_functional", functional,
                         tag == "fp32_tf32")
                if tag == "fp32_tf32":
                    blk = module_block(torch, F, [t.float() for t in fresh[:7]],
                                       H)
                    xg = fresh[0].float().requires_grad_()
                    params = [xg] + list(blk.parameters())

                    def module(i, blk=blk, xg=xg, params=params, do=do):
                        out = blk(xg)
                        return torch.autograd.grad(out, params, do)

                    add_peer("torch_eager_fp32_tf32_module", module, True)
                del ws
                torch.cuda.empty_cache()
            flops = meta["flops_forward"] + meta["flops_backward"]
            res["tflops"] = flops / res["forward_backward"]["ms"] / 1e9
            if meta["case"] in args.profile:
                res["profile"] = profile_kernels(torch, lambda: step(fresh),
                                                 top=16)
        except Exception as e:  # a load or launch failure
            res.update(status="failed", note=f"{type(e).__name__}: {e}"[:400])
            bad += 1
        print(json.dumps(res), flush=True)
        torch.cuda.empty_cache()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "block_grad" + ("" if work == WORK else "_" + work.name)
    (out / f"{stem}.json").write_text(json.dumps(report, indent=1) + "\n")
    f = lambda x, fmt: "-" if x is None else format(x, fmt)
    lines = [f"# Transformer block forward + backward, {report['device']}, "
             f"{report['date']}, torch {report['torch']}", "",
             "| case | status | max rel err | tang fwd ms | tang bwd ms | "
             "tang fwd+bwd ms | TFLOP/s | torch fp32/TF32 eager ms "
             "(best of module, functional) | peer/tang (medians; best "
             "times) | torch bf16 eager ms | peer/tang (medians; best "
             "times) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["cases"]:
        errs = [max(c["rel_err"].values()) for c in r.get("checks", [])]
        peers = {q["id"]: q for q in r.get("peers", []) if "ms" in q}
        tf = [q for k, q in peers.items() if "tf32" in k]
        tf = min(tf, key=lambda q: q["ms"]) if tf else {}
        b16 = peers.get("torch_eager_bf16_functional", {})
        lines.append(
            f"| {r['case']} | {r['status']} | "
            f"{f(max(errs) if errs else None, '.2e')} | "
            f"{f(r.get('forward', {}).get('ms'), '.3f')} | "
            f"{f(r.get('backward', {}).get('ms'), '.3f')} | "
            f"{f(r.get('forward_backward', {}).get('ms'), '.3f')} | "
            f"{f(r.get('tflops'), '.0f')} | {f(tf.get('ms'), '.3f')} | "
            f"{f(tf.get('peer_over_tang'), '.3f')}; "
            f"{f(tf.get('peer_min_over_tang_min'), '.3f')} | "
            f"{f(b16.get('ms'), '.3f')} | "
            f"{f(b16.get('peer_over_tang'), '.3f')}; "
            f"{f(b16.get('peer_min_over_tang_min'), '.3f')} |")
    for r in report["cases"]:
        for e in r.get("profile", []):
            lines.append(f"- {r['case']}: {e['ms']:.3f} ms {e['kernel']}")
    text = "\n".join(lines) + "\n"
    (out / f"{stem}.md").write_text(text)
    print(text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
