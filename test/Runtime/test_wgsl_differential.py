"""The WGSL backend against the reference interpreter, on Dawn.

Every example is lowered with `tang-opt --tang-lower-wgsl="fuse=1
bundle=..."` (one WGSL module printed from the kernel form, an entry point
per kernel), validated by Tint on Dawn's null backend
(`tang-wgpu-run --validate`, no GPU needed), then run by tang-wgpu-run
(runtime/webgpu: Node, the npm package `webgpu`, Mesa 25's lavapipe from
scripts/install-webgpu.sh) and by tang-run on the same seeded random
inputs; every output must match within the dtype's tolerance.

Also: programs WGSL cannot express are refused at compile time with a
located diagnostic naming the feature, a WGSL error comes back with its
line and column, and the host reports bad inputs.

Run:  TANG_BIN=<build>/bin /usr/bin/python3 -m pytest -q \\
      test/Runtime/test_wgsl_differential.py
(TANG_WGPU_RUN defaults to <repo>/runtime/webgpu/tang-wgpu-run.) Skipped
when node or the webgpu package is missing, or Dawn finds no adapter.
"""

import os
import pathlib

import numpy as np
import pytest

from differential import (check_host_timing, HALF_PROGRAM, FLASH_PROGRAM, FLASH_PROGRAM_SCHEDULED, check_attention_gradient, ORDERED_PROGRAM, TILED_PROGRAM, CONSTANT_PROGRAM, SIZE_IN_BODY_PROGRAM, GATHER_PROGRAM, SCATTER_PROGRAM, CMPF_PROGRAM,  # noqa: E402
                          INDEX_PROGRAM, check_functions, check_program,
                          check_index_errors, check_input_errors, check_size_errors, lower_example, run)

ROOT = pathlib.Path(__file__).resolve().parents[2]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
WGPU_RUN = pathlib.Path(os.environ.get(
    "TANG_WGPU_RUN", ROOT / "runtime" / "webgpu" / "tang-wgpu-run"))
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))


def host(bundle):
    """Runs a function of `bundle` with tang-wgpu-run (check_functions)."""
    return lambda name, inputs, out, sizes=(): run(
        [WGPU_RUN, bundle, name, *inputs, *sizes, "--out", out])


def host_or_skip(*args):
    r = run([WGPU_RUN, *args], timeout=120)
    if r.returncode == 2:
        pytest.skip("backend wgsl: no WebGPU host: " + r.stderr.strip())
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def validator():
    """Dawn's null backend: Tint's validation, no adapter needed."""
    if not WGPU_RUN.is_file():
        pytest.skip(f"backend wgsl: no tang-wgpu-run at {WGPU_RUN}")
    return "wgsl-null"


@pytest.fixture(scope="module")
def backend(validator):
    """"wgsl-lavapipe" on Mesa's CPU driver; skips without an adapter."""
    device = host_or_skip("--probe").stdout.strip().splitlines()[-1]
    return "wgsl-lavapipe" if "llvmpipe" in device else "wgsl-" + device


def lower(program, bundle, fuse=1):
    return run([TANG_BIN / "tang-opt", program,
                f"--tang-lower-wgsl=fuse={fuse} bundle={bundle}", "-o",
                os.devnull])


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_is_valid_wgsl(example, validator, tmp_path):
    bundle = tmp_path / "bundle"
    lower_example(TANG_BIN, example, "tang-lower-wgsl", bundle, "wgsl")
    r = host_or_skip("--validate", bundle)
    assert "valid WGSL" in r.stdout, r.stdout


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_matches_interpreter(example, backend, tmp_path):
    bundle = tmp_path / "bundle"
    manifest = lower_example(TANG_BIN, example, "tang-lower-wgsl", bundle,
                             "wgsl")
    check_functions(backend, example, manifest, tmp_path, TANG_BIN,
                    lambda name, inputs, out, sizes=(): run(
                        [WGPU_RUN, bundle, name, *inputs, *sizes, "--out",
                         out], timeout=900))


def test_half_precision_matches_interpreter(backend, tmp_path):
    """f16 buffers (the `shader-f16` feature) computed in f32."""
    check_program(backend, HALF_PROGRAM, tmp_path, TANG_BIN,
                  "tang-lower-wgsl", "wgsl", host)


def test_float_index_matches_interpreter(backend, tmp_path):
    """`tang.index ... : f32`, converted through i32 (32-bit indices)."""
    check_program(backend, INDEX_PROGRAM, tmp_path, TANG_BIN,
                  "tang-lower-wgsl", "wgsl", host)


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
                  "tang-lower-wgsl", "wgsl", host)


def test_attention_gradient_matches_interpreter(backend, tmp_path):
    check_attention_gradient(backend, tmp_path, TANG_BIN, "tang-lower-wgsl", "wgsl",
                             host)


