"""tang.gather in the reference interpreter, against NumPy: an embedding
lookup followed by RMSNorm, a cross-entropy loss with integer targets, and
the three out-of-range policies (trap fails naming the coordinate and
writes nothing; clamp; zero)."""

import numpy as np
import pytest

from tangrun import run_program as run

V, D, B, T = 50, 16, 2, 6

EMBED_RMSNORM = f"""\
func.func @main(%E: tensor<{V}x{D}xf32>, %tok: tensor<{B}x{T}xi32>, %w: tensor<{D}xf32>)
    -> tensor<{B}x{T}x{D}xf32> {{
  %x = tang.comprehension (%b, %t, %d) [{B}, {T}, {D}] : tensor<{B}x{T}x{D}xf32> {{
    %k = tang.read %tok[%b, %t] : tensor<{B}x{T}xi32>
    %row = arith.index_cast %k : i32 to index
    %e = tang.gather %E[symbol(%row), %d] : tensor<{V}x{D}xf32>
    tang.yield %e : f32
  }}
  %ss = tang.comprehension (%b, %t) reduce (%d) [{B}, {T}, {D}] monoid(add) : tensor<{B}x{T}xf32> {{
    %v = tang.read %x[%b, %t, %d] : tensor<{B}x{T}x{D}xf32>
    %s = arith.mulf %v, %v : f32
    tang.yield %s : f32
  }}
  %y = tang.comprehension (%b, %t, %d) [{B}, {T}, {D}] : tensor<{B}x{T}x{D}xf32> {{
    %v = tang.read %x[%b, %t, %d] : tensor<{B}x{T}x{D}xf32>
    %s = tang.read %ss[%b, %t] : tensor<{B}x{T}xf32>
    %g = tang.read %w[%d] : tensor<{D}xf32>
    %n = arith.constant {float(D)} : f32
    %eps = arith.constant 1.0e-6 : f32
    %m = arith.divf %s, %n : f32
    %me = arith.addf %m, %eps : f32
    %r = math.rsqrt %me : f32
    %vr = arith.mulf %v, %r : f32
    %o = arith.mulf %vr, %g : f32
    tang.yield %o : f32
  }}
  return %y : tensor<{B}x{T}x{D}xf32>
}}
"""

N, C = 8, 10

CROSS_ENTROPY = f"""\
func.func @main(%logits: tensor<{N}x{C}xf32>, %target: tensor<{N}xi32>) -> tensor<f32> {{
  %m = tang.comprehension (%n) reduce (%c) [{N}, {C}] monoid(max) : tensor<{N}xf32> {{
    %v = tang.read %logits[%n, %c] : tensor<{N}x{C}xf32>
    tang.yield %v : f32
  }}
  %l = tang.comprehension (%n) reduce (%c) [{N}, {C}] monoid(add) : tensor<{N}xf32> {{
    %v = tang.read %logits[%n, %c] : tensor<{N}x{C}xf32>
    %mx = tang.read %m[%n] : tensor<{N}xf32>
    %d = arith.subf %v, %mx : f32
    %e = math.exp %d : f32
    tang.yield %e : f32
  }}
  %loss = tang.comprehension reduce (%n) [{N}] monoid(add) : tensor<f32> {{
    %t = tang.read %target[%n] : tensor<{N}xi32>
    %col = arith.index_cast %t : i32 to index
    %z = tang.gather %logits[%n, symbol(%col)] : tensor<{N}x{C}xf32>
    %mx = tang.read %m[%n] : tensor<{N}xf32>
    %s = tang.read %l[%n] : tensor<{N}xf32>
    %ls = math.log %s : f32
    %lse = arith.addf %mx, %ls : f32
    %nll = arith.subf %lse, %z : f32
    %k = arith.constant {1.0 / N} : f32
    %r = arith.mulf %nll, %k : f32
    tang.yield %r : f32
  }}
  return %loss : tensor<f32>
}}
"""


