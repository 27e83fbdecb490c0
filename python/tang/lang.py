"""Write tang programs as math in Python: the builder behind ``tang.function``.

Index variables are Python objects; arithmetic on them builds affine
expressions; ``X[i, k]`` reads a tensor (a ``tang.read``), ``E[tok, d]``
with ``tok`` a value computed from data gathers (``tang.gather``);
reductions name their extent and monoid. The result is tang IR text
(``Function.mlir()``, ``tang.module(...)``) that ``tang-opt`` parses,
every operation located at the Python line that made it, so a diagnostic
of the verifier or of a pass points at the user's code.

    import tang
    from tang import f32

    @tang.function
    def rmsnorm(x: f32["M", 64], w: f32[64]):
        M, D = x.shape
        ms = tang.compute((M,), lambda i: tang.sum(D, lambda k: x[i, k] * x[i, k]) / D)
        return tang.compute((M, D), lambda i, d: x[i, d] * tang.rsqrt(ms[i] + 1e-6) * w[d])

    print(rmsnorm.mlir())

Shapes hold ints, and names for sizes not known until a run (`"M"`, a
``?`` dimension: one compiled program serves every size). An argument
annotated ``tang.size`` is an ``index`` argument (a position in a cache).
Sizes are affine: ``L + 1``, ``2 * L``.

A Python function that is not expressible is an error in Python terms at
the offending line: a branch on a traced value (``if x[i] > 0:``), a value
of one float type mixed with another (``.astype`` converts), an index
outside a tensor's rank.
"""

import inspect
import itertools
import math
import os
import threading
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

__all__ = [
    "DType", "Sym", "f64", "f32", "f16", "bf16", "i32", "i8", "i1", "size",
    "TangError", "Function", "function", "module", "compute", "sum", "prod",
    "max", "min", "argmax", "argmin", "reduce", "scan", "scatter", "Monoid",
    "tensor_scan",
    "where", "exp", "log", "tanh", "sqrt", "rsqrt", "erf", "sigmoid", "abs",
    "sin", "cos", "maximum", "minimum", "pow", "index_value",
]


class TangError(Exception):
    """A program that cannot be written in tang, located at the user's
    line: ``file.py:12: message``."""


# ---------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------

class DType:
    """An element type. ``f32[M, 64]`` is the type of a tensor argument."""

    def __init__(self, name: str, bits: int, is_float: bool):
        self.name, self.bits, self.is_float = name, bits, is_float

    def __repr__(self):
        return f"tang.{self.name}"

    def __getitem__(self, shape) -> "TensorType":
        if not isinstance(shape, tuple):
            shape = (shape,)
        return TensorType(tuple(shape), self)


f64 = DType("f64", 64, True)
f32 = DType("f32", 32, True)
f16 = DType("f16", 16, True)
bf16 = DType("bf16", 16, True)
i32 = DType("i32", 32, False)
i8 = DType("i8", 8, False)
i1 = DType("i1", 1, False)
DTYPES = {d.name: d for d in (f64, f32, f16, bf16, i32, i8, i1)}


class Sym:
    """A size known only when the program runs: ``L = tang.Sym("L")``, then
    ``f32[L, 64]`` (a ``?`` dimension) and ``tang.compute((L,), ...)``. A
    plain string (``f32["L", 64]``) names one too."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"tang.Sym({self.name!r})"

    def _size(self) -> "Size":
        bound = getattr(_state, "syms", None) or {}
        if self.name not in bound:
            raise _error(f"the size {self.name} is not a dimension of an "
                         "argument of the traced function")
        return bound[self.name]

    # A symbol used as a size is the size it is bound to.
    def __add__(self, o):
        return self._size() + o

    __radd__ = __add__

    def __sub__(self, o):
        return self._size() - o

    def __rsub__(self, o):
        return o - self._size()

    def __mul__(self, k):
        return self._size() * k

    __rmul__ = __mul__


class TensorType:
    def __init__(self, shape: tuple, dtype: DType):
        shape = tuple(d.name if isinstance(d, Sym) else d for d in shape)
        for s in shape:
            if not (isinstance(s, (int, str)) and (not isinstance(s, int)
                                                   or s >= 1)):
                raise TangError(f"a dimension is an int >= 1 or a size name, "
                                f"got {s!r}")
        self.shape, self.dtype = shape, dtype

    def __repr__(self):
        return f"{self.dtype!r}[{', '.join(map(repr, self.shape))}]"


class _SizeArg:
    """The annotation of an ``index`` argument: ``pos: tang.size``."""

    def __repr__(self):
        return "tang.size"


size = _SizeArg()


# ---------------------------------------------------------------------------
# Tracing state and locations
# ---------------------------------------------------------------------------

_HERE = os.path.dirname(os.path.abspath(__file__))
_state = threading.local()


def _user_frame():
    """The innermost frame outside this package: the user's line."""
    f = inspect.currentframe()
    while f is not None and os.path.dirname(
            os.path.abspath(f.f_code.co_filename)) == _HERE:
        f = f.f_back
    return f


def _where() -> Tuple[str, int]:
    f = _user_frame()
    if f is None:
        return ("<unknown>", 0)
    return (f.f_code.co_filename, f.f_lineno)


def _error(message: str) -> TangError:
    path, line = _where()
    return TangError(f"{path}:{line}: {message}")


