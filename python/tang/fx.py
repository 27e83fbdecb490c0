"""``torch.compile(model, backend="tang")``: aten graphs to tang programs.

The backend takes the forward graph AOT autograd gives (functional aten
ops, shapes known), writes it as a tang program with the builder (each op
a comprehension or a view; fusion makes the kernels), compiles it
(``tang.compile``, CUDA for CUDA tensors, the C backend on the CPU) and
runs it. A graph with an op it cannot express runs eagerly instead, and
the reason is logged (logger ``tang.fx``) and kept in ``fallbacks``.

The conversion works on a plain description of the graph (``describe``:
nodes with their aten op names, arguments and output shapes and dtypes),
so it runs without PyTorch: tests convert graphs captured on another
machine (``describe`` output saved as JSON).

Supported aten ops: mm, bmm, addmm, matmul (2-D/3-D), t, transpose,
permute, view/reshape/_unsafe_view, expand, unsqueeze, squeeze, clone,
alias, _to_copy (dtype), add/sub/mul/div (tensor or scalar, broadcasting),
neg, exp, log, tanh, sigmoid, silu, gelu, relu, rsqrt, sqrt, pow (scalar
exponent), reciprocal, mean/sum/amax (dims, keepdim), _softmax, softmax,
_log_softmax, native_layer_norm, scaled_dot_product_attention (and its
flash/efficient/math forms), embedding, where, scalar_tensor, full-like
constants, getitem of multi-output ops.
"""

import logging
import math
from typing import Dict, List

from . import lang as t
from . import nn

__all__ = ["describe", "convert", "backend", "fallbacks", "Unsupported"]

log = logging.getLogger("tang.fx")

#: (graph name, reason) of every graph the backend ran eagerly.
fallbacks: List[tuple] = []

_DTYPES = {"torch.float32": "f32", "torch.float16": "f16",
           "torch.bfloat16": "bf16", "torch.float64": "f64",
           "torch.int32": "i32", "torch.int64": "i32", "torch.bool": "i1",
           "torch.int8": "i8"}


class Unsupported(Exception):
    """An aten op (or a use of one) the converter cannot express."""


# ---------------------------------------------------------------------------
# Describing an FX graph (needs torch; runs where the graph is captured)
# ---------------------------------------------------------------------------

def _meta(node):
    val = node.meta.get("val") if hasattr(node, "meta") else None
    if val is None:
        return None
    if isinstance(val, (list, tuple)):
        return [_meta_of(v) for v in val]
    return _meta_of(val)


def _meta_of(val):
    if val is None or not hasattr(val, "shape"):
        return None
    return {"shape": [int(s) for s in val.shape], "dtype": str(val.dtype)}


def _arg(a):
    import torch
    if isinstance(a, torch.fx.Node):
        return {"node": a.name}
    if isinstance(a, (list, tuple)):
        return [_arg(x) for x in a]
    if isinstance(a, (bool, int, float)) or a is None:
        return a
    if isinstance(a, torch.dtype):
        return {"dtype": str(a)}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, torch.memory_format):
        return {"memory_format": str(a)}
    if isinstance(a, torch.layout):
        return {"layout": str(a)}
    return {"other": repr(a)}


def describe(gm) -> dict:
    """The graph of ``gm`` (an aten-level ``torch.fx.GraphModule`` with
    ``meta["val"]`` on its nodes) as plain data."""
    nodes = []
    for n in gm.graph.nodes:
        target = n.target
        name = (str(target) if n.op == "call_function" and
                hasattr(target, "_schema") or n.op != "call_function"
                else getattr(target, "__name__", str(target)))
        if n.op == "call_function" and getattr(target, "__module__", "") == \
                "_operator":
            name = f"operator.{target.__name__}"
        nodes.append({"name": n.name, "op": n.op, "target": name,
                      "args": _arg(list(n.args)),
                      "kwargs": {k: _arg(v) for k, v in n.kwargs.items()},
                      "meta": _meta(n)})
    return {"nodes": nodes}


# ---------------------------------------------------------------------------
# Converting a described graph to a tang program (no torch needed)
# ---------------------------------------------------------------------------

def _dtype(meta) -> t.DType:
    name = _DTYPES.get(meta["dtype"])
    if name is None:
        raise Unsupported(f"element type {meta['dtype']}")
    return t.DTYPES[name]


def _broadcast_index(shape_in, shape_out, idx):
    """Coordinates into a tensor of ``shape_in`` broadcast to ``shape_out``
    at output index ``idx`` (numpy rules: right-aligned, size 1 stretches)."""
    off = len(shape_out) - len(shape_in)
    return tuple(0 if (s == 1 and shape_out[off + d] != 1) else idx[off + d]
                 for d, s in enumerate(shape_in))


