//===- Passes.h - tang rewrites ---------------------------------*- C++ -*-===//

#ifndef TANG_TRANSFORMS_PASSES_H
#define TANG_TRANSFORMS_PASSES_H

#include "Tang/Dialect/Tang/IR/TangOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tang {

/// The unit attribute --tang-grad puts on the comprehensions whose values it
/// saves (hoisted nested reductions, softmax statistics, D = rowsum(dO O),
/// tie counts, the online-softmax output D reads): --tang-fuse keeps them
/// materialised instead of recomputing them inside their readers.
inline constexpr llvm::StringLiteral kSavedAttrName = "tang.saved";

#define GEN_PASS_DECL
#include "Tang/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Tang/Transforms/Passes.h.inc"

} // namespace mlir::tang

#endif // TANG_TRANSFORMS_PASSES_H
