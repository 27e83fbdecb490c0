"""The OpenCL backend against the reference interpreter, on PoCL.

Every example is lowered with `tang-opt --tang-lower-opencl="fuse=1
bundle=..."` (OpenCL C 1.2 printed from the kernel form), run on seeded
random non-zero inputs with tang-run (the float64 reference) and with
tang-ocl-run (runtime/opencl) on the first OpenCL device, PoCL on this
machine; every output must match within the dtype's tolerance (f32: 1e-5
relative), and a failure names the backend, the example and the error.

Also: f16 storage (vload_half / vstore_half_rte), bf16 programs refused
at compile time with a diagnostic naming the feature, tang-ocl-run's
timing (--time) and its reports of a wrong input count or shape.

Run:  TANG_OCL_RUN=<build-ocl>/tang-ocl-run TANG_BIN=<build>/bin \\
      /usr/bin/python3 -m pytest -q test/Runtime/test_opencl_differential.py
(TANG_OCL_RUN defaults to <repo>/build-ocl/tang-ocl-run.) Skipped when
tang-ocl-run is not built or finds no OpenCL device.
"""

import json
import os
import pathlib

import numpy as np
import pytest

from differential import (check_host_timing, HALF_PROGRAM, FLASH_PROGRAM, FLASH_PROGRAM_SCHEDULED, NAIVE_ATTENTION_PROGRAM, check_attention_gradient, ORDERED_PROGRAM, TILED_PROGRAM, CONSTANT_PROGRAM, SIZE_IN_BODY_PROGRAM, GATHER_PROGRAM, SCATTER_PROGRAM, CMPF_PROGRAM,  # noqa: E402
                          check_functions, check_program, check_index_errors, check_input_errors, check_size_errors,
                          lower_example, run)

ROOT = pathlib.Path(__file__).resolve().parents[2]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
OCL_RUN = pathlib.Path(
    os.environ.get("TANG_OCL_RUN", ROOT / "build-ocl" / "tang-ocl-run"))
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    """"opencl-pocl"; skips the module when tang-ocl-run is not built or
    finds no OpenCL device."""
    if not (OCL_RUN.is_file() and os.access(OCL_RUN, os.X_OK)):
        pytest.skip(f"backend opencl: tang-ocl-run not built at {OCL_RUN} (build "
                    "runtime/opencl into build-ocl, or set TANG_OCL_RUN)")
    # PoCL compiles kernels into a cache: one per test session.
    os.environ["POCL_CACHE_DIR"] = str(tmp_path_factory.mktemp("pocl"))
    r = run([OCL_RUN, "--help"])
    assert r.returncode == 0, r.stderr
    return "opencl-pocl"


def host(bundle):
    """Runs a function of `bundle` with tang-ocl-run (check_functions)."""
    return lambda name, inputs, out, sizes=(): run(
        [OCL_RUN, bundle, name, *inputs, *sizes, "--out", out], timeout=300)


def lower(example, bundle, fuse=1):
    return run([TANG_BIN / "tang-opt", example,
                f"--tang-lower-opencl=fuse={fuse} bundle={bundle}", "-o",
                os.devnull])


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_matches_interpreter(example, backend, tmp_path):
    bundle = tmp_path / "bundle"
    manifest = lower_example(TANG_BIN, example, "tang-lower-opencl", bundle,
                             "opencl")
    check_functions(backend, example, manifest, tmp_path, TANG_BIN,
                    host(bundle))


@pytest.mark.parametrize("program_text",
                         [GATHER_PROGRAM, SCATTER_PROGRAM, CONSTANT_PROGRAM,
                          SIZE_IN_BODY_PROGRAM, ORDERED_PROGRAM, TILED_PROGRAM,
                          FLASH_PROGRAM, FLASH_PROGRAM_SCHEDULED],
                         ids=["gather", "scatter", "constants", "size-in-body",
                              "ordered-row",
                              "tiled", "flash", "flash-scheduled"])
def test_data_dependent_programs_match_interpreter(program_text, backend,
                                                   tmp_path):
    """tang.gather with the clamp and zero policies (indices out of range on
    both sides); tang.scatter: a scatter-add with collisions, an insert into
    its result, out-of-range rows dropped. (The scatter's copy and update
    kernels have different block sizes.)"""
    check_program(backend, program_text, tmp_path, TANG_BIN,
                  "tang-lower-opencl", "opencl", host)


def test_attention_gradient_matches_interpreter(backend, tmp_path):
    check_attention_gradient(backend, tmp_path, TANG_BIN, "tang-lower-opencl", "opencl",
                             host)


