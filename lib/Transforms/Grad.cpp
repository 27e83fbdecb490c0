//===- Grad.cpp - reverse mode over comprehensions --------------*- C++ -*-===//
//
// --tang-grad: the vector-Jacobian product of a function of tang ops, built
// from tang ops (see the pass description in Passes.td).
//
// The gradient function first recomputes the forward program (views folded
// into reads, nested comprehensions hoisted to saved tensors), then walks
// the function-level comprehensions backwards. For every read of a tensor
// that needs a gradient it builds one comprehension over that tensor's
// index space, whose body recomputes the forward body at the solved
// indices and runs reverse mode over that scalar graph, seeded with the
// cotangent of the comprehension's result.
//
//===----------------------------------------------------------------------===//

#include "Tang/Transforms/Passes.h"

#include "mlir/Analysis/FlatLinearValueConstraints.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGGRAD
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-grad"

using namespace mlir;
using namespace mlir::tang;

namespace {

bool isFloatTensor(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && isa<FloatType>(r.getElementType());
}

//===----------------------------------------------------------------------===//
// Hoisting nested comprehensions (the save policy)
//===----------------------------------------------------------------------===//

/// Hoists `nested` (a comprehension in another's body) to a function-level
/// comprehension over the enclosing indices it uses, placed before `top`,
/// and replaces it by reads of that tensor. Values of the enclosing bodies
/// it uses (a mean in a variance, even a kept nested sum) are recomputed in
/// its body.
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

/// Whether `n`, nested in `top`, may stay in the body and be recomputed by
/// the gradients: a sum directly in `top`'s body, of scalar code over the
/// indices and function-level tensors; with `always` unset, only when
/// saving it would take a tensor larger than `largest` elements.
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

//===----------------------------------------------------------------------===//
// Index solving
//===----------------------------------------------------------------------===//

/// A linear affine expression: coefficients per dimension and a constant.
struct Linear {
  SmallVector<int64_t> coeff;
  int64_t constant = 0;
};

/// `e` as a linear form over `numDims` dimensions, if it is one (upstream's
/// flattener; floordiv and mod introduce local variables: not linear).
std::optional<Linear> getLinear(AffineExpr e, unsigned numDims) {
  SmallVector<int64_t> flat;
  if (failed(getFlattenedAffineExpr(e, numDims, 0, &flat)) ||
      flat.size() != numDims + 1)
    return std::nullopt;
  Linear l;
  l.coeff.assign(flat.begin(), flat.begin() + numDims);
  l.constant = flat.back();
  return l;
}

/// Bounds of `e` over dimensions ranging over [0, extent): the least and
/// greatest values for linear forms; through floordiv and mod by
/// constants, an interval holding every value.
std::optional<std::pair<int64_t, int64_t>> getBounds(AffineExpr e,
                                                     ArrayRef<int64_t> extents);

/// The least and greatest values of `e` over dimensions ranging over
/// [0, extent): exact for linear forms, none otherwise.
std::optional<std::pair<int64_t, int64_t>> getRange(AffineExpr e,
                                                    ArrayRef<int64_t> extents) {
  std::optional<Linear> l = getLinear(e, extents.size());
  if (!l)
    return std::nullopt;
  int64_t lo = l->constant, hi = l->constant;
  for (auto [c, n] : llvm::zip(l->coeff, extents)) {
    (c > 0 ? hi : lo) += c * (n - 1);
  }
  return std::make_pair(lo, hi);
}

std::optional<std::pair<int64_t, int64_t>>
getBounds(AffineExpr e, ArrayRef<int64_t> extents) {
  if (auto range = getRange(e, extents))
    return range;
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return std::nullopt;
  auto lhs = getBounds(bin.getLHS(), extents);
  auto rhs = getBounds(bin.getRHS(), extents);
  if (!lhs || !rhs)
    return std::nullopt;
  auto [a, b] = *lhs;
  auto [c, d] = *rhs;
  switch (bin.getKind()) {
  case AffineExprKind::Add:
    return std::make_pair(a + c, b + d);
  case AffineExprKind::Mul: {
    int64_t p[] = {a * c, a * d, b * c, b * d};
    return std::make_pair(*llvm::min_element(p), *llvm::max_element(p));
  }
  case AffineExprKind::FloorDiv:
    if (c != d || c <= 0)
      return std::nullopt;
    return std::make_pair(llvm::divideFloorSigned(a, c),
                          llvm::divideFloorSigned(b, c));
  case AffineExprKind::Mod:
    if (c != d || c <= 0)
      return std::nullopt;
    if (a >= 0 && b < c)
      return std::make_pair(a, b);
    return std::make_pair(int64_t(0), c - 1);
  default:
    return std::nullopt;
  }
}

/// A condition lower <= expression < upper (an equality as (e, 0, 1)).
using Mask = std::tuple<AffineExpr, int64_t, int64_t>;

/// How the indices of a comprehension map to the gradient comprehension of
/// one of its reads: G's dimensions are the read tensor's coordinates, then
/// the free indices.
struct Solution {
  /// Per index of the forward comprehension: its value over G's dimensions.
  SmallVector<AffineExpr> index;
  /// Per index: the value to read at (within its range: `index` modulo
  /// the extent where `index` may leave it).
  SmallVector<AffineExpr> safeIndex;
  /// G's reduced extents.
  SmallVector<int64_t> freeExtents;
  /// Conditions for a contribution: (expression, lower, upper) meaning
  /// lower <= expression < upper, and (expression == 0) as (e, 0, 1).
  SmallVector<Mask> masks;
};

/// Solves the coordinates `coords` (affine over the forward comprehension's
/// indices, whose extents are `extents`) of a tensor of shape `shape`.
Solution solve(ArrayRef<AffineExpr> coords, ArrayRef<int64_t> extents,
               ArrayRef<int64_t> shape, MLIRContext *ctx) {
  unsigned n = shape.size(), m = extents.size();
  enum State { Unknown, Pivot, Free };
  SmallVector<State> state(m, Unknown);
  SmallVector<int> pivotOf(n, -1);
  SmallVector<std::optional<Linear>> lin;
  for (unsigned d = 0; d < n; ++d) {
    lin.push_back(getLinear(coords[d], m));
    std::optional<unsigned> pivot;
    if (lin[d])
      for (unsigned j = 0; j < m; ++j)
        if (state[j] == Unknown && std::abs(lin[d]->coeff[j]) == 1) {
          pivot = j;
          break;
        }
    // Every other unknown index this coordinate uses is summed over.
    for (unsigned j = 0; j < m; ++j)
      if (state[j] == Unknown && j != pivot && coords[d].isFunctionOfDim(j))
        state[j] = Free;
    if (pivot) {
      state[*pivot] = Pivot;
      pivotOf[d] = *pivot;
    }
  }
  Solution s;
  s.index.assign(m, AffineExpr());
  SmallVector<unsigned> freeDim(m, 0);
  for (unsigned j = 0; j < m; ++j)
    if (state[j] != Pivot) {
      freeDim[j] = n + s.freeExtents.size();
      s.freeExtents.push_back(extents[j]);
      s.index[j] = getAffineDimExpr(freeDim[j], ctx);
    }
  // Pivots in coordinate order: a pivot's coordinate uses only free
  // indices and earlier pivots.
  for (unsigned d = 0; d < n; ++d) {
    if (pivotOf[d] < 0)
      continue;
    unsigned j = pivotOf[d];
    int64_t sign = lin[d]->coeff[j];
    AffineExpr rest = getAffineConstantExpr(lin[d]->constant, ctx);
    for (unsigned k = 0; k < m; ++k)
      if (k != j && lin[d]->coeff[k])
        rest = rest + s.index[k] * lin[d]->coeff[k];
    s.index[j] = (getAffineDimExpr(d, ctx) - rest) * sign;
  }
  // The ranges: G's dimensions over the tensor's shape and the free
  // extents.
  SmallVector<int64_t> gExtents(shape);
  gExtents.append(s.freeExtents);
  s.safeIndex = s.index;
  for (unsigned j = 0; j < m; ++j) {
    if (state[j] != Pivot)
      continue;
    s.index[j] = simplifyAffineExpr(s.index[j], gExtents.size(), 0);
    auto range = getRange(s.index[j], gExtents);
    if (range && range->first >= 0 && range->second < extents[j]) {
      s.safeIndex[j] = s.index[j];
      continue;
    }
    s.masks.emplace_back(s.index[j], 0, extents[j]);
    s.safeIndex[j] = s.index[j] % extents[j];
  }
  // Coordinates no pivot solved must equal the tensor's coordinate.
  for (unsigned d = 0; d < n; ++d) {
    if (pivotOf[d] >= 0)
      continue;
    AffineExpr value = coords[d].replaceDims(s.index);
    s.masks.emplace_back(simplifyAffineExpr(getAffineDimExpr(d, ctx) - value,
                                            gExtents.size(), 0),
                         0, 1);
  }
  return s;
}

/// The inverse of a read's coordinates on their image, for reads injective
/// in the indices they use: coordinates that are mixed-radix sums of
/// indices (`h * 64 + e + 128`, e in [0, 64)) and (u floordiv q, u mod q)
/// pairs (a reshape).
struct Inverse {
  /// The indices the read uses, in coordinate order (within a coordinate,
  /// by decreasing coefficient): the dimensions of the read-shaped
  /// gradient.
  SmallVector<unsigned> used;
  /// Per forward index (null where unused): its value over the tensor's
  /// coordinates.
  SmallVector<AffineExpr> of;
};

/// A contribution to a tensor's cotangent: `tensor` read at `map` (over
/// the cotangent's coordinates; the identity where null) where `masks`
/// hold, zero elsewhere.
struct Part {
  Value tensor;
  AffineMap map;
  SmallVector<Mask> masks;
};

/// The conjunction of `masks` (over `indices`), or null when there are
/// none.
Value emitMasks(OpBuilder &b, Location loc, ArrayRef<Mask> masks,
                ValueRange indices) {
  Value keep;
  for (auto [expr, lo, hi] : masks) {
    Value at = IndexOp::create(b, loc, b.getI64Type(), indices,
                               AffineMapAttr::get(AffineMap::get(
                                   indices.size(), 0, {expr}, b.getContext())));
    auto bound = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
    };
    Value ok = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, at, bound(lo)),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, at,
                              bound(hi)));
    keep = keep ? arith::AndIOp::create(b, loc, keep, ok).getResult() : ok;
  }
  return keep;
}

