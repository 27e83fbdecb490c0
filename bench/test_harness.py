"""Self-test of bench/harness.py's pure-Python parts and bench/make_tables.py
(NumPy only; no GPU): the elementwise check must reject one wrong element,
a NaN where the reference has inf, an inf of the wrong sign, an unwritten
(NaN) element; ratios, spreads and verdicts; schema validation; the README
table generated from JSON. Run: /usr/bin/python3 -m pytest bench/test_harness.py
"""

import copy
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import make_tables  # noqa: E402
import sanitize  # noqa: E402


def bf16(a):
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


@pytest.fixture
def ref():
    return np.random.default_rng(0).standard_normal((128, 64))


TOL = harness.Tolerance("bf16", reduction=64)


def test_rounded_output_passes(ref):
    c = harness.check_elementwise(bf16(ref), ref, TOL)
    assert c["ok"] and c["bad"] == 0 and c["max_err"] <= 1
    assert c["elements"] == ref.size


@pytest.mark.parametrize("delta", [0.1, -1.0, 100.0])
def test_one_wrong_element_fails(ref, delta):
    got = bf16(ref)
    got[17, 5] += delta
    c = harness.check_elementwise(got, ref, TOL)
    assert not c["ok"] and c["bad"] == 1
    assert c["worst"]["index"] == [17, 5]
    assert c["max_err"] > 1


def test_one_wrong_row_fails_though_normwise_small(ref):
    big = np.random.default_rng(1).standard_normal((4096, 64))
    got = bf16(big)
    got[100] *= 1.05  # 5% off on one row of 4096: norm-wise 8e-4
    assert np.linalg.norm(got - big) / np.linalg.norm(big) < 2e-3
    c = harness.check_elementwise(got, big, TOL)
    assert not c["ok"] and c["worst"]["index"][0] == 100


def test_nan_where_ref_inf_fails(ref):
    r = ref.copy()
    r[3, 3] = np.inf
    got = bf16(r)
    got[3, 3] = np.nan
    c = harness.check_elementwise(got, r, TOL)
    assert not c["ok"] and c["nonfinite_mismatch"] == 1
    assert c["worst"] == {"index": [3, 3], "got": "nan", "ref": "inf"}


def test_infinities_must_match_with_sign(ref):
    r = ref.copy()
    r[0, 0], r[1, 1], r[2, 2] = np.inf, -np.inf, np.nan
    got = bf16(r)
    assert harness.check_elementwise(got, r, TOL)["ok"]
    got[1, 1] = np.inf
    assert not harness.check_elementwise(got, r, TOL)["ok"]
    got = bf16(r)
    got[2, 2] = 0.0  # a number where the reference is NaN
    assert not harness.check_elementwise(got, r, TOL)["ok"]


def test_unwritten_nan_fails(ref):
    got = bf16(ref)
    got[5, 9] = np.nan
    c = harness.check_elementwise(got, ref, TOL)
    assert not c["ok"] and c["worst"]["index"] == [5, 9]


def test_overflow_to_same_infinity_passes():
    r = np.array([1e39, -1e39, 1.0])
    got = np.array([np.inf, -np.inf, 1.0])
    assert harness.check_elementwise(got, r, TOL)["ok"]
    assert not harness.check_elementwise(np.array([np.inf, np.inf, 1.0]),
                                         r, TOL)["ok"]


def test_chunked_equals_whole(ref):
    got = bf16(ref)
    got[127, 63] += 1
    a = harness.check_elementwise(got, ref, TOL)
    b = harness.check_elementwise(got, ref, TOL, chunk=1000)
    assert (a["bad"], a["worst"], a["ok"]) == (b["bad"], b["worst"], b["ok"])
    assert math.isclose(a["max_err"], b["max_err"])


def test_integers_exact():
    t = harness.Tolerance("i32")
    r = np.arange(10.0)
    assert harness.check_elementwise(np.arange(10), r, t)["ok"]
    g = np.arange(10)
    g[4] = 5
    assert not harness.check_elementwise(g, r, t)["ok"]


