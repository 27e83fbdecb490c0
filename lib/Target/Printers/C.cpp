//===- C.cpp - the kernel form as C11 ---------------------------*- C++ -*-===//
//
// Each kernel a function of the work-item ids (OpenCL C's bodies: the
// prelude defines the built-ins they use), and `tang_launch_<kernel>(grid,
// block, args)` running every work item of a launch in turn (kernels
// without barriers only). Subgroup matrix operations are emulated with
// scalar loops (f32 square tiles).
//
//===----------------------------------------------------------------------===//

#include "KernelPrinter.h"
#include "Tang/Target/Printers/Printers.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tang;

namespace {

class CPrinter : public KernelPrinter {
public:
  using KernelPrinter::KernelPrinter;

protected:
  StringRef languageName() const override { return "C"; }

  FailureOr<std::string> typeName(Operation *at, Type t) override {
    if (std::optional<std::string> s = getCScalarName(t))
      return *s;
    if (auto m = dyn_cast<gpu::MMAMatrixType>(t)) {
      // Square f32 matrices are emulated with scalar loops (the prelude).
      if (m.getElementType().isF32() && m.getShape()[0] == m.getShape()[1])
        return ("tang_mma" + Twine(m.getShape()[0])).str();
      return at->emitOpError()
             << "uses " << t << ": the target has no matrix type";
    }
    if (t.isF64())
      return std::string("double");
    if (t.isF16() || t.isBF16())
      return at->emitOpError()
             << "uses " << t
             << ": the C target has no 16-bit float type yet; store the "
                "program in f32";
    return at->emitOpError() << "uses type " << t << ", which the "
                             << languageName() << " printer does not know";
  }

  std::optional<std::string> barrier() override { return std::nullopt; }
  /// Each work item its own array: only kernels whose barriers are all
  /// subgroup-local (each item writes what it reads; any other barrier is
  /// refused) print.
  std::optional<std::string> workgroupArray(StringRef name, StringRef type,
                                            int64_t count) override {
    return (type + " " + name + "[" + Twine(count) + "];").str();
  }

  LogicalResult printEntry(gpu::GPUFuncOp func) override {
    return printCFamilyKernel(
        func, ("static void " + func.getName() + "(const long *tang_ids").str(),
        [&](unsigned i, StringRef t) {
          os << ", " << t << " *restrict a" << i;
        });
  }

  /// gpu.subgroup_mma_*: calls of the prelude's emulation.
  LogicalResult printMatrixOp(Operation *op) override {
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
};

} // namespace

LogicalResult mlir::tang::translateKernelsToC(gpu::GPUModuleOp kernels,
                                              raw_ostream &os) {
  FailureOr<std::string> text = printKernels<CPrinter>(kernels);
  if (failed(text))
    return failure();
  // The bodies are the OpenCL C bodies: the prelude gives C the built-ins
  // they use (type-generic math through <tgmath.h>, the work-item ids from
  // the launcher's array).
  os << R"(// C11, printed by tang from the kernel form
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <tgmath.h>

typedef unsigned long ulong;
typedef unsigned int uint;
typedef unsigned char uchar;
#define rsqrt(x) (1 / sqrt(x))
#define max(a, b) ((a) > (b) ? (a) : (b))
#define min(a, b) ((a) < (b) ? (a) : (b))
static inline float as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
static inline int as_int(float x) { int i; memcpy(&i, &x, 4); return i; }
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
  os << *text;
  // One launcher per kernel: every work item independently (the kernels a
  // C target gets are one thread per point, with no barriers but
  // subgroup-local ones), in parallel when compiled with OpenMP.
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
    // The parameters (the body's arguments past them are workgroup
    // arrays, declared in the kernel).
    for (auto [i, arg] : llvm::enumerate(
             func.getArguments().take_front(func.getNumArguments()))) {
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
