"""Symbolic sizes of a bundle function (docs/Bundle.md, "Sizes").

A function whose tang program has `index` arguments or `?` dimensions lists
its size symbols ("sizes"), gives some shapes as sizes ([constant,
coefficient of symbol 0, 1, ...]) and states requirements on them. Before a
run, `instantiate` binds the symbols from the inputs' shapes and the index
arguments' values, checks the requirements (nothing runs when one fails)
and returns the function with every shape resolved, its size arguments
gone and the sizes buffer a temporary holding the symbols' values: what
runtime/common/Manifest.cpp's FunctionSpec::instantiate does for the C++
runtimes, on the manifest's JSON.

Programs name the sizes they are run at in comment lines, one run each:

    // sizes: arg5=9                 (index argument #5)
    // sizes: arg0.0=3 arg2=7        (dimension 0 of argument #0, ...)

the syntax of `tang-run --size`; `program_sizes` reads them.
"""

import re
from typing import Dict, List, Sequence, Tuple


class SizeError(ValueError):
    """A size is missing, negative, or breaks a requirement."""


def evaluate(terms: Sequence[int], values: Sequence[int]) -> int:
    """The size `terms` ([constant, coefficients...]) at `values`."""
    v = terms[0] if terms else 0
    for i, c in enumerate(terms[1:]):
        v += c * (values[i] if i < len(values) else 0)
    return v


def is_symbolic(fn) -> bool:
    """Whether the manifest function `fn` has sizes given when it runs
    (False for JSON too malformed to say: the manifest check reports it)."""
    if not isinstance(fn, dict):
        return False
    args = fn.get("args") if isinstance(fn.get("args"), list) else []
    launches = (fn.get("launches") if isinstance(fn.get("launches"), list)
                else [])
    return ("sizes" in fn
            or any(isinstance(a, dict) and a.get("role") == "size"
                   for a in args)
            or any(isinstance(l, dict) and isinstance(l.get("args"), list)
                   and any(isinstance(a, dict) and "sizes" in a
                           for a in l["args"]) for l in launches))


def check_index_values(where: str, values, bound: int, what: str) -> None:
    """One index check (docs/Bundle.md, "Index checks"): raises IndexError
    at the first of `values` outside [0, bound); `where` names the function
    and the input, `what` the gather."""
    for e, v in enumerate(values):
        if not 0 <= v < bound:
            raise IndexError(f"{where}: element {e} is {v}, outside "
                             f"[0, {bound}) for {what}; nothing ran")


def check_indices(fn: dict, inputs: Sequence) -> None:
    """The manifest function `fn`'s index checks on its host inputs
    `inputs` (NumPy arrays, in input order)."""
    import numpy as np
    args = fn["args"]
    for c in fn.get("index_checks", []):
        k = sum(a["role"] == "input" for a in args[:c["arg"]])
        check_index_values(f"'{fn['name']}' input #{k}",
                           np.asarray(inputs[k]).reshape(-1).tolist(),
                           c["bound"], c["what"])


def bind(fn: dict, input_shapes: Sequence[Sequence[int]],
         size_args: Dict[int, int]) -> List[int]:
    """The values of the symbolic function `fn`'s size symbols at
    `input_shapes` and `size_args` (as instantiate takes them), its
    requirements checked: raises SizeError naming the size and its value."""
    name = fn["name"]
    input_of = {}
    for i, a in enumerate(fn["args"]):
        if a["role"] == "input":
            input_of[i] = len(input_of)
    values = []
    for s in fn.get("sizes", []):
        if "dim" not in s:
            if s["arg"] not in size_args:
                raise SizeError(
                    f"'{name}': argument #{s['arg']} is a size ({s['name']}):"
                    f" give it with --size arg{s['arg']}=N")
            v = size_args[s["arg"]]
        else:
            k = input_of[s["arg"]]
            if k >= len(input_shapes) or s["dim"] >= len(input_shapes[k]):
                raise SizeError(f"'{name}': input #{k} has no dimension "
                                f"{s['dim']} for {s['name']}")
            v = input_shapes[k][s["dim"]]
        if v < 0:
            raise SizeError(f"'{name}': {s['name']} = {v}: sizes are at "
                            "least 0")
        if v > 2**31 - 1:
            raise SizeError(f"'{name}': {s['name']} = {v} does not fit the "
                            "kernels' 32-bit sizes")
        values.append(int(v))
    for arg in size_args:
        if arg >= len(fn["args"]) or fn["args"][arg]["role"] != "size":
            raise SizeError(f"'{name}': --size arg{arg} names no size "
                            "argument")
    for r in fn.get("requirements", []):
        if evaluate(r["size"], values) >= 0:
            continue
        used = ", ".join(f"{s['name']} = {values[i]}"
                         for i, s in enumerate(fn["sizes"])
                         if i + 1 < len(r["size"]) and r["size"][i + 1])
        raise SizeError(f"'{name}': the sizes break a requirement: "
                        f"{r['what']} only if {r['condition']}, but {used}; "
                        "nothing ran")
    return values


