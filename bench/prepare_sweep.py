#!/usr/bin/python3
"""Adds thread-count variants of every case bench/prepare_bench.py wrote:
gpu-work/bench/<case>-t<N>/, compiled with `--tang-schedule="max-threads=M"`
(a row of N = M/2 threads) and timed without peers by
bench/bench_memory_bound.py. Run prepare_bench.py first."""

import json
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORK = ROOT / "gpu-work" / "bench"
TANG_OPT = ROOT / "build" / "bin" / "tang-opt"

for meta_path in sorted(WORK.glob("*/meta.json")):
    meta = json.loads(meta_path.read_text())
    if "-t" in meta["case"]:
        continue
    for max_threads in (256, 512):
        case = f"{meta['case']}-t{max_threads // 2}"
        out = WORK / case
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        r = subprocess.run(
            [TANG_OPT, meta_path.parent / "program.mlir", "--tang-fuse",
             "--tang-online-softmax", "--canonicalize",
             f"--tang-schedule=max-threads={max_threads}",
             f"--tang-lower-cuda=bundle={out / 'bundle'}", "-o", "/dev/null"],
            capture_output=True, text=True)
        variant = dict(meta, case=case, peers=[],
                       bundle=str((out / "bundle").relative_to(ROOT)))
        variant["compile"] = dict(meta["compile"], ok=r.returncode == 0,
                                  stderr=r.stderr)
        (out / "meta.json").write_text(json.dumps(variant, indent=1))
        print(f"[sweep] {case}: {'ok' if r.returncode == 0 else 'FAILED'}",
              file=sys.stderr if r.returncode else sys.stdout)
