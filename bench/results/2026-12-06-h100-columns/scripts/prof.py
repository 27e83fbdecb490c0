"""Every kernel of the block's backward (block_grad_L2048) under
torch.profiler: 5 runs after 2 warm-ups, mean CUDA time per kernel."""
import json, sys, torch
from pathlib import Path
from collections import defaultdict
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import tang.cuda
d = ROOT / "gpu-work/block-grad/block_grad_L2048/train"
m = json.loads((d / "manifest.json").read_text())
bundle = tang.cuda.Bundle(d)
dt = {"bf16": torch.bfloat16, "f32": torch.float32}
g = torch.Generator(device="cuda").manual_seed(0)
rand = lambda a: (torch.randn(a["shape"], device="cuda", generator=g) * 0.05).to(dt[a["dtype"]])
fns = {f["name"]: f for f in m["functions"]}
fwd, bwd = fns["main_fwd"], fns["main_bwd"]
fin = [rand(a) for a in fwd["args"] if a["role"] == "input"]
fout = [torch.empty(a["shape"], device="cuda", dtype=dt[a["dtype"]]) for a in fwd["args"] if a["role"] == "output"]
bundle.run("main_fwd", *fin, outputs=fout)
nb = sum(a["role"] == "input" for a in bwd["args"])
bin_ = fin + fout
bin_ += [rand(a) for a in bwd["args"][len(bin_):nb]]
bout = [torch.empty(a["shape"], device="cuda", dtype=dt[a["dtype"]]) for a in bwd["args"] if a["role"] == "output"]
for _ in range(2):
    bundle.run("main_bwd", *bin_, outputs=bout)
torch.cuda.synchronize()
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CUDA]) as p:
    for _ in range(5):
        bundle.run("main_bwd", *bin_, outputs=bout)
    torch.cuda.synchronize()
t = defaultdict(float)
for e in p.events():
    if e.device_type.name == "CUDA":
        t[e.name] += e.device_time / 5 / 1000
tot = sum(v for k, v in t.items() if k.startswith("main_bwd"))
for k, v in sorted(t.items(), key=lambda kv: -kv[1]):
    if k.startswith("main_bwd"):
        print(f"{k:20s} {v:8.4f} ms")
print(f"total main_bwd kernels {tot:.3f} ms")
