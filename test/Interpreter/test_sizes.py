"""Symbolic extents in the reference interpreter, against NumPy: one
program run at several sizes (an index argument, a '?' dimension), a body
that computes with a size, and the size requirements the verifier leaves to
the run (a length past a cache's capacity, an extent that would be empty),
each refused before anything runs, naming the size and its value."""

import numpy as np
import pytest

from tangrun import run_program as run

CAP, D = 16, 8

# Decode attention's scores and weighted sum over the first %len rows of a
# cache of CAP rows: softmax(q . K[t]) @ V over t < len.
DECODE = f"""\
func.func @main(%q: tensor<{D}xf32>, %K: tensor<{CAP}x{D}xf32>,
                %V: tensor<{CAP}x{D}xf32>, %len: index)
    -> (tensor<?xf32>, tensor<{D}xf32>) {{
  %s = tang.comprehension (%t) reduce (%d) [%len, {D}] monoid(add) : tensor<?xf32> {{
    %a = tang.read %q[%d] : tensor<{D}xf32>
    %k = tang.read %K[%t, %d] : tensor<{CAP}x{D}xf32>
    %p = arith.mulf %a, %k : f32
    tang.yield %p : f32
  }}
  %m = tang.comprehension reduce (%t) [%len] monoid(max) : tensor<f32> {{
    %x = tang.read %s[%t] : tensor<?xf32>
    tang.yield %x : f32
  }}
  %o = tang.comprehension (%d) [{D}] : tensor<{D}xf32> {{
    %mx = tang.read %m[] : tensor<f32>
    %l = tang.comprehension reduce (%t) [%len] monoid(add) : f32 {{
      %x = tang.read %s[%t] : tensor<?xf32>
      %c = arith.subf %x, %mx : f32
      %e = math.exp %c : f32
      tang.yield %e : f32
    }}
    %acc = tang.comprehension reduce (%t) [%len] monoid(add) : f32 {{
      %x = tang.read %s[%t] : tensor<?xf32>
      %c = arith.subf %x, %mx : f32
      %e = math.exp %c : f32
      %v = tang.read %V[%t, %d] : tensor<{CAP}x{D}xf32>
      %w = arith.mulf %e, %v : f32
      tang.yield %w : f32
    }}
    %r = arith.divf %acc, %l : f32
    tang.yield %r : f32
  }}
  return %s, %o : tensor<?xf32>, tensor<{D}xf32>
}}
"""

# The mean of each row but the first of a batch of any size: a '?'
# dimension, a size computed from it (n - 1), a body dividing by a size.
ROW_MEANS = """\
func.func @main(%X: tensor<?x?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %X, %c0 : tensor<?x?xf32>
  %w = tensor.dim %X, %c1 : tensor<?x?xf32>
  %m = arith.subi %n, %c1 : index
  %y = tang.comprehension (%i) [%m] : tensor<?xf32> {
    %s = tang.comprehension reduce (%j) [%w] monoid(add) : f32 {
      %x = tang.read %X[%i + 1, %j] : tensor<?x?xf32>
      tang.yield %x : f32
    }
    %wi = arith.index_cast %w : index to i32
    %wf = arith.sitofp %wi : i32 to f32
    %r = arith.divf %s, %wf : f32
    tang.yield %r : f32
  }
  return %y : tensor<?xf32>
}
"""


def decode_inputs(seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, s).astype(np.float32)
            for s in [(D,), (CAP, D), (CAP, D)]]


@pytest.mark.parametrize("length", [1, 7, CAP])
def test_decode_at_three_lengths(tmp_path, length):
    q, K, V = decode_inputs(length)
    r, out = run(tmp_path, DECODE, q, K, V, sizes=[f"arg3={length}"])
    assert r.returncode == 0, r.stderr
    s = np.load(out / "output_0.npy")
    o = np.load(out / "output_1.npy")
    qd, Kd, Vd = (a.astype(np.float64) for a in (q, K, V))
    want_s = Kd[:length] @ qd
    p = np.exp(want_s - want_s.max())
    want_o = (p @ Vd[:length]) / p.sum()
    assert s.shape == (length,)
    np.testing.assert_allclose(s, want_s, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(o, want_o, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(2, 3), (5, 1), (9, 17)])
def test_row_means_any_batch(tmp_path, shape):
    x = np.random.default_rng(sum(shape)).uniform(-1, 1, shape)
    x = x.astype(np.float32)
    r, out = run(tmp_path, ROW_MEANS, x)
    assert r.returncode == 0, r.stderr
    y = np.load(out / "output_0.npy")
    assert y.shape == (shape[0] - 1,)
    np.testing.assert_allclose(y, x[1:].astype(np.float64).mean(axis=1),
                               rtol=1e-12, atol=1e-12)


def test_length_past_capacity_is_refused(tmp_path):
    q, K, V = decode_inputs(0)
    r, out = run(tmp_path, DECODE, q, K, V, sizes=[f"arg3={CAP + 1}"])
    assert r.returncode != 0
    assert (f"stays below dimension 0 ({CAP}) only if %arg3 <= {CAP}, "
            f"but %arg3 = {CAP + 1}; nothing ran") in r.stderr, r.stderr
    assert not list(out.iterdir())


def test_empty_extent_is_refused(tmp_path):
    # One row: the extent n - 1 would be 0.
    r, out = run(tmp_path, ROW_MEANS, np.ones((1, 4), np.float32))
    assert r.returncode != 0
    assert ("the extent of index #0 (dim 0 of %arg0 - 1) is positive only "
            "if 2 <= dim 0 of %arg0, but dim 0 of %arg0 = 1") in r.stderr
    assert not list(out.iterdir())


def test_empty_length_is_refused(tmp_path):
    # A size may be 0 (a position); as an extent it must not be.
    q, K, V = decode_inputs(0)
    r, out = run(tmp_path, DECODE, q, K, V, sizes=["arg3=0"])
    assert r.returncode != 0
    assert ("the extent of index #0 (%arg3) is positive only if 1 <= %arg3, "
            "but %arg3 = 0; nothing ran") in r.stderr, r.stderr
    assert not list(out.iterdir())


def test_missing_size_is_named(tmp_path):
    q, K, V = decode_inputs(0)
    r, _ = run(tmp_path, DECODE, q, K, V)
    assert r.returncode != 0
    assert ("argument #3 is a size (index): give its value with --size "
            "arg3=N") in r.stderr


@pytest.mark.parametrize("spec", ["arg3=-1", "arg0=4", "arg7=2", "arg3.0=2",
                                  "len=4"])
def test_bad_size_option(tmp_path, spec):
    q, K, V = decode_inputs(0)
    r, _ = run(tmp_path, DECODE, q, K, V, sizes=[spec])
    assert r.returncode != 0
    assert f"--size {spec}: expected argK=N" in r.stderr


def test_static_dimension_still_checked(tmp_path):
    q, K, V = decode_inputs(0)
    r, _ = run(tmp_path, DECODE, q, K[:, :4].copy(), V, sizes=["arg3=2"])
    assert r.returncode != 0
    assert "has shape (16, 4) but the argument is 'tensor<16x8xf32>'" in r.stderr
