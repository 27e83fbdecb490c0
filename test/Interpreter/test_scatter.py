"""tang.scatter in the reference interpreter, against NumPy: a scatter-add
with colliding indices (the gradient of an embedding lookup), an insert at
a runtime position (a KV cache), the drop and trap policies, a max
combine, and a monoid that is not commutative (collisions combine in
row-major order)."""

import numpy as np
import pytest

from tangrun import run_program as run

N, V, D = 12, 5, 3


def scatter_add(monoid="monoid(add)", policy=""):
    return f"""\
func.func @main(%tok: tensor<{N}xi32>, %dY: tensor<{N}x{D}xf32>, %base: tensor<{V}x{D}xf32>) -> tensor<{V}x{D}xf32> {{
  %dE = tang.scatter (%i, %d) [{N}, {D}] into %base {monoid} : tensor<{V}x{D}xf32> {{
    %t = tang.read %tok[%i] : tensor<{N}xi32>
    %row = arith.index_cast %t : i32 to index
    %g = tang.read %dY[%i, %d] : tensor<{N}x{D}xf32>
    tang.put %g at [symbol(%row), %d] {policy} : f32
  }}
  return %dE : tensor<{V}x{D}xf32>
}}
"""


def inputs(seed, lo=0, hi=V):
    rng = np.random.default_rng(seed)
    tok = rng.integers(lo, hi, N).astype(np.int32)
    dY = rng.uniform(-1, 1, (N, D)).astype(np.float32)
    base = rng.uniform(-1, 1, (V, D)).astype(np.float32)
    return tok, dY, base


def test_scatter_add_sums_collisions(tmp_path):
    tok, dY, base = inputs(1)
    assert len(set(tok)) < N  # collisions
    r, out = run(tmp_path, scatter_add(), tok, dY, base)
    assert r.returncode == 0, r.stderr
    want = base.astype(np.float64)
    np.add.at(want, tok, dY.astype(np.float64))
    got = np.load(out / "output_0.npy")
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_scatter_max(tmp_path):
    tok, dY, base = inputs(2)
    r, out = run(tmp_path, scatter_add("monoid(max)"), tok, dY, base)
    assert r.returncode == 0, r.stderr
    want = base.astype(np.float64)
    np.maximum.at(want, tok, dY.astype(np.float64))
    np.testing.assert_array_equal(np.load(out / "output_0.npy"), want)


def test_insert_last_write_wins(tmp_path):
    tok, dY, base = inputs(3)
    r, out = run(tmp_path, scatter_add(""), tok, dY, base)
    assert r.returncode == 0, r.stderr
    want = base.astype(np.float64)
    for i in range(N):  # row-major order: the later point wins
        want[tok[i]] = dY[i]
    np.testing.assert_array_equal(np.load(out / "output_0.npy"), want)


def test_drop_skips_out_of_range(tmp_path):
    tok, dY, base = inputs(4, lo=-2, hi=V + 2)
    assert ((tok < 0) | (tok >= V)).any()
    r, out = run(tmp_path, scatter_add(policy="drop"), tok, dY, base)
    assert r.returncode == 0, r.stderr
    want = base.astype(np.float64)
    keep = (tok >= 0) & (tok < V)
    np.add.at(want, tok[keep], dY[keep].astype(np.float64))
    np.testing.assert_allclose(np.load(out / "output_0.npy"), want,
                               rtol=1e-12, atol=1e-12)


def test_trap_names_the_coordinate_and_writes_nothing(tmp_path):
    tok, dY, base = inputs(5)
    tok[7] = V + 3
    r, out = run(tmp_path, scatter_add(), tok, dY, base)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"scatter coordinate #0 is {V + 3}, outside [0, {V})" in r.stderr
    assert "prog.mlir:6" in r.stderr  # the put's line
    assert not (out / "output_0.npy").exists()


# "First non-zero": associative, identity 0, not commutative. Collisions
# combine in row-major order after the base's element, so with a zero base
# the first point in row-major order wins.
FIRST_NONZERO = """\
tang.monoid @first_nonzero : [f32] identity [0.0 : f32] {
^bb0(%a: f32, %b: f32):
  %z = arith.constant 0.0 : f32
  %is0 = arith.cmpf oeq, %a, %z : f32
  %r = arith.select %is0, %b, %a : f32
  tang.yield %r : f32
}
"""


def test_non_commutative_monoid_in_row_major_order(tmp_path):
    tok, dY, _ = inputs(6)
    base = np.zeros((V, D), np.float32)
    text = FIRST_NONZERO + scatter_add("monoid(@first_nonzero)")
    r, out = run(tmp_path, text, tok, dY, base)
    assert r.returncode == 0, r.stderr
    want = np.zeros((V, D))
    for i in reversed(range(N)):  # the first point wins
        want[tok[i]] = dY[i]
    np.testing.assert_array_equal(np.load(out / "output_0.npy"), want)


H, S, E = 2, 16, 4

KV_INSERT = f"""\
func.func @main(%K: tensor<{H}x{S}x{E}xf32>, %k: tensor<{H}x{E}xf32>, %pos: tensor<i32>) -> tensor<{H}x{S}x{E}xf32> {{
  %K1 = tang.scatter (%h, %e) [{H}, {E}] into %K : tensor<{H}x{S}x{E}xf32> {{
    %p = tang.read %pos[] : tensor<i32>
    %row = arith.index_cast %p : i32 to index
    %v = tang.read %k[%h, %e] : tensor<{H}x{E}xf32>
    tang.put %v at [%h, symbol(%row), %e] : f32
  }}
  return %K1 : tensor<{H}x{S}x{E}xf32>
}}
"""


@pytest.mark.parametrize("pos", [0, 5, S - 1])
def test_kv_cache_insert(tmp_path, pos):
    rng = np.random.default_rng(7 + pos)
    K = rng.uniform(-1, 1, (H, S, E)).astype(np.float32)
    k = rng.uniform(-1, 1, (H, E)).astype(np.float32)
    r, out = run(tmp_path, KV_INSERT, K, k, np.array(pos, np.int32))
    assert r.returncode == 0, r.stderr
    want = K.copy()
    want[:, pos, :] = k
    np.testing.assert_array_equal(np.load(out / "output_0.npy"), want)


def test_kv_cache_insert_past_capacity_traps(tmp_path):
    K = np.ones((H, S, E), np.float32)
    k = np.ones((H, E), np.float32)
    r, out = run(tmp_path, KV_INSERT, K, k, np.array(S, np.int32))
    assert r.returncode == 1
    assert f"scatter coordinate #1 is {S}, outside [0, {S})" in r.stderr
    assert not (out / "output_0.npy").exists()
