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

/// Writes an OpenCL bundle to `dir` (tang_kernels.cl and manifest.json,
/// format "opencl"), or with an empty `dir` prints the OpenCL C to stdout.
std::unique_ptr<Pass> createExportOpenCLBundlePass(std::string dir);

} // namespace mlir::tang

#endif // TANG_TARGET_OPENCL_TRANSLATETOOPENCL_H
