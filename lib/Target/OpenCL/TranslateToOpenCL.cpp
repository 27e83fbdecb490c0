//===- TranslateToOpenCL.cpp - the kernel form as OpenCL C ------*- C++ -*-===//
//
// Prints the kernels of the kernel form (`gpu.module @tang_kernels`) as
// OpenCL C 1.2: one print function per operation, no decisions of its own
// (the schedule and the kernel shape were fixed by --convert-tang-to-gpu).
// Every SSA value becomes a local variable `vN`; structured control flow
// (scf.for, scf.if) becomes C loops and branches whose results are
// variables declared before them. Buffers are `__global` pointers indexed
// by the row-major linearisation of their static shapes.
//
// What OpenCL 1.2 on the targets tang runs (PoCL) cannot express is a
// diagnostic naming the feature: 16-bit floats (no cl_khr_fp16), subgroup
// operations, workgroup memory (not used by the kernels this backend is
// given yet), and any operation the printer does not know.
//
//===----------------------------------------------------------------------===//

#include "Tang/Target/OpenCL/TranslateToOpenCL.h"
#include "Tang/Target/CUDA/ExportBundle.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tang;

namespace {

/// The language printed: OpenCL C 1.2; C11 or Metal, whose preludes define
/// the few OpenCL built-ins the bodies use (see translateKernelsToC); GLSL
/// and WGSL, which differ in declarations, conversions and built-in names.
enum class Language { OpenCL, C, Metal, GLSL, WGSL };

class OpenCLPrinter {
public:
  OpenCLPrinter(raw_ostream &os, Language language)
      : os(os), language(language) {}

  LogicalResult printKernel(gpu::GPUFuncOp func);
  /// A GLSL compute shader for `func`: its buffers as storage blocks bound
  /// in parameter order, its body in main().
  LogicalResult printGLSLShader(gpu::GPUFuncOp func);
  /// A WGSL entry point for `func`: its buffers as storage variables named
  /// after the kernel (one module holds every kernel), bound in parameter
  /// order in group 0.
  LogicalResult printWGSLEntryPoint(gpu::GPUFuncOp func);

private:
  FailureOr<std::string> typeName(Operation *at, Type t);
  std::string name(Value v) {
    auto [it, inserted] = names.try_emplace(v, "");
    if (inserted)
      it->second = "v" + std::to_string(next++);
    return it->second;
  }
  raw_ostream &indent() { return os.indent(2 * depth); }
  /// Declares `v` (`T vN = `; WGSL: `let vN: T = `) and returns the stream
  /// for its value.
  FailureOr<raw_ostream *> define(Operation *at, Value v);
  /// Declares `v` as a variable that is assigned later (a loop-carried
  /// value, an scf.if result): `T vN` or WGSL's `var vN: T`, no `;`.
  LogicalResult declareVariable(Operation *at, Value v);
  /// The target's name for an OpenCL C built-in function.
  StringRef builtinName(StringRef function) const;

  LogicalResult printBlock(Block &block);
  LogicalResult printOp(Operation *op);
  LogicalResult printConstant(arith::ConstantOp op);
  LogicalResult printBinary(Operation *op, StringRef symbol);
  LogicalResult printCall(Operation *op, StringRef function);
  /// `function` (fmax or fmin) of the two operands, NaN when either is.
  LogicalResult printNanPropagating(Operation *op, StringRef function);
  LogicalResult printCmpI(arith::CmpIOp op);
  LogicalResult printCmpF(arith::CmpFOp op);
  /// Whether `v` is a NaN, as an expression of the target.
  std::string isNan(Value v);
  LogicalResult printCast(Operation *op);
  LogicalResult printLoad(memref::LoadOp op);
  LogicalResult printStore(memref::StoreOp op);
  LogicalResult printFor(scf::ForOp op);
  LogicalResult printIf(scf::IfOp op);
  LogicalResult printId(Operation *op, StringRef function, gpu::Dimension dim);
  /// gpu.subgroup_mma_*: Metal simdgroup_matrix calls, C calls to the
  /// prelude's scalar emulation; other targets have no matrix type (a
  /// diagnostic).
  LogicalResult printMatrixOp(Operation *op);
  LogicalResult printEmulatedMatrixOp(Operation *op);
  std::string linearIndex(Value memref, ValueRange indices);
  static bool isBool(Operation *op) {
    return op->getResult(0).getType().isSignlessInteger(1);
  }
  /// The unsigned type of `t`'s width.
  StringRef unsignedType(Type t) {
    if (language == Language::WGSL)
      return "u32";
    if (t.isSignlessInteger(32) || language == Language::GLSL)
      return "uint";
    if (t.isSignlessInteger(8))
      return "uchar";
    return "ulong";
  }
  /// `expr` converted to `type`: a C cast, or a GLSL/WGSL constructor.
  std::string convert(StringRef type, const std::string &expr) {
    if (language == Language::GLSL || language == Language::WGSL)
      return (type + "(" + expr + ")").str();
    return ("(" + type + ")" + expr).str();
  }

