//===- FlatBufferParams.cpp - --tang-flat-buffer-params ---------*- C++ -*-===//
//
// Gives the flat buffer parameters of kernels (memref<?xT>: a tensor with a
// `?` dimension, indexed through the sizes the kernel takes) a static
// extent, so that the bare-pointer calling convention (one pointer per
// buffer) takes them: it needs static strides and offset, and MLIR also
// builds the in-kernel descriptor from a static shape. The extent is never
// read: loads and stores compute their offsets from the sizes.
//
//===----------------------------------------------------------------------===//

#include "Tang/Target/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/Support/Debug.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGFLATBUFFERPARAMS
#include "Tang/Target/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-flat-buffer-params"

using namespace mlir;
using namespace mlir::tang;

namespace {

/// The static extent given to a flat buffer: 2^40 elements, beyond any
/// device's memory, so that no access the sizes allow is out of it.
constexpr int64_t kFlatExtent = int64_t(1) << 40;

struct TangFlatBufferParamsPass
    : tang::impl::TangFlatBufferParamsBase<TangFlatBufferParamsPass> {
  using TangFlatBufferParamsBase::TangFlatBufferParamsBase;

  void runOnOperation() override {
    gpu::GPUFuncOp func = getOperation();
    if (!func.isKernel())
      return;
    SmallVector<Type> inputs(func.getArgumentTypes());
    bool changed = false;
    for (auto [i, t] : llvm::enumerate(inputs)) {
      auto m = dyn_cast<MemRefType>(t);
      if (!m || m.getRank() != 1 || !m.isDynamicDim(0))
        continue;
      for (Operation *user : func.getArgument(i).getUsers())
        if (!isa<memref::LoadOp, memref::StoreOp>(user)) {
          user->emitOpError()
              << "uses flat buffer parameter #" << i
              << ", which only memref.load and memref.store may use";
          return signalPassFailure();
        }
      t = MemRefType::get({kFlatExtent}, m.getElementType(), m.getLayout(),
                          m.getMemorySpace());
      func.getArgument(i).setType(t);
      changed = true;
    }
    if (changed)
      func.setFunctionType(
          FunctionType::get(&getContext(), inputs, func.getResultTypes()));
  }
};
} // namespace
