//===- TangTargets.h - the device model's known chips -----------*- C++ -*-===//
//
// The facts of the chips tang knows (one entry per chip, the source of
// every #tang.target the pipelines attach) and how a pass finds the target
// of the module it runs on.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_DIALECT_TANG_IR_TANGTARGETS_H
#define TANG_DIALECT_TANG_IR_TANGTARGETS_H

#include "Tang/Dialect/Tang/IR/TangAttrs.h"

#include <string>

namespace mlir::tang {

/// The chip of the portable backends' device model (SPIR-V, GLSL, WGSL,
/// OpenCL, Metal): what every device they run on guarantees.
constexpr StringLiteral kPortableChip = "portable";
/// The discardable module attribute that holds a #tang.target.
constexpr StringLiteral kTargetAttrName = "tang.target";
/// The chip whose facts a module without a `tang.target` is compiled for.
constexpr StringLiteral kDefaultChip = "sm_90a";

/// One known chip's facts (the fields of #tang.target; 0: unknown).
struct TargetFacts {
  StringLiteral chip, device;
  int64_t smCount, sharedPerBlock, sharedPerSm, registersPerSm, warpSize,
      maxThreads;
  TensorCoreKind tensorCores;
  bool tma, clusters;
  int64_t l2Bytes, dramBytesPerS, tensorOpsPerS, fp32OpsPerS;
  int64_t vectorBytes = 16;
};

/// Every known chip, oldest first.
ArrayRef<TargetFacts> getKnownTargets();
/// The facts of `chip`, or null when tang does not know it.
const TargetFacts *lookupTarget(StringRef chip);
/// The known chips, comma-separated (for diagnostics).
std::string getKnownChipList();
/// `facts` as an attribute.
TargetAttr getTargetAttr(MLIRContext *ctx, const TargetFacts &facts);
/// The `tang.target` of `op` or of the closest module around it, else the
/// default chip's facts.
TargetAttr getTarget(Operation *op);

} // namespace mlir::tang

#endif // TANG_DIALECT_TANG_IR_TANGTARGETS_H
