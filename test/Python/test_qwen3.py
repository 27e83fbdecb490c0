"""tang.models.qwen3 (the Qwen3-shaped decoder) against an independent
NumPy float64 decoder (qwen3_reference.py), on the TINY configuration.

The decode step and the prefill run on the float64 interpreter and on the
C backend (float32) from random, non-zero weights; every output element is
compared (logits, the updated caches), the greedy tokens must be equal, and
bad input (a position beyond the cache, a token outside the vocabulary) is
refused with nothing written.

Run:  TANG_BIN=<build>/bin /usr/bin/python3 -m pytest -q test/Python
"""

import os
import pathlib
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
os.environ.setdefault("TANG_BIN", str(TANG_BIN))

import tang  # noqa: E402
from tang.models import qwen3  # noqa: E402
import qwen3_reference as ref  # noqa: E402

CFG = qwen3.TINY
BATCH, CAPACITY, POS, PROMPT = 2, 8, 5, 5
# float64 interpreter: the keys and values are stored in the caches as
# float32 (cfg.dtype), a relative 6e-8 each, carried through the second
# layer; C backend: float32 through two layers of products over <= 96
# terms of values O(1).
TOLERANCE = {"interpreter": 1e-6, "c": 2e-4}


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TANG_CACHE_DIR", str(tmp_path / "cache"))


