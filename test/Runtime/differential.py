"""Helpers shared by the differential tests of the executable backends
(test_{vulkan,glsl,opencl,c}_differential.py): lowering an example to a
bundle, seeded inputs and the comparison with the float64 interpreter's
outputs."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import time
import zlib

import numpy as np
import pytest

# Float outputs are checked element by element with the benchmarks' rule
# (bench/harness.py: |out - ref| <= atol + rtol |ref| from the storage
# type, the longest reduction and the program's length; NaN and infinities
# where the interpreter has them, exactly); integer outputs compare exactly.
import sys  # noqa: E402
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import harness  # noqa: E402
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
from tang import sizes as tang_sizes  # noqa: E402

INTEGER_DTYPES = {"i32"}
#: A backend's run of an example that took at most this many seconds runs
#: a second time on the same bundle and inputs, and must give the same
#: bits (determinism run to run; tang chooses no atomics on these
#: backends). Longer runs (the fused transformer block one thread per
#: point on lavapipe or Dawn: minutes) are not repeated.
RERUN_SECONDS = 30.0
NUMPY_DTYPE = {"f16": np.float16, "f32": np.float32, "f64": np.float64,
               "i32": np.int32}


ROOT = pathlib.Path(__file__).resolve().parents[2]
MESA25 = pathlib.Path(os.environ.get("TANG_DEPS_DIR", ROOT / ".deps")) / "mesa25"


def run(args, timeout=120, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True,
                          text=True, timeout=timeout, **kwargs)


def vulkan_env():
    """The environment tang-vk-run runs in: Vulkan pointed at Mesa 25's
    lavapipe when scripts/install-webgpu.sh has unpacked it into
    .deps/mesa25 (TANG_DEPS_DIR), whose loops have no iteration limit;
    None (the system's drivers: Debian 12's Mesa 22.3 lavapipe) otherwise."""
    icd = MESA25 / "lvp_icd.json"
    if not icd.is_file():
        return None
    env = dict(os.environ, VK_DRIVER_FILES=str(icd), VK_ICD_FILENAMES=str(icd))
    libs = (MESA25 / "library_path").read_text().strip()
    if env.get("LD_LIBRARY_PATH"):
        libs += ":" + env["LD_LIBRARY_PATH"]
    env["LD_LIBRARY_PATH"] = libs
    return env


def run_vulkan(args, timeout=900):
    """`run` in vulkan_env(); lavapipe runs the fused transformer block's
    point kernels for minutes."""
    return run(args, timeout=timeout, env=vulkan_env())


def vulkan_backend(vk_run):
    """The Vulkan backend's name from `tang-vk-run --probe`:
    "vulkan-lavapipe-mesa25" (no loop limit), "vulkan-lavapipe" (Mesa 22.3:
    loops stop after 65535 iterations per invocation) or "vulkan-<device>";
    skips the module when there is no device."""
    if not (vk_run.is_file() and os.access(vk_run, os.X_OK)):
        pytest.skip(f"backend vulkan: tang-vk-run not built at {vk_run} (build runtime/vulkan "
                    "into build-vk, or set TANG_VK_RUN)")
    r = run_vulkan([vk_run, "--probe"], timeout=60)
    if r.returncode == 2:
        pytest.skip("backend vulkan: no Vulkan device (tang-vk-run --probe): "
                    + r.stderr.strip())
    assert r.returncode == 0, f"tang-vk-run --probe failed:\n{r.stderr}"
    device = r.stdout.strip()
    if "llvmpipe" in device:
        return "vulkan-lavapipe" + ("-mesa25" if vulkan_env() else "")
    return "vulkan-" + device.split(" (")[0].replace(" ", "-")


def lower_example(tang_bin, example, pipeline, bundle, fmt, options=""):
    """`example` through `tang-opt --<pipeline>="fuse=1 bundle=<bundle>
    <options>"`; returns the bundle's manifest after checking its format is
    `fmt` and it has functions. A failure names the pipeline, the example
    and the diagnostics."""
    r = run([tang_bin / "tang-opt", example,
             f"--{pipeline}=fuse=1 bundle={bundle} {options}".strip(), "-o",
             os.devnull])
    assert r.returncode == 0, (
        f"tang-opt --{pipeline} failed on {example.name}:\n{r.stderr}")
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["format"] == fmt, manifest["format"]
    assert manifest["functions"], f"{example.name}: no functions"
    return manifest


def random_input(rng, spec):
    """Seeded non-zero values of the manifest buffer `spec`: floats of
    magnitude in [0.25, 1) with random signs, integers in [1, 8]."""
    shape = tuple(spec["shape"])
    if spec["dtype"] in INTEGER_DTYPES:
        return rng.integers(1, 9, shape).astype(NUMPY_DTYPE[spec["dtype"]])
    magnitude = rng.uniform(0.25, 1.0, shape)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return (sign * magnitude).astype(NUMPY_DTYPE[spec["dtype"]])


def compare(backend, where, k, spec, out, ref, program, sensitivity=None):
    """Asserts that output #k of a backend (`out`) matches tang-run's on
    every element: integers exactly, floats under the elementwise rule of
    bench/harness.py for the dtype and `program` (its text; with
    `sensitivity`, each element's measured one added as the GPU check
    does), NaN and infinities exactly where the interpreter has them."""
    what = (f"[{backend}] {where}: output #{k} "
            f"({spec['dtype']} {spec['shape']})")
    assert out.shape == ref.shape, (
        f"{what}: shape {out.shape}, reference {ref.shape}")
    if spec["dtype"] in INTEGER_DTYPES:
        bad = np.flatnonzero(out.ravel() != ref.ravel())
        assert bad.size == 0, (
            f"{what}: {bad.size} of {ref.size} elements differ, first at "
            f"flat index {bad[0]}: {out.ravel()[bad[0]]} vs reference "
            f"{ref.ravel()[bad[0]]}")
        return
    tol = harness.tolerance_for_program(spec["dtype"], program)
    c = harness.check_elementwise(out.astype(np.float64),
                                  ref.astype(np.float64), tol,
                                  sensitivity=sensitivity)
    assert c["ok"], (
        f"{what}: {c['bad']} of {c['elements']} elements outside "
        f"{c['rule']} ({c['nonfinite_mismatch']} NaN/inf mismatches); worst "
        f"at {c['worst']['index']}: {c['worst']['got']} vs reference "
        f"{c['worst']['ref']} ({c['max_err']:.3g} of its bound)")


def size_flags(specs):
    """`--size argK=N` for the index arguments among `specs` (tang-run's
    --size values; the dimensions come from the inputs' shapes)."""
    flags = []
    for spec in specs:
        if "." not in spec.split("=")[0]:
            flags += ["--size", spec]
    return flags


def check_functions(backend, example, manifest, tmp_path, tang_bin, runner,
                    sensitivity=False):
    """Runs every function of `manifest` (the bundle of `example`) through
    `runner(name, input_paths, out_dir, sizes)` on seeded inputs and
    compares each output with tang-run's. A function with symbolic sizes
    runs at each `// sizes:` line of the program (python/tang/sizes.py),
    all from the one bundle; `sizes` is then the runtime's --size flags.
    With `sensitivity`, each element's bound also takes how far it moves
    under Monte Carlo arithmetic (perturbed_sensitivity): for programs
    whose errors compound through ill-conditioned steps (the exp of a dot
    product in attention's gradient), as bench/gpu_check.py does."""
    program = pathlib.Path(example).read_text()
    for fn in manifest["functions"]:
        name = fn["name"]
        for spec in fn["args"] + fn["temporaries"]:
            if "dtype" in spec and spec["dtype"] not in NUMPY_DTYPE:
                pytest.skip(f"{example.name} @{name}: dtype {spec['dtype']} "
                            "is not supported by the backend's host yet")
        runs = [[]]
        if tang_sizes.is_symbolic(fn):
            runs = tang_sizes.program_sizes(program)
            assert runs, (f"{example.name} @{name} has symbolic sizes but "
                          "the program names none to run at (// sizes:)")
        for n, specs in enumerate(runs):
            check_run(backend, example, program, fn, specs, n, tmp_path,
                      tang_bin, runner, sensitivity)


def perturbed_sensitivity(tang_bin, example, name, inputs, flags, refs, tmp,
                          trials=6):
    """Per output of function `name` (float64 references `refs`): the
    largest change over `trials` interpreter runs on `inputs` each moved by
    a random fraction of f32's unit roundoff, under Monte Carlo arithmetic
    (tang-run --precision=perturbed), as scripts/prepare-gpu-check.py
    measures it for the GPU check."""
    rng = np.random.default_rng(zlib.crc32(f"{example} {name}".encode()))
    u = harness.UNIT_ROUNDOFF["f32"]
    worst = [np.zeros(r.shape) for r in refs]
    for t in range(trials):
        moved = []
        for i, p in enumerate(inputs):
            values = np.load(p)
            if values.dtype.kind == "f":
                values = values.astype(np.float64) * (
                    1 + u * rng.uniform(-1, 1, values.shape))
            q = tmp / f"{name}_moved_{t}_{i}.npy"
            np.save(q, values)
            moved.append(q)
        out = tmp / f"{name}_perturbed_{t}"
        r = run([tang_bin / "tang-run", example, f"--entry={name}",
                 "--precision=perturbed", f"--perturb-seed={t + 1}",
                 *[f"--input={p}" for p in moved], *flags,
                 f"--output-dir={out}"])
        assert r.returncode == 0, f"tang-run --precision=perturbed:\n{r.stderr}"
        for k, ref in enumerate(refs):
            delta = np.abs(np.load(out / f"output_{k}.npy").astype(np.float64)
                           - ref.astype(np.float64))
            worst[k] = np.fmax(worst[k],
                               np.where(np.isfinite(delta), delta, 0.0))
    return worst


def check_run(backend, example, program, fn, specs, n, tmp_path, tang_bin,
              runner, sensitivity=False):
    """check_functions for one function at the sizes `specs` (run #n)."""
    name = fn["name"]
    where = f"{example.name} @{name}" + (f" at {' '.join(specs)}"
                                          if specs else "")
    size_args, dims = tang_sizes.parse_specs(specs)
    rng = np.random.default_rng(zlib.crc32(where.encode()))
    inputs, shapes = [], []
    for a, spec in enumerate(fn["args"]):
        if spec["role"] != "input":
            continue
        shape = []
        for d, x in enumerate(spec["shape"]):
            if isinstance(x, list):
                assert (a, d) in dims, (f"{where}: no size for dimension {d} "
                                        f"of argument #{a} (arg{a}.{d}=N)")
                x = dims[(a, d)]
            shape.append(x)
        path = tmp_path / f"{name}_{n}_input_{len(inputs)}.npy"
        np.save(path, random_input(rng, dict(spec, shape=shape)))
        inputs.append(path)
        shapes.append(shape)
    fn_at = tang_sizes.instantiate(fn, shapes, size_args)

    ref_dir = tmp_path / f"{name}_{n}_ref"
    out_dir = tmp_path / f"{name}_{n}_out"
    flags = size_flags(specs)
    r = run([tang_bin / "tang-run", example, f"--entry={name}",
             *[f"--input={p}" for p in inputs], *flags,
             f"--output-dir={ref_dir}"])
    assert r.returncode == 0, f"tang-run failed on {where}:\n{r.stderr}"
    def run_backend(into):
        t0 = time.monotonic()
        r = runner(name, inputs, into, flags) if flags else runner(
            name, inputs, into)
        assert r.returncode == 0, (
            f"[{backend}] the backend's host failed on {where} "
            f"(exit {r.returncode}):\n{r.stderr}")
        return time.monotonic() - t0
    seconds = run_backend(out_dir)

    outputs = [a for a in fn_at["args"] if a["role"] == "output"]
    assert outputs, f"{where}: no outputs"
    refs = [np.load(ref_dir / f"output_{k}.npy") for k in range(len(outputs))]
    moves = (perturbed_sensitivity(tang_bin, example, name, inputs, flags,
                                   refs, tmp_path) if sensitivity
             else [None] * len(outputs))
    for k, spec in enumerate(outputs):
        out = np.load(out_dir / f"output_{k}.npy")
        compare(backend, where, k, spec, out, refs[k], program, moves[k])
    extra = sorted(p.name for p in out_dir.glob("output_*.npy"))
    assert len(extra) == len(outputs), f"{where}: outputs {extra}"
    if seconds <= RERUN_SECONDS:
        again = tmp_path / f"{name}_{n}_out_again"
        run_backend(again)
        for k in range(len(outputs)):
            assert_same_bits(backend, where, k, np.load(out_dir / f"output_{k}.npy"),
                             np.load(again / f"output_{k}.npy"))


def assert_same_bits(backend, where, k, first, second):
    """Output #k of two runs of one bundle on the same inputs: the same
    dtype, shape and bytes (NaN payloads included)."""
    assert first.dtype == second.dtype and first.shape == second.shape, (
        f"[{backend}] {where}: output {k} is {first.dtype}{first.shape} in "
        f"one run and {second.dtype}{second.shape} in the next")
    if first.tobytes() != second.tobytes():
        a = first.reshape(-1).view(np.uint8).reshape(first.size, -1)
        b = second.reshape(-1).view(np.uint8).reshape(second.size, -1)
        differ = np.flatnonzero((a != b).any(axis=1))
        raise AssertionError(
            f"[{backend}] {where}: output {k} is not the same run to run: "
            f"{differ.size} of {first.size} elements differ (first at flat "
            f"index {differ[0]}: {first.reshape(-1)[differ[0]]!r} then "
            f"{second.reshape(-1)[differ[0]]!r})")


def check_program(backend, text, tmp_path, tang_bin, pipeline, fmt, host,
                  special=False, sensitivity=False):
    """Writes the program `text`, lowers it through `pipeline` into a bundle
    of format `fmt`, and compares what `host(bundle)` (a runner, as for
    check_functions, with its `sensitivity`) computes with tang-run: every
    function, or with `special`, CMPF_PROGRAM's exact special-value
    comparison. Returns the manifest."""
    program = tmp_path / "program.mlir"
    program.write_text(text)
    bundle = tmp_path / "bundle"
    manifest = lower_example(tang_bin, program, pipeline, bundle, fmt)
    if special:
        check_special_values(backend, program, tmp_path, tang_bin,
                             host(bundle))
    else:
        check_functions(backend, program, manifest, tmp_path, tang_bin,
                        host(bundle), sensitivity)
    return manifest


# Matmul-like programs the portable schedule tiles (64 x 64 tiles of 16 x 16
# threads, 4 x 4 points a thread: TiledKernel.cpp): an epilogue around a
# nested sum with extents no multiple of the tile (clamped reads, guarded
# stores), and a batched product of a [k]-contiguous right operand.
TILED_PROGRAM = """\
func.func @main(%A: tensor<100x33xf32>, %B: tensor<33x70xf32>, %bias: tensor<70xf32>, %X: tensor<2x64x40xf32>, %W: tensor<2x128x40xf32>) -> (tensor<100x70xf32>, tensor<2x64x128xf32>) {
  %C = tang.comprehension (%i, %j) [100, 70] : tensor<100x70xf32> {
    %s = tang.comprehension reduce (%k) [33] monoid(add) : f32 {
      %a = tang.read %A[%i, %k] : tensor<100x33xf32>
      %b = tang.read %B[%k, %j] : tensor<33x70xf32>
      %p = arith.mulf %a, %b : f32
      tang.yield %p : f32
    }
    %c = tang.read %bias[%j] : tensor<70xf32>
    %t = arith.addf %s, %c : f32
    %g = math.tanh %t : f32
    tang.yield %g : f32
  }
  %D = tang.comprehension (%b, %i, %j) reduce (%k) [2, 64, 128, 40] monoid(add) : tensor<2x64x128xf32> {
    %x = tang.read %X[%b, %i, %k] : tensor<2x64x40xf32>
    %w = tang.read %W[%b, %j, %k] : tensor<2x128x40xf32>
    %p = arith.mulf %x, %w : f32
    tang.yield %p : f32
  }
  return %C, %D : tensor<100x70xf32>, tensor<2x64x128xf32>
}
"""


# Attention in its fused form (an online-softmax reduction and the softmax
# statistics beside it), which the portable backends run as the SIMT flash
# kernel (SimtScoreKernel.cpp: 32 query rows and 64 keys a block, the dot
# products staged 8 head columns at a time): query and key lengths, head
# dims and rows no multiple of those (50 queries, 70 keys, 20 and 40 head
# columns: clamped reads, skipped keys, guarded stores), three query heads
# reading one key/value head through a view, a scale and a causal-type mask
# with an offset (keys up to i + 20: the first rows see 21 keys, the last
# block's key steps end early), and the statistics (max, sum) the kernel
# writes for its sibling.
FLASH_PROGRAM = """\
func.func @main(%Q: tensor<2x3x50x20xf32>, %Kg: tensor<2x1x70x20xf32>, %Vg: tensor<2x1x70x40xf32>) -> (tensor<2x3x50x40xf32>, tensor<2x3x50xf32>, tensor<2x3x50xf32>) {
  %K = tang.view %Kg by affine_map<(b, h, l, d) -> (b, h floordiv 3, l, d)> : tensor<2x1x70x20xf32> to tensor<2x3x70x20xf32>
  %V = tang.view %Vg by affine_map<(b, h, l, d) -> (b, h floordiv 3, l, d)> : tensor<2x1x70x40xf32> to tensor<2x3x70x40xf32>
  %c = arith.constant 0.25 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %O = tang.comprehension (%b, %h, %i, %d) reduce (%j) [2, 3, 50, 40, 70] monoid(online_softmax) : tensor<2x3x50x40xf32> {
    %dot = tang.comprehension reduce (%e) [20] monoid(add) : f32 {
      %q = tang.read %Q[%b, %h, %i, %e] : tensor<2x3x50x20xf32>
      %k = tang.read %K[%b, %h, %j, %e] : tensor<2x3x70x20xf32>
      %p = arith.mulf %q, %k : f32
      tang.yield %p : f32
    }
    %s = arith.mulf %dot, %c : f32
    %ii = tang.index %i : i32
    %jj = tang.index %j : i32
    %c20 = arith.constant 20 : i32
    %lim = arith.addi %ii, %c20 : i32
    %keep = arith.cmpi sle, %jj, %lim : i32
    %sm = arith.select %keep, %s, %ninf : f32
    %v = tang.read %V[%b, %h, %j, %d] : tensor<2x3x70x40xf32>
    tang.yield %sm, %v : f32, f32
  }
  %m, %l = tang.comprehension (%b, %h, %i) reduce (%j) [2, 3, 50, 70] monoid(softmax_norm) : tensor<2x3x50xf32>, tensor<2x3x50xf32> {
    %dot = tang.comprehension reduce (%e) [20] monoid(add) : f32 {
      %q = tang.read %Q[%b, %h, %i, %e] : tensor<2x3x50x20xf32>
      %k = tang.read %K[%b, %h, %j, %e] : tensor<2x3x70x20xf32>
      %p = arith.mulf %q, %k : f32
      tang.yield %p : f32
    }
    %s = arith.mulf %dot, %c : f32
    %ii = tang.index %i : i32
    %jj = tang.index %j : i32
    %c20 = arith.constant 20 : i32
    %lim = arith.addi %ii, %c20 : i32
    %keep = arith.cmpi sle, %jj, %lim : i32
    %sm = arith.select %keep, %s, %ninf : f32
    tang.yield %sm : f32
  }
  return %O, %m, %l : tensor<2x3x50x40xf32>, tensor<2x3x50xf32>, tensor<2x3x50xf32>
}
"""


# Causal attention as a user writes it (scores, max, sum, probabilities,
# product; fused into one online-softmax reduction by the pipelines), over
# 70 queries and keys (three key steps of 32, the last ragged) and head
# dim 40: tests differentiate it with --tang-grad, whose dQ, dK and dV the
# portable backends run as SIMT score kernels (SimtScoreKernel.cpp) next
# to the forward's flash kernel, which writes the softmax statistics.
# f16 storage computed in f32: a row reduction (workgroup memory on the
# portable backends) and a map of its result.
HALF_PROGRAM = """\
func.func @main(%x: tensor<5x40xf16>, %w: tensor<40xf16>) -> (tensor<5xf16>, tensor<5x40xf16>) {
  %y = tang.comprehension (%i) reduce (%j) [5, 40] monoid(add) : tensor<5xf16> {
    %v = tang.read %x[%i, %j] : tensor<5x40xf16>
    %c = tang.read %w[%j] : tensor<40xf16>
    %e = math.exp %v : f16
    %p = arith.mulf %e, %c : f16
    tang.yield %p : f16
  }
  %z = tang.comprehension (%i, %j) [5, 40] : tensor<5x40xf16> {
    %v = tang.read %x[%i, %j] : tensor<5x40xf16>
    %s = tang.read %y[%i] : tensor<5xf16>
    %q = arith.mulf %v, %s : f16
    tang.yield %q : f16
  }
  return %y, %z : tensor<5xf16>, tensor<5x40xf16>
}
"""


NAIVE_ATTENTION_PROGRAM = """\
func.func @main(%Q: tensor<2x3x70x40xf32>, %Kg: tensor<2x3x70x40xf32>, %Vg: tensor<2x3x70x40xf32>) -> tensor<2x3x70x40xf32> {
  %K = tang.view %Kg by affine_map<(b, h, l, d) -> (b, h floordiv 1, l, d)> : tensor<2x3x70x40xf32> to tensor<2x3x70x40xf32>
  %V = tang.view %Vg by affine_map<(b, h, l, d) -> (b, h floordiv 1, l, d)> : tensor<2x3x70x40xf32> to tensor<2x3x70x40xf32>
  %S = tang.comprehension (%b, %h, %i, %j) reduce (%d) [2, 3, 70, 70, 40] monoid(add) : tensor<2x3x70x70xf32> {
    %q = tang.read %Q[%b, %h, %i, %d] : tensor<2x3x70x40xf32>
    %k = tang.read %K[%b, %h, %j, %d] : tensor<2x3x70x40xf32>
    %qk = arith.mulf %q, %k : f32
    tang.yield %qk : f32
  }
  %Ss = tang.comprehension (%b, %h, %i, %j) [2, 3, 70, 70] : tensor<2x3x70x70xf32> {
    %s = tang.read %S[%b, %h, %i, %j] : tensor<2x3x70x70xf32>
    %c = arith.constant 1.5811388301e-01 : f32
    %s0 = arith.mulf %s, %c : f32
    %ii = tang.index %i : i32
    %jj = tang.index %j : i32
    %keep = arith.cmpi sle, %jj, %ii : i32
    %ninf = arith.constant 0xFF800000 : f32
    %sm = arith.select %keep, %s0, %ninf : f32
    tang.yield %sm : f32
  }
  %m = tang.comprehension (%b, %h, %i) reduce (%j) [2, 3, 70, 70] monoid(max) : tensor<2x3x70xf32> {
    %s = tang.read %Ss[%b, %h, %i, %j] : tensor<2x3x70x70xf32>
    tang.yield %s : f32
  }
  %l = tang.comprehension (%b, %h, %i) reduce (%j) [2, 3, 70, 70] monoid(add) : tensor<2x3x70xf32> {
    %s = tang.read %Ss[%b, %h, %i, %j] : tensor<2x3x70x70xf32>
    %mi = tang.read %m[%b, %h, %i] : tensor<2x3x70xf32>
    %z = arith.subf %s, %mi : f32
    %e = math.exp %z : f32
    tang.yield %e : f32
  }
  %P = tang.comprehension (%b, %h, %i, %j) [2, 3, 70, 70] : tensor<2x3x70x70xf32> {
    %s = tang.read %Ss[%b, %h, %i, %j] : tensor<2x3x70x70xf32>
    %mi = tang.read %m[%b, %h, %i] : tensor<2x3x70xf32>
    %li = tang.read %l[%b, %h, %i] : tensor<2x3x70xf32>
    %z = arith.subf %s, %mi : f32
    %e = math.exp %z : f32
    %p = arith.divf %e, %li : f32
    tang.yield %p : f32
  }
  %O = tang.comprehension (%b, %h, %i, %d) reduce (%j) [2, 3, 70, 40, 70] monoid(add) : tensor<2x3x70x40xf32> {
    %p = tang.read %P[%b, %h, %i, %j] : tensor<2x3x70x70xf32>
    %v = tang.read %V[%b, %h, %j, %d] : tensor<2x3x70x40xf32>
    %pv = arith.mulf %p, %v : f32
    tang.yield %pv : f32
  }
  return %O : tensor<2x3x70x40xf32>
}
"""


def check_attention_gradient(backend, tmp_path, tang_bin, pipeline, fmt,
                             host):
    """Causal attention and its gradient (--tang-grad): the forward's SIMT
    flash kernel with its statistics, dQ, dK and dV as SIMT score kernels
    (one launch each beside the row kernel of rowsum(dO O)); every output
    of both functions against the interpreter, the bound taking each
    element's Monte Carlo sensitivity (errors compound through the exp of
    each dot product)."""
    manifest = check_program(
        backend, gradient_program(tang_bin, NAIVE_ATTENTION_PROGRAM),
        tmp_path, tang_bin, pipeline, fmt, host, sensitivity=True)
    grad = next(f for f in manifest["functions"] if f["name"] == "main_grad")
    assert len(grad["launches"]) == 5, grad["launches"]


def gradient_program(tang_bin, text):
    """`text` with its gradient (tang-opt --tang-grad): main and
    main_grad."""
    r = run([tang_bin / "tang-opt", "-", "--tang-grad"], input=text)
    assert r.returncode == 0, r.stderr
    return r.stdout


# The same under a schedule naming the SIMT flash kernel's tiles (32 rows
# and 32 keys a block, the head step 16 by default: 8 rows and 1 key of
# scores a thread, where the default tiles take 64 keys, 2 a thread; a
# 70-key extent in three steps).
FLASH_PROGRAM_SCHEDULED = FLASH_PROGRAM.replace(
    "monoid(online_softmax) :",
    "monoid(online_softmax) attributes {schedule = #tang.schedule<tile = "
    "[1, 1, 32, 1, 32], mapping = [block_z, block_y, block_x, serial, "
    "serial], threads = [1, 1, 4, 1, 32], vector = 1, stages = 1, storage "
    "= f32, accumulate = f32, memory = [shared], kernel = flash>} :", 1)


# A row reduction under a monoid that is associative but not commutative
# (the affine maps h -> a h + b, composed in index order) over rows of 300
# (no multiple of a row kernel's threads): the portable row kernels'
# workgroup combine must keep index order, or the number differs. (The
# product A of 300 factors under 1 underflows f32: only h is returned.)
ORDERED_PROGRAM = """\
tang.monoid @affine_map : [f32, f32] identity [1.0 : f32, 0.0 : f32] {
^bb0(%a1: f32, %b1: f32, %a2: f32, %b2: f32):
  %a = arith.mulf %a1, %a2 : f32
  %ab = arith.mulf %a2, %b1 : f32
  %b = arith.addf %ab, %b2 : f32
  tang.yield %a, %b : f32, f32
}

func.func @main(%g: tensor<8x300xf32>, %x: tensor<8x300xf32>) -> tensor<8xf32> {
  %A, %h = tang.comprehension (%i) reduce (%k) [8, 300] monoid(@affine_map) : tensor<8xf32>, tensor<8xf32> {
    %a = tang.read %g[%i, %k] : tensor<8x300xf32>
    %b = tang.read %x[%i, %k] : tensor<8x300xf32>
    tang.yield %a, %b : f32, f32
  }
  return %h : tensor<8xf32>
}
"""


# Gathers with the clamp and zero policies: the seeded i32 inputs are in
# [1, 8], so rows 7 and 8 of the 6-row table are out of range for the
# clamped lookup, and -1, 6 and 7 for the shifted zero-policy one.
GATHER_PROGRAM = """\
func.func @main(%tok: tensor<24xi32>, %E: tensor<6x16xf32>) -> tensor<24x16xf32> {
  %y = tang.comprehension (%i, %d) [24, 16] : tensor<24x16xf32> {
    %k = tang.read %tok[%i] : tensor<24xi32>
    %row = arith.index_cast %k : i32 to index
    %a = tang.gather %E[symbol(%row), %d] clamp : tensor<6x16xf32>
    %b = tang.gather %E[symbol(%row) - 2, %d] zero : tensor<6x16xf32>
    %c = arith.constant 3.0 : f32
    %bc = arith.mulf %b, %c : f32
    %s = arith.addf %a, %bc : f32
    tang.yield %s : f32
  }
  return %y : tensor<24x16xf32>
}
"""


# Scatters: a scatter-add whose rows collide (24 points into 6 rows, so
# each thread of a column sums its rows in row-major order) and drop the
# out-of-range ones (rows 6, 7 and 8 of the seeded [1, 8] tokens), then an
# insert into its result (the later point wins; -1 and 6 are dropped). Both
# results are returned: the second scatter writes into a copy of the first.
SCATTER_PROGRAM = """\
func.func @main(%tok: tensor<24xi32>, %dY: tensor<24x16xf32>, %base: tensor<6x16xf32>) -> (tensor<6x16xf32>, tensor<6x16xf32>) {
  %s = tang.scatter (%i, %d) [24, 16] into %base monoid(add) : tensor<6x16xf32> {
    %k = tang.read %tok[%i] : tensor<24xi32>
    %row = arith.index_cast %k : i32 to index
    %g = tang.read %dY[%i, %d] : tensor<24x16xf32>
    tang.put %g at [symbol(%row), %d] drop : f32
  }
  %t = tang.scatter (%i, %d) [24, 16] into %s : tensor<6x16xf32> {
    %k = tang.read %tok[%i] : tensor<24xi32>
    %row = arith.index_cast %k : i32 to index
    %g = tang.read %dY[%i, %d] : tensor<24x16xf32>
    %two = arith.constant 2.0 : f32
    %g2 = arith.mulf %g, %two : f32
    tang.put %g2 at [symbol(%row) - 2, %d] drop : f32
  }
  return %s, %t : tensor<6x16xf32>, tensor<6x16xf32>
}
"""


# Tensor constants (the weights torch-mlir inlines): a dense matrix, a
# splat, an i32 table, and a constant returned as it is; the bundle carries
# their contents (docs/Bundle.md, "Constants").
CONSTANT_PROGRAM = """\
func.func @main(%x: tensor<4x3xf32>) -> (tensor<4x2xf32>, tensor<2xf32>, tensor<3xi32>) {
  %W = arith.constant dense<[[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]]> : tensor<3x2xf32>
  %b = arith.constant dense<0.125> : tensor<2xf32>
  %perm = arith.constant dense<[2, 0, 1]> : tensor<3xi32>
  %y = tang.comprehension (%i, %j) reduce (%k) [4, 2, 3] monoid(add) : tensor<4x2xf32> {
    %p = tang.read %perm[%k] : tensor<3xi32>
    %row = arith.index_cast %p : i32 to index
    %xv = tang.gather %x[%i, symbol(%row)] clamp : tensor<4x3xf32>
    %w = tang.read %W[%k, %j] : tensor<3x2xf32>
    %c = tang.read %b[%j] : tensor<2xf32>
    %m = arith.mulf %xv, %w : f32
    %s = arith.addf %m, %c : f32
    tang.yield %s : f32
  }
  return %y, %b, %perm : tensor<4x2xf32>, tensor<2xf32>, tensor<3xi32>
}
"""


# A size used in a body (a causal mask against a runtime position) in a
# row reduction of static extents: every kernel shape reads the sizes.
SIZE_IN_BODY_PROGRAM = """\
// sizes: arg1=0
// sizes: arg1=40
func.func @main(%S: tensor<8x64xf32>, %pos: index) -> tensor<8xf32> {
  %m = tang.comprehension (%i) reduce (%j) [8, 64] monoid(max) : tensor<8xf32> {
    %s = tang.read %S[%i, %j] : tensor<8x64xf32>
    %jj = tang.index %j : i32
    %p = arith.index_cast %pos : index to i32
    %keep = arith.cmpi sle, %jj, %p : i32
    %ninf = arith.constant 0xFF800000 : f32
    %v = arith.select %keep, %s, %ninf : f32
    tang.yield %v : f32
  }
  return %m : tensor<8xf32>
}
"""


# Contractions the matrix-unit kernels take: [k, n] and [n, k] right
# operands, a batch index, operand views with offsets (a column block of a
# wider tensor).
MATRIX_PROGRAMS = {
    "kn": """\
func.func @main(%A: tensor<32x64xf32>, %B: tensor<64x48xf32>) -> tensor<32x48xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [32, 48, 64] monoid(add) : tensor<32x48xf32> {
    %a = tang.read %A[%i, %k] : tensor<32x64xf32>
    %b = tang.read %B[%k, %j] : tensor<64x48xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<32x48xf32>
}
""",
    "batched_nk": """\
func.func @main(%A: tensor<3x32x64xf32>, %B: tensor<3x48x64xf32>) -> tensor<3x32x48xf32> {
  %C = tang.comprehension (%b, %i, %j) reduce (%k) [3, 32, 48, 64] monoid(add) : tensor<3x32x48xf32> {
    %a = tang.read %A[%b, %i, %k] : tensor<3x32x64xf32>
    %w = tang.read %B[%b, %j, %k] : tensor<3x48x64xf32>
    %p = arith.mulf %a, %w : f32
    tang.yield %p : f32
  }
  return %C : tensor<3x32x48xf32>
}
""",
    # Register blocking from the schedule: each subgroup 32 x 48 of the
    # result (4 x 6 tiles of 8, 2 x 3 of 16), B read transposed, a batch.
    "blocked_batched_nk": """\
func.func @main(%A: tensor<2x64x48xf32>, %B: tensor<2x96x48xf32>) -> tensor<2x64x96xf32> {
  %C = tang.comprehension (%b, %i, %j) reduce (%k) [2, 64, 96, 48] monoid(add) attributes {schedule = #tang.schedule<tile = [1, 32, 48, 16], mapping = [block_z, block_y, block_x, serial], threads = [1, 1, 32, 1], vector = 1, stages = 1, storage = f32, accumulate = f32, memory = [global], kernel = subgroup_mma>} : tensor<2x64x96xf32> {
    %a = tang.read %A[%b, %i, %k] : tensor<2x64x48xf32>
    %w = tang.read %B[%b, %j, %k] : tensor<2x96x48xf32>
    %p = arith.mulf %a, %w : f32
    tang.yield %p : f32
  }
  return %C : tensor<2x64x96xf32>
}
""",
    # An epilogue (a bias and tanh around the nested sum): the tiles go
    # through workgroup memory, each thread applying it to its elements.
    "epilogue": """\
func.func @main(%A: tensor<64x32xf32>, %B: tensor<32x48xf32>, %bias: tensor<48xf32>) -> tensor<64x48xf32> {
  %C = tang.comprehension (%i, %j) [64, 48] : tensor<64x48xf32> {
    %s = tang.comprehension reduce (%k) [32] monoid(add) : f32 {
      %a = tang.read %A[%i, %k] : tensor<64x32xf32>
      %b = tang.read %B[%k, %j] : tensor<32x48xf32>
      %p = arith.mulf %a, %b : f32
      tang.yield %p : f32
    }
    %c = tang.read %bias[%j] : tensor<48xf32>
    %t = arith.addf %s, %c : f32
    %g = math.tanh %t : f32
    tang.yield %g : f32
  }
  return %C : tensor<64x48xf32>
}
""",
    "heads": """\
func.func @main(%Q: tensor<16x64xf32>, %K: tensor<32x64xf32>) -> tensor<2x16x32xf32> {
  %Qh = tang.view %Q by affine_map<(h, i, k) -> (i, h * 32 + k)> : tensor<16x64xf32> to tensor<2x16x32xf32>
  %Kh = tang.view %K by affine_map<(h, j, k) -> (j, h * 32 + k)> : tensor<32x64xf32> to tensor<2x32x32xf32>
  %S = tang.comprehension (%h, %i, %j) reduce (%k) [2, 16, 32, 32] monoid(add) : tensor<2x16x32xf32> {
    %q = tang.read %Qh[%h, %i, %k] : tensor<2x16x32xf32>
    %c = tang.read %Kh[%h, %j, %k] : tensor<2x32x32xf32>
    %p = arith.mulf %q, %c : f32
    tang.yield %p : f32
  }
  return %S : tensor<2x16x32xf32>
}
""",
}


# Every arith.cmpf predicate; output #0 of CMPF_PROGRAM sums 2^k over the
# predicates k that hold.
CMPF_PREDICATES = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                   "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true"]
# The operands: every pair of these, NaN and infinities included.
SPECIAL_VALUES = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5]


