//===- ScanKernel.cpp - the kernel of a tang.scan ---------------*- C++ -*-===//
//
// One thread per parallel point: a loop along the scan index carries the
// monoid's carrier from its identity, accumulates the body's values in
// order and stores every prefix, finalised, in storage types. The order of
// the combination is the interpreter's, so a monoid that is not
// commutative keeps its meaning. (A chunked scan that spreads one long
// sequence over a block is the faster plan for few, long sequences.)
//
//===----------------------------------------------------------------------===//

#include "BodyEmitter.h"
#include "KernelForm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tang;

LogicalResult mlir::tang::emitScanKernel(OpBuilder &b, ScanOp op,
                                         IRMapping &tensors, ValueRange outputs,
                                         Kernel &k) {
  Location loc = op.getLoc();
  FailureOr<MonoidCodegen> mc = MonoidCodegen::get(
      op, op.getMonoidAttr(), op.getYield().getValues().getTypes());
  if (failed(mc))
    return failure();
  unsigned n = op.getNumParallel();
  OpBuilder::InsertionGuard guard(b);
  FailureOr<SmallVector<Value>> point =
      emitThreadPerPoint(b, op, op.getExtents().drop_back(), k);
  if (failed(point))
    return failure();
  IRMapping mapping;
  for (unsigned i = 0; i < n; ++i)
    mapping.map(op.getIndex(i), (*point)[i]);
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  auto loop = scf::ForOp::create(b, loc, cst(0), cst(op.getExtent(n)), cst(1),
                                 mc->identity(b, loc));
  b.setInsertionPointToStart(loop.getBody());
  Value t = loop.getInductionVar();
  mapping.map(op.getIndex(n), t);
  BodyEmitter emitter(tensors, &k.func.getBody().front());
  emitter.setSizes(k.sizes);
  FailureOr<SmallVector<Value>> yields =
      emitter.emitBody(b, op.getBodyBlock(), mapping);
  if (failed(yields))
    return failure();
  SmallVector<Value> carrier =
      mc->accumulate(b, loc, loop.getRegionIterArgs(), *yields);
  SmallVector<Value> coords(*point);
  coords.push_back(t);
  for (auto [v, out] : llvm::zip(mc->finalize(b, loc, carrier), outputs)) {
    Type storage = cast<MemRefType>(out.getType()).getElementType();
    memref::StoreOp::create(b, loc, toStorage(b, loc, v, storage), out, coords);
  }
  scf::YieldOp::create(b, loc, carrier);
  return success();
}
