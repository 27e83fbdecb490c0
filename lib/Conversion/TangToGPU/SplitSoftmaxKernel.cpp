//===- SplitSoftmaxKernel.cpp - online softmax split over keys --*- C++ -*-===//
//
// A reduction under the online-softmax monoid whose value is a read
// contiguous in the value column and whose score does not depend on it,
//
//   O[.., d] = online_softmax_j (s(.., j), v(.., j, d)),
//
// (Tang/Analysis/AttentionMatchers.h, matchSplitSoftmax) with few rows and
// many keys -- decode attention: one query per head, a context of
// thousands -- runs as flash-decoding, in two kernels:
//
//  * the keys of each row are split among `splits` blocks of 4 warps
//    (grid: splits x row groups). A block takes a group of rows that read
//    the same keys and values (SplitSoftmaxMatch::group: the query heads of
//    one key/value head), each key and value vector loaded once for them.
//    A key's value columns go to a set of as few lanes as 16-byte vectors
//    allow (a 128-column bf16 value: 16 lanes of 8 columns, so a warp
//    takes two keys at once); the block's key sets take its run's keys in
//    turn, 4 each per step, their loads in flight together. A dot product
//    in the score runs on the key's lanes (vectors of up to 8, shuffles
//    summing). Each lane holds, per row, the maximum, the sum and its
//    value columns; a step's keys join them at once (the maximum over
//    them first, then one rescaling: the monoid's combine), the run's last
//    few a key at a time (its accumulate). The sets' carriers are combined
//    by shuffles, the warps' through workgroup memory, and the block's per
//    row and column written to a scratch buffer [rows, splits, columns,
//    carrier];
//  * a thread per (row, column) combines the carriers of the splits that
//    had keys, in split order, and writes the finalised value. (Keys are
//    interleaved among a block's key sets: the monoid must be commutative,
//    as online_softmax is; rounding differs from the interpreter's order.)
//
// Both combine with the monoid's own code (the builtin online_softmax's:
// the kernel keeps one maximum and sum per row): the partial states are
// combined by the same monoid, so masked keys, empty splits and -inf
// scores mean what they mean in the interpreter (a +inf score gives NaN,
// as the monoid's combine does, where the interpreter's key-by-key
// accumulate can give a number). Symbolic key extents are read from the
// sizes buffer: one launch (and one CUDA graph) serves every context
// length, blocks past the keys doing nothing.
//
//===----------------------------------------------------------------------===//

#include "SplitSoftmaxKernel.h"
#include "BodyEmitter.h"
#include "KernelForm.h"
#include "RowVectors.h"
#include "Tang/Analysis/KernelMatchers.h"
#include "Tang/Dialect/Tang/IR/TangMonoids.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::split_softmax;

namespace {

/// The operations of `body` (in order) whose values depend on `index`,
/// directly or through values their nested regions use.
llvm::SetVector<Operation *> getDependentOps(Block &body, Value index) {
  llvm::DenseSet<Value> dependent{index};
  llvm::SetVector<Operation *> ops;
  for (Operation &op : body.without_terminator()) {
    bool dep = false;
    op.walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        dep |= dependent.contains(v);
    });
    if (!dep)
      continue;
    ops.insert(&op);
    for (Value r : op.getResults())
      dependent.insert(r);
  }
  return ops;
}

} // namespace

bool SplitSoftmaxEmitter::isWarpReduction(
    ComprehensionOp red, const llvm::SetVector<Operation *> &columnOps) {
  if (red.getNumParallel() != 0 || red.getNumReduced() != 1 ||
      red.isSymbolicExtent(0) || columnOps.contains(red))
    return false;
  FailureOr<MonoidCodegen> mc = MonoidCodegen::get(red);
  return succeeded(mc) && mc->isCommutative() &&
         llvm::all_of(mc->getCarrierTypes(), [](Type t) { return t.isF32(); });
}

