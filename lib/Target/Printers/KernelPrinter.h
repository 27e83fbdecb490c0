//===- KernelPrinter.h - the kernel form as source text ---------*- C++ -*-===//
//
// The shared base of the text backends' printers (OpenCL C, C, Metal,
// GLSL, WGSL; one subclass per language, each in its own file). It prints
// the kernels of the kernel form (`gpu.module @tang_kernels`) one function
// per operation and decides nothing of its own (the schedule and the kernel
// shape were fixed by --convert-tang-to-gpu, what a language needs changed
// by the passes its pipeline runs first); it only reads the IR. Every SSA
// value becomes a local variable `vN`; structured control flow (scf.for,
// scf.if) becomes loops and branches whose results are variables declared
// before them; buffers are indexed by the row-major linearisation of their
// static shapes.
//
// A subclass says how its language declares values, names types, built-in
// functions and work-item ids, spells constants, conversions and selects,
// and prints a kernel's signature. What a language cannot express is a
// diagnostic naming the feature.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_LIB_TARGET_PRINTERS_KERNELPRINTER_H
#define TANG_LIB_TARGET_PRINTERS_KERNELPRINTER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>

namespace mlir::tang {

class KernelPrinter {
public:
  explicit KernelPrinter(raw_ostream &os) : os(os) {}
  virtual ~KernelPrinter() = default;

  /// Prints `func` (a kernel of one block; its workgroup memory where the
  /// language has some).
  LogicalResult printKernel(gpu::GPUFuncOp func);

protected:
  //===--------------------------------------------------------------------===//
  // What each language says
  //===--------------------------------------------------------------------===//

  /// The signature, the body (printBody) and the end of `func`.
  virtual LogicalResult printEntry(gpu::GPUFuncOp func) = 0;
  /// The language's name in diagnostics ("OpenCL C", "Metal", ...).
  virtual StringRef languageName() const = 0;
  /// The language's name for scalar (or matrix) type `t`, or a diagnostic
  /// at `at`.
  virtual FailureOr<std::string> typeName(Operation *at, Type t) = 0;
  /// The declaration of `name` of type `type`: `T name`, or WGSL's
  /// `let name: T` (`var` when `isMutable`).
  virtual std::string declaration(StringRef name, StringRef type,
                                  bool isMutable) {
    return (type + " " + name).str();
  }
  /// The language's name for an OpenCL C built-in function.
  virtual StringRef builtinName(StringRef function) const { return function; }
  /// A float constant's spelling.
  virtual void printFloat(raw_ostream &o, FloatAttr f);
  /// The suffix of an index constant (C's `L`).
  virtual StringRef indexSuffix() const { return "L"; }
  /// `cond ? t : f` (a compound `cond` in parentheses), or WGSL's
  /// select(f, t, cond).
  virtual std::string select(const std::string &cond, const std::string &t,
                             const std::string &f);
  /// Whether `v` is a NaN, as an expression.
  virtual std::string isNan(Value v) { return "isnan(" + name(v) + ")"; }
  /// The unsigned type of `t`'s width.
  virtual StringRef unsignedType(Type t);
  /// `expr` converted to `type`: a C cast, or a GLSL/WGSL constructor.
  virtual std::string convert(StringRef type, const std::string &expr) {
    return ("(" + type + ")" + expr).str();
  }
  /// `op` (arith.extf, truncf, sitofp, ...) of `expr` to `type`: convert
  /// unless a language treats a conversion otherwise (OpenCL's f16).
  virtual std::string castExpr(Operation *op, StringRef type,
                               const std::string &expr) {
    return convert(type, expr);
  }
  /// The element `index` of `memref` as an expression (`a0[i]`).
  virtual std::string loadExpr(Value memref, const std::string &index) {
    return name(memref) + "[" + index + "]";
  }
  /// The statement storing `value` at element `index` of `memref`, without
  /// indentation or newline (`a0[i] = v;`).
  virtual std::string storeStatement(Value memref, const std::string &index,
                                     const std::string &value) {
    return name(memref) + "[" + index + "] = " + value + ";";
  }
  /// A work-item id (`function` names OpenCL's: get_group_id, ...).
  virtual LogicalResult printId(Operation *op, StringRef function,
                                gpu::Dimension dim);
  /// gpu.subgroup_mma_*: a diagnostic unless the language maps them.
  virtual LogicalResult printMatrixOp(Operation *op);
  /// Whether the language has erf.
  virtual bool hasErf() const { return true; }
  /// `expr`'s bits as `type` (arith.bitcast between f32 and i32): OpenCL
  /// C's as_float(x) / as_int(x).
  virtual std::string bitcast(StringRef type, const std::string &expr) {
    return ("as_" + type + "(" + expr + ")").str();
  }
  /// The declaration of workgroup array `name` of `count` `type`s
  /// (OpenCL's `__local float w0[128];`), or none where the language has
  /// no workgroup memory (C: its launcher runs work items in turn).
  virtual std::optional<std::string>
  workgroupArray(StringRef name, StringRef type, int64_t count) {
    return std::nullopt;
  }
  /// The statement of a workgroup barrier over workgroup memory (OpenCL's
  /// `barrier(CLK_LOCAL_MEM_FENCE);`), or none where the language has no
  /// barrier (C's launcher runs work items in turn).
  virtual std::optional<std::string> barrier() {
    return std::string("barrier(CLK_LOCAL_MEM_FENCE);");
  }
  /// The name of `func`'s workgroup array `i` (unique in the printed text:
  /// WGSL declares them beside every kernel's).
  virtual std::string workgroupName(gpu::GPUFuncOp func, unsigned i) {
    return "w" + std::to_string(i);
  }