def weights(seed=0, cfg=CFG):
    """Random weights, none zero: uniform in +-[0.05, 0.5] (norm gains
    around 1), so every product and every norm matters."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in qwen3.weight_shapes(cfg).items():
        mag = rng.uniform(0.05, 0.5, shape)
        w = mag * rng.choice([-1.0, 1.0], shape)
        if "norm" in name:
            w = 1.0 + 0.5 * w
        out[name] = w.astype(np.float32)
    return out


def caches(seed=1, batch=BATCH, cfg=CFG):
    rng = np.random.default_rng(seed)
    shape = qwen3.cache_shape(cfg, batch, CAPACITY)
    return (rng.uniform(-1, 1, shape).astype(np.float32),
            rng.uniform(-1, 1, shape).astype(np.float32))


def check(got, want, tol, what):
    got = np.asarray(got, np.float64)
    assert got.shape == want.shape, what
    assert not np.isnan(got).any(), f"{what}: NaN"
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    assert err <= tol, f"{what}: relative error {err:.3g} > {tol:.3g}"


def argmax_agrees(tokens, logits, want_tokens):
    """Tokens equal the reference's, unless the reference's top two logits
    are closer than float32 can tell (then either is right)."""
    for b, (tok, want) in enumerate(zip(tokens, want_tokens)):
        if tok != want:
            top = np.sort(logits[b])[-2:]
            assert top[1] - top[0] < 1e-4 * abs(top[1]), \
                f"sequence {b}: token {tok}, reference {want}"


def check_decode_step(cfg, target, tol, seed=0, operands=None):
    """One decode step of `cfg` (batch BATCH at POS) on `target` against
    the reference: logits, both caches, tokens. Returns the input and
    updated key caches."""
    W = weights(seed, cfg)
    kc, vc = caches(seed + 1, cfg=cfg)
    tokens = np.array([7, 151], np.int32)
    want_kc, want_vc = kc.astype(np.float64), vc.astype(np.float64)
    want_tok, want_lg = ref.decode_step(
        cfg, {k: v.astype(np.float64) for k, v in W.items()}, tokens,
        want_kc, want_vc, POS)
    step = qwen3.decode_step(cfg, BATCH, CAPACITY, logits=True,
                             operands=operands)
    run = tang.compile(step, target=target)
    tok, lg, kc2, vc2 = run(tokens, *W.values(), kc.copy(), vc.copy(), POS)
    check(lg, want_lg, tol, "logits")
    check(kc2, want_kc, tol, "key cache")
    check(vc2, want_vc, tol, "value cache")
    argmax_agrees(tok, want_lg, want_tok)
    return kc, kc2


@pytest.mark.parametrize("target", ["interpreter", "c"])
def test_decode_step_matches_the_reference(target):
    kc, kc2 = check_decode_step(CFG, target, TOLERANCE[target])
    # The caches changed at row POS only (the rest is the input, exactly).
    rows = np.arange(CAPACITY) != POS
    assert np.array_equal(kc2[:, :, :, rows], kc[:, :, :, rows])
    assert not np.array_equal(kc2[:, :, :, POS], kc[:, :, :, POS])


def test_decode_step_with_product_operands_matches_the_reference():
    # The structure of tensor-core products (operands of the weights' type,
    # the residual stream and the gate/up product materialised): in f32
    # storage the operands round nothing, so the same reference holds.
    check_decode_step(CFG, "c", TOLERANCE["c"], seed=6, operands=CFG.dtype)


@pytest.mark.parametrize("target", ["interpreter", "c"])
def test_prefill_matches_the_reference(target):
    W = weights(2)
    kc, vc = caches(3, batch=1)
    ids = np.array([3, 99, 42, 0, 159], np.int32)
    want_kc, want_vc = kc.astype(np.float64), vc.astype(np.float64)
    want_tok, want_lg = ref.prefill(
        CFG, {k: v.astype(np.float64) for k, v in W.items()}, ids,
        want_kc, want_vc)
    run = tang.compile(qwen3.prefill(CFG, PROMPT, CAPACITY, logits=True),
                       target=target)
    tok, lg, kc2, vc2 = run(ids, *W.values(), kc.copy(), vc.copy())
    tol = TOLERANCE[target]
    check(lg, want_lg, tol, "logits")
    check(kc2, want_kc, tol, "key cache")
    check(vc2, want_vc, tol, "value cache")
    argmax_agrees(tok, want_lg, want_tok)


@pytest.mark.parametrize("target", ["interpreter", "c"])
def test_varlen_decode_step_matches_the_reference(target):
    """Sequences at positions of their own (decode_step(varlen=True)):
    each writes its own cache row and attends over its own positions; the
    cache rows past a sequence's position hold NaN and must not matter
    (they are masked, values included). The caches change at each
    sequence's row only."""
    W = weights(3)
    kc, vc = caches(4)
    positions = np.array([6, 1], np.int32)
    for b, p in enumerate(positions):
        kc[:, b, :, p + 1:] = np.nan
        vc[:, b, :, p + 1:] = np.nan
    tokens = np.array([11, 120], np.int32)
    W64 = {k: v.astype(np.float64) for k, v in W.items()}
    want_kc, want_vc = kc.astype(np.float64), vc.astype(np.float64)
    x = W64["embed"][tokens]
    for i in range(CFG.layers):
        x = ref.layer(CFG, W64, i, x, list(positions), want_kc, want_vc,
                      [0, 1], lambda r: int(positions[r]) + 1)
    want_lg = ref.logits(CFG, W64, x)
    step = qwen3.decode_step(CFG, BATCH, CAPACITY, logits=True, varlen=True)
    assert "positions: tensor<2xi32>" in step.mlir() or \
        "%positions: tensor<2xi32>" in step.mlir()
    run = tang.compile(step, target=target)
    tok, lg, kc2, vc2 = run(tokens, *W.values(), kc.copy(), vc.copy(),
                            positions)
    check(lg, want_lg, TOLERANCE[target], "logits")
    for b, p in enumerate(positions):
        for got, want, what in ((kc2, want_kc, "key"), (vc2, want_vc,
                                                        "value")):
            check(got[:, b, :, :p + 1], want[:, b, :, :p + 1],
                  TOLERANCE[target], f"{what} cache of sequence {b}")
            assert np.isnan(got[:, b, :, p + 1:]).all()
    argmax_agrees(tok, want_lg, want_lg.argmax(-1))
    # A position outside the cache is refused, nothing written.
    with pytest.raises(Exception, match="position|index|range|outside"):
        run(tokens, *W.values(), kc.copy(), vc.copy(),
            np.array([1, CAPACITY], np.int32))


