"""The C backend against the reference interpreter, with the host compiler.

Every example is lowered with `tang-opt --tang-lower-c="fuse=1 bundle=..."`
(C11 printed from the kernel form, one launcher per kernel), compiled with
the host C compiler ($CC, default gcc; -O2 -fopenmp: the launchers run work
items in parallel) into a shared library, and its
launch sequence is run from Python (ctypes, NumPy buffers: the manifest's
arguments and temporaries) on seeded random non-zero inputs; every output
must match tang-run's within the dtype's tolerance. Outputs are poisoned
with NaN first, so an element a kernel does not write fails.

Run:  TANG_BIN=<build>/bin /usr/bin/python3 -m pytest -q \\
      test/Runtime/test_c_differential.py
Skipped when no C compiler is found.
"""

import ctypes
import os
import pathlib
import shutil
import types

import numpy as np
import pytest

from differential import (CONSTANT_PROGRAM, SIZE_IN_BODY_PROGRAM, CMPF_PROGRAM, GATHER_PROGRAM, SCATTER_PROGRAM,  # noqa: E402
                          MATRIX_PROGRAMS, check_functions,
                          check_special_values, lower_example, run,
                          tang_sizes)

ROOT = pathlib.Path(__file__).resolve().parents[2]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))
DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32}


@pytest.fixture(scope="module")
def compiler():
    cc = os.environ.get("CC", "gcc")
    if not shutil.which(cc):
        pytest.skip(f"backend c: no C compiler ({cc})")
    return cc


def build(example, tmp_path, cc, options=""):
    bundle = tmp_path / "bundle"
    manifest = lower_example(TANG_BIN, example, "tang-lower-c", bundle, "c",
                             options)
    lib = tmp_path / "kernels.so"
    r = run([cc, "-O2", "-std=c11", "-Wall", "-Werror", "-shared", "-fPIC",
             "-fopenmp", bundle / manifest["image"], "-o", lib, "-lm"])
    assert r.returncode == 0, f"[c] {cc} failed on {example.name}:\n{r.stderr}"
    # Tensor constants: their contents, from the bundle's data files.
    for fn in manifest["functions"]:
        for t in fn["temporaries"]:
            if "data" in t:
                t["contents"] = np.fromfile(bundle / t["data"],
                                            DTYPES[t["dtype"]]).reshape(
                                                t["shape"])
    return manifest, ctypes.CDLL(str(lib))


def runner(lib, symbolic_fn):
    """Runs `fn`'s launches with NumPy buffers; writes output_<k>.npy as
    float64 (as tang-run writes them) and returns a process-like result.
    `sizes`: --size flags, for a function with symbolic sizes."""
    def go(name, inputs, out_dir, sizes=()):
        out_dir.mkdir(parents=True, exist_ok=True)
        arrays = [np.load(p) for p in inputs]
        size_args, _ = tang_sizes.parse_specs(sizes[1::2])
        fn = tang_sizes.instantiate(symbolic_fn, [a.shape for a in arrays],
                                    size_args)
        args, k_in = [], 0
        for spec in fn["args"]:
            dtype = DTYPES[spec["dtype"]]
            if spec["role"] == "input":
                args.append(np.ascontiguousarray(arrays[k_in].astype(dtype)))
                k_in += 1
            else:
                a = np.empty(spec["shape"], dtype)
                a.fill(np.nan if a.dtype.kind == "f" else -7)
                args.append(a)
        temps = [np.array(t["init"], DTYPES[t["dtype"]]) if "init" in t
                 else t["contents"].copy() if "contents" in t
                 else np.zeros(t["shape"], DTYPES[t["dtype"]])
                 for t in fn["temporaries"]]
        for launch in fn["launches"]:
            grid = (ctypes.c_long * 3)(*launch["grid"])
            block = (ctypes.c_long * 3)(*launch["block"])
            ptrs = [(temps[a["temp"]] if "temp" in a
                     else args[a["arg"]]).ctypes.data for a in launch["args"]]
            arr = (ctypes.c_void_p * len(ptrs))(*ptrs)
            getattr(lib, "tang_launch_" + launch["kernel"])(grid, block, arr)
        # An output updated in place is its donated input.
        args = [args[s["alias"]] if "alias" in s else a
                for a, s in zip(args, fn["args"])]
        outputs = [a for a, s in zip(args, fn["args"]) if s["role"] == "output"]
        for k, a in enumerate(outputs):
            np.save(out_dir / f"output_{k}.npy",
                    a.astype(np.float64) if a.dtype.kind == "f" else a)
        return types.SimpleNamespace(returncode=0, stderr="")
    return go


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_matches_interpreter(example, compiler, tmp_path):
    manifest, lib = build(example, tmp_path, compiler)
    for fn in manifest["functions"]:
        check_functions("c-" + compiler, example, {"functions": [fn]},
                        tmp_path, TANG_BIN, runner(lib, fn))


