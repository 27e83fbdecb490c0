"""--tang-traffic-bound's certificates, re-checked independently.

For seeded random projective loop nests (2 to 5 indices, random extents, 1 to
4 reads over random index subsets) and random fast-memory capacities, every
remark of `tang-opt --tang-traffic-bound` is parsed and its certificate
re-checked here in exact arithmetic (Python fractions and big integers),
without GLPK:
- the tile: 1 <= b_j <= L_j, every access's footprint prod_{j in S_a} b_j <= M;
- the dual: s, t >= 0 and sum_{a : j in S_a} s_a + t_j >= 1 for every index;
- weak duality: prod b_j <= M^{sum s} prod L_j^{t_j} (raised to the common
  denominator's power);
- strong duality, in floating point: the dual's objective sum s + sum t
  log_M L_j equals the printed optimum kappa (1e-6), so the bound is the
  LP's best, not merely a valid one;
- the bound: M (ceil(N / F) - 1) with F = (2M)^{sum s} prod L_j^{t_j}.

Run:  TANG_BIN=<build>/bin /usr/bin/python3 -m pytest -q \\
      test/Transforms/test_traffic_bound.py
"""

import json
import math
import os
import pathlib
import random
import re
import subprocess
from fractions import Fraction

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))

REMARK = re.compile(
    r"traffic bound at (\w+) \(M = (\d+) elements of (\d+) bytes\): >= (\d+) "
    r"elements moved \((\d+) bytes\); compulsory (\d+) elements; the largest "
    r"tile that fits runs M\^([0-9.]+) iterations: tile \[([0-9, ]+)\]; dual "
    r"s = \[([0-9/, ]*)\], t = \[([0-9/, ]*)\]; certificate checked")

NAMES = "ijklm"


def random_program(rng):
    """A comprehension with random extents and reads over random index
    subsets (each read of its own tensor); returns (text, extents,
    supports) with the result's support (the parallel indices) last."""
    d = rng.randint(2, 5)
    extents = [rng.choice([1, 3, 7, 16, 100, 512, 4096, 65536])
               for _ in range(d)]
    parallel = rng.randint(1, d - 1)
    supports, args, reads = [], [], []
    for a in range(rng.randint(1, 4)):
        support = sorted(rng.sample(range(d), rng.randint(1, d)))
        supports.append(support)
        shape = "x".join(str(extents[j]) for j in support)
        args.append(f"%t{a}: tensor<{shape}xf32>")
        idx = ", ".join("%" + NAMES[j] for j in support)
        reads.append(f"    %v{a} = tang.read %t{a}[{idx}] : "
                     f"tensor<{shape}xf32>")
    body = "\n".join(reads)
    acc = "%v0"
    for a in range(1, len(supports)):
        body += f"\n    %s{a} = arith.addf {acc}, %v{a} : f32"
        acc = f"%s{a}"
    out = "x".join(str(e) for e in extents[:parallel])
    par = ", ".join("%" + NAMES[j] for j in range(parallel))
    red = ", ".join("%" + NAMES[j] for j in range(parallel, d))
    ext = ", ".join(str(e) for e in extents)
    text = f"""\
func.func @main({", ".join(args)}) -> tensor<{out}xf32> {{
  %y = tang.comprehension ({par}) reduce ({red}) [{ext}] monoid(add) : tensor<{out}xf32> {{
{body}
    tang.yield {acc} : f32
  }}
  return %y : tensor<{out}xf32>
}}
"""
    supports.append(list(range(parallel)))
    return text, extents, supports


def fractions(text):
    return [Fraction(x) for x in text.split(", ")] if text else []


def check(remark, extents, supports):
    (_, m, _, words, _, _, kappa, tile, s, t) = remark.groups()
    m, words, kappa = int(m), int(words), float(kappa)
    tile = [int(b) for b in tile.split(", ")]
    s, t = fractions(s), fractions(t)
    d = len(extents)
    assert len(tile) == d and len(t) == d and len(s) == len(supports)
    for b, e in zip(tile, extents):
        assert 1 <= b <= e
    for support in supports:
        assert math.prod(tile[j] for j in support) <= m
    assert all(x >= 0 for x in s + t)
    for j in range(d):
        cover = t[j] + sum(s[a] for a, sup in enumerate(supports) if j in sup)
        assert cover >= 1, f"index {j} covered {cover}"
    q = math.lcm(*[x.denominator for x in s + t])
    lhs = math.prod(tile) ** q
    rhs = m ** int(q * sum(s)) * math.prod(
        e ** int(q * tj) for e, tj in zip(extents, t))
    assert lhs <= rhs, "weak duality"
    dual = float(sum(s)) + sum(float(tj) * math.log(e) / math.log(m)
                               for e, tj in zip(extents, t))
    assert abs(dual - kappa) < 1e-3 + 1e-6, (dual, kappa)
    # The printed bound (the pass rounds F up by 1e-9 relative).
    log_f = float(sum(s)) * math.log(2 * m) + sum(
        float(tj) * math.log(e) for e, tj in zip(extents, t))
    n = math.prod(extents)
    segments = math.ceil(n / (math.exp(log_f) * (1 + 1e-9)))
    assert words == max(0, m * (segments - 1)), (words, m, segments)


