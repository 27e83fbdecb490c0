"""The layers of a hybrid (Qwen3-Next-shaped) model as tang graphs.

Today: the sparse mixture-of-experts layer (``moe_layer``): router,
top-k routing, renormalised routing weights, the selected experts' SwiGLU
MLPs, their weighted combine and the gated shared expert, written once as
math; and the gated delta rule of the linear-attention layers
(``gated_delta_rule``), a scan of matrix states under the composition of
affine maps (``tang.tensor_scan``), chunked by ``--tang-chunk-affine-scan``;
and the gated attention of the full-attention layers (``gated_attention``:
q/gate projection, zero-centred q/k norms, partial RoPE, causal
grouped-query attention at head dim 256, the sigmoid output gate, the
output projection). The kernels are the compiler's.

Shapes follow PyTorch's ``nn.Linear`` (weights ``[out, in]``) and the
per-expert weights are stacked on a leading expert axis:

    router        [E, D]       gate.weight
    w_gate, w_up  [E, F, D]    experts[e].gate_proj / up_proj .weight
    w_down        [E, D, F]    experts[e].down_proj.weight
    s_gate, s_up  [Fs, D]      shared_expert.gate_proj / up_proj .weight
    s_down        [D, Fs]      shared_expert.down_proj.weight
    s_router      [1, D]       shared_expert_gate.weight

The math, per token t (``transformers``' Qwen3NextSparseMoeBlock):

    logits[e] = x . router[e]
    p         = softmax(logits)                  (f32)
    sel       = the top_k experts of p, largest first (ties: lower index)
    w[s]      = p[sel[s]] / sum_s' p[sel[s']]    (norm_topk: else p[sel[s]])
    h[s, f]   = silu(x . w_gate[sel[s], f]) * (x . w_up[sel[s], f])
    y[d]      = sum_s w[s] sum_f h[s, f] w_down[sel[s], d, f]
              + sigmoid(x . s_router) * (the shared expert's SwiGLU of x)[d]

The top-k ranks every expert (how many logits beat it; ties to the lower
index, as a stable sort); slot s takes the expert of rank s: exact, every
expert in parallel. With ``norm_topk`` the
routing weights need only the selected logits: ``w[s] = exp(v_s - v_0) /
sum_s' exp(v_s' - v_0)`` (the softmax's denominator cancels); without it
the full denominator is a sum over all E.

Storage is ``cfg.dtype`` (bf16 for the model, f32 for the checks on the
CPU); arithmetic and accumulation are f32; the output is f32.
"""

import inspect
import math
from dataclasses import dataclass, replace
from typing import Dict, Tuple

from .. import lang as t
from ..lang import bf16, f32, i32

__all__ = ["MoeConfig", "QWEN3_NEXT_MOE", "TINY_MOE", "moe_weight_shapes",
           "moe_layer", "moe_selected_bytes", "moe_config_from",
           "moe_grouping", "DeltaConfig", "QWEN3_NEXT_DELTA", "TINY_DELTA",
           "delta_config_from", "affine_state_monoid", "gated_delta_rule",
           "AttentionConfig", "QWEN3_NEXT_ATTENTION", "TINY_ATTENTION",
           "attention_config_from", "attention_weight_shapes",
           "gated_attention"]


@dataclass(frozen=True)
class MoeConfig:
    """The sparse MoE layer's shape (defaults: ``transformers``'
    ``Qwen3NextConfig()``: hidden 2048, 512 experts of ffn 512, 10 routed,
    a shared expert of ffn 512) and its storage type."""
    hidden: int = 2048
    experts: int = 512
    ffn: int = 512
    top_k: int = 10
    shared_ffn: int = 512
    norm_topk: bool = True
    dtype: t.DType = bf16

    def __post_init__(self):
        if not 1 <= self.top_k <= self.experts:
            raise ValueError(f"top_k {self.top_k} is not in "
                             f"[1, {self.experts}] (the experts)")

    def with_dtype(self, dtype: t.DType) -> "MoeConfig":
        return replace(self, dtype=dtype)


