#!/usr/bin/env python3
"""Times tang's memory-bound kernels against their peers (runs on the GPU).

For every gpu-work/bench/<case>/meta.json that bench/prepare_bench.py wrote
(RMSNorm, row softmax, LayerNorm, GEMV; bf16), in one process on one GPU:

1. builds random normal bf16 inputs (fixed seeds; never zeros);
2. runs the tang bundle through python/tang (tang.cuda) into outputs poisoned
   with NaN and checks it against a float64 PyTorch reference, on those
   inputs and on a fresh draw: ||out - ref|| / ||ref|| <= 2e-2, no NaN, and
   two runs bit-identical (a moving result is a race). An incorrect kernel
   is reported, never timed;
3. times it with CUDA events (median over many repeats after warm-up; the
   stream is held by a short device sleep while the repeats are enqueued,
   so host launch overhead stays out of the intervals), rotating among
   several input sets when one set would fit in L2;
4. times the peers the same way on the same inputs (eager PyTorch,
   torch.compile of the same function, cuBLAS through F.linear), checking
   them against the same reference;
5. measures the device-to-device copy rate (a 2 GiB copy, bytes read +
   written) at the start and at the end of the run; the larger one is the
   copy rate the targets are fractions of.

Prints a table and writes $OUT/bench.md and $OUT/bench.json (default
gpu-work/bench-out/ when $OUT is unset), rewritten after every case so that
a run cut short still leaves its results.

Usage (on the GPU machine, from the repository root, gpu-work/ carried):
    python3 bench/bench_memory_bound.py [--cases NAME ...]
        [--compile-mode default|max-autotune-no-cudagraphs] [--reps N]
"""

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
WORK = ROOT / "gpu-work" / "bench"

#: Largest ||out - ref|| / ||ref|| accepted for a bf16 output.
REL_TOL = 2e-2
#: Size of the device-to-device copy that measures the copy rate.
COPY_BYTES = 2 << 30
#: A working set under this many L2 sizes is rotated among input sets ...
ROTATE_BELOW_L2 = 2
#: ... enough of them to cover this many L2 sizes (at most MAX_SETS).
ROTATE_COVER_L2 = 4
MAX_SETS = 32
#: Host time budgeted per repeat for enqueueing (the device sleeps this long
#: per repeat, clamped to [10, 100] ms, before the timed repeats start).
ENQUEUE_MS_PER_REP = 0.2
#: Each timed measurement takes about this long at most (fewer repeats for
#: slow kernels, never fewer than MIN_REPS nor more than --reps) ...
MEASURE_BUDGET_MS = 4000.0
MIN_REPS = 3
#: ... after about this much warm-up (at least one call, at most --warmup).
WARMUP_BUDGET_MS = 500.0
#: Seeds: input set k uses SEED + k; the fresh correctness draw FRESH_SEED.
SEED = 1234
FRESH_SEED = 98765


# ---------------------------------------------------------------------------
# Peers and references, per kind. Each takes the inputs in meta.json's order
# (bf16 CUDA tensors) and the case's params; references get float64 tensors.
# ---------------------------------------------------------------------------


def peer_functions(torch, F, kind: str, params: dict) -> dict:
    """{peer id: function(*inputs) -> output} for the peers meta.json names.
    The ids 'compile' are filled in by the caller (torch.compile of
    'eager')."""
    if kind == "rmsnorm":
        eps, cols = params["eps"], params["cols"]

        def eager(x, w):
            # The anchors' expression (shared/anchors/h200_baselines.py).
            return x * torch.rsqrt(
                x.float().pow(2).mean(-1, keepdim=True) + eps).to(x.dtype) * w

        return {"eager": eager,
                "f_rms_norm": lambda x, w: F.rms_norm(x, (cols,), w, eps)}
    if kind == "softmax":
        return {"eager": lambda x: torch.softmax(x, -1)}
    if kind == "layernorm":
        eps, cols = params["eps"], params["cols"]
        return {"eager": lambda x, g, b: F.layer_norm(x, (cols,), g, b, eps)}
    if kind == "gemv":
        return {"linear_1d": lambda W, x: F.linear(x, W),
                "linear_2d": lambda W, x: F.linear(x.view(1, -1), W)}
    raise ValueError(f"unknown kind '{kind}'")