  raw_ostream &os;
  Language language;
  llvm::DenseMap<Value, std::string> names;
  unsigned next = 0;
  unsigned depth = 1;
  /// The kernel's workgroup size (WGSL has no built-in for it).
  SmallVector<int32_t, 3> blockSize;
};

FailureOr<std::string> OpenCLPrinter::typeName(Operation *at, Type t) {
  if (language == Language::WGSL) {
    // 32-bit indices, as in GLSL (buffers are checked to hold fewer than
    // 2^31 elements); f16 needs the `shader-f16` feature (`enable f16`).
    if (t.isIndex() || t.isSignlessInteger(32))
      return std::string("i32");
    if (t.isSignlessInteger(1))
      return std::string("bool");
    if (t.isF32())
      return std::string("f32");
    if (t.isF16())
      return std::string("f16");
    return at->emitOpError() << "uses " << t
                             << ", which WGSL does not have (32-bit int, "
                                "f32, f16 and bool only)";
  }
  if (language == Language::GLSL) {
    // 32-bit indices: GLSL indexes arrays with int (buffers are checked to
    // hold fewer than 2^31 elements).
    if (t.isIndex() || t.isSignlessInteger(32))
      return std::string("int");
    if (t.isSignlessInteger(1))
      return std::string("bool");
    if (t.isF32())
      return std::string("float");
    return at->emitOpError() << "uses " << t
                             << ", which the GLSL target does not support yet "
                                "(32-bit int and float, bool)";
  }
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
  if (t.isF64() && language == Language::Metal)
    return at->emitOpError() << "uses f64: Metal has no 64-bit float";
  if (auto m = dyn_cast<gpu::MMAMatrixType>(t)) {
    // C emulates square f32 matrices with scalar loops (the prelude).
    if (language == Language::C && m.getElementType().isF32() &&
        m.getShape()[0] == m.getShape()[1])
      return ("tang_mma" + Twine(m.getShape()[0])).str();
    if (language != Language::Metal)
      return at->emitOpError()
             << "uses " << t << ": the target has no matrix type";
    if (m.getShape() != ArrayRef<int64_t>{8, 8} ||
        !(m.getElementType().isF32() || m.getElementType().isF16()))
      return at->emitOpError()
             << "uses " << t
             << ": Metal's simdgroup matrices are 8x8 of float or half";
    return std::string(m.getElementType().isF32() ? "simdgroup_float8x8"
                                                  : "simdgroup_half8x8");
  }
  if (t.isF64())
    return std::string("double");
  if (t.isF16() && language == Language::Metal)
    return std::string("half");
  if (t.isBF16() && language == Language::Metal)
    return at->emitOpError()
           << "uses " << t
           << ": the Metal target does not print bfloat (MSL 3.1) yet; store "
              "the program in f16 or f32";
  if ((t.isF16() || t.isBF16()) && language == Language::OpenCL)
    return at->emitOpError()
           << "uses " << t
           << ": 16-bit floats are not available on the OpenCL 1.2 target "
              "(no cl_khr_fp16 on PoCL); store the program in f32";
  if (t.isF16() || t.isBF16())
    return at->emitOpError() << "uses " << t
                             << ": the C target has no 16-bit float type yet; "
                                "store the program in f32";
  return at->emitOpError() << "uses type " << t
                           << ", which the OpenCL C printer does not know";
}

FailureOr<raw_ostream *> OpenCLPrinter::define(Operation *at, Value v) {
  FailureOr<std::string> t = typeName(at, v.getType());
  if (failed(t))
    return failure();
  if (language == Language::WGSL)
    indent() << "let " << name(v) << ": " << *t << " = ";
  else
    indent() << *t << " " << name(v) << " = ";
  return &os;
}

LogicalResult OpenCLPrinter::declareVariable(Operation *at, Value v) {
  FailureOr<std::string> t = typeName(at, v.getType());
  if (failed(t))
    return failure();
  if (language == Language::WGSL)
    indent() << "var " << name(v) << ": " << *t;
  else
    indent() << *t << " " << name(v);
  return success();
}

StringRef OpenCLPrinter::builtinName(StringRef function) const {
  if (language != Language::WGSL)
    return function; // GLSL's prelude #defines the differing ones.
  return llvm::StringSwitch<StringRef>(function)
      .Case("fmax", "max")
      .Case("fmin", "min")
      .Case("fabs", "abs")
      .Case("rsqrt", "inverseSqrt")
      .Default(function);
}

std::string OpenCLPrinter::linearIndex(Value memref, ValueRange indices) {
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

LogicalResult OpenCLPrinter::printConstant(arith::ConstantOp op) {
  FailureOr<raw_ostream *> o = define(op, op.getResult());
  if (failed(o))
    return failure();
  Attribute value = op.getValue();
  if (auto f = dyn_cast<FloatAttr>(value)) {
    double d = f.getValueAsDouble();
    if (language == Language::WGSL && !std::isfinite(d)) {
      // A constant expression may not be infinite or NaN in WGSL: these
      // come from private variables, at run time.
      std::string bits = std::isnan(d) ? "bitcast<f32>(tang_nan_bits)"
                                       : "bitcast<f32>(tang_inf_bits)";
      if (!f.getType().isF32())
        bits = "f16(" + bits + ")";
      **o << (d < 0 ? "-" : "") << bits;
    } else if (std::isinf(d)) {
      **o << (d < 0 ? "-INFINITY" : "INFINITY");
    } else if (std::isnan(d)) {
      **o << "NAN";
    } else {
      StringRef suffix = f.getType().isF32() ? "f" : "";
      if (language == Language::WGSL && f.getType().isF16())
        suffix = "h";
      **o << llvm::formatv("{0:e16}", d).str() << suffix;
    }
  } else if (auto i = dyn_cast<IntegerAttr>(value)) {
    if (i.getType().isSignlessInteger(1))
      **o << (i.getValue().isZero() ? "false" : "true");
    else
      **o << i.getValue().getSExtValue()
          << (op.getType().isIndex() && language != Language::GLSL &&
                      language != Language::WGSL
                  ? "L"
                  : "");
  } else {
    return op.emitOpError() << "is a constant the OpenCL C printer cannot "
                               "print (vectors and tensors are not "
                               "supported)";
  }
  **o << ";\n";
  return success();
}

LogicalResult OpenCLPrinter::printBinary(Operation *op, StringRef symbol) {
  FailureOr<raw_ostream *> o = define(op, op->getResult(0));
  if (failed(o))
    return failure();
  **o << name(op->getOperand(0)) << " " << symbol << " "
      << name(op->getOperand(1)) << ";\n";
  return success();
}

LogicalResult OpenCLPrinter::printNanPropagating(Operation *op,
                                                 StringRef function) {
  FailureOr<raw_ostream *> o = define(op, op->getResult(0));
  if (failed(o))
    return failure();
  Value a = op->getOperand(0), b = op->getOperand(1);
  std::string call =
      (builtinName(function) + "(" + name(a) + ", " + name(b) + ")").str();
  std::string sum = name(a) + " + " + name(b);
  std::string nan = isNan(a) + " || " + isNan(b);
  if (language == Language::WGSL)
    **o << "select(" << call << ", " << sum << ", " << nan << ");\n";
  else
    **o << "(" << nan << ") ? " << sum << " : " << call << ";\n";
  return success();
}

LogicalResult OpenCLPrinter::printCall(Operation *op, StringRef function) {
  FailureOr<raw_ostream *> o = define(op, op->getResult(0));
  if (failed(o))
    return failure();
  **o << builtinName(function) << "(";
  llvm::interleaveComma(op->getOperands(), **o,
                        [&](Value v) { **o << name(v); });
  **o << ");\n";
  return success();
}

LogicalResult OpenCLPrinter::printCmpI(arith::CmpIOp op) {
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

LogicalResult OpenCLPrinter::printCmpF(arith::CmpFOp op) {
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

std::string OpenCLPrinter::isNan(Value v) {
  if (language != Language::WGSL)
    return "isnan(" + name(v) + ")";
  // WGSL has no isnan (and lets a compiler assume there are no NaNs): the
  // prelude's tang_isnan tests the bits.
  if (v.getType().isF32())
    return "tang_isnan(" + name(v) + ")";
  return "tang_isnan(f32(" + name(v) + "))";
}

LogicalResult OpenCLPrinter::printCast(Operation *op) {
  FailureOr<std::string> t = typeName(op, op->getResult(0).getType());
  FailureOr<raw_ostream *> o = define(op, op->getResult(0));
  if (failed(t) || failed(o))
    return failure();
  **o << convert(*t, name(op->getOperand(0))) << ";\n";
  return success();
}

LogicalResult OpenCLPrinter::printLoad(memref::LoadOp op) {
  FailureOr<raw_ostream *> o = define(op, op.getResult());
  if (failed(o))
    return failure();
  **o << name(op.getMemref()) << "["
      << linearIndex(op.getMemref(), op.getIndices()) << "];\n";
  return success();
}

LogicalResult OpenCLPrinter::printStore(memref::StoreOp op) {
  indent() << name(op.getMemref()) << "["
           << linearIndex(op.getMemref(), op.getIndices())
           << "] = " << name(op.getValueToStore()) << ";\n";
  return success();
}

LogicalResult OpenCLPrinter::printId(Operation *op, StringRef function,
                                     gpu::Dimension dim) {
  FailureOr<raw_ostream *> o = define(op, op->getResult(0));
  if (failed(o))
    return failure();
  if (language == Language::GLSL) {
    StringRef builtin = llvm::StringSwitch<StringRef>(function)
                            .Case("get_group_id", "gl_WorkGroupID")
                            .Case("get_local_id", "gl_LocalInvocationID")
                            .Case("get_local_size", "gl_WorkGroupSize")
                            .Default("gl_NumWorkGroups");
    **o << "int(" << builtin << "[" << static_cast<unsigned>(dim) << "]);\n";
    return success();
  }
  if (language == Language::WGSL) {
    if (function == "get_local_size") {
      **o << blockSize[static_cast<unsigned>(dim)] << ";\n";
      return success();
    }
    StringRef builtin = llvm::StringSwitch<StringRef>(function)
                            .Case("get_group_id", "tang_group")
                            .Case("get_local_id", "tang_local")
                            .Default("tang_groups");
    **o << "i32(" << builtin << "[" << static_cast<unsigned>(dim) << "]);\n";
    return success();
  }
  **o << "(long)" << function << "(" << static_cast<unsigned>(dim) << ");\n";
  return success();
}

LogicalResult OpenCLPrinter::printMatrixOp(Operation *op) {
  if (language == Language::C)
    return printEmulatedMatrixOp(op);
  if (language != Language::Metal)
    return op->emitOpError() << "is a subgroup matrix operation, which this "
                                "target's printer does not map (Metal "
                                "simdgroup_matrix, and C by emulation)";
  // `simdgroup_load(d, base + offset, lead, ulong2(0, 0), transpose)` and
  // its store: the tile's origin as a pointer, its row stride, and whether
  // the buffer holds it transposed.
  auto tileAccess = [&](Value memref, ValueRange indices, uint64_t lead,
                        bool transpose) {
    os << name(memref) << " + " << linearIndex(memref, indices) << ", " << lead
       << ", ulong2(0, 0), " << (transpose ? "true" : "false") << ");\n";
  };
  if (auto c = dyn_cast<gpu::SubgroupMmaConstantMatrixOp>(op)) {
    auto type = cast<gpu::MMAMatrixType>(c.getType());
    FailureOr<raw_ostream *> o = define(op, c.getResult());
    if (failed(o))
      return failure();
    **o << "make_filled_simdgroup_matrix<"
        << (type.getElementType().isF32() ? "float" : "half") << ", 8, 8>("
        << name(c.getValue()) << ");\n";
    return success();
  }
  if (auto load = dyn_cast<gpu::SubgroupMmaLoadMatrixOp>(op)) {
    if (failed(declareVariable(op, load.getRes())))
      return failure();
    os << ";\n";
    indent() << "simdgroup_load(" << name(load.getRes()) << ", ";
    tileAccess(load.getSrcMemref(), load.getIndices(),
               load.getLeadDimension().getZExtValue(),
               load.getTranspose().value_or(false));
    return success();
  }
  if (auto store = dyn_cast<gpu::SubgroupMmaStoreMatrixOp>(op)) {
    indent() << "simdgroup_store(" << name(store.getSrc()) << ", ";
    tileAccess(store.getDstMemref(), store.getIndices(),
               store.getLeadDimension().getZExtValue(),
               store.getTranspose().value_or(false));
    return success();
  }
  auto compute = cast<gpu::SubgroupMmaComputeOp>(op);
  auto elementOf = [](Value v) {
    return cast<gpu::MMAMatrixType>(v.getType()).getElementType();
  };
  if (elementOf(compute.getOpA()) != elementOf(compute.getOpC()) ||
      elementOf(compute.getOpB()) != elementOf(compute.getOpC()))
    return op->emitOpError() << "multiplies matrices of another type than "
                                "its accumulator: Metal's "
                                "simdgroup_multiply_accumulate takes one type";
  if (compute.getATranspose() || compute.getBTranspose())
    return op->emitOpError() << "transposes an operand in the product: "
                                "Metal transposes at the load only";
  if (failed(declareVariable(op, compute.getRes())))
    return failure();
  os << ";\n";
  indent() << "simdgroup_multiply_accumulate(" << name(compute.getRes()) << ", "
           << name(compute.getOpA()) << ", " << name(compute.getOpB()) << ", "
           << name(compute.getOpC()) << ");\n";
  return success();
}

LogicalResult OpenCLPrinter::printEmulatedMatrixOp(Operation *op) {
  auto prefix = [](Type t) {
    return "tang_mma" +
           std::to_string(cast<gpu::MMAMatrixType>(t).getShape()[0]);
  };
  if (auto store = dyn_cast<gpu::SubgroupMmaStoreMatrixOp>(op)) {
    indent() << prefix(store.getSrc().getType()) << "_store("
             << name(store.getSrc()) << ", " << name(store.getDstMemref())
             << " + " << linearIndex(store.getDstMemref(), store.getIndices())
             << ", " << store.getLeadDimension().getZExtValue() << ", "
             << (store.getTranspose().value_or(false) ? "true" : "false")
             << ");\n";
    return success();
  }
  FailureOr<raw_ostream *> o = define(op, op->getResult(0));
  if (failed(o))
    return failure();
  std::string fn = prefix(op->getResult(0).getType());
  if (auto c = dyn_cast<gpu::SubgroupMmaConstantMatrixOp>(op)) {
    **o << fn << "_fill(" << name(c.getValue()) << ");\n";
  } else if (auto load = dyn_cast<gpu::SubgroupMmaLoadMatrixOp>(op)) {
    **o << fn << "_load(" << name(load.getSrcMemref()) << " + "
        << linearIndex(load.getSrcMemref(), load.getIndices()) << ", "
        << load.getLeadDimension().getZExtValue() << ", "
        << (load.getTranspose().value_or(false) ? "true" : "false") << ");\n";
  } else {
    auto compute = cast<gpu::SubgroupMmaComputeOp>(op);
    if (compute.getATranspose() || compute.getBTranspose())
      return op->emitOpError() << "transposes an operand in the product: "
                                  "transposes happen at the load";
    **o << fn << "_mad(" << name(compute.getOpA()) << ", "
        << name(compute.getOpB()) << ", " << name(compute.getOpC()) << ");\n";
  }
  return success();
}

LogicalResult OpenCLPrinter::printFor(scf::ForOp op) {
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
  indent() << "for ("
           << (language == Language::WGSL ? "var " + ivName + ": " + *indexType
                                          : *indexType + " " + ivName)
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
    if (language == Language::WGSL)
      indent() << "let " << tmp << ": " << *t << " = " << name(v) << ";\n";
    else
      indent() << *t << " " << tmp << " = " << name(v) << ";\n";
    temps.push_back(tmp);
  }
  for (auto [tmp, arg] : llvm::zip(temps, op.getRegionIterArgs()))
    indent() << name(arg) << " = " << tmp << ";\n";
  --depth;
  indent() << "}\n";
  return success();
}

LogicalResult OpenCLPrinter::printIf(scf::IfOp op) {
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

LogicalResult OpenCLPrinter::printBlock(Block &block) {
  for (Operation &op : block)
    if (failed(printOp(&op)))
      return failure();
  return success();
}

LogicalResult OpenCLPrinter::printOp(Operation *op) {
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
      .Case<arith::DivUIOp, arith::RemUIOp>([&](Operation *o) {
        FailureOr<raw_ostream *> s = define(o, o->getResult(0));
        if (failed(s))
          return failure();
        // In the operand's own width: a negative i32 is a large unsigned.
        StringRef u = unsignedType(o->getOperand(0).getType());
        FailureOr<std::string> t = typeName(o, o->getResult(0).getType());
        if (failed(t))
          return failure();
        **s << convert(*t, "(" + convert(u, name(o->getOperand(0))) +
                               (isa<arith::DivUIOp>(o) ? " / " : " % ") +
                               convert(u, name(o->getOperand(1))) + ")")
            << ";\n";
        return success();
      })
      .Case([&](arith::NegFOp o) {
        FailureOr<raw_ostream *> s = define(o, o.getResult());
        if (failed(s))
          return failure();
        **s << "-" << name(o.getOperand()) << ";\n";
        return success();
      })
      .Case([&](arith::SelectOp o) {
        FailureOr<raw_ostream *> s = define(o, o.getResult());
        if (failed(s))
          return failure();
        if (language == Language::WGSL)
          **s << "select(" << name(o.getFalseValue()) << ", "
              << name(o.getTrueValue()) << ", " << name(o.getCondition())
              << ");\n";
        else
          **s << name(o.getCondition()) << " ? " << name(o.getTrueValue())
              << " : " << name(o.getFalseValue()) << ";\n";
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
        if (language == Language::Metal || language == Language::GLSL ||
            language == Language::WGSL)
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
      .Case([&](gpu::ShuffleOp o) {
        return o.emitOpError() << "is a subgroup operation, which OpenCL 1.2 "
                                  "(PoCL) does not have: lower without "
                                  "row-kernel schedules";
      })
      .Default([&](Operation *o) {
        return o->emitOpError() << "has no OpenCL C printer";
      });
}

LogicalResult OpenCLPrinter::printKernel(gpu::GPUFuncOp func) {
  if (!func.getWorkgroupAttributions().empty())
    return func.emitOpError() << "uses workgroup memory, which the OpenCL C "
                                 "printer does not map yet";
  if (!func.getBody().hasOneBlock())
    return func.emitOpError() << "has more than one block (structured "
                                 "control flow only)";
  if (language == Language::GLSL)
    return printGLSLShader(func);
  if (language == Language::WGSL)
    return printWGSLEntryPoint(func);
  if (language == Language::OpenCL)
    os << "__kernel void " << func.getName() << "(";
  else if (language == Language::Metal)
    os << "kernel void " << func.getName() << "(";
  else
    os << "static void " << func.getName() << "(const long *tang_ids";
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type || !type.hasStaticShape())
      return func.emitOpError() << "has an argument " << arg.getType()
                                << " that is not a static memref";
    FailureOr<std::string> t = typeName(func, type.getElementType());
    if (failed(t))
      return failure();
    names[arg] = "a" + std::to_string(i);
    if (language == Language::OpenCL)
      os << (i ? ", " : "") << "__global " << *t << " *restrict a" << i;
    else if (language == Language::Metal)
      os << (i ? ", " : "") << "device " << *t << " *a" << i << " [[buffer("
         << i << ")]]";
    else
      os << ", " << *t << " *restrict a" << i;
  }
  if (language == Language::Metal)
    os << (func.getNumArguments() ? ", " : "")
       << "uint3 tang_group [[threadgroup_position_in_grid]], "
          "uint3 tang_local [[thread_position_in_threadgroup]], "
          "uint3 tang_size [[threads_per_threadgroup]], "
          "uint3 tang_groups [[threadgroups_per_grid]]";
  os << ") {\n";
  if (failed(printBlock(func.getBody().front())))
    return failure();
  os << "}\n\n";
  return success();
}

LogicalResult OpenCLPrinter::printGLSLShader(gpu::GPUFuncOp func) {
  std::optional<ArrayRef<int32_t>> size = func.getKnownBlockSize();
  if (!size)
    return func.emitOpError() << "has no known_block_size for the GLSL "
                                 "local size";
  os << "// GLSL 4.50 compute shader, printed by tang from the kernel form\n"
     << "#version 450\n"
     << "layout(local_size_x = " << (*size)[0]
     << ", local_size_y = " << (*size)[1] << ", local_size_z = " << (*size)[2]
     << ") in;\n";
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type || !type.hasStaticShape())
      return func.emitOpError() << "has an argument " << arg.getType()
                                << " that is not a static memref";
    if (type.getNumElements() >= (int64_t(1) << 31))
      return func.emitOpError()
             << "has a buffer of " << type.getNumElements()
             << " elements: the GLSL target indexes with 32-bit int";
    FailureOr<std::string> t = typeName(func, type.getElementType());
    if (failed(t))
      return failure();
    names[arg] = "a" + std::to_string(i);
    os << "layout(std430, binding = " << i << ") buffer B" << i << " { " << *t
       << " a" << i << "[]; };\n";
  }
  os << "#define INFINITY uintBitsToFloat(0x7F800000u)\n"
     << "#define NAN uintBitsToFloat(0x7FC00000u)\n"
     << "#define rsqrt inversesqrt\n"
     << "#define fabs abs\n"
     << "#define fmax max\n"
     << "#define fmin min\n\n"
     << "void main() {\n";
  if (failed(printBlock(func.getBody().front())))
    return failure();
  os << "}\n";
  return success();
}

LogicalResult OpenCLPrinter::printWGSLEntryPoint(gpu::GPUFuncOp func) {
  std::optional<ArrayRef<int32_t>> size = func.getKnownBlockSize();
  if (!size)
    return func.emitOpError() << "has no known_block_size for the WGSL "
                                 "workgroup size";
  blockSize.assign(size->begin(), size->end());
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type || !type.hasStaticShape())
      return func.emitOpError() << "has an argument " << arg.getType()
                                << " that is not a static memref";
    if (type.getNumElements() >= (int64_t(1) << 31))
      return func.emitOpError()
             << "has a buffer of " << type.getNumElements()
             << " elements: the WGSL target indexes with 32-bit i32";
    if (type.getElementType().isSignlessInteger(1))
      return func.emitOpError() << "has a buffer of i1: WGSL storage "
                                   "buffers cannot hold bool";
    FailureOr<std::string> t = typeName(func, type.getElementType());
    if (failed(t))
      return failure();
    // Entry points of one module may share bindings; the names may not.
    names[arg] = (func.getName() + "_a" + Twine(i)).str();
    os << "@group(0) @binding(" << i << ") var<storage, read_write> "
       << names[arg] << ": array<" << *t << ">;\n";
  }
  os << "\n@compute @workgroup_size(" << (*size)[0] << ", " << (*size)[1]
     << ", " << (*size)[2] << ")\n"
     << "fn " << func.getName()
     << "(@builtin(workgroup_id) tang_group: vec3<u32>, "
        "@builtin(local_invocation_id) tang_local: vec3<u32>, "
        "@builtin(num_workgroups) tang_groups: vec3<u32>) {\n";
  if (failed(printBlock(func.getBody().front())))
    return failure();
  os << "}\n\n";
  return success();
}

} // namespace

