"""A Qwen3-shaped decoder as tang graphs: one function per step.

The model is written once, as math, with tang.lang; the compiler makes the
kernels. Two graph builders:

* ``decode_step(cfg, batch, capacity)``: one token for each of ``batch``
  sequences at position ``pos`` (a size: one compiled bundle serves every
  position below the cache capacity). Embedding gather of the tokens,
  every layer (RMSNorm, the fused q/k/v product, q/k RMSNorm per head,
  RoPE, the new key and value written into the KV caches in place at
  ``pos``, grouped-query attention over the ``pos + 1`` cached positions,
  the output product, the SwiGLU MLP, residuals), the final norm, the LM
  head and a greedy argmax. Returns the next tokens and the two caches
  (donated: updated in place). With ``varlen=True`` (continuous batching)
  each sequence is at a position of its own, ``positions [batch]`` (i32)
  in place of ``pos``: it writes its own cache row and attends over its
  own positions, the rest of its cache masked (never read by the CUDA
  kernels).
* ``prefill(cfg, tokens, capacity)``: ``tokens`` tokens of one sequence at
  positions 0..tokens-1, causal attention among them, the caches filled at
  those positions, the next token after the last.

Shapes follow PyTorch's ``nn.Linear`` (weights ``[out, in]``); the per-layer
weights are stacked on a leading layer axis (``weight_shapes``), q/k/v and
gate/up concatenated along ``out`` as the fused checkpoints of serving
stacks hold them. Storage is ``cfg.dtype`` (bf16 for the model, f32 for
checks on the CPU); arithmetic and accumulation are f32; activations
between operators are f32.

The caches are ``[layers, batch, kv_heads, capacity, head_dim]``.

    from tang.models import qwen3
    step = qwen3.decode_step(qwen3.QWEN3_8B, batch=1, capacity=4224)
    print(step.mlir())

Token ids are gathered with the ``trap`` policy: the runtime checks them
against the vocabulary before anything runs (docs/Bundle.md, "Index
checks"; ``check_tokens`` does the same on the host, for a prompt); a
position at or beyond the cache capacity is refused by the runtime before
anything runs (the size requirement of the cache reads).
"""

import inspect
import math
from dataclasses import dataclass, replace
from typing import Dict, Tuple

from .. import lang as t
from ..lang import bf16, f32, i32

__all__ = ["Config", "QWEN3_8B", "TINY", "weight_shapes", "cache_shape",
           "decode_step", "prefill", "check_tokens", "weight_bytes"]


@dataclass(frozen=True)
class Config:
    """The shape of the model (defaults: Qwen3-8B) and its storage type."""
    layers: int = 36
    hidden: int = 4096
    heads: int = 32
    kv_heads: int = 8
    head_dim: int = 128
    ffn: int = 12288
    vocab: int = 151936
    rope_theta: float = 1e6
    eps: float = 1e-6
    dtype: t.DType = bf16

    def __post_init__(self):
        if self.heads % self.kv_heads:
            raise ValueError(f"{self.heads} query heads do not group over "
                             f"{self.kv_heads} key/value heads")
        if self.head_dim % 2:
            raise ValueError(f"RoPE rotates pairs: head_dim {self.head_dim} "
                             "is odd")

    def with_dtype(self, dtype: t.DType) -> "Config":
        return replace(self, dtype=dtype)


QWEN3_8B = Config()
#: A model small enough for the interpreter (the checks in CI).
TINY = Config(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=96,
              vocab=160, dtype=f32)


def weight_shapes(cfg: Config) -> Dict[str, Tuple[int, ...]]:
    """The weights in argument order, name -> shape."""
    L, D, Dh, F, V = cfg.layers, cfg.hidden, cfg.head_dim, cfg.ffn, cfg.vocab
    return {
        "embed": (V, D),
        "attn_norm": (L, D),
        "wqkv": (L, (cfg.heads + 2 * cfg.kv_heads) * Dh, D),
        "q_norm": (L, Dh),
        "k_norm": (L, Dh),
        "wo": (L, D, cfg.heads * Dh),
        "mlp_norm": (L, D),
        "wgu": (L, 2 * F, D),
        "wd": (L, D, F),
        "norm": (D,),
        "lm_head": (V, D),
    }


