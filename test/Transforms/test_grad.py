"""--tang-grad against central finite differences, in float64.

For every example (and a few programs that stress the rules), the gradient
function `@main_grad` made by `tang-opt --tang-grad` is run by the float64
interpreter (tang-run) on seeded random inputs and random output
cotangents dy; for every differentiated argument x_i and a random direction
v, the directional derivative <grad_i, v> must match the central difference
(s(x_i + h v) - s(x_i - h v)) / 2h of s(x) = sum_k <dy_k, f_k(x)> to a
relative error below 1e-6. Each argument gets its own direction, so a wrong
gradient of one argument cannot hide behind another's.

Also: the gradient programs pass the translation-validation check of
--tang-fuse (interpreted before and after fusion, equal), and programs with
no derivative rule are refused with a diagnostic naming the operation.

Run:  TANG_BIN=<build>/bin /usr/bin/python3 -m pytest -q test/Transforms/test_grad.py
"""

import os
import pathlib
import re
import subprocess
import zlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))

# Examples --tang-grad refuses, and the words of its diagnostic.
NOT_DIFFERENTIABLE = {
    "linear_recurrence":
        "reduces under a monoid --tang-grad has no derivative rule",
}

STEP = 1e-5
TOLERANCE = 1e-6


def run(args, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True,
                          text=True, timeout=300, **kwargs)


def interpret(program, entry, inputs, out_dir):
    r = run([TANG_BIN / "tang-run", program, f"--entry={entry}",
             *[f"--input={p}" for p in inputs], f"--output-dir={out_dir}"])
    assert r.returncode == 0, f"tang-run @{entry} failed:\n{r.stderr}"
    outputs = sorted(out_dir.glob("output_*.npy"),
                     key=lambda p: int(p.stem.split("_")[1]))
    return [np.load(p) for p in outputs]


def save_all(arrays, directory, stem):
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, a in enumerate(arrays):
        p = directory / f"{stem}_{i}.npy"
        np.save(p, a)
        paths.append(p)
    return paths


