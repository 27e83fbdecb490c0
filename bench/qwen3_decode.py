"""Qwen3-8B decode on the GPU: the tang bundle (tang.models.qwen3, compiled
here by bench/prepare_qwen3.py) against PyTorch on the same random bf16
weights, in one process.

* Correctness: prompt tokens fed through the decode step one position at a
  time, then free-running greedy decoding (64 steps at batch 1, 16 for
  every sequence of a larger batch), for tang and for a PyTorch reference
  computing in float32 from the same bf16 weights (the math tang does);
  per step the tokens, and after the prompt the key/value caches of every
  layer (every element) are compared.
* Speed: one decode step captured in a CUDA graph (the position lives in
  the bundle's sizes buffer, so one graph serves every position), ms/step
  and tok/s at contexts 32 and 4096 for every batch size prepared,
  against the same PyTorch step (bf16, F.linear / SDPA) in a CUDA graph,
  eager kernels and with its layer and head under torch.compile
  (max-autotune-no-cudagraphs, the anchors' strongest peer), in
  interleaved rounds, each as a share of the bandwidth floor: (weights +
  KV bytes of every sequence) / the copy rate measured in this run.

The bundle comes from bench/prepare_qwen3.py (gpu-work/qwen3). Writes
qwen3.json (the common schema of bench/harness.py) into --out.

Run on the GPU machine:  python3 bench/qwen3_decode.py --out DIR
"""

import argparse
import ctypes
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
import tang.cuda  # noqa: E402
from tang.models import qwen3  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402

CFG = qwen3.QWEN3_8B
DEV = "cuda"
BF16 = torch.bfloat16


def make_weights(seed=0):
    g = torch.Generator(device=DEV).manual_seed(seed)
    out = {}
    for name, shape in qwen3.weight_shapes(CFG).items():
        if "norm" in name:
            w = 1.0 + 0.1 * torch.randn(shape, generator=g, device=DEV)
        else:
            w = 0.02 * torch.randn(shape, generator=g, device=DEV)
        out[name] = w.to(BF16).contiguous()
    return out


# ---------------------------------------------------------------------------
# PyTorch: a float32 reference and a bf16 peer, same weights and layout
# ---------------------------------------------------------------------------

#: A layer's weights, in the order torch_layer takes them.
LAYER_WEIGHTS = ("attn_norm", "wqkv", "q_norm", "k_norm", "wo", "mlp_norm",
                 "wgu", "wd")


