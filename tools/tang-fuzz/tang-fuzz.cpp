//===- tang-fuzz.cpp - libFuzzer target: parse, verify, transform -*- C++
//-*-===//
//
// A libFuzzer target over tang IR text: every input is parsed (with the
// dialects a tang program uses), verified, and, when it verifies, run
// through tang's target-independent passes (fusion, the online-softmax
// rewrite, triangular scans, specialisation-free canonicalisation, the
// traffic bound). Diagnostics are expected and swallowed; a crash, an
// assertion, an ASan or UBSan report, or a hang is a finding.
// scripts/fuzz.sh builds it (-DTANG_FUZZ=ON) and runs it from the seed
// corpus test/Fuzz/corpus (every example and test input).
//
//===----------------------------------------------------------------------===//

#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace mlir;

namespace {

MLIRContext &getContext() {
  static MLIRContext *context = [] {
    DialectRegistry registry;
    // Not linalg: its parser crashes on malformed input upstream (a null
    // attribute in linalg.transpose's parse, found by this target; not
    // tang's code), which would stop every run.
    registry.insert<tang::TangDialect, arith::ArithDialect, func::FuncDialect,
                    math::MathDialect, tensor::TensorDialect>();
    auto *ctx = new MLIRContext(registry);
    ctx->loadAllAvailableDialects();
    ctx->printOpOnDiagnostic(false);
    ctx->printStackTraceOnDiagnostic(false);
    return ctx;
  }();
  return *context;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext &ctx = getContext();
  ScopedDiagnosticHandler swallow(&ctx, [](Diagnostic &) { return success(); });
  ParserConfig config(&ctx);
  // The MLIR lexer reads up to a terminating NUL: libFuzzer's buffer has
  // none (an input ending inside an identifier read past it), a copy in a
  // std::string does.
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, config);
  if (!module || failed(verify(*module)))
    return 0;
  PassManager pm(&ctx);
  pm.enableVerifier(true);
  pm.addPass(tang::createTangTriangularScan());
  pm.addPass(tang::createTangFuse());
  pm.addPass(tang::createTangOnlineSoftmax());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(tang::createTangTrafficBound());
  (void)pm.run(*module);
  return 0;
}
