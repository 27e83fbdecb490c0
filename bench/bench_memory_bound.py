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
import json
import math
import statistics
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402
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
    if kind == "logsumexp":
        return {"eager": lambda x: torch.logsumexp(x.float(), -1)}
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
    if kind == "logsumexp":
        return torch.logsumexp(d[0], -1)
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
    copy = lambda k: dst.copy_(src)
    for _ in range(3):
        copy(0)
    s = summary(harness.time_calls(torch, copy, reps))
    ok = bool(torch.equal(src[-4096:], dst[-4096:]))
    src = dst = None  # free the 4 GiB
    torch.cuda.empty_cache()
    s.update(bytes=2 * COPY_BYTES, gbps=2 * COPY_BYTES / s["ms"] / 1e6,
             copied_ok=ok)
    return s


# ---------------------------------------------------------------------------
# One case (common schema, bench/harness.py)
# ---------------------------------------------------------------------------


def tolerances(kind: str, params: dict):
    """(tang's, the peers') elementwise tolerances: bf16 storage, f32
    arithmetic, one rounding (the result); the reduction is a row (or the
    GEMV's inner dimension). Eager peers round each step to bf16: R 4."""
    K = params.get("cols") or params.get("inn") or params.get("in") or 4096
    if kind == "logsumexp":
        # f32 out; the peer rounds nothing to bf16 (it widens first).
        return (harness.Tolerance("f32", reduction=K, roundings=1),
                harness.Tolerance("f32", reduction=K, roundings=1))
    return (harness.Tolerance("bf16", reduction=K, roundings=1),
            harness.Tolerance("bf16", reduction=K, roundings=4))


def out_dtype_of(torch, meta: dict):
    """The torch dtype of the case's (first) output."""
    return {"bf16": torch.bfloat16, "f32": torch.float32}[
        meta["outputs"][0].get("dtype", "bf16")]


