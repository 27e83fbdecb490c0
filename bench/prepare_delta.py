#!/usr/bin/python3
"""Compiles the gated delta rule at Qwen3-Next's linear-attention shape
(tang.models.qwen3_next.gated_delta_rule: 16 query/key heads, 32 value
heads of dim 128, bf16 q/k/v/beta, f32 decays, f32 output and final state)
for CUDA, here, for bench/bench_delta.py on the GPU: one bundle per token
count (batch 1), and one per batch of the one-token decode update (length
1 from a given state), listed in gpu-work/delta/bundles.json.

Usage: /usr/bin/python3 bench/prepare_delta.py [--tokens 4096 32768]
           [--decode-batches 1 16 64] [--grad-tokens 256] [--options OPTS]

--grad-tokens: the training step's bundle (`--tang-grad=split=1`:
@gated_delta_rule_fwd, which saves the residuals, and
@gated_delta_rule_bwd) for the gradient check against PyTorch autograd.
"""

import argparse
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "gpu-work" / "delta"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, nargs="*", default=[4096])
    ap.add_argument("--decode-batches", type=int, nargs="*",
                    default=[1, 16, 64],
                    help="batches of the decode update (one token from S0)")
    ap.add_argument("--grad-tokens", type=int, nargs="*", default=[256],
                    help="lengths of the training step (forward + backward)")
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
    cfg = qn.QWEN3_NEXT_DELTA
    shape = {k: (v.name if k == "dtype" else v) for k, v in
             asdict(cfg).items()}
    listing = {"config": shape, "bundles": {}}
    for n in args.tokens:
        harness.list_bundle(tang, listing, f"t{n}", qn.gated_delta_rule(
            cfg, 1, n), args.options, f"[prepare_delta] {n} tokens",
            tokens=n)
    for b in args.decode_batches:
        harness.list_bundle(tang, listing, f"decode-b{b}", qn.gated_delta_rule(
            cfg, b, 1, True), args.options,
            f"[prepare_delta] decode, batch {b}", decode_batch=b)
    for n in args.grad_tokens:
        harness.list_bundle(tang, listing, f"grad-t{n}", training_program(
            qn.gated_delta_rule(cfg, 1, n)), args.options,
            f"[prepare_delta] training step, {n} tokens", grad_tokens=n)
    (WORK / "bundles.json").write_text(json.dumps(listing, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
