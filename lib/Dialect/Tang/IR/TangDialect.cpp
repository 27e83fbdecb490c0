//===- TangDialect.cpp - tang dialect ---------------------------*- C++ -*-===//

#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Dialect/Tang/IR/TangOps.h"

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