class located:
    """Within it, every operation is located at ``name`` (an MLIR name
    location) instead of the user's line: what a converter writes for a
    node of another graph (tang.fx)."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        self.prev = getattr(_state, "location", None)
        escaped = self.name.replace("\\", "\\\\").replace('"', '\\"')
        _state.location = f'loc("{escaped}")'

    def __exit__(self, *exc):
        _state.location = self.prev


def _loc() -> str:
    fixed = getattr(_state, "location", None)
    if fixed:
        return fixed
    path, line = _where()
    escaped = path.replace("\\", "\\\\").replace('"', '\\"')
    return f'loc("{escaped}":{line}:1)'


class _Region:
    """The lines of one block being written, and its indices."""

    def __init__(self, indices):
        self.lines: List[str] = []
        self.indices = indices


class _Builder:
    def __init__(self):
        self.counter = itertools.count()
        self.regions: List[_Region] = []
        self.monoids: Dict[str, "Monoid"] = {}
        self.function_lines: List[str] = []

    def fresh(self, hint="v") -> str:
        # A dot: never a Python identifier, so never an argument's name.
        return f"%{hint}.{next(self.counter)}"

    def emit(self, line: str):
        target = self.regions[-1].lines if self.regions else \
            self.function_lines
        target.append(line)

    @property
    def in_body(self) -> bool:
        return bool(self.regions)


def _builder() -> _Builder:
    b = getattr(_state, "builder", None)
    if b is None:
        raise _error("tang values exist only while a tang.function is "
                     "traced (call them inside the function)")
    return b


# ---------------------------------------------------------------------------
# Sizes: affine forms over the function's size values
# ---------------------------------------------------------------------------

class Size:
    """A size: constant + sum of coefficient * size value (an SSA index
    value of the function: an index argument, a ``tensor.dim``)."""

    def __init__(self, constant=0, terms=None):
        self.constant = constant
        self.terms: Dict[str, int] = dict(terms or {})

    @staticmethod
    def of(x) -> "Size":
        if isinstance(x, Size):
            return x
        if isinstance(x, Sym):
            return x._size()
        if isinstance(x, int) and not isinstance(x, bool):
            return Size(x)
        raise _error(f"a size is an int or a tang size, got {x!r}")

    def is_static(self):
        return not any(self.terms.values())

    def __add__(self, o):
        o = Size.of(o)
        terms = dict(self.terms)
        for k, v in o.terms.items():
            terms[k] = terms.get(k, 0) + v
        return Size(self.constant + o.constant, terms)

    __radd__ = __add__

    def __neg__(self):
        return Size(-self.constant, {k: -v for k, v in self.terms.items()})

    def __sub__(self, o):
        return self + (-Size.of(o))

    def __rsub__(self, o):
        return Size.of(o) - self

    def __mul__(self, k):
        if not isinstance(k, int):
            raise _error("a size times a size is not affine: sizes multiply "
                         "by constants only")
        return Size(self.constant * k, {n: v * k for n, v in
                                        self.terms.items()})

    __rmul__ = __mul__

    def __int__(self):
        if not self.is_static():
            raise _error("this size is known only when the program runs")
        return self.constant

    def __index__(self):
        return int(self)

    def __repr__(self):
        parts = [f"{v}*{k}" if v != 1 else k for k, v in self.terms.items()
                 if v]
        if self.constant or not parts:
            parts.append(str(self.constant))
        return " + ".join(parts)

    def value(self) -> str:
        """An SSA index value (or a constant's text) holding the size,
        emitted at function level."""
        b = _builder()
        if self.is_static():
            return str(self.constant)
        key = ("size", tuple(sorted(self.terms.items())), self.constant)
        cache = _state.sizes
        if key in cache:
            return cache[key]
        acc = None
        for name, coeff in sorted(self.terms.items()):
            if not coeff:
                continue
            term = name
            if coeff != 1:
                c = _index_constant(coeff)
                term = b.fresh("s")
                b.function_lines.append(
                    f"{term} = arith.muli {name}, {c} : index")
            if acc is None:
                acc = term
            else:
                n = b.fresh("s")
                b.function_lines.append(f"{n} = arith.addi {acc}, {term} : "
                                        "index")
                acc = n
        if self.constant:
            c = _index_constant(self.constant)
            n = b.fresh("s")
            b.function_lines.append(f"{n} = arith.addi {acc}, {c} : index")
            acc = n
        cache[key] = acc
        return acc


def _index_constant(v: int) -> str:
    cache = _state.sizes
    key = ("const", v)
    if key not in cache:
        name = _builder().fresh("c")
        _builder().function_lines.append(
            f"{name} = arith.constant {v} : index")
        cache[key] = name
    return cache[key]


def _extent_text(e) -> str:
    s = Size.of(e)
    return str(s.constant) if s.is_static() else s.value()


def _static_or_q(e) -> str:
    s = Size.of(e)
    return str(s.constant) if s.is_static() else "?"


# ---------------------------------------------------------------------------
# Index expressions (affine in the iteration indices)
# ---------------------------------------------------------------------------

class Index:
    """An affine expression of iteration indices: ``i``, ``2 * i + k - 3``,
    ``c // 64``, ``c % 64``. Comparing two gives a mask (``j <= i``); using
    one as a number gives its value (``tang.index_value``)."""

    def __init__(self, text: str, prec: int = 3):
        self.text, self.prec = text, prec   # 3: atom, 2: product, 1: sum

    def _wrap(self, prec):
        return self.text if self.prec >= prec else f"({self.text})"

    def __add__(self, o):
        if isinstance(o, Value):
            return index_value(self, o.dtype) + o
        o = _as_index(o)
        if o.text.startswith("-"):
            return Index(f"{self.text} - {o.text[1:]}", 1)
        return Index(f"{self.text} + {o._wrap(2)}", 1)

    def __radd__(self, o):
        if isinstance(o, Value):
            return o + index_value(self, o.dtype)
        return _as_index(o) + self

    def __sub__(self, o):
        if isinstance(o, Value):
            return index_value(self, o.dtype) - o
        o = _as_index(o)
        if isinstance(o.text, str) and o.text.lstrip("-").isdigit():
            v = int(o.text)
            return Index(f"{self.text} - {v}" if v >= 0
                         else f"{self.text} + {-v}", 1)
        return Index(f"{self.text} - {o._wrap(2)}", 1)

    def __rsub__(self, o):
        if isinstance(o, Value):
            return o - index_value(self, o.dtype)
        return _as_index(o) - self

    def __neg__(self):
        return Index(f"-{self._wrap(3)}", 2)

    def __mul__(self, k):
        if isinstance(k, Value):
            return index_value(self, k.dtype) * k
        if not isinstance(k, int):
            raise _error("an index times an index is not affine: indices "
                         "multiply by int constants")
        return Index(f"{self._wrap(2)} * {k}", 2)

    def __rmul__(self, k):
        if isinstance(k, Value):
            return k * index_value(self, k.dtype)
        return self * k

    def __floordiv__(self, k):
        if not isinstance(k, int) or k <= 0:
            raise _error("an index is divided by a positive int constant")
        return Index(f"{self._wrap(2)} floordiv {k}", 2)

    def __mod__(self, k):
        if not isinstance(k, int) or k <= 0:
            raise _error("an index is taken modulo a positive int constant")
        return Index(f"{self._wrap(2)} mod {k}", 2)

    def __truediv__(self, o):
        return index_value(self, _float_of(o)) / o

    def _cmp(self, o, pred):
        a = index_value(self, i32)
        bv = index_value(o, i32) if isinstance(o, (Index, int)) else o
        return a._cmp(bv, pred)

    def __lt__(self, o):
        return self._cmp(o, "lt")

    def __le__(self, o):
        return self._cmp(o, "le")

    def __gt__(self, o):
        return self._cmp(o, "gt")

    def __ge__(self, o):
        return self._cmp(o, "ge")

    def eq(self, o) -> "Value":
        """The mask ``self == o`` (``==`` is Python's identity)."""
        return self._cmp(o, "eq")

    def ne(self, o) -> "Value":
        return self._cmp(o, "ne")

    def __bool__(self):
        raise _error("an index has no truth value while tracing: use "
                     "tang.where(mask, a, b) instead of if/else")

    def __repr__(self):
        return f"Index({self.text})"


def _as_index(x) -> Index:
    if isinstance(x, Index):
        return x
    if isinstance(x, bool):
        raise _error("a bool is not an index")
    if isinstance(x, int):
        return Index(str(x))
    raise _error(f"expected an index expression or an int, got {x!r}")


def _float_of(o):
    return o.dtype if isinstance(o, Value) and o.dtype.is_float else f32


# ---------------------------------------------------------------------------
# Scalar values (SSA values of a body)
# ---------------------------------------------------------------------------

_FLOAT_BITS = {"f32": ("f", 0xFF800000, 0x7F800000, 0x7FC00000),
               "f16": ("e", 0xFC00, 0x7C00, 0x7E00),
               "bf16": (None, 0xFF80, 0x7F80, 0x7FC0),
               "f64": ("d", 0xFFF0000000000000, 0x7FF0000000000000,
                       0x7FF8000000000000)}


def _float_literal(v: float, dtype: DType) -> str:
    if math.isnan(v) or math.isinf(v):
        _, ninf, pinf, nan = _FLOAT_BITS[dtype.name]
        bits = nan if math.isnan(v) else (pinf if v > 0 else ninf)
        return f"0x{bits:X}"
    return f"{float(v):.17e}"


def constant(v, dtype: DType) -> "Value":
    """The constant ``v`` of ``dtype``."""
    b = _builder()
    name = b.fresh("k")
    if dtype.is_float:
        text = _float_literal(float(v), dtype)
    elif dtype is i1:  # A bool attribute carries its type.
        b.emit(f"{name} = arith.constant {'true' if v else 'false'} "
               f"{_loc()}")
        return Value(name, dtype)
    else:
        text = str(int(v))
    b.emit(f"{name} = arith.constant {text} : {dtype.name} {_loc()}")
    return Value(name, dtype)


class Value:
    """A scalar computed in a body: arithmetic, comparisons (masks),
    ``.astype``. Python numbers take the other operand's type."""

    def __init__(self, name: str, dtype: DType):
        self.name, self.dtype = name, dtype

    def __repr__(self):
        return f"Value({self.name}: {self.dtype.name})"

    def __bool__(self):
        raise _error("a traced value has no truth value: data-dependent "
                     "control flow is not expressible; use "
                     "tang.where(mask, a, b)")

    def astype(self, dtype: DType) -> "Value":
        if dtype is self.dtype:
            return self
        a, t = self.dtype, dtype
        if a.is_float and t.is_float:
            op = "arith.extf" if t.bits > a.bits else "arith.truncf"
            if a.bits == t.bits:   # f16 <-> bf16: through f32
                return self.astype(f32).astype(t)
        elif a.is_float:
            op = "arith.fptosi"
        elif t.is_float:
            op = "arith.uitofp" if a is i1 else "arith.sitofp"
        else:
            op = "arith.extsi" if t.bits > a.bits else "arith.trunci"
            if a is i1:
                op = "arith.extui"
        return _op(op, [self], t, f" : {a.name} to {t.name}")

    def _binary(self, o, fop, iop, reverse=False):
        o = _coerce(o, self.dtype)
        if o.dtype is not self.dtype:
            raise _error(f"mixing {self.dtype.name} and {o.dtype.name}: "
                         "convert one with .astype(...)")
        a, c = (o, self) if reverse else (self, o)
        op = fop if self.dtype.is_float else iop
        if op is None:
            raise _error(f"no {fop} on {self.dtype.name}")
        return _op(op, [a, c], self.dtype)

    def __add__(self, o):
        return self._binary(o, "arith.addf", "arith.addi")

    def __radd__(self, o):
        return self._binary(o, "arith.addf", "arith.addi", True)

    def __sub__(self, o):
        return self._binary(o, "arith.subf", "arith.subi")

    def __rsub__(self, o):
        return self._binary(o, "arith.subf", "arith.subi", True)

    def __mul__(self, o):
        return self._binary(o, "arith.mulf", "arith.muli")

    def __rmul__(self, o):
        return self._binary(o, "arith.mulf", "arith.muli", True)

    def __truediv__(self, o):
        return self._binary(o, "arith.divf", "arith.divsi")

    def __rtruediv__(self, o):
        return self._binary(o, "arith.divf", "arith.divsi", True)

    def __floordiv__(self, o):
        if self.dtype.is_float:
            raise _error("// on floats: use tang.floor(a / b)")
        return self._binary(o, None, "arith.floordivsi")

    def __mod__(self, o):
        return self._binary(o, "arith.remf", "arith.remsi")

    def __neg__(self):
        if self.dtype.is_float:
            return _op("arith.negf", [self], self.dtype)
        return constant(0, self.dtype) - self

    def __pow__(self, o):
        if isinstance(o, int) and o == 2:
            return self * self
        return pow(self, o)

    def _cmp(self, o, pred):
        o = _coerce(o, self.dtype)
        if o.dtype is not self.dtype:
            raise _error(f"comparing {self.dtype.name} with {o.dtype.name}: "
                         "convert one with .astype(...)")
        if self.dtype.is_float:
            return _op("arith.cmpf", [self, o], i1, prefix=f"o{pred}")
        p = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge", "eq": "eq",
             "ne": "ne"}[pred]
        return _op("arith.cmpi", [self, o], i1, prefix=p)

    def __lt__(self, o):
        return self._cmp(o, "lt")

    def __le__(self, o):
        return self._cmp(o, "le")

    def __gt__(self, o):
        return self._cmp(o, "gt")

    def __ge__(self, o):
        return self._cmp(o, "ge")

    def eq(self, o) -> "Value":
        """``self == o`` as a mask (``==`` stays Python identity)."""
        return self._cmp(o, "eq")

    def ne(self, o) -> "Value":
        return self._cmp(o, "ne")

    def __and__(self, o):
        return self._binary(o, None, "arith.andi")

    def __or__(self, o):
        return self._binary(o, None, "arith.ori")

    def __invert__(self):
        if self.dtype is not i1:
            raise _error("~ negates a mask")
        return _op("arith.xori", [self, constant(True, i1)], i1)

    __hash__ = object.__hash__


def _coerce(x, dtype: DType) -> Value:
    if isinstance(x, Value):
        return x
    if isinstance(x, Index):
        return index_value(x, dtype)
    if isinstance(x, _Reduction):
        return x.value()
    if isinstance(x, Size):
        if x.is_static():
            return constant(x.constant, dtype)
        return size_value(x, dtype)
    if isinstance(x, bool):
        return constant(x, i1)
    if isinstance(x, (int, float)):
        if isinstance(x, float) and not dtype.is_float:
            raise _error(f"the float {x!r} with an {dtype.name} value: "
                         "convert with .astype(...)")
        return constant(x, dtype)
    raise _error(f"expected a tang value or a number, got {type(x).__name__}")


def _op(op: str, operands: Sequence[Value], result: DType, suffix="",
        prefix=None) -> Value:
    b = _builder()
    name = b.fresh()
    args = ", ".join(v.name for v in operands)
    if prefix:
        args = f"{prefix}, {args}"
    if not suffix:
        suffix = f" : {operands[0].dtype.name}"
    b.emit(f"{name} = {op} {args}{suffix} {_loc()}")
    return Value(name, result)


def index_value(i, dtype: DType = i32) -> Value:
    """The value of an index expression as a number (``tang.index``)."""
    i = _as_index(i)
    b = _builder()
    name = b.fresh("n")
    b.emit(f"{name} = tang.index [{i.text}] : {dtype.name} {_loc()}")
    return Value(name, dtype)


def size_value(s, dtype: DType = i32) -> Value:
    """A size (``L``, ``L + 1``) as a number in a body."""
    s = Size.of(s)
    if s.is_static():
        return constant(s.constant, dtype)
    v = s.value()
    b = _builder()
    n = b.fresh("n")
    b.emit(f"{n} = arith.index_cast {v} : index to i32 {_loc()}")
    out = Value(n, i32)
    return out.astype(dtype) if dtype is not i32 else out


def _unary(op):
    def f(x: Value) -> Value:
        x = _coerce(x, f32)
        if not x.dtype.is_float:
            raise _error(f"{op} takes a float, got {x.dtype.name}")
        return _op(op, [x], x.dtype)
    f.__name__ = op.split(".")[1]
    f.__doc__ = f"``{op}`` of a float value."
    return f


exp = _unary("math.exp")
log = _unary("math.log")
tanh = _unary("math.tanh")
sqrt = _unary("math.sqrt")
rsqrt = _unary("math.rsqrt")
erf = _unary("math.erf")
abs = _unary("math.absf")
sin = _unary("math.sin")
cos = _unary("math.cos")
floor = _unary("math.floor")


def sigmoid(x) -> Value:
    x = _coerce(x, f32)
    return 1.0 / (1.0 + exp(-x))


def maximum(a, b) -> Value:
    a = _coerce(a, _float_of(b))
    return a._binary(b, "arith.maximumf", "arith.maxsi")


def minimum(a, b) -> Value:
    a = _coerce(a, _float_of(b))
    return a._binary(b, "arith.minimumf", "arith.minsi")


def pow(a, b) -> Value:
    a = _coerce(a, _float_of(b))
    return a._binary(b, "math.powf", None)


def where(mask, a, b) -> Value:
    """``a`` where ``mask`` holds, else ``b`` (``arith.select``)."""
    if isinstance(mask, bool):
        raise _error("tang.where's mask is a Python bool, fixed while "
                     "tracing (indices compared with == or !=? use "
                     "i.eq(j) / i.ne(j))")
    mask = _coerce(mask, i1)
    if mask.dtype is not i1:
        raise _error("tang.where's mask is a comparison (i1)")
    dtype = (a.dtype if isinstance(a, Value) else
             b.dtype if isinstance(b, Value) else f32)
    a, b = _coerce(a, dtype), _coerce(b, dtype)
    if a.dtype is not b.dtype:
        raise _error(f"tang.where of {a.dtype.name} and {b.dtype.name}")
    bld = _builder()
    name = bld.fresh()
    bld.emit(f"{name} = arith.select {mask.name}, {a.name}, {b.name} : "
             f"{a.dtype.name} {_loc()}")
    return Value(name, a.dtype)


# ---------------------------------------------------------------------------
# Tensors
# ---------------------------------------------------------------------------

class Tensor:
    """A function-level tensor: an argument or a computed one. ``T[i, k]``
    reads it; a coordinate that is an integer value computed from data
    gathers (``tang.gather``, out of range: ``policy``)."""

    def __init__(self, name: str, shape: tuple, dtype: DType,
                 policy: str = "trap", fill=None):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.policy, self.fill = policy, fill

    @property
    def ndim(self):
        return len(self.shape)

    def type_text(self) -> str:
        if not self.shape:
            return f"tensor<{self.dtype.name}>"
        dims = "x".join(_static_or_q(s) for s in self.shape)
        return f"tensor<{dims}x{self.dtype.name}>"

    def __repr__(self):
        return f"Tensor({self.name}: {self.type_text()})"

    def gather_policy(self, policy: str) -> "Tensor":
        """This tensor, gathered with the out-of-range policy ``trap``,
        ``clamp`` or ``zero``."""
        if policy not in ("trap", "clamp", "zero"):
            raise _error(f"a gather's policy is trap, clamp or zero, got "
                         f"{policy!r}")
        return Tensor(self.name, self.shape, self.dtype, policy, self.fill)

    def padded(self, fill) -> "Tensor":
        """This tensor read with coordinates outside it reading ``fill``
        (a causal convolution's left padding)."""
        return Tensor(self.name, self.shape, self.dtype, self.policy, fill)

    def view(self, shape, fn: Callable) -> "View":
        """This tensor seen through an index map: ``x.view((B, H, L, D),
        lambda b, h, l, d: (b, l, h * D + d))``."""
        return View(self, tuple(shape), fn)

    def __getitem__(self, coords) -> Value:
        if not isinstance(coords, tuple):
            coords = (coords,)
        if len(coords) != len(self.shape):
            raise _error(f"{len(coords)} coordinates for a tensor of rank "
                         f"{len(self.shape)} ({self.type_text()})")
        b = _builder()
        if not b.in_body:
            raise _error("tensors are read inside a tang.compute body")
        parts, gathered = [], False
        for c in coords:
            if isinstance(c, _Reduction):
                c = c.value()
            if isinstance(c, Size) and c.is_static():
                c = c.constant
            if isinstance(c, Size):
                parts.append(f"symbol({c.value()})")
                gathered = True
            elif isinstance(c, Value):
                if c.dtype.is_float:
                    raise _error("a coordinate is an integer: convert the "
                                 "float with .astype(tang.i32)")
                idx = b.fresh("row")
                b.emit(f"{idx} = arith.index_cast {c.name} : {c.dtype.name} "
                       f"to index {_loc()}")
                parts.append(f"symbol({idx})")
                gathered = True
            else:
                parts.append(_as_index(c).text)
        name = b.fresh("x")
        where_ = ", ".join(parts)
        if gathered:
            if self.fill is not None:
                raise _error("a gather reads no padding: use "
                             "gather_policy('zero')")
            policy = "" if self.policy == "trap" else f" {self.policy}"
            b.emit(f"{name} = tang.gather {self.name}[{where_}]{policy} : "
                   f"{self.type_text()} {_loc()}")
        else:
            fill = ""
            if self.fill is not None:
                fill = f" fill({_fill_text(self.fill, self.dtype)})"
            b.emit(f"{name} = tang.read {self.name}[{where_}]{fill} : "
                   f"{self.type_text()} {_loc()}")
        return Value(name, self.dtype)


def _fill_text(v, dtype):
    if dtype.is_float:
        return f"{_float_literal(float(v), dtype)} : {dtype.name}"
    return f"{int(v)} : {dtype.name}"


class View:
    """A tensor seen through an index map; reads compose the map."""

    def __init__(self, source: Tensor, shape: tuple, fn: Callable):
        self.source, self.shape, self.fn = source, shape, fn
        self.dtype = source.dtype

    def __getitem__(self, coords) -> Value:
        if not isinstance(coords, tuple):
            coords = (coords,)
        if len(coords) != len(self.shape):
            raise _error(f"{len(coords)} coordinates for a view of rank "
                         f"{len(self.shape)}")
        mapped = self.fn(*coords)
        if not isinstance(mapped, tuple):
            mapped = (mapped,)
        return self.source[mapped]

    def view(self, shape, fn):
        return View(self, tuple(shape), fn)


# ---------------------------------------------------------------------------
# Comprehensions
# ---------------------------------------------------------------------------

_BUILTIN = {"add", "mul", "max", "min", "argmax", "argmin", "and", "or",
            "online_softmax", "softmax_norm"}


class Monoid:
    """A user monoid: carrier types, identity, and ``combine(a, b)`` of two
    carrier tuples returning one (associative; ``commutative`` if order
    does not matter).

        affine = tang.Monoid("affine", [f32, f32], [1.0, 0.0],
                             lambda a, b: (a[0] * b[0], b[0] * a[1] + b[1]))

    A **tensor monoid** has tensor types for carrier (``f32[K, K]``), no
    identity (``None``: ``tang.tensor_scan`` starts from its first
    element), and a combine that computes tensors (``tang.compute``) from
    the two carriers' tensors:

        K = 4
        affine_rows = tang.Monoid(
            "affine_rows", [f32[K, K], f32[K, 3]], None,
            lambda a, b: (  # x -> A x + B, then b's
                tang.compute((K, K), lambda i, j: tang.sum(
                    K, lambda k: b[0][i, k] * a[0][k, j])),
                tang.compute((K, 3), lambda i, j: tang.sum(
                    K, lambda k: b[0][i, k] * a[1][k, j]) + b[1][i, j])))
    """

    def __init__(self, name: str, carrier: Sequence, identity: Optional[
            Sequence], combine: Callable, commutative: bool = False):
        self.name, self.carrier = name, list(carrier)
        self.combine, self.commutative = combine, commutative
        kinds = {isinstance(c, TensorType) for c in self.carrier}
        if not self.carrier or len(kinds) != 1:
            raise _error(f"monoid @{name}: the carrier is element types "
                         f"(f32) or tensor types (f32[4, 4]), not both")
        self.is_tensor = kinds == {True}
        for c in self.carrier:
            if self.is_tensor and not all(isinstance(d, int) and d >= 1
                                          for d in c.shape):
                raise _error(f"monoid @{name}: a tensor carrier has static "
                             f"sizes, got {c.shape}")
        if self.is_tensor:
            if identity:
                raise _error(f"monoid @{name}: a tensor monoid has no "
                             f"identity (give None)")
            self.identity = []
            return
        self.identity = list(identity or [])
        if len(self.identity) != len(self.carrier):
            raise _error(f"monoid @{name}: {len(self.carrier)} carrier types "
                         f"but {len(self.identity)} identity values")

    def _tensor_text(self) -> str:
        b = _Builder()
        prev = getattr(_state, "builder", None)
        prev_sizes = getattr(_state, "sizes", None)
        _state.builder, _state.sizes = b, {}
        try:
            n = len(self.carrier)
            args = [Tensor(f"%{s}{k}", c.shape, c.dtype)
                    for s in "ab" for k, c in enumerate(self.carrier)]
            out = self.combine(tuple(args[:n]), tuple(args[n:]))
            if not isinstance(out, tuple):
                out = (out,)
            if len(out) != n:
                raise _error(f"monoid @{self.name}: combine returns "
                             f"{len(out)} tensors for {n} carrier components")
            for k, (v, c) in enumerate(zip(out, self.carrier)):
                if not isinstance(v, Tensor) or v.shape != c.shape or \
                        v.dtype is not c.dtype:
                    raise _error(f"monoid @{self.name}: combine's result #{k} "
                                 f"must be a {c.dtype.name}{list(c.shape)} "
                                 f"tensor, got {v!r}")
        finally:
            _state.builder, _state.sizes = prev, prev_sizes
        if b.monoids:
            raise _error(f"monoid @{self.name}: its combine uses user "
                         f"monoids ({', '.join(b.monoids)}); only builtins")
        types = ", ".join(a.type_text() for a in args[:n])
        head = ", ".join(f"{a.name}: {a.type_text()}" for a in args)
        comm = " commutative" if self.commutative else ""
        lines = [f"tang.monoid @{self.name} : [{types}] identity []{comm} {{",
                 f"^bb0({head}):"]
        lines += ["  " + line for line in b.function_lines]
        lines.append(f"  tang.yield {', '.join(v.name for v in out)} : "
                     f"{types}")
        lines.append("}")
        return "\n".join(lines)

    def text(self) -> str:
        if self.is_tensor:
            return self._tensor_text()
        b = _Builder()
        prev = getattr(_state, "builder", None)
        prev_sizes = getattr(_state, "sizes", None)
        _state.builder, _state.sizes = b, {}
        try:
            n = len(self.carrier)
            args = [Value(f"%a{k}", t) for k, t in enumerate(self.carrier)]
            args += [Value(f"%b{k}", t) for k, t in enumerate(self.carrier)]
            region = _Region([])
            b.regions.append(region)
            out = self.combine(tuple(args[:n]), tuple(args[n:]))
            if not isinstance(out, tuple):
                out = (out,)
            out = [_coerce(v, t) for v, t in zip(out, self.carrier)]
            b.regions.pop()
        finally:
            _state.builder, _state.sizes = prev, prev_sizes
        types = ", ".join(t.name for t in self.carrier)
        ident = ", ".join(_fill_text(v, t) for v, t in
                          zip(self.identity, self.carrier))
        head = ", ".join(f"{a.name}: {a.dtype.name}" for a in args)
        comm = " commutative" if self.commutative else ""
        lines = [f"tang.monoid @{self.name} : [{types}] identity [{ident}]"
                 f"{comm} {{", f"^bb0({head}):"]
        lines += ["  " + line for line in region.lines]
        lines.append(f"  tang.yield {', '.join(v.name for v in out)} : "
                     f"{types}")
        lines.append("}")
        return "\n".join(lines)


def _monoid_text(monoid) -> str:
    if isinstance(monoid, Monoid):
        b = _builder()
        known = b.monoids.get(monoid.name)
        if known is not None and known is not monoid:
            raise _error(f"two monoids named @{monoid.name}")
        b.monoids[monoid.name] = monoid
        return f"@{monoid.name}"
    if monoid not in _BUILTIN:
        raise _error(f"unknown monoid {monoid!r}: one of "
                     f"{', '.join(sorted(_BUILTIN))} or a tang.Monoid")
    return monoid


def _extents(shape) -> Tuple[tuple, str]:
    if isinstance(shape, (int, Size, Sym)):
        shape = (shape,)
    shape = tuple(Size.of(e) if isinstance(e, Sym) else e for e in shape)
    return shape, ", ".join(_extent_text(e) for e in shape)


def _new_indices(n, hint):
    b = _builder()
    return [Index(b.fresh(hint)) for _ in range(n)]


def _body(indices, fn, args):
    """Runs ``fn(*args)`` in a new region; returns (region, results)."""
    b = _builder()
    region = _Region(indices)
    b.regions.append(region)
    try:
        out = fn(*args)
    finally:
        b.regions.pop()
    return region, out


def _result_dtypes(monoid, yields) -> List[DType]:
    """The results of a reduction under ``monoid`` of ``yields``:
    softmax_norm gives (max, sum) of one score, online_softmax the sum of
    its value; the others one result per yield."""
    if monoid == "softmax_norm":
        if len(yields) != 1:
            raise _error("softmax_norm reduces one score")
        return [yields[0].dtype, yields[0].dtype]
    if monoid == "online_softmax":
        if len(yields) != 2:
            raise _error("online_softmax reduces (score, value) pairs")
        return [yields[1].dtype]
    return [v.dtype for v in yields]


class _Reduction:
    """A reduction not yet written: at the top of a ``tang.compute`` body it
    becomes the comprehension's own reduction; used in an expression, a
    nested comprehension (written where it is used)."""

    def __init__(self, extents, fn, monoid, results):
        self.extents, self.fn, self.monoid = _extents(extents)[0], fn, monoid
        self.results = results      # result dtypes, or None: the body's
        self.values: Optional[List[Value]] = None

    def _yields(self, out) -> List[Value]:
        if not isinstance(out, tuple):
            out = (out,)
        out = [x.value() if isinstance(x, _Reduction) else x for x in out]
        vals = []
        for k, v in enumerate(out):
            want = self.results[k] if self.results else None
            if isinstance(v, (int, float)) and want is None:
                want = f32 if isinstance(v, float) else i32
            vals.append(_coerce(v, want or f32))
        return vals

    def value(self) -> Value:
        vals = self.all_values()
        if len(vals) != 1:
            raise _error("a reduction of several results: take them with "
                         "tuple unpacking (v, i = tang.argmax(...))")
        return vals[0]

    def all_values(self) -> List[Value]:
        if self.values is not None:
            return self.values
        b = _builder()
        idx = _new_indices(len(self.extents), "r")
        region, out = _body(idx, self.fn, idx)
        yields = self._yields_in(region, out)
        results = _result_dtypes(self.monoid, yields)
        names = [b.fresh() for _ in results]
        types = ", ".join(d.name for d in results)
        yield_types = ", ".join(v.dtype.name for v in yields)
        _, ext = _extents(self.extents)
        monoid = _monoid_text(self.monoid)
        head = (f"{', '.join(names)} = tang.comprehension reduce "
                f"({', '.join(i.text for i in idx)}) [{ext}] "
                f"monoid({monoid}) : {types} {{")
        b.emit(head)
        for line in region.lines:
            b.emit("  " + line)
        b.emit(f"  tang.yield {', '.join(v.name for v in yields)} : "
               f"{yield_types}")
        b.emit(f"}} {_loc()}")
        self.values = [Value(n, d) for n, d in zip(names, results)]
        return self.values

    def _yields_in(self, region, out):
        b = _builder()
        b.regions.append(region)
        try:
            return self._yields(out)
        finally:
            b.regions.pop()

    def __iter__(self):
        return iter(self.all_values())

    # A reduction used as a number is its value.
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.value(), name)


