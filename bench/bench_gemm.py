#!/usr/bin/env python3
"""Checks and times tang's tensor-core GEMM kernels on the GPU, next to
cuBLAS (through PyTorch) in the same process.

For every gpu-work/gemm/<case>/meta.json (bench/prepare_gemm.py):

1. loads the bundle through python/tang (tang.cuda);
2. correctness: where the case has them, the saved inputs and the float64
   interpreter's output (ref/output_0.npy); always, fresh random inputs
   against a float64 product computed on the GPU. Outputs are poisoned with
   NaN first; rel. err ||out - ref|| / ||ref|| must be <= REL_TOL (bf16
   operands are exact in both references, so the error is the f32
   accumulation and the final rounding to bf16, 2^-9 relative: ~3e-3 in
   norm) and the result must be the same bits on a second run;
3. times tang and the peer (torch.matmul / F.linear + F.gelu, cuBLAS) with
   CUDA events, median of repeats after warm-up, peer timed between two tang
   measurements; reports TFLOP/s and peer_ms / tang_ms;
4. counts the tensor-core instructions in tang's SASS (cuobjdump).

Writes $OUT/gemm.md and $OUT/gemm.json; prints a table last.
Usage: python3 bench/bench_gemm.py [--cases NAME ...] [--reps N]
"""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
WORK = ROOT / "gpu-work" / "gemm"
REL_TOL = 1e-2

import harness  # noqa: E402


def dtype_of(torch, meta):
    """The case's storage type: bf16, or f32 for the tf32 cases."""
    return {"bf16": torch.bfloat16, "f32": torch.float32}[
        meta.get("dtype", "bf16")]


def with_tf32(torch, fn):
    """`fn` run with PyTorch's TF32 matmuls allowed (cuBLAS TF32)."""
    def run(*args):
        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return fn(*args)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old
    return run


