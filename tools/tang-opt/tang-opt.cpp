//===- tang-opt.cpp - tang's mlir-opt ---------------------------*- C++ -*-===//
//
// Parses, verifies, transforms and prints tang IR. Registers tang and the
// upstream dialects and passes tang's pipelines use.
//
//===----------------------------------------------------------------------===//

#include "Tang/Conversion/Passes.h"
#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  mlir::tang::registerTangPasses();
  mlir::tang::registerTangConversionPasses();

  mlir::DialectRegistry registry;
  registry.insert<mlir::tang::TangDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::func::FuncDialect,
                  mlir::scf::SCFDialect, mlir::tensor::TensorDialect,
                  mlir::linalg::LinalgDialect, mlir::affine::AffineDialect,
                  mlir::memref::MemRefDialect, mlir::gpu::GPUDialect>();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tang optimizer driver\n", registry));
}