LogicalResult
SplitSoftmaxEmitter::emitWarpReduction(OpBuilder &b, BodyEmitter &emitter,
                                       ComprehensionOp red, Value lane,
                                       IRMapping &mapping, RowCache &cache) {
  FailureOr<MonoidCodegen> mc = MonoidCodegen::get(red);
  if (failed(mc))
    return failure();
  int64_t extent = red.getExtent(0), lanes = layout.lanes;
  int64_t v = 8;
  while (v > 1 && extent % (lanes * v) != 0)
    v /= 2;
  FailureOr<SmallVector<Value>> partial;
  if (v > 1) {
    SmallVector<Operation *> ops =
        llvm::map_to_vector(red.getBodyBlock().without_terminator(),
                            [](Operation &o) { return &o; });
    partial =
        emitVectorPartial(b, loc, red, ops, red.getIndex(0), extent, *mc, lane,
                          lanes, v, mapping, r.tensors, emitter, &cache);
  } else {
    partial = emitter.emitStridedReduction(b, red, mapping, *mc, lane,
                                           cst(b, extent), cst(b, lanes));
  }
  if (failed(partial))
    return failure();
  SmallVector<Value> total =
      emitWarpCombine(b, loc, *mc, *partial, lane, static_cast<int32_t>(lanes));
  for (auto [r, v] : llvm::zip(red.getResults(), mc->finalize(b, loc, total)))
    mapping.map(r, v);
  return success();
}

/// A key's value columns go to as few lanes as 16-byte vectors allow (for
/// a 128-column bf16 value, 16 lanes of 8 columns: a warp takes two keys at
/// once), at least one and at most 32; the vectors narrower where the read
/// is not contiguous in runs of that width.
SplitSoftmaxEmitter::LaneLayout SplitSoftmaxEmitter::getLaneLayout() {
  ReadOp read = m.value;
  int64_t bytes =
      std::max<int64_t>(1, read.getType().getIntOrFloatBitWidth() / 8);
  int64_t v = std::max<int64_t>(1, 16 / bytes);
  while (v > 1 && (m.dv % v != 0 || !isVectorizable(read, op.getIndex(m.d), v)))
    v /= 2;
  int64_t lanes = std::min<int64_t>(
      32, static_cast<int64_t>(llvm::PowerOf2Ceil(llvm::divideCeil(m.dv, v))));
  return {lanes, v, static_cast<int64_t>(llvm::divideCeil(m.dv, lanes * v))};
}

