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
import datetime
import json
import math
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
WORK = ROOT / "gpu-work" / "gemm"
REL_TOL = 1e-2

from bench_memory_bound import plan, probe_ms, summary, time_ms  # noqa: E402


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


def out_slice(kind, out):
    """The part of `out` the float64 GPU reference covers."""
    if kind == "block":
        return out[:1]
    return out[:1, :ATTN_REF_HEADS] if kind == "attention" else out


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


def rel_err(torch, out, ref):
    if not bool(torch.isfinite(out).all()):
        return math.inf
    return float((out.double() - ref).norm() / ref.norm())


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


def run_case(torch, F, tang_cuda, meta, args):
    import numpy as np
    res = {"case": meta["case"], "kind": meta["kind"],
           "params": meta["params"], "flops": meta["flops"],
           "purpose": meta["purpose"], "status": "ok", "checks": []}
    if not meta["compile"]["ok"]:
        res.update(status="compile failed", note=meta["compile"]["stderr"][:300])
        return res
    bdir = WORK / meta["case"] / "bundle"
    res["sass"] = sass_counts(bdir)
    bundle = tang_cuda.Bundle(bdir)
    out = torch.empty(meta["output"], device="cuda",
                      dtype=dtype_of(torch, meta))

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
    kind = meta["kind"]
    checks.append(("gpu float64", fresh,
                   reference(torch, F, kind, fresh, meta["params"])))
    for what, ins, ref in checks:
        outs = []
        for _ in range(2):
            out.fill_(float("nan"))
            tang(ins)
            torch.cuda.synchronize()
            outs.append(out.clone())
        # Every element written (the reference may cover a slice only).
        if not bool(torch.isfinite(outs[0]).all()):
            e = math.inf
        elif what == "gpu float64":
            e = rel_err(torch, out_slice(kind, outs[0]), ref)
        else:
            e = rel_err(torch, outs[0], ref)
        same = bool(torch.equal(outs[0], outs[1]))
        res["checks"].append({"against": what, "rel_err": e,
                              "deterministic": same})
        if not (e <= REL_TOL) or not same:
            res["status"] = "incorrect"
    if res["status"] != "ok":
        return res

    sets = [fresh]
    call_t = lambda k: tang(sets[k])
    if kind == "block":
        # Launched through a CUDA graph, like the peer.
        call_t = graphed(torch, lambda: tang(sets[0]))
    t_plan = plan(probe_ms(torch, call_t), args)
    t1 = time_ms(torch, call_t, 1, *t_plan)
    res["peers"] = []
    for pid, how, fn in peers(torch, F, kind, meta["params"]):
        pr = {"id": pid, "how": how}
        try:
            pr["rel_err"] = rel_err(torch, out_slice(kind, fn(*fresh)),
                                    checks[-1][2])
            call_p = lambda k, fn=fn: fn(*sets[k])
            if kind == "block":
                call_p = graphed(torch, lambda fn=fn: fn(*sets[0]))
            pr.update(summary(time_ms(torch, call_p, 1,
                                      *plan(probe_ms(torch, call_p), args))))
            pr["tflops"] = meta["flops"] / pr["ms"] / 1e9
        except Exception as e:  # a backend that does not run this shape
            pr["error"] = f"{type(e).__name__}: {e}"[:200]
        res["peers"].append(pr)
    t2 = time_ms(torch, call_t, 1, *t_plan)
    res["tang"] = summary(t1 + t2)
    res["tang"]["spread"] = abs(statistics.median(t1) - statistics.median(t2)) \
        / statistics.median(t1 + t2)
    res["tang"]["tflops"] = meta["flops"] / res["tang"]["ms"] / 1e9
    timed = [p for p in res["peers"] if "ms" in p]
    res["peer"] = timed[0] if timed else {}
    for p in timed:
        p["peer_over_tang"] = p["ms"] / res["tang"]["ms"]
    res["speedup"] = res["peer"].get("peer_over_tang")
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="*")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--out", default=os.environ.get("OUT")
                    or str(ROOT / "gpu-work" / "gemm-out"))
    args = ap.parse_args()
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
    report = {"date": datetime.datetime.now(datetime.timezone.utc)
              .isoformat(timespec="seconds"),
              "device": torch.cuda.get_device_name(0),
              "torch": torch.__version__, "cases": []}
    for meta in metas:
        try:
            r = run_case(torch, F, tang_cuda, meta, args)
        except Exception as e:  # a load or launch failure
            r = {"case": meta["case"], "status": "failed",
                 "note": f"{type(e).__name__}: {e}"[:400]}
        report["cases"].append(r)
        print(json.dumps(r), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gemm.json").write_text(json.dumps(report, indent=1) + "\n")
    L = [f"# tang tensor-core GEMM vs cuBLAS, {report['date']}, "
         f"{report['device']}, torch {report['torch']}", "",
         "| case | status | max rel err | tang ms | tang TFLOP/s | peer ms | "
         "peer TFLOP/s | peer/tang | second peer: TFLOP/s, peer/tang | "
         "SASS HMMA/HGMMA | spread |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["cases"]:
        t, p = r.get("tang") or {}, r.get("peer") or {}
        errs = [c["rel_err"] for c in r.get("checks", [])]
        sass = r.get("sass") or {}
        f = lambda v, s: "-" if v is None else format(v, s)
        peers_ = r.get("peers") or []
        q = peers_[1] if len(peers_) > 1 else None
        second = (f"{q['id']}: {f(q.get('tflops'), '.0f')}, "
                  f"{f(q.get('peer_over_tang'), '.3f')}" if q else "-")
        L.append(f"| {r['case']} | {r['status']} {r.get('note', '')} | "
                 f"{f(max(errs) if errs else None, '.2e')} | "
                 f"{f(t.get('ms'), '.4f')} | {f(t.get('tflops'), '.0f')} | "
                 f"{f(p.get('ms'), '.4f')} | {f(p.get('tflops'), '.0f')} | "
                 f"{f(r.get('speedup'), '.3f')} | {second} | "
                 f"{sass.get('HMMA', '-')}/{sass.get('HGMMA', '-')} | "
                 f"{f(t.get('spread'), '.3f')} |")
    (out / "gemm.md").write_text("\n".join(L) + "\n")
    print("\n".join(L))
    bad = [r for r in report["cases"] if r["status"] != "ok"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
