#!/usr/bin/python3
"""Generates the README's performance table from bench/results/*.json.

Reads every common-schema report (bench/harness.py, schema tang-bench/1)
directly under bench/results/ that bench/run_all.py wrote (one per suite),
and writes:

- README.md, between `<!-- bench-table:begin -->` and
  `<!-- bench-table:end -->`: per suite, where and when it ran (commit,
  whether the tree was dirty, device, PyTorch, clocks, temperature and
  power limit before and after), a count of wins, losses, ties and
  failures, and one row per case: status, the worst element's share of its
  error bound (max err, <= 1 passes), tang's time, the best correct peer
  and its time, the median per-round ratio peer/tang with its (min, max)
  spread, and the verdict in words;
- bench/results/<suite>.md beside each JSON: the same table for that suite.

Nothing is copied by hand: rerun this after copying a run's JSON into
bench/results/. `--check` exits 1 when README.md is not what the JSON gives.

Usage: /usr/bin/python3 bench/make_tables.py [--results DIR] [--readme FILE]
       [--check]
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402

BEGIN = "<!-- bench-table:begin -->"
END = "<!-- bench-table:end -->"
ORDER = ["gpu_check", "memory_bound", "gemm", "attention_grad", "block_grad",
         "decode", "qwen3", "qwen3_prefill", "moe", "delta", "gated_attention",
         "portable",
         "sanitize"]
TITLES = {"gpu_check": "Every example against the interpreter (no timing)",
          "memory_bound": "Memory-bound kernels (bf16)",
          "gemm": "Tensor-core products, attention forward, transformer "
                  "block forward",
          "attention_grad": "Attention forward + backward",
          "block_grad": "Transformer block forward + backward",
          "decode": "Decode attention at the Qwen3-8B shapes (32 query "
                    "heads over 8 key/value heads, bf16 caches; varlen: "
                    "sequences of different lengths, against SDPA with a "
                    "key mask)",
          "qwen3": "Qwen3-8B decoding (random bf16 weights, one graph per "
                   "step)",
          "qwen3_prefill": "Qwen3-8B prefill (random bf16 weights, one "
                           "graph per prompt)",
          "moe": "Qwen3-Next's mixture-of-experts layer (512 experts, 10 "
                 "routed + a shared one; bf16 weights from transformers' "
                 "module; floor: the selected experts' weights read once)",
          "delta": "Qwen3-Next's gated delta rule (linear attention: 16 "
                   "query/key heads, 32 value heads of dim 128, bf16 "
                   "q/k/v, f32 output and final state), chunked by "
                   "--tang-chunk-affine-scan, against transformers' "
                   "PyTorch fallback (fla not installed); decode: one "
                   "token from each sequence's state, floor: the states "
                   "read and written once",
          "gated_attention": "Qwen3-Next's gated attention layer (16 query "
                             "heads over 2 key/value heads of dim 256, "
                             "partial RoPE, sigmoid output gate; bf16 "
                             "weights from transformers' module, one causal "
                             "sequence) against that module with SDPA",
          "portable": "Portable kernels on Vulkan (SPIR-V: row kernels, "
                      "f16 storage; a GEMM on cooperative matrices, its "
                      "fastest register blocking; causal attention and its "
                      "gradient on the SIMT flash and score kernels) on the "
                      "same GPU against tang's CUDA kernels of the same "
                      "program (memory-bound cases), cuBLAS (the GEMM) and "
                      "the faster of tang's CUDA kernels and PyTorch SDPA "
                      "(attention); ratio = peer time / Vulkan time",
          "sanitize": "tang's kernels under compute-sanitizer: every "
                      "example, benchmark case and model step (no timing)"}


def load_reports(results: Path) -> list:
    """The common-schema suite reports under `results`, in ORDER; raises
    ValueError on one that does not validate."""
    reps = []
    for p in sorted(results.glob("*.json")):
        try:
            rep = json.loads(p.read_text())
        except ValueError:
            continue
        if not isinstance(rep, dict) or rep.get("schema") != harness.SCHEMA \
                or rep.get("suite") in (None, "run_all"):
            continue
        probs = harness.validate_report(rep)
        if probs:
            raise ValueError(f"{p}: {'; '.join(probs[:5])}")
        rep["_file"] = p.name
        reps.append(rep)
    rank = {s: i for i, s in enumerate(ORDER)}
    return sorted(reps, key=lambda r: (rank.get(r["suite"], len(ORDER)),
                                       r["suite"]))


def num(v, spec):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return format(v, spec)


def in_words(c: dict) -> str:
    """The case's outcome, plainly."""
    st = c["status"]
    if st != "ok":
        return {"incorrect": "**INCORRECT**"}.get(st, st)
    if c.get("ratio") is None:
        if c.get("tang_ms") is None and c.get("note"):
            return "not timed: " + c["note"].strip()[:120]
        return "checked" if not c.get("peers") else "no peer timed"
    r, v = c["ratio"], c.get("verdict")
    if v == "win":
        return f"win: tang {r:.2f}x faster"
    if v == "loss":
        return f"**loss**: tang takes {1 / r:.2f}x the peer's time"
    return "tie (spread contains 1)"


