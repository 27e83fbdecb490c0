import json, sys, torch
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python")); sys.path.insert(0, str(ROOT / "bench"))
import tang.cuda
import bench_moe as bm
from tang.models import qwen3_next as qn
L = json.loads((ROOT / "gpu-work/moe/bundles.json").read_text())
hf = bm.hf_config(); cfg = qn.moe_config_from(hf)
block = bm.hf_block(hf); W = bm.tang_weights(block, cfg)
for t in (1, 8, 64):
    b = L["bundles"][f"t{t}"]
    bundle = tang.cuda.Bundle(ROOT / b["dir"] / "bundle")
    x = bm.well_routed_tokens(cfg, W[0], t, seed=t)
    o = torch.empty(t, cfg.hidden, device="cuda")
    for _ in range(3):
        bundle.run("moe_layer", x, *W, outputs=[o])
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
        for _ in range(5):
            bundle.run("moe_layer", x, *W, outputs=[o])
        torch.cuda.synchronize()
    print(f"--- tokens {t}")
    print(p.key_averages().table(sort_by="cuda_time_total", row_limit=12, max_name_column_width=40))
