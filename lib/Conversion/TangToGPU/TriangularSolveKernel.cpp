//===- TriangularSolveKernel.cpp - the kernel of tang.triangular_solve ----===//
//
// Forward substitution, X[p, r, n] = Y[p, r, n] + sum_{s < r} L[p, r, s]
// X[p, s, n]: one thread per (parallel point, column), which substitutes
// its column row by row (the columns are independent systems: no thread
// waits for another, no barrier). Consecutive threads take consecutive
// columns of one point, so a warp reads the same L row: one transaction
// serves the warp.
//
// At C <= 64 the loops are unrolled and the column stays in registers: C^2
// / 2 multiply-adds, each reading only L (as 16-byte vectors of 4 s where
// the row length allows, on the CUDA kernel form: the portable backends'
// printers take scalar loads). Larger C loops over rows and s, reading the
// column's earlier rows back from the result (the thread's own stores).
// Elements narrower than f32 are computed in f32, stores rounded.
//
//===----------------------------------------------------------------------===//

#include "BodyEmitter.h"
#include "KernelForm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tang;

namespace {
/// The largest system whose column a thread keeps in registers (unrolled).
constexpr int64_t kRegisterRows = 64;
} // namespace

LogicalResult mlir::tang::emitTriangularSolveKernel(OpBuilder &b,
                                                    TriangularSolveOp op,
                                                    IRMapping &tensors,
                                                    Value output, Kernel &k,
                                                    bool vectorLoads) {
  Location loc = op.getLoc();
  RankedTensorType type = op.getType();
  unsigned rank = type.getRank();
  int64_t rows = type.getDimSize(rank - 2);
  OpBuilder::InsertionGuard guard(b);
  FailureOr<SmallVector<Value>> point = emitThreadPerColumn(b, op, type, 2, k);
  if (failed(point))
    return failure();
  ArrayRef<Value> parallel = ArrayRef<Value>(*point).drop_back();
  Value col = point->back();
  Value lower = tensors.lookup(op.getLower());
  Value rhs = tensors.lookup(op.getRhs());
  Type element = type.getElementType();
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  auto at = [&](ArrayRef<Value> tail) {
    SmallVector<Value> coords(parallel);
    coords.append(tail.begin(), tail.end());
    return coords;
  };
  // Narrower floats compute in f32 (the column as it is carried, the
  // stores rounded to the element type).
  Type compute =
      element.getIntOrFloatBitWidth() < 32 ? b.getF32Type() : element;
  auto widen = [&](Value v) {
    return v.getType() == compute
               ? v
               : arith::ExtFOp::create(b, loc, compute, v).getResult();
  };
  auto load = [&](Value buf, ArrayRef<Value> coords) {
    return widen(memref::LoadOp::create(b, loc, buf, coords));
  };
  auto store = [&](Value v, ArrayRef<Value> coords) {
    if (v.getType() != element)
      v = arith::TruncFOp::create(b, loc, element, v);
    memref::StoreOp::create(b, loc, v, output, coords);
  };
  auto madd = [&](Value acc, Value x, Value y) {
    return emitMultiplyAdd(b, loc, acc, x, y);
  };

  if (rows <= kRegisterRows) {
    bool vectors = vectorLoads && rows % 4 == 0 && element.isF32();
    auto quad = VectorType::get({4}, element);
    SmallVector<Value> x;
    for (int64_t r = 0; r < rows; ++r) {
      Value row = cst(r);
      Value acc = load(rhs, at({row, col}));
      for (int64_t s = 0; s < r; s += vectors ? 4 : 1) {
        if (!vectors) {
          acc = madd(acc, load(lower, at({row, cst(s)})), x[s]);
          continue;
        }
        // L[r, s..s+3] (in the row: rows % 4 == 0), its entries past r-1
        // unused.
        Value l =
            vector::LoadOp::create(b, loc, quad, lower, at({row, cst(s)}),
                                   /*nontemporal=*/false, llvm::Align(16));
        for (int64_t q = 0; q < 4 && s + q < r; ++q)
          acc = madd(acc, vector::ExtractOp::create(b, loc, l, q), x[s + q]);
      }
      x.push_back(acc);
      store(acc, at({row, col}));
    }
    return success();
  }

  auto rowLoop = scf::ForOp::create(b, loc, cst(0), cst(rows), cst(1));
  b.setInsertionPointToStart(rowLoop.getBody());
  Value row = rowLoop.getInductionVar();
  Value first = load(rhs, at({row, col}));
  auto sum = scf::ForOp::create(b, loc, cst(0), row, cst(1), ValueRange{first});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(sum.getBody());
    Value s = sum.getInductionVar();
    Value next = madd(sum.getRegionIterArgs()[0], load(lower, at({row, s})),
                      load(output, at({s, col})));
    scf::YieldOp::create(b, loc, next);
  }
  store(sum.getResult(0), at({row, col}));
  return success();
}
