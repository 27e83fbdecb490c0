//===- SplitSoftmaxMma.cpp - split online softmax on tensor cores -*- C++
//-*-===//
//
// The split-softmax partial kernel (SplitSoftmaxKernel.cpp) with the
// score's dot product and the value product on mma.sync m16n8k16
// (SplitSoftmaxMma, Tang/Analysis/AttentionMatchers.h). A block takes a
// group of g <= 8 rows (query heads sharing their keys and values) and a
// run of keys; its warps take tiles of 16 keys in turn. Lane l of a warp
// holds row l / 4 of the group (rows from g on are padding, never stored)
// and, with t = l mod 4, these fragments of a tile:
//
//  * S = Q K^T: an f32 query is split into three parts of the keys' type
//    (q = q1 + q2 + q3 to about 2^-27, each the rounding of what the
//    previous left): q1 in the A operand's rows 0-7, q2 in its rows 8-15
//    (the rows past g would be wasted anyway), q3 in rows 0-7 of a second
//    product into the same accumulators, so that accumulator rows r and r
//    + 8 sum to the f32 query's product (a 16-bit query is exact in one
//    part; 16-bit outputs take two).
//    The dot product's index e is permuted so that a lane's B operands of
//    two k16 steps are 8 consecutive elements of one key, one 16-byte
//    load: k-slot 2t + c of step 2s + h is e = 32s + 8t + 4h + c, k-slot
//    2t + 8 + c is e = 32s + 8t + 4h + 2 + c (A takes the same order).
//    n-slot n of the tile's first n8 tile is key n, of its second key
//    8 + n.
//  * online softmax on S's accumulators: lane l holds keys 2t, 2t + 1, 8 +
//    2t, 9 + 2t of its row; a row's maximum over its 4 lanes by shuffles,
//    the sum kept per lane until the end. The tile's keys join the row's
//    carrier at once (the maximum over them first, one rescaling: the
//    monoid's combine, exponents from 0 when the maximum is -inf).
//  * O += P V: P is S's accumulators in place (the A operand's k-slots are
//    the tile's keys in the order above), split into three parts like the
//    query (two for 16-bit outputs). V's B operand wants two keys' elements of
//    one column per register: a lane loads 16 bytes of each of keys 2t and 2t +
//    1 (and 8
//    + 2t, 9 + 2t) and pairs them by byte permutes (prmt); n-slot n of
//    n8 tile nt is column 64 (nt / 8) + 8n + nt mod 8.
//
// Keys past the run (the last tile's) load the run's first key, their
// scores -inf and their values 0 (a masked key adds nothing, not 0 x inf).
// The warps' carriers then go through the block's combine. The CPU
// emulator of the kernel form (test/Runtime/kernel_emulator.py) runs this
// kernel against the interpreter in test/Runtime/test_kernel_emulator.py.
//
//===----------------------------------------------------------------------===//

#include "BodyEmitter.h"
#include "RowVectors.h"
#include "SplitSoftmaxKernel.h"
#include "Tang/Dialect/Tang/IR/TangMonoids.h"
#include "TensorCoreEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::split_softmax;