def test_tolerance_rule():
    t = harness.Tolerance("bf16", reduction=1, roundings=1)
    assert t.rtol == 2 * 2 ** -8
    assert math.isclose(t.atol_over_scale(), 8 * 2 ** -8, rel_tol=1e-3)
    f32 = harness.Tolerance("f32", reduction=4096)
    assert f32.atol_over_scale() < 1e-4
    tf = harness.Tolerance("f32", reduction=4096, operand="tf32")
    assert tf.atol_over_scale() > f32.atol_over_scale()
    assert harness.Tolerance("bf16", roundings=16).atol_over_scale() > \
        t.atol_over_scale()


def test_shape_mismatch_fails(ref):
    c = harness.check_elementwise(np.zeros(5), ref, TOL)
    assert not c["ok"] and "error" in c


def test_bits_equal_nan():
    a = np.array([np.nan, 1.0], np.float32)
    assert harness.bits_equal(a, a.copy())
    assert not harness.bits_equal(a, np.array([np.nan, 2.0], np.float32))


def test_ratio_summary_and_verdicts():
    s = harness.ratio_summary([1, 1, 1, 1, 1], [1.1, 1.2, 0.9, 1.3, 1.1])
    assert s["ratio"] == pytest.approx(1.1)
    assert s["spread"] == [0.9, 1.3] and s["verdict"] == "tie"
    s = harness.ratio_summary([2, 2, 2, 2, 2], [2.2, 2.4, 2.3, 2.5, 2.2])
    assert s["verdict"] == "win" and s["spread"][0] > 1
    s = harness.ratio_summary([1, 1, 1, 1, 1], [0.5, 0.6, 0.7, 0.6, 0.5])
    assert s["verdict"] == "loss" and s["ratio"] == pytest.approx(0.6)
    assert harness.verdict(1.0, 1.2) == "tie"
    with pytest.raises(ValueError):
        harness.ratio_summary([1, 1], [1])


def test_round_orders_alternate():
    o = harness.round_orders(["tang", "a", "b"], 5)
    assert o[0] == ["tang", "a", "b"] and o[1] == ["b", "a", "tang"]
    assert len(o) == 5 and o[4] == o[0]


def test_compare_picks_fastest_correct_peer():
    timed = {"tang": {"rounds": [1.0] * 5, "ms": 1.0},
             "fast_wrong": {"rounds": [0.5] * 5, "ms": 0.5},
             "slow": {"rounds": [1.2, 1.3, 1.1, 1.2, 1.25], "ms": 1.2},
             "broken": {"error": "RuntimeError: x"}}
    c = harness.compare("tang", timed, excluded=["fast_wrong"])
    assert c["best_peer"] == "slow" and c["verdict"] == "win"
    assert c["peers"]["broken"] is None
    assert c["ratio"] == pytest.approx(1.2)


def report(**over):
    rep = {"schema": harness.SCHEMA, "suite": "gemm", "date": "2026-12-02",
           "commit": "abc", "dirty": False, "device": "NVIDIA H200",
           "clocks": {"before": {}, "after": {}}, "torch": "2.11",
           "settings": {"rounds": 5}, "cases": [
               harness.case_result("a", max_err=0.3, tang_ms=1.0,
                                   peers={"cublas": 1.2}, best_peer="cublas",
                                   ratio=1.2, spread=[1.1, 1.3],
                                   verdict="win"),
               harness.case_result("b", max_err=0.2, tang_ms=2.0,
                                   peers={"cublas": 1.0}, best_peer="cublas",
                                   ratio=0.5, spread=[0.45, 0.55],
                                   verdict="loss"),
               harness.case_result("c", status="skipped: budget"),
               harness.case_result("d", status="incorrect", max_err=40.0)]}
    rep.update(over)
    return rep


def test_schema_valid_and_invalid():
    assert harness.validate_report(report()) == []
    bad = report()
    del bad["commit"]
    assert any("commit" in p for p in harness.validate_report(bad))
    bad = report()
    bad["cases"][0]["ratio"] = 2.0  # outside its spread
    assert harness.validate_report(bad)
    bad = report()
    bad["cases"][0]["verdict"] = "tie"
    assert harness.validate_report(bad)
    bad = report()
    bad["cases"][0]["max_err"] = 3.0  # ok with an error over its bound
    assert harness.validate_report(bad)
    bad = report()
    bad["cases"][0]["status"] = "great"
    assert harness.validate_report(bad)
    assert harness.validate_report(report(schema="other"))


