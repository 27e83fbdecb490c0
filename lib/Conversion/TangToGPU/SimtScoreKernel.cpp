//===- SimtScoreKernel.cpp - attention without tensor cores ---------------===//
//
// Reductions over keys of dot-product scores, for targets without tensor
// cores (the portable backends: SPIR-V, GLSL, WGSL, OpenCL, Metal):
//
//   flash (matchFlash, tensorCores = false):
//     O[.., i, d] = online_softmax_j (s(i, j), v(j, d)),
//     s(i, j) = g(c * sum_e q(i, e) k(j, e), i, j);
//   score (matchScoreReduction, tensorCores = false; add only):
//     O[.., x, c] = sum_y g(x, y) W[.., y, c],
//     g any code of one or two dot products sum_e a(x, e) b(y, e), the
//     indices and other reads (attention's gradients dQ, dK, dV).
//
// Each score is computed once for all output columns, and no L x L tensor
// exists. Every tile lives in f32 workgroup memory (the portable model's
// 16 KiB suffice); no subgroup operation is used, so the kernel is the same
// on every backend.
//
// A block of T threads (SimtTileConfig: 32 along the keys and the output
// columns, T / 32 along the rows) owns bm rows of one batch point and
// walks the keys in steps of bn (only those a causal-type mask keeps for
// its rows). Per key step:
//
//  1. scores: each dot product for the bm x bn tile, its two operands'
//     columns staged in steps of headStep along its index (consecutive
//     threads along it). Thread (tx, ty) computes rows ty + q T/32 and keys
//     tx + 32 c, reading a staged key-side element once for its rows and a
//     row-side element (the same for a warp's 32 lanes) once for its keys.
//     Then g per point (the scale, the mask, the statistics a gradient
//     reads: any code of the indices); keys past the extent -inf (flash)
//     or 0 (score); the tile stored to P;
//  2. flash only, statistics: thread r < bm takes row r: the new maximum,
//     the rescaling exp(m_old - m_new), P = exp(S - m_new) in place, the
//     sum (the monoid's combine, with buildSoftmaxExponentBase for rows with
//     no key yet);
//  3. values: each thread (flash: rescales and) adds P W to its
//     bm / (T/32) x cols / 32 accumulators, W's rows staged valueStep keys
//     at a time (keys past the extent never read: 0 x inf would be NaN
//     where the interpreter has no term).
//
// Finally O = acc / l (flash: the monoid's finalize) or acc, with guarded
// stores, and for flash, when a softmax_norm sibling asks for them, the
// rows' (max, sum). Ragged extents clamp the staged reads and guard the
// stores. A point's dot products are summed in index order and its keys
// taken in order (flash: joined a step at a time by the monoid's combine),
// so results differ from the interpreter's by rounding only.
//
//===----------------------------------------------------------------------===//

#include "BodyEmitter.h"
#include "KernelForm.h"
#include "TensorCoreEmitter.h"

#include "Tang/Dialect/Tang/IR/TangMonoids.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::tang;

namespace {

/// What the kernel computes, from a flash or a score match.
struct SimtScorePlan {
  ComprehensionOp op;
  /// The rows' and the output columns' parallel indices, the key index.
  unsigned rows, cols;
  Value key;
  int64_t lRows, lKeys, lCols;
  SmallVector<ScoreDot, 2> dots;
  SmallVector<Operation *> scoreOps;
  Value score;
  /// The read the scores weigh (v, W): the key and the output column.
  ReadOp value;
  /// Flash (online softmax) or a sum.
  bool online = false;
  /// Keys past row + keysUpTo (before row - keysFrom) contribute nothing.
  std::optional<int64_t> keysUpTo, keysFrom;

