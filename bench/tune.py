#!/usr/bin/env python3
"""Schedules chosen by measurement: tang's autotuner (docs/Tuning.md).

Two halves, one per machine:

  prepare (here; no GPU)
      For every case of the tensor-core suite (bench/prepare_gemm.py's
      CASES: GEMMs, fused epilogues, batched and transposed products, tf32,
      attention, the block) and the memory-bound suite (bench/
      prepare_bench.py: norms, softmax, GEMV), asks the compiler for each
      kernel's search space (`--tang-lower-cuda="... schedule-candidates=F"`:
      the heuristic's schedule first, then variants its emitter takes,
      ranked and pruned by the device model, the traffic bound's LP tile
      among them). Where the candidates' accumulation orders differ (row
      kernels), each runs through the precision emulator on a reduced
      instance (64 rows of the case's length; `tang-run
      --precision-report`) and one past the GPU check's tolerance is
      rejected before it is measured. The others are compiled one bundle
      each through a one-entry tuning cache (`schedule-cache=`), the
      program's other kernels keeping the heuristic's schedules. Writes
      gpu-work/tune/<case>/tune.json and the bundles beside it.

  measure (the GPU machine)
      For every prepared case: fresh random inputs and the float64
      reference of the case's suite (bench_gemm.py, bench_memory_bound.py;
      every element, the suite's tolerance, NaN-poisoned outputs, two runs
      that must give the same bits); every candidate that passes is timed
      against the others in interleaved rounds (CUDA events, bench/
      harness.py). Writes $OUT/tune.json (every candidate's time, its model,
      its emulated error, whether it was correct; per kernel the heuristic's,
      the LP tile's and the best modelled candidate's times beside the
      best) and $OUT/tuning-cache.json: per kernel, the fastest correct
      candidate, which `schedule-cache=` replays (bench/tuning/ holds the
      shipped caches).

Usage:
  /usr/bin/python3 bench/tune.py prepare [--suites gemm memory]
      [--cases NAME ...] [--limit N] [--format bin|isa]
  python3 bench/tune.py measure [--cases NAME ...] [--out DIR]
  /usr/bin/python3 bench/tune.py merge OUT/tuning-cache.json
      [--into bench/tuning/sm_90a.json]   (adds or replaces entries by key)
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
TANG_OPT = ROOT / "build" / "bin" / "tang-opt"
TANG_RUN = ROOT / "build" / "bin" / "tang-run"
WORK = ROOT / "gpu-work" / "tune"
CACHE = ROOT / "bench" / "tuning" / "sm_90a.json"

#: Candidates per kernel (the heuristic's included).
DEFAULT_LIMIT = 12


def rel(p: Path) -> str:
    """`p` relative to the repository (the commands recorded read so),
    absolute outside it."""
    p = Path(p).resolve()
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)


class GemmSuite:
    """The tensor-core suite (bench/prepare_gemm.py, bench/bench_gemm.py)."""
    name = "gemm"

    def cases(self):
        """{case: (kind name, params)}, all but the block's small check."""
        import prepare_gemm
        return {name: (kind, params)
                for name, kind, params, _ in prepare_gemm.CASES
                if name != "block_small"}

    def kind(self, kind_name):
        import prepare_gemm
        return prepare_gemm.KINDS[kind_name]

    def program(self, kind_name, params):
        return self.kind(kind_name)["program"](**params)

    def options(self, kind_name, fmt="bin"):
        """--tang-lower-cuda options as prepare_gemm compiles the case."""
        kind = self.kind(kind_name)
        return (f"{kind.get('options', '')}fuse={kind.get('fuse', 1)} "
                f"format={fmt}")

    def meta(self, kind_name, params):
        kind = self.kind(kind_name)
        return {"inputs": kind["inputs"](**params),
                "output": kind["output"](**params),
                "dtype": kind.get("dtype", "bf16"),
                "flops": kind["flops"](**params)}

    def small(self, kind_name, params):
        """A reduced instance for the precision emulator: none (the
        tensor-core kernels' candidates share one accumulation order)."""
        return None

    # The GPU's half.
    def gpu_inputs(self, torch, meta, seed):
        import bench_gemm
        return bench_gemm.inputs_for(torch, meta, seed)

    def gpu_reference(self, torch, F, meta, ins):
        import bench_gemm
        return bench_gemm.full_reference(torch, F, meta["kind"], ins,
                                         meta["params"])

    def tolerance(self, meta):
        import bench_gemm
        return bench_gemm.tolerance(meta)

    def out_dtype(self, torch, meta):
        import bench_gemm
        return bench_gemm.dtype_of(torch, meta)


