//===- KernelForm.cpp - what the kernel side shares -------------*- C++ -*-===//
//
// The kernel being built, buffer types, and the kernel patterns' failure
// reports (KernelForm.h).
//
//===----------------------------------------------------------------------===//

#include "KernelForm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "convert-tang-to-gpu"

using namespace mlir;
using namespace mlir::tang;

Value Kernel::addTensorMap(TensorMapParam param) {
  MLIRContext *ctx = func.getContext();
  unsigned index = func.getNumArguments();
  if (failed(func.insertArgument(index, LLVM::LLVMPointerType::get(ctx),
                                 DictionaryAttr(), func.getLoc())))
    llvm_unreachable("a gpu.func takes any number of parameters");
  tensorMaps.push_back(std::move(param));
  SmallVector<int64_t> params;
  if (auto old =
          func->getAttrOfType<DenseI64ArrayAttr>(kTensorMapParamsAttrName))
    params.assign(old.asArrayRef().begin(), old.asArrayRef().end());
  params.push_back(index);
  func->setAttr(kTensorMapParamsAttrName, DenseI64ArrayAttr::get(ctx, params));
  return func.getArgument(index);
}

MemRefType mlir::tang::getMemRefType(Type tensor) {
  auto t = cast<RankedTensorType>(tensor);
  return MemRefType::get(t.getShape(), t.getElementType());
}

Value mlir::tang::toStorage(OpBuilder &b, Location loc, Value v, Type storage) {
  if (v.getType() == storage)
    return v;
  return arith::TruncFOp::create(b, loc, storage, v);
}

SmallVector<Value> mlir::tang::getTensorsRead(ComprehensionOp op) {
  llvm::SetVector<Value> tensors;
  op.walk([&](Operation *o) {
    if (auto r = dyn_cast<ReadOp>(o))
      tensors.insert(r.getTensor());
    else if (auto g = dyn_cast<GatherOp>(o))
      tensors.insert(g.getTensor());
  });
  return tensors.takeVector();
}

KernelMatch KernelPattern::notifyMatchFailure(ComprehensionOp op,
                                              const Twine &reason) const {
  LLVM_DEBUG(llvm::dbgs() << "[" << name << "] no match at " << op.getLoc()
                          << ": " << reason << "\n");
  return KernelMatch::NoMatch;
}

KernelMatch KernelPattern::remarkMatchFailure(ComprehensionOp op,
                                              const Twine &reason) const {
  op.emitRemark() << reason;
  return notifyMatchFailure(op, reason);
}
