//===- TangDialect.h - tang dialect -----------------------------*- C++ -*-===//
//
// The tang dialect: views and comprehensions.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_DIALECT_TANG_IR_TANGDIALECT_H
#define TANG_DIALECT_TANG_IR_TANGDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Dialect.h"

#include "Tang/Dialect/Tang/IR/TangOpsDialect.h.inc"

#endif // TANG_DIALECT_TANG_IR_TANGDIALECT_H