class MemorySuite:
    """The memory-bound suite (bench/prepare_bench.py,
    bench/bench_memory_bound.py): norms, softmax, GEMV."""
    name = "memory"

    def cases(self):
        import prepare_bench
        return {name: (kind, params)
                for name, kind, params in prepare_bench.CASES}

    def kind(self, kind_name):
        import prepare_bench
        return prepare_bench.KINDS[kind_name]

    def program(self, kind_name, params):
        return self.kind(kind_name).program(**params)

    def options(self, kind_name, fmt="bin"):
        return f"fuse=1 format={fmt}"

    def meta(self, kind_name, params):
        kind = self.kind(kind_name)
        return {"inputs": [i["shape"] for i in kind.inputs(**params)],
                "output": kind.outputs(**params)[0]["shape"],
                "dtype": "bf16", "out_dtype": kind.out_dtype,
                "flops": kind.flops(**params)}

    def small(self, kind_name, params):
        """The same rows' length, 64 of them: the error of a row's
        reduction does not depend on how many rows there are."""
        if "rows" not in params:
            return None
        return dict(params, rows=64)

    def gpu_inputs(self, torch, meta, seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        return [torch.randn(s, generator=g, device="cuda",
                            dtype=torch.bfloat16) for s in meta["inputs"]]

    def gpu_reference(self, torch, F, meta, ins):
        import bench_memory_bound
        return bench_memory_bound.reference(torch, F, meta["kind"],
                                            meta["params"], ins)

    def tolerance(self, meta):
        import bench_memory_bound
        return bench_memory_bound.tolerances(meta["kind"], meta["params"])[0]

    def out_dtype(self, torch, meta):
        return {"bf16": torch.bfloat16, "f32": torch.float32}[
            meta.get("out_dtype", "bf16")]


SUITES = {s.name: s for s in (GemmSuite(), MemorySuite())}


def budget_of(tol) -> float:
    """The precision emulator's budget for a candidate: the GPU check's
    tolerance (harness.Tolerance) as a fraction of the output's largest
    element (rtol plus atol over the RMS, which the largest element
    bounds)."""
    return tol.rtol + tol.atol_over_scale()


def run(cmd, timeout=900, capture="stderr"):
    """(exit status, stderr or with capture="both" stdout + stderr,
    seconds)."""
    t0 = time.monotonic()
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       timeout=timeout, cwd=ROOT)
    text = r.stdout + r.stderr if capture == "both" else r.stderr
    return r.returncode, text, time.monotonic() - t0


def compile_candidate(program, options, kernel, cand, cdir, name,
                      bundle=False, flags=()):
    """Compiles `program` with `cand` as `kernel`'s schedule (a one-entry
    tuning cache in `cdir`; with `bundle`, the bundle in cdir/bundle);
    (ok, stderr, seconds)."""
    cache = cdir / "cache.json"
    cache.write_text(json.dumps({"version": 1, "entries": [{
        **{key: kernel[key] for key in ("structure", "chip", "sizes",
                                          "extents")},
        "schedule": cand["schedule"], "nested": cand["nested"],
        "program": name}]}, indent=1) + "\n")
    pipeline = f"{options} schedule-cache={rel(cache)}"
    if bundle:
        pipeline += f" bundle={rel(cdir / 'bundle')}"
    cmd = [TANG_OPT, rel(program), f"--tang-lower-cuda={pipeline}", *flags,
           "-o", os.devnull]
    rc, err, secs = run(cmd)
    if bundle and rc == 0 and not (cdir / "bundle" / "manifest.json").exists():
        return False, err + "\nno bundle written", secs
    return rc == 0 and "is not taken" not in err, err, secs


