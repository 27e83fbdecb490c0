#!/usr/bin/env python3
"""Runs every case prepared by scripts/prepare-gpu-check.py on the GPU and
compares every element of every output with the float64 reference
interpreter's.

The comparison is bench/harness.py's elementwise rule (see its docstring):

    |got - ref| <= atol + rtol |ref|  for every element with a finite ref,
    rtol = 2 u(storage),
    atol = 8 rms(ref) sqrt(R u(storage)^2 + K u(acc)^2),

u the unit roundoff (bf16 2^-8, f16 2^-11, f32 2^-24). The examples spell
their arithmetic in the storage type (prepare-gpu-check.py replaces f32 by
f16/bf16 everywhere), so the accumulation type is the storage type; K is the
longest reduction of the program (the product of a comprehension's reduced
extents) and R the number of comprehensions (each may store its result in
the storage type). Where ref is NaN or +-inf, got must hold the same NaN or
the same infinity; where ref is finite, got must be finite. Integer outputs
must be equal. Outputs are poisoned with NaN (0x7f.. for integers) before a
first run and with a finite sentinel before a second, and the two runs must
give the same bits: an element neither run wrote, or a race, fails even
where the reference is NaN. A failure reports the worst element's index,
got and ref.

Usage (GPU machine, repository root): python3 bench/gpu_check.py [--filter S]
Writes $OUT/gpu_check.json (bench/harness.py's common schema: one case per
example and type, status ok/incorrect/failed, max_err = the largest
|got - ref| / (atol + rtol |ref|), <= 1 passes) and prints a table; exits 1
if any case fails.
"""

import argparse
import json
import pathlib
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402
from tang import sizes as tang_sizes  # noqa: E402

def check_case(torch, tang_cuda, case, once=False):
    """Every output of the case's function against the reference. A
    function with symbolic sizes runs from its one bundle at each run of
    runs.json (scripts/prepare-gpu-check.py), each checked alike. `once`
    (--sanitize): one run instead of two, checked where the reference was
    carried."""
    manifest = json.loads((case / "bundle" / "manifest.json").read_text())
    fn = manifest["functions"][0]
    program = (case / "program.mlir").read_text()
    bundle = tang_cuda.Bundle(case / "bundle")
    runs = [{"dir": ".", "sizes": {}}]
    if (case / "runs.json").exists():
        runs = json.loads((case / "runs.json").read_text())
    checks, same = [], True
    for r in runs:
        sizes = {int(k): v for k, v in r["sizes"].items()}
        tag = "".join(f" arg{k}={v}" for k, v in sizes.items())
        c, s = check_run(torch, bundle, fn, program, case / r["dir"], sizes,
                         tag, once)
        checks += c
        same = same and s
    bundle.close()
    return checks, same