QWEN3_NEXT_MOE = MoeConfig()
#: Small enough for the interpreter (the checks in CI).
TINY_MOE = MoeConfig(hidden=32, experts=12, ffn=16, top_k=3, shared_ffn=24,
                     dtype=f32)


def moe_config_from(hf_config, dtype=bf16) -> MoeConfig:
    """The MoE shape of a ``transformers`` Qwen3-Next (or Qwen3-MoE)
    config object; a shared expert of size 0 when it has none."""
    return MoeConfig(hidden=hf_config.hidden_size,
                     experts=hf_config.num_experts,
                     ffn=hf_config.moe_intermediate_size,
                     top_k=hf_config.num_experts_per_tok,
                     shared_ffn=getattr(hf_config,
                                        "shared_expert_intermediate_size", 0),
                     norm_topk=bool(hf_config.norm_topk_prob), dtype=dtype)


def moe_weight_shapes(cfg: MoeConfig) -> Dict[str, Tuple[int, ...]]:
    """The weights in argument order (after the tokens), name -> shape."""
    E, D, F, Fs = cfg.experts, cfg.hidden, cfg.ffn, cfg.shared_ffn
    shapes = {"router": (E, D), "w_gate": (E, F, D), "w_up": (E, F, D),
              "w_down": (E, D, F)}
    if Fs:
        shapes.update(s_gate=(Fs, D), s_up=(Fs, D), s_down=(D, Fs),
                      s_router=(1, D))
    return shapes


def moe_selected_bytes(cfg: MoeConfig, tokens: int) -> int:
    """The layer's floor of traffic for ``tokens`` tokens at batch sizes
    where every token's experts differ: the router, the selected experts'
    weights (at most every expert once), the shared expert, the tokens in
    and the f32 output."""
    size = cfg.dtype.bits // 8
    E, D, F, Fs = cfg.experts, cfg.hidden, cfg.ffn, cfg.shared_ffn
    used = min(E, tokens * cfg.top_k)
    n = E * D + used * 3 * F * D + (3 * Fs * D + D if Fs else 0)
    return n * size + tokens * D * (size + 4)


def _w(x):
    return x.astype(f32)


