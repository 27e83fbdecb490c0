#!/usr/bin/python3
"""Prepares the GPU correctness check (run on a machine without a GPU).

For every example and storage type (f32, f16, bf16) it writes, under
gpu-work/check/<example>-<dtype>/:
  program.mlir   the example with its f32 storage replaced by the type;
  bundle/        `tang-opt --tang-lower-cuda="fuse=1 bundle=..."` (PTX);
  input_<i>.npy  seeded random inputs, representable in the storage type,
                 saved as float32 (exactly);
  ref/output_<i>.npy  the float64 reference interpreter's outputs.
A program with symbolic sizes has one bundle and, per `// sizes:` line,
run<n>/ with that run's inputs and ref/, listed in runs.json with the
values of its index arguments (python/tang/sizes.py).

With --gradients, instead: for every example --tang-grad can differentiate,
gpu-work/check/<example>-grad-f32/ holds its gradient function alone
(`@main_grad` of `tang-opt --tang-grad`, renamed @main: inputs, then one
cotangent per result), so the same check runs the gradient programs through
the CUDA pipeline.

With --variant NAME=OPTIONS (and --filter SUBSTRING to take only the
examples whose name holds it), instead: cases <example>-<dtype>-NAME
compiled with OPTIONS added to --tang-lower-cuda (an experimental kernel
checked beside the default one), e.g.
  --variant lanes=split-softmax-mma=off --filter decode_attention

Then, on the GPU machine: `python3 bench/gpu_check.py` (see bench/README.md).
"""

import argparse

import json
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
from tang import sizes as tang_sizes  # noqa: E402

BIN = ROOT / "build" / "bin"
OUT = ROOT / "gpu-work" / "check"
DTYPES = ["f32", "f16", "bf16"]


def round_to(a, dtype):
    """Rounds float64 `a` to values exactly representable in `dtype`."""
    a = a.astype(np.float32)
    if dtype == "f16":
        return a.astype(np.float16).astype(np.float32)
    if dtype == "bf16":  # round to nearest even on the top 16 bits
        bits = a.view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return bits.astype(np.uint32).view(np.float32)
    return a


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}\n{r.stderr}")
    return r


def gradient_program(example):
    """The text of `example`'s gradient function alone, named @main, with
    the monoids it may use (the example's, the affine compositions of scan
    gradients). A program with symbolic sizes is differentiated at its last
    `// sizes:` line (--tang-specialize-sizes)."""
    sizes = tang_sizes.program_sizes(example.read_text())
    specialize = ([f"--tang-specialize-sizes=sizes={','.join(sizes[-1])}"]
                  if sizes else [])
    text = run([BIN / "tang-opt", example, *specialize,
                "--tang-grad"]).stdout
    start = text.index("  func.func @main_grad(")
    end = text.index("\n  }\n", start) + len("\n  }\n")
    monoids = re.findall(r"^  tang\.monoid @.*?\n  }\n", text, re.S | re.M)
    return ("module {\n" + "".join(monoids)
            + text[start:end].replace("@main_grad(", "@main(") + "}\n")


def add_special_values(example, values):
    """NaNs where a program's semantics define them: argmax takes a NaN over
    every number and the first of two NaNs (TangMonoids.cpp, NumPy's rule);
    the check compares the NaN pattern and the indices exactly."""
    if example.stem == "argmax" and values.ndim == 2:
        values = values.copy()
        values[1, 5] = np.nan                  # one NaN in the row
        values[2, 3] = values[2, 11] = np.nan  # two: the first wins
        values[3, 0] = np.nan                  # the first element
    return values


def prepare(example, dtype, rng, gradient=False, variant=None):
    """`variant`: (name, added --tang-lower-cuda options) or None."""
    case = OUT / f"{example.stem}-{'grad-' if gradient else ''}{dtype}"
    options = ""
    if variant:
        case = case.with_name(f"{case.name}-{variant[0]}")
        options = " " + variant[1]
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir(parents=True)
    text = gradient_program(example) if gradient else example.read_text()
    if dtype != "f32":
        # Scalars (`: f32`) and tensor element types (`tensor<4x8xf32>`).
        text = re.sub(r"(\bf32\b|(?<=[\d?]x)f32\b)", dtype, text)
        # Hexadecimal float constants are bit patterns of the type: -inf.
        text = text.replace("0xFF800000",
                            {"f16": "0xFC00", "bf16": "0xFF80"}[dtype])
    program = case / "program.mlir"
    program.write_text(text)
    run([BIN / "tang-opt", program,
         f"--tang-lower-cuda=fuse=1 bundle={case / 'bundle'}{options}", "-o",
         "/dev/null"])
    manifest = json.loads((case / "bundle" / "manifest.json").read_text())
    fn = manifest["functions"][0]
    if not tang_sizes.is_symbolic(fn):
        prepare_run(example, program, case, fn, [], rng, gradient)
        return case
    # One bundle, run at each `// sizes:` line of the program.
    runs = []
    for n, specs in enumerate(tang_sizes.program_sizes(text)):
        size_args, _ = tang_sizes.parse_specs(specs)
        prepare_run(example, program, case / f"run{n}", fn, specs, rng,
                    gradient)
        runs.append({"dir": f"run{n}", "sizes": size_args})
    if not runs:
        raise RuntimeError(f"{example.name} has symbolic sizes but names "
                           "none to run at (// sizes: lines)")
    (case / "runs.json").write_text(json.dumps(runs, indent=1))
    return case


