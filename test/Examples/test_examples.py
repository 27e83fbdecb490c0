"""Every program in examples/ against an independent NumPy implementation.

Each example's inputs (shapes, dtypes) and its NumPy reference live in the
CASES table below. The test draws seeded, non-zero random inputs in float64,
runs `tang-run --input ... --output-dir ...`, and checks each output's shape
and its relative error ||out - ref|| / ||ref|| <= 1e-10 (integer outputs must
match exactly).

Run:  TANG_BIN=<build>/bin /usr/bin/python3 -m pytest -q test/Examples
(TANG_BIN defaults to <repo>/build/bin.)
"""

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, Sequence, Tuple

import numpy as np
import pytest

#===----------------------------------------------------------------------===#
# Helpers
#===----------------------------------------------------------------------===#

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
BIN = Path(os.environ.get("TANG_BIN", REPO / "build" / "bin"))
TANG_RUN = BIN / "tang-run"
TANG_OPT = BIN / "tang-opt"

RTOL = 1e-10


def f32c(x: float) -> float:
    """A constant as the program holds it: `arith.constant x : f32` is x
    rounded to f32 (the interpreter then computes in float64)."""
    return float(np.float32(x))


@dataclass
class Input:
    shape: Tuple[int, ...]
    dtype: str = "f8"  # "f8" or "i4" / "i1" (i8) / "b1"
    lo: float = -1.0
    hi: float = 1.0


@dataclass
class Case:
    inputs: List[Input]
    reference: Callable[..., Sequence[np.ndarray]]
    output_shapes: List[Tuple[int, ...]]
    output_dtypes: List[str] = field(default_factory=list)  # default: all float
    #: For programs with index arguments (sizes): the values of each run
    #: (tang-run --size argK=N, K the argument after the inputs), passed to
    #: the reference after the inputs.
    sizes: List[Tuple[int, ...]] = field(default_factory=lambda: [()])

    def size_flags(self, values: Tuple[int, ...]) -> List[str]:
        flags = []
        for k, v in enumerate(values):
            flags += ["--size", f"arg{len(self.inputs) + k}={v}"]
        return flags