def test_float_compares_follow_cmpf(backend, tmp_path):
    """Every arith.cmpf predicate, ordered and unordered, on NaN, infinities
    and finite values; NaNs and infinities pass through exactly."""
    check_program(backend, CMPF_PROGRAM, tmp_path, TANG_BIN,
                  "tang-lower-wgsl", "wgsl", host, special=True)


UNSUPPORTED = [
    ("f64", "tensor<8xf64>", "arith.addf %v, %v : f64", "f64",
     "which WGSL does not have"),
    ("erf", "tensor<8xf32>", "math.erf %v : f32", "f32",
     "GLSL and WGSL have no erf"),
]


@pytest.mark.parametrize("case", UNSUPPORTED, ids=lambda c: c[0])
def test_unsupported_programs_are_refused(case, tmp_path):
    _, tensor, body, scalar, message = case
    program = tmp_path / "bad.mlir"
    program.write_text(f"""\
func.func @main(%x: {tensor}) -> {tensor} {{
  %y = tang.comprehension (%i) [8] : {tensor} {{
    %v = tang.read %x[%i] : {tensor}
    %w = {body}
    tang.yield %w : {scalar}
  }}
  return %y : {tensor}
}}
""")
    r = lower(program, tmp_path / "bundle", fuse=0)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr
    assert "bad.mlir:" in r.stderr  # located


def test_wgsl_errors_have_line_and_column(validator, tmp_path):
    bundle = tmp_path / "bundle"
    r = lower(ROOT / "examples" / "softmax.mlir", bundle)
    assert r.returncode == 0, r.stderr
    wgsl = bundle / "tang_kernels.wgsl"
    lines = wgsl.read_text().splitlines()
    at = next(i for i, s in enumerate(lines) if "exp(" in s)
    lines[at] = lines[at].replace("exp(", "expo(")
    wgsl.write_text("\n".join(lines) + "\n")
    r = run([WGPU_RUN, "--validate", bundle])
    if r.returncode == 2:
        pytest.skip(r.stderr)
    assert r.returncode == 1
    assert f"tang_kernels.wgsl:{at + 1}:" in r.stderr, r.stderr
    assert "expo" in r.stderr, r.stderr


def test_host_reports_bad_inputs(backend, tmp_path):
    bundle = tmp_path / "bundle"
    r = lower(ROOT / "examples" / "softmax.mlir", bundle)
    assert r.returncode == 0, r.stderr
    r = run([WGPU_RUN, bundle, "main"])
    assert r.returncode == 1 and "takes 1 inputs, got 0" in r.stderr
    bad = tmp_path / "bad.npy"
    np.save(bad, np.ones((3, 3), np.float32))
    r = run([WGPU_RUN, bundle, "main", bad])
    assert r.returncode == 1 and "has shape (3, 3)" in r.stderr, r.stderr
    np.save(bad, np.ones((8, 32), np.complex64))
    r = run([WGPU_RUN, bundle, "main", bad])
    assert r.returncode == 1 and "'<c8' is not supported" in r.stderr
    r = run([WGPU_RUN, bundle, "nope"])
    assert r.returncode == 1 and "no function 'nope'" in r.stderr
    r = run([WGPU_RUN, tmp_path, "main"])
    assert r.returncode == 1 and "cannot read the manifest" in r.stderr


def test_host_times_the_launches(backend, tmp_path):
    """--time N: the checked run's outputs, then N timed runs (GPU
    timestamps where the adapter has 'timestamp-query': lavapipe has)."""
    bundle = tmp_path / "bundle"
    r = lower(ROOT / "examples" / "softmax.mlir", bundle)
    assert r.returncode == 0, r.stderr
    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(1).standard_normal((8, 32)).astype(
        np.float32))
    clock = check_host_timing(lambda args: run([WGPU_RUN, *args]), bundle, x,
                              tmp_path / "o", "GPU timestamps|wall clock")
    if backend == "wgsl-lavapipe":
        assert clock == "GPU timestamps"


def test_host_refuses_bad_sizes(backend, tmp_path):
    check_size_errors(TANG_BIN, "tang-lower-wgsl", "wgsl",
                      lambda bundle, args: run([WGPU_RUN, bundle, *args]),
                      tmp_path)


def test_host_refuses_ids_outside_the_table(backend, tmp_path):
    check_index_errors(TANG_BIN, "tang-lower-wgsl", "wgsl",
                       lambda bundle, args: run([WGPU_RUN, bundle, *args]),
                       tmp_path)


def test_host_refuses_bad_inputs_and_bundles(backend, tmp_path):
    check_input_errors(TANG_BIN, "tang-lower-wgsl", "wgsl",
                       lambda bundle, args: run([WGPU_RUN, bundle, *args]),
                       tmp_path)
