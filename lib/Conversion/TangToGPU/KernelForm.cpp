//===- KernelForm.cpp - what the kernel side shares -------------*- C++ -*-===//
//
// The kernel being built, buffer types, and the kernel patterns' failure
// reports (KernelForm.h).
//
//===----------------------------------------------------------------------===//

#include "KernelForm.h"
#include "BodyEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

MemRefType mlir::tang::getKernelBufferType(Type tensor) {
  auto t = cast<RankedTensorType>(tensor);
  if (t.hasStaticShape())
    return getMemRefType(t);
  return MemRefType::get({ShapedType::kDynamic}, t.getElementType());
}

Value mlir::tang::toStorage(OpBuilder &b, Location loc, Value v, Type storage) {
  if (v.getType() == storage)
    return v;
  return arith::TruncFOp::create(b, loc, storage, v);
}

SmallVector<Value> mlir::tang::getTensorsRead(Operation *op) {
  llvm::SetVector<Value> tensors;
  op->walk([&](Operation *o) {
    if (auto r = dyn_cast<ReadOp>(o))
      tensors.insert(r.getTensor());
    else if (auto g = dyn_cast<GatherOp>(o))
      tensors.insert(g.getTensor());
  });
  return tensors.takeVector();
}

FailureOr<SmallVector<Value>>
mlir::tang::emitThreadPerColumn(OpBuilder &b, Operation *op,
                                RankedTensorType type, unsigned own,
                                Kernel &k) {
  SmallVector<int64_t> columns(type.getShape().drop_back(own));
  columns.push_back(type.getShape().back());
  return emitThreadPerPoint(b, op, columns, k);
}

FailureOr<SmallVector<Value>>
mlir::tang::emitThreadPerPoint(OpBuilder &b, Operation *op,
                               ArrayRef<int64_t> extents, Kernel &k) {
  constexpr int64_t kBlockSize = 256;
  Location loc = op->getLoc();
  int64_t total = 1;
  for (int64_t e : extents)
    total *= e;
  int64_t block = std::min(total, kBlockSize);
  int64_t grid = (total + block - 1) / block;
  if (grid > std::numeric_limits<int32_t>::max())
    return op->emitOpError()
           << "has " << total << " points, more than one launch covers";
  k.grid = {grid, 1, 1};
  k.block = {block, 1, 1};

  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value bdim = arith::ConstantIndexOp::create(b, loc, block);
  Value lin = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bid, bdim), tid);
  Value inRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lin,
                            arith::ConstantIndexOp::create(b, loc, total));
  auto ifOp = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  SmallVector<Value> point(extents.size());
  Value rest = lin;
  for (int i = static_cast<int>(extents.size()) - 1; i >= 0; --i) {
    Value ext = arith::ConstantIndexOp::create(b, loc, extents[i]);
    point[i] = arith::RemUIOp::create(b, loc, rest, ext);
    rest = arith::DivUIOp::create(b, loc, rest, ext);
  }
  return point;
}

SmallVector<Value> mlir::tang::emitGridStridePoints(OpBuilder &b, Location loc,
                                                    ArrayRef<Value> extents,
                                                    Kernel &k) {
  // Blocks to fill the device (KernelSizes::getGridBlocks); small domains
  // leave most idle.
  constexpr int64_t kBlockSize = 256;
  int64_t kGrid = k.sizes ? k.sizes->getGridBlocks() : 1024;
  k.grid = {kGrid, 1, 1};
  k.block = {kBlockSize, 1, 1};
  auto cst = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  Value total = cst(1);
  for (Value e : extents)
    total = arith::MulIOp::create(b, loc, total, e);
  Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value first = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bid, cst(kBlockSize)), tid);
  auto loop = scf::ForOp::create(b, loc, first, total, cst(kBlockSize * kGrid));
  b.setInsertionPoint(loop.getBody()->getTerminator());
  SmallVector<Value> point(extents.size());
  Value rest = loop.getInductionVar();
  for (int i = static_cast<int>(extents.size()) - 1; i >= 0; --i) {
    point[i] = arith::RemUIOp::create(b, loc, rest, extents[i]);
    rest = arith::DivUIOp::create(b, loc, rest, extents[i]);
  }
  return point;
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
