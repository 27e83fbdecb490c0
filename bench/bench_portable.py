#!/usr/bin/env python3
"""Times tang's portable (Vulkan) kernels next to its CUDA kernels on the
same GPU (runs on the GPU machine).

For every gpu-work/portable/<case>/meta.json that bench/prepare_portable.py
wrote (RMSNorm, row softmax, LayerNorm, GEMV; f16 storage; the GEMM and
causal attention have their own runs below), in one process:

1. random normal f16 inputs (fixed seed, never zeros), written as .npy for
   tang-vk-run;
2. the Vulkan bundle run by tang-vk-run (build-vk/tang-vk-run, or
   $TANG_VK_RUN) with --time: its output checked against a float64
   PyTorch reference on every element (bench/harness.py's tolerance: f16
   storage, f32 arithmetic, one rounding), then its GPU-timestamp times;
3. the CUDA bundle of the same program run by python/tang (tang.cuda),
   checked the same way, timed with CUDA events on the same inputs;
4. the same program's GLSL bundle (glslang's SPIR-V, tang-vk-run), and
   its OpenCL and WGSL bundles where the GPU machine has those hosts on
   the GPU (setup_other_hosts: NVIDIA's OpenCL library
   through an ICD file of our own, Node and Dawn unpacked from
   gpu-work/node-webgpu.tar.xz), checked the same way and timed by
   tang-ocl-run (profiling events) and tang-wgpu-run (GPU timestamps);
   each a column of the README table;
5. rounds interleaved (Vulkan, CUDA, GLSL, OpenCL, WebGPU, Vulkan, ...); each
   side's figure the median of its rounds' medians; the device-to-device
   copy rate measured at the start.

The Vulkan loader must be there: on the GPU machine carry `.gl` (the
packages bench/README.md lists); when libvulkan.so.1 cannot be loaded this
script unpacks them into / and sets VK_DRIVER_FILES to NVIDIA's ICD. A
case whose Vulkan side cannot run is reported with the reason, never
skipped silently.

Writes $OUT/portable.json (bench/harness.py's schema) and prints a table.

Usage: python3 bench/bench_portable.py [--cases NAME ...] [--rounds N]
    [--reps N] [--quick] [--deadline UNIX_TIME] [--out DIR]
"""

import argparse
import dataclasses
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402
import bench_memory_bound as mb  # noqa: E402

WORK = ROOT / "gpu-work" / "portable"
VK_RUN = Path(os.environ.get("TANG_VK_RUN", ROOT / "build-vk" / "tang-vk-run"))
OCL_RUN = Path(os.environ.get("TANG_OCL_RUN",
                              ROOT / "build-ocl" / "tang-ocl-run"))
WGPU_RUN = ROOT / "runtime" / "webgpu" / "tang-wgpu-run"
#: host -> (its bundle's directory in a case, its runner)
HOSTS = {"vulkan": ("spirv", VK_RUN), "glsl": ("glsl", VK_RUN),
         "opencl": ("opencl", OCL_RUN), "webgpu": ("wgsl", WGPU_RUN)}
#: Node and the npm package webgpu (Dawn), packed here for a GPU machine
#: without Node: bin/node and webgpu/node_modules/webgpu (bench/README.md).
NODE_PACK = ROOT / "gpu-work" / "node-webgpu.tar.xz"
SEED = 4321
TIME_RE = re.compile(r"time: median ([0-9.]+) ms, least ([0-9.]+), greatest "
                     r"([0-9.]+) over (\d+) runs \((GPU timestamps|profiling "
                     r"events|wall clock); buffers in (\S+) memory\)")


