"""The sparse mixture-of-experts layer on the GPU at Qwen3-Next's shape
(bundles compiled here by bench/prepare_moe.py from
tang.models.qwen3_next.moe_layer), against the layer PyTorch users run.

The shape is read from transformers' Qwen3NextConfig() (its defaults:
hidden 2048, 512 experts of ffn 512, 10 routed, a gated shared expert of
ffn 512, renormalised top-k); a bundle of another shape is refused. The
weights are transformers' own module's (Qwen3NextSparseMoeBlock built from
that config, bf16, filled from a seeded normal), read into tang's layout
(qwen3_next.moe_weight_shapes: stacked [E, F, D] / [E, D, F]).

Peers, same weights, same tokens:
* ``transformers_eager``: the Qwen3NextSparseMoeBlock module, bf16;
* ``transformers_compile``: its torch.compile (default mode; skipped
  when --compile-reserve-s is not left);
* ``torch_loop``: a plain PyTorch loop over the experts hit (bf16
  products, f32 routing), as a user writes it.

Correctness: every element of tang's f32 output against a float64
reference on the GPU (the routing in float64); the peers' outputs against
it too (informational: bf16 products). Tokens are drawn so that every
token's k-th and (k+1)-th router logits differ by more than 2^-6 of its
largest (about four bf16 ulps): the bf16 peers then route as float64 does
(a near-tie would send a token to another expert in a bf16 router, which
is not an error of either). NaN-poisoned and sentinel-poisoned runs must
give the same bits.

Training step (bench/prepare_moe.py --grad-tokens, default 8 tokens):
--tang-grad's forward and backward, the gradients of the tokens and every
weight against PyTorch autograd of the float64 reference (every element),
timed against autograd through transformers' module.

Speed: each contender in a CUDA graph where it takes one (the eager
module's expert loop syncs on the host: not capturable), interleaved
rounds; also the layer's floor (bench/README "MoE"): the router, the
selected experts' weights (at most every expert once), the shared expert
and the tokens in and out, read once at the copy rate.

Writes moe.json (bench/harness.py's schema) into --out.
Run on the GPU machine:  python3 bench/bench_moe.py --out DIR
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


def hf_config():
    from transformers import Qwen3NextConfig
    return Qwen3NextConfig()


def seeded(module, seed=0):
    """`module` (on the GPU) with every parameter drawn from a seeded normal
    of std 1 / sqrt(fan-in), then bf16, in eval mode."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, device="cuda", generator=gen)
                    / p.shape[-1] ** 0.5)
    return module.to(torch.bfloat16).eval()


def hf_block(hf):
    """transformers' MoE block of `hf`, bf16 on the GPU (`seeded`)."""
    from transformers.models.qwen3_next import modeling_qwen3_next as m
    with torch.device("cuda"):
        return seeded(m.Qwen3NextSparseMoeBlock(hf))


def tang_weights(block, cfg):
    """The block's weights in tang's argument order and layout (views or
    stacked copies, bf16)."""
    E, F = cfg.experts, cfg.ffn
    ex = block.experts
    if hasattr(ex, "gate_up_proj"):         # transformers >= 5: fused 3D
        gate = ex.gate_up_proj[:, :F]
        up = ex.gate_up_proj[:, F:]
        down = ex.down_proj
    else:                                   # a ModuleList of MLPs
        gate = torch.stack([ex[e].gate_proj.weight for e in range(E)])
        up = torch.stack([ex[e].up_proj.weight for e in range(E)])
        down = torch.stack([ex[e].down_proj.weight for e in range(E)])
    sh = block.shared_expert
    w = {"router": block.gate.weight, "w_gate": gate, "w_up": up,
         "w_down": down, "s_gate": sh.gate_proj.weight,
         "s_up": sh.up_proj.weight, "s_down": sh.down_proj.weight,
         "s_router": block.shared_expert_gate.weight}
    shapes = qn.moe_weight_shapes(cfg)
    out = []
    for name, shape in shapes.items():
        t = w[name].detach().contiguous()
        if tuple(t.shape) != shape:
            raise ValueError(f"{name}: the module holds {tuple(t.shape)}, "
                             f"tang takes {shape}")
        out.append(t)
    return out


