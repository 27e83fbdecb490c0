//===- GradRules.cpp - scalar derivative rules of --tang-grad ---*- C++ -*-===//
//
// Reverse mode over the scalar code of a body (one rule per arith and math
// op), and the clones of forward bodies at solved indices that gradient
// bodies are built from.
//
//===----------------------------------------------------------------------===//

#include "GradInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::grad;

namespace mlir::tang::grad {

Operation *cloneSubstituted(OpBuilder &b, Operation *op, IRMapping &mapping,
                            llvm::DenseMap<Value, AffineExpr> &exprOf,
                            SmallVector<Value> &operands) {
  MLIRContext *ctx = b.getContext();
  auto compose = [&](ValueRange indices, AffineMap map) {
    SmallVector<AffineExpr> exprs;
    for (Value v : indices)
      exprs.push_back(exprOf.lookup(v));
    return map.compose(AffineMap::get(operands.size(), 0, exprs, ctx));
  };
  Operation *copy;
  if (auto r = dyn_cast<ReadOp>(op)) {
    copy = ReadOp::create(b, r.getLoc(), mapping.lookupOrDefault(r.getTensor()),
                          compose(r.getIndices(), r.getMap()), operands,
                          r.getFillAttr());
  } else if (auto g = dyn_cast<GatherOp>(op)) {
    // Its dimensions composed like a read's; its symbols (data) mapped.
    AffineMap map = g.getMap();
    SmallVector<AffineExpr> dims, symbols;
    for (Value v : g.getIndices())
      dims.push_back(exprOf.lookup(v));
    for (unsigned k = 0; k < map.getNumSymbols(); ++k)
      symbols.push_back(getAffineSymbolExpr(k, ctx));
    SmallVector<Value> mapOperands(operands);
    for (Value v : g.getValues())
      mapOperands.push_back(mapping.lookupOrDefault(v));
    copy = GatherOp::create(b, g.getLoc(), g.getType(),
                            mapping.lookupOrDefault(g.getTensor()), mapOperands,
                            map.replaceDimsAndSymbols(dims, symbols,
                                                      operands.size(),
                                                      map.getNumSymbols()),
                            g.getPolicy());
  } else if (auto i = dyn_cast<IndexOp>(op)) {
    copy = IndexOp::create(
        b, i.getLoc(), i.getType(), operands,
        AffineMapAttr::get(compose(i.getIndices(), i.getMap())));
  } else if (auto n = dyn_cast<ComprehensionOp>(op)) {
    auto clone = ComprehensionOp::create(
        b, n.getLoc(), n.getResultTypes(), n.getParallelExtents(),
        n.getReducedExtents(), n.getMonoidAttr(), n.getScheduleAttr());
    OpBuilder::InsertionGuard guard(b);
    Block *body = b.createBlock(&clone.getBody());
    size_t before = operands.size();
    for (BlockArgument a : n.getBodyBlock().getArguments()) {
      exprOf[a] = getAffineDimExpr(operands.size(), ctx);
      operands.push_back(body->addArgument(b.getIndexType(), a.getLoc()));
    }
    for (Operation &inner : n.getBodyBlock())
      cloneSubstituted(b, &inner, mapping, exprOf, operands);
    operands.resize(before);
    copy = clone;
  } else {
    copy = b.clone(*op, mapping);
  }
  mapping.map(op->getResults(), copy->getResults());
  return copy;
}

Value castFloat(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  if (cast<FloatType>(v.getType()).getWidth() <
      cast<FloatType>(type).getWidth())
    return arith::ExtFOp::create(b, loc, type, v);
  return arith::TruncFOp::create(b, loc, type, v);
}

Type getStatisticsType(Type t) {
  auto f = cast<FloatType>(getElementTypeOrSelf(t));
  return f.getWidth() < 32 ? Float32Type::get(t.getContext()) : Type(f);
}

Value probability(OpBuilder &b, Location loc, Value s, Value m, Value l) {
  Value lse = arith::AddFOp::create(b, loc, m, math::LogOp::create(b, loc, l));
  return math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s, lse));
}

void getBodySlice(ComprehensionOp c, Value v,
                  llvm::SetVector<Operation *> &slice,
                  llvm::SmallDenseSet<unsigned, 8> &used) {
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Value cur = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(cur)) {
      if (arg.getOwner() == &c.getBodyBlock())
        used.insert(arg.getArgNumber());
      continue;
    }
    Operation *def = cur.getDefiningOp();
    if (!c->isAncestor(def))
      continue;
    while (def->getParentOp() != c.getOperation())
      def = def->getParentOp();
    if (!slice.insert(def))
      continue;
    def->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        work.push_back(operand);
    });
  }
}

