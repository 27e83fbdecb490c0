#!/usr/bin/env python3
"""Captures the aten graph of the torch.compile block (bench/python_suite.py
torch_block_module) on the GPU machine (the only one with PyTorch) and
writes, under $OUT: fx_block_<size>.json (tang.fx.describe of the graph)
for each size, and for the small size the graph's inputs in placeholder
order and the eager output (fx_block_ci_inputs.npz, fx_block_ci_y.npy,
float64 of the float32 run). The
graphs are converted and compiled here by bench/prepare_python.py; the ci
fixtures go under test/Python/Inputs.

Usage (GPU machine): python3 bench/fx_capture.py
"""

import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import python_suite as S  # noqa: E402


def main():
    import numpy as np
    import torch
    out = pathlib.Path(os.environ.get("OUT", "."))
    torch.backends.cuda.matmul.allow_tf32 = False
    for size, (t_, d, h, f) in S.FX_SIZES.items():
        m = S.torch_block_module(torch, t_, d, h, f, seed=21).cuda()
        x = S.make_inputs(torch, [("f", (1, t_, d))], seed=22)[0]
        graph, inputs = S.capture_aten(torch, m, x)
        (out / f"fx_block_{size}.json").write_text(json.dumps(graph))
        ops = sorted({n["target"] for n in graph["nodes"]
                      if n["op"] == "call_function"})
        print(f"fx_capture {size}: {len(graph['nodes'])} nodes; ops: "
              f"{', '.join(ops)}")
        if size == "ci":
            with torch.no_grad():
                y = m(x)
            np.savez(out / "fx_block_ci_inputs.npz", *inputs)
            np.save(out / "fx_block_ci_y.npy", y.double().cpu().numpy())
    return 0


if __name__ == "__main__":
    sys.exit(main())