std::optional<Inverse> invert(ArrayRef<AffineExpr> coords,
                              ArrayRef<int64_t> extents, MLIRContext *ctx) {
  unsigned n = coords.size(), m = extents.size();
  Inverse inv;
  inv.of.assign(m, AffineExpr());
  auto assign = [&](unsigned j, AffineExpr e) {
    if (inv.of[j])
      return false;
    inv.of[j] = e;
    inv.used.push_back(j);
    return true;
  };
  // (u floordiv q, u mod q): the coordinate of the other half.
  auto split = [&](AffineExpr e, AffineExprKind kind, unsigned &u, int64_t &q) {
    auto bin = dyn_cast<AffineBinaryOpExpr>(e);
    if (!bin || bin.getKind() != kind)
      return false;
    auto dim = dyn_cast<AffineDimExpr>(bin.getLHS());
    auto cst = dyn_cast<AffineConstantExpr>(bin.getRHS());
    if (!dim || !cst || cst.getValue() <= 0)
      return false;
    u = dim.getPosition();
    q = cst.getValue();
    return true;
  };
  llvm::SmallDenseSet<unsigned, 4> partners;
  for (unsigned d = 0; d < n; ++d) {
    if (partners.contains(d))
      continue;
    AffineExpr x = getAffineDimExpr(d, ctx);
    unsigned u;
    int64_t q;
    if (split(coords[d], AffineExprKind::FloorDiv, u, q)) {
      std::optional<unsigned> low;
      for (unsigned d2 = d + 1; d2 < n && !low; ++d2) {
        unsigned u2;
        int64_t q2;
        if (split(coords[d2], AffineExprKind::Mod, u2, q2) && u2 == u &&
            q2 == q)
          low = d2;
      }
      if (!low || !assign(u, x * q + getAffineDimExpr(*low, ctx)))
        return std::nullopt;
      partners.insert(*low);
      continue;
    }
    std::optional<Linear> l = getLinear(coords[d], m);
    if (!l)
      return std::nullopt;
    SmallVector<unsigned> js;
    for (unsigned j = 0; j < m; ++j)
      if (l->coeff[j] < 0)
        return std::nullopt;
      else if (l->coeff[j] > 0)
        js.push_back(j);
    llvm::sort(
        js, [&](unsigned a, unsigned b) { return l->coeff[a] > l->coeff[b]; });
    // Injective: each coefficient at least the next one's whole range.
    for (unsigned k = 0; k + 1 < js.size(); ++k)
      if (l->coeff[js[k]] < l->coeff[js[k + 1]] * extents[js[k + 1]])
        return std::nullopt;
    AffineExpr rest = x - l->constant;
    for (auto [k, j] : llvm::enumerate(js)) {
      AffineExpr e = rest.floorDiv(l->coeff[j]);
      if (k != 0)
        e = e % extents[j];
      if (!assign(j, e))
        return std::nullopt;
    }
  }
  return inv;
}

//===----------------------------------------------------------------------===//
// The gradient function
//===----------------------------------------------------------------------===//

/// Clones `op` at `b`: reads and index ops over the index values of
/// `exprOf` (affine expressions over `operands`, the index values in scope
/// at `b`) get their maps composed; a nested comprehension is cloned with
/// its own indices appended to `operands`.
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
                          compose(r.getIndices(), r.getMap()), operands);
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

/// `v` in `type` (floating point), extended or truncated.
Value castFloat(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  if (cast<FloatType>(v.getType()).getWidth() <
      cast<FloatType>(type).getWidth())
    return arith::ExtFOp::create(b, loc, type, v);
  return arith::TruncFOp::create(b, loc, type, v);
}

/// The type saved statistics and softmax derivatives are computed in: f32
/// for 16-bit types (a running max rounded to bf16 would shift every
/// probability by up to exp(2^-8 |m|)), else `t`.
Type getStatisticsType(Type t) {
  auto f = cast<FloatType>(getElementTypeOrSelf(t));
  return f.getWidth() < 32 ? Float32Type::get(t.getContext()) : Type(f);
}

/// The softmax probability of score `s` given the running max `m` and sum
/// `l`, exp(s - m) / l, as exp(s - (m + log l)): one exponential per
/// score, and the log-sum-exp shared by every score of a row (a GPU kernel
/// computes it once per row and tile; the division by l would cost a
/// second special-function instruction per score).
Value probability(OpBuilder &b, Location loc, Value s, Value m, Value l) {
  Value lse = arith::AddFOp::create(b, loc, m, math::LogOp::create(b, loc, l));
  return math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, s, lse));
}

/// The operations of `c`'s body that `v` depends on (a nested
/// comprehension stands for its contents) and the indices of `c` they use.
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

/// The cotangent of an online_softmax reduction's scores,
///
///   ds(i, j) = p(i, j) (sum_e dO(i, e) v(j, e) - D(i)),
///   D(i) = sum_e dO(i, e) O(i, e),   p = exp(s - m) / l,
///
/// seeded in the gradients of the reads the scores use, over the
/// normalizer's indices (i, j): the output's columns e are summed once, in
/// the nested dot product and in D, not around the whole gradient (which
/// would make attention's dQ a sum over (j, e) with the score inside).
struct ScoreSeed {
  ComprehensionOp online;
  Value m, l, d, dOut;
};