namespace {

/// Keys per tile (two n8 tiles of S, one k16 step of P V).
constexpr int64_t kTileKeys = 16;

/// The tensor-core operations the split kernel takes, at one builder.
class Fragments : public TensorCoreEmitterBase {
public:
  Fragments(OpBuilder &b, Location loc, Type elementType)
      : TensorCoreEmitterBase(b, loc, elementType) {}
  using TensorCoreEmitterBase::add;
  using TensorCoreEmitterBase::cst;
  using TensorCoreEmitterBase::div;
  using TensorCoreEmitterBase::mmaSync;
  using TensorCoreEmitterBase::mul;
  using TensorCoreEmitterBase::packPair;
  using TensorCoreEmitterBase::rem;
  using TensorCoreEmitterBase::rowReduce;

  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  /// A loaded 8-element vector of the operand type as 4 i32 words.
  SmallVector<Value> words(Value vec) {
    Value w = vector::BitCastOp::create(
        b, loc, VectorType::get({4}, b.getI32Type()), vec);
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(vector::ExtractOp::create(b, loc, w, ArrayRef<int64_t>{i}));
    return out;
  }
  /// An i32 word as an mma.sync operand register (f16 pairs are
  /// vector<2xf16>).
  Value operand(Value word) {
    if (elementType.isBF16())
      return word;
    Value v = vector::BroadcastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), word);
    return vector::BitCastOp::create(b, loc, VectorType::get({2}, elementType),
                                     v);
  }
  /// The low (or high) 16-bit halves of `lo` and `hi` as one word, lo's
  /// in the low half.
  Value pairHalves(Value lo, Value hi, bool high) {
    return NVVM::PermuteOp::create(
        b, loc, b.getI32Type(), lo, hi,
        arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                     high ? 0x7632 : 0x5410),
        NVVM::PermuteMode::DEFAULT);
  }
  /// `x` rounded to the operand type and what the rounding left, both
  /// f32 (the remainder 0 where rounding is exact, infinities included).
  std::pair<Value, Value> split(Value x) {
    Value hi = arith::ExtFOp::create(
        b, loc, b.getF32Type(),
        arith::TruncFOp::create(b, loc, elementType, x).getResult());
    Value exact =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, hi);
    Value lo = arith::SelectOp::create(b, loc, exact, f32(0),
                                       arith::SubFOp::create(b, loc, x, hi));
    return {hi, lo};
  }
  /// The A operand of one m16n8k16 product from the f32 values of two
  /// n8 tiles' accumulator pairs (keys 2t, 2t + 1 of each): `rows` in
  /// rows 0-7, `upper` (or zeros, when empty) in rows 8-15.
  SmallVector<Value> packTerms(ArrayRef<Value> rows, ArrayRef<Value> upper) {
    Value z = f32(0);
    auto up = [&](size_t i) { return upper.empty() ? z : upper[i]; };
    return {packPair(rows[0], rows[1]), packPair(up(0), up(1)),
            packPair(rows[2], rows[3]), packPair(up(2), up(3))};
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
};

} // namespace