def prepare_run(example, program, where, fn, specs, rng, gradient):
    """Inputs and references under `where` for one run of `fn` (at the
    tang-run --size values `specs`)."""
    where.mkdir(parents=True, exist_ok=True)
    size_args, dims = tang_sizes.parse_specs(specs)
    flags = [f for s in specs if "." not in s.split("=")[0]
             for f in ("--size", s)]
    inputs, args = [], []
    for a, arg in enumerate(fn["args"]):
        if arg["role"] != "input":
            continue
        shape = tuple(dims[(a, d)] if isinstance(x, list) else x
                      for d, x in enumerate(arg["shape"]))
        if arg["dtype"] in ("f32", "f16", "bf16", "f64"):
            values = round_to(rng.uniform(-1, 1, shape), arg["dtype"])
            if not gradient:
                values = add_special_values(example, values)
        else:
            values = rng.integers(-8, 9, shape).astype(np.int32)
        path = where / f"input_{len(inputs)}.npy"
        np.save(path, values)
        inputs.append(path)
        args.append(arg)
    cmd = [BIN / "tang-run", program, "--output-dir", where / "ref", *flags]
    for p in inputs:
        cmd += ["--input", p]
    run(cmd)
    write_sensitivity(where, program, inputs, args, rng, flags)


#: The relative rounding of each storage type (half an ulp).
UNIT_ROUNDOFF = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8,
                 "f64": 2.0 ** -53}


def write_sensitivity(case, program, inputs, args, rng, flags, trials=6):
    """ref/sensitivity_<k>.npy: the largest change of output k, over
    `trials` runs of the interpreter on inputs each moved by a random
    fraction of their storage type's rounding, under Monte Carlo arithmetic
    (`tang-run --precision=perturbed`: every rounding result moved by a
    random fraction of its unit roundoff). An element that cancels moves
    that much in any implementation -- including one that cancels exactly
    in float64 (a sum minus the same sum computed again, as attention's
    gradient subtracts rowsum(dO O) from dO V^T), which moving the inputs
    alone does not show; bench/gpu_check.py adds a multiple of it to the
    element's bound (bench/harness.py). Six trials: the estimate of an
    element is the largest of its samples, and with two, about one
    element in a hundred of an output dominated by such noise drew two
    small ones (measured on the varlen decode attention's gradient: a
    held-out run exceeded 8 x the two-sample estimate for 1%, none for
    six)."""
    refs = sorted((case / "ref").glob("output_*.npy"),
                  key=lambda r: int(r.stem.split("_")[1]))
    worst = [np.zeros(np.load(r).shape) for r in refs]
    tmp = case / "sensitivity-tmp"
    for t in range(trials):
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        cmd = [BIN / "tang-run", program, "--output-dir", tmp / "out",
               "--precision=perturbed", f"--perturb-seed={t + 1}", *flags]
        for i, (path, arg) in enumerate(zip(inputs, args)):
            values = np.load(path)
            if arg["dtype"] in UNIT_ROUNDOFF:
                u = UNIT_ROUNDOFF[arg["dtype"]]
                values = values.astype(np.float64) * (
                    1 + u * rng.uniform(-1, 1, values.shape))
            moved = tmp / f"input_{i}.npy"
            np.save(moved, values)
            cmd += ["--input", moved]
        run(cmd)
        for k, r in enumerate(refs):
            delta = np.abs(np.load(tmp / "out" / r.name).astype(np.float64)
                           - np.load(r).astype(np.float64))
            worst[k] = np.fmax(worst[k], np.where(np.isfinite(delta), delta,
                                                  0.0))
    shutil.rmtree(tmp, ignore_errors=True)
    for r, w in zip(refs, worst):
        k = r.stem.split("_")[1]
        np.save(case / "ref" / f"sensitivity_{k}.npy", w.astype(np.float32))


# Examples --tang-grad refuses: a reduction under a user monoid (the
# triangular recurrence; its scan form differentiates).
NOT_DIFFERENTIABLE = {"linear_recurrence"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gradients", action="store_true",
                    help="the examples' gradient functions instead")
    ap.add_argument("--variant", metavar="NAME=OPTIONS",
                    help="cases <example>-<dtype>-NAME compiled with OPTIONS "
                    "added to --tang-lower-cuda")
    ap.add_argument("--filter", default="",
                    help="only examples whose name holds this")
    args = ap.parse_args()
    variant = None
    if args.variant:
        name, sep, options = args.variant.partition("=")
        if not sep or not name or not options:
            ap.error("--variant takes NAME=OPTIONS")
        variant = (name, options)
    rng = np.random.default_rng(2026)
    examples = [e for e in sorted((ROOT / "examples").glob("*.mlir"))
                if args.filter in e.stem]
    jobs = ([(e, "f32") for e in examples if e.stem not in NOT_DIFFERENTIABLE]
            if args.gradients else
            [(e, d) for e in examples for d in DTYPES])
    failed = 0
    for example, dtype in jobs:
        try:
            case = prepare(example, dtype, rng, args.gradients, variant)
            print(f"[prepare] {case.name}")
        except RuntimeError as e:
            failed += 1
            print(f"[prepare] FAILED {example.stem}-{dtype}: {e}",
                  file=sys.stderr)
    print(f"[prepare] {len(jobs) - failed} cases in {OUT}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
