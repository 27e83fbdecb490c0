//===- Narrow32BitKernels.cpp - --tang-narrow-32-bit-kernels ----*- C++ -*-===//
//
// Rewrites the kernels of the kernel form for a target with 32-bit indices
// and no 64-bit integers needed (SPIR-V, GLSL, WGSL): a float computed from
// an index (tang.index : f32) converts it through i32, not i64; constant
// float compares become constants.
//
//===----------------------------------------------------------------------===//

#include "Tang/Target/Passes.h"
#include "llvm/Support/Debug.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGNARROW32BITKERNELS
#include "Tang/Target/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-narrow-32-bit-kernels"

using namespace mlir;
using namespace mlir::tang;

namespace {

// Pattern: sitofp(index_cast(x : index to i64)) -> sitofp(index_cast(x :
// index to i32)) on a 32-bit index target, where x has 32 bits anyway.
struct SIToFP_NarrowIndexCast : OpRewritePattern<arith::SIToFPOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::SIToFPOp op,
                                PatternRewriter &rewriter) const override {
    auto cast = op.getIn().getDefiningOp<arith::IndexCastOp>();
    if (!cast || !cast.getIn().getType().isIndex() ||
        !cast.getType().isSignlessInteger(64))
      return rewriter.notifyMatchFailure(op, "not an index cast to i64");
    Value narrow = arith::IndexCastOp::create(
        rewriter, cast.getLoc(), rewriter.getI32Type(), cast.getIn());
    rewriter.replaceOpWithNewOp<arith::SIToFPOp>(op, op.getType(), narrow);
    return success();
  }
};

// Pattern: cmpf false/true (a, b) -> constant false/true (upstream's SPIR-V
// conversion has no pattern for the constant predicates).
struct CmpF_ConstantPredicate : OpRewritePattern<arith::CmpFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::CmpFOp op,
                                PatternRewriter &rewriter) const override {
    arith::CmpFPredicate p = op.getPredicate();
    if (p != arith::CmpFPredicate::AlwaysFalse &&
        p != arith::CmpFPredicate::AlwaysTrue)
      return rewriter.notifyMatchFailure(op, "not a constant predicate");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, rewriter.getBoolAttr(p == arith::CmpFPredicate::AlwaysTrue));
    return success();
  }
};

struct TangNarrow32BitKernelsPass
    : tang::impl::TangNarrow32BitKernelsBase<TangNarrow32BitKernelsPass> {
  using TangNarrow32BitKernelsBase::TangNarrow32BitKernelsBase;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
    RewritePatternSet patterns(&getContext());
    patterns.add<SIToFP_NarrowIndexCast, CmpF_ConstantPredicate>(&getContext());
    FrozenRewritePatternSet frozen(std::move(patterns));
    for (auto kernels : getOperation().getOps<gpu::GPUModuleOp>())
      if (failed(applyPatternsGreedily(kernels, frozen)))
        return signalPassFailure();
  }
};
} // namespace
