"""tang: the Python front end of the tang tensor compiler.

Write programs as math (``tang.function``, ``tang.compute``, reductions,
scans, gathers, scatters: tang.lang), get tang IR text, compile and run it
(tang.compile), or load a CUDA bundle and run it on PyTorch tensors
(tang.cuda). Operators written with it: tang.nn.

``torch.compile(model, backend="tang")``: tang.fx (registered when the
package is pip-installed, or by ``tang.fx.register()``).

Importing ``tang`` needs neither PyTorch nor a GPU.
"""

from . import autodiff, cuda, fx, lang, models, nn, sizes
from .autodiff import VJP, autograd, vjp
from .compiler import Compiled, compile, find_tool
from .torch_ops import torch_op
from .lang import (DType, Function, Sym, Monoid, TangError, abs, argmax, argmin,
                   bf16, compute, cos, erf, exp, f16, f32, f64, function, i1,
                   i8, i32, index_value, log, max, maximum, min, minimum,
                   module, pow, prod, reduce, rsqrt, scan, scatter, sigmoid,
                   sin, size, sqrt, sum, tanh, tensor_scan, where)

__version__ = "0.2.0"

__all__ = [
    "VJP", "autodiff", "fx", "torch_op", "autograd", "vjp", "Compiled", "compile", "find_tool", "nn", "DType", "Sym", "Function", "Monoid", "TangError", "abs", "argmax", "argmin",
    "bf16", "compute", "cos", "cuda", "erf", "exp", "f16", "f32", "f64",
    "function", "i1", "i8", "i32", "index_value", "lang", "log", "max", "models",
    "maximum", "min", "minimum", "module", "pow", "prod", "reduce", "rsqrt",
    "scan", "scatter", "sigmoid", "sin", "size", "sizes", "sqrt", "sum",
    "tanh", "tensor_scan", "where",
]
