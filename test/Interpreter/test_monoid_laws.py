"""tang-run --check-monoid-laws: the laws hold for every builtin monoid on
many seeds (the rounding tolerance gives no false alarm), the counterexamples
reported for a broken user monoid are real, and user-monoid reductions and
wrapping integer products evaluate as NumPy does."""

import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
NUM_BUILTINS = 24  # add/mul/max/min x 3 carriers, and/or x 2, arg* x 3, 2 softmax

WELFORD = """\
tang.monoid @welford : [f64, f64, f64]
    identity [0.0 : f64, 0.0 : f64, 0.0 : f64] commutative {
^bb0(%n1: f64, %m1: f64, %s1: f64, %n2: f64, %m2: f64, %s2: f64):
  %n = arith.addf %n1, %n2 : f64
  %delta = arith.subf %m2, %m1 : f64
  %w = arith.divf %n2, %n : f64
  %dw = arith.mulf %delta, %w : f64
  %m = arith.addf %m1, %dw : f64
  %s12 = arith.addf %s1, %s2 : f64
  %d2 = arith.mulf %delta, %delta : f64
  %nn = arith.mulf %n1, %n2 : f64
  %nnn = arith.divf %nn, %n : f64
  %corr = arith.mulf %d2, %nnn : f64
  %s = arith.addf %s12, %corr : f64
  tang.yield %n, %m, %s : f64, f64, f64
}
"""

BROKEN = """\
tang.monoid @sub : [f64] identity [0.0 : f64] commutative {
^bb0(%a: f64, %b: f64):
  %d = arith.subf %a, %b : f64
  tang.yield %d : f64
}
tang.monoid @mean2 : [f64] identity [0.0 : f64] commutative {
^bb0(%a: f64, %b: f64):
  %s = arith.addf %a, %b : f64
  %half = arith.constant 0.5 : f64
  %m = arith.mulf %s, %half : f64
  tang.yield %m : f64
}
"""


def run(text, tmp_path, *extra, name="prog.mlir"):
    p = tmp_path / name
    p.write_text(text)
    return subprocess.run([str(TANG_BIN / "tang-run"), str(p), *extra],
                          capture_output=True, text=True, timeout=120)


def check(text, tmp_path, *extra):
    return run(text, tmp_path, "--check-monoid-laws", *extra)


@pytest.mark.parametrize("seed", range(8))
def test_builtins_and_welford_hold_on_many_seeds(tmp_path, seed):
    r = check(WELFORD, tmp_path, "--seed", str(seed), "--law-samples=5000")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == NUM_BUILTINS + 1
    assert all(l.endswith(": ok (5000 samples)") for l in lines), r.stdout
    assert lines[-1].startswith("monoid @welford (f64, f64, f64): "
                                "associative, identity, commutative: ok")
    assert r.stderr == ""


