"""tang.scan in the reference interpreter, against NumPy: prefix sums of
several rows, a running max, a linear recurrence under a monoid that is not
commutative (the order along the scan is the meaning), and a running argmax
(two results). tang.triangular_solve (forward substitution) and its
gradient against NumPy's solves."""

import subprocess

import numpy as np

from tangrun import TANG_BIN, run_program


def run(tmp_path, text, *arrays):
    r, out = run_program(tmp_path, text, *arrays)
    assert r.returncode == 0, r.stderr
    return [np.load(out / f"output_{i}.npy")
            for i in range(len(list(out.glob("output_*.npy"))))]


B, T = 3, 50

ROWS = f"""\
func.func @main(%X: tensor<{B}x{T}xf32>) -> (tensor<{B}x{T}xf32>, tensor<{B}x{T}xf32>) {{
  %s = tang.scan (%b) along (%t) [{B}, {T}] monoid(add) : tensor<{B}x{T}xf32> {{
    %x = tang.read %X[%b, %t] : tensor<{B}x{T}xf32>
    tang.yield %x : f32
  }}
  %m = tang.scan (%b) along (%t) [{B}, {T}] monoid(max) : tensor<{B}x{T}xf32> {{
    %x = tang.read %X[%b, %t] : tensor<{B}x{T}xf32>
    tang.yield %x : f32
  }}
  return %s, %m : tensor<{B}x{T}xf32>, tensor<{B}x{T}xf32>
}}
"""


def test_prefix_sum_and_running_max(tmp_path):
    X = np.random.default_rng(1).uniform(-1, 1, (B, T)).astype(np.float32)
    s, m = run(tmp_path, ROWS, X)
    x = X.astype(np.float64)
    assert not np.isnan(s).any()
    np.testing.assert_allclose(s, np.cumsum(x, axis=1), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_array_equal(m, np.maximum.accumulate(x, axis=1))


N = 300

RECURRENCE = f"""\
tang.monoid @affine_map : [f32, f32] identity [1.0 : f32, 0.0 : f32] {{
^bb0(%a1: f32, %b1: f32, %a2: f32, %b2: f32):
  %a = arith.mulf %a1, %a2 : f32
  %ab = arith.mulf %a2, %b1 : f32
  %b = arith.addf %ab, %b2 : f32
  tang.yield %a, %b : f32, f32
}}
func.func @main(%a: tensor<{N}xf32>, %x: tensor<{N}xf32>) -> tensor<{N}xf32> {{
  %A, %h = tang.scan along (%t) [{N}] monoid(@affine_map) : tensor<{N}xf32>, tensor<{N}xf32> {{
    %at = tang.read %a[%t] : tensor<{N}xf32>
    %xt = tang.read %x[%t] : tensor<{N}xf32>
    tang.yield %at, %xt : f32, f32
  }}
  return %h : tensor<{N}xf32>
}}
"""


def test_linear_recurrence_in_order(tmp_path):
    rng = np.random.default_rng(2)
    a = rng.uniform(0.5, 1.0, N).astype(np.float32)
    x = rng.uniform(-1, 1, N).astype(np.float32)
    (h,) = run(tmp_path, RECURRENCE, a, x)
    want, state = np.empty(N), 0.0
    for t in range(N):
        state = float(a[t]) * state + float(x[t])
        want[t] = state
    np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-12)
    # Reversed order would be another recurrence: the test can tell.
    assert not np.allclose(h[::-1], want)


ARGMAX = f"""\
func.func @main(%X: tensor<{T}xf32>) -> (tensor<{T}xf32>, tensor<{T}xi32>) {{
  %v, %i = tang.scan along (%t) [{T}] monoid(argmax) : tensor<{T}xf32>, tensor<{T}xi32> {{
    %x = tang.read %X[%t] : tensor<{T}xf32>
    %k = tang.index %t : i32
    tang.yield %x, %k : f32, i32
  }}
  return %v, %i : tensor<{T}xf32>, tensor<{T}xi32>
}}
"""


def test_running_argmax(tmp_path):
    X = np.random.default_rng(3).uniform(-1, 1, T).astype(np.float32)
    v, i = run(tmp_path, ARGMAX, X)
    x = X.astype(np.float64)
    np.testing.assert_array_equal(v, np.maximum.accumulate(x))
    want = np.array([int(np.argmax(x[:t + 1])) for t in range(T)])
    np.testing.assert_array_equal(i, want)


P, L, M = 3, 40, 2

