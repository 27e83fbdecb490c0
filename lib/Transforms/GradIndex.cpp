//===- GradIndex.cpp - index solving for --tang-grad ------------*- C++ -*-===//
//
// A read's coordinates, affine in the forward comprehension's indices,
// solved for those indices over the read tensor's coordinates: the masks
// under which a gradient element receives a contribution, and inverses of
// injective reads (GradInternal.h).
//
//===----------------------------------------------------------------------===//

#include "GradInternal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::grad;

namespace {

/// The least and greatest values of `e` over dimensions ranging over
/// [0, extent): exact for linear forms, none otherwise.
std::optional<std::pair<int64_t, int64_t>>
getExactRange(AffineExpr e, ArrayRef<int64_t> extents) {
  std::optional<LinearForm> l = getLinearForm(e, extents.size());
  if (!l)
    return std::nullopt;
  int64_t lo = l->constant, hi = l->constant;
  for (auto [c, n] : llvm::zip(l->coeffs, extents)) {
    (c > 0 ? hi : lo) += c * (n - 1);
  }
  return std::make_pair(lo, hi);
}

} // namespace

namespace mlir::tang::grad {

std::optional<std::pair<int64_t, int64_t>>
getBounds(AffineExpr e, ArrayRef<int64_t> extents) {
  if (auto range = getExactRange(e, extents))
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

Solution solve(ArrayRef<AffineExpr> coords, ArrayRef<int64_t> extents,
               ArrayRef<int64_t> shape, MLIRContext *ctx) {
  unsigned n = shape.size(), m = extents.size();
  enum State { Unknown, Pivot, Free };
  SmallVector<State> state(m, Unknown);
  SmallVector<int> pivotOf(n, -1);
  SmallVector<std::optional<LinearForm>> lin;
  for (unsigned d = 0; d < n; ++d) {
    lin.push_back(getLinearForm(coords[d], m));
    std::optional<unsigned> pivot;
    if (lin[d])
      for (unsigned j = 0; j < m; ++j)
        if (state[j] == Unknown && std::abs(lin[d]->coeffs[j]) == 1) {
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
    int64_t sign = lin[d]->coeffs[j];
    AffineExpr rest = getAffineConstantExpr(lin[d]->constant, ctx);
    for (unsigned k = 0; k < m; ++k)
      if (k != j && lin[d]->coeffs[k])
        rest = rest + s.index[k] * lin[d]->coeffs[k];
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
    auto range = getExactRange(s.index[j], gExtents);
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
    std::optional<LinearForm> l = getLinearForm(coords[d], m);
    if (!l)
      return std::nullopt;
    SmallVector<unsigned> js;
    for (unsigned j = 0; j < m; ++j)
      if (l->coeffs[j] < 0)
        return std::nullopt;
      else if (l->coeffs[j] > 0)
        js.push_back(j);
    llvm::sort(js, [&](unsigned a, unsigned b) {
      return l->coeffs[a] > l->coeffs[b];
    });
    // Injective: each coefficient at least the next one's whole range.
    for (unsigned k = 0; k + 1 < js.size(); ++k)
      if (l->coeffs[js[k]] < l->coeffs[js[k + 1]] * extents[js[k + 1]])
        return std::nullopt;
    AffineExpr rest = x - l->constant;
    for (auto [k, j] : llvm::enumerate(js)) {
      AffineExpr e = rest.floorDiv(l->coeffs[j]);
      if (k != 0)
        e = e % extents[j];
      if (!assign(j, e))
        return std::nullopt;
    }
  }
  return inv;
}

} // namespace mlir::tang::grad
