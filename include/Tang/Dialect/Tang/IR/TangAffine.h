//===- TangAffine.h - affine coordinates: values and ranges ----*- C++ -*-===//
//
// The one evaluator of affine coordinates and what is computed from it:
// linear forms, interval ranges, exact ranges (TangAffine.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TANG_DIALECT_TANG_IR_TANGAFFINE_H
#define TANG_DIALECT_TANG_IR_TANGAFFINE_H

#include "mlir/IR/AffineExpr.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace mlir::tang {

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

namespace detail {

/// `e` as text, for diagnostics.
std::string formatAffineExpr(AffineExpr e);

/// The exact range of `expr` over the box `dimRanges`, by enumeration when
/// the box has at most 2^16 points (interval arithmetic bounds each
/// subexpression on its own and can be loose for floordiv/mod of sums).
std::optional<IndexRange> getExactRange(AffineExpr expr,
                                        ArrayRef<IndexRange> dimRanges);

} // namespace detail

} // namespace mlir::tang

#endif // TANG_DIALECT_TANG_IR_TANGAFFINE_H
