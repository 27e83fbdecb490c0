#!/usr/bin/env python3
"""Runs tang's kernels under compute-sanitizer (GPU machine): every kernel
of the GPU check (every example, f32/f16/bf16 and the gradients), of every
benchmark suite and of the Qwen3 model steps, and the small attention
cases (ragged lengths, causal, head dims 64-256, grouped queries, forward
and training).

Each suite's own script runs in --sanitize mode (bench/harness.py: tang's
kernels run and checked once per case, no peers, no timing) as the child
of `compute-sanitizer --tool T --kernel-name kns=SUBSTRING`, SUBSTRING a
part of the names of tang's kernels in that suite's bundles (kernels are
named <function>_k<n>), so PyTorch's kernels (inputs, references) run
uninstrumented; one child per suite and tool. The attention cases run in
this script's own child mode. Every case prints harness.CASE_MARK before
its work; a report of the tool in a case's part of the log (from its mark
to the next), a non-finite output (attention cases), a case the child
never finished, or the tool's failure fails the case. initcheck is not in
the default tools: it must see every kernel (PyTorch's writes of the
inputs), which makes the suites' float64 references slow under it.

  python3 bench/sanitize.py --out $OUT [--tools T,..] [--suites S ..]
      [--cases CASE ..] [--deadline UNIX_TIME | --budget-s S]

Writes sanitize.json (bench/harness.py's schema: one case per suite and
case, "suite/case", one check per tool) and sanitize.log (every child's
output); a suite whose work directory was
not prepared (bench/prepare_all.py, scripts/prepare-gpu-check.py) is
listed as "skipped: not prepared".
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402

GEMM = ROOT / "gpu-work" / "gemm"
GRAD = ROOT / "gpu-work" / "attention-grad"
TOOLS = ("memcheck", "racecheck", "synccheck")

#: (suite, script (None: this script's attention child), a substring of
#: its kernels' names, the work directory it needs). In order of priority:
#: a budget that runs out skips the last.
SUITES = [
    ("attention", None, "main_", GEMM),
    ("gpu_check", "bench/gpu_check.py", "main_k", ROOT / "gpu-work" / "check"),
    ("gemm", "bench/bench_gemm.py", "main_", GEMM),
    ("attention_grad", "bench/bench_attention_grad.py", "main_", GRAD),
    ("block_grad", "bench/bench_block_grad.py", "main_",
     ROOT / "gpu-work" / "block-grad"),
    ("memory_bound", "bench/bench_memory_bound.py", "main_",
     ROOT / "gpu-work" / "bench"),
    ("decode", "bench/bench_decode.py", "decode_attention_k",
     ROOT / "gpu-work" / "decode"),
    ("moe", "bench/bench_moe.py", "moe_layer_k", ROOT / "gpu-work" / "moe"),
    ("delta", "bench/bench_delta.py", "gated_delta_rule_k",
     ROOT / "gpu-work" / "delta"),
    ("gated_attention", "bench/bench_gated_attention.py", "gated_attention_k",
     ROOT / "gpu-work" / "gated_attention"),
    ("qwen3", "bench/qwen3_decode.py", "decode_step_k",
     ROOT / "gpu-work" / "qwen3"),
    ("qwen3_prefill", "bench/qwen3_prefill.py", "prefill_k",
     ROOT / "gpu-work" / "qwen3"),
    ("qwen3_varlen", "bench/qwen3_varlen.py", "decode_step_k",
     ROOT / "gpu-work" / "qwen3"),
]

#: The attention cases: small, ragged and causal, every head dim, a
#: persistent grid whose blocks take several tiles, forward and training
#: (prepared by bench/prepare_all.py).
ATTENTION_CASES = ["attention_2x3x200x64_causal", "attention_1x2x136x128",
                   "attention_1x2x200x192_causal", "attention_1x2x256x256",
                   "attention_gqa_1x4x1000x128_causal_g4",
                   "attention_8x16x256x64_causal",
                   "grad_1x2x200x64_causal", "grad_1x2x136x128"]


def run_attention(cases):
    """The attention child: each case's bundle functions once on random
    inputs, harness.CASE_MARK before each."""
    sys.path.insert(0, str(ROOT / "python"))
    import torch
    import tang.cuda as tang_cuda
    bf = torch.bfloat16
    torch.manual_seed(0)
    bad = 0
    for case in cases:
        print(harness.CASE_MARK + case, flush=True)
        if (GEMM / case / "meta.json").exists():
            meta = json.loads((GEMM / case / "meta.json").read_text())
            ins = [(torch.rand(s, device="cuda") * 2 - 1).to(bf)
                   for s in meta["inputs"]]
            out = torch.empty(meta["output"], device="cuda", dtype=bf)
            tang_cuda.Bundle(GEMM / case / "bundle").run("main", *ins,
                                                         outputs=[out])
            outs = [out]
        else:
            meta = json.loads((GRAD / case / "meta.json").read_text())
            p = meta["params"]
            shape = (p["B"], p["H"], p["L"], p["D"])
            ins = [(torch.rand(shape, device="cuda") * 2 - 1).to(bf)
                   for _ in range(4)]
            train = tang_cuda.Bundle(GRAD / case / "train")
            o = torch.empty(shape, device="cuda", dtype=bf)
            stats = [torch.empty(shape[:3], device="cuda",
                                 dtype=torch.float32) for _ in range(2)]
            grads = [torch.empty(shape, device="cuda", dtype=bf)
                     for _ in range(3)]
            train.run("main_fwd", *ins[:3], outputs=[o, *stats])
            train.run("main_bwd", *ins[:3], o, *stats, ins[3],
                      outputs=grads)
            outs = [o, *grads]
        torch.cuda.synchronize()
        nonfinite = [i for i, t in enumerate(outs)
                     if not torch.isfinite(t).all()]
        if nonfinite:
            print(f"outputs {nonfinite} of {case} hold non-finite values",
                  flush=True)
            bad = 1
    print(harness.CASE_MARK + "(end)", flush=True)
    return bad


def is_report(ln):
    """Whether a log line is the tool's report (or the attention child's
    non-finite output), not its banner or summary."""
    return (ln.startswith("=========") and "SUMMARY" not in ln
            and "COMPUTE-SANITIZER" not in ln.upper()
            and "Target application returned" not in ln
            and bool(ln.strip("= "))) or "non-finite" in ln


#: Words of the head of an API error that is an allocation failing: the
#: application (PyTorch's allocator, beside the tool's own memory) out of
#: memory, no fault of a kernel.
OOM_WORDS = ("cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY",
             "out of memory")


def split_oom(lines):
    """(the reports among report `lines`, the out-of-memory API errors
    among them). A report is a head line (text right after the tool's
    "=========" marker) and its indented continuation lines (a backtrace);
    one whose head names a failed allocation (OOM_WORDS) is the
    application out of memory."""
    reports, oom, into = [], [], None
    for ln in lines:
        body = ln[len("========="):] if ln.startswith("=========") else ln
        if into is None or not body.startswith("  "):
            into = oom if any(w in ln for w in OOM_WORDS) else reports
        into.append(ln)
    return reports, oom


def attribute(text, cases, oom=None):
    """{case: the tool's report lines in its part of the log} (None: the
    case never started). A case's part runs from its CASE_MARK line to the
    next; the tool's banner and summaries are not reports, nor are the
    application's out-of-memory API errors: the cases with some go into
    the set `oom` when given."""
    parts = text.split(harness.CASE_MARK)
    found = {}
    for case in cases:
        part = next((q for q in parts[1:] if q.split("\n", 1)[0] == case),
                    None)
        if part is None:
            found[case] = None
            continue
        found[case], ooms = split_oom(
            [ln for ln in part.splitlines()[1:] if is_report(ln)])
        if ooms and oom is not None:
            oom.add(case)
    return found


def stray_reports(text, cases):
    """The tool's report lines in no listed case's part: before the first
    mark (a suite's setup), or after a mark of no listed case; the
    application's out-of-memory API errors are none."""
    parts = text.split(harness.CASE_MARK)
    lines = parts[0].splitlines() + [
        ln for q in parts[1:] if q.split("\n", 1)[0] not in cases
        for ln in q.splitlines()[1:]]
    return split_oom([ln for ln in lines if is_report(ln)])[0]


def finished_marks(text):
    """The cases whose mark another mark follows (the attention child
    prints a last "(end)" mark): the cases it finished."""
    names = [q.split("\n", 1)[0] for q in text.split(harness.CASE_MARK)[1:]]
    return set(names[:-1])


def errors_of(text):
    """The error count of the tool's summary (None: no summary).
    memcheck, synccheck, initcheck: "ERROR SUMMARY: N errors"; racecheck:
    "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)"."""
    summary = re.findall(r"ERROR SUMMARY: (\d+) error|\((\d+) errors?",
                         text)
    return int([a or b for a, b in summary][-1]) if summary else None


#: A child runs at least this long, and this long past its deadline (a
#: suite finishes the case in flight) before it is killed.
MIN_CHILD_S, GRACE_S = 30.0, 20.0


def classify(found, status, timed_out, tool_failed, oom=False):
    """(verdict, reason) of one case under one tool: "failed" (the tool
    reported in its part, could not be trusted, or the suite's process
    died in it on its own), "clean" (it ran -- the suite judged it ok or
    incorrect -- with no report), or "not run" (the suite skipped it,
    failed it before its kernels ran -- a PyTorch reference out of memory,
    say --, never reached it, or it was in flight when the child was killed
    at its deadline: a hang or the budget). `oom`: an allocation of the
    application failed in the case (an API error the tool shows, no fault
    of a kernel): unless the suite then judged the case, it did not run."""
    if found:
        return "failed", "the tool reported"
    if tool_failed:
        return "failed", "the tool failed or reported outside any case"
    if oom and status not in ("ok", "incorrect"):
        return "not run", "out of GPU memory beside the tool"
    if found is None or status in (None, harness.NOT_REACHED):
        return "not run", "not reached"
    if status == harness.DIED_IN:
        return (("not run", "in flight when killed at the deadline (a hang "
                 "or the budget)") if timed_out else
                ("failed", "the suite's process died in it"))
    if status.startswith("skipped"):
        return "not run", status
    if status in ("ok", "incorrect"):
        return "clean", f"ran ({status})"
    return "not run", f"the suite: {status}"


def run_suite(suite, script, pattern, tool, cases, deadline, quick, tmp,
              log_path):
    """One child under `tool`; returns ({case: check}, [the cases the
    suite listed], {case: its status in the suite's report})."""
    t0 = time.time()
    # tang's kernels only, except for initcheck: it must see the writes of
    # PyTorch's kernels that fill the inputs (filtered out, every input
    # read looks uninitialised).
    only = [] if tool == "initcheck" else ["--kernel-name", f"kns={pattern}"]
    out = tmp / f"{suite}-{tool}"
    out.mkdir(parents=True, exist_ok=True)
    if script is None:
        child = [__file__, "--child", *cases]
    else:
        child = [str(ROOT / script), "--sanitize", "--out", str(out),
                 "--deadline", f"{deadline:.1f}"] + \
            (["--quick"] if quick else []) + \
            (["--cases", *cases] if cases and '"--cases"' in
             (ROOT / script).read_text() else [])
    cmd = ["compute-sanitizer", "--tool", tool, *only, "--error-exitcode",
           "9", sys.executable, *child]
    limit = max(MIN_CHILD_S, deadline - time.time() + GRACE_S)
    # One stream: the tool's reports interleaved with the marks. The child
    # in a session of its own: at the deadline the whole group goes (the
    # tool's application would otherwise live on, holding GPU memory the
    # next child needs).
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, cwd=ROOT,
                         stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        text, _ = p.communicate(timeout=limit)
        code = p.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:  # the group ended meanwhile
            pass
        text, _ = p.communicate()
        code = f"timeout ({limit:.0f} s)"
    # Every child's log in one file beside sanitize.json (the device
    # machine returns few files): whole, or its ends and every report line.
    shown = text if len(text) < 400_000 else "\n".join(
        [text[:150_000], "[...]"] +
        [ln for ln in text[150_000:-150_000].splitlines()
         if ln.startswith("=========") or ln.startswith(harness.CASE_MARK)]
        + [text[-150_000:]])
    with open(log_path, "a") as f:
        f.write(f"\n######## {suite} under {tool}: exit {code}\n{shown}")
    statuses, verdicts = {}, {}
    reports = sorted(out.glob("*.json"))
    if script is None:
        # The attention child writes no report: a case is done when
        # another mark follows its own.
        listed = list(cases)
        done = finished_marks(text)
        statuses = {c: "ok" if c in done else harness.DIED_IN
                    for c in listed if harness.CASE_MARK + c in text}
    elif reports:
        rep = json.loads(reports[0].read_text())
        listed = [c["case"] for c in rep["cases"]]
        statuses = {c["case"]: c["status"] for c in rep["cases"]}
        verdicts = {c["case"]: {"max_err": c.get("max_err"),
                                "note": (c.get("note") or "")[:300]}
                    for c in rep["cases"]}
    else:
        listed = []
    errors = errors_of(text)
    timed_out = isinstance(code, str)
    oom = set()
    found_all = attribute(text, listed, oom)
    # A suite that died of PyTorch's OutOfMemoryError (a reference beside
    # the tool's memory) in a case: that case did not run its kernels.
    if "OutOfMemoryError" in text[-3000:]:
        oom.update(c for c in listed if statuses.get(c) == harness.DIED_IN)
    stray = stray_reports(text, listed)
    # Reports no case can be blamed for (in no case's part, or counted by
    # the summary with none in a part, out-of-memory API errors included):
    # no case is known clean. The exit is the child's (1: a case the suite
    # judged incorrect; 9: errors).
    unplaced = stray or (bool(errors) and not any(found_all.values())
                         and not oom)
    tool_failed = bool(unplaced) or (not timed_out and (
        code not in (0, 1, 9) or (code == 9 and not errors)
        or errors is None))
    checks = {}
    for case, found in found_all.items():
        status = statuses.get(case)
        verdict, reason = classify(found, status, timed_out, tool_failed,
                                   case in oom)
        why = reason
        if found:
            why = "\n".join(found[:20])[-1500:]
        elif unplaced:
            why = "reports in no case's part:\n" + "\n".join(
                (stray or [])[:20])[-1500:]
        elif verdict == "failed":
            why = f"{reason} (exit {code}): " + text[-1200:]
        checks[case] = {"name": tool, "ok": verdict != "failed",
                        "skipped": verdict == "not run", "verdict": verdict,
                        "reason": reason, "errors": errors, "exit": code,
                        "seconds": round(time.time() - t0, 1),
                        "suite_status": status, "tail": why,
                        "suite_verdict": verdicts.get(case)}
        print(f"{suite}/{case:40s} {tool:10s} {verdict} ({reason})",
              flush=True)
    if not listed:
        checks["(suite)"] = {"name": tool, "ok": False, "errors": errors,
                             "exit": code, "suite_status": None,
                             "seconds": round(time.time() - t0, 1),
                             "tail": "no case ran: " + text[-1500:]}
    return checks


def resumed(paths):
    """({case: its result with the checks of the earlier reports at
    `paths`}, {(case, tool) clean there})."""
    results, done = {}, set()
    for p in paths:
        for c in json.loads(Path(p).read_text())["cases"]:
            if c["case"].endswith(("/-", "/(suite)")):
                continue
            res = results.setdefault(c["case"],
                                     harness.case_result(c["case"]))
            for k in c["checks"]:
                res["checks"].append(k)
                if check_verdict(k)[0] == "clean":
                    done.add((c["case"], k["name"]))
    return results, done


def check_verdict(k):
    """A check's verdict (checks of older runs carry none: from ok and
    skipped, and a clean one whose suite did not run the case -- its
    status not ok or incorrect -- is not run)."""
    v = k.get("verdict")
    if v:
        return v, k.get("reason") or ""
    st = k.get("suite_status")
    if not k["ok"]:
        return "failed", "the tool reported or did not finish"
    if k.get("skipped"):
        return "not run", "not reached"
    if st not in (None, "ok", "incorrect"):
        return "not run", f"the suite: {st}"
    return "clean", "ran"


def judge(res):
    """A case's verdict from its checks (of this run and any resumed):
    per tool (res["tools"]) failed where a check failed, clean where one
    ran clean, else not run (and why); the case failed if a tool failed,
    ok if one was clean, else skipped."""
    tools, why = {}, {}
    rank = ["failed", "clean", "not run"]
    for k in res["checks"]:
        v, reason = check_verdict(k)
        old = tools.get(k["name"])
        # Of equal verdicts the latest check's reason (a later run knows
        # more of why a case did not run).
        if old is None or rank.index(v) <= rank.index(old):
            tools[k["name"]], why[k["name"]] = v, reason
    res["tools"] = {t: v if v != "not run" else f"not run: {why[t][:80]}"
                    for t, v in tools.items()}
    clean = [t for t, v in tools.items() if v == "clean"]
    bad = [t for t, v in tools.items() if v == "failed"]
    rest = [t for t, v in tools.items() if v == "not run"]
    if bad:
        res["status"] = "failed"
    elif not clean:
        res["status"] = "skipped: not run" if rest else res["status"]
    else:
        res["status"] = "ok"
    res["note"] = "; ".join(
        [f"{t}: {why[t]}" for t in bad] +
        ([f"clean under {', '.join(clean)}"] if clean else []) +
        [f"{t} not run ({why[t][:80]})" for t in rest])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suites", nargs="*", default=None,
                    choices=[s for s, *_ in SUITES])
    ap.add_argument("--cases", nargs="*", default=None,
                    help="only these cases (of every suite chosen)")
    ap.add_argument("--tools", default=",".join(TOOLS),
                    help="comma-separated (default: %(default)s; "
                         "initcheck too where asked)")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="seconds for the whole run (instead of "
                         "--deadline)")
    ap.add_argument("--resume", nargs="*", default=[], metavar="JSON",
                    help="earlier sanitize.json files: their checks carry "
                         "into this report, and a case already clean under "
                         "a tool does not run under it again (a run that "
                         "the device's time limit cut, finished in the "
                         "next)")
    harness.add_common_args(ap)
    ap.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        return run_attention(args.child)
    tools = args.tools.split(",")
    if args.budget_s:
        args.deadline = time.time() + args.budget_s
    deadline = harness.Deadline(args.deadline)
    out = Path(args.out) if args.out else harness.out_dir("sanitize")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "sanitize.json"
    t_start = time.monotonic()
    rep = harness.new_report("sanitize", settings={"tools": tools})
    # The device by nvidia-smi and PyTorch's version, without a CUDA
    # context in this process (the tools run in the children).
    rep["device"] = (rep["clocks"].get("before") or {}).get("name")
    try:
        import torch
        rep["torch"] = torch.__version__
    except ImportError:
        pass
    suites = [s for s in SUITES if not args.suites or s[0] in args.suites]
    results, done = resumed(args.resume)
    tmp = Path(tempfile.mkdtemp(prefix="sanitize-"))
    log_path = out / "sanitize.log"
    log_path.write_text("")
    for k, (suite, script, pattern, work) in enumerate(suites):
        if not work.exists():
            results[f"{suite}/-"] = harness.case_result(
                f"{suite}/-", status="skipped: not prepared",
                note=f"{work.relative_to(ROOT)} is missing")
            continue
        cases = args.cases
        if script is None:
            cases = [c for c in (args.cases or ATTENTION_CASES)
                     if (GEMM / c / "meta.json").exists()
                     or (GRAD / c / "meta.json").exists()]
        known = [n.split("/", 1)[1] for n in results
                 if n.startswith(suite + "/")
                 and not n.endswith(("/-", "/(suite)"))]
        takes_cases = script is None or '"--cases"' in \
            (ROOT / script).read_text()
        listed_now = set()
        for j, tool in enumerate(tools):
            # Resumed: the cases not yet clean under this tool (a suite
            # without --cases runs whole while one is left).
            todo = [c for c in (cases or known)
                    if (f"{suite}/{c}", tool) not in done]
            if known and not todo:
                continue
            child_cases = todo if known and takes_cases else cases
            # This child's share of what is left.
            left = deadline.left()
            share = max(20.0, left / ((len(suites) - k) * len(tools) - j)) \
                if left != float("inf") else 3600.0
            if left < 20:
                results.setdefault(f"{suite}/-", harness.case_result(
                    f"{suite}/-", status="skipped: budget"))["note"] += \
                    f"{tool} skipped (budget); "
                continue
            # A share left unused passes to the next child.
            for case, check in run_suite(
                    suite, script, pattern, tool, child_cases,
                    time.time() + share, args.quick, tmp,
                    log_path).items():
                if case != "(suite)":
                    listed_now.add(case)
                name = f"{suite}/{case}"
                res = results.setdefault(name, harness.case_result(name))
                res["checks"].append(check)
        # A resumed case the suite no longer lists and that never ran (a
        # timed case, not run under --sanitize) is no case of this run.
        if listed_now:
            for name in [n for n, r in results.items()
                         if n.startswith(suite + "/")
                         and n.split("/", 1)[1] not in listed_now
                         and not n.endswith(("/-", "/(suite)"))
                         and all(check_verdict(k)[0] == "not run"
                                 for k in r["checks"])]:
                del results[name]
        # Judged after every suite: a run the device's limit cuts leaves a
        # report as true as the last write.
        harness.prelist(rep, list(results))
        for res in results.values():
            if res["checks"]:
                judge(res)
            harness.set_case(rep, res)
        harness.write_report(rep, path)
    for res in results.values():
        if res["checks"]:
            judge(res)
    harness.prelist(rep, list(results))
    for res in results.values():
        harness.set_case(rep, res)
    shutil.rmtree(tmp, ignore_errors=True)  # the children's own reports
    harness.finish_report(rep, t_start)
    harness.write_report(rep, path)
    bad = [n for n, r in results.items()
           if not (r["status"] == "ok" or r["status"].startswith("skipped"))]
    print(f"{len(results) - len(bad)} of {len(results)} cases clean or "
          f"skipped; wrote {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
