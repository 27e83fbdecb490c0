#!/usr/bin/python3
"""Greedy decoding with a Qwen3-8B-shaped model built with the Python front
end (tang.models.qwen3: 36 layers, d 4096, 32 query and 8 key/value heads,
SwiGLU 12288, vocabulary 151936), random bf16 weights, on a CUDA GPU: one
compiled bundle runs every decode step (the position is a size), writing
the KV cache in place. Feeds a prompt of token ids, decodes --steps tokens
and prints them with the tokens per second.

    python3 examples/python/qwen3_decode.py [--prompt 151643,785,6722]
        [--steps 64] [--layers 36]

The bundle is compiled here when tang-opt is on the machine (about 45 s,
cached under TANG_CACHE_DIR), or taken from that cache on a GPU machine
without the compiler (bench/prepare_qwen3.py fills gpu-work/qwen3/cache).
Every step replays one CUDA graph (tang.cuda.Bundle.capture, captured at
the last position), the position written into the bundle's sizes buffer
before the launch; the bench suite (bench/qwen3_decode.py) measures the
same step at 5.2 ms (191 tok/s) at context 32 on the H200.
"""

import argparse
import dataclasses
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import tang  # noqa: E402
from tang.models import qwen3  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompt", default="151643,785,6722,315,9625,374",
                    help="comma-separated token ids")
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--layers", type=int, default=qwen3.QWEN3_8B.layers,
                    help="fewer layers compile and run faster")
    ap.add_argument("--capacity", type=int, default=4224,
                    help="KV cache positions")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("qwen3_decode: needs PyTorch with CUDA", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("qwen3_decode: no CUDA GPU on this machine", file=sys.stderr)
        return 2
    cfg = dataclasses.replace(qwen3.QWEN3_8B, layers=args.layers)
    prompt = [int(t) for t in args.prompt.split(",") if t.strip()]
    if not prompt:
        print("qwen3_decode: the prompt has no token ids", file=sys.stderr)
        return 2
    try:
        qwen3.check_tokens(cfg, prompt)
    except ValueError as e:
        print(f"qwen3_decode: {e}", file=sys.stderr)
        return 2
    if len(prompt) + args.steps > args.capacity:
        print(f"qwen3_decode: {len(prompt)} prompt tokens and {args.steps} "
              f"steps do not fit a cache of {args.capacity} positions",
              file=sys.stderr)
        return 2

    t0 = time.time()
    step = qwen3.decode_step(cfg, 1, args.capacity)
    compiled = tang.compile(step, target="cuda")
    from tang import cuda as tang_cuda
    bundle = tang_cuda.Bundle(compiled.directory / "bundle")
    print(f"[qwen3] {cfg.layers} layers compiled (or cached) in "
          f"{time.time() - t0:.1f} s", flush=True)

    # Random bf16 weights in the layout the model takes (weight_shapes).
    g = torch.Generator(device="cuda").manual_seed(0)
    weights = []
    for name, shape in qwen3.weight_shapes(cfg).items():
        scale, base = (0.1, 1.0) if "norm" in name else (0.02, 0.0)
        weights.append((base + scale * torch.randn(
            shape, generator=g, device="cuda")).to(torch.bfloat16))
    kc = torch.zeros(qwen3.cache_shape(cfg, 1, args.capacity),
                     dtype=torch.bfloat16, device="cuda")
    vc = torch.zeros_like(kc)
    token = torch.zeros(1, dtype=torch.int32, device="cuda")
    nxt = torch.zeros(1, dtype=torch.int32, device="cuda")
    pos_arg = 1 + len(weights) + 2   # tokens, weights, kcache, vcache, pos

    # One CUDA graph for every step: captured at the last position the
    # run reaches (the temporaries' largest sizes); a replay rewrites the
    # position in the sizes buffer, then launches the whole step at once.
    top = len(prompt) + args.steps - 1
    graph = bundle.capture("decode_step", token, *weights, kc, vc,
                           outputs=[nxt, kc, vc], sizes={pos_arg: top})

    for pos, t in enumerate(prompt):   # the prompt, a position at a time
        token.fill_(t)
        graph.replay(sizes={pos_arg: pos})   # the ids checked (read back)
    out = []
    torch.cuda.synchronize()
    t1 = time.time()
    for k in range(args.steps):
        out.append(nxt.clone())
        token.copy_(nxt)
        # The previous step's argmax: in the vocabulary, nothing to check.
        graph.replay(sizes={pos_arg: len(prompt) + k}, check_indices=False)
    torch.cuda.synchronize()
    seconds = time.time() - t1
    tokens = [int(t) for t in torch.cat(out).tolist()]
    print(f"[qwen3] prompt {prompt}")
    print(f"[qwen3] {len(tokens)} greedy tokens: {tokens}")
    print(f"[qwen3] {len(tokens) / seconds:.1f} tok/s "
          f"({1e3 * seconds / len(tokens):.2f} ms per step, one CUDA graph "
          f"replay each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
