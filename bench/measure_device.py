"""Measures the constants of the time floor on the GPU it runs on.

The floor of a kernel (bench/floor_report.py) is
    max(DRAM bytes / bandwidth, arithmetic / peak rate) + launch time,
so every constant here is the best the device was seen to do: the highest
bandwidth of several access patterns, the highest product rate, the
shortest back-to-back launch of an empty kernel. A kernel measured below
its floor means a constant is not the device's best (or the bound is
wrong): the report flags it.

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
    """Seconds per launch of an empty kernel, launched back to back (the
    way the benchmarks time repeated launches)."""
    module = cp.RawModule(code=FMA)
    kernel = module.get_function("empty")
    count = 2000
    ms = best_ms(lambda: [kernel((1,), (32,), ()) for _ in range(count)],
                 reps=5)
    return ms * 1e-3 / count


def main():
    out = pathlib.Path(os.environ.get("OUT", "gpu-work/device-out"))
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    bw, bw_all = bandwidth()
    tc, tc_all = tensor_peak()
    fp32 = fp32_peak()
    launch = launch_time()
    props = torch.cuda.get_device_properties(0)
    device = {
        "device": props.name,
        "date": time.strftime("%Y-%m-%d"),
        "torch": torch.__version__,
        "dram_bytes_per_s": bw,
        "dram_patterns": bw_all,
        "tensor_bf16_ops_per_s": tc,
        "tensor_products": tc_all,
        "fp32_ops_per_s": fp32,
        "launch_s": launch,
        "l2_bytes": getattr(props, "L2_cache_size", 0),
        "multiprocessors": props.multi_processor_count,
        "command": "python3 bench/measure_device.py",
        "seconds": round(time.monotonic() - t0, 1),
    }
    (out / "device.json").write_text(json.dumps(device, indent=1) + "\n")
    print(json.dumps(device, indent=1))


if __name__ == "__main__":
    main()