def reference(torch, F, kind: str, params: dict, inputs):
    """The float64 reference output of `kind` on `inputs` (bf16, upcast)."""
    d = [t.double() for t in inputs]
    if kind == "rmsnorm":
        x, w = d
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)
                               + params["eps"]) * w
    if kind == "softmax":
        return torch.softmax(d[0], -1)
    if kind == "layernorm":
        x, g, b = d
        return F.layer_norm(x, (params["cols"],), g, b, params["eps"])
    if kind == "gemv":
        W, x = d
        return W @ x
    raise ValueError(f"unknown kind '{kind}'")


# ---------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------


def rel_err(torch, out, ref) -> float:
    """||out - ref|| / ||ref|| in float64; inf on NaN/inf or a shape
    mismatch."""
    out = out.reshape(ref.shape) if out.numel() == ref.numel() else None
    if out is None or not bool(torch.isfinite(out).all()):
        return math.inf
    return float((out.double() - ref).norm() / ref.norm())


def time_ms(torch, fn, nsets: int, reps: int, warmup: int) -> list:
    """The times in ms of `reps` calls fn(k), k rotating over range(nsets),
    each between its own pair of CUDA events, after `warmup` calls."""
    for i in range(warmup):
        fn(i % nsets)
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    # Hold the device while the host enqueues the repeats, so that every
    # interval measures device time and not Python's launch overhead.
    sleep_ms = min(100.0, max(10.0, reps * ENQUEUE_MS_PER_REP))
    if hasattr(torch.cuda, "_sleep"):
        torch.cuda._sleep(int(sleep_ms * 1e-3 * 2e9))  # ~2 GHz SM clock
    for i in range(reps):
        starts[i].record()
        fn(i % nsets)
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def plan(est_ms: float, args) -> tuple:
    """(repeats, warm-up calls) for a function that takes about `est_ms`:
    --reps and --warmup, fewer when that would take long."""
    est_ms = max(est_ms, 1e-3)
    reps = max(MIN_REPS, min(args.reps, int(MEASURE_BUDGET_MS / est_ms)))
    warmup = max(1, min(args.warmup, int(WARMUP_BUDGET_MS / est_ms)))
    return reps, warmup


def probe_ms(torch, fn) -> float:
    """The time in ms of one call fn(0), between CUDA events."""
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record()
    fn(0)
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b)


def poisoned_runs(torch, written, step, times=2) -> list:
    """Runs step() `times` times, every tensor of `written` filled with NaN
    before each (so every element must be written); the copies of `written`
    after each run."""
    runs = []
    for _ in range(times):
        for t in written:
            t.fill_(float("nan"))
        step()
        torch.cuda.synchronize()
        runs.append([t.clone() for t in written])
    return runs


def load_metas(work, cases, prepare: str, key: str) -> list:
    """The meta.json of every case under `work` (only `cases` when given),
    sorted by meta[key]; exits with a hint to run `prepare` (and carry the
    folder) when there is none."""
    work = Path(work)
    metas = [json.loads(p.read_text()) for p in sorted(work.glob("*/meta.json"))]
    if cases:
        metas = [m for m in metas if m["case"] in cases]
    if not metas:
        sys.exit(f"no meta.json under {work}: run {prepare} and carry "
                 f"{work.relative_to(ROOT) if work.is_relative_to(ROOT) else work}")
    return sorted(metas, key=lambda m: m[key])


