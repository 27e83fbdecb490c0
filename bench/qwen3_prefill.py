"""Qwen3-8B prefill on the GPU: the tang bundle (tang.models.qwen3.prefill,
compiled here by bench/prepare_qwen3.py --prefill) against PyTorch on the
same random bf16 weights, in one process.

* Correctness: the prompt's next token and every key/value cache element
  the prefill writes (every layer, every position), tang against a
  PyTorch reference computing in float32 from the same bf16 weights and
  rounding where the tang graph rounds (the products' activations and
  the queries to bf16, the caches' bf16 storage).
* Speed: the prefill in a CUDA graph, ms per prompt and tokens/s at each
  prompt length prepared (512 and 2048), against the same PyTorch prefill
  (bf16 F.linear, causal SDPA) in a CUDA graph, eager kernels and with its
  layer and head under torch.compile (one compilation serves the 36
  layers), in interleaved rounds; also TFLOP/s of the products (2 x
  parameters x tokens plus the causal attention).

Writes qwen3_prefill.json (the common schema of bench/harness.py) into
--out. Run on the GPU machine:
    python3 bench/qwen3_prefill.py --out DIR
"""

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402
import qwen3_decode as q  # noqa: E402
from qwen3_decode import CFG, DEV, BF16, rms, rope, say  # noqa: E402

qwen3 = q.qwen3


def prefill_layer(x, pos, kc, vc, lw, rnd):
    """One layer of a prefill of T tokens: x [T, D] at positions pos [T];
    the layer's caches kc/vc [1, Hk, capacity, Dh] get rows 0..T-1.
    ``rnd``: what the products' activations and the queries go through
    (bf16 rounding in the float32 reference, as the tang graph rounds;
    nothing in the bf16 peer)."""
    H, Hk, Dh, Fn = CFG.heads, CFG.kv_heads, CFG.head_dim, CFG.ffn
    n1, wqkv, qn, kn, wo, n2, wgu, wd = lw
    T = x.shape[0]
    qkv = F.linear(rnd(rms(x, n1)), wqkv)
    qh = qkv[:, :H * Dh].view(T, H, Dh)
    k = qkv[:, H * Dh:(H + Hk) * Dh].view(T, Hk, Dh)
    v = qkv[:, (H + Hk) * Dh:].view(T, Hk, Dh)
    qh = rope(rms(qh, qn), pos).to(x.dtype)
    k = rope(rms(k, kn), pos)
    kc[0, :, :T] = k.transpose(0, 1).to(kc.dtype)
    vc[0, :, :T] = v.transpose(0, 1).to(vc.dtype)
    a = F.scaled_dot_product_attention(
        rnd(qh).transpose(0, 1)[None], kc[:, :, :T].to(x.dtype),
        vc[:, :, :T].to(x.dtype), is_causal=True, enable_gqa=True)
    x = x + F.linear(rnd(a[0].transpose(0, 1).reshape(T, H * Dh)), wo)
    gu = F.linear(rnd(rms(x, n2)), wgu)
    return x + F.linear(rnd(F.silu(gu[:, :Fn]) * gu[:, Fn:]), wd)


def reference_prefill(W, ids, kc, vc):
    """The float32 reference (rounding as the tang graph does): the next
    token and the logits of the last position; kc/vc [layers, 1, Hk,
    capacity, Dh] get rows 0..T-1."""
    f32 = torch.float32
    x = W["embed"][ids.long()].to(f32)
    pos = torch.arange(x.shape[0], device=DEV)
    for i in range(CFG.layers):
        lw = tuple(W[n][i].to(f32) for n in q.LAYER_WEIGHTS)
        x = prefill_layer(x, pos, kc[i], vc[i], lw, q.to_bf16_and_back)
    return q.torch_head(x[-1:], W["norm"].to(f32), W["lm_head"].to(f32))


