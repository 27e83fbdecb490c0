//===- Passes.h - tang rewrites ---------------------------------*- C++ -*-===//

#ifndef TANG_TRANSFORMS_PASSES_H
#define TANG_TRANSFORMS_PASSES_H

#include "Tang/Analysis/KernelChoice.h"
#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Dialect/Tang/IR/TangOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tang {

/// Applies --tang-online-softmax's rewrites under `root` to a fixed point
/// (weighted sums first, then max/sum pairs); counts what it rewrote. A
/// rewritten comprehension keeps its discardable attributes.
LogicalResult applyOnlineSoftmax(Operation *root, int64_t &onlineSoftmax,
                                 int64_t &softmaxNorm);

/// The number of scalar operations a function-level comprehension executes
/// in the kernel form (--tang-fuse's work bound): every body operation once
/// per point of the domains around it, a nested comprehension once per
/// point of its reduced domain, except that what does not depend on the
/// last parallel index is computed once per row when the comprehension is
/// a map (row kernels) or an online-softmax reduction (flash kernels share
/// the scores across the head dimension).
double getExecutedWork(ComprehensionOp op);

/// Where --tang-schedule takes matmul-like output tiles from.
enum class TileSource { Heuristic, TrafficBound };

#define GEN_PASS_DECL
#include "Tang/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Tang/Transforms/Passes.h.inc"

} // namespace mlir::tang

#endif // TANG_TRANSFORMS_PASSES_H