LogicalResult mlir::tang::translateKernelsToWGSL(gpu::GPUModuleOp kernels,
                                                 raw_ostream &os) {
  std::string text;
  llvm::raw_string_ostream body(text);
  bool needsHalf = false;
  kernels.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      needsHalf |= t.isF16();
    if (auto f = dyn_cast<gpu::GPUFuncOp>(op))
      for (Type t : f.getArgumentTypes())
        if (auto m = dyn_cast<MemRefType>(t))
          needsHalf |= m.getElementType().isF16();
  });
  for (auto func : kernels.getOps<gpu::GPUFuncOp>()) {
    OpenCLPrinter printer(body, Language::WGSL);
    if (failed(printer.printKernel(func)))
      return failure();
  }
  os << "// WGSL, printed by tang from the kernel form\n";
  if (needsHalf)
    os << "enable f16;\n";
  // A constant expression may not evaluate to an infinity or a NaN: the
  // kernels read them from private variables.
  os << "\nvar<private> tang_inf_bits: u32 = 0x7f800000u;\n"
     << "var<private> tang_nan_bits: u32 = 0x7fc00000u;\n\n"
     << "fn tang_isnan(x: f32) -> bool {\n"
     << "  return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;\n"
     << "}\n\n"
     << text;
  return success();
}

