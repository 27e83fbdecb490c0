#!/usr/bin/env python3
"""The gated delta rule on the GPU at Qwen3-Next's linear-attention shape
(bundles compiled here by bench/prepare_delta.py from
tang.models.qwen3_next.gated_delta_rule, which --tang-chunk-affine-scan
chunks), against what PyTorch users run.

The shape is read from transformers' Qwen3NextConfig() (16 query/key
heads, 32 value heads of dim 128); a bundle of another shape is refused.
Inputs (batch 1, seeded): q, k, v normal (bf16), the log decay g =
-exp(A_log) softplus(a + dt_bias) with a normal and A_log, dt_bias as the
layer initialises them (f32), beta = sigmoid(b) (bf16); q and k
L2-normalised inside every contender (use_qk_l2norm_in_kernel).

Peers, same inputs, keys repeated for their value heads as the layer does:
* ``transformers_chunk``: transformers' torch_chunk_gated_delta_rule (the
  layer's fallback without the fla kernels), eager;
* ``transformers_chunk_compile``: its torch.compile (skipped when
  --compile-reserve-s is not left);
* ``fla``: fla's chunk_gated_delta_rule (Triton), where installed.

Decode: the one-token update of 1, 16 and 64 sequences from their states
(length 1 with S0), against transformers' torch_recurrent_gated_delta_rule
(eager and torch.compile); its floor is the states read and written once
at the copy rate.

Training step: --tang-grad's forward and backward at 256 tokens, every
element of the gradients of q, k, v, g and beta against PyTorch autograd
of the float64 recurrence; timed against autograd through transformers'
torch_chunk_gated_delta_rule.

Correctness: every element of tang's output (f32) and final state against
a float64 token-by-token recurrence on the GPU, under the harness's f32
bound for the program plus 8 times the recurrence's sensitivity to f32
roundings of its inputs (`sensitivity`); the peers' outputs against it too
(informational). NaN-poisoned and sentinel-poisoned runs must give
the same bits.

Writes delta.json (bench/harness.py's schema) into --out.
Run on the GPU machine:  python3 bench/bench_delta.py --out DIR
"""

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402
import tang.cuda  # noqa: E402
from bench_memory_bound import copy_rate  # noqa: E402
from tang.models import qwen3_next as qn  # noqa: E402


def inputs(cfg, T, seed=0, batch=1):
    g = torch.Generator(device="cuda").manual_seed(seed)
    Hk, Hv, K, V = cfg.key_heads, cfg.value_heads, cfg.key_dim, cfg.value_dim
    B = batch

    def normal(*shape):
        return torch.randn(*shape, generator=g, device="cuda")
    q = normal(B, T, Hk, K).bfloat16()
    k = normal(B, T, Hk, K).bfloat16()
    v = normal(B, T, Hv, V).bfloat16()
    A_log = torch.log(torch.empty(Hv, device="cuda").uniform_(
        1, 16, generator=g))
    dt_bias = torch.ones(Hv, device="cuda")
    gate = -A_log.exp() * torch.nn.functional.softplus(
        normal(B, T, Hv) + dt_bias)
    beta = torch.sigmoid(normal(B, T, Hv)).bfloat16()
    return q, k, v, gate.float().contiguous(), beta


