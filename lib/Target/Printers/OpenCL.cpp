//===- OpenCL.cpp - the kernel form as OpenCL C 1.2 -------------*- C++ -*-===//
//
// Buffers are `__global` pointers. f16 buffers are `__global half *`, read
// by vload_half and written by vstore_half_rte (OpenCL 1.2's core half
// storage, no cl_khr_fp16); an f16 value is a float holding a half's value
// (arith.truncf to f16 rounds to nearest even through a private half,
// arith.extf from f16 is the value). What OpenCL 1.2 on the targets tang
// runs (PoCL) cannot express is a diagnostic naming the feature: arithmetic
// in f16 (the kernel form computes 16-bit programs in f32), bf16, subgroup
// operations. Workgroup memory is `__local` arrays declared in the kernel,
// barriers `barrier(CLK_LOCAL_MEM_FENCE)`.
//
//===----------------------------------------------------------------------===//

#include "KernelPrinter.h"
#include "Tang/Target/Printers/Printers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tang;

namespace {

class OpenCLPrinter : public KernelPrinter {
public:
  using KernelPrinter::KernelPrinter;

protected:
  StringRef languageName() const override { return "OpenCL C"; }

  FailureOr<std::string> typeName(Operation *at, Type t) override {
    if (std::optional<std::string> s = getCScalarName(t))
      return *s;
    if (isa<gpu::MMAMatrixType>(t))
      return at->emitOpError()
             << "uses " << t << ": the target has no matrix type";
    if (t.isF64())
      return std::string("double");
    // A half's value in a float; buffers of halves are `half *` (printEntry).
    if (t.isF16())
      return std::string("float");
    if (t.isBF16())
      return at->emitOpError()
             << "uses " << t
             << ": bf16 is not available on the OpenCL 1.2 target; store the "
                "program in f16 or f32";
    return at->emitOpError() << "uses type " << t << ", which the "
                             << languageName() << " printer does not know";
  }

  /// An f16 constant is a float.
  void printFloat(raw_ostream &o, FloatAttr f) override {
    KernelPrinter::printFloat(o, f);
    double d = f.getValueAsDouble();
    if (f.getType().isF16() && std::isfinite(d))
      o << "f";
  }

  std::optional<std::string> workgroupArray(StringRef name, StringRef type,
                                            int64_t count) override {
    return ("__local " + type + " " + name + "[" + Twine(count) + "];").str();
  }

  LogicalResult printEntry(gpu::GPUFuncOp func) override {
    ArrayRef<BlockArgument> buffers = getBuffers(func);
    return printCFamilyKernel(
        func, ("__kernel void " + func.getName() + "(").str(),
        [&](unsigned i, StringRef t) {
          os << (i ? ", " : "") << "__global "
             << (isHalfBuffer(buffers[i]) ? StringRef("half") : t)
             << " *restrict a" << i;
        });
  }

  std::string castExpr(Operation *op, StringRef type,
                       const std::string &expr) override {
    Type from = op->getOperand(0).getType(), to = op->getResult(0).getType();
    // extf from f16 converts the float holding the half's value.
    if (isa<arith::TruncFOp>(op) && to.isF16() && from.isF32())
      return "tang_round_half(" + expr + ")";
    return convert(type, expr);
  }

  std::string loadExpr(Value memref, const std::string &index) override {
    if (isHalfBuffer(memref))
      return "vload_half(" + index + ", " + name(memref) + ")";
    return KernelPrinter::loadExpr(memref, index);
  }

  std::string storeStatement(Value memref, const std::string &index,
                             const std::string &value) override {
    if (isHalfBuffer(memref))
      return "vstore_half_rte(" + value + ", " + index + ", " + name(memref) +
             ");";
    return KernelPrinter::storeStatement(memref, index, value);
  }

private:
  /// A global buffer of f16 (workgroup arrays of f16 hold floats).
  static bool isHalfBuffer(Value memref) {
    auto type = dyn_cast<MemRefType>(memref.getType());
    return type && type.getElementType().isF16() &&
           !gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(type);
  }
};

} // namespace

LogicalResult mlir::tang::translateKernelsToOpenCL(gpu::GPUModuleOp kernels,
                                                   raw_ostream &os) {
  bool needsDouble = false, needsHalf = false;
  kernels.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      needsDouble |= t.isF64();
    needsHalf |= isa<arith::TruncFOp>(op) && op->getResult(0).getType().isF16();
  });
  WalkResult wide = kernels.walk([&](arith::TruncFOp op) {
    if (op.getType().isF16() && !op.getIn().getType().isF32()) {
      op.emitOpError() << "rounds " << op.getIn().getType()
                       << " to f16: the OpenCL 1.2 target rounds only f32 "
                          "to f16";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (wide.wasInterrupted())
    return failure();
  if (Operation *op = findHalfArithmetic(kernels))
    return op->emitOpError()
           << "computes in f16: the OpenCL 1.2 target (no cl_khr_fp16) "
              "stores f16 but computes in f32";
  FailureOr<std::string> text = printKernels<OpenCLPrinter>(kernels);
  if (failed(text))
    return failure();
  os << "// OpenCL C 1.2, printed by tang from the kernel form\n";
  if (needsDouble)
    os << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  if (needsHalf)
    os << "\n// x rounded to the nearest half (ties to even), as a float.\n"
          "float tang_round_half(float x) {\n"
          "  ushort h;\n"
          "  vstore_half_rte(x, 0, (__private half *)&h);\n"
          "  return vload_half(0, (__private const half *)&h);\n"
          "}\n";
  os << "\n" << *text;
  return success();
}
