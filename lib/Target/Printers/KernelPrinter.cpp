//===- KernelPrinter.cpp - the kernel form as source text -------*- C++ -*-===//
//
// What every language's printer shares: one print function per operation
// (see KernelPrinter.h).
//
//===----------------------------------------------------------------------===//

#include "KernelPrinter.h"

#include "Tang/Dialect/Tang/IR/TangDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cctype>
#include <cmath>

using namespace mlir;
using namespace mlir::tang;

//===----------------------------------------------------------------------===//
// Defaults of the language hooks (the C family's)
//===----------------------------------------------------------------------===//

void KernelPrinter::printFloat(raw_ostream &o, FloatAttr f) {
  double d = f.getValueAsDouble();
  if (std::isinf(d))
    o << (d < 0 ? "-INFINITY" : "INFINITY");
  else if (std::isnan(d))
    o << "NAN";
  else
    o << llvm::formatv("{0:e16}", d).str() << (f.getType().isF32() ? "f" : "");
}

std::string KernelPrinter::select(const std::string &cond, const std::string &t,
                                  const std::string &f) {
  bool simple = llvm::all_of(
      cond, [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
  return (simple ? cond : "(" + cond + ")") + " ? " + t + " : " + f;
}

StringRef KernelPrinter::unsignedType(Type t) {
  if (t.isSignlessInteger(32))
    return "uint";
  if (t.isSignlessInteger(8))
    return "uchar";
  return "ulong";
}

LogicalResult KernelPrinter::printId(Operation *op, StringRef function,
                                     gpu::Dimension dim) {
  FailureOr<raw_ostream *> o = define(op, op->getResult(0));
  if (failed(o))
    return failure();
  **o << "(long)" << function << "(" << static_cast<unsigned>(dim) << ");\n";
  return success();
}

LogicalResult KernelPrinter::printMatrixOp(Operation *op) {
  return op->emitOpError() << "is a subgroup matrix operation, which this "
                              "target's printer does not map (Metal "
                              "simdgroup_matrix, and C by emulation)";
}

//===----------------------------------------------------------------------===//
// Shared
//===----------------------------------------------------------------------===//

std::optional<std::string> KernelPrinter::getCScalarName(Type t) {
  if (t.isIndex() || t.isSignlessInteger(64))
    return std::string("long");
  if (t.isSignlessInteger(32))
    return std::string("int");
  if (t.isSignlessInteger(8))
    return std::string("char");
  if (t.isSignlessInteger(1))
    return std::string("bool");
  if (t.isF32())
    return std::string("float");
  return std::nullopt;
}

FailureOr<MemRefType> KernelPrinter::getBufferType(gpu::GPUFuncOp func,
                                                   BlockArgument arg) {
  // A flat buffer of a tensor with a `?` dimension is a 1-D memref<?xT>.
  auto type = dyn_cast<MemRefType>(arg.getType());
  if (!type || !type.getLayout().isIdentity() ||
      (!type.hasStaticShape() && type.getRank() != 1))
    return func.emitOpError() << "has an argument " << arg.getType()
                              << " that is not a static or a flat memref";
  return type;
}

LogicalResult
KernelPrinter::printCFamilyKernel(gpu::GPUFuncOp func, StringRef head,
                                  function_ref<void(unsigned, StringRef)> param,
                                  StringRef tail) {
  os << head;
  for (auto [i, arg] : llvm::enumerate(getBuffers(func))) {
    FailureOr<MemRefType> type = getBufferType(func, arg);
    if (failed(type))
      return failure();
    FailureOr<std::string> t = typeName(func, type->getElementType());
    if (failed(t))
      return failure();
    names[arg] = "a" + std::to_string(i);
    param(i, *t);
  }
  os << tail << ") {\n";
  if (failed(printWorkgroupArrays(func)) || failed(printBody(func)))
    return failure();
  os << "}\n\n";
  return success();
}

LogicalResult KernelPrinter::printWorkgroupArrays(gpu::GPUFuncOp func) {
  for (auto [i, buf] : llvm::enumerate(func.getWorkgroupAttributions())) {
    auto type = cast<MemRefType>(buf.getType());
    FailureOr<std::string> t = typeName(func, type.getElementType());
    if (failed(t))
      return failure();
    std::string n = workgroupName(func, i);
    std::optional<std::string> decl =
        type.hasStaticShape() && type.getLayout().isIdentity()
            ? workgroupArray(n, *t, type.getNumElements())
            : std::nullopt;
    if (!decl)
      return func.emitOpError()
             << "uses workgroup memory (" << type << "), which the "
             << languageName()
             << " printer does not map: lower without row-kernel schedules";
    names[buf] = n;
    indent() << *decl << "\n";
  }
  return success();
}

LogicalResult KernelPrinter::printKernel(gpu::GPUFuncOp func) {
  if (!func.getPrivateAttributions().empty())
    return func.emitOpError() << "uses private memory attributions, which the "
                              << languageName() << " printer does not map";
  if (!func.getBody().hasOneBlock())
    return func.emitOpError() << "has more than one block (structured "
                                 "control flow only)";
  return printEntry(func);
}

FailureOr<raw_ostream *> KernelPrinter::define(Operation *at, Value v) {
  FailureOr<std::string> t = typeName(at, v.getType());
  if (failed(t))
    return failure();
  indent() << declaration(name(v), *t, /*isMutable=*/false) << " = ";
  return &os;
}

LogicalResult KernelPrinter::declareVariable(Operation *at, Value v) {
  FailureOr<std::string> t = typeName(at, v.getType());
  if (failed(t))
    return failure();
  indent() << declaration(name(v), *t, /*isMutable=*/true);
  return success();
}

std::string KernelPrinter::linearIndex(Value memref, ValueRange indices) {
  auto type = cast<MemRefType>(memref.getType());
  std::string s;
  for (auto [d, idx] : llvm::enumerate(indices)) {
    if (d == 0)
      s = name(idx);
    else
      s = llvm::formatv("({0}) * {1} + {2}", s, type.getDimSize(d), name(idx))
              .str();
  }
  return s.empty() ? "0" : s;
}

LogicalResult KernelPrinter::printConstant(arith::ConstantOp op) {
  FailureOr<raw_ostream *> o = define(op, op.getResult());
  if (failed(o))
    return failure();
  Attribute value = op.getValue();
  if (auto f = dyn_cast<FloatAttr>(value)) {
    printFloat(**o, f);
  } else if (auto i = dyn_cast<IntegerAttr>(value)) {
    if (i.getType().isSignlessInteger(1))
      **o << (i.getValue().isZero() ? "false" : "true");
    else
      **o << i.getValue().getSExtValue()
          << (op.getType().isIndex() ? indexSuffix() : "");
  } else {
    return op.emitOpError() << "is a constant the " << languageName()
                            << " printer cannot print (vectors and tensors "
                               "are not supported)";
  }
  **o << ";\n";
  return success();
}

LogicalResult KernelPrinter::printBinary(Operation *op, StringRef symbol) {
  FailureOr<raw_ostream *> o = define(op, op->getResult(0));
  if (failed(o))
    return failure();
  **o << name(op->getOperand(0)) << " " << symbol << " "
      << name(op->getOperand(1)) << ";\n";
  return success();
}

LogicalResult KernelPrinter::printNanPropagating(Operation *op,
                                                 StringRef function) {
  FailureOr<raw_ostream *> o = define(op, op->getResult(0));
  if (failed(o))
    return failure();
  Value a = op->getOperand(0), b = op->getOperand(1);
  std::string call =
      (builtinName(function) + "(" + name(a) + ", " + name(b) + ")").str();
  std::string sum = name(a) + " + " + name(b);
  **o << select(isNan(a) + " || " + isNan(b), sum, call) << ";\n";
  return success();
}

LogicalResult KernelPrinter::printUnsigned(Operation *o) {
  FailureOr<raw_ostream *> s = define(o, o->getResult(0));
  if (failed(s))
    return failure();
  // In the operand's own width: a negative i32 is a large unsigned.
  StringRef u = unsignedType(o->getOperand(0).getType());
  FailureOr<std::string> t = typeName(o, o->getResult(0).getType());
  if (failed(t))
    return failure();
  std::string a = convert(u, name(o->getOperand(0)));
  std::string b = convert(u, name(o->getOperand(1)));
  std::string expr =
      isa<arith::DivUIOp>(o) ? "(" + a + " / " + b + ")"
      : isa<arith::RemUIOp>(o)
          ? "(" + a + " % " + b + ")"
          : (builtinName(isa<arith::MinUIOp>(o) ? "min" : "max") + "(" + a +
             ", " + b + ")")
                .str();
  **s << convert(*t, expr) << ";\n";
  return success();
}

LogicalResult KernelPrinter::printCall(Operation *op, StringRef function) {
  FailureOr<raw_ostream *> o = define(op, op->getResult(0));
  if (failed(o))
    return failure();
  **o << builtinName(function) << "(";
  llvm::interleaveComma(op->getOperands(), **o,
                        [&](Value v) { **o << name(v); });
  **o << ");\n";
  return success();
}

LogicalResult KernelPrinter::printCmpI(arith::CmpIOp op) {
  using P = arith::CmpIPredicate;
  StringRef sym;
  bool isUnsigned = false;
  switch (op.getPredicate()) {
  case P::eq:
    sym = "==";
    break;
  case P::ne:
    sym = "!=";
    break;
  case P::slt:
    sym = "<";
    break;
  case P::sle:
    sym = "<=";
    break;
  case P::sgt:
    sym = ">";
    break;
  case P::sge:
    sym = ">=";
    break;
  case P::ult:
    sym = "<", isUnsigned = true;
    break;
  case P::ule:
    sym = "<=", isUnsigned = true;
    break;
  case P::ugt:
    sym = ">", isUnsigned = true;
    break;
  case P::uge:
    sym = ">=", isUnsigned = true;
    break;
  }
  FailureOr<raw_ostream *> o = define(op, op.getResult());
  if (failed(o))
    return failure();
  std::string lhs = name(op.getLhs()), rhs = name(op.getRhs());
  if (isUnsigned) {
    StringRef u = unsignedType(op.getLhs().getType());
    lhs = convert(u, lhs);
    rhs = convert(u, rhs);
  }
  **o << lhs << " " << sym << " " << rhs << ";\n";
  return success();
}

LogicalResult KernelPrinter::printCmpF(arith::CmpFOp op) {
  // arith.cmpf: an ordered predicate is false when an operand is NaN, an
  // unordered one true. Only ==, <, <=, > and >= are ordered in every target
  // (C's != is unordered; WGSL does not say what its != does): the others
  // are printed from those, an unordered predicate as the negation of the
  // opposite ordered one; ord and uno test for NaN.
  using P = arith::CmpFPredicate;
  std::string a = name(op.getLhs()), b = name(op.getRhs());
  auto cmp = [&](StringRef sym) { return a + " " + sym.str() + " " + b; };
  std::string lessOrGreater = "(" + cmp("<") + " || " + cmp(">") + ")";
  std::string expr;
  switch (op.getPredicate()) {
  case P::AlwaysFalse:
    expr = "false";
    break;
  case P::OEQ:
    expr = cmp("==");
    break;
  case P::OGT:
    expr = cmp(">");
    break;
  case P::OGE:
    expr = cmp(">=");
    break;
  case P::OLT:
    expr = cmp("<");
    break;
  case P::OLE:
    expr = cmp("<=");
    break;
  case P::ONE:
    expr = lessOrGreater;
    break;
  case P::ORD:
    expr = "!" + isNan(op.getLhs()) + " && !" + isNan(op.getRhs());
    break;
  case P::UEQ:
    expr = "!" + lessOrGreater;
    break;
  case P::UGT:
    expr = "!(" + cmp("<=") + ")";
    break;
  case P::UGE:
    expr = "!(" + cmp("<") + ")";
    break;
  case P::ULT:
    expr = "!(" + cmp(">=") + ")";
    break;
  case P::ULE:
    expr = "!(" + cmp(">") + ")";
    break;
  case P::UNE:
    expr = "!(" + cmp("==") + ")";
    break;
  case P::UNO:
    expr = isNan(op.getLhs()) + " || " + isNan(op.getRhs());
    break;
  case P::AlwaysTrue:
    expr = "true";
    break;
  }
  FailureOr<raw_ostream *> o = define(op, op.getResult());
  if (failed(o))
    return failure();
  **o << expr << ";\n";
  return success();
}

LogicalResult KernelPrinter::printCast(Operation *op) {
  FailureOr<std::string> t = typeName(op, op->getResult(0).getType());
  FailureOr<raw_ostream *> o = define(op, op->getResult(0));
  if (failed(t) || failed(o))
    return failure();
  **o << castExpr(op, *t, name(op->getOperand(0))) << ";\n";
  return success();
}

LogicalResult KernelPrinter::printLoad(memref::LoadOp op) {
  FailureOr<raw_ostream *> o = define(op, op.getResult());
  if (failed(o))
    return failure();
  **o << loadExpr(op.getMemref(), linearIndex(op.getMemref(), op.getIndices()))
      << ";\n";
  return success();
}

LogicalResult KernelPrinter::printStore(memref::StoreOp op) {
  indent() << storeStatement(op.getMemref(),
                             linearIndex(op.getMemref(), op.getIndices()),
                             name(op.getValueToStore()))
           << "\n";
  return success();
}

LogicalResult KernelPrinter::printFor(scf::ForOp op) {
  // Loop-carried values: variables declared before the loop, assigned at
  // the end of each iteration; the loop's results are those variables.
  for (auto [init, arg, res] :
       llvm::zip(op.getInitArgs(), op.getRegionIterArgs(), op.getResults())) {
    if (failed(declareVariable(op, arg)))
      return failure();
    os << " = " << name(init) << ";\n";
    names[res] = name(arg);
  }
  Value iv = op.getInductionVar();
  std::string ivName = name(iv);
  FailureOr<std::string> indexType = typeName(op, iv.getType());
  if (failed(indexType))
    return failure();
  indent() << "for (" << declaration(ivName, *indexType, /*isMutable=*/true)
           << " = " << name(op.getLowerBound()) << "; " << ivName << " < "
           << name(op.getUpperBound()) << "; " << ivName
           << " += " << name(op.getStep()) << ") {\n";
  ++depth;
  if (failed(printBlock(*op.getBody())))
    return failure();
  auto yield = cast<scf::YieldOp>(op.getBody()->getTerminator());
  // Through temporaries: a yielded value may be another iter_arg.
  SmallVector<std::string> temps;
  for (auto [v, arg] : llvm::zip(yield.getOperands(), op.getRegionIterArgs())) {
    FailureOr<std::string> t = typeName(op, arg.getType());
    if (failed(t))
      return failure();
    std::string tmp = "t" + std::to_string(next++);
    indent() << declaration(tmp, *t, /*isMutable=*/false) << " = " << name(v)
             << ";\n";
    temps.push_back(tmp);
  }
  for (auto [tmp, arg] : llvm::zip(temps, op.getRegionIterArgs()))
    indent() << name(arg) << " = " << tmp << ";\n";
  --depth;
  indent() << "}\n";
  return success();
}

LogicalResult KernelPrinter::printIf(scf::IfOp op) {
  for (Value r : op.getResults()) {
    if (failed(declareVariable(op, r)))
      return failure();
    os << ";\n";
  }
  auto branch = [&](Region &region) -> LogicalResult {
    ++depth;
    Block &block = region.front();
    if (failed(printBlock(block)))
      return failure();
    auto yield = cast<scf::YieldOp>(block.getTerminator());
    for (auto [r, v] : llvm::zip(op.getResults(), yield.getOperands()))
      indent() << name(r) << " = " << name(v) << ";\n";
    --depth;
    return success();
  };
  indent() << "if (" << name(op.getCondition()) << ") {\n";
  if (failed(branch(op.getThenRegion())))
    return failure();
  if (!op.getElseRegion().empty()) {
    indent() << "} else {\n";
    if (failed(branch(op.getElseRegion())))
      return failure();
  }
  indent() << "}\n";
  return success();
}

LogicalResult KernelPrinter::printBlock(Block &block) {
  for (Operation &op : block)
    if (failed(printOp(&op)))
      return failure();
  return success();
}

LogicalResult KernelPrinter::printOp(Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](arith::ConstantOp c) { return printConstant(c); })
      .Case<arith::AddFOp, arith::AddIOp>(
          [&](Operation *o) { return printBinary(o, "+"); })
      .Case<arith::SubFOp, arith::SubIOp>(
          [&](Operation *o) { return printBinary(o, "-"); })
      .Case<arith::MulFOp, arith::MulIOp>(
          [&](Operation *o) { return printBinary(o, "*"); })
      .Case<arith::DivFOp, arith::DivSIOp>(
          [&](Operation *o) { return printBinary(o, "/"); })
      .Case<arith::RemSIOp>([&](Operation *o) { return printBinary(o, "%"); })
      // On i1 the logical operators (GLSL has no bitwise ones on bool).
      .Case<arith::AndIOp>(
          [&](Operation *o) { return printBinary(o, isBool(o) ? "&&" : "&"); })
      .Case<arith::OrIOp>(
          [&](Operation *o) { return printBinary(o, isBool(o) ? "||" : "|"); })
      .Case<arith::XOrIOp>(
          [&](Operation *o) { return printBinary(o, isBool(o) ? "!=" : "^"); })
      .Case<arith::DivUIOp, arith::RemUIOp, arith::MinUIOp, arith::MaxUIOp>(
          [&](Operation *o) { return printUnsigned(o); })
      .Case([&](arith::NegFOp o) {
        FailureOr<raw_ostream *> s = define(o, o.getResult());
        if (failed(s))
          return failure();
        **s << "-" << name(o.getOperand()) << ";\n";
        return success();
      })
      .Case([&](arith::BitcastOp o) -> LogicalResult {
        // Scalars of one width (a carrier's i32 through an f32 buffer).
        if (!o.getType().isIntOrFloat())
          return o.emitOpError() << "bitcasts a vector, which the "
                                 << languageName() << " printer does not map";
        FailureOr<std::string> t = typeName(o, o.getType());
        FailureOr<raw_ostream *> s = define(o, o.getResult());
        if (failed(t) || failed(s))
          return failure();
        **s << bitcast(*t, name(o.getIn())) << ";\n";
        return success();
      })
      .Case([&](arith::SelectOp o) {
        FailureOr<raw_ostream *> s = define(o, o.getResult());
        if (failed(s))
          return failure();
        **s << select(name(o.getCondition()), name(o.getTrueValue()),
                      name(o.getFalseValue()))
            << ";\n";
        return success();
      })
      .Case<arith::MaxNumFOp>(
          [&](Operation *o) { return printCall(o, "fmax"); })
      .Case<arith::MinNumFOp>(
          [&](Operation *o) { return printCall(o, "fmin"); })
      // maximumf/minimumf propagate NaN; fmax/fmin (max/min) return the
      // other operand.
      .Case<arith::MaximumFOp>(
          [&](Operation *o) { return printNanPropagating(o, "fmax"); })
      .Case<arith::MinimumFOp>(
          [&](Operation *o) { return printNanPropagating(o, "fmin"); })
      .Case<arith::MaxSIOp>([&](Operation *o) { return printCall(o, "max"); })
      .Case<arith::MinSIOp>([&](Operation *o) { return printCall(o, "min"); })
      .Case([&](arith::CmpIOp o) { return printCmpI(o); })
      .Case([&](arith::CmpFOp o) { return printCmpF(o); })
      .Case<arith::IndexCastOp, arith::SIToFPOp, arith::FPToSIOp,
            arith::ExtSIOp, arith::TruncIOp, arith::ExtFOp, arith::TruncFOp>(
          [&](Operation *o) { return printCast(o); })
      .Case([&](arith::ExtUIOp o) {
        // i1 -> integer: bool converts to 0 or 1.
        return printCast(o);
      })
      .Case([&](math::ExpOp o) { return printCall(o, "exp"); })
      .Case([&](math::LogOp o) { return printCall(o, "log"); })
      .Case([&](math::TanhOp o) { return printCall(o, "tanh"); })
      .Case([&](math::RsqrtOp o) { return printCall(o, "rsqrt"); })
      .Case([&](math::SqrtOp o) { return printCall(o, "sqrt"); })
      .Case([&](math::AbsFOp o) { return printCall(o, "fabs"); })
      .Case([&](math::ErfOp o) -> LogicalResult {
        if (!hasErf())
          return o.emitOpError() << "has no equivalent in the target (Metal, "
                                    "GLSL and WGSL have no erf)";
        return printCall(o, "erf");
      })
      .Case([&](math::PowFOp o) { return printCall(o, "pow"); })
      .Case([&](math::SinOp o) { return printCall(o, "sin"); })
      .Case([&](math::CosOp o) { return printCall(o, "cos"); })
      .Case([&](memref::LoadOp o) { return printLoad(o); })
      .Case([&](memref::StoreOp o) { return printStore(o); })
      .Case([&](scf::ForOp o) { return printFor(o); })
      .Case([&](scf::IfOp o) { return printIf(o); })
      .Case<scf::YieldOp, gpu::ReturnOp>([&](Operation *) {
        return success(); // Handled by their parents / the end of the kernel.
      })
      .Case([&](gpu::BlockIdOp o) {
        return printId(o, "get_group_id", o.getDimension());
      })
      .Case([&](gpu::ThreadIdOp o) {
        return printId(o, "get_local_id", o.getDimension());
      })
      .Case([&](gpu::BlockDimOp o) {
        return printId(o, "get_local_size", o.getDimension());
      })
      .Case([&](gpu::GridDimOp o) {
        return printId(o, "get_num_groups", o.getDimension());
      })
      .Case<gpu::SubgroupMmaConstantMatrixOp, gpu::SubgroupMmaLoadMatrixOp,
            gpu::SubgroupMmaComputeOp, gpu::SubgroupMmaStoreMatrixOp>(
          [&](Operation *o) { return printMatrixOp(o); })
      .Case([&](gpu::BarrierOp o) -> LogicalResult {
        std::optional<std::string> statement = barrier();
        // A launcher running the work items in turn needs none where each
        // writes all it reads (TangDialect.td, subgroup_local).
        if (!statement && o->hasAttr(kSubgroupLocalBarrierAttrName)) {
          indent() << "/* subgroup-local barrier: work items run in turn */\n";
          return success();
        }
        if (!statement)
          return o.emitOpError()
                 << "is a workgroup barrier, which the " << languageName()
                 << " target does not have (its launcher runs work items in "
                    "turn): lower without row-kernel schedules";
        indent() << *statement << "\n";
        return success();
      })
      .Case([&](gpu::ShuffleOp o) {
        return o.emitOpError()
               << "is a subgroup operation, which the " << languageName()
               << " printer does not map (OpenCL 1.2 on PoCL "
                  "has none): lower without row-kernel "
                  "schedules";
      })
      .Default([&](Operation *o) {
        return o->emitOpError() << "has no " << languageName() << " printer";
      });
}

Operation *mlir::tang::findHalfArithmetic(gpu::GPUModuleOp kernels) {
  Operation *found = nullptr;
  kernels.walk([&](Operation *op) {
    if (isa<memref::LoadOp, arith::TruncFOp, arith::SelectOp, arith::ConstantOp,
            scf::ForOp, scf::IfOp>(op))
      return WalkResult::advance();
    for (Type t : op->getResultTypes())
      if (t.isF16()) {
        found = op;
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return found;
}