def _cmpf_program():
    n = len(SPECIAL_VALUES) ** 2
    t = f"tensor<{n}xf32>"
    body = []
    for k, p in enumerate(CMPF_PREDICATES):
        body += [f"    %c{k} = arith.cmpf {p}, %a, %b : f32",
                 f"    %w{k} = arith.constant {float(1 << k)} : f32",
                 f"    %s{k} = arith.select %c{k}, %w{k}, %zero : f32"]
    acc = "%s0"
    for k in range(1, len(CMPF_PREDICATES)):
        body.append(f"    %t{k} = arith.addf {acc}, %s{k} : f32")
        acc = f"%t{k}"
    reads = (f"    %a = tang.read %A[%i] : {t}\n"
             f"    %b = tang.read %B[%i] : {t}\n")
    return f"""\
// Each arith.cmpf predicate on every pair of NaN, +-inf, +-0 and finite
// values (output #0: bit k set when predicate k holds); IEEE sums and a
// select that pass the NaNs and infinities on (outputs #1, #2); maximumf and
// minimumf (NaN if either operand is), maxnumf and minnumf (the other
// operand) (#3 to #6).
func.func @main(%A: {t}, %B: {t}) -> ({t}, {t}, {t}, {t}, {t}, {t}, {t}) {{
  %bits = tang.comprehension (%i) [{n}] : {t} {{
{reads}    %zero = arith.constant 0.0 : f32
""" + "\n".join(body) + f"""
    tang.yield {acc} : f32
  }}
  %sum = tang.comprehension (%i) [{n}] : {t} {{
{reads}    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }}
  %pick = tang.comprehension (%i) [{n}] : {t} {{
{reads}    %lt = arith.cmpf ult, %a, %b : f32
    %m = arith.select %lt, %a, %b : f32
    tang.yield %m : f32
  }}
  %maximum = tang.comprehension (%i) [{n}] : {t} {{
{reads}    %m = arith.maximumf %a, %b : f32
    tang.yield %m : f32
  }}
  %minimum = tang.comprehension (%i) [{n}] : {t} {{
{reads}    %m = arith.minimumf %a, %b : f32
    tang.yield %m : f32
  }}
  %maxnum = tang.comprehension (%i) [{n}] : {t} {{
{reads}    %m = arith.maxnumf %a, %b : f32
    tang.yield %m : f32
  }}
  %minnum = tang.comprehension (%i) [{n}] : {t} {{
{reads}    %m = arith.minnumf %a, %b : f32
    tang.yield %m : f32
  }}
  return %bits, %sum, %pick, %maximum, %minimum, %maxnum, %minnum : {t}, {t}, {t}, {t}, {t}, {t}, {t}
}}
"""


