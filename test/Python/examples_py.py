"""Examples of examples/ written with the Python builder (tang.lang), each
the same math as the .mlir file of the same name: test_examples_py.py runs
both through the interpreter on the .mlir's seeded inputs and compares
every output."""

import tang
from tang import f32, i32


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


def _attention(Q, K, V, kv_head, causal):
    def score(b, h, i, j):
        s = tang.sum(8, lambda d: Q[b, h, i, d] * K[b, kv_head(h), j, d])
        # rsqrt(8) as the examples spell it (not 1/sqrt(8) rounded to f32).
        s = s * tang.rsqrt(tang.lang.constant(8.0, f32))
        return tang.where(j <= i, s, float("-inf")) if causal else s
    S = tang.compute((2, 4, 16, 16), score)
    m = tang.compute((2, 4, 16), lambda b, h, i: tang.max(
        16, lambda j: S[b, h, i, j]))
    l = tang.compute((2, 4, 16), lambda b, h, i: tang.sum(
        16, lambda j: tang.exp(S[b, h, i, j] - m[b, h, i])))
    P = tang.compute((2, 4, 16, 16), lambda b, h, i, j: tang.exp(
        S[b, h, i, j] - m[b, h, i]) / l[b, h, i])
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


#: name -> (function, --size values of the .mlir run)
EXAMPLES = {f.name: (f, []) for f in (
    attention, linear_recurrence, matmul, gemv, softmax, rmsnorm, layernorm, argmax, logsumexp,
    cross_entropy, matmul_bias_gelu, causal_conv1d, conv2d, swiglu_mlp,
    causal_attention, gqa_attention, embedding_rmsnorm,
    linear_recurrence_scan, prefix_sum)}
EXAMPLES["kv_cache_decode"] = (kv_cache_decode, ["arg5=9"])