def _strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return list(reversed(out))


def _reshape_map(shape_in, shape_out):
    """The index map of a row-major reshape: output coordinates -> input
    coordinates (through the linear offset)."""
    so = _strides(shape_out)
    si = _strides(shape_in)

    def f(*idx):
        lin = None
        for i, s in zip(idx, so):
            term = i * s if s != 1 else i
            lin = term if lin is None else lin + term
        if lin is None:
            lin = 0
        coords = []
        for d, (s, n) in enumerate(zip(si, shape_in)):
            c = lin // s if s != 1 else lin
            if d > 0:
                c = c % n if n != 1 else 0
            elif n == 1:
                c = 0
            coords.append(c)
        return tuple(coords)
    return f


class _Converter:
    def __init__(self, graph: dict, name: str):
        self.graph, self.name = graph, name
        self.values: Dict[str, object] = {}
        self.meta: Dict[str, object] = {}

    # -- helpers -----------------------------------------------------------

    def get(self, a):
        if isinstance(a, dict) and "node" in a:
            return self.values[a["node"]]
        return a

    def shape_of(self, a):
        if isinstance(a, dict) and "node" in a:
            m = self.meta[a["node"]]
            return tuple(m["shape"])
        return ()

    def elementwise(self, shape, dtype, args, fn):
        """out[idx] = fn(*[arg at broadcast idx]) over ``shape``."""
        vals = [self.get(a) for a in args]
        shapes = [self.shape_of(a) for a in args]

        def body(*idx):
            xs = []
            for v, s in zip(vals, shapes):
                if isinstance(v, (int, float, bool)):
                    xs.append(v)
                elif not s:
                    xs.append(v[()])
                else:
                    xs.append(v[_broadcast_index(s, shape, idx)])
            out = fn(*xs)
            if isinstance(out, t.Value) and out.dtype is not dtype:
                out = out.astype(dtype)
            return out
        if not shape:
            return t.compute((), lambda: body())
        return t.compute(tuple(shape), body)

    def reduce(self, x, shape_in, dims, keepdim, monoid, scale=None):
        dims = sorted(d % len(shape_in) for d in dims) if dims else \
            list(range(len(shape_in)))
        keep = [d for d in range(len(shape_in)) if d not in dims]
        red = [shape_in[d] for d in dims]

        def body(*idx):
            par = [idx[d] for d in keep] if keepdim else list(idx)

            def inner(*r):
                coords = [None] * len(shape_in)
                for d, i in zip(keep, par):
                    coords[d] = i
                for d, i in zip(dims, r):
                    coords[d] = i
                return x[tuple(coords)]
            red_ = t.reduce(monoid, tuple(red), inner)
            if scale is not None:
                return red_ * scale
            return red_
        out_shape = tuple(shape_in[d] if d in keep else 1
                          for d in range(len(shape_in))) if keepdim else \
            tuple(shape_in[d] for d in keep)
        return t.compute(out_shape, body) if out_shape else \
            t.compute((), lambda: body())

    # -- the ops -----------------------------------------------------------

    def call(self, node):
        target = node["target"]
        op = target.split(".")[1] if target.startswith("aten.") else target
        args = node["args"]
        kwargs = node["kwargs"]
        meta = node["meta"]
        shape = tuple(meta["shape"]) if isinstance(meta, dict) else None
        dtype = _dtype(meta) if isinstance(meta, dict) else None
        g = self.get
        ew = self.elementwise

        if target == "operator.getitem":
            return g(args[0])[args[1]]
        if op in ("add", "sub") and (len(args) > 2 or "alpha" in kwargs):
            alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
            fn = (lambda a, b: a + b * alpha) if op == "add" else \
                (lambda a, b: a - b * alpha)
            return ew(shape, dtype, args[:2], fn)
        binary = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
                  "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
                  "rsub": lambda a, b: b - a,
                  "maximum": t.maximum, "minimum": t.minimum}
        if op in binary:
            return ew(shape, dtype, args[:2], binary[op])
        unary = {"neg": lambda a: -a, "exp": t.exp, "log": t.log,
                 "tanh": t.tanh, "sigmoid": t.sigmoid, "rsqrt": t.rsqrt,
                 "sqrt": t.sqrt, "reciprocal": lambda a: 1.0 / a,
                 "silu": lambda a: a * t.sigmoid(a), "abs": t.abs,
                 "relu": lambda a: t.maximum(a, 0.0), "sin": t.sin,
                 "cos": t.cos, "erf": t.erf, "clone": lambda a: a,
                 "alias": lambda a: a, "detach": lambda a: a}
        if op in unary:
            return ew(shape, dtype, args[:1], unary[op])
        if op == "gelu":
            approx = kwargs.get("approximate", "none")
            if approx == "tanh":
                c = math.sqrt(2 / math.pi)
                return ew(shape, dtype, args[:1], lambda a: 0.5 * a * (
                    1.0 + t.tanh(c * (a + 0.044715 * a * a * a))))
            return ew(shape, dtype, args[:1], lambda a: 0.5 * a * (
                1.0 + t.erf(a * (1 / math.sqrt(2)))))
        if op == "pow":
            e = args[1]
            if not isinstance(e, (int, float)):
                raise Unsupported("pow with a tensor exponent")
            if e == 2:
                return ew(shape, dtype, args[:1], lambda a: a * a)
            if e == 0.5:
                return ew(shape, dtype, args[:1], t.sqrt)
            if e == -0.5:
                return ew(shape, dtype, args[:1], t.rsqrt)
            return ew(shape, dtype, args[:1], lambda a: t.pow(a, float(e)))
        if op == "_to_copy":
            return ew(shape, dtype, args[:1], lambda a: a)
        if op == "where":
            return ew(shape, dtype, args[:3], t.where)
        if op in ("scalar_tensor", "full"):
            value = args[0] if op == "scalar_tensor" else args[1]
            return ew(shape, dtype, [], lambda: _const(value, dtype))
        if op in ("view", "_unsafe_view", "reshape"):
            src = self.shape_of(args[0])
            return _as_tensor_view(g(args[0]), shape, _reshape_map(src, shape))
        if op == "expand":
            src = self.shape_of(args[0])
            return _as_tensor_view(g(args[0]), shape, lambda *i:
                                   _broadcast_index(src, shape, i))
        if op in ("unsqueeze", "squeeze", "squeeze_dims"):
            src = self.shape_of(args[0])
            return _as_tensor_view(g(args[0]), shape, _reshape_map(src, shape))
        if op in ("permute", "t", "transpose"):
            src = self.shape_of(args[0])
            n = len(src)
            if op == "permute":
                perm = [p % n for p in args[1]]
            elif op == "t":
                perm = [1, 0] if n == 2 else [0]
            else:
                a, b = args[1] % n, args[2] % n
                perm = list(range(n))
                perm[a], perm[b] = perm[b], perm[a]

            def pmap(*i):
                coords = [None] * n
                for k, p in enumerate(perm):
                    coords[p] = i[k]
                return tuple(coords)
            return _as_tensor_view(g(args[0]), shape, pmap)
        if op in ("mm", "bmm", "matmul"):
            a, b = g(args[0]), g(args[1])
            sa, sb = self.shape_of(args[0]), self.shape_of(args[1])
            if len(sa) == 2 and len(sb) == 2:
                return t.compute(shape, lambda i, j: t.sum(
                    sa[1], lambda k: a[i, k] * b[k, j]))
            if len(sa) == 3 and len(sb) == 3:
                return t.compute(shape, lambda z, i, j: t.sum(
                    sa[2], lambda k: a[z, i, k] * b[z, k, j]))
            raise Unsupported(f"{op} of ranks {len(sa)} and {len(sb)}")
        if op == "addmm":
            bias, a, b = g(args[0]), g(args[1]), g(args[2])
            sa, sbias = self.shape_of(args[1]), self.shape_of(args[0])
            mm = t.compute(shape, lambda i, j: t.sum(
                sa[1], lambda k: a[i, k] * b[k, j]))
            return t.compute(shape, lambda i, j: mm[i, j] + bias[
                _broadcast_index(sbias, shape, (i, j))])
        if op in ("sum", "mean", "amax", "amin"):
            src = self.shape_of(args[0])
            dims = args[1] if len(args) > 1 else kwargs.get("dim")
            if isinstance(dims, int):
                dims = [dims]
            keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim",
                                                               False)
            monoid = {"sum": "add", "mean": "add", "amax": "max",
                      "amin": "min"}[op]
            n = 1
            for d in (dims or range(len(src))):
                n *= src[d]
            scale = 1.0 / n if op == "mean" else None
            return self.reduce(g(args[0]), src, dims, keepdim, monoid, scale)
        if op in ("_softmax", "softmax", "_log_softmax", "log_softmax"):
            src = self.shape_of(args[0])
            dim = args[1] % len(src)
            return _softmax(g(args[0]), src, dim, log=op.endswith(
                "log_softmax"))
        if op == "native_layer_norm":
            x, normalized, w, b, eps = (g(args[0]), args[1], g(args[2]),
                                        g(args[3]), args[4])
            src = self.shape_of(args[0])
            if len(normalized) != 1:
                raise Unsupported("layer_norm over several dimensions")
            x2 = _flatten_rows(x, src)
            y = nn.layer_norm(x2, w, b, eps)
            return (_as_tensor_view(y, src, _reshape_map(
                (int(x2.shape[0]), src[-1]), src)), None, None)
        if op in ("embedding",):
            w, ids = g(args[0]), g(args[1])
            sids = self.shape_of(args[1])
            rows = w.gather_policy("clamp")
            return t.compute(shape, lambda *i: rows[
                ids[tuple(i[:len(sids)])], i[-1]])
        if op in ("_scaled_dot_product_flash_attention",
                  "_scaled_dot_product_efficient_attention",
                  "_scaled_dot_product_cudnn_attention",
                  "scaled_dot_product_attention",
                  "_scaled_dot_product_attention_math"):
            return self.sdpa(op, args, kwargs, node)
        raise Unsupported(f"aten op {target}")

    def sdpa(self, op, args, kwargs, node):
        q, k, v = (self.get(a) for a in args[:3])
        sq, sk = self.shape_of(args[0]), self.shape_of(args[1])
        if op in ("scaled_dot_product_attention",
                  "_scaled_dot_product_attention_math"):
            mask = args[3] if len(args) > 3 else kwargs.get("attn_mask")
            if mask is not None:
                raise Unsupported("SDPA with an explicit mask")
            causal = args[5] if len(args) > 5 else kwargs.get("is_causal",
                                                             False)
        elif op in ("_scaled_dot_product_efficient_attention",
                    "_scaled_dot_product_cudnn_attention"):
            if args[3] is not None:
                raise Unsupported("SDPA with an attention bias")
            causal = args[6] if len(args) > 6 else kwargs.get("is_causal",
                                                             False)
        else:
            causal = args[4] if len(args) > 4 else kwargs.get("is_causal",
                                                             False)
        scale = kwargs.get("scale")
        if len(sq) != 4:
            raise Unsupported("SDPA of rank other than 4")
        B = sq[0]
        if B != 1:
            raise Unsupported("SDPA with batch > 1 (the library's attention "
                              "is per sequence)")
        q3 = _as_tensor_view(q, sq[1:], lambda h, i, e: (0, h, i, e))
        k3 = _as_tensor_view(k, sk[1:], lambda h, i, e: (0, h, i, e))
        v3 = _as_tensor_view(v, sk[1:], lambda h, i, e: (0, h, i, e))
        o = nn.attention(q3, k3, v3, causal=bool(causal), scale=scale)
        out = _as_tensor_view(o, sq, lambda b, h, i, e: (h, i, e))
        if op.startswith("_scaled_dot_product"):
            return (out, None, None, None, None, None, None, None, None)
        return out

    def run(self) -> t.Function:
        placeholders = [n for n in self.graph["nodes"]
                        if n["op"] == "placeholder"]
        types = []
        for n in placeholders:
            m = n["meta"]
            if not isinstance(m, dict):
                raise Unsupported(f"input {n['name']} is not a tensor")
            types.append(t.TensorType(tuple(m["shape"]), _dtype(m)))
        conv = self

        def program(*xs):
            for n, x in zip(placeholders, xs):
                conv.values[n["name"]] = x
                conv.meta[n["name"]] = n["meta"]
            outputs = None
            for n in conv.graph["nodes"]:
                if n["op"] in ("placeholder",):
                    continue
                if n["op"] == "output":
                    outputs = n["args"][0]
                    break
                if n["op"] != "call_function":
                    raise Unsupported(f"graph node {n['op']} {n['target']}")
                conv.meta[n["name"]] = n["meta"]
                # Every op of this node is located at it: loc("graph/node")
                # (stable text, so a program converted on two machines has
                # one hash).
                with t.located(f"{conv.name}/{n['name']}"):
                    conv.values[n["name"]] = conv.call(n)
            outs = outputs if isinstance(outputs, list) else [outputs]
            res = []
            for o in outs:
                v = conv.get(o)
                if isinstance(v, t.View):
                    v = _materialize(v)
                if not isinstance(v, t.Tensor):
                    raise Unsupported(f"output {o} is not a tensor")
                res.append(v)
            return tuple(res)
        program.__name__ = self.name
        params = [f"x{k}" for k in range(len(placeholders))]
        return t.Function(_with_params(program, params), name=self.name,
                          arg_types=types)