  static SimtScorePlan get(ComprehensionOp op, const FlashMatch &m) {
    SimtScorePlan p;
    p.op = op;
    p.rows = m.i;
    p.cols = m.d;
    p.key = m.j;
    p.lRows = m.lq;
    p.lKeys = m.lk;
    p.lCols = m.dv;
    p.dots.push_back({m.red, m.q, m.k, m.factors});
    p.scoreOps = m.scoreOps;
    p.score = m.score;
    p.value = m.v;
    p.online = true;
    p.keysUpTo = m.keyLimit;
    return p;
  }
  static SimtScorePlan get(ComprehensionOp op, const ScoreMatch &m) {
    SimtScorePlan p;
    p.op = op;
    p.rows = m.x;
    p.cols = *m.c;
    p.key = m.y;
    p.lRows = m.lx;
    p.lKeys = m.ly;
    p.lCols = m.dc;
    p.dots = m.dots;
    p.scoreOps = m.scoreOps;
    p.score = m.g;
    p.value = m.w;
    p.keysUpTo = m.keysUpTo;
    p.keysFrom = m.keysFrom;
    return p;
  }
};

class SimtScoreEmitter {
public:
  SimtScoreEmitter(OpBuilder &b, const SimtScorePlan &plan,
                   const SimtTileConfig &cfg, IRMapping &tensors,
                   ValueRange outputs, ValueRange statsOutputs, Kernel &k)
      : b(b), loc(plan.op->getLoc()), plan(plan), op(plan.op), cfg(cfg),
        outputs(outputs), statsOutputs(statsOutputs), k(k),
        emitter(tensors, &k.func.getBody().front()),
        rowThreads(cfg.rowThreads()), rowsPer(cfg.bm / rowThreads),
        keysPer(cfg.bn / 32), colsPer(llvm::divideCeil(plan.lCols, 32)) {
    approximate = isLowPrecision(op);
    emitter.setApproximate(approximate);
    int64_t longest = 1;
    for (const ScoreDot &dot : plan.dots)
      longest = std::max(longest, ComprehensionOp(dot.red).getExtent(0));
    headStep = std::min(cfg.headStep, longest);
  }

