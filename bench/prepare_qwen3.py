#!/usr/bin/python3
"""Compiles the Qwen3-8B decode step and prefill (python/tang/models/
qwen3.py, the Python front end) for CUDA, here, for bench/qwen3_decode.py
and bench/qwen3_prefill.py on the GPU: one bundle per batch size and per
prompt length, cached (a second run with nothing changed takes seconds),
listed with its compile time in gpu-work/qwen3/bundles.json.

Usage: /usr/bin/python3 bench/prepare_qwen3.py [--batches 1 4 16]
                              [--prefill 512 2048] [--capacity 4224]
                              [--variant NAME=OPTIONS]

--variant NAME=OPTIONS compiles the decode steps a second time with
OPTIONS added to --tang-lower-cuda, listed as decode<B>-NAME:
bench/qwen3_decode.py times them beside the default ones (tang_NAME),
e.g. --variant lanes=split-softmax-mma=off --prefill.
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
    ap.add_argument("--batches", type=int, nargs="*", default=[1, 4, 16],
                    help="decode batch sizes (default 1 4 16)")
    ap.add_argument("--prefill", type=int, nargs="*", default=[512, 2048],
                    help="prefill prompt lengths (default 512 2048)")
    ap.add_argument("--capacity", type=int, default=4224,
                    help="KV cache positions (default 4224: context 4096 "
                         "plus 128 new tokens)")
    ap.add_argument("--tensor-core-batch", type=int, default=16,
                    help="from this batch on, the decode step's products "
                         "take bf16 activations, tensor-core operands "
                         "(default 16)")
    ap.add_argument("--varlen", type=int, nargs="*", default=[],
                    help="also decode steps of sequences at positions of "
                    "their own (decode_step(varlen=True)) at these batch "
                    "sizes, listed as decode<B>-varlen (bench/"
                    "qwen3_varlen.py)")
    ap.add_argument("--variant", metavar="NAME=OPTIONS",
                    help="also decode steps with these --tang-lower-cuda "
                    "options, listed as decode<B>-NAME")
    args = ap.parse_args()
    variant = None
    if args.variant:
        vname, sep, voptions = args.variant.partition("=")
        if not sep or not vname or not voptions:
            ap.error("--variant takes NAME=OPTIONS")
        variant = (vname, voptions)
    WORK.mkdir(parents=True, exist_ok=True)
    # The bundles go where the GPU machine gets them (gpu-work is carried).
    os.environ["TANG_CACHE_DIR"] = str(WORK / "cache")
    sys.path.insert(0, str(ROOT / "python"))
    import tang
    from tang.models import qwen3

    # Bundles prepared earlier at the same capacity stay listed.
    listing = {"capacity": args.capacity, "bundles": {}}
    old = WORK / "bundles.json"
    if old.exists():
        earlier = json.loads(old.read_text())
        if earlier.get("capacity") == args.capacity:
            listing["bundles"] = {
                n: b for n, b in earlier.get("bundles", {}).items()
                if (ROOT / b["dir"] / "done").exists()}
    def operands(b):
        return "bf16" if b >= args.tensor_core_batch else None

    def step(b):
        return qwen3.decode_step(
            qwen3.QWEN3_8B, b, args.capacity,
            operands=qwen3.QWEN3_8B.dtype if operands(b) else None)

    jobs = [(f"decode{b}", {"batch": b, "operands": operands(b)},
             lambda b=b: step(b), "") for b in args.batches]
    if variant:
        jobs += [(f"decode{b}-{variant[0]}",
                  {"batch": b, "operands": operands(b),
                   "variant": variant[0], "options": variant[1]},
                  lambda b=b: step(b), variant[1]) for b in args.batches]
    jobs += [(f"decode{b}-varlen",
              {"batch": b, "operands": operands(b), "varlen": True},
              lambda b=b: qwen3.decode_step(
                  qwen3.QWEN3_8B, b, args.capacity, varlen=True,
                  operands=qwen3.QWEN3_8B.dtype if operands(b) else None),
              "") for b in args.varlen]
    jobs += [(f"prefill{n}", {"tokens": n},
              lambda n=n: qwen3.prefill(qwen3.QWEN3_8B, n, args.capacity),
              "") for n in args.prefill]
    for name, what, build, options in jobs:
        t0 = time.time()
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
        print(f"[prepare_qwen3] {name}: compiling (Qwen3-8B shapes, "
              f"{qwen3.QWEN3_8B.layers} layers; minutes when not cached)",
              flush=True)
        compiled = tang.compile(build(), target="cuda", options=options)
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
            **what, **json.loads(timing.read_text()), "wall_s": seconds}
        print(f"[prepare_qwen3] {name}: {seconds:.1f} s ({cpu:.1f} s CPU)",
              flush=True)
    (WORK / "bundles.json").write_text(json.dumps(listing, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
