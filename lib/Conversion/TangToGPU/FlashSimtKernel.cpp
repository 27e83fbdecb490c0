//===- FlashSimtKernel.cpp - online softmax without tensor cores ----------===//
//
// The flash form of an attention-shaped online-softmax reduction
// (matchFlash with tensorCores = false),
//
//   O[.., i, d] = online_softmax_j (s(i, j), v(j, d)),
//   s(i, j) = g(c * sum_e q(i, e) k(j, e), i, j),
//
// for targets without tensor cores (the portable backends: SPIR-V, GLSL,
// WGSL, OpenCL, Metal): each score is computed once, and no L x L tensor
// exists. Every tile lives in f32 workgroup memory (the portable model's
// 16 KiB suffice); no subgroup operation is used, so the kernel is the
// same on every backend.
//
// A block of T threads (FlashConfig::simtThreads; 32 along the keys and
// the value columns, T / 32 along the rows) owns bm query rows of one
// batch point and walks the keys in steps of bn (up to the last key a
// causal-type mask keeps for its rows). Per key step:
//
//  1. scores: S = Q K^T for the bm x bn tile, Q's and K's columns staged in
//     steps of headStep along the head dimension (consecutive threads
//     along it: both reads are contiguous there). Thread (tx, ty) computes
//     rows ty + q T/32 and keys tx + 32 c, reading a staged K element once
//     for its rows and a Q element (the same for a warp's 32 lanes) once
//     for its keys. Then g per score (the scale, the mask, any code of the
//     indices), keys past the extent -inf, the tile stored to P;
//  2. statistics: thread r < bm takes row r: the new maximum, the
//     rescaling exp(m_old - m_new), P = exp(S - m_new) in place, the sum
//     (the monoid's combine, with buildSoftmaxExponentBase for rows with
//     no key yet);
//  3. values: each thread rescales its bm / (T/32) x dv / 32 accumulators
//     and adds P V, V's rows staged valueStep keys at a time (keys past
//     the extent never read: 0 x inf would be NaN where the interpreter
//     has no term).
//
// Finally O = acc / l (the monoid's finalize) with guarded stores, and,
// when a softmax_norm sibling asks for them, the rows' (max, sum).
// Ragged extents clamp the staged reads and guard the stores. The scores
// of a row are summed in index order along the head dimension and its
// keys joined a step at a time (the monoid's combine), so results differ
// from the interpreter's key-by-key accumulation by rounding only.
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

