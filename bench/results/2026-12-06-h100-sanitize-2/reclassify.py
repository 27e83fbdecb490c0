#!/usr/bin/python3
"""Applies bench/sanitize.py's out-of-memory rules (split_oom, and a suite
that died of PyTorch's OutOfMemoryError) to the checks of raw/sanitize.json
that the run's own classification failed -- the run predates those rules
-- reading each case's part of raw/sanitize.log.xz, and writes
bench/results/sanitize.json (every earlier check carried: the run resumed
bench/results/sanitize.json).

Usage: /usr/bin/python3 bench/results/2026-12-06-h100-sanitize-2/reclassify.py
"""
import json
import lzma
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402
import sanitize  # noqa: E402


def sections(log):
    """{(suite, tool): that child's output}."""
    out = {}
    for chunk in log.split("\n######## ")[1:]:
        head, _, body = chunk.partition("\n")
        suite, _, rest = head.partition(" under ")
        out[(suite, rest.split(":")[0])] = body
    return out


def main():
    rep = json.loads((HERE / "raw" / "sanitize.json").read_text())
    logs = sections(lzma.open(HERE / "raw" / "sanitize.log.xz", "rt").read())
    changed = []
    for c in rep["cases"]:
        suite, _, case = c["case"].partition("/")
        for k in c["checks"]:
            if k.get("verdict") != "failed":
                continue
            text = logs.get((suite, k["name"]))
            if text is None:
                continue
            oom = set()
            found = sanitize.attribute(text, [case], oom)[case]
            status = k.get("suite_status")
            if status == harness.DIED_IN and \
                    "OutOfMemoryError" in text[-3000:]:
                oom.add(case)
            if found or case not in oom:
                continue
            v, why = sanitize.classify(found, status, False, False, True)
            k.update(verdict=v, reason=why, ok=v != "failed",
                     skipped=v == "not run",
                     reclassified="out-of-memory rules of bench/sanitize.py")
            changed.append(f"{c['case']} {k['name']}: {v} ({why})")
        if c["checks"]:
            sanitize.judge(c)
    print("\n".join(changed) or "nothing reclassified")
    rep["note"] = ("Merged: every earlier run's checks (bench/results/"
                   "2026-12-06-h100-sanitize) and an H100 run of 2026-12-06 "
                   "(bench/results/2026-12-06-h100-sanitize-2), its "
                   "out-of-memory API errors reclassified by reclassify.py")
    harness.write_report(rep, ROOT / "bench" / "results" / "sanitize.json")


if __name__ == "__main__":
    main()