CMPF_PROGRAM = _cmpf_program()
#: CMPF_PROGRAM's outputs.
OUTPUTS = 7


def check_special_values(backend, program, tmp_path, tang_bin, runner):
    """Runs @main of CMPF_PROGRAM (written at `program`) on every pair of
    SPECIAL_VALUES with tang-run and with `runner(name, input_paths,
    out_dir)`, and compares the outputs exactly: NaN where the interpreter
    has NaN, the same infinities, and for output #0 the predicates that
    differ, named with their operands."""
    v = np.array(SPECIAL_VALUES, np.float32)
    a, b = np.repeat(v, v.size), np.tile(v, v.size)
    inputs = [tmp_path / "a.npy", tmp_path / "b.npy"]
    np.save(inputs[0], a)
    np.save(inputs[1], b)
    ref_dir, out_dir = tmp_path / "ref", tmp_path / "out"
    r = run([tang_bin / "tang-run", program, f"--input={inputs[0]}",
             f"--input={inputs[1]}", f"--output-dir={ref_dir}"])
    assert r.returncode == 0, f"tang-run failed:\n{r.stderr}"
    r = runner("main", inputs, out_dir)
    assert r.returncode == 0, (
        f"[{backend}] the backend's host failed (exit {r.returncode}):\n"
        f"{r.stderr}")
    ref = [np.load(ref_dir / f"output_{k}.npy") for k in range(OUTPUTS)]
    out = [np.load(out_dir / f"output_{k}.npy") for k in range(OUTPUTS)]
    wrong = []
    for i in np.flatnonzero(out[0] != ref[0]):
        if not np.isfinite(out[0][i]):
            wrong.append(f"output #0 for ({a[i]}, {b[i]}) is {out[0][i]}")
            continue
        got, want = int(out[0][i]), int(ref[0][i])
        for k, p in enumerate(CMPF_PREDICATES):
            if (got ^ want) >> k & 1:
                wrong.append(f"cmpf {p}({a[i]}, {b[i]}) = {bool(got >> k & 1)}")
    assert not wrong, (f"[{backend}] {len(wrong)} wrong compares: "
                       + "; ".join(wrong))
    for k in range(1, OUTPUTS):
        bad = np.flatnonzero(~((out[k] == ref[k]) |
                               (np.isnan(out[k]) & np.isnan(ref[k]))))
        assert bad.size == 0, (
            f"[{backend}] output #{k}: " + "; ".join(
                f"({a[i]}, {b[i]}) -> {out[k][i]}, reference {ref[k][i]}"
                for i in bad))


