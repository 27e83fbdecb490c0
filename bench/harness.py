"""Shared measurement harness of the bench suites (issue 16, items 9-13).

Four things every suite needs, in one place, so that a skeptic reads the rule
once:

1. **Elementwise checks against float64** (`Tolerance`, `check_elementwise`,
   `check_tensor`). Every element of every output is compared, on the GPU in
   chunks where the output lives there. The rule, with u(t) the unit
   roundoff of type t (half its machine epsilon: bf16 2^-8, f16 2^-11, tf32
   2^-11, f32 2^-24, f64 2^-53):

       |got - ref| <= atol + rtol * |ref|        for every finite ref
       rtol = 2 u(storage)                       (the final rounding to the
                                                 storage type, and as much
                                                 again for the arithmetic
                                                 just before it)
       atol = TAIL * scale * sqrt(R u(storage)^2 + K u(acc)^2
                                  + 2 u(operand)^2)
       scale = the root mean square of the finite elements of ref

   where R counts the roundings to the storage type on the longest path to
   the output (1 for a product or a norm; more where the program stores
   intermediates, such as attention's probabilities or every step of the
   transformer block), K is the longest reduction's length, acc is the type
   the sums are accumulated in, operand the type the operands are rounded
   to before the products (tf32; none otherwise), and TAIL = 8 is the
   distance, in standard deviations, that the largest of up to ~1e9 roughly
   normal rounding errors reaches (such errors add in quadrature; absolute
   errors scale with the size of the values being summed, which is the
   output's scale, not each element's). An output that is right except for
   one element, one row or one head fails: a wrong element is wrong by
   O(scale), far above atol.

   Where a reference sensitivity is given (how far the float64 result
   moves when the inputs move by their storage type's rounding: gpu_check
   measures it with the interpreter, attention_grad with float64 PyTorch),
   SENSITIVITY_FACTOR (8) times it is added
   to each element's bound: an element that cancels (a sum of terms much
   larger than itself, as in a gradient) is that uncertain in any
   implementation, and the rms scale alone does not see it.

   Non-finite values are compared exactly: where ref is NaN, got must be
   NaN; where ref is +inf or -inf, got must be the same infinity; where ref
   is finite, got must be finite (unless |ref| is beyond the storage type's
   largest finite value, where the same-signed infinity is the correct
   rounding). Integer outputs must be equal. A failure reports the worst
   element's index, got and ref, and how many elements failed.

2. **Interleaved timing rounds** (`interleaved_rounds`, `ratio_summary`):
   tang and every peer are timed in R >= 5 rounds, the order alternating
   (tang first, then the peers; then the peers in reverse, then tang); each
   measurement is the median of CUDA-event intervals of repeated calls.
   The reported ratio is the median over rounds of (peer ms / tang ms) of the
   same round, and its spread is the (min, max) of those per-round ratios;
   when the spread contains 1.0 the case is a tie, otherwise a win
   (ratio > 1: tang faster) or a loss. Host launch overhead is kept out:
   either the callable is a CUDA graph replay (`graphed`), or the stream is
   held by a device sleep long enough for the host to enqueue every repeat
   (sized from the measured host time per call).

3. **Environment** (`environment`, `gpu_state`, `git_state`): the GPU's
   clocks, temperature, power draw and limit, throttle reasons (nvidia-smi)
   before and after; PyTorch/CUDA versions; the commit and whether the tree
   was dirty. The device machine receives a copy of the working tree without
   .git, so bench/prepare_all.py records the commit and dirty state into
   gpu-work/git.json, which `git_state` reads when git is unavailable.

4. **The common JSON schema** (`SCHEMA`, `new_report`, `case_result`,
   `validate_report`, `write_report`): one file per suite, bench/results/
   <suite>.json, which bench/make_tables.py turns into the README's table.

The pure-Python parts (tolerances, the elementwise check on NumPy arrays,
ratio/spread/verdict logic, schema validation) need only NumPy and are
tested by bench/test_harness.py; the GPU parts import torch lazily.
"""

import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]
GIT_JSON = ROOT / "gpu-work" / "git.json"
#: The shipped tuning cache the benchmarks compile with (docs/Tuning.md).
SCHEDULE_CACHE = ROOT / "bench" / "tuning" / "sm_90a.json"


def schedule_cache_option() -> str:
    """`schedule-cache=<the shipped cache> ` for --tang-lower-cuda where it
    exists (and TANG_SCHEDULE_CACHE is not `off`): measured schedules
    instead of the heuristic's where it has them; else empty."""
    if os.environ.get("TANG_SCHEDULE_CACHE") == "off" or \
            not SCHEDULE_CACHE.exists():
        return ""
    path = SCHEDULE_CACHE.resolve()
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return f"schedule-cache={shown} "

SCHEMA = "tang-bench/1"

# ---------------------------------------------------------------------------
# 1. Elementwise checks
# ---------------------------------------------------------------------------

#: Unit roundoff (half the machine epsilon) of each floating type.
UNIT_ROUNDOFF = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "tf32": 2.0 ** -11,
                 "f32": 2.0 ** -24, "f64": 2.0 ** -53,
                 # f32 sums on matrix units (tensor cores, cooperative
                 # matrices): not rounded to nearest (NVIDIA's truncate
                 # the aligned addends), so a whole unit in the last place
                 # per addition. Measured: a 4096^3 f16 product with f32
                 # sums by cuBLAS, tang's wgmma kernel and tang's
                 # cooperative-matrix kernels on Vulkan (one set of bits)
                 # reached 1.11x the round-to-nearest bound on 4 of 16.7M
                 # elements (H100, bench/bench_portable.py).
                 "f32_mma": 2.0 ** -23}
