//===- ScatterKernel.cpp - the kernel of a tang.scatter ---------*- C++ -*-===//
//
// A scatter writes into a buffer that already holds a copy of its base (the
// conversion copies the base first). Two points of its domain that differ
// in an index which alone is a coordinate of the put (`%d` in
// `[symbol(%row), %d]`) write different elements, so one thread takes each
// value of those indices; the other indices, those that may collide, run
// as loops in each thread, in row-major order. Collisions therefore
// combine in row-major order on every backend, with plain loads and stores
// and no atomics: the interpreter's meaning, bit for bit, whatever the
// monoid. A put's data coordinates are checked with an unsigned comparison;
// `drop` skips the write, `trap` is refused (kernels cannot report errors
// yet).
//
//===----------------------------------------------------------------------===//

#include "BodyEmitter.h"
#include "KernelForm.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tang;

LogicalResult mlir::tang::emitScatterKernel(OpBuilder &b, ScatterOp op,
                                            IRMapping &tensors, Value output,
                                            Kernel &k) {
  Location loc = op.getLoc();
  PutOp put = op.getPut();
  AffineMap map = put.getMap();
  if (put.getPolicy() == OutOfRange::Trap && map.getNumSymbols())
    return put.emitOpError()
           << "traps on an out-of-range coordinate that kernels cannot "
              "check (no device error channel): the runtime checks a data "
              "coordinate that is an element of an integer input, as read; "
              "give this one the drop policy, or run it with tang-run";

  // The indices that alone are a coordinate run in parallel.
  unsigned n = op.getNumIndices();
  SmallVector<bool> parallel(n, false);
  for (AffineExpr e : map.getResults())
    if (auto d = dyn_cast<AffineDimExpr>(e))
      parallel[cast<BlockArgument>(put.getIndices()[d.getPosition()])
                   .getArgNumber()] = true;
  SmallVector<int64_t> threadExtents;
  for (unsigned i = 0; i < n; ++i)
    if (parallel[i])
      threadExtents.push_back(op.getExtent(i));

  OpBuilder::InsertionGuard guard(b);
  FailureOr<SmallVector<Value>> point =
      emitThreadPerPoint(b, op, threadExtents, k);
  if (failed(point))
    return failure();
  IRMapping mapping;
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  for (unsigned i = 0, t = 0; i < n; ++i) {
    if (parallel[i]) {
      mapping.map(op.getIndex(i), (*point)[t++]);
      continue;
    }
    // The others, outermost first: row-major order within the thread.
    auto loop =
        scf::ForOp::create(b, loc, cst(0), cst(op.getExtent(i)), cst(1));
    b.setInsertionPointToStart(loop.getBody());
    mapping.map(op.getIndex(i), loop.getInductionVar());
  }

  BodyEmitter emitter(tensors, &k.func.getBody().front());
  emitter.setSizes(k.sizes);
  for (Operation &o : op.getBodyBlock().without_terminator())
    if (failed(emitter.emit(b, &o, mapping)))
      return failure();
  // Its coordinates may use sizes (a KV cache written at %pos).
  if (failed(emitter.materialize(put, mapping)))
    return failure();
  Value value = mapping.lookup(put.getValue());

  // The coordinates; the data ones checked.
  auto lookup = [&](Value v) { return mapping.lookup(v); };
  SmallVector<Value> dims = llvm::map_to_vector(put.getIndices(), lookup);
  SmallVector<Value> symbols = llvm::map_to_vector(put.getValues(), lookup);
  ArrayRef<int64_t> shape = cast<MemRefType>(output.getType()).getShape();
  SmallVector<Value> coords;
  Value inside;
  for (auto [pos, expr] : llvm::enumerate(map.getResults())) {
    Value c = affine::expandAffineExpr(b, loc, expr, dims, symbols);
    coords.push_back(c);
    bool usesData = false;
    expr.walk([&](AffineExpr e) { usesData |= isa<AffineSymbolExpr>(e); });
    if (!usesData)
      continue;
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c,
                                     cst(shape[pos]));
    inside = inside ? arith::AndIOp::create(b, loc, inside, ok) : ok;
  }
  if (inside) {
    auto ifOp = scf::IfOp::create(b, loc, inside, /*withElse=*/false);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  }

  Type storage = cast<MemRefType>(output.getType()).getElementType();
  if (Attribute monoid = op.getMonoidAttr()) {
    FailureOr<MonoidCodegen> mc =
        MonoidCodegen::get(op, monoid, TypeRange{storage});
    if (failed(mc))
      return failure();
    Value old = memref::LoadOp::create(b, loc, output, coords);
    if (getComputeType(storage) != storage)
      old = arith::ExtFOp::create(b, loc, getComputeType(storage), old);
    value = mc->finalize(
        b, loc, mc->combine(b, loc, {old}, mc->lift(b, loc, {value})))[0];
  }
  memref::StoreOp::create(b, loc, toStorage(b, loc, value, storage), output,
                          coords);
  return success();
}
