"""Per-kernel GPU time of one Qwen3 step (torch.profiler), the biggest
first: a decode step at a position, or a prefill.

Usage (GPU machine): python3 bench/qwen3_profile.py OUT.json [BUNDLE] [POS]
  BUNDLE: a name of gpu-work/qwen3/bundles.json (default decode1)
  POS: the decode position (default 31)
"""

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qwen3_decode as q  # noqa: E402


def main():
    out = Path(sys.argv[1])
    name = sys.argv[2] if len(sys.argv) > 2 else "decode1"
    pos = int(sys.argv[3]) if len(sys.argv) > 3 else 31
    bundles, capacity = q.load_bundles()
    W = q.make_weights()
    entry = bundles[name]
    bundle_dir = q.ROOT / entry["dir"] / "bundle"
    if name.startswith("decode"):
        dec = q.TangDecoder(bundle_dir, W, entry["batch"], capacity)

        def step():
            dec.run(pos)
    else:
        bundle = q.tang.cuda.Bundle(bundle_dir)
        kc = torch.zeros(q.qwen3.cache_shape(q.CFG, 1, capacity),
                         dtype=q.BF16, device=q.DEV)
        vc = torch.zeros_like(kc)
        ids = torch.randint(0, q.CFG.vocab, (entry["tokens"],),
                            dtype=torch.int32, device=q.DEV)
        nxt = torch.zeros(1, dtype=torch.int32, device=q.DEV)

        def step():
            bundle.run("prefill", ids, *W.values(), kc, vc,
                       outputs=[nxt, kc, vc])
    step()
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        step()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", 0)
        if t:
            rows.append({"kernel": e.key, "count": e.count, "us": t})
    rows.sort(key=lambda r: -r["us"])
    total = sum(r["us"] for r in rows)
    for r in rows[:25]:
        print(f"{r['us'] / 1e3:10.2f} ms {100 * r['us'] / total:5.1f}% "
              f"x{r['count']:4d} {r['kernel'][:90]}", flush=True)
    out.write_text(json.dumps({"bundle": name, "pos": pos, "total_us": total,
                               "kernels": rows}, indent=1))


if __name__ == "__main__":
    main()
