//===- Passes.h - conversions into and out of tang --------------*- C++ -*-===//

#ifndef TANG_CONVERSION_PASSES_H
#define TANG_CONVERSION_PASSES_H

#include "Tang/Conversion/LinalgToTang/LinalgToTang.h"
#include "Tang/Conversion/TangToGPU/TangToGPU.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tang {

#define GEN_PASS_REGISTRATION
#include "Tang/Conversion/Passes.h.inc"

} // namespace mlir::tang

#endif // TANG_CONVERSION_PASSES_H
