"""tang.models.qwen3_next's MoE layer against an independent NumPy float64
implementation written as transformers' Qwen3NextSparseMoeBlock is (softmax
routing, top-k, renormalisation, a loop over the experts hit, the gated
shared expert).

On the float64 interpreter and the C backend (float32), random non-zero
weights; every output element compared. Ties in the router's logits go to
the lower expert index (a stable sort), with and without renormalisation,
with and without the shared expert.

Run:  TANG_BIN=<build>/bin /usr/bin/python3 -m pytest -q test/Python
"""

import os
import pathlib
import subprocess
import sys
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
os.environ.setdefault("TANG_BIN", str(TANG_BIN))

import tang  # noqa: E402
from tang.models import qwen3_next as qn  # noqa: E402

CFG = qn.TINY_MOE
TOKENS = 5
# float64 interpreter: float64 rounding of sums of <= 32 terms; C backend:
# float32 through three products of <= 32 terms of values O(1).
TOLERANCE = {"interpreter": 1e-12, "c": 1e-4}


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TANG_CACHE_DIR", str(tmp_path / "cache"))


def weights(cfg, seed=0):
    """Random weights, none zero: magnitudes in [0.05, 0.5] / sqrt(in)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in qn.moe_weight_shapes(cfg).items():
        mag = rng.uniform(0.05, 0.5, shape) * 4 / np.sqrt(shape[-1])
        out[name] = (mag * rng.choice([-1.0, 1.0], shape)).astype(np.float32)
    return out


def tokens(cfg, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.1, 1.0, (TOKENS, cfg.hidden)) * rng.choice(
        [-1.0, 1.0], (TOKENS, cfg.hidden))
    return x.astype(np.float32)


def reference(cfg, x, W):
    """The layer in float64, as transformers computes it."""
    x = x.astype(np.float64)
    W = {k: v.astype(np.float64) for k, v in W.items()}
    logits = x @ W["router"].T
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    sel = np.argsort(-logits, axis=1, kind="stable")[:, :cfg.top_k]
    w = np.take_along_axis(p, sel, 1)
    if cfg.norm_topk:
        w /= w.sum(1, keepdims=True)
    y = np.zeros_like(x)
    for e in range(cfg.experts):
        rows, slots = np.nonzero(sel == e)
        if rows.size == 0:
            continue
        g, u = x[rows] @ W["w_gate"][e].T, x[rows] @ W["w_up"][e].T
        y[rows] += w[rows, slots][:, None] * (
            (g / (1 + np.exp(-g)) * u) @ W["w_down"][e].T)
    if cfg.shared_ffn:
        g, u = x @ W["s_gate"].T, x @ W["s_up"].T
        gate = 1 / (1 + np.exp(-(x @ W["s_router"].T)))
        y += gate * ((g / (1 + np.exp(-g)) * u) @ W["s_down"].T)
    return y, sel


def check(cfg, x, W, target):
    fn = qn.moe_layer(cfg, TOKENS)
    got = tang.compile(fn, target=target)(x, *W.values())
    want, _ = reference(cfg, x, W)
    # The interpreter answers in float64, the C backend in float32.
    assert got.shape == want.shape
    assert got.dtype == (np.float64 if target == "interpreter" else np.float32)
    assert np.isfinite(got).all()
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= TOLERANCE[target], err


def margin(cfg, x, W):
    """The smallest gap between the k-th and the (k+1)-th logit of a token:
    the routing is the same in float32 when it is well above rounding."""
    logits = np.sort(x.astype(np.float64) @ W["router"].T.astype(np.float64),
                     axis=1)[:, ::-1]
    return (logits[:, cfg.top_k - 1] - logits[:, cfg.top_k]).min()


@pytest.mark.parametrize("target", ["interpreter", "c"])
@pytest.mark.parametrize("variant", ["default", "no_norm", "no_shared"])
def test_moe_layer_matches_transformers_math(target, variant):
    cfg = {"default": CFG, "no_norm": replace(CFG, norm_topk=False),
           "no_shared": replace(CFG, shared_ffn=0)}[variant]
    x, W = tokens(cfg), weights(cfg)
    assert margin(cfg, x, W) > 1e-3   # no near-tie the float32 run could flip
    check(cfg, x, W, target)


def test_ties_go_to_the_lower_expert():
    """Two experts with the same router row (so the same logit for every
    token), straddling the k-th place for token 0: the lower index is
    routed, as a stable sort (and torch.topk on CPU) picks it."""
    cfg = CFG
    x, W = tokens(cfg), weights(cfg)
    logits = x.astype(np.float64) @ W["router"].T.astype(np.float64)
    order = np.argsort(-logits[0], kind="stable")
    kth, after = order[cfg.top_k - 1], order[cfg.top_k]
    lo, hi = sorted((int(kth), int(after)))
    W["router"][lo] = W["router"][kth]
    W["router"][hi] = W["router"][kth]
    want, sel = reference(cfg, x, W)
    assert lo in sel[0] and hi not in sel[0]
    fn = qn.moe_layer(cfg, TOKENS)
    got = tang.compile(fn, target="interpreter")(x, *W.values())
    assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max()


def test_config_from_transformers():
    """The shape read off a transformers-style config (the names of
    Qwen3NextConfig's fields); QWEN3_NEXT_MOE is that config's default."""
    hf = SimpleNamespace(hidden_size=2048, num_experts=512,
                         moe_intermediate_size=512, num_experts_per_tok=10,
                         shared_expert_intermediate_size=512,
                         norm_topk_prob=True)
    assert qn.moe_config_from(hf) == qn.QWEN3_NEXT_MOE
    del hf.shared_expert_intermediate_size   # Qwen3-MoE: none
    assert qn.moe_config_from(hf).shared_ffn == 0


def test_bad_top_k_is_refused():
    with pytest.raises(ValueError, match="top_k 13"):
        qn.MoeConfig(experts=12, top_k=13)


def test_floor_counts_the_selected_experts():
    cfg = qn.QWEN3_NEXT_MOE
    per_expert = 3 * cfg.ffn * cfg.hidden * 2
    one = qn.moe_selected_bytes(cfg, 1)
    assert one - qn.moe_selected_bytes(replace(cfg, top_k=9), 1) == per_expert
    # At most every expert once: 4096 tokens select (with 10 each) more
    # than all 512, so the router, all experts, the shared expert and the
    # tokens in (bf16) and out (f32).
    D, Fs = cfg.hidden, cfg.shared_ffn
    assert qn.moe_selected_bytes(cfg, 4096) == (
        cfg.experts * D * 2 + per_expert * cfg.experts
        + (3 * Fs * D + D) * 2 + 4096 * D * (2 + 4))


def grouping_reference(cfg, sel):
    """The routed pairs sorted by (expert, token): counts, exclusive
    offsets, each pair's row, and the token and slot of each row."""
    T, K = sel.shape
    pairs = sorted((int(sel[t, s]), t, s) for t in range(T) for s in range(K))
    counts = np.bincount(sel.ravel(), minlength=cfg.experts)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rows = np.zeros((T, K), np.int64)
    for i, (_, t, s) in enumerate(pairs):
        rows[t, s] = i
    perm = np.array([t for _, t, _ in pairs])
    slot = np.array([s for _, _, s in pairs])
    return [counts, offsets, rows, perm, slot]


@pytest.mark.parametrize("target", ["interpreter", "c"])
def test_grouping_sorts_the_routed_pairs_by_expert(target):
    """moe_grouping against a sort of the (expert, token, slot) triples, on
    a routing with an expert no token chose and one every token chose."""
    cfg = CFG
    rng = np.random.default_rng(3)
    sel = np.stack([np.concatenate([[0], 1 + rng.permutation(
        cfg.experts - 2)[:cfg.top_k - 1]]) for _ in range(TOKENS)])
    sel = np.ascontiguousarray(rng.permuted(sel, axis=1)).astype(np.int32)
    got = tang.compile(qn.moe_grouping(cfg, TOKENS), target=target)(sel)
    want = grouping_reference(cfg, sel)
    assert want[0][cfg.experts - 1] == 0 and want[0][0] == TOKENS
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == np.int32, k
        np.testing.assert_array_equal(g, w, err_msg=f"output #{k}")
    counts, offsets, rows, perm, slot = got
    # Each grouped row is a pair of its expert, tokens increasing.
    for e in range(cfg.experts):
        group = range(offsets[e], offsets[e] + counts[e])
        assert all(sel[perm[i], slot[i]] == e for i in group)
        assert list(perm[list(group)]) == sorted(perm[list(group)])


# ---------------------------------------------------------------------------
# The gated delta rule
# ---------------------------------------------------------------------------

DELTA = qn.TINY_DELTA


def delta_inputs(cfg, batch, length, seed=4, initial_state=False):
    """Random q, k, v (normal), log-decays g in [-1, -0.01], beta in
    [0.1, 0.9] (a sigmoid's range), and a normal initial state."""
    rng = np.random.default_rng(seed)
    Hk, Hv, K, V = cfg.key_heads, cfg.value_heads, cfg.key_dim, cfg.value_dim
    xs = [rng.standard_normal((batch, length, Hk, K)),
          rng.standard_normal((batch, length, Hk, K)),
          rng.standard_normal((batch, length, Hv, V)),
          -rng.uniform(0.01, 1.0, (batch, length, Hv)),
          rng.uniform(0.1, 0.9, (batch, length, Hv))]
    if initial_state:
        xs.append(rng.standard_normal((batch, Hv, K, V)))
    return [x.astype(np.float32) for x in xs]


def delta_reference(cfg, q, k, v, g, beta, S0=None):
    """transformers' torch_recurrent_gated_delta_rule in float64, loop for
    loop (use_qk_l2norm_in_kernel: L2 norms with eps 1e-6 inside the
    square root; key heads repeated for their value heads)."""
    per = cfg.value_heads // cfg.key_heads
    q, k, v, g, beta = (x.astype(np.float64) for x in (q, k, v, g, beta))

    # The scale and eps are f32 constants (of an f32 tensor's op in torch,
    # in tang's program), exactly.
    scale, eps = (float(np.float32(c)) for c in (cfg.key_dim ** -0.5, 1e-6))

    def l2norm(x):
        return x / np.sqrt((x * x).sum(-1, keepdims=True) + eps)
    q = np.repeat(l2norm(q), per, axis=2) * scale
    k = np.repeat(l2norm(k), per, axis=2)
    B, T, H, _ = v.shape
    S = (np.zeros((B, H, cfg.key_dim, cfg.value_dim)) if S0 is None
         else S0.astype(np.float64).copy())
    o = np.zeros((B, T, H, cfg.value_dim))
    for s in range(T):
        S = S * np.exp(g[:, s])[:, :, None, None]
        kv_mem = (S * k[:, s, :, :, None]).sum(-2)
        delta = (v[:, s] - kv_mem) * beta[:, s, :, None]
        S = S + k[:, s, :, :, None] * delta[:, :, None, :]
        o[:, s] = (S * q[:, s, :, :, None]).sum(-2)
    return o, S


@pytest.mark.parametrize("initial_state", [False, True])
@pytest.mark.parametrize("batch, length", [(2, 7), (1, 1)])
def test_gated_delta_rule_matches_transformers_recurrence(
        batch, length, initial_state):
    """The scan of matrix states on the float64 interpreter against the
    token-by-token recurrence, every element of the output and the final
    state (length 1 with an initial state: the decode update)."""
    xs = delta_inputs(DELTA, batch, length, initial_state=initial_state)
    fn = qn.gated_delta_rule(DELTA, batch, length, initial_state)
    o, S = tang.compile(fn, target="interpreter")(*xs)
    want_o, want_S = delta_reference(DELTA, *xs)
    assert o.shape == want_o.shape and S.shape == want_S.shape
    for got, want in ((o, want_o), (S, want_S)):
        assert np.isfinite(got).all()
        # float64 throughout: sums of <= 6 terms per step, <= 7 steps.
        np.testing.assert_allclose(got, want, rtol=1e-12,
                                   atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("batch, length, initial_state", [
    (2, 12, True), (1, 7, False), (1, 1, True)])
def test_gated_delta_rule_on_the_c_backend(batch, length, initial_state):
    """The whole rule compiled for C (float32): the pipeline chunks the
    scan (--tang-chunk-affine-scan), the chunks' scan runs as the affine
    scan kernel (a thread per state column), every element of the output
    and the final state against the float64 recurrence."""
    xs = delta_inputs(DELTA, batch, length, initial_state=initial_state)
    fn = qn.gated_delta_rule(DELTA, batch, length, initial_state)
    o, S = tang.compile(fn, target="c")(*xs)
    want_o, want_S = delta_reference(DELTA, *xs)
    for got, want in ((o, want_o), (S, want_S)):
        assert got.dtype == np.float32 and got.shape == want.shape
        assert np.isfinite(got).all()
        # float32 through <= 7 chunk steps of sums of <= 12 terms, O(1).
        np.testing.assert_allclose(got, want, rtol=0,
                                   atol=2e-5 * np.abs(want).max())


def test_gated_delta_rule_strong_decays_on_the_c_backend():
    """Decays as strong as a layer's (log decays down to -24 a step, chunks
    of 64): the cumulative log decay reaches about -800 within a chunk,
    so a decay between two steps taken as the difference of cumulative
    sums cancels (f32 holds them to |G| u ~ 5e-5, the error of every
    decay factor). The plan sums each such decay directly (Dg); float32
    then stays within 1e-6 (17 units of roundoff) of the float64
    recurrence: 1.8e-7 of the largest element here, 6e-6 with the
    difference form."""
    xs = delta_inputs(DELTA, 1, 128)
    xs[3] = (xs[3] * 24).astype(np.float32)
    fn = qn.gated_delta_rule(DELTA, 1, 128)
    o, S = tang.compile(fn, target="c")(*xs)
    want_o, want_S = delta_reference(DELTA, *xs)
    for got, want in ((o, want_o), (S, want_S)):
        assert np.isfinite(got).all()
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err < 1e-6, err


def test_delta_config_from_transformers():
    hf = SimpleNamespace(linear_num_key_heads=16, linear_num_value_heads=32,
                         linear_key_head_dim=128, linear_value_head_dim=128)
    assert qn.delta_config_from(hf) == qn.QWEN3_NEXT_DELTA
    with pytest.raises(ValueError, match="not a multiple"):
        qn.DeltaConfig(key_heads=3, value_heads=4)


def run_mlir(text, xs, tmp_path, passes=()):
    """tang-run's outputs of the module `text` after tang-opt `passes`."""
    src = tmp_path / "prog.mlir"
    src.write_text(text)
    if passes:
        r = subprocess.run([str(TANG_BIN / "tang-opt"), str(src), *passes,
                            "-o", str(tmp_path / "opt.mlir")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        src = tmp_path / "opt.mlir"
    args = []
    for i, x in enumerate(xs):
        np.save(tmp_path / f"in{i}.npy", x)
        args += ["--input", str(tmp_path / f"in{i}.npy")]
    out = tmp_path / "out"
    r = subprocess.run([str(TANG_BIN / "tang-run"), str(src), *args,
                        "--output-dir", str(out)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return src.read_text(), [np.load(out / f"output_{k}.npy")
                             for k in range(2)]


@pytest.mark.parametrize("batch, length, chunk, initial_state", [
    (2, 12, 4, True), (2, 12, 3, False), (1, 7, 0, True), (1, 1, 1, True),
    (1, 12, 12, False), (1, 40, 0, False), (1, 40, 8, True)])
def test_chunked_gated_delta_rule(tmp_path, batch, length, chunk,
                                  initial_state):
    """--tang-chunk-affine-scan derives the chunked (WY) form of the gated
    delta rule from its per-step scan: on the interpreter it gives the
    per-step recurrence's outputs and final state, for chunks of 1 to 12
    steps (powers of two and not: ceil(log2 C) Neumann products), with and
    without an initial state. (A one-step scan is chunked only when asked:
    the pass's own choice leaves it, test/Transforms/
    tang-chunk-affine-scan-auto.mlir.)"""
    xs = delta_inputs(DELTA, batch, length, initial_state=initial_state)
    fn = qn.gated_delta_rule(DELTA, batch, length, initial_state)
    text, (o, S) = run_mlir(fn.mlir(), xs, tmp_path,
                            [f"--tang-chunk-affine-scan=chunk={chunk}"])
    assert "tang.chunked" in text   # the rewrite happened
    steps = chunk or max(c for c in range(1, 65) if length % c == 0)
    assert f"x{length // steps}x{DELTA.key_dim}x{DELTA.key_dim}xf32" in text
    want_o, want_S = delta_reference(DELTA, *xs)
    for got, want in ((o, want_o), (S, want_S)):
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, want, rtol=1e-11,
                                   atol=1e-11 * np.abs(want).max())


@pytest.mark.parametrize("batch, initial_state", [(3, True), (2, False)])
def test_one_step_gated_delta_rule(tmp_path, batch, initial_state):
    """A one-step scan (the decode update) with the pass's own chunk
    becomes its map, S = d S0 + u (w^T S0) + p v^T, no transition formed:
    on the interpreter it gives the recurrence's output and state."""
    xs = delta_inputs(DELTA, batch, 1, initial_state=initial_state)
    fn = qn.gated_delta_rule(DELTA, batch, 1, initial_state)
    text, (o, S) = run_mlir(fn.mlir(), xs, tmp_path,
                            ["--tang-chunk-affine-scan"])
    assert "tang.tensor_scan" not in text and "tang.chunked" not in text
    want_o, want_S = delta_reference(DELTA, *xs)
    for got, want in ((o, want_o), (S, want_S)):
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, want, rtol=1e-12,
                                   atol=1e-12 * np.abs(want).max())


def test_gated_delta_rule_with_the_layers_gates():
    """raw_gates: g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b)
    computed inside (as Qwen3NextGatedDeltaNet does), on the interpreter."""
    rng = np.random.default_rng(9)
    q, k, v, _, _ = delta_inputs(DELTA, 2, 6)
    H = DELTA.value_heads
    a, b = (rng.standard_normal((2, 6, H)).astype(np.float32)
            for _ in range(2))
    A_log = rng.uniform(-1, 1, H).astype(np.float32)
    dt_bias = rng.uniform(-1, 1, H).astype(np.float32)
    fn = qn.gated_delta_rule(DELTA, 2, 6, raw_gates=True)
    o, S = tang.compile(fn, target="interpreter")(q, k, v, a, b, A_log,
                                                   dt_bias)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    g = -np.exp(A_log.astype(np.float64)) * np.log1p(
        np.exp(a64 + dt_bias.astype(np.float64)))
    beta = 1 / (1 + np.exp(-b64))
    want_o, want_S = delta_reference(DELTA, q, k, v, g, beta)
    for got, want in ((o, want_o), (S, want_S)):
        np.testing.assert_allclose(got, want, rtol=1e-12,
                                   atol=1e-12 * np.abs(want).max())


def tang_run(path, entry, xs, tmp_path, tag):
    args = []
    for i, x in enumerate(xs):
        np.save(tmp_path / f"{tag}{i}.npy", x)
        args += ["--input", str(tmp_path / f"{tag}{i}.npy")]
    out = tmp_path / f"{tag}_out"
    r = subprocess.run([str(TANG_BIN / "tang-run"), str(path),
                        f"--entry={entry}", *args, "--output-dir", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    n = len(list(out.glob("output_*.npy")))
    return [np.load(out / f"output_{k}.npy") for k in range(n)]


@pytest.mark.parametrize("chunk", [False, True])
def test_gated_delta_rule_gradient_matches_finite_differences(tmp_path,
                                                              chunk):
    """--tang-grad of the rule (the states' cotangent a scan of the
    transposed transitions run backwards; dB = L, dA = L S^T, dS0 = A_0^T
    L_0), through the reference interpreter, as written and after
    --tang-chunk-affine-scan (which chunks the forward scan; the backward
    one, whose transitions are reads of the forward's, stays per step):
    <grad, v> against central differences of <do, o> + <dS, S>, for every
    argument (q, k, v, g, beta, S0)."""
    B, T = 1, 6
    xs = delta_inputs(DELTA, B, T, initial_state=True)
    fn = qn.gated_delta_rule(DELTA, B, T, initial_state=True)
    src = tmp_path / "rule.mlir"
    src.write_text(fn.mlir())
    grad = tmp_path / "grad.mlir"
    passes = (["--tang-chunk-affine-scan=chunk=3"] if chunk else []) + [
        "--tang-grad"]
    r = subprocess.run([str(TANG_BIN / "tang-opt"), str(src), *passes,
                        "-o", str(grad)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    rng = np.random.default_rng(11)
    o, S = tang_run(src, "gated_delta_rule", xs, tmp_path, "f")
    do = rng.uniform(-1, 1, o.shape).astype(np.float32)
    dS = rng.uniform(-1, 1, S.shape).astype(np.float32)
    grads = tang_run(grad, "gated_delta_rule_grad", xs + [do, dS], tmp_path,
                     "g")
    assert len(grads) == len(xs)
    h = 1e-3
    for k, (x, g) in enumerate(zip(xs, grads)):
        assert g.shape == x.shape and np.isfinite(g).all(), k
        v = rng.uniform(-1, 1, x.shape)
        up, down = list(xs), list(xs)
        up[k] = (x.astype(np.float64) + h * v).astype(np.float32)
        down[k] = (x.astype(np.float64) - h * v).astype(np.float32)
        dv = (up[k].astype(np.float64) - down[k]) / 2

        def loss(args, tag):
            o, S = tang_run(src, "gated_delta_rule", args, tmp_path, tag)
            return np.sum(do * o) + np.sum(dS * S)
        numeric = (loss(up, f"u{k}") - loss(down, f"d{k}")) / 2
        analytic = float(np.sum(g * dv))
        assert abs(analytic - numeric) <= 2e-3 * max(1.0, abs(numeric)), (
            k, analytic, numeric)


# ---------------------------------------------------------------------------
# Gated attention
# ---------------------------------------------------------------------------

ATTN = qn.TINY_ATTENTION


def attention_inputs(cfg, tokens, seed=7):
    """x [T, D] and the weights: random, none zero; the norms' weights
    around 0 (zero-centred: the scale is 1 + weight)."""
    rng = np.random.default_rng(seed)

    def draw(shape, scale):
        return (rng.uniform(0.2, 1.0, shape) * rng.choice([-1.0, 1.0], shape)
                * scale).astype(np.float32)
    x = draw((tokens, cfg.hidden), 1.0)
    W = {name: draw(shape, 0.3 if "norm" in name else 2 / np.sqrt(shape[-1]))
         for name, shape in qn.attention_weight_shapes(cfg).items()}
    return x, W


def attention_reference(cfg, x, W):
    """Qwen3NextAttention in float64: q/gate as each head's two halves of
    q_proj, Qwen3NextRMSNorm (x rsqrt(mean x^2 + eps) (1 + w)), partial
    RoPE (rotate_half on the first rotary_dim dims, cos/sin of position
    times theta^(-2j/rotary_dim) repeated twice), causal grouped-query
    softmax attention, times sigmoid(gate), o_proj. The program's f32
    constants (eps, the softmax scale, the frequencies' exponent) are
    taken as f32 rounds them: the float64 interpreter computes with
    them."""
    f32 = np.float32
    T, H, Hk, Dh = x.shape[0], cfg.heads, cfg.kv_heads, cfg.head_dim
    x = x.astype(np.float64)
    W = {k: v.astype(np.float64) for k, v in W.items()}
    qg = (x @ W["wq"].T).reshape(T, H, 2 * Dh)
    q, gate = qg[..., :Dh], qg[..., Dh:].reshape(T, H * Dh)
    k = (x @ W["wk"].T).reshape(T, Hk, Dh)
    v = (x @ W["wv"].T).reshape(T, Hk, Dh)

    def norm(y, w):
        return y / np.sqrt((y * y).mean(-1, keepdims=True)
                           + float(f32(cfg.eps))) * (1 + w)
    q, k = norm(q, W["q_norm"]), norm(k, W["k_norm"])
    rot = cfg.rotary_dim
    inv = np.exp(np.arange(rot // 2) * float(
        f32(-2.0 * np.log(cfg.rope_theta) / rot)))
    ang = np.arange(T)[:, None] * inv[None, :]
    cos = np.cos(np.concatenate([ang, ang], -1))[:, None, :]
    sin = np.sin(np.concatenate([ang, ang], -1))[:, None, :]

    def rope(y):
        r, p = y[..., :rot], y[..., rot:]
        half = np.concatenate([-r[..., rot // 2:], r[..., :rot // 2]], -1)
        return np.concatenate([r * cos + half * sin, p], -1)
    q, k = rope(q), rope(k)
    group = H // Hk
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = np.einsum("rhe,jhe->hrj", q, k) * float(f32(1 / np.sqrt(Dh)))
    s = np.where(np.tril(np.ones((T, T), bool))[None], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = np.einsum("hrj,jhe->rhe", p, v).reshape(T, H * Dh)
    return (o / (1 + np.exp(-gate))) @ W["wo"].T


@pytest.mark.parametrize("target", ["interpreter", "c"])
def test_gated_attention_matches_transformers_math(target):
    """Every element of the layer's output against the float64 NumPy layer
    (positions 0..T-1, causal, two query heads a key head, RoPE on half of
    each head)."""
    T = 6
    x, W = attention_inputs(ATTN, T)
    got = tang.compile(qn.gated_attention(ATTN, T), target=target)(
        x, *W.values())
    want = attention_reference(ATTN, x, W)
    assert got.shape == want.shape and np.isfinite(got).all()
    err = np.abs(got - want).max() / np.abs(want).max()
    # float64: sums of <= 24 terms; float32: four chained products and
    # a softmax of values O(1), 24-term sums: a few hundred ulps at most.
    assert err <= {"interpreter": 1e-12, "c": 2e-5}[target], err


def test_gated_attention_check_sees_the_rotary_dims():
    """A wrong rotation partner or frequency shows: the same layer with the
    rotary dims cut to 2 (other frequencies and partners) disagrees with
    the reference of rotary_dim 4 by far more than rounding."""
    T = 6
    x, W = attention_inputs(ATTN, T)
    got = tang.compile(qn.gated_attention(replace(ATTN, rotary_dim=2), T),
                       target="interpreter")(x, *W.values())
    want = attention_reference(ATTN, x, W)
    assert np.abs(got - want).max() > 1e-3 * np.abs(want).max()


def test_attention_config_from_transformers():
    hf = SimpleNamespace(hidden_size=2048, num_attention_heads=16,
                         num_key_value_heads=2, head_dim=256,
                         partial_rotary_factor=0.25, rope_theta=10000.0,
                         rms_norm_eps=1e-6)
    assert qn.attention_config_from(hf) == qn.QWEN3_NEXT_ATTENTION
    # transformers 5 keeps theta and the rotary factor in rope_parameters.
    hf5 = SimpleNamespace(hidden_size=2048, num_attention_heads=16,
                          num_key_value_heads=2, head_dim=256,
                          rms_norm_eps=1e-6, rope_parameters={
                              "rope_theta": 10000.0,
                              "partial_rotary_factor": 0.25})
    assert qn.attention_config_from(hf5) == qn.QWEN3_NEXT_ATTENTION
    with pytest.raises(ValueError, match="rotary_dim"):
        qn.AttentionConfig(rotary_dim=3)


def check_gradient(fn, xs, tmp_path, h, rtol, seed=13):
    """--tang-grad of `fn` (one result) through the reference interpreter:
    <grad_k, v> against central differences of <dy, y> along a random v,
    for every argument k."""
    src = tmp_path / "layer.mlir"
    src.write_text(fn.mlir())
    grad = tmp_path / "grad.mlir"
    r = subprocess.run([str(TANG_BIN / "tang-opt"), str(src), "--tang-grad",
                        "-o", str(grad)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    rng = np.random.default_rng(seed)
    (y,) = tang_run(src, fn.name, xs, tmp_path, "f")
    dy = rng.uniform(-1, 1, y.shape).astype(np.float32)
    grads = tang_run(grad, f"{fn.name}_grad", xs + [dy], tmp_path, "g")
    assert len(grads) == len(xs)
    for k, (x, g) in enumerate(zip(xs, grads)):
        assert g.shape == x.shape and np.isfinite(g).all(), k
        v = rng.uniform(-1, 1, x.shape)
        up, down = list(xs), list(xs)
        up[k] = (x.astype(np.float64) + h * v).astype(np.float32)
        down[k] = (x.astype(np.float64) - h * v).astype(np.float32)
        dv = (up[k].astype(np.float64) - down[k]) / 2

        def loss(args, tag):
            (out,) = tang_run(src, fn.name, args, tmp_path, tag)
            return np.sum(dy * out)
        numeric = (loss(up, f"u{k}") - loss(down, f"d{k}")) / 2
        analytic = float(np.sum(g * dv))
        assert numeric != 0 and analytic != 0, k
        assert abs(analytic - numeric) <= rtol * max(1.0, abs(numeric)), (
            k, analytic, numeric)


def test_moe_layer_gradient_matches_finite_differences(tmp_path):
    """--tang-grad of the MoE layer (routing by ranks, gathers of the
    selected experts, renormalised weights, the gated shared expert)
    through the interpreter, for the tokens and every weight. The routing
    is piecewise constant: the step moves every logit by far less than the
    smallest gap between a token's k-th and (k+1)-th logit, so both sides
    route alike and the differences see the smooth part, which the
    gradient must match."""
    x, W = tokens(CFG), weights(CFG)
    h = 1e-4
    # A step of h (|v| <= 1) in x or the router moves a logit by at most:
    moved = h * max(np.abs(W["router"]).sum(1).max(), np.abs(x).sum(1).max())
    assert margin(CFG, x, W) > 2 * moved
    check_gradient(qn.moe_layer(CFG, TOKENS), [x, *W.values()], tmp_path, h,
                   rtol=1e-4)


def test_gated_attention_gradient_matches_finite_differences(tmp_path):
    """--tang-grad of the gated attention layer (the flash backward of the
    causal grouped-query softmax, RoPE, the zero-centred norms, the output
    gate, the four products) through the interpreter, for the tokens and
    every weight."""
    x, W = attention_inputs(ATTN, 6)
    check_gradient(qn.gated_attention(ATTN, 6), [x, *W.values()], tmp_path,
                   h=1e-3, rtol=1e-4)


def test_training_program_runs_forward_then_backward(tmp_path):
    """tang.autodiff.training_program: the split training step alone
    (@f_fwd, @f_bwd and the monoid they use), what bench/prepare_delta.py
    and prepare_moe.py compile for the GPU: on the interpreter, the forward
    gives the rule's outputs and the backward the gradients of the
    unsplit @f_grad, for every argument."""
    from tang.autodiff import gradient_program, training_program
    xs = delta_inputs(DELTA, 1, 6)
    fn = qn.gated_delta_rule(DELTA, 1, 6)
    train = tmp_path / "train.mlir"
    train.write_text(training_program(fn))
    text = train.read_text()
    assert "tang.monoid" in text and "@gated_delta_rule_fwd(" in text
    assert "@gated_delta_rule_bwd(" in text
    assert "@gated_delta_rule(" not in text
    assert "@gated_delta_rule_grad(" not in text
    whole = tmp_path / "whole.mlir"
    whole.write_text(gradient_program(fn))
    fwd = tang_run(train, "gated_delta_rule_fwd", xs, tmp_path, "f")
    want_o, want_S = delta_reference(DELTA, *xs)
    for got, want in zip(fwd[:2], (want_o, want_S)):
        np.testing.assert_allclose(got, want, rtol=1e-12,
                                   atol=1e-12 * np.abs(want).max())
    rng = np.random.default_rng(3)
    cot = [rng.uniform(-1, 1, want_o.shape).astype(np.float32),
           rng.uniform(-1, 1, want_S.shape).astype(np.float32)]
    grads = tang_run(train, "gated_delta_rule_bwd", xs + fwd + cot, tmp_path,
                     "b")
    whole_grads = tang_run(whole, "gated_delta_rule_grad", xs + cot,
                           tmp_path, "w")
    assert len(grads) == len(xs) == len(whole_grads)
    for g, w in zip(grads, whole_grads):
        assert np.isfinite(g).all() and np.abs(w).max() > 0
        np.testing.assert_allclose(g, w, rtol=1e-9,
                                   atol=1e-9 * np.abs(w).max())
