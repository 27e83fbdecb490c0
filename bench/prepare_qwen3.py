#!/usr/bin/python3
"""Compiles the Qwen3-8B decode step (python/tang/models/qwen3.py, the
Python front end) for CUDA, here, for bench/qwen3_decode.py on the GPU:
one bundle per batch size, cached (a second run with nothing changed
takes seconds), listed with its compile time in gpu-work/qwen3/bundles.json.

Usage: /usr/bin/python3 bench/prepare_qwen3.py [--batches 1 16]
                                               [--capacity 4224]
"""

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "gpu-work" / "qwen3"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, nargs="*", default=[1])
    ap.add_argument("--capacity", type=int, default=4224,
                    help="KV cache positions (default 4224: context 4096 "
                         "plus 128 new tokens)")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    # The bundles go where the GPU machine gets them (gpu-work is carried).
    os.environ["TANG_CACHE_DIR"] = str(WORK / "cache")
    sys.path.insert(0, str(ROOT / "python"))
    import tang
    from tang.models import qwen3

    listing = {"capacity": args.capacity, "bundles": {}}
    for batch in args.batches:
        name = f"decode{batch}"
        t0 = time.time()
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
        print(f"[prepare_qwen3] {name}: compiling (Qwen3-8B shapes, "
              f"{qwen3.QWEN3_8B.layers} layers; minutes when not cached)",
              flush=True)
        fn = qwen3.decode_step(qwen3.QWEN3_8B, batch, args.capacity)
        compiled = tang.compile(fn, target="cuda")
        seconds = time.time() - t0
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - cpu0
        # The compile time of the last build, not of a cache hit: wall
        # time, and the compiler's CPU time (the same on a busy machine).
        timing = compiled.directory / "compile_s.json"
        if seconds > 5 or not timing.exists():
            timing.write_text(json.dumps({"compile_s": seconds,
                                          "compile_cpu_s": cpu}))
        listing["bundles"][name] = {
            "dir": str(compiled.directory.relative_to(ROOT)),
            "batch": batch, **json.loads(timing.read_text()),
            "wall_s": seconds}
        print(f"[prepare_qwen3] {name}: {seconds:.1f} s ({cpu:.1f} s CPU)",
              flush=True)
    (WORK / "bundles.json").write_text(json.dumps(listing, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