def clocks(cl: dict) -> str:
    def one(s):
        if not s or "error" in s:
            return "?"
        return (f"SM {num(s.get('clocks.sm'), '.0f')} MHz, "
                f"{num(s.get('temperature.gpu'), '.0f')} C, "
                f"{num(s.get('power.draw'), '.0f')}/"
                f"{num(s.get('power.limit'), '.0f')} W")
    return f"before {one((cl or {}).get('before'))}; after " \
           f"{one((cl or {}).get('after'))}"


def counts(rep: dict) -> str:
    k = {"win": 0, "loss": 0, "tie": 0}
    other = {}
    for c in rep["cases"]:
        if c["status"] == "ok" and c.get("verdict") in k:
            k[c["verdict"]] += 1
        elif c["status"] == "ok" and c.get("peers") is not None and \
                c.get("tang_ms") is None and \
                rep["suite"] not in ("gpu_check", "sanitize"):
            other["correct but not timed"] = \
                other.get("correct but not timed", 0) + 1
        elif c["status"] != "ok":
            key = c["status"].split(":")[0]
            other[key] = other.get(key, 0) + 1
    parts = [f"{len(rep['cases'])} cases"]
    if any(k.values()):
        parts += [f"{k['win']} wins", f"{k['loss']} losses",
                  f"{k['tie']} ties"]
    parts += [f"{n} {s}" for s, n in sorted(other.items())]
    return ", ".join(parts)


def suite_table(rep: dict, level: str = "###") -> str:
    commit = (rep.get("commit") or "?")[:10]
    dirty = rep.get("dirty")
    L = [f"{level} {TITLES.get(rep['suite'], rep['suite'])} "
         f"(`{rep['suite']}`)", ""]
    L.append(f"{rep.get('date')}, {rep.get('device')}, PyTorch "
             f"{rep.get('torch')}, commit {commit}"
             + (" **on a dirty tree: a validation run, not a result**"
                if dirty else "" if dirty is False else
                " (tree state unknown)")
             + f"; {clocks(rep.get('clocks'))}; "
             f"{(rep.get('settings') or {}).get('rounds', '-')} rounds"
             f"{' (--quick)' if (rep.get('settings') or {}).get('quick') else ''}"
             f". {counts(rep)}. Raw: `bench/results/{rep['_file']}`.")
    if rep.get("note"):
        L += ["", f"Note: {rep['note']}"]
    L.append("")
    if rep["suite"] == "sanitize":
        return "\n".join(L + sanitize_table(rep))
    L.append("| case | status | max err | tang ms | best peer | peer ms | "
             "peer/tang [min, max] | outcome |")
    L.append("|---|---|---|---|---|---|---|---|")
    for c in rep["cases"]:
        bp = c.get("best_peer")
        pms = (c.get("peers") or {}).get(bp) if bp else None
        sp = c.get("spread")
        ratio = "-" if c.get("ratio") is None else (
            f"{c['ratio']:.3f} [{sp[0]:.3f}, {sp[1]:.3f}]" if sp
            else f"{c['ratio']:.3f}")
        L.append(f"| {c['case']} | {c['status']} | "
                 f"{num(c.get('max_err'), '.2f')} | "
                 f"{num(c.get('tang_ms'), '.4f')} | {bp or '-'} | "
                 f"{num(pms, '.4f')} | {ratio} | {in_words(c)} |")
    L.append("")
    L += throughput_table(rep)
    return "\n".join(L)


