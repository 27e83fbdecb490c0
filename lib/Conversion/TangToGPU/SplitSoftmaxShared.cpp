//===- SplitSoftmaxShared.cpp - what the split-softmax kernels share ------===//
//
// The pieces of SplitSoftmaxEmitter (SplitSoftmaxKernel.h) that both
// partial kernels (lanes: SplitSoftmaxKernel.cpp; tensor cores:
// SplitSoftmaxMma.cpp) and the combining kernel use: a block's run of keys,
// its rows' points, the warps' buffer and the block's combine.
//
//===----------------------------------------------------------------------===//

#include "SplitSoftmaxKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::split_softmax;

FailureOr<std::pair<Value, Value>>
SplitSoftmaxEmitter::emitChunk(OpBuilder &b, BodyEmitter &emitter,
                               IRMapping point) {
  Value n = emitter.getExtent(b, loc, op, op.getNumParallel());
  if (m.keyLimit) {
    // min(n, max(0, x + offset)): x signed, the keys past it skipped.
    for (Operation *inner : m.keyLimit->ops)
      if (failed(emitter.emit(b, inner, point)))
        return failure();
    Value x = point.lookupOrDefault(m.keyLimit->limit);
    if (!x.getType().isIndex())
      x = arith::IndexCastOp::create(b, loc, b.getIndexType(), x);
    x = arith::AddIOp::create(b, loc, x, cst(b, m.keyLimit->offset));
    x = arith::MaxSIOp::create(b, loc, x, cst(b, 0));
    n = arith::MinUIOp::create(b, loc, n, x);
  }
  Value chunk = arith::MaxUIOp::create(
      b, loc,
      arith::DivUIOp::create(
          b, loc, arith::AddIOp::create(b, loc, n, cst(b, splits - 1)),
          cst(b, splits)),
      cst(b, kMinKeys));
  return std::pair{n, chunk};
}

Operation *SplitSoftmaxEmitter::mapLimitTrue(OpBuilder &b, IRMapping &mapping) {
  if (!m.keyLimit)
    return nullptr;
  Operation *cond = m.keyLimit->condition;
  mapping.map(cond->getResult(0),
              arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  return cond;
}

void SplitSoftmaxEmitter::mapRow(OpBuilder &b, Value row, IRMapping &mapping) {
  Value rest = row;
  for (int i = static_cast<int>(m.d) - 1; i >= 0; --i) {
    Value ext = cst(b, op.getExtent(i));
    mapping.map(op.getIndex(i), arith::RemUIOp::create(b, loc, rest, ext));
    rest = arith::DivUIOp::create(b, loc, rest, ext);
  }
}

Value SplitSoftmaxEmitter::mapGroup(OpBuilder &b, Value g, IRMapping &mapping) {
  if (m.d == 0)
    return cst(b, 0);
  Value hk = arith::RemUIOp::create(b, loc, g,
                                    cst(b, op.getExtent(m.d - 1) / m.group));
  Value rest = arith::DivUIOp::create(b, loc, g,
                                      cst(b, op.getExtent(m.d - 1) / m.group));
  for (int i = static_cast<int>(m.d) - 2; i >= 0; --i) {
    Value ext = cst(b, op.getExtent(i));
    mapping.map(op.getIndex(i), arith::RemUIOp::create(b, loc, rest, ext));
    rest = arith::DivUIOp::create(b, loc, rest, ext);
  }
  return hk;
}

Value SplitSoftmaxEmitter::startPartial() {
  OpBuilder &b = r.b;
  r.k.grid = {splits, m.rows / m.group, 1};
  r.k.block = {32 * kWarps, 1, 1};
  auto wgSpace =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  return r.k.func.addWorkgroupAttribution(
      MemRefType::get({kWarps, m.group, m.dv, carrierSize}, b.getF32Type(),
                      AffineMap(), wgSpace),
      loc);
}

void SplitSoftmaxEmitter::emitBlockCombine(OpBuilder &b, Value buf,
                                           Value scratch, Value tid,
                                           Value groupRow, Value split) {
  gpu::BarrierOp::create(b, loc);
  int64_t threads = 32 * kWarps;
  int64_t points = m.group * m.dv;
  for (int64_t q = 0, e = llvm::divideCeil(points, threads); q < e; ++q) {
    Value i = arith::AddIOp::create(b, loc, tid, cst(b, q * threads));
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i,
                                     cst(b, points));
    auto inside = scf::IfOp::create(b, loc, ok, /*withElse=*/false);
    OpBuilder ib = OpBuilder::atBlockBegin(&inside.getThenRegion().front());
    Value c = arith::DivUIOp::create(ib, loc, i, cst(ib, m.dv));
    Value col = arith::RemUIOp::create(ib, loc, i, cst(ib, m.dv));
    SmallVector<Value> total = monoid.identity(ib, loc);
    for (int64_t w = 0; w < kWarps; ++w) {
      SmallVector<Value> part;
      for (int64_t f = 0; f < carrierSize; ++f)
        part.push_back(memref::LoadOp::create(
            ib, loc, buf, ValueRange{cst(ib, w), c, col, cst(ib, f)}));
      total = monoid.combine(ib, loc, total, part);
    }
    Value row = arith::AddIOp::create(
        ib, loc, arith::MulIOp::create(ib, loc, groupRow, cst(ib, m.group)), c);
    for (int64_t f = 0; f < carrierSize; ++f)
      memref::StoreOp::create(ib, loc, total[f], scratch,
                              ValueRange{row, split, col, cst(ib, f)});
  }
}