MATRIX_PRODUCTS = f"""\
tang.monoid @matmul : [tensor<{M}x{M}xf64>] identity [] {{
^bb0(%a: tensor<{M}x{M}xf64>, %b: tensor<{M}x{M}xf64>):
  %c = tang.comprehension (%i, %j) reduce (%k) [{M}, {M}, {M}] monoid(add) : tensor<{M}x{M}xf64> {{
    %x = tang.read %a[%i, %k] : tensor<{M}x{M}xf64>
    %y = tang.read %b[%k, %j] : tensor<{M}x{M}xf64>
    %p = arith.mulf %x, %y : f64
    tang.yield %p : f64
  }}
  tang.yield %c : tensor<{M}x{M}xf64>
}}
func.func @main(%X: tensor<{P}x{L}x{M}x{M}xf64>, %I: tensor<{P}x{M}x{M}xf64>) -> (tensor<{P}x{L}x{M}x{M}xf64>, tensor<{P}x{L}x{M}x{M}xf64>) {{
  %r = tang.tensor_scan @matmul(%X : tensor<{P}x{L}x{M}x{M}xf64>) -> tensor<{P}x{L}x{M}x{M}xf64>
  %s = tang.tensor_scan @matmul(%X : tensor<{P}x{L}x{M}x{M}xf64>) init(%I : tensor<{P}x{M}x{M}xf64>) -> tensor<{P}x{L}x{M}x{M}xf64>
  return %r, %s : tensor<{P}x{L}x{M}x{M}xf64>, tensor<{P}x{L}x{M}x{M}xf64>
}}
"""


def test_tensor_scan_keeps_the_order_of_matrix_products(tmp_path):
    """tang.tensor_scan under the (not commutative) matrix product: the
    prefix at t is X[0] @ ... @ X[t], and init[p] @ X[0] @ ... with init;
    random 2x2 matrices, whose products in another order differ."""
    rng = np.random.default_rng(7)
    X = rng.uniform(-1.2, 1.2, (P, L, M, M))
    init = rng.uniform(-1, 1, (P, M, M))
    r, s = run(tmp_path, MATRIX_PRODUCTS, X, init)
    want_r, want_s = np.zeros_like(X), np.zeros_like(X)
    for p in range(P):
        acc, acc_i = X[p, 0], init[p] @ X[p, 0]
        want_r[p, 0], want_s[p, 0] = acc, acc_i
        for t in range(1, L):
            acc, acc_i = acc @ X[p, t], acc_i @ X[p, t]
            want_r[p, t], want_s[p, t] = acc, acc_i
    rev = X[0, 1] @ X[0, 0]
    assert np.abs(rev - want_r[0, 1]).max() > 1e-3  # the order shows
    for got, want in ((r, want_r), (s, want_s)):
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, want, rtol=1e-12,
                                   atol=1e-12 * np.abs(want).max())


SOLVE = """\
func.func @main(%L: tensor<2x6x6xf64>, %Y: tensor<2x6x3xf64>) -> tensor<2x6x3xf64> {
  %X = tang.triangular_solve %L, %Y : tensor<2x6x6xf64>, tensor<2x6x3xf64>
  return %X : tensor<2x6x3xf64>
}
"""


def test_triangular_solve_is_forward_substitution(tmp_path):
    """tang.triangular_solve solves (I - L) X = Y with L's entries below the
    diagonal only: the diagonal and above hold values that would change the
    answer if read."""
    rng = np.random.default_rng(5)
    L = rng.uniform(-1, 1, (2, 6, 6))
    Y = rng.uniform(-1, 1, (2, 6, 3))
    (X,) = run(tmp_path, SOLVE, L, Y)
    for p in range(2):
        want = np.linalg.solve(np.eye(6) - np.tril(L[p], -1), Y[p])
        assert np.abs(np.linalg.solve(np.eye(6) - L[p], Y[p]) - want).max() \
            > 1e-3  # the upper part shows if read
        np.testing.assert_allclose(X[p], want, rtol=1e-12,
                                   atol=1e-12 * np.abs(want).max())


def test_triangular_solve_gradient(tmp_path):
    """--tang-grad of tang.triangular_solve, run by the interpreter, against
    the closed form: dY = (I - L)^-T dX and dL = dY X^T below the diagonal
    (zero on and above it: those entries are not read)."""
    prog = tmp_path / "solve.mlir"
    prog.write_text(SOLVE.replace("@main", "@solve"))
    grad = tmp_path / "grad.mlir"
    r = subprocess.run([str(TANG_BIN / "tang-opt"), str(prog), "--tang-grad",
                        "-o", str(grad)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    rng = np.random.default_rng(6)
    L = rng.uniform(-1, 1, (2, 6, 6))
    Y = rng.uniform(-1, 1, (2, 6, 3))
    dX = rng.uniform(-1, 1, (2, 6, 3))
    files = []
    for n, x in enumerate((L, Y, dX)):
        np.save(tmp_path / f"g{n}.npy", x)
        files += ["--input", str(tmp_path / f"g{n}.npy")]
    out = tmp_path / "grad_out"
    r = subprocess.run([str(TANG_BIN / "tang-run"), str(grad),
                        "--entry=solve_grad", *files, "--output-dir",
                        str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    dL, dY = (np.load(out / f"output_{k}.npy") for k in range(2))
    for p in range(2):
        A = np.eye(6) - np.tril(L[p], -1)
        X = np.linalg.solve(A, Y[p])
        want_dY = np.linalg.solve(A.T, dX[p])
        want_dL = np.tril(want_dY @ X.T, -1)
        np.testing.assert_allclose(dY[p], want_dY, rtol=1e-12,
                                   atol=1e-12 * np.abs(want_dY).max())
        np.testing.assert_allclose(dL[p], want_dL, rtol=1e-12,
                                   atol=1e-12 * np.abs(want_dL).max())
