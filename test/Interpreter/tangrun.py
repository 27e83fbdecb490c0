"""The interpreter tests' helper: runs a tang program, given as text, with
tang-run on NumPy arrays (saved as .npy inputs, in order) and returns the
finished process and the directory its outputs went to."""

import os
import pathlib
import subprocess

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))


def run_program(tmp_path, text, *arrays, sizes=()):
    """`sizes`: --size values (e.g. "arg2=7") for index arguments."""
    prog = tmp_path / "prog.mlir"
    prog.write_text(text)
    args = [str(TANG_BIN / "tang-run"), str(prog)]
    for s in sizes:
        args += ["--size", s]
    for i, a in enumerate(arrays):
        p = tmp_path / f"in{i}.npy"
        np.save(p, a)
        args += ["--input", str(p)]
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    r = subprocess.run(args + ["--output-dir", str(out)], capture_output=True,
                       text=True, timeout=120)
    return r, out