def sanitize_table(rep: dict) -> list:
    """compute-sanitizer's verdicts per suite and tool (cases clean, not
    reached, failed), then every case not clean under every tool."""
    tools = (rep.get("settings") or {}).get("tools") or []
    suites = {}
    for c in rep["cases"]:
        per = c.get("tools") or {k["name"]: "clean" if k.get("ok") and not
                                 k.get("skipped") else "not clean"
                                 for k in c.get("checks", [])}
        row = suites.setdefault(c["case"].split("/")[0], {})
        for t, v in per.items():
            row.setdefault(t, {})
            row[t][v] = row[t].get(v, 0) + 1
    L = ["| suite | " + " | ".join(tools) + " |",
         "|---|" + "---|" * len(tools)]
    for s, row in suites.items():
        L.append(f"| {s} | " + " | ".join(
            ", ".join(f"{n} {v}" for v, n in sorted(
                row.get(t, {}).items(), key=lambda x: x[0] != "clean"))
            or "-" for t in tools) + " |")
    L.append("")
    rest = [c for c in rep["cases"]
            if any(v != "clean" for v in (c.get("tools") or {}).values())
            or c["status"] != "ok"]
    if rest:
        L += [f"Not clean under every tool ({len(rest)} cases):", "",
              "| case | status | per tool |", "|---|---|---|"]
        L += [f"| {c['case']} | {c['status']} | {c.get('note') or '-'} |"
              for c in rest]
        L.append("")
    return L


def throughput_table(rep: dict) -> list:
    """For cases that report throughput per contender: decode, tokens per
    second and the share of the bandwidth floor of each; decode attention,
    the caches' GB/s and the share of the copy rate; prefill, ms per prompt
    and TFLOP/s."""
    rows = [c for c in rep["cases"] if c.get("contenders")]
    if not rows:
        return []
    # A suite of both kinds (the portable one: memory-bound cases in GB/s,
    # the GEMM in TFLOP/s) gets a table for each.
    by_copy = [c for c in rows if all("share_of_copy" in v
                                      for v in c["contenders"].values())]
    if by_copy and len(by_copy) < len(rows):
        return (throughput_table(dict(rep, cases=by_copy)) +
                throughput_table(dict(rep, cases=[
                    c for c in rows if c not in by_copy])))
    names = []
    for c in rows:
        names += [n for n in c["contenders"] if n not in names]
    decode = all("share_of_floor" in v for c in rows
                 for v in c["contenders"].values())
    bandwidth = all("share_of_copy" in v for c in rows
                    for v in c["contenders"].values())
    if bandwidth:
        L = ["| case | " + " | ".join(
            f"{n} GB/s (share of copy rate)" for n in names) + " |",
            "|---|" + "---|" * len(names)]
        for c in rows:
            cells = [f"{v['gbs']:.0f} ({v['share_of_copy']:.2f})"
                     if (v := c["contenders"].get(n)) else "-"
                     for n in names]
            L.append(f"| {c['case']} | " + " | ".join(cells) + " |")
        L.append("")
        return L
    if decode:
        L = ["| case | floor tok/s | " + " | ".join(
            f"{n} tok/s (share of floor)" for n in names) + " |",
            "|---|---|" + "---|" * len(names)]
    else:
        L = ["| case | " + " | ".join(f"{n} ms (TFLOP/s)" for n in names)
             + " |", "|---|" + "---|" * len(names)]
    for c in rows:
        cells = []
        for n in names:
            v = c["contenders"].get(n)
            if not v:
                cells.append("-")
            elif decode:
                cells.append(f"{v['tok_s']:.1f} ({v['share_of_floor']:.2f})")
            else:
                cells.append(f"{v['ms']:.1f} ({v['tflops']:.0f})")
        first = f"| {c['case']} | "
        if decode:
            first += f"{num(c.get('floor_tok_s'), '.1f')} | "
        L.append(first + " | ".join(cells) + " |")
    L.append("")
    return L


