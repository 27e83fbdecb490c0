//===- SpirvPipeline.cpp - --tang-lower-spirv -------------------*- C++ -*-===//

#include "Tang/Conversion/Passes.h"
#include "Tang/Dialect/Tang/IR/TangTargets.h"
#include "Tang/Pipelines/Pipelines.h"
#include "Tang/Target/Passes.h"
#include "Tang/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::tang;

/// (Fusion,) then the kernel form for the portable backends. With
/// `rowKernels`, schedules from the portable device model (#tang.target
/// chip "portable": no subgroup size assumed, 256 threads, scalar
/// accesses): row kernels whose threads combine in workgroup memory, the
/// rest one thread per point; without, no schedules: one thread per point
/// (the C launcher, which runs work items in turn, has no barriers).
/// With `matrixTile`, contractions that fit go on the subgroup matrix
/// operations in tiles of that size, one 32-thread subgroup per tile (f16
/// operands too with `matrixF16`).
static void addPortableKernelForm(OpPassManager &pm, bool fuse, bool rowKernels,
                                  int64_t matrixTile = 0, bool matrixF16 = true,
                                  int64_t vectorBytes = 0) {
  if (rowKernels) {
    TangAttachTargetOptions target;
    target.chip = kPortableChip.str();
    target.vectorBytes = vectorBytes;
    pm.addPass(createTangAttachTarget(target));
  }
  if (fuse) {
    // Scans of matrix states first: their chunks are comprehensions to fuse.
    pm.addPass(createTangChunkAffineScan());
    pm.addPass(createTangFuse());
    pm.addPass(createTangOnlineSoftmax());
    pm.addPass(createTangTriangularScan());
  }
  pm.addPass(createCanonicalizerPass());
  if (rowKernels)
    pm.addPass(createTangSchedule());
  ConvertTangToGPUOptions kernelForm;
  kernelForm.matrixUnits = matrixTile;
  kernelForm.matrixUnitsF16 = matrixF16;
  kernelForm.subgroupSize = 32;
  kernelForm.cooperative = false;
  pm.addPass(createConvertTangToGPU(kernelForm));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

LogicalResult
mlir::tang::buildTangLowerSpirvPipeline(OpPassManager &pm,
                                        const TangLowerSpirvOptions &options) {
  std::string caps = options.caps.getValue(),
              exts = "SPV_KHR_storage_buffer_storage_class,"
                     "SPV_KHR_16bit_storage",
              version = options.version.getValue();
  TangCheckTargetTypesOptions types;
  types.target = PortableTarget::Spirv;
  types.caps = caps;
  pm.addPass(createTangCheckTargetTypes(types));
  // Accesses of up to 8 bytes (4 halves): vector loads and stores through
  // aliases of the buffers (tang-spirv-alias-vector-access, below); SPIR-V
  // vectors of 16-bit elements stop at 4.
  addPortableKernelForm(pm, options.fuse, options.rowKernels,
                        options.matrixUnits ? 16 : 0, /*matrixF16=*/true,
                        /*vectorBytes=*/8);
  pm.addPass(createTangNarrow32BitKernels());
  pm.addPass(createTangAttachSpirvEntryPoints());
  // The kernel form -> SPIR-V (Vulkan compute), kernels only. The module
  // declares only the capabilities it uses (spirv-update-vce): f16 buffers
  // as 16-bit storage, computed in f32 (the kernel form's compute type).
  if (options.matrixUnits) {
    // The cooperative-matrix operations need SPIR-V 1.6; f16 operands load
    // from 16-bit storage.
    caps += ",CooperativeMatrixKHR,VulkanMemoryModel,Float16,"
            "StorageBuffer16BitAccess";
    exts += ",SPV_KHR_cooperative_matrix,SPV_KHR_vulkan_memory_model,"
            "SPV_KHR_16bit_storage";
    version = "v1.6";
  }
  std::string pipeline =
      "spirv-attach-target{ver=" + version + " caps=" + caps + " exts=" + exts +
      " client_api=Vulkan},"
      "gpu.module(lower-affine,convert-math-to-spirv),"
      "map-memref-spirv-storage-class{client-api=vulkan},"
      "convert-gpu-to-spirv,"
      "spirv.module(spirv-lower-abi-attrs,tang-spirv-alias-vector-access,"
      "spirv-update-vce)";
  if (failed(parsePassPipeline(pipeline, pm)))
    return failure();
  if (!options.bundle.empty())
    pm.addPass(createTangExportBundle({options.bundle}));
  return success();
}

enum class Printed { OpenCL, C, Metal, GLSL, WGSL };

static void buildPrintedPipeline(OpPassManager &pm, bool fuse,
                                 const std::string &bundle, Printed language,
                                 bool rowKernels, int64_t matrixTile = 0) {
  if (language == Printed::GLSL || language == Printed::WGSL) {
    TangCheckTargetTypesOptions types;
    types.target =
        language == Printed::GLSL ? PortableTarget::GLSL : PortableTarget::WGSL;
    pm.addPass(createTangCheckTargetTypes(types));
  }
  // Metal's simdgroup products and the C emulation take f32 only.
  addPortableKernelForm(pm, fuse, rowKernels, matrixTile,
                        /*matrixF16=*/false);
  // GLSL and WGSL index with 32-bit ints and have no 64-bit ones.
  if (language == Printed::GLSL || language == Printed::WGSL)
    pm.addPass(createTangNarrow32BitKernels());
  if (language == Printed::GLSL) {
    pm.addPass(createTangExportGLSLBundle({bundle}));
    return;
  }
  TangExportSourceBundleOptions source;
  source.dir = bundle;
  source.language = language == Printed::C       ? SourceLanguage::C
                    : language == Printed::Metal ? SourceLanguage::Metal
                    : language == Printed::WGSL  ? SourceLanguage::WGSL
                                                 : SourceLanguage::OpenCL;
  pm.addPass(createTangExportSourceBundle(source));
}

void mlir::tang::buildTangLowerOpenCLPipeline(
    OpPassManager &pm, const TangLowerOpenCLOptions &options) {
  buildPrintedPipeline(pm, options.fuse, options.bundle, Printed::OpenCL,
                       options.rowKernels);
}

void mlir::tang::buildTangLowerGLSLPipeline(
    OpPassManager &pm, const TangLowerGLSLOptions &options) {
  buildPrintedPipeline(pm, options.fuse, options.bundle, Printed::GLSL,
                       options.rowKernels);
}

void mlir::tang::buildTangLowerWGSLPipeline(
    OpPassManager &pm, const TangLowerWGSLOptions &options) {
  buildPrintedPipeline(pm, options.fuse, options.bundle, Printed::WGSL,
                       options.rowKernels);
}

void mlir::tang::buildTangLowerMetalPipeline(
    OpPassManager &pm, const TangLowerMetalOptions &options) {
  buildPrintedPipeline(pm, options.fuse, options.bundle, Printed::Metal,
                       options.rowKernels, options.matrixUnits ? 8 : 0);
}

void mlir::tang::buildTangLowerCPipeline(OpPassManager &pm,
                                         const TangLowerCOptions &options) {
  buildPrintedPipeline(pm, options.fuse, options.bundle, Printed::C,
                       /*rowKernels=*/false, options.matrixUnits);
}
