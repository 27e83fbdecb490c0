//===- TangSizes.h - symbolic sizes of a function --------------*- C++ -*-===//
//
// A tang function may leave sizes open: an `index` argument (a context
// length, a position) or a `?` dimension of a tensor argument (a batch of
// any size). These are the function's size symbols. Every extent and every
// dimension in the function is a Size: an affine form c0 + sum c_s * s over
// those symbols. This file holds the arithmetic of sizes; TangOps.h
// answers "what is this extent" (getSizeOf, getDimSize) and "under which
// sizes is this function in bounds" (collectSizeRequirements): the verifier
// proves what holds for every size, the interpreter and the runtimes check
// the rest before anything runs.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_DIALECT_TANG_IR_TANGSIZES_H
#define TANG_DIALECT_TANG_IR_TANGSIZES_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::tang {

/// A size symbol of a function: an `index` argument (dim == -1) or a `?`
/// dimension of a ranked tensor argument.
struct SizeSymbol {
  unsigned argNumber;
  int dim;
};

/// The size symbols of `func` in order: for each argument, an `index`
/// argument is one symbol, a tensor argument one per `?` dimension.
SmallVector<SizeSymbol> getSizeSymbols(FunctionOpInterface func);

/// The symbol's name in messages: `%arg2`, or `dim 0 of %arg1`.
std::string getSizeSymbolName(SizeSymbol s);

/// Parses `argK=N` (the index argument #K) or `argK.D=N` (the `?`
/// dimension D of tensor argument #K) naming a size symbol of `func`, N >= 0
/// (a dimension: >= 1), as tang-run's --size and --tang-specialize-sizes
/// take them; failure when `spec` does not name one.
LogicalResult parseSizeSpec(FunctionOpInterface func, StringRef spec,
                            SizeSymbol &symbol, int64_t &value);
/// What parseSizeSpec expects, for diagnostics.
inline constexpr const char *kSizeSpecSyntax =
    "argK=N (an index argument) or argK.D=N (a '?' dimension of a tensor "
    "argument), N >= 0 (a dimension: >= 1)";

/// A size: constant + sum_s coeffs[s] * symbol_s over the size symbols of
/// one function (missing trailing coefficients are zero). Symbols are at
/// least 1 (a size of zero is refused before a run).
struct Size {
  int64_t constant = 0;
  SmallVector<int64_t> coeffs;

  static Size get(int64_t c) { return Size{c, {}}; }
  static Size symbol(unsigned s);

  bool isConstant() const;
  int64_t getCoeff(unsigned s) const {
    return s < coeffs.size() ? coeffs[s] : 0;
  }
  Size operator+(const Size &o) const;
  Size operator-(const Size &o) const;
  Size operator*(int64_t k) const;
  bool operator==(const Size &o) const;

  /// The value at `symbols` (one value per size symbol).
  int64_t evaluate(ArrayRef<int64_t> symbols) const;
  /// True when the size is >= 0 for every value of the symbols >= 0 (an
  /// index argument may be 0: a position).
  bool isProvablyNonNegative() const;
  /// Prints e.g. `%arg2 - 1` or `4096`.
  void print(raw_ostream &os, ArrayRef<SizeSymbol> symbols) const;
  std::string str(ArrayRef<SizeSymbol> symbols) const;
  /// `*this >= 0` as an inequality without negative terms, e.g.
  /// `%arg2 <= 4096` for 4096 - %arg2.
  std::string strNonNegative(ArrayRef<SizeSymbol> symbols) const;
};

/// A condition `expr >= 0` on the size symbols, at `op`, with what it
/// guards in words (`what`, e.g. "coordinate #0 (d0) stays below dimension
/// 0 (4096)").
struct SizeRequirement {
  Size expr;
  Operation *op;
  std::string what;

  /// The requirement broken at `sizes` (one value per symbol), in words:
  /// "coordinate #0 (d0) stays below dimension 0 (4096) only if %arg2 <=
  /// 4096, but %arg2 = 5000".
  std::string describeBroken(ArrayRef<SizeSymbol> symbols,
                             ArrayRef<int64_t> sizes) const;
};

} // namespace mlir::tang

#endif // TANG_DIALECT_TANG_IR_TANGSIZES_H
