"""The Python front end (python/tang): the builder, the operator library
and tang.compile, against NumPy.

Every operator of tang.nn is traced, parsed and printed back by tang-opt
(round trip), run by the float64 interpreter (tolerance of float64 from the
same float32 inputs) and by the C backend (float32), against NumPy in
float64, on every element. Errors name the user's line.

Run:  TANG_BIN=<build>/bin /usr/bin/python3 -m pytest -q test/Python
"""

import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
os.environ.setdefault("TANG_BIN", str(TANG_BIN))

import tang  # noqa: E402
from tang import f32, i32, nn  # noqa: E402


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TANG_CACHE_DIR", str(tmp_path / "cache"))


def rand(rng, *shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_rms_norm(x, w, eps=1e-6):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def np_layer_norm(x, w, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def np_attention(q, k, v, causal):
    H, L, D = q.shape
    Hk, S, _ = k.shape
    kk = np.repeat(k, H // Hk, axis=0)
    vv = np.repeat(v, H // Hk, axis=0)
    s = q @ kk.transpose(0, 2, 1) / math.sqrt(D)
    if causal:
        i = np.arange(L)[:, None]
        j = np.arange(S)[None, :]
        s = np.where(j <= i + (S - L), s, -np.inf)
    return np_softmax(s) @ vv


def np_rope(x, theta=10000.0):
    L, H, D = x.shape
    half = D // 2
    freq = theta ** (-2.0 * (np.arange(D) % half) / D)
    ang = np.arange(L)[:, None, None] * freq[None, None, :]
    rot = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * np.cos(ang) + rot * np.sin(ang)


def np_gelu(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / math.sqrt(2)))


def np_cross_entropy(logits, t):
    m = logits.max(1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(1)) + m[:, 0]
    return np.array(np.mean(lse - logits[np.arange(len(t)), t]))


def np_conv(x, w):
    C, L = x.shape
    K = w.shape[1]
    xp = np.concatenate([np.zeros((C, K - 1)), x], axis=1)
    return np.stack([sum(w[:, k:k + 1] * xp[:, k:k + L][:, s:s + 1]
                         for k in range(K))[:, 0] for s in range(L)], axis=1)


def np_swiglu(x, wg, wu, wd):
    g = x @ wg
    return (g / (1 + np.exp(-g)) * (x @ wu)) @ wd


# name -> (function, inputs maker, NumPy reference)
def library():
    @tang.function
    def rms_norm(x: f32[8, 32], w: f32[32]):
        return nn.rms_norm(x, w)

    @tang.function
    def layer_norm(x: f32[8, 32], w: f32[32], b: f32[32]):
        return nn.layer_norm(x, w, b)

    @tang.function
    def softmax(x: f32[8, 32]):
        return nn.softmax(x)

    @tang.function
    def linear(x: f32[8, 32], w: f32[32, 12], b: f32[12]):
        return nn.linear(x, w, b)

    @tang.function
    def gelu(x: f32[8, 32]):
        return nn.gelu(x)

    @tang.function
    def attention(q: f32[4, 6, 8], k: f32[2, 9, 8], v: f32[2, 9, 8]):
        return nn.attention(q, k, v)

    @tang.function
    def causal_attention(q: f32[4, 6, 8], k: f32[2, 9, 8], v: f32[2, 9, 8]):
        return nn.attention(q, k, v, causal=True)

    @tang.function
    def decode_attention(q: f32[3, 4, 8], k: f32[3, 2, 9, 8],
                         v: f32[3, 2, 9, 8], lengths: i32[3]):
        return nn.decode_attention(q, k, v, lengths)

    def decode_inputs(r):
        # NaN in every cache row past a sequence's length: masked, it
        # contributes nothing.
        q, k, v = rand(r, 3, 4, 8), rand(r, 3, 2, 9, 8), rand(r, 3, 2, 9, 8)
        lengths = np.array([1, 9, 5], np.int32)
        for b, n in enumerate(lengths):
            k[b, :, n:] = np.nan
            v[b, :, n:] = np.nan
        return [q, k, v, lengths]

    def np_decode_attention(q, k, v, lengths):
        return np.stack([np_attention(q[b][:, None], k[b][:, :n],
                                      v[b][:, :n], False)[:, 0]
                         for b, n in enumerate(lengths)])

    @tang.function
    def rope(x: f32[6, 2, 8]):
        return nn.rope(x)

    @tang.function
    def swiglu(x: f32[4, 16], wg: f32[16, 24], wu: f32[16, 24],
               wd: f32[24, 16]):
        return nn.swiglu(x, wg, wu, wd)

    @tang.function
    def embedding(table: f32[20, 8], ids: i32[6]):
        return nn.embedding(table, ids, policy="clamp")

    @tang.function
    def cross_entropy(logits: f32[6, 20], ids: i32[6]):
        return nn.cross_entropy(logits, ids, policy="clamp")

    @tang.function
    def causal_conv1d(x: f32[3, 10], w: f32[3, 4]):
        return nn.causal_conv1d(x, w)

    def ids(rng, n, bound):
        return rng.integers(0, bound, n).astype(np.int32)

    return {
        "rms_norm": (rms_norm, lambda r: [rand(r, 8, 32), rand(r, 32)],
                     np_rms_norm),
        "layer_norm": (layer_norm, lambda r: [rand(r, 8, 32), rand(r, 32),
                                              rand(r, 32)], np_layer_norm),
        "softmax": (softmax, lambda r: [rand(r, 8, 32)], np_softmax),
        "linear": (linear, lambda r: [rand(r, 8, 32), rand(r, 32, 12),
                                      rand(r, 12)],
                   lambda x, w, b: x @ w + b),
        "gelu": (gelu, lambda r: [rand(r, 8, 32)], np_gelu),
        "attention": (attention, lambda r: [rand(r, 4, 6, 8),
                                            rand(r, 2, 9, 8),
                                            rand(r, 2, 9, 8)],
                      lambda q, k, v: np_attention(q, k, v, False)),
        "causal_attention": (causal_attention,
                             lambda r: [rand(r, 4, 6, 8), rand(r, 2, 9, 8),
                                        rand(r, 2, 9, 8)],
                             lambda q, k, v: np_attention(q, k, v, True)),
        "decode_attention": (decode_attention, decode_inputs,
                             np_decode_attention),
        "rope": (rope, lambda r: [rand(r, 6, 2, 8)], np_rope),
        "swiglu": (swiglu, lambda r: [rand(r, 4, 16), rand(r, 16, 24),
                                      rand(r, 16, 24), rand(r, 24, 16)],
                   np_swiglu),
        "embedding": (embedding, lambda r: [rand(r, 20, 8), ids(r, 6, 20)],
                      lambda t, i: t[i]),
        "cross_entropy": (cross_entropy,
                          lambda r: [rand(r, 6, 20), ids(r, 6, 20)],
                          np_cross_entropy),
        "causal_conv1d": (causal_conv1d, lambda r: [rand(r, 3, 10),
                                                    rand(r, 3, 4)], np_conv),
    }


LIBRARY = library()


def check(got, want, rtol, atol):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.all(np.isfinite(got)), "non-finite output"
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale)


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_operator_round_trips_through_tang_opt(name, tmp_path):
    fn = LIBRARY[name][0]
    text = fn.mlir()
    src = tmp_path / "a.mlir"
    src.write_text(text)
    once = subprocess.run([str(TANG_BIN / "tang-opt"), str(src)],
                          capture_output=True, text=True)
    assert once.returncode == 0, once.stderr
    (tmp_path / "b.mlir").write_text(once.stdout)
    twice = subprocess.run([str(TANG_BIN / "tang-opt"),
                            str(tmp_path / "b.mlir")],
                           capture_output=True, text=True)
    assert twice.returncode == 0, twice.stderr
    assert once.stdout == twice.stdout


@pytest.mark.parametrize("target", ["interpreter", "c"])
@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_operator_matches_numpy(name, target):
    fn, make, reference = LIBRARY[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    xs = make(rng)
    got = tang.compile(fn, target=target)(*xs)
    want = reference(*[x.astype(np.float64) if x.dtype.kind == "f" else x
                       for x in xs])
    if target == "interpreter":
        # float64 arithmetic from the same inputs; the program's constants
        # (1/sqrt(D), RoPE's frequencies' factor) are f32, rounded.
        check(got, want, 1e-6, 1e-9)
    else:
        # float32: a few ulps per accumulated term.
        check(got, want, 2e-5, 2e-6)


def test_symbolic_rows_one_compilation_every_size():
    M = tang.Sym("M")

    @tang.function
    def rms(x: f32[M, 16], w: f32[16]):
        return nn.rms_norm(x, w)

    @tang.function
    def rows(x: f32[M, 16]):
        # The symbol itself as an extent.
        return tang.compute((M,), lambda i: tang.sum(16, lambda k: x[i, k]))

    assert "[%x_dim0, 16] monoid(add)" in rows.mlir()

    assert "tensor<?x16xf32>" in rms.mlir()
    run = tang.compile(rms)
    rng = np.random.default_rng(1)
    w = rand(rng, 16)
    for m in (1, 5, 33):
        x = rand(rng, m, 16)
        check(run(x, w), np_rms_norm(x.astype(np.float64), w), 2e-5, 2e-6)


def test_materialize_keeps_a_tensor_out_of_fusion(tmp_path):
    """materialize=True marks the comprehension tang.saved: --tang-fuse
    leaves it a comprehension of its own (unmarked, the scale is
    substituted into its reader), and the result is the same."""
    def program(materialize):
        @tang.function
        def scaled_sum(x: f32[8, 32]):
            y = tang.compute((8, 32), lambda i, k: x[i, k] * 2.0,
                             materialize=materialize)
            return tang.compute((8,), lambda i: tang.sum(
                32, lambda k: y[i, k]))
        return scaled_sum

    counts = {}
    for mark in (False, True):
        fn = program(mark)
        assert ("attributes {tang.saved}" in fn.mlir()) == mark
        src = tmp_path / f"p{int(mark)}.mlir"
        src.write_text(fn.mlir())
        fused = subprocess.run(
            [str(TANG_BIN / "tang-opt"), str(src), "--tang-fuse"],
            capture_output=True, text=True, check=True).stdout
        counts[mark] = fused.count("tang.comprehension")
        x = rand(np.random.default_rng(3), 8, 32)
        check(tang.compile(fn)(x), 2.0 * x.astype(np.float64).sum(1),
              1e-5, 1e-6)
    assert counts == {False: 1, True: 2}


def test_scan_with_a_user_monoid():
    affine = tang.Monoid("affine", [f32, f32], [1.0, 0.0],
                         lambda a, b: (a[0] * b[0], b[0] * a[1] + b[1]))

    @tang.function
    def recurrence(g: f32[300], x: f32[300]):
        _, h = tang.scan((300,), affine, lambda t: (tang.sigmoid(g[t]), x[t]))
        return h

    rng = np.random.default_rng(2)
    g, x = rand(rng, 300), rand(rng, 300)
    a = 1 / (1 + np.exp(-g.astype(np.float64)))
    want, h = [], 0.0
    for t in range(300):
        h = a[t] * h + x[t]
        want.append(h)
    for target in ("interpreter", "c"):
        check(tang.compile(recurrence, target=target)(g, x), want, 2e-5,
              2e-6)


def test_tensor_scan_of_a_matrix_state():
    """A tensor monoid written in Python (the composition of affine maps on
    [3, 2] states) and tang.tensor_scan from an initial state, on the
    interpreter, against the recurrence S_t = A_t S_{t-1} + B_t; the
    identity built with Index.eq."""
    K, V, P, T = 3, 2, 2, 6
    affine = tang.Monoid("affine", [f32[K, K], f32[K, V]], None, lambda a, b: (
        tang.compute((K, K), lambda i, j: tang.sum(
            K, lambda k: b[0][i, k] * a[0][k, j])),
        tang.compute((K, V), lambda i, j: tang.sum(
            K, lambda k: b[0][i, k] * a[1][k, j]) + b[1][i, j])))

    @tang.function
    def states(A: f32[P, T, K, K], B: f32[P, T, K, V], S0: f32[P, K, V]):
        eye = tang.compute((P, K, K), lambda p, i, j: tang.where(
            i.eq(j), 1.0, 0.0))
        _, S = tang.tensor_scan(affine, [A, B], init=[eye, S0])
        return S

    rng = np.random.default_rng(5)
    A, B, S0 = rand(rng, P, T, K, K), rand(rng, P, T, K, V), rand(rng, P, K, V)
    want = np.zeros((P, T, K, V))
    for p in range(P):
        S = S0[p].astype(np.float64)
        for t in range(T):
            S = A[p, t].astype(np.float64) @ S + B[p, t]
            want[p, t] = S
    check(tang.compile(states, target="interpreter")(A, B, S0), want, 1e-12,
          1e-12)


def test_tensor_monoid_errors():
    with pytest.raises(tang.TangError, match="not both"):
        tang.Monoid("m", [f32[2], f32], None, lambda a, b: a)
    with pytest.raises(tang.TangError, match="no identity"):
        tang.Monoid("m", [f32[2]], [0.0], lambda a, b: a)
    wrong = tang.Monoid("m", [f32[2]], None, lambda a, b: (tang.compute(
        (3,), lambda i: 1.0),))

    @tang.function
    def f(x: f32[4, 2]):
        return tang.tensor_scan(wrong, [x])[0]
    with pytest.raises(tang.TangError, match=r"result #0 must be a f32\[2\]"):
        f.mlir()

    @tang.function
    def g(x: f32[4, 3]):
        return tang.tensor_scan(tang.Monoid(
            "n", [f32[2]], None, lambda a, b: a), [x])[0]
    with pytest.raises(tang.TangError, match="element #0 must be a tensor "
                       "of shape"):
        g.mlir()


def test_index_equality_is_a_mask_not_pythons():
    """i == j is Python's identity (a bool fixed while tracing): tang.where
    refuses it and points at i.eq(j)."""
    @tang.function
    def diag(x: f32[3, 3]):
        return tang.compute((3, 3), lambda i, j: tang.where(i == j, x[i, j],
                                                            0.0))
    with pytest.raises(tang.TangError, match=r"i.eq\(j\)"):
        diag.mlir()

    @tang.function
    def diag2(x: f32[3, 3]):
        return tang.compute((3, 3), lambda i, j: tang.where(
            i.eq(j), x[i, j], 0.0))
    x = rand(np.random.default_rng(1), 3, 3)
    check(tang.compile(diag2, target="interpreter")(x), np.diag(np.diag(
        x.astype(np.float64))), 0, 0)


def test_scatter_at_a_position_argument():
    @tang.function(donate=("cache",))
    def insert(cache: f32[8, 4], new: f32[4], pos: tang.size):
        return tang.scatter(cache, (4,), lambda d: (new[d], (pos, d)))

    assert "%pos: index" in insert.mlir()
    assert "{tang.donate}" in insert.mlir()
    rng = np.random.default_rng(3)
    cache, new = rand(rng, 8, 4), rand(rng, 4)
    want = cache.copy()
    want[5] = new
    got = tang.compile(insert, target="interpreter")(cache, new, 5)
    check(got, want, 0, 0)


def test_compiled_programs_are_cached(monkeypatch):
    @tang.function
    def double(x: f32[4]):
        return tang.compute((4,), lambda i: x[i] * 2.0)

    first = tang.compile(double)

    def no_tools(*args, **kwargs):
        raise AssertionError("the cached program was rebuilt")
    # A second compile loads the library: no tang-opt, no C compiler.
    monkeypatch.setattr(tang.compiler, "_run", no_tools)
    second = tang.compile(double)
    assert second.directory == first.directory
    check(second(np.arange(4, dtype=np.float32)), [0, 2, 4, 6], 0, 0)


def test_out_of_range_id_traps_in_the_interpreter():
    @tang.function
    def lookup(table: f32[20, 8], ids: i32[3]):
        return nn.embedding(table, ids)

    rng = np.random.default_rng(4)
    run = tang.compile(lookup, target="interpreter")
    with pytest.raises(tang.TangError, match="25"):
        run(rand(rng, 20, 8), np.array([1, 25, 3], np.int32))
    # Kernels cannot report it: the runtime checks the ids before the run
    # (docs/Bundle.md, "Index checks"), naming the element and its value.
    c = tang.compile(lookup, target="c")
    table = rand(rng, 20, 8)
    with pytest.raises(tang.TangError, match=(
            r"input #1: element 1 is 25, outside \[0, 20\) for coordinate "
            r"#0 of the gather into tensor<20x8xf32> at .*test_lang.py:\d+; "
            r"nothing ran")):
        c(table, np.array([1, 25, 3], np.int32))
    with pytest.raises(tang.TangError, match="element 0 is -1"):
        c(table, np.array([-1, 2, 3], np.int32))
    ids = np.array([0, 19, 7], np.int32)
    np.testing.assert_array_equal(c(table, ids), run(table, ids))


def test_computed_trap_coordinate_is_refused_on_kernels():
    # An id the program computes (the next row) is no input's element: the
    # runtime cannot check it, so kernels refuse trap, at the line.
    @tang.function
    def next_row(table: f32[20, 8], ids: i32[3]):
        return tang.compute((3, 8), lambda i, d: table[ids[i] + 1, d])

    with pytest.raises(tang.TangError, match="kernels cannot check"):
        tang.compile(next_row, target="c")


def test_call_errors_name_the_argument():
    run = tang.compile(LIBRARY["softmax"][0])
    with pytest.raises(tang.TangError, match=r"input #0 has shape \(8, 31\)"):
        run(np.zeros((8, 31), np.float32))
    with pytest.raises(tang.TangError, match="input #0 is float64"):
        run(np.zeros((8, 32)))
    with pytest.raises(tang.TangError, match="takes 1 arguments, got 2"):
        run(np.zeros((8, 32), np.float32), 3)


def here():
    import inspect
    return inspect.currentframe().f_back.f_lineno


def test_branch_on_a_traced_value_is_an_error_at_the_line():
    @tang.function
    def branchy(x: f32[4]):
        def body(i):
            line[0] = here() + 1
            if x[i] > 0:
                return x[i]
            return -x[i]
        return tang.compute((4,), body)

    line = [0]
    with pytest.raises(tang.TangError) as e:
        branchy.mlir()
    assert f"test_lang.py:{line[0]}:" in str(e.value), str(e.value)
    assert "tang.where" in str(e.value)


def test_mixed_types_and_ranks_are_errors():
    @tang.function
    def mixed(x: f32[4], y: tang.bf16[4]):
        return tang.compute((4,), lambda i: x[i] + y[i])

    with pytest.raises(tang.TangError, match="mixing f32 and bf16"):
        mixed.mlir()

    @tang.function
    def rank(x: f32[4, 4]):
        return tang.compute((4,), lambda i: x[i])

    with pytest.raises(tang.TangError, match="1 coordinates for a tensor of "
                                             "rank 2"):
        rank.mlir()


def test_verifier_errors_point_at_the_python_line(tmp_path):
    @tang.function
    def shifted(x: f32[4]):
        line[0] = here() + 1
        return tang.compute((4,), lambda i: x[i + 1])

    line = [0]
    with pytest.raises(tang.TangError) as e:
        tang.compile(shifted, target="interpreter")
    assert f"test_lang.py:{line[0]}:" in str(e.value), str(e.value)


def np_block(x, wn1, wq, wk, wv, wo, wn2, w1, w3, w2, heads=4):
    T, D = x.shape
    dh = D // heads
    xn = np_rms_norm(x, wn1)
    q, k, v = ((xn @ w).reshape(T, heads, dh).transpose(1, 0, 2)
               for w in (wq, wk, wv))
    o = np_attention(q, k, v, True).transpose(1, 0, 2).reshape(T, D)
    h = x + o @ wo
    return h + np_swiglu(np_rms_norm(h, wn2), w1, w3, w2)


@tang.function
def block(x: f32[16, 32], wn1: f32[32], wq: f32[32, 32], wk: f32[32, 32],
          wv: f32[32, 32], wo: f32[32, 32], wn2: f32[32], w1: f32[32, 64],
          w3: f32[32, 64], w2: f32[64, 32]):
    return nn.transformer_block(x, wn1, wq, wk, wv, wo, wn2, w1, w3, w2,
                                heads=4)


def block_inputs(rng):
    shapes = [(16, 32), (32,), (32, 32), (32, 32), (32, 32), (32, 32),
              (32,), (32, 64), (32, 64), (64, 32)]
    return [rand(rng, *s) * (0.5 if len(s) == 2 else 1) for s in shapes]


@pytest.mark.parametrize("target", ["interpreter", "c"])
def test_transformer_block_matches_numpy(target):
    xs = block_inputs(np.random.default_rng(5))
    got = tang.compile(block, target=target)(*xs)
    want = np_block(*[x.astype(np.float64) for x in xs])
    if target == "interpreter":
        # float64, but eps and the attention scale are f32 constants.
        check(got, want, 1e-6, 1e-7)
    else:
        check(got, want, 2e-5, 2e-6)


def test_vjp_matches_finite_differences():
    """tang.vjp (--tang-grad split=1) through the interpreter: <grad, v>
    against central differences of <dy, f(x)>, per argument; the C
    backend's gradients agree with the interpreter's to float32."""
    rng = np.random.default_rng(6)
    xs = block_inputs(rng)
    step = tang.vjp(block, target="interpreter")
    y, saved = step.forward(*xs)
    # The split forward computes the same values (in float64, up to the
    # order of its operations).
    check(y, tang.compile(block, target="interpreter")(*xs), 1e-12, 1e-12)
    dy = rand(rng, *y.shape)
    grads = step.backward(saved, dy)
    assert len(grads) == len(xs)
    run = tang.compile(block, target="interpreter")
    h = 1e-3   # inputs are float32 files: a step they can carry
    for k, (x, g) in enumerate(zip(xs, grads)):
        v = rand(rng, *x.shape)
        up = list(xs)
        up[k] = (x.astype(np.float64) + h * v).astype(np.float32)
        down = list(xs)
        down[k] = (x.astype(np.float64) - h * v).astype(np.float32)
        dv = (up[k].astype(np.float64) - down[k]) / 2
        numeric = (np.sum(dy * run(*up)) - np.sum(dy * run(*down))) / 2
        analytic = float(np.sum(g * dv))
        assert abs(analytic - numeric) <= 2e-3 * max(1.0, abs(numeric)), (
            k, analytic, numeric)
    c_grads = tang.vjp(block, target="c").backward(
        tang.vjp(block, target="c").forward(*xs)[1], dy)
    for g, c in zip(grads, c_grads):
        check(c, g, 1e-4, 1e-5)


def test_vjp_of_a_symbolic_function_at_each_size():
    """A function with a '?' dimension is differentiated at the sizes of
    each call (--tang-specialize-sizes, then --tang-grad): dx = dy w^T,
    dw = x^T dy, against NumPy, at two lengths through one tang.vjp."""
    L = tang.Sym("L")

    @tang.function
    def proj(x: f32[L, 8], w: f32[8, 4]):
        return nn.linear(x, w)

    step = tang.vjp(proj)
    rng = np.random.default_rng(8)
    w = rand(rng, 8, 4)
    for n in (3, 7):
        x = rand(rng, n, 8)
        y, saved = step.forward(x, w)
        check(y, x.astype(np.float64) @ w, 2e-6, 2e-6)
        dy = rand(rng, n, 4)
        dx, dw = step.backward(saved, dy)
        check(dx, dy.astype(np.float64) @ w.T, 2e-6, 2e-6)
        check(dw, x.T.astype(np.float64) @ dy, 2e-6, 2e-6)
    assert len(step._compiled) == 2


def test_dlpack_inputs():
    """Anything with __dlpack__ (a CPU torch tensor, ...) is taken as an
    input without a copy."""
    class Foreign:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kwargs):
            return self.a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    fn = LIBRARY["softmax"][0]
    x = rand(np.random.default_rng(9), 8, 32)
    got = tang.compile(fn)(Foreign(x))
    check(got, np_softmax(x.astype(np.float64)), 2e-5, 2e-6)


def test_a_tuning_cache_is_part_of_the_compile_key(tmp_path):
    """`schedule-cache=FILE` (docs/Tuning.md): the same program with a
    re-tuned cache compiles anew; a missing file is a clear error."""
    @tang.function
    def double(x: f32[4]):
        return tang.compute((4,), lambda i: x[i] * 2.0)

    cache = tmp_path / "tuned.json"
    cache.write_text('{"version": 1, "entries": []}')
    first = tang.compile(double, target="cuda",
                         options=f"schedule-cache={cache}")
    again = tang.compile(double, target="cuda",
                         options=f"schedule-cache={cache}")
    assert again.directory == first.directory
    cache.write_text('{"version": 1, "entries": [], "device": "retuned"}')
    retuned = tang.compile(double, target="cuda",
                           options=f"schedule-cache={cache}")
    assert retuned.directory != first.directory
    with pytest.raises(tang.TangError, match="schedule-cache=.*missing"):
        tang.compile(double, target="cuda",
                     options=f"schedule-cache={tmp_path / 'missing.json'}")


def test_a_bool_constant_is_valid_ir():
    """An i1 constant prints as MLIR's bool attribute (no type after it)."""
    @tang.function
    def keep(x: f32[3]):
        return tang.compute((3,), lambda i: tang.where(
            tang.lang.constant(True, tang.i1), x[i], 0.0))
    x = rand(np.random.default_rng(2), 3)
    check(tang.compile(keep, target="interpreter")(x), x, 0, 0)
