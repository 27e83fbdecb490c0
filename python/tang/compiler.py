"""Compile tang programs and run them on NumPy arrays: ``tang.compile``.

    import numpy as np, tang
    from tang import f32

    @tang.function
    def softmax(x: f32["M", 128]):
        ...

    run = tang.compile(softmax)            # the C backend, on the CPU
    y = run(np.random.rand(4, 128).astype(np.float32))

Targets:

* ``"c"`` (the default): ``tang-opt --tang-lower-c`` (fused), the C source
  built by the system C compiler (``CC``, default ``cc``) with OpenMP into
  a shared library, loaded with ctypes; NumPy arrays in and out.
* ``"interpreter"``: the float64 reference interpreter (``tang-run``), the
  oracle every backend is checked against; outputs are float64.
* ``"cuda"``: ``tang-opt --tang-lower-cuda`` to a bundle run by
  ``tang.cuda.Bundle`` on PyTorch tensors (see tang.cuda).

Where the tools are found, in order: ``TANG_OPT`` / ``TANG_RUN`` (a
path), ``TANG_BIN`` (a directory), the ``PATH`` (an installed tang), and
the ``build/bin`` of the source tree this package sits in.

Compiled programs are cached on disk under ``TANG_CACHE_DIR`` (default
``~/.cache/tang``), keyed by the program text, the target, its options and
the compiler: a second ``tang.compile`` of the same program loads the
library without running tang-opt or the C compiler.

Inputs of the CPU targets are NumPy arrays or anything with ``__dlpack__``
(taken without a copy); outputs are NumPy arrays.

Sizes (``?`` dimensions) are bound from the inputs' shapes; index
arguments (``tang.size``) are passed as Python ints in their place.
Mismatched shapes, dtypes or counts are a ``TangError`` naming the
argument.
"""

import ctypes
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import List, Optional, Union

from . import sizes as _sizes
from .lang import Function, TangError

__all__ = ["compile", "find_tool", "Compiled", "NUMPY_DTYPES"]

# Part of every cache key: a new tang invalidates old bundles.
_VERSION = "0.2.0"

NUMPY_DTYPES = {"f64": "float64", "f32": "float32", "f16": "float16",
                "i32": "int32", "i8": "int8", "i1": "bool"}

_TOOL_ENV = {"tang-opt": "TANG_OPT", "tang-run": "TANG_RUN"}


def find_tool(name: str) -> Path:
    """The path of ``tang-opt`` or ``tang-run`` (see the module doc)."""
    env = _TOOL_ENV.get(name)
    if env and os.environ.get(env):
        return Path(os.environ[env])
    if os.environ.get("TANG_BIN"):
        return Path(os.environ["TANG_BIN"]) / name
    found = shutil.which(name)
    if found:
        return Path(found)
    tree = Path(__file__).resolve().parents[2] / "build" / "bin" / name
    if tree.exists():
        return tree
    raise TangError(f"{name} not found: set {env or 'TANG_BIN'}, put an "
                    f"installed tang on PATH, or build the source tree "
                    f"(scripts/build.sh)")


def _tool_identity() -> Optional[str]:
    """Which tang-opt would build (size and time of the binary), or None
    where there is none: a bundle built by another tang-opt is rebuilt, and
    a machine without tang-opt uses what it was given."""
    try:
        st = find_tool("tang-opt").stat()
    except (TangError, OSError):
        return None
    return f"{st.st_size}-{int(st.st_mtime)}"


