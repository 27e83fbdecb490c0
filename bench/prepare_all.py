#!/usr/bin/python3
"""Runs every preparation step of bench/run_all.py's suites here (no GPU):

  scripts/prepare-gpu-check.py               every example, f32/f16/bf16
  scripts/prepare-gpu-check.py --gradients   every example's gradient, f32
  bench/prepare_bench.py                     the memory-bound kernels
  bench/prepare_gemm.py                      GEMMs, attention forward, block
  bench/prepare_attention_grad.py            attention forward + backward
  bench/prepare_block_grad.py                the block forward + backward

and records the commit and whether the tree was dirty in gpu-work/git.json
(the GPU machine gets the tree without .git; the suites read it from there).
Everything lands in gpu-work/, which git ignores: carry it to the GPU
(`carry: ["gpu-work"]`), then run `python3 bench/run_all.py --quick` there.

Usage: /usr/bin/python3 bench/prepare_all.py [--skip STEP ...]
Exits 1 when a step failed (the others still run).
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402

STEPS = [
    ("gpu_check", ["scripts/prepare-gpu-check.py"]),
    ("gpu_check_gradients", ["scripts/prepare-gpu-check.py", "--gradients"]),
    ("memory_bound", ["bench/prepare_bench.py"]),
    ("gemm", ["bench/prepare_gemm.py"]),
    ("attention_grad", ["bench/prepare_attention_grad.py"]),
    ("block_grad", ["bench/prepare_block_grad.py"]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skip", nargs="*", default=[],
                    choices=[s for s, _ in STEPS])
    args = ap.parse_args()
    if not (ROOT / "build" / "bin" / "tang-opt").exists():
        sys.exit("build/bin/tang-opt is missing: build first")
    st = harness.record_git()
    print(f"commit {st['commit']} dirty {st['dirty']} -> "
          f"{harness.GIT_JSON.relative_to(ROOT)}", flush=True)
    failed = []
    for name, cmd in STEPS:
        if name in args.skip:
            continue
        t0 = time.monotonic()
        print(f"== {name}: {' '.join(cmd)}", flush=True)
        r = subprocess.run([sys.executable, *cmd], cwd=ROOT)
        print(f"== {name}: rc {r.returncode}, "
              f"{time.monotonic() - t0:.0f} s", flush=True)
        if r.returncode:
            failed.append(name)
    if failed:
        print(f"failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
