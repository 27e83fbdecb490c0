#!/usr/bin/python3
"""The main job in Python: a pre-norm transformer block written with
tang.nn, compiled for the CPU (the C backend), run on random inputs and
checked against the float64 reference interpreter, then its gradient
(tang.vjp: the derived backward) against the interpreter's.

    /usr/bin/python3 examples/python/block.py      (scripts/setup.sh runs it)
"""

import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] /
                       "python"))
import tang  # noqa: E402
from tang import f32, nn  # noqa: E402

T = tang.Sym("T")   # the sequence length: one compilation serves every T


@tang.function
def block(x: f32[T, 64], wn1: f32[64], wq: f32[64, 64], wk: f32[64, 64],
          wv: f32[64, 64], wo: f32[64, 64], wn2: f32[64], w1: f32[64, 128],
          w3: f32[64, 128], w2: f32[128, 64]):
    return nn.transformer_block(x, wn1, wq, wk, wv, wo, wn2, w1, w3, w2,
                                heads=4)


def main():
    rng = np.random.default_rng(0)
    shapes = [(32, 64), (64,), (64, 64), (64, 64), (64, 64), (64, 64),
              (64,), (64, 128), (64, 128), (128, 64)]
    xs = [(rng.standard_normal(s) / (np.sqrt(s[0]) if len(s) == 2 and k
                                     else 1)).astype(np.float32)
          for k, s in enumerate(shapes)]
    print(f"[tang] the block as tang IR: {block.mlir().count(chr(10))} "
          "lines, located at tang/nn.py's callers")
    t0 = time.time()
    run = tang.compile(block)
    print(f"[tang] compiled for the CPU (C backend) in "
          f"{time.time() - t0:.1f} s")
    y = run(*xs)
    ref = tang.compile(block, target="interpreter")(*xs)
    err = float(np.abs(y - ref).max() / np.abs(ref).max())
    print(f"[tang] y: {y.shape}, max |y - interpreter| / max |y| = "
          f"{err:.2e}")
    step = tang.vjp(block)
    out, saved = step.forward(*xs)
    grads = step.backward(saved, np.ones_like(out))
    ref_step = tang.vjp(block, target="interpreter")
    _, ref_saved = ref_step.forward(*xs)
    ref_grads = ref_step.backward(ref_saved, np.ones_like(out))
    gerr = max(float(np.abs(g - r).max() / max(np.abs(r).max(), 1e-30))
               for g, r in zip(grads, ref_grads))
    print(f"[tang] gradients of {len(grads)} arguments (derived backward), "
          f"worst relative difference to the interpreter's: {gerr:.2e}")
    ok = err < 1e-4 and gerr < 1e-3
    print("[tang] main job (Python):", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
