//===- Passes.h - preparing the kernel form for a target --------*- C++ -*-===//

#ifndef TANG_TARGET_PASSES_H
#define TANG_TARGET_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tang {

/// The portable targets whose scalar types --tang-check-target-types checks.
enum class PortableTarget { Spirv, GLSL, WGSL };

/// The languages of --tang-export-source-bundle.
enum class SourceLanguage { OpenCL, C, Metal, WGSL };

#define GEN_PASS_DECL
#include "Tang/Target/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Tang/Target/Passes.h.inc"

} // namespace mlir::tang

#endif // TANG_TARGET_PASSES_H
