//===- TangToGPU.h - the kernel form ----------------------------*- C++ -*-===//

#ifndef TANG_CONVERSION_TANGTOGPU_TANGTOGPU_H
#define TANG_CONVERSION_TANGTOGPU_TANGTOGPU_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tang {

/// The tensor-core kernels --convert-tang-to-gpu builds (tensor-cores=).
enum class TensorCoreOption { None, MmaSync, Wgmma, Target };

#define GEN_PASS_DECL_CONVERTTANGTOGPU
#include "Tang/Conversion/Passes.h.inc"

/// The attribute on a kernel naming its tensor-map parameters (an i64
/// array of parameter positions): the CUDA pipeline passes them by value,
/// 64-byte aligned, as grid constants (--tang-tensor-map-params).
inline constexpr StringLiteral kTensorMapParamsAttrName =
    "tang.tensor_map_params";

} // namespace mlir::tang

#endif // TANG_CONVERSION_TANGTOGPU_TANGTOGPU_H
