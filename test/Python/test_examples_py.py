"""The examples written with the Python builder (examples_py.py) against
the examples themselves: the same seeded inputs (tang-run --dump-inputs of
the .mlir), both run by the float64 interpreter, every output equal to
float64 rounding (the two may order their operations differently).

Run:  TANG_BIN=<build>/bin /usr/bin/python3 -m pytest -q test/Python
"""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
os.environ.setdefault("TANG_BIN", str(TANG_BIN))

import tang  # noqa: E402
from examples_py import EXAMPLES  # noqa: E402


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TANG_CACHE_DIR", str(tmp_path / "cache"))


def outputs(directory):
    files = sorted(directory.glob("output_*.npy"),
                   key=lambda p: int(p.stem.split("_")[1]))
    return [np.load(p) for p in files]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_python_example_equals_the_mlir_one(name, tmp_path):
    fn, sizes = EXAMPLES[name]
    example = ROOT / "examples" / f"{name}.mlir"
    dump = tmp_path / "inputs"
    r = subprocess.run([str(TANG_BIN / "tang-run"), str(example),
                        f"--dump-inputs={dump}", f"--output-dir={tmp_path}",
                        *[f"--size={s}" for s in sizes]],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    want = outputs(tmp_path)
    xs = [np.load(p) for p in sorted(dump.glob("input_*.npy"),
                                     key=lambda p: int(p.stem.split("_")[1]))]
    size_values = [int(s.split("=")[1]) for s in sizes]
    got = tang.compile(fn, target="interpreter")(*xs, *size_values)
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, (k, g.shape, w.shape)
        if w.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w)
        else:
            assert np.array_equal(np.isnan(g), np.isnan(w))
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12,
                                       err_msg=f"output #{k}")


def test_every_example_is_written_in_python():
    names = {p.stem for p in (ROOT / "examples").glob("*.mlir")}
    assert names == set(EXAMPLES), sorted(names ^ set(EXAMPLES))


def test_the_python_main_job(tmp_path):
    """examples/python/block.py (scripts/setup.sh's main job from Python):
    the block and its derived gradient on the C backend against the
    interpreter; it exits 1 on a mismatch."""
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "python" /
                                            "block.py")],
                       capture_output=True, text=True,
                       env=dict(os.environ, TANG_CACHE_DIR=str(tmp_path)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "main job (Python): ok" in r.stdout
