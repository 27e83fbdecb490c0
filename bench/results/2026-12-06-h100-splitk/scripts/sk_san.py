"""The split-k GEMM bundle (33 x 264 x 4104 + bias + GELU, heuristic: 17
splits) once, for compute-sanitizer: the prepared inputs, the output
against the float64 interpreter's (every element, bf16 tolerance)."""
import sys, numpy as np, torch
from pathlib import Path
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import tang.cuda
d = ROOT / "gpu-work/gemm/linear_gelu_33x264x4104"
bundle = tang.cuda.Bundle(d / "bundle")
xs = [torch.from_numpy(np.load(d / f"input_{i}.npy")).cuda().bfloat16()
      for i in range(3)]
o = torch.full((33, 264), float("nan"), device="cuda").bfloat16()
bundle.run("main", *xs, outputs=[o])
torch.cuda.synchronize()
ref = np.load(d / "ref/output_0.npy").astype(np.float64)
err = np.abs(o.float().cpu().numpy() - ref)
ok = bool(np.isfinite(o.float().cpu().numpy()).all()) and err.max() <= 0.02 * max(1, np.abs(ref).max())
print(f"split-k bundle: max err {err.max():.4g}, ok {ok}", flush=True)
sys.exit(0 if ok else 1)