@pytest.mark.parametrize("seed", range(40))
def test_random_certificates(seed, tmp_path):
    rng = random.Random(seed)
    text, extents, supports = random_program(rng)
    program = tmp_path / "p.mlir"
    program.write_text(text)
    levels = ",".join(f"l{i}={rng.choice([64, 4096, 233472, 52428800])}"
                      for i in range(2))
    r = subprocess.run([str(TANG_BIN / "tang-opt"), str(program),
                        f"--tang-traffic-bound=levels={levels}", "-o",
                        os.devnull], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, f"{text}\n{r.stderr}"
    remarks = list(REMARK.finditer(r.stderr))
    assert len(remarks) == 2, r.stderr
    for remark in remarks:
        check(remark, extents, supports)


def test_summary_closed_forms(tmp_path):
    """The floor's inputs: a product's compulsory bytes and operations,
    and the share of a causal mask's iterations (exactly (L + 1) / 2L)."""
    program = tmp_path / "p.mlir"
    program.write_text("""\
func.func @mm(%A: tensor<64x48xf32>, %B: tensor<48x32xf16>) -> tensor<64x32xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [64, 32, 48] monoid(add) : tensor<64x32xf32> {
    %a = tang.read %A[%i, %k] : tensor<64x48xf32>
    %b = tang.read %B[%k, %j] : tensor<48x32xf16>
    %b32 = arith.extf %b : f16 to f32
    %p = arith.mulf %a, %b32 : f32
    tang.yield %p : f32
  }
  return %C : tensor<64x32xf32>
}
func.func @causal(%S: tensor<100x100xf32>) -> tensor<100xf32> {
  %m = tang.comprehension (%i) reduce (%j) [100, 100] monoid(add) : tensor<100xf32> {
    %s = tang.read %S[%i, %j] : tensor<100x100xf32>
    %e = math.exp %s : f32
    %ii = tang.index %i : i32
    %jj = tang.index %j : i32
    %keep = arith.cmpi sle, %jj, %ii : i32
    %zero = arith.constant 0.0 : f32
    %v = arith.select %keep, %e, %zero : f32
    tang.yield %v : f32
  }
  return %m : tensor<100xf32>
}
""")
    summary = tmp_path / "summary.json"
    r = subprocess.run([str(TANG_BIN / "tang-opt"), str(program),
                        f"--tang-traffic-bound=levels=l2=1000000 "
                        f"summary={summary}", "-o", os.devnull],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    mm, causal = __import__("json").loads(summary.read_text())
    assert mm["compulsory_bytes"] == 64 * 48 * 4 + 48 * 32 * 2 + 64 * 32 * 4
    assert mm["arithmetic_ops"] == 2 * 64 * 32 * 48  # the product, the sum
    assert mm["shape_class"] == "matmul_like" and mm["sixteen_bit"]
    assert mm["kept_fraction"] == 1
    assert causal["kept_fraction"] == pytest.approx(101 / 200, abs=1e-12)
    assert causal["arithmetic_ops"] == 2 * 100 * 100  # exp, the sum


def test_floor_report_flags_a_kernel_below_its_floor(tmp_path):
    """bench/floor_report.py exits 1 and names a case measured faster than
    its floor (a bug in the bound or in the constants)."""
    case = tmp_path / "work" / "floortest" / "tiny_matmul"
    case.mkdir(parents=True)
    (case / "program.mlir").write_text(
        (ROOT / "examples" / "matmul.mlir").read_text())
    (case / "meta.json").write_text(
        '{"compile": {"command": "fuse=1"}}')
    device = tmp_path / "device.json"
    device.write_text('{"device": "test", "date": "x", '
                      '"dram_bytes_per_s": 1e9, '
                      '"tensor_bf16_ops_per_s": 1e12, '
                      '"fp32_ops_per_s": 1e9, "launch_s": 1e-6, '
                      '"l2_bytes": 1000000}')
    report = tmp_path / "report.json"

    def floor_run(ms):
        report.write_text('{"cases": [{"case": "tiny_matmul", '
                          f'"status": "ok", "tang": {{"ms": {ms}}}}}]}}')
        return subprocess.run(
            ["/usr/bin/python3", str(ROOT / "bench" / "floor_report.py"),
             "--device", str(device), "--report", f"floortest={report}",
             "--work", str(tmp_path / "work")],
            capture_output=True, text=True, timeout=120,
            env=dict(os.environ, TANG_OPT=str(TANG_BIN / "tang-opt")))
    # 16x24x32 f32: 6656 bytes at 1 GB/s = 6.7 us, 24576 ops at 1e9/s
    # = 24.6 us, plus 1 us: a floor of 25.6 us.
    fast = floor_run(0.010)
    assert fast.returncode == 1, fast.stdout + fast.stderr
    assert "Cases faster than their floor: 1 (tiny_matmul)" in fast.stdout
    slow = floor_run(0.050)
    assert slow.returncode == 0, slow.stdout + slow.stderr
    assert "| floortest | tiny_matmul | 1 | 0.0256 |" in slow.stdout


def test_tile_report_ratios(tmp_path):
    """bench/tile_report.py puts the LP tile's and the heuristic's times
    against the best of every candidate of a product."""
    work = tmp_path / "gemm"
    times = {"matmul_4096": 0.20, "matmul_4096_lp": 0.22,
             "matmul_4096_t128x128x64x2x2x3": 0.25,
             "matmul_4096_t128x256x64x2x4x4": 0.11}
    tiles = {"matmul_4096": [128, 256, 64], "matmul_4096_lp": [128, 128, 64],
             "matmul_4096_t128x128x64x2x2x3": [128, 128, 64],
             "matmul_4096_t128x256x64x2x4x4": [128, 256, 64]}
    for name, tile in tiles.items():
        (work / name).mkdir(parents=True)
        meta = {"schedule_tile": tile}
        if name.endswith("_lp"):
            meta["traffic_tile"] = [340, 340, 340]
        (work / name / "meta.json").write_text(json.dumps(meta))
    report = tmp_path / "gemm.json"
    report.write_text(json.dumps({"cases": [
        {"case": n, "status": "ok", "tang": {"ms": t}}
        for n, t in times.items()]}))
    r = subprocess.run(["/usr/bin/python3", str(ROOT / "bench" /
                                                 "tile_report.py"),
                        str(report), "--work", str(work)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert ("| 4096x4096x4096 | [128, 256, 64] | 0.200 | [340, 340, 340]; "
            "[128, 128, 64] | 0.220 | 128x256x64x2x4x4 | 0.110 | 1.82 | "
            "2.00 |") in r.stdout, r.stdout
    assert "LP tile / best over 1 products: median 2.00" in r.stdout


def test_convolution_closed_forms(tmp_path):
    """Sliding windows: the window read is seen through its single-index
    coordinates (a valid relaxation). 1-d, y[i] = sum_r x[i + r] w[r]: the
    LP's optimum weights y alone with r free (s_y = 1, t_r = 1), segments
    of 2M R iterations, >= M (ceil(N / 2M) - 1) elements moved. 2-d, the
    CNN layer out[k, h, w] = sum_{c, r, s} in[c, h + r, w + s] W[k, c, r,
    s]: in is seen through c; at M below every extent product, the bound
    is that of the contraction of out and W over (k, c, h, w, r, s) with
    in's support {c}."""
    program = tmp_path / "conv.mlir"
    program.write_text("""\
func.func @conv1d(%x: tensor<4103xf32>, %w: tensor<8xf32>) -> tensor<4096xf32> {
  %y = tang.comprehension (%i) reduce (%r) [4096, 8] monoid(add) : tensor<4096xf32> {
    %a = tang.read %x[%i + %r] : tensor<4103xf32>
    %b = tang.read %w[%r] : tensor<8xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %y : tensor<4096xf32>
}
func.func @conv2d(%in: tensor<16x34x34xf32>, %W: tensor<32x16x3x3xf32>) -> tensor<32x32x32xf32> {
  %out = tang.comprehension (%k, %h, %w) reduce (%c, %r, %s) [32, 32, 32, 16, 3, 3] monoid(add) : tensor<32x32x32xf32> {
    %a = tang.read %in[%c, %h + %r, %w + %s] : tensor<16x34x34xf32>
    %b = tang.read %W[%k, %c, %r, %s] : tensor<32x16x3x3xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %out : tensor<32x32x32xf32>
}
""")
    r = subprocess.run([str(TANG_BIN / "tang-opt"), str(program),
                        "--tang-traffic-bound=levels=shared=256", "-o",
                        os.devnull], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    bounds = [l for l in r.stderr.splitlines() if "traffic bound at" in l]
    relaxed = [l for l in r.stderr.splitlines() if "bound relaxed" in l]
    assert len(bounds) == 2 and len(relaxed) == 2, r.stderr
    M, N, R = 64, 4096, 8
    words = M * (math.ceil(N * R / (2 * M * R)) - 1)
    assert f">= {words} elements moved" in bounds[0], bounds[0]
    assert "dual s = [0, 0, 1], t = [0, 1]" in bounds[0], bounds[0]
    assert "(coordinates d1 + d4, d2 + d5)" in relaxed[1], relaxed[1]
    # 2-d: the relaxed LP over supports in {c}, W {k, c, r, s}, out
    # {k, h, w}: maximise the tile exponents with every footprint <= M.
    # Its optimum weights W and out (s = 1 each): F = (2M)^2 iterations
    # per segment, N = 32^3 16 9 iterations.
    iterations = 32 ** 3 * 16 * 9
    words = M * (math.ceil(iterations / (2 * M) ** 2) - 1)
    assert f">= {words} elements moved" in bounds[1], bounds[1]
