"""Per-kernel time of one tang Qwen3-8B decode step (eager launches) on the
GPU, from torch.profiler: the kernels by total time, with their share.

Run on the GPU machine:  python3 bench/qwen3_profile.py OUT.json [POS]
"""

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qwen3_decode as q  # noqa: E402


def main():
    out = Path(sys.argv[1])
    pos = int(sys.argv[2]) if len(sys.argv) > 2 else 31
    bundles, capacity = q.load_bundles()
    W = q.make_weights()
    dec = q.TangDecoder(q.ROOT / bundles["decode1"]["dir"] / "bundle", W, 1,
                        capacity)
    dec.run(pos)
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        dec.run(pos)
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
    out.write_text(json.dumps({"pos": pos, "total_us": total,
                               "kernels": rows}, indent=1))


if __name__ == "__main__":
    main()