def moe_layer(cfg: MoeConfig, tokens: int) -> t.Function:
    """``(x [tokens, D], weights...) -> y [tokens, D] (f32)``: the sparse
    MoE layer (the module docstring's math) for ``tokens`` tokens."""
    T, E, D, F, K, Fs = (tokens, cfg.experts, cfg.hidden, cfg.ffn,
                         cfg.top_k, cfg.shared_ffn)
    names = ["x"] + list(moe_weight_shapes(cfg))

    def layer(x, *weights):
        W = dict(zip(moe_weight_shapes(cfg), weights))
        logits = t.compute((T, E), lambda r, e: t.sum(
            D, lambda d: _w(W["router"][e, d]) * _w(x[r, d])),
            materialize=True)
        # Top-k by rank: expert e's rank is the number of experts before it
        # (a larger logit, or an equal one at a lower index: ranks are
        # distinct); slot s holds the expert of rank s. Two passes over the
        # logits, every expert and slot in parallel, exact.
        one, zero = t.constant(1, i32), t.constant(0, i32)

        def rank(r, e):
            le, ie = logits[r, e], t.index_value(e)
            return t.sum(E, lambda e2: t.where(
                (logits[r, e2] > le) | (logits[r, e2].eq(le)
                                        & (t.index_value(e2) < ie)),
                one, zero))
        ranks = t.compute((T, E), rank, materialize=True)
        sel = t.compute((T, K), lambda r, s: t.sum(E, lambda e: t.where(
            ranks[r, e].eq(t.index_value(s)), t.index_value(e), zero)),
            materialize=True)
        picked = logits.gather_policy("clamp")

        def top(r, s):
            return picked[r, sel[r, s]]
        if cfg.norm_topk:
            # The softmax's denominator cancels: only the selected logits.
            def weight(r, s):
                den = t.sum(K, lambda s2: t.exp(top(r, s2) - top(r, 0)))
                return t.exp(top(r, s) - top(r, 0)) / den
        else:
            def weight(r, s):
                den = t.sum(E, lambda e: t.exp(logits[r, e] - top(r, 0)))
                return t.exp(top(r, s) - top(r, 0)) / den
        wts = t.compute((T, K), weight, materialize=True)
        gate, up, down = (W[n].gather_policy("clamp")
                          for n in ("w_gate", "w_up", "w_down"))

        # Each slot's expert MLP, gathered by the routed expert: a
        # matrix-vector product per (token, slot) at decode batches.
        def hidden(r, s, f):
            g = t.sum(D, lambda d: _w(gate[sel[r, s], f, d]) * _w(x[r, d]))
            u = t.sum(D, lambda d: _w(up[sel[r, s], f, d]) * _w(x[r, d]))
            return g * t.sigmoid(g) * u * wts[r, s]
        h = t.compute((T, K, F), hidden, materialize=True)
        dn = t.compute((T, K, D), lambda r, s, d: t.sum(
            F, lambda f: h[r, s, f] * _w(down[sel[r, s], d, f])),
            materialize=True)

        def out(r, d):
            y = t.sum(K, lambda s: dn[r, s, d])
            if Fs:
                y = y + shared[r, d]
            return y
        if Fs:
            sg = t.compute((T,), lambda r: t.sigmoid(t.sum(
                D, lambda d: _w(W["s_router"][0, d]) * _w(x[r, d]))))

            def s_hidden(r, f):
                g = t.sum(D, lambda d: _w(W["s_gate"][f, d]) * _w(x[r, d]))
                u = t.sum(D, lambda d: _w(W["s_up"][f, d]) * _w(x[r, d]))
                return g * t.sigmoid(g) * u * sg[r]
            sh = t.compute((T, Fs), s_hidden, materialize=True)
            shared = t.compute((T, D), lambda r, d: t.sum(
                Fs, lambda f: sh[r, f] * _w(W["s_down"][d, f])))
        return t.compute((T, D), out)

    layer.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
         for n in names])
    types = [cfg.dtype[T, D]] + [cfg.dtype[s] for s in
                                 moe_weight_shapes(cfg).values()]
    return t.Function(layer, name="moe_layer", arg_types=types)


def moe_grouping(cfg: MoeConfig, tokens: int) -> t.Function:
    """``(sel [tokens, K] i32) -> (counts [E], offsets [E], rows [tokens,
    K], perm [tokens * K], slot [tokens * K])`` (all i32): the routed
    (token, slot) pairs grouped by expert, the order a grouped product
    reads them in. ``sel`` holds each token's K distinct experts (as
    ``moe_layer`` routes them). Expert e's group is ``counts[e]`` rows from
    ``offsets[e]`` (an exclusive prefix sum), its tokens in increasing
    order; ``rows[t, s]`` is where pair (t, s) lands, ``perm[i]`` the token
    of grouped row i and ``slot[i]`` its slot (so that a combine can read
    the routing weight back). Written with a scatter of the membership, two
    scans and two inserts at distinct coordinates. (On kernels the two
    inserts run in one thread, in order: that every pair lands on its own
    row is not something the IR can state yet, and a scatter whose points
    may collide is combined in index order.)"""
    T, E, K = tokens, cfg.experts, cfg.top_k

    def grouping(sel):
        one = t.constant(1, i32)
        # member[t, e]: whether token t routed to expert e (its K experts
        # are distinct: the inserts never collide).
        empty = t.compute((T, E), lambda r, e: t.index_value(e) * 0,
                          materialize=True)
        member = t.scatter(empty, (T, K), lambda r, k: (
            one, (r, sel[r, k])), policy="drop")
        counts = t.compute((E,), lambda e: t.sum(T, lambda r: member[r, e]))
        # Inclusive prefix sums, made exclusive: offsets along the experts,
        # each expert's earlier tokens along the tokens.
        upto = t.scan((E,), "add", lambda e: counts[e])
        offsets = t.compute((E,), lambda e: upto[e] - counts[e])
        seen = t.scan((E, T), "add", lambda e, r: member[r, e])
        at_offset = offsets.gather_policy("clamp")
        before = seen.gather_policy("clamp")
        # Where pair (t, s) lands: its expert's offset plus how many
        # earlier tokens chose the same expert.
        rows = t.compute((T, K), lambda r, k: at_offset[sel[r, k]]
                         + before[sel[r, k], r] - one, materialize=True)
        blank = t.compute((T * K,), lambda i: t.index_value(i) * 0,
                          materialize=True)
        perm = t.scatter(blank, (T, K), lambda r, k: (
            t.index_value(r), (rows[r, k],)), policy="drop")
        slot = t.scatter(blank, (T, K), lambda r, k: (
            t.index_value(k), (rows[r, k],)), policy="drop")
        return counts, offsets, rows, perm, slot

    grouping.__signature__ = inspect.Signature(
        [inspect.Parameter("sel", inspect.Parameter.POSITIONAL_OR_KEYWORD)])
    return t.Function(grouping, name="moe_grouping", arg_types=[i32[T, K]])


