//===- TangOps.h - tang operations ------------------------------*- C++ -*-===//

#ifndef TANG_DIALECT_TANG_IR_TANGOPS_H
#define TANG_DIALECT_TANG_IR_TANGOPS_H

#include "Tang/Dialect/Tang/IR/TangAffine.h"
#include "Tang/Dialect/Tang/IR/TangAttrs.h"
#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tang {
class ComprehensionOp;
class MonoidOp;
class YieldOp;
} // namespace mlir::tang

#define GET_OP_CLASSES
#include "Tang/Dialect/Tang/IR/TangOps.h.inc"

namespace mlir::tang {

/// The comprehension that owns `index` as an iteration index, or null if
/// `index` is not a comprehension's block argument.
ComprehensionOp getOwningComprehension(Value index);

/// Whether `op` is in the body of a comprehension or of a scatter (not at a
/// function's level).
bool isInIterationBody(Operation *op);

} // namespace mlir::tang

#endif // TANG_DIALECT_TANG_IR_TANGOPS_H
