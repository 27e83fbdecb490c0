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


def main():
    parts = [json.loads(p.read_text()) for p in sorted(HERE.glob("raw/*.json"))]
    merged = {}
    for rep in parts:
        for c in rep["cases"]:
            if c["case"].endswith("/-") or c["case"] in LEFT_OUT:
                continue  # a suite-level budget note
            m = merged.setdefault(c["case"], harness.case_result(c["case"]))
            for k in c["checks"]:
                m["checks"].append(dict(k, commit=rep["commit"][:10]))
    for name, m in merged.items():
        by_tool = {}
        for k in m["checks"]:
            text = (k.get("tail") or "") + str(
                (k.get("suite_verdict") or {}).get("note"))
            report = any(ln.startswith("=========") and
                         any(w in ln for w in REPORTS)
                         for ln in text.splitlines())
            oom = any(w in text for w in OOM)
            # The first call's classification counted a case its suite
            # did not reach (the budget) as a failure: by content here.
            verdict = ("clean" if k["ok"] and not k.get("skipped") else
                       "not reached (budget)" if k["ok"] else
                       "REPORT" if report else
                       "PyTorch out of GPU memory" if oom else
                       "not reached (budget)")
            # A tool's best verdict over the calls (a case skipped for
            # time in one call and clean in another is clean).
            rank = ["REPORT", "clean", "PyTorch out of GPU memory",
                    "not reached (budget)"]
            old = by_tool.get(k["name"])
            if old is None or rank.index(verdict) < rank.index(old):
                by_tool[k["name"]] = verdict
        m["tools"] = by_tool
        clean = [t for t, v in by_tool.items() if v == "clean"]
        other = {t: v for t, v in by_tool.items() if v != "clean"}
        if any(v == "REPORT" for v in by_tool.values()):
            m["status"] = "failed"
        elif not clean:
            m["status"] = "skipped: " + ", ".join(sorted(set(other.values())))
        m["note"] = ("clean under " + ", ".join(sorted(clean)) if clean
                     else "") + "".join(f"; {t}: {v}" for t, v in
                                        sorted(other.items()))
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
