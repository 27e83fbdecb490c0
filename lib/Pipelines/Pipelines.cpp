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
  PassPipelineRegistration<TangLowerOpenCLOptions>(
      "tang-lower-opencl",
      "Lower tang to OpenCL C 1.2: (fusion,) the kernel form, the OpenCL C "
      "printer; a bundle with the .cl, or the source on stdout",
      buildTangLowerOpenCLPipeline);
  PassPipelineRegistration<TangLowerCOptions>(
      "tang-lower-c",
      "Lower tang to C11: (fusion,) the kernel form, the C printer (the "
      "OpenCL C printer's bodies) and a launcher per kernel; a bundle with "
      "the .c, or the source on stdout",
      buildTangLowerCPipeline);
  PassPipelineRegistration<TangLowerMetalOptions>(
      "tang-lower-metal",
      "Lower tang to Metal Shading Language: (fusion,) the kernel form, the "
      "printer (the OpenCL C printer's bodies); a bundle with the .metal, or "
      "the source on stdout",
      buildTangLowerMetalPipeline);
  PassPipelineRegistration<TangLowerGLSLOptions>(
      "tang-lower-glsl",
      "Lower tang to GLSL compute shaders: (fusion,) the kernel form, the "
      "printer; a bundle compiled with glslangValidator and spirv-link (run "
      "by the Vulkan host), or the shaders on stdout",
      buildTangLowerGLSLPipeline);
  PassPipelineRegistration<TangLowerWGSLOptions>(
      "tang-lower-wgsl",
      "Lower tang to WGSL (WebGPU compute): (fusion,) the kernel form, the "
      "printer; a bundle with the .wgsl (run by runtime/webgpu on Dawn), or "
      "the source on stdout",
      buildTangLowerWGSLPipeline);
  PassPipelineRegistration<TangLowerCudaOptions>(
      "tang-lower-cuda",
      "Lower tang to CUDA: (fusion,) schedules, the kernel form, NVVM, and "
      "PTX or cubin in a gpu.binary; optionally write a CUDA bundle",
      buildTangLowerCudaPipeline);
}
