//===- TangMonoids.cpp - the builtin monoids, defined once ------*- C++ -*-===//

#include "Tang/Dialect/Tang/IR/TangMonoids.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace mlir::tang;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// `f` in a float type, `i` in an integer type.
TypedAttr constantAttr(Builder &b, Type t, double f, int64_t i) {
  if (auto ft = dyn_cast<FloatType>(t))
    return b.getFloatAttr(ft, f);
  return b.getIntegerAttr(t, i);
}

Value constant(OpBuilder &b, Location loc, Type t, double f, int64_t i) {
  return arith::ConstantOp::create(b, loc, t, constantAttr(b, t, f, i));
}

/// The lowest and highest values of `t` (-inf and inf for floats).
TypedAttr lowest(Builder &b, Type t) {
  if (isa<FloatType>(t))
    return constantAttr(b, t, -kInf, 0);
  unsigned w = t.getIntOrFloatBitWidth();
  return constantAttr(
      b, t, 0, w == 1 ? 0 : std::numeric_limits<int64_t>::min() >> (64 - w));
}
TypedAttr highest(Builder &b, Type t) {
  if (isa<FloatType>(t))
    return constantAttr(b, t, kInf, 0);
  unsigned w = t.getIntOrFloatBitWidth();
  return constantAttr(
      b, t, 0, w == 1 ? 1 : std::numeric_limits<int64_t>::max() >> (64 - w));
}

/// Lets `op` (an exponential or a division) use its fast approximation.
void approximate(Operation *op) {
  auto name = StringAttr::get(op->getContext(), "fastmath");
  auto flags = arith::FastMathFlags::afn;
  if (auto old = op->getAttrOfType<arith::FastMathFlagsAttr>(name))
    flags = flags | old.getValue();
  op->setAttr(name, arith::FastMathFlagsAttr::get(op->getContext(), flags));
}

Value exp(OpBuilder &b, Location loc, Value x, bool fast) {
  auto e = math::ExpOp::create(b, loc, x);
  if (fast)
    approximate(e);
  return e;
}

/// exp(a - m) with m = -inf treated as 0 (so that an all -inf carrier
/// combines to (-inf, 0) instead of NaN).
Value scaleFrom(OpBuilder &b, Location loc, Value a, Value m, bool fast) {
  Value base = buildSoftmaxExponentBase(b, loc, m);
  return exp(b, loc, arith::SubFOp::create(b, loc, a, base), fast);
}

bool isSoftmax(MonoidKind kind) {
  return kind == MonoidKind::SoftmaxNorm || kind == MonoidKind::OnlineSoftmax;
}

} // namespace

Value mlir::tang::buildSoftmaxExponentBase(OpBuilder &b, Location loc,
                                           Value m) {
  Type t = m.getType();
  Value negInf = constant(b, loc, t, -kInf, 0);
  Value zero = constant(b, loc, t, 0, 0);
  Value isEmpty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, negInf);
  return arith::SelectOp::create(b, loc, isEmpty, zero, m);
}

SmallVector<Type> mlir::tang::getBuiltinCarrierTypes(MonoidKind kind,
                                                     TypeRange yieldTypes) {
  switch (kind) {
  case MonoidKind::SoftmaxNorm:
    return {yieldTypes[0], yieldTypes[0]};
  case MonoidKind::OnlineSoftmax:
    return {yieldTypes[0], yieldTypes[0], yieldTypes[1]};
  default:
    return llvm::to_vector(yieldTypes);
  }
}

