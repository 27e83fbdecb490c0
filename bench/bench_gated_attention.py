#!/usr/bin/env python3
"""Qwen3-Next's gated attention layer on the GPU (bundles compiled here by
bench/prepare_gated_attention.py from tang.models.qwen3_next.
gated_attention), against the layer PyTorch users run.

The shape is read from transformers' Qwen3NextConfig() (hidden 2048, 16
query heads and 2 key/value heads of dim 256, partial RoPE on a quarter of
each head); a bundle of another shape is refused. The weights are
transformers' own module's (Qwen3NextAttention built from that config,
bf16, filled from a seeded normal of std 1 / sqrt(fan-in); the
zero-centred norms' weights too), one causal sequence at positions
0..T-1, tokens normal (bf16).

Peers, same weights, same tokens, same rotary table (the model's
Qwen3NextRotaryEmbedding):
* ``transformers_sdpa``: the Qwen3NextAttention module with PyTorch's
  scaled_dot_product_attention (causal: its flash backend), bf16;
* ``transformers_sdpa_compile``: its torch.compile (default mode; skipped
  when --compile-reserve-s is not left).

Correctness: every element of tang's f32 output against the layer's
math in float64 on the GPU (per head, the causal mask explicit), within
a bf16 bound (tang rounds the projections, the rotated queries and keys,
the probabilities and the gated output to bf16) plus 8 times the layer's
sensitivity to those roundings (the float64 layer with each of them
jittered by bf16's unit roundoff: an early row averages few values and
is far above the output's rms); the peers' bf16 outputs against it too
(informational). NaN-poisoned and sentinel-poisoned runs
must give the same bits.

Speed: each contender in a CUDA graph, interleaved rounds; TFLOP/s of
the layer's products (the attention counted causal: half the scores).

Writes gated_attention.json (bench/harness.py's schema) into --out.
Run on the GPU machine:  python3 bench/bench_gated_attention.py --out DIR
"""

import argparse
import json
import math
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
from bench_moe import seeded  # noqa: E402
from tang.models import qwen3_next as qn  # noqa: E402


def hf_config():
    from transformers import Qwen3NextConfig
    hf = Qwen3NextConfig()
    hf._attn_implementation = "sdpa"
    return hf


def hf_layer(hf):
    """transformers' attention module and rotary table of `hf`, bf16 on the
    GPU, every parameter drawn from a seeded normal of std 1 /
    sqrt(fan-in)."""
    from transformers.models.qwen3_next import modeling_qwen3_next as m
    with torch.device("cuda"):
        attn = m.Qwen3NextAttention(hf, layer_idx=3)
        rotary = m.Qwen3NextRotaryEmbedding(config=hf)
    return seeded(attn), rotary


def tang_weights(attn, cfg):
    w = {"wq": attn.q_proj.weight, "wk": attn.k_proj.weight,
         "wv": attn.v_proj.weight, "wo": attn.o_proj.weight,
         "q_norm": attn.q_norm.weight, "k_norm": attn.k_norm.weight}
    out = []
    for name, shape in qn.attention_weight_shapes(cfg).items():
        t = w[name].detach().contiguous()
        if tuple(t.shape) != shape:
            raise ValueError(f"{name}: the module holds {tuple(t.shape)}, "
                             f"tang takes {shape}")
        out.append(t)
    return out