class Differentiator {
public:
  Differentiator(func::FuncOp grad, ArrayRef<unsigned> wrt,
                 unsigned &numGradients)
      : grad(grad), wrt(wrt), numGradients(numGradients) {}

  /// Builds the gradients of `wrt` given the cotangents `seeds` of the
  /// returned values; returns them in `wrt` order.
  FailureOr<SmallVector<Value>> run(ArrayRef<std::pair<Value, Value>> seeds);

private:
  LogicalResult differentiate(ComprehensionOp c,
                              ArrayRef<Value> resultCotangents);
  /// `saved`: the tie counts of a max/min reduction; (m, l, tie counts)
  /// of a softmax_norm one; (m, l) of an online_softmax one.
  /// `nested`: the recomputed nested sum in `c`'s body holding `read`.
  /// With `score`, `c` is an online_softmax reduction's normalizer and
  /// the scores are seeded with ScoreSeed's cotangent.
  LogicalResult emitReadGradient(ComprehensionOp c, ReadOp read,
                                 ComprehensionOp nested,
                                 ArrayRef<Value> resultCotangents,
                                 ArrayRef<Value> saved,
                                 const ScoreSeed *score = nullptr);
  /// An online_softmax reduction: the values' reads through c (seeded
  /// dO p), the scores' reads through its normalizer (ScoreSeed).
  LogicalResult differentiateOnlineSoftmax(ComprehensionOp c,
                                           ArrayRef<Value> cotangents);
  /// The sum of `parts` (tensors of type `type`), or zeros.
  Value sum(ArrayRef<Part> parts, RankedTensorType type, Location loc);
  /// For a max/min reduction: the number of terms equal to the result.
  Value tieCount(ComprehensionOp c);
  /// For an online_softmax reduction: its running max and sum (m, l), by
  /// a softmax_norm reduction of the same scores over the parallel indices
  /// they use (attention: per row, [B, H, L]), in getStatisticsType.
  /// `clones` maps c's score operations to the normalizer's.
  ComprehensionOp normalizer(ComprehensionOp c, IRMapping &clones);
  /// D = sum_e dO(.., e) O(.., e) over the normalizer's indices of the
  /// online_softmax reduction `c` (ScoreSeed).
  Value rowDot(ComprehensionOp c, Value dOut);

  func::FuncOp grad;
  ArrayRef<unsigned> wrt;
  unsigned &numGradients;
  /// Tensors whose gradient is wanted or flows to one that is.
  llvm::DenseSet<Value> needsGradient;
  /// Per online_softmax comprehension: the parallel indices its saved
  /// (m, l) are indexed by.
  llvm::DenseMap<Operation *, SmallVector<unsigned>> normalizerIndices;
  /// Cotangent contributions per tensor.
  llvm::MapVector<Value, SmallVector<Part>> contributions;
  /// Where gradient comprehensions go: before the return.
  OpBuilder builder{grad.getContext()};
};

Value Differentiator::sum(ArrayRef<Part> parts, RankedTensorType type,
                          Location loc) {
  if (parts.size() == 1 && !parts.front().map)
    return parts.front().tensor;
  OpBuilder &b = builder;
  auto c =
      ComprehensionOp::create(b, loc, TypeRange{type}, type.getShape(),
                              ArrayRef<int64_t>{}, Attribute(), ScheduleAttr());
  // The builder stays before the return: new ops go after `c`.
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&c.getBody());
  SmallVector<Value> idx;
  for (int64_t i = 0; i < type.getRank(); ++i)
    idx.push_back(body->addArgument(b.getIndexType(), loc));
  Type e = type.getElementType();
  Value total;
  if (parts.empty()) {
    total = arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 0.0));
  } else {
    AffineMap id =
        AffineMap::getMultiDimIdentityMap(idx.size(), b.getContext());
    for (const Part &p : parts) {
      Value v = ReadOp::create(b, loc, p.tensor, p.map ? p.map : id, idx);
      if (Value keep = emitMasks(b, loc, p.masks, idx))
        v = arith::SelectOp::create(
            b, loc, keep, v,
            arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 0.0)));
      total = total ? arith::AddFOp::create(b, loc, total, v).getResult() : v;
    }
  }
  YieldOp::create(b, loc, ValueRange{total});
  return c.getResult(0);
}

Value Differentiator::tieCount(ComprehensionOp c) {
  // count[p] = sum_r (body(p, r) == result[p] ? 1 : 0)
  OpBuilder &b = builder;
  Location loc = c.getLoc();
  auto type = cast<RankedTensorType>(c.getResult(0).getType());
  auto count = ComprehensionOp::create(
      b, loc, TypeRange{type}, c.getParallelExtents(), c.getReducedExtents(),
      MonoidKindAttr::get(b.getContext(), MonoidKind::Add), ScheduleAttr());
  count->setAttr(kSavedAttrName, b.getUnitAttr());
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&count.getBody());
  IRMapping map;
  for (BlockArgument a : c.getBodyBlock().getArguments())
    map.map(a, body->addArgument(b.getIndexType(), loc));
  for (Operation &op : c.getBodyBlock().without_terminator())
    b.clone(op, map);
  Value term = map.lookup(c.getYield().getValues()[0]);
  SmallVector<Value> parallel;
  for (unsigned p = 0; p < c.getNumParallel(); ++p)
    parallel.push_back(body->getArgument(p));
  Value result = ReadOp::create(
      b, loc, c.getResult(0),
      AffineMap::getMultiDimIdentityMap(parallel.size(), b.getContext()),
      parallel);
  Type e = type.getElementType();
  if (term.getType() != e)
    term = arith::TruncFOp::create(b, loc, e, term);
  Value eq =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, term, result);
  Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 1.0));
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 0.0));
  YieldOp::create(b, loc,
                  ValueRange{arith::SelectOp::create(b, loc, eq, one, zero)});
  return count.getResult(0);
}

ComprehensionOp Differentiator::normalizer(ComprehensionOp c,
                                           IRMapping &clones) {
  OpBuilder &b = builder;
  Location loc = c.getLoc();
  // The scores' operations and the parallel indices they use: attention's
  // scores do not use the output's column index, so (m, l) are saved per
  // row, [B, H, L].
  Value score = c.getYield().getValues()[0];
  llvm::SetVector<Operation *> slice;
  llvm::SmallDenseSet<unsigned, 8> used;
  getBodySlice(c, score, slice, used);
  SmallVector<unsigned> parallel;
  SmallVector<int64_t> extents;
  for (unsigned p = 0; p < c.getNumParallel(); ++p)
    if (used.contains(p)) {
      parallel.push_back(p);
      extents.push_back(c.getExtent(p));
    }
  normalizerIndices[c] = parallel;
  Type elementType = getStatisticsType(c.getResult(0).getType());
  Type t = RankedTensorType::get(extents, elementType);
  auto norm = ComprehensionOp::create(
      b, loc, TypeRange{t, t}, extents, c.getReducedExtents(),
      MonoidKindAttr::get(b.getContext(), MonoidKind::SoftmaxNorm),
      ScheduleAttr());
  norm->setAttr(kSavedAttrName, b.getUnitAttr());
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&norm.getBody());
  for (unsigned p : parallel)
    clones.map(c.getIndex(p), body->addArgument(b.getIndexType(), loc));
  for (unsigned r = c.getNumParallel(); r < c.getNumIndices(); ++r)
    clones.map(c.getIndex(r), body->addArgument(b.getIndexType(), loc));
  for (Operation &op : c.getBodyBlock().without_terminator())
    if (slice.contains(&op))
      b.clone(op, clones);
  YieldOp::create(
      b, loc, castFloat(b, loc, clones.lookupOrDefault(score), elementType));
  return norm;
}