def inputs_for(torch, meta, seed):
    """Random inputs; the block's weights scaled as in prepare_gemm.draw."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    out = []
    for s in meta["inputs"]:
        a = torch.randn(s, generator=g, device="cuda", dtype=torch.float32)
        if meta["kind"] == "block" and len(s) == 2:
            a /= s[0] ** 0.5
        elif meta["kind"] == "block" and len(s) == 1:
            a = 1 + 0.1 * a
        out.append(a.to(dtype_of(torch, meta)))
    return out


#: Attention references are computed on this many (batch, head) pairs only
#: (a float64 L x L score matrix per pair).
ATTN_REF_HEADS = 2


def block_forward(torch, F, ins, H, causal_mask=None):
    """The transformer block in PyTorch, in the dtype of `ins`."""
    x, wn1, Wqkv, Wo, wn2, W13, W2 = ins
    B, L, D = x.shape
    HD = D // H

    def rms(v, w):
        return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    xn = rms(x, wn1)
    q, k, v = (xn @ Wqkv).view(B, L, 3, H, HD).permute(2, 0, 3, 1, 4)
    scale = float(torch.tensor(1.0 / HD ** 0.5).to(torch.bfloat16))
    if x.dtype == torch.float64:
        s = (q @ k.transpose(-1, -2)) * scale
        mask = torch.ones(L, L, dtype=torch.bool, device=x.device).tril()
        o = torch.softmax(s.masked_fill(~mask, float("-inf")), -1) @ v
    else:
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           scale=scale)
    h = x + o.transpose(1, 2).reshape(B, L, D) @ Wo
    hn = rms(h, wn2)
    a, u = (hn @ W13).chunk(2, -1)
    return h + (F.silu(a) * u) @ W2


def block_forward_separate(torch, F, x, wn1, wqkv, Wo, wn2, wgu, W2, H):
    B, L, D = x.shape
    HD = D // H

    def rms(v, w):
        return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    xn = rms(x, wn1)
    q, k, v = ((xn @ w).view(B, L, H, HD).transpose(1, 2) for w in wqkv)
    scale = float(torch.tensor(1.0 / HD ** 0.5).to(torch.bfloat16))
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    h = x + o.transpose(1, 2).reshape(B, L, D) @ Wo
    hn = rms(h, wn2)
    return h + (F.silu(hn @ wgu[0]) * (hn @ wgu[1])) @ W2


def reference(torch, F, kind, ins, params=None):
    if kind == "block":
        return block_forward(torch, F, [ins[0][:1].double()]
                             + [t.double() for t in ins[1:]], params["H"])
    if kind == "attention":
        G = ins[0].shape[1] // ins[1].shape[1]
        q = ins[0][:1, :ATTN_REF_HEADS].double()
        k, v = [t.repeat_interleave(G, dim=1)[:1, :ATTN_REF_HEADS].double()
                for t in ins[1:]]
        D = q.shape[-1]
        # The program's scale is a bf16 constant.
        c = torch.tensor(1.0 / D ** 0.5).to(torch.bfloat16).double()
        s = (q @ k.transpose(-1, -2)) * c
        if params["causal"]:
            L = s.shape[-1]
            mask = torch.ones(L, L, dtype=torch.bool, device=s.device).tril()
            s = s.masked_fill(~mask, float("-inf"))
        return torch.softmax(s, -1) @ v
    d = [t.double() for t in ins]
    if kind == "matmul_tn":
        return d[0].T @ d[1]
    if kind in ("matmul", "bmm", "matmul_tf32"):
        return d[0] @ d[1]
    if kind == "matmul_nt_tf32":
        return d[0] @ d[1].T
    X, W, b = d
    y = X @ W.T + b
    return 0.5 * y * (1 + torch.tanh(0.7978845608028654 * (y + 0.044715 * y**3)))


def peers(torch, F, kind, params):
    """[(id, how, fn)]: the peers of `kind`."""
    if kind == "block":
        H = params["H"]
        split = {}

        def separate(*ins):
            # The same block with q, k, v, gate and up as separate
            # contiguous weights (copied once, outside the timing).
            x, wn1, Wqkv, Wo, wn2, W13, W2 = ins
            if not split:
                split["qkv"] = [w.contiguous() for w in Wqkv.chunk(3, 1)]
                split["gu"] = [w.contiguous() for w in W13.chunk(2, 1)]
            return block_forward_separate(torch, F, x, wn1, split["qkv"], Wo,
                                          wn2, split["gu"], W2, H)

        return [("torch_bf16_fused_weights",
                 "PyTorch bf16, concatenated qkv and gate/up weights (as "
                 "ANCHORS.md's module), matmuls on cuBLAS, SDPA causal, in a "
                 "CUDA graph",
                 lambda *ins: block_forward(torch, F, list(ins), H)),
                ("torch_bf16_separate",
                 "PyTorch bf16, separate q/k/v/gate/up weights, in a CUDA "
                 "graph", separate)]
    if kind == "attention":
        from torch.nn.attention import SDPBackend, sdpa_kernel
        causal = params["causal"]
        D = params["D"]
        scale = float(torch.tensor(1.0 / D ** 0.5).to(torch.bfloat16))
        out = []
        for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
            def fn(q, k, v, be=be):
                with sdpa_kernel(be):
                    return F.scaled_dot_product_attention(
                        q, k, v, is_causal=causal, scale=scale,
                        enable_gqa=q.shape[1] != k.shape[1])
            out.append((be.name.lower(), f"SDPA {be.name}", fn))
        return out
    if kind == "matmul_tn":
        return [("cublas", "torch.matmul(A.T, B) (cuBLAS, transposed A)",
                 lambda A, B: torch.matmul(A.T, B))]
    if kind == "matmul_tf32":
        return [("cublas_tf32", "torch.matmul with allow_tf32 (cuBLAS TF32)",
                 with_tf32(torch, lambda A, B: torch.matmul(A, B)))]
    if kind == "matmul_nt_tf32":
        return [("cublas_tf32",
                 "torch.matmul(A, B.T) with allow_tf32 (cuBLAS TF32)",
                 with_tf32(torch, lambda A, B: torch.matmul(A, B.T)))]
    how, fn = peer(torch, F, kind)
    return [("cublas", how, fn)]


def peer(torch, F, kind):
    if kind in ("matmul", "bmm"):
        return "torch.matmul (cuBLAS)", lambda A, B: torch.matmul(A, B)
    return ("F.gelu(F.linear(X, W, b), approximate='tanh') (cuBLAS + "
            "elementwise)",
            lambda X, W, b: F.gelu(F.linear(X, W, b), approximate="tanh"))


def graphed(torch, fn):
    """`fn` captured in a CUDA graph (after warm-up on a side stream); the
    returned callable replays it (its argument is ignored)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return lambda k=0: g.replay()


