"""The usual operators, each a few lines of tang: no per-operator kernel.

Every function here is called inside a ``tang.function`` on its tensors
and returns tensors; what kernels they become (fused, tensor-core GEMMs,
flash attention from the softmax written out) is the compiler's business.

    @tang.function
    def block(x: f32["T", 64], w: f32[64], wq: f32[64, 64], ...):
        h = nn.rms_norm(x, w)
        ...

Shapes: ``x`` is ``[rows, features]`` (batch and sequence flattened into
rows) unless a docstring says otherwise; weights are ``[in, out]``.
"""

import math

from . import lang as t
from .lang import f32, i32

__all__ = ["linear", "rms_norm", "layer_norm", "softmax", "attention",
           "rope", "swiglu", "embedding", "cross_entropy", "causal_conv1d",
           "gelu", "add", "split_heads", "merge_heads", "transformer_block"]


def linear(x, w, b=None):
    """``x @ w (+ b)``: x [M, K], w [K, N], b [N]."""
    (M, K), N = x.shape, w.shape[1]
    y = t.compute((M, N), lambda i, j: t.sum(K, lambda k: x[i, k] * w[k, j]))
    if b is None:
        return y
    return t.compute((M, N), lambda i, j: y[i, j] + b[j])


def rms_norm(x, w, eps=1e-6):
    """``x / sqrt(mean(x^2) + eps) * w`` over the last axis."""
    M, D = x.shape
    ms = t.compute((M,), lambda i: t.sum(D, lambda k: x[i, k] * x[i, k]))
    return t.compute((M, D), lambda i, d:
                     x[i, d] * t.rsqrt(ms[i] / D + eps) * w[d])


def layer_norm(x, w, b, eps=1e-5):
    """``(x - mean) / sqrt(var + eps) * w + b`` over the last axis."""
    M, D = x.shape
    mean = t.compute((M,), lambda i: t.sum(D, lambda k: x[i, k]) / D)
    var = t.compute((M,), lambda i: t.sum(
        D, lambda k: (x[i, k] - mean[i]) * (x[i, k] - mean[i])) / D)
    return t.compute((M, D), lambda i, d:
                     (x[i, d] - mean[i]) * t.rsqrt(var[i] + eps) * w[d]
                     + b[d])


def softmax(x):
    """Softmax over the last axis (max subtracted)."""
    M, N = x.shape
    m = t.compute((M,), lambda i: t.max(N, lambda j: x[i, j]))
    s = t.compute((M,), lambda i: t.sum(N, lambda j: t.exp(x[i, j] - m[i])))
    return t.compute((M, N), lambda i, j: t.exp(x[i, j] - m[i]) / s[i])


def attention(q, k, v, causal=False, scale=None):
    """Multi-head attention: q [H, L, D], k and v [H, S, D] (grouped
    queries when k has fewer heads: query head h reads key head
    h // (H // Hk)); ``causal`` masks keys after the query (aligned at the
    end when S > L). Written as scores, max, sum and product: fusion makes
    it one online-softmax reduction (flash attention)."""
    H, L, D = q.shape
    Hk, S, _ = k.shape
    group = int(H) // int(Hk)
    c = scale if scale is not None else 1.0 / math.sqrt(int(D))
    offset = int(S - L) if causal else 0

    def kv(h):
        return h // group if group > 1 else h

    # Written as the chain a user writes (examples/causal_attention.mlir):
    # masked scaled scores, their row max and sum, probabilities, P V.
    # Fusion and the online-softmax rewrite make it one flash kernel.
    def score(h, i, j):
        s = t.sum(D, lambda e: q[h, i, e] * k[kv(h), j, e]) * c
        return t.where(j <= i + offset, s, float("-inf")) if causal else s
    sc = t.compute((H, L, S), score)
    m = t.compute((H, L), lambda h, i: t.max(S, lambda j: sc[h, i, j]))
    z = t.compute((H, L), lambda h, i: t.sum(
        S, lambda j: t.exp(sc[h, i, j] - m[h, i])))
    p = t.compute((H, L, S), lambda h, i, j:
                  t.exp(sc[h, i, j] - m[h, i]) / z[h, i])
    return t.compute((H, L, D), lambda h, i, e: t.sum(
        S, lambda j: p[h, i, j] * v[kv(h), j, e]))


def decode_attention(q, k, v, lengths, scale=None):
    """Decode attention over a batch of sequences of different lengths:
    q [B, H, D] (one query per sequence and head), k and v [B, Hk, S, D]
    (each sequence's cache; grouped queries when Hk < H), ``lengths`` [B]
    (i32): sequence b attends over its keys j < lengths[b] (S, which may be
    a size, bounds them all). Caches of another float type than q's are
    read as q's (bf16 caches, an f32 query). Past a length both the score (-inf) and the
    value (0) are masked, so whatever the cache holds there (stale rows,
    NaN) contributes nothing, and the CUDA kernels skip those keys without
    reading them. A length of 0 or less gives NaN (an empty softmax).
    [B, H, D]."""
    B, H, D = q.shape
    _, Hk, S, _ = k.shape
    group = int(H) // int(Hk)
    c = scale if scale is not None else 1.0 / math.sqrt(int(D))

    def kv(h):
        return h // group if group > 1 else h

    def wide(x):
        # 16-bit caches beside an f32 query: their products in f32.
        return x.astype(q.dtype) if x.dtype != q.dtype else x

    def score(b, h, j):
        s = t.sum(D, lambda e: q[b, h, e] * wide(k[b, kv(h), j, e])) * c
        return t.where(j < lengths[b], s, float("-inf"))
    sc = t.compute((B, H, S), score)
    m = t.compute((B, H), lambda b, h: t.max(S, lambda j: sc[b, h, j]))
    z = t.compute((B, H), lambda b, h: t.sum(
        S, lambda j: t.exp(sc[b, h, j] - m[b, h])))
    p = t.compute((B, H, S), lambda b, h, j:
                  t.exp(sc[b, h, j] - m[b, h]) / z[b, h])
    return t.compute((B, H, D), lambda b, h, e: t.sum(
        S, lambda j: p[b, h, j] * t.where(j < lengths[b],
                                          wide(v[b, kv(h), j, e]), 0.0)))


