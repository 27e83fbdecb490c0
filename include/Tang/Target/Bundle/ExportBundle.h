//===- ExportBundle.h - write a bundle --------------------------*- C++ -*-===//
//
// Writes the kernels of `gpu.binary` ops (or a spirv.module) and the launch
// sequences of the kernel-form host functions to a directory the runtimes
// load without MLIR (format: docs/Bundle.md). --tang-export-bundle
// (Target/Passes.td) runs exportBundle.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_TARGET_BUNDLE_EXPORTBUNDLE_H
#define TANG_TARGET_BUNDLE_EXPORTBUNDLE_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::tang {

/// Writes `module`'s bundle to `dir` (created if needed). Emits a located
/// diagnostic and fails on anything that cannot be exported.
LogicalResult exportBundle(ModuleOp module, StringRef dir);

/// Writes `dir`/manifest.json for the kernel-form host functions of
/// `module` (see docs/Bundle.md): image `image` of format `format`.
LogicalResult writeBundleManifest(ModuleOp module, StringRef dir,
                                  StringRef format, StringRef image,
                                  StringRef chip);

} // namespace mlir::tang

#endif // TANG_TARGET_BUNDLE_EXPORTBUNDLE_H
