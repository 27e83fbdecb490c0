"""The builtin monoids as tang-run evaluates them: the IR that defines them
(TangMonoids.cpp, also what the kernels run) against NumPy on the cases
where definitions drift: NaN and ties under argmax/argmin and max/min,
masked scores under softmax, bool max/min."""

import os
import pathlib
import subprocess

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))

ARG_PROGRAM = """\
func.func @main(%X: tensor<6x16xf32>) -> (tensor<6xf32>, tensor<6xi32>, tensor<6xf32>, tensor<6xi32>) {
  %v, %i = tang.comprehension (%r) reduce (%c) [6, 16] monoid(argmax) : tensor<6xf32>, tensor<6xi32> {
    %x = tang.read %X[%r, %c] : tensor<6x16xf32>
    %k = tang.index %c : i32
    tang.yield %x, %k : f32, i32
  }
  %w, %j = tang.comprehension (%r) reduce (%c) [6, 16] monoid(argmin) : tensor<6xf32>, tensor<6xi32> {
    %x = tang.read %X[%r, %c] : tensor<6x16xf32>
    %k = tang.index %c : i32
    tang.yield %x, %k : f32, i32
  }
  return %v, %i, %w, %j : tensor<6xf32>, tensor<6xi32>, tensor<6xf32>, tensor<6xi32>
}
"""

SOFTMAX_PROGRAM = """\
func.func @main(%S: tensor<4x8xf32>, %V: tensor<8x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>, tensor<4xf32>) {
  %o = tang.comprehension (%r, %d) reduce (%k) [4, 3, 8] monoid(online_softmax) : tensor<4x3xf32> {
    %s = tang.read %S[%r, %k] : tensor<4x8xf32>
    %v = tang.read %V[%k, %d] : tensor<8x3xf32>
    tang.yield %s, %v : f32, f32
  }
  %m, %l = tang.comprehension (%r) reduce (%k) [4, 8] monoid(softmax_norm) : tensor<4xf32>, tensor<4xf32> {
    %s = tang.read %S[%r, %k] : tensor<4x8xf32>
    tang.yield %s : f32
  }
  return %o, %m, %l : tensor<4x3xf32>, tensor<4xf32>, tensor<4xf32>
}
"""


def run(tmp_path, program, inputs):
    prog = tmp_path / "prog.mlir"
    prog.write_text(program)
    args = [str(TANG_BIN / "tang-run"), str(prog), "--output-dir",
            str(tmp_path / "out")]
    for k, a in enumerate(inputs):
        np.save(tmp_path / f"in{k}.npy", a)
        args += ["--input", str(tmp_path / f"in{k}.npy")]
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    n = len(list((tmp_path / "out").glob("output_*.npy")))
    return [np.load(tmp_path / "out" / f"output_{k}.npy") for k in range(n)]


def same(a, b):
    """Every element equal, NaN where NaN."""
    return np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(
        np.nan_to_num(a, nan=0.0), np.nan_to_num(b, nan=0.0))


def test_argmax_argmin_nan_and_ties(tmp_path):
    X = np.random.RandomState(3).randn(6, 16).astype(np.float32)
    X[1, 5] = np.nan                        # one NaN: it wins
    X[2, 3] = X[2, 11] = np.nan             # two NaNs: the first wins
    X[3, 0] = np.nan                        # NaN first
    X[4, :] = 2.0                           # all tied: index 0
    X[5, 7] = X[5, 9] = 50.0                # tied maxima
    X[5, 2] = X[5, 12] = -50.0              # tied minima
    v, i, w, j = run(tmp_path, ARG_PROGRAM, [X])
    assert np.array_equal(i, np.argmax(X, axis=1)), (i, np.argmax(X, axis=1))
    assert np.array_equal(j, np.argmin(X, axis=1)), (j, np.argmin(X, axis=1))
    assert same(v, np.max(X, axis=1))
    assert same(w, np.min(X, axis=1))


def test_softmax_with_masked_scores(tmp_path):
    rng = np.random.RandomState(5)
    S = rng.randn(4, 8).astype(np.float32)
    V = rng.randn(8, 3).astype(np.float32)
    S[1, ::2] = -np.inf                     # half the keys masked
    S[2, :] = -np.inf                       # every key masked
    S[3, 4] = 40.0                          # one dominant score
    o, m, l = run(tmp_path, SOFTMAX_PROGRAM, [S, V])
    S64, V64 = S.astype(np.float64), V.astype(np.float64)
    mx = S64.max(axis=1)
    assert same(m, mx)
    with np.errstate(invalid="ignore"):
        e = np.exp(S64 - np.where(np.isinf(mx), 0, mx)[:, None])
        ref_l = e.sum(axis=1)
        ref_o = (e @ V64) / ref_l[:, None]
    assert not np.isnan(l).any()   # assert_allclose would pass NaN == NaN
    np.testing.assert_allclose(l, ref_l, rtol=1e-12)
    # A row with every key masked has no mass: 0 / 0.
    assert np.all(np.isnan(o[2])) and not np.isnan(o[[0, 1, 3]]).any()
    np.testing.assert_allclose(o[[0, 1, 3]], ref_o[[0, 1, 3]], rtol=1e-12)
