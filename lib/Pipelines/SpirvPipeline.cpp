//===- SpirvPipeline.cpp - --tang-lower-spirv -------------------*- C++ -*-===//

#include "Tang/Conversion/Passes.h"
#include "Tang/Pipelines/Pipelines.h"
#include "Tang/Target/CUDA/ExportBundle.h"
#include "Tang/Target/OpenCL/TranslateToOpenCL.h"
#include "Tang/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

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

/// The portable targets whose types are checked on the program as written.
enum class TypedTarget { Spirv, GLSL, WGSL };

/// Why `target` (SPIR-V with the capabilities `caps`) cannot hold or
/// compute scalars of type `t`; empty when it can.
std::string whyUnsupported(TypedTarget target, Type t,
                           const llvm::StringSet<> &caps) {
  std::string why;
  llvm::raw_string_ostream os(why);
  bool is32 = t.isF32() || t.isSignlessInteger(32) || t.isSignlessInteger(1) ||
              t.isIndex();
  if (is32)
    return why;
  if (target == TypedTarget::GLSL) {
    os << "uses '" << t
       << "', which the GLSL target does not support yet (32-bit int and "
          "float, bool)";
    return why;
  }
  if (target == TypedTarget::WGSL) {
    if (!t.isF16())
      os << "uses '" << t
         << "', which WGSL does not have (32-bit int, f32, f16 and bool "
            "only)";
    return why;
  }
  if (t.isBF16()) {
    os << "uses 'bf16', which the SPIR-V target does not have (no bfloat16 "
          "type in Vulkan compute here); store the program in f16 or f32";
    return why;
  }
  // Each type the SPIR-V target holds as itself, given the capabilities
  // that it needs: without them the upstream conversion would silently
  // widen 8- and 16-bit buffers to 32-bit elements, or fail on an op the
  // program does not contain.
  SmallVector<StringRef, 2> needs;
  if (t.isF16())
    needs = {"Float16", "StorageBuffer16BitAccess"};
  else if (t.isF64())
    needs = {"Float64"};
  else if (t.isSignlessInteger(64))
    needs = {"Int64"};
  else if (t.isSignlessInteger(16))
    needs = {"Int16", "StorageBuffer16BitAccess"};
  else if (t.isSignlessInteger(8))
    needs = {"Int8", "StorageBuffer8BitAccess"};
  else {
    os << "uses '" << t << "', which the SPIR-V target does not support";
    return why;
  }
  if (llvm::all_of(needs, [&](StringRef c) { return caps.contains(c); }))
    return why;
  os << "uses '" << t << "', which needs the SPIR-V capabilit"
     << (needs.size() == 1 ? "y " : "ies ") << llvm::join(needs, " and ")
     << " (add " << (needs.size() == 1 ? "it" : "them") << " to caps=)";
  return why;
}

/// Refuses, before any lowering, a program with scalar types the target
/// does not have: the diagnostic names the operation or argument the user
/// wrote (a tang.index of i64, an f16 argument), not an operation of the
/// kernel form or a failed legalisation; once per type, where it first
/// appears.
struct CheckTargetTypesPass
    : PassWrapper<CheckTargetTypesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckTargetTypesPass)
  CheckTargetTypesPass(TypedTarget target, StringRef caps) : target(target) {
    SmallVector<StringRef> list;
    caps.split(list, ',', -1, /*KeepEmpty=*/false);
    for (StringRef c : list)
      this->caps.insert(c.trim());
  }
  StringRef getArgument() const override { return "tang-check-target-types"; }
  void runOnOperation() override {
    llvm::DenseSet<Type> refused;
    auto check = [&](Type t, function_ref<InFlightDiagnostic()> emit) {
      t = getElementTypeOrSelf(t);
      if (refused.contains(t))
        return false;
      std::string why = whyUnsupported(target, t, caps);
      if (why.empty())
        return false;
      emit() << why;
      refused.insert(t);
      return true;
    };
    getOperation()->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::GPUModuleOp>(op))
        return WalkResult::skip();
      if (auto f = dyn_cast<func::FuncOp>(op)) {
        for (BlockArgument a : f.getArguments())
          check(a.getType(), [&] {
            return emitError(a.getLoc()) << "argument #" << a.getArgNumber()
                                         << " of @" << f.getName() << " ";
          });
        for (Type t : f.getResultTypes())
          if (check(t, [&] { return f.emitOpError() << "result "; }))
            break;
        return WalkResult::advance();
      }
      for (Type t : op->getResultTypes())
        if (check(t, [&] { return op->emitOpError(); }))
          return WalkResult::advance();
      for (Region &r : op->getRegions())
        for (Block &b : r)
          for (BlockArgument a : b.getArguments())
            if (check(a.getType(), [&] { return op->emitOpError(); }))
              return WalkResult::advance();
      return WalkResult::advance();
    });
    if (!refused.empty())
      signalPassFailure();
  }
  TypedTarget target;
  llvm::StringSet<> caps;
};

