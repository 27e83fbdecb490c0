//===- OnlineSoftmax.cpp - softmax as a single-pass monoid ------*- C++ -*-===//
//
// --tang-online-softmax recognises softmax-normalised reductions by the
// algebra of the graph (max, exp of a difference, sum, divide, product) and
// rewrites them into the single-pass monoids:
//
//  * a weighted sum  O = sum_j exp(s_j - max_k s_k) / (sum_k exp(s_k - max s))
//  * v_j
//    becomes one comprehension under `online_softmax` yielding (s_j, v_j);
//  * a remaining pair of a max-reduction and a sum of exp(s - max) over the
//    same scores (softmax, logsumexp, cross-entropy) becomes one
//    `softmax_norm` comprehension with the two results.
//
// "The same scores" is decided by structural equivalence of the scalar
// graphs modulo renaming of the reduced index (after --tang-fuse the max and
// the sum each carry their own copy of the score computation).
//
//===----------------------------------------------------------------------===//

#include "Tang/Transforms/Passes.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "tang-online-softmax"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGONLINESOFTMAX
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

using namespace mlir;
using namespace mlir::tang;

namespace {

//===----------------------------------------------------------------------===//
// Structural equivalence
//===----------------------------------------------------------------------===//

/// Whether values depend on a given value (an iteration index), through
/// operands and through the values nested regions use from outside.
class Dependence {
public:
  explicit Dependence(Value on) : on(on) {}

  bool dependsOn(Value v) {
    if (v == on)
      return true;
    if (auto it = memo.find(v); it != memo.end())
      return it->second;
    bool result = false;
    if (Operation *def = v.getDefiningOp())
      result = opDependsOn(def);
    memo[v] = result;
    return result;
  }

private:
  bool opDependsOn(Operation *op) {
    for (Value operand : op->getOperands())
      if (dependsOn(operand))
        return true;
    bool nested = false;
    op->walk([&](Operation *inner) {
      if (inner == op || nested)
        return;
      for (Value operand : inner->getOperands())
        if (!op->isAncestor(operand.getParentRegion()->getParentOp()) &&
            dependsOn(operand))
          nested = true;
    });
    return nested;
  }

  Value on;
  llvm::DenseMap<Value, bool> memo;
};

/// Decides whether two scalar graphs compute the same function, given that
/// index `from` of one corresponds to index `to` of the other.
class Equivalence {
public:
  Equivalence(Value from, Value to) : fromDeps(from) { mapping[from] = to; }

  bool equivalent(Value a, Value b) {
    // A value with a correspondence must meet its counterpart...
    if (auto it = mapping.find(a); it != mapping.end())
      return it->second == b;
    // ...and one shared by both graphs must not depend on the renamed index.
    if (a == b)
      return !fromDeps.dependsOn(a);
    auto ra = dyn_cast<OpResult>(a), rb = dyn_cast<OpResult>(b);
    if (!ra || !rb || ra.getResultNumber() != rb.getResultNumber())
      return false;
    if (!equivalentOps(ra.getOwner(), rb.getOwner()))
      return false;
    mapping[a] = b;
    return true;
  }

private:
  bool equivalentOps(Operation *a, Operation *b) {
    if (a->getName() != b->getName() ||
        a->getNumOperands() != b->getNumOperands() ||
        a->getNumResults() != b->getNumResults() ||
        a->getNumRegions() != b->getNumRegions() ||
        a->getRawDictionaryAttrs() != b->getRawDictionaryAttrs() ||
        a->getPropertiesAsAttribute() != b->getPropertiesAsAttribute() ||
        a->getResultTypes() != b->getResultTypes())
      return false;
    for (auto [x, y] : llvm::zip(a->getOperands(), b->getOperands()))
      if (!equivalent(x, y))
        return false;
    for (auto [ra, rb] : llvm::zip(a->getRegions(), b->getRegions())) {
      if (!ra.hasOneBlock() || !rb.hasOneBlock())
        return false;
      Block &ba = ra.front(), &bb = rb.front();
      if (ba.getNumArguments() != bb.getNumArguments())
        return false;
      for (auto [x, y] : llvm::zip(ba.getArguments(), bb.getArguments()))
        mapping[x] = y;
      Operation *ta = ba.getTerminator(), *tb = bb.getTerminator();
      if (ta->getNumOperands() != tb->getNumOperands())
        return false;
      for (auto [x, y] : llvm::zip(ta->getOperands(), tb->getOperands()))
        if (!equivalent(x, y))
          return false;
    }
    return true;
  }

