"""The portable matrix units, checked where no device runs them.

The contractions of differential.MATRIX_PROGRAMS (and an f16 one) lowered
with their matrix units:
- `--tang-lower-spirv="matrix-units=1"`: KHR_cooperative_matrix, validated
  by a spirv-val that knows the extension (Debian 12's does not;
  scripts/install-spirv-val.sh builds one into .deps/spirv-tools, or set
  TANG_SPIRV_VAL). Lavapipe has no cooperative matrices, so nothing runs it
  here.
- `--tang-lower-metal` (matrix units on by default): simdgroup_matrix,
  linted as C++ against the project's stub metal_stdlib (a lint, not a Metal
  compiler).
Their numerics are checked by test_c_differential.py, which runs the same
kernels with the matrix operations emulated in C.
"""

import os
import pathlib
import shutil

import pytest

from differential import MATRIX_PROGRAMS, ROOT, run  # noqa: E402

TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
SPIRV_VAL = pathlib.Path(os.environ.get(
    "TANG_SPIRV_VAL",
    pathlib.Path(os.environ.get("TANG_DEPS_DIR", ROOT / ".deps"))
    / "spirv-tools" / "bin" / "spirv-val"))
STUB = ROOT / "test" / "Target" / "Metal" / "stub"

PROGRAMS = dict(MATRIX_PROGRAMS, half="""\
func.func @main(%A: tensor<32x64xf16>, %B: tensor<48x64xf16>) -> tensor<32x48xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [32, 48, 64] monoid(add) : tensor<32x48xf32> {
    %a = tang.read %A[%i, %k] : tensor<32x64xf16>
    %b = tang.read %B[%j, %k] : tensor<48x64xf16>
    %x = arith.extf %a : f16 to f32
    %y = arith.extf %b : f16 to f32
    %p = arith.mulf %x, %y : f32
    tang.yield %p : f32
  }
  return %C : tensor<32x48xf32>
}
""", half_result="""\
func.func @main(%A: tensor<32x64xf16>, %B: tensor<48x64xf16>) -> tensor<32x48xf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [32, 48, 64] monoid(add) : tensor<32x48xf16> {
    %a = tang.read %A[%i, %k] : tensor<32x64xf16>
    %b = tang.read %B[%j, %k] : tensor<48x64xf16>
    %x = arith.extf %a : f16 to f32
    %y = arith.extf %b : f16 to f32
    %p = arith.mulf %x, %y : f32
    %h = arith.truncf %p : f32 to f16
    tang.yield %h : f16
  }
  return %C : tensor<32x48xf16>
}
""")


def lower(tmp_path, name, pipeline, options=""):
    """PROGRAMS[name] through `tang-opt --<pipeline>="bundle=... <options>"`;
    the bundle directory. The contraction must take the matrix units."""
    program = tmp_path / f"{name}.mlir"
    program.write_text(PROGRAMS[name])
    bundle = tmp_path / "bundle"
    r = run([TANG_BIN / "tang-opt", program,
             f"--{pipeline}=bundle={bundle} {options}".strip(), "-o",
             os.devnull])
    assert r.returncode == 0, f"{pipeline} failed on {name}:\n{r.stderr}"
    assert "not on matrix units" not in r.stderr, r.stderr
    return bundle


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_cooperative_matrix_spirv_is_valid(name, tmp_path):
    if not SPIRV_VAL.is_file():
        pytest.skip(f"backend spirv-val: no spirv-val with KHR_cooperative_matrix at {SPIRV_VAL} "
                    "(scripts/install-spirv-val.sh)")
    bundle = lower(tmp_path, name, "tang-lower-spirv", "matrix-units=1")
    spv = bundle / "tang_kernels.spv"
    r = run([SPIRV_VAL, "--target-env", "vulkan1.3", spv])
    assert r.returncode == 0, f"spirv-val on {name}:\n{r.stderr}{r.stdout}"
    # The module declares the capability (Debian 12's spirv-dis cannot
    # print it: the opcode postdates it, so look for the word itself:
    # OpCapability CooperativeMatrixKHR = 6022).
    words = spv.read_bytes()
    assert (6022).to_bytes(4, "little") in words, "no CooperativeMatrixKHR"


@pytest.mark.parametrize("name", sorted(MATRIX_PROGRAMS))
def test_simdgroup_matrix_metal_lints(name, tmp_path):
    clang = shutil.which("clang++-22") or shutil.which("clang++")
    if not clang:
        pytest.skip("backend metal-lint: no clang++ for the Metal lint")
    bundle = lower(tmp_path, name, "tang-lower-metal")
    source = bundle / "tang_kernels.metal"
    assert "simdgroup_multiply_accumulate(" in source.read_text()
    r = run([clang, "-x", "c++", "-std=c++17", "-fsyntax-only",
             "-Wno-unknown-attributes", "-I", STUB, source])
    assert r.returncode == 0, f"Metal lint of {name}:\n{r.stderr}"


def test_metal_f16_products_take_plain_kernels(tmp_path):
    """Metal's simdgroup products take one type: f16 operands with an f32
    sum get a remark and the plain kernel, not an error."""
    program = tmp_path / "half.mlir"
    program.write_text(PROGRAMS["half"])
    r = run([TANG_BIN / "tang-opt", program, "--tang-lower-metal", "-o",
             os.devnull])
    assert r.returncode == 0, r.stderr
    assert ("not on matrix units: the target's subgroup matrices take f32 "
            "operands") in r.stderr, r.stderr
    assert "simdgroup_multiply_accumulate" not in r.stdout