LogicalResult backpropagate(OpBuilder &b, ArrayRef<Operation *> ops,
                            llvm::DenseMap<Value, Value> &adjoint,
                            const llvm::DenseSet<Operation *> &onPath) {
  auto add = [&](Value v, Value a) {
    if (!a)
      return;
    if (a.getType() != v.getType()) {
      auto from = cast<FloatType>(a.getType()),
           to = cast<FloatType>(v.getType());
      a = from.getWidth() > to.getWidth()
              ? arith::TruncFOp::create(b, a.getLoc(), to, a).getResult()
              : arith::ExtFOp::create(b, a.getLoc(), to, a).getResult();
    }
    auto [it, inserted] = adjoint.try_emplace(v, a);
    if (!inserted)
      it->second = arith::AddFOp::create(b, a.getLoc(), it->second, a);
  };
  for (Operation *op : llvm::reverse(ops)) {
    if (op->getNumResults() != 1)
      continue;
    Value r = op->getResult(0);
    auto it = adjoint.find(r);
    if (it == adjoint.end()) {
      // Off the differentiated paths, or a comparison steering a select.
      if (onPath.contains(op) && !isa<arith::CmpFOp, arith::CmpIOp>(op) &&
          !isa<ReadOp>(op))
        return op->emitOpError()
               << "lies on a differentiated path but has no derivative "
                  "rule in --tang-grad";
      continue;
    }
    Value a = it->second;
    Location loc = op->getLoc();
    auto cst = [&](double v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getFloatAttr(r.getType(), v));
    };
    auto mul = [&](Value x, Value y) -> Value {
      return arith::MulFOp::create(b, loc, x, y);
    };
    auto neg = [&](Value x) -> Value {
      return arith::NegFOp::create(b, loc, x);
    };
    auto zero = [&] { return cst(0.0); };
    auto pick = [&](Value cond, Value x, Value y) -> Value {
      return arith::SelectOp::create(b, loc, cond, x, y);
    };
    LogicalResult handled =
        llvm::TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](arith::AddFOp o) {
              add(o.getLhs(), a);
              add(o.getRhs(), a);
              return success();
            })
            .Case([&](arith::SubFOp o) {
              add(o.getLhs(), a);
              add(o.getRhs(), neg(a));
              return success();
            })
            .Case([&](arith::MulFOp o) {
              add(o.getLhs(), mul(a, o.getRhs()));
              add(o.getRhs(), mul(a, o.getLhs()));
              return success();
            })
            .Case([&](arith::DivFOp o) {
              Value q = arith::DivFOp::create(b, loc, a, o.getRhs());
              add(o.getLhs(), q);
              add(o.getRhs(), neg(mul(q, r)));
              return success();
            })
            .Case([&](arith::NegFOp o) {
              add(o.getOperand(), neg(a));
              return success();
            })
            .Case([&](math::ExpOp o) {
              add(o.getOperand(), mul(a, r));
              return success();
            })
            .Case([&](math::LogOp o) {
              add(o.getOperand(),
                  arith::DivFOp::create(b, loc, a, o.getOperand()));
              return success();
            })
            .Case([&](math::TanhOp o) {
              add(o.getOperand(),
                  mul(a, arith::SubFOp::create(b, loc, cst(1.0), mul(r, r))));
              return success();
            })
            .Case([&](math::ErfOp o) {
              Value x = o.getOperand();
              Value g = math::ExpOp::create(b, loc, neg(mul(x, x)));
              add(x, mul(a, mul(cst(llvm::numbers::inv_sqrtpi * 2.0), g)));
              return success();
            })
            .Case([&](math::RsqrtOp o) {
              add(o.getOperand(), mul(a, mul(cst(-0.5), mul(r, mul(r, r)))));
              return success();
            })
            .Case([&](math::SqrtOp o) {
              add(o.getOperand(),
                  arith::DivFOp::create(b, loc, mul(a, cst(0.5)), r));
              return success();
            })
            .Case([&](math::AbsFOp o) {
              Value x = o.getOperand();
              Value pos = arith::CmpFOp::create(
                  b, loc, arith::CmpFPredicate::OGE, x, zero());
              add(x, pick(pos, a, neg(a)));
              return success();
            })
            .Case([&](math::PowFOp o) {
              Value x = o.getLhs(), y = o.getRhs();
              Value ym1 = arith::SubFOp::create(b, loc, y, cst(1.0));
              add(x, mul(a, mul(y, math::PowFOp::create(b, loc, x, ym1))));
              add(y, mul(a, mul(r, math::LogOp::create(b, loc, x))));
              return success();
            })
            .Case([&](math::SinOp o) {
              add(o.getOperand(),
                  mul(a, math::CosOp::create(b, loc, o.getOperand())));
              return success();
            })
            .Case([&](math::CosOp o) {
              add(o.getOperand(),
                  neg(mul(a, math::SinOp::create(b, loc, o.getOperand()))));
              return success();
            })
            .Case<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
                  arith::MinNumFOp>([&](Operation *o) {
              bool isMax = isa<arith::MaximumFOp, arith::MaxNumFOp>(o);
              Value x = o->getOperand(0), y = o->getOperand(1);
              Value first = arith::CmpFOp::create(
                  b, loc,
                  isMax ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OLE,
                  x, y);
              add(x, pick(first, a, zero()));
              add(y, pick(first, zero(), a));
              return success();
            })
            .Case([&](arith::SelectOp o) {
              add(o.getTrueValue(), pick(o.getCondition(), a, zero()));
              add(o.getFalseValue(), pick(o.getCondition(), zero(), a));
              return success();
            })
            .Case<arith::ExtFOp, arith::TruncFOp>([&](Operation *o) {
              add(o->getOperand(0), a);
              return success();
            })
            .Case<ReadOp, GatherOp, IndexOp, arith::ConstantOp, arith::SIToFPOp,
                  arith::UIToFPOp>([&](Operation *) { return success(); })
            // A recomputed nested sum: the gradients of its reads take its
            // cotangent (emitReadGradient).
            .Case([&](ComprehensionOp) { return success(); })
            .Default([&](Operation *o) {
              return o->emitOpError() << "lies on a differentiated path but "
                                         "has no derivative rule in "
                                         "--tang-grad";
            });
    if (failed(handled))
      return failure();
    // An integer-to-float conversion on the path: its operand is not
    // differentiable.
    if (isa<arith::SIToFPOp, arith::UIToFPOp>(op) && onPath.contains(op))
      return op->emitOpError() << "converts an integer on a differentiated "
                                  "path: --tang-grad has no rule through "
                                  "integer arithmetic";
  }
  return success();
}

} // namespace mlir::tang::grad