SmallVector<TypedAttr> mlir::tang::getBuiltinIdentity(MonoidKind kind,
                                                      TypeRange carrierTypes) {
  Builder b(carrierTypes[0].getContext());
  Type t = carrierTypes[0];
  switch (kind) {
  case MonoidKind::Add:
  case MonoidKind::Or:
    return {constantAttr(b, t, 0, 0)};
  case MonoidKind::Mul:
    return {constantAttr(b, t, 1, 1)};
  case MonoidKind::And:
    return {constantAttr(b, t, 0, -1)};
  case MonoidKind::Max:
    return {lowest(b, t)};
  case MonoidKind::Min:
    return {highest(b, t)};
  case MonoidKind::ArgMax:
    // The identity's index is the highest: it loses every tie, also
    // against a (lowest, k) carrier.
    return {lowest(b, t), highest(b, carrierTypes[1])};
  case MonoidKind::ArgMin:
    return {highest(b, t), highest(b, carrierTypes[1])};
  case MonoidKind::SoftmaxNorm:
    return {lowest(b, t), constantAttr(b, t, 0, 0)};
  case MonoidKind::OnlineSoftmax:
    return {lowest(b, t), constantAttr(b, t, 0, 0),
            constantAttr(b, carrierTypes[2], 0, 0)};
  }
  llvm_unreachable("unknown monoid");
}

SmallVector<Value> mlir::tang::buildBuiltinLift(OpBuilder &b, Location loc,
                                                MonoidKind kind,
                                                TypeRange carrierTypes,
                                                ValueRange yields) {
  if (kind == MonoidKind::SoftmaxNorm)
    return {yields[0], constant(b, loc, carrierTypes[1], 1, 1)};
  if (kind == MonoidKind::OnlineSoftmax)
    return {yields[0], constant(b, loc, carrierTypes[1], 1, 1), yields[1]};
  return llvm::to_vector(yields);
}

SmallVector<Value> mlir::tang::buildBuiltinCombine(OpBuilder &b, Location loc,
                                                   MonoidKind kind,
                                                   ValueRange x, ValueRange y,
                                                   bool approximate) {
  bool isFloat = isa<FloatType>(x[0].getType());
  bool isBool = x[0].getType().isInteger(1);
  switch (kind) {
  case MonoidKind::Add:
    return {isFloat ? Value(arith::AddFOp::create(b, loc, x[0], y[0]))
                    : Value(arith::AddIOp::create(b, loc, x[0], y[0]))};
  case MonoidKind::Mul:
    return {isFloat ? Value(arith::MulFOp::create(b, loc, x[0], y[0]))
                    : Value(arith::MulIOp::create(b, loc, x[0], y[0]))};
  // Integers compare signed, but i1 as 0 < 1 (false < true).
  case MonoidKind::Max:
    if (isFloat)
      return {arith::MaximumFOp::create(b, loc, x[0], y[0])};
    if (isBool)
      return {arith::MaxUIOp::create(b, loc, x[0], y[0])};
    return {arith::MaxSIOp::create(b, loc, x[0], y[0])};
  case MonoidKind::Min:
    if (isFloat)
      return {arith::MinimumFOp::create(b, loc, x[0], y[0])};
    if (isBool)
      return {arith::MinUIOp::create(b, loc, x[0], y[0])};
    return {arith::MinSIOp::create(b, loc, x[0], y[0])};
  case MonoidKind::And:
    return {arith::AndIOp::create(b, loc, x[0], y[0])};
  case MonoidKind::Or:
    return {arith::OrIOp::create(b, loc, x[0], y[0])};
  case MonoidKind::ArgMax:
  case MonoidKind::ArgMin: {
    // Take y when it is strictly better, or equal with a smaller index.
    // Floats: NaN beats every number and two NaNs tie, so the first NaN
    // wins (NumPy's argmax and argmin); this is the maximum of a total
    // order, hence associative and commutative.
    bool isMax = kind == MonoidKind::ArgMax;
    Value better, equal;
    if (isFloat) {
      better = arith::CmpFOp::create(
          b, loc, isMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT,
          y[0], x[0]);
      equal =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, y[0], x[0]);
      Value xNaN =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x[0], x[0]);
      Value yNaN =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, y[0], y[0]);
      Value yOnlyNaN =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, yNaN, xNaN);
      better = arith::OrIOp::create(b, loc, better, yOnlyNaN);
      equal = arith::OrIOp::create(b, loc, equal,
                                   arith::AndIOp::create(b, loc, xNaN, yNaN));
    } else {
      arith::CmpIPredicate gt =
          isBool ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt;
      arith::CmpIPredicate lt =
          isBool ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt;
      better = arith::CmpIOp::create(b, loc, isMax ? gt : lt, y[0], x[0]);
      equal =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y[0], x[0]);
    }
    Value earlier =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, y[1], x[1]);
    Value take = arith::OrIOp::create(
        b, loc, better, arith::AndIOp::create(b, loc, equal, earlier));
    return {arith::SelectOp::create(b, loc, take, y[0], x[0]),
            arith::SelectOp::create(b, loc, take, y[1], x[1])};
  }
  case MonoidKind::SoftmaxNorm:
  case MonoidKind::OnlineSoftmax: {
    // (m, l[, acc]) stands for the mass l exp(m) (and acc exp(m)).
    Value m = arith::MaximumFOp::create(b, loc, x[0], y[0]);
    Value sx = scaleFrom(b, loc, x[0], m, approximate),
          sy = scaleFrom(b, loc, y[0], m, approximate);
    Value l =
        arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, x[1], sx),
                              arith::MulFOp::create(b, loc, y[1], sy));
    if (kind == MonoidKind::SoftmaxNorm)
      return {m, l};
    Value acc =
        arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, x[2], sx),
                              arith::MulFOp::create(b, loc, y[2], sy));
    return {m, l, acc};
  }
  }
  llvm_unreachable("unknown monoid");
}