// Pattern: sitofp(index_cast(x : index to i64)) -> sitofp(index_cast(x :
// index to i32)) on a 32-bit index target, where x has 32 bits anyway.
struct SIToFP_NarrowIndexCast : OpRewritePattern<arith::SIToFPOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::SIToFPOp op,
                                PatternRewriter &rewriter) const override {
    auto cast = op.getIn().getDefiningOp<arith::IndexCastOp>();
    if (!cast || !cast.getIn().getType().isIndex() ||
        !cast.getType().isSignlessInteger(64))
      return rewriter.notifyMatchFailure(op, "not an index cast to i64");
    Value narrow = arith::IndexCastOp::create(
        rewriter, cast.getLoc(), rewriter.getI32Type(), cast.getIn());
    rewriter.replaceOpWithNewOp<arith::SIToFPOp>(op, op.getType(), narrow);
    return success();
  }
};

// Pattern: cmpf false/true (a, b) -> constant false/true (upstream's SPIR-V
// conversion has no pattern for the constant predicates).
struct CmpF_ConstantPredicate : OpRewritePattern<arith::CmpFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::CmpFOp op,
                                PatternRewriter &rewriter) const override {
    arith::CmpFPredicate p = op.getPredicate();
    if (p != arith::CmpFPredicate::AlwaysFalse &&
        p != arith::CmpFPredicate::AlwaysTrue)
      return rewriter.notifyMatchFailure(op, "not a constant predicate");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, rewriter.getBoolAttr(p == arith::CmpFPredicate::AlwaysTrue));
    return success();
  }
};

/// Rewrites the kernels of the kernel form for a target with 32-bit
/// indices and no 64-bit integers needed (SPIR-V, GLSL, WGSL): a float
/// computed from an index (tang.index : f32) converts it through i32, not
/// i64; constant float compares become constants.
struct Narrow32BitKernelsPass
    : PassWrapper<Narrow32BitKernelsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Narrow32BitKernelsPass)
  StringRef getArgument() const override {
    return "tang-narrow-32-bit-kernels";
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SIToFP_NarrowIndexCast, CmpF_ConstantPredicate>(&getContext());
    FrozenRewritePatternSet frozen(std::move(patterns));
    for (auto kernels : getOperation().getOps<gpu::GPUModuleOp>())
      if (failed(applyPatternsGreedily(kernels, frozen)))
        return signalPassFailure();
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
  std::string caps = options.caps.getValue(),
              exts = "SPV_KHR_storage_buffer_storage_class,"
                     "SPV_KHR_16bit_storage",
              version = options.version.getValue();
  pm.addPass(std::make_unique<CheckTargetTypesPass>(TypedTarget::Spirv, caps));
  addPortableKernelForm(pm, options.fuse, options.matrixUnits ? 16 : 0);
  pm.addPass(std::make_unique<Narrow32BitKernelsPass>());
  pm.addPass(std::make_unique<AttachSpirvEntryPointsPass>());
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
  if (language == Printed::GLSL || language == Printed::WGSL)
    pm.addPass(std::make_unique<CheckTargetTypesPass>(
        language == Printed::GLSL ? TypedTarget::GLSL : TypedTarget::WGSL, ""));
  // Metal's simdgroup products and the C emulation take f32 only.
  addPortableKernelForm(pm, fuse, matrixTile, /*matrixF16=*/false);
  // GLSL and WGSL index with 32-bit ints and have no 64-bit ones.
  if (language == Printed::GLSL || language == Printed::WGSL)
    pm.addPass(std::make_unique<Narrow32BitKernelsPass>());
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
    OpPassManager &pm, const TangLowerGLSLOptions &options) {
  buildPrintedPipeline(pm, options.fuse, options.bundle, Printed::GLSL);
}

void mlir::tang::buildTangLowerWGSLPipeline(
    OpPassManager &pm, const TangLowerWGSLOptions &options) {
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
