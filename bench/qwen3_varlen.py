"""Qwen3-8B decode steps of sequences at positions of their own
(continuous batching: tang.models.qwen3.decode_step(varlen=True), compiled
here by bench/prepare_qwen3.py --varlen B) on the GPU, on random bf16
weights and caches:

* Correctness: every sequence's next token against the float32 PyTorch
  reference of qwen3_decode.py run on that sequence alone at its own
  position (equal, or the reference's top two logits closer than 1% of
  the larger), its written cache rows (every element of every layer,
  against the reference's, within 8 bf16 ulps of the largest: the
  prefill's cache tolerance), the other rows untouched; and the
  same step with NaN in every cache position past each sequence's own
  must give bitwise the same tokens and caches (the masked positions are
  never read).
* Time (tang only, informational): the varlen step at positions seeded in
  [ctx / 8, ctx], and the uniform step (decode<B>) with every sequence at
  ctx, what a batch padded to its longest sequence costs; each in a CUDA
  graph, interleaved rounds.

Writes qwen3_varlen.json (bench/harness.py's schema) into --out.
Run on the GPU machine:  python3 bench/qwen3_varlen.py --out DIR
"""

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402
import qwen3_decode as qd  # noqa: E402
import tang.cuda  # noqa: E402
from tang.models import qwen3  # noqa: E402

CTX = 4096


def positions_for(batch, longest, seed=0):
    gen = torch.Generator().manual_seed(seed * 1009 + batch)
    pos = torch.randint(longest // 8, longest, (batch,), generator=gen,
                        dtype=torch.int32)
    pos[0] = longest - 1
    return pos


class Step:
    """A decode bundle bound to fixed buffers."""

    def __init__(self, bundle_dir, W, batch, capacity):
        self.bundle = tang.cuda.Bundle(bundle_dir)
        self.W = list(W.values())
        shape = qwen3.cache_shape(qd.CFG, batch, capacity)
        self.kc = torch.randn(shape, device=qd.DEV).to(qd.BF16)
        self.vc = torch.randn(shape, device=qd.DEV).to(qd.BF16)
        self.tokens = torch.zeros(batch, dtype=torch.int32, device=qd.DEV)
        self.next = torch.zeros_like(self.tokens)

    def run(self, last, check_indices=True, sizes=None):
        """`last`: the positions tensor (varlen) or None (sizes given)."""
        args = (self.tokens, *self.W, self.kc, self.vc)
        if last is not None:
            args += (last,)
        self.bundle.run("decode_step", *args,
                        outputs=[self.next, self.kc, self.vc],
                        sizes=sizes or {}, check_indices=check_indices)