def test_empty_module_and_no_function_needed(tmp_path):
    r = check("", tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == NUM_BUILTINS


def test_function_is_not_run(tmp_path):
    prog = WELFORD + """\
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %s = tang.comprehension reduce (%k) [4] monoid(add) : tensor<f32> {
    %v = tang.read %x[%k] : tensor<4xf32>
    tang.yield %v : f32
  }
  return %s : tensor<f32>
}
"""
    r = check(prog, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "tang-run: @main" not in r.stdout
    assert "output #0" not in r.stdout


def test_same_seed_same_report(tmp_path):
    a = check(BROKEN, tmp_path, "--seed", "3")
    b = check(BROKEN, tmp_path, "--seed", "3")
    c = check(BROKEN, tmp_path, "--seed", "4")
    assert a.returncode == b.returncode == c.returncode == 1
    assert (a.stdout, a.stderr) == (b.stdout, b.stderr)
    assert a.stderr != c.stderr


NUM = r"(-?[0-9.e+-]+)"


@pytest.mark.parametrize("seed", range(4))
def test_counterexamples_are_real(tmp_path, seed):
    r = check(BROKEN, tmp_path, "--seed", str(seed))
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and "Stack dump" not in r.stderr

    m = re.search(r"monoid @sub is declared commutative but combine\(a, b\) "
                  rf"!= combine\(b, a\) for a = \({NUM}\), b = \({NUM}\): "
                  rf"\({NUM}\) vs \({NUM}\)", r.stderr)
    assert m, r.stderr
    a, b, ab, ba = map(float, m.groups())
    assert ab == a - b and ba == b - a and a - b != b - a

    m = re.search(r"monoid @mean2 is not associative: .* for "
                  rf"a = \({NUM}\), b = \({NUM}\), c = \({NUM}\): "
                  rf"\({NUM}\) vs \({NUM}\)", r.stderr)
    assert m, r.stderr
    a, b, c, left, right = map(float, m.groups())
    assert left == ((a + b) * 0.5 + c) * 0.5
    assert right == (a + (b + c) * 0.5) * 0.5
    assert abs(left - right) > 1e-12 * max(abs(a), abs(b), abs(c))

    # Only declared laws are checked; mean2 is commutative.
    assert "@mean2 is declared commutative" not in r.stderr
    assert ("monoid @mean2 (f64): associative: violated, identity: violated, "
            "commutative: ok (1000 samples)") in r.stdout


def test_runtime_error_in_combine(tmp_path):
    # Dividing by b - b: an integer division by zero, reported at the op.
    prog = """\
tang.monoid @div : [i32] identity [1 : i32] commutative {
^bb0(%a: i32, %b: i32):
  %z = arith.subi %b, %b : i32
  %q = arith.divsi %a, %z : i32
  tang.yield %q : i32
}
"""
    r = check(prog, tmp_path)
    assert r.returncode == 1
    assert ("prog.mlir:4:8: error: tang-run: integer division by zero while "
            "checking the laws of monoid @div") in r.stderr, r.stderr
    assert "monoid @div (i32): combine failed" in r.stdout


def test_user_monoid_reduction_matches_numpy(tmp_path):
    # Welford over each row: the body yields (1, x, 0), the lift of x.
    prog = WELFORD + """\
func.func @main(%x: tensor<3x50xf64>) -> (tensor<3xf64>, tensor<3xf64>, tensor<3xf64>) {
  %n, %m, %s = tang.comprehension (%i) reduce (%k) [3, 50] monoid(@welford)
      : tensor<3xf64>, tensor<3xf64>, tensor<3xf64> {
    %v = tang.read %x[%i, %k] : tensor<3x50xf64>
    %one = arith.constant 1.0 : f64
    %zero = arith.constant 0.0 : f64
    tang.yield %one, %v, %zero : f64, f64, f64
  }
  return %n, %m, %s : tensor<3xf64>, tensor<3xf64>, tensor<3xf64>
}
"""
    x = np.random.default_rng(1).normal(3.0, 2.0, (3, 50))
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out"
    r = run(prog, tmp_path, "--input", str(tmp_path / "x.npy"),
            "--output-dir", str(out))
    assert r.returncode == 0, r.stderr
    n, mean, m2 = (np.load(out / f"output_{i}.npy") for i in range(3))
    np.testing.assert_array_equal(n, [50, 50, 50])
    np.testing.assert_allclose(mean, x.mean(axis=1), rtol=1e-13)
    np.testing.assert_allclose(m2 / n, x.var(axis=1), rtol=1e-12)


def test_large_i32_products_wrap_like_numpy(tmp_path):
    # Products of two i32 values reach 2^62: they must wrap exactly, not be
    # rounded to a double first.
    prog = """\
func.func @main(%x: tensor<4x6xi32>) -> (tensor<4xi32>, tensor<4x6xi32>) {
  %p = tang.comprehension (%i) reduce (%k) [4, 6] monoid(mul) : tensor<4xi32> {
    %v = tang.read %x[%i, %k] : tensor<4x6xi32>
    tang.yield %v : i32
  }
  %q = tang.comprehension (%i, %k) [4, 6] : tensor<4x6xi32> {
    %v = tang.read %x[%i, %k] : tensor<4x6xi32>
    %w = arith.muli %v, %v : i32
    tang.yield %w : i32
  }
  return %p, %q : tensor<4xi32>, tensor<4x6xi32>
}
"""
    info = np.iinfo(np.int32)
    x = np.random.default_rng(2).integers(info.min, info.max, (4, 6),
                                          dtype=np.int32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out"
    r = run(prog, tmp_path, "--input", str(tmp_path / "x.npy"),
            "--output-dir", str(out))
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(out / "output_0.npy"),
                                  np.prod(x, axis=1, dtype=np.int32))
    np.testing.assert_array_equal(np.load(out / "output_1.npy"), x * x)
