#!/usr/bin/python3
"""Merges this run's sanitize.json files (four device calls, raw/) into
bench/results/sanitize.json: every check of every case, by case; a case
is failed when a tool reported in it, clean ("ok") when every tool that
reached it was clean, and "skipped: ..." when a tool did not finish it for
want of time or GPU memory (PyTorch's float64/float32 references beside
the tool's own allocations on the H100's 80 GB: the log names the
allocation).

    /usr/bin/python3 bench/results/2026-12-06-h100-sanitize/merge.py
"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402
import sanitize  # noqa: E402

OOM = ("out of memory", "OutOfMemoryError")
#: The words of a tool's report on a kernel (memcheck's invalid accesses
#: and hardware exceptions, racecheck's hazards, synccheck's barrier
#: errors).
REPORTS = ("Invalid __", "Race reported", "hazard", "Barrier", "barrier",
           "Misaligned", "Out-of-range", "Warp ", "Illegal", "exception")
#: The GPU check's runtime-errors case ran under memcheck in the first
#: call only: its refusals are API errors on purpose (reported as such);
#: it has not run under the tools since (bench/gpu_check.py).
LEFT_OUT = {"gpu_check/runtime-errors"}


def verdict(k):
    """The verdict of a check of these runs, by its content: the first
    calls' sanitize.py counted a case its suite did not reach, or failed
    before tang's kernels ran (a PyTorch reference out of memory), as
    failed or clean; bench/sanitize.py's classify() now says "not run"."""
    text = (k.get("tail") or "") + str(
        (k.get("suite_verdict") or {}).get("note"))
    if any(ln.startswith("=========") and any(w in ln for w in REPORTS)
           for ln in text.splitlines()):
        return "failed", "the tool reported"
    oom = any(w in text for w in OOM)
    st = k.get("suite_status")
    if k["ok"] and not k.get("skipped") and st in ("ok", "incorrect"):
        return "clean", f"ran ({st})"
    if oom:
        return "not run", "PyTorch out of GPU memory beside the tool"
    if k["ok"] and not k.get("skipped"):
        return "not run", f"the suite: {st}"
    return "not run", "not reached (device time)"


def main():
    raw = sorted(HERE.glob("raw/*.json"))
    parts = [json.loads(p.read_text()) for p in raw]
    for rep in parts:
        for c in rep["cases"]:
            for k in c["checks"]:
                v, reason = verdict(k)
                k.update(verdict=v, reason=reason, commit=rep["commit"][:10],
                         ok=v != "failed", skipped=v == "not run")
    merged = {}
    for rep in parts:
        for c in rep["cases"]:
            if c["case"].endswith(("/-", "/(suite)")) or c["case"] in \
                    LEFT_OUT:
                continue
            merged.setdefault(c["case"], harness.case_result(c["case"]))[
                "checks"].extend(c["checks"])
    for m in merged.values():
        sanitize.judge(m)
    rep = dict(parts[-1])
    rep.update(suite="sanitize", commit=parts[-1]["commit"],
               date=parts[-1]["date"],
               settings={"tools": ["memcheck", "racecheck", "synccheck"],
                         "merged_from": [p["commit"][:10] for p in parts],
                         "how": "bench/results/2026-12-06-h100-sanitize/"
                                "README.md"},
               clocks={"before": parts[0]["clocks"]["before"],
                       "after": parts[-1]["clocks"]["after"]})
    rep["cases"] = list(merged.values())
    problems = harness.validate_report(rep)
    assert not problems, problems
    harness.write_report(rep, ROOT / "bench" / "results" / "sanitize.json")
    counts = {}
    for m in merged.values():
        counts[m["status"]] = counts.get(m["status"], 0) + 1
    print(len(merged), "cases:", counts)


if __name__ == "__main__":
    main()