def _with_params(fn, names):
    """``fn(*xs)`` as a function of parameters named ``names`` (tang.Function
    reads its parameters' names)."""
    src = (f"def wrapper({', '.join(names)}):\n"
           f"    return fn({', '.join(names)})\n")
    scope = {"fn": fn}
    exec(src, scope)
    return scope["wrapper"]


def _const(value, dtype):
    from .lang import constant
    return constant(value, dtype)


def _as_tensor_view(x, shape, fn):
    """``x`` (a tensor or view) seen at ``shape`` through ``fn``."""
    if not shape:
        return x
    return t.View(x, tuple(shape), fn) if not isinstance(x, t.View) else \
        x.view(tuple(shape), fn)


def _materialize(v):
    shape = v.shape
    return t.compute(tuple(shape), lambda *i: v[i])


def _flatten_rows(x, shape):
    rows = 1
    for s in shape[:-1]:
        rows *= s
    if len(shape) == 2:
        return x if isinstance(x, t.Tensor) else _materialize(x)
    v = _as_tensor_view(x, (rows, shape[-1]),
                        _reshape_map(tuple(shape), (rows, shape[-1])))
    return _materialize(v)


def _softmax(x, shape, dim, log=False):
    red = shape[dim]
    rows = tuple(s for d, s in enumerate(shape) if d != dim)

    def row_index(idx):
        return tuple(i for d, i in enumerate(idx) if d != dim)

    def full(r, j):
        c = list(r)
        c.insert(dim, j)
        return tuple(c)
    m = t.compute(rows, lambda *r: t.max(red, lambda j: x[full(r, j)])) \
        if rows else t.compute((), lambda: t.max(red, lambda j: x[(j,)]))
    z = t.compute(rows, lambda *r: t.sum(red, lambda j: t.exp(
        x[full(r, j)] - m[r]))) if rows else t.compute(
        (), lambda: t.sum(red, lambda j: t.exp(x[(j,)] - m[()])))
    if log:
        return t.compute(tuple(shape), lambda *i: x[i] - m[row_index(i)]
                         - t.log(z[row_index(i)]))
    return t.compute(tuple(shape), lambda *i: t.exp(
        x[i] - m[row_index(i)]) / z[row_index(i)])


