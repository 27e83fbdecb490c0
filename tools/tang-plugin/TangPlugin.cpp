//===- TangPlugin.cpp - tang as an mlir-opt plugin --------------*- C++ -*-===//
//
// One shared object that upstream tools load at run time: as a dialect
// plugin it adds the tang dialect to the tool's registry, as a pass plugin
// it registers every tang pass and pipeline.
//
//   mlir-opt --load-dialect-plugin=TangPlugin.so \
//            --load-pass-plugin=TangPlugin.so \
//            --pass-pipeline='builtin.module(tang-fuse)' prog.mlir
//
// The plugin links against libMLIR.so like the tool that loads it, so the
// two share one copy of MLIR (its TypeIDs and registries).
//
//===----------------------------------------------------------------------===//

#include "Tang/Conversion/Passes.h"
#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Pipelines/Pipelines.h"
#include "Tang/Target/Passes.h"
#include "Tang/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

using namespace mlir;

extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {
      MLIR_PLUGIN_API_VERSION, "tang", LLVM_VERSION_STRING,
      [](DialectRegistry *registry) { registry->insert<tang::TangDialect>(); }};
}

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "tang", LLVM_VERSION_STRING, []() {
            tang::registerTangPasses();
            tang::registerTangConversionPasses();
            tang::registerTangTargetPasses();
            tang::registerTangPipelines();
          }};
}
