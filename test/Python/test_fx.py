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


def node(name, target, args, shape, dtype="torch.float32", kwargs=None,
         meta=None):
    return {"name": name, "op": "call_function", "target": target,
            "args": args, "kwargs": kwargs or {},
            "meta": meta or {"shape": list(shape), "dtype": dtype}}


def placeholder(name, shape, dtype="torch.float32"):
    return {"name": name, "op": "placeholder", "target": name, "args": [],
            "kwargs": {}, "meta": {"shape": list(shape), "dtype": dtype}}


def ref(name):
    return {"node": name}


def graph_of(nodes, outputs):
    return {"nodes": nodes + [{"name": "output", "op": "output",
                               "target": "output",
                               "args": [[ref(o) for o in outputs]],
                               "kwargs": {}, "meta": None}]}


def test_ops_beyond_the_block_match_numpy():
    """addmm with a bias, bmm of a transpose, expand, gelu (tanh), layer norm,
    softmax over a middle dimension, log_softmax, amax, embedding (int64
    ids converted to i32), each against NumPy through the interpreter."""
    g = graph_of([
        placeholder("x", (3, 4, 5)),
        placeholder("w", (5, 6)),
        placeholder("b", (6,)),
        placeholder("ln_w", (5,)),
        placeholder("ln_b", (5,)),
        placeholder("table", (9, 5)),
        placeholder("ids", (7,), "torch.int64"),
        node("v", "aten.view.default", [ref("x"), [12, 5]], (12, 5)),
        node("mm", "aten.addmm.default", [ref("b"), ref("v"), ref("w")],
             (12, 6)),
        node("g", "aten.gelu.default", [ref("mm")], (12, 6),
             kwargs={"approximate": "tanh"}),
        node("p2", "aten.transpose.int", [ref("x"), 1, 2], (3, 5, 4)),
        node("bm", "aten.bmm.default", [ref("x"), ref("p2")], (3, 4, 4)),
        node("sm", "aten._softmax.default", [ref("x"), 1, False], (3, 4, 5)),
        node("ls", "aten._log_softmax.default", [ref("x"), -1, False],
             (3, 4, 5)),
        node("mx", "aten.amax.default", [ref("x"), [0, 2], True], (1, 4, 1)),
        node("ln", "aten.native_layer_norm.default",
             [ref("x"), [5], ref("ln_w"), ref("ln_b"), 1e-5], None,
             meta=[{"shape": [3, 4, 5], "dtype": "torch.float32"}, None,
                   None]),
        node("ln0", "operator.getitem", [ref("ln"), 0], (3, 4, 5)),
        node("e", "aten.embedding.default", [ref("table"), ref("ids")],
             (7, 5)),
        node("ex", "aten.expand.default", [ref("b"), [4, 6]], (4, 6)),
        node("exs", "aten.mul.Tensor", [ref("ex"), 2.0], (4, 6)),
    ], ["g", "bm", "sm", "ls", "mx", "ln0", "e", "exs"])
    fn = fx.convert(g, "ops")
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    w = rng.standard_normal((5, 6)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    lw = rng.standard_normal(5).astype(np.float32)
    lb = rng.standard_normal(5).astype(np.float32)
    table = rng.standard_normal((9, 5)).astype(np.float32)
    ids = rng.integers(0, 9, 7).astype(np.int32)
    got = tang.compile(fn, target="interpreter")(x, w, b, lw, lb, table, ids)
    X = x.astype(np.float64)
    mm = X.reshape(12, 5) @ w + b
    c = np.sqrt(2 / np.pi)
    gelu = 0.5 * mm * (1 + np.tanh(c * (mm + 0.044715 * mm ** 3)))

    def softmax(a, axis):
        e = np.exp(a - a.max(axis, keepdims=True))
        return e / e.sum(axis, keepdims=True)
    mu = X.mean(-1, keepdims=True)
    var = ((X - mu) ** 2).mean(-1, keepdims=True)
    want = [gelu, X @ X.transpose(0, 2, 1), softmax(X, 1),
            np.log(softmax(X, -1)), X.max((0, 2), keepdims=True),
            (X - mu) / np.sqrt(var + 1e-5) * lw + lb, table[ids],
            np.broadcast_to(b * 2.0, (4, 6))]
    assert len(got) == len(want)
    for k, (a, e) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-6,
                                   err_msg=f"output {k}")