Value Differentiator::rowDot(ComprehensionOp c, Value dOut) {
  OpBuilder &b = builder;
  Location loc = c.getLoc();
  ArrayRef<unsigned> rows = normalizerIndices[c];
  SmallVector<int64_t> rowExtents, columnExtents;
  SmallVector<unsigned> columns;
  for (unsigned p = 0; p < c.getNumParallel(); ++p) {
    if (llvm::is_contained(rows, p)) {
      rowExtents.push_back(c.getExtent(p));
    } else {
      columns.push_back(p);
      columnExtents.push_back(c.getExtent(p));
    }
  }
  Type e = getStatisticsType(c.getResult(0).getType());
  auto d = ComprehensionOp::create(
      b, loc, TypeRange{RankedTensorType::get(rowExtents, e)}, rowExtents,
      columnExtents,
      columns.empty() ? Attribute()
                      : MonoidKindAttr::get(b.getContext(), MonoidKind::Add),
      ScheduleAttr());
  d->setAttr(kSavedAttrName, b.getUnitAttr());
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&d.getBody());
  SmallVector<Value> indices(c.getNumParallel());
  for (unsigned p : rows)
    indices[p] = body->addArgument(b.getIndexType(), loc);
  for (unsigned p : columns)
    indices[p] = body->addArgument(b.getIndexType(), loc);
  AffineMap id =
      AffineMap::getMultiDimIdentityMap(indices.size(), b.getContext());
  Value g = castFloat(b, loc, ReadOp::create(b, loc, dOut, id, indices), e);
  Value o =
      castFloat(b, loc, ReadOp::create(b, loc, c.getResult(0), id, indices), e);
  YieldOp::create(b, loc, ValueRange{arith::MulFOp::create(b, loc, g, o)});
  return d.getResult(0);
}

/// Reverse mode over the scalar ops `ops` (in program order) of a body at
/// `b`: `adjoint` holds the seeds; returns failure (with a diagnostic) when
/// an op on a differentiated path has no rule.
///
/// Long by design (about 160 lines): the table of scalar derivative rules,
/// one case per arith and math op, in one place.
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
            .Case<ReadOp, IndexOp, arith::ConstantOp, arith::SIToFPOp,
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

