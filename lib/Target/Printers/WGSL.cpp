//===- WGSL.cpp - the kernel form as WGSL (WebGPU compute) ------*- C++ -*-===//
//
// One module holds every kernel: an entry point per kernel, its buffers
// storage variables named after it in group 0, bound in parameter order;
// 32-bit indices; f16 through `enable f16`; `let`/`var` declarations,
// constructors for conversions, select() for choices, and a bit test for
// NaN (WGSL has no isnan, and lets a compiler assume there are none).
//
//===----------------------------------------------------------------------===//

#include "KernelPrinter.h"
#include "Tang/Target/Printers/Printers.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tang;

namespace {

class WGSLPrinter : public KernelPrinter {
public:
  using KernelPrinter::KernelPrinter;

protected:
  StringRef languageName() const override { return "WGSL"; }

  FailureOr<std::string> typeName(Operation *at, Type t) override {
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
  std::string declaration(StringRef name, StringRef type,
                          bool isMutable) override {
    return ((isMutable ? "var " : "let ") + name + ": " + type).str();
  }
  StringRef builtinName(StringRef function) const override {
    return llvm::StringSwitch<StringRef>(function)
        .Case("fmax", "max")
        .Case("fmin", "min")
        .Case("fabs", "abs")
        .Case("rsqrt", "inverseSqrt")
        .Default(function);
  }
  void printFloat(raw_ostream &o, FloatAttr f) override {
    double d = f.getValueAsDouble();
    if (!std::isfinite(d)) {
      // A constant expression may not be infinite or NaN in WGSL: these
      // come from private variables, at run time.
      std::string bits = std::isnan(d) ? "bitcast<f32>(tang_nan_bits)"
                                       : "bitcast<f32>(tang_inf_bits)";
      if (!f.getType().isF32())
        bits = "f16(" + bits + ")";
      o << (d < 0 ? "-" : "") << bits;
      return;
    }
    StringRef suffix = f.getType().isF32()   ? "f"
                       : f.getType().isF16() ? "h"
                                             : "";
    o << llvm::formatv("{0:e16}", d).str() << suffix;
  }
  StringRef indexSuffix() const override { return ""; }
  std::string select(const std::string &cond, const std::string &t,
                     const std::string &f) override {
    return "select(" + f + ", " + t + ", " + cond + ")";
  }
  std::string isNan(Value v) override {
    // The prelude's tang_isnan tests the bits.
    if (v.getType().isF32())
      return "tang_isnan(" + name(v) + ")";
    return "tang_isnan(f32(" + name(v) + "))";
  }
  StringRef unsignedType(Type) override { return "u32"; }
  std::string convert(StringRef type, const std::string &expr) override {
    return (type + "(" + expr + ")").str();
  }
  bool hasErf() const override { return false; }

  LogicalResult printId(Operation *op, StringRef function,
                        gpu::Dimension dim) override {
    FailureOr<raw_ostream *> o = define(op, op->getResult(0));
    if (failed(o))
      return failure();
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

  /// The entry point: its buffers as storage variables named after the
  /// kernel (one module holds every kernel), bound in parameter order in
  /// group 0.
  std::optional<std::string> workgroupArray(StringRef name, StringRef type,
                                            int64_t count) override {
    return ("var<workgroup> " + name + ": array<" + type + ", " + Twine(count) +
            ">;")
        .str();
  }
  std::optional<std::string> barrier() override {
    return std::string("workgroupBarrier();");
  }
  std::string bitcast(StringRef type, const std::string &expr) override {
    return ("bitcast<" + type + ">(" + expr + ")").str();
  }
  std::string workgroupName(gpu::GPUFuncOp func, unsigned i) override {
    return (func.getName() + "_w" + Twine(i)).str();
  }

  LogicalResult printEntry(gpu::GPUFuncOp func) override {
    std::optional<ArrayRef<int32_t>> size = func.getKnownBlockSize();
    if (!size)
      return func.emitOpError() << "has no known_block_size for the WGSL "
                                   "workgroup size";
    blockSize.assign(size->begin(), size->end());
    for (auto [i, arg] : llvm::enumerate(getBuffers(func))) {
      FailureOr<MemRefType> buffer = getBufferType(func, arg);
      if (failed(buffer))
        return failure();
      MemRefType type = *buffer;
      if (type.hasStaticShape() && type.getNumElements() >= (int64_t(1) << 31))
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
    unsigned saved = depth;
    depth = 0;
    if (failed(printWorkgroupArrays(func)))
      return failure();
    depth = saved;
    os << "\n@compute @workgroup_size(" << (*size)[0] << ", " << (*size)[1]
       << ", " << (*size)[2] << ")\n"
       << "fn " << func.getName()
       << "(@builtin(workgroup_id) tang_group: vec3<u32>, "
          "@builtin(local_invocation_id) tang_local: vec3<u32>, "
          "@builtin(num_workgroups) tang_groups: vec3<u32>) {\n";
    if (failed(printBody(func)))
      return failure();
    os << "}\n\n";
    return success();
  }

private:
  /// The kernel's workgroup size (WGSL has no built-in for it).
  SmallVector<int32_t, 3> blockSize;
};

} // namespace

LogicalResult mlir::tang::translateKernelsToWGSL(gpu::GPUModuleOp kernels,
                                                 raw_ostream &os) {
  bool needsHalf = false;
  kernels.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      needsHalf |= t.isF16();
    if (auto f = dyn_cast<gpu::GPUFuncOp>(op))
      for (Type t : f.getArgumentTypes())
        if (auto m = dyn_cast<MemRefType>(t))
          needsHalf |= m.getElementType().isF16();
  });
  FailureOr<std::string> text = printKernels<WGSLPrinter>(kernels);
  if (failed(text))
    return failure();
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
     << *text;
  return success();
}
