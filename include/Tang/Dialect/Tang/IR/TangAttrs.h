//===- TangAttrs.h - tang attributes ----------------------------*- C++ -*-===//
//
// Builtin monoid kinds, schedule mappings, the #tang.schedule attribute and
// the #tang.target device model.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_DIALECT_TANG_IR_TANGATTRS_H
#define TANG_DIALECT_TANG_IR_TANGATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "Tang/Dialect/Tang/IR/TangEnums.h.inc"

namespace mlir::tang {
/// Parses `true` or `false` (a boolean field of an attribute).
FailureOr<bool> parseBoolParameter(AsmParser &parser);
} // namespace mlir::tang

#define GET_ATTRDEF_CLASSES
#include "Tang/Dialect/Tang/IR/TangAttrs.h.inc"

namespace mlir::tang {

/// Number of scalars a body yields for a builtin monoid.
unsigned getNumMonoidYields(MonoidKind kind);
/// Number of results a comprehension reducing under a builtin monoid has.
unsigned getNumMonoidResults(MonoidKind kind);
/// True for the element types tang tensors may hold: f64, f32, f16, bf16,
/// i32, i8, i1.
bool isTangElementType(Type t);

} // namespace mlir::tang

#endif // TANG_DIALECT_TANG_IR_TANGATTRS_H