def run_case_common(torch, F, tang_cuda, meta: dict, args, l2_bytes: int,
                    deadline) -> dict:
    """Checks tang's kernel and the peers elementwise on two input draws and
    times them in interleaved rounds; a result in the common schema."""
    kind, params = meta["kind"], meta["params"]
    res = harness.case_result(meta["case"], kind=kind, params=params,
                              bytes_min=meta["bytes_min"],
                              target=meta["target"]["min_fraction_of_copy_rate"])
    dev, bf16 = "cuda", torch.bfloat16
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
    out_shape = meta["outputs"][0]["shape"]
    out_dtype = out_dtype_of(torch, meta)
    outs = [torch.empty(out_shape, device=dev, dtype=out_dtype)
            for _ in range(nsets)]
    fresh = draw(FRESH_SEED)
    draws = [(sets[0], reference(torch, F, kind, params, sets[0])),
             (fresh, reference(torch, F, kind, params, fresh))]
    tol_t, tol_p = tolerances(kind, params)
    res["tolerance"] = {"tang": tol_t.describe(), "peers": tol_p.describe()}

    if not meta["compile"]["ok"]:
        err = (meta["compile"].get("stderr") or "").strip().splitlines()
        res.update(status="compile failed", note=(err[0] if err else "")[:200])
        return res
    if not (ROOT / meta["bundle"] / "manifest.json").exists():
        res.update(status="failed", note="no bundle (was gpu-work carried?)")
        return res
    bundle = tang_cuda.Bundle(ROOT / meta["bundle"])
    run = lambda k, ins=None: bundle.run(
        "main", *(ins if ins is not None else sets[k]), outputs=[outs[k]])
    try:
        same_all = True
        for i, (ins, ref) in enumerate(draws):
            first, same = harness.poisoned_runs(
                torch, [outs[0]], lambda: run(0, ins))
            same_all &= same
            res["checks"].append(harness.check_tensor(
                first[0], ref, tol_t, f"tang draw {i}"))
        if not harness.judge_checks(res, same_all):
            return res
        if args.sanitize:
            return harness.sanitized(res)

        fns = peer_functions(torch, F, kind, params)
        contenders = [("tang", run)]
        peer_checks, how = {}, {}
        for peer in meta["peers"]:
            pid = peer["id"]
            how[pid] = peer["how"]
            try:
                if pid == "compile":
                    if deadline.passed(args.compile_reserve_s):
                        res["peer_status"] = res.get("peer_status", {})
                        res["peer_status"][pid] = "skipped: budget"
                        continue
                    t0 = time.monotonic()
                    fn = torch.compile(fns["eager"], mode=args.compile_mode)
                    fn(*sets[0])
                    torch.cuda.synchronize()
                    how[pid] += (f" (mode={args.compile_mode}, compiled in "
                                 f"{time.monotonic() - t0:.0f} s)")
                else:
                    fn = fns[pid]
                cks = [harness.check_tensor(fn(*ins), ref, tol_p,
                                            f"{pid} draw {i}")
                       for i, (ins, ref) in enumerate(draws)]
                peer_checks[pid] = cks
                contenders.append((pid, lambda k, fn=fn: fn(*sets[k])))
            except Exception as e:
                res.setdefault("peer_status", {})[pid] = "failed: " + _short(e)
        res["peer_checks"] = {k: [{kk: c[kk] for kk in
                                   ("name", "ok", "max_err", "bad", "worst")}
                                  for c in v] for k, v in peer_checks.items()}
        res["peer_how"] = how
        timed = harness.interleaved_rounds(
            torch, contenders, rounds=args.rounds_n, target_ms=args.target_ms,
            nsets=nsets, deadline=deadline.monotonic())
        wrong = [k for k, v in peer_checks.items()
                 if not all(c["ok"] for c in v)]
        res.update(harness.compare("tang", timed, excluded=wrong))
        res["timing"] = timed
        res["incorrect_peers"] = wrong
        for k, v in timed.items():
            if "error" in v:
                res.setdefault("peer_status", {})[k] = "failed: " + v["error"]
        if res["tang_ms"]:
            res["tang_gbps"] = meta["bytes_min"] / res["tang_ms"] / 1e6
    except Exception as e:
        res.update(status="failed", note=_short(e))
    finally:
        bundle.close()
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
    ap.add_argument("--compile-mode", default="default",
                    help="torch.compile mode of the 'compile' peers "
                         "(default: default; max-autotune-no-cudagraphs "
                         "autotunes, which takes minutes)")
    ap.add_argument("--compile-reserve-s", type=float, default=60,
                    help="skip a torch.compile peer when less than this is "
                         "left before --deadline (default 60)")
    harness.add_common_args(ap)
    args = ap.parse_args()
    args.rounds_n = harness.rounds_of(args)
    args.target_ms = harness.target_ms_of(args)
    deadline = harness.Deadline(args.deadline)
    t_start = time.monotonic()
    out_dir = Path(args.out) if args.out else harness.out_dir("bench-out")

    metas = sorted(WORK.glob("*/meta.json"))
    metas = [json.loads(p.read_text()) for p in metas]
    if args.cases:
        metas = [m for m in metas if m["case"] in args.cases]
    if not metas:
        print(f"no meta.json under {WORK} (run bench/prepare_bench.py "
              f"first and carry gpu-work)", file=sys.stderr)
        return 2
    order = ["rmsnorm", "softmax", "layernorm", "logsumexp", "gemv"]
    metas.sort(key=lambda m: (order.index(m["kind"]) if m["kind"] in order
                              else len(order), m["bytes_min"], m["case"]))

    import torch
    import torch.nn.functional as F
    import tang.cuda as tang_cuda

    torch.manual_seed(SEED)
    torch.cuda.init()
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20) or (50 << 20)
    report = harness.new_report("memory_bound", torch, settings={
        "rounds": args.rounds_n, "target_ms": args.target_ms,
        "compile_mode": args.compile_mode, "quick": args.quick,
        "seed": SEED, "fresh_seed": FRESH_SEED, "l2_bytes": l2})
    path = out_dir / "memory_bound.json"
    report["copy"] = {"start": copy_rate(torch, 20), "end": None}
    print(f"copy rate (start): {report['copy']['start']['gbps']:.0f} GB/s",
          flush=True)
    harness.prelist(report, [m["case"] for m in metas])
    harness.write_report(report, path)
    for meta in metas:
        t0 = time.monotonic()
        harness.start_case(report, meta["case"], path)
        if deadline.passed(5):
            res = harness.case_result(meta["case"], status="skipped: budget")
        else:
            try:
                res = run_case_common(torch, F, tang_cuda, meta, args, l2,
                                      deadline)
            except Exception as e:
                traceback.print_exc()
                res = harness.case_result(meta["case"], status="failed",
                                          note=_short(e))
        res["wall_s"] = round(time.monotonic() - t0, 1)
        harness.set_case(report, res, path)
        harness.after_case(torch, report, res, path)
        print(f"{res['case']}: {res['status']} max_err {res['max_err']} "
              f"tang {res['tang_ms']} peers {res['peers']} ratio "
              f"{res['ratio']} spread {res['spread']} {res['note']}",
              flush=True)
        harness.write_report(report, path)
    report["copy"]["end"] = copy_rate(torch, 20)
    rates = [c["gbps"] for c in report["copy"].values() if c]
    report["copy_gbps"] = max(rates)
    for r in report["cases"]:
        if r.get("tang_gbps"):
            r["fraction_of_copy"] = r["tang_gbps"] / report["copy_gbps"]
            r["target_met"] = r["fraction_of_copy"] >= r["target"]
    harness.finish_report(report, t_start)
    harness.write_report(report, path)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