def test_prefill_then_decode_continues_the_sequence():
    """The prefill's caches feed the decode step: greedy tokens of
    prefill + 2 decode steps equal the reference's (C backend)."""
    W = weights(4)
    W64 = {k: v.astype(np.float64) for k, v in W.items()}
    kc = np.zeros(qwen3.cache_shape(CFG, 1, CAPACITY), np.float32)
    vc = np.zeros_like(kc)
    ids = np.array([11, 12, 13, 14, 15], np.int32)
    rk, rv = kc.astype(np.float64), vc.astype(np.float64)
    want, _ = ref.prefill(CFG, W64, ids, rk, rv)
    pre = tang.compile(qwen3.prefill(CFG, PROMPT, CAPACITY))
    step = tang.compile(qwen3.decode_step(CFG, 1, CAPACITY))
    tok, kc, vc = pre(ids, *W.values(), kc, vc)
    assert list(tok) == list(want)
    for pos in range(PROMPT, PROMPT + 2):
        want, _ = ref.decode_step(CFG, W64, want, rk, rv, pos)
        tok, kc, vc = step(tok.astype(np.int32), *W.values(), kc, vc, pos)
        assert list(tok) == list(want), f"position {pos}"


def test_a_deeper_model_fuses_in_batches():
    """Six layers: over 64 function-level comprehensions after fusion, so
    tang-fuse settles the work bound in batches (lib/Transforms/Fuse.cpp,
    kExactWorkBoundLimit); the decode step still matches the reference."""
    cfg = qwen3.Config(**{**qwen3.TINY.__dict__, "layers": 6})
    fused = tang.compile(qwen3.decode_step(cfg, BATCH, CAPACITY),
                         target="interpreter")
    assert fused.text.count("tang.comprehension") > 64
    # float32 through six layers (three times the two-layer tolerance).
    check_decode_step(cfg, "c", 6e-4, seed=5)


def test_a_position_beyond_the_cache_is_refused():
    W = weights()
    kc, vc = caches()
    run = tang.compile(qwen3.decode_step(CFG, BATCH, CAPACITY))
    before = kc.copy()
    with pytest.raises(tang.TangError, match="pos"):
        run(np.array([1, 2], np.int32), *W.values(), kc, vc, CAPACITY)
    assert np.array_equal(kc, before)


@pytest.mark.parametrize("target", ["interpreter", "c"])
def test_a_token_outside_the_vocabulary_is_refused(target):
    # By the runtime, before anything runs: the caches, donated (updated in
    # place), are untouched. The interpreter traps at the gather; kernels
    # have the runtime check the ids first (docs/Bundle.md, "Index checks").
    W = weights()
    kc, vc = caches()
    run = tang.compile(qwen3.decode_step(CFG, BATCH, CAPACITY), target=target)
    before = kc.copy(), vc.copy()
    for bad in (CFG.vocab, -1):
        with pytest.raises(tang.TangError, match=str(bad)):
            run(np.array([1, bad], np.int32), *W.values(), kc, vc, POS)
        assert np.array_equal(kc, before[0])
        assert np.array_equal(vc, before[1])
    # The host-side check of a prompt, before any run.
    with pytest.raises(ValueError, match="outside the vocabulary"):
        qwen3.check_tokens(CFG, [3, CFG.vocab])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        qwen3.check_tokens(CFG, [-1])
    qwen3.check_tokens(CFG, [0, CFG.vocab - 1])


def test_the_model_shape_is_checked():
    with pytest.raises(ValueError, match="do not group"):
        qwen3.Config(heads=6, kv_heads=4)
    with pytest.raises(ValueError, match="do not fit"):
        qwen3.prefill(CFG, CAPACITY + 1, CAPACITY)


def test_qwen3_8b_byte_counts():
    """The bandwidth floor's numerator: Qwen3-8B's weights (bf16) are
    8.19e9 parameters less the unread embedding rows."""
    cfg = qwen3.QWEN3_8B
    params = sum(int(np.prod(s)) for s in qwen3.weight_shapes(cfg).values())
    assert 8.1e9 < params < 8.3e9
    assert qwen3.weight_bytes(cfg, per_step=False) == 2 * params
    assert qwen3.weight_bytes(cfg) == 2 * (params - (cfg.vocab - 1) * 4096)