def cache_shape(cfg: Config, batch: int, capacity: int) -> Tuple[int, ...]:
    return (cfg.layers, batch, cfg.kv_heads, capacity, cfg.head_dim)


def weight_bytes(cfg: Config, per_step: bool = True) -> int:
    """Bytes of the weights a decode step reads (the embedding: one row per
    token, counted as one row) or, ``per_step=False``, all of them."""
    size = cfg.dtype.bits // 8
    total = 0
    for name, shape in weight_shapes(cfg).items():
        n = math.prod(shape)
        if name == "embed" and per_step:
            n = shape[1]
        total += n * size
    return total


def check_tokens(cfg: Config, tokens) -> None:
    """Raise ValueError when a token id is outside the vocabulary."""
    for k, tok in enumerate(list(tokens)):
        if not 0 <= int(tok) < cfg.vocab:
            raise ValueError(f"token #{k} is {int(tok)}, outside the "
                             f"vocabulary [0, {cfg.vocab})")


# ---------------------------------------------------------------------------
# The operators, on activations [rows, features] in f32
# ---------------------------------------------------------------------------

def _w(x):
    return x.astype(f32)


def _rms_norm(x, weight, eps):
    """x [R, D] normalised, times weight(d)."""
    R, D = x.shape
    ss = t.compute((R,), lambda r: t.sum(D, lambda k: x[r, k] * x[r, k]))
    return t.compute((R, D), lambda r, d:
                     x[r, d] * t.rsqrt(ss[r] / int(D) + eps) * weight(d))


def _narrow(x, dtype):
    """x rounded to ``dtype`` (a tensor of that type; x itself when it has
    it): the operands tensor cores take, materialised (fused into the
    product, the rounding would make its factor no longer a read of a
    16-bit tensor)."""
    if x.dtype is dtype:
        return x
    return t.compute(x.shape, lambda *i: x[i].astype(dtype),
                     materialize=True)


def _linear(x, w, layer, out, operands=None, materialize=False):
    """x [R, K] times the layer's slice of w [layers, out, K], transposed;
    ``operands``: a type x is rounded to first (the weights' storage type:
    a tensor-core product), else x as it is (f32); ``materialize``: the
    product stays a kernel of its own."""
    R, K = x.shape
    if operands is not None:
        x = _narrow(x, operands)
    return t.compute((R, out), lambda r, n: t.sum(
        K, lambda k: _w(w[layer, n, k]) * _w(x[r, k])),
        materialize=materialize)


def _heads_norm_rope(cfg, qkv, base, heads, weight, layer, position):
    """Heads ``heads`` of qkv [R, ...] from column ``base``: RMSNorm over
    the head dimension (times weight[layer]), then RoPE (rotate-half) at
    ``position(r)`` (an f32 value). [R, heads, head_dim]."""
    R = qkv.shape[0]
    Dh, half = cfg.head_dim, cfg.head_dim // 2
    ss = t.compute((R, heads), lambda r, h: t.sum(
        Dh, lambda e: qkv[r, base + h * Dh + e] * qkv[r, base + h * Dh + e]))
    log_theta = math.log(cfg.rope_theta)

    def rotated(r, h, e):
        def normed(c):
            return (qkv[r, base + h * Dh + c] * t.rsqrt(ss[r, h] / Dh + cfg.eps)
                    * _w(weight[layer, c]))
        freq = t.exp(t.index_value(e % half, f32) * (-2.0 * log_theta / Dh))
        angle = position(r) * freq
        partner = normed((e + half) % Dh)
        partner = t.where(t.index_value(e, i32) < half, -partner, partner)
        return normed(e) * t.cos(angle) + partner * t.sin(angle)
    # Materialised: the attention reads each rotated element once per key;
    # fused into the scores it would recompute the head's norm per key
    # (the work bound then keeps the whole softmax chain apart instead).
    return t.compute((R, heads, Dh), rotated, materialize=True)


