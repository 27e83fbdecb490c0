#!/usr/bin/env python3
"""Prepares the transformer block's forward + backward for the GPU
(bench/bench_block_grad.py).

For every case, under gpu-work/block-grad/<case>/:

  forward.mlir      the block of ANCHORS.md (pre-RMSNorm, causal multi-head
                    attention, SwiGLU; bench/prepare_gemm.py's
                    block_program), bf16, one kernel-sized comprehension per
                    step;
  train.mlir        `tang-opt --tang-grad="split=1 fuse-forward=0"` of it:
                    @main_fwd (x, weights -> out, residuals) and @main_bwd
                    (x, weights, out, residuals, dout -> the gradients of x
                    and of the six weights);
  train/            its bundle (`--tang-lower-cuda="fuse=0 format=bin"`: the
                    block is written kernel by kernel, as the forward
                    benchmark compiles it);
  meta.json         shapes, FLOPs (forward: 2 B L (4 d^2 + 3 d ffn) +
                    2 B H L^2 hd, the causal half of the attention products;
                    backward twice that), kernels, remarks;
  input_*.npy, ref/ the small case: inputs and the float64 interpreter's
                    forward (ref_fwd/) and gradients (ref/).

Usage: /usr/bin/python3 bench/prepare_block_grad.py [--only CASE ...]
"""

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from prepare_gemm import block_program, draw  # noqa: E402
import prepare_attention_grad as pag  # noqa: E402
from prepare_attention_grad import compile_bundle, run  # noqa: E402

WORK = ROOT / "gpu-work" / "block-grad"
TANG_RUN = ROOT / "build" / "bin" / "tang-run"

#: (case, B, L, D, H, F, interpreter-checked)
CASES = [("block_grad_small", 1, 64, 128, 2, 256, True)] + [
    (f"block_grad_L{L}", 8, L, 1024, 16, 4096, False) for L in (128, 512, 2048)
]


def training_program(forward: Path) -> str:
    """`forward`'s split gradient (@main_fwd and @main_bwd alone), the
    forward differentiated as written (it is already kernel-sized)."""
    return pag.training_program(forward, "split=1 fuse-forward=0")


def flops_forward(B, L, D, H, F):
    return 2 * B * L * (4 * D * D + 3 * D * F) + 2 * B * H * L * L * (D // H)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", metavar="CASE")
    args = ap.parse_args()
    rng = np.random.default_rng(2026)
    bad = 0
    for name, B, L, D, H, F, check in CASES:
        if args.only and name not in args.only:
            continue
        case = WORK / name
        shutil.rmtree(case, ignore_errors=True)
        case.mkdir(parents=True)
        fwd = case / "forward.mlir"
        fwd.write_text(block_program(B, L, D, H, F))
        train = case / "train.mlir"
        meta = {"case": name, "params": dict(B=B, L=L, D=D, H=H, F=F),
                "flops_forward": flops_forward(B, L, D, H, F),
                "inputs": [[B, L, D], [D], [D, 3 * D], [D, D], [D],
                           [D, 2 * F], [F, D]],
                "interpreter_ref": False}
        meta["flops_backward"] = 2 * meta["flops_forward"]
        try:
            train.write_text(training_program(fwd))
            meta["train"] = compile_bundle(train, case / "train",
                                           options="fuse=0")
            meta["ok"] = True
        except RuntimeError as e:
            meta["ok"] = False
            meta["error"] = str(e)
            bad += 1
        if meta["ok"] and check:
            # The block's inputs as prepare_gemm draws them, and a
            # standard normal cotangent (bf16 values).
            arrays = draw(rng, "block", meta["inputs"])
            arrays.append(draw(rng, "", [[B, L, D]])[0])
            paths = []
            for i, a in enumerate(arrays):
                paths.append(case / f"input_{i}.npy")
                np.save(paths[-1], a)
            t0 = time.monotonic()
            cmd = [TANG_RUN, train, "--entry=main_fwd", "--output-dir",
                   case / "ref_fwd"]
            for p in paths[:-1]:
                cmd += ["--input", p]
            run(cmd)
            saved = sorted((case / "ref_fwd").glob("output_*.npy"),
                           key=lambda p: int(p.stem.split("_")[1]))
            cmd = [TANG_RUN, train, "--entry=main_bwd", "--output-dir",
                   case / "ref"]
            for p in paths[:-1] + saved + paths[-1:]:
                cmd += ["--input", p]
            run(cmd)
            meta["interpreter_ref"] = True
            meta["interpreter_seconds"] = round(time.monotonic() - t0, 1)
        (case / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        kernels = meta.get("train", {}).get("kernels", {})
        print(f"  {name:20s} {'ok' if meta['ok'] else 'FAIL'} kernels "
              f"{ {f: len(k) for f, k in kernels.items()} } remarks "
              f"{len(meta.get('train', {}).get('remarks', []))} interp-ref "
              f"{meta['interpreter_ref']}", flush=True)
        if not meta["ok"]:
            print("    " + meta["error"][-800:])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
