"""Decode attention on the GPU at the Qwen3-8B shapes (bundles compiled
here by bench/prepare_decode.py): one query per sequence and head (32
heads over 8 key/value heads of dimension 128), attending over the first
`context` positions of bf16 key/value caches, against PyTorch's SDPA
backends on the same caches (bf16 query, grouped heads by enable_gqa), in
one process.

* Correctness: every element of tang's output (and each peer's) against a
  float64 reference on the GPU, NaN-poisoned and sentinel-poisoned runs
  giving the same bits.
* Speed: each in a CUDA graph, interleaved rounds; also the key/value
  cache bytes read per second (GB/s) and their share of the copy rate.

Also decode attention over sequences of different lengths (the
--varlen-batches bundles: tang.nn.decode_attention, lengths from a tensor,
seeded in [longest / 8, longest]) against SDPA with a boolean key mask per
sequence over the longest length (and flash_attn_with_kvcache with
cache_seqlens where installed); NaN in every cache position past a length
must not change tang's output.

Writes decode.json (the common schema of bench/harness.py) into --out.
Run on the GPU machine:  python3 bench/bench_decode.py --out DIR
For a profiler, --profile BATCH CONTEXT runs that bundle (of the first of
--tags, default tang) three times:
  ncu --section SpeedOfLight --section WarpStateStats -k regex:k0$ \
      -c 1 -s 1 python3 bench/bench_decode.py --profile 16 4096
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402
import tang.cuda  # noqa: E402
from bench_memory_bound import copy_rate  # noqa: E402

HEADS, KV_HEADS, HEAD_DIM = 32, 8, 128
CONTEXTS = (1024, 4096, 8192)
# Checked (not timed) with the first context's case: one key, part of a
# tile, part of a block's run.
ODD_CONTEXTS = (1, 17, 1001, 4099)


def reference(q, kc, vc, context):
    """float64 [B, H * Dh]: softmax(q k / sqrt(Dh)) v over the first
    `context` positions, the scale as the program's f32 constant."""
    B = q.shape[0]
    g = HEADS // KV_HEADS
    k = kc[:, :, :context].double().repeat_interleave(g, dim=1)
    v = vc[:, :, :context].double().repeat_interleave(g, dim=1)
    scale = float(torch.tensor(1.0 / math.sqrt(HEAD_DIM),
                               dtype=torch.float32))
    s = torch.einsum("bhd,bhcd->bhc", q.double(), k) * scale
    return torch.einsum("bhc,bhcd->bhd", torch.softmax(s, -1), v).reshape(
        B, HEADS * HEAD_DIM)


