// Parses a tang program, fuses it with tang's pass, prints the result.
#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::tang::TangDialect, mlir::func::FuncDialect,
                      mlir::arith::ArithDialect, mlir::math::MathDialect>();
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  mlir::PassManager pm(&context);
  pm.addPass(mlir::tang::createTangFuse());
  if (!module || mlir::failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return 0;
}
