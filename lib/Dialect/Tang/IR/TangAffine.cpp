//===- TangAffine.cpp - affine coordinates: values and ranges --*- C++ -*-===//
//
// The one evaluator of affine coordinates (evaluateAffine), their linear
// forms, interval ranges and exact ranges, used by the verifiers, the
// interpreter, the traffic bound and the gradient (TangOps.h).
//
//===----------------------------------------------------------------------===//

#include "Tang/Dialect/Tang/IR/TangAffine.h"

#include "mlir/IR/AffineExpr.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::detail;

static int64_t floorDivide(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static int64_t ceilDivide(int64_t a, int64_t b) { return -floorDivide(-a, b); }

IndexRange mlir::tang::getRange(AffineExpr expr,
                                ArrayRef<IndexRange> dimRanges) {
  constexpr int64_t kBig = int64_t(1) << 60;
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return {c.getValue(), c.getValue()};
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return dimRanges[d.getPosition()];
  auto bin = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!bin)
    return {-kBig, kBig}; // Symbols: unknown.
  IndexRange l = getRange(bin.getLHS(), dimRanges);
  IndexRange r = getRange(bin.getRHS(), dimRanges);
  switch (expr.getKind()) {
  case AffineExprKind::Add: {
    // Saturate on overflow: an unknown range fails every bounds check.
    IndexRange sum;
    if (__builtin_add_overflow(l.lo, r.lo, &sum.lo) ||
        __builtin_add_overflow(l.hi, r.hi, &sum.hi))
      return {-kBig, kBig};
    return sum;
  }
  case AffineExprKind::Mul: {
    int64_t p[4];
    if (__builtin_mul_overflow(l.lo, r.lo, &p[0]) ||
        __builtin_mul_overflow(l.lo, r.hi, &p[1]) ||
        __builtin_mul_overflow(l.hi, r.lo, &p[2]) ||
        __builtin_mul_overflow(l.hi, r.hi, &p[3]))
      return {-kBig, kBig};
    return {*llvm::min_element(p), *llvm::max_element(p)};
  }
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv: {
    if (r.lo != r.hi || r.lo == 0)
      return {-kBig, kBig};
    auto div =
        expr.getKind() == AffineExprKind::FloorDiv ? floorDivide : ceilDivide;
    int64_t a = div(l.lo, r.lo), b = div(l.hi, r.lo);
    return {std::min(a, b), std::max(a, b)};
  }
  case AffineExprKind::Mod: {
    if (r.lo != r.hi || r.lo <= 0)
      return {-kBig, kBig};
    int64_t m = r.lo;
    if (floorDivide(l.lo, m) == floorDivide(l.hi, m))
      return {l.lo - floorDivide(l.lo, m) * m, l.hi - floorDivide(l.lo, m) * m};
    return {0, m - 1};
  }
  default:
    return {-kBig, kBig};
  }
}

std::string mlir::tang::detail::formatAffineExpr(AffineExpr e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  e.print(os);
  return s;
}

std::optional<LinearForm> mlir::tang::getLinearForm(AffineExpr e,
                                                    unsigned numDims) {
  LinearForm l;
  l.coeffs.assign(numDims, 0);
  if (auto c = dyn_cast<AffineConstantExpr>(e)) {
    l.constant = c.getValue();
    return l;
  }
  if (auto d = dyn_cast<AffineDimExpr>(e)) {
    l.coeffs[d.getPosition()] = 1;
    return l;
  }
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return std::nullopt;
  std::optional<LinearForm> a = getLinearForm(bin.getLHS(), numDims);
  std::optional<LinearForm> b = getLinearForm(bin.getRHS(), numDims);
  if (!a || !b)
    return std::nullopt;
  if (e.getKind() == AffineExprKind::Add) {
    for (unsigned i = 0; i < numDims; ++i)
      a->coeffs[i] += b->coeffs[i];
    a->constant += b->constant;
    return a;
  }
  if (e.getKind() == AffineExprKind::Mul) {
    // One side is a constant in a pure affine expression.
    if (llvm::any_of(b->coeffs, [](int64_t c) { return c != 0; }))
      std::swap(a, b);
    for (int64_t &c : a->coeffs)
      c *= b->constant;
    a->constant *= b->constant;
    return a;
  }
  return std::nullopt;
}

int64_t mlir::tang::evaluateAffine(AffineExpr expr, ArrayRef<int64_t> dims) {
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return c.getValue();
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return dims[d.getPosition()];
  auto bin = cast<AffineBinaryOpExpr>(expr);
  int64_t a = evaluateAffine(bin.getLHS(), dims),
          b = evaluateAffine(bin.getRHS(), dims);
  // Values past int64 saturate (found by UBSan on huge coefficients): a
  // saturated coordinate fails every bounds check, as it should. Divisors
  // are positive constants in verified maps (verifyDivisors); anything else
  // evaluates to 0 rather than trapping.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  int64_t r = 0;
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    if (__builtin_add_overflow(a, b, &r))
      return a > 0 ? kMax : kMin;
    return r;
  case AffineExprKind::Mul:
    if (__builtin_mul_overflow(a, b, &r))
      return (a < 0) != (b < 0) ? kMin : kMax;
    return r;
  case AffineExprKind::FloorDiv:
    return b > 0 ? floorDivide(a, b) : 0;
  case AffineExprKind::CeilDiv:
    return b > 0 && a != kMin ? ceilDivide(a, b) : 0;
  default: // Mod
    if (b <= 0)
      return 0;
    r = a % b;
    return r < 0 ? r + b : r;
  }
}

std::optional<IndexRange>
mlir::tang::detail::getExactRange(AffineExpr expr,
                                  ArrayRef<IndexRange> dimRanges) {
  constexpr int64_t kMaxPoints = int64_t(1) << 16;
  int64_t points = 1;
  for (IndexRange r : dimRanges) {
    points *= r.hi - r.lo + 1;
    if (r.hi < r.lo || points > kMaxPoints)
      return std::nullopt;
  }
  SmallVector<int64_t> dims =
      llvm::map_to_vector(dimRanges, [](IndexRange r) { return r.lo; });
  IndexRange out{std::numeric_limits<int64_t>::max(),
                 std::numeric_limits<int64_t>::min()};
  for (int64_t p = 0; p < points; ++p) {
    int64_t v = evaluateAffine(expr, dims);
    out.lo = std::min(out.lo, v);
    out.hi = std::max(out.hi, v);
    for (size_t d = 0; d < dims.size(); ++d) {
      if (++dims[d] <= dimRanges[d].hi)
        break;
      dims[d] = dimRanges[d].lo;
    }
  }
  return out;
}
