#!/usr/bin/env python3
"""The Python front end on the GPU: every operator of tang.nn and a
transformer block written with it, compiled here by
bench/prepare_python.py and run through ``tang.compile(..., "cuda")`` on
torch tensors (bundles found in gpu-work/python-cache by their program's
hash: no tang-opt on this machine).

* every operator and the block against PyTorch in float64 from the same
  float32 inputs, on every element (bench/harness.py's rule for f32);
* the block's forward timed against eager PyTorch (f32, TF32 off) and
  ``torch.compile`` (default mode), interleaved rounds;
* the training block, 20 SGD steps through ``tang.autograd`` (the
  derived backward) next to the same steps in PyTorch autograd from the
  same weights: every step's loss within bf16's 2^-8 relative.

Usage (GPU machine): python3 bench/python_check.py
Writes $OUT/python_check.json (bench/harness.py's schema); exits 1 if a
case fails.
"""

import json
import os
import pathlib
import sys
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import harness  # noqa: E402
import python_suite as S  # noqa: E402

import tang  # noqa: E402

STEPS = 20
LR = 0.05


def check(torch, name, got, ref, program_text, sensitivity=None):
    tol = harness.tolerance_for_program("f32", program_text)
    return harness.check_tensor(got, ref.double(), tol, name,
                                sensitivity=sensitivity)


def run_operator(torch, refs, name):
    fn, specs = S.library()[name]
    run = tang.compile(fn, target="cuda")
    xs = S.make_inputs(torch, specs, seed=sum(map(ord, name)))
    got = run(*xs)
    torch.cuda.synchronize()
    xs64 = [x.double() if x.is_floating_point() else x for x in xs]
    ref = refs[name](*xs64)
    sens = S.sensitivities(torch).get(name)
    c = check(torch, "out0 f32", got, ref, fn.mlir(),
              sens(*xs64) if sens else None)
    return harness.case_result(f"nn.{name}", status="ok" if c["ok"] else
                               "incorrect", max_err=c["max_err"],
                               checks=[c])


def run_block(torch, refs, deadline, tf32):
    """The block forward: f32 (TF32 off everywhere), or with its products
    on tensor cores as TF32 (tang's tf32=1, PyTorch's allow_tf32)."""
    run = tang.compile(S.BLOCK, target="cuda",
                       options="tf32=1" if tf32 else "")
    xs = S.block_inputs(torch, S.T, S.D, S.F, seed=7)
    got = run(*xs)
    ref = refs["block"](*[x.double() for x in xs], heads=S.H)
    K, R = harness.program_shape(S.BLOCK.mlir())
    tol = harness.Tolerance("f32", reduction=K, roundings=R, acc="f32",
                            operand="tf32" if tf32 else None)
    c = harness.check_tensor(got, ref, tol, "out0 f32")
    label = "tf32" if tf32 else "f32"
    res = harness.case_result(f"block forward {label} (T=512, D=512, 8 heads, "
                              "F=1536)", status="ok" if c["ok"] else
                              "incorrect", max_err=c["max_err"], checks=[c])
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32

    def eager(k=0):
        return refs["block"](*xs, heads=S.H)
    compiled = torch.compile(eager)
    compiled()
    timed = harness.interleaved_rounds(
        torch, [("tang", lambda k=0: run(*xs)), ("eager", eager),
                ("torch.compile", compiled)], deadline=deadline)
    res.update(harness.compare("tang", timed))
    torch._dynamo.reset()
    return res


def run_fx_block(torch, deadline):
    """torch.compile(module, backend=tang.fx.backend) of the Llama-style
    block module, under no_grad: no graph may fall back to eager, the
    output is checked against the module in float64 on every element, and
    timed against eager and torch.compile's default backend."""
    import copy
    from tang import fx
    t_, d, h, f = S.FX_SIZES["gpu"]
    torch.backends.cuda.matmul.allow_tf32 = False
    m = S.torch_block_module(torch, t_, d, h, f, seed=21).cuda()
    x = S.make_inputs(torch, [("f", (1, t_, d))], seed=22)[0]
    fx.fallbacks.clear()
    torch._dynamo.reset()
    with torch.no_grad():
        ours = torch.compile(m, backend=fx.backend)
        got = ours(x)
        ref = copy.deepcopy(m).double()(x.double())
        theirs = torch.compile(copy.deepcopy(m))
        theirs(x)
        # The bound of the program the backend made of this graph (as
        # prepare_python.py converted it: the captured graph).
        graph = json.loads((S.ROOT / "bench" / "inputs" /
                            "fx_block_gpu.json").read_text())
        tol = harness.tolerance_for_program(
            "f32", fx.convert(graph, "tang_graph").mlir())
        c = harness.check_tensor(got, ref, tol, "out0 f32")
        ok = c["ok"] and not fx.fallbacks
        res = harness.case_result(
            f"torch.compile(backend=tang) block (T={t_}, D={d})",
            status="ok" if ok else "incorrect", max_err=c["max_err"],
            checks=[c], note="fallbacks: " + ("; ".join(
                r for _, r in fx.fallbacks) or "none"))
        timed = harness.interleaved_rounds(
            torch, [("tang", lambda k=0: ours(x)), ("eager", lambda k=0: m(x)),
                    ("torch.compile", lambda k=0: theirs(x))],
            deadline=deadline)
    res.update(harness.compare("tang", timed))
    torch._dynamo.reset()
    return res