LogicalResult Differentiator::emitReadGradient(ComprehensionOp c, ReadOp read,
                                               ComprehensionOp nested,
                                               ArrayRef<Value> cotangents,
                                               ArrayRef<Value> saved,
                                               const ScoreSeed *score) {
  OpBuilder &b = builder;
  MLIRContext *ctx = b.getContext();
  Location loc = read.getLoc();
  auto type = cast<RankedTensorType>(read.getTensor().getType());
  // The iteration space: the comprehension's indices, then those of the
  // recomputed nested reduction holding the read (if any).
  unsigned m = c.getNumIndices();
  SmallVector<int64_t> extents;
  for (unsigned j = 0; j < m; ++j)
    extents.push_back(c.getExtent(j));
  if (nested)
    for (unsigned j = 0; j < nested.getNumIndices(); ++j)
      extents.push_back(nested.getExtent(j));
  auto position = [&](Value v) {
    auto arg = cast<BlockArgument>(v);
    return arg.getOwner()->getParentOp() == c.getOperation()
               ? arg.getArgNumber()
               : m + arg.getArgNumber();
  };
  // The read's coordinates over those indices.
  SmallVector<AffineExpr> toIndex;
  for (Value v : read.getIndices())
    toIndex.push_back(getAffineDimExpr(position(v), ctx));
  SmallVector<AffineExpr> coords;
  for (AffineExpr e : read.getMap().getResults())
    coords.push_back(e.replaceDims(toIndex));
  Solution s = solve(coords, extents, type.getShape(), ctx);
  // Where a coordinate combines indices (`h * 64 + e`, a reshape's pair),
  // the solution sums over indices the read determines, under masks (one
  // term in 2 of a 2-head sum, L^2 terms for a reshape): the gradient is
  // then computed over the read's own indices (its G reads like the
  // forward) and gathered into the tensor through the inverse map.
  std::optional<Inverse> inv;
  RankedTensorType gType = type;
  bool maskedSum = false;
  for (unsigned j = 0; j < extents.size(); ++j) {
    auto dim = dyn_cast<AffineDimExpr>(s.index[j]);
    maskedSum |= dim && dim.getPosition() >= type.getRank() &&
                 llvm::any_of(coords, [&](AffineExpr e) {
                   return e.isFunctionOfDim(j);
                 });
  }
  // So is a read of part of the tensor (`AU[b, l, f + F]`): its gradient
  // over the read's indices needs no mask, the gather masks once.
  bool partial = llvm::any_of(s.masks, [&](const Mask &m) {
    return std::get<2>(m) != 1 || std::get<1>(m) != 0;
  });
  if ((maskedSum || partial) && (inv = invert(coords, extents, ctx))) {
    SmallVector<int64_t> shape;
    SmallVector<AffineExpr> own;
    for (unsigned j : inv->used) {
      shape.push_back(extents[j]);
      own.push_back(getAffineDimExpr(j, ctx));
    }
    gType = RankedTensorType::get(shape, type.getElementType());
    s = solve(own, extents, shape, ctx);
  }
  unsigned gDims = gType.getRank() + s.freeExtents.size();

  auto g = ComprehensionOp::create(
      b, loc, TypeRange{gType}, gType.getShape(), s.freeExtents,
      s.freeExtents.empty() ? Attribute()
                            : MonoidKindAttr::get(ctx, MonoidKind::Add),
      ScheduleAttr());
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&g.getBody());
  SmallVector<Value> gIndices;
  for (unsigned d = 0; d < gDims; ++d)
    gIndices.push_back(body->addArgument(b.getIndexType(), loc));

  // The forward body at the solved indices: reads and index ops compose
  // their maps with the substitution (recomputed nested reductions keep
  // their own indices).
  llvm::DenseMap<Value, AffineExpr> exprOf;
  for (unsigned j = 0; j < m; ++j)
    exprOf[c.getIndex(j)] = s.safeIndex[j];
  SmallVector<Value> operands(gIndices);
  IRMapping mapping;
  SmallVector<Operation *> cloned;
  for (Operation &op : c.getBodyBlock().without_terminator()) {
    Operation *copy = cloneSubstituted(b, &op, mapping, exprOf, operands);
    cloned.push_back(copy);
  }
  // The read itself, and where the differentiated path starts at the
  // comprehension's level: the read, or the nested reduction holding it.
  Value target, start;
  SmallVector<Operation *> inner;
  if (!nested) {
    target = start = mapping.lookup(read.getResult());
  } else {
    start = mapping.lookup(nested.getResult(0));
  }

  // The differentiated path: from the read to the yielded values.
  llvm::DenseSet<Operation *> forward;
  llvm::DenseSet<Value> reached{start};
  for (Operation *op : cloned)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return reached.contains(v); })) {
      forward.insert(op);
      reached.insert(op->result_begin(), op->result_end());
    }

  // Seeds: the cotangent of each result at the comprehension's parallel
  // indices (for max/min: only where the term is the result, shared among
  // ties).
  llvm::DenseMap<Value, Value> adjoint;
  SmallVector<AffineExpr> parallelExprs(
      s.safeIndex.begin(), s.safeIndex.begin() + c.getNumParallel());
  AffineMap atParallel = AffineMap::get(gDims, 0, parallelExprs, ctx);
  std::optional<MonoidKind> monoid = c.getBuiltinMonoid();
  // `tensor` at the comprehension's parallel indices, in `type`.
  auto readAt = [&](Value tensor, Type type) -> Value {
    return castFloat(
        b, loc, ReadOp::create(b, loc, tensor, atParallel, gIndices), type);
  };
  auto seedAdd = [&](Value v, Value a) {
    auto [it, inserted] = adjoint.try_emplace(v, a);
    if (!inserted)
      it->second = arith::AddFOp::create(b, loc, it->second, a);
  };
  if (score) {
    // c is the normalizer of score->online: its parallel indices are the
    // scores' (the rows), its reduced ones the keys.
    ComprehensionOp online = score->online;
    Value sc = mapping.lookup(c.getYield().getValues()[0]);
    Type t = getStatisticsType(sc.getType());
    Value p = probability(b, loc, castFloat(b, loc, sc, t), readAt(score->m, t),
                          readAt(score->l, t));
    // sum_e dO(i, e) v(j, e): the values' operations over the output's
    // columns e, nested.
    ArrayRef<unsigned> rows = normalizerIndices[online];
    SmallVector<int64_t> columnExtents;
    SmallVector<unsigned> columns;
    for (unsigned q = 0; q < online.getNumParallel(); ++q)
      if (!llvm::is_contained(rows, q)) {
        columns.push_back(q);
        columnExtents.push_back(online.getExtent(q));
      }
    auto dot = ComprehensionOp::create(
        b, loc, TypeRange{t}, ArrayRef<int64_t>{}, columnExtents,
        MonoidKindAttr::get(ctx, MonoidKind::Add), ScheduleAttr());
    {
      OpBuilder::InsertionGuard inner(b);
      Block *dotBody = b.createBlock(&dot.getBody());
      llvm::DenseMap<Value, AffineExpr> at;
      size_t before = operands.size();
      for (auto [k, q] : llvm::enumerate(rows))
        at[online.getIndex(q)] = s.safeIndex[k];
      for (unsigned r = 0; r < online.getNumReduced(); ++r)
        at[online.getIndex(online.getNumParallel() + r)] =
            s.safeIndex[c.getNumParallel() + r];
      for (unsigned q : columns) {
        at[online.getIndex(q)] = getAffineDimExpr(operands.size(), ctx);
        operands.push_back(dotBody->addArgument(b.getIndexType(), loc));
      }
      Value value = online.getYield().getValues()[1];
      llvm::SetVector<Operation *> valueOps;
      llvm::SmallDenseSet<unsigned, 8> unused;
      getBodySlice(online, value, valueOps, unused);
      IRMapping valueMap;
      for (Operation &op : online.getBodyBlock().without_terminator())
        if (valueOps.contains(&op))
          cloneSubstituted(b, &op, valueMap, at, operands);
      SmallVector<AffineExpr> outAt;
      for (unsigned q = 0; q < online.getNumParallel(); ++q)
        outAt.push_back(at[online.getIndex(q)]);
      Value dOut = ReadOp::create(
          b, loc, score->dOut, AffineMap::get(operands.size(), 0, outAt, ctx),
          operands);
      YieldOp::create(
          b, loc,
          ValueRange{arith::MulFOp::create(
              b, loc, castFloat(b, loc, dOut, t),
              castFloat(b, loc, valueMap.lookupOrDefault(value), t))});
      operands.resize(before);
    }
    Value ds = arith::MulFOp::create(
        b, loc, p,
        arith::SubFOp::create(b, loc, dot.getResult(0), readAt(score->d, t)));
    seedAdd(sc, castFloat(b, loc, ds, sc.getType()));
  } else if (monoid == MonoidKind::SoftmaxNorm) {
    Value score = mapping.lookup(c.getYield().getValues()[0]);
    Type t = score.getType();
    auto cst = [&](double v) -> Value {
      return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, v));
    };
    // m = max s (ties share), l = sum exp(s - m):
    // ds = dm share + dl (exp(s - m) - l share).
    Value m = readAt(saved[0], t), l = readAt(saved[1], t);
    Value e =
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, score, m));
    Value eq =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, score, m);
    Value share = arith::SelectOp::create(
        b, loc, eq,
        arith::DivFOp::create(b, loc, cst(1.0), readAt(saved[2], t)), cst(0.0));
    Value seed = cst(0.0);
    if (cotangents[0])
      seed = arith::MulFOp::create(b, loc, readAt(cotangents[0], t), share);
    if (cotangents[1]) {
      Value dl = readAt(cotangents[1], t);
      Value d = arith::SubFOp::create(b, loc, e,
                                      arith::MulFOp::create(b, loc, l, share));
      seed = arith::AddFOp::create(b, loc, seed,
                                   arith::MulFOp::create(b, loc, dl, d));
    }
    seedAdd(score, seed);
  } else if (monoid == MonoidKind::OnlineSoftmax && cotangents[0]) {
    // o = sum_j p_j v_j, p_j = exp(s_j - m) / l: dv_j = do p_j (the
    // scores' part goes through the normalizer, ScoreSeed). (m, l) are
    // saved over the parallel indices the scores use.
    Value score = mapping.lookup(c.getYield().getValues()[0]);
    Value value = mapping.lookup(c.getYield().getValues()[1]);
    Type t = getStatisticsType(score.getType());
    auto readSaved = [&](Value tensor) -> Value {
      SmallVector<AffineExpr> exprs;
      for (unsigned p : normalizerIndices.lookup(c))
        exprs.push_back(s.safeIndex[p]);
      return castFloat(b, loc,
                       ReadOp::create(b, loc, tensor,
                                      AffineMap::get(gDims, 0, exprs, ctx),
                                      gIndices),
                       t);
    };
    Value p = probability(b, loc, castFloat(b, loc, score, t),
                          readSaved(saved[0]), readSaved(saved[1]));
    Value dp = arith::MulFOp::create(b, loc, readAt(cotangents[0], t), p);
    seedAdd(value, castFloat(b, loc, dp, value.getType()));
  }
  for (auto [k, dy] : llvm::enumerate(cotangents)) {
    if (!dy || monoid == MonoidKind::SoftmaxNorm ||
        monoid == MonoidKind::OnlineSoftmax)
      continue;
    Value yielded = mapping.lookup(c.getYield().getValues()[k]);
    Value seed = ReadOp::create(b, loc, dy, atParallel, gIndices);
    if (monoid == MonoidKind::Max || monoid == MonoidKind::Min) {
      Value result =
          ReadOp::create(b, loc, c.getResult(k), atParallel, gIndices);
      Value ties = ReadOp::create(b, loc, saved[0], atParallel, gIndices);
      Value term = yielded;
      if (term.getType() != result.getType())
        term = arith::TruncFOp::create(b, loc, result.getType(), term);
      Value eq = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, term,
                                       result);
      Value share = arith::DivFOp::create(b, loc, seed, ties);
      Value zero = arith::ConstantOp::create(
          b, loc, b.getFloatAttr(seed.getType(), 0.0));
      seed = arith::SelectOp::create(b, loc, eq, share, zero);
    }
    if (seed.getType() != yielded.getType())
      seed = arith::ExtFOp::create(b, loc, yielded.getType(), seed);
    seedAdd(yielded, seed);
  }
  // Only ops that lead from the read to a seeded value need rules.
  llvm::DenseSet<Value> live;
  for (auto &[v, a] : adjoint)
    live.insert(v);
  llvm::DenseSet<Operation *> onPath;
  for (Operation *op : llvm::reverse(cloned))
    if (forward.contains(op) && llvm::any_of(op->getResults(), [&](Value v) {
          return live.contains(v);
        })) {
      onPath.insert(op);
      live.insert(op->operand_begin(), op->operand_end());
    }
  if (failed(backpropagate(b, cloned, adjoint, onPath)))
    return failure();

  Value value;
  if (!nested) {
    value = adjoint.lookup(target);
  } else if (Value through = adjoint.lookup(start)) {
    // Inside the recomputed sum: its term at the solved indices, whose
    // cotangent is the sum's.
    for (unsigned j = 0; j < nested.getNumIndices(); ++j)
      exprOf[nested.getIndex(j)] = s.safeIndex[m + j];
    IRMapping innerMap;
    for (Operation &op : nested.getBodyBlock().without_terminator())
      inner.push_back(cloneSubstituted(b, &op, innerMap, exprOf, operands));
    target = innerMap.lookup(read.getResult());
    Value term = innerMap.lookup(nested.getYield().getValues()[0]);
    llvm::DenseMap<Value, Value> innerAdjoint;
    if (through.getType() != term.getType())
      through = arith::ExtFOp::create(b, loc, term.getType(), through);
    innerAdjoint[term] = through;
    llvm::DenseSet<Value> reachedInner{target};
    llvm::DenseSet<Operation *> innerPath;
    for (Operation *op : inner)
      if (llvm::any_of(op->getOperands(),
                       [&](Value v) { return reachedInner.contains(v); })) {
        innerPath.insert(op);
        reachedInner.insert(op->result_begin(), op->result_end());
      }
    if (failed(backpropagate(b, inner, innerAdjoint, innerPath)))
      return failure();
    value = innerAdjoint.lookup(target);
  }

  Type e = type.getElementType();
  if (!value)
    value = arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 0.0));
  if (value.getType() != e)
    value = arith::TruncFOp::create(b, loc, e, value);
  // Masks: solved indices within their extents, unsolved coordinates equal
  // to the read's.
  if (Value keep = emitMasks(b, loc, s.masks, gIndices))
    value = arith::SelectOp::create(
        b, loc, keep, value,
        arith::ConstantOp::create(b, loc, b.getFloatAttr(e, 0.0)));
  YieldOp::create(b, loc, ValueRange{value});
  Part part{g.getResult(0), AffineMap(), {}};
  if (inv) {
    // The gather: each coordinate x reads G at the indices that read it,
    // where they are in range and read exactly x.
    SmallVector<AffineExpr> of(inv->of), at;
    for (AffineExpr &e : of)
      if (!e)
        e = getAffineConstantExpr(0, ctx);
    for (unsigned j : inv->used) {
      AffineExpr e = simplifyAffineExpr(of[j], type.getRank(), 0);
      auto range = getBounds(e, type.getShape());
      if (range && range->first >= 0 && range->second < extents[j]) {
        at.push_back(e);
        continue;
      }
      part.masks.emplace_back(e, 0, extents[j]);
      at.push_back(e % extents[j]);
    }
    for (auto [d, coord] : llvm::enumerate(coords)) {
      AffineExpr diff = simplifyAffineExpr(
          coord.replaceDims(of) - getAffineDimExpr(d, ctx), type.getRank(), 0);
      auto range = getBounds(diff, type.getShape());
      if (!range || range->first != 0 || range->second != 0)
        part.masks.emplace_back(diff, 0, 1);
    }
    part.map = AffineMap::get(type.getRank(), 0, at, ctx);
  }
  contributions[read.getTensor()].push_back(part);
  ++numGradients;
  return success();
}