#: Largest finite value of each storage type.
MAX_FINITE = {"bf16": 3.3895313892515355e38, "f16": 65504.0,
              "tf32": 3.4028234663852886e38, "f32": 3.4028234663852886e38,
              "f64": 1.7976931348623157e308}
INTEGER_TYPES = ("i8", "i16", "i32", "i64", "u8", "bool")
#: Standard deviations the largest of ~1e9 normal errors reaches.
TAIL = 8.0
#: Elements per chunk when checking on the GPU (float64 temporaries).
CHUNK = 1 << 25


@dataclass
class Tolerance:
    """The elementwise bound for one output (see the module docstring)."""
    storage: str            # bf16, f16, f32, f64, or an integer type
    reduction: int = 1      # K, the longest reduction's length
    roundings: int = 1      # R, roundings to the storage type on the path
    acc: str = "f32"        # the accumulation type
    operand: Optional[str] = None  # operands rounded to this first (tf32)

    @property
    def exact(self) -> bool:
        return self.storage in INTEGER_TYPES

    @property
    def rtol(self) -> float:
        return 0.0 if self.exact else 2 * UNIT_ROUNDOFF[self.storage]

    def atol_over_scale(self) -> float:
        """atol / scale."""
        if self.exact:
            return 0.0
        us = UNIT_ROUNDOFF[self.storage]
        ua = UNIT_ROUNDOFF[self.acc]
        uo = UNIT_ROUNDOFF[self.operand] if self.operand else 0.0
        return TAIL * math.sqrt(self.roundings * us * us
                                + self.reduction * ua * ua + 2 * uo * uo)

    def describe(self) -> str:
        if self.exact:
            return f"{self.storage}: exact"
        return (f"{self.storage}: rtol {self.rtol:.2e}, atol "
                f"{self.atol_over_scale():.2e} x rms(ref) (K {self.reduction}"
                f", R {self.roundings}, acc {self.acc}"
                f"{', operands ' + self.operand if self.operand else ''})")


class _NumpyOps:
    """The few array operations the check needs, over NumPy."""

    def __init__(self):
        import numpy as np
        self.np = np

    def f64(self, a):
        return self.np.asarray(a, dtype=self.np.float64).reshape(-1)

    def to_float(self, v) -> float:
        return float(v)

    def isnan(self, a):
        return self.np.isnan(a)

    def isinf(self, a):
        return self.np.isinf(a)

    def isfinite(self, a):
        return self.np.isfinite(a)

    def abs(self, a):
        return self.np.abs(a)

    def where(self, c, a, b):
        return self.np.where(c, a, b)

    def count(self, mask) -> int:
        return int(mask.sum())

    def argmax(self, a) -> int:
        return int(a.argmax())

    def zeros_like(self, a):
        return self.np.zeros_like(a)


class _TorchOps(_NumpyOps):
    """The same operations over PyTorch tensors (on their device)."""

    def __init__(self, torch):
        self.torch = torch

    def f64(self, a):
        return a.reshape(-1).double()

    def to_float(self, v) -> float:
        return float(v)

    def isnan(self, a):
        return self.torch.isnan(a)

    def isinf(self, a):
        return self.torch.isinf(a)

    def isfinite(self, a):
        return self.torch.isfinite(a)

    def abs(self, a):
        return self.torch.abs(a)

    def where(self, c, a, b):
        return self.torch.where(c, a, b)

    def count(self, mask) -> int:
        return int(mask.sum().item())

    def argmax(self, a) -> int:
        return int(a.argmax().item())

    def zeros_like(self, a):
        return self.torch.zeros_like(a)


def _ops_for(a):
    mod = type(a).__module__
    if mod.startswith("torch"):
        import torch
        return _TorchOps(torch)
    return _NumpyOps()


def _unravel(index: int, shape) -> List[int]:
    out = []
    for n in reversed(list(shape)):
        out.append(index % n if n else 0)
        index //= n if n else 1
    return list(reversed(out))


_COMP = re.compile(r"tang\.comprehension\s*(\(([^)]*)\))?\s*"
                   r"(reduce\s*\(([^)]*)\))?\s*\[([^\]]*)\]")


_SHAPE = re.compile(r"tensor<((?:\d+x)+)")
_TENSOR_MONOID = re.compile(
    r"tang\.monoid\s+@([\w.$-]+)\s*:\s*\[(tensor<[^\]]*)\]")
_TENSOR_YIELD = re.compile(r"tang\.yield[^\n]*:\s*tensor<")
_TENSOR_SCAN = re.compile(
    r"tang\.tensor_scan\s+@([\w.$-]+)\s*\([^:]*:\s*tensor<((?:\d+x)+)")


def _tensor_scan_roundings(text: str) -> int:
    """A tensor scan's prefix at step t is t combines in sequence: each
    scan adds its length times its monoid's comprehensions."""
    monoids = {}
    for m in _TENSOR_MONOID.finditer(text):
        first = re.match(r"tensor<((?:\d+x)*)", m.group(2))
        rank = len([d for d in first.group(1).split("x") if d])
        # The combine: up to its yield of tensors (the first such yield).
        end = _TENSOR_YIELD.search(text, m.end())
        body = text[m.end():end.start() if end else len(text)]
        monoids[m.group(1)] = (rank, max(1, len(_COMP.findall(body))))
    extra = 0
    for m in _TENSOR_SCAN.finditer(text):
        rank, combines = monoids.get(m.group(1), (0, 1))
        dims = [int(d) for d in m.group(2).split("x") if d]
        if len(dims) > rank:
            extra += dims[len(dims) - rank - 1] * combines
    return extra


