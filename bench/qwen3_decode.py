"""Qwen3-8B decode on the GPU: the tang bundle (tang.models.qwen3, compiled
here by bench/prepare_qwen3.py) against PyTorch on the same random bf16
weights, in one process.

* Correctness: prompt tokens fed through the decode step one position at a
  time, then free-running greedy decoding, for tang and for a PyTorch
  reference computing in float32 from the same bf16 weights (the math tang
  does); per step the tokens, and after the prompt the key/value caches of
  every layer (every element) are compared.
* Speed: one decode step captured in a CUDA graph (the position lives in
  the bundle's sizes buffer, so one graph serves every position), ms/step
  and tok/s at contexts 32 and 4096, against the same PyTorch step (bf16,
  F.linear / SDPA) in a CUDA graph, eager kernels and under torch.compile
  (max-autotune-no-cudagraphs, the anchors' strongest peer), in
  interleaved rounds, each as a share of the bandwidth floor: (weights +
  KV bytes) / the copy rate measured in this run.

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

def rms(x, w, eps=CFG.eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, pos):
    dh = CFG.head_dim
    inv = CFG.rope_theta ** (-torch.arange(0, dh, 2, device=DEV,
                                           dtype=torch.float32) / dh)
    ang = pos.float()[:, None] * inv[None]
    cos = torch.cat([ang.cos()] * 2, -1)[:, None]
    sin = torch.cat([ang.sin()] * 2, -1)[:, None]
    rot = torch.cat([-x[..., dh // 2:], x[..., :dh // 2]], -1)
    return x * cos + rot * sin


def torch_step(W, tok, pos, kc, vc, dtype):
    """One decode step of batch B at position pos (a 1-element tensor);
    math in `dtype` (float32: the reference; bf16: the peer)."""
    H, Hk, Dh, Fn = CFG.heads, CFG.kv_heads, CFG.head_dim, CFG.ffn
    B = tok.shape[0]

    def w(name, i=None):
        t = W[name] if i is None else W[name][i]
        return t if t.dtype == dtype else t.to(dtype)
    x = W["embed"][tok].to(dtype)
    n = pos + 1
    for i in range(CFG.layers):
        qkv = F.linear(rms(x, w("attn_norm", i)), w("wqkv", i))
        q = qkv[:, :H * Dh].view(B, H, Dh)
        k = qkv[:, H * Dh:(H + Hk) * Dh].view(B, Hk, Dh)
        v = qkv[:, (H + Hk) * Dh:].view(B, Hk, Dh)
        q = rope(rms(q, w("q_norm", i)), pos.expand(B)).to(dtype)
        k = rope(rms(k, w("k_norm", i)), pos.expand(B)).to(dtype)
        kc[i].index_copy_(2, pos, k.to(kc.dtype)[:, :, None])
        vc[i].index_copy_(2, pos, v.to(vc.dtype)[:, :, None])
        if dtype == torch.float32:
            kk = kc[i][:, :, :int(n)].float()
            vv = vc[i][:, :, :int(n)].float()
            a = F.scaled_dot_product_attention(q[:, :, None], kk, vv,
                                               enable_gqa=True)
        else:
            mask = (torch.arange(kc.shape[3], device=DEV) < n)[None, None,
                                                              None]
            a = F.scaled_dot_product_attention(q[:, :, None], kc[i], vc[i],
                                               attn_mask=mask,
                                               enable_gqa=True)
        x = x + F.linear(a.reshape(B, H * Dh), w("wo", i))
        gu = F.linear(rms(x, w("mlp_norm", i)), w("wgu", i))
        x = x + F.linear(F.silu(gu[:, :Fn]) * gu[:, Fn:], w("wd", i))
    logits = F.linear(rms(x, w("norm")), w("lm_head"))
    return logits.argmax(-1).to(torch.int32), logits


# ---------------------------------------------------------------------------
# tang: the bundle, one CUDA graph for every position
# ---------------------------------------------------------------------------

class TangDecoder:
    """The decode bundle bound to fixed buffers, captured once in a CUDA
    graph at the largest position; a step writes the position into the
    bundle's sizes buffer, then replays."""

    def __init__(self, bundle_dir, W, batch, capacity):
        self.bundle = tang.cuda.Bundle(bundle_dir)
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
            self.bundle.run("decode_step", *self._args(),
                            outputs=[self.next, self.kc, self.vc],
                            sizes={self.pos_arg: top})
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
    ap.add_argument("--compile-reserve-s", type=float, default=900,
                    help="skip the compiled peer when less than this is "
                         "left before --deadline (default 900: torch.compile "
                         "max-autotune of the 36-layer step took more than "
                         "8 minutes on the H200, so run_all's share skips it; "
                         "run this suite alone, without --deadline, for it)")
    ap.add_argument("--speed-only", action="store_true")
    harness.add_common_args(ap, default_rounds=5)
    args = ap.parse_args()
    deadline = harness.Deadline(args.deadline)
    t_start = time.monotonic()
    out_dir = Path(args.out) if args.out else harness.out_dir("bench-out")
    bundles, capacity = load_bundles()
    if not bundles or "decode1" not in bundles:
        print("no Qwen3 bundle: run bench/prepare_qwen3.py and carry "
              "gpu-work", file=sys.stderr)
        return 2
    report = harness.new_report("qwen3", torch, settings={
        "rounds": harness.rounds_of(args, 5), "quick": args.quick,
        "target_ms": harness.target_ms_of(args),
        "model": "Qwen3-8B shapes, random bf16 weights", "batch": 1,
        "capacity": capacity, "compile_mode": args.compile_mode,
        "compile_s": bundles["decode1"]["compile_s"],
        "compile_cpu_s": bundles["decode1"].get("compile_cpu_s")})
    path = out_dir / "qwen3.json"
    names = [CHECK_CASE] + [f"decode-b1-ctx{c}" for c in CONTEXTS]
    harness.prelist(report, names)
    harness.write_report(report, path)
    W = make_weights()
    dec = TangDecoder(ROOT / bundles["decode1"]["dir"] / "bundle", W, 1,
                      capacity)
    dec.capture()
    say("captured")
    if not args.speed_only:
        harness.start_case(report, CHECK_CASE, path)
        harness.set_case(report, check(W, dec, capacity), path)
    speed(args, report, path, deadline, W, dec, capacity)
    harness.finish_report(report, t_start)
    harness.write_report(report, path)
    for c in report["cases"]:
        print(f"{c['case']:28s} {c['status']:10s} {c.get('note', '')}")
    return 0