LogicalResult Differentiator::differentiate(ComprehensionOp c,
                                            ArrayRef<Value> cotangents) {
  bool readsGradient = false;
  c.getBodyBlock().walk([&](ReadOp r) {
    readsGradient |= needsGradient.contains(r.getTensor());
  });
  if (!readsGradient)
    return success();
  std::optional<MonoidKind> monoid = c.getBuiltinMonoid();
  SmallVector<Value> saved;
  if (c.getNumReduced() != 0) {
    if (monoid == MonoidKind::Max || monoid == MonoidKind::Min) {
      if (c.getNumResults() != 1)
        return c.emitOpError() << "has several results under max/min";
      saved.push_back(tieCount(c));
    } else if (monoid == MonoidKind::SoftmaxNorm) {
      saved = {c.getResult(0), c.getResult(1), tieCount(c)};
    } else if (monoid == MonoidKind::OnlineSoftmax) {
      return differentiateOnlineSoftmax(c, cotangents);
    } else if (monoid != MonoidKind::Add) {
      InFlightDiagnostic d = c.emitOpError()
                             << "reduces under a monoid --tang-grad has no "
                                "derivative rule for (";
      if (Attribute attr = c.getMonoidAttr())
        d << attr;
      return d << "); add, max, min, softmax_norm and online_softmax have "
                  "one";
    }
  }
  for (Operation &op : llvm::make_early_inc_range(c.getBodyBlock())) {
    if (auto r = dyn_cast<ReadOp>(op)) {
      if (needsGradient.contains(r.getTensor()) &&
          failed(emitReadGradient(c, r, {}, cotangents, saved)))
        return failure();
    } else if (auto n = dyn_cast<ComprehensionOp>(op)) {
      for (ReadOp r : llvm::to_vector(n.getBodyBlock().getOps<ReadOp>()))
        if (needsGradient.contains(r.getTensor()) &&
            failed(emitReadGradient(c, r, n, cotangents, saved)))
          return failure();
    }
  }
  return success();
}

LogicalResult
Differentiator::differentiateOnlineSoftmax(ComprehensionOp c,
                                           ArrayRef<Value> cotangents) {
  if (!cotangents[0])
    return success();
  // The output itself is saved for D (fused into D's sum it would be
  // recomputed there off the tensor cores).
  c->setAttr(kSavedAttrName, OpBuilder(c).getUnitAttr());
  IRMapping clones;
  ComprehensionOp norm = normalizer(c, clones);
  ScoreSeed seed{c, norm.getResult(0), norm.getResult(1),
                 rowDot(c, cotangents[0]), cotangents[0]};
  SmallVector<Value> saved{seed.m, seed.l};
  llvm::SetVector<Operation *> valueOps;
  llvm::SmallDenseSet<unsigned, 8> unused;
  getBodySlice(c, c.getYield().getValues()[1], valueOps, unused);
  // A read (of c's body or of a nested reduction `n` in it) feeds the
  // values, the scores, or both: each part its own gradient.
  auto visit = [&](ReadOp r, ComprehensionOp n) -> LogicalResult {
    if (!needsGradient.contains(r.getTensor()))
      return success();
    Operation *top = n ? n.getOperation() : r.getOperation();
    if (valueOps.contains(top) &&
        failed(emitReadGradient(c, r, n, cotangents, saved)))
      return failure();
    if (auto copy =
            dyn_cast_or_null<ReadOp>(clones.lookupOrNull(r.getOperation())))
      return emitReadGradient(
          norm, copy,
          n ? cast<ComprehensionOp>(clones.lookup(n.getOperation()))
            : ComprehensionOp(),
          {}, {}, &seed);
    return success();
  };
  for (Operation &op : llvm::make_early_inc_range(c.getBodyBlock())) {
    if (auto r = dyn_cast<ReadOp>(op)) {
      if (failed(visit(r, {})))
        return failure();
    } else if (auto n = dyn_cast<ComprehensionOp>(op)) {
      for (ReadOp r : llvm::to_vector(n.getBodyBlock().getOps<ReadOp>()))
        if (failed(visit(r, n)))
          return failure();
    }
  }
  return success();
}