class TorchPrefill:
    """The PyTorch peer: the bf16 prefill a layer at a time
    (`compile_mode`: the layer and the head under torch.compile)."""

    def __init__(self, W, tokens, capacity, compile_mode=None):
        self.layers = q.layer_weights(W)
        self.W = W
        shape = qwen3.cache_shape(CFG, 1, capacity)[1:]
        self.kc = [torch.zeros(shape, device=DEV, dtype=BF16)
                   for _ in range(CFG.layers)]
        self.vc = [torch.zeros_like(k) for k in self.kc]
        g = torch.Generator(device=DEV).manual_seed(1)
        self.ids = torch.randint(0, CFG.vocab, (tokens,), generator=g,
                                 device=DEV)
        self.pos = torch.arange(tokens, device=DEV)
        self.layer = q.maybe_compiled(prefill_layer, compile_mode)
        self.head = q.maybe_compiled(q.torch_head, compile_mode)

    def run(self):
        x = self.W["embed"][self.ids]
        for i, lw in enumerate(self.layers):
            x = self.layer(x, self.pos, self.kc[i], self.vc[i], lw,
                           _identity)
        return self.head(x[-1:], self.W["norm"], self.W["lm_head"])[0]


def _identity(x):
    return x


def flops(tokens):
    """Multiply-adds x 2 of the products: the weights (all but the
    embedding, the LM head on the last row only) and causal attention."""
    per_token = sum(
        (s[1] * s[2]) for n, s in qwen3.weight_shapes(CFG).items()
        if n in ("wqkv", "wo", "wgu", "wd")) * CFG.layers
    attn = 2 * CFG.layers * CFG.heads * CFG.head_dim * tokens * (tokens + 1)
    return 2 * per_token * tokens + attn + 2 * CFG.vocab * CFG.hidden


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compile-mode", default="max-autotune-no-cudagraphs",
                    help="torch.compile mode of the compiled peer ('none': "
                         "no such peer)")
    ap.add_argument("--compile-reserve-s", type=float, default=240,
                    help="skip the compiled peer of a prompt length when "
                         "less than this is left before --deadline")
    ap.add_argument("--speed-only", action="store_true")
    harness.add_common_args(ap, default_rounds=5)
    args = ap.parse_args()
    deadline = harness.Deadline(args.deadline)
    t_start = time.monotonic()
    torch._dynamo.config.cache_size_limit = 64
    out_dir = Path(args.out) if args.out else harness.out_dir("bench-out")
    bundles, capacity = q.load_bundles()
    lengths = sorted(b["tokens"] for n, b in (bundles or {}).items()
                     if n.startswith("prefill"))
    if not lengths:
        print("no Qwen3 prefill bundle: run bench/prepare_qwen3.py "
              "--prefill 512 2048 and carry gpu-work", file=sys.stderr)
        return 2
    report = harness.new_report("qwen3_prefill", torch, settings={
        "rounds": harness.rounds_of(args, 5), "quick": args.quick,
        "target_ms": harness.target_ms_of(args),
        "model": "Qwen3-8B shapes, random bf16 weights", "batch": 1,
        "capacity": capacity, "compile_mode": args.compile_mode,
        "compile_s": {f"prefill{n}": bundles[f"prefill{n}"]["compile_s"]
                      for n in lengths}})
    path = out_dir / "qwen3_prefill.json"
    names = []
    for n in lengths:
        names += [f"prefill-{n}-check"] + \
            ([] if args.sanitize else [f"prefill-{n}"])
    harness.prelist(report, names)
    harness.write_report(report, path)
    W = q.make_weights()
    for n in lengths:
        run_length(args, report, path, deadline, W, n, capacity,
                   ROOT / bundles[f"prefill{n}"]["dir"] / "bundle")
        torch.cuda.empty_cache()
    harness.finish_report(report, t_start)
    harness.write_report(report, path)
    for c in report["cases"]:
        print(f"{c['case']:28s} {c['status']:10s} {c.get('note', '')}")
    return 0


def run_length(args, report, path, deadline, W, n, capacity, bundle_dir):
    """The check and the timing of the prefill of n tokens."""
    bundle = q.tang.cuda.Bundle(bundle_dir)
    eager = TorchPrefill(W, n, capacity)
    kc = torch.zeros(qwen3.cache_shape(CFG, 1, capacity), dtype=BF16,
                     device=DEV)
    vc = torch.zeros_like(kc)
    nxt = torch.zeros(1, dtype=torch.int32, device=DEV)
    ids = eager.ids.to(torch.int32)
    args_ = (ids, *W.values(), kc, vc)

    def tang_run(check_indices=True):
        # The captured run cannot read the ids back: the check run has
        # checked these ids.
        bundle.run("prefill", *args_, outputs=[nxt, kc, vc],
                   check_indices=check_indices)
    if not args.speed_only:
        harness.start_case(report, f"prefill-{n}-check", path)
        harness.set_case(report, check(W, n, capacity, tang_run, ids, nxt,
                                       kc, vc), path)
    if not args.sanitize:
        speed(args, report, path, deadline, W, n, capacity, tang_run, eager)


