"""Examples of examples/ written with the Python builder (tang.lang), each
the same math as the .mlir file of the same name: test_examples_py.py runs
both through the interpreter on the .mlir's seeded inputs and compares
every output."""

import tang
from tang import f32, i32
from tang.models import qwen3_next


@tang.function
def matmul(A: f32[16, 32], B: f32[32, 24]):
    return tang.compute((16, 24), lambda i, j: tang.sum(
        32, lambda k: A[i, k] * B[k, j]))


@tang.function
def gemv(A: f32[32, 48], x: f32[48]):
    return tang.compute((32,), lambda i: tang.sum(48, lambda k: A[i, k] * x[k]))


@tang.function
def softmax(X: f32[8, 32]):
    m = tang.compute((8,), lambda i: tang.max(32, lambda j: X[i, j]))
    s = tang.compute((8,), lambda i: tang.sum(32, lambda j: tang.exp(
        X[i, j] - m[i])))
    return tang.compute((8, 32), lambda i, j: tang.exp(X[i, j] - m[i]) / s[i])


@tang.function
def rmsnorm(X: f32[8, 32], w: f32[32]):
    return tang.compute((8, 32), lambda i, j: X[i, j] * tang.rsqrt(
        tang.sum(32, lambda k: X[i, k] * X[i, k]) / 32.0 + 1e-6) * w[j])


@tang.function
def layernorm(X: f32[8, 32], gamma: f32[32], beta: f32[32]):
    mu = tang.compute((8,), lambda i: tang.sum(32, lambda k: X[i, k]) / 32.0)
    var = tang.compute((8,), lambda i: tang.sum(
        32, lambda k: (X[i, k] - mu[i]) * (X[i, k] - mu[i])) / 32.0)
    return tang.compute((8, 32), lambda i, j: (X[i, j] - mu[i]) * tang.rsqrt(
        var[i] + 1e-5) * gamma[j] + beta[j])


@tang.function
def argmax(X: f32[8, 32]):
    return tang.compute((8,), lambda i: tang.argmax(32, lambda j: X[i, j]))


@tang.function
def greedy_token(logits: f32[2, 50000]):
    return tang.compute((2,), lambda b: tang.argmax(
        50000, lambda n: logits[b, n]))


@tang.function
def logsumexp(X: f32[8, 32]):
    m, l = tang.compute((8,), lambda i: tang.reduce(
        "softmax_norm", 32, lambda j: X[i, j]))
    return tang.compute((8,), lambda i: m[i] + tang.log(l[i]))


@tang.function
def cross_entropy(X: f32[8, 32], T: f32[8, 32]):
    m = tang.compute((8,), lambda i: tang.max(32, lambda j: X[i, j]))
    l = tang.compute((8,), lambda i: tang.sum(32, lambda j: tang.exp(
        X[i, j] - m[i])))
    return tang.compute((8,), lambda i: tang.sum(32, lambda j: T[i, j] * (
        m[i] + tang.log(l[i]) - X[i, j])))


@tang.function
def vocab_cross_entropy(X: f32[6, 2056], labels: i32[6]):
    m = tang.compute((6,), lambda i: tang.max(2056, lambda j: X[i, j]))
    l = tang.compute((6,), lambda i: tang.sum(2056, lambda j: tang.exp(
        X[i, j] - m[i])))
    logits = X.gather_policy("clamp")
    return tang.compute((6,), lambda i: m[i] + tang.log(l[i])
                        - logits[i, labels[i]])


@tang.function
def matmul_bias_gelu(X: f32[16, 32], W: f32[32, 24], b: f32[24]):
    y0 = tang.compute((16, 24), lambda i, j: tang.sum(
        32, lambda k: X[i, k] * W[k, j]))

    def gelu(i, j):
        y = y0[i, j] + b[j]
        inner = y + 0.044715 * (y * y * y)
        return 0.5 * y * (1.0 + tang.tanh(0.7978845608028654 * inner))
    return tang.compute((16, 24), gelu)


@tang.function
def causal_conv1d(x: f32[2, 256, 64], w: f32[64, 4], bias: f32[64]):
    xp = x.padded(0.0)
    conv = tang.compute((2, 256, 64), lambda b, t, c: tang.sum(
        4, lambda k: w[c, k] * xp[b, t + k - 3, c]))

    def silu(b, t, c):
        s = conv[b, t, c] + bias[c]
        return s / (1.0 + tang.exp(-s))
    return tang.compute((2, 256, 64), silu)