def program_shape(text: str):
    """(K, R): the longest reduction (product of a comprehension's reduced
    extents) and the number of comprehensions in a tang program, a tensor
    scan's combines counted once per step. A symbolic
    extent (an SSA size, `[%len, 16]`) counts as the largest static
    dimension of the program's tensors (a cache's capacity bounds a context
    length), or 65536 when every dimension is symbolic."""
    text = re.sub(r"//[^\n]*", "", text)   # comments name no op
    dims = [int(d) for m in _SHAPE.finditer(text)
            for d in m.group(1).split("x") if d]
    bound = max(dims, default=65536)
    K, R = 1, 0
    for m in _COMP.finditer(text):
        R += 1
        if not m.group(3):
            continue
        nred = len([x for x in m.group(4).split(",") if x.strip()])
        ext = [int(x) if x.strip().lstrip("-").isdigit() else bound
               for x in m.group(5).split(",") if x.strip()]
        k = 1
        for e in ext[len(ext) - nred:]:
            k *= e
        K = max(K, k)
    R += _tensor_scan_roundings(text)
    return K, max(R, 1)


def tolerance_for_program(dtype: str, program: str) -> "Tolerance":
    """The bound for an output of dtype `dtype` of tang program text
    `program` (gpu_check, every backend's differential test): K and R from
    program_shape, accumulated in the output's type."""
    if dtype in INTEGER_TYPES:
        return Tolerance(dtype)
    K, R = program_shape(program)
    return Tolerance(dtype, reduction=K, roundings=R, acc=dtype)


#: The weight of a measured sensitivity in the bound (check_elementwise).
SENSITIVITY_FACTOR = 8


def check_elementwise(got, ref, tol: Tolerance, name: str = "out",
                      scale: Optional[float] = None,
                      chunk: int = CHUNK, sensitivity=None) -> dict:
    """Compares every element of `got` with `ref` (NumPy arrays or PyTorch
    tensors, any float or integer dtype; ref ideally float64) under `tol`.

    Returns {"name", "ok", "elements", "bad", "max_err" (the largest
    |got - ref| / (atol + rtol |ref|) over finite refs: <= 1 passes),
    "max_abs_err", "scale", "rtol", "atol", "nonfinite_mismatch", "worst":
    {"index", "got", "ref"} of the worst element (a non-finite mismatch
    first), "rule"}. Shapes must have the same number of elements (got is
    read in ref's shape).

    `sensitivity` (ref's shape, optional): how far the float64 result moves
    when the inputs move by the storage type's rounding (the interpreter on
    perturbed inputs, scripts/prepare-gpu-check.py). An element whose value
    cancels (a sum of terms much larger than itself) is that ill-conditioned
    in any implementation; SENSITIVITY_FACTOR times it is added to its bound,
    which it never tightens."""
    shape = tuple(ref.shape)
    n = 1
    for d in shape:
        n *= d
    res = {"name": name, "ok": False, "elements": n, "bad": 0,
           "max_err": None, "max_abs_err": None, "scale": None,
           "rtol": tol.rtol, "atol": None, "nonfinite_mismatch": 0,
           "worst": None, "rule": tol.describe()}
    gn = 1
    for d in got.shape:
        gn *= d
    if gn != n:
        res["error"] = f"shape {tuple(got.shape)} != {shape}"
        return res
    ops = _ops_for(ref)
    if isinstance(ops, _TorchOps):
        return _check(ops, got, ref, tol, res, shape, n, scale, chunk,
                      sensitivity)
    with ops.np.errstate(all="ignore"):
        return _check(ops, got, ref, tol, res, shape, n, scale, chunk,
                      sensitivity)


def _check(ops, got, ref, tol, res, shape, n, scale, chunk, sensitivity):
    g_all = got.reshape(-1)
    r_all = ref.reshape(-1)
    s_all = sensitivity.reshape(-1) if sensitivity is not None else None
    if s_all is not None:
        res["rule"] += f" + {SENSITIVITY_FACTOR} x sensitivity"

    # The scale: rms of the finite reference values.
    if scale is None:
        ss, cnt = 0.0, 0
        for s in range(0, n, chunk):
            r = ops.f64(r_all[s:s + chunk])
            fin = ops.isfinite(r)
            rz = ops.where(fin, r, ops.zeros_like(r))
            ss += ops.to_float((rz * rz).sum())
            cnt += ops.count(fin)
        scale = math.sqrt(ss / cnt) if cnt else 0.0
    atol = tol.atol_over_scale() * scale
    res.update(scale=scale, atol=atol)
    big = MAX_FINITE.get(tol.storage, math.inf)

    bad = mismatch = 0
    worst_ratio, worst_abs = 0.0, 0.0
    worst_fin = None        # (flat index, got, ref) of the largest ratio
    worst_nf = None         # the first non-finite mismatch
    for s in range(0, n, chunk):
        g = ops.f64(g_all[s:s + chunk])
        r = ops.f64(r_all[s:s + chunk])
        r_nan, g_nan = ops.isnan(r), ops.isnan(g)
        r_inf, g_inf = ops.isinf(r), ops.isinf(g)
        r_fin, g_fin = ops.isfinite(r), ops.isfinite(g)
        same_sign = (g > 0) == (r > 0)
        # Non-finite references: the same NaN/inf (with sign) in got.
        nf_bad = (r_nan & ~g_nan) | (r_inf & ~(g_inf & same_sign))
        # Finite references: got finite, except a reference beyond the
        # storage range, which rounds to the same infinity.
        overflow_ok = r_fin & g_inf & (ops.abs(r) > big) & same_sign
        nf_bad = nf_bad | (r_fin & ~g_fin & ~overflow_ok)
        both = r_fin & g_fin
        zero = ops.zeros_like(r)
        diff = ops.where(both, ops.abs(g - r), zero)
        bound = atol + tol.rtol * ops.abs(ops.where(both, r, zero))
        if s_all is not None:
            sens = ops.f64(s_all[s:s + chunk])
            bound = bound + SENSITIVITY_FACTOR * ops.where(
                ops.isfinite(sens), ops.abs(sens), zero)
        ratio = diff / ops.where(bound > 0, bound, zero + 1e-300)
        over = both & (diff > bound)
        k_nf = ops.count(nf_bad)
        mismatch += k_nf
        bad += k_nf + ops.count(over)
        i = ops.argmax(ratio)
        rv = ops.to_float(ratio[i])
        if worst_fin is None or rv > worst_ratio:
            worst_ratio = rv
            worst_fin = (s + i, ops.to_float(g[i]), ops.to_float(r[i]))
        worst_abs = max(worst_abs, ops.to_float(diff.max()))
        if k_nf and worst_nf is None:
            i = ops.argmax(ops.where(nf_bad, zero + 1, zero))
            worst_nf = (s + i, ops.to_float(g[i]), ops.to_float(r[i]))
    worst = worst_nf or worst_fin
    res.update(bad=bad, nonfinite_mismatch=mismatch,
               max_err=math.inf if mismatch else worst_ratio,
               max_abs_err=worst_abs, ok=(bad == 0))
    if worst is not None and n:
        res["worst"] = {"index": _unravel(worst[0], shape),
                        "got": _jsonable(worst[1]), "ref": _jsonable(worst[2])}
    return res


