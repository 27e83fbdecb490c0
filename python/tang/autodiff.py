"""Gradients of tang programs: ``tang.vjp`` (NumPy) and ``tang.autograd``
(a ``torch.autograd.Function``), both from ``tang-opt --tang-grad
split=1``: the forward saves the residuals the derived backward names
(attention's softmax statistics, ...), the backward runs the derived
kernels.

    step = tang.vjp(block)                       # the C backend
    outputs, saved = step.forward(x, w)
    dx, dw = step.backward(saved, dy)

    f = tang.autograd(block, target="cuda")      # on torch tensors
    y = f(x, w); y.sum().backward()

Gradients are taken with respect to every floating-point tensor argument;
integer arguments (token ids) and sizes get none (``None`` in torch).
"""

import hashlib
import os
import tempfile
from typing import Optional, Sequence

from .compiler import (_VERSION, _cache_root, _run, _tool_identity,
                       compile as _compile, find_tool)
from .lang import Function, TangError

__all__ = ["vjp", "VJP", "autograd", "gradient_program", "training_program"]


def gradient_program(fn: Function, sizes: Sequence[str] = ()) -> str:
    """The module of ``fn`` with ``@name_grad``, ``@name_fwd`` (inputs ->
    results, residuals) and ``@name_bwd`` (inputs, results, residuals,
    cotangents -> gradients). ``sizes`` (``argK=N``, ``argK.D=N``) first
    specialise a function with symbolic sizes (--tang-specialize-sizes):
    its gradient is derived at those sizes."""
    text = fn.mlir()
    options = []
    if sizes:
        options.append(f"--tang-specialize-sizes=sizes={','.join(sizes)} "
                       f"function={fn.name}")
    options.append(f"--tang-grad=split=1 function={fn.name}")
    key = hashlib.sha256("\0".join([text, *options, _VERSION]).encode())
    cached = _cache_root() / f"grad-{key.hexdigest()[:24]}.mlir"
    built_by = cached.with_suffix(".id")
    identity = _tool_identity()
    if cached.exists() and (identity is None or (
            built_by.exists() and built_by.read_text() == identity)):
        return cached.read_text()
    with tempfile.TemporaryDirectory(prefix="tang-grad-") as tmp:
        src = os.path.join(tmp, "program.mlir")
        with open(src, "w") as f:
            f.write(text)
        r = _run([find_tool("tang-opt"), src, *options],
                 "tang-opt --tang-grad")
    cached.parent.mkdir(parents=True, exist_ok=True)
    part = cached.with_suffix(".part")
    part.write_text(r.stdout)
    os.replace(part, cached)
    built_by.write_text(identity or "")
    return r.stdout


class VJP:
    """The forward and backward of ``fn`` compiled for ``target``. A
    function with symbolic sizes (``?`` dimensions, ``tang.size``
    arguments) is compiled at the sizes of each call's inputs (once per
    size, cached): its gradient is derived for static extents."""

    def __init__(self, fn: Function, target: str = "c", options: str = ""):
        self.fn = fn
        self.target, self.options = target, options
        fn.mlir()   # traced: its results are known
        kinds = fn.arg_types
        self.num_inputs = len(kinds)
        self.num_results = len(fn.results)
        self.float_results = [k for k, r in enumerate(fn.results)
                              if r.dtype.is_float]
        self.wrt = [k for k, t in enumerate(kinds)
                    if getattr(getattr(t, "dtype", None), "is_float", False)]
        self.size_args = [k for k, t in enumerate(kinds)
                          if not hasattr(t, "dtype")]
        self.symbolic = bool(self.size_args) or any(
            isinstance(d, str) for t in kinds for d in getattr(t, "shape",
                                                               ()))
        self._compiled = {}
        if not self.symbolic:
            self._compiled[()] = self._build(())

    def _build(self, sizes):
        text = gradient_program(self.fn, sizes)
        return (_compile(text, self.target, self.options,
                         function=f"{self.fn.name}_fwd"),
                _compile(text, self.target, self.options,
                         function=f"{self.fn.name}_bwd"))

    def _sizes_of(self, inputs) -> tuple:
        """The argK=N / argK.D=N values the inputs give."""
        if not self.symbolic:
            return ()
        specs = []
        for k, (t, x) in enumerate(zip(self.fn.arg_types, inputs)):
            if k in self.size_args:
                specs.append(f"arg{k}={int(x)}")
                continue
            for d, dim in enumerate(t.shape):
                if isinstance(dim, str):
                    specs.append(f"arg{k}.{d}={x.shape[d]}")
        return tuple(specs)

    def forward(self, *inputs):
        """(results, saved): ``saved`` is what ``backward`` takes."""
        if len(inputs) != self.num_inputs:
            raise TangError(f"{self.fn.name} takes {self.num_inputs} "
                            f"arguments, got {len(inputs)}")
        sizes = self._sizes_of(inputs)
        if sizes not in self._compiled:
            self._compiled[sizes] = self._build(sizes)
        forward_fn, _ = self._compiled[sizes]
        # Specialised, the size arguments are gone.
        tensors = tuple(x for k, x in enumerate(inputs)
                        if k not in self.size_args)
        out = forward_fn(*tensors)
        out = out if isinstance(out, tuple) else (out,)
        results = out[:self.num_results]
        saved = (sizes, tensors, results, out[self.num_results:])
        return (results[0] if len(results) == 1 else results), saved

    def backward(self, saved, *cotangents):
        """The gradients of the floating-point arguments, in order, given
        one cotangent per floating-point result."""
        sizes, inputs, results, residuals = saved
        if len(cotangents) != len(self.float_results):
            raise TangError(f"{self.fn.name} has {len(self.float_results)} "
                            f"floating-point results: give one cotangent "
                            f"each, got {len(cotangents)}")
        _, backward_fn = self._compiled[sizes]
        out = backward_fn(*inputs, *results, *residuals, *cotangents)
        return out if isinstance(out, tuple) else (out,)


