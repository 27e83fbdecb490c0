#!/usr/bin/python3
"""Prepares the portable-backend benchmark (runs here: no GPU).

The memory-bound programs of bench/prepare_bench.py (RMSNorm, row softmax
and LayerNorm at 32768x4096, GEMV 4096x4096) in f16 storage (SPIR-V has no
bf16), and a 4096^3 GEMM of f16 operands with an f32 result, compiled twice
from the same program: for Vulkan (`--tang-lower-spirv`, the portable row
kernels; the GEMM with `matrix-units=1`, on cooperative matrices) and for
CUDA (`--tang-lower-cuda`), so that bench/bench_portable.py times both on
the same GPU. Under gpu-work/portable/<case>/:

  program.mlir   the program (prepare_bench's template, f16 storage);
  spirv/         the Vulkan bundle (tang-vk-run);
  spirv_<v>/     the GEMM's other Vulkan bundles: the same program with a
                 schedule naming the subgroup-matrix kernel's register
                 blocking (<v> = 1x1, 2x2, 4x2 tiles of 16 a subgroup);
                 spirv/ is the heuristic's; spirv_simt/ the register-tiled
                 SIMT kernel (no matrix units), spirv_simt_global/ the same
                 without workgroup staging;
  cuda/          the CUDA bundle (python/tang's tang.cuda);
  meta.json      the case: kind, shapes, the least bytes moved (flops for
                 the GEMM), the check of a small instance.

Each template is first instantiated small, lowered for Vulkan and run on
this machine's Vulkan driver (lavapipe) by tang-vk-run when it is built
(build-vk/), against tang-run (the float64 interpreter): a wrong kernel
shows up here, not on the GPU.

Then, on the GPU machine: `python3 bench/bench_portable.py`.

Usage: /usr/bin/python3 bench/prepare_portable.py [--only CASE ...]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import prepare_bench as pb  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TANG_OPT = ROOT / "build" / "bin" / "tang-opt"
TANG_RUN = ROOT / "build" / "bin" / "tang-run"
VK_RUN = Path(os.environ.get("TANG_VK_RUN", ROOT / "build-vk" / "tang-vk-run"))
WORK = ROOT / "gpu-work" / "portable"
F16_BYTES = 2

#: case: (template, its shape arguments, the small instance's, the input
#: shapes as functions of the shape arguments).
CASES = {
    "rmsnorm_32768x4096": (pb.rmsnorm_program, (32768, 4096), (8, 64),
                           lambda r, c: [(r, c), (c,)]),
    "softmax_32768x4096": (pb.softmax_program, (32768, 4096), (8, 64),
                           lambda r, c: [(r, c)]),
    "layernorm_32768x4096": (pb.layernorm_program, (32768, 4096), (8, 64),
                             lambda r, c: [(r, c), (c,), (c,)]),
    "gemv_4096x4096": (pb.gemv_program, (4096, 4096), (16, 64),
                       lambda o, i: [(o, i), (i,)]),
}


#: The SIMT kernel's schedule with its operands in global memory (no
#: workgroup staging), for comparison with the default's.
SIMT_GLOBAL = ("#tang.schedule<tile = [64, 64, 32], mapping = [block_y, "
               "block_x, serial], threads = [16, 16, 1], vector = 1, stages "
               "= 1, storage = f32, accumulate = f32, memory = [global]>")


def gemm_program(m, n, k, block=None, schedule=None):
    """C[m, n] = sum_k A[m, k] B[k, n], f16 operands, f32 sums and result;
    with `block` (rm, rn), a schedule naming the subgroup-matrix kernel
    with rm x rn 16 x 16 tiles a subgroup; with `schedule`, that one."""
    attrs = f" attributes {{schedule = {schedule}}}" if schedule else ""
    if block:
        attrs = (" attributes {schedule = #tang.schedule<tile = "
                 f"[{16 * block[0]}, {16 * block[1]}, 16], mapping = "
                 "[block_y, block_x, serial], threads = [1, 32, 1], vector = "
                 "1, stages = 1, storage = f32, accumulate = f32, memory = "
                 "[global], kernel = subgroup_mma>}")
    return f"""\
func.func @main(%A: tensor<{m}x{k}xf16>, %B: tensor<{k}x{n}xf16>) -> tensor<{m}x{n}xf32> {{
  %C = tang.comprehension (%i, %j) reduce (%k) [{m}, {n}, {k}] monoid(add){attrs} : tensor<{m}x{n}xf32> {{
    %a = tang.read %A[%i, %k] : tensor<{m}x{k}xf16>
    %b = tang.read %B[%k, %j] : tensor<{k}x{n}xf16>
    %x = arith.extf %a : f16 to f32
    %y = arith.extf %b : f16 to f32
    %p = arith.mulf %x, %y : f32
    tang.yield %p : f32
  }}
  return %C : tensor<{m}x{n}xf32>
}}
"""


GEMM_SHAPE = (4096, 4096, 4096)
GEMM_BLOCKS = [(1, 1), (2, 2), (4, 2)]


def program(template, args):
    """The template's program with f16 storage (SPIR-V has no bf16)."""
    return template(*args).replace("bf16", "f16")


