//===- tang-fuzz-lower.cpp - libFuzzer target: kernel form, printers ------===//
//
// A libFuzzer target over tang IR text through tang's lowerings: every
// input that parses and verifies (tang-fuzz's dialects only) is lowered,
// on a copy per target, by
//
//  * the portable pipelines whole: fusion, the kernel form one thread per
//    point, and the printers (C, OpenCL C, Metal, WGSL, GLSL; their text
//    goes to stdout, which this target sends to /dev/null);
//  * the CUDA pipeline up to the kernel form on sm_90a (the target, fusion,
//    the schedule, wgmma/TMA kernels: flash, score, tensor-core, row,
//    split-softmax), without NVVM and PTX (upstream's code, not tang's).
//
// The input is parsed in a context that knows only tang, arith, func,
// math and tensor; the verified module is printed and parsed again in a
// second context the pipelines load their dialects into, so that mutated
// text never reaches the parsers of the dialects tang lowers to (upstream's
// parsers are not what this target fuzzes; one crashes on mutated input,
// see tang-fuzz.cpp). Diagnostics are expected and swallowed; a crash, an
// assertion, an ASan or UBSan report, or a hang is a finding.
// scripts/fuzz.sh builds it (-DTANG_FUZZ=ON) and runs it from the seed
// corpus (every example and test input).
//
//===----------------------------------------------------------------------===//

#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <unistd.h>

using namespace mlir;

namespace {

/// A context of `registry`'s dialects, diagnostics without op dumps or
/// stack traces, one thread.
MLIRContext *makeContext(DialectRegistry registry) {
  registry.insert<tang::TangDialect, arith::ArithDialect, func::FuncDialect,
                  math::MathDialect, tensor::TensorDialect>();
  auto *ctx = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
  ctx->loadAllAvailableDialects();
  ctx->printOpOnDiagnostic(false);
  ctx->printStackTraceOnDiagnostic(false);
  return ctx;
}

/// Where inputs are parsed and verified.
MLIRContext &getInputContext() {
  static MLIRContext *ctx = makeContext(DialectRegistry());
  return *ctx;
}

/// Where the pipelines run (they load the dialects they lower to).
MLIRContext &getLoweringContext() {
  static MLIRContext *ctx = makeContext(DialectRegistry());
  return *ctx;
}

using PipelineBuilder = std::function<void(OpPassManager &)>;

/// A pipeline of `Options` (fusion on, the rest default) built by `build`.
template <typename Options>
PipelineBuilder withFusion(void (*build)(OpPassManager &, const Options &)) {
  return [build](OpPassManager &pm) {
    Options options;
    options.fuse = true;
    build(pm, options);
  };
}

/// The pipelines, each building its passes into a fresh pass manager.
const SmallVector<PipelineBuilder> &getPipelines() {
  static const SmallVector<PipelineBuilder> pipelines = {
      withFusion(tang::buildTangLowerCPipeline),
      withFusion(tang::buildTangLowerOpenCLPipeline),
      withFusion(tang::buildTangLowerMetalPipeline),
      withFusion(tang::buildTangLowerWGSLPipeline),
      withFusion(tang::buildTangLowerGLSLPipeline),
      withFusion(tang::addTangCudaKernelForm),
  };
  return pipelines;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // The printers write their text to stdout: not wanted here (libFuzzer
  // reports on stderr).
  if (FILE *null = std::fopen("/dev/null", "w"))
    dup2(fileno(null), STDOUT_FILENO);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext &input = getInputContext();
  MLIRContext &lowering = getLoweringContext();
  ScopedDiagnosticHandler swallowInput(&input,
                                       [](Diagnostic &) { return success(); });
  ScopedDiagnosticHandler swallowLowering(
      &lowering, [](Diagnostic &) { return success(); });
  // A copy ends in a NUL (the MLIR lexer reads up to one).
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(&input));
  if (!module || failed(verify(*module)))
    return 0;
  std::string verified;
  {
    llvm::raw_string_ostream os(verified);
    module->print(os);
  }
  for (const auto &build : getPipelines()) {
    OwningOpRef<ModuleOp> copy =
        parseSourceString<ModuleOp>(verified, ParserConfig(&lowering));
    if (!copy)
      return 0;
    PassManager pm(&lowering);
    pm.enableVerifier(true);
    build(pm);
    (void)pm.run(*copy);
  }
  return 0;
}