def _jsonable(v: float):
    """A float for JSON: NaN and infinities as strings."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def check_tensor(got, ref, tol: Tolerance, name: str = "out",
                 sensitivity=None) -> dict:
    """check_elementwise for a torch tensor against a float64 torch tensor
    (any device; chunked), with an optional sensitivity of ref's shape."""
    return check_elementwise(got, ref, tol, name, sensitivity=sensitivity)


def bits_equal(a, b) -> bool:
    """Whether two tensors or arrays hold the same bits (NaN == NaN)."""
    if type(a).__module__.startswith("torch"):
        import torch
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if not a.dtype.is_floating_point:
            return bool(torch.equal(a, b))
        iv = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return bool(torch.equal(a.contiguous().view(iv),
                                b.contiguous().view(iv)))
    import numpy as np
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and \
        a.tobytes() == b.tobytes()


#: The second run's poison: a finite value no kernel computes, so that an
#: element written by neither run shows even where the reference is NaN.
SENTINEL = -12345.0


def poisoned_runs(torch, written: Sequence, step: Callable) -> Tuple[list, bool]:
    """Runs step() twice, every tensor of `written` filled with NaN before
    the first run and with SENTINEL before the second; returns (the copies
    after the first run, whether both runs gave the same bits: every element
    written, and no race)."""
    runs = []
    for poison in (float("nan"), SENTINEL):
        for t in written:
            t.fill_(poison if t.dtype.is_floating_point else 0x7F)
        step()
        torch.cuda.synchronize()
        runs.append([t.clone() for t in written])
    same = all(bits_equal(a, b) for a, b in zip(*runs))
    return runs[0], same


def judge_checks(res: dict, deterministic: bool) -> bool:
    """Sets a case's verdict from its checks (res["checks"]) and whether
    its two poisoned runs agreed: "deterministic", "max_err", and, when a
    check failed or the runs differ, status "incorrect" with a note naming
    the failing checks. Returns whether the case is correct."""
    res["deterministic"] = deterministic
    ok, res["max_err"] = summarize_checks(res["checks"])
    if ok and deterministic:
        return True
    res["status"] = "incorrect"
    res["note"] = ("" if deterministic else "runs differ or elements "
                   "unwritten; ") + "; ".join(
        f"{c['name']}: {c.get('bad')} of {c.get('elements')} bad, worst "
        f"{c.get('worst')}" for c in res["checks"] if not c["ok"])
    return False


def record_timing(res: dict, timed: Dict[str, dict],
                  excluded: Sequence[str] = ()) -> None:
    """Stores interleaved_rounds' result on a case: the comparison with the
    fastest peer not `excluded` (compare), the excluded peers as
    "incorrect_peers", the raw timing, and tang's TFLOP/s from
    res["flops"]."""
    res.update(compare("tang", timed, excluded=list(excluded)))
    res["incorrect_peers"] = list(excluded)
    res["timing"] = timed
    if res.get("tang_ms") and res.get("flops"):
        res["tang_tflops"] = res["flops"] / res["tang_ms"] / 1e9


def check_and_time(torch, res: dict, contenders, ref, ptol: "Tolerance",
                   rounds: int, target_ms: float,
                   deadline: Optional[float] = None,
                   sensitivity=None) -> Dict[str, dict]:
    """Checks every peer of `contenders` ([(name, fn)], tang's first and
    already checked; fn() returns the output) against `ref` within `ptol`:
    informational (an incorrect peer is reported and excluded from the
    best peer; one that raises is listed in res["peer_errors"] and not
    timed). Times them all, each in a CUDA graph where it takes one
    (res["graphed"]: True or why not), in interleaved rounds; records the
    timing on `res` (record_timing) and returns interleaved_rounds'
    result."""
    excluded, timed_fns = [], []
    for pname, fn in contenders:
        if pname != "tang":
            try:
                got = fn().float()
            except Exception as e:  # a peer that refuses the shapes
                res.setdefault("peer_errors", {})[pname] = short(e)
                continue
            c = check_tensor(got, ref, ptol, pname, sensitivity=sensitivity)
            res["checks"].append(dict(c, ok=True, informational=True))
            if not c["ok"]:
                excluded.append(pname)
        call, graphed, why = try_graphed(torch, fn)
        res.setdefault("graphed", {})[pname] = graphed if graphed else why
        timed_fns.append((pname, call))
    timed = interleaved_rounds(torch, timed_fns, rounds=rounds,
                               target_ms=target_ms, deadline=deadline)
    record_timing(res, timed, excluded)
    return timed


