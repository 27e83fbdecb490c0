#!/usr/bin/env python3
"""Narrows down the CUDA-graph fault of bench_attention_grad.py --graphs:
on the H200 at B=64, L=512 a replay faults with an illegal address. Found
with the bench-case variants (2026-12-02): the faulting replay is the
FlashAttention-2 peer's, captured inside the benchmark's run_case; tang's
step (main_fwd then main_bwd of gpu-work/attention-grad/<case>/train)
replays cleanly in every variant.

Each variant runs in its own process (a fault poisons the context), with
the inputs the benchmark uses, and reports 'ok' or the error:

  direct       the step launched directly, 50 times
  graph-fwd    main_fwd alone captured, replayed 50 times
  graph-bwd    main_bwd alone captured (after one direct forward)
  graph-step   forward + backward captured together (the benchmark's form)
  graph-sync   as graph-step, synchronising after every replay
  peer-flash   the FlashAttention-2 peer's step (SDPA + autograd.grad)
               captured and replayed, synchronising after every replay
  peer-cudnn   the same with the cuDNN backend
  peer-flash-nograd  the FlashAttention-2 forward alone, captured
  bench-order  tang's graph, then both peers', as bench_attention_grad
               builds them, replayed in turn
  bench-case   bench_attention_grad's own run_case with graphs, each
               contender then replayed alone and synchronised (tang first)
  bench-case-reversed  the same, peers first

Usage (GPU machine, gpu-work carried):
  python3 bench/repro_graph_fault.py [--case grad_L512_d64] [--variants ...]
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ["direct", "graph-fwd", "graph-bwd", "graph-step", "graph-sync",
            "peer-flash", "peer-cudnn", "peer-flash-nograd", "bench-order",
            "bench-case", "bench-case-reversed"]


def bench_case(case: str, reverse: bool) -> None:
    """bench_attention_grad.run_case as the benchmark runs it, with timing
    replaced by one synchronised replay per contender: the first contender
    whose replay faults is named."""
    import os
    import torch
    import torch.nn.functional as F
    os.environ.pop("TANG_BENCH_GRAPHS", None)
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_attention_grad as bag
    import harness
    import tang.cuda as tang_cuda

    def one_replay_each(torch_, contenders, **_):
        for name, fn in (reversed(contenders) if reverse else contenders):
            fn(0)
            try:
                torch.cuda.synchronize()
            except Exception as e:
                print(json.dumps({"variant": "bench-case", "ok": False,
                                  "faulted": name, "error": str(e)[:200]}))
                raise
        raise Replayed
    harness.interleaved_rounds = one_replay_each
    work = ROOT / "gpu-work" / "attention-grad"
    meta = json.loads((work / case / "meta.json").read_text())
    args = argparse.Namespace(quick=True, compile_reserve_s=90, rounds_n=1,
                              target_ms=1, profile=[])
    try:
        res = bag.run_case(torch, F, tang_cuda, meta, work, args,
                           harness.Deadline(None))
    except Replayed:
        print(json.dumps({"variant": "bench-case", "ok": True}))
        return
    print(json.dumps({"variant": "bench-case", "ok": False,
                      "error": f"not timed: status {res['status']}"}))


class Replayed(Exception):
    """Every contender replayed once without a fault."""


def child(case: str, variant: str) -> None:
    if variant.startswith("bench-case"):
        return bench_case(case, variant.endswith("reversed"))
    import torch
    sys.path.insert(0, str(ROOT / "python"))
    import tang.cuda as tang_cuda
    sys.path.insert(0, str(ROOT / "bench"))
    import harness

    def graphed(fn):  # harness.graphed's replay wraps the CUDAGraph
        return harness.graphed(torch, fn).graph

    work = ROOT / "gpu-work" / "attention-grad" / case
    meta = json.loads((work / "meta.json").read_text())
    B, H, L, D = (meta["params"][k] for k in ("B", "H", "L", "D"))
    bf = torch.bfloat16
    train = tang_cuda.Bundle(work / "train")
    g = torch.Generator(device="cuda").manual_seed(4321)
    q, k, v, do = [(torch.rand((B, H, L, D), device="cuda", generator=g)
                    * 2 - 1).to(bf) for _ in range(4)]
    o = torch.empty((B, H, L, D), device="cuda", dtype=bf)
    stats = [torch.empty((B, H, L), device="cuda", dtype=torch.float32)
             for _ in range(2)]
    grads = [torch.empty((B, H, L, D), device="cuda", dtype=bf)
             for _ in range(3)]

    def fwd():
        train.run("main_fwd", q, k, v, outputs=[o, *stats])

    def bwd():
        train.run("main_bwd", q, k, v, o, *stats, do, outputs=grads)

    def step():
        fwd()
        bwd()

    scale = 1.0 / D ** 0.5
    causal = bool(meta["params"].get("causal"))

    def peer_fn(backend, grad=True):
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        be = getattr(SDPBackend, backend)
        qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))

        def peer():
            with sdpa_kernel(be):
                out = F.scaled_dot_product_attention(
                    qg, kg, vg, is_causal=causal, scale=scale)
            if not grad:
                return out
            return torch.autograd.grad(out, (qg, kg, vg), do)
        peer()
        return peer

    if variant.startswith("peer-") or variant == "bench-order":
        graphs = []
        if variant == "bench-order":
            graphs.append(graphed(step))
        if variant in ("peer-flash", "peer-flash-nograd", "bench-order"):
            graphs.append(graphed(peer_fn("FLASH_ATTENTION",
                                          variant != "peer-flash-nograd")))
        if variant in ("peer-cudnn", "bench-order"):
            graphs.append(graphed(peer_fn("CUDNN_ATTENTION")))
        for i in range(20):
            for n, graph in enumerate(graphs):
                graph.replay()
                try:
                    torch.cuda.synchronize()
                except Exception as e:
                    print(json.dumps({"variant": variant, "ok": False,
                                      "graph": n, "replay": i,
                                      "error": str(e)[:200]}))
                    raise
        print(json.dumps({"variant": variant, "ok": True}))
        return
    if variant == "direct":
        for _ in range(50):
            step()
    elif variant == "graph-bwd":
        fwd()
        graph = graphed(bwd)
        for _ in range(50):
            graph.replay()
    else:
        graph = graphed(fwd if variant == "graph-fwd" else step)
        for _ in range(50):
            graph.replay()
            if variant == "graph-sync":
                torch.cuda.synchronize()
    torch.cuda.synchronize()
    finite = all(bool(torch.isfinite(t.float()).all()) for t in grads)
    print(json.dumps({"variant": variant, "ok": True, "finite": finite}))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", default="grad_L512_d64")
    ap.add_argument("--variants", nargs="*", default=VARIANTS,
                    choices=VARIANTS)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.case, args.child)
        return 0
    failures = 0
    for variant in args.variants:
        r = subprocess.run([sys.executable, __file__, "--case", args.case,
                            "--child", variant], capture_output=True,
                           text=True, timeout=300)
        last = (r.stdout.strip().splitlines() or [""])[-1]
        if r.returncode and last.startswith("{"):
            r.stderr += "\nError: " + last  # the child's own diagnosis
        if r.returncode == 0:
            print(f"{variant:11s} {last}")
        else:
            failures += 1
            err = [ln for ln in r.stderr.splitlines() if "Error" in ln]
            print(f"{variant:11s} FAULT (exit {r.returncode}): "
                  f"{err[-1] if err else r.stderr[-300:]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