class SimtFlashEmitter {
public:
  SimtFlashEmitter(OpBuilder &b, ComprehensionOp op, const FlashMatch &m,
                   const FlashConfig &cfg, IRMapping &tensors,
                   ValueRange outputs, ValueRange statsOutputs, Kernel &k)
      : b(b), loc(op.getLoc()), op(op), m(m), red(m.red), cfg(cfg),
        outputs(outputs), statsOutputs(statsOutputs), k(k),
        emitter(tensors, &k.func.getBody().front()),
        rowThreads(cfg.simtRowThreads()), rowsPer(cfg.bm / rowThreads),
        keysPer(cfg.bn / 32), colsPer(llvm::divideCeil(m.dv, 32)),
        headStep(std::min(cfg.headStep, m.dqk)) {
    approximate = isLowPrecision(op);
    emitter.setApproximate(approximate);
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

  /// The key step: scores, statistics, values. Returns the new carriers.
  FailureOr<SmallVector<Value>> emitKeyStep(Value key0, ValueRange carried);

  OpBuilder &b;
  Location loc;
  ComprehensionOp op;
  const FlashMatch &m;
  ComprehensionOp red;
  const FlashConfig &cfg;
  ValueRange outputs, statsOutputs;
  Kernel &k;
  BodyEmitter emitter;
  bool approximate = false;
  const int64_t rowThreads, rowsPer, keysPer, colsPer, headStep;

  Value tx, ty, tid, row0, factor;
  /// The batch indices of the block (every parallel index but i and d).
  IRMapping base;
  Value qTile, kTile, vTile, pTile, corrTile, sumTile;
};

LogicalResult SimtFlashEmitter::stage(int64_t count,
                                      function_ref<LogicalResult(Value)> body) {
  int64_t threads = cfg.simtThreads;
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

FailureOr<Value> SimtFlashEmitter::emitRead(ReadOp read, IRMapping mapping) {
  if (failed(emitter.emit(b, read, mapping)))
    return failure();
  Value v = mapping.lookup(read.getResult());
  if (!v.getType().isF32())
    v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  return v;
}

FailureOr<SmallVector<Value>>
SimtFlashEmitter::emitKeyStep(Value key0, ValueRange carried) {
  const int64_t bm = cfg.bm, bn = cfg.bn;
  Value e0Index = red.getIndex(0), iIndex = op.getIndex(m.i),
        dIndex = op.getIndex(m.d);
  Value negInf = f32(-std::numeric_limits<double>::infinity());

  // 1. Scores: the dot products, staged along the head dimension.
  int64_t points = rowsPer * keysPer;
  SmallVector<Value> zeros(points, f32(0));
  auto eLoop =
      scf::ForOp::create(b, loc, cst(0), cst(m.dqk), cst(headStep), zeros);
  bool failedBody = false;
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(eLoop.getBody());
    Value e0 = eLoop.getInductionVar();
    auto headAt = [&](Value ee) {
      Value e = add(e0, ee);
      return m.dqk % headStep ? minIdx(e, m.dqk - 1) : e;
    };
    // Q[row0 + r, e0 + ee] -> qTile[ee][r]; K[key0 + c, ..] -> kTile[ee][c]
    // (consecutive threads along e).
    if (failed(stage(headStep * bm,
                     [&](Value e) -> LogicalResult {
                       Value ee =
                           arith::RemUIOp::create(b, loc, e, cst(headStep));
                       Value r =
                           arith::DivUIOp::create(b, loc, e, cst(headStep));
                       IRMapping at = base;
                       at.map(iIndex, minIdx(add(row0, r), m.lq - 1));
                       at.map(e0Index, headAt(ee));
                       FailureOr<Value> v = emitRead(m.q, at);
                       if (failed(v))
                         return failure();
                       store(*v, qTile, {ee, r});
                       return success();
                     })) ||
        failed(stage(headStep * bn, [&](Value e) -> LogicalResult {
          Value ee = arith::RemUIOp::create(b, loc, e, cst(headStep));
          Value c = arith::DivUIOp::create(b, loc, e, cst(headStep));
          IRMapping at = base;
          at.map(m.j, minIdx(add(key0, c), m.lk - 1));
          at.map(e0Index, headAt(ee));
          FailureOr<Value> v = emitRead(m.k, at);
          if (failed(v))
            return failure();
          store(*v, kTile, {ee, c});
          return success();
        }))) {
      failedBody = true;
    }
    barrier();
    Value count = cst(headStep);
    if (m.dqk % headStep)
      count = arith::MinUIOp::create(
          b, loc, count, arith::SubIOp::create(b, loc, cst(m.dqk), e0));
    auto inner = scf::ForOp::create(b, loc, cst(0), count, cst(1),
                                    eLoop.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(inner.getBody());
      Value ee = inner.getInductionVar();
      SmallVector<Value> kv, qv;
      for (int64_t c = 0; c < keysPer; ++c)
        kv.push_back(load(kTile, {ee, add(tx, cst(32 * c))}));
      for (int64_t q = 0; q < rowsPer; ++q)
        qv.push_back(load(qTile, {ee, add(ty, cst(q * rowThreads))}));
      SmallVector<Value> next;
      ValueRange acc = inner.getRegionIterArgs();
      for (int64_t q = 0; q < rowsPer; ++q)
        for (int64_t c = 0; c < keysPer; ++c)
          next.push_back(arith::AddFOp::create(
              b, loc, acc[q * keysPer + c],
              arith::MulFOp::create(b, loc, qv[q], kv[c])));
      scf::YieldOp::create(b, loc, next);
    }
    barrier();
    scf::YieldOp::create(b, loc, inner.getResults());
  }
  if (failedBody)
    return failure();

  // The score code per point; keys past the extent -inf.
  for (int64_t q = 0; q < rowsPer; ++q)
    for (int64_t c = 0; c < keysPer; ++c) {
      Value r = add(ty, cst(q * rowThreads)), col = add(tx, cst(32 * c));
      Value key = add(key0, col);
      IRMapping at = base;
      at.map(iIndex, minIdx(add(row0, r), m.lq - 1));
      at.map(m.j, m.lk % bn ? minIdx(key, m.lk - 1) : key);
      Value dot = eLoop.getResult(q * keysPer + c);
      if (factor)
        dot = arith::MulFOp::create(b, loc, dot, factor);
      at.map(red.getResult(0), dot);
      for (Operation *scoreOp : m.scoreOps)
        if (failed(emitter.emit(b, scoreOp, at)))
          return failure();
      Value s = at.lookupOrDefault(m.score);
      if (!s.getType().isF32())
        s = arith::ExtFOp::create(b, loc, b.getF32Type(), s);
      if (m.lk % bn)
        s = arith::SelectOp::create(b, loc, lt(key, cst(m.lk)), s, negInf);
      store(s, pTile, {r, col});
    }
  barrier();

  // 2. Statistics: thread r < bm takes row r.
  Value mOld = carried[0], lOld = carried[1];
  auto statsIf =
      scf::IfOp::create(b, loc, TypeRange{mOld.getType(), lOld.getType()},
                        lt(tid, cst(bm)), /*withElse=*/true);
  {
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
    Value lNew =
        arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, lOld, corr),
                              sumLoop.getResult(0));
    scf::YieldOp::create(b, loc, ValueRange{mNew, lNew});
    b.setInsertionPointToStart(statsIf.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{mOld, lOld});
  }
  barrier();

  // 3. Values: rescale, then add P V a step of keys at a time.
  SmallVector<Value> acc;
  for (int64_t q = 0; q < rowsPer; ++q) {
    Value corr = load(corrTile, {add(ty, cst(q * rowThreads))});
    for (int64_t u = 0; u < colsPer; ++u)
      acc.push_back(
          arith::MulFOp::create(b, loc, carried[2 + q * colsPer + u], corr));
  }
  int64_t vs = cfg.valueStep;
  auto vLoop = scf::ForOp::create(b, loc, cst(0), cst(bn), cst(vs), acc);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(vLoop.getBody());
    Value v0 = vLoop.getInductionVar();
    Value first = add(key0, v0);
    if (failed(stage(vs * m.dv, [&](Value e) -> LogicalResult {
          Value d = arith::RemUIOp::create(b, loc, e, cst(m.dv));
          Value kk = arith::DivUIOp::create(b, loc, e, cst(m.dv));
          IRMapping at = base;
          at.map(m.j, minIdx(add(first, kk), m.lk - 1));
          at.map(dIndex, d);
          FailureOr<Value> v = emitRead(m.v, at);
          if (failed(v))
            return failure();
          store(*v, vTile, {kk, d});
          return success();
        })))
      return failure();
    barrier();
    // Keys past the extent are not added.
    Value count = cst(vs);
    if (m.lk % bn) {
      Value left = arith::SubIOp::create(
          b, loc, arith::MaxSIOp::create(b, loc, cst(m.lk), first), first);
      count = arith::MinUIOp::create(b, loc, count, left);
    }
    auto inner = scf::ForOp::create(b, loc, cst(0), count, cst(1),
                                    vLoop.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(inner.getBody());
      Value kk = inner.getInductionVar();
      SmallVector<Value> vv, pv;
      for (int64_t u = 0; u < colsPer; ++u) {
        Value d = add(tx, cst(32 * u));
        vv.push_back(load(vTile, {kk, m.dv % 32 ? minIdx(d, m.dv - 1) : d}));
      }
      for (int64_t q = 0; q < rowsPer; ++q)
        pv.push_back(load(pTile, {add(ty, cst(q * rowThreads)), add(v0, kk)}));
      SmallVector<Value> next;
      ValueRange a = inner.getRegionIterArgs();
      for (int64_t q = 0; q < rowsPer; ++q)
        for (int64_t u = 0; u < colsPer; ++u)
          next.push_back(arith::AddFOp::create(
              b, loc, a[q * colsPer + u],
              arith::MulFOp::create(b, loc, pv[q], vv[u])));
      scf::YieldOp::create(b, loc, next);
    }
    barrier();
    scf::YieldOp::create(b, loc, inner.getResults());
  }
  SmallVector<Value> out{statsIf.getResult(0), statsIf.getResult(1)};
  llvm::append_range(out, vLoop.getResults());
  return out;
}