def summarize_checks(checks: List[dict]) -> Tuple[bool, Optional[float]]:
    """(all ok, the largest max_err) over a list of check results."""
    errs = [c["max_err"] for c in checks if c.get("max_err") is not None]
    ok = bool(checks) and all(c.get("ok") for c in checks)
    return ok, (max(errs) if errs else None)


# ---------------------------------------------------------------------------
# 2. Ratios over interleaved rounds (pure Python)
# ---------------------------------------------------------------------------

MIN_ROUNDS = 5


def ratio_summary(tang_rounds: Sequence[float],
                  peer_rounds: Sequence[float]) -> dict:
    """Per-round ratios peer/tang (> 1: tang faster), their median and
    spread (min, max), and the verdict: 'tie' when the spread contains 1.0,
    else 'win' (tang faster in every round) or 'loss'."""
    if len(tang_rounds) != len(peer_rounds) or not tang_rounds:
        raise ValueError("one peer time per tang time, at least one")
    ratios = [p / t for t, p in zip(tang_rounds, peer_rounds)]
    lo, hi = min(ratios), max(ratios)
    return {"ratios": ratios, "ratio": statistics.median(ratios),
            "spread": [lo, hi], "verdict": verdict(lo, hi),
            "rounds": len(ratios)}


def verdict(lo: float, hi: float) -> str:
    """'tie' when [lo, hi] contains 1.0, 'win' above, 'loss' below."""
    if lo <= 1.0 <= hi:
        return "tie"
    return "win" if lo > 1.0 else "loss"


def best_peer(peer_ms: Dict[str, Optional[float]]) -> Optional[str]:
    """The peer with the smallest time (None values ignored)."""
    timed = {k: v for k, v in peer_ms.items() if v is not None}
    return min(timed, key=timed.get) if timed else None


def round_orders(names: Sequence[str], rounds: int) -> List[List[str]]:
    """The order of each round: as given, then reversed, alternating."""
    return [list(names) if r % 2 == 0 else list(reversed(names))
            for r in range(rounds)]


# ---------------------------------------------------------------------------
# 2b. Timing on the GPU
# ---------------------------------------------------------------------------

#: Device sleep per ms of hold (cycles at about 2 GHz).
_CYCLES_PER_MS = 2.0e6
MAX_HOLD_MS = 3000.0


def _events(torch, n):
    return [torch.cuda.Event(enable_timing=True) for _ in range(n)]


def time_calls(torch, fn: Callable, reps: int, nsets: int = 1,
               hold_ms: float = 20.0) -> List[float]:
    """ms of `reps` calls fn(k) (k rotating over range(nsets)), each between
    its own pair of CUDA events, the stream held by a device sleep of
    hold_ms while the host enqueues them."""
    starts, ends = _events(torch, reps), _events(torch, reps)
    torch.cuda.synchronize()
    if hasattr(torch.cuda, "_sleep") and hold_ms > 0:
        torch.cuda._sleep(int(min(hold_ms, MAX_HOLD_MS) * _CYCLES_PER_MS))
    for i in range(reps):
        starts[i].record()
        fn(i % nsets)
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


@dataclass
class Plan:
    reps: int
    hold_ms: float
    est_ms: float
    host_ms: float


def plan_calls(torch, fn: Callable, target_ms: float, min_reps: int = 3,
               max_reps: int = 200, warmup: int = 2) -> Plan:
    """Warms fn up, measures its device time and host enqueue time per call,
    and picks the repeats (about target_ms of device time) and the hold
    (long enough for the host to enqueue them all)."""
    for i in range(warmup):
        fn(0)
    torch.cuda.synchronize()
    a, b = _events(torch, 2)
    t0 = time.perf_counter()
    a.record()
    fn(0)
    b.record()
    host_ms = (time.perf_counter() - t0) * 1e3
    torch.cuda.synchronize()
    est = max(a.elapsed_time(b), 1e-3)
    reps = max(min_reps, min(max_reps, int(target_ms / est)))
    hold = min(MAX_HOLD_MS, 2.0 + 1.5 * reps * host_ms)
    return Plan(reps=reps, hold_ms=hold, est_ms=est, host_ms=host_ms)