LogicalResult SplitSoftmaxEmitter::emitPartial(Value scratch) {
  Kernel &k = r.k;
  OpBuilder &b = r.b;
  Block &entry = k.func.getBody().front();
  int64_t group = m.group;
  Value buf = startPartial();
  // Four blocks a multiprocessor (128 registers a thread): measured on the
  // H200 2-3% faster than the 149 registers the fused multiply-adds take
  // unbounded, and than 128 without them (bench/bench_decode.py).
  k.func->setAttr("nvvm.minctasm", b.getI32IntegerAttr(kBlocksPerSm));

  BodyEmitter emitter(r.tensors, &entry);
  emitter.setSizes(k.sizes);
  emitter.setApproximate(approximate);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value split = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value groupRow = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  // A warp's keys go to sets of layout.lanes lanes: `keyLane` is a lane's
  // index in its set, `taker` the set's among the block's takers.
  layout = getLaneLayout();
  int64_t perWarp = 32 / layout.lanes, takers = kWarps * perWarp;
  Value lane = arith::RemUIOp::create(b, loc, tid, cst(b, 32));
  Value warp = arith::DivUIOp::create(b, loc, tid, cst(b, 32));
  Value keyLane = arith::RemUIOp::create(b, loc, tid, cst(b, layout.lanes));
  Value taker = arith::DivUIOp::create(b, loc, tid, cst(b, layout.lanes));
  // Row c of the group: the group's indices, the one before d (h) at
  // group * k + c.
  IRMapping groupPoint;
  Value hk = mapGroup(b, groupRow, groupPoint);
  Value h = m.d > 0 ? op.getIndex(m.d - 1) : Value();
  SmallVector<IRMapping> rowPoints;
  for (int64_t c = 0; c < group; ++c) {
    IRMapping point = groupPoint;
    if (h)
      point.map(h, group == 1
                       ? hk
                       : arith::AddIOp::create(
                             b, loc,
                             arith::MulIOp::create(b, loc, hk, cst(b, group)),
                             cst(b, c))
                             .getResult());
    rowPoints.push_back(std::move(point));
  }
  // Inside the run, the key limit's comparison holds.
  Operation *limitCondition = nullptr;
  for (IRMapping &point : rowPoints)
    limitCondition = mapLimitTrue(b, point);

  // The block's run of keys: [split * chunk, min(n, (split + 1) * chunk)).
  FailureOr<std::pair<Value, Value>> keys = emitChunk(b, emitter, rowPoints[0]);
  if (failed(keys))
    return failure();
  auto [n, chunk] = *keys;
  Value start = arith::MulIOp::create(b, loc, split, chunk);
  Value end = arith::MinUIOp::create(
      b, loc, n, arith::AddIOp::create(b, loc, start, chunk));

  Block &body = op.getBodyBlock();
  Value d = op.getIndex(m.d);
  llvm::SetVector<Operation *> columnOps = getDependentOps(body, d);
  SmallVector<Operation *> rowOps;
  for (Operation &inner : body.without_terminator())
    if (!columnOps.contains(&inner) && &inner != limitCondition)
      rowOps.push_back(&inner);
  Value scoreYield = op.getYield().getValues()[0];
  Value valueYield = op.getYield().getValues()[1];

  // Key lane l's value columns: runs of `v` from l * v, lanes x v apart
  // (column 0 stands in past the last, and nothing is stored for it).
  int64_t v = layout.vector, runs = layout.runs;
  int64_t perLane = runs * v;
  SmallVector<Value> runStart, runOk;
  for (int64_t t = 0; t < runs; ++t) {
    Value c = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, keyLane, cst(b, v)),
        cst(b, layout.lanes * v * t));
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c,
                                     cst(b, m.dv));
    runOk.push_back(ok);
    runStart.push_back(arith::SelectOp::create(b, loc, ok, c, cst(b, 0)));
  }

  // Each row's carrier: the maximum and the sum (the same for all of its
  // columns: they see the same scores) and a value per column.
  SmallVector<Value> init;
  SmallVector<Value> identity = monoid.identity(b, loc);
  for (int64_t c = 0; c < group; ++c) {
    init.append({identity[0], identity[1]});
    init.append(perLane, identity[2]);
  }
  int64_t rowCarrier = 2 + perLane;
  // The vectors loaded for a key are shared by the rows of the group.
  llvm::SmallPtrSet<Operation *, 4> sharedReads;
  if (group > 1)
    body.walk([&](ReadOp read) {
      if (isSharedByGroup(read, h, group))
        sharedReads.insert(read);
    });
  // Key j's score and value columns for each row of the group.
  auto emitKey = [&](OpBuilder &kb, Value j, RowCache &cache,
                     SmallVector<Value> &scores,
                     SmallVector<SmallVector<Value>> &values) -> LogicalResult {
    for (int64_t c = 0; c < group; ++c) {
      IRMapping mapping = rowPoints[c];
      mapping.map(m.j, j);
      for (Operation *inner : rowOps) {
        auto red = dyn_cast<ComprehensionOp>(inner);
        LogicalResult done =
            red && isWarpReduction(red, columnOps)
                ? emitWarpReduction(kb, emitter, red, keyLane, mapping, cache)
                : emitter.emit(kb, inner, mapping);
        if (failed(done))
          return failure();
      }
      scores.push_back(mapping.lookupOrDefault(scoreYield));
      SmallVector<Value> vs;
      for (int64_t t = 0; t < runs; ++t)
        if (failed(emitUnrolled(
                kb, loc, columnOps.getArrayRef(), d, runStart[t], v, mapping,
                r.tensors, emitter,
                [&](OpBuilder &, int64_t) {
                  vs.push_back(mapping.lookupOrDefault(valueYield));
                },
                &cache, t)))
          return failure();
      values.push_back(std::move(vs));
    }
    return success();
  };
  auto newCache = [&] {
    RowCache cache;
    if (group > 1) {
      cache.sharedIndex = h;
      cache.sharedReads = sharedReads;
    }
    return cache;
  };

  // Whole steps: kUnroll keys a key set, every one inside the run, their
  // loads in flight together; each row's carrier combined with the
  // step's keys at once (the maximum over them first, one rescaling):
  // (m, l, acc) . (s_u, 1, v_u)... = (m', l e^(m - m') + sum_u e^(s_u - m'),
  // acc e^(m - m') + sum_u e^(s_u - m') v_u), m' = max(m, s_u...), the
  // monoid's combine (exponents taken from 0 when m' = -inf).
  // The loops run alike on a warp's lanes (their shuffles take every lane):
  // a step's keys for key set s of the warp are iv + s + u x takers.
  Value first = arith::AddIOp::create(
      b, loc, start, arith::MulIOp::create(b, loc, warp, cst(b, perWarp)));
  Value set = arith::RemUIOp::create(b, loc, taker, cst(b, perWarp));
  int64_t step = takers * kUnroll;
  Value lastOffset = cst(b, (kUnroll - 1) * takers + perWarp - 1);
  Value wholeEnd = arith::SubIOp::create(
      b, loc, arith::MaxUIOp::create(b, loc, end, lastOffset), lastOffset);
  auto whole = scf::ForOp::create(b, loc, first, wholeEnd, cst(b, step), init);
  {
    OpBuilder lb = OpBuilder::atBlockBegin(whole.getBody());
    Value iv = whole.getInductionVar();
    SmallVector<Value> carriers(whole.getRegionIterArgs());
    RowCache cache = newCache();
    SmallVector<SmallVector<Value>> scores(kUnroll);
    SmallVector<SmallVector<SmallVector<Value>>> values(kUnroll);
    for (int64_t u = 0; u < kUnroll; ++u) {
      Value j = arith::AddIOp::create(lb, loc,
                                      arith::AddIOp::create(lb, loc, iv, set),
                                      cst(lb, u * takers));
      if (failed(emitKey(lb, j, cache, scores[u], values[u])))
        return failure();
    }
    auto exp = [&](Value x, Value from) -> Value {
      Value d = arith::SubFOp::create(lb, loc, x, from);
      return approximate ? emitNvvmExp(lb, loc, d)
                         : math::ExpOp::create(lb, loc, d).getResult();
    };
    for (int64_t c = 0; c < group; ++c) {
      MutableArrayRef<Value> row =
          MutableArrayRef(carriers).slice(c * rowCarrier, rowCarrier);
      Value mx = row[0];
      for (int64_t u = 0; u < kUnroll; ++u)
        mx = arith::MaximumFOp::create(lb, loc, mx, scores[u][c]);
      Value safe = buildSoftmaxExponentBase(lb, loc, mx);
      Value scale = exp(row[0], safe);
      SmallVector<Value> weights;
      for (int64_t u = 0; u < kUnroll; ++u)
        weights.push_back(exp(scores[u][c], safe));
      row[0] = mx;
      row[1] = arith::MulFOp::create(lb, loc, row[1], scale);
      for (Value w : weights)
        row[1] = arith::AddFOp::create(lb, loc, row[1], w);
      for (int64_t p = 0; p < perLane; ++p) {
        Value acc = arith::MulFOp::create(lb, loc, row[2 + p], scale);
        for (int64_t u = 0; u < kUnroll; ++u)
          acc = math::FmaOp::create(lb, loc, weights[u], values[u][c][p], acc);
        row[2 + p] = acc;
      }
    }
    scf::YieldOp::create(lb, loc, carriers);
  }
  // The rest of the run (fewer than kUnroll keys a key set), a key a set
  // at a time by the monoid's accumulate: one maximum and sum per row for every
  // column (the code of the first column's; the others' duplicates fold
  // away).
  Value wholeSteps = arith::DivUIOp::create(
      b, loc,
      arith::AddIOp::create(
          b, loc,
          arith::SubIOp::create(
              b, loc, arith::MaxUIOp::create(b, loc, wholeEnd, first), first),
          cst(b, step - 1)),
      cst(b, step));
  Value restStart = arith::AddIOp::create(
      b, loc, first, arith::MulIOp::create(b, loc, wholeSteps, cst(b, step)));
  auto loop = scf::ForOp::create(b, loc, restStart, end, cst(b, takers),
                                 whole.getResults());
  {
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    SmallVector<Value> carriers(loop.getRegionIterArgs());
    RowCache cache = newCache();
    SmallVector<Value> scores;
    SmallVector<SmallVector<Value>> values;
    // A set past the end takes the warp's first key, and keeps its
    // carriers.
    Value iv = loop.getInductionVar();
    Value j = arith::AddIOp::create(lb, loc, iv, set);
    Value valid =
        arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::ult, j, end);
    j = arith::SelectOp::create(lb, loc, valid, j, iv);
    if (failed(emitKey(lb, j, cache, scores, values)))
      return failure();
    for (int64_t c = 0; c < group; ++c) {
      MutableArrayRef<Value> row =
          MutableArrayRef(carriers).slice(c * rowCarrier, rowCarrier);
      SmallVector<Value> next(rowCarrier);
      for (int64_t p = 0; p < perLane; ++p) {
        SmallVector<Value> col =
            monoid.accumulate(lb, loc, ValueRange{row[0], row[1], row[2 + p]},
                              ValueRange{scores[c], values[c][p]});
        if (p == 0) {
          next[0] = col[0];
          next[1] = col[1];
        }
        next[2 + p] = col[2];
      }
      for (int64_t e = 0; e < rowCarrier; ++e)
        row[e] = arith::SelectOp::create(lb, loc, valid, next[e], row[e]);
    }
    scf::YieldOp::create(lb, loc, carriers);
  }

  // The carriers of a warp's key sets combined by xor shuffles (the
  // maximum and sum shared by a row's columns)...
  SmallVector<Value> carriers(loop.getResults());
  for (int64_t off = layout.lanes; off < 32; off *= 2) {
    SmallVector<Value> other = llvm::map_to_vector(carriers, [&](Value x) {
      return gpu::ShuffleOp::create(b, loc, x, static_cast<int32_t>(off), 32,
                                    gpu::ShuffleMode::XOR)
          .getShuffleResult();
    });
    for (int64_t c = 0; c < group; ++c) {
      int64_t at = c * rowCarrier;
      SmallVector<Value> next(rowCarrier);
      for (int64_t p = 0; p < perLane; ++p) {
        SmallVector<Value> col = monoid.combine(
            b, loc,
            ValueRange{carriers[at], carriers[at + 1], carriers[at + 2 + p]},
            ValueRange{other[at], other[at + 1], other[at + 2 + p]});
        next[0] = col[0];
        next[1] = col[1];
        next[2 + p] = col[2];
      }
      llvm::copy(next, carriers.begin() + at);
    }
  }
  // ...then the warps' through workgroup memory (a warp's first key set
  // stores)...
  Value firstSet = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         lane, cst(b, layout.lanes));
  for (int64_t t = 0; t < runs; ++t) {
    auto store = scf::IfOp::create(
        b, loc, arith::AndIOp::create(b, loc, firstSet, runOk[t]),
        /*withElse=*/false);
    OpBuilder sb = OpBuilder::atBlockBegin(&store.getThenRegion().front());
    for (int64_t c = 0; c < group; ++c)
      for (int64_t e = 0; e < v; ++e) {
        Value col = arith::AddIOp::create(sb, loc, runStart[t], cst(sb, e));
        int64_t p = t * v + e;
        for (int64_t f = 0; f < carrierSize; ++f) {
          Value x = carriers[c * rowCarrier + (f < 2 ? f : 2 + p)];
          memref::StoreOp::create(
              sb, loc, x, buf, ValueRange{warp, cst(sb, c), col, cst(sb, f)});
        }
      }
  }
  // ...combined in warp order by a thread per row and column, into the
  // scratch.
  emitBlockCombine(b, buf, scratch, tid, groupRow, split);
  // Products and sums contract into fused multiply-adds (one rounding
  // instead of two, as nvcc's default): the dot products and the weighted
  // sums.
  k.func.walk([](Operation *o) {
    if (isa<arith::AddFOp, arith::SubFOp, arith::MulFOp>(o))
      allowApproximation(o);
  });
  return success();
}

