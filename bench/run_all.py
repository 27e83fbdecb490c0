#!/usr/bin/env python3
"""Runs every bench suite on the GPU machine and writes one common-schema
JSON per suite (bench/harness.py): gpu_check.json, memory_bound.json,
gemm.json (tensor-core products, attention forward, the transformer block
forward), attention_grad.json, block_grad.json, qwen3.json (Qwen3-8B
decoding at batches 1, 4, 16; its torch.compile peer only when minutes
are left), qwen3_prefill.json (Qwen3-8B prefill of 512 and 2048 tokens;
likewise), qwen3_varlen.json (the Qwen3-8B decode step of sequences at
positions of their own: checked per sequence against the reference, NaN
past every position), moe.json (Qwen3-Next's mixture-of-experts layer
at 1 to 4096 tokens against transformers' module), delta.json (its gated
delta rule at 4096 tokens against transformers' chunked fallback and
fla, and its decode update at batches 1, 16, 64 against the recurrent
fallback), gated_attention.json (its gated attention layer at 4096 tokens
against transformers' module with SDPA), portable.json (the
Vulkan row kernels against the CUDA kernels of the same programs; the
Vulkan loader unpacked from a carried `.gl`, see bench/README.md), sanitize.json (the
small attention cases, forward and training, under compute-sanitizer
memcheck, racecheck and synccheck; every suite's kernels under it is
`python3 bench/sanitize.py --budget-s 570`, a run of its own),
and run_all.json (the run's
environment: commit, dirty, clocks before and after, each suite's exit code
and wall time).

Prepare here first (no GPU): `/usr/bin/python3 bench/prepare_all.py`; then
on the GPU machine, with gpu-work carried:

    python3 bench/run_all.py --quick      # under 10 minutes on one H200
    python3 bench/run_all.py              # more repeats per round, 7 rounds

Each suite runs in its own process (a kernel fault cannot take the others
down) under a share of one global budget (--budget-s; time a suite leaves
unused passes to the next). A suite skips what its deadline does not allow:
torch.compile peers first ("skipped: budget" in peer_status), then whole
cases (status "skipped: budget"); every case is listed either way. Output
goes to --out (default $OUT, else bench/results/); then run
`/usr/bin/python3 bench/make_tables.py` here to regenerate the README's
table from bench/results/*.json.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402

#: (suite, script, share of the budget, extra arguments)
SUITES = [
    ("gpu_check", "bench/gpu_check.py", 0.14, []),
    ("python_check", "bench/python_check.py", 0.10, []),
    ("memory_bound", "bench/bench_memory_bound.py", 0.15, []),
    ("gemm", "bench/bench_gemm.py", 0.13, []),
    ("attention_grad", "bench/bench_attention_grad.py", 0.15, []),
    ("block_grad", "bench/bench_block_grad.py", 0.12, []),
    ("decode", "bench/bench_decode.py", 0.03, []),
    ("qwen3", "bench/qwen3_decode.py", 0.10, []),
    ("qwen3_prefill", "bench/qwen3_prefill.py", 0.08, []),
    ("qwen3_varlen", "bench/qwen3_varlen.py", 0.02, []),
    ("moe", "bench/bench_moe.py", 0.05, []),
    ("delta", "bench/bench_delta.py", 0.05, []),
    ("gated_attention", "bench/bench_gated_attention.py", 0.04, []),
    ("portable", "bench/bench_portable.py", 0.04, []),
    ("sanitize", "bench/sanitize.py", 0.06, ["--suites", "attention"]),
]
#: Seconds a suite may run past its deadline before it is killed (a case
#: in flight finishes; its JSON is rewritten after every case).
GRACE_S = 25


def run_suite(cmd, deadline):
    """Runs one suite's process until its deadline (plus GRACE_S)."""
    try:
        r = subprocess.run(cmd, cwd=ROOT,
                           timeout=max(30, deadline - time.time() + GRACE_S))
        return r.returncode
    except subprocess.TimeoutExpired:
        return "killed at its deadline"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="5 rounds of short measurements; fits in 10 min")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="total seconds (default: 530 with --quick, 3000 "
                         "without)")
    ap.add_argument("--suites", nargs="*", default=None,
                    choices=[s for s, *_ in SUITES])
    ap.add_argument("--out", default=os.environ.get("OUT")
                    or str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    budget = args.budget_s or (530.0 if args.quick else 3000.0)
    t0 = time.time()
    end = t0 + budget
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = {"schema": harness.SCHEMA, "suite": "run_all", "date": harness.now(),
           "quick": args.quick, "budget_s": budget, "git": harness.git_state(),
           "clocks": {"before": harness.gpu_state(), "after": None},
           "suites": {}}
    env["commit"] = env["git"].get("commit")
    env["dirty"] = env["git"].get("dirty")
    suites = [s for s in SUITES if not args.suites or s[0] in args.suites]
    total_share = sum(s[2] for s in suites)
    spent_share = 0.0
    for name, script, share, extra in suites:
        spent_share += share
        # This suite's deadline: its share, plus what earlier suites left.
        deadline = min(end, t0 + budget * spent_share / total_share)
        deadline = max(deadline, time.time() + 20)
        cmd = [sys.executable, script, "--out", str(out), "--deadline",
               f"{deadline:.1f}"] + (["--quick"] if args.quick else []) + extra
        print(f"== {name}: {' '.join(cmd[1:])} ({deadline - time.time():.0f}"
              f" s)", flush=True)
        ts = time.time()
        rc = run_suite(cmd, deadline)
        # A CUDA fault ends a suite's process: the cases it did not reach
        # run in a new process, while the budget lasts.
        path = out / f"{name}.json"
        retries = 0
        while rc != 0 and path.exists() and retries < 3 and \
                deadline - time.time() > 15:
            rep = json.loads(path.read_text())
            left = [c["case"] for c in rep["cases"]
                    if c["status"] == harness.NOT_REACHED]
            if not left:
                break
            retries += 1
            tmp = out / f"retry_{name}"
            tmp.mkdir(exist_ok=True)
            print(f"== {name}: again for {len(left)} cases not reached",
                  flush=True)
            rc2 = run_suite([sys.executable, script, "--out", str(tmp),
                             "--deadline", f"{deadline:.1f}", "--cases",
                             *left] + (["--quick"] if args.quick else [])
                            + extra, deadline)
            sub = tmp / f"{name}.json"
            if sub.exists():
                got = json.loads(sub.read_text())
                for c in got["cases"]:
                    c["note"] = (c.get("note") or "") + \
                        f" [run in a new process, retry {retries}]"
                    harness.set_case(rep, c)
                rep["clocks"]["after"] = got["clocks"].get("after")
                harness.write_report(rep, path)
                sub.unlink()
            tmp.rmdir() if not any(tmp.iterdir()) else None
            rc = rc2 if rc2 == 0 else rc
        env["suites"][name] = {"rc": rc, "wall_s": round(time.time() - ts, 1),
                               "json": f"{name}.json"}
        print(f"== {name}: rc {rc}, {time.time() - ts:.0f} s", flush=True)
        env["clocks"]["after"] = harness.gpu_state()
        env["wall_s"] = round(time.time() - t0, 1)
        harness.write_report(env, out / "run_all.json")
    # One line per case, for the end of the log.
    print("\nsuite / case / status / max_err / tang ms / best peer / ratio "
          "[spread] verdict")
    for name, *_ in suites:
        p = out / f"{name}.json"
        if not p.exists():
            print(f"{name}: no JSON")
            continue
        rep = json.loads(p.read_text())
        probs = harness.validate_report(rep)
        if probs:
            print(f"{name}: SCHEMA PROBLEMS {probs[:5]}")
        for c in rep["cases"]:
            sp = c.get("spread")
            me = c.get("max_err")
            print(f"{name} {c['case']} {c['status']} "
                  f"{me if not isinstance(me, float) else round(me, 3)} "
                  f"{c.get('tang_ms') and round(c['tang_ms'], 4)} "
                  f"{c.get('best_peer')} "
                  f"{c.get('ratio') and round(c['ratio'], 3)} "
                  f"{[round(x, 3) for x in sp] if sp else ''} "
                  f"{c.get('verdict') or ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