def policy_program(policy):
    return f"""\
func.func @main(%E: tensor<4x3xf32>, %idx: tensor<5xi32>) -> tensor<5x3xf32> {{
  %y = tang.comprehension (%i, %d) [5, 3] : tensor<5x3xf32> {{
    %k = tang.read %idx[%i] : tensor<5xi32>
    %row = arith.index_cast %k : i32 to index
    %e = tang.gather %E[symbol(%row), %d] {policy} : tensor<4x3xf32>
    tang.yield %e : f32
  }}
  return %y : tensor<5x3xf32>
}}
"""


def check_close(got, want, rtol):
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def test_embedding_rmsnorm(tmp_path):
    rng = np.random.default_rng(3)
    E = rng.uniform(-1, 1, (V, D)).astype(np.float32)
    tok = rng.integers(0, V, (B, T)).astype(np.int32)
    w = rng.uniform(0.5, 1.5, D).astype(np.float32)
    r, out = run(tmp_path, EMBED_RMSNORM, E, tok, w)
    assert r.returncode == 0, r.stderr
    x = E.astype(np.float64)[tok]
    want = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w
    # The interpreter computes in float64; the f32 inputs are exact there.
    check_close(np.load(out / "output_0.npy"), want, 1e-9)


def test_cross_entropy_integer_targets(tmp_path):
    rng = np.random.default_rng(4)
    logits = rng.normal(0, 3, (N, C)).astype(np.float32)
    target = rng.integers(0, C, N).astype(np.int32)
    r, out = run(tmp_path, CROSS_ENTROPY, logits, target)
    assert r.returncode == 0, r.stderr
    z = logits.astype(np.float64)
    lse = z.max(1) + np.log(np.exp(z - z.max(1, keepdims=True)).sum(1))
    want = (lse - z[np.arange(N), target]).mean()
    check_close(np.load(out / "output_0.npy"), want, 1e-9)


def test_cross_entropy_target_out_of_range_traps(tmp_path):
    """A target past the classes is an error naming the coordinate and its
    value (users' one-hot sums silently returned the log-sum-exp)."""
    rng = np.random.default_rng(5)
    logits = rng.normal(0, 1, (N, C)).astype(np.float32)
    target = rng.integers(0, C, N).astype(np.int32)
    target[3] = C + 2
    r, out = run(tmp_path, CROSS_ENTROPY, logits, target)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"gather coordinate #1 is {C + 2}, outside [0, {C})" in r.stderr
    assert "tang.gather" in r.stderr or "gather" in r.stderr
    assert not (out / "output_0.npy").exists()


@pytest.mark.parametrize("policy", ["clamp", "zero"])
def test_policies(tmp_path, policy):
    rng = np.random.default_rng(6)
    E = rng.uniform(1, 2, (4, 3)).astype(np.float32)
    idx = np.array([0, 3, -1, 4, 2], np.int32)
    r, out = run(tmp_path, policy_program(policy), E, idx)
    assert r.returncode == 0, r.stderr
    got = np.load(out / "output_0.npy")
    if policy == "clamp":
        want = E.astype(np.float64)[np.clip(idx, 0, 3)]
    else:
        inside = (idx >= 0) & (idx < 4)
        want = np.where(inside[:, None], E.astype(np.float64)[np.clip(idx, 0, 3)], 0.0)
    np.testing.assert_array_equal(got, want)


def test_trap_is_the_default(tmp_path):
    E = np.ones((4, 3), np.float32)
    idx = np.array([0, 1, -1, 2, 3], np.int32)
    r, out = run(tmp_path, policy_program(""), E, idx)
    assert r.returncode == 1
    assert "gather coordinate #0 is -1, outside [0, 4)" in r.stderr
    assert "prog.mlir:5" in r.stderr  # the gather's line
    assert not (out / "output_0.npy").exists()
