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
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
WORK = ROOT / "gpu-work" / "block-grad"
REL_TOL = 3e-2

from bench_gemm import block_forward  # noqa: E402
from bench_memory_bound import load_metas, profile_kernels  # noqa: E402
import harness  # noqa: E402

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


def tolerances(peer=False):
    """out: bf16 storage, f32 sums (longest: the SwiGLU's 4096), the
    program's eight stored bf16 steps (R 8); the gradients pass through
    about twice as many (R 16). Peers: three more."""
    e = 3 if peer else 0
    return [harness.Tolerance("bf16", reduction=4096, roundings=8 + e)] + \
        [harness.Tolerance("bf16", reduction=4096, roundings=16 + e)] * 7


def run_case(torch, F, tang_cuda, meta, work, args, deadline):
    import numpy as np
    p = meta["params"]
    B, L, D, H = p["B"], p["L"], p["D"], p["H"]
    res = harness.case_result(meta["case"], params=p,
                              flops=meta["flops_forward"]
                              + meta["flops_backward"])
    if not meta["ok"]:
        res.update(status="compile failed", note=meta["error"][-400:])
        return res
    case = work / meta["case"]
    train = tang_cuda.Bundle(case / "train")
    bf = torch.bfloat16
    g = torch.Generator(device="cuda").manual_seed(4321)
    fresh = []
    for s_ in meta["inputs"]:
        a = torch.randn(s_, generator=g, device="cuda")
        if len(s_) == 2:
            a /= s_[0] ** 0.5
        elif len(s_) == 1:
            a = 1 + 0.1 * a
        fresh.append(a.to(bf))
    dout = torch.randn((B, L, D), generator=g, device="cuda").to(bf)
    fwd_outs = list(train.run("main_fwd", *fresh))
    grads = list(train.run("main_bwd", *fresh, *fwd_outs, dout))
    written = fwd_outs + grads

    def forward(ins):
        train.run("main_fwd", *ins[:7], outputs=fwd_outs)

    def backward(ins):
        train.run("main_bwd", *ins[:7], *fwd_outs, ins[7], outputs=grads)

    def step(ins):
        forward(ins)
        backward(ins)

    def reference(ins):
        """float64 out and gradients of the block at `ins`."""
        xs = [t.double().requires_grad_() for t in ins[:7]]
        out = block_forward(torch, F, xs, H)
        return [out.detach(), *torch.autograd.grad(out, xs, ins[7].double())]

    tols, tols_p = tolerances(), tolerances(peer=True)
    res["tolerance"] = {"out": tols[0].describe(), "grads": tols[1].describe(),
                        "peers": tols_p[1].describe()}
    checks = []
    if meta["interpreter_ref"]:
        ins = [torch.from_numpy(np.load(case / f"input_{i}.npy"))
               .cuda().to(bf) for i in range(8)]
        load = lambda q: torch.from_numpy(np.load(q)).cuda().double()
        refs = [load(case / "ref_fwd" / "output_0.npy")] + [
            load(case / "ref" / f"output_{i}.npy") for i in range(7)]
        checks.append(("interpreter", ins, refs))
    fresh.append(dout)
    refs_fresh = reference(fresh)
    checks.append(("gpu float64 autograd", fresh, refs_fresh))
    torch.cuda.empty_cache()
    same_all = True
    for what, ins, refs in checks:
        first, same = harness.poisoned_runs(torch, written, lambda: step(ins))
        same_all &= same
        got = [first[0]] + first[len(fwd_outs):]
        for name, a, r, t in zip(NAMES, got, refs, tols):
            res["checks"].append(harness.check_tensor(a, r, t,
                                                      f"{what}: {name}"))
        del first, got
    if not harness.judge_checks(res, same_all):
        return res
    if args.sanitize:
        return harness.sanitized(res)

    graphs, peer_checks = {}, {}
    call, gr, why = harness.try_graphed(torch, lambda: step(fresh))
    graphs["tang"] = gr or why
    contenders = [("tang", call)]

    def add_peer(pid, fn, tf32, check=True):
        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32

        def run(fn=fn, tf32=tf32):
            o = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = tf32
            try:
                return fn()
            finally:
                torch.backends.cuda.matmul.allow_tf32 = o
        try:
            got = run()
            if check:
                peer_checks[pid] = [harness.check_tensor(a, r, t, f"{pid} {n}")
                                    for n, a, r, t in zip(NAMES[1:], got,
                                                          refs_fresh[1:],
                                                          tols_p[1:])]
            del got
            c, gr, why = harness.try_graphed(torch, run)
            graphs[pid] = gr or why
            contenders.append((pid, c))
        except Exception as e:  # a peer that does not run here
            res.setdefault("peer_status", {})[pid] = "failed: " + \
                harness.short(e)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old

    keep = []
    for dt, tag in ((torch.float32, "fp32_tf32"), (bf, "bf16")):
        ws = [t.to(dt).requires_grad_() for t in fresh[:7]]
        do = dout.to(dt)
        keep.append((ws, do))

        def functional(ws=ws, do=do):
            out = block_forward(torch, F, ws, H)
            return torch.autograd.grad(out, ws, do)

        add_peer(f"torch_eager_{tag}", functional, tag == "fp32_tf32")
        if tag == "fp32_tf32":
            blk = module_block(torch, F, [t.float() for t in fresh[:7]], H)
            xg = fresh[0].float().requires_grad_()
            params = [xg] + list(blk.parameters())

            def module(blk=blk, xg=xg, params=params, do=do):
                out = blk(xg)
                return torch.autograd.grad(out, params, do)

            # The module's weights are transposed ([out, in]) and its
            # gradients come in parameter order: timed here, checked
            # through the functional form above (the same math).
            add_peer("torch_eager_fp32_tf32_module", module, True,
                     check=False)
        else:
            pid = "torch_compile_bf16"
            if deadline.passed(args.compile_reserve_s):
                res.setdefault("peer_status", {})[pid] = "skipped: budget"
            else:
                t0 = time.monotonic()
                cf = torch.compile(
                    lambda *w: block_forward(torch, F, list(w), H),
                    mode="max-autotune-no-cudagraphs")

                def compiled(ws=ws, do=do, cf=cf):
                    out = cf(*ws)
                    return torch.autograd.grad(out, ws, do)

                add_peer(pid, compiled, False)
                res["compile_s"] = round(time.monotonic() - t0, 1)
    res["cuda_graphs"] = graphs
    res["peer_checks"] = {k_: [{kk: c[kk] for kk in ("name", "ok", "max_err",
                                                      "bad", "worst")}
                               for c in v_] for k_, v_ in peer_checks.items()}
    # The module peer computes what the functional fp32 peer does.
    if "torch_eager_fp32_tf32" in peer_checks:
        peer_checks["torch_eager_fp32_tf32_module"] = \
            peer_checks["torch_eager_fp32_tf32"]
    refs_fresh = None
    torch.cuda.empty_cache()
    timed = harness.interleaved_rounds(
        torch, contenders, rounds=args.rounds_n, target_ms=args.target_ms,
        deadline=deadline.monotonic())
    wrong = [k_ for k_, v_ in peer_checks.items()
             if not all(c["ok"] for c in v_)]
    harness.record_timing(res, timed, wrong)
    if not args.quick:
        for name, fn in (("forward", lambda i: forward(fresh)),
                         ("backward", lambda i: backward(fresh))):
            pl = harness.plan_calls(torch, fn, args.target_ms)
            res[f"tang_{name}_ms"] = statistics.median(harness.time_calls(
                torch, fn, pl.reps, 1, pl.hold_ms))
    if meta["case"] in args.profile:
        res["profile"] = profile_kernels(torch, lambda: step(fresh), top=16)
    del keep
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="*")
    ap.add_argument("--profile", nargs="*", default=[],
                    help="cases whose training-step kernels are profiled")
    ap.add_argument("--work", default=str(WORK),
                    help="where bench/prepare_block_grad.py left the cases")
    ap.add_argument("--compile-reserve-s", type=float, default=240,
                    help="skip the torch.compile peer when less than this "
                         "is left before --deadline (default 240)")
    harness.add_common_args(ap)
    args = ap.parse_args()
    args.rounds_n = harness.rounds_of(args)
    args.target_ms = harness.target_ms_of(args)
    deadline = harness.Deadline(args.deadline)
    t_start = time.monotonic()
    import torch
    import torch.nn.functional as F
    import tang.cuda as tang_cuda

    work = Path(args.work)
    # Largest first: the headline case gets the torch.compile peer first
    # when the budget is short.
    metas = load_metas(work, args.cases, "bench/prepare_block_grad.py",
                       "flops_forward")[::-1]
    out = Path(args.out) if args.out else harness.out_dir("block-grad-out")
    stem = "block_grad" + ("" if work == WORK else "_" + work.name)
    path = out / f"{stem}.json"
    report = harness.new_report("block_grad", torch, settings={
        "rounds": args.rounds_n, "target_ms": args.target_ms,
        "quick": args.quick})
    return harness.run_cases(
        torch, report, path, metas,
        lambda meta: run_case(torch, F, tang_cuda, meta, work, args, deadline),
        deadline, t_start)


if __name__ == "__main__":
    sys.exit(main())
