"""CUDA kernel forms run on the CPU by the kernel-form emulator
(kernel_emulator.py) against the float64 interpreter. Every example's
kernels as --convert-tang-to-gpu builds them without tensor cores (row
kernels with shuffles and workgroup memory, split decode attention, scans,
gathers and scatters), at its last `// sizes:` line. Decode attention's
kernels in detail: the lane
kernel and the tensor-core kernel (split-softmax-mma: mma.sync fragments,
prmt, shuffles, the block's barrier), at contexts of one key, part of a
tile and several splits, with NaN in every cache position past the
context (a kernel that read them would return NaN). Checks every element
against bench/harness.py's bound for the output type. Also checks the
emulator itself: its mma.sync against a NumPy product, and that an
out-of-bounds load is reported. And the sm_80 tensor-core kernels (mma.sync,
cp.async, ldmatrix): a GEMM, the flash forward and attention's backward.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
import harness  # noqa: E402
from tang import sizes as tang_sizes  # noqa: E402
from kernel_emulator import (EmulatorError, KernelFormEmulator,  # noqa: E402
                             from_bf16_bits, memref_shape, to_bf16_bits)

BIN = Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
TANG_OPT, TANG_RUN = BIN / "tang-opt", BIN / "tang-run"

# One multiprocessor in the device model (few blocks to emulate), 2 groups
# of 4 query heads: the lane kernel's 4 key splits (eight blocks a
# multiprocessor, getSoftmaxSplits), the mma.sync kernel's one (two blocks
# a multiprocessor, rounded down: at 150 keys, each warp's loop runs two or
# three tiles with the next one's loads in flight, then a partial tile);
# sm_count 4 gives it 4 splits (of 64 keys at least: 3 used at 150).
TARGET = ('#tang.target<chip = "sm_90a", sm_count = {sms}, shared_per_block '
          '= 232448, shared_per_sm = 233472, registers_per_sm = 65536, '
          'warp_size = 32, max_threads = 1024, tensor_cores = wgmma, '
          'tma = true, clusters = true>')
HEADS, KV_HEADS, CAPACITY = 8, 2, 160


def program(out, DIM, sms=1):
    """Grouped-query decode attention, context %pos + 1; with `out` f32, an
    f32 query and arithmetic and bf16 caches; with bf16 or f16, every f32
    of the program and the caches of that type (as
    scripts/prepare-gpu-check.py makes its 16-bit cases)."""
    text = f32_program(DIM, sms)
    if out == "f32":
        return text
    if out == "bf16q":
        # A bf16 query, f32 output, the scale (not a power of two) a
        # constant factor inside the summand: q x 0.1 needs three parts.
        return text.replace(
            f"%a = tang.read %q[%h, %e] : tensor<{HEADS}x{DIM}xf32>",
            f"%a0 = tang.read %q[%h, %e] : tensor<{HEADS}x{DIM}xbf16>\n"
            "      %a = arith.extf %a0 : bf16 to f32").replace(
            f"%q: tensor<{HEADS}x{DIM}xf32>",
            f"%q: tensor<{HEADS}x{DIM}xbf16>").replace(
            "%p = arith.mulf %a, %kf : f32",
            "%c = arith.constant 0.1 : f32\n"
            "      %p0 = arith.mulf %a, %kf : f32\n"
            "      %p = arith.mulf %p0, %c : f32").replace(
            "%r = arith.mulf %dot, %scale : f32", "%r = arith.addf %dot, "
            "%dot : f32")
    for x in ("k", "v"):
        text = text.replace(f"%{x}f = arith.extf %{x} : bf16 to f32\n", "")
        text = text.replace(f"%{x}f", f"%{x}")
    text = re.sub(r"(?<=x)bf16\b", out, text)  # the caches
    return re.sub(r"(\bf32\b|(?<=[\d?]x)f32\b)", out, text)


def f32_program(DIM, sms=1):
    target = TARGET.format(sms=sms)
    return f"""module attributes {{tang.target = {target}}} {{
func.func @main(%q: tensor<{HEADS}x{DIM}xf32>, %K: tensor<{KV_HEADS}x{CAPACITY}x{DIM}xbf16>, %V: tensor<{KV_HEADS}x{CAPACITY}x{DIM}xbf16>, %pos: index) -> tensor<{HEADS}x{DIM}xf32> {{
  %c1 = arith.constant 1 : index
  %n = arith.addi %pos, %c1 : index
  %s = tang.comprehension (%h, %j) [{HEADS}, %n] : tensor<{HEADS}x?xf32> {{
    %dot = tang.comprehension reduce (%e) [{DIM}] monoid(add) : f32 {{
      %a = tang.read %q[%h, %e] : tensor<{HEADS}x{DIM}xf32>
      %k = tang.read %K[%h floordiv 4, %j, %e] : tensor<{KV_HEADS}x{CAPACITY}x{DIM}xbf16>
      %kf = arith.extf %k : bf16 to f32
      %p = arith.mulf %a, %kf : f32
      tang.yield %p : f32
    }}
    %scale = arith.constant 0.125 : f32
    %r = arith.mulf %dot, %scale : f32
    tang.yield %r : f32
  }}
  %m = tang.comprehension (%h) reduce (%j) [{HEADS}, %n] monoid(max) : tensor<{HEADS}xf32> {{
    %x = tang.read %s[%h, %j] : tensor<{HEADS}x?xf32>
    tang.yield %x : f32
  }}
  %z = tang.comprehension (%h) reduce (%j) [{HEADS}, %n] monoid(add) : tensor<{HEADS}xf32> {{
    %x = tang.read %s[%h, %j] : tensor<{HEADS}x?xf32>
    %mx = tang.read %m[%h] : tensor<{HEADS}xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    tang.yield %e : f32
  }}
  %o = tang.comprehension (%h, %d) reduce (%j) [{HEADS}, {DIM}, %n] monoid(add) : tensor<{HEADS}x{DIM}xf32> {{
    %x = tang.read %s[%h, %j] : tensor<{HEADS}x?xf32>
    %mx = tang.read %m[%h] : tensor<{HEADS}xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    %zz = tang.read %z[%h] : tensor<{HEADS}xf32>
    %w = arith.divf %e, %zz : f32
    %v = tang.read %V[%h floordiv 4, %j, %d] : tensor<{KV_HEADS}x{CAPACITY}x{DIM}xbf16>
    %vf = arith.extf %v : bf16 to f32
    %r = arith.mulf %w, %vf : f32
    tang.yield %r : f32
  }}
  return %o : tensor<{HEADS}x{DIM}xf32>
}}
}}
"""


def kernel_form(path, options, target=()):
    r = subprocess.run(
        [TANG_OPT, path, *target, "--tang-fuse", "--tang-online-softmax",
         "--tang-schedule", f"--convert-tang-to-gpu={options}",
         "--mlir-print-op-generic"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def bf16(x):
    return from_bf16_bits(to_bf16_bits(x.astype(np.float32)))


def make_inputs(dim):
    rng = np.random.default_rng(7)
    q = rng.standard_normal((HEADS, dim)).astype(np.float32)
    K = bf16(rng.standard_normal((KV_HEADS, CAPACITY, dim)))
    V = bf16(rng.standard_normal((KV_HEADS, CAPACITY, dim)))
    return q, K, V


@pytest.mark.parametrize("path,out,dim,sms", [
    ("lanes", "f32", 64, 1), ("mma", "f32", 64, 1), ("mma", "f32", 64, 4),
    ("lanes", "bf16", 64, 1), ("mma", "bf16", 64, 1), ("mma", "f16", 64, 1),
    ("mma", "bf16q", 64, 1), ("mma", "f32", 128, 1)])
def test_decode_attention(tmp_path, path, out, dim, sms):
    if not TANG_OPT.exists():
        pytest.skip("tang-opt not built")
    src = tmp_path / "decode.mlir"
    src.write_text(program(out, dim, sms))
    options = "tensor-cores=target" + (
        " split-softmax-mma=" + ("on" if path == "mma" else "off"))
    text = kernel_form(src, options)
    assert ("nvvm.mma.sync" in text) == (path == "mma")
    emu = KernelFormEmulator(text)
    q, K, V = make_inputs(dim)
    if out in ("bf16", "bf16q"):
        q = bf16(q)
    elif out == "f16":
        q, K, V = (x.astype(np.float16).astype(np.float32) for x in (q, K, V))
    for context in (1, 17, 150):
        ins = []
        for i, a in enumerate((q, K, V)):
            p = tmp_path / f"in{i}.npy"
            np.save(p, a)
            ins += ["--input", str(p)]
        ref_dir = tmp_path / f"ref{context}"
        r = subprocess.run([TANG_RUN, src, "--size", f"arg3={context - 1}",
                            "--output-dir", ref_dir, *ins],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        ref = np.load(ref_dir / "output_0.npy").astype(np.float64)
        # Positions past the context hold NaN: read, they would show.
        Kn, Vn = K.copy(), V.copy()
        Kn[:, context:] = np.nan
        Vn[:, context:] = np.nan
        (got,) = emu.run("main", [q, Kn, Vn], sizes=[context - 1])
        tol = harness.Tolerance("f32" if out == "bf16q" else out,
                                reduction=max(context, dim),
                                roundings=1)
        check = harness.check_elementwise(got, ref, tol,
                                          f"{path} {out} ctx{context}")
        assert check["ok"], (check, got.ravel()[:4], ref.ravel()[:4])


BATCH = 3


def varlen_program(sms, value_mask=True, static=False):
    """Decode attention over sequences of different lengths: %n keys (the
    longest; with `static`, the whole cache, %n unused), sequence b's keys
    j < lens[b] (the score -inf past it and, with `value_mask`, the value
    0: kernels skip those keys)."""
    H, KV, C, D = HEADS, KV_HEADS, CAPACITY, 64
    mask = ("%len = tang.read %lens[%b] : tensor<3xi32>\n"
            "    %vj = tang.index %j : i32\n"
            "    %keep = arith.cmpi slt, %vj, %len : i32\n")
    value = (mask.replace("%len", "%v_len").replace("%vj", "%v_vj")
             .replace("%keep", "%v_keep").replace("%v_lens", "%lens") +
             "    %zero = arith.constant 0.0 : f32\n"
             "    %vm = arith.select %v_keep, %vf, %zero : f32\n"
             if value_mask else "    %vm = arith.addf %vf, %vf : f32\n")
    text = f"""module attributes {{tang.target = {TARGET.format(sms=sms)}}} {{
func.func @main(%q: tensor<3x{H}x{D}xf32>, %K: tensor<3x{KV}x{C}x{D}xbf16>, %V: tensor<3x{KV}x{C}x{D}xbf16>, %lens: tensor<3xi32>, %n: index) -> tensor<3x{H}x{D}xf32> {{
  %s = tang.comprehension (%b, %h, %j) [3, {H}, %n] : tensor<3x{H}x?xf32> {{
    %dot = tang.comprehension reduce (%e) [{D}] monoid(add) : f32 {{
      %a = tang.read %q[%b, %h, %e] : tensor<3x{H}x{D}xf32>
      %k = tang.read %K[%b, %h floordiv 4, %j, %e] : tensor<3x{KV}x{C}x{D}xbf16>
      %kf = arith.extf %k : bf16 to f32
      %p = arith.mulf %a, %kf : f32
      tang.yield %p : f32
    }}
    %scale = arith.constant 0.125 : f32
    %r = arith.mulf %dot, %scale : f32
    {mask}    %ninf = arith.constant 0xFF800000 : f32
    %sm = arith.select %keep, %r, %ninf : f32
    tang.yield %sm : f32
  }}
  %m = tang.comprehension (%b, %h) reduce (%j) [3, {H}, %n] monoid(max) : tensor<3x{H}xf32> {{
    %x = tang.read %s[%b, %h, %j] : tensor<3x{H}x?xf32>
    tang.yield %x : f32
  }}
  %z = tang.comprehension (%b, %h) reduce (%j) [3, {H}, %n] monoid(add) : tensor<3x{H}xf32> {{
    %x = tang.read %s[%b, %h, %j] : tensor<3x{H}x?xf32>
    %mx = tang.read %m[%b, %h] : tensor<3x{H}xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    tang.yield %e : f32
  }}
  %o = tang.comprehension (%b, %h, %d) reduce (%j) [3, {H}, {D}, %n] monoid(add) : tensor<3x{H}x{D}xf32> {{
    %x = tang.read %s[%b, %h, %j] : tensor<3x{H}x?xf32>
    %mx = tang.read %m[%b, %h] : tensor<3x{H}xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    %zz = tang.read %z[%b, %h] : tensor<3x{H}xf32>
    %w = arith.divf %e, %zz : f32
    %v = tang.read %V[%b, %h floordiv 4, %j, %d] : tensor<3x{KV}x{C}x{D}xbf16>
    %vf = arith.extf %v : bf16 to f32
{value}    %r = arith.mulf %w, %vm : f32
    tang.yield %r : f32
  }}
  return %o : tensor<3x{H}x{D}xf32>
}}
}}
"""
    if static:
        text = text.replace(", %n]", f", {C}]").replace(
            f"x{H}x?xf32", f"x{H}x{C}xf32")
    return text


# (With a static extent, 16 multiprocessors: the kernel choice takes the
# split kernel, 2 splits of the 160 keys: 64 keys a split at least.)
@pytest.mark.parametrize("path,sms,static", [
    ("lanes", 1, False), ("mma", 1, False), ("mma", 4, False),
    ("lanes", 4, False), ("mma", 16, True), ("lanes", 16, True)])
def test_varlen_decode_attention(tmp_path, path, sms, static):
    """Each sequence's keys end at its length (read from a tensor): the
    kernels skip the rest, which hold NaN (a kernel that read a key or a
    value past a length would return NaN; the interpreter, visiting
    every key, gets 0 from the value's mask)."""
    if not TANG_OPT.exists():
        pytest.skip("tang-opt not built")
    src = tmp_path / "varlen.mlir"
    src.write_text(varlen_program(sms, static=static))
    options = "tensor-cores=target split-softmax-mma=" + (
        "on" if path == "mma" else "off")
    text = kernel_form(src, options)
    assert ("nvvm.mma.sync" in text) == (path == "mma")
    # The split kernel (its workgroup buffer of the warps' carriers).
    assert "memref<4x4x64x3xf32, #gpu.address_space<workgroup>" in text
    emu = KernelFormEmulator(text)
    rng = np.random.default_rng(11)
    q = rng.standard_normal((BATCH, HEADS, 64)).astype(np.float32)
    K = bf16(rng.standard_normal((BATCH, KV_HEADS, CAPACITY, 64)))
    V = bf16(rng.standard_normal((BATCH, KV_HEADS, CAPACITY, 64)))
    # Lengths of one key, part of a tile, several splits; the extent
    # below and above the longest (a length past it keeps every key).
    for lens, n in (((1, 17, 150), 150), ((150, 3, 64), 160),
                    ((200, 40, 1), 120)):
        if static and n != CAPACITY:
            continue
        lens = np.array(lens, dtype=np.int32)
        Kn, Vn = K.copy(), V.copy()
        for b, length in enumerate(lens):
            Kn[b, :, length:] = np.nan
            Vn[b, :, length:] = np.nan
        ins = []
        for i, a in enumerate((q, Kn, Vn, lens)):
            p = tmp_path / f"in{i}.npy"
            np.save(p, a)
            ins += ["--input", str(p)]
        ref_dir = tmp_path / f"ref{n}"
        r = subprocess.run([TANG_RUN, src, "--size", f"arg4={n}",
                            "--output-dir", ref_dir, *ins],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        ref = np.load(ref_dir / "output_0.npy").astype(np.float64)
        assert np.all(np.isfinite(ref))
        (got,) = emu.run("main", [q, Kn, Vn, lens], sizes=[n])
        tol = harness.Tolerance("f32", reduction=max(n, 64), roundings=1)
        check = harness.check_elementwise(got, ref, tol,
                                          f"{path} lens {list(lens)} n {n}")
        assert check["ok"], (check, got.ravel()[:4], ref.ravel()[:4])


def test_mma_fragments():
    """The emulator's m16n8k16 against a NumPy product: lane l holds A
    rows l/4 and l/4 + 8, B column l/4, C rows l/4 and l/4 + 8 (PTX ISA)."""
    rng = np.random.default_rng(3)
    A = bf16(rng.standard_normal((16, 16))).astype(np.float64)
    B = bf16(rng.standard_normal((16, 8))).astype(np.float64)
    C = rng.standard_normal((16, 8)).astype(np.float32)
    lane = np.arange(32)
    g, t = lane // 4, lane % 4

    def reg(lo, hi):
        bits = np.stack([to_bf16_bits(lo), to_bf16_bits(hi)], axis=1)
        return np.ascontiguousarray(bits).view(np.int32).reshape(32)
    a = [reg(A[g + r, 2 * t + c], A[g + r, 2 * t + c + 1])
         for r, c in ((0, 0), (8, 0), (0, 8), (8, 8))]
    b = [reg(B[2 * t + k, g], B[2 * t + k + 1, g]) for k in (0, 8)]
    c = [C[g + r, 2 * t + cc] for r, cc in ((0, 0), (0, 1), (8, 0), (8, 1))]

    class FakeOp:
        attrs = ("multiplicandAPtxType = #nvvm.mma_type<bf16>, "
                 "shape = #nvvm.shape<m = 16, n = 8, k = 16>")

    class Warp:
        mask = np.ones(32, bool)
    d = KernelFormEmulator.mma(None, FakeOp, a + b + c, Warp)
    D = (A @ B + C).astype(np.float32)
    want = [D[g + r, 2 * t + cc] for r, cc in ((0, 0), (0, 1), (8, 0), (8, 1))]
    for x, y in zip(d, want):
        np.testing.assert_array_equal(x, y)


def test_out_of_bounds_is_reported(tmp_path):
    """A load past a buffer's end is an error, not a silent read."""
    if not TANG_OPT.exists():
        pytest.skip("tang-opt not built")
    text = """"builtin.module"() ({
  "func.func"() <{function_type = (memref<4xf32>, memref<4xf32>) -> (), sym_name = "main"}> ({
  ^bb0(%a: memref<4xf32>, %o: memref<4xf32>):
    %g = "arith.constant"() <{value = 1 : index}> : () -> index
    %b = "arith.constant"() <{value = 32 : index}> : () -> index
    "gpu.launch_func"(%g, %g, %g, %b, %g, %g, %a, %o) <{kernel = @k::@f, operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 0>}> : (index, index, index, index, index, index, memref<4xf32>, memref<4xf32>) -> ()
    "func.return"() : () -> ()
  }) : () -> ()
  "gpu.module"() <{sym_name = "k"}> ({
    "gpu.func"() <{function_type = (memref<4xf32>, memref<4xf32>) -> (), sym_name = "f"}> ({
    ^bb0(%a: memref<4xf32>, %o: memref<4xf32>):
      %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %x = "memref.load"(%a, %t) <{nontemporal = false}> : (memref<4xf32>, index) -> f32
      "gpu.return"() : () -> ()
    }) {gpu.kernel} : () -> ()
  }) : () -> ()
}) : () -> ()
"""
    emu = KernelFormEmulator(text)
    with pytest.raises(EmulatorError, match="out-of-bounds"):
        emu.run("main", [np.zeros(4, np.float32)])


EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))
# Thread-serial kernels of millions of emulated operations (30-40 s each
# here): plain point kernels, which the portable backends' differential
# tests already run on every element.
SERIAL = {"linear_recurrence", "causal_conv1d"}