#: The correctness case: the prompt, then 64 greedy tokens.
CHECK_CASE = "decode-b1-greedy64"
CONTEXTS = (32, 4096)


def check(W, dec, capacity):
    """Prompt through decode, then 64 greedy steps, tang vs the float32
    reference; the caches after the prompt (every element). The case
    result: ok when every greedy token equals the reference's and the
    caches are finite and within bf16 rounding of the reference."""
    res = {}
    prompt = [151643, 785, 6722, 315, 9625, 374, 12095, 13]
    kref = torch.zeros(qwen3.cache_shape(CFG, 1, capacity), dtype=BF16,
                       device=DEV)
    vref = torch.zeros_like(kref)
    dec.kc.zero_()
    dec.vc.zero_()
    tang_tokens, ref_tokens, forced_agree, margins = [], [], 0, []
    tok_t = torch.tensor([prompt[0]], dtype=torch.int32, device=DEV)
    tok_r = tok_t.clone()
    steps = len(prompt) + 64
    for pos in range(steps):
        if pos < len(prompt):
            tok_t.fill_(prompt[pos])
            tok_r.fill_(prompt[pos])
        dec.tokens.copy_(tok_t)
        nt = dec.step(pos).clone()
        # Teacher-forced: the reference from tang's own history (its
        # caches) would need a second cache; the reference runs its own.
        p = torch.tensor([pos], device=DEV)
        nr, logits = torch_step(W, tok_r, p, kref, vref, torch.float32)
        top2 = logits[0].topk(2).values
        margins.append(float(top2[0] - top2[1]))
        if pos == len(prompt) - 1:
            # Every cache element written so far (positions 0..pos, every
            # layer): tang vs the reference, bf16 storage.
            a = dec.kc[:, :, :, :pos + 1].float()
            b = kref[:, :, :, :pos + 1].float()
            res["kcache_max_abs_err"] = float((a - b).abs().max())
            res["kcache_max_abs"] = float(b.abs().max())
            a = dec.vc[:, :, :, :pos + 1].float()
            b = vref[:, :, :, :pos + 1].float()
            res["vcache_max_abs_err"] = float((a - b).abs().max())
            res["vcache_max_abs"] = float(b.abs().max())
            res["cache_nan"] = bool(torch.isnan(dec.kc).any() or
                                    torch.isnan(dec.vc).any())
        if pos >= len(prompt) - 1:
            tang_tokens.append(int(nt[0]))
            ref_tokens.append(int(nr[0]))
            forced_agree += int(nt[0]) == int(nr[0])
        tok_t, tok_r = nt, nr
    agree = 0
    for a, b in zip(tang_tokens, ref_tokens):
        if a != b:
            break
        agree += 1
    res["greedy"] = {"tang": tang_tokens, "reference": ref_tokens,
                     "prefix_agreement": agree, "steps": len(tang_tokens),
                     "equal_positions": forced_agree,
                     "min_top2_margin": min(margins)}
    say("greedy:", agree, "of", len(tang_tokens), "tokens equal")
    # bf16 storage of values computed in f32 on both sides: a relative
    # error of a few bf16 ulps (2^-8 each) per element.
    rel = max(res["kcache_max_abs_err"] / res["kcache_max_abs"],
              res["vcache_max_abs_err"] / res["vcache_max_abs"])
    tol = 4 * 2.0 ** -8
    ok = (agree == len(tang_tokens) and not res["cache_nan"] and rel <= tol)
    return harness.case_result(
        CHECK_CASE, status="ok" if ok else "incorrect", max_err=rel / tol,
        note=(f"{agree}/{len(tang_tokens)} greedy tokens equal the float32 "
              f"PyTorch reference; caches after the prompt within "
              f"{rel:.2e} (relative) of it"), **res)