def rms(x, w, eps=CFG.eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, pos):
    """x [R, heads, Dh] rotated at positions pos [R]."""
    dh = CFG.head_dim
    inv = CFG.rope_theta ** (-torch.arange(0, dh, 2, device=DEV,
                                           dtype=torch.float32) / dh)
    ang = pos.float()[:, None] * inv[None]
    cos = torch.cat([ang.cos()] * 2, -1)[:, None]
    sin = torch.cat([ang.sin()] * 2, -1)[:, None]
    rot = torch.cat([-x[..., dh // 2:], x[..., :dh // 2]], -1)
    return x * cos + rot * sin


def _same(x):
    return x


def torch_layer(x, pos, kc, vc, n, mask, lw, rnd=_same):
    """One layer of a decode step: x [B, D] at position pos (a 1-element
    tensor), the layer's caches kc/vc [B, Hk, capacity, Dh] updated in
    place; attention over n = pos + 1 positions, either the first int(n)
    (mask None: the float32 reference) or all under mask (the bf16 peer:
    no host sync, capturable). lw: the layer's weights (LAYER_WEIGHTS) in
    the arithmetic type; x's type is the arithmetic type. ``rnd``: what the
    products' activations go through (bf16 rounding in the float32
    reference of a bundle whose products take bf16 operands)."""
    H, Hk, Dh, Fn = CFG.heads, CFG.kv_heads, CFG.head_dim, CFG.ffn
    n1, wqkv, qn, kn, wo, n2, wgu, wd = lw
    B = x.shape[0]
    qkv = F.linear(rnd(rms(x, n1)), wqkv)
    q = qkv[:, :H * Dh].view(B, H, Dh)
    k = qkv[:, H * Dh:(H + Hk) * Dh].view(B, Hk, Dh)
    v = qkv[:, (H + Hk) * Dh:].view(B, Hk, Dh)
    q = rope(rms(q, qn), pos.expand(B)).to(x.dtype)
    k = rope(rms(k, kn), pos.expand(B)).to(x.dtype)
    kc.index_copy_(2, pos, k.to(kc.dtype)[:, :, None])
    vc.index_copy_(2, pos, v.to(vc.dtype)[:, :, None])
    if mask is None:
        a = F.scaled_dot_product_attention(
            q[:, :, None], kc[:, :, :int(n)].to(x.dtype),
            vc[:, :, :int(n)].to(x.dtype), enable_gqa=True)
    else:
        a = F.scaled_dot_product_attention(q[:, :, None], kc, vc,
                                           attn_mask=mask, enable_gqa=True)
    x = x + F.linear(rnd(a.reshape(B, H * Dh)), wo)
    gu = F.linear(rnd(rms(x, n2)), wgu)
    return x + F.linear(rnd(F.silu(gu[:, :Fn]) * gu[:, Fn:]), wd)


def torch_head(x, norm, lm_head, rnd=_same):
    logits = F.linear(rnd(rms(x, norm)), lm_head)
    return logits.argmax(-1).to(torch.int32), logits


def to_bf16_and_back(x):
    return x.to(BF16).to(x.dtype)


def reference_step(W, tok, pos, kc, vc, rnd=_same):
    """The float32 reference: one decode step of batch B at position pos
    (a 1-element tensor) from the bf16 weights, the bf16 caches [layers,
    B, Hk, capacity, Dh] updated in place; ``rnd`` as torch_layer's.
    (next tokens, logits, the last layer's output)."""
    f32 = torch.float32
    x = W["embed"][tok].to(f32)
    for i in range(CFG.layers):
        lw = tuple(W[name][i].to(f32) for name in LAYER_WEIGHTS)
        x = torch_layer(x, pos, kc[i], vc[i], pos + 1, None, lw, rnd)
    return torch_head(x, W["norm"].to(f32), W["lm_head"].to(f32),
                      rnd) + (x,)


def layer_weights(W):
    """Per layer, its weights in LAYER_WEIGHTS order (views of the stacked
    tensors)."""
    return [tuple(W[name][i] for name in LAYER_WEIGHTS)
            for i in range(CFG.layers)]


def maybe_compiled(fn, mode):
    """fn under torch.compile(mode) (static shapes), or fn itself."""
    return torch.compile(fn, mode=mode, dynamic=False) if mode else fn


class TorchDecoder:
    """The PyTorch peer: the same step in bf16 (F.linear, SDPA with a
    length mask), a layer at a time, over caches of its own (random
    contents); `compile_mode` compiles the layer and the head with
    torch.compile (one compilation serves the 36 layers: compiling the
    unrolled 36-layer step under max-autotune took more than 8 minutes on
    the H200)."""

    def __init__(self, W, batch, capacity, compile_mode=None):
        self.layers = layer_weights(W)
        self.embed, self.norm, self.lm_head = (W["embed"], W["norm"],
                                               W["lm_head"])
        shape = qwen3.cache_shape(CFG, batch, capacity)[1:]
        self.kc = [torch.randn(shape, device=DEV, dtype=BF16)
                   for _ in range(CFG.layers)]
        self.vc = [torch.randn_like(k) for k in self.kc]
        self.tok = torch.full((batch,), 5, dtype=torch.int32, device=DEV)
        self.pos = torch.zeros(1, dtype=torch.long, device=DEV)
        self.ar = torch.arange(capacity, device=DEV)
        self.layer = maybe_compiled(torch_layer, compile_mode)
        self.head = maybe_compiled(torch_head, compile_mode)

    def run(self):
        x = self.embed[self.tok]
        n = self.pos + 1
        mask = (self.ar < n)[None, None, None]
        for i, lw in enumerate(self.layers):
            x = self.layer(x, self.pos, self.kc[i], self.vc[i], n, mask, lw)
        return self.head(x, self.norm, self.lm_head)[0]

    def free(self):
        del self.kc, self.vc, self.layers


# ---------------------------------------------------------------------------
# tang: the bundle, one CUDA graph for every position
# ---------------------------------------------------------------------------

class TangDecoder:
    """The decode bundle bound to fixed buffers, captured once in a CUDA
    graph at the largest position; a step writes the position into the
    bundle's sizes buffer, then replays."""

    def __init__(self, bundle_dir, W, batch, capacity, operands=None):
        self.bundle = tang.cuda.Bundle(bundle_dir)
        self.operands = operands   # the products' activation type, or None
        self.W = list(W.values())
        self.batch, self.capacity = batch, capacity
        shape = qwen3.cache_shape(CFG, batch, capacity)
        self.kc = torch.zeros(shape, dtype=BF16, device=DEV)
        self.vc = torch.zeros_like(self.kc)
        self.tokens = torch.zeros(batch, dtype=torch.int32, device=DEV)
        self.next = torch.zeros(batch, dtype=torch.int32, device=DEV)
        self.pos_arg = len(self.W) + 3   # tokens, weights, kc, vc, pos
        self.graph = None

    def _args(self):
        return (self.tokens, *self.W, self.kc, self.vc)

    def run(self, pos):
        """Eager: every launch from Python."""
        self.bundle.run("decode_step", *self._args(),
                        outputs=[self.next, self.kc, self.vc],
                        sizes={self.pos_arg: pos})
        return self.next

    def capture(self):
        top = self.capacity - 1
        fn, key = self.bundle._resolve("decode_step", self._args(),
                                       {self.pos_arg: top})
        self.run(top)                      # prepared, temporaries at top
        torch.cuda.synchronize()
        prepared = self.bundle._prepared[key]
        # The sizes buffer: the temporary with initial contents.
        self.sizes_ptr = next(
            ptr for ptr, t in zip(prepared.temps, fn.temporaries)
            if t.init is not None)
        self.host_pos = torch.zeros(1, dtype=torch.int32).pin_memory()
        self.dev_pos = torch.zeros(1, dtype=torch.int32, device=DEV)
        self.graph = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            self.graph.capture_begin()
            # The position: copied from a device tensor into the sizes
            # buffer inside the graph.
            cuda = ctypes.CDLL("libcuda.so.1")
            r = cuda.cuMemcpyDtoDAsync_v2(
                ctypes.c_uint64(self.sizes_ptr),
                ctypes.c_uint64(self.dev_pos.data_ptr()),
                ctypes.c_size_t(4), ctypes.c_void_p(s.cuda_stream))
            if r:
                raise RuntimeError(f"cuMemcpyDtoDAsync: error {r}")
            # Replays feed back the step's own argmax, always in the
            # vocabulary; nothing can be read back during a capture.
            self.bundle.run("decode_step", *self._args(),
                            outputs=[self.next, self.kc, self.vc],
                            sizes={self.pos_arg: top}, check_indices=False)
            self.graph.capture_end()
        torch.cuda.current_stream().wait_stream(s)

    def step(self, pos):
        if not 0 <= pos < self.capacity:
            raise ValueError(f"position {pos} outside the cache "
                             f"(capacity {self.capacity})")
        self.dev_pos.fill_(pos)
        self.graph.replay()
        return self.next


def copy_rate():
    x = torch.empty(1 << 30, dtype=torch.uint8, device=DEV)
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        y.copy_(x)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    del x, y
    return 2 * (1 << 30) / statistics.median(times)


T0 = time.time()


def say(*a):
    print(f"[{time.time() - T0:.1f} s]", *a, flush=True)


def load_bundles():
    """gpu-work/qwen3/bundles.json (bench/prepare_qwen3.py), or the
    listing of an older layout (build-qwen3/bundles.json)."""
    for path in (ROOT / "gpu-work" / "qwen3" / "bundles.json",
                 ROOT / "build-qwen3" / "bundles.json"):
        if path.exists():
            listing = json.loads(path.read_text())
            return listing.get("bundles", listing), listing.get(
                "capacity", 4224)
    return None, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compile-mode", default="max-autotune-no-cudagraphs",
                    help="torch.compile mode of the compiled peer (then "
                         "captured in a CUDA graph; 'none': no such peer)")
    ap.add_argument("--compile-reserve-s", type=float, default=300,
                    help="skip the compiled peer of a batch size when less "
                         "than this is left before --deadline (default 300: "
                         "compiling a layer and the head under max-autotune "
                         "takes minutes)")
    ap.add_argument("--batches", type=int, nargs="*", default=None,
                    help="batch sizes (default: every bundle prepared)")
    ap.add_argument("--speed-only", action="store_true")
    harness.add_common_args(ap, default_rounds=5)
    args = ap.parse_args()
    deadline = harness.Deadline(args.deadline)
    t_start = time.monotonic()
    torch._dynamo.config.cache_size_limit = 64
    out_dir = Path(args.out) if args.out else harness.out_dir("bench-out")
    bundles, capacity = load_bundles()
    if not bundles or "decode1" not in bundles:
        print("no Qwen3 bundle: run bench/prepare_qwen3.py and carry "
              "gpu-work", file=sys.stderr)
        return 2
    batches = args.batches or sorted(
        b["batch"] for n, b in bundles.items()
        if n.startswith("decode") and "variant" not in b
        and not b.get("varlen"))
    missing = [b for b in batches if f"decode{b}" not in bundles]
    if missing:
        print(f"no bundle for batch {missing}: run bench/prepare_qwen3.py "
              f"--batches {' '.join(map(str, batches))}", file=sys.stderr)
        return 2
    report = harness.new_report("qwen3", torch, settings={
        "rounds": harness.rounds_of(args, 5), "quick": args.quick,
        "target_ms": harness.target_ms_of(args),
        "model": "Qwen3-8B shapes, random bf16 weights", "batches": batches,
        "capacity": capacity, "compile_mode": args.compile_mode,
        "compile_s": {n: b["compile_s"] for n, b in bundles.items()},
        "compile_cpu_s": {n: b.get("compile_cpu_s")
                          for n, b in bundles.items()}})
    path = out_dir / "qwen3.json"
    names = []
    for b in batches:
        # Under --sanitize only the checks run (the timed cases run the
        # same kernels).
        names += [check_case(b)] + ([] if args.sanitize else
                                    [f"decode-b{b}-ctx{c}" for c in CONTEXTS])
    harness.prelist(report, names)
    harness.write_report(report, path)
    W = make_weights()
    report["copy_GBps"] = copy_rate() / 1e9
    say("copy", report["copy_GBps"])
    for b in batches:
        dec = TangDecoder(ROOT / bundles[f"decode{b}"]["dir"] / "bundle", W,
                          b, capacity, bundles[f"decode{b}"].get("operands"))
        dec.capture()
        say(f"batch {b}: captured")
        if not args.speed_only:
            harness.start_case(report, check_case(b), path)
            harness.set_case(report, check(W, dec, capacity), path)
        # Variants of the step (bench/prepare_qwen3.py --variant): timed
        # beside it as tang_NAME, never as a peer.
        variants = {}
        for n, v in bundles.items():
            if v.get("variant") and v["batch"] == b:
                variants[v["variant"]] = TangDecoder(
                    ROOT / v["dir"] / "bundle", W, b, capacity,
                    v.get("operands"))
                variants[v["variant"]].capture()
                if not args.speed_only:
                    vcase = f"{check_case(b)}-{v['variant']}"
                    harness.start_case(report, vcase, path)
                    harness.set_case(report, dict(
                        check(W, variants[v["variant"]], capacity),
                        case=vcase), path)
        if not args.sanitize:
            speed(args, report, path, deadline, W, dec, capacity, variants)
        del dec, variants
        torch.cuda.empty_cache()
    harness.finish_report(report, t_start)
    harness.write_report(report, path)
    for c in report["cases"]:
        print(f"{c['case']:28s} {c['status']:10s} {c.get('note', '')}")
    return 0


CONTEXTS = (32, 4096)
#: A reference step whose top two logits are closer than this is a near
#: tie: the caches are stored in bf16, and a rounding that falls the other
#: way (f32 sums in another order put a value on the other side of a bf16
#: boundary: the caches differ from the reference's by up to ~6e-3
#: relative) moves the logits by about this much.
NEAR_TIE = 1e-3
#: Prompt tokens fed one position at a time, then greedy steps (batch 1:
#: the issue's 64; more sequences: 16 each).
PROMPT = [151643, 785, 6722, 315, 9625, 374, 12095, 13]


def check_case(batch):
    return f"decode-b{batch}-greedy{greedy_steps(batch)}"


def greedy_steps(batch):
    return 64 if batch == 1 else 16


#: With bf16 product operands (batch 16), activations are rounded to bf16
#: four times a layer: a rounding that falls the other way moves an
#: element by a bf16 ulp, and that compounds over 36 layers (the prefill's
#: tolerance, 8 ulps, holds the caches). The logits then differ by up to
#: that relative error of each product term: a differing token is within
#: precision when the reference prefers its own by at most
#: BF16_OPERAND_REL * sum_k |W_lm[n, k] x_k| over both tokens n.
BF16_OPERAND_REL = 8 * 2.0 ** -8


def check(W, dec, capacity):
    """The prompt through the decode step, then greedy steps, tang against
    the float32 reference, every sequence of the batch (sequence b's
    prompt: the prompt's ids shifted by 1000 b); the caches after the
    prompt (every element). The case result: ok when every greedy token
    equals the reference's and the caches are finite and within bf16
    rounding of the reference. A bundle with bf16 product operands is
    checked with teacher forcing (the reference's token fed to both, the
    issue's "bf16: report agreement and logit error"): each token equals
    the reference's or is within BF16_OPERAND_REL of its logit."""
    B = dec.batch
    forced = dec.operands is not None
    regrets = []   # (step, sequence, regret, bound) where tokens differ
    res = {}
    prompts = torch.tensor([[(t + 1000 * b) % CFG.vocab for t in PROMPT]
                            for b in range(B)], dtype=torch.int32,
                           device=DEV)
    kref = torch.zeros(qwen3.cache_shape(CFG, B, capacity), dtype=BF16,
                       device=DEV)
    vref = torch.zeros_like(kref)
    dec.kc.zero_()
    dec.vc.zero_()
    tang_tokens, ref_tokens, margins = [], [], []
    tok_t = prompts[:, 0].clone()
    tok_r = tok_t.clone()
    for pos in range(len(PROMPT) + greedy_steps(B)):
        if pos < len(PROMPT):
            tok_t = tok_r = prompts[:, pos]
        # Each side runs its own history (forced: the reference's).
        dec.tokens.copy_(tok_r if forced else tok_t)
        nt = dec.step(pos).clone()
        p = torch.tensor([pos], device=DEV)
        nr, logits, x = reference_step(W, tok_r, p, kref, vref,
                                       to_bf16_and_back if forced
                                       else _same)
        if pos >= len(PROMPT) - 1:
            xf = rms(x, W["norm"].float()).abs()
            for b in (nt != nr).nonzero().flatten().tolist():
                a, c = int(nr[b]), int(nt[b])
                terms = (W["lm_head"][[a, c]].float().abs() * xf[b]).sum()
                regrets.append((pos - len(PROMPT) + 1, b,
                                float(logits[b, a] - logits[b, c]),
                                float(BF16_OPERAND_REL * terms)))
        top2 = logits.topk(2, dim=-1).values
        margins.append((top2[:, 0] - top2[:, 1]).tolist())
        if pos == len(PROMPT) - 1:
            # Every cache element written so far (positions 0..pos, every
            # layer and sequence): tang vs the reference, bf16 storage.
            for name, a, b in (("kcache", dec.kc, kref),
                               ("vcache", dec.vc, vref)):
                a = a[:, :, :, :pos + 1].float()
                b = b[:, :, :, :pos + 1].float()
                res[f"{name}_max_abs_err"] = float((a - b).abs().max())
                res[f"{name}_max_abs"] = float(b.abs().max())
            res["cache_nan"] = bool(torch.isnan(dec.kc).any() or
                                    torch.isnan(dec.vc).any())
        if pos >= len(PROMPT) - 1:
            tang_tokens.append(nt.tolist())
            ref_tokens.append(nr.tolist())
        tok_t, tok_r = nt, nr
    # Per sequence: how many greedy tokens agree before the first
    # difference, and whether that difference is a near tie of the
    # reference (its top two logits closer than NEAR_TIE: which one f32
    # arithmetic in another order picks is chance; past it the two runs
    # continue different sequences).
    agree = [next((k for k, (a, b) in enumerate(zip(tang_tokens,
                                                    ref_tokens))
                   if a[s] != b[s]), len(tang_tokens)) for s in range(B)]
    greedy_margins = margins[len(PROMPT) - 1:]
    ties = [s for s in range(B) if agree[s] < len(tang_tokens) and
            greedy_margins[agree[s]][s] < NEAR_TIE]
    res["greedy"] = {"tang": tang_tokens, "reference": ref_tokens,
                     "prefix_agreement": agree, "steps": len(tang_tokens),
                     "near_ties": {str(s): {"step": agree[s],
                                            "margin": greedy_margins[
                                                agree[s]][s]}
                                   for s in ties},
                     "min_top2_margin": min(min(m) for m in margins)}
    total = B * len(tang_tokens)
    # Free-running: the tokens before each sequence's first difference;
    # teacher-forced: every step's.
    equal = total - len(regrets) if forced else sum(agree)
    say(f"batch {B} greedy:", equal, "of", total, "tokens equal;",
        len(ties), "sequences part at a near tie")
    # bf16 storage of values computed in f32 on both sides: a relative
    # error of a few bf16 ulps (2^-8 each) per element.
    rel = max(res["kcache_max_abs_err"] / res["kcache_max_abs"],
              res["vcache_max_abs_err"] / res["vcache_max_abs"])
    tol = BF16_OPERAND_REL if forced else 4 * 2.0 ** -8
    parted = sum(a < len(tang_tokens) for a in agree)
    res["bad_input"] = bad = bad_input(dec, capacity)
    tokens_ok = parted == len(ties)
    if forced:
        res["greedy"]["teacher_forced"] = True
        res["greedy"]["differing"] = [
            {"step": k, "sequence": b, "regret": g, "bound": lim}
            for k, b, g, lim in regrets]
        tokens_ok = all(g <= lim for _, _, g, lim in regrets)
        worst = max((g / lim for _, _, g, lim in regrets), default=0.0)
        tie_note = (f" under teacher forcing; {len(regrets)} differing, "
                    f"each within the bf16-operand logit bound (largest "
                    f"regret {worst:.2f} of it)" if tokens_ok else
                    f" under teacher forcing; a differing token beyond the "
                    f"bf16-operand logit bound ({worst:.2f} of it)")
    elif ties:
        tie_note = (f" ({len(ties)} sequence{'s' if len(ties) > 1 else ''} "
                    f"parted at a near tie of the reference: top-2 logit "
                    f"margin below {NEAR_TIE})")
    else:
        tie_note = ""
    ok = tokens_ok and not res["cache_nan"] and rel <= tol and bad["refused"]
    return harness.case_result(
        check_case(B), status="ok" if ok else "incorrect", max_err=rel / tol,
        note=(f"{equal}/{total} greedy tokens ({B} sequence"
              f"{'s' if B > 1 else ''}) equal the float32 PyTorch "
              f"reference{tie_note}; caches after the prompt within "
              f"{rel:.2e} (relative) of it; a token id outside the "
              f"vocabulary and a position at the capacity "
              f"{'refused, nothing written' if bad['refused'] else 'NOT refused'}"),
        **res)


def bad_input(dec, capacity):
    """The runtime's refusals (eager runs, outside the graph): a token id
    one past the vocabulary (the index check) and a position at the cache
    capacity (the size requirement), each before anything runs: the next
    free cache position stays zero and the next tokens unchanged."""
    pos = len(PROMPT) + greedy_steps(dec.batch)
    before = dec.next.clone()
    out = {}
    for what, token, at, error in (("token", CFG.vocab, pos, IndexError),
                                   ("position", 1, capacity, ValueError)):
        dec.tokens.fill_(token)
        try:
            dec.run(at)
            torch.cuda.synchronize()
            out[what] = "accepted"
        except error as e:
            out[what] = str(e)
    written = bool(dec.kc[:, :, :, pos].any() or dec.vc[:, :, :, pos].any()
                   or not torch.equal(dec.next, before))
    out["written"] = written
    out["refused"] = (not written and all("nothing ran" in out[w]
                                          for w in ("token", "position")))
    say(f"batch {dec.batch} bad input:", out)
    return out


def compiled_peer(args, deadline, label, make):
    """The strongest peer a user would pick: `make(args.compile_mode)`, a
    PyTorch peer (with run()) whose layer and head are under torch.compile,
    warmed up and captured in a CUDA graph (the anchors' recipe). Returns
    ((peer, graphed run), None), or (None, why not) when it is skipped or
    fails."""
    if args.compile_mode == "none":
        return None, "compile mode none"
    if deadline.left() < args.compile_reserve_s:
        return None, f"skipped: {deadline.left():.0f} s left"
    try:
        t0 = time.time()
        peer = make(args.compile_mode)
        for _ in range(2):
            peer.run()
        torch.cuda.synchronize()
        say(f"{label}: torch.compile {args.compile_mode} "
            f"{time.time() - t0:.0f} s")
        fn, graphed, why = harness.try_graphed(torch, peer.run)
        return (peer, fn), None if graphed else why
    except Exception as e:  # a peer that fails is reported, not fatal
        return None, harness.short(e)


def speed(args, report, path, deadline, W, dec, capacity, variants=None):
    """ms/step at each context, tang's graph against the peers', in
    interleaved rounds; tok/s (tokens of every sequence) and the share of
    the bandwidth floor ((weights + KV bytes of every sequence) over the
    copy rate measured here). `variants`: name -> another TangDecoder of
    the step, timed in the same rounds as tang_NAME (not a peer)."""
    variants = variants or {}
    B = dec.batch
    bw = report["copy_GBps"] * 1e9
    wbytes = qwen3.weight_bytes(CFG)
    # The hand-written bf16 step in a CUDA graph (the anchors' second row).
    eager = TorchDecoder(W, B, capacity)
    eager_fn = harness.try_graphed(torch, eager.run)[0]
    compiled, why_not = compiled_peer(
        args, deadline, f"batch {B}",
        lambda mode: TorchDecoder(W, B, capacity, mode))
    say(f"batch {B}: peers ready", why_not or "")
    if why_not:
        report.setdefault("notes", {})[f"b{B}"] = (
            f"the torch.compile peer was not measured at batch {B} "
            f"({why_not})")
    for d in (dec, *variants.values()):
        d.kc.normal_()
        d.vc.normal_()
    rounds = harness.rounds_of(args, 5)
    for ctx in CONTEXTS:
        name = f"decode-b{B}-ctx{ctx}"
        if deadline.passed(30):
            harness.set_case(report, harness.case_result(
                name, status="skipped: budget"), path)
            continue
        harness.start_case(report, name, path)
        pos = ctx - 1
        kv = B * 2 * CFG.layers * CFG.kv_heads * ctx * CFG.head_dim * 2
        floor_ms = (wbytes + kv) / bw * 1e3
        peers = [("torch_graph", eager, eager_fn)]
        if compiled:
            peers.append(("torch_compile_graph", *compiled))
        contenders = [("tang", lambda k, pos=pos: dec.step(pos))]
        contenders += [(f"tang_{vname}", lambda k, pos=pos, d=d: d.step(pos))
                       for vname, d in variants.items()]
        for pname, peer, fn in peers:
            def peer_step(k, pos=pos, peer=peer, fn=fn):
                peer.pos.fill_(pos)
                fn()
            contenders.append((pname, peer_step))
        timed = harness.interleaved_rounds(
            torch, contenders, rounds=rounds,
            target_ms=harness.target_ms_of(args),
            deadline=deadline.monotonic())
        summary = harness.compare(
            "tang", timed, excluded=[f"tang_{v}" for v in variants])
        shares = {n: {"ms": o["ms"], "tok_s": B * 1e3 / o["ms"],
                      "share_of_floor": floor_ms / o["ms"]}
                  for n, o in timed.items() if "ms" in o}
        note = ", ".join(f"{n} {v['tok_s']:.0f} tok/s "
                         f"({v['share_of_floor']:.2f} of floor)"
                         for n, v in shares.items())
        if why_not:
            note += f"; torch.compile peer: {why_not}"
        res = harness.case_result(
            name, batch=B, context=ctx, floor_ms=floor_ms,
            floor_tok_s=B * 1e3 / floor_ms, kv_bytes=kv, weight_bytes=wbytes,
            contenders=shares, timed=timed, note=note, **summary)
        harness.set_case(report, res, path)
        say(name, note)
    eager.free()
    if compiled:
        compiled[0].free()


if __name__ == "__main__":
    sys.exit(main())
