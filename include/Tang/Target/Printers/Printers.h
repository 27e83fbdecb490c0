//===- Printers.h - the kernel form as source text --------------*- C++ -*-===//
//
// The text backends' printers (lib/Target/Printers: a shared base and one
// file per language). Each reads a gpu.module of the kernel form, after the
// passes its language needs (--tang-narrow-32-bit-kernels for GLSL and
// WGSL), and changes nothing. `tang-translate --to-<language>` and the
// bundle writers (Target/Bundle) call them.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_TARGET_PRINTERS_PRINTERS_H
#define TANG_TARGET_PRINTERS_PRINTERS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <string>
#include <utility>

namespace mlir::tang {

/// Prints the kernels of `kernels` (the kernel form) as OpenCL C 1.2.
LogicalResult translateKernelsToOpenCL(gpu::GPUModuleOp kernels,
                                       raw_ostream &os);

/// Prints the kernels of `kernels` as C11: each kernel a function of the
/// work-item ids, and `tang_launch_<kernel>(grid, block, args)` running
/// every work item of a launch in turn (kernels without barriers only).
LogicalResult translateKernelsToC(gpu::GPUModuleOp kernels, raw_ostream &os);

/// Prints the kernels of `kernels` as Metal Shading Language compute
/// kernels (buffers bound in parameter order, work-item ids from the
/// position attributes).
LogicalResult translateKernelsToMetal(gpu::GPUModuleOp kernels,
                                      raw_ostream &os);

/// Prints each kernel of `kernels` as a GLSL 4.50 compute shader: (kernel
/// name, source) pairs.
LogicalResult translateKernelsToGLSL(
    gpu::GPUModuleOp kernels,
    SmallVectorImpl<std::pair<std::string, std::string>> &shaders);

/// Prints the kernels of `kernels` as one WGSL module: an entry point per
/// kernel, its buffers storage variables in group 0 bound in parameter
/// order (32-bit indices; f16 through `enable f16`).
LogicalResult translateKernelsToWGSL(gpu::GPUModuleOp kernels, raw_ostream &os);

} // namespace mlir::tang

#endif // TANG_TARGET_PRINTERS_PRINTERS_H