def run_host(host, args, timeout=600):
    """The host's runner (tang-vk-run, tang-ocl-run, tang-wgpu-run) on
    `args`."""
    return subprocess.run([str(HOSTS[host][1]), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def vk(args, timeout=600):
    return run_host("vulkan", args, timeout)


def params_of(meta):
    """The reference's parameters (prepare_bench's template defaults)."""
    kind, shape = meta["kind"], meta["shape"]
    if kind == "gemv":
        return {"out": shape[0], "inn": shape[1]}
    return {"rows": shape[0], "cols": shape[1],
            "eps": {"rmsnorm": 1e-6, "layernorm": 1e-5}.get(kind)}


NVIDIA_ICDS = ["/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json",
               "/usr/share/vulkan/icd.d/nvidia_icd.json",
               "/etc/vulkan/icd.d/nvidia_icd.json"]


def ensure_vulkan_loader():
    """The GPU machine has NVIDIA's Vulkan driver but not the loader: when
    libvulkan.so.1 cannot be loaded and `.gl/` holds the packages
    (bench/README.md), unpack them into / (dpkg -x) and run ldconfig; point
    VK_DRIVER_FILES at NVIDIA's ICD when unset. Returns what it did."""
    import ctypes
    done = []
    try:
        ctypes.CDLL("libvulkan.so.1")
    except OSError:
        debs = sorted((ROOT / ".gl").glob("*.deb"))
        for deb in debs:
            subprocess.run(["dpkg", "-x", str(deb), "/"], check=False)
        if debs:
            subprocess.run(["ldconfig"], check=False)
            done.append(f"unpacked {len(debs)} packages from .gl")
    if "VK_DRIVER_FILES" not in os.environ:
        for icd in NVIDIA_ICDS:
            if os.path.isfile(icd):
                os.environ["VK_DRIVER_FILES"] = icd
                done.append(f"VK_DRIVER_FILES={icd}")
                break
    return done


def find_library(name):
    """The path of shared library `name` (ldconfig's cache, then the usual
    folders), or None."""
    r = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.strip().startswith(name + " ") and "=>" in line:
            return line.split("=>")[-1].strip()
    for folder in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib",
                   "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib"):
        if (Path(folder) / name).exists():
            return str(Path(folder) / name)
    return None


def setup_other_hosts(tmp):
    """Makes the GPU machine's other portable hosts reachable and probes
    them: OpenCL through NVIDIA's library when no ICD file names it (an ICD
    file in a temporary folder, OCL_ICD_VENDORS; the ICD loader comes with
    .gl), WebGPU through Node and Dawn unpacked from NODE_PACK when Node is
    missing (Dawn on the system's Vulkan: NVIDIA's). Each host is run on
    examples/softmax.mlir's bundle (bench/prepare_portable.py's _probe);
    it is timed only on a GPU (not PoCL's CPU device or llvmpipe). Returns
    {"setup": what it did, host: {"device", "usable", "why"}}."""
    setup = {}
    vendors = Path("/etc/OpenCL/vendors")
    icds = sorted(p.name for p in vendors.glob("*.icd")) \
        if vendors.is_dir() else []
    setup["opencl_icds"] = icds
    if not any("nvidia" in i for i in icds) and \
            "OCL_ICD_VENDORS" not in os.environ:
        lib = find_library("libnvidia-opencl.so.1")
        if lib:
            d = Path(tempfile.mkdtemp(prefix="tang-icd-"))
            (d / "nvidia.icd").write_text(lib + "\n")
            os.environ["OCL_ICD_VENDORS"] = str(d)
            setup["opencl"] = f"OCL_ICD_VENDORS with {lib}"
        else:
            setup["opencl"] = "no libnvidia-opencl.so.1"
    if not shutil.which("node") and NODE_PACK.is_file():
        d = Path(tempfile.mkdtemp(prefix="tang-node-"))
        r = subprocess.run(["tar", "xJf", str(NODE_PACK), "-C", str(d)],
                           capture_output=True, text=True)
        if r.returncode == 0:
            os.environ["PATH"] = f"{d / 'bin'}:{os.environ['PATH']}"
            os.environ["TANG_WEBGPU_DIR"] = str(d / "webgpu")
            # Dawn on the machine's Vulkan driver, not Mesa's lavapipe.
            os.environ["TANG_WEBGPU_SYSTEM_VULKAN"] = "1"
            setup["webgpu"] = f"node and webgpu from {NODE_PACK.name}"
        else:
            setup["webgpu"] = "unpacking failed: " + r.stderr[-200:]
    setup["node"] = shutil.which("node")
    out = {"setup": setup}
    probe = WORK / "_probe"
    for host, args in (
            ("opencl", [probe / "opencl", "main", probe / "input_0.npy",
                        "--out", tmp / "probe_ocl", "-v"]),
            ("webgpu", ["--probe"])):
        if not HOSTS[host][1].is_file():
            out[host] = {"usable": False, "why": "not carried"}
            continue
        try:
            r = run_host(host, args, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            out[host] = {"usable": False, "why": harness.short(e)}
            continue
        text = (r.stdout + r.stderr).strip()
        if r.returncode:
            out[host] = {"usable": False,
                         "why": f"exit {r.returncode}: {text[-300:]}"}
            continue
        # tang-ocl-run -v: "device: NAME (VERSION)"; tang-wgpu-run --probe:
        # the adapter's name, the last line of its output (Dawn warns on
        # stderr).
        device = ((r.stdout.split("device: ", 1)[-1].splitlines() or
                   ["?"])[0] if host == "opencl" else
                  (r.stdout.strip().splitlines() or ["?"])[-1])
        cpu = any(w in device.lower() for w in ("llvmpipe", "swiftshader",
                                                "pthread", "cpu-"))
        out[host] = {"device": device, "usable": not cpu,
                     "why": "a CPU device" if cpu else None}
    return out


def check_other_hosts(torch, res, meta, d, fn, hosts, paths, ref, tol, tmp):
    """Runs function `fn` of each host's bundle d/<fmt> (those of `hosts`
    the case has) on `paths` and checks output #0 against `ref` under
    `tol`. Returns the hosts that passed; the others are recorded in
    res["host_failures"] (a wrong result with its error, or the run's
    diagnostics), their checks in res["checks"] only when they pass."""
    ok = []
    for host in hosts:
        fmt = HOSTS[host][0]
        if meta.get(f"{fmt}_error") or not (d / fmt).is_dir():
            why = meta.get(f"{fmt}_error") or "no bundle"
            res.setdefault("host_failures", {})[host] = why[-300:]
            continue
        out_dir = tmp / f"{meta['case']}_{host}"
        try:
            r = run_host(host, [d / fmt, fn, *paths, "--out", out_dir])
        except subprocess.TimeoutExpired as e:
            res.setdefault("host_failures", {})[host] = harness.short(e)
            continue
        if r.returncode:
            res.setdefault("host_failures", {})[host] = \
                f"{HOSTS[host][1].name}: {r.stderr[-300:]}"
            continue
        try:
            got = torch.from_numpy(np.load(out_dir / "output_0.npy")).to(
                ref.device)
        except OSError as e:
            res.setdefault("host_failures", {})[host] = harness.short(e)
            continue
        chk = harness.check_tensor(got, ref, tol, host)
        if harness.summarize_checks([chk])[0]:
            res["checks"].append(chk)
            ok.append(host)
        else:
            res.setdefault("host_failures", {})[host] = \
                f"outside the tolerance: {chk}"[:400]
    return ok


def host_time(host, args, reps):
    """The host's runner on `args` --time `reps`: the median ms, or raises
    with its diagnostics."""
    try:
        r = run_host(host, [*args, "--time", reps])
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"{HOSTS[host][1].name} --time: {e}") from e
    m = TIME_RE.search(r.stdout)
    if r.returncode or not m:
        raise RuntimeError(f"{HOSTS[host][1].name} --time: " +
                           (r.stderr or r.stdout)[-300:])
    return float(m.group(1))


def compile_failed(meta, res):
    """Whether a side of the case failed to compile (then `res` says so)."""
    for side in ("spirv", "cuda"):
        if meta.get(f"{side}_error"):
            res.update(status="compile failed",
                       note=f"{side}: {meta[side + '_error'][:200]}")
            return True
    return False


def run_case(torch, F, tang_cuda, meta, rounds, reps, tmp, hosts=()):
    """A memory-bound case: Vulkan and each of the other `hosts` (OpenCL,
    WebGPU) checked, then timed in interleaved rounds with tang's CUDA
    kernel of the same program."""
    name, kind = meta["case"], meta["kind"]
    params = params_of(meta)
    res = harness.case_result(name, kind=kind, params=params,
                              bytes_min=meta["bytes"])
    d = WORK / name
    if compile_failed(meta, res):
        return res
    g = torch.Generator(device="cuda").manual_seed(SEED)
    ins = [torch.randn(s, generator=g, device="cuda", dtype=torch.float16)
           for s in meta["inputs"]]
    paths = []
    for k, t in enumerate(ins):
        p = tmp / f"{name}_in{k}.npy"
        np.save(p, t.cpu().numpy())
        paths.append(p)
    ref = mb.reference(torch, F, kind, params, ins)
    K = params.get("cols") or params.get("inn")
    tol = harness.Tolerance("f16", reduction=K, roundings=1)

    # Vulkan: the checked run.
    out_dir = tmp / f"{name}_vk"
    r = vk([d / "spirv", "main", *paths, "--out", out_dir])
    if r.returncode:
        res.update(status="failed", note=("tang-vk-run: " + r.stderr)[-300:])
        return res
    got = torch.from_numpy(np.load(out_dir / "output_0.npy")).cuda()
    res["checks"].append(harness.check_tensor(got, ref, tol, "vulkan"))
    # CUDA: the same program's CUDA bundle, the same inputs.
    bundle = tang_cuda.Bundle(d / "cuda")
    out = torch.full(ref.shape, float("nan"), device="cuda",
                     dtype=torch.float16)

    def run(k=0):
        bundle.run("main", *ins, outputs=[out])
    run()
    torch.cuda.synchronize()
    res["checks"].append(harness.check_tensor(out, ref, tol, "cuda"))
    ok, worst = harness.summarize_checks(res["checks"])
    res["max_err"] = worst
    if not ok:
        res.update(status="incorrect",
                   note="a side's output is outside the tolerance: not timed")
        return res
    others = check_other_hosts(torch, res, meta, d, "main", hosts, paths,
                               ref, tol, tmp)

    vk_ms, cuda_ms, memory = [], [], None
    other_ms = {h: [] for h in others}
    for _ in range(rounds):
        r = vk([d / "spirv", "main", *paths, "--time", reps])
        m = TIME_RE.search(r.stdout)
        if r.returncode or not m:
            res.update(status="failed",
                       note=("tang-vk-run --time: " + r.stderr)[-300:])
            return res
        vk_ms.append(float(m.group(1)))
        memory = m.group(6)
        for _ in range(2):
            run()
        cuda_ms.append(statistics.median(
            harness.time_calls(torch, run, reps)))
        for h in list(other_ms):
            try:
                other_ms[h].append(host_time(
                    h, [d / HOSTS[h][0], "main", *paths], reps))
            except RuntimeError as e:
                res.setdefault("host_failures", {})[h] = str(e)
                del other_ms[h]
    # The common schema (make_tables): tang's Vulkan kernel the case, the
    # CUDA kernel of the same program its peer; ratio = CUDA / Vulkan time
    # (below 1: Vulkan slower).
    vms, cms = statistics.median(vk_ms), statistics.median(cuda_ms)
    lo, hi = min(cuda_ms) / max(vk_ms), max(cuda_ms) / min(vk_ms)
    res.update(status="ok", tang_ms=vms, peers={"tang_cuda": cms},
               best_peer="tang_cuda", ratio=cms / vms, spread=[lo, hi],
               verdict=harness.verdict(lo, hi), vulkan_rounds_ms=vk_ms,
               cuda_rounds_ms=cuda_ms, vulkan_buffers=memory,
               contenders={n: {"ms": t, "gbs": meta["bytes"] / t / 1e6}
                           for n, t in (("vulkan", vms), ("cuda", cms),
                                        *((h, statistics.median(t))
                                          for h, t in other_ms.items()))},
               **{f"{h}_rounds_ms": t for h, t in other_ms.items()})
    return res


def check_variants(torch, res, d, name, names, paths, ref, tol, tmp):
    """Runs each Vulkan variant bundle d/<v> of `names` on `paths` and
    checks output #0 against `ref` under `tol` (the checks into `res`).
    Returns the variants that passed and {variant: why} for the others."""
    ok, failures = [], {}
    t0 = time.monotonic()
    for v in names:
        print(f"  {name} {v}: checking ({time.monotonic() - t0:.0f} s)",
              file=sys.stderr, flush=True)
        out_dir = tmp / f"{name}_{v}"
        r = vk([d / v, "main", *paths, "--out", out_dir])
        if r.returncode:
            failures[v] = ("tang-vk-run: " + r.stderr)[-300:]
            continue
        got = torch.from_numpy(np.load(out_dir / "output_0.npy")).cuda()
        chk = harness.check_tensor(got, ref, tol, f"vulkan {v}")
        res["checks"].append(chk)
        if harness.summarize_checks([chk])[0]:
            ok.append(v)
        else:
            failures[v] = "outside the tolerance"
    return ok, failures


def mm_f32(torch, a, b):
    """cuBLAS's f16 product with f32 sums written as f32 (the program's
    result type) where PyTorch has `out_dtype`, else as f16 (less to
    write: the peer's advantage)."""
    try:
        return torch.mm(a, b, out_dtype=torch.float32)
    except (TypeError, RuntimeError):
        return torch.mm(a, b)


def run_gemm_case(torch, tang_cuda, meta, rounds, reps, tmp):
    """The GEMM on cooperative matrices: every Vulkan variant checked, then
    timed in interleaved rounds with the CUDA bundle of the same program
    and cuBLAS (torch.mm); the case's figure is the fastest correct
    variant's, each variant's kept under `variants`."""
    name = meta["case"]
    m, n, k = meta["shape"]
    res = harness.case_result(name, kind="gemm",
                              params={"m": m, "n": n, "k": k},
                              bytes_min=meta["bytes"])
    d = WORK / name
    if compile_failed(meta, res):
        return res
    g = torch.Generator(device="cuda").manual_seed(SEED)
    a = torch.randn(m, k, generator=g, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, generator=g, device="cuda", dtype=torch.float16)
    paths = [tmp / f"{name}_a.npy", tmp / f"{name}_b.npy"]
    np.save(paths[0], a.cpu().numpy())
    np.save(paths[1], b.cpu().numpy())
    ref = a.double() @ b.double()
    # Sums on matrix units (harness.UNIT_ROUNDOFF's f32_mma): every side
    # but the SIMT variant; the SIMT one is held to the same bound.
    tol = harness.Tolerance("f32", reduction=k, roundings=1, acc="f32_mma")
    t0 = time.monotonic()
    variants, failures = check_variants(torch, res, d, name, meta["variants"],
                                        paths, ref, tol, tmp)
    bundle = tang_cuda.Bundle(d / "cuda")
    out = torch.full((m, n), float("nan"), device="cuda",
                     dtype=torch.float32)

    def run_cuda(i=0):
        bundle.run("main", a, b, outputs=[out])

    def run_cublas(i=0):
        mm_f32(torch, a, b)
    run_cuda()
    torch.cuda.synchronize()
    res["checks"].append(harness.check_tensor(out, ref, tol, "cuda"))
    peer_out = mm_f32(torch, a, b)
    res["cublas_result_dtype"] = str(peer_out.dtype)
    res["checks"].append(harness.check_tensor(
        peer_out.float(), ref, harness.Tolerance(
            "f32" if peer_out.dtype == torch.float32 else "f16",
            reduction=k, roundings=1, acc="f32_mma"), "cublas"))
    res["variant_failures"] = failures
    if not variants:
        res.update(status="failed" if failures else "incorrect",
                   note="no Vulkan variant ran correctly: " +
                   "; ".join(f"{v}: {w}" for v, w in failures.items())[:400])
        return res
    times = {v: [] for v in variants}
    times.update(cuda=[], cublas=[])
    for k_round in range(rounds):
        print(f"  {name}: round {k_round} ({time.monotonic() - t0:.0f} s)",
              file=sys.stderr, flush=True)
        for v in variants:
            r = vk([d / v, "main", *paths, "--time", reps])
            mt = TIME_RE.search(r.stdout)
            if r.returncode or not mt:
                failures[v] = ("tang-vk-run --time: " + r.stderr)[-300:]
                continue
            times[v].append(float(mt.group(1)))
        for side, fn in (("cuda", run_cuda), ("cublas", run_cublas)):
            for _ in range(2):
                fn()
            times[side].append(statistics.median(
                harness.time_calls(torch, fn, reps)))
    med = {v: statistics.median(t) for v, t in times.items() if t}
    best = min((v for v in variants if v in med), key=med.get, default=None)
    if best is None:
        res.update(status="failed", note="no Vulkan variant timed")
        return res
    tflops = {v: meta["flops"] / t / 1e9 for v, t in med.items()}
    vms, peer = med[best], med["cublas"]
    lo = min(times["cublas"]) / max(times[best])
    hi = max(times["cublas"]) / min(times[best])
    res.update(status="ok", tang_ms=vms,
               peers={"cublas": peer, "tang_cuda": med["cuda"]},
               best_peer="cublas", ratio=peer / vms, spread=[lo, hi],
               verdict=harness.verdict(lo, hi), best_variant=best,
               variants={v: {"ms": med.get(v), "tflops": tflops.get(v),
                             "rounds_ms": times.get(v),
                             "what": meta["variants"][v]}
                         for v in meta["variants"]},
               contenders={v: {"ms": t, "tflops": tflops[v]}
                           for v, t in med.items()})
    return res


def attention_reference(torch, q, k, v):
    """softmax(c Q K^T, causal) V in float64, c the program's f16 scale."""
    D = q.shape[-1]
    c = torch.tensor(1.0 / D ** 0.5).to(torch.float16).double()
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    L = q.shape[-2]
    mask = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()
    for h in range(q.shape[1]):  # a head at a time: L x L doubles
        s = (q[:, h].double() @ k[:, h].double().transpose(-1, -2)) * c
        s = s.masked_fill(~mask, float("-inf"))
        out[:, h] = torch.softmax(s, -1) @ v[:, h].double()
    return out


def time_attention(torch, res, meta, rounds, reps, flops, vulkan, run_cuda,
                   run_sdpa):
    """Interleaved rounds of the portable runs and the two CUDA peers
    (tang's bundle, SDPA): `vulkan` maps a name to the (host, runner
    arguments) whose medians add up to its time ("vulkan" is the case's
    figure; "opencl" and "webgpu" the other hosts'; a run under several
    names is timed once a round). Fills `res` with the times, the ratio
    against the faster peer and its spread."""
    times = {name: [] for name in vulkan}
    times.update(tang_cuda=[], sdpa=[])
    for _ in range(rounds):
        once = {}

        def timed(host, args):
            key = str((host, args))
            if key not in once:
                once[key] = host_time(host, args, reps)
            return once[key]
        for name, runs in list(vulkan.items()):
            try:
                times[name].append(sum(timed(h, a) for h, a in runs))
            except RuntimeError as e:
                # Another host's failure is that host's, not the case's.
                if name not in HOSTS or name == "vulkan":
                    raise
                res.setdefault("host_failures", {})[name] = str(e)
                del vulkan[name], times[name]
        for side, fn in (("tang_cuda", run_cuda), ("sdpa", run_sdpa)):
            for _ in range(2):
                fn()
            times[side].append(statistics.median(
                harness.time_calls(torch, fn, reps)))
    med = {side: statistics.median(t) for side, t in times.items()}
    if "vulkan" not in vulkan:
        # Variants: the case's figure is the fastest's.
        best_v = min((v for v in vulkan if v not in HOSTS), key=med.get)
        res["best_variant"] = best_v
        res["variant_ms"] = {v: med[v] for v in vulkan if v not in HOSTS}
        times["vulkan"], med["vulkan"] = times[best_v], med[best_v]
    best = min(("tang_cuda", "sdpa"), key=med.get)
    vms = med["vulkan"]
    lo = min(times[best]) / max(times["vulkan"])
    hi = max(times[best]) / min(times["vulkan"])
    res.update(status="ok", tang_ms=vms,
               peers={"tang_cuda": med["tang_cuda"], "sdpa": med["sdpa"]},
               best_peer=best, ratio=med[best] / vms, spread=[lo, hi],
               verdict=harness.verdict(lo, hi), rounds_ms=times,
               vulkan_kernels=meta.get("spirv_kernels"),
               contenders={side: {"ms": med[side],
                                  "tflops": flops / med[side] / 1e9}
                           for side in ("vulkan", *(h for h in HOSTS
                                                    if h in vulkan and
                                                    h != "vulkan"),
                                        "tang_cuda", "sdpa")})


def run_attention_case(torch, F, tang_cuda, meta, rounds, reps, tmp,
                       hosts=()):
    """Causal attention: the Vulkan bundle (the SIMT flash kernel, no
    tensor cores) and the CUDA bundle of the same program (the tensor-core
    flash kernel) checked on every element against float64, then timed in
    interleaved rounds with PyTorch's SDPA (its own backend choice, f16).
    The ratio is against the faster of the CUDA peers, tang's included."""
    name = meta["case"]
    B, H, L, D = meta["shape"]
    res = harness.case_result(name, kind="attention",
                              params={"B": B, "H": H, "L": L, "D": D,
                                      "causal": True},
                              bytes_min=meta["bytes"])
    d = WORK / name
    if compile_failed(meta, res):
        return res
    g = torch.Generator(device="cuda").manual_seed(SEED)
    q, k, v = (torch.randn(s, generator=g, device="cuda",
                           dtype=torch.float16) for s in meta["inputs"])
    paths = []
    for i, t in enumerate((q, k, v)):
        p = tmp / f"{name}_in{i}.npy"
        np.save(p, t.cpu().numpy())
        paths.append(p)
    ref = attention_reference(torch, q, k, v)
    # f16 scores, probabilities and output (bench_gemm's attention rule).
    tol = harness.Tolerance("f16", reduction=max(L, D), roundings=3)
    # Each Vulkan variant checked; those outside the bound are not timed.
    variants, failures = check_variants(
        torch, res, d, name, meta.get("variants") or {"spirv": ""}, paths,
        ref, tol, tmp)
    res["variant_failures"] = failures
    res["variants"] = meta.get("variants")
    # A variant outside the bound is reported under variant_failures; the
    # case is judged on those that passed (as the GEMM's).
    res["checks"] = [c for c in res["checks"]
                     if c["name"].split()[-1] in variants]
    if not variants:
        res.update(status="failed" if any(
            w != "outside the tolerance" for w in failures.values())
            else "incorrect", note="no Vulkan variant ran correctly: " +
            "; ".join(f"{v}: {w}" for v, w in failures.items())[:400])
        return res
    bundle = tang_cuda.Bundle(d / "cuda")
    out = torch.full(ref.shape, float("nan"), device="cuda",
                     dtype=torch.float16)
    scale = float(torch.tensor(1.0 / D ** 0.5).to(torch.float16))

    def run_cuda(i=0):
        bundle.run("main", q, k, v, outputs=[out])

    def run_sdpa(i=0):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                              scale=scale)
    run_cuda()
    torch.cuda.synchronize()
    res["checks"].append(harness.check_tensor(out, ref, tol, "cuda"))
    res["checks"].append(harness.check_tensor(
        run_sdpa(), ref, harness.Tolerance("f16", reduction=max(L, D),
                                           roundings=6), "sdpa"))
    ok, worst = harness.summarize_checks(res["checks"])
    res["max_err"] = worst
    if not ok:
        res.update(status="incorrect",
                   note="a side's output is outside the tolerance: not timed")
        return res
    others = check_other_hosts(torch, res, meta, d, "main", hosts, paths,
                               ref, tol, tmp)
    try:
        time_attention(torch, res, meta, rounds, reps, meta["flops"],
                       {**{var: [("vulkan", [d / var, "main", *paths])]
                           for var in variants},
                        **{h: [(h, [d / HOSTS[h][0], "main", *paths])]
                           for h in others}},
                       run_cuda, run_sdpa)
    except RuntimeError as e:
        res.update(status="failed", note=str(e))
    return res


