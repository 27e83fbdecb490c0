"""Padded reads (`tang.read ... fill(v)`) in the reference interpreter,
against NumPy: a max-pool with -inf padding, a 2-D "same" convolution with
zero padding on both sides, integer and non-zero fills. The causal conv1d
example (test/Examples) covers the usual zero-padded convolution."""

import numpy as np

from tangrun import run_program


def run(tmp_path, text, *arrays):
    r, out = run_program(tmp_path, text, *arrays)
    assert r.returncode == 0, r.stderr
    return [np.load(out / f"output_{i}.npy")
            for i in range(len(list(out.glob("output_*.npy"))))]


MAXPOOL = """\
func.func @main(%X: tensor<3x20xf32>) -> tensor<3x20xf32> {
  %y = tang.comprehension (%r, %i) reduce (%k) [3, 20, 5] monoid(max) : tensor<3x20xf32> {
    %x = tang.read %X[%r, %i + %k - 2] fill(0xFF800000 : f32) : tensor<3x20xf32>
    tang.yield %x : f32
  }
  return %y : tensor<3x20xf32>
}
"""


def test_maxpool_neg_inf_padding(tmp_path):
    rng = np.random.default_rng(11)
    # Negative values: a zero fill would win the max at the edges.
    X = rng.uniform(-3, -1, (3, 20)).astype(np.float32)
    (got,) = run(tmp_path, MAXPOOL, X)
    xp = np.pad(X.astype(np.float64), ((0, 0), (2, 2)), constant_values=-np.inf)
    want = np.max([xp[:, k:k + 20] for k in range(5)], axis=0)
    np.testing.assert_array_equal(got, want)


SAME_CONV = """\
func.func @main(%X: tensor<6x7xf32>, %F: tensor<3x3xf32>) -> tensor<6x7xf32> {
  %y = tang.comprehension (%i, %j) reduce (%r, %s) [6, 7, 3, 3] monoid(add) : tensor<6x7xf32> {
    %x = tang.read %X[%i + %r - 1, %j + %s - 1] fill(0.0) : tensor<6x7xf32>
    %f = tang.read %F[%r, %s] : tensor<3x3xf32>
    %p = arith.mulf %x, %f : f32
    tang.yield %p : f32
  }
  return %y : tensor<6x7xf32>
}
"""


def test_same_conv2d_zero_padding(tmp_path):
    rng = np.random.default_rng(12)
    X = rng.uniform(-1, 1, (6, 7)).astype(np.float32)
    F = rng.uniform(-1, 1, (3, 3)).astype(np.float32)
    (got,) = run(tmp_path, SAME_CONV, X, F)
    xp = np.pad(X.astype(np.float64), 1)
    want = sum(F[r, s] * xp[r:r + 6, s:s + 7] for r in range(3) for s in range(3))
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


FILLS = """\
func.func @main(%X: tensor<8xf32>, %I: tensor<8xi32>) -> (tensor<8xf32>, tensor<8xi32>) {
  %a = tang.comprehension (%i) [8] : tensor<8xf32> {
    %x = tang.read %X[%i + 3] fill(2.5) : tensor<8xf32>
    tang.yield %x : f32
  }
  %b = tang.comprehension (%i) [8] : tensor<8xi32> {
    %x = tang.read %I[%i - 5] fill(-7) : tensor<8xi32>
    tang.yield %x : i32
  }
  return %a, %b : tensor<8xf32>, tensor<8xi32>
}
"""


def test_fill_values(tmp_path):
    X = np.arange(1, 9, dtype=np.float32)
    I = np.arange(10, 18, dtype=np.int32)
    a, b = run(tmp_path, FILLS, X, I)
    np.testing.assert_array_equal(a, np.r_[X[3:], [2.5] * 3])
    np.testing.assert_array_equal(b, np.r_[[-7] * 5, I[:3]])