def rope(x, positions=None, theta=10000.0):
    """Rotary embedding, rotate-half form: x [L, H, D] at positions
    (an i32 tensor [L], default 0..L-1); pairs (d, d + D/2) rotate by
    ``pos * theta^(-2 (d mod D/2) / D)``."""
    L, H, D = x.shape
    half = int(D) // 2
    log_theta = math.log(theta)

    def rotated(l, h, d):
        pos = (positions[l].astype(f32) if positions is not None
               else t.index_value(l, f32))
        freq = t.exp(t.index_value(d % half, f32) * (-2.0 * log_theta / int(D)))
        angle = pos * freq
        first = t.index_value(d, i32) < half
        partner = t.where(first, -x[l, h, (d + half) % int(D)],
                          x[l, h, (d + half) % int(D)])
        return x[l, h, d] * t.cos(angle) + partner * t.sin(angle)
    return t.compute((L, H, D), rotated)


def swiglu(x, w_gate, w_up, w_down):
    """``(silu(x w_gate) * (x w_up)) w_down``: x [M, D], w_gate and w_up
    [D, F], w_down [F, D]."""
    M, F = x.shape[0], w_gate.shape[1]
    gate, up = linear(x, w_gate), linear(x, w_up)
    h = t.compute((M, F), lambda i, f:
                  gate[i, f] * t.sigmoid(gate[i, f]) * up[i, f])
    return linear(h, w_down)


def gelu(x):
    """GELU (erf form), elementwise on [M, N]."""
    M, N = x.shape
    return t.compute((M, N), lambda i, j:
                     0.5 * x[i, j] * (1.0 + t.erf(x[i, j] * (1 / math.sqrt(2)))))


def embedding(table, ids, policy="trap"):
    """Rows of ``table`` [V, D] at ``ids`` [T] (i32): a gather. An id out of
    range fails the run before anything is written (``trap``; on kernels
    the runtime checks ``ids`` first) or reads the nearest row (``clamp``)
    or zeros (``zero``)."""
    (T,), D = ids.shape, table.shape[1]
    rows = table.gather_policy(policy)
    return t.compute((T, D), lambda i, d: rows[ids[i], d])


def cross_entropy(logits, targets, policy="trap"):
    """Mean over rows of ``logsumexp(logits[i]) - logits[i, targets[i]]``:
    logits [N, C], targets [N] (i32; out of range: ``policy``, as
    ``embedding``'s). A scalar tensor."""
    N, C = logits.shape
    picked = logits.gather_policy(policy)
    m = t.compute((N,), lambda i: t.max(C, lambda c: logits[i, c]))
    lse = t.compute((N,), lambda i: t.log(t.sum(
        C, lambda c: t.exp(logits[i, c] - m[i]))) + m[i])
    return t.compute((), lambda: t.sum(
        N, lambda i: (lse[i] - picked[i, targets[i]]) / N))


def causal_conv1d(x, w):
    """Depthwise causal convolution: x [C, L], w [C, K];
    ``y[c, t] = sum_k w[c, k] x[c, t + k - K + 1]``, zero before the
    start (a padded read)."""
    C, L = x.shape
    K = w.shape[1]
    xp = x.padded(0.0)
    return t.compute((C, L), lambda c, s: t.sum(
        K, lambda k: w[c, k] * xp[c, s + k - (int(K) - 1)]))


def add(a, b):
    """Elementwise ``a + b`` of two [M, N] tensors (a residual)."""
    M, N = a.shape
    return t.compute((M, N), lambda i, j: a[i, j] + b[i, j])


def split_heads(x, heads):
    """[T, H * Dh] seen as [H, T, Dh] (a view: no copy)."""
    T, D = x.shape
    dh = int(D) // heads
    return x.view((heads, T, dh), lambda h, l, d: (l, h * dh + d))


def merge_heads(x):
    """[H, T, Dh] seen as [T, H * Dh] (a view)."""
    H, T, dh = x.shape
    dh = int(dh)
    return x.view((T, int(H) * dh), lambda l, c: (c // dh, l, c % dh))


def transformer_block(x, wn1, wq, wk, wv, wo, wn2, w1, w3, w2, heads,
                      eps=1e-6):
    """A pre-norm (Llama-style) block on one sequence x [T, D]: causal
    multi-head attention with RMSNorm before it, a SwiGLU MLP with RMSNorm
    before it, residuals around both."""
    xn = rms_norm(x, wn1, eps)
    q, k, v = (split_heads(linear(xn, w), heads) for w in (wq, wk, wv))
    o = merge_heads(attention(q, k, v, causal=True))
    h = add(x, linear(o, wo))
    return add(h, swiglu(rms_norm(h, wn2, eps), w1, w3, w2))
