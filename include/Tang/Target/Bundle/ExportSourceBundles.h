//===- ExportSourceBundles.h - bundles of printed kernels -------*- C++ -*-===//
//
// The passes that write the text backends' bundles (docs/CudaBundle.md
// describes the manifest every bundle shares).
//
//===----------------------------------------------------------------------===//

#ifndef TANG_TARGET_BUNDLE_EXPORTSOURCEBUNDLES_H
#define TANG_TARGET_BUNDLE_EXPORTSOURCEBUNDLES_H

#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace mlir::tang {

/// Writes a C bundle (tang_kernels.c and manifest.json, format "c"), or
/// with an empty `dir` prints the C to stdout.
std::unique_ptr<Pass> createExportCBundlePass(std::string dir);

/// Writes a Metal bundle (tang_kernels.metal and manifest.json, format
/// "metal"), or with an empty `dir` prints the MSL to stdout.
std::unique_ptr<Pass> createExportMetalBundlePass(std::string dir);

/// Writes a GLSL bundle: <kernel>.comp per kernel, compiled with
/// glslangValidator and linked with spirv-link into tang_kernels.spv, and a
/// SPIR-V manifest (the Vulkan host runs it); with an empty `dir` prints the
/// shaders to stdout.
std::unique_ptr<Pass> createExportGLSLBundlePass(std::string dir);

/// Writes a WGSL bundle (tang_kernels.wgsl and manifest.json, format
/// "wgsl"; runtime/webgpu runs it), or with an empty `dir` prints the WGSL
/// to stdout.
std::unique_ptr<Pass> createExportWGSLBundlePass(std::string dir);

/// Writes an OpenCL bundle to `dir` (tang_kernels.cl and manifest.json,
/// format "opencl"), or with an empty `dir` prints the OpenCL C to stdout.
std::unique_ptr<Pass> createExportOpenCLBundlePass(std::string dir);

} // namespace mlir::tang

#endif // TANG_TARGET_BUNDLE_EXPORTSOURCEBUNDLES_H
