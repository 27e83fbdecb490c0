//===- OnlineSoftmax.cpp ---------------------------------------------------*- C++ -*-===//

#include "Tang/Transforms/Passes.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGONLINESOFTMAX
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

using namespace mlir;
using namespace mlir::tang;

namespace {
struct TangOnlineSoftmaxPass : tang::impl::TangOnlineSoftmaxBase<TangOnlineSoftmaxPass> {
  using TangOnlineSoftmaxBase::TangOnlineSoftmaxBase;
  void runOnOperation() override {}
};
} // namespace