def graphed(torch, fn: Callable, warmup: int = 3) -> Callable:
    """fn() captured in a CUDA graph (warmed up on a side stream); the
    returned callable replays it and ignores its argument."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()

    def replay(k=0):
        g.replay()
    replay.graph = g
    return replay


def try_graphed(torch, fn: Callable) -> Tuple[Callable, bool, Optional[str]]:
    """(callable(k), whether it is a CUDA graph, why not). Falls back to
    calling fn() directly when capture fails, or when the environment sets
    TANG_BENCH_GRAPHS=0 (to tell a graph's fault from a kernel's)."""
    if os.environ.get("TANG_BENCH_GRAPHS") == "0":
        return (lambda k=0: fn()), False, "TANG_BENCH_GRAPHS=0"
    try:
        return graphed(torch, fn), True, None
    except Exception as e:  # a peer that cannot be captured
        torch.cuda.synchronize()
        return (lambda k=0: fn()), False, short(e)


def interleaved_rounds(torch, contenders: Sequence[Tuple[str, Callable]],
                       rounds: int = MIN_ROUNDS, target_ms: float = 100.0,
                       nsets: int = 1, max_reps: int = 200,
                       deadline: Optional[float] = None) -> Dict[str, dict]:
    """Times every contender (name, fn(k)) in `rounds` rounds of alternating
    order (the first contender should be tang). Returns {name: {"rounds":
    [median ms per round], "ms": median of those, "min_ms", "reps",
    "hold_ms", "host_ms"}}; a contender that raises gets "error". Stops
    adding rounds (keeping at least MIN_ROUNDS... when time allows) past
    `deadline` (time.monotonic())."""
    plans, out = {}, {}
    for name, fn in contenders:
        try:
            plans[name] = plan_calls(torch, fn, target_ms,
                                     max_reps=max_reps)
            out[name] = {"rounds": [], "min_ms": math.inf}
        except Exception as e:
            out[name] = {"error": short(e)}
    live = [(n, f) for n, f in contenders if n in plans]
    order = round_orders([n for n, _ in live], rounds)
    fns = dict(live)
    for r in range(rounds):
        if deadline is not None and r >= MIN_ROUNDS and \
                time.monotonic() > deadline:
            break
        for name in order[r]:
            if "error" in out[name]:
                continue
            p = plans[name]
            try:
                t = time_calls(torch, fns[name], p.reps, nsets, p.hold_ms)
            except Exception as e:
                out[name] = {"error": short(e)}
                continue
            out[name]["rounds"].append(statistics.median(t))
            out[name]["min_ms"] = min(out[name]["min_ms"], min(t))
    for name, p in plans.items():
        o = out[name]
        if "error" in o:
            continue
        o.update(ms=statistics.median(o["rounds"]), reps=p.reps,
                 hold_ms=round(p.hold_ms, 2), host_ms=round(p.host_ms, 4))
    # Contenders that failed in a later round lose their earlier rounds'
    # pairing: keep only those with a full set.
    n = min((len(o["rounds"]) for o in out.values() if "rounds" in o),
            default=0)
    for o in out.values():
        if "rounds" in o:
            o["rounds"] = o["rounds"][:n]
    return out


def compare(tang_name: str, timed: Dict[str, dict],
            excluded: Sequence[str] = ()) -> dict:
    """The case's summary from interleaved_rounds' result: tang_ms, peers
    (name -> ms), best_peer (fastest peer not excluded, e.g. incorrect),
    ratio, spread, verdict, and per peer its own ratio summary."""
    t = timed.get(tang_name, {})
    out = {"tang_ms": t.get("ms"), "peers": {}, "peer_ratios": {},
           "best_peer": None, "ratio": None, "spread": None,
           "verdict": None}
    if "ms" not in t:
        return out
    for name, o in timed.items():
        if name == tang_name:
            continue
        out["peers"][name] = o.get("ms")
        if "ms" in o:
            out["peer_ratios"][name] = ratio_summary(t["rounds"], o["rounds"])
    bp = best_peer({k: v for k, v in out["peers"].items()
                    if k not in excluded})
    if bp:
        s = out["peer_ratios"][bp]
        out.update(best_peer=bp, ratio=s["ratio"], spread=s["spread"],
                   verdict=s["verdict"])
    return out


# ---------------------------------------------------------------------------
# 3. Environment
# ---------------------------------------------------------------------------

SMI_FIELDS = ["name", "clocks.sm", "clocks.mem", "clocks.max.sm",
              "clocks.max.mem", "temperature.gpu", "power.draw",
              "power.limit", "enforced.power.limit", "pstate",
              "clocks_throttle_reasons.active", "utilization.gpu",
              "memory.used"]


def gpu_state() -> dict:
    """nvidia-smi's reading of GPU 0 (clocks in MHz, temperature in C,
    power in W), or {"error": ...}."""
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=" + ",".join(SMI_FIELDS),
                            "--format=csv,noheader,nounits", "-i", "0"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": short(e)}
    if r.returncode != 0:
        return {"error": r.stderr.strip()[:200]}
    vals = [v.strip() for v in r.stdout.strip().splitlines()[0].split(",")]
    out = {"time": now()}
    for k, v in zip(SMI_FIELDS, vals):
        try:
            out[k] = float(v) if k not in ("name", "pstate",
                                           "clocks_throttle_reasons.active") \
                else v
        except ValueError:
            out[k] = v
    return out


def git_state() -> dict:
    """{"commit", "dirty", "dirty_files", "source"}: from git when the
    repository is here, else from gpu-work/git.json (written by
    bench/prepare_all.py where the bundles were built)."""
    def git(*a):
        r = subprocess.run(["git", *a], cwd=ROOT, capture_output=True,
                           text=True, timeout=30)
        if r.returncode:
            raise RuntimeError(r.stderr)
        return r.stdout
    try:
        commit = git("rev-parse", "HEAD").strip()
        files = [l[3:] for l in git("status", "--porcelain",
                                    "--untracked-files=no").splitlines()]
        live = {"commit": commit, "dirty": bool(files),
                "dirty_files": files[:50], "source": "git"}
    except Exception:
        live = None
    saved = None
    if GIT_JSON.exists():
        try:
            saved = json.loads(GIT_JSON.read_text())
            saved["source"] = "gpu-work/git.json (recorded when prepared)"
        except ValueError:
            saved = None
    if saved:
        # The bundles were built from the prepared tree: that is what the
        # results measure. A live repository that differs is noted.
        if live and live["commit"] != saved.get("commit"):
            saved["live_commit"] = live["commit"]
        return saved
    return live or {"commit": None, "dirty": None, "dirty_files": [],
                    "source": "unknown (no git, no gpu-work/git.json)"}


def list_bundle(tang, listing: dict, key: str, program, options: str,
                label: str, **meta) -> dict:
    """Compiles `program` (a tang.Function or MLIR text) for CUDA here (the
    compile cache: TANG_CACHE_DIR) and lists it as listing["bundles"][key]:
    `meta`, the options, its kernels (a count; per function when it has
    several) and its directory relative to the repository, for the GPU
    suites (bench/prepare_delta.py, prepare_moe.py,
    prepare_gated_attention.py). Prints `label` with the kernels and the
    time."""
    t0 = time.time()
    compiled = tang.compile(program, target="cuda", options=options)
    functions = compiled.manifest["functions"]
    kernels = (len(functions[0]["launches"]) if len(functions) == 1 else
               {f["name"]: len(f["launches"]) for f in functions})
    root = Path(__file__).resolve().parents[1]
    entry = dict(meta, options=options, kernels=kernels,
                 dir=str(compiled.directory.relative_to(root)))
    listing["bundles"][key] = entry
    print(f"{label}: {kernels} kernels, {time.time() - t0:.1f} s",
          flush=True)
    return entry


def record_git(path: Path = GIT_JSON) -> dict:
    """Writes the tree's commit and dirty state to gpu-work/git.json."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    st = git_state()
    st["recorded"] = now()
    st.pop("source", None)
    path.write_text(json.dumps(st, indent=1) + "\n")
    return st


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds")


