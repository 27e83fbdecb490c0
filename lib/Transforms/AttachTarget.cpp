//===- AttachTarget.cpp - --tang-attach-target ------------------*- C++ -*-===//
//
// Puts a known chip's device model on the module (see TangTargets.h).
//
//===----------------------------------------------------------------------===//

#include "Tang/Dialect/Tang/IR/TangTargets.h"
#include "Tang/Transforms/Passes.h"
#include "llvm/Support/Debug.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGATTACHTARGET
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-attach-target"

using namespace mlir;
using namespace mlir::tang;

namespace {

struct TangAttachTargetPass
    : tang::impl::TangAttachTargetBase<TangAttachTargetPass> {
  using TangAttachTargetBase::TangAttachTargetBase;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
    ModuleOp module = getOperation();
    if (auto own = module->getAttrOfType<TargetAttr>(kTargetAttrName)) {
      if (own.getChip() == chip)
        return;
      module.emitError() << "tang-attach-target: the module's tang.target is "
                            "for chip '"
                         << own.getChip() << "', not '" << chip << "'";
      return signalPassFailure();
    }
    const TargetFacts *facts = lookupTarget(chip);
    if (!facts) {
      module.emitError() << "tang-attach-target: unknown chip '" << chip
                         << "' (known: " << getKnownChipList()
                         << "); for another device, write its "
                            "#tang.target on the module";
      return signalPassFailure();
    }
    if (vectorBytes < 0 || vectorBytes > 16 ||
        (vectorBytes & (vectorBytes - 1))) {
      module.emitError() << "tang-attach-target: vector-bytes must be 0 (the "
                            "chip's) or a power of two up to 16, not "
                         << vectorBytes.getValue();
      return signalPassFailure();
    }
    TargetFacts f = *facts;
    if (vectorBytes)
      f.vectorBytes = vectorBytes;
    module->setAttr(kTargetAttrName, getTargetAttr(&getContext(), f));
  }
};

} // namespace
