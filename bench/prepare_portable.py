#!/usr/bin/python3
"""Prepares the portable-backend benchmark (runs here: no GPU).

The memory-bound programs of bench/prepare_bench.py (RMSNorm, row softmax
and LayerNorm at 32768x4096, GEMV 4096x4096) in f16 storage (SPIR-V has no
bf16), a 4096^3 GEMM of f16 operands with an f32 result, and causal
attention [1, 16, 2048, 128] in f16 (prepare_gemm's chain, fused: the SIMT
flash kernel on Vulkan, the tensor-core one on CUDA) and its forward +
backward (`--tang-grad=split=1`: SIMT score kernels for dQ, dK, dV on
Vulkan), compiled twice
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
  glsl/, opencl/, wgsl/
                 the memory-bound and attention programs for the other
                 portable backends (tang-vk-run, tang-ocl-run,
                 tang-wgpu-run), which bench_portable times where the GPU
                 machine has their hosts;
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
import prepare_attention_grad as pag  # noqa: E402
import prepare_gemm as pg  # noqa: E402

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


def lower_variants(d, variants, meta):
    """Each of `variants` ({name: (program text, lowering options, what it
    is)}) written to d/program_<name>.mlir and lowered for Vulkan into
    d/<name>: meta["variants"][name] says what it is and its launches,
    meta["spirv_error"] collects the failures (None without)."""
    errors = []
    for v, (text, options, what) in variants.items():
        src = d / f"program_{v}.mlir"
        src.write_text(text)
        e = lower(src, "tang-lower-spirv", d / v, options)
        if e:
            errors.append(f"{v}: {e}")
            continue
        launch = json.loads((d / v / "manifest.json").read_text())[
            "functions"][0]["launches"]
        meta["variants"][v] = f"{what}: " + ", ".join(
            f"block {x['block']} grid {x['grid']}" for x in launch)
    meta["spirv_error"] = "\n".join(errors) or None


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


#: Attention [B, H, L, D], causal (prepare_gemm.attention_program).
ATTENTION_SHAPE = (1, 16, 2048, 128)


def attention_program(B, H, L, D):
    """Causal attention in f16 storage: the bf16 chain with its -inf mask
    constant rewritten (bf16 0xFF80 is an f16 NaN)."""
    return pg.attention_program(B, H, L, D, causal=True).replace(
        "0xFF80 : bf16", "0xFC00 : bf16").replace("bf16", "f16")


def lower(src: Path, pipeline: str, bundle: Path, options: str = ""):
    """`tang-opt src --<pipeline>="fuse=1 bundle=<bundle> <options>"`; None
    or the diagnostics."""
    r = subprocess.run([str(TANG_OPT), str(src),
                        f"--{pipeline}=fuse=1 bundle={bundle} {options}"
                        .strip(), "-o", os.devnull],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else r.stderr[-2000:]


#: The other portable backends' bundles (bench_portable times each where the
#: GPU machine has its host): format -> lowering pipeline. Their kernels
#: are the Vulkan bundle's kernel form printed as GLSL (compiled by
#: glslang, run by tang-vk-run), OpenCL C and WGSL (the differential tests
#: check each on lavapipe, PoCL and Dawn on every build).
OTHER_HOSTS = {"glsl": "tang-lower-glsl", "opencl": "tang-lower-opencl",
               "wgsl": "tang-lower-wgsl"}


def lower_other_hosts(d, src, meta):
    """`src` lowered into d/glsl, d/opencl and d/wgsl; meta["<fmt>_error"]
    is None or the diagnostics. The number of failures."""
    bad = 0
    for fmt, pipeline in OTHER_HOSTS.items():
        meta[f"{fmt}_error"] = lower(src, pipeline, d / fmt)
        bad += meta[f"{fmt}_error"] is not None
    return bad


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


def small_inputs(tmp, shapes):
    """Seeded f16 inputs of `shapes` (never zero-centred) as .npy paths."""
    rng = np.random.default_rng(7)
    paths = []
    for k, shape in enumerate(shapes):
        p = tmp / f"in{k}.npy"
        np.save(p, (rng.standard_normal(shape) * 0.5 + 0.25)
                .astype(np.float16))
        paths.append(str(p))
    return paths


def run_against_interpreter(src, bundle, inputs, tmp):
    """Output #0 of `bundle` on this machine's Vulkan driver and of `src`
    under tang-run (float64): their relative error (inf when either is not
    finite), or the diagnostics of a run that failed."""
    ref_dir, got_dir = tmp / f"ref_{bundle.name}", tmp / f"got_{bundle.name}"
    ref = subprocess.run([str(TANG_RUN), str(src), "--output-dir",
                          str(ref_dir), *[f"--input={p}" for p in inputs]],
                         capture_output=True, text=True)
    got = subprocess.run([str(VK_RUN), str(bundle), "main", *inputs,
                          "--out", str(got_dir)],
                         capture_output=True, text=True, env=lavapipe_env())
    if ref.returncode or got.returncode:
        return (ref.stderr + got.stderr)[-2000:]
    a = np.load(got_dir / "output_0.npy").astype(np.float64)
    b = np.load(ref_dir / "output_0.npy").astype(np.float64)
    rel = float(np.linalg.norm(a - b) / np.linalg.norm(b))
    return rel if np.isfinite(a).all() and np.isfinite(rel) else float("inf")


def check_small(programs, shapes, bound):
    """Each of `programs` ({bundle name: (program text, lowering options)})
    on this machine's Vulkan driver against tang-run on seeded inputs of
    `shapes`: a note (what ran, the largest relative error, whether it is
    within `bound`), or why it did not run."""
    if not VK_RUN.is_file():
        return {"ran": False, "why": f"{VK_RUN} not built"}
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        inputs = small_inputs(tmp, shapes)
        for name, (text, options) in programs.items():
            src = tmp / f"{name}.mlir"
            src.write_text(text)
            err = lower(src, "tang-lower-spirv", tmp / name, options)
            if not err:
                err = run_against_interpreter(src, tmp / name, inputs, tmp)
            if isinstance(err, str):
                return {"ran": True, "ok": False, "why": f"{name}: {err}"}
            worst = max(worst, err)
    return {"ran": True, "ok": worst <= bound, "rel_err": worst,
            "programs": sorted(programs)}


def finish(d, meta, t0, line):
    """Records the case's time and commit in its meta.json and prints
    `line` with the small check and the compile outcomes."""
    meta["prepare_s"] = round(time.monotonic() - t0, 1)
    meta["git"] = harness.record_git()
    (d / "meta.json").write_text(json.dumps(meta, indent=1))
    outcomes = " ".join(
        f"{fmt} {'ok' if not meta[f'{fmt}_error'] else 'FAILED'}"
        for fmt in ("spirv", "cuda", *OTHER_HOSTS) if f"{fmt}_error" in meta)
    print(f"{meta['case']:24s} small check {meta['small_check']} {line}"
          f"{outcomes}", flush=True)


def prepare_gemm():
    """The GEMM case: its program and CUDA bundle, and its Vulkan variants:
    cooperative matrices (`matrix-units=1`) with the heuristic's blocking
    and each of GEMM_BLOCKS, the SIMT kernel staged and from global
    memory. Lavapipe has no cooperative matrices (the C backend's emulation
    of that kernel is tested on every build): the small check runs the
    SIMT variants. The number of failures."""
    m, n, k = GEMM_SHAPE
    name = f"gemm_{m}x{n}x{k}"
    d = WORK / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    t0 = time.monotonic()
    (d / "program.mlir").write_text(gemm_program(m, n, k))
    sm, sn, sk = 128, 96, 64
    meta = {"case": name, "kind": "gemm", "shape": [m, n, k], "dtype": "f16",
            "result_dtype": "f32", "inputs": [[m, k], [k, n]],
            "flops": 2 * m * n * k,
            "bytes": F16_BYTES * (m * k + k * n) + 4 * m * n,
            # f32 sums of products exact in f32.
            "small_check": check_small(
                {"spirv_simt": (gemm_program(sm, sn, sk), ""),
                 "spirv_simt_global": (gemm_program(
                     sm, sn, sk, schedule=SIMT_GLOBAL), "")},
                [(sm, sk), (sk, sn)], 1e-5),
            "variants": {}}
    # variant: (program text, lowering options, what it is)
    variants = {"spirv": (gemm_program(m, n, k), "matrix-units=1",
                          "heuristic")}
    for rm, rn in GEMM_BLOCKS:
        variants[f"spirv_{rm}x{rn}"] = (gemm_program(m, n, k, (rm, rn)),
                                        "matrix-units=1",
                                        f"{rm}x{rn} tiles of 16 a subgroup")
    variants["spirv_simt"] = (gemm_program(m, n, k), "",
                              "no matrix units: 4 x 4 points a thread, "
                              "16 x 16 threads, operands staged in "
                              "workgroup memory")
    variants["spirv_simt_global"] = (
        gemm_program(m, n, k, schedule=SIMT_GLOBAL), "",
        "the same, operands from global memory")
    lower_variants(d, variants, meta)
    meta["cuda_error"] = lower(d / "program.mlir", "tang-lower-cuda",
                               d / "cuda")
    finish(d, meta, t0, f"variants {meta['variants']} ")
    return ((meta["spirv_error"] is not None) +
            (meta["cuda_error"] is not None) +
            (meta["small_check"].get("ok") is False))


#: The attention case's Vulkan variants besides the default tiles (32 rows,
#: 64 keys, head steps of 8): (rows, keys, head step) a block. The former
#: default, 32 x 32 with head steps of 16, reads the workgroup memory 9
#: times per 8 products in the score phase (the default: 10 per 16).
ATTENTION_TILES = {"spirv_32x32": (32, 32, 16)}


def scheduled_attention(text, rows, keys, head_step):
    """`text` fused (--tang-fuse --tang-online-softmax) with schedules
    naming the SIMT flash kernel's tiles: `rows` x `keys` a block of 128
    threads, the dot product in steps of `head_step`."""
    r = subprocess.run([str(TANG_OPT), "-", "--tang-fuse",
                        "--tang-online-softmax"], input=text,
                       capture_output=True, text=True, check=True)
    fused = r.stdout.replace(
        "monoid(online_softmax) :",
        "monoid(online_softmax) attributes {schedule = #tang.schedule<tile "
        f"= [1, 1, {rows}, 1, {keys}], mapping = [block_z, block_y, "
        "block_x, serial, serial], threads = [1, 1, 4, 1, 32], vector = 1, "
        "stages = 1, storage = f32, accumulate = f32, memory = [shared], "
        "kernel = flash>} :", 1)
    head = ("attributes {schedule = #tang.schedule<tile = "
            f"[{head_step}], mapping = [serial], threads = [1], vector = 1, "
            "stages = 1, storage = f32, accumulate = f32, memory = "
            "[global]>} :")
    i = fused.index("monoid(add) :")
    return fused[:i] + "monoid(add) " + head + fused[i + len("monoid(add) :"):]


def prepare_attention():
    """The attention case: its Vulkan bundle (the SIMT flash kernel), its
    CUDA bundle (the tensor-core flash kernel), a small instance checked
    on lavapipe. The number of failures."""
    B, H, L, D = ATTENTION_SHAPE
    name = f"attention_{B}x{H}x{L}x{D}_causal"
    d = WORK / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    t0 = time.monotonic()
    (d / "program.mlir").write_text(attention_program(B, H, L, D))
    small = (1, 2, 80, 40)
    qkv = [small] * 3
    variants = {"spirv": (attention_program(B, H, L, D),
                          "32 rows x 64 keys, head steps of 8 (default)")}
    small_variants = {"spirv": (attention_program(*small), "")}
    for v, (rows, keys, step) in ATTENTION_TILES.items():
        variants[v] = (scheduled_attention(attention_program(B, H, L, D),
                                           rows, keys, step),
                       f"{rows} rows x {keys} keys, head steps of {step}")
        small_variants[v] = (scheduled_attention(attention_program(*small),
                                                 rows, keys, step), "")
    meta = {"case": name, "kind": "attention", "shape": [B, H, L, D],
            "dtype": "f16", "inputs": [[B, H, L, D]] * 3,
            # Causal: half the scores; 4 L^2 D flops a head in all.
            "flops": 2 * B * H * L * L * D,
            "bytes": F16_BYTES * 4 * B * H * L * D,
            # f16 scores, probabilities and output: a few f16 roundings.
            "small_check": check_small(small_variants, qkv, 8 * 2.0 ** -11),
            "variants": {}}
    lower_variants(d, {v: (text, "", what)
                       for v, (text, what) in variants.items()}, meta)
    meta["cuda_error"] = lower(d / "program.mlir", "tang-lower-cuda",
                               d / "cuda")
    bad = lower_other_hosts(d, d / "program.mlir", meta)
    finish(d, meta, t0, f"variants {meta['variants']} ")
    return ((meta["spirv_error"] is not None) +
            (meta["cuda_error"] is not None) + bad +
            (meta["small_check"].get("ok") is False))


def prepare_attention_grad():
    """Causal attention's forward + backward: @main_fwd (O and the softmax
    statistics) and @main_bwd (dQ, dK, dV) of `--tang-grad=split=1`, in
    one Vulkan bundle (SIMT flash and score kernels) and one CUDA bundle.
    (The gradient's kernels are checked against the interpreter on every
    build: test_attention_gradient_matches_interpreter.) The number of
    failures."""
    B, H, L, D = ATTENTION_SHAPE
    name = f"attention_grad_{B}x{H}x{L}x{D}_causal"
    d = WORK / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    t0 = time.monotonic()
    (d / "forward.mlir").write_text(attention_program(B, H, L, D))
    meta = {"case": name, "kind": "attention_grad", "shape": [B, H, L, D],
            "dtype": "f16", "inputs": [[B, H, L, D]] * 4,
            "flops_forward": 2 * B * H * L * L * D,
            "flops_backward": 5 * B * H * L * L * D,
            "bytes": F16_BYTES * 8 * B * H * L * D,
            "small_check": {"ran": False, "why": "the gradient's kernels "
                            "are checked on every build (the backends' "
                            "test_attention_gradient_matches_interpreter)"}}
    try:
        (d / "program.mlir").write_text(
            pag.training_program(d / "forward.mlir"))
    except RuntimeError as e:
        meta["spirv_error"] = meta["cuda_error"] = str(e)[-2000:]
    else:
        for fmt, pipeline in (("spirv", "tang-lower-spirv"),
                              ("cuda", "tang-lower-cuda")):
            meta[f"{fmt}_error"] = lower(d / "program.mlir", pipeline,
                                         d / fmt)
        if meta["spirv_error"] is None:
            fns = json.loads((d / "spirv" / "manifest.json").read_text())[
                "functions"]
            meta["spirv_kernels"] = {
                f["name"]: [{"block": x["block"], "grid": x["grid"]}
                            for x in f["launches"]] for f in fns}
    finish(d, meta, t0, "")
    return (meta["spirv_error"] is not None) + \
        (meta["cuda_error"] is not None)


def prepare_probe():
    """_probe/opencl: examples/softmax.mlir's OpenCL bundle and an input,
    which bench_portable runs with tang-ocl-run to learn whether the GPU
    machine has an OpenCL driver (recorded, not timed)."""
    d = WORK / "_probe"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    err = lower(ROOT / "examples" / "softmax.mlir", "tang-lower-opencl",
                d / "opencl")
    if err:
        print(f"_probe: {err}", flush=True)
        return
    shape = json.loads((d / "opencl" / "manifest.json").read_text())[
        "functions"][0]["args"][0]["shape"]
    np.save(d / "input_0.npy", np.random.default_rng(3).standard_normal(
        shape).astype(np.float32))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*",
                    choices=list(CASES) + ["gemm", "attention",
                                           "attention_grad"])
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
                # f16 storage of the output: a few units of its roundoff.
                "small_check": check_small(
                    {"spirv": (program(template, small), "")},
                    shapes(*small), 4 * 2.0 ** -11)}
        out_elems = (shape[0] if meta["kind"] == "gemv"
                     else shape[0] * shape[1])
        meta["bytes"] = F16_BYTES * (
            sum(int(np.prod(s)) for s in meta["inputs"]) + out_elems)
        for fmt, pipeline in (("spirv", "tang-lower-spirv"),
                              ("cuda", "tang-lower-cuda")):
            err = lower(d / "program.mlir", pipeline, d / fmt)
            meta[f"{fmt}_error"] = err
            bad += err is not None
        bad += lower_other_hosts(d, d / "program.mlir", meta)
        bad += meta["small_check"].get("ok") is False
        finish(d, meta, t0, "")
    if not args.only or "attention" in args.only:
        bad += prepare_attention()
    if not args.only or "attention_grad" in args.only:
        bad += prepare_attention_grad()
    if not args.only or "gemm" in args.only:
        bad += prepare_gemm()
    prepare_probe()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