def make_inputs(case: Case, seed: int) -> List[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in case.inputs:
        if spec.dtype == "f8":
            a = rng.uniform(spec.lo, spec.hi, size=spec.shape)
            # Non-zero: nudge any (improbable) exact zero.
            a[a == 0] = 0.5
        elif spec.dtype == "b1":
            a = rng.integers(0, 2, size=spec.shape).astype(np.bool_)
        else:
            a = rng.integers(int(spec.lo), int(spec.hi) + 1,
                             size=spec.shape).astype(np.dtype(spec.dtype))
            a[a == 0] = 1
        arrays.append(a)
    return arrays


def run_tang(example: str, args: Sequence[str], tmp_path: Path,
             tag: str = "out") -> List[np.ndarray]:
    """Runs tang-run on examples/<example>.mlir with extra `args`; returns the
    outputs it wrote (in order)."""
    out_dir = tmp_path / tag
    cmd = [str(TANG_RUN), str(EXAMPLES / f"{example}.mlir"), *args,
           "--output-dir", str(out_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (
        f"tang-run failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    outs = []
    i = 0
    while (out_dir / f"output_{i}.npy").exists():
        outs.append(np.load(out_dir / f"output_{i}.npy"))
        i += 1
    assert outs, f"tang-run wrote no outputs:\n{proc.stdout}"
    return outs


def run_with_inputs(example: str, inputs: Sequence[np.ndarray],
                    tmp_path: Path, flags: Sequence[str] = (),
                    tag: str = "out") -> List[np.ndarray]:
    args = list(flags)
    for i, a in enumerate(inputs):
        p = tmp_path / f"input_{i}.npy"
        np.save(p, a)
        args += ["--input", str(p)]
    return run_tang(example, args, tmp_path, tag)


def check_outputs(case: Case, outs: Sequence[np.ndarray],
                  refs: Sequence[np.ndarray]) -> None:
    assert len(outs) == len(case.output_shapes) == len(refs)
    dtypes = case.output_dtypes or ["f"] * len(outs)
    for k, (out, ref, shape, dt) in enumerate(
            zip(outs, refs, case.output_shapes, dtypes)):
        ref = np.asarray(ref)
        assert out.shape == tuple(shape), f"output #{k}: shape {out.shape}"
        assert ref.shape == tuple(shape), f"reference #{k}: shape {ref.shape}"
        assert np.any(ref != 0), f"reference #{k} is all zeros"
        if dt == "f":
            assert out.dtype == np.float64
            assert not np.any(np.isnan(out)), f"output #{k} has NaN"
            assert np.all(np.isfinite(ref)), f"reference #{k} not finite"
            # Every element, against float64 NumPy: within RTOL of its own
            # magnitude plus the output's rms (for elements that cancel).
            rms = np.sqrt(np.mean(ref * ref))
            err = np.abs(out - ref) / (np.abs(ref) + rms)
            worst = np.unravel_index(np.argmax(err), err.shape)
            assert err[worst] <= RTOL, (
                f"output #{k}: element {worst} is {out[worst]!r}, NumPy "
                f"{ref[worst]!r} (relative error {err[worst]:.3e})")
        else:
            assert np.issubdtype(out.dtype, np.integer), out.dtype
            np.testing.assert_array_equal(out, ref.astype(out.dtype),
                                          err_msg=f"output #{k}")


#===----------------------------------------------------------------------===#
# NumPy references (float64)
#===----------------------------------------------------------------------===#

def softmax_last(s):
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def silu(a):
    return a / (1.0 + np.exp(-a))


def attention(q, k, v, causal=False):
    s = np.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        mask = np.tril(np.ones((n, n), dtype=bool))
        s = np.where(mask, s, -np.inf)
    return np.einsum("bhij,bhjd->bhid", softmax_last(s), v)


def ref_matmul(A, B):
    return [A @ B]


def ref_gemv(A, x):
    return [A @ x]


def ref_matmul_bias_gelu(X, W, b):
    y = X @ W + b
    c = f32c(0.7978845608028654)  # sqrt(2 / pi), as an f32 constant
    return [0.5 * y * (1.0 + np.tanh(c * (y + f32c(0.044715) * y**3)))]


def ref_softmax(X):
    return [softmax_last(X)]


def ref_rmsnorm(X, w):
    return [rmsnorm(X, w, f32c(1e-6))]


def ref_embedding_rmsnorm(tokens, E, w):
    # clamp: tokens outside the table read its first or last row.
    x = E[np.clip(tokens, 0, E.shape[0] - 1)]
    return [rmsnorm(x, w, f32c(1e-6))]


def ref_layernorm(X, gamma, beta):
    mu = X.mean(axis=-1, keepdims=True)
    var = ((X - mu) ** 2).mean(axis=-1, keepdims=True)
    return [(X - mu) / np.sqrt(var + f32c(1e-5)) * gamma + beta]


def ref_attention(Q, K, V):
    return [attention(Q, K, V)]


def ref_causal_attention(Q, K, V):
    return [attention(Q, K, V, causal=True)]


def ref_gqa_attention(Q, K, V):
    group = Q.shape[1] // K.shape[1]
    return [attention(Q, np.repeat(K, group, axis=1),
                      np.repeat(V, group, axis=1))]


def ref_swiglu_mlp(x, W1, W3, W2):
    return [(silu(x @ W1) * (x @ W3)) @ W2]


def ref_decode_mlp(x, Wg, Wu, Wd):
    # Weights [out, in], as nn.Linear holds them; the residual added.
    return [x + (silu(x @ Wg.T) * (x @ Wu.T)) @ Wd.T]


def ref_batched_gemv(W, x):
    return [np.einsum("hnk,hk->hn", W, x)]


def ref_transformer_block(x, wn1, Wq, Wk, Wv, Wo, wn2, W1, W3, W2):
    B, L, D = x.shape
    H, Dh = 4, 8
    eps = f32c(1e-6)

    def heads(t):  # [B, L, H*Dh] -> [B, H, L, Dh]
        return t.reshape(B, L, H, Dh).transpose(0, 2, 1, 3)

    xn = rmsnorm(x, wn1, eps)
    o = attention(heads(xn @ Wq), heads(xn @ Wk), heads(xn @ Wv), causal=True)
    o = o.transpose(0, 2, 1, 3).reshape(B, L, D)
    h = x + o @ Wo
    hn = rmsnorm(h, wn2, eps)
    return [h + (silu(hn @ W1) * (hn @ W3)) @ W2]


def layernorm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_tanh(y):
    c = f32c(0.7978845608028654)  # sqrt(2 / pi), as an f32 constant
    return 0.5 * y * (1.0 + np.tanh(c * (y + f32c(0.044715) * y**3)))


def ref_gpt2_block(x, ln1_w, ln1_b, W_attn, b_attn, W_proj, b_proj,
                   ln2_w, ln2_b, W_fc, b_fc, W_fc2, b_fc2):
    # Weights [in, out], applied as x @ W + b (GPT-2's Conv1D layout).
    B, L, D = x.shape
    H, Dh = 4, 8
    eps = f32c(1e-5)

    def heads(t):  # [B, L, H*Dh] -> [B, H, L, Dh]
        return t.reshape(B, L, H, Dh).transpose(0, 2, 1, 3)

    qkv = layernorm(x, ln1_w, ln1_b, eps) @ W_attn + b_attn
    q, k, v = np.split(qkv, 3, axis=-1)
    o = attention(heads(q), heads(k), heads(v), causal=True)
    o = o.transpose(0, 2, 1, 3).reshape(B, L, D)
    h = x + (o @ W_proj + b_proj)
    hn = layernorm(h, ln2_w, ln2_b, eps)
    return [h + (gelu_tanh(hn @ W_fc + b_fc) @ W_fc2 + b_fc2)]


def ref_alibi_attention(Q, K, V, slopes):
    n = Q.shape[2]
    dist = np.arange(n)[None, :] - np.arange(n)[:, None]  # [i, j] -> j - i
    s = np.einsum("bhid,bhjd->bhij", Q, K) / np.sqrt(Q.shape[-1])
    s = s + slopes[None, :, None, None] * dist
    return [np.einsum("bhij,bhjd->bhid", softmax_last(s), V)]


def ref_conv2d(X, F):
    R, S = F.shape[2:]
    win = np.lib.stride_tricks.sliding_window_view(X, (R, S), axis=(2, 3))
    return [np.einsum("nchwrs,kcrs->nkhw", win, F)]


def ref_causal_conv1d(X, W, bias):
    K = W.shape[1]
    # Zero padding before the start: output t sees x[t - K + 1 .. t].
    xp = np.concatenate([np.zeros((X.shape[0], K - 1, X.shape[2])), X], axis=1)
    conv = sum(W[:, k] * xp[:, k:k + X.shape[1], :] for k in range(K))
    s = conv + bias
    return [s / (1.0 + np.exp(-s))]


def ref_prefix_sum(x):
    return [np.cumsum(x)]


def ref_argmax(X):
    return [X.max(axis=1), X.argmax(axis=1).astype(np.int32)]


def ref_cross_entropy(X, T):
    m = X.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(X - m).sum(axis=1, keepdims=True))
    return [(T * (lse - X)).sum(axis=1)]


def ref_linear_recurrence(g, x):
    # h[t] = a[t] h[t-1] + x[t], a = sigmoid(g), in index order.
    a = 1.0 / (1.0 + np.exp(-g))
    h = np.empty_like(x)
    state = 0.0
    for t in range(len(x)):
        state = a[t] * state + x[t]
        h[t] = state
    return [h]


def ref_kv_cache_decode(Kc, Vc, k, v, q, pos):
    K, V = Kc.copy(), Vc.copy()
    K[pos], V[pos] = k, v
    s = K[:pos + 1] @ q * 0.25
    p = np.exp(s - s.max())
    return [K, V, (p @ V[:pos + 1]) / p.sum()]


def ref_decode_attention(q, K, V, pos):
    n = pos + 1
    out = np.empty((4, 64))
    for h in range(4):
        s = K[h // 2, :n] @ q[h] * 0.125
        p = np.exp(s - s.max())
        out[h] = (p / p.sum()) @ V[h // 2, :n]
    return [out]


def ref_varlen_decode_attention(q, K, V, pos, n):
    out = np.empty((3, 8, 64))
    for b in range(3):
        keys = min(n, max(int(pos[b]), 0) + 1)
        for h in range(8):
            s = K[b, h // 4, :keys] @ q[b, h] * 0.125
            p = np.exp(s - s.max())
            out[b, h] = (p / p.sum()) @ V[b, h // 4, :keys]
    return [out]


def ref_moe_top2(x, Wg, W):
    logits = x @ Wg
    order = np.argsort(-logits, axis=1, kind="stable")
    e1, e2 = order[:, 0], order[:, 1]
    t = np.arange(x.shape[0])
    v1, v2 = logits[t, e1], logits[t, e2]
    g1 = 1 / (1 + np.exp(v2 - v1))
    y = (g1[:, None] * np.einsum("td,tdj->tj", x, W[e1])
         + (1 - g1)[:, None] * np.einsum("td,tdj->tj", x, W[e2]))
    load = np.bincount(np.concatenate([e1, e2]), minlength=W.shape[0])
    return [y, load.astype(np.float64)]


def ref_moe_layer(x, router, w_gate, w_up, w_down, s_gate, s_up, s_down,
                  s_router, top_k=4):
    """transformers' Qwen3NextSparseMoeBlock, loop over experts: softmax
    routing, a stable top-k (ties to the lower index), renormalised."""
    logits = x @ router.T
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    sel = np.argsort(-logits, axis=1, kind="stable")[:, :top_k]
    w = np.take_along_axis(p, sel, 1)
    w /= w.sum(1, keepdims=True)
    y = np.zeros_like(x)
    for e in range(router.shape[0]):
        rows, slots = np.nonzero(sel == e)
        if rows.size == 0:
            continue
        g, u = x[rows] @ w_gate[e].T, x[rows] @ w_up[e].T
        y[rows] += w[rows, slots][:, None] * (
            (g / (1 + np.exp(-g)) * u) @ w_down[e].T)
    g, u = x @ s_gate.T, x @ s_up.T
    gate = 1 / (1 + np.exp(-(x @ s_router.T)))
    return [y + gate * ((g / (1 + np.exp(-g)) * u) @ s_down.T)]


def ref_gated_delta_rule(q, k, v, a, b, A_log, dt_bias, S0):
    """transformers' torch_recurrent_gated_delta_rule, token by token, with
    Qwen3NextGatedDeltaNet's gates: g = -exp(A_log) softplus(a + dt_bias),
    beta = sigmoid(b); q and k L2-normalised (eps 1e-6, an f32 constant),
    q scaled by dim^-1/2 (an f32 constant); key heads repeated."""
    per = v.shape[2] // q.shape[2]
    eps, scale = (float(np.float32(c)) for c in (1e-6, q.shape[-1] ** -0.5))

    def l2norm(x):
        return x / np.sqrt((x * x).sum(-1, keepdims=True) + eps)
    q = np.repeat(l2norm(q), per, axis=2) * scale
    k = np.repeat(l2norm(k), per, axis=2)
    g = -np.exp(A_log) * np.log1p(np.exp(a + dt_bias))
    beta = 1 / (1 + np.exp(-b))
    S = S0.copy()
    o = np.zeros(v.shape)
    for t in range(v.shape[1]):
        S = S * np.exp(g[:, t])[:, :, None, None]
        mem = (S * k[:, t, :, :, None]).sum(-2)
        S = S + k[:, t, :, :, None] * ((v[:, t] - mem)
                                       * beta[:, t, :, None])[:, :, None, :]
        o[:, t] = (S * q[:, t, :, :, None]).sum(-2)
    return [o, S]


def ref_logsumexp(X):
    m = X.max(axis=1)
    return [m + np.log(np.exp(X - m[:, None]).sum(axis=1))]


def ref_vocab_cross_entropy(X, labels):
    m = X.max(axis=1)
    lse = m + np.log(np.exp(X - m[:, None]).sum(axis=1))
    # `clamp`: a label outside the vocabulary reads its first or last entry.
    k = np.clip(labels.astype(np.int64), 0, X.shape[1] - 1)
    return [lse - X[np.arange(X.shape[0]), k]]


#===----------------------------------------------------------------------===#
# The table: one entry per examples/<name>.mlir
#===----------------------------------------------------------------------===#

ATT = (2, 4, 16, 8)  # batch, heads, length, head dim

CASES = {
    "matmul": Case([Input((16, 32)), Input((32, 24))], ref_matmul,
                   [(16, 24)]),
    "gemv": Case([Input((32, 48)), Input((48,))], ref_gemv, [(32,)]),
    "matmul_bias_gelu": Case(
        [Input((16, 32)), Input((32, 24)), Input((24,))],
        ref_matmul_bias_gelu, [(16, 24)]),
    "softmax": Case([Input((8, 32), lo=-4, hi=4)], ref_softmax, [(8, 32)]),
    "rmsnorm": Case([Input((8, 32)), Input((32,))], ref_rmsnorm, [(8, 32)]),
    "layernorm": Case([Input((8, 32)), Input((32,)), Input((32,))],
                      ref_layernorm, [(8, 32)]),
    "attention": Case([Input(ATT, lo=-2, hi=2), Input(ATT, lo=-2, hi=2),
                       Input(ATT)], ref_attention, [ATT]),
    "causal_attention": Case(
        [Input(ATT, lo=-2, hi=2), Input(ATT, lo=-2, hi=2), Input(ATT)],
        ref_causal_attention, [ATT]),
    "gqa_attention": Case(
        [Input(ATT, lo=-2, hi=2), Input((2, 2, 16, 8), lo=-2, hi=2),
         Input((2, 2, 16, 8))],
        ref_gqa_attention, [ATT]),
    "decode_mlp": Case(
        [Input((2, 256)), Input((512, 256)), Input((512, 256)),
         Input((256, 512))],
        ref_decode_mlp, [(2, 256)]),
    "batched_gemv": Case([Input((20, 48, 64)), Input((20, 64))],
                         ref_batched_gemv, [(20, 48)]),
    "swiglu_mlp": Case(
        [Input((16, 32)), Input((32, 64)), Input((32, 64)), Input((64, 32))],
        ref_swiglu_mlp, [(16, 32)]),
    "transformer_block": Case(
        [Input((2, 16, 32)), Input((32,)),
         Input((32, 32)), Input((32, 32)), Input((32, 32)), Input((32, 32)),
         Input((32,)), Input((32, 64)), Input((32, 64)), Input((64, 32))],
        ref_transformer_block, [(2, 16, 32)]),
    "gpt2_block": Case(
        [Input((2, 16, 32)), Input((32,), lo=0.5, hi=1.5), Input((32,)),
         Input((32, 96), lo=-0.5, hi=0.5), Input((96,), lo=-0.1, hi=0.1),
         Input((32, 32), lo=-0.3, hi=0.3), Input((32,), lo=-0.1, hi=0.1),
         Input((32,), lo=0.5, hi=1.5), Input((32,)),
         Input((32, 128), lo=-0.3, hi=0.3), Input((128,), lo=-0.1, hi=0.1),
         Input((128, 32), lo=-0.2, hi=0.2), Input((32,), lo=-0.1, hi=0.1)],
        ref_gpt2_block, [(2, 16, 32)]),
    "alibi_attention": Case(
        [Input(ATT, lo=-2, hi=2), Input(ATT, lo=-2, hi=2), Input(ATT),
         Input((4,), lo=0.0625, hi=0.5)],
        ref_alibi_attention, [ATT]),
    "conv2d": Case([Input((2, 3, 10, 10)), Input((4, 3, 3, 3))], ref_conv2d,
                   [(2, 4, 8, 8)]),
    "causal_conv1d": Case([Input((2, 256, 64)), Input((64, 4)), Input((64,))],
                          ref_causal_conv1d, [(2, 256, 64)]),
    # Tokens from -20 to 1020: some outside the table of 1000 rows.
    "embedding_rmsnorm": Case(
        [Input((2, 64), "i4", lo=-20, hi=1020), Input((1000, 64)),
         Input((64,))], ref_embedding_rmsnorm, [(2, 64, 64)]),
    "prefix_sum": Case([Input((64,))], ref_prefix_sum, [(64,)]),
    "linear_recurrence": Case([Input((2048,), lo=-3, hi=3), Input((2048,))],
                              ref_linear_recurrence, [(2048,)]),
    "linear_recurrence_scan": Case(
        [Input((65536,), lo=-3, hi=3), Input((65536,))],
        ref_linear_recurrence, [(65536,)]),
    "argmax": Case([Input((8, 32))], ref_argmax, [(8,), (8,)],
                   output_dtypes=["f", "i"]),
    # Rows long enough that the CUDA pipeline splits them among blocks.
    "greedy_token": Case([Input((2, 50000), lo=-8, hi=8)], ref_argmax,
                         [(2,), (2,)], output_dtypes=["f", "i"]),
    "logsumexp": Case([Input((8, 32), lo=-4, hi=4)], ref_logsumexp, [(8,)]),
    # Labels on both sides of the vocabulary too (the gather clamps).
    "vocab_cross_entropy": Case(
        [Input((6, 2056), lo=-8, hi=8), Input((6,), "i4", lo=-3, hi=2060)],
        ref_vocab_cross_entropy, [(6,)]),
    "moe_layer": Case(
        [Input((4, 64)), Input((16, 64)), Input((16, 32, 64)),
         Input((16, 32, 64)), Input((16, 64, 32)), Input((48, 64)),
         Input((48, 64)), Input((64, 48)), Input((1, 64))],
        ref_moe_layer, [(4, 64)]),
    "gated_delta_rule": Case(
        [Input((1, 128, 2, 8)), Input((1, 128, 2, 8)), Input((1, 128, 4, 8)),
         Input((1, 128, 4)), Input((1, 128, 4)), Input((4,)), Input((4,)),
         Input((1, 4, 8, 8))],
        ref_gated_delta_rule, [(1, 128, 4, 8), (1, 4, 8, 8)]),
    "moe_top2": Case([Input((32, 16)), Input((16, 8)), Input((8, 16, 24))],
                     ref_moe_top2, [(32, 24), (8,)]),
    # One program at three positions of a 64-row cache: the first, one
    # inside, the last.
    "kv_cache_decode": Case(
        [Input((64, 16)), Input((64, 16)), Input((16,)), Input((16,)),
         Input((16,), lo=-2, hi=2)],
        ref_kv_cache_decode, [(64, 16), (64, 16), (16,)],
        sizes=[(0,), (9,), (63,)]),
    # Grouped-query decode attention at three context lengths: 1 (one key
    # split), 301 (5 splits of 64 keys, the last partly empty), 1024 (16).
    "decode_attention": Case(
        [Input((4, 64), lo=-2, hi=2), Input((2, 1024, 64)),
         Input((2, 1024, 64))],
        ref_decode_attention, [(4, 64)], sizes=[(0,), (300,), (1023,)]),
    # Sequences of different lengths: each attends over positions
    # 0..pos[b] (at most the extent n), the rest of its cache masked.
    "varlen_decode_attention": Case(
        [Input((3, 8, 64), lo=-2, hi=2), Input((3, 2, 128, 64)),
         Input((3, 2, 128, 64)), Input((3,), dtype="i4", lo=-3, hi=127)],
        ref_varlen_decode_attention, [(3, 8, 64)],
        sizes=[(1,), (128,), (77,)]),
    "cross_entropy": Case([Input((8, 32), lo=-4, hi=4), Input((8, 32), lo=0.01, hi=1)],
                          ref_cross_entropy, [(8,)]),
}

NAMES = sorted(CASES)


#===----------------------------------------------------------------------===#
# Tests
#===----------------------------------------------------------------------===#

def test_tools_exist():
    assert TANG_RUN.exists(), f"{TANG_RUN} not found (set TANG_BIN)"
    assert TANG_OPT.exists(), f"{TANG_OPT} not found (set TANG_BIN)"


def test_every_example_has_a_test():
    on_disk = {p.stem for p in EXAMPLES.glob("*.mlir")}
    assert on_disk, f"no examples in {EXAMPLES}"
    missing = on_disk - set(CASES)
    assert not missing, f"examples without a NumPy test: {sorted(missing)}"
    stale = set(CASES) - on_disk
    assert not stale, f"tests for examples that do not exist: {sorted(stale)}"


@pytest.mark.parametrize("name", NAMES)
def test_parses_and_verifies(name):
    proc = subprocess.run([str(TANG_OPT), str(EXAMPLES / f"{name}.mlir")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("name", NAMES)
def test_matches_numpy(name, tmp_path):
    case = CASES[name]
    inputs = make_inputs(case, seed=sum(map(ord, name)))
    for a in inputs:
        assert np.all(a != 0)
    for n, values in enumerate(case.sizes):
        outs = run_with_inputs(name, inputs, tmp_path,
                               case.size_flags(values), tag=f"out{n}")
        check_outputs(case, outs, case.reference(*inputs, *values))


@pytest.mark.parametrize("name", NAMES)
def test_random_inputs_match_numpy(name, tmp_path):
    """Without --input: the inputs tang-run draws (dumped with --dump-inputs)
    give the same outputs as NumPy on those inputs."""
    dump = tmp_path / "inputs"
    case = CASES[name]
    values = case.sizes[-1]
    outs = run_tang(name, ["--seed", "3", "--dump-inputs", str(dump),
                           *case.size_flags(values)], tmp_path)
    inputs = [np.load(dump / f"input_{i}.npy") for i in range(len(case.inputs))]
    for a, spec in zip(inputs, case.inputs):
        assert a.shape == spec.shape
    check_outputs(case, outs, case.reference(*inputs, *values))


def test_seeded_random_inputs_are_deterministic(tmp_path):
    a = run_tang("matmul", ["--seed", "7"], tmp_path, tag="a")
    b = run_tang("matmul", ["--seed", "7"], tmp_path, tag="b")
    c = run_tang("matmul", ["--seed", "8"], tmp_path, tag="c")
    assert len(a) == len(b) == len(c) == 1
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])
