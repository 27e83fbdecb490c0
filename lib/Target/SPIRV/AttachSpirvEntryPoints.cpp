//===- AttachSpirvEntryPoints.cpp - SPIR-V entry points ---------*- C++ -*-===//
//
// Gives every kernel the workgroup size its SPIR-V entry point declares,
// from the kernel form's `known_block_size`, and its workgroup attributions
// as allocations in the Workgroup storage class.
//
//===----------------------------------------------------------------------===//

#include "Tang/Target/Passes.h"
#include "llvm/Support/Debug.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGATTACHSPIRVENTRYPOINTS
#include "Tang/Target/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-attach-spirv-entry-points"

using namespace mlir;
using namespace mlir::tang;

namespace {

struct TangAttachSpirvEntryPointsPass
    : tang::impl::TangAttachSpirvEntryPointsBase<
          TangAttachSpirvEntryPointsPass> {
  using TangAttachSpirvEntryPointsBase::TangAttachSpirvEntryPointsBase;

  /// `f`'s workgroup attributions as memref.alloc ops of the Workgroup
  /// storage class at its start (upstream's GPU-to-SPIR-V conversion makes
  /// those Workgroup variables; it refuses attributions).
  static void moveWorkgroupAttributions(gpu::GPUFuncOp f) {
    unsigned n = f.getNumWorkgroupAttributions();
    if (!n)
      return;
    Block &entry = f.getBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    auto workgroup = spirv::StorageClassAttr::get(
        f.getContext(), spirv::StorageClass::Workgroup);
    for (BlockArgument arg : f.getWorkgroupAttributions()) {
      auto t = cast<MemRefType>(arg.getType());
      Value alloc = memref::AllocOp::create(
          b, arg.getLoc(),
          MemRefType::get(t.getShape(), t.getElementType(), t.getLayout(),
                          workgroup));
      arg.replaceAllUsesWith(alloc);
    }
    entry.eraseArguments(f.getFirstWorkgroupAttributionIndex(), n);
    f->setAttr(f.getNumWorkgroupAttributionsAttrName(), b.getI64IntegerAttr(0));
  }

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
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
      moveWorkgroupAttributions(f);
    });
  }
};

} // namespace