def check_run(torch, bundle, fn, program, where, sizes, tag, once=False):
    """One run: the inputs and references under `where`, at `sizes`."""
    dtypes = {"f32": torch.float32, "f16": torch.float16,
              "bf16": torch.bfloat16, "f64": torch.float64,
              "i32": torch.int32, "i8": torch.int8}
    in_args = [a for a in fn["args"] if a["role"] == "input"]
    hosts = [np.load(where / f"input_{i}.npy") for i in range(len(in_args))]
    fn = tang_sizes.instantiate(fn, [h.shape for h in hosts], sizes)
    inputs = [torch.from_numpy(h).to(dtypes[a["dtype"]]).cuda()
              for h, a in zip(hosts, in_args)]
    originals = [t.clone() for t in inputs]
    out_args = [a for a in fn["args"] if a["role"] == "output"]
    # An output updated in place is its (donated) input: not poisoned, and
    # the input restored before each run (an in-place update need not be
    # idempotent).
    position = {i: p for p, i in enumerate(
        i for i, a in enumerate(fn["args"]) if a["role"] == "input")}
    outputs = [inputs[position[a["alias"]]] if "alias" in a else
               torch.empty(a["shape"], dtype=dtypes[a["dtype"]],
                           device="cuda") for a in out_args]
    written = [o for o, a in zip(outputs, out_args) if "alias" not in a]

    def step():
        for t, o in zip(inputs, originals):
            t.copy_(o)
        bundle.run(fn["name"], *inputs, outputs=outputs, sizes=sizes or None)

    if once:
        for t in written:
            t.fill_(float("nan") if t.dtype.is_floating_point else 0x7F)
        step()
        torch.cuda.synchronize()
        firsts, same = [t.clone() for t in written], True
    else:
        firsts, same = harness.poisoned_runs(torch, written, step)
    firsts = iter(firsts)
    first = [o.clone() if "alias" in a else next(firsts)
             for o, a in zip(outputs, out_args)]
    checks = []
    for k, (got, arg) in enumerate(zip(first, out_args)):
        if once and not (where / "ref" / f"output_{k}.npy").exists():
            continue  # --sanitize without the references carried
        ref = np.load(where / "ref" / f"output_{k}.npy").astype(np.float64)
        sens_path = where / "ref" / f"sensitivity_{k}.npy"
        # Integers (argmax indices) stay exact.
        sens = (np.load(sens_path) if sens_path.exists()
                and arg["dtype"] not in harness.INTEGER_TYPES else None)
        tol = harness.tolerance_for_program(arg["dtype"], program)
        c = harness.check_elementwise(got.double().cpu().numpy(), ref, tol,
                                      f"out{k} {arg['dtype']}{tag}",
                                      sensitivity=sens)
        checks.append(c)
    return checks, same


#: The case of runtime_errors (run after the examples).
RUNTIME_ERRORS = "runtime-errors"


