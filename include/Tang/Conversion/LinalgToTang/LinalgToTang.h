//===- LinalgToTang.h - linalg on tensors to tang ---------------*- C++ -*-===//
//
// Imports linalg on tensors into tang comprehensions (see the pass
// description in Conversion/Passes.td).
//
//===----------------------------------------------------------------------===//

#ifndef TANG_CONVERSION_LINALGTOTANG_LINALGTOTANG_H
#define TANG_CONVERSION_LINALGTOTANG_LINALGTOTANG_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tang {

#define GEN_PASS_DECL_CONVERTLINALGTOTANG
#include "Tang/Conversion/Passes.h.inc"

/// Adds the patterns that rewrite linalg ops on tensors into tang
/// comprehensions: upstream's generalisation of named linalg ops to
/// linalg.generic, and linalg.generic -> tang.comprehension. A generic that
/// cannot be imported is left alone (the pattern reports why through
/// notifyMatchFailure); the pass turns leftovers into errors.
void populateLinalgToTangPatterns(RewritePatternSet &patterns);

} // namespace mlir::tang

#endif // TANG_CONVERSION_LINALGTOTANG_LINALGTOTANG_H