def lower(src: Path, pipeline: str, bundle: Path, options: str = ""):
    """`tang-opt src --<pipeline>="fuse=1 bundle=<bundle> <options>"`; None
    or the diagnostics."""
    r = subprocess.run([str(TANG_OPT), str(src),
                        f"--{pipeline}=fuse=1 bundle={bundle} {options}"
                        .strip(), "-o", os.devnull],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else r.stderr[-2000:]


def lavapipe_env():
    """Mesa 25's lavapipe when installed (no loop limit), as the tests."""
    icd = ROOT / ".deps" / "mesa25" / "lvp_icd.json"
    if not icd.is_file():
        return None
    env = dict(os.environ, VK_DRIVER_FILES=str(icd), VK_ICD_FILENAMES=str(icd))
    libs = (icd.parent / "library_path").read_text().strip()
    env["LD_LIBRARY_PATH"] = ":".join(
        p for p in (libs, env.get("LD_LIBRARY_PATH")) if p)
    return env


def check_small(template, args, shapes):
    """The small instance on this machine's Vulkan driver against tang-run:
    a note (what ran and the largest relative error), or why it did not."""
    if not VK_RUN.is_file():
        return {"ran": False, "why": f"{VK_RUN} not built"}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = tmp / "small.mlir"
        src.write_text(program(template, args))
        err = lower(src, "tang-lower-spirv", tmp / "bundle")
        if err:
            return {"ran": True, "ok": False, "why": err}
        rng = np.random.default_rng(7)
        inputs = []
        for k, shape in enumerate(shapes(*args)):
            p = tmp / f"in{k}.npy"
            np.save(p, (rng.standard_normal(shape) * 0.5 + 0.25)
                    .astype(np.float16))
            inputs.append(str(p))
        ref = subprocess.run([str(TANG_RUN), str(src), "--output-dir",
                              str(tmp / "ref"),
                              *[f"--input={p}" for p in inputs]],
                             capture_output=True, text=True)
        got = subprocess.run([str(VK_RUN), str(tmp / "bundle"), "main",
                              *inputs, "--out", str(tmp / "got")],
                             capture_output=True, text=True,
                             env=lavapipe_env())
        if ref.returncode or got.returncode:
            return {"ran": True, "ok": False,
                    "why": (ref.stderr + got.stderr)[-2000:]}
        a = np.load(tmp / "got" / "output_0.npy").astype(np.float64)
        b = np.load(tmp / "ref" / "output_0.npy").astype(np.float64)
        rel = float(np.linalg.norm(a - b) / np.linalg.norm(b))
        # f16 storage of the output: a few units of its roundoff.
        ok = bool(np.isfinite(a).all()) and rel <= 4 * 2.0 ** -11
        return {"ran": True, "ok": ok, "rel_err": rel}


def check_small_gemm(shape=(128, 96, 64)):
    """The SIMT variants of the GEMM (staged and global) at a small shape
    on this machine's Vulkan driver against tang-run (lavapipe has no
    cooperative matrices): a note, as check_small's."""
    if not VK_RUN.is_file():
        return {"ran": False, "why": f"{VK_RUN} not built"}
    m, n, k = shape
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rng = np.random.default_rng(7)
        inputs = []
        for name, s in (("a", (m, k)), ("b", (k, n))):
            p = tmp / f"{name}.npy"
            np.save(p, (rng.standard_normal(s) * 0.5 + 0.25)
                    .astype(np.float16))
            inputs.append(str(p))
        for v, schedule in (("simt", None), ("simt_global", SIMT_GLOBAL)):
            src = tmp / f"{v}.mlir"
            src.write_text(gemm_program(m, n, k, schedule=schedule))
            err = lower(src, "tang-lower-spirv", tmp / v)
            if err:
                return {"ran": True, "ok": False, "why": f"{v}: {err}"}
            ref = subprocess.run([str(TANG_RUN), str(src), "--output-dir",
                                  str(tmp / "ref"),
                                  *[f"--input={p}" for p in inputs]],
                                 capture_output=True, text=True)
            got = subprocess.run([str(VK_RUN), str(tmp / v), "main",
                                  *inputs, "--out", str(tmp / f"got_{v}")],
                                 capture_output=True, text=True,
                                 env=lavapipe_env())
            if ref.returncode or got.returncode:
                return {"ran": True, "ok": False,
                        "why": f"{v}: " + (ref.stderr + got.stderr)[-2000:]}
            a = np.load(tmp / f"got_{v}" / "output_0.npy")
            b = np.load(tmp / "ref" / "output_0.npy")
            rel = float(np.linalg.norm(a - b) / np.linalg.norm(b))
            # A NaN never passes (max would drop it).
            worst = max(worst, rel if np.isfinite(rel) else float("inf"))
    # f32 sums of k products of f16 values (exact in f32).
    return {"ran": True, "ok": worst <= 1e-5, "rel_err": worst,
            "shape": list(shape), "variants": ["spirv_simt",
                                               "spirv_simt_global"]}


def prepare_gemm():
    """The GEMM case: its program, the heuristic's Vulkan bundle and one per
    GEMM_BLOCKS, the CUDA bundle; each SPIR-V module must take the
    cooperative matrices. Lavapipe has none, so the small check is the C
    backend's emulation of the same kernels (tests do it on every build):
    here the structure only. The number of failures."""
    m, n, k = GEMM_SHAPE
    name = f"gemm_{m}x{n}x{k}"
    d = WORK / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    t0 = time.monotonic()
    (d / "program.mlir").write_text(gemm_program(m, n, k))
    meta = {"case": name, "kind": "gemm", "shape": [m, n, k], "dtype": "f16",
            "result_dtype": "f32", "inputs": [[m, k], [k, n]],
            "flops": 2 * m * n * k,
            "bytes": F16_BYTES * (m * k + k * n) + 4 * m * n,
            # Lavapipe has no cooperative matrices (the C backend's
            # emulation of that kernel is tested instead): the SIMT ones.
            "small_check": check_small_gemm(),
            "variants": {"spirv": "heuristic"}}
    bad = 0
    err = lower(d / "program.mlir", "tang-lower-spirv", d / "spirv",
                "matrix-units=1")
    meta["spirv_error"] = err
    for rm, rn in GEMM_BLOCKS:
        v = f"spirv_{rm}x{rn}"
        src = d / f"program_{rm}x{rn}.mlir"
        src.write_text(gemm_program(m, n, k, (rm, rn)))
        e = lower(src, "tang-lower-spirv", d / v, "matrix-units=1")
        if e:
            meta["spirv_error"] = (meta["spirv_error"] or "") + f"{v}: {e}"
        meta["variants"][v] = f"{rm}x{rn} tiles of 16 a subgroup"
    # Without matrix units: the register-tiled SIMT kernel (TiledKernel.cpp).
    e = lower(d / "program.mlir", "tang-lower-spirv", d / "spirv_simt")
    if e:
        meta["spirv_error"] = (meta["spirv_error"] or "") + f"spirv_simt: {e}"
    meta["variants"]["spirv_simt"] = ("no matrix units: 4 x 4 points a "
                                      "thread, 16 x 16 threads, operands "
                                      "staged in workgroup memory")
    src = d / "program_simt_global.mlir"
    src.write_text(gemm_program(m, n, k, schedule=SIMT_GLOBAL))
    e = lower(src, "tang-lower-spirv", d / "spirv_simt_global")
    if e:
        meta["spirv_error"] = ((meta["spirv_error"] or "") +
                               f"spirv_simt_global: {e}")
    meta["variants"]["spirv_simt_global"] = ("the same, operands from "
                                             "global memory")
    for v in meta["variants"]:
        if (d / v / "manifest.json").is_file():
            grid = json.loads((d / v / "manifest.json").read_text())[
                "functions"][0]["launches"][0]["grid"]
            meta["variants"][v] += f", grid {grid}"
    meta["cuda_error"] = lower(d / "program.mlir", "tang-lower-cuda",
                               d / "cuda")
    bad += (meta["spirv_error"] is not None) + (meta["cuda_error"] is not None)
    bad += meta["small_check"].get("ok") is False
    meta["prepare_s"] = round(time.monotonic() - t0, 1)
    meta["git"] = harness.record_git()
    (d / "meta.json").write_text(json.dumps(meta, indent=1))
    print(f"{name:24s} small check {meta['small_check']} "
          f"variants {meta['variants']} "
          f"spirv {'ok' if not meta['spirv_error'] else 'FAILED'} "
          f"cuda {'ok' if not meta['cuda_error'] else 'FAILED'}", flush=True)
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", choices=list(CASES) + ["gemm"])
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    bad = 0
    for name, (template, shape, small, shapes) in CASES.items():
        if args.only and name not in args.only:
            continue
        d = WORK / name
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        t0 = time.monotonic()
        (d / "program.mlir").write_text(program(template, shape))
        meta = {"case": name, "kind": name.split("_")[0], "shape": shape,
                "dtype": "f16", "inputs": shapes(*shape),
                "small_check": check_small(template, small, shapes)}
        out_elems = (shape[0] if meta["kind"] == "gemv"
                     else shape[0] * shape[1])
        meta["bytes"] = F16_BYTES * (
            sum(int(np.prod(s)) for s in meta["inputs"]) + out_elems)
        for fmt, pipeline in (("spirv", "tang-lower-spirv"),
                              ("cuda", "tang-lower-cuda")):
            err = lower(d / "program.mlir", pipeline, d / fmt)
            meta[f"{fmt}_error"] = err
            bad += err is not None
        bad += meta["small_check"].get("ok") is False
        meta["prepare_s"] = round(time.monotonic() - t0, 1)
        meta["git"] = harness.record_git()
        (d / "meta.json").write_text(json.dumps(meta, indent=1))
        print(f"{name:24s} small check {meta['small_check']} "
              f"spirv {'ok' if not meta['spirv_error'] else 'FAILED'} "
              f"cuda {'ok' if not meta['cuda_error'] else 'FAILED'}",
              flush=True)
    if not args.only or "gemm" in args.only:
        bad += prepare_gemm()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
