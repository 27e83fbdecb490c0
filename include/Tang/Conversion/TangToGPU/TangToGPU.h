//===- TangToGPU.h - the kernel form ----------------------------*- C++ -*-===//

#ifndef TANG_CONVERSION_TANGTOGPU_TANGTOGPU_H
#define TANG_CONVERSION_TANGTOGPU_TANGTOGPU_H

#include "Tang/Analysis/KernelChoice.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tang {

#define GEN_PASS_DECL_CONVERTTANGTOGPU
#include "Tang/Conversion/Passes.h.inc"

} // namespace mlir::tang

#endif // TANG_CONVERSION_TANGTOGPU_TANGTOGPU_H
