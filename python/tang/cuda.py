"""Run tang CUDA bundles on PyTorch tensors through the CUDA driver.

A bundle (docs/Bundle.md) is a directory holding ``manifest.json`` and
a PTX or cubin image. This module is pure Python: ctypes over libcuda.so.1,
no compiled extension. It imports without PyTorch and without a GPU, so
manifests can be parsed and checked anywhere; PyTorch is imported only when
a bundle is loaded or run.

    import torch, tang.cuda
    b = tang.cuda.Bundle("out/softmax")           # manifest + image loaded
    y = b.run("main", x)                          # outputs allocated
    b.run("main", x, outputs=[y])                 # or passed in
    ms = b.time("main", x, outputs=[y], repeat=100)   # median ms

``available()`` says whether a driver and a GPU are there;
``unavailable_reason()`` says why not. Without them, ``Bundle(...)`` raises
one ``CudaUnavailableError`` ("no CUDA driver (libcuda.so.1 not found)",
"no CUDA device"). Setting ``TANG_LIBCUDA`` loads that library instead of
libcuda.so.1 (a driver in a non-standard place, or a test double).

Kernels use the bare-pointer convention: each kernel parameter is one device
pointer. Launches go to PyTorch's current stream (or ``stream=``).
Temporaries are allocated once per bundle and function with cuMemAlloc, so
one bundle must not run the same function on two streams at once.
"""

import ctypes
import json
import math
import os
import statistics
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from . import sizes as _sizes

__all__ = [
    "BufferSpec", "Bundle", "CudaError", "CudaUnavailableError", "DTYPES",
    "Function", "Launch", "LaunchArg", "Manifest", "ManifestError",
    "available", "compute_capability", "device_count", "load_manifest",
    "parse_manifest", "unavailable_reason",
]

# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


class ManifestError(ValueError):
    """manifest.json is not a valid version-1 bundle manifest."""


class CudaError(RuntimeError):
    """A CUDA driver call failed (the message names the call and status)."""


class CudaUnavailableError(CudaError):
    """No usable CUDA driver or no CUDA device on this machine."""


# ---------------------------------------------------------------------------
# The manifest
# ---------------------------------------------------------------------------

#: Bytes per element of each manifest dtype (i1 takes one byte).
DTYPES: Dict[str, int] = {
    "f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i8": 1, "i1": 1,
}

# torch.dtype names of the manifest dtypes.
_TORCH_DTYPES = {
    "f64": "float64", "f32": "float32", "f16": "float16",
    "bf16": "bfloat16", "i32": "int32", "i8": "int8", "i1": "bool",
}

# __cuda_array_interface__ typestrs accepted for each dtype (bf16 as its bit
# patterns, i1 as bytes).
_TYPESTRS = {
    "f64": ("<f8",), "f32": ("<f4",), "f16": ("<f2",),
    "bf16": ("<u2", "<i2"), "i32": ("<i4",), "i8": ("|i1",),
    "i1": ("|b1", "|u1", "|i1"),
}

_INT32_MAX = 2**31 - 1
_MAX_ELEMENTS = 2**48


@dataclass(frozen=True)
class BufferSpec:
    """One buffer of a function: an argument or a temporary."""

    role: str  #: "input", "output" or "temporary"
    shape: Tuple[int, ...]  #: dense row-major; () for a scalar
    dtype: str  #: a key of DTYPES
    #: Initial contents of a temporary (the sizes buffer's i32 values).
    init: Optional[Tuple[int, ...]] = None
    #: For an output updated in place: the argument index of the donated
    #: input whose buffer it is (the run passes that buffer and returns the
    #: input as this output).
    alias: Optional[int] = None
    #: For a tensor constant: the file of the bundle holding its contents.
    data: Optional[str] = None

    @property
    def numel(self) -> int:
        """The number of elements (1 for a scalar)."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """The size in bytes."""
        return self.numel * DTYPES[self.dtype]


@dataclass(frozen=True)
class TensorMapSpec:
    """A tensor map (CUtensorMap) over a buffer, passed by value: the
    buffer's dense row-major shape tiled in boxes, for bulk tensor copies.
    Encoded with zero fill out of bounds, 256-byte L2 promotion, no
    interleave."""

    box: Tuple[int, ...]  #: elements per box, outermost first
    swizzle: int  #: shared-memory swizzle in bytes: 0, 32, 64 or 128


@dataclass(frozen=True)
class LaunchArg:
    """One kernel parameter: the function's argument or temporary #index,
    as a device pointer or, with `tensor_map`, a tensor map over it."""

    kind: str  #: "arg" or "temp"
    index: int
    tensor_map: Optional[TensorMapSpec] = None


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a function's sequence."""

    kernel: str
    grid: Tuple[int, int, int]
    block: Tuple[int, int, int]
    shared_bytes: int
    args: Tuple[LaunchArg, ...]


@dataclass(frozen=True)
class IndexCheck:
    """A data coordinate the runtime checks before a run (a trap gather's
    token ids): every element of input argument `arg` lies in [0, bound)."""

    arg: int
    bound: int
    what: str  #: the gather or scatter and the coordinate, for messages


@dataclass(frozen=True)
class Function:
    """A host function: its buffers and its launch sequence."""

    name: str
    args: Tuple[BufferSpec, ...]
    temporaries: Tuple[BufferSpec, ...]
    launches: Tuple[Launch, ...]
    index_checks: Tuple[IndexCheck, ...] = ()

    @property
    def inputs(self) -> Tuple[int, ...]:
        """The argument indices of the inputs."""
        return tuple(i for i, a in enumerate(self.args) if a.role == "input")

    @property
    def outputs(self) -> Tuple[int, ...]:
        """The argument indices of the outputs."""
        return tuple(i for i, a in enumerate(self.args) if a.role == "output")


@dataclass(frozen=True)
class Manifest:
    """A parsed and validated manifest.json (format version 1)."""

    version: int
    format: str  #: "ptx" or "cubin"
    image: str  #: the image file, relative to the bundle directory
    chip: str  #: e.g. "sm_90a"
    functions: Tuple[Function, ...]
    #: Functions with symbolic sizes, as their manifest JSON: each is
    #: resolved at the sizes of a run (python/tang/sizes.py).
    symbolic: Dict[str, dict] = field(default_factory=dict)

    def function(self, name: str) -> Function:
        """The function called `name`; ValueError naming the others if none."""
        for f in self.functions:
            if f.name == name:
                return f
        if name in self.symbolic:
            raise ValueError(f"function '{name}' has symbolic sizes: it is "
                             "resolved by Bundle.run(..., sizes=...)")
        names = ", ".join([f.name for f in self.functions]
                          + list(self.symbolic)) or "(none)"
        raise ValueError(
            f"no function '{name}' in the bundle (it has {names})")