def _forward_to_value(name):
    def method(self, *args):
        return getattr(self.value(), name)(*args)
    method.__name__ = name
    return method


# A reduction used in arithmetic or a comparison is its value (written as a
# nested comprehension where first used).
for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__",
              "__rmul__", "__truediv__", "__rtruediv__", "__neg__", "__lt__",
              "__le__", "__gt__", "__ge__"):
    setattr(_Reduction, _name, _forward_to_value(_name))


def reduce(monoid, extents, fn: Callable, results=None) -> _Reduction:
    """The fold of ``fn(*reduce_indices)`` over ``extents`` under
    ``monoid`` (a builtin name or a ``tang.Monoid``)."""
    return _Reduction(extents, fn, monoid, results)


def sum(extents, fn: Callable) -> _Reduction:
    """``sum over k < extents of fn(k)`` (several extents: several
    indices)."""
    return reduce("add", extents, fn)


def prod(extents, fn: Callable) -> _Reduction:
    return reduce("mul", extents, fn)


def max(extents, fn: Callable) -> _Reduction:
    """The largest ``fn(k)`` (NaN propagates)."""
    return reduce("max", extents, fn)


def min(extents, fn: Callable) -> _Reduction:
    return reduce("min", extents, fn)


def _arg(monoid, extents, fn):
    extents = _extents(extents)[0]
    if len(extents) != 1:
        raise _error(f"{monoid} reduces one index")

    def body(k):
        return (fn(k), index_value(k, i32))
    return _Reduction(extents, body, monoid, None)


