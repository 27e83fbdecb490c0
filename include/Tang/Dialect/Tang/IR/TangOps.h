//===- TangOps.h - tang operations ------------------------------*- C++ -*-===//

#ifndef TANG_DIALECT_TANG_IR_TANGOPS_H
#define TANG_DIALECT_TANG_IR_TANGOPS_H

#include "Tang/Dialect/Tang/IR/TangAttrs.h"
#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tang {
class ComprehensionOp;
class MonoidOp;
class YieldOp;
} // namespace mlir::tang

#define GET_OP_CLASSES
#include "Tang/Dialect/Tang/IR/TangOps.h.inc"

namespace mlir::tang {

/// The comprehension that owns `index` as an iteration index, or null if
/// `index` is not a comprehension's block argument.
ComprehensionOp getOwningComprehension(Value index);

/// An inclusive range of integers.
struct IndexRange {
  int64_t lo, hi;
};

/// The value of `expr` (no symbols) at the dimension values `dims`:
/// floordiv and ceildiv round toward -inf and +inf, mod is non-negative for
/// a positive divisor. The one evaluator of affine coordinates (the
/// verifier, the interpreter, the traffic bound).
int64_t evaluateAffine(AffineExpr expr, ArrayRef<int64_t> dims);

/// An affine expression as c0 + sum_d coeffs[d] * d.
struct LinearForm {
  SmallVector<int64_t> coeffs;
  int64_t constant = 0;
};

/// `expr` (no symbols) as a linear form over `numDims` dimensions, or none
/// when it is not one (floordiv, mod, ceildiv, a product of two indices).
std::optional<LinearForm> getLinearForm(AffineExpr expr, unsigned numDims);

/// The range `expr` takes when dimension `d` ranges over `dimRanges[d]`
/// (interval arithmetic; exact for the linear expressions views use).
IndexRange getRange(AffineExpr expr, ArrayRef<IndexRange> dimRanges);

} // namespace mlir::tang

#endif // TANG_DIALECT_TANG_IR_TANGOPS_H
