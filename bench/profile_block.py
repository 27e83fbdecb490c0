#!/usr/bin/env python3
"""One forward of the transformer block through tang's bundle, then one
through PyTorch (separate weights), for a kernel-by-kernel profile:

  ncu --clock-control none --metrics gpu__time_duration.sum --csv \\
      python3 bench/profile_block.py [CASE]

(CASE defaults to block_L2048 under gpu-work/gemm; prepared by
bench/prepare_gemm.py.) The NVTX-free split: tang's kernels are named
main_k<N>, PyTorch's after its libraries' kernels."""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import tang.cuda as tang_cuda  # noqa: E402
from bench_gemm import (block_forward_separate, inputs_for,  # noqa: E402
                        WORK)

case = sys.argv[1] if len(sys.argv) > 1 else "block_L2048"
meta = json.loads((WORK / case / "meta.json").read_text())
ins = inputs_for(torch, meta, 1)
bundle = tang_cuda.Bundle(WORK / case / "bundle")
out = torch.empty(meta["output"], device="cuda", dtype=torch.bfloat16)
bundle.run("main", *ins, outputs=[out])
torch.cuda.synchronize()
x, wn1, Wqkv, Wo, wn2, W13, W2 = ins
qkv = [w.contiguous() for w in Wqkv.chunk(3, 1)]
gu = [w.contiguous() for w in W13.chunk(2, 1)]
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("torch")
block_forward_separate(torch, F, x, wn1, qkv, Wo, wn2, gu, W2,
                       meta["params"]["H"])
torch.cuda.synchronize()
print("done")