FailureOr<SmallVector<Value>>
Differentiator::run(ArrayRef<std::pair<Value, Value>> seeds) {
  Block &entry = grad.getBody().front();
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  builder.setInsertionPoint(ret);
  for (unsigned i : wrt)
    needsGradient.insert(entry.getArgument(i));
  SmallVector<ComprehensionOp> program;
  for (Operation &op : entry.without_terminator()) {
    auto c = dyn_cast<ComprehensionOp>(op);
    if (!c) {
      if (isa<arith::ConstantOp>(op))
        continue;
      return op.emitOpError() << "is not a comprehension: --tang-grad "
                                 "differentiates functions of "
                                 "comprehensions and views";
    }
    program.push_back(c);
    bool reads = false;
    c.getBodyBlock().walk(
        [&](ReadOp r) { reads |= needsGradient.contains(r.getTensor()); });
    if (reads)
      for (Value r : c.getResults())
        if (isFloatTensor(r.getType()))
          needsGradient.insert(r);
  }
  for (auto [value, dy] : seeds)
    contributions[value].push_back(Part{dy, AffineMap(), {}});
  for (ComprehensionOp c : llvm::reverse(program)) {
    SmallVector<Value> cotangents;
    bool any = false;
    for (Value r : c.getResults()) {
      auto it = contributions.find(r);
      if (it == contributions.end() || !isFloatTensor(r.getType())) {
        cotangents.push_back(Value());
        continue;
      }
      cotangents.push_back(
          sum(it->second, cast<RankedTensorType>(r.getType()), c.getLoc()));
      any = true;
    }
    if (any && failed(differentiate(c, cotangents)))
      return failure();
  }
  SmallVector<Value> gradients;
  for (unsigned i : wrt) {
    Value arg = entry.getArgument(i);
    gradients.push_back(sum(contributions.lookup(arg),
                            cast<RankedTensorType>(arg.getType()),
                            grad.getLoc()));
  }
  return gradients;
}

/// Whether `c` copies a tensor element by element, through float casts
/// only (a cotangent widened to f32 for a product computed in f32): its
/// read, or null.
ReadOp getCopiedRead(ComprehensionOp c) {
  if (c.getNumReduced() != 0 || c.getNumResults() != 1)
    return {};
  Block &body = c.getBodyBlock();
  auto read = dyn_cast<ReadOp>(&body.front());
  if (!read || !read.getMap().isIdentity() ||
      !llvm::equal(read.getIndices(), body.getArguments()))
    return {};
  Value v = read.getResult();
  for (Operation &op : llvm::drop_begin(body.without_terminator())) {
    if (!isa<arith::ExtFOp, arith::TruncFOp>(op) || op.getOperand(0) != v)
      return {};
    v = op.getResult(0);
  }
  return c.getYield().getValues()[0] == v ? read : ReadOp();
}

/// Reads of copies (getCopiedRead) read the copied tensor instead, casts
/// applied at the read: a GEMM of a 16-bit cotangent then reads 16-bit
/// operands, and the copy goes away.
void forwardCopies(func::FuncOp f) {
  for (auto c :
       llvm::to_vector(f.getBody().front().getOps<ComprehensionOp>())) {
    ReadOp copied = getCopiedRead(c);
    if (!copied)
      continue;
    for (OpOperand &use :
         llvm::make_early_inc_range(c.getResult(0).getUses())) {
      auto read = dyn_cast<ReadOp>(use.getOwner());
      if (!read)
        continue;
      OpBuilder b(read);
      IRMapping map;
      Value v = ReadOp::create(b, read.getLoc(), copied.getTensor(),
                               read.getMap(), read.getIndices());
      map.map(copied.getResult(), v);
      for (Operation &op :
           llvm::drop_begin(c.getBodyBlock().without_terminator()))
        v = b.clone(op, map)->getResult(0);
      read.replaceAllUsesWith(v);
      read.erase();
    }
  }
}

struct TangGradPass : tang::impl::TangGradBase<TangGradPass> {
  using Base::Base;

  /// About 150 lines: the gradient function in the order it is built
  /// (signature, forward recomputation, seeds, the reverse sweep over
  /// comprehensions, the results).
  LogicalResult differentiateFunction(func::FuncOp f) {
    ModuleOp module = getOperation();
    SmallVector<unsigned> args;
    if (wrt.empty()) {
      for (auto [i, t] : llvm::enumerate(f.getArgumentTypes()))
        if (isFloatTensor(t))
          args.push_back(i);
    } else {
      for (int64_t i : wrt) {
        if (i < 0 || i >= static_cast<int64_t>(f.getNumArguments()))
          return f.emitOpError()
                 << "has no argument #" << i << " to differentiate (wrt)";
        if (!isFloatTensor(f.getArgumentTypes()[i]))
          return f.emitOpError() << "argument #" << i
                                 << " is not a floating-point tensor: it has "
                                    "no gradient";
        args.push_back(i);
      }
    }
    // @f_grad(inputs, one cotangent per floating-point result) -> gradients.
    SmallVector<Type> inputs(f.getArgumentTypes());
    SmallVector<unsigned> seeded;
    for (auto [i, t] : llvm::enumerate(f.getResultTypes()))
      if (isFloatTensor(t)) {
        inputs.push_back(t);
        seeded.push_back(i);
      }
    SmallVector<Type> outputs;
    for (unsigned i : args)
      outputs.push_back(f.getArgumentTypes()[i]);
    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(f);
    std::string name = (f.getName() + "_grad").str();
    if (module.lookupSymbol(name))
      return f.emitOpError() << "already has a gradient function @" << name;
    auto grad = func::FuncOp::create(b, f.getLoc(), name,
                                     b.getFunctionType(inputs, outputs));
    Block *entry = grad.addEntryBlock();
    // The forward as fusion leaves it: a copy of f fused in a scratch module
    // (f itself stays as written).
    func::FuncOp source = f;
    ModuleOp scratch;
    llvm::scope_exit eraseScratch([&] {
      if (scratch)
        scratch.erase();
    });
    if (fuseForward) {
      OpBuilder sb = OpBuilder::atBlockEnd(module.getBody());
      scratch = ModuleOp::create(sb, f.getLoc());
      sb.setInsertionPointToStart(scratch.getBody());
      // What f may refer to (user monoids), then f.
      for (Operation &op : module.getBody()->without_terminator())
        if (!isa<func::FuncOp>(op) && &op != scratch.getOperation())
          sb.clone(op);
      source = cast<func::FuncOp>(sb.clone(*f));
      OpPassManager pm(ModuleOp::getOperationName());
      pm.addPass(createTangFuse());
      pm.addPass(createTangOnlineSoftmax());
      if (failed(runPipeline(pm, scratch)))
        return f.emitOpError() << "--tang-grad: fusing the forward program "
                                  "failed (fuse-forward=false differentiates "
                                  "it as written)";
    }
    IRMapping map;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      map.map(source.getArgument(i), entry->getArgument(i));
    b.setInsertionPointToStart(entry);
    for (Operation &op : source.getBody().front())
      b.clone(op, map);

    // Views fold into the reads that use them.
    if (failed(applyPatternsGreedily(grad, RewritePatternSet(&getContext()))))
      return grad.emitOpError() << "could not fold views into reads";
    for (Operation &op : llvm::make_early_inc_range(
             llvm::reverse(grad.getBody().front().without_terminator())))
      if (isa<ViewOp>(op) && op.use_empty())
        op.erase();
    // Nested comprehensions, innermost first: saved tensors, or sums
    // recomputed in the gradient's bodies.
    if (!llvm::is_contained({"auto", "save", "recompute"}, policy.getValue()))
      return f.emitOpError() << "--tang-grad: policy must be auto, save or "
                                "recompute, got '"
                             << policy << "'";
    int64_t largest = 0;
    for (Type t :
         llvm::concat<const Type>(f.getArgumentTypes(), f.getResultTypes()))
      if (auto r = dyn_cast<RankedTensorType>(t))
        largest = std::max(largest, r.getNumElements());
    for (ComprehensionOp top :
         llvm::to_vector(grad.getBody().front().getOps<ComprehensionOp>())) {
      SmallVector<ComprehensionOp> nested;
      top.getBodyBlock().walk<WalkOrder::PostOrder>(
          [&](ComprehensionOp n) { nested.push_back(n); });
      for (ComprehensionOp n : nested) {
        // The scores of an online-softmax reduction are recomputed in
        // the flash backward as in the forward, whatever their size.
        bool always = policy == "recompute" ||
                      top.getBuiltinMonoid() == MonoidKind::OnlineSoftmax;
        if (policy != "save" && isRecomputable(n, top, largest, always)) {
          ++numRecomputedNested;
          continue;
        }
        if (failed(hoistNested(n, top)))
          return failure();
        ++numSavedNested;
      }
    }

    auto ret = cast<func::ReturnOp>(entry->getTerminator());
    SmallVector<std::pair<Value, Value>> seeds;
    for (auto [k, i] : llvm::enumerate(seeded))
      seeds.emplace_back(ret.getOperand(i),
                         entry->getArgument(f.getNumArguments() + k));
    unsigned count = 0;
    Differentiator d(grad, args, count);
    FailureOr<SmallVector<Value>> gradients = d.run(seeds);
    if (failed(gradients))
      return failure();
    numGradients += count;
    b.setInsertionPoint(ret);
    // With split, the forward's results stay returned until the split.
    SmallVector<Value> returned(*gradients);
    if (split)
      returned.append(ret.getOperands().begin(), ret.getOperands().end());
    auto gradRet = func::ReturnOp::create(b, ret.getLoc(), returned);
    ret.erase();
    // Drop what the gradients do not use (forward values, recomputed
    // operations off the differentiated paths).
    auto simplify = [&](func::FuncOp fn) -> LogicalResult {
      if (failed(applyPatternsGreedily(fn, RewritePatternSet(&getContext()))))
        return fn.emitOpError() << "could not simplify the gradient";
      return success();
    };
    if (failed(simplify(grad)))
      return failure();
    forwardCopies(grad);
    if (failed(simplify(grad)))
      return failure();
    if (split) {
      if (failed(splitGradient(f, grad, gradients->size())))
        return failure();
      gradRet->eraseOperands(gradients->size(),
                             gradRet.getNumOperands() - gradients->size());
      if (failed(simplify(grad)) ||
          failed(simplify(module.lookupSymbol<func::FuncOp>(
              (f.getName() + "_fwd").str()))) ||
          failed(simplify(
              module.lookupSymbol<func::FuncOp>((f.getName() + "_bwd").str()))))
        return failure();
    }
    return success();
  }