  LogicalResult emit();

private:
  Value cst(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value minIdx(Value x, int64_t bound) {
    return arith::MinUIOp::create(b, loc, x, cst(bound));
  }
  Value exp(Value x) {
    auto e = math::ExpOp::create(b, loc, x);
    if (approximate)
      allowApproximation(e);
    return e;
  }
  Value toF32(Value v) {
    return v.getType().isF32()
               ? v
               : arith::ExtFOp::create(b, loc, b.getF32Type(), v).getResult();
  }
  Value workgroupBuffer(ArrayRef<int64_t> shape) {
    auto space = gpu::AddressSpaceAttr::get(b.getContext(),
                                            gpu::AddressSpace::Workgroup);
    return k.func.addWorkgroupAttribution(
        MemRefType::get(shape, b.getF32Type(), AffineMap(), space), loc);
  }
  Value load(Value buf, ValueRange at) {
    return memref::LoadOp::create(b, loc, buf, at);
  }
  void store(Value v, Value buf, ValueRange at) {
    memref::StoreOp::create(b, loc, v, buf, at);
  }
  void barrier() { gpu::BarrierOp::create(b, loc); }

  /// Stages `count` elements into a workgroup tile: element e (thread tid
  /// takes e = tid, tid + T, ...) is stored by `body` (which emits its
  /// read); the last round guarded when T does not divide `count`.
  LogicalResult stage(int64_t count, function_ref<LogicalResult(Value)> body);
  /// Emits `read` with its indices at `mapping`, as an f32.
  FailureOr<Value> emitRead(ReadOp read, IRMapping mapping);
  /// A loop of `count` steps carrying `init` (rowsPer x n accumulators,
  /// row-major): step s adds left[q] * right[c] to accumulator (q, c), the
  /// operands (rowsPer left values, n right ones) loaded by `operands(s)`.
  scf::ForOp emitOuterProducts(
      Value count, ValueRange init,
      function_ref<std::pair<SmallVector<Value>, SmallVector<Value>>(Value)>
          operands) {
    auto loop = scf::ForOp::create(b, loc, cst(0), count, cst(1), init);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    auto [left, right] = operands(loop.getInductionVar());
    ValueRange acc = loop.getRegionIterArgs();
    SmallVector<Value> next;
    for (auto [q, l] : llvm::enumerate(left))
      for (auto [c, r] : llvm::enumerate(right))
        next.push_back(
            arith::AddFOp::create(b, loc, acc[q * right.size() + c],
                                  arith::MulFOp::create(b, loc, l, r)));
    scf::YieldOp::create(b, loc, next);
    return loop;
  }
  /// The dot product `dot` for the thread's points of the key step at
  /// `key0`: rowsPer x keysPer values (row-major).
  FailureOr<SmallVector<Value>> emitDot(const ScoreDot &dot, Value key0);
  /// The key step: scores, statistics (flash), values. Returns the new
  /// carriers.
  FailureOr<SmallVector<Value>> emitKeyStep(Value key0, ValueRange carried);
  /// The softmax statistics of the step (flash): thread r < bm takes row r.
  /// Returns the new (max, sum) (the old ones on other threads).
  scf::IfOp emitStatistics(Value mOld, Value lOld);

  OpBuilder &b;
  Location loc;
  const SimtScorePlan &plan;
  ComprehensionOp op;
  const SimtTileConfig &cfg;
  ValueRange outputs, statsOutputs;
  Kernel &k;
  BodyEmitter emitter;
  bool approximate = false;
  const int64_t rowThreads, rowsPer, keysPer, colsPer;
  int64_t headStep;

  Value tx, ty, tid, row0;
  /// Each dot product's constant factors (null: none).
  SmallVector<Value, 2> factors;
  /// The batch indices of the block (every parallel index but the rows
  /// and the columns).
  IRMapping base;
  Value aTile, bTile, vTile, pTile, corrTile, sumTile;
};

LogicalResult SimtScoreEmitter::stage(int64_t count,
                                      function_ref<LogicalResult(Value)> body) {
  int64_t threads = cfg.threads;
  for (int64_t r = 0; r * threads < count; ++r) {
    Value e = add(tid, cst(r * threads));
    OpBuilder::InsertionGuard g(b);
    if ((r + 1) * threads > count) {
      auto ifOp = scf::IfOp::create(b, loc, lt(e, cst(count)), false);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    }
    if (failed(body(e)))
      return failure();
  }
  return success();
}

FailureOr<Value> SimtScoreEmitter::emitRead(ReadOp read, IRMapping mapping) {
  if (failed(emitter.emit(b, read, mapping)))
    return failure();
  return toF32(mapping.lookup(read.getResult()));
}

FailureOr<SmallVector<Value>> SimtScoreEmitter::emitDot(const ScoreDot &dot,
                                                        Value key0) {
  const int64_t bm = cfg.bm, bn = cfg.bn;
  ComprehensionOp red = dot.red;
  Value eIndex = red.getIndex(0), rowIndex = op.getIndex(plan.rows);
  int64_t length = red.getExtent(0);
  int64_t step = std::min(headStep, length);
  SmallVector<Value> zeros(rowsPer * keysPer, f32(0));
  auto eLoop =
      scf::ForOp::create(b, loc, cst(0), cst(length), cst(step), zeros);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(eLoop.getBody());
  Value e0 = eLoop.getInductionVar();
  auto at = [&](Value ee) {
    Value e = add(e0, ee);
    return length % step ? minIdx(e, length - 1) : e;
  };
  // a[row0 + r, e0 + ee] -> aTile[ee][r]; b[key0 + c, ..] -> bTile[ee][c]
  // (consecutive threads along e).
  auto stageOperand = [&](ReadOp read, Value index, Value first, int64_t count,
                          int64_t extent, Value tile) {
    return stage(step * count, [&](Value e) -> LogicalResult {
      Value ee = arith::RemUIOp::create(b, loc, e, cst(step));
      Value r = arith::DivUIOp::create(b, loc, e, cst(step));
      IRMapping m = base;
      m.map(index, minIdx(add(first, r), extent - 1));
      m.map(eIndex, at(ee));
      FailureOr<Value> v = emitRead(read, m);
      if (failed(v))
        return failure();
      store(*v, tile, {ee, r});
      return success();
    });
  };
  if (failed(stageOperand(dot.a, rowIndex, row0, bm, plan.lRows, aTile)) ||
      failed(stageOperand(dot.b, plan.key, key0, bn, plan.lKeys, bTile)))
    return failure();
  barrier();
  Value count = cst(step);
  if (length % step)
    count = arith::MinUIOp::create(
        b, loc, count, arith::SubIOp::create(b, loc, cst(length), e0));
  // Per head column: a key-side element per key of the thread, a row-side
  // one per row (the same for a warp's lanes).
  auto inner =
      emitOuterProducts(count, eLoop.getRegionIterArgs(), [&](Value ee) {
        SmallVector<Value> qv, kv;
        for (int64_t q = 0; q < rowsPer; ++q)
          qv.push_back(load(aTile, {ee, add(ty, cst(q * rowThreads))}));
        for (int64_t c = 0; c < keysPer; ++c)
          kv.push_back(load(bTile, {ee, add(tx, cst(32 * c))}));
        return std::make_pair(qv, kv);
      });
  barrier();
  scf::YieldOp::create(b, loc, inner.getResults());
  return SmallVector<Value>(eLoop.getResults());
}

scf::IfOp SimtScoreEmitter::emitStatistics(Value mOld, Value lOld) {
  const int64_t bn = cfg.bn;
  auto statsIf =
      scf::IfOp::create(b, loc, TypeRange{mOld.getType(), lOld.getType()},
                        lt(tid, cst(cfg.bm)), /*withElse=*/true);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(statsIf.thenBlock());
  auto maxLoop =
      scf::ForOp::create(b, loc, cst(0), cst(bn), cst(1), ValueRange{mOld});
  {
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPointToStart(maxLoop.getBody());
    Value s = load(pTile, {tid, maxLoop.getInductionVar()});
    scf::YieldOp::create(b, loc,
                         ValueRange{arith::MaximumFOp::create(
                             b, loc, maxLoop.getRegionIterArgs()[0], s)});
  }
  Value mNew = maxLoop.getResult(0);
  Value basePoint = buildSoftmaxExponentBase(b, loc, mNew);
  Value corr = exp(arith::SubFOp::create(b, loc, mOld, basePoint));
  auto sumLoop =
      scf::ForOp::create(b, loc, cst(0), cst(bn), cst(1), ValueRange{f32(0)});
  {
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPointToStart(sumLoop.getBody());
    Value c = sumLoop.getInductionVar();
    Value p =
        exp(arith::SubFOp::create(b, loc, load(pTile, {tid, c}), basePoint));
    store(p, pTile, {tid, c});
    scf::YieldOp::create(b, loc,
                         ValueRange{arith::AddFOp::create(
                             b, loc, sumLoop.getRegionIterArgs()[0], p)});
  }
  store(corr, corrTile, {tid});
  Value lNew = arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, lOld, corr), sumLoop.getResult(0));
  scf::YieldOp::create(b, loc, ValueRange{mNew, lNew});
  b.setInsertionPointToStart(statsIf.elseBlock());
  scf::YieldOp::create(b, loc, ValueRange{mOld, lOld});
  return statsIf;
}