def sass_counts(bundle_dir):
    cubins = list(Path(bundle_dir).glob("*.cubin"))
    if not cubins:
        return {}
    try:
        sass = subprocess.run(["cuobjdump", "-sass", str(cubins[0])],
                              capture_output=True, text=True).stdout
    except FileNotFoundError:
        return {"error": "no cuobjdump"}
    counts = {}
    for op in ("HGMMA", "HMMA", "LDSM", "LDGSTS", "LDL", "STL"):
        counts[op] = len(re.findall(rf"\b{op}\b", sass))
    return counts


def tolerance(meta, peer=False):
    """The elementwise tolerance of a case's output (bench/harness.py's
    rule): bf16 storage with f32 accumulation over K (tf32 operands for the
    tf32 cases); R counts the program's roundings to bf16 on the way (the
    GELU epilogue's product; attention's scores, probabilities and output;
    the block's eight stored steps). A peer gets three more (eager PyTorch
    rounds every step)."""
    kind, p = meta["kind"], meta["params"]
    extra = 3 if peer else 0
    if kind in ("matmul_tf32", "matmul_nt_tf32"):
        return harness.Tolerance("f32", reduction=p["K"], roundings=1 + extra,
                                 operand="tf32")
    if kind == "attention":
        return harness.Tolerance("bf16", reduction=max(p["L"], p["D"]),
                                 roundings=3 + extra)
    if kind == "block":
        return harness.Tolerance("bf16", reduction=p["F"], roundings=8 + extra)
    R = 2 if kind == "linear" else 1
    return harness.Tolerance("bf16", reduction=p["K"], roundings=R + extra)


#: Float64 score matrices of at most this many bytes at a time.
REF_CHUNK_BYTES = 2 << 30


