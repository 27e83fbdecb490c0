//===- Passes.td - conversions into and out of tang --------*- tablegen -*-===//

#ifndef TANG_CONVERSION_PASSES_TD
#define TANG_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertLinalgToTang : Pass<"convert-linalg-to-tang", "::mlir::ModuleOp"> {
  let summary = "Import linalg on tensors into tang comprehensions";
  let description = [{
    Imports `linalg.generic` (and the named linalg ops that generalise to it:
    matmul, batch_matmul, reductions, elementwise ops, fills) on tensors into
    `tang.comprehension`s, so tang can sit after any frontend that reaches
    linalg. TODO(convert-linalg-to-tang): details.
  }];
  let dependentDialects = ["::mlir::tang::TangDialect",
                           "::mlir::linalg::LinalgDialect"];
}

#endif // TANG_CONVERSION_PASSES_TD
