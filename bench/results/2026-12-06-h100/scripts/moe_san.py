"""The MoE bundles once each (1 and 8 tokens) for compute-sanitizer:
random bf16 weights in tang's layout, output checked finite."""
import json, sys, torch
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
import tang.cuda
from tang.models import qwen3_next as qn
cfg = qn.QWEN3_NEXT_MOE
L = json.loads((ROOT / "gpu-work/moe/bundles.json").read_text())
g = torch.Generator(device="cuda").manual_seed(0)
W = [(torch.randn(s, device="cuda", generator=g) / s[-1] ** 0.5).bfloat16()
     for s in qn.moe_weight_shapes(cfg).values()]
ok = True
for t in [int(a) for a in sys.argv[1:]]:
    bundle = tang.cuda.Bundle(ROOT / L["bundles"][f"t{t}"]["dir"] / "bundle")
    x = torch.randn(t, cfg.hidden, device="cuda", generator=g).bfloat16()
    o = torch.full((t, cfg.hidden), float("nan"), device="cuda")
    bundle.run("moe_layer", x, *W, outputs=[o])
    torch.cuda.synchronize()
    fin = bool(torch.isfinite(o).all())
    ok &= fin
    print(f"tokens {t}: finite {fin}", flush=True)
sys.exit(0 if ok else 1)
