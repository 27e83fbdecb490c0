#!/usr/bin/python3
"""Compiles the Python front end's GPU check (bench/python_suite.py) for
CUDA here, into gpu-work/python-cache: every operator of tang.nn, the
transformer block, and the training block's forward and derived backward
(tang.vjp). bench/python_check.py runs them on the GPU from that cache.

Usage: /usr/bin/python3 bench/prepare_python.py
"""

import json
import shutil
import sys
import time

import python_suite as S

import tang


def step(name, build):
    """Runs one compilation; returns 1 if it failed (and says why)."""
    t0 = time.time()
    try:
        build()
        print(f"[prepare] {name}: {time.time() - t0:.1f} s")
        return 0
    except Exception as e:
        print(f"[prepare] {name}: FAILED\n{e}", file=sys.stderr)
        return 1


def fx_block():
    """torch.compile(backend="tang") of the block: its aten graph as
    captured on the GPU machine (bench/fx_capture.py), converted as the
    backend converts it there, so that it finds this bundle."""
    from tang import fx
    graph = json.loads((S.ROOT / "bench" / "inputs" / "fx_block_gpu.json")
                       .read_text())
    tang.compile(fx.convert(graph, "tang_graph"), target="cuda")


def main():
    shutil.rmtree(S.CACHE, ignore_errors=True)
    S.CACHE.mkdir(parents=True)
    jobs = [(name, lambda fn=fn: tang.compile(fn, target="cuda"))
            for name, (fn, _) in S.library().items()]
    jobs += [("block", lambda: tang.compile(S.BLOCK, target="cuda")),
             ("block tf32", lambda: tang.compile(S.BLOCK, target="cuda",
                                                 options="tf32=1")),
             ("torch.compile block", fx_block),
             ("rms_norm backward (tang.torch_op)",
              lambda: tang.vjp(S.library()["rms_norm"][0], target="cuda")),
             ("train_block forward + backward",
              lambda: tang.vjp(S.TRAIN_BLOCK, target="cuda"))]
    failed = sum(step(name, build) for name, build in jobs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