LogicalResult mlir::tang::translateKernelsToOpenCL(gpu::GPUModuleOp kernels,
                                                   raw_ostream &os) {
  std::string text;
  llvm::raw_string_ostream body(text);
  bool needsDouble = false;
  kernels.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      needsDouble |= t.isF64();
  });
  for (auto func : kernels.getOps<gpu::GPUFuncOp>()) {
    OpenCLPrinter printer(body, Language::OpenCL);
    if (failed(printer.printKernel(func)))
      return failure();
  }
  os << "// OpenCL C 1.2, printed by tang from the kernel form\n";
  if (needsDouble)
    os << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  os << "\n" << text;
  return success();
}

LogicalResult mlir::tang::translateKernelsToC(gpu::GPUModuleOp kernels,
                                              raw_ostream &os) {
  std::string text;
  llvm::raw_string_ostream body(text);
  for (auto func : kernels.getOps<gpu::GPUFuncOp>()) {
    OpenCLPrinter printer(body, Language::C);
    if (failed(printer.printKernel(func)))
      return failure();
  }
  // The bodies are the OpenCL C bodies: the prelude gives C the built-ins
  // they use (type-generic math through <tgmath.h>, the work-item ids from
  // the launcher's array).
  os << R"(// C11, printed by tang from the kernel form
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <tgmath.h>

typedef unsigned long ulong;
typedef unsigned int uint;
typedef unsigned char uchar;
#define rsqrt(x) (1 / sqrt(x))
#define max(a, b) ((a) > (b) ? (a) : (b))
#define min(a, b) ((a) < (b) ? (a) : (b))
/* tang_ids: block id x y z, thread id x y z, block size, grid size */
#define get_group_id(d) (tang_ids[(d)])
#define get_local_id(d) (tang_ids[3 + (d)])
#define get_local_size(d) (tang_ids[6 + (d)])
#define get_num_groups(d) (tang_ids[9 + (d)])

)";
  // The subgroup matrix operations, emulated: every work item of a
  // subgroup computes the whole tile (they store the same values).
  llvm::SmallSetVector<int64_t, 2> tiles;
  kernels.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      if (auto m = dyn_cast<gpu::MMAMatrixType>(t))
        tiles.insert(m.getShape()[0]);
  });
  for (int64_t t : tiles)
    os << llvm::formatv(R"(/* {0}x{0} f32 subgroup matrices, emulated */
typedef struct {{ float e[{0}][{0}]; } tang_mma{0};
static inline tang_mma{0} tang_mma{0}_fill(float v) {{
  tang_mma{0} m;
  for (int r = 0; r < {0}; ++r)
    for (int c = 0; c < {0}; ++c)
      m.e[r][c] = v;
  return m;
}
static inline tang_mma{0} tang_mma{0}_load(const float *p, long lead,
                                          bool transpose) {{
  tang_mma{0} m;
  for (int r = 0; r < {0}; ++r)
    for (int c = 0; c < {0}; ++c)
      m.e[r][c] = transpose ? p[c * lead + r] : p[r * lead + c];
  return m;
}
static inline void tang_mma{0}_store(tang_mma{0} m, float *p, long lead,
                                     bool transpose) {{
  for (int r = 0; r < {0}; ++r)
    for (int c = 0; c < {0}; ++c)
      p[transpose ? c * lead + r : r * lead + c] = m.e[r][c];
}
static inline tang_mma{0} tang_mma{0}_mad(tang_mma{0} a, tang_mma{0} b,
                                         tang_mma{0} c) {{
  for (int r = 0; r < {0}; ++r)
    for (int k = 0; k < {0}; ++k)
      for (int j = 0; j < {0}; ++j)
        c.e[r][j] += a.e[r][k] * b.e[k][j];
  return c;
}

)",
                        t);
  os << text;
  // One launcher per kernel: every work item independently (the kernels a
  // C target gets are one thread per point, with no barriers), in parallel
  // when compiled with OpenMP.
  for (auto func : kernels.getOps<gpu::GPUFuncOp>()) {
    os << "void tang_launch_" << func.getName()
       << "(const long *grid, const long *block, void **args) {\n"
       << "  long items = grid[0] * grid[1] * grid[2] * block[0] * block[1] "
          "* block[2];\n"
       << "#pragma omp parallel for schedule(dynamic, 64)\n"
       << "  for (long w = 0; w < items; ++w) {\n"
       << "    long ids[12], rest = w;\n"
       << "    for (int d = 0; d < 3; ++d) {\n"
       << "      ids[6 + d] = block[d];\n"
       << "      ids[9 + d] = grid[d];\n"
       << "      ids[3 + d] = rest % block[d];\n"
       << "      rest /= block[d];\n"
       << "    }\n"
       << "    for (int d = 0; d < 3; ++d) {\n"
       << "      ids[d] = rest % grid[d];\n"
       << "      rest /= grid[d];\n"
       << "    }\n"
       << "    " << func.getName() << "(ids";
    for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
      Type e = cast<MemRefType>(arg.getType()).getElementType();
      StringRef t = e.isF64()                 ? "double"
                    : e.isF32()               ? "float"
                    : e.isSignlessInteger(32) ? "int"
                    : e.isSignlessInteger(8)  ? "char"
                    : e.isSignlessInteger(1)  ? "bool"
                                              : "long";
      os << ", (" << t << " *)args[" << i << "]";
    }
    os << ");\n  }\n}\n\n";
  }
  return success();
}

LogicalResult mlir::tang::translateKernelsToMetal(gpu::GPUModuleOp kernels,
                                                  raw_ostream &os) {
  std::string text;
  llvm::raw_string_ostream body(text);
  for (auto func : kernels.getOps<gpu::GPUFuncOp>()) {
    OpenCLPrinter printer(body, Language::Metal);
    if (failed(printer.printKernel(func)))
      return failure();
  }
  // The bodies are the OpenCL C bodies: the prelude maps the OpenCL
  // built-ins they use to Metal's (work-item ids from the kernel's
  // attribute-bound arguments).
  os << R"(// Metal Shading Language, printed by tang from the kernel form
#include <metal_stdlib>
using namespace metal;

#define get_group_id(d) ((long)tang_group[(d)])
#define get_local_id(d) ((long)tang_local[(d)])
#define get_local_size(d) ((long)tang_size[(d)])
#define get_num_groups(d) ((long)tang_groups[(d)])

)" << text;
  return success();
}

LogicalResult mlir::tang::translateKernelsToGLSL(
    gpu::GPUModuleOp kernels,
    SmallVectorImpl<std::pair<std::string, std::string>> &shaders) {
  for (auto func : kernels.getOps<gpu::GPUFuncOp>()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    OpenCLPrinter printer(os, Language::GLSL);
    if (failed(printer.printKernel(func)))
      return failure();
    shaders.emplace_back(func.getName().str(), std::move(text));
  }
  return success();
}

/// Runs `program` (found on PATH) with `args`; the error names the tool.
static LogicalResult runTool(Operation *at, StringRef program,
                             ArrayRef<StringRef> args, StringRef package) {
  llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(program);
  if (!path)
    return at->emitError() << program << " not found on PATH (Debian package "
                           << package << ")";
  SmallVector<StringRef> argv{*path};
  argv.append(args.begin(), args.end());
  std::string message;
  // Its progress output (glslangValidator names each file) stays off
  // tang-opt's stdout; errors come back through the exit code.
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(""),
                                          std::nullopt};
  int rc = llvm::sys::ExecuteAndWait(*path, argv, std::nullopt, redirects, 0, 0,
                                     &message);
  if (rc != 0)
    return at->emitError() << program << " failed (exit " << rc << ")"
                           << (message.empty() ? "" : ": ") << message
                           << "; run it on the printed source to see why";
  return success();
}

