//===- TranslateToOpenCL.h - the kernel form as OpenCL C --------*- C++ -*-===//

#ifndef TANG_TARGET_OPENCL_TRANSLATETOOPENCL_H
#define TANG_TARGET_OPENCL_TRANSLATETOOPENCL_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tang {

/// Prints the kernels of `kernels` (the kernel form) as OpenCL C 1.2.
LogicalResult translateKernelsToOpenCL(gpu::GPUModuleOp kernels,
                                       raw_ostream &os);

/// Prints the kernels of `kernels` as C11: each kernel a function of the
/// work-item ids, and `tang_launch_<kernel>(grid, block, args)` running
/// every work item of a launch in turn (kernels without barriers only).
LogicalResult translateKernelsToC(gpu::GPUModuleOp kernels, raw_ostream &os);

/// Writes a C bundle (tang_kernels.c and manifest.json, format "c"), or
/// with an empty `dir` prints the C to stdout.
std::unique_ptr<Pass> createExportCBundlePass(std::string dir);

/// Prints the kernels of `kernels` as Metal Shading Language compute
/// kernels (buffers bound in parameter order, work-item ids from the
/// position attributes).
LogicalResult translateKernelsToMetal(gpu::GPUModuleOp kernels,
                                      raw_ostream &os);

/// Writes a Metal bundle (tang_kernels.metal and manifest.json, format
/// "metal"), or with an empty `dir` prints the MSL to stdout.
std::unique_ptr<Pass> createExportMetalBundlePass(std::string dir);

/// Prints each kernel of `kernels` as a GLSL 4.50 compute shader: (kernel
/// name, source) pairs.
LogicalResult translateKernelsToGLSL(
    gpu::GPUModuleOp kernels,
    SmallVectorImpl<std::pair<std::string, std::string>> &shaders);

/// Writes a GLSL bundle: <kernel>.comp per kernel, compiled with
/// glslangValidator and linked with spirv-link into tang_kernels.spv, and a
/// SPIR-V manifest (the Vulkan host runs it); with an empty `dir` prints the
/// shaders to stdout.
std::unique_ptr<Pass> createExportGLSLBundlePass(std::string dir);

/// Prints the kernels of `kernels` as one WGSL module: an entry point per
/// kernel, its buffers storage variables in group 0 bound in parameter
/// order (32-bit indices; f16 through `enable f16`).
LogicalResult translateKernelsToWGSL(gpu::GPUModuleOp kernels, raw_ostream &os);

/// Writes a WGSL bundle (tang_kernels.wgsl and manifest.json, format
/// "wgsl"; runtime/webgpu runs it), or with an empty `dir` prints the WGSL
/// to stdout.
std::unique_ptr<Pass> createExportWGSLBundlePass(std::string dir);

/// Writes an OpenCL bundle to `dir` (tang_kernels.cl and manifest.json,
/// format "opencl"), or with an empty `dir` prints the OpenCL C to stdout.
std::unique_ptr<Pass> createExportOpenCLBundlePass(std::string dir);

} // namespace mlir::tang

#endif // TANG_TARGET_OPENCL_TRANSLATETOOPENCL_H