def _attend(cfg, q, key, value, length, mask=None, out=f32,
            mask_values=False):
    """Grouped-query attention: q [R, H, Dh]; key(r, g, j, e) and
    value(r, g, j, e) read position j of key/value head g for row r;
    ``length`` positions; ``mask(r, j)`` (optional) says which count;
    ``out``: the output's type (f32, or the operand type of the product
    that reads it); ``mask_values``: the values masked too (0 where the
    mask is false: positions past a sequence's length contribute nothing
    whatever the cache holds there, and kernels skip them).
    Written as scores, max, sum, probabilities and their product with V
    (the chain fusion turns into one online-softmax reduction). [R, H*Dh]."""
    R, H, Dh = q.shape
    group = cfg.heads // cfg.kv_heads
    scale = 1.0 / math.sqrt(cfg.head_dim)

    def score(r, h, j):
        s = t.sum(Dh, lambda e: _w(q[r, h, e]) * key(r, h // group, j, e)
                  ) * scale
        return t.where(mask(r, j), s, float("-inf")) if mask else s
    sc = t.compute((R, H, length), score)
    m = t.compute((R, H), lambda r, h: t.max(length, lambda j: sc[r, h, j]))
    z = t.compute((R, H), lambda r, h: t.sum(
        length, lambda j: t.exp(sc[r, h, j] - m[r, h])))
    p = t.compute((R, H, length), lambda r, h, j:
                  t.exp(sc[r, h, j] - m[r, h]) / z[r, h])
    # Rounded (when out is not f32) as a copy of its own: the
    # online-softmax reduction stays whole (a flash kernel writes it).
    def val(r, h, j, e):
        v = value(r, h // group, j, e)
        return t.where(mask(r, j), v, 0.0) if mask_values else v
    o = t.compute((R, H, Dh), lambda r, h, e: t.sum(
        length, lambda j: p[r, h, j] * val(r, h, j, e)),
        materialize=out is not f32)
    o = _narrow(o, out)
    return o.view((R, H * Dh), lambda r, c: (r, c // Dh, c % Dh))


def _layer(cfg, W, x, layer, position, attention, write_cache,
           operands=None):
    """One decoder layer on x [R, D]; returns the new x. ``operands``: the
    type the products' activations are rounded to (None: f32)."""
    H, Hk, Dh, F = cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.ffn
    R, D = x.shape
    # With tensor-core products (operands given), what fusion would take
    # apart stays materialised: the residual stream (the products'
    # epilogues add it and the norms after them read it; fused, each would
    # recompute the product: the batched work bound of a 36-layer program
    # lets that through) and the gate/up product (the SwiGLU reads it at
    # two points: fused, two products in one kernel, which tensor cores do
    # not take).
    keep = operands is not None
    xn = _rms_norm(x, lambda d: _w(W["attn_norm"][layer, d]), cfg.eps)
    qkv = _linear(xn, W["wqkv"], layer, (H + 2 * Hk) * Dh, operands)
    q = _heads_norm_rope(cfg, qkv, 0, H, W["q_norm"], layer, position)
    k = _heads_norm_rope(cfg, qkv, H * Dh, Hk, W["k_norm"], layer, position)
    v = qkv.view((R, Hk, Dh), lambda r, g, e: (r, (H + Hk) * Dh + g * Dh + e))
    o = attention(q, k, v, write_cache(k, v))
    a = _linear(o, W["wo"], layer, D, operands)
    x = t.compute((R, D), lambda r, d: x[r, d] + a[r, d], materialize=keep)
    xn = _rms_norm(x, lambda d: _w(W["mlp_norm"][layer, d]), cfg.eps)
    gu = _linear(xn, W["wgu"], layer, 2 * F, operands, materialize=keep)
    act = t.compute((R, F), lambda r, f:
                    gu[r, f] * t.sigmoid(gu[r, f]) * gu[r, F + f])
    down = _linear(act, W["wd"], layer, D, operands)
    return t.compute((R, D), lambda r, d: x[r, d] + down[r, d],
                     materialize=keep)


def _head(cfg, W, x, logits, operands=None):
    """Final norm, LM head, greedy argmax of x [R, D]: the tokens [R] (and
    the logits [R, V] when ``logits``)."""
    R, D = x.shape
    xf = _rms_norm(x, lambda d: _w(W["norm"][d]), cfg.eps)
    if operands is not None:
        xf = _narrow(xf, operands)
    # The logits stay a product of their own (a matrix-vector kernel over
    # the whole head) and the argmax a split reduction over them: fused
    # into the argmax, each row's kernel would stream the 1.2 GB head.
    lg = t.compute((R, cfg.vocab), lambda r, n: t.sum(
        D, lambda k: _w(W["lm_head"][n, k]) * _w(xf[r, k])), materialize=True)
    _, tok = t.compute((R,), lambda r: t.argmax(cfg.vocab,
                                                lambda n: lg[r, n]))
    return (tok, lg) if logits else (tok,)


def _write_rows(cfg, caches, rows, k, v, where, **policy):
    """Keys and values k, v [rows, kv_heads, head_dim] stored into the
    caches (a list [kcache, vcache], replaced by the updated ones) at the
    coordinates ``where(r, g, e)``."""
    for n, new in enumerate((k, v)):
        caches[n] = t.scatter(
            caches[n], (rows, cfg.kv_heads, cfg.head_dim),
            lambda r, g, e, new=new: (new[r, g, e].astype(cfg.dtype),
                                      where(r, g, e)), **policy)


def _signature(cfg, batch_rows, capacity, batch):
    dt = cfg.dtype
    types = [i32[batch_rows]]
    types += [dt[s] for s in weight_shapes(cfg).values()]
    types += [dt[cache_shape(cfg, batch, capacity)]] * 2
    return types


def _names(cfg):
    return ["tokens"] + list(weight_shapes(cfg)) + ["kcache", "vcache"]


def decode_step(cfg: Config, batch: int, capacity: int,
                logits: bool = False, operands=None,
                varlen: bool = False) -> t.Function:
    """One decode step of ``batch`` sequences at position ``pos`` (the last
    argument, a size): ``(tokens [batch] i32, weights..., kcache, vcache,
    pos) -> (next tokens [batch] i32[, logits [batch, vocab] f32], kcache,
    vcache)``. Every sequence is at the same position; a run at ``pos >=
    capacity`` is refused before anything runs. ``operands``: the type the
    product activations (the layers' and the head's) are rounded to (None:
    f32, matrix-vector products; ``cfg.dtype``: operands tensor cores take,
    which pays from about 16 sequences, as in ``prefill``).

    ``varlen``: sequences at positions of their own (continuous batching):
    the last argument is ``positions`` [batch] i32 instead of ``pos``;
    sequence b writes its cache row positions[b] and attends over its
    positions 0..positions[b] (the rest of its cache masked: never read
    by the CUDA kernels, whatever it holds). A position outside the cache
    is refused before anything runs (the runtime's index check)."""
    names = _names(cfg) + ["positions" if varlen else "pos"]

    def step(*args):
        tokens, *weights = args[:-3]
        kc, vc, pos = args[-3:]
        W = dict(zip(weight_shapes(cfg), weights))
        emb = W["embed"]
        x = t.compute((batch, cfg.hidden), lambda b, d: _w(emb[tokens[b], d]))
        caches = [kc, vc]

        def position(r):
            return pos[r].astype(f32) if varlen else t.size_value(pos, f32)

        def row(b):
            # The cache row sequence b writes.
            return pos[b] if varlen else pos

        for layer in range(cfg.layers):
            def write_cache(k, v, layer=layer):
                # Row pos of every sequence and key/value head, in place
                # (the size requirement keeps pos inside the cache; the
                # runtime checks positions[b]).
                _write_rows(cfg, caches, batch, k, v,
                            lambda b, g, e: (layer, b, g, row(b), e),
                            policy="trap" if varlen else "drop")
                return caches

            def attention(q, k, v, cache, layer=layer):
                kc_, vc_ = cache
                return _attend(
                    cfg, q,
                    lambda b, g, j, e: _w(kc_[layer, b, g, j, e]),
                    lambda b, g, j, e: _w(vc_[layer, b, g, j, e]),
                    capacity if varlen else pos + 1,
                    mask=(lambda b, j: j <= pos[b]) if varlen else None,
                    mask_values=varlen)
            x = _layer(cfg, W, x, layer, position, attention, write_cache,
                       operands)
        return _head(cfg, W, x, logits, operands) + tuple(caches)

    _name_params(step, names)
    types = _signature(cfg, batch, capacity, batch) + [
        i32[batch] if varlen else t.size]
    return t.Function(step, name="decode_step", arg_types=types,
                      donate=("kcache", "vcache"))


def prefill(cfg: Config, tokens: int, capacity: int,
            logits: bool = False) -> t.Function:
    """Prefill of one sequence of ``tokens`` tokens at positions
    0..tokens-1: ``(tokens [T] i32, weights..., kcache, vcache) -> (next
    token [1] i32[, logits [1, vocab]], kcache, vcache)`` with the caches'
    rows 0..T-1 written (batch 1). Compute-bound, so the products take
    tensor-core operands: the activations entering each weight product
    and the queries are rounded to ``cfg.dtype`` (keys and values are read
    back from the caches, stored in it); sums, norms and softmax stay
    f32. With an f32 model nothing is rounded."""
    if tokens > capacity:
        raise ValueError(f"{tokens} tokens do not fit a cache of "
                         f"{capacity} positions")
    names = _names(cfg)

    def run(*args):
        ids, *weights = args[:-2]
        kc, vc = args[-2:]
        W = dict(zip(weight_shapes(cfg), weights))
        emb = W["embed"]
        x = t.compute((tokens, cfg.hidden), lambda r, d: _w(emb[ids[r], d]))
        caches = [kc, vc]

        def position(r):
            return t.index_value(r, f32)

        for layer in range(cfg.layers):
            def write_cache(k, v, layer=layer):
                _write_rows(cfg, caches, tokens, k, v,
                            lambda r, g, e: (layer, 0, g, r, e))
                return caches

            def attention(q, k, v, cache, layer=layer):
                # Keys and values read back from the caches (stored in
                # cfg.dtype, as the decode step reads them), the queries
                # rounded to it: the attention's products on tensor cores.
                kc_, vc_ = cache
                return _attend(cfg, _narrow(q, cfg.dtype),
                               lambda r, g, j, e: _w(kc_[layer, 0, g, j, e]),
                               lambda r, g, j, e: _w(vc_[layer, 0, g, j, e]),
                               tokens, mask=lambda r, j: t.index_value(j, i32)
                               <= t.index_value(r, i32), out=cfg.dtype)
            x = _layer(cfg, W, x, layer, position, attention, write_cache,
                       operands=cfg.dtype)
        last = t.compute((1, cfg.hidden), lambda r, d: x[tokens - 1 + r, d])
        return _head(cfg, W, last, logits) + tuple(caches)

    _name_params(run, names)
    types = _signature(cfg, tokens, capacity, 1)
    return t.Function(run, name="prefill", arg_types=types,
                      donate=("kcache", "vcache"))


def _name_params(fn, names) -> None:
    """Give the traced function's arguments their names (tang.Function
    reads them from the signature): the IR says %wqkv, not %arg3."""
    fn.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
         for n in names])
