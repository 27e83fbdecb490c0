//===- Metal.cpp - the kernel form as Metal Shading Language ----*- C++ -*-===//
//
// Compute kernels whose buffers are bound in parameter order and whose
// work-item ids come from the position attributes (OpenCL C's bodies: the
// prelude maps the built-ins they use). Subgroup matrix operations are
// simdgroup_matrix calls (8x8, float or half).
//
//===----------------------------------------------------------------------===//

#include "KernelPrinter.h"
#include "Tang/Target/Printers/Printers.h"

using namespace mlir;
using namespace mlir::tang;

namespace {

class MetalPrinter : public KernelPrinter {
public:
  using KernelPrinter::KernelPrinter;

protected:
  StringRef languageName() const override { return "Metal"; }

  FailureOr<std::string> typeName(Operation *at, Type t) override {
    if (std::optional<std::string> s = getCScalarName(t))
      return *s;
    if (t.isF64())
      return at->emitOpError() << "uses f64: Metal has no 64-bit float";
    if (auto m = dyn_cast<gpu::MMAMatrixType>(t)) {
      if (m.getShape() != ArrayRef<int64_t>{8, 8} ||
          !(m.getElementType().isF32() || m.getElementType().isF16()))
        return at->emitOpError()
               << "uses " << t
               << ": Metal's simdgroup matrices are 8x8 of float or half";
      return std::string(m.getElementType().isF32() ? "simdgroup_float8x8"
                                                    : "simdgroup_half8x8");
    }
    if (t.isF16())
      return std::string("half");
    if (t.isBF16())
      return at->emitOpError()
             << "uses " << t
             << ": the Metal target does not print bfloat (MSL 3.1) yet; "
                "store the program in f16 or f32";
    return at->emitOpError() << "uses type " << t << ", which the "
                             << languageName() << " printer does not know";
  }

  bool hasErf() const override { return false; }
  std::optional<std::string> workgroupArray(StringRef name, StringRef type,
                                            int64_t count) override {
    return ("threadgroup " + type + " " + name + "[" + Twine(count) + "];")
        .str();
  }
  std::string bitcast(StringRef type, const std::string &expr) override {
    return ("as_type<" + type + ">(" + expr + ")").str();
  }
  std::optional<std::string> barrier() override {
    return std::string("threadgroup_barrier(mem_flags::mem_threadgroup);");
  }

  LogicalResult printEntry(gpu::GPUFuncOp func) override {
    std::string ids =
        (func.getNumArguments() ? ", " : "") +
        std::string("uint3 tang_group "
                    "[[threadgroup_position_in_grid]], "
                    "uint3 tang_local "
                    "[[thread_position_in_threadgroup]], "
                    "uint3 tang_size [[threads_per_threadgroup]], "
                    "uint3 tang_groups [[threadgroups_per_grid]]");
    return printCFamilyKernel(
        func, ("kernel void " + func.getName() + "(").str(),
        [&](unsigned i, StringRef t) {
          os << (i ? ", " : "") << "device " << t << " *a" << i << " [[buffer("
             << i << ")]]";
        },
        ids);
  }

  /// gpu.subgroup_mma_*: Metal simdgroup_matrix calls.
  LogicalResult printMatrixOp(Operation *op) override {
    // `simdgroup_load(d, base + offset, lead, ulong2(0, 0), transpose)` and
    // its store: the tile's origin as a pointer, its row stride, and whether
    // the buffer holds it transposed.
    auto tileAccess = [&](Value memref, ValueRange indices, uint64_t lead,
                          bool transpose) {
      os << name(memref) << " + " << linearIndex(memref, indices) << ", "
         << lead << ", ulong2(0, 0), " << (transpose ? "true" : "false")
         << ");\n";
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
      return op->emitOpError()
             << "multiplies matrices of another type than "
                "its accumulator: Metal's "
                "simdgroup_multiply_accumulate takes one type";
    if (compute.getATranspose() || compute.getBTranspose())
      return op->emitOpError() << "transposes an operand in the product: "
                                  "Metal transposes at the load only";
    if (failed(declareVariable(op, compute.getRes())))
      return failure();
    os << ";\n";
    indent() << "simdgroup_multiply_accumulate(" << name(compute.getRes())
             << ", " << name(compute.getOpA()) << ", " << name(compute.getOpB())
             << ", " << name(compute.getOpC()) << ");\n";
    return success();
  }
};

} // namespace

LogicalResult mlir::tang::translateKernelsToMetal(gpu::GPUModuleOp kernels,
                                                  raw_ostream &os) {
  FailureOr<std::string> text = printKernels<MetalPrinter>(kernels);
  if (failed(text))
    return failure();
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

)" << *text;
  return success();
}