def state(cfg, batch, seed=1):
    """A decode step's incoming state [B, Hv, K, V] (f32): what a prefill
    of unit-norm keys leaves, entries of about 0.1."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    return 0.1 * torch.randn(batch, cfg.value_heads, cfg.key_dim,
                             cfg.value_dim, generator=g, device="cuda")


def reference(cfg, q, k, v, g, beta, S0=None):
    """The recurrence in float64, token by token (o [B, T, Hv, V], the
    final state [B, Hv, K, V]), from S0 (zero when None)."""
    per = cfg.value_heads // cfg.key_heads

    def l2norm(x):
        return x / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-6)
    scale = float(torch.tensor(cfg.key_dim ** -0.5, dtype=torch.float32))
    qd = l2norm(q.double()).repeat_interleave(per, 2) * scale
    kd = l2norm(k.double()).repeat_interleave(per, 2)
    vd, gd, bd = v.double(), g.double(), beta.double()
    B, T, H = vd.shape[0], vd.shape[1], vd.shape[2]
    S = (torch.zeros(B, H, cfg.key_dim, cfg.value_dim, dtype=torch.float64,
                     device="cuda") if S0 is None else S0.double().clone())
    o = torch.empty(B, T, H, cfg.value_dim, dtype=torch.float64,
                    device="cuda")
    for t in range(T):
        S = S * gd[:, t].exp()[:, :, None, None]
        mem = torch.einsum("bhkv,bhk->bhv", S, kd[:, t])
        S = S + kd[:, t][..., None] * (
            (vd[:, t] - mem) * bd[:, t][..., None])[:, :, None]
        o[:, t] = torch.einsum("bhkv,bhk->bhv", S, qd[:, t])
    return o, S


def sensitivity(cfg, inputs, ref, trials=4, seed=1):
    """How far the float64 reference moves when every input moves by a
    random fraction (uniform in [-1, 1]) of f32's unit roundoff, the
    precision tang computes in: the largest change of each output over
    `trials` draws. A tolerance that follows from f32 must allow the
    recurrence's own conditioning (decays and rank-one corrections over
    thousands of steps), which no f32 implementation escapes;
    check_tensor adds harness.SENSITIVITY_FACTOR times it to an
    element's bound, as bench/gpu_check.py does for the interpreter's
    (there inputs move by their storage type's rounding, a far larger
    move for these bf16 inputs)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    u = harness.UNIT_ROUNDOFF["f32"]
    worst = [torch.zeros_like(r) for r in ref]
    for _ in range(trials):
        moved = [x.double() * (1 + u * (2 * torch.rand(
            x.shape, generator=gen, device="cuda", dtype=torch.float64) - 1))
            for x in inputs]
        for w, r, m in zip(worst, ref, reference(cfg, *moved)):
            torch.maximum(w, (m - r).abs(), out=w)
    return worst


def peers(cfg, q, k, v, g, beta):
    per = cfg.value_heads // cfg.key_heads
    qr = q.repeat_interleave(per, 2)
    kr = k.repeat_interleave(per, 2)
    out = []
    try:
        from transformers.models.qwen3_next import modeling_qwen3_next as m
        chunk = m.torch_chunk_gated_delta_rule

        def eager():
            return chunk(qr, kr, v, g=g, beta=beta, initial_state=None,
                         output_final_state=False,
                         use_qk_l2norm_in_kernel=True)[0]
        out.append(("transformers_chunk", eager, chunk))
    except Exception as e:  # transformers without Qwen3-Next
        out.append(("transformers_chunk", e, None))
    try:
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule

        def fla():
            return chunk_gated_delta_rule(qr, kr, v, g=g, beta=beta,
                                          use_qk_l2norm_in_kernel=True)[0]
        out.append(("fla", fla, None))
    except Exception as e:
        out.append(("fla", e, None))
    return out, qr, kr


def run_case(args, report, path, deadline, cfg, bundle, T, program_text,
             copy_gbs):
    name = f"delta-t{T}"
    harness.start_case(report, name, path)
    res = harness.case_result(name)
    Hk, Hv, K, V = cfg.key_heads, cfg.value_heads, cfg.key_dim, cfg.value_dim
    # The traffic floor: the inputs read once (bf16 q, k, v, beta; f32 g),
    # the output and the final state written once (f32).
    floor_bytes = (T * (2 * Hk * K + Hv * V) * 2 + T * Hv * (4 + 2)
                   + T * Hv * V * 4 + Hv * K * V * 4)
    res.update(tokens=T, flops_recurrent=4 * T * Hv * K * V,
               floor_bytes=floor_bytes, floor_ms=floor_bytes / copy_gbs / 1e6)
    q, k, v, g, beta = inputs(cfg, T)
    o = torch.empty(1, T, Hv, V, device="cuda")
    S = torch.empty(1, Hv, K, V, device="cuda")

    def tang_run():
        bundle.run("gated_delta_rule", q, k, v, g, beta, outputs=[o, S])
        return o
    t0 = time.monotonic()
    ref_o, ref_S = reference(cfg, q, k, v, g, beta)
    res["reference_s"] = round(time.monotonic() - t0, 1)
    sens_o, sens_S = sensitivity(cfg, (q, k, v, g, beta), (ref_o, ref_S))
    res["sensitivity_s"] = round(time.monotonic() - t0, 1)
    first, same = harness.poisoned_runs(torch, [o, S], tang_run)
    # The differential tests' rule for this program (harness): the scan's
    # steps count as roundings (4096 steps of a 3-comprehension combine),
    # plus the recurrence's sensitivity to f32 roundings of its inputs.
    tol = harness.tolerance_for_program("f32", program_text)
    res["checks"].append(harness.check_tensor(first[0], ref_o, tol, "o",
                                              sensitivity=sens_o))
    res["checks"].append(harness.check_tensor(first[1], ref_S, tol, "S",
                                              sensitivity=sens_S))
    if not harness.judge_checks(res, same) or args.sanitize:
        harness.set_case(report, harness.sanitized(res) if res["status"] ==
                         "ok" else res, path)
        return
    contenders = [("tang", tang_run)]
    found, qr, kr = peers(cfg, q, k, v, g, beta)
    for pname, fn, chunk in found:
        if isinstance(fn, Exception):
            res.setdefault("peer_errors", {})[pname] = harness.short(fn)
            continue
        contenders.append((pname, fn))
        if chunk is None:
            continue
        if deadline.passed(args.compile_reserve_s):
            res["peer_status"] = {f"{pname}_compile": "skipped: budget"}
            continue
        t0 = time.monotonic()
        try:
            compiled = torch.compile(chunk)

            def comp():
                return compiled(qr, kr, v, g=g, beta=beta,
                                initial_state=None, output_final_state=False,
                                use_qk_l2norm_in_kernel=True)[0]
            comp()
            contenders.append((f"{pname}_compile", comp))
        except Exception as e:
            res.setdefault("peer_errors", {})[f"{pname}_compile"] = \
                harness.short(e)
        res["compile_s"] = round(time.monotonic() - t0, 1)
    ptol = harness.tolerance_for_program("bf16", program_text)
    harness.check_and_time(torch, res, contenders, ref_o, ptol,
                           harness.rounds_of(args, 5),
                           harness.target_ms_of(args), deadline.monotonic())
    if res.get("tang_ms"):
        res["share_of_floor"] = res["floor_ms"] / res["tang_ms"]
    harness.set_case(report, res, path)


