"""The precision emulator (`tang-run --precision=schedule`,
`--precision-report`, `--precision-budget`; docs/Tuning.md).

The emulator runs a scheduled program with the roundings its kernels make.
Checked here against independent NumPy float32 models, bit for bit:
- a row sum accumulated in order (a thread per row) and strided over 256
  threads in runs of 4 (a row kernel) combined as a warp's butterfly: each
  order's float32 result exactly, and the two differ;
- a reduction nested in a row kernel strided by the kernel's threads;
- a bf16 GEMM: inputs and output rounded to bf16, f32 accumulation in k
  order, the error against float64 within bf16's unit roundoff;
- tf32 operands on tensor cores: the error of an f32 GEMM is tf32's, not
  f32's;
and the budget: catastrophic cancellation (f32 accumulation of 1e8 + 1 -
1e8) and an f32 overflow that float64 does not have are past it (non-zero
exit, a message naming the output), an ordinary reduction within it. The
float64 run (`--precision=exact`, the default) is unchanged.

Run:  TANG_BIN=<build>/bin /usr/bin/python3 -m pytest -q \\
      test/Interpreter/test_precision.py
"""

import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))


def run(args, check=True):
    r = subprocess.run([str(TANG_BIN / args[0]), *map(str, args[1:])],
                       capture_output=True, text=True, timeout=300)
    if check and r.returncode != 0:
        raise AssertionError(f"{args} failed:\n{r.stdout}\n{r.stderr}")
    return r


def tang_run(tmp, text, inputs, *flags, check=True):
    prog = tmp / "p.mlir"
    prog.write_text(text)
    out = tmp / "out"
    args = ["tang-run", prog, "--output-dir", out, *flags]
    for i, a in enumerate(inputs):
        path = tmp / f"in{i}.npy"
        np.save(path, a)
        args += ["--input", path]
    r = run(args, check=check)
    outs = sorted(out.glob("output_*.npy")) if r.returncode == 0 else []
    return r, [np.load(p) for p in outs]


def f32_sequential(values):
    acc = np.float32(0)
    for v in values.astype(np.float32):
        acc = np.float32(acc + v)
    return acc


