"""convert-linalg-to-tang on what upstream tosa-to-linalg produces.

Inputs/tosa holds, per program, a TOSA function (`NAME.tosa.mlir`) and the
linalg-on-tensors that upstream MLIR 22 lowers it to (`NAME.linalg.mlir`,
committed; regenerated here and compared when mlir-opt is installed, so it
stays a real output). Each linalg program is imported strictly (any
unsupported op fails the test) and run by the float64 interpreter on
random inputs, against NumPy written from the TOSA semantics, on every
element.

Run:  TANG_BIN=<build>/bin /usr/bin/python3 -m pytest -q test/Conversion/LinalgToTang
"""

import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
INPUTS = pathlib.Path(__file__).resolve().parent / "Inputs" / "tosa"
MLIR_OPT = pathlib.Path(os.environ.get("MLIR_OPT",
                                       "/usr/lib/llvm-22/bin/mlir-opt"))
PIPELINE = ("builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,"
            "tosa-to-arith,tosa-to-tensor),canonicalize)")


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def conv2d_nhwc(x, w, b, pad):
    """TOSA conv2d: x NHWC, w OHWI (FHWC), zero padding, stride 1."""
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    n, h, wd, _ = x.shape
    o, kh, kw, _ = w.shape
    y = np.zeros((n, h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1, o))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, i:i + y.shape[1], j:j + y.shape[2], :]
            y += np.einsum("nhwc,oc->nhwo", patch, w[:, i, j, :])
    return y + b


def silu_mlp(x, w1, b1, w2, b2):
    h = x @ w1 + b1
    return (h / (1 + np.exp(-h))) @ w2 + b2


def cross_entropy(x, t):
    m = x.max(axis=1, keepdims=True)
    lse = np.log(np.exp(x - m).sum(axis=1, keepdims=True)) + m
    return np.array([np.mean(lse[:, 0] - x[np.arange(len(t)), t])])


# name -> (input makers, NumPy reference)
PROGRAMS = {
    "linear": ([(1, 4, 8), (1, 8, 6), (1, 1, 6)],
               lambda x, w, b: x @ w + b),
    "mlp": ([(1, 4, 8), (1, 8, 16), (1, 1, 16), (1, 16, 8), (1, 1, 8)],
            silu_mlp),
    "softmax": ([(4, 10)], lambda x: softmax(x, 1)),
    "conv": ([(1, 8, 8, 3), (4, 3, 3, 3), (4,)],
             lambda x, w, b: conv2d_nhwc(x, w, b, 1)),
    "attention": ([(1, 8, 16)] * 3,
                  lambda q, k, v: softmax(q @ k.transpose(0, 2, 1) * 0.25, 2)
                  @ v),
    "embedding": ([(1, 32, 8), ("ids", (1, 5), 32)],
                  lambda table, ids: table[0][ids[0]][None]),
    "cross_entropy": ([(4, 10), ("ids", (4,), 10)], cross_entropy),
}


def run(args, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True,
                          text=True, timeout=300, **kwargs)


def make_inputs(name, rng):
    values = []
    for spec in PROGRAMS[name][0]:
        if spec[0] == "ids":
            _, shape, bound = spec
            values.append(rng.integers(0, bound, shape).astype(np.int32))
        else:
            values.append(rng.uniform(-1, 1, spec).astype(np.float32)
                          .astype(np.float64))
    return values


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_linalg_is_upstream_output(name):
    if not MLIR_OPT.exists():
        pytest.skip(f"backend mlir-opt: {MLIR_OPT} is not installed")
    r = run([MLIR_OPT, INPUTS / f"{name}.tosa.mlir",
             f"--pass-pipeline={PIPELINE}"])
    assert r.returncode == 0, r.stderr
    committed = [line for line in
                 (INPUTS / f"{name}.linalg.mlir").read_text().splitlines()
                 if not line.startswith("//")]
    assert r.stdout.splitlines() == committed, (
        f"{name}.linalg.mlir is not what tosa-to-linalg gives today: "
        "regenerate it with the command in its header")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_tosa_program_imports_and_matches_numpy(name, tmp_path):
    program = tmp_path / f"{name}.tang.mlir"
    r = run([TANG_BIN / "tang-opt", INPUTS / f"{name}.linalg.mlir",
             "--convert-linalg-to-tang=strict=1", "-o", program])
    assert r.returncode == 0, r.stderr
    text = program.read_text()
    assert "linalg." not in text and "tensor.pad" not in text, text
    rng = np.random.default_rng(sum(map(ord, name)))
    xs = make_inputs(name, rng)
    paths = []
    for i, x in enumerate(xs):
        p = tmp_path / f"x{i}.npy"
        np.save(p, x.astype(np.float32) if x.dtype.kind == "f" else x)
        paths.append(p)
    out = tmp_path / "out"
    r = run([TANG_BIN / "tang-run", program, *[f"--input={p}" for p in paths],
             f"--output-dir={out}"])
    assert r.returncode == 0, r.stderr
    got = np.load(out / "output_0.npy")
    want = PROGRAMS[name][1](*xs)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.all(np.isfinite(got))
    # The interpreter computes in float64 from the same float32 inputs;
    # the output file is float32: half an ulp of float32 apart.
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-7)
