"""Bad inputs to tang-run: every case exits 1 (not a crash, not a signal)
with a diagnostic that names the program location and says what is wrong.
Good inputs round-trip exactly through .npy."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))

# The arguments are declared on line 3: the diagnostics point at them.
PROGRAM = """\
// Adds one to x; counts the true flags.
func.func @main(
    %x: tensor<2x3xf32>, %n: tensor<3xi32>, %b: tensor<4xi1>) -> (tensor<2x3xf32>, tensor<3xi32>, tensor<i32>) {
  %y = tang.comprehension (%i, %j) [2, 3] : tensor<2x3xf32> {
    %v = tang.read %x[%i, %j] : tensor<2x3xf32>
    %one = arith.constant 1.0 : f32
    %w = arith.addf %v, %one : f32
    tang.yield %w : f32
  }
  %m = tang.comprehension (%i) [3] : tensor<3xi32> {
    %v = tang.read %n[%i] : tensor<3xi32>
    %w = arith.muli %v, %v : i32
    tang.yield %w : i32
  }
  %c = tang.comprehension reduce (%k) [4] monoid(add) : tensor<i32> {
    %v = tang.read %b[%k] : tensor<4xi1>
    %w = arith.extui %v : i1 to i32
    tang.yield %w : i32
  }
  return %y, %m, %c : tensor<2x3xf32>, tensor<3xi32>, tensor<i32>
}
"""


@pytest.fixture
def program(tmp_path):
    p = tmp_path / "prog.mlir"
    p.write_text(PROGRAM)
    return p


def run(program, *inputs, extra=()):
    args = [str(TANG_BIN / "tang-run"), str(program)]
    for i in inputs:
        args += ["--input", str(i)]
    return subprocess.run(args + list(extra), capture_output=True, text=True,
                          timeout=60)


def good_inputs(tmp_path):
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    n = rng.integers(-100, 100, 3).astype(np.int32)
    b = np.array([True, False, True, True])
    paths = []
    for name, a in (("x", x), ("n", n), ("b", b)):
        p = tmp_path / f"{name}.npy"
        np.save(p, a)
        paths.append(p)
    return (x, n, b), paths


def test_good_inputs_round_trip(program, tmp_path):
    (x, n, b), paths = good_inputs(tmp_path)
    out = tmp_path / "out"
    r = run(program, *paths, extra=["--output-dir", str(out)])
    assert r.returncode == 0, r.stderr
    y = np.load(out / "output_0.npy")
    m = np.load(out / "output_1.npy")
    c = np.load(out / "output_2.npy")
    assert y.dtype == np.float64 and y.shape == (2, 3)
    np.testing.assert_array_equal(y, x.astype(np.float64) + 1.0)
    assert m.dtype == np.int32
    np.testing.assert_array_equal(m, n * n)
    assert c.shape == () and int(c) == 3


def test_dump_inputs_reproduces_random_run(program, tmp_path):
    dump, out1, out2 = tmp_path / "in", tmp_path / "o1", tmp_path / "o2"
    r = run(program, extra=["--seed", "5", "--dump-inputs", str(dump),
                            "--output-dir", str(out1)])
    assert r.returncode == 0, r.stderr
    ins = [dump / f"input_{i}.npy" for i in range(3)]
    r = run(program, *ins, extra=["--output-dir", str(out2)])
    assert r.returncode == 0, r.stderr
    for i in range(3):
        np.testing.assert_array_equal(np.load(out1 / f"output_{i}.npy"),
                                      np.load(out2 / f"output_{i}.npy"))


def npy_bytes(array):
    import io
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


# Each case: how to spoil input #0 (the f32 2x3 tensor), and what the
# diagnostic must say.
BAD_X = {
    "wrong_shape": (lambda: npy_bytes(np.ones((3, 2), np.float32)),
                    "has shape (3, 2) but the argument is 'tensor<2x3xf32>'"),
    "wrong_rank": (lambda: npy_bytes(np.ones(6, np.float32)),
                   "has shape (6,) but the argument is 'tensor<2x3xf32>'"),
    "wrong_dtype_int": (lambda: npy_bytes(np.ones((2, 3), np.int32)),
                        "has dtype int32 (.npy 'i4'), which cannot feed "
                        "'tensor<2x3xf32>'"),
    # NumPy's name first: the .npy string 'i8' is not MLIR's i8.
    "wrong_dtype_int64": (lambda: npy_bytes(np.ones((2, 3), np.int64)),
                          "has dtype int64 (.npy 'i8'), which cannot feed "
                          "'tensor<2x3xf32>'"),
    "wrong_dtype_complex": (lambda: npy_bytes(np.ones((2, 3), np.complex64)),
                            "unsupported .npy dtype 'c8'"),
    "truncated_data": (lambda: npy_bytes(np.ones((2, 3), np.float32))[:-5],
                       "truncated .npy data: shape (2, 3) needs 24 bytes, file has 19"),
    "truncated_header": (lambda: npy_bytes(np.ones((2, 3), np.float32))[:20],
                         "truncated .npy header"),
    "trailing_bytes": (lambda: npy_bytes(np.ones((2, 3), np.float32)) + b"xx",
                       "2 bytes after the data"),
    "bad_magic": (lambda: b"PK\x03\x04" + b"\0" * 100, "bad magic string"),
    "empty_file": (lambda: b"", "bad magic string"),
    "big_endian": (lambda: npy_bytes(np.ones((2, 3), ">f4")),
                   "big-endian .npy data ('>f4') is not supported"),
    "fortran_order": (lambda: npy_bytes(np.asfortranarray(np.ones((2, 3), np.float32))),
                      "Fortran-order .npy arrays are not supported"),
    "bad_version": (lambda: b"\x93NUMPY\x09\x00" + npy_bytes(np.ones(1))[8:],
                    "unsupported .npy version 9"),
    "garbage_header": (lambda: b"\x93NUMPY\x01\x00\x10\x00" + b"{'garbage': 1 }\n",
                       "malformed .npy header: no 'descr'"),
    "bad_dimension": (lambda: npy_bytes(np.ones((2, 3), np.float32)).replace(b"(2, 3)", b"(2, x)"),
                      "bad dimension 'x'"),
}


@pytest.mark.parametrize("case", sorted(BAD_X))
def test_bad_npy_input(program, tmp_path, case):
    make, message = BAD_X[case]
    _, paths = good_inputs(tmp_path)
    paths[0].write_bytes(make())
    r = run(program, *paths)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert message in r.stderr, r.stderr
    # The diagnostic points at %x's declaration in the program.
    assert "prog.mlir:3:5: error: input #0" in r.stderr, r.stderr


def test_int_value_out_of_range(program, tmp_path):
    _, paths = good_inputs(tmp_path)
    np.save(paths[1], np.array([1, 2, 1 << 40], np.int64))
    r = run(program, *paths)
    assert r.returncode == 1
    assert "holds 1099511627776, which does not fit 'i32'" in r.stderr


def test_bool_from_int(program, tmp_path):
    _, paths = good_inputs(tmp_path)
    np.save(paths[2], np.array([1, 0, 1, 1], np.int8))
    r = run(program, *paths)
    assert r.returncode == 1
    assert ("has dtype int8 (.npy 'i1'), which cannot feed 'tensor<4xi1>'"
            in r.stderr)


def test_missing_file(program, tmp_path):
    _, paths = good_inputs(tmp_path)
    r = run(program, tmp_path / "nope.npy", *paths[1:])
    assert r.returncode == 1
    assert "cannot read" in r.stderr and "nope.npy" in r.stderr


@pytest.mark.parametrize("count", [1, 4])
def test_wrong_input_count(program, tmp_path, count):
    _, paths = good_inputs(tmp_path)
    r = run(program, *(paths * 2)[:count])
    assert r.returncode == 1
    assert (f"@main takes 3 tensor arguments but {count} --input files were "
            "given") in r.stderr


def test_malformed_program(tmp_path):
    p = tmp_path / "bad.mlir"
    p.write_text("func.func @main() {\n  %x = tang.comprehension (%i) [4 : tensor<4xf32> {\n}\n")
    r = run(p)
    assert r.returncode == 1
    assert "bad.mlir:2:" in r.stderr and "error:" in r.stderr


def test_missing_program(tmp_path):
    r = run(tmp_path / "nope.mlir")
    assert r.returncode == 1
    assert "nope.mlir" in r.stderr