# ---------------------------------------------------------------------------
# The gated delta rule (Gated DeltaNet), the linear-attention layers' core
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class DeltaConfig:
    """The gated delta rule's shape (defaults: ``Qwen3NextConfig()``'s
    linear attention: 16 query/key heads and 32 value heads, both of dim
    128; each key head serves ``value_heads // key_heads`` value heads, as
    ``repeat_interleave`` does) and the storage type of q, k, v and beta
    (the decay ``g`` is f32, the state and the output f32)."""
    key_heads: int = 16
    value_heads: int = 32
    key_dim: int = 128
    value_dim: int = 128
    dtype: t.DType = bf16

    def __post_init__(self):
        if self.value_heads % self.key_heads:
            raise ValueError(f"{self.value_heads} value heads are not a "
                             f"multiple of {self.key_heads} key heads")


QWEN3_NEXT_DELTA = DeltaConfig()
#: Small enough for the interpreter, which holds every step's state.
TINY_DELTA = DeltaConfig(key_heads=2, value_heads=4, key_dim=6, value_dim=5,
                         dtype=f32)


def delta_config_from(hf_config, dtype=bf16) -> DeltaConfig:
    """The gated delta rule's shape of a ``transformers`` Qwen3-Next
    config object."""
    return DeltaConfig(key_heads=hf_config.linear_num_key_heads,
                       value_heads=hf_config.linear_num_value_heads,
                       key_dim=hf_config.linear_key_head_dim,
                       value_dim=hf_config.linear_value_head_dim, dtype=dtype)


def affine_state_monoid(key_dim: int, value_dim: int) -> t.Monoid:
    """The composition of the affine maps ``S -> A S + B`` on ``[K, V]``
    states, first then second: ``(A1, B1) * (A2, B2) = (A2 A1, A2 B1 +
    B2)``. Associative, not commutative."""
    K, V = key_dim, value_dim

    def combine(a, b):
        A = t.compute((K, K), lambda i, j: t.sum(
            K, lambda k: b[0][i, k] * a[0][k, j]))
        B = t.compute((K, V), lambda i, j: t.sum(
            K, lambda k: b[0][i, k] * a[1][k, j]) + b[1][i, j])
        return A, B
    return t.Monoid(f"affine_state_{K}x{V}", [f32[K, K], f32[K, V]], None,
                    combine)


