//===- TensorScanKernel.cpp - the kernel of a tang.tensor_scan ---*- C++
//-*-===//
//
// A scan of affine maps S -> A_t S + B_t on [K, V] states (the monoid is
// the composition of affine maps, KernelMatchers' isAffineComposition):
// one thread per parallel point and state column j carries its column
// along the scan, each step's column computed from the previous step's,
// which the same thread stored (so no thread waits for another):
//
//   S[p, t, i, j] = B[p, t, i, j] + sum_k A[p, t, i, k] S[p, t - 1, k, j]
//
// with S[p, -1] the init's state (zero without one). O(K^2) per step and
// column, in order: the steps of --tang-chunk-affine-scan's chunks (a few
// hundred), not the tokens of a long sequence. The products of the
// transitions (the scan's first result) are not computed: the kernel form
// refuses a scan that uses them.
//
//===----------------------------------------------------------------------===//

#include "BodyEmitter.h"
#include "KernelForm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tang;

LogicalResult mlir::tang::emitAffineScanKernel(OpBuilder &b, TensorScanOp op,
                                               IRMapping &tensors,
                                               ValueRange outputs, Kernel &k) {
  Location loc = op.getLoc();
  auto bType = cast<RankedTensorType>(op.getElements()[1].getType());
  unsigned rank = bType.getRank();
  int64_t steps = bType.getDimSize(rank - 3);
  int64_t kDim = bType.getDimSize(rank - 2);
  SmallVector<int64_t> columns(bType.getShape().take_front(rank - 3));
  columns.push_back(bType.getDimSize(rank - 1));
  OpBuilder::InsertionGuard guard(b);
  FailureOr<SmallVector<Value>> point = emitThreadPerPoint(b, op, columns, k);
  if (failed(point))
    return failure();
  ArrayRef<Value> parallel = ArrayRef<Value>(*point).drop_back();
  Value col = point->back();
  Value a = tensors.lookup(op.getElements()[0]);
  Value bIn = tensors.lookup(op.getElements()[1]);
  Value init = op.getInit().empty() ? Value() : tensors.lookup(op.getInit()[1]);
  Value out = outputs[1];
  Type element = bType.getElementType();
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  auto at = [&](std::initializer_list<Value> tail) {
    SmallVector<Value> coords(parallel.begin(), parallel.end());
    coords.append(tail.begin(), tail.end());
    return coords;
  };
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0));
  auto steps_ = scf::ForOp::create(b, loc, cst(0), cst(steps), cst(1));
  b.setInsertionPointToStart(steps_.getBody());
  Value t = steps_.getInductionVar();
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, t, cst(0));
  auto rows = scf::ForOp::create(b, loc, cst(0), cst(kDim), cst(1));
  b.setInsertionPointToStart(rows.getBody());
  Value i = rows.getInductionVar();
  Value bias = memref::LoadOp::create(b, loc, bIn, at({t, i, col}));
  auto sum =
      scf::ForOp::create(b, loc, cst(0), cst(kDim), cst(1), ValueRange{bias});
  b.setInsertionPointToStart(sum.getBody());
  Value kk = sum.getInductionVar();
  Value aik = memref::LoadOp::create(b, loc, a, at({t, i, kk}));
  // The previous state's (k, j): the init's (or zero) at the first step.
  auto prev = scf::IfOp::create(b, loc, TypeRange{element}, first,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&prev.getThenRegion().front());
    Value s0 =
        init ? memref::LoadOp::create(b, loc, init, at({kk, col})).getResult()
             : zero;
    scf::YieldOp::create(b, loc, s0);
    b.setInsertionPointToStart(&prev.getElseRegion().front());
    Value before = arith::SubIOp::create(b, loc, t, cst(1));
    Value s = memref::LoadOp::create(b, loc, out, at({before, kk, col}));
    scf::YieldOp::create(b, loc, s);
  }
  Value prod = arith::MulFOp::create(b, loc, aik, prev.getResult(0));
  Value acc = arith::AddFOp::create(b, loc, sum.getRegionIterArgs()[0], prod);
  scf::YieldOp::create(b, loc, acc);
  b.setInsertionPointAfter(sum);
  memref::StoreOp::create(b, loc, sum.getResult(0), out, at({t, i, col}));
  return success();
}