# Floats computed from indices (`tang.index ... : f32`): the kernel form
# converts the index through an integer first.
INDEX_PROGRAM = """\
func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = tang.comprehension (%i, %j) [8, 16] : tensor<8x16xf32> {
    %v = tang.read %x[%i, %j] : tensor<8x16xf32>
    %f = tang.index [%i * 16 + %j] : f32
    %g = tang.index %j : f32
    %p = arith.mulf %v, %f : f32
    %s = arith.addf %p, %g : f32
    tang.yield %s : f32
  }
  return %y : tensor<8x16xf32>
}
"""


def check_size_errors(tang_bin, pipeline, fmt, run_host, tmp_path):
    """A runtime refuses, before anything runs and naming the size and its
    value, the sizes examples/kv_cache_decode.mlir cannot take: a missing
    index argument, a position past the cache, an --size naming no size
    argument, a malformed --size. `run_host(bundle, args)` runs the
    backend's host on the bundle with `args` (function, inputs, flags)."""
    example = pathlib.Path(__file__).resolve().parents[2] / "examples" / \
        "kv_cache_decode.mlir"
    bundle = tmp_path / "bundle"
    lower_example(tang_bin, example, pipeline, bundle, fmt)
    rng = np.random.default_rng(0)
    inputs = []
    for i, shape in enumerate([(64, 16), (64, 16), (16,), (16,), (16,)]):
        inputs.append(tmp_path / f"input_{i}.npy")
        np.save(inputs[-1], rng.uniform(-1, 1, shape).astype(np.float32))
    out = tmp_path / "out"
    cases = [
        ([], "argument #5 is a size (%arg5): give it with --size arg5=N"),
        (["--size", "arg5=64"],
         "the sizes break a requirement: coordinate #0 (d0), up to %arg5, "
         "stays below dimension 0 (64) only if %arg5 <= 63, but %arg5 = 64; "
         "nothing ran"),
        (["--size", "arg5=3", "--size", "arg9=1"],
         "--size arg9 names no size argument"),
        (["--size", "arg5"],
         "--size arg5: expected argK=N (the index argument #K), N >= 0"),
    ]
    for flags, message in cases:
        r = run_host(bundle, ["main", *inputs, *flags, "--out", out])
        assert r.returncode != 0, f"{flags}: expected a failure"
        assert message in r.stderr, f"{flags}: {r.stderr}"
        assert not list(out.glob("output_*.npy")), f"{flags}: wrote outputs"
    r = run_host(bundle, ["main", *inputs, "--size", "arg5=0", "--out", out])
    assert r.returncode == 0, r.stderr