namespace {
/// Writes a GLSL bundle: one <kernel>.comp per kernel, compiled by
/// glslangValidator and linked by spirv-link into tang_kernels.spv (one
/// entry point per kernel), described as a SPIR-V bundle that the Vulkan
/// host runs.
struct ExportGLSLBundlePass
    : PassWrapper<ExportGLSLBundlePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExportGLSLBundlePass)
  explicit ExportGLSLBundlePass(std::string dir) : dir(std::move(dir)) {}
  StringRef getArgument() const override { return "tang-export-glsl-bundle"; }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> kernels(module.getOps<gpu::GPUModuleOp>());
    if (kernels.size() != 1) {
      module.emitError() << "a GLSL bundle needs exactly one gpu.module";
      return signalPassFailure();
    }
    SmallVector<std::pair<std::string, std::string>> shaders;
    if (failed(translateKernelsToGLSL(kernels.front(), shaders)))
      return signalPassFailure();
    if (dir.empty()) {
      for (auto &[name, text] : shaders)
        llvm::outs() << text << "\n";
      return;
    }
    if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
      module.emitError() << "cannot create bundle directory '" << dir
                         << "': " << ec.message();
      return signalPassFailure();
    }
    SmallVector<std::string> spvs;
    for (auto &[name, text] : shaders) {
      SmallString<256> comp(dir), spv(dir);
      llvm::sys::path::append(comp, name + ".comp");
      llvm::sys::path::append(spv, name + ".spv");
      std::error_code ec;
      llvm::raw_fd_ostream file(comp, ec, llvm::sys::fs::OF_Text);
      if (ec) {
        module.emitError() << "cannot write '" << comp << "': " << ec.message();
        return signalPassFailure();
      }
      file << text;
      file.close();
      if (failed(runTool(module, "glslangValidator",
                         {"-V", "--target-env", "vulkan1.1", "-e", name,
                          "--source-entrypoint", "main", "-o", spv, comp},
                         "glslang-tools")))
        return signalPassFailure();
      spvs.push_back(std::string(spv));
    }
    SmallString<256> linked(dir);
    llvm::sys::path::append(linked, "tang_kernels.spv");
    SmallVector<StringRef> args(spvs.begin(), spvs.end());
    args.append({"-o", linked});
    if (failed(runTool(module, "spirv-link", args, "spirv-tools")) ||
        failed(writeBundleManifest(module, dir, "spirv", "tang_kernels.spv",
                                   "vulkan")))
      return signalPassFailure();
  }
  std::string dir;
};
} // namespace

