"""Translation validation: for every example and every tang rewrite, the
reference interpreter's outputs before and after the rewrite agree within
float64 rounding on random, non-zero inputs. tang-opt verifies the IR after
each pass, so a rewrite that breaks the IR fails here too."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))
# Programs that once broke a rewrite (a review's reproducers): hoisted
# constants, mod views, near-softmax graphs that must not be rewritten.
ADVERSARIAL = sorted(
    (ROOT / "test" / "Transforms" / "Inputs" / "adversarial").glob("*.mlir"))

# Each pipeline, as tang-opt flags. The fusion policies span "fuse
# everything" to "fuse little" so that every shape of substitution runs.
PIPELINES = {
    "canonicalize": ["--canonicalize"],
    "fuse": ["--tang-fuse"],
    "fuse-narrow": ["--tang-fuse=max-broadcast=1"],
    "fuse-all": ["--tang-fuse=max-recompute=1000 max-broadcast=1000000"],
    "online-softmax": ["--tang-online-softmax"],
    "fuse+online-softmax": ["--tang-fuse", "--tang-online-softmax"],
    "triangular-scan": ["--tang-triangular-scan"],
    "fuse+triangular-scan": ["--tang-fuse", "--tang-online-softmax",
                             "--tang-triangular-scan"],
    "fuse+online-softmax+canonicalize": ["--tang-fuse", "--tang-online-softmax",
                                         "--canonicalize", "--cse"],
    # A schedule never changes the math.
    "fuse+online-softmax+schedule": ["--tang-fuse", "--tang-online-softmax",
                                     "--tang-schedule"],
}

# The interpreter evaluates in float64 and the rewrites preserve the math;
# online softmax reassociates the normalisation, so allow a few ulps times
# the reduction length.
RTOL = 1e-12


def run_outputs(program_text, seed, tmp_path, tag, sizes=()):
    """tang-run's outputs; `sizes`: its --size values (a program with
    symbolic sizes runs at the first of its `// sizes:` lines)."""
    out = tmp_path / tag
    flags = [f for s in sizes for f in ("--size", s)]
    r = subprocess.run([str(TANG_BIN / "tang-run"), "-", "--seed", str(seed),
                        *flags, "--output-dir", str(out)],
                       input=program_text, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    outs = []
    i = 0
    while (out / f"output_{i}.npy").exists():
        outs.append(np.load(out / f"output_{i}.npy"))
        i += 1
    assert outs, "no outputs"
    return outs


def rewrite(example, flags):
    r = subprocess.run([str(TANG_BIN / "tang-opt"), str(example), *flags],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


_BEFORE = {}


def sizes_of(example):
    """The --size values of the first `// sizes:` line of `example`."""
    for line in example.read_text().splitlines():
        if line.startswith("// sizes:"):
            return line.split(":", 1)[1].split()
    return []


def outputs_before(example, tmp_path):
    """The unrewritten program's outputs, computed once per example."""
    if example not in _BEFORE:
        _BEFORE[example] = run_outputs(example.read_text(), SEED, tmp_path,
                                       "before", sizes_of(example))
    return _BEFORE[example]


SEED = 11


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
@pytest.mark.parametrize("example", EXAMPLES + ADVERSARIAL,
                         ids=lambda p: p.stem)
def test_rewrite_preserves_semantics(example, pipeline, tmp_path):
    before = outputs_before(example, tmp_path)
    after = run_outputs(rewrite(example, PIPELINES[pipeline]), SEED, tmp_path,
                        "after", sizes_of(example))
    assert len(before) == len(after)
    for b, a in zip(before, after):
        assert b.shape == a.shape and b.dtype == a.dtype
        assert not np.isnan(a).any() and not np.isnan(b).any()
        assert np.abs(b).max() > 0, "all-zero reference proves nothing"
        err = np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b)
        assert err <= RTOL, f"relative error {err:.3e}"


def test_every_example_is_covered():
    assert len(EXAMPLES) >= 13
