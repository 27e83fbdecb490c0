"""The differential tests' comparison (differential.compare) must be able
to fail: one wrong element, a NaN where the interpreter has a number, an
infinity of the wrong sign; and must accept NaN and infinities where the
interpreter has them."""

import numpy as np
import pytest

from differential import assert_same_bits, compare

PROGRAM = """\
func.func @main(%x: tensor<64x32xf32>) -> tensor<64xf32> {
  %s = tang.comprehension (%i) reduce (%k) [64, 32] monoid(add) : tensor<64xf32> {
    %v = tang.read %x[%i, %k] : tensor<64x32xf32>
    tang.yield %v : f32
  }
  return %s : tensor<64xf32>
}
"""
SPEC = {"dtype": "f32", "shape": [64]}


@pytest.fixture
def ref():
    return np.random.default_rng(7).standard_normal(64)


def test_rounded_output_passes(ref):
    compare("test", "rule", 0, SPEC, ref.astype(np.float32), ref, PROGRAM)


@pytest.mark.parametrize("bad", ["one wrong element", "nan", "inf sign"])
def test_wrong_elements_fail(ref, bad):
    out = ref.astype(np.float32)
    want = ref.copy()
    if bad == "one wrong element":
        out[17] += 1e-3 * np.abs(ref).mean()
    elif bad == "nan":
        out[3] = np.nan
    else:
        want[5], out[5] = np.inf, -np.inf
    with pytest.raises(AssertionError):
        compare("test", "rule", 0, SPEC, out, want, PROGRAM)


def test_nan_and_inf_where_the_interpreter_has_them(ref):
    want = ref.copy()
    want[2], want[9], want[11] = np.nan, np.inf, -np.inf
    out = want.astype(np.float32)
    compare("test", "rule", 0, SPEC, out, want, PROGRAM)


def test_same_bits_passes_identical_runs(ref):
    out = ref.astype(np.float32)
    out[3] = np.nan
    assert_same_bits("test", "rule", 0, out, out.copy())


def test_same_bits_fails_one_ulp(ref):
    out = ref.astype(np.float32)
    again = out.copy()
    again[17] = np.nextafter(again[17], np.float32(np.inf))
    with pytest.raises(AssertionError, match="1 of 64 elements differ"):
        assert_same_bits("test", "rule", 0, out, again)


def test_same_bits_fails_nan_payload(ref):
    out = ref.astype(np.float32)
    out[5] = np.nan
    again = out.copy()
    again.view(np.uint32)[5] ^= 1  # another quiet NaN
    assert np.isnan(again[5])
    with pytest.raises(AssertionError, match="not the same run to run"):
        assert_same_bits("test", "rule", 0, out, again)


def test_same_bits_fails_other_shape(ref):
    out = ref.astype(np.float32)
    with pytest.raises(AssertionError, match="one run and"):
        assert_same_bits("test", "rule", 0, out, out.reshape(8, 8))