LogicalResult SplitSoftmaxEmitter::emitCombine(Kernel &f, unsigned scratchArg,
                                               unsigned outArg) {
  Block &entry = f.func.getBody().front();
  OpBuilder b = OpBuilder::atBlockEnd(&entry);
  FailureOr<SmallVector<Value>> point =
      emitThreadPerPoint(b, op, {m.rows, m.dv}, f);
  if (failed(point))
    return failure();
  Value row = (*point)[0], c = (*point)[1];
  Value scratch = entry.getArgument(scratchArg);
  Value out = entry.getArgument(outArg);
  // The splits that had keys: ceil(n / chunk) (the others hold the
  // identity).
  // The follow-up's parameters are the partial kernel's.
  IRMapping tensors;
  for (auto [tensor, arg] : r.tensors.getValueMap())
    if (auto a = dyn_cast<BlockArgument>(arg))
      tensors.map(tensor, entry.getArgument(a.getArgNumber()));
  BodyEmitter emitter(tensors, &entry);
  emitter.setSizes(f.sizes);
  IRMapping mapping;
  mapRow(b, row, mapping);
  FailureOr<std::pair<Value, Value>> keys = emitChunk(b, emitter, mapping);
  if (failed(keys))
    return failure();
  auto [n, chunk] = *keys;
  Value used = arith::MinUIOp::create(
      b, loc, cst(b, splits),
      arith::DivUIOp::create(
          b, loc,
          arith::AddIOp::create(
              b, loc, n, arith::SubIOp::create(b, loc, chunk, cst(b, 1))),
          chunk));
  // kCombineUnroll splits a step, their loads issued together (a split
  // at a time, each step waits out a load's latency: 0.4-0.5 us a split
  // measured on the H200); splits past `used` load split 0 and join as
  // the identity.
  int64_t unroll = std::min<int64_t>(splits, kCombineUnroll);
  auto loop = scf::ForOp::create(b, loc, cst(b, 0), used, cst(b, unroll),
                                 monoid.identity(b, loc));
  {
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    SmallVector<Value> identity = monoid.identity(lb, loc);
    SmallVector<SmallVector<Value>> parts;
    SmallVector<Value> valid;
    for (int64_t u = 0; u < unroll; ++u) {
      Value s =
          arith::AddIOp::create(lb, loc, loop.getInductionVar(), cst(lb, u));
      valid.push_back(u == 0 ? Value()
                             : arith::CmpIOp::create(lb, loc,
                                                     arith::CmpIPredicate::ult,
                                                     s, used));
      if (valid.back())
        s = arith::SelectOp::create(lb, loc, valid.back(), s, cst(lb, 0));
      SmallVector<Value> &part = parts.emplace_back();
      for (int64_t e = 0; e < carrierSize; ++e)
        part.push_back(memref::LoadOp::create(
            lb, loc, scratch, ValueRange{row, s, c, cst(lb, e)}));
    }
    SmallVector<Value> total(loop.getRegionIterArgs());
    for (int64_t u = 0; u < unroll; ++u) {
      if (valid[u])
        for (int64_t e = 0; e < carrierSize; ++e)
          parts[u][e] = arith::SelectOp::create(lb, loc, valid[u], parts[u][e],
                                                identity[e]);
      total = monoid.combine(lb, loc, total, parts[u]);
    }
    scf::YieldOp::create(lb, loc, total);
  }
  Value result = monoid.finalize(b, loc, loop.getResults())[0];
  SmallVector<Value> at;
  for (unsigned i = 0; i < m.d; ++i)
    at.push_back(mapping.lookup(op.getIndex(i)));
  at.push_back(c);
  if (f.sizes)
    at = f.sizes->getIndices(b, loc, out, at);
  Type storage = cast<MemRefType>(out.getType()).getElementType();
  memref::StoreOp::create(b, loc, toStorage(b, loc, result, storage), out, at);
  return success();
}