class _Reader:
    """Validates manifest JSON, naming the JSON path of the first problem
    ("functions[0].launches[1].args[2].arg: ...") as the C++ runtime does."""

    def __init__(self, where: str):
        self.where = where

    def fail(self, path: str, msg: str):
        raise ManifestError(
            f"{self.where}: {path}: {msg}" if path else f"{self.where}: {msg}")

    @staticmethod
    def join(path: str, key: str) -> str:
        return f"{path}.{key}" if path else key

    @staticmethod
    def kind(v) -> str:
        if v is None:
            return "null"
        if isinstance(v, bool):
            return "a boolean"
        if isinstance(v, (int, float)):
            return "a number"
        if isinstance(v, str):
            return "a string"
        if isinstance(v, list):
            return "an array"
        if isinstance(v, dict):
            return "an object"
        return type(v).__name__

    def member(self, obj: dict, path: str, key: str, typ: type):
        """The member `key` of `obj`, which must be a `typ`."""
        if key not in obj:
            self.fail(path, f'missing field "{key}"')
        v = obj[key]
        want = {dict: "an object", list: "an array", str: "a string"}[typ]
        if not isinstance(v, typ):
            self.fail(self.join(path, key),
                      f"expected {want}, got {self.kind(v)}")
        return v

    def integer(self, v, path: str, lo: int, hi: int) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            got = ("a non-integer number" if isinstance(v, float)
                   else self.kind(v))
            self.fail(path, f"expected an integer, got {got}")
        if not lo <= v <= hi:
            self.fail(path, f"{v} is out of range [{lo}, {hi}]")
        return v

    def name(self, obj: dict, path: str, key: str) -> str:
        v = self.member(obj, path, key, str)
        if not v:
            self.fail(self.join(path, key), "must not be empty")
        return v

    def obj(self, v, path: str) -> dict:
        if not isinstance(v, dict):
            self.fail(path, f"expected an object, got {self.kind(v)}")
        return v

    def buffer(self, v, path: str, temporary: bool) -> BufferSpec:
        v = self.obj(v, path)
        if temporary:
            role = "temporary"
        else:
            role = self.member(v, path, "role", str)
            if role not in ("input", "output"):
                self.fail(self.join(path, "role"),
                          f'unknown role "{role}" (expected "input", '
                          f'"output" or "size")')
        shape_path = self.join(path, "shape")
        dims = self.member(v, path, "shape", list)
        count = 1
        shape = []
        for i, d in enumerate(dims):
            d = self.integer(d, f"{shape_path}[{i}]", 0, _MAX_ELEMENTS)
            if d and count > _MAX_ELEMENTS // d:
                self.fail(shape_path, "too many elements")
            count *= d
            shape.append(d)
        dtype = self.member(v, path, "dtype", str)
        if dtype not in DTYPES:
            self.fail(self.join(path, "dtype"),
                      f'unknown dtype "{dtype}" (expected f64, f32, f16, '
                      f'bf16, i32, i8 or i1)')
        alias = None
        if "alias" in v:
            if role != "output":
                self.fail(self.join(path, "alias"),
                          "only an output aliases an input")
            alias = self.integer(v["alias"], self.join(path, "alias"), 0,
                                 _INT32_MAX)
        data = None
        if temporary and "data" in v:
            data = self.member(v, path, "data", str)
            if not data or "/" in data or ".." in data:
                self.fail(self.join(path, "data"),
                          "expected the name of a file of the bundle")
        init = None
        if temporary and "init" in v:  # from a resolved symbolic function
            init = tuple(self.integer(x, f"{path}.init", -_INT32_MAX - 1,
                                      _INT32_MAX) for x in v["init"])
            if dtype != "i32" or len(init) != count:
                self.fail(path, "init needs i32 and one value per element")
        return BufferSpec(role, tuple(shape), dtype, init, alias, data)

    def dim3(self, v: dict, path: str, key: str) -> Tuple[int, int, int]:
        a = self.member(v, path, key, list)
        p = self.join(path, key)
        if len(a) != 3:
            self.fail(p, f"expected 3 sizes, got {len(a)}")
        return tuple(self.integer(x, f"{p}[{i}]", 1, _INT32_MAX)
                     for i, x in enumerate(a))

    def launch(self, v, path: str, buffers: Tuple[BufferSpec, ...],
               temps: Tuple[BufferSpec, ...]) -> Launch:
        v = self.obj(v, path)
        kernel = self.name(v, path, "kernel")
        grid = self.dim3(v, path, "grid")
        block = self.dim3(v, path, "block")
        if "shared_bytes" not in v:
            self.fail(path, 'missing field "shared_bytes"')
        shared = self.integer(v["shared_bytes"],
                              self.join(path, "shared_bytes"), 0, _INT32_MAX)
        args = []
        for i, a in enumerate(self.member(v, path, "args", list)):
            p = f"{self.join(path, 'args')}[{i}]"
            a = self.obj(a, p)
            if (len(a) != (2 if "tensor_map" in a else 1)
                    or ("arg" in a) == ("temp" in a)):
                self.fail(p, 'expected exactly one of {"arg": i} or '
                             '{"temp": i}, and optionally "tensor_map"')
            kind = "arg" if "arg" in a else "temp"
            k = self.integer(a[kind], self.join(p, kind), 0, _INT32_MAX)
            count = len(buffers) if kind == "arg" else len(temps)
            if k >= count:
                what = "args" if kind == "arg" else "temporaries"
                self.fail(self.join(p, kind),
                          f"{kind} index {k} is out of range (the function "
                          f"has {count} {what})")
            tmap = None
            if "tensor_map" in a:
                buf = (buffers if kind == "arg" else temps)[k]
                tmap = self.tensor_map(a["tensor_map"],
                                       self.join(p, "tensor_map"), buf)
            args.append(LaunchArg(kind, k, tmap))
        return Launch(kernel, grid, block, shared, tuple(args))

    def tensor_map(self, v, path: str, buf: BufferSpec) -> TensorMapSpec:
        """A tensor map over `buf`, checked for what cuTensorMapEncodeTiled
        requires (the same checks and words as runtime/common)."""
        if not isinstance(v, dict):
            self.fail(path, f"expected an object, got {self.kind(v)}")
        for key in v:
            if key not in ("box", "swizzle"):
                self.fail(self.join(path, key), "unknown field")
        box = self.member(v, path, "box", list)
        if "swizzle" not in v:
            self.fail(path, 'missing field "swizzle"')
        swizzle = self.integer(v["swizzle"], self.join(path, "swizzle"), 0,
                               128)
        if swizzle not in (0, 32, 64, 128):
            self.fail(self.join(path, "swizzle"),
                      f"{swizzle} is not 0, 32, 64 or 128")
        rank = len(buf.shape)
        if not 1 <= rank <= 5:
            self.fail(path, f"a tensor map needs a buffer of rank 1 to 5, "
                            f"got {rank}")
        if buf.dtype == "i1":
            self.fail(path, "a tensor map cannot describe an i1 buffer")
        if len(box) != rank:
            self.fail(self.join(path, "box"),
                      f"has {len(box)} dimensions; the buffer has {rank}")
        box = tuple(self.integer(x, f"{self.join(path, 'box')}[{i}]", 1, 256)
                    for i, x in enumerate(box))
        nbytes = DTYPES[buf.dtype]
        if box[-1] * nbytes % 16:
            self.fail(self.join(path, "box"),
                      "the innermost box dimension must span a multiple of "
                      "16 bytes")
        if swizzle and box[-1] * nbytes > swizzle:
            self.fail(self.join(path, "box"),
                      f"the innermost box dimension spans more than the "
                      f"{swizzle}-byte swizzle")
        if rank > 1 and buf.shape[-1] * nbytes % 16:
            self.fail(path, "the buffer's rows must be a multiple of 16 "
                            "bytes for a tensor map")
        return TensorMapSpec(box, swizzle)

    def function(self, v, path: str) -> Function:
        v = self.obj(v, path)
        name = self.name(v, path, "name")
        args = self.member(v, path, "args", list)
        temps = self.member(v, path, "temporaries", list)
        launches = self.member(v, path, "launches", list)
        args = tuple(self.buffer(a, f"{path}.args[{i}]", False)
                     for i, a in enumerate(args))
        temps = tuple(self.buffer(t, f"{path}.temporaries[{i}]", True)
                      for i, t in enumerate(temps))
        launches = tuple(
            self.launch(l, f"{path}.launches[{i}]", args, temps)
            for i, l in enumerate(launches))
        for i, a in enumerate(args):
            if a.alias is None:
                continue
            if (a.alias >= len(args) or args[a.alias].role != "input"
                    or args[a.alias].shape != a.shape
                    or args[a.alias].dtype != a.dtype):
                self.fail(f"{path}.args[{i}].alias",
                          f"arg {a.alias} is not an input of the output's "
                          f"shape and dtype")
        checks = []
        raw = (self.member(v, path, "index_checks", list)
               if "index_checks" in v else [])
        for i, c in enumerate(raw):
            p = f"{path}.index_checks[{i}]"
            c = self.obj(c, p)
            if "arg" not in c or "bound" not in c:
                self.fail(p, 'expected {"arg", "bound", "what"}')
            arg = self.integer(c["arg"], f"{p}.arg", 0, len(args) - 1)
            bound = self.integer(c["bound"], f"{p}.bound", 1, 1 << 48)
            if args[arg].role != "input" or args[arg].dtype not in ("i32",
                                                                   "i8"):
                self.fail(f"{p}.arg", "names no integer input")
            checks.append(IndexCheck(arg, bound, self.name(c, p, "what")))
        return Function(name, args, temps, launches, tuple(checks))

    def manifest(self, root) -> Manifest:
        if not isinstance(root, dict):
            self.fail("", f"expected an object at the top, got "
                          f"{self.kind(root)}")
        if "version" not in root:
            self.fail("", 'missing field "version"')
        version = self.integer(root["version"], "version", 0, _INT32_MAX)
        if version != 1:
            self.fail("version", f"unsupported manifest version {version} "
                                 f"(this runtime reads version 1)")
        fmt = self.member(root, "", "format", str)
        if fmt not in ("ptx", "cubin"):
            self.fail("format",
                      f'unknown format "{fmt}" (expected "ptx" or "cubin")')
        image = self.name(root, "", "image")
        chip = self.member(root, "", "chip", str)
        functions, symbolic = [], {}
        for i, f in enumerate(self.member(root, "", "functions", list)):
            path = f"functions[{i}]"
            name = self.name(self.obj(f, path), path, "name")
            if name in symbolic or any(g.name == name for g in functions):
                self.fail(f"{path}.name", f'duplicate function name "{name}"')
            if _sizes.is_symbolic(f):
                symbolic[name] = f  # checked when resolved at a run's sizes
                continue
            functions.append(self.function(f, path))
        return Manifest(version, fmt, image, chip, tuple(functions), symbolic)


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f'duplicate member "{k}"')
        d[k] = v
    return d


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def parse_manifest(text, where: str = "manifest.json") -> Manifest:
    """Parses and validates manifest text (str or bytes) or an already
    decoded JSON object; `where` names it in errors. Raises ManifestError."""
    if isinstance(text, (str, bytes, bytearray)):
        try:
            root = json.loads(text, object_pairs_hook=_no_duplicates,
                              parse_constant=_no_constant)
        except json.JSONDecodeError as e:
            raise ManifestError(f"{where}: invalid JSON at line {e.lineno}, "
                                f"column {e.colno}: {e.msg}") from None
        except (ValueError, UnicodeDecodeError) as e:
            raise ManifestError(f"{where}: invalid JSON: {e}") from None
    else:
        root = text
    return _Reader(where).manifest(root)