def argmax(extents, fn: Callable) -> _Reduction:
    """``(value, index)`` of the largest ``fn(k)``, the first on ties (NaN
    beats every number): ``v, k = tang.argmax(N, lambda n: x[i, n])``."""
    return _arg("argmax", extents, fn)


def argmin(extents, fn: Callable) -> _Reduction:
    return _arg("argmin", extents, fn)


def compute(shape, fn: Callable, name: Optional[str] = None,
            materialize: bool = False) -> Union[Tensor, Tuple[Tensor, ...]]:
    """The tensor of ``shape`` whose element at ``(i, j, ...)`` is
    ``fn(i, j, ...)``. When ``fn`` returns a reduction (``tang.sum(K,
    lambda k: ...)``), the reduction is the comprehension's own; a tuple
    gives several tensors. ``materialize``: fusion keeps this tensor a
    kernel of its own (attribute ``tang.saved``) instead of substituting
    it into its readers, where the program knows better than the work
    model (a tensor-core product read at two points, an attention output
    whose flash kernel writes it whole)."""
    b = _builder()
    if b.in_body:
        raise _error("tang.compute makes a function-level tensor: inside a "
                     "body, reduce with tang.sum/max/... instead")
    shape, par = _extents(shape)
    idx = _new_indices(len(shape), "i")
    region, out = _body(idx, fn, idx)
    red = out if isinstance(out, _Reduction) and out.values is None else None
    red_idx = []
    if red is not None:
        red_idx = _new_indices(len(red.extents), "r")
        b.regions.append(region)
        try:
            inner = red.fn(*red_idx)
        finally:
            b.regions.pop()
        region_out = red._yields_in(region, inner)
        monoid = f" monoid({_monoid_text(red.monoid)})"
        ext = par + (", " if par and red.extents else "") + \
            _extents(red.extents)[1]
    else:
        if not isinstance(out, tuple):
            out = (out,)
        b.regions.append(region)
        try:
            region_out = []
            for v in out:
                if isinstance(v, _Reduction):
                    v = v.value()
                region_out.append(_coerce(v, f32) if not isinstance(v, Value)
                                  else v)
        finally:
            b.regions.pop()
        monoid, ext = "", par
    results = (_result_dtypes(red.monoid, region_out) if red is not None
               else [v.dtype for v in region_out])
    types = [Tensor("", shape, d).type_text() for d in results]
    names = [b.fresh(name or "t") for _ in results]
    head = f"{', '.join(names)} = tang.comprehension"
    if idx:
        head += f" ({', '.join(i.text for i in idx)})"
    if red_idx:
        head += f" reduce ({', '.join(i.text for i in red_idx)})"
    head += f" [{ext}]{monoid}"
    if materialize:
        head += " attributes {tang.saved}"
    head += f" : {', '.join(types)} {{"
    b.emit(head)
    for line in region.lines:
        b.emit("  " + line)
    b.emit(f"  tang.yield {', '.join(v.name for v in region_out)} : "
           f"{', '.join(v.dtype.name for v in region_out)}")
    b.emit(f"}} {_loc()}")
    tensors = tuple(Tensor(n, shape, d) for n, d in zip(names, results))
    return tensors[0] if len(tensors) == 1 else tensors


