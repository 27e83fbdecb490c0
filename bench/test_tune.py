"""bench/tune.py's halves that run here: the search space compiled one
bundle per candidate, and a measured report turned into a tuning cache that
the compiler replays (the GPU's timing replaced by made-up times).

Run:  TANG_BIN=<build>/bin /usr/bin/python3 -m pytest -q bench/test_tune.py
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import tune  # noqa: E402

TANG_BIN = Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))


def test_prepare_measure_merge_replay(tmp_path, monkeypatch):
    monkeypatch.setattr(tune, "WORK", tmp_path / "tune")
    monkeypatch.setattr(tune, "TANG_OPT", TANG_BIN / "tang-opt")
    name = "matmul_257x136x72"
    suite, kind_name, params = tune.case_table()[name]
    meta = tune.prepare_case(suite, name, kind_name, params, limit=4,
                             fmt="isa")
    assert "error" not in meta, meta.get("error")
    [kernel] = meta["kernels"]
    cands = kernel["candidates"]
    assert cands[0]["seed"].startswith("heuristic")
    assert len(cands) >= 3 and all(c["compiled"] for c in cands), cands
    for c in cands:
        manifest = tune.WORK / name / c["dir"] / "bundle" / "manifest.json"
        assert json.loads(manifest.read_text())["format"] == "ptx"
    # A measured report as measure_case writes it: the last candidate
    # fastest, one wrong (never cached).
    measured = {"case": name, "kernels": [{
        **{k: kernel[k] for k in ("structure", "chip", "sizes", "extents",
                                  "location", "kernel")},
        "candidates": [dict(c, status="ok", ms=2.0 - 0.1 * i)
                       for i, c in enumerate(cands)]}]}
    measured["kernels"][0]["candidates"][-2]["status"] = "wrong"
    del measured["kernels"][0]["candidates"][-2]["ms"]
    k = measured["kernels"][0]
    timed = [c for c in k["candidates"] if "ms" in c]
    best = min(timed, key=lambda c: c["ms"])
    k.update(best=best["label"], best_ms=best["ms"],
             heuristic_ms=k["candidates"][0]["ms"])
    entries = tune.cache_entries([measured], "test device")
    assert [e["schedule"] for e in entries] == [cands[-1]["schedule"]]
    assert entries[0]["heuristic_time_s"] == 2.0e-3
    # Merging replaces an entry of the same key and keeps the others.
    old = {"version": 1, "entries": [
        dict(entries[0], schedule="stale"),
        dict(entries[0], sizes="1x1x1;1x1,1x1", schedule="other")]}
    merged = tune.merge(old, {"version": 1, "entries": entries})
    assert sorted(e["schedule"] for e in merged["entries"]) == sorted(
        ["other", cands[-1]["schedule"]])
    cache = tmp_path / "cache.json"
    cache.write_text(json.dumps(merged))
    # The compiler replays it.
    program = tune.WORK / name / "program.mlir"
    r = subprocess.run(
        [str(TANG_BIN / "tang-opt"), str(program),
         f"--tang-lower-cuda={meta['options']} schedule-cache={cache}",
         "--mlir-print-ir-after=tang-schedule", "-o", os.devnull],
        capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    [line] = [x for x in r.stderr.splitlines()
              if 'tang.schedule_source = "cache"' in x]
    assert re.search(r"schedule = (#tang\.schedule<[^>]*>)",
                     line).group(1) == cands[-1]["schedule"]


def test_unknown_case_is_refused(capsys):
    class Args:
        suites = None
        cases = ["no_such_case"]
        limit = 2
        format = "isa"
    assert tune.cmd_prepare(Args()) == 2
    assert "unknown cases ['no_such_case']" in capsys.readouterr().err


def test_memory_suite_candidates_pass_the_precision_emulator(tmp_path,
                                                              monkeypatch):
    """A row kernel's candidates (threads, vector widths) are run through
    the precision emulator on 64 rows of the case's length before they are
    compiled: each error is recorded against the GPU check's tolerance."""
    monkeypatch.setattr(tune, "WORK", tmp_path / "tune")
    monkeypatch.setattr(tune, "TANG_OPT", TANG_BIN / "tang-opt")
    monkeypatch.setattr(tune, "TANG_RUN", TANG_BIN / "tang-run")
    suite, kind_name, params = tune.case_table(["memory"])[
        "softmax_32768x4096"]
    meta = tune.prepare_case(suite, "softmax_32768x4096", kind_name, params,
                             limit=3, fmt="isa")
    [kernel] = meta["kernels"]
    assert kernel["kernel"] == "simt"
    for c in kernel["candidates"]:
        p = c["precision"]
        assert p["instance"] == dict(params, rows=64)
        # bf16 output: its rounding (2^-8 of the largest element at most)
        # dominates; never zero, within the check's tolerance.
        assert 0 < p["error"] <= 2.0 ** -8 and p["within"], c
        assert p["budget"] == tune.budget_of(suite.tolerance(meta))
        assert c["compiled"], c


def test_candidates_past_the_budget_are_not_compiled(tmp_path, monkeypatch):
    monkeypatch.setattr(tune, "WORK", tmp_path / "tune")
    monkeypatch.setattr(tune, "TANG_OPT", TANG_BIN / "tang-opt")
    monkeypatch.setattr(tune, "TANG_RUN", TANG_BIN / "tang-run")
    # A budget below bf16's rounding: every candidate is past it.
    monkeypatch.setattr(tune, "budget_of", lambda tol: 1e-6)
    suite, kind_name, params = tune.case_table(["memory"])[
        "rmsnorm_32768x4096"]
    meta = tune.prepare_case(suite, "rmsnorm_32768x4096", kind_name, params,
                             limit=2, fmt="isa")
    [kernel] = meta["kernels"]
    for c in kernel["candidates"]:
        assert c["precision"]["within"] is False
        assert not c["compiled"] and c["error"] == "past the precision budget"
        assert not (tune.WORK / "rmsnorm_32768x4096" / c["dir"] /
                    "bundle").exists()


def test_tune_table():
    """make_tables renders tune.json: per kernel the heuristic's, the LP
    tile's, the best modelled and the best times."""
    import make_tables
    rep = {"suite": "tune", "started": "2026-12-05T00:00:00Z",
           "environment": {"device": "NVIDIA H200"},
           "git": {"commit": "0123456789abcdef", "dirty": False},
           "cases": [
               {"case": "matmul_1000", "kernels": [{
                   "kernel": "contraction", "candidates": [
                       {"status": "ok"}, {"status": "ok"},
                       {"status": "wrong"}],
                   "heuristic_ms": 0.02, "lp_ms": 0.03,
                   "model_best_ms": 0.018, "best_ms": 0.016,
                   "best": "64x128x64 s4 tma g8"}]},
               {"case": "broken", "status": "candidates failed"}]}
    text = make_tables.tune_table(rep)
    assert ("| matmul_1000 | contraction | 2/3 | 0.0200 | 0.0300 | 0.0180 "
            "| 0.0160 | 64x128x64 s4 tma g8 | 1.250 |") in text
    assert "| broken | - |" in text and "candidates failed" in text
    assert "NVIDIA H200, commit 0123456789" in text