def load_manifest(path) -> Manifest:
    """Reads and validates a manifest: `path` is a bundle directory or the
    manifest file itself. Raises ManifestError (or OSError if unreadable)."""
    p = Path(path)
    if p.is_dir():
        p = p / "manifest.json"
    return parse_manifest(p.read_bytes(), str(p))


# ---------------------------------------------------------------------------
# The driver, through ctypes
# ---------------------------------------------------------------------------

_CUDA_SUCCESS = 0
_CUDA_ERROR_NOT_FOUND = 500
_CUDA_ERROR_NO_DEVICE = 100
_CUDA_ERROR_STUB_LIBRARY = 34
_CU_JIT_INFO_LOG_BUFFER = 3
_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
_CU_JIT_ERROR_LOG_BUFFER = 5
_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
# cuda.h's CUtensorMap: 128 bytes; its enums for the manifest's dtypes and
# swizzles.
_TENSOR_MAP_BYTES = 128
_TENSOR_MAP_DTYPES = {"i8": 0, "i32": 3, "f16": 6, "f32": 7, "f64": 8,
                      "bf16": 9}
_TENSOR_MAP_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
_CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
_LOG_BYTES = 1 << 16

_c_int_p = ctypes.POINTER(ctypes.c_int)
_c_void_pp = ctypes.POINTER(ctypes.c_void_p)
_c_uint64_p = ctypes.POINTER(ctypes.c_uint64)
_u = ctypes.c_uint

