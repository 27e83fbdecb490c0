//===- tang-opt.cpp - tang's mlir-opt ---------------------------*- C++ -*-===//
//
// Parses, verifies, transforms and prints tang IR. Registers tang's
// dialect, passes and pipelines together with every upstream dialect, pass
// and LLVM IR translation, so tang's passes compose with upstream ones in
// one pipeline (e.g. --tang-lower-cuda ends in gpu-module-to-binary).
//
//===----------------------------------------------------------------------===//

#include "Tang/Conversion/Passes.h"
#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Pipelines/Pipelines.h"
#include "Tang/Target/Passes.h"
#include "Tang/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::tang::registerTangPasses();
  mlir::tang::registerTangConversionPasses();
  mlir::tang::registerTangTargetPasses();
  mlir::tang::registerTangPipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  registry.insert<mlir::tang::TangDialect>();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tang optimizer driver\n", registry));
}