@tang.function
def conv2d(X: f32[2, 3, 10, 10], F: f32[4, 3, 3, 3]):
    return tang.compute((2, 4, 8, 8), lambda n, k, oh, ow: tang.sum(
        (3, 3, 3), lambda c, r, s: X[n, c, oh + r, ow + s] * F[k, c, r, s]))


@tang.function
def swiglu_mlp(x: f32[16, 32], W1: f32[32, 64], W3: f32[32, 64],
               W2: f32[64, 32]):
    a = tang.compute((16, 64), lambda i, f: tang.sum(
        32, lambda e: x[i, e] * W1[e, f]))
    b = tang.compute((16, 64), lambda i, f: tang.sum(
        32, lambda e: x[i, e] * W3[e, f]))
    h = tang.compute((16, 64), lambda i, f: a[i, f] / (
        1.0 + tang.exp(-a[i, f])) * b[i, f])
    return tang.compute((16, 32), lambda i, e: tang.sum(
        64, lambda f: h[i, f] * W2[f, e]))


@tang.function
def decode_mlp(x: f32[2, 256], Wg: f32[512, 256], Wu: f32[512, 256],
               Wd: f32[256, 512]):
    g = tang.compute((2, 512), lambda r, f: tang.sum(
        256, lambda e: Wg[f, e] * x[r, e]))
    u = tang.compute((2, 512), lambda r, f: tang.sum(
        256, lambda e: Wu[f, e] * x[r, e]))
    a = tang.compute((2, 512), lambda r, f: g[r, f] / (
        1.0 + tang.exp(-g[r, f])) * u[r, f])
    return tang.compute((2, 256), lambda r, e: x[r, e] + tang.sum(
        512, lambda f: Wd[e, f] * a[r, f]))


@tang.function
def batched_gemv(W: f32[20, 48, 64], x: f32[20, 64]):
    return tang.compute((20, 48), lambda h, n: tang.sum(
        64, lambda k: W[h, n, k] * x[h, k]))


def _attention(Q, K, V, kv_head, causal):
    def score(b, h, i, j):
        s = tang.sum(8, lambda d: Q[b, h, i, d] * K[b, kv_head(h), j, d])
        # rsqrt(8) as the examples spell it (not 1/sqrt(8) rounded to f32).
        s = s * tang.rsqrt(tang.lang.constant(8.0, f32))
        return tang.where(j <= i, s, float("-inf")) if causal else s
    return _softmax_times(tang.compute((2, 4, 16, 16), score), V, kv_head)


def _softmax_times(S, V, kv_head):
    """softmax_j(S[b, h, i, j]) V[b, kv_head(h), j, d]: max, exponentials,
    their sum, probabilities, product (the examples' chain)."""
    m = tang.compute((2, 4, 16), lambda b, h, i: tang.max(
        16, lambda j: S[b, h, i, j]))
    E = tang.compute((2, 4, 16, 16), lambda b, h, i, j: tang.exp(
        S[b, h, i, j] - m[b, h, i]))
    l = tang.compute((2, 4, 16), lambda b, h, i: tang.sum(
        16, lambda j: E[b, h, i, j]))
    P = tang.compute((2, 4, 16, 16), lambda b, h, i, j:
                     E[b, h, i, j] / l[b, h, i])
    return tang.compute((2, 4, 16, 8), lambda b, h, i, d: tang.sum(
        16, lambda j: P[b, h, i, j] * V[b, kv_head(h), j, d]))


@tang.function
def attention(Q: f32[2, 4, 16, 8], K: f32[2, 4, 16, 8], V: f32[2, 4, 16, 8]):
    return _attention(Q, K, V, lambda h: h, False)


@tang.function
def causal_attention(Q: f32[2, 4, 16, 8], K: f32[2, 4, 16, 8],
                     V: f32[2, 4, 16, 8]):
    return _attention(Q, K, V, lambda h: h, True)