# name -> (symbol names to try, in order; argument types). Versioned symbols
# are what cuda.h maps the plain names to.
_SIGNATURES = {
    "cuInit": (("cuInit",), [_u]),
    "cuDriverGetVersion": (("cuDriverGetVersion",), [_c_int_p]),
    "cuGetErrorName": (("cuGetErrorName",),
                       [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]),
    "cuGetErrorString": (("cuGetErrorString",),
                         [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]),
    "cuDeviceGetCount": (("cuDeviceGetCount",), [_c_int_p]),
    "cuDeviceGet": (("cuDeviceGet",), [_c_int_p, ctypes.c_int]),
    "cuDeviceGetName": (("cuDeviceGetName",),
                        [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]),
    "cuDeviceGetAttribute": (("cuDeviceGetAttribute",),
                             [_c_int_p, ctypes.c_int, ctypes.c_int]),
    "cuDevicePrimaryCtxRetain": (("cuDevicePrimaryCtxRetain",),
                                 [_c_void_pp, ctypes.c_int]),
    "cuDevicePrimaryCtxRelease": (("cuDevicePrimaryCtxRelease_v2",),
                                  [ctypes.c_int]),
    "cuCtxGetCurrent": (("cuCtxGetCurrent",), [_c_void_pp]),
    "cuCtxSetCurrent": (("cuCtxSetCurrent",), [ctypes.c_void_p]),
    "cuCtxGetDevice": (("cuCtxGetDevice",), [_c_int_p]),
    "cuCtxSynchronize": (("cuCtxSynchronize",), []),
    "cuStreamSynchronize": (("cuStreamSynchronize",), [ctypes.c_void_p]),
    "cuModuleLoadDataEx": (("cuModuleLoadDataEx",),
                           [_c_void_pp, ctypes.c_void_p, _u, _c_int_p,
                            _c_void_pp]),
    "cuModuleUnload": (("cuModuleUnload",), [ctypes.c_void_p]),
    "cuModuleGetFunction": (("cuModuleGetFunction",),
                            [_c_void_pp, ctypes.c_void_p, ctypes.c_char_p]),
    "cuFuncSetAttribute": (("cuFuncSetAttribute",),
                           [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    "cuMemAlloc": (("cuMemAlloc_v2",), [_c_uint64_p, ctypes.c_size_t]),
    "cuMemFree": (("cuMemFree_v2",), [ctypes.c_uint64]),
    "cuMemcpyHtoD": (("cuMemcpyHtoD_v2",),
                     [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]),
    "cuMemcpyDtoH": (("cuMemcpyDtoH_v2",),
                     [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]),
    "cuLaunchKernel": (("cuLaunchKernel",),
                       [ctypes.c_void_p, _u, _u, _u, _u, _u, _u, _u,
                        ctypes.c_void_p, _c_void_pp, _c_void_pp]),
    "cuEventCreate": (("cuEventCreate",), [_c_void_pp, _u]),
    "cuEventDestroy": (("cuEventDestroy_v2",), [ctypes.c_void_p]),
    "cuEventRecord": (("cuEventRecord",), [ctypes.c_void_p, ctypes.c_void_p]),
    "cuEventSynchronize": (("cuEventSynchronize",), [ctypes.c_void_p]),
    "cuEventElapsedTime": (("cuEventElapsedTime_v2", "cuEventElapsedTime"),
                           [ctypes.POINTER(ctypes.c_float), ctypes.c_void_p,
                            ctypes.c_void_p]),
}


def _library_name() -> str:
    return os.environ.get("TANG_LIBCUDA") or "libcuda.so.1"


class _Driver:
    """The driver's entry points, resolved and initialized (cuInit)."""

    def __init__(self, lib: ctypes.CDLL, name: str):
        self.lib = lib
        self.name = name
        missing = []
        for attr, (symbols, argtypes) in _SIGNATURES.items():
            fn = None
            for s in symbols:
                fn = getattr(lib, s, None)
                if fn is not None:
                    break
            if fn is None:
                missing.append(symbols[0])
                continue
            fn.argtypes = argtypes
            fn.restype = ctypes.c_int
            setattr(self, attr, fn)
        if missing:
            raise CudaUnavailableError(
                f"the CUDA driver {name} is too old: it lacks "
                f"{', '.join(missing)}")

    def optional(self, symbol: str, argtypes):
        """The entry point `symbol` with `argtypes`, or None when the driver
        lacks it (entry points only some bundles need)."""
        fn = getattr(self.lib, symbol, None)
        if fn is not None:
            fn.argtypes = argtypes
            fn.restype = ctypes.c_int
        return fn

    def status(self, r: int) -> str:
        """`r` as "CUDA_ERROR_X (description)"."""
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        self.cuGetErrorName(r, ctypes.byref(name))
        self.cuGetErrorString(r, ctypes.byref(text))
        s = name.value.decode() if name.value else f"CUresult {r}"
        return f"{s} ({text.value.decode()})" if text.value else s

    def check(self, r: int, what: str):
        """Raises CudaError naming call `what` unless `r` is success."""
        if r != _CUDA_SUCCESS:
            raise CudaError(f"{what} failed: {self.status(r)}")


_lock = threading.Lock()
# (driver, None) once loaded, (None, reason) once failed, None before.
_state: Optional[Tuple[Optional[_Driver], Optional[str]]] = None


def _load() -> Tuple[Optional[_Driver], Optional[str]]:
    name = _library_name()
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None, f"no CUDA driver ({name} not found)"
    try:
        drv = _Driver(lib, name)
    except CudaUnavailableError as e:
        return None, str(e)
    r = drv.cuInit(0)
    if r == _CUDA_ERROR_NO_DEVICE:
        return None, "no CUDA device"
    if r == _CUDA_ERROR_STUB_LIBRARY:
        return None, f"no CUDA driver ({name} is the CUDA toolkit's stub)"
    if r != _CUDA_SUCCESS:
        return None, (f"the CUDA driver failed to initialize: cuInit: "
                      f"{drv.status(r)}")
    count = ctypes.c_int()
    r = drv.cuDeviceGetCount(ctypes.byref(count))
    if r != _CUDA_SUCCESS:
        return None, f"cuDeviceGetCount failed: {drv.status(r)}"
    if count.value == 0:
        return None, "no CUDA device"
    return drv, None


def _driver_state() -> Tuple[Optional[_Driver], Optional[str]]:
    global _state
    with _lock:
        if _state is None:
            _state = _load()
        return _state


def _reset_driver():
    """Forgets the loaded driver, so that the next use loads it again (after
    TANG_LIBCUDA changed; for tests)."""
    global _state
    with _lock:
        _state = None


def _require_driver() -> _Driver:
    drv, reason = _driver_state()
    if drv is None:
        raise CudaUnavailableError(reason)
    return drv


def available() -> bool:
    """Whether the CUDA driver loads and sees at least one device."""
    return _driver_state()[0] is not None


def unavailable_reason() -> Optional[str]:
    """Why available() is False ("no CUDA driver (libcuda.so.1 not found)",
    "no CUDA device", ...); None when it is True."""
    return _driver_state()[1]


def device_count() -> int:
    """The number of CUDA devices (CudaUnavailableError without any)."""
    drv = _require_driver()
    n = ctypes.c_int()
    drv.check(drv.cuDeviceGetCount(ctypes.byref(n)), "cuDeviceGetCount")
    return n.value


def compute_capability(device: int = 0) -> Tuple[int, int]:
    """Device `device`'s compute capability, e.g. (9, 0)."""
    drv = _require_driver()
    major, minor = ctypes.c_int(), ctypes.c_int()
    for v, attr in ((major, _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                    (minor, _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)):
        drv.check(drv.cuDeviceGetAttribute(ctypes.byref(v), attr, device),
                  "cuDeviceGetAttribute")
    return major.value, minor.value


# ---------------------------------------------------------------------------
# Tensors
# ---------------------------------------------------------------------------


def _torch():
    """PyTorch if it can be imported, else None (imported on first use)."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def _is_torch_tensor(t) -> bool:
    return hasattr(t, "data_ptr") and hasattr(t, "is_cuda") and hasattr(
        t, "is_contiguous")


def _fmt_shape(shape) -> str:
    shape = tuple(shape)
    return f"({shape[0]},)" if len(shape) == 1 else str(shape)


def _pointer(t, spec: BufferSpec, what: str, device: int) -> int:
    """The device address of `t` after checking it against `spec`."""
    ptr = _unchecked_pointer(t, spec, what, device)
    # Kernels access buffers 16 bytes at a time (vector loads and stores,
    # bulk tensor copies).
    if ptr % _BUFFER_ALIGNMENT and spec.nbytes:
        raise ValueError(f"{what}: the buffer's address {ptr:#x} is not "
                         f"{_BUFFER_ALIGNMENT}-byte aligned (a view at an "
                         f"offset? pass a copy)")
    return ptr


_BUFFER_ALIGNMENT = 16


def _unchecked_pointer(t, spec: BufferSpec, what: str, device: int) -> int:
    if _is_torch_tensor(t):
        dtype = str(t.dtype).replace("torch.", "")
        if not t.is_cuda:
            raise ValueError(f"{what}: expected a CUDA tensor, got one on "
                             f"{t.device}")
        if t.device.index != device:
            raise ValueError(f"{what}: the tensor is on {t.device}, the "
                             f"bundle on cuda:{device}")
        if dtype != _TORCH_DTYPES[spec.dtype] or tuple(t.shape) != spec.shape:
            raise ValueError(
                f"{what}: expected {spec.dtype} ({_TORCH_DTYPES[spec.dtype]})"
                f" of shape {_fmt_shape(spec.shape)}, got {dtype} of shape "
                f"{_fmt_shape(t.shape)}")
        if not t.is_contiguous():
            raise ValueError(f"{what}: the tensor is not contiguous (call "
                             f".contiguous())")
        return t.data_ptr()
    cai = getattr(t, "__cuda_array_interface__", None)
    if cai is None:
        raise TypeError(f"{what}: expected a CUDA tensor, got "
                        f"{type(t).__name__}")
    typestr = cai["typestr"]
    if (typestr not in _TYPESTRS[spec.dtype] or
            tuple(cai["shape"]) != spec.shape):
        raise ValueError(
            f"{what}: expected {spec.dtype} ({_TYPESTRS[spec.dtype][0]}) of "
            f"shape {_fmt_shape(spec.shape)}, got {typestr} of shape "
            f"{_fmt_shape(cai['shape'])}")
    strides = cai.get("strides")
    if strides is not None:
        itemsize = DTYPES[spec.dtype]
        want, step = [], itemsize
        for d in reversed(spec.shape):
            want.append(step)
            step *= d
        if tuple(strides) != tuple(reversed(want)) and spec.numel > 1:
            raise ValueError(f"{what}: the array is not C-contiguous")
    return int(cai["data"][0])


def _stream_handle(stream) -> int:
    """A CUstream handle from None (the default stream), an int, or a stream
    object (torch.cuda.Stream's .cuda_stream, CuPy's .ptr)."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise TypeError(f"cannot use {type(stream).__name__} as a CUDA stream")


# ---------------------------------------------------------------------------
# Bundle
# ---------------------------------------------------------------------------


class _Prepared:
    """A function's kernels, temporaries and launch-parameter arrays, built
    once: a run only writes the argument pointers into `slots`."""

    def __init__(self, fn: Function, kernels: List[int]):
        self.fn = fn
        self.nargs = len(fn.args)
        # slots[0:nargs] are the arguments, slots[nargs:] the temporaries.
        self.slots = (ctypes.c_uint64 * (self.nargs + len(fn.temporaries)))()
        base = ctypes.addressof(self.slots)
        self.temps: List[int] = []  # cuMemAlloc'd, 0 for empty ones
        self.launches = []
        # Tensor maps: (slot, buffer spec, map spec, 64-byte aligned address
        # of its 128 bytes, the pointer it was last encoded for).
        self.maps = []
        self._map_storage = []
        for launch, kernel in zip(fn.launches, kernels):
            idx = [a.index if a.kind == "arg" else self.nargs + a.index
                   for a in launch.args]
            addresses = []
            for a, i in zip(launch.args, idx):
                if a.tensor_map is None:
                    addresses.append(base + 8 * i)
                    continue
                raw = ctypes.create_string_buffer(_TENSOR_MAP_BYTES + 64)
                self._map_storage.append(raw)
                at = (ctypes.addressof(raw) + 63) // 64 * 64
                spec = (fn.args[a.index] if a.kind == "arg"
                        else fn.temporaries[a.index])
                self.maps.append([i, spec, a.tensor_map, at, None])
                addresses.append(at)
            params = (ctypes.c_void_p * max(1, len(idx)))(*addresses)
            self.launches.append((kernel, launch.grid, launch.block,
                                  launch.shared_bytes, params))


def _input_shapes(raw: dict, tensors) -> List[Tuple[int, ...]]:
    """The shapes of the inputs among `tensors` (a run's arguments) of the
    symbolic manifest function `raw`."""
    nin = sum(a["role"] == "input" for a in raw["args"])
    return [tuple(t.__cuda_array_interface__["shape"])
            if hasattr(t, "__cuda_array_interface__")
            else tuple(getattr(t, "shape", ())) for t in tensors[:nin]]


class Bundle:
    """A loaded bundle: manifest, module and kernels (each resolved at load,
    so a missing kernel is a load error).

    Bundle(path, device=None): `path` is the bundle directory; `device` the
    CUDA ordinal (default: PyTorch's current device, else 0). Raises
    ManifestError for a bad manifest, CudaUnavailableError without a driver
    or a GPU, CudaError when the image does not load (with the JIT log).
    """

    def __init__(self, path, device: Optional[int] = None):
        self.path = Path(path)
        self.manifest = load_manifest(self.path)
        image_path = self.path / self.manifest.image
        try:
            image = image_path.read_bytes()
        except OSError as e:
            raise ManifestError(
                f"{self.path / 'manifest.json'}: cannot read the image "
                f"{image_path}: {e.strerror}") from None
        # Set before anything can fail, for close() (run by __del__).
        self._drv = None
        self._module = None
        self._retained = None
        self._prepared: Dict[object, _Prepared] = {}
        self._graphs: List["weakref.ref[Graph]"] = []
        self._instances: Dict[tuple, Function] = {}
        self._drv = _require_driver()
        self._ctx, self.device, self._retained = _acquire_context(
            self._drv, device)
        self._kernels: Dict[str, int] = {}
        self._shared_limit: Dict[int, int] = {}
        try:
            self._module = self._load_module(image, str(image_path))
            for fn in self.manifest.functions:
                for launch in fn.launches:
                    self._kernel(fn, launch)
            for raw in self.manifest.symbolic.values():
                for launch in raw["launches"]:
                    self._kernel_named(raw["name"], launch["kernel"])
        except BaseException:
            self.close()  # the context now, not when the traceback dies
            raise

    # -- loading -----------------------------------------------------------

    def _load_module(self, image: bytes, label: str) -> int:
        drv = self._drv
        err = ctypes.create_string_buffer(_LOG_BYTES)
        info = ctypes.create_string_buffer(_LOG_BYTES)
        opts = (ctypes.c_int * 4)(
            _CU_JIT_ERROR_LOG_BUFFER, _CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            _CU_JIT_INFO_LOG_BUFFER, _CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
        vals = (ctypes.c_void_p * 4)(
            ctypes.addressof(err), _LOG_BYTES - 1,
            ctypes.addressof(info), _LOG_BYTES - 1)
        data = ctypes.create_string_buffer(image)  # NUL-terminated for PTX
        module = ctypes.c_void_p()
        r = drv.cuModuleLoadDataEx(ctypes.byref(module), data, 4, opts, vals)
        if r != _CUDA_SUCCESS:
            msg = (f"cannot load {label}: cuModuleLoadDataEx failed: "
                   f"{drv.status(r)}")
            log = err.value.decode(errors="replace").rstrip()
            if log:
                msg += "\nJIT error log:\n" + log
            raise CudaError(msg)
        #: What the JIT said while loading (often empty).
        self.jit_info_log = info.value.decode(errors="replace").rstrip()
        return module.value

    def _kernel_named(self, fn_name: str, kernel: str) -> int:
        drv = self._drv
        k = self._kernels.get(kernel)
        if k is None:
            f = ctypes.c_void_p()
            r = drv.cuModuleGetFunction(ctypes.byref(f), self._module,
                                        kernel.encode())
            if r == _CUDA_ERROR_NOT_FOUND:
                raise CudaError(f"function '{fn_name}': no kernel "
                                f"'{kernel}' in "
                                f"{self.path / self.manifest.image}")
            drv.check(r, f"cuModuleGetFunction('{kernel}')")
            k = self._kernels[kernel] = f.value
        return k

    def _kernel(self, fn: Function, launch: Launch) -> int:
        drv = self._drv
        k = self._kernel_named(fn.name, launch.kernel)
        # Over 48 KiB of shared memory, static and dynamic together, must be
        # allowed explicitly: allowed for every dynamic size (the kernels'
        # few static bytes could tip a launch of exactly 48 KiB over).
        if launch.shared_bytes > self._shared_limit.get(k, 0):
            drv.check(drv.cuFuncSetAttribute(
                k, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                launch.shared_bytes),
                f"cuFuncSetAttribute('{launch.kernel}', "
                f"MAX_DYNAMIC_SHARED_SIZE_BYTES={launch.shared_bytes})")
            self._shared_limit[k] = launch.shared_bytes
        return k

    def _prepare(self, name: str, fn: Optional[Function] = None,
                 key=None) -> _Prepared:
        """The prepared function `name` (or `fn`, a symbolic function
        resolved at some sizes, cached under `key`)."""
        key = name if key is None else key
        p = self._prepared.get(key)
        if p is not None:
            return p
        fn = fn or self.manifest.function(name)
        p = _Prepared(fn, [self._kernel(fn, l) for l in fn.launches])
        self._make_current()
        for i, t in enumerate(fn.temporaries):
            ptr = ctypes.c_uint64(0)
            if t.nbytes:
                self._drv.check(
                    self._drv.cuMemAlloc(ctypes.byref(ptr), t.nbytes),
                    f"cuMemAlloc({t.nbytes}) for temporary #{i} of '{name}'")
            p.temps.append(ptr.value)
            p.slots[p.nargs + i] = ptr.value
            if t.init is not None and t.nbytes:
                data = (ctypes.c_int32 * len(t.init))(*t.init)
                self._drv.check(
                    self._drv.cuMemcpyHtoD(ptr.value, data, t.nbytes),
                    f"cuMemcpyHtoD of the sizes of '{name}'")
            if t.data is not None and t.nbytes:
                raw = (self.path / t.data).read_bytes()
                if len(raw) != t.nbytes:
                    raise ManifestError(
                        f"{self.path / t.data}: {len(raw)} bytes, but the "
                        f"constant of '{name}' takes {t.nbytes}")
                data = ctypes.create_string_buffer(raw, len(raw))
                self._drv.check(
                    self._drv.cuMemcpyHtoD(ptr.value, data, t.nbytes),
                    f"cuMemcpyHtoD of a constant of '{name}'")
        self._prepared[key] = p
        return p

    def _resolve(self, name: str, tensors, sizes) -> Tuple[Function, object]:
        """Function `name` at the sizes of a run: itself, or a symbolic
        function resolved at the inputs' shapes and `sizes` ({argument
        number: value} of its index arguments), with its cache key."""
        raw = self.manifest.symbolic.get(name)
        if raw is None:
            if sizes:
                raise TypeError(f"'{name}' has no sizes; got sizes={sizes}")
            return self.manifest.function(name), name
        shapes = _input_shapes(raw, tensors)
        size_args = {int(k): int(v) for k, v in (sizes or {}).items()}
        key = (name, tuple(shapes), tuple(sorted(size_args.items())))
        fn = self._instances.get(key)
        if fn is None:
            try:
                resolved = _sizes.instantiate(raw, shapes, size_args)
            except _sizes.SizeError as e:
                raise ValueError(str(e)) from None
            fn = _Reader(str(self.path / "manifest.json")).function(
                resolved, f"functions['{name}'] at {dict(size_args)}")
            self._instances[key] = fn
        return fn, key

    def _make_current(self):
        drv = self._drv
        cur = ctypes.c_void_p()
        drv.check(drv.cuCtxGetCurrent(ctypes.byref(cur)), "cuCtxGetCurrent")
        if cur.value != self._ctx:
            drv.check(drv.cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")

    # -- running -----------------------------------------------------------

    def function(self, name: str) -> Function:
        """The manifest entry of function `name`."""
        return self.manifest.function(name)

    def _bind(self, name: str, tensors, outputs, sizes=None):
        """Checks the tensors against function `name` (at `sizes`, for a
        function with symbolic sizes) and writes their pointers into its
        prepared launch parameters. Returns the prepared function, the
        outputs and whether any tensor is a PyTorch one."""
        if self._drv is None:
            raise CudaError("the bundle is closed")
        fn, key = self._resolve(name, tensors, sizes)
        nin, nout = len(fn.inputs), len(fn.outputs)
        if outputs is None and len(tensors) == len(fn.args):
            args = list(tensors)  # every buffer, in manifest order
            outputs = [args[i] for i in fn.outputs]
        else:
            if outputs is None and len(tensors) != nin:
                raise TypeError(f"'{name}' takes {nin} inputs (or all "
                                f"{len(fn.args)} buffers), got {len(tensors)}")
            if outputs is None:
                outputs = self._empty_outputs(fn)
            outputs = list(outputs)
            if len(tensors) != nin or len(outputs) != nout:
                raise TypeError(
                    f"'{name}' takes {nin} inputs and {nout} outputs, got "
                    f"{len(tensors)} inputs and {len(outputs)} outputs")
            args = [None] * len(fn.args)
            for i, t in zip(fn.inputs, tensors):
                args[i] = t
            for i, t in zip(fn.outputs, outputs):
                args[i] = t
        # An output updated in place is its donated input.
        for k, i in enumerate(fn.outputs):
            if fn.args[i].alias is not None:
                args[i] = outputs[k] = args[fn.args[i].alias]
        p = self._prepare(name, fn, key)
        uses_torch = False
        for i, (t, spec) in enumerate(zip(args, fn.args)):
            p.slots[i] = _pointer(t, spec, f"'{name}' arg #{i} ({spec.role})",
                                  self.device)
            uses_torch = uses_torch or _is_torch_tensor(t)
        for m in p.maps:
            if m[4] != p.slots[m[0]]:
                self._encode_tensor_map(name, p.slots[m[0]], m[1], m[2], m[3])
                m[4] = p.slots[m[0]]
        return p, outputs, uses_torch

    def _encode_tensor_map(self, name: str, ptr: int, buf: BufferSpec,
                           spec: TensorMapSpec, at: int):
        """Encodes the tensor map `spec` over buffer `buf` at device address
        `ptr` into the 128 bytes at host address `at`."""
        drv = self._drv
        encode = drv.optional("cuTensorMapEncodeTiled", [
            ctypes.c_void_p, ctypes.c_int, _u, ctypes.c_void_p, _c_uint64_p,
            _c_uint64_p, ctypes.POINTER(_u), ctypes.POINTER(_u),
            ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int])
        if encode is None:
            raise CudaError(f"'{name}': the bundle passes tensor maps (bulk "
                            f"tensor copies), and the CUDA driver lacks "
                            f"cuTensorMapEncodeTiled (CUDA 12 or newer "
                            f"needed)")
        rank = len(buf.shape)
        inner = list(reversed(buf.shape))
        dims = (ctypes.c_uint64 * rank)(*inner)
        strides, s = [], DTYPES[buf.dtype]
        for d in inner[:-1]:
            s *= d
            strides.append(s)
        stride_arr = (ctypes.c_uint64 * max(1, rank - 1))(*strides)
        box = (_u * rank)(*reversed(spec.box))
        ones = (_u * rank)(*([1] * rank))
        r = encode(at, _TENSOR_MAP_DTYPES[buf.dtype], rank, ptr, dims,
                   stride_arr, box, ones, 0, _TENSOR_MAP_SWIZZLE[spec.swizzle],
                   _CU_TENSOR_MAP_L2_PROMOTION_L2_256B, 0)
        if r != _CUDA_SUCCESS:
            raise CudaError(
                f"'{name}': cuTensorMapEncodeTiled (buffer "
                f"{'x'.join(map(str, buf.shape))} {buf.dtype}, box "
                f"{'x'.join(map(str, spec.box))}, swizzle {spec.swizzle}) "
                f"failed: {drv.status(r)}")

    def _empty_outputs(self, fn: Function) -> list:
        """New PyTorch tensors for `fn`'s outputs, on the bundle's device."""
        torch = _torch()
        if torch is None:
            raise TypeError(f"'{fn.name}': allocating the outputs needs "
                            f"PyTorch; pass outputs=[...]")
        device = f"cuda:{self.device}"
        specs = [fn.args[i] for i in fn.outputs]
        # (An output updated in place is its input: nothing to allocate.)
        return [None if s.alias is not None else
                torch.empty(s.shape, device=device,
                            dtype=getattr(torch, _TORCH_DTYPES[s.dtype]))
                for s in specs]

    def _stream(self, stream, uses_torch: bool) -> int:
        if stream is None and uses_torch:
            return _torch().cuda.current_stream(self.device).cuda_stream
        return _stream_handle(stream)

    def _launch_all(self, p: _Prepared, stream: int):
        drv = self._drv
        for n, (kernel, g, b, shared, params) in enumerate(p.launches):
            r = drv.cuLaunchKernel(kernel, g[0], g[1], g[2], b[0], b[1], b[2],
                                   shared, stream, params, None)
            if r != _CUDA_SUCCESS:
                raise CudaError(
                    f"'{p.fn.name}' launch #{n} "
                    f"({p.fn.launches[n].kernel}): cuLaunchKernel failed: "
                    f"{drv.status(r)}")

    def run(self, name: str, *tensors, outputs: Optional[Sequence] = None,
            stream=None, sync: bool = False, sizes=None,
            check_indices: bool = True):
        """Enqueues function `name`'s launch sequence.

        `tensors` are the inputs, in manifest order (or all buffers, inputs
        and outputs, in manifest order). Outputs are `outputs` when given,
        else allocated with torch.empty. Tensors are contiguous CUDA tensors
        (PyTorch, or objects with __cuda_array_interface__) on the bundle's
        device whose shape and dtype match the manifest. Launches go to
        `stream` (default: PyTorch's current stream when tensors are PyTorch
        tensors, else the default stream). With `sync`, waits for the kernels
        and reports their faults. Returns the output, or a tuple when there
        is not exactly one. A function with symbolic sizes takes the values
        of its index arguments as `sizes` ({argument number: value}); its
        `?` dimensions come from the inputs' shapes; a requirement the
        sizes break raises ValueError before anything runs.

        Token ids and other integer inputs that a trap gather or scatter
        indexes with (the manifest's "index_checks") are read back and
        checked first: an element outside its dimension raises IndexError
        before anything runs (it waits for `stream`). Inside a CUDA graph
        capture nothing can be read back: pass `check_indices=False` there
        and check the ids before each replay.
        """
        p, outs, uses_torch = self._bind(name, tensors, outputs, sizes)
        s = self._stream(stream, uses_torch)
        self._make_current()
        if check_indices:
            self._check_indices(p, s)
        self._launch_all(p, s)
        if sync:
            self._drv.check(self._drv.cuStreamSynchronize(s),
                            f"running '{name}': cuStreamSynchronize")
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _check_indices(self, p: _Prepared, stream: int):
        """Reads back each input that `p.fn`'s index checks name and raises
        IndexError at its first element outside [0, bound)."""
        fn, drv = p.fn, self._drv
        if not fn.index_checks:
            return
        capturing = drv.optional("cuStreamIsCapturing",
                                 [ctypes.c_void_p, _c_int_p])
        status = ctypes.c_int(0)
        if capturing is not None:
            drv.check(capturing(stream, ctypes.byref(status)),
                      "cuStreamIsCapturing")
        if status.value:
            raise CudaError(
                f"'{fn.name}' checks its index inputs before a run, which "
                "cannot be read back while the stream is captured: pass "
                "check_indices=False to the captured run and check them "
                "before each replay")
        drv.check(drv.cuStreamSynchronize(stream),
                  f"'{fn.name}': waiting for the index inputs")
        for c in fn.index_checks:
            spec = fn.args[c.arg]
            host = (ctypes.c_int32 if spec.dtype == "i32"
                    else ctypes.c_int8) * spec.numel
            values = host()
            drv.check(drv.cuMemcpyDtoH(values, p.slots[c.arg], spec.nbytes),
                      f"'{fn.name}': reading arg #{c.arg}")
            _sizes.check_index_values(f"'{fn.name}' arg #{c.arg} (input)",
                                      values, c.bound, c.what)

    def time(self, name: str, *tensors, outputs: Optional[Sequence] = None,
             repeat: int = 100, warmup: int = 10, stream=None,
             sizes=None) -> float:
        """The median time in milliseconds of one run of function `name`
        (arguments as for run), from CUDA events recorded between `repeat`
        back-to-back runs after `warmup` untimed ones."""
        if repeat < 1:
            raise ValueError("repeat must be at least 1")
        p, _, uses_torch = self._bind(name, tensors, outputs, sizes)
        s = self._stream(stream, uses_torch)
        self._make_current()
        self._check_indices(p, s)
        drv = self._drv
        for _ in range(warmup):
            self._launch_all(p, s)
        events = []
        try:
            for _ in range(repeat + 1):
                e = ctypes.c_void_p()
                drv.check(drv.cuEventCreate(ctypes.byref(e), 0),
                          "cuEventCreate")
                events.append(e.value)
            drv.check(drv.cuEventRecord(events[0], s), "cuEventRecord")
            for i in range(repeat):
                self._launch_all(p, s)
                drv.check(drv.cuEventRecord(events[i + 1], s),
                          "cuEventRecord")
            drv.check(drv.cuEventSynchronize(events[-1]),
                      f"timing '{name}': cuEventSynchronize")
            times = []
            ms = ctypes.c_float()
            for a, b in zip(events, events[1:]):
                drv.check(drv.cuEventElapsedTime(ctypes.byref(ms), a, b),
                          "cuEventElapsedTime")
                times.append(ms.value)
        finally:
            for e in events:
                drv.cuEventDestroy(e)
        return statistics.median(times)

    def capture(self, name: str, *tensors, outputs: Optional[Sequence] = None,
                sizes=None, stream=None,
                check_indices: bool = True) -> "Graph":
        """Function `name`'s launch sequence captured once in a CUDA graph
        over these tensors (arguments as for run; nothing runs). A function
        with symbolic sizes is captured at `sizes`, the largest its replays
        use: `Graph.replay(sizes=...)` runs it at other values of its index
        arguments (a decode step's position) by rewriting the sizes buffer
        first, provided every buffer keeps its shape and every temporary
        fits. The tensors must outlive the graph."""
        p, outs, uses_torch = self._bind(name, tensors, outputs, sizes)
        # The graph owns its prepared function: its launch parameters and
        # sizes buffer are the graph's, which a later run or capture of the
        # same key must not share (nor rewrite).
        key = next(k for k, v in self._prepared.items() if v is p)
        del self._prepared[key]
        try:
            exec_, entry = self._capture(
                name, p, self._stream(stream, uses_torch), check_indices)
        except BaseException:
            self._free(p)
            raise
        g = Graph(self, name, p, list(tensors), outs, sizes, exec_,
                  uses_torch, entry)
        self._graphs.append(weakref.ref(g))
        return g

    def _capture(self, name: str, p: _Prepared, s: int,
                 check_indices: bool) -> Tuple[int, dict]:
        """`p`'s launches captured and instantiated: (the graph exec, the
        driver entry points a Graph uses)."""
        self._make_current()
        if check_indices:
            self._check_indices(p, s)
        drv = self._drv
        entry = {n: drv.optional(sym, types) for n, sym, types in (
            ("create", "cuStreamCreate", [_c_void_pp, _u]),
            ("destroy", "cuStreamDestroy_v2", [ctypes.c_void_p]),
            ("begin", "cuStreamBeginCapture_v2", [ctypes.c_void_p, _u]),
            ("end", "cuStreamEndCapture", [ctypes.c_void_p, _c_void_pp]),
            ("instantiate", "cuGraphInstantiateWithFlags",
             [_c_void_pp, ctypes.c_void_p, ctypes.c_uint64]),
            ("graph_destroy", "cuGraphDestroy", [ctypes.c_void_p]),
            ("launch", "cuGraphLaunch", [ctypes.c_void_p, ctypes.c_void_p]),
            ("exec_destroy", "cuGraphExecDestroy", [ctypes.c_void_p]),
            ("copy", "cuMemcpyHtoDAsync_v2", [
                ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t,
                ctypes.c_void_p]))}
        missing = [n for n, f in entry.items() if f is None]
        if missing:
            raise CudaError(f"capturing '{name}': the driver lacks the CUDA "
                            f"graph entry points ({', '.join(missing)})")
        # A stream of its own (the legacy default stream cannot capture),
        # after the caller's stream's work.
        drv.check(drv.cuStreamSynchronize(s), f"capturing '{name}'")
        cs, graph, exec_ = (ctypes.c_void_p(), ctypes.c_void_p(),
                            ctypes.c_void_p())
        drv.check(entry["create"](ctypes.byref(cs), 1), "cuStreamCreate")
        try:
            # Relaxed mode: other threads' calls are not this capture's.
            drv.check(entry["begin"](cs, 2), "cuStreamBeginCapture")
            try:
                self._launch_all(p, cs.value)
            finally:
                drv.check(entry["end"](cs, ctypes.byref(graph)),
                          "cuStreamEndCapture")
            try:
                drv.check(entry["instantiate"](ctypes.byref(exec_), graph, 0),
                          f"instantiating the graph of '{name}'")
            finally:
                entry["graph_destroy"](graph)
        finally:
            entry["destroy"](cs)
        return exec_.value, entry

    def _free(self, p: _Prepared):
        """Frees the temporaries of `p` (after the context's work)."""
        if self._drv is None:
            return
        self._make_current()
        self._drv.cuCtxSynchronize()
        for t in p.temps:
            if t:
                self._drv.cuMemFree(t)
        p.temps = []

    def synchronize(self):
        """Waits for all work in the bundle's context; reports faults."""
        self._make_current()
        self._drv.check(self._drv.cuCtxSynchronize(), "cuCtxSynchronize")

    # -- teardown ----------------------------------------------------------

    def close(self):
        """Waits for the context's work (launches of this bundle may still
        be queued or running, or captured in a CUDA graph being replayed),
        then frees the temporaries, unloads the module and releases the
        context if the bundle retained it. Idempotent."""
        drv = getattr(self, "_drv", None)
        if drv is None:
            return
        for ref in self._graphs:
            g = ref()
            if g is not None:
                g.close()
        self._graphs = []
        try:
            if self._module is not None:
                self._make_current()
                # Freeing a temporary or unloading kernels that queued work
                # still uses is an illegal access later, in someone else's
                # call (a finaliser closes bundles at arbitrary points).
                drv.cuCtxSynchronize()
                for p in self._prepared.values():
                    for t in p.temps:
                        if t:
                            drv.cuMemFree(t)
                drv.cuModuleUnload(self._module)
        finally:
            self._prepared.clear()
            self._module = None
            if self._retained is not None:
                drv.cuDevicePrimaryCtxRelease(self._retained)
                self._retained = None
            self._drv = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # never raise from a finalizer
            pass

    def __repr__(self):
        names = ", ".join(f.name for f in self.manifest.functions)
        return (f"<tang.cuda.Bundle {str(self.path)!r} {self.manifest.format}"
                f" {self.manifest.chip} cuda:{self.device} [{names}]>")


class Graph:
    """A function's launch sequence captured in a CUDA graph
    (Bundle.capture): replay() launches it with one call."""

    def __init__(self, bundle: Bundle, name: str, p: _Prepared, tensors,
                 outputs, sizes, exec_: int, uses_torch: bool, entry: dict):
        self._bundle, self.name, self._p = bundle, name, p
        self._entry = entry
        self._tensors, self._outputs = tensors, outputs
        self._exec, self._uses_torch = exec_, uses_torch
        self._sizes = dict(sizes or {})
        self._written = self._sizes   # the sizes the buffer holds
        fn = p.fn
        # The sizes buffer: the temporary with initial contents.
        self._sizes_at = next((i for i, t in enumerate(fn.temporaries)
                               if t.init is not None), None)

    def replay(self, sizes=None, stream=None, check_indices: bool = True):
        """Launches the graph on `stream` (default as for Bundle.run) at
        `sizes` (default: the captured ones), after checking them like a
        run: a broken requirement raises ValueError, sizes that change a
        buffer's shape or outgrow a temporary raise ValueError (capture at
        larger sizes), index inputs outside their dimension IndexError
        (`check_indices`: it reads them back, waiting for the stream; pass
        False when they come from the previous replay, as a decode loop's
        argmax does). Returns the outputs as run does."""
        b, p = self._bundle, self._p
        if self._exec is None or b._drv is None:
            raise CudaError(f"the graph of '{self.name}' is closed")
        drv = b._drv
        s = b._stream(stream, self._uses_torch)
        b._make_current()
        want = self._sizes if sizes is None else dict(sizes)
        if want != self._written:
            # The sizes alone, not the whole function at them (a model's
            # has hundreds of launches: too slow for a decode step).
            raw = b.manifest.symbolic.get(self.name)
            if raw is None:
                raise TypeError(f"'{self.name}' has no sizes; got "
                                f"sizes={want}")
            try:
                values = _sizes.bind(raw, _input_shapes(raw, self._tensors),
                                     {int(k): int(v) for k, v in
                                      want.items()})
            except _sizes.SizeError as e:
                raise ValueError(str(e)) from None
            args = [tuple(_sizes.shape_at(a, values)) for a in raw["args"]
                    if a["role"] != "size"]
            if args != [a.shape for a in p.fn.args]:
                raise ValueError(
                    f"'{self.name}' at {want}: a buffer changes shape from "
                    f"the captured sizes {self._sizes}; capture again")
            temps = [_sizes.shape_at(t, values) for t in raw["temporaries"]]
            if any(min(d, default=0) < 0 or math.prod(d) * DTYPES[t["dtype"]]
                   > c.nbytes for d, t, c in zip(temps, raw["temporaries"],
                                                 p.fn.temporaries)):
                raise ValueError(
                    f"'{self.name}' at {want}: a temporary outgrows the one "
                    f"captured at {self._sizes}; capture at the largest "
                    "sizes the replays use")
            words = (ctypes.c_int32 * max(1, len(values)))(*values)
            # From pageable memory: staged before the call returns, in
            # stream order before the launch (replays on one stream: on
            # another, wait for the previous replay first).
            drv.check(self._entry["copy"](p.temps[self._sizes_at], words,
                           ctypes.sizeof(words), s),
                      f"'{self.name}': writing the sizes")
            self._written = want
        if check_indices:
            b._check_indices(p, s)
        drv.check(self._entry["launch"](self._exec, s),
                  f"replaying '{self.name}'")
        outs = self._outputs
        return outs[0] if len(outs) == 1 else tuple(outs)

    def close(self):
        """Waits for the context, then frees the graph and its temporaries
        (Bundle.close closes its graphs). Idempotent."""
        b = self._bundle
        if self._exec is not None and b._drv is not None:
            b._make_current()
            b._drv.cuCtxSynchronize()
            self._entry["exec_destroy"](self._exec)
            b._free(self._p)
        self._exec = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _acquire_context(drv: _Driver, device: Optional[int]):
    """The context to run in: PyTorch's current one when it is on `device`,
    else `device`'s primary context, retained and made current. Returns
    (context, device ordinal, the CUdevice to release or None)."""
    torch = _torch()
    if torch is not None and torch.cuda.is_available():
        torch.cuda.init()
        if device is None:
            device = torch.cuda.current_device()
    if device is None:
        device = 0
    n = ctypes.c_int()
    drv.check(drv.cuDeviceGetCount(ctypes.byref(n)), "cuDeviceGetCount")
    if not 0 <= device < n.value:
        raise CudaUnavailableError(
            f"no CUDA device #{device} (the driver sees {n.value})")
    cur = ctypes.c_void_p()
    drv.check(drv.cuCtxGetCurrent(ctypes.byref(cur)), "cuCtxGetCurrent")
    if cur.value:
        dev = ctypes.c_int()
        drv.check(drv.cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
        if dev.value == device:
            return cur.value, device, None
    handle = ctypes.c_int()
    drv.check(drv.cuDeviceGet(ctypes.byref(handle), device), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    drv.check(drv.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), handle.value),
              "cuDevicePrimaryCtxRetain")
    r = drv.cuCtxSetCurrent(ctx)
    if r != _CUDA_SUCCESS:
        drv.cuDevicePrimaryCtxRelease(handle.value)
        drv.check(r, "cuCtxSetCurrent")
    return ctx.value, device, handle.value