def convert(graph: dict, name: str = "graph") -> t.Function:
    """The tang function of a described aten graph (``describe``); raises
    ``Unsupported`` naming the first op it cannot express."""
    return _Converter(graph, name).run()


# ---------------------------------------------------------------------------
# The torch.compile backend
# ---------------------------------------------------------------------------

def _compile_forward(gm, example_inputs, name="tang_graph"):
    import torch
    try:
        graph = describe(gm)
        fn = convert(graph, name)
        fn.mlir()
        on_cuda = any(getattr(x, "is_cuda", False) for x in example_inputs)
        from .compiler import compile as tang_compile
        compiled = tang_compile(fn, target="cuda" if on_cuda else "c")
    except Exception as e:   # Unsupported, TangError, anything: run eagerly
        reason = f"{type(e).__name__}: {e}"
        fallbacks.append((name, reason))
        log.warning("tang: running %s eagerly: %s", name, reason)
        return gm.forward

    single = not isinstance(graph["nodes"][-1]["args"][0], list)

    def run(*args):
        xs = [a.to(torch.int32) if a.dtype == torch.int64 else
              a.contiguous() for a in args]
        if not on_cuda:
            xs = [x.detach().cpu().numpy() for x in xs]
        out = compiled(*xs)
        out = out if isinstance(out, tuple) else (out,)
        if not on_cuda:
            out = tuple(torch.from_numpy(o) for o in out)
        return out[0] if single else list(out)
    return run


def backend(gm, example_inputs):
    """The ``torch.compile`` backend: AOT autograd's functional aten forward
    compiled by tang (the backward, if any, runs eagerly)."""
    from torch._dynamo.backends.common import aot_autograd
    from functorch.compile import make_boxed_func

    def fw(g, xs):
        return make_boxed_func(_compile_forward(g, xs))

    def bw(g, xs):
        return make_boxed_func(g.forward)
    return aot_autograd(fw_compiler=fw, bw_compiler=bw)(gm, example_inputs)


def register():
    """Registers the backend under the name "tang" (done on import of
    tang.fx when torch is importable; also an entry point)."""
    from torch._dynamo import register_backend
    try:
        register_backend(name="tang")(backend)
    except Exception:   # already registered
        pass
