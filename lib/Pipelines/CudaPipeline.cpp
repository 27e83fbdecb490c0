//===- CudaPipeline.cpp - --tang-lower-cuda ---------------------*- C++ -*-===//

#include "Tang/Conversion/Passes.h"
#include "Tang/Conversion/TangToGPU/TangToGPU.h"
#include "Tang/Dialect/Tang/IR/TangTargets.h"
#include "Tang/Pipelines/Pipelines.h"
#include "Tang/Target/Passes.h"
#include "Tang/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::tang;

/// The CUDA toolkit: the option, else $CUDA_HOME, $CUDA_PATH, or
/// /usr/local/cuda. Kernels calling math functions need its libdevice; PTX
/// without it keeps unresolved `__nv_*` calls (the bundle exporter refuses
/// those with a diagnostic).
static std::string findCudaToolkit(StringRef option) {
  if (!option.empty())
    return option.str();
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *v = std::getenv(var); v && *v)
      return v;
  if (llvm::sys::fs::exists("/usr/local/cuda/nvvm/libdevice"))
    return "/usr/local/cuda";
  return "";
}

void mlir::tang::addTangCudaKernelForm(OpPassManager &pm,
                                       const TangLowerCudaOptions &options) {
  // The device model: chip's facts as the module's tang.target (kept when
  // the module brings its own for that chip), read by the schedule and the
  // kernel form.
  TangAttachTargetOptions target;
  target.chip = options.chip;
  pm.addPass(createTangAttachTarget(target));
  // tang -> tang: fusion and the online-softmax monoid, if asked.
  if (options.fuse) {
    // Scans of matrix states first: their chunks are comprehensions to fuse.
    // With tf32, the chunks' products read plain operands (tensor cores
    // take those).
    TangChunkAffineScanOptions chunk;
    chunk.plainOperands = options.tf32;
    pm.addPass(createTangChunkAffineScan(chunk));
    pm.addPass(createTangFuse());
    pm.addPass(createTangOnlineSoftmax());
    pm.addPass(createTangTriangularScan());
  }
  pm.addPass(createCanonicalizerPass());
  // tang -> tang with schedules that name every kernel and all its
  // parameters, on the target's tensor cores: mma.sync from sm_80 on, wgmma
  // on sm_90a.
  TangScheduleOptions schedule;
  schedule.tileSource = options.tileSource;
  schedule.tensorCores = TensorCoreOption::Target;
  schedule.tma = options.tma;
  schedule.tf32 = options.tf32;
  schedule.warpSpecialize = options.warpSpecialize;
  schedule.cache = options.scheduleCache;
  schedule.candidates = options.scheduleCandidates;
  schedule.maxCandidates = options.scheduleCandidatesMax;
  pm.addPass(createTangSchedule(schedule));
  // tang -> the kernel form (gpu, scf, memref, arith, math; host launches),
  // building what the schedules name.
  ConvertTangToGPUOptions kernelForm;
  kernelForm.tensorCores = TensorCoreOption::Target;
  kernelForm.tma = options.tma;
  kernelForm.tf32 = options.tf32;
  kernelForm.warpSpecialize = options.warpSpecialize;
  kernelForm.splitSoftmaxMma = options.splitSoftmaxMma;
  kernelForm.splitSoftmaxBlocksPerSm = options.splitSoftmaxBlocksPerSm;
  pm.addPass(createConvertTangToGPU(kernelForm));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::tang::buildTangLowerCudaPipeline(
    OpPassManager &pm, const TangLowerCudaOptions &options) {
  if (!llvm::is_contained({"isa", "bin", "fatbin"},
                          options.format.getValue())) {
    pm.addPass(createTangRejectOption(
        {"tang-lower-cuda: format must be isa (PTX), bin (cubin) or fatbin, "
         "got '" +
         options.format.getValue() + "'"}));
    return;
  }
  if (options.chip == kPortableChip) {
    pm.addPass(createTangRejectOption(
        {"tang-lower-cuda: chip 'portable' is the portable backends' device "
         "model (--tang-lower-spirv, -opencl, -glsl, -wgsl, -metal), not a "
         "CUDA chip"}));
    return;
  }
  if (options.optLevel > 3) {
    pm.addPass(createTangRejectOption(
        {"tang-lower-cuda: opt-level must be 0 to 3, got " +
         std::to_string(options.optLevel.getValue())}));
    return;
  }
  addTangCudaKernelForm(pm, options);
  // The kernel form -> NVVM (kernels only: the host sequence stays in the
  // kernel form, where the bundle exporter reads it).
  GpuNVVMAttachTargetOptions nvvmTarget;
  nvvmTarget.chip = options.chip;
  nvvmTarget.features = options.features;
  nvvmTarget.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(nvvmTarget));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addNestedPass<gpu::GPUFuncOp>(createTangFlatBufferParams());
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertNVGPUToNVVMPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true; // One pointer per buffer parameter.
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  kernels.addNestedPass<LLVM::LLVMFuncOp>(createTangTensorMapParams());
  // NVVM ops without an LLVM intrinsic (wgmma) become inline PTX.
  kernels.addPass(createConvertNVVMToLLVMPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  // NVVM -> PTX (or cubin through ptxas).
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  binary.toolkitPath = findCudaToolkit(options.toolkit);
  pm.addPass(createGpuModuleToBinaryPass(binary));
  if (!options.bundle.empty())
    pm.addPass(createTangExportBundle({options.bundle}));
}
