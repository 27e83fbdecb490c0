//===- OpenCL.cpp - the kernel form as OpenCL C 1.2 -------------*- C++ -*-===//
//
// Buffers are `__global` pointers. What OpenCL 1.2 on the targets tang runs
// (PoCL) cannot express is a diagnostic naming the feature: 16-bit floats
// (no cl_khr_fp16), subgroup operations. Workgroup memory is `__local`
// arrays declared in the kernel, barriers `barrier(CLK_LOCAL_MEM_FENCE)`.
//
//===----------------------------------------------------------------------===//

#include "KernelPrinter.h"
#include "Tang/Target/Printers/Printers.h"

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
    if (t.isF16() || t.isBF16())
      return at->emitOpError()
             << "uses " << t
             << ": 16-bit floats are not available on the OpenCL 1.2 target "
                "(no cl_khr_fp16 on PoCL); store the program in f32";
    return at->emitOpError() << "uses type " << t << ", which the "
                             << languageName() << " printer does not know";
  }

  std::optional<std::string> workgroupArray(StringRef name, StringRef type,
                                            int64_t count) override {
    return ("__local " + type + " " + name + "[" + Twine(count) + "];").str();
  }

  LogicalResult printEntry(gpu::GPUFuncOp func) override {
    return printCFamilyKernel(
        func, ("__kernel void " + func.getName() + "(").str(),
        [&](unsigned i, StringRef t) {
          os << (i ? ", " : "") << "__global " << t << " *restrict a" << i;
        });
  }
};

} // namespace

LogicalResult mlir::tang::translateKernelsToOpenCL(gpu::GPUModuleOp kernels,
                                                   raw_ostream &os) {
  bool needsDouble = false;
  kernels.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      needsDouble |= t.isF64();
  });
  FailureOr<std::string> text = printKernels<OpenCLPrinter>(kernels);
  if (failed(text))
    return failure();
  os << "// OpenCL C 1.2, printed by tang from the kernel form\n";
  if (needsDouble)
    os << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  os << "\n" << *text;
  return success();
}