def check_input_errors(tang_bin, pipeline, fmt, run_host, tmp_path,
                       runs=True, options=""):
    """A runtime given bad inputs or a damaged bundle says what is wrong
    and exits non-zero without writing any output: an input of a dtype
    the argument does not take, a Fortran-order array, a truncated .npy file, a missing input
    file, an invalid manifest, a missing kernel image. `run_host(bundle,
    args)` as in check_size_errors. examples/softmax.mlir: one f32
    input. Without `runs` (a host whose device is missing here) the kernel
    image is not checked and a good input must get past the input checks
    to the device (`options`: more pipeline options)."""
    example = pathlib.Path(__file__).resolve().parents[2] / "examples" / \
        "softmax.mlir"
    bundle = tmp_path / "bundle"
    manifest = lower_example(tang_bin, example, pipeline, bundle, fmt,
                             options)
    (arg,) = [a for a in manifest["functions"][0]["args"]
              if a["role"] == "input"]
    assert arg["dtype"] == "f32", arg
    good = np.random.default_rng(0).uniform(-1, 1, arg["shape"]).astype(
        np.float32)
    out = tmp_path / "out"

    def expect_error(what, args, *messages, on=bundle):
        r = run_host(on, ["main", *args, "--out", out])
        assert r.returncode != 0, f"{what}: expected a failure"
        text = r.stderr.lower()
        assert any(m.lower() in text for m in messages), (
            f"{what}: none of {messages} in:\n{r.stderr}")
        assert not list(out.glob("output_*.npy")), f"{what}: wrote outputs"

    # (Float arrays of other widths feed f32 buffers, converted, on some
    # hosts: runtime/common/Npy.cpp; integers nowhere.)
    wrong = tmp_path / "int32.npy"
    np.save(wrong, good.astype(np.int32))
    expect_error("an int32 input for an f32 argument", [wrong],
                 "cannot feed", "argument takes", "dtype '")
    fortran = tmp_path / "fortran.npy"
    np.save(fortran, np.asfortranarray(good))
    expect_error("a Fortran-order input", [fortran], "fortran")
    truncated = tmp_path / "truncated.npy"
    np.save(truncated, good)
    truncated.write_bytes(truncated.read_bytes()[:-100])
    expect_error("a truncated input", [truncated], "truncated", "short",
                 "bytes", "size")
    expect_error("a missing input", [tmp_path / "nope.npy"], "nope.npy")
    inputs = [tmp_path / "good.npy"]
    np.save(inputs[0], good)

    broken = tmp_path / "broken"
    shutil.copytree(bundle, broken)
    (broken / "manifest.json").write_text("{ \"functions\": [ ")
    expect_error("an invalid manifest", inputs, "manifest", on=broken)
    if not runs:
        # The inputs pass; the device is what is missing.
        expect_error("a good input without a device", inputs, "driver",
                     "device")
        return
    imageless = tmp_path / "imageless"
    shutil.copytree(bundle, imageless)
    (imageless / manifest["image"]).unlink()
    expect_error("a missing kernel image", inputs, manifest["image"],
                 "image", on=imageless)
    # And the same bundle and input run.
    r = run_host(bundle, ["main", *inputs, "--out", out])
    assert r.returncode == 0, r.stderr
    assert (out / "output_0.npy").is_file()


