#!/usr/bin/env python3
"""Prepares attention forward + backward for the GPU (bench/bench_attention_grad.py).

For every case, under gpu-work/attention-grad/<case>/:

  forward.mlir, forward/      the attention as a user writes it (scores, max,
                              sum, probabilities, product; bench/prepare_gemm.py's
                              attention_program), bf16, through
                              `--tang-lower-cuda="fuse=1 format=bin"`;
  backward.mlir, backward/    its gradient, `tang-opt --tang-grad` (@main_grad:
                              Q, K, V, dO -> dQ, dK, dV) renamed @main, through
                              the same pipeline;
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


def gradient_program(forward: Path) -> str:
    """`forward`'s gradient function alone, named @main."""
    text = run([TANG_OPT, forward, "--tang-grad"])
    start = text.index("  func.func @main_grad(")
    end = text.index("\n  }\n", start) + len("\n  }\n")
    return ("module {\n" + text[start:end].replace("@main_grad(", "@main(")
            + "}\n")


def compile_bundle(program: Path, bundle: Path):
    rel = lambda p: str(p.relative_to(ROOT))
    cmd = [TANG_OPT, rel(program),
           f"--tang-lower-cuda=fuse=1 format=bin bundle={rel(bundle)}",
           "-o", "/dev/null"]
    t0 = time.monotonic()
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"compile failed: {r.stderr.strip()[-2000:]}")
    launches = json.loads((bundle / "manifest.json").read_text())[
        "functions"][0]["launches"]
    return {"command": " ".join(map(str, cmd)),
            "seconds": round(time.monotonic() - t0, 2),
            "kernels": [(l["kernel"], l["grid"], l["block"], l["shared_bytes"])
                        for l in launches],
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
        bwd = case / "backward.mlir"
        meta = {"case": name, "params": dict(B=B, H=H, L=L, D=D,
                                             causal=causal),
                "flops_forward": (2 if causal else 4) * B * H * L * L * D,
                "interpreter_ref": False}
        meta["flops_backward"] = int(2.5 * meta["flops_forward"])
        try:
            bwd.write_text(gradient_program(fwd))
            meta["forward"] = compile_bundle(fwd, case / "forward")
            meta["backward"] = compile_bundle(bwd, case / "backward")
            meta["ok"] = True
        except RuntimeError as e:
            meta["ok"] = False
            meta["error"] = str(e)
            bad += 1
        if meta["ok"] and check:
            # Q, K, V, dO in [-1, 1) rounded to bf16; the interpreter's
            # gradients in float64 (tang-run computes in the program's
            # types: bf16 storage, f32 statistics).
            paths = []
            for i in range(4):
                a = bf16_round(rng.uniform(-1, 1, (B, H, L, D)))
                paths.append(case / f"input_{i}.npy")
                np.save(paths[-1], a)
            cmd = [TANG_RUN, bwd, "--output-dir", case / "ref"]
            for p in paths:
                cmd += ["--input", p]
            t0 = time.monotonic()
            run(cmd)
            meta["interpreter_ref"] = True
            meta["interpreter_seconds"] = round(time.monotonic() - t0, 1)
        (case / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        kernels = [k[0] for k in meta.get("backward", {}).get("kernels", [])]
        print(f"  {name:28s} {'ok' if meta['ok'] else 'FAIL'} backward "
              f"kernels {len(kernels)} interp-ref {meta['interpreter_ref']}",
              flush=True)
        if not meta["ok"]:
            print("    " + meta["error"][-800:])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
