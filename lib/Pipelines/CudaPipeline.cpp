//===- CudaPipeline.cpp - --tang-lower-cuda ---------------------*- C++ -*-===//

#include "Tang/Conversion/Passes.h"
#include "Tang/Conversion/TangToGPU/TangToGPU.h"
#include "Tang/Pipelines/Pipelines.h"
#include "Tang/Target/CUDA/ExportBundle.h"
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

namespace {
/// Fails the pipeline with a diagnostic naming a bad option (a pipeline
/// builder cannot fail by itself).
struct RejectOptionPass
    : PassWrapper<RejectOptionPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RejectOptionPass)
  explicit RejectOptionPass(std::string message)
      : message(std::move(message)) {}
  StringRef getArgument() const override { return "tang-reject-option"; }
  void runOnOperation() override {
    getOperation().emitError() << "tang-lower-cuda: " << message;
    signalPassFailure();
  }
  std::string message;
};

/// Passes the tensor-map parameters of kernels (named by the kernel form's
/// `tang.tensor_map_params`) by value: 128 bytes, 64-byte aligned, as grid
/// constants, so that their generic address is the parameter's own (what
/// cp.async.bulk.tensor expects of a CUtensorMap kernel parameter).
struct TensorMapParamsPass
    : PassWrapper<TensorMapParamsPass, OperationPass<LLVM::LLVMFuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TensorMapParamsPass)
  StringRef getArgument() const override { return "tang-tensor-map-params"; }
  void runOnOperation() override {
    LLVM::LLVMFuncOp func = getOperation();
    auto params =
        func->getAttrOfType<DenseI64ArrayAttr>(kTensorMapParamsAttrName);
    if (!params)
      return;
    MLIRContext *ctx = &getContext();
    Builder b(ctx);
    for (int64_t i : params.asArrayRef()) {
      if (i < 0 || i >= func.getNumArguments() ||
          !isa<LLVM::LLVMPointerType>(func.getArgumentTypes()[i])) {
        func.emitOpError() << "has no pointer parameter #" << i
                           << " for a tensor map";
        return signalPassFailure();
      }
      func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                      TypeAttr::get(LLVM::LLVMArrayType::get(
                          IntegerType::get(ctx, 8), 128)));
      func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                      b.getI64IntegerAttr(64));
      func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                      b.getUnitAttr());
    }
    func->removeAttr(kTensorMapParamsAttrName);
  }
};
} // namespace

void mlir::tang::buildTangLowerCudaPipeline(
    OpPassManager &pm, const TangLowerCudaOptions &options) {
  if (!llvm::is_contained({"isa", "bin", "fatbin"},
                          options.format.getValue())) {
    pm.addPass(std::make_unique<RejectOptionPass>(
        "format must be isa (PTX), bin (cubin) or fatbin, got '" +
        options.format.getValue() + "'"));
    return;
  }
  if (options.optLevel > 3) {
    pm.addPass(std::make_unique<RejectOptionPass>(
        "opt-level must be 0 to 3, got " +
        std::to_string(options.optLevel.getValue())));
    return;
  }
  // The device model: chip's facts as the module's tang.target (kept when
  // the module brings its own for that chip), read by the schedule and the
  // kernel form.
  TangAttachTargetOptions target;
  target.chip = options.chip;
  pm.addPass(createTangAttachTarget(target));
  // tang -> tang: fusion and the online-softmax monoid, if asked.
  if (options.fuse) {
    pm.addPass(createTangFuse());
    pm.addPass(createTangOnlineSoftmax());
  }
  pm.addPass(createCanonicalizerPass());
  // tang -> tang with schedules.
  TangScheduleOptions schedule;
  schedule.tileSource = options.tileSource;
  pm.addPass(createTangSchedule(schedule));
  // tang -> the kernel form (gpu, scf, memref, arith, math; host launches),
  // on the target's tensor cores: mma.sync from sm_80 on, wgmma on sm_90a.
  ConvertTangToGPUOptions kernelForm;
  kernelForm.tensorCores = "target";
  kernelForm.tma = options.tma;
  kernelForm.tf32 = options.tf32;
  kernelForm.warpSpecialize = options.warpSpecialize;
  pm.addPass(createConvertTangToGPU(kernelForm));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // The kernel form -> NVVM (kernels only: the host sequence stays in the
  // kernel form, where the bundle exporter reads it).
  GpuNVVMAttachTargetOptions nvvmTarget;
  nvvmTarget.chip = options.chip;
  nvvmTarget.features = options.features;
  nvvmTarget.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(nvvmTarget));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertNVGPUToNVVMPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true; // One pointer per buffer parameter.
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  kernels.addNestedPass<LLVM::LLVMFuncOp>(
      std::make_unique<TensorMapParamsPass>());
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
    pm.addPass(createExportCudaBundlePass(options.bundle));
}
