#!/usr/bin/python3
"""Compiles the sparse mixture-of-experts layer at Qwen3-Next's shape
(tang.models.qwen3_next.moe_layer: hidden 2048, 512 experts of ffn 512, 10
routed, a gated shared expert of ffn 512, bf16 weights and tokens, f32
output) for CUDA, here, for bench/bench_moe.py on the GPU: one bundle per
token count, listed in gpu-work/moe/bundles.json.

Usage: /usr/bin/python3 bench/prepare_moe.py [--tokens 1 4 8 64 4096] [--grad-tokens 8]
           [--options OPTS]

The shape is QWEN3_NEXT_MOE, the defaults of transformers'
Qwen3NextConfig(); bench_moe.py reads that config on the GPU machine and
refuses to time bundles of another shape.
"""

import argparse
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "gpu-work" / "moe"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, nargs="*",
                    default=[1, 4, 8, 64, 4096])
    ap.add_argument("--grad-tokens", type=int, nargs="*", default=[8],
                    help="token counts of the training step (--tang-grad "
                    "split: forward + backward), checked against autograd")
    ap.add_argument("--options", default="",
                    help="added --tang-lower-cuda options")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    os.environ["TANG_CACHE_DIR"] = str(WORK / "cache")
    sys.path.insert(0, str(ROOT / "python"))
    sys.path.insert(0, str(ROOT / "bench"))
    import harness
    import tang
    from tang.autodiff import training_program
    from tang.models import qwen3_next as qn
    cfg = qn.QWEN3_NEXT_MOE
    shape = {k: (v.name if k == "dtype" else v) for k, v in
             asdict(cfg).items()}
    listing = {"config": shape, "bundles": {}}
    for n in args.tokens:
        harness.list_bundle(tang, listing, f"t{n}", qn.moe_layer(cfg, n),
                            args.options, f"[prepare_moe] {n} tokens",
                            tokens=n)
    for n in args.grad_tokens:
        harness.list_bundle(tang, listing, f"grad-t{n}", training_program(
            qn.moe_layer(cfg, n)), args.options,
            f"[prepare_moe] training step, {n} tokens", grad_tokens=n)
    (WORK / "bundles.json").write_text(json.dumps(listing, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