@tang.function
def gqa_attention(Q: f32[2, 4, 16, 8], K: f32[2, 2, 16, 8],
                  V: f32[2, 2, 16, 8]):
    return _attention(Q, K, V, lambda h: h // 2, False)


@tang.function
def embedding_rmsnorm(tokens: i32[2, 64], E: f32[1000, 64], w: f32[64]):
    rows = E.gather_policy("clamp")
    x = tang.compute((2, 64, 64), lambda b, t, d: rows[tokens[b, t], d])
    return tang.compute((2, 64, 64), lambda b, t, d: x[b, t, d] * tang.rsqrt(
        tang.sum(64, lambda k: x[b, t, k] * x[b, t, k]) / 64.0 + 1e-6)
        * w[d])


_AFFINE = tang.Monoid("affine_map", [f32, f32], [1.0, 0.0],
                      lambda a, b: (a[0] * b[0], b[0] * a[1] + b[1]))


@tang.function
def linear_recurrence_scan(g: f32[65536], x: f32[65536]):
    _, h = tang.scan((65536,), _AFFINE, lambda t: (
        1.0 / (1.0 + tang.exp(-g[t])), x[t]))
    return h


@tang.function
def alibi_attention(Q: f32[2, 4, 16, 8], K: f32[2, 4, 16, 8],
                    V: f32[2, 4, 16, 8], slopes: f32[4]):
    QK = tang.compute((2, 4, 16, 16), lambda b, h, i, j: tang.sum(
        8, lambda d: Q[b, h, i, d] * K[b, h, j, d]))

    def score(b, h, i, j):
        s = QK[b, h, i, j] * tang.rsqrt(tang.lang.constant(8.0, f32))
        dist = (tang.index_value(j) - tang.index_value(i)).astype(f32)
        return s + slopes[h] * dist
    return _softmax_times(tang.compute((2, 4, 16, 16), score), V,
                          lambda h: h)


@tang.function
def moe_top2(x: f32[32, 16], Wg: f32[16, 8], W: f32[8, 16, 24]):
    logits = tang.compute((32, 8), lambda t, e: tang.sum(
        16, lambda d: x[t, d] * Wg[d, e]))
    v1, e1 = tang.compute((32,), lambda t: tang.argmax(
        8, lambda e: logits[t, e]))
    v2, e2 = tang.compute((32,), lambda t: tang.argmax(
        8, lambda e: tang.where(tang.index_value(e).eq(e1[t]),
                                float("-inf"), logits[t, e])))
    experts = W.gather_policy("clamp")

    def mix(t, j):
        g1 = 1.0 / (1.0 + tang.exp(v2[t] - v1[t]))
        g2 = 1.0 - g1
        o1 = tang.sum(16, lambda d: x[t, d] * experts[e1[t], d, j])
        o2 = tang.sum(16, lambda d: x[t, d] * experts[e2[t], d, j])
        return g1 * o1 + g2 * o2
    y = tang.compute((32, 24), mix)
    zeros = tang.compute((8,), lambda e: 0.0)

    def route(t, c):
        k = tang.where(tang.index_value(c).eq(0), e1[t], e2[t])
        return 1.0, (k,)
    load = tang.scatter(zeros, (32, 2), route, monoid="add", policy="drop")
    return y, load


def _rms(x, w):
    return tang.compute((2, 16, 32), lambda b, l, e: x[b, l, e] * tang.rsqrt(
        tang.sum(32, lambda k: x[b, l, k] * x[b, l, k]) / 32.0 + 1e-6)
        * w[e])


def _project(x, W, n):
    return tang.compute((2, 16, n), lambda b, l, c: tang.sum(
        W.shape[0], lambda e: x[b, l, e] * W[e, c]))


@tang.function
def transformer_block(x: f32[2, 16, 32], wn1: f32[32], Wq: f32[32, 32],
                      Wk: f32[32, 32], Wv: f32[32, 32], Wo: f32[32, 32],
                      wn2: f32[32], W1: f32[32, 64], W3: f32[32, 64],
                      W2: f32[64, 32]):
    xn = _rms(x, wn1)
    Q, K, V = (_project(xn, W, 32).view(
        (2, 4, 16, 8), lambda b, h, l, d: (b, l, h * 8 + d))
        for W in (Wq, Wk, Wv))
    Oh = _attention(Q, K, V, lambda h: h, True)
    O = Oh.view((2, 16, 32), lambda b, l, c: (b, c // 8, l, c % 8))
    h = tang.compute((2, 16, 32), lambda b, l, e: x[b, l, e] + tang.sum(
        32, lambda c: O[b, l, c] * Wo[c, e]))
    hn = _rms(h, wn2)

    def gate(b, l, f):
        a = tang.sum(32, lambda e: hn[b, l, e] * W1[e, f])
        u = tang.sum(32, lambda e: hn[b, l, e] * W3[e, f])
        return a / (1.0 + tang.exp(-a)) * u
    G = tang.compute((2, 16, 64), gate)
    return tang.compute((2, 16, 32), lambda b, l, e: h[b, l, e] + tang.sum(
        64, lambda f: G[b, l, f] * W2[f, e]))


def _layer_norm(x, w, b):
    mu = tang.compute((2, 16), lambda n, l: tang.sum(
        32, lambda k: x[n, l, k]) / 32.0)
    var = tang.compute((2, 16), lambda n, l: tang.sum(
        32, lambda k: (x[n, l, k] - mu[n, l]) * (x[n, l, k] - mu[n, l])
        / 32.0))
    return tang.compute((2, 16, 32), lambda n, l, e: (
        x[n, l, e] - mu[n, l]) * tang.rsqrt(var[n, l] + 1e-5) * w[e] + b[e])


@tang.function
def gpt2_block(x: f32[2, 16, 32], ln1_w: f32[32], ln1_b: f32[32],
               W_attn: f32[32, 96], b_attn: f32[96], W_proj: f32[32, 32],
               b_proj: f32[32], ln2_w: f32[32], ln2_b: f32[32],
               W_fc: f32[32, 128], b_fc: f32[128], W_fc2: f32[128, 32],
               b_fc2: f32[32]):
    xn = _layer_norm(x, ln1_w, ln1_b)
    qkv0 = _project(xn, W_attn, 96)
    qkv = tang.compute((2, 16, 96), lambda n, l, c: qkv0[n, l, c]
                       + b_attn[c])
    Q, K, V = (qkv.view((2, 4, 16, 8), lambda n, h, l, d, o=o:
                        (n, l, h * 8 + d + o)) for o in (0, 32, 64))
    QK = tang.compute((2, 4, 16, 16), lambda n, h, i, j: tang.sum(
        8, lambda d: Q[n, h, i, d] * K[n, h, j, d]))

    def score(n, h, i, j):
        s = QK[n, h, i, j] * tang.rsqrt(tang.lang.constant(8.0, f32))
        return tang.where(j <= i, s, float("-inf"))
    Oh = _softmax_times(tang.compute((2, 4, 16, 16), score), V, lambda h: h)
    O = Oh.view((2, 16, 32), lambda n, q, c: (n, c // 8, q, c % 8))
    A = _project(O, W_proj, 32)
    h = tang.compute((2, 16, 32), lambda n, q, e: x[n, q, e] + (
        A[n, q, e] + b_proj[e]))
    hn = _layer_norm(h, ln2_w, ln2_b)
    U = _project(hn, W_fc, 128)

    def gelu(n, q, f):
        y = U[n, q, f] + b_fc[f]
        inner = y + 0.044715 * (y * y * y)
        return 0.5 * y * (1.0 + tang.tanh(0.7978845608028654 * inner))
    G = tang.compute((2, 16, 128), gelu)
    Dn = _project(G, W_fc2, 32)
    return tang.compute((2, 16, 32), lambda n, q, e: h[n, q, e] + (
        Dn[n, q, e] + b_fc2[e]))


@tang.function
def linear_recurrence(g: f32[2048], x: f32[2048]):
    """The triangular form: every prefix folded under the affine monoid,
    the terms after t masked to its identity (1, 0)."""
    def prefix(t):
        def term(k):
            keep = k <= t
            a = 1.0 / (1.0 + tang.exp(-g[k]))
            return tang.where(keep, a, 1.0), tang.where(keep, x[k], 0.0)
        return tang.reduce(_AFFINE, 2048, term)
    _, h = tang.compute((2048,), prefix)
    return h


@tang.function
def prefix_sum(x: f32[64]):
    return tang.compute((64,), lambda i: tang.sum(
        64, lambda k: tang.where(k <= i, x[k], 0.0)))


@tang.function
def kv_cache_decode(Kc: f32[64, 16], Vc: f32[64, 16], k: f32[16],
                    v: f32[16], q: f32[16], pos: tang.size):
    K = tang.scatter(Kc, (16,), lambda d: (k[d], (pos, d)), policy="drop")
    V = tang.scatter(Vc, (16,), lambda d: (v[d], (pos, d)), policy="drop")
    n = pos + 1
    s = tang.compute((n,), lambda t: tang.sum(
        16, lambda d: q[d] * K[t, d] * 0.25))
    m = tang.compute((), lambda: tang.max(n, lambda t: s[t]))

    def out(d):
        e = lambda t: tang.exp(s[t] - m[()])  # noqa: E731
        return tang.sum(n, lambda t: e(t) * V[t, d]) / tang.sum(n, e)
    return K, V, tang.compute((16,), out)


@tang.function
def decode_attention(q: f32[4, 64], K: f32[2, 1024, 64],
                     V: f32[2, 1024, 64], pos: tang.size):
    n = pos + 1
    s = tang.compute((4, n), lambda h, j: tang.sum(
        64, lambda e: q[h, e] * K[h // 2, j, e]) * 0.125)
    m = tang.compute((4,), lambda h: tang.max(n, lambda j: s[h, j]))
    z = tang.compute((4,), lambda h: tang.sum(
        n, lambda j: tang.exp(s[h, j] - m[h])))
    p = tang.compute((4, n), lambda h, j: tang.exp(s[h, j] - m[h]) / z[h])
    return tang.compute((4, 64), lambda h, d: tang.sum(
        n, lambda j: p[h, j] * V[h // 2, j, d]))


#: name -> (function, --size values of the .mlir run)
EXAMPLES = {f.name: (f, []) for f in (
    gpt2_block, transformer_block, alibi_attention, attention, linear_recurrence, moe_top2, matmul, gemv, softmax, rmsnorm, layernorm, argmax, logsumexp,
    cross_entropy, vocab_cross_entropy, matmul_bias_gelu, causal_conv1d, conv2d, swiglu_mlp,
    decode_mlp, batched_gemv, greedy_token,
    causal_attention, gqa_attention, embedding_rmsnorm,
    linear_recurrence_scan, prefix_sum)}
EXAMPLES["moe_layer"] = (qwen3_next.moe_layer(qwen3_next.MoeConfig(
    hidden=64, experts=16, ffn=32, top_k=4, shared_ffn=48, dtype=f32), 4), [])
EXAMPLES["gated_delta_rule"] = (qwen3_next.gated_delta_rule(
    qwen3_next.DeltaConfig(key_heads=2, value_heads=4, key_dim=8,
                           value_dim=8, dtype=f32), 1, 128,
    initial_state=True, raw_gates=True), [])
EXAMPLES["kv_cache_decode"] = (kv_cache_decode, ["arg5=9"])
EXAMPLES["decode_attention"] = (decode_attention, ["arg3=300"])


@tang.function
def varlen_decode_attention(q: f32[3, 8, 64], K: f32[3, 2, 128, 64],
                            V: f32[3, 2, 128, 64], pos: i32[3],
                            n: tang.size):
    def keep(b, j):
        return j <= tang.maximum(pos[b], 0)
    s = tang.compute((3, 8, n), lambda b, h, j: tang.where(
        keep(b, j), tang.sum(64, lambda e: q[b, h, e] * K[b, h // 4, j, e])
        * 0.125, float("-inf")))
    m = tang.compute((3, 8), lambda b, h: tang.max(n, lambda j: s[b, h, j]))
    z = tang.compute((3, 8), lambda b, h: tang.sum(
        n, lambda j: tang.exp(s[b, h, j] - m[b, h])))
    return tang.compute((3, 8, 64), lambda b, h, d: tang.sum(
        n, lambda j: tang.exp(s[b, h, j] - m[b, h]) / z[b, h]
        * tang.where(keep(b, j), V[b, h // 4, j, d], 0.0)))


EXAMPLES["varlen_decode_attention"] = (varlen_decode_attention, ["arg4=77"])