def run_torch_op(torch, refs):
    """tang.torch_op: nn.rms_norm as the custom op tang::rms_norm, inside a
    torch.compile'd function, and differentiated through (the derived
    backward) against PyTorch autograd in float64."""
    fn, specs = S.library()["rms_norm"]
    op = tang.torch_op(fn, differentiable=True)
    x, w = S.make_inputs(torch, specs, seed=31)
    torch._dynamo.reset()
    f = torch.compile(lambda a, b: op(a, b) * 2.0 + 1.0)
    got = f(x, w)
    ref = refs["rms_norm"](x.double(), w.double()) * 2.0 + 1.0
    checks = [check(torch, "torch.compile(op) f32", got, ref, fn.mlir())]
    xg, wg = (t.clone().requires_grad_(True) for t in (x, w))
    op(xg, wg).sum().backward()
    xr, wr = (t.double().requires_grad_(True) for t in (x, w))
    refs["rms_norm"](xr, wr).sum().backward()
    grad_tol = harness.Tolerance("f32", reduction=x.shape[1], roundings=8,
                                 acc="f32")
    checks += [harness.check_tensor(xg.grad, xr.grad, grad_tol, "dx f32"),
               harness.check_tensor(wg.grad, wr.grad,
                                    harness.Tolerance(
                                        "f32", reduction=x.numel(),
                                        roundings=8, acc="f32"), "dw f32")]
    torch._dynamo.reset()
    ok = all(c["ok"] for c in checks)
    return harness.case_result(
        "tang.torch_op rms_norm: in torch.compile, and its backward",
        status="ok" if ok else "incorrect",
        max_err=max(c["max_err"] or 0 for c in checks), checks=checks)


def train(torch, step_fn, params, x, target):
    losses = []
    for _ in range(STEPS):
        y = step_fn(x, *params)
        loss = ((y - target) ** 2).mean()
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= LR * p.grad
        losses.append(float(loss))
    return losses


def run_training(torch, refs):
    f = tang.autograd(S.TRAIN_BLOCK, target="cuda")
    xs = S.block_inputs(torch, S.TT, S.TD, S.TF, seed=11)
    target = S.make_inputs(torch, [("f", (S.TT, S.TD))], seed=12)[0]
    x, weights = xs[0], xs[1:]
    ours = [w.clone().requires_grad_(True) for w in weights]
    theirs = [w.clone().requires_grad_(True) for w in weights]
    torch.backends.cuda.matmul.allow_tf32 = False
    l_tang = train(torch, f, ours, x, target)
    l_torch = train(torch, lambda x_, *p: refs["block"](x_, *p,
                                                       heads=S.TH),
                    theirs, x, target)
    worst = max(abs(a - b) / abs(b) for a, b in zip(l_tang, l_torch))
    bound = 2.0 ** -8
    ok = worst <= bound and all(map(lambda v: v == v, l_tang))
    return harness.case_result(
        f"autograd: {STEPS} SGD steps of the block (T=128, D=128)",
        status="ok" if ok else "incorrect", max_err=worst / bound,
        note=f"loss tang {l_tang[0]:.6g} -> {l_tang[-1]:.6g}, torch "
             f"{l_torch[0]:.6g} -> {l_torch[-1]:.6g}; worst relative "
             f"difference {worst:.2e} (bound 2^-8)",
        checks=[{"name": f"loss step {k}", "ok": abs(a - b) <= bound *
                 abs(b), "tang": a, "torch": b}
                for k, (a, b) in enumerate(zip(l_tang, l_torch))])


def main():
    import torch
    out = pathlib.Path(os.environ.get("OUT", "."))
    path = out / "python_check.json"
    rep = harness.new_report("python_check", torch)
    names = [f"nn.{n}" for n in S.library()]
    cases = ([(n, lambda n=n: run_operator(torch, refs, n[3:]))
              for n in names]
             + [(f"block {p}", lambda p=p: run_block(
                 torch, refs, time.monotonic() + 40, p == "tf32"))
                for p in ("f32", "tf32")]
             + [("torch.compile block", lambda: run_fx_block(
                 torch, time.monotonic() + 40))]
             + [("torch_op", lambda: run_torch_op(torch, refs))]
             + [("training", lambda: run_training(torch, refs))])
    refs = S.torch_references(torch)
    failed = 0
    for label, go in cases:
        try:
            res = go()
        except Exception as e:
            traceback.print_exc()
            res = harness.case_result(label, status=f"failed: {e}")
        harness.set_case(rep, res, path)
        failed += res["status"] != "ok"
        print(f"python_check {res['case']}: {res['status']} max_err "
              f"{res['max_err']} tang_ms {res.get('tang_ms')} peers "
              f"{res.get('peers')} {res.get('note', '')}", flush=True)
    harness.write_report(rep, path)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