def scan(shape, monoid, fn: Callable
         ) -> Union[Tensor, Tuple[Tensor, ...]]:
    """Every prefix of a reduction along the last index of ``shape``:
    ``y[..., t]`` is the fold of ``fn(..., s)`` for ``s <= t``, in order
    (a monoid that is not commutative keeps its meaning)."""
    b = _builder()
    if b.in_body:
        raise _error("tang.scan makes a function-level tensor")
    shape, ext = _extents(shape)
    idx = _new_indices(len(shape), "i")
    region, out = _body(idx, fn, idx)
    if not isinstance(out, tuple):
        out = (out,)
    b.regions.append(region)
    try:
        vals = [v.value() if isinstance(v, _Reduction) else _coerce(v, f32)
                for v in out]
    finally:
        b.regions.pop()
    names = [b.fresh("scan") for _ in vals]
    types = [Tensor("", shape, v.dtype).type_text() for v in vals]
    par = ", ".join(i.text for i in idx[:-1])
    head = f"{', '.join(names)} = tang.scan "
    if par:
        head += f"({par}) "
    head += (f"along ({idx[-1].text}) [{ext}] monoid({_monoid_text(monoid)})"
             f" : {', '.join(types)} {{")
    b.emit(head)
    for line in region.lines:
        b.emit("  " + line)
    b.emit(f"  tang.yield {', '.join(v.name for v in vals)} : "
           f"{', '.join(v.dtype.name for v in vals)}")
    b.emit(f"}} {_loc()}")
    tensors = tuple(Tensor(n, shape, v.dtype) for n, v in zip(names, vals))
    return tensors[0] if len(tensors) == 1 else tensors


