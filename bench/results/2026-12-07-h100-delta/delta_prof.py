"""Ad-hoc: the gated delta rule at 4096 tokens, per-kernel times (torch.profiler),
CUDA-event timing against transformers' chunked torch fallback, and the error
against the float64 reference: where the elements past the f32 bound lie."""
import sys, json, time, torch
sys.path.insert(0, "python"); sys.path.insert(0, "bench")
import bench_delta as bd, harness, tang.cuda
from tang.models import qwen3_next as qn
cfg = qn.QWEN3_NEXT_DELTA
T = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
b = json.load(open("gpu-work/delta/bundles.json"))["bundles"][f"t{T}"]
bundle = tang.cuda.Bundle(b["dir"] + "/bundle")
q, k, v, g, beta = bd.inputs(cfg, T)
o = torch.empty(1, T, 32, 128, device="cuda"); S = torch.empty(1, 32, 128, 128, device="cuda")
def tang_run(): bundle.run("gated_delta_rule", q, k, v, g, beta, outputs=[o, S])
found, qr, kr = bd.peers(cfg, q, k, v, g, beta)
fns = [("tang", tang_run)] + [(n, f) for n, f, _ in found if not isinstance(f, Exception)]
print("peers", [(n, str(f)[:80]) for n, f, _ in found])
for name, f in fns:
    f(); torch.cuda.synchronize()
    ts = []
    for r in range(5):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); f(); e1.record(); torch.cuda.synchronize(); ts.append(e0.elapsed_time(e1))
    print(name, "ms", [round(x, 3) for x in sorted(ts)], flush=True)
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    tang_run(); torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=40))
program_text = open(b["dir"] + "/program.mlir").read()
ref_o, ref_S = bd.reference(cfg, q, k, v, g, beta)
sens = bd.sensitivity(cfg, (q, k, v, g, beta), (ref_o, ref_S))
tol = harness.tolerance_for_program("f32", program_text)
for (name, got, ref), sn in zip([("o", o, ref_o), ("S", S, ref_S)], sens):
    r = harness.check_tensor(got, ref, tol, name, sensitivity=sn)
    print(name, "with sensitivity:", {k: r[k] for k in ("ok", "bad", "max_err", "rule")})
    print(name, "sensitivity max", sn.max().item(), "mean", sn.mean().item())
    r = harness.check_tensor(got, ref, tol, name)
    print(name, {k: r[k] for k in ("ok", "bad", "max_err", "max_abs_err", "scale", "atol", "rule", "worst")})
    err = (got.double() - ref).abs()
    rms = ref.pow(2).mean().sqrt().item()
    print(name, "max abs err", err.max().item(), "rms ref", rms, "err/rms", err.max().item() / rms)
    # how large are the refs where the error is largest
    flat = err.reshape(-1); top = torch.topk(flat, 20).indices
    print(name, "worst 20: err", [f"{x:.2e}" for x in flat[top].tolist()])
    print(name, "          ref", [f"{x:.2e}" for x in ref.reshape(-1)[top].tolist()])
    # error by token position (o): does it grow along the sequence?
    if name == "o":
        e = err.reshape(T, -1).max(dim=1).values
        for t0 in range(0, T, T // 8):
            print("  tokens", t0, "max err", f"{e[t0:t0 + T // 8].max().item():.2e}")
for name, f in fns[1:]:
    x = f().double(); print(name, "max abs err", (x - ref_o).abs().max().item())
