"""Compiled tang functions as PyTorch operators: ``tang.torch_op``.

    rms = tang.torch_op(rmsnorm)            # torch.ops.tang.rmsnorm
    y = rms(x, w)                           # eager
    f = torch.compile(lambda x, w: rms(x, w) * 2)   # inside a compiled graph

The operator is a ``torch.library`` custom op (``tang::<name>``) that runs
the function's compiled bundle (CUDA tensors) or its C library (CPU
tensors, through DLPack); it has a fake (meta) implementation from the
function's result types, so ``torch.compile`` traces through it as one
opaque node, and, with ``differentiable=True``, an autograd formula from
``tang.vjp`` (the derived backward kernels).
"""

from typing import Optional

from .autodiff import vjp as _vjp
from .compiler import compile as _compile
from .lang import Function, TangError

__all__ = ["torch_op"]

_TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16",
                 "f64": "float64", "i32": "int32", "i8": "int8", "i1": "bool"}


def torch_op(fn: Function, name: Optional[str] = None,
             differentiable: bool = False):
    """``fn`` registered as the custom op ``tang::<name>`` (default: the
    function's name); returns the op. Static shapes only (the fake
    implementation gives the results' shapes)."""
    import torch

    name = name or fn.name
    fn.mlir()
    results = fn.results
    for r in results:
        if any(not isinstance(d, int) for d in r.shape):
            raise TangError(f"tang.torch_op: @{fn.name} has a result of "
                            "symbolic shape; custom ops need static ones")
    n = len(fn.params)
    params = [f"x{k}" for k in range(n)]
    ret = ("torch.Tensor" if len(results) == 1 else
           f"tuple[{', '.join(['torch.Tensor'] * len(results))}]")
    compiled = {}

    def run(*xs):
        target = "cuda" if xs and xs[0].is_cuda else "c"
        if target not in compiled:
            compiled[target] = _compile(fn, target=target)
        if target == "cuda":
            return compiled[target](*[x.contiguous() for x in xs])
        out = compiled[target](*[x.detach().contiguous() for x in xs])
        out = out if isinstance(out, tuple) else (out,)
        out = tuple(torch.from_numpy(o) for o in out)
        return out[0] if len(out) == 1 else out

    def fake(*xs):
        dev = xs[0].device if xs else None
        out = tuple(torch.empty(tuple(r.shape), device=dev,
                                dtype=getattr(torch,
                                              _TORCH_DTYPES[r.dtype.name]))
                    for r in results)
        return out[0] if len(out) == 1 else out

    # custom_op reads the annotations of a function of named parameters.
    src = (f"def {name}({', '.join(p + ': torch.Tensor' for p in params)})"
           f" -> {ret}:\n    return run({', '.join(params)})\n")
    scope = {"torch": torch, "run": run}
    exec(src, scope)
    op = torch.library.custom_op(f"tang::{name}", mutates_args=())(
        scope[name])
    op.register_fake(fake)
    if differentiable:
        steps = {}

        def setup_context(ctx, inputs, output):
            ctx.tang_inputs = inputs

        def backward(ctx, *grads):
            xs = ctx.tang_inputs
            target = "cuda" if xs[0].is_cuda else "c"
            if target not in steps:
                steps[target] = _vjp(fn, target=target)
            step = steps[target]
            conv = (lambda x: x) if target == "cuda" else \
                (lambda x: x.detach().cpu().numpy())
            _, saved = step.forward(*[conv(x.contiguous()) for x in xs])
            gs = step.backward(saved, *[conv(g.contiguous()) for g in
                                        grads])
            if target != "cuda":
                gs = [torch.from_numpy(g) for g in gs]
            full = [None] * len(xs)
            for k, g in zip(step.wrt, gs):
                full[k] = g
            return tuple(full)
        op.register_autograd(backward, setup_context=setup_context)
    return op