LogicalResult SimtFlashEmitter::emit() {
  OpBuilder::InsertionGuard guard(b);
  const int64_t bm = cfg.bm, bn = cfg.bn;
  unsigned np = op.getNumParallel();
  int64_t batch = 1;
  for (unsigned p = 0; p < np; ++p)
    if (p != m.i && p != m.d)
      batch *= op.getExtent(p);
  k.grid = {static_cast<int64_t>(llvm::divideCeil(m.lq, bm)), batch, 1};
  k.block = {32, rowThreads, 1};

  qTile = workgroupBuffer({headStep, bm + 1});
  kTile = workgroupBuffer({headStep, bn + 1});
  vTile = workgroupBuffer({cfg.valueStep, m.dv});
  pTile = workgroupBuffer({bm, bn + 1});
  corrTile = workgroupBuffer({bm});
  sumTile = workgroupBuffer({bm});

  using gpu::Dimension;
  tx = gpu::ThreadIdOp::create(b, loc, Dimension::x);
  ty = gpu::ThreadIdOp::create(b, loc, Dimension::y);
  tid = add(mul(ty, cst(32)), tx);
  row0 = mul(gpu::BlockIdOp::create(b, loc, Dimension::x), cst(bm));
  Value rest = gpu::BlockIdOp::create(b, loc, Dimension::y);
  for (int p = static_cast<int>(np) - 1; p >= 0; --p) {
    if (static_cast<unsigned>(p) == m.i || static_cast<unsigned>(p) == m.d)
      continue;
    Value extent = cst(op.getExtent(p));
    base.map(op.getIndex(p), arith::RemUIOp::create(b, loc, rest, extent));
    rest = arith::DivUIOp::create(b, loc, rest, extent);
  }
  FailureOr<Value> f = emitConstantFactors(b, emitter, red, m.factors);
  if (failed(f))
    return failure();
  factor = *f;
  if (factor && !factor.getType().isF32())
    factor = arith::ExtFOp::create(b, loc, b.getF32Type(), factor);

  // The keys the block's rows may keep: all, or with a causal-type mask
  // those up to its last row + c.
  Value keyEnd = cst(m.lk);
  if (m.keyLimit) {
    Value last = arith::MaxSIOp::create(
        b, loc, add(row0, cst(bm + *m.keyLimit)), cst(0));
    keyEnd = arith::MinSIOp::create(b, loc, last, keyEnd);
  }
  SmallVector<Value> init{f32(-std::numeric_limits<double>::infinity()),
                          f32(0)};
  init.append(rowsPer * colsPer, f32(0));
  auto keyLoop = scf::ForOp::create(b, loc, cst(0), keyEnd, cst(bn), init);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(keyLoop.getBody());
    FailureOr<SmallVector<Value>> next =
        emitKeyStep(keyLoop.getInductionVar(), keyLoop.getRegionIterArgs());
    if (failed(next))
      return failure();
    scf::YieldOp::create(b, loc, *next);
  }
  Value mRow = keyLoop.getResult(0), lRow = keyLoop.getResult(1);

  // The rows' sums for every thread, and the statistics if asked for.
  {
    OpBuilder::InsertionGuard g(b);
    auto ifOp = scf::IfOp::create(b, loc, lt(tid, cst(bm)), false);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    store(lRow, sumTile, {tid});
    if (!statsOutputs.empty()) {
      Value row = add(row0, tid);
      auto inside = scf::IfOp::create(b, loc, lt(row, cst(m.lq)), false);
      b.setInsertionPoint(inside.thenBlock()->getTerminator());
      SmallVector<Value> at;
      for (unsigned p = 0; p < np; ++p)
        if (p != m.d)
          at.push_back(p == m.i ? row : base.lookup(op.getIndex(p)));
      SmallVector<Value> stats{mRow, lRow};
      for (auto [v, buffer] : llvm::zip(stats, statsOutputs)) {
        Type e = cast<MemRefType>(buffer.getType()).getElementType();
        store(toStorage(b, loc, v, e), buffer, at);
      }
    }
  }
  barrier();

  // O = acc / l, stored where inside the extents.
  for (int64_t q = 0; q < rowsPer; ++q) {
    Value r = add(ty, cst(q * rowThreads));
    Value row = add(row0, r);
    Value l = load(sumTile, {r});
    for (int64_t u = 0; u < colsPer; ++u) {
      Value d = add(tx, cst(32 * u));
      Value accV = keyLoop.getResult(2 + q * colsPer + u);
      Value o = buildBuiltinFinalize(b, loc, MonoidKind::OnlineSoftmax,
                                     ValueRange{mRow, l, accV}, approximate)[0];
      Value inside;
      if (m.lq % bm)
        inside = lt(row, cst(m.lq));
      if (m.dv % 32 || 32 * colsPer != m.dv) {
        Value in = lt(d, cst(m.dv));
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
        at.push_back(p == m.i   ? row
                     : p == m.d ? d
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
                                const FlashMatch &m, const FlashConfig &cfg,
                                IRMapping &tensors, ValueRange outputs,
                                ValueRange statsOutputs, Kernel &k) {
  return SimtFlashEmitter(b, op, m, cfg, tensors, outputs, statsOutputs, k)
      .emit();
}