FailureOr<SmallVector<Value>>
SimtScoreEmitter::emitKeyStep(Value key0, ValueRange carried) {
  const int64_t bn = cfg.bn;
  Value rowIndex = op.getIndex(plan.rows), colIndex = op.getIndex(plan.cols);

  // 1. Scores: the dot products, then the score code per point; keys past
  // the extent -inf (flash) or 0 (a sum).
  SmallVector<SmallVector<Value>> dots;
  for (const ScoreDot &dot : plan.dots) {
    FailureOr<SmallVector<Value>> d = emitDot(dot, key0);
    if (failed(d))
      return failure();
    dots.push_back(std::move(*d));
  }
  Value outside =
      f32(plan.online ? -std::numeric_limits<double>::infinity() : 0.0);
  for (int64_t q = 0; q < rowsPer; ++q)
    for (int64_t c = 0; c < keysPer; ++c) {
      Value r = add(ty, cst(q * rowThreads)), col = add(tx, cst(32 * c));
      Value key = add(key0, col);
      IRMapping at = base;
      at.map(rowIndex, minIdx(add(row0, r), plan.lRows - 1));
      at.map(plan.key, minIdx(key, plan.lKeys - 1));
      for (auto [dot, values, factor] : llvm::zip(plan.dots, dots, factors)) {
        Value v = values[q * keysPer + c];
        if (factor)
          v = arith::MulFOp::create(b, loc, v, factor);
        at.map(ComprehensionOp(dot.red).getResult(0), v);
      }
      for (Operation *scoreOp : plan.scoreOps)
        if (failed(emitter.emit(b, scoreOp, at)))
          return failure();
      Value s = toF32(at.lookupOrDefault(plan.score));
      s = arith::SelectOp::create(b, loc, lt(key, cst(plan.lKeys)), s, outside);
      store(s, pTile, {r, col});
    }
  barrier();

  // 2. Flash: the statistics, the rescaling of the accumulators.
  SmallVector<Value> acc(carried.drop_front(plan.online ? 2 : 0));
  scf::IfOp stats;
  if (plan.online) {
    stats = emitStatistics(carried[0], carried[1]);
    barrier();
    for (int64_t q = 0; q < rowsPer; ++q) {
      Value corr = load(corrTile, {add(ty, cst(q * rowThreads))});
      for (int64_t u = 0; u < colsPer; ++u)
        acc[q * colsPer + u] =
            arith::MulFOp::create(b, loc, acc[q * colsPer + u], corr);
    }
  }

  // 3. Values: P W, a step of keys at a time.
  int64_t vs = cfg.valueStep;
  auto vLoop = scf::ForOp::create(b, loc, cst(0), cst(bn), cst(vs), acc);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(vLoop.getBody());
    Value v0 = vLoop.getInductionVar();
    Value first = add(key0, v0);
    if (failed(stage(vs * plan.lCols, [&](Value e) -> LogicalResult {
          Value d = arith::RemUIOp::create(b, loc, e, cst(plan.lCols));
          Value kk = arith::DivUIOp::create(b, loc, e, cst(plan.lCols));
          IRMapping at = base;
          at.map(plan.key, minIdx(add(first, kk), plan.lKeys - 1));
          at.map(colIndex, d);
          FailureOr<Value> v = emitRead(plan.value, at);
          if (failed(v))
            return failure();
          store(*v, vTile, {kk, d});
          return success();
        })))
      return failure();
    barrier();
    // Keys past the extent are not added.
    Value left = arith::SubIOp::create(
        b, loc, arith::MaxSIOp::create(b, loc, cst(plan.lKeys), first), first);
    Value count = arith::MinUIOp::create(b, loc, cst(vs), left);
    auto inner =
        emitOuterProducts(count, vLoop.getRegionIterArgs(), [&](Value kk) {
          SmallVector<Value> pv, vv;
          for (int64_t q = 0; q < rowsPer; ++q)
            pv.push_back(
                load(pTile, {add(ty, cst(q * rowThreads)), add(v0, kk)}));
          for (int64_t u = 0; u < colsPer; ++u) {
            Value d = add(tx, cst(32 * u));
            vv.push_back(load(
                vTile, {kk, plan.lCols % 32 ? minIdx(d, plan.lCols - 1) : d}));
          }
          return std::make_pair(pv, vv);
        });
    barrier();
    scf::YieldOp::create(b, loc, inner.getResults());
  }
  SmallVector<Value> out;
  if (stats)
    llvm::append_range(out, stats.getResults());
  llvm::append_range(out, vLoop.getResults());
  return out;
}