def environment(torch=None) -> dict:
    """Device, versions, git state and a first nvidia-smi reading."""
    env = {"date": now(), "python": platform.python_version(),
           "host": platform.node()}
    env.update({k: v for k, v in git_state().items()})
    env["clocks"] = {"before": gpu_state(), "after": None}
    if torch is not None:
        env["device"] = torch.cuda.get_device_name(0)
        env["torch"] = torch.__version__
        env["cuda"] = torch.version.cuda
        try:
            env["cudnn"] = torch.backends.cudnn.version()
        except Exception:
            env["cudnn"] = None
        try:
            import triton
            env["triton"] = triton.__version__
        except ImportError:
            env["triton"] = None
    return env


# ---------------------------------------------------------------------------
# 4. The common schema
# ---------------------------------------------------------------------------

#: Statuses a case may have (a prefix: "skipped: budget", "failed: ...").
#: How a note starts on a case whose check exceeded the bound only where
#: the most accurate peer does too (bench_attention_grad.within_peers).
WITHIN_PEERS = "within the peers' accuracy"
STATUSES = ("ok", "incorrect", "failed", "compile failed", "skipped")
REPORT_KEYS = ("schema", "suite", "date", "commit", "dirty", "device",
               "clocks", "torch", "cases")
CASE_KEYS = ("case", "status", "max_err", "tang_ms", "peers", "best_peer",
             "ratio", "spread")


def new_report(suite: str, torch=None, settings: Optional[dict] = None) -> dict:
    env = environment(torch)
    rep = {"schema": SCHEMA, "suite": suite, "date": env.pop("date"),
           "commit": env.pop("commit", None), "dirty": env.pop("dirty", None),
           "device": env.pop("device", None), "clocks": env.pop("clocks"),
           "torch": env.pop("torch", None), "settings": settings or {},
           "env": env, "cases": []}
    return rep


def case_result(case: str, **kw) -> dict:
    """A case in the schema's shape; kw fills or adds fields."""
    r = {"case": case, "status": "ok", "max_err": None, "tang_ms": None,
         "peers": {}, "best_peer": None, "ratio": None, "spread": None,
         "verdict": None, "checks": [], "note": ""}
    r.update(kw)
    return r


NOT_REACHED = "failed: not reached (the suite's process ended first)"
DIED_IN = "failed: the suite's process ended during this case"


def prelist(rep: dict, names: Sequence[str]):
    """Lists every case up front as not reached, so that a process killed
    by a fault or its deadline still reports every case."""
    rep["cases"] = [case_result(n, status=NOT_REACHED) for n in names]


def set_case(rep: dict, res: dict, path: Optional[Path] = None):
    """Puts `res` in place of the case of the same name (and writes)."""
    for i, c in enumerate(rep["cases"]):
        if c["case"] == res["case"]:
            rep["cases"][i] = res
            break
    else:
        rep["cases"].append(res)
    if path is not None:
        write_report(rep, path)


#: The line start_case prints before a case's work: bench/sanitize.py
#: attributes compute-sanitizer's reports to the case whose line came last.
CASE_MARK = "== case "


def start_case(rep: dict, name: str, path: Path):
    """Marks `name` as running (a process that dies leaves it so), and
    prints CASE_MARK + name."""
    print(CASE_MARK + name, flush=True)
    set_case(rep, case_result(name, status=DIED_IN), path)


def sanitized(res: dict) -> dict:
    """A case under --sanitize: tang ran and was checked; nothing timed."""
    res["note"] = ((res.get("note") or "") +
                   " --sanitize: tang's kernels run and checked, not timed"
                   ).strip()
    return res


def run_cases(torch, report: dict, path: Path, metas: Sequence[dict],
              run_one: Callable[[dict], dict], deadline,
              t_start: float) -> int:
    """Every suite's loop: lists the cases up front, runs `run_one(meta)`
    for each (a case past `deadline` is 'skipped: budget', an exception
    'failed'), writes the report after every case and at the end. Returns
    the process's exit status: 1 if any case is not ok."""
    bad = 0
    prelist(report, [m["case"] for m in metas])
    write_report(report, path)
    for meta in metas:
        t0 = time.monotonic()
        start_case(report, meta["case"], path)
        if deadline.passed(5):
            res = case_result(meta["case"], status="skipped: budget")
        else:
            try:
                res = run_one(meta)
            except Exception as e:  # a load or launch failure
                res = case_result(meta["case"], status="failed",
                                  note=short(e))
        res["wall_s"] = round(time.monotonic() - t0, 1)
        bad += res["status"] != "ok"
        set_case(report, res, path)
        after_case(torch, report, res, path)
        print(f"{res['case']}: {res['status']} max_err {res['max_err']} tang "
              f"{res['tang_ms']} peers {res['peers']} ratio {res['ratio']} "
              f"spread {res['spread']} {(res.get('note') or '')[:300]}",
              flush=True)
        write_report(report, path)
    finish_report(report, t_start)
    write_report(report, path)
    print(f"wrote {path}")
    return 1 if bad else 0


