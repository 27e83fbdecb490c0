#!/usr/bin/python3
"""Compiles the Python front end's GPU check (bench/python_suite.py) for
CUDA here, into gpu-work/python-cache: every operator of tang.nn, the
transformer block, and the training block's forward and derived backward
(tang.vjp). bench/python_check.py runs them on the GPU from that cache.

Usage: /usr/bin/python3 bench/prepare_python.py
"""

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
        tang.vjp(S.TRAIN_BLOCK, target="cuda")
        print(f"[prepare] train_block forward + backward: "
              f"{time.time() - t0:.1f} s")
    except tang.TangError as e:
        failed += 1
        print(f"[prepare] train_block: FAILED\n{e}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
