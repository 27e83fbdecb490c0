"""The benchmark's program templates (bench/prepare_gemm.py), at their small
sizes: each against its NumPy float64 reference through the interpreter, and
each lowered for the H200 with every contraction on the tensor-core paths
(no "not on tensor cores" / "not a flash-attention kernel" remark; wgmma for
sm_90a, mma.sync for sm_80), so that a change that silently sends the
benchmarked shapes to the plain kernels fails here, not on the GPU.

Run:  TANG_BIN=<build>/bin /usr/bin/python3 -m pytest -q test/Examples
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("TANG_BIN", REPO / "build" / "bin"))
sys.path.insert(0, str(REPO / "bench"))
import prepare_gemm as pg  # noqa: E402

pg.TANG_RUN = BIN / "tang-run"
pg.TANG_OPT = BIN / "tang-opt"

#: (kind, chip) pairs that take the plain kernels: A^T has no mma.sync path.
PLAIN = {("matmul_tn", "sm_80")}

HAS_LIBDEVICE = any(
    (Path(p) / "nvvm" / "libdevice").exists()
    for p in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"))


@pytest.mark.parametrize("kind", sorted(pg.KINDS))
def test_template_matches_numpy(kind):
    err = pg.check_small(kind, np.random.default_rng(7))
    # Constants are rounded to f32 or bf16 in the programs (the references
    # round the attention scale the same way); otherwise float64 throughout.
    assert err <= 1e-6, f"{kind}: rel err {err:.3e}"


@pytest.mark.skipif(not HAS_LIBDEVICE,
                    reason="backend cuda: the CUDA toolkit's libdevice is not installed")
@pytest.mark.parametrize("chip,instruction", [("sm_90a", "wgmma.mma_async"),
                                              ("sm_80", "mma.sync.aligned")])
@pytest.mark.parametrize("kind", sorted(pg.KINDS))
def test_template_on_tensor_cores(kind, chip, instruction):
    spec = pg.KINDS[kind]
    with tempfile.TemporaryDirectory(prefix="tang-tc-") as d:
        program = Path(d) / "p.mlir"
        program.write_text(spec["program"](**spec["small"]))
        r = subprocess.run(
            [str(BIN / "tang-opt"), str(program),
             f"--tang-lower-cuda={spec.get('options', '')}"
             f"fuse={spec.get('fuse', 1)} chip={chip} "
             f"features=+ptx80 bundle={d}/b", "-o", "/dev/null"],
            capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        ptx = (Path(d) / "b" / "tang_kernels.ptx").read_text()
        if (kind, chip) in PLAIN:
            # Not a tensor-core shape on this chip: said, and plain code.
            assert "not on tensor cores" in r.stderr, r.stderr
            assert instruction not in ptx
            return
        assert "remark" not in r.stderr, r.stderr
        if spec.get("dtype") == "f32":
            # tf32: wgmma on sm_90a when both operands are contiguous in k,
            # mma.sync otherwise.
            instruction = (
                "k8.f32.tf32.tf32" if (chip, kind) == ("sm_90a",
                                                       "matmul_nt_tf32")
                else "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
        assert instruction in ptx


def lower_training_step(forward_text, prepare, options):
    """A training bench's module (bench/<prepare>.py's training_program of
    `forward_text`) lowered by `--tang-lower-cuda=<options>` with no remark:
    (launches per function, PTX)."""
    sys.path.insert(0, str(REPO / "bench"))
    import prepare_attention_grad as pag
    pag.TANG_OPT = BIN / "tang-opt"
    module = __import__(prepare)
    with tempfile.TemporaryDirectory(prefix="tang-train-") as d:
        forward = Path(d) / "forward.mlir"
        forward.write_text(forward_text)
        program = Path(d) / "train.mlir"
        program.write_text(module.training_program(forward))
        r = subprocess.run(
            [str(BIN / "tang-opt"), str(program),
             f"--tang-lower-cuda={options} features=+ptx80 bundle={d}/b",
             "-o", "/dev/null"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "remark" not in r.stderr, r.stderr
        manifest = json.loads((Path(d) / "b" / "manifest.json").read_text())
        return ({f["name"]: len(f["launches"])
                 for f in manifest["functions"]},
                (Path(d) / "b" / "tang_kernels.ptx").read_text())


@pytest.mark.skipif(not HAS_LIBDEVICE,
                    reason="backend cuda: the CUDA toolkit's libdevice is not installed")
@pytest.mark.parametrize("chip,instruction", [("sm_90a", "wgmma.mma_async"),
                                              ("sm_80", "mma.sync.aligned")])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_training_step_on_tensor_cores(causal, chip, instruction):
    """bench/prepare_attention_grad.py's program: the split gradient of the
    attention template lowers to one forward kernel (the flash kernel, which
    writes the softmax statistics) and three backward kernels (D, dQ, dK
    with dV), every sum over keys on tensor cores, no remark."""
    launches, ptx = lower_training_step(
        pg.attention_program(1, 2, 72, 64, causal), "prepare_attention_grad",
        f"fuse=1 chip={chip}")
    assert launches == {"main_fwd": 1, "main_bwd": 3}, launches
    assert instruction in ptx


@pytest.mark.skipif(not HAS_LIBDEVICE,
                    reason="backend cuda: the CUDA toolkit's libdevice is not installed")
def test_block_training_step_on_tensor_cores():
    """bench/prepare_block_grad.py's program: the split gradient of the
    transformer block (concatenated q/k/v and gate/up weights, heads read as
    column offsets, a reshape view) lowers for sm_90a with every product on
    tensor cores (the weight gradients' sums over batch and length as one
    index, the attention's gradients as score kernels) and no remark."""
    launches, ptx = lower_training_step(
        pg.block_program(2, 64, 128, 2, 256), "prepare_block_grad",
        "fuse=0 chip=sm_90a")
    assert launches == {"main_fwd": 12, "main_bwd": 26}, launches
    # Entries holding wgmma: the 4 forward GEMMs and the flash kernel; the
    # 8 backward GEMMs (4 of them weight gradients), dQ and dK with dV.
    kernels = ptx.split(".entry")[1:]
    assert sum("wgmma.mma_async" in k for k in kernels) == 15, \
        sum("wgmma.mma_async" in k for k in kernels)