def gated_delta_rule(cfg: DeltaConfig, batch: int, length: int,
                     initial_state: bool = False,
                     raw_gates: bool = False) -> t.Function:
    """``(q, k [B, T, Hk, K], v [B, T, Hv, V], g [B, T, Hv] (f32), beta
    [B, T, Hv] (, S0 [B, Hv, K, V] (f32))) -> (o [B, T, Hv, V], S [B, Hv,
    K, V])`` (f32): Qwen3-Next's gated delta rule as ``transformers``'
    ``torch_recurrent_gated_delta_rule`` computes it (q and k L2-normalised
    inside, eps 1e-6; q scaled by ``K ** -0.5``). Per value head h (key
    head ``h // (Hv / Hk)``) and step t, with ``alpha = exp(g)``:

        S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T
        o_t = S_t^T q_t

    the scan of the pairs ``(A_t, B_t)`` under ``affine_state_monoid``,
    from ``(I, S0)`` (S0 zero without ``initial_state``); S is the state
    after the last step. ``length`` 1 with an initial state is the decode
    update. With ``raw_gates`` the gates are the layer's: ``g`` and
    ``beta`` are replaced by ``a``, ``b`` ([B, T, Hv], cfg.dtype), ``A_log``
    and ``dt_bias`` ([Hv], f32), and ``g = -exp(A_log) softplus(a +
    dt_bias)``, ``beta = sigmoid(b)`` (Qwen3NextGatedDeltaNet)."""
    B, T, Hk, Hv = batch, length, cfg.key_heads, cfg.value_heads
    K, V, per = cfg.key_dim, cfg.value_dim, cfg.value_heads // cfg.key_heads
    scale = K ** -0.5
    gates = ["a", "b", "A_log", "dt_bias"] if raw_gates else ["g", "beta"]
    names = ["q", "k", "v"] + gates + (["S0"] if initial_state else [])

    def rule(q, k, v, *rest):
        rest = list(rest)
        S0 = rest.pop() if initial_state else None
        if raw_gates:
            a, b, A_log, dt_bias = rest
            g = t.compute((B, T, Hv), lambda n, s, h: -t.exp(A_log[h]) * t.log(
                1.0 + t.exp(_w(a[n, s, h]) + dt_bias[h])))
            beta = t.compute((B, T, Hv), lambda n, s, h: t.sigmoid(
                _w(b[n, s, h])))
        else:
            g, beta = rest

        def l2norm(x, scale=1.0):
            inv = t.compute((B, T, Hk), lambda b, s, h: t.rsqrt(t.sum(
                K, lambda i: _w(x[b, s, h, i]) * _w(x[b, s, h, i])) + 1e-6))
            return t.compute((B, T, Hk, K), lambda b, s, h, i: _w(
                x[b, s, h, i]) * inv[b, s, h] * scale)
        qn, kn = l2norm(q, scale), l2norm(k)
        A = t.compute((B, Hv, T, K, K), lambda b, h, s, i, j: t.exp(
            g[b, s, h]) * (t.where(i.eq(j), 1.0, 0.0) - _w(beta[b, s, h])
                           * kn[b, s, h // per, i] * kn[b, s, h // per, j]))
        Bt = t.compute((B, Hv, T, K, V), lambda b, h, s, i, j: _w(
            beta[b, s, h]) * kn[b, s, h // per, i] * _w(v[b, s, h, j]))
        eye = t.compute((B, Hv, K, K), lambda b, h, i, j: t.where(
            i.eq(j), 1.0, 0.0))
        if S0 is None:
            S0 = t.compute((B, Hv, K, V), lambda b, h, i, j: t.constant(
                0.0, f32))
        _, S = t.tensor_scan(affine_state_monoid(K, V), [A, Bt],
                             init=[eye, S0])
        o = t.compute((B, T, Hv, V), lambda b, s, h, j: t.sum(
            K, lambda i: S[b, h, s, i, j] * qn[b, s, h // per, i]))
        last = t.compute((B, Hv, K, V), lambda b, h, i, j: S[b, h, T - 1,
                                                              i, j])
        return o, last

    rule.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
         for n in names])
    types = [cfg.dtype[B, T, Hk, K], cfg.dtype[B, T, Hk, K],
             cfg.dtype[B, T, Hv, V]]
    types += ([cfg.dtype[B, T, Hv], cfg.dtype[B, T, Hv], f32[Hv], f32[Hv]]
              if raw_gates else [f32[B, T, Hv], cfg.dtype[B, T, Hv]])
    if initial_state:
        types.append(f32[B, Hv, K, V])
    return t.Function(rule, name="gated_delta_rule", arg_types=types)


# ---------------------------------------------------------------------------
# Gated attention (the full-attention layers)
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class AttentionConfig:
    """The gated attention layer's shape (defaults: ``Qwen3NextConfig()``:
    hidden 2048, 16 query heads and 2 key/value heads of dim 256, RoPE on
    the first quarter of each head (64 dims, theta 10000), eps 1e-6) and
    its storage type (weights, tokens)."""
    hidden: int = 2048
    heads: int = 16
    kv_heads: int = 2
    head_dim: int = 256
    rotary_dim: int = 64
    rope_theta: float = 10000.0
    eps: float = 1e-6
    dtype: t.DType = bf16

    def __post_init__(self):
        if self.heads % self.kv_heads:
            raise ValueError(f"{self.heads} query heads do not group over "
                             f"{self.kv_heads} key/value heads")
        if self.rotary_dim % 2 or not 0 < self.rotary_dim <= self.head_dim:
            raise ValueError(f"RoPE rotates pairs of the first rotary_dim "
                             f"dims: {self.rotary_dim} of {self.head_dim}")


QWEN3_NEXT_ATTENTION = AttentionConfig()
#: Small enough for the interpreter.
TINY_ATTENTION = AttentionConfig(hidden=24, heads=4, kv_heads=2, head_dim=8,
                                 rotary_dim=4, dtype=f32)


def attention_config_from(hf_config, dtype=bf16) -> AttentionConfig:
    """The gated attention's shape of a ``transformers`` Qwen3-Next config
    object (``rope_theta`` on the config, or in its ``rope_parameters``
    from transformers 5 on)."""
    theta = getattr(hf_config, "rope_theta", None)
    if theta is None:
        theta = (getattr(hf_config, "rope_parameters", None) or {}).get(
            "rope_theta", 10000.0)
    factor = getattr(hf_config, "partial_rotary_factor", None)
    if factor is None:
        factor = (getattr(hf_config, "rope_parameters", None) or {}).get(
            "partial_rotary_factor", 1.0)
    head_dim = getattr(hf_config, "head_dim", None) or (
        hf_config.hidden_size // hf_config.num_attention_heads)
    return AttentionConfig(
        hidden=hf_config.hidden_size, heads=hf_config.num_attention_heads,
        kv_heads=hf_config.num_key_value_heads, head_dim=head_dim,
        rotary_dim=int(head_dim * factor), rope_theta=float(theta),
        eps=hf_config.rms_norm_eps, dtype=dtype)


def attention_weight_shapes(cfg: AttentionConfig
                            ) -> Dict[str, Tuple[int, ...]]:
    """The weights in argument order, name -> shape (``nn.Linear``'s
    ``[out, in]``; ``wq`` holds each head's query then its gate, as
    ``q_proj`` does)."""
    D, H, Hk, Dh = cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim
    return {"wq": (2 * H * Dh, D), "wk": (Hk * Dh, D), "wv": (Hk * Dh, D),
            "wo": (D, H * Dh), "q_norm": (Dh,), "k_norm": (Dh,)}


def gated_attention(cfg: AttentionConfig, tokens: int) -> t.Function:
    """``(x [T, D], wq, wk, wv, wo, q_norm, k_norm) -> y [T, D]`` (f32):
    the gated attention layer of Qwen3-Next (``transformers``'
    ``Qwen3NextAttention``) over one sequence of ``tokens`` tokens at
    positions 0..T-1, causal:

        q, gate = the two halves of each head of x wq^T
        q, k    = zero-centred RMSNorm per head (times 1 + weight)
        q, k    = RoPE (rotate-half) on the first rotary_dim dims
        o       = softmax(q k^T / sqrt(Dh), causal) v     (grouped query)
        y       = (o * sigmoid(gate)) wo^T

    The products take tensor-core operands: x is stored in ``cfg.dtype``;
    the projections (q/gate, k, v, as transformers' bf16 ``nn.Linear``
    gives them), the normed queries and keys and the gated output are
    rounded to it; sums, norms, softmax and the gate are f32."""
    T, D = tokens, cfg.hidden
    H, Hk, Dh, rot = cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.rotary_dim
    half, group, dt = rot // 2, cfg.heads // cfg.kv_heads, cfg.dtype
    scale = 1.0 / math.sqrt(Dh)
    log_theta = math.log(cfg.rope_theta)
    names = list(attention_weight_shapes(cfg))

    def stored(shape, fn):
        # A tensor-core operand: computed in f32, stored in cfg.dtype.
        return t.compute(shape, lambda *i: fn(*i) if dt is f32 else
                         fn(*i).astype(dt), materialize=True)

    def linear(x, w, out):
        # Materialised: the norms, the rotation and the gate read each
        # element several times (fused, each read would redo the product).
        return stored((T, out), lambda r, n: t.sum(
            D, lambda c: _w(w[n, c]) * _w(x[r, c])))

    def norm_rope(y, width, base, heads, weight):
        # Head h of y [T, width] starts at column base(h); RMSNorm over it
        # times (1 + weight), then RoPE on its first rot dims at position r.
        ss = t.compute((T, heads), lambda r, h: t.sum(
            Dh, lambda e: _w(y[r, base(h) + e]) * _w(y[r, base(h) + e])))

        def normed(r, h, e):
            return (_w(y[r, base(h) + e]) * t.rsqrt(ss[r, h] / Dh + cfg.eps)
                    * (1.0 + _w(weight[e])))

        def rotated(r, h, e):
            j = e % half
            freq = t.exp(t.index_value(j, f32) * (-2.0 * log_theta / rot))
            angle = t.index_value(r, f32) * freq
            first = t.index_value(e, i32) < half
            # e < rot: x_e cos + (e < half ? -x_{e+half} : x_{e-half}) sin
            # (the partner is read at (e + half) mod rot: in range for any e).
            partner = normed(r, h, (e + half) % rot)
            partner = t.where(first, -partner, partner)
            inside = t.index_value(e, i32) < rot
            return t.where(inside, normed(r, h, e) * t.cos(angle)
                           + partner * t.sin(angle), normed(r, h, e))
        return stored((T, heads, Dh), rotated)

    def layer(x, wq, wk, wv, wo, q_norm, k_norm):
        qg = linear(x, wq, 2 * H * Dh)
        kk = linear(x, wk, Hk * Dh)
        vv = stored((T, Hk, Dh), lambda r, g, e: t.sum(
            D, lambda c: _w(wv[g * Dh + e, c]) * _w(x[r, c])))
        q = norm_rope(qg, 2 * H * Dh, lambda h: h * 2 * Dh, H, q_norm)
        k = norm_rope(kk, Hk * Dh, lambda g: g * Dh, Hk, k_norm)

        def score(r, h, j):
            s = t.sum(Dh, lambda e: _w(q[r, h, e]) * _w(k[j, h // group, e]))
            return t.where(t.index_value(j, i32) <= t.index_value(r, i32),
                           s * scale, float("-inf"))
        sc = t.compute((T, H, T), score)
        m = t.compute((T, H), lambda r, h: t.max(T, lambda j: sc[r, h, j]))
        z = t.compute((T, H), lambda r, h: t.sum(
            T, lambda j: t.exp(sc[r, h, j] - m[r, h])))
        p = t.compute((T, H, T), lambda r, h, j:
                      t.exp(sc[r, h, j] - m[r, h]) / z[r, h])
        o = t.compute((T, H, Dh), lambda r, h, e: t.sum(
            T, lambda j: p[r, h, j] * _w(vv[j, h // group, e])))
        gated = stored((T, H, Dh), lambda r, h, e: o[r, h, e]
                       * t.sigmoid(_w(qg[r, h * 2 * Dh + Dh + e])))
        return t.compute((T, D), lambda r, n: t.sum(
            H * Dh, lambda c: _w(wo[n, c]) * _w(gated[r, c // Dh, c % Dh])))

    layer.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
         for n in ["x"] + names])
    types = [cfg.dtype[T, D]] + [cfg.dtype[s] for s in
                                 attention_weight_shapes(cfg).values()]
    return t.Function(layer, name="gated_attention", arg_types=types)