def shape_at(buffer: dict, values: Sequence[int]) -> List[int]:
    """A manifest buffer's shape at the symbols' `values`."""
    return [evaluate(d, values) if isinstance(d, list) else d
            for d in buffer["shape"]]


def instantiate(fn: dict, input_shapes: Sequence[Sequence[int]],
                size_args: Dict[int, int]) -> dict:
    """`fn` (a manifest function) at the sizes that `input_shapes` (one per
    input, in order) and `size_args` (index arguments by argument number)
    give. Raises SizeError naming the size and its value."""
    if not is_symbolic(fn):
        return fn
    values = bind(fn, input_shapes, size_args)
    name = fn["name"]

    def resolve(b):
        b = dict(b)
        b["shape"] = shape_at(b, values)
        if any(d < 0 for d in b["shape"]):
            raise SizeError(f"'{name}': a buffer of shape {b['shape']} at "
                            "these sizes")
        return b

    out = {"name": name, "args": [], "temporaries": [], "launches": []}
    arg_index = {}
    for i, a in enumerate(fn["args"]):
        if a["role"] == "size":
            continue
        arg_index[i] = len(out["args"])
        out["args"].append(resolve(a))
    for a in out["args"]:
        if "alias" in a:
            a["alias"] = arg_index[a["alias"]]
    if "index_checks" in fn:
        out["index_checks"] = [
            dict(c, arg=arg_index.get(c.get("arg"), -1))
            if isinstance(c, dict) else c for c in fn["index_checks"]]
    out["temporaries"] = [resolve(t) for t in fn["temporaries"]]
    sizes_temp = len(out["temporaries"])
    out["temporaries"].append({"shape": [max(1, len(values))], "dtype": "i32",
                               "init": values or [0]})
    for launch in fn["launches"]:
        launch = dict(launch)
        args = []
        for a in launch["args"]:
            if "sizes" in a:
                args.append({"temp": sizes_temp})
            elif "arg" in a:
                args.append(dict(a, arg=arg_index[a["arg"]]))
            else:
                args.append(dict(a))
        launch["args"] = args
        out["launches"].append(launch)
    return out


_SPEC = re.compile(r"^arg(\d+)(?:\.(\d+))?=(\d+)$")


def parse_specs(specs: Sequence[str]) -> Tuple[Dict[int, int],
                                               Dict[Tuple[int, int], int]]:
    """`tang-run --size` values: (index arguments {arg: N}, dimensions
    {(arg, dim): N})."""
    args, dims = {}, {}
    for spec in specs:
        m = _SPEC.match(spec)
        if not m:
            raise SizeError(f"--size {spec}: expected argK=N or argK.D=N")
        arg, dim, n = int(m[1]), m[2], int(m[3])
        if dim is None:
            args[arg] = n
        else:
            dims[(arg, int(dim))] = n
    return args, dims


def program_sizes(text: str) -> List[List[str]]:
    """The `// sizes:` lines of a program: the --size values of each run."""
    return [line.split(":", 1)[1].split()
            for line in text.splitlines()
            if line.startswith("// sizes:")]