def compiled_peer(args, deadline, W, capacity):
    """The strongest peer a user would pick: the same PyTorch step under
    torch.compile (args.compile_mode), then captured in a CUDA graph (the
    anchors' recipe); None and why not when it is skipped or fails."""
    if args.compile_mode == "none":
        return None, "compile mode none"
    if deadline.left() < args.compile_reserve_s:
        return None, f"skipped: {deadline.left():.0f} s left"
    try:
        step = torch.compile(torch_step, mode=args.compile_mode)
        ck = torch.randn(qwen3.cache_shape(CFG, 1, capacity), device=DEV,
                         dtype=BF16)
        cv = torch.randn_like(ck)
        tok = torch.tensor([5], dtype=torch.int32, device=DEV)
        pos = torch.tensor([0], device=DEV)
        t0 = time.time()
        for _ in range(2):
            step(W, tok, pos, ck, cv, BF16)
        torch.cuda.synchronize()
        say("torch.compile", args.compile_mode, f"{time.time() - t0:.0f} s")
        fn, graphed, why = harness.try_graphed(
            torch, lambda: step(W, tok, pos, ck, cv, BF16))
        return (fn, pos, graphed), None if graphed else why
    except Exception as e:  # a peer that fails is reported, not fatal
        return None, harness.short(e)


def speed(args, report, path, deadline, W, dec, capacity):
    """ms/step at each context, tang's graph against the peers', in
    interleaved rounds; tok/s and the share of the bandwidth floor
    (weights + KV bytes over the copy rate measured here)."""
    bw = copy_rate()
    report["copy_GBps"] = bw / 1e9
    say("copy", bw / 1e9)
    wbytes = qwen3.weight_bytes(CFG)
    # The hand-written bf16 step in a CUDA graph (the anchors' second row).
    pk = torch.randn(qwen3.cache_shape(CFG, 1, capacity), device=DEV,
                     dtype=BF16)
    pv = torch.randn_like(pk)
    ptok = torch.tensor([5], dtype=torch.int32, device=DEV)
    ppos = torch.tensor([0], device=DEV)
    peer = harness.graphed(torch, lambda: torch_step(W, ptok, ppos, pk, pv,
                                                     BF16))
    compiled, why_not = compiled_peer(args, deadline, W, capacity)
    say("peers ready", why_not or "")
    if why_not:
        # Without it the table's best peer is not the strongest one.
        report["note"] = (
            f"the torch.compile peer was not measured in this run "
            f"({why_not}); ../shared/ANCHORS.md measured the same step "
            f"under torch.compile(max-autotune-no-cudagraphs) in a CUDA "
            f"graph on this H200 at 206 tok/s (context 32) and 192 tok/s "
            f"(4096), faster than tang here")
    dec.kc.normal_()
    dec.vc.normal_()
    rounds = harness.rounds_of(args, 5)
    for ctx in CONTEXTS:
        name = f"decode-b1-ctx{ctx}"
        if deadline.passed(30):
            harness.set_case(report, harness.case_result(
                name, status="skipped: budget"), path)
            continue
        harness.start_case(report, name, path)
        pos = ctx - 1
        kv = 2 * CFG.layers * CFG.kv_heads * ctx * CFG.head_dim * 2
        floor_ms = (wbytes + kv) / bw * 1e3

        def peer_step(k, pos=pos):
            ppos.fill_(pos)
            peer()
        contenders = [("tang", lambda k, pos=pos: dec.step(pos)),
                      ("torch_graph", peer_step)]
        if compiled:
            fn, cpos, _ = compiled

            def compiled_step(k, pos=pos, fn=fn, cpos=cpos):
                cpos.fill_(pos)
                fn()
            contenders.append(("torch_compile_graph", compiled_step))
        timed = harness.interleaved_rounds(
            torch, contenders, rounds=rounds,
            target_ms=harness.target_ms_of(args),
            deadline=deadline.monotonic())
        summary = harness.compare("tang", timed)
        shares = {n: {"ms": o["ms"], "tok_s": 1e3 / o["ms"],
                      "share_of_floor": floor_ms / o["ms"]}
                  for n, o in timed.items() if "ms" in o}
        note = ", ".join(f"{n} {v['tok_s']:.0f} tok/s "
                         f"({v['share_of_floor']:.2f} of floor)"
                         for n, v in shares.items())
        if why_not:
            note += f"; torch.compile peer: {why_not}"
        res = harness.case_result(
            name, floor_ms=floor_ms, floor_tok_s=1e3 / floor_ms,
            kv_bytes=kv, weight_bytes=wbytes, contenders=shares,
            timed=timed, note=note, **summary)
        harness.set_case(report, res, path)
        say(name, note)


if __name__ == "__main__":
    sys.exit(main())