def run_decode(args, report, path, deadline, cfg, bundle, B, program_text,
               copy_gbs):
    """The one-token update of B sequences from their states (length 1
    with S0), against transformers' torch_recurrent_gated_delta_rule
    (the layer's decode path without fla) and its torch.compile; the
    floor: the states read and written once at the copy rate."""
    name = f"delta-decode-b{B}"
    harness.start_case(report, name, path)
    res = harness.case_result(name)
    Hk, Hv, K, V = cfg.key_heads, cfg.value_heads, cfg.key_dim, cfg.value_dim
    floor_bytes = (2 * B * Hv * K * V * 4 + B * (2 * Hk * K + Hv * V) * 2
                   + B * Hv * (4 + 2) + B * Hv * V * 4)
    res.update(decode_batch=B, floor_bytes=floor_bytes,
               floor_ms=floor_bytes / copy_gbs / 1e6)
    q, k, v, g, beta = inputs(cfg, 1, seed=B, batch=B)
    S0 = state(cfg, B)
    o = torch.empty(B, 1, Hv, V, device="cuda")
    S = torch.empty(B, Hv, K, V, device="cuda")

    def tang_run():
        bundle.run("gated_delta_rule", q, k, v, g, beta, S0, outputs=[o, S])
        return o
    ref_o, ref_S = reference(cfg, q, k, v, g, beta, S0)
    first, same = harness.poisoned_runs(torch, [o, S], tang_run)
    tol = harness.tolerance_for_program("f32", program_text)
    res["checks"].append(harness.check_tensor(first[0], ref_o, tol, "o"))
    res["checks"].append(harness.check_tensor(first[1], ref_S, tol, "S"))
    if not harness.judge_checks(res, same) or args.sanitize:
        harness.set_case(report, harness.sanitized(res) if res["status"] ==
                         "ok" else res, path)
        return
    contenders = [("tang", tang_run)]
    per = Hv // Hk
    qr, kr = q.repeat_interleave(per, 2), k.repeat_interleave(per, 2)
    try:
        from transformers.models.qwen3_next import modeling_qwen3_next as m
        rec = m.torch_recurrent_gated_delta_rule

        def peer(fn):
            return lambda: fn(qr, kr, v, g=g, beta=beta, initial_state=S0,
                              output_final_state=True,
                              use_qk_l2norm_in_kernel=True)[0]
        contenders.append(("transformers_recurrent", peer(rec)))
        if deadline.passed(args.compile_reserve_s):
            res["peer_status"] = {
                "transformers_recurrent_compile": "skipped: budget"}
        else:
            t0 = time.monotonic()
            try:
                comp = peer(torch.compile(rec))
                comp()
                contenders.append(("transformers_recurrent_compile", comp))
            except Exception as e:
                res.setdefault("peer_errors", {})[
                    "transformers_recurrent_compile"] = harness.short(e)
            res["compile_s"] = round(time.monotonic() - t0, 1)
    except Exception as e:  # transformers without Qwen3-Next
        res.setdefault("peer_errors", {})["transformers_recurrent"] = \
            harness.short(e)
    ptol = harness.tolerance_for_program("bf16", program_text)
    timed = harness.check_and_time(
        torch, res, contenders, ref_o, ptol, harness.rounds_of(args, 5),
        harness.target_ms_of(args), deadline.monotonic())
    if res.get("tang_ms"):
        res["share_of_floor"] = res["floor_ms"] / res["tang_ms"]
    # Sequences updated per second, and the share of the floor (the
    # generated table's decode form).
    res["floor_tok_s"] = B / res["floor_ms"] * 1e3
    res["contenders"] = {
        pname: {"ms": t["ms"], "tok_s": B / t["ms"] * 1e3,
                "share_of_floor": res["floor_ms"] / t["ms"]}
        for pname, t in timed.items() if t.get("ms")}
    harness.set_case(report, res, path)


