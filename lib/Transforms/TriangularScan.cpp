//===- TriangularScan.cpp - --tang-triangular-scan ---------------*- C++
//-*-===//
//
// Rewrites the triangular form of a prefix reduction, sum over k of
// select(k <= i, v(k), identity), into a tang.scan along k: O(n) work where
// the comprehension does O(n^2). See Passes.td for the conditions.
//
//===----------------------------------------------------------------------===//

#include "Tang/Dialect/Tang/IR/TangMonoids.h"
#include "Tang/Dialect/Tang/IR/TangOps.h"
#include "Tang/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGTRIANGULARSCAN
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-triangular-scan"

using namespace mlir;
using namespace mlir::tang;

namespace {

/// The iteration index that `v` is (a tang.index of exactly that index,
/// as an integer or an index), or null.
Value getIndexOf(Value v) {
  auto index = v.getDefiningOp<IndexOp>();
  if (!index || index.getIndices().size() != 1 ||
      index.getMap().getResult(0) != getAffineDimExpr(0, v.getContext()) ||
      !index.getType().isIntOrIndex())
    return {};
  return index.getIndices()[0];
}

/// Whether `v` (in `op`'s body) depends on the block argument `index`.
bool dependsOn(Value v, Value index) {
  llvm::SetVector<Value> work;
  work.insert(v);
  for (size_t n = 0; n < work.size(); ++n) {
    Value x = work[n];
    if (x == index)
      return true;
    Operation *def = x.getDefiningOp();
    if (!def)
      continue;
    bool uses = false;
    def->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        if (operand == index)
          uses = true;
        else if (!isa<RankedTensorType>(operand.getType()))
          work.insert(operand);
    });
    if (uses)
      return true;
  }
  return false;
}

/// Pattern: comprehension (..., %i) reduce (%k) monoid(m)
///            { ... yield select(k <= i, v, identity(m)) }
///   -> scan (...) along (%k) monoid(m) { ... yield v }
struct Triangular_Scan : OpRewritePattern<ComprehensionOp> {
  Triangular_Scan(MLIRContext *ctx, int64_t &count)
      : OpRewritePattern(ctx), count(count) {}

  LogicalResult matchAndRewrite(ComprehensionOp op,
                                PatternRewriter &rewriter) const override {
    if (isInIterationBody(op) || op.getNumReduced() != 1 ||
        op.getNumParallel() == 0 || hasSymbolicSizes(op) ||
        op.getScheduleAttr())
      return rewriter.notifyMatchFailure(op, "not a single reduction");
    // The monoid's identity, one value per yield: a builtin of one
    // component, or a tang.monoid (whose carrier is the yields).
    SmallVector<Attribute> identity;
    TypeRange yields = op.getYield().getValues().getTypes();
    if (std::optional<MonoidKind> kind = op.getBuiltinMonoid()) {
      if (!llvm::is_contained({MonoidKind::Add, MonoidKind::Mul,
                               MonoidKind::Max, MonoidKind::Min,
                               MonoidKind::And, MonoidKind::Or},
                              *kind) ||
          yields.size() != 1)
        return rewriter.notifyMatchFailure(op, "not a one-component monoid");
      llvm::append_range(identity, getBuiltinIdentity(*kind, yields));
    } else if (auto user = SymbolTable::lookupNearestSymbolFrom<MonoidOp>(
                   op, cast<FlatSymbolRefAttr>(op.getMonoidAttr()))) {
      llvm::append_range(identity, user.getIdentity());
    }
    if (identity.size() != yields.size() || op.getNumResults() != yields.size())
      return rewriter.notifyMatchFailure(op, "not a monoid of the yields");
    unsigned last = op.getNumParallel() - 1;
    Value i = op.getIndex(last), k = op.getIndex(op.getNumParallel());
    if (op.getExtent(last) != op.getExtent(op.getNumParallel()))
      return rewriter.notifyMatchFailure(op, "the extents differ");
    // Every yield: select(k <= i, v, identity), one mask for all.
    Value mask;
    SmallVector<Value> values;
    for (auto [c, y] : llvm::enumerate(op.getYield().getValues())) {
      auto select = y.getDefiningOp<arith::SelectOp>();
      Attribute masked;
      if (!select || (mask && select.getCondition() != mask) ||
          !matchPattern(select.getFalseValue(), m_Constant(&masked)) ||
          masked != identity[c])
        return rewriter.notifyMatchFailure(
            op, "a yield is not selected against the identity");
      mask = select.getCondition();
      values.push_back(select.getTrueValue());
    }
    auto cmp = mask.getDefiningOp<arith::CmpIOp>();
    if (!cmp)
      return rewriter.notifyMatchFailure(op, "the mask is not a compare");
    Value lhs = getIndexOf(cmp.getLhs()), rhs = getIndexOf(cmp.getRhs());
    arith::CmpIPredicate p = cmp.getPredicate();
    bool lower =
        (p == arith::CmpIPredicate::sle || p == arith::CmpIPredicate::ule) &&
        lhs == k && rhs == i;
    bool upper =
        (p == arith::CmpIPredicate::sge || p == arith::CmpIPredicate::uge) &&
        lhs == i && rhs == k;
    if (!lower && !upper)
      return rewriter.notifyMatchFailure(op, "the mask is not k <= i");
    if (llvm::any_of(values, [&](Value v) { return dependsOn(v, i); }))
      return rewriter.notifyMatchFailure(op, "a summand depends on i");

    // The scan: the parallel indices but i, then k along which it scans.
    SmallVector<int64_t> extents;
    for (unsigned p = 0; p < op.getNumParallel(); ++p)
      extents.push_back(op.getExtent(p));
    auto scan = ScanOp::create(rewriter, op.getLoc(), op.getResultTypes(),
                               extents, op.getMonoidAttr());
    Block *body = rewriter.createBlock(&scan.getBody());
    IRMapping mapping;
    for (unsigned p = 0; p < last; ++p)
      mapping.map(op.getIndex(p),
                  body->addArgument(rewriter.getIndexType(), op.getLoc()));
    Value t = body->addArgument(rewriter.getIndexType(), op.getLoc());
    mapping.map(k, t);
    mapping.map(i, t); // (Only the mask, which goes, used i.)
    for (Operation &inner : op.getBodyBlock().without_terminator())
      rewriter.clone(inner, mapping);
    YieldOp::create(rewriter, op.getLoc(),
                    llvm::map_to_vector(
                        values, [&](Value v) { return mapping.lookup(v); }));
    // The mask and whatever only it used.
    for (Operation &inner : llvm::make_early_inc_range(llvm::reverse(*body)))
      if (!inner.hasTrait<OpTrait::IsTerminator>() && inner.use_empty() &&
          isPure(&inner))
        rewriter.eraseOp(&inner);
    rewriter.replaceOp(op, scan.getResults());
    ++count;
    return success();
  }

  int64_t &count;
};

struct TangTriangularScanPass
    : tang::impl::TangTriangularScanBase<TangTriangularScanPass> {
  using Base::Base;

  void runOnOperation() override {
    int64_t count = 0;
    RewritePatternSet patterns(&getContext());
    patterns.add<Triangular_Scan>(&getContext(), count);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    numScans += count;
  }
};

} // namespace
