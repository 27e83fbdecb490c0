#!/usr/bin/env python3
"""Per-kernel GPU times of a Qwen3-Next layer's bundle (GPU machine): the
time of one call in a CUDA graph (20 replays) and, from torch.profiler,
each kernel's time per call, largest first. The figures of
bench/results/2026-12-07-h100-delta-decode/README.md came from it.

  python3 bench/profile_qwen3_next.py delta 4096     # prefill, gpu-work/delta
  python3 bench/profile_qwen3_next.py decode 16      # decode batch 16
  python3 bench/profile_qwen3_next.py attention 4096 # gpu-work/gated_attention
  python3 bench/profile_qwen3_next.py moe 1          # gpu-work/moe

Bundles from bench/prepare_delta.py, prepare_gated_attention.py and
prepare_moe.py; random inputs (speed only: nothing is checked here).
"""
import json
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
import tang.cuda  # noqa: E402
from tang.models import qwen3_next as qn  # noqa: E402


def bundle_of(work, key, match):
    listing = json.loads((ROOT / "gpu-work" / work / "bundles.json")
                         .read_text())
    found = [b for b in listing["bundles"].values() if match(b)]
    if not found:
        sys.exit(f"no {key} bundle in gpu-work/{work}: run its prepare "
                 "script with that size")
    return tang.cuda.Bundle(ROOT / found[0]["dir"] / "bundle")


def weights(shapes, gen):
    return [torch.randn(s, device="cuda", generator=gen).bfloat16()
            / s[-1] ** 0.5 for s in shapes.values()]


def setup(which, n):
    """The call to profile: a closure running the bundle once."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    if which in ("delta", "decode"):
        import bench_delta as bd
        cfg = qn.QWEN3_NEXT_DELTA
        if which == "delta":
            bundle = bundle_of("delta", f"{n}-token",
                               lambda b: b.get("tokens") == n)
            xs = bd.inputs(cfg, n)
        else:
            bundle = bundle_of("delta", f"batch-{n} decode",
                               lambda b: b.get("decode_batch") == n)
            xs = bd.inputs(cfg, 1, batch=n) + (bd.state(cfg, n),)
        return lambda: bundle.run("gated_delta_rule", *xs)
    if which == "attention":
        cfg = qn.QWEN3_NEXT_ATTENTION
        bundle = bundle_of("gated_attention", f"{n}-token",
                           lambda b: b.get("tokens") == n)
        W = weights(qn.attention_weight_shapes(cfg), gen)
        x = torch.randn(n, cfg.hidden, device="cuda",
                        generator=gen).bfloat16()
        return lambda: bundle.run("gated_attention", x, *W)
    if which == "moe":
        cfg = qn.QWEN3_NEXT_MOE
        bundle = bundle_of("moe", f"{n}-token",
                           lambda b: b.get("tokens") == n)
        W = weights(qn.moe_weight_shapes(cfg), gen)
        x = torch.randn(n, cfg.hidden, device="cuda",
                        generator=gen).bfloat16()
        return lambda: bundle.run("moe_layer", x, *W)
    sys.exit(f"unknown layer {which!r}: delta, decode, attention or moe")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    which, n = sys.argv[1], int(sys.argv[2])
    run = setup(which, n)
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    graph.replay()
    torch.cuda.synchronize()
    start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
    start.record()
    for _ in range(20):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    print(f"[{which} {n}] {start.elapsed_time(end) / 20:.4f} ms a call "
          "(CUDA graph, 20 replays)")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            run()
        torch.cuda.synchronize()
    rows = []
    for ev in prof.key_averages():
        t = getattr(ev, "device_time_total", None)
        if t is None:
            t = getattr(ev, "cuda_time_total", 0)
        if t:
            rows.append((t / 3 / 1000, ev.count // 3, ev.key))
    rows.sort(reverse=True)
    print(f"{len(rows)} kernels, {sum(r[0] for r in rows):.3f} ms a call")
    for ms, count, key in rows:
        print(f"  {ms:8.3f} ms  x{count:<3d} {key[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
