//===- GradHoist.cpp - the save policy of --tang-grad -----------*- C++ -*-===//
//
// Which nested comprehensions of the forward program become saved tensors
// (hoisted to function level) and which the gradients recompute.
//
//===----------------------------------------------------------------------===//

#include "GradInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::grad;

namespace mlir::tang::grad {

LogicalResult hoistNested(ComprehensionOp nested, ComprehensionOp top) {
  // The enclosing indices used inside, in nesting order.
  SmallVector<BlockArgument> enclosing;
  for (Operation *p = nested->getParentOp(); p; p = p->getParentOp()) {
    auto c = dyn_cast<ComprehensionOp>(p);
    if (!c)
      break;
    SmallVector<BlockArgument> args(c.getBodyBlock().getArguments());
    enclosing.insert(enclosing.begin(), args.begin(), args.end());
    if (c == top)
      break;
  }
  // The enclosing indices and scalar operations the body needs.
  llvm::SetVector<Value> used;
  llvm::DenseSet<Operation *> outerOps;
  std::function<LogicalResult(Operation *, Value)> require =
      [&](Operation *user, Value v) -> LogicalResult {
    Operation *owner = v.getParentRegion()->getParentOp();
    if (nested->isAncestor(owner) || !top->isAncestor(owner))
      return success(); // its own values; function-level tensors
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (!llvm::is_contained(enclosing, arg))
        return user->emitOpError() << "uses a block argument --tang-grad "
                                      "cannot hoist";
      used.insert(v);
      return success();
    }
    Operation *def = v.getDefiningOp();
    if (!outerOps.insert(def).second)
      return success();
    // Recomputed with it: a scalar op, or a nested sum kept in the body
    // (the values its region uses from outside it).
    WalkResult inner = def->walk([&](Operation *op) {
      for (Value operand : op->getOperands())
        if (!def->isAncestor(operand.getParentRegion()->getParentOp()) &&
            failed(require(op, operand)))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    return failure(inner.wasInterrupted());
  };
  WalkResult walk = nested.walk([&](Operation *op) {
    for (Value v : op->getOperands())
      if (failed(require(op, v)))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  SmallVector<Value> outer;
  SmallVector<int64_t> extents;
  for (BlockArgument a : enclosing)
    if (used.contains(a)) {
      outer.push_back(a);
      auto c = cast<ComprehensionOp>(a.getOwner()->getParentOp());
      extents.push_back(c.getExtent(a.getArgNumber()));
    }
  if (nested.getNumParallel() != 0)
    return nested.emitOpError()
           << "is a nested comprehension with parallel indices, which "
              "--tang-grad does not hoist yet";
  SmallVector<Type> types;
  for (Type t : nested.getResultTypes())
    types.push_back(RankedTensorType::get(extents, t));
  OpBuilder b(top);
  auto hoisted = ComprehensionOp::create(
      b, nested.getLoc(), types, extents, nested.getReducedExtents(),
      nested.getMonoidAttr(), ScheduleAttr());
  hoisted->setAttr(kSavedAttrName, b.getUnitAttr());
  Block *body = b.createBlock(&hoisted.getBody());
  IRMapping map;
  for (Value v : outer)
    map.map(v, body->addArgument(b.getIndexType(), nested.getLoc()));
  for (BlockArgument a : nested.getBodyBlock().getArguments())
    map.map(a, body->addArgument(b.getIndexType(), nested.getLoc()));
  b.setInsertionPointToStart(body);
  // The enclosing scalars first, in program order, then the body.
  top.getBodyBlock().walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (!outerOps.contains(op))
      return WalkResult::advance();
    b.clone(*op, map);
    return WalkResult::skip();
  });
  for (Operation &op : nested.getBodyBlock())
    b.clone(op, map);
  b.setInsertionPoint(nested);
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(outer.size(), b.getContext());
  SmallVector<Value> reads;
  for (Value r : hoisted.getResults())
    reads.push_back(ReadOp::create(b, nested.getLoc(), r, identity, outer));
  nested->replaceAllUsesWith(reads);
  nested->erase();
  return success();
}

bool isRecomputable(ComprehensionOp n, ComprehensionOp top, int64_t largest,
                    bool always) {
  if (n->getParentOp() != top.getOperation() || n.getNumParallel() != 0 ||
      n.getNumResults() != 1 || n.getBuiltinMonoid() != MonoidKind::Add)
    return false;
  bool plain = true;
  llvm::DenseSet<Value> outerUsed;
  n.getBodyBlock().walk([&](Operation *op) {
    if (isa<ComprehensionOp>(op))
      plain = false;
    for (Value v : op->getOperands()) {
      Operation *owner = v.getParentRegion()->getParentOp();
      if (owner == top.getOperation()) {
        if (isa<BlockArgument>(v))
          outerUsed.insert(v);
        else
          plain = false; // a scalar of the enclosing body
      }
    }
  });
  if (!plain)
    return false;
  if (always)
    return true;
  int64_t size = 1;
  for (Value v : outerUsed)
    size *= top.getExtent(cast<BlockArgument>(v).getArgNumber());
  return size > largest;
}

} // namespace mlir::tang::grad
