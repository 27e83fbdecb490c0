#!/usr/bin/env python3
"""Narrows down the CUDA-graph fault of the attention training step (issue
16's note): on the H200, replaying a CUDA graph of the tang step
(main_fwd then main_bwd of gpu-work/attention-grad/<case>/train) faulted
with an illegal address at B=64, L=512, while direct launches were clean.

Each variant runs in its own process (a fault poisons the context), with
the inputs the benchmark uses, and reports 'ok' or the error:

  direct       the step launched directly, 50 times
  graph-fwd    main_fwd alone captured, replayed 50 times
  graph-bwd    main_bwd alone captured (after one direct forward)
  graph-step   forward + backward captured together (the benchmark's form)
  graph-sync   as graph-step, synchronising after every replay

Usage (GPU machine, gpu-work carried):
  python3 bench/repro_graph_fault.py [--case grad_L512_d64] [--variants ...]
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ["direct", "graph-fwd", "graph-bwd", "graph-step", "graph-sync"]


def child(case: str, variant: str) -> None:
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