def check_gradients(program, tmp_path, options=""):
    """Runs the finite-difference check of `program`'s @main."""
    grad = tmp_path / "grad.mlir"
    flag = f"--tang-grad={options}" if options else "--tang-grad"
    r = run([TANG_BIN / "tang-opt", program, flag, "-o", grad])
    assert r.returncode == 0, f"--tang-grad failed on {program.name}:\n{r.stderr}"

    # Inputs: the interpreter's seeded random values.
    dump = tmp_path / "inputs"
    r = run([TANG_BIN / "tang-run", program, f"--dump-inputs={dump}",
             f"--output-dir={tmp_path / 'y'}"])
    assert r.returncode == 0, r.stderr
    xs = [np.load(p) for p in sorted(dump.glob("input_*.npy"),
                                     key=lambda p: int(p.stem.split("_")[1]))]
    ys = interpret(program, "main", save_all(xs, tmp_path / "x", "x"),
                   tmp_path / "y")
    rng = np.random.default_rng(zlib.crc32(program.name.encode()))
    floats = [k for k, y in enumerate(ys) if y.dtype.kind == "f"]
    dys = [rng.standard_normal(ys[k].shape) for k in floats]
    wrt = [i for i, x in enumerate(xs) if x.dtype.kind == "f"]

    grads = interpret(grad, "main_grad",
                      save_all(xs, tmp_path / "x", "x")
                      + save_all(dys, tmp_path / "dy", "dy"),
                      tmp_path / "g")
    assert len(grads) == len(wrt), (len(grads), wrt)

    def objective(i, delta, tag):
        moved = list(xs)
        moved[i] = xs[i] + delta
        out = interpret(program, "main",
                        save_all(moved, tmp_path / tag, "x"),
                        tmp_path / f"{tag}_y")
        return sum(float(np.sum(dy * out[k])) for dy, k in zip(dys, floats))

    for g, i in zip(grads, wrt):
        assert g.shape == xs[i].shape, (g.shape, xs[i].shape)
        assert np.all(np.isfinite(g)), f"argument #{i}: non-finite gradient"
        v = rng.standard_normal(xs[i].shape)
        analytic = float(np.sum(g * v))
        numeric = (objective(i, STEP * v, f"p{i}")
                   - objective(i, -STEP * v, f"m{i}")) / (2 * STEP)
        scale = max(abs(analytic), abs(numeric), 1e-12)
        err = abs(analytic - numeric) / scale
        assert err < TOLERANCE, (
            f"{program.name}: gradient of argument #{i}: <grad, v> = "
            f"{analytic!r}, finite difference {numeric!r}, relative error "
            f"{err:.2e} > {TOLERANCE:.0e}")
    return grad


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_gradients_match_finite_differences(example, tmp_path):
    message = NOT_DIFFERENTIABLE.get(example.stem)
    if message:
        r = run([TANG_BIN / "tang-opt", example, "--tang-grad", "-o",
                 os.devnull])
        assert r.returncode != 0, "expected a diagnostic"
        assert message in r.stderr, r.stderr
        assert f"{example.name}:" in r.stderr  # located
        return
    sizes = [line.split(":", 1)[1].split()
             for line in example.read_text().splitlines()
             if line.startswith("// sizes:")]
    if not sizes:
        check_gradients(example, tmp_path)
        return
    # Symbolic sizes: refused as they are, differentiated once specialised
    # at each size the example is run at.
    r = run([TANG_BIN / "tang-opt", example, "--tang-grad", "-o", os.devnull])
    assert r.returncode != 0 and "it has symbolic sizes" in r.stderr, r.stderr
    for n, specs in enumerate(sizes):
        static = tmp_path / f"static{n}.mlir"
        r = run([TANG_BIN / "tang-opt", example,
                 f"--tang-specialize-sizes=sizes={','.join(specs)}", "-o",
                 static])
        assert r.returncode == 0, r.stderr
        assert "index" not in static.read_text().split("->")[0], "not static"
        (tmp_path / f"at{n}").mkdir()
        check_gradients(static, tmp_path / f"at{n}")