  Dependence fromDeps;
  llvm::DenseMap<Value, Value> mapping;
};

/// Whether index #0 of `c` has the extent of iteration index `index`: the
/// same static extent, or the same size value.
bool hasExtentOf(ComprehensionOp c, Value index) {
  ComprehensionOp owner = getOwningComprehension(index);
  unsigned pos = cast<BlockArgument>(index).getArgNumber();
  if (c.getExtent(0) != owner.getExtent(pos))
    return false;
  return !c.isSymbolicExtent(0) ||
         c.getDynamicExtent(0) == owner.getDynamicExtent(pos);
}

/// A nested comprehension with one reduced index and one result under the
/// builtin monoid `kind`, or null.
ComprehensionOp getReduction(Value v, MonoidKind kind) {
  auto c = v.getDefiningOp<ComprehensionOp>();
  if (!c || c.getNumParallel() != 0 || c.getNumReduced() != 1 ||
      c.getNumResults() != 1 || c.getBuiltinMonoid() != kind)
    return {};
  return c;
}

/// True if the value of nested comprehension `c` depends on `index`.
bool dependsOn(ComprehensionOp c, Value index) {
  Dependence deps(index);
  return deps.dependsOn(c.getResult(0));
}

/// If `sum` is `sum_k exp(s'_k - max)` with `max` a max-reduction, returns
/// that max-reduction; checks s' is the score `score` of `scoreIndex`.
ComprehensionOp matchSumOfExp(ComprehensionOp sum, Value score,
                              Value scoreIndex) {
  Value yielded = sum.getYield().getValues()[0];
  auto exp = yielded.getDefiningOp<math::ExpOp>();
  if (!exp)
    return {};
  auto diff = exp.getOperand().getDefiningOp<arith::SubFOp>();
  if (!diff)
    return {};
  ComprehensionOp max = getReduction(diff.getRhs(), MonoidKind::Max);
  if (!max || !hasExtentOf(sum, scoreIndex))
    return {};
  Equivalence eq(scoreIndex, sum.getIndex(0));
  if (!eq.equivalent(score, diff.getLhs()))
    return {};
  return max;
}

/// True if `max` is `max_k s'_k` with s' the score `score` of `scoreIndex`.
/// Also checks the max has the score index's extent.
bool isMaxOfScore(ComprehensionOp max, Value score, Value scoreIndex) {
  if (!hasExtentOf(max, scoreIndex))
    return false;
  Equivalence eq(scoreIndex, max.getIndex(0));
  return eq.equivalent(score, max.getYield().getValues()[0]);
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// The probability exp(s - M) / L with M = max s and L = sum exp(s - M).
struct Probability {
  Value score;
  ComprehensionOp max, sum;
};

/// Matches `p` = exp(s - M) / L (or exp(s - M) * (1 / L)) where M and L are
/// nested reductions over the scores s of `index`, independent of `index`.
std::optional<Probability> matchProbability(Value p, Value index) {
  auto div = p.getDefiningOp<arith::DivFOp>();
  if (!div)
    return std::nullopt;
  auto exp = div.getLhs().getDefiningOp<math::ExpOp>();
  if (!exp)
    return std::nullopt;
  auto diff = exp.getOperand().getDefiningOp<arith::SubFOp>();
  if (!diff)
    return std::nullopt;
  Probability prob{diff.getLhs(), getReduction(diff.getRhs(), MonoidKind::Max),
                   getReduction(div.getRhs(), MonoidKind::Add)};
  if (!prob.max || !prob.sum || dependsOn(prob.max, index) ||
      dependsOn(prob.sum, index))
    return std::nullopt;
  if (!isMaxOfScore(prob.max, prob.score, index))
    return std::nullopt;
  ComprehensionOp innerMax = matchSumOfExp(prob.sum, prob.score, index);
  if (!innerMax || dependsOn(innerMax, prob.sum.getIndex(0)) ||
      !isMaxOfScore(innerMax, prob.score, index))
    return std::nullopt;
  return prob;
}

/// Matches `op` = sum_j p_j * v_j with p_j = exp(s_j - max s) / sum exp(s -
/// max s) over its one reduced index; returns the probability and v, or
/// says in `why` which step failed.
std::optional<std::pair<Probability, Value>>
matchWeightedSum(ComprehensionOp op, std::string &why) {
  if (op.getBuiltinMonoid() != MonoidKind::Add || op.getNumReduced() != 1 ||
      op.getNumResults() != 1) {
    why = "not a sum over one reduced index with one result";
    return std::nullopt;
  }
  Value index = op.getIndex(op.getNumParallel());
  auto mul = op.getYield().getValues()[0].getDefiningOp<arith::MulFOp>();
  if (!mul) {
    why = "the summand is not a product";
    return std::nullopt;
  }
  for (auto [p, v] : {std::pair(mul.getLhs(), mul.getRhs()),
                      std::pair(mul.getRhs(), mul.getLhs())})
    if (std::optional<Probability> prob = matchProbability(p, index))
      return std::pair(*prob, v);
  // Say which step failed for the factor that looks like a probability.
  for (Value p : {mul.getLhs(), mul.getRhs()}) {
    auto div = p.getDefiningOp<arith::DivFOp>();
    auto exp = div ? div.getLhs().getDefiningOp<math::ExpOp>() : math::ExpOp();
    auto diff =
        exp ? exp.getOperand().getDefiningOp<arith::SubFOp>() : arith::SubFOp();
    if (!diff)
      continue;
    ComprehensionOp max = getReduction(diff.getRhs(), MonoidKind::Max);
    ComprehensionOp sum = getReduction(div.getRhs(), MonoidKind::Add);
    if (!max || !sum)
      why = "the factor exp(s - m) / l has an m that is not a nested max or an "
            "l that is not a nested sum";
    else if (dependsOn(max, index) || dependsOn(sum, index))
      why = "the max or the sum depends on the summed index";
    else if (!isMaxOfScore(max, diff.getLhs(), index))
      why = "the max is not over the same scores as the exponent";
    else
      why = "the sum is not sum exp(s - max s) over the same scores";
    return std::nullopt;
  }
  why = "no factor is exp(s - max s) / sum exp(s - max s) over the reduced "
        "index";
  return std::nullopt;
}

/// Pattern: sum_j (exp(s_j - max s) / sum exp(s - max s)) * v_j
///            -> reduce_j online_softmax (s_j, v_j)
/// Whether `op`'s body (or a nested one) holds a tang.gather: the rewrites
/// leave those alone.
bool containsGather(ComprehensionOp op) {
  return op.getBodyBlock()
      .walk([](GatherOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

struct WeightedSum_OnlineSoftmax : OpRewritePattern<ComprehensionOp> {
  WeightedSum_OnlineSoftmax(MLIRContext *ctx, int64_t &count)
      : OpRewritePattern(ctx), count(count) {}

  LogicalResult matchAndRewrite(ComprehensionOp op,
                                PatternRewriter &rewriter) const override {
    if (containsGather(op))
      return rewriter.notifyMatchFailure(op, "it gathers");
    std::string why;
    std::optional<std::pair<Probability, Value>> match =
        matchWeightedSum(op, why);
    if (!match)
      return rewriter.notifyMatchFailure(op, why);
    auto &[prob, value] = *match;

    auto online = ComprehensionOp::create(
        rewriter, op.getLoc(), op.getResultTypes(), op.getDynamicExtents(),
        op.getParallelExtentsAttr(), op.getReducedExtentsAttr(),
        MonoidKindAttr::get(getContext(), MonoidKind::OnlineSoftmax),
        op.getScheduleAttr());
    rewriter.inlineRegionBefore(op.getBody(), online.getBody(),
                                online.getBody().end());
    YieldOp yield = online.getYield();
    rewriter.setInsertionPoint(yield);
    rewriter.replaceOpWithNewOp<YieldOp>(yield, ValueRange{prob.score, value});
    online->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    rewriter.replaceOp(op, online.getResults());
    ++count;
    return success();
  }

  int64_t &count;
};

/// Pattern: (max_k s_k, sum_k exp(s_k - max s)) in one block
///            -> one softmax_norm comprehension with both results
struct MaxSumExp_SoftmaxNorm : OpRewritePattern<ComprehensionOp> {
  MaxSumExp_SoftmaxNorm(MLIRContext *ctx, int64_t &count)
      : OpRewritePattern(ctx), count(count) {}

  LogicalResult matchAndRewrite(ComprehensionOp sum,
                                PatternRewriter &rewriter) const override {
    if (containsGather(sum))
      return rewriter.notifyMatchFailure(sum, "it gathers");
    if (!getReduction(sum.getResult(0), MonoidKind::Add))
      return rewriter.notifyMatchFailure(sum, "not a nested one-index sum");
    Value sumIndex = sum.getIndex(0);
    auto exp = sum.getYield().getValues()[0].getDefiningOp<math::ExpOp>();
    auto diff =
        exp ? exp.getOperand().getDefiningOp<arith::SubFOp>() : arith::SubFOp();
    if (!diff)
      return rewriter.notifyMatchFailure(sum, "the summand is not exp(a - b)");
    Value score = diff.getLhs();
    ComprehensionOp innerMax = getReduction(diff.getRhs(), MonoidKind::Max);
    if (!innerMax || dependsOn(innerMax, sumIndex) ||
        !isMaxOfScore(innerMax, score, sumIndex))
      return rewriter.notifyMatchFailure(
          sum, "the subtrahend is not the max of the same scores");

    // The max-reductions of the same scores beside the sum share its result.
    SmallVector<ComprehensionOp> maxes;
    for (Operation &op : *sum->getBlock()) {
      auto c = dyn_cast<ComprehensionOp>(op);
      if (c && getReduction(c.getResult(0), MonoidKind::Max) &&
          isMaxOfScore(c, score, sumIndex))
        maxes.push_back(c);
    }
    if (maxes.empty())
      return rewriter.notifyMatchFailure(
          sum, "no max-reduction of the same scores in the same block");

    // Build the pair from the first max, placed before it and the sum so
    // that it dominates their uses; the max's body must only use values
    // defined before that point.
    ComprehensionOp first = maxes.front();
    Operation *insertion = first->isBeforeInBlock(sum) ? first : sum;
    bool dominates = true;
    first.getBodyBlock().walk([&](Operation *op) {
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && def->getBlock() == sum->getBlock() &&
            !def->isBeforeInBlock(insertion))
          dominates = false;
      }
    });
    if (!dominates)
      return rewriter.notifyMatchFailure(
          sum, "the max uses values defined after the sum");
    rewriter.setInsertionPoint(insertion);
    Type t = first.getResult(0).getType();
    auto pair = ComprehensionOp::create(
        rewriter, first.getLoc(), TypeRange{t, t}, first.getDynamicExtents(),
        first.getParallelExtentsAttr(), first.getReducedExtentsAttr(),
        MonoidKindAttr::get(getContext(), MonoidKind::SoftmaxNorm),
        ScheduleAttr());
    IRMapping mapping;
    first.getBody().cloneInto(&pair.getBody(), mapping);
    for (ComprehensionOp m : maxes)
      rewriter.replaceOp(m, pair.getResult(0));
    rewriter.replaceOp(sum, pair.getResult(1));
    ++count;
    return success();
  }

  int64_t &count;
};

struct TangOnlineSoftmaxPass
    : tang::impl::TangOnlineSoftmaxBase<TangOnlineSoftmaxPass> {
  using TangOnlineSoftmaxBase::TangOnlineSoftmaxBase;

  void runOnOperation() override {
    int64_t online = 0, pairs = 0;
    if (failed(applyOnlineSoftmax(getOperation(), online, pairs))) {
      getOperation().emitError()
          << "tang-online-softmax: did not reach a fixed point";
      return signalPassFailure();
    }
    // A sum whose summand still holds exp(s - max) / sum: say why it is not
    // an online-softmax reduction (it costs a pass over the keys per key).
    getOperation().walk([&](ComprehensionOp op) {
      if (isInIterationBody(op) || op.getBuiltinMonoid() != MonoidKind::Add)
        return;
      bool softmaxLike = false;
      op.getBodyBlock().walk([&](math::ExpOp exp) {
        auto diff = exp.getOperand().getDefiningOp<arith::SubFOp>();
        softmaxLike |= diff && getReduction(diff.getRhs(), MonoidKind::Max) &&
                       llvm::any_of(exp->getUsers(), [](Operation *u) {
                         return isa<arith::DivFOp>(u);
                       });
      });
      std::string why;
      if (softmaxLike && !matchWeightedSum(op, why))
        op.emitRemark() << "tang-online-softmax: not an online-softmax "
                           "reduction: "
                        << why;
    });
    numOnlineSoftmax += online;
    numSoftmaxNorm += pairs;
  }
};

} // namespace

LogicalResult mlir::tang::applyOnlineSoftmax(Operation *root,
                                             int64_t &onlineSoftmax,
                                             int64_t &softmaxNorm) {
  MLIRContext *ctx = root->getContext();
  // Views folded into reads (ReadOp::fold) and copies shared (CSE): the
  // scores of the max and of the sum then compare equal, however they were
  // written (a bias broadcast through a view, a nested copy of the max).
  if (failed(applyPatternsGreedily(root, RewritePatternSet(ctx))))
    return failure();
  {
    IRRewriter rewriter(ctx);
    DominanceInfo dominance(root);
    eliminateCommonSubExpressions(rewriter, dominance, root);
  }
  // The weighted sums first: they consume their max and sum whole.
  {
    RewritePatternSet patterns(ctx);
    patterns.add<WeightedSum_OnlineSoftmax>(ctx, onlineSoftmax);
    if (failed(applyPatternsGreedily(root, std::move(patterns))))
      return failure();
  }
  RewritePatternSet patterns(ctx);
  patterns.add<MaxSumExp_SoftmaxNorm>(ctx, softmaxNorm);
  return applyPatternsGreedily(root, std::move(patterns));
}