def reference(cfg, x, W):
    """float64 [T, D]: the layer's math (qwen3_next's docstring), routing
    in float64, a loop over the experts hit."""
    router, w_gate, w_up, w_down, s_gate, s_up, s_down, s_router = \
        [w.double() for w in W]
    x = x.double()
    logits = x @ router.T
    p = torch.softmax(logits, -1)
    top, sel = torch.topk(logits, cfg.top_k, dim=-1)
    w = torch.gather(p, 1, sel)
    if cfg.norm_topk:
        w = w / w.sum(-1, keepdim=True)
    y = torch.zeros_like(x)
    for e in torch.unique(sel).tolist():
        rows, slots = torch.nonzero(sel == e, as_tuple=True)
        xe = x[rows]
        h = torch.nn.functional.silu(xe @ w_gate[e].T) * (xe @ w_up[e].T)
        y.index_add_(0, rows, w[rows, slots, None] * (h @ w_down[e].T))
    h = torch.nn.functional.silu(x @ s_gate.T) * (x @ s_up.T)
    return y + torch.sigmoid(x @ s_router.T) * (h @ s_down.T)


def well_routed_tokens(cfg, router, n, seed):
    """n tokens [n, D] bf16, each redrawn until its k-th and (k+1)-th
    router logits (float64, from the bf16 values) differ by more than 2^-6
    of its largest logit."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    r = router.double()
    x = torch.randn(n, cfg.hidden, device="cuda", generator=gen).bfloat16()
    for _ in range(200):
        lg = torch.sort(x.double() @ r.T, dim=-1, descending=True).values
        gap = lg[:, cfg.top_k - 1] - lg[:, cfg.top_k]
        bad = gap <= lg.abs().max(-1).values * 2.0 ** -6
        if not bool(bad.any()):
            return x
        x[bad] = torch.randn(int(bad.sum()), cfg.hidden, device="cuda",
                             generator=gen).bfloat16()
    raise RuntimeError("no well-routed tokens after 200 draws")


def torch_loop(cfg, W):
    """The layer as a PyTorch user writes it: bf16 products, f32 routing,
    a loop over the experts hit (host syncs: not graph-capturable)."""
    router, w_gate, w_up, w_down, s_gate, s_up, s_down, s_router = W
    F = torch.nn.functional

    def run(x):
        p = torch.softmax((x @ router.T).float(), -1)
        w, sel = torch.topk(p, cfg.top_k, dim=-1)
        if cfg.norm_topk:
            w = w / w.sum(-1, keepdim=True)
        w = w.to(x.dtype)
        y = torch.zeros_like(x)
        for e in torch.unique(sel).tolist():
            rows, slots = torch.nonzero(sel == e, as_tuple=True)
            xe = x[rows]
            h = F.silu(xe @ w_gate[e].T) * (xe @ w_up[e].T)
            y.index_add_(0, rows, w[rows, slots, None] * (h @ w_down[e].T))
        h = F.silu(x @ s_gate.T) * (x @ s_up.T)
        return y + torch.sigmoid(x @ s_router.T) * (h @ s_down.T)
    return run


def run_case(args, report, path, deadline, cfg, block, W, bundle, tokens,
             copy_gbs):
    name = f"moe-t{tokens}"
    harness.start_case(report, name, path)
    res = harness.case_result(name)
    floor_bytes = qn.moe_selected_bytes(cfg, tokens)
    E, D, F = cfg.experts, cfg.hidden, cfg.ffn
    flops = 2 * tokens * (E * D + cfg.top_k * 3 * F * D
                          + 3 * cfg.shared_ffn * D + D)
    res.update(tokens=tokens, floor_bytes=floor_bytes, flops=flops,
               floor_ms=floor_bytes / copy_gbs / 1e6)
    x = well_routed_tokens(cfg, W[0], tokens, seed=tokens)
    o = torch.empty(tokens, D, device="cuda")

    def tang_run():
        bundle.run("moe_layer", x, *W, outputs=[o])
    ref = reference(cfg, x, W)
    first, same = harness.poisoned_runs(torch, [o], tang_run)
    tol = harness.Tolerance("f32", reduction=D, roundings=1)
    res["checks"].append(harness.check_tensor(first[0], ref, tol, "tang"))
    if not harness.judge_checks(res, same) or args.sanitize:
        harness.set_case(report, harness.sanitized(res) if res["status"] ==
                         "ok" else res, path)
        return
    x3 = x.view(1, tokens, D)

    def module(fn):
        def call():
            out = fn(x3)
            return (out[0] if isinstance(out, tuple) else out).view(tokens, D)
        return call
    contenders = [("tang", tang_run),
                  ("transformers_eager", module(block)),
                  ("torch_loop", lambda: torch_loop(cfg, W)(x))]
    if deadline.passed(args.compile_reserve_s):
        res["peer_status"] = {"transformers_compile": "skipped: budget"}
    else:
        t0 = time.monotonic()
        compiled = torch.compile(block)
        try:
            module(compiled)()
            contenders.append(("transformers_compile", module(compiled)))
        except Exception as e:
            res.setdefault("peer_errors", {})["transformers_compile"] = \
                harness.short(e)
        res["compile_s"] = round(time.monotonic() - t0, 1)
    ptol = harness.Tolerance("bf16", reduction=D, roundings=4)
    timed = harness.check_and_time(
        torch, res, contenders, ref, ptol, harness.rounds_of(args, 5),
        harness.target_ms_of(args), deadline.monotonic())
    if res.get("tang_ms"):
        res["share_of_floor"] = res["floor_ms"] / res["tang_ms"]
    # Tokens per second and the share of the floor, per contender (the
    # generated table's decode form).
    res["floor_tok_s"] = tokens / res["floor_ms"] * 1e3
    res["contenders"] = {
        pname: {"ms": t["ms"], "tok_s": tokens / t["ms"] * 1e3,
                "share_of_floor": res["floor_ms"] / t["ms"]}
        for pname, t in timed.items() if t.get("ms")}
    harness.set_case(report, res, path)


def run_grad(args, report, path, deadline, cfg, block, W, bundle, T,
             program_text):
    """The training step (--tang-grad split: @moe_layer_fwd, @moe_layer_bwd)
    of T tokens: the gradients of <dy, y> for the tokens and every weight
    against PyTorch autograd of the float64 reference (every element; an
    expert no token routes to gets exactly zero), timed against autograd
    through transformers' module."""
    name = f"moe-grad-t{T}"
    harness.start_case(report, name, path)
    res = harness.case_result(name)
    res.update(tokens=T)
    x = well_routed_tokens(cfg, W[0], T, seed=1000 + T)
    gen = torch.Generator(device="cuda").manual_seed(T)
    dy = torch.randn(T, cfg.hidden, device="cuda", generator=gen)
    xs = [x, *W]

    def as_tuple(r):
        return r if isinstance(r, tuple) else (r,)
    fwd = as_tuple(bundle.run("moe_layer_fwd", *xs))
    grads = as_tuple(bundle.run("moe_layer_bwd", *xs, *fwd, dy))

    def tang_step():
        bundle.run("moe_layer_fwd", *xs, outputs=list(fwd))
        bundle.run("moe_layer_bwd", *xs, *fwd, dy, outputs=list(grads))
        return grads[0]
    t0 = time.monotonic()
    leaves = [t.detach().double().requires_grad_() for t in xs]
    y = reference(cfg, leaves[0], leaves[1:])
    ref = torch.autograd.grad((y * dy.double()).sum(), leaves)
    del y
    res["reference_s"] = round(time.monotonic() - t0, 1)
    first, same = harness.poisoned_runs(torch, list(fwd) + list(grads),
                                        tang_step)
    names = ["dx"] + [f"d{n}" for n in qn.moe_weight_shapes(cfg)]
    for got, want, n in zip(first[len(fwd):], ref, names):
        dtype = "f32" if got.dtype == torch.float32 else "bf16"
        res["checks"].append(harness.check_tensor(
            got, want, harness.tolerance_for_program(dtype, program_text), n))
    del leaves
    if not harness.judge_checks(res, same) or args.sanitize:
        harness.set_case(report, harness.sanitized(res) if res["status"] ==
                         "ok" else res, path)
        return
    x3 = x.view(1, T, cfg.hidden).detach().clone().requires_grad_()
    params = list(block.parameters())

    def module_grad():
        out = block(x3)
        out = out[0] if isinstance(out, tuple) else out
        return torch.autograd.grad(out, [x3, *params],
                                   dy.view_as(out).to(out.dtype))[0].view(
                                       T, cfg.hidden)
    ptol = harness.tolerance_for_program("bf16", program_text)
    harness.check_and_time(
        torch, res, [("tang", tang_step),
                     ("transformers_eager_autograd", module_grad)],
        ref[0], ptol, harness.rounds_of(args, 5), harness.target_ms_of(args),
        deadline.monotonic())
    harness.set_case(report, res, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compile-reserve-s", type=float, default=120,
                    help="skip the torch.compile peer when less than this "
                    "is left before --deadline")
    harness.add_common_args(ap, default_rounds=7)
    args = ap.parse_args()
    deadline = harness.Deadline(args.deadline)
    t_start = time.monotonic()
    out_dir = Path(args.out) if args.out else harness.out_dir("bench-out")
    listing_path = ROOT / "gpu-work" / "moe" / "bundles.json"
    if not listing_path.exists():
        print("no MoE bundles: run bench/prepare_moe.py here and carry "
              "gpu-work/moe", file=sys.stderr)
        return 2
    listing = json.loads(listing_path.read_text())
    hf = hf_config()
    cfg = qn.moe_config_from(hf)
    shape = {k: (v.name if k == "dtype" else v) for k, v in
             asdict(cfg).items()}
    if shape != listing["config"]:
        print(f"the bundles are of {listing['config']}, transformers' "
              f"Qwen3NextConfig() is {shape}: run bench/prepare_moe.py "
              "again", file=sys.stderr)
        return 2
    report = harness.new_report("moe", torch, settings={
        "rounds": harness.rounds_of(args, 5), "quick": args.quick,
        "target_ms": harness.target_ms_of(args), "config": shape,
        "shape": "Qwen3-Next MoE (transformers Qwen3NextConfig()): bf16 "
        "weights and tokens, f32 output"})
    path = out_dir / "moe.json"
    # The forward by token count, then the training steps.
    bundles = sorted(listing["bundles"].values(), key=lambda b: (
        "grad_tokens" in b, b.get("tokens", b.get("grad_tokens"))))
    harness.prelist(report, [f"moe-t{b['tokens']}" if "tokens" in b else
                             f"moe-grad-t{b['grad_tokens']}"
                             for b in bundles])
    harness.write_report(report, path)
    report["copy"] = copy_rate(torch, 10 if args.quick else 30)
    block = hf_block(hf)
    W = tang_weights(block, cfg)
    for b in bundles:
        if deadline.passed(20):
            break
        bundle = tang.cuda.Bundle(ROOT / b["dir"] / "bundle")
        if "grad_tokens" in b:
            run_grad(args, report, path, deadline, cfg, block, W, bundle,
                     b["grad_tokens"],
                     (ROOT / b["dir"] / "program.mlir").read_text())
        else:
            run_case(args, report, path, deadline, cfg, block, W, bundle,
                     b["tokens"], report["copy"]["gbps"])
        torch.cuda.empty_cache()
    harness.finish_report(report, t_start)
    harness.write_report(report, path)
    for c in report["cases"]:
        print(f"{c['case']:10s} {c['status']:10s} tang {c.get('tang_ms')} "
              f"best {c.get('best_peer')} {c.get('peers')} ratio "
              f"{c.get('ratio')} floor {c.get('share_of_floor')} "
              f"{c.get('note', '')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
