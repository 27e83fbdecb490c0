//===- CompilerMath.cpp - the interpreter's math ops ------------*- C++ -*-===//
//
// The float64 semantics of the math dialect's ops in comprehension bodies
// (Compiler::compileMathOp; the arith ops and tang's own are in
// Compiler.cpp), and the unary and binary instructions both build.
//
//===----------------------------------------------------------------------===//

#include "Compiler.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::interp;

LogicalResult Compiler::emitUnary(Value in, Value res, double (*fn)(double),
                                  std::vector<Instr> &out) {
  Slot a = slotOf(in), d = slotOf(res);
  out.push_back([a, d, fn](double *f) { f[d] = fn(f[a]); });
  return success();
}

LogicalResult Compiler::emitBinary(Operation *o, double (*fn)(double, double),
                                   std::vector<Instr> &out) {
  Slot a = slotOf(o->getOperand(0)), b = slotOf(o->getOperand(1)),
       d = slotOf(o->getResult(0));
  out.push_back([a, b, d, fn](double *f) { f[d] = fn(f[a], f[b]); });
  return success();
}

LogicalResult Compiler::compileMathOp(Operation *op, std::vector<Instr> &out) {
  auto unary = [&](Value in, Value res, double (*fn)(double)) {
    return emitUnary(in, res, fn, out);
  };
  auto binary = [&](Operation *o, double (*fn)(double, double)) {
    return emitBinary(o, fn, out);
  };
  using U = uint64_t;
  using S = int64_t;
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<math::ExpOp>([&](math::ExpOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::exp(x); });
      })
      .Case<math::Exp2Op>([&](math::Exp2Op o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::exp2(x); });
      })
      .Case<math::ExpM1Op>([&](math::ExpM1Op o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::expm1(x); });
      })
      .Case<math::LogOp>([&](math::LogOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::log(x); });
      })
      .Case<math::Log2Op>([&](math::Log2Op o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::log2(x); });
      })
      .Case<math::Log10Op>([&](math::Log10Op o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::log10(x); });
      })
      .Case<math::Log1pOp>([&](math::Log1pOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::log1p(x); });
      })
      .Case<math::SqrtOp>([&](math::SqrtOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::sqrt(x); });
      })
      .Case<math::RsqrtOp>([&](math::RsqrtOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return 1.0 / std::sqrt(x); });
      })
      .Case<math::TanhOp>([&](math::TanhOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::tanh(x); });
      })
      .Case<math::SinhOp>([&](math::SinhOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::sinh(x); });
      })
      .Case<math::CoshOp>([&](math::CoshOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::cosh(x); });
      })
      .Case<math::ErfOp>([&](math::ErfOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::erf(x); });
      })
      .Case<math::ErfcOp>([&](math::ErfcOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::erfc(x); });
      })
      .Case<math::AbsFOp>([&](math::AbsFOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::fabs(x); });
      })
      .Case<math::SinOp>([&](math::SinOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::sin(x); });
      })
      .Case<math::CosOp>([&](math::CosOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::cos(x); });
      })
      .Case<math::TanOp>([&](math::TanOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::tan(x); });
      })
      .Case<math::AtanOp>([&](math::AtanOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::atan(x); });
      })
      .Case<math::FloorOp>([&](math::FloorOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::floor(x); });
      })
      .Case<math::CeilOp>([&](math::CeilOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::ceil(x); });
      })
      .Case<math::RoundOp>([&](math::RoundOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::round(x); });
      })
      .Case<math::RoundEvenOp>([&](math::RoundEvenOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::nearbyint(x); });
      })
      .Case<math::TruncOp>([&](math::TruncOp o) {
        return unary(o.getOperand(), o.getResult(),
                     [](double x) { return std::trunc(x); });
      })
      .Case<math::AbsIOp>([&](math::AbsIOp o) {
        Slot a = slotOf(o.getOperand()), d = slotOf(o.getResult());
        unsigned w = getBitWidth(o.getType());
        out.push_back([a, d, w](double *f) {
          S v = toSigned(f[a], w);
          f[d] = fromBits(static_cast<U>(v < 0 ? -v : v), w);
        });
        return success();
      })
      .Case<math::PowFOp>([&](Operation *o) {
        return binary(o, [](double a, double b) { return std::pow(a, b); });
      })
      .Case<math::Atan2Op>([&](Operation *o) {
        return binary(o, [](double a, double b) { return std::atan2(a, b); });
      })
      .Case<math::CopySignOp>([&](Operation *o) {
        return binary(o,
                      [](double a, double b) { return std::copysign(a, b); });
      })
      .Case<math::FmaOp>([&](math::FmaOp o) {
        Slot a = slotOf(o.getA()), b = slotOf(o.getB()), c = slotOf(o.getC()),
             d = slotOf(o.getResult());
        out.push_back(
            [a, b, c, d](double *f) { f[d] = std::fma(f[a], f[b], f[c]); });
        return success();
      })
      .Default([&](Operation *o) {
        return o->emitError() << "tang-run: unsupported operation '"
                              << o->getName() << "' in a comprehension body";
      });
}
