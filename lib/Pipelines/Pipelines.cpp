//===- Pipelines.cpp - registration of tang's pipelines ---------*- C++ -*-===//

#include "Tang/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::tang;

void mlir::tang::registerTangPipelines() {
  PassPipelineRegistration<TangLowerSpirvOptions>(
      "tang-lower-spirv",
      "Lower tang to SPIR-V for Vulkan compute: (fusion,) the kernel form, "
      "convert-gpu-to-spirv; optionally write a bundle with the .spv",
      [](OpPassManager &pm, const TangLowerSpirvOptions &options) {
        return buildTangLowerSpirvPipeline(pm, options);
      });
  PassPipelineRegistration<TangLowerCudaOptions>(
      "tang-lower-cuda",
      "Lower tang to CUDA: (fusion,) schedules, the kernel form, NVVM, and "
      "PTX or cubin in a gpu.binary; optionally write a CUDA bundle",
      buildTangLowerCudaPipeline);
}