RULES = {
    # Sliding windows with strides and a diagonal read: masked, shifted
    # reads in the gradient.
    "strided_window": """\
func.func @main(%x: tensor<11xf32>, %w: tensor<3xf32>) -> tensor<5xf32> {
  %y = tang.comprehension (%i) reduce (%r) [5, 3] monoid(add) : tensor<5xf32> {
    %a = tang.read %x[%i * 2 + %r] : tensor<11xf32>
    %b = tang.read %w[%r] : tensor<3xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %y : tensor<5xf32>
}
""",
    "diagonal_and_broadcast": """\
func.func @main(%A: tensor<6x6xf32>, %b: tensor<6xf32>) -> tensor<6x4xf32> {
  %y = tang.comprehension (%i, %j) [6, 4] : tensor<6x4xf32> {
    %d = tang.read %A[%i, %i] : tensor<6x6xf32>
    %c = tang.read %A[%j + 2, %i] : tensor<6x6xf32>
    %e = tang.read %b[%i] : tensor<6xf32>
    %t = arith.mulf %d, %c : f32
    %u = arith.divf %t, %e : f32
    %v = math.tanh %u : f32
    tang.yield %v : f32
  }
  return %y : tensor<6x4xf32>
}
""",
    "pointwise_rules": """\
func.func @main(%x: tensor<12xf32>, %y: tensor<12xf32>) -> tensor<12xf32> {
  %z = tang.comprehension (%i) [12] : tensor<12xf32> {
    %a = tang.read %x[%i] : tensor<12xf32>
    %b = tang.read %y[%i] : tensor<12xf32>
    %e = math.exp %a : f32
    %s = arith.mulf %b, %b : f32
    %one = arith.constant 1.0 : f32
    %s1 = arith.addf %s, %one : f32
    %l = math.log %s1 : f32
    %q = math.sqrt %s1 : f32
    %r = math.rsqrt %s1 : f32
    %f = math.erf %a : f32
    %m = arith.maximumf %a, %b : f32
    %n = arith.minimumf %a, %b : f32
    %abs = math.absf %b : f32
    %sn = math.sin %a : f32
    %cs = math.cos %b : f32
    %pw = math.powf %s1, %a : f32
    %c0 = arith.constant 0.0 : f32
    %pos = arith.cmpf ogt, %a, %c0 : f32
    %sel = arith.select %pos, %e, %l : f32
    %t1 = arith.addf %sel, %q : f32
    %t2 = arith.subf %t1, %r : f32
    %t3 = arith.mulf %t2, %f : f32
    %t4 = arith.addf %t3, %m : f32
    %t5 = arith.subf %t4, %n : f32
    %t6 = arith.addf %t5, %abs : f32
    %t7 = arith.addf %t6, %sn : f32
    %t8 = arith.mulf %t7, %cs : f32
    %t9 = arith.addf %t8, %pw : f32
    %t10 = arith.negf %t9 : f32
    tang.yield %t10 : f32
  }
  return %z : tensor<12xf32>
}
""",
    # A head's columns of a concatenated projection, a reshape, a read of
    # part of a tensor, and a sum over two adjacent indices: gradients over
    # the reads' own indices, gathered through the inverse maps.
    "heads_reshape_and_parts": """\
func.func @main(%qkv: tensor<6x24xf32>, %w: tensor<4x4xf32>, %o: tensor<6x2x4xf32>, %x: tensor<2x3x8xf32>) -> (tensor<6x2x4xf32>, tensor<6x8xf32>, tensor<8x5xf32>) {
  %y = tang.comprehension (%l, %h, %d) reduce (%e) [6, 2, 4, 4] monoid(add) : tensor<6x2x4xf32> {
    %q = tang.read %qkv[%l, %h * 4 + %e] : tensor<6x24xf32>
    %k = tang.read %qkv[%l, %h * 4 + %e + 8] : tensor<6x24xf32>
    %v = tang.read %w[%e, %d] : tensor<4x4xf32>
    %p = arith.mulf %q, %k : f32
    %pv = arith.mulf %p, %v : f32
    tang.yield %pv : f32
  }
  %z = tang.comprehension (%l, %c) [6, 8] : tensor<6x8xf32> {
    %v = tang.read %o[%l, %c floordiv 4, %c mod 4] : tensor<6x2x4xf32>
    %u = tang.read %qkv[%l, %c + 16] : tensor<6x24xf32>
    %t = math.tanh %v : f32
    %tu = arith.mulf %t, %u : f32
    tang.yield %tu : f32
  }
  %g = tang.comprehension (%i, %j) reduce (%b, %s) [8, 5, 2, 3] monoid(add) : tensor<8x5xf32> {
    %a = tang.read %x[%b, %s, %i] : tensor<2x3x8xf32>
    %c = tang.read %x[%b, %s, %j + 2] : tensor<2x3x8xf32>
    %p = arith.mulf %a, %c : f32
    tang.yield %p : f32
  }
  return %y, %z, %g : tensor<6x2x4xf32>, tensor<6x8xf32>, tensor<8x5xf32>
}
""",
    # Padded reads: a "same" 2-D convolution (zero padding on both sides),
    # a max-pool whose padding is -inf, a strided window past the end, a
    # padded read of a transposed view: coordinates outside the tensor
    # contribute nothing to its gradient.
    "padded_windows": """\
func.func @main(%x: tensor<5x6xf32>, %f: tensor<3x3xf32>, %v: tensor<7xf32>) -> (tensor<5x6xf32>, tensor<5x6xf32>, tensor<4xf32>) {
  %y = tang.comprehension (%i, %j) reduce (%r, %s) [5, 6, 3, 3] monoid(add) : tensor<5x6xf32> {
    %a = tang.read %x[%i + %r - 1, %j + %s - 1] fill(0.0) : tensor<5x6xf32>
    %b = tang.read %f[%r, %s] : tensor<3x3xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  %xt = tang.view %x by affine_map<(d0, d1) -> (d1, d0)> : tensor<5x6xf32> to tensor<6x5xf32>
  %m = tang.comprehension (%i, %j) reduce (%k) [5, 6, 3] monoid(max) : tensor<5x6xf32> {
    %a = tang.read %xt[%j, %i + %k - 1] fill(0xFF800000 : f32) : tensor<6x5xf32>
    tang.yield %a : f32
  }
  %w = tang.comprehension (%i) reduce (%k) [4, 3] monoid(add) : tensor<4xf32> {
    %a = tang.read %v[%i * 2 + %k] fill(0.5) : tensor<7xf32>
    %s = arith.mulf %a, %a : f32
    tang.yield %s : f32
  }
  return %y, %m, %w : tensor<5x6xf32>, tensor<5x6xf32>, tensor<4xf32>
}
""",
    # Gathers: their gradients are scatter-adds. A cross-entropy whose
    # integer targets (wrapped into range: the random inputs are in
    # [-8, 8]) pick a logit inside a sum (trap); a shifted lookup whose
    # out-of-range rows read zero (zero: dropped); a lookup inside a nested
    # sum with clamped rows (the gradient goes to the clamped row).
    "gathers": """\
func.func @main(%logits: tensor<6x5xf32>, %target: tensor<6xi32>, %E: tensor<7x4xf32>, %tok: tensor<3x2xi32>) -> (tensor<f32>, tensor<3x2x4xf32>, tensor<3x4xf32>) {
  %m = tang.comprehension (%n) reduce (%c) [6, 5] monoid(add) : tensor<6xf32> {
    %v = tang.read %logits[%n, %c] : tensor<6x5xf32>
    %e = math.exp %v : f32
    tang.yield %e : f32
  }
  %loss = tang.comprehension reduce (%n) [6] monoid(add) : tensor<f32> {
    %t = tang.read %target[%n] : tensor<6xi32>
    %c8 = arith.constant 8 : i32
    %c5 = arith.constant 5 : i32
    %s = arith.addi %t, %c8 : i32
    %w = arith.remsi %s, %c5 : i32
    %col = arith.index_cast %w : i32 to index
    %z = tang.gather %logits[%n, symbol(%col)] : tensor<6x5xf32>
    %l = tang.read %m[%n] : tensor<6xf32>
    %lse = math.log %l : f32
    %nll = arith.subf %lse, %z : f32
    tang.yield %nll : f32
  }
  %y = tang.comprehension (%b, %k, %d) [3, 2, 4] : tensor<3x2x4xf32> {
    %t = tang.read %tok[%b, %k] : tensor<3x2xi32>
    %row = arith.index_cast %t : i32 to index
    %e = tang.gather %E[symbol(%row) - 1, %d] zero : tensor<7x4xf32>
    %sq = arith.mulf %e, %e : f32
    tang.yield %sq : f32
  }
  %r = tang.comprehension (%b, %d) [3, 4] : tensor<3x4xf32> {
    %t = tang.read %tok[%b, 0] : tensor<3x2xi32>
    %row = arith.index_cast %t : i32 to index
    %e = tang.gather %E[symbol(%row), %d] clamp : tensor<7x4xf32>
    %ss = tang.comprehension reduce (%j) [4] monoid(add) : f32 {
      %t2 = tang.read %tok[%b, 1] : tensor<3x2xi32>
      %row2 = arith.index_cast %t2 : i32 to index
      %g = tang.gather %E[symbol(%row2), %j] clamp : tensor<7x4xf32>
      %g2 = arith.mulf %g, %g : f32
      tang.yield %g2 : f32
    }
    %one = arith.constant 1.0 : f32
    %s1 = arith.addf %ss, %one : f32
    %q = math.rsqrt %s1 : f32
    %o = arith.mulf %e, %q : f32
    tang.yield %o : f32
  }
  return %loss, %y, %r : tensor<f32>, tensor<3x2x4xf32>, tensor<3x4xf32>
}
""",
    # Scans under add (a reverse scan), mul and max (the general rule: a
    # reverse scan of affine maps), along the last index with a parallel one.
    "scans": """\
func.func @main(%x: tensor<3x17xf32>, %y: tensor<3x17xf32>)
    -> (tensor<3x17xf32>, tensor<3x17xf32>, tensor<3x17xf32>) {
  %s = tang.scan (%b) along (%t) [3, 17] monoid(add) : tensor<3x17xf32> {
    %a = tang.read %x[%b, %t] : tensor<3x17xf32>
    %c = tang.read %y[%b, %t] : tensor<3x17xf32>
    %p = arith.mulf %a, %c : f32
    tang.yield %p : f32
  }
  %m = tang.scan (%b) along (%t) [3, 17] monoid(mul) : tensor<3x17xf32> {
    %a = tang.read %x[%b, %t] : tensor<3x17xf32>
    %e = math.exp %a : f32
    tang.yield %e : f32
  }
  %x2 = tang.scan (%b) along (%t) [3, 17] monoid(max) : tensor<3x17xf32> {
    %a = tang.read %y[%b, %t] : tensor<3x17xf32>
    %c = tang.read %x[%b, %t] : tensor<3x17xf32>
    %p = arith.addf %a, %c : f32
    tang.yield %p : f32
  }
  return %s, %m, %x2 : tensor<3x17xf32>, tensor<3x17xf32>, tensor<3x17xf32>
}
""",
    # A scatter-add with colliding rows (the base and the values get
    # cotangents; rows r*r mod 6 of the seeded inputs collide), and an
    # insert at a row read from data whose value gathers from the base
    # (the overwritten row gets no cotangent through the insert).
    "scatters": """\
func.func @main(%base: tensor<6x4xf32>, %src: tensor<9x4xf32>,
                %rows: tensor<9xi32>, %at: tensor<i32>, %new: tensor<4xf32>)
    -> (tensor<6x4xf32>, tensor<6x4xf32>) {
  %sum = tang.scatter (%i, %d) [9, 4] into %base monoid(add) deterministic : tensor<6x4xf32> {
    %r = tang.read %rows[%i] : tensor<9xi32>
    %c6 = arith.constant 6 : i32
    %r2 = arith.muli %r, %r : i32
    %rm = arith.remsi %r2, %c6 : i32
    %row = arith.index_cast %rm : i32 to index
    %v = tang.read %src[%i, %d] : tensor<9x4xf32>
    %t = math.tanh %v : f32
    tang.put %t at [symbol(%row), %d] drop : f32
  }
  %ins = tang.scatter (%d) [4] into %sum : tensor<6x4xf32> {
    %p = tang.read %at[] : tensor<i32>
    %c6 = arith.constant 6 : i32
    %p2 = arith.muli %p, %p : i32
    %pm = arith.remsi %p2, %c6 : i32
    %row = arith.index_cast %pm : i32 to index
    %v = tang.read %new[%d] : tensor<4xf32>
    %b = tang.gather %base[symbol(%row), %d] zero : tensor<6x4xf32>
    %w = arith.mulf %v, %b : f32
    tang.put %w at [symbol(%row), %d] drop : f32
  }
  return %sum, %ins : tensor<6x4xf32>, tensor<6x4xf32>
}
""",
    "max_min_reductions": """\
func.func @main(%x: tensor<4x9xf32>) -> (tensor<4xf32>, tensor<9xf32>) {
  %m = tang.comprehension (%i) reduce (%j) [4, 9] monoid(max) : tensor<4xf32> {
    %a = tang.read %x[%i, %j] : tensor<4x9xf32>
    %s = arith.mulf %a, %a : f32
    tang.yield %s : f32
  }
  %n = tang.comprehension (%j) reduce (%i) [9, 4] monoid(min) : tensor<9xf32> {
    %a = tang.read %x[%i, %j] : tensor<4x9xf32>
    tang.yield %a : f32
  }
  return %m, %n : tensor<4xf32>, tensor<9xf32>
}
""",
}