def tune_table(rep: dict, level: str = "###") -> str:
    """bench/tune.py measure's report: per kernel, the heuristic's, the
    traffic bound's LP tile's, the best modelled and the best measured
    candidate's times."""
    git = rep.get("git") or {}
    env = rep.get("environment") or {}
    L = [f"{level} Schedules chosen by measurement (`tune`)", "",
         f"{rep.get('started')}, {env.get('device', '?')}, commit "
         f"{(git.get('commit') or '?')[:10]}"
         + (" **on a dirty tree: a validation run**" if git.get("dirty")
            else "")
         + ". Raw: `bench/results/tune.json`; the cache it wrote: "
         "`bench/tuning/sm_90a.json`. ms: median over interleaved rounds; "
         "best/heuristic > 1: the tuned schedule is faster.", "",
         "| case | kernel | correct/candidates | heuristic ms | LP tile ms "
         "| best modelled ms | best ms | best | heuristic/best |",
         "|---|---|---|---|---|---|---|---|---|"]
    for c in rep.get("cases", []):
        if not c.get("kernels"):
            L.append(f"| {c['case']} | - | - | - | - | - | - | "
                     f"{c.get('status', 'no kernel tuned')} | - |")
        for k in c.get("kernels", []):
            cands = k["candidates"]
            ok = sum(x.get("status") == "ok" for x in cands)
            h, b = k.get("heuristic_ms"), k.get("best_ms")
            L.append(f"| {c['case']} | {k['kernel']} | {ok}/{len(cands)} | "
                     f"{num(h, '.4f')} | {num(k.get('lp_ms'), '.4f')} | "
                     f"{num(k.get('model_best_ms'), '.4f')} | "
                     f"{num(b, '.4f')} | {k.get('best', '-')} | "
                     f"{num(h / b if h and b else None, '.3f')} |")
    L.append("")
    return "\n".join(L)


def load_tune(results: Path):
    """bench/results/tune.json (bench/tune.py measure), if there."""
    p = results / "tune.json"
    if not p.exists():
        return None
    rep = json.loads(p.read_text())
    return rep if rep.get("suite") == "tune" else None


def readme_block(reps: list, tune=None) -> str:
    L = [BEGIN, "",
         "<!-- generated by bench/make_tables.py from bench/results/*.json; "
         "do not edit -->", ""]
    if not reps:
        L += ["No results in bench/results/ yet: run `bench/prepare_all.py` "
              "here, `bench/run_all.py --quick` on the GPU, copy the JSON "
              "into bench/results/ and run `bench/make_tables.py`.", ""]
    L += ["max err: the worst element's |got - ref| / (atol + rtol |ref|) "
          "against float64 (bench/harness.py; <= 1 passes, every element of "
          "every output). peer/tang: the median over interleaved rounds of "
          "the best correct peer's time over tang's (> 1: tang faster), "
          "with the (min, max) of the rounds; a spread containing 1 is a "
          "tie.", ""]
    for rep in reps:
        L.append(suite_table(rep))
    if tune:
        L.append(tune_table(tune))
    L.append(END)
    return "\n".join(L)


def splice(text: str, block: str) -> str:
    if BEGIN not in text or END not in text:
        raise ValueError(f"README has no {BEGIN} ... {END} markers")
    a = text.index(BEGIN)
    b = text.index(END) + len(END)
    return text[:a] + block + text[b:]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--readme", default=str(ROOT / "README.md"))
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if README.md is stale; write nothing")
    args = ap.parse_args(argv)
    results = Path(args.results)
    reps = load_reports(results)
    readme = Path(args.readme)
    tune = load_tune(results)
    new = splice(readme.read_text(), readme_block(reps, tune))
    if args.check:
        stale = new != readme.read_text()
        print("README.md table is stale" if stale else "README.md table ok")
        return 1 if stale else 0
    readme.write_text(new)
    for rep in reps:
        (results / (Path(rep["_file"]).stem + ".md")).write_text(
            f"# {rep['suite']}\n\n" + suite_table(rep, "##")
            .split("\n", 2)[2] + "\n")
    if tune:
        (results / "tune.md").write_text(
            "# tune\n\n" + tune_table(tune, "##").split("\n", 2)[2] + "\n")
    print(f"{len(reps)} suites -> {readme} and their .md beside the JSON")
    return 0


if __name__ == "__main__":
    sys.exit(main())