LogicalResult SimtScoreEmitter::emit() {
  OpBuilder::InsertionGuard guard(b);
  const int64_t bm = cfg.bm, bn = cfg.bn;
  unsigned np = op.getNumParallel();
  int64_t batch = 1;
  for (unsigned p = 0; p < np; ++p)
    if (p != plan.rows && p != plan.cols)
      batch *= op.getExtent(p);
  k.grid = {static_cast<int64_t>(llvm::divideCeil(plan.lRows, bm)), batch, 1};
  k.block = {32, rowThreads, 1};

  aTile = workgroupBuffer({headStep, bm + 1});
  bTile = workgroupBuffer({headStep, bn + 1});
  vTile = workgroupBuffer({cfg.valueStep, plan.lCols});
  pTile = workgroupBuffer({bm, bn + 1});
  if (plan.online) {
    corrTile = workgroupBuffer({bm});
    sumTile = workgroupBuffer({bm});
  }

  using gpu::Dimension;
  tx = gpu::ThreadIdOp::create(b, loc, Dimension::x);
  ty = gpu::ThreadIdOp::create(b, loc, Dimension::y);
  tid = add(mul(ty, cst(32)), tx);
  row0 = mul(gpu::BlockIdOp::create(b, loc, Dimension::x), cst(bm));
  Value rest = gpu::BlockIdOp::create(b, loc, Dimension::y);
  for (int p = static_cast<int>(np) - 1; p >= 0; --p) {
    if (static_cast<unsigned>(p) == plan.rows ||
        static_cast<unsigned>(p) == plan.cols)
      continue;
    Value extent = cst(op.getExtent(p));
    base.map(op.getIndex(p), arith::RemUIOp::create(b, loc, rest, extent));
    rest = arith::DivUIOp::create(b, loc, rest, extent);
  }
  for (const ScoreDot &dot : plan.dots) {
    FailureOr<Value> f = emitConstantFactors(b, emitter, dot.red, dot.factors);
    if (failed(f))
      return failure();
    factors.push_back(*f ? toF32(*f) : Value());
  }

  // The keys the block's rows may need: all, or with a causal-type mask
  // those up to its last row + c (from its first row - c).
  Value keyBegin = cst(0), keyEnd = cst(plan.lKeys);
  if (plan.keysUpTo)
    keyEnd = arith::MinSIOp::create(
        b, loc,
        arith::MaxSIOp::create(b, loc, add(row0, cst(bm + *plan.keysUpTo)),
                               cst(0)),
        keyEnd);
  if (plan.keysFrom)
    keyBegin = arith::MaxSIOp::create(
        b, loc, arith::SubIOp::create(b, loc, row0, cst(*plan.keysFrom)),
        cst(0));
  SmallVector<Value> init;
  if (plan.online)
    init = {f32(-std::numeric_limits<double>::infinity()), f32(0)};
  init.append(rowsPer * colsPer, f32(0));
  auto keyLoop = scf::ForOp::create(b, loc, keyBegin, keyEnd, cst(bn), init);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(keyLoop.getBody());
    FailureOr<SmallVector<Value>> next =
        emitKeyStep(keyLoop.getInductionVar(), keyLoop.getRegionIterArgs());
    if (failed(next))
      return failure();
    scf::YieldOp::create(b, loc, *next);
  }
  ValueRange accs = keyLoop.getResults().drop_front(plan.online ? 2 : 0);

  if (plan.online) {
    // The rows' sums for every thread, and the statistics if asked for.
    Value mRow = keyLoop.getResult(0), lRow = keyLoop.getResult(1);
    {
      OpBuilder::InsertionGuard g(b);
      auto ifOp = scf::IfOp::create(b, loc, lt(tid, cst(bm)), false);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      store(lRow, sumTile, {tid});
      if (!statsOutputs.empty()) {
        Value row = add(row0, tid);
        auto inside =
            scf::IfOp::create(b, loc, lt(row, cst(plan.lRows)), false);
        b.setInsertionPoint(inside.thenBlock()->getTerminator());
        SmallVector<Value> at;
        for (unsigned p = 0; p < np; ++p)
          if (p != plan.cols)
            at.push_back(p == plan.rows ? row : base.lookup(op.getIndex(p)));
        SmallVector<Value> stats{mRow, lRow};
        for (auto [v, buffer] : llvm::zip(stats, statsOutputs)) {
          Type e = cast<MemRefType>(buffer.getType()).getElementType();
          store(toStorage(b, loc, v, e), buffer, at);
        }
      }
    }
    barrier();
  }

  // O = acc / l (flash) or acc, stored where inside the extents.
  for (int64_t q = 0; q < rowsPer; ++q) {
    Value r = add(ty, cst(q * rowThreads));
    Value row = add(row0, r);
    Value l = plan.online ? load(sumTile, {r}) : Value();
    for (int64_t u = 0; u < colsPer; ++u) {
      Value d = add(tx, cst(32 * u));
      Value o = accs[q * colsPer + u];
      if (plan.online)
        o = buildBuiltinFinalize(b, loc, MonoidKind::OnlineSoftmax,
                                 ValueRange{l, l, o}, approximate)[0];
      Value inside;
      if (plan.lRows % bm)
        inside = lt(row, cst(plan.lRows));
      if (32 * colsPer != plan.lCols) {
        Value in = lt(d, cst(plan.lCols));
        inside =
            inside ? arith::AndIOp::create(b, loc, inside, in).getResult() : in;
      }
      OpBuilder::InsertionGuard g(b);
      if (inside) {
        auto ifOp = scf::IfOp::create(b, loc, inside, false);
        b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      }
      SmallVector<Value> at;
      for (unsigned p = 0; p < np; ++p)
        at.push_back(p == plan.rows   ? row
                     : p == plan.cols ? d
                                      : base.lookup(op.getIndex(p)));
      Type storage = cast<MemRefType>(outputs[0].getType()).getElementType();
      store(toStorage(b, loc, o, storage), outputs[0], at);
    }
  }
  return success();
}

} // namespace

LogicalResult
mlir::tang::emitSimtFlashKernel(OpBuilder &b, ComprehensionOp op,
                                const FlashMatch &m, const SimtTileConfig &cfg,
                                IRMapping &tensors, ValueRange outputs,
                                ValueRange statsOutputs, Kernel &k) {
  SimtScorePlan plan = SimtScorePlan::get(op, m);
  return SimtScoreEmitter(b, plan, cfg, tensors, outputs, statsOutputs, k)
      .emit();
}

LogicalResult mlir::tang::emitSimtScoreKernel(OpBuilder &b, ComprehensionOp op,
                                              const ScoreMatch &m,
                                              const SimtTileConfig &cfg,
                                              IRMapping &tensors,
                                              ValueRange outputs, Kernel &k) {
  SimtScorePlan plan = SimtScorePlan::get(op, m);
  return SimtScoreEmitter(b, plan, cfg, tensors, outputs, ValueRange(), k)
      .emit();
}
