#!/usr/bin/env python3
"""Schedules chosen by measurement: tang's autotuner (docs/Tuning.md).

Two halves, one per machine:

  prepare (here; no GPU)
      For every case of the tensor-core suite (bench/prepare_gemm.py's
      CASES: GEMMs, fused epilogues, batched and transposed products, tf32,
      attention, the block), asks the compiler for each kernel's search
      space (`--tang-lower-cuda="... schedule-candidates=F"`: the
      heuristic's schedule first, then variants its emitter takes, ranked
      and pruned by the device model) and compiles one bundle per candidate
      through a one-entry tuning cache (`schedule-cache=`), the other
      kernels keeping the heuristic's schedules. Writes gpu-work/tune/
      <case>/tune.json and the bundles beside it.

  measure (the GPU machine)
      For every prepared case: fresh random inputs and the float64
      reference of bench/bench_gemm.py (every element, the suite's
      tolerance, NaN-poisoned outputs, two runs that must give the same
      bits); every candidate that passes is timed against the others in
      interleaved rounds (CUDA events, bench/harness.py). Writes
      $OUT/tune.json (every candidate's time, its model, and whether it was
      correct) and $OUT/tuning-cache.json: per kernel, the fastest correct
      candidate, which `schedule-cache=` replays (bench/tuning/ holds the
      shipped caches).

Usage:
  /usr/bin/python3 bench/tune.py prepare [--cases NAME ...] [--limit N]
  python3 bench/tune.py measure [--cases NAME ...] [--out DIR]
  /usr/bin/python3 bench/tune.py merge OUT/tuning-cache.json
      [--into bench/tuning/h200.json]   (adds or replaces entries by key)
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
TANG_OPT = ROOT / "build" / "bin" / "tang-opt"
WORK = ROOT / "gpu-work" / "tune"
CACHE = ROOT / "bench" / "tuning" / "h200.json"

#: Candidates per kernel (the heuristic's included).
DEFAULT_LIMIT = 12


def rel(p: Path) -> str:
    """`p` relative to the repository (the commands recorded read so),
    absolute outside it."""
    p = Path(p).resolve()
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)


def case_table():
    """{case: (kind name, params, purpose, kind)} of prepare_gemm."""
    import prepare_gemm
    return {name: (kind, params, purpose, prepare_gemm.KINDS[kind])
            for name, kind, params, purpose in prepare_gemm.CASES}


def pipeline_options(kind: dict, fmt: str = "bin") -> str:
    """The case's --tang-lower-cuda options as prepare_gemm compiles it
    (`fmt`: bin, a cubin by ptxas; isa, PTX that the driver compiles)."""
    return f"{kind.get('options', '')}fuse={kind.get('fuse', 1)} format={fmt}"


def run(cmd, timeout=900):
    t0 = time.monotonic()
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       timeout=timeout, cwd=ROOT)
    return r.returncode, r.stderr, time.monotonic() - t0


def prepare_case(name, kind_name, params, kind, limit, fmt="bin") -> dict:
    case = WORK / name
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir(parents=True)
    program = case / "program.mlir"
    program.write_text(kind["program"](**params))
    options = pipeline_options(kind, fmt)
    found = case / "candidates.json"
    rc, err, secs = run([TANG_OPT, rel(program),
                         f"--tang-lower-cuda={options} schedule-candidates="
                         f"{rel(found)} schedule-candidates-max={limit}",
                         "-o", os.devnull])
    meta = {"case": name, "kind": kind_name, "params": params,
            "inputs": kind["inputs"](**params),
            "output": kind["output"](**params),
            "dtype": kind.get("dtype", "bf16"),
            "flops": kind["flops"](**params), "options": options,
            "kernels": []}
    if rc != 0:
        meta["error"] = err.strip()[-2000:]
        return meta
    kernels = json.loads(found.read_text())["kernels"]
    for k, kernel in enumerate(kernels):
        if len(kernel["candidates"]) < 2:
            continue
        entry = {key: kernel[key] for key in ("structure", "chip", "sizes",
                                                "extents", "location",
                                                "kernel")}
        entry["candidates"] = []
        for c, cand in enumerate(kernel["candidates"]):
            cdir = case / f"k{k}c{c}"
            cdir.mkdir()
            cache = cdir / "cache.json"
            cache.write_text(json.dumps({"version": 1, "entries": [{
                **{key: kernel[key] for key in ("structure", "chip", "sizes",
                                                  "extents")},
                "schedule": cand["schedule"], "nested": cand["nested"],
                "program": name}]}, indent=1) + "\n")
            cmd = [TANG_OPT, rel(program),
                   f"--tang-lower-cuda={options} schedule-cache={rel(cache)} "
                   f"bundle={rel(cdir / 'bundle')}", "-o", os.devnull]
            rc, err, secs = run(cmd)
            ok = rc == 0 and (cdir / "bundle" / "manifest.json").exists() \
                and "is not taken" not in err
            entry["candidates"].append({
                "label": cand["label"], "model_s": cand["model_s"],
                "seed": cand.get("seed", ""),
                "schedule": cand["schedule"], "nested": cand["nested"],
                "dir": cdir.name, "compiled": ok,
                "compile_seconds": round(secs, 2),
                **({} if ok else {"error": err.strip()[-1500:]})})
            if not ok:
                shutil.rmtree(cdir / "bundle", ignore_errors=True)
        meta["kernels"].append(entry)
    return meta


def cmd_prepare(args) -> int:
    table = case_table()
    names = args.cases or [n for n in table if n != "block_small"]
    unknown = [n for n in names if n not in table]
    if unknown:
        print(f"unknown cases {unknown}; known: {', '.join(table)}",
              file=sys.stderr)
        return 2
    WORK.mkdir(parents=True, exist_ok=True)
    bad = 0
    for name in names:
        kind_name, params, _, kind = table[name]
        t0 = time.monotonic()
        meta = prepare_case(name, kind_name, params, kind, args.limit,
                            args.format)
        (WORK / name / "tune.json").write_text(json.dumps(meta, indent=1)
                                               + "\n")
        n = sum(len(k["candidates"]) for k in meta["kernels"])
        ok = sum(c["compiled"] for k in meta["kernels"]
                 for c in k["candidates"])
        bad += "error" in meta or ok < n
        print(f"  {name:40s} {len(meta['kernels'])} kernel(s), {ok}/{n} "
              f"candidates compiled, {time.monotonic() - t0:5.1f} s"
              + (f"\n    {meta['error'][-500:]}" if "error" in meta else ""),
              flush=True)
        for k in meta["kernels"]:
            for c in k["candidates"]:
                if not c["compiled"]:
                    print(f"    {c['label']}: {c['error'][-300:]}")
    return 1 if bad else 0


def measure_case(torch, F, tang_cuda, meta, args, deadline) -> dict:
    """Checks every candidate of every kernel on every element, then times
    the correct ones in interleaved rounds."""
    import harness
    import bench_gemm
    res = {"case": meta["case"], "kind": meta["kind"],
           "params": meta["params"], "kernels": []}
    out = torch.empty(meta["output"], device="cuda",
                      dtype=bench_gemm.dtype_of(torch, meta))
    ins = bench_gemm.inputs_for(torch, meta, 4321)
    ref = bench_gemm.full_reference(torch, F, meta["kind"], ins,
                                    meta["params"])
    tol = bench_gemm.tolerance(meta)
    for kernel in meta["kernels"]:
        kres = {key: kernel[key] for key in ("structure", "chip", "sizes",
                                               "extents", "location",
                                               "kernel")}
        kres["candidates"] = []
        contenders, bundles = [], []
        for cand in kernel["candidates"]:
            c = {key: cand[key] for key in ("label", "model_s", "seed",
                                            "schedule", "nested",
                                            "compiled")}
            kres["candidates"].append(c)
            if not cand["compiled"]:
                c["status"] = "compile failed"
                continue
            try:
                bundle = tang_cuda.Bundle(WORK / meta["case"] / cand["dir"]
                                          / "bundle")
            except Exception as e:
                c["status"] = "load failed: " + harness.short(e)
                continue
            bundles.append(bundle)

            def call(_k=0, bundle=bundle):
                bundle.run("main", *ins, outputs=[out])
                return out
            try:
                first, same = harness.poisoned_runs(torch, [out], call)
                check = harness.check_tensor(first[0], ref, tol, "gpu float64")
                del first
            except Exception as e:
                c["status"] = "run failed: " + harness.short(e)
                continue
            c["check"] = {k: check[k] for k in ("ok", "max_err", "bad")}
            c["deterministic"] = same
            if not check["ok"] or not same:
                c["status"] = "wrong" if not check["ok"] else \
                    "not deterministic"
                continue
            c["status"] = "ok"
            contenders.append((c["label"], call))
        if contenders:
            timed = harness.interleaved_rounds(
                torch, contenders, rounds=args.rounds,
                target_ms=args.target_ms, deadline=deadline)
            for c in kres["candidates"]:
                t = timed.get(c["label"])
                if t and "ms" in t:
                    c["ms"] = t["ms"]
                    c["rounds"] = t["rounds"]
                elif t:
                    c["status"] = "timing failed: " + t.get("error", "")
        for b in bundles:
            b.close()
        timed_ok = [c for c in kres["candidates"] if "ms" in c]
        if timed_ok:
            best = min(timed_ok, key=lambda c: c["ms"])
            heuristic = kres["candidates"][0]
            kres["best"] = best["label"]
            kres["best_ms"] = best["ms"]
            if "ms" in heuristic:
                kres["heuristic_ms"] = heuristic["ms"]
                kres["speedup_over_heuristic"] = heuristic["ms"] / best["ms"]
            # How far the traffic bound's tile and the model's choice are
            # from the measured best.
            lp = next((c for c in timed_ok
                       if "traffic-bound" in c.get("seed", "")), None)
            if lp:
                kres["lp"] = lp["label"]
                kres["lp_ms"] = lp["ms"]
            modelled = min((c for c in timed_ok if c["model_s"] > 0),
                           key=lambda c: c["model_s"], default=None)
            if modelled:
                kres["model_best"] = modelled["label"]
                kres["model_best_ms"] = modelled["ms"]
        res["kernels"].append(kres)
    del ref
    return res


def cache_entries(results, device) -> list:
    """The fastest correct candidate of every measured kernel."""
    entries = []
    for res in results:
        for k in res.get("kernels", []):
            if "best" not in k:
                continue
            best = next(c for c in k["candidates"] if c["label"] == k["best"])
            entries.append({
                "structure": k["structure"], "chip": k["chip"],
                "sizes": k["sizes"], "extents": k["extents"],
                "schedule": best["schedule"], "nested": best["nested"],
                "program": f"bench/prepare_gemm.py {res['case']} "
                           f"({k['location']})",
                "label": best["label"], "time_s": best["ms"] * 1e-3,
                "heuristic_time_s": (k["heuristic_ms"] * 1e-3
                                     if "heuristic_ms" in k else None),
                "candidates_timed": sum("ms" in c for c in k["candidates"]),
                "device": device})
    return entries


def cmd_measure(args) -> int:
    import torch
    import torch.nn.functional as F
    import harness
    import tang.cuda as tang_cuda
    out_dir = Path(args.out or os.environ.get("OUT", ROOT / "gpu-work" /
                                              "tune-out"))
    out_dir.mkdir(parents=True, exist_ok=True)
    metas = [json.loads(p.read_text())
             for p in sorted(WORK.glob("*/tune.json"))]
    if args.cases:
        metas = [m for m in metas if m["case"] in args.cases]
    if not metas:
        print(f"no prepared cases under {WORK} (run `bench/tune.py prepare` "
              "first)", file=sys.stderr)
        return 2
    t_start = time.monotonic()
    deadline = t_start + args.budget_s
    report = {"suite": "tune", "environment": harness.environment(torch),
              "git": harness.git_state(), "started": harness.now(),
              "cases": []}
    for meta in metas:
        if "error" in meta:
            report["cases"].append({"case": meta["case"],
                                    "status": "candidates failed",
                                    "note": meta["error"][-300:]})
            continue
        print(f"{meta['case']}", flush=True)
        try:
            res = measure_case(torch, F, tang_cuda, meta, args, deadline)
        except Exception as e:
            res = {"case": meta["case"], "status": "failed: " +
                   harness.short(e)}
        report["cases"].append(res)
        for k in res.get("kernels", []):
            cands = k["candidates"]
            print(f"  {k['kernel']:12s} {k['sizes']:40s} "
                  f"{sum(c.get('status') == 'ok' for c in cands)}/"
                  f"{len(cands)} correct; best {k.get('best')} "
                  f"{k.get('best_ms', float('nan')):.4f} ms, heuristic "
                  f"{k.get('heuristic_ms', float('nan')):.4f} ms", flush=True)
        (out_dir / "tune.json").write_text(json.dumps(report, indent=1))
    device = torch.cuda.get_device_name()
    cache = {"version": 1, "device": device, "git": report["git"],
             "command": "python3 bench/tune.py measure",
             "entries": cache_entries(report["cases"], device)}
    (out_dir / "tuning-cache.json").write_text(json.dumps(cache, indent=1)
                                               + "\n")
    report["seconds"] = round(time.monotonic() - t_start, 1)
    (out_dir / "tune.json").write_text(json.dumps(report, indent=1))
    print(f"{len(cache['entries'])} cache entries -> "
          f"{out_dir / 'tuning-cache.json'}")
    return 0


def merge(into: dict, new: dict) -> dict:
    """`into`'s entries with `new`'s added, replacing those of the same key
    (structure, chip, sizes)."""
    key = lambda e: (e["structure"], e["chip"], e["sizes"])
    fresh = {key(e) for e in new["entries"]}
    entries = [e for e in into.get("entries", []) if key(e) not in fresh]
    entries += new["entries"]
    entries.sort(key=key)
    return {**{k: v for k, v in into.items() if k != "entries"},
            "version": 1, "entries": entries}


def cmd_merge(args) -> int:
    new = json.loads(Path(args.cache).read_text())
    into_path = Path(args.into)
    into = json.loads(into_path.read_text()) if into_path.exists() else {
        "version": 1, "entries": []}
    merged = merge(into, new)
    into_path.parent.mkdir(parents=True, exist_ok=True)
    into_path.write_text(json.dumps(merged, indent=1) + "\n")
    print(f"{len(merged['entries'])} entries in {into_path}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="candidates and their bundles (here)")
    p.add_argument("--cases", nargs="*", help="prepare_gemm cases "
                   "(default: all but block_small)")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                   help="candidates per kernel, the heuristic's included")
    p.add_argument("--format", default="bin", choices=("bin", "isa"),
                   help="kernel images: cubin (ptxas here) or PTX")
    m = sub.add_parser("measure", help="check and time them (GPU)")
    m.add_argument("--cases", nargs="*")
    m.add_argument("--out", help="output directory (default $OUT)")
    m.add_argument("--rounds", type=int, default=5)
    m.add_argument("--target-ms", type=float, default=20.0,
                   help="time per candidate per round")
    m.add_argument("--budget-s", type=float, default=420.0,
                   help="stop adding rounds past this many seconds")
    g = sub.add_parser("merge", help="merge a measured cache into a "
                       "shipped one")
    g.add_argument("cache")
    g.add_argument("--into", default=str(CACHE))
    args = ap.parse_args()
    return {"prepare": cmd_prepare, "measure": cmd_measure,
            "merge": cmd_merge}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
