#!/usr/bin/env python3
"""Runs prepared attention bundles under compute-sanitizer (GPU machine).

Forward cases come from gpu-work/gemm (bench/prepare_gemm.py), training
cases from gpu-work/attention-grad (bench/prepare_attention_grad.py). Each
tool (memcheck, racecheck, synccheck, initcheck) runs every case once, in
one child process under `compute-sanitizer --tool T --kernel-name
kns=main_` (tang's kernels only, not PyTorch's; initcheck sees every
kernel, or the inputs PyTorch filled would look uninitialised), on random
inputs; a
report of the tool in a case's part of the log, a non-finite output, or
the tool's non-zero exit fails the case. Writes
sanitize_attention.json (bench/harness.py's schema: one check per tool)
to --out:

  python3 bench/sanitize_attention.py --out $OUT [--tools T,..]
      [--cases CASE ...] [--deadline UNIX_TIME]

Use small cases (ragged lengths, causal, every head dim): the tools slow
kernels down by 10-1000x.
"""
import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402

GEMM = ROOT / "gpu-work" / "gemm"
GRAD = ROOT / "gpu-work" / "attention-grad"
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")


MARK = "== sanitize case "


def run_cases(cases):
    """The child: each case's bundle functions once on random inputs, a
    marker line before each (the parent attributes reports by them)."""
    sys.path.insert(0, str(ROOT / "python"))
    import torch
    import tang.cuda as tang_cuda
    bf = torch.bfloat16
    torch.manual_seed(0)
    bad = 0
    for case in cases:
        print(MARK + case, flush=True)
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
    return bad


#: The default cases: small, ragged and causal, every head dim, a
#: persistent grid whose blocks take several tiles, forward and training
#: (prepared by bench/prepare_all.py).
DEFAULT_CASES = ["attention_2x3x200x64_causal", "attention_1x2x136x128",
                 "attention_1x2x200x192_causal", "attention_1x2x256x256",
                 "attention_gqa_1x4x1000x128_causal_g4",
                 "attention_8x16x256x64_causal",
                 "grad_1x2x200x64_causal", "grad_1x2x136x128"]


def attribute(text, cases):
    """{case: the tool's report lines in its part of the log} (None: the
    case never started)."""
    parts = text.split(MARK)
    found = {}
    for case in cases:
        part = next((q for q in parts[1:] if q.split("\n", 1)[0] == case),
                    None)
        found[case] = None if part is None else [
            ln for ln in part.splitlines()[1:]
            if (ln.startswith("=========") and "SUMMARY" not in ln
                and "COMPUTE-SANITIZER" not in ln.upper()
                and ln.strip("= ")) or "non-finite" in ln]
    return found


def sanitize(cases, tool):
    """Runs `cases` in one process under `tool`; {case: check}."""
    t0 = time.time()
    # tang's kernels only (kns=main_), except for initcheck: it must see
    # the writes of PyTorch's kernels that fill the inputs (filtered out,
    # every input read looks uninitialised).
    only = [] if tool == "initcheck" else ["--kernel-name", "kns=main_"]
    cmd = ["compute-sanitizer", "--tool", tool, *only, "--error-exitcode",
           "9", sys.executable, __file__, "--child", *cases]
    try:
        # One stream: the tool's reports interleaved with the markers.
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=400)
        text, code = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        text, code = str(e.stdout or ""), "timeout (400 s)"
    # memcheck, synccheck, initcheck: "ERROR SUMMARY: N errors"; racecheck:
    # "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)".
    summary = re.findall(r"ERROR SUMMARY: (\d+) error|\((\d+) errors", text)
    errors = int([a or b for a, b in summary][-1]) if summary else None
    clean = code == 0 and errors == 0
    # A case's part of the log: from its marker to the next; a report line
    # of the tool ("========= " but its banner and summary) or a
    # non-finite output in it fails the case.
    checks = {}
    for case, reports in attribute(text, cases).items():
        ok = clean and reports is not None and not reports
        reports = reports or []
        checks[case] = {"name": tool, "ok": ok, "errors": errors,
                        "exit": code,
                        "seconds": round(time.time() - t0, 1),
                        "tail": "" if ok else
                        "\n".join(reports[:20])[-1500:] or text[-1500:]}
        print(f"{case:40s} {tool:10s} {'ok' if ok else 'FAIL'}", flush=True)
    return checks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="*", default=None)
    harness.add_common_args(ap)
    ap.add_argument("--tools", default=",".join(TOOLS),
                    help="comma-separated (default: %(default)s)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        sys.exit(run_cases([args.child] + args.rest))
    cases = [c for c in (args.cases or DEFAULT_CASES)
             if (GEMM / c / "meta.json").exists()
             or (GRAD / c / "meta.json").exists()]
    tools = args.tools.split(",")
    out = Path(args.out) if args.out else harness.out_dir("sanitize")
    path = out / "sanitize_attention.json"
    t_start = time.monotonic()
    deadline = harness.Deadline(args.deadline)
    rep = harness.new_report("sanitize_attention",
                             settings={"tools": tools})
    # The device by nvidia-smi and PyTorch's version, without a CUDA
    # context in this process (the tools run in the children).
    rep["device"] = (rep["clocks"].get("before") or {}).get("name")
    try:
        import torch
        rep["torch"] = torch.__version__
    except ImportError:
        pass
    harness.prelist(rep, cases)
    harness.write_report(rep, path)
    results = {c: harness.case_result(c) for c in cases}
    for tool in tools:
        # A tool's run takes about 5 s and 1-2 s per case.
        if deadline.passed(margin=5 + 2 * len(cases)):
            for c in cases:
                results[c]["note"] += f"{tool} skipped (budget); "
            continue
        for c, check in sanitize(cases, tool).items():
            results[c]["checks"].append(check)
    for c, res in results.items():
        ran = [k["name"] for k in res["checks"]]
        bad = [k["name"] for k in res["checks"] if not k["ok"]]
        if bad:
            res.update(status="failed", note=res["note"] +
                       "compute-sanitizer: " + ", ".join(bad) +
                       " reported errors or failed")
        elif not ran:
            res.update(status="skipped: budget")
        else:
            res["note"] += "clean under " + ", ".join(ran)
        harness.set_case(rep, res, path)
    harness.finish_report(rep, t_start)
    harness.write_report(rep, path)
    return 0 if all(c["status"] in ("ok", "skipped: budget")
                    for c in rep["cases"]) else 1


if __name__ == "__main__":
    sys.exit(main())
