"""The layers of a hybrid (Qwen3-Next-shaped) model as tang graphs.

Today: the sparse mixture-of-experts layer (``moe_layer``): router,
top-k routing, renormalised routing weights, the selected experts' SwiGLU
MLPs, their weighted combine and the gated shared expert, written once as
math. The kernels are the compiler's.

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
from dataclasses import dataclass, replace
from typing import Dict, Tuple

from .. import lang as t
from ..lang import bf16, f32, i32

__all__ = ["MoeConfig", "QWEN3_NEXT_MOE", "TINY_MOE", "moe_weight_shapes",
           "moe_layer", "moe_selected_bytes", "moe_config_from",
           "moe_grouping"]


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
