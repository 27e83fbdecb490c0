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


def main():
    shutil.rmtree(S.CACHE, ignore_errors=True)
    S.CACHE.mkdir(parents=True)
    jobs = [(name, fn) for name, (fn, _) in S.library().items()]
    jobs.append(("block", S.BLOCK))
    failed = 0
    for name, fn in jobs:
        t0 = time.time()
        try:
            tang.compile(fn, target="cuda")
            print(f"[prepare] {name}: {time.time() - t0:.1f} s")
        except tang.TangError as e:
            failed += 1
            print(f"[prepare] {name}: FAILED\n{e}", file=sys.stderr)
    t0 = time.time()
    try:
        tang.compile(S.BLOCK, target="cuda", options="tf32=1")
        print(f"[prepare] block tf32: {time.time() - t0:.1f} s")
    except tang.TangError as e:
        failed += 1
        print(f"[prepare] block tf32: FAILED\n{e}", file=sys.stderr)
    t0 = time.time()
    try:
        # torch.compile(backend="tang") of the block: its aten graph, as
        # captured on the GPU machine (bench/fx_capture.py), converted as
        # the backend converts it there, so that it finds this bundle.
        from tang import fx
        graph = json.loads((S.ROOT / "bench" / "inputs" /
                            "fx_block_gpu.json").read_text())
        tang.compile(fx.convert(graph, "tang_graph"), target="cuda")
        print(f"[prepare] torch.compile block: {time.time() - t0:.1f} s")
    except Exception as e:
        failed += 1
        print(f"[prepare] torch.compile block: FAILED\n{e}", file=sys.stderr)
    t0 = time.time()
    try:
        tang.vjp(S.TRAIN_BLOCK, target="cuda")
        print(f"[prepare] train_block forward + backward: "
              f"{time.time() - t0:.1f} s")
    except tang.TangError as e:
        failed += 1
        print(f"[prepare] train_block: FAILED\n{e}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
