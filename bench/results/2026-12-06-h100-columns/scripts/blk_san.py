"""The block's training step (block_grad_L128: the norm weights' gradients
as split column reductions) once, for compute-sanitizer: random inputs,
main_fwd then main_bwd, every output checked finite."""
import json, sys, torch
from pathlib import Path
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import tang.cuda
d = ROOT / "gpu-work/block-grad" / (sys.argv[1] if len(sys.argv) > 1 else "block_grad_L128") / "train"
m = json.loads((d / "manifest.json").read_text())
bundle = tang.cuda.Bundle(d)
dt = {"bf16": torch.bfloat16, "f32": torch.float32}
g = torch.Generator(device="cuda").manual_seed(0)
def rand(a):
    return (torch.randn(a["shape"], device="cuda", generator=g) * 0.1).to(dt[a["dtype"]])
fns = {f["name"]: f for f in m["functions"]}
fwd, bwd = fns["main_fwd"], fns["main_bwd"]
fin = [rand(a) for a in fwd["args"] if a["role"] == "input"]
fout = [torch.full(a["shape"], float("nan"), device="cuda", dtype=dt[a["dtype"]]) for a in fwd["args"] if a["role"] == "output"]
bundle.run("main_fwd", *fin, outputs=fout)
nb = sum(a["role"] == "input" for a in bwd["args"])
bin_ = fin + fout
bin_ += [rand(a) for a in bwd["args"][len(bin_):nb]]
bout = [torch.full(a["shape"], float("nan"), device="cuda", dtype=dt[a["dtype"]]) for a in bwd["args"] if a["role"] == "output"]
bundle.run("main_bwd", *bin_, outputs=bout)
torch.cuda.synchronize()
ok = all(bool(torch.isfinite(o.float()).all()) for o in fout + bout)
print(f"block step {d.parent.name}: {len(fout)} + {len(bout)} outputs finite {ok}", flush=True)
sys.exit(0 if ok else 1)