def test_float_compares_follow_cmpf(backend, tmp_path):
    """Every arith.cmpf predicate, ordered and unordered, on NaN, infinities
    and finite values; NaNs and infinities pass through exactly."""
    check_program(backend, CMPF_PROGRAM, tmp_path, TANG_BIN,
                  "tang-lower-opencl", "opencl", host, special=True)


def test_half_precision_matches_interpreter(backend, tmp_path):
    """f16 buffers as `half *` read by vload_half and written by
    vstore_half_rte (OpenCL 1.2's half storage, no cl_khr_fp16), computed
    in f32: a row reduction (workgroup memory) and a map of its result."""
    manifest = check_program(backend, HALF_PROGRAM, tmp_path, TANG_BIN,
                             "tang-lower-opencl", "opencl", host)
    assert [a["dtype"] for a in manifest["functions"][0]["args"]] == \
        ["f16"] * 4
    source = next((tmp_path).rglob("*.cl")).read_text()
    assert "vload_half(" in source and "vstore_half_rte(" in source


def test_half_precision_attention_matches_interpreter(backend, tmp_path):
    """Causal attention stored in f16 on the SIMT flash kernel (f16 reads
    staged as f32, an f16 output)."""
    text = NAIVE_ATTENTION_PROGRAM.replace("f32", "f16").replace(
        "0xFF800000 : f16", "0xFC00 : f16")
    manifest = check_program(backend, text, tmp_path, TANG_BIN,
                             "tang-lower-opencl", "opencl", host)
    assert manifest["functions"][0]["launches"][0]["block"] == [32, 4, 1]


def test_bf16_is_refused(tmp_path):
    program = tmp_path / "half.mlir"
    program.write_text("""\
func.func @main(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %y = tang.comprehension (%i) [8] : tensor<8xbf16> {
    %v = tang.read %x[%i] : tensor<8xbf16>
    %w = arith.addf %v, %v : bf16
    tang.yield %w : bf16
  }
  return %y : tensor<8xbf16>
}
""")
    r = lower(program, tmp_path / "bundle", fuse=0)
    assert r.returncode != 0
    assert "bf16 is not available on the OpenCL 1.2 target" in r.stderr, \
        r.stderr
    assert "half.mlir" in r.stderr  # located


def test_host_times_with_profiling_events(backend, tmp_path):
    """--time N: the outputs of the checked run, then N timed runs of the
    launches (the queue's profiling events); -v names the device."""
    bundle = tmp_path / "bundle"
    r = lower(ROOT / "examples" / "softmax.mlir", bundle)
    assert r.returncode == 0, r.stderr
    shape = json.loads((bundle / "manifest.json").read_text())[
        "functions"][0]["args"][0]["shape"]
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(1).standard_normal(shape).astype(
        np.float32))
    check_host_timing(lambda args: run([OCL_RUN, *args]), bundle, x,
                      tmp_path / "o", "profiling events")
    r = run([OCL_RUN, bundle, "main", x, "-v", "--out", tmp_path / "o"])
    assert r.returncode == 0 and r.stdout.startswith("device: "), r.stdout


def test_host_refuses_bad_sizes(backend, tmp_path):
    check_size_errors(TANG_BIN, "tang-lower-opencl", "opencl",
                      lambda bundle, args: run([OCL_RUN, bundle, *args]),
                      tmp_path)


def test_host_reports_bad_inputs(backend, tmp_path):
    bundle = tmp_path / "bundle"
    r = lower(ROOT / "examples" / "softmax.mlir", bundle)
    assert r.returncode == 0, r.stderr
    r = run([OCL_RUN, bundle, "main"])
    assert r.returncode == 1 and "takes 1 inputs, got 0" in r.stderr
    bad = tmp_path / "bad.npy"
    np.save(bad, np.ones((3, 3), np.float32))
    r = run([OCL_RUN, bundle, "main", bad])
    assert r.returncode == 1 and "shape" in r.stderr, r.stderr
    r = run([OCL_RUN, bundle, "nope"])
    assert r.returncode == 1 and "no function 'nope'" in r.stderr


def test_host_refuses_ids_outside_the_table(backend, tmp_path):
    check_index_errors(TANG_BIN, "tang-lower-opencl", "opencl",
                       lambda bundle, args: run([OCL_RUN, bundle, *args]),
                       tmp_path)


def test_host_refuses_bad_inputs_and_bundles(backend, tmp_path):
    check_input_errors(TANG_BIN, "tang-lower-opencl", "opencl",
                       lambda bundle, args: run([OCL_RUN, bundle, *args]),
                       tmp_path)