def grad_reference(cfg, xs, do, dS):
    """float64 autograd of the token-by-token recurrence: the gradients of
    <do, o> + <dS, S> for q, k, v, g, beta."""
    leaves = [x.detach().double().requires_grad_() for x in xs]
    o, S = reference(cfg, *leaves)
    return torch.autograd.grad((o * do.double()).sum() +
                               (S * dS.double()).sum(), leaves)


def run_grad(args, report, path, deadline, cfg, bundle, T, program_text):
    """The training step (--tang-grad=split=1: @gated_delta_rule_fwd
    saves the residuals, @gated_delta_rule_bwd gives the gradients of q,
    k, v, g, beta) against PyTorch autograd of the float64 recurrence,
    every element of every gradient; timed against autograd through
    transformers' torch_chunk_gated_delta_rule (forward + backward)."""
    name = f"delta-grad-t{T}"
    harness.start_case(report, name, path)
    res = harness.case_result(name)
    Hk, Hv, K, V = cfg.key_heads, cfg.value_heads, cfg.key_dim, cfg.value_dim
    res.update(tokens=T)
    xs = inputs(cfg, T, seed=T)
    gen = torch.Generator(device="cuda").manual_seed(T + 1)
    do = torch.randn(1, T, Hv, V, generator=gen, device="cuda")
    dS = torch.randn(1, Hv, K, V, generator=gen, device="cuda")
    fwd = bundle.run("gated_delta_rule_fwd", *xs)
    grads = bundle.run("gated_delta_rule_bwd", *xs, *fwd, do, dS)

    def tang_step():
        bundle.run("gated_delta_rule_fwd", *xs, outputs=list(fwd))
        bundle.run("gated_delta_rule_bwd", *xs, *fwd, do, dS,
                   outputs=list(grads))
        return grads[0]
    t0 = time.monotonic()
    ref = grad_reference(cfg, xs, do, dS)
    # The gradients' own sensitivity to f32 roundings of the inputs (as
    # the forward's, `sensitivity`): two draws.
    u = harness.UNIT_ROUNDOFF["f32"]
    sens = [torch.zeros_like(r) for r in ref]
    for trial in range(2):
        g2 = torch.Generator(device="cuda").manual_seed(100 + trial)
        moved = [x.double() * (1 + u * (2 * torch.rand(
            x.shape, generator=g2, device="cuda", dtype=torch.float64) - 1))
            for x in xs]
        for w, r, m in zip(sens, ref, grad_reference(cfg, moved, do, dS)):
            torch.maximum(w, (m - r).abs(), out=w)
    res["reference_s"] = round(time.monotonic() - t0, 1)
    first, same = harness.poisoned_runs(torch, list(fwd) + list(grads),
                                        tang_step)
    for n, (got, want, sv) in enumerate(zip(first[len(fwd):], ref, sens)):
        dtype = "f32" if got.dtype == torch.float32 else "bf16"
        tol = harness.tolerance_for_program(dtype, program_text)
        res["checks"].append(harness.check_tensor(
            got, want, tol, f"d{['q', 'k', 'v', 'g', 'beta'][n]}",
            sensitivity=sv))
    if not harness.judge_checks(res, same) or args.sanitize:
        harness.set_case(report, harness.sanitized(res) if res["status"] ==
                         "ok" else res, path)
        return
    contenders = [("tang", tang_step)]
    per = Hv // Hk
    try:
        from transformers.models.qwen3_next import modeling_qwen3_next as m
        chunk = m.torch_chunk_gated_delta_rule
        leaves = [x.detach().clone().requires_grad_() for x in xs]

        def peer():
            q, k, v, g, beta = leaves
            o, S = chunk(q.repeat_interleave(per, 2),
                         k.repeat_interleave(per, 2), v, g=g, beta=beta,
                         initial_state=None, output_final_state=True,
                         use_qk_l2norm_in_kernel=True)
            return torch.autograd.grad((o, S), leaves,
                                       (do.to(o.dtype), dS.to(S.dtype)))[0]
        contenders.append(("transformers_chunk_autograd", peer))
    except Exception as e:  # transformers without Qwen3-Next
        res.setdefault("peer_errors", {})["transformers_chunk_autograd"] = \
            harness.short(e)
    ptol = harness.tolerance_for_program("bf16", program_text)
    harness.check_and_time(torch, res, contenders, ref[0], ptol,
                           harness.rounds_of(args, 5),
                           harness.target_ms_of(args), deadline.monotonic())
    harness.set_case(report, res, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compile-reserve-s", type=float, default=120,
                    help="skip the torch.compile peer when less than this "
                    "is left before --deadline")
    harness.add_common_args(ap, default_rounds=5)
    args = ap.parse_args()
    deadline = harness.Deadline(args.deadline)
    t_start = time.monotonic()
    out_dir = Path(args.out) if args.out else harness.out_dir("bench-out")
    listing_path = ROOT / "gpu-work" / "delta" / "bundles.json"
    if not listing_path.exists():
        print("no gated delta bundles: run bench/prepare_delta.py here and "
              "carry gpu-work/delta", file=sys.stderr)
        return 2
    listing = json.loads(listing_path.read_text())
    from transformers import Qwen3NextConfig
    cfg = qn.delta_config_from(Qwen3NextConfig())
    shape = {k: (v.name if k == "dtype" else v) for k, v in
             asdict(cfg).items()}
    if shape != listing["config"]:
        print(f"the bundles are of {listing['config']}, transformers' "
              f"Qwen3NextConfig() is {shape}: run bench/prepare_delta.py "
              "again", file=sys.stderr)
        return 2
    report = harness.new_report("delta", torch, settings={
        "rounds": harness.rounds_of(args, 5), "quick": args.quick,
        "target_ms": harness.target_ms_of(args), "config": shape,
        "shape": "Qwen3-Next gated delta rule (transformers "
        "Qwen3NextConfig()): bf16 q/k/v/beta, f32 decay, f32 output"})
    path = out_dir / "delta.json"
    # Decode first (short), then prefill by length.
    # Prefill by length first (the layer's figure), then decode, then the
    # training step (its unchunked backward is the slowest).
    def kind(b):
        for n, key in enumerate(("tokens", "decode_batch", "grad_tokens")):
            if key in b:
                return n, b[key]

    def case_name(b):
        return (f"delta-decode-b{b['decode_batch']}" if "decode_batch" in b
                else f"delta-grad-t{b['grad_tokens']}" if "grad_tokens" in b
                else f"delta-t{b['tokens']}")
    bundles = sorted(listing["bundles"].values(), key=kind)
    harness.prelist(report, [case_name(b) for b in bundles])
    harness.write_report(report, path)
    report["copy"] = copy_rate(torch, 10 if args.quick else 30)
    for b in bundles:
        if deadline.passed(20):
            break
        bundle = tang.cuda.Bundle(ROOT / b["dir"] / "bundle")
        program = (ROOT / b["dir"] / "program.mlir").read_text()
        if "decode_batch" in b:
            run_decode(args, report, path, deadline, cfg, bundle,
                       b["decode_batch"], program, report["copy"]["gbps"])
        elif "grad_tokens" in b:
            run_grad(args, report, path, deadline, cfg, bundle,
                     b["grad_tokens"], program)
        else:
            run_case(args, report, path, deadline, cfg, bundle, b["tokens"],
                     program, report["copy"]["gbps"])
        torch.cuda.empty_cache()
    harness.finish_report(report, t_start)
    harness.write_report(report, path)
    for c in report["cases"]:
        print(f"{c['case']:12s} {c['status']:10s} tang {c.get('tang_ms')} "
              f"best {c.get('best_peer')} {c.get('peers')} ratio "
              f"{c.get('ratio')} floor {c.get('share_of_floor')} "
              f"{c.get('peer_errors', '')} "
              f"{c.get('note', '')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
