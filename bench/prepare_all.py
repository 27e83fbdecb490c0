#!/usr/bin/python3
"""Runs every preparation step of bench/run_all.py's suites here (no GPU):

  scripts/prepare-gpu-check.py               every example, f32/f16/bf16
  scripts/prepare-gpu-check.py --gradients   every example's gradient, f32
  scripts/prepare-gpu-check.py --variant lanes=split-softmax-mma=off
      --filter decode_attention              decode attention's lane kernel
                                             (the default takes tensor
                                             cores)
  bench/prepare_python.py                    the Python front end's programs
  bench/prepare_bench.py                     the memory-bound kernels
  bench/prepare_gemm.py                      GEMMs, attention forward, block
  bench/prepare_attention_grad.py            attention forward + backward
  bench/prepare_block_grad.py                the block forward + backward
  bench/prepare_decode.py                    decode attention at the Qwen3-8B
                                             shapes (batches 1, 4, 16; and
                                             sequences of different lengths
                                             at 4, 16)
  bench/prepare_decode.py --tag lanes --options split-softmax-mma=off
                                             the same with the lane kernel
                                             (timed beside the default's
                                             tensor cores, tag lanes)
  bench/prepare_qwen3.py --varlen 4          the Qwen3-8B decode step (batches
                                             1, 4, 16; batch 4 also with
                                             sequences at positions of their
                                             own) and prefill (512, 2048)
  bench/prepare_moe.py                       Qwen3-Next's MoE layer (1, 4, 8,
                                             64 and 4096 tokens)
  bench/prepare_delta.py                     Qwen3-Next's gated delta rule
                                             (4096 tokens; decode at batches
                                             1, 16, 64)
  bench/prepare_gated_attention.py           Qwen3-Next's gated attention
                                             layer (4096 tokens)
  bench/prepare_portable.py                  the memory-bound programs (f16)
                                             for Vulkan and CUDA

and records the commit and whether the tree was dirty in gpu-work/git.json
(the GPU machine gets the tree without .git; the suites read it from there).
Everything lands in gpu-work/, which git ignores: carry it to the GPU
(`carry: ["gpu-work"]`), then run `python3 bench/run_all.py --quick` there.

Usage: /usr/bin/python3 bench/prepare_all.py [--skip STEP ...]
Exits 1 when a step failed (the others still run).
"""

import argparse
import json
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
    ("gpu_check_lanes", ["scripts/prepare-gpu-check.py", "--variant",
                         "lanes=split-softmax-mma=off", "--filter",
                         "decode_attention"]),
    ("python_check", ["bench/prepare_python.py"]),
    ("memory_bound", ["bench/prepare_bench.py"]),
    ("gemm", ["bench/prepare_gemm.py"]),
    ("attention_grad", ["bench/prepare_attention_grad.py"]),
    ("block_grad", ["bench/prepare_block_grad.py"]),
    ("decode", ["bench/prepare_decode.py"]),
    ("decode_lanes", ["bench/prepare_decode.py", "--tag", "lanes",
                      "--options", "split-softmax-mma=off"]),
    ("qwen3", ["bench/prepare_qwen3.py", "--varlen", "4"]),
    ("moe", ["bench/prepare_moe.py"]),
    ("delta", ["bench/prepare_delta.py"]),
    ("gated_attention", ["bench/prepare_gated_attention.py"]),
    ("portable", ["bench/prepare_portable.py"]),
]


def shrink_refs():
    """The interpreter's float64 references of bf16 cases, stored as float32
    (their rounding, 6e-8 relative, is five orders under the bf16 bound) so
    that gpu-work stays under the device machine's 64 MiB; tf32/f32 cases
    keep float64."""
    import numpy as np
    saved = 0
    for meta_path in (ROOT / "gpu-work").glob("*/*/meta.json"):
        meta = json.loads(meta_path.read_text())
        if meta.get("dtype", "bf16") != "bf16":
            continue
        for ref in list(meta_path.parent.glob("ref/*.npy")) + \
                list(meta_path.parent.glob("ref_fwd/*.npy")):
            a = np.load(ref)
            if a.dtype == np.float64 and a.size > 65536:
                np.save(ref, a.astype(np.float32))
                saved += a.nbytes // 2
    print(f"references of bf16 cases stored as float32: {saved >> 20} MiB "
          f"saved")


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
    shrink_refs()
    size = sum(f.stat().st_size for f in (ROOT / "gpu-work").rglob("*")
               if f.is_file())
    print(f"gpu-work: {size / 2**20:.1f} MiB (the tree that travels must "
          f"stay under 64 MiB)")
    if failed:
        print(f"failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
