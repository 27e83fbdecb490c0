//===- TensorMapParams.cpp - --tang-tensor-map-params -----------*- C++ -*-===//
//
// Passes the tensor-map parameters of kernels (named by the kernel form's
// `tang.tensor_map_params`) by value: 128 bytes, 64-byte aligned, as grid
// constants, so that their generic address is the parameter's own (what
// cp.async.bulk.tensor expects of a CUtensorMap kernel parameter).
//
//===----------------------------------------------------------------------===//

#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Target/Passes.h"
#include "llvm/Support/Debug.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGTENSORMAPPARAMS
#include "Tang/Target/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-tensor-map-params"

using namespace mlir;
using namespace mlir::tang;

namespace {

struct TangTensorMapParamsPass
    : tang::impl::TangTensorMapParamsBase<TangTensorMapParamsPass> {
  using TangTensorMapParamsBase::TangTensorMapParamsBase;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
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