SmallVector<Value>
mlir::tang::buildBuiltinAccumulate(OpBuilder &b, Location loc, MonoidKind kind,
                                   TypeRange carrierTypes, ValueRange carrier,
                                   ValueRange yields, bool approximate) {
  if (!isSoftmax(kind))
    return buildBuiltinCombine(
        b, loc, kind, carrier,
        buildBuiltinLift(b, loc, kind, carrierTypes, yields), approximate);
  // The element (x, 1[, v]) against (m, l[, acc]): with e = exp(-|x - m|),
  // a new maximum rescales the carrier by e and adds 1 (v), otherwise the
  // element adds e (e * v). A masked x = -inf adds nothing.
  Type t = carrierTypes[0];
  Value x = yields[0], m = carrier[0], l = carrier[1];
  Value negInf = constant(b, loc, t, -kInf, 0);
  Value zero = constant(b, loc, t, 0, 0);
  Value one = constant(b, loc, t, 1, 1);
  Value d = arith::SubFOp::create(b, loc, x, m);
  Value e = exp(b, loc,
                arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, d)),
                approximate);
  Value masked =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, negInf);
  e = arith::SelectOp::create(b, loc, masked, zero, e);
  Value bigger = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, m);
  auto pick = [&](Value ifBigger, Value otherwise) -> Value {
    return arith::SelectOp::create(b, loc, bigger, ifBigger, otherwise);
  };
  SmallVector<Value> out;
  out.push_back(pick(x, m));
  out.push_back(pick(
      arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, l, e), one),
      arith::AddFOp::create(b, loc, l, e)));
  if (kind == MonoidKind::OnlineSoftmax) {
    Value acc = carrier[2], v = yields[1];
    out.push_back(pick(
        arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, acc, e), v),
        arith::AddFOp::create(b, loc, acc,
                              arith::MulFOp::create(b, loc, e, v))));
  }
  return out;
}

SmallVector<Value> mlir::tang::buildBuiltinFinalize(OpBuilder &b, Location loc,
                                                    MonoidKind kind,
                                                    ValueRange carrier,
                                                    bool approximate) {
  if (kind == MonoidKind::OnlineSoftmax) {
    auto div = arith::DivFOp::create(b, loc, carrier[2], carrier[1]);
    if (approximate)
      ::approximate(div);
    return {div};
  }
  return llvm::to_vector(carrier);
}
