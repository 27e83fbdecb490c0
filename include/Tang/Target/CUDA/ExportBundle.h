//===- ExportBundle.h - write a CUDA bundle ---------------------*- C++ -*-===//
//
// Writes the kernels of `gpu.binary` ops and the launch sequences of the
// kernel-form host functions to a directory the CUDA runtime loads without
// MLIR (format: docs/CudaBundle.md).
//
//===----------------------------------------------------------------------===//

#ifndef TANG_TARGET_CUDA_EXPORTBUNDLE_H
#define TANG_TARGET_CUDA_EXPORTBUNDLE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tang {

/// Writes `module`'s bundle to `dir` (created if needed). Emits a located
/// diagnostic and fails on anything that cannot be exported.
LogicalResult exportCudaBundle(ModuleOp module, StringRef dir);

/// A pass running exportCudaBundle on the module.
std::unique_ptr<Pass> createExportCudaBundlePass(std::string dir);

/// Writes `dir`/manifest.json for the kernel-form host functions of
/// `module` (see docs/CudaBundle.md): image `image` of format `format`.
LogicalResult writeBundleManifest(ModuleOp module, StringRef dir,
                                  StringRef format, StringRef image,
                                  StringRef chip);

} // namespace mlir::tang

#endif // TANG_TARGET_CUDA_EXPORTBUNDLE_H
