"""Measures the constants of the time floor on the GPU it runs on.

The floor of a kernel (bench/floor_report.py) is
    max(DRAM bytes / bandwidth, arithmetic / peak rate) + launch time,
so every constant must be at least the device's best: each is the larger of
what was measured here (the highest bandwidth of several access patterns,
the highest cuBLAS product rate, an FMA-bound kernel) and the architectural
peak from the device's clocks and widths; the launch time is an empty
kernel's replayed from a CUDA graph. A kernel measured below its floor
means a constant is not the device's best (or the bound is wrong): the
report flags it.

Run on the GPU machine (PyTorch, CuPy):
    python3 bench/measure_device.py            # writes $OUT/device.json
and copy the file to bench/devices/<device>.json.
"""

import json
import os
import pathlib
import time

import cupy as cp
import torch

REPS = 20


def best_ms(fn, reps=REPS, warmup=3):
    """The shortest of `reps` timed runs of fn (CUDA events), in ms."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return min(times)


def bandwidth():
    """Bytes per second: the best of copy (read + write), read-only
    reduction and fill, on 2 GiB buffers."""
    n = 1 << 30  # bf16 elements: 2 GiB
    x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    rates = {
        "copy": 2 * 2 * n / (best_ms(lambda: y.copy_(x)) * 1e-3),
        "read": 2 * n / (best_ms(lambda: x.sum(dtype=torch.float32)) * 1e-3),
        "fill": 2 * n / (best_ms(lambda: y.fill_(1.0)) * 1e-3),
    }
    return max(rates.values()), rates


def tensor_peak():
    """bf16 products with f32 accumulation (cuBLAS): the best rate."""
    rates = {}
    for m, n, k in [(8192, 8192, 8192), (16384, 16384, 8192),
                    (16384, 8192, 16384)]:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        ms = best_ms(lambda: torch.matmul(a, b), reps=10)
        rates[f"{m}x{n}x{k}"] = 2 * m * n * k / (ms * 1e-3)
    return max(rates.values()), rates


FMA = r"""
extern "C" __global__ void fma_peak(float *out, float seed, int iters) {
  float a = seed + threadIdx.x, b = seed - threadIdx.x;
  float c = seed * 0.5f, d = seed * 0.25f;
  float e = a + 1.0f, f = b + 1.0f, g = c + 1.0f, h = d + 1.0f;
  for (int i = 0; i < iters; ++i) {
    a = fmaf(a, 0.9999f, 0.0001f); b = fmaf(b, 0.9999f, 0.0001f);
    c = fmaf(c, 0.9999f, 0.0001f); d = fmaf(d, 0.9999f, 0.0001f);
    e = fmaf(e, 0.9999f, 0.0001f); f = fmaf(f, 0.9999f, 0.0001f);
    g = fmaf(g, 0.9999f, 0.0001f); h = fmaf(h, 0.9999f, 0.0001f);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a + b + c + d + e + f + g + h;
}
extern "C" __global__ void empty() {}
"""


def fp32_peak():
    """f32 operations per second through FMAs (2 operations each): eight
    independent chains per thread on every multiprocessor."""
    module = cp.RawModule(code=FMA)
    kernel = module.get_function("fma_peak")
    blocks, threads, iters = 132 * 16, 256, 8192
    out = cp.empty(blocks * threads, dtype=cp.float32)
    ms = best_ms(lambda: kernel((blocks,), (threads,),
                                (out, cp.float32(1.0), cp.int32(iters))),
                 reps=10)
    return 2 * 8 * iters * blocks * threads / (ms * 1e-3)


def launch_time():
    """Seconds per empty kernel replayed from a CUDA graph of 1000 (no host
    launch overhead: the least any kernel takes on the device)."""
    module = cp.RawModule(code=FMA)
    kernel = module.get_function("empty")
    count = 1000
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        for _ in range(count):
            kernel((1,), (32,), ())
        graph = stream.end_capture()
    graph.launch(stream)
    stream.synchronize()
    times = []
    for _ in range(10):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(stream)
        graph.launch(stream)
        b.record(stream)
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    return min(times) * 1e-3 / count


def architectural_peaks():
    """Upper bounds from the device's own clocks and widths: Hopper's
    tensor cores do 4096 dense bf16 operations per clock per
    multiprocessor, its f32 units 128 FMAs (256 operations); HBM moves
    2 x memory clock x bus width. The floor takes the larger of these and
    the measured rates, so no kernel can be faster than its floor for
    want of a measured peak."""
    p = cp.cuda.runtime.getDeviceProperties(0)
    clock = p["clockRate"] * 1e3  # kHz
    sms = p["multiProcessorCount"]
    return {"clock_hz": clock, "memory_clock_hz": p["memoryClockRate"] * 1e3,
            "memory_bus_bits": p["memoryBusWidth"],
            "tensor_bf16_ops_per_s": sms * clock * 4096,
            "fp32_ops_per_s": sms * clock * 256,
            "dram_bytes_per_s": 2 * p["memoryClockRate"] * 1e3
            * p["memoryBusWidth"] / 8}


def main():
    out = pathlib.Path(os.environ.get("OUT", "gpu-work/device-out"))
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    bw, bw_all = bandwidth()
    tc, tc_all = tensor_peak()
    fp32 = fp32_peak()
    launch = launch_time()
    props = torch.cuda.get_device_properties(0)
    arch = architectural_peaks()
    device = {
        "device": props.name,
        "date": time.strftime("%Y-%m-%d"),
        "torch": torch.__version__,
        # The floor's constants: the larger of measured and architectural.
        "dram_bytes_per_s": max(bw, arch["dram_bytes_per_s"]),
        "tensor_bf16_ops_per_s": max(tc, arch["tensor_bf16_ops_per_s"]),
        "fp32_ops_per_s": max(fp32, arch["fp32_ops_per_s"]),
        "launch_s": launch,
        "measured": {"dram_bytes_per_s": bw, "dram_patterns": bw_all,
                     "tensor_bf16_ops_per_s": tc, "tensor_products": tc_all,
                     "fp32_ops_per_s": fp32},
        "architectural": arch,
        "l2_bytes": getattr(props, "L2_cache_size", 0),
        "multiprocessors": props.multi_processor_count,
        "command": "python3 bench/measure_device.py",
        "seconds": round(time.monotonic() - t0, 1),
    }
    (out / "device.json").write_text(json.dumps(device, indent=1) + "\n")
    print(json.dumps(device, indent=1))


if __name__ == "__main__":
    main()