def tensor_scan(monoid: Monoid, elements: Sequence[Tensor],
                init: Optional[Sequence[Tensor]] = None
                ) -> Tuple[Tensor, ...]:
    """Every prefix of a sequence of tensors under a tensor monoid
    (``tang.tensor_scan``): ``elements[k]`` holds the carrier's component
    ``k`` at every point, its dimensions ``[parallel..., T, component...]``;
    result ``k`` (same shape) holds at ``[p, t]`` the fold of the elements
    ``[p, 0..t]``, in order, started from ``init[k][p]`` when given
    (``[parallel..., component...]``). A recurrence with a matrix state,
    ``S_t = A_t S_{t-1} + B_t``, is the scan of ``(A_t, B_t)`` under the
    composition of affine maps."""
    b = _builder()
    if b.in_body:
        raise _error("tang.tensor_scan makes function-level tensors")
    if not isinstance(monoid, Monoid) or not monoid.is_tensor:
        raise _error("tang.tensor_scan takes a tensor monoid (a tang.Monoid "
                     "whose carrier is tensor types)")
    elements = list(elements)
    if len(elements) != len(monoid.carrier):
        raise _error(f"monoid @{monoid.name} has {len(monoid.carrier)} "
                     f"carrier components, got {len(elements)} elements")
    init = list(init) if init is not None else []
    if init and len(init) != len(elements):
        raise _error(f"init gives {len(init)} tensors for "
                     f"{len(elements)} carrier components")
    for k, (e, c) in enumerate(zip(elements, monoid.carrier)):
        r = len(c.shape)
        if not isinstance(e, Tensor) or e.ndim < r + 1 or \
                tuple(e.shape[e.ndim - r:]) != tuple(c.shape):
            raise _error(f"element #{k} must be a tensor of shape "
                         f"[..., T, {', '.join(map(str, c.shape))}], got "
                         f"{e!r}")
    name = _monoid_text(monoid)
    names = [b.fresh("tscan") for _ in elements]
    types = ", ".join(e.type_text() for e in elements)
    line = (f"{', '.join(names)} = tang.tensor_scan {name}("
            f"{', '.join(e.name for e in elements)} : {types})")
    if init:
        line += (f" init({', '.join(x.name for x in init)} : "
                 f"{', '.join(x.type_text() for x in init)})")
    b.emit(f"{line} -> {types} {_loc()}")
    return tuple(Tensor(n, e.shape, e.dtype) for n, e in zip(names, elements))


