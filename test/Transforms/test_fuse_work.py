"""--tang-fuse's work bound: fused, every example (the GPT-2 block among
them, whose unbounded fusion nested reductions seven deep and ran for
minutes) executes at most max-work-factor (2) times the operations of the
comprehensions fused into it, and the fused program runs in the float64
interpreter in seconds with the unfused program's results."""

import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))
REPORT = re.compile(r"executes ([0-9.e+]+) operations fused \(([0-9.e+]+) "
                    r"unfused\)")


def run(args, timeout=120):
    return subprocess.run([str(a) for a in args], capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_fused_work_within_bound(example):
    if "tang.comprehension" not in example.read_text():
        pytest.skip("no comprehension to fuse (a scan alone)")
    r = run([TANG_BIN / "tang-opt", example, "--tang-fuse=report-work=1",
             "-o", os.devnull])
    assert r.returncode == 0, r.stderr
    counts = [(float(a), float(b)) for a, b in REPORT.findall(r.stderr)]
    assert counts, f"no work report:\n{r.stderr}"
    for executed, unfused in counts:
        assert executed <= 2.0 * unfused, r.stderr


@pytest.mark.parametrize("example", ["gpt2_block", "transformer_block",
                                     "alibi_attention"])
def test_fused_program_runs_and_agrees(example, tmp_path):
    program = ROOT / "examples" / f"{example}.mlir"
    fused = tmp_path / "fused.mlir"
    r = run([TANG_BIN / "tang-opt", program, "--tang-fuse",
             "--tang-online-softmax", "-o", fused])
    assert r.returncode == 0, r.stderr
    outs = {}
    for tag, path in (("unfused", program), ("fused", fused)):
        r = run([TANG_BIN / "tang-run", path, "--seed", "7", "--output-dir",
                 tmp_path / tag], timeout=60)
        assert r.returncode == 0, r.stderr
        outs[tag] = np.load(tmp_path / tag / "output_0.npy")
    ref = outs["unfused"]
    assert np.all(np.isfinite(ref)) and np.any(ref != 0)
    err = np.linalg.norm(outs["fused"] - ref) / np.linalg.norm(ref)
    assert err <= 1e-10, err


def test_work_bound_remarks_on_the_gpt2_block():
    r = run([TANG_BIN / "tang-opt", ROOT / "examples" / "gpt2_block.mlir",
             "--tang-fuse", "-o", os.devnull])
    assert r.returncode == 0, r.stderr
    assert "more than 2 x the" in r.stderr and "max-work-factor" in r.stderr