def runtime_errors(torch, tang_cuda, case, scratch):
    """A damaged bundle and wrong arguments on a real GPU (the reliability
    issue's runtime robustness; the mock driver of
    test/Runtime/test_bundle_manifest.py checks the same without one):
    each must raise its error, naming the problem, leave the outputs as
    they were, and leave the context usable (the good bundle then runs and
    is checked). `case`: a prepared check case with one static function;
    `scratch`: a directory for damaged copies. Returns check dicts."""
    import shutil
    checks = []

    def expect(name, make, error, words):
        try:
            make()
            ok, got = False, "no error"
        except error as e:
            got = str(e)
            ok = all(w in got for w in words)
        except Exception as e:  # the wrong kind of error
            ok, got = False, f"{type(e).__name__}: {e}"
        checks.append({"name": name, "ok": ok, "max_err": None,
                       "message": got[:300]})

    def damaged(tag, change):
        d = scratch / tag
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(case / "bundle", d)
        manifest = json.loads((d / "manifest.json").read_text())
        change(d, d / manifest["image"])
        return d

    missing = damaged("missing-image", lambda d, img: img.unlink())
    expect("bundle without its image", lambda: tang_cuda.Bundle(missing),
           tang_cuda.ManifestError, ["cannot read the image"])

    def truncate(d, img):
        img.write_bytes(img.read_bytes()[: len(img.read_bytes()) // 2])
    cut = damaged("truncated-image", truncate)
    expect("truncated PTX", lambda: tang_cuda.Bundle(cut),
           tang_cuda.CudaError, ["cannot load", "cuModuleLoadDataEx"])

    def rename(d, img):
        img.write_text(img.read_text().replace("main_k0", "main_q0"))
    renamed = damaged("renamed-kernel", rename)
    expect("a kernel the image lacks", lambda: tang_cuda.Bundle(renamed),
           tang_cuda.CudaError, ["no kernel 'main_k0'"])

    manifest = json.loads((case / "bundle" / "manifest.json").read_text())
    fn = manifest["functions"][0]
    bundle = tang_cuda.Bundle(case / "bundle")
    in_args = [a for a in fn["args"] if a["role"] == "input"]
    out_args = [a for a in fn["args"] if a["role"] == "output"]
    inputs = [torch.from_numpy(np.load(case / f"input_{i}.npy")).cuda()
              for i in range(len(in_args))]
    outputs = [torch.full(a["shape"], float("nan"), device="cuda")
               for a in out_args]
    host = [o.cpu() for o in outputs]
    expect("an output on the host",
           lambda: bundle.run(fn["name"], *inputs, outputs=host),
           ValueError, ["expected a CUDA tensor"])
    flat = inputs[0].reshape(-1)
    expect("a wrongly shaped input",
           lambda: bundle.run(fn["name"], flat, *inputs[1:],
                              outputs=outputs), ValueError,
           [f"got float32 of shape ({flat.numel()},)"])
    expect("a wrongly typed input",
           lambda: bundle.run(fn["name"], inputs[0].double(), *inputs[1:],
                              outputs=outputs), ValueError, ["float64"])
    torch.cuda.synchronize()
    # (Each refusal comes before any launch: the outputs stay poisoned.)
    checks.append({"name": "no output written by a refused run",
                   "ok": all(bool(o.isnan().all()) for o in outputs),
                   "max_err": None})
    bundle.close()
    # The context still works: the good bundle, checked.
    good, _ = check_case(torch, tang_cuda, case, once=True)
    checks += [dict(c, name="after the errors: " + c["name"]) for c in good]
    checks += cli_errors(case, fn, missing, cut, renamed, scratch)
    return checks


def cli_errors(case, fn, missing, cut, renamed, scratch):
    """The C++ host, tang-cuda-run ($TANG_CUDA_RUN, else build-rt/, built
    here by cmake -S runtime/cuda -B build-rt and carried with its
    libtangcuda.so), on the real driver: the damaged bundles and a device
    that does not exist each exit 1 naming the problem and write no
    output; the good bundle then runs and its outputs match the Python
    host's reference within the case's check. No checks (one saying so)
    when it is not there."""
    import os
    import subprocess
    exe = pathlib.Path(os.environ.get("TANG_CUDA_RUN",
                                      ROOT / "build-rt" / "tang-cuda-run"))
    if not exe.is_file():
        return [{"name": "tang-cuda-run", "ok": True, "max_err": None,
                 "skipped": True, "message": f"{exe} not built: not run"}]
    env = dict(os.environ, LD_LIBRARY_PATH=":".join(
        p for p in (str(exe.parent), os.environ.get("LD_LIBRARY_PATH"))
        if p))
    inputs = [str(case / f"input_{i}.npy")
              for i, a in enumerate(a for a in fn["args"]
                                    if a["role"] == "input")]
    checks = []

    def cli(name, bundle, extra, words, ok_exit=False):
        out = scratch / ("cli-" + name.replace(" ", "-"))
        r = subprocess.run([str(exe), str(bundle), fn["name"], *inputs,
                            "--out", str(out), *extra], capture_output=True,
                           text=True, env=env, timeout=120)
        wrote = sorted(p.name for p in out.glob("*.npy")) \
            if out.is_dir() else []
        if ok_exit:
            ok = r.returncode == 0 and len(wrote) == sum(
                a["role"] == "output" for a in fn["args"])
        else:
            ok = r.returncode == 1 and not wrote and all(
                w in r.stderr for w in words)
        checks.append({"name": "tang-cuda-run: " + name, "ok": ok,
                       "max_err": None, "message": (
                           f"exit {r.returncode}, wrote {wrote}: "
                           + r.stderr.strip())[:300]})
        return out

    cli("bundle without its image", missing, [], ["cannot open", "tang_kernels"])
    cli("truncated PTX", cut, [], ["cannot load", "cuModuleLoadDataEx"])
    cli("a kernel the image lacks", renamed, [], ["no kernel 'main_k0'"])
    cli("a device that does not exist", case / "bundle", ["--device", "99"],
        ["no CUDA device #99"])
    out = cli("the good bundle", case / "bundle", [], [], ok_exit=True)
    # Its outputs against the reference the check case carries.
    for k, a in enumerate(x for x in fn["args"] if x["role"] == "output"):
        got, ref = out / f"output_{k}.npy", case / "ref" / f"output_{k}.npy"
        if got.is_file() and ref.is_file():
            g, e = np.load(got).astype(np.float64), np.load(ref)
            close = g.shape == e.shape and bool(np.isfinite(g).all()) and \
                bool(np.allclose(g, e, rtol=1e-4, atol=1e-5))
            checks.append({"name": f"tang-cuda-run: output {k} against "
                           "the reference", "ok": close, "max_err": None,
                           "message": "" if close else
                           f"largest difference "
                           f"{float(np.nanmax(np.abs(g - e))):.3g}"})
    return checks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--filter", default="", help="only cases containing this")
    ap.add_argument("--cases", nargs="*", help="only these cases")
    harness.add_common_args(ap)
    args = ap.parse_args()
    deadline = harness.Deadline(args.deadline)
    t_start = time.monotonic()
    import torch
    import tang.cuda as tang_cuda
    torch.cuda.init()
    work = ROOT / "gpu-work" / "check"
    cases = sorted(p for p in work.iterdir()
                   if args.filter in p.name and (not args.cases
                                                 or p.name in args.cases)
                   ) if work.exists() else []
    if not cases:
        print(f"no cases under {work}: run scripts/prepare-gpu-check.py and "
              "carry gpu-work", file=sys.stderr)
        return 2
    out = pathlib.Path(args.out) if args.out else harness.out_dir(".")
    path = out / "gpu_check.json"
    report = harness.new_report("gpu_check", torch)
    failures = 0
    # The runtime's refusals are API errors on purpose: not under
    # compute-sanitizer (--sanitize), which reports every one.
    robust = None if args.sanitize else next(
        (c for c in cases if c.name == "softmax-f32"), None)
    names = [c.name for c in cases] + ([RUNTIME_ERRORS] if robust else [])
    harness.prelist(report, names)
    harness.write_report(report, path)
    for case in cases + ([RUNTIME_ERRORS] if robust else []):
        if case == RUNTIME_ERRORS:
            harness.start_case(report, case, path)
            try:
                with tempfile.TemporaryDirectory() as scratch:
                    checks = runtime_errors(torch, tang_cuda, robust,
                                            pathlib.Path(scratch))
                ok, _ = harness.summarize_checks(checks)
                res = harness.case_result(
                    case, checks=checks, status="ok" if ok else "incorrect",
                    note="; ".join(f"{c['name']}: {c.get('message', '')}"
                                   for c in checks if not c["ok"]))
            except Exception as e:
                res = harness.case_result(case, status="failed",
                                          note=harness.short(e))
            failures += res["status"] != "ok"
            harness.set_case(report, res, path)
            print(f"{case:36s} {res['status']:10s} {res['note'][:300]}",
                  flush=True)
            continue
        harness.start_case(report, case.name, path)
        if deadline.passed(2):
            res = harness.case_result(case.name, status="skipped: budget")
        else:
            try:
                checks, same = check_case(torch, tang_cuda, case,
                                          once=args.sanitize)
                if args.sanitize and not checks:
                    checks = [{"name": "ran (no reference carried)",
                               "ok": True, "max_err": None}]
                ok, worst = harness.summarize_checks(checks)
                res = harness.case_result(
                    case.name, checks=checks, max_err=worst,
                    deterministic=same,
                    status="ok" if ok and same else "incorrect")
                if not same:
                    res["note"] = "runs differ or elements unwritten; "
                res["note"] += "; ".join(
                    f"{c['name']}: {c['bad']} of {c['elements']} bad, worst "
                    f"{c['worst']}" for c in checks if not c["ok"])
            except Exception as e:  # report and go on with the other cases
                res = harness.case_result(case.name, status="failed",
                                          note=harness.short(e))
        failures += res["status"] != "ok"
        harness.set_case(report, res, path)
        me = res["max_err"]
        print(f"{case.name:36s} {res['status']:10s} max_err "
              f"{'-' if me is None else format(me, '.3g') if isinstance(me, float) else me}"
              f" {res['note'][:200]}", flush=True)
    harness.finish_report(report, t_start)
    harness.write_report(report, path)
    print(f"{len(cases) - failures} passed, {failures} failed; wrote {path}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