def run_attention_grad_case(torch, F, tang_cuda, meta, rounds, reps, tmp):
    """Causal attention's forward + backward: the Vulkan bundle's @main_fwd
    (SIMT flash kernel, O and the statistics) then @main_bwd (SIMT score
    kernels: dQ, dK, dV) on the forward's outputs; the CUDA bundle of the
    same program; PyTorch SDPA with autograd. O and the gradients checked
    on every element against float64 autograd (bench_attention_grad's
    bounds and sensitivity, f16), then fwd + bwd timed in interleaved
    rounds (Vulkan: the two functions' medians added)."""
    import bench_attention_grad as bag
    name = meta["case"]
    B, H, L, D = meta["shape"]
    flops = meta["flops_forward"] + meta["flops_backward"]
    res = harness.case_result(name, kind="attention_grad",
                              params={"B": B, "H": H, "L": L, "D": D,
                                      "causal": True},
                              bytes_min=meta["bytes"], flops=flops)
    d = WORK / name
    if compile_failed(meta, res):
        return res
    g = torch.Generator(device="cuda").manual_seed(SEED)
    ins = [torch.randn(s, generator=g, device="cuda", dtype=torch.float16)
           for s in meta["inputs"]]
    paths = []
    for i, t in enumerate(ins):
        p = tmp / f"{name}_in{i}.npy"
        np.save(p, t.cpu().numpy())
        paths.append(p)
    scale = float(torch.tensor(1.0 / D ** 0.5).to(torch.float16))
    refs = bag.full_reference(torch, *ins, True, scale)
    sens = bag.sensitivity(torch, ins, refs, True, scale, storage="f16")
    tol_o = harness.Tolerance("f16", reduction=L, roundings=3)
    tol_g = harness.Tolerance("f16", reduction=L, roundings=9)
    tols = [tol_o, tol_g, tol_g, tol_g]
    res["tolerance"] = {"o": tol_o.describe(), "grads": tol_g.describe()}
    names = ("O", "dQ", "dK", "dV")

    # Vulkan: forward, then backward on its outputs.
    fwd_dir, bwd_dir = tmp / f"{name}_fwd", tmp / f"{name}_bwd"
    fwd_args = [d / "spirv", "main_fwd", *paths[:3]]
    r = vk([*fwd_args, "--out", fwd_dir])
    if r.returncode:
        res.update(status="failed", note=("tang-vk-run: " + r.stderr)[-300:])
        return res
    saved = [fwd_dir / f"output_{i}.npy" for i in range(3)]
    bwd_args = [d / "spirv", "main_bwd", *paths[:3], *saved, paths[3]]
    r = vk([*bwd_args, "--out", bwd_dir])
    if r.returncode:
        res.update(status="failed", note=("tang-vk-run: " + r.stderr)[-300:])
        return res
    load = lambda p: torch.from_numpy(np.load(p)).cuda()
    got = [load(saved[0])] + [load(bwd_dir / f"output_{i}.npy")
                              for i in range(3)]
    for n, a, ref, t, w in zip(names, got, refs, tols, sens):
        res["checks"].append(harness.check_tensor(a, ref, t, f"vulkan {n}", w))

    # CUDA: the same program's bundle.
    bundle = tang_cuda.Bundle(d / "cuda")
    shape = tuple(meta["shape"])
    o = torch.empty(shape, device="cuda", dtype=torch.float16)
    stats = [torch.empty(shape[:3], device="cuda", dtype=torch.float32)
             for _ in range(2)]
    grads = [torch.empty(shape, device="cuda", dtype=torch.float16)
             for _ in range(3)]

    def run_cuda(i=0):
        bundle.run("main_fwd", *ins[:3], outputs=[o, *stats])
        bundle.run("main_bwd", *ins[:3], o, *stats, ins[3], outputs=grads)

    leaves = [t.clone().requires_grad_() for t in ins[:3]]

    def run_sdpa(i=0):
        out = F.scaled_dot_product_attention(*leaves, is_causal=True,
                                             scale=scale)
        return (out, *torch.autograd.grad(out, leaves, ins[3]))
    run_cuda()
    torch.cuda.synchronize()
    for n, a, ref, t, w in zip(names, [o, *grads], refs, tols, sens):
        res["checks"].append(harness.check_tensor(a, ref, t, f"cuda {n}", w))
    peer_tols = [dataclasses.replace(t, roundings=t.roundings + 3)
                 for t in tols]
    for n, a, ref, t, w in zip(names, run_sdpa(), refs, peer_tols, sens):
        res["checks"].append(harness.check_tensor(a.detach(), ref, t,
                                                  f"sdpa {n}", w))
    ok, worst = harness.summarize_checks(res["checks"])
    res["max_err"] = worst
    if not ok:
        res.update(status="incorrect",
                   note="a side's output is outside the tolerance: not timed")
        return res
    del refs, sens
    try:
        time_attention(torch, res, meta, rounds, reps, flops,
                       {"vulkan_fwd": [("vulkan", fwd_args)],
                        "vulkan_bwd": [("vulkan", bwd_args)],
                        "vulkan": [("vulkan", fwd_args),
                                   ("vulkan", bwd_args)]}, run_cuda, run_sdpa)
    except RuntimeError as e:
        res.update(status="failed", note=str(e))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="*")
    ap.add_argument("--reps", type=int, default=None,
                    help="timed runs per round and side (default 30; "
                         "--quick 10)")
    harness.add_common_args(ap, default_rounds=5)
    args = ap.parse_args()
    args.rounds = harness.rounds_of(args, 5)
    args.reps = args.reps or (10 if args.quick else 30)
    deadline = harness.Deadline(args.deadline)
    import torch
    import torch.nn.functional as F
    from tang import cuda as tang_cuda
    # The memory-bound cases first, then attention: the GEMM's variants
    # take longest.
    metas = sorted(mb.load_metas(WORK, args.cases,
                                 "bench/prepare_portable.py", "case"),
                   key=lambda m: {"attention": 1, "attention_grad": 2,
                                  "gemm": 3}.get(m["kind"], 0))
    out = Path(args.out) if args.out else harness.out_dir("portable")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "portable.json"
    rep = harness.new_report("portable", torch, settings={
        "rounds": args.rounds, "reps": args.reps,
        "vulkan_runner": str(VK_RUN.relative_to(ROOT))
        if VK_RUN.is_relative_to(ROOT) else str(VK_RUN)})
    t0 = time.monotonic()
    rep["vulkan_setup"] = ensure_vulkan_loader()
    probe = vk(["--probe", "-v"]) if VK_RUN.is_file() else None
    if probe is not None:
        print(probe.stderr.strip(), file=sys.stderr, flush=True)
    rep["vulkan_device"] = probe.stdout.strip() if probe and \
        probe.returncode == 0 else None
    harness.prelist(rep, [m["case"] for m in metas])
    if not rep["vulkan_device"]:
        why = (f"{VK_RUN} not built" if probe is None else
               f"tang-vk-run --probe: exit {probe.returncode}: "
               f"{probe.stderr.strip()[-200:]}")
        for m in metas:
            harness.set_case(rep, harness.case_result(
                m["case"], status="failed", note=f"no Vulkan device: {why}"))
        harness.finish_report(rep, t0)
        harness.write_report(rep, path)
        print(why, file=sys.stderr)
        return 1
    rep["copy"] = mb.copy_rate(torch, 20)
    with tempfile.TemporaryDirectory() as tmp:
        rep["other_hosts"] = setup_other_hosts(Path(tmp))
        # GLSL's bundles run on the Vulkan device found above.
        hosts = ["glsl"] + [h for h in ("opencl", "webgpu")
                            if rep["other_hosts"][h].get("usable")]
        print(f"other hosts: {rep['other_hosts']}", file=sys.stderr,
              flush=True)
        for m in metas:
            if deadline.passed(20):
                harness.set_case(rep, harness.case_result(
                    m["case"], status="skipped: budget"), path)
                continue
            try:
                if m["kind"] == "gemm":
                    res = run_gemm_case(torch, tang_cuda, m, args.rounds,
                                        args.reps, Path(tmp))
                elif m["kind"] == "attention_grad":
                    res = run_attention_grad_case(torch, F, tang_cuda, m,
                                                  args.rounds, args.reps,
                                                  Path(tmp))
                elif m["kind"] == "attention":
                    res = run_attention_case(torch, F, tang_cuda, m,
                                             args.rounds, args.reps,
                                             Path(tmp), hosts)
                else:
                    res = run_case(torch, F, tang_cuda, m, args.rounds,
                                   args.reps, Path(tmp), hosts)
            except Exception as e:  # one case's fault is that case's
                res = harness.case_result(m["case"], status="failed",
                                          note=harness.short(e))
            for v in (res.get("contenders") or {}).values():
                if "gbs" in v:
                    v["share_of_copy"] = v["gbs"] / rep["copy"]["gbps"]
            harness.set_case(rep, res, path)
            print(f"{m['case']:24s} {res['status']:10s} "
                  f"vulkan {res.get('tang_ms') or float('nan'):.4f} ms "
                  f"cuda {(res.get('peers') or {}).get('tang_cuda') or float('nan'):.4f}"
                  f" ms {res.get('note', '')}", flush=True)
    harness.finish_report(rep, t0)
    harness.write_report(rep, path)
    return 0 if all(c["status"] == "ok" for c in rep["cases"]) else 1


if __name__ == "__main__":
    sys.exit(main())