def profile_kernels(torch, fn, calls=3, top=10) -> list:
    """The `top` kernels of `calls` calls of fn() by GPU time, as
    [{"kernel", "ms" per call}] (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return [{"kernel": e.key, "ms": e.device_time_total / (calls * 1e3)}
            for e in sorted(prof.key_averages(),
                            key=lambda e: -e.device_time_total)][:top]


def summary(times: list) -> dict:
    """Median, min, 10th and 90th percentile (ms) of `times`."""
    t = sorted(times)
    pick = lambda q: t[min(len(t) - 1, int(q * len(t)))]
    return {"ms": statistics.median(t), "min_ms": t[0], "p10_ms": pick(0.1),
            "p90_ms": pick(0.9), "reps": len(t)}


def copy_rate(torch, reps: int) -> dict:
    """The device-to-device copy rate: COPY_BYTES copied, bytes read plus
    bytes written over the median time."""
    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda")
    src.random_()  # random bytes, not zeros
    dst = torch.empty_like(src)
    s = summary(time_ms(torch, lambda k: dst.copy_(src), 1, reps, 3))
    ok = bool(torch.equal(src[-4096:], dst[-4096:]))
    src = dst = None  # free the 4 GiB
    torch.cuda.empty_cache()
    s.update(bytes=2 * COPY_BYTES, gbps=2 * COPY_BYTES / s["ms"] / 1e6,
             copied_ok=ok)
    return s


# ---------------------------------------------------------------------------
# One case
# ---------------------------------------------------------------------------


def run_case(torch, F, tang_cuda, meta: dict, args, l2_bytes: int,
             deadline: float) -> dict:
    """Checks and times tang's kernel and the peers on one case. Returns the
    case's result (status 'ok', 'compile failed', 'no bundle',
    'load failed', 'run failed' or 'incorrect')."""
    kind, params = meta["kind"], meta["params"]
    res = {"case": meta["case"], "kind": kind, "params": params,
           "bytes_min": meta["bytes_min"], "flops": meta["flops"],
           "target": meta["target"]["min_fraction_of_copy_rate"],
           "status": "ok", "note": "", "tang": None, "peers": [],
           "compile": {k: meta["compile"].get(k) for k in
                       ("ok", "launches", "temporaries", "returncode")}}
    dev = "cuda"
    bf16 = torch.bfloat16

    # Inputs: one set, or several when one set would sit in L2.
    ws = meta["bytes_min"]
    nsets = 1
    if ws < ROTATE_BELOW_L2 * l2_bytes:
        nsets = min(MAX_SETS, max(2, math.ceil(ROTATE_COVER_L2 * l2_bytes
                                                / ws)))
    res["input_sets"] = nsets

    def draw(seed):
        g = torch.Generator(device=dev).manual_seed(seed)
        return [torch.randn(s["shape"], generator=g, device=dev, dtype=bf16)
                for s in meta["inputs"]]

    sets = [draw(SEED + k) for k in range(nsets)]
    out_shapes = [s["shape"] for s in meta["outputs"]]
    assert len(out_shapes) == 1, "every case has one output"
    outs = [torch.empty(out_shapes[0], device=dev, dtype=bf16)
            for _ in range(nsets)]
    refs = [reference(torch, F, kind, params, sets[0])]
    fresh = draw(FRESH_SEED)
    refs.append(reference(torch, F, kind, params, fresh))
    torch.cuda.synchronize()

    # -- tang: load, check, time ------------------------------------------
    bundle = None
    if not meta["compile"]["ok"]:
        err = (meta["compile"].get("stderr") or "").strip().splitlines()
        res.update(status="compile failed",
                   note=(err[0] if err else "")[:200])
    elif not (ROOT / meta["bundle"] / "manifest.json").exists():
        res.update(status="no bundle",
                   note=f"{meta['bundle']}/manifest.json is missing "
                        f"(was gpu-work carried?)")
    else:
        try:
            bundle = tang_cuda.Bundle(ROOT / meta["bundle"])
        except Exception as e:  # a PTX the driver rejects, say
            res.update(status="load failed", note=_short(e))

    tang_times, tang_plan = [], None
    if bundle is not None:
        run = lambda k, ins=None: bundle.run(
            "main", *(ins if ins is not None else sets[k]),
            outputs=[outs[k]])
        try:
            # Each input draw twice, into outputs poisoned with NaN: right
            # within REL_TOL, every element written, and the same bits both
            # times. The event times of these runs size the timing below.
            errs, runs, est = [], [], []
            for ins, ref in ((sets[0], refs[0]), (fresh, refs[1])):
                for _ in range(2):
                    outs[0].fill_(float("nan"))
                    est.append(probe_ms(torch, lambda k: run(0, ins)))
                    errs.append(rel_err(torch, outs[0], ref))
                    runs.append(outs[0].clone())
            same = (bool(torch.equal(runs[0], runs[1]))
                    and bool(torch.equal(runs[2], runs[3])))
            del runs
            res["tang_check"] = {"rel_errs": errs, "deterministic": same,
                                 "tol": REL_TOL, "run_ms": est}
            if max(errs) > REL_TOL or not same:
                if math.isinf(max(errs)):
                    note = "NaN, inf or unwritten elements in the output"
                else:
                    note = f"rel err {max(errs):.3g}" + (
                        "" if same else ", result moves between runs")
                res.update(status="incorrect", note=note)
            else:
                tang_plan = plan(min(est), args)
                tang_times = time_ms(torch, run, nsets, *tang_plan)
        except Exception as e:
            res.update(status="run failed", note=_short(e))

    # -- peers -------------------------------------------------------------
    fns = peer_functions(torch, F, kind, params)
    for peer in meta["peers"]:
        pid = peer["id"]
        pres = {"id": pid, "how": peer["how"]}
        res["peers"].append(pres)
        try:
            if pid == "compile":
                if time.monotonic() > deadline:
                    pres["skipped"] = "time budget spent"
                    continue
                t0 = time.monotonic()
                fn = torch.compile(fns["eager"], mode=args.compile_mode)
                fn(*sets[0])  # compiles
                torch.cuda.synchronize()
                pres["compile_s"] = round(time.monotonic() - t0, 1)
                pres["how"] += f" (mode={args.compile_mode})"
            else:
                fn = fns[pid]
            errs = [rel_err(torch, fn(*ins), ref)
                    for ins, ref in ((sets[0], refs[0]), (fresh, refs[1]))]
            pres["rel_err"] = max(errs)
            pres["correct"] = pres["rel_err"] <= REL_TOL
            call = lambda k: fn(*sets[k])
            pres.update(summary(time_ms(
                torch, call, nsets, *plan(probe_ms(torch, call), args))))
            pres["gbps"] = meta["bytes_min"] / pres["ms"] / 1e6
        except Exception as e:
            pres["error"] = _short(e)

    # tang once more after the peers: the spread between the two medians
    # says how much of a difference is noise. The pooled median is reported.
    # (Skipped for a kernel too slow to time twice in the budget.)
    if tang_times:
        m1 = statistics.median(tang_times)
        again = []
        if m1 * sum(tang_plan) <= 2 * MEASURE_BUDGET_MS:
            again = time_ms(torch, run, nsets, *tang_plan)
        res["tang"] = summary(tang_times + again)
        res["tang"].update(first_ms=m1, warmup=tang_plan[1],
                           gbps=meta["bytes_min"] / res["tang"]["ms"] / 1e6)
        if again:
            m2 = statistics.median(again)
            res["tang"].update(second_ms=m2,
                               spread=abs(m1 - m2) / min(m1, m2))
    if bundle is not None:
        bundle.close()
    sets = outs = refs = fresh = None  # free the inputs before the next case
    torch.cuda.empty_cache()
    return res


def _short(e: BaseException) -> str:
    """One line naming the exception."""
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def finish(report: dict):
    """Fills in the derived figures (fractions of the copy rate, ratios,
    targets) from the raw ones, in place."""
    rates = [c["gbps"] for c in report["copy"].values() if c]
    copy = max(rates) if rates else None
    report["copy_gbps"] = copy
    for r in report["cases"]:
        t = r.get("tang")
        good = [p for p in r["peers"] if "ms" in p and p.get("correct")]
        best = min(good, key=lambda p: p["ms"]) if good else None
        r["best_peer"] = best["id"] if best else None
        for p in r["peers"]:
            if "ms" in p and copy:
                p["fraction_of_copy"] = p["gbps"] / copy
            if "ms" in p and t:
                p["peer_over_tang"] = p["ms"] / t["ms"]
        if t and copy:
            t["fraction_of_copy"] = t["gbps"] / copy
            r["target_met"] = t["fraction_of_copy"] >= r["target"]
        else:
            r["target_met"] = False


def fmt(v, spec, none="-"):
    """`v` formatted with `spec`, or `none` when there is no value."""
    return none if v is None else format(v, spec)


def pct(fraction, spec=".1f", none="-"):
    """A fraction as a percentage (without the sign), or `none`."""
    return none if fraction is None else format(100 * fraction, spec)


def render_markdown(report: dict) -> str:
    """The report as markdown: the summary table, every peer, notes."""
    L = []
    L.append(f"# tang memory-bound benchmark, {report['date']}")
    L.append("")
    L.append(f"{report['device']}; PyTorch {report['torch']}, CUDA "
             f"{report['cuda']}, Triton {report['triton']}; L2 "
             f"{report['l2_bytes'] / 2**20:.0f} MiB; repository "
             f"{(report.get('git') or {}).get('commit') or '?'}"
             f"{' (dirty)' if (report.get('git') or {}).get('dirty') else ''}"
             f"; torch.compile mode {report['settings']['compile_mode']}.")
    L.append("")
    c = report["copy"]
    L.append("Copy rate (device-to-device, 2 GiB, bytes read + written): "
             f"{fmt(c['start'] and c['start']['gbps'], '.0f')} GB/s at the "
             f"start, {fmt(c['end'] and c['end']['gbps'], '.0f')} GB/s at "
             f"the end; the targets use "
             f"{fmt(report['copy_gbps'], '.0f')} GB/s.")
    L.append("")
    L.append("GB/s = the least bytes (each input read once, each output "
             "written once) over the median time. peer/tang > 1 means tang "
             "is faster. Times are medians of CUDA-event timed repeats after "
             "warm-up.")
    L.append("")
    L.append("| case | status | tang ms | tang GB/s | % of copy | target | "
             "met | best peer | peer ms | peer/tang |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in report["cases"]:
        t = r.get("tang") or {}
        best = next((p for p in r["peers"] if p["id"] == r["best_peer"]),
                    {})
        status = r["status"] + (f" ({r['note']})" if r["note"] else "")
        L.append(
            f"| {r['case']} | {status} | {fmt(t.get('ms'), '.4f')} | "
            f"{fmt(t.get('gbps'), '.0f')} | "
            f"{pct(t.get('fraction_of_copy'))} | "
            f">= {100 * r['target']:.0f}% | "
            f"{'yes' if r['target_met'] else 'no'} | "
            f"{r['best_peer'] or '-'} | {fmt(best.get('ms'), '.4f')} | "
            f"{fmt(best.get('peer_over_tang'), '.2f')} |")
    L.append("")
    L.append("## Every peer")
    L.append("")
    L.append("| case | peer | ms | GB/s | % of copy | peer/tang | rel err | "
             "how |")
    L.append("|---|---|---|---|---|---|---|---|")
    for r in report["cases"]:
        for p in r["peers"]:
            extra = p.get("error") or p.get("skipped") or ""
            if "compile_s" in p:
                extra = f"compiled in {p['compile_s']} s"
            if "correct" in p and not p["correct"]:
                extra = "INCORRECT " + extra
            L.append(
                f"| {r['case']} | {p['id']} | {fmt(p.get('ms'), '.4f')} | "
                f"{fmt(p.get('gbps'), '.0f')} | "
                f"{pct(p.get('fraction_of_copy'))} | "
                f"{fmt(p.get('peer_over_tang'), '.2f')} | "
                f"{fmt(p.get('rel_err'), '.2e')} | {p['how']}"
                f"{'; ' + extra if extra else ''} |")
    L.append("")
    L.append("## tang's kernels")
    L.append("")
    L.append("| case | launches (kernel grid x block) | rel errs | "
             "deterministic | input sets | timing spread |")
    L.append("|---|---|---|---|---|---|")
    for r in report["cases"]:
        launches = "; ".join(
            f"{l['kernel']} {l['grid']}x{l['block']}"
            for l in (r["compile"].get("launches") or [])) or "-"
        chk = r.get("tang_check") or {}
        errs = ", ".join(f"{e:.2e}" for e in chk.get("rel_errs", [])) or "-"
        t = r.get("tang") or {}
        L.append(f"| {r['case']} | {launches} | {errs} | "
                 f"{chk.get('deterministic', '-')} | "
                 f"{r.get('input_sets', '-')}"
                 f" | {pct(t.get('spread'))}{'%' if 'spread' in t else ''} |")
    L.append("")
    L.append(f"Total wall time {report.get('wall_s', 0):.0f} s.")
    return "\n".join(L) + "\n"


def print_table(report: dict):
    """The summary table, for the end of the log."""
    print(f"\ncopy rate {fmt(report['copy_gbps'], '.0f')} GB/s; "
          f"{report['device']}, torch {report['torch']}")
    head = (f"{'case':22s} {'status':14s} {'tang ms':>9s} {'GB/s':>6s} "
            f"{'%copy':>6s} {'target':>6s} {'met':>4s} {'peer':>12s} "
            f"{'peer ms':>9s} {'peer/tang':>9s}")
    print(head)
    print("-" * len(head))
    for r in report["cases"]:
        t = r.get("tang") or {}
        best = next((p for p in r["peers"] if p["id"] == r["best_peer"]),
                    {})
        print(f"{r['case']:22s} {r['status'][:14]:14s} "
              f"{fmt(t.get('ms'), '9.4f', '        -')} "
              f"{fmt(t.get('gbps'), '6.0f', '     -')} "
              f"{pct(t.get('fraction_of_copy'), '6.1f', '     -')} "
              f"{100 * r['target']:5.0f}% "
              f"{'yes' if r['target_met'] else 'no':>4s} "
              f"{(r['best_peer'] or '-'):>12s} "
              f"{fmt(best.get('ms'), '9.4f', '        -')} "
              f"{fmt(best.get('peer_over_tang'), '9.2f', '        -')}")
        if r["note"]:
            print(f"    {r['note']}")


def write_report(report: dict, out_dir: Path):
    finish(report)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bench.json").write_text(
        json.dumps(report, indent=1, default=str) + "\n")
    (out_dir / "bench.md").write_text(render_markdown(report))


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="*", metavar="NAME",
                    help="only these cases (default: every meta.json)")
    ap.add_argument("--reps", type=int, default=100,
                    help="timed repeats per measurement (default 100)")
    ap.add_argument("--warmup", type=int, default=10,
                    help="untimed repeats first (default 10)")
    ap.add_argument("--compile-mode", default="default",
                    help="torch.compile mode of the 'compile' peers "
                         "(default: default; max-autotune-no-cudagraphs "
                         "autotunes, which takes minutes)")
    ap.add_argument("--budget-s", type=float, default=300,
                    help="after this many seconds, skip the torch.compile "
                         "peers still to come (default 300)")
    ap.add_argument("--out", default=os.environ.get("OUT") or
                    str(ROOT / "gpu-work" / "bench-out"),
                    help="where bench.md and bench.json go (default $OUT)")
    args = ap.parse_args()
    t_start = time.monotonic()
    deadline = t_start + args.budget_s
    out_dir = Path(args.out)

    metas = sorted(WORK.glob("*/meta.json"))
    metas = [json.loads(p.read_text()) for p in metas]
    if args.cases:
        metas = [m for m in metas if m["case"] in args.cases]
    if not metas:
        print(f"no meta.json under {WORK} (run bench/prepare_bench.py "
              f"first and carry gpu-work)", file=sys.stderr)
        return 2
    # Norms first, then GEMV, in the order prepare_bench.py lists them.
    order = ["rmsnorm", "softmax", "layernorm", "gemv"]
    metas.sort(key=lambda m: (order.index(m["kind"]) if m["kind"] in order
                              else len(order), m["bytes_min"], m["case"]))

    import torch
    import torch.nn.functional as F
    import tang.cuda as tang_cuda
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = "absent"

    torch.manual_seed(SEED)
    torch.cuda.init()
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20) or (50 << 20)
    report = {
        "date": datetime.datetime.now(datetime.timezone.utc)
                .isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(0),
        "sm_count": props.multi_processor_count,
        "l2_bytes": l2,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton_version,
        "python": platform.python_version(),
        "git": metas[0].get("git"),
        "settings": {"reps": args.reps, "warmup": args.warmup,
                     "compile_mode": args.compile_mode, "rel_tol": REL_TOL,
                     "copy_bytes": COPY_BYTES, "seed": SEED,
                     "fresh_seed": FRESH_SEED},
        "copy": {"start": None, "end": None},
        "cases": [],
    }
    print(f"{report['device']}, torch {report['torch']}, CUDA "
          f"{report['cuda']}, Triton {triton_version}, L2 {l2 >> 20} MiB",
          flush=True)

    report["copy"]["start"] = copy_rate(torch, args.reps)
    print(f"copy rate (start): {report['copy']['start']['gbps']:.0f} GB/s",
          flush=True)

    for meta in metas:
        t0 = time.monotonic()
        try:
            res = run_case(torch, F, tang_cuda, meta, args, l2, deadline)
        except Exception as e:  # keep going: report the case as failed
            traceback.print_exc()
            res = {"case": meta["case"], "kind": meta["kind"],
                   "params": meta["params"], "bytes_min": meta["bytes_min"],
                   "flops": meta["flops"],
                   "target": meta["target"]["min_fraction_of_copy_rate"],
                   "status": "error", "note": _short(e), "tang": None,
                   "peers": [], "compile": {}}
            torch.cuda.empty_cache()
        res["wall_s"] = round(time.monotonic() - t0, 1)
        report["cases"].append(res)
        t = res.get("tang") or {}
        print(f"{res['case']}: {res['status']}"
              + (f" ({res['note']})" if res["note"] else "")
              + (f", tang {t['ms']:.4f} ms" if t else "")
              + "".join(f", {p['id']} {p['ms']:.4f} ms"
                        for p in res["peers"] if "ms" in p)
              + f" [{res['wall_s']} s]", flush=True)
        report["wall_s"] = time.monotonic() - t_start
        write_report(report, out_dir)

    report["copy"]["end"] = copy_rate(torch, args.reps)
    print(f"copy rate (end): {report['copy']['end']['gbps']:.0f} GB/s",
          flush=True)
    report["wall_s"] = time.monotonic() - t_start
    write_report(report, out_dir)
    print_table(report)
    print(f"\nwrote {out_dir / 'bench.md'} and {out_dir / 'bench.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
