//===- SpirvPipeline.cpp - --tang-lower-spirv -------------------*- C++ -*-===//

#include "Tang/Conversion/Passes.h"
#include "Tang/Pipelines/Pipelines.h"
#include "Tang/Target/CUDA/ExportBundle.h"
#include "Tang/Target/OpenCL/TranslateToOpenCL.h"
#include "Tang/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::tang;

namespace {
/// Gives every kernel the workgroup size SPIR-V entry points declare, from
/// the kernel form's `known_block_size`.
struct AttachSpirvEntryPointsPass
    : PassWrapper<AttachSpirvEntryPointsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AttachSpirvEntryPointsPass)
  StringRef getArgument() const override {
    return "tang-attach-spirv-entry-points";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<spirv::SPIRVDialect>();
  }
  void runOnOperation() override {
    getOperation().walk([&](gpu::GPUFuncOp f) {
      if (!f.isKernel())
        return;
      std::optional<ArrayRef<int32_t>> size = f.getKnownBlockSize();
      if (!size) {
        f.emitOpError() << "has no known_block_size for its SPIR-V entry point";
        return signalPassFailure();
      }
      f->setAttr(spirv::getEntryPointABIAttrName(),
                 spirv::getEntryPointABIAttr(&getContext(), *size));
    });
  }
};
} // namespace

/// (Fusion,) then the kernel form without schedules, for the portable
/// backends: one thread per point (the row kernels' subgroup and
/// workgroup-memory paths are not mapped to SPIR-V storage classes, OpenCL
/// 1.2 has no subgroups, the C launcher runs work items in turn).
/// With `matrixTile`, contractions that fit go on the subgroup matrix
/// operations in tiles of that size, one 32-thread subgroup per tile (f16
/// operands too with `matrixF16`).
static void addPortableKernelForm(OpPassManager &pm, bool fuse,
                                  int64_t matrixTile = 0,
                                  bool matrixF16 = true) {
  if (fuse) {
    pm.addPass(createTangFuse());
    pm.addPass(createTangOnlineSoftmax());
  }
  pm.addPass(createCanonicalizerPass());
  ConvertTangToGPUOptions kernelForm;
  kernelForm.matrixUnits = matrixTile;
  kernelForm.matrixUnitsF16 = matrixF16;
  kernelForm.subgroupSize = 32;
  pm.addPass(createConvertTangToGPU(kernelForm));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

LogicalResult
mlir::tang::buildTangLowerSpirvPipeline(OpPassManager &pm,
                                        const TangLowerSpirvOptions &options) {
  addPortableKernelForm(pm, options.fuse, options.matrixUnits ? 16 : 0);
  pm.addPass(std::make_unique<AttachSpirvEntryPointsPass>());
  // The kernel form -> SPIR-V (Vulkan compute), kernels only.
  std::string caps = options.caps.getValue(),
              exts = "SPV_KHR_storage_buffer_storage_class",
              version = options.version.getValue();
  if (options.matrixUnits) {
    // The cooperative-matrix operations need SPIR-V 1.6; f16 operands load
    // from 16-bit storage.
    caps += ",CooperativeMatrixKHR,VulkanMemoryModel,Float16,"
            "StorageBuffer16BitAccess";
    exts += ",SPV_KHR_cooperative_matrix,SPV_KHR_vulkan_memory_model,"
            "SPV_KHR_16bit_storage";
    version = "v1.6";
  }
  std::string pipeline = "spirv-attach-target{ver=" + version +
                         " caps=" + caps + " exts=" + exts +
                         " client_api=Vulkan},"
                         "gpu.module(lower-affine,convert-math-to-spirv),"
                         "map-memref-spirv-storage-class{client-api=vulkan},"
                         "convert-gpu-to-spirv,"
                         "spirv.module(spirv-lower-abi-attrs,spirv-update-vce)";
  if (failed(parsePassPipeline(pipeline, pm)))
    return failure();
  if (!options.bundle.empty())
    pm.addPass(createExportCudaBundlePass(options.bundle));
  return success();
}

enum class Printed { OpenCL, C, Metal, GLSL, WGSL };

static void buildPrintedPipeline(OpPassManager &pm, bool fuse,
                                 const std::string &bundle, Printed language,
                                 int64_t matrixTile = 0) {
  // Metal's simdgroup products and the C emulation take f32 only.
  addPortableKernelForm(pm, fuse, matrixTile, /*matrixF16=*/false);
  switch (language) {
  case Printed::OpenCL:
    pm.addPass(createExportOpenCLBundlePass(bundle));
    break;
  case Printed::C:
    pm.addPass(createExportCBundlePass(bundle));
    break;
  case Printed::Metal:
    pm.addPass(createExportMetalBundlePass(bundle));
    break;
  case Printed::GLSL:
    pm.addPass(createExportGLSLBundlePass(bundle));
    break;
  case Printed::WGSL:
    pm.addPass(createExportWGSLBundlePass(bundle));
    break;
  }
}

void mlir::tang::buildTangLowerOpenCLPipeline(
    OpPassManager &pm, const TangLowerOpenCLOptions &options) {
  buildPrintedPipeline(pm, options.fuse, options.bundle, Printed::OpenCL);
}

void mlir::tang::buildTangLowerGLSLPipeline(
    OpPassManager &pm, const TangLowerOpenCLOptions &options) {
  buildPrintedPipeline(pm, options.fuse, options.bundle, Printed::GLSL);
}

void mlir::tang::buildTangLowerWGSLPipeline(
    OpPassManager &pm, const TangLowerOpenCLOptions &options) {
  buildPrintedPipeline(pm, options.fuse, options.bundle, Printed::WGSL);
}

void mlir::tang::buildTangLowerMetalPipeline(
    OpPassManager &pm, const TangLowerMetalOptions &options) {
  buildPrintedPipeline(pm, options.fuse, options.bundle, Printed::Metal,
                       options.matrixUnits ? 8 : 0);
}

void mlir::tang::buildTangLowerCPipeline(OpPassManager &pm,
                                         const TangLowerCOptions &options) {
  buildPrintedPipeline(pm, options.fuse, options.bundle, Printed::C,
                       options.matrixUnits);
}