# A trap gather of token rows: the runtime checks the ids before a run
# (docs/Bundle.md, "Index checks").
TRAP_GATHER_PROGRAM = """\
func.func @main(%tok: tensor<5xi32>, %E: tensor<6x16xf32>) -> tensor<5x16xf32> {
  %y = tang.comprehension (%i, %d) [5, 16] : tensor<5x16xf32> {
    %k = tang.read %tok[%i] : tensor<5xi32>
    %row = arith.index_cast %k : i32 to index
    %a = tang.gather %E[symbol(%row), %d] : tensor<6x16xf32>
    tang.yield %a : f32
  }
  return %y : tensor<5x16xf32>
}
"""


def check_index_errors(tang_bin, pipeline, fmt, run_host, tmp_path):
    """A runtime runs TRAP_GATHER_PROGRAM's rows for ids inside the table
    and refuses, before anything runs and naming the element and its value,
    an id outside it (6, then -1). `run_host(bundle, args)` runs the
    backend's host on the bundle with `args` (function, inputs, flags)."""
    program = tmp_path / "trap_gather.mlir"
    program.write_text(TRAP_GATHER_PROGRAM)
    bundle = tmp_path / "bundle"
    manifest = lower_example(tang_bin, program, pipeline, bundle, fmt)
    assert manifest["functions"][0]["index_checks"][0]["bound"] == 6
    rng = np.random.default_rng(0)
    table = rng.uniform(0.5, 1.5, (6, 16)).astype(np.float32)
    np.save(tmp_path / "E.npy", table)
    out = tmp_path / "out"
    for ids, bad in (([0, 5, 3, 2, 1], None), ([0, 5, 6, 2, 1], (2, 6)),
                     ([-1, 5, 3, 2, 1], (0, -1))):
        np.save(tmp_path / "tok.npy", np.array(ids, np.int32))
        r = run_host(bundle, ["main", tmp_path / "tok.npy",
                              tmp_path / "E.npy", "--out", out])
        if bad is None:
            assert r.returncode == 0, r.stderr
            np.testing.assert_array_equal(np.load(out / "output_0.npy"),
                                          table[ids].astype(np.float64))
            for f in out.glob("output_*.npy"):
                f.unlink()
            continue
        assert r.returncode != 0, f"ids {ids}: expected a failure"
        message = (f"element {bad[0]} is {bad[1]}, outside [0, 6) for "
                   "coordinate #0 of the gather into tensor<6x16xf32>")
        assert message in r.stderr and "nothing ran" in r.stderr, r.stderr
        assert not list(out.glob("output_*.npy")), f"ids {ids}: wrote outputs"


def check_host_timing(runner, bundle, x, out, clock):
    """A host's --time N (tang-vk-run, tang-ocl-run, tang-wgpu-run):
    `runner(args)` runs the host on `bundle`'s function main with input `x`;
    the checked run's outputs, then N timed runs of the launches, their
    median, least and greatest in the hosts' shared format, from `clock`
    (a regular expression: how the host timed them); --time refuses
    counts outside 1..100000."""
    r = runner([bundle, "main", x, "--time", "3", "--out", out])
    assert r.returncode == 0, r.stderr
    m = re.search(r"time: median ([0-9.]+) ms, least ([0-9.]+), greatest "
                  r"([0-9.]+) over 3 runs \((" + clock + r"); buffers in "
                  r"(device-local|device|host) memory\)", r.stdout)
    assert m, r.stdout
    least, median, greatest = (float(m.group(k)) for k in (2, 1, 3))
    assert 0 < least <= median <= greatest
    assert (pathlib.Path(out) / "output_0.npy").is_file()
    for bad in ("0", "x", "-2", "100001"):
        r = runner([bundle, "main", x, "--time", bad])
        assert r.returncode == 1
        assert "--time needs a number of runs from 1 to 100000" in r.stderr
    return m.group(4)

