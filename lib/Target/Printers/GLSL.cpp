//===- GLSL.cpp - the kernel form as GLSL 4.50 compute shaders --*- C++ -*-===//
//
// One shader per kernel: its buffers storage blocks bound in parameter
// order, its body in main(), 32-bit int indices (buffers of fewer than 2^31
// elements), constructors for conversions, the gl_* work-item ids.
//
//===----------------------------------------------------------------------===//

#include "KernelPrinter.h"
#include "Tang/Target/Printers/Printers.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::tang;

namespace {

class GLSLPrinter : public KernelPrinter {
public:
  using KernelPrinter::KernelPrinter;

protected:
  StringRef languageName() const override { return "GLSL"; }

  FailureOr<std::string> typeName(Operation *at, Type t) override {
    // 32-bit indices: GLSL indexes arrays with int (buffers are checked to
    // hold fewer than 2^31 elements).
    if (t.isIndex() || t.isSignlessInteger(32))
      return std::string("int");
    if (t.isSignlessInteger(1))
      return std::string("bool");
    // A half's value in a float; buffers of halves hold float16_t
    // (printEntry).
    if (t.isF32() || t.isF16())
      return std::string("float");
    return at->emitOpError() << "uses " << t
                             << ", which the GLSL target does not support yet "
                                "(32-bit int and float, f16 storage, bool)";
  }
  std::string castExpr(Operation *op, StringRef type,
                       const std::string &expr) override {
    // truncf to f16 rounds through a float16_t (OpFConvert both ways:
    // StorageBuffer16BitAccess suffices); extf from f16 is the value.
    if (isa<arith::TruncFOp>(op) && op->getResult(0).getType().isF16())
      return "float(float16_t(" + expr + "))";
    return convert(type, expr);
  }
  std::string loadExpr(Value memref, const std::string &index) override {
    std::string e = KernelPrinter::loadExpr(memref, index);
    return isHalfBuffer(memref) ? "float(" + e + ")" : e;
  }
  std::string storeStatement(Value memref, const std::string &index,
                             const std::string &value) override {
    return KernelPrinter::storeStatement(
        memref, index,
        isHalfBuffer(memref) ? "float16_t(" + value + ")" : value);
  }
  StringRef indexSuffix() const override { return ""; }
  StringRef unsignedType(Type) override { return "uint"; }
  std::string convert(StringRef type, const std::string &expr) override {
    return (type + "(" + expr + ")").str();
  }
  bool hasErf() const override { return false; }
  std::string bitcast(StringRef type, const std::string &expr) override {
    return (type == "float" ? "intBitsToFloat(" : "floatBitsToInt(") + expr +
           ")";
  }
  std::optional<std::string> workgroupArray(StringRef name, StringRef type,
                                            int64_t count) override {
    return ("shared " + type + " " + name + "[" + Twine(count) + "];").str();
  }
  // barrier() orders shared memory only with a memory barrier beside it.
  std::optional<std::string> barrier() override {
    return std::string("memoryBarrierShared(); barrier();");
  }

  LogicalResult printId(Operation *op, StringRef function,
                        gpu::Dimension dim) override {
    FailureOr<raw_ostream *> o = define(op, op->getResult(0));
    if (failed(o))
      return failure();
    StringRef builtin = llvm::StringSwitch<StringRef>(function)
                            .Case("get_group_id", "gl_WorkGroupID")
                            .Case("get_local_id", "gl_LocalInvocationID")
                            .Case("get_local_size", "gl_WorkGroupSize")
                            .Default("gl_NumWorkGroups");
    **o << "int(" << builtin << "[" << static_cast<unsigned>(dim) << "]);\n";
    return success();
  }

  /// The shader: its buffers as storage blocks bound in parameter order,
  /// its body in main().
  LogicalResult printEntry(gpu::GPUFuncOp func) override {
    std::optional<ArrayRef<int32_t>> size = func.getKnownBlockSize();
    if (!size)
      return func.emitOpError() << "has no known_block_size for the GLSL "
                                   "local size";
    os << "// GLSL 4.50 compute shader, printed by tang from the kernel form\n"
       << "#version 450\n";
    if (llvm::any_of(getBuffers(func),
                     [](BlockArgument a) { return isHalfBuffer(a); }))
      os << "#extension GL_EXT_shader_16bit_storage : require\n";
    os << "layout(local_size_x = " << (*size)[0]
       << ", local_size_y = " << (*size)[1] << ", local_size_z = " << (*size)[2]
       << ") in;\n";
    for (auto [i, arg] : llvm::enumerate(getBuffers(func))) {
      FailureOr<MemRefType> buffer = getBufferType(func, arg);
      if (failed(buffer))
        return failure();
      MemRefType type = *buffer;
      if (type.hasStaticShape() && type.getNumElements() >= (int64_t(1) << 31))
        return func.emitOpError()
               << "has a buffer of " << type.getNumElements()
               << " elements: the GLSL target indexes with 32-bit int";
      FailureOr<std::string> t = typeName(func, type.getElementType());
      if (failed(t))
        return failure();
      names[arg] = "a" + std::to_string(i);
      os << "layout(std430, binding = " << i << ") buffer B" << i << " { "
         << (isHalfBuffer(arg) ? StringRef("float16_t") : StringRef(*t)) << " a"
         << i << "[]; };\n";
    }
    os << "#define INFINITY uintBitsToFloat(0x7F800000u)\n"
       << "#define NAN uintBitsToFloat(0x7FC00000u)\n"
       << "#define rsqrt inversesqrt\n"
       << "#define fabs abs\n"
       << "#define fmax max\n"
       << "#define fmin min\n";
    unsigned saved = depth;
    depth = 0;
    if (failed(printWorkgroupArrays(func)))
      return failure();
    depth = saved;
    os << "\nvoid main() {\n";
    if (failed(printBody(func)))
      return failure();
    os << "}\n";
    return success();
  }

private:
  /// A storage buffer of f16 (workgroup arrays of f16 hold floats).
  static bool isHalfBuffer(Value memref) {
    auto type = dyn_cast<MemRefType>(memref.getType());
    return type && type.getElementType().isF16() &&
           !gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(type);
  }
};

} // namespace

LogicalResult mlir::tang::translateKernelsToGLSL(
    gpu::GPUModuleOp kernels,
    SmallVectorImpl<std::pair<std::string, std::string>> &shaders) {
  if (Operation *op = findHalfArithmetic(kernels))
    return op->emitOpError() << "computes in f16: the GLSL target stores f16 "
                                "(16-bit storage) but computes in f32";
  for (auto func : kernels.getOps<gpu::GPUFuncOp>()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    GLSLPrinter printer(os);
    if (failed(printer.printKernel(func)))
      return failure();
    shaders.emplace_back(func.getName().str(), std::move(text));
  }
  return success();
}