# The examples whose online-softmax reduction takes the split kernel on a
# tensor-core target (f32: no flash kernel; the kernel choice splits it).
SPLIT_EXAMPLES = ["attention", "alibi_attention", "causal_attention",
                  "gqa_attention", "transformer_block",
                  "varlen_decode_attention"]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example(tmp_path, example):
    """The example's kernels (tensor-cores=none: cooperative SIMT kernels)
    on the emulator against tang-run, every element: f32 within the
    f32 bound for a reduction as long as the largest input (an upper
    bound of the examples' reductions), integers and NaN patterns exact."""
    if example.stem in SERIAL:
        pytest.skip("thread-serial point kernels: the portable backends' "
                    "differential tests run them")
    check_example(tmp_path, example, "tensor-cores=none")


@pytest.mark.parametrize("name", SPLIT_EXAMPLES)
def test_example_split_softmax(tmp_path, name):
    """As test_example, with tensor cores: the split online-softmax kernel
    (on lanes: f32 keys) of a static extent."""
    example = ROOT / "examples" / f"{name}.mlir"
    text = check_example(tmp_path, example, "tensor-cores=target")
    assert "x3xf32, #gpu.address_space<workgroup>" in text


def check_example(tmp_path, example, options):
    if not TANG_OPT.exists():
        pytest.skip("tang-opt not built")
    text = kernel_form(example, options,
                       ["--tang-attach-target=chip=sm_90a"])
    emu = KernelFormEmulator(text)
    (name, fn), = emu.functions.items()
    body = fn.regions[0]
    ninputs = int(re.search(r"tang.num_inputs = (\d+)", fn.attrs).group(1))
    specs = tang_sizes.program_sizes(example.read_text())
    spec = specs[-1] if specs else []
    size_args, _ = tang_sizes.parse_specs(spec)
    rng = np.random.default_rng(11)
    inputs, files, sizes = [], [], []
    for pos, t in enumerate(body.arg_types[:ninputs]):
        if not t.startswith("memref"):
            sizes.append(size_args.get(pos, 0))
            continue
        shape, elem = memref_shape(t)
        x = (rng.uniform(-1, 1, shape).astype(np.float32)
             if elem.startswith(("f", "bf")) else
             rng.integers(0, 4, shape).astype(np.int32))
        inputs.append(x)
        path = tmp_path / f"in{len(inputs)}.npy"
        np.save(path, x)
        files += ["--input", str(path)]
    flags = [f for s in spec for f in ("--size", s)]
    r = subprocess.run([TANG_RUN, example, "--output-dir", tmp_path / "ref",
                        *flags, *files], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = emu.run(name, inputs, sizes=sizes)
    longest = max(x.size for x in inputs)
    for k, g in enumerate(got):
        ref = np.load(tmp_path / "ref" / f"output_{k}.npy")
        g = g.reshape(ref.shape)
        if np.issubdtype(g.dtype, np.integer):
            np.testing.assert_array_equal(g, ref)
            continue
        check = harness.check_elementwise(
            g, ref.astype(np.float64),
            harness.Tolerance("f32", reduction=longest, roundings=1),
            f"{example.stem} output {k}")
        assert check["ok"], check
    return text


def attention(L, D, causal=True):
    """bf16 attention [1, 2, L, D] (a flash kernel's shape), causal or not."""
    mask = """
    %ii = tang.index %i : i32
    %jj = tang.index %j : i32
    %ok = arith.cmpi sle, %jj, %ii : i32
    %m = arith.select %ok, %sc, %ninf : bf16""" if causal else """
    %m = arith.addf %sc, %zero : bf16"""
    t = f"tensor<1x2x{L}x{D}xbf16>"
    return f"""func.func @main(%q: {t}, %k: {t}, %v: {t}) -> {t} {{
  %ninf = arith.constant 0xFF80 : bf16
  %zero = arith.constant 0.0 : bf16
  %scale = arith.constant 1.250000e-01 : bf16
  %o = tang.comprehension (%b, %h, %i, %d) reduce (%j) [1, 2, {L}, {D}, {L}] monoid(online_softmax) : {t} {{
    %s = tang.comprehension reduce (%e) [{D}] monoid(add) : bf16 {{
      %x = tang.read %q[%b, %h, %i, %e] : {t}
      %y = tang.read %k[%b, %h, %j, %e] : {t}
      %p = arith.mulf %x, %y : bf16
      tang.yield %p : bf16
    }}
    %sc = arith.mulf %s, %scale : bf16{mask}
    %w = tang.read %v[%b, %h, %j, %d] : {t}
    tang.yield %m, %w : bf16, bf16
  }}
  return %o : {t}
}}
"""


def gradient(text, tmp_path):
    """The @main_grad of --tang-grad alone, named @main."""
    src = tmp_path / "fwd.mlir"
    src.write_text(text)
    r = subprocess.run([TANG_OPT, src, "--tang-grad"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    start = out.index("  func.func @main_grad(")
    end = out.index("\n  }\n", start) + len("\n  }\n")
    return "module {\n" + out[start:end].replace("@main_grad(", "@main(") \
        + "}\n"


MATMUL = """func.func @main(%a: tensor<128x64xbf16>, %b: tensor<64x128xbf16>) -> tensor<128x128xf32> {
  %c = tang.comprehension (%i, %j) reduce (%k) [128, 128, 64] monoid(add) : tensor<128x128xf32> {
    %x = tang.read %a[%i, %k] : tensor<128x64xbf16>
    %y = tang.read %b[%k, %j] : tensor<64x128xbf16>
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    tang.yield %p : f32
  }
  return %c : tensor<128x128xf32>
}
"""


@pytest.mark.parametrize("case", ["matmul", "flash", "flash_full",
                                  "attention_grad"])
def test_tensor_cores_sm80(tmp_path, case):
    """Tensor-core kernels on sm_80 (mma.sync with cp.async into swizzled
    shared memory, ldmatrix, pipelined k steps): a bf16 GEMM, the flash
    forward (causal over 80 keys: a partial tile; and not causal), and
    attention's backward (score kernels for dQ and dK/dV) against the
    interpreter, with bench/ tolerances of the same outputs (R: the
    roundings on the path: 1 for the GEMM's f32 sums, 3 for O, 9 for the
    gradients)."""
    if not TANG_OPT.exists():
        pytest.skip("tang-opt not built")
    text, tols = {
        "matmul": (MATMUL, [harness.Tolerance("f32", reduction=64)]),
        "flash": (attention(80, 64),
                  [harness.Tolerance("bf16", reduction=80, roundings=3)]),
        "flash_full": (attention(80, 64, causal=False),
                       [harness.Tolerance("bf16", reduction=80, roundings=3)]),
        "attention_grad": (
            gradient(attention(128, 64), tmp_path),
            [harness.Tolerance("bf16", reduction=128, roundings=9)] * 3),
    }[case]
    src = tmp_path / "prog.mlir"
    src.write_text(text)
    kernels = kernel_form(src, "tensor-cores=target",
                          ["--tang-attach-target=chip=sm_80"])
    assert "nvvm.mma.sync" in kernels and "nvgpu.ldmatrix" in kernels
    emu = KernelFormEmulator(kernels)
    (name, fn), = emu.functions.items()
    body = fn.regions[0]
    ninputs = int(re.search(r"tang.num_inputs = (\d+)", fn.attrs).group(1))
    rng = np.random.default_rng(5)
    inputs, files = [], []
    for t in body.arg_types[:ninputs]:
        shape, _ = memref_shape(t)
        inputs.append(bf16(rng.uniform(-1, 1, shape)))
        path = tmp_path / f"in{len(inputs)}.npy"
        np.save(path, inputs[-1])
        files += ["--input", str(path)]
    r = subprocess.run([TANG_RUN, src, "--output-dir", tmp_path / "ref",
                        *files], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = emu.run(name, inputs)
    assert len(got) == len(tols)
    for k, (g, tol) in enumerate(zip(got, tols)):
        ref = np.load(tmp_path / "ref" / f"output_{k}.npy").astype(np.float64)
        check = harness.check_elementwise(g.reshape(ref.shape), ref, tol,
                                          f"{case} output {k}")
        assert check["ok"], check


def interpreter_outputs(tmp_path, src, inputs):
    """The float64 interpreter's outputs of program `src` on `inputs`
    (tang-run, the inputs saved as .npy)."""
    files = []
    for n, x in enumerate(inputs):
        np.save(tmp_path / f"in{n}.npy", x)
        files += ["--input", str(tmp_path / f"in{n}.npy")]
    r = subprocess.run([TANG_RUN, src, "--output-dir", tmp_path / "ref",
                        *files], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return [np.load(p).astype(np.float64)
            for p in sorted((tmp_path / "ref").glob("output_*.npy"))]


def check_product(tmp_path, src, kernels, inputs, precision, name):
    """Runs the kernel form `kernels` of `src` (a 3 x 70 x 72 product over
    a 200-long reduction) on `inputs` and checks every element against the
    interpreter within `precision`'s bound; returns the output."""
    (ref,) = interpreter_outputs(tmp_path, src, inputs)
    (got,) = KernelFormEmulator(kernels).run("main", inputs)
    check = harness.check_elementwise(
        got.reshape(ref.shape), ref,
        harness.Tolerance(precision, reduction=200, roundings=2), name)
    assert check["ok"], check
    return got


SPLIT_K = """func.func @main(%x: tensor<3x70x200xbf16>, %w: tensor<3x200x72xbf16>, %bias: tensor<72xbf16>) -> tensor<3x70x72xbf16> {
  %c = tang.comprehension (%g, %i, %j) [3, 70, 72] attributes {schedule = #tang.schedule<tile = [1, 64, 64], mapping = [block_z, block_y, block_x], threads = [1, 2, 64], vector = 8, stages = 3, memory = [shared, shared, shared], kernel = contraction, mma = mma_sync, split_k = SPLITS>} : tensor<3x70x72xbf16> {
    %s = tang.comprehension reduce (%k) [200] monoid(add) attributes {schedule = #tang.schedule<tile = [32], vector = 1, stages = 1, memory = [global]>} : f32 {
      %a = tang.read %x[%g, %i, %k] : tensor<3x70x200xbf16>
      %b = tang.read %w[%g, %k, %j] : tensor<3x200x72xbf16>
      %af = arith.extf %a : bf16 to f32
      %bf = arith.extf %b : bf16 to f32
      %p = arith.mulf %af, %bf : f32
      tang.yield %p : f32
    }
    %bb = tang.read %bias[%j] : tensor<72xbf16>
    %bf = arith.extf %bb : bf16 to f32
    %t = arith.addf %s, %bf : f32
    %h = math.tanh %t : f32
    %r = arith.truncf %h : f32 to bf16
    tang.yield %r : bf16
  }
  return %c : tensor<3x70x72xbf16>
}
"""


@pytest.mark.parametrize("splits", [1, 3, 7])
def test_split_k_sm80(tmp_path, splits):
    """A batched product with an epilogue (bias, tanh, bf16) on mma.sync
    with its 200-long reduction (7 k steps of 32) split among 3 blocks
    per tile (runs of 3, 3 and 1 steps) or 7 (one each): partial sums in
    the f32 workspace, the second kernel adding them in order and
    evaluating the epilogue; ragged rows (70) and columns (72) against
    the interpreter; split_k = 1 is the one-kernel path. Two runs of the
    split kernels give the same bits (the sums' order is fixed)."""
    if not TANG_OPT.exists():
        pytest.skip("tang-opt not built")
    src = tmp_path / "prog.mlir"
    src.write_text(SPLIT_K.replace("SPLITS", str(splits)))
    kernels = kernel_form(src, "tensor-cores=target",
                          ["--tang-attach-target=chip=sm_80"])
    launches = re.findall(r'"gpu.launch_func"', kernels)
    assert len(launches) == (2 if splits > 1 else 1)
    rng = np.random.default_rng(3)
    inputs = [bf16(rng.uniform(-1, 1, s))
              for s in ((3, 70, 200), (3, 200, 72), (72,))]
    got = check_product(tmp_path, src, kernels, inputs, "bf16", "split_k")
    if splits > 1:
        (again,) = KernelFormEmulator(kernels).run("main", inputs)
        np.testing.assert_array_equal(
            again.view(np.uint32), got.view(np.uint32))


NORM_WEIGHT_GRAD = """func.func @main(%x: tensor<3x700x72xbf16>, %dy: tensor<3x700x72xbf16>, %rs: tensor<3x700xf32>) -> tensor<72xbf16> {
  %c = tang.comprehension (%p) reduce (%b, %l) [72, 3, 700] monoid(add) : tensor<72xbf16> {
    %s = tang.read %rs[%b, %l] : tensor<3x700xf32>
    %a = tang.read %x[%b, %l, %p] : tensor<3x700x72xbf16>
    %af = arith.extf %a : bf16 to f32
    %m = arith.mulf %af, %s : f32
    %g = tang.read %dy[%b, %l, %p] : tensor<3x700x72xbf16>
    %gf = arith.extf %g : bf16 to f32
    %q = arith.mulf %gf, %m : f32
    %t = arith.truncf %q : f32 to bf16
    tang.yield %t : bf16
  }
  return %c : tensor<72xbf16>
}
"""

COLUMN_MAX = """func.func @main(%x: tensor<3x500x70xf32>) -> tensor<3x70xf32> {
  %c = tang.comprehension (%o, %p) reduce (%r) [3, 70, 500] monoid(max) attributes {schedule = #tang.schedule<tile = [1, 64, 500], mapping = [block_z, block_x, serial], threads = [1, 32, 4], vector = 2, stages = 1, memory = [global], kernel = simt, split_k = 3>} : tensor<3x70xf32> {
    %a = tang.read %x[%o, %r, %p] : tensor<3x500x70xf32>
    %e = math.exp %a : f32
    tang.yield %e : f32
  }
  return %c : tensor<3x70xf32>
}
"""


COLUMN_SUM = COLUMN_MAX.replace("monoid(max)", "monoid(add)").replace(
    "%e = math.exp %a : f32", "%e = arith.mulf %a, %a : f32")


# A vector times matrices read down their columns (the gated delta rule's
# decode `w^T S0`: three parallel indices besides the columns' one, the
# query heads grouped two to a key head).
MATVEC_COLUMNS = """func.func @main(%w: tensor<3x2x40xf32>, %s: tensor<3x4x40x72xf32>) -> tensor<3x4x72xf32> {
  %c = tang.comprehension (%b, %h, %j) reduce (%r) [3, 4, 72, 40] monoid(add) : tensor<3x4x72xf32> {
    %a = tang.read %w[%b, %h floordiv 2, %r] : tensor<3x2x40xf32>
    %x = tang.read %s[%b, %h, %r, %j] : tensor<3x4x40x72xf32>
    %m = arith.mulf %a, %x : f32
    tang.yield %m : f32
  }
  return %c : tensor<3x4x72xf32>
}
"""


@pytest.mark.parametrize("case", ["norm_weight_grad", "column_max",
                                  "column_sum", "matvec_columns"])
def test_column_reduction(tmp_path, case):
    """Column reductions on the column kernel (strips of columns per block,
    a run of rows per warp, split k over blocks): a norm weight's gradient
    (a sum over batch and length of 72 columns, the per-row statistic read
    beside them; the heuristic's schedule: 2 strips of 64 columns, the
    second partial, 2100 rows split among 16 blocks) and a max over rows of
    70 columns for 3 outer points (a hand-written schedule: 3 splits of
    167 rows, 4 warps), and a vector times matrices read down their
    columns (the heuristic's schedule: 12 outer points over block_z, one
    kernel), against the interpreter; the split kernels give the same bits
    twice."""
    if not TANG_OPT.exists():
        pytest.skip("tang-opt not built")
    text, shapes, tol = {
        "norm_weight_grad": (NORM_WEIGHT_GRAD,
                             [(3, 700, 72), (3, 700, 72), (3, 700)],
                             harness.Tolerance("bf16", reduction=2100)),
        "column_max": (COLUMN_MAX, [(3, 500, 70)],
                       harness.Tolerance("f32", reduction=1)),
        "column_sum": (COLUMN_SUM, [(3, 500, 70)],
                       harness.Tolerance("f32", reduction=500)),
        "matvec_columns": (MATVEC_COLUMNS, [(3, 2, 40), (3, 4, 40, 72)],
                           harness.Tolerance("f32", reduction=40)),
    }[case]
    src = tmp_path / "prog.mlir"
    src.write_text(text)
    kernels = kernel_form(src, "", ["--tang-attach-target=chip=sm_90a"])
    assert len(re.findall(r'"gpu.launch_func"', kernels)) == (
        1 if case == "matvec_columns" else 2)
    if case == "matvec_columns":
        # The column kernel: 8 warps' carriers for a strip of 64 columns.
        assert ("memref<8x64x1xf32, #gpu.address_space<workgroup>>"
                in kernels), kernels
    emu = KernelFormEmulator(kernels)
    rng = np.random.default_rng(9)
    inputs = [bf16(rng.uniform(-1, 1, s)) for s in shapes]
    (ref,) = interpreter_outputs(tmp_path, src, inputs)
    (got,) = emu.run("main", inputs)
    check = harness.check_elementwise(got.reshape(ref.shape), ref, tol,
                                      case)
    assert check["ok"], check
    (again,) = KernelFormEmulator(kernels).run("main", inputs)
    np.testing.assert_array_equal(again.view(np.uint32), got.view(np.uint32))
    if case != "column_max":
        # The precision emulator follows the column kernel's order (runs of
        # rows per warp in warp order, the splits in order), f32 carriers,
        # a body's truncf to bf16 no rounding: the same bits (the bodies
        # are products). The f32 sum tells orders apart: summed in row
        # order, other bits.
        emulated = precision_emulator(tmp_path, src, inputs)
        np.testing.assert_array_equal(
            emulated.astype(np.float32).view(np.uint32).reshape(-1),
            got.astype(np.float32).view(np.uint32).reshape(-1))
    if case == "column_sum":
        sq = np.square(inputs[0].astype(np.float32))
        acc = np.zeros((3, 70), np.float32)
        for r in range(500):
            acc = (acc + sq[:, r, :]).astype(np.float32)
        assert np.any(acc.reshape(-1) != got.reshape(-1))


def precision_emulator(tmp_path, src, inputs):
    """`tang-run --precision=schedule` on `src` as the kernel form's
    pipeline schedules it (sm_90a), on `inputs`: its one output."""
    scheduled = tmp_path / "scheduled.mlir"
    r = subprocess.run(
        [TANG_OPT, src, "--tang-attach-target=chip=sm_90a", "--tang-fuse",
         "--tang-online-softmax", "--tang-schedule", "-o", scheduled],
        capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    files = []
    for n, x in enumerate(inputs):
        np.save(tmp_path / f"pin{n}.npy", x)
        files += ["--input", str(tmp_path / f"pin{n}.npy")]
    r = subprocess.run([TANG_RUN, scheduled, "--precision=schedule",
                        "--output-dir", tmp_path / "emulated", *files],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return np.load(tmp_path / "emulated" / "output_0.npy")


CONCAT = """func.func @main(%a: tensor<8x128xbf16>, %b: tensor<8x128xbf16>) -> tensor<8x256xbf16> {
  %c0 = arith.constant 0.0 : bf16
  %z = arith.constant 0 : i64
  %n = arith.constant 128 : i64
  %o = tang.comprehension (%i, %j) [8, 256] : tensor<8x256xbf16> {
    %x = tang.read %a[%i, %j mod 128] : tensor<8x128xbf16>
    %jj = tang.index %j : i64
    %lo = arith.cmpi sge, %jj, %z : i64
    %hi = arith.cmpi slt, %jj, %n : i64
    %in = arith.andi %lo, %hi : i1
    %xs = arith.select %in, %x, %c0 : bf16
    %y = tang.read %b[%i, %j mod 128] : tensor<8x128xbf16>
    %kk = tang.index [%j - 128] : i64
    %lo2 = arith.cmpi sge, %kk, %z : i64
    %hi2 = arith.cmpi slt, %kk, %n : i64
    %in2 = arith.andi %lo2, %hi2 : i1
    %ys = arith.select %in2, %y, %c0 : bf16
    %s = arith.addf %xs, %ys : bf16
    tang.yield %s : bf16
  }
  return %o : tensor<8x256xbf16>
}
"""


def test_predicated_concatenation(tmp_path):
    """A concatenation written as masked reads: each 8-column vector loads
    only the half it is in (scf.if around each vector load), and the
    result is the two inputs side by side, bit for bit."""
    if not TANG_OPT.exists():
        pytest.skip("tang-opt not built")
    src = tmp_path / "prog.mlir"
    src.write_text(CONCAT)
    kernels = kernel_form(src, "", ["--tang-attach-target=chip=sm_90a"])
    assert kernels.count('"scf.if"') >= 2
    rng = np.random.default_rng(4)
    a, b = (bf16(rng.uniform(-1, 1, (8, 128))) for _ in range(2))
    (got,) = KernelFormEmulator(kernels).run("main", [a, b])
    np.testing.assert_array_equal(got.reshape(8, 256),
                                  np.concatenate([a, b], axis=1))


RESHAPED = """func.func @main(%a: tensor<4x8x16x32xf32>) -> tensor<4x128xf32> {
  %s = tang.comprehension (%i, %j, %k) reduce (%r) [4, 8, 16, 32] monoid(add) : tensor<4x8x16xf32> {
    %x = tang.read %a[%i, %j, %k, %r] : tensor<4x8x16x32xf32>
    %y = arith.mulf %x, %x : f32
    tang.yield %y : f32
  }
  %o = tang.comprehension (%i, %j) [4, 128] : tensor<4x128xf32> {
    %x = tang.read %s[%i, %j floordiv 16, %j mod 16] : tensor<4x8x16xf32>
    tang.yield %x : f32
  }
  return %o : tensor<4x128xf32>
}
"""


def test_returned_reshape(tmp_path):
    """A returned reshape launches no copy: the reduction writes the
    output through a view of its shape (every element against tang-run)."""
    if not TANG_OPT.exists():
        pytest.skip("tang-opt not built")
    src = tmp_path / "reshaped.mlir"
    src.write_text(RESHAPED)
    text = kernel_form(src, "tensor-cores=none",
                       ["--tang-attach-target=chip=sm_90a"])
    assert text.count('"gpu.launch_func"') == 1
    emu = KernelFormEmulator(text)
    a = np.random.default_rng(5).uniform(-1, 1, (4, 8, 16, 32))
    a = a.astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    r = subprocess.run([TANG_RUN, src, "--output-dir", tmp_path / "ref",
                        "--input", tmp_path / "a.npy"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ref = np.load(tmp_path / "ref" / "output_0.npy").astype(np.float64)
    (got,) = emu.run("main", [a])
    check = harness.check_elementwise(
        got, ref, harness.Tolerance("f32", reduction=32, roundings=1),
        "reshaped")
    assert check["ok"], check


@pytest.mark.parametrize("stages", [2, 4])
def test_row_kernel_loads_in_flight(tmp_path, stages):
    """The schedule's stages on a row kernel: that many vectors per thread
    loaded before their combines (a main loop while all are in the row,
    then one at a time). The vocabulary example (a row kernel without a
    row, 2056 = 2 x 256 x 4 + 8 elements) with stages 2 runs one main trip
    and a partial tail; with 4, no main trip (8 KiB per trip > the row):
    both against tang-run on every element."""
    if not TANG_OPT.exists():
        pytest.skip("tang-opt not built")
    example = ROOT / "examples" / "vocab_cross_entropy.mlir"
    r = subprocess.run([TANG_OPT, example, "--tang-fuse",
                        "--tang-online-softmax", "--tang-schedule"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    single = ("threads = [256], vector = 4, stages = 1, storage = f32, "
              "accumulate = f32, memory = [global]")
    assert single in r.stdout
    memory = ", ".join(["global"] * stages)
    program = tmp_path / "staged.mlir"
    program.write_text(r.stdout.replace(single, single.replace(
        "stages = 1", f"stages = {stages}").replace(
        "memory = [global]", f"memory = [{memory}]")))
    check_example(tmp_path, program, "tensor-cores=none")


TILED = """func.func @main(%A: tensor<3x70x200xf32>, %B: tensor<3x200x72xf32>, %bias: tensor<72xf32>) -> tensor<3x70x72xf32> {
  %c = tang.comprehension (%b, %i, %j) [3, 70, 72] attributes {schedule = #tang.schedule<tile = [1, 64, 64], mapping = [block_z, block_y, block_x], threads = [1, 16, 16], vector = VECTOR, stages = 1, memory = [shared]>} : tensor<3x70x72xf32> {
    %s = tang.comprehension reduce (%k) [200] monoid(add) : f32 {
      %a = tang.read %A[%b, %i, %k] : tensor<3x70x200xf32>
      %x = tang.read %B[%b, %k, %j] : tensor<3x200x72xf32>
      %m = arith.mulf %a, %x : f32
      tang.yield %m : f32
    }
    %w = tang.read %bias[%j] : tensor<72xf32>
    %r = arith.addf %s, %w : f32
    %t = math.tanh %r : f32
    tang.yield %t : f32
  }
  return %c : tensor<3x70x72xf32>
}
"""


@pytest.mark.parametrize("vector", [1, 2, 4])
def test_tiled_simt_product(tmp_path, vector):
    """The register-tiled SIMT product (4 x 4 points a thread, both
    operands staged in workgroup memory in steps of 32 along a 200-long
    reduction, the last step short; ragged rows 70 and columns 72; an
    epilogue): with the schedule's vector 1 a thread's points are strided
    by the threads and read one word at a time from the tiles; with 2 or 4
    they are runs of consecutive rows and columns read as vectors. Every
    element against the interpreter."""
    if not TANG_OPT.exists():
        pytest.skip("tang-opt not built")
    src = tmp_path / "prog.mlir"
    src.write_text(TILED.replace("VECTOR", str(vector)))
    kernels = kernel_form(src, "", ["--tang-attach-target=chip=sm_90a"])
    loads = re.findall(r'"vector.load"\([^)]*\) .*: \(memref<32x(\d+)xf32, '
                       r'#gpu.address_space<workgroup>>', kernels)
    if vector == 1:
        assert not loads, loads
        assert "memref<32x65xf32, #gpu.address_space<workgroup>>" in kernels
    else:
        # One run of each operand's tile a step.
        assert sorted(set(loads)) == [str(64 + vector)], loads
    rng = np.random.default_rng(5)
    inputs = [rng.uniform(-1, 1, s).astype(np.float32)
              for s in ((3, 70, 200), (3, 200, 72), (72,))]
    check_product(tmp_path, src, kernels, inputs, "f32", "tiled")


def affine_scan_program(points, steps, K, V):
    """A tensor scan S_t = A_t S_{t-1} + B_t of K x V states from an init,
    at `points` parallel points and `steps` steps: its states."""
    a, s = f"tensor<{K}x{K}xf32>", f"tensor<{K}x{V}xf32>"
    A, B = (f"tensor<{points}x{steps}x{K}x{K}xf32>",
            f"tensor<{points}x{steps}x{K}x{V}xf32>")
    return f"""tang.monoid @affine : [{a}, {s}] identity [] {{
^bb0(%a1: {a}, %b1: {s}, %a2: {a}, %b2: {s}):
  %a = tang.comprehension (%i, %j) reduce (%k) [{K}, {K}, {K}] monoid(add) : {a} {{
    %x = tang.read %a2[%i, %k] : {a}
    %y = tang.read %a1[%k, %j] : {a}
    %p = arith.mulf %x, %y : f32
    tang.yield %p : f32
  }}
  %b = tang.comprehension (%i, %j) [{K}, {V}] : {s} {{
    %t = tang.comprehension reduce (%k) [{K}] monoid(add) : f32 {{
      %x = tang.read %a2[%i, %k] : {a}
      %y = tang.read %b1[%k, %j] : {s}
      %p = arith.mulf %x, %y : f32
      tang.yield %p : f32
    }}
    %z = tang.read %b2[%i, %j] : {s}
    %r = arith.addf %z, %t : f32
    tang.yield %r : f32
  }}
  tang.yield %a, %b : {a}, {s}
}}
func.func @main(%A: {A}, %B: {B}, %I: tensor<{points}x{K}x{K}xf32>, %S0: tensor<{points}x{K}x{V}xf32>) -> {B} {{
  %PA, %S = tang.tensor_scan @affine(%A, %B : {A}, {B}) init(%I, %S0 : tensor<{points}x{K}x{K}xf32>, tensor<{points}x{K}x{V}xf32>) -> {A}, {B}
  return %S : {B}
}}
"""


@pytest.mark.parametrize("K,V,trip,chip,staged", [
    (32, 40, 16, "sm_75", False), (24, 8, 8, "sm_75", False),
    (6, 12, 2, "sm_90a", False), (32, 40, 16, "sm_90a", True),
    (24, 8, 8, "sm_80", True)])
def test_affine_scan_loads_ahead(tmp_path, K, V, trip, chip, staged):
    """The affine scan kernel (a workgroup per point and block of up to 32
    state columns, the slice of the state in workgroup memory), its sum
    over k in trips of `trip` k. Without asynchronous copies (sm_75) the
    transition rows are loaded a trip ahead into registers, across steps
    too; with them (sm_80 on, f32 with K a multiple of 4) each step's
    transition is copied whole (cp.async) into one of two workgroup
    buffers while the step before computes from the other (`staged`). Each
    step's inputs are loaded a step ahead. 16 k a trip with 16-byte loads
    and 40 columns (a second, ragged block); 8 k a trip at K 24; at K 6 (no
    16-byte loads) 2 k a trip, not staged. Every state of 5 steps at 2
    points against the interpreter; transitions scaled by K^-1/2, as a
    chunk's decays keep the state bounded."""
    if not TANG_OPT.exists():
        pytest.skip("tang-opt not built")
    points, steps = 2, 5
    src = tmp_path / "scan.mlir"
    src.write_text(affine_scan_program(points, steps, K, V))
    kernels = kernel_form(src, "", [f"--tang-attach-target=chip={chip}"])
    # After the slice's first barrier: the loop over steps, then the sum's.
    loops = re.findall(r'"scf.for"\(%\S+, %\S+, (%\S+), %', '"gpu.barrier"'
                       .join(kernels.split('"gpu.barrier"')[1:]))
    assert len(loops) >= 2, "no sum loop in the steps"
    assert f'{loops[1]} = "arith.constant"() <{{value = {trip} : index}}>' \
        in kernels, trip
    copies = kernels.count('"nvgpu.device_async_copy"')
    assert (copies > 0) == staged, copies
    rng = np.random.default_rng(3)
    inputs = [(rng.uniform(-1, 1, (points, steps, K, K)) / np.sqrt(K))
              .astype(np.float32),
              rng.uniform(-1, 1, (points, steps, K, V)).astype(np.float32),
              rng.uniform(-1, 1, (points, K, K)).astype(np.float32),
              rng.uniform(-1, 1, (points, K, V)).astype(np.float32)]
    (ref,) = interpreter_outputs(tmp_path, src, inputs)
    (got,) = KernelFormEmulator(kernels).run("main", inputs)
    check = harness.check_elementwise(
        got.reshape(ref.shape), ref,
        harness.Tolerance("f32", reduction=K * steps, roundings=1),
        "affine scan")
    assert check["ok"], check


@pytest.mark.parametrize("C,target,dtype", [
    (8, "sm_90a", "f32"), (6, "sm_90a", "f32"), (8, "portable", "f32"),
    (70, "sm_90a", "f32"), (8, "sm_90a", "bf16"), (70, "sm_90a", "bf16")])
def test_triangular_solve(tmp_path, C, target, dtype):
    """tang.triangular_solve's kernel, a thread per (point, column)
    substituting in order: unrolled with the column in registers at 8 rows
    (L's rows as 16-byte vectors on CUDA, words on the portable target) and
    at 6 (words: rows not a multiple of 4); at 70 rows, loops reading the
    column back. 3 x 2 points, 40 columns; every element against the
    interpreter. L is random in every entry, the diagonal and above too
    (read, they would change the answer). bf16 computes in f32: one
    rounding a result unrolled; at 70 rows each earlier row is read back
    rounded (up to C roundings on the path)."""
    if not TANG_OPT.exists():
        pytest.skip("tang-opt not built")
    lt = f"tensor<3x2x{C}x{C}x{dtype}>"
    yt = f"tensor<3x2x{C}x40x{dtype}>"
    src = tmp_path / "solve.mlir"
    src.write_text(f"""func.func @main(%L: {lt}, %Y: {yt}) -> {yt} {{
  %X = tang.triangular_solve %L, %Y : {lt}, {yt}
  return %X : {yt}
}}
""")
    options = "" if target == "sm_90a" else "cooperative=0"
    kernels = kernel_form(src, options, [f"--tang-attach-target=chip={target}"])
    assert ('"vector.load"' in kernels) == (
        target == "sm_90a" and C == 8 and dtype == "f32")
    assert ('"scf.for"' in kernels) == (C > 64)
    # bf16 multiply-adds would not appear: every one is on f32.
    assert not re.search(r'"arith.(mulf|addf)".*-> bf16', kernels)
    rng = np.random.default_rng(9)
    store = bf16 if dtype == "bf16" else (lambda x: x.astype(np.float32))
    inputs = [store(rng.uniform(-1, 1, (3, 2, C, C)) / np.sqrt(C)),
              store(rng.uniform(-1, 1, (3, 2, C, 40)))]
    (ref,) = interpreter_outputs(tmp_path, src, inputs)
    (got,) = KernelFormEmulator(kernels).run("main", inputs)
    roundings = C if dtype == "bf16" and C > 64 else 1
    check = harness.check_elementwise(
        got.reshape(ref.shape), ref,
        harness.Tolerance(dtype, reduction=C, roundings=roundings), "solve")
    assert check["ok"], check
