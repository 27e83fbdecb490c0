//===- LinalgToTang.cpp - linalg on tensors to tang -------------*- C++ -*-===//
//
// TODO(convert-linalg-to-tang): the import itself.
//
//===----------------------------------------------------------------------===//

#include "Tang/Conversion/LinalgToTang/LinalgToTang.h"
#include "Tang/Dialect/Tang/IR/TangOps.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tang {
#define GEN_PASS_DEF_CONVERTLINALGTOTANG
#include "Tang/Conversion/Passes.h.inc"
} // namespace mlir::tang

using namespace mlir;
using namespace mlir::tang;

void mlir::tang::populateLinalgToTangPatterns(RewritePatternSet &patterns) {}

namespace {
struct ConvertLinalgToTangPass
    : tang::impl::ConvertLinalgToTangBase<ConvertLinalgToTangPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateLinalgToTangPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
