"""Measured time over the time floor, for every benchmarked case.

For each case of a benchmark report (bench_memory_bound.py's bench.json,
bench_gemm.py's gemm.json), the program the case compiled
(gpu-work/<job>/<case>/program.mlir, with the fusion its compile command
used) goes through `tang-opt --tang-traffic-bound="summary=..."`; per
function-level comprehension (one kernel each) the floor is

    max(DRAM bytes / bandwidth, arithmetic ops / peak rate) + launch time

with DRAM bytes = max(compulsory bytes, the certified LP bound at the L2
level), the peak the bf16 tensor rate for contractions of 16-bit operands
(or f32 ones compiled with tf32; the tf32 rate is lower, so this is safe)
and attention, the f32 rate otherwise, the arithmetic scaled by the share
of iterations an index mask keeps (causal attention: masked work may be
skipped; counted exactly by the analysis), and the constants of bench/devices/<device>.json
(bench/measure_device.py, measured on the device). A case's floor is the sum
over its kernels. Reported: measured / floor (>= 1 always; below 1 is a bug
in the bound or in the constants) and its distribution.

Run here, after fetching the reports:
    /usr/bin/python3 bench/floor_report.py --device bench/devices/h200.json \\
        --report bench=FILE/bench.json --report gemm=FILE/gemm.json \\
        [--out bench/results/DATE-h200-floor.md]
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
TANG_OPT = pathlib.Path(os.environ.get("TANG_OPT",
                                       ROOT / "build" / "bin" / "tang-opt"))


def on_tensor_cores(rec, tf32):
    """Whether the kernel of `rec` may run on tensor cores: a contraction
    of 16-bit operands (or of f32 ones compiled with tf32), or attention."""
    if rec["shape_class"] == "online_softmax":
        return rec["sixteen_bit"]
    return rec["shape_class"] == "matmul_like" and (rec["sixteen_bit"] or tf32)


def kernel_floors(program, fuse, tf32, device):
    """Per kernel of `program`: (seconds, record) after the fusion the
    compile used."""
    with tempfile.TemporaryDirectory() as tmp:
        summary = pathlib.Path(tmp) / "summary.json"
        passes = ["--tang-fuse", "--tang-online-softmax"] if fuse else []
        levels = f"l2={int(device['l2_bytes']) or 52428800}"
        r = subprocess.run(
            [str(TANG_OPT), str(program), *passes,
             f"--tang-traffic-bound=levels={levels} summary={summary}",
             "-o", "/dev/null"], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"tang-opt failed on {program}:\n{r.stderr}")
        records = json.loads(summary.read_text())
    floors = []
    for rec in records:
        lp = rec["lower_bound_elements"].get("l2", 0) * rec.get(
            "element_bytes", 1)
        dram = max(rec["compulsory_bytes"], lp)
        peak = (device["tensor_bf16_ops_per_s"] if on_tensor_cores(rec, tf32)
                else device["fp32_ops_per_s"])
        memory_s = dram / device["dram_bytes_per_s"]
        # Masked work (causal attention) may be skipped: only the share an
        # index mask keeps counts.
        compute_s = rec["kept_fraction"] * rec["arithmetic_ops"] / peak
        seconds = max(memory_s, compute_s) + device["launch_s"]
        floors.append((seconds, dict(rec, dram_bytes=dram, memory_s=memory_s,
                                     compute_s=compute_s)))
    return floors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", required=True, type=pathlib.Path)
    ap.add_argument("--report", action="append", required=True,
                    help="JOB=PATH: bench (memory-bound) or gemm report")
    ap.add_argument("--out", type=pathlib.Path)
    ap.add_argument("--work", type=pathlib.Path, default=ROOT / "gpu-work",
                    help="where the cases' programs are (gpu-work)")
    args = ap.parse_args()
    device = json.loads(args.device.read_text())

    rows = []
    for item in args.report:
        job, _, path = item.partition("=")
        report = json.loads(pathlib.Path(path).read_text())
        for case in report["cases"]:
            tang = case.get("tang") or {}
            if case.get("status", "ok") != "ok" or "ms" not in tang:
                continue
            work = args.work / job / case["case"]
            meta = json.loads((work / "meta.json").read_text())
            command = meta.get("compile", {}).get("command", "")
            fuse = "fuse=1" in command or "fuse=true" in command
            tf32 = "tf32=1" in command or "tf32=true" in command
            floors = kernel_floors(work / "program.mlir", fuse, tf32, device)
            floor_s = sum(s for s, _ in floors)
            measured_s = tang["ms"] * 1e-3
            best_s = tang.get("min_ms", tang["ms"]) * 1e-3
            bound = ("memory" if sum(r["memory_s"] for _, r in floors)
                     >= sum(r["compute_s"] for _, r in floors) else "compute")
            rows.append({"job": job, "case": case["case"],
                         "kernels": len(floors), "floor_ms": floor_s * 1e3,
                         "measured_ms": measured_s * 1e3,
                         "best_ms": best_s * 1e3,
                         "ratio": measured_s / floor_s,
                         "best_ratio": best_s / floor_s, "bound": bound,
                         "refused": sum("refused" in r for _, r in floors)})

    lines = [f"# Measured time over the time floor ({device['device']}, "
             f"{device['date']})", "",
             "Constants (bench/measure_device.py): DRAM "
             f"{device['dram_bytes_per_s'] / 1e12:.2f} TB/s, bf16 tensor "
             f"{device['tensor_bf16_ops_per_s'] / 1e12:.0f} TFLOP/s, f32 "
             f"{device['fp32_ops_per_s'] / 1e12:.1f} TFLOP/s, launch "
             f"{device['launch_s'] * 1e6:.2f} us.", "",
             "| job | case | kernels | floor (ms) | measured median (ms) | "
             "median / floor | min / floor | bound by | LP refused |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['job']} | {r['case']} | {r['kernels']} | "
                     f"{r['floor_ms']:.4f} | {r['measured_ms']:.4f} | "
                     f"{r['ratio']:.2f} | {r['best_ratio']:.2f} | "
                     f"{r['bound']} | {r['refused']} |")
    ratios = [1 / r["ratio"] for r in rows]
    violations = [r for r in rows if r["best_ratio"] < 1]
    if ratios:
        lines += ["", f"{len(rows)} cases, "
                  f"{sum(r['kernels'] for r in rows)} kernels. floor / "
                  f"measured: min {min(ratios):.2f}, median "
                  f"{statistics.median(ratios):.2f}, max {max(ratios):.2f}. "
                  f"Cases faster than their floor: {len(violations)}"
                  + (" (" + ", ".join(r["case"] for r in violations) + ")"
                     if violations else "") + "."]
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