LogicalResult SplitSoftmaxEmitter::emitPartialMma(Value scratch) {
  // A copy: op handles' accessors are not const.
  SplitSoftmaxMma mm = *m.mma;
  Kernel &k = r.k;
  OpBuilder &b = r.b;
  Block &entry = k.func.getBody().front();
  int64_t group = m.group;
  Value buf = startPartial();
  BodyEmitter emitter(r.tensors, &entry);
  emitter.setSizes(k.sizes);
  emitter.setApproximate(approximate);
  Fragments f(b, loc, mm.elementType);
  Type f32 = b.getF32Type();
  // 16-byte loads of a key per lane, 64-column blocks of a value, n8
  // tiles of the output.
  int64_t keyLoads = mm.dqk / 32, valueBlocks = m.dv / 64, outTiles = m.dv / 8;

  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value split = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value groupRow = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value lane = f.rem(tid, 32), warp = f.div(tid, 32);
  Value t = f.rem(lane, 4), g = f.div(lane, 4);
  // The lane's row of the group (clamped: padding rows read row g - 1),
  // and the point of the group's first row, where the shared keys and
  // values are read.
  IRMapping groupPoint;
  Value hk = mapGroup(b, groupRow, groupPoint);
  Value h = m.d > 0 ? op.getIndex(m.d - 1) : Value();
  Value rowValid = f.ult(g, f.cst(group));
  Value rowC = arith::MinUIOp::create(b, loc, g, f.cst(group - 1));
  IRMapping rowPoint = groupPoint, keyPoint = groupPoint;
  if (h) {
    rowPoint.map(h, f.add(f.mul(hk, group), rowC));
    keyPoint.map(h, f.mul(hk, group));
  }
  // Inside the run, the key limit's comparison holds.
  Operation *limitCondition = mapLimitTrue(b, rowPoint);
  FailureOr<std::pair<Value, Value>> keys = emitChunk(b, emitter, keyPoint);
  if (failed(keys))
    return failure();
  auto [n, chunk] = *keys;
  Value start = arith::MulIOp::create(b, loc, split, chunk);
  Value end = arith::MinUIOp::create(
      b, loc, n, arith::AddIOp::create(b, loc, start, chunk));

  // The A operand of S: 4 registers per k16 step, the query scaled by the
  // dot product's constant factors.
  FailureOr<Value> factor = emitConstantFactors(b, emitter, mm.red, mm.factors);
  if (failed(factor))
    return failure();
  Value e = mm.red.getIndex(0);
  // An f32 query's third part (with f32 outputs) in a second product per
  // step, rows 0-7 (qa2).
  // (A 16-bit query times a constant factor has more bits than two
  // parts hold too.)
  bool qThird = !approximate && (mm.q.getType().isF32() || !mm.factors.empty());
  SmallVector<Value> qa, qa2;
  for (int64_t s = 0; s < keyLoads; ++s) {
    SmallVector<Value> hi, lo, lo2;
    for (int64_t i = 0; i < 8; ++i) {
      IRMapping point = rowPoint;
      point.map(e, f.add(f.mul(t, 8), f.cst(32 * s + i)));
      if (failed(emitter.emit(b, mm.q, point)))
        return failure();
      Value x = point.lookup(mm.q.getResult());
      if (x.getType() != f32)
        x = arith::ExtFOp::create(b, loc, f32, x);
      if (*factor)
        x = arith::MulFOp::create(b, loc, x, *factor);
      auto [xh, xr] = f.split(f.select(rowValid, x, f.f32(0)));
      auto [xm, xl] = f.split(xr);
      hi.push_back(xh);
      lo.push_back(xm);
      lo2.push_back(xl);
    }
    // k-slots 2t, 2t + 1 of step 2s + half are e = 32s + 8t + 4 half +
    // {0, 1}; k-slots 2t + 8, 2t + 9 the next two.
    for (int64_t half = 0; half < 2; ++half) {
      auto part = [&](ArrayRef<Value> x) { return x.slice(4 * half, 4); };
      llvm::append_range(qa, f.packTerms(part(hi), part(lo)));
      if (qThird)
        llvm::append_range(qa2, f.packTerms(part(lo2), {}));
    }
  }

  Value negInf = f.f32(-std::numeric_limits<double>::infinity());
  Value zero = f.f32(0);
  Value scoreYield = op.getYield().getValues()[0];
  Value d = op.getIndex(m.d);
  // Two tiles' words in registers where they are few (head dimensions up
  // to 128: 64 words a lane; about 250 registers with the kernel's 190, at
  // most two blocks a multiprocessor, what getSoftmaxSplits gives it).
  int64_t keyWords = 2 * keyLoads * 4, valueWords = 4 * valueBlocks * 4;
  bool prefetch = keyWords + valueWords <= 64;
  auto exp = [&](Value x) -> Value {
    return approximate ? emitNvvmExp(b, loc, x)
                       : math::ExpOp::create(b, loc, x).getResult();
  };
  // Key `j` of a tile: with `checked`, keys from `end` on load the run's
  // first key and are reported invalid.
  auto keyAt = [&](Value j, bool checked) -> std::pair<Value, Value> {
    if (!checked)
      return {j, Value()};
    Value valid = f.ult(j, end);
    return {f.select(valid, j, start), valid};
  };

  // The lane's words of one tile of keys from `kb` (keyWords: 2 n8 tiles x
  // keyLoads 16-byte loads; valueWords: 4 keys x valueBlocks).
  auto loadTile = [&](Value kb, bool checked) {
    SmallVector<Value> words;
    // Keys: lane l's of n8 tile nt is kb + 8 nt + l / 4.
    for (int64_t nt = 0; nt < 2; ++nt) {
      Value j = keyAt(f.add(kb, f.add(g, f.cst(8 * nt))), checked).first;
      IRMapping point = keyPoint;
      point.map(m.j, j);
      for (int64_t s = 0; s < keyLoads; ++s)
        llvm::append_range(
            words, f.words(emitVectorLoad(b, loc, mm.k, e,
                                          f.add(f.mul(t, 8), f.cst(32 * s)), 8,
                                          point, r.tensors)));
    }
    // Values: keys 2t, 2t + 1, 8 + 2t, 9 + 2t, columns 8 (l / 4) on in
    // each 64-column block (a key past the run reads zeros).
    for (int64_t q = 0; q < 4; ++q) {
      Value off = f.add(f.mul(t, 2), f.cst((q / 2) * 8 + q % 2));
      auto [j, valid] = keyAt(f.add(kb, off), checked);
      IRMapping point = keyPoint;
      point.map(m.j, j);
      for (int64_t hb = 0; hb < valueBlocks; ++hb)
        for (Value w : f.words(emitVectorLoad(
                 b, loc, mm.v, d, f.add(f.mul(g, 8), f.cst(64 * hb)), 8, point,
                 r.tensors)))
          words.push_back(valid ? f.select(valid, w,
                                           arith::ConstantIntOp::create(
                                               b, loc, b.getI32Type(), 0))
                                : w);
    }
    return words;
  };

  // One tile of keys from `kb` whose words loadTile loaded: the carriers
  // (the row's maximum, the lane's sum, then the output accumulators, 4 per
  // n8 tile) after it.
  auto computeTile = [&](Value kb, bool checked, ArrayRef<Value> words,
                         ValueRange carriers) -> FailureOr<SmallVector<Value>> {
    SmallVector<ArrayRef<Value>> kw, vw;
    for (int64_t nt = 0; nt < 2; ++nt)
      kw.push_back(words.slice(nt * keyWords / 2, keyWords / 2));
    for (int64_t q = 0; q < 4; ++q)
      vw.push_back(words.slice(keyWords + q * valueWords / 4, valueWords / 4));
    // S: the query's rounded part in rows 0-7, its remainder in 8-15.
    SmallVector<Value> acc(8, zero);
    for (int64_t nt = 0; nt < 2; ++nt)
      for (int64_t step = 0; step < 2 * keyLoads; ++step) {
        int64_t w = 4 * (step / 2) + 2 * (step % 2);
        SmallVector<Value> kOperand{f.operand(kw[nt][w]),
                                    f.operand(kw[nt][w + 1])};
        f.mmaSync(ArrayRef(qa).slice(4 * step, 4), kOperand,
                  MutableArrayRef(acc).slice(4 * nt, 4));
        if (qThird)
          f.mmaSync(ArrayRef(qa2).slice(4 * step, 4), kOperand,
                    MutableArrayRef(acc).slice(4 * nt, 4));
      }
    // The scores: keys kb + 8 nt + 2t + p.
    SmallVector<Value> scores;
    for (int64_t nt = 0; nt < 2; ++nt)
      for (int64_t p = 0; p < 2; ++p) {
        auto [j, valid] =
            keyAt(f.add(kb, f.add(f.mul(t, 2), f.cst(8 * nt + p))), checked);
        IRMapping point = rowPoint;
        point.map(m.j, j);
        point.map(mm.red.getResult(0),
                  arith::AddFOp::create(b, loc, acc[4 * nt + p],
                                        acc[4 * nt + 2 + p]));
        for (Operation *inner : mm.scoreOps)
          if (inner != limitCondition && failed(emitter.emit(b, inner, point)))
            return failure();
        Value s = point.lookupOrDefault(scoreYield);
        if (s.getType() != f32)
          s = arith::ExtFOp::create(b, loc, f32, s);
        scores.push_back(valid ? f.select(valid, s, negInf) : s);
      }
    // The row's carrier joined with the tile's keys.
    Value mx = carriers[0];
    for (Value s : scores)
      mx = arith::MaximumFOp::create(b, loc, mx, s);
    mx = f.rowReduce(mx, /*max=*/true);
    Value safe = buildSoftmaxExponentBase(b, loc, mx);
    Value scale = exp(arith::SubFOp::create(b, loc, carriers[0], safe));
    SmallVector<Value> next{mx,
                            arith::MulFOp::create(b, loc, carriers[1], scale)};
    SmallVector<SmallVector<Value>> terms(3);
    for (Value s : scores) {
      Value p = exp(arith::SubFOp::create(b, loc, s, safe));
      next[1] = arith::AddFOp::create(b, loc, next[1], p);
      auto [ph, pr] = f.split(p);
      auto [pm, pl] = f.split(pr);
      terms[0].push_back(ph);
      terms[1].push_back(pm);
      terms[2].push_back(pl);
    }
    for (Value o : carriers.drop_front(2))
      next.push_back(arith::MulFOp::create(b, loc, o, scale));
    // O += P V: P's first two parts in one product, the third (with f32
    // outputs) in a second one into the same accumulators.
    SmallVector<SmallVector<Value>> pa{f.packTerms(terms[0], terms[1])};
    if (!approximate)
      pa.push_back(f.packTerms(terms[2], {}));
    for (int64_t nt = 0; nt < outTiles; ++nt) {
      int64_t w = 4 * (nt / 8) + (nt % 8) / 2;
      bool high = nt % 2;
      SmallVector<Value> vb{f.operand(f.pairHalves(vw[0][w], vw[1][w], high)),
                            f.operand(f.pairHalves(vw[2][w], vw[3][w], high))};
      for (ArrayRef<Value> a : pa)
        f.mmaSync(a, vb, MutableArrayRef(next).slice(2 + 4 * nt, 4));
    }
    return next;
  };

  // The warp's tiles: from start + 16 warp, 16 kWarps apart; those wholly
  // in the run without checks, then at most one partial tile.
  SmallVector<Value> init{negInf, zero};
  init.append(4 * outTiles, zero);
  Value first = f.add(start, f.mul(warp, kTileKeys));
  int64_t stride = kTileKeys * kWarps;
  Value wholeEnd = arith::SubIOp::create(
      b, loc, arith::MaxUIOp::create(b, loc, end, f.cst(kTileKeys - 1)),
      f.cst(kTileKeys - 1));
  // With prefetch, the loop carries the next tile's words: the loads of
  // tile i + 1 are issued before tile i's products, so a warp keeps two
  // tiles' loads in flight (the last iteration reloads its own tile, and
  // the first is loaded before the loop from key 0 when the warp has no
  // whole tile: in bounds, unused).
  int64_t carried = init.size();
  Value zeroIdx = f.cst(0);
  if (prefetch)
    llvm::append_range(
        init, loadTile(f.select(f.ult(first, wholeEnd), first, zeroIdx),
                       /*checked=*/false));
  auto whole = scf::ForOp::create(b, loc, first, wholeEnd, f.cst(stride), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(whole.getBody());
    Value kb = whole.getInductionVar();
    ValueRange args = whole.getRegionIterArgs();
    SmallVector<Value> words, nextWords;
    if (prefetch) {
      Value nextKb = f.add(kb, f.cst(stride));
      nextWords = loadTile(f.select(f.ult(nextKb, wholeEnd), nextKb, kb),
                           /*checked=*/false);
      words.assign(args.begin() + carried, args.end());
    } else {
      words = loadTile(kb, /*checked=*/false);
    }
    FailureOr<SmallVector<Value>> next =
        computeTile(kb, /*checked=*/false, words, args.take_front(carried));
    if (failed(next))
      return failure();
    llvm::append_range(*next, nextWords);
    scf::YieldOp::create(b, loc, *next);
  }
  Value wholeTiles = f.div(
      f.add(arith::SubIOp::create(
                b, loc, arith::MaxUIOp::create(b, loc, wholeEnd, first), first),
            f.cst(stride - 1)),
      stride);
  Value last = f.add(first, f.mul(wholeTiles, stride));
  ValueRange wholeCarriers = whole.getResults().take_front(carried);
  auto partial = scf::IfOp::create(b, loc, wholeCarriers.getTypes(),
                                   f.ult(last, end), /*withElse=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&partial.getThenRegion().front());
    FailureOr<SmallVector<Value>> next =
        computeTile(last, /*checked=*/true, loadTile(last, /*checked=*/true),
                    wholeCarriers);
    if (failed(next))
      return failure();
    scf::YieldOp::create(b, loc, *next);
    b.setInsertionPointToStart(&partial.getElseRegion().front());
    scf::YieldOp::create(b, loc, wholeCarriers);
  }

  // The row's sum over its lanes; the output's two parts added; the
  // warp's carriers into the workgroup buffer by the lanes of real rows.
  SmallVector<Value> carriers(partial.getResults());
  Value sum = f.rowReduce(carriers[1], /*max=*/false);
  auto store = scf::IfOp::create(b, loc, rowValid, /*withElse=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&store.getThenRegion().front());
    for (int64_t nt = 0; nt < outTiles; ++nt)
      for (int64_t p = 0; p < 2; ++p) {
        Value col = f.add(f.mul(t, 16), f.cst(64 * (nt / 8) + 8 * p + nt % 8));
        Value o = arith::AddFOp::create(b, loc, carriers[2 + 4 * nt + p],
                                        carriers[2 + 4 * nt + 2 + p]);
        Value x[3] = {carriers[0], sum, o};
        for (int64_t c = 0; c < carrierSize; ++c)
          memref::StoreOp::create(b, loc, x[c], buf,
                                  ValueRange{warp, rowC, col, f.cst(c)});
      }
  }
  emitBlockCombine(b, buf, scratch, tid, groupRow, split);
  k.func.walk([](Operation *o) {
    if (isa<arith::AddFOp, arith::MulFOp>(o))
      allowApproximation(o);
  });
  return success();
}
