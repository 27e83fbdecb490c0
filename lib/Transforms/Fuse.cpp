//===- Fuse.cpp ---------------------------------------------------*- C++ -*-===//

#include "Tang/Transforms/Passes.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGFUSE
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

using namespace mlir;
using namespace mlir::tang;

namespace {
struct TangFusePass : tang::impl::TangFuseBase<TangFusePass> {
  using TangFuseBase::TangFuseBase;
  void runOnOperation() override {}
};
} // namespace