def reference(cfg, x, W, jitter=None):
    """float64 [T, D]: the layer's math (qwen3_next.gated_attention's
    docstring), one head at a time. With `jitter` (a torch.Generator),
    each value tang rounds to bf16 (the projections, the rotated queries
    and keys, the probabilities, the gated output) is moved by a random
    fraction in [-1, 1] of bf16's unit roundoff: `sensitivity`."""
    u = harness.UNIT_ROUNDOFF["bf16"]

    def jit(t):
        if jitter is None:
            return t
        return t * (1 + u * (2 * torch.rand(t.shape, generator=jitter,
                                            device=t.device,
                                            dtype=torch.float64) - 1))
    wq, wk, wv, wo, qn_w, kn_w = [w.double() for w in W]
    T, H, Hk, Dh, rot = (x.shape[0], cfg.heads, cfg.kv_heads, cfg.head_dim,
                         cfg.rotary_dim)
    x = x.double()
    qg = jit(x @ wq.T).view(T, H, 2 * Dh)
    q, gate = qg[..., :Dh], qg[..., Dh:]
    k = jit(x @ wk.T).view(T, Hk, Dh)
    v = jit(x @ wv.T).view(T, Hk, Dh)

    def norm(y, w):
        return y * torch.rsqrt((y * y).mean(-1, keepdim=True) + cfg.eps) \
            * (1 + w)
    q, k = norm(q, qn_w), norm(k, kn_w)
    inv = cfg.rope_theta ** (-torch.arange(0, rot, 2, device=x.device,
                                           dtype=torch.float64) / rot)
    ang = torch.arange(T, device=x.device, dtype=torch.float64)[:, None] * inv
    ang = torch.cat([ang, ang], -1)[:, None, :]

    def rope(y):
        r, p = y[..., :rot], y[..., rot:]
        half = torch.cat([-r[..., rot // 2:], r[..., :rot // 2]], -1)
        return torch.cat([r * ang.cos() + half * ang.sin(), p], -1)
    q, k = jit(rope(q)), jit(rope(k))
    group = H // Hk
    o = torch.empty(T, H, Dh, dtype=torch.float64, device=x.device)
    causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
    for h in range(H):
        s = (q[:, h] @ k[:, h // group].T) / math.sqrt(Dh)
        s = s.masked_fill(~causal, float("-inf"))
        o[:, h] = jit(torch.softmax(s, -1)) @ v[:, h // group]
        del s
    o = jit(o * torch.sigmoid(gate))
    return o.reshape(T, H * Dh) @ wo.T


def sensitivity(cfg, x, W, ref, trials=2, seed=1):
    """The largest change of each output element over `trials` draws of
    `reference` with its bf16 roundings jittered: the bound of an element
    follows from the magnitudes its sums see (an early row attends to few
    keys: its values are a few v rows, far above the output's rms), not
    from rms(ref) alone. check_tensor adds
    harness.SENSITIVITY_FACTOR times it (as bench_delta's)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    worst = torch.zeros_like(ref)
    for _ in range(trials):
        torch.maximum(worst, (reference(cfg, x, W, gen) - ref).abs(),
                      out=worst)
    return worst


def flops(cfg, T):
    D, H, Hk, Dh = cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim
    proj = 2 * T * D * (2 * H * Dh + 2 * Hk * Dh + H * Dh)
    return proj + 2 * 2 * H * Dh * T * (T + 1) // 2


def run_case(args, report, path, deadline, cfg, attn, rotary, W, bundle, T):
    name = f"gated-attention-t{T}"
    harness.start_case(report, name, path)
    res = harness.case_result(name)
    res.update(tokens=T, flops=flops(cfg, T))
    gen = torch.Generator(device="cuda").manual_seed(T)
    x = torch.randn(T, cfg.hidden, device="cuda", generator=gen).bfloat16()
    y = torch.empty(T, cfg.hidden, device="cuda")

    def tang_run():
        bundle.run("gated_attention", x, *W, outputs=[y])
        return y
    t0 = time.monotonic()
    ref = reference(cfg, x, W)
    sens = sensitivity(cfg, x, W, ref)
    res["reference_s"] = round(time.monotonic() - t0, 1)
    first, same = harness.poisoned_runs(torch, [y], tang_run)
    # bf16 roundings on tang's path: the projections, q, k (normed and
    # rotated), the probabilities (the second product's operand), the
    # gated output; the longest reduction the causal softmax's (T) or the
    # output product's (H * Dh).
    red = max(T, cfg.heads * cfg.head_dim)
    tol = harness.Tolerance("bf16", reduction=red, roundings=7)
    res["checks"].append(harness.check_tensor(first[0], ref, tol, "y",
                                              sensitivity=sens))
    if not harness.judge_checks(res, same) or args.sanitize:
        harness.set_case(report, harness.sanitized(res) if res["status"] ==
                         "ok" else res, path)
        return
    x3 = x.view(1, T, cfg.hidden)
    pos = torch.arange(T, device="cuda")[None]
    cos_sin = rotary(x3, pos)

    def module(fn):
        def call():
            out = fn(x3, cos_sin, None)
            return (out[0] if isinstance(out, tuple) else out).view(
                T, cfg.hidden)
        return call
    contenders = [("tang", tang_run), ("transformers_sdpa", module(attn))]
    if deadline.passed(args.compile_reserve_s):
        res["peer_status"] = {"transformers_sdpa_compile": "skipped: budget"}
    else:
        t0 = time.monotonic()
        compiled = torch.compile(attn)
        try:
            module(compiled)()
            contenders.append(("transformers_sdpa_compile", module(compiled)))
        except Exception as e:
            res.setdefault("peer_errors", {})["transformers_sdpa_compile"] \
                = harness.short(e)
        res["compile_s"] = round(time.monotonic() - t0, 1)
    ptol = harness.Tolerance("bf16", reduction=red, roundings=12)
    timed = harness.check_and_time(
        torch, res, contenders, ref, ptol, harness.rounds_of(args, 5),
        harness.target_ms_of(args), deadline.monotonic(), sensitivity=sens)
    res["contenders"] = {p: {"ms": t["ms"],
                             "tflops": res["flops"] / t["ms"] / 1e9}
                         for p, t in timed.items() if t.get("ms")}
    harness.set_case(report, res, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compile-reserve-s", type=float, default=90,
                    help="skip the torch.compile peer when less than this "
                    "is left before --deadline")
    harness.add_common_args(ap, default_rounds=7)
    args = ap.parse_args()
    deadline = harness.Deadline(args.deadline)
    t_start = time.monotonic()
    out_dir = Path(args.out) if args.out else harness.out_dir("bench-out")
    listing_path = ROOT / "gpu-work" / "gated_attention" / "bundles.json"
    if not listing_path.exists():
        print("no gated attention bundles: run "
              "bench/prepare_gated_attention.py here and carry "
              "gpu-work/gated_attention", file=sys.stderr)
        return 2
    listing = json.loads(listing_path.read_text())
    hf = hf_config()
    cfg = qn.attention_config_from(hf)
    shape = {k: (v.name if k == "dtype" else v) for k, v in
             asdict(cfg).items()}
    if shape != listing["config"]:
        print(f"the bundles are of {listing['config']}, transformers' "
              f"Qwen3NextConfig() is {shape}: run "
              "bench/prepare_gated_attention.py again", file=sys.stderr)
        return 2
    report = harness.new_report("gated_attention", torch, settings={
        "rounds": harness.rounds_of(args, 5), "quick": args.quick,
        "target_ms": harness.target_ms_of(args), "config": shape,
        "shape": "Qwen3-Next gated attention (transformers "
        "Qwen3NextConfig()): bf16 weights and tokens, one causal sequence, "
        "f32 output"})
    path = out_dir / "gated_attention.json"
    bundles = sorted(listing["bundles"].values(), key=lambda b: b["tokens"])
    harness.prelist(report, [f"gated-attention-t{b['tokens']}"
                             for b in bundles])
    harness.write_report(report, path)
    attn, rotary = hf_layer(hf)
    W = tang_weights(attn, cfg)
    for b in bundles:
        if deadline.passed(20):
            break
        bundle = tang.cuda.Bundle(ROOT / b["dir"] / "bundle")
        run_case(args, report, path, deadline, cfg, attn, rotary, W, bundle,
                 b["tokens"])
        torch.cuda.empty_cache()
    harness.finish_report(report, t_start)
    harness.write_report(report, path)
    for c in report["cases"]:
        print(f"{c['case']:22s} {c['status']:10s} tang {c.get('tang_ms')} "
              f"best {c.get('best_peer')} {c.get('peers')} ratio "
              f"{c.get('ratio')} "
              f"{c.get('peer_errors', '')} {c.get('note', '')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
