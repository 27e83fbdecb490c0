//===- TangDialect.cpp - tang dialect ---------------------------*- C++ -*-===//

#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Dialect/Tang/IR/TangOps.h"
#include "Tang/Dialect/Tang/IR/TangTargets.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::tang;

#include "Tang/Dialect/Tang/IR/TangOpsDialect.cpp.inc"

void TangDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Tang/Dialect/Tang/IR/TangOps.cpp.inc"
      >();
  registerAttributes();
}

/// Discardable `tang.*` attributes: `tang.target` is a #tang.target on a
/// module.
LogicalResult TangDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() != kTargetAttrName)
    return success();
  if (!isa<TargetAttr>(attr.getValue()))
    return op->emitError() << "'" << kTargetAttrName
                           << "' must be a #tang.target, got "
                           << attr.getValue();
  if (!isa<ModuleOp>(op))
    return op->emitError() << "'" << kTargetAttrName << "' belongs on a module";
  return success();
}