def scatter(base: Tensor, shape, fn: Callable, monoid=None,
            policy: str = "trap", deterministic: bool = False) -> Tensor:
    """A copy of ``base`` with, for every point of ``shape``, the value
    ``fn`` returns written at the coordinates it returns: ``fn(*idx) ->
    (value, (c0, c1, ...))``. Without a monoid the write replaces the
    element (later points win); ``monoid="add"`` adds. Out-of-range
    coordinates computed from data: ``trap`` or ``drop``."""
    b = _builder()
    if b.in_body:
        raise _error("tang.scatter makes a function-level tensor")
    if policy not in ("trap", "drop"):
        raise _error(f"a scatter's policy is trap or drop, got {policy!r}")
    shape, ext = _extents(shape)
    idx = _new_indices(len(shape), "i")
    region = _Region(idx)
    b.regions.append(region)
    try:
        out = fn(*idx)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise _error("a scatter's body returns (value, coordinates)")
        value, coords = out
        value = _coerce(value, base.dtype)
        if value.dtype is not base.dtype:
            raise _error(f"writing {value.dtype.name} into a "
                         f"{base.dtype.name} tensor")
        if not isinstance(coords, tuple):
            coords = (coords,)
        if len(coords) != base.ndim:
            raise _error(f"{len(coords)} coordinates into a tensor of rank "
                         f"{base.ndim}")
        parts = []
        for c in coords:
            if isinstance(c, _Reduction):
                c = c.value()
            if isinstance(c, Size) and c.is_static():
                c = c.constant
            if isinstance(c, Size):
                parts.append(f"symbol({c.value()})")
            elif isinstance(c, Value):
                n = b.fresh("row")
                b.emit(f"{n} = arith.index_cast {c.name} : {c.dtype.name} to "
                       f"index {_loc()}")
                parts.append(f"symbol({n})")
            else:
                parts.append(_as_index(c).text)
    finally:
        b.regions.pop()
    name = b.fresh("scatter")
    head = (f"{name} = tang.scatter ({', '.join(i.text for i in idx)}) "
            f"[{ext}] into {base.name}")
    if monoid is not None:
        head += f" monoid({_monoid_text(monoid)})"
    if deterministic:
        head += " deterministic"
    head += f" : {base.type_text()} {{"
    b.emit(head)
    for line in region.lines:
        b.emit("  " + line)
    pol = "" if policy == "trap" else f" {policy}"
    b.emit(f"  tang.put {value.name} at [{', '.join(parts)}]{pol} : "
           f"{value.dtype.name}")
    b.emit(f"}} {_loc()}")
    return Tensor(name, base.shape, base.dtype)