def peers(q, kc, vc, context):
    """[(name, fn)]: SDPA backends on a bf16 query and the caches' first
    `context` positions (views, no copy); each returns [B, H * Dh]."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    B = q.shape[0]
    qb = q.to(torch.bfloat16).unsqueeze(2)
    k, v = kc[:, :, :context], vc[:, :, :context]
    out = []
    for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION,
               SDPBackend.EFFICIENT_ATTENTION):
        def fn(be=be):
            with sdpa_kernel(be):
                return F.scaled_dot_product_attention(
                    qb, k, v, enable_gqa=True).reshape(B, HEADS * HEAD_DIM)
        out.append((f"sdpa_{be.name.lower()}", fn))
    try:
        from flash_attn import flash_attn_with_kvcache
    except ImportError:
        return out
    # FlashAttention's decode kernel, on caches in its own layout [B, C,
    # Hk, Dh] (copied once, outside the timing).
    kt, vt = (t.transpose(1, 2).contiguous() for t in (k, v))
    qt = qb.transpose(1, 2)
    out.append(("flash_attn_kvcache", lambda: flash_attn_with_kvcache(
        qt, kt, vt).reshape(B, HEADS * HEAD_DIM)))
    return out


def case_name(tag, batch, context):
    return (f"decode-attn-b{batch}-ctx{context}"
            + ("" if tag == "tang" else f"-{tag}"))


def run_case(args, report, path, deadline, bundle, tag, batch, capacity,
             context, copy_gbs):
    name = case_name(tag, batch, context)
    harness.start_case(report, name, path)
    res = harness.case_result(name)
    kv_bytes = 2 * batch * KV_HEADS * context * HEAD_DIM * 2
    res.update(batch=batch, context=context, kv_bytes=kv_bytes,
               flops=4 * batch * HEADS * context * HEAD_DIM)
    gen = torch.Generator(device="cuda").manual_seed(batch * 100003 + context)
    q = torch.randn(batch, HEADS, HEAD_DIM, device="cuda", generator=gen)
    shape = (batch, KV_HEADS, capacity, HEAD_DIM)
    kc = torch.randn(shape, device="cuda", generator=gen).to(torch.bfloat16)
    vc = torch.randn(shape, device="cuda", generator=gen).to(torch.bfloat16)
    o = torch.empty(batch, HEADS * HEAD_DIM, device="cuda")

    def tang_run():
        bundle.run("decode_attention", q, kc, vc, outputs=[o],
                   sizes={3: context - 1})
    ref = reference(q, kc, vc, context)
    first, same = harness.poisoned_runs(torch, [o], tang_run)
    tol = harness.Tolerance("f32", reduction=max(context, HEAD_DIM),
                            roundings=1)
    res["checks"].append(harness.check_tensor(first[0], ref, tol, "tang"))
    # Contexts that end inside a tile of keys and a block's run, the
    # positions past them NaN (read, they would poison the output).
    for odd in (ODD_CONTEXTS if context == CONTEXTS[0] else ()):
        kn, vn = kc.clone(), vc.clone()
        kn[:, :, odd:] = float("nan")
        vn[:, :, odd:] = float("nan")
        bundle.run("decode_attention", q, kn, vn, outputs=[o],
                   sizes={3: odd - 1})
        res["checks"].append(harness.check_tensor(
            o.clone(), reference(q, kc, vc, odd),
            harness.Tolerance("f32", reduction=max(odd, HEAD_DIM),
                              roundings=1), f"tang ctx{odd} (NaN past it)"))
        del kn, vn
    if not harness.judge_checks(res, same) or args.sanitize:
        harness.set_case(report, harness.sanitized(res) if res["status"] ==
                         "ok" else res, path)
        return
    time_contenders(args, res, deadline,
                    [("tang", tang_run)] + peers(q, kc, vc, context), ref,
                    context, kv_bytes, copy_gbs)
    harness.set_case(report, res, path)


def time_contenders(args, res, deadline, contenders, ref, keys, kv_bytes,
                    copy_gbs):
    """Checks each peer of `contenders` ([(name, fn)], tang's first)
    against `ref` (a peer is timed only when right: bf16 query and output,
    over `keys` keys; one that refuses the shapes is reported), times them
    all in a CUDA graph where they take one, interleaved, and records the
    timing and each one's cache bytes per second in `res`."""
    ptol = harness.Tolerance("bf16", reduction=max(keys, HEAD_DIM),
                            roundings=3)
    timed = harness.check_and_time(
        torch, res, contenders, ref, ptol, harness.rounds_of(args, 5),
        harness.target_ms_of(args), deadline.monotonic())
    res["contenders"] = {
        pname: {"ms": t["ms"], "gbs": kv_bytes / t["ms"] / 1e6,
                "share_of_copy": kv_bytes / t["ms"] / 1e6 / copy_gbs}
        for pname, t in timed.items() if t.get("ms")}


# Sequences of different lengths (tang.nn.decode_attention, the
# prepare_decode.py --varlen-batches bundles): the longest of a batch.
VARLEN_CONTEXTS = (4096, 8192)


def varlen_lengths(batch, longest):
    """Seeded lengths in [longest / 8, longest], the first the longest."""
    gen = torch.Generator().manual_seed(batch * 7919 + longest)
    lengths = torch.randint(longest // 8, longest + 1, (batch,),
                            generator=gen, dtype=torch.int32)
    lengths[0] = longest
    return lengths


def varlen_reference(q, kc, vc, lengths):
    """float64 [B, H, Dh]: each sequence over its own first lengths[b]
    positions."""
    return torch.stack([
        reference(q[b:b + 1], kc[b:b + 1], vc[b:b + 1], int(n)).reshape(
            HEADS, HEAD_DIM) for b, n in enumerate(lengths.tolist())])


def varlen_peers(q, kc, vc, lengths):
    """[(name, fn)]: SDPA backends over the batch's longest length with a
    boolean key mask per sequence ([B, 1, 1, longest]), bf16 query; each
    returns [B, H, Dh]. (Backends that take no mask or no grouped heads
    refuse, and are reported.)"""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    longest = int(lengths.max())
    qb = q.to(torch.bfloat16).unsqueeze(2)
    k, v = kc[:, :, :longest], vc[:, :, :longest]
    mask = (torch.arange(longest, device="cuda")[None, :]
            < lengths.cuda()[:, None].long())[:, None, None, :]
    out = []
    for be in (SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
               SDPBackend.FLASH_ATTENTION, SDPBackend.MATH):
        def fn(be=be):
            with sdpa_kernel(be):
                return F.scaled_dot_product_attention(
                    qb, k, v, attn_mask=mask, enable_gqa=True).squeeze(2)
        out.append((f"sdpa_masked_{be.name.lower()}", fn))
    try:
        from flash_attn import flash_attn_with_kvcache
    except ImportError:
        return out
    kt, vt = (t.transpose(1, 2).contiguous() for t in (k, v))
    qt = qb.transpose(1, 2)
    seqlens = lengths.cuda()
    out.append(("flash_attn_kvcache", lambda: flash_attn_with_kvcache(
        qt, kt, vt, cache_seqlens=seqlens).squeeze(1)))
    return out


def varlen_case_name(tag, batch, longest):
    return (f"decode-attn-varlen-b{batch}-max{longest}"
            + ("" if tag == "tang" else f"-{tag}"))


def run_varlen_case(args, report, path, deadline, bundle, tag, batch,
                    capacity, longest, copy_gbs):
    name = varlen_case_name(tag, batch, longest)
    harness.start_case(report, name, path)
    res = harness.case_result(name)
    lengths = varlen_lengths(batch, longest)
    total = int(lengths.sum())
    kv_bytes = 2 * KV_HEADS * total * HEAD_DIM * 2
    res.update(batch=batch, context=longest, lengths=lengths.tolist(),
               kv_bytes=kv_bytes, flops=4 * HEADS * total * HEAD_DIM)
    gen = torch.Generator(device="cuda").manual_seed(batch * 100019 + longest)
    q = torch.randn(batch, HEADS, HEAD_DIM, device="cuda", generator=gen)
    shape = (batch, KV_HEADS, capacity, HEAD_DIM)
    kc = torch.randn(shape, device="cuda", generator=gen).to(torch.bfloat16)
    vc = torch.randn(shape, device="cuda", generator=gen).to(torch.bfloat16)
    lens = lengths.cuda()
    o = torch.empty(batch, HEADS, HEAD_DIM, device="cuda")

    def tang_run():
        bundle.run("varlen_decode_attention", q, kc, vc, lens, outputs=[o])
    ref = varlen_reference(q, kc, vc, lengths)
    first, same = harness.poisoned_runs(torch, [o], tang_run)
    tol = harness.Tolerance("f32", reduction=max(longest, HEAD_DIM),
                            roundings=1)
    res["checks"].append(harness.check_tensor(first[0], ref, tol, "tang"))
    # NaN in every position past a sequence's length: the kernel must not
    # read them (its value mask makes the program's result finite).
    kn, vn = kc.clone(), vc.clone()
    for b, n in enumerate(lengths.tolist()):
        kn[b, :, n:] = float("nan")
        vn[b, :, n:] = float("nan")
    bundle.run("varlen_decode_attention", q, kn, vn, lens, outputs=[o])
    res["checks"].append(harness.check_tensor(
        o.clone(), ref, tol, "tang (NaN past every length)"))
    del kn, vn
    if not harness.judge_checks(res, same) or args.sanitize:
        harness.set_case(report, harness.sanitized(res) if res["status"] ==
                         "ok" else res, path)
        return
    time_contenders(args, res, deadline,
                    [("tang", tang_run)] + varlen_peers(q, kc, vc, lengths),
                    ref, longest, kv_bytes, copy_gbs)
    harness.set_case(report, res, path)


def profile(batch, context, tag="tang", varlen=False):
    listing = json.loads((ROOT / "gpu-work" / "decode" / "bundles.json")
                         .read_text())
    b = listing["bundles"][f"{tag}-{'varlen-' if varlen else ''}b{batch}"]
    bundle = tang.cuda.Bundle(ROOT / b["dir"] / "bundle")
    shape = (batch, KV_HEADS, listing["capacity"], HEAD_DIM)
    q = torch.randn(batch, HEADS, HEAD_DIM, device="cuda")
    kc = torch.randn(shape, device="cuda").to(torch.bfloat16)
    vc = torch.randn(shape, device="cuda").to(torch.bfloat16)
    lens = varlen_lengths(batch, context).cuda()
    o = torch.empty(batch, HEADS * HEAD_DIM, device="cuda")
    for _ in range(3):
        if varlen:
            bundle.run("varlen_decode_attention", q, kc, vc, lens,
                       outputs=[o.view(batch, HEADS, HEAD_DIM)])
        else:
            bundle.run("decode_attention", q, kc, vc, outputs=[o],
                       sizes={3: context - 1})
    torch.cuda.synchronize()
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tags", nargs="*", default=None,
                    help="the bundles' tags to time (default: every one)")
    ap.add_argument("--profile", nargs=2, type=int, metavar=("BATCH", "CTX"),
                    help="only run that bundle three times (for ncu or "
                    "compute-sanitizer), of the first of --tags (default "
                    "tang)")
    ap.add_argument("--varlen", action="store_true",
                    help="with --profile: the sequences-of-different-"
                    "lengths bundle of that batch, CTX the longest")
    harness.add_common_args(ap, default_rounds=7)
    args = ap.parse_args()
    if args.profile:
        return profile(*args.profile, *(args.tags or ["tang"])[:1],
                       varlen=args.varlen)
    deadline = harness.Deadline(args.deadline)
    t_start = time.monotonic()
    out_dir = Path(args.out) if args.out else harness.out_dir("bench-out")
    listing_path = ROOT / "gpu-work" / "decode" / "bundles.json"
    if not listing_path.exists():
        print("no decode bundles: run bench/prepare_decode.py here and "
              "carry gpu-work/decode", file=sys.stderr)
        return 2
    listing = json.loads(listing_path.read_text())
    bundles = {n: b for n, b in listing["bundles"].items()
               if args.tags is None or b["tag"] in args.tags}
    report = harness.new_report("decode", torch, settings={
        "rounds": harness.rounds_of(args, 5), "quick": args.quick,
        "target_ms": harness.target_ms_of(args), "capacity":
        listing["capacity"], "shape": "Qwen3-8B: 32 query heads, 8 "
        "key/value heads, head dim 128, bf16 caches, f32 query and output"})
    path = out_dir / "decode.json"
    tags = sorted({b["tag"] for b in bundles.values()})
    names = []
    for n, b in bundles.items():
        if b.get("varlen"):
            names += [varlen_case_name(b["tag"], b["batch"], c)
                      for c in VARLEN_CONTEXTS]
        else:
            names += [case_name(b["tag"], b["batch"], c) for c in CONTEXTS]
    harness.prelist(report, names)
    harness.write_report(report, path)
    # The device-to-device copy rate (bytes read + written), in this
    # process: the caches' GB/s are shares of it.
    report["copy"] = copy_rate(torch, 10 if args.quick else 30)
    for n, b in sorted(bundles.items(),
                       key=lambda kv: (bool(kv[1].get("varlen")),
                                       kv[1]["batch"])):
        bundle = tang.cuda.Bundle(ROOT / b["dir"] / "bundle")
        varlen = bool(b.get("varlen"))
        for c in VARLEN_CONTEXTS if varlen else CONTEXTS:
            if deadline.passed(20):
                break
            (run_varlen_case if varlen else run_case)(
                args, report, path, deadline, bundle, b["tag"], b["batch"],
                listing["capacity"], c, report["copy"]["gbps"])
            torch.cuda.empty_cache()
    report["settings"]["tags"] = tags
    harness.finish_report(report, t_start)
    harness.write_report(report, path)
    for c in report["cases"]:
        print(f"{c['case']:26s} {c['status']:10s} tang {c.get('tang_ms')} "
              f"best {c.get('best_peer')} {c.get('peers')} ratio "
              f"{c.get('ratio')} {c.get('note', '')}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
