#!/usr/bin/env python3
"""Runs one prepared case's bundle (gpu-work/gemm/CASE, bench/prepare_gemm.py)
a few times on random inputs, for a profiler:

  ncu --clock-control none --section SpeedOfLight --section WarpStateStats \\
      --kernel-name main_k0 --launch-skip 2 --launch-count 1 \\
      python3 bench/profile_case.py CASE [RUNS]
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402
import tang.cuda as tang_cuda  # noqa: E402
from bench_gemm import WORK, dtype_of, inputs_for  # noqa: E402

case = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
meta = json.loads((WORK / case / "meta.json").read_text())
ins = inputs_for(torch, meta, 1)
bundle = tang_cuda.Bundle(WORK / case / "bundle")
out = torch.empty(meta["output"], device="cuda", dtype=dtype_of(torch, meta))
for _ in range(runs):
    bundle.run("main", *ins, outputs=[out])
torch.cuda.synchronize()
print("done", case)