def _run(args, what: str):
    r = subprocess.run([str(a) for a in args], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise TangError(f"{what} failed:\n{r.stderr.strip()}")
    return r


def _cache_root() -> Path:
    root = os.environ.get("TANG_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "tang"


def _program_text(program) -> str:
    if isinstance(program, Function):
        return program.mlir()
    if isinstance(program, (str, Path)) and Path(str(program)).suffix == \
            ".mlir" and Path(str(program)).exists():
        return Path(program).read_text()
    if isinstance(program, str):
        return program
    raise TangError(f"tang.compile takes a tang.Function, MLIR text or a "
                    f".mlir file, got {type(program).__name__}")


class Compiled:
    """A compiled function: call it with one array per tensor argument (an
    int per index argument); returns its outputs (one array, or a tuple)."""

    def __init__(self, text: str, target: str, directory: Path,
                 function: Optional[str]):
        self.text, self.target, self.directory = text, target, directory
        self.function = function
        self._lib = None
        self.manifest = None
        if target in ("c", "cuda"):
            self.manifest = json.loads(
                (directory / "bundle" / "manifest.json").read_text())
            names = [f["name"] for f in self.manifest["functions"]]
            if function is None:
                function = names[0]
            if function not in names:
                raise TangError(f"no function @{function} in the program "
                                f"({', '.join(names)})")
            self.function = function
            self.spec = next(f for f in self.manifest["functions"]
                             if f["name"] == function)
        if target == "c":
            self._lib = ctypes.CDLL(str(directory / "kernels.so"))
        self._bundle = None   # a CUDA bundle: loaded at the first call

    def __repr__(self):
        return f"tang.Compiled(@{self.function}, target={self.target})"

    def __call__(self, *args):
        if self.target == "interpreter":
            return self._interpret(args)
        if self.target == "cuda":
            if self._bundle is None:
                from . import cuda
                self._bundle = cuda.Bundle(self.directory / "bundle")
            try:
                return self._bundle.run(self.function, *args)
            except (ValueError, IndexError) as e:  # refused, nothing ran
                raise TangError(self._named(str(e))) from None
        return self._run_c(args)

    def _split(self, args, spec_args):
        """(arrays for the tensor arguments, {arg: int} for the sizes)."""
        import numpy as np
        arrays, size_args = [], {}
        if len(args) != len(spec_args):
            raise TangError(f"@{self.function} takes {len(spec_args)} "
                            f"arguments, got {len(args)}")
        for k, (a, is_size) in enumerate(zip(args, spec_args)):
            if is_size:
                if not isinstance(a, (int, np.integer)):
                    raise TangError(f"argument #{k} of @{self.function} is a "
                                    f"size: pass an int, got "
                                    f"{type(a).__name__}")
                size_args[k] = int(a)
            elif not isinstance(a, np.ndarray) and hasattr(a, "__dlpack__"):
                # DLPack (a CPU torch tensor, a JAX or CuPy host array): no
                # copy.
                arrays.append(np.from_dlpack(a))
            else:
                arrays.append(np.asarray(a))
        return arrays, size_args

    def _interpret(self, args):
        import numpy as np
        kinds = self._interpreter_kinds()
        arrays, size_args = self._split(args, kinds)
        with tempfile.TemporaryDirectory(prefix="tang-run-") as tmp:
            tmp = Path(tmp)
            program = tmp / "program.mlir"
            program.write_text(self.text)
            cmd = [find_tool("tang-run"), program, f"--output-dir={tmp}"]
            if self.function:
                cmd.append(f"--entry={self.function}")
            for k, a in enumerate(arrays):
                np.save(tmp / f"in{k}.npy", a)
                cmd.append(f"--input={tmp / f'in{k}.npy'}")
            for arg, n in size_args.items():
                cmd.append(f"--size=arg{arg}={n}")
            _run(cmd, "tang-run")
            outs = sorted(tmp.glob("output_*.npy"),
                          key=lambda p: int(p.stem.split("_")[1]))
            results = [np.load(p) for p in outs]
        return results[0] if len(results) == 1 else tuple(results)

    def _named(self, message: str) -> str:
        """`message` with the lowered argument names (%arg3) replaced by
        the program's (%pos)."""
        import re
        names = self._arg_names()

        def name(m):
            k = int(m.group(1))
            return names[k] if k < len(names) else m.group(0)
        return re.sub(r"%arg(\d+)\b", name, message)

    def _arg_names(self) -> List[str]:
        import re
        m = re.search(rf"func\.func @{re.escape(self.function or '')}\w*"
                      r"\((.*?)\)\s*->", self.text, re.S)
        if not m:
            return []
        return [re.match(r"\s*(%[\w$.-]+)", a).group(1)
                for a in re.split(r",\s*(?=%)", m.group(1)) if a.strip()]

    def _interpreter_kinds(self) -> List[bool]:
        # Which arguments are index arguments: from the function's header.
        import re
        name = self.function
        pattern = (rf"func\.func @{re.escape(name)}\((.*?)\)\s*->" if name
                   else r"func\.func @\w+\((.*?)\)\s*->")
        m = re.search(pattern, self.text, re.S)
        if not m:
            raise TangError("cannot find the function's arguments")
        args = [a for a in re.split(r",\s*(?=%)", m.group(1)) if a.strip()]
        return [re.search(r":\s*index\b", a) is not None for a in args]

    def _run_c(self, args):
        import numpy as np
        fn = self.spec
        kinds = [a["role"] == "size" for a in fn["args"]
                 if a["role"] in ("input", "size")]
        arrays, size_args = self._split(args, kinds)
        # size_args are numbered among inputs and sizes: renumber to the
        # manifest's argument numbers.
        numbers = [i for i, a in enumerate(fn["args"])
                   if a["role"] in ("input", "size")]
        size_args = {numbers[k]: v for k, v in size_args.items()}
        try:
            fn = _sizes.instantiate(fn, [a.shape for a in arrays], size_args)
        except _sizes.SizeError as e:
            raise TangError(self._named(str(e))) from None
        buffers, k_in = [], 0
        for i, spec in enumerate(fn["args"]):
            dtype = np.dtype(NUMPY_DTYPES[spec["dtype"]])
            shape = tuple(spec["shape"])
            if spec["role"] == "input":
                a = arrays[k_in]
                k_in += 1
                if a.shape != shape:
                    raise TangError(f"@{self.function}: input #{k_in - 1} "
                                    f"has shape {a.shape}, expected {shape}")
                if a.dtype != dtype:
                    raise TangError(f"@{self.function}: input #{k_in - 1} is "
                                    f"{a.dtype}, expected {dtype} "
                                    f"({spec['dtype']})")
                buffers.append(np.ascontiguousarray(a))
            else:
                buffers.append(np.empty(shape, dtype))
        try:
            _sizes.check_indices(fn, arrays)
        except IndexError as e:
            raise TangError(self._named(str(e))) from None
        data = self.directory / "bundle"
        temps = []
        for t in fn["temporaries"]:
            dtype = np.dtype(NUMPY_DTYPES[t["dtype"]])
            if "init" in t:
                temps.append(np.array(t["init"], dtype))
            elif "data" in t:
                temps.append(np.fromfile(data / t["data"], dtype)
                             .reshape(t["shape"]))
            else:
                temps.append(np.zeros(t["shape"], dtype))
        for launch in fn["launches"]:
            grid = (ctypes.c_long * 3)(*launch["grid"])
            block = (ctypes.c_long * 3)(*launch["block"])
            ptrs = [(temps[a["temp"]] if "temp" in a
                     else buffers[a["arg"]]).ctypes.data
                    for a in launch["args"]]
            getattr(self._lib, "tang_launch_" + launch["kernel"])(
                grid, block, (ctypes.c_void_p * len(ptrs))(*ptrs))
        buffers = [buffers[s["alias"]] if "alias" in s else b
                   for b, s in zip(buffers, fn["args"])]
        outs = [b for b, s in zip(buffers, fn["args"])
                if s["role"] == "output"]
        return outs[0] if len(outs) == 1 else tuple(outs)


def _tuning_cache_digest(options: str) -> str:
    """The content hash of the tuning cache ``options`` name
    (``schedule-cache=FILE``, docs/Tuning.md), so that a re-tuned cache
    compiles anew; empty without one."""
    m = re.search(r"schedule-cache=(\S+)", options)
    if not m:
        return ""
    path = Path(m.group(1))
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as e:
        raise TangError(f"schedule-cache={path}: {e.strerror}") from None


def compile(program: Union[Function, str, Path], target: str = "c",
            options: str = "", function: Optional[str] = None,
            cache: bool = True) -> Compiled:
    """``program`` (a ``tang.Function``, MLIR text or a ``.mlir`` file)
    compiled for ``target`` (``"c"``, ``"interpreter"``, ``"cuda"``);
    ``options`` are added to the lowering pipeline's options (for
    ``"cuda"``, ``"schedule-cache=FILE"`` takes measured schedules from a
    tuning cache, docs/Tuning.md: the file's contents are part of the
    compile cache's key);
    ``function`` picks the function of a module (default: the first)."""
    text = _program_text(program)
    if isinstance(program, Function) and function is None:
        function = program.name
    if target not in ("c", "interpreter", "cuda"):
        raise TangError(f"unknown target {target!r}: c, interpreter or cuda")
    cc = os.environ.get("CC", "cc")
    # The key names what decides the result; the tools' paths do not (a
    # cache filled here is used on a machine without tang-opt: a GPU box
    # running bundles compiled elsewhere).
    key = hashlib.sha256("\0".join(
        [text, target, options, cc if target == "c" else "",
         _tuning_cache_digest(options), _VERSION]).encode()).hexdigest()[:24]
    directory = _cache_root() / key if cache else Path(
        tempfile.mkdtemp(prefix="tang-"))
    done = directory / "done"
    if target == "interpreter":
        # Parse and verify now, so errors come at compile time.
        with tempfile.NamedTemporaryFile("w", suffix=".mlir") as f:
            f.write(text)
            f.flush()
            _run([find_tool("tang-opt"), f.name, "-o", os.devnull],
                 "tang-opt")
        return Compiled(text, target, directory, function)
    identity = _tool_identity()
    stale = done.exists() and identity is not None and \
        done.read_text() != identity
    if not done.exists() or stale:
        tang_opt = find_tool("tang-opt")
        work = Path(tempfile.mkdtemp(prefix="tang-build-"))
        program_file = work / "program.mlir"
        program_file.write_text(text)
        pipeline = "tang-lower-c" if target == "c" else "tang-lower-cuda"
        _run([tang_opt, program_file,
              f"--{pipeline}=fuse=1 bundle={work / 'bundle'} {options}"
              .strip(), "-o", os.devnull], f"tang-opt --{pipeline}")
        if target == "c":
            manifest = json.loads((work / "bundle" / "manifest.json")
                                  .read_text())
            _run([cc, "-O2", "-std=c11", "-shared", "-fPIC", "-fopenmp",
                  work / "bundle" / manifest["image"], "-o",
                  work / "kernels.so", "-lm"], f"{cc} (the C backend)")
        (work / "done").write_text(identity or "")
        directory.parent.mkdir(parents=True, exist_ok=True)
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(work, directory)
    return Compiled(text, target, directory, function)