def after_case(torch, rep: dict, res: dict, path: Path):
    """Frees the case's memory; a CUDA fault that surfaces here (the context
    is then unusable) is noted on the case and ends the process, so that
    bench/run_all.py starts a new one for the cases not reached."""
    try:
        torch.cuda.empty_cache()
        torch.cuda.synchronize()
    except Exception as e:
        res["note"] = (res.get("note") or "") + \
            f" [a CUDA fault surfaced after this case: {short(e)}]"
        set_case(rep, res, path)
        raise SystemExit(3)


def validate_report(rep: dict) -> List[str]:
    """Problems with `rep` as a common-schema report (empty: valid)."""
    errs = []
    if not isinstance(rep, dict):
        return ["not an object"]
    for k in REPORT_KEYS:
        if k not in rep:
            errs.append(f"missing '{k}'")
    if rep.get("schema") != SCHEMA:
        errs.append(f"schema is {rep.get('schema')!r}, not {SCHEMA!r}")
    if not isinstance(rep.get("cases", []), list):
        errs.append("cases is not a list")
        return errs
    if "dirty" in rep and rep["dirty"] not in (True, False, None):
        errs.append("dirty is not a boolean")
    for i, c in enumerate(rep.get("cases", [])):
        where = f"cases[{i}] ({c.get('case', '?')})"
        for k in CASE_KEYS:
            if k not in c:
                errs.append(f"{where}: missing '{k}'")
        st = c.get("status")
        if not isinstance(st, str) or not st.startswith(STATUSES):
            errs.append(f"{where}: status {st!r}")
        if not isinstance(c.get("peers", {}), dict):
            errs.append(f"{where}: peers is not an object")
        for name, ms in (c.get("peers") or {}).items():
            if ms is not None and not isinstance(ms, (int, float)):
                errs.append(f"{where}: peer {name} time {ms!r}")
        sp = c.get("spread")
        if sp is not None and (not isinstance(sp, list) or len(sp) != 2
                               or sp[0] > sp[1]):
            errs.append(f"{where}: spread {sp!r}")
        r = c.get("ratio")
        if r is not None and sp is not None and not (
                sp[0] - 1e-12 <= r <= sp[1] + 1e-12):
            errs.append(f"{where}: ratio {r} outside its spread {sp}")
        if c.get("best_peer") is not None and \
                c["best_peer"] not in (c.get("peers") or {}):
            errs.append(f"{where}: best_peer {c['best_peer']!r} not a peer")
        if st == "ok" and c.get("max_err") is not None and c["max_err"] > 1 \
                and not (c.get("note") or "").startswith(WITHIN_PEERS):
            errs.append(f"{where}: status ok with max_err {c['max_err']} > 1")
        if c.get("verdict") is not None and sp is not None and \
                c["verdict"] != verdict(*sp):
            errs.append(f"{where}: verdict {c['verdict']} does not follow "
                        f"from spread {sp}")
    return errs


def _clean(o):
    """JSON-safe: non-finite floats as strings."""
    if isinstance(o, float):
        return _jsonable(o)
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def write_report(rep: dict, path: Path):
    """Writes `rep` (atomically: a run cut short leaves the last whole
    file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(_clean(rep), indent=1, default=str) + "\n")
    os.replace(tmp, path)


def finish_report(rep: dict, t_start: float):
    rep["clocks"]["after"] = gpu_state()
    rep["wall_s"] = round(time.monotonic() - t_start, 1)


def out_dir(default_sub: str) -> Path:
    """$OUT, else gpu-work/<default_sub>."""
    return Path(os.environ.get("OUT") or ROOT / "gpu-work" / default_sub)


def short(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]


class Deadline:
    """A wall-clock deadline (time.monotonic()); None means none."""

    def __init__(self, epoch: Optional[float]):
        # Given as a Unix time (so that processes share it).
        self.epoch = epoch

    def left(self) -> float:
        return math.inf if self.epoch is None else self.epoch - time.time()

    def passed(self, margin: float = 0.0) -> bool:
        return self.left() <= margin

    def monotonic(self) -> Optional[float]:
        return None if self.epoch is None else \
            time.monotonic() + self.left()


def add_common_args(ap, default_rounds=7):
    ap.add_argument("--quick", action="store_true",
                    help="fewer repeats per measurement (5 rounds still)")
    ap.add_argument("--rounds", type=int, default=None,
                    help=f"timing rounds (default {default_rounds}; "
                         f"--quick: {MIN_ROUNDS})")
    ap.add_argument("--deadline", type=float, default=None,
                    help="Unix time past which remaining cases are skipped "
                         "(status 'skipped: budget')")
    ap.add_argument("--out", default=None,
                    help="directory for <suite>.json (default $OUT)")
    ap.add_argument("--sanitize", action="store_true",
                    help="for compute-sanitizer (bench/sanitize.py): run "
                         "and check tang's kernels once per case, no peers, "
                         "no timing")


def rounds_of(args, default_rounds=7) -> int:
    r = args.rounds or (MIN_ROUNDS if args.quick else default_rounds)
    return max(MIN_ROUNDS, r)


def target_ms_of(args) -> float:
    """Device time per measurement: short with --quick."""
    return 30.0 if args.quick else 200.0