def candidates_of(program, options, out, limit):
    """The kernels and their candidates (`schedule-candidates=`)."""
    rc, err, _ = run([TANG_OPT, rel(program),
                      f"--tang-lower-cuda={options} schedule-candidates="
                      f"{rel(out)} schedule-candidates-max={limit}",
                      "-o", os.devnull])
    if rc != 0:
        raise RuntimeError(err.strip()[-2000:])
    return json.loads(out.read_text())["kernels"]


def emulate_candidates(suite, name, kind_name, params, entry, case, budget):
    """The precision emulator on a reduced instance (suite.small) of the
    case, each candidate's schedule put on its kernel: the error against
    float64 (`tang-run --precision-report`), and whether it is within
    `budget`. Fills each candidate's "precision"."""
    small = suite.small(kind_name, params)
    if small is None:
        return
    sdir = case / "small"
    sdir.mkdir(exist_ok=True)
    program = sdir / "program.mlir"
    program.write_text(suite.program(kind_name, small))
    options = suite.options(kind_name, "isa")
    kernels = candidates_of(program, options, sdir / "candidates.json", 1)
    # The same kernel at the small sizes: the same structure.
    twin = next((k for k in kernels
                 if k["structure"] == entry["structure"]), None)
    if twin is None:
        return
    for c, cand in enumerate(entry["candidates"]):
        cdir = sdir / f"c{c}"
        cdir.mkdir(exist_ok=True)
        ok, err, _ = compile_candidate(
            program, options, twin, cand, cdir, name,
            flags=("--mlir-print-ir-after=tang-schedule",))
        record = {"instance": small}
        if not ok:
            record["status"] = "not emulated: " + err.strip()[-300:]
            cand["precision"] = record
            continue
        # The IR after the schedule: the module the dump printed.
        text = err[err.index("module"):] if "module" in err else ""
        scheduled = cdir / "scheduled.mlir"
        scheduled.write_text(text)
        rc, out, _ = run([TANG_RUN, rel(scheduled), "--precision-report",
                          f"--precision-budget={budget}"], capture="both")
        m = re.search(r"largest error (\S+) = (\S+) of its largest element, "
                      r"RMS (\S+) of its RMS", out)
        record.update(budget=budget, within=rc == 0,
                      error=float(m.group(2)) if m else None,
                      rms=float(m.group(3)) if m else None)
        if rc != 0 and not m:
            record["status"] = "emulator failed: " + out.strip()[-300:]
        cand["precision"] = record


def prepare_case(suite, name, kind_name, params, limit, fmt="bin") -> dict:
    case = WORK / name
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir(parents=True)
    program = case / "program.mlir"
    program.write_text(suite.program(kind_name, params))
    options = suite.options(kind_name, fmt)
    meta = {"case": name, "suite": suite.name, "kind": kind_name,
            "params": params, **suite.meta(kind_name, params),
            "options": options, "kernels": []}
    try:
        kernels = candidates_of(program, options, case / "candidates.json",
                                limit)
    except RuntimeError as e:
        meta["error"] = str(e)
        return meta
    budget = budget_of(suite.tolerance(meta))
    for k, kernel in enumerate(kernels):
        if len(kernel["candidates"]) < 2:
            continue
        entry = {key: kernel[key] for key in ("structure", "chip", "sizes",
                                                "extents", "location",
                                                "kernel")}
        entry["candidates"] = [
            {"label": c["label"], "model_s": c["model_s"],
             "seed": c.get("seed", ""), "schedule": c["schedule"],
             "nested": c["nested"]} for c in kernel["candidates"]]
        emulate_candidates(suite, name, kind_name, params, entry, case,
                           budget)
        for c, cand in enumerate(entry["candidates"]):
            cdir = case / f"k{k}c{c}"
            cdir.mkdir()
            cand["dir"] = cdir.name
            if not cand.get("precision", {}).get("within", True):
                # Past the budget: rejected before it is measured.
                cand.update(compiled=False, error="past the precision budget")
                continue
            ok, err, secs = compile_candidate(program, options, kernel, cand,
                                              cdir, name, bundle=True)
            if not ok:
                shutil.rmtree(cdir / "bundle", ignore_errors=True)
            cand.update(compiled=ok, compile_seconds=round(secs, 2))
            if not ok:
                cand["error"] = err.strip()[-1500:]
        meta["kernels"].append(entry)
    return meta


