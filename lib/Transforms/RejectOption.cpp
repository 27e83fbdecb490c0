//===- RejectOption.cpp - --tang-reject-option ------------------*- C++ -*-===//
//
// Reports a pipeline option the pipeline cannot honour (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "Tang/Transforms/Passes.h"
#include "llvm/Support/Debug.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGREJECTOPTION
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-reject-option"

using namespace mlir;
using namespace mlir::tang;

namespace {

struct TangRejectOptionPass
    : tang::impl::TangRejectOptionBase<TangRejectOptionPass> {
  using TangRejectOptionBase::TangRejectOptionBase;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
    getOperation().emitError() << message;
    signalPassFailure();
  }
};

} // namespace