def training_program(fn: Function, sizes: Sequence[str] = ()) -> str:
    """A module of ``fn``'s training step alone: ``@name_fwd`` (inputs ->
    results, residuals) and ``@name_bwd`` (inputs, results, residuals,
    cotangents -> gradients) with what they reference at module level
    (monoids), for a bundle that runs the two (bench/prepare_delta.py,
    prepare_moe.py)."""
    text = gradient_program(fn, sizes)
    # The module's own ops before its first function (monoids), then the
    # two entries.
    parts = [text[text.index("{") + 1:text.index("  func.func")]]
    for entry in (f"@{fn.name}_fwd(", f"@{fn.name}_bwd("):
        start = text.index(f"  func.func {entry}")
        end = text.index("\n  }\n", start) + len("\n  }\n")
        parts.append(text[start:end])
    return "module {\n" + "".join(parts) + "}\n"


def vjp(fn: Function, target: str = "c", options: str = "") -> VJP:
    """``fn``'s forward and vector-Jacobian product, compiled."""
    return VJP(fn, target, options)


def autograd(fn: Function, target: Optional[str] = None, options: str = ""):
    """A callable on torch tensors that records ``fn`` for autograd: its
    backward runs the kernels ``--tang-grad`` derives. ``target``: "cuda"
    for CUDA tensors, "c" for CPU tensors (default: "cuda" when torch has a
    GPU)."""
    import torch

    if target is None:
        target = "cuda" if torch.cuda.is_available() else "c"
    step = vjp(fn, target, options)
    on_cpu = target in ("c", "interpreter")

    def to_backend(x):
        if not isinstance(x, torch.Tensor):
            return x
        return x.detach().cpu().contiguous().numpy() if on_cpu else \
            x.detach().contiguous()

    def to_torch(x, like):
        if on_cpu:
            return torch.from_numpy(x).to(like.device)
        return x

    class TangFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            like = next(x for x in inputs if isinstance(x, torch.Tensor))
            results, saved = step.forward(*map(to_backend, inputs))
            ctx.tang_saved = saved
            ctx.like = like
            results = results if isinstance(results, tuple) else (results,)
            out = tuple(to_torch(r, like) for r in results)
            ctx.results = [(o.shape, o.dtype, o.device) for o in out]
            return out[0] if len(out) == 1 else out

        @staticmethod
        def backward(ctx, *douts):
            like = ctx.like

            def cotangent(k):
                if douts[k] is not None:
                    return douts[k]
                shape, dtype, device = ctx.results[k]
                return torch.zeros(shape, dtype=dtype, device=device)
            cot = [to_backend(cotangent(k)) for k in step.float_results]
            grads = step.backward(ctx.tang_saved, *cot)
            full: Sequence = [None] * step.num_inputs
            for k, g in zip(step.wrt, grads):
                full[k] = to_torch(g, like)
            return tuple(full)

    def call(*inputs):
        return TangFunction.apply(*inputs)
    call.vjp = step
    return call