def case_table(suites=None):
    """{case: (suite, kind name, params)} of the suites named (all)."""
    table = {}
    for name in suites or SUITES:
        suite = SUITES[name]
        for case, (kind, params) in suite.cases().items():
            table[case] = (suite, kind, params)
    return table


def cmd_prepare(args) -> int:
    table = case_table(args.suites)
    names = args.cases or list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        print(f"unknown cases {unknown}; known: {', '.join(table)}",
              file=sys.stderr)
        return 2
    WORK.mkdir(parents=True, exist_ok=True)
    bad = 0
    for name in names:
        suite, kind_name, params = table[name]
        t0 = time.monotonic()
        meta = prepare_case(suite, name, kind_name, params, args.limit,
                            args.format)
        (WORK / name / "tune.json").write_text(json.dumps(meta, indent=1)
                                               + "\n")
        cands = [c for k in meta["kernels"] for c in k["candidates"]]
        ok = sum(c["compiled"] for c in cands)
        over = sum(c.get("error") == "past the precision budget"
                   for c in cands)
        failed = [c for c in cands if not c["compiled"] and
                  c.get("error") != "past the precision budget"]
        bad += "error" in meta or bool(failed)
        print(f"  {name:40s} {len(meta['kernels'])} kernel(s), {ok}/"
              f"{len(cands)} candidates compiled"
              + (f", {over} past the precision budget" if over else "")
              + f", {time.monotonic() - t0:5.1f} s"
              + (f"\n    {meta['error'][-500:]}" if "error" in meta else ""),
              flush=True)
        for c in failed:
            print(f"    {c['label']}: {c['error'][-300:]}")
    return 1 if bad else 0


def measure_case(torch, F, tang_cuda, meta, args, deadline) -> dict:
    """Checks every candidate of every kernel on every element, then times
    the correct ones in interleaved rounds."""
    import harness
    suite = SUITES[meta["suite"]]
    res = {"case": meta["case"], "suite": meta["suite"], "kind": meta["kind"],
           "params": meta["params"], "kernels": []}
    out = torch.empty(meta["output"], device="cuda",
                      dtype=suite.out_dtype(torch, meta))
    ins = suite.gpu_inputs(torch, meta, 4321)
    ref = suite.gpu_reference(torch, F, meta, ins)
    tol = suite.tolerance(meta)
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
            if "precision" in cand:
                c["precision"] = cand["precision"]
            kres["candidates"].append(c)
            if not cand["compiled"]:
                c["status"] = ("past the precision budget"
                               if cand.get("error") ==
                               "past the precision budget"
                               else "compile failed")
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
                "program": f"bench/tune.py {res.get('suite', 'gemm')} "
                           f"{res['case']} ({k['location']})",
                "label": best["label"], "time_s": best["ms"] * 1e-3,
                "heuristic_time_s": (k["heuristic_ms"] * 1e-3
                                     if "heuristic_ms" in k else None),
                "candidates_timed": sum("ms" in c for c in k["candidates"]),
                "device": device})
    return entries


def write_cache(out_dir: Path, report: dict, torch) -> dict:
    """$OUT/tuning-cache.json from the cases measured so far (rewritten
    after every case: a run cut short keeps what it measured)."""
    device = torch.cuda.get_device_name()
    cache = {"version": 1, "device": device, "git": report["git"],
             "command": "python3 bench/tune.py measure",
             "entries": cache_entries(report["cases"], device)}
    (out_dir / "tuning-cache.json").write_text(json.dumps(cache, indent=1)
                                               + "\n")
    return cache


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
    # One-kernel products and row kernels first, attention next, the
    # block's eight kernels last: a run cut short by its budget keeps the
    # most entries.
    metas.sort(key=lambda m: ({"block": 2}.get(m.get("kind"), 1 if m.get(
        "kind", "").startswith("attention") else 0), m["case"]))
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
        if time.monotonic() > deadline:
            report["cases"].append({"case": meta["case"],
                                    "status": "skipped: budget"})
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
        cache = write_cache(out_dir, report, torch)
    cache = write_cache(out_dir, report, torch)
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
    p.add_argument("--suites", nargs="*", choices=sorted(SUITES),
                   help="the suites whose cases to prepare (default: all)")
    p.add_argument("--cases", nargs="*", help="cases of those suites "
                   "(default: all)")
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
