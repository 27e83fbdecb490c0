"""Nested comprehensions reused across points: one that reads only enclosing
indices is evaluated once per index tuple, one that also reads a scalar of
the enclosing body (a variance after its mean) is reused while that scalar
and the indices are unchanged. The reuse must never return a stale value:
here the scalar changes per row (LayerNorm's mean) and per point (a value
read at the point itself), and both are checked against NumPy float64 on
every element."""

import numpy as np

from tangrun import run_program

PROGRAM = """\
func.func @main(%X: tensor<5x33xf64>, %W: tensor<33xf64>) -> (tensor<5x33xf64>, tensor<5x33xf64>) {
  %n = arith.constant 33.0 : f64
  %y = tang.comprehension (%i, %j) [5, 33] : tensor<5x33xf64> {
    %s = tang.comprehension reduce (%k) [33] monoid(add) : f64 {
      %a = tang.read %X[%i, %k] : tensor<5x33xf64>
      tang.yield %a : f64
    }
    %mean = arith.divf %s, %n : f64
    %v = tang.comprehension reduce (%k) [33] monoid(add) : f64 {
      %a = tang.read %X[%i, %k] : tensor<5x33xf64>
      %d = arith.subf %a, %mean : f64
      %d2 = arith.mulf %d, %d : f64
      tang.yield %d2 : f64
    }
    %x = tang.read %X[%i, %j] : tensor<5x33xf64>
    %c = arith.subf %x, %mean : f64
    %o = arith.divf %c, %v : f64
    tang.yield %o : f64
  }
  %z = tang.comprehension (%i, %j) [5, 33] : tensor<5x33xf64> {
    %x = tang.read %X[%i, %j] : tensor<5x33xf64>
    %t = tang.comprehension reduce (%k) [33] monoid(add) : f64 {
      %w = tang.read %W[%k] : tensor<33xf64>
      %p = arith.mulf %w, %x : f64
      tang.yield %p : f64
    }
    tang.yield %t : f64
  }
  return %y, %z : tensor<5x33xf64>, tensor<5x33xf64>
}
"""


def test_nested_reuse_follows_its_scalars(tmp_path):
    rng = np.random.default_rng(7)
    X = rng.uniform(-2, 2, (5, 33))
    X[3] = X[1]  # Two equal rows: the same mean, different row index.
    W = rng.uniform(0.5, 1.5, 33)
    r, out = run_program(tmp_path, PROGRAM, X, W)
    assert r.returncode == 0, r.stderr
    y = np.load(out / "output_0.npy")
    z = np.load(out / "output_1.npy")
    mean = X.mean(axis=1, keepdims=True)
    var = ((X - mean) ** 2).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(y, (X - mean) / var, rtol=1e-13, atol=0)
    np.testing.assert_allclose(z, X * W.sum(), rtol=1e-13, atol=0)
