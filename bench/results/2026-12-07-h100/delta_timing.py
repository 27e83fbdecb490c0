import sys, json, time, torch
sys.path.insert(0, "python"); sys.path.insert(0, "bench")
import bench_delta as bd, tang.cuda
from tang.models import qwen3_next as qn
cfg = qn.QWEN3_NEXT_DELTA
b = json.load(open("gpu-work/delta/bundles.json"))["bundles"]["t4096"]
bundle = tang.cuda.Bundle(b["dir"] + "/bundle")
q, k, v, g, beta = bd.inputs(cfg, 4096)
o = torch.empty(1, 4096, 32, 128, device="cuda"); S = torch.empty(1, 32, 128, 128, device="cuda")
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
    print(name, "ms", sorted(ts))
ref_o, ref_S = bd.reference(cfg, q, k, v, g, beta)
err = (o.double() - ref_o).abs(); print("o max abs err", err.max().item(), "rms ref", ref_o.pow(2).mean().sqrt().item(), "rel", (err.max() / ref_o.abs().max()).item())
for name, f in fns[1:]:
    x = f().double(); print(name, "max abs err", (x - ref_o).abs().max().item())