def test_write_report_non_finite(tmp_path):
    rep = report()
    rep["cases"][3]["max_err"] = math.inf
    harness.write_report(rep, tmp_path / "gemm.json")
    back = json.loads((tmp_path / "gemm.json").read_text())
    assert back["cases"][3]["max_err"] == "inf"
    assert harness.validate_report(back) == []


def test_make_tables(tmp_path):
    res = tmp_path / "results"
    res.mkdir()
    (res / "gemm.json").write_text(json.dumps(report()))
    (res / "other.json").write_text(json.dumps({"not": "ours"}))
    dirty = copy.deepcopy(report(suite="block_grad", dirty=True))
    (res / "block_grad.json").write_text(json.dumps(dirty))
    readme = tmp_path / "README.md"
    readme.write_text(f"x\n{make_tables.BEGIN}\nold\n{make_tables.END}\ny\n")
    assert make_tables.main(["--results", str(res), "--readme",
                             str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("x\n") and text.endswith("y\n") and "old" not in text
    for case in ("| a |", "| b |", "| c |", "| d |"):
        assert case in text
    assert "win: tang 1.20x faster" in text
    assert "**loss**: tang takes 2.00x" in text
    assert "**INCORRECT**" in text and "skipped: budget" in text
    assert "dirty tree" in text
    assert text.index("Tensor-core") < text.index("Transformer block forward"
                                                  " + backward")
    assert (res / "gemm.md").exists()
    assert make_tables.main(["--results", str(res), "--readme", str(readme),
                             "--check"]) == 0
    readme.write_text(text.replace("| a |", "| z |"))
    assert make_tables.main(["--results", str(res), "--readme", str(readme),
                             "--check"]) == 1


def test_make_tables_rejects_invalid(tmp_path):
    res = tmp_path / "results"
    res.mkdir()
    bad = report()
    bad["cases"][0]["verdict"] = "tie"
    (res / "gemm.json").write_text(json.dumps(bad))
    readme = tmp_path / "README.md"
    readme.write_text(f"{make_tables.BEGIN}\n{make_tables.END}\n")
    with pytest.raises(ValueError):
        make_tables.main(["--results", str(res), "--readme", str(readme)])


def _grad_case(tang_errs, peer_errs, nonfinite=0):
    checks = [{"name": f"gpu float64 autograd: {n}", "ok": e <= 1,
               "max_err": e, "bad": 0 if e <= 1 else 3,
               "nonfinite_mismatch": nonfinite}
              for n, e in zip(("O", "dQ", "dK", "dV"), tang_errs)]
    peers = {p: [{"name": f"{p} {n}", "ok": e <= 1, "max_err": e,
                  "max_err_at_tang_bound": e}
                 for n, e in zip(("dQ", "dK", "dV"), errs)]
             for p, errs in peer_errs.items()}
    return {"status": "incorrect", "checks": checks, "note": ""}, peers


def test_gradient_within_peers_accuracy_passes_with_a_note():
    import bench_attention_grad as bag
    res, peers = _grad_case([0.5, 1.7, 0.9, 0.8],
                            {"flash": [1.6, 1.0, 0.7], "cudnn": [1.9, 1, 1]})
    bag.within_peers(res, peers)
    assert res["status"] == "ok" and "peers' accuracy" in res["note"]


def test_gradient_worse_than_peers_stays_incorrect():
    import bench_attention_grad as bag
    res, peers = _grad_case([0.5, 2.5, 0.9, 0.8],
                            {"flash": [1.6, 1.0, 0.7]})
    bag.within_peers(res, peers)
    assert res["status"] == "incorrect"
    # A wrong forward output is never excused by the peers.
    res, peers = _grad_case([1.5, 0.5, 0.5, 0.5], {"flash": [5, 5, 5]})
    bag.within_peers(res, peers)
    assert res["status"] == "incorrect"
    # Nor is a NaN/inf pattern that differs from the reference.
    res, peers = _grad_case([0.5, 1.2, 0.5, 0.5], {"flash": [5, 5, 5]},
                            nonfinite=1)
    bag.within_peers(res, peers)
    assert res["status"] == "incorrect"


def test_sensitivity_widens_only_ill_conditioned_elements(ref):
    tol = harness.Tolerance("f32", reduction=64, roundings=4)
    scale = float(np.sqrt((ref ** 2).mean()))
    atol = tol.atol_over_scale() * scale
    got = ref.copy()
    got[3, 5] += 5 * atol          # an error five times the plain bound
    sens = np.zeros_like(ref)
    assert not harness.check_elementwise(got, ref, tol)["ok"]
    # Measured: this element moves by atol when the inputs are rounded.
    sens[3, 5] = atol
    c = harness.check_elementwise(got, ref, tol, sensitivity=sens)
    assert c["ok"] and "sensitivity" in c["rule"]
    # Elsewhere the sensitivity is zero: an error there still fails, and a
    # NaN sensitivity counts as zero.
    got[7, 1] += 5 * atol
    sens[7, 1] = np.nan
    assert not harness.check_elementwise(got, ref, tol, sensitivity=sens)["ok"]


def test_judge_checks_names_failures_and_nondeterminism():
    good = {"name": "out", "ok": True, "max_err": 0.3}
    bad = {"name": "dQ", "ok": False, "max_err": 3.0, "bad": 2,
           "elements": 64, "worst": {"index": [1], "got": 1.0, "ref": 0.0}}
    res = harness.case_result("c", checks=[good])
    assert harness.judge_checks(res, True) and res["status"] == "ok"
    assert res["max_err"] == 0.3
    res = harness.case_result("c", checks=[good, bad])
    assert not harness.judge_checks(res, True)
    assert res["status"] == "incorrect" and "dQ: 2 of 64 bad" in res["note"]
    res = harness.case_result("c", checks=[good])
    assert not harness.judge_checks(res, False)
    assert "runs differ" in res["note"]


def test_record_timing_excludes_incorrect_peers():
    timed = {"tang": {"rounds": [1.0] * 5, "ms": 1.0},
             "fast_wrong": {"rounds": [0.5] * 5, "ms": 0.5},
             "slow": {"rounds": [2.0] * 5, "ms": 2.0}}
    res = harness.case_result("c", flops=2e9)
    harness.record_timing(res, timed, ["fast_wrong"])
    assert res["best_peer"] == "slow" and res["incorrect_peers"] == ["fast_wrong"]
    assert abs(res["ratio"] - 2.0) < 1e-9 and abs(res["tang_tflops"] - 2.0) < 1e-9


def test_sanitizer_reports_attributed_to_their_case():
    """compute-sanitizer's log is split at the case markers: a report (or a
    non-finite output) fails only its own case, the banner and summaries
    fail none, and a case that never started is None."""
    mark = harness.CASE_MARK
    log = ("========= COMPUTE-SANITIZER\n"
           f"{mark}a\n"
           "========= Invalid __global__ read of size 4 bytes\n"
           "=========     at main_k0+0x10\n"
           f"{mark}b\n"
           "outputs [0] of b hold non-finite values\n"
           f"{mark}c\n"
           "========= \n"
           "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 "
           "warnings)\n")
    got = sanitize.attribute(log, ["a", "b", "c", "d"])
    assert len(got["a"]) == 2 and "Invalid" in got["a"][0]
    assert got["b"] == ["outputs [0] of b hold non-finite values"]
    assert got["c"] == []
    assert got["d"] is None


def test_out_of_memory_api_errors_are_no_kernel_fault():
    """An allocation of the application failing beside the tool (the API
    error compute-sanitizer shows, with its backtrace) is no report against
    a kernel: the case is "not run" unless its suite judged it; a real
    report after it still fails the case."""
    mark = harness.CASE_MARK
    oom = ("========= Program hit cudaErrorMemoryAllocation (error 2) due to "
           "\"out of memory\" on CUDA API call to cudaMalloc.\n"
           "=========     Saved host backtrace up to driver entry point\n"
           "=========         Host Frame: alloc_block [0x2f4ca] in "
           "libc10_cuda.so\n")
    log = (f"{mark}a\n" + oom + f"{mark}b\n" + oom +
           "========= Invalid __global__ read of size 4 bytes\n"
           "=========     at main_k0+0x10\n")
    ooms = set()
    got = sanitize.attribute(log, ["a", "b"], ooms)
    assert got["a"] == [] and ooms == {"a", "b"}
    assert len(got["b"]) == 2 and "Invalid" in got["b"][0]
    assert sanitize.stray_reports(oom + f"{mark}a\n", ["a"]) == []
    assert sanitize.classify(got["a"], "failed", False, False, True) == (
        "not run", "out of GPU memory beside the tool")
    assert sanitize.classify(got["a"], "ok", False, False, True)[0] == "clean"
    assert sanitize.classify(got["b"], "failed", False, False, True)[0] == \
        "failed"



def test_schedule_cache_option(tmp_path, monkeypatch):
    """The benchmarks compile with the shipped tuning cache where it
    exists, unless TANG_SCHEDULE_CACHE=off."""
    monkeypatch.setattr(harness, "SCHEDULE_CACHE", tmp_path / "none.json")
    monkeypatch.delenv("TANG_SCHEDULE_CACHE", raising=False)
    assert harness.schedule_cache_option() == ""
    cache = tmp_path / "h200.json"
    cache.write_text('{"version": 1, "entries": []}')
    monkeypatch.setattr(harness, "SCHEDULE_CACHE", cache)
    assert harness.schedule_cache_option() == f"schedule-cache={cache} "
    monkeypatch.setenv("TANG_SCHEDULE_CACHE", "off")
    assert harness.schedule_cache_option() == ""


class _FakeEvent:
    def __init__(self, enable_timing=True):
        self.t = 0.0

    def record(self):
        import time
        self.t = time.perf_counter()

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


class _FakeTorch:
    """Just what check_and_time touches of torch (no GPU): CUDA events on
    the host clock."""
    class cuda:
        Event = _FakeEvent

        @staticmethod
        def synchronize():
            pass


class _Out:
    def __init__(self, a):
        self.a = a

    def float(self):
        return self.a


def test_check_and_time_checks_excludes_and_times(monkeypatch):
    """Peers are checked (informational), a wrong one is excluded from the
    best peer, one that raises is listed and not timed; tang and the rest
    are timed in rounds and compared."""
    monkeypatch.setenv("TANG_BENCH_GRAPHS", "0")
    ref = np.linspace(-1.0, 1.0, 64)
    tol = harness.Tolerance("bf16", reduction=16, roundings=1)

    def raises():
        raise RuntimeError("no kernel for these shapes")
    contenders = [("tang", lambda: _Out(ref.copy())),
                  ("right", lambda: _Out(ref * (1 + 2 ** -10))),
                  ("wrong", lambda: _Out(ref + 0.5)),
                  ("refuses", raises)]
    res = harness.case_result("fake")
    timed = harness.check_and_time(_FakeTorch, res, contenders, ref, tol,
                                   rounds=5, target_ms=0.01)
    assert set(timed) == {"tang", "right", "wrong"}
    assert res["peer_errors"] == {"refuses": "RuntimeError: no kernel for "
                                  "these shapes"}
    assert res["incorrect_peers"] == ["wrong"]
    assert res["best_peer"] == "right"
    assert [c["name"] for c in res["checks"]] == ["right", "wrong"]
    assert all(c["informational"] for c in res["checks"])
    assert res["graphed"]["tang"] == "TANG_BENCH_GRAPHS=0"
    assert len(timed["tang"]["rounds"]) == 5


FAKE_SANITIZER = """#!/bin/sh
# compute-sanitizer's options up to the program, then the program, then
# its summary (the error count given by FAKE_ERRORS).
while [ "$1" != "$PYTHON" ]; do shift; done
"$@"
code=$?
echo "========= ERROR SUMMARY: ${FAKE_ERRORS:-0} errors"
[ "${FAKE_ERRORS:-0}" != 0 ] && exit 9
exit $code
"""

FAKE_SUITE = """
import json, os, sys
sys.path.insert(0, %r)
import harness
out = sys.argv[sys.argv.index("--out") + 1]
assert "--sanitize" in sys.argv
rep = harness.new_report("fake")
if os.environ.get("FAKE_STRAY"):
    print("========= Invalid __global__ read of size 4 bytes")
for name in ("clean", "racy", "oom", "died"):
    harness.start_case(rep, name, None)
    if name == "oom":
        harness.set_case(rep, harness.case_result(
            name, status="failed", note="OutOfMemoryError"), None)
        continue
    if name == "racy" and not os.environ.get("FAKE_QUIET"):
        print("========= Error: Race reported between Write access at "
              "main_k0+0x10")
        print("=========     and Read access at main_k0+0x20")
    if name == "died":
        break
    harness.set_case(rep, harness.case_result(name), None)
if os.environ.get("FAKE_TIMED"):  # a timed case, never run here
    harness.set_case(rep, harness.case_result(
        "timed", status=harness.NOT_REACHED), None)
json.dump(rep, open(out + "/fake.json", "w"))
"""


def fake_sanitizer(tmp_path, monkeypatch):
    """FAKE_SANITIZER installed as compute-sanitizer first on PATH."""
    tool = tmp_path / "bin" / "compute-sanitizer"
    tool.parent.mkdir()
    tool.write_text(FAKE_SANITIZER)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}:{os.environ['PATH']}")
    monkeypatch.setenv("PYTHON", sys.executable)


def test_sanitize_run_suite(tmp_path, monkeypatch):
    """bench/sanitize.py's parent with a stand-in compute-sanitizer and
    suite: a report fails its own case only, a case the child did not
    finish fails, a clean case passes, every child's log lands in one
    file; a tool summary that counts errors with no case to blame fails
    every case."""
    fake_sanitizer(tmp_path, monkeypatch)
    suite = tmp_path / "fake_suite.py"
    suite.write_text(FAKE_SUITE % str(Path(__file__).parent))
    log = tmp_path / "sanitize.log"
    log.write_text("")
    checks = sanitize.run_suite("fake", str(suite), "main_", "racecheck",
                                None, time.time() + 60, False,
                                tmp_path / "work", log)
    assert set(checks) == {"clean", "racy", "oom", "died"}
    assert checks["clean"]["verdict"] == "clean"
    assert checks["racy"]["verdict"] == "failed"
    assert "Race reported" in checks["racy"]["tail"]
    # Failed by its suite before tang ran (a reference out of memory): not
    # clean, not a report.
    assert checks["oom"]["verdict"] == "not run"
    assert "failed" in checks["oom"]["reason"]
    assert checks["died"]["verdict"] == "failed" and "died" in \
        checks["died"]["tail"]
    assert "######## fake under racecheck" in log.read_text()
    monkeypatch.setenv("FAKE_ERRORS", "3")
    monkeypatch.setenv("FAKE_QUIET", "1")
    checks = sanitize.run_suite("fake", str(suite), "main_", "memcheck",
                                None, time.time() + 60, False,
                                tmp_path / "work2", log)
    assert not checks["clean"]["ok"] and checks["clean"]["errors"] == 3
    # A report before the first case: no case is known clean.
    monkeypatch.delenv("FAKE_ERRORS")
    monkeypatch.setenv("FAKE_STRAY", "1")
    checks = sanitize.run_suite("fake", str(suite), "main_", "memcheck",
                                None, time.time() + 60, False,
                                tmp_path / "work3", log)
    assert checks["clean"]["verdict"] == "failed"
    assert "Invalid __global__" in checks["clean"]["tail"]


def test_sanitize_attention_child_finished_cases():
    """The attention child writes no report: a case is finished when
    another mark follows its own (the child ends with "(end)")."""
    m = harness.CASE_MARK
    assert sanitize.finished_marks(f"{m}a\nx\n{m}b\n{m}(end)\n") == {"a", "b"}
    assert sanitize.finished_marks(f"{m}a\n{m}b\nTraceback\n") == {"a"}


HANGING_SUITE = """
import json, os, sys, time
sys.path.insert(0, %r)
import harness
out = sys.argv[sys.argv.index("--out") + 1]
rep = harness.new_report("fake")
harness.start_case(rep, "done", None)
harness.set_case(rep, harness.case_result("done"), None)
json.dump(rep, open(out + "/fake.json", "w"))
harness.start_case(rep, "hangs", None)
json.dump(rep, open(out + "/fake.json", "w"))
open(%r, "w").write(str(os.getpid()))
time.sleep(600)
"""


def test_sanitize_kills_a_child_at_its_deadline(tmp_path, monkeypatch):
    """A child past its deadline is killed with its whole process group
    (no process left holding the GPU); the case it finished is clean, the
    one in flight skipped, neither failed."""
    fake_sanitizer(tmp_path, monkeypatch)
    pid_file = tmp_path / "pid"
    suite = tmp_path / "hanging_suite.py"
    suite.write_text(HANGING_SUITE % (str(Path(__file__).parent),
                                      str(pid_file)))
    log = tmp_path / "sanitize.log"
    log.write_text("")
    monkeypatch.setattr(sanitize, "MIN_CHILD_S", 3.0)
    monkeypatch.setattr(sanitize, "GRACE_S", 0.0)
    t0 = time.time()
    checks = sanitize.run_suite("fake", str(suite), "main_", "memcheck",
                                None, time.time(), False,
                                tmp_path / "work", log)
    assert time.time() - t0 < 30
    assert checks["done"]["verdict"] == "clean"
    assert checks["hangs"]["verdict"] == "not run"
    assert "killed at the deadline" in checks["hangs"]["reason"]
    # Gone, or a zombie waiting for its reaper (it runs no more).
    stat = Path(f"/proc/{int(pid_file.read_text())}/stat")
    time.sleep(0.2)
    assert not stat.exists() or stat.read_text().split(")")[-1].split()[0] \
        == "Z"


def test_sanitize_resume(tmp_path, monkeypatch):
    """--resume: a case clean under a tool in an earlier report does not
    run under it again, its checks carry into the new report, and a tool
    still to do runs; the per-tool verdicts (make_tables' table) follow."""
    fake_sanitizer(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_QUIET", "1")
    monkeypatch.setenv("FAKE_TIMED", "1")
    suite = tmp_path / "fake_suite.py"
    suite.write_text(FAKE_SUITE % str(Path(__file__).parent))
    monkeypatch.setattr(sanitize, "SUITES",
                        [("fake", str(suite), "main_", tmp_path)])
    first = tmp_path / "first"
    monkeypatch.setattr(sys, "argv", ["sanitize.py", "--out", str(first),
                                      "--tools", "memcheck"])
    assert sanitize.main() == 1  # "died" never finished
    rep = json.loads((first / "sanitize.json").read_text())
    got = {c["case"]: c for c in rep["cases"]}
    assert got["fake/clean"]["tools"] == {"memcheck": "clean"}
    assert got["fake/oom"]["status"].startswith("skipped")
    assert got["fake/died"]["status"] == "failed"
    assert got["fake/timed"]["status"].startswith("skipped")
    # The suite no longer lists "timed" (never run): it leaves the report.
    monkeypatch.delenv("FAKE_TIMED")
    second = tmp_path / "second"
    monkeypatch.setattr(sys, "argv", [
        "sanitize.py", "--out", str(second), "--tools", "memcheck,racecheck",
        "--resume", str(first / "sanitize.json")])
    sanitize.main()
    log = (second / "sanitize.log").read_text()
    # memcheck ran again (a case was not clean: the fake takes no --cases),
    # racecheck for the first time.
    assert "fake under memcheck" in log and "fake under racecheck" in log
    rep = json.loads((second / "sanitize.json").read_text())
    got = {c["case"]: c for c in rep["cases"]}
    assert got["fake/clean"]["tools"] == {"memcheck": "clean",
                                          "racecheck": "clean"}
    assert "fake/timed" not in got and "fake/oom" in got
    assert len([k for k in got["fake/clean"]["checks"]
                if k["name"] == "memcheck"]) == 2
    third = tmp_path / "third"
    monkeypatch.setattr(sys, "argv", [
        "sanitize.py", "--out", str(third), "--tools", "racecheck",
        "--suites", "fake", "--cases", "clean",
        "--resume", str(second / "sanitize.json")])
    sanitize.main()
    # Nothing left to do under racecheck for "clean": no child ran.
    assert "fake under racecheck" not in (third / "sanitize.log").read_text()


def test_program_shape_counts_a_tensor_scans_steps():
    """Each tensor scan adds its steps times its monoid's comprehensions to
    the roundings: two scans of 5 steps under a combine of three."""
    text = (Path(__file__).resolve().parents[1] / "test" / "Dialect" /
            "Tang" / "tensor-scan.mlir").read_text()
    K, R = harness.program_shape(text)
    # Three comprehensions in the combine; scans of 5 steps, twice.
    assert (K, R) == (3, 3 + 2 * 5 * 3)
    assert harness.program_shape(text.replace("tensor_scan", "scan_"))[1] == 3