std::unique_ptr<Pass> mlir::tang::createExportGLSLBundlePass(std::string dir) {
  return std::make_unique<ExportGLSLBundlePass>(std::move(dir));
}

namespace {
/// What a single-source bundle of one printed language holds.
struct SourceBundle {
  LogicalResult (*translate)(gpu::GPUModuleOp, raw_ostream &);
  StringRef image, format, chip;
};

SourceBundle getSourceBundle(Language language) {
  switch (language) {
  case Language::C:
    return {translateKernelsToC, "tang_kernels.c", "c", "c11"};
  case Language::Metal:
    return {translateKernelsToMetal, "tang_kernels.metal", "metal", "msl"};
  case Language::WGSL:
    return {translateKernelsToWGSL, "tang_kernels.wgsl", "wgsl", "webgpu"};
  default:
    return {translateKernelsToOpenCL, "tang_kernels.cl", "opencl", "opencl1.2"};
  }
}

/// Writes the bundle of one source file (OpenCL C, C, Metal or WGSL) and
/// its manifest, or prints the source when no directory is given.
struct ExportSourceBundlePass
    : PassWrapper<ExportSourceBundlePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExportSourceBundlePass)
  ExportSourceBundlePass(std::string dir, Language language)
      : dir(std::move(dir)), language(language) {}
  StringRef getArgument() const override { return "tang-export-source-bundle"; }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SourceBundle bundle = getSourceBundle(language);
    SmallVector<gpu::GPUModuleOp> kernels(module.getOps<gpu::GPUModuleOp>());
    if (kernels.size() != 1) {
      module.emitError() << "a " << bundle.format
                         << " bundle needs exactly one gpu.module (the "
                            "kernel form), found "
                         << kernels.size();
      return signalPassFailure();
    }
    std::string source;
    llvm::raw_string_ostream os(source);
    if (failed(bundle.translate(kernels.front(), os)))
      return signalPassFailure();
    if (dir.empty()) {
      llvm::outs() << source;
      return;
    }
    if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
      module.emitError() << "cannot create bundle directory '" << dir
                         << "': " << ec.message();
      return signalPassFailure();
    }
    SmallString<256> path(dir);
    llvm::sys::path::append(path, bundle.image);
    std::error_code ec;
    llvm::raw_fd_ostream file(path, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      module.emitError() << "cannot write '" << path << "': " << ec.message();
      return signalPassFailure();
    }
    file << source;
    if (failed(writeBundleManifest(module, dir, bundle.format, bundle.image,
                                   bundle.chip)))
      signalPassFailure();
  }
  std::string dir;
  Language language;
};
} // namespace

std::unique_ptr<Pass>
mlir::tang::createExportOpenCLBundlePass(std::string dir) {
  return std::make_unique<ExportSourceBundlePass>(std::move(dir),
                                                  Language::OpenCL);
}

std::unique_ptr<Pass> mlir::tang::createExportCBundlePass(std::string dir) {
  return std::make_unique<ExportSourceBundlePass>(std::move(dir), Language::C);
}

std::unique_ptr<Pass> mlir::tang::createExportMetalBundlePass(std::string dir) {
  return std::make_unique<ExportSourceBundlePass>(std::move(dir),
                                                  Language::Metal);
}

std::unique_ptr<Pass> mlir::tang::createExportWGSLBundlePass(std::string dir) {
  return std::make_unique<ExportSourceBundlePass>(std::move(dir),
                                                  Language::WGSL);
}