# ---------------------------------------------------------------------------
# Functions and modules
# ---------------------------------------------------------------------------

class Function:
    """A Python function traced to a tang function. Arguments are
    annotated with tensor types (``f32["L", 64]``) or ``tang.size``; the
    function returns tensors. ``mlir()`` is the module text."""

    def __init__(self, fn: Callable, name: Optional[str] = None,
                 arg_types: Optional[Sequence] = None, donate=()):
        self.fn = fn
        self.name = name or fn.__name__
        self.donate = set(donate)
        sig = inspect.signature(fn)
        self.params = list(sig.parameters)
        if arg_types is None:
            ann = getattr(fn, "__annotations__", {})
            missing = [p for p in self.params if p not in ann]
            if missing:
                raise TangError(
                    f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}:"
                    f" argument {missing[0]!r} of {self.name} has no type: "
                    "annotate it (x: tang.f32[M, 64], pos: tang.size)")
            arg_types = [ann[p] for p in self.params]
        self.arg_types = list(arg_types)
        self._text = None
        self.results: List[Tensor] = []

    def __repr__(self):
        return f"tang.Function({self.name})"

    def trace(self) -> Tuple[List[str], Dict[str, Monoid]]:
        """The function's lines and the monoids it uses."""
        b = _Builder()
        prev = getattr(_state, "builder", None)
        prev_sizes = getattr(_state, "sizes", None)
        prev_syms = getattr(_state, "syms", None)
        _state.builder, _state.sizes = b, {}
        try:
            args, head = [], []
            names: Dict[str, Size] = {}
            dims = []
            for k, (p, t) in enumerate(zip(self.params, self.arg_types)):
                attrs = " {tang.donate}" if p in self.donate else ""
                if isinstance(t, _SizeArg):
                    v = f"%{p}"
                    head.append(f"{v}: index{attrs}")
                    names[p] = Size(0, {v: 1})
                    args.append(names[p])
                    continue
                if not isinstance(t, TensorType):
                    raise TangError(f"argument {p!r} of {self.name}: expected "
                                    f"a tensor type (tang.f32[...]) or "
                                    f"tang.size, got {t!r}")
                shape = []
                for d, s in enumerate(t.shape):
                    if isinstance(s, str):
                        if s not in names:
                            dims.append((s, p, d))
                            names[s] = Size(0, {f"%{p}_dim{d}": 1})
                        shape.append(names[s])
                    else:
                        shape.append(s)
                x = Tensor(f"%{p}", tuple(shape), t.dtype)
                head.append(f"%{p}: {x.type_text()}{attrs}")
                args.append(x)
            _state.syms = names
            for s, p, d in dims:
                c = _index_constant(d)
                b.function_lines.append(
                    f"%{p}_dim{d} = tensor.dim %{p}, {c} : "
                    f"{[a for a in args if isinstance(a, Tensor) and a.name == '%' + p][0].type_text()}")
            out = self.fn(*args)
            if not isinstance(out, tuple):
                out = (out,)
            for r in out:
                if not isinstance(r, Tensor):
                    raise _error(f"{self.name} returns tensors (tang.compute "
                                 f"results or arguments), got {r!r}")
            self.results = list(out)
            lines = [f"func.func @{self.name}({', '.join(head)}) -> "
                     f"({', '.join(r.type_text() for r in out)}) {{"]
            lines += ["  " + line for line in b.function_lines]
            lines.append(f"  return {', '.join(r.name for r in out)} : "
                         f"{', '.join(r.type_text() for r in out)}")
            lines.append("}")
            return lines, dict(b.monoids)
        finally:
            _state.builder, _state.sizes = prev, prev_sizes
            _state.syms = prev_syms

    def mlir(self) -> str:
        """This function (and the monoids it uses) as a tang module."""
        if self._text is None:
            self._text = module(self)
        return self._text

    def __call__(self, *args, **kwargs):
        raise TangError(f"{self.name} is a tang program: compile it "
                        f"(tang.compile({self.name})) to run it")


def function(fn=None, *, name=None, donate=()):
    """Decorator: trace a Python function of annotated tensors to tang.
    ``donate``: argument names the caller gives up (updated in place)."""
    def wrap(f):
        return Function(f, name=name, donate=donate)
    return wrap(fn) if fn is not None else wrap


def module(*functions: Function) -> str:
    """The tang module text of ``functions``."""
    lines, monoids = [], {}
    for f in functions:
        body, used = f.trace()
        for n, m in used.items():
            if n in monoids and monoids[n] is not m:
                raise TangError(f"two monoids named @{n}")
            monoids[n] = m
        lines += body
    return "\n".join([m.text() for m in monoids.values()] + lines) + "\n"