LogicalResult SplitSoftmaxEmitter::emit() {
  auto f32 = Float32Type::get(op.getContext());
  Value scratch =
      r.addScratch(MemRefType::get({m.rows, splits, m.dv, carrierSize}, f32));
  unsigned scratchArg = cast<BlockArgument>(scratch).getArgNumber();
  unsigned outArg = cast<BlockArgument>(r.outputs[0]).getArgNumber();
  Kernel &combine = r.addFollowUp();
  if (failed(m.mma ? emitPartialMma(scratch) : emitPartial(scratch)))
    return failure();
  return emitCombine(combine, scratchArg, outArg);
}

namespace {

struct SplitSoftmaxKernelPattern : KernelPattern {
  SplitSoftmaxKernelPattern() : KernelPattern("split_softmax") {}

  KernelMatch matchAndBuild(KernelRequest &r) const override {
    if (r.choice.kind != KernelKind::SplitSoftmax || !r.choice.splitSoftmax)
      return notifyMatchFailure(r.op, "not a split_softmax choice");
    // The kernel keeps one maximum and sum per row for all its columns: the
    // carrier of the builtin online_softmax.
    if (r.op.getBuiltinMonoid() != MonoidKind::OnlineSoftmax) {
      r.op.emitOpError() << "split_softmax kernel: not the builtin "
                            "online_softmax monoid";
      return KernelMatch::Error;
    }
    FailureOr<MonoidCodegen> monoid = MonoidCodegen::get(r.op);
    if (failed(monoid))
      return KernelMatch::Error;
    if (!llvm::all_of(monoid->getCarrierTypes(),
                      [](Type t) { return t.isF32(); })) {
      r.op.emitOpError() << "split_softmax kernel: the monoid's carrier is "
                            "not f32 values";
      return KernelMatch::Error;
    }
    Type out =
        cast<RankedTensorType>(r.op.getResult(0).getType()).getElementType();
    bool approximate = out.isF16() || out.isBF16();
    monoid->setApproximate(approximate);
    SplitSoftmaxEmitter emitter(r, *monoid, approximate);
    return succeeded(emitter.emit()) ? KernelMatch::Built : KernelMatch::Error;
  }
};

} // namespace

void mlir::tang::populateSplitSoftmaxKernelPatterns(
    KernelPatternSet &patterns) {
  patterns.push_back(std::make_unique<SplitSoftmaxKernelPattern>());
}