def check(W, n, capacity, tang_run, ids, nxt, kc, vc):
    kc.zero_()
    vc.zero_()
    tang_run()
    kref = torch.zeros_like(kc)
    vref = torch.zeros_like(vc)
    want, logits = reference_prefill(W, ids, kref, vref)
    torch.cuda.synchronize()
    res = {"token": int(nxt[0]), "reference_token": int(want[0])}
    top2 = logits[0].topk(2).values
    res["top2_margin"] = float(top2[0] - top2[1])
    rel = 0.0
    for name, a, b in (("kcache", kc, kref), ("vcache", vc, vref)):
        a = a[:, :, :, :n].float()
        b = b[:, :, :, :n].float()
        err = (a - b).abs()
        res[f"{name}_max_abs_err"] = float(err.max())
        res[f"{name}_max_abs"] = float(b.abs().max())
        # How many elements differ by more than one bf16 rounding of
        # their magnitude (flips at a rounding boundary are expected).
        res[f"{name}_beyond_ulp"] = int(
            (err > b.abs() * 2.0 ** -7 + 1e-30).sum())
        rel = max(rel, res[f"{name}_max_abs_err"] / res[f"{name}_max_abs"])
    res["cache_nan"] = bool(torch.isnan(kc).any() or torch.isnan(vc).any()
                            or torch.isinf(kc).any() or torch.isinf(vc).any())
    # The activations are rounded to bf16 before every product on both
    # sides; a rounding that falls the other way in one (sums in another
    # order) moves later values by about an ulp: relative to the largest
    # cache element, a few bf16 ulps.
    tol = 8 * 2.0 ** -8
    same = res["token"] == res["reference_token"]
    ok = same and not res["cache_nan"] and rel <= tol
    say(f"prefill {n}: token {res['token']} vs {res['reference_token']}, "
        f"caches within {rel:.2e}")
    return harness.case_result(
        f"prefill-{n}-check", status="ok" if ok else "incorrect",
        max_err=rel / tol,
        note=(f"next token {'equals' if same else 'differs from'} "
              f"the float32 reference's; the {n} positions' caches of "
              f"every layer within {rel:.2e} (relative to the largest) of "
              f"it"), **res)


def speed(args, report, path, deadline, W, n, capacity, tang_run, eager):
    name = f"prefill-{n}"
    if deadline.passed(30):
        harness.set_case(report, harness.case_result(
            name, status="skipped: budget"), path)
        return
    harness.start_case(report, name, path)
    tang_fn, tang_graphed, why_tang = harness.try_graphed(
        torch, lambda: tang_run(check_indices=False))
    contenders = [("tang", tang_fn),
                  ("torch_graph", harness.try_graphed(torch, eager.run)[0])]
    compiled, why_not = q.compiled_peer(
        args, deadline, f"prefill {n}",
        lambda mode: TorchPrefill(W, n, capacity, mode))
    if compiled:
        contenders.append(("torch_compile_graph", compiled[1]))
    timed = harness.interleaved_rounds(
        torch, contenders, rounds=harness.rounds_of(args, 5),
        target_ms=harness.target_ms_of(args), deadline=deadline.monotonic())
    summary = harness.compare("tang", timed)
    fl = flops(n)
    rates = {c: {"ms": o["ms"], "tok_s": n * 1e3 / o["ms"],
                 "tflops": fl / o["ms"] / 1e9}
             for c, o in timed.items() if "ms" in o}
    note = ", ".join(f"{c} {v['ms']:.1f} ms ({v['tflops']:.0f} TFLOP/s)"
                     for c, v in rates.items())
    if why_not:
        note += f"; torch.compile peer: {why_not}"
    if not tang_graphed:
        note += f"; tang not in a CUDA graph: {why_tang}"
    res = harness.case_result(name, tokens=n, flops=fl, contenders=rates,
                              timed=timed, note=note, **summary)
    harness.set_case(report, res, path)
    say(name, note)


if __name__ == "__main__":
    sys.exit(main())
