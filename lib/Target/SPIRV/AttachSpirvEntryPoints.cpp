//===- AttachSpirvEntryPoints.cpp - SPIR-V entry points ---------*- C++ -*-===//
//
// Gives every kernel the workgroup size its SPIR-V entry point declares,
// from the kernel form's `known_block_size`, and its workgroup attributions
// as allocations in the Workgroup storage class.
//
//===----------------------------------------------------------------------===//

#include "Tang/Target/Passes.h"
#include "llvm/Support/Debug.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

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

  /// Every scf.for of `f` with results and no constant trip count of at
  /// least one inside an scf.if(lower < upper) that otherwise yields the
  /// initial values: MLIR 22's SCF-to-SPIR-V conversion stores a loop's
  /// results only in its body, so a loop that runs no iteration returns
  /// undefined values (llvm-project#211981; a row kernel's threads past
  /// the end of a row run none).
  static void guardZeroTripLoops(gpu::GPUFuncOp f) {
    SmallVector<scf::ForOp> loops;
    f.walk([&](scf::ForOp l) {
      if (l.getNumResults())
        loops.push_back(l);
    });
    for (scf::ForOp l : loops) {
      std::optional<int64_t> lb = getConstantIntValue(l.getLowerBound()),
                             ub = getConstantIntValue(l.getUpperBound());
      if (lb && ub && *lb < *ub)
        continue;
      Location loc = l.getLoc();
      OpBuilder b(l);
      Value runs = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                         l.getLowerBound(), l.getUpperBound());
      auto guard = scf::IfOp::create(b, loc, l.getResultTypes(), runs,
                                     /*withElseRegion=*/true);
      l.getResults().replaceAllUsesWith(guard.getResults());
      Block &then = guard.getThenRegion().front();
      l->moveBefore(&then, then.end());
      OpBuilder tb = OpBuilder::atBlockEnd(&then);
      scf::YieldOp::create(tb, loc, l.getResults());
      OpBuilder eb = OpBuilder::atBlockEnd(&guard.getElseRegion().front());
      scf::YieldOp::create(eb, loc, l.getInitArgs());
    }
  }

  /// Every arith.select of vectors on a scalar condition selects on the
  /// condition broadcast to the vectors' shape: SPIR-V before 1.4 takes
  /// only a condition of the operands' shape (upstream's arith-to-SPIR-V
  /// conversion refuses the scalar one). Vector point kernels select whole
  /// vectors on a gathered index's bound.
  static void broadcastSelectConditions(gpu::GPUFuncOp f) {
    SmallVector<arith::SelectOp> selects;
    f.walk([&](arith::SelectOp s) {
      if (isa<VectorType>(s.getType()) &&
          s.getCondition().getType().isInteger(1))
        selects.push_back(s);
    });
    for (arith::SelectOp s : selects) {
      auto vt = cast<VectorType>(s.getType());
      OpBuilder b(s);
      Value cond = vector::BroadcastOp::create(
          b, s.getLoc(), VectorType::get(vt.getShape(), b.getI1Type()),
          s.getCondition());
      s.getConditionMutable().assign(cond);
    }
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
      guardZeroTripLoops(f);
      broadcastSelectConditions(f);
    });
  }
};

} // namespace