def f32_strided(values, threads, vector):
    """Thread t takes runs of `vector` at t * vector, t * vector + threads *
    vector, ...; then partial p takes p + half, halving (the butterfly)."""
    lanes = [np.float32(0)] * threads
    for q, v in enumerate(values.astype(np.float32)):
        p = (q // vector) % threads
        lanes[p] = np.float32(lanes[p] + v)
    half = threads // 2
    while half >= 1:
        for p in range(half):
            lanes[p] = np.float32(lanes[p] + lanes[p + half])
        half //= 2
    return lanes[0]


def row_sum(rows, cols, schedule):
    attrs = f" attributes {{schedule = {schedule}}}" if schedule else ""
    return f"""
func.func @main(%X: tensor<{rows}x{cols}xf32>) -> tensor<{rows}xf32> {{
  %s = tang.comprehension (%i) reduce (%j) [{rows}, {cols}] monoid(add){attrs} : tensor<{rows}xf32> {{
    %x = tang.read %X[%i, %j] : tensor<{rows}x{cols}xf32>
    tang.yield %x : f32
  }}
  return %s : tensor<{rows}xf32>
}}
"""


SEQUENTIAL = ("#tang.schedule<tile = [1, 4096], mapping = [block_x, serial], "
              "threads = [1, 1], vector = 1, stages = 1, accumulate = f32, "
              "memory = [global]>")
ROW_KERNEL = ("#tang.schedule<tile = [1, 4096], mapping = [block_x, serial], "
              "threads = [1, 256], vector = 4, stages = 1, accumulate = f32, "
              "memory = [global], kernel = simt>")


def wide_values(rng, shape):
    """Values of widely different magnitudes: the order of their sum
    shows in float32."""
    return (rng.standard_normal(shape) *
            np.exp2(rng.integers(-12, 12, shape))).astype(np.float32)


def test_reduction_orders_match_float32_models(tmp_path):
    rng = np.random.default_rng(7)
    x = wide_values(rng, (3, 4096))
    _, [seq] = tang_run(tmp_path, row_sum(3, 4096, SEQUENTIAL), [x],
                        "--precision=schedule")
    _, [strided] = tang_run(tmp_path, row_sum(3, 4096, ROW_KERNEL), [x],
                            "--precision=schedule")
    _, [exact] = tang_run(tmp_path, row_sum(3, 4096, ROW_KERNEL), [x])
    for r in range(3):
        assert seq[r] == f32_sequential(x[r])
        assert strided[r] == f32_strided(x[r], 256, 4)
    assert not np.array_equal(seq, strided)
    # The float64 run ignores the schedule: the exact sum.
    np.testing.assert_allclose(exact, x.astype(np.float64).sum(1),
                               rtol=1e-12)


def test_nested_reduction_in_a_row_kernel(tmp_path):
    """Fusion nests a row's reduction in the map that uses it: the row
    kernel's threads stride it."""
    text = """
func.func @main(%X: tensor<2x1024xf32>) -> tensor<2x1024xf32> {
  %y = tang.comprehension (%i, %j) [2, 1024] attributes {schedule = #tang.schedule<tile = [1, 1024], mapping = [block_x, serial], threads = [1, 128], vector = 2, stages = 1, accumulate = f32, memory = [global], kernel = simt>} : tensor<2x1024xf32> {
    %s = tang.comprehension reduce (%k) [1024] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<2x1024xf32>
      tang.yield %x : f32
    }
    %x = tang.read %X[%i, %j] : tensor<2x1024xf32>
    %d = arith.subf %x, %s : f32
    tang.yield %d : f32
  }
  return %y : tensor<2x1024xf32>
}
"""
    rng = np.random.default_rng(3)
    x = wide_values(rng, (2, 1024))
    _, [y] = tang_run(tmp_path, text, [x], "--precision=schedule")
    for r in range(2):
        s = f32_strided(x[r], 128, 2)
        np.testing.assert_array_equal(y[r], (x[r] - s).astype(np.float32))


def bf16(a):
    b = np.asarray(a, np.float32).copy().view(np.uint32)
    b += 0x7FFF + ((b >> 16) & 1)
    b &= 0xFFFF0000
    return b.view(np.float32)


def gemm(m, n, k, dtype):
    return f"""
func.func @main(%A: tensor<{m}x{k}x{dtype}>, %B: tensor<{k}x{n}x{dtype}>) -> tensor<{m}x{n}x{dtype}> {{
  %C = tang.comprehension (%i, %j) reduce (%k) [{m}, {n}, {k}] monoid(add) : tensor<{m}x{n}x{dtype}> {{
    %a = tang.read %A[%i, %k] : tensor<{m}x{k}x{dtype}>
    %b = tang.read %B[%k, %j] : tensor<{k}x{n}x{dtype}>
    %p = arith.mulf %a, %b : {dtype}
    tang.yield %p : {dtype}
  }}
  return %C : tensor<{m}x{n}x{dtype}>
}}
"""


def scheduled(tmp, text, options):
    src = tmp / "unscheduled.mlir"
    src.write_text(text)
    r = run(["tang-opt", src, "--tang-attach-target",
             f"--tang-schedule={options}"])
    return r.stdout


REPORT = re.compile(r"largest error (\S+) = (\S+) of its largest element, "
                    r"RMS (\S+) of its RMS")


def report(r):
    [(err, rel, rms)] = REPORT.findall(r.stdout)
    return float(rel), float(rms)


def test_bf16_gemm(tmp_path):
    rng = np.random.default_rng(11)
    a = bf16(rng.standard_normal((48, 512)))
    b = bf16(rng.standard_normal((512, 40)))
    text = scheduled(tmp_path, gemm(48, 40, 512, "bf16"),
                     "tensor-cores=wgmma")
    assert "kernel = contraction" in text
    r, [c] = tang_run(tmp_path, text, [a, b], "--precision-report")
    rel, rms = report(r)
    # bf16's unit roundoff is 2^-8; f32 accumulation over 512 adds little.
    assert 0 < rel <= 2.0 ** -8 * 1.05 and 0 < rms < 2.0 ** -8
    # Sequential f32 accumulation in k order, then bf16.
    ref = np.zeros((48, 40), np.float32)
    for kk in range(512):
        ref = (ref + (a[:, kk:kk + 1].astype(np.float32) *
                      b[kk:kk + 1, :].astype(np.float32))).astype(np.float32)
    np.testing.assert_array_equal(c, bf16(ref))


def test_tf32_operands(tmp_path):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((32, 256)).astype(np.float32)
    b = rng.standard_normal((256, 32)).astype(np.float32)
    errors = {}
    for name, options in (("tf32", "tensor-cores=wgmma tf32=true"),
                          ("f32", "tensor-cores=none")):
        text = scheduled(tmp_path, gemm(32, 32, 256, "f32"), options)
        r, _ = tang_run(tmp_path, text, [a, b], "--precision-report")
        errors[name] = report(r)[1]
    # On tensor cores (mma.sync: wgmma's tf32 takes B contiguous in k).
    assert "kernel = contraction, mma = mma_sync" in scheduled(
        tmp_path, gemm(32, 32, 256, "f32"), "tensor-cores=wgmma tf32=true")
    # tf32 keeps 10 mantissa bits (2^-11 relative), f32 23.
    assert 1e-5 < errors["tf32"] < 1e-2
    assert errors["f32"] < 1e-6
    assert errors["tf32"] > 100 * errors["f32"]


def test_budget(tmp_path):
    # Catastrophic cancellation: 1e8 + 1 + 1 + ... - 1e8 in f32 order.
    x = np.ones((1, 4096), np.float32)
    x[0, 0], x[0, -1] = 1e8, -1e8
    r, _ = tang_run(tmp_path, row_sum(1, 4096, SEQUENTIAL), [x],
                    "--precision-budget=0.01", check=False)
    assert r.returncode != 0
    assert "output #0 is past the precision budget 0.01" in r.stderr
    # An ordinary sum is within it.
    rng = np.random.default_rng(1)
    r, _ = tang_run(tmp_path, row_sum(1, 4096, SEQUENTIAL),
                    [rng.standard_normal((1, 4096)).astype(np.float32)],
                    "--precision-budget=0.01")
    assert report(r)[0] < 1e-5
    # Range: exp(100) is finite in float64, inf in f32.
    text = """
func.func @main(%X: tensor<4xf32>) -> tensor<4xf32> {
  %y = tang.comprehension (%i) [4] : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    %e = math.exp %x : f32
    tang.yield %e : f32
  }
  return %y : tensor<4xf32>
}
"""
    r, _ = tang_run(tmp_path, text, [np.array([1, 2, 100, 3], np.float32)],
                    "--precision-budget=0.5", check=False)
    assert r.returncode != 0
    assert "1 of 4 elements with NaN or infinity unlike float64" in r.stdout
    assert "elements' NaN or infinity differ from float64" in r.stderr


#: A sum minus the same sum computed again: exactly 0 in float64 (the same
#: operations in the same order), never quite 0 in a kernel that computes
#: the two in different orders -- attention's gradient subtracts
#: rowsum(dO O) from dO V^T so.
CANCELLING = """
func.func @main(%X: tensor<8x256xf32>, %Y: tensor<8x256xf32>)
    -> (tensor<8xf32>, tensor<8xf32>) {
  %a = tang.comprehension (%i) reduce (%j) [8, 256] monoid(add)
      : tensor<8xf32> {
    %x = tang.read %X[%i, %j] : tensor<8x256xf32>
    %y = tang.read %Y[%i, %j] : tensor<8x256xf32>
    %p = arith.mulf %x, %y : f32
    tang.yield %p : f32
  }
  %d = tang.comprehension (%i) [8] : tensor<8xf32> {
    %s = tang.comprehension reduce (%j) [256] monoid(add) : f32 {
      %x = tang.read %X[%i, %j] : tensor<8x256xf32>
      %y = tang.read %Y[%i, %j] : tensor<8x256xf32>
      %p = arith.mulf %x, %y : f32
      tang.yield %p : f32
    }
    %r = tang.read %a[%i] : tensor<8xf32>
    %z = arith.subf %s, %r : f32
    tang.yield %z : f32
  }
  %m = tang.comprehension (%i) reduce (%j) [8, 256] monoid(max)
      : tensor<8xf32> {
    %x = tang.read %X[%i, %j] : tensor<8x256xf32>
    %n = arith.negf %x : f32
    tang.yield %n : f32
  }
  return %d, %m : tensor<8xf32>, tensor<8xf32>
}
"""


def test_perturbed_arithmetic(tmp_path):
    """`--precision=perturbed` (Monte Carlo arithmetic): each rounding
    result moved by a random fraction of f32's unit roundoff. An output
    that cancels exactly in float64 moves by about the rounding of the
    terms (what a kernel summing in another order leaves, and what
    scripts/prepare-gpu-check.py's sensitivity must see); exact
    operations (max, negation, reads) move nothing; a seed gives the same
    bits every run, another seed other bits."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (8, 256)).astype(np.float32)
    y = rng.uniform(-1, 1, (8, 256)).astype(np.float32)
    _, (d, m) = tang_run(tmp_path, CANCELLING, [x, y])
    assert np.all(d == 0)
    r, (d1, m1) = tang_run(tmp_path, CANCELLING, [x, y],
                           "--precision=perturbed", "--perturb-seed=7")
    assert "float64 with random rounding errors (seed 7)" in r.stdout
    # The max of negations rounds nothing: unmoved, but for the store's
    # rounding (at most f32's unit roundoff).
    assert np.all(np.abs(m1.astype(np.float64) - m) <= 2.0 ** -24 * np.abs(m))
    terms = np.abs(x.astype(np.float64) * y).sum(axis=1)
    moved = np.abs(d1.astype(np.float64))
    # Each of the 2 x 256 products and sums moved by at most u of its
    # partial sum's magnitude: a bound by the terms' sum, and well above 0.
    assert np.all(moved <= 2 * 256 * 2.0 ** -24 * terms)
    assert np.all(moved > 0) and np.median(moved / terms) > 2.0 ** -24 / 16
    _, (d2, _) = tang_run(tmp_path, CANCELLING, [x, y],
                          "--precision=perturbed", "--perturb-seed=7")
    assert d2.tobytes() == d1.tobytes()
    _, (d3, _) = tang_run(tmp_path, CANCELLING, [x, y],
                          "--precision=perturbed", "--perturb-seed=8")
    assert d3.tobytes() != d1.tobytes()
    r, _ = tang_run(tmp_path, CANCELLING, [x, y], "--precision=perturbed",
                    "--precision-report", check=False)
    assert r.returncode != 0 and "does not take --precision=perturbed" in \
        r.stderr
