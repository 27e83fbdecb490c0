//===- tang-translate.cpp - the kernel form as source text ------*- C++ -*-===//
//
// tang's mlir-translate: prints the kernels of a module in the kernel form
// (one gpu.module, as --convert-tang-to-gpu and a target's preparation
// passes leave it) as OpenCL C, C11, Metal, GLSL or WGSL source:
//
//   tang-opt prog.mlir --convert-tang-to-gpu | tang-translate --to-opencl
//
// The printers only read the IR; what a language needs done first (32-bit
// indices for GLSL and WGSL: --tang-narrow-32-bit-kernels) is a pass, which
// the --tang-lower-<language> pipelines run before their bundle writers.
//
//===----------------------------------------------------------------------===//

#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Target/Printers/Printers.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

using namespace mlir;

/// The one gpu.module of `op` (a builtin.module), or an error.
static FailureOr<gpu::GPUModuleOp> getKernels(Operation *op,
                                              StringRef language) {
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    return op->emitError() << "expected a builtin.module";
  SmallVector<gpu::GPUModuleOp> kernels(module.getOps<gpu::GPUModuleOp>());
  if (kernels.size() != 1)
    return module.emitError()
           << "--to-" << language
           << " needs exactly one gpu.module (the kernel form, as "
              "--convert-tang-to-gpu leaves it), found "
           << kernels.size();
  return kernels.front();
}

static void registerDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registry.insert<tang::TangDialect>();
}

/// Registers --to-<language> for a printer of one source text.
static void registerLanguage(StringRef language, StringRef description,
                             LogicalResult (*translate)(gpu::GPUModuleOp,
                                                        raw_ostream &)) {
  TranslateFromMLIRRegistration(
      ("to-" + language).str(), description,
      [language, translate](Operation *op, raw_ostream &os) -> LogicalResult {
        FailureOr<gpu::GPUModuleOp> kernels = getKernels(op, language);
        if (failed(kernels))
          return failure();
        return translate(*kernels, os);
      },
      registerDialects);
}

int main(int argc, char **argv) {
  registerLanguage("opencl", "Print the kernel form as OpenCL C 1.2",
                   tang::translateKernelsToOpenCL);
  registerLanguage("c",
                   "Print the kernel form as C11 (a launcher per kernel runs "
                   "its work items in turn)",
                   tang::translateKernelsToC);
  registerLanguage("metal", "Print the kernel form as Metal Shading Language",
                   tang::translateKernelsToMetal);
  registerLanguage("wgsl", "Print the kernel form as WGSL (WebGPU compute)",
                   tang::translateKernelsToWGSL);
  TranslateFromMLIRRegistration(
      "to-glsl",
      "Print the kernel form as GLSL 4.50 compute shaders, one per kernel, "
      "each after a `// <kernel>.comp` line",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        FailureOr<gpu::GPUModuleOp> kernels = getKernels(op, "glsl");
        if (failed(kernels))
          return failure();
        SmallVector<std::pair<std::string, std::string>> shaders;
        if (failed(tang::translateKernelsToGLSL(*kernels, shaders)))
          return failure();
        for (auto &[name, text] : shaders)
          os << "// " << name << ".comp\n" << text << "\n";
        return success();
      },
      registerDialects);
  return failed(mlirTranslateMain(argc, argv,
                                  "tang translation driver (kernel form "
                                  "to OpenCL C, C, Metal, GLSL, WGSL)\n"));
}