  //===--------------------------------------------------------------------===//
  // Shared
  //===--------------------------------------------------------------------===//

  /// The C-family names of the scalars every C-like language has (index
  /// and i64 as long, i32, i8, i1, f32), or none.
  static std::optional<std::string> getCScalarName(Type t);
  /// `func`'s buffer parameters (its body's first arguments; workgroup
  /// attributions follow them).
  static ArrayRef<BlockArgument> getBuffers(gpu::GPUFuncOp func) {
    return func.getArguments().take_front(func.getNumArguments());
  }
  /// `arg`'s static memref type, or a diagnostic at `func`.
  static FailureOr<MemRefType> getBufferType(gpu::GPUFuncOp func,
                                             BlockArgument arg);
  /// A C-family kernel (OpenCL C, C, Metal): `head`, each buffer parameter
  /// as `param(i, element type)` prints it (buffer i is named `ai`), `tail`,
  /// then the body in braces.
  LogicalResult
  printCFamilyKernel(gpu::GPUFuncOp func, StringRef head,
                     function_ref<void(unsigned, StringRef)> param,
                     StringRef tail = "");
  /// Declares `func`'s workgroup arrays (workgroupArray), one a line at
  /// the current depth; a diagnostic where the language has none.
  LogicalResult printWorkgroupArrays(gpu::GPUFuncOp func);
  /// The body of `func`'s single block.
  LogicalResult printBody(gpu::GPUFuncOp func) {
    return printBlock(func.getBody().front());
  }
  std::string name(Value v) {
    auto [it, inserted] = names.try_emplace(v, "");
    if (inserted)
      it->second = "v" + std::to_string(next++);
    return it->second;
  }
  raw_ostream &indent() { return os.indent(2 * depth); }
  /// Declares `v` and returns the stream for its value.
  FailureOr<raw_ostream *> define(Operation *at, Value v);
  /// Declares `v` as a variable that is assigned later (a loop-carried
  /// value, an scf.if result), without a `;`.
  LogicalResult declareVariable(Operation *at, Value v);
  std::string linearIndex(Value memref, ValueRange indices);

  raw_ostream &os;
  llvm::DenseMap<Value, std::string> names;
  unsigned next = 0;
  unsigned depth = 1;

private:
  LogicalResult printBlock(Block &block);
  LogicalResult printOp(Operation *op);
  LogicalResult printConstant(arith::ConstantOp op);
  LogicalResult printBinary(Operation *op, StringRef symbol);
  LogicalResult printCall(Operation *op, StringRef function);
  /// `function` (fmax or fmin) of the two operands, NaN when either is.
  LogicalResult printNanPropagating(Operation *op, StringRef function);
  /// An unsigned division, remainder, min or max, in the operands' width.
  LogicalResult printUnsigned(Operation *op);
  LogicalResult printCmpI(arith::CmpIOp op);
  LogicalResult printCmpF(arith::CmpFOp op);
  LogicalResult printCast(Operation *op);
  LogicalResult printLoad(memref::LoadOp op);
  LogicalResult printStore(memref::StoreOp op);
  LogicalResult printFor(scf::ForOp op);
  LogicalResult printIf(scf::IfOp op);
  static bool isBool(Operation *op) {
    return op->getResult(0).getType().isSignlessInteger(1);
  }
};

/// The first operation of `kernels` that computes in f16 (a result of f16
/// type but a load, a rounding, a select, a constant or structured control
/// flow carrying such values), or null: the languages that store f16 but
/// compute it in f32 (OpenCL C 1.2 without cl_khr_fp16, GLSL with 16-bit
/// storage) refuse it. The kernel form computes 16-bit programs in f32.
Operation *findHalfArithmetic(gpu::GPUModuleOp kernels);

/// Every kernel of `kernels` printed by a fresh `Printer` (a KernelPrinter)
/// into one text, in order; failure (with the printer's diagnostic) on the
/// first kernel it cannot print.
template <typename Printer>
FailureOr<std::string> printKernels(gpu::GPUModuleOp kernels) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (auto func : kernels.getOps<gpu::GPUFuncOp>()) {
    Printer printer(os);
    if (failed(printer.printKernel(func)))
      return failure();
  }
  return text;
}

} // namespace mlir::tang

#endif // TANG_LIB_TARGET_PRINTERS_KERNELPRINTER_H
