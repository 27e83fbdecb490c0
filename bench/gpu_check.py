#!/usr/bin/env python3
"""Runs every case prepared by scripts/prepare-gpu-check.py on the GPU and
compares each output with the float64 reference interpreter's.

Tolerance on ||out - ref|| / ||ref|| follows from the storage type: f32
1e-5, f16 5e-3, bf16 2e-2 (bf16 keeps 8 bits: outputs and intermediates
stored in it carry ~4e-3 relative error each). Integer outputs must match
exactly; NaN never passes. Outputs are poisoned with NaN (0x7f.. bytes for
integers) before each run, so an unwritten element fails.

Usage (GPU machine, repository root): python3 bench/gpu_check.py [--filter S]
Writes $OUT/gpu_check.json and prints a table; exits 1 if any case fails.
"""

import argparse
import json
import os
import pathlib
import sys

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
import tang.cuda  # noqa: E402

TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16,
                "bf16": torch.bfloat16, "f64": torch.float64,
                "i32": torch.int32, "i8": torch.int8}
TOLERANCE = {"f32": 1e-5, "f16": 5e-3, "bf16": 2e-2, "f64": 1e-12}


def check_case(case):
    manifest = json.loads((case / "bundle" / "manifest.json").read_text())
    fn = manifest["functions"][0]
    bundle = tang.cuda.Bundle(case / "bundle")
    inputs, outputs = [], []
    for i, arg in enumerate(a for a in fn["args"] if a["role"] == "input"):
        host = torch.from_numpy(np.load(case / f"input_{i}.npy"))
        inputs.append(host.to(TORCH_DTYPES[arg["dtype"]]).cuda())
    for arg in fn["args"]:
        if arg["role"] != "output":
            continue
        dt = TORCH_DTYPES[arg["dtype"]]
        out = torch.empty(arg["shape"], dtype=dt, device="cuda")
        out.fill_(float("nan") if dt.is_floating_point else 0x7F)
        outputs.append(out)
    bundle.run(fn["name"], *inputs, outputs=outputs, sync=True)
    results = []
    for k, (out, arg) in enumerate(
            zip(outputs, [a for a in fn["args"] if a["role"] == "output"])):
        ref = np.load(case / "ref" / f"output_{k}.npy").astype(np.float64)
        got = out.double().cpu().numpy()
        if arg["dtype"] in ("i32", "i8"):
            ok = np.array_equal(got, ref)
            err = float(np.abs(got - ref).max()) if got.size else 0.0
            tol = 0.0
        else:
            nan = bool(np.isnan(got).any())
            err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
            tol = TOLERANCE[arg["dtype"]]
            ok = (not nan) and err <= tol
        results.append({"output": k, "dtype": arg["dtype"], "error": err,
                        "tolerance": tol, "ok": bool(ok)})
    bundle.close()
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--filter", default="", help="only cases containing this")
    args = ap.parse_args()
    torch.cuda.init()
    cases = sorted(p for p in (ROOT / "gpu-work" / "check").iterdir()
                   if args.filter in p.name)
    rows, failures = [], 0
    for case in cases:
        try:
            res = check_case(case)
        except Exception as e:  # report and go on with the other cases
            res = [{"output": -1, "dtype": "?", "error": float("nan"),
                    "tolerance": 0, "ok": False, "exception": repr(e)}]
        for r in res:
            r["case"] = case.name
            rows.append(r)
            failures += not r["ok"]
            print(f"{case.name:32s} out{r['output']} {r['dtype']:5s} "
                  f"err {r['error']:.3e} tol {r['tolerance']:.0e} "
                  f"{'ok' if r['ok'] else 'FAIL'} {r.get('exception', '')}")
    summary = {"device": torch.cuda.get_device_name(),
               "torch": torch.__version__, "cases": len(cases),
               "outputs": len(rows), "failures": failures, "rows": rows}
    out = pathlib.Path(os.environ.get("OUT", "."))
    (out / "gpu_check.json").write_text(json.dumps(summary, indent=1))
    print(f"{len(rows) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
