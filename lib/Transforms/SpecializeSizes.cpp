//===- SpecializeSizes.cpp - symbolic sizes to fixed values -----*- C++ -*-===//
//
// --tang-specialize-sizes: a function with symbolic sizes becomes the static
// function of given sizes (see the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "Tang/Dialect/Tang/IR/TangOps.h"
#include "Tang/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/Support/Debug.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGSPECIALIZESIZES
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-specialize-sizes"

using namespace mlir;
using namespace mlir::tang;

namespace {

struct TangSpecializeSizesPass
    : tang::impl::TangSpecializeSizesBase<TangSpecializeSizesPass> {
  using Base::Base;

  /// The value of every size symbol of `f`, from `sizes`.
  FailureOr<SmallVector<int64_t>> getValues(func::FuncOp f,
                                            ArrayRef<SizeSymbol> symbols) {
    SmallVector<std::optional<int64_t>> values(symbols.size());
    for (const std::string &spec : sizes) {
      SizeSymbol symbol;
      int64_t value = 0;
      if (failed(parseSizeSpec(f, spec, symbol, value)))
        return f.emitOpError()
               << "--tang-specialize-sizes: '" << spec << "' is not a size of @"
               << f.getSymName() << ": expected " << kSizeSpecSyntax;
      for (auto [s, v] : llvm::zip(symbols, values))
        if (s.argNumber == symbol.argNumber && s.dim == symbol.dim)
          v = value;
    }
    SmallVector<int64_t> result;
    for (auto [s, v] : llvm::zip(symbols, values)) {
      if (!v) {
        std::string name = "arg" + std::to_string(s.argNumber);
        if (s.dim >= 0)
          name += "." + std::to_string(s.dim);
        return f.emitOpError()
               << "--tang-specialize-sizes: the size " << getSizeSymbolName(s)
               << " has no value (add " << name << "=N to sizes)";
      }
      result.push_back(*v);
    }
    return result;
  }

  LogicalResult specialize(func::FuncOp f) {
    SmallVector<SizeSymbol> symbols = getSizeSymbols(f);
    FailureOr<SmallVector<int64_t>> values = getValues(f, symbols);
    if (failed(values))
      return failure();
    for (const SizeRequirement &r : collectSizeRequirements(f))
      if (r.expr.evaluate(*values) < 0)
        return r.op->emitOpError() << "--tang-specialize-sizes: "
                                   << r.describeBroken(symbols, *values);
    // The static extents, computed before anything changes.
    SmallVector<std::pair<ComprehensionOp, SmallVector<int64_t>>> extents;
    WalkResult walk = f.walk([&](ComprehensionOp c) {
      if (!c.hasSymbolicExtents())
        return WalkResult::advance();
      SmallVector<int64_t> e;
      for (unsigned pos = 0; pos < c.getNumIndices(); ++pos) {
        if (!c.isSymbolicExtent(pos)) {
          e.push_back(c.getExtent(pos));
          continue;
        }
        std::string why;
        FailureOr<Size> size = getSizeOf(c.getDynamicExtent(pos), &why);
        if (failed(size)) {
          c.emitOpError() << "--tang-specialize-sizes: extent #" << pos
                          << " is not a size: " << why;
          return WalkResult::interrupt();
        }
        e.push_back(size->evaluate(*values));
      }
      extents.emplace_back(c, std::move(e));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();

    OpBuilder b(f.getContext());
    for (auto &[c, e] : extents) {
      b.setInsertionPoint(c);
      unsigned numParallel = c.getNumParallel();
      ArrayRef<int64_t> parallel = ArrayRef(e).take_front(numParallel);
      SmallVector<Type> types;
      for (Type t : c.getResultTypes()) {
        auto r = dyn_cast<RankedTensorType>(t);
        types.push_back(r ? RankedTensorType::get(parallel, r.getElementType())
                          : t);
      }
      auto s = ComprehensionOp::create(b, c.getLoc(), types, parallel,
                                       ArrayRef(e).drop_front(numParallel),
                                       c.getMonoidAttr(), c.getScheduleAttr());
      s->setDiscardableAttrs(c->getDiscardableAttrDictionary());
      s.getBody().takeBody(c.getBody());
      c->replaceAllUsesWith(s.getResults());
      c.erase();
    }

    // The arguments: index ones become constants and go, '?' dimensions
    // become static (tensor.dim of them a constant).
    Block &entry = f.getBody().front();
    b.setInsertionPointToStart(&entry);
    llvm::BitVector erase(f.getNumArguments());
    for (auto [s, v] : llvm::zip(symbols, *values)) {
      BlockArgument arg = f.getArgument(s.argNumber);
      if (s.dim < 0) {
        arg.replaceAllUsesWith(
            arith::ConstantIndexOp::create(b, arg.getLoc(), v));
        erase.set(s.argNumber);
        continue;
      }
      for (Operation *user : llvm::make_early_inc_range(arg.getUsers())) {
        auto dim = dyn_cast<tensor::DimOp>(user);
        std::optional<int64_t> d = dim ? dim.getConstantIndex() : std::nullopt;
        if (d && *d == s.dim) {
          OpBuilder at(dim);
          dim.replaceAllUsesWith(
              arith::ConstantIndexOp::create(at, dim.getLoc(), v).getResult());
          dim.erase();
        }
      }
    }
    for (BlockArgument arg : f.getArguments()) {
      auto t = dyn_cast<RankedTensorType>(arg.getType());
      if (!t || t.hasStaticShape())
        continue;
      SmallVector<int64_t> shape(t.getShape());
      for (auto [s, v] : llvm::zip(symbols, *values))
        if (s.argNumber == arg.getArgNumber() && s.dim >= 0)
          shape[s.dim] = v;
      arg.setType(RankedTensorType::get(shape, t.getElementType()));
    }
    if (failed(f.eraseArguments(erase)))
      return f.emitOpError() << "--tang-specialize-sizes: could not remove "
                                "its index arguments";
    // What computed the sizes (%pos + 1) is left unused.
    SmallVector<Operation *> ops =
        llvm::to_vector(llvm::make_pointer_range(entry.without_terminator()));
    for (Operation *op : llvm::reverse(ops))
      if (isOpTriviallyDead(op))
        op->erase();
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    f.setFunctionType(FunctionType::get(
        f.getContext(), entry.getArgumentTypes(), ret.getOperandTypes()));
    return success();
  }

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
    ModuleOp module = getOperation();
    bool found = false;
    for (auto f : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (f.isExternal() || (!function.empty() && f.getName() != function))
        continue;
      found |= f.getName() == function;
      if (getSizeSymbols(f).empty())
        continue;
      if (failed(specialize(f)))
        return signalPassFailure();
    }
    if (!function.empty() && !found) {
      module.emitError() << "--tang-specialize-sizes: no function @"
                         << function;
      return signalPassFailure();
    }
  }
};

} // namespace
