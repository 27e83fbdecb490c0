//===- RejectOption.cpp - --tang-reject-option ------------------*- C++ -*-===//
//
// Reports a pipeline option the pipeline cannot honour (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "Tang/Transforms/Passes.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGREJECTOPTION
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

using namespace mlir;
using namespace mlir::tang;

namespace {

struct TangRejectOptionPass
    : tang::impl::TangRejectOptionBase<TangRejectOptionPass> {
  using TangRejectOptionBase::TangRejectOptionBase;

  void runOnOperation() override {
    getOperation().emitError() << message;
    signalPassFailure();
  }
};

} // namespace
