#!/usr/bin/python3
"""Compiles Qwen3-Next's gated attention layer
(tang.models.qwen3_next.gated_attention: hidden 2048, 16 query heads and
2 key/value heads of dim 256, RoPE on 64 dims of each head, the sigmoid
output gate, bf16 weights and tokens, f32 output) for CUDA, here, for
bench/bench_gated_attention.py on the GPU: one bundle per token count
(one causal sequence), listed in gpu-work/gated_attention/bundles.json.

Usage: /usr/bin/python3 bench/prepare_gated_attention.py
           [--tokens 4096 16384] [--options OPTS]
"""

import argparse
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "gpu-work" / "gated_attention"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, nargs="*", default=[4096])
    ap.add_argument("--options", default="",
                    help="added --tang-lower-cuda options")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    os.environ["TANG_CACHE_DIR"] = str(WORK / "cache")
    sys.path.insert(0, str(ROOT / "python"))
    sys.path.insert(0, str(ROOT / "bench"))
    import harness
    import tang
    from tang.models import qwen3_next as qn
    cfg = qn.QWEN3_NEXT_ATTENTION
    shape = {k: (v.name if k == "dtype" else v) for k, v in
             asdict(cfg).items()}
    listing = {"config": shape, "bundles": {}}
    for n in args.tokens:
        harness.list_bundle(tang, listing, f"t{n}", qn.gated_attention(cfg, n),
                            args.options,
                            f"[prepare_gated_attention] {n} tokens", tokens=n)
    (WORK / "bundles.json").write_text(json.dumps(listing, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
