"""tang.fx, the torch.compile backend's converter, without PyTorch: the aten
graph AOT autograd gave for a Llama-style block on the H200
(bench/fx_capture.py: tang.fx.describe of it, its inputs in placeholder
order and PyTorch's eager float32 output, in Inputs/) converted to a tang
program and run by the interpreter and the C backend, against PyTorch's
output on every element; ops the converter cannot express are named.

Run:  TANG_BIN=<build>/bin /usr/bin/python3 -m pytest -q test/Python
"""

import json
import os
import pathlib
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
INPUTS = pathlib.Path(__file__).resolve().parent / "Inputs"
sys.path.insert(0, str(ROOT / "python"))
os.environ.setdefault("TANG_BIN", str(ROOT / "build" / "bin"))

import tang  # noqa: E402
from tang import fx  # noqa: E402


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TANG_CACHE_DIR", str(tmp_path / "cache"))


def block_graph():
    return json.loads((INPUTS / "fx_block_ci.json").read_text())


@pytest.mark.parametrize("target", ["interpreter", "c"])
def test_captured_block_matches_pytorch(target):
    fn = fx.convert(block_graph(), "tang_graph")
    text = fn.mlir()
    assert "linalg" not in text and 'loc("tang_graph/mm")' in text
    data = np.load(INPUTS / "fx_block_ci_inputs.npz")
    xs = [data[f"arr_{k}"] for k in range(len(data.files))]
    want = np.load(INPUTS / "fx_block_ci_y.npy")
    got = np.asarray(tang.compile(fn, target=target)(*xs), np.float64)
    assert got.shape == want.shape
    assert np.all(np.isfinite(got))
    # PyTorch computed in float32 (TF32 off): its rounding over reductions
    # of 64 terms, a few ulps of the output's scale.
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6 * scale)


def test_every_captured_op_is_converted():
    ops = {n["target"] for n in block_graph()["nodes"]
           if n["op"] == "call_function"}
    assert "aten._scaled_dot_product_efficient_attention.default" in ops
    assert "aten.mm.default" in ops
    fx.convert(block_graph(), "tang_graph").mlir()


def test_unsupported_op_is_named():
    graph = block_graph()
    node = next(n for n in graph["nodes"] if n["target"] ==
                "aten.silu.default")
    node["target"] = "aten.hardswish.default"
    with pytest.raises(fx.Unsupported, match="aten.hardswish.default"):
        fx.convert(graph, "tang_graph").mlir()