def check(report, path, W, bundles, capacity, b):
    name = f"qwen3-varlen-b{b}-check"
    harness.start_case(report, name, path)
    res = harness.case_result(name)
    step = Step(ROOT / bundles[f"decode{b}-varlen"]["dir"] / "bundle", W, b,
                capacity)
    pos = positions_for(b, CTX)
    step.tokens.copy_(torch.randint(0, qd.CFG.vocab, (b,), dtype=torch.int32))
    kc0, vc0 = step.kc.clone(), step.vc.clone()
    dpos = pos.to(qd.DEV)
    step.run(dpos)
    torch.cuda.synchronize()
    got_tok, got_kc, got_vc = (step.next.clone(), step.kc.clone(),
                               step.vc.clone())
    res["positions"] = pos.tolist()
    mism, worst_cache = [], 0.0
    for s in range(b):
        p = int(pos[s])
        kc = kc0[:, s:s + 1].clone()
        vc = vc0[:, s:s + 1].clone()
        tok, logits, _ = qd.reference_step(
            W, step.tokens[s:s + 1].long(), torch.tensor([p], device=qd.DEV),
            kc, vc)
        if int(tok[0]) != int(got_tok[s]):
            top = torch.topk(logits[0].float(), 2).values
            if float(top[0] - top[1]) > 1e-2 * float(top[0].abs()):
                mism.append((s, int(got_tok[s]), int(tok[0])))
        for got, want in ((got_kc, kc), (got_vc, vc)):
            row = got[:, s, :, p].float()
            ref = want[:, 0, :, p].float()
            err = float((row - ref).abs().max() / ref.abs().max())
            worst_cache = max(worst_cache, err)
            # Every other row of the sequence's cache: untouched.
            keep = torch.ones(capacity, dtype=torch.bool, device=qd.DEV)
            keep[p] = False
            if not torch.equal(got[:, s][:, :, keep],
                               (kc0 if got is got_kc else vc0)[:, s][:, :,
                                                                    keep]):
                mism.append((s, "cache rows besides the position changed"))
    # bf16 caches: the written rows (every layer's key and value of the
    # sequence's position) within 8 bf16 ulps of their largest element,
    # the prefill's cache tolerance (qwen3_prefill.py): f32 arithmetic in
    # another order through 36 layers, then the rounding to bf16.
    cache_ok = worst_cache <= 8 * 2.0 ** -8
    res["checks"].append({"what": "tokens vs the float32 reference per "
                          "sequence", "ok": not mism, "mismatches": mism})
    res["checks"].append({"what": "written cache rows vs the reference",
                          "ok": cache_ok, "max_rel_err": worst_cache})
    # NaN past every sequence's position: bitwise the same step.
    step.kc.copy_(kc0)
    step.vc.copy_(vc0)
    for s in range(b):
        step.kc[:, s, :, int(pos[s]) + 1:] = float("nan")
        step.vc[:, s, :, int(pos[s]) + 1:] = float("nan")
    step.run(dpos)
    torch.cuda.synchronize()
    same = torch.equal(step.next, got_tok)
    for s in range(b):
        p = int(pos[s])
        same &= torch.equal(step.kc[:, s, :, :p + 1], got_kc[:, s, :, :p + 1])
        same &= torch.equal(step.vc[:, s, :, :p + 1], got_vc[:, s, :, :p + 1])
    res["checks"].append({"what": "NaN past every position: the same "
                          "tokens and caches, bitwise", "ok": bool(same)})
    res["status"] = "ok" if all(c["ok"] for c in res["checks"]) else "wrong"
    harness.set_case(report, res, path)
    print(name, res["status"], res["checks"], flush=True)
    return step


def speed(args, report, path, deadline, W, bundles, capacity, b, vstep):
    name = f"qwen3-varlen-b{b}-ctx{CTX}"
    harness.start_case(report, name, path)
    res = harness.case_result(name)
    pos = positions_for(b, CTX).to(qd.DEV)
    uni = Step(ROOT / bundles[f"decode{b}"]["dir"] / "bundle", W, b,
               capacity)
    pos_arg = len(uni.W) + 3
    fns = [("tang_varlen", lambda: vstep.run(pos, check_indices=False)),
           ("tang_uniform_at_longest",
            lambda: uni.run(None, check_indices=False,
                            sizes={pos_arg: CTX - 1}))]
    timed_fns = []
    for pname, fn in fns:
        call, graphed, why = harness.try_graphed(torch, fn)
        timed_fns.append((pname, call))
    timed = harness.interleaved_rounds(
        torch, timed_fns, rounds=harness.rounds_of(args, 5),
        target_ms=harness.target_ms_of(args), deadline=deadline.monotonic())
    res["contenders"] = {n: {"ms": t["ms"]} for n, t in timed.items()
                         if t.get("ms")}
    res["positions"] = pos.tolist()
    res["status"] = "ok"
    res["note"] = ("tang only: the varlen step against the uniform step "
                   "with every sequence at the longest position")
    harness.set_case(report, res, path)
    print(name, res["contenders"], flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    harness.add_common_args(ap, default_rounds=7)
    args = ap.parse_args()
    deadline = harness.Deadline(args.deadline)
    t0 = time.monotonic()
    bundles, capacity = qd.load_bundles()
    batches = sorted(v["batch"] for n, v in (bundles or {}).items()
                     if v.get("varlen"))
    if not batches:
        print("no varlen bundle: run bench/prepare_qwen3.py --varlen 4 and "
              "carry gpu-work/qwen3", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else harness.out_dir("bench-out")
    path = out / "qwen3_varlen.json"
    report = harness.new_report("qwen3_varlen", torch, settings={
        "rounds": harness.rounds_of(args, 5), "context": CTX,
        "capacity": capacity})
    W = qd.make_weights()
    for b in batches:
        vstep = check(report, path, W, bundles, capacity, b)
        if f"decode{b}" in bundles and not deadline.passed(30) and \
                not args.sanitize:
            speed(args, report, path, deadline, W, bundles, capacity, b,
                  vstep)
        del vstep
        torch.cuda.empty_cache()
    harness.finish_report(report, t0)
    harness.write_report(report, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