def full_reference(torch, F, kind, ins, params):
    """The float64 reference of the whole output, computed on the GPU in
    chunks (attention: groups of heads; the block: one sequence at a
    time)."""
    if kind == "attention":
        q, k, v = ins
        B, H, L, D = q.shape
        G = H // k.shape[1]
        c = torch.tensor(1.0 / D ** 0.5).to(torch.bfloat16).double()
        out = torch.empty((B, H, L, D), dtype=torch.float64, device=q.device)
        hc = max(1, min(H, REF_CHUNK_BYTES // (L * L * 8)))
        mask = None
        if params["causal"]:
            mask = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()
        for b in range(B):
            for h0 in range(0, H, hc):
                hs = slice(h0, min(H, h0 + hc))
                idx = torch.arange(hs.start, hs.stop, device=q.device) // G
                qq = q[b, hs].double()
                kk, vv = (t[b].index_select(0, idx).double() for t in (k, v))
                s = (qq @ kk.transpose(-1, -2)) * c
                if mask is not None:
                    s.masked_fill_(~mask, float("-inf"))
                out[b, hs] = torch.softmax(s, -1) @ vv
                del s
        return out
    if kind == "block":
        outs = [block_forward(torch, F, [ins[0][b:b + 1].double()]
                              + [t.double() for t in ins[1:]], params["H"])
                for b in range(ins[0].shape[0])]
        return torch.cat(outs, 0)
    return reference(torch, F, kind, ins, params)


def run_case(torch, F, tang_cuda, meta, args, deadline):
    """Checks every element of tang's output (interpreter on saved inputs
    where the case has them; a float64 GPU reference on fresh inputs) and
    the peers', then times tang and the peers in interleaved rounds (the
    block and its peers as CUDA graphs). A common-schema case."""
    import numpy as np
    kind = meta["kind"]
    res = harness.case_result(meta["case"], kind=kind, params=meta["params"],
                              flops=meta["flops"], purpose=meta["purpose"])
    if not meta["compile"]["ok"]:
        res.update(status="compile failed",
                   note=meta["compile"]["stderr"][-300:])
        return res
    bdir = WORK / meta["case"] / "bundle"
    res["sass"] = sass_counts(bdir)
    bundle = tang_cuda.Bundle(bdir)
    out = torch.empty(meta["output"], device="cuda",
                      dtype=dtype_of(torch, meta))
    tol, tol_p = tolerance(meta), tolerance(meta, peer=True)
    res["tolerance"] = {"tang": tol.describe(), "peers": tol_p.describe()}

    def tang(ins):
        bundle.run("main", *ins, outputs=[out])
        return out

    checks = []
    if meta.get("interpreter_ref"):
        case = WORK / meta["case"]
        ins = [torch.from_numpy(np.load(case / f"input_{i}.npy")).cuda()
               .to(dtype_of(torch, meta)) for i in range(len(meta["inputs"]))]
        ref = torch.from_numpy(np.load(case / "ref" / "output_0.npy")).cuda()
        checks.append(("interpreter", ins, ref))
    fresh = inputs_for(torch, meta, 4321)
    ref_fresh = full_reference(torch, F, kind, fresh, meta["params"])
    checks.append(("gpu float64", fresh, ref_fresh))
    same_all = True
    for what, ins, ref in checks:
        first, same = harness.poisoned_runs(torch, [out], lambda: tang(ins))
        same_all &= same
        res["checks"].append(harness.check_tensor(first[0], ref, tol, what))
        del first
    if not harness.judge_checks(res, same_all):
        return res
    if args.sanitize:
        bundle.close()
        return harness.sanitized(res)

    sets = [fresh]
    contenders, graphs = [], {}
    if kind == "block":
        fn, g, why = harness.try_graphed(torch, lambda: tang(sets[0]))
        graphs["tang"] = g if g else why
        contenders.append(("tang", fn))
    else:
        contenders.append(("tang", lambda k: tang(sets[k])))
    res["peer_how"], peer_checks = {}, {}
    for pid, how, fn in peers(torch, F, kind, meta["params"]):
        res["peer_how"][pid] = how
        try:
            got = fn(*fresh)
            peer_checks[pid] = harness.check_tensor(got, ref_fresh, tol_p, pid)
            del got
            if kind == "block":
                call, g, why = harness.try_graphed(
                    torch, lambda fn=fn: fn(*sets[0]))
                graphs[pid] = g if g else why
            else:
                call = lambda k, fn=fn: fn(*sets[k])
            contenders.append((pid, call))
        except Exception as e:  # a backend that does not run this shape
            res.setdefault("peer_status", {})[pid] = "failed: " + \
                harness.short(e)
    del ref_fresh
    res["peer_checks"] = {k: {kk: c[kk] for kk in ("ok", "max_err", "bad",
                                                     "worst")}
                          for k, c in peer_checks.items()}
    if graphs:
        res["cuda_graphs"] = graphs
    timed = harness.interleaved_rounds(
        torch, contenders, rounds=args.rounds_n, target_ms=args.target_ms,
        deadline=deadline.monotonic())
    wrong = [k for k, c in peer_checks.items() if not c["ok"]]
    harness.record_timing(res, timed, wrong)
    for k, v in timed.items():
        if "error" in v:
            res.setdefault("peer_status", {})[k] = "failed: " + v["error"]
    bundle.close()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="*")
    harness.add_common_args(ap)
    args = ap.parse_args()
    args.rounds_n = harness.rounds_of(args)
    args.target_ms = harness.target_ms_of(args)
    deadline = harness.Deadline(args.deadline)
    import time
    t_start = time.monotonic()
    import torch
    import torch.nn.functional as F
    import tang.cuda as tang_cuda
    metas = [json.loads(p.read_text()) for p in sorted(WORK.glob("*/meta.json"))]
    if args.cases:
        metas = [m for m in metas if m["case"] in args.cases]
    if not metas:
        print(f"no meta.json under {WORK}: run bench/prepare_gemm.py and "
              "carry gpu-work", file=sys.stderr)
        return 2
    metas.sort(key=lambda m: m["flops"])
    torch.manual_seed(0)
    out = Path(args.out) if args.out else harness.out_dir("gemm-out")
    path = out / "gemm.json"
    report = harness.new_report("gemm", torch, settings={
        "rounds": args.rounds_n, "target_ms": args.target_ms,
        "quick": args.quick})
    return harness.run_cases(
        torch, report, path, metas,
        lambda meta: run_case(torch, F, tang_cuda, meta, args, deadline),
        deadline, t_start)


if __name__ == "__main__":
    sys.exit(main())
