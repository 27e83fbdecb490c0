#!/usr/bin/env python3
"""Prepares attention forward + backward for the GPU (bench/bench_attention_grad.py).

For every case, under gpu-work/attention-grad/<case>/:

  forward.mlir                the attention as a user writes it (scores, max,
                              sum, probabilities, product; bench/prepare_gemm.py's
                              attention_program), bf16;
  train.mlir, train/          `tang-opt --tang-grad=split=1` of it: @main_fwd
                              (Q, K, V -> O and the residuals: the softmax's
                              running max and sum, f32) and @main_bwd (Q, K, V,
                              O, residuals, dO -> dQ, dK, dV), through
                              `--tang-lower-cuda="fuse=1 format=bin"`;
  meta.json                   shapes, FLOPs (forward 4 B H L^2 D, backward
                              2.5x that, half with a causal mask), kernels;
  input_*.npy, ref/           small cases: inputs and the float64
                              interpreter's gradients (tang-run).

Usage: /usr/bin/python3 bench/prepare_attention_grad.py [--only CASE ...]
"""

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from prepare_gemm import attention_program, bf16_round  # noqa: E402

WORK = ROOT / "gpu-work" / "attention-grad"
TANG_OPT = ROOT / "build" / "bin" / "tang-opt"
TANG_RUN = ROOT / "build" / "bin" / "tang-run"

#: (case, B, H, L, D, causal, interpreter-checked)
CASES = [
    ("grad_1x2x200x64_causal", 1, 2, 200, 64, True, True),
    ("grad_1x2x136x128", 1, 2, 136, 128, False, True),
] + [
    (f"grad_L{L}_d{D}{'_causal' if c else ''}", max(1, 16384 // L) * 2,
     2048 // D, L, D, c, False)
    for D in (64, 128) for L in (512, 2048, 8192) for c in (False, True)
]


def run(cmd, timeout=1800):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       timeout=timeout, cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed:\n"
                           f"{r.stderr.strip()[-2000:]}")
    return r.stdout


def training_program(forward: Path, options: str = "split=1") -> str:
    """`forward`'s split gradient (`--tang-grad=<options>`, which include
    split=1): @main_fwd and @main_bwd alone."""
    text = run([TANG_OPT, forward, f"--tang-grad={options}"])
    funcs = []
    for name in ("@main_fwd(", "@main_bwd("):
        start = text.index(f"  func.func {name}")
        end = text.index("\n  }\n", start) + len("\n  }\n")
        funcs.append(text[start:end])
    return "module {\n" + "".join(funcs) + "}\n"


def compile_bundle(program: Path, bundle: Path, options="fuse=1"):
    rel = lambda p: str(p.relative_to(ROOT))
    cmd = [TANG_OPT, rel(program),
           f"--tang-lower-cuda={options} format=bin bundle={rel(bundle)}",
           "-o", "/dev/null"]
    t0 = time.monotonic()
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"compile failed: {r.stderr.strip()[-2000:]}")
    functions = json.loads((bundle / "manifest.json").read_text())[
        "functions"]
    return {"command": " ".join(map(str, cmd)),
            "seconds": round(time.monotonic() - t0, 2),
            "kernels": {f["name"]: [(l["kernel"], l["grid"], l["block"],
                                     l["shared_bytes"])
                                    for l in f["launches"]]
                        for f in functions},
            "remarks": [l for l in r.stderr.splitlines() if "remark" in l]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", metavar="CASE")
    args = ap.parse_args()
    rng = np.random.default_rng(2026)
    bad = 0
    for name, B, H, L, D, causal, check in CASES:
        if args.only and name not in args.only:
            continue
        case = WORK / name
        shutil.rmtree(case, ignore_errors=True)
        case.mkdir(parents=True)
        fwd = case / "forward.mlir"
        fwd.write_text(attention_program(B, H, L, D, causal))
        train = case / "train.mlir"
        meta = {"case": name, "params": dict(B=B, H=H, L=L, D=D,
                                             causal=causal),
                "flops_forward": (2 if causal else 4) * B * H * L * L * D,
                "interpreter_ref": False}
        meta["flops_backward"] = int(2.5 * meta["flops_forward"])
        try:
            train.write_text(training_program(fwd))
            meta["train"] = compile_bundle(train, case / "train")
            meta["ok"] = True
        except RuntimeError as e:
            meta["ok"] = False
            meta["error"] = str(e)
            bad += 1
        if meta["ok"] and check:
            # Q, K, V, dO in [-1, 1) rounded to bf16; the interpreter's
            # forward (O, residuals) and gradients (tang-run computes in the
            # program's types: bf16 storage, f32 statistics).
            paths = []
            for i in range(4):
                a = bf16_round(rng.uniform(-1, 1, (B, H, L, D)))
                paths.append(case / f"input_{i}.npy")
                np.save(paths[-1], a)
            t0 = time.monotonic()
            cmd = [TANG_RUN, train, "--entry=main_fwd", "--output-dir",
                   case / "ref_fwd"]
            for p in paths[:3]:
                cmd += ["--input", p]
            run(cmd)
            saved = sorted((case / "ref_fwd").glob("output_*.npy"),
                           key=lambda p: int(p.stem.split("_")[1]))
            cmd = [TANG_RUN, train, "--entry=main_bwd", "--output-dir",
                   case / "ref"]
            for p in paths[:3] + saved + paths[3:]:
                cmd += ["--input", p]
            run(cmd)
            meta["interpreter_ref"] = True
            meta["interpreter_seconds"] = round(time.monotonic() - t0, 1)
        (case / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        kernels = meta.get("train", {}).get("kernels", {})
        print(f"  {name:28s} {'ok' if meta['ok'] else 'FAIL'} kernels "
              f"{ {f: len(k) for f, k in kernels.items()} } interp-ref "
              f"{meta['interpreter_ref']}", flush=True)
        if not meta["ok"]:
            print("    " + meta["error"][-800:])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