@pytest.mark.parametrize("name", sorted(RULES))
def test_rule_gradients_match_finite_differences(name, tmp_path):
    program = tmp_path / f"{name}.mlir"
    program.write_text(RULES[name])
    check_gradients(program, tmp_path)


@pytest.mark.parametrize("policy", ["auto", "save", "recompute"])
@pytest.mark.parametrize("example", ["attention", "causal_attention",
                                     "softmax", "rmsnorm", "layernorm"])
def test_fused_program_gradients_match_finite_differences(example, policy,
                                                          tmp_path):
    """After --tang-fuse --tang-online-softmax: nested reductions (hoisted
    to saved tensors), softmax_norm and online_softmax (the probabilities
    recomputed from the saved running max and sum)."""
    fused = tmp_path / f"{example}_fused.mlir"
    r = run([TANG_BIN / "tang-opt", ROOT / "examples" / f"{example}.mlir",
             "--tang-fuse", "--tang-online-softmax", "-o", fused])
    assert r.returncode == 0, r.stderr
    check_gradients(fused, tmp_path, f"policy={policy}")


def test_attention_gradient_holds_no_score_matrix(tmp_path):
    """The gradient of fused attention (online_softmax) recomputes the
    probabilities from the saved running max and sum: no tensor of the
    gradient program has two sequence-length dimensions."""
    fused = tmp_path / "attention_fused.mlir"
    r = run([TANG_BIN / "tang-opt", ROOT / "examples" / "attention.mlir",
             "--tang-fuse", "--tang-online-softmax", "-o", fused])
    assert r.returncode == 0, r.stderr
    grad = tmp_path / "grad.mlir"
    r = run([TANG_BIN / "tang-opt", fused, "--tang-grad", "-o", grad])
    assert r.returncode == 0, r.stderr
    text = grad.read_text()
    body = text[text.index("@main_grad"):]
    length = 16  # examples/attention.mlir: Q, K, V are 2x4x16x8
    shapes = [[int(d) for d in t.split("x")[:-1]]
              for t in re.findall(r"tensor<([0-9x]+x?f32)>", body)]
    assert shapes, "no tensors in the gradient program"
    square = [s for s in shapes if s.count(length) >= 2]
    assert not square, f"L x L tensors in the gradient: {square}"
    # The running max and sum, saved per row ([B, H, L]: the scores do not
    # use the output's column index).
    assert re.search(r"monoid\(softmax_norm\) attributes \{tang.saved\} : "
                     r"tensor<2x4x16xf32>, tensor<2x4x16xf32>", body), \
        "the running max/sum are not saved per row (and marked saved)"