  /// From `grad` (inputs, cotangents -> the first `numGradients` returned
  /// values, then f's results), @f_fwd(inputs) -> (results, residuals) and
  /// @f_bwd(inputs, results, residuals, cotangents) -> gradients: the
  /// operations that do not depend on a cotangent go forward, the tensors
  /// other than the results they pass to the others are the residuals
  /// (scalar constants are recomputed).
  LogicalResult splitGradient(func::FuncOp f, func::FuncOp grad,
                              unsigned numGradients) {
    ModuleOp module = getOperation();
    Block &entry = grad.getBody().front();
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    unsigned numInputs = f.getNumArguments();
    // Backward values: the cotangents and what depends on them.
    llvm::DenseSet<Value> backward(entry.args_begin() + numInputs,
                                   entry.args_end());
    SmallVector<Operation *> forwardOps, backwardOps;
    auto usesBackward = [&](Operation &op) {
      bool uses = false;
      op.walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          uses |= backward.contains(v);
      });
      return uses;
    };
    for (Operation &op : entry.without_terminator()) {
      if (usesBackward(op)) {
        backwardOps.push_back(&op);
        backward.insert(op.result_begin(), op.result_end());
      } else {
        forwardOps.push_back(&op);
      }
    }
    // Residuals: forward tensors the backward operations or the gradients
    // use; scalar constants and views (of inputs) are cloned instead.
    llvm::SetVector<Value> residuals;
    SmallVector<Operation *> constants;
    ValueRange results = ret.getOperands().drop_front(numGradients);
    std::function<void(Value)> need = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != &entry || backward.contains(v) ||
          llvm::is_contained(results, v))
        return;
      if (isa<RankedTensorType>(v.getType()) && !isa<ViewOp>(def)) {
        residuals.insert(v);
        return;
      }
      if (llvm::is_contained(constants, def))
        return;
      for (Value operand : def->getOperands())
        need(operand);
      constants.push_back(def);
    };
    for (Operation *op : backwardOps)
      op->walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          need(v);
      });
    for (Value v : ret.getOperands().take_front(numGradients))
      need(v);
    for (Operation *c : constants)
      if (!isa<arith::ConstantOp, ViewOp>(c))
        return c->emitOpError() << "--tang-grad split: a scalar the backward "
                                   "function needs is not a constant";

    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(grad);
    Location loc = grad.getLoc();
    for (StringRef suffix : {"_fwd", "_bwd"})
      if (module.lookupSymbol((f.getName() + suffix).str()))
        return f.emitOpError()
               << "already has a function @" << f.getName() << suffix;
    // @f_fwd(inputs) -> (results, residuals).
    SmallVector<Type> inputTypes(f.getArgumentTypes());
    SmallVector<Type> fwdResults(f.getResultTypes());
    for (Value r : residuals)
      fwdResults.push_back(r.getType());
    auto fwd = func::FuncOp::create(b, loc, (f.getName() + "_fwd").str(),
                                    b.getFunctionType(inputTypes, fwdResults));
    {
      OpBuilder::InsertionGuard guard(b);
      Block *body = fwd.addEntryBlock();
      b.setInsertionPointToStart(body);
      IRMapping map;
      for (unsigned i = 0; i < numInputs; ++i)
        map.map(entry.getArgument(i), body->getArgument(i));
      for (Operation *op : forwardOps)
        b.clone(*op, map);
      SmallVector<Value> values;
      for (Value v : results)
        values.push_back(map.lookupOrDefault(v));
      for (Value r : residuals)
        values.push_back(map.lookup(r));
      func::ReturnOp::create(b, loc, values);
    }
    // @f_bwd(inputs, results, residuals, cotangents) -> gradients.
    SmallVector<Type> bwdInputs(inputTypes);
    llvm::append_range(bwdInputs, f.getResultTypes());
    for (Value r : residuals)
      bwdInputs.push_back(r.getType());
    for (BlockArgument a : entry.getArguments().drop_front(numInputs))
      bwdInputs.push_back(a.getType());
    b.setInsertionPointAfter(fwd);
    auto bwd = func::FuncOp::create(
        b, loc, (f.getName() + "_bwd").str(),
        b.getFunctionType(
            bwdInputs, ret.getOperands().take_front(numGradients).getTypes()));
    OpBuilder::InsertionGuard guard(b);
    Block *body = bwd.addEntryBlock();
    b.setInsertionPointToStart(body);
    IRMapping map;
    for (unsigned i = 0; i < numInputs; ++i)
      map.map(entry.getArgument(i), body->getArgument(i));
    unsigned next = numInputs;
    for (Value r : results) {
      // A result returned twice keeps its first argument.
      if (!map.contains(r))
        map.map(r, body->getArgument(next));
      ++next;
    }
    for (Value r : residuals)
      map.map(r, body->getArgument(next++));
    for (BlockArgument a : entry.getArguments().drop_front(numInputs))
      map.map(a, body->getArgument(next++));
    for (Operation *c : constants)
      b.clone(*c, map);
    for (Operation *op : backwardOps)
      b.clone(*op, map);
    SmallVector<Value> grads;
    for (Value v : ret.getOperands().take_front(numGradients))
      grads.push_back(map.lookupOrDefault(v));
    func::ReturnOp::create(b, loc, grads);
    numResiduals += residuals.size();
    return success();
  }

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal() || f.getName().ends_with("_grad"))
        continue;
      if (!function.empty() && f.getName() != function)
        continue;
      if (function.empty() &&
          (f.getBody().getOps<ComprehensionOp>().empty() ||
           module.lookupSymbol((f.getName() + "_grad").str())))
        continue;
      funcs.push_back(f);
    }
    if (!function.empty() && funcs.empty()) {
      module.emitError() << "--tang-grad: no function @" << function;
      return signalPassFailure();
    }
    for (func::FuncOp f : funcs)
      if (failed(differentiateFunction(f)))
        return signalPassFailure();
  }
};

} // namespace
