//===- CollapseReductions.cpp - sums over several indices as one ----------===//
//
// A weight gradient's sum over batch and length, read as consecutive
// coordinates, becomes one sum over their product: a contraction over one
// index that the tensor-core kernels take (CollapseReductions.h). Used by
// --tang-schedule before it chooses kernels, and by --convert-tang-to-gpu
// for comprehensions whose kernel is left to it.
//
//===----------------------------------------------------------------------===//

#include "Tang/Transforms/CollapseReductions.h"

#include "Tang/Analysis/KernelMatchers.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::tang;

bool mlir::tang::collapseReductions(ComprehensionOp op, bool wgmma, bool tf32,
                                    std::string &why) {
  unsigned np = op.getNumParallel(), nr = op.getNumReduced();
  if (nr < 2 || op.getNumResults() != 1)
    return false;
  Block &body = op.getBodyBlock();
  SmallVector<Value> reduced(body.getArguments().drop_front(np));
  SmallVector<int64_t> extents(op.getReducedExtents());
  for (Value r : reduced)
    for (OpOperand &use : r.getUses()) {
      auto read = dyn_cast<ReadOp>(use.getOwner());
      if (!read || read->getBlock() != &body)
        return false;
    }
  // Every read using them: coordinates q..q+nr-1 are exactly the reduced
  // indices in order, inner dimensions of their extents, no other
  // coordinate uses one.
  SmallVector<ReadOp> reads;
  for (ReadOp read : body.getOps<ReadOp>()) {
    if (llvm::none_of(read.getIndices(),
                      [&](Value v) { return llvm::is_contained(reduced, v); }))
      continue;
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(read.getTensor().getType()).getShape();
    std::optional<unsigned> first;
    for (auto [d, e] : llvm::enumerate(read.getMap().getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      Value v = dim ? read.getIndices()[dim.getPosition()] : Value();
      auto t = llvm::find(reduced, v) - reduced.begin();
      if (v && t < nr) {
        if (!first && t == 0)
          first = d;
        if (!first || d != *first + static_cast<size_t>(t) ||
            (t != 0 && shape[d] != extents[t]))
          return false;
        continue;
      }
      for (Value r : reduced)
        for (auto [i, idx] : llvm::enumerate(read.getIndices()))
          if (idx == r && e.isFunctionOfDim(i))
            return false;
    }
    if (!first || *first + nr > shape.size())
      return false;
    reads.push_back(read);
  }

  // The rewrite, on a copy: the reduced arguments become one.
  OpBuilder b(op);
  auto copy = cast<ComprehensionOp>(b.clone(*op));
  int64_t product = 1;
  for (int64_t e : extents)
    product *= e;
  copy.setReducedExtents(ArrayRef<int64_t>{product});
  Block &cb = copy.getBodyBlock();
  Value k = cb.addArgument(b.getIndexType(), op.getLoc());
  SmallVector<Value> oldArgs(cb.getArguments().slice(np, nr));
  MLIRContext *ctx = op.getContext();
  for (ReadOp read : llvm::to_vector(cb.getOps<ReadOp>())) {
    SmallVector<Value> indices;
    SmallVector<AffineExpr> replace;
    auto position = [&](Value v) -> AffineExpr {
      auto it = llvm::find(indices, v);
      if (it == indices.end()) {
        indices.push_back(v);
        it = indices.end() - 1;
      }
      return getAffineDimExpr(it - indices.begin(), ctx);
    };
    for (Value v : read.getIndices()) {
      auto t = llvm::find(oldArgs, v) - oldArgs.begin();
      if (t == nr) {
        replace.push_back(position(v));
        continue;
      }
      int64_t stride = 1;
      for (unsigned u = t + 1; u < nr; ++u)
        stride *= extents[u];
      AffineExpr e = position(k).floorDiv(stride);
      if (t != 0)
        e = e % extents[t];
      replace.push_back(e);
    }
    AffineMap map =
        read.getMap().replaceDimsAndSymbols(replace, {}, indices.size(), 0);
    OpBuilder rb(read);
    auto collapsed =
        ReadOp::create(rb, read.getLoc(), read.getTensor(),
                       simplifyAffineMap(map), indices, read.getFillAttr());
    read.replaceAllUsesWith(collapsed.getResult());
    read.erase();
  }
  cb.eraseArguments(np, nr);
  if (!matchMmaContraction(copy, why, wgmma, tf32)) {
    copy.erase();
    return false;
  }
  op.replaceAllUsesWith(copy.getResults());
  op.erase();
  return true;
}
