#!/usr/bin/env python3
"""How far the traffic bound's tile is from the best tile a timed sweep finds.

Reads bench/bench_gemm.py's report (gemm.json) of a run over
`bench/prepare_gemm.py --variants --also lp=tile-source=traffic-bound`: for
every product of prepare_gemm.VARIANT_SHAPES, the case compiled with the
default schedule (the heuristic's tile), the `_lp` case (--tang-schedule's
tile-source=traffic-bound: the LP's certified tile at shared memory, rounded
to the kernels' sizes) and the swept tile variants (`_t<BM>x<BN>x...`). The
tiles come from each case's meta.json (the schedule --tang-lower-cuda gave
it). Prints a Markdown table: per product, each candidate's time and its
ratio to the best time of all of them.

Usage: /usr/bin/python3 bench/tile_report.py REPORT.json [--work gpu-work/gemm]
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from prepare_gemm import VARIANT_SHAPES  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report", type=Path)
    ap.add_argument("--work", type=Path, default=ROOT / "gpu-work" / "gemm")
    args = ap.parse_args()
    cases = {c["case"]: c for c in json.loads(args.report.read_text())["cases"]}

    def meta(name):
        p = args.work / name / "meta.json"
        return json.loads(p.read_text()) if p.exists() else {}

    def ms(name):
        c = cases.get(name, {})
        return c["tang"]["ms"] if c.get("status") == "ok" else None

    lines = ["| product | heuristic tile | ms | LP tile (certified; kernel) | "
             "ms | best swept tile | ms | heuristic / best | LP / best |",
             "|---|---|---|---|---|---|---|---|---|"]
    lp_ratios, heuristic_ratios = [], []
    for M, N, K in VARIANT_SHAPES:
        base = f"matmul_{M}" if M == N == K else f"matmul_{M}x{N}x{K}"
        swept = {n: ms(n) for n in cases if n.startswith(base + "_t")}
        swept = {n: t for n, t in swept.items() if t is not None}
        heuristic, lp = ms(base), ms(base + "_lp")
        times = [t for t in [heuristic, lp, *swept.values()] if t]
        if not times:
            continue
        best = min(times)
        best_name = min(swept, key=swept.get) if swept else None
        tile = lambda n: meta(n).get("schedule_tile")
        fmt = lambda t: "-" if t is None else f"{t:.3f}"
        ratio = lambda t: "-" if t is None else f"{t / best:.2f}"
        if heuristic:
            heuristic_ratios.append(heuristic / best)
        if lp:
            lp_ratios.append(lp / best)
        lines.append(
            f"| {M}x{N}x{K} | {tile(base)} | {fmt(heuristic)} | "
            f"{meta(base + '_lp').get('traffic_tile')}; {tile(base + '_lp')} "
            f"| {fmt(lp)} | "
            f"{best_name[len(base) + 2:] if best_name else '-'} | "
            f"{fmt(swept.get(best_name))} | {ratio(heuristic)} | "
            f"{ratio(lp)} |")
    if lp_ratios:
        lines += ["", f"LP tile / best over {len(lp_ratios)} products: "
                  f"median {statistics.median(lp_ratios):.2f}, worst "
                  f"{max(lp_ratios):.2f}; heuristic / best: median "
                  f"{statistics.median(heuristic_ratios):.2f}, worst "
                  f"{max(heuristic_ratios):.2f}"]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
