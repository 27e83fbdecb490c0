//===- CollapseReductions.h - sums over several indices as one --*- C++ -*-===//

#ifndef TANG_TRANSFORMS_COLLAPSEREDUCTIONS_H
#define TANG_TRANSFORMS_COLLAPSEREDUCTIONS_H

#include "Tang/Dialect/Tang/IR/TangOps.h"

#include <string>

namespace mlir::tang {

/// Rewrites `op`'s reduction over several indices, read by every read as
/// consecutive coordinates in their order (a weight gradient's sum over
/// batch and length: `X[b, l, k]`), into one reduction over their product
/// (`X[r floordiv L, r mod L, k]`): a contraction over one index that the
/// tensor-core kernels take. Returns false (leaving `op` as it is) when a
/// reduced index is used otherwise, or when the rewritten comprehension
/// would not be a tensor-core contraction either (then `why` says why).
bool collapseReductions(ComprehensionOp op, bool wgmma, bool tf32,
                        std::string &why);

} // namespace mlir::tang

#endif // TANG_TRANSFORMS_COLLAPSEREDUCTIONS_H