def test_gradient_programs_pass_fusion_validation(tmp_path):
    """A gradient program is a tang program: fusing it keeps its values."""
    for example in ["rmsnorm", "softmax", "matmul_bias_gelu"]:
        grad = tmp_path / f"{example}_grad.mlir"
        r = run([TANG_BIN / "tang-opt", ROOT / "examples" / f"{example}.mlir",
                 "--tang-grad", "-o", grad])
        assert r.returncode == 0, r.stderr
        before = interpret(grad, "main_grad", [], tmp_path / f"{example}_b")
        fused = tmp_path / f"{example}_fused.mlir"
        r = run([TANG_BIN / "tang-opt", grad, "--tang-fuse", "-o", fused])
        assert r.returncode == 0, r.stderr
        after = interpret(fused, "main_grad", [], tmp_path / f"{example}_a")
        for b, a in zip(before, after):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_user_monoid_is_a_diagnostic(tmp_path):
    program = tmp_path / "welford.mlir"
    program.write_text("""\
tang.monoid @sum2 : [f32] identity [0.0 : f32] commutative {
^bb0(%a: f32, %b: f32):
  %s = arith.addf %a, %b : f32
  tang.yield %s : f32
}
func.func @main(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %y = tang.comprehension (%i) reduce (%j) [4, 8] monoid(@sum2) : tensor<4xf32> {
    %a = tang.read %x[%i, %j] : tensor<4x8xf32>
    tang.yield %a : f32
  }
  return %y : tensor<4xf32>
}
""")
    r = run([TANG_BIN / "tang-opt", program, "--tang-grad", "-o", os.devnull])
    assert r.returncode != 0
    assert "welford.mlir:7:" in r.stderr, r.stderr
    assert "no derivative rule for (@sum2)" in r.stderr, r.stderr