@pytest.mark.parametrize("tile", [8, 16])
@pytest.mark.parametrize("name", sorted(MATRIX_PROGRAMS))
def test_matrix_unit_kernels_match_interpreter(name, tile, compiler,
                                               tmp_path):
    """The subgroup-matrix kernels of the portable backends (SPIR-V
    KHR_cooperative_matrix: 16, Metal simdgroup_matrix: 8), run with the
    matrix operations emulated in C: their tiles, leading dimensions,
    transposed loads and batch indices against the interpreter."""
    program = tmp_path / f"{name}.mlir"
    program.write_text(MATRIX_PROGRAMS[name])
    manifest, lib = build(program, tmp_path, compiler,
                          f"matrix-units={tile}")
    source = (tmp_path / "bundle" / manifest["image"]).read_text()
    assert f"tang_mma{tile}_mad(" in source, "no matrix-unit kernel"
    launch = manifest["functions"][0]["launches"][0]
    assert launch["block"] == [32, 1, 1], launch
    check_functions(f"c-matrix-units-{tile}", program, manifest, tmp_path,
                    TANG_BIN, runner(lib, manifest["functions"][0]))


@pytest.mark.parametrize("program_text",
                         [GATHER_PROGRAM, SCATTER_PROGRAM, CONSTANT_PROGRAM,
                          SIZE_IN_BODY_PROGRAM],
                         ids=["gather", "scatter", "constants", "size-in-body"])
def test_data_dependent_programs_match_interpreter(program_text, compiler,
                                                   tmp_path):
    """tang.gather with the clamp and zero policies (indices out of range on
    both sides); tang.scatter: a scatter-add with collisions, an insert into
    its result, out-of-range rows dropped."""
    program = tmp_path / "program.mlir"
    program.write_text(program_text)
    manifest, lib = build(program, tmp_path, compiler)
    fn = manifest["functions"][0]
    check_functions("c-" + compiler, program, {"functions": [fn]}, tmp_path,
                    TANG_BIN, runner(lib, fn))


def test_float_compares_follow_cmpf(compiler, tmp_path):
    """Every arith.cmpf predicate, ordered and unordered, on NaN, infinities
    and finite values; NaNs and infinities pass through exactly."""
    program = tmp_path / "cmpf.mlir"
    program.write_text(CMPF_PROGRAM)
    manifest, lib = build(program, tmp_path, compiler)
    check_special_values("c-" + compiler, program, tmp_path, TANG_BIN,
                         runner(lib, manifest["functions"][0]))


GRADIENT_EXAMPLES = ["argmax", "attention", "causal_conv1d", "conv2d",
                     "cross_entropy", "embedding_rmsnorm", "layernorm",
                     "linear_recurrence_scan", "matmul_bias_gelu", "moe_top2",
                     "rmsnorm", "softmax"]


@pytest.mark.parametrize("name", GRADIENT_EXAMPLES)
def test_gradient_programs_match_interpreter(name, compiler, tmp_path):
    """Gradient programs (--tang-grad) are tang programs: fused, lowered
    to C and run, @main_grad matches the interpreter like any function."""
    grad = tmp_path / f"{name}_grad.mlir"
    r = run([TANG_BIN / "tang-opt", ROOT / "examples" / f"{name}.mlir",
             "--tang-grad", "-o", grad])
    assert r.returncode == 0, r.stderr
    manifest, lib = build(grad, tmp_path, compiler)
    names = [fn["name"] for fn in manifest["functions"]]
    assert "main_grad" in names, names
    for fn in manifest["functions"]:
        check_functions("c-" + compiler, grad, {"functions": [fn]},
                        tmp_path, TANG_BIN, runner(lib, fn))


def test_unsigned_i32_division(compiler, tmp_path):
    """divui/remui/cmpi ult on negative i32 values: unsigned in 32 bits."""
    program = tmp_path / "udiv.mlir"
    program.write_text("""\
func.func @main(%x: tensor<8xi32>) -> tensor<8xi32> {
  %y = tang.comprehension (%i) [8] : tensor<8xi32> {
    %v = tang.read %x[%i] : tensor<8xi32>
    %c3 = arith.constant 3 : i32
    %d = arith.divui %v, %c3 : i32
    %r = arith.remui %v, %c3 : i32
    %lt = arith.cmpi ult, %v, %c3 : i32
    %s = arith.addi %d, %r : i32
    %z = arith.select %lt, %r, %s : i32
    tang.yield %z : i32
  }
  return %y : tensor<8xi32>
}
""")
    manifest, lib = build(program, tmp_path, compiler)
    x = tmp_path / "x.npy"
    np.save(x, np.array([-1, -7, 5, 2, -2147483648, 1, 2147483647, -3],
                        np.int32))
    ref = tmp_path / "ref"
    r = run([TANG_BIN / "tang-run", program, f"--input={x}",
             f"--output-dir={ref}"])
    assert r.returncode == 0, r.stderr
    runner(lib, manifest["functions"][0])("main", [x], tmp_path / "out")
    out = np.load(tmp_path / "out" / "output_0.npy")
    expected = np.load(ref / "output_0.npy")
    assert np.array_equal(out, expected), (out, expected)
