#!/usr/bin/python3
"""Compiles decode attention at the Qwen3-8B shapes (the model's own
attention, tang.models.qwen3._attend: 32 query heads over 8 key/value heads
of dimension 128, bf16 caches, the context length a size) for CUDA, here,
for bench/bench_decode.py on the GPU: one bundle per batch size, listed in
gpu-work/decode/bundles.json.

Usage: /usr/bin/python3 bench/prepare_decode.py [--batches 1 4 16]
           [--varlen-batches 4 16] [--capacity 8320] [--tag NAME]
           [--options OPTS]

Also one bundle per --varlen-batches size of decode attention over
sequences of different lengths (tang.nn.decode_attention, the lengths an
i32 tensor, the caches' whole capacity the extent).

--tag NAME lists the bundles under NAME (default "tang"), so a second
compiler build (or other --tang-lower-cuda options) can be timed beside the
first: bench_decode.py times every tag.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "gpu-work" / "decode"


def program(cfg, batch, capacity):
    """(q [B, H, Dh] f32, kcache, vcache [B, Hk, C, Dh] bf16, pos) ->
    o [B, H * Dh] f32: each query attends over cache positions 0..pos."""
    sys.path.insert(0, str(ROOT / "python"))
    from tang import lang as t
    from tang.lang import f32
    from tang.models import qwen3

    def decode_attention(q, kcache, vcache, pos):
        o = qwen3._attend(
            cfg, q, lambda b, g, j, e: kcache[b, g, j, e].astype(f32),
            lambda b, g, j, e: vcache[b, g, j, e].astype(f32), pos + 1)
        # A function returns tensors: the [B, H * Dh] view, as one.
        return t.compute(o.shape, lambda r, c: o[r, c])
    cache = cfg.dtype[(batch, cfg.kv_heads, capacity, cfg.head_dim)]
    return t.Function(decode_attention, name="decode_attention",
                      arg_types=[f32[(batch, cfg.heads, cfg.head_dim)],
                                 cache, cache, t.size])


def varlen_program(cfg, batch, capacity):
    """(q [B, H, Dh] f32, kcache, vcache [B, Hk, C, Dh] bf16, lengths [B]
    i32) -> o [B, H, Dh] f32: sequence b attends over its cache positions
    j < lengths[b] (tang.nn.decode_attention: continuous batching)."""
    sys.path.insert(0, str(ROOT / "python"))
    from tang import lang as t
    from tang import nn
    from tang.lang import f32, i32

    def varlen_decode_attention(q, kcache, vcache, lengths):
        return nn.decode_attention(q, kcache, vcache, lengths)
    cache = cfg.dtype[(batch, cfg.kv_heads, capacity, cfg.head_dim)]
    return t.Function(varlen_decode_attention, name="varlen_decode_attention",
                      arg_types=[f32[(batch, cfg.heads, cfg.head_dim)],
                                 cache, cache, i32[(batch,)]])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, nargs="*", default=[1, 4, 16])
    ap.add_argument("--capacity", type=int, default=8320,
                    help="cache positions (default 8320: contexts to 8192)")
    ap.add_argument("--tag", default="tang")
    ap.add_argument("--options", default="",
                    help="added --tang-lower-cuda options")
    ap.add_argument("--varlen-batches", type=int, nargs="*", default=[4, 16],
                    help="batches of the sequences-of-different-lengths "
                    "program (tang.nn.decode_attention; none: [])")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    os.environ["TANG_CACHE_DIR"] = str(WORK / "cache" / args.tag)
    sys.path.insert(0, str(ROOT / "python"))
    import tang
    from tang.models import qwen3
    cfg = qwen3.QWEN3_8B
    path = WORK / "bundles.json"
    listing = json.loads(path.read_text()) if path.exists() else {}
    if listing.get("capacity") != args.capacity:
        listing = {"capacity": args.capacity, "bundles": {}}
    for b in args.batches:
        t0 = time.time()
        compiled = tang.compile(program(cfg, b, args.capacity),
                                target="cuda", options=args.options)
        listing["bundles"][f"{args.tag}-b{b}"] = {
            "tag": args.tag, "batch": b, "options": args.options,
            "dir": str(compiled.directory.relative_to(ROOT))}
        print(f"[prepare_decode] {args.tag} batch {b}: "
              f"{time.time() - t0:.1f} s", flush=True)
    for b in args.varlen_batches:
        t0 = time.time()
        compiled = tang.compile(varlen_program(cfg, b, args.capacity),
                                target="cuda", options=args.options)
        listing["bundles"][f"{args.tag}-varlen-b{b}"] = {
            "tag": args.tag, "batch": b, "options": args.options,
            "varlen": True,
            "dir": str(compiled.directory.relative_to(ROOT))}
        print(f"[prepare_decode] {args.tag} varlen batch {b}: "
              f"{time.time() - t0:.1f} s", flush=True)
    path.write_text(json.dumps(listing, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
