//===- TrafficBound.cpp - --tang-traffic-bound ------------------*- C++ -*-===//
//
// Remarks with the certified traffic lower bounds of
// Tang/Analysis/TrafficBound.h, per function-level comprehension and
// memory level.
//
//===----------------------------------------------------------------------===//

#include "Tang/Analysis/TrafficBound.h"
#include "Tang/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGTRAFFICBOUND
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

using namespace mlir;
using namespace mlir::tang;

namespace {

std::string join(ArrayRef<Fraction> fs) {
  std::string s;
  for (auto [i, f] : llvm::enumerate(fs)) {
    s += i ? ", " : "";
    s += f.den == 1 ? std::to_string(f.num)
                    : std::to_string(f.num) + "/" + std::to_string(f.den);
  }
  return "[" + s + "]";
}

struct TangTrafficBoundPass
    : tang::impl::TangTrafficBoundBase<TangTrafficBoundPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // name=bytes, comma-separated.
    SmallVector<std::pair<std::string, int64_t>> memory;
    SmallVector<StringRef> items;
    StringRef(levels).split(items, ',', -1, /*KeepEmpty=*/false);
    for (StringRef item : items) {
      auto [name, bytes] = item.trim().split('=');
      int64_t value = 0;
      if (name.empty() || bytes.trim().getAsInteger(10, value) || value <= 0) {
        module.emitError() << "--tang-traffic-bound: levels must be "
                              "name=bytes, comma-separated; got '"
                           << item << "'";
        return signalPassFailure();
      }
      memory.emplace_back(name.str(), value);
    }
    module.walk([&](func::FuncOp f) {
      for (auto op : f.getBody().getOps<ComprehensionOp>()) {
        std::string why;
        FailureOr<LoopNest> nest = getLoopNest(op, why);
        if (failed(nest)) {
          op.emitWarning() << "no traffic bound: " << why;
          ++numRefused;
          continue;
        }
        // Compulsory: every tensor read, and the result, once.
        llvm::SmallPtrSet<void *, 8> seen;
        int64_t compulsory = 0;
        for (ReadOp r : op.getBodyBlock().getOps<ReadOp>()) {
          Value t = r.getTensor();
          while (auto view = t.getDefiningOp<ViewOp>())
            t = view.getSource();
          if (seen.insert(t.getAsOpaquePointer()).second)
            compulsory += cast<RankedTensorType>(t.getType()).getNumElements();
        }
        for (Type t : op.getResultTypes())
          if (auto r = dyn_cast<RankedTensorType>(t))
            compulsory += r.getNumElements();
        for (auto &[name, bytes] : memory) {
          int64_t capacity = bytes / nest->elementBytes;
          FailureOr<TrafficBound> bound =
              computeTrafficBound(*nest, capacity, why);
          if (failed(bound)) {
            op.emitError() << "traffic bound at " << name << ": " << why;
            return signalPassFailure();
          }
          ++numBounds;
          SmallVector<std::string> tile;
          for (int64_t b : bound->tile)
            tile.push_back(std::to_string(b));
          op.emitRemark() << llvm::formatv(
              "traffic bound at {0} (M = {1} elements of {2} bytes): >= {3:F0} "
              "elements moved ({4:F0} bytes); compulsory {5} elements; the "
              "largest tile that fits runs M^{6:F3} iterations: tile [{7}]; "
              "dual s = {8}, t = {9}; certificate checked",
              name, capacity, nest->elementBytes, bound->words,
              bound->words * nest->elementBytes, compulsory, bound->kappa,
              llvm::join(tile, ", "), join(bound->s), join(bound->t));
        }
      }
    });
  }
};

} // namespace