def test_no_rule_is_a_diagnostic(tmp_path):
    program = tmp_path / "floor.mlir"
    program.write_text("""\
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = tang.comprehension (%i) [8] : tensor<8xf32> {
    %a = tang.read %x[%i] : tensor<8xf32>
    %n = arith.fptosi %a : f32 to i32
    %f = arith.sitofp %n : i32 to f32
    tang.yield %f : f32
  }
  return %y : tensor<8xf32>
}
""")
    r = run([TANG_BIN / "tang-opt", program, "--tang-grad", "-o", os.devnull])
    assert r.returncode != 0
    assert "floor.mlir:5:" in r.stderr, r.stderr  # the conversion back
    assert "'arith.sitofp' op converts an integer on a differentiated path" \
        in r.stderr, r.stderr


SPLIT_EXAMPLES = ["attention", "causal_attention", "rmsnorm", "layernorm",
                  "softmax", "matmul_bias_gelu", "transformer_block"]


@pytest.mark.parametrize("example", SPLIT_EXAMPLES)
def test_split_gradient_equals_the_gradient(example, tmp_path):
    """split=1: @main_fwd's results are @main's, and @main_bwd on @main_fwd's
    results and residuals gives @main_grad's gradients (the same operations,
    so equal to rounding)."""
    program = ROOT / "examples" / f"{example}.mlir"
    out = tmp_path / "split.mlir"
    r = run([TANG_BIN / "tang-opt", program, "--tang-grad=split=1", "-o", out])
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "func.func @main_fwd(" in text and "func.func @main_bwd(" in text
    dump = tmp_path / "inputs"
    r = run([TANG_BIN / "tang-run", program, f"--dump-inputs={dump}",
             f"--output-dir={tmp_path / 'y'}"])
    assert r.returncode == 0, r.stderr
    xs = sorted(dump.glob("input_*.npy"),
                key=lambda p: int(p.stem.split("_")[1]))
    ys = interpret(program, "main", xs, tmp_path / "y")
    rng = np.random.default_rng(zlib.crc32(example.encode()))
    dys = save_all([rng.uniform(-1, 1, y.shape) for y in ys], tmp_path / "dy",
                   "dy")
    grads = interpret(out, "main_grad", xs + dys, tmp_path / "g")
    forward = interpret(out, "main_fwd", xs, tmp_path / "f")
    assert len(forward) >= len(ys)
    for y, f in zip(ys, forward):
        np.testing.assert_allclose(f, y, rtol=1e-12, atol=1e-12)
    saved = save_all(forward, tmp_path / "saved", "s")
    split = interpret(out, "main_bwd", xs + saved + dys, tmp_path / "b")
    assert len(split) == len(grads)
    for g, s in zip(grads, split):
        assert np.all(np.isfinite(s))
        np.testing.assert_allclose(s, g, rtol=1e-12, atol=1e-12)
